"""The main effect of every axis of a parameter search: which settings matter, how much,
and whether the repeats can show it.

    eff = effects.main_effects(table, spec.axes)        # level means, 95 % intervals, effect per axis
    effects.rank_effects(eff)                           # one row per axis, largest effect first
    effects.readable_ranking(effects.rank_effects(eff)) # the same in words, for a notebook
    print(effects.describe_effects(eff))                # 'iodepth matters most: IOPS range from 41k at 1 ...'

Input: a search table and its axes, read as runs and cells (``search_cells``). The method is
the fixed-effects factorial design (D. C. Montgomery, *Design and Analysis of Experiments*,
8th ed., Wiley 2013, ch. 5 "Introduction to factorial designs"):

- **Main effect** of an axis: its *marginal means* — for each level the unweighted mean of
  the cell means at that level (every combination of the other axes counts once, whatever
  its repeats; the least-squares mean of an unbalanced grid). Its interval reflects the
  repeats' noise only, not the spread over the other axes (those are fixed settings, not
  noise): the variance of a mean of k cell means is sum(s_c² / n_c) / k², each cell with
  its own variance (IOPS noise grows with IOPS), with Welch–Satterthwaite degrees of
  freedom and a Student-t quantile. A cell with a single run borrows the pooled relative
  variance of the cells that have repeats (its own CV unknown); with one run per cell there
  is no interval.
- *Effect* of an axis, the one scale of the text, the tables and the plots: the change of the
  mean from its lowest level to its highest, in % of the lowest (``change_pct``, ``EFFECT_SCALE``);
  ``effect_pct`` keeps the range in % of the grand mean (the mean of every cell mean) for
  callers that want it. Two levels are *apart* when their 95 % intervals do not
  overlap — a conservative test (about p < 0.006 for equal errors; Schenker & Gentleman,
  "On judging the significance of differences by examining the overlap between confidence
  intervals", The American Statistician 55(3), 2001).

Every interval is taken at ``confidence`` (95 % by default). ``marginal_mean`` and
``pooled_noise`` are shared with ``frequency`` (the metric and the CPU clock per level).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.columns import bounds, clipped, label
from ..core.errors import InputError
from ..core.readable import percent, wrapped_text
from .repeat_stats import bounded
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
    short_value,
)


def main_effects(table: pd.DataFrame, axes, metric: str = "iops", confidence: float = 0.95) -> pd.DataFrame:
    """The main effect of every axis on ``metric``: one row per (axis, level) with the
    marginal mean ``<metric>_mean`` (unweighted mean of the level's cell means, the
    metric's unit), its interval ``<metric>_ci_low`` / ``<metric>_ci_high`` (the repeats'
    noise: per-cell variances, Welch–Satterthwaite t; NaN with one run per cell),
    ``n_runs``, ``n_cells`` and ``vs_first_pct`` (the level against the axis's first level,
    %); and per axis (repeated on its rows) ``effect_pct`` = (highest - lowest level mean) /
    grand mean × 100, ``change_pct`` = highest / lowest - 1 (%), ``low_level`` /
    ``high_level``, ``separated`` (the two levels' intervals do not overlap; NA without
    intervals) and ``complete`` (every level has the same combinations of the other axes;
    False: an incomplete grid, the levels average over different cells). Method and
    sources: the module's docstring (Montgomery ch. 5; Schenker & Gentleman 2001).

    Axes with one level are skipped: ``attrs["skipped"]`` maps them to the reason.
    ``attrs`` also holds ``metric``, ``confidence`` and ``grand_mean``."""
    names, order = search_axes(axes)
    runs = ok_runs(table, names, metric)
    cells = cell_means(runs, names, metric)
    noise = pooled_noise(cells)
    grand = float(cells["mean"].mean())
    rows, skipped = [], {}
    for axis in names:
        levels = ordered_levels(runs[axis], order.get(axis))
        if len(levels) < 2:
            skipped[axis] = f"one level ({level_text(levels[0]) if levels else 'none'}): nothing to compare"
            continue
        stats_ = [marginal_mean(cells[at_level(cells[axis], lv)], noise, confidence, metric) for lv in levels]
        means = np.array([s[0] for s in stats_])
        hi, lo = int(np.nanargmax(means)), int(np.nanargmin(means))
        unbounded = any(math.isnan(s[1]) for s in (stats_[hi], stats_[lo]))
        # no interval: NA with one run per cell (nothing to judge); with repeats it was too noisy
        # to bound (repeat_stats.bounded), which shows no difference, as overlapping intervals
        apart = (pd.NA if not noise[1] else False) if unbounded else bool(stats_[hi][1] > stats_[lo][2])
        for i, (level, (mean, low, high, n_runs, n_cells)) in enumerate(zip(levels, stats_)):
            rows.append(
                {
                    "axis": axis,
                    "level": level,
                    "level_index": i,
                    f"{metric}_mean": mean,
                    f"{metric}_ci_low": low,
                    f"{metric}_ci_high": high,
                    "n_runs": n_runs,
                    "n_cells": n_cells,
                    "vs_first_pct": pct_change(mean, means[0]),
                    "effect_pct": 100 * (means[hi] - means[lo]) / abs(grand) if grand else math.nan,
                    "change_pct": pct_change(means[hi], means[lo]),
                    "low_level": levels[lo],
                    "high_level": levels[hi],
                    "separated": apart,
                    "complete": _complete(cells, names, axis, levels),
                }
            )
    out = pd.DataFrame(
        rows,
        columns=[
            "axis",
            "level",
            "level_index",
            f"{metric}_mean",
            f"{metric}_ci_low",
            f"{metric}_ci_high",
            "n_runs",
            "n_cells",
            "vs_first_pct",
            "effect_pct",
            "change_pct",
            "low_level",
            "high_level",
            "separated",
            "complete",
        ],
    )
    out["separated"] = out["separated"].astype("boolean")
    out.attrs = {
        "metric": metric,
        "confidence": confidence,
        "grand_mean": grand,
        "skipped": skipped,
        "repeats": _repeats_text(cells),
        "axes": names,
    }
    return out


EFFECT_SCALE = "the change of the mean from the lowest level to the highest, in % of the lowest"


def rank_effects(effects: pd.DataFrame) -> pd.DataFrame:
    """One row per axis of ``main_effects``'s table, largest effect (``change_pct``) first: ``rank``,
    ``axis``, ``effect_pct``, ``change_pct``, ``separated``, ``low_level`` and its mean
    ``low_<metric>``, ``high_level`` and ``high_<metric>``, ``levels`` (how many),
    ``complete``. ``attrs`` as ``main_effects``'s."""
    metric = _metric_of(effects)
    rows = []
    for axis, part in effects.groupby("axis", sort=False):
        first = part.iloc[0]
        mean = part.set_index("level_index")[f"{metric}_mean"]
        index = {level_key(v): i for i, v in zip(part["level_index"], part["level"])}
        rows.append(
            {
                "axis": axis,
                "effect_pct": first["effect_pct"],
                "change_pct": first["change_pct"],
                "separated": first["separated"],
                "low_level": first["low_level"],
                f"low_{metric}": mean[index[level_key(first["low_level"])]],
                "high_level": first["high_level"],
                f"high_{metric}": mean[index[level_key(first["high_level"])]],
                "levels": len(part),
                "complete": bool(first["complete"]),
            }
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "axis",
            "effect_pct",
            "change_pct",
            "separated",
            "low_level",
            f"low_{metric}",
            "high_level",
            f"high_{metric}",
            "levels",
            "complete",
        ],
    )
    out = out.sort_values("change_pct", ascending=False, na_position="last", ignore_index=True)
    out.insert(0, "rank", range(1, len(out) + 1))
    out["separated"] = out["separated"].astype("boolean")
    out.attrs = dict(effects.attrs)
    return out


