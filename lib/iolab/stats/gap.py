"""What could account for a gap between two sides, A and B: one rule for ``iolab explain``
(two result sets, ``iolab.compare.explain``) and for the seed pages (a write-up's published
set-up against this machine's runs, ``iolab.seeds.causes``).

    a, b = side_facts(table_a, folders_a), side_facts(table_b, folders_b)
    found = [*channels(a, b, ("A", "B")), *queue_causes(a, b, ("A", "B"))]
    ranked, unranked = rank(found, ratio=0.5, shown=True, metric="iops")

A side is a plain dict of what it measured (means over its runs, one row per run:
``iolab.stats.repeat_stats.per_run``) and how it was set up (its first run's queue, its
job's ``bs`` and ``direct``, whether it polled); a published side holds what the write-up
says, and under ``"assumed"`` each value it does not say, with why it was taken.

Each channel gives ``expected``: the ratio (B ÷ A of a rate: IOPS, bandwidth) that one
difference alone would make, from what both sides measured:

* other load: other programs' share of the measuring CPUs (``other_cpu_pct``); fio keeps what
  they leave, (100 - other_B) ÷ (100 - other_A); steal (``cpu_steal_pct``) the same way;
* the clock: the frequencies' ratio (sampled, else cpufreq, else /proc/cpuinfo's nominal),
  when a side's measuring CPUs were busy (80 % or more; not known counts as busy);
* CPU per IO: fio's own cycles per IO, A's ÷ B's; it names the set-up difference that acts
  through it (the scheduler). With no CPU per IO measured on both sides, a scheduler that
  differs is listed with seed 001's measured cost (1150k against 525k IOPS) as context, and
  completions polled on one side only with seed 000's (546k against 472k): another machine's
  figures are no evidence of this gap, so neither is ranked;
* readahead: for buffered reads, the device's bytes per byte fio read, else its requests
  per fio IO, A's ÷ B's; direct I/O does not read ahead.

``rank``: a cause's share of the gap is ln(expected) ÷ ln(gap), 0-100 %, the sign turned for
a metric where lower is better (a latency, cycles per IO). Each share assumes that cause's
resource was the limit, so it is an upper bound; causes overlap, so shares are not parts of a
sum. fio's CPU per IO that rose with no recorded difference naming it is a symptom, ranked
after every named cause; a difference with no channel, or one working against the gap, is
listed unranked. With no gap shown, the differences are ordered by the size of their effect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.columns import better
from ..core.errors import InputError, RunFileError
from ..core.readable import percent
from ..core.validate import parse_size
from ..read.checks import link_capacity_bytes_s, link_gts, link_lanes
from ..read.run import RunFolder
from .repeat_stats import per_run

NO_EFFECT = 0.02  # |ln expected| below this (2 %): no evidence of an effect
CPU_BOUND = 80.0  # % busy of the measuring CPUs from which their clock can set the pace
QUEUE = ("read_ahead_kb", "nomerges", "rq_affinity", "io_poll", "nr_requests", "max_sectors_kb")
CPU_PER_IO = "fio's CPU per IO"  # a symptom no recorded difference names: after every named cause
# what the seeds measured on the authors' machines: context for a difference not measured apart here
SCHEDULER_SAID = "seed 001 measured 2.19× the IOPS per CPU with none against mq-deadline (the author's NVMe SSD)"
WHERE = ("in A", "in B")  # where each side was, in words
POLLING_SAID = "seed 000 measured +16 % IOPS from polling on one core (546k against 472k by interrupt)"


@dataclass
class Cause:
    """One difference: ``kind`` (workload, set-up, software, CPU, device, machine, method),
    ``what``, each side's value, the ratio it alone would make (``expected``, B ÷ A of a rate;
    None: no channel), its ``share`` of the gap (0-1; None: not ranked) and its ``evidence`` in
    words with figures; ``knob``: the ``iolab.machine.knobs`` name that sets it, for a set-up
    difference ``iolab explain --verify`` can flip to A's value (``a``)."""

    kind: str
    what: str
    a: str
    b: str
    evidence: str
    expected: float | None = None
    share: float | None = None
    knob: str | None = None


