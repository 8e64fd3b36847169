"""The queue-depth study of seed 000 ("Maxing Random Read IOPS on a Datacenter SSD with a
Single Desktop E-Core"): one job pinned to one CPU, ``iodepth`` swept — every depth of the
grid (``qd_sweep``), or only where the knee is (``knee_search``, about half the runs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..stats import compare
from ..stats.analysis import add_cycles_per_io
from ..stats.knee_search import SearchResult, final_estimate, next_depths
from ..core.progress import bar
from ..measure.sweep import new_sweep_dir, sweep, warmup_for, warmup_kind
from ..machine.target import Target
from ..core.validate import positive_ints


def qd_sweep(
    target: Target,
    queue_depths: Sequence[int],
    options: Mapping[str, Any],
    *,
    cpu: int = 0,
    repeats: int = 1,
    runs_dir: str | Path | None = None,
    allow_destructive: bool = False,
    order: str = "interleaved",
    warmup: Any = "run",
    **measure_kw,
) -> pd.DataFrame:
    """``options`` at each queue depth on ``cpu``; the table with ``qd``, ``repeat`` and
    ``cycles_per_io`` columns, sorted by depth. The repeats run in rounds (``order``) after
    one discarded warm-up run (``warmup``; see ``iolab.measure.sweep.sweep``). ``allow_destructive``
    and ``measure_kw`` go to ``iolab.measure.runner.measure``."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    table = sweep(
        {"iodepth": queue_depths},
        target=target,
        base=options,
        cpus=[cpu],
        repeats=repeats,
        runs_dir=runs_dir or new_sweep_dir("qd-knee"),
        aliases={"iodepth": "qd"},
        allow_destructive=allow_destructive,
        order=order,
        warmup=warmup,
        **measure_kw,
    )
    return add_cycles_per_io(table).sort_values(["qd", "repeat"], ignore_index=True)


def knee_search(
    target: Target,
    queue_depths: Sequence[int],
    options: Mapping[str, Any],
    *,
    cpu: int = 0,
    repeats: int = 3,
    share: float = 0.5,
    method: str = "power",
    runs_dir: str | Path | None = None,
    warmup: Any = "run",
    n_boot: int = 1000,
    seed: int = 0,
    allow_destructive: bool = False,
    **measure_kw,
) -> SearchResult:
    """The knee of ``qd_sweep(queue_depths, repeats)`` with at most ``share`` of its runs:
    the adaptive search of ``iolab.stats.knee_search``, one run at a time, each a stored run like
    the sweep's (a re-run into the same ``runs_dir`` replays the same search from them).

    ``method`` is the knee's (``analysis.knee_with_interval``). The default is "power"
    (Kleinrock's maximum throughput ÷ latency): Kneedle's bend is too shaky to be searched
    for on a noisy host — on this project's VM, two full grids of the same loop-device sweep
    named the same Kneedle knee (within one doubling) in fewer than half the cases, and the
    same power knee in 99 %. The result's ``table`` holds every run made."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    warm = warmup_kind(warmup)
    budget = max(3, math.floor(share * len(queue_depths) * repeats))
    runs_dir = Path(runs_dir or new_sweep_dir("qd-search"))
    samples: dict[float, list[float]] = {}
    frames, steps = [], []
    progress = bar(None, "knee search", total=budget)
    try:
        while (step := next_depths(samples, queue_depths, budget=budget, seed=seed, method=method)).depths:
            steps.append(step)
            for qd in step.depths:
                have = samples.setdefault(qd, [])
                table = sweep(
                    {"iodepth": [int(qd)]},
                    target=target,
                    base=options,
                    cpus=[cpu],
                    repeats=len(have) + 1,
                    runs_dir=runs_dir,
                    aliases={"iodepth": "qd"},
                    allow_destructive=allow_destructive,
                    progress=None,
                    warmup=warmup_for(warm, first=not frames),
                    **measure_kw,
                )
                new = table[table["repeat"] == len(have)]
                have.append(float(compare.per_run(new)["iops"].sum()))
                frames.append(new)
                progress.update(1)
        steps.append(step)
    finally:
        progress.close()
    table = add_cycles_per_io(pd.concat(frames, ignore_index=True)).sort_values(["qd", "repeat"], ignore_index=True)
    return SearchResult(
        final_estimate(samples, n_boot, seed, method), len(frames), len(queue_depths) * repeats, steps, table
    )
