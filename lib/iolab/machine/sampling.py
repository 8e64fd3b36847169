"""Background samplers around a run: CPU frequency and per-CPU busy time.

Every ``interval_s`` (0.5 s, as AiSIO samples ``scaling_cur_freq``, seed 003) one thread
reads, for the CPUs in use:

* the frequency from ``/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq`` (kHz), or,
  where there is no cpufreq, ``cpu MHz`` of ``/proc/cpuinfo`` — labelled
  ``freq_source="proc_cpuinfo"``, because on a VM it is a nominal clock;
* the cumulative ``/proc/stat`` counters (user, nice, system, idle, iowait, irq, softirq,
  steal; USER_HZ ticks), so kernel work done on the CPU (softirq completions) counts, and
  beside them the machine-wide ``cpu`` line (``host_user`` ... ``host_steal``);
* given the measured tool's pid (``start(pid)``), the CPU time of each of its threads and of
  the kernel workers serving its devices (``iolab.machine.proctree``): whose work the busy
  time was.

The raw series are kept as tidy frames (``iolab.read.samples.Samples``), written to the run
folder and read back, summarised and flagged there.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.signals import join_started
from ..core.system import SYS_CPU, cpuinfo_mhz
from ..read.samples import HOST_FIELDS, STAT_FIELDS, Samples
from . import proctree


def read_stat_lines(
    cpus: list[int] | None = None, path: str | os.PathLike = "/proc/stat"
) -> tuple[dict[int, dict[str, int]], dict[str, int]]:
    """One read of /proc/stat (or a recorded copy at ``path``): the per-CPU counters and the
    machine-wide ``cpu`` line's, in USER_HZ ticks."""
    out: dict[int, dict[str, int]] = {}
    host: dict[str, int] = {}
    with open(path) as f:
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


TID_POLL_S = 0.02  # how often the tool's thread ids are gathered (a few directory listings, off its CPUs)


class Sampler:
    """Samples frequency and /proc/stat for ``cpus`` on a thread until stopped.

    Use as a context manager, or ``start()`` / ``stop()``; the thread is always joined."""

    def __init__(self, cpus: list[int], interval_s: float = 0.5, devices: Sequence[str] = ()):
        self.cpus, self.interval_s = list(cpus), interval_s
        self._freq: list[tuple] = []
        self._stat: list[tuple] = []
        self._procs: list[tuple] = []
        self._root: int | None = None  # the tool's pid (start): its threads' CPU time, iolab.machine.proctree
        self._workers = proctree.device_workers(devices)
        self.tids: set[int] = set()  # every thread of the tool's tree seen (TID_POLL_S): whose perf samples are fio's
        self._tid_thread: threading.Thread | None = None
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
        if self._root is not None:
            rows = proctree.read(self._root, self._workers, t)
            self._procs += rows
            self.tids |= {row[2] for row in rows}

    def _loop(self) -> None:
        # Keep the sampler off the CPUs it measures when there are others (on Linux,
        # sched_setaffinity(0, ...) applies to the calling thread only).
        others = set(os.sched_getaffinity(0)) - set(self.cpus)
        if others:
            os.sched_setaffinity(0, others)
        while not self._stop.wait(self.interval_s):
            self._sample()

    def start(self, pid: int | None = None) -> Sampler:
        """Sample from now; ``pid``: the measured tool's, whose threads (and its devices'
        kernel workers) are read at each tick too (``iolab.machine.proctree``), and whose
        thread ids are gathered every ``TID_POLL_S`` (``tids``: a job forked and gone between
        two ticks of a short run is still known as fio's)."""
        self._root = pid
        self.t0 = time.monotonic()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="iolab-sampler", daemon=True)
        self._thread.start()
        if pid is not None:
            self._tid_thread = threading.Thread(target=self._tid_loop, name="iolab-tids", daemon=True)
            self._tid_thread.start()
        return self

    def _tid_loop(self) -> None:
        others = set(os.sched_getaffinity(0)) - set(self.cpus)
        if others:
            os.sched_setaffinity(0, others)
        while not self._stop.wait(TID_POLL_S):
            self.tids |= proctree.thread_ids(self._root)

    @property
    def started(self) -> bool:
        return self._thread is not None

    def stop(self) -> Samples:
        self._stop.set()
        join_started(self._thread)
        join_started(self._tid_thread)
        self._sample()  # closing sample, so the window covers the whole run
        return self.samples()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        if not self._stop.is_set():
            self.stop()

    def samples(self) -> Samples:
        freq = pd.DataFrame(self._freq, columns=["t_s", "cpu", "freq_mhz", "freq_source"])
        stat = pd.DataFrame(self._stat, columns=["t_s", "cpu", *STAT_FIELDS, *HOST_FIELDS])
        procs = pd.DataFrame(self._procs, columns=list(proctree.ROWS)) if self._root is not None else None
        return Samples(freq, stat, procs)
