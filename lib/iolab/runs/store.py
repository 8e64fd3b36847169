"""One folder per run under ``data/runs/``, written atomically; a loader for many runs.

A run folder (raw files are never edited after the run)::

    data/runs/20261122T023400Z-qd32-3f9a/
        run.json          schema, iolab version, status, times, target, error
        params.json       every swept value and the full fio option dict (or t/io_uring flags)
        argv.json         the exact command line
        ...               each producer's files (``iolab.runs.producers.PRODUCERS``):
        fio.json          fio's raw json+ output, byte for byte    (fio.stderr, job.fio beside it)
        tio.txt           t/io_uring's output, instead of fio's files
        samples_stat.csv  t_s, cpu, /proc/stat counters (USER_HZ ticks)   (samples_freq.csv beside it)
        samples_procs.csv the tool's threads' and its devices' kernel workers' CPU time (iolab.machine.proctree)
        samples_threads.csv  thread states, with --threads (threads.json beside it; iolab.read.threadstates)
        perf_stat.csv     perf stat's own output, when profiled (perf_stat_window.json,
                          perf.data, perf.folded: every program's stacks, perf_fio.folded: fio's own)
        blockstat.json    /sys/block/<dev>/stat before and after (every device the job opens, and their
                          sums), and the seconds between (interval_s), when the target has a device
        pcie.json         the links and AER counters of the PCI paths of the devices fio opens, before
                          and after (iolab.machine.preflight_pci.pcie_state), when they have one
        system.json       the machine snapshot (iolab.core.system.snapshot)

The file names are spelled in ``iolab.core.runfiles``; ``iolab.read.run.RunFolder`` reads one (``RunWriter`` here writes it)
run's files by what they hold. This module knows its own files and the producer registry
(``iolab.runs.producers``), never a producer: the table of a run is the rows of the tool that drove the I/O, every other
producer's columns, and the swept values of params.json.

The folder is built under ``.tmp-<id>`` and renamed into place, so a reader never sees a
half-written run; a failed or interrupted run is still renamed, with ``status`` saying so.

Reading is defensive (``iolab.core.runfiles``): a file of a run folder that is missing, empty, cut
short, not JSON or CSV, or of another type than written is a ``RunFileError`` naming it;
the loader (``iolab.runs.runcache.load_runs``) leaves that run out with one ``RunSkipped`` warning (``skip_message``: the run,
the file, what is wrong, what to do) and keeps the other runs' rows. A run is never given
with one producer's columns silently missing; the exception is fio's interval logs, whose
trouble is the run's ``series_note`` (``iolab.stats.timeline.run_columns``). Files no table reads
(argv.json, job.fio, fio.stderr) are not judged, and params.json, blockstat.json,
system.json, checks.json, series.json and pcie.json may be absent (runs made by hand, older layouts).
A folder holding a run's files but no run.json is said too (``no_run_json``).

Reading many runs: ``run_record`` gives ``run_table``'s columns, dtypes and values without a
DataFrame (``iolab.runs.runcache`` joins many into one table: its ``load_runs``), and
``listing`` a run folder's stamp and file names, asking the disk for its files at once.

Format history (``schema`` in run.json; the whole layout above has one version):
    1 (2026-11-22)  first version; run.json says ``schema_version``; perf stat's window is a
                    fake ``window_s`` event in perf_stat_tidy.csv. Still read.
    2 (2026-11-22)  run.json says ``schema`` (and ``schema_version``, the same number, so an
                    iolab that knows only 1 says "upgrade"); the perf stat window is
                    perf_stat_window.json and perf_stat_tidy.csv is gone (perf_stat.csv is read).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core import runfiles
from ..core.atomic import write_atomic, write_json
from ..core.errors import RunFileError, RunInterrupted, SchemaError
from ..core.runfiles import ARGV_JSON, PARAMS_JSON, RUN_JSON
from ..core.runfolders import is_run
from ..core.version import __version__
from ..machine import ledger
from . import producers

SCHEMA_VERSION = 2
SCHEMAS_READ = (1, 2)
FILES = (RUN_JSON, PARAMS_JSON, ARGV_JSON)  # the folder's own; the rest are producers'
_PREFETCH_BYTES = 1 << 20  # files of a run folder read ahead up to this size (not perf.data)


def new_run_id(label: str = "") -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:40]
    return f"{stamp}-{slug + '-' if slug else ''}{secrets.token_hex(3)}"


class RunWriter:
    """A run folder being written. ``finish(status)`` renames it into place."""

    def __init__(self, root: str | os.PathLike, label: str = ""):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_id = new_run_id(label)
        self.path = self.root / f".tmp-{self.run_id}"
        self._ledger = ledger.record(
            "run",
            path=str(self.path.absolute()),
            undo=lambda: finish_abandoned(self.path, "its iolab process exited before the run ended"),
        )
        self.path.mkdir()
        self.meta: dict[str, Any] = _new_meta(self.run_id)
        self.write_json(RUN_JSON, self.meta)  # status "running" until finish()

    @property
    def final(self) -> Path:
        """Where the folder is once finished."""
        return self.root / self.run_id

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> None:
        write_atomic(self.file(name), text)

    def write_json(self, name: str, obj: Any) -> None:
        write_json(self.file(name), obj)

    def write_params(self, params: Mapping[str, Any], cpus: list[int] | None, target: str | None) -> None:
        """params.json, written here only: what the engine ran (``swept``, ``fio_options`` or
        ``tio_flags``, ``job_key``, ...), the CPUs it was pinned to and the target as used."""
        write_json(self.file(PARAMS_JSON), {**params, "cpus": cpus, "target": target})

    def write_samples(self, samples) -> None:
        """The sampler series (``iolab.read.samples.Samples``), as the files it names."""
        for name, text in samples.files().items():
            self.write_text(name, text)

    def finish(self, status: str = "ok", error: str | None = None) -> Path:
        self.path = _finish(self.path, self.meta, status, error)
        self._ledger.release()
        return self.path


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _stamp(run_id: str) -> dict[str, Any]:
    """What every run.json starts with: its layout version, the iolab that wrote it, its id."""
    return {"schema": SCHEMA_VERSION, "schema_version": SCHEMA_VERSION, "iolab_version": __version__, "run_id": run_id}


def _new_meta(run_id: str) -> dict[str, Any]:
    pid = os.getpid()  # with its start, host and boot: a left run folder's writer is judged gone safely
    return {
        **_stamp(run_id),
        "status": "running",
        "started_utc": _utc_now(),
        "pid": pid,
        "pid_start": ledger.start_time(pid),
        "host": socket.gethostname(),
        "boot_id": ledger.boot_id(),
    }


def _finish(tmp: Path, meta: dict[str, Any], status: str, error: str | None) -> Path:
    """Write the final run.json into ``tmp`` and rename it to ``<run_id>``."""
    meta.update(status=status, error=error, finished_utc=_utc_now())
    write_json(tmp / RUN_JSON, meta)
    final = tmp.with_name(meta["run_id"])
    os.replace(tmp, final)
    return final


def finish_abandoned(tmp: Path, why: str) -> str:
    """Finish a ``.tmp-<id>`` run folder as ``interrupted``: its process died (called by
    ``iolab.runs.repair.recover``) or is exiting with it open (``iolab.machine.ledger`` at exit); what it
    holds is kept as it is."""
    if not tmp.is_dir():
        return f"run folder {tmp} was already finished"
    try:
        meta = runfiles.read_json(tmp / RUN_JSON, keys=("run_id",))
    except (RunFileError, OSError):  # missing or damaged: a fresh stamp, the rest of the folder kept
        meta = _stamp(tmp.name.removeprefix(".tmp-"))
    final = _finish(tmp, meta, "interrupted", why)
    return f"marked run {final} interrupted ({why})"


@contextmanager
def run_folder(root: str | os.PathLike, label: str = "") -> Iterator[RunWriter]:
    """A RunWriter that is finished as ``ok``, ``failed`` or ``interrupted`` whatever happens."""
    folder = RunWriter(root, label)
    try:
        yield folder
    except KeyboardInterrupt:
        folder.finish("interrupted", "KeyboardInterrupt")
        raise
    except BaseException as exc:
        folder.finish("interrupted" if isinstance(exc, RunInterrupted) else "failed", f"{type(exc).__name__}: {exc}")
        raise
    else:
        folder.finish("ok")


# ---------------------------------------------------------------- one job, one key
def job_key(fio_options: Mapping[str, Any], target: str, swept: Mapping[str, Any]) -> str:
    """A hash of everything that makes two runs the same job: the full fio option dict (as
    stored in params.json, without ``name``), the target (``Target.describe()``) and the
    swept values including ``repeat``. Sweeps resume on it; 16 hex digits of SHA-256 over
    the sorted JSON, so it does not depend on dict order or on str/int spellings JSON keeps."""
    opts = {k: v for k, v in dict(fio_options).items() if k != "name"}
    body = json.dumps({"fio_options": opts, "target": str(target), "swept": dict(swept)}, sort_keys=True, default=str)
    body = json.dumps(json.loads(body), sort_keys=True)  # as stored: tuples -> lists, Paths -> str
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def stored_job_key(params: Mapping[str, Any]) -> str:
    """The job key of a stored run from its params.json: ``job_key`` if recorded, else
    computed from its fio_options, target and swept values (runs stored before the key)."""
    return params.get("job_key") or job_key(
        params.get("fio_options", {}), params.get("target", ""), params.get("swept", {})
    )


# ---------------------------------------------------------------- loading
def schema_of(meta: Mapping[str, Any]) -> Any:
    """The layout version of a run.json: ``schema``; ``schema_version`` before schema 2;
    1 when it has neither (the first layout)."""
    return meta.get("schema", meta.get("schema_version", 1))


def read_run(path: str | os.PathLike) -> dict[str, Any]:
    """run.json of a run folder. SchemaError, saying what to do, for a layout this iolab
    does not read (``SCHEMAS_READ``); RunFileError (``iolab.core.runfiles``) for a run.json that
    is missing, empty, cut short, not a JSON object, or without ``run_id`` and ``status``
    (strings)."""
    path = Path(path)
    file = os.path.join(path, RUN_JSON)  # a str: a path joined costs more than the rest of this
    meta = runfiles.read_json(file)
    version = schema_of(meta)
    if version in SCHEMAS_READ:
        return _with_id_and_status(meta, file)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path} was written by iolab {meta.get('iolab_version', '?')} with run-folder "
            f"schema {version}; this iolab ({__version__}) reads schemas {SCHEMAS_READ[0]} "
            f"to {SCHEMA_VERSION}. Upgrade iolab (git pull; make setup) and load it again."
        )
    raise SchemaError(
        f"{path}: run.json names run-folder schema {version!r}, which no iolab wrote (this "
        f"one reads {SCHEMAS_READ[0]} to {SCHEMA_VERSION}). Re-run the experiment to refresh "
        "it: params.json and argv.json hold what ran."
    )


def _with_id_and_status(meta: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``meta`` (the run.json at ``path``) when its ``run_id`` and ``status`` are strings;
    RunFileError naming the first that is missing or is not."""
    runfiles.require(meta, path, ("run_id", "status"))
    for key in ("run_id", "status"):
        if not isinstance(meta[key], str):
            raise RunFileError(Path(path), f"has {key!r} {runfiles.quote(json.dumps(meta[key]), 20)}, not a string")
    return meta


