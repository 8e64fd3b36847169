"""Each recorded result over time or over versions, and the changes its intervals call
significant: "did it get worse?" read from the results history (``iolab.record.history``).

    tr = trend(history.load(), over="kernel")    # one row per point, in order, per series
    tr[tr.significant]                           # the changes
    in_words(tr)                                 # 'peak IOPS: 231,000 → 198,000 IO/s (−14 %), worse: ...'

A *series* is one result name (``metric``, with its unit) of one notebook run with the same
parameters on the same machine and device (``SERIES``): only like is compared with like; the
series of a metric are told apart by what differs between them (``series``). Along ``over``
the points are ordered by time (``recorded_utc``), or by the ``over`` column's values —
``kernel``, ``fio_version``, ``commit``, … — in natural version order (6.1 < 6.12) or in the
order they first appeared (``order="time"``), each value's runs by time.

Each point is compared with the one before it in its series. The change is *significant*
when the two points' intervals [low, high] do not overlap. That is conservative against
``iolab.stats.repeat_stats``'s test on the repeats (its bootstrap of the ratio of the means joined
with the Welch interval): two 95 % intervals that do not overlap mean a difference at well
beyond 95 %, while intervals that overlap a little can still hide one ``compare`` would find.
The history uses the overlap rule because it keeps each result's interval, not the repeats
behind it. A point without an interval (none recorded, or fewer than 3 repeats) is never
called significant; the next point with one is compared with the last earlier point that has
one (``why`` says so).

``change`` is "better" or "worse" when the metric has a better direction — ``iolab.core.columns.better``
for a result named after a column, else from its unit (``direction``: IO/s and MiB/s higher,
µs, ms and cycles/IO lower) — and "" otherwise; ``shift`` ("up", "down") says which way any
significant change went.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ..core.columns import better
from ..core.errors import InputError
from ..core.readable import interval_text, percent

SERIES = ("notebook", "name", "unit", "measured", "hostname", "device")  # measured: iolab.record.history.load
OVER_WORDS = {"recorded_utc": "time", "kernel": "kernel version", "fio_version": "fio version"}
HIGHER_UNITS = {"io/s", "iops", "kio/s", "mio/s", "b/s", "kib/s", "mib/s", "gib/s", "kb/s", "mb/s", "gb/s"}
LOWER_UNITS = {"ns", "µs", "us", "ms", "cycles/io", "cycles per io"}
CARRIED = (
    "recorded_utc",
    "notebook",
    "executed",
    "kernel",
    "fio_version",
    "hostname",
    "device",
    "commit",
    "dirty",
    "emulated",
    "parameters",
)


def direction(name: str, unit: str = "") -> str:
    """Which way a result improves: ``"higher"``, ``"lower"`` or ``""`` (not known). A name that
    is a column of the registry (``iops``, ``clat_p99_us``) goes by ``columns.better``; else the
    unit: throughput (IO/s, MiB/s, …) higher, time per IO (ns, µs, ms) and cycles/IO lower.
    Percentages, counts, queue depths and seconds have no direction here."""
    return better(name) or (
        "higher" if unit.strip().lower() in HIGHER_UNITS else "lower" if unit.strip().lower() in LOWER_UNITS else ""
    )


def version_key(value: Any) -> tuple:
    """A natural sort key: digits as numbers ("6.1.0-56" < "6.12.3", "fio-3.9" < "fio-3.33");
    a missing value last."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ((2, ""),)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|\D+", str(value)))


