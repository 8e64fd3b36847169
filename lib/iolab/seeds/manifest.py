"""The seed write-ups reproduced on this machine: their manifests (``data/seeds/*.yaml``), the
plan of notebook runs each needs, and the runner behind ``iolab seeds``.

    seeds = load_seeds(only=["000", "002"])
    todo = plan(seeds, out="papermill_runs/seeds", level="quick")   # devices=[...], cpus=[...]
    print(describe(todo))          # every notebook run, its fio runs and the time it should take
    run(todo, out)                 # one iolab batch per seed, then seed-NNN.html and index.html

A manifest names the write-up (title, author, date, the file in the project's ``shared/seeds``),
its test set-up as published (CPU, clock, device, kernel, fio and its flags, polled,
emulated), the ``experiments`` that reproduce it (a notebook, the section of the write-up it
follows, its method in a paragraph, its parameters, and the ``quick`` and ``smoke`` overrides)
and the ``figures``: how each row of ``data/reference/published_figures.csv`` for the seed is
read from the local results (``iolab.seeds.comparisons``).

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

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from ..core import paths
from ..core.paths import check_name
from ..report.batch import BatchRun, Manifest, check_outputs as check_batch_outputs, check_parameters, run_batch
from ..core.errors import InputError
from ..core.outputs import check_folder, claim_folder, claim_output
from ..core.validate import kind_of, mapping, yaml_mapping
from ..measure.plans import too_big
from ..report.contract import estimate_run, slowdown

LEVELS = ("full", "quick", "smoke")
SEED_KEYS = ("seed", "title", "author", "date", "write_up", "setup", "headline", "experiments", "figures")
EXPERIMENT_KEYS = ("name", "notebook", "section", "method", "parameters", "quick", "smoke", "search")
SEARCH_KEYS = ("base", "axes", "repeats", "runtime", "size", "default_targets")
SETUP_KEYS = ("cpu", "clock_ghz", "device", "kernel", "fio", "flags", "polled", "emulated")


def seeds_dir() -> Path:
    return paths.REPO / "data" / "seeds"


@dataclass
class Experiment:
    name: str
    notebook: Path
    section: str
    method: str
    parameters: dict[str, Any]
    levels: dict[str, dict[str, Any]]
    search: dict[str, Any] | None = None


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
    headline: str = ""  # the label of the published figure the index shows for this seed

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
    """One seed manifest, checked: InputError saying what to fix, before anything runs."""
    path = Path(path)
    doc = yaml_mapping(path, "seed manifest (YAML: seed, title, setup, experiments, figures)", SEED_KEYS)
    unknown = sorted(set(doc) - set(SEED_KEYS))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)} in {path.name}; the keys are {', '.join(SEED_KEYS)}")
    ident = str(doc.get("seed") or "").strip()
    if not ident.isdigit():
        raise InputError(f'{path.name}: seed must be the seed\'s number as text (seed: "000"), not {doc.get("seed")!r}')
    setup = mapping(doc.get("setup"), f"setup in {path.name}", "setup: {cpu: ..., device: ...}")
    experiments = [_experiment(e, i, path) for i, e in enumerate(_list(doc.get("experiments"), "experiments", path))]
    if not experiments:
        raise InputError(f"{path.name} has no experiments: list the notebooks that reproduce the seed")
    names = [e.name for e in experiments]
    figures = [
        mapping(f, f"figures[{i}] in {path.name}", "- {experiment: qd_knee, from: qd-knee, results: {...}}")
        for i, f in enumerate(_list(doc.get("figures"), "figures", path))
    ]
    for f in figures:
        if f.get("from") not in names:
            raise InputError(
                f"{path.name}: figures for {f.get('experiment')!r} come from {f.get('from')!r}, "
                f"which is not one of its experiments ({', '.join(names)})"
            )
    return Seed(
        ident,
        str(doc.get("title", "")),
        str(doc.get("author", "")),
        str(doc.get("date", "")),
        str(doc.get("write_up", "")),
        dict(setup),
        experiments,
        figures,
        path,
        str(doc.get("headline") or ""),
    )


def _list(value: Any, what: str, path: Path) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{what} in {path.name} is a {kind_of(value)}, not a list")
    return value


def _experiment(doc: Any, i: int, path: Path) -> Experiment:
    doc = mapping(doc, f"experiments[{i}] in {path.name}", "- {name: qd-knee, notebook: 01_queue_depth_knee.ipynb}")
    unknown = sorted(set(doc) - set(EXPERIMENT_KEYS))
    if unknown:
        raise InputError(
            f"experiments[{i}] in {path.name}: unknown key(s) {', '.join(unknown)}; "
            f"the keys are {', '.join(EXPERIMENT_KEYS)}"
        )
    if not doc.get("name") or not doc.get("notebook"):
        raise InputError(f"experiments[{i}] in {path.name} needs a name and a notebook")
    notebook = paths.REPO / "notebooks" / Path(str(doc["notebook"])).name
    if not notebook.is_file():
        raise InputError(f"experiments[{i}] in {path.name}: no notebook {notebook.name} in {notebook.parent}")
    search = None
    if doc.get("search") is not None:
        search = dict(mapping(doc["search"], f"search of {doc['name']} in {path.name}", "search: {axes: {...}}"))
        unknown = sorted(set(search) - set(SEARCH_KEYS))
        if unknown:
            raise InputError(f"search of {doc['name']} in {path.name}: unknown key(s) {', '.join(unknown)}")
    levels = {
        lv: dict(mapping(doc.get(lv), f"{lv} of {doc['name']} in {path.name}", f"{lv}: {{runtime_s: 1}}"))
        for lv in ("quick", "smoke")
    }
    name = check_name(str(doc["name"]).strip(), f"experiments[{i}] name in {path.name}", "a name such as qd-knee")
    return Experiment(
        name,
        notebook,
        str(doc.get("section", "")),
        str(doc.get("method", "")).strip(),
        dict(mapping(doc.get("parameters"), f"parameters of {doc['name']}", "parameters: {runtime_s: 5}")),
        levels,
        search,
    )


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
) -> list[Planned]:
    """Every notebook run of ``seeds`` at ``level``, with parameters for this machine: the
    devices (none: the notebooks' scratch/loop defaults), the CPUs (none: CPU 0, and every
    allowed CPU for a search), ``opt_in_device_changes`` for the notebooks that take it (the
    ladder's NVMe interrupt coalescing, always restored). Parameter names are checked
    against each notebook. A search's spec goes to ``out/seed-NNN/``, a folder made and marked
    as iolab's (``iolab.core.outputs``: a user's folder there is refused, unless ``force``)."""
    if level not in LEVELS:
        raise InputError(f"level {level!r}: choose one of {', '.join(LEVELS)}")
    out = Path(out).resolve()
    pool = list(cpus) if cpus else sorted(os.sched_getaffinity(0))
    todo = []
    for seed in seeds:
        for exp in seed.experiments:
            params = {**exp.parameters, **((exp.levels.get(level) or {}) if level != "full" else {})}
            notes: list[str] = []
            known = _parameters_of(exp.notebook)
            if exp.search is not None:
                folder = claim_folder(out / seed.slug, force=force, flag="seed folder")
                params = _search_parameters(exp, params, folder, devices, pool, allow_destructive, notes)
            else:
                if devices and "target" in known:
                    params["target"] = str(devices[0])
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


def _parameters_of(notebook: Path) -> set[str]:
    import papermill as pm  # slow to import: only when planning

    return set(pm.inspect_notebook(str(notebook)))


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
) -> dict[str, Any]:
    """The search spec of ``exp`` for this machine, written to ``folder/search-<hash>.yaml``
    (its hash: what it runs, so a changed plan is a new search and a resume the same one),
    and notebook 05's parameters to run it into ``folder/search-<hash>/``."""
    s = exp.search or {}
    level = {k: params.pop(k) for k in ("repeats", "runtime", "size") if k in params}
    targets = [str(d) for d in devices] or [str(t) for t in s.get("default_targets", ["scratch"])]
    if level.get("size"):
        targets = [f"loop:{level['size']}" if t.startswith("loop") else t for t in targets]
    axes = {}
    for axis, values in mapping(s.get("axes"), f"axes of {exp.name}", "axes: {...}").items():
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


