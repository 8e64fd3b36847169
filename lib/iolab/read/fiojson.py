"""Any fio JSON -> the tidy table: locating the report, percentiles from json+ bins, warnings.

Input: what fio writes with ``--output-format=json`` or ``json+`` (a run folder's
``fio.json``), from fio 2.x to 3.x, in local or client/server mode.

Output of :func:`parse_output` / :func:`tidy`: one row per (job, direction) that did I/O,
units in the column names (see ``iolab.core.columns``)::

    job_index job      direction  iops     clat_p99_us  ...
    0         qd32     read       183412.  412.7

Parsing follows the checklist in the field survey: JSON is located among stray text
(fio error lines land in the output file: axboe/fio#731, #1685; ``json,normal`` mixes
formats), fio 2.x (latencies in µs under ``clat``, io_bytes in KiB) through 3.x
(``clat_ns``), percentile keys normalised numerically, percentiles recomputed from json+
``bins`` exactly the way fio's ``calc_clat_percentiles`` (stat.c) does, and
client/server output (``client_stats`` with ``hostname``).

A run folder keeps fio's report as ``fio.json`` and its stderr as ``fio.stderr``;
``run_rows(run_dir)`` reads them back as the run's rows (with ``fio_warnings``).
Building job files and running fio is ``iolab.machine.fio``.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import FioOutputError, RunFileError
from ..core.runfiles import FIO_JSON, FIO_STDERR, JOB_FIO

try:  # a JSON reader several times faster than the standard library's (a dependency; optional here)
    from orjson import JSONDecodeError as _FastDecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads, _FastDecodeError = json.loads, json.JSONDecodeError

DIRECTIONS = ("read", "write", "trim", "mixed")
PERCENTILES = {"50": 50.0, "90": 90.0, "95": 95.0, "99": 99.0, "99_9": 99.9, "99_99": 99.99}
FILES = (FIO_JSON, FIO_STDERR, JOB_FIO)  # in a run folder (written by iolab.measure.runner.measure)


# ---------------------------------------------------------------- locating the JSON
@dataclass
class FioDocument:
    """The fio JSON object found in a file, plus the text around it."""

    data: dict
    text_before: list[str]
    text_after: list[str]


def _is_fio_doc(obj: Any) -> bool:
    """An fio report: a ``jobs`` (or client/server ``client_stats``) list, and what makes it
    fio's own — a ``"fio version"`` key (every fio since 2.0 writes it), or jobs that all
    carry fio's ``jobname``. Another tool's ``{"jobs": [...]}`` is not taken for fio's."""
    if not isinstance(obj, dict):
        return False
    jobs = obj.get("jobs", obj.get("client_stats"))
    if not isinstance(jobs, list):
        return False
    if "fio version" in obj:
        return True
    return bool(jobs) and all(isinstance(j, dict) and "jobname" in j for j in jobs)


def find_json(text: str) -> FioDocument:
    """The last complete fio JSON document in ``text`` (fio's final report; with
    ``--status-interval`` earlier documents are interim). Stray lines before and after
    are kept as warnings. Raises FioOutputError when there is none."""
    whole = text.strip()
    if whole[:1] == "{" and whole[-1:] == "}":  # the usual case: nothing but fio's report
        try:
            obj = _loads(whole)
        except (_FastDecodeError, ValueError):
            obj = None
        if _is_fio_doc(obj):
            return FioDocument(obj, [], [])
    decoder = json.JSONDecoder()
    found: tuple[int, int, dict] | None = None
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            break
        if start == 0 or text[start - 1] == "\n":
            try:
                obj, end = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                pos = start + 1
                continue
            if _is_fio_doc(obj):
                found = (start, end, obj)
            pos = end
            continue
        pos = start + 1
    if found is None and whole[:1] == "{" and runfiles.stops_mid_document(whole):
        raise FioOutputError(
            f"fio's report is cut short: its JSON stops mid-document after {len(whole.encode())} bytes "
            "(was fio stopped while writing it?); run the job again, or give a whole report"
        )
    if found is None:
        lines = [runfiles.quote(line, 60) for line in text.splitlines() if line.strip()][:3]
        hint = f" It begins: {' | '.join(lines)}" if lines else " It is empty."
        raise FioOutputError(
            "no fio JSON output found (expected fio's report: an object with 'fio version' and "
            "'jobs' or 'client_stats'); give the file fio wrote with --output-format=json or "
            "json+ (a run folder's fio.json)." + hint
        )
    start, end, obj = found
    before = [s for s in text[:start].splitlines() if s.strip()]
    after = [s for s in text[end:].splitlines() if s.strip()]
    return FioDocument(obj, before, after)


