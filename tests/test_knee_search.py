"""The adaptive knee search: the planner on known curves and recorded pools (no I/O), and
the study on a real scratch file."""

import random

import numpy as np
import pandas as pd
import pytest

from iolab.core.errors import InputError
from iolab.stats import knee_planner as ks
from iolab.stats.knee import power_knee
from iolab.stats.knee_interval import knee_with_interval
from iolab.studies.qd import knee_search
from support.paths import FIXTURES

GRID = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]


def saturating(qd, peak=200_000, per_io_s=25e-6):
    """A closed queue with one server: IOPS = QD / latency until the device's peak."""
    return min(qd / per_io_s, peak)


def run_search(measure, grid=GRID, budget=12, method="power"):
    samples, steps = {}, []
    while (step := ks.next_depths(samples, grid, budget=budget, method=method)).depths:
        steps.append(step)
        for qd in step.depths:
            samples.setdefault(qd, []).append(measure(qd))
    return samples, steps + [step]


def test_power_knee_is_where_the_curve_saturates():
    # QD / 25 µs reaches 200k IOPS at QD 5. IOPS² / QD: 1.6e9 at QD 1, 3.2e9 at 2, 6.4e9 at 4,
    # then 5e9 at 8 (IOPS flat, latency doubling): the power knee is QD 4, the last depth
    # before saturation
    iops = [saturating(q) for q in GRID]
    k = power_knee(GRID, iops)
    power = np.square(iops) / np.array(GRID)
    assert k.x == GRID[int(np.argmax(power))] == 4.0 and k.y == 160_000
    assert k.difference[GRID.index(4.0)] == 1.0 and "Kleinrock" in k.method
    assert power_knee([1, 2], [0, 0]).x is None
    with pytest.raises(InputError, match="log2 needs x > 0"):
        power_knee([0, 1, 2], [1, 2, 3])


def test_search_stages_on_a_clean_curve():
    samples, steps = run_search(saturating)
    stages = [s.stage for s in steps]
    assert stages[0] == "coarse" and steps[0].depths == [1.0, 4.0, 16.0, 64.0]
    assert "refine" in stages and "confirm" in stages and stages[-1] == "done"
    assert ks.final_estimate(samples, n_boot=0, method="power").x == 4.0
    assert len(samples[4.0]) == 3 and len(samples[2.0]) == 2 and len(samples[8.0]) == 2
    assert sum(map(len, samples.values())) <= 12 and 128.0 not in samples  # far past the knee: never run


def test_search_never_spends_more_than_its_budget():
    rng = random.Random(0)
    samples, steps = run_search(lambda q: saturating(q) * rng.uniform(0.5, 1.5), budget=7)
    assert sum(map(len, samples.values())) == 7 and steps[-1].stage == "done" and "budget" in steps[-1].why
    with pytest.raises(InputError, match="at least 3 queue depths"):
        ks.next_depths({}, [1, 2], budget=4)


def test_kneedle_search_keeps_the_grid_ends():
    step = ks.next_depths({}, GRID, budget=12, method="kneedle")
    assert step.depths == [1.0, 4.0, 16.0, 64.0, 128.0]


@pytest.mark.parametrize("target", ["loop", "scratch"])
def test_replayed_search_finds_the_grids_power_knee_with_half_the_runs(target):
    """Recorded real runs (fixtures/knee/README.md): each trial draws a full grid of 3
    repeats and, independently, the search's runs from the same pools."""
    pools = pd.read_csv(FIXTURES / "knee" / "grid_randread_5x3.csv").query("target == @target")
    pools = {float(q): g.iops.tolist() for q, g in pools.groupby("qd")}
    rng, agree, used, trials = random.Random(3), 0, [], 40
    for _ in range(trials):
        grid_x = [q for q in GRID for _ in range(3)]
        grid_y = [y for q in GRID for y in rng.sample(pools[q], 3)]
        grid_knee = knee_with_interval(grid_x, grid_y, n_boot=0, method="power").x
        samples, _ = run_search(lambda q: rng.choice(pools[q]))
        knee = ks.final_estimate(samples, n_boot=0, method="power").x
        used.append(sum(map(len, samples.values())))
        agree += abs(np.log2(knee) - np.log2(grid_knee)) <= 1
    assert max(used) <= 12 == 0.5 * 24
    assert agree / trials >= 0.9, f"{agree}/{trials} trials agree"


def test_knee_search_on_a_scratch_file(scratch, runs):
    res = knee_search(
        scratch,
        [1, 2, 4, 8],
        {"rw": "randread", "ioengine": "io_uring", "runtime": "300ms"},
        rounds={"repeats": 2},
        runs_dir=runs,
    )
    assert res.grid_runs == 8 and res.runs <= 4 and res.runs / res.grid_runs <= 0.5
    assert len(res.table) == res.runs and set(res.table.qd) <= {1, 2, 4, 8}
    assert res.estimate.x in {1.0, 2.0, 4.0, 8.0} and "Kleinrock" in res.estimate.method
    assert (runs / "warmup").is_dir() and len(list(runs.glob("*/run.json"))) == res.runs
    again = knee_search(
        scratch,
        [1, 2, 4, 8],
        {"rw": "randread", "ioengine": "io_uring", "runtime": "300ms"},
        rounds={"repeats": 2},
        runs_dir=runs,
    )  # replayed from the stored runs: nothing new is run
    assert len(list(runs.glob("*/run.json"))) == res.runs and again.estimate.x == res.estimate.x
