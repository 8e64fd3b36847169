"""Drift within a study: did the machine change under it?

Every run's system snapshot (``system.json``, read into per-run id columns by
``iolab.runs.producers``) is compared with the first run of its study, the earliest by
``run_id`` (which starts with the run's UTC start time). ``flag`` adds a ``drift`` column
naming what changed on each run — "scheduler_active none -> mq-deadline; kernel 6.1.0 ->
6.12.0" — or "" when it matches:

    table = drift.flag(runcache.load_runs("data/runs/qd-knee-..."))
    table[table.drift != ""]

A key the study varies on purpose is not drift: when the table has the swept column that
sets it (``SWEPT_AS``: a ``scheduler`` sweep sets ``scheduler_active``), each run is
compared with the first run of the same swept value instead. ``sweep()`` passes the columns
it swept; without ``swept=``, a swept column is recognised by name when it is not itself a
snapshot column (``scheduler``); ``governor`` and ``smt`` are both, so pass ``swept=`` for
a table loaded by hand from a sweep over those knobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ..core.system import RUN_FACTS

DRIFT_KEYS = RUN_FACTS  # the machine facts of every run's row (iolab.core.system.MACHINE_FACTS)
SWEPT_AS: dict[str, tuple[str, ...]] = {  # snapshot column -> swept columns that set it
    "scheduler_active": ("scheduler",),
    "governor": ("governor",),
    "smt": ("smt",),
}


def _same(a: Any, b: Any) -> bool:
    return (pd.isna(a) and pd.isna(b)) if (pd.isna(a) or pd.isna(b)) else str(a) == str(b)


def _show(value: Any) -> str:
    return "n/a" if pd.isna(value) else str(value)


def _swept_columns(table: pd.DataFrame, keys: Sequence[str], swept: Iterable[str] | None) -> set[str]:
    if swept is not None:
        return {c for c in swept if c in table.columns}
    return {c for k in keys for c in SWEPT_AS.get(k, ()) if c in table.columns and c not in keys}


def changes(runs: pd.DataFrame, keys: Sequence[str] = DRIFT_KEYS, swept: Iterable[str] | None = None) -> dict[str, str]:
    """run_id -> what drifted from the first run ("" for none); one row per run in ``runs``,
    already in run order."""
    keys = [k for k in keys if k in runs.columns]
    swept_cols = _swept_columns(runs, keys, swept)
    first = runs.iloc[0]
    out: dict[str, str] = {}
    for _, run in runs.iterrows():
        found = []
        for key in keys:
            by = [c for c in SWEPT_AS.get(key, ()) if c in swept_cols]
            if by:  # compared with the first run of the same swept value
                same_cell = (runs[by].astype(str) == run[by].astype(str).values).all(axis=1)
                base = runs[same_cell].iloc[0]
            else:
                base = first
            if not _same(base[key], run[key]):
                found.append(f"{key} {_show(base[key])} -> {_show(run[key])}")
        out[run["run_id"]] = "; ".join(found)
    return out


def flag(
    table: pd.DataFrame,
    keys: Sequence[str] = DRIFT_KEYS,
    *,
    swept: Iterable[str] | None = None,
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """``table`` with a ``drift`` text column on every row: "" when its run's snapshot keys
    match the first run of its study, else what changed ("kernel a -> b; governor x -> y").

    The study is the whole table, or each group of ``by`` (a column or columns naming the
    study). ``swept``: the columns the study swept (a key set by one of them is compared
    within runs of the same swept value; see the module docstring). Rows without ``run_id``
    (no runs) are returned as they are, with an empty ``drift``."""
    out = table.copy()
    if out.empty or "run_id" not in out.columns:
        out["drift"] = pd.Series("", index=out.index, dtype=object)
        return out
    runs = out.drop_duplicates("run_id").sort_values("run_id", kind="stable")
    found: dict[str, str] = {}
    groups = [runs] if by is None else [g for _, g in runs.groupby(by, sort=False, dropna=False)]
    for group in groups:
        found.update(changes(group, keys, swept))
    out["drift"] = out["run_id"].map(found).fillna("")
    return out
