"""Cost of the thread-state sampler (``iolab.threads``): IOPS of the same run with and
without it (``measure(threads=True)`` vs ``measure()``, every other sampler on in both), as
interleaved rounds on a tmpfs-backed loop device (and a tmpfs file) with fio pinned to one CPU, and how many
passes over /proc per second it keeps up with. Goal: ratio >= 0.99 at the default interval.
Each round also runs the job a second time without the sampler, a control: the spread of
its ratio is how finely this machine can tell two runs apart (on a shared 2-CPU VM, far
more than 1 %). A round where a run saw other load or steal on fio's CPU (``noise_flag``)
is marked.

Two CPU-bound jobs, both 4 KiB random reads with fio pinned to CPU 0:

* ``direct`` — io_uring QD16 with O_DIRECT on a tmpfs-backed loop device: fio's CPU is
  busy submitting and completing, and the loop device's kernel workers do the copying on
  the other CPU, the one the sampler runs on;
* ``tmpfs`` — buffered psync reads of a file in /dev/shm: fio itself is 100 % busy on its
  CPU copying pages. (Buffered reads of the loop device would depend on its page cache,
  which any other test's ``drop_caches`` empties mid-benchmark on a shared machine; tmpfs
  pages cannot be dropped.)

    .venv/bin/python benchmarks/threads_overhead.py [--pairs 12] [--runtime 2] [--interval 0.05]

It prints per job the median ratio with its spread and a distribution-free 95 % interval
of the median, the control beside it, the sampler's cost (ms a tick, ticks a second, late
and skipped ticks) and whether the goal is met.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from iolab.fio import fio_time
from iolab.runner import measure
from iolab.target import loop_device, scratch_file
from iolab.threads import DEFAULT_INTERVAL_S, ThreadSampler
from iolab.threadstates import load

GOAL = 0.99
JOBS = {"direct": {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "iodepth": 16, "direct": 1},
        "tmpfs": {"rw": "randread", "bs": "4k", "ioengine": "psync", "direct": 0}}


def _median_ci(values: list[float], level: float = 0.95) -> list[float]:
    """A distribution-free confidence interval of the median: the order statistics k and
    n+1-k with k the largest rank whose binomial coverage is still >= ``level``."""
    xs, n = sorted(values), len(values)
    lo = 0
    for k in range(1, n // 2 + 1):  # coverage of [x_(k), x_(n+1-k)] = P(k <= Binomial(n, 1/2) <= n-k)
        if sum(math.comb(n, i) for i in range(k, n - k + 1)) / 2 ** n >= level:
            lo = k
    return [round(xs[lo - 1], 4), round(xs[n - lo], 4)] if lo else [round(xs[0], 4), round(xs[-1], 4)]


def _spread(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return {"median": round(statistics.median(values), 4), "mean": round(statistics.mean(values), 4),
            "iqr": [round(q[0], 4), round(q[2], 4)], "range": [round(min(values), 4), round(max(values), 4)],
            "median_ci95": _median_ci(values)}


def pairs(job: dict, target, args, work: Path) -> dict:
    """Interleaved rounds of three runs — with the sampler, without, and without again (the
    control: how far two identical runs differ here) — in a rotating order; per round the
    ratio with/without and the control's ratio without/without."""
    ratios, controls, on_all, off_all, cost, noisy = [], [], [], [], [], 0
    arms = ("with", "without", "control")
    for i in range(args.pairs):
        got, noise = {}, []
        for arm in arms[i % 3:] + arms[:i % 3]:
            threads = arm == "with"
            run = measure({**job, "runtime": fio_time(args.runtime)}, target, cpus=[args.cpu], runs_dir=work / "runs",
                          threads=threads, threads_interval_s=args.interval, label=f"threads-{arm}")
            got[arm] = float(run.table.iops.sum())
            flag = run.table.noise_flag.iloc[0]
            noise += [f"{arm}: {flag}"] if flag else []
            if threads:
                meta = load(run.path).meta
                cost.append((meta["sampler_cpu_s"] / max(1, meta["ticks"]), meta["ticks_per_s"] or 0.0,
                             meta["late_ticks"], meta["skipped_ticks"], meta["sampler_cpus"], meta["sampler_policy"]))
        on_all.append(got["with"]), off_all.append(got["without"])
        ratios.append(got["with"] / got["without"])
        controls.append(got["control"] / got["without"])
        noisy += bool(noise)
        print(f"  round {i}: with {got['with']:,.0f}  without {got['without']:,.0f}  control {got['control']:,.0f} "
              f"IOPS  ratio {ratios[-1]:.4f}  control ratio {controls[-1]:.4f}"
              + (f"  (noisy: {'; '.join(noise)})" if noise else ""), flush=True)
    ratio, control = _spread(ratios), _spread(controls)
    return {"ratio": ratio, "control_ratio": control, "noisy_rounds": noisy,
            "goal_met": ratio["median"] >= GOAL,
            "ratio_of_medians": round(statistics.median(on_all) / statistics.median(off_all), 4),
            "iops_with_median": round(statistics.median(on_all)),
            "iops_without_median": round(statistics.median(off_all)),
            "sampler_ms_per_tick": round(1e3 * statistics.median(c[0] for c in cost), 3),
            "sampler_cpu_pct": round(100 * statistics.median(c[0] * c[1] for c in cost), 2),
            "ticks_per_s": round(statistics.median(c[1] for c in cost), 1),
            "ticks_per_s_min": round(min(c[1] for c in cost), 1),
            "late_ticks_max": max(c[2] for c in cost), "skipped_ticks_max": max(c[3] for c in cost),
            "sampler_cpus": cost[0][4], "sampler_policy": cost[0][5]}


