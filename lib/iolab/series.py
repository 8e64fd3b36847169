"""fio's interval logs as a time series, on one time axis with the samplers; steady state,
warm-up and stalls read from it.

Asked for with ``measure(..., log_ms=N)`` (``iolab run --log-ms N``, a ``log_ms`` parameter
of the studies and notebooks): fio then writes, per job, into the run folder
(``log_options``)::

    fio_iops.1.log       t_ms, IOPS of the interval, direction (0 read, 1 write, 2 trim), 0, 0
    fio_bw.1.log         t_ms, KiB/s of the interval, ...
    fio_clat.1.log       t_ms, mean completion latency of the interval (ns), ...   (and _lat, _slat)
    fio_clat_hist.1.log  t_ms, direction, bs, then the interval's IO count in each of fio's
                         1856 FIO_IO_U_PLAT latency bins (1856 / 2**c with log_hist_coarseness=c;
                         1216 in fio before 2.99)

``.1`` is fio's job number: 1-based in job-file order, numjobs clones right after their
parent. ``group_reporting`` merges only fio's report, never the logs. In client/server mode
fio's client appends the host (``fio_iops.1.log.HOST``); a host before the prefix
(``HOST_fio_iops.1.log``) or one sub-folder per host is read the same way: the ``host``
column. ``t_ms`` is CLOCK_MONOTONIC (``log_alternate_epoch_clock_id=1``), the sampler's own
clock, so both land on one axis exactly; with a fio without that option the logs count from
each job's start and the offset to the samplers is estimated from fio's report time.

``read_series(run_dir)`` -> ``Series``: ``table`` has one row per interval, job and direction::

    host job_number job direction  t_s  interval_s  ios   iops  bw_bytes_s clat_mean_us clat_p50_us clat_p99_us ...
    ""   1          cli iolab read 0.5  0.501       2937  5872  24051712   83.4         78.3        160.8

``t_s`` is the interval's end in seconds since fio's first job started (on the grid of
``log_ms``); ``ios`` and the percentiles come from the histogram log (fio's
``calc_clat_percentiles`` rule, ``fiojson.percentiles_from_bins``; fio's bin index -> latency
is ``plat_idx_to_val``, stat.h: FIO_IO_U_PLAT_BITS=6, FIO_IO_U_PLAT_VAL=64). fio leaves the
last, partial interval out of its IOPS and histogram logs, so ``coverage`` says how many of
fio's IOs the series accounts for, per host and direction, and ``note()`` says it in words.
fio 3.33's client (client/server mode) writes each histogram line as its interval plus every
second one before it: undone when the result checks out against the IOPS log, else not used.
``samplers`` holds the frequency, /proc/stat (busy, steal, iowait) and thread-state series
of the same run on the same axis.

Reading it: ``find_steady`` (fio's own steadystate result when the job asked for it, else
SNIA's rule — ``analysis.steady_state`` — over a sliding window of intervals), the warm-up
before it, ``find_stalls`` (intervals far below the median, with what the samplers saw then)
and ``summary`` (fio's whole-run figures beside those of the logs and of the steady part).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import fiojson, runfiles
from .atomic import write_json
from .analysis import SNIA_RANGE_PCT, SNIA_SLOPE_PCT, SNIA_WINDOW, steady_state
from .errors import FioOutputError, InputError, RunFileError
from .sampling import BUSY_FIELDS, FREQ_FILE, STAT_FIELDS, STAT_FILE, read_freq, read_stat
from .readable import wrapped_text

META = "series.json"  # written by the runner when logs were asked for
FILES = (META,)  # in a run folder (iolab.producers): the first one there means logs were asked for
THREADS_FILE = "samples_threads.csv"  # the thread-state sampler's series, when it ran
PREFIX = "fio"  # log file prefix inside the run folder: fio_iops.1.log, ...
KINDS = ("clat_hist", "iops", "bw", "clat", "slat", "lat")  # longest first: clat_hist before clat
DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
PLAT_BITS, PLAT_VAL = 6, 64  # fio stat.h FIO_IO_U_PLAT_BITS / FIO_IO_U_PLAT_VAL
GROUPS = (29, 19)  # FIO_IO_U_PLAT_GROUP_NR now (1856 bins) and before fio 2.99 (1216)
PERCENTILES = {"50": 50.0, "99": 99.0, "99_9": 99.9}
STALL_FRACTION = 0.5  # an interval below this share of the run's median IOPS is a stall
RERUN = "re-run it with logs: `iolab run --log-ms 500 ...`, or log_ms=500 in measure(), a study or a notebook"


# ---------------------------------------------------------------- asking fio for the logs
def check_log_ms(log_ms: Any) -> int:
    """``log_ms`` as fio's whole milliseconds (log_avg_msec, log_hist_msec), or InputError."""
    try:
        value = float(log_ms)
    except (TypeError, ValueError):
        raise InputError(f"log_ms={log_ms!r} is not a number of milliseconds; give e.g. 500") from None
    if isinstance(log_ms, bool) or not math.isfinite(value) or value < 1 or value != int(value):
        raise InputError(f"log_ms={log_ms!r}: fio logs whole milliseconds >= 1 (log_avg_msec); give e.g. 500 or 1000")
    return int(value)


@functools.lru_cache(maxsize=None)
def monotonic_epoch_supported(fio: str) -> bool:
    """Whether this fio can stamp its logs with CLOCK_MONOTONIC (log_alternate_epoch and
    log_alternate_epoch_clock_id, fio >= 3.31); asks fio itself (``--cmdhelp``)."""
    for option in ("log_alternate_epoch", "log_alternate_epoch_clock_id"):
        said = subprocess.run([fio, f"--cmdhelp={option}"], capture_output=True, text=True, check=False)
        if f"{option}:" not in said.stdout:
            return False
    return True


def log_options(log_ms: int, fio: str | None = None, prefix: str = PREFIX) -> dict[str, Any]:
    """The fio options that write the interval logs at ``log_ms`` into the run folder (fio's
    working directory): IOPS, bandwidth, latency (averaged per interval) and completion-latency
    histograms, stamped with CLOCK_MONOTONIC when ``fio`` supports it (the samplers' clock)."""
    log_ms = check_log_ms(log_ms)
    opts: dict[str, Any] = {
        "write_iops_log": prefix,
        "write_bw_log": prefix,
        "write_lat_log": prefix,
        "log_avg_msec": log_ms,
        "write_hist_log": prefix,
        "log_hist_msec": log_ms,
    }
    if fio and monotonic_epoch_supported(fio):
        opts.update(log_alternate_epoch=1, log_alternate_epoch_clock_id=1)  # 1: CLOCK_MONOTONIC
    return opts