def trend(
    history: pd.DataFrame,
    over: str = "recorded_utc",
    metrics: Iterable[str] | None = None,
    order: str = "version",
    by: Iterable[str] = SERIES,
) -> pd.DataFrame:
    """The points of each series along ``over``, each compared with the last earlier point of
    its series that has an interval.

    ``history``: ``iolab.record.history.load``'s table (numeric results only are drawn: a
    result recorded as text has no trend). ``over``: ``recorded_utc`` or a column of it
    (``kernel``, ``fio_version``, ``commit``, ``iolab_version``, ``hostname``); ``order``:
    "version" (natural version order) or "time" (first appearance) for such a column.

    One row per point: ``metric``, ``unit``, ``series`` (what tells it from the metric's other
    series, "" when it has none), ``at`` (its place on ``over``: a time or a value),
    ``category`` (0, 1, … along a column ``over``; the time order along recorded_utc), ``value``,
    ``low``, ``high``, ``has_interval``, ``direction``, ``previous`` (the value compared with;
    ``previous_at``, ``previous_utc``, ``previous_low``, ``previous_high`` its place and interval),
    ``change_pct`` (against it, %), ``significant``, ``shift``, ``change``, ``why`` (the
    comparison in words) and the provenance of the point (``CARRIED``). ``attrs`` keep the history's and
    ``over``."""
    if order not in ("version", "time"):
        raise InputError(f"order is 'version' (natural version order) or 'time' (first appearance), not {order!r}")
    if over not in history.columns:
        raise InputError(
            f"the history has no column {over!r} to draw along; choose recorded_utc, kernel, fio_version, "
            "commit or iolab_version"
        )
    by = ["parameters" if c == "measured" and c not in history.columns else c for c in by]  # a table of old
    by = [c for c in by if c in history.columns]
    pts = history[history["value"].notna()]
    if metrics is not None:
        pts = pts[pts["name"].isin(list(metrics))]
    pts = pts.sort_values("recorded_utc", kind="stable").copy()
    if over != "recorded_utc":
        pts["at"] = pts[over].astype(object).where(pts[over].notna(), "unknown")
        seen = list(dict.fromkeys(pts["at"]))  # first appearance, the table being in time order
        cats = sorted(seen, key=version_key) if order == "version" else seen
        pts["category"] = pts["at"].map({v: i for i, v in enumerate(cats)}).astype(int)
        pts = pts.sort_values(["category", "recorded_utc"], kind="stable")
    else:
        pts["at"] = pts["recorded_utc"]
        pts["category"] = np.arange(len(pts))
    out = []
    names = [c for c in by if c != "name"] or ["unit"]
    keys = [f"_series_{c}" for c in names]  # missing values as "": NaN would never equal itself
    for c, k in zip(names, keys):
        pts[k] = pts[c].astype(object).where(pts[c].notna(), "")
    for name, of_metric in pts.groupby("name", sort=False):
        labels = _labels(of_metric, keys, names)
        for key, series in of_metric.groupby(keys, sort=False):
            out.append(_compared(series, str(name), labels[key if isinstance(key, tuple) else (key,)]))
    frame = pd.concat(out, ignore_index=True) if out else _empty()
    frame.attrs.update({**history.attrs, "over": over})
    return frame


def _compared(series: pd.DataFrame, name: str, label: str) -> pd.DataFrame:
    """One series' points, each compared with the last earlier point that has an interval
    (the point just before it when it has none itself: ``previous``, ``change_pct``)."""
    value, low, high = (series[c].to_numpy(float) for c in ("value", "low", "high"))
    has = ~np.isnan(low) & ~np.isnan(high)
    unit = str(series["unit"].iloc[0])
    way = direction(name, unit)
    good = {"higher": "up", "lower": "down"}.get(way)
    n = len(series)
    against = np.full(n, -1)
    last = -1
    for i in range(n):
        against[i] = last if has[i] and last >= 0 else i - 1
        last = i if has[i] else last
    judged = has & (against >= 0) & has[np.maximum(against, 0)]
    prev = np.where(against >= 0, value[np.maximum(against, 0)], np.nan)
    up = judged & (low > high[np.maximum(against, 0)])
    down = judged & (high < low[np.maximum(against, 0)])
    significant = up | down
    shift = np.where(up, "up", np.where(down, "down", ""))
    change = np.where(~significant | (good is None), "", np.where(shift == good, "better", "worse"))
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(prev != 0, 100 * (value / prev - 1), np.nan)
    at = series["at"].to_numpy()
    skipped = against < np.arange(n) - 1
    why = [
        ""
        if i == 0
        else "no interval recorded"
        if not judged[i]
        else ("intervals apart" if significant[i] else "intervals overlap")
        + (f" ({percent(pct[i], signed=True)})" if significant[i] else "")
        + (" against the last point with an interval" if skipped[i] else "")
        for i in range(n)
    ]
    return pd.DataFrame(
        {
            "metric": name,
            "unit": unit,
            "series": label,
            "at": at,
            "category": series["category"].to_numpy(),
            "value": value,
            "low": low,
            "high": high,
            "has_interval": has,
            "direction": way,
            "previous": prev,
            "previous_at": [at[j] if j >= 0 else None for j in against],
            "previous_utc": [series["recorded_utc"].iloc[j] if j >= 0 else pd.NaT for j in against],
            "previous_low": np.where(against >= 0, low[np.maximum(against, 0)], np.nan),
            "previous_high": np.where(against >= 0, high[np.maximum(against, 0)], np.nan),
            "change_pct": pct,
            "significant": significant,
            "shift": shift,
            "change": change,
            "why": why,
            **{c: series[c].to_numpy() for c in CARRIED if c in series},
        }
    )


