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


def state_dir() -> Path:
    """Where iolab keeps its ledger and locks: ``$IOLAB_STATE``, else ``/run/iolab`` for root
    (tmpfs: cleared at boot, like the loop devices and knob values it records), else
    ``$XDG_RUNTIME_DIR/iolab`` or ``/tmp/iolab-<uid>``."""
    if os.environ.get("IOLAB_STATE"):
        return Path(os.environ["IOLAB_STATE"])
    if os.geteuid() == 0 and Path("/run").is_dir():
        return Path("/run/iolab")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "iolab" if runtime else Path(f"/tmp/iolab-{os.geteuid()}")


def lock_dir() -> Path:
    """Per-CPU locks, shared by every user of the machine (a sticky, world-writable folder,
    like /tmp): ``$IOLAB_LOCKS``, else ``/run/lock/iolab`` or ``/tmp/iolab-locks``."""
    if os.environ.get("IOLAB_LOCKS"):
        return Path(os.environ["IOLAB_LOCKS"])
    return Path("/run/lock/iolab") if Path("/run/lock").is_dir() else Path("/tmp/iolab-locks")


# how targets are named everywhere (iolab.target.parse_spec); here, so the command line's help
# needs no import of the target module
TARGET_HELP = ("'scratch' (a scratch file), 'loop' or 'loop:SIZE' (a tmpfs-backed loop device, root), "
               "an existing file or block device path, or a list of them")
