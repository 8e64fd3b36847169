"""``iolab preflight --tune`` and ``iolab reset``: what the preflight found and iolab can set
(governor, turbo, scheduler, readahead, IRQ affinity away from the CPUs under test) set
through the knobs and their ledger, held while a process lives, and put back.

    report = preflight(devices=["nvme0n1"], cpus=[2])
    with tuned(report) as said:          # each change recorded in the ledger before it is made
        ...                               # measure (another terminal: iolab run --cpus 2 ...)
    # every value is back: on exit, Ctrl-C, SIGTERM (``iolab reset``); after SIGKILL the next
    # iolab command or ``iolab cleanup`` puts them back from the ledger (iolab.runs.repair)

The holding process notes itself and its changes in ``paths.state_dir()/preflight-tune.json``
so that ``reset()`` can find it, stop it with SIGTERM and read every value back. What needs a
reboot or the firmware (nvme.poll_queues, the link speed, the slot) is advice in the
report, never a change.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from ..core import paths, signals
from ..core.atomic import write_atomic
from ..core.errors import InputError, KnobError
from ..core.system import read_text, selected
from . import knobs, ledger
from .preflight import Report
from .preflight_check import Check
from .target import Target

HOLD_FILE = "preflight-tune.json"


def tunable(report: Report) -> list[Check]:
    """The checks not as recommended that iolab can set (``Check.tune``)."""
    return [c for c in report.checks if c.tune and c.verdict in ("warn", "fail")]


def _block(device: str | None) -> Target | None:
    return Target("block", Path(f"/dev/{device}"), device=device) if device else None


@contextlib.contextmanager
def tuned(report: Report) -> Iterator[list[str]]:
    """Set every tunable check to its recommended value for the block; yields one line per
    setting (set, or why not), and puts every change back after the block (also after an
    exception, Ctrl-C, SIGTERM, SIGHUP). A knob this machine lacks is said, not raised."""
    changes: list[knobs.Change] = []
    said: list[str] = []
    with signals.held():
        try:
            for check in tunable(report):
                knob, value, where = check.tune
                if knob == "irq_affinity":
                    said += _move_irqs(where.split(","), value, changes)
                    continue
                target = _block(where)
                why = knobs.get(knob).check(target, value)
                label = f"{knob}{f' of {where}' if where else ''}"
                if why:
                    said.append(f"{label}: not set: {why}")
                    continue
                old = knobs.get(knob).read(target)
                knobs.get(knob).apply(target, value, changes)
                said.append(f"{label}: {old} -> {value}")
            _note_holder(report, changes)
            yield said
        finally:
            try:
                knobs.restore(changes)
            finally:
                _hold_file().unlink(missing_ok=True)


def _move_irqs(irqs: list[str], cpus: str, changes: list[knobs.Change]) -> list[str]:
    """Each IRQ's smp_affinity_list set to ``cpus`` (Documentation/core-api/irq/irq-affinity.rst);
    the kernel refuses a managed IRQ (an NVMe queue's own): said, not raised."""
    said = []
    for n in irqs:
        path = Path(f"/proc/irq/{n}/smp_affinity_list")
        old = read_text(path)
        if old == cpus:
            continue
        try:
            with signals.deferred():
                changes.append(knobs.write_file(path, cpus))
        except KnobError as exc:
            said.append(f"IRQ {n}: stays on CPU {old}: {exc} (a kernel-managed IRQ)")
        else:
            said.append(f"IRQ {n}: CPU {old} -> {cpus}")
    return said


def _hold_file() -> Path:
    d = paths.state_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d / HOLD_FILE


def _note_holder(report: Report, changes: list[knobs.Change]) -> None:
    pid = os.getpid()
    files = [{"path": c.entry.data.get("path"), "old": c.old, "new": c.entry.data.get("new")} for c in changes]
    note = {"pid": pid, "start": ledger.start_time(pid), "cpus": report.cpus, "devices": report.devices}
    write_atomic(_hold_file(), json.dumps({**note, "changes": files}, indent=1))


def holder() -> dict | None:
    """The live process holding a tune (its note), or None (none, or it died: the ledger's)."""
    try:
        note = json.loads(_hold_file().read_text())
    except (OSError, ValueError):
        return None
    return note if _running(note) else None


def _running(note: dict) -> bool:
    """The holder still runs: alive and not a zombie (exited, its parent has not waited yet)."""
    if not ledger.alive(note["pid"], note.get("start")):
        return False
    stat = read_text(f"/proc/{note['pid']}/stat") or ""
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def refuse_second() -> None:
    """InputError when another process holds a tune already."""
    note = holder()
    if note:
        raise InputError(f"process {note['pid']} holds a tune already: run `iolab reset` first")


def reset(timeout_s: float = 20.0) -> list[str]:
    """Stop the process holding a tune (SIGTERM: it puts its changes back), then read every
    value it had changed back: one line per file, 'back' or what differs. What a killed
    holder left, the ledger repair put back before (``iolab.runs.repair``, run before every
    command)."""
    path = _hold_file()
    try:
        note = json.loads(path.read_text())
    except (OSError, ValueError):
        return ["nothing tuned by iolab preflight --tune is held"]
    lines = []
    if _running(note):
        os.kill(note["pid"], signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _running(note) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _running(note):
            raise KnobError(f"process {note['pid']} holding the tune did not stop within {timeout_s:g} s")
        lines.append(f"stopped process {note['pid']} that held the tune")
    path.unlink(missing_ok=True)
    for change in note.get("changes", []):
        now = selected(read_text(change["path"]) or "")
        new = selected(str(change.get("new") or ""))
        if now == change["old"]:
            state = "back"
        elif new and now != new:  # set by hand after the tune: the user's, left as it is
            state = f"left at {now}: changed since iolab set it to {new} (it was {change['old']} before)"
        else:
            state = f"NOT back: {now} (was {change['old']}; run iolab cleanup)"
        lines.append(f"{change['path']}: {state}")
    return lines


def hold(report: Report, announce) -> int:
    """``iolab preflight --tune``: tune, say what was set, hold until Ctrl-C, SIGTERM or
    ``iolab reset``; every value put back then. 0 when it ended so."""
    refuse_second()
    elsewhere = set(os.sched_getaffinity(0)) - set(report.cpus)
    if elsewhere:  # the holder's wake-ups stay off the CPUs it tuned for
        os.sched_setaffinity(0, elsewhere)
    try:
        with tuned(report) as said:
            for line in said or ["nothing to set: every check iolab can set is as recommended"]:
                announce(f"tuned: {line}")
            announce(f"held by process {os.getpid()} until Ctrl-C or `iolab reset`; measure from another terminal")
            while True:
                time.sleep(0.5)  # a signal landing just before the sleep's system call waits this long at most
    except KeyboardInterrupt:  # Ctrl-C, and Terminated (SIGTERM, SIGHUP) through signals.raise_always
        announce("put back every value --tune had set")
        return 0
