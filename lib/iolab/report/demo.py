"""``make demo`` / ``iolab demo``: run the flagship notebooks headless with short settings
(each one's ``demo`` in ``iolab.report.contract``) against the default scratch-file target,
and write each one's offline write-up (``iolab.report.publish.publish``: HTML without code
cells, parameters, provenance).

In a git checkout the demo runs the committed notebooks: one whose cells differ from HEAD's
(edited, or autosaved with a test cell, in JupyterLab) is run as ``git show HEAD:notebooks/NAME``
has it, from a copy in ``<out>/.committed/`` (its write-up names that copy), and one line says
which; outputs and metadata JupyterLab saved do not count as a change. Outside a git checkout
the notebooks run as they are on disk, and the line says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat

from ..core import paths
from ..core.outputs import claim_folder, claim_output, write_output
from ..machine.locks import folder_locked
from ..record.provenance import _git
from .contract import NOTEBOOKS
from .publish import execute, publish

FLAGSHIP = {nb.file: nb.demo for nb in NOTEBOOKS.values() if nb.demo}  # each one's settings: the contract's
DEFAULT_RUNTIME_S = 0.4


def run_demo(
    out_dir: Path | None = None, runtime_s: float = DEFAULT_RUNTIME_S, force: bool = False, cpu: int | None = None
) -> list[Path]:
    """Each flagship notebook executed into ``out_dir`` (default ``papermill_runs/``, iolab's own
    folder), then written up, measuring on ``cpu`` (None: each notebook's default, CPU 0). A
    folder or file there that iolab did not write is refused before any notebook runs
    (``iolab.core.outputs``), unless ``force``."""
    out_dir = Path(out_dir or paths.PAPERMILL_RUNS)
    claim_folder(out_dir, force=force)
    for name in FLAGSHIP:
        executed = out_dir / name
        for path in (executed, executed.with_suffix(".html"), executed.with_name(f"{executed.stem}.results.json")):
            claim_output(path, force=force)
    written = []
    with folder_locked(out_dir):  # a second demo waits: reports are never interleaved
        sources, said = committed(list(FLAGSHIP), out_dir / ".committed", force=force)
        if said:
            print(said)
        for name, params in FLAGSHIP.items():
            given = {**params(runtime_s), **({"cpu": cpu} if cpu is not None else {})}
            executed = execute(sources[name], out_dir / name, given, force=force)
            written += [executed, publish(executed, force=force)]
    return written


def committed(names: list[str], copies: Path, force: bool = False) -> tuple[dict[str, Path], str]:
    """({name: the notebook to run}, one line for people, "" when every one is as committed):
    each of ``names`` in notebooks/, or, when its cells differ from HEAD's, HEAD's version
    written to ``copies``; outside a git checkout (or without git) the ones on disk."""
    sources = {name: paths.NOTEBOOKS / name for name in names}
    try:
        top = Path(_git(paths.NOTEBOOKS, "rev-parse", "--show-toplevel"))
    except (OSError, subprocess.SubprocessError):
        return sources, f"not a git checkout: the demo runs the notebooks as they are on disk in {paths.NOTEBOOKS}"
    modified = []
    for name in names:
        try:
            head = _git(top, "show", f"HEAD:{(paths.NOTEBOOKS / name).resolve().relative_to(top.resolve())}")
        except (OSError, ValueError, subprocess.SubprocessError):
            continue  # not in the last commit: the one on disk is all there is
        if _cells(nbformat.reads(head, as_version=4)) != _cells(nbformat.read(sources[name], as_version=4)):
            copies.mkdir(parents=True, exist_ok=True)
            sources[name] = write_output(copies / name, head + "\n", force=force)
            modified.append(name)
    if not modified:
        return sources, ""
    return sources, (
        f"the demo runs the committed {', '.join(modified)} (git show HEAD:notebooks/NAME): the one"
        f"{'s' * (len(modified) > 1)} in notebooks/ differ{'s' * (len(modified) == 1)} from the last commit "
        "(edited in JupyterLab?); commit to run your edits"
    )


def _cells(nb) -> list[tuple]:
    """What a notebook runs: each cell's type, source and tags (outputs, counts and metadata
    JupyterLab saves are not a change)."""
    return [(c.cell_type, c.source, tuple(c.get("metadata", {}).get("tags", []))) for c in nb.cells]
