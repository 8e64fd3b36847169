"""The statistics of repeats: intervals of a cell's mean, the cells of a table with their
coefficient of variation and unstable flags, and "is A really better than B?".

    s = summarise(table, by=["scheduler"])          # one row per cell: mean, interval, n, CV, unstable
    c = compare(table, by="scheduler", a="none", b="mq-deadline", metric="iops")
    c.verdict  # 'none is 17 % faster than mq-deadline (IOPS), 95 % CI [12 %, 22 %]'

A repeat is one run (``run_id``): its jobs' and directions' IOPS and bandwidth are summed,
the other columns averaged, and cycles per IO recomputed from the sums
(``cycles.add_cycles_per_io``); jobs that did no I/O are left out (``per_run``).

Intervals over the repeats of a cell:

- means of IOPS, bandwidth, CPU busy and the other additive figures: Student-t
  (``t_interval``);
- percentile columns (``clat_p99_us``, ...) and ratios (``cycles_per_io``, request sizes):
  a percentile bootstrap of the mean over repeats, seeded, so the same table gives the
  same interval — joined with the t interval (the lower of the two lows, the higher of
  the highs). The bootstrap follows a skewed tail; alone, with few repeats, it is too
  narrow: it cannot see spread the repeats did not show (with three repeats it is their
  range, which holds the mean about 3 times in 4, not 19 in 20), so with 3-10 repeats
  the t interval is most of the answer.

A cell is *unstable* (as pyperf warns) when a metric's coefficient of variation over
repeats is above ``cv_threshold``; ``unstable_why`` names the metric and, when the table
shows it, the likely cause: the CPU frequency changed between repeats
(``cpu_freq_mhz``), the pinned CPU was busier than fio itself (``cpu_busy_pct`` beyond
fio's own usr+sys and interrupts: other load), or the hypervisor took time from it (a cell
mean ``cpu_steal_pct`` or ``host_steal_pct`` above ``STEAL_PCT``); else the device's or the
host's own variance. Every cell carries the mean of the samplers' noise columns
(``NOISE``: steal, iowait and other load, as ``iolab.machine.sampling`` records them per run) when
the table has them, so a reader can tell the device from the host beside the intervals.

``compare`` bootstraps the ratio of the two means, each side resampled on its own
(Welch-style: unequal spread and counts), joined with the Welch t interval of the ratio
the same way; then says the difference in words: faster / slower for IOPS,
bandwidth and latency, less / more CPU for cycles per IO. The Welch floor matters: with
3 runs a side the bootstrap alone calls two equal settings different about 1 time in 5
(simulated, normal runs), the Welch interval 1 in 25.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.columns import better, bounds, clipped, interval_method, label, nonnegative, summed, unit
from ..core.errors import InputError
from ..core.readable import BYTE_UNITS, interval_text, percent, readable_bytes, readable_value
from .cycles import add_cycles_per_io

METRICS = ("iops", "bw_bytes_s", "clat_p50_us", "clat_p99_us", "cpu_busy_pct", "cycles_per_io")
RESAMPLES = 10_000
FREQ_SPREAD_PCT = 2.0  # cpu_freq_mhz max-min across repeats, % of the mean: "frequency changed"
OTHER_LOAD_POINTS = 10.0  # pinned CPUs busy beyond fio's usr+sys and interrupts, % of one CPU
STEAL_PCT = 5.0  # mean hypervisor steal in a cell, % (iolab.read.samples.STEAL_FLAG_PCT)
NOISE = ("cpu_steal_pct", "host_steal_pct", "cpu_iowait_pct", "other_cpu_pct")  # cell means
MIN_REPEATS = 3  # values of a mean that give it an interval (``interval``)
NO_INTERVAL = f"no interval: fewer than {MIN_REPEATS} repeats"  # the one wording, in tables and sentences


# ---------------------------------------------------------------- repeats
def per_run(table: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run (a repeat) of each cell ``by``: IOPS and bandwidth summed over the
    run's jobs and directions, other numbers averaged, ``cycles_per_io`` recomputed from
    the sums when the sampler columns are there. Rows of jobs that did no I/O are dropped.
    Adds ``fio_cpu_pct`` (fio's usr+sys, % of one CPU, summed over jobs) and
    ``other_load_pct`` (busy CPU time on the pinned CPUs beyond fio's own and interrupts,
    % of one CPU) when the columns for them are there. Without ``run_id`` a row is a run."""
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in by if c not in table]
    if missing:
        raise InputError(
            f"no column {', '.join(map(repr, missing))} in the table: group by some of {', '.join(table.columns)}"
        )
    io = table[table["direction"] != "none"] if "direction" in table else table
    io = io.drop(columns=["fio_cpu_pct", "other_load_pct"], errors="ignore").reset_index(drop=True)  # re-derived
    if "run_id" not in io:
        io = io.assign(run_id=[f"row{i}" for i in io.index])
    keys = by + ["run_id"]
    numeric = [c for c in io.select_dtypes("number").columns if c not in keys]
    agg = {c: ("sum" if summed(c) else "mean") for c in numeric}
    agg |= {c: "first" for c in io.columns if c not in keys and c not in agg}
    runs = io.groupby(keys, sort=False, dropna=False).agg(agg).reset_index()
    if {"usr_cpu_pct", "sys_cpu_pct"} <= set(io):
        jobs = io.groupby(keys + (["job_index"] if "job_index" in io else []), sort=False, dropna=False)
        own = (
            jobs[["usr_cpu_pct", "sys_cpu_pct"]]
            .first()
            .sum(axis=1)  # a job's rows share its rusage
            .groupby(level=keys, sort=False, dropna=False)
            .sum()
            .rename("fio_cpu_pct")
            .reset_index()
        )
        runs = runs.merge(own, on=keys, how="left")
        if {"cpu_busy_pct", "cpus_sampled"} <= set(runs):
            irq = sum(runs[c] for c in ("cpu_irq_pct", "cpu_softirq_pct") if c in runs)
            runs["other_load_pct"] = (runs["cpu_busy_pct"] - irq) * runs["cpus_sampled"] - runs["fio_cpu_pct"]
    if {"cpu_busy_pct", "cpus_sampled", "cpu_freq_mhz", "iops"} <= set(runs):
        runs = add_cycles_per_io(runs)  # a run's own figures: fio's own CPU (or its rusage) over its IOPS
    return runs


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (repeats of one setting):
    (low, high); NaN for fewer than two values. Used for every "mean and interval" figure."""
    from scipy import (
        stats,
    )  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab (15 s in the NVMe lab)

    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return math.nan, math.nan
    half = stats.t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def bootstrap_interval(
    values: Sequence[float], confidence: float = 0.95, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (repeats): ``resamples``
    resamples with replacement from ``numpy.random.default_rng(seed)``. NaN for fewer than
    two values."""
    v = _clean(values)
    if len(v) < 2:
        return math.nan, math.nan
    means = v[np.random.default_rng(seed).integers(0, len(v), (resamples, len(v)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def interval(values: Sequence[float], metric: str, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """The interval of the mean of a metric's repeats, by ``columns.interval_method(metric)``: Student-t, or
    for a bootstrap metric the bootstrap and t intervals joined (``joined``), computed where the
    quantity lives (``columns.bounds``):

    - a quantity that cannot be negative (IOPS, bandwidth, latency, cycles per IO, counts): on
      the log scale (Student t of the logs, back through exp), so both ends are positive;
    - a change 100 x (a/b - 1) (from -100 %): on the log of the ratio a/b, never -100 %;
    - a share (0-100 %): Student t held within 0 and 100 %; anything else: Student t as it is.

    NaN, NaN with fewer than ``MIN_REPEATS`` (3) values: with two repeats Student's t at
    95 % is 12.7, so the interval is ±9 standard deviations of the pair and says nothing
    ("94,725 [-162,033, 351,483]"); tables print ``NO_INTERVAL`` instead. NaN, NaN too when the
    repeats cannot bound the value (``bounded``: a positive quantity's interval spanning more
    than ``MAX_SPAN`` times, or reaching 0); tables print ``no_interval_words`` ("too noisy to
    bound: CV 63 %") and a recorded result carries no interval."""
    v = _clean(values)
    if len(v) < MIN_REPEATS:
        return math.nan, math.nan
    floor, ceiling = bounds(metric)
    if floor == 0 and ceiling == math.inf and (v > 0).all():
        low, high = (float(np.exp(x)) for x in t_interval(np.log(v), confidence))
    elif floor == -100 and ceiling == math.inf and (v > -100).all():
        low, high = (float(100 * np.expm1(x)) for x in t_interval(np.log1p(v / 100), confidence))
    else:
        low, high = t_interval(v, confidence)
    if interval_method(metric) == "bootstrap":
        low, high = joined(bootstrap_interval(v, confidence, seed), (low, high))
    low, high = clipped(low, high, metric) if ceiling < math.inf else (low, high)
    return (low, high) if bounded(low, high, metric, v) else (math.nan, math.nan)


MAX_SPAN = 10.0  # a positive quantity's interval wider than 10x (high / low) does not bound it


def bounded(low: float, high: float, metric: str, values: Sequence[float] = ()) -> bool:
    """Whether ``(low, high)`` bounds ``metric`` in a way worth printing: for a quantity that
    cannot be negative, a low end above 0 (unless every repeat was 0) and a high end at most
    ``MAX_SPAN`` times it; for a change from -100 %, a low end above -100 % and (as ratios) the
    same span; anything else, two finite ends."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return False
    floor, ceiling = bounds(metric)
    if ceiling < math.inf or floor == -math.inf:
        return True  # a share, or a quantity with no floor
    if floor == 0:
        if len(values) and not np.any(_clean(values)):
            return True  # every repeat 0: [0, 0] is what was measured
        return low > 0 and high <= MAX_SPAN * low
    ratio_low, ratio_high = 1 + low / 100, 1 + high / 100  # a change: its ratio
    return ratio_low > 0 and ratio_high <= MAX_SPAN * ratio_low


def no_interval_words(n: float | None = None, cv: float | None = None) -> str:
    """Why a mean is shown without an interval: ``NO_INTERVAL`` with fewer than ``MIN_REPEATS``
    runs, "too noisy to bound: CV 63 %" when there were enough but they spread too far
    (``bounded``), "no interval" when neither is known."""
    if n is not None and n == n and n < MIN_REPEATS:
        return NO_INTERVAL
    if cv is not None and cv == cv:
        return f"too noisy to bound: CV {cv:.0f} %"
    return "too noisy to bound" if n is not None and n == n else "no interval"


def welch_ratio_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Interval of 100 x (mean a / mean b - 1) by the delta method on the log of the ratio: its
    variance is the sum of the two means' relative variances (s² / (n m²)), with
    Welch-Satterthwaite degrees of freedom, so the low end stays above -100 %. NaN with fewer
    than two values on a side."""
    from scipy import (
        stats,
    )  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab (15 s in the NVMe lab)

    a, b = _clean(a), _clean(b)
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    ratio = a.mean() / b.mean()
    ua, ub = a.var(ddof=1) / (len(a) * a.mean() ** 2), b.var(ddof=1) / (len(b) * b.mean() ** 2)
    if ua + ub == 0 or ratio <= 0:
        return 100 * (ratio - 1), 100 * (ratio - 1)
    df = (ua + ub) ** 2 / (ua**2 / (len(a) - 1) + ub**2 / (len(b) - 1))
    half = stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(ua + ub)  # on log(ratio): never below -100 %
    return 100 * (ratio * math.exp(-half) - 1), 100 * (ratio * math.exp(half) - 1)


def joined(x: tuple[float, float], y: tuple[float, float]) -> tuple[float, float]:
    """The lower of two intervals' lows and the higher of their highs (NaN if either is)."""
    if math.isnan(x[0]) or math.isnan(y[0]):
        return math.nan, math.nan
    return min(x[0], y[0]), max(x[1], y[1])


def cv_pct(values: Sequence[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean, %); NaN below two values."""
    v = _clean(values)
    return float(100 * v.std(ddof=1) / abs(v.mean())) if len(v) > 1 and v.mean() else math.nan


# ---------------------------------------------------------------- summary per cell
def summarise(
    table: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str] = METRICS,
    cv_threshold: float = 0.10,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per cell ``by``: for each metric ``<m>_mean``, ``<m>_ci_low``, ``<m>_ci_high``
    (``columns.interval_method(m)``: t or seeded bootstrap) and ``<m>_cv_pct``; ``n`` (runs in the cell);
    ``unstable`` (a metric's CV above ``cv_threshold``, a fraction: 0.10 = 10 %) and
    ``unstable_why`` (which metric, and the likely cause the table shows); the cell means
    of the ``NOISE`` columns the table has. Metrics the table lacks are left out when they
    are the defaults, refused when named."""
    by = [by] if isinstance(by, str) else list(by)
    runs = per_run(table, by)
    absent = [m for m in metrics if m not in runs]
    if metrics is not METRICS and absent:
        raise InputError(
            f"no metric {', '.join(map(repr, absent))} in the table: choose from "
            f"{', '.join(runs.select_dtypes('number').columns)}"
        )
    metrics = [m for m in metrics if m in runs]
    rows = []
    for key, cell in runs.groupby(by, sort=False, dropna=False) if by else [((), runs)]:
        row: dict[str, Any] = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row["n"] = len(cell)
        noisy = []
        for m in metrics:
            v = _clean(cell[m])
            low, high = interval(v, m, confidence, seed)
            cv = cv_pct(v)
            row |= {
                f"{m}_mean": float(v.mean()) if len(v) else math.nan,
                f"{m}_ci_low": low,
                f"{m}_ci_high": high,
                f"{m}_cv_pct": cv,
            }
            if cv > 100 * cv_threshold:
                noisy.append(f"{_words(m)} CV {cv:.0f} %")
        for c in NOISE:
            if c in cell:
                v = _clean(cell[c])
                row[c] = float(v.mean()) if len(v) else math.nan
        row["unstable"] = bool(noisy)
        row["unstable_why"] = f"{', '.join(noisy)} > {100 * cv_threshold:g} %; likely: {_causes(cell)}" if noisy else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _causes(cell: pd.DataFrame) -> str:
    """What the samplers saw in an unstable cell's repeats."""
    found = []
    if "cpu_freq_mhz" in cell:
        f = _clean(cell["cpu_freq_mhz"])
        if len(f) > 1 and 100 * (f.max() - f.min()) / f.mean() > FREQ_SPREAD_PCT:
            src = f", {cell['freq_source'].iloc[0]}" if "freq_source" in cell else ""
            found.append(f"the CPU frequency changed ({f.min():,.0f}-{f.max():,.0f} MHz across repeats{src})")
    other = _clean(cell["other_cpu_pct"]) if "other_cpu_pct" in cell else np.array([])
    if len(other) and other.mean() > OTHER_LOAD_POINTS:
        found.append(
            f"other load on the pinned CPUs (mean {other.mean():.0f} % of their time beyond "
            f"fio's own usr+sys, an estimate)"
        )
    elif "other_load_pct" in cell:
        extra = _clean(cell["other_load_pct"])
        if len(extra) and extra.max() > OTHER_LOAD_POINTS:
            found.append(
                f"other load on the pinned CPU (up to {extra.max():.0f} % of a CPU busy beyond "
                f"fio's own usr+sys and interrupts)"
            )
    for c, where in (("cpu_steal_pct", "the pinned CPUs"), ("host_steal_pct", "the machine")):
        steal = _clean(cell[c]) if c in cell else np.array([])
        if len(steal) and steal.mean() > STEAL_PCT:
            found.append(
                f"hypervisor steal (mean {steal.mean():.0f} % of {where}' time)".replace("machine'", "machine's")
            )
            break
    return " and ".join(found) or "the device's or host's own variance"


def readable(summary: pd.DataFrame, digits: int = 0) -> pd.DataFrame:
    """A summary as text for a table: each metric ``mean [low, high]`` with its CV (sizes and
    bandwidths in binary units: 263 MiB/s), the cell columns, ``n`` and the unstable flag and
    reason."""
    metrics = [c[:-5] for c in summary.columns if c.endswith("_mean")]
    cells = [
        c
        for c in summary.columns
        if not c.startswith(tuple(f"{m}_" for m in metrics)) and c not in ("n", "unstable", "unstable_why", *NOISE)
    ]
    out = summary[cells + ["n"]].copy()

    def fmt(x: float) -> str:
        return "–" if pd.isna(x) else f"{x:,.{digits if abs(x) >= 10 else max(digits, 1)}f}"

    for m in metrics:
        per = BYTE_UNITS.get(unit(m))  # bytes in KiB ... GiB, the unit in the cells rather than the header
        show = fmt if per is None else (lambda x, per=per: "–" if pd.isna(x) else readable_bytes(repr(float(x)), per))
        out[label(m) if per is None else _words(m)] = [
            f"{show(r[f'{m}_mean'])}"
            + (
                f" ({no_interval_words(r['n'], r[f'{m}_cv_pct'])})"
                if pd.isna(r[f"{m}_ci_low"])
                else f" [{show(r[f'{m}_ci_low'])}, {show(r[f'{m}_ci_high'])}] CV {r[f'{m}_cv_pct']:.1f} %"
            )
            for _, r in summary.iterrows()
        ]
    for c in NOISE:
        if c in summary:
            out[label(c)] = [fmt(x) for x in summary[c]]
    out["unstable"] = summary["unstable"].map({True: "unstable", False: ""})
    out["why"] = summary["unstable_why"]
    return out


NBSP = "\u00a0"  # a cell's interval stays on one line: a browser breaks at spaces


def summary_table(summary: pd.DataFrame, note: str = "") -> pd.DataFrame:
    """A ``summarise`` table as a write-up shows it (notebooks 03 and 06; ``readable`` keeps each
    CV): the setting columns and ``runs``, then one column per metric headed with its words and unit (``columns.label``) and
    "[95 % interval]" (where a row has one), each cell "mean [low, high]" on one line, the ends within what the
    quantity can be (``columns.clipped``); a last column ``note``: ``note`` when given, why a
    row has no interval (fewer than 3 runs), and for an unstable setting which metrics vary
    over the repeats and the likely cause the samplers saw (``unstable_why``)."""
    metrics = [c[: -len("_mean")] for c in summary.columns if c.endswith("_mean")]
    settings = [
        c
        for c in summary.columns
        if not c.startswith(tuple(f"{m}_" for m in metrics)) and c not in ("n", "unstable", "unstable_why", *NOISE)
    ]  # the samplers' noise means (NOISE) left out: the note names them where they matter
    out = pd.DataFrame({label(c): summary[c].map(_setting_text) for c in settings})
    out["runs"] = summary["n"].map(readable_value)
    for m in metrics:  # the header promises an interval only where a row of the column has one
        bounded_any = any(pd.notna(clipped(r[f"{m}_ci_low"], r[f"{m}_ci_high"], m)[0]) for _, r in summary.iterrows())
        out[label(m) + (" [95 % interval]" if bounded_any else "")] = [
            _interval_cell(r, m) for _, r in summary.iterrows()
        ]
    out["note"] = [_row_note(row, metrics, note) for _, row in summary.iterrows()]
    return out.reset_index(drop=True)


def _setting_text(value: Any) -> str:
    """A setting as written: 8, not 8.00 (a float column of whole numbers)."""
    whole = isinstance(value, float) and value == value and value.is_integer()
    return readable_value(int(value) if whole else value)


def _interval_cell(row: pd.Series, metric: str) -> str:
    """'128,341 [76,725, 179,957]', a line break allowed only before the interval (a narrow
    column shows the mean over it); the mean alone without an interval."""
    low, high = clipped(row[f"{metric}_ci_low"], row[f"{metric}_ci_high"], metric)
    mean = readable_value(row[f"{metric}_mean"])
    if pd.isna(low) or pd.isna(high):
        return mean if row.get("n", 0) < MIN_REPEATS else f"{mean} (too noisy to bound)"  # its CV: the note's
    return f"{mean} " + interval_text(readable_value(low), readable_value(high)).replace(" ", NBSP)


def _row_note(row: pd.Series, metrics: Sequence[str], note: str) -> str:
    said = [note] if note else []
    if all(pd.isna(row[f"{m}_ci_low"]) for m in metrics):
        said.append(NO_INTERVAL)
    if isinstance(row.get("unstable_why"), str) and row["unstable_why"]:
        said.append(f"unstable: {row['unstable_why']}")
    return "; ".join(said)


# ---------------------------------------------------------------- A vs B
@dataclass
class Comparison:
    """A against B on one metric: ``ratio_pct`` = 100 x (mean A / mean B - 1) with its
    interval (the bootstrap and the Welch t joined; NaN with one run on a side), the runs on each side and the verdict
    in words. ``better`` is the side the interval shows better (None: no difference shown,
    or the metric has no better direction)."""

    ratio_pct: float
    low_pct: float
    high_pct: float
    n_a: int
    n_b: int
    verdict: str
    metric: str = ""
    a: Any = None
    b: Any = None
    mean_a: float = math.nan
    mean_b: float = math.nan
    confidence: float = 0.95
    better: Any = None
    method: str = ""  # what set the ends: "bootstrap", "Welch t" or "bootstrap and Welch t"

    def __str__(self) -> str:
        return self.verdict


def compare(
    table: pd.DataFrame,
    by: str = "scheduler",
    a: Any = "none",
    b: Any = "mq-deadline",
    metric: str = "iops",
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """Is ``a`` really better than ``b`` on ``metric``? The runs where column ``by`` is ``a``
    against those where it is ``b`` (filter the table first when other settings vary):
    the ratio of the means and its percentile bootstrap interval (each side resampled on
    its own, ``numpy.random.default_rng(seed)``) joined with its Welch t interval
    (``welch_ratio_interval``, the guard with few repeats), with a verdict such as 'none is 17 %
    faster than mq-deadline (IOPS), 95 % CI [12 %, 22 %]' or 'no difference the repeats
    can show'. Higher is better for IOPS and bandwidth, lower for latency (faster /
    slower) and cycles per IO (less / more CPU)."""
    runs = per_run(table, [by])
    if metric not in runs:
        raise InputError(
            f"no metric {metric!r} in the table: choose from {', '.join(runs.select_dtypes('number').columns)}"
        )
    va, vb = (runs.loc[runs[by] == side, metric] for side in (a, b))
    for side, v in ((a, va), (b, vb)):
        if not len(_clean(v)):
            raise InputError(
                f"no run with {by}={side!r} and a {metric} value: the table has "
                f"{by} = {', '.join(map(str, runs[by].unique()))}"
            )
    return compare_values(va, vb, metric, a, b, confidence, seed)


def compare_values(
    values_a: Sequence[float],
    values_b: Sequence[float],
    metric: str,
    a: Any = "A",
    b: Any = "B",
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """``compare`` on the repeats themselves: one value of ``metric`` per run on each side
    (NaN dropped). The ratio is mean A / mean B; its interval the seeded bootstrap of the
    ratio (each side resampled on its own) joined with the Welch t interval."""
    va, vb = _clean(values_a), _clean(values_b)
    if not len(va) or not len(vb):
        raise InputError(f"{metric}: no value on the side of {a if not len(va) else b}; compare needs runs on both")
    if vb.mean() <= 0 or va.mean() < 0:
        raise InputError(f"{metric} of {b!r} is {vb.mean():g}: a ratio needs positive means")
    ratio = 100 * (va.mean() / vb.mean() - 1)
    c = Comparison(
        ratio, math.nan, math.nan, len(va), len(vb), "", metric, a, b, float(va.mean()), float(vb.mean()), confidence
    )
    if len(va) < 2 or len(vb) < 2:
        who = "one run each" if len(va) == len(vb) == 1 else f"one run of {a if len(va) < 2 else b}"
        c.verdict = f"{who}: {NO_INTERVAL}; as measured, {_says(c, ratio, ratio, ratio)}"
        return c
    rng = np.random.default_rng(seed)
    ma = va[rng.integers(0, len(va), (RESAMPLES, len(va)))].mean(axis=1)
    mb = vb[rng.integers(0, len(vb), (RESAMPLES, len(vb)))].mean(axis=1)
    boot = tuple(float(q) for q in np.quantile(100 * (ma / mb - 1), [(1 - confidence) / 2, (1 + confidence) / 2]))
    welch = welch_ratio_interval(va, vb, confidence)
    low, high = joined(boot, welch)
    c.method = " and ".join(
        name for name, ends in (("bootstrap", boot), ("Welch t", welch)) if low == ends[0] or high == ends[1]
    )
    if nonnegative(metric) and not bounded(low, high, "ratio_pct"):  # A cannot do less than nothing (-100 %)
        c.verdict = (
            f"too noisy to tell: {a} vs {b} {ratio:+.1f} % ({_words(metric)}) as measured, but the repeats "
            f"(n = {len(va)} and {len(vb)}, CV {cv_pct(va):.0f} % and {cv_pct(vb):.0f} %) cannot bound the difference"
        )
        return c
    c.low_pct, c.high_pct = low, high
    if low <= 0 <= high:
        c.verdict = (
            f"no difference the repeats can show: {a} vs {b} {ratio:+.1f} % ({_words(metric)}), "
            f"{100 * confidence:g} % CI [{low:+.1f} %, {high:+.1f} %], n = {len(va)} and {len(vb)}"
        )
        return c
    c.verdict = _says(c, ratio, low, high)
    if better(metric):
        c.better = a if (ratio > 0) == (better(metric) == "higher") else b
    return c


def _says(c: Comparison, ratio: float, low: float, high: float) -> str:
    """'none is 17 % faster than mq-deadline (IOPS), 95 % CI [12 %, 22 %]': the magnitudes
    in the verdict's own direction."""
    up = ratio > 0
    size, lo, hi = (ratio, low, high) if up else (-ratio, -high, -low)
    m = c.metric
    if better(m) == "higher":
        what = f"is {percent(size)} {'faster' if up else 'slower'} than {c.b} ({_words(m)})"
    elif unit(m) == "cycles/IO":  # a CPU cost per IO
        what = f"uses {percent(size)} {'more' if up else 'less'} CPU per IO than {c.b} ({_words(m)})"
    elif better(m) == "lower":
        what = (
            f"is {'slower' if up else 'faster'}: {_words(m)} {percent(size)} {'higher' if up else 'lower'} than {c.b}"
        )
    else:
        what = f"has {percent(size)} {'higher' if up else 'lower'} {_words(m)} than {c.b}"
    ci = "" if math.isnan(lo) or lo == hi else f", {100 * c.confidence:g} % CI [{percent(lo)}, {percent(hi)}]"
    return f"{c.a} {what}{ci}"


def _words(metric: str) -> str:
    return label(metric).split(" (")[0]


def _clean(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v[~np.isnan(v)]