def job_names(sections: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """fio's job names by job number (index N-1 of the logs' ``.N``): each section of a job
    file in order, repeated ``numjobs`` times (fio numbers clones right after their parent)."""
    names: list[str] = []
    for name, opts in sections.items():
        try:
            clones = int(str(opts.get("numjobs", 1)))
        except ValueError:
            clones = 1
        names += [name] * max(1, clones)
    return names


def record(
    run_dir: str | os.PathLike,
    *,
    log_ms: int,
    options: Mapping[str, Any],
    jobs: Sequence[str],
    sampler_t0: float | None,
    prefix: str = PREFIX,
) -> dict[str, Any]:
    """Write ``series.json``: what the reader needs to put the logs on the samplers' axis —
    the interval, the log prefix, the job names by number, the logs' clock and the sampler's
    start on that clock (``sampling.Sampler.t0``, time.monotonic) and on the wall clock."""
    now_mono, now_unix = time.monotonic(), time.time()
    meta = {
        "log_ms": int(log_ms),
        "prefix": prefix,
        "jobs": list(jobs),
        "time_base": "monotonic" if options.get("log_alternate_epoch_clock_id") == 1 else "job start",
        "sampler_t0_monotonic_s": sampler_t0,
        "sampler_t0_unix_s": None if sampler_t0 is None else now_unix - (now_mono - sampler_t0),
    }
    write_json(Path(run_dir) / META, meta)
    return meta


# ---------------------------------------------------------------- fio's bins
def plat_idx_to_val(idx: int) -> int:
    """fio's ``plat_idx_to_val`` (stat.c): the latency (ns) a histogram bin stands for — its
    index itself below 128, else the middle of its bucket. The same values are json+ ``bins``
    keys, so log bins and report bins can be compared and pooled."""
    if idx < (PLAT_VAL << 1):
        return idx
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return base + int((k + 0.5) * (1 << error_bits))


def bin_edges_ns(idx: int) -> tuple[int, int]:
    """The latency range [low, high) in ns that fio's bin ``idx`` counts."""
    if idx < (PLAT_VAL << 1):
        return idx, idx + 1
    error_bits = (idx >> PLAT_BITS) - 1
    low = (1 << (error_bits + PLAT_BITS)) + (idx % PLAT_VAL) * (1 << error_bits)
    return low, low + (1 << error_bits)


def hist_layout(nbins: int) -> tuple[int, int]:
    """(bin groups, log_hist_coarseness) of a histogram log line with ``nbins`` counts:
    groups*64 / 2**coarseness (fio writes every 2**c bins summed). FioOutputError otherwise."""
    for groups in GROUPS:
        for coarse in range(7):
            if groups * PLAT_VAL == nbins << coarse:
                return groups, coarse
    raise FioOutputError(
        f"a histogram log line with {nbins} bins: fio writes 1856 (or 1216 before fio 2.99) "
        "divided by 2**log_hist_coarseness; is it a fio clat_hist log?"
    )


def bin_values_ns(nbins: int) -> np.ndarray:
    """The latency (ns) each of ``nbins`` histogram-log columns stands for; a coarse column
    (log_hist_coarseness) is fio's bins [g*2**c, (g+1)*2**c) summed, valued at its middle bin."""
    _, coarse = hist_layout(nbins)
    stride = 1 << coarse
    return np.array([plat_idx_to_val(g * stride + stride // 2) for g in range(nbins)], dtype=np.int64)


# ---------------------------------------------------------------- finding and reading the logs
@dataclass(frozen=True)
class LogFile:
    path: Path
    kind: str  # iops, bw, clat, lat, slat, clat_hist
    job_number: int  # fio's N in ``.N.log`` (0: per_job_logs=0, one log for every job)
    host: str  # "" for a local run


def find_logs(run_dir: str | os.PathLike, prefix: str = PREFIX) -> list[LogFile]:
    """The interval logs in ``run_dir`` by name, ``[HOST.]PREFIX_KIND[.N].log[.HOST]`` (or,
    when it holds none, in its sub-folders, each named for its host)."""
    pattern = re.compile(
        rf"^(?:(?P<pre>.+?)[._-])?{re.escape(prefix)}_(?P<kind>{'|'.join(KINDS)})"
        rf"(?:\.(?P<job>\d+))?\.log(?:\.(?P<post>.+))?$"
    )

    def logs_in(folder: Path, folder_host: str) -> list[LogFile]:
        found = []
        for path in sorted(folder.iterdir()):
            m = pattern.match(path.name)
            if m and path.is_file():
                found.append(LogFile(path, m["kind"], int(m["job"] or 0), m["post"] or m["pre"] or folder_host))
        return found

    run_dir = Path(run_dir)
    here = logs_in(run_dir, "")
    if here:
        return here
    return [
        f for d in sorted(run_dir.iterdir()) if d.is_dir() and not (d / "run.json").exists() for f in logs_in(d, d.name)
    ]  # a sub-folder with run.json is a run of its own, not a host


def _numbers(path: Path, min_cols: int) -> pd.DataFrame:
    """The comma-separated numbers of one fio log (no header), or FioOutputError saying why not:
    not numbers, cut mid-line, or a line with fewer than ``min_cols`` of them."""
    if path.stat().st_size == 0:
        return pd.DataFrame()
    try:
        frame = pd.read_csv(path, header=None, skipinitialspace=True, dtype=np.float64)
    except (ValueError, pd.errors.ParserError) as exc:
        first = (path.read_text(errors="replace").splitlines() or [""])[0][:80]
        raise FioOutputError(
            f"{path}: not an fio log (lines of comma-separated numbers: time in ms, value, "
            f"direction, ...); it begins {first!r} ({type(exc).__name__})"
        ) from None
    if frame.shape[1] < min_cols:
        raise FioOutputError(
            f"{path}: {frame.shape[1]} columns per line; fio's logs have at least {min_cols} "
            "(time ms, value, direction, block size[, offset][, priority])"
        )
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        cut = f.read(1) != b"\n"
    short = np.flatnonzero(frame.iloc[:, :min_cols].isna().any(axis=1).to_numpy())
    if cut or len(short):
        where = (
            f"it stops mid-line ({len(frame)} lines)"
            if cut
            else f"line {short[0] + 1} has fewer than {min_cols} numbers"
        )
        raise FioOutputError(
            f"{path}: cut short: {where}; fio writes whole lines (was it stopped while writing? "
            "then its interval logs cannot be read)"
        )
    return frame


def read_log(path: str | os.PathLike) -> pd.DataFrame:
    """One IOPS / bandwidth / latency log: t_ms, value, ddir (fio 2.x-3.x: 4 to 6 columns:
    time, value, direction, block size[, offset][, priority]). Empty when fio wrote nothing."""
    frame = _numbers(Path(path), 3)
    if frame.empty:
        return pd.DataFrame({"t_ms": [], "value": [], "ddir": []})
    return pd.DataFrame({"t_ms": frame[0], "value": frame[1], "ddir": frame[2].astype(int)})


def read_hist(path: str | os.PathLike) -> tuple[pd.DataFrame, np.ndarray]:
    """One histogram log: (t_ms, ddir, bs per line; the counts, lines x bins)."""
    frame = _numbers(Path(path), 4)
    if frame.empty:
        return pd.DataFrame({"t_ms": [], "ddir": [], "bs": []}), np.zeros((0, 1856), dtype=np.int64)
    counts = frame.iloc[:, 3:].to_numpy()
    hist_layout(counts.shape[1])  # FioOutputError for an unknown layout
    if (counts < 0).any() or not np.all(counts == np.round(counts)):
        raise FioOutputError(f"{path}: histogram counts must be whole numbers >= 0")
    return (pd.DataFrame({"t_ms": frame[0], "ddir": frame[1].astype(int), "bs": frame[2]}), counts.astype(np.int64))


# ---------------------------------------------------------------- the series
@dataclass
class Series:
    """A run's interval logs as tidy rows (see the module docstring). ``bins`` holds each
    row's histogram (rows x bins; NaN-free, zeros where the row has none) with ``bin_ns`` the
    latency each column stands for; ``coverage`` one row per host and direction: fio's IOs,
    the series', the uncovered rest; ``samplers`` the sampler series on the same axis
    (``t_s`` = end of the sampler's interval); ``fio_start_s`` where fio's first job started
    on the samplers' clock (seconds since the sampler started); ``steadystate`` fio's own
    steadystate results, one per job that asked for one."""

    run_dir: Path
    log_ms: int
    table: pd.DataFrame
    bins: np.ndarray
    bin_ns: np.ndarray
    coverage: pd.DataFrame
    samplers: pd.DataFrame
    fio_start_s: float
    time_base: str
    fio_version: str = ""
    steadystate: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def totals(self, by_direction: bool = False) -> pd.DataFrame:
        """Per interval (and direction), summed over jobs and hosts: t_s, t_start_s,
        interval_s, ios, iops (fio's IOPS log; IOs / interval where it has no sample),
        bw_bytes_s, and the IO-weighted clat_mean_us."""
        keys = ["t_s", "direction"] if by_direction else ["t_s"]
        t = self.table.assign(
            _w=self.table["clat_mean_us"] * self.table["ios"],
            iops=self.table["iops"].fillna(self.table["ios"] / self.table["interval_s"]),
        )
        out = (
            t.groupby(keys)
            .agg(
                t_start_s=("t_start_s", "min"),
                interval_s=("interval_s", "max"),
                ios=("ios", lambda s: s.sum(min_count=1)),
                iops=("iops", lambda s: s.sum(min_count=1)),
                bw_bytes_s=("bw_bytes_s", lambda s: s.sum(min_count=1)),
                _w=("_w", lambda s: s.sum(min_count=1)),
            )
            .reset_index()
        )
        weight = t.dropna(subset=["_w"]).groupby(keys)["ios"].sum().rename("_n").reset_index()
        out = out.merge(weight, on=keys, how="left")
        out["clat_mean_us"] = out["_w"] / out["_n"]
        return out.drop(columns=["_w", "_n"])

    def pooled_bins(
        self,
        direction: str | None = None,
        t_from: float | None = None,
        t_to: float | None = None,
        host: str | None = None,
    ) -> dict[str, int]:
        """The histogram of the rows chosen (a direction, intervals ending in (t_from, t_to],
        a host), summed — json+ ``bins`` form ({latency ns: IOs}), for
        ``fiojson.percentiles_from_bins`` and ``fiojson.merge_bins``."""
        pick = np.ones(len(self.table), dtype=bool)
        if direction is not None:
            pick &= (self.table["direction"] == direction).to_numpy()
        if t_from is not None:
            pick &= (self.table["t_s"] > t_from + 1e-9).to_numpy()
        if t_to is not None:
            pick &= (self.table["t_s"] <= t_to + 1e-9).to_numpy()
        if host is not None:
            pick &= (self.table["host"] == host).to_numpy()
        summed = self.bins[pick].sum(axis=0)
        return {str(int(v)): int(c) for v, c in zip(self.bin_ns, summed) if c}

    def note(self) -> str:
        """How much of fio's run the series accounts for, in words (never left unsaid)."""
        parts = []
        for r in self.coverage.itertuples():
            where = f"{r.host}: " if r.host else ""
            if r.fio_ios != r.fio_ios:  # NaN: fio's report unreadable
                parts.append(
                    f"{where}{r.direction}: {r.series_ios:,.0f} IOs in {r.intervals} intervals "
                    "(fio's report could not be read to compare)"
                )
                continue
            text = (
                f"{where}{r.direction}: the series accounts for {r.series_ios:,.0f} of fio's {r.fio_ios:,.0f} IOs "
                f"({r.covered_pct:.1f} %) in {r.intervals} intervals of {self.log_ms} ms"
            )
            if r.uncovered_ios > 0:
                text += (
                    f"; the other {r.uncovered_ios:,.0f} completed in the last {r.uncovered_s:.2f} s, "
                    "which fio leaves out of its IOPS and histogram logs"
                )
            parts.append(text + (f" ({r.ios_from})" if r.ios_from != "histogram log" else ""))
        return ". ".join(parts + self.notes) + "."


def read_series(run_dir: str | os.PathLike) -> Series:
    """The interval logs of a run folder as a ``Series`` (module docstring). InputError when
    the run wrote none (with how to re-run it); FioOutputError for a log fio did not write (or
    that is cut short); RunFileError (``iolab.runfiles``) for series.json or a sampler file
    that cannot be read. A fio.json that cannot be read is said in the notes instead."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run folder; give a folder under data/runs")
    meta = read_meta(run_dir)
    notes: list[str] = []
    doc = _report(run_dir, notes)
    prefix = meta.get("prefix") or _prefix_from_report(doc)
    logs = find_logs(run_dir, prefix)
    if not logs:
        runs = [d.name for d in sorted(run_dir.iterdir()) if (d / "run.json").exists()]
        if runs and not (run_dir / "run.json").exists():
            raise InputError(f"{run_dir} is a folder of runs ({len(runs)}, e.g. {runs[0]}): give one run folder")
        what = (
            "it asked for them (series.json) but fio wrote none: did fio stop before its first interval?"
            if meta
            else "it was run without interval logs"
        )
        raise InputError(
            f"{run_dir} holds no fio interval logs ({prefix}_iops.N.log, {prefix}_clat_hist.N.log): {what}; {RERUN}"
        )
    log_ms = int(meta.get("log_ms") or _log_ms_from_report(doc) or _guess_log_ms(logs))
    time_base = meta.get("time_base") or _time_base(doc, logs, log_ms)
    names = meta.get("jobs") or _names_from_report(doc)
    if not any(f.kind == "clat_hist" and f.path.stat().st_size for f in logs):
        notes.append(
            f"no histogram log ({prefix}_clat_hist.N.log): IOs per interval and latency percentiles "
            "need fio's write_hist_log with log_hist_msec (iolab asks for both with log_ms); "
            "IOs per interval are estimated as IOPS x interval"
        )
    groups: dict[tuple[str, int], dict[str, LogFile]] = {}
    for f in logs:
        groups.setdefault((f.host, f.job_number), {})[f.kind] = f
    epochs = {key: _epoch(files, log_ms, time_base) for key, files in groups.items()}
    first = min(epochs.values())
    frames, bin_rows = [], []
    nbins = None
    for (host, job), files in sorted(groups.items()):
        offset_s = round((epochs[(host, job)] - first) / log_ms) * log_ms / 1000.0
        rows, bins = _job_rows(files, epochs[(host, job)], log_ms, offset_s)
        if rows.empty:
            continue
        if nbins is not None and bins.shape[1] != nbins:
            raise FioOutputError(
                f"{run_dir}: histogram logs with {nbins} and {bins.shape[1]} bins per line; "
                "the jobs used different log_hist_coarseness: read one at a time"
            )
        nbins = bins.shape[1]
        rows.insert(0, "job", names[job - 1] if 0 < job <= len(names) else f"job {job}")
        rows.insert(0, "job_number", job)
        rows.insert(0, "host", host)
        frames.append(rows)
        bin_rows.append(bins)
    if not frames:
        raise InputError(
            f"{run_dir}: fio's interval logs are empty — the run ended before its first interval "
            f"of {log_ms} ms; run longer than log_ms, or {RERUN} at a shorter interval"
        )
    table = pd.concat(frames, ignore_index=True)
    bins = np.vstack(bin_rows)
    table, bins = _percentiles(table, bins)
    coverage = _coverage(table, doc, notes)
    table, bins, coverage = _drop_bad_hist(table, bins, coverage, notes, client_server=bool(doc and "jobs" not in doc))
    fio_start_s, how = _fio_start(meta, first, time_base, doc)
    samplers = aligned_samplers(run_dir, fio_start_s)
    if how and not samplers.empty:
        notes.append(how)
    return Series(
        run_dir,
        log_ms,
        table,
        bins,
        bin_values_ns(bins.shape[1]),
        coverage,
        samplers,
        fio_start_s,
        time_base,
        str((doc or {}).get("fio version", "")),
        _fio_steadystate(doc),
        notes,
    )


_META_TYPES = {
    "log_ms": ((int, float), "number"),
    "prefix": (str, "string"),
    "jobs": (list, "list"),
    "time_base": (str, "string"),
    "sampler_t0_monotonic_s": ((int, float), "number"),
    "sampler_t0_unix_s": ((int, float), "number"),
}


def read_meta(run_dir: str | os.PathLike) -> dict[str, Any]:
    """series.json of a run folder ({} without one: logs read by their names alone);
    RunFileError (``iolab.runfiles``) when it cannot be read or a value is not of the type
    the runner wrote (``_META_TYPES``)."""
    path = Path(run_dir) / META
    meta = runfiles.read_json(path, optional=True) or {}
    for key, (kind, word) in _META_TYPES.items():
        value = meta.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise RunFileError(
                path, f"has {key!r} {runfiles.quote(json.dumps(value), 20)} where the runner wrote a {word}"
            )
    return meta


def _report(run_dir: Path, notes: list[str] | None = None) -> dict | None:
    """fio's report of the run (None without one); one that cannot be read is said in
    ``notes`` (when given), naming the file (an interrupted run's report may be cut short),
    and the series is read without it."""
    path = run_dir / fiojson.FILES[0]
    if not path.exists():
        return None
    try:
        return fiojson.run_document(path).data
    except RunFileError as exc:
        if notes is not None:
            notes.append(f"{path.name} {exc.what}: the series is not compared with fio's report")
        return None


def _report_options(doc: dict | None) -> list[Mapping[str, Any]]:
    """The option sets fio's report gives: its global options, then each job's."""
    jobs = (doc or {}).get("jobs") or (doc or {}).get("client_stats") or []
    return [(doc or {}).get("global options") or {}] + [j.get("job options") or {} for j in jobs]


def _prefix_from_report(doc: dict | None) -> str:
    """The log prefix fio's report gives (write_iops_log=..., its file name part), else PREFIX."""
    for opts in _report_options(doc):
        for key in ("write_hist_log", "write_iops_log", "write_bw_log", "write_lat_log"):
            if opts.get(key):
                return Path(str(opts[key])).name
    return PREFIX


def _log_ms_from_report(doc: dict | None) -> int | None:
    """log_avg_msec (else log_hist_msec) as fio's report gives its options."""
    for opts in _report_options(doc):
        for key in ("log_avg_msec", "log_hist_msec"):
            if str(opts.get(key, "")).isdigit() and int(opts[key]) > 0:
                return int(opts[key])
    return None


def _guess_log_ms(logs: list[LogFile]) -> int:
    """The interval of logs without series.json or a report: the median step of an IOPS or
    histogram log's times."""
    for f in logs:
        if f.kind in ("iops", "clat_hist", "bw") and f.path.stat().st_size:
            t = (
                np.unique(read_log(f.path)["t_ms"])
                if f.kind != "clat_hist"
                else np.unique(read_hist(f.path)[0]["t_ms"])
            )
            if len(t) >= 2:
                return int(round(float(np.median(np.diff(t)))))
    raise InputError(
        f"{logs[0].path.parent}: cannot tell the logs' interval (no series.json, no fio report "
        "with log_avg_msec, fewer than 2 samples); " + RERUN
    )


def _time_base(doc: dict | None, logs: list[LogFile], log_ms: int) -> str:
    """The clock of logs without series.json: fio's report says log_alternate_epoch (clock id
    1: "monotonic", else "unix") or log_unix_epoch ("unix"); otherwise stamps that start
    beyond 1000 intervals are some absolute clock ("absolute"), else "job start"."""
    for opts in _report_options(doc):
        if str(opts.get("log_alternate_epoch", "0")) == "1":
            return "monotonic" if str(opts.get("log_alternate_epoch_clock_id", "0")) == "1" else "unix"
        if str(opts.get("log_unix_epoch", "0")) == "1":
            return "unix"
    first = [t.min() for t in _times({f"{f.kind}{i}": f for i, f in enumerate(logs)}) if len(t)]
    return "absolute" if first and min(first) > 1000 * log_ms else "job start"


def _names_from_report(doc: dict | None) -> list[str]:
    """Job names by number from fio's report: right without group_reporting (one entry per
    job); in client/server mode, the first host's entries."""
    if not doc:
        return []
    jobs = doc.get("jobs")
    if jobs is None:
        stats = [j for j in doc.get("client_stats") or [] if j.get("jobname") != "All clients"]
        jobs = [j for j in stats if j.get("hostname") == (stats[0].get("hostname") if stats else None)]
    return [j.get("jobname", "") for j in jobs]


def _times(files: Mapping[str, LogFile]) -> list[np.ndarray]:
    out = []
    for f in files.values():
        if f.path.stat().st_size == 0:
            continue
        frame = read_hist(f.path)[0] if f.kind == "clat_hist" else read_log(f.path)
        out.append(frame["t_ms"].to_numpy())
    return out


def _epoch(files: Mapping[str, LogFile], log_ms: int, time_base: str) -> float:
    """When a job started, in its logs' clock (ms): 0 for logs that count from the job's
    start; for stamps of another clock (CLOCK_MONOTONIC, Unix time), the median of
    ``t - k*log_ms`` over its samples, k the interval each sample closes (fio samples on an
    interval's end, a ms or so late; a line written after a stretch without completions is
    off the grid, and the median ignores it)."""
    times = _times(files)
    if time_base == "job start" or not times:
        return 0.0
    t = np.concatenate(times)
    guess = t.min() - log_ms
    k = np.maximum(1, np.round((t - guess) / log_ms))
    return float(np.floor(np.median(t - k * log_ms)))


def _interval(t_ms: pd.Series, epoch: float, log_ms: int) -> np.ndarray:
    return np.maximum(1, np.round((t_ms.to_numpy() - epoch) / log_ms)).astype(int)


def _job_rows(
    files: Mapping[str, LogFile], epoch: float, log_ms: int, offset_s: float
) -> tuple[pd.DataFrame, np.ndarray]:
    """One job's rows — one per interval k = 1..K of the ``log_ms`` grid and direction:
    t_start_s, t_s, interval_s, ios, iops, bw_bytes_s, clat_mean_us, lat_mean_us — and their
    histograms. A sample belongs to the interval its stamp is nearest the end of.

    fio writes a histogram line when an IO completes after the interval's end, holding every
    IO since its previous line: ``interval_s`` is the time since that previous line (longer
    than ``log_ms`` after a stretch without completions), and an interval without a line
    inside the logged span has ``ios`` 0 (its IOs, if any, are in the next line's count).
    Beyond the last line ``ios`` is NaN: fio left those IOs out of the log."""
    per_kind: dict[str, pd.Series] = {}
    for kind in ("iops", "bw", "clat", "lat"):
        if kind in files:
            frame = read_log(files[kind].path)
            frame["k"] = _interval(frame["t_ms"], epoch, log_ms)
            per_kind[kind] = frame.groupby(["ddir", "k"])["value"].mean()  # one sample per interval; two: their mean
    if "clat_hist" in files:
        hist, counts = read_hist(files["clat_hist"].path)
    else:
        hist, counts = pd.DataFrame({"t_ms": [], "ddir": [], "bs": []}), np.zeros((0, 1856), dtype=np.int64)
    hist = hist.assign(
        k=_interval(hist["t_ms"], epoch, log_ms) if len(hist) else np.zeros(0, dtype=int), pos=np.arange(len(hist))
    )
    iops_dirs = set(per_kind["iops"].index.get_level_values(0)) if "iops" in per_kind else set()
    out, out_bins = [], []
    for ddir in sorted(set(hist["ddir"].astype(int)) | iops_dirs):
        mine = hist[hist["ddir"] == ddir]
        ks = set(mine["k"]) | (set(per_kind["iops"].loc[ddir].index) if ddir in iops_dirs else set())
        last = int(max(ks))
        k = np.arange(1, last + 1)
        dir_bins = np.zeros((last, counts.shape[1]), dtype=np.int64)
        np.add.at(dir_bins, mine["k"].to_numpy() - 1, counts[mine["pos"].to_numpy()])
        stamp = np.full(last, np.nan)
        ends = (mine["t_ms"] - epoch).groupby(mine["k"]).max()
        stamp[ends.index.to_numpy() - 1] = ends.to_numpy()
        previous = np.concatenate([[0.0], pd.Series(stamp).ffill().fillna(0.0).to_numpy()[:-1]])
        interval_s = np.where(np.isnan(stamp), log_ms / 1000.0, (stamp - previous) / 1000.0)
        last_hist = int(mine["k"].max()) if len(mine) else 0
        ios = np.where(k <= last_hist, dir_bins.sum(axis=1), np.nan).astype(float)
        rows = pd.DataFrame(
            {
                "direction": DIRECTIONS.get(int(ddir), str(ddir)),
                "interval": k,
                "t_start_s": offset_s + (k - 1) * log_ms / 1000.0,
                "t_s": offset_s + k * log_ms / 1000.0,
                "interval_s": interval_s,
                "ios": ios,
            }
        )
        for kind, col, scale in (
            ("iops", "iops", 1.0),
            ("bw", "bw_bytes_s", 1024.0),
            ("clat", "clat_mean_us", 1e-3),
            ("lat", "lat_mean_us", 1e-3),
        ):
            values = per_kind.get(kind)
            values = (
                values.loc[ddir]
                if values is not None and ddir in values.index.get_level_values(0)
                else pd.Series(dtype=float)
            )
            rows[col] = values.reindex(k).to_numpy(dtype=float) * scale
        out.append(rows)
        out_bins.append(dir_bins)
    if not out:
        return pd.DataFrame(), np.zeros((0, counts.shape[1]), dtype=np.int64)
    return pd.concat(out, ignore_index=True), np.vstack(out_bins)


def _percentiles(table: pd.DataFrame, bins: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """clat p50/p99/p99.9 of each row from its histogram, by fio's own rule."""
    values = bin_values_ns(bins.shape[1])
    out = {f"clat_p{name}_us": np.full(len(table), np.nan) for name in PERCENTILES}
    for i, row in enumerate(bins):
        for col, v in _row_percentiles(row, values).items():
            out[col][i] = v
    table = table.assign(**out)
    order = [
        "host",
        "job_number",
        "job",
        "direction",
        "interval",
        "t_start_s",
        "t_s",
        "interval_s",
        "ios",
        "iops",
        "bw_bytes_s",
        "clat_mean_us",
        "lat_mean_us",
        *out,
    ]
    return table[order], bins


def _row_percentiles(row: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """clat_p50_us, clat_p99_us, clat_p99_9_us of one histogram row (fio's rule); NaN when empty."""
    nz = np.nonzero(row)[0]
    got = (
        fiojson.percentiles_from_bins({str(int(values[j])): int(row[j]) for j in nz}, PERCENTILES.values())
        if len(nz)
        else {}
    )
    return {f"clat_p{name}_us": got[p] / 1000.0 if p in got else np.nan for name, p in PERCENTILES.items()}


def _coverage(table: pd.DataFrame, doc: dict | None, notes: list[str]) -> pd.DataFrame:
    """Per host and direction: fio's IOs (its report), the series' (histogram log; else
    IOPS x interval, an estimate), the uncovered rest and how long after the last interval."""
    fio = pd.DataFrame()
    if doc is not None:
        fio = fiojson.tidy(doc)
        fio = fio[(fio["direction"].isin(DIRECTIONS.values())) & (fio["job"] != "All clients")]
        fio = fio.assign(host=fio["hostname"].fillna("").astype(str))
    logs_hosts = set(table["host"])
    match_hosts = not len(fio) or logs_hosts <= set(fio["host"])
    if len(fio) and not match_hosts:
        notes.append(
            f"the logs' hosts ({', '.join(sorted(h or 'local' for h in logs_hosts))}) are not those of "
            "fio's report: coverage is per direction over all hosts"
        )
    rows = []
    keys = ["host", "direction"] if match_hosts else ["direction"]
    for key, part in table.groupby(keys):
        key = key if isinstance(key, tuple) else (key,)
        sel = dict(zip(keys, key))
        exact = part["ios"].notna().any()
        series_ios = part["ios"].sum() if exact else (part["iops"] * part["interval_s"]).sum()
        fio_part = fio
        for k, v in sel.items():
            fio_part = fio_part[fio_part[k] == v] if len(fio_part) else fio_part
        fio_ios = float(fio_part["total_ios"].sum()) if len(fio) else math.nan
        runtime_s = float(fio_part["runtime_ms"].max()) / 1000.0 if len(fio_part) else math.nan
        last = part.dropna(subset=["ios"] if exact else ["iops"]).groupby("job_number")["t_s"].max()
        covered_to = float(last.min()) if len(last) else math.nan
        rows.append(
            {
                "host": sel.get("host", ""),
                "direction": sel["direction"],
                "intervals": int(part["interval"].nunique()),
                "fio_ios": fio_ios,
                "series_ios": float(series_ios),
                "uncovered_ios": fio_ios - series_ios,
                "covered_pct": 100 * series_ios / fio_ios if fio_ios else math.nan,
                "runtime_s": runtime_s,
                "covered_s": covered_to,
                "uncovered_s": runtime_s - covered_to if runtime_s == runtime_s else math.nan,
                "ios_from": "histogram log" if exact else "IOPS log x interval (an estimate: no histogram log)",
            }
        )
    return pd.DataFrame(rows)


OVERLAP_RATIO = 1.10  # client/server: a regular interval whose histogram line counts this many times its
# IOPS log's IOs (+10) overlaps the ones before (on a quiet machine the two agree
# within 1 %; on a loaded one their windows drift apart, so it is not checked locally)
UNDONE = "histogram log (client/server overlap undone)"


def _drop_bad_hist(
    table: pd.DataFrame, bins: np.ndarray, coverage: pd.DataFrame, notes: list[str], client_server: bool
) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """A histogram log whose intervals overlap — it counts more IOs than fio's report, or, in
    client/server mode, a regular interval's line counts more than ``OVERLAP_RATIO`` times
    the IOs its IOPS log says. fio 3.33's client writes each line as its interval plus every
    second one before it: that is undone (``_undo_overlap``) when the result checks out
    against the IOPS log; any other overlap, or one that does not check out, is not used for
    IO counts and percentiles, the IOs estimated from the IOPS log instead. Said in the notes."""
    log_s = float(np.median(table["interval_s"])) if len(table) else 0.0
    values = bin_values_ns(bins.shape[1])
    for i, r in coverage[coverage["ios_from"] == "histogram log"].iterrows():
        where = (
            (table["direction"] == r["direction"]) & ((table["host"] == r["host"]) if r["host"] else True)
        ).to_numpy()
        part = table[where]
        regular = _regular(part, log_s)
        expected = regular["iops"] * regular["interval_s"]
        over_report = r["uncovered_ios"] < 0
        over_iops = client_server and bool((regular["ios"] > OVERLAP_RATIO * expected + 10).any())
        if not (over_report or over_iops):
            continue
        who = f"{r['host'] + ': ' if r['host'] else ''}{r['direction']}: fio's histogram log counts {r['series_ios']:,.0f} IOs"
        undone = _undo_overlap(part, bins, log_s) if client_server else None
        if undone is not None and undone.sum() <= r["fio_ios"]:
            bins[part.index] = undone
            table.loc[part.index, "ios"] = undone.sum(axis=1).astype(float)
            for j, row in zip(part.index, undone):
                for col, v in _row_percentiles(row, values).items():
                    table.loc[j, col] = v
            got = float(undone.sum())
            coverage.loc[i, ["series_ios", "uncovered_ios", "covered_pct", "ios_from"]] = [
                got,
                r["fio_ios"] - got,
                100 * got / r["fio_ios"] if r["fio_ios"] else np.nan,
                UNDONE,
            ]
            notes.append(
                f"{who}: each line is its interval plus every second one before it (fio's client/server "
                "mode writes them so); undone by subtracting the line two before — checked: no bin below "
                "zero, every interval's IOs within 5 % of its IOPS log"
            )
            continue
        than = (
            "more than the {:,.0f} of its report".format(r["fio_ios"])
            if over_report
            else "and an interval's line up to {:.2f} times what its IOPS log says for it".format(
                float((regular["ios"] / expected.where(expected > 0)).max())
            )
        )
        notes.append(
            f"{who}, {than} — its intervals overlap: its IO counts and percentiles are not used, IOs "
            "per interval are estimated as IOPS x interval"
        )
        table.loc[where, ["ios", *[f"clat_p{p}_us" for p in PERCENTILES]]] = np.nan
        bins[where] = 0
        from_iops = float((part["iops"] * part["interval_s"]).sum())
        coverage.loc[i, ["series_ios", "uncovered_ios", "covered_pct", "ios_from"]] = [
            from_iops,
            r["fio_ios"] - from_iops,
            100 * from_iops / r["fio_ios"] if r["fio_ios"] else np.nan,
            "IOPS log x interval (an estimate: histogram log unusable)",
        ]
    return table, bins, coverage


def _regular(part: pd.DataFrame, log_s: float) -> pd.DataFrame:
    """Rows of one interval's length with both an IOPS sample and a histogram line."""
    return part[(abs(part["interval_s"] - log_s) < 0.1 * log_s) & part["iops"].notna() & part["ios"].notna()]


def _undo_overlap(part: pd.DataFrame, bins: np.ndarray, log_s: float) -> np.ndarray | None:
    """Each interval's own histogram from client/server lines L_i = D_i + D_(i-2) + D_(i-4) + ...:
    D_i = L_i - L_(i-2), per job, for the rows of ``part`` in its order. None unless every
    interval up to the last line has a line, no bin goes below zero and every regular
    interval's IOs are within 5 % (+10) of what its IOPS log says."""
    out = bins[part.index].copy()
    position = {label: n for n, label in enumerate(part.index)}
    for _, rows in part.groupby("job_number"):
        lines = rows[rows["ios"].notna()].sort_values("interval")
        if (lines["ios"] == 0).any() or list(lines["interval"]) != list(range(1, len(lines) + 1)):
            return None
        at = [position[label] for label in lines.index]
        raw = bins[lines.index]
        own = raw.copy()
        own[2:] -= raw[:-2]
        if (own < 0).any():
            return None
        out[at] = own
        check = _regular(lines.assign(ios=own.sum(axis=1)), log_s)
        expected = check["iops"] * check["interval_s"]
        if (abs(check["ios"] - expected) > 0.05 * expected + 10).any():
            return None
    return out


def _fio_start(meta: Mapping[str, Any], first_epoch_ms: float, time_base: str, doc: dict | None) -> tuple[float, str]:
    """Where fio's first job started on the samplers' axis (seconds since the sampler
    started), and how that was found when it is not exact ('' when exact)."""
    t0, t0_unix = meta.get("sampler_t0_monotonic_s"), meta.get("sampler_t0_unix_s")
    if time_base == "monotonic" and t0 is not None:
        return first_epoch_ms / 1000.0 - float(t0), ""
    if time_base == "unix" and t0_unix is not None:
        return first_epoch_ms / 1000.0 - float(t0_unix), ""
    jobs = (doc or {}).get("jobs") or (doc or {}).get("client_stats") or []
    runtime = (
        max(
            [
                float(j.get(d, {}).get("runtime", 0))
                for j in jobs
                for d in DIRECTIONS.values()
                if isinstance(j.get(d), dict)
            ]
            or [0.0]
        )
        / 1000.0
    )
    if t0_unix is not None and doc and doc.get("timestamp_ms"):
        start = float(doc["timestamp_ms"]) / 1000.0 - runtime - float(t0_unix)
        return start, (
            f"fio's start on the samplers' axis is estimated ({start:.2f} s after they started) from "
            "its report's time minus its runtime: this fio cannot stamp logs with CLOCK_MONOTONIC"
        )
    return 0.0, (
        "fio's start on the samplers' axis is unknown (no series.json): the samplers are drawn as if "
        "fio started with them"
    )


def _fio_steadystate(doc: dict | None) -> list[dict]:
    """fio's own steadystate results (jobs with ss=...): job, criterion, attained, duration_s."""
    out = []
    for j in (doc or {}).get("jobs") or (doc or {}).get("client_stats") or []:
        ss = j.get("steadystate")
        if isinstance(ss, dict):
            runtime = max(
                float(j.get(d, {}).get("runtime", 0)) for d in DIRECTIONS.values() if isinstance(j.get(d), dict)
            )
            out.append(
                {
                    "job": j.get("jobname", ""),
                    "ss": ss.get("ss", ""),
                    "attained": bool(ss.get("attained")),
                    "criterion": ss.get("criterion", ""),
                    "duration_s": float(ss.get("duration", 0)),
                    "runtime_s": runtime / 1000.0,
                }
            )
    return out


# ---------------------------------------------------------------- the samplers on fio's axis
def aligned_samplers(run_dir: str | os.PathLike, fio_start_s: float = 0.0) -> pd.DataFrame:
    """The sampler series of a run on fio's axis (seconds since fio's first job started):
    one row per sampler interval (t_start_s, t_s = its end) with the pinned CPUs' busy,
    steal and iowait shares (%), the machine's steal and busy (%), the mean frequency (MHz)
    and its source, and the thread-state sampler's series when it ran (``threads_<state>``:
    threads in that state per tick). Empty when the run has no sampler series."""
    run_dir = Path(run_dir)
    if not (run_dir / STAT_FILE).exists():
        return pd.DataFrame()
    stat = read_stat(run_dir).sort_values(["cpu", "t_s"])
    rows = []
    for t, part in stat.groupby("t_s"):
        rows.append(
            {
                "t_s": t,
                **{f: part[f].sum() for f in STAT_FIELDS},
                **{f"host_{f}": part[f"host_{f}"].iloc[0] for f in STAT_FIELDS if f"host_{f}" in part},
            }
        )
    per_t = pd.DataFrame(rows).sort_values("t_s")
    d = per_t.diff().iloc[1:]
    total = d[list(STAT_FIELDS)].sum(axis=1).replace(0, np.nan)
    out = pd.DataFrame(
        {
            "t_start_s": per_t["t_s"].iloc[:-1].to_numpy() - fio_start_s,
            "t_s": per_t["t_s"].iloc[1:].to_numpy() - fio_start_s,
            "cpu_busy_pct": (100 * d[list(BUSY_FIELDS)].sum(axis=1) / total).to_numpy(),
            "cpu_steal_pct": (100 * d["steal"] / total).to_numpy(),
            "cpu_iowait_pct": (100 * d["iowait"] / total).to_numpy(),
        }
    )
    if "host_steal" in per_t:
        htotal = d[[f"host_{f}" for f in STAT_FIELDS]].sum(axis=1).replace(0, np.nan)
        out["host_steal_pct"] = (100 * d["host_steal"] / htotal).to_numpy()
        out["host_busy_pct"] = (100 * d[[f"host_{f}" for f in BUSY_FIELDS]].sum(axis=1) / htotal).to_numpy()
    if (run_dir / FREQ_FILE).exists():
        freq = read_freq(run_dir)
        if len(freq):
            mean = freq.groupby("t_s")["freq_mhz"].mean()
            out["cpu_freq_mhz"] = mean.reindex(per_t["t_s"].iloc[1:].to_numpy()).to_numpy()
            out["freq_source"] = str(freq["freq_source"].iloc[0])
    threads = _threads(run_dir, out["t_start_s"].to_numpy() + fio_start_s, out["t_s"].to_numpy() + fio_start_s)
    return pd.concat([out, threads], axis=1) if len(threads) else out


def _threads(run_dir: Path, starts: np.ndarray, ends: np.ndarray) -> pd.DataFrame:
    """The thread-state sampler's series (``samples_threads.csv`` of ``iolab.threads``: one
    row per active thread per tick, ``t_s`` on its own clock, started with the samplers) per
    sampler interval: the mean number of threads in each state per tick (``threads_R``,
    ``threads_D``, ...), over all processes (seed 001's readahead workers were kernel
    threads). Empty when it did not run; RunFileError (``iolab.runfiles``) when its files
    cannot be read."""
    path = run_dir / THREADS_FILE
    if not path.exists() or not len(starts):
        return pd.DataFrame()
    frame = runfiles.read_csv(path, usecols=["t_s", "state"], numeric=("t_s",))
    meta = runfiles.read_json(run_dir / "threads.json", optional=True) or {}
    with runfiles.guard(run_dir / "threads.json"):
        interval_s = float(meta.get("interval_s") or 0)
    tick_s = interval_s or (float(np.median(np.diff(np.unique(frame["t_s"])))) if frame["t_s"].nunique() > 1 else 0.0)
    if not tick_s:
        return pd.DataFrame()
    out = {}
    for state in sorted(frame["state"].dropna().unique()):
        t = np.sort(frame.loc[frame["state"] == state, "t_s"].to_numpy())
        n = np.searchsorted(t, ends, side="right") - np.searchsorted(t, starts, side="right")
        out[f"threads_{state}"] = n / np.maximum(1.0, (ends - starts) / tick_s)
    return pd.DataFrame(out)


# ---------------------------------------------------------------- reading it
@dataclass
class Steady:
    """Where a run is in steady state: ``method`` ("fio steadystate" or "SNIA rule"),
    ``reached``, ``from_s`` (start of the steady part, seconds since fio started; the
    warm-up is ``warmup_s`` = from_s), and the figures that decided it in words."""

    method: str
    reached: bool
    from_s: float | None
    text: str

    @property
    def warmup_s(self) -> float | None:
        return self.from_s


def find_steady(
    series: Series, window: int = SNIA_WINDOW, range_pct: float = SNIA_RANGE_PCT, slope_pct: float = SNIA_SLOPE_PCT
) -> Steady:
    """fio's own steadystate result when the job asked for one (``ss=``; fio ends the job when
    it holds, so the steady part is its last ``ss_dur``); else SNIA's rule
    (``analysis.steady_state``) on the total IOPS of each ``window`` consecutive intervals,
    the first window that holds starting the steady part."""
    if series.steadystate:
        ss = series.steadystate
        if all(s["attained"] for s in ss):
            start = max(s["runtime_s"] - s["duration_s"] for s in ss)
            return Steady(
                "fio steadystate",
                True,
                max(0.0, start),
                "; ".join(
                    f"{s['job']}: fio's steadystate {s['ss']} attained over the last "
                    f"{s['duration_s']:g} s (criterion {s['criterion']})"
                    for s in ss
                ),
            )
        return Steady(
            "fio steadystate",
            False,
            None,
            "; ".join(
                f"{s['job']}: fio's steadystate {s['ss']} "
                f"{'attained' if s['attained'] else 'NOT attained'} (criterion {s['criterion']})"
                for s in ss
            ),
        )
    tot = series.totals()
    iops = _iops_of(tot)
    unit = f"intervals of {series.log_ms / 1000:g} s"
    name = (
        f"SNIA rule over {window} {unit} (range <= {range_pct:g} %, linear-fit excursion <= "
        f"{slope_pct:g} % of the mean)"
    )
    if len(iops) < window:
        return Steady("SNIA rule", False, None, f"{name}: only {len(iops)} intervals, fewer than its window")
    last_why = ""
    for i in range(len(iops) - window + 1):
        ok, why = steady_state(iops[i : i + window], window, range_pct, slope_pct, unit=unit)
        if ok:
            start = float(tot["t_start_s"].iloc[i])
            return Steady(
                "SNIA rule", True, start, f"{name}: holds from {start:g} s ({why.replace('last', 'the')} from there)"
            )
        last_why = why
    return Steady("SNIA rule", False, None, f"{name}: no window holds (the final one: {last_why})")


def _iops_of(tot: pd.DataFrame) -> np.ndarray:
    """Total IOPS per interval: fio's IOPS log, else IOs / interval."""
    iops = tot["iops"] if tot["iops"].notna().all() else tot["ios"] / tot["interval_s"]
    return iops.to_numpy(dtype=float)


def find_stalls(series: Series, fraction: float = STALL_FRACTION) -> pd.DataFrame:
    """Stretches of intervals whose total IOPS is below ``fraction`` of the run's median:
    t_start_s, t_s (end), intervals, iops_min, pct_of_median, and the mean over the
    overlapping sampler intervals of steal, busy and iowait on the pinned CPUs, the
    machine's steal and the frequency, with the run's medians of each beside them
    (``*_run_median``) — what the samplers saw then."""
    if not 0 < fraction < 1:
        raise InputError(
            f"fraction={fraction!r}: a stall is below a share of the median IOPS, between 0 and 1 (e.g. 0.5)"
        )
    tot = series.totals()
    iops = _iops_of(tot)
    median = float(np.nanmedian(iops)) if len(iops) else math.nan
    low = iops < fraction * median
    stalls = []
    i = 0
    while i < len(iops):
        if not low[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(iops) and low[j + 1]:
            j += 1
        row = {
            "t_start_s": float(tot["t_start_s"].iloc[i]),
            "t_s": float(tot["t_s"].iloc[j]),
            "intervals": j - i + 1,
            "iops_min": float(np.nanmin(iops[i : j + 1])),
            "pct_of_median": 100 * float(np.nanmin(iops[i : j + 1])) / median,
        }
        row.update(_samplers_during(series.samplers, row["t_start_s"], row["t_s"]))
        stalls.append(row)
        i = j + 1
    cols = ["t_start_s", "t_s", "intervals", "iops_min", "pct_of_median"]
    return pd.DataFrame(stalls, columns=cols if not stalls else None)


SAMPLED = ("cpu_steal_pct", "cpu_busy_pct", "cpu_iowait_pct", "host_steal_pct", "cpu_freq_mhz")


def _samplers_during(samplers: pd.DataFrame, t0: float, t1: float) -> dict[str, float]:
    if samplers.empty:
        return {}
    over = samplers[(samplers["t_s"] > t0) & (samplers["t_start_s"] < t1)]
    out = {}
    for col in SAMPLED:
        if col in samplers:
            out[col] = float(over[col].mean()) if len(over) else math.nan
            out[f"{col}_run_median"] = float(samplers[col].median())
    return out


def summary(series: Series, steady: Steady | None = None) -> pd.DataFrame:
    """The run's figures per direction, three ways: fio's report (the whole run), the logs'
    covered intervals, and the logs' steady part (from ``steady.from_s``): ios, seconds,
    iops, clat_mean_us (IO-weighted) and clat p50/p99/p99.9 (pooled bins, fio's rule)."""
    rows = []
    doc = _report(series.run_dir)
    if doc is not None:
        fio = fiojson.tidy(doc)
        fio = fio[fio["direction"].isin(DIRECTIONS.values()) & (fio["job"] != "All clients")]
        for direction, part in fio.groupby("direction", sort=False):
            jobs = [j for j in doc.get("jobs") or doc.get("client_stats") or [] if j.get("jobname") != "All clients"]
            bins = fiojson.merge_bins(
                *[
                    b
                    for j in jobs
                    if isinstance(j.get(direction), dict)
                    for b in [fiojson.latency_bins(j[direction], "clat")]
                    if b
                ]
            )
            ios = float(part["total_ios"].sum())
            rows.append(
                {
                    "part": "fio report (whole run)",
                    "direction": direction,
                    "ios": ios,
                    "seconds": float(part["runtime_ms"].max()) / 1000.0,
                    "iops": float(part["iops"].sum()),
                    "clat_mean_us": float((part["clat_mean_us"] * part["total_ios"]).sum() / ios) if ios else math.nan,
                    **_pcts(bins),
                }
            )
    parts = [("logs (covered intervals)", None)]
    if steady is not None and steady.reached and steady.from_s is not None:
        parts.append((f"logs, steady state (from {steady.from_s:g} s, {steady.method})", steady.from_s))
    for name, t_from in parts:
        for direction in series.table["direction"].unique():
            pick = (series.table["direction"] == direction) & (
                series.table["t_s"] > (t_from if t_from is not None else -1) + 1e-9
            )
            part = series.table[pick]
            if part.empty:
                continue
            seconds = float(part["t_s"].max() - part["t_start_s"].min())
            ios = float(part["ios"].sum()) if part["ios"].notna().any() else math.nan
            w = part.dropna(subset=["clat_mean_us", "ios"])
            tot = series.totals(by_direction=True)
            tot = tot[(tot["direction"] == direction) & (tot["t_s"] > (t_from if t_from is not None else -1) + 1e-9)]
            rows.append(
                {
                    "part": name,
                    "direction": direction,
                    "ios": ios,
                    "seconds": seconds,
                    "iops": ios / seconds if ios == ios and seconds else float(tot["iops"].mean()),
                    "clat_mean_us": float((w["clat_mean_us"] * w["ios"]).sum() / w["ios"].sum())
                    if w["ios"].sum()
                    else math.nan,
                    **_pcts(series.pooled_bins(direction, t_from=t_from)),
                }
            )
    return pd.DataFrame(rows)


def _pcts(bins: Mapping[str, int] | None) -> dict[str, float]:
    got = fiojson.percentiles_from_bins(bins, PERCENTILES.values()) if bins else {}
    return {f"clat_p{name}_us": got[p] / 1000.0 if p in got else math.nan for name, p in PERCENTILES.items()}


@dataclass
class Heatmap:
    """``heatmap``'s grid: ``counts[latency bucket, interval]`` (IOs), ``t_edges`` (s) and
    ``lat_edges_us`` (µs); ``below``: IOs faster than the lowest row drawn (left out so a
    handful of outliers do not stretch the axis; said under the picture)."""

    t_edges: np.ndarray
    lat_edges_us: np.ndarray
    counts: np.ndarray
    below: int
    total: int


def heatmap(series: Series, direction: str | None = None, per_doubling: int = 4, low_pct: float = 0.01) -> Heatmap:
    """A latency heatmap of the histogram log, summed over jobs and hosts (and directions
    unless one is named). fio's bins are regrouped into ``per_doubling`` buckets per doubling
    of latency (fio's own are 64 per doubling), so the picture's rows are even on a log axis.
    The rows start at the bucket holding the run's ``low_pct`` % quantile (the IOs below it
    are counted in ``below``); every slower IO is drawn."""
    t = series.table
    pick = np.ones(len(t), dtype=bool) if direction is None else (t["direction"] == direction).to_numpy()
    if not series.bins[pick].any():
        raise InputError(
            f"{series.run_dir}: no histogram-log IOs{' for ' + direction if direction else ''} to draw "
            "(the run needs fio's write_hist_log: iolab asks for it with log_ms)"
        )
    times = np.sort(t.loc[pick, "t_s"].unique())
    col = np.searchsorted(times, t.loc[pick, "t_s"].to_numpy())
    lows = (
        np.array([bin_edges_ns(i)[0] for i in range(len(series.bin_ns))])
        if len(series.bin_ns) == 1856
        else series.bin_ns
    )
    bucket = np.floor(np.log2(np.maximum(lows, 1)) * per_doubling).astype(int)
    per_bin = series.bins[pick].sum(axis=0)
    used = np.nonzero(per_bin)[0]
    order = np.argsort(bucket[used], kind="stable")
    cum = np.cumsum(per_bin[used][order])
    lo = int(bucket[used][order][np.searchsorted(cum, low_pct / 100.0 * cum[-1])])
    hi = int(bucket[used].max())
    grid = np.zeros((hi - lo + 1, len(times)))
    for row, c in zip(series.bins[pick], col):
        nz = np.nonzero(row)[0]
        nz = nz[bucket[nz] >= lo]
        np.add.at(grid, (bucket[nz] - lo, np.full(len(nz), c)), row[nz])
    starts = t.loc[pick].groupby("t_s")["t_start_s"].min().reindex(times).to_numpy()
    t_edges = np.concatenate([[starts[0]], times])
    lat_edges_us = 2.0 ** (np.arange(lo, hi + 2) / per_doubling) / 1000.0
    return Heatmap(t_edges, lat_edges_us, grid, int(per_bin[bucket < lo].sum()), int(cum[-1]))


@wrapped_text
def reading(series: Series, steady: Steady, stalls: pd.DataFrame) -> str:
    """What the run looks like over time, in words: steady state and warm-up, stalls and
    what the samplers saw during them, how much of fio's run the series covers."""
    tot = series.totals()
    iops = _iops_of(tot)
    parts = [
        f"{len(tot)} intervals of {series.log_ms} ms; total IOPS per interval: median {np.nanmedian(iops):,.0f}, "
        f"min {np.nanmin(iops):,.0f}, max {np.nanmax(iops):,.0f} (max/min {np.nanmax(iops) / max(np.nanmin(iops), 1e-9):.1f}x)."
    ]
    if steady.reached:
        parts.append(
            f"Steady state ({steady.method}) from {steady.from_s:g} s: a warm-up of {steady.warmup_s:g} s. {steady.text}."
        )
    else:
        parts.append(f"No steady state ({steady.method}): {steady.text}.")
    if len(stalls):
        said = []
        for s in stalls.itertuples():
            seen = []
            if "cpu_steal_pct" in stalls and s.cpu_steal_pct == s.cpu_steal_pct:
                seen.append(f"steal {s.cpu_steal_pct:.0f} % (run median {s.cpu_steal_pct_run_median:.0f} %)")
            if "cpu_busy_pct" in stalls and s.cpu_busy_pct == s.cpu_busy_pct:
                seen.append(f"busy {s.cpu_busy_pct:.0f} % (median {s.cpu_busy_pct_run_median:.0f} %)")
            if "cpu_iowait_pct" in stalls and s.cpu_iowait_pct == s.cpu_iowait_pct:
                seen.append(f"iowait {s.cpu_iowait_pct:.0f} % (median {s.cpu_iowait_pct_run_median:.0f} %)")
            said.append(
                f"{s.t_start_s:g}-{s.t_s:g} s (down to {s.iops_min:,.0f} IOPS, {s.pct_of_median:.0f} % of the median"
                + (f"; the samplers saw {', '.join(seen)}" if seen else "")
                + ")"
            )
        parts.append(
            f"{len(stalls)} stall{'s' if len(stalls) > 1 else ''} below {100 * STALL_FRACTION:g} % of the median: "
            + "; ".join(said)
            + "."
        )
    else:
        parts.append(f"No stall: no interval below {100 * STALL_FRACTION:g} % of the median IOPS.")
    if not series.samplers.empty and "cpu_steal_pct" in series.samplers:
        s = series.samplers
        parts.append(
            f"Steal on the pinned CPUs: median {s['cpu_steal_pct'].median():.0f} %, max "
            f"{s['cpu_steal_pct'].max():.0f} %"
            + (f" (at {s.loc[s['cpu_steal_pct'].idxmax(), 't_s']:.1f} s)" if s["cpu_steal_pct"].max() > 0 else "")
            + "."
        )
    parts.append(series.note())
    return " ".join(parts)


def run_columns(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The per-run columns of a run with interval logs (``iolab.producers``): log_ms,
    series_intervals, series_ios_covered_pct, steady_from_s (NaN: not reached), stalls, and
    series_note (why the series could not be read, '' when it could)."""
    nan = math.nan
    try:
        s = read_series(run_dir)
    except (InputError, FioOutputError, OSError, ValueError) as exc:
        meta = read_meta(run_dir)
        return {
            "log_ms": meta.get("log_ms", nan),
            "series_intervals": 0,
            "series_ios_covered_pct": nan,
            "steady_from_s": nan,
            "stalls": nan,
            "series_note": str(exc),
        }
    steady = find_steady(s)
    cov = s.coverage
    covered = 100 * cov["series_ios"].sum() / cov["fio_ios"].sum() if cov["fio_ios"].sum() else nan
    return {
        "log_ms": s.log_ms,
        "series_intervals": int(s.table["interval"].max()),
        "series_ios_covered_pct": float(covered),
        "steady_from_s": steady.from_s if steady.reached else nan,
        "stalls": len(find_stalls(s)),
        "series_note": "",
    }
