"""Reading a queue-depth sweep: one row per depth (IOPS, latency percentiles, CPU busy,
cycles per IO, Little's-law check) and the reading in words, with the knee.

    summary = qd_reading.qd_summary(table, latency_target_us=200)
    print(qd_reading.describe_qd_study(summary, knee, saturation_qd, latency_qd, 200))

Little's law (J. D. C. Little, "A proof for the queuing formula: L = λW", Operations
Research 9(3), 1961) checks that the queue was kept full: outstanding IOs = IOPS × mean
latency should match the iodepth. The knee is ``knee_interval.knee_with_interval``'s, the
rule-based points ``operating_points``'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..core.readable import wrapped_text
from .knee import Knee
from .knee_interval import KneeEstimate
from .knee_verdict import KneeVerdict


# ---------------------------------------------------------------- Little's law
@dataclass
class LittlesLaw:
    """Result of :func:`littles_law`: the iodepth, the outstanding IOs IOPS × mean latency
    gives (``estimated_qd``), their ratio, whether it is off by more than the tolerance, and
    the note saying so in words."""

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
    note = f"IOPS x mean latency = {est:.2f} outstanding IOs vs iodepth {qd:g} ({ratio:.0%})" + (
        ": the queue was not kept full"
        if flagged and ratio < 1
        else ": more outstanding than iodepth"
        if flagged
        else ""
    )
    return LittlesLaw(qd, est, ratio, flagged, note)


# ---------------------------------------------------------------- the QD study table
def qd_summary(table: pd.DataFrame, x: str = "qd", latency_target_us: float | None = None) -> pd.DataFrame:
    """One row per queue depth: mean and median IOPS, clat p50/p99 (µs), CPU busy (%),
    cycles/IO and its frequency source, and the Little's-law check. Means (and the median)
    are over repeats and jobs' directions that did I/O; ``runs`` counts the runs."""
    io = table[table["direction"] != "none"]
    cols = {
        c: "mean"
        for c in (
            "iops",
            "clat_mean_us",
            "clat_p50_us",
            "clat_p99_us",
            "lat_mean_us",
            "cpu_busy_pct",
            "cpu_freq_mhz",
            "cycles_per_io",
            "cycles_per_io_core",
            "other_cpu_pct",
        )
        if c in io
    }
    out = io.groupby(x).agg({**cols, "run_id": "nunique"}).rename(columns={"run_id": "runs"})
    out.insert(1, "iops_median", io.groupby(x)["iops"].median())  # what knee_with_interval uses
    if "freq_source" in io:
        out["freq_source"] = io.groupby(x)["freq_source"].first()
    lat = out["lat_mean_us"].fillna(out["clat_mean_us"]) if "lat_mean_us" in out else out["clat_mean_us"]
    checks = [littles_law(q, i, m) for q, i, m in zip(out.index, out["iops"], lat)]
    out["littles_qd"] = [c.estimated_qd for c in checks]
    out["littles_ok"] = [not c.flagged for c in checks]
    if latency_target_us is not None:
        out["p99_under_target"] = out["clat_p99_us"] <= latency_target_us
    return out.reset_index()


