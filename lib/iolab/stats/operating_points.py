"""Operating points of a sweep by rule, with no curve fitting: the smallest x whose
throughput reaches a fraction of the peak (95 %: where the curve has saturated), and the
largest x whose latency stays under a target (the deepest queue a latency budget allows).

    saturation_point(table.qd, table.iops)               # QD 16: the first within 5 % of the peak
    max_x_under(table.qd, table.clat_p99_us, 200)        # QD 8: the deepest with p99 <= 200 µs

Both average repeated x first. ``knee_interval.knee_with_interval`` takes the 95 %-of-peak rule
as the cross-check of its knee.

A knee rule can name a depth the curve has not saturated at: on a busy machine maximum power
(IOPS ÷ latency) picked QD 1-8 for steps that still gained +54 % and +92 % deeper. ``saturated``
walks up from a rule's depth while the next measured depth gains beyond its 95 % interval
(``repeat_stats.compare_values``: its low end above 0) and by more than 5 %, and says each move; ``placed`` says when
the repeats cannot place a point at all (its resamples spread over more than ``PLACE_SPAN``x).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .repeat_stats import compare_values

PLACE_SPAN = 4.0  # a point whose resamples spread over more than two doublings is not placed
SATURATED_GAIN_PCT = 5.0  # a next depth within 5 % is saturation (saturation_point's 95 % of the peak)


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


def saturated(samples: Mapping[float, Sequence[float]], x: float, name: str = "QD") -> tuple[float, str, str]:
    """From the depth ``x`` a rule chose (``samples``: depth -> its runs' IOPS), where the curve
    saturates: the first depth whose next measured depth gains no more than
    ``SATURATED_GAIN_PCT`` in the mean, or no gain beyond its 95 % interval
    (``repeat_stats.compare_values``). Returns that depth; why it moved up ("QD 16 still gained
    +54 % [+20 %, +90 %] over QD 8"); and, when the runs cannot tell, why ("" when they can): the
    next depth did more than 5 % more with a single run on a side, where no interval judges it."""
    depths = sorted(d for d, runs in samples.items() if len(runs))
    said = []
    while x in depths and depths.index(x) + 1 < len(depths):
        nxt = depths[depths.index(x) + 1]
        here, there = (sum(samples[d]) / len(samples[d]) for d in (x, nxt))
        gain = 100 * (there / here - 1) if here > 0 else float("nan")
        if not gain > SATURATED_GAIN_PCT:
            break  # saturated at x: the next depth adds 5 % or less
        if min(len(samples[x]), len(samples[nxt])) < 2:  # a gain over 5 % that no interval can judge
            doubt = (
                f"{name} {nxt:g} did {gain:+.0f} % over {name} {x:g} with {len(samples[x])} and "
                f"{len(samples[nxt])} run(s): no interval says whether {name} {x:g} is saturated"
            )
            return x, "; ".join(said), doubt
        c = compare_values(samples[nxt], samples[x], "iops", nxt, x)
        if not c.low_pct > 0:  # NaN (too noisy to bound) or 0 inside: no gain shown beyond the interval
            break
        said.append(
            f"{name} {nxt:g} still gained {c.ratio_pct:+.0f} % [{c.low_pct:+.0f} %, {c.high_pct:+.0f} %] "
            f"over {name} {x:g}"
        )
        x = nxt
    return x, "; ".join(said), ""


def placed(low: float | None, high: float | None, name: str = "QD") -> str:
    """ "" when a point's interval ``[low, high]`` places it (no wider than ``PLACE_SPAN``x), else
    why not ("the repeats cannot place it: its resamples chose QD 1-64")."""
    if low is None or high is None or pd.isna(low) or pd.isna(high) or low <= 0 or high <= PLACE_SPAN * low:
        return ""
    return f"the repeats cannot place it: its resamples chose {name} {low:g}-{high:g}"
