"""Reading a search (``iolab.stats.effects``, ``interactions`` and ``roofline`` on the table of an ``iolab.measure.search`` run, seed
003): the main effect of each axis, the interaction of two axes as a heatmap, and the roofline of
the aggregate against devices and cores beside the published figures.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..core.columns import label
from ..core.errors import InputError
from ..core.readable import interval_text, percent, si_number
from ..stats.search_cells import level_text
from .common import (
    NOTEBOOK_WIDTH_IN,
    PALETTE,
    CountFormatter,
    axes_of,
    count_axis,
    log_count_axis,
    source_note,
    tick_labels,
    tick_text,
)


def main_effects(effects: pd.DataFrame, ax=None, title: str | None = None):
    """Main-effects plot of a search (``effects.main_effects``): one panel per axis, largest
    effect first, sharing the y axis so effects compare by eye. Points are the level means
    (each the mean of the level's cell means: every combination of the other settings counts
    once), whiskers their 95 % interval (the repeats' noise: per-cell variances,
    Welch–Satterthwaite t); the dotted line is the grand mean. Blue: the extreme levels'
    intervals are apart; grey: no difference the repeats can show. Panel titles give the
    effect on the scale of the text (``effects.EFFECT_SCALE``: the change of the mean from the
    lowest level to the highest, % of the lowest), largest first. Axes with one level are
    named in the source note. ``ax``: as many Axes as axes with two or more levels, else a
    new figure. Returns the panels (an array of Axes)."""
    metric = effects.attrs.get("metric") or next(c[:-5] for c in effects.columns if c.endswith("_mean"))
    order = (
        effects.drop_duplicates("axis").sort_values("change_pct", ascending=False, na_position="last")["axis"].tolist()
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
            f"{label(axis).split(' (')[0]}: {_level_tick(part['high_level'].iloc[0])} "
            f"{percent(part['change_pct'].iloc[0], signed=True)} over {_level_tick(part['low_level'].iloc[0])}"
            f"\n{verdict}",
            fontsize=9,
            color="0.1" if color != "0.55" else "0.4",
        )
        count_axis(p)
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
                f"search runs ({repeats}); titles: the change of the mean from the lowest level to the highest, "
                "% of the lowest",
                f"not drawn (one level): {', '.join(skipped)}" if skipped else "",
            )
            if t
        ),
        details="; ".join(
            (
                "one point per level: the mean of its cell means",
                "whiskers: 95 % CI of that mean from the repeats (per-cell variances, Welch-Satterthwaite t)"
                if "no interval" not in repeats
                else "one run per cell: no interval",
                "dotted: grand mean; blue: extreme levels' intervals apart, grey: not (non-overlap is a conservative "
                "test, Schenker & Gentleman 2001)",
            )
        ),
    )
    return panels


def _level_tick(v) -> str:
    """A level as a tick: booleans as on / off (YAML reads on/off as booleans)."""
    return ("on" if v else "off") if isinstance(v, (bool, np.bool_)) else tick_text(v)


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


def _figure_note(ax, text: str, details: str = "") -> None:
    """``source_note`` under ``ax``, wrapped to the figure's width rather than the panel's
    (small multiples: the note runs under the whole row)."""
    source_note(ax, text, width_in=ax.figure.get_figwidth() * 0.92, below_pt=48, details=details)


def interaction_heatmap(
    pivot: pd.DataFrame, a: str | None = None, b: str | None = None, metric: str | None = None, ax=None
):
    """The (a, b) cell means of a search (``iolab.stats.interactions.interaction``) as a heatmap: ``a`` on the
    rows, ``b`` on the columns, each cell annotated with its mean and, below it, its
    departure from the no-interaction model (the two-way ANOVA interaction term,
    Montgomery §5.3: on the log scale for the multiplicative model, a ratio in %; in % of
    the grand mean for the additive one). The colour bar carries the metric's unit; the
    title the interaction strength and its F test."""
    a, b = a or pivot.attrs.get("a", pivot.index.name), b or pivot.attrs.get("b", pivot.columns.name)
    metric = metric or pivot.attrs.get("metric", "iops")
    ax = axes_of(ax)
    values = pivot.to_numpy(dtype=float)
    departure = np.asarray(pivot.attrs.get("departure_pct", np.full(values.shape, np.nan)), dtype=float)
    shown = dict(zip(values[~np.isnan(values)], tick_labels(values[~np.isnan(values)])))  # one style for all cells
    annot = np.array(
        [
            [
                ("" if np.isnan(v) else shown[v] + ("" if np.isnan(d) else f"\n{percent(d, signed=True)}"))
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
        cbar_kws={"label": label(metric), "format": CountFormatter()},
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
        "search runs; cell: mean, below it the departure from the no-interaction model (%); "
        "two-way ANOVA (Montgomery §5.3)",
        details=f"cell: mean over repeats and the other settings' cells; departure: {scale}; interaction: its "
        f"root mean square; F test of the two-way ANOVA interaction against the within-cell mean square "
        f"(Montgomery, Design and Analysis of Experiments, §5.3); blank: not measured",
    )
    return ax


def roofline(roof: dict, reference: pd.DataFrame | None = None, ax=None):
    """The roofline of a search (``iolab.stats.roofline.roofline``): the aggregate metric against the
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
        count_axis(p)
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
        (
            "search runs; points: mean with 95 % CI; labels: efficiency, % of roof × N"
            if present
            else "search runs; bar: the best cell's mean, whisker: its 95 % CI"
        )
        + (
            f"; published: {', '.join(sorted(set(ref['seed_label'])))} (data/reference/published_figures.csv)"
            if sources
            else ""
        ),
        details="; ".join(
            t for t in ("; ".join(roof.get("notes", [])), f"published: {sources}" if sources else "") if t
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
    log_count_axis(p, subs=(1.0, 2.0, 5.0))
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


# ---------------------------------------------------------------- the tables beside the figures
def _unit(metric: str) -> str:
    """' (IO/s)' of a metric's label, '' without a unit."""
    unit = label(metric).partition(" (")[2].rstrip(")")
    return f" ({unit})" if unit else ""


def _interval(low: float, high: float, fmt: str = "{:,.0f}") -> str:
    """'[8,233; 11,394]', '' without an interval."""
    return "" if pd.isna(low) or pd.isna(high) else interval_text(fmt.format(low), fmt.format(high))


def interaction_table(inter: pd.DataFrame) -> pd.DataFrame:
    """``interactions.interactions``'s table in words: the pair, the interaction strength and
    largest departure in %, where, the F test's F and p and whether it is shown at 5 %."""
    p_text = [("n/a" if pd.isna(p) else "< 0.001" if p < 0.001 else f"{p:.2g}") for p in inter["p_value"]]
    return pd.DataFrame(
        {
            "settings": [f"{a} × {b}" for a, b in zip(inter["a"], inter["b"])],
            "interaction (RMS departure)": [percent(v) for v in inter["interaction_pct"]],
            "largest departure": [percent(v) for v in inter["max_departure_pct"]],
            "at": inter["where"],
            "F": ["n/a" if pd.isna(f) else f"{f:.2g}" for f in inter["f_stat"]],
            "p-value": p_text,
            "shown at 5 %": [
                "no test (one run per cell)" if pd.isna(s) else "yes" if s else "no" for s in inter["shown"]
            ],
        }
    )


def ties_table(ties: pd.DataFrame, axes, metric: str) -> pd.DataFrame:
    """``best_config``'s tied cells in words: the settings, the mean, and how far the best is
    ahead (% of the tie's mean, with Dunnett's simultaneous interval in one cell)."""
    out = pd.DataFrame({label(a): [level_text(v) for v in ties[a]] for a in axes}, index=ties.index)
    out[f"mean {label(metric).split(' (')[0]}{_unit(metric)}"] = ties[f"{metric}_mean"].round()
    out["the best is ahead by"] = [
        f"{percent(r, signed=True)} {_interval(lo, hi, '{:+.0f}')}".strip()
        for r, lo, hi in zip(ties["ratio_pct"], ties["low_pct"], ties["high_pct"])
    ]
    return out


def roof_table(frame: pd.DataFrame, axis: str, metric: str) -> pd.DataFrame:
    """One roofline panel's points (``roofline(...)[axis]``) in words: the count, the
    aggregate with its 95 % interval, roof × N and the efficiency with its interval."""
    words = label(metric).split(" (")[0]
    return pd.DataFrame(
        {
            axis: frame[axis].map(lambda v: f"{v:g}"),
            f"aggregate {words}{_unit(metric)}": frame[f"{metric}_mean"].round(),
            "95 % CI": [_interval(lo, hi) for lo, hi in zip(frame[f"{metric}_ci_low"], frame[f"{metric}_ci_high"])],
            f"roof × {axis}{_unit(metric)}": frame["roof_x_n"].round(),
            "efficiency (% of roof × N)": [
                f"{e:.0f} {_interval(lo, hi)}".strip()
                for e, lo, hi in zip(frame["efficiency_pct"], frame["efficiency_low_pct"], frame["efficiency_high_pct"])
            ],
            "runs": frame["n_runs"],
            "other settings": frame["config"],
        }
    )


def published_table(rows: pd.DataFrame, metric: str = "iops") -> pd.DataFrame:
    """Published rows (``data/reference/published_figures.csv``) in words, without their long
    source column (cite it once beside the table): label, metric, cores, clock."""
    out = pd.DataFrame({"published": rows["label"]})
    out[f"{label(metric).split(' (')[0]}{_unit(metric)}"] = rows[metric]
    if "cores" in rows:
        out["cores"] = rows["cores"].map(lambda v: "" if pd.isna(v) else f"{v:g}")
    if "freq_ghz" in rows:
        out["CPU clock (GHz)"] = rows["freq_ghz"].map(lambda v: "not given" if pd.isna(v) else f"{v:.1f}")
    return out.reset_index(drop=True)
