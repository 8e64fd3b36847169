"""Is this machine set up for the measurement? Every set-up lesson of the seeds as a check
with a verdict, the value seen, what it costs when wrong (the seed that measured it) and
what to do — pyperf's ``system show`` for storage.

    report = preflight(devices=["nvme0n1"], cpus=[2])      # reads /sys and /proc
    print(text(report)); report.exit_code                  # 0 ready, 3 not as recommended
    preflight(root=Path("tests/tree"), devices=["nvme0n1"], cpus=[0], interval_s=0)  # a recorded tree

Verdicts: ``ok``, ``warn`` (may distort the numbers), ``fail`` (will, or a study step cannot
run), ``unknown`` (cannot be read here; ``seen`` says why). Sections: ``cpu`` (here),
``device DEV`` (``iolab.machine.preflight_pci``), ``topology`` (``iolab.machine.topology``), ``tools`` (the live machine's
fio and perf, whatever ``root`` is). Every file is read under ``root`` (``/`` by default), so a
test points it at a tree written from the kernel's ABI documentation.

The seeds (``shared/seeds/000_*.txt``: one E-core and a ScaleFlux CSD5310; ``001_*.txt``: ten
Samsung SSDs on a Threadripper; ``003_*.txt``: AiSIO's search over governor, turbo, SMT and
stress) are cited in ``SOURCES`` (``iolab.machine.preflight_check``, with ``Check`` and
``Tree``); checks no seed measured cite the kernel's documentation.
What iolab can set is changed and put back by ``iolab.machine.preflight_tune``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..core.system import parse_cpu_list, read_text, tool_version
from ..core.validate import _fmt_cpus as _ranges  # [0, 1, 2, 5] -> '0-2,5'
from .preflight_check import VERDICTS, Check, Tree
from .preflight_pci import device_checks, disk_name
from .topology import topology_checks

if TYPE_CHECKING:
    import pandas as pd

BUSY_WARN_PCT = 5.0  # other work on a CPU under test (or its sibling) above this share: warn
BUSY_FAIL_PCT = 50.0
STEAL_WARN_PCT = 1.0  # the hypervisor took this share of a CPU under test
DEEP_IDLE_US = 20  # an enabled idle state whose exit latency exceeds this delays a wake-up


@dataclass
class Report:
    """Every check of one preflight, and the CPUs and devices it looked at."""

    cpus: list[int]
    cpus_given: bool
    devices: list[str]
    checks: list[Check] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """No warning and no failure (unknowns are said, not held against the machine)."""
        return not any(c.verdict in ("warn", "fail") for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.ready else 3  # a verdict, as compare's and check's: 2 is argparse's usage error

    def as_dict(self) -> dict[str, Any]:
        return {
            "cpus": self.cpus,
            "cpus_given": self.cpus_given,
            "devices": self.devices,
            "ready": self.ready,
            "counts": {v: sum(c.verdict == v for c in self.checks) for v in VERDICTS},
            "checks": [asdict(c) for c in self.checks],
        }


# ---------------------------------------------------------------- CPU
def cpu_checks(tree: Tree, cpus: Sequence[int], given: bool, interval_s: float) -> list[Check]:
    out = [governor(tree, cpus), turbo(tree), smt(tree), idle(tree, cpus), mitigations(tree)]
    return out + load_checks(tree, cpus, given, interval_s)


def governor(tree: Tree, cpus: Sequence[int]) -> Check:
    seen = {c: tree.cpu(f"cpu{c}/cpufreq/scaling_governor") for c in cpus}
    if all(v is None for v in seen.values()):
        why = "no cpufreq driver (no cpu*/cpufreq): the frequency is not under this kernel's control (a VM: the host's)"
        return Check("cpu", "governor", "unknown", why)
    values = sorted({v for v in seen.values() if v})
    driver = next(filter(None, (tree.cpu(f"cpu{c}/cpufreq/scaling_driver") for c in cpus)), None)
    shown = "/".join(values) + (f" ({driver})" if driver else "")
    tune = ("governor", "performance", None)
    if values == ["performance"]:
        return Check("cpu", "governor", "ok", shown)
    # powersave is the lowest clock under cpufreq's generic governors; intel_pstate's and
    # amd-pstate's powersave still follow the load (admin-guide/pm/intel_pstate.rst)
    pinned_low = "powersave" in values and not (driver or "").startswith(("intel_pstate", "amd-pstate"))
    verdict = "fail" if pinned_low else "warn"
    return Check("cpu", "governor", verdict, shown, do="iolab preflight --tune (performance)", tune=tune)


def turbo(tree: Tree) -> Check:
    for rel, inverted in (("intel_pstate/no_turbo", True), ("cpufreq/boost", False)):
        text = tree.cpu(rel)
        if text is not None:
            on = (text == "0") if inverted else (text == "1")
            shown = f"{'on' if on else 'off'} ({rel} = {text})"
            if on:
                return Check("cpu", "turbo", "ok", shown)
            return Check("cpu", "turbo", "warn", shown, do="iolab preflight --tune (on)", tune=("turbo", "on", None))
    return Check("cpu", "turbo", "unknown", "no intel_pstate/no_turbo or cpufreq/boost: not the kernel's to switch")


def smt(tree: Tree) -> Check:
    text = tree.cpu("smt/control")
    if text is None:
        return Check("cpu", "smt", "unknown", "no smt/control (kernel without CONFIG_HOTPLUG_SMT)")
    if text in ("on", "notsupported", "notimplemented"):
        return Check("cpu", "smt", "ok", text + (": no thread siblings here" if text != "on" else ""))
    return Check(
        "cpu", "smt", "warn", text, do="echo on > /sys/devices/system/cpu/smt/control, unless SMT off is studied"
    )


def idle(tree: Tree, cpus: Sequence[int]) -> Check:
    driver = tree.cpu("cpuidle/current_driver")
    if driver is None:
        return Check("cpu", "idle", "unknown", "no cpuidle/current_driver (kernel without CONFIG_CPU_IDLE)")
    deep = set()
    for c in cpus:
        for d in sorted(tree.path(f"sys/devices/system/cpu/cpu{c}/cpuidle").glob("state[0-9]*")):
            latency, off = read_text(d / "latency"), read_text(d / "disable")
            if latency and latency.isdigit() and int(latency) > DEEP_IDLE_US and off != "1":
                deep.add(f"{read_text(d / 'name') or d.name} ({latency} µs)")
    shown = f"driver {driver}"
    if not deep:
        return Check("cpu", "idle", "ok", f"{shown}, no enabled state exits slower than {DEEP_IDLE_US} µs")
    return Check(
        "cpu",
        "idle",
        "warn",
        f"{shown}; deep states enabled: {', '.join(sorted(deep))}",
        do=f"for latency runs: cpupower idle-set -D {DEEP_IDLE_US} (or polled IO); iolab does not change it",
    )


def mitigations(tree: Tree) -> Check:
    folder = tree.path("sys/devices/system/cpu/vulnerabilities")
    if not folder.is_dir():
        return Check("cpu", "mitigations", "unknown", "no cpu/vulnerabilities folder (kernel older than 4.15)")
    states = {p.name: read_text(p) or "" for p in sorted(folder.iterdir())}
    on = sorted(n for n, s in states.items() if s.startswith("Mitigation"))
    vulnerable = sorted(n for n, s in states.items() if s.startswith("Vulnerable"))
    cmdline = next((w for w in (tree.text("proc/cmdline") or "").split() if w.startswith("mitigations=")), "")
    shown = f"{len(on)} mitigated ({', '.join(on) or 'none'}), {len(vulnerable)} vulnerable; {cmdline or 'default'}"
    return Check("cpu", "mitigations", "ok", shown, do="compare with a seed or another machine only under the same")


# ---------------------------------------------------------------- load, steal and siblings
def busy_shares(before: dict, after: dict) -> dict[int, tuple[float, float]] | None:
    """CPU -> (busy %, steal %) between two per-CPU /proc/stat readings
    (``iolab.machine.sampling.read_stat_lines``); None when no tick passed."""
    out = {}
    for cpu in before.keys() & after.keys():
        d = {k: after[cpu][k] - before[cpu][k] for k in before[cpu]}
        total = sum(d.values())
        if total > 0:
            idle_ticks = d["idle"] + d["iowait"]
            out[cpu] = (100.0 * (total - idle_ticks - d["steal"]) / total, 100.0 * d["steal"] / total)
    return out or None


def _stat(tree: Tree) -> dict | None:
    from .sampling import read_stat_lines

    try:
        return read_stat_lines(path=tree.path("proc/stat"))[0]
    except (OSError, ValueError):
        return None


def load_checks(tree: Tree, cpus: Sequence[int], given: bool, interval_s: float) -> list[Check]:
    """Other work and steal on the CPUs under test, and work on their thread siblings, over
    ``interval_s`` of /proc/stat (this process sleeps meanwhile)."""
    before = _stat(tree)
    if before is not None and interval_s > 0:
        time.sleep(interval_s)
    after = _stat(tree)
    shares = busy_shares(before, after) if before and after else None
    if shares is None:
        why = "no /proc/stat" if before is None else "no tick counted between two readings of /proc/stat"
        return [Check("cpu", n, "unknown", why) for n in ("load", "siblings")]
    out = []
    mine = {c: shares[c] for c in cpus if c in shares}
    worst = max(mine, key=lambda c: mine[c][0] + mine[c][1]) if mine else None
    if worst is None:
        out.append(Check("cpu", "load", "unknown", "the CPUs under test are not in /proc/stat (offline?)"))
    else:
        busy, steal = mine[worst]
        shown = f"busiest CPU under test {worst}: {busy:.0f} % busy, {steal:.1f} % steal over {interval_s:g} s"
        verdict = "fail" if busy > BUSY_FAIL_PCT else "warn" if busy > BUSY_WARN_PCT or steal > STEAL_WARN_PCT else "ok"
        do = "" if verdict == "ok" else "measure on idle CPUs (--cpus), stop the other work, or on a host without steal"
        out.append(Check("cpu", "load", verdict, shown, do=do))
    if not given:
        out.append(Check("cpu", "siblings", "unknown", "no --cpus given: which CPUs will measure?"))
        return out
    sibs = sorted({s for c in cpus for s in tree.siblings(c)} - set(cpus))
    if not sibs:
        out.append(Check("cpu", "siblings", "ok", "no thread sibling outside the CPUs under test"))
        return out
    busy = {s: shares[s][0] for s in sibs if s in shares}
    hot = {s: b for s, b in busy.items() if b > BUSY_WARN_PCT}
    shown = ", ".join(f"CPU {s} {b:.0f} % busy" for s, b in sorted(busy.items()))
    verdict = "warn" if hot else "ok"
    do = "keep the siblings idle (or give them to the measurement: --cpus with both)" if hot else ""
    out.append(Check("cpu", "siblings", verdict, f"siblings {shown}", do=do))
    return out


# ---------------------------------------------------------------- tools (the live machine)
def tool_checks(tree: Tree) -> list[Check]:
    """fio and its engines, io_uring allowed, perf and its counters."""
    out = []
    version = tool_version(["fio", "--version"])
    if version is None:
        out.append(Check("tools", "fio", "fail", "fio not installed", do="apt-get install fio"))
    else:
        engines = set(_fio_engines())
        missing = [e for e in ("io_uring", "io_uring_cmd") if e not in engines]
        shown = f"{version}; engines io_uring {'yes' if 'io_uring' in engines else 'no'}, io_uring_cmd " + (
            "yes" if "io_uring_cmd" in engines else "no"
        )
        verdict = "fail" if "io_uring" in missing else "warn" if missing else "ok"
        out.append(Check("tools", "fio", verdict, shown, do="fio 3.31 or later built with io_uring" if missing else ""))
    disabled = tree.text("proc/sys/kernel/io_uring_disabled")
    if disabled not in (None, "0"):
        out.append(
            Check(
                "tools",
                "io_uring",
                "fail" if disabled == "2" else "warn",
                f"kernel.io_uring_disabled = {disabled}",
                costs="Documentation/admin-guide/sysctl/kernel.rst io_uring_disabled: io_uring refused (2) "
                "or only for io_uring_group (1)",
                do="sysctl kernel.io_uring_disabled=0",
            )
        )
    from .perf import probe  # runs perf stat and perf record once each

    caps = probe()
    if caps.perf is None:
        out.append(Check("tools", "perf", "warn", "perf not installed", do=caps.explain()))
        return out
    shown = f"{tool_version(['perf', '--version'])}; perf_event_paranoid {caps.paranoid}; " + (
        "hardware counters" if caps.hardware_counters else "no hardware counters"
    )
    verdict = "ok" if not caps.problems else "warn"
    out.append(Check("tools", "perf", verdict, shown, do="" if verdict == "ok" else caps.explain()))
    return out


def _fio_engines() -> list[str]:
    """The engines ``fio --enghelp`` lists (one a line, tab-indented)."""
    import shutil
    import subprocess

    fio = shutil.which("fio")
    done = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, check=False, timeout=30) if fio else None
    return [line.strip() for line in (done.stdout if done else "").splitlines() if line.startswith("\t")]


# ---------------------------------------------------------------- the whole preflight
def preflight(
    devices: Iterable[str] = (),
    cpus: Sequence[int] | None = None,
    *,
    root: str | os.PathLike = "/",
    interval_s: float = 0.5,
    tools: bool = True,
) -> Report:
    """Every check for ``devices`` (kernel names or /dev paths) measured from ``cpus``
    (all online CPUs when None: the checks that need the CPUs under test say unknown).
    ``interval_s``: seconds of /proc/stat and /proc/interrupts between two readings.
    InputError for a device or CPU this machine does not have."""
    tree = Tree(root)
    devices = [devices] if isinstance(devices, str) else devices
    online = tree.online()
    given = cpus is not None
    chosen = sorted(set(cpus)) if given else online
    absent = sorted(set(chosen) - set(online))
    if absent:
        raise InputError(f"--cpus: CPU {', '.join(map(str, absent))} is not online here (online: {_ranges(online)})")
    names = list(dict.fromkeys(disk_name(tree, d) for d in devices))  # a partition names its disk
    report = Report(chosen, given, names)
    report.checks += cpu_checks(tree, chosen, given, interval_s)
    for name in names:
        report.checks += device_checks(tree, name, chosen, given)
    report.checks += topology_checks(tree, names)
    if tools:
        report.checks += tool_checks(tree)
    return report


def text(report: Report) -> str:
    """pyperf-like: a section per part of the machine, one line per check (verdict, name,
    what was seen; then what it costs and what to do when not ok), a summary last."""
    lines = [f"CPUs under test: {_ranges(report.cpus)}" + ("" if report.cpus_given else " (all online; give --cpus)")]
    section = None
    for c in report.checks:
        if c.section != section:
            section = c.section
            lines += ["", section, "=" * len(section)]
        line = f"{c.verdict:<7} {c.name:<12} {c.seen}"
        if c.verdict in ("warn", "fail"):
            line += f" | costs: {c.costs} | do: {c.do or 'see costs'}"
        lines.append(line)
    counts = report.as_dict()["counts"]
    tunable = sum(1 for c in report.checks if c.tune and c.verdict in ("warn", "fail"))
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    lines += ["", ("ready" if report.ready else "not as recommended") + f": {summary}"]
    if tunable:
        lines.append(f"iolab preflight --tune sets {tunable} of them (iolab reset puts them back); the rest is advice")
    return "\n".join(lines)


def as_json(report: Report) -> str:
    return json.dumps(report.as_dict(), indent=1)


# ---------------------------------------------------------------- at the top of a study
ORDER = {"fail": 0, "warn": 1, "unknown": 2, "ok": 3}


def of_study(devices: Iterable[Any], cpus: Sequence[int] | None, interval_s: float = 0.3, root: str = "/") -> Report:
    """The preflight of a study: ``devices`` (Targets: the disk under each, its block device or
    the disk holding its file; or device names and paths; a passthrough node ngXnY is its
    namespace) measured from ``cpus`` (those online here; None or none online: every CPU).
    What cannot be checked is a check of its own, ``unknown`` with why, never left out."""
    tree = Tree(root)
    if isinstance(cpus, (str, int)):  # "0-3" or 2, as --cpus takes them
        cpus = parse_cpu_list(str(cpus))
    if isinstance(devices, (str, os.PathLike)) or hasattr(devices, "device"):
        devices = [devices]
    names, missing = [], []
    for d in devices:
        name = getattr(d, "device", d)
        if not name:  # a file on a file system without a disk (tmpfs): no device to check
            continue
        try:
            names.append(disk_name(tree, str(name)))
        except InputError:
            missing.append(str(name))
    online = tree.online()
    offline = sorted(set(cpus or []) - set(online))
    chosen = sorted(set(cpus or []) & set(online)) or None
    report = preflight(names, chosen, root=root, interval_s=interval_s)
    if offline:
        said = f"CPU {_ranges(offline)} of the study is not online here: not checked"
        report.checks.insert(0, Check("cpu", "cpus", "unknown", said))
    for m in missing:
        said = f"{m}: no block device of that name here (gone, or not a disk): not checked"
        report.checks.append(Check(f"device {m}", "device", "unknown", said))
    return report


def command(report: Report) -> str:
    """The ``iolab preflight`` command that repeats ``report`` from a shell."""
    cpus = f" --cpus {_ranges(report.cpus)}" if report.cpus_given else ""
    return "iolab preflight" + cpus + "".join(f" --device {d}" for d in report.devices)


def headline(report: Report) -> str:
    """One line for the top of a notebook or a page: ready or not, the checks by verdict
    (the names of those not ok), and the command that shows every check."""
    named = []
    for verdict in ("fail", "warn", "unknown", "ok"):
        names = [c.name for c in report.checks if c.verdict == verdict]
        if names:
            named.append(f"{len(names)} {verdict}" + (f" ({', '.join(names)})" if verdict != "ok" else ""))
    where = (f"CPU {_ranges(report.cpus)}" if report.cpus_given else "every CPU") + "".join(
        f", {d}" for d in report.devices
    )
    state = "ready" if report.ready else "not as recommended"
    tunable = sum(1 for c in report.checks if c.tune and c.verdict in ("warn", "fail"))
    tune = f"; `{command(report)} --tune` sets {tunable} of them" if tunable else ""
    return f"preflight of {where}: {state} — {', '.join(named)}; `{command(report)}` for every check{tune}"


def readable(report: Report, everything: bool = False) -> pd.DataFrame:
    """The checks as a notebook or page shows them, failures first: check, verdict, what was
    seen, what it costs when wrong (the seed that measured it) and what to do. Without
    ``everything`` only those not ok."""
    import pandas as pd

    rows = [
        {
            "check": c.name if c.section in ("cpu", "tools") else f"{c.name} ({c.section})",
            "verdict": c.verdict,
            "seen": c.seen,
            "costs when wrong": c.costs or "—",
            "what to do": c.do or ("—" if c.verdict in ("ok", "unknown") else "see what it costs"),
        }
        for c in sorted(report.checks, key=lambda c: ORDER[c.verdict])
        if everything or c.verdict != "ok"
    ]
    columns = ["check", "verdict", "seen", "costs when wrong", "what to do"]
    return pd.DataFrame(rows, columns=columns)


@dataclass
class Verdicts:
    """A study's preflight as the top of its notebook shows it: ``headline`` (one line), then
    the checks that are not ok (``readable``); the whole ``report`` kept."""

    report: Report

    def headline(self) -> str:
        return headline(self.report)

    def table(self) -> pd.DataFrame:
        return readable(self.report)

    def __str__(self) -> str:
        rows = self.table()
        return self.headline() + ("" if rows.empty else "\n" + rows.to_string(index=False, max_colwidth=None))

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        from html import escape

        import pandas as pd

        from ..core.readable import table_html

        rows = self.table()
        head = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(self.headline()))  # the commands as code
        head = f'<p class="iolab-preflight">{head}</p>'
        with pd.option_context("display.max_colwidth", None):  # every verdict's words whole
            return head + ("" if rows.empty else table_html(rows) or "")


def verdicts(target: Any, cpus: Sequence[int] | None, also: Iterable[Any] = (), interval_s: float = 0.3) -> Verdicts:
    """``of_study`` of ``target`` and the devices ``also`` (a multi-device study's), for the top
    of a notebook (``cpus`` None: every online CPU)."""
    return Verdicts(of_study([target, *also], cpus, interval_s))
