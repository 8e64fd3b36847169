"""The explorer: any swept setting on any axis of any tidy table from the kit.

    explore.explorer(table)                    # JupyterLab: x, y, hue, facet dropdowns
    explore.explorer({"dvb": dvb, "ra": ra})   # several tables: a table dropdown too
    explore.plot(table, x="qd", y="clat_p99_us", hue="direction")   # the same figure, as code

What is offered comes from the column registry (``iolab.core.columns``): metrics (measured,
with units) on y; settings (swept or chosen: queue depth, scheduler, block size, any fio
option a sweep varied) on x, hue and facet; ids never. Each point is the mean over repeats
with its 95 % interval (``repeat_stats.interval``, the one the plots use: Student t, joined with a bootstrap
for percentiles; held within what the quantity can be, ``columns.bounds``: from 0 for counts and
latencies, 0-100 % for shares such as CPU busy); queue depths and other doubling
settings get a log2 axis. The widget shows the ``plot(...)`` call for the current choice,
so an exploration becomes a cell. Headless (papermill, ``make demo``) it shows the static
default figure instead of widgets.

For a table with ``run_id`` the ``view`` dropdown also draws the latency distribution of its
cells from the runs' fio json+ bins (``iolab.stats.latency_dist``, ``iolab.plots.distributions``):
the CDF, its tail (1 - CDF, log) or the percentile spectrum (p1 ... p99.999), one line per
``hue`` value (and line styles per ``facet`` value), each cell's repeats and jobs pooled.
``distribution(table, "cdf", hue="qd")`` draws the same as code.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from ..core import columns
from ..core.columns import COLUMNS, label
from ..core.errors import InputError, IolabError
from ..core.progress import headless
from ..core.validate import parse_size
from ..stats import latency_dist, repeat_stats
from . import distributions
from .common import NOTEBOOK_WIDTH_IN, flag_banner, setting_colors, si_axis
from .pages import data_uri

MAX_CATEGORIES = 30  # an unregistered column with more distinct values is not a setting
NONE = "(none)"  # the hue / facet choice that means no split
FEW_VALUES = 6  # a numeric setting with this many values or fewer is drawn as categories
VIEWS = {  # the view dropdown: value -> what it shows
    "means": "means by setting (95 % interval)",
    "cdf": "latency CDF (json+ bins)",
    "tail": "latency tail: 1 − CDF (log)",
    "spectrum": "latency percentiles p1 … p99.999",
}


@dataclass(frozen=True)
class Choices:
    """The columns of one table worth plotting: ``settings`` (x, hue, facet), ``metrics`` (y)."""

    settings: list[str]
    metrics: list[str]


def choices(df: pd.DataFrame) -> Choices:
    """Registered metrics that hold a number; settings that vary across rows — registered
    ones, and unregistered columns with few distinct values (the options a sweep varied)."""
    settings, metrics = [], []
    for name in df.columns:
        col, values = COLUMNS.get(name), df[name].dropna()
        if values.empty:
            continue
        role = col.role if col else ("setting" if _few_distinct(values) else "id")
        if role == "metric" and pd.api.types.is_numeric_dtype(values):
            metrics.append(name)
        elif role == "setting" and values.astype(str).nunique() > 1:
            settings.append(name)
    registry_order = {name: i for i, name in enumerate(COLUMNS)}
    return Choices(settings, sorted(metrics, key=lambda m: registry_order.get(m, len(registry_order))))


def _few_distinct(values: pd.Series) -> bool:
    n = values.astype(str).nunique()
    return 1 < n <= MAX_CATEGORIES and n < len(values)


def _order(values: pd.Series) -> list:
    """Distinct values in their natural order: numbers by value, fio sizes by bytes."""
    distinct = list(pd.unique(values.dropna()))
    try:
        return sorted(distinct, key=lambda v: parse_size(v) if isinstance(v, str) else v)
    except (TypeError, IolabError):
        return distinct


def _log2_axis(df: pd.DataFrame, x: str) -> bool:
    """A doubling setting: the registry says log2, or it holds three or more powers of two."""
    col = COLUMNS.get(x)
    if col is not None and col.scale == "log2":
        return True
    if not pd.api.types.is_numeric_dtype(df[x]):
        return False
    v = df[x].dropna().unique()
    return len(v) >= 3 and bool((v > 0).all()) and bool(np.all(np.log2(v) == np.round(np.log2(v))))


def _line(df: pd.DataFrame, x: str) -> bool:
    """Numeric x drawn as a line (else as categories with bars)."""
    return pd.api.types.is_numeric_dtype(df[x]) and (_log2_axis(df, x) or df[x].nunique() > FEW_VALUES)


def _interval(values, metric: str) -> tuple[float, float]:
    """The 95 % interval of the mean of ``values`` (``repeat_stats.interval``: held within
    ``columns.bounds(metric)``); the mean itself when there is none (one value)."""
    low, high = repeat_stats.interval(values, metric)
    return (low, high) if not np.isnan(low) else (np.mean(values), np.mean(values))


def plot(
    df: pd.DataFrame,
    x: str,
    y: str = "iops",
    hue: str | None = None,
    facet: str | None = None,
    log_y: bool = False,
    title: str | None = None,
):
    """One figure of ``y`` against ``x`` (mean over repeats, 95 % ``repeat_stats.interval``), one
    colour per ``hue`` value, one panel per ``facet`` value. Returns the Figure."""
    for name in (x, y, hue, facet):
        if name is not None and name not in df.columns:
            raise InputError(
                f"no column {name!r} in this table; columns worth plotting: "
                f"{choices(df).settings + choices(df).metrics}"
            )
    panels = _order(df[facet]) if facet else [None]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(min(max(7.5, 4.6 * len(panels)), NOTEBOOK_WIDTH_IN), 4.4), sharey=True, squeeze=False
    )
    hue_order = _order(df[hue]) if hue else None
    for ax, value in zip(axes[0], panels):
        part = df if facet is None else df[df[facet] == value]
        _draw(part, x, y, hue, hue_order, ax, full=df, facet=facet)
        ax.set_title(f"{label(facet)} = {value}" if facet else "", fontsize=9)
        if log_y:
            ax.set_yscale("log")
        if ax is not axes[0][-1] and ax.get_legend():
            ax.get_legend().remove()
    axes[0][0].set_ylabel(label(y))
    flagged = "flags" in df and (df["flags"].fillna("") != "").any()  # a banner goes between title and plot
    fig.suptitle(
        title or f"{label(y)} by {label(x)}" + (f" and {label(hue)}" if hue and hue != x else ""),
        fontsize=11,
        **({"y": 1.1} if flagged else {}),
    )
    note = textwrap.fill(
        f"source: {COLUMNS[y].source if y in COLUMNS else 'this table'}; {_points(df, x, y, hue, facet)}",
        width=int(fig.get_figwidth() * 18),
        break_long_words=False,
        break_on_hyphens=False,
    )
    fig.text(0.01, 0.01, note, fontsize=7.5, color="0.35")  # wrapped to the figure: never cut at its edge
    for ax in axes[0]:  # 1.2e8 on an axis reads as 120M (common.si_axis); a measured x too
        si_axis(ax, "y")
        if x in choices(df).metrics:
            si_axis(ax, "x")
    fig.tight_layout(rect=(0, 0.04 * (note.count("\n") + 1), 1, 1))
    flag_banner(axes[0][0], df)
    return fig


def _points(df: pd.DataFrame, x: str, y: str, hue: str | None, facet: str | None) -> str:
    """What each point drawn is and what its interval is, counted as ``_draw`` groups the rows:
    "mean of 3 runs per point; 95 % Student-t interval (within 0-100 %: a share)"."""
    c = choices(df)
    xs = [s for s in c.settings if s not in (hue, facet)] if x in c.metrics else [x]
    keys = list(dict.fromkeys((xs or [x]) + [k for k in (hue, facet) if k]))  # x may be the hue too
    n = df.groupby(keys)[y].count()
    n = n[n > 0]
    runs = f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"
    one_run = "run_id" in df and df["run_id"].nunique() == 1 and n.max() > 1
    what = (
        f"{runs} interval{'s' if n.max() > 1 else ''} of one run"
        if one_run
        else f"{runs} run{'s' if n.max() > 1 else ''}"
    )
    if x in c.metrics and xs:
        per = f"one point per setting ({', '.join(label(k) for k in xs)}), the mean of {what}"
    elif x in c.metrics:
        per = "one point per run" if n.max() == 1 else f"one point per value of {label(x)}, the mean of {what}"
    else:
        per = f"mean of {what} per point"
    if n.max() < repeat_stats.MIN_REPEATS:
        return f"{per}; {'no interval: one run per point' if n.max() == 1 else repeat_stats.NO_INTERVAL + ' per point'}"
    low, high = columns.bounds(y)
    interval = (
        (
            "95 % Student-t interval"
            if columns.interval_method(y) == "t"
            else "95 % interval, Student t and bootstrap joined"
        )
        + (
            f" (within {low:g}-{high:g} %: a share)"
            if high < np.inf
            else " on the log scale (the quantity cannot be negative); none where the repeats spread too far "
            f"to bound it (over {repeat_stats.MAX_SPAN:g}x)"
            if low == 0
            else ""
        )
        + (
            f"; none where a point has fewer than {repeat_stats.MIN_REPEATS} runs (it would say "
            "nothing): repeat 3 or more times"
            if n.min() < repeat_stats.MIN_REPEATS
            else ""
        )
    )
    return f"{per}; {interval}"


def _draw(part: pd.DataFrame, x: str, y: str, hue, hue_order, ax, full: pd.DataFrame, facet: str | None = None) -> None:
    palette = _palette(full, hue, hue_order)
    kw = dict(
        data=part,
        x=x,
        y=y,
        hue=hue,
        hue_order=hue_order,
        errorbar=lambda v: _interval(v, y),
        ax=ax,
        **({"palette": palette} if palette else {}),
    )
    if x in choices(full).metrics:
        by = [s for s in choices(full).settings if s not in (hue, facet)]
        _metric_vs_metric(part, x, y, by, hue, hue_order, ax, palette)
    elif _line(full, x):
        sns.lineplot(marker="o", **kw)
        if _log2_axis(full, x):
            ticks = sorted(full[x].dropna().unique())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    else:
        sns.barplot(order=_order(full[x]), **kw, color=None if hue else "#4c72b0")
    ax.set_xlabel(label(x))
    if hue and ax.get_legend():
        ax.get_legend().set_title(label(hue))


def _palette(full: pd.DataFrame, hue: str | None, hue_order) -> list | None:
    """A numeric hue's colours: a sequential scale in its order (low light, high dark), so
    neither does a colour repeat nor does a legend look categorical; None otherwise."""
    if not hue or not hue_order or not pd.api.types.is_numeric_dtype(full[hue]):
        return None
    return list(setting_colors(list(hue_order)).values())[: len(hue_order)]


def _metric_vs_metric(
    part: pd.DataFrame, x: str, y: str, by: list[str], hue, hue_order, ax, palette: list | None = None
) -> None:
    """Two measured columns against each other (latency vs IOPS): one point per setting
    (mean over repeats, 95 % t interval both ways), joined in the setting's order and
    labelled with its value."""
    groups = [(None, part)] if not hue else [(h, part[part[hue] == h]) for h in hue_order]
    for i, (h, g) in enumerate(groups):
        if g.empty:
            continue
        keys = by or [x]
        stats = sorted(g.groupby(keys), key=lambda kp: [_order(part[c]).index(v) for c, v in zip(keys, kp[0])])
        mx = [p[x].mean() for _, p in stats]
        my = [p[y].mean() for _, p in stats]

        def err(col, m, stats=stats):
            return np.array(
                [[m_ - _interval(p[col], col)[0], _interval(p[col], col)[1] - m_] for (_, p), m_ in zip(stats, m)]
            ).T

        ax.errorbar(
            mx,
            my,
            xerr=err(x, mx),
            yerr=err(y, my),
            marker="o",
            capsize=2,
            label=None if h is None else f"{h}",
            **({"color": palette[i]} if palette else {}),
        )
        if by:
            for (k, _), px, py in zip(stats, mx, my):
                ax.annotate(
                    ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in k),
                    (px, py),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color="0.3",
                )
    if hue:
        ax.legend(title=label(hue), fontsize=8)
    if by:
        ax.text(
            0.99,
            0.01,
            "points labelled with " + ", ".join(label(b) for b in by),
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            color="0.3",
        )


def code(
    x: str, y: str, hue: str | None = None, facet: str | None = None, log_y: bool = False, table: str = "table"
) -> str:
    """The cell that draws the explorer's current figure."""
    args = [f"x={x!r}", f"y={y!r}"] + [f"{k}={v!r}" for k, v in (("hue", hue), ("facet", facet)) if v]
    args += ["log_y=True"] if log_y else []
    return f"from iolab.plots import explore\nexplore.plot({table}, {', '.join(args)})"


