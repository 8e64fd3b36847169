"""Leftovers of dead iolab processes that no ledger entry names, found in the default folders.

The ledger (``iolab.machine.ledger``) names what a running iolab holds, and ``iolab.runs.repair``
puts right what a dead one left. Some leftovers may have no entry: made by an iolab from
before it recorded them, or under another ``$IOLAB_STATE``. These are found by their names
in the scratch folder and the runs folder (``iolab.core.paths``), and only when the process
that made them is gone:

    data/scratch/.iolab-scratch.dat.4242.tmp     a scratch file's half, written by pid 4242
                                                 (``iolab.machine.target``): removed
    data/runs/.tmp-20261127T0536Z-qd1-3f9a/      a run folder being written, its run.json
    data/runs/search-x/.tmp-.../                 naming pid 4242 (``iolab.runs.store``): finished
    data/runs/search-x/warmup/.tmp-.../          as ``interrupted``, every file kept

    fix_leftovers(named)  ->  ["removed the half-written scratch file ... (pid 4242 is gone)", ...]

A run folder whose run.json cannot be read is left alone until it is ``STALE_S`` old (its
process may be about to write it). A process that is alive keeps what it has.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Collection, Iterator
from pathlib import Path

from ..core import paths, runfiles
from ..core.errors import InputError, IolabError, RunFileError, printable
from ..core.owned import SUFFIX as OWNED_SUFFIX
from ..core.runfiles import RUN_JSON
from ..machine import ledger

SCRATCH_HALF = re.compile(r"\.(?P<name>.+)\.(?P<pid>[1-9][0-9]{0,6})\.tmp")  # target._write_scratch's name
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z")  # a run folder's name begins so (store.new_run_id)
PID_MAX = 1 << 22  # Linux's highest pid_max (kernel/pid.c PID_MAX_LIMIT on 64-bit)
STALE_S = 3600  # a hidden run folder without a readable run.json this old has no writer left


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (signal 0: also another user's, also under /proc's hidepid)."""
    if not 0 < pid <= PID_MAX:  # not a pid (a hand-edited run.json): left alone
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def scratch_halves(folder: Path) -> Iterator[tuple[Path, int]]:
    """(file, pid) of each scratch file half in ``folder`` whose writer is gone."""
    for entry in _scan(folder):
        found = SCRATCH_HALF.fullmatch(entry.name)
        if found and not found["name"].endswith(OWNED_SUFFIX) and entry.is_file(follow_symlinks=False):
            if _gone(int(found["pid"])):
                yield Path(entry.path), int(found["pid"])


def run_homes(root: Path) -> Iterator[Path]:
    """Every folder under ``root`` that may hold run folders: ``root``, its study folders
    (children not named like a run) and their ``warmup`` folders."""
    yield root
    for entry in _scan(root):
        if entry.name.startswith(".") or RUN_ID.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        yield Path(entry.path)
        warmup = Path(entry.path) / "warmup"
        if warmup.is_dir():
            yield warmup


def hidden_runs(root: Path) -> Iterator[tuple[Path, str]]:
    """(folder, why) of each ``.tmp-`` run folder under ``root`` whose process is gone."""
    for folder in run_homes(root):
        for entry in _scan(folder):
            if not entry.name.startswith(".tmp-") or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                meta = runfiles.read_json(Path(entry.path) / RUN_JSON, keys=("pid",))
            except (RunFileError, OSError):
                meta = {"pid": None}
            why = _writer_gone(meta)
            if why:
                yield Path(entry.path), f"{why}: the run never ended"
            elif meta["pid"] is None and time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_S:
                yield Path(entry.path), "it was left unfinished over an hour ago: the run never ended"


def _writer_gone(meta: dict) -> str | None:
    """Why the process that began a run (its run.json's pid, pid_start, host, boot_id) is
    surely gone, or None when it may live: another host's run (a shared folder) is never
    judged; a run of an earlier boot is; a pid that now names a process started at another
    time was reused."""
    pid, host, boot = meta.get("pid"), meta.get("host"), meta.get("boot_id")
    if not isinstance(pid, int) or (host and host != socket.gethostname()):
        return None
    if boot and ledger.boot_id() not in (None, boot):
        return f"its iolab process, pid {pid}, ran before this machine restarted"
    if _gone(pid):
        return f"its iolab process, pid {pid}, is gone"
    started, now = meta.get("pid_start"), ledger.start_time(pid)
    if isinstance(started, int) and now is not None and now != started:
        return f"its iolab process, pid {pid}, is gone (that pid is another process's now)"
    return None


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:  # missing or unreadable: nothing of iolab's to find there
        return []


def fix_leftovers(named: Collection[str] = ()) -> list[str]:
    """Remove the scratch halves and finish the hidden run folders of gone processes in the
    default scratch and runs folders, except what the ledger names (``named``: absolute
    paths; repaired from there); one line per thing done, in words."""
    try:
        scratch, runs = paths.scratch_dir(), paths.runs_dir()
    except InputError:  # a bad $IOLAB_DATA: said by the command that uses those folders
        return []
    done = []
    for half, pid in scratch_halves(scratch):
        if str(half.absolute()) in named:
            continue
        try:
            size = half.stat().st_size
            half.unlink()
        except FileNotFoundError:  # another iolab starting at the same moment removed it
            continue
        done.append(
            f"removed the half-written scratch file {printable(str(half), keep='')} ({size / 2**20:.0f} MiB): "
            f"the iolab process writing it (pid {pid}) is gone"
        )
    for folder, why in hidden_runs(runs):
        if str(folder.absolute()) in named:
            continue
        from .store import finish_abandoned  # pandas: imported only when a run was left behind

        try:
            done.append(printable(finish_abandoned(folder, why), keep=""))
        except (OSError, IolabError) as exc:  # IolabError: a full disk (DiskFullError says what to do)
            why = f"{exc.strerror or exc}: free space or fix its permissions" if isinstance(exc, OSError) else exc
            done.append(
                f"could not mark the unfinished run folder {printable(str(folder), keep='')} interrupted: {why}; "
                "the next iolab command tries again"
            )
    return done
