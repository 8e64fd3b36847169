"""Cost of the thread-state sampler (``iolab.machine.threads``): fio's IOPS with and without it,
side by side within one fio run, and how many passes over /proc a second it keeps up with.
Goal: ratio >= 0.99 at the default interval on a CPU-bound target.

Why within one run: on a shared 2-CPU VM two identical 2 s runs differ by 5-10 % (where
the kernel's workers land, the host's neighbours), far more than the 1 % to be judged. So
each job is one long fio run, pinned to ``--cpu``, that logs its IOPS every 100 ms, while a
process running ``ThreadSampler`` (exactly as ``iolab run --threads`` starts it: off fio's
CPU, at ``SCHED_IDLE``, fio's pid as the workload) is let run (SIGCONT) or frozen
(SIGSTOP) window by window. Windows come in blocks of four in a rotating order — sampler
on, off, off again (the control), and a "spin" window. Each block gives the sampler's
ratio on/off, with the mean of its two off windows as "off" (the goal's figure); the same
for the spin; and control/off, two identical windows.

* The control's spread is this machine's resolution; its median should be 1.
* The spin window runs a process that does nothing but burn ``--spin-ms`` of CPU every
  interval on the sampler's CPU, at the sampler's priority (default: what a tick costs
  beside a run here, 1 ms): what the same CPU time costs fio with no /proc read at all. On
  a VM whose two vCPUs share a physical core, any work on the other vCPU slows fio; when
  spin/off is as low as on/off, the sampler costs what its CPU time costs, nothing more.

Three 4 KiB random-read jobs:

* ``buffered`` — io_uring QD16, buffered, on a tmpfs-backed loop device whose page cache is
  warm: reads complete inline, fio's CPU is the limit (CPU-bound: the goal applies);
* ``tmpfs`` — psync reads of a file in /dev/shm: fio copies pages at 100 % of its CPU
  (CPU-bound: the goal applies);
* ``direct`` — io_uring QD16 with O_DIRECT on the loop device: not CPU-bound but a
  two-CPU pipeline (fio waits for completions about a fifth of the time while the loop
  device's kernel workers copy on the other CPU, the only one the sampler can use on a
  2-CPU machine). Printed for what it shows; the goal is judged on the CPU-bound jobs.

Each job's fio CPU use (usr + sys, from fio's own report) is printed, so whether it was
CPU-bound is measured, not assumed.

    .venv/bin/python benchmarks/threads_overhead.py [--runtime 200] [--spin-ms 1] [--window 0.5] [--interval 0.05]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iolab.machine.target import loop_device
from iolab.machine.threads import DEFAULT_INTERVAL_S, ThreadSampler

GOAL = 0.99
CPU_BOUND = 95.0  # fio's usr + sys % of its one CPU at or above which a job counts as CPU-bound
LOG_MS = 100  # fio's IOPS log: one average every LOG_MS
GUARD_MS = 50  # after a switch, what is left out of a window (the sampler catching up, the log's edges)
JOBS = {
    "buffered": ["--ioengine=io_uring", "--iodepth=16", "--direct=0"],
    "tmpfs": ["--ioengine=psync", "--direct=0"],
    "direct": ["--ioengine=io_uring", "--iodepth=16", "--direct=1"],
}
SPIN = """
import os, sys, threading, time
from iolab.machine.threads import lower_priority
others = os.sched_getaffinity(0) - {int(sys.argv[1])}
os.sched_setaffinity(0, others or os.sched_getaffinity(0))
lower_priority()  # the sampler's priority; the spinning thread started below inherits it
interval, burn = float(sys.argv[2]), float(sys.argv[3]) / 1e3
print("ready", flush=True)
stop = threading.Event()
def spin():
    while not stop.is_set():
        t = time.perf_counter()
        while time.perf_counter() - t < burn:
            pass
        stop.wait(interval - burn)
threading.Thread(target=spin, daemon=True).start()
sys.stdin.read()
"""
SAMPLER = """
import json, sys
from iolab.machine.threads import ThreadSampler
cpu, interval, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
sampler = ThreadSampler(avoid_cpus=[cpu], interval_s=interval).start(pid)
print("ready", flush=True)
sys.stdin.read()
meta = sampler.stop().meta
print(json.dumps({k: meta[k] for k in ("ticks", "late_ticks", "skipped_ticks", "sampler_cpu_s", "sampler_cpus",
                                       "sampler_policy", "threads_read", "unreadable")}))
