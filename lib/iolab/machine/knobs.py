"""Every setting iolab changes, as check / read / apply / restore (pyperf's model:
``pyperf system show | tune | reset``).

    from iolab.machine import knobs
    knobs.status(target)                        # each knob: here or why not, and its value
    with knobs.applied(target, {"scheduler": "none", "read_ahead_kb": 0}):
        ...                                     # runs measured with those values
    # every value is back: after success, an exception, Ctrl-C, SIGTERM or SIGHUP

``applied`` checks every knob and value first and changes nothing when one is missing
here (``KnobUnavailable``, with each reason). Each write is recorded in the ledger before
it is made (``iolab.machine.ledger``), so what a SIGKILLed process changed is put back by the next
iolab command or ``iolab cleanup`` (``iolab.runs.repair``). Nothing else in iolab writes to /sys.

    knob             where                                                    values
    scheduler        /sys/block/<dev>/queue/scheduler                         what the queue offers
    read_ahead_kb    /sys/block/<dev>/queue/read_ahead_kb                     KiB, >= 0
    nomerges         /sys/block/<dev>/queue/nomerges                          0, 1, 2
    rq_affinity      /sys/block/<dev>/queue/rq_affinity                       0, 1, 2
    nr_requests      /sys/block/<dev>/queue/nr_requests                       requests, >= 1
    max_sectors_kb   /sys/block/<dev>/queue/max_sectors_kb                    KiB, >= 1
    io_poll          /sys/block/<dev>/queue/io_poll                           shown; fixed by the driver
    governor         /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor    scaling_available_governors
    turbo            /sys/devices/system/cpu/intel_pstate/no_turbo or cpufreq/boost   on, off
    smt              /sys/devices/system/cpu/smt/control                      on, off
    nvme_coalescing  NVMe feature 08h of the target's controller (nvme-cli)   0xTTRR: TT x 100 µs, RR+1 completions

Sources: Documentation/ABI/stable/sysfs-block; Documentation/admin-guide/pm/cpufreq.rst
and intel_pstate.rst; Documentation/ABI/testing/sysfs-devices-system-cpu; NVM Express Base
Specification, "Interrupt Coalescing (Feature Identifier 08h)".

``drop_caches()`` is an action, not a knob: there is nothing to put back.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import signals
from ..core.errors import InputError, IolabError, KnobError, KnobUnavailable, NvmeError, ToolMissing
from ..core.system import SYS_CPU, parse_cpu_list, read_text, selected, turbo_file
from . import ledger

if TYPE_CHECKING:
    import pandas as pd

    from .target import Target


@dataclass
class Change:
    """One write iolab made and will undo: its ledger entry knows how (``Entry.put_back``)."""

    what: str
    old: str
    entry: ledger.Entry

    def restore(self) -> None:
        self.entry.put_back()


def _root_reason() -> str | None:
    return None if os.geteuid() == 0 else "needs root (run iolab as root)"


class Knob:
    """One setting: ``check`` (None, or why it cannot be set here), ``read`` (its value
    now), ``apply`` (set it, recording each change) and ``restore`` (put those back)."""

    def __init__(self, name: str, about: str):
        self.name, self.about = name, about

    def check(self, target: Target | None, value: Any = None) -> str | None:
        raise NotImplementedError

    def read(self, target: Target | None) -> str | None:
        raise NotImplementedError

    def apply(self, target: Target | None, value: Any, changes: list[Change] | None = None) -> list[Change]:
        raise NotImplementedError

    def restore(self, changes: list[Change]) -> None:
        restore(changes)  # the module's restore(): any knob's changes are undone alike


# ---------------------------------------------------------------- knobs kept in files
class FileKnob(Knob):
    """A knob kept in one or more /sys files (one per CPU for per-CPU knobs). Subclasses
    say where (``files``), why it is absent (``missing``) and what values mean."""

    def files(self, target: Target | None) -> list[Path]:
        raise NotImplementedError

    def missing(self, target: Target | None) -> str:
        raise NotImplementedError

    def encode(self, value: Any) -> str:
        """The text written for ``value``; InputError when it is not a value of this knob."""
        return str(value).strip()

    def decode(self, text: str) -> str:
        """The value a file's text shows (the selected entry of a selector file)."""
        return selected(text)

    def unavailable(self, target: Target | None) -> str | None:
        """Why the knob cannot change here although its files exist (SMT 'notsupported')."""
        return None

    def refused(self, target: Target | None, wanted: str) -> str | None:
        """Why ``wanted`` (encoded) cannot be set here, beyond the files being absent."""
        return None

    def check(self, target: Target | None, value: Any = None) -> str | None:
        """None when this knob (and ``value``, if given) can be set for ``target`` here;
        otherwise why not, in words that say what to do."""
        files = self.files(target)
        if not files or not all(f.exists() for f in files):
            return self.missing(target)
        why = self.unavailable(target)
        if why or value is None:
            return why
        try:
            wanted = self.encode(value)
        except InputError as exc:
            return str(exc)
        if all(self._now(f) == wanted for f in files):
            return None  # nothing to change
        return self.refused(target, wanted) or _root_reason()

    def read(self, target: Target | None) -> str | None:
        """The value now (per-CPU values that differ are listed), None where absent."""
        values = [self.decode(t) for t in map(read_text, self.files(target)) if t is not None]
        if not values:
            return None
        return values[0] if len(set(values)) == 1 else ", ".join(values)

    def _now(self, path: Path) -> str | None:
        text = read_text(path)
        return None if text is None else selected(text)

    def apply(self, target: Target | None, value: Any, changes: list[Change] | None = None) -> list[Change]:
        """Set the knob to ``value``; every file changed is appended to ``changes`` as it is
        written (so a caller that restores ``changes`` after an error misses nothing).
        Raises KnobError when the kernel refuses the value or keeps another one."""
        changes = [] if changes is None else changes
        wanted = self.encode(value)
        for path in self.files(target):
            if self._now(path) != wanted:
                with signals.deferred():  # the write and its record are not split by Ctrl-C
                    changes.append(write_file(path, wanted))
        kept = {self._now(p) for p in self.files(target)}
        if kept != {wanted}:
            raise KnobError(
                f"{self.name}: the kernel kept {', '.join(map(str, kept))} when iolab wrote "
                f"{wanted!r} (read_ahead_kb rounds to pages, for one): choose a value it keeps"
            )
        return changes


