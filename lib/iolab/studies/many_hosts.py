"""One job on many hosts at once (fio client/server, ``iolab.measure.clients``): seed 001's question
of one big box against many, and a fleet's qualification — each host side by side, the
pooled distribution, the slowest host and why, and how the aggregate scales with hosts.

``host_scaling`` runs the job on the first 1, 2, ... N hosts (``counts``), in rounds of
every count (shuffled with ``seed``) after one discarded warm-up run, ``repeats`` rounds.
Its table has a row per host, direction and run, and a ``pooled`` row per run (IOPS
summed, percentiles from summed bins), with ``hosts_n`` and ``repeat`` columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError
from ..core.runfolders import not_found, run_folders
from ..core.validate import positive_ints
from ..machine.hosts import Host
from ..machine.target import Target
from ..measure.campaign import Rounds, execute, ordered, paths_of, with_ramp
from ..measure.options import MeasureOptions
from ..measure.planned import PlannedRun
from ..measure.sweep import new_sweep_dir
from ..read.hosttable import POOLED, host_snapshot
from ..read.run import RunFolder
from ..runs.runcache import load_runs
from ..stats import repeat_stats

SNAPSHOT_KEYS = ("kernel", "cpu_model", "governor", "smt", "turbo", "fio_version", "queue", "cpus_online")


def host_scaling(
    target: Target,
    hosts: Sequence[Host],
    options: Mapping[str, Any],
    *,
    counts: Sequence[int] | None = None,
    cpus: list[int] | None = None,
    rounds: Rounds | Mapping[str, Any] | None = None,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """``options`` on the first ``k`` hosts for each ``k`` of ``counts`` (default 1..N),
    pinned to ``cpus`` on each, in ``rounds`` (default: 3 repeats, each round shuffled, after
    one discarded warm-up run; module docstring), through the one campaign loop
    (``iolab.measure.campaign.execute``): a re-run into the same ``runs_dir`` runs only what
    has no "ok" run. ``how``: how each run is measured (``MeasureOptions``)."""
    rounds = Rounds.of(rounds, repeats=3, order="random", warmup="run")
    hosts = list(hosts)
    counts = positive_ints("counts", list(counts or range(1, len(hosts) + 1)))
    if max(counts) > len(hosts):
        raise InputError(f"counts go up to {max(counts)} hosts but {len(hosts)} were given")
    options = with_ramp(options, rounds.warmup_kind())
    runs = plan_hosts(target, hosts, options, counts, cpus, rounds)
    runs_dir = Path(runs_dir or new_sweep_dir("hosts"))
    done = execute(runs, runs_dir, rounds=rounds, how=how, progress="runs on hosts")
    return load_runs(paths_of(runs, done)).sort_values(["hosts_n", "repeat", "host"], ignore_index=True)


def plan_hosts(
    target: Target,
    hosts: Sequence[Host],
    options: Mapping[str, Any],
    counts: Sequence[int],
    cpus: list[int] | None,
    rounds: Rounds,
) -> list[PlannedRun]:
    """The planned runs of ``host_scaling``: one cell per host count, ``rounds.repeats`` each."""
    runs = [
        PlannedRun(
            options,
            target,
            {"hosts_n": k, "repeat": repeat},
            f"hosts{k}-r{repeat}",
            cell=i,
            cpus=cpus,
            hosts=tuple(hosts[:k]),
            engine="hosts",
        )
        for i, k in enumerate(counts)
        for repeat in range(rounds.repeats)
    ]
    return ordered(runs, rounds.order, rounds.seed)


def per_host(table: pd.DataFrame, metric: str = "iops") -> pd.DataFrame:
    """Each host's mean ``metric`` over the runs on the most hosts (and the pooled row's),
    with its 95 % t interval and repeats; hosts that failed in some run are counted."""
    runs = table[(table["hosts_n"] == table["hosts_n"].max()) & (table["direction"] != "none")]
    rows = []
    for host, g in runs.groupby("host", sort=False):
        lo, hi = repeat_stats.interval(g[metric], metric)
        rows.append({"host": host, f"{metric}_mean": g[metric].mean(), "ci_low": lo, "ci_high": hi, "repeats": len(g)})
    out = pd.DataFrame(rows)
    failed = table[(table["hosts_n"] == table["hosts_n"].max()) & (table.get("host_status") == "failed")]
    out["failed_runs"] = out["host"].map(failed["host"].value_counts()).fillna(0).astype(int)
    return out


def slowest_host(table: pd.DataFrame, metric: str = "iops") -> dict[str, Any]:
    """The host with the lowest mean ``metric`` on the most hosts, whether that is sure (its
    95 % interval lies below every other host's) and how its system differs from the
    others' in the last such run of the table (``differences``), in words (``text``)."""
    hosts = per_host(table, metric)
    hosts = hosts[hosts["host"] != POOLED]
    if len(hosts) < 2:
        return {
            "host": None,
            "sure": False,
            "differences": {},
            "text": "fewer than two hosts reported: no slowest host",
        }
    slow = hosts.loc[hosts[f"{metric}_mean"].idxmin()]
    others = hosts[hosts["host"] != slow["host"]]
    sure = bool((slow["ci_high"] < others["ci_low"]).all())
    last = table[table["hosts_n"] == table["hosts_n"].max()].iloc[[-1]]
    folders, missing = run_folders(last)
    if missing:
        raise InputError(not_found(missing))
    diffs = snapshot_differences(folders[0])
    mine = diffs[slow["host"]].to_dict() if slow["host"] in diffs else {}
    fastest = hosts[f"{metric}_mean"].max()
    gap = 100 * (1 - slow[f"{metric}_mean"] / fastest)
    how = (
        "its 95 % interval lies below every other host's"
        if sure
        else "but the intervals overlap: with these repeats it is not surely slower"
    )
    why = (
        ("; its system differs in " + ", ".join(f"{k} = {v}" for k, v in mine.items()))
        if mine
        else "; its system snapshot does not differ from the others' (kernel, governor, scheduler, CPU, fio)"
    )
    text = f"slowest host: {slow['host']}, {gap:.1f} % below the fastest ({how}){why}"
    return {"host": slow["host"], "sure": sure, "gap_pct": gap, "differences": mine, "text": text}


def snapshot_differences(run_dir: str | Path) -> pd.DataFrame:
    """The snapshot entries (``SNAPSHOT_KEYS``, flattened) whose values differ between the
    hosts of a client/server run folder: one row per entry, one column per host."""
    run_dir = Path(run_dir)
    hosts = RunFolder(run_dir).hosts()
    flat = {
        h["name"]: _flatten({k: v for k, v in host_snapshot(run_dir, h["folder"]).items() if k in SNAPSHOT_KEYS})
        for h in hosts
    }
    frame = pd.DataFrame(flat)
    if frame.empty:
        return frame
    differs = frame.astype(str).nunique(axis=1) > 1
    return frame[differs]


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v if not isinstance(v, list) else ",".join(map(str, v))
    return out


def scaling(table: pd.DataFrame, metric: str = "iops") -> pd.DataFrame:
    """The aggregate (pooled; the one host's row on one host) ``metric`` per number of
    hosts: mean, 95 % t interval, repeats, and the efficiency against k × the mean on one."""
    rows = table[table["direction"] != "none"]
    single = rows[rows["hosts_n"] == 1]
    agg = pd.concat([single, rows[(rows["hosts_n"] > 1) & (rows["host"] == POOLED)]])
    out = []
    for k, g in agg.groupby("hosts_n"):
        lo, hi = repeat_stats.interval(g[metric], metric)
        out.append({"hosts_n": k, f"{metric}_mean": g[metric].mean(), "ci_low": lo, "ci_high": hi, "repeats": len(g)})
    frame = pd.DataFrame(out)
    one = frame.loc[frame["hosts_n"] == 1, f"{metric}_mean"]
    frame["efficiency_pct"] = (
        100 * frame[f"{metric}_mean"] / (frame["hosts_n"] * one.iloc[0]) if len(one) else float("nan")
    )
    return frame