# ---------------------------------------------------------------- a side's facts
def side_facts(table: pd.DataFrame, folders: Sequence[str | Path]) -> dict[str, Any]:
    """Means over a side's runs (``table``: iolab's tidy run table) of the columns the
    channels read, its job's ``bs_bytes`` and ``direct``, whether it ``polled``, its first
    run's queue settings and machine (``system.json``)."""
    runs = per_run(table) if len(table) else pd.DataFrame()
    out: dict[str, Any] = {
        c: float(pd.to_numeric(runs[c], errors="coerce").mean()) for c in runs.select_dtypes("number").columns
    }
    first = RunFolder(folders[0]) if folders else None
    options = _read(lambda: first.params().get("fio_options") or {}, {}) if first else {}
    snap = _read(first.snapshot, {}) if first else {}
    out["bs_bytes"] = _bytes(options["bs"]) if options.get("bs") else math.nan
    out["direct"] = options.get("direct")
    out["polled"] = any(polled_run(f) for f in folders)
    queue = snap.get("queue") or {}
    out.update({k: str(queue[k]) for k in ("scheduler_active", *QUEUE) if queue.get(k) is not None})
    sources = set(table["freq_source"].dropna().astype(str)) if "freq_source" in table else set()
    if sources == {"proc_cpuinfo"}:
        out["clock_from"] = "nominal, /proc/cpuinfo: no cpufreq"
    out |= _device_place(snap)
    out["device"] = str(snap.get("device") or "")
    out["virtual_machine"], out["emulated"] = bool(snap.get("virtual_machine")), bool(snap.get("emulated"))
    if not out.get("cpu_freq_mhz", math.nan) > 0:  # not sampled: the snapshot's
        cur = [v / 1e3 for v in (snap.get("scaling_cur_freq_khz") or {}).values() if v]
        nominal = [v for v in (snap.get("cpuinfo_mhz") or {}).values() if v]
        out["cpu_freq_mhz"] = max(cur) if cur else max(nominal) if nominal else math.nan
        out["clock_from"] = "cpufreq" if cur else "nominal, /proc/cpuinfo: no cpufreq" if nominal else ""
    return out


def _device_place(snap: Mapping[str, Any]) -> dict[str, Any]:
    """Where the device sits: the link it trained at (``link``, and its data rate,
    ``link_bytes_s``), the maximum of the slot's port above it (``port``; "none": on the root
    complex), and whether its NUMA node is one of the measuring CPUs' (``numa``: "near",
    "far" or "none" for a device with no NUMA affinity, -1; with the nodes in words)."""
    pci, out = snap.get("pci") or {}, {}
    speed, width = link_gts(pci.get("link_speed")), link_lanes(pci.get("link_width"))
    if speed and width:
        out["link"] = f"{speed:g} GT/s x{width}"
        out["link_bytes_s"] = link_capacity_bytes_s({"link_speed": f"{speed} GT/s", "link_width": width})
        port = link_gts(pci.get("port_max_link_speed")), link_lanes(pci.get("port_max_link_width"))
        out["port"] = f"{port[0]:g} GT/s x{port[1]}" if all(port) else "none (on the root complex)"
    elif pci.get("pci_address"):  # a PCI function with no link: integrated in the root complex
        out["link"] = "none (no PCIe link in sysfs: a device on the root complex)"
    node = str(pci.get("numa_node") or "").strip()
    cpus = sorted(set((snap.get("cpu_numa_nodes") or {}).values()))
    if node.lstrip("-").isdigit() and cpus:
        where = ", ".join(map(str, cpus))
        if int(node) < 0:
            out["numa"] = f"none (the device has no NUMA affinity, -1; the measuring CPUs on node {where})"
        else:
            place = "near" if int(node) in cpus else "far"
            out["numa"] = f"{place} (the device on node {node}, the measuring CPUs on {where})"
    return out


