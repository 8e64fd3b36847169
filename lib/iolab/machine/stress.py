"""Load on the CPUs a run does not use: seed 003's "unused CPUs stressed vs. idle".

    with stressed([1, 3]):     # stress-ng --cpu 2 --taskset 1,3, stopped by its pid on exit
        measure(...)

stress-ng runs pinned to exactly those CPUs, in its own process group, recorded in the
ledger before it can do anything (``iolab.machine.process.spawn``), so a Ctrl-C, SIGTERM or a
killed iolab never leaves it running: it is stopped by its own pid, never by name.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence

from ..core.errors import IolabError, ToolMissing
from .process import spawn, stop_group

STARTUP_S = 0.3  # how long stress-ng gets to fail on bad arguments before the run starts


def stress_argv(cpus: Sequence[int]) -> list[str]:
    """stress-ng with one CPU worker per CPU in ``cpus``, pinned to them, until stopped."""
    exe = shutil.which("stress-ng")
    if not exe:
        raise ToolMissing("stress-ng")
    # --temp-path: stress-ng refuses to start in a folder it cannot write (the NVMe lab's guest
    # runs notebooks in the checkout, shared read-only), even for CPU workers
    return [
        exe,
        "--cpu",
        str(len(cpus)),
        "--taskset",
        ",".join(str(c) for c in cpus),
        "--timeout",
        "0",
        "--temp-path",
        tempfile.gettempdir(),
        "--quiet",
    ]


@contextlib.contextmanager
def stressed(cpus: Sequence[int]) -> Iterator[int | None]:
    """stress-ng busy on every CPU in ``cpus`` for the ``with`` block (its pid; None and no
    stress-ng for an empty list). IolabError when stress-ng stops on its own at the start."""
    cpus = sorted(set(int(c) for c in cpus))
    if not cpus:
        yield None
        return
    proc, entry = spawn(
        stress_argv(cpus), name="stress-ng", cpus=cpus, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(STARTUP_S)
        if proc.poll() is not None:
            raise IolabError(
                f"stress-ng stopped at once (exit {proc.returncode}): {(proc.stderr.read() or '').strip()[-300:]}"
            )
        yield proc.pid
    finally:
        stop_group(proc, grace_s=5)
        entry.release()
