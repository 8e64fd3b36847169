"""The iolab exception hierarchy.

Library code raises these; only ``iolab.cli`` turns them into a message and an exit
code. Every message says what happened and what to do next.
"""
from __future__ import annotations


class IolabError(Exception):
    """Base of every error iolab raises on purpose (a user error, not a bug)."""


class ToolMissing(IolabError):
    """A command-line tool iolab needs is not installed."""

    def __init__(self, tool: str, package: str):
        self.tool, self.package = tool, package
        super().__init__(
            f"'{tool}' is not installed. Install it with: apt-get install {package} "
            f"(as root), or `make setup` from the iolab checkout."
        )


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


class KnobError(IolabError):
    """A knob (``iolab.knobs``) could not be read, set or put back."""


class KnobUnavailable(KnobError):
    """This machine or target lacks a knob, or the value asked for: refused before
    anything was changed, with the reason ``Knob.check`` gave."""


class NvmeError(KnobError):
    """nvme-cli failed. Carries its argv, exit code and stderr."""

    def __init__(self, argv: list[str], returncode: int, stderr: str):
        self.argv, self.returncode, self.stderr = argv, returncode, stderr
        words = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        super().__init__(f"`{' '.join(argv)}` failed (exit {returncode}): {words}. Check the "
                         "controller path (`nvme list` shows them) and that iolab runs as root.")


class HostError(IolabError):
    """A host of a client/server run is misnamed, unreachable, refuses the connection or
    runs another fio version; the message names each host and what to do."""
