"""The seed write-ups reproduced on this machine: their manifests (``data/seeds/*.yaml``), the
plan of notebook runs each needs, and the runner behind ``iolab seeds``.

    seeds = load_seeds(only=["000", "002"])
    todo = plan(seeds, out="papermill_runs/seeds", level="quick")   # devices=[...], cpus=[...]
    print(describe(todo))          # every notebook run, its fio runs and the time it should take
    runner.run(todo, out, "quick")  # iolab.seeds.runner: one iolab batch per seed, then the pages

A manifest names the write-up (title, author, date, the file in the project's ``shared/seeds``),
its test set-up as published (CPU, clock, device, kernel, fio and its flags, polled,
emulated), the ``experiments`` that reproduce it (a notebook, the section of the write-up it
follows, its method in a paragraph, its parameters, and the ``quick`` and ``smoke`` overrides;
the smoke level starts from the notebook's own smoke settings, ``iolab.report.contract``)
and the ``figures``: how each row of ``data/reference/published_figures.csv`` for the seed is
read from the local results, each named by its key in the notebook's declaration
(``iolab.report.contract``; ``iolab.seeds.comparisons``).

Levels: ``full`` (the write-up's method at workstation scale: under an hour on one SSD),
``quick`` (the same steps at short runtimes: about 10 minutes on a 2-core VM) and ``smoke``
(the smallest settings, for the test suite: plumbing, not numbers; the pages say so).

Each seed is an ``iolab batch`` into ``OUT/seed-NNN/`` (one folder per experiment, resumable:
running the same command again runs only what failed or is missing; a failed experiment is
kept with its error and the rest go on). With no ``devices`` every experiment keeps its
notebook's default target (the scratch file, or a tmpfs-backed loop device where a step needs a
block device); with devices, the single-device experiments use the first and the search all.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from ..core import paths
from ..core.errors import InputError
from ..core.outputs import claim_folder
from ..core.paths import check_name
from ..core.readable import readable_seconds
from ..core.schema import Table, Text, Word, Words, refusal, validated, whole
from ..core.validate import mapping, yaml_mapping
from ..machine.preflight_check import CHECK_NAMES
from ..measure.plans import too_big
from ..report.batch import BatchRun, check_parameters
from ..report.contract import declared, estimate_run, parameters_of, slowdown

LEVELS = ("full", "quick", "smoke")


def seeds_dir() -> Path:
    return paths.REPO / "data" / "seeds"


# ---------------------------------------------------------------- the manifest as written
def _notebook(name: str) -> Path:
    """A notebook of the project's ``notebooks/`` folder, by its file name."""
    notebook = paths.REPO / "notebooks" / Path(name).name
    if not notebook.is_file():
        raise ValueError(f"no notebook {notebook.name} in {notebook.parent}")
    return notebook


def _date(value: Any) -> Any:
    """YAML reads ``date: 2026-05-05`` as a date: the text it was written as."""
    return value.isoformat() if isinstance(value, datetime.date) else value


class SetupEntry(BaseModel):
    """The test set-up as published (``setup:``), its machine facts named as this machine's are
    (``iolab.core.system.MACHINE_FACTS``)."""

    model_config = ConfigDict(extra="forbid")
    cpu_model: Word | None = Field(
        None, description="the CPU, as the write-up names it", examples=["Intel Core i9-13900KS"]
    )
    clock_ghz: float | None = Field(None, description="a clock in GHz", examples=["3.2"])
    device: Word | None = Field(
        None, description="the device, as the write-up names it", examples=["ScaleFlux CSD5310"]
    )
    kernel: Word | None = Field(None, description="the kernel and its boot options", examples=["7.0.3-arch1-1"])
    fio_version: Word | None = Field(None, description="fio's version, or the tool used", examples=["fio-3.41"])
    flags: Word | None = Field(None, description="the fio flags of the write-up", examples=['"--rw=randread --bs=4k"'])
    polled: bool | None = Field(None, description="true or false (polled completions)", examples=["true"])
    runtime_s: float | None = Field(None, description="the write-up's runtime per run, in seconds", examples=["20"])
    emulated: bool | None = Field(None, description="true or false (an emulated device)", examples=["false"])
    checks: dict[str, Word] | None = Field(
        None,
        description="the write-up's set-up, check by check, under iolab preflight's check names",
        examples=["{governor: performance, poll: nvme.poll_queues=24 at boot}"],
    )

    expects: dict[str, Word] | None = Field(
        None,
        description="the value a check must see here for the write-up's method (a word of iolab preflight's 'seen')",
        examples=["{scheduler: none, smt: on}"],
    )

    @field_validator("checks", "expects")
    @classmethod
    @refusal
    def _preflight_names(cls, checks: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(checks or {}) - set(CHECK_NAMES))
        if unknown:
            near = difflib.get_close_matches(unknown[0], CHECK_NAMES, n=1)
            mean = f" (did you mean {near[0]!r}?)" if near else ""
            raise InputError(
                f"setup: checks: {', '.join(unknown)} is no check of iolab preflight{mean}: use {', '.join(CHECK_NAMES)}"
            )
        return checks