def run_table(path: str | os.PathLike) -> pd.DataFrame:
    """The tidy table of one run folder: the rows of the tool that drove the I/O, the
    columns of every other producer that ran (``iolab.runs.producers``), the swept values of
    params.json, run id and status."""
    path = Path(path)
    meta = read_run(path)
    frame = producers.rows(path)
    for key, value in {**producers.columns(path), **swept_values(path)}.items():
        frame[key] = value if not isinstance(value, (list, dict)) else json.dumps(value)
    frame.insert(0, "run_id", meta["run_id"])
    frame["status"] = meta["status"]
    return frame


# ---------------------------------------------------------------- a run's table without pandas
Columns = dict[str, tuple[str, list]]  # column -> (dtype tag, its values), in the table's column order
_INT64 = 2**63


def run_record(
    path: str | os.PathLike, names: Collection[str] | None = None, meta: Mapping[str, Any] | None = None
) -> Columns | pd.DataFrame:
    """``run_table`` of one run folder as ``Columns``, built without pandas: each column's
    values and the dtype pandas gives it there (a tag: ``int64``, ``float64``, ``bool``,
    ``str``, ``json`` for object), in ``run_table``'s column order; the same errors. Where
    pandas' choice is not plain (a value of another type, a column of mixed types), it is
    ``run_table`` that decides: its frame as Columns, or the frame itself when a dtype has no
    tag. ``names``: the run folder's file names, when the caller has listed it; ``meta``: its
    ``read_run``, when the caller has read it."""
    path = Path(path)
    meta = read_run(path) if meta is None else meta
    found, per_run = producers.parts(path, names)
    per_run.update(swept_values(path))
    if isinstance(found, pd.DataFrame):
        cols = frame_columns(found)
    else:
        cols = _dict_rows(*found)
    n = len(next(iter(cols.values()))[1]) if cols else 0
    for key, value in per_run.items() if cols else ():
        if not _put(cols, key, json.dumps(value) if isinstance(value, (list, dict)) else value, n):
            cols = None
            break
    if cols is None or "run_id" in cols:
        return _frame_record(run_table(path))
    cols = {"run_id": ("str", [meta["run_id"]] * n), **cols}
    _put(cols, "status", meta["status"], n)
    return cols


