"""Where to measure next to find a configuration's operating point on the queue-depth grid,
by the rule the user chose, and the point found with its interval.

Seed 000's author moved the queue depth at every step of the ladder to "the knee of the
latency curve" before measuring the step; a step's gain means something only at its own
operating point. The rules (``Rule.parse``):

- ``knee`` (Kleinrock's maximum power, throughput ÷ latency) or ``kneedle`` (Kneedle's bend):
  the knee search's own planner (``iolab.stats.knee_planner``) and its bootstrap interval;
- ``p99<=200`` (µs): the largest depth whose mean p99 completion latency stays at or under
  the target (``operating_points.max_x_under``);
- ``peak`` ("throwing caution to the wind"): the depth of the highest mean IOPS.

For ``p99`` and ``peak`` the planner runs the knee search's stages: every other depth once
(coarse), the grid's neighbours of the current choice (refine), ``confirm`` runs at the choice
and one fewer at its neighbours (confirm), then one more run at each depth of the choice's
interval while it spans more than its neighbours (narrow); every stage stops at ``budget``.
The interval is a bootstrap over repeats (Efron 1979): each depth's runs drawn again with
replacement, their means taken and the rule applied again; the shortest run of consecutive
measured depths around the choice holding ``level`` of the resamples' choices.
``samples`` maps a depth to its runs, each ``(iops, clat_p99_us)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from . import knee_planner
from .knee_planner import Budget, Step, neighbours, opening
from .operating_points import max_x_under, placed, saturated

Samples = Mapping[float, Sequence[tuple[float, float]]]
_P99 = re.compile(r"^p99\s*(?:<=|<|≤)\s*([0-9.]+)\s*(?:us|µs)?$")


@dataclass(frozen=True)
class Rule:
    """How a step's operating point is chosen: ``kind`` is power | kneedle | p99 | peak;
    ``p99_us`` the latency target of ``p99``."""

    kind: str
    p99_us: float | None = None

    @classmethod
    def parse(cls, text: str | Rule) -> Rule:
        """``knee`` (or ``power``), ``kneedle``, ``peak`` or ``p99<=N`` (N in µs)."""
        if isinstance(text, Rule):
            return text
        word = str(text).strip().lower()
        if word in ("knee", "power"):
            return cls("power")
        if word in ("kneedle", "peak"):
            return cls(word)
        if m := _P99.match(word):
            return cls("p99", float(m.group(1)))
        raise InputError(
            f"operating point rule {text!r}: give knee (maximum power), kneedle, peak, or p99<=N (N in µs, e.g. p99<=200)"
        )

    def words(self) -> str:
        """The rule as a table says it."""
        if self.kind == "p99":
            return f"the deepest queue with p99 ≤ {self.p99_us:g} µs"
        return {"power": "the knee (maximum IOPS ÷ latency)", "kneedle": "the knee (Kneedle's bend)"}.get(
            self.kind, "the peak IOPS"
        )


def choose(rule: Rule, samples: Samples) -> float | None:
    """The depth ``rule`` picks from the mean of each depth's runs (None: none qualifies)."""
    depths = sorted(x for x, runs in samples.items() if runs)
    if not depths:
        return None
    if rule.kind in ("power", "kneedle"):
        return knee_planner.final_estimate(_iops(samples), n_boot=0, method=rule.kind).x
    iops = [float(np.mean([r[0] for r in samples[x]])) for x in depths]
    if rule.kind == "peak":
        return float(depths[int(np.argmax(iops))])
    p99 = [float(np.mean([r[1] for r in samples[x]])) for x in depths]
    return max_x_under(depths, p99, rule.p99_us)


@dataclass
class Point:
    """The depth a rule chose, with its interval over the resamples (None: one run per depth,
    nothing to resample) and what share of the resamples chose inside it."""

    x: float | None
    low: float | None
    high: float | None
    share_in_interval: float
    note: str
    moved: str = ""  # why the rule's own knee was not the point: the next depth still gained (saturated)