class SearchEntry(BaseModel):
    """An experiment's search (``search:``): notebook 05's spec, made for this machine by ``plan``."""

    model_config = ConfigDict(extra="forbid")
    base: Table = Field(
        default_factory=dict, description="a mapping of fio option -> value", examples=["{rw: randread, bs: 4k}"]
    )
    axes: Table = Field(
        default_factory=dict,
        description="a mapping of axis -> list of values (cores and devices: numbers, half or all)",
        examples=["{cores: [1, half, all]}"],
    )
    repeats: whole(1) | None = Field(None, description="a whole number from 1 (runs of each cell)", examples=["2"])
    runtime: Word | None = Field(None, description="a time fio reads", examples=["1s"])
    size: Word | None = Field(None, description="a size fio reads", examples=["1g"])
    default_targets: Words | None = Field(
        None, description="the targets without --device, a list", examples=["[loop:128m, loop:128m]"]
    )


class ExperimentEntry(BaseModel):
    """One experiment listed under ``experiments:``."""

    model_config = ConfigDict(
        extra="forbid",
        title="an experiment {name, notebook, section, method, parameters, quick, smoke}",
        json_schema_extra={"examples": ["{name: qd-knee, notebook: 01_queue_depth_knee.ipynb}"]},
    )
    name: Word = Field(description="an experiment name (its folder in the seed's folder)", examples=["qd-knee"])
    notebook: Annotated[Text, AfterValidator(_notebook)] = Field(
        description="a notebook of the project's notebooks/ folder", examples=["01_queue_depth_knee.ipynb"]
    )
    section: Word = Field("", description="the section of the write-up it follows", examples=["the tuning ladder"])
    method: Text = Field("", description="its method in a paragraph", examples=["One fio job pinned to one CPU ..."])
    parameters: Table = Field(
        default_factory=dict, description="a mapping of the notebook's parameter -> value", examples=["{runtime_s: 5}"]
    )
    quick: Table = Field(
        default_factory=dict, description="a mapping of parameter -> value at --quick", examples=["{runtime_s: 1}"]
    )
    smoke: Table = Field(
        default_factory=dict, description="a mapping of parameter -> value at smoke", examples=["{runtime_s: 0.3}"]
    )
    search: SearchEntry | None = None
    skip: dict[Literal["quick", "smoke"], Word] = Field(
        default_factory=dict,
        description="a mapping of a level (quick, smoke) -> why the experiment does not run at it (said on the page)",
        examples=["{smoke: notebook 06 runs in the browser tests; --quick runs it here}"],
    )
    adaptations: Table = Field(
        default_factory=dict,
        description="a mapping of a fio option (or t/io_uring flag) -> why it differs here from the write-up's command",
        examples=["{iodepth: the ladder runs every step at its qd parameter}"],
    )
    evidence: Words = Field(
        default_factory=list,
        description="a list of the headings of the notebook's sections whose readings, tables and figures the page carries (none: all but the set-up check, the explorer, the results and the commands)",
        examples=["[The ladder, Is each step really a gain?]"],
    )

    @field_validator("name")
    @classmethod
    @refusal
    def _folder_name(cls, name: str) -> str:
        return check_name(name, "experiment name", "name: under experiments")


class ShapeEntry(BaseModel):
    """One entry of ``shape:`` (``iolab.seeds.shape``): a ratio of two published figures by
    their labels, or one figure, and the same taken here."""

    model_config = ConfigDict(extra="forbid", title="a shape {name, of, over, metric, local}")
    name: Word = Field(description="the shape in words", examples=["IOPS gain of the whole ladder"])
    of: Word = Field(description="a published figure's label", examples=["8 t/io_uring"])
    over: Word = Field("", description="the label it is divided by (none: the figure itself)")
    metric: Word = Field("iops", description="the metric of both rows", examples=["iops", "cycles_per_io"])
    local: Table = Field(
        default_factory=dict,
        description="a recorded percentage change standing for the local ratio, or with as: value a recorded figure: {from, result, fields, as}",
        examples=["{from: kernel-path, result: scheduler_none_vs, fields: {other: mq-deadline}}"],
    )


