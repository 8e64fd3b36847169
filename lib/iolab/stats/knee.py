"""The knee of a saturating curve (IOPS vs queue depth), by two methods: Kneedle's bend
(:func:`find_knee`) and Kleinrock's maximum power (:func:`power_knee`).

    k = knee.find_knee(table.qd, table.iops, prominent=True)   # Knee(x=16, y=..., reason='')
    k = knee.power_knee(table.qd, table.iops)                   # the QD of maximum IOPS²/QD

Each returns a :class:`Knee` that carries its intermediates and, when it finds nothing, a
reason. The knee of repeated sweeps with a bootstrap interval is ``knee_interval``'s; which
method to report for a sweep, ``knee_verdict``'s; the rule-based points (95 % of the peak, a
latency target) are ``operating_points``'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import InputError


@dataclass
class Knee:
    """Result of :func:`find_knee`. ``x is None`` means no knee, with ``reason`` saying why.
    ``all_x`` are every knee Kneedle met (in the order it met them) and ``prominence`` their
    difference-curve heights (see :func:`find_knee`)."""

    x: float | None
    y: float | None
    method: str
    reason: str = ""
    log2_x: bool = True
    x_used: list[float] = field(default_factory=list)
    y_used: list[float] = field(default_factory=list)
    difference: list[float] = field(default_factory=list)
    all_x: list[float] = field(default_factory=list)
    prominence: list[float] = field(default_factory=list)


NEAR_TOP = 0.9  # prominent=True: knees within 90 % of the most prominent one count as ties


def find_knee(
    x: Sequence[float],
    y: Sequence[float],
    *,
    log2_x: bool = True,
    S: float = 1.0,
    curve: str = "concave",
    direction: str = "increasing",
    online: bool = False,
    prominent: bool = False,
) -> Knee:
    """Knee of a saturating curve (IOPS vs queue depth) by Kneedle.

    Kneedle: V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a
    Haystack: Detecting Knee Points in System Behavior", ICDCS Workshops 2011; via the
    ``kneed`` package (interp1d, so the knee is one of the sampled x). Queue depths are
    geometric, so x is taken as log2(x) by default (the knee is returned in the original
    units). Repeated x are averaged first (``knee_interval.knee_with_interval`` takes their median and
    resamples them). "No knee" is a valid answer: ``Knee.x is None``, also for a curve that
    does not go the way ``direction`` says (an "increasing" curve whose y never rises above
    its first value: Kneedle would name a point of a falling curve).
    x <= 0 on the log2 axis is refused (InputError): log2 is undefined there.

    Which knee, when Kneedle meets several: ``online=False`` (the default, kneed's offline
    mode) returns the first it meets; ``online=True`` keeps the last, so one noisy dip at the
    deepest QDs can move it there. ``prominent=True`` (what ``knee_interval.knee_with_interval``, the
    notebook and ``iolab knee`` use) returns the most prominent: the knee where the
    normalised curve stands highest above the straight line from first to last point (its
    difference-curve value, Kneedle's own measure); of knees within ``NEAR_TOP`` (90 %) of
    the highest, the smallest x; a "knee" at height <= 0 (kneed's edge case at the first
    point, on a curve that starts below that line) is never taken.
    """
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    frame = frame.groupby("x", as_index=False)["y"].mean().sort_values("x")
    if log2_x:
        refuse_nonpositive(frame["x"])
    return kneedle_points(
        frame["x"].to_numpy(),
        frame["y"].to_numpy(),
        log2_x=log2_x,
        S=S,
        curve=curve,
        direction=direction,
        online=online,
        prominent=prominent,
    )


def kneedle_points(
    xv: np.ndarray, ys: np.ndarray, *, log2_x: bool, S: float, curve: str, direction: str, online: bool, prominent: bool
) -> Knee:
    """:func:`find_knee` on distinct sorted x (> 0 on log2) and their y: no pandas, so the
    bootstrap of ``knee_interval.knee_with_interval`` can call it a thousand times."""
    from kneed import KneeLocator  # kneed loads matplotlib: only when a knee is asked for

    pick = "most prominent" if prominent else "last" if online else "first"
    method = f"kneedle (kneed, S={S}, {curve}/{direction}{', log2 x' if log2_x else ''}, {pick} knee)"
    xs_list, ys_list = [float(v) for v in xv], [float(v) for v in ys]
    if len(xv) < 3:
        return Knee(None, None, method, f"need at least 3 distinct x values, got {len(xv)}", log2_x)
    xs = np.log2(xv) if log2_x else xv
    if np.ptp(ys) == 0:
        return Knee(None, None, method, "y is flat: no knee", log2_x, xs_list, ys_list)
    never = ys.max() <= ys[0] if direction == "increasing" else ys.min() >= ys[0]
    if never:
        way = "rises above" if direction == "increasing" else "falls below"
        return Knee(
            None,
            None,
            method,
            f"y never {way} its value at the first x ({ys[0]:g} at x="
            f"{xv[0]:g}; {ys[-1]:g} at x={xv[-1]:g}): the curve is not "
            f"{direction}, so it has no knee",
            log2_x,
            xs_list,
            ys_list,
        )
    kl = KneeLocator(
        xs, ys, S=S, curve=curve, direction=direction, online=online or prominent, interp_method="interp1d"
    )
    diff = [float(v) for v in getattr(kl, "y_difference", [])]
    met = [float(k) for k in kl.all_knees] if kl.knee is not None else []
    heights = [float(kl.y_difference[np.argmin(np.abs(kl.x_difference - nk))]) for nk in kl.all_norm_knees]
    all_x = [_sample(xv, 2**k if log2_x else k) for k in met]
    chosen = kl.knee
    if prominent and met:
        top = max(heights)
        near = [k for k, h in zip(met, heights) if h > 0 and h >= NEAR_TOP * top]
        chosen = min(near) if near else None
        if chosen is None:
            return Knee(
                None,
                None,
                method,
                "its only candidate is the first point, where the curve does not rise above "
                "the straight line from first to last point: no bend",
                log2_x,
                xs_list,
                ys_list,
                diff,
                all_x,
                heights,
            )
    if chosen is None:
        return Knee(
            None,
            None,
            method,
            "the curve stays too close to the straight line from its first to its last point "
            "for Kneedle's threshold: too straight, or too few points",
            log2_x,
            xs_list,
            ys_list,
            diff,
        )
    knee_x = _sample(xv, 2**chosen if log2_x else chosen)
    knee_y = float(ys[np.flatnonzero(xv == knee_x)[0]])
    return Knee(knee_x, knee_y, method, "", log2_x, xs_list, ys_list, diff, all_x, heights)


def refuse_nonpositive(x: pd.Series) -> None:
    """InputError naming the x <= 0 (log2 is undefined there)."""
    if (x <= 0).any():
        bad = ", ".join(f"{v:g}" for v in sorted(set(x[x <= 0])))
        raise InputError(
            f"x = {bad} cannot go on a log2 axis (log2 needs x > 0); drop those rows, "
            "or use a linear x axis (--linear in `iolab knee`, log2_x=False in Python)"
        )


def _sample(xv: np.ndarray, value: float) -> float:
    """The sampled x nearest ``value`` (kneed's knee, back from log2, is one of them)."""
    return float(xv[np.argmin(np.abs(xv - value))])


def power_knee(x: Sequence[float], y: Sequence[float]) -> Knee:
    """The queue depth of maximum power: throughput ÷ latency, the optimal operating point
    of a closed queue (L. Kleinrock, "Power and deterministic rules of thumb for
    probabilistic problems in computer communications", ICC 1979; R. Jain, "The Art of
    Computer Systems Performance Analysis", 1991, the "knee" of the throughput curve).

    With latency from Little's law (mean latency = QD ÷ IOPS), power = IOPS² ÷ QD, so only
    IOPS and QD are needed. Below the knee IOPS grow in proportion to depth and power
    grows; past it IOPS stay flat while latency grows with depth and power falls. Its
    argmax is a single comparison of every point, so a creeping plateau or one noisy
    deep point cannot move it far (Kneedle's bend can jump from QD 16 to 64 on such a
    curve). Repeated x are averaged; ``Knee.difference`` holds each x's power
    normalised to the largest. x <= 0 is refused; a curve with no positive y has no knee."""
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    frame = frame.groupby("x", as_index=False)["y"].mean().sort_values("x")
    refuse_nonpositive(frame["x"])
    return power_points(frame["x"].to_numpy(), frame["y"].to_numpy())


POWER_METHOD = "Kleinrock power (max of IOPS²/QD: throughput ÷ latency by Little's law)"


def power_points(xv: np.ndarray, ys: np.ndarray) -> Knee:
    """:func:`power_knee` on distinct sorted x > 0 (no pandas: the bootstrap calls it)."""
    xs_list, ys_list = [float(v) for v in xv], [float(v) for v in ys]
    if len(xv) < 2:
        return Knee(
            None, None, POWER_METHOD, f"need at least 2 distinct x values, got {len(xv)}", False, xs_list, ys_list
        )
    if not (ys > 0).any():
        return Knee(None, None, POWER_METHOD, "no positive y: nothing was done", False, xs_list, ys_list)
    power = np.where(ys > 0, ys, 0.0) ** 2 / xv
    i = int(np.argmax(power))
    return Knee(
        float(xv[i]),
        float(ys[i]),
        POWER_METHOD,
        "",
        False,
        xs_list,
        ys_list,
        [float(v) for v in power / power[i]],
        [float(xv[i])],
        [1.0],
    )


KNEE_METHODS = ("kneedle", "power")
