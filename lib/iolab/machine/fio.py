"""fio: option dicts -> job file / argv, and running fio (its report is read by ``iolab.read.fiojson``).

Input: plain option dicts, fio's own names and values (any option passes through)::

    {"rw": "randread", "bs": "4k", "iodepth": 32, "ioengine": "io_uring", "direct": 1}

Output: a job file or command line (``to_jobfile``, ``to_argv``, ``fio_argv``); ``run_fio``
runs it pinned with ``--output-format=json+`` and leaves fio's raw report untouched; after a
run that exited 0, ``read_output`` and ``raise_for_failure`` turn a report without I/O or with
job errors into FioError carrying fio's own words.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import write_atomic
from ..core.errors import FioError, FioOutputError, ToolMissing
from ..core.runfiles import FIO_STDERR, JOB_FIO
from ..read.fio_failures import explain
from ..read.fiojson import FioDocument, job_errors, load_document, said_lines, tidy
from .process import run_pinned


# ---------------------------------------------------------------- options -> job file / argv
def _fmt(value: Any) -> str | None:
    """fio spelling of a Python value; None means 'flag without a value'."""
    if value is True:
        return None
    if value is False:
        return "0"
    if isinstance(value, (list, tuple)):
        return ":".join(str(v) for v in value)
    return str(value)


def to_argv(options: Mapping[str, Any], fio: str = "fio") -> list[str]:
    """fio command line for one job from an option dict: ``--name=x --rw=read ...``.

    ``name`` comes first (fio needs a job name before job options)."""
    opts = dict(options)
    argv = [fio, f"--name={opts.pop('name', 'iolab')}"]
    for key, value in opts.items():
        if value is None:
            continue
        text = _fmt(value)
        argv.append(f"--{key}" if text is None else f"--{key}={text}")
    return argv


def to_jobfile(
    jobs: Mapping[str, Mapping[str, Any]] | Mapping[str, Any], global_options: Mapping[str, Any] | None = None
) -> str:
    """fio job file text. ``jobs`` maps job name -> options, or is one option dict
    (then its ``name`` key, default ``iolab``, names the single job)."""
    if jobs and all(isinstance(v, Mapping) for v in jobs.values()):
        sections = {str(k): dict(v) for k, v in jobs.items()}
    else:
        one = dict(jobs)
        sections = {str(one.pop("name", "iolab")): one}

    def body(opts: Mapping[str, Any]) -> list[str]:
        lines = []
        for key, value in opts.items():
            if value is None:
                continue
            text = _fmt(value)
            lines.append(key if text is None else f"{key}={text}")
        return lines

    out: list[str] = []
    if global_options:
        out += ["[global]", *body(global_options), ""]
    for name, opts in sections.items():
        out += [f"[{name}]", *body(opts), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- running
def fio_binary() -> str:
    """Path of fio, or ToolMissing with the package that provides it."""
    path = shutil.which("fio")
    if not path:
        raise ToolMissing("fio")
    return path


def fio_version(fio: str | None = None) -> str:
    fio = fio or fio_binary()
    return subprocess.run([fio, "--version"], capture_output=True, text=True, check=False).stdout.strip()


@dataclass
class FioRun:
    """A finished fio invocation: where its output is and what it printed."""

    argv: list[str]
    output_path: Path
    returncode: int
    stdout: str
    stderr: str
    wall_s: float = 0.0
    pid: int | None = None
    extra: dict = field(default_factory=dict)


def fio_argv(
    jobfile: Path, output_path: Path, fio: str | None = None, wrap: list[str] | None = None, readonly: bool = False
) -> list[str]:
    """The exact command line iolab runs fio with (json+, so percentiles come from bins),
    optionally under a wrapper such as ``perf record ... --``. ``readonly`` adds fio's
    ``--readonly``: fio then refuses any job that writes or trims."""
    return [
        *(wrap or []),
        fio or fio_binary(),
        "--output-format=json+",
        f"--output={output_path}",
        *(["--readonly"] if readonly else []),
        str(jobfile),
    ]


def run_fio(
    argv: list[str],
    jobfile: Path,
    output_path: Path,
    *,
    timeout_s: float | None = None,
    on_start=None,
    cwd: Path | None = None,
    cpus: list[int] | None = None,
) -> FioRun:
    """Run fio's ``argv`` (``fio_argv``: ``fio --output-format=json+ --output=OUTPUT
    [--readonly] JOBFILE``, perhaps under perf) with ``iolab.machine.process.run_pinned``.

    fio's raw output is left untouched in ``output_path`` (relative paths are relative to
    ``cwd``). Raises FioError carrying fio's message and exit code when fio fails (repeated
    lines collapsed, a known cause named: ``iolab.read.fio_failures``; its whole stderr kept as
    ``fio.stderr`` in ``cwd``), RunInterrupted when it was stopped by a signal or Ctrl-C (its partial output kept).
    """
    done = run_pinned(
        argv,
        name="fio",
        cwd=cwd,
        cpus=cpus,
        timeout_s=timeout_s,
        on_start=on_start,
        kept=f"its partial output, if any, is kept in {output_path}",
    )
    if done.returncode != 0:
        here = Path(cwd or ".")
        said = said_lines(_output_errors(here / output_path), done.stderr, done.stdout)
        if cwd is not None:  # a run folder: fio's stderr kept whole there (the message collapses it)
            write_atomic(here / STDERR, done.stderr)
        folder = here.with_name(here.name.removeprefix(".tmp-"))  # a run folder .tmp-<id> becomes <id> when finished
        words, cause = explain(said, _job_text(here / jobfile), "fix the cause fio names, or the job's options")
        kept = f"; fio's whole stderr: {folder / STDERR}" if cwd is not None else ""
        raise FioError(
            f"fio exited with code {done.returncode}: {words}; {cause} (the job file: {folder / jobfile}{kept})",
            done.returncode,
            done.stderr,
        )
    return FioRun(
        done.argv, Path(cwd or ".") / output_path, done.returncode, done.stdout, done.stderr, done.wall_s, done.pid
    )


STDERR = FIO_STDERR  # in a run folder: fio's stderr, whole


def _job_text(jobfile: Path) -> str:
    """The job file's text, or "" when it cannot be read; a finished run folder's path is
    tried in its unfinished form (``.tmp-<id>``) too: the error is raised before the rename."""
    jobfile = Path(jobfile)
    folder = jobfile.parent
    unfinished = [folder.with_name(".tmp-" + folder.name) / jobfile.name] if folder.name else []
    for path in (jobfile, *unfinished):
        try:
            return path.read_text(errors="replace")
        except OSError:
            continue
    return ""


# ---------------------------------------------------------------- after a run: did it fail?
def _output_errors(path: Path) -> list[str]:
    """Job errors (errno translated) in the fio JSON at ``path``, if it holds one; else []."""
    try:
        return job_errors(tidy(load_document(path)))
    except (OSError, FioOutputError, ValueError, KeyError, TypeError):
        return []


def read_output(path: str | os.PathLike, stderr: str = "", jobfile: str | os.PathLike = JOB_FIO) -> FioDocument:
    """The report of a fio run that exited 0; FioError with fio's words when it wrote none
    (fio exits 0 after refusing some options, e.g. a size smaller than one block)."""
    try:
        return load_document(path)
    except FioOutputError as exc:
        words, cause = explain(said_lines(stderr), _job_text(Path(jobfile)), "check the fio options (see `man fio`)")
        raise FioError(
            f"fio wrote no report: {words if stderr.strip() else exc}; {cause} (the job file: {jobfile})",
            0,
            stderr,
        ) from None


def raise_for_failure(doc: FioDocument, stderr: str = "", jobfile: str | os.PathLike = JOB_FIO) -> None:
    """FioError when a run that exited 0 failed: a job reports an error (errno, translated),
    or no job did any I/O — fio aborted, e.g. "appears mounted, and 'allow_mounted_write'
    isn't set. Aborting." with an empty job row. fio's own words are in the message."""
    frame = tidy(doc)
    said = said_lines(doc.text_before, doc.text_after, stderr)
    errors = job_errors(frame) if len(frame) else []
    if errors:
        words, cause = explain(errors + said, _job_text(Path(jobfile)), "fix the cause, or the job's options")
        raise FioError(f"fio reported job errors: {words}; {cause} (the job file: {jobfile})", 0, stderr)
    if not len(frame) or ((frame["total_ios"].fillna(0) == 0).all() and (frame["io_bytes"].fillna(0) == 0).all()):
        words, cause = explain(said, _job_text(Path(jobfile)), "fix what fio says, or the job's options")
        raise FioError(
            "fio did no I/O (it aborted the run): "
            + (words if said else "it said nothing and its report has no job that did I/O")
            + f"; {cause} (the job file: {jobfile})",
            0,
            stderr,
        )
