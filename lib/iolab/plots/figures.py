"""The standard figures the notebooks share.

Every function takes a tidy frame and an optional ``ax``, labels axes from the column
registry (units included), writes where its numbers come from under the plot, marks
fallback-sourced values, and returns the ``ax``. Nothing here changes global style.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import StrMethodFormatter
import numpy as np
import pandas as pd
import seaborn as sns

from ..stats import compare
from ..stats.analysis import Knee, KneeEstimate
from ..core.columns import label
from ..core.readable import percent, readable_number, si_number
from ..core.errors import InputError

PALETTE = {"iops": "#1f77b4", "p50": "#2ca02c", "p99": "#d62728", "knee": "#7f7f7f"}
CV_LIMIT = 0.10  # a cell is unstable above this coefficient of variation over repeats (pyperf: 10 %)
UNSTABLE = f"unstable: CV > {100 * CV_LIMIT:g} % over repeats"
UNSTABLE_COLOR = "#e31a1c"
# inches: the widest figure JupyterLab shows at its own size (100 dpi) in a 1280-px window with
# the file browser open (848 px of output; a legend outside the axes widens the saved figure);
# a wider one is scaled down, and its 8-pt labels with it, below 10 px
NOTEBOOK_WIDTH_IN = 8.2


def _ax(ax):
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


def _log2_qd_axis(ax, qds) -> None:
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

    Each line is the mean over repeats (``compare.summarise``: a repeat is one run, its jobs'
    IOPS summed); the band is the 95 % confidence interval of that mean (Student t for IOPS,
    bootstrap joined with t for the percentiles). A QD whose IOPS vary by more than 10 %
    (coefficient of variation) over its repeats is unstable, as pyperf warns: a red ring on
    its point, the likely cause in the source note. One run per QD: no band, nothing flagged.
    A ``KneeEstimate`` (``analysis.knee_with_interval``) also shades its bootstrap interval
    [low, high], widened by a quarter of a doubling each side so a one-QD interval stays
    visible, and names it in the legend: "knee QD 16 (90 % of resamples in [8, 16])"."""
    own = ax is None  # a figure of its own: fitted to the notebook (a caller's grid is left alone)
    ax = _ax(ax)
    cells = _cells(df, x, ["iops"])
    handles = [_mean_band(ax, cells, x, "iops", PALETTE["iops"], "o", "-", "IOPS")]
    handles += _unstable_rings(ax, cells, x, "iops")
    ax.set_ylabel(label("iops"))
    ax.set_ylim(0, 1.3 * np.nanmax(cells[["iops_mean", "iops_ci_high"]].to_numpy()))  # headroom: legend
    _thousands(ax)
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
    source_note(
        ax,
        "; ".join(
            t
            for t in (
                f"fio json+{version}",
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
    """``compare.summarise`` of ``metrics`` per value of ``x`` (``<m>_mean``, ``<m>_ci_low``,
    ``<m>_ci_high``: the 95 % interval of the mean over repeats; ``<m>_cv_pct``; ``n``;
    ``unstable`` at CV > ``CV_LIMIT``), in ``order`` (else numbers sorted, else as they appear)."""
    cells = compare.summarise(df, by=[x], metrics=metrics, cv_threshold=CV_LIMIT)
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
        f"knee: QD {knee.x:g}\n{knee.y:,.0f} IOPS" + (" (median)" if estimate else ""),
        xy=(knee.x, knee.y),
        xytext=(8, -30),
        textcoords="offset points",
        fontsize=9,
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
    )
    return handles


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
    how = "Student t" if compare.method(metric) == "t" else "bootstrap joined with Student t"
    return f"95 % CI of the mean over {_repeats(cells)} repeats ({how})"


def _unstable_note(cells: pd.DataFrame, x: str, what: str) -> str:
    """Which cells are unstable and why (``compare.summarise``'s ``unstable_why``)."""
    if cells.n.max() < 2:
        return ""
    bad = cells[cells["unstable"]]
    if bad.empty:
        return f"no {what} unstable (CV ≤ {100 * CV_LIMIT:g} % over repeats)"
    return "unstable: " + "; ".join(f"{what} {_tick(r[x])}: {r['unstable_why']}" for _, r in bad.iterrows())


def _thousands(ax, axis: str = "y") -> None:
    """Tick labels with thousands separators (400,000 rather than 400000)."""
    getattr(ax, f"{axis}axis").set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def _tick(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)


def cpu_busy(df: pd.DataFrame, ax=None, x: str = "qd", title: str | None = None):
    """Stacked busy share (user, system, irq, softirq) of the pinned CPUs vs queue depth:
    the saturation picture of seed 000 (IOPS stop growing when this reaches 100 %)."""
    ax = _ax(ax)
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
    source_note(ax, "/proc/stat per-CPU counters sampled every 0.5 s, first and last 10 % trimmed")
    flag_banner(ax, df)
    return ax


def cycles_per_io(df: pd.DataFrame, ax=None, x: str = "qd"):
    """Cycles per IO vs queue depth (``by_setting``: 95 % interval, unstable cells hatched),
    labelled with the frequency source."""
    src = ", ".join(sorted(df["freq_source"].dropna().unique())) if "freq_source" in df else "?"
    fallback = " (nominal frequency: no cpufreq)" if "proc_cpuinfo" in src else ""
    return by_setting(
        df,
        x,
        "cycles_per_io",
        ax=ax,
        title=f"CPU cycles per IO{fallback}",
        source=f"busy CPU s (/proc/stat) x frequency ({src}) / IOs (fio)",
    )


def reference_bars(
    ref: pd.DataFrame, local: pd.DataFrame | None = None, ax=None, value: str = "iops", by: str = "label"
):
    """Published figures (``ref``: label, value, source) beside local ones."""
    own = ax is None
    ax = _ax(ax)
    frames = [ref.assign(origin="published")]
    if local is not None:
        frames.append(local.assign(origin="this machine"))
    both = pd.concat(frames, ignore_index=True)
    sns.barplot(data=both, y=by, x=value, hue="origin", ax=ax, orient="h", errorbar=None)
    ax.set_xlabel(label(value))
    ax.set_ylabel("")
    ax.set_title("Published figures beside this machine")
    si_axis(ax, "x")
    source_note(ax, "; ".join(sorted(ref["source"].dropna().unique())))
    if own:
        fit_width(ax)
    return ax


def ladder_waterfall(ladder: pd.DataFrame, ax=None, reference: pd.DataFrame | None = None):
    """IOPS per ladder step (mean over its repeats) with the gain over the previous kept step
    and, with repeats, its 95 % interval: "+12 % [4, 20]" (``run_ladder``'s ``gain_low_pct``,
    ``gain_high_pct``: bootstrap of the ratio of mean IOPS joined with Welch t). Skipped
    steps are drawn as empty slots labelled 'skipped' (the reason is in the table).
    ``reference``: the published ladder (label, iops) drawn as markers when it has one row
    per step."""
    ax = _ax(ax)
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
    _thousands(ax, "x")
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(label("iops"))
    ax.set_title("Single-core tuning ladder: IOPS per step (gain vs the previous kept step)")
    source_note(
        ax,
        f"fio json+ / t/io_uring output per step ({_runs(ladder)}; bars: means); "
        f"{_gain_note(ladder)}; grey: peak-only step not carried forward; orange: t/io_uring",
    )
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
    pub_ax.set_title(
        f"published, {reference['source'].iloc[0]} (baseline: {reference['label'].iloc[0]}, {pub[0]:,.0f} IOPS)",
        fontsize=9,
        loc="left",
    )
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
        a.set_xlim(0, 1.35 * top)  # room for the value labels
    loc_ax.set_xlabel("IOPS / own baseline (×)")
    pub_ax.figure.suptitle("Tuning ladder: published vs this machine, each normalised to its own baseline", fontsize=11)
    source_note(
        loc_ax,
        f"published: {reference['source'].iloc[0]} (data/reference/published_figures.csv); "
        f"this machine: {_runs(ladder)} (fio json+ / t/io_uring), bars are means; "
        "orange: t/io_uring; grey: peak-only step not carried forward; the two ladders' "
        "steps differ, so compare shapes, not rows",
    )
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
        if not np.isnan(r):
            ax.text(r, i, f" {r:.2f}×  ({v:,.0f} IOPS)", va="center", fontsize=8)
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
                f"  {r.status}: {textwrap.shorten(str(r.reason), 60, placeholder='…')}",
                va="center",
                fontsize=7.5,
                color="0.4",
                style="italic",
            )


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
    the 95 % CI of that mean (``compare.summarise``: Student t, or bootstrap joined with t for
    percentiles and ratios such as ``dev_read_req_kib`` and ``cycles_per_io``). Bars of cells
    whose ``y`` varies by more than 10 % (CV) over repeats are hatched and labelled
    'unstable'. ``order``: the x values in order (else numbers sorted, else as they appear)."""
    ax = _ax(ax)
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
    for bar, p, m, top, unstable in zip(bars, pos, mean, np.fmax(mean, high), cells["unstable"]):
        if unstable:
            bar.set(hatch="//", edgecolor="0.15", gid="unstable")
        ax.annotate(
            ("" if np.isnan(m) else readable_number(repr(float(m)))) + (" unstable" if unstable else ""),
            (p, top),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color=UNSTABLE_COLOR if unstable else "0.1",
        )
    ax.set_xticks(pos, [_tick(v) for v in cells[x]])
    ax.margins(y=0.12)
    if np.nanmax(np.fmax(mean, high), initial=0) >= 10_000:
        _thousands(ax)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(y))
    ax.set_title(title or f"{label(y)} by {label(x)}")
    bars_note = (
        f"bars: mean of {_repeats(cells)} repeats per {label(x)}; whiskers: {_band_note(cells, 'bar', y)}"
        if cells.n.max() > 1
        else _band_note(cells, label(x), y)
    )
    unstable = _unstable_note(cells, x, label(x)).replace("unstable: ", "hatched, unstable: ")
    source_note(ax, "; ".join(t for t in (source, bars_note, unstable) if t))
    flag_banner(ax, df)
    return ax


# ---------------------------------------------------------------- reading a search (iolab.stats.effects)
def main_effects(effects: pd.DataFrame, ax=None, title: str | None = None):
    """Main-effects plot of a search (``effects.main_effects``): one panel per axis, largest
    effect first, sharing the y axis so effects compare by eye. Points are the level means
    (each the mean of the level's cell means: every combination of the other settings counts
    once), whiskers their 95 % interval (the repeats' noise: per-cell variances,
    Welch–Satterthwaite t); the dotted line is the grand mean. Blue: the extreme levels'
    intervals are apart; grey: no difference the repeats can show. Panel titles give the
    effect size (highest - lowest level mean, % of the grand mean). Axes with one level are
    named in the source note. ``ax``: as many Axes as axes with two or more levels, else a
    new figure. Returns the panels (an array of Axes)."""
    metric = effects.attrs.get("metric") or next(c[:-5] for c in effects.columns if c.endswith("_mean"))
    order = (
        effects.drop_duplicates("axis").sort_values("effect_pct", ascending=False, na_position="last")["axis"].tolist()
    )
    if not order:
        raise InputError(
            "no axis with two or more levels to draw: the search varied nothing "
            f"({'; '.join(f'{k}: {v}' for k, v in effects.attrs.get('skipped', {}).items()) or 'empty'})"
        )
    panels = _effect_panels(ax, len(order))
    grand = effects.attrs.get("grand_mean", np.nan)
    for p, axis in zip(panels, order):
        part = effects[effects["axis"] == axis].sort_values("level_index")
        x = np.arange(len(part))
        mean, low, high = (part[f"{metric}_{k}"].to_numpy(dtype=float) for k in ("mean", "ci_low", "ci_high"))
        apart = part["separated"].iloc[0]
        color = "0.55" if pd.isna(apart) or not apart else PALETTE["iops"]
        has = ~np.isnan(low)
        p.plot(x, mean, "o-", color=color, markersize=6, linewidth=1.2, gid=f"{axis} means")
        if has.any():
            p.errorbar(
                x[has],
                mean[has],
                yerr=[mean[has] - low[has], high[has] - mean[has]],
                fmt="none",
                ecolor=color,
                elinewidth=1.4,
                capsize=4,
                gid=f"{axis} intervals",
            )
        if not np.isnan(grand):
            p.axhline(grand, color="0.5", linestyle=":", linewidth=1, gid="grand mean")
        ticks = [_level_tick(v) for v in part["level"]]
        crowded = max(len(t) for t in ticks) * len(ticks) > 30
        p.set_xticks(x, ticks, rotation=30 if crowded else 0, ha="right" if crowded else "center", fontsize=8)
        p.set_xlim(-0.5, len(x) - 0.5)
        p.set_xlabel(label(axis))
        verdict = "no interval" if pd.isna(apart) else "intervals apart" if apart else "no difference shown"
        p.set_title(
            f"{axis}: {part['effect_pct'].iloc[0]:.0f} % of mean\n{verdict}",
            fontsize=9,
            color="0.1" if color != "0.55" else "0.4",
        )
        si_axis(p)
    for p in panels[:: _ncols(panels)]:
        p.set_ylabel(label(metric))
    panels[0].figure.suptitle(
        title or f"Main effects: mean {label(metric)} at each level, over the other settings", fontsize=11
    )
    skipped = effects.attrs.get("skipped", {})
    repeats = effects.attrs.get("repeats", "")
    _figure_note(
        panels[(len(panels) - 1) // _ncols(panels) * _ncols(panels)],
        "; ".join(
            t
            for t in (
                f"search runs ({repeats}), one point per level: the mean of its cell means",
                "whiskers: 95 % CI of that mean from the repeats (per-cell variances, Welch-Satterthwaite t)"
                if "no interval" not in repeats
                else "one run per cell: no interval",
                "dotted: grand mean; blue: extreme levels' intervals apart, grey: not (non-overlap is a conservative "
                "test, Schenker & Gentleman 2001)",
                f"not drawn (one level): {', '.join(skipped)}" if skipped else "",
            )
            if t
        ),
    )
    return panels


def _level_tick(v) -> str:
    """A level as a tick: booleans as on / off (YAML reads on/off as booleans)."""
    return ("on" if v else "off") if isinstance(v, (bool, np.bool_)) else _tick(v)


def _effect_panels(ax, n: int) -> np.ndarray:
    """``n`` panels: those given, or a new figure with up to 4 per row sharing y."""
    if ax is not None:
        panels = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
        if len(panels) < n:
            raise InputError(
                f"main_effects draws {n} panels (one per axis with two or more levels): pass {n} Axes or no ax"
            )
        return panels[:n]
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(
        nrows, ncols, figsize=(min(2.9 * ncols + 0.8, NOTEBOOK_WIDTH_IN), 3.2 * nrows + 0.9), sharey=True, squeeze=False
    )
    _spaced(fig, row_gap_in=1.25, col_gap_in=0.25)
    for extra in grid.ravel()[n:]:
        extra.set_visible(False)
    panels = grid.ravel()[:n]
    panels[0].figure._iolab_ncols = ncols
    return panels


def _spaced(fig, row_gap_in: float, col_gap_in: float, top_in: float = 0.75, left_in: float = 0.8) -> None:
    """Panels placed by hand, gaps in inches (room for two-line titles, tick labels and axis
    labels): a layout engine would squeeze the panel that carries the wide source note."""
    w, h = fig.get_size_inches()
    grid = fig.axes[0].get_subplotspec().get_gridspec()
    nrows, ncols = grid.get_geometry()
    bottom_in = 0.6
    axes_h = (h - top_in - bottom_in - row_gap_in * (nrows - 1)) / nrows
    axes_w = (w - left_in - 0.2 - col_gap_in * (ncols - 1)) / ncols
    fig.subplots_adjust(
        left=left_in / w,
        right=1 - 0.2 / w,
        top=1 - top_in / h,
        bottom=bottom_in / h,
        hspace=row_gap_in / axes_h,
        wspace=col_gap_in / axes_w,
    )


def _ncols(panels) -> int:
    return getattr(panels[0].figure, "_iolab_ncols", len(panels))


def si_axis(ax, axis: str = "y") -> None:
    """Compact tick labels (400k, 1.2M) when the axis reaches 10,000."""
    lo, hi = getattr(ax, f"get_{axis}lim")()
    if max(abs(lo), abs(hi)) >= 1e4:
        getattr(ax, f"{axis}axis").set_major_formatter(si_number)


def _figure_note(ax, text: str) -> None:
    """``source_note`` under ``ax``, wrapped to the figure's width rather than the panel's
    (small multiples: the note runs under the whole row)."""
    source_note(ax, text, width_in=ax.figure.get_figwidth() * 0.92, below_pt=48)


def interaction_heatmap(
    pivot: pd.DataFrame, a: str | None = None, b: str | None = None, metric: str | None = None, ax=None
):
    """The (a, b) cell means of a search (``effects.interaction``) as a heatmap: ``a`` on the
    rows, ``b`` on the columns, each cell annotated with its mean and, below it, its
    departure from the no-interaction model (the two-way ANOVA interaction term,
    Montgomery §5.3: on the log scale for the multiplicative model, a ratio in %; in % of
    the grand mean for the additive one). The colour bar carries the metric's unit; the
    title the interaction strength and its F test."""
    a, b = a or pivot.attrs.get("a", pivot.index.name), b or pivot.attrs.get("b", pivot.columns.name)
    metric = metric or pivot.attrs.get("metric", "iops")
    ax = _ax(ax)
    values = pivot.to_numpy(dtype=float)
    departure = np.asarray(pivot.attrs.get("departure_pct", np.full(values.shape, np.nan)), dtype=float)
    annot = np.array(
        [
            [
                ("" if np.isnan(v) else si_number(v) + ("" if np.isnan(d) else f"\n{percent(d, signed=True)}"))
                for v, d in zip(vr, dr)
            ]
            for vr, dr in zip(values, departure)
        ],
        dtype=object,
    )
    sns.heatmap(
        pd.DataFrame(
            values, index=[_level_tick(v) for v in pivot.index], columns=[_level_tick(v) for v in pivot.columns]
        ),
        annot=annot,
        fmt="",
        cmap="viridis",
        mask=np.isnan(values),
        linewidths=0.5,
        linecolor="white",
        cbar_kws={"label": label(metric), "format": si_number},
        annot_kws={"fontsize": 8},
        ax=ax,
    )
    ax.set_ylabel(label(a))
    ax.set_xlabel(label(b))
    ax.tick_params(axis="y", rotation=0)
    model = pivot.attrs.get("model", "multiplicative")
    strength, p_value = pivot.attrs.get("interaction_pct", np.nan), pivot.attrs.get("p_value", np.nan)
    test = (
        "one run per cell: no test"
        if np.isnan(p_value)
        else f"{'shown' if p_value < 0.05 else 'not shown'} at 5 %, "
        + ("p < 0.001" if p_value < 0.001 else f"p = {p_value:.2g}")
    )
    ax.set_title(f"{label(metric).split(' (')[0]}: {a} × {b}; interaction {strength:.1f} % ({test})", fontsize=10)
    scale = (
        "log scale: each cell over its no-interaction prediction, geometric mean_a × mean_b / grand mean, %"
        if model == "multiplicative"
        else "raw scale: each cell minus (mean_a + mean_b - grand mean), % of the grand mean"
    )
    source_note(
        ax,
        f"search runs; cell: mean over repeats and the other settings' cells; second line: departure "
        f"from the no-interaction model ({scale}); interaction: its root mean square; F test of the "
        f"two-way ANOVA interaction against the within-cell mean square (Montgomery, Design and "
        f"Analysis of Experiments, §5.3); blank: not measured",
    )
    return ax


def roofline(roof: dict, reference: pd.DataFrame | None = None, ax=None):
    """The roofline of a search (``effects.roofline``): the aggregate metric against the
    number of devices and of cores, one panel each (log-log: linear scaling is a line of
    slope 1). Points: the aggregate (mean with its 95 % interval) and its efficiency, % of
    roof × N; dashed: roof × N (the best single-device cell for devices, the best one-core
    cell for cores); dotted on the cores panel: roof × the devices of each point's cell, the
    ceiling the devices set. ``reference``: published figures (``label``, the metric,
    ``source``; ``devices`` and ``cores`` columns, or 'N devices' in the label) drawn as
    hollow diamonds with their own roof × N (seed 003: 3 857 938 IOPS per device, 61 720 159
    with 16 devices, data/reference/published_figures.csv). A search without devices or
    cores axes draws the roof alone, said so. Returns the panels (an array of Axes)."""
    metric = roof["metric"]
    present = [x for x in ("devices", "cores") if roof.get(x) is not None]
    ref = _reference_counts(reference, metric)
    if ax is not None:
        panels = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
        if len(panels) < max(1, len(present)):
            raise InputError(
                f"roofline draws {len(present)} panels ({', '.join(present)}): pass that many Axes or no ax"
            )
    else:
        fig, grid = plt.subplots(
            1,
            max(1, len(present)),
            figsize=(min(5.6 * max(1, len(present)) + 0.4, NOTEBOOK_WIDTH_IN), 4.8),
            squeeze=False,
        )
        _spaced(fig, row_gap_in=0, col_gap_in=0.9)
        panels = grid.ravel()
    if not present:
        p = panels[0]
        r = roof["roof"]
        p.bar([0], [r["value"]], color=PALETTE["iops"], width=0.5, gid="roof")
        if not np.isnan(r["ci_low"]):
            p.errorbar(
                [0],
                [r["value"]],
                yerr=[[r["value"] - r["ci_low"]], [r["ci_high"] - r["value"]]],
                fmt="none",
                ecolor="0.15",
                capsize=5,
            )
        p.annotate(
            f"{si_number(r['value'])}\n{r['config']}",
            (0, r["value"]),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
        )
        p.set_xticks([0], ["roof (best cell)"])
        p.set_xlim(-1, 1)
        p.margins(y=0.25)
        p.set_ylabel(label(metric))
        p.set_title("Roof only: this search has no devices or cores axis", fontsize=10)
        si_axis(p)
    for p, axis in zip(panels, present):
        _roofline_panel(p, roof, axis, ref)
    if present:
        panels[0].figure.suptitle(
            f"Roofline: aggregate {label(metric).split(' (')[0]} vs {' and '.join(present)}", fontsize=11
        )
    sources = (
        "; ".join(g.loc[g.str.len().idxmax()] for _, g in ref["source"].dropna().astype(str).groupby(ref["seed_label"]))
        if ref is not None and "source" in ref
        else ""
    )
    _figure_note(
        panels[0],
        "; ".join(
            t
            for t in (
                "search runs; points: mean with 95 % CI; labels: efficiency, % of roof × N"
                if present
                else "search runs; bar: the best cell's mean, whisker: its 95 % CI",
                "; ".join(roof.get("notes", [])),
                f"published: {sources} (data/reference/published_figures.csv)" if sources else "",
            )
            if t
        ),
    )
    return panels[: max(1, len(present))]


def _roofline_panel(p, roof: dict, axis: str, ref: pd.DataFrame | None) -> None:
    metric = roof["metric"]
    frame = roof[axis]
    unit = roof["roof"] if axis == "devices" else roof["core_roof"]
    m = frame[frame[f"{metric}_mean"].notna()]
    n = m[axis].to_numpy(dtype=float)
    mean, low, high = (m[f"{metric}_{k}"].to_numpy(dtype=float) for k in ("mean", "ci_low", "ci_high"))
    xs = set(frame[axis].astype(float))
    if ref is not None and axis in ref:
        xs |= set(ref[axis].dropna().astype(float))
    xs = np.array(sorted(xs))
    word = "device" if axis == "devices" else "core"
    p.plot(
        xs,
        unit["value"] * xs,
        "--",
        color="0.3",
        linewidth=1.2,
        gid="roof x N",
        label=f"roof × N ({si_number(unit['value'])} per {word}: best one-{word} cell)",
    )
    if "device_bound" in m and m["device_bound"].notna().any():
        ceiling = float(m["device_bound"].max())
        p.axhline(
            ceiling,
            linestyle=":",
            color="#8c564b",
            linewidth=1.5,
            gid="device ceiling",
            label=f"device ceiling: roof × {ceiling / roof['roof']['value']:.0f} devices",
        )
    has = ~np.isnan(low)
    p.plot(n, mean, "o-", color=PALETTE["iops"], markersize=6, gid="measured", label="this machine (mean, 95 % CI)")
    if has.any():
        p.errorbar(
            n[has],
            mean[has],
            yerr=[mean[has] - low[has], high[has] - mean[has]],
            fmt="none",
            ecolor=PALETTE["iops"],
            capsize=4,
        )
    for x, y, eff in zip(n, mean, m["efficiency_pct"]):
        p.annotate(
            f"{eff:.0f} %",
            (x, y),
            xytext=(0, -14),
            textcoords="offset points",
            ha="center",
            fontsize=8,
            color=PALETTE["iops"],
            gid="efficiency",
        )
    if ref is not None and axis in ref:
        _published(p, ref, axis, metric)
    p.set_xscale("log", base=2)
    p.set_yscale("log")
    p.set_xticks(xs, [f"{x:g}" for x in xs])
    p.minorticks_off()
    p.set_xlabel(label(axis))
    p.set_ylabel(f"aggregate {label(metric)}")
    p.yaxis.set_major_locator(plt.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    p.yaxis.set_major_formatter(si_number)
    lo, hi = p.get_ylim()
    p.set_ylim(lo / 1.6, hi * 2.2)  # room for the labels and the legend
    p.legend(fontsize=7.5, loc="upper left", framealpha=0.85)
    p.set_title(f"vs {axis}", fontsize=10)


def _published(p, ref: pd.DataFrame, axis: str, metric: str) -> None:
    """Published points (hollow diamonds), their roof × N and the best one's efficiency."""
    pts = ref[ref[axis].notna()]
    if pts.empty:
        return
    devices = (
        ""
        if axis == "devices" or pts["devices"].isna().all()
        else f", {'/'.join(f'{d:g}' for d in sorted(pts['devices'].dropna().unique()))} devices"
    )
    p.scatter(
        pts[axis],
        pts[metric],
        marker="D",
        s=40,
        facecolors="none",
        edgecolors="#dd8452",
        linewidths=1.5,
        zorder=4,
        gid="published",
        label=f"published ({', '.join(sorted(set(pts['seed_label'])))}{devices})",
    )
    one = ref[(ref.get("devices") == 1)] if "devices" in ref else ref.iloc[0:0]
    if axis == "devices" and len(one):
        roof = float(one[metric].max())
        xs = np.array(sorted(set(pts[axis].astype(float)) | {1.0}))
        p.plot(
            xs,
            roof * xs,
            "--",
            color="#dd8452",
            linewidth=1,
            alpha=0.8,
            gid="published roof x N",
            label=f"published roof × N ({si_number(roof)} per device)",
        )
        for x, g in pts.groupby(axis):
            top = g[metric].max()
            p.annotate(
                f"{100 * top / (roof * x):.0f} %",
                (x, top),
                xytext=(0, 8),
                textcoords="offset points",
                ha="center",
                fontsize=8,
                color="#dd8452",
                gid="published efficiency",
            )


def _reference_counts(reference: pd.DataFrame | None, metric: str) -> pd.DataFrame | None:
    """Published rows with ``devices`` and ``cores`` as numbers (from the columns, else from
    'N devices' / 'N cores' in the label) and a short ``seed_label``."""
    if reference is None or reference.empty:
        return None
    if metric not in reference:
        raise InputError(f"the reference has no {metric!r} column: pass published rows with the roofline's metric")
    ref = reference.copy()
    text = ref["label"].astype(str) if "label" in ref else pd.Series("", index=ref.index)
    for axis, word in (("devices", "device"), ("cores", "core")):
        parsed = pd.to_numeric(text.str.extract(rf"(\d+)\s*{word}s?\b", expand=False), errors="coerce")
        ref[axis] = pd.to_numeric(ref[axis], errors="coerce").fillna(parsed) if axis in ref else parsed
    ref["seed_label"] = ("seed " + ref["seed"].astype(str).str.zfill(3)) if "seed" in ref else "published"
    return ref
