"""Each recorded result over time or over versions, from the results history: the figure of
notebook 09 ("did it get worse?").

    tr = trend.trend(history.load(), over="kernel")   # iolab.stats.trend
    trends.plot(tr, "peak IOPS")                       # one metric, each of its series
    trends.plot_all(tr)                                # one figure per metric

Each point is one executed notebook's recorded value; its error bar the interval the notebook
recorded with it ([low, high], most often a 95 % interval over repeats). A point with no
interval is drawn hollow ("no interval recorded" in the legend) and is never called a change.
A point whose interval lies apart from the previous interval of its series is ringed: red
"worse", green "better", orange "changed" when the metric has no better direction
(``iolab.stats.trend``). The caption says where the numbers come from: the history folder,
how many results from how many executed notebooks, how many were an emulator's.
"""

from __future__ import annotations

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..core.readable import percent
from ..stats.trend import OVER_WORDS
from .common import PALETTE, axes_of, fit_width, si_axis, source_note

CHANGE_COLORS = {"worse": "#d62728", "better": "#2ca02c", "": "#ff7f0e"}
SERIES_COLORS = [PALETTE["iops"], "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", PALETTE["knee"]]


def plot(tr: pd.DataFrame, metric: str, ax=None, folder: str | None = None):
    """``metric``'s points of a ``trend`` table along its ``over`` (time, or the values of a
    column such as the kernel), one colour per series, error bars from each result's
    recorded interval, significant changes ringed and labelled. ``folder``: the history's
    folder for the caption (default: the table's ``attrs["history"]``). Returns the ax."""
    sub = tr[tr["metric"] == metric]
    if sub.empty:
        raise ValueError(f"no points of {metric!r} in this trend table: it has {', '.join(tr['metric'].unique())}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.2))
    ax = axes_of(ax)
    over = tr.attrs.get("over", "recorded_utc")
    x = _positions(sub, over)
    series = list(dict.fromkeys(sub["series"]))
    for i, name in enumerate(series):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        mine = (sub["series"] == name).to_numpy()
        _draw_series(ax, x[mine], sub[mine], color, name)
    _mark_changes(ax, x, sub)
    unit = sub["unit"].iloc[0]
    ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
    ax.set_title(f"{metric} over {OVER_WORDS.get(over, over)}", fontsize=11)
    if over == "recorded_utc":
        locator = mdates.AutoDateLocator(minticks=3, maxticks=6)  # more collide across an 8-inch axis
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_xlabel("time recorded (UTC)")
        first, last = x.min(), x.max()
        if last - first < np.timedelta64(1, "h"):  # one moment (or a few close ones): an hour around it,
            pad = np.timedelta64(30, "m")  # not matplotlib's default of years
            ax.set_xlim(first - pad, last + pad)
    else:
        cats = sub.drop_duplicates("category").sort_values("category")
        ax.set_xticks(cats["category"], [str(v) for v in cats["at"]])
        if max(len(str(v)) for v in cats["at"]) * len(cats) > 60:
            plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
        ax.set_xlabel(OVER_WORDS.get(over, over) + " (each value's runs in time order)")
        ax.set_xlim(cats["category"].min() - 0.5, cats["category"].max() + 0.5)
    si_axis(ax)
    ax.grid(axis="y", alpha=0.3)
    _legend(ax, sub, series)
    fit_width(ax)
    source_note(ax, _caption(sub, folder or tr.attrs.get("history")), below_pt=46)
    return ax


def plot_all(tr: pd.DataFrame, folder: str | None = None) -> list:
    """One figure per metric of a ``trend`` table (``plot``), in the table's order; the axes."""
    return [plot(tr, metric, folder=folder) for metric in dict.fromkeys(tr["metric"])]


def _positions(sub: pd.DataFrame, over: str) -> np.ndarray:
    """x of each point: its time (naive UTC) along recorded_utc; else its value's place,
    the runs of one value spread over ±0.3 in time order."""
    if over == "recorded_utc":
        return pd.to_datetime(sub["at"], utc=True).dt.tz_convert(None).to_numpy()
    x = sub["category"].to_numpy(float).copy()
    order = np.argsort(sub["recorded_utc"].to_numpy(), kind="stable")
    for cat in np.unique(x):
        here = [i for i in order if x[i] == cat]
        if len(here) > 1:
            for k, i in enumerate(here):
                x[i] = cat + np.linspace(-0.3, 0.3, len(here))[k]
    return x


def _draw_series(ax, x, points: pd.DataFrame, color: str, name: str) -> None:
    has = points["has_interval"].to_numpy(bool)
    y = points["value"].to_numpy(float)
    ax.plot(x, y, "-", color=color, lw=1, alpha=0.45, zorder=1)
    if has.any():
        err = np.vstack([y[has] - points["low"].to_numpy(float)[has], points["high"].to_numpy(float)[has] - y[has]])
        ax.errorbar(x[has], y[has], yerr=np.clip(err, 0, None), fmt="o", color=color, ms=5, capsize=3, lw=1.2, zorder=3)
    if (~has).any():
        ax.plot(x[~has], y[~has], "o", ms=6, mfc="white", mec=color, mew=1.5, zorder=3)


def _mark_changes(ax, x, sub: pd.DataFrame) -> None:
    marked = sub["significant"].to_numpy(bool)
    for xi, row in zip(x[marked], sub[marked].itertuples()):
        color = CHANGE_COLORS[row.change]
        ax.scatter([xi], [row.value], s=190, facecolors="none", edgecolors=color, linewidths=2, zorder=4)
        word = row.change or "changed"
        ax.annotate(
            f"{word} {percent(row.change_pct, signed=True)}",
            xy=(xi, row.high if row.shift == "up" else row.low),
            xytext=(0, 9 if row.shift == "up" else -9),
            textcoords="offset points",
            ha="center",
            va="bottom" if row.shift == "up" else "top",
            fontsize=8,
            color=color,
            fontweight="bold",
        )
    if marked.any():  # room for the labels above and below the bars
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo))


