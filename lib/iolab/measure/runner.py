"""One measured run: target + fio options -> fio with samplers around it -> a stored run.

    from iolab.measure.runner import measure
    result = measure({"rw": "randread", "bs": "4k", "iodepth": 32}, target, cpus=[0],
                     runs_dir="data/runs", swept={"qd": 32})
    result.table          # the tidy table of that run (fio rows + sampler summary + params)

The job is pinned with fio's ``cpus_allowed`` to ``cpus``; the samplers watch those CPUs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from ..core import signals
from ..core.errors import IolabError, TargetError, TioError
from ..core.paths import runs_dir as default_runs_dir
from ..core.progress import Stages, Ticking
from ..core.runfiles import (
    ARGV_JSON,
    BLOCKSTAT_JSON,
    FIO_JSON,
    FIO_STDERR,
    JOB_FIO,
    PCIE_JSON,
    SYSTEM_JSON,
    TIO_TXT,
)
from ..core.system import block_stats, snapshot, summed_block_stats
from ..core.validate import check_cpus, check_measure
from ..machine import logrequest
from ..machine.fio import _fmt, fio_argv, fio_binary, raise_for_failure, read_output, run_fio, to_jobfile
from ..machine.jobcheck import guard_job_text, mark_created
from ..machine.jobcpus import check_job_cpus, pin_sq_threads
from ..machine.locks import cpus_locked
from ..machine.perf import Profiler
from ..machine.process import run_pinned
from ..machine.sampling import Sampler
from ..machine.target import Target
from ..machine.threads import ThreadSampler
from ..read import checks
from ..read.fiojson import run_warnings
from ..read.tio import failure, tio_argv
from ..runs import repair
from ..runs.store import RunWriter, run_folder, run_table
from .options import MeasureOptions
from .planned import TIO_DEFAULTS, fio_job


@dataclass
class RunResult:
    path: Path
    table: pd.DataFrame


PCIE_FILE = PCIE_JSON


def _opened_devices(check: Any) -> list[str]:
    """The block devices fio opens as devices (a passthrough node's namespace too), by kernel
    name, each once: every device of a multi-device job, not only the target's."""
    return list(dict.fromkeys(Path(f.device).name for f in check.files if f.device and f.kind in ("block", "char")))


def _pcie_state(devices: Sequence[str]) -> dict | None:
    """The PCI paths (links, AER counters) of ``devices``, merged by PCI address (a port two
    devices share is read once); None when none has a PCI function (files, loop devices)."""
    from ..machine.preflight_pci import pcie_state

    merged: dict = {}
    for device in devices:
        merged |= pcie_state(device) or {}
    return merged or None


def _blockstat(before: dict[str, dict], after: dict[str, dict], interval_s: float) -> dict:
    """blockstat.json: the counters of every device counted, before and after (``devices``), and
    their sums (``before``, ``after``; ``device`` names them all, ``, ``-joined), so a job over
    several devices is judged on all it moved (``iolab.read.checks``)."""
    names = [d for d in before if d in after]
    return {
        "device": ", ".join(names),
        "before": summed_block_stats({d: before[d] for d in names}),
        "after": summed_block_stats({d: after[d] for d in names}),
        "interval_s": interval_s,
        "devices": {d: {"before": before[d], "after": after[d]} for d in names},
    }


def _record_setup(
    folder: RunWriter,
    target: Target,
    cpus: list[int] | None,
    params: dict,
    described: str | None = None,
    devices: Sequence[str] = (),
) -> Sampler:
    """What every run folder records before the tool starts; the sampler for its CPUs (and the
    kernel workers of ``devices``, default the target's). ``described``: the target as the tool
    really used it, when options overrode it."""
    described = described or target.describe()
    folder.write_params(params, cpus, described)
    folder.write_json(SYSTEM_JSON, {**snapshot(target.device, cpus), "target_state": target.state})
    folder.meta["target"] = described
    every = list(range(os.cpu_count() or 1))
    return Sampler(cpus if cpus is not None else every, devices=list(devices) or [target.device or ""])


def exclusive(run):
    """A run of ``run`` (measure, measure_tio) that first repairs what dead iolab processes
    left behind, holds its CPUs against other measurements (``iolab.machine.locks``) and unwinds
    on SIGTERM/SIGHUP as on Ctrl-C (``iolab.core.signals``)."""

    @functools.wraps(run)
    def wrapper(options, target, *, cpus=None, **kw):
        with held_for(target, cpus):
            return run(options, target, cpus=cpus, **kw)

    return wrapper


def usable(target: Target, cpus: list[int] | None) -> None:
    """TargetError for a target already released, InputError for CPUs not to be had: said
    before anything waits or runs."""
    if target.released:
        raise TargetError(
            f"{target.describe()} was released (a cell failed, or release() ran): re-run the cell that opens the target"
        )
    check_cpus(cpus)  # before its lock is taken


@contextlib.contextmanager
def held_for(target: Target, cpus: list[int] | None) -> Iterator[None]:
    """What ``exclusive`` does around a run, for a block: the target still open, CPUs checked,
    dead processes' leftovers repaired, the CPUs locked, SIGTERM/SIGHUP unwinding."""
    usable(target, cpus)
    repair.recover_and_report()
    with signals.held(), cpus_locked(cpus):
        yield


def job_sections(
    name: str, opts: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]], groups: bool = True
) -> dict[str, dict]:
    """The job file's sections (job name -> options): ``opts`` alone as job ``name``, or one
    section per entry of ``jobs`` over ``opts``, named ``name-i``; an entry's own ``name``
    names its section and (``groups``) starts a reporting group of its own (fio's ``new_group``),
    so ``group_reporting`` sums its ``numjobs`` clones, never other jobs."""
    if not jobs:
        return {name: dict(opts)}
    out: dict[str, dict] = {}
    for i, j in enumerate(jobs):
        j = dict(j)
        own = j.pop("name", None)
        out[str(own) if own else f"{name}-{i}"] = {**opts, **j, **({"new_group": True} if own and groups else {})}
    return out