def load_document(path: str | os.PathLike) -> FioDocument:
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        raise FioOutputError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        inside = Path(path) / FIO_JSON
        raise FioOutputError(
            f"{path} is a folder, not fio output; give a file" + (f", e.g. {inside}" if inside.exists() else "")
        ) from None
    try:
        return find_json(text)
    except FioOutputError as exc:
        raise FioOutputError(f"{path}: {exc}") from None


# ---------------------------------------------------------------- percentiles
def percentiles_from_bins(bins: Mapping[str, int], wanted: Iterable[float]) -> dict[float, float]:
    """Percentiles (in the bins' unit, ns) from a json+ histogram, as fio computes them.

    fio's ``calc_clat_percentiles`` (stat.c) walks the buckets in order and assigns to
    percentile p the value of the first bucket where the running count reaches
    p/100 x N. json+ ``bins`` keys are those bucket values (midpoints, so a p99.9999
    can exceed ``max``: axboe/fio#1984); the bucket error is at most 1/2^7 ≈ 0.78 %.
    Bins summed over jobs or repeats give exact merged percentiles.
    """
    values, counts = list(map(int, bins)), list(map(int, bins.values()))
    if not all(map(operator.lt, values, values[1:])):  # fio writes them in order; sums may not be
        pairs = sorted(zip(values, counts))
        values, counts = [v for v, _ in pairs], [c for _, c in pairs]
    running = list(accumulate(counts))
    total = running[-1] if running else 0
    if total <= 0:
        return {}
    # the first bucket whose running count reaches p % of all IOs (zero-count buckets never
    # are: the running count stood as high one bucket earlier)
    return {p: float(values[min(bisect_left(running, p / 100.0 * total), len(values) - 1)]) for p in sorted(wanted)}


def merge_bins(*bins: Mapping[str, int]) -> dict[str, int]:
    """Sum json+ histograms (of jobs, hosts or repeats)."""
    out: dict[str, int] = {}
    for b in bins:
        for k, v in b.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def latency_bins(dirdata: Mapping[str, Any], kind: str) -> dict[str, int] | None:
    """The json+ histogram of one direction's ``kind`` latency ("clat", "lat" or "slat")
    as {bucket value in ns: IO count}, fio 2.x µs keys converted to ns so that bins of any
    fio version can be merged; None when fio wrote no bins for it (plain json output, or
    ``lat`` without ``lat_percentiles=1``)."""
    obj, to_ns = _latency(dirdata, kind)
    if not obj or not obj.get("bins"):
        return None
    return {str(round(int(k) * to_ns)): int(v) for k, v in obj["bins"].items()}


