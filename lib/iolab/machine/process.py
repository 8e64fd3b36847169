"""Running a measurement tool (fio, t/io_uring, perf): pinned to CPUs from birth, in its own
process group, stopped by its own pid — never by name — and never outliving iolab.

    done = run_pinned(["fio", "job.fio"], name="fio", cpus=[0], on_start=sampler_start)
    done.returncode, done.stdout, done.stderr, done.wall_s

How a child cannot outlive iolab:

* it runs in its own session, so a Ctrl-C at the terminal reaches iolab only, which then
  stops the child with SIGINT (fio writes what it measured) and SIGKILL 10 s later;
* SIGTERM and SIGHUP unwind iolab the same way (``iolab.core.signals``);
* if iolab dies without unwinding (SIGKILL), the kernel sends the child SIGTERM
  (``PR_SET_PDEATHSIG``, set by ``setpriv --pdeathsig``; not when iolab died before setpriv
  set it), and the ledger entry lets the next iolab command stop what is left of its
  process group (``iolab.machine.ledger``, ``iolab.runs.repair``);
* its ledger entry is written before it starts, and signals are held back until its pid is
  recorded, so neither a Ctrl-C nor a SIGKILL can land in between and leave a child the
  ledger does not name (one that changes user or clears its environment, as sudo does,
  cannot be found by its token).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import signals
from ..core.errors import RunInterrupted, ToolMissing
from . import ledger

TOKEN = "IOLAB_PROCESS"  # in a started tool's environment: its ledger entry's token (``spawn``)


def token_of(pid: int) -> str | None:
    """The ledger token (``TOKEN``) in process ``pid``'s environment, or None (none, gone, or
    another user's)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    prefix = f"{TOKEN}=".encode()
    return next((item[len(prefix) :].decode(errors="replace") for item in environ if item.startswith(prefix)), None)


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


def _prefix() -> list[str]:
    """``setpriv --pdeathsig TERM --``: the child gets SIGTERM when the thread that started it
    dies (``PR_SET_PDEATHSIG``), set by a util-linux tool the child is exec'd through (the
    pid stays the tool's). Not Popen's ``preexec_fn``: the Python docs warn that it can
    deadlock while other threads run, and iolab's samplers are threads."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise ToolMissing("setpriv")  # iolab starts every tool through it
    return [setpriv, "--pdeathsig", "TERM", "--"]


@contextlib.contextmanager
def _born_on(cpus: list[int] | None):
    """Within the block, this thread runs on ``cpus`` only, so a child it starts is pinned
    from birth (the affinity mask is inherited at fork; Linux sets it per thread, so the
    other threads keep theirs); restored after. The same as ``taskset -c`` without an exec
    more per start, which costs tenths of a second in the NVMe lab's emulated guest."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _check_executable(exe: str, popen_kw: dict) -> None:
    """FileNotFoundError, as Popen raises it, when ``exe`` cannot be run (through setpriv it
    would otherwise start, and fail later with setpriv's words)."""
    if os.sep in exe:
        found = os.access(Path(popen_kw.get("cwd") or ".") / exe, os.X_OK)
    else:
        found = shutil.which(exe, path=(popen_kw.get("env") or os.environ).get("PATH")) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", exe)


def spawn(
    argv: list[str], *, name: str, cpus: list[int] | None = None, **popen_kw
) -> tuple[subprocess.Popen, ledger.Entry]:
    """Start ``argv`` as described in the module docstring. Returns the process and its
    ledger entry (release it once the process has been waited for).

    The entry is written before the process exists, with a random token the process
    carries in its environment (``TOKEN``; the processes it forks inherit it unless they
    rewrite their environment, as stress-ng's workers do: its process group is what is
    stopped): a SIGKILL
    between its start and the record of its pid, which nothing can hold back, still
    leaves an entry the next iolab command finds it by (``iolab.runs.repair``)."""
    proc = entry = None
    _check_executable(str(argv[0]), popen_kw)
    prefix = _prefix()
    token = secrets.token_hex(8)
    env = os.environ if popen_kw.get("env") is None else popen_kw["env"]
    popen_kw["env"] = {**env, TOKEN: token}
    try:
        with signals.deferred():
            entry = ledger.record(
                "process", token=token, name=name, argv=argv, undo=lambda: proc is not None and stop_group(proc)
            )
            with _born_on(cpus):
                proc = subprocess.Popen(prefix + list(map(str, argv)), start_new_session=True, **popen_kw)
            entry.update(pid=proc.pid, start=ledger.start_time(proc.pid))
    except BaseException:
        # the start or its record failed, or a Ctrl-C held back by deferred() is raised as
        # the block ends: the caller never gets the process, so it is stopped here (in a
        # Jupyter kernel that lives on, it would otherwise run to its end)
        if proc is not None:
            stop_group(proc)
        if entry is not None:
            entry.release()
        raise
    return proc, entry


