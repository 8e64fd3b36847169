"""The evidence on a seed's page: the figures an experiment's executed notebook drew (the
ladder's gains with intervals, the knee curve, flame graphs, the roofline, ...), each under
the heading of the notebook section that drew it, for ``iolab seeds``' pages.

    shown, left = figures(record)      # [(caption, "data:image/png;base64,...")], how many more

Read from the executed notebook the batch record names (its ``output``); nothing is drawn
again. A page carries at most ``MOST`` figures per experiment; the rest are counted, and
the executed notebook the page links holds them all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MOST = 6  # figures per experiment on a seed's page (the page stays a page)


def _heading(source: str) -> str:
    """A markdown cell's first heading without the markup ("" when it has none)."""
    head = next((ln.strip() for ln in source.splitlines() if ln.strip().startswith("#")), "")
    return re.sub(r"[#*`_]", "", head).strip()


def figures(record: Mapping[str, Any] | None, most: int = MOST) -> tuple[list[tuple[str, str]], int]:
    """(caption, data URI) of each PNG the executed notebook holds, in order, at most
    ``most``; and how many were left out. ([], 0) without an executed notebook."""
    path = (record or {}).get("output")
    try:
        cells = json.loads(Path(path).read_text()).get("cells", []) if path else []
    except (OSError, ValueError):
        return [], 0
    found, heading = [], ""
    for cell in cells:
        source = "".join(cell.get("source") or [])
        if cell.get("cell_type") == "markdown":
            heading = _heading(source) or heading
            continue
        for output in cell.get("outputs") or []:
            png = (output.get("data") or {}).get("image/png")
            if png:
                found.append((heading, "data:image/png;base64," + "".join(png).replace("\n", "")))
    return found[:most], max(0, len(found) - most)


__all__ = ["figures", "MOST"]