def iolab_added(
    given: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]], sections: Mapping[str, Mapping], argv: Sequence[str]
) -> list[dict[str, str]]:
    """What iolab put into a run beyond the caller's options (``given`` under each of
    ``jobs``): per job section, each option added or changed, with its value; and fio's
    command-line options (``argv``). params.json keeps them as ``iolab_added``;
    docs/command-line.md says why each stays."""
    mine = [{**given, **j} for j in jobs] or [dict(given)]
    rows = []
    for (name, opts), asked in zip(sections.items(), mine):
        if asked.get("name") is None:
            rows.append({"job": name, "option": "name", "value": name})
        rows += [
            {"job": name, "option": k, "value": "" if _fmt(v) is None else str(_fmt(v))}
            for k, v in opts.items()
            if k != "name" and (k not in asked or _fmt(asked[k]) != _fmt(v))
        ]
    flags = [a.partition("=") for a in argv if a.startswith("--")]
    return rows + [{"job": "(fio's command line)", "option": k[2:], "value": v} for k, _, v in flags]


def _seconds(opts: Mapping[str, Any]) -> float:
    """How long a time-based fio job runs, ramp included (0 when that cannot be read)."""
    from ..core.validate import fio_seconds

    try:
        return sum(fio_seconds(opts.get(key) or 0) for key in ("runtime", "ramp_time"))
    except IolabError:
        return 0.0


class JobFile(NamedTuple):
    """A fio run's job as ``measure`` runs it: its full options (``log_ms``'s log options
    added, ``name`` taken out), its resume key, its job name, its sections and their text."""

    options: dict[str, Any]
    key: str
    name: str
    sections: dict[str, dict[str, Any]]
    text: str


def job_file(
    options: Mapping[str, Any],
    target: Target,
    cpus: list[int] | None,
    swept: Mapping[str, Any] | None,
    label: str,
    jobs: Sequence[Mapping[str, Any]],
    how: MeasureOptions,
    fio: str,
) -> JobFile:
    """The job ``measure`` runs, built in this one place: a campaign builds its runs' jobs
    beforehand to ask fio about them all at once (``iolab.machine.jobbatch.parse_ahead``)."""
    jobs = [dict(j) for j in jobs]
    opts, key = fio_job(options, target, cpus, swept or {}, jobs, defaults=how.as_given is None)
    if how.log_ms is not None:  # after the key (see measure's docstring)
        opts.update(logrequest.log_options(how.log_ms, fio))
    name = str(opts.pop("name", label or "iolab"))
    sections = pin_sq_threads(job_sections(name, opts, jobs, groups=how.as_given is None), cpus)
    return JobFile(opts, key, name, sections, to_jobfile(sections))


