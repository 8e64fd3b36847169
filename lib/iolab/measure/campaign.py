"""The one loop that runs a campaign of planned runs (``iolab.measure.planned.PlannedRun``).

Planners decide what runs — ``sweep.plan`` (a grid), ``search.plan`` (a search spec),
``many_hosts`` (a job on 1..N hosts), and, round by round, the ladder and the knee search,
whose next runs depend on the last ones. ``execute`` runs what they planned, in their
order, and is the only place that does what every campaign needs:

* resume: a run whose key has a finished ("ok") run under ``runs_dir`` is not run again
  (``finished_runs``: after a crash, Ctrl-C or SIGKILL, only what is missing runs);
* knobs per cell: a cell's knobs are set once for its consecutive runs and put back before
  the next cell's (``iolab.machine.knobs.applied``);
* warm-up: ``Rounds.warmup`` read one way everywhere (``iolab.core.validate.warmup``):
  "run" measures the first run's job once more before it, into ``runs_dir/warmup``; a time
  is fio's ``ramp_time`` on every run, part of its job (planners add it: ``with_ramp``);
* order: ``Rounds.order`` — ``grid`` (a cell's repeats together), ``interleaved`` (round r
  runs every cell's repeat r) or ``random`` (the same rounds, each shuffled by the seed);
* the stop rule: a cell's later repeats are skipped once its interval is narrow (``StopRule``);
* stress-ng on the CPUs a run asks (``iolab.machine.stress``), stopped after it;
* progress: one bar (``tqdm.auto``; quiet under papermill);
* one writer per runs folder: the campaign holds its lock (``iolab.machine.locks.runs_folder_locked``)
  from reading what is finished to its last run, so a second campaign into the folder waits,
  naming the holder, and is refused after ``$IOLAB_LOCK_WAIT_S`` (two would run every missing
  cell twice).

The engines — ``runner.measure`` (fio), ``runner.measure_tio`` (t/io_uring) and
``clients.measure_hosts`` (fio's client/server mode) — sit behind ``measure_planned``.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, IolabError, RunFileError
from ..core.progress import bar
from ..core.runfiles import PARAMS_JSON
from ..core.runfolders import runs_in
from ..core.validate import fio_time, positive_ints, writable_dir
from ..core.validate import warmup as read_warmup
from ..machine import knobs
from ..machine.fio import fio_binary
from ..machine.jobbatch import parse_ahead
from ..machine.locks import runs_folder_locked
from ..machine.stress import stressed
from ..read.run import RunFolder
from ..runs.runcache import load_runs
from ..runs.store import stored_job_key
from ..stats import repeat_stats
from ..stats.repeat_stats import t_interval
from . import clients, runner
from .options import MeasureOptions
from .planned import PlannedRun, tio_key

ORDERS = ("grid", "interleaved", "random")
ORDER_ALIASES = {"given": "interleaved"}  # a search spec's older spelling
AHEAD = 256  # runs whose job texts fio reads at once before they run (``ask_ahead``)
WARMUP_DIR = "warmup"  # below runs_dir: discarded warm-up runs (not loaded: one level deeper)


@dataclass(frozen=True)
class StopRule:
    """End a cell early: skip its later repeats once the 95 % t interval of the mean of
    ``metric`` over its first ``min_repeats`` (or more) runs is within ``ci_pct`` % of the mean."""

    metric: str = "iops"
    ci_pct: float = 5.0
    min_repeats: int = 3

    def settled(self, runs: Sequence[Path]) -> str:
        """Why a cell with these finished runs needs no more ("" when it does)."""
        if len(runs) < self.min_repeats:
            return ""
        table = repeat_stats.per_run(load_runs(list(runs)))
        if self.metric not in table:
            raise InputError(
                f"stop.metric {self.metric!r} is not a column of the runs; choose one of "
                f"{', '.join(table.select_dtypes('number').columns)}"
            )
        values = table[self.metric].to_numpy(float)
        low, high = t_interval(values)
        mean = float(np.mean(values))
        if mean and (high - low) / 2 <= self.ci_pct / 100 * abs(mean):
            return f"95 % interval within {self.ci_pct:g} % after {len(values)} runs"
        return ""


@dataclass(frozen=True)
class Rounds:
    """How a campaign repeats, orders and warms up its runs (module docstring): ``repeats``
    of every cell, in ``order`` (``seed`` for "random"), after ``warmup`` ("run", a time
    such as "2s", or None/"none"), ending a cell early by ``stop`` (a StopRule, or None)."""

    repeats: int = 1
    order: str = "grid"
    seed: int = 0
    warmup: Any = None
    stop: StopRule | None = None

    @classmethod
    def of(cls, value: Rounds | Mapping[str, Any] | None = None, **defaults: Any) -> Rounds:
        """``value`` as Rounds (a mapping of its fields; None: ``defaults``), checked:
        InputError for an order, repeat count or warm-up that cannot run."""
        if value is None:
            value = cls(**defaults)
        elif isinstance(value, Mapping):
            unknown = [str(k) for k in value if k not in cls.__dataclass_fields__]
            if unknown:
                raise InputError(
                    f"unknown rounds setting {', '.join(unknown)}; give {', '.join(cls.__dataclass_fields__)}"
                )
            value = cls(**{**defaults, **value})
        elif not isinstance(value, cls):
            raise InputError(f"rounds={value!r}: give a Rounds or a mapping (repeats, order, seed, warmup, stop)")
        order = ORDER_ALIASES.get(str(value.order).strip().lower(), str(value.order).strip().lower())
        if order not in ORDERS:
            raise InputError(f"order={value.order!r}: choose one of {', '.join(ORDERS)}")
        [repeats] = positive_ints("repeats", [value.repeats])
        stop = value.stop
        if isinstance(stop, Mapping):
            unknown = [str(k) for k in stop if k not in StopRule.__dataclass_fields__]
            if unknown:
                raise InputError(f"unknown stop setting {', '.join(unknown)}; give metric, ci_pct, min_repeats")
            stop = StopRule(**stop)
        elif stop is not None and not isinstance(stop, StopRule):
            raise InputError(f"stop={stop!r}: give a StopRule or a mapping (metric, ci_pct, min_repeats)")
        return cls(repeats, order, int(value.seed), value.warmup, stop)

    def warmup_kind(self, tool: str = "fio") -> str | float | None:
        """None, "run" or seconds of fio ``ramp_time`` (``iolab.core.validate.warmup``)."""
        return read_warmup(self.warmup, tool)


def with_ramp(base: Mapping[str, Any] | None, kind: str | float | None) -> dict[str, Any]:
    """``base`` with fio's ``ramp_time`` when the warm-up ``kind`` is a time: the warm-up
    every run of a campaign gets (part of each run's job, so of its key)."""
    return {**(base or {}), "ramp_time": fio_time(kind)} if isinstance(kind, float) else dict(base or {})


def ordered(runs: Sequence[PlannedRun], order: str, seed: int = 0) -> list[PlannedRun]:
    """``runs`` (each cell's repeats together, cells in plan order) in ``order``: "grid" as
    given, "interleaved" round by round, "random" round by round each shuffled with
    ``random.Random(seed)``."""
    if order == "grid":
        return list(runs)
    repeats = sorted({r.repeat for r in runs})
    rounds = [[r for r in runs if r.repeat == rep] for rep in repeats]
    if order == "random":
        rng = random.Random(seed)
        for one in rounds:
            rng.shuffle(one)
    return [r for one in rounds for r in one]


def stored_key(params: Mapping[str, Any]) -> str:
    """The key of a stored run from its params.json (``PlannedRun.key`` of the run that made it)."""
    if "tio_flags" in params:
        return tio_key(params["tio_flags"], params.get("target", ""), params.get("cpus"), params.get("swept", {}))
    return stored_job_key(params)


def finished_runs(runs_dir: str | Path) -> dict[str, Path]:
    """Finished ("ok") runs under ``runs_dir`` by key; a failed or interrupted run is not
    finished (it runs again), nor is a folder whose files cannot be read."""
    done: dict[str, Path] = {}
    for folder in runs_in(runs_dir):
        run = RunFolder(folder)
        try:
            if run.status() == "ok" and run.present(PARAMS_JSON):
                done.setdefault(stored_key(run.params()), folder)
        except (OSError, RunFileError, ValueError, AttributeError):
            continue
    return done


def measure_planned(
    run: PlannedRun, runs_dir: Path, how: MeasureOptions, warmup: bool = False, built: runner.JobFile | None = None
) -> Path:
    """Run ``run`` with its engine; the run folder. ``built``: its fio job as ``ask_ahead`` built it."""
    if run.engine == "t/io_uring":
        measured = runner.measure_tio(
            run.options, run.target, cpus=run.cpus, runs_dir=runs_dir, swept=run.swept, label=run.label, how=how
        )
    elif run.engine == "hosts":
        measured = clients.measure_hosts(run, runs_dir=runs_dir, how=how, snapshots=not warmup)
    else:
        measured = runner.measure(
            run.options,
            run.target,
            cpus=run.cpus,
            runs_dir=runs_dir,
            swept=run.swept,
            label=run.label,
            jobs=list(run.jobs) or None,
            how=how,
            built=built,
        )
    return measured.path


def execute(
    runs: Sequence[PlannedRun],
    runs_dir: str | Path,
    *,
    rounds: Rounds | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
    progress: str | None = "fio runs",
) -> dict[str, Path]:
    """Run ``runs`` in the order given into ``runs_dir`` (module docstring); the run folder of
    every planned run that has one, by key. ``rounds``: its warm-up and stop rule (the order
    is the planner's: ``ordered``); ``how``: how each run is measured (with ``drop_caches``,
    the page cache is dropped before each run measured); ``progress`` names the bar (None: no
    bar). Knobs a killed iolab left changed are put back by the planner first
    (``iolab.runs.repair``), before it reads a knob."""
    rounds, how = Rounds.of(rounds), MeasureOptions.of(how)
    runs_dir = Path(runs_dir)
    writable_dir(runs_dir, "runs folder", "runs_dir=DIR")
    with runs_folder_locked(runs_dir):
        return _execute(runs, runs_dir, rounds, how, progress)


def _execute(
    runs: Sequence[PlannedRun], runs_dir: Path, rounds: Rounds, how: MeasureOptions, progress: str | None
) -> dict[str, Path]:
    """``execute``, its runs folder held."""
    before_run = knobs.drop_caches if how.drop_caches else None
    done = finished_runs(runs_dir)
    warm = rounds.warmup_kind("t/io_uring" if runs and runs[0].engine == "t/io_uring" else "fio") == "run"
    cells: dict[int, list[PlannedRun]] = {}
    for run in runs:
        cells.setdefault(run.cell, []).append(run)
    todo = [r for r in runs if r.engine == "fio" and r.key not in done]
    place, asked, built = {id(r): i for i, r in enumerate(todo)}, 0, {}
    with contextlib.ExitStack() as cell_knobs:  # the knobs of the cell being run
        cell = None
        for run in bar(runs, progress, total=len(runs)) if progress else runs:
            if run.key in done or _stopped(run, cells[run.cell], done, rounds.stop):
                continue
            if place.get(id(run), -1) >= asked:  # the next runs' jobs, read by fio at once
                built = ask_ahead(todo[place[id(run)] : place[id(run)] + AHEAD] + ([run.warmup()] if warm else []), how)
                asked = place[id(run)] + AHEAD
            if run.cell != cell:
                cell_knobs.close()  # the previous cell's knobs are put back first
                for target in run.knob_targets or (run.target,):
                    cell_knobs.enter_context(knobs.applied(target, dict(run.knobs)))
                cell = run.cell
            with stressed(run.stress_cpus):
                if before_run:
                    before_run()
                if warm:
                    measure_planned(run.warmup(), runs_dir / WARMUP_DIR, how, True, built.get(run.warmup().key))
                    warm = False
                    if before_run:
                        before_run()
                done[run.key] = measure_planned(run, runs_dir, how, built=built.get(run.key))
    return done


def ask_ahead(runs: Sequence[PlannedRun], how: MeasureOptions) -> dict[str, runner.JobFile]:
    """The fio jobs of ``runs`` (``runner.job_file``), by run key, built once and carried to
    their runs; fio's reading of them asked in one ``fio --parse-only`` per chunk and remembered
    for each run's own write guard, which would otherwise pay fio's start-up once a run
    (``iolab.machine.jobbatch.parse_ahead``). A job that cannot be built is left to its run,
    whose own checks say why as it starts (this is only a head start: nothing here refuses a run)."""
    if not runs:
        return {}
    fio, built = fio_binary(), {}
    for run in runs:
        try:
            built[run.key] = runner.job_file(
                run.options, run.target, run.cpus, run.swept, run.label, run.jobs, how, fio
            )
        except (IolabError, TypeError, ValueError):
            continue
    parse_ahead([job.text for job in built.values()], fio)
    return built


def _stopped(run: PlannedRun, cell: Sequence[PlannedRun], done: Mapping[str, Path], stop: StopRule | None) -> bool:
    if stop is None or run.repeat < stop.min_repeats:
        return False
    earlier = [done[r.key] for r in cell if r.repeat < run.repeat and r.key in done]
    return bool(stop.settled(earlier))


def paths_of(runs: Sequence[PlannedRun], done: Mapping[str, Path]) -> list[Path]:
    """The run folders of ``runs`` that have one (skipped by a stop rule: none), in plan order."""
    return [done[r.key] for r in runs if r.key in done]
