"""A parameter search written down and run for hours (seed 003, AiSIO): a YAML spec whose
axes are fio options, knobs (``iolab.machine.knobs``) and four axes of the machine, run as their
Cartesian product, cells in seeded random order, with repeats, resumable after any crash.

    name: bs-qd
    target: scratch            # scratch, loop:SIZE, a path, or a list (one per device)
    size: 1g
    cpus: [0]                  # the CPUs runs use (the pool ``cores`` draws from)
    repeats: 5
    order: random              # or given
    seed: 1
    base: {rw: randread, ioengine: io_uring, direct: 1, runtime: 10s}
    axes:
      iodepth: [1, 8, 32, 128]
      scheduler: [none, mq-deadline]
      cores: [1, 2]            # how many cores of the pool, seed 003's CPU-mask rule
      devices: [1, 2]          # how many of the listed targets, one fio job per device
      stress: [idle, stressed] # stress-ng on the CPUs the run does not use
      siblings: [not used, used]  # thread siblings of each core (needs SMT)
    stop: {metric: iops, ci_pct: 5, min_repeats: 3}   # optional: end a cell early
    hosts: 10.0.0.2, 10.0.0.3  # optional: every run on these fio servers at once (iolab.measure.clients)
    hosts_file: hosts.yaml     # optional: how to reach them (iolab.machine.hosts)

The machine axes: ``cores`` N takes CPUs of the pool in increasing id order until N
physical cores are covered, one CPU per core, or every thread of each core with
``siblings: used`` (seed 003's mask rule). With D devices and C CPUs a run has max(D, C)
fio jobs: job j reads device j mod D on CPU j mod C, reported as one (group_reporting).
With ``hosts`` every run is one client/server run on all of them (a row per host and a
pooled row); the CPUs and devices are those of each host, knobs are set on this machine only.

Before anything runs, every cell is checked (fio's own parse of its job, the write guard,
knob values on the target, CPUs, stress-ng) and what this machine cannot vary is reported
(``unavailable``): ``run`` stops there unless ``drop_unavailable``. fio parses the jobs of
thousands of cells in a few calls (``iolab.machine.jobbatch``; benchmarks/README.md times
it against one call per cell); the plan's size and wall time are said before its cells are
checked (``describe_size``), with a warning above 1,000 runs or 8 hours
(``iolab.measure.plans``), and ``iolab search --dry-run`` then lists the legal and illegal
cells, each reason with the cells it refuses (``check``, ``describe_check``). Each (cell, repeat) is
one stored run whose ``swept`` values are the axes under the spec's names plus
``repeat`` and ``search`` (the spec's name and a hash of what else decides the runs); a
re-run into the same folder runs only what has no "ok" run, so after Ctrl-C, SIGTERM or
SIGKILL the same command ends with every (cell, repeat) exactly once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..core.atomic import write_atomic, write_json
from ..core.errors import InputError, IolabError, OutputExists
from ..core.paths import check_name
from ..core.paths import runs_dir as default_runs_dir
from ..core.progress import bar
from ..core.readable import interval_text, readable_seconds
from ..core.system import SYS_CPU, parse_cpu_list, read_text
from ..core.validate import (
    check_cpus,
    check_fio_options,
    fio_seconds,
    writable_dir,
)
from ..machine import knobs
from ..machine.fio import fio_binary, to_jobfile
from ..machine.hosts import Host, hosts_from
from ..machine.jobbatch import guard_job_texts
from ..machine.locks import runs_folder_locked
from ..machine.stress import stress_argv
from ..machine.target import Target, open_target
from ..runs import repair
from ..runs.runcache import load_cached, load_runs
from ..stats import drift, repeat_stats
from ..stats.cycles import add_cycles_per_io
from .campaign import Rounds, execute, ordered, paths_of
from .options import MeasureOptions
from .planned import DEFAULTS, PlannedRun
from .plans import RUN_OVERHEAD_S, cut, too_big
from .search_spec import SPEC_KEYS, Spec, load_spec

MACHINE_AXES = ("cores", "devices", "stress", "siblings")
UNAVAILABLE = "unavailable.json"  # what a search with drop_unavailable left out, and why (left_out)


class SearchUnavailable(InputError):
    """Axes or values this machine cannot vary (``problems``: (axis, values, reason))."""

    def __init__(self, problems: list[tuple[str, list, str]]):
        self.problems = problems
        lines = [f"  {axis} {', '.join(map(str, values))}: {why}" for axis, values, why in problems]
        super().__init__(
            "this machine cannot vary:\n"
            + "\n".join(lines)
            + "\nDrop them (--drop-unavailable, drop_unavailable=True) to run the rest, "
            "or change the spec; nothing was run"
        )


@dataclass
class Cell:
    index: int
    values: dict[str, Any]  # axis -> value, the spec's names
    options: dict[str, Any]  # fio options over base
    settings: dict[str, Any]  # knob values
    cpus: list[int]
    devices: int
    stress_cpus: list[int]


# ---------------------------------------------------------------- the spec
def pool(spec: Spec) -> list[int]:
    """The CPUs the search may use: the spec's ``cpus`` (checked), else every allowed CPU."""
    return check_cpus(spec.cpus) if spec.cpus else sorted(os.sched_getaffinity(0))


