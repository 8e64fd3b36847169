"""Folding speed where users wait (issues P11, P22), each ratio measured side by side in one
run, alternating which goes first, whole processes with their start-up, medians of the rounds:

* perf.data -> folded stacks (``iolab fold perf.data``: ``perf script`` with the fields the
  folder reads, streamed into it while perf still writes) vs plain ``perf script`` to
  /dev/null (goal: at most 1.2x its time) and vs ``perf script | inferno-collapse-perf``
  (goal: faster), on two profiles recorded here around fio io_uring random reads:

  - system-wide, frame pointers: ``perf record -F 4999 -a -g`` (every CPU, idle included);
  - one process, DWARF: ``perf record -F 1999 --call-graph dwarf -- fio``;

  each fold's output compared with FlameGraph's ``stackcollapse-perf.pl`` on the text iolab
  asks perf for, byte for byte (and inferno's, which is not always the same);
* ``iolab fold TEXT`` vs ``stackcollapse-perf.pl TEXT`` on 2.5 MB and 25 MB of the
  system-wide profile's ``perf script`` text (goal: at least 2x as fast), and vs
  ``inferno-collapse-perf`` on each whole text;
* start-up: ``iolab --help`` and ``iolab fold`` of a one-sample text (goal: well under 0.2 s).

Everything printed is measured; nothing is estimated. stackcollapse-perf.pl needs a FlameGraph
checkout (``FLAMEGRAPH_DIR``); inferno is used where ``inferno-collapse-perf`` is installed
(``cargo install inferno``; ~/.cargo/bin is searched too). Run it under the measuring lock:

    flock /tmp/iolab-measure.lock env FLAMEGRAPH_DIR=~/FlameGraph .venv/bin/python benchmarks/fold.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lib"))
from iolab.machine.perf import script_argv  # noqa: E402  (the text iolab folds: same argv)

IOLAB = [sys.executable, "-m", "iolab.cli"]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO / "lib")}
SIZES = {"2.5 MB": 2_500_000, "25 MB": 25_000_000}
FIO = ["--rw=randread", "--ioengine=io_uring", "--iodepth=8", "--direct=1", "--time_based", "--output=/dev/null"]


def wall(argv: list[str] | str) -> tuple[float, float]:
    """Wall seconds of one whole command (a string runs in sh: a pipeline), output discarded,
    and the CPU seconds (user + system) it and its children used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv, shell=isinstance(argv, str), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=ENV
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def side_by_side(commands: list, rounds: int, cpu: list | None = None) -> list[list[float]]:
    """Wall seconds of each command, run in turn ``rounds`` times, the order reversed every
    other round; their CPU seconds appended to ``cpu`` (one list per command) if given."""
    times: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    for r in range(rounds):
        order = list(enumerate(commands))
        for i, argv in order if r % 2 == 0 else order[::-1]:
            took, used = wall(argv)
            times[i].append(took)
            cpus[i].append(used)
    if cpu is not None:
        cpu.extend(cpus)
    return times


def med(ts: list[float], cpu: list[float] | None = None) -> str:
    used = f", {statistics.median(cpu):4.2f} CPU-s" if cpu else ""
    return f"{statistics.median(ts):6.3f} s ({min(ts):.3f}-{max(ts):.3f}){used}"


def record(work: Path, kind: str, seconds: float) -> Path:
    """perf.data of a fio run: ``system`` (every CPU, frame pointers, 4999 Hz) or ``dwarf``
    (fio's own process, DWARF call chains, 1999 Hz)."""
    data = work / f"{kind}.data"
    fio = ["fio", "--name=b", f"--filename={work / 'f'}", f"--runtime={seconds:g}s", *FIO]
    how = ["-F", "4999", "-a", "-g"] if kind == "system" else ["-F", "1999", "--call-graph", "dwarf"]
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", *how, "-o", str(data), "--", *fio], check=True)
    return data


def inferno() -> str | None:
    return shutil.which("inferno-collapse-perf") or shutil.which(
        "inferno-collapse-perf", path=str(Path.home() / ".cargo/bin")
    )