class SeedFile(BaseModel):
    """A seed manifest as written (module docstring): its keys and their types."""

    model_config = ConfigDict(extra="forbid")
    seed: Text = Field(pattern=r"^\d+$", description="the seed's number as text, in quotes", examples=['"000"'])
    title: Word = Field("", description="the write-up's title", examples=["Maxing Random Read IOPS ..."])
    author: Word = Field("", description="who published it", examples=["ScaleFlux engineering blog"])
    date: Annotated[Word, BeforeValidator(_date)] = Field("", description="a date", examples=["2026-05-05"])
    write_up: Word = Field("", description="its file in the project's shared/seeds", examples=["000_3479.txt"])
    setup: SetupEntry = Field(
        default_factory=SetupEntry,
        description="a mapping of the published set-up (cpu_model, clock_ghz, device, kernel, fio_version, ...)",
        examples=["{cpu_model: ..., device: ...}"],
    )
    experiments: Annotated[list[ExperimentEntry], BeforeValidator(lambda v: [] if v is None else v)] = Field(
        default_factory=list,
        description="a list of experiments, each {name, notebook, ...}",
        examples=["[{name: qd-knee, notebook: 01_queue_depth_knee.ipynb}]"],
    )
    figures: Annotated[list[Table], BeforeValidator(lambda v: [] if v is None else v)] = Field(
        default_factory=list,
        description="a list of figures, each {experiment, from, ...}",
        examples=["[{experiment: qd_knee, from: qd-knee, results: {...}}]"],
    )
    shape: Annotated[list[ShapeEntry], BeforeValidator(lambda v: [] if v is None else v)] = Field(
        default_factory=list,
        description="a list of the write-up's shapes, each {name, of, over}: what transfers across hardware",
        examples=["[{name: gain of the whole ladder, of: 8 t/io_uring, over: 1 baseline io_uring}]"],
    )

    @model_validator(mode="after")
    @refusal
    def _figures_from_experiments(self) -> SeedFile:
        if not self.experiments:
            raise InputError("the manifest has no experiments: list the notebooks that reproduce the seed")
        names = [e.name for e in self.experiments]
        for f in self.figures:
            if f.get("from") not in names:
                raise InputError(
                    f"figures for {f.get('experiment')!r} come from {f.get('from')!r}, "
                    f"which is not one of its experiments ({', '.join(names)})"
                )
        return self


SEED_KEYS = tuple(SeedFile.model_fields)


@dataclass
class Experiment:
    name: str
    notebook: Path
    section: str
    method: str
    parameters: dict[str, Any]
    levels: dict[str, dict[str, Any]]
    search: dict[str, Any] | None = None
    adaptations: dict[str, str] = field(default_factory=dict)  # option -> why it differs from the write-up's
    skip: dict[str, str] = field(default_factory=dict)  # level -> why the experiment does not run at it
    evidence: list[str] = field(default_factory=list)  # the notebook's sections the page carries (iolab.seeds.evidence)


@dataclass
class Seed:
    ident: str
    title: str
    author: str
    date: str
    write_up: str
    setup: dict[str, Any]
    experiments: list[Experiment]
    figures: list[dict[str, Any]]
    path: Path
    shape: list[dict[str, Any]] = field(default_factory=list)  # what transfers (iolab.seeds.shape)

    @property
    def slug(self) -> str:
        return f"seed-{self.ident}"


@dataclass
class Planned:
    """One notebook run of a seed: its batch run, its fio runs and the time it should take."""

    seed: Seed
    experiment: Experiment
    run: BatchRun
    fio_runs: int
    estimate_s: float
    notes: list[str] = field(default_factory=list)


