"""How an error reaches the terminal: one line, ``iolab <cmd>: <what happened>; <what to do>``.

``one_line`` joins a message's lines and escapes the control characters it quotes;
``os_error`` says what an OSError (permission, read-only file system, no space, a folder
given for a file) means and what to do about it."""

from __future__ import annotations

import argparse
import errno
import os
import re
from pathlib import Path

from ..core.errors import printable

LONG_WORD = 160  # characters without a space: a quoted input that long is shown as its ends
LONGEST = 2000  # characters of a whole message: past them, a list it quotes is cut
_LONG = re.compile(rf"\S{{{LONG_WORD + 1},}}")


def one_line(text: str) -> str:
    """A message on one line: its non-empty lines joined with '; ', control characters
    from what it quotes (a file's bytes, a name) escaped (``iolab.core.errors.printable``),
    a word of more than ``LONG_WORD`` characters (a path or value it was given) cut to its
    first 100 and last 40 characters, and the whole cut at ``LONGEST``."""
    lines = printable(str(text), keep="\n").split("\n")
    joined = "; ".join(line.strip() for line in lines if line.strip()) or "(no message)"
    joined = _LONG.sub(lambda m: f"{m.group()[:100]}…({len(m.group()) - 140:,} more)…{m.group()[-40:]}", joined)
    return (
        joined
        if len(joined) <= LONGEST
        else f"{joined[: LONGEST - 40]}… ({len(joined) - LONGEST + 40:,} more characters)"
    )


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (exit 2: the usage, then ``iolab CMD: error: ...``)
    quote what they were given as ``one_line`` does: escaped, a long value cut."""

    def error(self, message: str):
        super().error(one_line(message))


OS_ADVICE = {
    errno.EACCES: "check its permissions, or choose a folder you can write ({where})",
    errno.EPERM: "check its permissions, or choose a folder you can write ({where})",
    errno.EROFS: "it is on a read-only file system: choose a folder on a writable one ({where})",
    errno.ENOSPC: "free space there, or choose a folder on another file system ({where})",
    errno.EDQUOT: "free space in your quota, or choose another folder ({where})",
    errno.ENOENT: "check the path",
    errno.EISDIR: "give a file, not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
}


def _setting_of(path: object) -> str | None:
    """The setting that chose the folder ``path`` lies in, when it is iolab's ledger's or its
    locks' (``IOLAB_STATE``, ``IOLAB_LOCKS``), not the data folder."""
    from ..core import paths

    if not isinstance(path, (str, os.PathLike)):
        return None
    for name, folder in (("IOLAB_STATE", paths.state_dir), ("IOLAB_LOCKS", paths.lock_dir)):
        try:
            Path(os.path.abspath(path)).relative_to(os.path.abspath(folder()))
        except (ValueError, OSError):
            continue
        return f"{name}=DIR"
    return None


def os_error(exc: OSError, command: str) -> str:
    """'<path>: <strerror>; <what to do>' for an OSError that reached the command line."""
    where = _setting_of(exc.filename) or (
        "--runs-dir / --scratch-dir, or IOLAB_DATA=DIR" if command == "run" else "IOLAB_DATA=DIR"
    )
    what = exc.strerror or str(exc)
    names = " -> ".join(str(n) for n in (exc.filename, exc.filename2) if n)
    advice = OS_ADVICE.get(exc.errno, "check the path and try again").format(where=where)
    return f"{names + ': ' if names else ''}{what}; {advice}"
