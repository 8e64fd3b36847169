"""The pages of ``iolab seeds``: each published figure of a seed beside the local one, and an
index of the seeds side by side. One offline file each in the pages' style, jinja2 templates
with autoescaping (``iolab.report.templating``); the figure ``iolab.plots.pages``', embedded.

    write_seed_page(seed, out)         # out/seed-NNN.html (the level and devices from out/plan.json)
    write_index(out)                   # out/index.html

The table comes from ``iolab.seeds.comparisons`` (one row per published figure and
metric, with the local value or why there is none), the set-ups and what could not run here
from ``iolab.seeds.setups``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.outputs import write_output
from ..core.readable import interval_text, percent, readable_value
from ..read.run import RunFolder
from ..report.templating import page
from ..stats import repeat_stats
from . import causes, commands, evidence
from .comparisons import (
    WORDS,
    batch_records,
    comparisons,
    coverage,
    finite,
    flag_texts,
    plan,
    published_figures,
    run_level,
    same_run,
    skipped,
)
from .manifest import Seed, load_seed
from .setups import cannot_run_here, check_by_check, differences, local_setup
from .shape import shapes

SEED_PAGE = """{% extends layout %}{% block body -%}
<h1>Seed {{ seed.ident }}: {{ seed.title }}</h1>
<p class='note'>{{ seed.author }}, {{ seed.date }}; the write-up: <code>shared/seeds/{{ seed.write_up }}</code>. \
Reproduced by <code>iolab seeds --only {{ seed.ident }}</code> (manifest <code>data/seeds/{{ seed.path.name }}</code>).</p>
{% for b in banners %}<div class='banner'>{{ b }}</div>
{% endfor -%}
<h2>The shape of the result</h2>
<p>What transfers from {{ seed.setup.device or "the write-up's device" }} to this machine is the shape: the gain of \
one step over another, one depth over another, the cost of one IO. The write-up's and this machine's, each from its \
own runs:</p>
{% if shape %}<table><thead><tr><th>shape</th><th>the write-up</th><th>here</th><th>95 % interval</th>\
<th>here from</th></tr></thead><tbody>
{%- for r in shape %}<tr data-shape='1'><td>{{ r.shape }}</td><td class='num'>{{ r.published }}</td>\
<td class='num'>{{ r.local }}</td><td class='num'>{{ r.interval }}</td><td class='why'>{{ r.why }}</td></tr>\
{% endfor %}</tbody></table>
{% if figure %}<figure><img alt='seed {{ seed.ident }}: the shape of the result beside the write-up' \
src='{{ figure }}'></figure>{% endif %}
{%- else %}<p class='note'>The manifest names no shape for this seed.</p>{% endif %}
<h2>Why the numbers differ, as measured</h2>
<p class='note'>The write-up's set-up on one side, this machine's runs on the other. Per experiment, the gap in its \
rates (IOPS, bandwidth), then each difference ranked by how much of it that difference alone could account for \
(<code>iolab explain</code>'s rule, <code>iolab.stats.gap</code>): an upper bound each, and they overlap, so the \
shares are no parts of a sum. What a seed measured on its author's machine is context, never ranked; a value the \
write-up does not give is said as assumed.</p>
{% for m in methods %}{% if m.gap %}<h3 data-gap='{{ m.name }}'>{{ m.name }}: {{ m.gap }}</h3>
{% if m.ranked %}<ol>{% for c in m.ranked %}<li><b>{{ c.what }}</b>{% if c.share %} ({{ c.share }} of the gap){% endif %}: \
{{ c.evidence }}</li>{% endfor %}</ol>{% else %}<p>No measured difference accounts for it.</p>{% endif %}
{% if m.own_unranked %}<p class='note'>Listed, not ranked (no measured channel here, or working against the \
gap):</p><ul>{% for c in m.own_unranked %}<li>{{ c }}</li>{% endfor %}</ul>{% endif %}{% endif %}{% endfor %}
{% if shared_causes %}<h3>every experiment, listed, not ranked</h3><ul>{% for c in shared_causes %}<li>{{ c }}</li>\
{% endfor %}</ul>{% endif %}
<p class='note'>From each experiment's runs: their system.json, job options and samplers (fio's own CPU apart from \
other programs'), and the seed's profile. Each row's own adaptations are under the commands below.</p>
<h2>Published against local</h2>
<p><b>{{ have }} of {{ figures }}</b> published figures have a local value here, taken under the conditions the \
commands below show; each of the others says why.{% for l, f in repeated.items() %} «{{ l }}» quotes the same \
published run as «{{ f }}» and counts once; each has its own experiment's local value (their commands below).\
{% endfor %}</p>
<table><thead><tr>{% for c in COLUMNS %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>
{%- for r in rows %}<tr data-figure='1' data-local='{{ r.local_flag }}'><td>{{ r.label }}</td><td>{{ r.metric }}</td>
{%- for v in r.numbers %}<td class='num'>{{ v }}</td>{% endfor %}<td class='num ratio'>{{ r.ratio }}</td>
{%- if r.flags %}<td class='failed' title='{{ r.flags_title }}'>⚠ {{ r.flags }}</td>{% else %}<td>none</td>{% endif -%}
<td class='why'>{{ r.how }}{% if r.cause %}<div class='cause'>{{ r.cause }}</div>{% endif %}</td></tr>\
{% endfor %}</tbody></table>
{% for name, text in flags.items() %}<p class='note'><span class='failed'>⚠ {{ name }}:</span> {{ text }}</p>
{% endfor -%}
<h2>The commands, as published and as run</h2>
<table><thead><tr><th>figure</th><th>as published</th><th>as run here</th><th>what changed, and why</th></tr>\
</thead><tbody>
{%- for c in commands %}<tr data-command='1'><td>{{ c.label }}</td><td><code>{{ c.published or "–" }}</code></td>\
<td>{% if c.run %}<code>{{ c.run }}</code>{% if c.runs > 1 %}<div class='note'>the same for its {{ c.runs }} \
runs (repeats differ only in --name)</div>{% endif %}{% else %}no local value: {{ c.why }}{% endif %}</td>\
<td>{% if c.changes %}<ul>{% for x in c.changes %}<li>{{ x.change }}{% if not x.common %}: {{ x.reason }}{% endif %}\
</li>{% endfor %}</ul>{% else %}–{% endif %}</td></tr>{% endfor %}</tbody></table>
{% if common %}<p class='note'>Changes without a reason beside them have the same one on every row: \
{% for k, v in common %}{{ k }}: {{ v }}{{ "; " if not loop.last else "." }}{% endfor %}</p>{% endif %}
<h2>What differs between the two set-ups</h2>
<p>{{ differences }}</p>
{% if checks %}<table><thead><tr><th>check (iolab preflight)</th><th>the write-up's set-up</th><th>verdict here</th>\
<th>seen here</th></tr></thead><tbody>
{%- for c in checks %}<tr data-check='{{ c.check }}'><td>{{ c.check }}</td><td>{{ c.theirs }}</td>\
<td class='{{ c.verdict }}'>{{ c.verdict }}</td><td>{{ c.here }}</td></tr>{% endfor %}</tbody></table>
<p class='note'>Here: <code>iolab preflight</code> when this page was written, for the CPUs and device of the seed's \
runs; the checks the write-up names, then those not ok here. It changes nothing: <code>iolab preflight --tune</code> \
sets what iolab can set.</p>{% endif %}
<h2>Method and evidence</h2>
{% for m in methods -%}
<h3>{{ m.name }} — notebook {{ m.notebook }} (<span class='{{ m.status }}'>{{ m.status }}</span>)</h3>
<p class='note'>Follows the write-up's {{ m.section }}.</p><p>{{ m.method }}</p>
{%- if m.extra %}<p class='note'>{{ m.extra }}</p>{% endif %}
{%- if m.error %}<p class='err'>{{ m.error }}</p>{% endif %}
{%- for s in m.sections %}<section data-evidence='{{ m.name }}'><h4>{{ s.heading }}</h4>
{%- for r in s.readings %}<p class='reading'>{{ r }}</p>{% endfor %}
{%- for t in s.tables %}<div class='evidence'>{{ t | safe }}</div>{% endfor %}
{%- for src in s.figures %}<figure><img alt='{{ m.name }}: {{ s.heading }}' src='{{ src }}'></figure>{% endfor %}
</section>{% endfor %}
{%- if m.left %}<p class='note'>{{ m.left }} more table{{ "s" if m.left > 1 }} or figure{{ "s" if m.left > 1 }} \
in the executed notebook.</p>{% endif %}
{%- if m.links %}<p>{% for text, href in m.links %}{{ " " if not loop.first }}<a href="{{ href }}">{{ text }}</a>\
{% endfor %}</p>{% endif %}
{% endfor -%}
<h2>What could not be run here, and why</h2>
{% if missing %}<ul>{% for x in missing %}<li>{{ x }}</li>{% endfor %}</ul>{% else %}<p>Everything ran.</p>{% endif %}
<p class='note'>Published figures: <code>data/reference/published_figures.csv</code> ({{ source }}). \
<a href='index.html'>All seeds</a>.</p>
{%- endblock %}"""
INDEX_PAGE = """{% extends layout %}{% block body -%}
<h1>iolab seeds: the write-ups reproduced on this machine</h1>
<p>Each seed's page sets the shape of its write-up's result beside this machine's, then every figure it \
published with the commands as published and as run, why the numbers differ as measured, the evidence its notebooks \
drew and what could not run here. Re-run the same \
<code>iolab seeds</code> command to finish what failed or is missing.</p>
<table><thead><tr>{% for c in COLUMNS %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>
{%- for r in rows %}
{%- if r.error %}<tr><td>{{ r.ident }}</td><td colspan='6' class='err'>{{ r.error }}</td></tr>
{%- else %}<tr><td><a href="{{ r.href }}">{{ r.ident }}</a></td><td>{{ r.title }}</td>
{%- if r.top %}<td>{{ r.top.shape }}</td><td class='num'>{{ r.top.published }}</td>
<td class='num'>{{ r.top.local }}<div class='note'>{{ r.top.interval }}</div>
{%- if r.top.why %}<div class='why'>{{ r.top.why }}</div>{% endif %}</td>
{%- else %}<td colspan='3'>no shape named</td>{% endif -%}
<td class='num'>{{ r.have }} of {{ r.figures }}</td><td>{{ r.experiments }}</td></tr>
{%- endif %}{% endfor %}</tbody></table>
{%- endblock %}"""
SEED_COLUMNS = (
    "figure",
    "metric",
    "published",
    "local",
    "95 % interval",
    "local ÷ published",
    "plausibility flags",
    "local value from (or why there is none), and the largest measured cause of its gap",
)
INDEX_COLUMNS = (
    "seed",
    "write-up",
    "the shape of the result",
    "the write-up",
    "here [95 % interval]",
    "published figures with a local value",
    "experiments",
)


def plot(shape: pd.DataFrame, seed: Seed) -> str | None:
    """The shape beside the write-up's (``iolab.plots.pages.shape_beside_author``) as a data:
    URI; None when no ratio has a value."""
    from ..plots.pages import data_uri, shape_beside_author  # matplotlib: only when a page is written

    fig = shape_beside_author(shape, seed.ident)
    return data_uri(fig) if fig is not None else None


def shape_rows(shape: pd.DataFrame) -> list[dict[str, str]]:
    """The shape table in words: each ratio as ``1.56×``, a figure with its unit."""

    def said(v: Any, unit: str) -> str:
        if not finite(v):
            return "–"
        return f"{v:.3g}×" if unit == "×" else f"{readable_value(v)} {unit}"

    return [
        {
            "shape": r["shape"],
            "published": said(r["published"], r["unit"]),
            "local": said(r["local"], r["unit"]),
            "interval": interval({**r, "n": None, "cv_pct": None})
            if finite(r["low"]) or not finite(r["local"])
            else "not bounded: a side has no interval",
            "why": r["why"],
        }
        for r in shape.to_dict("records")
    ]


def command_rows(table: pd.DataFrame, seed: Seed, quick: bool) -> list[dict[str, Any]]:
    """One row per published figure (label): the author's command, the command of the local
    runs behind it (``iolab.seeds.commands``) and every change with its reason."""
    reasons = {e.name: e.adaptations for e in seed.experiments}
    rows = []
    for label, group in table.groupby("label", sort=False):
        first = group.iloc[0]
        runs = next((r for r in group["runs"] if r), [])
        with_value = group[group["local"].map(finite)]
        why = "" if runs else (group["how"].iloc[0] if with_value.empty else "no run folder is named for it")
        rows.append(
            {
                "label": label,
                "published": first["command"],
                "run": RunFolder(runs[0]).command(list(commands.published_options(first["command"])[0]))
                if runs
                else "",
                "runs": len(runs),
                "why": why,
                "changes": commands.adaptations(first["command"], runs[0], reasons.get(first["from"]), quick)
                if runs
                else [],
            }
        )
    return rows


def shown(v: Any, unit: str) -> str:
    """A value with its unit, or a dash when there is none."""
    return f"{readable_value(v)} {unit}" if finite(v) else "–"


def interval(r: Mapping[str, Any]) -> str:
    """The local value's interval in words: ``[low, high]``, not informative, or a dash."""
    if not finite(r.get("local")):
        return "–"
    return (
        interval_text(readable_value(r["low"]), readable_value(r["high"]))
        if finite(r.get("low")) and finite(r.get("high"))
        else repeat_stats.no_interval_words(r.get("n"), r.get("cv_pct"))
    )


def ratio(r: Mapping[str, Any]) -> str:
    """Local ÷ published as ``1.23×``, or a dash."""
    return f"{r['ratio']:.3g}×" if finite(r["ratio"]) else "–"


def banners(seed: Seed, out: Path, snap: Mapping[str, Any]) -> list[str]:
    """What the reader must know before the numbers: emulated, no device, smoke or quick settings."""
    entry = plan(out).get("seeds", {}).get(seed.ident, {})
    said = []
    if snap.get("emulated"):
        said.append(
            f"Emulated: {snap['emulated']}. The code paths are real (Linux's nvme driver, poll "
            "queues, passthrough); the numbers measure the emulator on this host, never an SSD."
        )
    if not entry.get("devices"):
        said.append(
            "No --device: the scratch default (a scratch file, and tmpfs-backed loop devices where a step "
            "needs a block device). Give --device /dev/nvme0n1 to measure an SSD."
        )
    else:
        said.append("Devices: " + ", ".join(entry["devices"]))
    if entry.get("level") == "smoke":
        said.append(
            "Smoke settings (the test suite's): the smallest runs that go through every step. "
            "The numbers are not meaningful; run --quick or the full plan to read them."
        )
    elif entry.get("level") == "quick":
        said.append(
            "Quick settings: the write-up's steps at short runtimes (--quick). Run without --quick for the full method."
        )
    return said


def relative(target: str | None, out: Path) -> str:
    """``target`` as a link from a page in ``out`` ("" for none)."""
    return os.path.relpath(target, out) if target else ""


def seed_page(seed: Seed, out: Path) -> str:
    """The page of one seed (links relative to ``out``)."""
    table = comparisons(seed, out)
    snap = local_setup(seed, out)
    flags = flag_texts(seed, out)
    shape = shapes(seed, table, out)
    level = run_level(seed, out)
    records = batch_records(seed, out)
    row_causes = causes.row_causes(seed, records, table, causes.seed_profile(records)) if len(table) else []
    rows = [
        {
            "local_flag": "1" if finite(r["local"]) else "0",
            "label": r["label"],
            "metric": WORDS[r["metric"]] + (f", {r['by']}'s" if r.get("by") else ""),  # which tool measured it
            "numbers": [shown(r["published"], r["unit"]), shown(r["local"], r["unit"]), interval(r)],
            "ratio": ratio(r),
            "flags": r["flags"],
            "flags_title": flags.get(r["from"], ""),
            "how": r["how"],
            "cause": cause,
        }
        for r, cause in zip(table.to_dict("records"), row_causes, strict=True)
    ]
    have, figures = coverage(table)
    said = command_rows(table, seed, level == "quick") if len(table) else []
    done = methods(seed, out, table, records)
    listed = [m["unranked"] for m in done if m["gap"]]
    shared = [c for c in listed[0] if all(c in other for other in listed)] if len(listed) > 1 else []
    for m in done:
        m["own_unranked"] = [c for c in m["unranked"] if c not in shared]
    return page(
        SEED_PAGE,
        f"iolab seeds: seed {seed.ident}",
        seed=seed,
        banners=banners(seed, out, snap),
        shape=shape_rows(shape),
        figure=plot(shape, seed),
        have=have,
        figures=figures,
        repeated=same_run(table) if len(table) else {},
        differences=differences(seed, snap),
        checks=check_by_check(seed, snap),
        COLUMNS=SEED_COLUMNS,
        rows=rows,
        flags=flags,
        commands=said,
        common=sorted({(c.change.split(" ")[0], c.reason) for r in said for c in r["changes"] if c.common}),
        methods=done,
        shared_causes=shared,
        missing=cannot_run_here(table, snap),
        source=published_figures(seed.ident)["source"].iloc[0] if len(table) else "",
    )


def methods(
    seed: Seed, out: Path, table: pd.DataFrame | None = None, records: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Each experiment of ``seed``: its notebook, status, method, notes, first error line,
    links to its write-up and executed notebook, the measured causes of its differences
    (``iolab.seeds.causes``) and the readings, tables and figures its notebook showed
    under the sections its argument rests on (``iolab.seeds.evidence``)."""
    records = batch_records(seed, out) if records is None else records
    notes = plan(out).get("notes", {})
    profile = causes.seed_profile(records)
    table = comparisons(seed, out) if table is None else table
    level = run_level(seed, out)
    mine = table[table["local"].map(finite) & table["command"].map(commands.polls)] if len(table) else table
    polled = set(mine["from"]) if len(mine) else set()  # experiments whose compared figures the author polled
    found = []
    for exp in seed.experiments:
        rec = records.get(exp.name) or {}
        why = "" if rec else skipped(exp, level)
        status = rec.get("status", f"not run at the {level} level" if why else "not run yet")
        err = (str(rec.get("error") or "").splitlines() or [""])[0]
        links = [("write-up", relative(rec.get("html"), out)), ("executed notebook", relative(rec.get("output"), out))]
        shown = evidence.sections(rec, exp.evidence)
        unmatched = (
            [
                f"the manifest's evidence names sections its executed notebook does not have: {', '.join(shown.unmatched)}"
            ]
            if shown.unmatched and rec.get("output")
            else []
        )
        rows = table[table["from"] == exp.name] if len(table) else None
        gap = causes.causes(seed, rec, rows, profile, exp.name in polled) if rec else causes.SeedGap()
        found.append(
            {
                "name": exp.name,
                "notebook": exp.notebook.name,
                "status": status,
                "section": exp.section,
                "method": exp.method,
                "extra": "; ".join(
                    [*notes.get(f"{seed.ident}/{exp.name}", []), *([exp.skip[level]] if why else []), *unmatched]
                ),
                "error": err[:400] if status == "failed" else "",
                "links": [(text, href) for text, href in links if href],
                "gap": gap.headline() if gap.ranked or gap.unranked else "",
                "ranked": [
                    {"what": c.what, "share": percent(100 * c.share) if c.share else "", "evidence": c.evidence}
                    for c in gap.ranked
                ],
                "unranked": [f"{c.what}: {c.evidence}" for c in gap.unranked],
                "sections": shown.sections,
                "left": shown.left,
            }
        )
    return found


def write_seed_page(seed: Seed, out: str | Path, force: bool = False) -> Path:
    """``out/seed-NNN.html``, written atomically through the output guard (``iolab.core.outputs``)."""
    out = Path(out)
    return write_output(out / f"{seed.slug}.html", seed_page(seed, out), force=force)


def index_page(out: Path) -> str:
    """The index: every seed of ``out/plan.json`` with its headline comparison."""
    rows = []
    for ident, entry in plan(out).get("seeds", {}).items():
        try:
            seed = load_seed(entry["manifest"])
        except Exception as exc:  # a manifest moved or broken since: the row says so
            rows.append({"ident": ident, "error": str(exc)})
            continue
        table = comparisons(seed, out)
        shape = shapes(seed, table, out)
        top = shape.iloc[0].to_dict() if len(shape) else None
        ok = sum(r.get("status") == "ok" for r in batch_records(seed, out).values())
        where = f"; devices {', '.join(entry['devices'])}" if entry.get("devices") else "; scratch default"
        rows.append(
            {
                "ident": seed.ident,
                "error": "",
                "href": relative(str(out / f"{seed.slug}.html"), out),
                "title": seed.title,
                "top": {**shape_rows(shape.iloc[:1])[0], "why": "" if finite(top["local"]) else top["why"]}
                if top
                else None,
                "have": coverage(table)[0],
                "figures": coverage(table)[1],
                "experiments": f"{ok} of {len(seed.experiments)} ok; {entry.get('level', '')}{where}",
            }
        )
    return page(INDEX_PAGE, "iolab seeds", COLUMNS=INDEX_COLUMNS, rows=rows)


def write_index(out: str | Path, force: bool = False) -> Path:
    """``out/index.html``, written atomically through the output guard (``iolab.core.outputs``)."""
    out = Path(out)
    return write_output(out / "index.html", index_page(out), force=force)
