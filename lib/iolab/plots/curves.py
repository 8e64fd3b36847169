"""Curves and bars over a swept setting: IOPS and completion latency vs queue depth with the knee
(seed 000), the pinned CPUs' busy share and cycles per IO, any measured column by any setting.

Points and bars are means over repeats (a repeat is one run, its jobs' IOPS summed), bands and
whiskers their 95 % confidence interval (``iolab.stats.repeat_stats``); a cell whose value varies by
more than ``CV_LIMIT`` (coefficient of variation) over its repeats is marked unstable, its likely
cause in the source note.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..core import columns
from ..core.columns import label
from ..core.readable import readable_number, si_number
from ..stats import repeat_stats
from ..stats.frequency import FREQ_WORDS
from ..stats.knee import Knee
from ..stats.knee_interval import KneeEstimate
from .common import (
    CV_LIMIT,
    PALETTE,
    UNSTABLE,
    UNSTABLE_COLOR,
    axes_of,
    fit_width,
    flag_banner,
    source_note,
    thousands_axis,
    tick_text,
)


def _log2_qd_axis(ax, qds) -> None:
    """A log2 x axis ticked at the queue depths measured (1, 2, 4, ...), in plain numbers."""
    ax.set_xscale("log", base=2)
    ticks = sorted(set(int(q) for q in qds))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel(label("qd"))


def qd_curve(
    df: pd.DataFrame, knee: Knee | KneeEstimate | None = None, ax=None, x: str = "qd", title: str | None = None
):
    """IOPS (left axis) and clat p50/p99 (right axis, lat when fio gave no clat) vs queue
    depth, knee marked.

    Each line is the mean over repeats (``repeat_stats.summarise``: a repeat is one run, its jobs'
    IOPS summed); the band is the 95 % confidence interval of that mean (Student t for IOPS,
    bootstrap joined with t for the percentiles). A QD whose IOPS vary by more than 10 %
    (coefficient of variation) over its repeats is unstable, as pyperf warns: a red ring on
    its point, the likely cause in the source note. One run per QD: no band, nothing flagged.
    A ``KneeEstimate`` (``knee_interval.knee_with_interval``) also shades its bootstrap interval
    [low, high], widened by a quarter of a doubling each side so a one-QD interval stays
    visible, and names it in the legend: "knee QD 16 (90 % of resamples in [8, 16])"; the
    annotation names its method ("knee: QD 16, maximum power")."""
    own = ax is None  # a figure of its own: fitted to the notebook (a caller's grid is left alone)
    ax = axes_of(ax)
    cells = _cells(df, x, ["iops"])
    handles = [_mean_band(ax, cells, x, "iops", PALETTE["iops"], "o", "-", "IOPS")]
    handles += _unstable_rings(ax, cells, x, "iops")
    ax.set_ylabel(label("iops"))
    ax.set_ylim(0, 1.3 * np.nanmax(cells[["iops_mean", "iops_ci_high"]].to_numpy()))  # headroom: legend
    thousands_axis(ax)
    lat = ax.twinx()
    pcol = "clat" if df.get("clat_p99_us", pd.Series(dtype=float)).notna().any() else "lat"
    lat_cols = [c for c in (f"{pcol}_p50_us", f"{pcol}_p99_us") if c in df and df[c].notna().any()]
    if lat_cols:
        lat_cells = _cells(df, x, lat_cols)
        handles += [
            _mean_band(lat, lat_cells, x, col, PALETTE[col.split("_")[1]], "s", "--", f"{pcol} {col.split('_')[1]}")
            for col in lat_cols
        ]
    lat.set_ylabel(f"{pcol} latency (µs)")
    lat.set_ylim(bottom=0)
    thousands_axis(lat)  # the one tick format of counts and times, as the IOPS axis
    _log2_qd_axis(ax, df[x])
    ax.set_zorder(lat.get_zorder() + 1)  # IOPS, its rings and the legend over the latency lines
    ax.patch.set_visible(False)
    handles += _knee(ax, knee)
    ax.legend(
        handles=handles, labels=[_handle_label(h) for h in handles], loc="upper left", fontsize=8, framealpha=0.85
    )
    ax.set_title(textwrap.fill(title or "IOPS and completion latency vs queue depth", 90))
    knee_text = (
        knee.method
        if knee is not None and knee.x is not None
        else (f"no knee ({knee.reason})" if knee is not None else "")
    )
    version = f" ({df['fio_version'].iloc[0]})" if "fio_version" in df else ""
    bad = cells[cells["unstable"]] if cells.n.max() > 1 else cells.iloc[:0]
    source_note(
        ax,
        f"fio json+{version}; "
        + (f"band: 95 % CI over {_repeats(cells)} repeats" if cells.n.max() > 1 else "one run per QD: no band")
        + (f"; unstable (ringed): QD {', '.join(tick_text(v) for v in bad[x])}" if len(bad) else "")
        + ("; no knee (why: in the details)" if knee is not None and knee.x is None else ""),
        details="; ".join(
            t
            for t in (
                f"percentiles from {df['percentiles_from'].iloc[0]}" if "percentiles_from" in df else "",
                _qd_band_note(cells),
                _unstable_note(cells, x, "QD"),
                knee_text,
            )
            if t
        ),
    )
    flag_banner(ax, df)
    if own:
        fit_width(ax)
    return ax


def _qd_band_note(cells: pd.DataFrame) -> str:
    """What the QD curve's bands are: the IOPS interval's method, and the latency one's."""
    note = _band_note(cells, "QD", "iops")
    return note if cells.n.max() < 2 else f"band: {note}; latency bands: the same, bootstrap joined with Student t"


