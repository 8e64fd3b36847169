"""The top of a write-up (``iolab.report.publish``): when and how the notebook ran, the
warnings its run folders call for (an emulated device, failed plausibility checks), the
parameters it ran with (given or default, with the parameters cell's comment) and the
results it recorded (``iolab.record.results``), the per-setting ones folded away.

    html = header(nb, parameters_cell(executed), given, recorded)
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.readable import interval_text, readable_value
from ..core.version import __version__
from ..read import checks
from ..record import provenance
from .templating import render

HEADER = """{% from "table.html" import table %}<div class="iolab-writeup">
<p class="note">{{ ran | join("; ") }}.</p>
{% if emulated %}<p class="failed iolab-emulated">⚠ Made in iolab's NVMe lab ({{ emulated }}). Its figures show \
the kit's code paths on Linux's real nvme driver; as measurements of a device they mean nothing.</p>
{% endif %}{% if flags %}<details class="iolab-flags"><summary class="failed">⚠ {{ flags_summary }}</summary>\
<p class="note">{{ flags }}</p></details>
{% endif %}<h2>Parameters</h2>
{% if parameters %}{{ table(("parameter", "value", "given or default", "meaning"), parameters) }}
{%- else %}<p>This notebook has no parameters cell and was given no parameters.</p>{% endif %}
{% if key or detail %}<h2 id="iolab-results">Results</h2>
{% if key %}{{ table(RESULT_COLUMNS, key, numeric=(1, 3)) }}
{% endif %}{% if detail %}<details><summary>{{ detail | length }} more results, one per setting (what iolab \
seeds compares with published figures)</summary>{{ table(RESULT_COLUMNS, detail, numeric=(1, 3)) }}</details>
{% endif %}{% endif %}</div>"""
RESULT_COLUMNS = ("result", "value", "unit", "interval", "source", "note")


def parameters_cell(executed: Path) -> dict[str, dict]:
    """The notebook's parameters cell: name -> {default (as written), help (its comment)},
    by papermill's inspection; empty when there is none."""
    import papermill as pm  # slow to import: only when publishing

    try:
        return {name: dict(spec) for name, spec in pm.inspect_notebook(str(executed)).items()}
    except Exception:  # papermill's inspection of an odd parameters cell: the given values still show
        return {}


def header(nb, defaults: Mapping[str, Mapping], given: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    """What ran, with which parameters (``defaults``: the parameters cell), and what it
    recorded (``results`` and ``run_folders``), as HTML."""
    folders = recorded.get("run_folders") or []
    flagged = checks.folder_flags(folders)
    results = recorded.get("results") or []
    return render(
        HEADER,
        ran=ran(nb),
        emulated=provenance.emulated(folders),
        flags=checks.banner_text(flagged, len(folders)) if flagged else "",
        flags_summary=checks.banner_summary(flagged, len(folders)) if flagged else "",
        parameters=parameter_rows(defaults, given),
        key=[result_row(r) for r in results if not r.get("detail")],
        # per-setting figures (results.record_many): kept, folded under the key ones
        detail=[result_row(r) for r in results if r.get("detail")],
        RESULT_COLUMNS=RESULT_COLUMNS,
    )


def ran(nb) -> list[str]:
    """When and with what the notebook ran, and when this page was written, as phrases."""
    pm = nb.metadata.get("papermill", {})
    phrases = []
    if pm.get("end_time"):
        phrases.append(
            f"Ran {when(pm.get('start_time'))} – {when(pm['end_time'])} UTC"
            + (f" ({pm['duration']:.0f} s)" if isinstance(pm.get("duration"), (int, float)) else "")
            + f" with papermill {pm.get('version', '')}".rstrip()
        )
    kernel_py = nb.metadata.get("language_info", {}).get("version")
    if kernel_py:
        phrases.append(f"Python {kernel_py} kernel")
    phrases.append(
        f"written up {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC by iolab {__version__} "
        "(code cells left out; provenance at the end)"
    )
    return phrases


def parameter_rows(defaults: Mapping[str, Mapping], given: Mapping[str, Any]) -> list[tuple]:
    """(parameter, value, given or default, meaning): the parameters cell's in its order,
    then those given that it does not have."""
    rows = []
    for name, spec in defaults.items():
        if name in given:
            rows.append((name, in_words(literal(given[name])), "given", spec.get("help", "")))
        else:
            rows.append((name, in_words(spec.get("default", "")), "default", spec.get("help", "")))
    rows += [
        (name, in_words(literal(value)), "given", "not a parameter of this notebook")
        for name, value in given.items()
        if name not in defaults
    ]
    return rows


WORDS = {"True": "yes", "False": "no", "None": "not set"}


def in_words(text: str) -> str:
    """A parameter's value as written (``literal``, or the parameters cell's default) for a
    reader: True/False/None as yes/no/not set, a mapping as "key value, ..." (a list of them
    joined by "; "); anything else as written. The provenance's re-run command keeps the
    exact values."""
    text = str(text)
    if text in WORDS:
        return WORDS[text]
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            value = json.loads(text)
        except ValueError:
            return text

    def said(v: Any) -> str:
        if isinstance(v, dict):
            return ", ".join(f"{k} {said(x)}" for k, x in v.items())
        return WORDS.get(repr(v), str(v)) if v is None or isinstance(v, bool) else str(v)

    if isinstance(value, dict):
        return said(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return "; ".join(said(v) for v in value)
    return text


def literal(value: Any) -> str:
    """A parameter's value as the parameters cell would spell it."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def result_row(r: Mapping[str, Any]) -> tuple:
    """A recorded result as a row of ``RESULT_COLUMNS``."""
    has_interval = r.get("low") is not None or r.get("high") is not None
    return (
        r.get("name", ""),
        shown(r.get("value")),
        r.get("unit") or "",
        interval_text(shown(r.get("low")), shown(r.get("high"))) if has_interval else "",
        r.get("source") or "",
        r.get("note") or "",
    )


def shown(value: Any) -> str:
    """A recorded result's value for its table: numbers readable, None as a dash."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a knee at QD 4.0 is QD 4
    return readable_value(value)


def when(stamp: str | None) -> str:
    """papermill's ISO time (``2026-11-22T15:54:57.864868+00:00``) to the minute."""
    return str(stamp or "?")[:16].replace("T", " ")