def default_axes(df: pd.DataFrame) -> tuple[str, str]:
    """The first setting (queue depth when there is one) and IOPS (else the first metric)."""
    c = choices(df)
    if not c.settings or not c.metrics:
        raise InputError(nothing_to_explore(df, c))
    x = "qd" if "qd" in c.settings else c.settings[0]
    return x, ("iops" if "iops" in c.metrics else c.metrics[0])


def nothing_to_explore(df: pd.DataFrame, found: Choices | None = None) -> str:
    """Why ``df`` has nothing to put on the explorer's axes, in a sentence (no column list:
    a table has some eighty), with what to do; "" when it has a setting and a metric."""
    found = found or choices(df)
    if found.settings and found.metrics:
        return ""
    if not found.metrics:
        return f"this table ({len(df):,} rows) has no measured metric to plot: give a table of runs (iolab table)"
    return (
        f"this table ({len(df):,} rows) has no setting that varies: every row was measured with the same settings "
        "(one queue depth, one block size ...); sweep two or more values of a setting to compare them"
    )


def distribution(
    df: pd.DataFrame,
    view: str = "cdf",
    hue: str | None = None,
    facet: str | None = None,
    kind: str = "clat",
):
    """The latency distribution of the cells of ``df`` (a table of runs; its run folders
    found by ``iolab.core.runfolders``) from fio's json+ bins: ``view`` "cdf", "tail" (1 - CDF on a
    log axis) or "spectrum"; one colour per ``hue`` value, a line style per ``facet`` value,
    the runs of a cell pooled (``iolab.stats.latency_dist``). Returns the Figure."""
    if view not in VIEWS or view == "means":
        raise InputError(f"view={view!r}: choose 'cdf', 'tail' or 'spectrum' ('means' is plot())")
    return _draw_distribution(_distribution_frame(df, view, hue, facet, kind), view, hue)