@wrapped_text
def describe_qd_study(
    summary: pd.DataFrame,
    knee: Knee | KneeEstimate | KneeVerdict,
    saturation_qd: float | None,
    latency_qd: float | None,
    latency_target_us: float | None = None,
) -> str:
    """The reading of a queue-depth sweep in words, with its numbers. With a
    ``KneeEstimate`` (:func:`knee_with_interval`) it gives the knee's bootstrap interval and
    whether the 95 %-of-peak rule agrees (its ``note``) instead of the rule alone; with a
    ``KneeVerdict`` (:func:`trusted_knee`) the trusted method's, and why that method."""
    best = summary.loc[summary["iops"].idxmax()]
    parts = [f"Peak: {best['iops']:,.0f} IOPS at QD {best['qd']:g}."]
    verdict = knee if isinstance(knee, KneeVerdict) else None
    knee = verdict.estimate if verdict else knee
    if isinstance(knee, KneeEstimate):
        note = knee.note
        if knee.x is not None and verdict and verdict.moved_from is not None:
            parts.append(
                f"{knee.method_name[0].upper()}{knee.method_name[1:]} on the median IOPS of {knee.repeats_text} "
                f"repeat{'s' if knee.repeats[1] > 1 else ''} per QD puts the knee at QD {verdict.moved_from:g}, "
                f"but the curve is not saturated there; the knee reported is QD {knee.x:g} ({knee.y:,.0f} IOPS), "
                f"past which the next QD swept gains within its interval or by less than 5 %. Why: {verdict.why}."
            )
        elif knee.x is not None:
            parts.append(
                f"{knee.method_name[0].upper()}{knee.method_name[1:]} on the median IOPS of {knee.repeats_text} "
                f"repeat{'s' if knee.repeats[1] > 1 else ''} per QD puts the knee at QD "
                f"{knee.x:g} ({knee.y:,.0f} IOPS); "
                + (
                    "the best ratio of IOPS to latency: past it latency grows faster than IOPS."
                    if knee.method_name == "maximum power"
                    else "beyond it extra queue depth buys little IOPS and adds latency."
                )
                + (f" Why {knee.method_name}: {verdict.why}." if verdict else "")
            )
        elif verdict:
            parts.append(f"No knee: {verdict.why}.")
            note = note.removeprefix(f"No knee: {knee.reason}.").strip()
        parts.append(note)
    elif knee.x is not None:
        parts.append(
            f"Kneedle puts the knee at QD {knee.x:g} ({knee.y:,.0f} IOPS); "
            "beyond it extra queue depth buys little IOPS and adds latency."
        )
    else:
        parts.append(f"No knee: {knee.reason}.")
    if saturation_qd is not None and not isinstance(knee, KneeEstimate):
        parts.append(f"QD {saturation_qd:g} is the smallest reaching 95 % of the peak.")
    if latency_target_us is not None:
        parts.append(
            f"The largest QD with p99 ≤ {latency_target_us:g} µs is "
            f"{f'QD {latency_qd:g}' if latency_qd is not None else 'none (every QD exceeds it)'}."
        )
    if "cpu_busy_pct" in summary and summary["cpu_busy_pct"].notna().any():
        top = summary.loc[summary["iops"].idxmax()]
        parts.append(
            f"At the peak the pinned CPU is {top['cpu_busy_pct']:.0f} % busy"
            + (" — CPU-bound, as the seed 000 E-core was." if top["cpu_busy_pct"] > 90 else ".")
        )
    if "cycles_per_io" in summary and summary["cycles_per_io"].notna().any():
        src = summary["freq_source"].iloc[0] if "freq_source" in summary else "?"
        parts.append(
            f"Cycles per IO at the peak: {best['cycles_per_io']:,.0f} of fio's own (frequency from {src}"
            + (", a nominal clock: this machine has no cpufreq" if src == "proc_cpuinfo" else "")
            + (
                f"; {best['cycles_per_io_core']:,.0f} from the core's busy time, other programs' included"
                if "cycles_per_io_core" in summary and best["cycles_per_io_core"] == best["cycles_per_io_core"]
                else ""
            )
            + "); seed 001 measured 8,666 on a 3.9 GHz Threadripper core fio alone kept busy."
        )
    bad = summary[~summary["littles_ok"]] if "littles_ok" in summary else summary.iloc[:0]
    for short, what in ((True, "the queue was not kept full there"), (False, "more IOs outstanding than the QD")):
        off = bad[(bad["littles_qd"] < bad["qd"]) == short] if "littles_qd" in bad else bad if short else bad.iloc[:0]
        if len(off):
            parts.append(
                "Little's law is off by more than 20 % at QD " + ", ".join(f"{q:g}" for q in off["qd"]) + f": {what}."
            )
    return " ".join(parts)


def readable_summary(summary: pd.DataFrame, latency_target_us: float | None = None) -> pd.DataFrame:
    """:func:`qd_summary` as a notebook shows it: columns named in words with their units,
    one row per queue depth, the checks in words (Little's law: the outstanding IOs IOPS ×
    mean latency gives, "holds" or what is off; the latency target: "yes" / "no"). The
    frequency source is one per sweep: it is said in the cycles column's name."""
    src = summary["freq_source"].dropna().unique() if "freq_source" in summary else []
    nominal = " (nominal clock)" if "proc_cpuinfo" in src else ""
    names = {
        "qd": "queue depth",
        "iops": "IOPS mean (IO/s)",
        "iops_median": "IOPS median (IO/s)",
        "clat_p50_us": "clat p50 (µs)",
        "clat_p99_us": "clat p99 (µs)",
        "cpu_busy_pct": "CPU busy (%)",
        "cycles_per_io": f"CPU cycles per IO, fio's own{nominal}",
        "cycles_per_io_core": f"CPU cycles per IO, whole core, all programs{nominal}",
    }
    out = summary[[c for c in names if c in summary]].rename(columns=names)
    out["queue depth"] = out["queue depth"].map(lambda q: f"{q:g}")
    if latency_target_us is not None and "p99_under_target" in summary:
        out[f"p99 ≤ {latency_target_us:g} µs"] = summary["p99_under_target"].map({True: "yes", False: "no"})
    if "littles_qd" in summary:
        out["Little's law: IOPS × mean latency"] = [
            "no mean latency"
            if math.isnan(est)
            else f"{est:.1f} IOs: " + ("holds" if ok else "queue not kept full" if est < q else "more than the QD")
            for q, est, ok in zip(summary["qd"], summary["littles_qd"], summary["littles_ok"])
        ]
    out["runs"] = summary["runs"]
    return out
