"""Locks that keep two measurements off one CPU, and two writers out of one output folder.

Two runs pinned to the same CPU at once interfere silently: each counts the other's CPU
time in its cycles/IO. ``cpus_locked([0])`` takes an exclusive ``flock`` on
``paths.lock_dir()/cpu0.lock`` — one folder for every user of the machine — and writes who
holds it into the file, so a second measurement waits with one grey line naming the
holder's program and pid, that ends "got it after N s" (``Waiting``), and gives up with ``BusyError`` after ``wait_s`` (``$IOLAB_LOCK_WAIT_S``, default 600 s;
0 refuses at once). flock locks vanish with their process, even after SIGKILL: no stale
lock to clean.

Locks are re-entrant within a process (a sweep of runs on CPU 0 holds it once per run;
``many_devices`` runs on several CPUs from threads of one process).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import BusyError, printable
from ..core.progress import in_kernel
from ..core.readable import readable_seconds

CPU_HINT = "other CPUs (--cpus / cpu=)"  # what a busy lock's error says to choose instead
_held: dict[str, tuple[int, int]] = {}  # lock name -> (fd, depth)
_mutex = threading.Lock()


def _forget_held_in_child() -> None:
    """A forked child (a process pool's worker) holds none of its parent's locks: it closes
    the inherited descriptors, so it can never keep a lock once the parent is gone (the
    parent's own descriptor still holds it), and would wait for a lock like any process."""
    global _held, _mutex
    for fd, _ in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held, _mutex = {}, threading.Lock()  # the parent's mutex may have been held by another thread


os.register_at_fork(after_in_child=_forget_held_in_child)


def default_wait_s() -> float:
    """Seconds a measurement waits for a busy CPU: ``$IOLAB_LOCK_WAIT_S`` (default 600; a
    finite number >= 0, else InputError naming the variable)."""
    return paths.env_seconds("IOLAB_LOCK_WAIT_S", 600.0)


def _folder() -> Path:
    d = paths.lock_dir()
    if not d.is_dir():
        d.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):
            os.chmod(d, 0o1777)  # shared by all users, like /tmp
    return d


def _open(path: Path) -> int:
    """The lock file, made readable by all and writable by its owner alone (0644): another
    user locks it through a read-only descriptor (flock needs no write), and cannot put text
    in it that the holder's waiters print."""
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o644)  # one an older iolab made world-writable
            return fd
        except PermissionError:  # another user's lock file: flock works on a read-only fd
            return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW: a symbolic link where a lock file goes
            raise BusyError(
                f"lock file {path} is a symbolic link, not iolab's: remove it (iolab locks only files of its own there)"
            ) from None
        raise


HOLDER_CHARS = 200  # of the lock file's text shown: pid, user, command, time


