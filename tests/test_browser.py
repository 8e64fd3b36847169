"""JupyterLab in a real browser: one server started as ``make lab`` starts it
(``iolab.cli.lab.lab_argv``) on a project folder laid out as the checkout (README.md at its
root, the notebooks in notebooks/), Debian's chromium driven by Playwright. All nine notebooks
run with Run All at small parameters; each is then looked through screen by screen as a
reader at 1280 px would (``read_through``), and its interactive parts (flame graph,
explorer, a mistake in a cell) used with the mouse and keyboard. No console error is allowed.
Screenshots go to a temp folder named in the output (``pytest -s``) and in every failure
message; ``-s`` also prints each notebook's Run All time.

The server, the page and the steps of a notebook's run are tests/support/jupyterlab.py's; how a
notebook reads, tests/support/reading.py's; chromium, tests/support/browser.py's.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest

from iolab.cli.lab import lab_argv
from iolab.machine.process import spawn
from iolab.report import contract
from support.browser import VIEWPORT, stop_groups
from support.cpus import CPU
from support.devices import LoopWatch
from support.jupyterlab import (
    PAINTED,
    Lab,
    Session,
    api,
    assert_all_cells_ran,
    assert_no_console_errors,
    box,
    close_tabs,
    free_port,
    inside_viewport,
    lab_env,
    lab_sessions,
    open_notebook,
    outputs_text,
    run_all,
    saved_notebook,
    shut_down_kernel,
    start_kernels,
    wait_ready,
    write_up,
)
from support.marks import is_root
from support.paths import REPO
from support.reading import STALE_BARS, assert_reads_well, read_through

pytestmark = pytest.mark.browser

NOTEBOOKS = {  # each notebook's smoke settings (iolab.report.contract), pinned to the test CPU where it takes one
    nb.file: {**({"cpu": CPU} if "cpu" in nb.defaults() else {}), **nb.smoke} for nb in contract.NOTEBOOKS.values()
}
NOTEBOOKS["05_parameter_search.ipynb"]["spec"] = "search.yaml"  # SEARCH, written by its test
NOTEBOOKS["09_history.ipynb"]["history_dir"] = "{home}/history"  # filled by its test
SEARCH = {  # notebook 05's spec: 3 repeats (an interval per cell), one noisy cell next to the best
    "name": "browser",
    "target": "scratch",
    "size": "64m",
    "cpus": [CPU],
    "repeats": 3,
    "seed": 1,
    "base": {"rw": "randread", "bs": "4k", "ioengine": "psync", "runtime": "300ms"},
    "axes": {"iodepth": [1, 2], "bs": ["4k", "64k"]},
}
BAD_SEARCH = {**SEARCH, "base": {**SEARCH["base"], "runtime": "0.5s"}}  # fio times are 500ms
HIGHLIGHT = "#e040fb"  # the flame graph's search-match fill


# ---------------------------------------------------------------- JupyterLab
def _copy_project(home: Path) -> None:
    """``home/project`` laid out as the checkout: its README.md (and its picture), and in notebooks/ the
    notebooks with short parameters injected after their parameters cell, as papermill does
    (the checkout's own notebooks are never written to)."""
    import yaml
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    folder = home / "project" / "notebooks"
    folder.mkdir(parents=True)
    shutil.copy(REPO / "README.md", folder.parent / "README.md")
    shutil.copytree(
        REPO / "docs" / "images", folder.parent / "docs" / "images"
    )  # the README's picture: it opens rendered
    for name, params in NOTEBOOKS.items():
        params = {k: v.format(home=home) if isinstance(v, str) else v for k, v in params.items()}
        nb = parameterize_notebook(load_notebook_node(str(REPO / "notebooks" / name)), params)
        nbformat.write(nb, folder / name)
    (folder / "search.yaml").write_text(yaml.safe_dump(SEARCH))
    (folder / "bad_search.yaml").write_text(yaml.safe_dump(BAD_SEARCH))


@pytest.fixture(scope="module")
def lab(shots, request):
    """JupyterLab started with ``lab_argv`` (as make lab) on a free port with a random token,
    on a copy of the project (``_copy_project``), in its own process group; stopped by its
    pid. Chromium starts while JupyterLab does."""
    home = Path(tempfile.mkdtemp(prefix="iolab-lab-"))
    try:
        _copy_project(home)
        port, token, log_path = free_port(), secrets.token_hex(24), shots / "jupyterlab.log"
        with open(log_path, "w") as log:  # not pinned: the notebooks' kernel must reach CPU 0
            proc, entry = spawn(
                lab_argv(home / "project", port=port),
                name="jupyterlab",
                cwd=REPO,
                env=lab_env(token, home),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            request.getfixturevalue("browser")
            wait_ready(proc, url, token, log_path)
            started = Lab(url, token, home)
            ahead = threading.Thread(target=start_kernels, args=(started, _in_test_order(request)), daemon=True)
            ahead.start()
            yield started
            ahead.join(timeout=5)  # a kernel still starting is stopped with the server
        finally:
            stop_groups({proc.pid}, grace_s=15)
            proc.wait()
            entry.release()
    finally:
        shutil.rmtree(home, ignore_errors=True)


OPENS = {  # the notebook of each test that is not parametrized by it
    "test_flame_graph_notebook_in_jupyterlab": "04_flame_graph.ipynb",
    "test_queue_depth_notebook_explorer_in_jupyterlab": "01_queue_depth_knee.ipynb",
}


def _in_test_order(request) -> list[str]:
    """The notebooks this module's selected tests open, in the order they run."""
    names: dict[str, None] = {}
    for item in request.session.items:
        if item.module is request.module:
            callspec = getattr(item, "callspec", None)
            name = callspec.params.get("name") if callspec else OPENS.get(item.originalname)
            names.update({name: None} if name else {})
    return list(names)


# ---------------------------------------------------------------- a page
@pytest.fixture(scope="module")
def lab_page(lab, browser):
    """One JupyterLab page for the module's tests, as one user's window: JupyterLab starts
    in it once (seconds a page) and each test opens its notebook from the File menu. Its
    console errors go to the list in ``lab_page[1][0]`` (the running test's)."""
    context = browser.new_context(viewport=VIEWPORT)
    page, errors = context.new_page(), [[]]
    page.on("console", lambda msg: msg.type == "error" and errors[0].append(f"console: {msg.text}"))
    page.on("pageerror", lambda exc: errors[0].append(f"page error: {exc}"))
    yield page, errors
    context.close()


@pytest.fixture
def session(lab, lab_page, shots, request):
    """The page, for one test; at the end the notebooks it opened are closed and their
    kernels shut down (not waited for) so that none idles beside the next notebook's runs,
    and its timings printed."""
    page, errors = lab_page
    s = Session(page, lab, shots, prefix=request.node.name)
    errors[0] = s.errors
    try:
        yield s
    finally:
        with contextlib.suppress(Exception):  # a page that broke is loaded again by the next test
            close_tabs(s)
        with contextlib.suppress(OSError):  # a server that failed says so in its own test
            for x in [x for name in s.opened for x in lab_sessions(lab, name)]:
                api(lab, f"sessions/{x['id']}", method="DELETE")
        print(f"\n{request.node.name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.seconds.items()))


# ---------------------------------------------------------------- notebook 04: flame graph
_NARROW_FRAME = """svg => {
    const W = svg.getBoundingClientRect().width;
    const gs = Array.from(svg.querySelectorAll('g[data-x]'));
    return gs.findIndex(g => {
        const w = g.querySelector('rect').getBoundingClientRect().width;
        return +g.dataset.d > 0 && g.style.display !== 'none' && w > 12 && w < 0.4 * W;
    });
}"""
_HIGHLIGHTED = """(svg, fill) => Array.from(svg.querySelectorAll('g[data-x] rect')).filter(r =>
    (r.getAttribute('fill') || '').toLowerCase() === fill
    || getComputedStyle(r).fill === 'rgb(224, 64, 251)').length"""


def _frame_width(frame) -> float:
    return box(frame.locator("rect"))["width"]


def test_flame_graph_notebook_in_jupyterlab(session):
    s, name = session, "04_flame_graph.ipynb"
    open_notebook(s, name)
    run_all(s)
    assert_all_cells_ran(s, name)
    read_through(s)

    svg = s.page.locator("svg.iolab-flame").first
    frames, root, status = svg.locator("g[data-x]"), svg.locator('g[data-d="0"]').first, svg.locator(".status")
    s.shot("flame", root)
    svg_box = box(svg)
    assert inside_viewport(svg_box), (
        f"flame graph {svg_box} is wider than the {VIEWPORT['width']} px window {s.where()}"
    )

    index = svg.evaluate(_NARROW_FRAME)
    assert index >= 0, f"no narrow frame to click in the flame graph {s.where()}"
    frame = frames.nth(index)
    narrow, full = _frame_width(frame), _frame_width(root)
    frame.click()
    s.shot("zoomed", frame)
    assert _frame_width(frame) > 0.95 * box(svg)["width"], (
        f"clicking a {narrow:.0f} px frame did not zoom it to the graph's width {s.where()}"
    )

    svg.locator("input.q").press_sequentially("io_uring|read")
    s.shot("search-status", status)
    s.shot("search-frames", frame)
    assert svg.evaluate(_HIGHLIGHTED, HIGHLIGHT) > 0, f"the search highlighted no frame {s.where()}"
    assert "%" in status.text_content(), f"status {status.text_content()!r} shows no share {s.where()}"
    assert inside_viewport(box(status)), f"the search status is outside the window {s.where()}"

    svg.locator(".reset").click()
    s.shot("reset", root)
    assert abs(_frame_width(root) - full) < 1.5 and abs(_frame_width(frame) - narrow) < 1.5, (
        f"reset did not restore the whole graph {s.where()}"
    )
    assert_reads_well(s, name)


# ---------------------------------------------------------------- notebook 01: explorer
_OPTIONS = "s => Array.from(s.options).map(o => o.text)"
_IMAGE = "() => (document.querySelector('.iolab-explorer img') || {}).src || ''"


def _dropdown(explorer, description: str):
    """The ``<select>`` of the ipywidgets Dropdown described ``description``."""
    label = explorer.page.locator("label", has_text=re.compile(rf"^{description}$"))
    return explorer.locator(".widget-dropdown").filter(has=label).locator("select")


def _choose_other(select) -> str:
    """Pick the first option of ``select`` other than its current one; returns the column
    name, which the explorer shows in brackets: ``IOPS (IO/s) [iops]``."""
    current = select.evaluate("s => s.options[s.selectedIndex].text")
    choice = next(o for o in select.evaluate(_OPTIONS) if o != current)
    select.select_option(label=choice)
    return re.search(r"\[(\w+)\]", choice).group(1)


def _new_image(s: Session, old_src: str) -> str:
    """Wait until the explorer shows another picture (its output is redrawn: a new <img>)."""
    s.page.wait_for_function(f"old => ({_IMAGE})() && ({_IMAGE})() !== old", arg=old_src, timeout=30_000)
    return s.page.evaluate(_IMAGE)


def test_queue_depth_notebook_explorer_in_jupyterlab(session):
    s, name = session, "01_queue_depth_knee.ipynb"
    open_notebook(s, name)
    run_all(s)
    assert_all_cells_ran(s, name)
    read_through(s)

    explorer = s.page.locator(".iolab-explorer").first
    explorer.scroll_into_view_if_needed()
    s.shot("explorer", explorer)
    code, src = explorer.locator(".iolab-explorer-code textarea"), s.page.evaluate(_IMAGE)
    x, y = _dropdown(explorer, "x"), _dropdown(explorer, "y")
    changed = {}
    assert len(x.evaluate(_OPTIONS)) > 1, f"the explorer offers one x: {x.evaluate(_OPTIONS)} {s.where()}"
    changed["x"] = _choose_other(x)  # queue depth -> a measured column (latency vs IOPS style)
    src = _new_image(s, src)
    s.shot("x-changed", explorer)
    changed["y"] = _choose_other(y)
    _new_image(s, src)
    s.shot("y-changed", explorer)
    text = code.input_value()
    for axis, column in changed.items():
        assert f"{axis}={column!r}" in text, f"the explorer's code does not say {axis}={column!r}: {text!r} {s.where()}"
    assert_reads_well(s, name)
    # its last figure kept as a static output: hidden beside the live widgets, shown once they
    # cannot render (the notebook reopened after its kernel stopped: a cell's outputs without them)
    assert not s.page.locator(".iolab-explorer-static").first.is_visible(), f"the static copy shows {s.where()}"
    kept = [
        "".join(o["data"]["text/html"])
        for c in saved_notebook(s, name, again=True).cells
        for o in c.get("outputs", [])
        if "iolab-explorer-static" in "".join(o.get("data", {}).get("text/html", ""))
    ]
    assert len(kept) == 1 and f"x={changed['x']!r}" in html.unescape(kept[0]) and "data:image/png;base64," in kept[0]
    alone = s.page.context.new_page()
    try:
        alone.set_content(
            f"<div class='jp-OutputArea'><div>Error displaying widget: model not found</div>{kept[0]}</div>"
        )
        assert alone.locator(".iolab-explorer-static img").is_visible()
    finally:
        alone.close()


# ---------------------------------------------------------------- notebooks 05, 07, 08: how they read
def _bad_spec_is_one_block(s: Session) -> None:
    """A spec with ``runtime: 0.5s`` (fio wants 500ms) in a new last cell: the kit's one-line
    advice, not a screen of traceback; no bar left by the failed cell."""
    cells = s.page.locator(".jp-NotebookPanel .jp-Cell")
    cells.last.click()
    s.page.keyboard.press("Escape")
    s.page.keyboard.press("b")  # a new code cell below
    s.page.keyboard.press("Enter")  # edit it
    s.page.keyboard.type('studies.search.search_study("bad_search.yaml", "bad-runs")')
    s.page.keyboard.press("Shift+Enter")
    shown = cells.nth(cells.count() - 2).locator(".jp-OutputArea-output")  # Shift+Enter added one more below
    try:
        shown.wait_for(timeout=30_000)
    finally:
        s.shot("error", cells.last)
    assert "500ms" in shown.inner_text(), f"the error says {shown.inner_text()!r} {s.where()}"
    assert box(shown)["height"] < 80, f"the error takes {box(shown)['height']:.0f} px, not one block {s.where()}"
    errors = [
        o
        for c in saved_notebook(s, "05_parameter_search.ipynb", again=True).cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert len(errors) == 1 and errors[0].ename == "InputError" and len(errors[0].traceback) <= 2, errors


def _many_hosts_checks(s: Session, name: str) -> None:
    """What the headless run of notebook 07 was tested for, on the JupyterLab run: the
    per-host figures in the write-up, and no network namespace of its kernel left once the
    kernel ends."""
    from support.hosts import left_by

    nb = saved_notebook(s, name)
    text = outputs_text(nb)
    assert "2 hosts: " in text and "slowest host" in text and "servers stopped" in text, text[-2000:]
    html = write_up(s, name, nb)
    assert html.count("data:image/png;base64") >= 4 and "pooled" in html and "efficiency" in html
    kernel = shut_down_kernel(s, name)
    assert kernel and not left_by(*kernel)


def _over_time_checks(s: Session, name: str) -> None:
    """What the headless run of notebook 08 was tested for: the series accounted for, its
    steady state and stalls in words, the figures and the two tables in the write-up, fio's
    histogram log in the run folder."""
    nb = saved_notebook(s, name)
    text = outputs_text(nb)
    assert "the series accounts for" in text and "intervals of 250 ms" in text, text[-2000:]
    assert "steady state (" in text.lower() and "stall" in text
    html = write_up(s, name, nb)
    assert html.count("data:image/png;base64") >= 2  # the aligned series, the heatmap
    assert "fio report (whole run)" in html and "logs (covered intervals)" in html
    assert list((s.lab.home / "data/runs").glob("over-time-*/*/fio_clat_hist.1.log"))


def _kernel_path_checks(s: Session, name: str, watch) -> None:
    """What the headless run of notebook 06 was tested for: the queue knobs it turned put
    back, every loop device it made detached and its backing file gone, a figure in its
    write-up."""
    nb = saved_notebook(s, name)
    assert "queue knobs restored" in outputs_text(nb), outputs_text(nb)[-2000:]
    assert watch.seen and not watch.left_behind(), f"loop devices left: {watch.left_behind()} of {list(watch.seen)}"
    assert write_up(s, name, nb).count("data:image/png;base64") >= 1


HISTORY = [(100, 95, 105, "6.1"), (80, 78, 82, "6.12"), (81, None, None, "6.12")]  # peak IOPS, its interval, kernel


def _fill_history(folder: Path, snapshots: Path) -> list[str]:
    """Notebook 09's history (its ``history_dir``): three runs of notebook 01 recording peak
    IOPS and p99, on kernels 6.1, 6.12, 6.12, the last without an interval. Its files."""
    from iolab.record import history
    from support.results import SNAPSHOT, T0, kept, result

    for i, (value, low, high, kernel) in enumerate(HISTORY):
        snap = snapshots / f"run{i}"
        snap.mkdir()
        (snap / "system.json").write_text(json.dumps({**SNAPSHOT, "kernel": kernel}))
        got = kept(
            result("peak IOPS", value, low=low, high=high), result("p99", 50 + i, "µs", 49 + i, 51 + i), folders=[snap]
        )
        history.append(snapshots / "01.ipynb", got, "01_queue_depth_knee", folder, T0 + timedelta(days=i))
    return sorted(p.name for p in folder.iterdir())


def _history_checks(s: Session, name: str, listed: list[str]) -> None:
    """What the headless run of notebook 09 was tested for: a figure per result, the
    history summed up, the change between kernels in words with its intervals, the point
    without an interval named; nothing added to the history it read."""
    nb = saved_notebook(s, name)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    text = outputs_text(nb)
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2, f"not one figure per result {s.where()}"
    assert "6 results from 3 executed notebooks" in text, text
    assert "peak IOPS: 100 [95, 105] → 80 [78, 82] IO/s (-20 %), worse: kernel 6.1 → 6.12" in text, text
    assert "1 of 6 points have no interval recorded" in text, text
    folder = Path(NOTEBOOKS[name]["history_dir"].format(home=s.lab.home))
    assert sorted(p.name for p in folder.iterdir()) == listed  # 09 records nothing: it adds nothing to what it reads


@pytest.mark.parametrize(
    "name",
    [
        "05_parameter_search.ipynb",
        "06_kernel_io_path.ipynb",
        "07_many_hosts.ipynb",
        "08_over_time.ipynb",
        "09_history.ipynb",
    ],
)
def test_notebooks_read_well_in_jupyterlab(session, name, monkeypatch, tmp_path, request):
    """Notebooks 05-09 with small parameters: Run All, then how they read (issues P19, P25),
    then what each was tested for headless. They run here and nowhere else (their papermill
    runs were folded in). Notebooks 02 and 03 are not run here: the seeds' smoke runs
    (tests/test_seeds.py) execute them, once, and read their write-ups' tables the same way."""
    s = session
    if name.startswith("06") and not is_root:
        pytest.skip("loop devices need root")
    if name.startswith("06"):  # the loop devices the lab's kernels make, from its ledger
        monkeypatch.setenv("IOLAB_STATE", str(s.lab.home / "state"))
        watch = LoopWatch()
        request.addfinalizer(watch.stop)
    if name.startswith("09"):
        listed = _fill_history(Path(NOTEBOOKS[name]["history_dir"].format(home=s.lab.home)), tmp_path)
    open_notebook(s, name)
    run_all(s)
    assert_all_cells_ran(s, name)
    read_through(s)
    if name.startswith("05"):
        _bad_spec_is_one_block(s)
        assert s.page.evaluate(STALE_BARS) == 0, f"a progress bar was left by the failed cell {s.where()}"
        open_notebook(s, name, reload=True)  # reopened: no "widget model not found" for a bar the kernel no longer has
        s.page.evaluate(PAINTED)
    elif name.startswith("06"):
        _kernel_path_checks(s, name, watch)
    elif name.startswith("07"):
        _many_hosts_checks(s, name)
    elif name.startswith("08"):
        _over_time_checks(s, name)
    elif name.startswith("09"):
        _history_checks(s, name, listed)
    assert_reads_well(s, name)


# ---------------------------------------------------------------- the project in JupyterLab
def test_lab_opens_on_the_notebooks_with_the_readme_one_click_away(session):
    """What ``make lab``'s URL shows: the file browser on notebooks/ with the nine notebooks;
    one click on the root of the path shows README.md, which opens."""
    from playwright.sync_api import expect

    s, files = session, session.page.locator(".jp-FileBrowser .jp-DirListing-item")
    s.page.goto(f"{s.lab.url}/?reset&token={s.lab.token}")  # / leads to lab_argv's landing page
    expect(s.page.locator(".jp-FileBrowser .jp-BreadCrumbs")).to_contain_text("notebooks", timeout=60_000)
    expect(files.filter(has_text=".ipynb")).to_have_count(len(NOTEBOOKS), timeout=30_000)
    s.shot("notebooks")
    s.page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").click()
    readme = files.filter(has_text=re.compile(r"^README\.md"))
    readme.first.dblclick(timeout=30_000)
    expect(s.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")).to_contain_text("README.md")
    expect(s.page.locator("#jp-main-dock-panel .lm-Widget.jp-Document:visible").first).to_contain_text("make lab")
    s.shot("readme")
    assert_no_console_errors(s)