class QueueKnob(FileKnob):
    """A block-queue setting of the target: /sys/block/<dev>/queue/<name>
    (Documentation/ABI/stable/sysfs-block)."""

    def __init__(self, name: str, about: str, allowed: tuple[str, ...] = (), minimum: int | None = None):
        super().__init__(name, about)
        self.allowed, self.minimum = allowed, minimum

    def files(self, target: Target | None) -> list[Path]:
        dev = getattr(target, "device", None)
        return [Path(f"/sys/block/{dev}/queue/{self.name}")] if dev else []

    def missing(self, target: Target | None) -> str:
        if target is None or not target.device:
            return f"{_describe(target)} has no block queue: use a block device, 'loop' or 'loop:SIZE' as the target"
        return f"no /sys/block/{target.device}/queue/{self.name} (this kernel or driver lacks it)"

    def encode(self, value: Any) -> str:
        text = str(value).strip()
        if self.minimum is not None and not (text.isdigit() and int(text) >= self.minimum):
            raise InputError(f"{self.name} takes a whole number >= {self.minimum}, not {value!r}")
        if self.allowed and text not in self.allowed:
            raise InputError(f"{self.name} takes one of {', '.join(self.allowed)}, not {value!r}")
        return text


class SchedulerKnob(QueueKnob):
    def choices(self, target: Target | None) -> list[str]:
        """The I/O schedulers the target's queue offers (``none``, ``mq-deadline``, ...)."""
        text = read_text(self.files(target)[0]) if self.files(target) else None
        return text.replace("[", "").replace("]", "").split() if text else []

    def refused(self, target: Target | None, wanted: str) -> str | None:
        offered = self.choices(target)
        if wanted not in offered:
            return (
                f"scheduler {wanted!r} is not offered by {target.device}: choose one of "
                f"{', '.join(offered)} (or load its module: modprobe {wanted.replace('-', '_')})"
            )
        return None


