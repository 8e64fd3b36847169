"""The index page of a batch (``OUT/index.html``): every run with its status, parameters and
recorded results side by side, plots of each result across the runs, and links to each
run's write-up. One offline file: inline style, figures as embedded PNG, no script."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..read import checks
from ..core.readable import readable_value

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em} table{border-collapse:collapse;font-size:.9em}
th,td{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37;font-weight:600} .failed{color:#c62828;font-weight:600} .err{color:#c62828;font-size:.85em;max-width:28em}
.note{color:#555;font-size:.85em} figure{margin:1em 0} img{max-width:100%}
"""


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


def _plot(name: str, unit: str, runs: Sequence[Mapping[str, Any]], x_param: str | None) -> str | None:
    """A bar per run of result ``name`` (whiskers: its recorded interval), as a data: URI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = []
    for r in runs:
        res = next((x for x in r.get("results") or [] if x["name"] == name), None)
        if res and isinstance(res.get("value"), (int, float)) and r.get("status") == "ok":
            label = str(r["parameters"].get(x_param)) if x_param else r["name"]
            points.append((label, res["value"], res.get("low"), res.get("high")))
    if len(points) < 2:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = range(len(points))
    ax.bar(xs, [p[1] for p in points], color="#4c72b0")
    for i, (_, v, lo, hi) in enumerate(points):
        if lo is not None and hi is not None:
            ax.errorbar(i, v, yerr=[[v - lo], [hi - v]], color="k", capsize=4, linewidth=1)
        top = hi if hi is not None and hi > v else v  # above the whisker, not on it
        ax.annotate(readable_value(v), (i, top), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    ax.margins(y=0.12)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([p[0] for p in points], rotation=20 if len(points) > 4 else 0, fontsize=8)
    ax.set_xlabel(x_param or "run")
    ax.set_ylabel(f"{name} ({unit})" if unit else name)
    ax.set_title(f"{name} across the batch's runs")
    fig.text(
        0.01,
        0.01,
        "source: each run's recorded results (iolab.record.results); whiskers: the interval it recorded",
        fontsize=7,
        color="0.35",
    )
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>iolab batch: {{ notebook }}</title><style>{{ style | safe }}</style></head><body>
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
{% endif %}</body></html>
"""


def index_html(doc: Mapping[str, Any], out: Path) -> str:
    """The page for ``batch.json``'s ``doc``, with links relative to ``out``: ``PAGE``, a
    jinja2 template with autoescaping (every name, parameter and error a user wrote is text,
    never markup)."""
    import jinja2

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
    figures = [(n, uri) for n, u in results if (uri := _plot(n, u, runs, x_param))]
    page = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(PAGE)
    return page.render(
        notebook=Path(doc["notebook"]).name,
        style=STYLE,
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