def verdict(name: str, got: dict) -> str:
    """One line: the ratio, its control, and whether the goal is met (and whether this
    machine's control spread lets one be sure of it)."""
    r, c = got["ratio"], got["control_ratio"]
    sure = ("the median's 95 % interval clears it" if r["median_ci95"][0] >= GOAL else
            "the median's 95 % interval reaches below it" if got["goal_met"] else
            "the median's 95 % interval reaches above it" if r["median_ci95"][1] >= GOAL else "clearly not")
    return (f"{name}: IOPS with/without {r['median']:.4f} median (IQR {r['iqr'][0]:.4f}-{r['iqr'][1]:.4f}, 95 % CI "
            f"{r['median_ci95'][0]:.4f}-{r['median_ci95'][1]:.4f}), control without/without {c['median']:.4f} "
            f"(IQR {c['iqr'][0]:.4f}-{c['iqr'][1]:.4f}); sampler {got['sampler_ms_per_tick']:.3f} ms a tick, "
            f"{got['ticks_per_s']:.1f} ticks/s (min {got['ticks_per_s_min']:.1f}, late <= {got['late_ticks_max']}, "
            f"skipped <= {got['skipped_ticks_max']}); goal >= {GOAL}: {'MET' if got['goal_met'] else 'NOT MET'} ({sure})")


def keeps_up(seconds: float = 1.0) -> dict:
    """Passes over /proc per second with no pause between them (interval 0), R and D kept."""
    sampler = ThreadSampler(interval_s=0).start()
    time.sleep(seconds)
    meta = sampler.stop().meta
    return {"max_ticks_per_s": round(meta["ticks"] / meta["window_s"]),
            "threads_read_per_s": round(meta["threads_read"] / meta["window_s"]),
            "threads_per_tick": round(meta["threads_read"] / max(1, meta["ticks"]))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=12, help="rounds of (with, without, control)")
    ap.add_argument("--runtime", type=float, default=2.0)
    ap.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--jobs", default="direct,tmpfs", help="comma-separated among " + ",".join(JOBS))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-bench-threads-"))
    out = {"interval_s": args.interval, "pairs": args.pairs, "runtime_s": args.runtime, "goal": f">= {GOAL}"}
    shm = Path(tempfile.mkdtemp(prefix="iolab-bench-threads-", dir="/dev/shm"))
    try:
        with loop_device("256m") as loop:
            for name in args.jobs.split(","):
                target = loop if name == "direct" else scratch_file(shm, "256m")
                print(f"{name}: {JOBS[name]} on {target.describe()}", flush=True)
                measure({**JOBS[name], "runtime": "1s"}, target, cpus=[args.cpu], runs_dir=work / "warmup")
                out[name] = pairs(JOBS[name], target, args, work)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    out["keeps_up"] = keeps_up()
    print(json.dumps(out, indent=1))
    for name in args.jobs.split(","):
        print(verdict(name, out[name]))


if __name__ == "__main__":
    main()