def _estimate(exp: Experiment, params: Mapping[str, Any]) -> tuple[int, float]:
    return estimate_run(exp.notebook, params)


def describe(todo: Sequence[Planned], level: str) -> str:
    """The plan in words: each notebook run, its fio runs and estimate, and the total."""
    lines, total_runs, total_s = [], 0, 0.0
    for p in todo:
        lines.append(
            f"  seed {p.seed.ident} {p.experiment.name:<16} {p.experiment.notebook.name:<34} "
            f"{p.fio_runs:>4} fio runs  ~{_minutes(p.estimate_s)}" + (f"  ({'; '.join(p.notes)})" if p.notes else "")
        )
        total_runs += p.fio_runs
        total_s += p.estimate_s
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
            f"{total_runs} fio runs, at most about {_minutes(total_s)} {where} (estimate from the plan: "
            "steps a target cannot do are skipped)",
            *([warning] if warning else []),
            *lines,
        ]
    )


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


# ---------------------------------------------------------------- running
def run(
    todo: Sequence[Planned],
    out: str | os.PathLike,
    level: str,
    devices: Sequence[str] = (),
    on_done=None,
    force: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Run the plan: one batch per seed into ``out/seed-NNN`` (resumable; a failed
    experiment is kept with its error), each seed's page written as soon as its batch
    ends, and the index page. Returns each seed's batch records. A folder or file there iolab
    did not write is refused before anything runs (``iolab.core.outputs``), unless ``force``."""
    from . import pages as seed_pages

    out = Path(out).resolve()
    check_outputs(todo, out, force)
    claim_folder(out, force=force)
    by_seed: dict[str, list[Planned]] = {}
    for p in todo:
        by_seed.setdefault(p.seed.ident, []).append(p)
    records: dict[str, list[dict[str, Any]]] = {}
    _write_plan(out, todo, level, devices, force)
    for ident, planned in by_seed.items():
        seed = planned[0].seed
        manifest = Manifest(planned[0].run.notebook, [p.run for p in planned], out / seed.slug, 1, seed.path)
        records[ident] = run_batch(manifest, out / seed.slug, 1, on_done=on_done, force=force)
        seed_pages.write_seed_page(seed, out, force)
        seed_pages.write_index(out, force)
    return records


def check_outputs(todo: Sequence[Planned], out: Path, force: bool = False) -> None:
    """Refuse, before anything runs, a plan that would write into a folder or over a file iolab
    did not write (``iolab.core.outputs``): ``out``, its pages and plan.json, each seed's batch.
    Nothing is written."""
    check_folder(out, force=force)
    for name in ["plan.json", "index.html"] + [f"{p.seed.slug}.html" for p in todo]:
        claim_output(out / name, force=force)
    for slug in dict.fromkeys(p.seed.slug for p in todo):
        check_batch_outputs(out / slug, [p.run for p in todo if p.seed.slug == slug], force)


def _write_plan(out: Path, todo: Sequence[Planned], level: str, devices: Sequence[str], force: bool = False) -> None:
    """``out/plan.json``: what this command runs, read by the pages (which seeds, which level)."""
    from ..core.outputs import write_json_output

    old = {}
    try:
        old = json.loads((out / "plan.json").read_text())
    except (OSError, ValueError):
        pass
    seeds = {
        **old.get("seeds", {}),
        **{
            p.seed.ident: {"manifest": str(p.seed.path), "level": level, "devices": [str(d) for d in devices]}
            for p in todo
        },
    }
    write_json_output(
        out / "plan.json",
        {
            "seeds": dict(sorted(seeds.items())),
            "notes": {f"{p.seed.ident}/{p.experiment.name}": p.notes for p in todo}
            | {k: v for k, v in old.get("notes", {}).items() if k.split("/")[0] not in {p.seed.ident for p in todo}},
        },
        force=force,
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
    "run",
    "default_out",
]
