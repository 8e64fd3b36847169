"""The standard figures the notebooks share.

Every function takes a tidy frame and an optional ``ax``, labels axes from the column
registry (units included), writes where its numbers come from under the plot, marks
fallback-sourced values, and returns the ``ax``. Nothing here changes global style.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .analysis import Knee, KneeEstimate
from .columns import label

PALETTE = {"iops": "#1f77b4", "p50": "#2ca02c", "p99": "#d62728", "knee": "#7f7f7f"}


def _ax(ax):
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    return ax


def source_note(ax, text: str) -> None:
    """The source line under a plot, wrapped to the plot's width."""
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    text = textwrap.fill(f"source: {text}", width=max(60, int(width_in * 17)))  # ~17 chars/inch at 7.5 pt
    ax.annotate(text, xy=(0, 0), xycoords="axes fraction", xytext=(0, -38),
                textcoords="offset points", fontsize=7.5, color="0.35", va="top")


def _log2_qd_axis(ax, qds) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(int(q) for q in qds))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel(label("qd"))


def qd_curve(df: pd.DataFrame, knee: Knee | KneeEstimate | None = None, ax=None, x: str = "qd",
             title: str | None = None):
    """IOPS (left axis) and clat p50/p99 (right axis) vs queue depth, knee marked.

    Repeats are shown as mean with a ±1 standard deviation band. A ``KneeEstimate``
    (``analysis.knee_with_interval``) also shades its bootstrap interval [low, high], widened
    by a quarter of a doubling each side so a one-QD interval stays visible, and names it in
    the legend: "knee QD 16 (90 % of resamples in [8, 16])"."""
    ax = _ax(ax)
    sns.lineplot(data=df, x=x, y="iops", marker="o", errorbar="sd", ax=ax,
                 color=PALETTE["iops"], label="IOPS")
    ax.set_ylabel(label("iops"))
    ax.set_ylim(bottom=0)
    lat = ax.twinx()
    pcol = "clat" if df.get("clat_p99_us", pd.Series(dtype=float)).notna().any() else "lat"
    for p, color in (("p50", PALETTE["p50"]), ("p99", PALETTE["p99"])):
        col = f"{pcol}_{p}_us"
        if col in df and df[col].notna().any():
            sns.lineplot(data=df, x=x, y=col, marker="s", errorbar="sd", ax=lat, color=color,
                         label=f"{pcol} {p}", linestyle="--")
    lat.set_ylabel(f"{pcol} latency (µs)")
    lat.set_ylim(bottom=0)
    _log2_qd_axis(ax, df[x])
    if lat.get_legend():
        lat.get_legend().remove()
    if knee is not None and knee.x is not None:
        estimate = isinstance(knee, KneeEstimate)
        if estimate and knee.low is not None:
            pad = 2 ** 0.25
            ax.axvspan(knee.low / pad, knee.high * pad, color=PALETTE["knee"], alpha=0.18, linewidth=0,
                       label=knee.label())
        ax.axvline(knee.x, color=PALETTE["knee"], linestyle=":", linewidth=1.5,
                   label=knee.label() if estimate and knee.low is None else None)
        ax.annotate(f"knee: QD {knee.x:g}\n{knee.y:,.0f} IOPS" + (" (median)" if estimate else ""),
                    xy=(knee.x, knee.y), xytext=(8, -30), textcoords="offset points", fontsize=9)
    handles = ax.get_legend_handles_labels()
    lhandles = lat.get_legend_handles_labels()
    ax.legend(handles[0] + lhandles[0], handles[1] + lhandles[1], loc="upper left", fontsize=8)
    ax.set_title(title or "IOPS and completion latency vs queue depth")
    knee_text = knee.method if knee is not None and knee.x is not None else (
        f"no knee ({knee.reason})" if knee is not None else "")
    source_note(ax, f"fio json+ ({df['fio_version'].iloc[0] if 'fio_version' in df else 'fio'}); "
                    f"percentiles from {df.get('percentiles_from', pd.Series(['?'])).iloc[0]}; {knee_text}")
    return ax


def cpu_busy(df: pd.DataFrame, ax=None, x: str = "qd", title: str | None = None):
    """Stacked busy share (user, system, irq, softirq) of the pinned CPUs vs queue depth:
    the saturation picture of seed 000 (IOPS stop growing when this reaches 100 %)."""
    ax = _ax(ax)
    parts = ["cpu_usr_pct", "cpu_sys_pct", "cpu_irq_pct", "cpu_softirq_pct"]
    mean = df.groupby(x)[parts].mean().sort_index()
    bottom = np.zeros(len(mean))
    colors = ["#4c72b0", "#dd8452", "#c44e52", "#8172b3"]
    for col, color in zip(parts, colors):
        ax.bar(range(len(mean)), mean[col], bottom=bottom, color=color,
               label=label(col).replace("cpu ", "").replace(" (%)", ""))
        bottom += mean[col].fillna(0).to_numpy()
    ax.set_xticks(range(len(mean)))
    ax.set_xticklabels([f"{v:g}" for v in mean.index])
    ax.set_xlabel(label(x))
    ax.set_ylabel("busy share of pinned CPUs (%)")
    ax.set_ylim(0, 105)
    ax.axhline(100, color="0.5", linewidth=0.8)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title or "CPU busy on the pinned CPUs vs queue depth")
    source_note(ax, "/proc/stat per-CPU counters sampled every 0.5 s, first and last 10 % trimmed")
    return ax


