"""The jinja2 environment of iolab's offline pages (the write-up's parts, the seed pages):
autoescaping on, so every name, parameter, note and error a user wrote is text, never
markup; a value that is already HTML is a ``markupsafe.Markup``. Templates are module-level
strings, compiled once.

    render("<p>{{ text }}</p>", text="a < b")      # '<p>a &lt; b</p>'

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

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.DictLoader({"table.html": TABLE}),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


@functools.lru_cache(maxsize=None)
def template(source: str) -> jinja2.Template:
    """``source`` compiled in ``ENVIRONMENT`` (once per source)."""
    return ENVIRONMENT.from_string(source)


def render(source: str, /, **values) -> str:
    """The template ``source`` rendered with ``values``, escaped where they are text."""
    return template(source).render(**values)
