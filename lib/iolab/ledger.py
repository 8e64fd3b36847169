"""The ledger: what iolab created or changed, so that what a dead process left behind
(SIGKILL, a killed Jupyter kernel, a power-cut terminal) is put right by the next iolab
command or by ``iolab cleanup``.

Each entry is one small JSON file in ``paths.state_dir()/ledger``, written before the
thing exists and removed once it is released::

    {"kind": "loop", "owner_pid": 4242, "owner_start": 1234567, "device": "/dev/loop3",
     "backing": "/dev/shm/iolab-loop-x.img", "created_utc": "..."}

Kinds and how ``recover()`` undoes them when the owner is dead (a pid that is gone, or
reused by another process, per its start time in ``/proc/PID/stat``):

    loop      detach the device if it is still backed by the recorded file; remove the file
    file      remove the file (a loop backing file made before its device existed)
    knob      write the old value back if the file still holds iolab's value
    process   stop the process group it led (fio and its job processes), by pgid
    run       finish a run folder left as ``.tmp-<id>`` as ``interrupted``

Entries are claimed by renaming them, so two processes never undo the same thing twice.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from . import paths
from .system import read_text, selected
from .target import loop_backing


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[19])


def alive(pid: int, started: int | None) -> bool:
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def _dir() -> Path:
    d = paths.state_dir() / "ledger"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


_atexit_registered = False


def _release_own_at_exit() -> None:
    """At interpreter exit (also after SIGTERM/SIGHUP unwound a Jupyter kernel's loop),
    undo what this process still holds: nothing of iolab's outlives it."""
    recover_and_report(owner=os.getpid(), prefix="iolab cleanup at exit")


class Entry:
    """One ledger record; ``release()`` removes it (the thing was put back normally)."""

    def __init__(self, kind: str, details: dict[str, Any]):
        assert kind in UNDO, kind
        pid = os.getpid()
        self.data = {"kind": kind, "owner_pid": pid, "owner_start": start_time(pid),
                     "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **details}
        self.path = _dir() / f"{pid}-{kind}-{secrets.token_hex(4)}.json"
        self.write()
        global _atexit_registered
        if not _atexit_registered:
            import atexit
            atexit.register(_release_own_at_exit)
            _atexit_registered = True

    def update(self, **details: Any) -> None:
        self.data.update(details)
        self.write()

    def write(self) -> None:
        from .store import write_atomic  # store imports this module
        write_atomic(self.path, json.dumps(self.data, indent=1, default=str))

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def record(kind: str, **details: Any) -> Entry:
    return Entry(kind, details)


@contextlib.contextmanager
def recorded(kind: str, **details: Any) -> Iterator[Entry]:
    """A ledger entry for the duration of the block, released on a normal or exceptional
    exit (the block itself puts the thing back; the entry is for a process that dies)."""
    entry = Entry(kind, details)
    try:
        yield entry
    finally:
        entry.release()


# ---------------------------------------------------------------- recovery
def _undo_loop(e: dict) -> str:
    dev, backing = e.get("device"), e.get("backing")
    msgs = []
    if dev:
        name = Path(dev).name
        current = loop_backing(name)
        if current and backing and current == backing:
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
            msgs.append(f"detached loop device {dev}")
        elif current:
            msgs.append(f"left {dev} attached: it is now backed by {current}, not iolab's {backing}")
    if backing and Path(backing).exists():
        Path(backing).unlink()
        msgs.append(f"removed its backing file {backing}")
    return "; ".join(msgs) or f"loop device {dev} was already released"


def _undo_file(e: dict) -> str:
    p = Path(e["path"])
    if p.exists():
        p.unlink()
        return f"removed {p}"
    return f"{p} was already removed"


def _undo_knob(e: dict) -> str:
    path, old, new = e["path"], str(e["old"]), str(e["new"])
    current = read_text(path)
    if current is None:
        return f"{path} no longer exists"
    if selected(current) != selected(new):
        return f"left {path} at {selected(current)!r}: changed since iolab set it to {new!r}"
    Path(path).write_text(old)
    return f"restored {path} to {old!r} (was iolab's {new!r})"


def _undo_process(e: dict) -> str:
    pgid, started = int(e["pid"]), e.get("start")
    members = [p for p in _pids() if _pgid(p) == pgid and (started is None or (start_time(p) or 0) >= started)]
    if not members:
        return f"{e.get('name', 'process')} (pid {pgid}) had already ended"
    from .process import signal_group  # process imports this module
    for sig in (signal.SIGTERM, signal.SIGKILL):
        signal_group(pgid, sig)
        for _ in range(50):
            if not any(_pgid(p) == pgid for p in members):
                return f"stopped {e.get('name', 'process')} (pid {pgid}) left running, with {len(members) - 1} child(ren)"
            time.sleep(0.1)
    return f"could not stop process group {pgid}"


def _undo_run(e: dict) -> str:
    from .store import finish_abandoned
    return finish_abandoned(Path(e["path"]), f"its iolab process (pid {e['owner_pid']}) died before the run ended")


UNDO: dict[str, Callable[[dict], str]] = {"loop": _undo_loop, "file": _undo_file, "knob": _undo_knob,
                                          "process": _undo_process, "run": _undo_run}
# processes first (they use the devices), then runs, knobs, devices, files
ORDER = {"process": 0, "run": 1, "knob": 2, "loop": 3, "file": 4}


def recover(owner: int | None = None) -> list[str]:
    """Undo what dead iolab processes left behind (or, with ``owner``, what that process
    still holds); one line per thing done."""
    todo = []
    for path, entry in _entries():
        if owner is not None and entry["owner_pid"] != owner:
            continue
        if owner is None and alive(entry["owner_pid"], entry.get("owner_start")):
            continue
        claimed = path.with_name(f".claimed-{path.name}")
        try:
            os.rename(path, claimed)  # whoever renames first undoes it
        except FileNotFoundError:
            continue
        todo.append((ORDER.get(entry["kind"], 9), claimed, entry))
    done = []
    for _, claimed, entry in sorted(todo, key=lambda t: t[0]):
        try:
            done.append(UNDO[entry["kind"]](entry))
        except OSError as exc:
            done.append(f"could not undo {entry['kind']} {entry}: {exc}")
        claimed.unlink(missing_ok=True)
    return done


def recover_and_report(owner: int | None = None, prefix: str = "iolab cleanup") -> list[str]:
    """``recover()``, each thing done said on stderr (a notebook shows it under the cell)."""
    import sys
    done = recover(owner)
    for line in done:
        print(f"{prefix}: {line}", file=sys.stderr)
    return done


def pending() -> list[dict]:
    """Entries of live iolab processes (what they hold now)."""
    return [entry for _, entry in _entries()]


def _entries() -> Iterator[tuple[Path, dict]]:
    """(file, entry) of every readable ledger entry, in name order."""
    folder = paths.state_dir() / "ledger"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            yield path, json.loads(path.read_text())
        except (OSError, ValueError):
            continue


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
