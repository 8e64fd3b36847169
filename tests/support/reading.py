"""How a notebook that ran in JupyterLab reads, screen by screen (issues P19, P25, P42): outputs
and tables that fit the notebook at 1280 px, figures drawn at their size, tables that read like
a write-up, no progress bar left unfinished."""

from __future__ import annotations

import json
import re

from support.jupyterlab import PAINTED, Session

_WIDE = """() => {
    const nb = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-viewport, .jp-NotebookPanel .jp-Notebook');
    const limit = nb.getBoundingClientRect().right + 1;
    return Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output'))
        .filter(o => !o.closest('.iolab-table') && (o.scrollWidth > o.clientWidth + 1
                     || o.getBoundingClientRect().right > limit))
        .map(o => o.innerText.slice(0, 80));
}"""
_CUT = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .iolab-table'))
    .filter(b => b.clientWidth && b.scrollWidth > b.clientWidth + 1)
    .map(b => `${b.scrollWidth} px in ${b.clientWidth}: `
              + (b.querySelector('thead') || b).textContent.replace(/\\s+/g, ' ').trim().slice(0, 90))"""
_SHRUNK = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output img'))
    .filter(i => i.naturalWidth && i.checkVisibility() && i.getBoundingClientRect().width < 0.97 * i.naturalWidth)
    .map(i => `${i.naturalWidth} px drawn at ${Math.round(i.getBoundingClientRect().width)} (cell: `
              + `${(i.closest('.jp-Cell').querySelector('.jp-InputArea') || {innerText: ''}).innerText.slice(0, 60)})`)"""
_TABLES = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output table')).map(t => {
    const cells = r => Array.from(r.cells).flatMap(c => Array(c.colSpan || 1).fill(c.innerText.trim()));
    const input = t.closest('.jp-Cell').querySelector('.jp-InputArea-editor');
    return JSON.stringify({cell: input ? input.innerText.trim().slice(0, 70) : '',
                           head: Array.from(t.querySelectorAll('thead tr')).map(cells),
                           rows: Array.from(t.querySelectorAll('tbody tr')).map(cells)});
})"""
STALE_BARS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output'))
    .filter(o => /\\d+%\\|/.test(o.innerText)).length"""  # tqdm's meter ("40%|████  | 2/5"): a finished bar is one "done" line
NEGATIVE_INTERVAL = re.compile(r"\[\s*[-−]\d[\d,.]*\s*[,;]")  # "[-59,086; 452,039]"
# What a table must never show a reader (issue 42): raw column names (these, and any
# snake_case name), Python's words for values, and numbers a quantity cannot take.
RAW_NAMES = {
    "iops", "qd", "bs", "n", "separated", "shown", "effect_pct", "change_pct", "low_iops", "f_stat", "p_value",
    "ratio_pct", "low_pct", "high_pct", "roof_x_n", "efficiency_low_pct", "iops_mean", "iops_ci_low",
    "mean_lat_us_ci_low", "iops_median", "littles_ok", "p99_under_target", "gain_pct", "cpu_busy_pct",
}  # fmt: skip
PROPER_NAMES = {"io_uring"}  # names with an underscore of their own: a header may be a pivoted value
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
RAW_VALUES = re.compile(r"^(True|False|NaN|nan|None|<NA>|NaT|-?inf|\{.*:.*\})$")
NON_NEGATIVE = re.compile(r"IO/s|IOPS|µs|\bms\b|[KMG]iB|B/s|cycles|latency|\bp\d\d|\bruns\b|reads|\bios\b|busy", re.I)
A_CHANGE = re.compile(r"change|gain|effect|differ|\bvs\b|Δ|ratio|slope|trend|excursion|ahead|behind", re.I)
A_SHARE = re.compile(r"busy|share|utili[sz]", re.I)
NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?")


def look_through(s: Session, check: str) -> list:
    """``check`` (a script returning a list) evaluated at each screenful from the notebook's
    top to its bottom (JupyterLab lays out only the cells near the view); what it found."""
    found: list = []
    scroller = (
        "(document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer') || "
        "document.querySelector('.jp-NotebookPanel .jp-Notebook'))"
    )
    s.page.evaluate(f"() => {{ {scroller}.scrollTop = 0; }}")
    for _ in range(80):
        s.page.evaluate(PAINTED)
        found += [f for f in s.page.evaluate(check) if f not in found]
        if s.page.evaluate(
            f"() => {{ const n = {scroller}; const at = n.scrollTop; n.scrollTop += 600; return n.scrollTop === at; }}"
        ):
            return found
    return found


