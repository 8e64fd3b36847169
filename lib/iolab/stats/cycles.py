"""CPU cycles spent per IO, whose cycles said: fio's own (the headline) and the pinned cores'
busy time (every program on them), for one figure and for a run table.

Seed 001 divides one fully busy core's clock by its IOPS: 3.9 GHz / 450k IOPS = 8,666
cycles/IO. On a machine where other programs share the core, its busy time is theirs too
(a CPU hog beside fio: 86 % busy while fio's own threads used 48 %), so:

* ``cycles_per_io`` — fio's own CPU seconds x frequency / IOs. fio's own (``own_cpu_pct``,
  ``iolab.read.samples``) is its jobs' rusage (``usr_cpu`` + ``sys_cpu``, taken per thread)
  and io_uring's workers in its processes (``iou-wrk``, ``iou-sqp``), which that rusage leaves
  out, read by the process sampler (``iolab.machine.proctree``); t/io_uring's, every thread of
  its process; runs sampled before the process sampler take fio's rusage alone. Kernel
  workers serving the device (a loop device's kworkers, ``device_worker_cpu_pct``) are the
  device's work, not counted: an NVMe SSD does that work in its controller.
* ``cycles_per_io_core`` — the pinned CPUs' busy time (``cpu_busy_pct`` x ``cpus_sampled``)
  x frequency / the run's IOs: seed 001's figure, other programs included when there were
  any (``other_cpu_pct`` says how much).

A run with several jobs gives each job its share of fio's own time by its rusage, divided by
that job's IOs (reads and writes together)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

OWN_SOURCE = "fio's own: its jobs' rusage and io_uring's workers (/proc)"
TOOL_SOURCE = "the tool's own threads (/proc)"  # t/io_uring: no rusage in its output
RUSAGE_SOURCE = "fio's rusage (its job threads; io_uring's workers not counted)"


@dataclass
class CyclesPerIO:
    cycles_per_io: float
    busy_cpu_s: float
    freq_hz: float
    ios: float
    freq_source: str
    method: str = "busy CPU seconds x frequency / IOs"


def cycles_per_io(busy_cpu_s: float, freq_hz: float, ios: float, freq_source: str = "given") -> CyclesPerIO:
    """CPU cycles spent per IO = busy CPU seconds x frequency (Hz) / IOs.

    Seed 001: one core fully busy at 3.9 GHz doing 450k IOPS for 1 s
    -> 1.0 x 3.9e9 / 450e3 = 8,666.7 cycles/IO. ``freq_source`` travels with the figure,
    because a nominal /proc/cpuinfo frequency is not a measured clock."""
    value = busy_cpu_s * freq_hz / ios if ios else math.nan
    return CyclesPerIO(value, busy_cpu_s, freq_hz, ios, freq_source)


def add_cycles_per_io(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``cycles_per_io`` (fio's own), ``cycles_per_io_core`` (the pinned CPUs' busy time)
    and ``cycles_per_io_source`` to a run table with sampler columns (cpu_busy_pct,
    cpus_sampled, cpu_freq_mhz; own_cpu_pct where the process sampler ran) and fio columns
    (iops; usr_cpu_pct and sys_cpu_pct). A row's figures are its run's (``run_id``; none: a
    row is a run) and its job's (``job_index``, else ``job``): cycles/IO = CPU share x f / IOPS.
    Runs without samplers (client/server runs on other hosts) get NaN."""
    out = table.copy()
    for col in ("cpu_busy_pct", "cpus_sampled", "cpu_freq_mhz"):
        if col not in out:
            out[col] = math.nan
    hz = out["cpu_freq_mhz"] * 1e6
    run = out["run_id"] if "run_id" in out else pd.Series(range(len(out)), index=out.index)
    doing = out["direction"] != "none" if "direction" in out else pd.Series(True, index=out.index)  # did I/O
    io = out["iops"].where(doing, 0)
    job_col = next((c for c in ("job_index", "job") if c in out), None)
    job = [run, out[job_col]] if job_col else [run]
    run_iops = io.groupby(run).transform("sum")
    job_iops = io.groupby(job).transform("sum")
    busy_per_s = out["cpu_busy_pct"] / 100.0 * out["cpus_sampled"]
    out["cycles_per_io_core"] = busy_per_s * hz / run_iops.where(run_iops > 0)
    if {"usr_cpu_pct", "sys_cpu_pct"} <= set(out):
        rusage = (out["usr_cpu_pct"] + out["sys_cpu_pct"]).where(doing)
        per_job = rusage.groupby(job).transform("first")  # a job's rows share its rusage
        first = ~pd.DataFrame({"r": run, "j": out[job_col] if job_col else 0}).duplicated()
        run_rusage = per_job.where(first & rusage.notna(), 0).groupby(run).transform("sum")
    else:
        per_job = run_rusage = pd.Series(math.nan, index=out.index)
    fio_cpu = out["fio_cpu_pct"] if "fio_cpu_pct" in out else run_rusage.where(run_rusage > 0)
    own = out["own_cpu_pct"] if "own_cpu_pct" in out else pd.Series(math.nan, index=out.index)
    whole = own.fillna(fio_cpu)  # % of one CPU: the tool's threads, else fio's rusage
    share = (per_job / run_rusage).where(run_rusage > 0, job_iops / run_iops.where(run_iops > 0))
    out["cycles_per_io"] = whole / 100.0 * share * hz / job_iops.where(job_iops > 0)
    out["cycles_per_io_source"] = [
        (OWN_SOURCE if f == f else TOOL_SOURCE) if o == o else RUSAGE_SOURCE if f == f else ""
        for o, f in zip(own, fio_cpu)
    ]
    if "perf_cycles" in out:
        # perf stat counted the pinned CPUs over its own window: IOs in it = IOPS x window
        ios = run_iops * out["perf_window_s"]
        out["cycles_per_io_perf"] = out["perf_cycles"] / ios.where(ios > 0)
        out["cycles_per_io_disagreement_pct"] = 100 * (out["cycles_per_io_perf"] / out["cycles_per_io_core"] - 1)
    return out
