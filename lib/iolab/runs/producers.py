"""The run-folder contract: what each producer writes in a run folder and how it is read back.

A producer is anything that leaves files in a run folder: the tool that drove the I/O (fio,
t/io_uring), the samplers, perf record and perf stat, the block counters, the system
snapshot. Each declares

* ``files`` — the file names it writes (the first one there means it ran), and
* ``read(run_dir)`` — its reader: the table's rows (one per job and direction; a DataFrame)
  for the tool that drove the I/O, or per-run columns (a dict) merged onto every row;
* ``records(run_dir)``, for a tool that drove the I/O, optionally — the same rows as dicts,
  which ``iolab.runs.store.run_record`` turns into columns without a DataFrame per run
  (fio's; t/io_uring's and the hosts' rows come as ``read`` gives them).

``parts(run_dir)`` reads a run's rows and columns with fio's report parsed once for all its
readers (``iolab.read.fiojson.reports_reused``).

A file a producer reads that is missing, empty, cut short or not what it wrote is a
``RunFileError`` naming that file (readers read through ``iolab.core.runfiles``; ``rows`` and
``columns`` turn what a reader meets in a file of the right type but the wrong content into
one too), and ``iolab.runs.store`` leaves that run out of a table, saying so: a run's row is never
given with one producer's columns silently missing (an empty ``flags`` would read "passed").

``iolab.runs.store`` loops over ``PRODUCERS`` and imports no producer; a new producer (thread
states, remote hosts, stress-ng) is one more entry here, with its columns in
``iolab.core.columns``. The file names and the folder's own files (``iolab.runs.store``) make up the
versioned layout (``iolab.runs.store.SCHEMA_VERSION``).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import FioOutputError
from ..core.runfiles import BLOCKSTAT_JSON, FIO_JSON, SYSTEM_JSON
from ..core.system import iostat, request_sizes, snapshot_columns
from ..machine import perf
from ..read import checks, fiojson, hosttable, samples, series, threadstates, tio
from ..stats import timeline


@dataclass(frozen=True)
class Producer:
    """One producer's part of a run folder (see the module docstring)."""

    name: str
    files: tuple[str, ...]
    read: Callable[[Path], pd.DataFrame | dict[str, Any]]
    rows: bool = False  # True: ``read`` gives the table's rows, else per-run columns
    # the rows as ``read`` gives them, without a DataFrame: (rows as dicts, the frame's column
    # order before the other keys, columns set on every row after them); None: use ``read``
    records: Callable[[Path], tuple[list[dict[str, Any]], list[str], dict[str, Any]]] | None = None

    def ran(self, run_dir: str | Path, names: Collection[str] | None = None) -> bool:
        """Whether this producer wrote into ``run_dir``: its first file is there (the tool
        that drove the I/O), or any of its files (the others: then a file of it that is
        missing is named by its reader, not taken for a producer that did not run).
        ``names``: the folder's file names, when the caller has listed it."""
        files = self.files if not self.rows else self.files[:1]
        if names is not None:
            return any(name in names for name in files)
        return any((Path(run_dir) / name).exists() for name in files)

    def load(self, run_dir: str | Path, names: Collection[str] | None = None, reader: Callable | None = None) -> Any:
        """``read(run_dir)`` (or ``reader(run_dir)``); RunFileError naming this producer's files
        for what its reader meets in a file of the right type but the wrong content
        (``iolab.core.runfiles.guard``)."""
        try:
            return (reader or self.read)(run_dir)
        except runfiles.CONTENT_ERRORS as exc:
            run_dir = Path(run_dir)
            present = [name for name in self.files if (run_dir / name).exists()] or list(self.files[:1])
            raise runfiles.content_error(run_dir / " or ".join(present), exc) from exc


def block_columns(run_dir: str | Path) -> dict[str, float]:
    """What the device saw during the run, from the ``/sys/block/<dev>/stat`` readings before
    and after it in ``blockstat.json``: IOs, merges and request sizes
    (``iolab.core.system.request_sizes``), iostat's %util, await and aqu-sz
    (``iolab.core.system.iostat``: %util and aqu-sz are NaN for runs recorded before
    blockstat.json held ``interval_s``), and beside them fio's own disk_util for the same
    device (``fio_disk_columns``)."""
    counters = runfiles.read_json(os.path.join(run_dir, BLOCKSTAT_JSON), keys=("before", "after"))
    before, after = counters["before"], counters["after"]
    names = list(counters.get("devices") or [counters.get("device")])  # a multi-device job's: summed
    return {
        **request_sizes(before, after),
        **iostat(before, after, counters.get("interval_s"), len(names)),
        **fio_disk_columns(run_dir, names),
    }


FIO_DISK_COLUMNS = ("fio_disk_util_pct", "fio_disk_read_ios", "fio_disk_write_ios", "fio_disk_aqu_sz")