def polled_run(folder: str | Path) -> bool:
    """Whether the run in ``folder`` polled its completions (fio's hipri=1, t/io_uring's -p 1)."""
    run = RunFolder(folder)
    job = _read(run.job, "")
    argv = " ".join(_read(run.argv, []))
    return "hipri=1" in job.replace(" ", "") or " -p 1" in argv or " -p1" in argv


def _read(get, default):
    try:
        return get()
    except (OSError, RunFileError):
        return default


def _bytes(text: Any) -> float:
    """fio's size (``4k``, ``16384``) in bytes; NaN for what is no single size (``4k,64k``)."""
    try:
        return float(parse_size(str(text)))
    except InputError:
        return math.nan


# ---------------------------------------------------------------- the channels
def _num(side: Mapping[str, Any], key: str) -> float:
    v = side.get(key)
    return float(v) if isinstance(v, (int, float)) and v == v else math.nan


def _assumed(side: Mapping[str, Any], key: str) -> str:
    why = (side.get("assumed") or {}).get(key)
    return f" ({why})" if why else ""


def channels(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = WHERE) -> list[Cause]:
    """Other load, steal, the clock, CPU per IO (or the scheduler acting through it) and
    polling: each difference between ``a`` and ``b`` with the ratio it alone would make;
    ``names``: where each side was, in words (``("in A", "in B")``, ``("in the write-up", "here")``)."""
    na, nb = names
    out = []
    busy_a = _num(a, "cpu_busy_pct")
    busy = f"the measuring CPUs {percent(busy_a)} busy {na}" if busy_a == busy_a else ""
    for key, what in (("other_cpu_pct", "other programs on the measuring CPUs"), ("cpu_steal_pct", "steal")):
        oa, ob = _num(a, key), _num(b, key)
        if oa == oa and ob == ob and abs(ob - oa) >= 2:
            took = "other programs took" if key == "other_cpu_pct" else "the host took (steal)"
            own_a, own_b = _num(a, "own_cpu_pct"), _num(b, "own_cpu_pct")
            own = (
                f"; fio's own CPU {percent(own_b)} {nb}, {percent(own_a)} {na}"
                if key == "other_cpu_pct" and own_a == own_a and own_b == own_b
                else ""
            )
            words = f"{took} {percent(ob)} of the measuring CPUs' time {nb}, {percent(oa)} {na}"
            out.append(
                Cause(
                    "CPU",
                    what,
                    percent(oa),
                    percent(ob),
                    words + _assumed(a, key) + own + (f"; {busy}" if busy else ""),
                    (100 - min(ob, 99)) / (100 - min(oa, 99)),
                )
            )
    fa, fb = _num(a, "cpu_freq_mhz"), _num(b, "cpu_freq_mhz")
    if fa == fa and fb == fb and fa > 0 and abs(fb / fa - 1) >= NO_EFFECT:
        how = [f"{n}: {s['clock_from']}" for n, s in ((na, a), (nb, b)) if s.get("clock_from")]
        idle = [(n, v) for n, v in ((na, _num(a, "cpu_busy_pct")), (nb, _num(b, "cpu_busy_pct"))) if v == v]
        bound = not idle or any(v >= CPU_BOUND for _, v in idle)  # a clock sets the pace only of a busy CPU
        out.append(
            Cause(
                "CPU",
                "the clock",
                f"{fa:,.0f} MHz",
                f"{fb:,.0f} MHz",
                f"the clock {fb:,.0f} MHz {nb}, {fa:,.0f} {na}"
                + (f" ({'; '.join(how)})" if how else "")
                + (
                    "; IOPS per core scale with it, cycles per IO do not"
                    if bound
                    else "; the measuring CPUs were "
                    + " and ".join(f"{percent(v)} busy {n}" for n, v in idle)
                    + ": the CPU was not the limit, so the clock is not a cause"
                ),
                fb / fa if bound else None,
            )
        )
    out += _cpu_per_io(a, b, names, busy)
    measured = _num(a, "cycles_per_io") > 0 and _num(b, "cycles_per_io") > 0
    if bool(a.get("polled")) != bool(b.get("polled")) and not measured:  # else named through CPU per IO
        polled, by_irq = (na, nb) if a.get("polled") else (nb, na)
        ways, no_queues = _polling(a, b)
        out.append(
            Cause(
                "set-up",
                "polled completions",
                *(w.replace("polling", "polled") for w in ways),
                f"completions polled {polled}, by interrupt {by_irq}"
                + (f": the target {by_irq} has no poll queues (io_poll 0)" if no_queues else "")
                + f"; not measured apart here ({POLLING_SAID})",
            )
        )
    return out


