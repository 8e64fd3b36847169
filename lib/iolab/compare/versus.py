"""Did it get worse? Two result sets compared cell by cell: B against A.

    v = versus(table_a, table_b, by=["qd"], metrics=["iops", "clat_p99_us"])
    v.cells        # one row per cell and metric: mean_a, mean_b, change_pct (B ÷ A - 1), low/high, verdict
    v.worse        # the rows where B is worse beyond its interval (``iolab compare`` exits 3)

A and B are tidy tables of runs (``iolab.runs.runcache.load_runs``), typically one study made
before and after a kernel, firmware or setting change. Cells are the values of the ``by``
columns (the swept settings, ``repeat`` left out: repeats are what the interval is made
of); a cell on one side only is listed, not compared. Each run is one repeat (its jobs'
IOPS summed, ``iolab.stats.repeat_stats.per_run``), and each metric of a matched cell gets the
statistics of ``iolab.stats.repeat_stats.compare_values``: B ÷ A - 1 in %, its percentile
bootstrap interval (each side resampled on its own, seeded) joined with the Welch t
interval of the ratio — the Welch end is what keeps two equal settings with 3 repeats a
side from being called different about 1 time in 5.

A change is called (``better`` / ``worse``) when its whole interval is on one side of 0
*and* the change itself is at least ``min_change_pct`` (default 2 %): a shared machine
drifts by a percent or so between two studies made minutes apart (and a rate-limited
or otherwise pinned figure can have an interval a few hundredths of a percent wide), so
a smaller change, however sure, is said as "no difference shown (below 2 %)"; pass 0 to
call every difference the repeats show. A metric with no better direction (CPU busy) is
"higher" or "lower", never worse.

Runs flagged ``shared_cpu`` (other programs took their CPU, ``iolab.read.checks``) are compared
all the same, and every verdict of their cell says so ("shared CPU: A 2 of 3 runs beside other
programs"): a call between them is never made in silence.

``not_comparable`` (a reason, e.g. "the devices differ: vda vs nvme0n1") turns every
verdict into "not comparable: ..." with the figures still shown; ``iolab.compare.sides``
decides it from the two sides' snapshots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.columns import better, label
from ..core.errors import InputError
from ..core.readable import si_number
from ..stats.repeat_stats import METRICS, compare_values, per_run

MIN_CHANGE_PCT = 2.0
NOT_SETTINGS = {"repeat", "run_id"}


@dataclass
class Versus:
    """B against A: ``cells`` (one row per cell and metric), the cells found on one side
    only, the ``by`` columns the cells were matched on."""

    cells: pd.DataFrame
    by: list[str]
    only_a: list[dict] = field(default_factory=list)
    only_b: list[dict] = field(default_factory=list)
    not_comparable: str = ""

    @property
    def worse(self) -> pd.DataFrame:
        """The rows where B is worse than A beyond the interval and the threshold."""
        return self.cells[self.cells["call"] == "worse"]

    def describe(self) -> list[str]:
        """The comparison in lines for a terminal: a header per cell, then a line per metric."""
        lines = []
        groups = self.cells.groupby(self.by, sort=False) if self.by else [((), self.cells)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            if self.by:
                lines.append(", ".join(f"{c} = {k}" for c, k in zip(self.by, key)))
            for r in part.itertuples():
                lines.append(
                    f"  {label(r.metric):<30} A {number(r.mean_a):>8}  B {number(r.mean_b):>8}  "
                    f"B÷A {r.change_pct:+7.1f} %  {r.verdict}"
                )
        lines += [f"only in {side} (not compared): {shown}" for side, shown in self.one_sided()]
        return lines

    def one_sided(self) -> list[tuple[str, str]]:
        """("A" or "B", "qd=64; qd=128") for each side with cells the other lacks."""
        return [
            (side, "; ".join(", ".join(f"{c}={x}" for c, x in cell.items()) for cell in cells))
            for side, cells in (("A", self.only_a), ("B", self.only_b))
            if cells
        ]


def versus(
    a: pd.DataFrame,
    b: pd.DataFrame,
    by: Sequence[str] = (),
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    min_change_pct: float = MIN_CHANGE_PCT,
    not_comparable: str = "",
) -> Versus:
    """Compare table ``b`` against table ``a`` cell by cell (see the module docstring).
    ``metrics`` default: those of ``iolab.stats.repeat_stats.METRICS`` with values on both sides."""
    by = [c.strip() for c in ([by] if isinstance(by, str) else by) if c.strip()]
    for side, table in (("A", a), ("B", b)):
        missing = [c for c in by if c not in table]
        if missing:
            raise InputError(
                f"side {side} has no column {', '.join(map(repr, missing))} to match cells on; "
                "give --by columns both sides have (the settings they swept), or 'none' for one cell"
            )
    runs_a, runs_b = per_run(a, by), per_run(b, by)
    metrics = list(metrics) if metrics else [m for m in METRICS if _has(runs_a, m) and _has(runs_b, m)]
    for m in metrics:
        for side, runs in (("A", runs_a), ("B", runs_b)):
            if not _has(runs, m):
                shown = [c for c in runs.select_dtypes("number") if _has(runs, c) and c not in by]
                raise InputError(f"no {m!r} values on side {side}: choose among {', '.join(shown)}")
    keys_a, keys_b = _cells(runs_a, by), _cells(runs_b, by)
    matched = [k for k in keys_a if k in keys_b]
    if not matched:
        raise InputError(
            f"no cell of A matches a cell of B on {', '.join(by)}: A has {_show_keys(keys_a, by)}, "
            f"B has {_show_keys(keys_b, by)}; pick the columns to match with --by"
        )
    rows = []
    for key in matched:
        part_a, part_b = _select(runs_a, by, key), _select(runs_b, by, key)
        shared = _shared(part_a, part_b)
        for m in metrics:
            row = _row(part_a[m], part_b[m], m, confidence, seed, min_change_pct, not_comparable)
            if shared:  # never a call on runs beside other programs without saying so
                row["verdict"] = f"{row['verdict']}; {shared}"
            rows.append({**dict(zip(by, key)), **row, "shared_cpu": shared})
    return Versus(
        pd.DataFrame(rows),
        by,
        [dict(zip(by, k)) for k in keys_a if k not in keys_b],
        [dict(zip(by, k)) for k in keys_b if k not in keys_a],
        not_comparable,
    )


def _row(va, vb, metric: str, confidence: float, seed: int, min_change_pct: float, not_comparable: str) -> dict:
    c = compare_values(vb, va, metric, "B", "A", confidence, seed)  # no interval when the repeats cannot bound it
    call = _call(c.ratio_pct, c.low_pct, c.high_pct, metric, min_change_pct)
    return {
        "metric": metric,
        "mean_a": c.mean_b,
        "mean_b": c.mean_a,
        "n_a": c.n_b,
        "n_b": c.n_a,
        "change_pct": c.ratio_pct,
        "low_pct": c.low_pct,
        "high_pct": c.high_pct,
        "call": "not comparable" if not_comparable else call,
        "verdict": f"not comparable: {not_comparable}" if not_comparable else _verdict(c, call, min_change_pct),
    }


def _shared(part_a: pd.DataFrame, part_b: pd.DataFrame) -> str:
    """ "shared CPU: A 2 of 3 runs, B 3 of 3 beside other programs" when runs of a side were
    flagged ``shared_cpu`` (``iolab.read.checks``), else ""."""
    said = []
    for side, part in (("A", part_a), ("B", part_b)):
        flagged = part["flags"].fillna("").astype(str).str.contains("shared_cpu:").sum() if "flags" in part else 0
        if flagged:
            said.append(f"{side} {flagged} of {len(part)} runs")
    return f"shared CPU: {', '.join(said)} beside other programs" if said else ""


def _call(change: float, low: float, high: float, metric: str, min_change_pct: float) -> str:
    """'better', 'worse', 'higher', 'lower' or '' (no difference shown)."""
    if math.isnan(low) or low <= 0 <= high or abs(change) < min_change_pct:
        return ""
    way = better(metric)
    if not way:
        return "higher" if change > 0 else "lower"
    return "better" if (change > 0) == (way == "higher") else "worse"


def _verdict(c, call: str, min_change_pct: float) -> str:
    """'B is better by 12 % [8, 16]' in the direction of the call; the interval's
    magnitudes flipped when the better way is down (latency 12 % lower: better by 12 %)."""
    ci = f"[{c.low_pct:+.1f}, {c.high_pct:+.1f}]" if not math.isnan(c.low_pct) else "(no interval)"
    if math.isnan(c.low_pct):
        if min(c.n_a, c.n_b) >= 2:  # compare_values: the repeats spread too far to bound it
            return f"no difference shown: too noisy to bound; as measured {c.ratio_pct:+.1f} %"
        return f"no difference shown: fewer than 2 runs a side; as measured {c.ratio_pct:+.1f} %"
    if not call:
        below = (
            f" (below {min_change_pct:g} %)"
            if not (c.low_pct <= 0 <= c.high_pct) and abs(c.ratio_pct) < min_change_pct
            else ""
        )
        return f"no difference shown{below}: {c.ratio_pct:+.1f} % {ci}"
    size, lo, hi = abs(c.ratio_pct), *sorted((abs(c.low_pct), abs(c.high_pct)))
    return f"B is {call} by {size:.0f} % [{lo:.0f}, {hi:.0f}]" + (
        f" ({label(c.metric).split(' (')[0]})" if call in ("higher", "lower") else ""
    )


def _has(runs: pd.DataFrame, metric: str) -> bool:
    return metric in runs and pd.api.types.is_numeric_dtype(runs[metric]) and runs[metric].notna().any()


def _cells(runs: pd.DataFrame, by: list[str]) -> list[tuple]:
    if not by:
        return [()]
    return list(dict.fromkeys(map(tuple, runs[by].astype(object).itertuples(index=False, name=None))))


def _select(runs: pd.DataFrame, by: list[str], key: tuple) -> pd.DataFrame:
    mask = pd.Series(True, index=runs.index)
    for col, value in zip(by, key):
        mask &= runs[col].astype(object) == value
    return runs[mask]


def _show_keys(keys: list[tuple], by: list[str]) -> str:
    shown = [", ".join(f"{c}={v}" for c, v in zip(by, k)) for k in keys[:6]]
    return "; ".join(shown) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")


def number(x: Any) -> str:
    """A mean as tables show it (si_number: 12.4k, 218M), "-" when there is none."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else si_number(float(x))
