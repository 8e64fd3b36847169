"""A lock wait is one grey line naming the holder's program and pid (not its command line) that
ends "got it after N s" (issue 42: twelve red blocks piled up in notebook 05, none ending)."""

import fcntl
import os
import re

from iolab.machine import locks


def _held_by_this_process(path, argv: str) -> int:
    """``path`` flocked through a descriptor of its own, with the line a holder writes."""
    path.write_text(f"pid {os.getpid()} (someone: {argv}) since 10:00:00\n")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


_WAITING = locks.Waiting


def _let_go_once_waited(monkeypatch, fd) -> None:
    """The holder's ``fd`` closed once the wait is said, not after a fixed time (a loaded
    machine may start the wait later than a timer fires)."""

    class LetGo(_WAITING):
        def __init__(self, text):
            super().__init__(text)
            os.close(fd)  # the waiter's next try, 0.2 s on, gets it

    monkeypatch.setattr(locks, "Waiting", LetGo)


def test_a_wait_is_one_line_that_ends_when_the_lock_is_got(tmp_path, capsys, monkeypatch):
    path = tmp_path / "cpu5.lock"
    fd = _held_by_this_process(path, "/home/someone/.venv/bin/iolab run --secret-token abc --cpus 5")
    assert locks.program(path) == f"pid {os.getpid()} (iolab)"
    _let_go_once_waited(monkeypatch, fd)
    with locks.locked(path, "CPU 5", wait_s=10):
        pass
    said = capsys.readouterr()
    lines = said.err.splitlines()
    assert lines[0] == f"iolab: CPU 5 is in use by pid {os.getpid()} (iolab); waiting up to 10 s (IOLAB_LOCK_WAIT_S)"
    assert re.fullmatch(r"iolab: CPU 5: got it after \d+ s", lines[1]) and len(lines) == 2  # 0 s unless loaded
    assert "secret-token" not in said.err and said.out == ""

    shown = []  # in a kernel: one display, its line updated in place

    class Handle:
        def update(self, bundle, raw=False):
            shown.append(bundle["text/plain"])

    def display(bundle, raw=False, display_id=False):
        assert display_id and "color:#666" in bundle["text/html"]
        shown.append(bundle["text/plain"])
        return Handle()

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(locks, "in_kernel", lambda: True)
    fd = _held_by_this_process(path, "/opt/venv/lib/python3.11/site-packages/ipykernel_launcher.py -f /k.json")
    _let_go_once_waited(monkeypatch, fd)
    with locks.locked(path, "CPU 5", wait_s=10):
        pass
    assert len(shown) == 2 and shown[1].startswith(shown[0] + " … got it after ")
    assert f"pid {os.getpid()} (a Jupyter kernel)" in shown[0] and capsys.readouterr().err == ""


def test_a_runs_folder_lock_leaves_no_file_and_a_waiter_locks_the_new_one(tmp_path, monkeypatch, private_locks):
    """Every runs folder left a lock file in the lock folder for ever: it goes when released.
    A waiter that held the old, removed file opens the one now there; a symbolic link where a
    lock file goes is refused in one line (it was "Too many levels of symbolic links")."""
    import pytest

    from iolab.core.errors import BusyError

    runs = tmp_path / "runs"
    with locks.runs_folder_locked(runs, wait_s=5):
        held = list(private_locks.glob("runs-*.lock"))
        assert len(held) == 1
    assert not list(private_locks.glob("runs-*.lock"))
    with locks.runs_folder_locked(runs, wait_s=5):  # again, on a new file
        pass
    path = tmp_path / "gone.lock"
    old = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(old, fcntl.LOCK_EX)

    class Removed(_WAITING):  # the holder removes the file, then lets go: the waiter's file is gone
        def __init__(self, text):
            super().__init__(text)
            os.unlink(path)
            os.close(old)

    monkeypatch.setattr(locks, "Waiting", Removed)
    with locks.locked(path, "a runs folder", wait_s=10, remove=True):
        assert path.exists() and locks._still_at(locks._held[str(path)][0], path)
    assert not path.exists()
    target = tmp_path / "elsewhere"
    target.write_text("a user's file")
    (tmp_path / "link.lock").symlink_to(target)
    with pytest.raises(BusyError, match="is a symbolic link, not iolab's: remove it"):
        with locks.locked(tmp_path / "link.lock", "a runs folder", wait_s=1):
            pass
    assert target.read_text() == "a user's file"


def test_in_a_notebook_a_cell_that_waits_again_keeps_one_line(tmp_path, monkeypatch):
    """A search's runs each take the CPU's lock: 29 grey lines in notebook 05's cell (issue
    P34). In a kernel, the waits of one cell share one display line that counts them."""
    import IPython.display

    shown = []

    class Handle:
        def update(self, bundle, raw=True):
            shown[-1] = bundle["text/plain"]

    def display(bundle, raw=True, display_id=False):
        shown.append(bundle["text/plain"])
        return Handle()

    monkeypatch.setattr(locks, "in_kernel", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(locks, "_cell", lambda: 7)
    monkeypatch.setattr(locks, "_IN_CELL", {})
    for cpu in (5, 6, 5):
        locks.Waiting(f"iolab: CPU {cpu} is in use by pid 1 (iolab); waiting up to 10 s").end("got it")
    assert len(shown) == 1, shown
    assert re.fullmatch(
        r"iolab: 3 lock waits in this cell, \d+ s in all; the last, CPU 5: got it after \d+ s", shown[0]
    )
    monkeypatch.setattr(locks, "_cell", lambda: 8)  # the next cell: a line of its own
    locks.Waiting("iolab: CPU 5 is in use by pid 1 (iolab); waiting up to 10 s").end("got it")
    assert len(shown) == 2 and shown[1].endswith("… got it after 0 s")
