"""The adaptive knee search (``iolab.studies.qd.knee_search``) against the full grid
(``qd_sweep``: every depth × repeats), side by side, on a tmpfs-backed loop device (root)
and on a scratch file. Each trial runs both, in alternating order, and compares their
knees. Goal: the search uses <= 0.5 of the grid's runs and names the grid's knee within one
doubling of QD in >= 90 % of trials.

It also prints how often two consecutive trials' full grids agree with each other: the
best agreement any search could hope for with that knee method on this host.

    .venv/bin/python benchmarks/knee_search_vs_grid.py [--trials 10] [--runtime 1] [--repeats 3]
        [--targets loop,scratch] [--method power] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

from iolab.core.validate import fio_time
from iolab.machine.target import open_target
from iolab.stats.knee_interval import knee_with_interval
from iolab.studies import qd as qd_study
from iolab.studies.qd import knee_search, qd_sweep

QDS = [1, 2, 4, 8, 16, 32, 64, 128]


def within_one_step(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(math.log2(a) - math.log2(b)) <= 1


def trial(target, job, args, work: Path, i: int) -> dict:
    """One grid and one search on ``target``, in alternating order."""
    out: dict = {"trial": i}
    order = ("grid", "search") if i % 2 == 0 else ("search", "grid")
    for which in order:
        start = time.monotonic()
        if which == "grid":
            table = qd_sweep(
                target, QDS, job, cpu=args.cpu, rounds={"repeats": args.repeats}, runs_dir=work / f"grid-{i}"
            )
            out["grid_runs"] = len(table)
            out["grid_power"] = knee_with_interval(table.qd, table.iops, n_boot=0, method="power").x
            out["grid_kneedle"] = knee_with_interval(table.qd, table.iops, n_boot=0, method="kneedle").x
        else:
            qd_study.KNEE_METHOD = args.method  # what the search looks for (power unless told)
            res = knee_search(
                target, QDS, job, cpu=args.cpu, rounds={"repeats": args.repeats}, runs_dir=work / f"search-{i}"
            )
            out["search_runs"], out["search_knee"] = res.runs, res.estimate.x
            out["search_stages"] = [s.stage for s in res.steps]
        out[f"{which}_s"] = round(time.monotonic() - start, 1)
    out["agree"] = within_one_step(out["search_knee"], out[f"grid_{args.method}"])
    return out


def summary(name: str, rows: list[dict], method: str) -> dict:
    share = [r["search_runs"] / r["grid_runs"] for r in rows]
    pairs = list(zip(rows, rows[1:]))
    return {
        "target": name,
        "trials": len(rows),
        "method": method,
        "runs_share_mean": round(sum(share) / len(share), 3),
        "runs_share_max": round(max(share), 3),
        "agreement": round(sum(r["agree"] for r in rows) / len(rows), 3),
        "grid_vs_next_grid_power": round(
            sum(within_one_step(a["grid_power"], b["grid_power"]) for a, b in pairs) / max(1, len(pairs)), 3
        ),
        "grid_vs_next_grid_kneedle": round(
            sum(within_one_step(a["grid_kneedle"], b["grid_kneedle"]) for a, b in pairs) / max(1, len(pairs)), 3
        ),
        "time_s_grid_mean": round(sum(r["grid_s"] for r in rows) / len(rows), 1),
        "time_s_search_mean": round(sum(r["search_s"] for r in rows) / len(rows), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--runtime", type=float, default=1.0, help="seconds per fio run")
    ap.add_argument("--repeats", type=int, default=3, help="the grid's repeats per depth")
    ap.add_argument("--targets", default="loop,scratch" if os.geteuid() == 0 else "scratch")
    ap.add_argument("--size", default="1g")
    ap.add_argument("--method", default="power", choices=["power", "kneedle"])
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the run folders (printed)")
    args = ap.parse_args()
    os.environ.setdefault("IOLAB_HEADLESS", "1")
    job = {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "direct": 1, "runtime": fio_time(args.runtime)}
    work = Path(tempfile.mkdtemp(prefix="iolab-knee-search-"))
    results = []
    try:
        for spec in [t.strip() for t in args.targets.split(",") if t.strip()]:
            with open_target(spec, args.size, scratch_dir=work / "scratch") as target:
                rows = []
                for i in range(args.trials):
                    rows.append(trial(target, job, args, work / spec, i))
                    r = rows[-1]
                    print(
                        f"{spec} trial {i}: grid {r['grid_runs']} runs, knee power {r['grid_power']} / "
                        f"kneedle {r['grid_kneedle']}; search {r['search_runs']} runs, knee "
                        f"{r['search_knee']} ({'agrees' if r['agree'] else 'DISAGREES'})",
                        flush=True,
                    )
                results.append(summary(spec, rows, args.method))
    finally:
        if args.keep:
            print("run folders kept in", work)
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    share = max(r["runs_share_max"] for r in results)
    agreement = sum(r["agreement"] * r["trials"] for r in results) / sum(r["trials"] for r in results)
    met = share <= 0.5 and agreement >= 0.9
    print(
        json.dumps(
            {
                "per_target": results,
                "runs_share_max": share,
                "agreement_all": round(agreement, 3),
                "goal": "runs share <= 0.5 and agreement >= 0.9",
                "goal_met": met,
                "runtime_s": args.runtime,
                "grid": f"QD {QDS[0]}..{QDS[-1]} x {args.repeats} repeats",
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