def _place(side: Mapping[str, Any]) -> str:
    """near, far or none: the first word of a side's ``numa`` ("" when unknown)."""
    return str(side.get("numa") or "").split(" ")[0]


def _polling(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[tuple[str, str], bool]:
    """How each side took its completions (polling, interrupts), and whether the side taking
    interrupts had no poll queues (io_poll 0)."""
    ways = tuple("polling" if s.get("polled") else "interrupts" for s in (a, b))
    return ways, (b if a.get("polled") else a).get("io_poll") == "0"


def _cpu_per_io(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str], busy: str) -> list[Cause]:
    na, nb = names
    ca, cb = _num(a, "cycles_per_io"), _num(b, "cycles_per_io")
    sched_a, sched_b = a.get("scheduler_active"), b.get("scheduler_active")
    scheduler = bool(sched_a and sched_b and sched_a != sched_b)
    place_a, place_b = _place(a), _place(b)
    cost = f"fio's own CPU per IO: {cb:,.0f} cycles {nb}, {ca:,.0f} {na} ({cb / ca:.2f}×)" if ca > 0 and cb > 0 else ""
    if not scheduler and place_a and place_b and place_a != place_b and cost:  # a far node's cost is CPU
        return [
            Cause(
                "device",
                f"the device's NUMA node ({place_a} → {place_b})",
                f"{ca:,.0f}",
                f"{cb:,.0f}",
                f"{b['numa']} {nb}; {a['numa']} {na}; {cost}" + (f"; {busy}" if busy else ""),
                ca / cb,
            )
        ]
    if not scheduler and bool(a.get("polled")) != bool(b.get("polled")) and cost:  # polling trades CPU for interrupts
        ways, no_queues = _polling(a, b)
        return [
            Cause(
                "set-up",
                f"polled completions ({ways[0]} → {ways[1]})",
                ways[0],
                ways[1],
                f"completions by {ways[1]} {nb}, by {ways[0]} {na}"
                + (": the side taking interrupts has no poll queues (io_poll 0)" if no_queues else "")
                + f"; {cost}; {POLLING_SAID}"
                + (f"; {busy}" if busy else ""),
                ca / cb,
            )
        ]
    said = f"the queue ran {sched_b} {nb}, {sched_a} {na}{_assumed(a, 'scheduler_active')}"
    if ca > 0 and cb > 0:
        what = f"the I/O scheduler ({sched_a} → {sched_b})" if scheduler else CPU_PER_IO
        words = f"{said}; {cost}; {SCHEDULER_SAID}" if scheduler else cost
        cause = Cause("CPU", what, f"{ca:,.0f}", f"{cb:,.0f}", words + (f"; {busy}" if busy else ""), ca / cb)
        if scheduler:
            cause.kind, cause.a, cause.b, cause.knob = "set-up", str(sched_a), str(sched_b), "scheduler"
        return [cause] if scheduler or abs(math.log(cb / ca)) >= NO_EFFECT else []
    if not scheduler:
        return []
    return [
        Cause(
            "set-up",
            "the I/O scheduler",
            str(sched_a),
            str(sched_b),
            f"{said}; no CPU per IO measured on both sides, so no measured effect here ({SCHEDULER_SAID})",
            knob="scheduler",
        )
    ]


