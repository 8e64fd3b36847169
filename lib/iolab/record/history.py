"""The local history of recorded results: every result every executed notebook recorded
(``iolab.record.results``), with where it came from, kept in one folder to answer "did it get
worse?" (``iolab history``, notebook 09, ``iolab.stats.trend``).

    append("papermill_runs/01_queue_depth_knee.ipynb", kept)   # -> data/history/<part>.parquet
    load(metrics=["peak IOPS"], since="30d")                     # -> one row per recorded result

``iolab.report.publish.execute`` appends after every notebook that ran to its end (``iolab
batch``, ``demo``, ``reproduce``, ``seeds`` and the NVMe lab all go through it); a failed
notebook adds nothing. In JupyterLab (a live kernel with ``%load_ext iolab``), each cell that
records results and ends without an error appends them as a part of its own (``keep_live``):
``notebook`` is the session's notebook (``LIVE`` when the kernel has none), ``executed``
says it was a live kernel (``LIVE: <notebook path>``), ``parameters`` the parameters-cell
values the kernel holds that differ from the cell's own. A headless run appends once, at its end.

The history is a folder (``$IOLAB_HISTORY``, else ``history/`` in the data folder,
``iolab.core.paths.history_dir``; ``IOLAB_HISTORY=off`` or empty keeps none) of Parquet files,
one *part* per executed notebook, written once under a name of its own (UTC time, the
notebook's name made safe, random hex; temporary name then rename) and never rewritten: the
raw record stays as it was written, parallel batch jobs need no lock, and a reader never sees
half a part. ``load`` reads every part back as one table; a part that cannot be read (cut
short, not Parquet) is left out with a warning naming it, and the others are read.

Why Parquet through pyarrow and not DuckDB: pyarrow is already a dependency (run tables
are cached as Parquet, ``iolab.runs.runcache``) and does all the history needs — write a
part, read every part as one table. DuckDB would be one more dependency of tens of MB (the
whole database engine) for that, and its one database file would have to be locked and
written by each parallel batch job in turn.

One row per recorded result (``COLUMNS``):

- the result: ``name``, ``value`` (a number; NaN when the value is text, a bool or none),
  ``value_text`` (the value as text when it is not a number), ``unit``, ``low`` and ``high``
  (its interval, NaN when none was recorded), ``source``, ``note``, ``detail`` (a per-setting
  figure ``results.record_many`` marks, folded away in write-ups);
- the run: ``notebook`` (the source notebook's name, e.g. ``01_queue_depth_knee``),
  ``executed`` (the executed notebook's path), ``recorded_utc`` (when it was appended, UTC),
  ``parameters`` (JSON text), ``run_folders`` (JSON list of the run folders it recorded);
- provenance: ``commit`` and ``dirty`` (the iolab checkout's git HEAD and whether its tree had
  changes, ``iolab.record.provenance.checkout``), ``iolab_version``, and from the first run
  folder's ``system.json`` (``provenance.machine_of``; this machine at append time when the
  notebook recorded no run folder, said in ``machine_from``): ``kernel``, ``fio_version``,
  ``hostname``, ``cpu_model``, ``device`` (with the NVMe model and firmware when the snapshot
  has them) and ``emulated`` (what the NVMe lab said of itself: an emulator's numbers);
- ``flags``: "shared CPU: up to 53 % other programs (2 of 3 runs)" when its runs shared their
  CPU (``iolab.record.provenance.shared_cpu_note``), else empty.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import secrets
import sys
import warnings
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core import paths
from ..core.atomic import write_atomic
from ..core.errors import InputError, printable
from ..core.readable import interval_text
from ..core.runfiles import quote
from . import provenance
from .results import show

ENV = "IOLAB_HISTORY"
OFF = ("", "off")  # IOLAB_HISTORY values that keep no history
SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("value", pa.float64()),
        ("value_text", pa.string()),
        ("unit", pa.string()),
        ("low", pa.float64()),
        ("high", pa.float64()),
        ("source", pa.string()),
        ("note", pa.string()),
        ("detail", pa.bool_()),
        ("notebook", pa.string()),
        ("executed", pa.string()),
        ("recorded_utc", pa.timestamp("us", tz="UTC")),
        ("parameters", pa.string()),
        ("run_folders", pa.string()),
        ("commit", pa.string()),
        ("dirty", pa.bool_()),
        ("iolab_version", pa.string()),
        ("kernel", pa.string()),
        ("fio_version", pa.string()),
        ("hostname", pa.string()),
        ("cpu_model", pa.string()),
        ("device", pa.string()),
        ("emulated", pa.string()),
        ("machine_from", pa.string()),
        ("flags", pa.string()),
    ]
)
COLUMNS = tuple(SCHEMA.names)
HOW_TO_FILL = (
    "run a notebook to its end, in JupyterLab or headless (make demo, iolab batch MANIFEST), and the results it "
    "records land there"
)
LIVE = "live kernel"  # the executed column of a part a live kernel wrote (``keep_live``)
FROM_PYTHON = "papermill from Python (the notebook is not known to its kernel)"  # papermill's API, not its CLI


class HistoryWarning(UserWarning):
    """A part of the history that could not be read and was left out."""


# ---------------------------------------------------------------- where it is
def folder(given: str | os.PathLike | None = None) -> Path | None:
    """The history folder: ``given``, else ``$IOLAB_HISTORY``, else ``history/`` in the data
    folder; None when ``IOLAB_HISTORY`` is set to ``off`` or empty (no history kept)."""
    if given is not None and str(given) != "":
        return Path(given)
    if ENV in os.environ and os.environ[ENV].strip().lower() in OFF:
        return None
    return paths.env_path(ENV) or paths.history_dir()


def _required(given: str | os.PathLike | None) -> Path:
    where = folder(given)
    if where is None:
        raise InputError(
            f"{ENV}={os.environ.get(ENV)!r} turns the history off; unset it (default: "
            f"{paths.history_dir()}) or give the folder to read (iolab history --dir FOLDER)"
        )
    if where.exists() and not where.is_dir():
        raise InputError(f"{where} is a file, not a history folder; give the folder of .parquet parts")
    return where


# ---------------------------------------------------------------- writing
def rows(
    kept: Mapping[str, Any],
    executed: str | os.PathLike,
    notebook: str | os.PathLike | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The history rows of one executed notebook: ``kept`` is what
    ``iolab.record.results.keep_with`` returned ({"results", "run_folders", "parameters"});
    ``notebook`` the notebook it was run from (default: ``executed``'s name)."""
    results = [r for r in kept.get("results") or [] if isinstance(r, Mapping) and r.get("name")]
    if not results:
        return []
    folders = [str(f) for f in kept.get("run_folders") or [] if isinstance(f, (str, os.PathLike))]
    snap, machine_from = provenance.machine_of(folders)
    if not folders or machine_from.startswith("this machine"):
        machine_from = "this machine when the results were added (no run folder recorded holds a system.json)"
    code = provenance.checkout()
    common = {
        "notebook": Path(notebook or executed).stem,
        "executed": str(executed) if str(executed).startswith((LIVE, FROM_PYTHON)) else str(Path(executed).absolute()),
        "recorded_utc": now or datetime.now(UTC),
        "parameters": json.dumps(kept.get("parameters") or {}, sort_keys=True, default=str, ensure_ascii=False),
        "run_folders": json.dumps(folders, ensure_ascii=False),
        "commit": code.get("commit"),
        "dirty": code.get("dirty"),
        "iolab_version": code.get("iolab_version"),
        "kernel": _text(snap.get("kernel")),
        "fio_version": _text(snap.get("fio_version")),
        "hostname": _text(snap.get("hostname")),
        "cpu_model": _text(snap.get("cpu_model")),
        "device": device_of(snap),
        "emulated": provenance.emulated(folders),
        "machine_from": machine_from,
        "flags": provenance.shared_cpu_note(folders),  # its runs shared their CPU with other programs
    }
    out = []
    for entry in results:
        value = entry.get("value")
        number = _number(value)
        out.append(
            {
                "name": str(entry["name"]),
                "value": number,
                "value_text": None if value is None or not math.isnan(number) else str(value),
                "unit": str(entry.get("unit") or ""),
                "low": _number(entry.get("low")),
                "high": _number(entry.get("high")),
                "source": str(entry.get("source") or ""),
                "note": str(entry.get("note") or ""),
                "detail": bool(entry.get("detail")),
                **common,
            }
        )
    return out


