"""``iolab compare A B``: two result sets read (``iolab.compare.sides``), what differs between
their set-ups, and B against A cell by cell (``iolab.compare.versus``) — as lines for a
terminal, a CSV/JSON table for scripts, and an offline HTML page.

    done = compare_paths("data/runs/qd-knee-before", "data/runs/qd-knee-after")
    print("\\n".join(text(done)))
    write_atomic("compare.html", html(done))
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.columns import label, setting_name
from ..report.templating import page
from .matching import match
from .sides import Side, differences, load_side, not_comparable, setup
from .versus import MIN_CHANGE_PCT, Versus, number, versus


@dataclass
class SidesCompared:
    """Both sides, their set-ups' differences and the cell-by-cell comparison."""

    a: Side
    b: Side
    differences: list[tuple[str, str, str]]
    versus: Versus
    confidence: float
    min_change_pct: float


def compare_paths(
    a: str | os.PathLike,
    b: str | os.PathLike,
    by: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    min_change_pct: float = MIN_CHANGE_PCT,
    across_devices: bool = False,
    where: Mapping[str, Any] | None = None,
) -> SidesCompared:
    """Read both sides and compare B against A, cells matched by ``iolab.compare.matching``:
    ``by`` default, every setting that varies on either side and those both swept (fio's
    names: ``qd`` meets ``iodepth``), and the study (``part``) when both hold several;
    NotComparable rather than a mean pooled over a setting that varies. ``where``: keep the
    runs with these settings ({"bs": "4k"}). ``across_devices``: compare even when the devices
    or I/O patterns differ."""
    side_a, side_b = load_side(a), load_side(b)
    setup_a, setup_b = setup(side_a), setup(side_b)
    matched = match(side_a, side_b, by, where)
    known = {setting_name(c) for c in matched.by} | (set(matched.fixed_a) & set(matched.fixed_b))
    found = [d for d in differences(setup_a, setup_b) if setting_name(d[0].removeprefix("fio ")) not in known]
    found += [(f"fio {s}" if f"fio {s}" in {**setup_a, **setup_b} else s, va, vb) for s, va, vb in matched.differences]
    pattern = [  # the I/O pattern as matched: none when cells differ in rw, else each side's one rw
        {k: v for k, v in s.items() if k != "fio rw"} | ({"fio rw": str(f["rw"])} if "rw" in f else {})
        for s, f in ((setup_a, matched.fixed_a), (setup_b, matched.fixed_b))
    ]
    why = "" if across_devices else not_comparable(*pattern)
    result = versus(matched.a, matched.b, matched.by, metrics, confidence, seed, min_change_pct, why)
    return SidesCompared(side_a, side_b, found, result, confidence, min_change_pct)


def text(done: SidesCompared) -> list[str]:
    """The comparison for a terminal: both sides, what differs, then each cell's metrics."""
    v = done.versus
    lines = [f"A = {done.a}", f"B = {done.b}"]
    if done.differences:
        lines.append("What differs between A and B:")
        width = max(len(k) for k, _, _ in done.differences)
        lines += [f"  {k:<{width}}  {va}  ->  {vb}" for k, va, vb in done.differences]
    else:
        lines.append("What differs between A and B: nothing iolab records (same kernel, fio, device, options)")
    if v.not_comparable:
        lines.append(f"Not comparable: {v.not_comparable} (--across-devices compares anyway)")
    lines.append(
        f"B against A ({100 * done.confidence:g} % intervals: bootstrap and Welch t over the repeats; "
        f"changes below {done.min_change_pct:g} % are not called), cells matched on "
        f"{', '.join(v.by) or 'nothing: one cell a side'}:"
    )
    lines += v.describe()
    worse = v.worse
    if v.not_comparable:
        lines.append(f"no verdict: {v.not_comparable}")
    else:
        lines.append(
            f"B is worse on {len(worse)} of {len(v.cells)} figures" if len(worse) else "B is not worse on any figure"
        )
    return lines


def table(done: SidesCompared):
    """The comparison as a tidy DataFrame for CSV/JSON: one row per cell and metric."""
    return done.versus.cells.assign(a=str(done.a.path), b=str(done.b.path))


PAGE = """{% extends layout %}{% from "table.html" import table %}{% block body -%}
<h1>B against A</h1>
<p>A = <code>{{ a }}</code><br>B = <code>{{ b }}</code></p>
{% if not_comparable %}<div class='banner'>Not comparable: {{ not_comparable }}. The figures are shown;
no verdict is given (<code>--across-devices</code> compares anyway).</div>{% endif %}
<p class='{{ "worse" if worse else "ok" }}'>{{ summary }}</p>
<h2>What differs between A and B</h2>
{% if differences %}{{ table(["", "A", "B"], differences) }}{% else %}<p>Nothing iolab records: same kernel, fio,
device, machine and job options.</p>{% endif %}
<h2>Cell by cell</h2>
<p class='note'>Each row: the mean over a cell's runs on each side, B ÷ A - 1 with its {{ level }} % interval
(percentile bootstrap of the ratio, each side resampled on its own, joined with the Welch t interval;
iolab.compare.versus), and the verdict. A change is called only when its whole interval is on one side of 0 and
it is at least {{ threshold }} %. Cells matched on: {{ by }}.</p>
<table><thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead><tbody>
{%- for r in rows %}<tr>{% for c in r.cells %}<td{% if loop.index0 != metric_at %} class='num'{% endif %}>{{ c }}</td>{% endfor %}
<td class='{{ r.css }}'>{{ r.verdict }}</td></tr>{% endfor %}</tbody></table>
{% for side, cells in only %}<p class='note'>Only in {{ side }} (not compared): {{ cells }}</p>{% endfor %}
<p class='note'>Made by <code>iolab compare</code> on {{ when }} from the runs' fio json+ outputs, samplers and
system snapshots.</p>
{%- endblock %}"""
CSS = {"better": "better", "worse": "worse", "": "same", "not comparable": "same"}


def html(done: SidesCompared) -> str:
    """The comparison as one offline HTML page (no script, no fetch)."""
    v = done.versus
    header = [*v.by, "metric", "runs A, B", "A", "B", "B ÷ A", f"{100 * done.confidence:g} % interval", "verdict"]
    rows = [
        {
            "cells": [
                *(getattr(r, c) for c in v.by),
                label(r.metric),
                f"{r.n_a}, {r.n_b}",
                number(r.mean_a),
                number(r.mean_b),
                f"{r.change_pct:+.1f} %",
                "" if math.isnan(r.low_pct) else f"[{r.low_pct:+.1f}, {r.high_pct:+.1f}] %",
            ],
            "css": CSS.get(r.call, "same"),
            "verdict": r.verdict,
        }
        for r in v.cells.itertuples()
    ]
    only = v.one_sided()
    return page(
        PAGE,
        f"iolab compare: {done.a.path.name} vs {done.b.path.name}",
        a=str(done.a),
        b=str(done.b),
        not_comparable=v.not_comparable,
        worse=len(v.worse),
        summary=text(done)[-1],
        differences=done.differences,
        level=f"{100 * done.confidence:g}",
        threshold=f"{done.min_change_pct:g}",
        by=", ".join(v.by) or "nothing (one cell a side)",
        header=header,
        metric_at=len(v.by),
        rows=rows,
        only=only,
        when=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
