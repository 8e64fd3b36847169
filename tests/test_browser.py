"""JupyterLab in a real browser: the server started as ``make lab`` starts it
(``iolab.report.lab.lab_argv``), Debian's chromium driven by Playwright, notebooks 01 and 04 run
with Run All, then their interactive parts (flame graph, explorer) used with the mouse and
keyboard. No console error is allowed. Screenshots go to a temp folder named in the output
(``pytest -s``) and in every failure message.

chromium comes from Debian (``make test`` installs it as root: ``scripts/setup.sh --browser``);
Playwright never downloads a browser here (``executable_path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from conftest import CPU, OTHER_CPU, REPO
from iolab.report.lab import KERNEL_DISPLAY, lab_argv, quiet_lab
from iolab.machine.process import signal_group, spawn

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1280, "height": 900}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTEBOOKS = {  # short runs: the whole file stays under ~4 minutes on 2 cores
    "01_queue_depth_knee.ipynb": {"queue_depths": [1, 4], "runtime_s": 0.5, "size": "64m", "cpu": CPU},
    "04_flame_graph.ipynb": {"runtime_s": 0.5, "size": "64m", "freq_hz": 499, "cpu": CPU},
    "05_parameter_search.ipynb": {"spec": "search.yaml"},
    "07_many_hosts.ipynb": {"start_local_servers": 2, "runtime_s": 0.4, "repeats": 3, "size": "64m"},
    "08_over_time.ipynb": {"runtime_s": 2.5, "log_ms": 250, "size": "64m", "cpu": CPU, "window": 3},
}
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
RUN_ALL_TIMEOUT_S = 240
BROWSER_CPU = OTHER_CPU  # the notebooks measure on CPU
HIGHLIGHT = "#e040fb"  # the flame graph's search-match fill


# ---------------------------------------------------------------- screenshots
@pytest.fixture(scope="module")
def shots() -> Path:
    """A fresh folder for this run's screenshots and the JupyterLab log, named on the
    terminal (``-s``) and in the warnings summary, so a failure can be looked at."""
    folder = Path(tempfile.mkdtemp(prefix="iolab-browser-"))
    print(f"\nbrowser screenshots and jupyterlab.log: {folder}")
    warnings.warn(f"browser screenshots and jupyterlab.log: {folder}", stacklevel=1)
    return folder


# ---------------------------------------------------------------- chromium
def _descendant_group_leaders() -> set[int]:
    """Processes below this one that lead their own process group (how Playwright starts
    chromium), read from /proc: the browser is found by ancestry, never by name."""
    children: dict[int, list[int]] = {}
    leaders = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            _state, ppid, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
        except (OSError, ValueError):
            continue  # exited meanwhile
        pid = int(stat.parent.name)
        children.setdefault(int(ppid), []).append(pid)
        if int(pgrp) == pid:
            leaders.add(pid)
    ours, todo = set(), [os.getpid()]
    while todo:
        kids = children.get(todo.pop(), [])
        ours.update(kids)
        todo.extend(kids)
    return ours & leaders


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _stop_groups(pids: set[int], grace_s: float = 5) -> None:
    """SIGTERM each process group (JupyterLab then shuts its kernels down; SIGINT would
    not), SIGKILL what is left after ``grace_s``."""
    for pid in pids:
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        signal_group(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright; skipped, with the fix, when either is missing.
    Closed at the end, and its process group stopped by pid in case closing hung."""
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("chromium is not installed: make test installs it (as root), or apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: make setup (or .venv/bin/pip install -e '.[dev]')")
    before = _descendant_group_leaders()
    with _off_the_measured_cpu():
        pw = sync_playwright().start()
    try:
        with _off_the_measured_cpu():
            chrome = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        pids = _descendant_group_leaders() - before
        try:
            yield chrome
        finally:
            chrome.close()
            _stop_groups(pids)
    finally:
        pw.stop()


