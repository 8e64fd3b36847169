"""The roofline of a parameter search: the single-device roof, and how the aggregate
throughput scales with devices and cores against it.

    from iolab.stats.roofline import describe_roofline, roofline
    roof = roofline(table, spec.axes)                    # single-device roof, aggregate vs devices and cores
    print(describe_roofline(roof))

Input: a search table and its axes, read as runs and cells (``search_cells``). The method
is seed 003's (AiSIO, "CPU-initiated I/O: Optimal Parameter Search"): the roof is the best
single-device cell (3 857 938 IOPS there); N devices can at most do N × roof, and the
efficiency is the aggregate over N × roof, % (seed 003: 61 720 159 IOPS with 16 devices
and 8 cores, 99.99 % of 16 × roof). Each cell's interval is ``repeat_stats.interval`` over its
runs. The roof is a maximum over cells, biased up by their noise (the winner's curse): its
interval is the cell's own, not widened for the choice.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..core.columns import HIGHER_IS_BETTER, better
from ..core.errors import InputError
from ..core.readable import wrapped_text
from . import repeat_stats
from .search_cells import at_level, config_text, metric_words, ok_runs, search_axes, short_value


def roofline(
    table: pd.DataFrame, axes, metric: str = "iops", hold: str = "best", confidence: float = 0.95
) -> dict[str, Any]:
    """The single-device roof and how the aggregate ``metric`` scales with devices and cores
    (seed 003, AiSIO: the roof is the best single-device result, 3 857 938 IOPS, and
    N devices can do at most N × roof).

    ``roof``: the best cell with ``devices`` == 1 (every cell if the table has no
    ``devices`` axis: then it is the best configuration, said in ``notes``) — ``value``
    with its interval (``repeat_stats.interval`` over the cell's runs), ``n_runs``, ``config``.
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
    names, _ = search_axes(axes)
    runs = ok_runs(table, names, metric)
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
                    at = at[at_level(at[x], best_all[x])]
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
                "config": config_text(c, [x for x in names if x != axis]),
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
        f"roof: {short_value(roof['value'], m)} {metric_words(m)} per device ({roof['config']}"
        + (
            f"; {100 * result.get('confidence', 0.95):g} % CI {short_value(roof['ci_low'], m)}-{short_value(roof['ci_high'], m)}"
            if not math.isnan(roof["ci_low"])
            else f"; {repeat_stats.no_interval_words(roof.get('n_runs'))}"
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
                f"{short_value(r[f'{m}_mean'], m)} = {r['efficiency_pct']:.0f} % of {int(r[axis])} × {roof_name}"
                if pd.notna(r.get(f"{m}_mean"))
                else "not measured"
            )
            for _, r in frame.iterrows()
        )
        if axis == "cores":
            core = result["core_roof"]
            each = f"core roof {short_value(core['value'], m)} per core ({core['config']}); " + each
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
        "config": config_text(
            cell, [c for c in cell.index if c not in {f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high", "n"}]
        ),
    }


def _cell_summary(runs: pd.DataFrame, names: list[str], metric: str, confidence: float) -> pd.DataFrame:
    """Every cell's mean of ``metric``, its interval (``repeat_stats.interval``) and ``n``."""
    rows = []
    for key, g in runs.groupby(names, sort=False, dropna=False):
        v = g[metric].to_numpy(dtype=float)
        low, high = repeat_stats.interval(v, metric, confidence)
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
