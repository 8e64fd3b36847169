"""Steady state by SNIA's rule (Solid State Storage Performance Test Specification,
Enterprise v1.1): the last figures of a series lie within a range and a slope of their mean.
``timeline.find_steady`` slides it over a run's intervals; ``studies.precondition`` applies
it to rounds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError

SNIA_WINDOW = 5  # rounds in SNIA's measurement window
SNIA_RANGE_PCT = 20.0  # max - min of the window, % of its mean
SNIA_SLOPE_PCT = 10.0  # excursion of the best linear fit across the window, % of its mean


def steady_state(
    values: Sequence[float],
    window: int = SNIA_WINDOW,
    range_pct: float = SNIA_RANGE_PCT,
    slope_pct: float = SNIA_SLOPE_PCT,
    unit: str = "rounds",
) -> tuple[bool, str]:
    """Whether the last ``window`` figures (IOPS of rounds, or of intervals of a run: ``unit``)
    are in steady state by SNIA's Solid State Storage Performance Test Specification
    (Enterprise v1.1, sections 2.1 and 3): their range is at most ``range_pct`` % of their
    mean and the best linear fit through them moves at most ``slope_pct`` % of the mean
    across the window. Returns the verdict and the figures that decide it in words. Fewer
    than ``window`` figures: not yet. Used by ``studies.precondition`` and ``iolab.read.series``."""
    if window < 2:
        raise InputError(f"window={window}: SNIA's rule needs at least 2 {unit} (it uses 5)")
    y = np.asarray(values, float)[-window:]
    if len(y) < window:
        return False, f"{len(y)} of {window} {unit} so far"
    mean = y.mean()
    spread = 100 * (y.max() - y.min()) / mean if mean else float("inf")
    slope = np.polyfit(np.arange(window), y, 1)[0]
    excursion = 100 * abs(slope) * (window - 1) / mean if mean else float("inf")
    ok = spread <= range_pct and excursion <= slope_pct
    return ok, (
        f"last {window} {unit}: range {spread:.0f} % of the mean (limit {range_pct:g} %), "
        f"linear-fit excursion {excursion:.0f} % (limit {slope_pct:g} %)"
    )
