"""What the samplers wrote to a run folder, read back and summarised: CPU frequency, /proc/stat busy, steal, iowait and other load.

The files (``iolab.machine.sampling`` writes them every 0.5 s) are ``samples_freq.csv`` (t_s, cpu,
freq_mhz, freq_source) and ``samples_stat.csv`` (t_s, cpu, one column per /proc/stat counter in
USER_HZ ticks, and the machine-wide ``host_`` counters of that sample on each CPU's row).
``summarise`` trims the first and last 10 % of the window (the AiSIO method, seed 003) before
averaging; ``run_columns(run_dir)`` gives the run's sampler columns.

The noise the machine adds is named per run: hypervisor steal and iowait on the pinned CPUs
(``cpu_steal_pct``, ``cpu_iowait_pct``), steal and busy time machine-wide (``host_steal_pct``,
``host_busy_pct``), and ``other_cpu_pct`` — process time (user+nice+system) on the pinned CPUs
that fio's own usr+sys does not explain, an estimate (fio's rusage and the sampler's window are
not the same interval). ``noise_flag`` says when steal is above ``STEAL_FLAG_PCT`` or other load
above ``OTHER_FLAG_PCT``; iowait is not flagged, since a pinned psync run waits on I/O by design.
Run folders sampled before the ``host_`` columns existed give NaN for the host figures.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import runfiles
from ..core.errors import IolabError
from ..core.runfiles import SAMPLES_FREQ_CSV, SAMPLES_PROCS_CSV, SAMPLES_STAT_CSV, SAMPLES_THREADS_CSV, THREADS_JSON
from ..read import fiojson

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


USER_HZ = os.sysconf("SC_CLK_TCK")


FREQ_FILE, STAT_FILE, PROCS_FILE = SAMPLES_FREQ_CSV, SAMPLES_STAT_CSV, SAMPLES_PROCS_CSV


FILES = (STAT_FILE, FREQ_FILE, PROCS_FILE)  # in a run folder; the first one there means the samplers ran


HOST_FIELDS = tuple(f"host_{f}" for f in STAT_FIELDS)  # the machine-wide ``cpu`` line


STEAL_FLAG_PCT = 5.0  # hypervisor steal above this share of the pinned CPUs' (or machine's) time


THREADS_FILE = SAMPLES_THREADS_CSV  # the thread-state sampler's series, when it ran
OTHER_FLAG_PCT = 10.0  # pinned CPUs' process time beyond fio's own usr+sys, % of their time


@dataclass
class Samples:
    """The raw series: ``freq`` (t_s, cpu, freq_mhz, freq_source) and ``stat`` (t_s, cpu,
    /proc/stat counters in USER_HZ ticks); t_s in seconds since the sampler started."""

    freq: pd.DataFrame
    stat: pd.DataFrame
    procs: pd.DataFrame | None = None  # whose CPU (iolab.machine.proctree), when the tool's pid was given

    def files(self) -> dict[str, str]:
        """The run-folder files of these series: file name -> CSV text."""
        out = {FREQ_FILE: self.freq.to_csv(index=False), STAT_FILE: self.stat.to_csv(index=False)}
        if self.procs is not None:
            out[PROCS_FILE] = self.procs.to_csv(index=False)
        return out

    @classmethod
    def read(cls, run_dir: str | os.PathLike) -> Samples:
        """The series a run folder keeps (``files``); RunFileError (``iolab.core.runfiles``) naming
        a file that is missing, empty, cut mid-line or without the columns written here."""
        procs = Path(run_dir) / PROCS_FILE
        return cls(read_freq(run_dir), read_stat(run_dir), read_procs(run_dir) if procs.exists() else None)


STAT_COLUMNS = ("t_s", "cpu", *STAT_FIELDS)  # what samples_stat.csv must hold (the host_ columns may be absent)
FREQ_COLUMNS = ("t_s", "cpu", "freq_mhz", "freq_source")


def read_stat(run_dir: str | os.PathLike) -> pd.DataFrame:
    """``samples_stat.csv`` of a run folder: t_s (s), cpu, the /proc/stat counters (USER_HZ
    ticks); RunFileError when it cannot be read as written."""
    return runfiles.read_csv(Path(run_dir) / STAT_FILE, columns=STAT_COLUMNS, numeric=(*STAT_COLUMNS, *HOST_FIELDS))


PROCS_COLUMNS = ("t_s", "pid", "tid", "comm", "kind", "utime", "stime", "cpu")  # iolab.machine.proctree writes them
PROCS_NUMERIC = ("t_s", "pid", "tid", "utime", "stime", "cpu")


def read_procs(run_dir: str | os.PathLike) -> pd.DataFrame:
    """``samples_procs.csv`` of a run folder: t_s (s), pid, tid, comm, kind (``own``: the tool's
    threads; ``device``: its devices' kernel workers), utime and stime (USER_HZ ticks), cpu
    (the one it last ran on); RunFileError when it cannot be read as written."""
    return runfiles.read_csv(Path(run_dir) / PROCS_FILE, columns=PROCS_COLUMNS, numeric=PROCS_NUMERIC)


def read_freq(run_dir: str | os.PathLike) -> pd.DataFrame:
    """``samples_freq.csv`` of a run folder: t_s (s), cpu, freq_mhz (MHz), freq_source;
    RunFileError when it cannot be read as written."""
    return runfiles.read_csv(Path(run_dir) / FREQ_FILE, columns=FREQ_COLUMNS, numeric=FREQ_COLUMNS[:3])


def run_columns(run_dir: str | os.PathLike) -> dict:
    """The sampler columns of a run folder: ``summarise`` of its stored series, with fio's
    own CPU (``fio_cpu_pct``) from its report when fio drove the run. Plain files (as the
    samplers write them) are read without pandas (``iolab.core.runfiles.csv_columns``) and
    summarised by ``_summary``, which gives what ``summarise`` gives, bit for bit."""
    freq = runfiles.csv_columns(os.path.join(run_dir, FREQ_FILE), columns=FREQ_COLUMNS, numeric=FREQ_COLUMNS[:3])
    stat = runfiles.csv_columns(
        os.path.join(run_dir, STAT_FILE), columns=STAT_COLUMNS, numeric=(*STAT_COLUMNS, *HOST_FIELDS)
    )
    fio_cpu = fio_cpu_pct(run_dir)
    quick = _summary(stat, freq, fio_cpu) if freq and stat else None
    if quick is None:
        return summarise(Samples.read(run_dir), fio_cpu=fio_cpu)
    return _attributed(quick, attribution(procs_columns(run_dir), stat["t_s"], set(stat["cpu"])), fio_cpu)


def _attributed(out: dict, attributed: dict, fio_cpu: float = float("nan")) -> dict:
    """A summary with the process sampler's figures (``attribution``), and its other load
    recomputed from them: the pinned CPUs' process time that was neither the tool's nor its
    devices' workers' (``other_cpu_pct``), and its ``noise_flag``. fio's own is its jobs'
    rusage (``fio_cpu``: exact over their runtime, at whatever tick a run begins or ends) and
    io_uring's workers, which that rusage (RUSAGE_THREAD) leaves out; without fio (t/io_uring)
    every thread of the tool's tree as sampled."""
    if not attributed or not out.get("cpus_sampled"):
        return out
    uring, uring_on = attributed.pop("_uring_pct"), attributed.pop("_uring_on_cpus_pct")
    own_on, device_on = attributed.pop("_own_on_cpus_pct"), attributed.pop("_device_on_cpus_pct")
    if fio_cpu == fio_cpu:  # fio's jobs run on the pinned CPUs (cpus_allowed; cpu_accounting checks it)
        attributed["own_cpu_pct"] = fio_cpu + uring
        # other load: neither fio's jobs (their rusage) nor any thread of fio's tree as sampled (its
        # main process starting a short run is fio's work too, not another program's)
        own_on = max(own_on, fio_cpu + uring_on)
    out |= attributed
    mine = (own_on + device_on) / out["cpus_sampled"]
    out["other_cpu_pct"] = float(max(0.0, out["cpu_usr_pct"] + out["cpu_sys_pct"] - mine))
    out["noise_flag"] = noise_flag(out["cpu_steal_pct"], out["other_cpu_pct"], out["host_steal_pct"])
    return out


def _worker_name(comm: str) -> str:
    """A worker thread's name without its numbers: ``iou-sqp`` (io_uring's SQPOLL thread),
    ``iou-wrk`` (its io-wq workers), ``kworker loop0`` (a kworker of loop0's workqueue)."""
    if comm.startswith("kworker/"):
        return "kworker " + re.split(r"[+-]", comm, maxsplit=1)[-1]
    return re.sub(r"-\d+$", "", comm)


def procs_columns(run_dir: str | os.PathLike) -> dict[str, list] | None:
    """``samples_procs.csv`` as columns (plain, else through pandas); None without the file."""
    path = Path(run_dir) / PROCS_FILE
    if not path.exists():
        return None
    cols = runfiles.csv_columns(path, columns=PROCS_COLUMNS, numeric=PROCS_NUMERIC)
    if cols is None:  # quoted names, or no row at all
        frame = read_procs(run_dir)
        cols = {c: frame[c].tolist() for c in PROCS_COLUMNS}
    return cols


def attribution(cols: dict[str, list] | None, times: list[float], cpus: set[int]) -> dict:
    """Whose CPU the sampled time was, from the process sampler's rows (``procs_columns``,
    ``iolab.machine.proctree``) over the sampler window (``_kept`` of the sample ``times``),
    % of one CPU: ``own_cpu_pct`` — the tool's threads (fio's jobs, io_uring's workers in its
    processes); ``device_worker_cpu_pct`` — the kernel workers serving its devices (a loop
    device's kworkers); ``workers`` — the worker threads among them by name with their share
    ("iou-sqp 97 %, kworker loop0 35 %"); and ``_on_cpus`` of both: the part that ran on
    ``cpus`` (by the CPU each thread was on at each tick). {} without rows."""
    if not cols or not cols["t_s"] or len(times) < 2:
        return {}
    rows = _kept(times, 0.10)  # summarise's window: the first and last 10 % trimmed, or whole when too short
    kept = [times[i] for i in rows] if len({times[i] for i in rows}) >= 2 else list(times)
    low, high = min(kept), max(kept)
    series: dict[tuple, list] = {}
    for t, tid, comm, kind, u, st, cpu in zip(
        cols["t_s"], cols["tid"], cols["comm"], cols["kind"], cols["utime"], cols["stime"], cols["cpu"]
    ):
        if low <= t <= high:
            series.setdefault((kind, tid), []).append((t, u + st, cpu, comm))
    first, seconds = low, high - low  # the ticks' own span, as summarise's window_s
    if seconds <= 0:
        return {}
    total = {"own": 0, "iou": 0, "device": 0}
    on = dict(total)
    named: dict[str, int] = {}
    for (kind, _), rows in series.items():
        rows.sort()
        if kind == "own" and rows[0][0] > first:  # the tool's thread born in the window (a job forked): from 0
            rows.insert(0, (first, 0, rows[0][2], rows[0][3]))
        for (_, a, _, _), (_, b, cpu, comm) in zip(rows, rows[1:]):
            ticks = max(0, b - a)
            part = "iou" if kind == "own" and comm.startswith("iou-") else kind  # io_uring's own workers
            total[part] += ticks
            on[part] += ticks if cpu in cpus else 0
            if part != "own":
                named[_worker_name(comm)] = named.get(_worker_name(comm), 0) + ticks

    def pct(ticks: int) -> float:
        return float(100 * ticks / USER_HZ / seconds)

    shares = sorted(((pct(v), k) for k, v in named.items() if pct(v) >= 0.5), reverse=True)
    return {
        "own_cpu_pct": pct(total["own"] + total["iou"]),
        "device_worker_cpu_pct": pct(total["device"]),
        "workers": ", ".join(f"{k} {v:.0f} %" for v, k in shares),
        "_uring_pct": pct(total["iou"]),
        "_uring_on_cpus_pct": pct(on["iou"]),
        "_own_on_cpus_pct": pct(on["own"] + on["iou"]),
        "_device_on_cpus_pct": pct(on["device"]),
    }


def fio_cpu_pct(run_dir: str | os.PathLike) -> float:
    """fio's usr+sys (rusage, % of one CPU) summed over its jobs, from the run folder's
    report; NaN when fio did not drive the run or its report says nothing of CPU."""
    report = os.path.join(run_dir, fiojson.FILES[0])
    if not os.path.exists(report):
        return float("nan")
    try:
        data = fiojson.run_document(report).data
    except IolabError:
        return float("nan")
    jobs = data.get("jobs", data.get("client_stats", [])) or []
    values = [float(j["usr_cpu"]) + float(j["sys_cpu"]) for j in jobs if "usr_cpu" in j and "sys_cpu" in j]
    return float(sum(values)) if values else float("nan")


def noise_flag(steal_pct: float, other_pct: float, host_steal_pct: float = float("nan")) -> str:
    """Empty, or what the host added to a run beyond the thresholds, e.g.
    ``"steal 7 % > 5 %; other load 30 % of the CPU > 10 %"`` (NaN figures are not flagged)."""
    said = []
    steal = max((v for v in (steal_pct, host_steal_pct) if v == v), default=float("nan"))
    if steal > STEAL_FLAG_PCT:
        where = "" if steal == steal_pct else " machine-wide"
        said.append(f"steal {steal:.0f} %{where} > {STEAL_FLAG_PCT:g} %")
    if other_pct > OTHER_FLAG_PCT:
        said.append(f"other load {other_pct:.0f} % of the CPU > {OTHER_FLAG_PCT:g} %")
    return "; ".join(said)


def trim(frame: pd.DataFrame, fraction: float = 0.10, col: str = "t_s") -> pd.DataFrame:
    """Rows inside the window without its first and last ``fraction`` (AiSIO, seed 003)."""
    if frame.empty:
        return frame
    lo, hi = frame[col].min(), frame[col].max()
    span = hi - lo
    return frame[(frame[col] >= lo + fraction * span) & (frame[col] <= hi - fraction * span)]


def summarise(samples: Samples, fraction: float = 0.10, fio_cpu: float = float("nan")) -> dict:
    """One-line summary of a run's samples over the trimmed window.

    busy_cpu_s is summed over the CPUs sampled (so 2 fully busy CPUs for 1 s = 2 CPU·s);
    percentages are averaged over them. Frequency is the mean over CPUs and time.
    ``fio_cpu`` is fio's usr+sys in % of one CPU (``fio_cpu_pct``); with it,
    ``other_cpu_pct`` is the pinned CPUs' process time beyond it (clipped at 0), else NaN."""
    nan = float("nan")
    out: dict = {
        "cpu_steal_pct": nan,
        "cpu_iowait_pct": nan,
        "host_steal_pct": nan,
        "host_busy_pct": nan,
        "other_cpu_pct": nan,
    }
    stat = trim(samples.stat, fraction)
    if len(stat["t_s"].unique()) < 2:  # run too short to trim: use the whole window
        stat = samples.stat
    if not stat.empty:
        first = stat.sort_values("t_s").groupby("cpu").first()
        last = stat.sort_values("t_s").groupby("cpu").last()
        d = (last[list(STAT_FIELDS)] - first[list(STAT_FIELDS)]).sum()
        total = d.sum()
        busy = d[list(BUSY_FIELDS)].sum()
        ncpu = len(first)
        out.update(
            {
                "window_s": float((last["t_s"] - first["t_s"]).mean()),
                "busy_cpu_s": float(busy / USER_HZ),
                "cpu_busy_pct": float(100 * busy / total) if total else float("nan"),
                "cpu_usr_pct": float(100 * (d["user"] + d["nice"]) / total) if total else float("nan"),
                "cpu_sys_pct": float(100 * d["system"] / total) if total else float("nan"),
                "cpu_irq_pct": float(100 * d["irq"] / total) if total else float("nan"),
                "cpu_softirq_pct": float(100 * d["softirq"] / total) if total else float("nan"),
                "cpus_sampled": ncpu,
                "cpu_steal_pct": float(100 * d["steal"] / total) if total else nan,
                "cpu_iowait_pct": float(100 * d["iowait"] / total) if total else nan,
            }
        )
        if total and fio_cpu == fio_cpu:
            process = d["user"] + d["nice"] + d["system"]
            out["other_cpu_pct"] = float(max(0.0, 100 * process / total - fio_cpu / ncpu))
        if set(HOST_FIELDS) <= set(stat.columns):
            host = stat.sort_values("t_s").drop_duplicates("t_s")[list(HOST_FIELDS)].dropna()
            if len(host) >= 2:
                h = (host.iloc[-1] - host.iloc[0]).set_axis(list(STAT_FIELDS))
                if h.sum() > 0:
                    out["host_steal_pct"] = float(100 * h["steal"] / h.sum())
                    out["host_busy_pct"] = float(100 * h[list(BUSY_FIELDS)].sum() / h.sum())
    out["noise_flag"] = noise_flag(out["cpu_steal_pct"], out["other_cpu_pct"], out["host_steal_pct"])
    freq = trim(samples.freq, fraction)
    if freq.empty:
        freq = samples.freq
    if not freq.empty:
        out["cpu_freq_mhz"] = float(freq["freq_mhz"].mean())
        out["freq_source"] = str(freq["freq_source"].iloc[0])
    else:
        out["cpu_freq_mhz"], out["freq_source"] = float("nan"), "none"
    procs = None if samples.procs is None else {c: samples.procs[c].tolist() for c in PROCS_COLUMNS}
    seen = attribution(procs, samples.stat["t_s"].tolist(), set(samples.stat["cpu"].tolist()))
    return _attributed(out, seen, fio_cpu)


_SOURCE = re.compile(r"[a-z]+(?:_[a-z]+)+")  # a frequency source pandas reads as text, never as a number or NA


def _kept(t: list, fraction: float) -> list[int]:
    """The rows ``trim`` keeps (their positions), from the ``t_s`` values."""
    lo, hi = min(t), max(t)
    span = hi - lo
    low, high = lo + fraction * span, hi - fraction * span
    return [i for i, v in enumerate(t) if low <= v <= high]


def _summary(stat: dict[str, list], freq: dict[str, list], fio_cpu: float, fraction: float = 0.10) -> dict | None:
    """``summarise`` of the series as ``iolab.core.runfiles.csv_columns`` reads them, without
    pandas: the same figures from the same operations (integer tick deltas, numpy's sums for
    the means), so equal to it bit for bit. None for series ``summarise`` must read
    (integer counters, one row per CPU and time, the same host counters on every CPU's row
    of a time and a frequency source in words, or not)."""
    t, cpus = stat["t_s"], stat["cpu"]
    host = all(f in stat for f in HOST_FIELDS)
    counters = [stat[f] for f in (*STAT_FIELDS, *(HOST_FIELDS if host else ()))]
    if type(cpus[0]) is not int or not all(type(c[0]) is int for c in counters):  # a column is all ints or none
        return None
    if len(set(zip(cpus, t))) != len(t) or not all(_SOURCE.fullmatch(s) for s in freq["freq_source"]):
        return None
    rows = _kept(t, fraction)
    if len({t[i] for i in rows}) < 2:  # run too short to trim: use the whole window
        rows = range(len(t))
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i in rows:
        cpu = cpus[i]
        if cpu not in first or t[i] < t[first[cpu]]:
            first[cpu] = i
        if cpu not in last or t[i] > t[last[cpu]]:
            last[cpu] = i
    order = sorted(first)
    d = {f: sum(stat[f][last[c]] - stat[f][first[c]] for c in order) for f in STAT_FIELDS}
    total, busy, ncpu = sum(d.values()), sum(d[f] for f in BUSY_FIELDS), len(order)
    nan = float("nan")

    def pct(ticks: int) -> float:
        return float(100 * ticks / total) if total else nan

    window = np.array([t[last[c]] - t[first[c]] for c in order], dtype=np.float64)
    out: dict = {  # summarise's columns in its order
        "cpu_steal_pct": pct(d["steal"]),
        "cpu_iowait_pct": pct(d["iowait"]),
        "host_steal_pct": nan,
        "host_busy_pct": nan,
        "other_cpu_pct": nan,
        "window_s": float(window.sum() / np.float64(ncpu)),
        "busy_cpu_s": float(busy / USER_HZ),
        "cpu_busy_pct": pct(busy),
        "cpu_usr_pct": pct(d["user"] + d["nice"]),
        "cpu_sys_pct": pct(d["system"]),
        "cpu_irq_pct": pct(d["irq"]),
        "cpu_softirq_pct": pct(d["softirq"]),
        "cpus_sampled": ncpu,
    }
    if total and fio_cpu == fio_cpu:
        process = d["user"] + d["nice"] + d["system"]
        out["other_cpu_pct"] = float(max(0.0, 100 * process / total - fio_cpu / ncpu))
    if host:
        at: dict = {}
        for i in rows:  # the host counters of each time: the same on every CPU's row
            if at.setdefault(t[i], i) != i and any(stat[f][i] != stat[f][at[t[i]]] for f in HOST_FIELDS):
                return None
        if len(at) >= 2:
            a, b = at[min(at)], at[max(at)]
            h = {f: stat[f"host_{f}"][b] - stat[f"host_{f}"][a] for f in STAT_FIELDS}
            if sum(h.values()) > 0:
                out["host_steal_pct"] = float(100 * h["steal"] / sum(h.values()))
                out["host_busy_pct"] = float(100 * sum(h[f] for f in BUSY_FIELDS) / sum(h.values()))
    out["noise_flag"] = noise_flag(out["cpu_steal_pct"], out["other_cpu_pct"], out["host_steal_pct"])
    kept = _kept(freq["t_s"], fraction) or range(len(freq["t_s"]))
    mhz = np.array([freq["freq_mhz"][i] for i in kept], dtype=np.float64)
    out["cpu_freq_mhz"] = float(mhz.sum() / np.float64(len(mhz)))
    out["freq_source"] = freq["freq_source"][kept[0]]
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
    """The thread-state sampler's series (``samples_threads.csv`` of ``iolab.machine.threads``: one
    row per active thread per tick, ``t_s`` on its own clock, started with the samplers) per
    sampler interval: the mean number of threads in each state per tick (``threads_R``,
    ``threads_D``, ...), over all processes (seed 001's readahead workers were kernel
    threads). Empty when it did not run; RunFileError (``iolab.core.runfiles``) when its files
    cannot be read."""
    path = run_dir / THREADS_FILE
    if not path.exists() or not len(starts):
        return pd.DataFrame()
    frame = runfiles.read_csv(path, usecols=["t_s", "state"], numeric=("t_s",))
    meta = runfiles.read_json(run_dir / THREADS_JSON, optional=True) or {}
    with runfiles.guard(run_dir / THREADS_JSON):
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
