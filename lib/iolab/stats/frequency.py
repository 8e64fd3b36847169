"""What the CPU clock explains in a parameter search: for the axes that move it (governor,
turbo, SMT, thread siblings, stress), the metric and the sampled CPU frequency per level
side by side.

    from iolab.stats.frequency import describe_frequency, frequency_effects
    freq = frequency_effects(table, spec.axes)
    print(describe_frequency(freq))                      # 'governor powersave: IOPS -64 % vs performance; ...'

Input: a search table and its axes, read as runs and cells (``search_cells``); the level
means and their intervals are marginal means, as ``effects.main_effects`` takes them. Each
level says where its frequency came from (``freq_source``): ``scaling_cur_freq`` is
sampled from the pinned CPUs, ``proc_cpuinfo`` is a nominal clock that follows no governor
or turbo and so cannot explain a change. If a run is CPU-bound its IOPS follow the clock,
so the share of a change the clock accounts for is ln(frequency ratio) / ln(metric ratio)
(on the log scale). Seed 003 found the powersave governor 64.19 % below performance on
average and read the sampled ``scaling_cur_freq`` as the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..core.readable import percent, wrapped_text
from .effects import marginal_mean, pooled_noise
from .search_cells import (
    at_level,
    cell_means,
    level_key,
    level_text,
    metric_words,
    ok_runs,
    ordered_levels,
    pct_change,
    search_axes,
)

FREQUENCY_AXES = ("governor", "turbo", "smt", "siblings", "thread_siblings", "stress")
FREQ_NOTES = {
    "scaling_cur_freq": "sampled: scaling_cur_freq of the pinned CPUs every 0.5 s, trimmed mean",
    "proc_cpuinfo": "nominal: /proc/cpuinfo (no cpufreq on this machine); it follows no governor or "
    "turbo, so it cannot explain a change",
    "none": "not sampled",
}
FREQ_WORDS = {"scaling_cur_freq": "sampled cpufreq", "proc_cpuinfo": "/proc/cpuinfo, nominal", "none": "not sampled"}


def frequency_effects(
    table: pd.DataFrame, axes, metric: str = "iops", confidence: float = 0.95, which: Sequence[str] = FREQUENCY_AXES
) -> pd.DataFrame:
    """For the axes in ``which`` that the search varied (governor, turbo, SMT, thread
    siblings, stress: those that move the CPU clock or share a core), the metric and the
    sampled CPU frequency per level side by side: ``<metric>_mean`` and its interval and
    ``cpu_freq_mhz_mean`` and its interval (marginal means, as ``main_effects``),
    ``change_pct`` and ``freq_change_pct`` against the level with the best metric,
    ``freq_share_pct`` (if the runs are CPU-bound, IOPS follow the clock: 100 × ln(freq
    ratio) / ln(metric ratio), the part of the change the clock accounts for; NaN for the
    reference level, a nominal clock or a change under 1 %), ``freq_source`` and
    ``freq_note``: a frequency from ``proc_cpuinfo`` is nominal (no cpufreq) and is said so.
    Seed 003 found the powersave governor 64.19 % below performance on average, and read
    the sampled ``scaling_cur_freq`` as the reason. ``attrs["absent"]``: the axes of
    ``which`` not searched; ``attrs["skipped"]``: searched with one level."""
    names, order = search_axes(axes)
    runs = ok_runs(table, names, metric)
    cells = cell_means(runs, names, metric)
    noise = pooled_noise(cells)
    has_freq = "cpu_freq_mhz" in runs and runs["cpu_freq_mhz"].notna().any()
    if has_freq:
        fcells = cell_means(runs[runs["cpu_freq_mhz"].notna()], names, "cpu_freq_mhz")
        fnoise = pooled_noise(fcells)
    rows, skipped = [], {}
    for axis in [x for x in which if x in names]:
        levels = ordered_levels(runs[axis], order.get(axis))
        if len(levels) < 2:
            skipped[axis] = f"one level ({level_text(levels[0]) if levels else 'none'})"
            continue
        part = []
        for level in levels:
            m, lo, hi, n_runs, _ = marginal_mean(cells[at_level(cells[axis], level)], noise, confidence, metric)
            f = (
                marginal_mean(fcells[at_level(fcells[axis], level)], fnoise, confidence, "cpu_freq_mhz")
                if has_freq
                else (math.nan,) * 3
            )
            sources = runs.loc[at_level(runs[axis], level), "freq_source"] if "freq_source" in runs else pd.Series()
            source = ", ".join(sorted(set(sources.dropna().astype(str)))) or "none"
            part.append(
                {
                    "axis": axis,
                    "level": level,
                    f"{metric}_mean": m,
                    f"{metric}_ci_low": lo,
                    f"{metric}_ci_high": hi,
                    "n_runs": n_runs,
                    "cpu_freq_mhz_mean": f[0],
                    "cpu_freq_mhz_ci_low": f[1],
                    "cpu_freq_mhz_ci_high": f[2],
                    "freq_source": source,
                    "freq_note": "; ".join(FREQ_NOTES.get(s, s) for s in source.split(", ")),
                }
            )
        ref = max(part, key=lambda r: r[f"{metric}_mean"])
        for r in part:
            r["reference_level"] = ref["level"]
            r["change_pct"] = pct_change(r[f"{metric}_mean"], ref[f"{metric}_mean"])
            r["freq_change_pct"] = pct_change(r["cpu_freq_mhz_mean"], ref["cpu_freq_mhz_mean"])
            sampled = r["freq_source"] == ref["freq_source"] == "scaling_cur_freq"
            ratio = r[f"{metric}_mean"] / ref[f"{metric}_mean"]
            fratio = r["cpu_freq_mhz_mean"] / ref["cpu_freq_mhz_mean"]
            r["freq_share_pct"] = (
                100 * math.log(fratio) / math.log(ratio)
                if sampled and abs(ratio - 1) >= 0.01 and fratio > 0
                else math.nan
            )
        rows += part
    out = pd.DataFrame(
        rows,
        columns=[
            "axis",
            "level",
            f"{metric}_mean",
            f"{metric}_ci_low",
            f"{metric}_ci_high",
            "n_runs",
            "cpu_freq_mhz_mean",
            "cpu_freq_mhz_ci_low",
            "cpu_freq_mhz_ci_high",
            "reference_level",
            "change_pct",
            "freq_change_pct",
            "freq_share_pct",
            "freq_source",
            "freq_note",
        ],
    )
    out.attrs = {
        "metric": metric,
        "confidence": confidence,
        "skipped": skipped,
        "absent": [x for x in which if x not in names],
    }
    return out


@wrapped_text
def describe_frequency(freq: pd.DataFrame, metric: str | None = None) -> str:
    """``frequency_effects`` in words: per level against the best one, the metric's change
    beside the frequency's, labelled with the frequency's source ("governor powersave: IOPS
    -64 % vs performance; CPU frequency -61 % (3,300 -> 1,290 MHz, sampled: ...)")."""
    metric = metric or freq.attrs.get("metric", "iops")
    if freq.empty:
        absent = ", ".join(freq.attrs.get("absent", [])) or "none of them"
        return (
            f"no governor, turbo, SMT, siblings or stress axis with two levels in this search ({absent} not searched)"
        )
    words, parts = metric_words(metric), []
    for r in freq.itertuples(index=False):
        if level_key(r.level) == level_key(r.reference_level):
            continue
        ref = freq[(freq["axis"] == r.axis) & freq["level"].map(level_key).eq(level_key(r.reference_level))].iloc[0]
        head = f"{r.axis} {level_text(r.level)}: {words} {percent(r.change_pct, signed=True)} vs {level_text(r.reference_level)}"
        if r.freq_source == "none" or math.isnan(r.cpu_freq_mhz_mean):
            parts.append(f"{head}; CPU frequency not sampled")
        elif "proc_cpuinfo" in r.freq_source:
            parts.append(
                f"{head}; CPU frequency {ref.cpu_freq_mhz_mean:,.0f} -> {r.cpu_freq_mhz_mean:,.0f} MHz is "
                f"nominal (/proc/cpuinfo, no cpufreq): it cannot say whether the clock explains this"
            )
        elif abs(r.freq_change_pct) < 1:
            parts.append(
                f"{head}; CPU frequency unchanged ({r.cpu_freq_mhz_mean:,.0f} MHz, {r.freq_source}): "
                f"the clock does not explain it"
            )
        else:
            share = ""
            if not math.isnan(r.freq_share_pct) and r.freq_share_pct > 110:
                share = (
                    f"; the clock moved further than {words} ({r.freq_share_pct:.0f} % of the change, log "
                    f"scale): some runs were bound by something else, such as the devices"
                )
            elif not math.isnan(r.freq_share_pct):
                share = (
                    f"; if CPU-bound ({words} follow the clock) the clock accounts for "
                    f"{r.freq_share_pct:.0f} % of it (log scale)"
                )
            parts.append(
                f"{head}; CPU frequency {percent(r.freq_change_pct, signed=True)} ({ref.cpu_freq_mhz_mean:,.0f} -> "
                f"{r.cpu_freq_mhz_mean:,.0f} MHz, {r.freq_source}){share}"
            )
    return "; ".join(parts) + "."