def same(a: bytes, b: bytes) -> str:
    return "identical" if a == b else "DIFFERS"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10, help="length of each profiled fio run, s")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-fold-"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "lib/iolab")], check=True)  # as installed
    perl = Path(os.environ.get("FLAMEGRAPH_DIR", "/nonexistent")) / "stackcollapse-perf.pl"
    perl = perl if perl.exists() else None
    inf = inferno()
    try:
        (work / "f").write_bytes(b"\0" * (64 << 20))
        datas = {kind: record(work, kind, args.seconds) for kind in ("system", "dwarf")}
        print(
            f"{os.uname().nodename}: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.rounds} "
            "rounds, alternating; medians (min-max) of whole processes' wall time, start-up included, "
            "and their CPU time (user + system, children included); ratios of the medians"
        )
        print(f"stackcollapse-perf.pl: {perl or 'not found (set FLAMEGRAPH_DIR to a FlameGraph checkout)'}")
        print(
            f"inferno-collapse-perf: {inf or 'not installed (cargo install inferno): compared with perf script only'}"
        )
        texts = {}
        for kind, data in datas.items():
            text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, check=True).stdout
            texts[kind] = work / f"{kind}.txt"
            texts[kind].write_bytes(text)
            ours = subprocess.run([*IOLAB, "fold", str(data)], capture_output=True, check=True, env=ENV).stdout
            asked = subprocess.run(script_argv(data), capture_output=True, check=True).stdout  # what iolab folds
            (work / "asked.txt").write_bytes(asked)
            samples = sum(1 for line in text.split(b"\n") if line[:1] not in (b"", b"\t", b" ", b"#"))
            print(
                f"\n{kind} profile: perf.data {data.stat().st_size / 1e6:.0f} MB, {samples} samples, "
                f"perf script text {len(text) / 1e6:.0f} MB ({len(asked) / 1e6:.0f} MB with iolab's fields)"
            )
            if perl:
                theirs = subprocess.run(["perl", str(perl), str(work / "asked.txt")], capture_output=True).stdout
                print(f"  iolab fold perf.data vs stackcollapse-perf.pl on that text: output {same(ours, theirs)}")
                if inf:
                    other = subprocess.run([inf, str(work / "asked.txt")], capture_output=True).stdout
                    print(
                        f"  inferno-collapse-perf on that text vs stackcollapse-perf.pl: output {same(other, theirs)}"
                    )
            commands = [[*IOLAB, "fold", str(data)], ["perf", "script", "-i", str(data)]]
            if inf:
                commands.append(f"perf script -i {data} | {inf}")
            cpu: list[list[float]] = []
            times = side_by_side(commands, args.rounds, cpu)
            fold_s, script_s = statistics.median(times[0]), statistics.median(times[1])
            ratio = fold_s / script_s
            print(f"  iolab fold perf.data                {med(times[0], cpu[0])}")
            print(f"  perf script alone (to /dev/null)    {med(times[1], cpu[1])}")
            print(f"  ratio {ratio:5.2f}x perf script (goal <= 1.2: {'met' if ratio <= 1.2 else 'NOT MET'})")
            if inf:
                inf_s = statistics.median(times[2])
                print(f"  perf script | inferno-collapse-perf {med(times[2], cpu[2])}")
                print(f"  iolab {inf_s / fold_s:5.2f}x as fast (goal > 1: {'met' if inf_s > fold_s else 'NOT MET'})")
        print("\ntext -> folded stacks")
        full = texts["system"].read_bytes()
        for name, size in SIZES.items():
            if len(full) < size:
                print(f"fold {name}: skipped, the text is {len(full) / 1e6:.1f} MB (raise --seconds)")
                continue
            text = work / f"text-{name.replace(' ', '')}.txt"
            text.write_bytes(full[: full.rfind(b"\n\n", 0, size) + 2])
            if not perl:
                continue
            ours = subprocess.run([*IOLAB, "fold", str(text)], capture_output=True, check=True, env=ENV).stdout
            theirs = subprocess.run(["perl", str(perl), str(text)], capture_output=True, check=True).stdout
            t_ours, t_perl = side_by_side([[*IOLAB, "fold", str(text)], ["perl", str(perl), str(text)]], args.rounds)
            print(
                f"fold {name:7} iolab {med(t_ours)}  stackcollapse-perf.pl {med(t_perl)}  "
                f"speed {statistics.median(t_perl) / statistics.median(t_ours):5.2f}x (goal >= 2)  "
                f"output {same(ours, theirs)}"
            )
        if not perl:
            print("fold vs stackcollapse-perf.pl: skipped (set FLAMEGRAPH_DIR to a FlameGraph checkout)")
        if inf:
            for kind, text in texts.items():
                t_ours, t_inf = side_by_side([[*IOLAB, "fold", str(text)], [inf, str(text)]], args.rounds)
                ratio = statistics.median(t_ours) / statistics.median(t_inf)
                print(
                    f"fold the whole {kind} text ({text.stat().st_size / 1e6:.0f} MB): iolab {med(t_ours)}  "
                    f"inferno-collapse-perf {med(t_inf)}  iolab's time {ratio:5.2f}x"
                )
        one = work / "one.txt"  # one sample: an empty file is refused (exit 1)
        one.write_text("fio 1 [000] 1.0: 1 cpu-clock:\n\tffff main (/usr/bin/fio)\n\n")
        t_help, t_one, t_py = side_by_side(
            [[*IOLAB, "--help"], [*IOLAB, "fold", str(one)], [sys.executable, "-c", "pass"]], args.rounds
        )
        print(
            f"\nstart-up: iolab --help {statistics.median(t_help):5.3f} s, iolab fold (one sample) "
            f"{statistics.median(t_one):5.3f} s, python alone {statistics.median(t_py):5.3f} s "
            "(goal: well under 0.2 s)"
        )
        print(
            f"load average at the end {os.getloadavg()[0]:.2f}. iolab fold perf.data runs perf scripts side by "
            "side and folds on another CPU: its ratio holds when the machine's CPUs are free for it"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