def latency_object(dirdata: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """One direction's ``kind`` latency object (``clat_ns``, or fio 2.x ``clat``), or None."""
    return _latency(dirdata, kind)[0]


def _reported_percentiles(obj: Mapping[str, Any]) -> dict[float, float]:
    """fio's reported percentiles with numeric keys ('99.000000' -> 99.0); fio 2.x/3.1
    '0.00': 0 placeholder slots are dropped."""
    out = {}
    for key, value in (obj.get("percentile") or {}).items():
        p = float(key)
        if p > 0:
            out[p] = float(value)
    return out


# ---------------------------------------------------------------- one direction -> row
def _latency(dirdata: Mapping[str, Any], kind: str) -> tuple[dict | None, float]:
    """(latency object, factor to ns). fio >= 2.99 writes ``clat_ns`` in ns; older
    fio writes ``clat`` in µs."""
    if f"{kind}_ns" in dirdata:
        return dirdata[f"{kind}_ns"], 1.0
    if kind in dirdata and isinstance(dirdata[kind], Mapping):
        return dirdata[kind], 1000.0
    return None, 1.0


def _us(obj: Mapping | None, key: str, to_ns: float) -> float:
    if not obj or key not in obj:
        return math.nan
    value = float(obj[key])
    if key == "mean" and value == 0 and float(obj.get("max", 0)) == 0:
        return math.nan  # latency not measured (gtod_reduce / disable_*lat)
    return value * to_ns / 1000.0


def _direction_row(dirdata: Mapping[str, Any], legacy_units: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"iops": float(dirdata.get("iops", 0.0))}
    if "bw_bytes" in dirdata:
        row["bw_bytes_s"] = float(dirdata["bw_bytes"])
    else:
        row["bw_bytes_s"] = float(dirdata.get("bw", 0)) * 1024.0
    io_bytes = dirdata.get("io_bytes", 0)
    row["io_bytes"] = int(io_bytes) * (1024 if legacy_units else 1)
    row["total_ios"] = int(dirdata.get("total_ios", 0))
    row["runtime_ms"] = float(dirdata.get("runtime", 0))
    slat, s_f = _latency(dirdata, "slat")
    clat, c_f = _latency(dirdata, "clat")
    lat, l_f = _latency(dirdata, "lat")
    row["slat_mean_us"] = _us(slat, "mean", s_f)
    row["clat_mean_us"] = _us(clat, "mean", c_f)
    row["clat_min_us"] = _us(clat, "min", c_f)
    row["clat_max_us"] = _us(clat, "max", c_f)
    row["clat_stddev_us"] = _us(clat, "stddev", c_f)
    row["lat_mean_us"] = _us(lat, "mean", l_f)
    row["percentile_source"] = "none"
    row["percentiles_from"] = "none"
    for kind, obj, factor in (("clat", clat, c_f), ("lat", lat, l_f)):
        values: dict[float, float] = {}
        if obj and obj.get("bins"):
            values = percentiles_from_bins(obj["bins"], PERCENTILES.values())
            source = "bins"
        elif obj and obj.get("percentile"):
            values = _reported_percentiles(obj)
            source = "reported"
        for name, p in PERCENTILES.items():
            v = values.get(p)
            row[f"{kind}_p{name}_us"] = v * factor / 1000.0 if v is not None else math.nan
        if values and row["percentile_source"] == "none":
            row["percentile_source"], row["percentiles_from"] = kind, source
    return row


def _job_rows(job: Mapping[str, Any], index: int, version: str, legacy: bool, hostname: str) -> list[dict[str, Any]]:
    base = {
        "job_index": index,
        "job": job.get("jobname", ""),
        "groupid": int(job.get("groupid", 0)),
        "hostname": hostname or job.get("hostname", "") or "",
        "usr_cpu_pct": float(job.get("usr_cpu", math.nan)),
        "sys_cpu_pct": float(job.get("sys_cpu", math.nan)),
        "ctx": int(job.get("ctx", 0)),
        "error": int(job.get("error", 0)),
        "fio_version": version,
    }
    rows = []
    for direction in DIRECTIONS:
        dirdata = job.get(direction)
        if not isinstance(dirdata, Mapping):
            continue
        if int(dirdata.get("total_ios", 0)) == 0 and float(dirdata.get("io_bytes", 0)) == 0:
            continue
        rows.append({**base, "direction": direction, **_direction_row(dirdata, legacy)})
    if not rows:
        rows.append(
            {
                **base,
                "direction": "none",
                "iops": 0.0,
                "bw_bytes_s": 0.0,
                "io_bytes": 0,
                "total_ios": 0,
                "runtime_ms": 0.0,
            }
        )
    return rows


COLUMN_ORDER = [
    "job_index",
    "job",
    "groupid",
    "hostname",
    "direction",
    "iops",
    "bw_bytes_s",
    "io_bytes",
    "total_ios",
    "runtime_ms",
    "clat_mean_us",
    "clat_p50_us",
    "clat_p99_us",
    "clat_p99_9_us",
    "lat_mean_us",
    "usr_cpu_pct",
    "sys_cpu_pct",
    "ctx",
    "error",
    "fio_version",
]


def tidy_rows(doc: FioDocument | Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``tidy`` as dicts: what many outputs loaded into one table are built
    from, without a DataFrame per output (``parse_outputs``)."""
    data = doc.data if isinstance(doc, FioDocument) else doc
    version = str(data.get("fio version", ""))
    jobs = data.get("jobs")
    rows: list[dict[str, Any]] = []
    if jobs is None:  # client/server mode
        for i, job in enumerate(data.get("client_stats", [])):
            host = job.get("hostname", "")
            rows += _job_rows(job, i, version, _is_legacy(job), host)
    else:
        for i, job in enumerate(jobs):
            rows += _job_rows(job, i, version, _is_legacy(job), "")
    return rows


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    extra = [c for c in frame.columns if c not in COLUMN_ORDER]
    return frame.reindex(columns=COLUMN_ORDER + extra)


def tidy(doc: FioDocument | Mapping[str, Any]) -> pd.DataFrame:
    """The tidy table of one fio JSON document (see the module docstring)."""
    return _frame(tidy_rows(doc))


def checked_rows(doc: FioDocument | Mapping[str, Any], source: Any) -> list[dict[str, Any]]:
    """``tidy_rows`` of ``doc`` (read from ``source``); FioOutputError naming it when a job
    in it is not as fio writes it (a value of another type, a key missing)."""
    try:
        return tidy_rows(doc)
    except runfiles.CONTENT_ERRORS as exc:
        raise FioOutputError(
            f"{source}: fio JSON, but a job in it is not as fio writes it "
            f"({runfiles.quote(f'{type(exc).__name__}: {exc}', 80)}); give fio's report as fio "
            "wrote it"
        ) from None


def checked_tidy(doc: FioDocument | Mapping[str, Any], source: Any) -> pd.DataFrame:
    """``tidy`` of ``doc``, with ``checked_rows``' error naming ``source``."""
    return _frame(checked_rows(doc, source))


def _is_legacy(job: Mapping[str, Any]) -> bool:
    """fio 2.x (before 2.99): µs latencies under ``clat`` and io_bytes in KiB."""
    for direction in DIRECTIONS:
        d = job.get(direction)
        if isinstance(d, Mapping) and ("clat" in d or "lat" in d) and "clat_ns" not in d:
            return True
    return False


def parse_output(path: str | os.PathLike) -> pd.DataFrame:
    """Any fio JSON / json+ output file (or t/io_uring text, see ``iolab.read.tio``) -> tidy table."""
    return checked_tidy(load_document(path), path)


def parse_outputs(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """Many fio outputs -> one tidy table with a ``source`` column (the path), built once."""
    rows = [{**row, "source": str(path)} for path in paths for row in checked_rows(load_document(path), path)]
    return _frame(rows)


def run_rows(run_dir: str | os.PathLike) -> pd.DataFrame:
    """The rows of a fio run folder: ``tidy`` of its report, and ``fio_warnings`` — what fio
    said (``run_warnings`` of the report and ``fio.stderr``) joined with " | "."""
    rows, said = run_report(run_dir)
    with runfiles.guard(Path(run_dir) / FILES[0]):
        frame = _frame(rows)
    frame["fio_warnings"] = said
    return frame


def run_report(run_dir: str | os.PathLike) -> tuple[list[dict[str, Any]], str]:
    """What ``run_rows`` is made of, without a DataFrame: ``tidy_rows`` of the run folder's
    report and its ``fio_warnings`` text; the same RunFileError for a report it cannot use."""
    report, stderr = (os.path.join(run_dir, name) for name in FILES[:2])
    doc = run_document(report)
    jobs = doc.data.get("jobs") or doc.data.get("client_stats") or []
    if not jobs:
        raise RunFileError(Path(report), "holds no job (its jobs list is empty)")
    for i, job in enumerate(jobs):  # fio writes read, write and trim objects for every job
        if isinstance(job, Mapping) and not any(isinstance(job.get(d), Mapping) for d in DIRECTIONS):
            raise RunFileError(Path(report), f"job {i} has no read, write or trim figures (each is missing or null)")
    with runfiles.guard(report):
        rows = tidy_rows(doc)
    said = Path(stderr).read_text(errors="replace") if os.path.exists(stderr) else ""
    return rows, " | ".join(run_warnings(doc, said))


_reused: dict[str, FioDocument] | None = None  # reports read while ``reports_reused`` is on, by path


@contextmanager
def reports_reused() -> Iterator[None]:
    """While on, ``run_document`` reads each report once: a run's table takes its rows, fio's
    CPU and fio's disk figures from one reading of its fio.json (the documents are shared:
    read them, never change them)."""
    global _reused
    outer, _reused = _reused, {} if _reused is None else _reused
    try:
        yield
    finally:
        _reused = outer


def run_document(report: str | os.PathLike) -> FioDocument:
    """The fio report of a run folder (its ``fio.json``): ``find_json`` of its text, or
    RunFileError (``iolab.core.runfiles``) naming it and saying how it is broken: missing, empty,
    cut short, not JSON, or JSON that is not fio's report."""
    key = os.fspath(report)
    if _reused is not None and key in _reused:
        return _reused[key]
    text = runfiles.read_text(report, errors="replace")
    try:
        doc = find_json(text)
    except FioOutputError:
        runfiles.parse_json(text.strip(), report, dict)  # cut short, not JSON, or not an object: said so
        raise RunFileError(
            Path(report),
            "holds a JSON object that is not fio's report (no 'fio version' with 'jobs' or 'client_stats')",
        ) from None
    if _reused is not None:
        _reused[key] = doc
    return doc


DISK_UTIL_KEYS = {  # fio's disk_util key -> ours, with the unit (fio's stat.c json_array_add_disk_util)
    "read_ios": "read_ios",
    "write_ios": "write_ios",
    "read_merges": "read_merges",
    "write_merges": "write_merges",
    "read_ticks": "read_ticks_ms",
    "write_ticks": "write_ticks_ms",
    "in_queue": "in_queue_ms",
    "util": "util_pct",
}


def disk_util(data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """fio's own device statistics: its report's top-level ``disk_util`` list, one dict per
    device name in fio's order, with ``DISK_UTIL_KEYS``' values (IOs, merges, ticks and
    in_queue in ms, util in %; a value fio left out or wrote as something else than a number
    is NaN). fio reads ``/sys/block/<dev>/stat`` every 250 ms (DISK_UTIL_MSEC) while its jobs
    run, so its counts can miss the run's last fraction of a second; util is io_ticks over
    fio's own sampling window, which the report does not give. A md or dm device comes with
    the devices under it as entries of their own (the md entry's ``aggr_*`` keys are not
    read). {} when fio wrote none: a file on a file system without a block device,
    ``--disk_util=0``, t/io_uring; a client/server report's entries (per host) come as fio
    wrote them, the last of a name kept."""
    out: dict[str, dict[str, float]] = {}
    entries = data.get("disk_util")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        values = {}
        for key, ours in DISK_UTIL_KEYS.items():
            value = entry.get(key)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            values[ours] = float(value) if ok else math.nan
        out[entry["name"]] = values
    return out


def job_errors(frame: pd.DataFrame) -> list[str]:
    """Human-readable lines for jobs that report a non-zero error (fio's ``error`` is an
    errno: "fio error 30 (Read-only file system)", os.strerror)."""
    bad = frame[frame["error"].fillna(0).astype(int) != 0]
    return [
        f"job {r.job!r} (index {r.job_index}): fio error {r.error} ({os.strerror(int(r.error))})"
        for r in bad.drop_duplicates("job_index").itertuples()
    ]


# ---------------------------------------------------------------- what fio said
def said_lines(*texts: Iterable[str] | str) -> list[str]:
    """Non-empty lines of several texts (or lists of lines), each once, in order."""
    out: list[str] = []
    for text in texts:
        for line in text.splitlines() if isinstance(text, str) else text:
            line = line.strip()
            if line and line not in out:
                out.append(line)
    return out


# a fio server's start-up chatter relayed by the client ("<host> job: (g=0): rw=...",
# "<host> Starting 1 process", "<host> "): what fio always prints, not a warning
SERVER_BANNER = re.compile(r"^<[^>]*>\s*(?:$|Starting \d+ (?:process|thread)|\S+: \(g=\d+\): )")


def run_warnings(doc: FioDocument, stderr: str = "") -> list[str]:
    """What fio said about a run that worked, plus the clamps iolab sees in its report:
    every line fio printed on stderr or around its JSON, and, for each job that asked for
    ``iodepth`` > 1 but whose ``iodepth_level`` (json) shows every IO submitted at depth 1,
    fio's note "queue depth will be capped at 1" — which fio does not write at all when
    ``--output`` is given (its job process never flushes it)."""
    out = [line for line in said_lines(doc.text_before, doc.text_after, stderr) if not SERVER_BANNER.match(line)]
    data = doc.data
    global_depth = (data.get("global options") or {}).get("iodepth")
    for job in data.get("jobs") or data.get("client_stats") or []:
        depth = (job.get("job options") or {}).get("iodepth", global_depth)
        levels = job.get("iodepth_level") or {}
        try:
            asked, at_one = int(str(depth)), float(levels.get("1", 0))
        except (TypeError, ValueError):
            continue
        if asked > 1 and at_one >= 99.95:
            note = (
                f"job {job.get('jobname', '')!r}: iodepth={asked} but every IO was submitted at "
                "depth 1 (fio iodepth_level): queue depth will be capped at 1 (a synchronous "
                "ioengine such as psync does this)"
            )
            if note not in out:
                out.append(note)
    return out
