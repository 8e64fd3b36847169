"""The kernel I/O path experiments of seed 001 ("11M IOPS with 10 SSDs"): direct vs
buffered, readahead, I/O schedulers, large blocks, many devices.

Each one but ``many_devices`` is a generic sweep (``iolab.measure.sweep``): settings checked before
the first run, resume into the same ``runs_dir`` (a new folder under data/runs named for
the study when none is given), only its own runs returned. Knobs are set
through ``iolab.machine.knobs`` (old value recorded, put back on success, error, Ctrl-C and
SIGTERM); the page cache is dropped (``knobs.drop_caches``) before each buffered run.
Each function returns the tidy table of its runs with the changed setting as a column, and
gives ``how`` (``iolab.measure.options.MeasureOptions``: allow_destructive, profile, ...) to every run.

The sweeps run their repeats in shuffled rounds after one discarded warm-up run
(``ROUNDS``: step order and first touch must not make a difference by themselves); pass
``rounds=`` (``iolab.measure.campaign.Rounds``: repeats, order, seed, warmup) to choose otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError
from ..core.validate import parse_size
from ..machine import knobs
from ..machine.target import Target, loop_device
from ..measure import runner
from ..measure.campaign import Rounds
from ..measure.options import MeasureOptions
from ..measure.sweep import Grid, new_sweep_dir, sweep
from ..runs.runcache import load_runs
from ..stats.cycles import add_cycles_per_io

MODES = {1: "direct", 0: "buffered"}
ROUNDS = {"order": "random", "warmup": "run"}


def direct_vs_buffered(
    target: Target,
    job: dict[str, Any],
    *,
    cpu: int = 0,
    runs_dir: str | Path | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The same job with O_DIRECT and through the page cache (cache dropped before each
    run); ``mode`` is ``direct`` or ``buffered``."""
    table = sweep(
        Grid({"direct": [1, 0]}, base=job, aliases={"direct": "mode"}),
        target=target,
        cpus=[cpu],
        rounds=Rounds.of(rounds, **ROUNDS),
        runs_dir=runs_dir or new_sweep_dir("direct-buffered"),
        how=MeasureOptions.of(how, drop_caches=True),
        progress="direct vs buffered",
    )
    table["mode"] = table["mode"].map(MODES)
    return add_cycles_per_io(table)


def knob_sweep(
    target: Target,
    knob: str,
    values: Sequence[Any],
    job: dict[str, Any],
    *,
    cpu: int = 0,
    runs_dir: str | Path | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The job once per value of a knob (``iolab.machine.knobs``: scheduler, read_ahead_kb,
    nomerges, ...), each value set for its runs and the old one restored; with
    ``how.drop_caches`` the page cache is dropped before each run."""
    if knob not in knobs.KNOBS:
        raise InputError(f"{knob!r} is not a knob iolab can set: choose one of {', '.join(knobs.KNOBS)}")
    return add_cycles_per_io(
        sweep(
            Grid({knob: list(values)}, base=job),
            target=target,
            cpus=[cpu],
            rounds=Rounds.of(rounds, **ROUNDS),
            runs_dir=runs_dir or new_sweep_dir(knob),
            how=how,
            progress=knob,
        )
    )


def schedulers(target: Target) -> list[str]:
    """The I/O schedulers the target's queue offers (``none``, ``mq-deadline``, ...)."""
    return knobs.get("scheduler").choices(target)


def block_sizes(
    target: Target,
    sizes: Sequence[str],
    job: dict[str, Any],
    *,
    cpu: int = 0,
    runs_dir: str | Path | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Throughput from small to large blocks, with the request size the device actually saw
    (``dev_read_req_kib``, from /sys/block/<dev>/stat deltas)."""
    table = add_cycles_per_io(
        sweep(
            Grid({"bs": list(sizes)}, base=job),
            target=target,
            cpus=[cpu],
            rounds=Rounds.of(rounds, **ROUNDS),
            runs_dir=runs_dir or new_sweep_dir("block-size"),
            how=how,
            progress="block sizes",
        )
    )
    table["bs_bytes"] = table["bs"].map(parse_size)
    table["bw_mib_s"] = table["bw_bytes_s"] / 2**20
    return table.sort_values("bs_bytes", ignore_index=True)


def many_devices(
    n: int,
    size: str,
    job: dict[str, Any],
    *,
    cpus: Sequence[int],
    runs_dir: str | Path | None = None,
    targets: Sequence[Target] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One fio process per device, all at once (seed 001 ran one fio per SSD because a single
    fio stopped scaling). Without ``targets``, ``n`` tmpfs-backed loop devices are made and
    detached afterwards. Device i runs on ``cpus[i % len(cpus)]``. Runs at the same time,
    so not a sweep: no resume; the table holds these runs only."""
    runs_dir = runs_dir or new_sweep_dir("many-devices")  # once: every device's run in one folder
    with contextlib.ExitStack() as stack:
        devs = list(targets) if targets else [stack.enter_context(loop_device(size)) for _ in range(n)]
        with ThreadPoolExecutor(max_workers=len(devs)) as pool:
            futures = [
                pool.submit(
                    runner.measure,
                    job,
                    d,
                    cpus=[cpus[i % len(cpus)]],
                    runs_dir=runs_dir,
                    swept={"device": d.device or str(d.path), "devices": len(devs)},
                    label=f"dev{i}",
                    how=how,
                )
                for i, d in enumerate(devs)
            ]
            paths = [f.result().path for f in futures]
    return add_cycles_per_io(load_runs(paths))


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Per-device rows plus their sum: total IOPS and bandwidth (``bw_mib_s``, MiB/s), mean
    latency weighted by IOPS."""
    per = (
        table.assign(bw_mib_s=table["bw_bytes_s"] / 2**20)
        .groupby("device", as_index=False)
        .agg(
            iops=("iops", "sum"),
            bw_mib_s=("bw_mib_s", "sum"),
            clat_mean_us=("clat_mean_us", "mean"),
            cpu_busy_pct=("cpu_busy_pct", "mean"),
        )
    )
    total = {
        "device": "all devices",
        "iops": per.iops.sum(),
        "bw_mib_s": per.bw_mib_s.sum(),
        "clat_mean_us": (per.clat_mean_us * per.iops).sum() / per.iops.sum(),
        "cpu_busy_pct": per.cpu_busy_pct.mean(),
    }
    return pd.concat([per, pd.DataFrame([total])], ignore_index=True)
