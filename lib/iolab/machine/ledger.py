"""The ledger: what iolab created or changed, recorded before it exists, so that what a
dead process left behind (SIGKILL, a killed Jupyter kernel, a power-cut terminal) is put
right by the next iolab command or by ``iolab cleanup`` (``iolab.runs.repair`` reads the ledger
and does that). This module only records; it sits below everything that records.

Each entry is one small JSON file in ``paths.state_dir()/ledger``, written before the
thing exists and removed once it is released::

    {"kind": "loop", "owner_pid": 4242, "owner_start": 1234567, "device": "/dev/loop3",
     "backing": "/dev/shm/iolab-loop-x.img", "created_utc": "..."}

The kinds, in the order things are undone (``ORDER``: processes first, they use the devices):

    process   a process group iolab started (fio and its job processes): pid, start, name
    run       a run folder being written as ``.tmp-<id>``: path
    knob      a /sys or /proc file iolab wrote: path, old, new
    nvme      an NVMe feature iolab set with nvme-cli: controller, feature, old, new
    netns     a network namespace for a local fio server (and its veth pair): name
    loop      a loop device and its tmpfs backing file: device, backing
    file      a file (a loop backing file made before its device existed): path

Whoever records a thing also says how this process puts it back (``undo``). A process
that exits while it still holds something — a Jupyter kernel stopped by SIGTERM with a loop
device entered by hand in a cell — puts it back at exit with those, so nothing of iolab's
outlives it; only a process that dies without exiting (SIGKILL) needs ``iolab.runs.repair``.
"""

from __future__ import annotations

import atexit
import calendar
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.atomic import write_atomic
from ..core.errors import IolabError

STAMP = "%Y-%m-%dT%H:%M:%SZ"  # an entry's created_utc
ORDER = {"process": 0, "run": 1, "knob": 2, "nvme": 2, "netns": 3, "loop": 3, "file": 4}


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[19])


def boot_id() -> str | None:
    """This boot's random id (/proc/sys/kernel/random/boot_id), or None: a process recorded
    under another boot is gone."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def alive(pid: int, started: int | None) -> bool:
    """Whether ``pid`` is the process that started at ``started`` (not gone, not reused)."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def _dir() -> Path:
    d = paths.state_dir() / "ledger"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


class Entry:
    """One ledger record. ``release()`` removes it (the thing was put back normally);
    ``put_back()`` puts the thing back with the recorder's ``undo``, then releases it."""

    def __init__(self, kind: str, details: dict[str, Any], undo: Callable[[], object]):
        assert kind in ORDER, kind
        pid = os.getpid()
        self.kind, self.undo = kind, undo
        self.data = {
            "kind": kind,
            "owner_pid": pid,
            "owner_start": start_time(pid),
            "created_utc": time.strftime(STAMP, time.gmtime()),
            **details,
        }
        self.path = _dir() / f"{pid}-{kind}-{secrets.token_hex(4)}.json"
        self.write()
        _held[self.path] = self

    def update(self, **details: Any) -> None:
        self.data.update(details)
        self.write()

    def write(self) -> None:
        write_atomic(self.path, json.dumps(self.data, indent=1, default=str))

    def release(self) -> None:
        self.path.unlink(missing_ok=True)
        _held.pop(self.path, None)

    def put_back(self) -> None:
        self.undo()
        self.release()


def record(kind: str, *, undo: Callable[[], object], **details: Any) -> Entry:
    """Record ``kind`` (one of ``ORDER``) with its ``details`` before the thing exists.
    ``undo()`` puts it back from this process: called by ``Entry.put_back``, and at exit
    for an entry still held then."""
    return Entry(kind, details, undo)


def created(entry: dict) -> float:
    """When ``entry`` was written (its ``created_utc``), in seconds since the epoch; 0 when it
    does not say."""
    try:
        return calendar.timegm(time.strptime(entry["created_utc"], STAMP))
    except (KeyError, TypeError, ValueError):
        return 0.0


def describe(entry: dict) -> str:
    """What an entry names, in a word: its device, file, process or controller."""
    return str(
        entry.get("device")
        or entry.get("backing")
        or entry.get("path")
        or entry.get("name")
        or entry.get("controller")
        or ""
    )


def entries(unreadable: bool = False) -> Iterator[tuple[Path, Any]]:
    """(file, entry) of every readable ledger entry, in name order; not the hidden ones
    (``.claimed-*`` another process is undoing, ``.bad-*`` set aside: ``iolab.runs.repair``).
    With ``unreadable``, also (file, None) for a file that is not JSON or cannot be read."""
    folder = paths.state_dir() / "ledger"
    for path in sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")) if folder.is_dir() else []:
        try:
            yield path, json.loads(path.read_text())
        except (OSError, ValueError):
            if unreadable:
                yield path, None


# ---------------------------------------------------------------- this process, at exit
_held: dict[Path, Entry] = {}  # recorded by this process and not released yet


@atexit.register
def _put_back_own_at_exit() -> None:
    """At interpreter exit (also after SIGTERM/SIGHUP unwound a Jupyter kernel's loop), put
    back what this process still holds, in ``ORDER``; what cannot be put back stays in the
    ledger for ``iolab cleanup``."""
    for entry in sorted(_held.values(), key=lambda e: ORDER[e.kind]):
        if entry.data["owner_pid"] != os.getpid():  # inherited by a forked child: not its own
            continue
        what = f"{entry.kind} {describe(entry.data)}".rstrip()
        try:
            entry.put_back()
        except (OSError, IolabError) as exc:  # IolabError: nvme-cli failed or is gone
            print(f"iolab cleanup at exit: could not put back {what} ({exc}): run `iolab cleanup`", file=sys.stderr)
        else:
            print(f"iolab cleanup at exit: put back {what}", file=sys.stderr)
