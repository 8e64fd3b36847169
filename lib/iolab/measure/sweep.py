"""The generic sweep: a parameter grid with repeats in rounds, warm-up, progress and resume —
a planner (``plan``) over the one campaign loop (``iolab.measure.campaign.execute``). Every
study in ``iolab.studies`` runs through it.

    grid = Grid({"iodepth": [1, 2, 4, 8], "scheduler": ["none", "mq-deadline"]}, base={"rw": "randread"})
    table = sweep(grid, target=t, cpus=[0], rounds=Rounds(repeats=3), runs_dir="data/runs/qd-knee")

A grid key is a fio option (t/io_uring flags with ``tool="t/io_uring"``) or a knob name
(``iolab.machine.knobs.KNOBS``: scheduler, read_ahead_kb, governor, ...). Knob values are not given
to fio: they are set with ``knobs.applied`` around each cell's runs and always put back.

Each (cell, repeat) is one stored run whose ``params.json`` records the swept values, the
``tags`` and the repeat index; they are columns of the returned table, which holds this
sweep's runs only. Re-running the same sweep into the same folder skips runs already
measured (resume after a crash, Ctrl-C or SIGKILL): a run is "the same" when its whole job
matches — options, target, swept values, tags and repeat (``PlannedRun.key``) — so a sweep
with other base options runs anew.

Order and warm-up (``iolab.measure.campaign.Rounds``): step order and first touch decide
small "gains" on a noisy host, so a study can run its repeats in rounds
(``order="interleaved"``: every cell once per round; ``"random"``: each round shuffled,
seeded) and start with a warm-up (``warmup="run"``: one discarded run of the first cell,
stored under ``runs_dir/warmup``; or a time with its unit, ``"2s"``: fio's ``ramp_time`` on
every run; ``iolab.core.validate.warmup`` reads every spelling).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError, IolabError
from ..core.paths import check_name
from ..core.paths import runs_dir as default_runs_dir
from ..core.validate import check_cpus, check_fio_options
from ..core.validate import warmup_text as validate_warmup_text
from ..machine import knobs
from ..machine.target import Target
from ..runs import repair
from ..runs.runcache import load_runs
from ..stats import drift
from .campaign import Rounds, execute, ordered, paths_of, with_ramp
from .campaign import ask_ahead as campaign_ask_ahead
from .options import MeasureOptions
from .planned import PlannedRun

TOOLS = ("fio", "t/io_uring")


@dataclass(frozen=True)
class Grid:
    """What a sweep varies: ``axes`` (name -> values; fio options, t/io_uring flags with
    ``tool="t/io_uring"``, or knob names) over ``base`` options. ``aliases`` rename swept keys
    into columns ({"iodepth": "qd"}); ``tags`` are constant columns ({"tool": "fio"});
    ``label`` starts each run folder's name."""

    axes: Mapping[str, Sequence[Any]]
    base: Mapping[str, Any] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, Any] = field(default_factory=dict)
    tool: str = "fio"
    label: str = ""

    @classmethod
    def of(cls, value: Grid | Mapping[str, Sequence[Any]]) -> Grid:
        """``value`` as a Grid (a mapping is its axes); InputError for anything else, or for an
        axis whose values are not a list."""
        if isinstance(value, Grid):
            return value
        if not isinstance(value, Mapping):
            raise InputError(
                f"grid={value!r}: give a Grid or a mapping of axis -> values, e.g. {{'iodepth': [1, 8, 32]}}"
            )
        bare = [k for k, v in value.items() if isinstance(v, (str, bytes)) or not isinstance(v, Sequence)]
        if bare:
            raise InputError(f"grid axis {bare[0]!r} has {value[bare[0]]!r}: give a list of values, e.g. [1, 8, 32]")
        return cls(dict(value))