class IoPollKnob(QueueKnob):
    """Polled completions are on when the driver made poll queues; the kernel ignores
    writes to io_poll (block/blk-sysfs.c queue_poll_store: "writes to the poll attribute
    are ignored"), so this knob is shown and checked, never changed."""

    def missing(self, target: Target | None) -> str:
        return f"{getattr(target, 'kind', 'this')} target has no block queue (polling needs a block device)"

    def refused(self, target: Target | None, wanted: str) -> str | None:
        now = self._now(self.files(target)[0])
        if wanted == "1":
            poll_queues = read_text("/sys/module/nvme/parameters/poll_queues")
            return f"no poll queues: /sys/block/{target.device}/queue/io_poll is {now}" + (
                "; nvme poll_queues=0 (boot with nvme.poll_queues=N)" if poll_queues == "0" else ""
            )
        return (
            f"polling cannot be turned off at run time (io_poll is {now}; the kernel ignores writes): "
            "leave fio's hipri off instead"
        )


def _describe(target: Target | None) -> str:
    return target.describe() if target is not None else "the machine (no target given)"


class CpuKnob(FileKnob):
    """A machine-wide CPU setting under /sys/devices/system/cpu (the target is not used)."""

    def __init__(self, name: str, about: str, path: str | None, missing: str):
        super().__init__(name, about)
        self.path, self._missing = path, missing

    def files(self, target: Target | None) -> list[Path]:
        return [SYS_CPU / self.path] if self.path else []

    def missing(self, target: Target | None) -> str:
        return self._missing


class GovernorKnob(CpuKnob):
    """cpufreq's scaling_governor of every online CPU (admin-guide/pm/cpufreq.rst)."""

    def files(self, target: Target | None) -> list[Path]:
        online = parse_cpu_list(read_text(SYS_CPU / "online") or "0")
        return [SYS_CPU / f"cpu{c}/cpufreq/scaling_governor" for c in online]

    def refused(self, target: Target | None, wanted: str) -> str | None:
        offered = (read_text(SYS_CPU / "cpu0/cpufreq/scaling_available_governors") or "").split()
        return None if wanted in offered else f"governor {wanted!r} is not offered: choose one of {', '.join(offered)}"


class OnOffKnob(CpuKnob):
    """A switch with the values on / off (also True / False, 1 / 0); ``texts`` are what
    its file holds for on and for off."""

    def __init__(
        self,
        name: str,
        about: str,
        path: str | None,
        missing: str,
        texts: tuple[str, str] = ("1", "0"),
        fixed: tuple[str, ...] = (),
    ):
        super().__init__(name, about, path, missing)
        self.texts, self.fixed = texts, fixed

    def encode(self, value: Any) -> str:
        on = {"on": True, "1": True, "true": True, "off": False, "0": False, "false": False}.get(str(value).lower())
        if on is None:
            raise InputError(f"{self.name} takes on or off (True/False, 1/0), not {value!r}")
        return self.texts[0] if on else self.texts[1]

    def decode(self, text: str) -> str:
        return {self.texts[0]: "on", self.texts[1]: "off"}.get(text, text)

    def unavailable(self, target: Target | None) -> str | None:
        now = self._now(self.files(target)[0])
        return f"{self.name} is {now!r} here: the kernel does not let it change" if now in self.fixed else None


def _turbo() -> OnOffKnob:
    found = turbo_file()
    path, inverted = (str(found[0].relative_to(SYS_CPU)), found[1]) if found else (None, False)
    return OnOffKnob(
        "turbo",
        "turbo / boost clocks above the base frequency",
        path,
        "no intel_pstate/no_turbo or cpufreq/boost file: turbo is not under the "
        "kernel's control here (typical in a VM)",
        ("0", "1") if inverted else ("1", "0"),
    )


