"""JupyterLab in a real browser: one server started as ``make lab`` starts it
(``iolab.cli.lab.lab_argv``) on a project folder laid out as the checkout (README.md at its
root, the notebooks in notebooks/), Debian's chromium driven by Playwright. All nine notebooks
run with Run All at small parameters; each is then looked through screen by screen as a
reader at 1280 px would (``read_through``), and its interactive parts (flame graph,
explorer, a mistake in a cell) used with the mouse and keyboard. No console error is allowed.
Screenshots go to a temp folder named in the output (``pytest -s``) and in every failure
message; ``-s`` also prints each notebook's Run All time.

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
import threading
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest

from conftest import CPU, OTHER_CPU, REPO, LoopWatch, is_root
from iolab.cli.lab import lab_argv, quiet_lab
from iolab.report.kernel import KERNEL_DISPLAY
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
SHORT = {"runtime_s": 0.3, "cpu": CPU}  # fio runs of 0.3 s (fractional: fio_time's path)
NOTEBOOKS = {  # the smallest runs that still take each notebook's path; 3 repeats where it has intervals
    "01_queue_depth_knee.ipynb": {**SHORT, "queue_depths": [1, 4], "size": "64m"},
    "02_single_core_tuning_ladder.ipynb": {**SHORT, "size": "64m", "warmup": "none"},  # a loop device (root)
    "03_io_uring_per_core.ipynb": {**SHORT, "size": "64m", "queue_depths": [1, 128]},  # fio and t/io_uring
    "04_flame_graph.ipynb": {**SHORT, "size": "64m", "freq_hz": 499},
    "05_parameter_search.ipynb": {"spec": "search.yaml"},
    "06_kernel_io_path.ipynb": {  # every section on loop devices (root): two settings each
        **SHORT,
        "size": "64m",
        "block_sizes": ["4k", "256k"],
        "readahead_kb": [0, 512],
        "schedulers": ["none", "mq-deadline"],
    },
    "07_many_hosts.ipynb": {"start_local_servers": 2, "runtime_s": 0.4, "repeats": 3, "size": "64m"},
    "08_over_time.ipynb": {"runtime_s": 2.5, "log_ms": 250, "size": "64m", "cpu": CPU, "window": 3},
    "09_history.ipynb": {"history_dir": "{home}/history", "over": "kernel"},  # filled by its test
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
    home: Path  # its data (IOLAB_DATA = home/data), state and write-ups; the project in home/project

    @property
    def notebooks(self) -> Path:
        return self.home / "project" / "notebooks"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_project(home: Path) -> None:
    """``home/project`` laid out as the checkout: its README.md, and in notebooks/ the
    notebooks with short parameters injected after their parameters cell, as papermill does
    (the checkout's own notebooks are never written to)."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    import yaml

    folder = home / "project" / "notebooks"
    folder.mkdir(parents=True)
    shutil.copy(REPO / "README.md", folder.parent / "README.md")
    for name, params in NOTEBOOKS.items():
        params = {k: v.format(home=home) if isinstance(v, str) else v for k, v in params.items()}
        nb = parameterize_notebook(load_notebook_node(str(REPO / "notebooks" / name)), params)
        nbformat.write(nb, folder / name)
    (folder / "search.yaml").write_text(yaml.safe_dump(SEARCH))
    (folder / "bad_search.yaml").write_text(yaml.safe_dump(BAD_SEARCH))


def _lab_env(token: str, home: Path) -> dict[str, str]:
    """The user's environment with: the token (in the environment, where ``ps`` cannot show
    it), data and iolab's ledger under ``home`` (the loop devices its kernels make are this
    server's to account for, not another test's), JupyterLab's settings and workspaces
    fresh (a saved workspace would reopen other tabs) with the news question turned off as
    make lab turns it off (``iolab.cli.lab.quiet_lab``: its toast covers the notebook's
    lower right corner) and cells' run times recorded, and no batch-mode flags a papermill
    test may have left in this process (they would hide the widgets)."""
    quiet_lab()
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"recordTiming": true}')  # each cell's run time in the saved notebook
    env = {k: v for k, v in os.environ.items() if k not in ("IOLAB_HEADLESS", "TQDM_DISABLE")}
    env.update(
        JUPYTER_TOKEN=token,
        IOLAB_DATA=str(home / "data"),
        IOLAB_STATE=str(home / "state"),
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
def lab(shots, request):
    """JupyterLab started with ``lab_argv`` (as make lab) on a free port with a random token,
    on a copy of the project (``_copy_project``), in its own process group; stopped by its
    pid. Chromium starts while JupyterLab does."""
    home = Path(tempfile.mkdtemp(prefix="iolab-lab-"))
    try:
        _copy_project(home)
        port, token, log_path = _free_port(), secrets.token_hex(24), shots / "jupyterlab.log"
        with open(log_path, "w") as log:  # not pinned: the notebooks' kernel must reach CPU 0
            proc, entry = spawn(
                lab_argv(home / "project", port=port),
                name="jupyterlab",
                cwd=REPO,
                env=_lab_env(token, home),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            request.getfixturevalue("browser")
            _wait_ready(proc, url, token, log_path)
            started = Lab(url, token, home)
            ahead = threading.Thread(target=_start_kernels, args=(started, _in_test_order(request)), daemon=True)
            ahead.start()
            yield started
            ahead.join(timeout=5)  # a kernel still starting is stopped with the server
        finally:
            _stop_groups({proc.pid}, grace_s=15)
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


def _start_kernels(lab: "Lab", names: list[str]) -> None:
    """A session (its kernel) for each notebook of ``names`` not opened yet, as opening it
    would start one: a notebook finds its kernel started, its start spent while the notebook
    before it ran. One at a time (nine at once held up the first notebook): the next once
    the last is idle, which a kernel becomes when its notebook connects, or after 20 s. A
    kernel that fails to start here is started when its notebook opens."""
    for name in names:
        with contextlib.suppress(OSError, KeyError):
            if _sessions(lab, name):
                continue
            kernel = nbformat.read(lab.notebooks / name, as_version=4).metadata.kernelspec.name
            body = {"path": f"notebooks/{name}", "name": name, "type": "notebook", "kernel": {"name": kernel}}
            started = _api(lab, "sessions", method="POST", body=body)["kernel"]["id"]
            deadline = time.monotonic() + 20
            while _api(lab, f"kernels/{started}")["execution_state"] != "idle" and time.monotonic() < deadline:
                time.sleep(0.3)


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
    seconds: dict[str, float] = field(default_factory=dict)  # what took how long, printed at the end
    saved: object = None  # the notebook as last saved (``saved_notebook``)
    opened: set[str] = field(default_factory=set)  # the notebooks whose kernels are shut down at the end
    unread: list[str] = field(default_factory=list)  # what read_through found

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
            _close_tabs(s)
        with contextlib.suppress(OSError):  # a server that failed says so in its own test
            for x in [x for name in s.opened for x in _sessions(lab, name)]:
                _api(lab, f"sessions/{x['id']}", method="DELETE")
        print(f"\n{request.node.name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.seconds.items()))


def _api(lab: Lab, path: str, method: str = "GET", body: dict | None = None):
    """JupyterLab's REST API: the answer's JSON (None when empty)."""
    headers = {"Authorization": f"token {lab.token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{lab.url}/api/{path}", data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as r:
        answer = r.read()
    return json.loads(answer) if answer else None


def _sessions(lab: Lab, name: str = "") -> list[dict]:
    return [x for x in _api(lab, "sessions") if x["path"].endswith(name)]


def assert_no_console_errors(s: Session) -> None:
    assert not s.errors, f"browser console errors {s.where()}:\n" + "\n".join(s.errors)


# ---------------------------------------------------------------- notebook steps
def _menu(s: Session, menu: str, item: str, timeout_ms: float = 30_000) -> None:
    s.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click(timeout=timeout_ms)
    s.page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click(timeout=timeout_ms)


def _close_tabs(s: Session) -> None:
    """File → Close All Tabs; a notebook changed since its last save is discarded."""
    s.page.keyboard.press("Escape")
    _menu(s, "File", "Close All Tabs", timeout_ms=5_000)
    deadline = time.monotonic() + 15
    while s.page.locator(".jp-NotebookPanel").count() and time.monotonic() < deadline:
        discard = s.page.locator(".jp-Dialog button", has_text="Discard")
        if discard.count():
            discard.first.click()
        time.sleep(0.1)


def open_notebook(s: Session, name: str, reload: bool = False) -> None:
    """Open ``name`` in JupyterLab: with File → Open from Path… in the page a test before
    left, else (or when ``reload``) by its URL, which loads JupyterLab anew. Accept the
    kernel dialog if one asks; the kernel must be the project's (``Python 3 (iolab)``) and
    idle."""
    from playwright.sync_api import expect

    start = time.monotonic()
    s.opened.add(name)
    from playwright.sync_api import Error

    try:
        if reload or not s.page.locator(".jp-FileBrowser").count():
            raise Error("JupyterLab is loaded anew")
        _close_tabs(s)
        _menu(s, "File", "Open from Path…", timeout_ms=5_000)
        s.page.locator(".jp-Dialog input").fill(f"notebooks/{name}", timeout=5_000)
        s.page.keyboard.press("Enter")
    except Error:  # asked, or a page an earlier test left in a state the menus cannot reach
        s.page.goto(f"{s.lab.url}/lab/tree/notebooks/{name}?reset&token={s.lab.token}")  # reset: no earlier tabs
    expect(s.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")).to_contain_text(name, timeout=60_000)
    s.page.locator(".jp-NotebookPanel .jp-Notebook").wait_for(timeout=60_000)
    dialog = s.page.locator(".jp-Dialog")
    if dialog.count() and "kernel" in dialog.inner_text().lower():
        dialog.locator("button.jp-mod-accept").click()
    expect(s.page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")).to_contain_text(KERNEL_DISPLAY, timeout=60_000)
    expect(s.page.locator(".jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator")).to_have_attribute(
        "data-status", "idle", timeout=60_000
    )
    s.seconds["open" if "open" not in s.seconds else "reopen"] = time.monotonic() - start
    s.shot("opened")


_PROMPTS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt'))
    .map(p => p.textContent.trim())"""


def run_all(s: Session) -> None:
    """Run → Run All Cells, then wait until no cell is queued or running and the kernel is idle."""
    start = time.monotonic()
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
        polling=250,
    )
    s.seconds["Run All"] = time.monotonic() - start
    s.shot("ran")


def saved_notebook(s: Session, name: str, again: bool = False):
    """Save (Ctrl+S) and read the notebook back: error outputs are told apart from stderr
    text only in the file (JupyterLab renders both as stderr). Saved once unless ``again``
    (after a cell ran since)."""
    if s.saved is not None and not again:
        return s.saved
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
            s.saved = nbformat.read(path, as_version=4)
            return s.saved
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
    took = {f"cell [{c.execution_count}]": _cell_seconds(c) for c in code}
    s.seconds.update(sorted(took.items(), key=lambda kv: -kv[1])[:3])  # the slowest three, printed at the end


def _cell_seconds(cell) -> float:
    """How long a cell ran, from the times JupyterLab records (``recordTiming``), 0 without."""
    from datetime import datetime

    times = cell.metadata.get("execution", {})
    start, end = times.get("iopub.execute_input"), times.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    return (
        datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
    ).total_seconds()


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


# ---------------------------------------------------------------- notebooks 05, 07, 08: how they read
_WIDE = """() => {
    const nb = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-viewport, .jp-NotebookPanel .jp-Notebook');
    const limit = nb.getBoundingClientRect().right + 1;
    return Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output'))
        .filter(o => !o.closest('.iolab-table') && (o.scrollWidth > o.clientWidth + 1
                     || o.getBoundingClientRect().right > limit))
        .map(o => o.innerText.slice(0, 80));
}"""
_CUT = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .iolab-table'))
    .filter(b => b.clientWidth && b.scrollWidth > b.clientWidth + 1)
    .map(b => `${b.scrollWidth} px in ${b.clientWidth}: `
              + (b.querySelector('thead') || b).textContent.replace(/\\s+/g, ' ').trim().slice(0, 90))"""
_SHRUNK = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output img'))
    .filter(i => i.naturalWidth && i.getBoundingClientRect().width < 0.97 * i.naturalWidth)
    .map(i => `${i.naturalWidth} px drawn at ${Math.round(i.getBoundingClientRect().width)} (cell: `
              + `${(i.closest('.jp-Cell').querySelector('.jp-InputArea') || {innerText: ''}).innerText.slice(0, 60)})`)"""
_TABLES = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output table')).map(t => {
    const cells = r => Array.from(r.cells).flatMap(c => Array(c.colSpan || 1).fill(c.innerText.trim()));
    const input = t.closest('.jp-Cell').querySelector('.jp-InputArea-editor');
    return JSON.stringify({cell: input ? input.innerText.trim().slice(0, 70) : '',
                           head: Array.from(t.querySelectorAll('thead tr')).map(cells),
                           rows: Array.from(t.querySelectorAll('tbody tr')).map(cells)});
})"""
_STALE_BARS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output'))
    .filter(o => /\\d+%\\|/.test(o.innerText)).length"""  # tqdm's meter ("40%|████  | 2/5"): a finished bar is one "done" line
NEGATIVE_INTERVAL = re.compile(r"\[\s*[-−]\d[\d,.]*\s*,")  # "[-59,086, 452,039]"
# What a table must never show a reader (issue 42): raw column names (these, and any
# snake_case name), Python's words for values, and numbers a quantity cannot take.
RAW_NAMES = {
    "iops", "qd", "bs", "n", "separated", "shown", "effect_pct", "change_pct", "low_iops", "f_stat", "p_value",
    "ratio_pct", "low_pct", "high_pct", "roof_x_n", "efficiency_low_pct", "iops_mean", "iops_ci_low",
    "mean_lat_us_ci_low", "iops_median", "littles_ok", "p99_under_target", "gain_pct", "cpu_busy_pct",
}  # fmt: skip
PROPER_NAMES = {"io_uring"}  # names with an underscore of their own: a header may be a pivoted value
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
RAW_VALUES = re.compile(r"^(True|False|NaN|nan|None|<NA>|NaT|-?inf|\{.*:.*\})$")
NON_NEGATIVE = re.compile(r"IO/s|IOPS|µs|\bms\b|[KMG]iB|B/s|cycles|latency|\bp\d\d|\bruns\b|reads|\bios\b|busy", re.I)
A_CHANGE = re.compile(r"change|gain|effect|differ|\bvs\b|Δ|ratio|slope|trend|excursion|ahead|behind", re.I)
A_SHARE = re.compile(r"busy|share|utili[sz]", re.I)
NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?")


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


def read_through(s: Session) -> None:
    """The checks of issues P19 and P25 on a notebook that ran, screen by screen: no output
    wider than the notebook, no table wider than it (the kit's scroll box would cut it at
    the edge), no figure drawn smaller than it was made (its 8-pt legends stay at 10 px or
    more), tables that read like a write-up (``_unreadable``), no unfinished progress bar
    left behind. What it finds goes to ``s.unread`` (and stdout) for ``assert_reads_well``
    at the test's end, so that the notebook's own checks still run."""
    checks = (
        f"() => [({_WIDE})().map(w => 'wide: ' + w), ({_CUT})().map(w => 'cut: ' + w), "
        f"({_SHRUNK})().map(w => 'shrunk: ' + w), "
        f"({_TABLES})().map(t => 'table: ' + t), ['stale bars: ' + ({_STALE_BARS})()]].flat()"
    )
    found = _look_through(s, checks)
    figures = s.page.locator(".jp-NotebookPanel .jp-OutputArea-output img")
    for i in range(min(figures.count(), 3)):  # what a reader sees of the first figures
        s.shot(f"figure{i}", figures.nth(i))
    said = {
        "wide: ": "an output wider than the notebook, outside a scroll box: ",
        "cut: ": "a table wider than the notebook at 1280 px (its right part only by scrolling): ",
        "shrunk: ": "a figure drawn smaller than made (legends under 10 px): ",
        "stale bars: ": "unfinished progress bars left on screen after the run: ",
    }
    problems = [said[k] + f.removeprefix(k) for f in found for k in said if f.startswith(k) and f != "stale bars: 0"]
    tables = [json.loads(t.removeprefix("table: ")) for t in found if t.startswith("table: ")]
    problems += [f"a table of cell {t['cell']!r}: {what}" for t in tables for what in _unreadable(t)]
    s.unread = problems
    print("\n".join(["", f"{s.prefix} does not read well {s.where()}:", *problems]) if problems else "")


def assert_reads_well(s: Session, name: str) -> None:
    """No problem ``read_through`` found and no console error since the page opened."""
    assert not s.unread + s.errors, f"{name} does not read well {s.where()}:\n" + "\n".join(s.unread + s.errors)


def _unreadable(table: dict) -> list[str]:
    """What is wrong with one table (``_TABLES``): raw column names, raw values, an
    interval below 0, a non-negative quantity below 0, a share above 100 %."""
    head = [" ".join(filter(None, dict.fromkeys(col))) for col in zip(*table["head"])] if table["head"] else []
    names = dict.fromkeys(h for row in table["head"] for h in row if h not in PROPER_NAMES)  # the index's name too
    wrong = [f"raw column name {h!r}" for h in names if h in RAW_NAMES or SNAKE_CASE.match(h)]
    values = [c for r in table["rows"] for c in r if RAW_VALUES.match(c)]
    wrong += [f"raw values {sorted(set(values))}"] if values else []
    for i, h in enumerate(head):
        column = [r[i] for r in table["rows"] if len(r) == len(head)]
        numbers = [(c, float(n.replace("−", "-").replace(",", ""))) for c in column for n in NUMBER.findall(c)]
        if not A_CHANGE.search(h):  # a change may go below 0, the quantity changed not
            wrong += [f"{h!r}: an interval below 0: {c!r}" for c in column if NEGATIVE_INTERVAL.search(c)][:3]
        if NON_NEGATIVE.search(h) and not A_CHANGE.search(h):
            wrong += [f"{h!r} below 0: {c!r}" for c, x in numbers if x < 0][:3]
        if A_SHARE.search(h) and not A_CHANGE.search(h):
            wrong += [f"{h!r} above 100 %: {c!r}" for c, x in numbers if x > 100][:3]
    return wrong


def _outputs_text(nb) -> str:
    return "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
    )


def _write_up(s: Session, name: str, nb) -> str:
    """The write-up (``iolab.report.publish.to_html``) of the notebook as JupyterLab saved it."""
    from iolab.report.publish import to_html

    path = s.lab.home / f"saved-{name}"
    nbformat.write(nb, path)
    return to_html(path).read_text()


def _shut_down_kernel(s: Session, name: str) -> list[int]:
    """Delete ``name``'s session through JupyterLab's REST API: its kernel exits, as at the
    end of a papermill run, so what it leaves behind shows. The kernel's pids."""
    sessions = _sessions(s.lab, name)
    pids = [int(pid) for pid in _kernel_pids(s, sessions)]
    for x in sessions:
        _api(s.lab, f"sessions/{x['id']}", method="DELETE")
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
    assert list((s.lab.home / "data/runs").glob("over-time-*/*/fio_clat_hist.1.log"))


def _kernel_path_checks(s: Session, name: str, watch) -> None:
    """What the headless run of notebook 06 was tested for: the queue knobs it turned put
    back, every loop device it made detached and its backing file gone, a figure in its
    write-up."""
    nb = saved_notebook(s, name)
    assert "queue knobs restored" in _outputs_text(nb), _outputs_text(nb)[-2000:]
    assert watch.seen and not watch.left_behind(), f"loop devices left: {watch.left_behind()} of {list(watch.seen)}"
    assert _write_up(s, name, nb).count("data:image/png;base64") >= 1


HISTORY = [(100, 95, 105, "6.1"), (80, 78, 82, "6.12"), (81, None, None, "6.12")]  # peak IOPS, its interval, kernel


def _fill_history(folder: Path, snapshots: Path) -> list[str]:
    """Notebook 09's history (its ``history_dir``): three runs of notebook 01 recording peak
    IOPS and p99, on kernels 6.1, 6.12, 6.12, the last without an interval. Its files."""
    from test_history import SNAPSHOT, T0, kept, result
    from iolab.record import history

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
    text = _outputs_text(nb)
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2, f"not one figure per result {s.where()}"
    assert "6 results from 3 executed notebooks" in text, text
    assert "peak IOPS: 100 [95, 105] → 80 [78, 82] IO/s (-20 %), worse: kernel 6.1 → 6.12" in text, text
    assert "1 of 6 points have no interval recorded" in text, text
    folder = Path(NOTEBOOKS[name]["history_dir"].format(home=s.lab.home))
    assert sorted(p.name for p in folder.iterdir()) == listed  # 09 records nothing: it adds nothing to what it reads


@pytest.mark.parametrize(
    "name",
    [
        "02_single_core_tuning_ladder.ipynb",
        "03_io_uring_per_core.ipynb",
        "05_parameter_search.ipynb",
        "06_kernel_io_path.ipynb",
        "07_many_hosts.ipynb",
        "08_over_time.ipynb",
        "09_history.ipynb",
    ],
)
def test_notebooks_read_well_in_jupyterlab(session, name, monkeypatch, tmp_path, request):
    """Notebooks 02, 03 and 05-09 with small parameters: Run All, then how they read
    (issues P19, P25), then what each was tested for headless. They run here and nowhere
    else (their papermill runs were folded in); 02 and 03 also run in the seeds' smoke runs."""
    s = session
    if name.startswith(("02", "03", "06")) and not is_root:
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
        assert s.page.evaluate(_STALE_BARS) == 0, f"a progress bar was left by the failed cell {s.where()}"
        open_notebook(s, name, reload=True)  # reopened: no "widget model not found" for a bar the kernel no longer has
        s.page.evaluate(_PAINTED)
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