def device_of(snap: Mapping[str, Any]) -> str | None:
    """'nvme0n1 (QEMU NVMe Ctrl, firmware 7.2.22)': the snapshot's device, with the NVMe
    controller's model and firmware when it has them."""
    device = _text(snap.get("device"))
    nvme = snap.get("nvme_device") if isinstance(snap.get("nvme_device"), Mapping) else {}
    facts = [str(nvme["model"]).strip()] if nvme.get("model") else []
    facts += [f"firmware {str(nvme['firmware_rev']).strip()}"] if nvme.get("firmware_rev") else []
    if facts:
        return f"{device or 'NVMe'} ({', '.join(facts)})"
    return device


def append(
    executed: str | os.PathLike,
    kept: Mapping[str, Any],
    notebook: str | os.PathLike | None = None,
    where: str | os.PathLike | None = None,
    now: datetime | None = None,
) -> Path | None:
    """Add the results of one executed notebook (``rows``) to the history folder ``where``
    (default ``folder()``) as a new part, dated ``now`` (default: now, UTC); returns its path,
    or None when there was nothing to add (no results recorded) or the history is off. The
    part is written to a temporary name, then renamed: readers never see half of one."""
    table_rows = rows(kept, executed, notebook, now)
    target = folder(where)
    if not table_rows or target is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    stamp = table_rows[0]["recorded_utc"].strftime("%Y%m%dT%H%M%S%fZ")
    name = f"{stamp}-{paths.safe_name(table_rows[0]['notebook'], limit=60)}-{secrets.token_hex(4)}.parquet"
    path = paths.inside(target, name)  # the notebook's name never leaves the folder
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(table_rows, schema=SCHEMA), sink)
    write_atomic(path, sink.getvalue().to_pybytes())
    return path


