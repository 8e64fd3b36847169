"""Every way a process ends: real signals to real iolab processes running real fio.

SIGINT, SIGTERM and SIGHUP unwind (fio stopped by its pid, run folder marked, loop device
released, knob put back); SIGKILL leaves a ledger that the next iolab process repairs.
Each test gets its own ledger folder (IOLAB_STATE) so concurrent tests cannot repair
each other's leftovers.
"""

import contextlib
import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from iolab.core.signals import FORCE_EXIT_AFTER_S
from support.cpus import CPU
from support.fio import fio_running, wait_for_fio, wait_for_fio_job
from support.marks import needs_root
from support.nobody import run_as_nobody
from support.paths import PY, REPO
from support.sigint import sigint_default

RUN = """
import sys
from pathlib import Path
from iolab.measure.runner import measure
from iolab.machine.target import scratch_file
tmp = Path(sys.argv[1])
print("ready", flush=True)
measure({"rw": "randread", "ioengine": "psync", "runtime": "30s"}, scratch_file(tmp / "s", "16m"),
        cpus=[0], runs_dir=tmp / "runs")
""".replace("cpus=[0]", f"cpus=[{CPU}]")

HOLD = """
import sys, time
from pathlib import Path
from iolab.measure.runner import measure
from iolab.machine import knobs
from iolab.machine.target import loop_device
with loop_device("16m") as dev:
    with knobs.applied(dev, {"read_ahead_kb": 0}):
        print(dev.path, dev.notes[0].split("(")[1].rstrip(")"), flush=True)
        measure({"rw": "randread", "ioengine": "psync", "runtime": "30s"}, dev, cpus=[0],
                runs_dir=Path(sys.argv[1]) / "runs")
""".replace("cpus=[0]", f"cpus=[{CPU}]")


def env_for(tmp_path):
    return {**os.environ, "IOLAB_STATE": str(tmp_path / "state"), "PYTHONPATH": str(REPO / "lib")}


def start(script, tmp_path):
    return subprocess.Popen(
        [PY, "-c", textwrap.dedent(script), str(tmp_path)],
        stdout=subprocess.PIPE,
        preexec_fn=sigint_default,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(tmp_path),
    )


def runs_of(tmp_path):
    root = tmp_path / "runs"
    return sorted(root.iterdir()) if root.exists() else []