def load_seed(path: str | os.PathLike) -> Seed:
    """One seed manifest, checked (``SeedFile``: keys, types, names, notebooks; then the results
    its figures read against the notebooks' declarations): InputError saying what to fix,
    before anything runs."""
    path = Path(path)
    doc = yaml_mapping(path, "seed manifest (YAML: seed, title, setup, experiments, figures)", SEED_KEYS)
    checked = validated(SeedFile, doc, path.name)
    experiments = [
        Experiment(
            e.name,
            e.notebook,
            e.section,
            e.method.strip(),
            e.parameters,
            {"quick": e.quick, "smoke": e.smoke},
            e.search.model_dump(exclude_none=True) if e.search else None,
            {str(k): str(v) for k, v in e.adaptations.items()},
            dict(e.skip),
            list(e.evidence),
        )
        for e in checked.experiments
    ]
    names = [e.name for e in experiments]
    for f in checked.figures:
        _check_keys(f, experiments[names.index(f["from"])], path)
    figures = [_cell_defaults(f) for f in checked.figures]
    return Seed(
        checked.seed,
        checked.title,
        checked.author,
        checked.date,
        checked.write_up,
        checked.setup.model_dump(exclude_none=True),
        experiments,
        figures,
        path,
        [e.model_dump(exclude_defaults=True) for e in checked.shape],
    )


def _cell_defaults(figure: dict[str, Any]) -> dict[str, Any]:
    """A figure's ``where`` (the search cell its labels share: seed 003's QD 128 and 512 B)
    under each label's own ``where``, for labels read from a search cell."""
    shared = figure.get("where")
    if not shared:
        return figure
    labels = dict(figure.get("labels") or {})
    for label, spec in labels.items():
        if not (spec.get("reason") or spec.get("result")):  # a search cell: the shared where, then its own
            labels[label] = {**spec, "where": {**shared, **(spec.get("where") or {})}}
    return {k: v for k, v in figure.items() if k != "where"} | {"labels": labels}


def _check_keys(figure: Mapping[str, Any], exp: Experiment, path: Path) -> None:
    """Every result ``figure`` reads is a key its experiment's notebook declares
    (``iolab.report.contract``): InputError naming the keys there are."""
    declaration = declared(exp.notebook)
    labels = mapping(figure.get("labels"), f"labels of {figure.get('experiment')} in {path.name}", "labels: {...}")
    where = f"labels of {figure.get('experiment')} in {path.name}"
    named = [
        figure.get("results"),
        *(mapping(spec, where, "{label: {step: ...}}").get("result") for spec in labels.values()),
    ]
    for results in named:
        for metric, key in mapping(
            results, f"results of {figure.get('experiment')} in {path.name}", "{iops: peak_iops}"
        ).items():
            try:
                declaration.result(str(key))
            except KeyError as exc:
                raise InputError(
                    f"{path.name}: figures for {figure.get('experiment')!r}, {metric}: {exc.args[0]}"
                ) from None


def load_seeds(only: Sequence[str] | str | None = None, folder: str | os.PathLike | None = None) -> list[Seed]:
    """Every seed manifest of ``folder`` (data/seeds), or those ``only`` names ("000,002",
    "0", "seed-003": the number, with or without its leading zeros)."""
    folder = Path(folder or seeds_dir())
    seeds = sorted((load_seed(p) for p in folder.glob("seed-*.yaml")), key=lambda s: s.ident)
    if not seeds:
        raise InputError(f"no seed manifests (seed-NNN.yaml) in {folder}")
    if only is None or only == [] or only == "":
        return seeds
    wanted = [w for part in ([only] if isinstance(only, str) else only) for w in str(part).split(",") if w.strip()]
    chosen = []
    for w in wanted:
        number = w.strip().lower().removeprefix("seed").strip("-_ ")
        match = [s for s in seeds if number.isdigit() and int(s.ident) == int(number)]
        if not match:
            raise InputError(f"--only {w.strip()!r}: no such seed; the seeds are " + ", ".join(s.ident for s in seeds))
        chosen += [s for s in match if s not in chosen]
    return chosen


