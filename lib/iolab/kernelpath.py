"""The kernel I/O path experiments of seed 001 ("11M IOPS with 10 SSDs"): direct vs
buffered, readahead, I/O schedulers, large blocks, many devices.

Every knob change goes through ``iolab.system.temporary_value`` (old value recorded, put
back on success, error and Ctrl-C); the page cache is dropped through
``/proc/sys/vm/drop_caches`` before each buffered run. Each function returns the tidy
table of its runs with the changed setting as a column.
"""
from __future__ import annotations

import contextlib
import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .analysis import add_cycles_per_io
from .progress import bar
from .runner import measure
from .store import load_runs
from .system import drop_caches, queue_knobs, temporary_value
from .target import Target, loop_device


def _queue(target: Target, knob: str) -> Path:
    if not target.device or not Path(f"/sys/block/{target.device}/queue/{knob}").exists():
        raise FileNotFoundError(f"{target.describe()} has no /sys/block/<dev>/queue/{knob}: "
                                "use a block device (or a loop device) target")
    return Path(f"/sys/block/{target.device}/queue/{knob}")


def _run(options, target, cpu, runs_dir, swept, drop: bool) -> None:
    if drop:
        drop_caches()
    measure(options, target, cpus=[cpu], runs_dir=runs_dir, swept=swept,
            label="-".join(f"{k}{v}" for k, v in swept.items()))


def direct_vs_buffered(target: Target, job: dict[str, Any], *, cpu: int = 0, runs_dir: Path,
                       repeats: int = 1) -> pd.DataFrame:
    """The same job with O_DIRECT and through the page cache (cache dropped before each)."""
    for rep, direct in bar(itertools.product(range(repeats), (1, 0)), "direct vs buffered", total=2 * repeats):
        _run({**job, "direct": direct}, target, cpu, runs_dir,
             {"mode": "direct" if direct else "buffered", "repeat": rep}, drop=True)
    return add_cycles_per_io(load_runs(runs_dir))


def knob_sweep(target: Target, knob: str, values: Sequence[Any], job: dict[str, Any], *, cpu: int = 0,
               runs_dir: Path, drop: bool = False, repeats: int = 1) -> pd.DataFrame:
    """The job once per value of ``/sys/block/<dev>/queue/<knob>`` (e.g. scheduler,
    read_ahead_kb, nomerges), each value set temporarily and the old one restored."""
    path = _queue(target, knob)
    for rep, value in bar(itertools.product(range(repeats), values), knob, total=repeats * len(values)):
        with temporary_value(path, str(value)):
            _run(job, target, cpu, runs_dir, {knob: value, "repeat": rep}, drop)
    return add_cycles_per_io(load_runs(runs_dir))


def schedulers(target: Target) -> list[str]:
    """The I/O schedulers the target's queue offers (``none``, ``mq-deadline``, ...)."""
    return queue_knobs(target.device).get("schedulers_available", [])


def block_sizes(target: Target, sizes: Sequence[str], job: dict[str, Any], *, cpu: int = 0,
                runs_dir: Path) -> pd.DataFrame:
    """Throughput from small to large blocks, with the request size the device actually saw
    (``dev_read_req_kib``, from /sys/block/<dev>/stat deltas)."""
    for bs in bar(sizes, "block sizes"):
        _run({**job, "bs": bs}, target, cpu, runs_dir, {"bs": bs}, drop=False)
    table = add_cycles_per_io(load_runs(runs_dir))
    from .target import parse_size
    table["bs_bytes"] = table["bs"].map(parse_size)
    table["bw_mib_s"] = table["bw_bytes_s"] / 2**20
    return table.sort_values("bs_bytes", ignore_index=True)


def many_devices(n: int, size: str, job: dict[str, Any], *, cpus: Sequence[int], runs_dir: Path,
                 targets: Sequence[Target] | None = None) -> pd.DataFrame:
    """One fio process per device, all at once (seed 001 ran one fio per SSD because a single
    fio stopped scaling). Without ``targets``, ``n`` tmpfs-backed loop devices are made and
    detached afterwards. Device i runs on ``cpus[i % len(cpus)]``."""
    with contextlib.ExitStack() as stack:
        devs = list(targets) if targets else [stack.enter_context(loop_device(size)) for _ in range(n)]
        with ThreadPoolExecutor(max_workers=len(devs)) as pool:
            futures = [pool.submit(measure, job, d, cpus=[cpus[i % len(cpus)]], runs_dir=runs_dir,
                                   swept={"device": d.device or str(d.path), "devices": len(devs)},
                                   label=f"dev{i}")
                       for i, d in enumerate(devs)]
            for f in futures:
                f.result()
    return add_cycles_per_io(load_runs(runs_dir))


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Per-device rows plus their sum: total IOPS and bandwidth, mean latency weighted by IOPS."""
    per = table.groupby("device", as_index=False).agg(iops=("iops", "sum"), bw_bytes_s=("bw_bytes_s", "sum"),
                                                      clat_mean_us=("clat_mean_us", "mean"),
                                                      cpu_busy_pct=("cpu_busy_pct", "mean"))
    total = {"device": "all devices", "iops": per.iops.sum(), "bw_bytes_s": per.bw_bytes_s.sum(),
             "clat_mean_us": (per.clat_mean_us * per.iops).sum() / per.iops.sum(),
             "cpu_busy_pct": per.cpu_busy_pct.mean()}
    return pd.concat([per, pd.DataFrame([total])], ignore_index=True)
