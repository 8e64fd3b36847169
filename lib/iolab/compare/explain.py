"""Why is B slower than A? ``iolab explain A B``: the gap as ``iolab compare`` gives it, then
every recorded difference between the two sides that could move the number, ranked by how
much of the gap it can account for, each with its evidence in words and figures.

    done = explain_paths("data/runs/before", "data/runs/after")
    print("\\n".join(lines(done)))

The gap is the headline metric's B ÷ A over the matched cells (``iolab.compare.versus``).
Each candidate cause gives the ratio of a rate (IOPS, bandwidth) it alone would make
(``expected``), from what both sides measured; its share of the gap is ln(expected) ÷ ln(gap),
0-100 %, with the sign turned for a metric where lower is better (a latency, cycles per IO):

* workload: a job option that differs is said first (a different job; the comparison may
  stop there). A block size that differs is expected to keep the bytes per second: IOPS
  ratio = bs_A ÷ bs_B, its evidence the two bandwidths;
* other load: other programs' share of the measuring CPUs (``other_cpu_pct``, the
  samplers): fio keeps what they leave, expected (100 - other_B) ÷ (100 - other_A);
* the clock: the sampled frequency's ratio;
* CPU per IO: fio's own cycles per IO (``iolab.stats.cycles``), A's ÷ B's; it names the
  set-up difference that acts through it (the scheduler: seed 001 measured 2.19× the CPU
  per IO with mq-deadline against none);
* readahead: for buffered reads, the device's bytes per byte fio read (``dev_read_ios`` ×
  ``dev_read_req_kib`` ÷ ``io_bytes``) where they differ, else its requests per fio IO
  (sequential reads: the same bytes in fewer, larger requests), A's ÷ B's; direct I/O does
  not read ahead;
* what is recorded but has no measured channel (kernel, fio and iolab versions, other
  queue settings, the governor) is listed as such, not ranked.

Each share assumes that cause's resource was the limit (a CPU shared with a hog delays
every submission, whether or not fio kept it busy), so it is an upper bound; causes overlap
(a hog's share and a lower clock may both be in one gap): each share is what that cause
alone could account for, not a part of a sum. fio's CPU per IO that rose with no recorded
difference naming it is a symptom (a hog also makes each IO cost more: caches, switches),
listed after every named cause whatever its share. When the repeats show no gap (its interval
holds 1×), the differences are ordered by the size of their measured effect instead.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.columns import better, label
from ..core.errors import InputError
from ..core.readable import percent
from ..core.validate import parse_size
from ..read.run import RunFolder
from ..stats.repeat_stats import compare_values, per_run
from .page import SidesCompared, compare_paths

NO_EFFECT = 0.02  # |ln expected| below this (2 %): no evidence of an effect
SCHEDULER_COST = "seed 001 measured 2.19× the CPU per IO with mq-deadline against none (the author's NVMe SSD)"
QUEUE = ("read_ahead_kb", "nomerges", "rq_affinity", "io_poll", "nr_requests", "max_sectors_kb")
CPU_PER_IO = "fio's CPU per IO"  # a symptom no recorded difference names: after every named cause


@dataclass
class Cause:
    """One recorded difference: ``kind`` (workload, set-up, software, CPU, device), ``what``,
    each side's value, the ratio it alone would make (``expected``, B ÷ A of the metric;
    None: no channel measured), its ``share`` of the gap (0-1; None: not ranked) and its
    ``evidence`` in words with figures; ``knob``: the ``iolab.machine.knobs`` name that sets
    it, for a set-up difference ``--verify`` can flip to A's value (``a``)."""

    kind: str
    what: str
    a: str
    b: str
    evidence: str
    expected: float | None = None
    share: float | None = None
    knob: str | None = None