def keep(executed: str | os.PathLike, kept: Mapping[str, Any], notebook: str | os.PathLike | None = None) -> None:
    """``append``, for ``publish.execute``: the notebook ran and is written, so a history that
    cannot be written (disk full, permissions, a file in the way) is one line on stderr
    saying what to do, never an error of the notebook's."""
    try:
        append(executed, kept, notebook)
    except Exception as exc:  # noqa: BLE001 - the history is a by-product of a finished run
        where = "the history"
        try:
            where = str(folder() or where)
        except InputError:
            pass
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        print(
            f"iolab: the results of {Path(executed).name} were not added to {where} ({why}); free space or "
            f"fix its permissions, or set {ENV}=FOLDER to keep the history elsewhere ({ENV}=off keeps none)",
            file=sys.stderr,
        )


def keep_live(kept: Mapping[str, Any], finished: bool = True, shell: Any = None) -> None:
    """What one cell of a live kernel recorded (``iolab.record.results.keep_live``) added to the
    history as a part of its own, said in one line: where it went, or why it did not (the cell
    failed, the history is off or cannot be written). Never an error of the cell's."""
    count = len(kept.get("results") or [])
    if not count:
        return
    what = f"{count} result{'s' * (count != 1)}"
    if not finished:
        print(
            f"not added to the results history: this cell stopped with an error; run it again to its end to add its {what}"
        )
        return
    try:
        target = folder()
    except InputError as exc:
        print(f"not added to the results history: {exc}")
        return
    if target is None:
        print(f"not added to the results history: {ENV}={os.environ.get(ENV)!r} keeps none (unset it to keep them)")
        return
    notebook, parameters, run_by, output = live_source(shell)
    if run_by == provenance.PAPERMILL:  # papermill's own run: its output notebook, else its word for it
        executed = output or FROM_PYTHON
        marked = provenance.PAPERMILL
    else:
        executed, marked = f"{LIVE}: {notebook}" if notebook else LIVE, "JupyterLab"
    try:
        append(executed, {**kept, "parameters": parameters}, Path(notebook).stem if notebook else None, target)
    except Exception as exc:  # noqa: BLE001 - the history is a by-product of the cell
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        print(
            f"not added to the results history in {target} ({why}); free space or fix its permissions, or set {ENV}=FOLDER"
        )
        return
    print(f"added {what} to the results history ({target}), marked ({marked}): notebook 09 draws them")


