"""The figures of a study on many hosts (``iolab.studies.many_hosts``): each host side by
side, the latency distribution of each host and of all pooled, and the aggregate against the
number of hosts. Like the standard figures (``iolab.plots.common``): tidy frames in, units from the column registry, the
source of every number under the plot, the ``ax`` returned."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.columns import label
from ..read.fiojson import PERCENTILES
from ..read.hosttable import POOLED
from .common import axes_of, count_axis, keep_apart, log_count_axis, source_note


def per_host_bars(summary: pd.DataFrame, metric: str = "iops", ax=None, title: str | None = None):
    """Bars of each host's mean ``metric`` with its 95 % t interval (``many_hosts.per_host``);
    the pooled bar (when the metric is a latency: a sum of IOPS is on another scale) hatched."""
    ax = axes_of(ax)
    rows = (
        summary if not metric.startswith("iops") and not metric.startswith("bw") else summary[summary["host"] != POOLED]
    )
    mean = rows[f"{metric}_mean"].to_numpy(float)
    err = np.vstack([mean - rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float) - mean])
    err = np.where(np.isnan(err), 0, err)
    x = np.arange(len(rows))
    bars = ax.bar(x, mean, yerr=err, capsize=4, color="#1f77b4", edgecolor="black", linewidth=0.5)
    for bar, host in zip(bars, rows["host"]):
        if host == POOLED:
            bar.set_hatch("//")
            bar.set_facecolor("#aec7e8")
    ax.set_xticks(x)
    ax.set_xticklabels(rows["host"], rotation=20 if len(rows) > 4 else 0)
    ax.set_xlabel("host (fio server, as named)")
    ax.set_ylabel(label(metric))
    count_axis(ax)
    n = int(rows["repeats"].max()) if len(rows) else 0
    ax.set_title(title or f"{label(metric)} per host, all hosts running at once")
    source_note(
        ax,
        f"fio client/server json+ reports, mean of {n} run(s) per host with 95 % t interval",
        details="pooled: summed bins of every host (iolab.read.pool)",
    )
    return ax


def host_percentiles(run_rows: pd.DataFrame, kind: str = "clat", ax=None):
    """One run's latency percentiles (p50 ... p99.99) per host and pooled, on a nines axis."""
    ax = axes_of(ax)
    names = list(PERCENTILES)
    nines = -np.log10(1 - np.array(list(PERCENTILES.values())) / 100)
    rows = run_rows[run_rows["direction"] != "none"]
    for _, r in rows.iterrows():
        values = [r.get(f"{kind}_p{n}_us", np.nan) for n in names]
        pooled = r["host"] == POOLED
        ax.plot(
            nines,
            values,
            marker="o",
            lw=2.5 if pooled else 1.2,
            color="black" if pooled else None,
            ls="--" if pooled else "-",
            label=f"{r['host']} ({r['direction']})",
        )
    ax.set_xticks(nines)
    ax.set_xticklabels([f"p{PERCENTILES[n]:g}" for n in names])
    ax.set_yscale("log")
    log_count_axis(ax, "y")
    ax.set_xlabel("percentile")
    ax.set_ylabel(f"{kind} latency (µs)")
    ax.legend(fontsize=8)
    run = rows["run_id"].iloc[0] if "run_id" in rows and len(rows) else "?"
    ax.set_title(f"{kind} latency distribution per host and pooled")
    source_note(
        ax,
        f"run {run}: each host's json+ percentiles; pooled: from the hosts' summed bins",
        details="pooled: fio's percentile rule on the hosts' summed bins (not an average of percentiles)",
    )
    return ax


def host_scaling(scale: pd.DataFrame, metric: str = "iops", ax=None):
    """The aggregate ``metric`` (mean, 95 % interval) against the number of hosts
    (``many_hosts.scaling``), with the linear ideal from the one-host mean."""
    ax = axes_of(ax)
    mean, k = scale[f"{metric}_mean"].to_numpy(float), scale["hosts_n"].to_numpy(float)
    err = np.vstack([mean - scale["ci_low"].to_numpy(float), scale["ci_high"].to_numpy(float) - mean])
    ax.errorbar(k, mean, yerr=np.where(np.isnan(err), 0, err), marker="o", capsize=4, label="measured (pooled)")
    if (k == 1).any():
        ax.plot(k, k * mean[k == 1][0], ls=":", color="0.4", label="linear: hosts × one host")
    shares = [
        ax.annotate(f"{eff:.0f} %", (ki, m), textcoords="offset points", xytext=(6, -12), fontsize=8)
        for ki, m, eff in zip(k, mean, scale["efficiency_pct"])
    ]
    ax.set_xticks(k)
    ax.set_xlabel("hosts running the job at once")
    ax.set_ylabel(f"aggregate {label(metric)}")
    count_axis(ax)
    ax.legend(fontsize=8)
    ax.set_title(f"Aggregate {label(metric)} against hosts (% = of linear)")
    source_note(
        ax,
        f"fio client/server runs, IOPS summed over hosts; mean of {int(scale['repeats'].max())} runs "
        "per count with 95 % t interval",
    )
    keep_apart(shares, toward="down")
    return ax