def cycles_per_io(df: pd.DataFrame, ax=None, x: str = "qd"):
    """Cycles per IO vs queue depth, labelled with the frequency source."""
    ax = _ax(ax)
    sns.barplot(data=df, x=x, y="cycles_per_io", errorbar="sd", ax=ax, color="#55a868")
    ax.set_ylabel(label("cycles_per_io"))
    ax.set_xlabel(label(x))
    src = ", ".join(sorted(df["freq_source"].dropna().unique())) if "freq_source" in df else "?"
    fallback = " (nominal frequency: no cpufreq)" if "proc_cpuinfo" in src else ""
    ax.set_title(f"CPU cycles per IO{fallback}")
    source_note(ax, f"busy CPU s (/proc/stat) x frequency ({src}) / IOs (fio)")
    return ax


def reference_bars(ref: pd.DataFrame, local: pd.DataFrame | None = None, ax=None,
                   value: str = "iops", by: str = "label"):
    """Published figures (``ref``: label, value, source) beside local ones."""
    ax = _ax(ax)
    frames = [ref.assign(origin="published")]
    if local is not None:
        frames.append(local.assign(origin="this machine"))
    both = pd.concat(frames, ignore_index=True)
    sns.barplot(data=both, y=by, x=value, hue="origin", ax=ax, orient="h", errorbar=None)
    ax.set_xlabel(label(value))
    ax.set_ylabel("")
    ax.set_title("Published figures beside this machine")
    source_note(ax, "; ".join(sorted(ref["source"].dropna().unique())))
    return ax


def ladder_waterfall(ladder: pd.DataFrame, ax=None, reference: pd.DataFrame | None = None):
    """IOPS per ladder step with the gain over the previous step; skipped steps are drawn
    as empty slots labelled 'skipped' (the reason is in the table). ``reference``: the
    published ladder (label, iops) drawn as markers."""
    ax = _ax(ax)
    names = [f"{r.step}. {r.name}" for r in ladder.itertuples()]
    y = range(len(ladder))
    for i, r in enumerate(ladder.itertuples()):
        if r.status == "measured":
            color = "#dd8452" if r.tool == "tio" else ("#bbbbbb" if not r.carried_forward else "#4c72b0")
            ax.barh(i, r.iops, color=color)
            gain = "" if pd.isna(r.gain_pct) else f"  {r.gain_pct:+.0f} %"
            ax.text(r.iops, i, f" {r.iops:,.0f}{gain}", va="center", fontsize=8)
        else:
            ax.text(0, i, f"  {r.status}", va="center", fontsize=8, color="0.4", style="italic")
    if reference is not None and len(reference) == len(ladder):
        ax.scatter(reference["iops"], list(y), marker="|", s=200, color="k", label="published (seed 000)")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(label("iops"))
    ax.set_title("Single-core tuning ladder: IOPS per step (gain vs the previous kept step)")
    source_note(ax, "fio json+ / t/io_uring output per step; grey: peak-only step not carried forward; "
                    "orange: t/io_uring")
    return ax


def ladder_cpu(ladder: pd.DataFrame, ax=None):
    """CPU busy (%) and cycles per IO per measured ladder step."""
    ax = _ax(ax)
    m = ladder[ladder.status == "measured"]
    labels = [f"{r.step}" for r in m.itertuples()]
    ax.bar(labels, m["cycles_per_io"], color="#55a868")
    ax.set_ylabel(label("cycles_per_io"))
    ax.set_xlabel("ladder step")
    twin = ax.twinx()
    twin.plot(labels, m["cpu_busy_pct"], "o-", color="#c44e52")
    twin.set_ylabel("CPU busy (%)")
    twin.set_ylim(0, 105)
    src = ", ".join(sorted(m["freq_source"].dropna().unique())) if "freq_source" in m else "?"
    ax.set_title("Cycles per IO (bars) and CPU busy (line) per step")
    source_note(ax, f"/proc/stat busy time x frequency ({src}) / IOs")
    return ax


def by_setting(df: pd.DataFrame, x: str, y: str = "iops", ax=None, title: str | None = None,
               source: str = "fio json+; /proc/stat", order=None):
    """Any measured column against any swept setting (bars; ±1 sd over repeats)."""
    ax = _ax(ax)
    sns.barplot(data=df, x=x, y=y, errorbar="sd", ax=ax, color="#4c72b0", order=order)
    for container in ax.containers:
        ax.bar_label(container, fmt="{:,.0f}", fontsize=8)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(y))
    ax.set_title(title or f"{label(y)} by {x}")
    source_note(ax, source)
    return ax