def live_source(shell: Any = None) -> tuple[str | None, dict[str, Any], str, str | None]:
    """(the notebook a kernel runs: its ``__session__``, else ``$JPY_SESSION_NAME``, else the
    input papermill's command line names, or None; the values of that notebook's parameters
    cell the kernel now holds that differ from the cell's own, as ``publish.execute`` keeps
    the parameters given; who runs it: "JupyterLab" or "papermill",
    ``iolab.record.provenance.papermill_parent``; a papermill run's output notebook, when
    its command line names it, else None)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    names = getattr(shell, "user_ns", {}) if shell is not None else {}
    notebook = names.get("__session__") or os.environ.get("JPY_SESSION_NAME") or None
    run_by, output = "JupyterLab", None
    if not notebook:
        papermill = provenance.papermill_parent(names.get("In") or [])
        if papermill is not None:
            (notebook, output), run_by = papermill, provenance.PAPERMILL
    if not isinstance(notebook, str) or not notebook.endswith(".ipynb"):
        return None, {}, run_by, output
    changed = {}
    for name, default in parameter_defaults(Path(notebook)).items():
        if name in names:
            value = json.loads(json.dumps(names[name], default=str))
            if value != default:
                changed[name] = value
    return notebook, changed, run_by, output


def parameter_defaults(notebook: Path) -> dict[str, Any]:
    """name -> value of each literal assignment in ``notebook``'s cell tagged ``parameters``
    ({} when it has none or cannot be read)."""
    import ast

    try:
        cells = json.loads(notebook.read_text()).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    for cell in cells:
        if "parameters" in ((cell.get("metadata") or {}).get("tags") or []):
            source = "".join(cell.get("source", ""))
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return {}
            out = {}
            for node in tree.body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
                    try:
                        out[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
            return out
    return {}


# ---------------------------------------------------------------- reading
def empty() -> pd.DataFrame:
    """A history with no rows, with every column and its type."""
    return SCHEMA.empty_table().to_pandas()


def parts(where: str | os.PathLike | None = None) -> list[Path]:
    """The history's parts, oldest first (by name: each starts with its UTC time)."""
    where = _required(where)
    return sorted(p for p in where.glob("*.parquet") if not p.name.startswith(".")) if where.is_dir() else []


def load(
    where: str | os.PathLike | None = None,
    metrics: Iterable[str] | str | None = None,
    since: Any = None,
    notebooks: Iterable[str] | str | None = None,
) -> pd.DataFrame:
    """The history as one table (one row per recorded result, ``COLUMNS``), oldest first:
    of the results named ``metrics`` (exact names; all when None), recorded at or after
    ``since`` (``parse_since``: a date or an age such as "7d"), of the ``notebooks`` named
    (their names without .ipynb). An absent folder is an empty history. A part that cannot
    be read is left out with a ``HistoryWarning`` naming it. ``attrs["history"]`` is the folder;
    a column ``measured`` holds each row's parameters as what they measured (``measured_as``),
    which ``iolab.stats.trend`` draws series by."""
    where = _required(where)
    found = parts(where)
    table = _read(found).to_pandas() if found else empty()
    table["detail"] = table["detail"].eq(True)  # null in a part from before the column: none were
    if metrics is not None:
        table = table[table["name"].isin([metrics] if isinstance(metrics, str) else list(metrics))]
    if since is not None:
        table = table[table["recorded_utc"] >= parse_since(since)]
    if notebooks is not None:
        names = [notebooks] if isinstance(notebooks, str) else list(notebooks)
        table = table[table["notebook"].isin([Path(n).stem if n.endswith(".ipynb") else n for n in names])]
    table = table.sort_values(["recorded_utc", "notebook"], kind="stable").reset_index(drop=True)
    table["measured"] = [measured_as(p, n) for p, n in zip(table["parameters"], table["notebook"])]
    table.attrs["history"] = str(where)
    table.attrs["parts"] = len(found)
    return table


NOT_MEASURED = {"interactive", "allow_destructive", "runs_dir", "run_dir", "resume", "history_dir"}  # how, not what


def measured_as(parameters: Any, notebook: Any) -> str:
    """A history row's parameters as what they measured: without those that change how the
    notebook runs, not what fio does (``NOT_MEASURED``), and without values equal to the
    notebook's own defaults (papermill records what it was given, a JupyterLab run what
    differs from the cell): a JupyterLab run, a papermill run and ``make demo``'s of the same
    settings join one series. JSON text, keys sorted."""

    try:
        given = json.loads(parameters) if isinstance(parameters, str) else {}
    except ValueError:
        return str(parameters)
    if not isinstance(given, dict):
        return str(parameters)
    defaults = _defaults(str(notebook)) if isinstance(notebook, str) and notebook else {}
    kept = {k: v for k, v in given.items() if k not in NOT_MEASURED and not (k in defaults and defaults[k] == v)}
    return json.dumps(kept, sort_keys=True, default=str)


