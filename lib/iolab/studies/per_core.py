"""Seed 002's table (Jens Axboe, "io_uring and Optane2"): IOPS and mean latency of one core
at QD1, QD16 and QD128, random 512 B reads with registered buffers and files, through fio's
t/io_uring and fio itself, side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.columns import label
from ..core.errors import ToolMissing
from ..core.readable import interval_text
from ..core.validate import check_cpus, fio_seconds, fio_time_text, positive_ints
from ..machine.target import Target
from ..measure.campaign import Rounds
from ..measure.options import MeasureOptions
from ..measure.sweep import Grid, ask_ahead, new_sweep_dir, sweep
from ..read.tio import binary
from ..stats import repeat_stats
from ..stats.cycles import add_cycles_per_io

LATENCY_SOURCE = {"fio": "measured (fio's lat_ns)", "t/io_uring": "QD ÷ IOPS (Little's law estimate)"}


def have_tio(path: str | Path | None = None) -> bool:
    """Whether fio's t/io_uring is built (``make tio``), or is at ``path``."""
    return tio_missing(path) is None


def tio_missing(path: str | Path | None = None) -> str | None:
    """Why t/io_uring cannot run, in words with what to do (None: it can): not built (``make
    tio``), or not at the ``path`` given. ``per_core`` then measures fio alone."""
    try:
        binary(path)
    except ToolMissing:
        if path:
            return f"t/io_uring is not at {path}: give the path of a built one, or leave it out and run `make tio`"
        return (
            "t/io_uring not built: run `make tio` (it builds fio's t/io_uring from fio's source in seconds; "
            "`iolab tio` then runs it alone), then run this again"
        )
    return None


JOB = {"bs": "512", "runtime": "2s"}  # seed 002: 512 B random reads


def per_core(
    target: Target,
    queue_depths: Sequence[int] = (1, 16, 128),
    job: Mapping[str, Any] | None = None,
    *,
    cpu: int = 0,
    polled: bool = False,
    rounds: Rounds | Mapping[str, Any] | None = None,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per (tool, qd) and repeat (``rounds.repeats`` runs of each, back to back;
    ``job``: fio options over seed 002's, ``JOB`` — 512 B random reads for 2 s; t/io_uring's
    block size and seconds follow its ``bs`` and ``runtime``;
    ``summary`` gives their means and intervals). fio's mean latency is measured
    (``lat_mean_us``); t/io_uring's is Little's law on a full queue (QD / IOPS,
    ``lat_mean_us_littles``), labelled as the estimate it is (``mean_lat_source``). Without
    t/io_uring only fio runs. ``how``: how each run is measured (``MeasureOptions``; its
    ``allow_destructive`` concerns the fio runs: t/io_uring only reads; its ``tio`` the
    t/io_uring binary, ``tio_missing`` says why it cannot run)."""
    queue_depths = positive_ints("queue_depths", queue_depths)
    rounds = Rounds.of(rounds)
    check_cpus([cpu])
    job = {**JOB, **(job or {})}
    bs, runtime = job["bs"], fio_time_text(job["runtime"])
    runtime_s = fio_seconds(runtime)
    common = {"target": target, "cpus": [cpu], "rounds": rounds, "how": how, "progress": None}
    common["runs_dir"] = runs_dir or new_sweep_dir("per-core")
    tio, tables = have_tio(MeasureOptions.of(how).tio), []
    fio_grids = {qd: _fio_grid(qd, bs, runtime, polled, job) for qd in queue_depths}
    ask_ahead([{"grid": grid, "target": target, "cpus": [cpu], "rounds": rounds} for grid in fio_grids.values()], how)
    for qd in queue_depths:
        batch = min(32, qd)
        tables.append(sweep(fio_grids[qd], **common))
        if tio:
            flags = {
                "d": qd,
                "b": bs,
                "p": int(polled),
                "B": 1,
                "F": 1,
                "s": batch,
                "c": batch,
                "r": max(2, int(runtime_s)),
            }
            tables.append(
                sweep(
                    Grid({}, base=flags, tags={"qd": qd, "tool": "t/io_uring"}, label=f"tio-qd{qd}", tool="t/io_uring"),
                    **common,
                )
            )
    table = add_cycles_per_io(pd.concat(tables, ignore_index=True))
    table["mean_lat_us"] = table["lat_mean_us"].fillna(table.get("lat_mean_us_littles"))
    table["mean_lat_source"] = table["tool"].map(LATENCY_SOURCE)
    return table.sort_values(["qd", "tool"], kind="stable", ignore_index=True)


def _fio_grid(qd: int, bs: Any, runtime: str, polled: bool, job: Mapping[str, Any]) -> Grid:
    """fio's run at depth ``qd``: seed 002's job, batched as the author's, ``job`` on top."""
    batch = min(32, qd)
    fio = {
        "rw": "randread",
        "bs": bs,
        "ioengine": "io_uring",
        "direct": 1,
        "iodepth": qd,
        "fixedbufs": 1,
        "registerfiles": 1,
        "norandommap": 1,
        "hipri": int(polled),
        "iodepth_batch_submit": batch,
        "iodepth_batch_complete": batch,
        "runtime": runtime,
        **{k: v for k, v in job.items() if k not in ("bs", "runtime")},
    }
    return Grid({}, base=fio, tags={"qd": qd, "tool": "fio"}, label=f"fio-qd{qd}")


CPU = ("own_cpu_pct", "cpu_busy_pct")  # the tool's own share of its core, and the core's busy share
OWN_WORDS = "its own CPU (%)"  # a column of either tool (columns.label says "fio's")


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (tool, qd) of a ``per_core`` table: ``n`` runs, IOPS, mean latency and the
    core's CPU (the tool's own share, ``own_cpu_pct``, and the core's busy share from all
    programs, ``cpu_busy_pct``: seed 002's "per core" is one core's work) as ``<metric>_mean``
    with the 95 % interval over the repeats (``<metric>_ci_low``/``_high``,
    ``iolab.stats.repeat_stats.summarise``: NaN with one run) and the latency's source."""
    cpu = [m for m in CPU if m in table and table[m].notna().any()]  # t/io_uring's too: the process sampler
    cells = repeat_stats.summarise(table, ["tool", "qd"], metrics=["iops", "mean_lat_us", *cpu])
    source = table.drop_duplicates("tool").set_index("tool")["mean_lat_source"]
    cells["mean_lat_source"] = cells["tool"].map(source)
    return cells.sort_values(["qd", "tool"], ignore_index=True)


