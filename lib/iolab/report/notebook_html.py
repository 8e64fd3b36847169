"""An executed notebook as one offline HTML file, with nbconvert's lab template minus what it
loads from a CDN (require.js, MathJax, mermaid, the widget manager): ``export``. For the
write-up (``iolab.report.publish``), ``static_copy`` first drops what a static page cannot
show or shows elsewhere, and ``html_cell`` adds the write-up's own parts as cells.

    page = export(static_copy(nb, pointer), executed, no_input=True)
"""

from __future__ import annotations

import copy
from pathlib import Path

from ..core.readable import readable_tables
from ..record.results import MIME as RESULTS_MIME
from .offline import offline
from .templating import render

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TEMPLATES = Path(__file__).resolve().parent / "templates"  # nbconvert template folders
TEMPLATE_NAME = "iolab_writeup"  # templates/iolab_writeup: the lab template, offline, the write-up's style
NOT_LOADED = """<p class="iolab-writeup note">{{ disabled | length }} resource(s) the notebook names on the \
network were not loaded (this page is offline): {{ disabled | join(", ") }}</p>"""


def static_copy(nb, pointer: str = ""):
    """A copy of ``nb`` for a static page: iolab's result outputs dropped (the results
    table shows them; ``pointer``, HTML, says so where the first of them was), widget views
    dropped for their static fallback (none if all they have is their text repr), pandas
    tables made readable, code cells that show nothing left out."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            outputs = []
            for out in cell.get("outputs", []):
                data = out.get("data")
                if data is not None:
                    if RESULTS_MIME in data:
                        if pointer:
                            outputs.append(html_output(pointer))
                            pointer = ""
                        continue
                    # a widget's text/plain is its repr ("HBox(children=...)"): nothing to read
                    if data.pop(WIDGET_VIEW, None) is not None and set(data) <= {"text/plain"}:
                        continue
                    if "dataframe" in data.get("text/html", ""):
                        data["text/html"] = readable_tables(data["text/html"])
                outputs.append(out)
            cell.outputs = outputs
            if not outputs:
                continue
        cells.append(cell)
    nb.cells = cells
    return nb


def html_output(body: str):
    """A display output showing ``body`` (HTML) and nothing as text."""
    from nbformat.v4 import new_output  # nbformat takes a second to import: only when exporting

    return new_output("display_data", data={"text/html": body, "text/plain": ""})


def html_cell(body: str):
    """A code cell (tagged ``iolab-writeup``) whose one output is ``body``, HTML."""
    from nbformat.v4 import new_code_cell

    return new_code_cell("", outputs=[html_output(body)], metadata={"tags": ["iolab-writeup"]})


def export(nb, executed: Path, no_input: bool) -> str:
    """HTML of ``nb`` with the offline lab template; images a markdown cell names beside
    the source notebook are embedded. What would still fetch from the network is
    disabled and listed at the end of the page."""
    from nbconvert import HTMLExporter  # nbconvert takes a second to import: only when exporting

    source = Path(nb.metadata.get("papermill", {}).get("input_path") or executed)
    exporter = HTMLExporter(
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=no_input,
        exclude_input_prompt=no_input,
        exclude_output_prompt=no_input,
        embed_images=True,
    )
    resources = {"metadata": {"name": executed.stem, "path": str(source.parent)}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    body, disabled = offline(body)
    if disabled:
        note = render(NOT_LOADED, disabled=disabled)
        head, sep, tail = body.rpartition("</main>")
        body = head + note + sep + tail if sep else body + note
    return body