@functools.lru_cache(maxsize=32)
def _defaults(notebook: str) -> dict[str, Any]:
    return parameter_defaults(paths.NOTEBOOKS / f"{notebook}.ipynb")


def _read(found: list[Path]) -> pa.Table:
    """Every part as one table; when one fails, part by part, leaving out (with a warning)
    the ones that cannot be read."""
    import pyarrow.dataset as ds

    found = [path for path in found if _is_part(path)]
    try:
        return ds.dataset([str(p) for p in found], schema=SCHEMA, format="parquet").to_table()
    except (pa.ArrowException, OSError, ValueError):
        pass
    tables = []
    for path in found:
        try:
            part = pq.read_table(path)
            tables.append(
                pa.table(
                    [
                        part[c].cast(SCHEMA.field(c).type) if c in part.column_names else pa.nulls(len(part), t.type)
                        for c, t in zip(SCHEMA.names, SCHEMA)
                    ],
                    schema=SCHEMA,
                )
            )
        except (pa.ArrowException, OSError, ValueError) as exc:
            _left_out(path, (str(exc).splitlines() or [type(exc).__name__])[0])
    return pa.concat_tables(tables) if tables else SCHEMA.empty_table()


#: the columns every part has held since the first: a Parquet file without them is not one
PART_COLUMNS = ("name", "value", "notebook", "recorded_utc")


def _is_part(path: Path) -> bool:
    """Whether ``path`` holds a part of the history (its footer read: Parquet with the
    ``PART_COLUMNS``); a ``HistoryWarning`` naming it when it does not."""
    try:
        names = set(pq.read_schema(path).names)
    except (pa.ArrowException, OSError, ValueError) as exc:
        _left_out(path, (str(exc).splitlines() or [type(exc).__name__])[0])
        return False
    missing = [c for c in PART_COLUMNS if c not in names]
    if missing:
        _left_out(path, f"a Parquet file of something else: no column {', '.join(map(repr, missing))}")
    return not missing


def _left_out(path: Path, why: str) -> None:
    warnings.warn(
        f"{printable(path)}: not a readable part of the history ({printable(why[:160])}); left out, the other "
        "parts are read. Move it out of the folder (or delete it) to stop this warning",
        HistoryWarning,
        stacklevel=4,
    )


_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(m|min|h|d|w)\s*", re.IGNORECASE)
_AGE_UNITS = {"m": "min", "min": "min", "h": "h", "d": "D", "w": "W"}
MAX_AGE = pd.Timedelta(days=36_500)  # an age beyond it is a typo (and past 292 years, beyond pandas' times)


def parse_since(since: Any, now: datetime | None = None) -> pd.Timestamp:
    """The moment (UTC) ``since`` names: an ISO date or time ("2026-11-01",
    "2026-11-01T08:00", UTC unless it gives an offset), an age before ``now`` ("30m",
    "24h", "7d", "2w"), or a datetime. InputError for anything else."""
    if isinstance(since, (datetime, pd.Timestamp)):
        stamp = pd.Timestamp(since)
        return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    text = str(since)
    shown = quote(text, 40)
    if m := _AGE.fullmatch(text):
        unit = _AGE_UNITS[m.group(2).lower()]
        if float(m.group(1)) * pd.Timedelta(1, unit=unit).total_seconds() > MAX_AGE.total_seconds():
            raise InputError(
                f"since {shown} is further back than {MAX_AGE.days:,} days (100 years), which no "
                "recorded result is; give a smaller age (--since 30d) or leave --since out for every result"
            )
        return pd.Timestamp(now or datetime.now(UTC)).tz_convert("UTC") - pd.Timedelta(float(m.group(1)), unit)
    stamp = None
    if re.fullmatch(r"\s*\d{4}-\d{2}-\d{2}([T ][0-9:.]+)?(Z|[+-]\d{2}:?\d{2})?\s*", text):
        try:
            stamp = pd.Timestamp(text.strip())
        except ValueError:
            stamp = None
    if stamp is None or pd.isna(stamp):
        raise InputError(
            f"since {shown} is neither a date (2026-11-01, 2026-11-01T08:00, UTC) nor an age (30m, 24h, 7d, 2w); "
            "give one of those, e.g. --since 7d"
        )
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


