"""The queue-depth study of seed 000 ("Maxing Random Read IOPS on a Datacenter SSD with a
Single Desktop E-Core"): one job pinned to one CPU, ``iodepth`` swept."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..analysis import add_cycles_per_io
from ..sweep import new_sweep_dir, sweep
from ..target import Target
from ..validate import positive_ints


def qd_sweep(target: Target, queue_depths: Sequence[int], options: Mapping[str, Any], *,
             cpu: int = 0, repeats: int = 1, runs_dir: str | Path | None = None,
             allow_destructive: bool = False, **measure_kw) -> pd.DataFrame:
    """``options`` at each queue depth on ``cpu``; the table with ``qd``, ``repeat`` and
    ``cycles_per_io`` columns, sorted by depth. ``allow_destructive`` and ``measure_kw``
    go to ``iolab.runner.measure``."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    table = sweep({"iodepth": queue_depths}, target=target, base=options, cpus=[cpu],
                  repeats=repeats, runs_dir=runs_dir or new_sweep_dir("qd-knee"),
                  aliases={"iodepth": "qd"}, allow_destructive=allow_destructive, **measure_kw)
    return add_cycles_per_io(table).sort_values(["qd", "repeat"], ignore_index=True)
