"""Whether fio's ``direct=1`` (O_DIRECT) can open what a job names: iolab's default
``direct=1`` is added only where it can, so no default of iolab's makes a job fail that
fio, whose default is ``direct=0``, runs."""

from __future__ import annotations

import errno
import os
import re
import stat

# why O_DIRECT cannot open a path, by what it is
NO_ODIRECT = {
    "char": "a character device takes no O_DIRECT (NVMe passthrough skips the page cache anyway)",
    "pipe": "a pipe takes no O_DIRECT",
    "file": "its file system refuses O_DIRECT",
    "stdio": "fio's - (standard input/output) takes no O_DIRECT",
}


def why_not_direct(filename: str | None) -> str | None:
    """Why O_DIRECT cannot open one of the paths of fio's ``filename`` value (``:``
    separates several), or None when it can (or the path does not exist yet: fio lays it
    out, and its failure causes name a file system that refuses O_DIRECT)."""
    for path in re.split(r"(?<!\\):", filename or ""):
        if path == "-":
            return f"{path}: {NO_ODIRECT['stdio']}"
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if stat.S_ISCHR(mode):
            return f"{path}: {NO_ODIRECT['char']}"
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            return f"{path}: {NO_ODIRECT['pipe']}"
        if stat.S_ISREG(mode) and _refuses_odirect(path):
            return f"{path}: {NO_ODIRECT['file']}"
    return None


def _refuses_odirect(path: str) -> bool:
    """A regular file whose file system refuses ``open(O_DIRECT)`` (EINVAL: tmpfs before
    Linux 6.6, some FUSE and network file systems)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError as exc:
        return exc.errno == errno.EINVAL
    os.close(fd)
    return False