# ---------------------------------------------------------------- the plan
def plan(
    seeds: Sequence[Seed],
    out: str | os.PathLike,
    level: str = "full",
    *,
    devices: Sequence[str] = (),
    cpus: Sequence[int] | None = None,
    allow_destructive: bool = False,
    opt_in_device_changes: bool = False,
    force: bool = False,
    dry_run: bool = False,
) -> list[Planned]:
    """Every notebook run of ``seeds`` at ``level``, with parameters for this machine: the
    devices (none: the notebooks' scratch/loop defaults), the CPUs (none: CPU 0, and every
    allowed CPU for a search), ``opt_in_device_changes`` for the notebooks that take it (the
    ladder's NVMe interrupt coalescing, always restored). Parameter names are checked
    against each notebook. A search's spec goes to ``out/seed-NNN/``, a folder made and marked
    as iolab's (``iolab.core.outputs``: a user's folder there is refused, unless ``force``);
    ``dry_run``: the plan alone, nothing made or written."""
    if level not in LEVELS:
        raise InputError(f"level {level!r}: choose one of {', '.join(LEVELS)}")
    out = Path(out).resolve()
    pool = list(cpus) if cpus else sorted(os.sched_getaffinity(0))
    todo = []
    for seed in seeds:
        for exp in seed.experiments:
            if level in exp.skip:  # said by describe() and on the seed's page
                continue
            base = declared(exp.notebook).smoke if level == "smoke" else {}  # the notebook's own smoke settings
            params = {**exp.parameters, **base, **((exp.levels.get(level) or {}) if level != "full" else {})}
            notes: list[str] = []
            known = set(parameters_of(exp.notebook))
            if exp.search is not None:
                folder = out / seed.slug if dry_run else claim_folder(out / seed.slug, force=force, flag="seed folder")
                params = _search_parameters(exp, params, folder, devices, pool, allow_destructive, notes, dry_run)
            else:
                if devices and "target" in known:
                    params["target"] = str(devices[0])
                if devices and "devices" in known:  # one fio per device: the devices given, not loop devices
                    params["devices"] = [str(d) for d in devices]
                if "cpu" in known:
                    params["cpu"] = pool[0]
                if params.get("polled") == "auto":
                    params["polled"], why = _pollable(devices[0] if devices else None)
                    notes.append(why)
            if "interactive" in known:
                params["interactive"] = False
            if allow_destructive and "allow_destructive" in known:
                params["allow_destructive"] = True
            if opt_in_device_changes and "opt_in_device_changes" in known:
                params["opt_in_device_changes"] = True
            run = BatchRun(exp.name, exp.notebook, params)
            check_parameters(exp.notebook, [run])
            fio_runs, seconds = _estimate(exp, params)
            todo.append(Planned(seed, exp, run, fio_runs, seconds, notes))
    return todo


def _pollable(device: str | None) -> tuple[bool, str]:
    """Whether polled completions can run on ``device`` (its queue's io_poll), and why."""
    if not device:
        return False, "not polled: the default loop device has no poll queues"
    from ..core.system import queue_knobs

    name = Path(os.path.realpath(device)).name
    on = queue_knobs(name).get("io_poll") == "1"
    return on, (
        f"polled: {name} has poll queues"
        if on
        else f"not polled: {name} has no poll queues (NVMe: boot with nvme.poll_queues=N)"
    )


