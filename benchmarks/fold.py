"""Folding speed, beside plain ``perf script`` on the same data in the same run:

* folding throughput (MB/s of ``perf script`` text, already in memory);
* end to end perf.data -> folded stacks (``iolab.perf.fold_perf_data``: perf script with
  the minimal fields streamed into the folder) vs plain ``perf script`` to /dev/null with
  its default fields.

    .venv/bin/python benchmarks/fold.py [--seconds 5] [--freq 999]
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from iolab.fold import FoldOptions, fold_lines
from iolab.perf import fold_perf_data, script_argv


def timed(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--freq", type=int, default=999)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-fold-"))
    data = work / "perf.data"
    subprocess.run(["fio", "--name=b", f"--filename={work / 'f'}", "--size=64m", "--rw=randread",
                    "--ioengine=io_uring", "--iodepth=8", "--direct=1", "--runtime=0", "--time_based=0"],
                   capture_output=True, check=False)
    fio = ["fio", "--name=b", f"--filename={work / 'f'}", "--size=64m", "--rw=randread", "--ioengine=io_uring",
           "--iodepth=8", "--direct=1", f"--runtime={int(args.seconds * 1000)}ms", "--time_based"]
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(args.freq), "-g", "-a", "-o", str(data),
                    "--", *fio], capture_output=True, check=True)
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True).stdout
    lines = text.splitlines(keepends=True)
    mb = len(text.encode()) / 1e6
    t_fold, folded = timed(lambda: fold_lines(lines, FoldOptions(kernel=True)))
    t_script, _ = timed(lambda: subprocess.run(["perf", "script", "-i", str(data)], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL, check=True))
    t_min_script, _ = timed(lambda: subprocess.run(script_argv(data), stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL, check=True))
    t_e2e, _ = timed(lambda: fold_perf_data(data, FoldOptions(kernel=True)))
    minimal = len(subprocess.run(script_argv(data), capture_output=True, text=True).stdout.encode()) / 1e6
    print(f"perf.data {data.stat().st_size / 1e6:.1f} MB, {folded.samples:,} samples, "
          f"perf script text {mb:.1f} MB (default fields), {minimal:.1f} MB (iolab's fields)")
    print(f"fold (text in memory):              {mb / t_fold:8.1f} MB/s   ({t_fold:.3f} s)")
    print(f"perf script, default fields:        {t_script:8.3f} s")
    print(f"perf script, iolab's fields:        {t_min_script:8.3f} s")
    print(f"perf.data -> folded (iolab, e2e):   {t_e2e:8.3f} s   ({t_e2e / t_script:.2f}x plain perf script)")


if __name__ == "__main__":
    main()