def siblings_of(cpu: int) -> list[int]:
    """The thread siblings of ``cpu`` (itself included), from sysfs topology."""
    text = read_text(SYS_CPU / f"cpu{cpu}" / "topology" / "thread_siblings_list")
    return parse_cpu_list(text) if text else [cpu]


def cpu_mask(cpus: Sequence[int], cores: int, siblings: bool) -> list[int] | None:
    """Seed 003's rule: CPUs of ``cpus`` in increasing id until ``cores`` physical cores are
    covered; one CPU per core, or every sibling of each with ``siblings``. None when the
    pool has fewer cores."""
    chosen: list[int] = []
    seen: set[frozenset] = set()
    for cpu in sorted(cpus):
        core = frozenset(siblings_of(cpu))
        if core in seen:
            continue
        seen.add(core)
        chosen += sorted(c for c in core if c in cpus) if siblings else [cpu]
        if len(seen) == cores:
            return chosen
    return None


# ---------------------------------------------------------------- planning
def cells(spec: Spec, targets: Sequence[Target]) -> tuple[list[Cell], list[tuple[str, list, str]], str]:
    """Every legal cell of the spec, what cannot be varied here ((axis, values, why)), and
    a note on the illegal combinations left out ("" when none)."""
    problems: list[tuple[str, list, str]] = []
    cpus_pool = pool(spec)
    online = sorted(os.sched_getaffinity(0))
    axes = spec.axes
    for axis, values in axes.items():
        if axis in knobs.KNOBS:
            bad = {}
            for v in values:
                why = next((w for t in targets if (w := knobs.get(axis).check(t, v))), None)
                if why:
                    bad.setdefault(why, []).append(v)
            problems += [(axis, vs, why) for why, vs in bad.items()]
    if "siblings" in axes and "used" in axes["siblings"] and all(len(siblings_of(c)) == 1 for c in cpus_pool):
        problems.append(("siblings", ["used"], "no CPU in the pool has a thread sibling (SMT off or absent)"))
    if "cores" in axes:
        most = len({frozenset(siblings_of(c)) for c in cpus_pool})
        too_many = [n for n in axes["cores"] if n > most]
        if too_many:
            problems.append(("cores", too_many, f"the CPU pool ({_fmt(cpus_pool)}) has {most} core(s)"))
    if "stress" in axes and "stressed" in axes["stress"]:
        try:
            stress_argv([0])
        except IolabError as exc:
            problems.append(("stress", ["stressed"], str(exc)))
    out, illegal = [], 0
    names = list(axes)
    masks: dict[tuple[int, bool], list[int] | None] = {}  # (cores, siblings) -> CPUs: sysfs read once each
    for values in itertools.product(*(axes[a] for a in names)):
        v = dict(zip(names, values))
        sib = v.get("siblings") == "used"
        if "cores" in v or sib:
            key = (v.get("cores", 1), sib)
            cpus = masks[key] if key in masks else masks.setdefault(key, cpu_mask(cpus_pool, *key))
        else:
            cpus = spec.cpus or cpus_pool[:1]
        if cpus is None:
            continue  # reported above (too many cores)
        stress_cpus = [c for c in online if c not in cpus] if v.get("stress") == "stressed" else []
        if v.get("stress") == "stressed" and not stress_cpus:
            illegal += 1
            continue
        settings = {a: x for a, x in v.items() if a in knobs.KNOBS}
        options = {**spec.base, **{a: x for a, x in v.items() if a not in knobs.KNOBS and a not in MACHINE_AXES}}
        out.append(Cell(len(out), v, options, settings, cpus, v.get("devices", 1), stress_cpus))
    note = (
        f"{illegal} cell(s) left out: stressed with every CPU in use, nothing is left to stress "
        "(an illegal combination, like seed 003's SMT off + siblings used)"
        if illegal
        else ""
    )
    return out, problems, note


