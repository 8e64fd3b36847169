"""CPU cycles spent per IO: busy CPU seconds × frequency ÷ IOs, for one figure and for a
run table with sampler columns."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd


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
    """Add ``cycles_per_io`` to a run table that has sampler columns (cpu_busy_pct,
    cpus_sampled, cpu_freq_mhz, freq_source) and fio columns (iops).

    busy CPU·s per second = cpu_busy_pct/100 x cpus_sampled, so
    cycles/IO = busy fraction x CPUs x f / IOPS — the same as busy_s x f / IOs.
    Runs without samplers (client/server runs on other hosts) get NaN."""
    out = table.copy()
    for col in ("cpu_busy_pct", "cpus_sampled", "cpu_freq_mhz"):
        if col not in out:
            out[col] = math.nan
    busy_per_s = out["cpu_busy_pct"] / 100.0 * out["cpus_sampled"]
    out["cycles_per_io"] = busy_per_s * out["cpu_freq_mhz"] * 1e6 / out["iops"].where(out["iops"] > 0)
    if "perf_cycles" in out:
        # perf stat counted over its own window: IOs in it = IOPS x window
        ios = out["iops"] * out["perf_window_s"]
        out["cycles_per_io_perf"] = out["perf_cycles"] / ios.where(ios > 0)
        out["cycles_per_io_disagreement_pct"] = 100 * (out["cycles_per_io_perf"] / out["cycles_per_io"] - 1)
    return out