@dataclass
class Explanation:
    """The gap (``ratio``: B ÷ A of ``metric``, with its interval over the cells' when one
    cell), the ``workload`` differences (said first), the ``ranked`` causes and the
    ``unranked`` ones (no evidence of an effect, or working against the gap)."""

    compared: SidesCompared
    metric: str
    ratio: float
    low: float
    high: float
    workload: list[Cause] = field(default_factory=list)
    ranked: list[Cause] = field(default_factory=list)
    unranked: list[Cause] = field(default_factory=list)

    @property
    def gap_shown(self) -> bool:
        """The repeats show a gap: at least 2 % and, with one cell, an interval without 1×."""
        return abs(math.log(self.ratio)) >= NO_EFFECT and not (self.low <= 1 <= self.high)

    @property
    def top(self) -> Cause | None:
        return self.ranked[0] if self.ranked else None


def explain_paths(a: str | os.PathLike, b: str | os.PathLike, metric: str = "iops", **compare: Any) -> Explanation:
    """``iolab explain A B``: ``compare_paths(a, b, **compare)`` and the causes of its gap."""
    done = compare_paths(a, b, metrics=[metric], **compare)
    return explain(done, metric)


def explain(done: SidesCompared, metric: str = "iops") -> Explanation:
    """The causes of ``done``'s gap in ``metric`` (module docstring)."""
    cells = done.versus.cells
    cells = cells[cells["metric"] == metric] if "metric" in cells else cells
    if cells.empty:
        raise InputError(f"no cell of A and B has {metric} on both sides: nothing to explain")
    ratios = (cells["mean_b"] / cells["mean_a"]).astype(float)
    ratio = float(math.exp(ratios.map(math.log).mean()))
    one = len(cells) == 1
    low = 1 + float(cells["low_pct"].iloc[0]) / 100 if one else math.nan
    high = 1 + float(cells["high_pct"].iloc[0]) / 100 if one else math.nan
    sa, sb = _side_means(done.a), _side_means(done.b)
    setup_a, setup_b = _setup(done.a), _setup(done.b)
    found = Explanation(done, metric, ratio, low, high)
    found.workload = _workload(done, sa, sb)
    candidates = [*_cpu(sa, sb, setup_a, setup_b), *_queue(sa, sb, setup_a, setup_b), *_recorded(done)]
    gap = math.log(ratio) if ratio > 0 else 0.0
    sign = -1.0 if better(metric) == "lower" else 1.0  # the channels are a rate's: a latency moves the other way
    effect = {
        id(c): sign * math.log(c.expected) for c in [*found.workload, *candidates] if c.expected and c.expected > 0
    }
    if found.gap_shown:
        for cause in [*found.workload, *candidates]:
            e = effect.get(id(cause), 0.0)
            if abs(e) >= NO_EFFECT and e * gap > 0:
                cause.share = min(1.0, e / gap)
        found.ranked = sorted((c for c in candidates if c.share), key=lambda c: (c.what == CPU_PER_IO, -c.share))
    else:  # no gap to share out: the differences by the size of their measured effect
        found.ranked = sorted(
            (c for c in candidates if abs(effect.get(id(c), 0.0)) >= NO_EFFECT),
            key=lambda c: (c.what == CPU_PER_IO, -abs(effect[id(c)])),
        )
    found.unranked = [c for c in candidates if c not in found.ranked]
    return found


# ---------------------------------------------------------------- what each side measured
def _side_means(side) -> dict[str, float]:
    """Means over a side's runs (one row per run: ``per_run``) of the columns the causes read."""
    runs = per_run(side.table)
    out = {c: float(pd.to_numeric(runs[c], errors="coerce").mean()) for c in runs.select_dtypes("number").columns}
    bs = _option(side, "bs")
    out["bs_bytes"] = _bytes(bs) if bs else math.nan
    out["direct"] = _option(side, "direct")
    return out


def _option(side, name: str) -> Any:
    """A fio option as the side's first run gave it (its full options, params.json)."""
    if not side.folders:
        return None
    return (RunFolder(side.folders[0]).params().get("fio_options") or {}).get(name)


def _setup(side) -> dict[str, str]:
    """The first run's queue settings (system.json) of a side: read_ahead_kb, scheduler, ..."""
    queue = (RunFolder(side.folders[0]).snapshot().get("queue") or {}) if side.folders else {}
    return {k: str(queue[k]) for k in ("scheduler_active", *QUEUE) if queue.get(k) is not None}


