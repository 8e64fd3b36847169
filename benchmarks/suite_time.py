"""How long `make test` takes from a fresh clone, set-up included: the suite's budget is 6 minutes
on 2 cores (README, "Speed").

Clones this checkout's HEAD into a new `mktemp -d` folder (mode 0700, as a home folder is), with
`shared/` linked beside it when this checkout has one, runs `make test` there and prints the wall
time of the whole command, of the set-up and of pytest, the CPU time it used (steadier than the
wall time on a shared VM: the suite keeps both CPUs busy), and pytest's 15 slowest tests. With
`--background` the command is started as `nohup make test &` starts it: SIGINT ignored, no
terminal input. The clone is removed afterwards unless `--keep`.

    .venv/bin/python benchmarks/suite_time.py [--background] [--keep] [--workers N]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--background", action="store_true", help="SIGINT ignored and stdin /dev/null, like nohup ... &")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--workers", help="TEST_WORKERS for make test (default: one per CPU)")
    args = ap.parse_args()

    top = Path(tempfile.mkdtemp(prefix="iolab-suite-"))  # 0700
    clone = top / "iolab"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    if (REPO.parent / "shared").is_dir():
        (top / "shared").symlink_to(REPO.parent / "shared")
    argv = ["make", "test"] + ([f"TEST_WORKERS={args.workers}"] if args.workers else [])
    ignore_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if args.background else None
    log = top / "make-test.log"
    print(f"clone: {clone} (mode {oct(top.stat().st_mode & 0o777)}); log: {log}", flush=True)
    start = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            argv, cwd=clone, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=ignore_sigint
        )
    wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # make and all it waited for (QEMU too); not kernel threads
    cpu_s = used.ru_utime + used.ru_stime
    text = log.read_text(errors="replace")
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?) in ([\d.]+)s", text, re.M)
    # the suite, and beside it the same tests on the lowest versions (Makefile: LOWEST_IN_SUITE)
    pytest_s = float(summary[0][1]) if summary else float("nan")
    print(
        f"make test {'(background) ' if args.background else ''}exit {done.returncode}: "
        f"{wall:.0f} s in all ({wall / 60:.1f} min), set-up {wall - pytest_s:.0f} s, pytest "
        + " beside ".join(f"{float(s):.0f} s" for _, s in summary)
    )
    print(f"CPU time of make test and its children: {cpu_s:.0f} s ({cpu_s / wall:.2f} CPUs on average)")
    print(f"result: {'; '.join(r for r, _ in summary) if summary else 'no pytest summary (see the log)'}")
    after = text.split("slowest 15 durations", 1)[1].split("\n", 1)[1] if "slowest 15 durations" in text else ""
    slowest = after.split("====", 1)[0]
    print("the 15 slowest:\n" + slowest.rstrip())
    failed = [line for line in text.splitlines() if line.startswith(("FAILED ", "ERROR ", "E   "))]
    if failed:  # what failed, before the clone and its log are removed
        print("what failed:\n" + "\n".join(line[:400] for line in failed[:40]))
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
