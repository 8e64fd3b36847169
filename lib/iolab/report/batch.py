"""Batch re-runs of a notebook over parameter sets, with resume, failure isolation and an
index page of their recorded results.

A manifest (YAML) names one notebook, shared ``defaults`` and ``runs`` (each a ``name`` and
``parameters``) and/or a ``grid`` (the Cartesian product of parameter lists, each cell a
run named after its values). Paths in it — the notebook, and parameter values naming a file
or folder that exists there — are relative to the manifest's folder::

    notebook: ../notebooks/01_queue_depth_knee.ipynb
    defaults: {runtime_s: 1, repeats: 2, queue_depths: [1, 4, 16, 64]}
    grid: {bs: [4k, 16k, 64k]}
    runs:
      - {name: psync, parameters: {ioengine: psync}}

The manifest's keys and types are checked by ``ManifestFile`` (pydantic, messages by
``iolab.core.schema``: the file, the key, what was given and what to write).

Each run gets ``OUT/<name>/`` with the executed notebook, its write-up (HTML) and
``notebook_run.json`` (``RECORD``, read by ``read_record``; ``run.json`` in batches written
before, still read, so such a batch resumes) (status ok/failed, parameters, duration, the error of a failed run, the
results it recorded, the run folders it made). Parameter names are checked against the
notebook before anything runs (papermill's inspection). A failed notebook is kept with
papermill's error banner and the batch goes on. Running the same batch again re-runs only
failed or missing runs; a run whose parameters changed is a new run. ``OUT/batch.json``
lists every run and ``OUT/index.html`` shows them side by side.

Runs in parallel (``jobs`` > 1) are separate processes (papermill runs one notebook per
call; its maintainers advise processes), and two runs pinned to the same CPU (their ``cpu``
or ``cpus`` parameter) never run at once; iolab's per-CPU locks keep their fio runs apart
anyway.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import contextlib
import difflib
import hashlib
import itertools
import json
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..core.errors import InputError, IolabError
from ..core.outputs import check_folder, claim_folder, claim_output, write_json_output, write_output
from ..core.paths import inside, safe_name
from ..core.readable import readable_seconds
from ..core.runfiles import RUN_JSON
from ..core.schema import Table, Text, Word, refusal, validated, whole
from ..core.validate import cpu_list, notebook_file, positive_ints, yaml_mapping
from ..machine.locks import folder_locked
from ..machine.process import die_with_parent
from ..measure.plans import cut, too_big

RECORD = "notebook_run.json"  # a batch run's record in its folder: not a fio run's run.json
_OLD_RECORD = RUN_JSON  # the record's name in batches written before; still read


# ---------------------------------------------------------------- the manifest
MAX_JOBS = 1000  # runs at once; Python's process pool cannot hold a count past a C int


class RunEntry(BaseModel):
    """One run listed under ``runs:``."""

    model_config = ConfigDict(
        extra="forbid",
        title="a run {name, parameters}",
        json_schema_extra={"examples": ["{name: bs-4k, parameters: {bs: 4k}}"]},
    )
    name: Word = Field(min_length=1, description="a run name (its folder in the output folder)", examples=["bs-4k"])
    parameters: Table = Field(
        default_factory=dict, description="a mapping of the notebook's parameter -> value", examples=["{bs: 4k}"]
    )


class ManifestFile(BaseModel):
    """A batch manifest as written (module docstring): its keys and their types."""

    model_config = ConfigDict(extra="forbid")
    notebook: Text = Field(
        min_length=1,
        description="the notebook to run, a path relative to the manifest's folder",
        examples=["../notebooks/01_queue_depth_knee.ipynb"],
    )
    defaults: Table = Field(
        default_factory=dict, description="a mapping of parameter -> value for every run", examples=["{runtime_s: 1}"]
    )
    runs: Annotated[list[RunEntry], BeforeValidator(lambda v: [] if v is None else v)] = Field(
        default_factory=list,
        description="a list of runs, each {name, parameters}",
        examples=["[{name: bs-4k, parameters: {bs: 4k}}]"],
    )
    grid: Table = Field(
        default_factory=dict,
        description="a mapping of parameter -> list of values (one run per combination)",
        examples=["{bs: [4k, 16k]}"],
    )
    out: Text | None = Field(
        default=None,
        description="one folder for the results, relative to the manifest's folder",
        examples=["batch-out"],
    )
    jobs: whole(1, MAX_JOBS) = Field(
        default=1, description=f"a whole number from 1 to {MAX_JOBS} (how many runs at once)", examples=["2"]
    )

    def named(self) -> list[tuple[str, dict[str, Any]]]:
        """(folder name, own parameters) of every run: those listed, then the grid's cells,
        each named after its values (``bs=4k-iodepth=8``)."""
        out = [(safe_name(run.name), run.parameters) for run in self.runs]
        lists = [v if isinstance(v, list) else [v] for v in self.grid.values()]
        for values in itertools.product(*lists) if self.grid else ():
            cell = dict(zip(self.grid, values))
            out.append((safe_name("-".join(f"{k}={v}" for k, v in cell.items())), cell))
        return out

    @model_validator(mode="after")
    @refusal
    def _some_runs_each_named_once(self) -> ManifestFile:
        names = collections.Counter(name for name, _ in self.named())
        if not names:
            raise InputError(
                "the manifest has no runs: add runs: [{name: bs-4k, parameters: {bs: 4k}}] or grid: {bs: [4k, 16k]}"
            )
        twice = sorted(n for n, count in names.items() if count > 1)
        if twice:
            raise InputError(
                f"run name(s) {', '.join(twice)} appear twice (a grid cell is named after its values); "
                "give each run its own name"
            )
        return self


MANIFEST_KEYS = tuple(ManifestFile.model_fields)


@dataclass
class BatchRun:
    name: str
    notebook: Path
    parameters: dict[str, Any]

    @property
    def key(self) -> str:
        """What makes a run the same run: its notebook and parameters (order-free)."""
        body = json.dumps({"notebook": str(self.notebook), "parameters": self.parameters}, sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass
class Manifest:
    notebook: Path
    runs: list[BatchRun]
    out: Path | None
    jobs: int
    path: Path


def load_manifest(path: str | os.PathLike) -> Manifest:
    """The manifest at ``path``, checked (``ManifestFile``: keys, types, run names; then the
    notebook, and parameter names against its parameters cell): InputError saying what to
    fix, before anything runs."""
    path = Path(path)
    doc = yaml_mapping(path, "batch manifest (YAML: notebook, defaults, runs or grid)", MANIFEST_KEYS)
    checked = validated(ManifestFile, doc, str(path))
    here = path.parent.resolve()
    notebook = (here / checked.notebook).resolve()
    if not notebook.is_file():
        raise InputError(
            f"{path}: notebook {notebook} (relative to the manifest's folder {here}) does not exist; "
            "give the path of an .ipynb file from that folder"
        )
    notebook_file(notebook, "notebook", f" (named in {path.name})")  # a notebook, before papermill reads it
    defaults = _paths(checked.defaults, here)
    runs = [BatchRun(name, notebook, {**defaults, **_paths(own, here)}) for name, own in checked.named()]
    check_parameters(notebook, runs)
    out = (here / checked.out).resolve() if checked.out else None
    return Manifest(notebook, runs, out, checked.jobs, path)


def _paths(params: dict[str, Any], here: Path) -> dict[str, Any]:
    """Parameter values naming a file or folder that exists relative to the manifest's
    folder become absolute paths (the notebook runs from its own folder)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, str) and v.strip() and not os.path.isabs(v) and ("/" in v or "." in v) and _exists(here / v):
            v = str((here / v).resolve())
        out[k] = v
    return out


