"""Numbers and tables as people read them: the same in a write-up and in a live notebook.

``readable_number`` rounds to what a measurement supports and separates thousands;
``readable_bytes`` gives sizes and rates in binary units (275873792 B -> 263 MiB),
``readable_seconds`` a wall time (210 s -> 4 min);
``readable_tables`` applies both to pandas' HTML tables (``readable_cell``: booleans as
yes/no, NaN as "–", 32.0 as 32) and labels every column with words and its unit
(``iolab.core.columns.label``: registered names, and summaries such as ``iops_ci_low``).
``publish`` runs it over a notebook's tables; in a kernel, ``live_tables`` (``%load_ext iolab`` calls it) shows every DataFrame through it,
inside a box that scrolls sideways, so a wide table is never cut at the notebook's edge.
"""

from __future__ import annotations

import ast
import html as markup
import re
import textwrap

from .columns import label, labelled, unit

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


def readable_seconds(seconds: float) -> str:
    """A wall time as people say it, an estimate or a wait: ``45 s`` below two minutes,
    ``12 min`` below two hours, ``3.4 h`` below two days, then ``2.5 days``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f}".removesuffix(".0") + " h"
    return f"{seconds / 86400:,.1f}".removesuffix(".0") + " days"


def readable_value(v) -> str:
    """A table cell's value for reading (``readable_cell`` of its text): numbers by
    ``readable_number`` (8.0 -> 8), "–" for none or NaN, yes/no for a boolean."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return readable_cell(str(v)) if isinstance(v, (int, float, dict)) else str(v)


_NONE = {"NaN", "nan", "None", "<NA>", "NaT"}
_YES_NO = {"True": "yes", "False": "no"}


def interval_text(low_text: str, high_text: str) -> str:
    """An interval as the write-ups print it: ``[1.02, 1.07]``; ``[760,980; 767,356]`` when a
    bound has a thousands separator (a comma between them would read as four numbers)."""
    between = "; " if "," in low_text + high_text else ", "
    return f"[{low_text}{between}{high_text}]"


def readable_cell(text: str, whole: bool = True) -> str:
    """A table cell's text as people read it: a number by ``readable_number``, a whole one
    without decimals (32.0 and 8.00 -> 32 and 8; not with ``whole=False``: a column that
    also holds 2.60 shows 3.00); True/False -> yes/no; NaN, None, <NA> -> "–"; a dict
    {'ok': 72} -> "ok 72". Other text unchanged."""
    s = text.strip()
    if s in _NONE:
        return "–"
    if s in _YES_NO:
        return _YES_NO[s]
    if s.startswith("{") and s.endswith("}"):
        try:
            d = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            return text
        return ", ".join(f"{k} {readable_value(v)}" for k, v in d.items()) if isinstance(d, dict) else text
    if whole and _fraction(s) is False:
        return readable_number(str(int(float(s))))
    return readable_number(text)


def _fraction(text: str) -> bool | None:
    """Whether a number written with a decimal point has a fraction (2.60: True; 32.0:
    False); None for an integer as written, or text that is not a number."""
    s = text.strip()
    if not _NUMBER.fullmatch(s) or s.lstrip("+-").isdigit():
        return None
    value = float(s)
    return not (value.is_integer() and abs(value) < 1e15)


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


_NAME = re.compile(r"[a-z][a-z0-9_]*")  # a column's name, as the kit's frames spell them
READABLE = 'data-iolab="readable"'  # marks a table made readable (readable_tables is idempotent)
_STYLE = (  # a table fits the notebook where it can (it scrolls in its box where it cannot): a
    # short cell stays on one line ("263 MiB/s", "2026-11-27 04:44"), longer text wraps at spaces
    # only and never narrower than a few words ("128,341 [76,725, 179,957]": 2 lines, not 5)
    "<style>table[data-iolab] td, table[data-iolab] th {word-break: normal; overflow-wrap: normal; "
    "padding: 0.3em 0.35em} "
    "table[data-iolab] .iolab-short {white-space: nowrap} table[data-iolab] .iolab-text {min-width: 8em} "
    "table[data-iolab] .iolab-prose {min-width: 10em}</style>"
)
SHORT, PROSE = 24, 60  # characters: a cell up to SHORT long stays on one line; from PROSE, 10em wide at least


