"""Analyses of tidy tables: the queue-depth knee, saturation, latency targets, cycles per IO,
Little's law, and repeats -> mean / spread / confidence interval.

Each function implements one method, names its source, states units, and returns a result
that carries its intermediates (and, when it finds nothing, a reason).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from kneed import KneeLocator
from scipy import stats

from .errors import InputError


# ---------------------------------------------------------------- knee (Kneedle)
@dataclass
class Knee:
    """Result of :func:`find_knee`. ``x is None`` means no knee, with ``reason`` saying why."""
    x: float | None
    y: float | None
    method: str
    reason: str = ""
    log2_x: bool = True
    x_used: list[float] = field(default_factory=list)
    y_used: list[float] = field(default_factory=list)
    difference: list[float] = field(default_factory=list)


def find_knee(x: Sequence[float], y: Sequence[float], *, log2_x: bool = True, S: float = 1.0,
              curve: str = "concave", direction: str = "increasing", online: bool = True) -> Knee:
    """Knee of a saturating curve (IOPS vs queue depth) by Kneedle.

    Kneedle: V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a
    Haystack: Detecting Knee Points in System Behavior", ICDCS Workshops 2011; via the
    ``kneed`` package (interp1d, so the knee is one of the sampled x). Queue depths are
    geometric, so x is taken as log2(x) by default (the knee is returned in the original
    units). Repeated x are averaged first. "No knee" is a valid answer: ``Knee.x is None``,
    also for a curve that does not go the way ``direction`` says (an "increasing" curve whose
    y never rises above its first value: Kneedle would name a point of a falling curve).
    x <= 0 on the log2 axis is refused (InputError): log2 is undefined there.
    """
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    frame = frame.groupby("x", as_index=False)["y"].mean().sort_values("x")
    method = f"kneedle (kneed, S={S}, {curve}/{direction}{', log2 x' if log2_x else ''})"
    if log2_x and (frame["x"] <= 0).any():
        bad = ", ".join(f"{v:g}" for v in frame.loc[frame["x"] <= 0, "x"])
        raise InputError(f"x = {bad} cannot go on a log2 axis (log2 needs x > 0); drop those rows, "
                         "or use a linear x axis (--linear in `iolab knee`, log2_x=False in Python)")
    if len(frame) < 3:
        return Knee(None, None, method, f"need at least 3 distinct x values, got {len(frame)}", log2_x)
    xs = np.log2(frame["x"].to_numpy()) if log2_x else frame["x"].to_numpy()
    ys = frame["y"].to_numpy()
    if np.ptp(ys) == 0:
        return Knee(None, None, method, "y is flat: no knee", log2_x, list(frame.x), list(ys))
    never = ys.max() <= ys[0] if direction == "increasing" else ys.min() >= ys[0]
    if never:
        way = "rises above" if direction == "increasing" else "falls below"
        return Knee(None, None, method, f"y never {way} its value at the first x ({ys[0]:g} at x="
                    f"{frame.x.iloc[0]:g}; {ys[-1]:g} at x={frame.x.iloc[-1]:g}): the curve is not "
                    f"{direction}, so it has no knee", log2_x, list(frame.x), list(ys))
    kl = KneeLocator(xs, ys, S=S, curve=curve, direction=direction, online=online,
                     interp_method="interp1d")
    diff = list(getattr(kl, "y_difference", []))
    if kl.knee is None:
        return Knee(None, None, method, "Kneedle found no point that leaves the straight line "
                    "from first to last point by its threshold (curve too straight or too few points)",
                    log2_x, list(frame.x), list(ys), diff)
    knee_x = float(2 ** kl.knee) if log2_x else float(kl.knee)
    knee_x = float(frame.x.iloc[np.argmin(np.abs(frame.x.to_numpy() - knee_x))])  # exact sample
    knee_y = float(frame.loc[frame.x == knee_x, "y"].iloc[0])
    return Knee(knee_x, knee_y, method, "", log2_x, list(frame.x), list(ys), diff)


def saturation_point(x: Sequence[float], y: Sequence[float], fraction: float = 0.95) -> float | None:
    """Smallest x whose y reaches ``fraction`` of the maximum y (the rule-based knee:
    "the smallest queue depth reaching 95 % of max IOPS"). Never None on non-empty data."""
    frame = pd.DataFrame({"x": x, "y": y}).dropna().groupby("x")["y"].mean().sort_index()
    if frame.empty:
        return None
    reached = frame[frame >= fraction * frame.max()]
    return float(reached.index[0])


def max_x_under(x: Sequence[float], latency: Sequence[float], target: float) -> float | None:
    """Largest x whose latency stays at or under ``target`` (same unit), e.g. the largest
    queue depth whose p99 is under 200 µs. None if no x meets it."""
    frame = pd.DataFrame({"x": x, "lat": latency}).dropna().groupby("x")["lat"].mean()
    ok = frame[frame <= target]
    return float(ok.index.max()) if not ok.empty else None


# ---------------------------------------------------------------- cycles per IO
@dataclass
class CyclesPerIO:
    cycles_per_io: float
    busy_cpu_s: float
    freq_hz: float
    ios: float
    freq_source: str
    method: str = "busy CPU seconds x frequency / IOs"


def cycles_per_io(busy_cpu_s: float, freq_hz: float, ios: float,
                  freq_source: str = "given") -> CyclesPerIO:
    """CPU cycles spent per IO = busy CPU seconds x frequency (Hz) / IOs.

    Seed 001: one core fully busy at 3.9 GHz doing 450k IOPS for 1 s
    -> 1.0 x 3.9e9 / 450e3 = 8,666.7 cycles/IO. ``freq_source`` travels with the figure,
    because a nominal /proc/cpuinfo frequency is not a measured clock."""
    value = busy_cpu_s * freq_hz / ios if ios else math.nan
    return CyclesPerIO(value, busy_cpu_s, freq_hz, ios, freq_source)


def add_cycles_per_io(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``cycles_per_io`` to a run table that has sampler columns (cpu_busy_pct,
    cpus_sampled, cpu_freq_mhz, freq_source) and fio columns (iops).

    busy CPU·s per second = cpu_busy_pct/100 x cpus_sampled, so
    cycles/IO = busy fraction x CPUs x f / IOPS — the same as busy_s x f / IOs."""
    out = table.copy()
    busy_per_s = out["cpu_busy_pct"] / 100.0 * out["cpus_sampled"]
    out["cycles_per_io"] = busy_per_s * out["cpu_freq_mhz"] * 1e6 / out["iops"].where(out["iops"] > 0)
    if "perf_cycles" in out:
        # perf stat counted over its own window: IOs in it = IOPS x window
        ios = out["iops"] * out["perf_window_s"]
        out["cycles_per_io_perf"] = out["perf_cycles"] / ios.where(ios > 0)
        out["cycles_per_io_disagreement_pct"] = 100 * (out["cycles_per_io_perf"] / out["cycles_per_io"] - 1)
    return out