def running(pid):
    """Whether ``pid`` is alive (not gone, not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(folder, timeout=15):
    deadline = time.monotonic() + timeout
    while fio_running(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not fio_running(folder)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_stops_fio_and_marks_the_run(tmp_path, sig):
    proc = start(RUN, tmp_path)
    wait_for_fio_job(tmp_path, timeout=120)  # fio is measuring (a signal during its start-up leaves no report to keep)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert gone(tmp_path), "fio outlived iolab"
    runs = runs_of(tmp_path)
    assert len(runs) == 1 and not runs[0].name.startswith(".tmp-"), runs
    meta = json.loads((runs[0] / "run.json").read_text())
    assert meta["status"] == "interrupted"
    assert (runs[0] / "fio.json").stat().st_size > 0  # fio wrote what it measured
    ledger = tmp_path / "state" / "ledger"
    assert not list(ledger.glob("*.json")), "the ledger still lists what was released"


def test_sigkill_leaves_nothing_that_cleanup_cannot_repair(tmp_path):
    """SIGKILL: fio dies with its parent (PR_SET_PDEATHSIG); the hidden run folder is
    finished as interrupted by the next iolab process, which says what it did."""
    proc = start(RUN, tmp_path)
    wait_for_fio(tmp_path, timeout=120)  # a loaded machine may take long to start it
    proc.kill()
    proc.communicate(timeout=10)
    assert gone(tmp_path), "fio outlived a SIGKILLed iolab"
    assert [r.name.startswith(".tmp-") for r in runs_of(tmp_path)] == [True]
    done = subprocess.run(
        [PY, "-m", "iolab.cli", "cleanup"], capture_output=True, text=True, env=env_for(tmp_path), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "interrupted" in done.stdout and "died" in done.stdout
    runs = runs_of(tmp_path)
    assert len(runs) == 1 and not runs[0].name.startswith(".")
    assert json.loads((runs[0] / "run.json").read_text())["status"] == "interrupted"
    again = subprocess.run(
        [PY, "-m", "iolab.cli", "cleanup"], capture_output=True, text=True, env=env_for(tmp_path), timeout=60
    )
    assert "nothing" in again.stdout.lower()


def _loop_attached(device: str, backing: str | None = None) -> bool:
    """Whether ``device`` is attached (to ``backing``, when given: under pytest-xdist another
    test may attach the same /dev/loopN again as soon as it is free)."""
    from iolab.machine.target import loop_backing

    now = loop_backing(Path(device).name)
    return now is not None and (backing is None or os.path.realpath(now) == os.path.realpath(backing))


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_loop_device_and_knob_come_back(tmp_path, sig):
    """A library user's process holding a loop device with read_ahead_kb changed, running
    fio: SIGTERM unwinds everything at once; SIGKILL is repaired by `iolab cleanup`."""
    proc = start(HOLD, tmp_path)
    device, backing = proc.stdout.readline().split()
    ra = Path(f"/sys/block/{Path(device).name}/queue/read_ahead_kb")
    assert ra.read_text().strip() == "0"
    wait_for_fio(tmp_path, timeout=120)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert proc.returncode == -sig  # the signal still ends the process as its sender asked
    assert gone(tmp_path)
    if sig == signal.SIGKILL:
        assert _loop_attached(device, backing) and Path(backing).exists()
        done = subprocess.run(
            [PY, "-m", "iolab.cli", "cleanup"], capture_output=True, text=True, env=env_for(tmp_path), timeout=60
        )
        assert f"detached loop device {device}" in done.stdout, done.stdout + done.stderr
        assert "read_ahead_kb" in done.stdout
    assert not _loop_attached(device, backing) and not Path(backing).exists()
    if sig == signal.SIGKILL:
        return  # the knob went with the device; its restore was reported above
    assert [r.name.startswith(".") for r in runs_of(tmp_path)] == [False]


RUN_EACH_LINE = """
import sys
from pathlib import Path
from iolab.measure.runner import measure
from iolab.core.errors import IolabError, RunInterrupted
from iolab.machine.target import scratch_file
# one whole run first: every module the run path imports lazily is imported now (a Ctrl-C
# inside an import leaves a half-imported module behind in this process, a Python matter)
measure({"rw": "randread", "ioengine": "psync", "runtime": "300ms"}, scratch_file(Path(sys.argv[1]) / "s", "16m"),
        cpus=[0], runs_dir=Path(sys.argv[1]) / "warm")
for line in sys.stdin:
    tmp = Path(line.strip())
    try:
        print("ready", flush=True)
        measure({"rw": "randread", "ioengine": "psync", "runtime": "30s"}, scratch_file(tmp / "s", "16m"),
                cpus=[0], runs_dir=tmp / "runs")
    except (KeyboardInterrupt, RunInterrupted, IolabError) as exc:  # before fio started, while it ran,
        print("stopped", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "", flush=True)  # or
        # while it waited for its CPU