@contextlib.contextmanager
def _off_the_measured_cpu():
    """Processes started inside inherit CPU ``BROWSER_CPU`` only, so the browser and its
    driver do not share the CPU of the fio runs the notebooks profile."""
    before = os.sched_getaffinity(0)
    if BROWSER_CPU in before and len(before) > 1:
        os.sched_setaffinity(0, {BROWSER_CPU})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


# ---------------------------------------------------------------- JupyterLab
@dataclass
class Lab:
    url: str
    token: str
    notebooks: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_notebooks(folder: Path) -> None:
    """The notebooks with short parameters injected after their parameters cell, as papermill does."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    import yaml

    folder.mkdir()
    for name, params in NOTEBOOKS.items():
        nb = parameterize_notebook(load_notebook_node(str(REPO / "notebooks" / name)), params)
        nbformat.write(nb, folder / name)
    (folder / "search.yaml").write_text(yaml.safe_dump(SEARCH))
    (folder / "bad_search.yaml").write_text(yaml.safe_dump(BAD_SEARCH))


def _lab_env(token: str, home: Path) -> dict[str, str]:
    """The user's environment with: the token (in the environment, where ``ps`` cannot show
    it), data under ``home``, JupyterLab's settings and workspaces fresh (a saved workspace
    would reopen other tabs) with the news question turned off as make lab turns it off
    (``iolab.report.lab.quiet_lab``: its toast covers the notebook's lower right corner), and no
    batch-mode flags a papermill test may have left in this process (they would hide the
    widgets)."""
    quiet_lab()
    (home / "settings").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("IOLAB_HEADLESS", "TQDM_DISABLE")}
    env.update(
        JUPYTER_TOKEN=token,
        IOLAB_DATA=str(home / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
    )
    return env


def _wait_ready(proc: subprocess.Popen, url: str, token: str, log: Path, timeout_s: float = 60) -> None:
    """Until /api/status answers with the token; fails with the log's end if it never does."""
    deadline = time.monotonic() + timeout_s
    request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(request, timeout=2) as answer:
                json.load(answer)
                return
        except OSError:
            time.sleep(0.3)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    pytest.fail(
        f"JupyterLab did not answer at {url} within {timeout_s:g} s "
        f"(exit code {proc.poll()}); the end of {log}:\n{tail}"
    )


@pytest.fixture(scope="module")
def lab(shots):
    """JupyterLab started with ``lab_argv`` (as make lab) on a free port with a random token,
    on copies of notebooks 01 and 04, in its own process group; stopped by its pid."""
    home = Path(tempfile.mkdtemp(prefix="iolab-lab-"))
    try:
        _copy_notebooks(home / "notebooks")
        port, token, log_path = _free_port(), secrets.token_hex(24), shots / "jupyterlab.log"
        with open(log_path, "w") as log:  # not pinned: the notebooks' kernel must reach CPU 0
            proc, entry = spawn(
                lab_argv(home / "notebooks", port=port),
                name="jupyterlab",
                cwd=REPO,
                env=_lab_env(token, home),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(proc, url, token, log_path)
            yield Lab(url, token, home / "notebooks")
        finally:
            _stop_groups({proc.pid}, grace_s=15)
            proc.wait()
            entry.release()
    finally:
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------- a page
_PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


@dataclass
class Session:
    """One browser page with its console errors and numbered screenshots."""

    page: object
    lab: Lab
    shots: Path
    prefix: str
    errors: list[str] = field(default_factory=list)
    step: int = 0

    def shot(self, what: str, show=None) -> Path:
        """The window, with ``show`` scrolled into it first. (A screenshot of a tall element
        itself shows JupyterLab's frame, not the notebook's scrolled-away part.)"""
        if show is not None:
            show.scroll_into_view_if_needed()
            self.page.evaluate(_PAINTED)  # cells scrolled into view are drawn on the next frames
        self.step += 1
        path = self.shots / f"{self.prefix}-{self.step}-{what}.png"
        self.page.screenshot(path=path)
        return path

    def where(self) -> str:
        return f"(screenshots: {self.shots})"


@pytest.fixture
def session(browser, lab, shots, request):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    s = Session(page, lab, shots, prefix=request.node.name)
    page.on("console", lambda msg: msg.type == "error" and s.errors.append(f"console: {msg.text}"))
    page.on("pageerror", lambda exc: s.errors.append(f"page error: {exc}"))
    try:
        yield s
    finally:
        context.close()


def assert_no_console_errors(s: Session) -> None:
    assert not s.errors, f"browser console errors {s.where()}:\n" + "\n".join(s.errors)


# ---------------------------------------------------------------- notebook steps
def open_notebook(s: Session, name: str) -> None:
    """Open ``name`` in JupyterLab; accept the kernel dialog if one asks; the kernel must
    be the project's (``Python 3 (iolab)``) and idle."""
    from playwright.sync_api import expect

    s.page.goto(f"{s.lab.url}/lab/tree/{name}?reset&token={s.lab.token}")  # reset: no tabs of earlier tests
    expect(s.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")).to_contain_text(name, timeout=60_000)
    s.page.locator(".jp-NotebookPanel .jp-Notebook").wait_for(timeout=60_000)
    dialog = s.page.locator(".jp-Dialog")
    if dialog.count() and "kernel" in dialog.inner_text().lower():
        dialog.locator("button.jp-mod-accept").click()
    expect(s.page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")).to_contain_text(KERNEL_DISPLAY, timeout=60_000)
    expect(s.page.locator(".jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator")).to_have_attribute(
        "data-status", "idle", timeout=60_000
    )
    s.shot("opened")


_PROMPTS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt'))
    .map(p => p.textContent.trim())"""


def run_all(s: Session) -> None:
    """Run → Run All Cells, then wait until no cell is queued or running and the kernel is idle."""
    s.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    s.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    s.page.wait_for_function(  # started (or already done)
        f"() => ({_PROMPTS})().some(p => p.includes('*')) || ({_PROMPTS})().every(p => /\\d/.test(p))", timeout=30_000
    )
    indicator = ".jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator"
    s.page.wait_for_function(
        f"""() => !({_PROMPTS})().some(p => p.includes('*'))
            && document.querySelector('{indicator}').dataset.status === 'idle'""",
        timeout=RUN_ALL_TIMEOUT_S * 1000,
        polling=500,
    )
    s.shot("ran")


def saved_notebook(s: Session, name: str):
    """Save (Ctrl+S) and read the notebook back: error outputs are told apart from stderr
    text only in the file (JupyterLab renders both as stderr)."""
    path = s.lab.notebooks / name
    before = path.stat().st_mtime_ns
    s.page.locator(".jp-NotebookPanel .jp-Notebook").click(position={"x": 5, "y": 5})
    s.page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.stat().st_mtime_ns != before, f"{name} was not saved after Ctrl+S {s.where()}"
    while True:  # the new mtime can come before the whole file (seen empty under load)
        try:
            return nbformat.read(path, as_version=4)
        except (ValueError, nbformat.reader.NotJSONError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def assert_all_cells_ran(s: Session, name: str) -> None:
    """Every code cell has an execution count and none has an error output."""
    nb = saved_notebook(s, name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [
        f"cell {i}: {o.ename}: {o.evalue}" for i, c in enumerate(code) for o in c.outputs if o.output_type == "error"
    ]
    assert not errors, f"{name} has error outputs {s.where()}:\n" + "\n".join(errors)
    not_run = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not not_run, f"{name}: code cells {not_run} did not run {s.where()}"


def box(locator) -> dict:
    b = locator.bounding_box()
    assert b, f"{locator} is not rendered"
    return b


def inside_viewport(b: dict) -> bool:
    return b["x"] >= 0 and b["x"] + b["width"] <= VIEWPORT["width"] + 0.5


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
    assert_no_console_errors(s)


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
    assert_reads_well(s, name)

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
    assert_no_console_errors(s)


# ---------------------------------------------------------------- notebooks 05, 07, 08: how they read
_WIDE = """() => {
    const nb = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-viewport, .jp-NotebookPanel .jp-Notebook');
    const limit = nb.getBoundingClientRect().right + 1;
    return Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output'))
        .filter(o => !o.closest('.iolab-table') && (o.scrollWidth > o.clientWidth + 1
                     || o.getBoundingClientRect().right > limit))
        .map(o => o.innerText.slice(0, 80));
}"""
_SHRUNK = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output img'))
    .filter(i => i.naturalWidth && i.getBoundingClientRect().width < 0.97 * i.naturalWidth)
    .map(i => `${i.naturalWidth} px drawn at ${Math.round(i.getBoundingClientRect().width)} (cell: `
              + `${(i.closest('.jp-Cell').querySelector('.jp-InputArea') || {innerText: ''}).innerText.slice(0, 60)})`)"""
_TABLES = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output table'))
    .map(t => t.innerText)"""
_STALE_BARS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .widget-hprogress'))
    .filter(b => !b.querySelector('.progress-bar-success')).length"""  # a finished bar stays, green (tqdm)
NEGATIVE_INTERVAL = re.compile(r"\[\s*-\d[\d,.]*\s*,")  # "[-59,086, 452,039]"


def _look_through(s: Session, check: str) -> list:
    """``check`` (a script returning a list) evaluated at each screenful from the notebook's
    top to its bottom (JupyterLab lays out only the cells near the view); what it found."""
    found: list = []
    scroller = (
        "(document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer') || "
        "document.querySelector('.jp-NotebookPanel .jp-Notebook'))"
    )
    s.page.evaluate(f"() => {{ {scroller}.scrollTop = 0; }}")
    for _ in range(80):
        s.page.evaluate(_PAINTED)
        found += [f for f in s.page.evaluate(check) if f not in found]
        if s.page.evaluate(
            f"() => {{ const n = {scroller}; const at = n.scrollTop; n.scrollTop += 600; return n.scrollTop === at; }}"
        ):
            return found
    return found


def assert_reads_well(s: Session, name: str) -> None:
    """The checks of issue P19 on a notebook that ran: no output wider than the notebook
    unless inside the kit's scroll box, no figure drawn smaller than it was made (its 8-pt
    legends stay at 10 px or more), no interval below zero in a table, no unfinished
    progress bar left behind, no console error."""
    checks = (
        f"() => [({_WIDE})().map(w => 'wide: ' + w), ({_SHRUNK})().map(w => 'shrunk: ' + w), "
        f"({_TABLES})().map(t => 'table: ' + t), ['stale bars: ' + ({_STALE_BARS})()]].flat()"
    )
    found = _look_through(s, checks)
    figures = s.page.locator(".jp-NotebookPanel .jp-OutputArea-output img")
    for i in range(min(figures.count(), 3)):  # what a reader sees of the first figures
        s.shot(f"figure{i}", figures.nth(i))
    wide = [f for f in found if f.startswith("wide: ")]
    shrunk = [f for f in found if f.startswith("shrunk: ")]
    assert not wide, f"{name}: outputs wider than the notebook, outside a scroll box {s.where()}: {wide}"
    assert not shrunk, f"{name}: figures drawn smaller than made (legends under 10 px) {s.where()}: {shrunk}"
    negative = [m.group(0) for t in found if t.startswith("table: ") for m in NEGATIVE_INTERVAL.finditer(t)]
    assert not negative, f"{name}: intervals below zero in its tables {s.where()}: {negative}"
    stale = [f for f in found if f.startswith("stale bars: ") and f != "stale bars: 0"]
    assert not stale, f"{name}: unfinished progress bars left on screen after the run {s.where()}: {stale}"
    assert_no_console_errors(s)


def _outputs_text(nb) -> str:
    return "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
    )


def _write_up(s: Session, name: str, nb) -> str:
    """The write-up (``iolab.report.publish.to_html``) of the notebook as JupyterLab saved it."""
    from iolab.report.publish import to_html

    path = s.lab.notebooks.parent / f"saved-{name}"
    nbformat.write(nb, path)
    return to_html(path).read_text()


def _shut_down_kernel(s: Session, name: str) -> list[int]:
    """Delete ``name``'s session through JupyterLab's REST API: its kernel exits, as at the
    end of a papermill run, so what it leaves behind shows. The kernel's pids."""
    headers = {"Authorization": f"token {s.lab.token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{s.lab.url}/api/sessions", headers=headers)) as r:
        sessions = [x for x in json.load(r) if x["path"].endswith(name)]
    pids = [int(pid) for pid in _kernel_pids(s, sessions)]
    for x in sessions:
        urllib.request.urlopen(
            urllib.request.Request(f"{s.lab.url}/api/sessions/{x['id']}", method="DELETE", headers=headers)
        ).close()
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


def _kernel_pids(s: Session, sessions: list) -> list[str]:
    ids = {x["kernel"]["id"] for x in sessions}
    return [
        p.parent.name
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if any(i.encode() in (p.read_bytes() if p.exists() else b"") for i in ids)
    ]


def _bad_spec_is_one_block(s: Session) -> None:
    """A spec with ``runtime: 0.5s`` (fio wants 500ms) in a new last cell: the kit's one-line
    advice, not a screen of traceback; no bar left by the failed cell."""
    cells = s.page.locator(".jp-NotebookPanel .jp-Cell")
    cells.last.click()
    s.page.keyboard.press("Escape")
    s.page.keyboard.press("b")  # a new code cell below
    s.page.keyboard.press("Enter")  # edit it
    s.page.keyboard.type('search.run(search_spec.load_spec("bad_search.yaml"), "bad-runs")')
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
        for c in saved_notebook(s, "05_parameter_search.ipynb").cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert len(errors) == 1 and errors[0].ename == "InputError" and len(errors[0].traceback) <= 2, errors


def _many_hosts_checks(s: Session, name: str) -> None:
    """What the headless run of notebook 07 was tested for, on the JupyterLab run: the
    per-host figures in the write-up, and no network namespace of its kernel left once the
    kernel ends."""
    from test_hosts import left_by

    nb = saved_notebook(s, name)
    text = _outputs_text(nb)
    assert "2 hosts: " in text and "slowest host" in text and "servers stopped" in text, text[-2000:]
    html = _write_up(s, name, nb)
    assert html.count("data:image/png;base64") >= 4 and "pooled" in html and "efficiency" in html
    kernel = _shut_down_kernel(s, name)
    assert kernel and not left_by(*kernel)


def _over_time_checks(s: Session, name: str) -> None:
    """What the headless run of notebook 08 was tested for: the series accounted for, its
    steady state and stalls in words, the figures and the two tables in the write-up, fio's
    histogram log in the run folder."""
    nb = saved_notebook(s, name)
    text = _outputs_text(nb)
    assert "the series accounts for" in text and "intervals of 250 ms" in text, text[-2000:]
    assert "steady state (" in text.lower() and "stall" in text
    html = _write_up(s, name, nb)
    assert html.count("data:image/png;base64") >= 2  # the aligned series, the heatmap
    assert "fio report (whole run)" in html and "logs (covered intervals)" in html
    assert list((s.lab.notebooks.parent / "data/runs").glob("over-time-*/*/fio_clat_hist.1.log"))


@pytest.mark.parametrize("name", ["05_parameter_search.ipynb", "07_many_hosts.ipynb", "08_over_time.ipynb"])
def test_notebooks_read_well_in_jupyterlab(session, name):
    """Notebooks 05, 07 and 08 with small parameters: Run All, then how they read (issue
    P19). 07 and 08 run here and nowhere else (their papermill runs were folded in)."""
    s = session
    open_notebook(s, name)
    run_all(s)
    assert_all_cells_ran(s, name)
    assert_reads_well(s, name)
    if name.startswith("05"):
        _bad_spec_is_one_block(s)
        assert s.page.evaluate(_STALE_BARS) == 0, f"a progress bar was left by the failed cell {s.where()}"
        open_notebook(s, name)  # reopened: no "widget model not found" for a bar the kernel no longer has
        s.page.evaluate(_PAINTED)
        assert_no_console_errors(s)
    elif name.startswith("07"):
        _many_hosts_checks(s, name)
    else:
        _over_time_checks(s, name)
