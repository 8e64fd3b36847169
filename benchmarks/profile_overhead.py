"""What profiling costs the run it profiles (issue P11): IOPS of ``iolab.measure.runner.measure`` with
``perf record`` at 99 Hz (and perf stat) ÷ the same run without, on a CPU-bound target — a
tmpfs-backed loop device, fio pinned to one CPU — as interleaved pairs, which goes first
alternating. Then the same for every instrument together: perf record and stat, the
thread-state sampler and fio's interval logs. Goal: median ratio >= 0.97.

perf's own processes run on the CPUs the job does not use, with a ring buffer large enough
that they wake rarely (``iolab.machine.perf``). Needs root (loop device, perf).

    .venv/bin/python benchmarks/profile_overhead.py [--pairs 8] [--runtime 2] [--cpu 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from iolab.machine.perf import ProfileSpec  # noqa: E402
from iolab.machine.target import loop_device  # noqa: E402
from iolab.measure.runner import measure  # noqa: E402

GOAL = 0.97
os.environ.setdefault("IOLAB_HEADLESS", "1")  # no progress bars between the figures


def pairs(job, target, cpu: int, n: int, work: Path, **instruments) -> list[float]:
    ratios = []
    for i in range(n):
        got = {}
        for which in ("on", "off") if i % 2 == 0 else ("off", "on"):
            kw = instruments if which == "on" else {}
            got[which] = measure(job, target, cpus=[cpu], runs_dir=work / which, **kw).table.iops.sum()
        ratios.append(got["on"] / got["off"])
        print(
            f"  pair {i}: with {got['on']:10,.0f} IOPS  without {got['off']:10,.0f} IOPS  ratio {ratios[-1]:.3f}",
            flush=True,
        )
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--runtime", type=float, default=2.0)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    job = {
        "rw": "randread",
        "bs": "4k",
        "ioengine": "io_uring",
        "iodepth": 16,
        "direct": 1,
        "runtime": f"{args.runtime:g}s",
    }
    cases = {
        "perf record 99 Hz + perf stat": {"profile": ProfileSpec(freq_hz=99)},
        "every instrument together": {"profile": ProfileSpec(freq_hz=99), "threads": True, "log_ms": 500},
    }
    with tempfile.TemporaryDirectory() as tmp, loop_device("512m") as target:
        results = {}
        for name, kw in cases.items():
            print(f"{name}: {args.pairs} interleaved pairs, {args.runtime:g} s each, fio on CPU {args.cpu}")
            results[name] = pairs(job, target, args.cpu, args.pairs, Path(tmp) / name.split()[0], **kw)
    for name, ratios in results.items():
        median = statistics.median(ratios)
        print(
            f"{name}: IOPS with ÷ without = {median:.3f} median (pairs {min(ratios):.3f}-{max(ratios):.3f}); "
            f"goal >= {GOAL}: {'met' if median >= GOAL else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