def _cells(df: pd.DataFrame, x: str, metrics: list[str], order=None) -> pd.DataFrame:
    """``repeat_stats.summarise`` of ``metrics`` per value of ``x`` (``<m>_mean``, ``<m>_ci_low``,
    ``<m>_ci_high``: the 95 % interval of the mean over repeats; ``<m>_cv_pct``; ``n``;
    ``unstable`` at CV > ``CV_LIMIT``), in ``order`` (else numbers sorted, else as they appear)."""
    cells = repeat_stats.summarise(df, by=[x], metrics=metrics, cv_threshold=CV_LIMIT)
    if order is not None:
        present = set(cells[x])
        return cells.set_index(x).loc[[v for v in order if v in present]].reset_index()
    if pd.api.types.is_numeric_dtype(cells[x]):
        return cells.sort_values(x, ignore_index=True)
    return cells


def _mean_band(ax, cells: pd.DataFrame, x: str, m: str, color: str, marker: str, linestyle: str, name: str):
    """The mean of ``m`` per cell as a line and its 95 % interval as a band (gid ``<m> band``;
    gaps where a cell has one run). Returns the legend handle: the line, or (band, line)."""
    (line,) = ax.plot(
        cells[x], cells[f"{m}_mean"], marker=marker, linestyle=linestyle, color=color, markersize=5, label=name
    )
    if cells[f"{m}_ci_low"].isna().all():
        return line
    band = ax.fill_between(
        cells[x], cells[f"{m}_ci_low"], cells[f"{m}_ci_high"], color=color, alpha=0.2, linewidth=0, gid=f"{m} band"
    )
    return band, line


def _unstable_rings(ax, cells: pd.DataFrame, x: str, m: str) -> list:
    """A hollow red ring around each unstable cell's mean (gid ``unstable``); returns its
    legend handle (a ring of legend size)."""
    bad = cells[cells["unstable"]]
    if bad.empty:
        return []
    ax.scatter(
        bad[x],
        bad[f"{m}_mean"],
        s=200,
        facecolors="none",
        edgecolors=UNSTABLE_COLOR,
        linewidths=1.8,
        zorder=5,
        gid="unstable",
        label=UNSTABLE,
    )
    return [
        Line2D(
            [],
            [],
            linestyle="none",
            marker="o",
            markersize=9,
            markerfacecolor="none",
            markeredgecolor=UNSTABLE_COLOR,
            markeredgewidth=1.8,
            label=UNSTABLE,
        )
    ]