def read_through(s: Session) -> None:
    """The checks of issues P19 and P25 on a notebook that ran, screen by screen: no output
    wider than the notebook, no table wider than it (the kit's scroll box would cut it at
    the edge), no figure drawn smaller than it was made (its 8-pt legends stay at 10 px or
    more), tables that read like a write-up (``unreadable``), no unfinished progress bar
    left behind. What it finds goes to ``s.unread`` (and stdout) for ``assert_reads_well``
    at the test's end, so that the notebook's own checks still run."""
    checks = (
        f"() => [({_WIDE})().map(w => 'wide: ' + w), ({_CUT})().map(w => 'cut: ' + w), "
        f"({_SHRUNK})().map(w => 'shrunk: ' + w), "
        f"({_TABLES})().map(t => 'table: ' + t), ['stale bars: ' + ({STALE_BARS})()]].flat()"
    )
    found = look_through(s, checks)
    figures = s.page.locator(".jp-NotebookPanel .jp-OutputArea-output img:visible")  # not the explorer's hidden copy
    for i in range(min(figures.count(), 3)):  # what a reader sees of the first figures
        s.shot(f"figure{i}", figures.nth(i))
    said = {
        "wide: ": "an output wider than the notebook, outside a scroll box: ",
        "cut: ": "a table wider than the notebook at 1280 px (its right part only by scrolling): ",
        "shrunk: ": "a figure drawn smaller than made (legends under 10 px): ",
        "stale bars: ": "unfinished progress bars left on screen after the run: ",
    }
    problems = [said[k] + f.removeprefix(k) for f in found for k in said if f.startswith(k) and f != "stale bars: 0"]
    tables = [json.loads(t.removeprefix("table: ")) for t in found if t.startswith("table: ")]
    problems += [f"a table of cell {t['cell']!r}: {what}" for t in tables for what in unreadable(t)]
    s.unread = problems
    print("\n".join(["", f"{s.prefix} does not read well {s.where()}:", *problems]) if problems else "")


def assert_reads_well(s: Session, name: str) -> None:
    """No problem ``read_through`` found and no console error since the page opened."""
    assert not s.unread + s.errors, f"{name} does not read well {s.where()}:\n" + "\n".join(s.unread + s.errors)


def unreadable(table: dict) -> list[str]:
    """What is wrong with one table (``_TABLES``): an index column that only counts rows,
    raw column names, raw values, an interval below 0, a non-negative quantity below 0, a
    share above 100 %."""
    head = [" ".join(filter(None, dict.fromkeys(col))) for col in zip(*table["head"])] if table["head"] else []
    names = dict.fromkeys(h for row in table["head"] for h in row if h not in PROPER_NAMES)  # the index's name too
    wrong = [f"raw column name {h!r}" for h in names if h in RAW_NAMES or SNAKE_CASE.match(h)]
    rows = table["rows"]
    if len(rows) > 1 and all(r and r[0] == str(i) for i, r in enumerate(rows)) and not any(h[0] for h in table["head"]):
        wrong.append("an index column that only counts its rows (0, 1, 2 ...)")
    values = [c for r in table["rows"] for c in r if RAW_VALUES.match(c)]
    wrong += [f"raw values {sorted(set(values))}"] if values else []
    for i, h in enumerate(head):
        column = [r[i] for r in table["rows"] if len(r) == len(head)]
        numbers = [(c, float(n.replace("−", "-").replace(",", ""))) for c in column for n in NUMBER.findall(c)]
        if not A_CHANGE.search(h):  # a change may go below 0, the quantity changed not (a results row names it)
            changes = [c for r in table["rows"] if len(r) == len(head) and A_CHANGE.search(r[0]) for c in [r[i]]]
            wrong += [
                f"{h!r}: an interval below 0: {c!r}" for c in column if NEGATIVE_INTERVAL.search(c) and c not in changes
            ][:3]
        if NON_NEGATIVE.search(h) and not A_CHANGE.search(h):
            wrong += [f"{h!r} below 0: {c!r}" for c, x in numbers if x < 0][:3]
        if A_SHARE.search(h) and not A_CHANGE.search(h):
            wrong += [f"{h!r} above 100 %: {c!r}" for c, x in numbers if x > 100][:3]
    return wrong


def html_tables(text: str) -> list[dict]:
    """The tables of a page (a write-up's HTML) as ``_TABLES`` gives a notebook's: each
    {"cell": its caption or "", "head": header rows, "rows": body rows}, cell texts stripped,
    a cell spanning n columns repeated n times; for ``unreadable``."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found, self.table, self.part, self.row, self.cell = [], None, "", None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.table, self.part = {"cell": "", "head": [], "rows": []}, "rows"
            elif self.table is not None and tag in ("thead", "tbody"):
                self.part = "head" if tag == "thead" else "rows"
            elif self.table is not None and tag == "tr":
                self.row = []
            elif self.row is not None and tag in ("td", "th"):
                self.cell, self.span = [], int(dict(attrs).get("colspan") or 1)

        def handle_endtag(self, tag):
            if tag in ("td", "th") and self.cell is not None:
                self.row += [" ".join("".join(self.cell).split())] * self.span
                self.cell = None
            elif tag == "tr" and self.row is not None:
                self.table[self.part].append(self.row)
                self.row = None
            elif tag == "table" and self.table is not None:
                self.found.append(self.table)
                self.table = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)

    parser = Tables()
    parser.feed(text)
    return parser.found