def _labels(of_metric: pd.DataFrame, keys: list[str], names: list[str]) -> dict[tuple, str]:
    """Each series of one metric (grouped by ``keys``, the columns ``names`` with missing
    values as "") -> what tells it from the others ("" when it is alone): the differing
    columns and parameters in words ("cpu 1, queue depths [1, 4]"; "default" where a run left it so)."""
    groups = [g if isinstance(g, tuple) else (g,) for g in of_metric.groupby(keys, sort=False).groups]
    if len(groups) < 2:
        return {g: "" for g in groups}
    varies = [i for i, n in enumerate(names) if n not in ("measured", "parameters") and len({g[i] for g in groups}) > 1]
    json_col = next((c for c in ("measured", "parameters") if c in names), None)
    params = {g: _params(g[names.index(json_col)]) if json_col else {} for g in groups}
    differing = sorted({k for p in params.values() for k in p if len({repr(q.get(k)) for q in params.values()}) > 1})
    out = {}
    for g in groups:
        parts = [f"{names[i].replace('_', ' ')} {g[i] or 'none'}" for i in varies]
        parts += [f"{k.replace('_', ' ')} {_said(params[g].get(k))}" for k in differing]
        text = ", ".join(parts)
        out[g] = text if len(text) <= 60 else text[:59] + "…"
    return out


def _said(value: Any) -> str:
    """A parameter's value in a legend: "default" where a run did not change it (None), on/off
    for booleans, else as written."""
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _params(text: Any) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _empty() -> pd.DataFrame:
    cols = ["metric", "unit", "series", "at", "category", "value", "low", "high", "has_interval", "direction"]
    cols += [
        "previous",
        "previous_at",
        "previous_utc",
        "previous_low",
        "previous_high",
        "change_pct",
        "significant",
        "shift",
        "change",
        "why",
        *CARRIED,
    ]
    return pd.DataFrame({c: pd.Series(dtype=bool if c in ("has_interval", "significant") else object) for c in cols})


def changes(tr: pd.DataFrame) -> pd.DataFrame:
    """The significant changes of a ``trend`` table (its rows where the intervals are apart)."""
    return tr[tr["significant"].astype(bool)]


def in_words(tr: pd.DataFrame) -> list[str]:
    """Each significant change as a sentence: the metric (and series), from → to with the
    intervals, the change in %, better/worse, and where along ``over`` it happened."""
    over = tr.attrs.get("over", "recorded_utc")
    lines = []
    for row in changes(tr).itertuples():
        unit = f" {row.unit}" if row.unit else ""
        what = row.metric + (f" ({row.series})" if row.series else "")
        verdict = row.change or f"changed ({row.shift}; no better direction known for {row.unit or 'this unit'})"
        lines.append(
            f"{what}: {_num(row.previous)} {interval_text(_num(row.previous_low), _num(row.previous_high))} → "
            f"{_num(row.value)} {interval_text(_num(row.low), _num(row.high))}{unit} "
            f"({percent(row.change_pct, signed=True)}), "
            f"{verdict}: {_when(row, over)}"
        )
    return lines


def _num(value: float) -> str:
    if value is None or np.isnan(value):
        return "none"
    return f"{value:,.0f}" if abs(value) >= 1000 or value == int(value) else f"{value:.4g}"


def _when(row: Any, over: str) -> str:
    """'2026-11-02 12:00 → 2026-11-03 08:00 UTC', with the versions along a column ``over``."""
    before, after = (
        pd.Timestamp(t).strftime("%Y-%m-%d %H:%M") if pd.notna(t) else "?" for t in (row.previous_utc, row.recorded_utc)
    )
    if over == "recorded_utc":
        return f"{before} → {after} UTC"
    if row.previous_at == row.at:
        return f"both on {over} {row.at}, {before} → {after} UTC"
    return f"{over} {row.previous_at} → {row.at} ({before} → {after} UTC)"
