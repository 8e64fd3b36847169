"""One folder per run under ``data/runs/``, written atomically; a loader for many runs.

A run folder (raw files are never edited after the run)::

    data/runs/20261122T023400Z-qd32-3f9a/
        run.json          schema_version, iolab version, status, times, target, error
        params.json       every swept value and the full fio option dict
        job.fio           the job file fio ran
        argv.json         the exact fio command line
        fio.json          fio's raw json+ output, byte for byte
        fio.stderr        what fio printed on stderr
        system.json       the machine snapshot (iolab.system.snapshot)
        samples_freq.csv  t_s, cpu, freq_mhz, freq_source
        samples_stat.csv  t_s, cpu, /proc/stat counters (USER_HZ ticks)

The folder is built under ``.tmp-<id>`` and renamed into place, so a reader never sees a
half-written run; a failed or interrupted run is still renamed, with ``status`` saying so.

Format history:
    1 (2026-11-22)  first version.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pandas as pd

from . import __version__, ledger
from .errors import DiskFullError, IolabError, SchemaError
from .fio import load_document, run_warnings, tidy
from .sampling import Samples, summarise

SCHEMA_VERSION = 1


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to a temporary name beside ``path``, then rename over it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(f"no space left to write {path}: free space on "
                                f"{path.parent} or point data_dir elsewhere") from exc
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")


def new_run_id(label: str = "") -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:40]
    return f"{stamp}-{slug + '-' if slug else ''}{secrets.token_hex(3)}"


class RunFolder:
    """A run folder being written. ``finish(status)`` renames it into place."""

    def __init__(self, root: str | os.PathLike, label: str = ""):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_id = new_run_id(label)
        self.path = self.root / f".tmp-{self.run_id}"
        self._ledger = ledger.record("run", path=str(self.path.absolute()))
        self.path.mkdir()
        self.meta: dict[str, Any] = _new_meta(self.run_id)
        self.write_json("run.json", self.meta)  # status "running" until finish()

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

    def write_samples(self, samples: Samples) -> None:
        self.write_text("samples_freq.csv", samples.freq.to_csv(index=False))
        self.write_text("samples_stat.csv", samples.stat.to_csv(index=False))

    def finish(self, status: str = "ok", error: str | None = None) -> Path:
        self.path = _finish(self.path, self.meta, status, error)
        self._ledger.release()
        return self.path


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _new_meta(run_id: str) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "iolab_version": __version__, "run_id": run_id,
            "status": "running", "started_utc": _utc_now(), "pid": os.getpid()}


def _finish(tmp: Path, meta: dict[str, Any], status: str, error: str | None) -> Path:
    """Write the final run.json into ``tmp`` and rename it to ``<run_id>``."""
    meta.update(status=status, error=error, finished_utc=_utc_now())
    write_json(tmp / "run.json", meta)
    final = tmp.with_name(meta["run_id"])
    os.replace(tmp, final)
    return final


def finish_abandoned(tmp: Path, why: str) -> str:
    """Finish a ``.tmp-<id>`` run folder whose process died as ``interrupted`` (called by
    ``iolab.ledger.recover``); what it holds is kept as it is."""
    if not tmp.is_dir():
        return f"run folder {tmp} was already finished"
    meta_path = tmp / "run.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {
        "schema_version": SCHEMA_VERSION, "iolab_version": __version__,
        "run_id": tmp.name.removeprefix(".tmp-")}
    final = _finish(tmp, meta, "interrupted", why)
    return f"marked run {final} interrupted ({why})"


@contextmanager
def run_folder(root: str | os.PathLike, label: str = "") -> Iterator[RunFolder]:
    """A RunFolder that is finished as ``ok``, ``failed`` or ``interrupted`` whatever happens."""
    folder = RunFolder(root, label)
    try:
        yield folder
    except KeyboardInterrupt:
        folder.finish("interrupted", "KeyboardInterrupt")
        raise
    except BaseException as exc:
        from .errors import RunInterrupted
        folder.finish("interrupted" if isinstance(exc, RunInterrupted) else "failed",
                      f"{type(exc).__name__}: {exc}")
        raise
    else:
        folder.finish("ok")


# ---------------------------------------------------------------- one job, one key
def job_key(fio_options: Mapping[str, Any], target: str, swept: Mapping[str, Any]) -> str:
    """A hash of everything that makes two runs the same job: the full fio option dict (as
    stored in params.json, without ``name``), the target (``Target.describe()``) and the
    swept values including ``repeat``. Sweeps resume on it; 16 hex digits of SHA-256 over
    the sorted JSON, so it does not depend on dict order or on str/int spellings JSON keeps."""
    import hashlib

    opts = {k: v for k, v in dict(fio_options).items() if k != "name"}
    body = json.dumps({"fio_options": opts, "target": str(target), "swept": dict(swept)},
                      sort_keys=True, default=str)
    body = json.dumps(json.loads(body), sort_keys=True)  # as stored: tuples -> lists, Paths -> str
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def stored_job_key(params: Mapping[str, Any]) -> str:
    """The job key of a stored run from its params.json: ``job_key`` if recorded, else
    computed from its fio_options, target and swept values (runs stored before the key)."""
    return params.get("job_key") or job_key(params.get("fio_options", {}), params.get("target", ""),
                                            params.get("swept", {}))


# ---------------------------------------------------------------- loading
def read_run(path: str | os.PathLike) -> dict[str, Any]:
    """run.json of a run folder, checked against the schema version."""
    path = Path(path)
    meta = json.loads((path / "run.json").read_text())
    version = meta.get("schema_version")
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        raise SchemaError(f"{path} was written with run schema {version}; this iolab reads "
                          f"{SCHEMA_VERSION}. " + ("Upgrade iolab (git pull; make setup)."
                                                   if newer else "Re-run the experiment to refresh it."))
    return meta


def run_table(path: str | os.PathLike) -> pd.DataFrame:
    """The tidy table of one run folder: fio rows + params + sampler summary + run id."""
    path = Path(path)
    meta = read_run(path)
    params = json.loads((path / "params.json").read_text()) if (path / "params.json").exists() else {}
    if (path / "tio.txt").exists():
        from .tio import parse_tio, summarise_tio
        frame = pd.DataFrame([{"job_index": 0, "job": "t/io_uring", "direction": "read",
                               **summarise_tio(parse_tio(path / "tio.txt"))}])
    else:
        doc = load_document(path / "fio.json")
        frame = tidy(doc)
        stderr = (path / "fio.stderr").read_text(errors="replace") if (path / "fio.stderr").exists() else ""
        frame["fio_warnings"] = " | ".join(meta.get("fio_warnings") or run_warnings(doc, stderr))
    summary = {}
    if (path / "samples_stat.csv").exists():
        samples = Samples(pd.read_csv(path / "samples_freq.csv"), pd.read_csv(path / "samples_stat.csv"))
        summary = summarise(samples)
    summary.update(perf_summary(path))
    if (path / "blockstat.json").exists():
        from .system import request_sizes
        bs = json.loads((path / "blockstat.json").read_text())
        summary.update(request_sizes(bs["before"], bs["after"]))
    for key, value in {**summary, **params.get("swept", {})}.items():
        frame[key] = value if not isinstance(value, (list, dict)) else json.dumps(value)
    frame.insert(0, "run_id", meta["run_id"])
    frame["status"] = meta["status"]
    return frame


def perf_summary(path: Path) -> dict:
    """perf stat figures of a run folder, if it was profiled: perf_cycles (NaN when the
    machine has no hardware counters), perf_window_s, and where cycles came from."""
    tidy_stat = Path(path) / "perf_stat_tidy.csv"
    if not tidy_stat.exists():
        return {}
    stat = pd.read_csv(tidy_stat).set_index("event")
    cycles = stat["value"].get("cycles", float("nan"))
    return {"perf_cycles": cycles, "perf_window_s": stat["value"].get("window_s", float("nan")),
            "perf_task_clock_ms": stat["value"].get("task-clock", float("nan")),
            "perf_cycles_source": "perf stat cycles" if pd.notna(cycles) else
            "none: no hardware counters (cycles not supported)"}


def find_runs(root: str | os.PathLike) -> list[Path]:
    """Finished run folders below ``root`` (temporary ``.tmp-*`` folders are skipped)."""
    root = Path(root)
    return sorted(p for p in root.glob("*/run.json") if not p.parent.name.startswith("."))


def load_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike,
              status: str | None = "ok") -> pd.DataFrame:
    """Any set of run folders (or a folder holding them) -> one tidy DataFrame.

    Unreadable runs are skipped with a warning; ``status=None`` keeps failed runs too."""
    import warnings
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        paths = [r.parent for r in find_runs(p)] if not (p / "run.json").exists() else [p]
    frames = []
    for path in paths:
        try:
            meta = read_run(path)
            if status and meta["status"] != status:
                continue
            frames.append(run_table(path))
        except (OSError, ValueError, IolabError) as exc:
            warnings.warn(f"skipping run {path}: {exc}", stacklevel=2)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_stacks(path: str | os.PathLike):
    """The folded stacks of a profiled run folder (``perf.folded``) as a Counter."""
    from .fold import read_folded
    folded = Path(path) / "perf.folded"
    if not folded.exists():
        raise FileNotFoundError(f"{path} has no perf.folded: run it with profile=ProfileSpec()")
    return read_folded(folded)
