"""Folding speed where users wait (issue P11), each ratio measured side by side in one run,
alternating which goes first, whole processes with their start-up:

* ``iolab fold TEXT`` vs FlameGraph's ``stackcollapse-perf.pl TEXT`` on 2.5 MB and 25 MB of
  ``perf script`` text with DWARF call chains (recorded here around a fio run), outputs
  compared byte for byte — needs a FlameGraph checkout: ``FLAMEGRAPH_DIR=/path/to/FlameGraph``
  (goal: at least 2x as fast);
* perf.data -> folded stacks (``iolab fold perf.data``: perf script with the fields the folder
  reads, streamed into it while perf still writes) vs plain ``perf script`` to /dev/null
  (goal: at most 1.2x its time);
* start-up: ``iolab --help`` and ``iolab fold`` of an empty file (goal: well under 0.2 s).

    FLAMEGRAPH_DIR=~/FlameGraph .venv/bin/python benchmarks/fold.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IOLAB = [sys.executable, "-m", "iolab.cli"]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO / "lib")}
SIZES = {"2.5 MB": 2_500_000, "25 MB": 25_000_000}


def wall(argv: list[str], out=subprocess.DEVNULL) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL, check=True, env=ENV)
    return time.perf_counter() - start


def side_by_side(a: list[str], b: list[str], rounds: int) -> tuple[float, float]:
    """Median wall seconds of ``a`` and ``b``, run alternately ``rounds`` times each."""
    ta, tb = [], []
    for r in range(rounds):
        for which in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            which[1].append(wall(which[0]))
    return statistics.median(ta), statistics.median(tb)


def record(work: Path, seconds: float) -> Path:
    """perf.data of a fio run with DWARF call chains, all CPUs, 1999 Hz."""
    data = work / "perf.data"
    (work / "f").write_bytes(b"\0" * (64 << 20))
    fio = [
        "fio",
        "--name=b",
        f"--filename={work / 'f'}",
        "--rw=randread",
        "--ioengine=io_uring",
        "--iodepth=8",
        "--direct=1",
        f"--runtime={seconds:g}s",
        "--time_based",
    ]
    subprocess.run(
        [
            "perf",
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "1999",
            "--call-graph",
            "dwarf",
            "-a",
            "-o",
            str(data),
            "--",
            *fio,
        ],
        capture_output=True,
        check=True,
    )
    return data


def texts(work: Path, data: Path) -> dict[str, Path]:
    """``perf script`` text of ``data`` cut at a sample boundary to each size."""
    full = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, check=True).stdout
    out = {}
    for name, size in SIZES.items():
        if len(full) < size:
            raise SystemExit(f"perf script gave {len(full) / 1e6:.1f} MB, less than {name}: raise --seconds")
        path = work / f"perf-{name.replace(' ', '')}.txt"
        path.write_bytes(full[: full.rfind(b"\n\n", 0, size) + 2])
        out[name] = path
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=20, help="length of the profiled fio run (enough for 25 MB)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-fold-"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "lib/iolab")], check=True)  # as installed
    try:
        data = record(work, args.seconds)
        samples = texts(work, data)
        perl = Path(os.environ.get("FLAMEGRAPH_DIR", "")) / "stackcollapse-perf.pl"
        print(
            f"{os.uname().nodename}: {os.cpu_count()} CPUs; perf.data {data.stat().st_size / 1e6:.0f} MB; "
            f"{args.rounds} rounds, alternating; medians of whole processes"
        )
        if os.environ.get("FLAMEGRAPH_DIR") and perl.exists():
            for name, text in samples.items():
                ours, theirs = work / "ours.txt", work / "theirs.txt"
                with open(ours, "w") as o:
                    subprocess.run([*IOLAB, "fold", str(text)], stdout=o, check=True, env=ENV)
                with open(theirs, "w") as o:
                    subprocess.run(["perl", str(perl), str(text)], stdout=o, check=True)
                same = ours.read_bytes() == theirs.read_bytes()
                t_ours, t_perl = side_by_side([*IOLAB, "fold", str(text)], ["perl", str(perl), str(text)], args.rounds)
                print(
                    f"fold {name:7} iolab {t_ours:6.3f} s  stackcollapse-perf.pl {t_perl:6.3f} s  "
                    f"speed {t_perl / t_ours:5.2f}x (goal >= 2)  output {'identical' if same else 'DIFFERS'}"
                )
        else:
            print("fold vs stackcollapse-perf.pl: skipped (set FLAMEGRAPH_DIR to a FlameGraph checkout)")
        t_fold, t_script = side_by_side([*IOLAB, "fold", str(data)], ["perf", "script", "-i", str(data)], args.rounds)
        print(
            f"perf.data -> folded {t_fold:6.3f} s  perf script alone {t_script:6.3f} s  "
            f"ratio {t_fold / t_script:5.2f}x (goal <= 1.2)"
        )
        empty = work / "empty.txt"
        empty.write_text("")
        t_help, t_py = side_by_side([*IOLAB, "--help"], [sys.executable, "-c", "pass"], args.rounds)
        t_empty, _ = side_by_side([*IOLAB, "fold", str(empty)], [sys.executable, "-c", "pass"], args.rounds)
        print(
            f"start-up: iolab --help {t_help:5.3f} s, iolab fold (empty) {t_empty:5.3f} s, "
            f"python alone {t_py:5.3f} s (goal: well under 0.2 s)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