def _frame_record(frame: pd.DataFrame) -> Columns | pd.DataFrame:
    cols = frame_columns(frame)
    return frame if cols is None else cols


def frame_columns(frame: pd.DataFrame) -> Columns | None:
    """A DataFrame as ``Columns`` (its dtypes as tags, its cells as Python values); None when
    a column has a dtype without a tag, an object cell that is not None, a bool, a number or
    text, or the frame has no rows or a column name twice or not a string."""
    if not len(frame) or not frame.columns.is_unique or not all(isinstance(c, str) for c in frame.columns):
        return None
    out: Columns = {}
    for col, series in frame.items():  # not frame[col]: a lookup by name costs more than the rest
        tag = dtype_tag(series.dtype)
        values = series.tolist()
        if tag == "json":
            values = [v.item() if isinstance(v, np.generic) else v for v in values]
            if not all(v is None or type(v) in (bool, int, float, str) for v in values):
                return None
        if tag is None:
            return None
        out[col] = (tag, values)
    return out


def dtype_tag(dtype) -> str | None:
    """The tag of a pandas dtype (``Columns``), or None for one without: numpy's bool, integer
    and float dtypes by name, pandas' text (``str``, missing values NaN) and object (``json``)."""
    if dtype == object:  # noqa: E721 (a numpy dtype equals object; it is not the type object)
        return "json"
    if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
        return str(dtype)
    if _NAN_TEXT is not None and isinstance(dtype, pd.StringDtype) and dtype == _NAN_TEXT:
        return "str"
    return None


