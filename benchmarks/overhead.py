"""Overhead of measuring through iolab: IOPS via ``iolab.measure.runner.measure`` (samplers on,
stored run) vs plain fio with the same job on the same CPU-bound target, as interleaved
A/B pairs in one process. Goal: ratio >= 0.99.

    .venv/bin/python benchmarks/overhead.py [--pairs 6] [--runtime 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from iolab.machine.fio import to_argv
from iolab.machine.target import scratch_file
from iolab.measure.runner import job_options, measure
from iolab.read.fiojson import find_json, tidy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--runtime", type=float, default=2.0)
    ap.add_argument("--cpu", type=int, default=0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-bench-"))
    target = scratch_file(work, "256m")
    job = {
        "rw": "randread",
        "bs": "4k",
        "ioengine": "io_uring",
        "iodepth": 16,
        "direct": 1,
        "runtime": f"{args.runtime}s",
    }
    plain_opts = job_options(job, target, [args.cpu])
    ratios, a_all, b_all = [], [], []
    for i in range(args.pairs):
        order = ("iolab", "plain") if i % 2 == 0 else ("plain", "iolab")
        got = {}
        for which in order:
            if which == "iolab":
                got[which] = measure(job, target, cpus=[args.cpu], runs_dir=work / "runs").table.iops.sum()
            else:
                out = subprocess.run(
                    to_argv({"name": "plain", **plain_opts}) + ["--output-format=json"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                got[which] = tidy(find_json(out)).iops.sum()
        a_all.append(got["iolab"]), b_all.append(got["plain"])
        ratios.append(got["iolab"] / got["plain"])
        print(f"pair {i}: iolab {got['iolab']:,.0f} IOPS  plain fio {got['plain']:,.0f} IOPS  ratio {ratios[-1]:.4f}")
    print(
        json.dumps(
            {
                "pairs": args.pairs,
                "runtime_s": args.runtime,
                "iolab_iops_median": statistics.median(a_all),
                "plain_iops_median": statistics.median(b_all),
                "ratio_median": round(statistics.median(ratios), 4),
                "ratio_mean": round(statistics.mean(ratios), 4),
                "goal": ">= 0.99",
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
