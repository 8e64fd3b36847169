"""Which regular files iolab created, so the write guards (``iolab.machine.jobcheck`` for fio's
files, ``iolab.core.outputs`` for pages, tables and folders) can tell iolab's own files from a
file that holds a user's data.

A file iolab made — the scratch file, or a file fio laid out itself during an iolab run —
gets a small hidden note beside it, ``.NAME.iolab-owned``, holding the file's device and
inode numbers::

    data/scratch/iolab-scratch.dat
    data/scratch/.iolab-scratch.dat.iolab-owned   {"dev": 2049, "ino": 1311, "created_utc": ...}

The note lives with the file (no registry to lose at reboot, one per user or machine), and
it names that very file: a file replaced under the same name (another inode, e.g. renamed
over it) is no longer iolab's. (A file deleted and created anew may get the old inode back:
the note cannot tell that one apart.) A note that cannot be written (a folder iolab may not
write) only means the next write to that file asks for ``--allow-destructive`` (fio's files)
or ``--force`` (an output).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path

SUFFIX = ".iolab-owned"


def note_of(path: str | os.PathLike) -> Path:
    """The note beside ``path`` (its real path: a symlink's note is its target's)."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}{SUFFIX}")  # (mark() never writes one for a symlink)


def mark(path: str | os.PathLike) -> bool:
    """Record the regular file ``path`` as iolab's. False when it is not a regular file or
    the note cannot be written (then it stays a user's file to the guard)."""
    from .atomic import write_json

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:  # a symlink or a hard link: maybe a user's file
            return False
        write_json(
            note_of(path),
            {
                "dev": st.st_dev,
                "ino": st.st_ino,
                "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "by": "iolab",
            },
        )
    except OSError:
        return False
    return True


def is_owned(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file iolab created (its note names this very inode)."""
    try:
        st = os.stat(path)
        note = json.loads(note_of(path).read_text())
        return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and (note["dev"], note["ino"]) == (st.st_dev, st.st_ino)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def forget(path: str | os.PathLike) -> None:
    """Remove the note of ``path`` (when iolab removes the file)."""
    with contextlib.suppress(OSError):
        note_of(path).unlink()
