"""What the standard figures share: their colours, the widest figure a notebook shows at its own
size, the source line under a plot (its details beside the figure), the banner over a flagged
one, the one tick format of counts, and labels kept apart.

Every figure of iolab.plots (``curves``, ``ladders``, ``published``, ``searches``, ``hostplots``,
``timeplots``, ``explore``) takes a tidy frame and an optional ``ax``, labels axes from the column
registry (``iolab.core.columns``, units included), writes where its numbers come from under the plot
in a line or two (``source_note``; the rest for ``details(ax)``), marks fallback-sourced values and runs that failed a plausibility check
(``flag_banner``), and returns the ``ax``. Nothing here changes global style.
"""

from __future__ import annotations

import html
import io
import math
import os
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.text import Annotation
from matplotlib.ticker import Formatter
from matplotlib.transforms import Bbox, ScaledTranslation

from ..core.errors import InputError
from ..core.readable import wrapped

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


def source_note(ax, text: str, width_in: float | None = None, below_pt: float = 38, details: str = "") -> None:
    """Where the plot's numbers come from, ``below_pt`` points under it, wrapped at spaces to
    ``width_in`` inches (the plot's width unless given): ``text`` says it in one or two lines
    (with any fallback the reader must know of: a nominal frequency, an emulator's numbers);
    ``details`` the rest (methods, counts, intervals), kept with the figure for ``details(ax)``
    to show under it. Without ``details`` the whole ``text`` is drawn."""
    width_in = width_in or ax.get_position().width * ax.figure.get_figwidth()
    chars = max(60, int(width_in * 17))  # ~17 chars/inch at 7.5 pt
    ax.annotate(
        textwrap.fill(f"source: {text}", width=chars, break_long_words=False, break_on_hyphens=False),
        xy=(0, 0),
        xycoords="axes fraction",
        xytext=(0, -below_pt),
        textcoords="offset points",
        fontsize=7.5,
        color="0.35",
        va="top",
        gid="source",
    )
    ax.figure.__dict__.setdefault("iolab_sources", []).append((text, details))


class Details(str):
    """A figure's sources in full (``details``): printed, plain text; a notebook cell's last
    value, one grey line that opens to the rest on a click."""

    def _repr_html_(self) -> str:
        if not self:
            return ""
        head, _, rest = self.partition("\n")
        if not rest:
            return f'<div style="color:#666;font-size:85%">{html.escape(head)}</div>'
        body = html.escape(rest).replace("\n", "<br>")
        return f'<details style="color:#666;font-size:85%"><summary>{html.escape(head)}</summary>{body}</details>'

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


def details(ax_or_fig) -> Details:
    """The sources of a figure in full: each ``source_note`` line, then its details (wrapped
    at spaces), for a notebook to show under the figure (``plt.show(); details(ax)``)."""
    fig = getattr(ax_or_fig, "figure", ax_or_fig)
    if isinstance(ax_or_fig, (list, tuple, np.ndarray)):
        fig = np.ravel(ax_or_fig)[0].figure
    sources = getattr(fig, "iolab_sources", [])
    if not any(more for _, more in sources):  # the figure says it all already: nothing to repeat
        return Details("")
    lines = [f"source: {text}" + (f"; {more}" if more else "") for text, more in sources]
    return Details("\n".join(wrapped(line, 100) for line in lines))


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
    names = list(
        dict.fromkeys(
            w.split(":")[0].strip().replace("_", " ")
            for text in flagged["flags"]
            for w in text.split(" | ")
            if ":" in w
        )
    )
    text = textwrap.shorten(
        f"⚠ {runs} of {total} runs failed a plausibility check ({', '.join(names)}): the plot includes them; "
        "iolab check RUN_DIR says why",
        width=120,
        placeholder=" …",
    )
    lines = max(ax.title.get_text().count("\n"), ax._left_title.get_text().count("\n")) + 1  # above the title
    ax.annotate(
        text,
        xy=(0, 1),
        xycoords="axes fraction",
        xytext=(0, 10 + 14 * lines),
        textcoords="offset points",
        fontsize=8,
        color="white",
        va="bottom",
        fontweight="bold",
        bbox={"boxstyle": "square,pad=0.3", "facecolor": UNSTABLE_COLOR, "edgecolor": "none"},
    )


