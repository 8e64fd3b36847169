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
(``unavailable``): ``run`` stops there unless ``drop_unavailable``. Each (cell, repeat) is
one stored run whose ``swept`` values are the axes under the spec's names plus
``repeat`` and ``search`` (the spec's name and a hash of what else decides the runs); a
re-run into the same folder runs only what has no "ok" run, so after Ctrl-C, SIGTERM or
SIGKILL the same command ends with every (cell, repeat) exactly once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import hashlib
import itertools
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from ..stats import compare, drift
from ..machine import knobs
from ..runs import repair
from . import runner
from .clients import measure_hosts
from ..stats.analysis import add_cycles_per_io, t_interval
from ..core.atomic import write_atomic, write_json
from ..core.errors import InputError, IolabError
from ..machine.fio import fio_binary, to_jobfile
from ..machine.hosts import hosts_from
from ..machine.jobcheck import guard_job_text
from ..core.paths import check_name, safe_name
from ..core.paths import runs_dir as default_runs_dir
from ..core.progress import bar
from ..runs.runcache import load_cached
from ..runs.store import find_runs, load_runs
from ..machine.stress import stressed, stress_argv
from .sweep import with_ramp
from ..core.system import SYS_CPU, parse_cpu_list, read_text
from ..machine.target import Target, open_target
from ..core.validate import (
    check_cpus,
    check_fio_options,
    cpu_list,
    kind_of,
    mapping,
    positive_ints,
    warmup,
    warmup_text,
    writable_dir,
    yaml_mapping,
)

SPEC_KEYS = (
    "name",
    "description",
    "target",
    "size",
    "cpus",
    "repeats",
    "order",
    "seed",
    "base",
    "axes",
    "stop",
    "warmup",
    "hosts",
    "hosts_file",
)
MACHINE_AXES = ("cores", "devices", "stress", "siblings")
UNAVAILABLE = "unavailable.json"  # what a search with drop_unavailable left out, and why (left_out)
STRESS = ("idle", "stressed")
SIBLINGS = ("not used", "used")
ORDERS = ("random", "given")


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
class Spec:
    """A search spec (module docstring); ``load_spec`` checks one."""

    name: str
    target: list[str]
    axes: dict[str, list]
    base: dict[str, Any] = field(default_factory=dict)
    size: str = "1g"
    cpus: list[int] | None = None
    repeats: int = 1
    order: str = "random"
    seed: int = 0
    stop: dict[str, Any] | None = None
    warmup: str = "run"  # validate.warmup's spelling: run, none or a time (2s: ramp_time)
    description: str = ""
    path: Path | None = None
    hosts: list[str] | None = None
    hosts_file: str | None = None

    @property
    def ident(self) -> str:
        """``name-<hash>``: the hash covers what decides a run besides its axes and repeat."""
        what = json.dumps(
            {
                "target": self.target,
                "size": self.size,
                "cpus": self.cpus,
                "base": self.base,
                **({"hosts": self.hosts} if self.hosts else {}),
            },
            sort_keys=True,
            default=str,
        )
        return f"{self.name}-{hashlib.sha256(what.encode()).hexdigest()[:8]}"


@dataclass
class Cell:
    index: int
    values: dict[str, Any]  # axis -> value, the spec's names
    options: dict[str, Any]  # fio options over base
    settings: dict[str, Any]  # knob values
    cpus: list[int]
    devices: int
    stress_cpus: list[int]


@dataclass
class PlannedRun:
    cell: Cell
    repeat: int
    swept: dict[str, Any]
    left_out: str = ""  # the plan's illegal combinations, in words

    @property
    def key(self) -> str:
        return _swept_key(self.swept)

    @property
    def label(self) -> str:
        return "-".join(f"{k}{v}".replace(" ", "") for k, v in self.cell.values.items()) + f"-r{self.repeat}"


# ---------------------------------------------------------------- the spec
def load_spec(source: str | os.PathLike | Mapping[str, Any]) -> Spec:
    """A search spec from a YAML file (or a mapping), checked: unknown keys (with the
    nearest known one), empty axes, bad repeats/order/seed/cpus, machine-axis values.
    InputError says what to fix; nothing runs."""
    path = None
    if isinstance(source, Mapping):
        doc = dict(source)
    else:
        path = Path(source)
        doc = yaml_mapping(path, "search spec (YAML; data/examples/search_small.yaml is one)", SPEC_KEYS)
    doc = {str(k).strip(): v for k, v in doc.items()}
    unknown = [k for k in doc if k not in SPEC_KEYS]
    if unknown:
        hints = [
            f"{k!r}" + (f" (did you mean {near[0]!r}?)" if (near := difflib.get_close_matches(k, SPEC_KEYS, 1)) else "")
            for k in unknown
        ]
        raise InputError(f"unknown key {', '.join(hints)} in the search spec; the keys are {', '.join(SPEC_KEYS)}")
    if not doc.get("axes") or not isinstance(doc["axes"], Mapping):
        raise InputError(
            "the spec has no axes: give `axes:` a mapping of axis -> list of values, e.g. axes: {iodepth: [1, 8, 32]}"
        )
    name = (
        check_name(str(doc["name"]).strip(), "search name", "name: in the spec")
        if doc.get("name") is not None
        else safe_name(path.stem if path else "search", fallback="search")
    )
    targets = doc.get("target", "scratch")
    targets = [str(t).strip() for t in (targets if isinstance(targets, list) else [targets])]
    base = mapping(doc.get("base"), "base in the search spec", "base: {rw: randread, ioengine: io_uring}")
    warm = warmup(doc.get("warmup", "run"))
    if isinstance(warm, float):  # a time: fio's ramp_time on every run (and in the spec's hash)
        base = _ramp(base, warm)
    spec = Spec(
        name=name,
        target=targets,
        axes=_axes(doc["axes"]),
        base=base,
        size=str(doc.get("size", "1g")).strip(),
        repeats=positive_ints("repeats", [doc.get("repeats", 1)])[0],
        order=str(doc.get("order", "random")).strip().lower(),
        stop=_stop(doc.get("stop")),
        warmup=warmup_text(warm),
        description=str(doc.get("description", "")),
        path=path,
    )
    if doc.get("hosts") or doc.get("hosts_file"):
        base_dir = path.parent if path else Path(".")
        spec.hosts_file = str(base_dir / str(doc["hosts_file"]).strip()) if doc.get("hosts_file") else None
        spec.hosts = [h.name for h in hosts_from(doc.get("hosts"), spec.hosts_file)]
    if doc.get("cpus") is not None:
        spec.cpus = cpu_list(doc["cpus"] if isinstance(doc["cpus"], list) else str(doc["cpus"]))
    try:
        spec.seed = int(doc.get("seed", 0))
    except (TypeError, ValueError):
        raise InputError(f"seed {doc.get('seed')!r} is not a whole number; give e.g. seed: 1") from None
    if spec.order not in ORDERS:
        raise InputError(f"order {spec.order!r}: choose random (cells shuffled with the seed) or given")
    if "devices" in spec.axes and max(spec.axes["devices"]) > len(targets):
        raise InputError(
            f"the devices axis goes up to {max(spec.axes['devices'])} but the spec lists "
            f"{len(targets)} target(s): list one target per device under `target:`"
        )
    return spec


def _ramp(base: dict[str, Any], seconds: float) -> dict[str, Any]:
    """``base`` with fio's ramp_time for ``warmup: <time>`` (``sweep.with_ramp``); InputError
    when base sets another."""
    ramp = with_ramp(base, seconds)["ramp_time"]
    if str(base.get("ramp_time", ramp)).strip() != ramp:
        raise InputError(
            f"the spec sets warmup: {seconds:g}s and base ramp_time: {base['ramp_time']}; "
            "keep one of them (warmup: <time> is fio's ramp_time on every run)"
        )
    return {**base, "ramp_time": ramp}


def _axes(axes: Mapping[str, Any]) -> dict[str, list]:
    out: dict[str, list] = {}
    for axis, values in axes.items():
        axis = str(axis).strip()
        values = values if isinstance(values, list) else [values]
        nested = [v for v in values if isinstance(v, (Mapping, list))]
        if nested:
            raise InputError(
                f"axis {axis!r} has {nested[0]!r}, a {kind_of(nested[0])}; give a list of "
                f"plain values, e.g. {axis}: [1, 8, 32]"
            )
        if not values:
            raise InputError(f"axis {axis!r} has no values; give a list such as {axis}: [1, 2]")
        if axis in ("cores", "devices"):
            values = positive_ints(axis, values)
        elif axis == "stress":
            values = [_choice(axis, v, STRESS) for v in values]
        elif axis == "siblings":
            values = [_choice(axis, v, SIBLINGS) for v in values]
        elif axis in knobs.KNOBS:
            values = [v.strip() if isinstance(v, str) else v for v in values]
        if len(set(map(str, values))) < len(values):
            raise InputError(f"axis {axis!r} lists a value twice: {values}")
        out[axis] = values
    return out


def _choice(axis: str, value: Any, choices: Sequence[str]) -> str:
    text = " ".join(str(value).strip().lower().replace("_", " ").split())
    aliases = {"on": choices[-1], "off": choices[0], "true": choices[-1], "false": choices[0]}
    text = aliases.get(text, text)
    if text not in choices:
        raise InputError(f"{axis}: {value!r} is not one of {', '.join(choices)}")
    return text


def _stop(stop: Any) -> dict[str, Any] | None:
    if not stop:
        return None
    how = (
        "stop: give {metric: iops, ci_pct: 5, min_repeats: 3} (end a cell once the 95 % "
        "interval of its mean is within ci_pct % of it)"
    )
    if not isinstance(stop, Mapping) or set(stop) - {"metric", "ci_pct", "min_repeats"}:
        raise InputError(how)
    try:
        ci_pct = float(stop.get("ci_pct", 5))
    except (TypeError, ValueError):
        ci_pct = float("nan")
    if not 0 < ci_pct < float("inf") or isinstance(stop.get("ci_pct"), bool):
        raise InputError(f"stop.ci_pct {stop.get('ci_pct')!r} is not a percentage > 0; " + how)
    out = {
        "metric": str(stop.get("metric", "iops")),
        "ci_pct": ci_pct,
        "min_repeats": positive_ints("stop.min_repeats", [stop.get("min_repeats", 3)])[0],
    }
    if out["min_repeats"] < 2:
        raise InputError("stop.min_repeats must be at least 2: an interval needs two runs")
    return out


# ---------------------------------------------------------------- the machine's CPUs
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
    for values in itertools.product(*(axes[a] for a in names)):
        v = dict(zip(names, values))
        sib = v.get("siblings") == "used"
        cpus = cpu_mask(cpus_pool, v.get("cores", 1), sib) if "cores" in v or sib else (spec.cpus or cpus_pool[:1])
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


def plan(
    spec: Spec, targets: Sequence[Target], drop_unavailable: bool = False, allow_destructive: bool = False
) -> list[PlannedRun]:
    """Every (cell, repeat) in the order they will run, checked before the first: fio's own
    parse of each cell's job and the write guard (``iolab.machine.jobcheck``), knob values, CPUs.
    SearchUnavailable lists what cannot be varied, unless ``drop_unavailable``."""
    kept, problems, note = runnable_cells(spec, targets)
    if problems and not drop_unavailable:
        raise SearchUnavailable(problems)
    if not kept:
        raise InputError("nothing is left to run once what this machine cannot vary is dropped")
    fio = fio_binary()
    for cell in kept:
        opts = runner.job_options(cell.options, targets[0], cell.cpus)
        check_fio_options(opts)
        jobs = jobs_of(cell, targets)
        text = to_jobfile(
            {f"c{cell.index}-{i}": {**opts, **j} for i, j in enumerate(jobs)} if jobs else {f"c{cell.index}": opts}
        )
        guard_job_text(text, allow_destructive, fio=fio)
    order = list(range(len(kept)))
    rounds = []
    rng = random.Random(spec.seed)
    for rep in range(spec.repeats):
        if spec.order == "random":
            rng.shuffle(order)
        rounds += [
            PlannedRun(kept[i], rep, {**kept[i].values, "repeat": rep, "search": spec.ident}, note) for i in order
        ]
    return rounds


def _swept_key(swept: Mapping[str, Any]) -> str:
    return json.dumps(swept, sort_keys=True, default=str)


def done_runs(runs_dir: Path) -> dict[str, Path]:
    """Finished "ok" runs under ``runs_dir`` by their swept values (an interrupted or failed
    run is not done: it runs again)."""
    out: dict[str, Path] = {}
    for run_json in find_runs(runs_dir):
        params = run_json.parent / "params.json"
        if params.exists() and json.loads(run_json.read_text()).get("status") == "ok":
            out.setdefault(_swept_key(json.loads(params.read_text()).get("swept", {})), run_json.parent)
    return out


def _settled(run: PlannedRun, done: Mapping[str, Path], stop: Mapping[str, Any] | None) -> str:
    """Why the stop rule skips ``run`` ("" when it runs): its cell's interval is narrow."""
    if not stop or run.repeat < stop["min_repeats"]:
        return ""
    earlier = [p for r in range(run.repeat) if (p := done.get(_swept_key({**run.swept, "repeat": r})))]
    if len(earlier) < stop["min_repeats"]:  # (repeats the rule skipped are not in ``done``)
        return ""
    runs = compare.per_run(load_runs(earlier))
    if stop["metric"] not in runs:
        raise InputError(
            f"stop.metric {stop['metric']!r} is not a column of the runs; choose one of "
            f"{', '.join(runs.select_dtypes('number').columns)}"
        )
    values = runs[stop["metric"]].to_numpy(float)
    low, high = t_interval(values)
    mean = float(np.mean(values))
    if mean and (high - low) / 2 <= stop["ci_pct"] / 100 * abs(mean):
        return f"95 % interval within {stop['ci_pct']:g} % after {len(values)} runs"
    return ""


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
    allow_destructive: bool = False,
    progress: bool = True,
    announce=print,
    **measure_kw,
) -> pd.DataFrame:
    """Run ``spec`` (a Spec or a spec path) into ``runs_dir`` (default
    data/runs/search-<name>: the same folder every time, so a re-run resumes) and return
    the tidy table of its runs (``load_table``). Knobs are put back after every cell, and
    stress-ng stopped after every run. ``announce`` gets the plan in words (``describe_plan``;
    None: quiet). ``measure_kw`` go to ``iolab.measure.runner.measure``."""
    spec = spec if isinstance(spec, Spec) else load_spec(spec)
    runs_dir = Path(runs_dir or default_folder(spec))
    repair.recover_and_report()
    with open_targets(spec) as targets:
        runs = plan(spec, targets, drop_unavailable, allow_destructive)
        unavailable = cells(spec, targets)[1] if drop_unavailable else []
        if announce:
            announce(
                describe_plan(runs, spec)
                + "".join(
                    f"\n  left out: {axis} {', '.join(map(str, values))}: {why}" for axis, values, why in unavailable
                )
            )
        writable_dir(runs_dir, "runs folder", "--runs-dir DIR")
        write_atomic(runs_dir / "search.yaml", yaml.safe_dump(_as_doc(spec), sort_keys=False))
        write_json(runs_dir / UNAVAILABLE, [{"axis": a, "values": v, "why": w} for a, v, w in unavailable])
        done = done_runs(runs_dir)
        warm = warmup(spec.warmup)  # "run": once, before the first run measured; a time is in base
        hosts = hosts_from(spec.hosts, spec.hosts_file) if spec.hosts else None
        measure = measure_hosts if hosts else runner.measure
        with contextlib.ExitStack() as cell_knobs:
            cell = None
            for r in bar(runs, f"search {spec.name}", total=len(runs)) if progress else runs:
                if r.key in done or _settled(r, done, spec.stop):
                    continue
                if r.cell.index != cell:
                    cell_knobs.close()
                    for target in targets[: r.cell.devices]:  # every device the cell reads
                        cell_knobs.enter_context(knobs.applied(target, r.cell.settings))
                    cell = r.cell.index
                kw = dict(
                    cpus=r.cell.cpus,
                    jobs=jobs_of(r.cell, targets),
                    allow_destructive=allow_destructive,
                    **measure_kw,
                    **({"hosts": hosts} if hosts else {}),
                )
                with stressed(r.cell.stress_cpus):
                    if warm == "run":
                        measure(
                            r.cell.options,
                            targets[0],
                            runs_dir=runs_dir / "warmup",
                            swept={**r.swept, "warmup": True},
                            label=f"warmup-{r.label}",
                            **kw,
                        )
                        warm = None
                    done[r.key] = measure(
                        r.cell.options, targets[0], runs_dir=runs_dir, swept=r.swept, label=r.label, **kw
                    ).path
    paths = [done[r.key] for r in runs if r.key in done]
    return _table(load_runs(paths), varied(spec.axes, left_out(runs_dir)))


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
    cells_ = compare.summarise(table, axes, metrics=[metric]).sort_values(f"{metric}_mean", ascending=False)

    def line(row) -> str:
        where = ", ".join(f"{a}={row[a]}" for a in axes)
        ci = (
            compare.NOT_INFORMATIVE
            if pd.isna(row[f"{metric}_ci_low"])
            else f"[{row[f'{metric}_ci_low']:,.0f}, {row[f'{metric}_ci_high']:,.0f}]"
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


def describe_plan(runs: Sequence[PlannedRun], spec: Spec) -> str:
    """A line for people: how many cells and runs, and how long at the base runtime."""
    n_cells = len({r.cell.index for r in runs})
    runtime = str(spec.base.get("runtime", runner.DEFAULTS["runtime"]))
    left_out = f"; {runs[0].left_out}" if runs and runs[0].left_out else ""
    return (
        f"search {spec.name}: {n_cells} cells x {spec.repeats} repeats = {len(runs)} runs of {runtime} "
        f"each ({spec.order} order, seed {spec.seed}){left_out}"
    )


__all__ = [
    "Spec",
    "SearchUnavailable",
    "load_spec",
    "plan",
    "run",
    "load_table",
    "cells",
    "runnable_cells",
    "varied",
    "left_out",
    "cpu_mask",
    "done_runs",
    "describe_plan",
    "open_targets",
    "summary",
]