def _legend(ax, sub: pd.DataFrame, series: list[str]) -> None:
    handles = [
        Line2D([], [], color=SERIES_COLORS[i % len(SERIES_COLORS)], marker="o", label=name)
        for i, name in enumerate(series)
        if name
    ]
    if (~sub["has_interval"].astype(bool)).any():
        handles.append(Line2D([], [], ls="", marker="o", mfc="white", mec="0.3", mew=1.5, label="no interval recorded"))
    if sub["has_interval"].astype(bool).any():  # an error bar drawn at no point: the legend's key
        handles.append(
            ax.errorbar(
                [np.nan],
                [np.nan],
                yerr=[[1], [1]],
                fmt="o",
                color="0.3",
                ms=5,
                capsize=3,
                lw=1.2,
                label="recorded interval [low, high]",
            )
        )
    for change in dict.fromkeys(sub.loc[sub["significant"].astype(bool), "change"]):
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker="o",
                ms=11,
                mfc="none",
                mec=CHANGE_COLORS[change],
                mew=2,
                label=f"{change or 'changed'}: interval apart from the previous one",
            )
        )
    ax.legend(handles=handles, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)


def _caption(sub: pd.DataFrame, folder: str | None) -> str:
    # a notebook re-run to the same output (make demo) is one executed path at many times
    runs = len(sub.drop_duplicates(["executed", "recorded_utc"])) if "executed" in sub else len(sub)
    emulated = int(sub["emulated"].map(lambda v: isinstance(v, str) and v != "").sum()) if "emulated" in sub else 0
    text = (
        f"the results history in {folder or 'the history'}: {len(sub)} result{'s' * (len(sub) != 1)} "
        f"from {runs} executed notebook{'s' * (runs != 1)}"
    )
    if emulated:
        text += f", {emulated} of them from the NVMe lab (an emulator's numbers)"
    return text
