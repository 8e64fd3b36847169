"""Debian's chromium driven by Playwright, off the CPU the tests measure on, and the process
groups it (or a JupyterLab) leaves, stopped by pid. Playwright never downloads a browser here
(``executable_path``); ``make test`` installs chromium as root (``scripts/setup.sh --browser``)."""

import contextlib
import os
import shutil
import signal
import tempfile
import time
import warnings
from pathlib import Path

import pytest

from iolab.machine.process import signal_group
from support.cpus import OTHER_CPU

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
BROWSER_CPU = OTHER_CPU  # the tests measure on CPU (support.cpus)


def shots_folder() -> Path:
    """A fresh folder for screenshots and the JupyterLab log, named on the terminal (``-s``)
    and in the warnings summary, so a failure can be looked at."""
    folder = Path(tempfile.mkdtemp(prefix="iolab-browser-"))
    print(f"\nbrowser screenshots and jupyterlab.log: {folder}")
    warnings.warn(f"browser screenshots and jupyterlab.log: {folder}", stacklevel=1)
    return folder


def descendant_group_leaders() -> set[int]:
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


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def stop_groups(pids: set[int], grace_s: float = 5) -> None:
    """SIGTERM each process group (JupyterLab then shuts its kernels down; SIGINT would
    not), SIGKILL what is left after ``grace_s``."""
    for pid in pids:
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        signal_group(pid, signal.SIGKILL)


@contextlib.contextmanager
def off_the_measured_cpu():
    """Processes started inside inherit CPU ``BROWSER_CPU`` only, so the browser and its
    driver do not share the CPU of the fio runs the notebooks profile."""
    before = os.sched_getaffinity(0)
    if BROWSER_CPU in before and len(before) > 1:
        os.sched_setaffinity(0, {BROWSER_CPU})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def chromium():
    """Debian's chromium through Playwright; the test skipped, with the fix, when either is
    missing. Closed at the end, and its process group stopped by pid in case closing hung."""
    executable = shutil.which("chromium")
    if not executable:
        pytest.skip("chromium is not installed: make test installs it (as root), or apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: make setup (or .venv/bin/pip install -e '.[dev]')")
    before = descendant_group_leaders()
    with off_the_measured_cpu():
        pw = sync_playwright().start()
    try:
        with off_the_measured_cpu():
            chrome = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        pids = descendant_group_leaders() - before
        try:
            yield chrome
        finally:
            chrome.close()
            stop_groups(pids)
    finally:
        pw.stop()
