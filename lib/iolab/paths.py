"""Every path iolab uses by default, defined once.

The data folder is ``$IOLAB_DATA`` if set, else ``data/`` of the checkout iolab was
installed from (editable install), else ``./data``.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE.parents[1]
REPO = _CHECKOUT if (_CHECKOUT / "pyproject.toml").exists() else Path.cwd()
NOTEBOOKS = REPO / "notebooks"
PAPERMILL_RUNS = REPO / "papermill_runs"


def data_dir() -> Path:
    return Path(os.environ.get("IOLAB_DATA", REPO / "data"))


def runs_dir() -> Path:
    return data_dir() / "runs"


def scratch_dir() -> Path:
    return data_dir() / "scratch"


def reference_dir() -> Path:
    return REPO / "data" / "reference"
