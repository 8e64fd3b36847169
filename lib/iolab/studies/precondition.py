"""Bring a device to steady state before measuring it, by SNIA's rule.

An SSD fresh out of the box, or after a TRIM, reads never-written blocks from its mapping
table and writes into free erase blocks: both far faster than after the drive has been
filled and overwritten. SNIA's Solid State Storage Performance Test Specification (PTS,
Enterprise v1.1, section 2.1 and 3) measures only after a workload-independent
preconditioning (the whole capacity written twice, sequentially, 128 KiB) and a
workload-dependent one: rounds of the test workload until steady state, which is reached
when, over a measurement window of 5 rounds,

* the range of the rounds' figures is at most 20 % of their mean, and
* the best linear fit through them moves at most 10 % of the mean across the window.

``precondition(target, ...)`` does both and sets ``target.state`` (every later run records
it: the ``target_state`` column). It writes the whole device: like any write job, it is
refused on a device that holds data unless ``allow_destructive=True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError
from ..core.progress import bar
from ..core.validate import fio_time, fio_time_text
from ..machine.target import Target
from ..measure.options import MeasureOptions
from ..measure.runner import measure
from ..measure.sweep import new_sweep_dir
from ..runs.store import run_table
from ..stats.steady_state import SNIA_RANGE_PCT, SNIA_SLOPE_PCT, SNIA_WINDOW, steady_state

# SNIA's rule (the window, its range and slope limits) lives in iolab.stats.steady_state, shared with
# iolab.read.series (steady state within one run)
WINDOW, RANGE_PCT, SLOPE_PCT = SNIA_WINDOW, SNIA_RANGE_PCT, SNIA_SLOPE_PCT
FOREVER = fio_time(7 * 24 * 3600)  # a fill ends when the device is written, not by time


ROUND_JOB = {"rw": "randwrite", "bs": "4k", "iodepth": 32, "runtime": "60s"}  # SNIA's IOPS test, one round


def precondition(
    target: Target,
    *,
    runs_dir: str | Path | None = None,
    cpu: int = 0,
    job: Mapping[str, Any] | None = None,
    max_rounds: int = 25,
    window: int = WINDOW,
    fill_passes: int = 2,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """SNIA's preconditioning of ``target`` (module docstring): ``fill_passes`` sequential
    128 KiB writes of the whole target (0: skip), then rounds of ``job`` (fio options over
    ``ROUND_JOB``: 4 KiB random writes at QD 32 for 60 s; ``runtime`` may be seconds) until
    ``steady_state`` holds or ``max_rounds`` ran. Every run is stored in ``runs_dir`` (a new
    ``precondition-<time>`` folder under data/runs by default);
    ``how``: how each is measured (``MeasureOptions``). Returns one row per round (``round``,
    ``iops``, ``steady``) and sets ``target.state`` to what was reached."""
    job = {**ROUND_JOB, **(job or {})}
    job["runtime"] = fio_time_text(job["runtime"])
    rw, bs, iodepth = job["rw"], job["bs"], job["iodepth"]
    if max_rounds < window:
        raise InputError(
            f"max_rounds={max_rounds} is fewer than the window of {window} rounds: steady state could never be judged"
        )
    common = dict(cpus=[cpu], runs_dir=runs_dir or new_sweep_dir("precondition"), how=how)
    if fill_passes:
        measure(
            {
                "rw": "write",
                "bs": "128k",
                "iodepth": iodepth,
                "loops": fill_passes,
                "time_based": 0,
                "runtime": FOREVER,
            },
            target,
            label="precondition-fill",
            **common,
        )
    rounds: list[dict[str, Any]] = []
    iops: list[float] = []
    verdict = (False, "")
    for i in bar(range(max_rounds), "preconditioning", unit="round"):
        run = measure(
            job,
            target,
            swept={"round": i},
            label=f"precondition-r{i}",
            **common,
        )
        rows = run_table(run.path)
        iops.append(float(rows.loc[rows["direction"] != "none", "iops"].sum()))
        verdict = steady_state(iops, window)
        rounds.append({"round": i, "iops": iops[-1], "steady": verdict[0], "run_id": rows["run_id"].iloc[0]})
        if verdict[0]:
            break
    what = f"{len(iops)} rounds of {bs} {rw} at QD{iodepth}, {job['runtime']} each"
    fill = f"written whole {fill_passes}x sequentially (128k), then " if fill_passes else ""
    target.state = (
        f"SNIA steady state: {fill}{what} ({verdict[1]})"
        if verdict[0]
        else f"preconditioned but NOT in steady state: {fill}{what} ({verdict[1]})"
    )
    return pd.DataFrame(rounds)
