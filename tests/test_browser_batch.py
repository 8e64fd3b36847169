"""A batch's index page in Debian's chromium: its table, its plots and working links to
each run's write-up, opened from disk with the network cut off, no console error."""

import time

import pytest
import yaml

from iolab.report import batch
from support.notebooks import tiny_notebook

pytestmark = pytest.mark.browser


def test_index_page_renders_with_table_plots_and_links(browser, shots, tmp_path):
    tiny_notebook(tmp_path / "tiny.ipynb")
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"notebook": "tiny.ipynb", "grid": {"x": [1, 2, 3]}}))
    records = batch.run_batch(tmp_path / "m.yaml", out=tmp_path / "out")
    assert [r["status"] for r in records] == ["ok"] * 3
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    page = context.new_page()
    errors, failed = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: failed.append(r.url))
    start = time.monotonic()
    page.goto((tmp_path / "out" / "index.html").as_uri())
    page.wait_for_load_state("load")
    load_s = time.monotonic() - start
    page.screenshot(path=str(shots / "batch-index.png"), full_page=True)
    assert page.locator("table tbody tr").count() == 3
    assert page.locator("th", has_text="double (units)").count() == 1
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
    assert widths and all(w > 0 for w in widths)
    page.locator("a", has_text="write-up").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("x=1/tiny.html") and page.locator("body").inner_text()
    page.screenshot(path=str(shots / "batch-run-write-up.png"), full_page=True)
    context.close()
    assert not errors and not failed, (errors, failed)
    print(f"index page loaded in {load_s:.2f} s; screenshots in {shots}")
