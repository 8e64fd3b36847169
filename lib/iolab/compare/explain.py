"""Why is B slower than A? ``iolab explain A B``: the gap as ``iolab compare`` gives it, then
every recorded difference between the two sides that could move the number, ranked by how
much of the gap it can account for, each with its evidence in words and figures.

    done = explain_paths("data/runs/before", "data/runs/after")
    print("\\n".join(lines(done)))

The gap is the headline metric's B ÷ A over the matched cells (``iolab.compare.versus``).
The causes and their ranking are ``iolab.stats.gap``'s, the rule the seed pages use too:
each channel gives the ratio one difference alone would make (other load, steal, the clock,
fio's CPU per IO and the scheduler acting through it, polling, readahead), its share of the
gap is ln(expected) ÷ ln(gap), an upper bound; shares overlap. Here, before them:

* workload: a job option that differs is said first (a different job; the comparison may
  stop there). A block size that differs is expected to keep the bytes per second: IOPS
  ratio = bs_A ÷ bs_B, its evidence the two bandwidths;
* what is recorded but has no measured channel (kernel, fio and iolab versions, other
  set-up facts) is listed as such, not ranked.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.columns import label
from ..core.errors import InputError
from ..core.readable import percent
from ..stats.gap import Cause, channels, device_causes, gap_shown, queue_causes, rank, side_facts
from ..stats.repeat_stats import compare_values, per_run
from .page import SidesCompared, compare_paths


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
        return gap_shown(self.ratio, self.low, self.high)

    @property
    def top(self) -> Cause | None:
        return self.ranked[0] if self.ranked else None

    def __str__(self) -> str:  # print(explanation) in a notebook: the lines iolab explain prints
        return "\n".join(lines(self))


def explain_paths(
    a: str | os.PathLike | Sequence, b: str | os.PathLike | Sequence, metric: str = "iops", **compare: Any
) -> Explanation:
    """``iolab explain A B``: ``compare_paths(a, b, **compare)`` and the causes of its gap; a
    side may be a list of run folders (``iolab.compare.sides.load_side``)."""
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
    sa, sb = (side_facts(side.table, side.folders) for side in (done.a, done.b))
    found = Explanation(done, metric, ratio, low, high)
    found.workload = _workload(done, sa, sb)
    candidates = [*channels(sa, sb), *queue_causes(sa, sb), *device_causes(sa, sb), *_recorded(done)]
    found.ranked, found.unranked = rank(candidates, ratio, found.gap_shown, metric, said_first=found.workload)
    return found


# ---------------------------------------------------------------- the causes
def _workload(done: SidesCompared, sa: dict, sb: dict) -> list[Cause]:
    """Job options that differ (``iolab compare``'s differences named ``fio ...``)."""
    out = []
    for key, va, vb in done.differences:
        if not key.startswith("fio "):
            continue
        name = key.removeprefix("fio ")
        va, vb = ("(not set)" if v == "-" else v for v in (va, vb))  # "-": the side's job does not set it
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
    gap: bool = True  # the repeats showed a gap to close
    ratio_low: float | None = None
    ratio_high: float | None = None

    def words(self, metric: str) -> str:
        ran = (
            f"--verify: with {self.cause.knob} set back to A's {self.cause.a}, B's job ran {len(self.values)} times: "
            f"its {metric} {self.ratio:.3g}× B's"
        )
        back = f"{self.cause.knob} was put back as it was"
        if not self.gap:  # no share of nothing: the flip's own effect, with its interval
            within = f" [{self.ratio_low:.3g}; {self.ratio_high:.3g}]" if self.ratio_low is not None else ""
            return f"{ran}{within}; the repeats showed no gap between A and B, so there is none to close; {back}"
        bound = (
            "the repeats cannot bound it"
            if self.low is None
            else f"[{percent(100 * self.low)}; {percent(100 * self.high)}]"
        )
        return f"{ran}, closing {percent(100 * self.share)} {bound} of the gap; {back}"


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
    low, high = (1 + c.low_pct / 100, 1 + c.high_pct / 100) if bounded else (None, None)
    return Closed(cause, list(values), ratio, share(ratio), ends[0], ends[1], found.gap_shown, low, high)


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
