"""What transfers across hardware, for ``iolab seeds``' pages: the shape of a write-up's
result (the gain of one step over another, IOPS at one depth over another, cycles per IO,
a penalty) set beside the same shape measured here. A Gen5 SSD's IOPS over a memory-backed
loop device's say little; how much polling or batching gains on each does.

    table = shapes(seed, comparisons(seed, out), out)   # one row per entry of the manifest's shape:

Each entry of a seed manifest's ``shape:`` names published figures by their labels
(``of`` over ``over``, ``metric`` iops unless said; ``of`` alone: the figure itself), and the
same ratio is taken of the local values of those rows. An entry whose local side is not a
pair of rows names a recorded result instead (``local: {from, result, fields}``: a
percentage change, read as the ratio 1 + change/100). The local interval combines the two
rows' 95 % intervals on the log scale (half-widths added in quadrature: the rows are
independent runs), so it stays above 0; without both intervals there is none, and the row
says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..report.contract import declared
from .comparisons import batch_records, finite, run_level, skipped
from .manifest import Seed

COLUMNS = ["shape", "published", "local", "low", "high", "why", "unit"]


def _row(table: pd.DataFrame, label: str, metric: str) -> Mapping[str, Any] | None:
    hit = table[(table["label"] == label) & (table["metric"] == metric)]
    return hit.iloc[0].to_dict() if len(hit) else None


def _half_log(r: Mapping[str, Any]) -> float | None:
    """Half the width of a row's interval on the log scale (None without one)."""
    low, high = r.get("low"), r.get("high")
    if not (finite(low) and finite(high)) or low <= 0 or high <= 0:
        return None
    return (math.log(high) - math.log(low)) / 2


def _ratio(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> tuple[Any, Any, Any]:
    """(a ÷ b, low, high) of two rows' local values; the interval combined on the log scale."""
    if a is None or b is None or not finite(a.get("local")) or not finite(b.get("local")) or not b["local"]:
        return None, None, None
    value = a["local"] / b["local"]
    ha, hb = _half_log(a), _half_log(b)
    if ha is None or hb is None or value <= 0:
        return value, None, None
    h = math.hypot(ha, hb)
    return value, value * math.exp(-h), value * math.exp(h)


def _recorded(seed: Seed, out: Path, local: Mapping[str, Any]) -> tuple[Any, Any, Any, str]:
    """A recorded percentage change as a ratio: (1 + change/100, low, high, its note); with
    ``as: value``, the recorded figure itself."""
    rec = batch_records(seed, out).get(str(local.get("from")))
    exp = next(e for e in seed.experiments if e.name == local["from"])
    why = skipped(exp, run_level(seed, out))
    if rec is None and why:
        return None, None, None, f"experiment {exp.name} {why}"
    if rec is None or rec.get("status") != "ok":
        return None, None, None, f"experiment {exp.name} has not run or failed"
    name = declared(exp.notebook).result(str(local["result"])).name.format(**(local.get("fields") or {}))
    got = next((r for r in rec.get("results") or [] if r.get("name") == name), None)
    if got is None or not finite(got.get("value")):
        return None, None, None, f"the run recorded no {name!r}"
    low, high = got.get("low"), got.get("high")
    bounded = finite(low) and finite(high)
    if local.get("as") == "value":  # a recorded figure, not a change
        return (
            got["value"],
            low if bounded else None,
            high if bounded else None,
            f"{name} ({'; '.join(str(t) for t in (got.get('note'), got.get('source')) if t) or 'recorded'})",
        )  # its note and source: what the figure holds (core-busy: all else that ran on the CPU too)
    return (
        1 + got["value"] / 100,
        1 + low / 100 if bounded else None,
        1 + high / 100 if bounded else None,
        f"{name} ({got.get('note') or got.get('source') or 'recorded'})",
    )


def shapes(seed: Seed, table: pd.DataFrame, out: str | Path) -> pd.DataFrame:
    """One row per ``shape:`` entry of the manifest: ``shape`` (its words), ``published``
    (the write-up's ratio or figure), ``local`` with ``low``/``high``, ``unit`` ("×" for a
    ratio, the metric's unit for one figure) and ``why`` (where the local side comes from, or
    why there is none)."""
    rows = []
    for entry in seed.shape:
        metric = entry.get("metric", "iops")
        of = _row(table, entry["of"], metric) if table is not None and len(table) else None
        over = _row(table, entry["over"], metric) if entry.get("over") and table is not None and len(table) else None
        published = None
        if of is not None:
            published = of["published"] / over["published"] if over is not None else of["published"]
        if entry.get("local"):
            local, low, high, why = _recorded(seed, Path(out), entry["local"])
        elif entry.get("over"):
            local, low, high = _ratio(of, over)
            why = (
                f"{entry['of']} ÷ {entry['over']}, both as measured here"
                if finite(local)
                else "no local value for " + " or ".join(r["label"] for r in (of, over) if r and not finite(r["local"]))
                if of is not None and over is not None
                else "the manifest names a figure the table does not have"
            )
        else:
            local, low, high = (of or {}).get("local"), (of or {}).get("low"), (of or {}).get("high")
            why = (of or {}).get("how", "the manifest names a figure the table does not have")
        rows.append(
            {
                "shape": entry["name"],
                "published": published,
                "local": local,
                "low": low,
                "high": high,
                "why": why,
                "unit": "×"
                if entry.get("over") or (entry.get("local") and entry["local"].get("as") != "value")
                else (of or {}).get("unit", ""),  # a recorded figure keeps its metric's unit
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["shapes", "COLUMNS"]
