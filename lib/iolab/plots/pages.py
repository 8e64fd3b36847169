"""The figures of iolab's offline pages, and the one way a figure goes into a page.

    fig = results_across_runs("IOPS at QD 32", "IO/s", points, "qd")   # a batch's result, a bar per run
    html = f"<img src='{data_uri(fig)}'>"                               # an embedded PNG: the page stays one file

``results_across_runs`` draws the batch index's figures (``iolab.report.batch_index``),
``shape_beside_author`` a seed page's (``iolab.seeds.pages``). Each is a
``matplotlib.figure.Figure`` of its own, not a pyplot figure: a page written from a notebook's
kernel leaves its backend and its open figures alone.
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..core.readable import readable_value

PAGE_DPI = 90  # pixels per inch of a page's PNG: a 7 in figure is 630 px wide


def data_uri(fig: Figure, dpi: int = PAGE_DPI) -> str:
    """``fig`` as a PNG ``data:`` URI for an ``<img src>``: no file beside the page."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def results_across_runs(
    name: str, unit: str, points: Sequence[tuple[str, float, float | None, float | None]], x_label: str
) -> Figure | None:
    """A bar per run of the recorded result ``name`` in ``unit``: ``points`` are (the run's
    label, value, interval low, high), whiskers where the run recorded an interval. None
    below two points: nothing to set side by side."""
    if len(points) < 2:
        return None
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    xs = range(len(points))
    ax.bar(xs, [p[1] for p in points], color="#4c72b0")
    for i, (_, v, lo, hi) in enumerate(points):
        if lo is not None and hi is not None:
            ax.errorbar(i, v, yerr=[[v - lo], [hi - v]], color="k", capsize=4, linewidth=1)
        top = hi if hi is not None and hi > v else v  # above the whisker, not on it
        ax.annotate(readable_value(v), (i, top), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    ax.margins(y=0.12)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([p[0] for p in points], rotation=20 if len(points) > 4 else 0, fontsize=8)
    ax.set_xlabel(x_label)
    ax.set_ylabel(f"{name} ({unit})" if unit else name)
    ax.set_title(f"{name} across the batch's runs")
    fig.text(
        0.01,
        0.01,
        "source: each run's recorded results (iolab.record.results); whiskers: the interval it recorded",
        fontsize=7,
        color="0.35",
    )
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def shape_beside_author(rows: pd.DataFrame, ident: str) -> Figure | None:
    """The shape of seed ``ident``'s result beside the write-up's (``iolab.seeds.shape``): a
    row per ratio (columns shape, published, local, low, high, unit "×"), the write-up's value
    a black diamond, this machine's a blue dot with its 95 % interval, log scale, 1 marked.
    The values are written in a column at the right, clear of the whiskers. None when no
    ratio has a value on either side."""
    rows = rows[(rows["unit"] == "×") & (rows["published"].notna() | rows["local"].notna())]
    if rows.empty:
        return None
    fig = Figure(figsize=(10, 0.55 * len(rows) + 1.6))
    ax = fig.subplots()
    ys = np.arange(len(rows))
    pub = pd.to_numeric(rows["published"], errors="coerce").to_numpy(float)
    loc = pd.to_numeric(rows["local"], errors="coerce").to_numpy(float)
    low = pd.to_numeric(rows["low"], errors="coerce").to_numpy(float)
    high = pd.to_numeric(rows["high"], errors="coerce").to_numpy(float)
    ax.scatter(pub, ys - 0.12, marker="D", color="k", label="the write-up", zorder=3)
    ax.scatter(loc, ys + 0.12, color="#4c72b0", label="this machine (95 % interval)", zorder=3)
    for y, v, lo, hi in zip(ys, loc, low, high):
        if np.isfinite(v) and np.isfinite(lo) and np.isfinite(hi) and lo > 0:
            ax.plot([lo, hi], [y + 0.12, y + 0.12], color="#4c72b0", linewidth=1.5)
    ax.axvline(1, color="0.5", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    seen = np.concatenate([pub, loc, low, high, [1.0]])
    seen = seen[np.isfinite(seen) & (seen > 0)]
    ax.set_xlim(seen.min() / 1.3, seen.max() * 1.3)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(ys)
    ax.set_yticklabels([textwrap.fill(str(t), 48) for t in rows["shape"]], fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top, each row's two marks inside
    ax.set_xlabel("ratio (log scale; 1×: no change)")
    for y, p, v in zip(ys, pub, loc):
        text = f"write-up {p:.3g}× · here " + (f"{v:.3g}×" if np.isfinite(v) else "none")
        ax.annotate(text, (1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=7.5)
    ax.set_title(f"Seed {ident}: the shape of the result, the write-up's beside this machine's", fontsize=10)
    fig.legend(loc="lower center", ncol=2, fontsize=7.5, frameon=False)
    fig.subplots_adjust(left=0.36, right=0.76, top=1 - 0.5 / fig.get_figheight(), bottom=1.0 / fig.get_figheight())
    return fig