def tick_labels(values, top: float | None = None) -> list[str]:
    """Tick labels of one axis in one style, chosen from its largest tick (``top``: the
    largest in view, when ``values`` run past the axis' ends): from 10,000 up SI
    prefixes on every tick (0, 5k, 10k; 500k, 1M, 1.5M), below plain digits with thousands
    separators (0, 2,500, 5,000; 0.5, 1, 1.5); never "10k" beside "1,000" on one axis. Each
    with the fewest digits that keep the ticks apart."""
    values = [float(v) + 0.0 for v in values]  # + 0.0: no "-0"
    if top is None:
        top = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    distinct = len({v for v in values if math.isfinite(v)})
    if top < 1e4:
        return [_plain(v) for v in values]
    for digits in range(3, 8):
        labels = [_si(v, digits) for v in values]
        if len(set(labels)) >= distinct:
            break
    return labels


def _plain(v: float) -> str:
    """2,500 or 0.25: thousands separated, the fewest decimals (up to 4) that say ``v``."""
    if not math.isfinite(v):
        return "n/a"
    decimals = next((d for d in range(4) if abs(round(v, d) - v) <= 1e-9 * max(1.0, abs(v))), 4)
    return f"{v:,.{decimals}f}"


def _si(v: float, digits: int) -> str:
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.{digits}g}{prefix}"
    return _plain(float(f"{v:.{digits}g}")) if math.isfinite(v) else "n/a"


class CountFormatter(Formatter):
    """``tick_labels`` as a matplotlib tick formatter: the style from the largest tick in view."""

    top = None  # of the ticks last labelled

    def format_ticks(self, values):
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (-math.inf, math.inf)
        shown = [abs(v) for v in values if lo - 1e-9 * abs(lo) <= v <= hi + 1e-9 * abs(hi)]
        self.top = max(shown, default=None)
        return tick_labels(values, self.top)

    def __call__(self, x, pos=None) -> str:
        return tick_labels([x], self.top)[0]


def count_axis(ax, axis: str = "y") -> None:
    """The one tick format of counts and rates (IOPS, IOs, bytes/s, cycles, µs): ``tick_labels``."""
    getattr(ax, f"{axis}axis").set_major_formatter(CountFormatter())


si_axis = thousands_axis = count_axis  # the names the figures called it by


def log_count_axis(ax, axis: str = "y", subs: tuple | None = None) -> None:
    """A log axis of counts or latencies labelled as ``count_axis`` labels (10, 100, 1,000;
    1k, 10k, 100k), not 10², with 2 and 5 between decades when it spans less than two
    (``subs`` to choose), and no labels on the minor ticks."""
    from matplotlib.ticker import LogLocator, NullFormatter

    which = getattr(ax, f"{axis}axis")
    if subs is None:
        lo, hi = sorted(getattr(ax, f"get_{axis}lim")())
        subs = (1.0, 2.0, 5.0) if lo > 0 and hi / lo < 100 else (1.0,)
    which.set_major_locator(LogLocator(base=10, subs=subs))
    which.set_major_formatter(CountFormatter())
    which.set_minor_formatter(NullFormatter())


def keep_apart(texts, toward: str = "up", pad_pt: float = 1.0, tries: int = 3) -> list:
    """Labels drawn on one figure (``ax.text``, ``ax.annotate``) placed in order so that none
    overlaps one placed before it ("80,742 unstable55,268 unstable"): one that would is moved
    ``toward`` ("up", "down", "right") just past the label it hits, ``pad_pt`` apart, up to
    ``tries`` times, never out of its axes (moved up, a linear y axis grows to hold it); else
    it is hidden. Call it once the figure has its final size. Returns the labels hidden (say
    their values elsewhere: a table, the source note)."""
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    if not texts:
        return []
    fig = texts[0].figure
    fig.canvas.draw()  # the axes' final limits and place
    start = [_position(t) for t in texts]
    for _ in range(4):  # the axis grown, the labels move with the data: place them again
        hidden, short = _place(texts, toward, pad_pt, tries)
        grown = [ax for ax in short if ax is not None and toward == "up" and ax.get_yscale() == "linear"]
        if not grown:
            return hidden
        for ax in grown:
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi + 1.2 * short[ax] * (hi - lo) / ax.bbox.height)
        for t, where in zip(texts, start):
            _position(t, where)
            t.set_visible(True)
    return _place(texts, toward, pad_pt, tries)[0]