def cells(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a grid, in the order given: {"a": [1, 2], "b": [x]} ->
    [{"a": 1, "b": x}, {"a": 2, "b": x}]."""
    keys = list(axes)
    return [dict(zip(keys, values)) for values in itertools.product(*(axes[k] for k in keys))]


def plan(
    grid: Grid | Mapping[str, Sequence[Any]],
    *,
    target: Target,
    cpus: list[int] | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
) -> list[PlannedRun]:
    """Every run of a sweep in the order it will run, checked before the first one: fio
    options (``iolab.core.validate``), knob names and values on this target (``knobs.checked``),
    CPUs, repeats, order and warm-up (``Rounds``; a warm-up time is fio's ``ramp_time`` in
    every run's options)."""
    grid, rounds = Grid.of(grid), Rounds.of(rounds)
    if grid.tool not in TOOLS:
        raise InputError(f"tool={grid.tool!r}: choose one of {', '.join(TOOLS)}")
    base = with_ramp(grid.base, rounds.warmup_kind(grid.tool))
    check_cpus(cpus)
    runs = []
    for index, cell in enumerate(cells(grid.axes)):
        settings = {k: v for k, v in cell.items() if k in knobs.KNOBS}
        knobs.checked(target, settings)
        options = {**base, **{k: v for k, v in cell.items() if k not in settings}}
        if grid.tool == "fio":
            check_fio_options(PlannedRun(options, target, cpus=cpus).full_options)
        named = {grid.aliases.get(k, k): v for k, v in cell.items()}
        for rep in range(rounds.repeats):
            swept = named | dict(grid.tags) | {"repeat": rep}
            # the run's name (its folder, fio's --name) by fio's own option names: direct0, not mode0
            name = "-".join([grid.label] * bool(grid.label) + [f"{k}{v}" for k, v in cell.items()] + [f"r{rep}"])
            runs.append(PlannedRun(options, target, swept, name, index, cpus, settings, engine=grid.tool))
    return ordered(runs, rounds.order, rounds.seed)


def ask_ahead(sweeps: Sequence[Mapping[str, Any]], how: MeasureOptions | Mapping[str, Any] | None = None) -> None:
    """fio's reading of the fio jobs of the sweeps a study is about to run one after another,
    each given as ``plan``'s arguments (grid, target, cpus, rounds), asked in one ``fio
    --parse-only`` (``iolab.measure.campaign.ask_ahead``) rather than one per sweep. Only a head
    start: a sweep that cannot be planned, or runs otherwise, is checked by its own run."""
    runs: list[PlannedRun] = []
    for given in sweeps:
        try:
            planned = plan(**given) if Grid.of(given["grid"]).tool == "fio" else []
        except IolabError:  # said by the sweep itself, as it runs
            continue
        warm = planned and Rounds.of(given.get("rounds")).warmup_kind() == "run"
        runs += [planned[0].warmup()] * bool(warm) + planned
    try:
        campaign_ask_ahead(runs, MeasureOptions.of(how))
    except IolabError:  # fio missing, a bad ``how``: each sweep says so as it runs
        pass


def warmup_for(kind: str | float | None, first: bool) -> str:
    """What a study that runs many sweeps (the ladder, the knee search) passes each one for
    its ``warmup`` of ``kind`` (``Rounds.warmup_kind``): a discarded run before the first
    sweep only; a ramp time to every one (it is part of every run's job)."""
    if kind == "run":
        return "run" if first else "none"
    return validate_warmup_text(kind)


def sweep(
    grid: Grid | Mapping[str, Sequence[Any]],
    *,
    target: Target,
    cpus: list[int] | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
    progress: str | None = "fio runs",
) -> pd.DataFrame:
    """Run every cell of ``grid`` (a Grid, or a mapping of its axes) ``rounds.repeats`` times;
    return the tidy table of its runs (only those: other runs in ``runs_dir`` are not mixed
    in), in grid order, with a ``drift`` column naming what changed in each run's system
    snapshot since the sweep's first run (``iolab.stats.drift.flag``; what the grid sweeps
    is not drift).

    Everything is checked before the first run (``plan``); a run whose job already has an
    "ok" run in ``runs_dir`` is not run again. ``rounds``: repeats, order, seed, warm-up and
    stop rule (``iolab.measure.campaign.Rounds``; "run" measures the first run's job once more
    before it, into ``runs_dir/warmup``, only when something is left to run); ``how``: how
    each run is measured (``MeasureOptions``: allow_destructive, profile, timeout_s, log_ms,
    threads, tio, drop_caches, ...); ``progress`` names the bar (None: no bar); ``runs_dir``: a
    new ``sweep-<time>`` folder under data/runs by default.

    What killed iolab processes left is repaired first (``iolab.runs.repair``), before a knob is
    read or set: a knob a dead process left changed would otherwise be kept as the value to
    put back, or be put back under the sweep by the repair its first run does."""
    repair.recover_and_report()
    grid, rounds = Grid.of(grid), Rounds.of(rounds)
    runs = plan(grid, target=target, cpus=cpus, rounds=rounds)
    done = execute(runs, runs_dir or new_sweep_dir("sweep"), rounds=rounds, how=how, progress=progress)
    swept = {name for r in runs for name in r.swept} - {"repeat"}
    grid_order = sorted(runs, key=lambda r: (r.cell, r.repeat))
    return drift.flag(load_runs(paths_of(grid_order, done)), swept=swept)


def new_sweep_dir(name: str) -> Path:
    """A fresh folder for one sweep under data/runs: ``<name>-<UTC time>``; InputError for a
    ``name`` that is no plain folder name (``iolab.core.paths.check_name``)."""
    name = check_name(name, "sweep name", "new_sweep_dir(NAME)")
    return default_runs_dir() / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