# ---------------------------------------------------------------- NVMe features (nvme-cli)
def nvme_cli(args: list[str]) -> str:
    """Run ``nvme ARGS`` (argv list); its stdout. NvmeError with nvme-cli's own message when
    it fails; ToolMissing when it is not installed."""
    nvme = shutil.which("nvme")
    if not nvme:
        raise ToolMissing("nvme")
    argv = [nvme, *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except subprocess.TimeoutExpired as exc:
        raise NvmeError(argv, -1, "no answer within 30 s") from exc
    if done.returncode != 0:
        raise NvmeError(argv, done.returncode, done.stderr or done.stdout)
    return done.stdout


def nvme_get_feature(controller: str, feature: int) -> int:
    """The current value of an NVMe feature (``nvme get-feature -f ID``)."""
    # long options: nvme-cli 1.x and 2.x spell them alike (2.3 has no -V, the short form 1.x documented)
    out = nvme_cli(["get-feature", controller, f"--feature-id={hex(feature)}"])
    # nvme-cli 1.x prints "Current value:0x00000320", 2.3 (Debian 12) "Current value:00000320": hex either way
    found = re.search(r"[Cc]urrent value:\s*(?:0x)?([0-9a-fA-F]+)\b", out) or re.search(
        r"value:\s*(?:0x)?([0-9a-fA-F]+)\b", out
    )
    if not found:
        raise KnobError(f"nvme get-feature {hex(feature)} on {controller} printed no value: {out.strip()[:200]!r}")
    return int(found.group(1), 16)


def nvme_set_feature(controller: str, feature: int, value: int) -> None:
    nvme_cli(["set-feature", controller, f"--feature-id={hex(feature)}", f"--value={hex(value)}"])


class NvmeFeatureKnob(Knob):
    """An NVMe feature of the target's controller, set with nvme-cli: interrupt coalescing
    (feature 08h: bits 15:8 aggregation time in 100 µs units, bits 7:0 aggregation
    threshold, 0's based; seed 000 used 0x320 = 300 µs or 33 completions)."""

    def __init__(self, name: str, about: str, feature: int):
        super().__init__(name, about)
        self.feature = feature

    def check(self, target: Target | None, value: Any = None) -> str | None:
        reasons = [r for r in (not_nvme(target), no_nvme_cli()) if r]
        if not reasons and value is not None and not _is_uint(value):
            reasons.append(f"{self.name} takes an integer such as 0x320, not {value!r}")
        return "; ".join(reasons) or (_root_reason() if value is not None else None)

    def read(self, target: Target | None) -> str | None:
        return None if self.check(target) else hex(nvme_get_feature(controller(target), self.feature))

    def apply(self, target: Target | None, value: Any, changes: list[Change] | None = None) -> list[Change]:
        changes = [] if changes is None else changes
        ctrl, new = controller(target), int(value)
        old = nvme_get_feature(ctrl, self.feature)
        with signals.deferred():
            entry = ledger.record(
                "nvme",
                controller=ctrl,
                feature=self.feature,
                old=old,
                new=new,
                undo=lambda: nvme_set_feature(ctrl, self.feature, old),
            )
            try:
                nvme_set_feature(ctrl, self.feature, new)
            except BaseException:
                entry.release()
                raise
            changes.append(Change(f"{ctrl} feature {self.feature:#x}: {old:#x} -> {new:#x}", hex(old), entry))
        return changes


def _is_uint(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def not_nvme(target: Target | None) -> str | None:
    dev = getattr(target, "device", None) or ""
    return (
        None
        if dev.startswith("nvme")
        else f"not NVMe: {dev or getattr(target, 'kind', 'no target')} {getattr(target, 'path', '')}".rstrip()
    )


def no_nvme_cli() -> str | None:
    return None if shutil.which("nvme") else "nvme-cli not installed (apt-get install nvme-cli)"


def controller(target: Target) -> str:
    """The NVMe controller of a namespace device: nvme0n1 -> /dev/nvme0."""
    return "/dev/" + target.device.rsplit("n", 1)[0]


# ---------------------------------------------------------------- the registry
KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        SchedulerKnob("scheduler", "I/O scheduler of the target's queue"),
        QueueKnob("read_ahead_kb", "readahead of buffered sequential reads (KiB)", minimum=0),
        QueueKnob("nomerges", "request merging: 0 all, 1 simple only, 2 none", allowed=("0", "1", "2")),
        QueueKnob("rq_affinity", "completion CPU: 0 any, 1 same group, 2 the submitting CPU", allowed=("0", "1", "2")),
        QueueKnob("nr_requests", "requests the queue holds per hardware queue", minimum=1),
        QueueKnob("max_sectors_kb", "largest request the block layer issues (KiB)", minimum=1),
        IoPollKnob("io_poll", "polled completions (poll queues exist); set by the driver at boot", allowed=("0", "1")),
        GovernorKnob(
            "governor",
            "cpufreq scaling governor of every online CPU",
            None,
            "no /sys/devices/system/cpu/cpu*/cpufreq: no cpufreq driver, the frequency is not "
            "under the kernel's control here (typical in a VM)",
        ),
        _turbo(),
        OnOffKnob(
            "smt",
            "simultaneous multithreading (sibling CPUs online)",
            "smt/control",
            "no /sys/devices/system/cpu/smt/control (kernel without CONFIG_HOTPLUG_SMT)",
            ("on", "off"),
            fixed=("forceoff", "notsupported", "notimplemented"),
        ),
        NvmeFeatureKnob("nvme_coalescing", "NVMe interrupt coalescing (feature 08h)", 0x08),
    )
}


