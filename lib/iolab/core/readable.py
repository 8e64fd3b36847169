"""Numbers and tables as people read them: the same in a write-up and in a live notebook.

``readable_number`` rounds to what a measurement supports and separates thousands;
``readable_bytes`` gives sizes and rates in binary units (275873792 B -> 263 MiB);
``readable_tables`` applies both to pandas' HTML tables and puts each registered column's
unit in its header (``iolab.core.columns.label``). ``publish`` runs it over a notebook's tables;
in a kernel, ``live_tables`` (``%load_ext iolab`` calls it) shows every DataFrame through it,
inside a box that scrolls sideways, so a wide table is never cut at the notebook's edge.
"""

from __future__ import annotations

import html as markup
import re
import textwrap

from .columns import COLUMNS, label

TEXT_WIDTH = 100  # characters: a JupyterLab output at 1280 px holds about 105 of its monospace
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
BYTE_UNITS = {"B": "", "B/s": "/s"}  # registry units whose values read better in KiB/MiB/GiB
_BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]


def readable_number(text: str) -> str:
    """A number as a table shows it to people; any other text unchanged. Integers from
    1,000 get thousands separators; other numbers keep three significant digits without
    rounding the integer part: 22441.558442 -> 22,442; 64.256 -> 64.3; 2.596134 -> 2.60;
    0.982029 -> 0.982; 0.000123456 -> 0.000123."""
    s = text.strip()
    if not _NUMBER.fullmatch(s):
        return text
    if s.lstrip("+-").isdigit():
        return f"{int(s):,}" if abs(int(s)) >= 1000 else s
    value = float(s)
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return "0" if value == 0 else f"{value:.3g}"


def si_number(v: float, _pos=None, k_from: float = 1e4) -> str:
    """400k, 1.2M, 61.7M: a large count in three digits and an SI prefix, the unit said
    elsewhere (an axis label), from ``k_from`` up (1e4: an axis reads 5,000 rather than 5k;
    sentences use 1e3); a matplotlib tick formatter as it is. "n/a" for NaN."""
    if v is None or v != v:
        return "n/a"
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= k_from:
        return f"{v / 1e3:.3g}k"
    return f"{v:,.0f}" if a >= 100 else f"{v:.3g}"


def percent(x: float, signed: bool = False) -> str:
    """19 %, 0.4 % (``signed``: +19 %, -0.4 %): whole percent from 10 up, one decimal below;
    "n/a" for NaN."""
    if x is None or x != x:
        return "n/a"
    sign = "+" if signed else ""
    return f"{x:{sign}.0f} %" if abs(x) >= 10 else f"{x:{sign}.1f} %"