# ---------------------------------------------------------------- Little's law
@dataclass
class LittlesLaw:
    qd: float
    estimated_qd: float
    ratio: float
    flagged: bool
    note: str


def littles_law(qd: float, iops: float, mean_latency_us: float, tolerance: float = 0.20) -> LittlesLaw:
    """Check QD ≈ IOPS x mean latency (Little's law, L = λW). Flagged when the estimate is
    off by more than ``tolerance`` (20 %): then the queue was not kept full (CPU-bound
    submitter, think time, batching), or the latency is not the one the queue sees."""
    est = iops * mean_latency_us / 1e6
    ratio = est / qd if qd else math.nan
    flagged = not (abs(ratio - 1.0) <= tolerance)
    note = (f"IOPS x mean latency = {est:.2f} outstanding IOs vs iodepth {qd:g} "
            f"({ratio:.0%})" + (": the queue was not kept full" if flagged and ratio < 1 else
                                ": more outstanding than iodepth" if flagged else ""))
    return LittlesLaw(qd, est, ratio, flagged, note)


# ---------------------------------------------------------------- repeats
def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (repeats of one setting):
    (low, high); NaN for fewer than two values. Used for every "mean and interval" figure."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return math.nan, math.nan
    half = stats.t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def summarise_repeats(table: pd.DataFrame, by: Sequence[str], value: str,
                      confidence: float = 0.95) -> pd.DataFrame:
    """Mean, standard deviation, coefficient of variation and a Student-t confidence
    interval of ``value`` over repeats, per group ``by``. n = 1 gives NaN spread."""
    g = table.groupby(list(by))[value]
    out = g.agg(["mean", "std", "count", "min", "max"]).reset_index()
    t = out["count"].map(lambda n: stats.t.ppf(0.5 + confidence / 2, n - 1) if n > 1 else math.nan)
    half = t * out["std"] / np.sqrt(out["count"])
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    out["cv_pct"] = 100 * out["std"] / out["mean"]
    return out.rename(columns={c: f"{value}_{c}" for c in
                               ("mean", "std", "count", "min", "max", "ci_low", "ci_high", "cv_pct")})


