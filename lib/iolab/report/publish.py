"""Notebooks headless: papermill execution, and the write-up of an executed notebook.

    execute("notebooks/01_queue_depth_knee.ipynb", "papermill_runs/01.ipynb", {"runtime_s": 1})
    publish("papermill_runs/01.ipynb")            # -> papermill_runs/01.html

Runs set IOLAB_HEADLESS=1 and TQDM_DISABLE=1 so progress bars stay quiet, and use the
``python3`` kernel of the running interpreter; the kernel's cwd is the notebook's folder,
as in JupyterLab.

The write-up is one HTML file that needs nothing else, offline too: no code cells; figures
inline (PNG); no script, style or font fetched from the network (nbconvert's lab template
without require.js, MathJax, mermaid and the widget manager it loads from a CDN; anything
else that would fetch is disabled and listed); pandas tables with thousands separators,
three significant digits and column names with units (``iolab.core.columns``); the parameters
it ran with and the results it recorded (``iolab.core.results``) at the top; a provenance
appendix (``iolab.report.provenance``): iolab's git commit, tool and package versions, the
machine, each run folder with a SHA-256 of its raw outputs, and the command that runs it
again.
"""

from __future__ import annotations

import contextlib
import html as markup
import logging
import os
import re
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import __version__
from ..read import checks
from . import provenance
from ..core.atomic import write_atomic
from ..core.readable import readable_number, readable_tables, readable_value
from ..core.errors import InputError, IolabError, printable
from ..core.results import MIME as RESULTS_MIME
from ..core.results import collect
from ..core.validate import input_file, notebook_file


def refuse_unknown_parameters(notebook: Path, parameters: Mapping[str, Any] | None, known: Mapping[str, Any]) -> None:
    """IolabError naming the parameters ``notebook``'s parameters cell does not have."""
    unknown = set(parameters or {}) - set(known)
    if unknown:
        raise IolabError(
            f"{notebook.name} has no parameter(s) {', '.join(sorted(unknown))}; it takes: {', '.join(known)}"
        )


