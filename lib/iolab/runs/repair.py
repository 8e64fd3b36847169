"""Repair: put right what dead iolab processes left behind, from the ledger (``iolab.machine.ledger``).

Every iolab command repairs first — ``runner.measure`` and ``measure_tio`` (``exclusive``),
``sweep.sweep`` and the ``iolab`` command line call ``recover_and_report()`` — and
``iolab cleanup`` says what it did and what live processes hold (``cleanup_report()``).

An entry is undone when its owner is dead (a pid that is gone, or reused by another
process, per its start time in ``/proc/PID/stat``):

    process   stop the process group it led (fio and its job processes), by pgid; one whose
              pid was never recorded, by the token in its environment (an entry younger
              than ``STARTING_S`` whose tool is not seen yet waits for the next repair)
    run       finish a run folder left as ``.tmp-<id>`` as ``interrupted``
    knob      write the old value back if the /sys file still holds iolab's value
    nvme      set the NVMe feature back if the controller still has iolab's value (nvme-cli)
    loop      detach the device if it is still backed by the recorded file; remove the file
    file      remove the file (a loop backing file made before its device existed, a scratch
              file's half being written)

Entries are claimed by renaming them (``.claimed-<pid>-<start>--<name>``), so two processes
never undo the same thing twice; a Ctrl-C puts back the claims not done, and a claim whose
claimer died is taken back by the next repair. An entry iolab cannot act on (``_malformed``:
edited by hand, another version's) is set aside as ``.bad-<name>`` and said once. An
entry that cannot be undone (a full disk, a permission) is said in words; a run folder or a
file (``RETRIED``) stays in the ledger for the next command. Leftovers no entry names (an older iolab's) are found in the
default folders by their names (``iolab.runs.leftovers``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import InputError, IolabError
from ..core.system import read_text, selected
from ..machine import ledger
from ..machine.knobs import nvme_get_feature, nvme_set_feature
from ..machine.process import signal_group, token_of
from ..machine.target import detach_loop, loop_backing
from .leftovers import fix_leftovers


def _undo_loop(e: dict) -> str:
    dev, backing = e.get("device"), e.get("backing")
    msgs = []
    attached = bool(dev) and loop_backing(Path(dev).name)  # to iolab's file, or by now another's
    if attached and backing:
        try:
            msgs.append(detach_loop(dev, backing))
        except OSError as exc:  # said; its file is removed all the same, as before
            msgs.append(f"{exc}: detach it with losetup -d {dev}")
    elif attached:
        msgs.append(f"left {dev} attached: its ledger entry names no backing file to check it against")
    if backing and Path(backing).exists():
        Path(backing).unlink()
        msgs.append(f"removed its backing file {backing}")
    return "; ".join(msgs) or f"loop device {dev} was already released"


def _undo_file(e: dict) -> str:
    p, what = Path(e["path"]), e.get("what", "file")
    if p.exists():
        p.unlink()
        return f"removed the {what} {p}: its iolab process (pid {e['owner_pid']}) died before it was done"
    return f"the {what} {p} was already removed"


def _undo_knob(e: dict) -> str:
    path, old, new = e["path"], str(e["old"]), str(e["new"])
    current = read_text(path)
    if current is None:
        return f"{path} no longer exists"
    if selected(current) != selected(new):
        return f"left {path} at {selected(current)!r}: changed since iolab set it to {new!r}"
    Path(path).write_text(old)
    return f"restored {path} to {old!r} (was iolab's {new!r})"


def _undo_nvme(e: dict) -> str:
    ctrl, fid, old, new = e["controller"], int(e["feature"]), int(e["old"]), int(e["new"])
    current = nvme_get_feature(ctrl, fid)
    if current != new:
        return f"left {ctrl} feature {fid:#x} at {current:#x}: changed since iolab set it to {new:#x}"
    nvme_set_feature(ctrl, fid, old)
    return f"restored {ctrl} feature {fid:#x} to {old:#x} (was iolab's {new:#x})"


def _undo_process(e: dict) -> str:
    name = e.get("name", "process")
    if "pid" in e:
        pgid, started = int(e["pid"]), e.get("start")
        members = [
            p for p in _pids() if _pgid(p) == pgid and (started is None or (ledger.start_time(p) or 0) >= started)
        ]
    else:  # its owner died between starting it and recording its pid: found by its token
        members = _carrying(str(e.get("token")))
    groups = {g for g in map(_pgid, members) if g is not None}
    if not groups:
        if "pid" in e:
            return f"{name} (pid {e['pid']}) had already ended"
        if time.time() - ledger.created(e) < STARTING_S:
            raise _Later  # forked and not exec'd yet: its environment has no token until then
        return (
            f"{name} was not found running (its iolab process died as it started it; a tool that "
            "changes user or clears its environment, as sudo does, cannot be found)"
        )
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in groups:
            signal_group(g, sig)
        for _ in range(50):
            if not any(_pgid(p) in groups for p in members):
                return f"stopped {name} (pid {min(groups)}) left running, with {len(members) - 1} child(ren)"
            time.sleep(0.1)
    return f"could not stop process group {min(groups)}"


STARTING_S = 10.0  # an entry without a pid younger than this, whose tool is not seen, waits for the next repair


class _Later(Exception):
    """Put the entry back in the ledger, unsaid: the next repair looks again."""


def _carrying(token: str) -> list[int]:
    """The pids whose environment holds ``token`` (``process.token_of``): a started tool and
    the job processes it forked."""
    return [pid for pid in _pids() if token_of(pid) == token]


def _undo_netns(e: dict) -> str:
    name = e["name"]
    gone = subprocess.run(["ip", "netns", "delete", name], capture_output=True, text=True, check=False)
    return (
        f"removed network namespace {name}" if gone.returncode == 0 else f"network namespace {name} was already removed"
    )


def _undo_run(e: dict) -> str:
    from .store import finish_abandoned  # pandas: imported only when a run was left behind

    return finish_abandoned(Path(e["path"]), f"its iolab process (pid {e['owner_pid']}) died before the run ended")


UNDO: dict[str, Callable[[dict], str]] = {
    "loop": _undo_loop,
    "file": _undo_file,
    "knob": _undo_knob,
    "nvme": _undo_nvme,
    "process": _undo_process,
    "run": _undo_run,
    "netns": _undo_netns,
}


RETRIED = ("run", "file")  # data on disk: a run folder to finish, a file to remove; tried again until done


SCAN_EVERY_S = 30.0  # a process scans the data folders for leftovers no entry names at most this often


_scanned: dict[tuple[str, str], float] = {}  # (scratch, runs folder) -> when this process last scanned them


def recover(scan: bool = False) -> list[str]:
    """Undo what dead iolab processes left behind, in ``ledger.ORDER``; one line per thing done.
    The ledger is read every time; the default folders are scanned for leftovers no entry
    names (``fix_leftovers``) once per ``SCAN_EVERY_S`` per process, or whenever ``scan``
    (``iolab cleanup``): a campaign repairs before each run, and over a network file system
    (the NVMe lab's 9p share) a scan of a large data folder is slow (benchmarks/README.md)."""
    done = _unclaim_stale()
    todo = []
    for path, entry in ledger.entries(unreadable=True):
        if _owner_alive(entry):
            continue
        claimed = path.with_name(f"{_claim_prefix()}{path.name}")
        try:
            os.rename(path, claimed)  # whoever renames first undoes it
        except FileNotFoundError:
            continue
        if why := _malformed(entry):
            done.append(_set_aside(claimed, why))
            continue
        todo.append((ledger.ORDER[entry["kind"]], claimed, entry))
    todo.sort(key=lambda t: t[0])
    try:
        while todo:
            _, claimed, entry = todo[0]
            done.extend(_undo_claimed(claimed, entry))
            todo.pop(0)
    finally:  # a Ctrl-C mid-way: what is not done yet goes back for the next repair
        for _, claimed, _entry in todo:
            _unclaim(claimed)
    named = {
        str(e.get("path")) for _, e in ledger.entries() if isinstance(e, dict)
    }  # repaired above, or held by a live process
    return done + (fix_leftovers(named) if _scan_due(scan) else [])


def _undo_claimed(claimed: Path, entry: dict) -> list[str]:
    """Undo one claimed entry; what was said. The entry is removed once undone, set aside
    when malformed, or put back (``_Later``, ``RETRIED``)."""
    try:
        said = [UNDO[entry["kind"]](entry)]
    except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong type
        return [_set_aside(claimed, f"a field is missing or not what iolab writes: {exc}")]
    except _Later:
        _unclaim(claimed)
        return [
            f"{entry.get('name', 'a tool')} that iolab pid {entry['owner_pid']} was starting as it died is not "
            "seen yet: looked for again at the next repair (`iolab cleanup`)"
        ]
    except (OSError, IolabError) as exc:  # IolabError: nvme-cli failed or is gone
        kept = entry["kind"] in RETRIED and not isinstance(exc, (IsADirectoryError, NotADirectoryError))
        said = [_not_undone(entry, exc, kept)]
        if kept:
            _unclaim(claimed)
            return said
    claimed.unlink(missing_ok=True)
    return said


def _owner_alive(entry: Any) -> bool:
    """Whether the iolab process that wrote ``entry`` still runs (a malformed entry's: no)."""
    owner = entry.get("owner_pid") if isinstance(entry, dict) else None
    return _is_pid(owner) and ledger.alive(owner, entry.get("owner_start"))


def _is_pid(value: Any) -> bool:
    """A pid iolab could have recorded: an int above 1 (0 and negative pids name process groups
    to kill(2), 1 is init), not a bool."""
    return type(value) is int and value > 1


def _malformed(entry: Any) -> str | None:
    """Why iolab cannot act on a ledger entry, or None: what the undo of its kind would read
    wrongly or dangerously (a pid of 0 would signal the repairing process's own group)."""
    if not isinstance(entry, dict):
        return "not a JSON object" if entry is not None else "not JSON, or it cannot be read"
    kind = entry.get("kind")
    if not isinstance(kind, str) or kind not in UNDO or not _is_pid(entry.get("owner_pid")):
        return "it names no owner or no kind iolab knows"
    started = "pid" not in entry and isinstance(entry.get("token"), str)  # its pid never recorded
    if kind == "process" and not (started or _is_pid(entry.get("pid"))):
        return f"pid {entry.get('pid')!r} is not a process iolab started"
    if kind == "run" and not Path(str(entry.get("path"))).name.startswith(".tmp-"):
        return f"run {entry.get('path')!r} is not a run folder being written (.tmp-<id>)"
    return None


CLAIM = ".claimed-"


def _claim_prefix() -> str:
    """``.claimed-<pid>-<start>--``: who claimed an entry, so a claim its claimer did not live to
    finish is taken back (``_unclaim_stale``)."""
    return f"{CLAIM}{os.getpid()}-{ledger.start_time(os.getpid())}--"


def _unclaimed_name(claimed: Path) -> str:
    """The entry's own file name, without its claim (``_claim_prefix``, or an older iolab's
    bare ``.claimed-``)."""
    name = claimed.name.removeprefix(CLAIM)
    return name.split("--", 1)[1] if "--" in name else name


def _unclaim(claimed: Path) -> None:
    os.replace(claimed, claimed.with_name(_unclaimed_name(claimed)))


STALE_CLAIM_S = 60.0  # a claim that names no claimer (an older iolab's) is taken back after this long


def _unclaim_stale() -> list[str]:
    """Put back the entries whose claimer died mid-repair (a Ctrl-C, a kill): the next repair
    undoes them; one line said for each."""
    folder = paths.state_dir() / "ledger"
    said = []
    for claimed in sorted(folder.glob(f"{CLAIM}*.json")) if folder.is_dir() else []:
        who, sep, _ = claimed.name.removeprefix(CLAIM).partition("--")
        pid, _, start = who.partition("-")
        try:
            if sep and pid.isdigit() and start.isdigit():
                if ledger.alive(int(pid), int(start)):
                    continue
            elif time.time() - claimed.stat().st_ctime < STALE_CLAIM_S:
                continue
            _unclaim(claimed)
        except FileNotFoundError:  # undone or taken back by another process meanwhile
            continue
        said.append(f"took back a ledger entry a repair did not finish (its process is gone): {claimed.name}")
    return said


def _set_aside(claimed: Path, why: str) -> str:
    """A ledger entry iolab cannot act on (edited by hand, or written by another version): kept,
    hidden, as ``.bad-<name>``, and said once."""
    bad = claimed.with_name(".bad-" + _unclaimed_name(claimed))
    os.replace(claimed, bad)
    return f"left alone a ledger entry iolab cannot read ({why}): kept as {bad}; look at it, then remove it"


def _scan_due(always: bool) -> bool:
    """Whether this process scans the default folders now (``recover``)."""
    try:
        key = (str(paths.scratch_dir()), str(paths.runs_dir()))
    except InputError:  # a bad $IOLAB_DATA: fix_leftovers says nothing either
        return True
    now = time.monotonic()
    if not always and now - _scanned.get(key, -SCAN_EVERY_S) < SCAN_EVERY_S:
        return False
    _scanned[key] = now
    return True


def _not_undone(entry: dict, exc: Exception, kept: bool) -> str:
    """Why a ledger entry could not be undone, in words (never the raw entry); ``kept``: it
    stays in the ledger."""
    if isinstance(exc, OSError):
        why = f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}: free space or fix that"
    else:
        why = str(exc)  # an IolabError says what to do
    return (
        f"could not put back the {entry.get('kind', 'thing')} {ledger.describe(entry)} left by iolab pid "
        f"{entry.get('owner_pid', '?')}: {why}; "
        + ("it stays in the ledger for the next `iolab cleanup`" if kept else "left as it is")
    )


def recover_and_report() -> list[str]:
    """``recover()``, each thing done said on stderr (a notebook shows it under the cell)."""
    done = recover()
    for line in done:
        print(f"iolab cleanup: {line}", file=sys.stderr)
    return done


def cleanup_report() -> list[str]:
    """What ``iolab cleanup`` says: each thing repaired (or that nothing needed it), then what
    live iolab processes hold."""
    done = recover(scan=True) or ["nothing to clean up: no iolab process died holding anything"]
    return done + [
        f"held by live iolab pid {e['owner_pid']}: {e.get('kind', 'thing')} {ledger.describe(e)}"
        for _, e in ledger.entries()
        if _owner_alive(e)
    ]


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