""".replace("cpus=[0]", f"cpus=[{CPU}]")


def test_ctrl_c_at_any_moment_leaves_no_fio(tmp_path):
    """Ctrl-C at odd moments right after the run starts (the window between starting fio
    and recording it): always an interrupted run and no fio left. One process takes every
    Ctrl-C in turn (its imports are paid once); the tests above end a process with one."""
    proc = subprocess.Popen(
        [PY, "-c", textwrap.dedent(RUN_EACH_LINE), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
        env=env_for(tmp_path),
    )
    try:
        for i, delay in enumerate([0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5]):
            sub = tmp_path / f"t{i}"
            sub.mkdir()
            proc.stdin.write(f"{sub}\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "ready"  # measure starts now
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            line = proc.stdout.readline().strip()
            assert line.startswith("stopped"), (
                f"Ctrl-C at +{delay}s: {line!r}; {proc.stderr.read() if not line else ''}"
            )
            assert gone(sub), f"fio outlived a Ctrl-C at +{delay}s ({line}): " + ", ".join(
                Path(f"/proc/{p}/stat").read_text()[:80] for p in fio_running(sub)
            )
            assert not any(r.name.startswith(".tmp-") for r in runs_of(sub))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.mark.parametrize("which", ["cpu", "threads"])
def test_ctrl_c_inside_a_samplers_start_leaves_it_stoppable(monkeypatch, which):
    """The window the timed Ctrl-Cs above can hit by chance: a signal inside the sampler's
    thread start. Its stop() still returns the samples taken, without a second traceback."""
    import threading

    from iolab.machine.sampling import Sampler
    from iolab.machine.threads import ThreadSampler

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    sampler = Sampler([0], interval_s=0.05) if which == "cpu" else ThreadSampler(interval_s=0.05)
    with pytest.raises(KeyboardInterrupt):
        sampler.start()
    assert sampler.started
    samples = sampler.stop()
    if which == "cpu":
        assert len(samples.stat) >= 2  # the opening and the closing sample


def test_second_measurement_on_a_busy_cpu_waits_or_is_refused(tmp_path, scratch, private_locks, monkeypatch):
    """Two measurements pinned to one CPU never overlap unknowingly: the second is refused
    (IOLAB_LOCK_WAIT_S=0) with the holder named, or waits for it."""
    from iolab.core.errors import BusyError
    from iolab.machine import locks
    from iolab.machine.locks import cpus_locked

    env = {**env_for(tmp_path), "IOLAB_LOCK_WAIT_S": "0"}
    with cpus_locked([0]):
        done = subprocess.run(
            [
                PY,
                "-m",
                "iolab.cli",
                "run",
                "--cpus",
                "0",
                "--runs-dir",
                str(tmp_path / "r"),
                "--scratch-dir",
                str(tmp_path / "s"),
                "--target-size",
                "8m",
                "--runtime=1",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 1
        assert f"CPU 0 is in use by pid {os.getpid()}" in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())
        with cpus_locked([0]):  # re-entrant within a process
            pass
    os.environ["IOLAB_LOCK_WAIT_S"] = "0"
    try:
        waiter = subprocess.Popen(
            [
                PY,
                "-c",
                "import sys\nfrom iolab.machine.locks import cpus_locked\n"
                "with cpus_locked([1]):\n    print('held', flush=True); sys.stdin.readline()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env_for(tmp_path),
        )
        assert waiter.stdout.readline().strip() == "held"
        with pytest.raises(BusyError, match="CPU 1 is in use"):
            with cpus_locked([0, 1]):
                pass
        waits = []

        class LetGo(locks.Waiting):  # the holder lets go once the wait is said, not after a fixed time
            def __init__(self, text):
                super().__init__(text)
                waits.append(text)
                waiter.stdin.write("done\n")
                waiter.stdin.flush()

        monkeypatch.setattr(locks, "Waiting", LetGo)
        with cpus_locked([0, 1], wait_s=20):  # waits for the holder to finish
            assert waiter.wait(timeout=10) == 0
        assert len(waits) == 1 and "CPU 1 is in use" in waits[0]
    finally:
        del os.environ["IOLAB_LOCK_WAIT_S"]
        waiter.stdin.close()
        waiter.wait()


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_killed_jupyter_kernel_releases_what_its_cells_hold(tmp_path, monkeypatch, sig):
    """Notebook style: a loop device and a knob entered by hand in one cell, held across
    cells; the kernel gets SIGTERM/SIGHUP while idle. Nothing is left behind."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    km, kc = start_new_kernel(kernel_name="python3")
    out = []
    try:
        kc.execute_interactive(
            textwrap.dedent("""
            from iolab.machine.target import loop_device
            from iolab.machine import knobs
            ctx = loop_device("16m"); dev = ctx.__enter__()
            knob = knobs.applied(dev, {"read_ahead_kb": 0}); knob.__enter__()
            print(dev.path, dev.notes[0].split("(")[1].rstrip(")"))
            """),
            timeout=60,
            output_hook=lambda m: out.append(m["content"].get("text", "")),
        )
        device, backing = "".join(out).split()
        assert _loop_attached(device, backing)
        os.kill(km.provisioner.pid, sig)
        deadline = time.monotonic() + FORCE_EXIT_AFTER_S + 15  # an idle kernel may swallow it first
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not km.is_alive()
        assert not _loop_attached(device, backing) and not Path(backing).exists()
        assert not list((tmp_path / "state" / "ledger").glob("*.json"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        # whatever happened above, leave nothing on the machine (this ledger lives in tmp_path)
        subprocess.run([PY, "-m", "iolab.cli", "cleanup"], env={**os.environ}, capture_output=True, timeout=60)


@needs_root
def test_a_kernel_that_swallows_sigterm_still_ends_and_releases(tmp_path, monkeypatch):
    """SIGTERM during a running cell becomes a KeyboardInterrupt that IPython shows and goes
    on from; the last resort ends the kernel anyway, with the loop device given back."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("IOLAB_FORCE_EXIT_S", "3")
    km, kc = start_new_kernel(kernel_name="python3")
    out = []
    try:
        kc.execute_interactive(
            "from iolab.machine.target import loop_device\nctx = loop_device('16m'); dev = ctx.__enter__()\n"
            "print(dev.path, dev.notes[0].split('(')[1].rstrip(')'))",
            timeout=60,
            output_hook=lambda m: out.append(m["content"].get("text", "")),
        )
        device, backing = "".join(out).split()
        kc.execute("import time; time.sleep(120)")
        time.sleep(1.5)
        os.kill(km.provisioner.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not km.is_alive() and not _loop_attached(device, backing)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        subprocess.run([PY, "-m", "iolab.cli", "cleanup"], env={**os.environ}, capture_output=True, timeout=60)


@needs_root
def test_a_second_user_sees_the_cpu_lock(tmp_path, private_locks):
    """User nobody and root share the per-CPU locks: nobody is refused while root holds
    CPU 1, and gets it once root lets go."""
    from iolab.machine.locks import cpus_locked

    argv = [
        "/usr/bin/python3",
        "-c",
        "from iolab.machine.locks import cpus_locked\nwith cpus_locked([1]): print('got CPU 1')",
    ]
    env = {**os.environ, "IOLAB_LOCK_WAIT_S": "0", "PYTHONPATH": str(REPO / "lib")}
    with cpus_locked([1]):
        busy = run_as_nobody(argv, env=env, capture_output=True, text=True, timeout=30)
    assert busy.returncode == 1 and f"CPU 1 is in use by pid {os.getpid()} (root" in busy.stderr
    free = run_as_nobody(argv, env=env, capture_output=True, text=True, timeout=30)
    assert free.returncode == 0 and "got CPU 1" in free.stdout, free.stderr


def test_a_ctrl_c_held_back_while_a_process_starts_stops_it(monkeypatch, own_ledger):
    """A Ctrl-C that arrives between starting a process and recording it is held back
    (signals.deferred) and raised as that block ends, before the caller has the process: the
    process is stopped there, not left to run while a Jupyter kernel lives on."""
    from iolab.machine import ledger, process
    from support.sigint import sigint_raises

    started = []
    real = ledger.Entry.update

    def update_then_ctrl_c(entry, **details):
        started.append(details["pid"])
        real(entry, **details)
        os.kill(os.getpid(), signal.SIGINT)  # held back until the block ends

    monkeypatch.setattr(ledger.Entry, "update", update_then_ctrl_c)
    with sigint_raises(), pytest.raises(KeyboardInterrupt):
        process.spawn(["sleep", "30"], name="sleep")
    (pid,) = started
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert not list(ledger.entries())  # and its ledger entry released


KILLED_BEFORE_ITS_PID = """
import os, signal, subprocess, time
from iolab.machine import ledger, process
def sigkill(entry, **details):  # iolab dies after the tool started, before its pid is recorded
    status = f"/proc/{details['pid']}/status"
    while not int(open(status).read().split("SigCgt:")[1].split()[0], 16) & 1 << signal.SIGTERM - 1:
        time.sleep(0.01)  # until the tool has its own SIGTERM handler
    print(details["pid"], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
ledger.Entry.update = sigkill
stubborn = "trap 'trap - TERM' TERM; while :; do sleep 0.05; done"  # outlives its first SIGTERM
process.spawn(["sh", "-c", stubborn], name="stubborn", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


def test_a_tool_started_just_before_a_sigkill_is_still_stopped(tmp_path, own_ledger):
    """SIGKILL cannot be held back: an iolab killed after a tool started and before its pid
    was recorded leaves an entry without a pid. The tool outlives it when its parent-death
    SIGTERM does not end it (fio hung in its signal handler, once in a suite; here a shell
    that takes the first SIGTERM), or when its parent died before ``setpriv`` set that
    signal; the next iolab command finds it by the token in its environment and stops it."""
    from iolab.machine import ledger
    from iolab.runs.repair import recover

    killed = subprocess.run(
        [PY, "-c", KILLED_BEFORE_ITS_PID], capture_output=True, text=True, timeout=30, env=env_for(tmp_path)
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    pid = int(killed.stdout)
    try:
        time.sleep(0.2)
        assert running(pid)  # it ignored the SIGTERM its parent's death sent
        assert [e.get("pid") for _, e in ledger.entries()] == [None]
        said = recover()
        assert any(line.startswith(f"stopped stubborn (pid {pid}) left running") for line in said), said
        assert not running(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


KILLED_BEFORE_ITS_START = """
import contextlib, os, signal
from iolab.machine import process
@contextlib.contextmanager
def sigkill(cpus):  # iolab dies after the entry is written, before the tool is started
    os.kill(os.getpid(), signal.SIGKILL)
    yield
process._born_on = sigkill
process.spawn(["sleep", "60"], name="never")
"""


def killed_pid(ledger) -> int:
    """The owner of the one ledger entry."""
    ((_, entry),) = ledger.entries()
    return entry["owner_pid"]


def test_an_entry_whose_tool_never_started_waits_then_says_so(tmp_path, own_ledger, monkeypatch):
    """Killed after its entry was written and before the tool was started: a repair at once
    keeps the entry and says so (a tool between fork and exec has no token in its environment yet), one
    after ``STARTING_S`` says in words that it was not found, and releases the entry."""
    from iolab.machine import ledger
    from iolab.runs import repair

    killed = subprocess.run(
        [PY, "-c", KILLED_BEFORE_ITS_START], capture_output=True, text=True, timeout=30, env=env_for(tmp_path)
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [e["name"] for _, e in ledger.entries()] == ["never"]
    assert [line for line in repair.recover() if "never" in line] == [
        f"never that iolab pid {killed_pid(ledger)} was starting as it died is not seen yet: looked for again "
        "at the next repair (`iolab cleanup`)"
    ]
    assert [e["name"] for _, e in ledger.entries()] == ["never"]  # kept for the next repair
    monkeypatch.setattr(repair, "STARTING_S", 0.0)
    assert "never was not found running (its iolab process died as it started it" in " ".join(repair.recover())
    assert not list(ledger.entries())


def test_a_child_is_pinned_and_bound_to_its_parent_without_preexec_fn():
    """spawn starts a tool through setpriv --pdeathsig, pinned by the affinity it inherits (no preexec_fn, which can
    deadlock while the samplers' threads run): the pid is the tool's, pinned from birth,
    with SIGTERM as its parent-death signal; a missing tool is FileNotFoundError, as before."""
    from iolab.machine.process import spawn, stop_group

    proc, entry = spawn(["sleep", "30"], name="sleep", cpus=[CPU])
    try:
        deadline = time.monotonic() + 10
        # until setpriv has exec'd sleep (its comm changes before its argument list is in place)
        while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"sleep\0") and time.monotonic() < deadline:
            time.sleep(0.01)
        status = Path(f"/proc/{proc.pid}/status").read_text()
        assert f"Cpus_allowed_list:\t{CPU}\n" in status
        assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"30"]
    finally:
        stop_group(proc)
        entry.release()
    with pytest.raises(FileNotFoundError):
        spawn(["no-such-tool-iolab"], name="x")
