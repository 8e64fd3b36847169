"""The figures of iolab's offline pages, and the one way a figure goes into a page.

    fig = results_across_runs("IOPS at QD 32", "IO/s", points, "qd")   # a batch's result, a bar per run
    html = f"<img src='{data_uri(fig)}'>"                               # an embedded PNG: the page stays one file

``results_across_runs`` draws the batch index's figures (``iolab.report.batch_index``),
``local_over_published`` a seed page's (``iolab.seeds.pages``). Each is a
``matplotlib.figure.Figure`` of its own, not a pyplot figure: a page written from a notebook's
kernel leaves its backend and its open figures alone.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

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


def local_over_published(rows: pd.DataFrame, labels: Sequence[str], ident: str) -> Figure | None:
    """This machine ÷ the write-up for each figure of seed ``ident`` with a local value: a bar
    per row of ``rows`` (columns ratio, low, high, published, metric; ``labels`` name them),
    log scale, whiskers the local interval ÷ the published value; IOPS blue, the rest
    (latency, cycles per IO) orange. None when no row has a ratio."""
    keep = rows["ratio"].notna().to_numpy()
    rows, labels = rows[keep], [t for t, k in zip(labels, keep) if k]
    if rows.empty:
        return None
    fig = Figure(figsize=(11, 0.3 * len(rows) + 1.8))
    ax = fig.subplots()
    ys = range(len(rows))
    ratios = rows["ratio"].astype(float).to_numpy()
    ax.barh(list(ys), ratios, color=["#4c72b0" if m == "iops" else "#dd8452" for m in rows["metric"]])
    ends = rows[["low", "high"]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    for y, (_, r), (low, high) in zip(ys, rows.iterrows(), ends):
        if np.isfinite(low) and np.isfinite(high) and r["published"]:
            lo, hi = low / r["published"], high / r["published"]
            if lo > 0:
                ax.errorbar(
                    r["ratio"],
                    y,
                    xerr=[[max(r["ratio"] - lo, 0)], [max(hi - r["ratio"], 0)]],
                    color="k",
                    capsize=3,
                    linewidth=1,
                )
        ax.annotate(f"{r['ratio']:.3g}×", (r["ratio"], y), textcoords="offset points", xytext=(4, -3), fontsize=7)
    ax.axvline(1, color="0.3", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("local ÷ published (×, log scale; 1 = the same)")
    ax.set_title(
        f"Seed {ident}: this machine ÷ the write-up\nblue: IOPS (higher is faster); orange: latency "
        "and cycles per IO (higher is slower)",
        fontsize=10,
    )
    fig.text(
        0.01,
        0.005,
        "sources: data/reference/published_figures.csv (published); this machine's executed notebooks' "
        "recorded results (local); whiskers: the local interval",
        fontsize=6.5,
        color="0.35",
    )
    fig.subplots_adjust(left=0.34, right=0.96, top=1 - 0.75 / fig.get_figheight(), bottom=0.75 / fig.get_figheight())
    return fig
