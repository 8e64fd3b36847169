"""What a run over N local fio servers costs against one plain fio run (issue P10).

Side by side, interleaved in rounds (this VM is noisy), the same 2 s psync random-read job on
a scratch file:

* ``fio job.fio`` — plain fio, one process;
* ``fio --client=hosts.list job.fio`` over 1 and 2 local servers (network namespaces when
  root may make them, else loopback ports) — fio's client/server mode alone;
* ``iolab.measure.runner.measure`` and ``iolab.measure.clients.measure_hosts`` over 1 and 2 servers — with
  iolab's checks, snapshots and run folders.

Prints the median wall time of each (and its extra seconds over plain fio) and the IOPS per
host and in total, with the range over the rounds.

    .venv/bin/python benchmarks/hosts_cost.py [--rounds 5] [--runtime 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from iolab.machine import hosts as hostlib  # noqa: E402
from iolab.machine.fio import fio_binary, to_jobfile  # noqa: E402
from iolab.machine.target import scratch_file  # noqa: E402
from iolab.measure.clients import measure_hosts  # noqa: E402
from iolab.measure.runner import measure  # noqa: E402
from iolab.read.fiojson import parse_output  # noqa: E402


def raw_fio(work: Path, job: Path, hosts: list[hostlib.Host] | None) -> tuple[float, list[float]]:
    out = work / "out.json"
    argv = [fio_binary(), "--output-format=json+", f"--output={out}"]
    if hosts:
        (work / "hosts.list").write_text("".join(f"{h.fio_line}\n" for h in hosts))
        argv.append(f"--client={work / 'hosts.list'}")
    start = time.monotonic()
    subprocess.run([*argv, str(job)], check=True, capture_output=True)
    wall = time.monotonic() - start
    rows = parse_output(out)
    rows = rows[rows["job"] != "All clients"]
    return wall, list(rows["iops"])


def via_iolab(work: Path, options: dict, target, hosts: list[hostlib.Host] | None) -> tuple[float, list[float]]:
    start = time.monotonic()
    if hosts:
        table = measure_hosts(options, target, hosts=hosts, runs_dir=work / "runs").table
        table = table[table["host"] != "pooled"]
    else:
        table = measure(options, target, runs_dir=work / "runs").table
    return time.monotonic() - start, list(table["iops"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=float, default=2.0)
    args = ap.parse_args()
    options = {
        "ioengine": "psync",
        "rw": "randread",
        "bs": "4k",
        "direct": 1,
        "runtime": f"{args.runtime:g}s",
        "time_based": 1,
    }
    with tempfile.TemporaryDirectory() as tmp, hostlib.local_servers(2) as servers:
        work = Path(tmp)
        target = scratch_file(work / "scratch", "256m")
        job = work / "job.fio"
        job.write_text(to_jobfile({"bench": {**options, **target.fio_options}}))
        cases = {
            "plain fio": lambda: raw_fio(work, job, None),
            "fio --client, 1 server": lambda: raw_fio(work, job, servers.hosts[:1]),
            "fio --client, 2 servers": lambda: raw_fio(work, job, servers.hosts),
            "iolab measure (plain)": lambda: via_iolab(work, options, target, None),
            "iolab measure_hosts, 1": lambda: via_iolab(work, options, target, servers.hosts[:1]),
            "iolab measure_hosts, 2": lambda: via_iolab(work, options, target, servers.hosts),
        }
        results: dict[str, list[tuple[float, list[float]]]] = {k: [] for k in cases}
        for r in range(args.rounds):
            for name in list(cases) if r % 2 == 0 else list(reversed(cases)):
                results[name].append(cases[name]())
        print(
            f"servers: {servers.kind}; job: {args.runtime:g} s psync 4k randread on a scratch file; "
            f"{args.rounds} rounds, order alternating"
        )
        base = statistics.median(w for w, _ in results["plain fio"])
        base_iops = statistics.median(sum(i) for _, i in results["plain fio"])
        print(
            f"{'case':26} {'wall s (median)':>16} {'extra s':>8} {'IOPS per host':>16} {'IOPS total':>12} "
            f"{'total / plain':>13} {'range of total':>22}"
        )
        for name, runs in results.items():
            wall = statistics.median(w for w, _ in runs)
            per_host = statistics.median(statistics.mean(i) for _, i in runs)
            totals = [sum(i) for _, i in runs]
            total = statistics.median(totals)
            print(
                f"{name:26} {wall:16.2f} {wall - base:8.2f} {per_host:16,.0f} {total:12,.0f} "
                f"{total / base_iops:13.2f} {min(totals):10,.0f}-{max(totals):,.0f}"
            )


if __name__ == "__main__":
    main()