def readable_tables(page: str) -> str:
    """Every pandas table (``class="dataframe"``) in ``page`` with its cells made readable
    (``readable_cell``: numbers by ``readable_number``, booleans as yes/no, NaN as "–";
    ``readable_bytes`` in columns in B or B/s, whose header then drops the unit the cells
    carry; untouched in id-like columns such as ``run_id`` or ``year``) and every column's
    name as its label with unit (``iolab.core.columns.label``: ``iops`` -> "IOPS (IO/s)",
    ``iops_ci_low`` -> "IOPS 95 % CI low (IO/s)", the name kept as a tooltip; a setting's
    value such as io_uring left as it is). Cells stay on one line (a wide table scrolls in
    its box), headers and long text wrap at spaces. Idempotent: a table already made
    readable is left as it is."""
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
        for _tag, attrs, text in reversed(_CELL.findall(row.group(2))):
            span = re.search(r"colspan=\"(\d+)\"", attrs)
            titled = re.search(r'title="([^"]*)"', attrs)  # a header made readable before: its name
            for k in range(int(span.group(1)) if span else 1):
                names.setdefault(at + k, set()).add(markup.unescape(titled.group(1) if titled else text).strip())
            at += int(span.group(1)) if span else 1
    verbatim = {at for at, texts in names.items() if any(_VERBATIM_COLUMN.search(t) for t in texts)}
    in_bytes = {at: BYTE_UNITS[unit(t)] for at, texts in names.items() for t in texts if unit(t) in BYTE_UNITS}

    def header(m: re.Match) -> str:
        tag, attrs, text = m.groups()
        name = markup.unescape(text).strip()
        if tag != "th" or "title=" in attrs or not _NAME.fullmatch(name) or not labelled(name):
            return m.group(0)
        words = label(name).removesuffix(f" ({unit(name)})") if unit(name) in BYTE_UNITS else label(name)
        return f'<th{attrs} title="{markup.escape(name)}">{markup.escape(words)}</th>'

    def cell(tag: str, attrs: str, text: str, at: int) -> str:
        if tag != "td" or at in verbatim:
            return f"<{tag}{attrs}{_width(markup.unescape(text), attrs)}>{text}</{tag}>"
        if at in in_bytes and readable_cell(text) != "–":
            shown = readable_bytes(text, in_bytes[at])
        else:
            shown = readable_cell(markup.unescape(text), whole=at not in fractional)
        return f"<td{attrs}{_width(shown, attrs)}>{_breakable(markup.escape(shown, quote=False))}</td>"

    fractional = {  # columns with a number such as 2.60: their whole numbers keep decimals too
        len(cells) - 1 - i
        for r in _ROW.finditer(body)
        for cells in [_CELL.findall(r.group(2))]
        for i, (tag, _, text) in enumerate(cells)
        if tag == "td" and _fraction(markup.unescape(text))
    }

    def row(m: re.Match) -> str:
        cells = list(_CELL.finditer(m.group(2)))
        out, end = [], 0
        for i, c in enumerate(cells):
            out.append(m.group(2)[end : c.start()])
            end = c.end()
            out.append(cell(*c.groups(), len(cells) - 1 - i))
        return m.group(1) + "".join(out) + m.group(2)[end:] + m.group(3)

    if READABLE not in re.match(r"<table\b[^>]*>", table).group(0):
        head, body = (
            (head.replace("<table", f"<table {READABLE}", 1), body)
            if sep
            else (head, body.replace("<table", f"<table {READABLE}", 1))
        )
        head = _STYLE + head if sep else head
        body = body if sep else _STYLE + body
    return _CELL.sub(header, head) + sep + _ROW.sub(row, body)


_LONG_WORD = re.compile(r"[^\s<>]{30,}")  # a kernel stack "a;b;c", a path: one word to a browser


def _breakable(escaped: str) -> str:
    """``escaped`` with a place to break (``<wbr>``) after each ";", "/", "." and "->" of a word
    of 30 characters or more (a kernel stack, a path), which would otherwise set its column's
    width: the text is unchanged."""
    return _LONG_WORD.sub(lambda m: re.sub(r"(?:(?<=\w[;/.])|(?<=-&gt;))(?!$)", "<wbr>", m.group(0)), escaped)


