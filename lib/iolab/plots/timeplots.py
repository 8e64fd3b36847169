"""Pictures of a run over time (``iolab.read.series``): IOPS and completion latency per interval with
the samplers beneath on one time axis, and a latency heatmap of fio's histogram log.

    s = series.read_series(run_dir)
    timeplots.over_time(s, timeline.find_steady(s), timeline.find_stalls(s))
    timeplots.latency_heatmap(s)

Like the standard figures (``iolab.plots.common``): axis labels carry units (``iolab.core.columns``),
a source line under each figure says where the numbers came from (``common.details(fig)`` in full),
fallback sources are named (a frequency from /proc/cpuinfo is a nominal clock), and each function
returns its Figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm

from ..core.columns import label
from ..core.errors import InputError
from ..read.fiojson import percentiles_from_bins
from ..read.series import Series
from ..stats.timeline import STALL_FRACTION, Steady, heatmap
from .common import NOTEBOOK_WIDTH_IN, count_axis, log_count_axis, source_note

LEGEND_IN = 1.4  # inches the legends right of the axes add to the saved (tight) figure

COLORS = {"read": "#1f77b4", "write": "#ff7f0e", "trim": "#8c564b", "total": "#333333"}
CPU_COLORS = {
    "cpu_busy_pct": "#2ca02c",
    "cpu_steal_pct": "#d62728",
    "cpu_iowait_pct": "#9467bd",
    "host_steal_pct": "#d62728",
}
STALL_COLOR, STEADY_COLOR, WARMUP_COLOR = "#e31a1c", "#2ca02c", "#bbbbbb"
TIME_LABEL = "time since fio's first job started (s)"


def _log_latency_axis(ax) -> None:
    """A log latency axis read in plain numbers: 50, 100, 200, 500, 1,000 µs."""
    ax.set_yscale("log")
    log_count_axis(ax, "y", subs=(1.0, 2.0, 5.0))


def _stairs(ax, frame: pd.DataFrame, col: str, **kw):
    """``col`` per interval as steps over [t_start_s, t_s] (a gap where intervals do not touch)."""
    frame = frame.sort_values("t_s")
    values = frame[col].to_numpy(dtype=float)
    starts, ends = frame["t_start_s"].to_numpy(dtype=float), frame["t_s"].to_numpy(dtype=float)
    if np.allclose(starts[1:], ends[:-1], atol=1e-6):
        return ax.stairs(values, np.concatenate([[starts[0]], ends]), baseline=None, **kw)
    xs = np.column_stack([starts, ends, np.full(len(ends), np.nan)]).ravel()
    ys = np.column_stack([values, values, np.full(len(ends), np.nan)]).ravel()
    return ax.plot(xs, ys, **kw)[0]


def over_time(s: Series, steady: Steady | None = None, stalls: pd.DataFrame | None = None, title: str | None = None):
    """IOPS per interval (per direction, and their total), clat p50 and p99 per interval (from
    fio's histogram log, log scale), and beneath them on the same time axis the samplers: the
    pinned CPUs' busy, steal and iowait (and the machine's steal), the frequency and, when the
    thread-state sampler ran, the threads running (R) and waiting uninterruptibly (D) per tick.
    The steady part is shaded green (its method in the legend), the warm-up grey, stalls red
    across every panel. Returns the Figure."""
    by_dir = s.totals(by_direction=True)
    total = s.totals()
    samplers = s.samplers
    has_threads = any(c.startswith("threads_") for c in samplers.columns)
    has_freq = "cpu_freq_mhz" in samplers and samplers["cpu_freq_mhz"].notna().any()
    heights = (
        [3.0, 2.3]
        + ([1.9] if not samplers.empty else [])
        + ([1.1] if has_freq else [])
        + ([1.3] if has_threads else [])
    )
    fig, axes = plt.subplots(
        len(heights),
        1,
        sharex=True,
        figsize=(NOTEBOOK_WIDTH_IN - LEGEND_IN, 1.55 * sum(heights) + 1.2),
        gridspec_kw={"height_ratios": heights, "hspace": 0.12},
    )
    ax_iops, ax_lat = axes[0], axes[1]
    directions = list(dict.fromkeys(by_dir["direction"]))
    for d in directions:
        _stairs(ax_iops, by_dir[by_dir["direction"] == d], "iops", color=COLORS.get(d, None), lw=1.6, label=f"{d} IOPS")
    if len(directions) > 1:
        _stairs(ax_iops, total, "iops", color=COLORS["total"], lw=1.2, ls="--", label="total IOPS")
    median = float(np.nanmedian(total["iops"]))
    ax_iops.axhline(median, color="0.45", lw=0.8, ls=":", label=f"median {median:,.0f} IOPS")
    ax_iops.axhline(
        STALL_FRACTION * median,
        color=STALL_COLOR,
        lw=0.8,
        ls=":",
        label=f"stall threshold ({100 * STALL_FRACTION:g} % of the median)",
    )
    ax_iops.set_ylabel(label("iops"))
    ax_iops.set_ylim(0, 1.3 * np.nanmax(total["iops"]))
    count_axis(ax_iops)

    have_pct = s.table["clat_p99_us"].notna().any()
    for d in directions:
        per = _pooled_percentiles(s, d)
        if have_pct:
            _stairs(ax_lat, per, "clat_p99_us", color=COLORS.get(d), lw=1.5, label=f"{d} clat p99")
            _stairs(ax_lat, per, "clat_p50_us", color=COLORS.get(d), lw=1.0, ls="--", label=f"{d} clat p50")
        else:
            _stairs(
                ax_lat,
                by_dir[by_dir["direction"] == d],
                "clat_mean_us",
                color=COLORS.get(d),
                lw=1.5,
                label=f"{d} clat mean (no histogram log: no percentiles)",
            )
    _log_latency_axis(ax_lat)
    shown = s.table[["clat_p50_us", "clat_p99_us"] if have_pct else ["clat_mean_us"]].to_numpy(dtype=float)
    if np.isfinite(shown).any():
        ax_lat.set_ylim(np.nanmin(shown) / 1.5, np.nanmax(shown) * 1.5)
    ax_lat.set_ylabel("clat (µs, log scale)")

    panels = list(axes[2:])
    if not samplers.empty:
        ax_cpu = panels.pop(0)
        for col, name, style in (
            ("cpu_busy_pct", "busy", "-"),
            ("cpu_steal_pct", "steal", "-"),
            ("cpu_iowait_pct", "iowait", "-"),
            ("host_steal_pct", "steal, whole machine", ":"),
        ):
            if col in samplers and samplers[col].notna().any():
                _stairs(ax_cpu, samplers, col, color=CPU_COLORS[col], lw=1.3, ls=style, label=name)
        ax_cpu.set_ylim(-3, 105)
        ax_cpu.set_ylabel("pinned CPUs (%)")
        if has_freq:
            ax_f = panels.pop(0)
            src = str(samplers["freq_source"].iloc[0]) if "freq_source" in samplers else "?"
            _stairs(
                ax_f,
                samplers,
                "cpu_freq_mhz",
                color="#17becf",
                lw=1.3,
                label=f"frequency ({src}{': nominal, no cpufreq' if src == 'proc_cpuinfo' else ''})",
            )
            lo, hi = samplers["cpu_freq_mhz"].min(), samplers["cpu_freq_mhz"].max()
            pad = max(50.0, 0.1 * (hi - lo))
            ax_f.set_ylim(lo - pad, hi + pad)
            ax_f.set_ylabel(label("cpu_freq_mhz").replace("CPU frequency", "freq"))
            count_axis(ax_f)
        if has_threads:
            ax_t = panels.pop(0)
            for col in sorted(c for c in samplers.columns if c.startswith("threads_")):
                state = col.removeprefix("threads_")
                _stairs(
                    ax_t,
                    samplers,
                    col,
                    lw=1.3,
                    label=f"threads in {state}" + {"R": " (running)", "D": " (uninterruptible, I/O)"}.get(state, ""),
                )
            ax_t.set_ylabel("threads per tick")
            ax_t.set_ylim(bottom=0)

    x0 = min(0.0, float(samplers["t_start_s"].min()) if not samplers.empty else 0.0)
    x1 = max(float(total["t_s"].max()), float(samplers["t_s"].max()) if not samplers.empty else 0.0)
    for ax in axes:
        ax.set_xlim(x0, x1)
        ax.grid(axis="y", color="0.9", lw=0.6)
        _mark(ax, steady, stalls, s, first=ax is ax_iops)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False, borderaxespad=0)
    axes[-1].set_xlabel(TIME_LABEL)
    fig.suptitle(
        title or "IOPS and completion latency over time, the samplers beneath on the same axis", fontsize=11, y=0.995
    )
    note, more = _source(s, steady)
    source_note(axes[-1], note, details=more)
    fig.subplots_adjust(top=0.96, bottom=0.09 + 0.5 / fig.get_figheight(), left=0.08, right=0.77)
    return fig


def _pooled_percentiles(s: Series, direction: str) -> pd.DataFrame:
    """clat p50/p99 per interval of one direction over all its jobs and hosts (their summed
    histograms, fio's rule): one job's row alone is not the direction's percentile."""
    rows = []
    t = s.table[s.table["direction"] == direction]
    for t_s, part in t.groupby("t_s"):
        summed = s.bins[part.index.to_numpy()].sum(axis=0)
        nz = np.nonzero(summed)[0]
        got = (
            percentiles_from_bins({str(int(s.bin_ns[j])): int(summed[j]) for j in nz}, (50.0, 99.0)) if len(nz) else {}
        )
        rows.append(
            {
                "t_start_s": part["t_start_s"].min(),
                "t_s": t_s,
                "clat_p50_us": got.get(50.0, np.nan) / 1000.0,
                "clat_p99_us": got.get(99.0, np.nan) / 1000.0,
            }
        )
    return pd.DataFrame(rows)


def _mark(ax, steady: Steady | None, stalls: pd.DataFrame | None, s: Series, first: bool) -> None:
    """fio's start (a vertical line), warm-up (grey) and steady part (green) from ``steady``,
    stalls (red), the run's tail that fio's logs leave out (hatched); legend entries on the
    top panel only."""
    end = float(s.table["t_s"].max())
    ax.axvline(0, color="0.3", lw=0.8, label="fio's jobs start" if first else None)
    runtime = float(s.coverage["runtime_s"].max()) if len(s.coverage) else float("nan")
    if runtime == runtime and runtime > end + 1e-3:
        ax.axvspan(
            end,
            runtime,
            facecolor="none",
            edgecolor="0.78",
            hatch="//",
            lw=0,
            label="fio ran on: not in its interval logs" if first else None,
        )
    if steady is not None and steady.reached and steady.from_s is not None:
        if steady.from_s > 0:
            ax.axvspan(
                0,
                steady.from_s,
                color=WARMUP_COLOR,
                alpha=0.18,
                lw=0,
                label=f"warm-up ({steady.from_s:g} s)" if first else None,
            )
        ax.axvspan(
            steady.from_s,
            end,
            color=STEADY_COLOR,
            alpha=0.07,
            lw=0,
            label=f"steady state ({steady.method})" if first else None,
        )
    for i, r in enumerate((stalls if stalls is not None else pd.DataFrame()).itertuples()):
        ax.axvspan(r.t_start_s, r.t_s, color=STALL_COLOR, alpha=0.16, lw=0, label="stall" if first and i == 0 else None)


def _source(s: Series, steady: Steady | None) -> tuple[str, str]:
    """The figure's source in short (the logs, the samplers, their clock, what the logs leave
    out, a nominal frequency) and in detail (how the lines are made, how many of fio's IOs the
    logs hold, how the steady part was found)."""
    cov = s.coverage
    covered = (
        f"the logs hold {cov['series_ios'].sum():,.0f} of fio's {cov['fio_ios'].sum():,.0f} IOs"
        if cov["fio_ios"].notna().all()
        else ""
    )
    uncovered = cov["uncovered_s"].max() if len(cov) and cov["fio_ios"].notna().all() else 0
    short = [
        f"{s.fio_version or 'fio'} logs every {s.log_ms} ms"
        + (f" (the last {uncovered:.2f} s not in fio's interval logs)" if uncovered > 0 else "")
    ]
    sampled = ""
    if not s.samplers.empty:
        step = float(np.median(s.samplers["t_s"] - s.samplers["t_start_s"]))
        src = s.samplers["freq_source"].iloc[0] if "freq_source" in s.samplers else "?"
        short.append(f"samplers every {step:.2f} s")
        sampled = f"/proc/stat busy, steal, iowait of the pinned CPUs and the frequency ({src}) every {step:.2f} s"
    short.append(
        {
            "monotonic": "one clock (CLOCK_MONOTONIC)",
            "unix": "fio's Unix-time stamps placed on the samplers' clock",
        }.get(s.time_base, "fio's start on the samplers' clock estimated")
    )
    if not s.samplers.empty and src == "proc_cpuinfo":
        short[-1] += "; nominal frequency (/proc/cpuinfo, no cpufreq)"
    details = "; ".join(
        t
        for t in (
            "IOPS log (sum over jobs), clat p50/p99 from the histogram log's summed bins by fio's percentile rule",
            sampled,
            covered,
            steady.text if steady is not None else "",
        )
        if t
    )
    return ", ".join(short), details


def latency_heatmap(s: Series, direction: str | None = None, per_doubling: int = 4, title: str | None = None):
    """A latency heatmap (Brendan Gregg's): time on x, completion latency on a log y axis,
    colour the number of IOs that completed in each interval with that latency — from fio's
    histogram log, summed over jobs and hosts; one panel per direction (or the one named).
    The interval's p99 is drawn over it. Empty cells are white. Returns the Figure."""
    directions = [direction] if direction else list(dict.fromkeys(s.table["direction"]))
    directions = [d for d in directions if s.bins[(s.table["direction"] == d).to_numpy()].any()]
    if not directions:
        raise InputError(
            f"{s.run_dir}: no histogram-log IOs to draw; the run needs fio's write_hist_log "
            "(iolab asks for it with log_ms)"
        )
    fig, axes = plt.subplots(
        len(directions), 1, figsize=(NOTEBOOK_WIDTH_IN, 3.9 * len(directions) + 1.1), squeeze=False, sharex=True
    )
    grids = {d: heatmap(s, d, per_doubling) for d in directions}
    vmax = max(g.counts.max() for g in grids.values())
    for ax, d in zip(axes[:, 0], directions):
        h = grids[d]
        t_edges, lat_edges, grid = h.t_edges, h.lat_edges_us, h.counts
        mesh = ax.pcolormesh(
            t_edges,
            lat_edges,
            np.ma.masked_equal(grid, 0),
            cmap="inferno_r",
            norm=LogNorm(vmin=1, vmax=max(vmax, 2)),
            shading="flat",
        )
        per = _pooled_percentiles(s, d)
        ax.plot(
            per["t_s"] - (per["t_s"] - per["t_start_s"]) / 2,
            per["clat_p99_us"],
            color="#00b7eb",
            lw=1.4,
            marker=".",
            ms=3,
            label="p99 of the interval",
        )
        _log_latency_axis(ax)
        ax.set_ylim(lat_edges[0], lat_edges[-1])
        ax.set_ylabel("clat (µs, log scale)")
        ax.set_title(
            f"{d}: IOs per interval and latency bucket"
            + (f" ({h.below:,} of {h.total:,} IOs faster than {lat_edges[0]:.3g} µs not drawn)" if h.below else ""),
            fontsize=9.5,
        )
        ax.legend(loc="upper right", fontsize=7.5)
        bar = fig.colorbar(mesh, ax=ax, pad=0.01)
        bar.set_label("IOs in the interval (log scale)", fontsize=8)
        log_count_axis(bar.ax, "y", subs=(1.0,))
    axes[-1, 0].set_xlabel(TIME_LABEL)
    fig.suptitle(title or "Completion latency heatmap from fio's histogram log", fontsize=11)
    source_note(
        axes[-1, 0],
        f"{s.fio_version or 'fio'} clat histogram log every {s.log_ms} ms, summed over jobs and hosts",
        details=f"log_hist_msec; fio's 1856 bins (64 per doubling) regrouped {per_doubling} per doubling; "
        f"{s.note().split('. ')[0]}",
    )
    fig.subplots_adjust(bottom=0.1 + 0.5 / fig.get_figheight(), top=0.9, hspace=0.25)
    return fig