try:
    _NAN_TEXT = pd.StringDtype(na_value=np.nan)  # pandas 3's text dtype (missing values NaN)
except TypeError:  # pandas 2.2: text is object; its StringDtype columns (pd.NA) get no tag
    _NAN_TEXT = None


def _dict_rows(rows: list[dict[str, Any]], order: list[str], after: dict[str, Any]) -> Columns | None:
    """``pd.DataFrame(rows)`` reindexed to ``order`` then the rows' other keys, with ``after``
    set on every row, as Columns; None where pandas' dtype is not plain (``_rows_tag``)."""
    if not rows:
        return None
    seen = dict.fromkeys(key for row in rows for key in row)
    nan = math.nan
    cols: Columns = {}
    for col in [*order, *(key for key in seen if key not in order)]:
        values = [row.get(col, nan) for row in rows]
        tag = _rows_tag(values)
        if tag is None:
            return None
        cols[col] = (tag, values)
    return cols if all(_put(cols, key, value, len(rows)) for key, value in after.items()) else None


def _rows_tag(values: list) -> str | None:
    """The dtype pandas gives a column of ``values`` (missing ones NaN) in a frame built from
    rows: ints -> int64, numbers -> float64, text and missing values -> str, bools -> bool;
    None for anything else (pandas decides)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return "int64" if -_INT64 <= min(values) and max(values) < _INT64 else None
    if len(kinds) == 1:
        return _scalar_tag(values[0]) if kinds <= {float, str, bool} else None
    if kinds <= {int, float}:
        return "float64"
    if kinds == {str, float} and all(v != v for v in values if type(v) is float):
        return "str"
    return None


_TAGS = {bool: "bool", np.bool_: "bool", int: "int64", float: "float64", str: "str", np.str_: "str", type(None): "json"}


def _scalar_tag(value: Any) -> str | None:
    """The dtype pandas gives ``frame[key] = value`` (a tag), or None for a value without a plain one."""
    tag = _TAGS.get(type(value))
    if tag == "int64" and not -_INT64 <= value < _INT64:
        return None
    if tag is None and isinstance(value, np.generic) and value.dtype.kind in "iuf":
        return str(value.dtype)
    return tag


def _put(cols: Columns, key: str, value: Any, n: int) -> bool:
    """``frame[key] = value`` on Columns of ``n`` rows: the column replaced in its place or
    added last, with the dtype pandas gives a scalar; False for a value without a plain one."""
    tag = _scalar_tag(value)
    if tag is None:
        return False
    cols[key] = (tag, [str(value) if tag == "str" else value] * n)
    return True


def swept_values(path: str | os.PathLike) -> dict[str, Any]:
    """The swept values of a run folder (``swept`` of params.json; {} without params.json,
    as runs made by hand have). RunFileError for a params.json that cannot be read."""
    params = runfiles.read_json(os.path.join(path, PARAMS_JSON), optional=True) or {}
    swept = params.get("swept") or {}
    if not isinstance(swept, dict):
        raise RunFileError(
            Path(path) / PARAMS_JSON,
            f"has 'swept' {runfiles.quote(json.dumps(swept), 20)}, not a JSON object of the swept values",
        )
    return swept


def skip_message(path: str | os.PathLike, exc: BaseException) -> str:
    """The one line that says a run is left out of a table, and why: the file (relative to
    the run folder) and what is wrong with it for a RunFileError."""
    if isinstance(exc, RunFileError):
        try:
            name = Path(exc.path).relative_to(path)
        except ValueError:
            name = exc.path
        return f"skipping run {path}: {name} {exc.what}; {exc.todo}"
    return f"skipping run {path}: {exc}"


def no_run_json(root: str | os.PathLike) -> list[str]:
    """One line for each folder in ``root`` that holds files of a run (``layout``) but no
    run.json, or that cannot be listed at all (another user's, mode 0700): not read as a run,
    and said so rather than left out silently."""
    names = set(layout()) - {RUN_JSON}
    out = []
    for folder in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
        if folder.name.startswith(".") or not folder.is_dir() or is_run(folder):
            continue
        try:
            held = sorted(p.name for p in folder.iterdir() if p.name in names)
        except OSError as exc:  # a folder it may not list (another user's run?): said, never dropped silently
            why = (
                "no permission: another user's folder?"
                if isinstance(exc, PermissionError)
                else exc.strerror or type(exc).__name__
            )
            out.append(
                f"skipping {folder}: cannot read it ({why}); if it is a run folder, read it as its owner or as root"
            )
            continue
        if held:
            shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
            out.append(skip_message(folder, RunFileError(folder / RUN_JSON, f"is missing (the folder holds {shown})")))
    return out


def layout() -> tuple[str, ...]:
    """Every file name of a run folder: the folder's own (``FILES``) and each producer's."""
    return (*FILES, *(name for p in producers.PRODUCERS for name in p.files))


def listing(folder: Path, prefetch: bool = False) -> tuple[str | None, frozenset[str]]:
    """The stamp of a run folder and the names in it that exist (``run_record`` reads the
    folder by them: files, sub-folders, not a dangling link). The stamp is what changes when
    any file of the folder or its sub-folders changes (``iolab.runs.runcache`` keys its cache
    on it): 16 hex digits of SHA-256 over each file's relative name, size, mtime_ns,
    ctime_ns and inode, sorted; None when run.json is gone. ``prefetch``: ask for its files
    too (``_prefetch``)."""
    entries = _files(folder, "")
    if entries is None or not any(name == RUN_JSON for name, *_ in entries):
        return None, frozenset()
    if prefetch:
        _prefetch(folder, entries)
    stamp = hashlib.sha256(json.dumps(sorted(entries)).encode()).hexdigest()[:16]
    return stamp, frozenset(name.split("/", 1)[0] for name, size, *_ in entries if "/" in name or size >= 0)


def _prefetch(folder: Path, entries: list) -> None:
    """Ask the kernel to read the run folder's files up to ``_PREFETCH_BYTES`` into the page
    cache (posix_fadvise WILLNEED) and return at once: the reads of a chunk's runs are then
    under way together, not one after another as its runs are read (a cold disk answers many
    requests at once several times faster than one at a time)."""
    if not hasattr(os, "posix_fadvise"):
        return
    for name, size, *_ in entries:
        if 0 < size <= _PREFETCH_BYTES and "/" not in name:
            try:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
            finally:
                os.close(fd)


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


def load_stacks(path: str | os.PathLike, whole_cpu: bool = False) -> Counter:
    """The folded stacks of a profiled run folder as a Counter: fio's own samples, or with
    ``whole_cpu`` every program's on its CPUs (``iolab.machine.perf.read_stacks``)."""
    return producers.stacks(path, whole_cpu)