def _bytes(text: Any) -> float:
    """fio's size (``4k``, ``16384``) in bytes; NaN for what is no single size (``4k,64k``)."""
    try:
        return float(parse_size(str(text)))
    except InputError:
        return math.nan


# ---------------------------------------------------------------- the causes
def _workload(done: SidesCompared, sa: dict, sb: dict) -> list[Cause]:
    """Job options that differ (``iolab compare``'s differences named ``fio ...``)."""
    out = []
    for key, va, vb in done.differences:
        if not key.startswith("fio "):
            continue
        name = key.removeprefix("fio ")
        cause = Cause("workload", f"the job's {name}", str(va), str(vb), f"B's job has {name}={vb}, A's {name}={va}")
        if name == "bs" and sa["bs_bytes"] > 0 and sb["bs_bytes"] > 0:
            cause.expected = sa["bs_bytes"] / sb["bs_bytes"]
            bw_a, bw_b = sa.get("bw_bytes_s", math.nan) / 2**20, sb.get("bw_bytes_s", math.nan) / 2**20
            cause.evidence += (
                f": the same bytes per second in blocks {sb['bs_bytes'] / sa['bs_bytes']:.3g}× the size would make "
                f"{cause.expected:.3g}× the IOPS; bandwidth A {bw_a:,.0f} MiB/s, B {bw_b:,.0f} MiB/s"
            )
        out.append(cause)
    return out


def _cpu(sa: dict, sb: dict, setup_a: dict, setup_b: dict) -> list[Cause]:
    busy = f"the measuring CPUs {percent(sa.get('cpu_busy_pct', math.nan))} busy in A"
    out = []
    oa, ob = sa.get("other_cpu_pct", math.nan), sb.get("other_cpu_pct", math.nan)
    if oa == oa and ob == ob and abs(ob - oa) >= 2:
        expected = (100 - min(ob, 99)) / (100 - min(oa, 99))
        own = f"; fio's own CPU {percent(sa.get('own_cpu_pct', math.nan))} → {percent(sb.get('own_cpu_pct', math.nan))}"
        out.append(
            Cause(
                "CPU",
                "other programs on the measuring CPUs",
                percent(oa),
                percent(ob),
                f"other programs took {percent(ob)} of the measuring CPUs' time in B, {percent(oa)} in A{own}; {busy}",
                expected,
            )
        )
    fa, fb = sa.get("cpu_freq_mhz", math.nan), sb.get("cpu_freq_mhz", math.nan)
    if fa == fa and fb == fb and abs(fb / fa - 1) >= NO_EFFECT:
        out.append(
            Cause(
                "CPU",
                "the clock",
                f"{fa:,.0f} MHz",
                f"{fb:,.0f} MHz",
                f"the CPU ran at {fb:,.0f} MHz in B, {fa:,.0f} in A",
                fb / fa,
            )
        )
    ca, cb = sa.get("cycles_per_io", math.nan), sb.get("cycles_per_io", math.nan)
    sched_a, sched_b = setup_a.get("scheduler_active"), setup_b.get("scheduler_active")
    if ca == ca and cb == cb and ca > 0 and cb > 0:
        scheduler = sched_a != sched_b and sched_a and sched_b
        what = f"the I/O scheduler ({sched_a} → {sched_b})" if scheduler else CPU_PER_IO
        words = f"fio's own CPU per IO: {ca:,.0f} cycles in A, {cb:,.0f} in B ({cb / ca:.2f}×)"
        if scheduler:
            words = f"B's queue ran {sched_b}, A's {sched_a}; {words}; {SCHEDULER_COST}"
        cause = Cause("set-up" if scheduler else "CPU", what, f"{ca:,.0f}", f"{cb:,.0f}", f"{words}; {busy}")
        if scheduler:
            cause.a, cause.b, cause.knob = sched_a, sched_b, "scheduler"
        cause.expected = ca / cb
        if scheduler or abs(math.log(cb / ca)) >= NO_EFFECT:
            out.append(cause)
    elif sched_a != sched_b and sched_a and sched_b:
        out.append(
            Cause(
                "set-up",
                "the I/O scheduler",
                sched_a,
                sched_b,
                f"no CPU per IO was measured; {SCHEDULER_COST}",
                knob="scheduler",
            )
        )
    return out


