"""Planning a big search: ``iolab search SPEC --dry-run`` of generated N-cell specs, timed
as a whole command (start-up, the spec, every cell checked by fio's parse and the write
guard, the plan printed), beside the way it was before: one ``fio --parse-only`` per cell.

The spec is a grid of fio options — bs x iodepth x numjobs x rw (``spec_of``) — on the
scratch file of a temporary data folder (``IOLAB_DATA``), 3 repeats, so N cells are 3N runs.
The old way is measured, not guessed, but on a sample: ``search.check`` of a --sample-cell
spec with the guard asking fio once per cell (``guard_job_text``, its cache cleared), the
time per cell multiplied by N (the output says "estimated"). Rounds alternate the new and
the old way; the figures are medians.

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/search_plan.py [--cells 1000,10000] [--rounds 3] [--sample 30]

Goal (P22): 10,000 cells in <= 10 s, <= 1 ms per cell. ``spec_of(n, folder)`` is importable
(``benchmarks/campaign_scale.py`` times the same command).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
IOLAB = REPO / ".venv" / "bin" / "iolab"
GOAL_MS = 1.0  # per cell at 10,000 cells
BASE = {"ioengine": "psync", "runtime": "1s", "size": "16m"}
IODEPTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


def spec_of(n: int, folder: Path, name: str | None = None) -> Path:
    """A search spec of exactly ``n`` cells written to ``folder``: a grid of rw (read,
    randread) x numjobs (1..5) x iodepth (powers of two from 1, up to 10) x bs (multiples of
    512 B, as many as it takes), each axis as long as divides what is left of ``n``; on the
    scratch target, 3 repeats."""

    def most(left: int, cap: int) -> int:
        return max(k for k in range(1, cap + 1) if left % k == 0)

    rw = most(n, 2)
    numjobs = most(n // rw, 5)
    iodepth = most(n // rw // numjobs, len(IODEPTHS))
    bs = n // rw // numjobs // iodepth
    doc = {
        "name": name or f"plan{n}",
        "target": "scratch",
        "size": "16m",
        "cpus": [min(os.sched_getaffinity(0))],
        "repeats": 3,
        "base": BASE,
        "axes": {
            "bs": [512 * k for k in range(1, bs + 1)],
            "iodepth": IODEPTHS[:iodepth],
            "numjobs": list(range(1, numjobs + 1)),
            "rw": ["read", "randread"][:rw],
        },
    }
    path = Path(folder) / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cells_in(spec: Path) -> int:
    return math.prod(len(v) for v in yaml.safe_load(spec.read_text())["axes"].values())


def dry_run(spec: Path) -> float:
    """Seconds of ``iolab search SPEC --dry-run``, the whole command."""
    start = time.perf_counter()
    done = subprocess.run([str(IOLAB), "search", str(spec), "--dry-run"], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0 or "legal, 0 illegal" not in done.stdout:
        sys.exit(f"iolab search --dry-run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return took


def one_by_one_s(spec: Path) -> float:
    """Seconds per cell of ``search.check`` with fio asked once per cell (the old guard)."""
    from iolab.core.errors import IolabError
    from iolab.machine import jobcheck
    from iolab.measure import search, search_spec

    def per_cell(texts, allow_destructive=False, *, fio=None, cwd=None, on_parsed=None):
        out = []
        for text in texts:
            try:
                out.append(jobcheck.guard_job_text(text, allow_destructive, fio=fio, cwd=cwd))
            except IolabError as exc:
                out.append(exc)
        return out

    loaded = search_spec.load_spec(spec)
    jobcheck._parsed.cache_clear()
    batch, search.guard_job_texts = search.guard_job_texts, per_cell
    try:
        with search.open_targets(loaded) as targets:
            start = time.perf_counter()
            checked = search.check(loaded, targets, progress=False)
            took = time.perf_counter() - start
    finally:
        search.guard_job_texts = batch
    assert not checked.refused, checked.refused
    return took / len(checked.cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", default="1000,10000", help="spec sizes, comma-separated (default 1000,10000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--sample", type=int, default=30, help="cells timed the old way each round (default 30)")
    args = ap.parse_args()
    sizes = [int(n) for n in args.cells.split(",")]
    with tempfile.TemporaryDirectory(prefix="iolab-plan-") as tmp:
        os.environ["IOLAB_DATA"] = tmp  # the scratch file is made there, for this benchmark only
        specs = {n: spec_of(n, Path(tmp)) for n in sizes}
        sample = spec_of(args.sample, Path(tmp), "sample")
        dry_run(sample)  # makes the scratch file once, outside the timings
        new: dict[int, list[float]] = {n: [] for n in sizes}
        old: list[float] = []
        for _ in range(args.rounds):
            for n in sizes:
                new[n].append(dry_run(specs[n]))
            old.append(one_by_one_s(sample))
        per_cell_old = statistics.median(old)
        print(
            f"iolab search --dry-run, whole command (start-up included), median of {args.rounds} rounds; "
            f"the old way (one fio --parse-only per cell) measured on {cells_in(sample)} cells a round "
            f"({per_cell_old * 1e3:.0f} ms per cell) and multiplied out: estimated"
        )
        print(f"{'cells':>7} {'runs':>7} {'new s':>7} {'ms/cell':>8} {'old s (est.)':>13} {'old/new':>8}")
        for n in sizes:
            cells = cells_in(specs[n])
            took = statistics.median(new[n])
            print(
                f"{cells:>7,} {3 * cells:>7,} {took:>7.2f} {took / cells * 1e3:>8.3f} "
                f"{per_cell_old * cells:>13,.0f} {per_cell_old * cells / took:>7.0f}x"
            )
        big = max(sizes)
        per_cell_ms = statistics.median(new[big]) / cells_in(specs[big]) * 1e3
        verdict = "met" if per_cell_ms <= GOAL_MS else "NOT met"
        print(f"goal <= {GOAL_MS:g} ms per cell at {cells_in(specs[big]):,} cells: {per_cell_ms:.3f} ms, {verdict}")


if __name__ == "__main__":
    main()