def runnable_cells(spec: Spec, targets: Sequence[Target]) -> tuple[list[Cell], list[tuple[str, list, str]], str]:
    """``cells`` without what this machine cannot vary: an axis none of whose values can be
    set here is left out whole (its runs keep the machine's setting and the table has no such
    column), an axis some of whose values can be set keeps those."""
    _, problems, _ = cells(spec, targets)
    unset = {(axis, str(v)) for axis, values, _ in problems for v in values}
    gone = [a for a, values in spec.axes.items() if all((a, str(v)) in unset for v in values)]
    if gone:
        spec = dataclasses.replace(spec, axes={a: v for a, v in spec.axes.items() if a not in gone})
    all_cells, _, note = cells(spec, targets)
    kept = [c for c in all_cells if not any((a, str(x)) in unset for a, x in c.values.items())]
    return kept, problems, note


def _fmt(cpus: Sequence[int]) -> str:
    return ",".join(map(str, cpus))


def jobs_of(cell: Cell, targets: Sequence[Target]) -> list[dict[str, Any]]:
    """One fio job per device and at least one per CPU (module docstring); [] for one of each."""
    n = max(cell.devices, len(cell.cpus))
    if n == 1:
        return []
    return [
        {**targets[j % cell.devices].fio_options, "cpus_allowed": str(cell.cpus[j % len(cell.cpus)])} for j in range(n)
    ]


@dataclass
class Checked:
    """A spec planned and checked cell by cell (``check``): ``runs``, those of its legal
    cells in the order they run; ``refused``, why each other cell cannot run (cell index ->
    the error ``plan`` raises for it); ``cells``, every cell this machine can vary;
    ``problems`` and ``note`` as ``runnable_cells`` gives them."""

    spec: Spec
    cells: list[Cell]
    runs: list[PlannedRun]
    refused: dict[int, IolabError]
    problems: list[tuple[str, list, str]]
    note: str


