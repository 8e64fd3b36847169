"""The single-core tuning ladder (seed 000; the table of ``iolab.studies.ladder.run_ladder``): IOPS
per step with its gain over the previous kept step, the published ladder beside this machine's
(each over its own baseline), and the CPU cost of each step.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core.columns import label
from ..core.errors import InputError
from .common import NOTEBOOK_WIDTH_IN, axes_of, count_axis, fit_width, source_note


def ladder_waterfall(ladder: pd.DataFrame, ax=None, reference: pd.DataFrame | None = None):
    """IOPS per ladder step (mean over its repeats) with the gain over the previous kept step
    and, with repeats, its 95 % interval: "+12 % [4, 20]" (``run_ladder``'s ``gain_low_pct``,
    ``gain_high_pct``: bootstrap of the ratio of mean IOPS joined with Welch t). Skipped
    steps are drawn as empty slots labelled 'skipped' (the reason is in the table).
    ``reference``: the published ladder (label, iops) drawn as markers when it has one row
    per step."""
    own = ax is None
    ax = axes_of(ax)
    names = [f"{r.step}. {r.name}" for r in ladder.itertuples()]
    y = range(len(ladder))
    for i, r in enumerate(ladder.itertuples()):
        if r.status == "measured":
            ax.barh(i, r.iops, color=_step_color(r))
            ax.text(r.iops, i, f" {r.iops:,.0f}  {_gain_text(r)}", va="center", fontsize=8)
        else:
            ax.text(0, i, f"  {r.status}", va="center", fontsize=8, color="0.4", style="italic")
    if reference is not None and len(reference) == len(ladder):
        ax.scatter(reference["iops"], list(y), marker="|", s=200, color="k", label="published (seed 000)")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(0, 1.45 * np.nanmax(_iops(ladder), initial=1))  # room for the labels
    count_axis(ax, "x")
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(label("iops"))
    ax.set_title("Single-core tuning ladder: IOPS per step (gain vs the previous kept step)")
    source_note(
        ax,
        f"fio json+ / t/io_uring per step, {_runs(ladder)}, bars: means; grey: peak only, not carried "
        "forward; orange: t/io_uring",
        details=_gain_note(ladder),
    )
    if own:  # its step names and labels within the notebook's width, shown at its own size
        fit_width(ax)
    return ax


def _step_color(r) -> str:
    """Orange: t/io_uring; grey: a peak-only step not carried forward; blue: the rest."""
    return "#dd8452" if r.tool == "tio" else ("#4c72b0" if r.carried_forward else "#bbbbbb")


def _gain_text(r) -> str:
    """'+12 % [4, 20]' (gain and its 95 % interval), '+12 %' (one run per step), '' (no gain)."""
    gain, low, high = (getattr(r, c, np.nan) for c in ("gain_pct", "gain_low_pct", "gain_high_pct"))
    if pd.isna(gain):
        return ""
    return f"{gain:+.0f} %" + ("" if pd.isna(low) else f" [{low:.0f}, {high:.0f}]")


def _iops(ladder: pd.DataFrame) -> np.ndarray:
    """The steps' IOPS (all NaN when no step was measured: ``run_ladder`` then has no column)."""
    return ladder.get("iops", pd.Series(np.nan, index=ladder.index)).to_numpy(dtype=float)


def _runs(ladder: pd.DataFrame) -> str:
    """'3 repeats per step', '2–3 repeats per step' or 'one run per step' (measured steps)."""
    runs = ladder.get("runs", pd.Series(dtype=float)).dropna()
    low, high = (int(runs.min()), int(runs.max())) if len(runs) else (1, 1)
    if high < 2:
        return "one run per step"
    return f"{low} repeats per step" if low == high else f"{low}–{high} repeats per step"


def _gain_note(ladder: pd.DataFrame) -> str:
    if ladder.get("gain_low_pct", pd.Series(dtype=float)).notna().any():
        return (
            "gain [low, high]: its 95 % CI over both steps' repeats (bootstrap of the ratio of "
            "mean IOPS joined with Welch t)"
        )
    return "one run per step: the gains have no interval"