def _place(texts, toward: str, pad_pt: float, tries: int) -> tuple[list, dict]:
    """``keep_apart``'s one pass: the labels hidden, and per axes how many pixels too short
    it was for a label moved out of it."""
    fig = texts[0].figure
    renderer = fig.canvas.get_renderer()
    pad = pad_pt * fig.dpi / 72
    placed, hidden, short = [], [], {}
    for t in texts:
        # its axes, or as far out of them as it was drawn
        frame = Bbox.union([t.axes.get_window_extent(renderer) if t.axes else fig.bbox, t.get_window_extent(renderer)])
        hit = None
        for _ in range(tries + 1):
            box = t.get_window_extent(renderer)
            if not _within(box, frame):
                short[t.axes] = max(short.get(t.axes, 0.0), box.y1 - frame.y1)
                break
            hit = next((b for b in placed if b.overlaps(box.padded(-0.5))), None)
            if hit is None:
                placed.append(box.padded(pad / 2))
                break
            gap = {"up": hit.y1 - box.y0, "down": box.y1 - hit.y0, "right": hit.x1 - box.x0}[toward]
            _shift(t, toward, gap * 72 / fig.dpi)
        if hit is not None:
            t.set_visible(False)
            hidden.append(t)
    return hidden, short


def _within(box, frame) -> bool:
    return frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1


def _position(t, where=None):
    """A label's place (an annotation's offset, else its transform); with ``where``, put it back."""
    offset = isinstance(t, Annotation) and t.anncoords == "offset points"
    if where is None:
        return t.xyann if offset else t.get_transform()
    if offset:
        t.xyann = where
    else:
        t.set_transform(where)


def _shift(t, toward: str, points: float) -> None:
    dx, dy = {"up": (0, points), "down": (0, -points), "right": (points, 0)}[toward]
    if isinstance(t, Annotation) and t.anncoords == "offset points":
        x, y = t.xyann
        t.xyann = (x + dx, y + dy)
    else:
        t.set_transform(t.get_transform() + ScaledTranslation(dx / 72, dy / 72, t.figure.dpi_scale_trans))


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


FIGURE_FORMATS = ("png", "svg", "pdf")


def save_figure(fig_or_ax, name: str, folder: str | os.PathLike | None = None, formats=FIGURE_FORMATS) -> list[Path]:
    """A figure as files to keep, one per format (PNG at 150 dpi, SVG and PDF as vectors), as
    ``FOLDER/NAME.png`` ...; ``folder`` None: papermill_runs/figures of the project. Each
    goes through the output guard (``iolab.core.outputs``: a file iolab did not write is
    refused, never replaced). Returns the paths, and says them in one line."""
    from ..core.outputs import claim_folder, write_output
    from ..core.paths import PAPERMILL_RUNS, check_name

    fig = getattr(fig_or_ax, "figure", fig_or_ax)  # an Axes' figure, or the figure given
    check_name(name, "figure name", "save_figure(ax, 'knee')")
    wrong = [f for f in formats if f not in FIGURE_FORMATS]
    if wrong:
        raise InputError(f"figure format {', '.join(map(str, wrong))}: choose from {', '.join(FIGURE_FORMATS)}")
    if folder is None:
        folder = claim_folder(PAPERMILL_RUNS / "figures", ours=True, flag="folder")
    else:  # the user's own folder: each file is guarded, the folder's other files are theirs
        folder = Path(folder)
        if os.path.lexists(folder) and not folder.is_dir():
            raise InputError(f"{folder} is a file, not a folder: give a folder for the figures")
        folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=150, bbox_inches="tight")
        written.append(write_output(folder / f"{name}.{fmt}", buf.getvalue()))
    print("saved:", ", ".join(str(p) for p in written))
    return written
