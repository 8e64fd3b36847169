"""Samplers around real fio runs, cross-checked against fio's own CPU accounting."""
import os
import time

import pandas as pd

from conftest import QUICK
from iolab.runner import measure
from iolab.sampling import Sampler, cpu_utilisation, read_freq_mhz, read_proc_stat, summarise, trim


def test_sampler_sees_the_pinned_cpu_busy(scratch, runs):
    result = measure({**QUICK, "runtime": "2s", "ioengine": "io_uring", "iodepth": 8, "direct": 1},
                     scratch, cpus=[0], runs_dir=runs)
    stat = pd.read_csv(result.path / "samples_stat.csv")
    freq = pd.read_csv(result.path / "samples_freq.csv")
    assert set(stat.cpu) == {0} and len(stat) >= 4  # 0.5 s samples over 2 s
    assert stat.t_s.diff().dropna().iloc[:-1].between(0.3, 1.0).all()  # last: the closing sample
    assert freq.freq_source.iloc[0] in ("scaling_cur_freq", "proc_cpuinfo")
    row = result.table.iloc[0]
    fio_cpu = row.usr_cpu_pct + row.sys_cpu_pct
    # /proc/stat also counts irq/softirq and kernel work fio's rusage misses: it is at least
    # fio's own share (less sampling slack)
    assert row.cpu_busy_pct >= 0.8 * fio_cpu
    assert row.cpu_busy_pct <= 100


def test_a_spinning_cpu_reads_busy_and_its_busy_seconds_match_the_clock():
    """This thread spins on CPU 0 for 1 s while CPU 0 is sampled: /proc/stat must see it
    (nearly) 100 % busy, and the busy CPU seconds must match the trimmed window."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        s = Sampler([0], 0.05).start()
        end, x = time.monotonic() + 1.0, 0  # by the clock, not a count: >= 10 samples on any machine
        while time.monotonic() < end:
            x += 1
        samples = s.stop()
    finally:
        os.sched_setaffinity(0, before)
    assert len(samples.stat) >= 6
    util = cpu_utilisation(samples.stat)
    assert {"busy_pct", "usr_pct", "sys_pct", "irq_pct", "softirq_pct"} <= set(util.columns)
    assert util.busy_pct.dropna().between(0, 100).all()
    t = trim(samples.stat)
    assert t.t_s.min() >= samples.stat.t_s.min() and t.t_s.max() <= samples.stat.t_s.max()
    summary = summarise(samples)
    assert summary["cpu_busy_pct"] > 90, summary
    assert 0.5 < summary["window_s"] <= 1.05  # the spin lasted 1 s, trimmed 10 % each end
    assert 0.9 * summary["window_s"] <= summary["busy_cpu_s"] <= summary["window_s"] + 0.02  # one CPU
    assert summary["freq_source"] in ("scaling_cur_freq", "proc_cpuinfo")


def test_readers():
    assert set(read_proc_stat([0])[0]) >= {"user", "system", "irq", "softirq", "idle"}
    mhz, source = read_freq_mhz([0])
    assert mhz[0] > 0 and source in ("scaling_cur_freq", "proc_cpuinfo")
