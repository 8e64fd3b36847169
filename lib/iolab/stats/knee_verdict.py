"""The one knee to report for a queue-depth sweep, and why that method: Kneedle's bend when
the curve and the repeats support it, else Kleinrock's maximum power (:func:`trusted_knee`).

    verdict = knee_verdict.trusted_knee(table.qd, table.iops)
    print(verdict.line())   # 'knee QD 8 by maximum power (IOPS²/QD; ...): Kneedle found no knee (...)'

Both estimates are ``knee_interval.knee_with_interval``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.readable import si_number
from .knee_interval import KneeEstimate, knee_with_interval
from .operating_points import placed, saturated


@dataclass
class KneeVerdict:
    """Result of :func:`trusted_knee`: the one knee iolab reports for a sweep. ``estimate`` is
    the trusted method's :class:`KneeEstimate` (what to plot and record), ``other`` the other
    method's (a detail), ``why`` says in words why this method on this curve."""

    estimate: KneeEstimate
    other: KneeEstimate
    why: str
    moved_from: float | None = None  # the method's own knee, when the curve was not saturated there

    x = property(lambda self: self.estimate.x)
    y = property(lambda self: self.estimate.y)
    low = property(lambda self: self.estimate.low)
    high = property(lambda self: self.estimate.high)
    method = property(lambda self: self.estimate.method)
    method_name = property(lambda self: self.estimate.method_name)

    def line(self, name: str = "QD", lead: bool = True) -> str:
        """The verdict in one line: 'knee QD 8 by maximum power (IOPS²/QD; 100 % of resamples in
        [4, 16]): Kneedle found no knee (the curve ...)'; ``lead=False`` leaves out 'knee QD 8 '
        (a recorded result's note, beside its value)."""
        e = self.estimate
        if e.x is None:
            return f"no knee: {self.why}"
        how = "IOPS²/QD" if e.method_name == "maximum power" else "Satopää et al. 2011, on log2 QD"
        spread = (
            f"; {100 * e.share_in_interval:.0f} % of resamples in [{e.low:g}, {e.high:g}]" if e.low is not None else ""
        )
        return f"{f'knee {name} {e.x:g} ' if lead else ''}by {e.method_name} ({how}{spread}): {self.why}"


def trusted_knee(
    x: Sequence[float],
    y: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    level: float = 0.9,
    name: str = "QD",
    searched: bool = False,
) -> KneeVerdict:
    """The one knee to report for a queue-depth sweep, and why that method.

    Both methods of :func:`knee_with_interval` run on the same median curve. Kneedle
    (Satopää et al. 2011, ``knee.find_knee``) names the bend itself, so it is trusted when it
    finds a knee inside the swept range (not its first or deepest x), where the curve is
    concave (IOPS gained per doubling of x fall past the knee) and, with repeats, the repeats
    agree on it: ``level`` (90 %) of the resamples' knees lie within a doubling of it (its
    interval no wider than [x/2, 2x], sampled x). Otherwise Kleinrock's maximum
    power (``knee.power_knee``, IOPS²/QD) is reported, which names a depth on any curve with
    IOPS, and ``why`` says what Kneedle lacked ("Kneedle found no knee (the curve ...)").
    When maximum power finds none, or peaks at the deepest x (IOPS²/QD still rising: the
    knee lies deeper), the verdict is no knee, with the reasons. x on a log2 axis;
    ``name`` is what x is called. ``searched``: the depths are those the adaptive search
    (``iolab.stats.knee_planner``) ran for maximum power's knee, which is then reported:
    Kneedle's line from first to last point needs the full grid.
    Either knee must be a saturation: where the next depth swept still gains beyond its
    interval (and by more than 5 %), the knee moves up to where the gain stops, and says so;
    where the resamples' knees spread over more than two doublings, there is no knee: the
    repeats cannot place it."""
    verdict = _chosen(x, y, n_boot=n_boot, seed=seed, level=level, name=name, searched=searched)
    return _saturated(verdict, x, y, name)