# ---------------------------------------------------------------- for people
def summary(table: pd.DataFrame) -> str:
    """One sentence: how many results from how many notebooks, from when to when, where;
    or that the history is empty and how to fill it."""
    where = table.attrs.get("history", "the history")
    if table.empty:
        return f"No results in {where} yet: {HOW_TO_FILL}."
    runs = executions(table)
    live = executions(table[table["executed"].fillna("").str.startswith(LIVE)])
    first, last = (table["recorded_utc"].min(), table["recorded_utc"].max())
    same = ", ".join(
        value if value.startswith(column) else f"{column} {value}"
        for column, value in same_everywhere(readable(table)).items()
    )
    return (
        f"{len(table):,} result{'s' * (len(table) != 1)} from {runs:,} executed notebook{'s' * (runs != 1)}"
        + (f" ({live:,} of them in JupyterLab)" if live else "")
        + f", {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC, in {where}"
        + (f"; every one with {same}." if same else ".")
    )


FOLDED = ("kernel", "fio", "machine", "commit")  # provenance a readable(fold=True) table says once


def same_everywhere(shown: pd.DataFrame) -> dict[str, str]:
    """The ``FOLDED`` columns of a ``readable`` table that hold one value on every row."""
    return {
        c: shown[c].iloc[0]
        for c in FOLDED
        if c in shown and len(shown) and shown[c].nunique() == 1 and shown[c].iloc[0]
    }


def executions(table: pd.DataFrame) -> int:
    """How many notebook executions the rows come from: a notebook executed again to the same
    output (make demo) is one path at several times, one part each."""
    return len(table.drop_duplicates(["executed", "recorded_utc"]))


def readable(table: pd.DataFrame, fold: bool = False) -> pd.DataFrame:
    """The history as people read it: name, value with its interval, unit, date (UTC, kept
    whole on one line), kernel, fio, machine (hostname; "emulated" for the NVMe lab's),
    commit (short; "+" when the checkout had changes) and notebook ("(JupyterLab)" after the
    name when a live kernel recorded it). ``fold``: without the ``FOLDED`` columns that hold
    one value on every row (``summary`` names them), so the table fits the page."""

    def interval(row) -> str:
        text = row.value_text if _given(row.value_text) else show(None if pd.isna(row.value) else row.value)
        if pd.notna(row.low) or pd.notna(row.high):
            text += " " + interval_text(
                show(None if pd.isna(row.low) else row.low), show(None if pd.isna(row.high) else row.high)
            )
        return text

    def machine(row) -> str:
        return (row.hostname if _given(row.hostname) else "?") + (" (emulated)" if _given(row.emulated) else "")

    def commit(row) -> str:
        return (row.commit if _given(row.commit) else "")[:8] + ("+" if pd.notna(row.dirty) and bool(row.dirty) else "")

    def notebook(row) -> str:
        return row.notebook + (" (JupyterLab)" if _given(row.executed) and row.executed.startswith(LIVE) else "")

    shown = pd.DataFrame(
        {
            "name": table["name"],
            "value [interval]": [interval(r) for r in table.itertuples()],
            "unit": table["unit"],
            "date (UTC)": table["recorded_utc"].dt.strftime("%Y-%m-%d %H:%M"),  # one line: iolab.core.readable
            "kernel": table["kernel"].fillna(""),
            "fio": table["fio_version"].fillna(""),
            "machine": [machine(r) for r in table.itertuples()],
            "commit": [commit(r) for r in table.itertuples()],
            "notebook": [notebook(r) for r in table.itertuples()],
            "flags": table["flags"].fillna("") if "flags" in table else "",
        }
    )
    if not (shown["flags"] != "").any():  # shown only where a result's runs shared their CPU
        shown = shown.drop(columns="flags")
    return shown.drop(columns=list(same_everywhere(shown))) if fold else shown


def as_text(table: pd.DataFrame, width: int = 28) -> str:
    """``readable`` as aligned text columns (a cell over ``width`` characters shortened with
    "…", the name never), for the terminal."""
    shown = readable(table)
    cells = [list(shown.columns)] + [
        [v if i == 0 or len(v) <= width else v[: width - 1] + "…" for i, v in enumerate(map(str, row))]
        for row in shown.itertuples(index=False)
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    right = {1}  # the numbers
    lines = [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in cells
    ]
    return "\n".join(lines[:1] + ["  ".join("-" * w for w in widths)] + lines[1:])


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        return float(value) if math.isfinite(value) else math.nan
    except OverflowError:  # an int beyond a float: results.record keeps ints as they are
        return math.nan


def _given(value: Any) -> bool:
    """A text cell that holds something (pandas' missing text is None or NaN)."""
    return isinstance(value, str) and value != ""


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
