"""A fio command or job file as the user would run it, made into the jobs iolab runs:
``iolab run -- [sudo] [taskset -c CPUS] fio --name=... ...`` and ``iolab run JOB.fio``.

    cpus, words = split_command(["taskset", "-c", "3", "fio", "--name=a", "--hipri"])
    pasted = read_command(words, cwd=os.getcwd())   # Pasted(jobs=[{"name": "a", "hipri": True}], ...)

fio's rules, not iolab's: options before the first ``--name=`` belong to every job, each
``--name=`` starts a job, a bare ``--hipri`` is set; a job file is read as written (its
``[global]`` sections under the jobs after them, ``include`` followed). Nothing of iolab's
defaults is added (``iolab.measure.planned.job_options`` with ``defaults=False``); fio's own
parse of the job (the write guard, ``iolab.machine.jobcheck``) then says what it means and
which files it opens. Paths a job names relative to the folder the user ran iolab from are
made absolute (fio runs in the run folder); a job naming no file gets ``directory`` = that
folder, where fio would have laid its file out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.validate import cpu_list
from .jobcheck import JobCheck, jobs_as_written

# fio's command-line options that change only how fio reports, not what it runs: iolab
# writes its own report (--output-format=json+ --output=fio.json), so these are replaced
REPORT_ONLY = ("output", "output-format", "minimal", "eta", "eta-newline", "eta-interval", "status-interval")
REPORT_ONLY += ("terse-version", "append-terse")
# fio's command-line options that are not job options and that iolab cannot honour in a run
NOT_A_JOB = (
    "parse-only",
    "section",
    "server",
    "client",
    "daemonize",
    "remote-config",
    "debug",
    "version",
    "help",
    "cmdhelp",
    "enghelp",
    "showcmd",
    "crctest",
    "cpuclock-test",
    "idle-prof",
    "inflate-log",
    "trigger",
    "trigger-file",
    "trigger-timeout",
    "trigger-remote",
    "max-jobs",
    "aux-path",
    "bandwidth-log",
    "warnings-fatal",
    "alloc-size",
    "latency-log",
)


def _shown(word: str) -> str:
    return repr(word if len(word) <= 40 else word[:39] + "…")


@dataclass
class Pasted:
    """The jobs of a pasted fio command or job file: ``jobs`` (each with its ``name``, fio's
    option names and values, ``True`` for a bare flag), ``readonly`` (fio's ``--readonly``
    was given), ``replaced`` (fio's report options iolab replaces with its own), ``source``
    (the command or job file, as given)."""

    jobs: list[dict[str, Any]]
    source: str
    readonly: bool = False
    replaced: list[str] = field(default_factory=list)
    cpus: list[int] | None = None  # the CPUs to pin and sample (taskset -c, or iolab's --cpus)
    target: Any = None  # its Target (``opened_target``), once fio's reading of it is judged

    def record(self) -> dict[str, Any]:
        """What params.json keeps of it (``as_given``)."""
        return {"source": self.source, "replaced": self.replaced, "readonly": self.readonly}


def split_command(words: list[str]) -> tuple[list[int] | None, list[str]]:
    """(the CPUs ``taskset -c CPUS`` names, or None; the fio words after ``fio``) of a pasted
    command: ``[sudo] [taskset -c CPUS | taskset --cpu-list CPUS] fio ARGS``. InputError for
    any other program, or taskset without -c (its mask form)."""
    rest = list(words)
    if rest and rest[0] == "--":
        rest.pop(0)
    if rest and rest[0] == "sudo":  # iolab runs fio as the user running iolab
        rest.pop(0)
    cpus = None
    if rest and rest[0] == "taskset":
        if len(rest) < 4 or rest[1] not in ("-c", "--cpu-list"):
            raise InputError(
                "taskset before fio is read as taskset -c CPUS (a CPU list, e.g. taskset -c 3 fio ...); "
                "give that form, or --cpus CPUS before the --"
            )
        cpus = cpu_list(rest[2])
        rest = rest[3:]
    if not rest or Path(rest[0]).name != "fio":
        got = _shown(rest[0]) if rest else "nothing"
        raise InputError(
            f"iolab run -- expects a fio command ([taskset -c CPUS] fio --name=... ...), and got {got}; "
            "give the fio command line, or a job file: iolab run JOB.fio"
        )
    return cpus, rest[1:]


def read_command(args: list[str], cwd: str | os.PathLike, fio: str | None = None) -> Pasted:
    """The jobs of fio's command-line ``args`` (the words after ``fio``), as fio reads them;
    a single job file among them is read as ``read_jobfile`` does."""
    files = [a for a in args if not a.startswith("-")]
    options = [a for a in args if a.startswith("-")]
    source = "fio " + " ".join(args)
    glob: dict[str, Any] = {}
    jobs: list[dict[str, Any]] = []
    readonly, replaced = False, []
    for word in options:
        key, eq, value = word.lstrip("-").partition("=")
        if not word.startswith("--") and len(key) > 1:  # fio reads -name=x as --name=x (getopt_long_only)
            word = "-" + word
        if not word.startswith("--") or not key:
            raise InputError(f"fio option {_shown(word)}: fio's options are written --name=value, e.g. --iodepth=32")
        if key in REPORT_ONLY:
            replaced.append(word)
        elif key == "readonly":
            readonly = True
        elif key in NOT_A_JOB:
            raise InputError(
                f"fio's --{key} is not a job option, and iolab runs fio itself (its own report, one run): drop it"
            )
        elif key == "name":
            jobs.append({"name": value})
        else:
            (jobs[-1] if jobs else glob)[key] = value if eq else True
    if files:
        if jobs or len(files) > 1:
            raise InputError(
                "give one job file, or --name= jobs, not both (iolab run JOB.fio, or iolab run -- fio --name=...)"
            )
        pasted = read_jobfile(Path(cwd, files[0]), fio, glob, cwd)
        return Pasted(pasted.jobs, source, readonly or pasted.readonly, replaced)
    if not jobs:
        raise InputError("the fio command names no job: give --name=NAME (fio needs one too)")
    return Pasted(_anchored([{**glob, **job} for job in jobs], cwd), source, readonly, replaced)


def read_jobfile(
    path: str | os.PathLike,
    fio: str | None = None,
    over: dict[str, Any] | None = None,
    cwd: str | os.PathLike | None = None,
) -> Pasted:
    """The jobs of a fio job file as written (``[global]`` options under the jobs after them;
    ``over``: command-line options before it, under every job), relative paths made absolute
    as fio would open them from ``cwd`` (default: the current folder)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"job file {_shown(str(path))} does not exist: give the path of a fio job file")
    jobs = [{"name": job.name, **(over or {}), **_flags(job.options)} for job in jobs_as_written(path, fio)]
    if not jobs:
        raise InputError(f"job file {_shown(str(path))} holds no job: fio needs a [section] per job")
    return Pasted(_anchored(jobs, cwd or Path.cwd()), str(path))