def measure(
    options: Mapping[str, Any],
    target: Target,
    *,
    cpus: list[int] | None = None,
    runs_dir: str | Path | None = None,
    swept: Mapping[str, Any] | None = None,
    label: str = "",
    jobs: Sequence[Mapping[str, Any]] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
    built: JobFile | None = None,
) -> RunResult:
    """Run fio once with samplers and store the run; ``how`` (``MeasureOptions``) says how:
    perf around it (``profile``), fio's interval logs every ``log_ms`` ms (IOPS, bandwidth,
    latency and latency histograms per job, ``iolab.read.series``; they do not change the
    job's identity, so a resumed sweep reuses its runs made without them), the thread-state
    sampler beside it (``threads``: ``iolab.machine.threads``, off the measured CPUs), the
    write guard's permission (``allow_destructive``), a timeout and the samplers' period.
    ``jobs``: one job section per entry, each the run's options with that entry's on top
    (``{"filename": ..., "cpus_allowed": ...}``: one job per device, each on its CPU); with
    ``group_reporting`` (a default) fio reports them as one; an entry with a ``name`` of its
    own is a job of its own, on its own rows (``job_sections``).
    A polling SQ thread is pinned within ``cpus``; options that put fio's work on other CPUs are
    refused (InputError, ``iolab.machine.jobcpus``).
    Raises UnsafeTargetError, or FioError for a job fio will not parse, before any run
    folder exists and before its CPUs' lock is waited for (a refused job never waits); once fio has started, FioError (fio's message and exit code),
    RunInterrupted and PerfError leave the run folder, marked failed or interrupted.
    ``runs_dir``: ``$IOLAB_DATA``/runs (data/runs) by default. ``built``: internal, this job as a
    campaign built it beforehand (``job_file`` of these exact arguments), carried rather than
    built again; not checked against them."""
    usable(target, cpus)
    runs_dir = runs_dir or default_runs_dir()
    check_measure(options, runs_dir=runs_dir)
    how = MeasureOptions.of(how)
    log_ms, profile = how.log_ms, how.profile
    fio = fio_binary()
    jobs = [dict(j) for j in jobs or []]
    built = built or job_file(options, target, cpus, swept, label, jobs, how, fio)
    opts, key, name, sections, jobtext = built.options, built.key, built.name, built.sections, built.text
    # fio's own reading of this exact text, judged before a run folder exists; relative
    # paths as fio will open them from the run folder (runs_dir/.tmp-<id>)
    check = guard_job_text(jobtext, how.allow_destructive, fio=fio, cwd=Path(runs_dir).absolute() / ".tmp-run")
    cpu_notes = check_job_cpus(check.jobs, cpus)  # InputError: fio's work off the locked, sampled CPUs
    states = (
        ThreadSampler(cpus, how.threads_interval_s, how.threads_states) if how.threads else None
    )  # InputError first
    with held_for(target, cpus):  # the CPUs locked once the job is known good: a refused job never waits for them
        with run_folder(runs_dir, label) as folder:
            folder.write_text(JOB_FIO, jobtext)
            sampler = _record_setup(
                folder,
                target,
                cpus,
                {
                    "swept": dict(swept or {}),
                    "fio_options": opts,
                    "files": check.record(),
                    "job_key": key,
                    **({"jobs": jobs} if jobs else {}),
                    **({"as_given": dict(how.as_given)} if how.as_given is not None else {}),
                    "iolab_added": iolab_added(
                        options,
                        jobs,
                        sections,
                        fio_argv(Path(JOB_FIO), Path(FIO_JSON), fio, readonly=check.fio_readonly),
                    ),
                },
                check.describe_target(target),
                _opened_devices(check),
            )
            sampler.interval_s = how.sample_interval_s
            profiler = stages = None
            if profile is not None:
                profiler = Profiler(folder.path, cpus, profile)
                stages = Stages(
                    f"profiled run {label}".strip(),
                    [f"fio {opts.get('runtime', '')} under perf record", "perf script, folding stacks"],
                )
            wrap = profiler.wrap() if profiler else []
            argv = fio_argv(Path(JOB_FIO), Path(FIO_JSON), fio, wrap, readonly=check.fio_readonly)
            folder.write_json(ARGV_JSON, {"argv": argv, "cwd": "<this run folder>", "cpu_affinity": cpus})

            if profiler:
                profiler.start()
            devices = _opened_devices(check)
            pcie_before = _pcie_state(devices)
            stat_before, stat_t0 = block_stats(devices or [target.device]), time.monotonic()  # every device fio opens
            ticking = Ticking(f"fio {label or name}".strip(), 0 if profiler else _seconds(opts))  # a long run's seconds
            try:
                run = run_fio(
                    argv,
                    Path(JOB_FIO),
                    Path(FIO_JSON),
                    cwd=folder.path,
                    timeout_s=how.timeout_s,
                    on_start=lambda pid: (sampler.start(pid), states and states.start(pid), ticking.start()),
                    cpus=cpus,
                )
            finally:
                ticking.close()
                mark_created(check)  # files fio laid out are iolab's: the next run may write them
                thread_samples = states.stop() if states and states.started else None  # its ticks end with fio
                if profiler:
                    profiler.stop()
                samples = sampler.stop() if sampler.started else None
                if samples is not None:
                    folder.write_samples(samples)
                if thread_samples is not None:
                    folder.write_samples(thread_samples)
            stat_after = block_stats(stat_before)
            if stat_after:  # the devices counted before and still there after
                interval_s = time.monotonic() - stat_t0  # what %util and aqu-sz divide by (iolab.core.system.iostat)
                folder.write_json(BLOCKSTAT_JSON, _blockstat(stat_before, stat_after, interval_s))
            if pcie_before is not None:  # AER counters and links of the device's PCI path (iolab.read.checks)
                folder.write_json(PCIE_FILE, {"devices": devices, "before": pcie_before, "after": _pcie_state(devices)})
            if profiler:
                stages.advance()
                profiler.collect(sampler.tids or None)  # fio's samples told apart (its threads, its devices' workers)
                stages.close()
            if log_ms is not None:  # what puts the logs on the samplers' axis
                logrequest.record(
                    folder.path, log_ms=log_ms, options=opts, jobs=logrequest.job_names(sections), sampler_t0=sampler.t0
                )
            folder.write_text(FIO_STDERR, run.stderr)
            folder.meta["wall_s"] = run.wall_s
            jobfile = folder.final / JOB_FIO  # where it is once the folder is finished
            doc = read_output(folder.file(FIO_JSON), run.stderr, jobfile)  # FioError: fio wrote no report
            folder.meta["fio_warnings"] = run_warnings(doc, run.stderr) + cpu_notes  # fio's notes, never dropped
            raise_for_failure(doc, run.stderr, jobfile)  # FioError: job errors, or no I/O at all (abort)
            folder.write_json(checks.FILE, {"checks": [c.as_dict() for c in checks.run_checks(folder.path)]})
        return RunResult(folder.path, run_table(folder.path))