def _queue(sa: dict, sb: dict, setup_a: dict, setup_b: dict) -> list[Cause]:
    out = []
    for knob in QUEUE:
        va, vb = setup_a.get(knob), setup_b.get(knob)
        if va is None or vb is None or va == vb:
            continue
        cause = Cause("set-up", f"the queue's {knob}", va, vb, f"B's queue had {knob}={vb}, A's {knob}={va}")
        cause.knob = None if knob == "io_poll" else knob  # iolab.machine.knobs' names; poll queues are set at boot
        if knob == "read_ahead_kb":
            direct = str(sb.get("direct")) == "1" and str(sa.get("direct")) == "1"
            amp_a, amp_b = _amplification(sa), _amplification(sb)
            if direct:
                cause.evidence += "; both jobs are direct I/O, which does not read ahead: no effect expected"
            elif amp_a > 0 and amp_b > 0 and abs(math.log(amp_a / amp_b)) >= NO_EFFECT:
                cause.expected = amp_a / amp_b
                cause.evidence += (
                    f"; the device read {amp_b:,.2f} bytes per byte fio read in B, {amp_a:,.2f} in A "
                    "(buffered reads: what readahead brings in and fio never asks for)"
                )
            elif _requests_per_io(sa) > 0 and _requests_per_io(sb) > 0:
                rpi_a, rpi_b = _requests_per_io(sa), _requests_per_io(sb)
                cause.expected = rpi_a / rpi_b
                cause.evidence += (
                    f"; the device's requests per fio IO: {rpi_b:,.3g} in B "
                    f"({sb.get('dev_read_req_kib', math.nan):,.0f} KiB each), {rpi_a:,.3g} in A "
                    f"({sa.get('dev_read_req_kib', math.nan):,.0f} KiB each): the same bytes in "
                    f"{rpi_b / rpi_a:,.3g}× the requests"
                )
        else:
            cause.evidence += "; no measured channel for it here"
        out.append(cause)
    return out


def _amplification(s: dict) -> float:
    ios, req, fio_bytes = s.get("dev_read_ios", math.nan), s.get("dev_read_req_kib", math.nan), s.get("io_bytes")
    if not (fio_bytes and fio_bytes > 0) or ios != ios or req != req:
        return math.nan
    return ios * req * 1024 / fio_bytes


def _requests_per_io(s: dict) -> float:
    ios, fio_ios = s.get("dev_read_ios", math.nan), s.get("total_ios", math.nan)
    return ios / fio_ios if fio_ios == fio_ios and fio_ios > 0 and ios == ios else math.nan


def _recorded(done: SidesCompared) -> list[Cause]:
    """Set-up facts that differ without a measured channel (kernel, fio, iolab, ...)."""
    out = []
    for key, va, vb in done.differences:
        if key.startswith("fio ") or key in ("scheduler",):
            continue
        kind = "software" if key in ("kernel", "fio", "iolab") else "device" if key.startswith("device") else "set-up"
        out.append(
            Cause(kind, key, str(va), str(vb), f"B: {vb}, A: {va}; could move the number; not measured apart here")
        )
    return out


# ---------------------------------------------------------------- --verify
@dataclass
class Closed:
    """What flipping ``cause`` back to A's value did to B's job, measured again (``values``,
    one per run): ``ratio`` of their mean over B's with its interval, and the ``share`` of
    the gap it closed with its interval (0-1 clipped to the physically meaningful 0-100 %
    when the interval spills over; None: the repeats cannot bound it)."""

    cause: Cause
    values: list[float]
    ratio: float
    share: float
    low: float | None
    high: float | None

    def words(self, metric: str) -> str:
        bound = (
            "the repeats cannot bound it"
            if self.low is None
            else f"[{percent(100 * self.low)}; {percent(100 * self.high)}]"
        )
        return (
            f"--verify: with {self.cause.knob} set back to A's {self.cause.a}, B's job ran {len(self.values)} times: "
            f"its {metric} {self.ratio:.3g}× B's, closing {percent(100 * self.share)} {bound} of the gap; "
            f"{self.cause.knob} was put back as it was"
        )