def _distribution_frame(df: pd.DataFrame, view: str, hue, facet, kind: str = "clat") -> pd.DataFrame:
    make = latency_dist.spectrum if view == "spectrum" else latency_dist.cdf
    return make(df, [k for k in (hue, facet) if k], kind=kind)


def _draw_distribution(frame: pd.DataFrame, view: str, hue):
    if view == "spectrum":
        return distributions.plot_spectrum(frame, hue=hue).figure
    return distributions.plot_cdf(frame, hue=hue, tail=view == "tail").figure


def distribution_code(view: str, hue: str | None = None, facet: str | None = None, table: str = "table") -> str:
    """The cell that draws the explorer's current distribution view."""
    by = [k for k in (hue, facet) if k]
    make, draw = ("spectrum", "plot_spectrum") if view == "spectrum" else ("cdf", "plot_cdf")
    tail = ", tail=True" if view == "tail" else ""
    return (
        "from iolab.stats import latency_dist\nfrom iolab.plots import distributions\n"
        f"dist = latency_dist.{make}({table}, by={by!r})\n"
        f"distributions.{draw}(dist, hue={hue!r}{tail})"
    )


def explorer(tables: pd.DataFrame | Mapping[str, pd.DataFrame], interactive: bool = True) -> None:
    """Widgets to put any setting on x, hue and facet and any metric on y (JupyterLab), or
    to draw the latency distribution of the cells (the view dropdown; tables of runs, their
    run folders found by ``iolab.core.runfolders``).

    ``tables``: one table, or several by the names of their notebook variables (the copied
    code then runs as it is). Headless or with ``interactive=False`` the default figure of
    the first table is shown, static. A table with nothing to explore (``nothing_to_explore``:
    a sweep of one value) is left out; when every one is, a sentence says so."""
    tables = {"table": tables} if isinstance(tables, pd.DataFrame) else dict(tables)
    why = {name: nothing_to_explore(df) for name, df in tables.items()}
    tables = {name: df for name, df in tables.items() if not why[name]}
    if not tables:  # a sweep of one setting value: a sentence, not an error after every run is done
        print(f"explorer: nothing to explore: {next(iter(why.values()), 'no table given')}")
        return
    if not interactive or headless():
        name, df = next(iter(tables.items()))
        fig = plot(df, *default_axes(df))
        display(fig)
        plt.close(fig)
        return
    widget = _Widget(tables)
    display(widget.box)
    widget.keep = display(widget.kept(), display_id=True)  # the last figure, for when the kernel is gone