def check(
    spec: Spec,
    targets: Sequence[Target],
    drop_unavailable: bool = False,
    allow_destructive: bool = False,
    hosts: Sequence[Host] = (),
    *,
    announce=None,
    progress: bool = True,
) -> Checked:
    """Every cell of ``spec`` checked as ``plan`` checks it, none raised: iolab's checks of
    its fio options, then fio's own parse of its job and the write guard, fio asked once per
    chunk of cells (``iolab.machine.jobbatch``). ``announce`` gets the plan's size and wall
    time (``describe_size``: counted before any cell is checked); ``progress``: a bar over the
    cells checked, once that takes more than a second. SearchUnavailable as ``plan``."""
    kept, problems, note = runnable_cells(spec, targets)
    if problems and not drop_unavailable:
        raise SearchUnavailable(problems)
    if not kept:
        raise InputError("nothing is left to run once what this machine cannot vary is dropped")
    if announce:
        announce(describe_size(kept, spec, targets, note))
    refused: dict[int, IolabError] = {}
    texts: dict[int, str] = {}
    jobs: dict[int, list[dict[str, Any]]] = {}
    for cell in kept:
        opts = PlannedRun(cell.options, targets[0], cpus=cell.cpus).full_options
        try:
            check_fio_options(opts)
        except InputError as exc:
            refused[cell.index] = exc
            continue
        jobs[cell.index] = jobs_of(cell, targets)
        sections = {f"c{cell.index}-{i}": {**opts, **j} for i, j in enumerate(jobs[cell.index])}
        texts[cell.index] = to_jobfile(sections or {f"c{cell.index}": opts})
    watch = bar(None, f"search {spec.name}: checking", "cell", len(texts), 1.0) if progress and texts else None
    with watch if watch is not None else contextlib.nullcontext():
        told = watch.update if watch is not None else None
        verdicts = guard_job_texts(list(texts.values()), allow_destructive, fio=fio_binary(), on_parsed=told)
    refused.update((i, v) for i, v in zip(texts, verdicts) if isinstance(v, IolabError))
    runs, ident = [], spec.ident
    for cell in kept:
        if cell.index in refused:
            continue
        name = "-".join(f"{k}{v}".replace(" ", "") for k, v in cell.values.items())
        for rep in range(spec.repeats):
            runs.append(
                PlannedRun(
                    cell.options,
                    targets[0],
                    {**cell.values, "repeat": rep, "search": ident},
                    f"{name}-r{rep}",
                    cell.index,
                    cell.cpus,
                    cell.settings,
                    tuple(targets[: cell.devices]),  # every device the cell reads
                    tuple(cell.stress_cpus),
                    tuple(jobs[cell.index]),
                    tuple(hosts),
                    "hosts" if hosts else "fio",
                )
            )
    rounds = rounds_of(spec)
    return Checked(spec, kept, ordered(runs, rounds.order, rounds.seed), refused, problems, note)


def plan(
    spec: Spec,
    targets: Sequence[Target],
    drop_unavailable: bool = False,
    allow_destructive: bool = False,
    hosts: Sequence[Host] = (),
) -> list[PlannedRun]:
    """Every (cell, repeat) in the order it will run (``campaign.ordered``: rounds, each
    shuffled with the seed, or in the spec's order), checked before the first (``check``):
    fio's own parse of each cell's job and the write guard (``iolab.machine.jobcheck``), knob
    values, CPUs; the first cell that cannot run raises its error. SearchUnavailable lists
    what cannot be varied, unless ``drop_unavailable``. Each run reads the cell's devices,
    sets its knobs on each of them and runs stress-ng on its stress CPUs; on ``hosts`` (fio
    servers) when the spec names any."""
    checked = check(spec, targets, drop_unavailable, allow_destructive, hosts, progress=False)
    if checked.refused:
        raise checked.refused[min(checked.refused)]
    return checked.runs


def rounds_of(spec: Spec) -> Rounds:
    """How the spec's runs repeat: its repeats, order (``given`` is the campaign's
    interleaved), seed, warm-up and stop rule (``iolab.measure.campaign.Rounds``)."""
    return Rounds.of(
        {"repeats": spec.repeats, "order": spec.order, "seed": spec.seed, "warmup": spec.warmup, "stop": spec.stop}
    )