# ---------------------------------------------------------------- the QD study table
def qd_summary(table: pd.DataFrame, x: str = "qd", latency_target_us: float | None = None) -> pd.DataFrame:
    """One row per queue depth: mean IOPS, clat p50/p99 (µs), CPU busy (%), cycles/IO and
    its frequency source, and the Little's-law check. Means are over repeats and jobs'
    directions that did I/O."""
    io = table[table["direction"] != "none"]
    cols = {c: "mean" for c in ("iops", "clat_mean_us", "clat_p50_us", "clat_p99_us",
                                "lat_mean_us", "cpu_busy_pct", "cpu_freq_mhz", "cycles_per_io")
            if c in io}
    out = io.groupby(x).agg({**cols, "run_id": "nunique"}).rename(columns={"run_id": "runs"})
    if "freq_source" in io:
        out["freq_source"] = io.groupby(x)["freq_source"].first()
    lat = out["lat_mean_us"].fillna(out["clat_mean_us"]) if "lat_mean_us" in out else out["clat_mean_us"]
    checks = [littles_law(q, i, m) for q, i, m in zip(out.index, out["iops"], lat)]
    out["littles_qd"] = [c.estimated_qd for c in checks]
    out["littles_ok"] = [not c.flagged for c in checks]
    if latency_target_us is not None:
        out["p99_under_target"] = out["clat_p99_us"] <= latency_target_us
    return out.reset_index()


def describe_qd_study(summary: pd.DataFrame, knee: Knee, saturation_qd: float | None,
                      latency_qd: float | None, latency_target_us: float | None = None) -> str:
    """The reading of a queue-depth sweep in words, with its numbers."""
    best = summary.loc[summary["iops"].idxmax()]
    parts = [f"Peak: {best['iops']:,.0f} IOPS at QD {best['qd']:g}."]
    if knee.x is not None:
        parts.append(f"Kneedle puts the knee at QD {knee.x:g} ({knee.y:,.0f} IOPS); "
                     "beyond it extra queue depth buys little IOPS and adds latency.")
    else:
        parts.append(f"No knee: {knee.reason}.")
    if saturation_qd is not None:
        parts.append(f"QD {saturation_qd:g} is the smallest reaching 95 % of the peak.")
    if latency_target_us is not None:
        parts.append(f"The largest QD with p99 ≤ {latency_target_us:g} µs is "
                     f"{'QD %g' % latency_qd if latency_qd is not None else 'none (every QD exceeds it)'}.")
    if "cpu_busy_pct" in summary and summary["cpu_busy_pct"].notna().any():
        top = summary.loc[summary["iops"].idxmax()]
        parts.append(f"At the peak the pinned CPU is {top['cpu_busy_pct']:.0f} % busy"
                     + (" — CPU-bound, as the seed 000 E-core was." if top["cpu_busy_pct"] > 90 else "."))
    if "cycles_per_io" in summary and summary["cycles_per_io"].notna().any():
        src = summary["freq_source"].iloc[0] if "freq_source" in summary else "?"
        parts.append(f"Cycles per IO at the peak: {best['cycles_per_io']:,.0f} (frequency from {src}"
                     + (", a nominal clock: this machine has no cpufreq" if src == "proc_cpuinfo" else "")
                     + "); seed 001 measured 8,666 on a 3.9 GHz Threadripper core.")
    bad = summary[~summary["littles_ok"]] if "littles_ok" in summary else summary.iloc[:0]
    if len(bad):
        parts.append("Little's law is off by more than 20 % at QD "
                     + ", ".join(f"{q:g}" for q in bad["qd"]) + ": the queue was not kept full there.")
    return " ".join(parts)
