"""The iolab exception hierarchy.

Library code raises these; only ``iolab.cli`` turns them into a message and an exit
code. Every message says what happened and what to do next.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from typing import Any


class IolabError(Exception):
    """Base of every error iolab raises on purpose (a user error, not a bug)."""


class ToolMissing(IolabError):
    """A command-line tool iolab needs is not installed."""

    def __init__(self, tool: str, package: str | None = None, how: str | None = None):
        from .distro import install_line
        from .distro import package as package_of

        self.tool, self.package = tool, package or package_of(tool)
        how = how or f"install it with: {install_line([self.package])} (as root), or `make setup` in the iolab checkout"
        super().__init__(f"'{tool}' is not installed; {how}")


class FioError(IolabError):
    """fio exited non-zero, or reported an error for a job. Carries fio's own words."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = ""):
        self.returncode, self.stderr = returncode, stderr
        super().__init__(message)


class FioOutputError(IolabError):
    """A file holds no fio JSON document that can be read."""


class TargetError(IolabError):
    """The target does not exist, is the wrong kind of file, or cannot be prepared."""


class UnsafeTargetError(TargetError):
    """Writing to this block device would destroy data that is on it."""


class PerfError(IolabError):
    """perf is missing, not permitted, or failed."""


class RunInterrupted(IolabError):
    """A run was stopped before it finished (signal or Ctrl-C); its partial record is kept."""


class DiskFullError(IolabError):
    """No space left where iolab writes its results."""


class SchemaError(IolabError):
    """A stored run was written by another iolab schema version."""


class TioError(IolabError):
    """t/io_uring reported a failure (it exits 0 even when polled IO is unsupported)."""


class BusyError(IolabError):
    """Another measurement holds the CPUs (or output folder) this one needs."""


class InputError(IolabError):
    """A value given to iolab (option, parameter, CPU list, file or folder) cannot be used:
    refused before anything runs, with the form that would work."""


class OutputExists(InputError):
    """An output would replace a file iolab did not write (or an input of the same command),
    or write into a folder holding files iolab did not write: refused before anything runs,
    unless the user gives ``--force`` (``iolab.core.outputs``)."""


class NotComparable(InputError):
    """Two result sets cannot be compared cell by cell: a setting varies inside one side and
    the other side cannot be matched on it (``iolab.compare.matching``). Exit 4: no verdict."""


class KnobError(IolabError):
    """A knob (``iolab.machine.knobs``) could not be read, set or put back."""


class KnobUnavailable(KnobError):
    """This machine or target lacks a knob, or the value asked for: refused before
    anything was changed, with the reason ``Knob.check`` gave."""


class NvmeError(KnobError):
    """nvme-cli failed. Carries its argv, exit code and stderr."""

    def __init__(self, argv: list[str], returncode: int, stderr: str):
        self.argv, self.returncode, self.stderr = argv, returncode, stderr
        words = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        if "Not Changeable" in words:  # the controller refused the value itself (QEMU's emulated NVMe does)
            advice = "This controller keeps the feature fixed: the step cannot run on it."
        else:
            advice = "Check the controller path (`nvme list` shows them) and that iolab runs as root."
        super().__init__(f"`{' '.join(argv)}` failed (exit {returncode}): {words}. {advice}")


class HostError(IolabError):
    """A host of a client/server run is misnamed, unreachable, refuses the connection or
    runs another fio version; the message names each host and what to do."""


# ---------------------------------------------------------------- quoting input in messages
# Terminal output never carries raw control characters from what iolab was given: a file's
# contents or name quoted in a message, or text a command echoes (``iolab parse``/``fold``),
# passes through ``printable``. C0/C1 controls (ESC, CR, NUL, BEL ...), DEL, lone surrogates
# (undecodable bytes of a file name) and the Unicode bidirectional controls (which can make
# a line read backwards: "Trojan Source", CVE-2021-42574) are shown escaped, as Python
# writes them in a string literal.
_UNSAFE = "\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_PATTERNS: dict = {}


def _escaped(match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, keep: str = "\t\n") -> str:
    """``text`` with control characters escaped as Python writes them (``\\x1b``, ``\\r``,
    ``\\x00``, ``\\u202e``), except those in ``keep`` (tab and newline by default)."""
    import re  # here: errors is imported by everything, few print what they were given

    pattern = _PATTERNS.get(keep)
    if pattern is None:
        kept = "".join(f"\\x{ord(c):02x}" for c in keep if ord(c) < 0x100)
        pattern = _PATTERNS[keep] = re.compile(f"(?![{kept}])[{_UNSAFE}]" if kept else f"[{_UNSAFE}]")
    return pattern.sub(_escaped, str(text))


class RunFileError(IolabError):
    """A file of a run folder is missing, empty, cut short or not what iolab wrote there
    (``iolab.core.runfiles``): ``path`` is the file, ``what`` what is wrong (it reads on from the
    path: "is empty (0 bytes)"), ``todo`` what to do."""

    TODO = (
        "restore it from a copy of the run folder, or delete the folder and re-run the experiment "
        "(its argv.json holds the command)"
    )

    def __init__(self, path, what: str, todo: str = ""):
        self.path, self.what, self.todo = path, what, todo or self.TODO
        super().__init__(f"{path} {what}; {self.todo}")


class RunSkipped(UserWarning):
    """A run folder left out of a table (``iolab.runs.runcache.load_runs``): the
    message names the run, the file and what is wrong with it."""


# ---------------------------------------------------------------- in a notebook
BRIEF_HINT = "(an iolab error: what happened and what to do are above; %tb in a new cell shows where it was raised)"


def brief_in_notebooks(shell: Any = None) -> bool:
    """In an IPython kernel, show the kit's own errors (``IolabError``: a user's mistake, its
    message already says what to do) as one short block, the error's name and message,
    instead of a screen of frames that ends in that message; ``%tb`` still shows the whole
    traceback. Other exceptions keep IPython's traceback. ``%load_ext iolab`` calls it.
    True when installed; False outside IPython or when another handler is set."""
    if shell is None:
        from .progress import ipython_shell

        shell = ipython_shell()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    if getattr(shell, "custom_exceptions", ()) not in ((), (IolabError,)):
        return False  # the user's own handler stays
    shell.set_custom_exc((IolabError,), _brief)
    return True


def full_in_notebooks(shell: Any) -> None:
    """Undo ``brief_in_notebooks`` (``%unload_ext iolab``): IPython's own traceback again."""
    if getattr(shell, "custom_exceptions", ()) == (IolabError,):
        shell.set_custom_exc((), None)


def _brief(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython's custom exception handler (``set_custom_exc``): the short block, sent as the
    cell's error (so papermill and the write-ups see the same), the traceback kept for ``%tb``."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    sys.last_exc = value  # Python 3.12's name for it, which %tb reads first there
    from .readable import wrapped  # (readable imports the column registry: not at every import of errors)

    stb = [f"\x1b[1;31m{etype.__name__}\x1b[0m: {wrapped(str(value))}", f"\x1b[2m{BRIEF_HINT}\x1b[0m"]
    shell._showtraceback(etype, value, stb)
    return stb


def with_nearest(names: Sequence[object], known: Sequence[str]) -> str:
    """``'axis' (did you mean 'axes'?), 'x'``: each of ``names`` with the nearest of ``known``."""
    return ", ".join(
        repr(n) + (f" (did you mean {near[0]!r}?)" if (near := difflib.get_close_matches(str(n), known, 1)) else "")
        for n in names
    )
