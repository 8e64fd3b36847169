"""What the standard figures share: their colours, the widest figure a notebook shows at its own
size, the source line under a plot, the banner over a flagged one, and axis tick formats.

Every figure of iolab.plots (``curves``, ``ladders``, ``published``, ``searches``, ``hostplots``,
``timeplots``, ``explore``) takes a tidy frame and an optional ``ax``, labels axes from the column
registry (``iolab.core.columns``, units included), writes where its numbers come from under the plot
(``source_note``), marks fallback-sourced values and runs that failed a plausibility check
(``flag_banner``), and returns the ``ax``. Nothing here changes global style.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
from matplotlib.ticker import StrMethodFormatter
import numpy as np
import pandas as pd
import seaborn as sns

from ..core.readable import si_number

PALETTE = {"iops": "#1f77b4", "p50": "#2ca02c", "p99": "#d62728", "knee": "#7f7f7f"}
CV_LIMIT = 0.10  # a cell is unstable above this coefficient of variation over repeats (pyperf: 10 %)
UNSTABLE = f"unstable: CV > {100 * CV_LIMIT:g} % over repeats"
UNSTABLE_COLOR = "#e31a1c"
CATEGORICAL = sns.color_palette("tab10")
# inches: the widest figure JupyterLab shows at its own size (100 dpi) in a 1280-px window with
# the file browser open (848 px of output; a legend outside the axes widens the saved figure);
# a wider one is scaled down, and its 8-pt labels with it, below 10 px
NOTEBOOK_WIDTH_IN = 8.2


def axes_of(ax):
    """The Axes to draw on: ``ax`` when given, else those of a new 8 x 4.5 in figure."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    return ax


def fit_width(ax_or_fig) -> None:
    """Narrow the figure until what it saves (its tight box: titles, tick labels and
    legends outside the axes included) is at most ``NOTEBOOK_WIDTH_IN`` wide, so JupyterLab
    shows it at its own size. The axes give up the room; the text keeps its size."""
    fig = getattr(ax_or_fig, "figure", ax_or_fig)
    for _ in range(3):
        over = fig.get_tightbbox(fig.canvas.get_renderer()).width - NOTEBOOK_WIDTH_IN
        if over <= 0.02:
            return
        fig.set_figwidth(max(3.5, fig.get_figwidth() - over - 0.02))


def source_note(ax, text: str, width_in: float | None = None, below_pt: float = 38) -> None:
    """The source line ``below_pt`` points under a plot, wrapped to ``width_in`` inches (the
    plot's width unless given)."""
    width_in = width_in or ax.get_position().width * ax.figure.get_figwidth()
    text = textwrap.fill(f"source: {text}", width=max(60, int(width_in * 17)))  # ~17 chars/inch at 7.5 pt
    ax.annotate(
        text,
        xy=(0, 0),
        xycoords="axes fraction",
        xytext=(0, -below_pt),
        textcoords="offset points",
        fontsize=7.5,
        color="0.35",
        va="top",
    )


def flag_banner(ax, df: pd.DataFrame) -> None:
    """A red banner over the plot when any of its runs failed a plausibility check
    (``flags``, ``iolab.read.checks``), with the words of the checks."""
    if "flags" not in df:
        return
    flagged = (
        df.loc[df["flags"].fillna("") != "", ["run_id", "flags"]]
        if "run_id" in df
        else df.loc[df["flags"].fillna("") != "", ["flags"]]
    )
    if flagged.empty:
        return
    runs = flagged["run_id"].nunique() if "run_id" in flagged else len(flagged)
    total = df["run_id"].nunique() if "run_id" in df else len(df)
    words = list(
        dict.fromkeys(
            w.split(":")[0].strip() + ":" + w.split(":", 1)[1].split(";")[0]
            for text in flagged["flags"]
            for w in text.split(" | ")
            if ":" in w
        )
    )
    text = textwrap.shorten(
        f"⚠ {runs} of {total} runs failed a plausibility check — " + " | ".join(words), width=160, placeholder=" …"
    )
    ax.annotate(
        "\n".join(textwrap.wrap(text, 90)),
        xy=(0, 1),
        xycoords="axes fraction",
        xytext=(0, 22),
        textcoords="offset points",
        fontsize=8,
        color="white",
        va="bottom",
        fontweight="bold",
        bbox={"boxstyle": "square,pad=0.3", "facecolor": UNSTABLE_COLOR, "edgecolor": "none"},
    )


def si_axis(ax, axis: str = "y") -> None:
    """Compact tick labels (400k, 1.2M) when the axis reaches 10,000."""
    lo, hi = getattr(ax, f"get_{axis}lim")()
    if max(abs(lo), abs(hi)) >= 1e4:
        getattr(ax, f"{axis}axis").set_major_formatter(si_number)


def thousands_axis(ax, axis: str = "y") -> None:
    """Tick labels with thousands separators (400,000 rather than 400000)."""
    getattr(ax, f"{axis}axis").set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def tick_text(v) -> str:
    """A setting's value as a tick label: numbers short (16, 0.5, 1e+06), the rest as text."""
    return f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)


def setting_colors(values: list) -> dict:
    """A colour per setting value, in the order given: a sequential scale (viridis, low light,
    high dark) for numbers, so the legend reads as an order and no colour repeats; tab10 for
    the rest. The one rule for colours per setting (curves, the explorer, the distributions)."""
    if values and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return dict(zip(values, sns.color_palette("viridis_r", n_colors=max(len(values), 2))))
    return {v: CATEGORICAL[i % len(CATEGORICAL)] for i, v in enumerate(values)}