# the static copy hides while the widgets show (they are in the same cell); JupyterLab and
# the classic notebook name a cell's output area differently
STATIC_CSS = (
    ".jp-OutputArea:has(.iolab-explorer) .iolab-explorer-static, "
    ".output_area:has(.iolab-explorer) ~ .output_area .iolab-explorer-static {display: none}"
)


class _Widget:
    """The explorer's widgets; hooks for tests: box class ``iolab-explorer``, dropdowns
    described table/view/x/y/hue/facet, code text class ``iolab-explorer-code``."""

    def __init__(self, tables: Mapping[str, pd.DataFrame]):
        import ipywidgets as w  # widgets only in JupyterLab: plot() and batch runs never load them

        self.tables = tables
        names = list(tables)
        # wide enough for "clat p99 (µs) [clat_p99_us] (measured)": the default width clipped it
        wide = dict(layout=w.Layout(width="46%", min_width="18em"), style={"description_width": "3.5em"})
        self.table = w.Dropdown(options=names, value=names[0], description="table", **wide)
        self.x, self.y = w.Dropdown(description="x", **wide), w.Dropdown(description="y", **wide)
        self.hue, self.facet = w.Dropdown(description="hue", **wide), w.Dropdown(description="facet", **wide)
        self.log_y = w.Checkbox(value=False, description="log y", indent=False)
        self.view = w.Dropdown(options=[(text, v) for v, text in VIEWS.items()], description="view", **wide)
        self.out = w.Output()
        self.code = w.Textarea(layout=w.Layout(width="100%", height="5.5em"), disabled=False)
        self.code.add_class("iolab-explorer-code")
        self._busy = False
        self._frames: dict[tuple, pd.DataFrame] = {}
        self.last, self.keep = "", None  # the last figure (a data: URI) and its static copy's display handle
        self._fill()
        self.table.observe(self._table_changed, names="value")
        for widget in (self.x, self.y, self.hue, self.facet, self.log_y, self.view):
            widget.observe(self.draw, names="value")
        rows = [
            w.HBox([self.view], layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.x, self.y], layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.hue, self.facet, self.log_y], layout=w.Layout(flex_flow="row wrap")),
        ]
        self.box = w.VBox(
            ([self.table] if len(names) > 1 else [])
            + rows
            + [self.out, w.HTML("<b>copy the code for this plot:</b>"), self.code]
        )
        self.box.add_class("iolab-explorer")
        self.draw()

    def _fill(self) -> None:
        """Options for the current table, each shown with its label and unit."""
        df = self.tables[self.table.value]
        c = choices(df)
        x, y = default_axes(df)
        self._busy = True
        settings = [(f"{label(s)} [{s}]", s) for s in c.settings]
        self.y.options = [(f"{label(m)} [{m}]", m) for m in c.metrics]
        self.hue.options = self.facet.options = [(NONE, NONE)] + settings
        self.x.options = settings + [(f"{label(m)} [{m}] (measured)", m) for m in c.metrics]
        self.x.value, self.y.value, self.hue.value, self.facet.value = x, y, NONE, NONE
        # a distribution needs the runs' files: offered for a table that names its runs
        view = self.view.value
        self.view.options = [(text, v) for v, text in VIEWS.items() if v == "means" or "run_id" in df.columns]
        self.view.value = view if "run_id" in df.columns else "means"
        self._busy = False

    def _table_changed(self, _change) -> None:
        self._fill()
        self.draw()

    def draw(self, *_):
        if self._busy:
            return
        df = self.tables[self.table.value]
        args = dict(
            x=self.x.value,
            y=self.y.value,
            log_y=self.log_y.value,
            hue=None if self.hue.value == NONE else self.hue.value,
            facet=None if self.facet.value == NONE else self.facet.value,
        )
        name, view = self.table.value, self.view.value
        for widget in (self.x, self.y, self.log_y):  # a distribution's axes are fixed
            widget.disabled = view != "means"
        if view == "means":
            self.code.value = code(**args, table=name)
        else:
            split = dict(hue=args["hue"], facet=args["facet"])
            self.code.value = distribution_code(view, **split, table=name)
        with self.out:
            self.out.clear_output(wait=True)
            try:
                fig = plot(df, **args) if view == "means" else self._distribution(df, view, **split)
            except (IolabError, ValueError, TypeError) as exc:  # seaborn refuses some choices
                print(f"cannot draw this choice: {exc}")
                return
            display(fig)
            self.last = data_uri(fig)
            plt.close(fig)
        if self.keep is not None:
            self.keep.update(self.kept())

    def kept(self):
        """The explorer's last figure and its code as a static output: hidden beside the live
        widgets (CSS), shown where they cannot be (the notebook reopened after its kernel
        stopped: "Error displaying widget: model not found"), so the figure stays."""
        from html import escape

        from IPython.display import HTML

        img = f'<img alt="the last figure of the explorer" src="{self.last}">' if self.last else ""
        return HTML(
            f"<style>{STATIC_CSS}</style><div class='iolab-explorer-static'><p>The explorer's last figure, kept for "
            "when its kernel is gone (run the cell again for the widgets); its code:</p>"
            f"<pre>{escape(self.code.value)}</pre>{img}</div>"
        )

    def _distribution(self, df: pd.DataFrame, view: str, hue, facet):
        """``distribution``'s figure; the frame read once per table and split (the CDF's
        serves the tail), so a redraw does not read the runs' fio.json files again."""
        key = (self.table.value, view == "spectrum", hue, facet)
        if key not in self._frames:
            self._frames[key] = _distribution_frame(df, view, hue, facet)
        return _draw_distribution(self._frames[key], view, hue)
