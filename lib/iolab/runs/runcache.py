"""The tidy table of many runs, built without a DataFrame per run, and cached in a folder of
runs so it loads in seconds.

    table = load_cached("data/runs")                # as load_runs("data/runs"), from the cache
    table = load_cached(study_runs, status=None)    # failed and interrupted runs too
    table = load_runs(run_folders)                  # any run folders (or a folder of them), no cache

The result is what concatenating ``iolab.runs.store.run_table`` of each run gives (pd.concat),
equal to it in rows, column order and dtypes: one row per run and direction, the swept values
of params.json as columns, ``repeat`` and ``status``, then each row's run folder (``run_folder``,
an absolute path, not cached: a folder of runs may move). Run folders are found as
``iolab.core.runfolders.runs_in`` finds them (``root/*/run.json``; sub-folders such as
``root/warmup/<run>`` are not runs of root).

How: each run is read as ``iolab.runs.store.run_record`` (its columns and their dtypes, plain
Python values), in chunks of runs, across the CPUs: forked worker processes, one per CPU, from
``POOL_FROM`` runs to derive (in a process running other threads, a notebook's kernel, the
runs are read in the process itself); a chunk comes back as arrow columns, never as a
DataFrame per run, and its folders' files are asked of the disk together (``iolab.runs.store.listing``). Runs whose columns
and dtypes are the same form a block; each block becomes one DataFrame, and the blocks are
concatenated as pd.concat would have concatenated the runs (it meets each column and dtype
in the same order; only the rows move). Memory holds the table's columns once as arrow and
once as pandas, not a frame per run (``benchmarks/campaign_scale.py`` measures it).

The cache is one parquet file, ``root/.iolab-table.parquet``, written whole (temporary name,
then rename; two loaders at once: the last writer wins). Its metadata holds the index: per
run folder name, its stamp, the run's status, and its rows. The stamp is a digest of every
file in the run folder and its sub-folders (the folder's own, each producer's, fio's logs,
a host's files): name, size, mtime_ns, ctime_ns and inode of each file present, so a file
that is added, removed, rewritten (a new inode when renamed into place) or edited in place
(even with its mtime put back: ctime cannot be) changes it. A run that is added, removed or
changed (run.json rewritten by a repair marking it interrupted, a fio.json replaced) is
re-derived alone; the rest come from the file. A run that cannot be read is kept in the
index with its reason, warned about on every load (a ``RunSkipped`` warning, as ``load_runs``
gives), until one of its files changes. The whole cache is rebuilt when iolab's code, pandas,
pyarrow or this format (``CACHE_VERSION``) changes, and when the file cannot be read. A
folder iolab cannot write is loaded without a cache.

Exact round trip: a run's rows are stored with their own dtypes. Each (column, dtype) pair of
a block is a parquet column of its own, named ``<dtype>:<column>`` (``int64:qd``, ``str:bs``);
an object column (numbers and strings, ``None``) is stored as one JSON text per cell
(``json:bs``). Loading concatenates the blocks as above, so mixed types across runs come out
as a fresh load gives them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import secrets
import signal
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core import owned, progress, runfiles
from ..core.errors import IolabError, RunSkipped
from ..core.runfiles import RUN_JSON
from ..core.runfolders import RUN_FOLDER, is_run, runs_in
from ..machine.process import die_with_parent
from . import store

CACHE_NAME = ".iolab-table.parquet"
CACHE_VERSION = 3  # 2: the stamp covers every file of the run folder, not run.json and params.json alone; 3: emulated
CHECKPOINT_S = 60.0  # a long first build saves what it has this often, so Ctrl-C loses little
POOL_FROM = 200  # runs to derive before worker processes pay off (forked: ~50 ms to start two)
CHUNK = 64  # runs per task of a worker; a task's result is arrow columns
_MERGE = 32  # a sig's tables of this many tasks are merged into one as they come
_META_KEY = b"iolab.runs.runcache"
_BAR_FROM = 200  # runs to derive before a progress bar is worth showing
_STALE_TMP_S = 3600  # a temporary cache file this old was left by a killed loader
_LISTING_SHARE = 10  # a folder's listing (its stamp) costs about this share of reading its run

Sig = tuple[tuple[str, str], ...]  # a run's (column, dtype tag) pairs, in column order


@dataclass(slots=True)
class _Run:
    """One run folder as the index knows it. ``sig`` is None when the run has no rows to
    keep (``error`` says why, and is warned about again on every load, as load_runs does).
    ``transient``: an error that may go away (an OS error): warned, never kept in the file."""

    name: str
    stamp: str | None
    status: str | None
    sig: Sig | None = None
    rows: int = 0
    error: str | None = None
    transient: bool = False


@dataclass
class _Part:
    """What deriving a chunk of runs gives: each run's entry, the rows of those with rows as
    one arrow table per sig (the chunk's runs of that sig in order; arrow's stream format),
    the frames whose dtypes the cache cannot keep (``loose``: this load only), and the
    warnings raised meanwhile."""

    runs: list[_Run]
    tables: dict[Sig, bytes] = field(default_factory=dict)
    loose: dict[str, pd.DataFrame] = field(default_factory=dict)
    said: list[tuple[str, type]] = field(default_factory=list)


def load_cached(root: str | os.PathLike, status: str | None = "ok", cache: bool = True) -> pd.DataFrame:
    """The tidy table of the runs under ``root`` (``load_runs``), re-deriving only
    the runs that are new or changed since the cache in ``root`` was written.

    ``status`` keeps the runs with that status (``None``: all, failed and interrupted too).
    ``cache=False`` reads and writes no cache. Unreadable runs are skipped with a warning, as
    ``load_runs`` does; an empty DataFrame when no run matches."""
    root = Path(root)
    if (root / RUN_JSON).exists():  # no cache for a single run folder
        return load_runs(root, status)
    for line in store.no_run_json(root):
        warnings.warn(line, RunSkipped, stacklevel=2)
    folders = runs_in(root)
    if not cache:
        return _table([(f.name, f, None) for f in folders], status, lazy=True)
    old = _read_cache(root)
    if old is None:  # every run is derived: the workers stamp them too
        kept: dict[str, _Run] = {}
        todo = [(f.name, f, None) for f in folders]
    else:
        kept, todo = {}, []
        for folder, stamp in zip(folders, _stamps(folders)):
            run = old.runs.get(folder.name)
            if run is not None and run.stamp == stamp:
                kept[folder.name] = run
            elif stamp is not None:  # listed again where it is read (its stamp then, if it changed since)
                todo.append((folder.name, folder, None))
    build = _Build(old, kept)
    last_save = time.monotonic()
    for part in _derive_all(todo, status, lazy=False):
        build.add(part)
        if time.monotonic() - last_save > CHECKPOINT_S:
            _write_cache(root, build.cache())
            last_save = time.monotonic()
    if old is not None and not build.changed and len(kept) == len(old.runs):
        now = old
    else:
        now = build.cache()
        if folders:  # a folder without runs gets no cache file
            _write_cache(root, now)
    pieces, owner, names = _pieces([f.name for f in folders], now, build, status)
    del old, now, build, kept, todo  # the arrow rows go before the frame is joined: memory for one copy less
    return _with_folders(_joined(pieces, owner), [str((root / name).absolute()) for name in names], owner)


def table_of(paths: Iterable[str | os.PathLike], status: str | None = "ok") -> pd.DataFrame:
    """The tidy table of any run folders (``load_runs`` of a list), derived
    as ``load_cached`` derives them, without a cache: runs whose status is not ``status`` are
    not read further than their run.json. Unreadable runs are skipped with a warning each."""
    return _table([(str(i), Path(p), None) for i, p in enumerate(paths)], status, lazy=True)


def load_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike, status: str | None = "ok") -> pd.DataFrame:
    """Any set of run folders (or a folder holding them) -> one tidy DataFrame, each row's
    run folder in its ``run_folder`` column.

    Unreadable runs are skipped with a ``RunSkipped`` warning each (``store.skip_message``:
    the run, the file and what is wrong); the other runs' rows are kept. ``status=None``
    keeps failed runs too. The table is ``pd.concat`` of each run's ``store.run_table``,
    built without a frame per run (``table_of``: many runs across the CPUs)."""
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        if is_run(p):
            paths = [p]
        else:
            for line in store.no_run_json(p):
                warnings.warn(line, RunSkipped, stacklevel=2)
            paths = runs_in(p)
    return table_of(paths, status)


def _table(todo: list[tuple[str, Path, Any]], status: str | None, lazy: bool) -> pd.DataFrame:
    build = _Build(None, {})
    for part in _derive_all(todo, status, lazy):
        build.add(part)
    pieces, owner, names = _pieces([name for name, _, _ in todo], build.cache(), build, status)
    del build
    folder_of = {name: str(folder.absolute()) for name, folder, _ in todo}
    return _with_folders(_joined(pieces, owner), [folder_of[name] for name in names], owner)


def statuses(root: str | os.PathLike) -> Counter:
    """How many run folders under ``root`` (or ``root`` itself, a run folder) have each status
    (``unreadable`` for a run.json that cannot be read), from their run.json files alone."""
    counts: Counter = Counter()
    single = Path(root) / RUN_JSON
    for path in [single] if single.exists() else [run / RUN_JSON for run in runs_in(root)]:
        try:
            meta = runfiles.read_json(path)
        except (OSError, IolabError):
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
def _stamps(folders: list[Path]) -> list[str | None]:
    """The stamp of each folder (``store.listing``), in worker processes when there are many (a
    listing costs about a tenth of a run's reading; threads would wait on each other)."""
    workers, context = _pool(len(folders) // _LISTING_SHARE)
    if workers < 2:
        return _stamps_of(folders)
    size = -(-len(folders) // (4 * workers))
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),))
    try:
        parts = pool.map(_stamps_of, [folders[i : i + size] for i in range(0, len(folders), size)])
        return [stamp for part in parts for stamp in part]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: the running tasks end, the rest never start


