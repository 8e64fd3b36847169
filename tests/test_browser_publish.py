"""The write-up (``iolab publish``) in Debian's chromium with the network cut off: it loads
with no console error and no failed request, asks for nothing but itself and inline data,
and its figures are drawn. The page and a full-page screenshot stay in the test's tmp_path
(named on the terminal with ``-s``), with the load time.

chromium and Playwright as in tests/test_browser.py (the ``browser`` fixture of tests/conftest.py: skipped, with
the fix, when either is missing).
"""

from __future__ import annotations

import time

import pytest

from iolab.report.publish import execute, publish
from support.browser import VIEWPORT
from support.notebooks import TINY_PARAMETERS, write_tiny_notebook

pytestmark = pytest.mark.browser

_IMAGES = "imgs => imgs.map(i => ({src: i.src.slice(0, 30), complete: i.complete, width: i.naturalWidth}))"
_LOAD_MS = "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }"


def test_the_write_up_renders_offline(browser, tmp_path, record_property):
    executed = execute(write_tiny_notebook(tmp_path / "tiny.ipynb"), tmp_path / "out" / "tiny.ipynb", TINY_PARAMETERS)
    page_file = publish(executed)

    context = browser.new_context(viewport=VIEWPORT, offline=True)
    requests, failed, errors = [], [], []
    # offline=True already fails network requests; the route also stops what offline mode lets through
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(("file:", "data:"))
            else route.abort("internetdisconnected")
        ),
    )
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(f"{r.url[:100]}: {r.failure}"))
    page.on("console", lambda m: m.type == "error" and errors.append(f"console: {m.text}"))
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    try:
        start = time.monotonic()
        page.goto(page_file.as_uri(), wait_until="load")
        wall_ms = (time.monotonic() - start) * 1000
        load_ms = page.evaluate(_LOAD_MS)
        images = page.eval_on_selector_all("img", _IMAGES)
        shot = tmp_path / "writeup.png"
        page.screenshot(path=shot, full_page=True)
        headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent.replace('¶', '').trim())")
    finally:
        context.close()

    print(
        f"\nwrite-up {page_file} ({page_file.stat().st_size / 1024:.0f} KiB) loaded in {load_ms:.0f} ms "
        f"(goto: {wall_ms:.0f} ms); screenshot {shot}"
    )
    record_property("load_ms", round(load_ms))
    where = f"(page {page_file}, screenshot {shot})"
    assert not errors, f"console errors {where}:\n" + "\n".join(errors)
    assert not failed, f"failed requests {where}:\n" + "\n".join(failed)
    others = [u[:100] for u in requests if not u.startswith(("file:", "data:"))]
    assert not others, f"the write-up asked the network for {others} {where}"
    assert images and all(i["complete"] and i["width"] > 0 for i in images), f"images not drawn: {images} {where}"
    assert {"Parameters", "Results", "Provenance"} <= set(headings), f"headings {headings} {where}"
