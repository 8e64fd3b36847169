"""Folded stacks -> flame graph pictures.

Input is the folded-stack Counter of ``iolab.read.fold`` (``{"fio;td_io_queue;io_submit_sqes_[k]": 812}``),
or a Diff's stacks (``iolab.read.profile.diff``: stack -> (a, b)) for a differential graph.

Pictures (no network needed anywhere):
* ``draw(stacks, ax)`` — static matplotlib flame graph (PNG in notebooks and HTML reports);
  ``icicle=True`` hangs it from the top; a Diff's stacks colour it red (grew) / blue (shrank);
* ``svg(stacks)`` — a self-contained interactive SVG for JupyterLab and browsers that fits the
  output's width: click a frame to zoom into it, click the background or "Reset zoom" to zoom
  out, type a regex in the search box to highlight matching frames and see their share.

The reading of the same stacks in numbers (shares, kinds, diffs, a paragraph) is
``iolab.read.profile``; frames are coloured by its kinds (``frame_category``).

Layout follows FlameGraph's flamegraph.pl: the x axis is the share of samples, frames merged
by name and sorted alphabetically — it is not time.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass

from ..core.progress import headless
from ..read.profile import bare, frame_category, is_diff, merge_unknown_runs
from .common import NOTEBOOK_WIDTH_IN, fit_width

CATEGORY_COLORS = {
    "idle": "#c7c7c7",
    "interrupt/softirq": "#d62728",
    "io_uring": "#ff7f0e",
    "block layer": "#2ca02c",
    "driver": "#8c564b",
    "page cache": "#bcbd22",
    "kernel": "#e9967a",
    "user": "#6baed6",
}


# ---------------------------------------------------------------- layout
@dataclass
class Box:
    name: str
    depth: int
    x: float  # start, in samples
    width: float  # samples
    delta: float = 0.0


def layout(stacks, min_fraction: float = 0.0) -> list[Box]:
    """Flame-graph boxes: merge by name per parent, children sorted alphabetically.
    ``stacks`` maps stack -> count, or -> (a, b) for a diff (width b, delta b - a)."""
    tree: dict = {}
    for stack, value in stacks.items():
        a, b = value if isinstance(value, tuple) else (value, value)
        node = tree
        for frame in stack.split(";"):
            entry = node.setdefault(frame, [0.0, 0.0, {}])
            entry[0] += b
            entry[1] += b - a
            node = entry[2]
    total = total_width(stacks)
    boxes: list[Box] = []

    def walk(node, depth, x):
        for name in sorted(node):
            width, delta, children = node[name]
            if width / total >= min_fraction:
                boxes.append(Box(name, depth, x, width, delta))
                walk(children, depth + 1, x)
            x += width

    walk(tree, 0, 0.0)
    return boxes


def total_width(stacks) -> float:
    """The graph's full width, in samples: all of them (the second profile's of a diff),
    also those of frames too narrow to draw. Never 0."""
    return float(sum(v[1] if isinstance(v, tuple) else v for v in stacks.values())) or 1.0


def _color(box: Box, diff_mode: bool, max_delta: float) -> str:
    if diff_mode:
        if max_delta <= 0 or box.width <= 0:
            return "#dddddd"
        s = max(-1.0, min(1.0, box.delta / max_delta))
        return (
            f"#ff{int(255 * (1 - s)):02x}{int(255 * (1 - s)):02x}"
            if s >= 0
            else f"#{int(255 * (1 + s)):02x}{int(255 * (1 + s)):02x}ff"
        )
    if box.depth == 0:
        return "#e0e0e0"
    return CATEGORY_COLORS.get(frame_category(box.name), CATEGORY_COLORS["user"])


def _cut(label: str, chars: int) -> str:
    """``label`` in at most ``chars`` characters, cut with '..' ('' below 3 characters)."""
    return "" if chars < 3 else label if len(label) <= chars else label[: chars - 2] + ".."


def _prepare(stacks, merge_unknowns: bool):
    """(diff mode, the stacks to draw, their boxes' total in samples): the one start of
    ``draw`` and ``svg`` so the two show the same frames."""
    diff_mode = is_diff(stacks)
    stacks = merge_unknown_runs(stacks) if merge_unknowns else stacks
    return diff_mode, stacks, total_width(stacks)


TALL_FRACTION = 0.01  # a static flame graph is as tall as its stacks this wide (share of all samples)


def draw(
    stacks,
    ax=None,
    title: str = "Flame graph",
    icicle: bool = False,
    min_fraction: float = 0.002,
    count_name: str = "samples",
    merge_unknowns: bool = True,
):
    """Static flame graph on a matplotlib axis. ``stacks``: Counter, or a Diff's
    ``stacks`` for a differential graph (widths from the second profile). Runs of junk
    ``[unknown]`` frames are drawn as one (``merge_unknown_runs``) unless ``merge_unknowns=False``."""
    import matplotlib.pyplot as plt  # here: svg() (iolab run --profile) needs no matplotlib
    from matplotlib.patches import Rectangle

    diff_mode, stacks, total = _prepare(stacks, merge_unknowns)
    boxes = layout(stacks, min_fraction)
    # the height is what has width: towers under TALL_FRACTION above the widest stacks' depth
    # would leave the picture mostly white (the SVG and the interactive graph keep every frame)
    wide = [b.depth for b in boxes if total and b.width / total >= TALL_FRACTION]
    depth = max(wide or [b.depth for b in boxes] or [0]) + 1
    cut = [b for b in boxes if b.depth >= depth]
    boxes = [b for b in boxes if b.depth < depth]
    own = ax is None
    if own:  # the notebook's width: JupyterLab shows it at its own size, labels readable
        _, ax = plt.subplots(figsize=(NOTEBOOK_WIDTH_IN, max(3.0, 0.22 * depth + 1)))
    chars = 17 * ax.figure.get_figwidth() * ax.get_position().width  # 6.5-pt labels across the whole width
    max_delta = max((abs(b.delta) for b in boxes), default=0.0)
    for b in boxes:
        y = depth - 1 - b.depth if icicle else b.depth
        ax.add_patch(
            Rectangle(
                (b.x / total, y),
                b.width / total,
                0.95,
                facecolor=_color(b, diff_mode, max_delta),
                edgecolor="white",
                linewidth=0.3,
            )
        )
        if b.width / total > 0.04:
            ax.text(
                b.x / total + 0.002,
                y + 0.45,
                _cut(bare(b.name), int(b.width / total * chars)),
                fontsize=6.5,
                va="center",
                clip_on=True,
            )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, depth)
    ax.set_yticks([])
    said = f"share of {count_name} (frames merged and sorted by name: not time)"
    if cut:
        said += (
            f"; {len(cut)} frames of towers under {TALL_FRACTION:.0%} of the {count_name} above depth {depth} "
            "left out (the SVG has every frame)"
        )
    ax.set_xlabel(textwrap.fill(said, 110))
    ax.set_title(title)
    if not diff_mode:
        used = {frame_category(b.name) for b in boxes if b.depth > 0}
        handles = [Rectangle((0, 0), 1, 1, color=c) for k, c in CATEGORY_COLORS.items() if k in used]
        ax.legend(
            handles,
            [k for k in CATEGORY_COLORS if k in used],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(0, -0.08 - 0.6 / depth),
            ncol=8,
            frameon=False,
        )
    else:
        ax.legend(
            [Rectangle((0, 0), 1, 1, color="#ff6666"), Rectangle((0, 0), 1, 1, color="#6666ff")],
            ["grew", "shrank"],
            fontsize=7,
            loc="upper right",
        )
    if own:
        fit_width(ax)
    return ax


_HEAD = 64  # px above the frames: title, hint, search row
_CHAR = 0.6 * 11  # px per character of the 11-px monospace labels (before the browser measures)


def svg(
    stacks,
    title: str = "Flame graph",
    width: int = 1200,
    row: int = 16,
    min_fraction: float = 0.001,
    merge_unknowns: bool = True,
) -> str:
    """A self-contained interactive SVG flame graph (no external scripts, no network);
    ``stacks`` as for ``draw`` (a Diff's stacks give the differential graph).

    It is ``width="100%"`` with a viewBox laid out ``width`` px wide, so it scales to its
    container even without scripts; its script measures the rendered width and lays the
    frames out again at that width (and on every resize), so text stays 11 px. Click a frame
    to zoom into it (the frames below it then span the width, labels kept in view); click
    the background or "Reset zoom" to zoom out; type a regex to highlight matching frames
    and see the share of samples under them. Several graphs on one page are independent.

    DOM hooks (for browser tests): root ``svg.iolab-flame``; frames ``g[data-x]`` (``data-x``,
    ``data-w``: start and width as a fraction of all samples, ``data-d``: depth, ``data-n``:
    function) each with a ``rect`` and a ``text`` label; the search box ``input.q``; the
    status text ``.status`` ("matched 12.3 %"); the reset control ``.reset``."""
    diff_mode, stacks, total = _prepare(stacks, merge_unknowns)
    boxes = layout(stacks, min_fraction)
    height = _HEAD + row * (max((b.depth for b in boxes), default=0) + 1) + 4
    max_delta = max((abs(b.delta) for b in boxes), default=0.0)
    out = [_svg_header(title, width, height, diff_mode)]
    for b in boxes:
        tip = (
            f"{bare(b.name)} ({100 * b.width / total:.2f} %"
            + (f", {100 * b.delta / total:+.2f} pts" if diff_mode else "")
            + ")"
        )
        out.append(
            _svg_frame(
                b,
                b.x / total,
                b.width / total,
                tip,
                _color(b, diff_mode, max_delta),
                width,
                height - 4 - (b.depth + 1) * row,
                row,
            )
        )
    out.append(f"<script><![CDATA[{_SVG_JS}]]></script></svg>")
    return "\n".join(out)


def _svg_header(title: str, width: int, height: int, diff_mode: bool) -> str:
    hint = "click a frame to zoom, background or Reset to zoom out; search takes a regex"
    if diff_mode:
        hint += "; red: grew, blue: shrank"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="iolab-flame" width="100%" '
        f'viewBox="0 0 {width} {height}" preserveAspectRatio="xMinYMin meet" '
        f'font-family="monospace" font-size="11">\n'
        f'<rect class="bg" x="0" y="0" width="{width}" height="{height}" fill="#fff"/>\n'
        f'<text x="4" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>\n'
        f'<text class="hint" x="4" y="33" fill="#555">{hint}</text>\n'
        '<foreignObject x="4" y="40" width="214" height="22"><input xmlns="http://www.w3.org/1999/xhtml" '
        'class="q" placeholder="search (regex)" style="width:210px;height:20px;box-sizing:border-box;'
        'font:11px monospace"/></foreignObject>\n'
        '<g class="reset" opacity="0.4" style="cursor:pointer"><rect x="226" y="41" width="84" height="20" '
        'rx="3" fill="#eee" stroke="#888"/><text x="268" y="55" text-anchor="middle">Reset zoom</text></g>\n'
        f'<text class="status" x="{width - 4}" y="55" text-anchor="end"></text>'
    )


def _svg_frame(b: Box, x: float, w: float, tip: str, fill: str, width: int, y: float, row: int) -> str:
    """One frame as ``g[data-x]``, placed for the unzoomed graph ``width`` px wide."""
    name = bare(b.name)
    return (
        f'<g data-x="{x:.9f}" data-w="{w:.9f}" data-d="{b.depth}" data-n="{html.escape(name)}">'
        f"<title>{html.escape(tip)}</title>"
        f'<rect x="{x * width:.1f}" y="{y}" width="{max(w * width - 0.5, 0.5):.1f}" height="{row - 1}" '
        f'fill="{fill}" rx="1"/>'
        f'<text x="{x * width + 2:.1f}" y="{y + row - 4}">'
        f"{html.escape(_cut(name, int((w * width - 4) // _CHAR)))}</text></g>"
    )


# Scoped to its own <svg> (document.currentScript), so graphs on one page do not interfere.
_SVG_JS = r"""
(function(){
var me=document.currentScript, svg=me&&me.closest&&me.closest('svg.iolab-flame');
if(!svg)return;
var H=svg.viewBox.baseVal.height, W=0, Z=[0,1,0], MATCH='#e040fb';
var bg=svg.querySelector('.bg'), hint=svg.querySelector('.hint'), q=svg.querySelector('.q'),
    status=svg.querySelector('.status'), reset=svg.querySelector('.reset');
var F=[].map.call(svg.querySelectorAll('g[data-x]'),function(g){var r=g.querySelector('rect');
 return {g:g,r:r,t:g.querySelector('text'),x:+g.dataset.x,w:+g.dataset.w,d:+g.dataset.d,n:g.dataset.n,
         fill:r.getAttribute('fill')};});
function charW(){var n=hint.getNumberOfChars(),l=n?hint.getComputedTextLength()/n:0;return l>0?l:6.6;}
function fit(n,px,cw){var c=Math.floor((px-4)/cw);return c<3?'':n.length<=c?n:n.slice(0,c-2)+'..';}
function draw(){var cw=charW();F.forEach(function(f){
 // clamp to [0, W]: the frames below a zoomed one span the width, their labels stay in view
 var a=Math.max((f.x-Z[0])/Z[1]*W,0), b=Math.min((f.x+f.w-Z[0])/Z[1]*W,W);
 if(b-a<0.5){f.g.style.display='none';return;}
 f.g.style.display='';
 f.r.setAttribute('x',a.toFixed(1));f.r.setAttribute('width',Math.max(b-a-0.5,0.5).toFixed(1));
 f.r.setAttribute('fill-opacity',f.d<Z[2]?0.6:1);
 f.t.setAttribute('x',(a+2).toFixed(1));f.t.textContent=fit(f.n,b-a,cw);});
 reset.setAttribute('opacity',Z[1]<1?1:0.4);}
function zoom(z){Z=z;draw();}
function union(iv){var end=-1,s=0;iv.sort(function(p,r){return p[0]-r[0]||r[1]-p[1];});
 iv.forEach(function(v){var a=Math.max(v[0],end),b=v[0]+v[1];if(b>a){s+=b-a;end=b;}});return s;}
function search(){var re=null,bad=false;
 try{re=q.value?new RegExp(q.value):null;}catch(e){bad=true;}
 var iv=[];F.forEach(function(f){var m=!!re&&re.test(f.n);f.r.setAttribute('fill',m?MATCH:f.fill);
  if(m)iv.push([f.x,f.w]);});
 status.textContent=bad?'invalid regex':re?'matched '+(100*union(iv)).toFixed(1)+' %':'';}
function fitWidth(){var w=Math.round(svg.getBoundingClientRect().width);
 if(w<1||w===W)return;
 W=w;svg.setAttribute('viewBox','0 0 '+W+' '+H);svg.setAttribute('height',H);
 bg.setAttribute('width',W);status.setAttribute('x',W-4);draw();}
F.forEach(function(f){f.g.style.cursor='pointer';
 f.g.addEventListener('click',function(e){e.stopPropagation();zoom([f.x,f.w,f.d]);});});
bg.addEventListener('click',function(){zoom([0,1,0]);});
reset.addEventListener('click',function(){zoom([0,1,0]);});
q.addEventListener('input',search);
if(window.ResizeObserver)new ResizeObserver(fitWidth).observe(svg);
else window.addEventListener('resize',fitWidth);
fitWidth();})();
"""


def show(stacks, title: str = "Flame graph", interactive: bool = True) -> None:
    """The interactive SVG as a cell's output in JupyterLab; nothing headless or with
    ``interactive=False`` (batch runs and HTML reports have ``draw``'s static picture)."""
    if not interactive or headless():
        return
    from IPython.display import HTML, display  # only in a notebook kernel

    display(HTML(svg(stacks, title=title)))