def execute(
    notebook: str | os.PathLike,
    output: str | os.PathLike,
    parameters: Mapping[str, Any] | None = None,
    timeout_s: int = 1800,
) -> Path:
    """Run a notebook with papermill. Raises IolabError naming the failing cell; the
    executed notebook (with papermill's error banner) is written first.

    What the notebook recorded (``iolab.core.results``) and ``parameters`` go into the executed
    notebook's ``metadata["iolab"]`` and into ``<output stem>.results.json`` beside it
    (``NAME.failed.results.json`` beside a failed one)."""
    from contextlib import suppress

    import papermill as pm  # papermill and nbclient take a second to import: only when running one

    from ..core.results import keep_with

    notebook, output = Path(notebook).resolve(), Path(output).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    refuse_unknown_parameters(notebook, parameters, pm.inspect_notebook(str(notebook)))
    os.environ.setdefault("IOLAB_HEADLESS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    running = output.with_name(f".{output.stem}.{os.getpid()}.running{output.suffix}")
    log = output.with_name(f".{output.stem}.kernel.log")
    from nbclient.exceptions import DeadKernelError  # as papermill: slow, only when running one

    def keep_failed(kept: Path) -> Path:
        with suppress(OSError, ValueError, IolabError):  # the notebook's own error is the one to report
            keep_with(kept, parameters, kept.with_name(f"{kept.stem}.results.json"))
        return kept

    # papermill/nbclient log through logging's last-resort handler ("Kernel died while
    # waiting…"): what matters reaches the user as the one IolabError line below
    chatty = logging.getLogger("papermill")
    level = chatty.level
    chatty.setLevel(logging.CRITICAL)
    try:
        pm.execute_notebook(
            str(notebook),
            str(running),
            parameters=dict(parameters or {}),
            kernel_name="python3",
            progress_bar=False,
            cwd=str(notebook.parent),
            execution_timeout=timeout_s,
            kernel_manager_class=_kernel_logging_to(log),
            # nbclient's 60 s for a kernel to answer is short on a loaded 2-CPU machine
            start_timeout=180,
        )
    except pm.PapermillExecutionError as exc:
        kept = keep_failed(keep_partial(running, output, "failed"))
        raise IolabError(
            f"{notebook.name} failed in cell {exc.exec_count}: {exc.ename}: "
            f"{exc.evalue}. The executed notebook with the error is {kept} "
            f"(kernel log: {log})" + (f"; the last good one is still {output}" if output.exists() else "")
        ) from exc
    except DeadKernelError as exc:
        kept = keep_failed(keep_partial(running, output, "failed"))
        raise IolabError(
            f"{notebook.name}: its kernel died before the notebook finished; the partial "
            f"notebook is {kept}, the kernel's log {log}"
        ) from exc
    except BaseException:
        keep_partial(running, output, "partial")
        # the process is ending: asyncio would report nbclient's abandoned cell task at exit
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    finally:
        chatty.setLevel(level)
    keep_with(running, parameters, output.with_name(f"{output.stem}.results.json"))
    os.replace(running, output)
    return output


def _kernel_logging_to(log: Path):
    """A kernel manager whose kernel writes its own log (ZMQ warnings, its tracebacks when
    interrupted) to ``log`` instead of the terminal; what cells print stays in the notebook."""
    from jupyter_client.manager import AsyncKernelManager  # as papermill: slow, only when running one

    class KernelWithLog(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            with open(log, "ab") as sink:
                kw["stdout"] = kw["stderr"] = sink
                return await super()._async_launch_kernel(kernel_cmd, **kw)

        async def _async_shutdown_kernel(self, now: bool = False, restart: bool = False):
            # Stopped mid-cell (SIGTERM, Ctrl-C), the kernel gets a Ctrl-C of its own first: its
            # cell unwinds as an interactive one would (fio stopped, loop devices detached, knobs
            # restored) and the shutdown request then ends it; killed busy, it would leave them.
            if not restart:
                with contextlib.suppress(Exception):
                    await self._async_interrupt_kernel()
                    self.shutdown_wait_time = max(self.shutdown_wait_time, 15.0)
                    now = False
            return await super()._async_shutdown_kernel(now=now, restart=restart)

    return KernelWithLog


def keep_partial(running: Path, output: Path, why: str) -> Path:
    """Put an unfinished executed notebook beside the last good one, named as such
    (``01_x.partial.ipynb`` / ``01_x.failed.ipynb``); the good one is not touched."""
    kept = output.with_name(f"{output.stem}.{why}{output.suffix}")
    if running.exists():
        os.replace(running, kept)
    return kept


def to_html(executed: str | os.PathLike, html: str | os.PathLike | None = None, no_input: bool = True) -> Path:
    """The write-up (``publish``); with ``no_input=False``, the notebook as it is, code
    cells included, exported with the same offline template. Written atomically."""
    if no_input:
        return publish(executed, html)
    executed, html, nb = _read_executed(executed, html)
    write_atomic(html, _export(nb, executed, no_input=False))
    return html


# ---------------------------------------------------------------- the write-up
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_TEMPLATE = "iolab_writeup.html.j2"
# nbconvert's lab template, minus what it loads from cdnjs: require.js, MathJax, mermaid
# and the widget manager (widgets are dropped for their static fallback; notebooks write
# units in unicode, not LaTeX)
_TEMPLATE_TEXT = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}<style type="text/css">{{ resources.iolab_css }}</style>{%- endblock html_head_css -%}
"""
_CSS = """
main { max-width: 1180px; margin: 0 auto; }
.iolab-writeup table { margin: 0.4em 0 1em 0; table-layout: auto; }
.jp-RenderedHTMLCommon .iolab-writeup table th, .jp-RenderedHTMLCommon .iolab-writeup table td {
    text-align: left; vertical-align: top; padding: 0.3em 0.8em 0.3em 0; }
.jp-RenderedHTMLCommon .iolab-writeup table td.num { text-align: right; white-space: nowrap; }
.iolab-writeup .mono, .iolab-writeup pre { font-family: var(--jp-code-font-family); font-size: 12px; }
.iolab-writeup pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--jp-layout-color2);
                     padding: 8px; border-radius: 2px; }