def get(name: str) -> Knob:
    """The knob called ``name``; InputError listing the knobs there are."""
    if name not in KNOBS:
        raise InputError(f"no knob {name!r}: iolab knows {', '.join(KNOBS)}")
    return KNOBS[name]


def checked(target: Target | None, settings: Mapping[str, Any]) -> list[tuple[Knob, Any]]:
    """(knob, value) for each setting, after checking them all: KnobUnavailable naming
    every knob that cannot take its value here, and why."""
    plan = [(get(name), value) for name, value in settings.items()]
    reasons = [f"{k.name}={v!r}: {why}" for k, v in plan if (why := k.check(target, v))]
    if reasons:
        raise KnobUnavailable(f"cannot set on {_describe(target)}: " + "; ".join(reasons) + ". Nothing was changed.")
    return plan


def restore(changes: list[Change]) -> None:
    """Put ``changes`` back, newest first (Ctrl-C and SIGTERM wait until done). Each one
    restored leaves the list and the ledger; one that cannot be is kept in the ledger for
    ``iolab cleanup`` and reported as a KnobError."""
    failed = []
    with signals.deferred():
        while changes:
            change = changes.pop()
            try:
                change.restore()
            except (OSError, IolabError) as exc:
                failed.append(f"{change.what} ({exc})")
    if failed:
        raise KnobError("could not put back " + "; ".join(failed) + ": run `iolab cleanup` as root")


@contextlib.contextmanager
def applied(target: Target | None, settings: Mapping[str, Any]) -> Iterator[list[Change]]:
    """Every knob of ``settings`` set for the block and put back after it: on success, an
    exception, Ctrl-C, SIGTERM and SIGHUP (``iolab.core.signals``); SIGKILL is repaired from the
    ledger. All are checked before the first change (KnobUnavailable). Yields the changes."""
    plan = checked(target, settings)
    changes: list[Change] = []
    with signals.held():
        try:
            for knob, value in plan:
                knob.apply(target, value, changes)
            yield changes
        finally:
            restore(changes)


def write_file(path: Path, value: str) -> Change:
    """Write ``value`` to a /sys or /proc file, recorded in the ledger first (a Python write,
    not ``echo >``). KnobError when the kernel refuses it."""
    old = selected(read_text(path) or "")
    kept = [value]  # what the kernel kept of it (read_ahead_kb rounds 5 to 4): what a hand change is told from
    entry = ledger.record("knob", path=str(path), old=old, new=value, undo=lambda: _put_back(path, old, kept[0]))
    try:
        path.write_text(value)
    except OSError as exc:
        entry.release()
        raise KnobError(f"the kernel refused {value!r} for {path}: {exc.strerror or exc}") from exc
    now = selected(read_text(path) or value)
    if now != selected(value):
        kept[0] = now
        entry.update(new=now)
    return Change(f"{path}: {old} -> {value}", old, entry)


def _put_back(path: Path, old: str, new: str) -> None:
    """``old`` written back to ``path`` unless someone changed it since iolab wrote ``new``
    (a value set by hand after ``iolab preflight --tune`` is theirs: left, as ``iolab cleanup``
    leaves it)."""
    now = read_text(path)
    if now is not None and selected(now) != selected(new):
        return
    path.write_text(old)


def status(target: Target | None = None) -> pd.DataFrame:
    """Each knob: its value here, and whether it can be changed or why not."""
    import pandas as pd  # only here: the knobs themselves (and ``import iolab.machine.knobs``) need no pandas

    rows = [
        {"knob": k.name, "value": k.read(target), "why_not": k.check(target) or "", "about": k.about}
        for k in KNOBS.values()
    ]
    return pd.DataFrame(rows)


def drop_caches() -> None:
    """Write back dirty pages, then drop the page cache, dentries and inodes
    (``sync; echo 3 > /proc/sys/vm/drop_caches``, Documentation/admin-guide/sysctl/vm.rst,
    done with Python calls, not a shell). Nothing to restore."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
    except PermissionError as exc:
        raise KnobUnavailable("dropping the page cache needs root (run iolab as root)") from exc