def ladder_normalised(ladder: pd.DataFrame, reference: pd.DataFrame, ax=None):
    """The published ladder beside this machine's, each as IOPS over its own baseline (the
    first published row, the first measured local step = 1.0×), in two panels sharing the
    x scale: absolute IOPS of different machines differ by orders of magnitude, the steps
    do not match one to one (the published ladder has a 5b), so the shapes are compared, not
    the rows. ``ladder``: ``run_ladder``'s table (skipped and failed steps drawn as named
    empty slots); ``reference``: published_figures.csv (its ``experiment == 'ladder'`` rows
    when it has the column: label, iops, source). ``ax``: two Axes (published, this
    machine), else a new figure. Returns the two Axes."""
    if "experiment" in reference:
        reference = reference[reference["experiment"] == "ladder"]
    pub_ax, loc_ax = _two_panels(ax, len(reference), len(ladder))
    pub = reference["iops"].to_numpy(dtype=float)
    _normalised_bars(
        pub_ax,
        list(reference["label"]),
        pub / pub[0],
        pub,
        ["#dd8452" if "t/io_uring" in str(n) else "#8172b3" for n in reference["label"]],
    )
    pub_ax.set_title(f"published (baseline: its first step, {pub[0]:,.0f} IOPS)", fontsize=9, loc="left")
    measured = ladder[ladder["status"] == "measured"]
    base = measured.iloc[0] if len(measured) else None
    _local_bars(loc_ax, ladder, base)
    loc_ax.set_title(
        "this machine"
        + (
            f" (baseline: step {base.step}, {base.iops:,.0f} IOPS)"
            if base is not None
            else ": no step measured, nothing to normalise"
        ),
        fontsize=9,
        loc="left",
    )
    top = max(np.nanmax(pub / pub[0]), np.nanmax(_iops(measured) / base.iops) if base is not None else 1)
    for a in (pub_ax, loc_ax):
        a.axvline(1, color="0.3", linewidth=0.8, linestyle=":")
        a.set_xlim(0, 1.8 * top)  # room for the value labels
    loc_ax.set_xlabel("IOPS / own baseline (×)")
    pub_ax.figure.suptitle("Tuning ladder: published vs this machine, each over its own baseline", fontsize=11)
    source_note(
        loc_ax,
        f"published: {reference['source'].iloc[0]}; this machine: {_runs(ladder)}, bars: means; "
        "the steps differ: compare shapes, not rows",
        width_in=4.0,  # beside the step names' column: wrapped to the bars' width, never wider than the figure
        details="published figures from data/reference/published_figures.csv; this machine: fio json+ / "
        "t/io_uring output per step; orange: t/io_uring; grey: peak-only step not carried forward",
    )
    if ax is None:
        fit_width(loc_ax)
    return pub_ax, loc_ax


def _two_panels(ax, rows_top: int, rows_bottom: int):
    """Two Axes stacked, sharing x, each as tall as its rows (or the pair given)."""
    if ax is not None:
        if not isinstance(ax, (tuple, list, np.ndarray)) or len(ax) != 2:
            raise InputError("ladder_normalised draws two panels: pass ax=(published_ax, local_ax) or no ax")
        return ax[0], ax[1]
    _, (top, bottom) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(NOTEBOOK_WIDTH_IN, 2.2 + 0.3 * (rows_top + rows_bottom)),
        height_ratios=[rows_top, rows_bottom],
        layout="constrained",
    )
    return top, bottom


def _normalised_bars(ax, names: list[str], ratio, iops, colors) -> None:
    """Horizontal bars of ``ratio`` (× baseline), each labelled '2.81×  (472,000 IOPS)'."""
    ax.barh(range(len(names)), ratio, color=colors)
    for i, (r, v) in enumerate(zip(ratio, iops)):
        if not np.isnan(r):  # out of the layout: constrained layout would shrink the axes to fit it
            ax.text(r, i, f" {r:.2f}×  ({v:,.0f} IOPS)", va="center", fontsize=8).set_in_layout(False)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)


