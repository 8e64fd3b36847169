"""Where to measure next when looking for the queue-depth knee: an adaptive search on the
log2 grid that finds the knee of the full grid × repeats with about half the runs.

The full study runs every power-of-two depth ``repeats`` times. Most of those runs are far
from the knee, where one run says all there is to say. The search spends runs where the
answer depends on them (the idea of sequential experimental design; the knee is Kneedle's,
``iolab.stats.knee_interval.knee_with_interval``):

1. **coarse** — every other depth of the grid, once each (and the deepest for Kneedle,
   whose line from first to last point must be the full grid's);
2. **refine** — the grid's neighbours of the current knee, once each, so the knee is
   named among its neighbours as on the full grid (repeated while the knee moves);
3. **confirm** — ``confirm`` runs at the knee and one fewer at its neighbours, so one
   noisy run cannot name the knee and the bootstrap over repeats can say how sure it is;
4. **challenge** — the best depth away from the knee (by the knee method's own measure) is
   run again, so a single unlucky run at the true knee's neighbourhood cannot hide it;
5. **narrow** — while the knee's interval spans more than its neighbours (the
   resamples disagree beyond one doubling), one more run at each depth in the interval
   (the fewest-run depth first) — only where the interval overlaps the decision.

Every step stops at ``budget`` runs. ``next_depths(samples, grid)`` is the planner alone (no
I/O: tested on recorded and synthetic curves); ``iolab.studies.qd.knee_search`` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InputError
from .knee_interval import KneeEstimate, knee_with_interval

BOOT_PLANNING = 200  # resamples per planning step (the final estimate uses the caller's)


@dataclass
class Step:
    """One planning decision: the depths to run next (one run each) and why."""

    depths: list[float]
    stage: str  # coarse | refine | confirm | narrow | done
    why: str


@dataclass(frozen=True)
class Budget:
    """A search's runs so far (``samples``: the runs at each depth) against the ``runs`` it may
    make: how many are ``left``, how many a depth ``have``s, a stage that ``take``s at most
    what is left."""

    samples: Mapping[float, Sequence]
    runs: int

    @property
    def left(self) -> int:
        return self.runs - sum(len(v) for v in self.samples.values())

    def have(self, x: float) -> int:
        return len(self.samples.get(x, ()))

    def take(self, stage: str, depths: Sequence[float], why: str) -> Step:
        return Step(list(depths)[: self.left], stage, why)


@dataclass
class SearchResult:
    """What ``iolab.studies.qd.knee_search`` found: the knee estimate on every run made,
    the runs used beside the full grid's, and the planner's steps in order."""

    estimate: KneeEstimate
    runs: int
    grid_runs: int
    steps: list[Step] = field(default_factory=list)
    table: Any = None  # the tidy table of every run made (a DataFrame)


def coarse_depths(grid: Sequence[float], method: str = "kneedle") -> list[float]:
    """Every other depth of the sorted grid, and (for Kneedle, whose straight line runs from
    the first to the last depth) the deepest."""
    grid = sorted(grid)
    return sorted(set(grid[::2]) | ({grid[-1]} if method == "kneedle" else set()))


def neighbours(grid: Sequence[float], x: float) -> list[float]:
    """``x`` and the grid depths either side of it."""
    grid = sorted(grid)
    i = grid.index(x)
    return grid[max(0, i - 1) : i + 2]


def _estimate(samples: Mapping[float, Sequence[float]], n_boot: int, seed: int, method: str) -> KneeEstimate:
    xs = [x for x, ys in samples.items() for _ in ys]
    ys = [y for _, v in samples.items() for y in v]
    return knee_with_interval(xs, ys, n_boot=n_boot, seed=seed, method=method)


def next_depths(
    samples: Mapping[float, Sequence[float]],
    grid: Sequence[float],
    *,
    budget: int,
    confirm: int = 3,
    seed: int = 0,
    method: str = "kneedle",
) -> Step:
    """The next depths to run, given ``samples`` (depth -> the IOPS of each run so far).

    ``grid``: the full study's depths (at least 3); ``budget``: the most runs the search may
    use; ``confirm``: runs wanted at the knee (one fewer at its neighbours); ``method``: the knee's
    (``knee_with_interval``: "kneedle" or "power"). An empty ``depths`` (stage
    "done") means stop: the knee is settled, or the budget is spent."""
    grid = sorted(float(g) for g in grid)
    method = str(method).strip().lower()
    if len(grid) < 3:
        raise InputError(f"a knee search needs at least 3 queue depths, got {len(grid)}")
    first = opening(samples, grid, budget, method)
    if first:
        return first
    spent = Budget(samples, budget)
    est = _estimate(samples, BOOT_PLANNING, seed, method)
    if est.x is None:  # no bend among the coarse points: look at the depths between them
        gaps = [x for x in grid if not spent.have(x)]
        return (
            spent.take("refine", gaps, "no knee among the depths run so far: the rest of the grid")
            if gaps
            else Step([], "done", "every depth run: no knee")
        )
    near = neighbours(grid, est.x)
    gaps = [x for x in near if not spent.have(x)]
    if gaps:
        return spent.take("refine", gaps, f"the grid's neighbours of the knee at QD {est.x:g}")
    short = [x for x in near if spent.have(x) < (confirm if x == est.x else confirm - 1)]
    if short:
        return spent.take(
            "confirm", short, f"{confirm} runs at the knee (QD {est.x:g}), {confirm - 1} at its neighbours"
        )
    rivals = [(d, x) for x, d in zip(est.knee.x_used, est.knee.difference) if x not in near]
    if rivals and spent.have(max(rivals)[1]) < confirm - 1:
        runner_up = max(rivals)[1]
        return spent.take(
            "challenge",
            [runner_up],
            f"QD {runner_up:g}, the best depth away from the knee, run "
            "again: one lucky run there would hide a second bend",
        )
    if est.low is not None and (est.low < near[0] or est.high > near[-1]):
        wide = sorted((x for x in grid if est.low <= x <= est.high and spent.have(x)), key=spent.have)
        return spent.take(
            "narrow", wide, f"the knee's interval [{est.low:g}, {est.high:g}] spans more than its neighbours"
        )
    return Step(
        [],
        "done",
        f"knee at QD {est.x:g}, "
        + (f"interval [{est.low:g}, {est.high:g}] within its neighbours" if est.low is not None else "no interval"),
    )


def opening(samples: Mapping[float, Sequence], grid: Sequence[float], budget: int, method: str) -> Step | None:
    """The first stages of every search on the grid: stop when ``budget`` runs are spent, else
    the coarse depths not run yet (every other depth, and the deepest for Kneedle), once each;
    None once both are past (the caller's own stages follow)."""
    spent = Budget(samples, budget)
    if spent.left <= 0:
        return Step([], "done", f"budget of {budget} runs spent")
    missing = [x for x in coarse_depths(grid, method) if not spent.have(x)]
    if missing:
        why = "every other depth and the deepest, once each" if method == "kneedle" else "every other depth, once each"
        return spent.take("coarse", missing, why)
    return None


def final_estimate(
    samples: Mapping[float, Sequence[float]], n_boot: int = 1000, seed: int = 0, method: str = "kneedle"
) -> KneeEstimate:
    """The knee and its interval on every run the search made."""
    return _estimate(samples, n_boot, seed, method)
