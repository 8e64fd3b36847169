"""Background samplers around a run: CPU frequency and per-CPU busy time.

Every ``interval_s`` (0.5 s, as AiSIO samples ``scaling_cur_freq``, seed 003) one thread
reads, for the CPUs in use:

* the frequency from ``/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq`` (kHz), or,
  where there is no cpufreq, ``cpu MHz`` of ``/proc/cpuinfo`` — labelled
  ``freq_source="proc_cpuinfo"``, because on a VM it is a nominal clock;
* the cumulative ``/proc/stat`` counters (user, nice, system, idle, iowait, irq, softirq,
  steal; USER_HZ ticks), so kernel work done on the CPU (softirq completions) counts, and
  beside them the machine-wide ``cpu`` line (``host_user`` ... ``host_steal``).

The raw series are kept as tidy frames (``freq``: t_s, cpu, freq_mhz, freq_source;
``stat``: t_s, cpu, one column per counter, and the ``host_`` counters of that sample
repeated on each CPU's row). ``summarise`` trims the first and last 10 % of the window (the
AiSIO method) before averaging.

The noise the machine adds is named per run: hypervisor steal and iowait on the pinned CPUs
(``cpu_steal_pct``, ``cpu_iowait_pct``), steal and busy time machine-wide
(``host_steal_pct``, ``host_busy_pct``), and ``other_cpu_pct`` — process time (user+nice+
system) on the pinned CPUs that fio's own usr+sys does not explain, an estimate (fio's
rusage and the sampler's window are not the same interval). ``noise_flag`` says when steal
is above ``STEAL_FLAG_PCT`` or other load above ``OTHER_FLAG_PCT``; iowait is not flagged,
since a pinned psync run waits on I/O by design. Run folders sampled before the ``host_``
columns existed give NaN for the host figures.

In a run folder (``iolab.producers``) they are ``samples_freq.csv`` and ``samples_stat.csv``;
``run_columns(run_dir)`` reads them back as the run's sampler columns (``summarise``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import fiojson, runfiles
from .errors import IolabError
from .system import SYS_CPU, cpuinfo_mhz

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
USER_HZ = os.sysconf("SC_CLK_TCK")
FREQ_FILE, STAT_FILE = "samples_freq.csv", "samples_stat.csv"
FILES = (STAT_FILE, FREQ_FILE)  # in a run folder; the first one there means the samplers ran
HOST_FIELDS = tuple(f"host_{f}" for f in STAT_FIELDS)  # the machine-wide ``cpu`` line
STEAL_FLAG_PCT = 5.0  # hypervisor steal above this share of the pinned CPUs' (or machine's) time
OTHER_FLAG_PCT = 10.0  # pinned CPUs' process time beyond fio's own usr+sys, % of their time


def read_stat_lines(cpus: list[int] | None = None) -> tuple[dict[int, dict[str, int]], dict[str, int]]:
    """One read of /proc/stat: the per-CPU counters and the machine-wide ``cpu`` line's, in
    USER_HZ ticks."""
    out: dict[int, dict[str, int]] = {}
    host: dict[str, int] = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                continue
            parts = line.split()
            if parts[0] == "cpu":
                host = dict(zip(STAT_FIELDS, map(int, parts[1:9])))
                continue
            cpu = int(parts[0][3:])
            if cpus is None or cpu in cpus:
                out[cpu] = dict(zip(STAT_FIELDS, map(int, parts[1:9])))
    return out, host


def read_proc_stat(cpus: list[int] | None = None) -> dict[int, dict[str, int]]:
    """Per-CPU cumulative counters from /proc/stat in USER_HZ ticks."""
    return read_stat_lines(cpus)[0]


def read_freq_mhz(cpus: list[int]) -> tuple[dict[int, float], str]:
    """Current frequency per CPU (MHz) and where it came from."""
    out = {}
    for cpu in cpus:
        try:
            out[cpu] = int(Path(SYS_CPU / f"cpu{cpu}/cpufreq/scaling_cur_freq").read_text()) / 1000.0
        except (OSError, ValueError):
            break
    else:
        return out, "scaling_cur_freq"
    info = cpuinfo_mhz()
    return {c: info[c] for c in cpus if c in info}, "proc_cpuinfo"


class Sampler:
    """Samples frequency and /proc/stat for ``cpus`` on a thread until stopped.

    Use as a context manager, or ``start()`` / ``stop()``; the thread is always joined."""

    def __init__(self, cpus: list[int], interval_s: float = 0.5):
        self.cpus, self.interval_s = list(cpus), interval_s
        self._freq: list[tuple] = []
        self._stat: list[tuple] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = 0.0

    def _sample(self) -> None:
        t = time.monotonic() - self.t0
        freqs, source = read_freq_mhz(self.cpus)
        for cpu, mhz in freqs.items():
            self._freq.append((t, cpu, mhz, source))
        per_cpu, host = read_stat_lines(self.cpus)
        machine = tuple(host.get(f, float("nan")) for f in STAT_FIELDS)
        for cpu, counters in per_cpu.items():
            self._stat.append((t, cpu, *(counters[f] for f in STAT_FIELDS), *machine))

    def _loop(self) -> None:
        # Keep the sampler off the CPUs it measures when there are others (on Linux,
        # sched_setaffinity(0, ...) applies to the calling thread only).
        others = set(os.sched_getaffinity(0)) - set(self.cpus)
        if others:
            os.sched_setaffinity(0, others)
        while not self._stop.wait(self.interval_s):
            self._sample()

    def start(self) -> "Sampler":
        self.t0 = time.monotonic()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="iolab-sampler", daemon=True)
        self._thread.start()
        return self

    @property
    def started(self) -> bool:
        return self._thread is not None

    def stop(self) -> "Samples":
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._sample()  # closing sample, so the window covers the whole run
        return self.samples()

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        if not self._stop.is_set():
            self.stop()

    def samples(self) -> "Samples":
        freq = pd.DataFrame(self._freq, columns=["t_s", "cpu", "freq_mhz", "freq_source"])
        stat = pd.DataFrame(self._stat, columns=["t_s", "cpu", *STAT_FIELDS, *HOST_FIELDS])
        return Samples(freq, stat)


@dataclass
class Samples:
    """The raw series: ``freq`` (t_s, cpu, freq_mhz, freq_source) and ``stat`` (t_s, cpu,
    /proc/stat counters in USER_HZ ticks); t_s in seconds since the sampler started."""

    freq: pd.DataFrame
    stat: pd.DataFrame

    def files(self) -> dict[str, str]:
        """The run-folder files of these series: file name -> CSV text."""
        return {FREQ_FILE: self.freq.to_csv(index=False), STAT_FILE: self.stat.to_csv(index=False)}

    @classmethod
    def read(cls, run_dir: str | os.PathLike) -> "Samples":
        """The series a run folder keeps (``files``); RunFileError (``iolab.runfiles``) naming
        a file that is missing, empty, cut mid-line or without the columns written here."""
        return cls(read_freq(run_dir), read_stat(run_dir))


def read_stat(run_dir: str | os.PathLike) -> pd.DataFrame:
    """``samples_stat.csv`` of a run folder: t_s (s), cpu, the /proc/stat counters (USER_HZ
    ticks); RunFileError when it cannot be read as written."""
    return runfiles.read_csv(
        Path(run_dir) / STAT_FILE,
        columns=("t_s", "cpu", *STAT_FIELDS),
        numeric=("t_s", "cpu", *STAT_FIELDS, *HOST_FIELDS),
    )


def read_freq(run_dir: str | os.PathLike) -> pd.DataFrame:
    """``samples_freq.csv`` of a run folder: t_s (s), cpu, freq_mhz (MHz), freq_source;
    RunFileError when it cannot be read as written."""
    return runfiles.read_csv(
        Path(run_dir) / FREQ_FILE, columns=("t_s", "cpu", "freq_mhz", "freq_source"), numeric=("t_s", "cpu", "freq_mhz")
    )


def run_columns(run_dir: str | os.PathLike) -> dict:
    """The sampler columns of a run folder: ``summarise`` of its stored series, with fio's
    own CPU (``fio_cpu_pct``) from its report when fio drove the run."""
    return summarise(Samples.read(run_dir), fio_cpu=fio_cpu_pct(run_dir))


def fio_cpu_pct(run_dir: str | os.PathLike) -> float:
    """fio's usr+sys (rusage, % of one CPU) summed over its jobs, from the run folder's
    report; NaN when fio did not drive the run or its report says nothing of CPU."""
    report = Path(run_dir) / fiojson.FILES[0]
    if not report.exists():
        return float("nan")
    try:
        data = fiojson.load_document(report).data
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


def cpu_utilisation(stat: pd.DataFrame) -> pd.DataFrame:
    """Per-interval utilisation (%) per CPU from the cumulative counters:
    t_s, cpu, busy_pct, usr_pct, sys_pct, irq_pct, softirq_pct, iowait_pct."""
    rows = []
    for cpu, g in stat.sort_values("t_s").groupby("cpu"):
        d = g[list(STAT_FIELDS)].diff().iloc[1:]
        total = d.sum(axis=1).replace(0, float("nan"))
        out = pd.DataFrame(
            {
                "t_s": g["t_s"].iloc[1:].to_numpy(),
                "cpu": cpu,
                "busy_pct": 100 * d[list(BUSY_FIELDS)].sum(axis=1) / total,
                "usr_pct": 100 * (d["user"] + d["nice"]) / total,
                "sys_pct": 100 * d["system"] / total,
                "irq_pct": 100 * d["irq"] / total,
                "softirq_pct": 100 * d["softirq"] / total,
                "iowait_pct": 100 * d["iowait"] / total,
            }
        )
        rows.append(out)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


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
    return out