def device_causes(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = WHERE) -> list[Cause]:
    """Where the device sits: the link it trained at (a cause where one side moved more bytes
    per second than the other's link carries: expected = that link's rate ÷ the bytes per
    second), the slot's port when only it differs (listed: it does not slow the device), and a
    NUMA placement that differs with no CPU per IO measured (listed)."""
    na, nb = names
    out = []
    link_a, link_b = _num(a, "link_bytes_s"), _num(b, "link_bytes_s")
    if link_a > 0 and link_b > 0 and abs(math.log(link_b / link_a)) >= NO_EFFECT:
        bw_a, bw_b = _num(a, "bw_bytes_s"), _num(b, "bw_bytes_s")
        cause = Cause(
            "device",
            "the device's link",
            str(a.get("link")),
            str(b.get("link")),
            f"it trained at {b['link']} ({link_b / 1e9:.2f} GB/s) {nb}, {a['link']} ({link_a / 1e9:.2f} GB/s) {na}",
        )
        slower, moved = (link_b, bw_a) if link_b < link_a else (link_a, bw_b)
        if moved == moved and moved > 0.9 * slower:  # the slower link was the limit
            cause.expected = min(1.0, slower / moved) if link_b < link_a else max(1.0, moved / slower)
            cause.evidence += f"; {moved / 1e9:.2f} GB/s moved through the faster one: more than the slower carries"
        elif moved == moved:
            cause.evidence += f"; {moved / 1e9:.3f} GB/s moved, within the slower link: no effect expected" + (
                " (an emulated device is not slowed by its link)" if a.get("emulated") or b.get("emulated") else ""
            )
        out.append(cause)
    elif a.get("link") and b.get("link") and a["link"] != b["link"]:  # one side has no link to compare
        out.append(
            Cause(
                "device",
                "the device's link",
                str(a["link"]),
                str(b["link"]),
                f"{b['link']} {nb}"
                + (f" behind a port of {b['port']}" if b.get("port") else "")
                + f"; {a['link']} {na}"
                + (f" behind a port of {a['port']}" if a.get("port") else "")
                + "; no rate on both sides to compare",
            )
        )
    port_a, port_b = a.get("port"), b.get("port")
    if port_a and port_b and port_a != port_b and a.get("link") == b.get("link"):
        out.append(
            Cause(
                "device",
                "the slot's port",
                str(port_a),
                str(port_b),
                f"the port above the device allows {port_b} {nb}, {port_a} {na}; the device trained at {b['link']} on "
                "both sides, so the port does not slow it",
            )
        )
    cycles = _num(a, "cycles_per_io") > 0 and _num(b, "cycles_per_io") > 0
    if _place(a) and _place(b) and _place(a) != _place(b) and not cycles:
        out.append(
            Cause(
                "device",
                "the device's NUMA node",
                _place(a),
                _place(b),
                f"{b['numa']} {nb}; {a['numa']} {na}; a far node's cost is CPU per IO, not measured on both sides here",
            )
        )
    return out