@wrapped_text
def describe_effects(effects: pd.DataFrame, metric: str | None = None) -> str:
    """The main effects in plain words, largest first: "iodepth matters most: IOPS range
    from 41k at 1 to 230k at 128 (+461 %, intervals apart); scheduler: no difference the
    repeats can show: IOPS range from 95k at mq-deadline to 99k at none (+4.2 %, intervals
    overlap)".
    "Matters most" goes to the largest effect whose extreme levels' intervals are apart;
    with one run per cell the ranges are given as measured, with no claim. Skipped
    (one-level) axes are named at the end."""
    metric = metric or _metric_of(effects)
    ranked = rank_effects(effects)
    words = metric_words(metric)
    parts, named_most = [], False
    for r in ranked.itertuples(index=False):
        low, high = getattr(r, f"low_{metric}"), getattr(r, f"high_{metric}")
        span = (
            f"{words} range from {short_value(low, metric)} at {level_text(r.low_level)} to "
            f"{short_value(high, metric)} at {level_text(r.high_level)} ({percent(r.change_pct, signed=True)}"
        )
        incomplete = "" if r.complete else "; an incomplete grid: the levels average over different cells"
        if pd.isna(r.separated):
            parts.append(f"{r.axis}: {span}, one run per cell: no interval, as measured{incomplete})")
        elif r.separated and not named_most:
            parts.append(f"{r.axis} matters most: {span}, intervals apart{incomplete})")
            named_most = True
        elif r.separated:
            parts.append(f"{r.axis}: {span}, intervals apart{incomplete})")
        else:
            parts.append(f"{r.axis}: no difference the repeats can show: {span}, intervals overlap{incomplete})")
    if len(ranked) and not named_most and ranked["separated"].notna().any():
        parts.insert(0, "No setting makes a difference the repeats can show")
    parts += [f"{axis}: {why}" for axis, why in effects.attrs.get("skipped", {}).items()]
    if not parts:
        return "no axis to read"
    conf = effects.attrs.get("confidence", 0.95)
    over = "Level means average over the other settings; " if len(effects.attrs.get("axes", [0, 0])) > 1 else ""
    return "; ".join(parts) + (
        f". Effect (the signed %): {EFFECT_SCALE}. {over}intervals: {100 * conf:g} % "
        f"({effects.attrs.get('repeats', 'repeats')})."
    )