# ---------------------------------------------------------------- running
@contextlib.contextmanager
def open_targets(spec: Spec):
    """The spec's targets, opened for the block (loop devices detached after it)."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(open_target(t, spec.size)) for t in spec.target]


def run(
    spec: Spec | str | os.PathLike,
    runs_dir: str | os.PathLike | None = None,
    *,
    drop_unavailable: bool = False,
    how: MeasureOptions | Mapping[str, Any] | None = None,
    progress: bool = True,
    announce=print,
) -> pd.DataFrame:
    """Run ``spec`` (a Spec or a spec path) into ``runs_dir`` (default
    data/runs/search-<name>: the same folder every time, so a re-run resumes) and return
    the tidy table of its runs (``load_table``), through the one campaign loop
    (``iolab.measure.campaign.execute``): knobs put back after every cell, stress-ng stopped
    after every run, the spec's warm-up and stop rule. ``announce`` gets the plan in words
    once every cell is checked (``describe_size``; None: quiet). ``how``: how each run is
    measured (``MeasureOptions``)."""
    spec = spec if isinstance(spec, Spec) else load_spec(spec)
    how = MeasureOptions.of(how)
    runs_dir = Path(runs_dir or default_folder(spec))
    repair.recover_and_report()
    _refuse_foreign(runs_dir)  # before the plan is said (and again under the folder's lock)
    with open_targets(spec) as targets:
        hosts = hosts_from(spec.hosts, spec.hosts_file) if spec.hosts else ()
        checked = check(spec, targets, drop_unavailable, how.allow_destructive, hosts, progress=progress)
        if checked.refused:  # said before anything else, as one error
            raise checked.refused[min(checked.refused)]
        runs, unavailable = checked.runs, checked.problems if drop_unavailable else []
        if announce:
            announce(
                describe_size(checked.cells, spec, targets, checked.note)
                + "".join(f"\n  left out: {axis} {', '.join(map(str, v))}: {why}" for axis, v, why in unavailable)
            )
        writable_dir(runs_dir, "runs folder", "--runs-dir DIR")
        with runs_folder_locked(runs_dir):  # one study per runs folder, its spec too (execute holds it again)
            _refuse_foreign(runs_dir)
            if not _is_the_spec(spec, runs_dir / "search.yaml"):  # the user's own spec file stays as written
                write_atomic(runs_dir / "search.yaml", yaml.safe_dump(_as_doc(spec), sort_keys=False))
            write_json(runs_dir / UNAVAILABLE, [{"axis": a, "values": v, "why": w} for a, v, w in unavailable])
            done = execute(
                runs, runs_dir, rounds=rounds_of(spec), how=how, progress=f"search {spec.name}" if progress else None
            )
    return _table(load_runs(paths_of(runs, done)), varied(spec.axes, left_out(runs_dir)))


def _refuse_foreign(runs_dir: Path) -> None:
    """OutputExists when the runs folder holds a ``search.yaml`` or ``unavailable.json`` that
    is not a search's (a user's file of that name): iolab replaces only its own, a search's
    spec and left-out list being rewritten on every run of it (a resumed or edited spec)."""
    for name, ours in (("search.yaml", _is_spec_doc), (UNAVAILABLE, _is_left_out_doc)):
        path = runs_dir / name
        if os.path.lexists(path) and not ours(path):
            raise OutputExists(
                f"{path} exists and is not a search's {name}: iolab would replace it; "
                "move it away, or give the search another --runs-dir"
            )


def _is_the_spec(spec: Spec, saved: Path) -> bool:
    """Whether ``saved`` is the very file the spec was read from (``iolab search search.yaml
    --runs-dir .``): then it is the user's, never rewritten."""
    try:
        return spec.path is not None and os.path.samefile(spec.path, saved)
    except OSError:
        return False


def _is_spec_doc(path: Path) -> bool:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return path.is_file() and not path.is_symlink() and isinstance(doc, dict) and "name" in doc