def run_pinned(
    argv: list[str],
    *,
    name: str,
    cwd: Path | None = None,
    cpus: list[int] | None = None,
    timeout_s: float | None = None,
    on_start=None,
    merge_stderr: bool = False,
    kept: str = "",
) -> Finished:
    """Run ``argv`` to completion. ``cpus`` pins the whole process tree (as ``taskset -c``
    does in the seeds), so forked workers are born on the measured CPUs. ``on_start(pid)``
    is called once it runs. On Ctrl-C, SIGTERM, SIGHUP or timeout the group gets SIGINT
    (fio then writes what it measured), SIGKILL 10 s later; a run killed by a signal has
    its orphans killed too. All raise RunInterrupted; ``kept`` says where partial output is."""
    start = time.monotonic()
    with signals.held():
        proc, entry = spawn(
            argv,
            name=name,
            cpus=cpus,
            cwd=cwd,
            stdout=subprocess.PIPE,
            text=True,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        )
        try:
            if on_start:
                on_start(proc.pid)
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except (KeyboardInterrupt, subprocess.TimeoutExpired) as exc:
            stop_group(proc)
            why = (
                "timeout"
                if isinstance(exc, subprocess.TimeoutExpired)
                else exc.args[0]
                if isinstance(exc, signals.Terminated)
                else "interrupted"
            )
            raise RunInterrupted(
                f"{name} (pid {proc.pid}) was stopped before it finished ({why})" + (f"; {kept}" if kept else "")
            ) from exc
        except BaseException:
            stop_group(proc)
            raise
        finally:
            if proc.returncode is not None:
                entry.release()
    if proc.returncode < 0:
        signal_group(proc.pid, signal.SIGKILL)  # workers orphaned by the kill
        raise RunInterrupted(
            f"{name} (pid {proc.pid}) was killed by signal {-proc.returncode} "
            f"({signal.Signals(-proc.returncode).name})" + (f"; {kept}" if kept else "")
        )
    return Finished(argv, proc.returncode, stdout, stderr or "", time.monotonic() - start, proc.pid)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int, default_signals: bool = True) -> None:
    """Bind a forked worker (a process pool's, not exec'd) to ``parent_pid``, the process
    that forked it: the kernel sends it SIGKILL when that thread dies, even by SIGKILL
    (``prctl(PR_SET_PDEATHSIG)``, man 2 prctl); it exits at once when the parent died before
    that was set (``getppid`` is then another process); and, with ``default_signals``,
    SIGTERM and SIGHUP end it (the default action: iolab's handlers, inherited at fork, would
    raise inside a blocked queue write and leave it waiting forever for a reader that is
    gone). A worker that runs a notebook keeps iolab's handlers (they stop its kernel)."""
    import ctypes

    for sig in signals.CAUGHT if default_signals else ():
        signal.signal(sig, signal.SIG_DFL)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os._exit(1)


def stop_group(proc: subprocess.Popen, grace_s: float = 10) -> None:
    """SIGINT to the process group (fio writes its output), SIGKILL after ``grace_s``;
    waits, and keeps waiting through a second Ctrl-C."""
    signal_group(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    while True:
        try:
            proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            break
        except subprocess.TimeoutExpired:
            signal_group(proc.pid, signal.SIGKILL)
            deadline = time.monotonic() + grace_s
        except KeyboardInterrupt:  # a second Ctrl-C: stop at once, still reap
            signal_group(proc.pid, signal.SIGKILL)
    signal_group(proc.pid, signal.SIGKILL)  # job processes left by a dying fio