def flippable(found: Explanation) -> Cause:
    """The top-ranked set-up difference iolab can set (a knob): InputError naming the top
    cause when there is none."""
    for cause in found.ranked:
        if cause.knob:
            return cause
    top = found.top.what if found.top else "none was ranked"
    raise InputError(f"--verify flips a set-up setting iolab can change; no ranked cause is one (the top: {top})")


def closed(found: Explanation, cause: Cause, values: Sequence[float]) -> Closed:
    """``cause`` flipped on B's job (``values``: its metric per run, measured again) against
    A's and B's runs: the share of the gap closed, ln(new ÷ B) ÷ ln(A ÷ B), with the interval
    of new ÷ B (``iolab.stats.repeat_stats.compare_values``); the gap is the explanation's."""
    b = per_run(found.compared.b.table)[found.metric].dropna().tolist()
    c = compare_values(list(values), b, found.metric)
    gap = -math.log(found.ratio)  # ln(A ÷ B)
    ratio = 1 + c.ratio_pct / 100

    def share(r: float) -> float:
        return max(0.0, min(1.0, math.log(r) / gap)) if r > 0 and gap else math.nan

    bounded = not (math.isnan(c.low_pct) or math.isnan(c.high_pct))
    ends = sorted([share(1 + c.low_pct / 100), share(1 + c.high_pct / 100)]) if bounded else [None, None]
    return Closed(cause, list(values), ratio, share(ratio), ends[0], ends[1])


# ---------------------------------------------------------------- in words
def lines(found: Explanation) -> list[str]:
    """The explanation for a terminal: the gap, the job, the ranked causes, the rest."""
    done = found.compared
    cells = len(done.versus.cells)
    interval = (
        f" [{found.low:.3g}; {found.high:.3g}]"
        if found.low == found.low
        else " (the repeats cannot bound it)"
        if cells == 1
        else f" (the geometric mean over {cells} cells)"
    )
    out = [
        f"A: {done.a}",
        f"B: {done.b}",
        f"the gap: B's {label(found.metric).partition(' (')[0]} is {found.ratio:.3g}×{interval} A's "
        f"({percent(100 * (found.ratio - 1), True)})",
    ]
    if done.versus.not_comparable:
        out.append(f"not comparable: {done.versus.not_comparable}")
    if found.workload:
        out.append("a different job (said first: the comparison may stop here):")
        out += [f"  - {c.evidence}" + _share(c) for c in found.workload]
    beyond = " beyond the different job" if found.workload else ""
    if not found.gap_shown:
        out.append("no gap shown by the repeats: the differences below, by the size of their measured effect")
        out += [f"  {i}. {c.what}: {c.evidence}" for i, c in enumerate(found.ranked, 1)]
    elif found.ranked:
        out.append(f"ranked by how much of the gap each could account for on its own{beyond}:")
        out += [f"  {i}. {c.what}{_share(c)}: {c.evidence}" for i, c in enumerate(found.ranked, 1)]
    else:
        out.append(f"no recorded difference{beyond} accounts for the gap")
    if found.unranked:
        out.append("differences with no evidence of an effect here (not ranked):")
        out += [f"  - {c.what}: {c.evidence}" for c in found.unranked]
    return out


def _share(c: Cause) -> str:
    return f" ({percent(100 * c.share)} of the gap)" if c.share else ""


def table(found: Explanation) -> pd.DataFrame:
    """Every cause as a row: kind, what, A, B, share of the gap (%), evidence; ranked first."""
    rows = [
        {
            "rank": found.ranked.index(c) + 1 if c in found.ranked else None,
            "kind": c.kind,
            "what": c.what,
            "A": c.a,
            "B": c.b,
            "share_of_gap_pct": None if not c.share else round(100 * c.share, 1),
            "evidence": c.evidence,
        }
        for c in [*found.workload, *found.ranked, *found.unranked]
    ]
    return pd.DataFrame(rows).astype({"rank": "Int64"})  # a rank is a whole number, blank when unranked


__all__ = ["Cause", "Closed", "Explanation", "closed", "explain", "explain_paths", "flippable", "lines", "table"]