def _stamps_of(folders: list[Path]) -> list[str | None]:
    return [store.listing(folder)[0] for folder in folders]


def _derive(name: str, folder: Path, listed: Any, status: str | None, lazy: bool) -> tuple[_Run, Any] | None:
    """A run's index entry and its ``store.run_record`` (None with an error: the one that
    makes ``load_runs`` skip it). ``listed``: its ``store.listing``, None to make it here. ``lazy``:
    a run whose status is not ``status`` is not read beyond run.json. None when the run
    folder lost its run.json since it was found."""
    stamp, names = listed or store.listing(folder)
    if stamp is None and listed is None and not lazy:
        return None
    try:
        meta = store.read_run(folder)
    except OSError as exc:  # warned, not cached: a permission or a missing file may be put right
        return _Run(name, stamp, None, error=store.skip_message(folder, exc), transient=True), None
    except (ValueError, IolabError) as exc:
        return _Run(name, stamp, None, error=store.skip_message(folder, exc)), None
    run = _Run(name, stamp, meta.get("status"))
    if lazy and not _wanted(run.status, status):
        return run, None
    try:
        record = store.run_record(folder, names or None, meta)
    except OSError as exc:
        run.error, run.transient = store.skip_message(folder, exc), True
        return run, None
    except (ValueError, IolabError) as exc:
        run.error = store.skip_message(folder, exc)
        return run, None
    return run, record


