"""fio: option dicts -> job file / argv, running fio, and any fio JSON -> the tidy table.

Input: plain option dicts, fio's own names and values (any option passes through)::

    {"rw": "randread", "bs": "4k", "iodepth": 32, "ioengine": "io_uring", "direct": 1}

Output of :func:`parse_output`: one row per (job, direction) that did I/O, units in the
column names (see ``iolab.columns``)::

    job_index job      direction  iops     clat_p99_us  ...
    0         qd32     read       183412.  412.7

Parsing follows the checklist in the field survey: JSON is located among stray text
(fio error lines land in the output file: axboe/fio#731, #1685; ``json,normal`` mixes
formats), fio 2.x (latencies in µs under ``clat``, io_bytes in KiB) through 3.x
(``clat_ns``), percentile keys normalised numerically, percentiles recomputed from json+
``bins`` exactly the way fio's ``calc_clat_percentiles`` (stat.c) does, and
client/server output (``client_stats`` with ``hostname``).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from .errors import FioError, FioOutputError, InputError, ToolMissing
from .process import run_pinned

DIRECTIONS = ("read", "write", "trim", "mixed")
PERCENTILES = {"50": 50.0, "90": 90.0, "95": 95.0, "99": 99.0, "99_9": 99.9, "99_99": 99.99}


# ---------------------------------------------------------------- options -> job file / argv
def _fmt(value: Any) -> str | None:
    """fio spelling of a Python value; None means 'flag without a value'."""
    if value is True:
        return None
    if value is False:
        return "0"
    if isinstance(value, (list, tuple)):
        return ":".join(str(v) for v in value)
    return str(value)


_TIME_UNITS = ((1, "s"), (1_000, "ms"), (1_000_000, "us"))


def fio_time(seconds: float) -> str:
    """Seconds -> fio's time syntax, exactly: ``2`` -> ``"2s"``, ``0.5`` -> ``"500ms"``,
    ``0.0125`` -> ``"12500us"``.

    fio reads a time as an integer with a unit suffix (s, ms, us; man fio, "time") and
    drops any fraction: ``runtime=0.5s`` is read as 0 s and ``1.5s`` as 1 s. So the
    coarsest unit that holds the value as a whole number is used; a value that is not a
    whole number of microseconds, not finite, or not > 0 is refused."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise InputError(f"a time of {seconds!r} is not a number of seconds; give e.g. 2 or 0.5") from None
    if isinstance(seconds, bool) or not math.isfinite(value) or value <= 0:
        raise InputError(f"a time of {seconds!r} s cannot be run; give a number of seconds > 0, e.g. 2 or 0.5")
    for factor, unit in _TIME_UNITS:
        scaled = value * factor
        if abs(scaled - round(scaled)) <= 1e-9 * max(1.0, abs(scaled)):
            return f"{round(scaled)}{unit}"
    raise InputError(f"a time of {seconds!r} s is not a whole number of microseconds, the finest "
                     "unit fio reads; round it, e.g. to 0.5 or 0.001")


def to_argv(options: Mapping[str, Any], fio: str = "fio") -> list[str]:
    """fio command line for one job from an option dict: ``--name=x --rw=read ...``.

    ``name`` comes first (fio needs a job name before job options)."""
    opts = dict(options)
    argv = [fio, f"--name={opts.pop('name', 'iolab')}"]
    for key, value in opts.items():
        if value is None:
            continue
        text = _fmt(value)
        argv.append(f"--{key}" if text is None else f"--{key}={text}")
    return argv