def queue_causes(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] = WHERE) -> list[Cause]:
    """The queue settings that differ (read_ahead_kb, nomerges, ...); readahead with its
    measured channel for buffered reads, the others listed with none."""
    na, nb = names
    out = []
    for knob in QUEUE:
        va, vb = a.get(knob), b.get(knob)
        if va is None or vb is None or va == vb:
            continue
        cause = Cause("set-up", f"the queue's {knob}", va, vb, f"the queue had {knob}={vb} {nb}, {knob}={va} {na}")
        cause.knob = None if knob == "io_poll" else knob  # iolab.machine.knobs' names; poll queues are set at boot
        if knob == "read_ahead_kb":
            amp_a, amp_b = _amplification(a), _amplification(b)
            rpi_a, rpi_b = _requests_per_io(a), _requests_per_io(b)
            if str(a.get("direct")) == "1" and str(b.get("direct")) == "1":
                cause.evidence += "; both jobs are direct I/O, which does not read ahead: no effect expected"
            elif amp_a > 0 and amp_b > 0 and abs(math.log(amp_a / amp_b)) >= NO_EFFECT:
                cause.expected = amp_a / amp_b
                cause.evidence += (
                    f"; the device read {amp_b:,.2f} bytes per byte fio read {nb}, {amp_a:,.2f} {na} "
                    "(buffered reads: what readahead brings in and fio never asks for)"
                )
            elif rpi_a > 0 and rpi_b > 0:
                cause.expected = rpi_a / rpi_b
                cause.evidence += (
                    f"; the device's requests per fio IO: {rpi_b:,.3g} {nb} "
                    f"({_num(b, 'dev_read_req_kib'):,.0f} KiB each), {rpi_a:,.3g} {na} "
                    f"({_num(a, 'dev_read_req_kib'):,.0f} KiB each): the same bytes in "
                    f"{rpi_b / rpi_a:,.3g}× the requests"
                )
        else:
            cause.evidence += "; no measured channel for it here"
        out.append(cause)
    return out


def _amplification(s: Mapping[str, Any]) -> float:
    ios, req, fio_bytes = _num(s, "dev_read_ios"), _num(s, "dev_read_req_kib"), _num(s, "io_bytes")
    return ios * req * 1024 / fio_bytes if fio_bytes > 0 else math.nan


def _requests_per_io(s: Mapping[str, Any]) -> float:
    ios, fio_ios = _num(s, "dev_read_ios"), _num(s, "total_ios")
    return ios / fio_ios if fio_ios > 0 else math.nan


# ---------------------------------------------------------------- the ranking
def gap_shown(ratio: float, low: float = math.nan, high: float = math.nan) -> bool:
    """A gap of at least 2 % whose interval (when there is one) does not hold 1×."""
    return ratio > 0 and abs(math.log(ratio)) >= NO_EFFECT and not (low <= 1 <= high)


def rank(
    candidates: Sequence[Cause], ratio: float, shown: bool, metric: str = "iops", said_first: Sequence[Cause] = ()
) -> tuple[list[Cause], list[Cause]]:
    """``(ranked, unranked)`` of ``candidates`` for a gap of ``ratio`` (B ÷ A of ``metric``;
    module docstring); ``said_first`` (a different job's options) get their share set but
    are neither ranked nor listed."""
    gap = math.log(ratio) if ratio > 0 else 0.0
    sign = -1.0 if better(metric) == "lower" else 1.0  # the channels are a rate's: a latency moves the other way
    effect = {id(c): sign * math.log(c.expected) for c in [*said_first, *candidates] if c.expected and c.expected > 0}
    for cause in [*said_first, *candidates]:
        cause.share = None  # a cause ranked before against another gap
    if shown:
        for cause in [*said_first, *candidates]:
            e = effect.get(id(cause), 0.0)
            if abs(e) >= NO_EFFECT and e * gap > 0:
                cause.share = min(1.0, e / gap)
        ranked = sorted((c for c in candidates if c.share), key=lambda c: (c.what == CPU_PER_IO, -c.share))
    else:  # no gap to share out: the differences by the size of their measured effect
        ranked = sorted(
            (c for c in candidates if abs(effect.get(id(c), 0.0)) >= NO_EFFECT),
            key=lambda c: (c.what == CPU_PER_IO, -abs(effect[id(c)])),
        )
    return ranked, [c for c in candidates if c not in ranked]


__all__ = [
    "CPU_PER_IO",
    "Cause",
    "NO_EFFECT",
    "channels",
    "device_causes",
    "gap_shown",
    "polled_run",
    "queue_causes",
    "rank",
    "side_facts",
]