def _wanted(run_status: str | None, status: str | None) -> bool:
    return not status or run_status == status


def _derive_chunk(chunk: list[tuple[str, Path, Any]], status: str | None, lazy: bool) -> _Part:
    """``_derive`` of each run of ``chunk``, as a _Part (what a worker sends back). The
    chunk's folders are listed first, which asks the kernel for their files (``store.listing``)."""
    part = _Part([])
    records: dict[Sig, list[dict]] = {}
    sigs: dict[Sig, Sig] = {}
    chunk = [(name, folder, listed or store.listing(folder, prefetch=True)) for name, folder, listed in chunk]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for name, folder, listed in chunk:
            derived = _derive(name, folder, listed, status, lazy)
            if derived is None:
                continue
            run, record = derived
            part.runs.append(run)
            if isinstance(record, pd.DataFrame):
                run.rows, run.transient = len(record), True
                part.loose[run.name] = record
            elif record is not None:
                sig = tuple((col, tag) for col, (tag, _) in record.items())
                run.sig = sigs.setdefault(sig, sig)  # one object per sig: a run holds a reference
                run.rows = len(next(iter(record.values()))[1])
                records.setdefault(run.sig, []).append(record)
    part.tables = {sig: _ipc(_arrow(sig, found)) for sig, found in records.items()}
    part.said = [(str(w.message), w.category) for w in said]
    return part