def to_jobfile(jobs: Mapping[str, Mapping[str, Any]] | Mapping[str, Any],
               global_options: Mapping[str, Any] | None = None) -> str:
    """fio job file text. ``jobs`` maps job name -> options, or is one option dict
    (then its ``name`` key, default ``iolab``, names the single job)."""
    if jobs and all(isinstance(v, Mapping) for v in jobs.values()):
        sections = {str(k): dict(v) for k, v in jobs.items()}
    else:
        one = dict(jobs)
        sections = {str(one.pop("name", "iolab")): one}

    def body(opts: Mapping[str, Any]) -> list[str]:
        lines = []
        for key, value in opts.items():
            if value is None:
                continue
            text = _fmt(value)
            lines.append(key if text is None else f"{key}={text}")
        return lines

    out: list[str] = []
    if global_options:
        out += ["[global]", *body(global_options), ""]
    for name, opts in sections.items():
        out += [f"[{name}]", *body(opts), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- running
def fio_binary() -> str:
    """Path of fio, or ToolMissing with the package that provides it."""
    path = shutil.which("fio")
    if not path:
        raise ToolMissing("fio", "fio")
    return path


def fio_version(fio: str | None = None) -> str:
    fio = fio or fio_binary()
    return subprocess.run([fio, "--version"], capture_output=True, text=True,
                          check=False).stdout.strip()


@dataclass
class FioRun:
    """A finished fio invocation: where its output is and what it printed."""
    argv: list[str]
    output_path: Path
    returncode: int
    stdout: str
    stderr: str
    wall_s: float = 0.0
    pid: int | None = None
    extra: dict = field(default_factory=dict)


def fio_argv(jobfile: Path, output_path: Path, fio: str | None = None,
             wrap: list[str] | None = None, readonly: bool = False) -> list[str]:
    """The exact command line iolab runs fio with (json+, so percentiles come from bins),
    optionally under a wrapper such as ``perf record ... --``. ``readonly`` adds fio's
    ``--readonly``: fio then refuses any job that writes or trims."""
    return [*(wrap or []), fio or fio_binary(), "--output-format=json+", f"--output={output_path}",
            *(["--readonly"] if readonly else []), str(jobfile)]


def run_fio(jobfile: Path, output_path: Path, *, fio: str | None = None,
            timeout_s: float | None = None, on_start=None, cwd: Path | None = None,
            cpus: list[int] | None = None, wrap: list[str] | None = None,
            readonly: bool = False) -> FioRun:
    """Run ``fio --output-format=json+ --output=OUTPUT [--readonly] JOBFILE`` with
    ``iolab.process.run_pinned``.

    fio's raw output is left untouched in ``output_path`` (relative paths are relative to
    ``cwd``). Raises FioError carrying fio's message and exit code when fio fails,
    RunInterrupted when it was stopped by a signal or Ctrl-C (its partial output kept).
    """
    done = run_pinned(fio_argv(jobfile, output_path, fio, wrap, readonly), name="fio", cwd=cwd, cpus=cpus,
                      timeout_s=timeout_s, on_start=on_start,
                      kept=f"its partial output, if any, is kept in {output_path}")
    if done.returncode != 0:
        said = _said(_output_errors(Path(cwd or ".") / output_path), done.stderr, done.stdout)
        folder = Path(cwd or ".")  # a run folder .tmp-<id> is renamed <id> when it is finished
        folder = folder.with_name(folder.name.removeprefix(".tmp-"))
        raise FioError(f"fio exited with code {done.returncode}: {'; '.join(said) or '(no message)'}; "
                       f"fix the cause fio names, or the options in the job file {folder / jobfile} "
                       "(see `man fio`)",
                       done.returncode, done.stderr)
    return FioRun(done.argv, Path(cwd or ".") / output_path, done.returncode, done.stdout, done.stderr,
                  done.wall_s, done.pid)


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
    if found is None:
        lines = [line for line in text.splitlines() if line.strip()][:3]
        hint = f" It begins: {' | '.join(lines)}" if lines else " It is empty."
        raise FioOutputError(
            "no fio JSON output found (expected fio's report: an object with 'fio version' and "
            "'jobs' or 'client_stats'); give the file fio wrote with --output-format=json or "
            "json+ (a run folder's fio.json)." + hint)
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
        inside = Path(path) / "fio.json"
        raise FioOutputError(f"{path} is a folder, not fio output; give a file"
                             + (f", e.g. {inside}" if inside.exists() else "")) from None
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
    items = sorted((int(k), int(v)) for k, v in bins.items() if int(v) > 0)
    total = sum(v for _, v in items)
    out: dict[float, float] = {}
    if total == 0:
        return out
    targets = sorted(wanted)
    j, running = 0, 0
    for value, count in items:
        running += count
        while j < len(targets) and running >= targets[j] / 100.0 * total:
            out[targets[j]] = float(value)
            j += 1
        if j == len(targets):
            break
    return out


def merge_bins(*bins: Mapping[str, int]) -> dict[str, int]:
    """Sum json+ histograms (of jobs, hosts or repeats)."""
    out: dict[str, int] = {}
    for b in bins:
        for k, v in b.items():
            out[k] = out.get(k, 0) + int(v)
    return out


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


def _job_rows(job: Mapping[str, Any], index: int, version: str, legacy: bool,
              hostname: str) -> list[dict[str, Any]]:
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
        rows.append({**base, "direction": "none", "iops": 0.0, "bw_bytes_s": 0.0,
                     "io_bytes": 0, "total_ios": 0, "runtime_ms": 0.0})
    return rows


COLUMN_ORDER = [
    "job_index", "job", "groupid", "hostname", "direction", "iops", "bw_bytes_s", "io_bytes",
    "total_ios", "runtime_ms", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99_9_us",
    "lat_mean_us", "usr_cpu_pct", "sys_cpu_pct", "ctx", "error", "fio_version",
]


def tidy(doc: FioDocument | Mapping[str, Any]) -> pd.DataFrame:
    """The tidy table of one fio JSON document (see the module docstring)."""
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
    frame = pd.DataFrame(rows)
    extra = [c for c in frame.columns if c not in COLUMN_ORDER]
    frame = frame.reindex(columns=COLUMN_ORDER + extra)
    return frame


def _is_legacy(job: Mapping[str, Any]) -> bool:
    """fio 2.x (before 2.99): µs latencies under ``clat`` and io_bytes in KiB."""
    for direction in DIRECTIONS:
        d = job.get(direction)
        if isinstance(d, Mapping) and ("clat" in d or "lat" in d) and "clat_ns" not in d:
            return True
    return False


def parse_output(path: str | os.PathLike) -> pd.DataFrame:
    """Any fio JSON / json+ output file (or t/io_uring text, see ``iolab.tio``) -> tidy table."""
    return tidy(load_document(path))


def job_errors(frame: pd.DataFrame) -> list[str]:
    """Human-readable lines for jobs that report a non-zero error (fio's ``error`` is an
    errno: "fio error 30 (Read-only file system)", os.strerror)."""
    bad = frame[frame["error"].fillna(0).astype(int) != 0]
    return [f"job {r.job!r} (index {r.job_index}): fio error {r.error} ({os.strerror(int(r.error))})"
            for r in bad.drop_duplicates("job_index").itertuples()]


# ---------------------------------------------------------------- after a run: errors, warnings
def _said(*texts: Iterable[str] | str) -> list[str]:
    """Non-empty lines of several texts (or lists of lines), each once, in order."""
    out: list[str] = []
    for text in texts:
        for line in (text.splitlines() if isinstance(text, str) else text):
            line = line.strip()
            if line and line not in out:
                out.append(line)
    return out


def _output_errors(path: Path) -> list[str]:
    """Job errors (errno translated) in the fio JSON at ``path``, if it holds one; else []."""
    try:
        return job_errors(tidy(load_document(path)))
    except (OSError, FioOutputError, ValueError, KeyError, TypeError):
        return []


def read_output(path: str | os.PathLike, stderr: str = "", jobfile: str | os.PathLike = "job.fio") -> FioDocument:
    """The report of a fio run that exited 0; FioError with fio's words when it wrote none
    (fio exits 0 after refusing some options, e.g. a size smaller than one block)."""
    try:
        return load_document(path)
    except FioOutputError as exc:
        said = _said(stderr)
        raise FioError(f"fio wrote no report: {'; '.join(said) or exc}; check the fio options "
                       f"(see `man fio`) in the job file {jobfile}", 0, stderr) from None


def raise_for_failure(doc: FioDocument, stderr: str = "", jobfile: str | os.PathLike = "job.fio") -> None:
    """FioError when a run that exited 0 failed: a job reports an error (errno, translated),
    or no job did any I/O — fio aborted, e.g. "appears mounted, and 'allow_mounted_write'
    isn't set. Aborting." with an empty job row. fio's own words are in the message."""
    frame = tidy(doc)
    said = _said(doc.text_before, doc.text_after, stderr)
    errors = job_errors(frame) if len(frame) else []
    if errors:
        raise FioError("fio reported job errors: " + "; ".join(errors + said) +
                       f"; fix the cause or the options in the job file {jobfile}", 0, stderr)
    if not len(frame) or ((frame["total_ios"].fillna(0) == 0).all() and (frame["io_bytes"].fillna(0) == 0).all()):
        raise FioError("fio did no I/O (it aborted the run): " +
                       ("; ".join(said) or "it said nothing and its report has no job that did I/O") +
                       f"; fix what fio says, or the options in the job file {jobfile}", 0, stderr)


def run_warnings(doc: FioDocument, stderr: str = "") -> list[str]:
    """What fio said about a run that worked, plus the clamps iolab sees in its report:
    every line fio printed on stderr or around its JSON, and, for each job that asked for
    ``iodepth`` > 1 but whose ``iodepth_level`` (json) shows every IO submitted at depth 1,
    fio's note "queue depth will be capped at 1" — which fio does not write at all when
    ``--output`` is given (its job process never flushes it)."""
    out = _said(doc.text_before, doc.text_after, stderr)
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
            note = (f"job {job.get('jobname', '')!r}: iodepth={asked} but every IO was submitted at "
                    "depth 1 (fio iodepth_level): queue depth will be capped at 1 (a synchronous "
                    "ioengine such as psync does this)")
            if note not in out:
                out.append(note)
    return out
