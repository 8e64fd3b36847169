"""The queue-depth study of seed 000 ("Maxing Random Read IOPS on a Datacenter SSD with a
Single Desktop E-Core"): one job pinned to one CPU, ``iodepth`` swept — every depth of the
grid (``qd_sweep``), or only where the knee is (``knee_search``, about half the runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.progress import bar
from ..core.validate import positive_ints
from ..machine.target import Target
from ..measure.campaign import Rounds
from ..measure.options import MeasureOptions
from ..measure.sweep import Grid, new_sweep_dir, sweep, warmup_for
from ..stats import repeat_stats
from ..stats.cycles import add_cycles_per_io
from ..stats.knee_planner import SearchResult, final_estimate, next_depths


def qd_sweep(
    target: Target,
    queue_depths: Sequence[int],
    options: Mapping[str, Any],
    *,
    cpu: int = 0,
    rounds: Rounds | Mapping[str, Any] | None = None,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """``options`` at each queue depth on ``cpu``; the table with ``qd``, ``repeat`` and
    ``cycles_per_io`` columns, sorted by depth. ``rounds``: repeats (default 1) in rounds
    (default ``interleaved``) after one discarded warm-up run (default ``"run"``;
    ``iolab.measure.campaign.Rounds``); ``how``: how each run is measured (``MeasureOptions``)."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    table = sweep(
        Grid({"iodepth": queue_depths}, base=options, aliases={"iodepth": "qd"}),
        target=target,
        cpus=[cpu],
        rounds=Rounds.of(rounds, order="interleaved", warmup="run"),
        runs_dir=runs_dir or new_sweep_dir("qd-knee"),
        how=how,
    )
    return add_cycles_per_io(table).sort_values(["qd", "repeat"], ignore_index=True)


KNEE_METHOD = "power"  # what the knee search looks for (knee_search's docstring)


def knee_search(
    target: Target,
    queue_depths: Sequence[int],
    options: Mapping[str, Any],
    *,
    cpu: int = 0,
    rounds: Rounds | Mapping[str, Any] | None = None,
    share: float = 0.5,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> SearchResult:
    """The knee of ``qd_sweep(queue_depths, repeats)`` with at most ``share`` of its runs:
    the adaptive search of ``iolab.stats.knee_planner``, one run at a time, each a stored run like
    the sweep's (a re-run into the same ``runs_dir`` replays the same search from them).
    ``rounds``: ``repeats`` (default 3) the grid would have, the warm-up (default "run") and
    the ``seed`` of the search and of its bootstrap (1,000 resamples); ``how``: how each run is
    measured. Each round's runs go through the one campaign loop (``iolab.measure.sweep``).

    The knee is Kleinrock's power knee (``knee_interval.knee_with_interval``, method "power":
    maximum throughput ÷ latency), not Kneedle's bend: that is too shaky to be searched for
    on a noisy host — on this project's VM, two full grids of the same loop-device sweep
    named the same Kneedle knee (within one doubling) in fewer than half the cases, and the
    same power knee in 99 %. The result's ``table`` holds every run made."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    rounds = Rounds.of(rounds, repeats=3, warmup="run")
    repeats, seed, warm = rounds.repeats, rounds.seed, rounds.warmup_kind()
    budget = max(3, math.floor(share * len(queue_depths) * repeats))
    runs_dir = Path(runs_dir or new_sweep_dir("qd-search"))
    samples: dict[float, list[float]] = {}
    frames, steps = [], []
    progress = bar(None, "knee search", total=budget)
    try:
        while (step := next_depths(samples, queue_depths, budget=budget, seed=seed, method=KNEE_METHOD)).depths:
            steps.append(step)
            for qd in step.depths:
                have = samples.setdefault(qd, [])
                table = sweep(
                    Grid({"iodepth": [int(qd)]}, base=options, aliases={"iodepth": "qd"}),
                    target=target,
                    cpus=[cpu],
                    rounds=Rounds(repeats=len(have) + 1, warmup=warmup_for(warm, first=not frames)),
                    runs_dir=runs_dir,
                    how=how,
                    progress=None,
                )
                new = table[table["repeat"] == len(have)]
                have.append(float(repeat_stats.per_run(new)["iops"].sum()))
                frames.append(new)
                progress.update(1)
        steps.append(step)
    finally:
        progress.close()
    table = add_cycles_per_io(pd.concat(frames, ignore_index=True)).sort_values(["qd", "repeat"], ignore_index=True)
    return SearchResult(
        final_estimate(samples, seed=seed, method=KNEE_METHOD), len(frames), len(queue_depths) * repeats, steps, table
    )