.iolab-writeup .note, .iolab-writeup.note { color: var(--jp-ui-font-color2); }
.iolab-writeup .failed { color: #b71c1c; font-weight: bold; }
.iolab-unfinished { color: #b71c1c; font-weight: bold; background: #fdecea; border-left: 4px solid #b71c1c;
                    padding: 8px 12px; }
.jp-OutputArea-output pre { word-break: normal; overflow-wrap: anywhere; }
.iolab-appendix { border-top: 1px solid var(--jp-border-color2); margin-top: 2em; }
"""


def publish(executed: str | os.PathLike, html: str | os.PathLike | None = None) -> Path:
    """The write-up of an executed notebook as one offline HTML file (see the module's
    docstring), written atomically to ``html`` (default: the notebook's name, ``.html``).

    InputError for a missing file, a file that is not a notebook, a notebook with no
    outputs (not run), or an ``html`` that is the notebook itself or in a missing folder. A
    notebook that did not finish (``unfinished``) is written up with a banner saying so."""
    with warnings.catch_warnings():  # nbformat's notes on old notebooks (cell ids) are not the user's business
        warnings.filterwarnings("ignore", module="nbformat")
        warnings.filterwarnings("ignore", message="Cell is missing an id field")
        return _write_up(executed, html)


def _write_up(executed: str | os.PathLike, html: str | os.PathLike | None) -> Path:
    executed, html, nb = _read_executed(executed, html)
    banner = unfinished(nb)
    recorded = _recorded(nb)
    cell = _parameter_cell(executed)
    given = {**nb.metadata.get("papermill", {}).get("parameters", {}), **recorded["parameters"]}
    given = dict(sorted(given.items(), key=lambda kv: list(cell).index(kv[0]) if kv[0] in cell else len(cell)))
    where = [
        'the <a href="#iolab-results">results table</a> at the top' if recorded["results"] else "",
        'the <a href="#iolab-run-folders">run folders</a> in the appendix' if recorded["run_folders"] else "",
    ]
    writeup = _static(nb, "Recorded: see " + " and ".join(filter(None, where)) if any(where) else "")
    header = _header(nb, cell, given, recorded)
    appendix = _appendix(nb, executed, given, recorded["run_folders"])
    title = next(
        (i for i, c in enumerate(writeup.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")),
        None,
    )
    writeup.cells.insert(0 if title is None else title + 1, _html_cell(header))
    writeup.cells.append(_html_cell(appendix))
    if title is not None:
        writeup.metadata["title"] = (writeup.cells[title].source.lstrip()[2:].splitlines() or [""])[0].strip(" *_`")
    if banner:  # above everything, the title too: what follows is not the whole notebook
        writeup.cells.insert(
            0, _html_cell(f'<p class="iolab-writeup failed iolab-unfinished">⚠ {markup.escape(banner)}</p>')
        )
    write_atomic(html, _export(writeup, executed, no_input=True))
    return html


def _read_executed(executed: str | os.PathLike, html: str | os.PathLike | None):
    """(notebook path, HTML path, notebook): the checks ``publish`` promises."""
    import nbformat  # nbformat and nbconvert take a second to import: only when exporting

    executed = input_file(executed, "notebook")
    html = Path(html) if html else executed.with_suffix(".html")
    if html.is_dir():
        raise InputError(
            f"{html} is a folder; give a file name for the write-up, e.g. {html / (executed.stem + '.html')}"
        )
    if not html.parent.is_dir():
        raise InputError(f"{html}: there is no folder {html.parent}; create it or write the write-up elsewhere")
    if html.resolve() == executed.resolve():
        raise InputError(
            f"{html} is the notebook itself; give the write-up another name, e.g. {executed.with_suffix('.html')}"
        )
    notebook_file(executed, "executed notebook")  # says what is wrong without quoting the file
    try:
        with warnings.catch_warnings():  # nbformat's notes on old notebooks (cell ids) are not the user's business
            warnings.simplefilter("ignore")
            nb = nbformat.read(executed, as_version=4)
    except Exception as exc:  # nbformat raises NotJSONError, jsonschema's errors, AttributeError...
        raise InputError(
            f"{executed} is not a Jupyter notebook nbformat can read ({type(exc).__name__}); "
            "give an executed .ipynb saved by Jupyter or papermill"
        ) from None
    _tidy_metadata(nb)
    try:
        with warnings.catch_warnings():  # nbformat's notes on old notebooks (cell ids) are not the user's business
            warnings.simplefilter("ignore")
            nbformat.validate(nb, relax_add_props=True)  # as nbconvert will, before it writes anything
    except nbformat.ValidationError as exc:
        raise InputError(
            f"{executed} does not follow the notebook format ({str(exc.message)[:100]}); open and "
            "save it in JupyterLab, or give an executed .ipynb saved by Jupyter or papermill"
        ) from None
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        raise InputError(
            f"{executed} has no outputs: it has not been run. Run it first (papermill "
            f"{executed} out.ipynb, iolab demo, or Run All in JupyterLab and save), then "
            "publish the executed copy"
        )
    return executed, html, nb


# what the write-up reads from a notebook's metadata, and the type each must have
_META_TYPES = {"papermill": dict, "iolab": dict, "language_info": dict}
_PAPERMILL_TYPES = {"parameters": dict, "input_path": str, "start_time": str, "end_time": str, "version": str}


def _tidy_metadata(nb) -> None:
    """Drop metadata entries of the wrong type (a hand-edited or foreign notebook), so the
    write-up reads only what it can: a list where papermill writes a mapping is left out,
    not a traceback."""
    for key, kind in _META_TYPES.items():
        if key in nb.metadata and not isinstance(nb.metadata[key], kind):
            del nb.metadata[key]
    pm = nb.metadata.get("papermill", {})
    for key, kind in _PAPERMILL_TYPES.items():
        if key in pm and not isinstance(pm[key], kind):
            del pm[key]
    for cell in nb.cells:
        if not isinstance(cell.get("metadata", {}).get("papermill", {}), dict):
            del cell.metadata["papermill"]


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # IPython colours its error values and tracebacks


def unfinished(nb: Mapping[str, Any] | str | os.PathLike) -> str:
    """Why an executed notebook (a notebook, or its path) is not a whole run ("" when it
    is): the first cell with an error output (papermill's metadata may also say it failed),
    and the code cells that never ran (no execution count), in one sentence for the
    write-up's banner and stderr."""
    if not isinstance(nb, Mapping):
        nb = notebook_file(nb, "executed notebook")
    code = [
        c for c in nb.get("cells") or [] if _dict(c).get("cell_type") == "code" and str(c.get("source", "")).strip()
    ]
    errors = [
        (i, c, o)
        for i, c in enumerate(code, 1)
        for o in c.get("outputs") or []
        if _dict(o).get("output_type") == "error"
    ]
    never = [
        c
        for c in code
        if _dict(_dict(c.get("metadata")).get("papermill")).get("status") == "pending"
        or c.get("execution_count") is None
        and not c.get("outputs")
    ]
    parts = []
    if errors:
        i, cell, out = errors[0]
        where = f"cell {cell['execution_count']}" if cell.get("execution_count") else f"code cell {i}"
        value = printable(_ANSI.sub("", str(out.get("evalue", ""))), keep="").strip()
        parts.append(f"{where} raised {out.get('ename', 'an error')}" + (f": {value[:200]}" if value else ""))
    elif _dict(_dict(nb.get("metadata")).get("papermill")).get("exception"):
        parts.append("papermill recorded that it failed")
    if never:
        parts.append(f"{len(never)} of its {len(code)} code cells never ran")
    if not parts:
        return ""
    return (
        "This notebook did not finish: " + "; ".join(parts) + ". What follows stops there: run it again "
        "to the end before relying on this write-up."
    )


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _recorded(nb) -> dict[str, Any]:
    """What the notebook recorded: ``metadata["iolab"]`` (``iolab.report.publish.execute`` puts it
    there), else read from the result outputs themselves (a notebook run by papermill or
    in JupyterLab)."""
    meta = nb.metadata.get("iolab") or {}
    try:
        found = collect(nb) if not meta else {}
    except (ValueError, TypeError, KeyError, AttributeError):  # a result output iolab cannot read: none shown
        found = {}

    def listed(key: str, kind: type) -> list:
        values = meta.get(key) or found.get(key) or []
        return [v for v in values if isinstance(v, kind)] if isinstance(values, list) else []

    params = meta.get("parameters")
    return {
        "results": listed("results", Mapping),
        "run_folders": listed("run_folders", str),
        "parameters": dict(params) if isinstance(params, Mapping) else {},
    }


def _static(nb, pointer: str = ""):
    """A copy of ``nb`` for a static page: iolab's result outputs dropped (the results
    table shows them; ``pointer``, HTML, says so where the first of them was), widget views
    dropped for their static fallback (none if all they have is their text repr), pandas
    tables made readable, code cells that show nothing left out."""
    import copy

    from nbformat.v4 import new_output

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
                            outputs.append(
                                new_output(
                                    "display_data",
                                    data={
                                        "text/html": f'<p class="iolab-writeup note">{pointer}.</p>',
                                        "text/plain": "",
                                    },
                                )
                            )
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


def _html_cell(body: str):
    from nbformat.v4 import new_code_cell, new_output

    return new_code_cell(
        "",
        outputs=[new_output("display_data", data={"text/html": body, "text/plain": ""})],
        metadata={"tags": ["iolab-writeup"]},
    )


def _export(nb, executed: Path, no_input: bool) -> str:
    """HTML of ``nb`` with the offline lab template; images a markdown cell names beside
    the source notebook are embedded. What would still fetch from the network is
    disabled and listed at the end of the page."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    source = Path(nb.metadata.get("papermill", {}).get("input_path") or executed)
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({_TEMPLATE: _TEMPLATE_TEXT})],
        template_file=_TEMPLATE,
        exclude_input=no_input,
        exclude_input_prompt=no_input,
        exclude_output_prompt=no_input,
        embed_images=True,
    )
    resources = {"metadata": {"name": executed.stem, "path": str(source.parent)}, "iolab_css": _CSS}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    body, disabled = offline(body)
    if disabled:
        note = (
            f'<p class="iolab-writeup note">{len(disabled)} resource(s) the notebook names on the network '
            "were not loaded (this page is offline): " + ", ".join(markup.escape(d) for d in disabled) + "</p>"
        )
        head, sep, tail = body.rpartition("</main>")
        body = head + note + sep + tail if sep else body + note
    return body


# ---------------------------------------------------------------- offline
# elements a browser fetches by itself (anchors are followed only when clicked)
_FETCHING = re.compile(
    r"<(?:script|link|img|iframe|frame|source|track|video|audio|embed|object|input|image|use)\b"
    r"(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
    re.I,
)
_NETWORK = r"\s*(?:(?:https?|ftp):)?//"
_FETCH_ATTR = re.compile(
    r"(\s)(src|href|xlink:href|srcset|data|poster)(\s*=\s*)(\""
    + _NETWORK
    + r"[^\"]*\"|'"
    + _NETWORK
    + r"[^']*'|"
    + _NETWORK
    + r"[^\s>]+)",
    re.I,
)
_STYLE = re.compile(r"(<style\b[^>]*>)(.*?)(</style>)|(\sstyle\s*=\s*)(\"[^\"]*\"|'[^']*')", re.I | re.S)
_CSS_FETCH = re.compile(
    r"@import\s+(?:url\()?\s*[\"']?" + _NETWORK + r"[^;]*;?|url\(\s*[\"']?" + _NETWORK + r"[^)]*\)", re.I
)


def network_fetches(page: str) -> list[str]:
    """Every URL ``page`` would make a browser fetch from the network when it loads: the
    src/href/srcset/data/poster of scripts, stylesheets, images, frames and media, CSS
    ``url(...)`` and ``@import`` in style elements and attributes. Links (``<a href>``)
    are not fetches."""
    found = [m.group(4).strip("\"' ") for tag in _FETCHING.finditer(page) for m in _FETCH_ATTR.finditer(tag.group(0))]
    for m in _STYLE.finditer(page):
        found += [f.group(0) for f in _CSS_FETCH.finditer(m.group(2) or m.group(5) or "")]
    return found


def offline(page: str) -> tuple[str, list[str]]:
    """``page`` with every network fetch disabled: the attribute renamed
    (``src=`` -> ``data-offline-src=``, the element stays, inert), CSS ``url()`` of the
    network replaced by ``none``; and the URLs disabled."""
    disabled: list[str] = []

    def attr(m: re.Match) -> str:
        disabled.append(m.group(4).strip("\"' "))
        return f"{m.group(1)}data-offline-{m.group(2).replace(':', '-')}{m.group(3)}{m.group(4)}"

    def css(m: re.Match) -> str:
        disabled.append(m.group(0))
        return "" if m.group(0).lower().startswith("@import") else "none"

    page = _FETCHING.sub(lambda tag: _FETCH_ATTR.sub(attr, tag.group(0)), page)
    page = _STYLE.sub(
        lambda m: (
            (m.group(1) + _CSS_FETCH.sub(css, m.group(2)) + m.group(3))
            if m.group(1)
            else m.group(4) + _CSS_FETCH.sub(css, m.group(5))
        ),
        page,
    )
    return page, disabled


# ---------------------------------------------------------------- header and appendix
def _table(header: Iterable[str] | None, rows: Iterable[Iterable[Any]], numeric: Iterable[int] = ()) -> str:
    """An HTML table (no header row if ``header`` is None); cells are escaped text, except
    ``Markup`` (already HTML); the columns ``numeric`` right-aligned."""
    numeric = set(numeric)
    num = ' class="num"'
    head = "<thead><tr>" + "".join(f"<th>{markup.escape(h)}</th>" for h in header) + "</tr></thead>" if header else ""
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{num if i in numeric else ''}>{c if isinstance(c, Markup) else markup.escape(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table>{head}<tbody>{body}</tbody></table>"


class Markup(str):
    """Text that is already HTML (``_table`` does not escape it)."""


def _literal(value: Any) -> str:
    """A parameter's value as the parameters cell would spell it."""
    import json

    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def _header(nb, defaults: Mapping[str, Mapping], given: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    """What ran, with which parameters (``defaults``: the parameters cell), and what it recorded."""
    pm = nb.metadata.get("papermill", {})
    parts = ['<div class="iolab-writeup">']
    ran = []
    if pm.get("end_time"):
        ran.append(
            f"Ran {_when(pm.get('start_time'))} – {_when(pm['end_time'])} UTC"
            + (f" ({pm['duration']:.0f} s)" if isinstance(pm.get("duration"), (int, float)) else "")
            + f" with papermill {pm.get('version', '')}".rstrip()
        )
    kernel_py = nb.metadata.get("language_info", {}).get("version")
    if kernel_py:
        ran.append(f"Python {kernel_py} kernel")
    ran.append(
        f"written up {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC by iolab {__version__} "
        "(code cells left out; provenance at the end)"
    )
    parts.append(f'<p class="note">{markup.escape("; ".join(ran))}.</p>')

    rows = []
    for name, spec in defaults.items():
        if name in given:
            rows.append((name, _literal(given[name]), "given", spec.get("help", "")))
        else:
            rows.append((name, spec.get("default", ""), "default", spec.get("help", "")))
    rows += [
        (name, _literal(value), "given", "not a parameter of this notebook")
        for name, value in given.items()
        if name not in defaults
    ]
    emulated = provenance.emulated(recorded.get("run_folders") or [])
    if emulated:
        parts.append(
            '<p class="failed iolab-emulated">⚠ '
            + markup.escape(
                f"Made in iolab's NVMe lab ({emulated}). Its figures show the kit's code paths on Linux's "
                "real nvme driver; as measurements of a device they mean nothing."
            )
            + "</p>"
        )
    flagged = checks.folder_flags(recorded.get("run_folders") or [])
    if flagged:
        parts.append(
            '<p class="failed iolab-flags">⚠ '
            + markup.escape(checks.banner_text(flagged, len(recorded["run_folders"])))
            + "</p>"
        )
    parts.append("<h2>Parameters</h2>")
    parts.append(
        _table(("parameter", "value", "", "meaning"), rows)
        if rows
        else "<p>This notebook has no parameters cell and was given no parameters.</p>"
    )
    if recorded["results"]:
        key = [r for r in recorded["results"] if not r.get("detail")]
        detail = [r for r in recorded["results"] if r.get("detail")]
        parts.append('<h2 id="iolab-results">Results</h2>')
        if key:
            parts.append(_results_table(key))
        if detail:  # per-setting figures (results.record_many): kept, folded under the key ones
            parts.append(
                f"<details><summary>{len(detail)} more results, one per setting (what iolab seeds "
                f"compares with published figures)</summary>{_results_table(detail)}</details>"
            )
    parts.append("</div>")
    return "\n".join(parts)


def _results_table(results: list[Mapping[str, Any]]) -> str:
    return _table(
        ("result", "value", "unit", "interval", "source", "note"),
        [
            (
                r.get("name", ""),
                _shown(r.get("value")),
                r.get("unit") or "",
                f"[{_shown(r.get('low'))}, {_shown(r.get('high'))}]"
                if r.get("low") is not None or r.get("high") is not None
                else "",
                r.get("source") or "",
                r.get("note") or "",
            )
            for r in results
        ],
        numeric=(1, 3),
    )


def _shown(value: Any) -> str:
    """A recorded result's value for its table: numbers readable, None as a dash."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a knee at QD 4.0 is QD 4
    return readable_value(value)


def _when(stamp: str | None) -> str:
    """papermill's ISO time (``2026-11-22T15:54:57.864868+00:00``) to the minute."""
    return str(stamp or "?")[:16].replace("T", " ")


def _parameter_cell(executed: Path) -> dict[str, dict]:
    """The notebook's parameters cell: name -> {default (as written), help (its comment)},
    by papermill's inspection; empty when there is none."""
    import papermill as pm  # slow to import: only when publishing

    try:
        return {name: dict(spec) for name, spec in pm.inspect_notebook(str(executed)).items()}
    except Exception:  # papermill's inspection of an odd parameters cell: the given values still show
        return {}


def _appendix(nb, executed: Path, given: Mapping[str, Any], run_folders: list[str]) -> str:
    """Provenance: how to run it again, the software, the machine, the run folders."""
    pm = nb.metadata.get("papermill", {})
    parts = ['<div class="iolab-writeup iolab-appendix">', "<h2>Provenance</h2>", "<h3>Run it again</h3>"]
    git = provenance.checkout()
    command = provenance.rerun_command(pm.get("input_path"), given)
    if command:
        at = f" at commit {git['commit'][:12]}" if git["commit"] else ""
        parts.append(
            f"<p>From the iolab checkout{markup.escape(at)}, then write this page again with "
            "<code>iolab publish out.ipynb</code>:</p>"
        )
        parts.append(f"<pre>{markup.escape(command)}</pre>")
        parts.append(
            f"<p><code>iolab reproduce {markup.escape(executed.name)}</code> does both and compares the "
            "recorded results with the new ones.</p>"
        )
    else:
        parts.append(
            '<p class="note">The notebook was not run by papermill: its source and parameters are '
            "not recorded, so no command can run it again.</p>"
        )

    machine, machine_from = provenance.machine_of(run_folders)
    parts.append("<h3>Software</h3>")
    if git["commit"]:
        state = (
            f"with changes: {git['changed']} file(s) changed, {git['untracked']} untracked" if git["dirty"] else "clean"
        )
        commit = Markup(f'<span class="mono">{git["commit"]}</span> ({markup.escape(state)})')
    else:
        commit = f"unknown: {git['why']}"
    tools = provenance.tool_versions(machine)
    rows = [
        ("iolab", git["iolab_version"]),
        ("iolab git commit", commit),
        ("iolab checkout", git["repo"] or "–"),
        ("Linux kernel", tools["kernel"] or "–"),
        ("fio", tools["fio"] or "not installed"),
        ("perf", tools["perf"] or "not installed"),
        ("Python (kernel)", nb.metadata.get("language_info", {}).get("version", "–")),
        ("Python (publish)", tools["python"]),
    ]
    rows += [(name, version or "not installed") for name, version in provenance.package_versions().items()]
    parts.append(_table(("", "version"), rows))
    parts.append(
        f'<p class="note">The commit, Python and packages: when this page was written; kernel, fio and '
        f"perf: {markup.escape(machine_from)}.</p>"
    )

    parts.append("<h3>Machine</h3>")
    parts.append(_table(None, provenance.machine_rows(machine)))
    parts.append(f'<p class="note">{markup.escape(machine_from[0].upper() + machine_from[1:])}.</p>')

    parts.append('<h3 id="iolab-run-folders">Run folders</h3>')
    if run_folders:
        digests = [provenance.folder_digest(f) for f in run_folders]
        parts.append(
            _table(
                ("run folder", "files", "bytes", "SHA-256 of its raw outputs"),
                [
                    (
                        d["path"],
                        d["files"],
                        readable_number(str(d["bytes"])),
                        Markup(f'<span class="mono">{d["sha256"]}</span>') if d["sha256"] else d["why"],
                    )
                    for d in digests
                ],
                numeric=(1, 2),
            )
        )
        parts.append(
            '<p class="note">The digest covers every file of a run folder (fio.json, tio.txt, perf '
            "files, params.json, job.fio, argv.json, system.json, samples) except run.json (iolab's "
            "status, times and pid) and hidden files: for each, sorted by relative path, "
            "<code>path NUL size NUL bytes</code>. <code>iolab.report.provenance.folder_digest(folder)</code> "
            "computes it again.</p>"
        )
    else:
        parts.append(
            '<p class="note">The notebook recorded no run folders (<code>iolab.core.results.record_runs</code>'
            "), so none is listed or hashed here.</p>"
        )
    parts.append("</div>")
    return "\n".join(parts)
