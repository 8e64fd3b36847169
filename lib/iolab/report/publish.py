"""Notebooks headless: papermill execution, and the write-up of an executed notebook.

    execute("notebooks/01_queue_depth_knee.ipynb", "papermill_runs/01.ipynb", {"runtime_s": 1})
    publish("papermill_runs/01.ipynb")            # -> papermill_runs/01.html

Runs set IOLAB_HEADLESS=1 and TQDM_DISABLE=1 so progress bars stay quiet, and use the
``python3`` kernel of the running interpreter; the kernel's cwd is the notebook's folder,
as in JupyterLab.

The write-up is one HTML file that needs nothing else, offline too: no code cells; figures
inline (PNG); no script, style or font fetched from the network (nbconvert's lab template
without require.js, MathJax, mermaid and the widget manager it loads from a CDN; anything
else that would fetch is disabled and listed: ``iolab.report.notebook_html``,
``iolab.report.offline``); pandas tables with thousands separators, three significant digits
and column names with units (``iolab.core.columns``); the parameters it ran with and the
results it recorded (``iolab.record.results``) at the top (``iolab.report.writeup_header``); a
provenance appendix (``iolab.report.writeup_appendix``): iolab's git commit, tool and package
versions, the machine, each run folder with a SHA-256 of its raw outputs, and the command
that runs it again. This module reads and checks the executed notebook and puts the parts
together.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import owned
from ..core.errors import InputError, IolabError, printable
from ..core.outputs import claim_output, write_output
from ..core.validate import input_file, notebook_file
from ..record.results import EXECUTED_ENV, collect
from .kernel import headless_kernel
from .notebook_html import export, html_cell, static_copy
from .templating import render
from .writeup_appendix import appendix
from .writeup_header import header, parameters_cell


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
    force: bool = False,
) -> Path:
    """Run a notebook with papermill. Raises IolabError naming the failing cell; the
    executed notebook (with papermill's error banner) is written first.

    What the notebook recorded (``iolab.record.results``) and ``parameters`` go into the executed
    notebook's ``metadata["iolab"]`` and into ``<output stem>.results.json`` beside it
    (``NAME.failed.results.json`` beside a failed one); either replaces only a file iolab wrote,
    unless ``force`` (``iolab.core.outputs``: checked before the notebook runs). The results of a
    notebook that ran to its end are added to the results history (``iolab.record.history``; ``IOLAB_HISTORY=off``
    keeps none)."""
    from contextlib import suppress

    import papermill as pm  # papermill and nbclient take a second to import: only when running one

    from ..record.results import keep_with

    notebook, output = Path(notebook).resolve(), Path(output).resolve()
    results = output.with_name(f"{output.stem}.results.json")
    for path in (output, results):
        claim_output(path, force=force, inputs=(notebook,))
    output.parent.mkdir(parents=True, exist_ok=True)
    refuse_unknown_parameters(notebook, parameters, pm.inspect_notebook(str(notebook)))
    os.environ.setdefault("IOLAB_HEADLESS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    running = output.with_name(f".{output.stem}.{os.getpid()}.running{output.suffix}")
    log = output.with_name(f".{output.stem}.kernel.log")
    from nbclient.exceptions import DeadKernelError  # as papermill: slow, only when running one

    def keep_failed(kept: Path) -> Path:
        side = kept.with_name(f"{kept.stem}.results.json")
        if os.path.lexists(side) and not owned.is_owned(side):  # a file iolab did not write: never replaced
            side = kept.with_name(f"{kept.stem}.{os.getpid()}.results.json")
        with suppress(OSError, ValueError, IolabError):  # the notebook's own error is the one to report
            keep_with(kept, parameters, side)
            for path in (kept, side):  # rewritten: marked again, so the next failure replaces them
                owned.mark(path)
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
            kernel_name=headless_kernel(),
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
    kept = keep_with(running, parameters, results)
    os.replace(running, output)
    for path in (output, results):
        owned.mark(path)
    from ..record.history import keep  # pyarrow: only once a notebook has run

    keep(output, kept, notebook)  # never fails the run: a history it cannot write is one line on stderr
    return output


def _kernel_logging_to(log: Path):
    """A kernel manager whose kernel writes its own log (ZMQ warnings, its tracebacks when
    interrupted) to ``log`` instead of the terminal; what cells print stays in the notebook."""
    from jupyter_client.manager import AsyncKernelManager  # as papermill: slow, only when running one

    class KernelWithLog(AsyncKernelManager):
        def __init__(self, **kw):
            super().__init__(**kw)
            # Unix sockets where their paths fit: over TCP a kernel binds ports its manager
            # picked and let go, and a kernel another process started meanwhile (a batch beside
            # JupyterLab, the test suite's workers) can take one first: the kernel dies at
            # start-up ("ZMQError: Address already in use", in the kernel log)
            self.sockets = _ipc_path()
            if self.sockets:
                self.transport = "ipc"

        def _ip_default(self) -> str:  # the sockets' path, a name of their own
            return self.sockets if self.sockets and self.transport == "ipc" else super()._ip_default()

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            with open(log, "ab") as sink:
                kw["stdout"] = kw["stderr"] = sink
                # the kernel knows it runs under execute, which keeps its results itself
                # (iolab.record.results.live_shell), whatever IOLAB_HEADLESS the user set
                kw["env"] = {**(kw.get("env") or os.environ), EXECUTED_ENV: "1"}
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


UNIX_PATH_MAX = 108  # sun_path of a Unix socket address, its closing NUL included (unix(7))
IPC_NAME = 12  # hex digits naming a kernel's sockets (48 random bits)


def _ipc_path() -> str | None:
    """Where a headless kernel's Unix sockets go (``<this>-<n>``): the temporary folder, where
    jupyter_client writes this manager's connection file, under a random name; None when the
    sockets' paths would not fit in a socket address."""
    path = os.path.join(tempfile.gettempdir(), f"kernel-{uuid.uuid4().hex[:IPC_NAME]}-ipc")
    return path if len(f"{path}-99") < UNIX_PATH_MAX else None


def keep_partial(running: Path, output: Path, why: str) -> Path:
    """Put an unfinished executed notebook beside the last good one, named as such
    (``01_x.partial.ipynb`` / ``01_x.failed.ipynb``); the good one is not touched, nor a file of
    that name iolab did not write (then it is ``01_x.failed.<pid>.ipynb``)."""
    kept = output.with_name(f"{output.stem}.{why}{output.suffix}")
    if os.path.lexists(kept) and not owned.is_owned(kept):
        kept = output.with_name(f"{output.stem}.{why}.{os.getpid()}{output.suffix}")
    if running.exists():
        os.replace(running, kept)
        owned.mark(kept)
    return kept


def to_html(
    executed: str | os.PathLike, html: str | os.PathLike | None = None, no_input: bool = True, force: bool = False
) -> Path:
    """The write-up (``publish``); with ``no_input=False``, the notebook as it is, code
    cells included, exported with the same offline template. Written atomically, through the
    output guard (``force`` as ``publish``)."""
    if no_input:
        return publish(executed, html, force=force)
    executed, html, nb = _read_executed(executed, html, force)
    return write_output(html, export(nb, executed, no_input=False), force=force, inputs=(executed,))


# where the results table and the run folders are, in place of the first result output
RECORDED = """{% if results or run_folders %}<p class="iolab-writeup note">Recorded: see
{%- if results %} the <a href="#iolab-results">results table</a> at the top{% endif %}
{%- if results and run_folders %} and{% endif %}
{%- if run_folders %} the <a href="#iolab-run-folders">run folders</a> in the appendix{% endif %}.</p>
{%- endif %}"""
UNFINISHED = '<p class="iolab-writeup failed iolab-unfinished">⚠ {{ banner }}</p>'


def publish(executed: str | os.PathLike, html: str | os.PathLike | None = None, force: bool = False) -> Path:
    """The write-up of an executed notebook as one offline HTML file (see the module's
    docstring), written atomically to ``html`` (default: the notebook's name, ``.html``).

    InputError for a missing file, a file that is not a notebook, a notebook with no
    outputs (not run), or an ``html`` that is the notebook itself or in a missing folder. A
    notebook that did not finish (``unfinished``) is written up with a banner saying so.
    ``OutputExists`` when ``html`` is a file iolab did not write, unless ``force``
    (``iolab.core.outputs``)."""
    with warnings.catch_warnings():  # nbformat's notes on old notebooks (cell ids) are not the user's business
        warnings.filterwarnings("ignore", module="nbformat")
        warnings.filterwarnings("ignore", message="Cell is missing an id field")
        return _write_up(executed, html, force)


def _write_up(executed: str | os.PathLike, html: str | os.PathLike | None, force: bool) -> Path:
    executed, html, nb = _read_executed(executed, html, force)
    banner = unfinished(nb)
    recorded = _recorded(nb)
    cell = parameters_cell(executed)
    given = {**nb.metadata.get("papermill", {}).get("parameters", {}), **recorded["parameters"]}
    given = dict(sorted(given.items(), key=lambda kv: list(cell).index(kv[0]) if kv[0] in cell else len(cell)))
    writeup = static_copy(nb, render(RECORDED, **recorded))
    top = header(nb, cell, given, recorded)
    end = appendix(nb, executed, given, recorded["run_folders"])
    title = next(
        (i for i, c in enumerate(writeup.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")),
        None,
    )
    writeup.cells.insert(0 if title is None else title + 1, html_cell(top))
    writeup.cells.append(html_cell(end))
    if title is not None:
        writeup.metadata["title"] = (writeup.cells[title].source.lstrip()[2:].splitlines() or [""])[0].strip(" *_`")
    if banner:  # above everything, the title too: what follows is not the whole notebook
        writeup.cells.insert(0, html_cell(render(UNFINISHED, banner=banner)))
    return write_output(html, export(writeup, executed, no_input=True), force=force, inputs=(executed,))


def _read_executed(executed: str | os.PathLike, html: str | os.PathLike | None, force: bool = False):
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
    claim_output(html, force=force)  # before the notebook is read: a user's file is never replaced
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