def _arrow(sig: Sig, records: list[dict]) -> pa.Table:
    """The rows of runs with one sig as an arrow table of the cache's columns (``tag:column``;
    text missing as null, object cells as JSON text)."""
    arrays = []
    for col, tag in sig:
        values = [v for record in records for v in record[col][1]]
        if tag == "str":
            arrays.append(pa.array(values, pa.string(), from_pandas=True))
        elif tag == "json":
            arrays.append(pa.array([_json_cell(v) for v in values], pa.string()))
        else:
            arrays.append(pa.array(np.array(values, dtype=tag)))
    return pa.Table.from_arrays(arrays, names=[f"{t}:{c}" for c, t in sig])


def _ipc(table: pa.Table) -> bytes:
    """``table`` as arrow's stream format: one buffer, which the loader keeps as it is (a
    table of many small arrays costs several times its size in objects once unpickled)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _json_cell(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return json.dumps(value)


# ---------------------------------------------------------------- many runs
def _derive_all(todo: list[tuple[str, Path, Any]], status: str | None, lazy: bool) -> Iterator[_Part]:
    """The _Parts of ``todo`` in order, chunk by chunk: in worker processes (one per CPU this
    process may use) when there are enough runs to pay for them, else here. Warnings raised
    while deriving are raised again here, in order; a progress bar from ``_BAR_FROM`` runs."""
    workers, context = _pool(len(todo))
    size = max(8, min(CHUNK, -(-len(todo) // (4 * workers))))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    pool, shown = None, None
    try:
        if workers > 1:  # the workers start before the bar: forked, they copy no thread of it
            pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),))
            parts = pool.map(_derive_chunk, chunks, repeat(status), repeat(lazy))
        else:
            parts = (_derive_chunk(chunk, status, lazy) for chunk in chunks)
        shown = progress.bar([], "deriving run tables", total=len(todo)) if len(todo) >= _BAR_FROM else None
        for chunk, part in zip(chunks, parts):
            for message, category in part.said:
                warnings.warn(message, category, stacklevel=4)
            if shown is not None:
                shown.update(len(chunk))
            yield part
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: the running chunks end, the rest never start
        if shown is not None:
            shown.close()


def _pool(runs: int) -> tuple[int, Any]:
    """How many worker processes to derive ``runs`` runs with (1: none), and how to start
    them: forked, so they share what this process imported. Not when this process runs other
    threads (a notebook's kernel): a fork could copy a lock one of them holds, and a spawned
    worker would run the caller's script again; the runs are read here then."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    forked = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if cpus < 2 or runs < POOL_FROM or not forked:
        return 1, None
    return min(cpus, -(-runs // CHUNK)), multiprocessing.get_context("fork")


def _worker_start(loader_pid: int) -> None:
    """A worker leaves Ctrl-C to the loader, which stops the pool, and dies with the loader
    (``iolab.machine.process.die_with_parent``: even a SIGKILLed loader leaves no worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(loader_pid)


class _Build:
    """The index and rows of a cache being built: ``kept`` runs (rows in ``old``), then the
    derived _Parts as they come. A sig's rows are merged into one table every ``_MERGE``
    parts: a table of many small ones holds several times their size in arrow's own objects."""

    def __init__(self, old: _Cache | None, kept: dict[str, _Run]):
        self.old, self.kept = old, kept
        self.new: dict[Sig, tuple[list[_Run], list[pa.Table], list[bytes]]] = {}  # runs, merged, streams
        self.others: list[_Run] = []  # derived runs without rows in the file: errors, loose frames
        self.loose: dict[str, pd.DataFrame] = {}
        self.changed = False
        self.sigs: dict[Sig, Sig] = {}

    def add(self, part: _Part) -> None:
        self.changed = True
        for run in part.runs:
            if run.sig is None:
                self.others.append(run)
            else:
                run.sig = self.sigs.setdefault(run.sig, run.sig)  # each part brings its own copy
                self.new.setdefault(run.sig, ([], [], []))[0].append(run)
        for sig, stream in part.tables.items():
            _, merged, streams = self.new[self.sigs[sig]]
            streams.append(stream)
            if len(streams) >= _MERGE:
                merged.append(_merged(streams))
                streams.clear()
        self.loose.update(part.loose)

    def cache(self) -> _Cache:
        """A cache holding the kept runs (their rows taken from ``old``) and the new ones."""
        by_sig: dict[Sig, list[_Run]] = {}
        rowless = [r for r in self.kept.values() if r.sig is None]
        for run in self.kept.values():
            if run.sig is not None:
                by_sig.setdefault(run.sig, []).append(run)
        order, tables = [], []
        for sig in [*by_sig, *(s for s in self.new if s not in by_sig)]:
            olds = by_sig.get(sig, [])
            news, merged, streams = self.new.get(sig, ([], [], []))
            parts = [*merged, _merged(streams)] if streams else list(merged)
            if olds:
                old = self.old
                take = np.concatenate([np.arange(old.offsets[r.name], old.offsets[r.name] + r.rows) for r in olds])
                parts.insert(0, old.table.select([f"{t}:{c}" for c, t in sig]).take(pa.array(take, pa.int64())))
            tables.append(pa.concat_tables(parts) if len(parts) > 1 else parts[0])
            order += olds + news
        table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
        return _Cache({r.name: r for r in order + rowless + self.others}, table)


def _merged(streams: list[bytes]) -> pa.Table:
    """The tables of arrow streams (``_ipc``) as one, each column one array."""
    tables = [pa.ipc.open_stream(stream).read_all() for stream in streams]
    return (pa.concat_tables(tables) if len(tables) > 1 else tables[0]).combine_chunks()


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
            "runs": [
                [r.name, r.stamp, r.status, number.get(r.sig), r.rows, r.error]
                for r in self.runs.values()
                if not r.transient
            ],
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


def _write_cache(root: Path, cache: _Cache) -> bool:
    """Write the cache file whole; False (and no error) when ``root`` cannot be written."""
    table = cache.table.replace_schema_metadata({_META_KEY: json.dumps(cache.index(), separators=(",", ":"))})
    path = root / CACHE_NAME
    if os.path.lexists(path) and not (owned.is_owned(path) or _is_cache_file(path)):
        return False  # a file of that name iolab did not write: left as it is, the table derived uncached
    try:
        _replace(path, lambda f: pq.write_table(table, f))
    except OSError:
        return False
    owned.mark(path)  # a cache damaged later is still known as iolab's, and rebuilt
    _remove_stale_temporaries(root)
    return True


def _is_cache_file(path: Path) -> bool:
    """Whether ``path`` is a table cache iolab wrote: a regular file, Parquet, with its index."""
    try:
        return path.is_file() and not path.is_symlink() and _META_KEY in (pq.read_schema(path).metadata or {})
    except Exception:  # noqa: BLE001 - anything unreadable as iolab's cache is not iolab's
        return False


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
def _decode(table: pa.Table, sig: Sig, rows: np.ndarray | tuple[int, int]) -> pd.DataFrame:
    """The rows of a block (``rows``: their positions, or [start, stop)) with their own dtypes back."""
    part = table.slice(rows[0], rows[1] - rows[0]) if isinstance(rows, tuple) else table.take(pa.array(rows))
    frame = part.select([f"{t}:{c}" for c, t in sig]).to_pandas()
    frame.columns = [c for c, _ in sig]
    for col, tag in sig:
        if tag == "json":
            frame[col] = pd.Series([json.loads(v) for v in frame[col]], dtype=object, index=frame.index)
        elif frame[col].dtype != pd.api.types.pandas_dtype(tag):
            frame[col] = frame[col].astype(tag)
    return frame


def _pieces(names: list[str], cache: _Cache, build: _Build, status: str | None) -> tuple[list, np.ndarray, list[str]]:
    """The rows of the runs with ``status``, as one DataFrame per block (runs of one sig; a
    loose run's own frame) in order of first appearance in ``names`` (``runs_in`` order),
    the position of each row's run among the runs kept, and the names of the runs kept. A
    run that cannot be read is warned about here, in order, as load_runs does."""
    groups: dict[Any, list[tuple[int, _Run]]] = {}
    kept: list[str] = []
    position = 0
    for name in names:
        run = cache.runs.get(name)
        if run is None:
            continue
        if run.error is not None:  # warned about as load_runs does: a run.json it cannot read always
            if run.status is None or _wanted(run.status, status):
                warnings.warn(run.error, RunSkipped, stacklevel=3)
            continue
        if not _wanted(run.status, status) or run.sig is None and run.name not in build.loose:
            continue
        key = ("loose", run.name) if run.name in build.loose else run.sig
        groups.setdefault(key, []).append((position, run))
        kept.append(name)
        position += 1
    pieces, owners = [], []
    for key, group in groups.items():
        if key in cache.blocks:
            rows = np.concatenate([np.arange(cache.offsets[r.name], cache.offsets[r.name] + r.rows) for _, r in group])
            start, stop = cache.blocks[key]
            whole = len(rows) == stop - start and rows[0] == start and (np.diff(rows) == 1).all()
            pieces.append(_decode(cache.table, key, (start, stop) if whole else rows))
        else:
            pieces.append(build.loose[key[1]])
        owners.append(np.repeat([position for position, _ in group], [r.rows for _, r in group]))
    return pieces, np.concatenate(owners) if owners else np.zeros(0, dtype=int), kept


def _with_folders(table: pd.DataFrame, folders: list[str], owner: np.ndarray) -> pd.DataFrame:
    """``table`` (``_joined``: rows in their runs' order) with each row's run folder, an
    absolute path, as its last column (``RUN_FOLDER``): readers find a table's runs by it."""
    if len(table):
        table[RUN_FOLDER] = np.asarray(folders, dtype=object)[np.sort(owner, kind="stable")]
        table[RUN_FOLDER] = table[RUN_FOLDER].astype(table["run_id"].dtype)
        table = _one_folder_a_run(table)
    return table


def _one_folder_a_run(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the rows of one folder for each run id: a run folder copied beside its
    original would count its IOs twice wherever runs are summed or counted. The first folder
    in the table's order is kept; each other is skipped with a ``RunSkipped`` warning."""
    pairs = table[["run_id", RUN_FOLDER]].drop_duplicates()
    if not pairs["run_id"].duplicated().any():
        return table
    first = dict(zip(pairs["run_id"][::-1], pairs[RUN_FOLDER][::-1]))  # the first folder wins
    for run_id, folder in pairs[pairs["run_id"].duplicated()].itertuples(index=False):
        warnings.warn(
            f"skipping run {folder}: it holds run {run_id}, as {first[run_id]} does (a copy?), and its rows "
            "would count twice; keep one of the two",
            RunSkipped,
            stacklevel=4,
        )
    keep = table[RUN_FOLDER].to_numpy() == table["run_id"].map(first).to_numpy()
    return table[keep].reset_index(drop=True)


def _joined(pieces: list[pd.DataFrame], owner: np.ndarray) -> pd.DataFrame:
    """The blocks (``_pieces``) concatenated, the rows put in their runs' order: the same
    columns, order and dtypes as ``pd.concat`` of the runs one by one (concat meets each
    column and dtype in the same order; only the rows move). ``pieces`` is emptied: each
    block is let go once copied."""
    if not pieces:
        return pd.DataFrame()
    out = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0].reset_index(drop=True)
    pieces.clear()
    if (np.diff(owner) < 0).any():
        out = out.take(np.argsort(owner, kind="stable")).reset_index(drop=True)
    return out
