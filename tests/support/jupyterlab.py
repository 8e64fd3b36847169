"""JupyterLab for the browser tests: a server's address and REST API, the kernels started ahead
of their notebooks, and one page on it (``Session``) with the steps a reader takes: open a
notebook, Run All, save it and read it back; what a notebook that ran shows and leaves."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from iolab.cli.lab import quiet_lab
from iolab.report.kernel import KERNEL_DISPLAY
from support.browser import VIEWPORT, alive

RUN_ALL_TIMEOUT_S = 240


@dataclass
class Lab:
    url: str
    token: str
    home: Path  # its data (IOLAB_DATA = home/data), state and write-ups; the project in home/project

    @property
    def notebooks(self) -> Path:
        return self.home / "project" / "notebooks"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(token: str, home: Path) -> dict[str, str]:
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


def wait_ready(proc: subprocess.Popen, url: str, token: str, log: Path, timeout_s: float = 60) -> None:
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


def start_kernels(lab: Lab, names: list[str]) -> None:
    """A session (its kernel) for each notebook of ``names`` not opened yet, as opening it
    would start one: a notebook finds its kernel started, its start spent while the notebook
    before it ran. One at a time (nine at once held up the first notebook): the next once
    the last is idle, which a kernel becomes when its notebook connects, or after 20 s. A
    kernel that fails to start here is started when its notebook opens."""
    for name in names:
        with contextlib.suppress(OSError, KeyError):
            if lab_sessions(lab, name):
                continue
            kernel = nbformat.read(lab.notebooks / name, as_version=4).metadata.kernelspec.name
            body = {"path": f"notebooks/{name}", "name": name, "type": "notebook", "kernel": {"name": kernel}}
            started = api(lab, "sessions", method="POST", body=body)["kernel"]["id"]
            deadline = time.monotonic() + 20
            while api(lab, f"kernels/{started}")["execution_state"] != "idle" and time.monotonic() < deadline:
                time.sleep(0.3)


PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


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
            self.page.evaluate(PAINTED)  # cells scrolled into view are drawn on the next frames
        self.step += 1
        path = self.shots / f"{self.prefix}-{self.step}-{what}.png"
        self.page.screenshot(path=path)
        return path

    def where(self) -> str:
        return f"(screenshots: {self.shots})"


def api(lab: Lab, path: str, method: str = "GET", body: dict | None = None):
    """JupyterLab's REST API: the answer's JSON (None when empty)."""
    headers = {"Authorization": f"token {lab.token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{lab.url}/api/{path}", data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as r:
        answer = r.read()
    return json.loads(answer) if answer else None


def lab_sessions(lab: Lab, name: str = "") -> list[dict]:
    return [x for x in api(lab, "sessions") if x["path"].endswith(name)]


def assert_no_console_errors(s: Session) -> None:
    assert not s.errors, f"browser console errors {s.where()}:\n" + "\n".join(s.errors)


def click_menu(s: Session, menu: str, item: str, timeout_ms: float = 30_000) -> None:
    s.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click(timeout=timeout_ms)
    s.page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click(timeout=timeout_ms)


def close_tabs(s: Session) -> None:
    """File → Close All Tabs; a notebook changed since its last save is discarded."""
    s.page.keyboard.press("Escape")
    click_menu(s, "File", "Close All Tabs", timeout_ms=5_000)
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
        close_tabs(s)
        click_menu(s, "File", "Open from Path…", timeout_ms=5_000)
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


PROMPTS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt'))
    .map(p => p.textContent.trim())"""


def run_all(s: Session) -> None:
    """Run → Run All Cells, then wait until no cell is queued or running and the kernel is idle."""
    start = time.monotonic()
    s.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    s.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    s.page.wait_for_function(  # started (or already done)
        f"() => ({PROMPTS})().some(p => p.includes('*')) || ({PROMPTS})().every(p => /\\d/.test(p))", timeout=30_000
    )
    indicator = ".jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator"
    s.page.wait_for_function(
        f"""() => !({PROMPTS})().some(p => p.includes('*'))
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
    took = {f"cell [{c.execution_count}]": cell_seconds(c) for c in code}
    s.seconds.update(sorted(took.items(), key=lambda kv: -kv[1])[:3])  # the slowest three, printed at the end


def cell_seconds(cell) -> float:
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


def outputs_text(nb) -> str:
    return "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
    )


def write_up(s: Session, name: str, nb) -> str:
    """The write-up (``iolab.report.publish.to_html``) of the notebook as JupyterLab saved it."""
    from iolab.report.publish import to_html

    path = s.lab.home / f"saved-{name}"
    nbformat.write(nb, path)
    return to_html(path).read_text()


def shut_down_kernel(s: Session, name: str) -> list[int]:
    """Delete ``name``'s session through JupyterLab's REST API: its kernel exits, as at the
    end of a papermill run, so what it leaves behind shows. The kernel's pids."""
    sessions = lab_sessions(s.lab, name)
    pids = [int(pid) for pid in kernel_pids(s, sessions)]
    for x in sessions:
        api(s.lab, f"sessions/{x['id']}", method="DELETE")
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


def kernel_pids(s: Session, sessions: list) -> list[str]:
    ids = {x["kernel"]["id"] for x in sessions}
    return [
        p.parent.name
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if any(i.encode() in (p.read_bytes() if p.exists() else b"") for i in ids)
    ]
