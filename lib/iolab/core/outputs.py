"""The output guard: every file and folder a command writes (pages, tables, write-ups, executed
notebooks, batch and seed folders) goes through here, so no output replaces a user's file.

    claim_output("table.csv", force=args.force, inputs=[args.dir])  # before any work: refused or fine
    write_output("table.csv", text, force=args.force)               # claimed, written atomically, marked
    claim_folder("batch-x", force=args.force)                        # an output folder: made and marked

* A path where nothing is: written, then marked as iolab's (``iolab.core.owned``: a hidden note
  ``.NAME.iolab-owned`` beside the file, naming its inode).
* A file iolab wrote (its note names this very file): replaced.
* Any other file, or an input of the same command (compare's sides, publish's notebook):
  ``OutputExists``, one line naming it and saying what to do, unless ``force`` (``--force``, the one
  spelling of every command).
* A folder iolab makes holds a marker, ``.iolab-owned``; an existing folder without one that holds
  anything is refused likewise, unless ``force`` or it is iolab's own by place (``ours``; every
  folder in the checkout's ``papermill_runs/``, which git gives a README). Inside any folder, each
  file is judged on its own: iolab's earlier outputs are replaced, a user's file dropped there is not.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from . import owned, paths
from .atomic import write_atomic, write_json
from .errors import OutputExists

FOLDER_MARK = ".iolab-owned"
FORCE_HELP = "replace outputs iolab did not write (a user's file of the same name); without it they are refused"
IOLAB_NAMES = (FOLDER_MARK, ".iolab.lock")  # what iolab leaves in a folder before any output


def _same(path: Path, others: Iterable[str | os.PathLike]) -> bool:
    """Whether ``path`` is one of ``others`` (the same file, or the same resolved path)."""
    for other in others:
        with contextlib.suppress(OSError):
            if os.path.samefile(path, other):
                return True
        if Path(path).resolve() == Path(other).resolve():
            return True
    return False


def claim_output(
    path: str | os.PathLike, *, force: bool = False, inputs: Iterable[str | os.PathLike] = (), flag: str = ""
) -> Path:
    """``path``, when writing it destroys nothing: nothing is there, or a file iolab wrote that
    is not one of ``inputs``; or ``force``. Else ``OutputExists``; a folder there is always
    refused. ``flag`` names the option in the message (``--html``)."""
    path = Path(path)
    named = f"{flag} {path}" if flag else str(path)
    if path.is_dir():
        raise OutputExists(f"{named} is a folder; give a file name (its files are not replaced)")
    if _same(path, inputs) and not force:
        raise OutputExists(
            f"{named} is an input of this command: give another name, or --force to replace it with the output"
        )
    if os.path.lexists(path) and not force and not owned.is_owned(path):
        raise OutputExists(f"{named} exists and iolab did not write it: give --force to replace it, or another name")
    return path


def write_output(
    path: str | os.PathLike,
    text: str | bytes,
    *,
    force: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    flag: str = "",
) -> Path:
    """``text`` to ``path`` once ``claim_output`` allows it, atomically, then marked as iolab's."""
    path = claim_output(path, force=force, inputs=inputs, flag=flag)
    write_atomic(path, text)
    owned.mark(path)
    return path


def write_json_output(path: str | os.PathLike, obj, *, force: bool = False) -> Path:
    """``write_json`` through the guard (``claim_output``), then marked as iolab's."""
    path = claim_output(path, force=force)
    write_json(path, obj)
    owned.mark(path)
    return path


def folder_is_owned(folder: str | os.PathLike) -> bool:
    """Whether iolab made ``folder`` (its ``.iolab-owned`` marker is there)."""
    marker = Path(folder) / FOLDER_MARK
    try:
        return not marker.is_symlink() and json.loads(marker.read_text()).get("by") == "iolab"
    except (OSError, ValueError, AttributeError):
        return False


def check_folder(folder: str | os.PathLike, *, force: bool = False, ours: bool = False, flag: str = "--out") -> Path:
    """``folder`` when iolab may write into it: missing, empty, made by iolab (or ``ours``), or
    ``force``. Else ``OutputExists``; a file there is always refused. Nothing is written."""
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise OutputExists(f"{flag} {folder} is a file, not a folder: give a folder (the file is not replaced)")
    ours = ours or folder.resolve().is_relative_to(paths.PAPERMILL_RUNS.resolve())
    if folder.is_dir() and not (force or ours or folder_is_owned(folder)):
        theirs = sorted(p.name for p in folder.iterdir() if p.name not in IOLAB_NAMES)
        if theirs:
            raise OutputExists(
                f"{flag} {folder} holds files iolab did not write (e.g. {theirs[0]}): give --force to write "
                "into it (a file of the same name as an output is replaced), or another folder"
            )
    return folder


def claim_folder(folder: str | os.PathLike, *, force: bool = False, ours: bool = False, flag: str = "--out") -> Path:
    """``check_folder``, then the folder made (parents too) and marked as iolab's."""
    folder = check_folder(folder, force=force, ours=ours, flag=flag)
    folder.mkdir(parents=True, exist_ok=True)
    if not folder_is_owned(folder):
        with contextlib.suppress(OSError):  # a folder iolab may not write: its outputs fail with their own error
            write_json(
                folder / FOLDER_MARK,
                {"by": "iolab", "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            )
    return folder