def _local_bars(ax, ladder: pd.DataFrame, base) -> None:
    """This machine's steps over its baseline; skipped or failed steps an empty slot so named."""
    iops = np.where(ladder["status"] == "measured", _iops(ladder), np.nan)
    ratio = iops / base.iops if base is not None else iops
    colors = [_step_color(r) if r.status == "measured" else "none" for r in ladder.itertuples()]
    _normalised_bars(ax, [f"{r.step}. {r.name}" for r in ladder.itertuples()], ratio, iops, colors)
    for i, r in enumerate(ladder.itertuples()):
        if r.status != "measured":
            ax.text(
                0,
                i,
                f"  {r.status}: {textwrap.shorten(str(r.reason), 48, placeholder='…')}",
                va="center",
                fontsize=7.5,
                color="0.4",
                style="italic",
                clip_on=True,
            ).set_in_layout(False)


def ladder_cpu(ladder: pd.DataFrame, ax=None):
    """CPU busy (%) and cycles per IO per measured ladder step."""
    own = ax is None
    ax = axes_of(ax)
    m = ladder[ladder.status == "measured"]
    labels = [
        f"{r.step}. " + textwrap.fill(textwrap.shorten(str(r.name), 24, placeholder="…"), 14) for r in m.itertuples()
    ]
    ax.bar(labels, m["cycles_per_io"], color="#55a868")
    ax.set_ylabel(label("cycles_per_io"))
    ax.set_xlabel("ladder step")
    twin = ax.twinx()
    twin.plot(labels, m["cpu_busy_pct"], "o-", color="#c44e52")
    twin.set_ylabel("CPU busy (%)")
    twin.set_ylim(0, 105)
    src = ", ".join(sorted(m["freq_source"].dropna().unique())) if "freq_source" in m else "?"
    nominal = "; the frequency is nominal (/proc/cpuinfo, no cpufreq)" if "proc_cpuinfo" in src else ""
    count_axis(ax)
    ax.set_title("Cycles per IO (bars) and CPU busy (line) per step")
    source_note(ax, f"/proc/stat busy time × frequency ({src}) / IOs{nominal}", below_pt=64)  # under 2-line names
    if own:
        fit_width(ax)
    return ax


def climb_frontier(frontier: pd.DataFrame, latency: str = "clat_p99_us", ax=None, rule: str = ""):
    """The IOPS-latency frontier of each step of a climb (``iolab.studies.climb``'s
    ``frontier``): mean IOPS against mean ``latency`` (p99 or p50, log scale) over the depths
    the step's search measured, one line per step in depth order, each depth's QD beside its
    point and the step's operating point ringed ("in polling mode the latency impact shows up
    well before IOPS saturate": the line turns up before it turns right). ``rule``: how the
    operating points were chosen, for the caption."""
    if frontier.empty:
        raise InputError("the climb measured no step: nothing to draw (see its steps table for why)")
    own = ax is None
    ax = axes_of(ax)
    colors = plt.get_cmap("tab10")
    for k, (step, rows) in enumerate(frontier.sort_values(["step", "qd"]).groupby("step", sort=True)):
        rows = rows.dropna(subset=[latency])
        if rows.empty:
            continue
        color = colors(k % 10)
        ax.plot(rows["iops"], rows[latency], "o-", color=color, ms=3, lw=1.2, label=f"{step}. {rows['name'].iloc[0]}")
        for r in rows.itertuples():
            ax.annotate(f"QD {r.qd}", (r.iops, getattr(r, latency)), fontsize=8, color=color,
                        xytext=(6, 4), textcoords="offset points")  # fmt: skip
        chosen = rows[rows["chosen"]]
        ax.scatter(chosen["iops"], chosen[latency], s=120, facecolors="none", edgecolors=color, linewidths=1.6)
    ax.set_yscale("log")
    count_axis(ax, "x")
    ax.set_xlabel(label("iops"))
    ax.set_ylabel(label(latency))
    ax.set_title("IOPS against latency per step: each step's operating point ringed (numbers: queue depth)")
    ax.legend(fontsize=8, loc="best", framealpha=0.85)
    source_note(
        ax,
        "fio json+ per run; points: means over each depth's runs"
        + (f"; operating point: {rule}" if rule else "")
        + (
            "; emulated (iolab's NVMe lab): an emulator's numbers, not a device's"
            if frontier.attrs.get("emulated")
            else ""
        ),
    )
    if own:
        fit_width(ax)
    return ax