def _exists(path: Path) -> bool:
    """``path.exists()``, False for a value no path can be (too long, a NUL byte)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def check_parameters(notebook: Path, runs: list[BatchRun]) -> None:
    """Every run's parameter names are the notebook's (papermill's inspection of its
    parameters cell): InputError listing the unknown ones and what the notebook takes."""
    import papermill as pm  # slow to import: only when checking a batch

    try:
        known = set(pm.inspect_notebook(str(notebook)))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # e.g. no kernelspec in its metadata
        raise InputError(
            f"papermill cannot read the parameters of {notebook} ({str(exc)[:120]}); open and save it "
            "in JupyterLab with the project's kernel, then run the batch again"
        ) from None
    for run in runs:
        unknown = sorted(set(run.parameters) - known)
        if unknown:
            near = {u: m[0] for u in unknown if (m := difflib.get_close_matches(u, known, 1))}
            hint = "; ".join(f"{u!r}: did you mean {m!r}?" for u, m in near.items())
            raise InputError(
                f"run {run.name}: {notebook.name} has no parameter(s) {', '.join(unknown)}"
                + (f" ({hint})" if hint else "")
                + f"; it takes: {', '.join(sorted(known))}"
            )


# ---------------------------------------------------------------- running
def _cpus_of(params: Mapping[str, Any]) -> set[int]:
    """The CPUs a run pins to, from its ``cpu``/``cpus`` parameter read as every CPU list is
    (``validate.cpu_list``: ``0-3`` holds 2); empty when it names none. InputError for a
    list that cannot be read, before anything runs."""
    value = params.get("cpu", params.get("cpus"))
    if value is None or value == "":
        return set()
    return set(cpu_list(value))


def _run_outputs(run: BatchRun, run_dir: Path) -> list[Path]:
    """The files a run writes into its folder: executed notebook, write-up, results, record."""
    executed = run_dir / run.notebook.name
    results = executed.with_name(f"{executed.stem}.results.json")
    return [executed, executed.with_suffix(".html"), results, run_dir / RECORD]


def check_outputs(out: Path, runs: list[BatchRun], force: bool = False) -> None:
    """Refuse, before any run, a batch that would write into a folder or over a file iolab did
    not write (``iolab.core.outputs``), unless ``force``. Nothing is written."""
    check_folder(out, force=force)
    for name in ("batch.json", "index.html"):
        claim_output(out / name, force=force)
    for run in runs:
        check_folder(inside(out, run.name), force=force, flag="run folder")
        for path in _run_outputs(run, inside(out, run.name)):
            claim_output(path, force=force)


def execute_one(run: BatchRun, run_dir: Path, force: bool = False) -> dict[str, Any]:
    """Execute one run into ``run_dir`` (in this process) and return its record; its files
    replace only iolab's own, unless ``force`` (``iolab.core.outputs``)."""
    from . import publish  # papermill and nbconvert: slow to import, only when running

    claim_folder(run_dir, force=force, flag="run folder")
    executed = run_dir / run.notebook.name
    record: dict[str, Any] = {
        "name": run.name,
        "notebook": str(run.notebook),
        "parameters": run.parameters,
        "key": run.key,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    start = time.monotonic()
    try:
        out = publish.execute(run.notebook, executed, run.parameters, force=force)
        record |= {"status": "ok", "error": "", "output": str(out)}
    except IolabError as exc:
        failed = executed.with_name(f"{executed.stem}.failed{executed.suffix}")
        record |= {"status": "failed", "error": str(exc), "output": str(failed) if failed.exists() else ""}
    record["duration_s"] = round(time.monotonic() - start, 1)
    record |= _recorded(Path(record["output"])) if record["output"] else {"results": [], "run_folders": []}
    record["html"] = ""
    if record["output"]:
        try:
            record["html"] = str(_export(Path(record["output"]), force))
        except (IolabError, OSError, ValueError) as exc:  # the run stands; its write-up could not be made
            record["error"] = (record["error"] + "; " if record["error"] else "") + f"no write-up: {exc}"
    write_json_output(run_dir / RECORD, record, force=force)
    return record


def _export(executed: Path, force: bool = False) -> Path:
    from . import publish

    return publish.publish(executed, executed.with_suffix(".html"), force=force)


def _recorded(executed: Path) -> dict[str, Any]:
    """The results and run folders an executed notebook recorded (its metadata)."""
    try:
        meta = json.loads(executed.read_text()).get("metadata", {}).get("iolab", {})
    except (OSError, ValueError):
        meta = {}
    return {"results": meta.get("results", []), "run_folders": meta.get("run_folders", [])}


def read_record(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The record of the batch run in ``run_dir`` (``RECORD``, or the name batches gave it
    before); None when there is none that reads as a JSON object."""
    for name in (RECORD, _OLD_RECORD):
        try:
            record = json.loads((Path(run_dir) / name).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            return record
    return None


def run_batch(
    manifest: Manifest | str | os.PathLike,
    out: str | os.PathLike | None = None,
    jobs: int | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    force: bool = False,
) -> list[dict[str, Any]]:
    """Run every run of the manifest that has no "ok" record with the same parameters in
    ``out`` (default: the manifest's ``out``, else ``batch-<manifest name>`` beside it);
    write ``batch.json`` and ``index.html`` there; return every run's record, in manifest
    order. ``on_done(record)`` is called as each run ends. A folder or file there that iolab
    did not write is refused before any run (``OutputExists``), unless ``force``."""
    manifest = manifest if isinstance(manifest, Manifest) else load_manifest(manifest)
    out = out_of(manifest, out)
    [jobs] = positive_ints("--jobs", [jobs]) if jobs is not None else [manifest.jobs]
    if jobs > MAX_JOBS:
        raise InputError(f"--jobs {jobs} is more runs at once than a process pool holds; give at most {MAX_JOBS}")
    check_outputs(out, manifest.runs, force)  # every run's: the done ones' files are iolab's
    claim_folder(out, force=force)
    records: dict[str, dict[str, Any]] = {}
    with folder_locked(out):
        todo = []
        for run in manifest.runs:
            prev = read_record(inside(out, run.name))
            if prev and prev.get("status") == "ok" and prev.get("key") == run.key:
                records[run.name] = prev
            else:
                todo.append(run)
        for record in _execute_all(todo, out, jobs, force):
            records[record["name"]] = record
            _write_index(manifest, out, records, force)
            if on_done:
                on_done(record)
        _write_index(manifest, out, records, force)
    return [records[r.name] for r in manifest.runs if r.name in records]


def out_of(manifest: Manifest, out: str | os.PathLike | None = None) -> Path:
    """The output folder of a batch: ``out``, else the manifest's ``out``, else
    ``batch-<manifest name>`` beside the manifest."""
    return Path(out or manifest.out or manifest.path.with_name(f"batch-{manifest.path.stem}")).resolve()


def describe_plan(manifest: Manifest, out: str | os.PathLike | None = None, every: bool = False) -> str:
    """The batch's plan in words (``iolab batch --dry-run``): how many notebook runs, how many
    are already done in ``out`` (``out_of``) and how long the rest should take — the median
    duration of the runs this batch already finished there, when any did — a warning when
    that is more than people usually mean (``iolab.measure.plans``), then the runs to do,
    the first and last few unless ``every``."""
    folder = out_of(manifest, out)
    previous = {run.name: read_record(inside(folder, run.name)) for run in manifest.runs}
    done = {
        r.name for r in manifest.runs if (p := previous[r.name]) and p.get("status") == "ok" and p.get("key") == r.key
    }
    todo = [r for r in manifest.runs if r.name not in done]
    took = sorted(float(p["duration_s"]) for p in previous.values() if p and p.get("duration_s") is not None)
    if took:  # measured here: the median run of this very batch
        seconds = len(todo) * took[len(took) // 2]
        how = f"the median of the {len(took)} run(s) already made here, {took[len(took) // 2]:g} s"
    else:
        seconds, how = _modelled_s(manifest.notebook, todo), "iolab seeds' model of each notebook's runs"
    estimate = f"about {readable_seconds(seconds)} one at a time ({how})"
    header = (
        f"batch {manifest.path.name}: {len(manifest.runs):,} notebook runs of {manifest.notebook.name}, "
        f"{len(done):,} already done in {folder}, {len(todo):,} to run; {estimate}"
        + (f", {manifest.jobs} at a time" if manifest.jobs > 1 else "")
    )
    warning = too_big(
        len(todo), seconds, "notebook runs", "fewer values in grid:, fewer runs:, or shorter runs in defaults:"
    )
    values: dict[str, set[str]] = {}
    for r in manifest.runs:
        for k in dict.fromkeys([*values, *r.parameters]):
            values.setdefault(k, set()).add(json.dumps(r.parameters.get(k), default=str))
    varied = [k for k, seen in values.items() if len(seen) > 1]  # the rest is the same in every run
    listing = [f"  {r.name}: " + ", ".join(f"{k}={r.parameters.get(k)}" for k in varied) for r in todo]
    return "\n".join([header, *([warning] if warning else []), *cut(listing, every, "runs", "--list-all")])


def _modelled_s(notebook: Path, todo: list[BatchRun]) -> float:
    """Seconds ``todo`` should take by ``iolab.report.contract.estimate_run``, each run's
    parameters over the notebook's own defaults (its parameters cell)."""
    from .contract import estimate_run, parameters_of

    defaults = parameters_of(notebook)
    total = 0.0
    for run in todo:
        with contextlib.suppress(IolabError, LookupError, ValueError, TypeError, OSError):
            total += estimate_run(notebook, {**defaults, **run.parameters})[1]
    return total


def _execute_all(todo: list[BatchRun], out: Path, jobs: int, force: bool = False):
    """Records as runs end; with ``jobs`` > 1, in worker processes, never two on one CPU."""
    if jobs == 1 or len(todo) <= 1:
        for run in todo:
            yield execute_one(run, out / run.name, force)
        return
    pending = list(todo)
    # a worker dies with this process, SIGKILL too; its notebook's kernel follows it (ipykernel
    # polls its parent), and that kernel's fio follows the kernel (machine.process)
    bind = {"initializer": _worker_start, "initargs": (os.getpid(),)}
    with cf.ProcessPoolExecutor(max_workers=jobs, **bind) as pool:
        running: dict[cf.Future, BatchRun] = {}
        while pending or running:
            busy = set().union(*(_cpus_of(r.parameters) for r in running.values())) if running else set()
            for run in list(pending):
                if len(running) >= jobs:
                    break
                if not (_cpus_of(run.parameters) & busy):
                    pending.remove(run)
                    running[pool.submit(_execute_in_worker, run, out / run.name, force)] = run
                    busy |= _cpus_of(run.parameters)
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for future in done:
                running.pop(future)
                yield future.result()


_ON_CTRL_C: Any = signal.default_int_handler  # a worker's SIGINT handler while it runs a notebook


def _worker_start(parent_pid: int) -> None:
    """A batch worker: bound to the batch (``die_with_parent``, iolab's handlers kept for its
    notebook's kernel) and deaf to Ctrl-C while it waits for work. Ctrl-C reaches every process
    of the terminal's group; an idle worker's KeyboardInterrupt inside the pool's queue read
    printed multiprocessing's traceback before the batch's one-line message."""
    global _ON_CTRL_C
    die_with_parent(parent_pid, False)
    _ON_CTRL_C = signal.signal(signal.SIGINT, signal.SIG_IGN)


def _execute_in_worker(run: BatchRun, run_dir: Path, force: bool = False) -> dict[str, Any]:
    """``execute_one`` in a worker, interruptible by Ctrl-C only while it runs."""
    signal.signal(signal.SIGINT, _ON_CTRL_C)
    try:
        return execute_one(run, run_dir, force)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _write_index(manifest: Manifest, out: Path, records: Mapping[str, dict[str, Any]], force: bool = False) -> None:
    from .batch_index import index_html  # matplotlib: only when writing the page

    ordered = [records[r.name] for r in manifest.runs if r.name in records]
    doc = {
        "manifest": str(manifest.path),
        "notebook": str(manifest.notebook),
        "runs": [
            {
                k: rec.get(k)
                for k in (
                    "name",
                    "notebook",
                    "parameters",
                    "status",
                    "output",
                    "html",
                    "duration_s",
                    "error",
                    "results",
                    "run_folders",
                )
            }
            for rec in ordered
        ],
    }
    write_json_output(out / "batch.json", doc, force=force)
    write_output(out / "index.html", index_html(doc, out), force=force)