def fio_disk_columns(run_dir: str | Path, device: str | list[str] | None) -> dict[str, float]:
    """fio's own disk statistics (``iolab.read.fiojson.disk_util`` of the run's ``fio.json``)
    for ``device`` (several: their IOs and in_queue added, util their mean), else for the first
    device fio lists (a md or dm device lists those under it too): fio's util (%), read and write IOs, and aqu-sz as in_queue over the longest
    runtime of fio's jobs (an estimate: fio does not report the window it sampled the disk
    over, which starts before its jobs do). NaN when fio wrote no disk_util (a file without
    a block device, t/io_uring, ``--disk_util=0``)."""
    report = os.path.join(run_dir, FIO_JSON)
    data = fiojson.run_document(report).data if os.path.exists(report) else {}
    disks = fiojson.disk_util(data)
    names = [device] if isinstance(device, str) or device is None else list(device)
    if len(names) > 1 and all(n in disks for n in names):  # a multi-device job: IOs added, util their mean
        found = [disks[n] for n in names]
        disk = {k: sum(d[k] for d in found) for k in found[0]}
        disk["util_pct"] /= len(found)
    else:
        disk = disks.get(names[0]) or next(iter(disks.values()), None)
    if disk is None:
        return dict.fromkeys(FIO_DISK_COLUMNS, math.nan)
    runtime_ms = _longest_runtime_ms(data)
    return {
        "fio_disk_util_pct": disk["util_pct"],
        "fio_disk_read_ios": disk["read_ios"],
        "fio_disk_write_ios": disk["write_ios"],
        "fio_disk_aqu_sz": disk["in_queue_ms"] / runtime_ms if runtime_ms else math.nan,
    }


def _longest_runtime_ms(data: dict[str, Any]) -> float:
    """The longest ``runtime`` (ms) of any job and direction in fio's report; 0 without one
    (``job_runtime`` is not taken: with group_reporting it sums the jobs)."""
    jobs = data.get("jobs") or data.get("client_stats") or []
    found = [
        part.get("runtime")
        for job in (jobs if isinstance(jobs, list) else [])
        if isinstance(job, dict)
        for part in (job.get(rw) for rw in fiojson.DIRECTIONS)
        if isinstance(part, dict)
    ]
    return max((float(t) for t in found if isinstance(t, (int, float)) and not isinstance(t, bool)), default=0.0)


def fio_records(run_dir: str | Path) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """``iolab.read.fiojson.run_rows`` as dicts: its rows (``tidy_rows``), its column order
    (``COLUMN_ORDER``, then the rows' other keys) and ``fio_warnings`` after them."""
    found, said = fiojson.run_report(run_dir)
    return found, fiojson.COLUMN_ORDER, {"fio_warnings": said}


def system_columns(run_dir: str | Path) -> dict[str, Any]:
    """What ``iolab.stats.drift`` compares between the runs of a study, from ``system.json``
    (``iolab.core.system.snapshot_columns``). fio's version and the frequency source are
    columns of the fio and sampler producers."""
    return snapshot_columns(runfiles.read_json(os.path.join(run_dir, SYSTEM_JSON)))


def no_columns(run_dir: str | Path) -> dict[str, Any]:
    """For producers whose files are kept for provenance or read elsewhere, not as columns."""
    return {}


PRODUCERS: tuple[Producer, ...] = (
    Producer("t/io_uring", tio.FILES, tio.run_rows, rows=True),
    Producer("fio client/server", hosttable.FILES, hosttable.run_rows, rows=True),  # before fio: its rows
    Producer("fio", fiojson.FILES, fiojson.run_rows, rows=True, records=fio_records),
    Producer("samplers", samples.FILES, samples.run_columns),
    Producer("perf stat", perf.STAT_FILES, perf.stat_columns),
    Producer("block counters", (BLOCKSTAT_JSON,), block_columns),
    Producer("perf record", perf.RECORD_FILES, no_columns),  # read by stacks()
    Producer("thread states", threadstates.FILES, threadstates.run_columns),  # iolab.machine.threads
    Producer("interval logs", series.FILES, timeline.run_columns),  # fio's logs with log_ms: iolab.read.series
    Producer("system snapshot", (SYSTEM_JSON,), system_columns),
    Producer("plausibility checks", (checks.FILE,), checks.flag_columns),
)


def rows(run_dir: str | Path) -> pd.DataFrame:
    """The rows of a run folder, from the first row producer that ran in it."""
    return _row_producer(run_dir, None).load(run_dir)


def row_records(
    run_dir: str | Path, names: Collection[str] | None = None
) -> pd.DataFrame | tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """``rows`` as its producer's ``records`` give them (rows as dicts, column order, columns
    after them), or the DataFrame of ``rows`` for a producer without ``records``.
    ``names``: the run folder's file names, when the caller has listed it."""
    producer = _row_producer(run_dir, names)
    return producer.load(run_dir, names, producer.records)


def _row_producer(run_dir: str | Path, names: Collection[str] | None) -> Producer:
    """The first row producer that ran in ``run_dir``; FioOutputError when none did."""
    for producer in PRODUCERS:
        if producer.rows and producer.ran(run_dir, names):
            return producer
    tools = " or ".join(p.files[0] for p in PRODUCERS if p.rows)
    raise FioOutputError(
        f"{run_dir} holds no report ({tools}): the run stopped before its tool "
        "wrote one; its run.json says why, and argv.json holds the command to re-run"
    )


def parts(run_dir: str | Path, names: Collection[str] | None = None) -> tuple[Any, dict[str, Any]]:
    """``row_records`` and ``columns`` of a run folder, its fio report read once for both
    (``iolab.read.fiojson.reports_reused``)."""
    with fiojson.reports_reused():
        return row_records(run_dir, names), columns(run_dir, names)


def columns(run_dir: str | Path, names: Collection[str] | None = None) -> dict[str, Any]:
    """The per-run columns of a run folder, from every column producer that ran in it.
    ``names``: the run folder's file names, when the caller has listed it."""
    out: dict[str, Any] = {}
    for producer in PRODUCERS:
        if not producer.rows and producer.ran(run_dir, names):
            out.update(producer.load(run_dir, names))
    return out


def stacks(run_dir: str | Path, whole_cpu: bool = False) -> Counter:
    """The folded stacks of a profiled run folder (fio's own, or ``whole_cpu``: every program's;
    ``iolab.machine.perf.read_stacks``)."""
    return perf.read_stacks(run_dir, whole_cpu)
