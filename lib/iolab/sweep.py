"""Parameter grids with repeats, progress and resume.

    grid = {"iodepth": [1, 2, 4, 8]}                   # any fio option, or several
    table = sweep(grid, base={"rw": "randread"}, target=t, cpus=[0], repeats=3,
                  runs_dir="data/runs/qd-knee")

Each (cell, repeat) is one stored run whose ``params.json`` records the swept values and
the repeat index; they are columns of the returned table. Re-running the same sweep into
the same folder skips runs already measured (resume after a crash or Ctrl-C): a run is
"the same" when its whole job matches — fio options, target, swept values and repeat
(``iolab.store.job_key``) — so a sweep with other base options runs anew.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from .progress import bar, headless  # noqa: F401  (headless: the notebooks' sweep.headless())
from .runner import measure
from .store import find_runs, job_key, load_runs, stored_job_key
from .target import Target


def cells(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a grid, in the order given: {"a": [1, 2], "b": [x]} ->
    [{"a": 1, "b": x}, {"a": 2, "b": x}]."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def _done(runs_dir: Path) -> dict[str, Path]:
    """Finished ("ok") runs under ``runs_dir`` by job key (``iolab.store.stored_job_key``)."""
    done: dict[str, Path] = {}
    for run_json in find_runs(runs_dir):
        meta = json.loads(run_json.read_text())
        params_path = run_json.parent / "params.json"
        if meta.get("status") != "ok" or not params_path.exists():
            continue
        done.setdefault(stored_job_key(json.loads(params_path.read_text())), run_json.parent)
    return done


def sweep(grid: Mapping[str, Sequence[Any]], *, target: Target, base: Mapping[str, Any] | None = None,
          cpus: list[int] | None = None, repeats: int = 1, runs_dir: str | Path = "data/runs/sweep",
          resume: bool = True, aliases: Mapping[str, str] | None = None, **measure_kw) -> pd.DataFrame:
    """Run every cell of ``grid`` ``repeats`` times; return the tidy table of its runs (only
    those: other runs in ``runs_dir`` are not mixed in).

    Every cell is checked before the first run (``iolab.validate``). With ``resume``, a
    (cell, repeat) whose whole job — full fio option dict, target, swept values and repeat
    (``iolab.store.job_key``) — already has an "ok" run in ``runs_dir`` is not run again; a
    sweep with other base options into the same folder runs anew.
    ``aliases`` renames swept fio options into table columns ({"iodepth": "qd"})."""
    from .runner import job_options
    from .validate import check_cpus, check_fio_options, positive_ints, writable_dir

    runs_dir = Path(runs_dir)
    aliases = dict(aliases or {})
    [repeats] = positive_ints("repeats", [repeats])
    check_cpus(cpus)
    plan = []
    for cell in cells(grid):
        opts = job_options({**(base or {}), **cell}, target, cpus)
        check_fio_options(opts)
        opts.pop("name", None)
        for rep in range(repeats):
            swept = {aliases.get(k, k): v for k, v in cell.items()} | {"repeat": rep}
            plan.append((cell, rep, swept, job_key(opts, target.describe(), swept)))
    writable_dir(runs_dir, "runs folder", "runs_dir=DIR")
    done = _done(runs_dir) if resume else {}
    paths = []
    for cell, rep, swept, key in bar(plan, "fio runs"):
        if key in done:
            paths.append(done[key])
            continue
        label = "-".join(f"{aliases.get(k, k)}{v}" for k, v in cell.items()) + f"-r{rep}"
        result = measure({**(base or {}), **cell}, target, cpus=cpus, runs_dir=runs_dir, swept=swept,
                         label=label, **measure_kw)
        paths.append(result.path)
    return load_runs(paths)


def new_sweep_dir(name: str) -> Path:
    """A fresh folder for one sweep under data/runs: ``<name>-<UTC time>``."""
    import time

    from .paths import runs_dir
    return runs_dir() / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def qd_sweep(target: Target, queue_depths: Sequence[int], options: Mapping[str, Any], *,
             cpu: int = 0, repeats: int = 1, runs_dir: str | Path | None = None) -> pd.DataFrame:
    """The queue-depth study of seed 000: one job pinned to ``cpu``, ``iodepth`` swept,
    the table returned with ``qd``, ``repeat`` and ``cycles_per_io`` columns."""
    from .analysis import add_cycles_per_io
    from .validate import positive_ints

    queue_depths = positive_ints("queue_depths", queue_depths)
    table = sweep({"iodepth": queue_depths}, target=target, base=options, cpus=[cpu],
                  repeats=repeats, runs_dir=runs_dir or new_sweep_dir("qd-knee"),
                  aliases={"iodepth": "qd"})
    return add_cycles_per_io(table).sort_values(["qd", "repeat"], ignore_index=True)


def per_core(target: Target, queue_depths: Sequence[int] = (1, 16, 128), *, bs: str = "512",
             cpu: int = 0, runtime_s: float = 2.0, polled: bool = False,
             runs_dir: str | Path | None = None) -> pd.DataFrame:
    """Seed 002's table: IOPS and mean latency of one core at each queue depth, random
    ``bs`` reads with registered buffers and files, through t/io_uring and fio side by side.

    fio's mean latency is measured (lat_mean_us); t/io_uring's is Little's law on a full
    queue (QD / IOPS, ``lat_mean_us_littles``), labelled as the estimate it is."""
    from .analysis import add_cycles_per_io
    from .errors import ToolMissing
    from .runner import measure_tio
    from .fio import fio_time
    from .tio import binary
    from .validate import check_cpus, positive_ints

    queue_depths = positive_ints("queue_depths", queue_depths)
    check_cpus([cpu])
    runtime = fio_time(runtime_s)
    runs_dir = Path(runs_dir or new_sweep_dir("per-core"))
    have_tio = True
    try:
        binary()
    except ToolMissing:
        have_tio = False
    for qd in queue_depths:
        batch = min(32, qd)
        fio_opts = {"rw": "randread", "bs": bs, "ioengine": "io_uring", "direct": 1, "iodepth": qd,
                    "fixedbufs": 1, "registerfiles": 1, "norandommap": 1, "hipri": int(polled),
                    "iodepth_batch_submit": batch, "iodepth_batch_complete": batch,
                    "runtime": runtime}
        measure(fio_opts, target, cpus=[cpu], runs_dir=runs_dir, swept={"qd": qd, "tool": "fio"},
                label=f"fio-qd{qd}")
        if have_tio:
            measure_tio({"d": qd, "b": bs, "p": int(polled), "B": 1, "F": 1, "s": batch, "c": batch,
                         "r": max(2, int(runtime_s))}, target, cpus=[cpu], runs_dir=runs_dir,
                        swept={"qd": qd, "tool": "t/io_uring"}, label=f"tio-qd{qd}")
    table = add_cycles_per_io(load_runs(runs_dir))
    table["mean_lat_us"] = table["lat_mean_us"].fillna(table.get("lat_mean_us_littles"))
    table["mean_lat_source"] = table["tool"].map({"fio": "fio lat_ns mean (measured)",
                                                  "t/io_uring": "QD / IOPS (Little's law estimate)"})
    return table.sort_values(["qd", "tool"], ignore_index=True)
