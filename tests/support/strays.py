"""Tools the session started and left running: every tool iolab starts carries a ledger token
in its environment (``iolab.machine.process.TOKEN``), and the suite's have their working
folder or their state folder in the session's temporary folder. At the session's end, on
the controller, any still running are stopped and fail the session, named by what they ran
and where (the test's own folder names the test)."""

import os
import signal
from pathlib import Path

from iolab.machine.process import TOKEN, token_of


def _environ(pid: int) -> dict[bytes, bytes]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.partition(b"=")[::2] for item in raw.split(b"\0") if item)


def stop_strays(base: Path) -> list[str]:
    """Stop (SIGKILL, by pid) the tools iolab started under ``base`` that still run; one
    line for each: its pid, argument list and working folder."""
    said = []
    inside = str(base).rstrip("/") + "/"  # not pytest-50's when base is pytest-5
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            env = _environ(pid)
            cwd = os.readlink(f"/proc/{pid}/cwd")
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone, or a kernel thread
            continue
        if token_of(pid) in (None, os.environ.get(TOKEN)) or not (
            (cwd + "/").startswith(inside) or any(inside.encode() in v + b"/" for v in env.values())
        ):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        said.append(f"pid {pid} `{argv}` in {cwd}")
    return said
