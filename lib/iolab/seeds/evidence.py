"""The evidence on a seed's page: what an experiment's executed notebook showed under the
sections its argument rests on (the ladder's gains with intervals, the knee curve, flame
graphs and thread states, the roofline, Dunnett's verdict, ...), for ``iolab seeds``' pages.

    shown = sections(record, wanted)   # .sections [Section(heading, readings, tables, figures)], .left, .unmatched

Read from the executed notebook the batch record names (its ``output``); nothing is drawn or
computed again. ``wanted``: the headings the seed's manifest names for the experiment
(``evidence:``; a heading matches by its start, in any case); none named: every section but
the set-up check, the explorer, the recorded results and the commands, which the page shows
its own way. A reading is what a cell printed (a verdict, a knee, an interval), a table one
of iolab's readable tables (``iolab.core.display``: labelled columns, no index), a figure a
PNG. A page carries at most ``MOST`` figures and ``MOST_TABLES`` tables per experiment; the
rest are counted, and the executed notebook the page links holds them all; a heading the
manifest names that the notebook does not have is said (``unmatched``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MOST = 6  # figures per experiment on a seed's page (the page stays a page)
MOST_TABLES = 6  # tables per experiment
READING_LINES = 6  # lines of one printed reading
SHOWN_ELSEWHERE = ("is this machine set up", "explore", "recorded results", "the commands that ran", "the machine")
_TABLE = re.compile(r"<table data-iolab=.*?</table>", re.S)
_UNSAFE = re.compile(r"<script|<iframe|\son\w+\s*=|javascript:", re.I)


@dataclass
class Section:
    """One section of an executed notebook: its heading and what its cells showed."""

    heading: str
    readings: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # HTML of iolab's readable tables
    figures: list[str] = field(default_factory=list)  # data: URIs of PNGs


def _heading(source: str) -> str:
    """A markdown cell's first heading without the markup ("" when it has none)."""
    head = next((ln.strip() for ln in source.splitlines() if ln.strip().startswith("#")), "")
    return re.sub(r"[#*`_]", "", head).strip()


def _reading(text: str) -> str:
    """A printed reading in at most ``READING_LINES`` lines, its wrapped lines joined ("" for
    command listings)."""
    lines: list[str] = []
    for line in text.rstrip().splitlines():
        if line.startswith(("  ", "\t")) and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line.strip())
    if not lines or lines[0].startswith("#"):
        return ""
    more = len(lines) - READING_LINES
    return "\n".join(lines[:READING_LINES]) + (f"\n… {more} more line(s) in the executed notebook" if more > 0 else "")


def cells(output: str | os.PathLike | None) -> list[dict[str, Any]]:
    """The cells of the executed notebook ``output`` (its JSON, read once while the file is
    unchanged); [] without one, or when it cannot be read."""
    try:
        return list(_cells(str(output), os.stat(output).st_mtime_ns)) if output else []
    except (OSError, ValueError):
        return []


@functools.lru_cache(maxsize=16)
def _cells(path: str, _mtime_ns: int) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(Path(path).read_text()).get("cells", []))


def printed(output: str | os.PathLike | None, start: str) -> list[str]:
    """The lines the executed notebook ``output`` printed that begin with ``start`` (what a
    notebook says it did not record, and why: "not recorded: ...")."""
    text = "".join(
        "".join(o.get("text") or "") for c in cells(output) for o in c.get("outputs") or [] if o.get("name") == "stdout"
    )
    return [line.strip() for line in text.splitlines() if line.startswith(start)]


def _picked(heading: str, wanted: Sequence[str] | None) -> bool:
    low = heading.lower()
    if wanted:
        return any(low.startswith(w.lower()) for w in wanted)
    return bool(heading) and not low.startswith(SHOWN_ELSEWHERE)


@dataclass
class Evidence:
    """What a page carries of one executed notebook: its ``sections``, how many tables and
    figures were ``left`` out, and the headings asked for that it does not have (``unmatched``)."""

    sections: list[Section] = field(default_factory=list)
    left: int = 0
    unmatched: list[str] = field(default_factory=list)


def sections(record: Mapping[str, Any] | None, wanted: Sequence[str] | None = None, most: int = MOST) -> Evidence:
    """The sections of the executed notebook ``record`` names that ``wanted`` picks, in
    order, each with its readings, tables and figures (module docstring). Empty without an
    executed notebook."""
    found: list[Section] = []
    headings: list[str] = []
    current: Section | None = None
    left, figures, tables = 0, 0, 0
    for cell in cells((record or {}).get("output")):
        source = "".join(cell.get("source") or [])
        if cell.get("cell_type") == "markdown":
            heading = _heading(source)
            if heading:
                headings.append(heading.lower())
                current = Section(heading) if _picked(heading, wanted) else None
            continue
        for output in (cell.get("outputs") or []) if current is not None else []:
            data = output.get("data") or {}
            if output.get("name") == "stdout" and (said := _reading("".join(output.get("text") or ""))):
                current.readings.append(said)
            png = data.get("image/png")
            if png:
                figures += 1
                if figures <= most:
                    current.figures.append("data:image/png;base64," + "".join(png).replace("\n", ""))
                else:
                    left += 1
            for table in _TABLE.findall("".join(data.get("text/html") or "")):
                tables += 1
                if tables <= MOST_TABLES and not _UNSAFE.search(table):  # markup that runs: left out, counted
                    current.tables.append(table)
                else:
                    left += 1
        if current is not None and current not in found and (current.readings or current.tables or current.figures):
            found.append(current)
    unmatched = [w for w in wanted or () if not any(h.startswith(w.lower()) for h in headings)]
    return Evidence(found, left, unmatched)


__all__ = ["MOST", "MOST_TABLES", "Evidence", "Section", "cells", "printed", "sections"]
