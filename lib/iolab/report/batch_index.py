"""The index page of a batch (``OUT/index.html``): every run with its status, parameters and
recorded results side by side, plots of each result across the runs, and links to each
run's write-up. One offline file in the pages' style (``iolab.report.templating``), the figures
``iolab.plots.pages``', embedded."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.readable import readable_value
from ..read import checks
from .templating import page


def _result_text(r: Mapping[str, Any]) -> str:
    text = readable_value(r.get("value"))
    if r.get("low") is not None and r.get("high") is not None:
        text += f" [{readable_value(r['low'])}, {readable_value(r['high'])}]"
    return text


def varying(runs: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Parameter names whose values differ between runs, and the ones shared by all."""
    names = list(dict.fromkeys(k for r in runs for k in r.get("parameters", {})))
    vary, same = [], {}
    for n in names:
        values = {repr(r.get("parameters", {}).get(n)) for r in runs}
        if len(values) > 1:
            vary.append(n)
        else:
            same[n] = runs[0].get("parameters", {}).get(n)
    return vary, same


def result_names(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(name, unit) of every key result any run recorded, in first-seen order (not the
    per-setting details of ``results.record_many``: a column each would bury the rest)."""
    seen: dict[str, str] = {}
    for r in runs:
        for res in r.get("results") or []:
            if not res.get("detail"):
                seen.setdefault(res["name"], res.get("unit", ""))
    return list(seen.items())


def _relative(target: str | None, out: Path) -> str:
    """``target`` as a link from a page in ``out`` ("" for none)."""
    return os.path.relpath(target, out) if target else ""


def _points(name: str, runs: Sequence[Mapping[str, Any]], x_param: str | None) -> list[tuple]:
    """(label, value, low, high) of result ``name`` in each successful run that recorded a number."""
    points = []
    for r in runs:
        res = next((x for x in r.get("results") or [] if x["name"] == name), None)
        if res and isinstance(res.get("value"), (int, float)) and r.get("status") == "ok":
            label = str(r["parameters"].get(x_param)) if x_param else r["name"]
            points.append((label, res["value"], res.get("low"), res.get("high")))
    return points


PAGE = """{% extends layout %}{% block body -%}
<h1>Batch of {{ notebook }}</h1>
<p>{{ rows | length }} runs: <span class="ok">{{ ok }} ok</span>
{%- if failed %}, <span class="failed">{{ failed }} failed</span>{% endif %}.
Manifest: <code>{{ manifest }}</code>. Re-run the same command to re-run only failed or missing runs.</p>
{% if same %}<p class="note">Shared parameters:
{% for k, v in same.items() %} <code>{{ k }}={{ v }}</code>{{ "," if not loop.last }}{% endfor %}</p>{% endif %}
<h2>Runs</h2>
<table><thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>
{% for r in rows %}<tr>
<td>{% if r.html %}<a href="{{ r.html }}">{{ r.name }}</a>{% else %}{{ r.name }}{% endif %}</td>
<td class="{{ r.status }}">{{ r.status }}{% if r.error %}<div class="err">{{ r.error }}</div>{% endif %}</td>
{%- for v in r.parameters %}<td>{{ v }}</td>{% endfor %}
{%- for v in r.results %}<td class="num">{{ v }}</td>{% endfor %}
{% if r.flagged %}<td class="failed" title="{{ r.flags_title }}">⚠ {{ r.flagged }}</td>{% else %}<td>–</td>{% endif %}
<td class="num">{{ r.duration }}</td>
<td>{% for text, href in r.links %}<a href="{{ href }}">{{ text }}</a> {% endfor %}</td>
</tr>
{% endfor %}</tbody></table>
{% if figures %}<h2>Results across runs</h2>
{% for name, uri in figures %}<figure><img alt="{{ name }} across runs" src="{{ uri }}"></figure>
{% endfor %}{% else %}<p class="note">No result was recorded by two or more successful runs: nothing to plot.</p>
{% endif %}
{%- endblock %}"""


def index_html(doc: Mapping[str, Any], out: Path) -> str:
    """The page for ``batch.json``'s ``doc``, with links relative to ``out``: ``PAGE``, a
    jinja2 template with autoescaping (every name, parameter and error a user wrote is text,
    never markup)."""
    from ..plots.pages import data_uri, results_across_runs  # matplotlib: only when a page is written

    runs = doc["runs"]
    vary, same = varying(runs)
    results = result_names(runs)
    ok = sum(r.get("status") == "ok" for r in runs)
    rows = []
    for r in runs:
        by_name = {x["name"]: x for x in r.get("results") or []}
        flagged = checks.folder_flags(r.get("run_folders") or [])
        links = [(text, _relative(r.get(key), out)) for text, key in (("write-up", "html"), ("notebook", "output"))]
        rows.append(
            {
                "name": r["name"],
                "html": _relative(r.get("html"), out),
                "status": r.get("status"),
                "error": str(r.get("error") or "").splitlines()[0][:300] if r.get("error") else "",
                "parameters": [r["parameters"].get(p) for p in vary],
                "results": [_result_text(by_name[n]) if n in by_name else "–" for n, _ in results],
                "flagged": f"{len(flagged)} of {len(r['run_folders'])} runs" if flagged else "",
                "flags_title": checks.banner_text(flagged, len(r["run_folders"])) if flagged else "",
                "duration": readable_value(r.get("duration_s")),
                "links": [(text, href) for text, href in links if href],
            }
        )
    x_param = vary[0] if len(vary) == 1 else None
    figures = [
        (n, data_uri(fig))
        for n, u in results
        if (fig := results_across_runs(n, u, _points(n, runs, x_param), x_param or "run")) is not None
    ]
    notebook = Path(doc["notebook"]).name
    return page(
        PAGE,
        f"iolab batch: {notebook}",
        notebook=notebook,
        ok=ok,
        failed=len(runs) - ok,
        manifest=doc["manifest"],
        same=same,
        rows=rows,
        figures=figures,
        columns=[
            "run",
            "status",
            *vary,
            *(f"{n} ({u})" if u else n for n, u in results),
            "plausibility flags",
            "duration (s)",
            "files",
        ],
    )
