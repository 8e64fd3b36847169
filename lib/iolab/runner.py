"""One measured run: target + fio options -> fio with samplers around it -> a stored run.

    from iolab.runner import measure
    result = measure({"rw": "randread", "bs": "4k", "iodepth": 32}, target, cpus=[0],
                     runs_dir="data/runs", swept={"qd": 32})
    result.table          # the tidy table of that run (fio rows + sampler summary + params)

The job is pinned with fio's ``cpus_allowed`` to ``cpus``; the samplers watch those CPUs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from .errors import FioError
from .fio import fio_argv, fio_binary, job_errors, load_document, run_fio, tidy, to_jobfile
from .sampling import Sampler
from .store import RunFolder, run_folder, run_table
from .system import block_stat, snapshot
from .target import Target, guard_write

if TYPE_CHECKING:
    from .perf import ProfileSpec

DEFAULTS = {"ioengine": "io_uring", "direct": 1, "rw": "randread", "bs": "4k", "iodepth": 1,
            "time_based": 1, "runtime": "2s", "group_reporting": 1}


@dataclass
class RunResult:
    path: Path
    table: pd.DataFrame


def job_options(options: Mapping[str, Any], target: Target, cpus: list[int] | None) -> dict[str, Any]:
    """The full option dict of a run: iolab defaults < target < the caller's options."""
    opts: dict[str, Any] = {**DEFAULTS, **target.fio_options, **dict(options)}
    if cpus is not None and "cpus_allowed" not in options:
        opts["cpus_allowed"] = ",".join(str(c) for c in cpus)
    return opts


def _record_setup(folder: RunFolder, target: Target, cpus: list[int] | None, params: dict) -> Sampler:
    """What every run folder records before the tool starts; the sampler for its CPUs."""
    folder.write_json("params.json", {**params, "cpus": cpus, "target": target.describe()})
    folder.write_json("system.json", snapshot(target.device, cpus))
    folder.meta["target"] = target.describe()
    return Sampler(cpus if cpus is not None else list(range(os.cpu_count() or 1)))


def measure(options: Mapping[str, Any], target: Target, *, cpus: list[int] | None = None,
            runs_dir: str | Path = "data/runs", swept: Mapping[str, Any] | None = None,
            label: str = "", allow_destructive: bool = False, sample_interval_s: float = 0.5,
            timeout_s: float | None = None, profile: "ProfileSpec | None" = None) -> RunResult:
    """Run fio once with samplers (and perf, when ``profile`` is given) and store the run.
    Raises FioError (fio's message and exit code), RunInterrupted, UnsafeTargetError,
    PerfError; the run folder is kept either way."""
    fio = fio_binary()
    opts = job_options(options, target, cpus)
    guard_write(target, opts, allow_destructive)
    with run_folder(runs_dir, label) as folder:
        name = str(opts.pop("name", label or "iolab"))
        folder.write_text("job.fio", to_jobfile({name: opts}))
        sampler = _record_setup(folder, target, cpus, {"swept": dict(swept or {}), "fio_options": opts})
        sampler.interval_s = sample_interval_s
        profiler = None
        if profile is not None:
            from .perf import Profiler
            profiler = Profiler(folder.path, cpus, profile)
        wrap = profiler.wrap() if profiler else []
        argv = fio_argv(Path("job.fio"), Path("fio.json"), fio, wrap)
        folder.write_json("argv.json", {"argv": argv, "cwd": "<this run folder>", "cpu_affinity": cpus})

        if profiler:
            profiler.start()
        stat_before = block_stat(target.device)
        try:
            run = run_fio(Path("job.fio"), Path("fio.json"), fio=fio, cwd=folder.path,
                          timeout_s=timeout_s, on_start=lambda pid: sampler.start(), cpus=cpus,
                          wrap=wrap)
        finally:
            if profiler:
                profiler.stop()
            if sampler.started:
                folder.write_samples(sampler.stop())
        if stat_before is not None:
            folder.write_json("blockstat.json", {"device": target.device, "before": stat_before,
                                                 "after": block_stat(target.device)})
        if profiler:
            profiler.collect()
        folder.write_text("fio.stderr", run.stderr)
        folder.meta["wall_s"] = run.wall_s
        errors = job_errors(tidy(load_document(folder.file("fio.json"))))
        if errors:
            raise FioError("fio reported job errors:\n" + "\n".join(errors) +
                           f"\nfio said: {run.stderr.strip() or '(nothing on stderr)'}", 0, run.stderr)
    return RunResult(folder.path, run_table(folder.path))


def measure_tio(flags: Mapping[str, Any], target: Target, *, cpus: list[int] | None = None,
                runs_dir: str | Path = "data/runs", swept: Mapping[str, Any] | None = None,
                label: str = "tio", tio: str | Path | None = None, timeout_s: float = 120) -> RunResult:
    """Run fio's t/io_uring pinned to ``cpus`` with samplers, stored like a fio run
    (``tio.txt`` instead of ``fio.json``). Raises TioError when its output says it failed
    (it exits 0 when polled IO is unsupported)."""
    from .errors import TioError
    from .process import run_pinned
    from .tio import failure, tio_argv

    flags = {"r": 3, **dict(flags)}
    argv = tio_argv(target.path, flags, tio)
    with run_folder(runs_dir, label) as folder:
        sampler = _record_setup(folder, target, cpus, {"swept": dict(swept or {}), "tio_flags": flags})
        folder.write_json("argv.json", {"argv": argv, "cpu_affinity": cpus})
        try:
            done = run_pinned(argv, name="t/io_uring", cpus=cpus, timeout_s=timeout_s,
                              on_start=lambda pid: sampler.start(), merge_stderr=True)
        finally:
            if sampler.started:
                folder.write_samples(sampler.stop())
        folder.write_text("tio.txt", done.stdout)
        reason = failure(done.stdout)
        if reason or done.returncode != 0:
            raise TioError(f"t/io_uring failed on {target.path}: {reason or done.stdout.strip()[-300:]} "
                           f"(exit {done.returncode})" +
                           (". Polled IO needs poll queues (NVMe: nvme.poll_queues=N); use -p 0 here."
                            if reason and "polled" in reason else ""))
    return RunResult(folder.path, run_table(folder.path))
