"""Parse speed: fio outputs -> one tidy table (``iolab.read.fiojson.parse_outputs``: the JSON
located, a row per job and direction, percentiles from the json+ bins by fio's rule) against
plain ``json.loads`` of the same files, measured side by side in one run, alternating.
Goal (issue P11): at most 2x the time of json.loads per fio output. ``parse_output`` (one
DataFrame per file) is printed for reference.

    .venv/bin/python benchmarks/parse.py [--rounds 7] [--copies 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from iolab.read.fiojson import parse_output, parse_outputs  # noqa: E402

GOAL = 2.0


def _plain_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
        return True
    except ValueError:
        return False


# files plain json.loads can read too (no stray text, one document), so both do the same work
FILES = [
    p for p in sorted((Path(__file__).resolve().parents[1] / "tests/fixtures/fio").glob("*.json")) if _plain_json(p)
]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--copies", type=int, default=20, help="each file this many times per round (a study's many outputs)"
    )
    args = ap.parse_args()
    files = FILES * args.copies
    cases = {
        "json.loads": lambda: [json.loads(p.read_text()) for p in files],
        "iolab parse_outputs (one table)": lambda: parse_outputs(files),
        "iolab parse_output (a table per file)": lambda: [parse_output(p) for p in files],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(args.rounds):
        for name in list(cases) if r % 2 == 0 else list(reversed(cases)):
            times[name].append(timed(cases[name]))
    base = statistics.median(times["json.loads"])
    print(
        f"{len(FILES)} fio outputs ({sum(p.stat().st_size for p in FILES) / 1024:.0f} KiB) x {args.copies} "
        f"copies, {args.rounds} rounds alternating; median per output:"
    )
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:40} {1e6 * t / len(files):8.1f} µs   {t / base:5.2f}x json.loads")
    ratio = statistics.median(times["iolab parse_outputs (one table)"]) / base
    print(f"parse ÷ json.loads = {ratio:.2f} (goal ≤ {GOAL:g}): {'met' if ratio <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