def readable_value(v) -> str:
    """A table cell's value for reading: numbers by ``readable_number``, "–" for none or NaN,
    other values as their text."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return readable_number(str(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def wrapped(text: str, width: int = TEXT_WIDTH) -> str:
    """``text`` with each line longer than ``width`` broken at spaces (continued with an
    indent): JupyterLab breaks a long output line anywhere, mid-word ("runtime='5" / "00ms'")."""
    return "\n".join(
        textwrap.fill(line, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
        if len(line) > width
        else line
        for line in text.splitlines()
    )


class Paragraph(str):
    """Text for people that prints ``wrapped`` (``print``, ``str``, f-strings) while its value
    stays the one line it was built as (``in``, ``==``, slicing): a notebook's output breaks
    at spaces, and code that searches the text is not thrown by the breaks."""

    def __str__(self) -> str:
        return wrapped(str.__str__(self))


def wrapped_text(describe):
    """Decorator for a function that returns a paragraph for people (``describe_*``): it
    returns a ``Paragraph``, so ``print(...)`` in a notebook breaks it at spaces."""
    import functools

    @functools.wraps(describe)
    def wrapper(*args, **kwargs):
        return Paragraph(describe(*args, **kwargs))

    return wrapper


def readable_bytes(text: str, per: str = "") -> str:
    """A byte count (or rate: ``per="/s"``) in binary units with three significant digits:
    275873792 (or 275,873,792, as a live table's float format wrote it) -> 263 MiB;
    1610612736 -> 1.50 GiB; 512 -> 512 B. Other text unchanged."""
    s = text.strip().replace(",", "")
    if not _NUMBER.fullmatch(s):
        return text
    value, unit = float(s), 0
    while abs(value) >= 1024 and unit < len(_BINARY) - 1:
        value, unit = value / 1024, unit + 1
    return f"{readable_number(repr(value)) if unit else readable_number(s)} {_BINARY[unit]}{per}"


# ---------------------------------------------------------------- pandas' HTML tables
_ROW = re.compile(r"(<tr\b[^>]*>)(.*?)(</tr>)", re.S)
_CELL = re.compile(r"<(t[hd])\b([^>]*)>(.*?)</t[hd]>", re.S)
_DATAFRAME = re.compile(r"<table\b[^>]*class=\"[^\"]*\bdataframe\b[^\"]*\"[^>]*>.*?</table>", re.S)
# columns whose integers are names, not quantities: no thousands separator in a year or an id
_VERBATIM_COLUMN = re.compile(r"(?:^|_)(?:id|ids|year|seed|pid|index|cpu|cpus|groupid|error|port)$", re.I)


def readable_tables(page: str) -> str:
    """Every pandas table (``class="dataframe"``) in ``page`` with its cells' numbers
    made readable (``readable_number``; ``readable_bytes`` in columns registered in B or
    B/s; untouched in id-like columns such as ``run_id`` or ``year``) and the registered
    columns' names as labels with units (``iolab.core.columns.label``: ``iops`` -> ``IOPS
    (IO/s)``, the name kept as a tooltip). Idempotent: a table already made readable is
    left as it is."""
    return _DATAFRAME.sub(lambda m: _readable_table(m.group(0)), page)


def _readable_table(table: str) -> str:
    head, sep, body = table.partition("</thead>")
    if not sep:
        head, body = "", table
    # data cells are the last ones of a row (index cells come first, with rowspans), so
    # a data cell's column is found by counting from the right
    names: dict[int, set[str]] = {}
    for row in _ROW.finditer(head):
        at = 0
        for tag, attrs, text in reversed(_CELL.findall(row.group(2))):
            span = re.search(r"colspan=\"(\d+)\"", attrs)
            titled = re.search(r'title="([^"]*)"', attrs)  # a header made readable before: its name
            for k in range(int(span.group(1)) if span else 1):
                names.setdefault(at + k, set()).add(markup.unescape(titled.group(1) if titled else text).strip())
            at += int(span.group(1)) if span else 1
    verbatim = {at for at, texts in names.items() if any(_VERBATIM_COLUMN.search(t) for t in texts)}
    in_bytes = {
        at: BYTE_UNITS[COLUMNS[t].unit]
        for at, texts in names.items()
        for t in texts
        if t in COLUMNS and COLUMNS[t].unit in BYTE_UNITS
    }

    def header(m: re.Match) -> str:
        tag, attrs, text = m.groups()
        name = markup.unescape(text).strip()
        if tag != "th" or name not in COLUMNS:
            return m.group(0)
        return f'<th{attrs} title="{markup.escape(name)}">{markup.escape(label(name))}</th>'

    def cell(tag: str, attrs: str, text: str, at: int) -> str:
        if tag != "td" or at in verbatim:
            return f"<{tag}{attrs}>{text}</{tag}>"
        return f"<td{attrs}>{readable_bytes(text, in_bytes[at]) if at in in_bytes else readable_number(text)}</td>"

    def row(m: re.Match) -> str:
        cells = list(_CELL.finditer(m.group(2)))
        out, end = [], 0
        for i, c in enumerate(cells):
            out.append(m.group(2)[end : c.start()])
            end = c.end()
            out.append(cell(*c.groups(), len(cells) - 1 - i))
        return m.group(1) + "".join(out) + m.group(2)[end:] + m.group(3)

    return _CELL.sub(header, head) + sep + _ROW.sub(row, body)


# ---------------------------------------------------------------- in a kernel
SCROLL_BOX = "iolab-table"


def table_html(frame) -> str | None:
    """A DataFrame as a notebook shows it: pandas' own HTML (its display options: rows and
    columns elided in the middle past ``display.max_rows`` / ``max_columns``) made
    readable, in a box that scrolls sideways when the table is wider than the notebook."""
    html = frame._repr_html_()
    if html is None:
        return None
    return f'<div class="{SCROLL_BOX}" style="overflow-x: auto; max-width: 100%">{readable_tables(html)}</div>'


_BEFORE: dict = {}  # pandas' float format before live_tables, for plain_tables


def live_tables(shell=None) -> None:
    """In a notebook (``%load_ext iolab`` calls it): DataFrames show as the write-ups show
    them (``table_html``: 12748.502994 -> 12,749, io_bytes 275873792 -> 263 MiB,
    ``clat_p99_us`` -> "clat p99 (µs)", scrolling sideways when wide), and pandas' text form
    rounds floats the same way. ``plain_tables`` puts pandas and IPython back."""
    import pandas as pd

    _BEFORE.setdefault("float_format", pd.get_option("display.float_format"))
    pd.set_option("display.float_format", lambda v: readable_number(repr(float(v))))
    if shell is not None and hasattr(shell, "display_formatter"):
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def plain_tables(shell=None) -> None:
    """Undo ``live_tables`` (``%unload_ext iolab``): pandas' float format as it was, and
    DataFrames shown by their own HTML again."""
    import pandas as pd

    if "float_format" in _BEFORE:
        pd.set_option("display.float_format", _BEFORE.pop("float_format"))
    if shell is not None and hasattr(shell, "display_formatter"):
        formatter = shell.display_formatter.formatters["text/html"]
        if formatter.type_printers.get(pd.DataFrame) is table_html:
            formatter.pop(pd.DataFrame)
