"""Notebooks headless: papermill execution and HTML export without code cells.

    execute("notebooks/01_queue_depth_knee.ipynb", "papermill_runs/01.ipynb", {"runtime_s": 1})
    to_html("papermill_runs/01.ipynb", "papermill_runs/01.html")

Runs set IOLAB_HEADLESS=1 and TQDM_DISABLE=1 so progress bars stay quiet, and use the
``python3`` kernel of the running interpreter; the kernel's cwd is the notebook's folder,
as in JupyterLab.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping

from .atomic import write_atomic
from .errors import IolabError


def execute(notebook: str | os.PathLike, output: str | os.PathLike,
            parameters: Mapping[str, Any] | None = None, timeout_s: int = 1800) -> Path:
    """Run a notebook with papermill. Raises IolabError naming the failing cell; the
    executed notebook (with papermill's error banner) is written first."""
    import papermill as pm  # papermill and nbclient take a second to import: only when running one

    notebook, output = Path(notebook).resolve(), Path(output).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    known = pm.inspect_notebook(str(notebook))
    unknown = set(parameters or {}) - set(known)
    if unknown:
        raise IolabError(f"{notebook.name} has no parameter(s) {', '.join(sorted(unknown))}; "
                         f"it takes: {', '.join(known)}")
    os.environ.setdefault("IOLAB_HEADLESS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    running = output.with_name(f".{output.stem}.{os.getpid()}.running{output.suffix}")
    log = output.with_name(f".{output.stem}.kernel.log")
    from nbclient.exceptions import DeadKernelError  # as papermill: slow, only when running one

    # papermill/nbclient log through logging's last-resort handler ("Kernel died while
    # waiting…"): what matters reaches the user as the one IolabError line below
    chatty = logging.getLogger("papermill")
    level = chatty.level
    chatty.setLevel(logging.CRITICAL)
    try:
        pm.execute_notebook(str(notebook), str(running), parameters=dict(parameters or {}),
                            kernel_name="python3", progress_bar=False, cwd=str(notebook.parent),
                            execution_timeout=timeout_s, kernel_manager_class=_kernel_logging_to(log))
    except pm.PapermillExecutionError as exc:
        kept = _keep_partial(running, output, "failed")
        raise IolabError(f"{notebook.name} failed in cell {exc.exec_count}: {exc.ename}: "
                         f"{exc.evalue}. The executed notebook with the error is {kept} "
                         f"(kernel log: {log})"
                         + (f"; the last good one is still {output}" if output.exists() else "")) from exc
    except DeadKernelError as exc:
        kept = _keep_partial(running, output, "failed")
        raise IolabError(f"{notebook.name}: its kernel died before the notebook finished; the partial "
                         f"notebook is {kept}, the kernel's log {log}") from exc
    except BaseException:
        _keep_partial(running, output, "partial")
        # the process is ending: asyncio would report nbclient's abandoned cell task at exit
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    finally:
        chatty.setLevel(level)
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

    return KernelWithLog


def _keep_partial(running: Path, output: Path, why: str) -> Path:
    """Put an unfinished executed notebook beside the last good one, named as such
    (``01_x.partial.ipynb`` / ``01_x.failed.ipynb``); the good one is not touched."""
    kept = output.with_name(f"{output.stem}.{why}{output.suffix}")
    if running.exists():
        os.replace(running, kept)
    return kept


def to_html(executed: str | os.PathLike, html: str | os.PathLike | None = None,
            no_input: bool = True) -> Path:
    """Export an executed notebook to a self-contained HTML report (figures inline as
    PNG; code cells left out unless ``no_input=False``), written atomically."""
    import nbformat  # nbformat and nbconvert take a second to import: only when exporting
    from nbconvert import HTMLExporter

    executed = Path(executed)
    html = Path(html) if html else executed.with_suffix(".html")
    exporter = HTMLExporter(exclude_input=no_input, exclude_input_prompt=no_input,
                            exclude_output_prompt=no_input)
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    write_atomic(html, body)
    return html
