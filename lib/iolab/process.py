"""Running a measurement tool (fio, t/io_uring): pinned to CPUs from birth, in its own
process group, and stopped by its own pid — never by name.

    done = run_pinned(["fio", "job.fio"], name="fio", cpus=[0], on_start=sampler_start)
    done.returncode, done.stdout, done.stderr, done.wall_s
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import RunInterrupted


@dataclass
class Finished:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    pid: int


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def run_pinned(argv: list[str], *, name: str, cwd: Path | None = None, cpus: list[int] | None = None,
               timeout_s: float | None = None, on_start=None, merge_stderr: bool = False,
               kept: str = "") -> Finished:
    """Run ``argv`` to completion. ``cpus`` pins the whole process tree (as ``taskset -c``
    does in the seeds), so forked workers are born on the measured CPUs. ``on_start(pid)``
    is called once it runs. On Ctrl-C or timeout the group gets SIGINT (fio then writes what
    it measured), SIGKILL 10 s later; a run killed by a signal has its orphans killed too.
    Both raise RunInterrupted; ``kept`` says where partial output is."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, text=True,
                            cwd=cwd, start_new_session=True,
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    if on_start:
        on_start(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except (KeyboardInterrupt, subprocess.TimeoutExpired) as exc:
        signal_group(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            signal_group(proc.pid, signal.SIGKILL)
            proc.communicate()
        why = "timeout" if isinstance(exc, subprocess.TimeoutExpired) else "interrupted"
        raise RunInterrupted(f"{name} (pid {proc.pid}) was stopped before it finished ({why})"
                             + (f"; {kept}" if kept else "")) from exc
    if proc.returncode < 0:
        signal_group(proc.pid, signal.SIGKILL)  # workers orphaned by the kill
        raise RunInterrupted(f"{name} (pid {proc.pid}) was killed by signal {-proc.returncode} "
                             f"({signal.Signals(-proc.returncode).name})" + (f"; {kept}" if kept else ""))
    return Finished(argv, proc.returncode, stdout, stderr or "", time.monotonic() - start, proc.pid)