def _knee(ax, knee: Knee | KneeEstimate | None) -> list:
    """The knee's line, its interval band (a ``KneeEstimate`` with one) and its annotation;
    returns the legend handle, if any."""
    if knee is None or knee.x is None:
        return []
    estimate = isinstance(knee, KneeEstimate)
    handles = []
    if estimate and knee.low is not None:
        pad = 2**0.25
        handles.append(
            ax.axvspan(
                knee.low / pad, knee.high * pad, color=PALETTE["knee"], alpha=0.18, linewidth=0, label=knee.label()
            )
        )
    vline = ax.axvline(
        knee.x,
        color=PALETTE["knee"],
        linestyle=":",
        linewidth=1.5,
        label=knee.label() if estimate and knee.low is None else None,
    )
    if estimate and knee.low is None:
        handles.append(vline)
    ax.annotate(
        f"knee: QD {knee.x:g}"
        + (f", {knee.method_name}" if estimate else "")
        + f"\n{knee.y:,.0f} IOPS"
        + (" (median)" if estimate else ""),
        xy=(knee.x, knee.y),
        xytext=(-8, -30) if _right_half(ax, knee.x) else (8, -30),  # the text stays inside the axes
        ha="right" if _right_half(ax, knee.x) else "left",
        textcoords="offset points",
        fontsize=9,
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
    )
    return handles


def _right_half(ax, x: float) -> bool:
    """Whether ``x`` lies in the right half of the axes' x range (on its scale)."""
    low, high = ax.get_xlim()
    if ax.get_xscale() == "log" and low > 0 and x > 0:
        low, high, x = np.log(low), np.log(high), np.log(x)
    return high > low and (x - low) / (high - low) > 0.5


def _handle_label(handle) -> str:
    """The label of a legend handle (a (band, line) pair: the line's, with the band named)."""
    if isinstance(handle, tuple):
        return f"{handle[-1].get_label()} (mean, 95 % CI band)"
    return handle.get_label()


def _repeats(cells: pd.DataFrame) -> str:
    """Runs per cell: '3' or '2–3'."""
    return f"{cells.n.min()}" if cells.n.min() == cells.n.max() else f"{cells.n.min()}–{cells.n.max()}"


def _band_note(cells: pd.DataFrame, what: str, metric: str) -> str:
    """'95 % CI of the mean over 3 repeats (Student t)', or 'one run per QD: no interval'."""
    if cells.n.max() < 2:
        return f"one run per {what}: no interval"
    how = "Student t" if columns.interval_method(metric) == "t" else "bootstrap joined with Student t"
    return f"95 % CI of the mean over {_repeats(cells)} repeats ({how})"


def _unstable_note(cells: pd.DataFrame, x: str, what: str) -> str:
    """Which cells are unstable and why (``repeat_stats.summarise``'s ``unstable_why``)."""
    if cells.n.max() < 2:
        return ""
    bad = cells[cells["unstable"]]
    if bad.empty:
        return f"no {what} unstable (CV ≤ {100 * CV_LIMIT:g} % over repeats)"
    return "unstable: " + "; ".join(f"{what} {tick_text(r[x])}: {r['unstable_why']}" for _, r in bad.iterrows())


def cpu_busy(df: pd.DataFrame, ax=None, x: str = "qd", title: str | None = None):
    """Stacked busy share (user, system, irq, softirq) of the pinned CPUs vs queue depth:
    the saturation picture of seed 000 (IOPS stop growing when this reaches 100 %)."""
    ax = axes_of(ax)
    parts = ["cpu_usr_pct", "cpu_sys_pct", "cpu_irq_pct", "cpu_softirq_pct"]
    mean = df.groupby(x)[parts].mean().sort_index()
    bottom = np.zeros(len(mean))
    colors = ["#4c72b0", "#dd8452", "#c44e52", "#8172b3"]
    for col, color in zip(parts, colors):
        ax.bar(
            range(len(mean)),
            mean[col],
            bottom=bottom,
            color=color,
            label=label(col).replace("cpu ", "").replace(" (%)", ""),
        )
        bottom += mean[col].fillna(0).to_numpy()
    ax.set_xticks(range(len(mean)))
    ax.set_xticklabels([f"{v:g}" for v in mean.index])
    ax.set_xlabel(label(x))
    ax.set_ylabel("busy share of pinned CPUs (%)")
    ax.set_ylim(0, 105)
    ax.axhline(100, color="0.5", linewidth=0.8)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "CPU busy on the pinned CPUs vs queue depth")
    source_note(
        ax,
        "/proc/stat per-CPU counters",
        details="sampled every 0.5 s, first and last 10 % trimmed; means over repeats",
    )
    flag_banner(ax, df)
    return ax