def _saturated(verdict: KneeVerdict, x: Sequence[float], y: Sequence[float], name: str) -> KneeVerdict:
    """The chosen knee where the curve saturates (``operating_points.saturated``: not at a depth
    the next measured one still beats beyond its interval, by more than 5 %), and no knee where
    the repeats cannot place it (``operating_points.placed``: resamples over two doublings)."""
    e = verdict.estimate
    if e.x is None:
        return verdict
    unplaced = placed(e.low, e.high, name)
    if unplaced:
        return KneeVerdict(
            replace(e, x=None, y=None), verdict.other, f"{e.method_name} says {name} {e.x:g}, but {unplaced}"
        )
    runs: dict[float, list[float]] = {}
    for xi, yi in zip(x, y):
        if xi == xi and yi == yi:
            runs.setdefault(float(xi), []).append(float(yi))
    to, moved, doubt = saturated(runs, float(e.x), name)
    if doubt:  # single runs: a deeper depth did more, and nothing says whether that is noise
        return KneeVerdict(
            replace(e, x=None, y=None), verdict.other, f"{e.method_name} says {name} {e.x:g}, but {doubt}"
        )
    if not moved:
        return verdict
    y_to = float(np.median(runs[to]))
    why = f"{e.method_name} says {name} {e.x:g}, not saturated there: {moved}; {verdict.why}"
    return KneeVerdict(replace(e, x=to, y=y_to, low=None, high=None, note=""), verdict.other, why, float(e.x))


def _chosen(x, y, *, n_boot, seed, level, name, searched) -> KneeVerdict:
    """Kneedle's knee, or maximum power's, as ``trusted_knee`` describes the choice."""
    kneedle = knee_with_interval(x, y, n_boot=n_boot, seed=seed, level=level, name=name)
    power = knee_with_interval(x, y, n_boot=n_boot, seed=seed, level=level, name=name, method="power")
    doubt = (
        "the adaptive search ran only the depths maximum power needs (Kneedle's bend needs the full grid)"
        if searched
        else _kneedle_doubt(kneedle, name)
    )
    if not doubt:
        before, after = _gain_per_doubling(kneedle)
        other = f"maximum power says {name} {power.x:g}" if power.x is not None else "maximum power finds none"
        why = (
            f"a bend inside the swept {name}s ({kneedle.x_used[0]:g}-{kneedle.x_used[-1]:g}): "
            f"each doubling adds {si_number(before, k_from=1e3)} IOPS before it, {si_number(after, k_from=1e3)} after"
            + (", and the repeats agree on it" if kneedle.low is not None else "")
            + f" ({other})"
        )
        return KneeVerdict(kneedle, power, why)
    if power.x is None:
        return KneeVerdict(kneedle, power, f"{doubt}; maximum power finds none either ({power.reason})")
    if power.x == power.x_used[-1] and len(power.x_used) > 1:
        return KneeVerdict(
            kneedle,
            power,
            f"{doubt}; maximum power still rises at the deepest {name} swept ({power.x:g}): the knee, "
            "if any, lies deeper; sweep deeper",
        )
    return KneeVerdict(power, kneedle, doubt)


def _gain_per_doubling(e: KneeEstimate) -> tuple[float, float]:
    """The median curve's mean rise per doubling of x from the first point to the knee, and
    from the knee to the last point (a knee between them)."""
    xv, med = np.log2(e.x_used), np.array(e.y_median)
    i = e.x_used.index(e.x)
    return (med[i] - med[0]) / (xv[i] - xv[0]), (med[-1] - med[i]) / (xv[-1] - xv[i])


def _kneedle_doubt(e: KneeEstimate, name: str) -> str:
    """Why Kneedle's knee is not the one to report ('' when it is)."""
    if e.x is None:
        return f"Kneedle found no knee ({e.reason})"
    if e.x in (e.x_used[0], e.x_used[-1]):
        end = "first" if e.x == e.x_used[0] else "deepest"
        return f"Kneedle's knee is the {end} {name} swept ({e.x:g}): no bend inside the range"
    before, after = _gain_per_doubling(e)
    if after >= before:
        return f"Kneedle's bend at {name} {e.x:g} is not a saturation: the curve is not concave there"
    if e.low is not None and (e.share_in_interval < e.level or e.low < e.x / 2 or e.high > 2 * e.x):
        return (
            f"Kneedle's knee moves with the repeats: {100 * e.share_in_interval:.0f} % of the resamples' knees in "
            f"[{e.low:g}, {e.high:g}], not {100 * e.level:.0f} % within a doubling of {name} {e.x:g}"
        )
    return ""
