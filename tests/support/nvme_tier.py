"""The NVMe tier in one lab boot: the program ``python -m support.nvme_tier RESULT.json`` (run in
tests/, as pytest sees the folder), and its start in the background by pytest-xdist's controller.

The program boots the lab (``iolab.nvmelab.vm.run``), runs ``pytest -m nvme tests/test_nvme_tier.py``
inside the guest at niceness 3 (its scheduler group too) and writes what happened to RESULT.json
(whole, by rename): ``{"returncode", "said", "boot_s", "wall_s", "accel"}``, or ``{"skip": why}``
when QEMU cannot start here at all. ``tests/test_nvmelab.py`` calls ``tier()`` itself; under
pytest-xdist the controller starts the program as soon as the workers have collected the
tier's test (``boot_in_background``, from ``tests/conftest.py``), so no worker sits idle for the
two minutes of the boot: the test only reads the result (``result_path``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIER_TEST = "tests/test_nvmelab.py::test_the_nvme_tier_in_one_guest_boot"
_background: list = []  # the controller's background boot (a Popen)
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


def spec():
    """The tier's guest: two controllers on the root bus, one behind root port rp2 capped at
    2.5 GT/s x1 (the preflight's planted faults), one under a pxb-pcie on NUMA node 1. A host
    thread per vCPU (QEMU's default): in one (``tcg_thread="single"``) the guest took a quarter
    to a half less CPU time beside the other tests, but niced 3 it was once starved into a
    failed plausibility check, and at their niceness its load failed a measuring test twice in
    seven runs (benchmarks/README.md)."""
    from iolab.nvmelab.vm import LabSpec, Slot

    return LabSpec(
        controllers=4, namespace_size="32m", nice=3, slots=(None, None, Slot(speed=2.5, width=1), Slot(node=1))
    )


def tier() -> dict:
    """One boot of the lab running the tier: its result as RESULT.json holds it."""
    from iolab.nvmelab import vm as nvmelab

    lines: list[str] = []
    try:
        result = nvmelab.run(ARGV, spec(), cwd=REPO, out=lines.append)
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
    node ids): start this program in the background. Only once, and only when the lab can run
    here at all (root, its tools)."""
    if _background or TIER_TEST not in collected or os.geteuid() != 0:
        return
    from iolab.nvmelab import image as nvmelab_image

    if nvmelab_image.missing_tools():
        return
    out = result_path(config)
    out.with_suffix(".started").write_text(str(os.getpid()))
    _background.append(
        subprocess.Popen(
            [sys.executable, "-m", "support.nvme_tier", str(out)],
            cwd=REPO / "tests",  # tests/ first on sys.path, not support/ (its modules would shadow others)
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    )


def stop_background_boot() -> None:
    """The background boot stopped if the session ends before it (Ctrl-C, a failure with -x):
    SIGTERM unwinds it (the guest and its files go), SIGKILL after 60 s."""
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
    tmp = Path(f"{out}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(done))
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