def _width(text: str, attrs: str) -> str:
    """The class that keeps a cell of ``text`` readable (``_STYLE``): one line for a short one
    that could break (at a space or a hyphen), a least width for longer text; "" for a single
    word or number (it never breaks) and for a cell that has a class already."""
    if "class=" in attrs or not re.search(r"\s|\w-\w", text.strip()):
        return ""
    n = len(text.strip())
    return f' class="iolab-{"short" if n <= SHORT else "text" if n < PROSE else "prose"}"'


# ---------------------------------------------------------------- in a kernel
SCROLL_BOX = "iolab-table"


def counting_index(frame) -> bool:
    """Whether ``frame``'s index only numbers its rows: unnamed and whole numbers (0, 1, 2 ...,
    or what is left of them after a filter or a sort: 9, 10, 11), a column that says nothing,
    which a table as the write-ups read leaves out. A named index (``qd``) says something."""
    import pandas as pd

    index = frame.index
    return not isinstance(index, pd.MultiIndex) and index.name is None and pd.api.types.is_integer_dtype(index.dtype)


def table_html(frame) -> str | None:
    """A DataFrame as a notebook shows it: pandas' own HTML (its display options: rows and
    columns elided in the middle past ``display.max_rows`` / ``max_columns``) made
    readable, in a box that scrolls sideways when the table is wider than the notebook. An
    index that only counts rows (``counting_index``) is left out; one that names them stays."""
    if counting_index(frame):
        import pandas as pd

        get = pd.get_option
        most = get("display.max_rows")
        cut = most is not None and len(frame) > most  # pandas then shows min_rows of them, as _repr_html_ does
        html = frame.to_html(
            index=False,
            notebook=True,
            max_rows=(get("display.min_rows") or most) if cut else most,
            max_cols=get("display.max_columns"),
            show_dimensions=get("display.show_dimensions") is True
            or (get("display.show_dimensions") == "truncate" and cut),
        )
    else:
        html = frame._repr_html_()
    if html is None:
        return None
    return f'<div class="{SCROLL_BOX}" style="overflow-x: auto; max-width: 100%">{readable_tables(html)}</div>'


# JupyterLab breaks a printed line anywhere (word-break: break-all: "5|00ms"); the write-ups'
# template (report/templates/iolab_writeup) sets the same rule, so a line breaks at spaces
OUTPUT_STYLE = "<style>.jp-OutputArea-output pre { word-break: normal; overflow-wrap: anywhere; }</style>"
_BEFORE: dict = {}  # pandas' float format before live_tables, for plain_tables


def live_tables(shell=None) -> None:
    """In a notebook (``%load_ext iolab`` calls it): DataFrames show as the write-ups show
    them (``table_html``: 12748.502994 -> 12,749, io_bytes 275873792 -> 263 MiB,
    ``clat_p99_us`` -> "clat p99 (µs)", scrolling sideways when wide), and pandas' text form
    rounds floats the same way. In a kernel, printed lines break at spaces (``OUTPUT_STYLE``).
    ``plain_tables`` puts pandas and IPython back."""
    import pandas as pd

    _BEFORE.setdefault("float_format", pd.get_option("display.float_format"))
    pd.set_option("display.float_format", lambda v: readable_number(repr(float(v))))
    if shell is not None and hasattr(shell, "display_formatter"):
        before = shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)
        if before is not table_html:  # a user's own formatter: put back on unload, never dropped
            _BEFORE["html"] = before
    if getattr(shell, "kernel", None) is not None:  # JupyterLab, not a terminal: its outputs' style
        from IPython.display import display

        display({"text/html": OUTPUT_STYLE}, raw=True)  # no text/plain: nothing shows but the rule


def plain_tables(shell=None) -> None:
    """Undo ``live_tables`` (``%unload_ext iolab``): pandas' float format as it was, and
    DataFrames shown by their own HTML again, or by the user's formatter when they had one."""
    import pandas as pd

    if "float_format" in _BEFORE:
        pd.set_option("display.float_format", _BEFORE.pop("float_format"))
    if shell is not None and hasattr(shell, "display_formatter"):
        formatter = shell.display_formatter.formatters["text/html"]
        if formatter.type_printers.get(pd.DataFrame) is table_html:
            before = _BEFORE.pop("html", None)
            formatter.pop(pd.DataFrame)
            if before is not None:  # the user's own, as it was before %load_ext iolab
                formatter.for_type(pd.DataFrame, before)