def _search_parameters(
    exp: Experiment,
    params: dict[str, Any],
    folder: Path,
    devices: Sequence[str],
    pool: list[int],
    allow_destructive: bool,
    notes: list[str],
    dry_run: bool = False,
) -> dict[str, Any]:
    """The search spec of ``exp`` for this machine, written to ``folder/search-<hash>.yaml``
    (its hash: what it runs, so a changed plan is a new search and a resume the same one),
    and notebook 05's parameters to run it into ``folder/search-<hash>/``."""
    s = exp.search or {}
    level = {k: params.pop(k) for k in ("repeats", "runtime", "size", "axes") if k in params}
    targets = [str(d) for d in devices] or [str(t) for t in s.get("default_targets", ["scratch"])]
    if level.get("size"):
        targets = [f"loop:{level['size']}" if t.startswith("loop") else t for t in targets]
    axes = {}
    given = mapping(s.get("axes"), f"axes of {exp.name}", "axes: {...}")
    narrowed = mapping(level.get("axes"), f"axes of {exp.name} at this level", "axes: {iodepth: [128]}")
    if set(narrowed) - set(given):  # a level narrows the search's axes; it adds none
        raise InputError(f"{exp.name}: a level's axes {sorted(set(narrowed) - set(given))} are not axes of its search")
    for axis, values in {**given, **narrowed}.items():
        values = [_level(axis, v, _cores(pool), len(targets)) for v in values]
        axes[axis] = list(dict.fromkeys(v for v in values if v is not None))
    spec = {
        "name": f"seed{exp.name}",
        "description": exp.section,
        "target": targets,
        "size": str(level.get("size", s.get("size", "1g"))),
        "cpus": pool,
        "repeats": int(level.get("repeats", s.get("repeats", 1))),
        "order": "random",
        "seed": 3,
        "base": {**s.get("base", {}), "runtime": str(level.get("runtime", s.get("runtime", "1s")))},
        "axes": axes,
    }
    text = yaml.safe_dump(spec, sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    spec_path = folder / f"search-{digest}.yaml"
    if dry_run and not spec_path.exists():  # the plan's cost reads the spec: a copy outside the out folder
        spec_path = _dry_folder() / spec_path.name
        spec_path.write_text(text)
    if not spec_path.exists():
        from ..core.atomic import write_atomic

        write_atomic(spec_path, text)
    if not devices:
        notes.append(f"no --device: the search reads {len(targets)} tmpfs-backed loop device(s)")
    return {
        **params,
        "spec": str(spec_path),
        "runs_dir": str(folder / f"search-{digest}"),
        "drop_unavailable": True,
        "resume": True,
        **({"allow_destructive": True} if allow_destructive else {}),
    }


def _cores(pool: list[int]) -> int:
    """Physical cores among the CPUs of ``pool`` (thread siblings count once)."""
    from ..measure.search import siblings_of

    return len({frozenset(siblings_of(c)) for c in pool})


def _level(axis: str, value: Any, n_cpus: int, n_targets: int) -> Any:
    """An axis value of a seed's search for this machine: ``half``/``all`` cores or devices
    become numbers; YAML's on/off booleans become the words the knobs take."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if axis in ("cores", "devices") and isinstance(value, str):
        most = n_cpus if axis == "cores" else n_targets
        if value == "all":
            return most
        if value == "half":
            return max(1, most // 2)
        raise InputError(f"{axis}: {value!r} is not a number, half or all")
    return value


_DRY: list = []  # the temporary folder a dry run's search specs go to, removed when iolab exits


def _dry_folder() -> Path:
    """A temporary folder for a dry run's search specs (never the out folder: a dry run makes nothing there)."""
    import tempfile

    if not _DRY:
        _DRY.append(tempfile.TemporaryDirectory(prefix="iolab-seeds-dry-run-"))
    return Path(_DRY[0].name)


def _estimate(exp: Experiment, params: Mapping[str, Any]) -> tuple[int, float]:
    return estimate_run(exp.notebook, params)


def describe(todo: Sequence[Planned], level: str) -> str:
    """The plan in words: each notebook run, its fio runs and estimate, and the total."""
    lines, total_runs, total_s = [], 0, 0.0
    for p in todo:
        lines.append(
            f"  seed {p.seed.ident} {p.experiment.name:<16} {p.experiment.notebook.name:<34} "
            f"{p.fio_runs:>4} fio runs  ~{readable_seconds(p.estimate_s)}"
            + (f"  ({'; '.join(p.notes)})" if p.notes else "")
        )
        total_runs += p.fio_runs
        total_s += p.estimate_s
    for seed in {p.seed.ident: p.seed for p in todo}.values():
        lines += [
            f"  seed {seed.ident} {e.name:<16} {e.notebook.name:<34} not run at the {level} level: {e.skip[level]}"
            for e in seed.experiments
            if level in e.skip
        ]
    seeds = list(dict.fromkeys(p.seed.ident for p in todo))
    where = "in this emulated (TCG) guest" if slowdown() > 1 else "on this machine"
    smaller = ", ".join(
        ([] if level != "full" else ["--quick (the quick settings: about 10 minutes on 2 cores)"])
        + (["--only with fewer seeds (e.g. --only 002)"] if len(seeds) > 1 else [])
        + ["fewer --device (a seed's search grows with its devices)"]
    )
    warning = too_big(total_runs, total_s, "fio runs", smaller)
    return "\n".join(
        [
            f"iolab seeds ({level}): {len(seeds)} seed(s) ({', '.join(seeds)}), {len(todo)} notebook runs, "
            f"{total_runs} fio runs, at most about {readable_seconds(total_s)} {where} (estimate from the plan: "
            "steps a target cannot do are skipped)",
            *([warning] if warning else []),
            *lines,
        ]
    )


def default_out() -> Path:
    return paths.REPO / "papermill_runs" / "seeds"


__all__ = [
    "LEVELS",
    "Seed",
    "Experiment",
    "Planned",
    "load_seed",
    "load_seeds",
    "plan",
    "describe",
    "default_out",
]
