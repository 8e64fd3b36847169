"""The NVMe tier in one lab boot: the program ``python -m support.nvme_tier RESULT.json`` (run in
tests/, as pytest sees the folder), and its start in the background by pytest-xdist's controller.

The program boots the lab (``iolab.nvmelab.vm.run``), runs ``pytest -m nvme tests/test_nvme_tier.py``
inside the guest and writes what happened to RESULT.json
(whole, by rename): ``{"returncode", "said", "boot_s", "wall_s", "accel"}``, or ``{"skip": why}``
when QEMU cannot start here at all. ``tests/test_nvmelab.py`` calls ``tier()`` itself; under
pytest-xdist the controller starts the program in the background (``boot_in_background``, from
``tests/conftest.py``), so no worker sits idle for the two minutes of the boot: the test only
reads the result (``result_path``). It starts once the tests in ``QUIET_FIRST`` have ended (or
after ``QUIET_WAIT_S``), as the workers have collected the tier's test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIER_TEST = "tests/test_nvmelab.py::test_the_nvme_tier_in_one_guest_boot"
# Measured before the guest's load: the planted causes compare two sides' fio runs, and with the
# guest's host thread beside them "other programs on the measuring CPUs" outranked the planted
# read_ahead_kb (once in seven runs) or hid the gap (once). The guest boots once they have ended.
QUIET_FIRST = ("tests/test_explain.py::test_planted_causes_come_first",)
QUIET_WAIT_S = 120  # ... or after this long, whatever they do
_background: list = []  # the controller's background boot (a Popen)
_waiting: dict = {}  # the boot still to start: its result path, the tests it waits for, a timer
_once = threading.Lock()
ARGV = [
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-rfE",
    "--color=no",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:xdist",
    "-m",
    "nvme",
    "--durations=5",
    "tests/test_nvme_tier.py",
]
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the guest's pytest loads no plugin it does not use (TCG: seconds)


def spec():
    """The tier's guest: two controllers on the root bus, one behind root port rp2 capped at
    2.5 GT/s x1 (the preflight's planted faults), one under a pxb-pcie on NUMA node 1. Its vCPUs
    in one host thread (``tcg_thread="single"``), at the tests' niceness: beside the other tests
    it takes a quarter to a half less CPU time than a thread per vCPU, which spin while the host
    runs something else (benchmarks/README.md); niced 3 it was once starved into a failed
    plausibility check. QEMU runs in a session of its own, which the kernel's autogroup weighs
    as one group against the whole test session: in one thread it gets at most one CPU, and a
    whole one when it wants it. The load-sensitive tests run before it boots (``QUIET_FIRST``)."""
    from iolab.nvmelab.vm import LabSpec, Slot

    return LabSpec(
        controllers=4,
        namespace_size="32m",
        tcg_thread="single",
        slots=(None, None, Slot(speed=2.5, width=1), Slot(node=1)),
    )


def tier(lab=None) -> dict:
    """One boot of the lab running the tier (in ``lab``, a LabSpec; None: ``spec()``): its
    result as RESULT.json holds it."""
    from iolab.nvmelab import vm as nvmelab

    lines: list[str] = []
    try:
        result = nvmelab.run(ARGV, lab or spec(), cwd=REPO, env=ENV, out=lines.append)
    except nvmelab.QemuCannotStart as exc:
        return {"skip": str(exc)}
    return {
        "returncode": result.returncode,
        "said": "\n".join(lines),
        "boot_s": result.boot_s,
        "wall_s": result.wall_s,
        "accel": result.accel,
    }


def result_path(config) -> Path:
    """Where the controller's background boot writes its result (and, with the suffix
    .started, says it started): in the session's temporary folder, which the controller and
    every worker share."""
    base = config._tmp_path_factory.getbasetemp()
    return (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "nvme-tier.json"


def boot_in_background(config, collected) -> None:
    """On the controller, once a worker has collected the tier's test (``collected``: the
    node ids): start this program in the background once the ``QUIET_FIRST`` tests collected
    have ended (``test_ended``), or after ``QUIET_WAIT_S``. Only once, and only when the lab can
    run here at all (root, its tools). The tier's test waits for the result from now on."""
    if _background or _waiting or TIER_TEST not in collected or os.geteuid() != 0:
        return
    from iolab.nvmelab import image as nvmelab_image

    if nvmelab_image.missing_tools():
        return
    out = result_path(config)
    out.with_suffix(".started").write_text(str(os.getpid()))
    timer = threading.Timer(QUIET_WAIT_S, _boot)
    timer.daemon = True
    _waiting.update(out=out, tests={t for t in QUIET_FIRST if t in collected}, timer=timer)
    if _waiting["tests"]:
        timer.start()
    else:
        _boot()


def test_ended(nodeid: str) -> None:
    """On the controller, a test's teardown reported: the boot starts once the last of the
    ``QUIET_FIRST`` tests it waits for has ended."""
    tests = _waiting.get("tests")
    if tests and nodeid in tests:
        tests.discard(nodeid)
        if not tests:
            _boot()


def _boot() -> None:
    """Start the program, once; when it cannot start (from the timer's thread, where an
    exception reaches no one), its result says why, so the tier's test fails with it at once."""
    with _once:
        if _background or _waiting.get("stopped"):
            return
        _waiting["timer"].cancel()
        out = _waiting["out"]
        try:
            _background.append(
                subprocess.Popen(
                    [sys.executable, "-m", "support.nvme_tier", str(out)],
                    cwd=REPO / "tests",  # tests/ first on sys.path, not support/ (its modules would shadow others)
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        except OSError as exc:
            _write(out, {"error": f"the tier's background boot did not start: {exc}"})


def stop_background_boot() -> None:
    """The background boot stopped if the session ends before it (Ctrl-C, a failure with -x):
    SIGTERM unwinds it (the guest and its files go), SIGKILL after 60 s; one not started yet
    never starts."""
    with _once:
        _waiting["stopped"] = True
        if "timer" in _waiting:
            _waiting["timer"].cancel()
    for proc in _background:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main(out: str) -> int:
    from iolab.core import signals

    signals.raise_always()  # SIGTERM from the controller unwinds: the guest and its files go
    try:
        done = tier()
    except BaseException as exc:  # the test says what stopped the boot
        done = {"error": f"{type(exc).__name__}: {exc}"}
    _write(Path(out), done)
    return 0


def _write(out: Path, result: dict) -> None:
    """RESULT.json, whole (by rename): the tier's test reads it as soon as it exists."""
    tmp = Path(f"{out}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