"""


def _median_ci(values: list[float], level: float = 0.95) -> list[float]:
    """A distribution-free confidence interval of the median: the order statistics k and
    n+1-k with k the largest rank whose binomial coverage is still >= ``level``."""
    xs, n = sorted(values), len(values)
    lo = 0
    for k in range(1, n // 2 + 1):  # coverage of [x_(k), x_(n+1-k)] = P(k <= Binomial(n, 1/2) <= n-k)
        if sum(math.comb(n, i) for i in range(k, n - k + 1)) / 2**n >= level:
            lo = k
    return [round(xs[lo - 1], 4), round(xs[n - lo], 4)] if lo else [round(xs[0], 4), round(xs[-1], 4)]


def _spread(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return {
        "median": round(statistics.median(values), 4),
        "mean": round(statistics.mean(values), 4),
        "iqr": [round(q[0], 4), round(q[2], 4)],
        "n": len(values),
        "median_ci95": _median_ci(values),
    }


def _window_iops(log: list[tuple[int, float]], start_ms: float, end_ms: float) -> float | None:
    """Mean IOPS of the log entries wholly inside [start + GUARD_MS, end] (an entry at t
    averages (t - LOG_MS, t])."""
    got = [v for t, v in log if t - LOG_MS >= start_ms + GUARD_MS and t <= end_ms]
    return statistics.mean(got) if got else None


def _helper(code: str, *argv) -> subprocess.Popen:
    """A helper process (the sampler, the spin) started, ready, then frozen."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *map(str, argv)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    proc.stdout.readline()
    os.kill(proc.pid, signal.SIGSTOP)
    return proc


def run_job(name: str, filename: str, args, work: Path) -> dict:
    """One fio run of ``args.runtime`` s with the sampler and the spin switched on and off
    window by window (module docstring); the ratios per block of four windows."""
    logbase = work / name
    fio = subprocess.Popen(
        [
            "fio",
            f"--name={name}",
            f"--filename={filename}",
            "--rw=randread",
            "--bs=4k",
            *JOBS[name],
            "--time_based",
            f"--runtime={args.runtime}s",
            f"--cpus_allowed={args.cpu}",
            f"--write_iops_log={logbase}",
            f"--log_avg_msec={LOG_MS}",
            "--log_unix_epoch=1",
            "--output-format=json",
            f"--output={work / (name + '.json')}",
        ]
    )
    helpers = {
        "on": _helper(SAMPLER, args.cpu, args.interval, fio.pid),
        "spin": _helper(SPIN, args.cpu, args.interval, args.spin_ms),
    }
    try:
        time.sleep(1.0)  # fio's start-up and first IOs left out
        arms, marks, on_s = ("on", "off", "control", "spin"), [], 0.0
        end = time.time() + args.runtime - 2.0
        block = 0
        while time.time() + len(arms) * args.window < end:
            for arm in arms[block % 4 :] + arms[: block % 4]:
                running = helpers.get(arm)
                if running:
                    os.kill(running.pid, signal.SIGCONT)
                t0 = time.time()
                time.sleep(args.window)
                if running:
                    os.kill(running.pid, signal.SIGSTOP)
                marks.append((block, arm, t0 * 1e3, time.time() * 1e3))
                on_s += (time.time() - t0) if arm == "on" else 0.0
            block += 1
    finally:
        for proc in helpers.values():
            os.kill(proc.pid, signal.SIGCONT)
        meta = json.loads(helpers["on"].communicate("", timeout=60)[0].splitlines()[-1])
        helpers["spin"].communicate("", timeout=60)
        fio.wait()
    report = json.loads((work / (name + ".json")).read_text())["jobs"][0]
    log = [(int(f[0]), float(f[1])) for f in (line.split(",") for line in Path(f"{logbase}_iops.1.log").open())]
    windows: dict[int, dict[str, float]] = {}
    for b, arm, start, stop in marks:
        value = _window_iops(log, start, stop)
        if value:
            windows.setdefault(b, {})[arm] = value
    full = [w for w in windows.values() if len(w) == len(arms)]
    ratios = {arm: [2 * w[arm] / (w["off"] + w["control"]) for w in full] for arm in ("on", "spin")}
    ratios["control"] = [w["control"] / w["off"] for w in full]
    fio_cpu = report["usr_cpu"] + report["sys_cpu"]
    return {
        "ratio": _spread(ratios["on"]),
        "control_ratio": _spread(ratios["control"]),
        "spin_ratio": _spread(ratios["spin"]),
        "spin_ms": args.spin_ms,
        "ratio_of_means": round(2 * sum(w["on"] for w in full) / sum(w["off"] + w["control"] for w in full), 4),
        "iops_on_mean": round(statistics.mean(w["on"] for w in full)),
        "iops_off_mean": round(statistics.mean((w["off"] + w["control"]) / 2 for w in full)),
        "fio_cpu_pct": round(fio_cpu, 1),
        "cpu_bound": fio_cpu >= CPU_BOUND,
        "goal_met": statistics.median(ratios["on"]) >= GOAL,
        "sampler_ms_per_tick": round(1e3 * meta["sampler_cpu_s"] / max(1, meta["ticks"]), 3),
        "sampler_cpu_pct": round(100 * meta["sampler_cpu_s"] / on_s, 2),
        "ticks_per_s": round(meta["ticks"] / on_s, 1),
        "ticks_per_s_goal": round(1 / args.interval, 1),
        "late_ticks": meta["late_ticks"],
        "skipped_ticks": meta["skipped_ticks"],
        "threads_per_tick": round(meta["threads_read"] / max(1, meta["ticks"])),
        "unreadable": meta["unreadable"],
        "sampler_cpus": meta["sampler_cpus"],
        "sampler_policy": meta["sampler_policy"],
    }


