"""The tidy table of a folder of many runs, cached in that folder so it loads in seconds.

    table = load_cached("data/runs")                # as iolab.runs.store.load_runs("data/runs")
    table = load_cached(study_runs, status=None)    # failed and interrupted runs too

The result is ``iolab.runs.store.load_runs`` of the same folder, equal to it in rows, column
order and dtypes: one row per run and direction, the swept values of params.json as
columns, ``repeat`` and ``status``. Run folders are found as ``iolab.runs.store.find_runs`` finds
them (``root/*/run.json``; sub-folders such as ``root/warmup/<run>`` are not runs of root).

The cache is one parquet file, ``root/.iolab-table.parquet``, written whole (temporary name,
then rename; two loaders at once: the last writer wins). Its metadata holds the index: per
run folder name, its stamp, the run's status, and its rows. The stamp is a digest of every
file in the run folder and its sub-folders (the folder's own, each producer's, fio's logs,
a host's files): name, size, mtime_ns, ctime_ns and inode of each file present, so a file
that is added, removed, rewritten (a new inode when renamed into place) or edited in place
(even with its mtime put back: ctime cannot be) changes it. A run that is added, removed or
changed (run.json rewritten by a repair marking it interrupted, a fio.json replaced) is
re-derived alone with ``iolab.runs.store.run_table``; the rest come from the file. A run that
cannot be read is kept in the index with its reason, warned about on every load (a
``RunSkipped`` warning, as ``load_runs`` gives), until one of its files changes. The whole
cache is rebuilt when iolab's code, pandas, pyarrow or this format (``CACHE_VERSION``)
changes, and when the file cannot be read. A folder iolab cannot write is loaded without a
cache.

Exact round trip: a run's rows are stored with their own dtypes. Runs whose columns and dtypes
are the same form a block; each (column, dtype) pair is a parquet column of its own, named
``<dtype>:<column>`` (``int64:qd``, ``str:bs``); an object column (numbers and strings,
``None``) is stored as one JSON text per cell (``json:bs``). Loading concatenates the blocks
as ``pd.concat`` would have concatenated the runs, so mixed types across runs come out as a
fresh load gives them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core import progress
from . import store
from ..core.errors import IolabError, RunSkipped

CACHE_NAME = ".iolab-table.parquet"
CACHE_VERSION = 3  # 2: the stamp covers every file of the run folder, not run.json and params.json alone; 3: emulated
CHECKPOINT_S = 60.0  # a long first build saves what it has this often, so Ctrl-C loses little
_META_KEY = b"iolab.runs.runcache"
_BAR_FROM = 200  # runs to derive before a progress bar is worth showing
_STALE_TMP_S = 3600  # a temporary cache file this old was left by a killed loader

Sig = tuple[tuple[str, str], ...]  # a run's (column, dtype tag) pairs, in column order


@dataclass
class _Run:
    """One run folder as the index knows it. ``sig`` is None when the run has no rows to
    keep (``error`` says why, and is warned about again on every load, as load_runs does)."""

    name: str
    stamp: str
    status: str | None
    sig: Sig | None = None
    rows: int = 0
    error: str | None = None


def load_cached(root: str | os.PathLike, status: str | None = "ok", cache: bool = True) -> pd.DataFrame:
    """The tidy table of the runs under ``root`` (``iolab.runs.store.load_runs``), re-deriving only
    the runs that are new or changed since the cache in ``root`` was written.

    ``status`` keeps the runs with that status (``None``: all, failed and interrupted too).
    ``cache=False`` reads and writes no cache. Unreadable runs are skipped with a warning, as
    ``load_runs`` does; an empty DataFrame when no run matches."""
    root = Path(root)
    if not cache or (root / "run.json").exists():  # no cache for a single run folder
        return store.load_runs(root, status)
    for line in store.no_run_json(root):
        warnings.warn(line, RunSkipped, stacklevel=2)
    folders = [p.parent for p in store.find_runs(root)]
    stamps = {f.name: _stamp(f) for f in folders}
    old = _read_cache(root)
    kept = {name: run for name, run in old.runs.items() if stamps.get(name) == run.stamp} if old else {}
    todo = [f for f in folders if f.name not in kept and stamps[f.name] is not None]
    new: dict[str, tuple[_Run, list]] = {}
    loose: dict[str, tuple[_Run, pd.DataFrame]] = {}  # dtypes the cache cannot keep: this load only
    last_save = time.monotonic()
    items = progress.bar(todo, "deriving run tables", total=len(todo)) if len(todo) >= _BAR_FROM else todo
    for folder in items:
        derived = _derive(folder, stamps[folder.name], status)
        if derived is None:
            continue
        run, frame = derived
        arrays = _encode(frame) if frame is not None else []
        if arrays is None:
            loose[run.name] = (run, frame)
        else:
            new[run.name] = (run, arrays)
        if time.monotonic() - last_save > CHECKPOINT_S:
            _write_cache(root, _compose(old, kept, new))
            last_save = time.monotonic()
    if old is not None and not new and len(kept) == len(old.runs):
        now = old
    else:
        now = _compose(old, kept, new)
        if folders:  # a folder without runs gets no cache file
            _write_cache(root, now)
    return _assemble(folders, now, loose, status)


def statuses(root: str | os.PathLike) -> Counter:
    """How many run folders under ``root`` (or ``root`` itself, a run folder) have each status
    (``unreadable`` for a run.json that cannot be read), from their run.json files alone."""
    counts: Counter = Counter()
    single = Path(root) / "run.json"
    for path in [single] if single.exists() else store.find_runs(root):
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            meta = None
        status = meta.get("status") if isinstance(meta, dict) else None
        counts[status if isinstance(status, str) else "unreadable"] += 1
    return counts


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """``frame`` as a parquet file at ``path``, written whole (temporary name, then rename).
    Object columns that parquet cannot hold as they are (numbers and strings mixed) become
    strings, missing values staying missing."""
    frame = frame.copy()
    for col in frame.columns[frame.dtypes == object]:  # noqa: E721 (numpy dtypes compare to object by ==)
        try:
            pa.array(frame[col], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            frame[col] = frame[col].map(lambda v: v if v is None or v is pd.NA or v != v else str(v))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    _replace(Path(path), lambda f: pq.write_table(table, f))


# ---------------------------------------------------------------- one run
def _stamp(folder: Path) -> str | None:
    """What changes when any file of a run folder changes (module docstring): 16 hex digits
    of SHA-256 over each file's relative name, size, mtime_ns, ctime_ns and inode, sorted.
    None when run.json is gone."""
    entries = _files(folder, "")
    if entries is None or not any(name == "run.json" for name, *_ in entries):
        return None
    return hashlib.sha256(json.dumps(sorted(entries)).encode()).hexdigest()[:16]


def _files(folder: Path, prefix: str) -> list | None:
    """[name, size, mtime_ns, ctime_ns, inode] of each file below ``folder`` (names relative
    to the run folder); None when it cannot be listed."""
    out = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                name = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    out += _files(Path(entry.path), name + "/") or [[name + "/", -1, 0, 0, 0]]
                    continue
                try:
                    st = entry.stat()
                except OSError:  # gone or unreadable since the listing: a stamp of its own
                    out.append([name, -1, 0, 0, 0])
                    continue
                out.append([name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    except OSError:
        return None
    return out


def _derive(folder: Path, stamp: str, status: str | None) -> tuple[_Run, pd.DataFrame | None] | None:
    """A run's index entry and table (``store.run_table``), or its entry with the error that
    makes ``load_runs`` skip it. None, with a warning when ``status`` asks for the run, for
    an OS error: not cached, since a permission or a missing file may be put right."""
    try:
        meta = store.read_run(folder)
    except OSError as exc:
        warnings.warn(store.skip_message(folder, exc), RunSkipped, stacklevel=3)
        return None
    except (ValueError, IolabError) as exc:
        return _Run(folder.name, stamp, None, error=store.skip_message(folder, exc)), None
    run = _Run(folder.name, stamp, meta.get("status"))
    try:
        frame = store.run_table(folder)
    except OSError as exc:
        if _wanted(run.status, status):
            warnings.warn(store.skip_message(folder, exc), RunSkipped, stacklevel=3)
        return None
    except (ValueError, IolabError) as exc:
        run.error = store.skip_message(folder, exc)
        return run, None
    run.rows = len(frame)
    return run, frame


def _wanted(run_status: str | None, status: str | None) -> bool:
    return not status or run_status == status


def _tag(dtype) -> str | None:
    """The dtype tag a column is stored under, or None for a dtype the cache does not keep."""
    if dtype == object:  # noqa: E721 (a numpy dtype equals object; it is not the type object)
        return "json"
    if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
        return str(dtype)
    if isinstance(dtype, pd.StringDtype) and dtype == pd.StringDtype(na_value=np.nan):
        return "str"
    return None


def _json_cell(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise TypeError(f"{type(value).__name__} is not kept by the run-table cache")
    return json.dumps(value)


def _encode(frame: pd.DataFrame) -> list | None:
    """A run's columns as [(column, tag, values)] ready for arrow (object columns as JSON
    text per cell), or None when a column cannot round-trip (then the run is not cached)."""
    if not frame.columns.is_unique or not all(isinstance(c, str) for c in frame.columns):
        return None
    out = []
    for col, series in frame.items():  # not frame[col]: a lookup by name costs more than the rest
        tag = _tag(series.dtype)
        if tag is None:
            return None
        if tag == "json":
            try:
                values = np.array([_json_cell(v) for v in series], dtype=object)
            except TypeError:
                return None
        elif tag == "str":
            values = series.to_numpy(dtype=object, na_value=None)
        else:
            values = series.to_numpy()
        out.append((col, tag, values))
    return out


# ---------------------------------------------------------------- the cache file
@dataclass
class _Cache:
    """The cache's content: ``runs`` in the table's row order (each sig's runs one block)."""

    runs: dict[str, _Run]
    table: pa.Table

    def __post_init__(self):
        self.offsets: dict[str, int] = {}  # first row of each run with rows
        self.blocks: dict[Sig, tuple[int, int]] = {}  # rows [start, stop) of each sig's block
        row = 0
        for run in self.runs.values():
            if run.sig is None:
                continue
            start, stop = self.blocks.get(run.sig, (row, row))
            if stop != row:
                raise ValueError(f"the rows of sig {run.sig} are not one block")
            self.blocks[run.sig] = (start, row + run.rows)
            self.offsets[run.name] = row
            row += run.rows
        if row != self.table.num_rows:
            raise ValueError(f"the index names {row} rows, the table has {self.table.num_rows}")

    def index(self) -> dict:
        sigs = list(self.blocks)
        number = {sig: i for i, sig in enumerate(sigs)}
        return {
            "version": CACHE_VERSION,
            "fingerprint": _fingerprint(),
            "sigs": [[list(pair) for pair in sig] for sig in sigs],
            "runs": [[r.name, r.stamp, r.status, number.get(r.sig), r.rows, r.error] for r in self.runs.values()],
        }


@functools.cache
def _fingerprint() -> str:
    """What the stored tables depend on besides the run folders: iolab's code (every module
    of the package), pandas, pyarrow and this cache's format."""
    digest = hashlib.sha256(f"{CACHE_VERSION} {store.SCHEMA_VERSION} {pd.__version__} {pa.__version__}".encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _read_cache(root: Path) -> _Cache | None:
    """The cache in ``root``, or None when it is missing, unreadable, corrupt or stale."""
    try:
        table = pq.read_table(root / CACHE_NAME)
        index = json.loads(table.schema.metadata[_META_KEY])
        table = table.replace_schema_metadata(None)
        if index.get("version") != CACHE_VERSION or index.get("fingerprint") != _fingerprint():
            return None
        sigs = [tuple((str(c), str(t)) for c, t in sig) for sig in index["sigs"]]
        runs = {
            name: _Run(name, stamp, status, sigs[sig] if sig is not None else None, int(rows), error)
            for name, stamp, status, sig, rows, error in index["runs"]
        }
        cached = _Cache(runs, table)
        if any(f"{t}:{c}" not in table.column_names for sig in cached.blocks for c, t in sig):
            return None
        return cached
    except Exception:  # noqa: BLE001 - a missing or damaged file means: rebuild it, never an error
        return None


def _compose(old: _Cache | None, kept: dict[str, _Run], new: dict[str, tuple[_Run, list]]) -> _Cache:
    """A cache holding ``kept`` (their rows taken from ``old``) and ``new`` (encoded runs)."""
    by_sig: dict[Sig, tuple[list[_Run], list[tuple[_Run, list]]]] = {}
    rowless = [r for r in kept.values() if r.sig is None]
    for run in kept.values():
        if run.sig is not None:
            by_sig.setdefault(run.sig, ([], []))[0].append(run)
    for run, arrays in new.values():
        if run.error is not None:
            rowless.append(run)
            continue
        run.sig = tuple((col, tag) for col, tag, _ in arrays)
        by_sig.setdefault(run.sig, ([], []))[1].append((run, arrays))
    order, tables = [], []
    for sig, (olds, news) in by_sig.items():
        names = [f"{t}:{c}" for c, t in sig]
        parts = []
        if olds:
            take = np.concatenate([np.arange(old.offsets[r.name], old.offsets[r.name] + r.rows) for r in olds])
            parts.append(old.table.select(names).take(pa.array(take, pa.int64())))
        if news:
            columns = []
            for j, (_, tag) in enumerate(sig):
                values = np.concatenate([arrays[j][2] for _, arrays in news])
                columns.append(pa.array(values, type=pa.string()) if tag in ("str", "json") else pa.array(values))
            parts.append(pa.Table.from_arrays(columns, names=names))
        tables.append(pa.concat_tables(parts) if len(parts) > 1 else parts[0])
        order += olds + [run for run, _ in news]
    table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
    return _Cache({r.name: r for r in order + rowless}, table)


def _write_cache(root: Path, cache: _Cache) -> bool:
    """Write the cache file whole; False (and no error) when ``root`` cannot be written."""
    table = cache.table.replace_schema_metadata({_META_KEY: json.dumps(cache.index(), separators=(",", ":"))})
    try:
        _replace(root / CACHE_NAME, lambda f: pq.write_table(table, f))
    except OSError:
        return False
    _remove_stale_temporaries(root)
    return True


def _replace(path: Path, write) -> None:
    """``write(file)`` into a temporary name beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _remove_stale_temporaries(root: Path) -> None:
    for tmp in root.glob(f".{CACHE_NAME}.*.tmp"):
        try:
            if time.time() - tmp.stat().st_mtime > _STALE_TMP_S:
                tmp.unlink()
        except OSError:
            pass


# ---------------------------------------------------------------- the table
def _decode(table: pa.Table, sig: Sig, start: int, stop: int) -> pd.DataFrame:
    """A block's rows with their own dtypes back."""
    frame = table.slice(start, stop - start).select([f"{t}:{c}" for c, t in sig]).to_pandas()
    frame.columns = [c for c, _ in sig]
    for col, tag in sig:
        if tag == "json":
            frame[col] = pd.Series([json.loads(v) for v in frame[col]], dtype=object, index=frame.index)
        elif frame[col].dtype != pd.api.types.pandas_dtype(tag):
            frame[col] = frame[col].astype(tag)
    return frame


def _assemble(
    folders: list[Path], cache: _Cache, loose: dict[str, tuple[_Run, pd.DataFrame]], status: str | None
) -> pd.DataFrame:
    """The rows of the runs with ``status``, in ``find_runs`` order, concatenated block by
    block: the same columns, order and dtypes as ``pd.concat`` of the runs one by one
    (concat meets each column and dtype in the same order; only the rows move)."""
    groups: dict[Any, list[tuple[int, _Run]]] = {}
    position = 0
    for folder in folders:
        run = loose[folder.name][0] if folder.name in loose else cache.runs.get(folder.name)
        if run is None:
            continue
        if run.error is not None:  # warned about as load_runs does: a run.json it cannot read always
            if run.status is None or _wanted(run.status, status):
                warnings.warn(run.error, RunSkipped, stacklevel=3)
            continue
        if not _wanted(run.status, status):
            continue
        key = ("loose", run.name) if run.name in loose else run.sig
        groups.setdefault(key, []).append((position, run))
        position += 1
    if not groups:
        return pd.DataFrame()
    pieces, owners = [], []
    for key, group in groups.items():  # in order of first appearance
        if key in cache.blocks:
            start, stop = cache.blocks[key]
            frame = _decode(cache.table, key, start, stop)
            take = (
                np.concatenate([np.arange(cache.offsets[r.name], cache.offsets[r.name] + r.rows) for _, r in group])
                - start
            )
            pieces.append(frame if np.array_equal(take, np.arange(len(frame))) else frame.take(take))
        else:
            pieces.append(loose[key[1]][1])
        owners.append(np.repeat([position for position, _ in group], [r.rows for _, r in group]))
    out = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0].reset_index(drop=True)
    owner = np.concatenate(owners)
    if (np.diff(owner) < 0).any():
        out = out.take(np.argsort(owner, kind="stable")).reset_index(drop=True)
    return out