def readable_ranking(ranked: pd.DataFrame) -> pd.DataFrame:
    """``rank_effects``'s table as a notebook shows it: one row per setting, columns in words
    with units, the effect on the one scale (``EFFECT_SCALE``) as '+283 %', the level means
    in the metric's unit and whether the repeats can show it in words."""
    metric = _metric_of_ranking(ranked)
    words, unit = metric_words(metric), label(metric).partition(" (")[2].rstrip(")")
    mean = f"%s mean: {words}" + (f" ({unit})" if unit else "")
    return pd.DataFrame(
        {
            "setting": ranked["axis"],
            "effect: lowest to highest mean": [percent(v, signed=True) for v in ranked["change_pct"]],
            "lowest mean: level": [level_text(v) for v in ranked["low_level"]],
            mean % "lowest": ranked[f"low_{metric}"],
            "highest mean: level": [level_text(v) for v in ranked["high_level"]],
            mean % "highest": ranked[f"high_{metric}"],
            "repeats show it": [
                "no interval (one run per cell)"
                if pd.isna(v)
                else "yes: intervals apart"
                if v
                else "no: intervals overlap"
                for v in ranked["separated"]
            ],
            "levels": ranked["levels"],
            "grid": ["complete" if c else "incomplete: levels average over other cells" for c in ranked["complete"]],
        }
    )


def _metric_of_ranking(ranked: pd.DataFrame) -> str:
    """The metric of a ``rank_effects`` table: its ``attrs``, else its ``low_<metric>`` column."""
    if "metric" in ranked.attrs:
        return ranked.attrs["metric"]
    lows = [c[4:] for c in ranked.columns if c.startswith("low_") and c != "low_level"]
    if not lows:
        raise InputError("not a rank_effects table (no low_<metric> column): pass effects.rank_effects(...)")
    return lows[0]