def readable(summary: pd.DataFrame, missing: str | None = None) -> pd.DataFrame:
    """A ``summary`` as a write-up shows it (``repeat_stats.summary_table``: each figure "mean [low,
    high]" in one cell, a note), the tool's own share of its core in a column and the core's
    busy share from all programs in the note where it is more (by ``SHARED_PTS``: a loop
    device's worker, interrupts, other programs), the note of an estimated mean latency
    saying so; with ``missing`` (``tio_missing``), a t/io_uring row at each depth that says it
    did not run and why. (Both shares as columns made the table wider than a notebook.)"""
    shares = [c for c in summary if c.startswith(CPU) and c.endswith(("_mean", "_ci_low", "_ci_high"))]
    # a share of the one core in whole percent, never past all of it (a sampler's window is not fio's to the ms)
    whole = summary.assign(**{c: summary[c].clip(upper=100).round(0) for c in shares})
    busy = [c for c in whole if c.startswith("cpu_busy_pct_")]  # said in the note (_shared), not a column
    out = repeat_stats.summary_table(whole.drop(columns=["mean_lat_source", *busy]))
    out = out.rename(columns={label(CPU[0]) + end: OWN_WORDS + end for end in (" [95 % interval]", "")})
    estimated = summary["mean_lat_source"] != LATENCY_SOURCE["fio"]  # fio's is measured: said where it is not
    out["note"] = [
        "; ".join(x for x in (f"mean latency: {src}" if est else "", _shared(row), note) if x)
        for src, est, note, (_, row) in zip(
            summary["mean_lat_source"], estimated, out["note"], whole.iterrows(), strict=True
        )
    ]
    if missing:
        absent = out[out["tool"] == "fio"].assign(tool="t/io_uring", runs="0")
        absent[[c for c in out.columns if c not in ("tool", "runs", "note") and "queue depth" not in c]] = "–"
        absent["note"] = f"t/io_uring {_short(missing)}"
        out = pd.concat([out, absent]).sort_index(kind="stable").reset_index(drop=True)
    return out


SHARED_PTS = 10.0  # the core busier than the tool by this many points is said in a row's note


def _shared(row: pd.Series) -> str:
    """Where the core was busier than the tool: "the core busy 57 % [54, 60]: other work shared it"."""
    own, core = row.get("own_cpu_pct_mean"), row.get("cpu_busy_pct_mean")
    if pd.isna(own) or pd.isna(core) or core - own < SHARED_PTS:
        return ""
    low, high = row.get("cpu_busy_pct_ci_low"), row.get("cpu_busy_pct_ci_high")
    bound = " " + interval_text(f"{low:.0f}", f"{high:.0f}") if pd.notna(low) and pd.notna(high) else ""
    return f"the core busy {core:.0f} %{bound}: other work shared it"


def bars(summary: pd.DataFrame, missing: str | None = None) -> pd.DataFrame:
    """This machine's IOPS per tool and depth for ``plots.published.reference_bars`` (label,
    iops); with ``missing``, an empty t/io_uring bar at each depth labelled as not built."""
    local = pd.DataFrame(
        {
            "label": summary["tool"] + " QD" + summary["qd"].astype(int).astype(str) + " (this machine)",
            "iops": summary["iops_mean"],
        }
    )
    if missing:
        labels = [f"t/io_uring QD{qd}: {_short(missing)}" for qd in sorted(summary["qd"].astype(int).unique())]
        local = pd.concat([local, pd.DataFrame({"label": labels, "iops": float("nan")})], ignore_index=True)
    return local


def _short(missing: str) -> str:
    """``tio_missing``'s reason in a few words, for a table cell or a bar's label."""
    return "not built (make tio)" if "not built" in missing else "not at the path given"