def cycles_per_io(df: pd.DataFrame, ax=None, x: str = "qd"):
    """Cycles per IO vs queue depth (``by_setting``: 95 % interval, unstable cells hatched),
    labelled with the frequency source."""
    found = sorted(df["freq_source"].dropna().unique()) if "freq_source" in df else []
    src = ", ".join(FREQ_WORDS.get(f, f) for f in found) or "not sampled"
    fallback = " (nominal frequency: no cpufreq)" if "proc_cpuinfo" in found else ""
    return by_setting(
        df,
        x,
        "cycles_per_io",
        ax=ax,
        title=f"CPU cycles per IO, fio's own{fallback}",
        source=f"fio's CPU seconds (its threads, /proc) × the frequency ({src}) ÷ its IOs",
    )


def by_setting(
    df: pd.DataFrame,
    x: str,
    y: str = "iops",
    ax=None,
    title: str | None = None,
    source: str = "fio json+; /proc/stat",
    order=None,
):
    """Any measured column against any swept setting: bars of the mean over repeats, whiskers
    the 95 % CI of that mean (``repeat_stats.summarise``: Student t, or bootstrap joined with t for
    percentiles and ratios such as ``dev_read_req_kib`` and ``cycles_per_io``). Bars of cells
    whose ``y`` varies by more than 10 % (CV) over repeats are hatched and labelled
    'unstable'. ``order``: the x values in order (else numbers sorted, else as they appear)."""
    ax = axes_of(ax)
    cells = _cells(df, x, [y], order)
    mean, low, high = (cells[f"{y}_{k}"].to_numpy(dtype=float) for k in ("mean", "ci_low", "ci_high"))
    pos = np.arange(len(cells))
    bars = ax.bar(pos, mean, color="#4c72b0", edgecolor="white", linewidth=0.5)
    has = ~np.isnan(low)
    ax.errorbar(
        pos[has],
        mean[has],
        yerr=[mean[has] - low[has], high[has] - mean[has]],
        fmt="none",
        ecolor="0.15",
        elinewidth=1.2,
        capsize=5,
    )
    crowded = len(pos) > 8  # bar labels this close apart collide at full precision
    for bar, p, m, top, unstable in zip(bars, pos, mean, np.fmax(mean, high), cells["unstable"]):
        if unstable:
            bar.set(hatch="//", edgecolor="0.15", gid="unstable")
        value = "" if np.isnan(m) else si_number(m, k_from=1e3) if crowded else readable_number(repr(float(m)))
        ax.annotate(
            value + ("\nunstable" if unstable else ""),  # its own line: beside the number it runs into the next bar's
            (p, top),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color=UNSTABLE_COLOR if unstable else "0.1",
        )
    ax.set_xticks(pos, [tick_text(v) for v in cells[x]])
    ax.margins(y=0.12)
    if np.nanmax(np.fmax(mean, high), initial=0) >= 10_000:
        thousands_axis(ax)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(y))
    ax.set_title(title or f"{label(y)} by {label(x)}")
    bars_note = (
        f"bars: mean of {_repeats(cells)} repeats per {label(x)}; whiskers: {_band_note(cells, 'bar', y)}"
        if cells.n.max() > 1
        else _band_note(cells, label(x), y)
    )
    unstable = _unstable_note(cells, x, label(x)).replace("unstable: ", "hatched, unstable: ")
    hatched = cells[cells["unstable"]] if cells.n.max() > 1 else cells.iloc[:0]
    source_note(
        ax,
        source + (f"; hatched, unstable: {', '.join(tick_text(v) for v in hatched[x])}" if len(hatched) else ""),
        details="; ".join(t for t in (bars_note, unstable) if t),
    )
    flag_banner(ax, df)
    return ax