def _locker(path: Path) -> int | None:
    """The pid holding the flock on ``path``, as the kernel says (``/proc/locks``), or None."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        words = line.split()
        if len(words) > 5 and words[1] == "FLOCK" and words[5] == where and words[4].isdigit():
            return int(words[4])
    return None


def holder(path: Path) -> str:
    """Who holds the lock: its lock file's first line when it names the pid the kernel says
    holds it (a holder whose lock file is another user's could not write its own line), with
    control characters escaped (``printable``: the file may be another user's) and cut to
    ``HOLDER_CHARS``; else that pid alone."""
    pid = _locker(path)
    try:
        with open(path, "rb") as f:
            text = f.read(4 * HOLDER_CHARS).decode(errors="replace")
    except OSError:
        text = ""
    first = printable(next((line.strip() for line in text.split("\n") if line.strip()), ""), keep="")
    if pid is not None and not first.startswith(f"pid {pid} "):
        return f"pid {pid}"
    return (first[:HOLDER_CHARS] + " …" if len(first) > HOLDER_CHARS else first) or "another process"


@contextlib.contextmanager
def locked(
    path: Path, what: str, wait_s: float | None = None, other: str = CPU_HINT, remove: bool = False
) -> Iterator[None]:
    """An exclusive lock on the file ``path`` for the block; ``what`` says what it guards,
    ``other`` what else to choose when it is busy. ``remove``: the lock file goes when the
    lock is released (one per runs folder would pile up for ever): unlinked while still
    locked, and a waiter that then holds a file no longer at ``path`` opens it again."""
    name = str(path)
    with _mutex:
        if name in _held:
            fd, depth = _held[name]
            _held[name] = (fd, depth + 1)
            acquired = False
        else:
            acquired = True
    if acquired:
        fd = _acquire(path, what, default_wait_s() if wait_s is None else wait_s, other)
        while remove and not _still_at(fd, path):  # its last holder removed it: lock the file now there
            os.close(fd)
            fd = _acquire(path, what, default_wait_s() if wait_s is None else wait_s, other)
        with _mutex:
            _held[name] = (fd, 1)
    try:
        yield
    finally:
        with _mutex:
            fd, depth = _held[name]
            if depth > 1:
                _held[name] = (fd, depth - 1)
            else:
                del _held[name]
                if remove:
                    with contextlib.suppress(OSError):
                        os.unlink(path)  # still locked: a waiter finds it gone and opens anew
                os.close(fd)  # releases the flock


def _still_at(fd: int, path: Path) -> bool:
    """Whether the locked file ``fd`` is still the one ``path`` names."""
    try:
        st, here = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _acquire(path: Path, what: str, wait_s: float, other: str = CPU_HINT) -> int:
    fd = _open(path)
    deadline = time.monotonic() + wait_s
    waiting = None
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    if waiting is not None:
                        waiting.end("gave up")
                        waiting = None  # ended: the error below says the rest
                    raise BusyError(
                        f"{what} is in use by {holder(path)}. Wait for it to finish, choose "
                        f"{other}, or set IOLAB_LOCK_WAIT_S to wait longer "
                        f"(lock file {path})"
                    ) from None
                if waiting is None:
                    waiting = Waiting(
                        f"iolab: {what} is in use by {program(path)}; waiting up to {wait_s:.0f} s (IOLAB_LOCK_WAIT_S)"
                    )
                time.sleep(0.2)
    except BaseException:
        os.close(fd)
        if waiting is not None:
            waiting.end("stopped waiting")
        raise
    if waiting is not None:
        waiting.end("got it")
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(
            fd,
            (
                f"pid {os.getpid()} ({getpass.getuser()}: {' '.join(sys.argv)[:120]}) since "
                f"{time.strftime('%H:%M:%S')}\n"
            ).encode(),
            0,
        )
    return fd


_IN_CELL: dict = {}  # a kernel's lock waits in the cell now running: its one line, how many, how long


def _cell() -> Any:
    """The notebook cell now running (IPython's execution count), None outside one."""
    try:
        from IPython import get_ipython

        return getattr(get_ipython(), "execution_count", None)
    except ImportError:
        return None


class Waiting:
    """One grey line for one lock wait: ``text`` now, then ``end("got it")`` adds "… got it
    after N s". In a notebook's kernel one display output updated in place (its display_id:
    not the red block of stderr), and one per cell: a cell that waits again (a search's
    runs, each taking the CPU's lock) updates the same line with how many waits and how long
    in all. Elsewhere ``text`` and the ending as two lines on stderr (a command's stdout may
    be its data)."""

    def __init__(self, text: str):
        self.text, self._start, self._handle = printable(text, keep=""), time.monotonic(), None
        if in_kernel():
            from IPython.display import display

            cell = _cell()
            if _IN_CELL.get("cell") == cell and _IN_CELL.get("handle") is not None:  # one line per cell
                self._handle = _IN_CELL["handle"]
                self._handle.update(self._bundle(self._so_far(f"now {self.text.removeprefix('iolab: ')}")), raw=True)
            else:
                self._handle = display(self._bundle(self.text), raw=True, display_id=True)
                _IN_CELL.clear()
                _IN_CELL.update(cell=cell, handle=self._handle, waits=0, seconds=0.0)
            _IN_CELL["waits"] += 1
        else:
            print(self.text, file=sys.stderr, flush=True)

    @staticmethod
    def _so_far(tail: str) -> str:
        """The cell's one line once it has waited more than once: how often, how long in all."""
        waits, seconds = _IN_CELL.get("waits", 0), _IN_CELL.get("seconds", 0.0)
        return f"iolab: {waits} lock wait{'s' * (waits != 1)} in this cell, {readable_seconds(seconds)} in all; {tail}"

    def end(self, how: str) -> None:
        waited = time.monotonic() - self._start
        said = f"{how} after {readable_seconds(waited)}"
        if self._handle is not None:
            if _IN_CELL.get("handle") is self._handle:
                _IN_CELL["seconds"] = _IN_CELL.get("seconds", 0.0) + waited
            if _IN_CELL.get("handle") is self._handle and _IN_CELL.get("waits", 0) > 1:
                what = self.text.removeprefix("iolab: ").split(" is in use", 1)[0]
                self._handle.update(self._bundle(self._so_far(f"the last, {what}: {said}")), raw=True)
            else:
                self._handle.update(self._bundle(f"{self.text} … {said}"), raw=True)
        else:
            print(
                f"{self.text.split(' is in use', 1)[0]}: {said}", file=sys.stderr, flush=True
            )  # "iolab: CPU 0: got it after 2 s"

    @staticmethod
    def _bundle(text: str) -> dict:
        import html

        return {"text/plain": text, "text/html": f'<div style="color:#666">{html.escape(text)}</div>'}


def program(path: Path) -> str:
    """The holder of ``path``'s lock in short: its pid and program ("pid 4242 (iolab)", "pid
    4242 (a Jupyter kernel)"), never its whole command line (it may be another user's); the
    pid alone when its lock file does not name it."""
    pid = _locker(path)
    if pid is None:
        return "another process"
    try:
        with open(path, "rb") as f:
            first = f.read(4 * HOLDER_CHARS).decode(errors="replace").split("\n")[0]
    except OSError:
        first = ""
    found = re.match(rf"pid {pid} \([^:]*: (.*)\) since ", first)
    name = printable(_program_name(found.group(1)), keep="")[:40] if found else ""
    return f"pid {pid} ({name})" if name else f"pid {pid}"


def _program_name(argv: str) -> str:
    """The program of a holder's ``sys.argv``: 'iolab' (".../bin/iolab run ...",
    ".../iolab/cli.py ..."), 'a Jupyter kernel' (".../ipykernel_launcher.py -f ..."),
    'python' ("-c ..."), else the first word's file name."""
    words = argv.split()
    if not words:
        return ""
    if "ipykernel" in words[0]:
        return "a Jupyter kernel"
    if words[0] == "-c":
        return "python"
    parts = Path(words[0]).parts
    if "iolab" in parts[:-1]:
        return "iolab"
    return parts[-2] if parts[-1] == "__main__.py" and len(parts) > 1 else parts[-1]


@contextlib.contextmanager
def cpus_locked(cpus: Sequence[int] | None, wait_s: float | None = None) -> Iterator[None]:
    """Hold the locks of ``cpus`` (all online CPUs when None: an unpinned run may use any),
    in ascending order so two holders of overlapping sets cannot deadlock."""
    wanted = sorted(set(cpus)) if cpus is not None else sorted(os.sched_getaffinity(0))
    with contextlib.ExitStack() as stack:
        for cpu in wanted:
            stack.enter_context(locked(_folder() / f"cpu{cpu}.lock", f"CPU {cpu}", wait_s))
        yield


def folder_locked(folder: Path, wait_s: float | None = None) -> contextlib.AbstractContextManager[None]:
    """Hold an output folder (e.g. ``papermill_runs/``) so two writers never interleave
    (the lock is ``FOLDER/.iolab.lock``)."""
    return locked(Path(folder).resolve() / ".iolab.lock", f"output folder {folder}", wait_s)


def runs_folder_locked(folder: Path, wait_s: float | None = None) -> contextlib.AbstractContextManager[None]:
    """Hold a runs folder for one study at a time: a second study into it waits, naming the
    holder, and is refused after ``wait_s``; both would otherwise run every cell the folder
    lacks. The lock sits with the CPU locks, named after the folder's real path
    (``runs-<sha256 of it, 16 hex>.lock``), so the runs folder holds run folders only."""
    import hashlib

    digest = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:16]
    return locked(
        _folder() / f"runs-{digest}.lock",
        f"runs folder {folder}",
        wait_s,
        "another runs folder (--runs-dir)",
        remove=True,
    )
