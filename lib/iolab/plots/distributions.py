"""Latency distributions as storage engineers draw them: the CDF, its tail, the percentile spectrum.

    dist = latency_dist.cdf(table, by="qd")        # iolab.stats.latency_dist: from fio's json+ bins
    distributions.plot_cdf(dist)                   # x latency (µs, log), y fraction of IOs at or below it
    distributions.plot_cdf(dist, tail=True)        # y 1 - that fraction on a log axis: the tail, as
                                                   # fio-plot and many papers show it
    spec = latency_dist.spectrum(table, by="qd")
    distributions.plot_spectrum(spec)              # x p1 ... p99.999 on a nines axis, y latency (µs, log)

One line per group of the frame (its ``by`` columns, direction and job), coloured by ``hue``
(default: the first ``by`` column; a numeric setting gets a sequential scale, low light and high
dark). A line from fio's rounded percentile list instead of the bins (``source``) is drawn
dashed with its points marked and said so under the plot; spectrum points beyond what the run
resolves (fewer than one IO above them: the slowest IO's bucket) are drawn thin and dotted.
Like the other figures (``iolab.plots.common``): the source under the plot, the ``ax`` returned.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from ..core.columns import label
from ..core.errors import InputError
from ..stats.latency_dist import FROM_BINS, FROM_LIST
from .common import CATEGORICAL, axes_of, fit_width, log_count_axis, setting_colors, source_note, tick_text

NINES_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)  # labelled p50 ... p99.999
STYLES = ("-", "--", "-.", ":")  # directions / jobs sharing a colour


def plot_cdf(dist: pd.DataFrame, hue: str | None = None, *, tail: bool = False, ax=None, title: str | None = None):
    """The latency CDF of ``dist`` (``latency_dist.cdf``): x the bucket latency (µs, log
    axis), y the fraction of IOs at or below it, as steps; ``tail=True``: y is the fraction
    above it (1 - CDF) on a log axis, down to the last IO's share (1/N). Returns the Axes."""
    _check(dist, ["latency_us", "fraction_le"], "latency_dist.cdf")
    ax = axes_of(ax)
    hue = _hue(dist, hue)
    kind = _one(dist, "kind")
    lowest = 1.0
    for _key, part, color, style, text in _series(dist, hue):
        x = part["latency_us"].to_numpy(float)
        y = part["fraction_le"].to_numpy(float)
        listed = (part["source"] == FROM_LIST).any()
        if tail:
            # from the counts where there are counts: 1 - fraction_le loses the last IOs to rounding
            total, le = part["total_ios"].to_numpy(float), part["count_le"].to_numpy(float)
            y = np.where(np.isnan(le), 1 - y, (total - le) / total)
            keep = y > 0
            x, y = x[keep], y[keep]
            lowest = min([lowest, *y]) if len(y) else lowest
        ax.plot(
            x,
            y,
            drawstyle="default" if listed else "steps-post",
            ls="--" if listed else style,
            marker="o" if listed else None,
            ms=3,
            lw=1.6,
            color=color,
            label=text,
        )
    ax.set_xscale("log")
    log_count_axis(ax, "x")
    ax.set_xlabel(f"{kind} latency (µs)")
    if tail:
        ax.set_yscale("log")
        ax.set_ylim(lowest / 2, 1.2)
        ax.set_ylabel("fraction of IOs > latency (1 − CDF)")
        ax.yaxis.set_major_formatter(FuncFormatter(_fraction_text))
    else:
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("fraction of IOs ≤ latency")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, hue, "upper right" if tail else "lower right")
    what = "tail (1 − CDF)" if tail else "CDF"
    ax.set_title(title or f"{kind} latency {what}" + (f" by {label(hue)}" if hue else ""), fontsize=11)
    note, more = _caption(dist, kind)
    source_note(ax, note, below_pt=34, details=more)
    fit_width(ax)
    return ax


def plot_spectrum(spec: pd.DataFrame, hue: str | None = None, *, ax=None, title: str | None = None):
    """The percentile spectrum of ``spec`` (``latency_dist.spectrum``): x the percentile on a
    nines axis (p50, p90, p99, p99.9 ... equally far apart), y the latency (µs, log axis).
    Points with fewer than one IO above them are drawn thin and dotted. Returns the Axes."""
    _check(spec, ["percentile", "latency_us"], "latency_dist.spectrum")
    ax = axes_of(ax)
    hue = _hue(spec, hue)
    kind = _one(spec, "kind")
    ax.set_xscale("function", functions=(_to_nines, _from_nines))
    unresolved = False
    for _key, part, color, style, text in _series(spec, hue):
        part = part.sort_values("percentile")
        x, y = part["percentile"].to_numpy(float), part["latency_us"].to_numpy(float)
        if (part["source"] == FROM_LIST).any():
            ax.plot(x, y, ls="--", marker="o", ms=3, lw=1.4, color=color, label=text)
            continue
        seen = part["ios_above"].to_numpy(float) >= 1
        last = int(seen.sum())  # the resolved points come first: ios_above falls as p rises
        ax.plot(x[:last], y[:last], ls=style, lw=1.8, color=color, label=text)
        if last < len(x):
            unresolved = True
            ax.plot(x[max(last - 1, 0) :], y[max(last - 1, 0) :], ls=":", lw=1.0, color=color)
    shown = [p for p in NINES_TICKS if spec["percentile"].min() <= p <= spec["percentile"].max()]
    ax.set_xticks(shown, [f"p{p:g}" for p in shown])
    ax.set_xticks([p for p in (10, 20, 30, 40, 60, 70, 80, 95, 99.5, 99.95, 99.995)], minor=True)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(spec["percentile"].min(), spec["percentile"].max())
    ax.set_xlabel("percentile (nines axis: p90, p99, p99.9 equally spaced)")
    ax.set_yscale("log")
    log_count_axis(ax, "y")
    ax.set_ylabel(f"{kind} latency (µs)")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, hue, "upper left")
    ax.set_title(title or f"{kind} latency percentiles" + (f" by {label(hue)}" if hue else ""), fontsize=11)
    note, more = _caption(spec, kind)
    if unresolved:
        note += "; dotted: not resolved (under one IO above)"
        more += "; dotted: the slowest IO's bucket, so the percentile is not resolved"
    source_note(ax, note, below_pt=34, details=more)
    fit_width(ax)
    return ax