def point_with_interval(
    rule: Rule, samples: Samples, *, n_boot: int = 1000, seed: int = 0, level: float = 0.9
) -> Point:
    """The depth ``rule`` chooses on every run made, and its bootstrap interval. A knee (power,
    kneedle) is where the step saturates: not at a depth the next measured depth still beats
    beyond its interval (``operating_points.saturated``: it moves up, and says so), and no
    point where the repeats cannot place it (``operating_points.placed``)."""
    if rule.kind in ("power", "kneedle"):
        est = knee_planner.final_estimate(_iops(samples), n_boot=n_boot, seed=seed, method=rule.kind)
        unplaced = placed(est.low, est.high)
        if est.x is not None and unplaced:
            return Point(None, est.low, est.high, est.share_in_interval, f"{rule.words()}: {unplaced}")
        x, moved, doubt = saturated(_iops(samples), est.x) if est.x is not None else (None, "", "")
        if doubt:  # a deeper depth did more with single runs: the runs cannot place the point
            return Point(None, None, None, float("nan"), f"{rule.words()} at QD {x:g} is not placed: {doubt}")
        if moved:
            said = f"{rule.words()} was QD {est.x:g}, not saturated: {moved}"
            return Point(x, None, None, float("nan"), said, said)
        return Point(est.x, est.low, est.high, est.share_in_interval, est.note)
    x = choose(rule, samples)
    if x is None:
        why = "no depth measured" if not any(samples.values()) else f"no depth keeps p99 ≤ {rule.p99_us:g} µs"
        return Point(None, None, None, float("nan"), why)
    depths = sorted(d for d, runs in samples.items() if runs)
    if max(len(samples[d]) for d in depths) < 2:
        return Point(x, None, None, float("nan"), "one run per depth: no interval")
    rng = np.random.default_rng(seed)
    picks = []
    for _ in range(n_boot):
        drawn = {d: [samples[d][i] for i in rng.integers(0, len(samples[d]), len(samples[d]))] for d in depths}
        picks.append(choose(rule, drawn))
    low, high, share = _shortest_around(depths, x, picks, level)
    return Point(
        x,
        low,
        high,
        share,
        f"{share:.0%} of {n_boot} bootstrap resamples over repeats chose a depth in [{low:g}, {high:g}]".replace(
            "%", " %"
        ),
    )


def _shortest_around(depths: list[float], x: float, picks: list, level: float) -> tuple[float, float, float]:
    """The shortest run of consecutive ``depths`` holding ``x`` and ``level`` of ``picks``
    (picks of None count against it), and the share it holds."""
    i = depths.index(x)
    n = len(picks)
    best = (depths[0], depths[-1], sum(p is not None for p in picks) / n)
    for width in range(1, len(depths) + 1):
        for lo in range(max(0, i - width + 1), min(i, len(depths) - width) + 1):
            span = depths[lo : lo + width]
            share = sum(p is not None and span[0] <= p <= span[-1] for p in picks) / n
            if share >= level:
                return span[0], span[-1], share
    return best


def next_depths(
    rule: Rule, samples: Samples, grid: Sequence[float], *, budget: int, confirm: int = 3, seed: int = 0
) -> Step:
    """The next depths to run (one run each), given the runs so far; stage "done" means stop."""
    grid = sorted(float(g) for g in grid)
    if rule.kind in ("power", "kneedle"):
        step = knee_planner.next_depths(
            _iops(samples), grid, budget=budget, confirm=confirm, seed=seed, method=rule.kind
        )
        return step if step.depths else _until_saturated(rule, samples, grid, budget, confirm) or step
    if len(grid) < 3:
        raise InputError(f"an operating-point search needs at least 3 queue depths, got {len(grid)}")
    first = opening(samples, grid, budget, "power")  # the knee planner's first stages
    if first:
        return first
    spent = Budget(samples, budget)
    x = choose(rule, samples)
    if x is None:
        gaps = [g for g in grid if not spent.have(g)]
        return (
            spent.take("refine", gaps, "no depth qualifies yet: the rest of the grid")
            if gaps
            else Step([], "done", f"every depth run: none is {rule.words()}")
        )
    near = neighbours(grid, x)
    gaps = [g for g in near if not spent.have(g)]
    if gaps:
        return spent.take("refine", gaps, f"the grid's neighbours of QD {x:g}")
    short = [g for g in near if spent.have(g) < (confirm if g == x else confirm - 1)]
    if short:
        return spent.take("confirm", short, f"{confirm} runs at QD {x:g}, {confirm - 1} at its neighbours")
    point = point_with_interval(rule, samples, n_boot=200, seed=seed)
    if point.low is not None and (point.low < near[0] or point.high > near[-1]):
        wide = sorted((g for g in grid if point.low <= g <= point.high and spent.have(g)), key=spent.have)
        return spent.take(
            "narrow", wide, f"the interval [{point.low:g}, {point.high:g}] spans more than QD {x:g}'s neighbours"
        )
    return Step([], "done", f"{rule.words()} at QD {x:g}")


def _until_saturated(rule: Rule, samples: Samples, grid: list[float], budget: int, confirm: int) -> Step | None:
    """Once the knee search is done: when its knee still gains at the next depth
    (``operating_points.saturated`` moved it), the runs that let the next move be judged: the
    new depth's and the one above it (``confirm`` and one fewer); None when none is due."""
    x = choose(rule, samples)
    if x is None:
        return None
    moved_to, moved, doubt = saturated(_iops(samples), x)
    if not moved and not doubt:
        return None
    spent = Budget(samples, budget)
    above = [g for g in grid if g > moved_to][:1]
    short = [g for g in [moved_to, *above] if spent.have(g) < (confirm if g == moved_to else confirm - 1)]
    if not short or not spent.left:
        return None
    return spent.take("confirm", short, f"{rule.words()} still gains past QD {x:g} ({moved or doubt})")


def _iops(samples: Samples) -> dict[float, list[float]]:
    return {x: [r[0] for r in runs] for x, runs in samples.items()}
