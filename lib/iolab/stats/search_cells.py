"""A parameter search's table read as runs and cells: the shared vocabulary of
``effects`` (main effects), ``interactions``, ``best_config``, ``roofline`` and ``frequency``.

Input: a search table (``iolab.measure.search.load_table``: one row per run and direction, one
column per axis) or any tidy table with ``run_id`` and the axes as columns. Rows whose
``status`` is not ``ok`` are left out, then ``repeat_stats.per_run`` makes one row per run
(IOPS and bandwidth summed over the run's jobs and directions, the rest averaged). A
*cell* is one combination of every axis's level; its runs are its repeats. ``axes`` is a
list of column names, or ``spec.axes`` (a dict axis -> levels: the levels keep the spec's
order). A *level* is matched as text (4 and '4', NaN and None are the same level) and
written for people as the spec has it (YAML's booleans back to ``on`` / ``off``). Pure
analysis: nothing here runs, reads or writes anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.columns import COLUMNS, label
from ..core.errors import InputError
from ..core.readable import si_number
from . import repeat_stats

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


# ---------------------------------------------------------------- runs and cells
def search_axes(axes) -> tuple[list[str], dict[str, list]]:
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


def ok_runs(table: pd.DataFrame, names: list[str], metric: str) -> pd.DataFrame:
    """One row per run (``repeat_stats.per_run``) of the runs whose status is ok, with a value."""
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
    runs = repeat_stats.per_run(ok, names)
    if metric not in runs:
        raise InputError(
            f"no metric {metric!r} in the table: choose from {', '.join(runs.select_dtypes('number').columns)}"
        )
    runs = runs[runs[metric].notna()].reset_index(drop=True)
    if runs.empty:
        raise InputError(f"no run has a {metric} value: nothing to read")
    return runs


def cell_means(runs: pd.DataFrame, names: list[str], metric: str) -> pd.DataFrame:
    """Per full cell: ``mean``, ``var`` (sample variance over its runs; NaN for one) and ``n``."""
    return runs.groupby(names, sort=False, dropna=False)[metric].agg(mean="mean", var="var", n="size").reset_index()


# ---------------------------------------------------------------- levels
def ordered_levels(values: pd.Series, wanted: Sequence | None = None) -> list:
    """The levels present: in ``wanted``'s order (the spec's; matched as text), the rest
    after; else numbers (and sizes such as 4k) ascending, then text, NaN last."""
    present = list(pd.unique(values))
    if wanted:
        by_text = {level_key(v): v for v in present}
        ordered = [by_text.pop(level_key(w)) for w in wanted if level_key(w) in by_text]
        return ordered + sorted(by_text.values(), key=_sort_key)
    return sorted(present, key=_sort_key)


def _sort_key(v) -> tuple:
    """Numbers and fio sizes (base 2) first, ascending; then text; NaN last."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return (2, 0.0, "")
    if isinstance(v, (bool, np.bool_, int, float, np.number)):
        return (0, float(v), str(v))
    m = _SIZE.match(str(v))
    if m:  # '512', '4k', '1MiB': fio's sizes, base 2
        return (0, float(m.group(1)) * 1024 ** ("kmgtp".find(m.group(2).lower()) + 1 if m.group(2) else 0), str(v))
    return (1, 0.0, str(v))


def level_key(v) -> str:
    """A level as text, for matching spec values to table values (4 and '4', NaN and None)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def at_level(series: pd.Series, level) -> pd.Series:
    """Rows whose value is ``level`` (NaN matches NaN)."""
    if level_key(level) == "nan":
        return series.isna()
    return series.map(level_key) == level_key(level)


def level_text(v) -> str:
    """A level for people: YAML reads ``on``/``off`` as booleans, so they are written back so."""
    if isinstance(v, (bool, np.bool_)):
        return "on" if v else "off"
    return level_key(v)


def config_text(row: pd.Series, names: Sequence[str]) -> str:
    """A cell in words: 'iodepth=16, governor=performance' (the axes ``names`` of ``row``)."""
    return ", ".join(f"{x}={level_text(row[x])}" for x in names) or "the only cell"


# ---------------------------------------------------------------- figures in words
def pct_change(x: float, ref: float) -> float:
    """``x`` against ``ref``, %: 100 × (x / ref - 1); NaN when either is NaN or ``ref`` is 0."""
    return 100 * (x / ref - 1) if ref and not math.isnan(ref) and not math.isnan(x) else math.nan


def metric_words(metric: str) -> str:
    """A metric's name without its unit ('IOPS', 'clat p99'): ``columns.label``."""
    return label(metric).split(" (")[0]


def short_value(x: float, metric: str) -> str:
    """41k, 3.86M, 120 µs: three significant digits, the unit unless the words carry it."""
    if x is None or math.isnan(x):
        return "n/a"
    num = si_number(x, k_from=1e3)
    col = COLUMNS.get(metric)
    unit = col.unit if col else ""
    if not unit or metric == "iops":
        return num
    return f"{num}{unit}" if unit.startswith("B") else f"{num} {unit}"
