"""The jinja2 environment of iolab's offline pages (the write-up's parts, the batch index, the
compare page, the seed pages) and their one style: autoescaping on, so every name, parameter,
note and error a user wrote is text, never markup; a value that is already HTML is a
``markupsafe.Markup``. Templates are module-level strings, compiled once.

    render("<p>{{ text }}</p>", text="a < b")      # '<p>a &lt; b</p>'
    page("{% extends layout %}{% block body %}<h1>{{ h }}</h1>{% endblock %}", "a title", h="Hi")

A page's template extends ``LAYOUT`` (``page`` passes it): one offline file, ``STYLE`` inline,
no script; its figures are embedded by ``iolab.plots.pages.data_uri``.

Templates may ``{% from "table.html" import table %}``: ``table(header, rows, numeric)``,
an HTML table of escaped cells (no header row if ``header`` is None), the columns whose
index is in ``numeric`` right-aligned (``class="num"``)."""

from __future__ import annotations

import functools

import jinja2

TABLE = """{% macro table(header, rows, numeric=()) -%}
<table>{% if header %}<thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead>{% endif -%}
<tbody>{% for row in rows %}<tr>
{%- for cell in row %}<td{% if loop.index0 in numeric %} class="num"{% endif %}>{{ cell }}</td>{% endfor -%}
</tr>{% endfor %}</tbody></table>
{%- endmacro %}"""

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em} table{border-collapse:collapse;font-size:.9em}
th,td{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37;font-weight:600} .failed,.fail{color:#c62828;font-weight:600} .warn,.differs{color:#a15c00;font-weight:600} .err{color:#c62828;font-size:.85em;max-width:28em}
.note{color:#555;font-size:.85em} figure{margin:1em 0} img{max-width:100%} td code{overflow-wrap:anywhere}
.better{color:#1a7f37;font-weight:600} .worse{color:#c62828;font-weight:600} td.same{color:#555}
.banner{background:#fff4e5;border-left:4px solid #e8a33d;padding:.6em 1em;margin:1em 0}
td.why{color:#555;font-size:.85em;max-width:30em} .ratio{font-weight:600}
.reading{white-space:pre-line} div.cause{color:#222;margin-top:.3em} div.evidence{overflow-x:auto;margin:.6em 0} h4{margin:1.2em 0 .4em}
"""
LAYOUT = """<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{{ title }}</title>
<style>{{ style | safe }}</style></head><body>
{% block body %}{% endblock %}
</body></html>
"""

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.DictLoader({"table.html": TABLE}),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


@functools.cache
def template(source: str) -> jinja2.Template:
    """``source`` compiled in ``ENVIRONMENT`` (once per source)."""
    return ENVIRONMENT.from_string(source)


def render(source: str, /, **values) -> str:
    """The template ``source`` rendered with ``values``, escaped where they are text."""
    return template(source).render(**values)


def page(body: str, title: str, /, **values) -> str:
    """The template ``body`` (it extends ``layout``) as a whole page titled ``title``, in ``STYLE``."""
    return render(body, layout=template(LAYOUT), title=title, style=STYLE, **values)