# ---------------------------------------------------------------- marginal means
def pooled_noise(cells: pd.DataFrame) -> tuple[float, int]:
    """The pooled squared CV of the cells with repeats and its degrees of freedom (what a
    one-run cell borrows); (NaN, 0) when no cell has repeats."""
    rep = cells[(cells["n"] >= 2) & (cells["mean"] != 0)]
    df = int((rep["n"] - 1).sum())
    if not df:
        return math.nan, 0
    return float(((rep["n"] - 1) * rep["var"] / rep["mean"] ** 2).sum() / df), df


def marginal_mean(
    c: pd.DataFrame, noise: tuple[float, int], confidence: float, metric: str = ""
) -> tuple[float, float, float, int, int]:
    """Marginal mean of a level (mean of its cells' means) and its interval: variance
    sum(s_c² / n_c) / k², Welch–Satterthwaite degrees of freedom; one-run cells borrow the
    pooled relative variance; a quantity that cannot be negative (IOPS) on the log scale, with no
    interval when that spans more than ``repeat_stats.MAX_SPAN`` times (``repeat_stats.bounded``),
    a share held within 0-100 % (``columns.clipped``). Returns (mean, low, high, runs, cells)."""
    from scipy import (
        stats,
    )  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab (15 s in the NVMe lab)

    k, mean = len(c), float(c["mean"].mean())
    runs = int(c["n"].sum())
    rel_var, pooled_df = noise
    if k == 0 or not pooled_df:
        return mean, math.nan, math.nan, runs, k
    rep = (c["n"] >= 2).to_numpy()
    v = np.where(rep, c["var"].fillna(0) / c["n"], rel_var * c["mean"] ** 2)
    d = np.where(rep, c["n"] - 1, pooled_df).astype(float)
    total = float(v.sum())
    if total == 0:
        return mean, mean, mean, runs, k
    df = total**2 / float(np.sum(v**2 / d))
    half = stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(total) / k
    floor, ceiling = bounds(metric) if metric else (-math.inf, math.inf)
    if floor == 0 and ceiling == math.inf and mean > 0:  # on the log scale (delta method): both ends positive
        low, high = mean * math.exp(-half / mean), mean * math.exp(half / mean)
        if not bounded(low, high, metric):
            return mean, math.nan, math.nan, runs, k  # the repeats cannot bound it (too noisy)
    else:
        low, high = clipped(mean - half, mean + half, metric) if metric else (mean - half, mean + half)
    return mean, low, high, runs, k


def _complete(cells: pd.DataFrame, names: list[str], axis: str, levels: list) -> bool:
    """Every level of ``axis`` has the same combinations of the other axes."""
    others = [x for x in names if x != axis]
    if not others:
        return True
    combos = [set(map(tuple, cells.loc[at_level(cells[axis], lv), others].astype(str).to_numpy())) for lv in levels]
    return all(c == combos[0] for c in combos)


def _metric_of(frame: pd.DataFrame) -> str:
    """The metric a ``main_effects`` table is about: its ``attrs``, else its ``<metric>_mean`` column."""
    if "metric" in frame.attrs:
        return frame.attrs["metric"]
    means = [c[:-5] for c in frame.columns if c.endswith("_mean")]
    if not means:
        raise InputError("not a main_effects table (no <metric>_mean column): pass effects.main_effects(...)")
    return means[0]


def _repeats_text(cells: pd.DataFrame) -> str:
    """How many runs the cells have, in words ('3 runs per cell', '2-5 runs per cell')."""
    lo, hi = int(cells["n"].min()), int(cells["n"].max())
    if hi < 2:
        return "one run per cell: no interval"
    return f"{lo} runs per cell" if lo == hi else f"{lo}-{hi} runs per cell"
