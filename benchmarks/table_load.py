"""Loading the table of a folder of many runs: the per-run path it replaced (``pd.concat`` of
``iolab.runs.store.run_table`` of each run, a DataFrame per run), ``iolab.runs.runcache.load_runs``
(every run derived again, without a frame per run, across the CPUs) and
``iolab.runs.runcache.load_cached`` cold (first build of the cache), warm (cache hit) and warm
after 10 runs were added, side by side in one run.

The folder is N copies of one real 1-second fio run (made here unless --source names a run
folder): each copy has its own run.json (run_id) and params.json (swept qd and repeat), its
other files hard-linked to the original's, which the loaders read like any other file (so
the page cache is warm: ``benchmarks/campaign_scale.py`` reads cold copies). The per-run path
takes minutes for 10,000 runs, so it is timed on the first --sample runs and extrapolated
(the output says so). The temporary folder is removed unless --keep.

    .venv/bin/python benchmarks/table_load.py [--runs 10000] [--sample 1000] [--source RUN_DIR] [--keep]

Goal: 10,000 runs load in seconds (warm cache).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

from iolab.runs import runcache, store

GOAL_S = 10.0  # "in seconds": a warm load of 10,000 runs under ten


def real_run(work: Path) -> Path:
    """One real 1-second fio run on a 16 MiB scratch file."""
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    target = scratch_file(work / "scratch", "16m")
    return measure(
        {"rw": "randread", "ioengine": "psync", "runtime": "1s"},
        target,
        runs_dir=work / "source",
        swept={"qd": 1, "repeat": 0},
        label="bench",
    ).path


def make_copies(source: Path, root: Path, start: int, count: int, link: bool = True) -> list[Path]:
    """``count`` copies of ``source`` under ``root``, numbered from ``start``; the files other
    than run.json and params.json hard-linked (``link``: a new link changes the ctime of the
    file, and with it the stamp of every run folder that links it) or copied."""
    meta = json.loads((source / "run.json").read_text())
    params = json.loads((source / "params.json").read_text())
    shared = [p for p in source.iterdir() if p.is_file() and p.name not in ("run.json", "params.json")]
    made = []
    for i in range(start, start + count):
        name = f"{meta['run_id']}-copy{i:06d}"
        folder = root / name
        folder.mkdir()
        for path in shared:
            (os.link if link else shutil.copyfile)(path, folder / path.name)
        (folder / "run.json").write_text(json.dumps({**meta, "run_id": name}, indent=1))
        swept = {**params.get("swept", {}), "qd": 2 ** (i % 8), "repeat": i // 8}
        (folder / "params.json").write_text(json.dumps({**params, "swept": swept}, indent=1))
        made.append(folder)
    return made


def timed(fn):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000, help="run folders to make (default 10,000)")
    ap.add_argument(
        "--sample",
        type=int,
        default=1_000,
        help="runs the uncached load_runs is timed on, then extrapolated (default 1,000)",
    )
    ap.add_argument("--warm-repeats", type=int, default=3, help="warm loads to time (default 3)")
    ap.add_argument("--source", help="a real run folder to copy (default: make one 1-second fio run)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolab-table-load-"))
    try:
        source = Path(args.source) if args.source else real_run(work)
        root = work / "runs"
        root.mkdir()
        t_make, folders = timed(lambda: make_copies(source, root, 0, args.runs))
        print(
            f"{args.runs:,} run folders (copies of {source.name}: run.json and params.json their own, "
            f"other files hard-linked) made in {t_make:.1f} s under {root}"
        )

        sample = min(args.sample, args.runs)
        t_plain, plain = timed(lambda: pd.concat([store.run_table(f) for f in folders[:sample]], ignore_index=True))
        per_run = t_plain / sample
        if sample < args.runs:
            plain_note = (
                f"{sample:,} runs in {t_plain:.1f} s ({per_run * 1e3:.1f} ms/run) -> {args.runs:,} runs "
                f"~{per_run * args.runs:.0f} s, EXTRAPOLATED from {sample:,} (a full load this way "
                f"would take {per_run * args.runs / 60:.1f} min)"
            )
        else:
            plain_note = f"{args.runs:,} runs in {t_plain:.1f} s ({per_run * 1e3:.1f} ms/run)"
        uncached_s = per_run * args.runs
        t_fast, fast = timed(lambda: runcache.load_runs(root))

        t_cold, cold = timed(lambda: runcache.load_cached(root))
        warm_times = []
        for _ in range(max(1, args.warm_repeats)):
            t, warm = timed(lambda: runcache.load_cached(root))
            warm_times.append(t)
        pd.testing.assert_frame_equal(warm, cold)
        pd.testing.assert_frame_equal(fast, cold, check_exact=True)
        pd.testing.assert_frame_equal(warm.iloc[: len(plain)].drop(columns="run_folder"), plain, check_exact=True)
        cache_mib = (root / runcache.CACHE_NAME).stat().st_size / 2**20

        make_copies(source, root, args.runs, 10, link=False)
        t_add, added = timed(lambda: runcache.load_cached(root))
        t_after, _ = timed(lambda: runcache.load_cached(root))
        best = min(warm_times)

        print(f"per run (run_table + pd.concat): {plain_note}")
        print(
            f"load_runs, no cache:              {len(fast):,} rows in {t_fast:.1f} s ({t_fast / args.runs * 1e3:.2f} "
            f"ms/run) = {uncached_s / t_fast:,.0f}x faster than per run"
        )
        print(
            f"load_cached, cold (first build):  {len(cold):,} rows in {t_cold:.1f} s "
            f"({t_cold / args.runs * 1e3:.1f} ms/run; cache file {cache_mib:.1f} MiB)"
        )
        print(
            f"load_cached, warm (cache hit):    {len(warm):,} rows in {best:.2f} s (best of {len(warm_times)}; "
            f"median {statistics.median(warm_times):.2f} s) = {uncached_s / best:,.0f}x faster than per run"
        )
        print(
            f"load_cached, warm + 10 new runs:  {len(added):,} rows in {t_add:.2f} s (10 runs derived, cache "
            f"rewritten); the next load {t_after:.2f} s"
        )
        print("warm equals cold and load_runs, and on the sample the per-run table (assert_frame_equal, exact)")
        scaled = best * 10_000 / args.runs
        verdict = "met" if scaled < GOAL_S else "NOT met"
        print(
            f"goal: 10,000 runs load in seconds (warm cache): {verdict} "
            f"({best:.2f} s for {args.runs:,} runs{'' if args.runs == 10_000 else f', ~{scaled:.2f} s per 10,000'})"
        )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
