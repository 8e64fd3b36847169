"""Operating points of a sweep by rule, with no curve fitting: the smallest x whose
throughput reaches a fraction of the peak (95 %: where the curve has saturated), and the
largest x whose latency stays under a target (the deepest queue a latency budget allows).

    saturation_point(table.qd, table.iops)               # QD 16: the first within 5 % of the peak
    max_x_under(table.qd, table.clat_p99_us, 200)        # QD 8: the deepest with p99 <= 200 µs

Both average repeated x first. ``knee_interval.knee_with_interval`` takes the 95 %-of-peak rule
as the cross-check of its knee.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def saturation_point(x: Sequence[float], y: Sequence[float], fraction: float = 0.95) -> float | None:
    """Smallest x whose y reaches ``fraction`` of the maximum y (the rule-based knee:
    "the smallest queue depth reaching 95 % of max IOPS"). Never None on non-empty data."""
    frame = pd.DataFrame({"x": x, "y": y}).dropna().groupby("x")["y"].mean().sort_index()
    if frame.empty:
        return None
    reached = frame[frame >= fraction * frame.max()]
    return float(reached.index[0])


def max_x_under(x: Sequence[float], latency: Sequence[float], target: float) -> float | None:
    """Largest x whose latency stays at or under ``target`` (same unit), e.g. the largest
    queue depth whose p99 is under 200 µs. None if no x meets it."""
    frame = pd.DataFrame({"x": x, "lat": latency}).dropna().groupby("x")["lat"].mean()
    ok = frame[frame <= target]
    return float(ok.index.max()) if not ok.empty else None
