"""The NVMe tier in one lab boot, as a program: ``python tests/nvme_tier_boot.py RESULT.json``.

Boots the lab (``iolab.nvmelab.vm.run``), runs ``pytest -m nvme tests/test_nvme_tier.py``
inside the guest at niceness 10 (its scheduler group too) and writes what happened to RESULT.json (whole, by rename):
``{"returncode", "said", "boot_s", "wall_s", "accel"}``, or ``{"skip": why}`` when QEMU
cannot start here at all. ``tests/test_nvmelab.py`` calls ``tier()`` itself; under
pytest-xdist the controller starts this program as soon as the workers have collected the
tier's test (``tests/conftest.py``), so no worker sits idle for the two minutes of the boot:
the test only reads the result."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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
    2.5 GT/s x1 (the preflight's planted faults), one under a pxb-pcie on NUMA node 1."""
    from iolab.nvmelab.vm import LabSpec, Slot

    return LabSpec(
        controllers=4, namespace_size="32m", nice=10, slots=(None, None, Slot(speed=2.5, width=1), Slot(node=1))
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