def _is_left_out_doc(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    ok = isinstance(doc, list) and all(isinstance(d, dict) and "axis" in d for d in doc)
    return ok and path.is_file() and not path.is_symlink()


def default_folder(spec: Spec) -> Path:
    """Where a search's runs go unless told: ``<runs folder>/search-<name>`` (the name checked:
    nothing outside the runs folder)."""
    return default_runs_dir() / f"search-{check_name(spec.name, 'search name', 'name: in the spec')}"


def _as_doc(spec: Spec) -> dict[str, Any]:
    doc = {k: getattr(spec, k) for k in SPEC_KEYS if getattr(spec, k) not in (None, "", {})}
    return json.loads(json.dumps(doc, default=str))


def _table(table: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    if table.empty:
        return table
    table = add_cycles_per_io(table)
    return drift.flag(table, swept=[a for a in axes if a in table])


def varied(axes: Mapping[str, Sequence], left: Sequence[Mapping[str, Any]]) -> list[str]:
    """The axes a search really varied: ``axes`` without those ``left`` (``left_out``) left
    out whole. Their names may still be columns of the table (the machine's snapshot has a
    ``governor`` and an ``smt``), as settings, not as axes."""
    whole = {e["axis"] for e in left if {str(v) for v in axes.get(e["axis"], [])} <= {str(v) for v in e["values"]}}
    return [a for a in axes if a not in whole]


def left_out(runs_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """What a search run with ``drop_unavailable`` left out because this machine cannot
    vary it: [{"axis", "values", "why"}] (kept in its runs folder; [] when nothing was)."""
    try:
        return json.loads((Path(runs_dir) / UNAVAILABLE).read_text())
    except (OSError, ValueError):
        return []


def load_table(runs_dir: str | os.PathLike) -> pd.DataFrame:
    """The tidy table of a search's runs folder (its axes from the ``search.yaml`` kept
    there), re-derived from the run folders through the table cache (``iolab.runs.runcache``)."""
    runs_dir = Path(runs_dir)
    saved = runs_dir / "search.yaml"
    axes = (yaml.safe_load(saved.read_text()) or {}).get("axes", {}) if saved.exists() else {}
    axes = varied(axes, left_out(runs_dir))
    table = load_cached(runs_dir)
    if table.empty:
        raise InputError(
            f"no finished runs in {runs_dir}: give the runs folder of a search "
            "(it holds search.yaml and one folder per run)"
        )
    return _table(table, axes)


def summary(table: pd.DataFrame, spec: Spec, metric: str = "iops") -> str:
    """A few lines for the terminal: runs, and the best and worst cells with their intervals."""
    axes = [a for a in spec.axes if a in table]
    cells_ = repeat_stats.summarise(table, axes, metrics=[metric]).sort_values(f"{metric}_mean", ascending=False)

    def line(row) -> str:
        where = ", ".join(f"{a}={row[a]}" for a in axes)
        ci = (
            repeat_stats.no_interval_words(row["n"], row[f"{metric}_cv_pct"])
            if pd.isna(row[f"{metric}_ci_low"])
            else interval_text(f"{row[f'{metric}_ci_low']:,.0f}", f"{row[f'{metric}_ci_high']:,.0f}")
        )
        return f"{where}: {row[f'{metric}_mean']:,.0f} {ci} ({int(row['n'])} runs)" + (
            "  UNSTABLE" if row["unstable"] else ""
        )

    runs = table["run_id"].nunique() if "run_id" in table else len(table)
    return "\n".join(
        [
            f"{runs} runs in {len(cells_)} cells; {metric} mean [95 % interval]:",
            "  best   " + line(cells_.iloc[0]),
            "  worst  " + line(cells_.iloc[-1]),
        ]
    )


def describe_plan(runs: Sequence[PlannedRun], spec: Spec, left_out: str = "") -> str:
    """The plan in words for people (``plan``'s runs): its cells, runs and wall time, and a
    warning when it is bigger than people usually mean (``iolab.measure.plans``);
    ``left_out``: the plan's illegal combinations, in words (``runnable_cells``)."""
    seconds = sum(run_seconds(r.full_options) for r in runs)
    return _size_words(spec, len({r.cell for r in runs}), len(runs), seconds, left_out)


def describe_size(cells_: Sequence[Cell], spec: Spec, targets: Sequence[Target], left_out: str = "") -> str:
    """``describe_plan`` of ``cells_`` (``runnable_cells``) before any is checked: counted
    and estimated from the cells alone, each run ``spec.repeats`` times."""
    per_cell = sum(run_seconds(PlannedRun(c.options, targets[0], cpus=c.cpus).full_options) for c in cells_)
    return _size_words(spec, len(cells_), len(cells_) * spec.repeats, per_cell * spec.repeats, left_out)


def run_seconds(options: Mapping[str, Any]) -> float:
    """Seconds of wall time one run of a job with these fio options should take: its
    ``runtime`` and ``ramp_time`` (fio's time syntax) and ``RUN_OVERHEAD_S``."""
    return _seconds(str(options.get("runtime", "")), str(options.get("ramp_time", "")))


@functools.lru_cache(maxsize=256)
def _seconds(runtime: str, ramp_time: str) -> float:
    total = RUN_OVERHEAD_S
    for value in (runtime, ramp_time):
        with contextlib.suppress(InputError):
            total += fio_seconds(value) if value.strip() else 0.0
    return total


def _with_warmup(spec: Spec, seconds: float, n_runs: int) -> float:
    """``seconds`` of ``n_runs`` runs and the discarded warm-up run before them (one more run of
    about their mean), when the spec has one."""
    return seconds + (seconds / n_runs if n_runs and rounds_of(spec).warmup_kind() == "run" else 0.0)


def _size_words(spec: Spec, n_cells: int, n_runs: int, seconds: float, left_out: str) -> str:
    seconds = _with_warmup(spec, seconds, n_runs)
    warm = rounds_of(spec).warmup_kind() == "run"
    runtime = "runtime per cell" if "runtime" in spec.axes else str(spec.base.get("runtime", DEFAULTS["runtime"]))
    how = f"{runtime} each + ~{RUN_OVERHEAD_S:g} s per run" + (", a warm-up run first" if warm else "")
    line = (
        f"search {spec.name}: {n_cells:,} cells x {spec.repeats} repeats = {n_runs:,} runs, "
        f"{'at most ' if spec.stop else ''}about {readable_seconds(seconds)} of wall time ({how}; "
        f"{spec.order} order, seed {spec.seed})" + (f"; {left_out}" if left_out else "")
    )
    widest = sorted(spec.axes.items(), key=lambda a: -len(a[1]))[:3]
    smaller = (
        f"fewer values on the widest axes ({', '.join(f'{a}: {len(v)}' for a, v in widest)}), fewer repeats "
        f"(repeats: {spec.repeats} now), a shorter runtime (runtime: {runtime} now)"
        + (
            ""
            if spec.stop
            else " or a stop rule that ends a cell once its interval is narrow (stop: {metric: iops, ci_pct: 5})"
        )
    )
    warning = too_big(n_runs, seconds, "runs", smaller)
    return line + (f"\n{warning}" if warning else "")


def describe_check(checked: Checked, every: bool = False) -> str:
    """The rest of a dry run's plan (``check``): the legal and illegal cells with their runs
    and wall time, each reason with the cells it refuses (the cell's own job names said as
    ``c<cell>``), and the cells listed, the first and last few unless ``every``."""
    refused, spec = checked.refused, checked.spec
    each = sum(run_seconds(r.full_options) for r in checked.runs)
    seconds = _with_warmup(spec, each, len(checked.runs))
    reasons: dict[str, list[int]] = {}
    for index, exc in sorted(refused.items()):
        reasons.setdefault(re.sub(rf"\bc{index}(-\d+)?\b", "c<cell>", str(exc)), []).append(index)
    ranked = sorted(reasons.items(), key=lambda r: (-len(r[1]), r[1][0]))
    lines = [
        f"cells: {len(checked.cells) - len(refused):,} legal, {len(refused):,} illegal: {len(checked.runs):,} runs, "
        f"about {readable_seconds(seconds)}"
        + ("; iolab's option checks, fio's parse or the write guard refuse the illegal ones:" if refused else "")
    ]
    for n, (why, which) in enumerate(ranked, 1):
        some = ", ".join(f"c{i}" for i in which[:5]) + (", …" if len(which) > 5 else "")
        lines.append(f"  ({n}) {len(which):,} cell(s) ({some}): {why}")
    why_of = {i: n for n, (_, which) in enumerate(ranked, 1) for i in which}
    listing = [
        f"  c{c.index:<6} {' '.join(f'{a}={v}' for a, v in c.values.items())}"
        + (f"  ILLEGAL ({why_of[c.index]})" if c.index in refused else "")
        for c in checked.cells
    ]
    axes = "; ".join(
        f"{a}: {', '.join(map(str, v[:3]))}{', …' if len(v) > 3 else ''} ({len(v)})" for a, v in spec.axes.items()
    )
    return "\n".join([*lines, f"cells ({len(listing):,}; axes {axes}):", *cut(listing, every, "cells", "--list-all")])


__all__ = [
    "SearchUnavailable",
    "Checked",
    "check",
    "plan",
    "describe_size",
    "describe_check",
    "run_seconds",
    "run",
    "load_table",
    "cells",
    "runnable_cells",
    "varied",
    "left_out",
    "cpu_mask",
    "describe_plan",
    "open_targets",
    "summary",
]
