"""Reading a parameter search: which settings matter, which pairs interact, the best
configuration and the ones tied with it, the roofline, and what the CPU clock explains.

    eff = effects.main_effects(table, spec.axes)        # level means, 95 % intervals, effect per axis
    print(effects.describe_effects(eff))                # 'iodepth matters most: IOPS range from 41k at 1 ...'
    effects.interactions(table, spec.axes)              # every pair, strongest first
    best, ties = effects.best_config(table, spec.axes)
    roof = effects.roofline(table, spec.axes)           # single-device roof, aggregate vs devices and cores

Input: a search table (``iolab.measure.search.load_table``: one row per run and direction, one
column per axis) or any tidy table with ``run_id`` and the axes as columns. Rows whose
``status`` is not ``ok`` are left out, then ``compare.per_run`` makes one row per run
(IOPS and bandwidth summed over the run's jobs and directions, the rest averaged). A
*cell* is one combination of every axis's level; its runs are its repeats. ``axes`` is a
list of column names, or ``spec.axes`` (a dict axis -> levels: the levels keep the spec's
order). Pure analysis: nothing here runs, reads or writes anything.

The method is the fixed-effects factorial design (D. C. Montgomery, *Design and Analysis
of Experiments*, 8th ed., Wiley 2013, ch. 5 "Introduction to factorial designs"):

- **Main effect** of an axis: its *marginal means* — for each level the unweighted mean of
  the cell means at that level (every combination of the other axes counts once, whatever
  its repeats; the least-squares mean of an unbalanced grid). Its interval reflects the
  repeats' noise only, not the spread over the other axes (those are fixed settings, not
  noise): the variance of a mean of k cell means is sum(s_c² / n_c) / k², each cell with
  its own variance (IOPS noise grows with IOPS), with Welch–Satterthwaite degrees of
  freedom and a Student-t quantile. A cell with a single run borrows the pooled relative
  variance of the cells that have repeats (its own CV unknown); with one run per cell there
  is no interval. *Effect size* of an axis = (highest - lowest level mean) / grand mean, %
  (the grand mean: the mean of every cell mean); two levels are *apart* when their 95 %
  intervals do not overlap — a conservative test (about p < 0.006 for equal errors;
  Schenker & Gentleman, "On judging the significance of differences by examining the
  overlap between confidence intervals", The American Statistician 55(3), 2001).
- **Interaction** of two axes a, b: how far the (a, b) cell means (each the mean of the
  full cells at a, b) depart from the no-interaction model mean_a + mean_b - grand mean,
  the interaction term of the two-way ANOVA (Montgomery §5.3: SS_AB from
  ȳ_ij - ȳ_i - ȳ_j + ȳ). By default on the log scale (``model="multiplicative"``): a
  setting that costs 20 % of IOPS everywhere is no interaction, however large the IOPS
  it multiplies — throughput effects are ratios. ``model="additive"`` takes the raw
  scale, in % of the grand mean. Its F test uses the within-cell mean square of the full
  grid (exact for a complete, balanced grid; an approximation otherwise).
- **Best configuration**: the cell with the best mean; *tied* with it is every cell whose
  ``compare.compare`` against it cannot show a difference: the 95 % interval of the ratio
  of means (percentile bootstrap joined with the Welch t interval) contains 0.
- **Roofline** (seed 003, AiSIO, "CPU-initiated I/O: Optimal Parameter Search"): the
  roof is the best single-device cell (3 857 938 IOPS there); N devices can at most do
  N × roof, and the efficiency is the aggregate over N × roof, % (seed 003: 61 720 159
  IOPS with 16 devices and 8 cores, 99.99 % of 16 × roof).
- **Frequency**: for governor, turbo, SMT, siblings and stress, the metric and the sampled
  CPU frequency per level side by side, with where the frequency came from
  (``freq_source``): ``proc_cpuinfo`` is a nominal clock that follows no governor.

Every interval is taken at ``confidence`` (95 % by default). The best of many cells is
biased up by its own noise (the winner's curse): its interval is the cell's own, not
widened for the choice.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import compare
from ..core.columns import COLUMNS, HIGHER_IS_BETTER, better, label
from ..core.errors import InputError
from ..core.readable import percent, si_number, wrapped_text

FREQUENCY_AXES = ("governor", "turbo", "smt", "siblings", "thread_siblings", "stress")
FREQ_NOTES = {
    "scaling_cur_freq": "sampled: scaling_cur_freq of the pinned CPUs every 0.5 s, trimmed mean",
    "proc_cpuinfo": "nominal: /proc/cpuinfo (no cpufreq on this machine); it follows no governor or "
    "turbo, so it cannot explain a change",
    "none": "not sampled",
}
MODELS = ("multiplicative", "additive")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


# ---------------------------------------------------------------- main effects
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
    names, order = _axes(axes)
    runs = _runs(table, names, metric)
    cells = _cells(runs, names, metric)
    noise = _pooled_noise(cells)
    grand = float(cells["mean"].mean())
    rows, skipped = [], {}
    for axis in names:
        levels = _levels(runs[axis], order.get(axis))
        if len(levels) < 2:
            skipped[axis] = f"one level ({_text(levels[0]) if levels else 'none'}): nothing to compare"
            continue
        stats_ = [_level(cells[_is(cells[axis], lv)], noise, confidence) for lv in levels]
        means = np.array([s[0] for s in stats_])
        hi, lo = int(np.nanargmax(means)), int(np.nanargmin(means))
        apart = (
            pd.NA if any(math.isnan(s[1]) for s in (stats_[hi], stats_[lo])) else bool(stats_[hi][1] > stats_[lo][2])
        )
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
                    "vs_first_pct": _pct_change(mean, means[0]),
                    "effect_pct": 100 * (means[hi] - means[lo]) / abs(grand) if grand else math.nan,
                    "change_pct": _pct_change(means[hi], means[lo]),
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


def rank_effects(effects: pd.DataFrame) -> pd.DataFrame:
    """One row per axis of ``main_effects``'s table, largest ``effect_pct`` first: ``rank``,
    ``axis``, ``effect_pct``, ``change_pct``, ``separated``, ``low_level`` and its mean
    ``low_<metric>``, ``high_level`` and ``high_<metric>``, ``levels`` (how many),
    ``complete``. ``attrs`` as ``main_effects``'s."""
    metric = _metric_of(effects)
    rows = []
    for axis, part in effects.groupby("axis", sort=False):
        first = part.iloc[0]
        mean = part.set_index("level_index")[f"{metric}_mean"]
        index = {_key(v): i for i, v in zip(part["level_index"], part["level"])}
        rows.append(
            {
                "axis": axis,
                "effect_pct": first["effect_pct"],
                "change_pct": first["change_pct"],
                "separated": first["separated"],
                "low_level": first["low_level"],
                f"low_{metric}": mean[index[_key(first["low_level"])]],
                "high_level": first["high_level"],
                f"high_{metric}": mean[index[_key(first["high_level"])]],
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
    out = out.sort_values("effect_pct", ascending=False, na_position="last", ignore_index=True)
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
    words = _words(metric)
    parts, named_most = [], False
    for r in ranked.itertuples(index=False):
        low, high = getattr(r, f"low_{metric}"), getattr(r, f"high_{metric}")
        span = (
            f"{words} range from {_short(low, metric)} at {_text(r.low_level)} to "
            f"{_short(high, metric)} at {_text(r.high_level)} ({percent(r.change_pct, signed=True)}"
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
    return "; ".join(parts) + (f". {over}intervals: {100 * conf:g} % ({effects.attrs.get('repeats', 'repeats')}).")


# ---------------------------------------------------------------- interactions
def interaction(
    table: pd.DataFrame, a: str, b: str, metric: str = "iops", axes=None, model: str = "multiplicative"
) -> pd.DataFrame:
    """The (a, b) cell means of ``metric`` (its unit): ``a`` on the rows, ``b`` on the
    columns; each is the mean of the full cells (every axis in ``axes``, default [a, b])
    at that a and b, so other settings count equally. ``attrs``: ``departure_pct`` (same
    shape, list of rows: each cell's departure from the no-interaction model, %),
    ``interaction_pct`` (their root mean square), ``max_departure_pct``, ``f_stat``,
    ``p_value``, ``shown`` (p < 0.05), ``model``, ``metric``, ``a``, ``b`` (method: the
    module's docstring, two-way ANOVA interaction, Montgomery §5.3)."""
    names = _pair_axes(a, b, axes)
    runs = _runs(table, names[0], metric)
    result = _two_way(runs, names[0], a, b, metric, _model(model), names[1])
    pivot = result.pop("pivot")
    pivot.attrs = {"metric": metric, "a": a, "b": b, **result}
    return pivot


def interactions(table: pd.DataFrame, axes, metric: str = "iops", model: str = "multiplicative") -> pd.DataFrame:
    """Interaction strength for every pair of axes with two or more levels, strongest
    first: ``a``, ``b``, ``interaction_pct`` (root mean square departure of the (a, b) cell
    means from the no-interaction model: on the log scale as a ratio, %, or on the raw scale
    in % of the grand mean), ``max_departure_pct`` and ``where`` (the cell that departs
    most), ``f_stat``, ``p_value`` and ``shown`` (two-way ANOVA F test of the interaction
    at 5 %; NaN / NA with one run per cell), ``complete`` (every a × b cell measured)."""
    names, order = _axes(axes)
    model = _model(model)
    runs = _runs(table, names, metric)
    multi = [x for x in names if len(_levels(runs[x], order.get(x))) > 1]
    rows = []
    for a, b in itertools.combinations(multi, 2):
        r = _two_way(runs, names, a, b, metric, model, order)
        rows.append(
            {
                "a": a,
                "b": b,
                **{
                    k: r[k]
                    for k in ("interaction_pct", "max_departure_pct", "where", "f_stat", "p_value", "shown", "complete")
                },
            }
        )
    out = pd.DataFrame(
        rows,
        columns=["a", "b", "interaction_pct", "max_departure_pct", "where", "f_stat", "p_value", "shown", "complete"],
    )
    out = out.sort_values("interaction_pct", ascending=False, na_position="last", ignore_index=True)
    out["shown"] = out["shown"].astype("boolean")
    out.attrs = {"metric": metric, "model": model, "skipped": {x: "one level" for x in names if x not in multi}}
    return out


def _two_way(
    runs: pd.DataFrame, names: list[str], a: str, b: str, metric: str, model: str, order: dict
) -> dict[str, Any]:
    """The (a, b) table of cell means, its departures from the additive fit (log or raw
    scale), their strength and the ANOVA F test of the interaction."""
    from scipy import (
        stats,
    )  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab (15 s in the NVMe lab)

    raw = runs[metric].to_numpy(dtype=float)
    if model == "multiplicative" and (raw <= 0).any():
        raise InputError(f"{metric} has values <= 0: a multiplicative model takes logarithms; pass model='additive'")
    y = np.log(raw) if model == "multiplicative" else raw
    full = (
        runs.assign(_y=y)
        .groupby(names, sort=False, dropna=False)
        .agg(y=("_y", "mean"), raw=(metric, "mean"), var=("_y", "var"), n=("_y", "size"))
        .reset_index()
    )
    rep = full[full["n"] >= 2]
    df_e = int((rep["n"] - 1).sum())
    mse = float(((rep["n"] - 1) * rep["var"]).sum() / df_e) if df_e else math.nan
    rows, cols = _levels(runs[a], order.get(a)), _levels(runs[b], order.get(b))
    Y, R, W = (np.full((len(rows), len(cols)), np.nan) for _ in range(3))
    for i, ra in enumerate(rows):
        for j, cb in enumerate(cols):
            c = full[_is(full[a], ra) & _is(full[b], cb)]
            if len(c):
                Y[i, j], R[i, j] = c["y"].mean(), c["raw"].mean()
                W[i, j] = len(c) * stats.hmean(c["n"])  # runs behind the cell mean (balanced: K x n)
    resid = Y - _additive_fit(Y)
    present = ~np.isnan(Y)
    rms = float(np.sqrt(np.nanmean(resid**2)))
    if model == "multiplicative":
        departure, strength = 100 * np.expm1(resid), 100 * math.expm1(rms)
    else:
        grand = float(np.nanmean(R))
        departure, strength = 100 * resid / abs(grand), 100 * rms / abs(grand)
    where_i, where_j = np.unravel_index(np.nanargmax(np.abs(np.where(present, departure, np.nan))), Y.shape)
    df_ab = int(present.sum()) - len(rows) - len(cols) + 1
    f_stat = p_value = math.nan
    if df_ab > 0 and df_e > 0 and mse > 0:
        f_stat = float(np.nansum(W * resid**2) / df_ab / mse)
        p_value = float(stats.f.sf(f_stat, df_ab, df_e))
    elif df_ab > 0 and df_e > 0:  # no noise at all: any departure is real
        f_stat, p_value = (math.inf, 0.0) if strength > 1e-9 else (math.nan, math.nan)
    pivot = pd.DataFrame(R, index=pd.Index(rows, name=a), columns=pd.Index(cols, name=b))
    return {
        "pivot": pivot,
        "departure_pct": departure.tolist(),
        "interaction_pct": strength,
        "max_departure_pct": float(departure[where_i, where_j]),
        "where": f"{a}={_text(rows[where_i])}, {b}={_text(cols[where_j])}",
        "f_stat": f_stat,
        "p_value": p_value,
        "shown": pd.NA if math.isnan(p_value) else bool(p_value < 0.05),
        "complete": bool(present.all()),
        "model": model,
    }


def _additive_fit(Y: np.ndarray, sweeps: int = 200) -> np.ndarray:
    """Least-squares fit of mu + row_i + col_j to the cells present (NaN: missing), by
    alternating row and column means (one sweep is exact for a complete table; more
    converge for an incomplete, connected one)."""
    present = ~np.isnan(Y)
    mu = float(np.nanmean(Y))
    row, col = np.zeros(Y.shape[0]), np.zeros(Y.shape[1])
    for _ in range(sweeps if not present.all() else 2):
        with np.errstate(invalid="ignore"):
            row = np.nan_to_num(np.nanmean(Y - mu - col[None, :], axis=1))
            col = np.nan_to_num(np.nanmean(Y - mu - row[:, None], axis=0))
    return mu + row[:, None] + col[None, :]


# ---------------------------------------------------------------- best configuration
def best_config(
    table: pd.DataFrame, axes, metric: str = "iops", higher_is_better: bool | None = None, confidence: float = 0.95
) -> tuple[pd.Series, pd.DataFrame]:
    """The best cell and the cells statistically tied with it.

    Returns ``(best, ties)``. ``best``: the axes' values, ``config`` (in words),
    ``<metric>_mean`` and its interval ``<metric>_ci_low`` / ``_ci_high``
    (``compare.interval``: Student t, or the bootstrap joined with t for percentiles and
    ratios; none below 3 repeats), ``n`` (runs) and ``note``.

    ``ties``: the other cells that Dunnett's test cannot tell from the best at
    ``confidence`` (Dunnett 1955, "A multiple comparison procedure for comparing several
    treatments with a control", JASA 50:1096; ``scipy.stats.dunnett`` with the best cell as
    the control). Testing every cell against the best one pair at a time would, with 20
    cells, call about one truly different cell "tied" by chance in each search; Dunnett's
    test holds the family-wise error at 1 - ``confidence`` over all of them. A cell whose
    mean lies outside the best cell's interval is never tied, whatever the test says (with
    2 repeats a pairwise interval spanned -489 % to +1049 % and called a cell at a quarter
    of the best "tied"). Each tie has its mean, interval, ``n``, ``ratio_pct`` = 100 ×
    (mean best / mean other - 1) with ``low_pct`` / ``high_pct`` from Dunnett's
    simultaneous interval of the difference, ``p`` and the ``verdict``; best-first. Cells
    with fewer than 3 runs (``compare.MIN_REPEATS``) cannot be judged: they are left out
    of ``ties`` and counted in ``ties.attrs["unjudged"]``."""
    if higher_is_better is None:  # the metric's own direction (columns.better); no direction: higher
        higher_is_better = better(metric) != "lower"
    names, _ = _axes(axes)
    runs = _runs(table, names, metric)
    runs = runs.assign(_config=[_config(r, names) for _, r in runs[names].iterrows()])
    groups = {k: g[metric].to_numpy(dtype=float) for k, g in runs.groupby("_config", sort=False)}
    cells = []
    for key, g in runs.groupby("_config", sort=False):
        v = groups[key]
        low, high = compare.interval(v, metric, confidence)
        cells.append(
            {
                **g.iloc[0][names].to_dict(),
                "config": key,
                f"{metric}_mean": float(v.mean()),
                f"{metric}_ci_low": low,
                f"{metric}_ci_high": high,
                "n": len(v),
            }
        )
    cells = pd.DataFrame(cells)
    best_i = cells[f"{metric}_mean"].idxmax() if higher_is_better else cells[f"{metric}_mean"].idxmin()
    best = cells.loc[best_i].copy()
    others = cells.drop(index=best_i)
    judged = others[others["n"] >= compare.MIN_REPEATS] if best["n"] >= compare.MIN_REPEATS else others.iloc[:0]
    ties = [
        {**other.to_dict(), **tie}
        for (_, other), tie in zip(
            judged.iterrows(), _dunnett(groups[best["config"]], [groups[c] for c in judged["config"]], confidence)
        )
        if tie and best[f"{metric}_ci_low"] <= other[f"{metric}_mean"] <= best[f"{metric}_ci_high"]
    ]
    columns = [
        *names,
        "config",
        f"{metric}_mean",
        f"{metric}_ci_low",
        f"{metric}_ci_high",
        "n",
        "ratio_pct",
        "low_pct",
        "high_pct",
        "p",
        "verdict",
    ]
    ties = pd.DataFrame(ties, columns=columns).sort_values(
        f"{metric}_mean", ascending=not higher_is_better, ignore_index=True
    )
    unjudged = len(others) - len(judged)
    ties.attrs = {"metric": metric, "confidence": confidence, "unjudged": unjudged, "method": "Dunnett"}
    if best["n"] < compare.MIN_REPEATS:
        best["note"] = (
            f"{int(best['n'])} run(s) of the best cell: {compare.NOT_INFORMATIVE}, ties cannot be "
            f"judged; repeat the search (repeats >= {compare.MIN_REPEATS})"
        )
    elif unjudged:
        best["note"] = f"{unjudged} cell(s) with fewer than {compare.MIN_REPEATS} runs could not be judged against it"
    else:
        best["note"] = (
            f"{len(ties)} other cell(s) tied with it (Dunnett's test against the best over "
            f"{len(judged)} cells, {100 * confidence:g} % family-wise)"
        )
    return best, ties


def _dunnett(best: np.ndarray, others: list[np.ndarray], confidence: float) -> list[dict]:
    """For each of ``others``: {} when Dunnett's test tells it from ``best`` (p below
    1 - ``confidence``), else its ``ratio_pct``, ``low_pct``, ``high_pct`` (best against it,
    %, from the simultaneous interval of the difference), ``p`` and ``verdict``."""
    if not others:
        return []
    from scipy import stats  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab

    result = stats.dunnett(*others, control=best)
    ci = result.confidence_interval(confidence)
    out = []
    for v, p, diff_low, diff_high in zip(others, result.pvalue, ci.low, ci.high):
        if p < 1 - confidence:
            out.append({})
            continue
        m = v.mean()
        out.append(
            {
                "ratio_pct": 100 * (best.mean() / m - 1),
                "low_pct": -100 * diff_high / m,
                "high_pct": -100 * diff_low / m,
                "p": float(p),
                "verdict": f"tied with the best: Dunnett's test p = {p:.2f} over {len(others)} cells",
            }
        )
    return out


# ---------------------------------------------------------------- roofline
def roofline(
    table: pd.DataFrame, axes, metric: str = "iops", hold: str = "best", confidence: float = 0.95
) -> dict[str, Any]:
    """The single-device roof and how the aggregate ``metric`` scales with devices and cores
    (seed 003, AiSIO: the roof is the best single-device result, 3 857 938 IOPS, and
    N devices can do at most N × roof).

    ``roof``: the best cell with ``devices`` == 1 (every cell if the table has no
    ``devices`` axis: then it is the best configuration, said in ``notes``) — ``value``
    with its interval (``compare.interval`` over the cell's runs), ``n_runs``, ``config``.
    ``devices`` / ``cores``: one row per count N with the aggregate ``<metric>_mean`` and
    its interval, ``roof_x_n`` and ``efficiency_pct`` = aggregate / roof_x_n × 100 (with
    ``efficiency_low_pct`` / ``_high_pct`` from the aggregate's interval; the roof's own
    uncertainty is not in it), ``config`` (the other settings). ``hold="best"``: at each N
    the best cell over the other axes; ``hold="fixed"``: the other axes held at the best
    configuration's values, as seed 003 varied one variable around its parameterisation C.
    For devices the roof is the single-device roof; for cores it is the best cell with one
    core (``core_roof``: linear scaling from one core), and ``device_bound`` = roof × the
    devices of that row's cell is the ceiling the devices put on it. If the smallest count
    is N0 > 1, the roof is the best at N0 divided by N0 (said in ``notes``). ``None`` for
    an axis the table lacks. The result is a dict: ``metric``, ``hold``, ``roof``,
    ``core_roof``, ``devices``, ``cores``, ``notes`` (a list of sentences)."""
    if hold not in ("best", "fixed"):
        raise InputError(
            f"hold={hold!r}: choose 'best' (the best cell at each count) or 'fixed' "
            f"(the other axes at the best configuration)"
        )
    if better(metric) != "higher":
        raise InputError(
            f"a roofline is a ceiling on a throughput: metric={metric!r} is not one; choose "
            f"from {', '.join(sorted(HIGHER_IS_BETTER))}"
        )
    names, _ = _axes(axes)
    runs = _runs(table, names, metric)
    notes: list[str] = []
    for axis in ("devices", "cores"):
        if axis in names:
            runs[axis] = _counts(runs[axis], axis)
    cells = _cell_summary(runs, names, metric, confidence)
    best_all = cells.loc[cells[f"{metric}_mean"].idxmax()]
    out: dict[str, Any] = {
        "metric": metric,
        "hold": hold,
        "confidence": confidence,
        "roof": None,
        "core_roof": None,
        "devices": None,
        "cores": None,
        "notes": notes,
    }
    if "devices" in names:
        out["roof"] = _unit_roof(cells, "devices", metric, notes, "device")
    else:
        out["roof"] = _roof_row(best_all, metric, 1)
        notes.append(
            "no devices axis: the roof is the best cell of the search (one device, as measured); "
            "no scaling with devices to read"
        )
    if "cores" in names:
        out["core_roof"] = _unit_roof(cells, "cores", metric, notes, "core")
    else:
        notes.append("no cores axis: no scaling with cores to read")
    for axis in ("devices", "cores"):
        if axis not in names:
            continue
        unit = out["roof"] if axis == "devices" else out["core_roof"]
        rows = []
        for n in sorted(cells[axis].unique()):
            at = cells[cells[axis] == n]
            if hold == "fixed":
                for x in (x for x in names if x != axis):
                    at = at[_is(at[x], best_all[x])]
            if at.empty:
                rows.append({axis: n, "config": "not measured (the best configuration's other settings)"})
                continue
            c = at.loc[at[f"{metric}_mean"].idxmax()]
            roof_n = unit["value"] * n
            row = {
                axis: n,
                f"{metric}_mean": c[f"{metric}_mean"],
                f"{metric}_ci_low": c[f"{metric}_ci_low"],
                f"{metric}_ci_high": c[f"{metric}_ci_high"],
                "n_runs": int(c["n"]),
                "roof_x_n": roof_n,
                "efficiency_pct": 100 * c[f"{metric}_mean"] / roof_n,
                "efficiency_low_pct": 100 * c[f"{metric}_ci_low"] / roof_n,
                "efficiency_high_pct": 100 * c[f"{metric}_ci_high"] / roof_n,
                "config": _config(c, [x for x in names if x != axis]),
            }
            if axis == "cores" and "devices" in names:
                row["device_bound"] = out["roof"]["value"] * c["devices"]
            rows.append(row)
        cols = [
            axis,
            f"{metric}_mean",
            f"{metric}_ci_low",
            f"{metric}_ci_high",
            "n_runs",
            "roof_x_n",
            "efficiency_pct",
            "efficiency_low_pct",
            "efficiency_high_pct",
            "config",
        ]
        out[axis] = pd.DataFrame(
            rows, columns=cols + (["device_bound"] if axis == "cores" and "devices" in names else [])
        )
    if out["devices"] is not None or out["cores"] is not None:
        notes.append(
            "the best cell at each count" if hold == "best" else "the other axes held at the best configuration"
        )
    notes.append("the roof is a maximum over cells, biased up by their noise (its interval is the cell's own)")
    return out


@wrapped_text
def describe_roofline(result: dict[str, Any]) -> str:
    """The roofline in words: the roof, then each count's aggregate and efficiency."""
    m = result["metric"]
    roof = result["roof"]
    parts = [
        f"roof: {_short(roof['value'], m)} {_words(m)} per device ({roof['config']}"
        + (
            f"; {100 * result.get('confidence', 0.95):g} % CI {_short(roof['ci_low'], m)}-{_short(roof['ci_high'], m)}"
            if not math.isnan(roof["ci_low"])
            else f"; {compare.NOT_INFORMATIVE}"
        )
        + ")"
    ]
    for axis in ("devices", "cores"):
        frame = result[axis]
        if frame is None:
            continue
        unit = "device" if axis == "devices" else "core"
        roof_name = "roof" if axis == "devices" else "core roof"
        each = "; ".join(
            f"{int(r[axis])} {unit}{'s' if r[axis] != 1 else ''}: "
            + (
                f"{_short(r[f'{m}_mean'], m)} = {r['efficiency_pct']:.0f} % of {int(r[axis])} × {roof_name}"
                if pd.notna(r.get(f"{m}_mean"))
                else "not measured"
            )
            for _, r in frame.iterrows()
        )
        if axis == "cores":
            core = result["core_roof"]
            each = f"core roof {_short(core['value'], m)} per core ({core['config']}); " + each
        parts.append(f"vs {axis}: {each}")
    return "; ".join(parts) + ". " + " ".join(n[0].upper() + n[1:] + "." for n in result["notes"])


def _unit_roof(cells: pd.DataFrame, axis: str, metric: str, notes: list[str], unit: str) -> dict[str, Any]:
    """The best cell at the smallest count of ``axis``, per unit (divided by that count)."""
    n0 = cells[axis].min()
    at = cells[cells[axis] == n0]
    roof = _roof_row(at.loc[at[f"{metric}_mean"].idxmax()], metric, n0)
    if n0 != 1:
        notes.append(f"no run with one {unit}: the {unit} roof is the best at {n0:g} {unit}s divided by {n0:g}")
    return roof


def _roof_row(cell: pd.Series, metric: str, per: float) -> dict[str, Any]:
    return {
        "value": float(cell[f"{metric}_mean"]) / per,
        "ci_low": float(cell[f"{metric}_ci_low"]) / per,
        "ci_high": float(cell[f"{metric}_ci_high"]) / per,
        "n_runs": int(cell["n"]),
        "config": _config(
            cell, [c for c in cell.index if c not in {f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high", "n"}]
        ),
    }


def _cell_summary(runs: pd.DataFrame, names: list[str], metric: str, confidence: float) -> pd.DataFrame:
    """Every cell's mean of ``metric``, its interval (``compare.interval``) and ``n``."""
    rows = []
    for key, g in runs.groupby(names, sort=False, dropna=False):
        v = g[metric].to_numpy(dtype=float)
        low, high = compare.interval(v, metric, confidence)
        rows.append(
            {
                **dict(zip(names, key if isinstance(key, tuple) else (key,))),
                f"{metric}_mean": float(v.mean()),
                f"{metric}_ci_low": low,
                f"{metric}_ci_high": high,
                "n": len(v),
            }
        )
    return pd.DataFrame(rows)


def _counts(values: pd.Series, axis: str) -> pd.Series:
    """A devices / cores column as numbers, or a message saying which value is not one."""
    out = pd.to_numeric(values, errors="coerce")
    bad = values[out.isna() | (out <= 0)]
    if len(bad):
        raise InputError(
            f"{axis} must be a positive count of {axis}; the table has {bad.iloc[0]!r}: "
            f"fix the search spec's {axis} axis"
        )
    return out


# ---------------------------------------------------------------- frequency
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
    names, order = _axes(axes)
    runs = _runs(table, names, metric)
    cells = _cells(runs, names, metric)
    noise = _pooled_noise(cells)
    has_freq = "cpu_freq_mhz" in runs and runs["cpu_freq_mhz"].notna().any()
    if has_freq:
        fcells = _cells(runs[runs["cpu_freq_mhz"].notna()], names, "cpu_freq_mhz")
        fnoise = _pooled_noise(fcells)
    rows, skipped = [], {}
    for axis in [x for x in which if x in names]:
        levels = _levels(runs[axis], order.get(axis))
        if len(levels) < 2:
            skipped[axis] = f"one level ({_text(levels[0]) if levels else 'none'})"
            continue
        part = []
        for level in levels:
            m, lo, hi, n_runs, _ = _level(cells[_is(cells[axis], level)], noise, confidence)
            f = _level(fcells[_is(fcells[axis], level)], fnoise, confidence) if has_freq else (math.nan,) * 3
            sources = runs.loc[_is(runs[axis], level), "freq_source"] if "freq_source" in runs else pd.Series()
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
            r["change_pct"] = _pct_change(r[f"{metric}_mean"], ref[f"{metric}_mean"])
            r["freq_change_pct"] = _pct_change(r["cpu_freq_mhz_mean"], ref["cpu_freq_mhz_mean"])
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
    words, parts = _words(metric), []
    for r in freq.itertuples(index=False):
        if _key(r.level) == _key(r.reference_level):
            continue
        ref = freq[(freq["axis"] == r.axis) & freq["level"].map(_key).eq(_key(r.reference_level))].iloc[0]
        head = f"{r.axis} {_text(r.level)}: {words} {percent(r.change_pct, signed=True)} vs {_text(r.reference_level)}"
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


# ---------------------------------------------------------------- shared
def _axes(axes) -> tuple[list[str], dict[str, list]]:
    """Axis names and, from a dict (``spec.axes``), each axis's levels in the spec's order."""
    if isinstance(axes, str):
        axes = [axes]
    if isinstance(axes, Mapping):
        names, order = list(axes), {k: list(v) for k, v in axes.items()}
    elif axes is None:
        names, order = [], {}
    else:
        names, order = list(axes), {}
    if not names:
        raise InputError("no axes given: pass the search's axes (spec.axes, or a list of the table's setting columns)")
    return names, order


def _pair_axes(a: str, b: str, axes) -> tuple[list[str], dict[str, list]]:
    if a == b:
        raise InputError(f"an interaction needs two different axes; got {a!r} twice")
    names, order = _axes(axes if axes is not None else [a, b])
    return [*names, *[x for x in (a, b) if x not in names]], order


def _model(model: str) -> str:
    if model not in MODELS:
        raise InputError(f"model={model!r}: choose 'multiplicative' (log scale: effects as ratios) or 'additive'")
    return model


def _runs(table: pd.DataFrame, names: list[str], metric: str) -> pd.DataFrame:
    """One row per run (``compare.per_run``) of the runs whose status is ok, with a value."""
    missing = [a for a in names if a not in table]
    if missing:
        raise InputError(
            f"no column {', '.join(map(repr, missing))} in the table: the axes must be columns of "
            f"the search table ({', '.join(map(str, table.columns))})"
        )
    ok = table[table["status"].fillna("ok").astype(str) == "ok"] if "status" in table else table
    if ok.empty:
        raise InputError(
            "no run with status 'ok' in the table: nothing to read; see the runs' status column and their fio stderr"
        )
    runs = compare.per_run(ok, names)
    if metric not in runs:
        raise InputError(
            f"no metric {metric!r} in the table: choose from {', '.join(runs.select_dtypes('number').columns)}"
        )
    runs = runs[runs[metric].notna()].reset_index(drop=True)
    if runs.empty:
        raise InputError(f"no run has a {metric} value: nothing to read")
    return runs


def _cells(runs: pd.DataFrame, names: list[str], metric: str) -> pd.DataFrame:
    """Per full cell: ``mean``, ``var`` (sample variance over its runs; NaN for one) and ``n``."""
    return runs.groupby(names, sort=False, dropna=False)[metric].agg(mean="mean", var="var", n="size").reset_index()


def _pooled_noise(cells: pd.DataFrame) -> tuple[float, int]:
    """The pooled squared CV of the cells with repeats and its degrees of freedom (what a
    one-run cell borrows); (NaN, 0) when no cell has repeats."""
    rep = cells[(cells["n"] >= 2) & (cells["mean"] != 0)]
    df = int((rep["n"] - 1).sum())
    if not df:
        return math.nan, 0
    return float(((rep["n"] - 1) * rep["var"] / rep["mean"] ** 2).sum() / df), df


def _level(c: pd.DataFrame, noise: tuple[float, int], confidence: float) -> tuple[float, float, float, int, int]:
    """Marginal mean of a level (mean of its cells' means) and its interval: variance
    sum(s_c² / n_c) / k², Welch–Satterthwaite degrees of freedom; one-run cells borrow the
    pooled relative variance. Returns (mean, low, high, runs, cells)."""
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
    return mean, mean - half, mean + half, runs, k


def _complete(cells: pd.DataFrame, names: list[str], axis: str, levels: list) -> bool:
    """Every level of ``axis`` has the same combinations of the other axes."""
    others = [x for x in names if x != axis]
    if not others:
        return True
    combos = [set(map(tuple, cells.loc[_is(cells[axis], lv), others].astype(str).to_numpy())) for lv in levels]
    return all(c == combos[0] for c in combos)


def _levels(values: pd.Series, wanted: Sequence | None = None) -> list:
    """The levels present: in ``wanted``'s order (the spec's; matched as text), the rest
    after; else numbers (and sizes such as 4k) ascending, then text, NaN last."""
    present = list(pd.unique(values))
    if wanted:
        by_text = {_key(v): v for v in present}
        ordered = [by_text.pop(_key(w)) for w in wanted if _key(w) in by_text]
        return ordered + sorted(by_text.values(), key=_sort_key)
    return sorted(present, key=_sort_key)


def _sort_key(v) -> tuple:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return (2, 0.0, "")
    if isinstance(v, (bool, np.bool_, int, float, np.number)):
        return (0, float(v), str(v))
    m = _SIZE.match(str(v))
    if m:  # '512', '4k', '1MiB': fio's sizes, base 2
        return (0, float(m.group(1)) * 1024 ** ("kmgtp".find(m.group(2).lower()) + 1 if m.group(2) else 0), str(v))
    return (1, 0.0, str(v))


def _key(v) -> str:
    """A level as text, for matching spec values to table values (4 and '4', NaN and None)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _is(series: pd.Series, level) -> pd.Series:
    """Rows whose value is ``level`` (NaN matches NaN)."""
    if _key(level) == "nan":
        return series.isna()
    return series.map(_key) == _key(level)


def _config(row: pd.Series, names: Sequence[str]) -> str:
    return ", ".join(f"{x}={_text(row[x])}" for x in names) or "the only cell"


def _text(v) -> str:
    """A level for people: YAML reads ``on``/``off`` as booleans, so they are written back so."""
    if isinstance(v, (bool, np.bool_)):
        return "on" if v else "off"
    return _key(v)


def _metric_of(frame: pd.DataFrame) -> str:
    if "metric" in frame.attrs:
        return frame.attrs["metric"]
    means = [c[:-5] for c in frame.columns if c.endswith("_mean")]
    if not means:
        raise InputError("not a main_effects table (no <metric>_mean column): pass effects.main_effects(...)")
    return means[0]


def _pct_change(x: float, ref: float) -> float:
    return 100 * (x / ref - 1) if ref and not math.isnan(ref) and not math.isnan(x) else math.nan


def _words(metric: str) -> str:
    return label(metric).split(" (")[0]


def _short(x: float, metric: str) -> str:
    """41k, 3.86M, 120 µs: three significant digits, the unit unless the words carry it."""
    if x is None or math.isnan(x):
        return "n/a"
    num = si_number(x, k_from=1e3)
    col = COLUMNS.get(metric)
    unit = col.unit if col else ""
    if not unit or metric == "iops":
        return num
    return f"{num}{unit}" if unit.startswith("B") else f"{num} {unit}"


def _repeats_text(cells: pd.DataFrame) -> str:
    lo, hi = int(cells["n"].min()), int(cells["n"].max())
    if hi < 2:
        return "one run per cell: no interval"
    return f"{lo} runs per cell" if lo == hi else f"{lo}-{hi} runs per cell"
