"""Campaigns of many runs: ``iolab table`` of N run folders cold (page cache dropped, no parquet
cache) and warm (the cache the cold one wrote), its peak memory, and ``iolab search --dry-run``
of an N-cell spec, beside ``json.loads`` of the same fio outputs, at N = 1,000 and 10,000
(measured) and 100,000 (estimated from them, and said so; ``--runs 1000,10000,100000``
measures it too, in about four minutes — longer than one turn of the measuring lock — and 6 GB
of run folders).

The run folders are copies of real runs with varied settings: a few real fio runs made here
(``--mix campaign``: what ``iolab search`` makes — fio with the samplers, block counters,
snapshot and checks — over rw, bs, iodepth and engines; ``--mix demo``: ``make demo``'s kinds —
the thread sampler, perf, fio's interval logs), or the runs of ``--source`` folders. Each copy
is a real copy (its own inodes, so a cold read reads the disk), with its own run.json
(run_id; 2 % of them ``failed``) and params.json (swept qd, bs and repeat varied); 1 in 500 has
its fio.json removed, a run ``iolab table`` skips with a warning. Each N is timed in this
process's child: ``.venv/bin/iolab table DIR > /dev/null`` (CSV out, start-up included);
memory is the peak summed PSS of that process and its workers (sampled every 50 ms) and its
own peak RSS (wait4).

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/campaign_scale.py [--runs 1000,10000]
        [--mix campaign|demo] [--source DIR ...] [--estimate 100000] [--keep]

Goal (issue P22): cold ``iolab table`` <= 2 ms per run folder at 10,000 runs on this 2-core
machine, memory <= 1 GB at 100,000 runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IOLAB = REPO / ".venv" / "bin" / "iolab"
GOAL_MS = 2.0  # cold iolab table, per run folder, at 10,000 runs
GOAL_MEMORY_MB = 1024.0  # at 100,000 runs
FAILED_EVERY, UNREADABLE_EVERY = 50, 500
DRY_RUN_TIMEOUT_S = 30
CAMPAIGN = [  # fio options of the real runs a campaign-like folder is copied from
    {"rw": "randread", "bs": "4k", "ioengine": "psync", "runtime": "1s"},
    {"rw": "randwrite", "bs": "16k", "ioengine": "libaio", "iodepth": 8, "direct": 1, "runtime": "1s"},
    {"rw": "read", "bs": "128k", "ioengine": "io_uring", "iodepth": 16, "numjobs": 2, "runtime": "1s"},
    {"rw": "randrw", "rwmixread": 70, "bs": "4k", "ioengine": "io_uring", "iodepth": 4, "runtime": "1s"},
]


def real_runs(work: Path, mix: str) -> list[Path]:
    """A few real fio runs on a 64 MiB scratch file: CAMPAIGN's, or ``make demo``'s kinds in
    its proportions (24 runs with the thread sampler as notebook 01, 2 with perf as 04, 1 with
    interval logs as 08: three runs made, listed 24, 2 and 1 times)."""
    from iolab.machine.perf import ProfileSpec
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    target = scratch_file(work / "scratch", "64m")
    if mix == "campaign":
        plan = [(opts, None, 1) for opts in CAMPAIGN]
    else:
        base = {"rw": "randread", "bs": "4k", "ioengine": "psync", "runtime": "1s"}
        plan = [
            (base, {"threads": True}, 24),
            (base, {"profile": ProfileSpec(), "threads": True}, 2),
            ({**base, "runtime": "4s"}, {"log_ms": 200, "threads": True}, 1),
        ]
    out = []
    for i, (opts, how, times) in enumerate(plan):
        run = measure(opts, target, cpus=[0], runs_dir=work / "source", swept={"qd": 1, "repeat": i}, how=how)
        out += [run.path] * times
    return out


def sources_of(folders: list[str]) -> list[Path]:
    """The run folders in ``folders`` (``<folder>/<run>/run.json``)."""
    runs = [p.parent for folder in folders for p in sorted(Path(folder).glob("*/run.json"))]
    if not runs:
        raise SystemExit(f"no run folders (<run>/run.json) under {', '.join(folders)}")
    return runs


class Copier:
    """Copies of the source runs, each file written anew (its own inode and blocks)."""

    def __init__(self, sources: list[Path]):
        self.sources, read = [], {}
        for src in sources:  # a source listed twice is copied twice as often
            if src not in read:
                files = {p.name: p.read_bytes() for p in src.iterdir() if p.is_file()}
                meta, params = json.loads(files.pop("run.json")), json.loads(files.pop("params.json", b"{}"))
                read[src] = (files, meta, params)
            self.sources.append(read[src])

    def make(self, root: Path, start: int, count: int) -> None:
        bs = ["4k", "16k", "64k", "128k", 4096]  # a number among the words: an object column
        for i in range(start, start + count):
            files, meta, params = self.sources[i % len(self.sources)]
            name = f"run{i:06d}"
            folder = root / name
            folder.mkdir()
            for file, data in files.items():
                if file == "fio.json" and i % UNREADABLE_EVERY == UNREADABLE_EVERY // 2:
                    continue
                (folder / file).write_bytes(data)
            status = "failed" if i % FAILED_EVERY == FAILED_EVERY - 1 else meta["status"]
            (folder / "run.json").write_text(json.dumps({**meta, "run_id": name, "status": status}, indent=1))
            swept = {**params.get("swept", {}), "qd": 2 ** (i % 8), "bs": bs[i % 5], "repeat": i // 40}
            (folder / "params.json").write_text(json.dumps({**params, "swept": swept}, indent=1))


def drop_caches() -> bool:
    """Write back and drop the page cache (root only); False when this process may not."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def tree_pss_mb(pid: int) -> float:
    """Summed PSS (MiB) of ``pid`` and every process below it."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) / 1024
                    break
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def timed_table(root: Path) -> dict:
    """``iolab table root > /dev/null``: wall seconds, exit status, peak summed PSS (sampled),
    its peak RSS (wait4), the lines it wrote on stderr."""
    err = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen([str(IOLAB), "table", str(root)], stdout=subprocess.DEVNULL, stderr=err)
    peak = [0.0]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], tree_pss_mb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    sampler.join()
    err.seek(0)
    said = err.read().decode(errors="replace").splitlines()
    if proc.returncode:
        raise SystemExit(f"iolab table {root} failed ({proc.returncode}): {said[-3:]}")
    return {"s": wall, "pss_mb": peak[0], "rss_mb": usage.ru_maxrss / 1024, "said": said}


def json_loads_s(root: Path) -> tuple[float, int]:
    """Seconds to read and json.loads every fio.json under ``root``, and how many."""
    start = time.perf_counter()
    n = 0
    for path in sorted(root.glob("*/fio.json")):
        json.loads(path.read_bytes())
        n += 1
    return time.perf_counter() - start, n


def spec_for(cells: int) -> dict:
    """A search spec of exactly ``cells`` cells (one repeat each) on a scratch file: a grid of
    fio options, bs x iodepth x numjobs x rw (x rwmixread beyond 10,000)."""
    axes = {
        "bs": ["512", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k"],
        "iodepth": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        "numjobs": list(range(1, 11)),
        "rw": ["randread", "read", "randwrite", "write", "randrw", "rw", "readwrite", "trimwrite", "randtrim", "trim"],
        "rwmixread": list(range(10, 101, 10)),
    }
    grid, left = {}, cells
    for name, values in axes.items():
        n = next(k for k in range(min(len(values), left), 0, -1) if left % k == 0)
        grid[name], left = values[:n], left // n
        if left == 1:
            break
    if left != 1:
        raise SystemExit(f"no grid of these axes has exactly {cells} cells")
    return {
        "name": f"scale{cells}",
        "target": "scratch",
        "size": "16m",
        "cpus": [0],
        "repeats": 1,
        "order": "given",
        "base": {"ioengine": "psync", "runtime": "1s"},
        "axes": grid,
    }


def dry_run_ms_per_cell(cells: int, work: Path) -> float | None:
    """``iolab search SPEC --dry-run`` of a generated ``cells``-cell spec, ms per cell (start-up
    included); None when it fails (said on stderr)."""
    # ---- THE DRY-RUN COLUMN: the plan of an N-cell search, as `iolab search --dry-run` prints it.
    # lib/iolab/measure/search.py makes it fast (another change); when it offers a function for the
    # plan alone, time that here beside the command.
    spec = work / f"spec{cells}.yaml"
    spec.write_text(json.dumps(spec_for(cells)))  # JSON is YAML
    argv = [str(IOLAB), "search", str(spec), "--dry-run", "--runs-dir", str(work / f"search{cells}")]
    start = time.perf_counter()
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=DRY_RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"  (iolab search --dry-run of {cells:,} cells: not done after {DRY_RUN_TIMEOUT_S} s)", file=sys.stderr)
        return None
    wall = time.perf_counter() - start
    if out.returncode:
        print(f"  (iolab search --dry-run of {cells:,} cells failed: {out.stderr.strip()[-300:]})", file=sys.stderr)
        return None
    return wall / cells * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default="1000,10000", help="run counts to measure, ascending (default 1000,10000)")
    ap.add_argument("--estimate", type=int, default=100_000, help="run count estimated from the largest measured")
    ap.add_argument("--mix", choices=("campaign", "demo"), default="campaign", help="the kinds of real runs copied")
    ap.add_argument("--source", nargs="*", help="folders of real runs to copy instead of making them")
    ap.add_argument("--no-dry-run", action="store_true", help="leave out iolab search --dry-run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    counts = sorted(int(n) for n in args.runs.split(","))
    work = Path(tempfile.mkdtemp(prefix="iolab-campaign-scale-", dir="/var/tmp"))  # on disk, not tmpfs
    try:
        sources = sources_of(args.source) if args.source else real_runs(work, args.mix)
        copier = Copier(sources)
        sources = list(dict.fromkeys(sources))
        root = work / "runs"
        root.mkdir()
        cold_ok = os.geteuid() == 0
        print(
            f"{len(sources)} real source runs ({'--source' if args.source else args.mix + ' mix, made here'}); "
            f"copies with varied swept qd/bs/repeat, 1 in {FAILED_EVERY} failed, 1 in {UNREADABLE_EVERY} without "
            f"fio.json; CPUs {len(os.sched_getaffinity(0))}"
        )
        made, rows = 0, []
        for n in counts:
            copier.make(root, made, n - made)
            made = n
            size_mb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20
            (root / ".iolab-table.parquet").unlink(missing_ok=True)
            dropped = drop_caches()
            cold = timed_table(root)
            warm = timed_table(root)
            drop_caches()
            json_cold, files = json_loads_s(root)
            json_warm, _ = json_loads_s(root)
            dry = None if args.no_dry_run else dry_run_ms_per_cell(n, work)
            rows.append((n, cold, warm, json_cold / files, json_warm / files, dry))
            skipped = sum("skipping run" in line for line in cold["said"])
            print(
                f"\nN = {n:,} runs ({size_mb:,.0f} MiB; {skipped} skipped with a warning, as expected)\n"
                f"  iolab table, cold{'' if dropped else ' (NOT cold: not root, page cache kept)'}: "
                f"{cold['s']:.2f} s = {cold['s'] / n * 1e3:.2f} ms/run; peak memory {cold['pss_mb']:,.0f} MiB "
                f"(PSS, all its processes), its own RSS {cold['rss_mb']:,.0f} MiB\n"
                f"  iolab table, warm (parquet cache): {warm['s']:.2f} s = {warm['s'] / n * 1e3:.2f} ms/run; "
                f"peak {warm['pss_mb']:,.0f} MiB\n"
                f"  json.loads of the {files:,} fio.json files (read + parse, one process): cold "
                f"{json_cold / files * 1e3:.3f} ms/file, warm {json_warm / files * 1e3:.3f} ms/file -> table cold / "
                f"json cold = {cold['s'] / n / (json_cold / files):.1f}x, warm / warm = "
                f"{warm['s'] / n / (json_warm / files):.1f}x"
                + (f"\n  iolab search --dry-run of {n:,} cells: {dry:.3f} ms/cell" if dry is not None else "")
            )
        if cold_ok is False:
            print("\nnot root: the page cache could not be dropped; 'cold' above is not cold")
        big, cold, warm = rows[-1][0], rows[-1][1], rows[-1][2]
        est = args.estimate
        if est > big and len(rows) >= 2:
            (n0, c0, *_), (n1, c1, *_) = rows[-2], rows[-1]
            memory = [c1[k] + (c1[k] - c0[k]) / (n1 - n0) * (est - n1) for k in ("pss_mb", "rss_mb")]
            print(
                f"\nN = {est:,} runs, ESTIMATED (not measured): cold {cold['s'] / big * est:,.0f} s "
                f"({cold['s'] / big * 1e3:.2f} ms/run as at {big:,}), warm {warm['s'] / big * est:,.0f} s, peak "
                f"memory ~{min(memory):,.0f}-{max(memory):,.0f} MiB (the lines through the summed PSS and the "
                f"table process's own RSS at {n0:,} and {n1:,} runs)"
            )
            verdict = "met" if max(memory) <= GOAL_MEMORY_MB else "NOT met"
            print(f"goal: memory <= {GOAL_MEMORY_MB:,.0f} MiB at {est:,} runs: {verdict} (estimated: the higher line)")
        elif big >= est:
            memory = [rows[-1][1]["pss_mb"], rows[-1][1]["rss_mb"]]
            verdict = "met" if max(memory) <= GOAL_MEMORY_MB else "NOT met"
            print(f"goal: memory <= {GOAL_MEMORY_MB:,.0f} MiB at {big:,} runs: {verdict} (measured)")
        at = next((r for r in rows if r[0] == 10_000), None)
        if at is not None:
            ms = at[1]["s"] / at[0] * 1e3
            print(
                f"goal: cold iolab table <= {GOAL_MS:g} ms/run at 10,000 runs: {'met' if ms <= GOAL_MS else 'NOT met'} ({ms:.2f} ms/run)"
            )
        print(f"(this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB)")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
