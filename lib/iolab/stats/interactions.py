"""Which pairs of a parameter search's axes interact: settings whose effects do not simply
multiply (or add).

    from iolab.stats.interactions import interaction, interactions
    pairs = interactions(table, spec.axes)                             # every pair, strongest first
    pivot = interaction(table, "cores", "stress", axes=spec.axes)      # one pair's cell means

Input: a search table and its axes, read as runs and cells (``search_cells``). The
**interaction** of two axes a, b is how far the (a, b) cell means (each the mean of the
full cells at a, b) depart from the no-interaction model mean_a + mean_b - grand mean, the
interaction term of the two-way ANOVA (D. C. Montgomery, *Design and Analysis of
Experiments*, 8th ed., Wiley 2013, §5.3: SS_AB from ȳ_ij - ȳ_i - ȳ_j + ȳ). By default on
the log scale (``model="multiplicative"``): a setting that costs 20 % of IOPS everywhere is
no interaction, however large the IOPS it multiplies — throughput effects are ratios.
``model="additive"`` takes the raw scale, in % of the grand mean. Its F test uses the
within-cell mean square of the full grid (exact for a complete, balanced grid; an
approximation otherwise). On an incomplete grid the additive fit is the least-squares one,
by alternating row and column means.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import InputError
from .search_cells import at_level, level_text, ok_runs, ordered_levels, search_axes

MODELS = ("multiplicative", "additive")


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
    runs = ok_runs(table, names[0], metric)
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
    names, order = search_axes(axes)
    model = _model(model)
    runs = ok_runs(table, names, metric)
    multi = [x for x in names if len(ordered_levels(runs[x], order.get(x))) > 1]
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
    rows, cols = ordered_levels(runs[a], order.get(a)), ordered_levels(runs[b], order.get(b))
    Y, R, W = (np.full((len(rows), len(cols)), np.nan) for _ in range(3))
    for i, ra in enumerate(rows):
        for j, cb in enumerate(cols):
            c = full[at_level(full[a], ra) & at_level(full[b], cb)]
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
        "where": f"{a}={level_text(rows[where_i])}, {b}={level_text(cols[where_j])}",
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


def _pair_axes(a: str, b: str, axes) -> tuple[list[str], dict[str, list]]:
    """The axes of the full cells (``axes``, with a and b added if missing) and their order."""
    if a == b:
        raise InputError(f"an interaction needs two different axes; got {a!r} twice")
    names, order = search_axes(axes if axes is not None else [a, b])
    return [*names, *[x for x in (a, b) if x not in names]], order


def _model(model: str) -> str:
    """``model`` if it is one of ``MODELS``, else an InputError saying which to choose."""
    if model not in MODELS:
        raise InputError(f"model={model!r}: choose 'multiplicative' (log scale: effects as ratios) or 'additive'")
    return model
