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
SNIA's rule — ``steady_state.steady_state`` — over a sliding window of intervals), the warm-up
before it, ``find_stalls`` (intervals far below the median, with what the samplers saw then)
and ``summary`` (fio's whole-run figures beside those of the logs and of the steady part).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core import runfiles
from ..core.errors import FioOutputError, InputError, RunFileError
from ..core.runfiles import SERIES_JSON
from ..core.runfolders import is_run, runs_in
from . import fiojson
from .fiologs import (
    DIRECTIONS,
    PERCENTILES,
    PREFIX,
    LogFile,
    bin_values_ns,
    drop_bad_hist,
    find_logs,
    read_hist,
    read_log,
    row_percentiles,
)
from .samples import aligned_samplers

META = SERIES_JSON  # written by the runner when logs were asked for
FILES = (META,)  # in a run folder (iolab.runs.producers): the first one there means logs were asked for
RERUN = "re-run it with logs: `iolab run --log-ms 500 ...`, or log_ms=500 in measure(), a study or a notebook"


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
        bw_bytes_s, and the IO-weighted clat_mean_us. The sums are pandas' grouped ones
        (compensated: a fraction may differ in its last bit from a plain running sum)."""
        keys = ["t_s", "direction"] if by_direction else ["t_s"]
        t = self.table.assign(
            _w=self.table["clat_mean_us"] * self.table["ios"],
            iops=self.table["iops"].fillna(self.table["ios"] / self.table["interval_s"]),
        )
        t["_n"] = t["ios"].where(t["_w"].notna())  # the IOs the weighted mean is over
        groups = t.groupby(keys)
        out = pd.concat(
            [
                groups["t_start_s"].min(),
                groups["interval_s"].max(),
                groups[["ios", "iops", "bw_bytes_s", "_w", "_n"]].sum(min_count=1),  # all NaN: NaN, not 0
            ],
            axis=1,
        ).reset_index()
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


def read_series(run_dir: str | os.PathLike, with_samplers: bool = True) -> Series:
    """The interval logs of a run folder as a ``Series`` (module docstring). InputError when
    the run wrote none (with how to re-run it); FioOutputError for a log fio did not write (or
    that is cut short); RunFileError (``iolab.core.runfiles``) for series.json or a sampler file
    that cannot be read. A fio.json that cannot be read is said in the notes instead.
    ``with_samplers=False`` leaves the sampler series out (``samplers`` empty, their files
    not read): for what needs only the logs, such as a table's per-run columns."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run folder; give a folder under data/runs")
    meta = read_meta(run_dir)
    notes: list[str] = []
    doc = fio_report(run_dir, notes)
    prefix = meta.get("prefix") or _prefix_from_report(doc)
    logs = find_logs(run_dir, prefix)
    if not logs:
        runs = [d.name for d in runs_in(run_dir)]
        if runs and not is_run(run_dir):
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
    groups: dict[tuple[str, int], dict[str, LogFile]] = {}
    for f in logs:
        groups.setdefault((f.host, f.job_number), {})[f.kind] = f
    read = {key: _read_logs(files) for key, files in groups.items()}
    time_base = meta.get("time_base") or _time_base(doc, read, log_ms)
    names = meta.get("jobs") or _names_from_report(doc)
    if not any(f.kind == "clat_hist" and f.path.stat().st_size for f in logs):
        notes.append(
            f"no histogram log ({prefix}_clat_hist.N.log): IOs per interval and latency percentiles "
            "need fio's write_hist_log with log_hist_msec (iolab asks for both with log_ms); "
            "IOs per interval are estimated as IOPS x interval"
        )
    epochs = {key: _epoch(job_logs, log_ms, time_base) for key, job_logs in read.items()}
    first = min(epochs.values())
    frames, bin_rows = [], []
    nbins = None
    for host, job in sorted(groups):
        offset_s = round((epochs[(host, job)] - first) / log_ms) * log_ms / 1000.0
        rows, bins = _job_rows(read.pop((host, job)), epochs[(host, job)], log_ms, offset_s)  # freed as used
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
    table, bins, coverage = drop_bad_hist(table, bins, coverage, notes, client_server=bool(doc and "jobs" not in doc))
    fio_start_s, how = _fio_start(meta, first, time_base, doc)
    samplers = aligned_samplers(run_dir, fio_start_s) if with_samplers else pd.DataFrame()
    if how and not samplers.empty:
        notes.append(how)
    return Series(
        run_dir,
        log_ms,
        table,
        bins,
        bin_values_ns(bins.shape[1]).copy(),  # the Series' own: a caller may scale it in place
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
    RunFileError (``iolab.core.runfiles``) when it cannot be read or a value is not of the type
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


def fio_report(run_dir: Path, notes: list[str] | None = None) -> dict | None:
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


def _time_base(doc: dict | None, read: Mapping[Any, Mapping[str, Any]], log_ms: int) -> str:
    """The clock of logs without series.json: fio's report says log_alternate_epoch (clock id
    1: "monotonic", else "unix") or log_unix_epoch ("unix"); otherwise stamps that start
    beyond 1000 intervals are some absolute clock ("absolute"), else "job start"."""
    for opts in _report_options(doc):
        if str(opts.get("log_alternate_epoch", "0")) == "1":
            return "monotonic" if str(opts.get("log_alternate_epoch_clock_id", "0")) == "1" else "unix"
        if str(opts.get("log_unix_epoch", "0")) == "1":
            return "unix"
    first = [t.min() for job_logs in read.values() for t in _times(job_logs) if len(t)]
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


def _read_logs(files: Mapping[str, LogFile]) -> dict[str, Any]:
    """One job's logs, read for both the clock (``_epoch``, ``_time_base``) and the rows
    (``_job_rows``): kind -> ``read_log``'s frame, or for ``clat_hist`` ``read_hist``'s
    (frame, counts). Empty files are left out."""
    return {
        kind: read_hist(f.path) if kind == "clat_hist" else read_log(f.path)
        for kind, f in files.items()
        if f.path.stat().st_size
    }


def _times(logs: Mapping[str, Any]) -> list[np.ndarray]:
    return [(got[0] if kind == "clat_hist" else got)["t_ms"].to_numpy() for kind, got in logs.items()]


def _epoch(logs: Mapping[str, Any], log_ms: int, time_base: str) -> float:
    """When a job started, in its logs' clock (ms): 0 for logs that count from the job's
    start; for stamps of another clock (CLOCK_MONOTONIC, Unix time), the median of
    ``t - k*log_ms`` over its samples, k the interval each sample closes (fio samples on an
    interval's end, a ms or so late; a line written after a stretch without completions is
    off the grid, and the median ignores it)."""
    times = _times(logs)
    if time_base == "job start" or not times:
        return 0.0
    t = np.concatenate(times)
    guess = t.min() - log_ms
    k = np.maximum(1, np.round((t - guess) / log_ms))
    return float(np.floor(np.median(t - k * log_ms)))


def _interval(t_ms: pd.Series, epoch: float, log_ms: int) -> np.ndarray:
    return np.maximum(1, np.round((t_ms.to_numpy() - epoch) / log_ms)).astype(int)


def _job_rows(logs: Mapping[str, Any], epoch: float, log_ms: int, offset_s: float) -> tuple[pd.DataFrame, np.ndarray]:
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
        if kind in logs:
            frame = logs[kind]  # the job's own: read_series frees it after these rows
            frame["k"] = _interval(frame["t_ms"], epoch, log_ms)
            per_kind[kind] = frame.groupby(["ddir", "k"])["value"].mean()  # one sample per interval; two: their mean
    if "clat_hist" in logs:
        hist, counts = logs["clat_hist"]
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
        for col, v in row_percentiles(row, values).items():
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


def _coverage(table: pd.DataFrame, doc: dict | None, notes: list[str]) -> pd.DataFrame:
    """Per host and direction: fio's IOs (its report), the series' (histogram log; else
    IOPS x interval, an estimate), the uncovered rest and how long after the last interval."""
    fio = []  # fio's report: host, direction, IOs and runtime of each job (plain rows: one run's few)
    if doc is not None:
        fio = [
            {**r, "host": "" if pd.isna(r.get("hostname")) else str(r["hostname"])}
            for r in fiojson.tidy_rows(doc)
            if r.get("direction") in DIRECTIONS.values() and r.get("job") != "All clients"
        ]
    logs_hosts = set(table["host"])
    match_hosts = not len(fio) or logs_hosts <= {r["host"] for r in fio}
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
        fio_part = [r for r in fio if all(r.get(k) == v for k, v in sel.items())]
        ios = [r.get("total_ios") for r in fio_part if not pd.isna(r.get("total_ios"))]
        runtimes = [r.get("runtime_ms") for r in fio_part if not pd.isna(r.get("runtime_ms"))]
        fio_ios = float(sum(ios)) if len(fio) else math.nan
        runtime_s = float(max(runtimes)) / 1000.0 if runtimes else math.nan
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