def verdict(name: str, got: dict) -> str:
    """One line: the ratio, its control, whether the job was CPU-bound, and whether the goal
    is met (and whether the median's interval lets one be sure of it)."""
    r, c, sp = got["ratio"], got["control_ratio"], got["spin_ratio"]
    sure = (
        "the median's 95 % interval clears it"
        if r["median_ci95"][0] >= GOAL
        else "the median's 95 % interval reaches below it"
        if got["goal_met"]
        else "the median's 95 % interval reaches above it"
        if r["median_ci95"][1] >= GOAL
        else "clearly not"
    )
    bound = (
        f"CPU-bound (fio {got['fio_cpu_pct']:.0f} % of its CPU)"
        if got["cpu_bound"]
        else f"not CPU-bound (fio {got['fio_cpu_pct']:.0f} % of its CPU): goal not judged here"
    )
    judged = f"{'MET' if got['goal_met'] else 'NOT MET'} ({sure})" if got["cpu_bound"] else "-"
    return (
        f"{name}: {bound}; IOPS on/off {r['median']:.4f} median of {r['n']} blocks (IQR {r['iqr'][0]:.4f}-"
        f"{r['iqr'][1]:.4f}, 95 % CI {r['median_ci95'][0]:.4f}-{r['median_ci95'][1]:.4f}), control off/off "
        f"{c['median']:.4f} (95 % CI {c['median_ci95'][0]:.4f}-{c['median_ci95'][1]:.4f}), spin {got['spin_ms']:g} ms a "
        f"tick/off {sp['median']:.4f} (95 % CI {sp['median_ci95'][0]:.4f}-{sp['median_ci95'][1]:.4f}); sampler "
        f"{got['sampler_ms_per_tick']:.3f} ms a tick ({got['sampler_cpu_pct']:.1f} % of CPU {got['sampler_cpus']}, "
        f"{got['sampler_policy']}), {got['ticks_per_s']:.1f} of {got['ticks_per_s_goal']:.0f} ticks/s, "
        f"{got['threads_per_tick']} threads a tick; goal >= {GOAL}: {judged}"
    )


def keeps_up(seconds: float = 1.0) -> dict:
    """Passes over /proc per second with no pause between them (interval 0), R and D kept."""
    sampler = ThreadSampler(interval_s=0).start()
    time.sleep(seconds)
    meta = sampler.stop().meta
    return {
        "max_ticks_per_s": round(meta["ticks"] / meta["window_s"]),
        "threads_read_per_s": round(meta["threads_read"] / meta["window_s"]),
        "threads_per_tick": round(meta["threads_read"] / max(1, meta["ticks"])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", type=int, default=200, help="seconds of each job's one fio run")
    ap.add_argument("--window", type=float, default=0.5, help="seconds the sampler is on (or off) at a time")
    ap.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S, help="the sampler's interval, seconds")
    ap.add_argument(
        "--spin-ms",
        type=float,
        default=1.0,
        help="CPU ms the spin window burns each interval (what a tick costs beside a run)",
    )
    ap.add_argument("--cpu", type=int, default=0, help="fio's CPU (the sampler goes on another)")
    ap.add_argument("--jobs", default=",".join(JOBS), help="comma-separated among " + ",".join(JOBS))
    args = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio is not installed: run `make demo` or `make test` once (they install it)")
    work = Path(tempfile.mkdtemp(prefix="iolab-bench-threads-"))
    shm = Path(tempfile.mkdtemp(prefix="iolab-bench-threads-", dir="/dev/shm"))
    out = {
        "interval_s": args.interval,
        "runtime_s": args.runtime,
        "window_s": args.window,
        "spin_ms": args.spin_ms,
        "goal": f">= {GOAL}",
    }
    names = [n.strip() for n in args.jobs.split(",")]
    try:
        with loop_device("256m") as loop:
            tmpfs_file = shm / "tmpfs.dat"
            tmpfs_file.write_bytes(os.urandom(256 << 20))
            for name in names:
                filename = str(tmpfs_file) if name == "tmpfs" else loop.path
                subprocess.run(
                    [
                        "fio",
                        "--name=warm",
                        f"--filename={filename}",
                        "--rw=read",
                        "--bs=1m",
                        "--direct=0",
                        "--output=/dev/null",
                    ],
                    check=True,
                )  # the page cache filled: buffered reads hit it
                print(f"{name}: 4k randread {' '.join(JOBS[name])} on {filename}, {args.runtime} s ...", flush=True)
                out[name] = run_job(name, filename, args, work)
                print("  " + verdict(name, out[name]), flush=True)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    out["keeps_up"] = keeps_up()
    print(json.dumps(out, indent=1))
    for name in names:
        print(verdict(name, out[name]))
    judged = [out[n] for n in names if out[n]["cpu_bound"]]
    print(
        f"goal >= {GOAL} on the CPU-bound jobs: "
        + ("MET" if judged and all(g["goal_met"] for g in judged) else "NOT MET" if judged else "no CPU-bound job ran")
    )


if __name__ == "__main__":
    main()
