"""Parse throughput: ``iolab.fiojson.parse_output`` (locate JSON, tidy table, percentiles from
json+ bins) vs plain ``json.loads`` of the same files, in one run.

    .venv/bin/python benchmarks/parse.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iolab.fiojson import parse_output



def _plain_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
        return True
    except ValueError:
        return False


# files plain json.loads can read too (no stray text, one document), so both do the same work
FILES = [p for p in sorted((Path(__file__).resolve().parents[1] / "tests/fixtures/fio").glob("*.json"))
         if _plain_json(p)]


def rate(fn, repeat: int) -> tuple[float, float]:
    size = sum(p.stat().st_size for p in FILES)
    start = time.perf_counter()
    for _ in range(repeat):
        for p in FILES:
            fn(p)
    elapsed = time.perf_counter() - start
    return size * repeat / elapsed / 2**20, len(FILES) * repeat / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    plain_mb, plain_f = rate(lambda p: json.loads(p.read_text()), args.repeat)
    ours_mb, ours_f = rate(parse_output, args.repeat)
    print(f"{len(FILES)} files, {sum(p.stat().st_size for p in FILES) / 1024:.0f} KiB, x{args.repeat}")
    print(f"json.loads:         {plain_mb:8.1f} MiB/s  {plain_f:8.0f} files/s")
    print(f"iolab parse_output: {ours_mb:8.1f} MiB/s  {ours_f:8.0f} files/s  "
          f"({ours_mb / plain_mb:.2f}x json.loads)")


if __name__ == "__main__":
    main()