# ---------------------------------------------------------------- shared
def _check(frame: pd.DataFrame, needed: list[str], maker: str) -> None:
    if not isinstance(frame, pd.DataFrame) or frame.empty or any(c not in frame.columns for c in needed):
        raise InputError(f"give the frame {maker}(...) returned (columns {needed}), not {type(frame).__name__}")


def _one(frame: pd.DataFrame, column: str) -> str:
    return "/".join(dict.fromkeys(frame[column].astype(str)))


def _hue(frame: pd.DataFrame, hue: str | None) -> str | None:
    if hue is None:
        by = frame.attrs.get("by") or []
        return by[0] if by and by[0] in frame.columns else None
    if hue not in frame.columns:
        raise InputError(f"hue={hue!r} is not a column of this frame; choose among {frame.attrs.get('by') or []}")
    return hue


def _series(frame: pd.DataFrame, hue: str | None):
    """(key, rows, colour, line style, legend text) per line: one colour per ``hue`` value,
    one style per combination of the other identifying columns (direction, job, ...)."""
    ident = [c for c in [*(frame.attrs.get("by") or []), "direction", "job"] if c in frame.columns]
    if hue and hue not in ident:
        ident.insert(0, hue)
    others = [c for c in ident if c != hue and frame[c].astype(str).nunique() > 1]
    hues = list(pd.unique(frame[hue])) if hue else []
    colors = setting_colors(hues)
    combos = list(dict.fromkeys(tuple(r) for r in frame[others].astype(str).itertuples(index=False))) if others else []
    for i, (key, part) in enumerate(frame.groupby(ident, sort=False, dropna=False)):
        values = dict(zip(ident, key if isinstance(key, tuple) else (key,)))
        combo = tuple(str(values[c]) for c in others)
        color = colors[values[hue]] if hue else CATEGORICAL[i % len(CATEGORICAL)]
        style = STYLES[combos.index(combo) % len(STYLES)] if others else "-"
        words = ([tick_text(values[hue])] if hue else []) + list(combo)
        text = ", ".join(words) or str(values.get("direction", ""))
        if (part["source"] == FROM_LIST).any():
            text += " (fio's list)"
        yield key, part, color, style, text


def _legend(ax, hue: str | None, loc: str) -> None:
    handles, _ = ax.get_legend_handles_labels()
    if not handles:
        return
    outside = len(handles) > 5  # many lines: a legend inside would cover them
    ax.legend(
        title=label(hue) if hue else None,
        fontsize=8,
        title_fontsize=8,
        **({"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if outside else {"loc": loc}),
    )


def _caption(frame: pd.DataFrame, kind: str) -> tuple[str, str]:
    """Where the lines come from, in short (the bins, how many IOs and runs each pools; a
    line from fio's rounded list said so) and in detail (how the percentiles are read)."""
    per_line = frame.drop_duplicates([c for c in ("run_id", "direction", "job") if c in frame.columns])
    ios = per_line["total_ios"].astype(float)
    n = f"{ios.min():,.0f}" if ios.min() == ios.max() else f"{ios.min():,.0f}–{ios.max():,.0f}"
    runs = per_line["runs"]
    r = f"{runs.min()}" if runs.min() == runs.max() else f"{runs.min()}–{runs.max()}"
    jobs = per_line["jobs"] / per_line["runs"]
    pooled = f"pooled over {r} run(s)" + (f" and their jobs ({jobs.max():g} a run)" if jobs.max() > 1 else "")
    short, more = [], []
    if (frame["source"] == FROM_BINS).any():
        short.append(f"fio json+ {kind} bins, {n} IOs a line, {pooled}")
        more.append("percentiles by fio's rule (exact to its bucket, ≤ 0.78 % wide)")
    if (frame["source"] == FROM_LIST).any():
        short.append(f"dashed: {FROM_LIST}")
        more.append("dashed, with fio's points marked: the output has no json+ bins")
    return "; ".join(short), "; ".join(more)


def _to_nines(p):
    return -np.log10(np.clip(1 - np.asarray(p, float) / 100, 1e-9, None))


def _from_nines(n):
    return 100 * (1 - 10 ** (-np.asarray(n, float)))


def _fraction_text(v, _pos=None) -> str:
    """1, 0.1, 0.01, 1e-3 ... as fractions of IOs read: "1", "0.1", "0.01", "10⁻³"."""
    if v >= 0.01:
        return f"{v:g}"
    return f"10$^{{{round(np.log10(v))}}}$"
