"""The generic sweep: a parameter grid with repeats, progress and resume. Every study in
``iolab.studies`` runs through it.

    grid = {"iodepth": [1, 2, 4, 8], "scheduler": ["none", "mq-deadline"]}
    table = sweep(grid, base={"rw": "randread"}, target=t, cpus=[0], repeats=3,
                  runs_dir="data/runs/qd-knee")

A grid key is a fio option (t/io_uring flags with ``tool="t/io_uring"``) or a knob name
(``iolab.machine.knobs.KNOBS``: scheduler, read_ahead_kb, governor, ...). Knob values are not given
to fio: they are set with ``knobs.applied`` around each cell's runs and always put back.

Each (cell, repeat) is one stored run whose ``params.json`` records the swept values, the
``tags`` and the repeat index; they are columns of the returned table, which holds this
sweep's runs only. Re-running the same sweep into the same folder skips runs already
measured (resume after a crash, Ctrl-C or SIGKILL): a run is "the same" when its whole job
matches — options, target, swept values, tags and repeat (``iolab.runs.store.job_key``) — so a
sweep with other base options runs anew.

Order and warm-up: step order and first touch decide small "gains" on a noisy host, so a
study can run its repeats in rounds (``order="interleaved"``: every cell once per round;
``"random"``: each round shuffled, seeded) and start with a warm-up (``warmup="run"``: one
discarded run of the first cell, stored under ``runs_dir/warmup``; or a time with its unit,
``"2s"``: fio's ``ramp_time`` on every run; ``iolab.core.validate.warmup`` reads every spelling).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..stats import drift
from ..machine import knobs
from ..runs import repair
from . import runner
from ..core.errors import InputError
from ..core.paths import runs_dir as default_runs_dir
from ..core.progress import bar
from ..runs.store import find_runs, job_key, load_runs, stored_job_key
from ..machine.target import Target
from ..core.validate import fio_time
from ..core.paths import check_name
from ..core.validate import check_cpus, check_fio_options, positive_ints, writable_dir
from ..core.validate import warmup as validate_warmup
from ..core.validate import warmup_text as validate_warmup_text

TOOLS = ("fio", "t/io_uring")
ORDERS = ("grid", "interleaved", "random")
WARMUP_DIR = "warmup"  # below runs_dir: discarded warm-up runs (not loaded: one level deeper)


@dataclass(frozen=True)
class Run:
    """One planned run: its cell (index and values), repeat, swept columns and job key."""

    index: int
    options: dict[str, Any]  # fio options (or t/io_uring flags) of the cell, over ``base``
    settings: dict[str, Any]  # knob values of the cell
    repeat: int
    swept: dict[str, Any]
    key: str
    label: str  # the run folder's name after its time stamp


def cells(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a grid, in the order given: {"a": [1, 2], "b": [x]} ->
    [{"a": 1, "b": x}, {"a": 2, "b": x}]."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def tio_key(flags: Mapping[str, Any], target: str, cpus: Any, swept: Mapping[str, Any]) -> str:
    """The job key of a t/io_uring run (its params.json has flags, not fio options)."""
    return job_key({"t/io_uring": {**runner.TIO_DEFAULTS, **flags}, "cpus": cpus}, target, swept)


def _stored_key(params: Mapping[str, Any]) -> str:
    if "tio_flags" in params:
        return tio_key(params["tio_flags"], params.get("target", ""), params.get("cpus"), params.get("swept", {}))
    return stored_job_key(params)


def _done(runs_dir: Path) -> dict[str, Path]:
    """Finished ("ok") runs under ``runs_dir`` by job key."""
    done: dict[str, Path] = {}
    for run_json in find_runs(runs_dir):
        params_path = run_json.parent / "params.json"
        if json.loads(run_json.read_text()).get("status") != "ok" or not params_path.exists():
            continue
        done.setdefault(_stored_key(json.loads(params_path.read_text())), run_json.parent)
    return done


def plan(
    grid: Mapping[str, Sequence[Any]],
    *,
    target: Target,
    base: Mapping[str, Any] | None = None,
    cpus: list[int] | None = None,
    repeats: int = 1,
    aliases: Mapping[str, str] | None = None,
    tags: Mapping[str, Any] | None = None,
    tool: str = "fio",
    label: str = "",
    order: str = "grid",
    seed: int = 0,
) -> list[Run]:
    """Every run of a sweep in the order it will run, checked before the first one: fio
    options (``iolab.core.validate``), knob names and values on this target (``knobs.checked``),
    CPUs and ``repeats``. ``order``: ``grid`` (each cell's repeats together, cells in grid
    order), ``interleaved`` (round r runs every cell's repeat r, in grid order) or
    ``random`` (the same rounds, each shuffled by ``random.Random(seed)``)."""
    if tool not in TOOLS:
        raise InputError(f"tool={tool!r}: choose one of {', '.join(TOOLS)}")
    order = str(order).strip().lower()
    if order not in ORDERS:
        raise InputError(f"order={order!r}: choose one of {', '.join(ORDERS)}")
    [repeats] = positive_ints("repeats", [repeats])
    check_cpus(cpus)
    aliases, runs = dict(aliases or {}), []
    for index, cell in enumerate(cells(grid)):
        settings = {k: v for k, v in cell.items() if k in knobs.KNOBS}
        knobs.checked(target, settings)
        options = {**(base or {}), **{k: v for k, v in cell.items() if k not in settings}}
        if tool == "fio":
            full = runner.job_options(options, target, cpus)
            check_fio_options(full)
            full.pop("name", None)
        named = {aliases.get(k, k): v for k, v in cell.items()}
        for rep in range(repeats):
            swept = named | dict(tags or {}) | {"repeat": rep}
            key = (
                job_key(full, target.describe(), swept)
                if tool == "fio"
                else tio_key(options, target.describe(), cpus, swept)
            )
            name = "-".join([label] * bool(label) + [f"{k}{v}" for k, v in named.items()] + [f"r{rep}"])
            runs.append(Run(index, options, settings, rep, swept, key, name))
    if order == "grid":
        return runs
    rounds = [[r for r in runs if r.repeat == rep] for rep in range(repeats)]
    if order == "random":
        rng = random.Random(seed)
        for one in rounds:
            rng.shuffle(one)
    return [r for one in rounds for r in one]


def with_ramp(base: Mapping[str, Any] | None, kind: str | float | None) -> dict[str, Any]:
    """``base`` with fio's ``ramp_time`` when the warm-up ``kind`` (``warmup_kind``) is a
    time: the warm-up every run of a grid gets."""
    return {**(base or {}), "ramp_time": fio_time(kind)} if isinstance(kind, float) else dict(base or {})


def warmup_for(kind: str | float | None, first: bool) -> str:
    """What a study that runs many sweeps (the ladder, the knee search) passes each one for
    its ``warmup`` of ``kind`` (``warmup_kind``): a discarded run before the first sweep
    only; a ramp time to every one (it is part of every run's job)."""
    if kind == "run":
        return "run" if first else "none"
    return validate_warmup_text(kind)


def warmup_kind(warmup: Any, tool: str = "fio") -> str | float | None:
    """What a ``warmup`` parameter asks for: None, "run" or seconds of fio ``ramp_time``
    (``iolab.core.validate.warmup``, the one reading of it everywhere)."""
    return validate_warmup(warmup, tool)


def sweep(
    grid: Mapping[str, Sequence[Any]],
    *,
    target: Target,
    base: Mapping[str, Any] | None = None,
    cpus: list[int] | None = None,
    repeats: int = 1,
    runs_dir: str | Path = "data/runs/sweep",
    resume: bool = True,
    aliases: Mapping[str, str] | None = None,
    tags: Mapping[str, Any] | None = None,
    tool: str = "fio",
    before_run: Callable[[], Any] | None = None,
    label: str = "",
    progress: str | None = "fio runs",
    order: str = "grid",
    seed: int = 0,
    warmup: Any = None,
    **measure_kw,
) -> pd.DataFrame:
    """Run every cell of ``grid`` ``repeats`` times; return the tidy table of its runs (only
    those: other runs in ``runs_dir`` are not mixed in), in grid order, with a ``drift``
    column naming what changed in each run's system snapshot since the sweep's first run
    (``iolab.stats.drift.flag``; what the grid sweeps is not drift).

    Everything is checked before the first run (``plan``). With ``resume``, a run whose
    job already has an "ok" run in ``runs_dir`` is not run again. ``aliases`` renames swept
    keys into columns ({"iodepth": "qd"}); ``tags`` are constant columns ({"tool": "fio"});
    ``before_run()`` is called before each run that is measured (``knobs.drop_caches``);
    ``label`` starts each run folder's name; ``progress`` names the bar (None: no bar).
    ``order`` and ``seed``: see ``plan``. ``warmup``: "run" measures the first run's job
    once more before it, into ``runs_dir/warmup`` (not in the table; only when something is
    left to run); a time (``"2s"``) adds fio's ``ramp_time`` to every run (its key changes
    with it); "none" or None: no warm-up. Anything else is refused (``validate.warmup``).
    ``measure_kw`` go to ``iolab.measure.runner.measure`` (``allow_destructive``, ``profile``,
    ``timeout_s``, ``sample_interval_s``) or ``measure_tio`` (``timeout_s``, ``tio``).

    What killed iolab processes left is repaired first (``iolab.runs.repair``), before a knob is
    read or set: a knob a dead process left changed would otherwise be kept as the value to
    put back, or be put back under the sweep by the repair its first run does."""
    repair.recover_and_report()
    warm = warmup_kind(warmup, tool)
    base = with_ramp(base, warm)
    runs = plan(
        grid,
        target=target,
        base=base,
        cpus=cpus,
        repeats=repeats,
        aliases=aliases,
        tags=tags,
        tool=tool,
        label=label,
        order=order,
        seed=seed,
    )
    runs_dir = Path(runs_dir)
    writable_dir(runs_dir, "runs folder", "runs_dir=DIR")
    done = _done(runs_dir) if resume else {}
    measure = runner.measure if tool == "fio" else runner.measure_tio
    with contextlib.ExitStack() as cell_knobs:  # the knobs of the cell being run
        cell = None
        for run in bar(runs, progress, total=len(runs)) if progress else runs:
            if run.key in done:
                continue
            if run.index != cell:
                cell_knobs.close()  # the previous cell's knobs are put back first
                cell_knobs.enter_context(knobs.applied(target, run.settings))
                cell = run.index
            if before_run:
                before_run()
            if warm == "run":
                measure(
                    run.options,
                    target,
                    cpus=cpus,
                    runs_dir=runs_dir / WARMUP_DIR,
                    swept={**run.swept, "warmup": True},
                    label=f"warmup-{run.label}",
                    **measure_kw,
                )
                warm = None
                if before_run:
                    before_run()
            done[run.key] = measure(
                run.options, target, cpus=cpus, runs_dir=runs_dir, swept=run.swept, label=run.label, **measure_kw
            ).path
    swept = {name for r in runs for name in r.swept} - {"repeat"}
    return drift.flag(load_runs([done[r.key] for r in runs]), swept=swept)


def new_sweep_dir(name: str) -> Path:
    """A fresh folder for one sweep under data/runs: ``<name>-<UTC time>``; InputError for a
    ``name`` that is no plain folder name (``iolab.core.paths.check_name``)."""
    name = check_name(name, "sweep name", "new_sweep_dir(NAME)")
    return default_runs_dir() / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