def _flags(options: dict[str, str | None]) -> dict[str, Any]:
    return {k: True if v is None else v for k, v in options.items()}


def _anchored(jobs: list[dict[str, Any]], cwd: str | os.PathLike) -> list[dict[str, Any]]:
    """Jobs whose relative ``filename``/``directory`` are made absolute from ``cwd``; a job
    naming neither lays its files out in ``cwd`` (``directory``), as fio would there."""
    names = [str(j["name"]) for j in jobs]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise InputError(f"two jobs named {_shown(twice[0])}: give each job a name of its own")
    out = []
    for job in jobs:
        job = anchored_paths(job, cwd)
        if "directory" not in job and "filename" not in job:
            job["directory"] = str(cwd)
        out.append(job)
    return out


def anchored_paths(job: dict[str, Any], cwd: str | os.PathLike) -> dict[str, Any]:
    """``job`` with its relative ``directory`` (or, without one, ``filename``) made absolute from
    ``cwd``, the folder the user ran iolab from: fio runs in the run folder, where a relative
    path would name another file. fio's ``:`` separates several (``\\:`` is a colon in a name)."""
    job = dict(job)
    if isinstance(job.get("directory"), str):
        job["directory"] = ":".join(os.path.join(cwd, d) for d in re.split(r"(?<!\\):", job["directory"]))
    elif isinstance(job.get("filename"), str) and not job.get("filename_format"):
        parts = re.split(r"(?<!\\):", job["filename"])
        job["filename"] = ":".join(p if p.startswith("/") or p == "-" else os.path.join(cwd, p) for p in parts)
    return job


def opened_target(check: JobCheck):
    """The Target of a pasted job: the first file its first job opens (fio's reading,
    ``check.files``): a block or char device, or a file (one fio will lay out too)."""
    from .target import Target, device_of_path, existing_path

    opened = [f for f in check.files if not f.assumed and f.kind in ("block", "char", "file", "missing")]
    if not opened:
        raise InputError("the fio job opens no file or device iolab can name: give --filename= or --directory=")
    first = opened[0]
    if first.kind == "missing":
        return Target("file", Path(first.path), None, device=device_of_path(Path(first.path).parent))
    target = existing_path(first.path)
    if first.kind == "char" and first.device:  # /dev/ng0n1: its namespace's block device has the queue and stats
        target.device = Path(first.device).name
    return target
