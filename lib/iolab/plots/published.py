"""Published figures (data/reference/published_figures.csv, typed in from the seeds' write-ups and
cited) beside this machine's, as bars."""

from __future__ import annotations

import re

import pandas as pd
import seaborn as sns

from ..core.columns import label
from .common import axes_of, count_axis, fit_width, source_note


def reference_bars(
    ref: pd.DataFrame, local: pd.DataFrame | None = None, ax=None, value: str = "iops", by: str = "label"
):
    """Published figures (``ref``: label, value, source) beside local ones."""
    own = ax is None
    ax = axes_of(ax)
    frames = [ref.assign(origin="published")]
    if local is not None:
        frames.append(local.assign(origin="this machine"))
    both = pd.concat(frames, ignore_index=True)
    sns.barplot(data=both, y=by, x=value, hue="origin", ax=ax, orient="h", errorbar=None)
    ax.set_xlabel(label(value))
    ax.set_ylabel("")
    ax.set_title("Published figures beside this machine")
    count_axis(ax, "x")
    sources = sorted(ref["source"].dropna().unique())
    if len("; ".join(sources)) <= 110:  # two lines under the plot
        source_note(ax, "; ".join(sources))
    else:
        seeds = ", ".join(sorted(set(re.findall(r"seed \d+", " ".join(sources))))) or sources[0]
        source_note(ax, f"published: {seeds} ({len(sources)} sources)", details="; ".join(sources))
    if own:
        fit_width(ax)
    return ax