@exclusive
def measure_tio(
    flags: Mapping[str, Any],
    target: Target,
    *,
    cpus: list[int] | None = None,
    runs_dir: str | Path | None = None,
    swept: Mapping[str, Any] | None = None,
    label: str = "tio",
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> RunResult:
    """Run fio's t/io_uring pinned to ``cpus`` with samplers, stored like a fio run
    (``tio.txt`` instead of ``fio.json``): ``how.tio`` (the binary; None: ``make tio``'s),
    ``how.timeout_s`` (None: 120 s). Raises TioError when its output says it failed (it
    exits 0 when polled IO is unsupported)."""
    how = MeasureOptions.of(how)
    runs_dir = runs_dir or default_runs_dir()
    flags = {**TIO_DEFAULTS, **dict(flags)}
    argv = tio_argv(target.path, flags, how.tio)
    with run_folder(runs_dir, label) as folder:
        sampler = _record_setup(folder, target, cpus, {"swept": dict(swept or {}), "tio_flags": flags})
        folder.write_json(ARGV_JSON, {"argv": argv, "cpu_affinity": cpus})
        try:
            done = run_pinned(
                argv,
                name="t/io_uring",
                cpus=cpus,
                timeout_s=how.timeout_s or 120,
                on_start=lambda pid: sampler.start(pid),
                merge_stderr=True,
            )
        finally:
            if sampler.started:
                folder.write_samples(sampler.stop())
        folder.write_text(TIO_TXT, done.stdout)
        reason = failure(done.stdout)
        if reason or done.returncode != 0:
            raise TioError(
                f"t/io_uring failed on {target.path}: {reason or done.stdout.strip()[-300:]} "
                f"(exit {done.returncode})"
                + (
                    ". Polled IO needs poll queues (NVMe: nvme.poll_queues=N); use -p 0 here."
                    if reason and "polled" in reason
                    else ""
                )
            )
    return RunResult(folder.path, run_table(folder.path))
