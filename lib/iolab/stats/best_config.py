"""The best configuration of a parameter search and the configurations tied with it.

    from iolab.stats.best_config import best_config
    best, ties = best_config(table, spec.axes)          # the best cell; the cells Dunnett cannot tell from it

Input: a search table and its axes, read as runs and cells (``search_cells``). The *best*
cell is the one with the best mean (higher or lower: ``columns.better``); *tied* with it
is every cell that Dunnett's many-to-one test cannot tell from it at ``confidence``
(C. W. Dunnett, "A multiple comparison procedure for comparing several treatments with a
control", JASA 50:1096, 1955), the family-wise error held over every cell at once. Each
cell's interval is ``repeat_stats.interval`` over its runs. The best of many cells is biased up
by its own noise (the winner's curse): its interval is the cell's own, not widened for the
choice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.columns import better
from . import repeat_stats
from .search_cells import config_text, ok_runs, search_axes


def best_config(
    table: pd.DataFrame, axes, metric: str = "iops", higher_is_better: bool | None = None, confidence: float = 0.95
) -> tuple[pd.Series, pd.DataFrame]:
    """The best cell and the cells statistically tied with it.

    Returns ``(best, ties)``. ``best``: the axes' values, ``config`` (in words),
    ``<metric>_mean`` and its interval ``<metric>_ci_low`` / ``_ci_high``
    (``repeat_stats.interval``: Student t, or the bootstrap joined with t for percentiles and
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
    with fewer than 3 runs (``repeat_stats.MIN_REPEATS``) cannot be judged: they are left out
    of ``ties`` and counted in ``ties.attrs["unjudged"]``."""
    if higher_is_better is None:  # the metric's own direction (columns.better); no direction: higher
        higher_is_better = better(metric) != "lower"
    names, _ = search_axes(axes)
    runs = ok_runs(table, names, metric)
    runs = runs.assign(_config=[config_text(r, names) for _, r in runs[names].iterrows()])
    groups = {k: g[metric].to_numpy(dtype=float) for k, g in runs.groupby("_config", sort=False)}
    cells = []
    for key, g in runs.groupby("_config", sort=False):
        v = groups[key]
        low, high = repeat_stats.interval(v, metric, confidence)
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
    judged = (
        others[others["n"] >= repeat_stats.MIN_REPEATS] if best["n"] >= repeat_stats.MIN_REPEATS else others.iloc[:0]
    )
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
    if best["n"] < repeat_stats.MIN_REPEATS:
        best["note"] = (
            f"{int(best['n'])} run(s) of the best cell: {repeat_stats.NO_INTERVAL}, ties cannot be "
            f"judged; repeat the search (repeats >= {repeat_stats.MIN_REPEATS})"
        )
    elif unjudged:
        best["note"] = (
            f"{unjudged} cell(s) with fewer than {repeat_stats.MIN_REPEATS} runs could not be judged against it"
        )
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
