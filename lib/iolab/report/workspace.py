"""``iolab init DIR``: a workspace for a pip-installed iolab, laid out as the checkout is, so
every command and notebook finds what it finds there::

    DIR/
      .iolab-workspace    the mark: commands run anywhere inside DIR use DIR (core.paths.REPO)
      notebooks/          the nine notebooks, without outputs
      data/seeds/         the seed manifests (iolab seeds)
      data/examples/      example search specs and batch manifests
      data/reference/     the figures published in the write-ups, cited
      papermill_runs/     executed notebooks and write-ups land here

and the project's Jupyter kernel (``iolab``: this Python) in this environment, when it has none.
The kit comes from the wheel (``iolab/kit``) or, in a checkout, from the checkout itself.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from ..core import paths
from ..core.errors import InputError
from ..core.version import __version__
from .kernel import KERNEL_NAME, headless_kernel, install_kernel

FOLDERS = ("notebooks", "data/seeds", "data/examples", "data/reference")


def init(folder: str | Path) -> tuple[list[Path], str]:
    """Make the workspace ``folder`` (new, or an empty folder): the files it copied, and what
    it did about the notebooks' Jupyter kernel, in words (installed, and where; there
    already; or why not). A folder that holds anything is refused: nothing of a user's is
    replaced."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        what = "a file" if not folder.is_dir() else "a folder that holds files"
        raise InputError(f"{folder} is {what}: iolab init makes a new workspace; give a new or empty folder")
    kit = paths.kit_dir()
    missing = [f for f in FOLDERS if not (kit / f).is_dir()]
    if missing:
        raise InputError(
            f"this iolab has no kit to copy ({kit / missing[0]} is missing): "
            "install it from a wheel or a checkout (pip install iolab, or make setup in the checkout)"
        )
    copied = []
    for sub in FOLDERS:
        (folder / sub).mkdir(parents=True, exist_ok=True)
        for f in sorted((kit / sub).iterdir()):
            if f.is_file() and not f.name.startswith("."):
                shutil.copyfile(f, folder / sub / f.name)
                copied.append(folder / sub / f.name)
    (folder / "papermill_runs").mkdir(exist_ok=True)
    kernel = f"the Jupyter kernel {KERNEL_NAME!r} the notebooks name is installed already"
    if headless_kernel() != KERNEL_NAME:  # the notebooks name the project's kernel
        try:
            where = install_kernel()
            kernel = f"installed the Jupyter kernel {KERNEL_NAME!r} the notebooks name ({sys.executable}) in {where}"
        except OSError as exc:  # an environment iolab may not write: python3 runs them
            kernel = (
                f"could not install the Jupyter kernel {KERNEL_NAME!r} ({exc.strerror or exc}): papermill and "
                "iolab run the notebooks on python3; JupyterLab asks for a kernel"
            )
    mark = {"iolab": __version__, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (folder / paths.WORKSPACE_MARK).write_text(json.dumps(mark) + "\n")
    return copied, kernel
