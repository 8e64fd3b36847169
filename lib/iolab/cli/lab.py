"""JupyterLab on the project folder, started one way for ``make lab``, ``iolab lab`` and the
browser tests (tests/test_browser.py), so the tests see what a user sees: its root is the
project (README.md one click away), its file browser opens on ``notebooks/``.

    lab_argv(".")           # [python, -m, jupyter, lab, --ServerApp.root_dir=., ...,
                            #  --LabApp.default_url=/lab/tree/notebooks, ...]
    serve(".", port=8889)   # checks the port, then becomes JupyterLab (exec)

JupyterLab listens on 127.0.0.1 unless another address is asked, always wants a token (it
makes one and prints the URL with it), and opens no browser on a machine without a display.
From a laptop: ``ssh -L 8888:127.0.0.1:8888 user@host``, then open the printed URL.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path

from ..core.errors import InputError
from ..report.kernel import kernel_warning

OPEN_FOLDER = "notebooks"  # the folder of the root the file browser shows first


def lab_argv(
    root: str | os.PathLike,
    port: int = 8888,
    ip: str = "127.0.0.1",
    token: str | None = None,
    open_browser: bool | None = None,
) -> list[str]:
    """The argv that starts this venv's JupyterLab on the folder ``root``, its file browser
    (and the URL it prints) on ``root/notebooks`` when that folder exists.

    ``token=None`` lets JupyterLab make one (or take ``$JUPYTER_TOKEN``) and print the URL
    with it; a token given here is visible to every local user in ``ps``, so prefer
    ``$JUPYTER_TOKEN``. An empty token (no login) is refused. ``open_browser=None`` opens
    one only where a display exists. The port is never moved to a free one silently (a
    moved port would break the ``ssh -L`` forward): a busy port is an error."""
    if token == "":
        raise InputError(
            "an empty token would let anyone who reaches the port run code; "
            "leave the token out (JupyterLab makes one) or give a random one"
        )
    if open_browser is None:
        open_browser = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    argv = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={Path(root)}",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
    ]
    if (Path(root) / OPEN_FOLDER).is_dir():
        argv.append(f"--LabApp.default_url=/lab/tree/{OPEN_FOLDER}")
    argv.append("--ServerApp.open_browser=True" if open_browser else "--no-browser")
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if os.geteuid() == 0:
        argv.append("--allow-root")
    return argv


def check_port(port: str | int) -> int:
    """``port`` as an int, or InputError saying how to give one (``PORT=abc``)."""
    text = str(port).strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise InputError(
            f"port {text!r} is not a port number; give one from 1024 to 65535, "
            "e.g. make lab PORT=8889 (iolab lab --port 8889)"
        )
    return int(text)


def check_free(ip: str, port: int) -> None:
    """InputError unless JupyterLab can listen on ``ip``:``port`` (in use, not an address of
    this machine, or below 1024 without root), each with what to do instead."""
    try:
        infos = socket.getaddrinfo(ip, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):  # UnicodeError: a name part over 63 characters (IDNA)
        infos = []
    if not infos:
        raise InputError(
            f"{ip!r} is not an address JupyterLab can listen on; give 127.0.0.1 (the "
            "default; reach it with ssh -L) or this machine's address, e.g. make lab IP=0.0.0.0"
        )
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as JupyterLab binds
        try:
            s.bind(addr)
        except OSError as exc:
            raise InputError(_bind_advice(exc, ip, port)) from None


def _bind_advice(exc: OSError, ip: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {ip} is in use (another JupyterLab? `ss -ltnp 'sport = :{port}'` "
            f"shows which); choose another: make lab PORT={port + 1} (iolab lab --port {port + 1})"
        )
    if exc.errno == errno.EACCES:
        return f"port {port} needs root (ports below 1024); choose one above 1024, e.g. make lab PORT=8888"
    return f"cannot listen on {ip}:{port} ({exc.strerror}); give an address of this machine, e.g. make lab IP=127.0.0.1"


QUIET = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # README.md and docs/ open rendered (a double-click showed their Markdown source)
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}},
}


def quiet_lab(prefix: str | os.PathLike | None = None) -> Path:
    """JupyterLab's "news" question and update check turned off for this environment (its
    toast covered the first outputs of a notebook), and Markdown opened rendered: ``overrides.json`` in
    ``PREFIX/share/jupyter/lab/settings/`` (``PREFIX``: this venv), other overrides kept. A
    user's own setting still wins. Returns the file."""
    import json

    from ..core.atomic import write_atomic

    path = Path(prefix or sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    try:
        old = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        old = {}  # a broken file is replaced: JupyterLab would ignore it anyway
    merged = {**old, **{k: {**(old.get(k) or {}), **v} for k, v in QUIET.items()}}
    if merged != old:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(merged, indent=2) + "\n")
    return path


def serve(
    root: str | os.PathLike, port: str | int = 8888, ip: str = "127.0.0.1", extra: list[str] | None = None
) -> None:
    """Check the port and the kernel, then replace this process with JupyterLab (Ctrl-C
    then reaches JupyterLab alone). Returns only by raising InputError."""
    import importlib.util

    if importlib.util.find_spec("jupyterlab") is None:
        raise InputError(
            f"JupyterLab is not installed for {sys.executable}: pip install 'iolab[lab]' (in a checkout: make setup)"
        )
    port = check_port(port)
    check_free(ip, port)
    if not Path(root).is_dir():
        raise InputError(f"{str(root)[:120]!r} is not a folder: give the folder JupyterLab should open")
    warning = kernel_warning()
    if warning:
        print(f"iolab lab: {warning}", file=sys.stderr)
    try:
        quiet_lab()
    except OSError as exc:  # a read-only venv: the news toast shows, nothing worse
        print(f"iolab lab: could not turn off JupyterLab's news pop-up ({exc.strerror})", file=sys.stderr)
    argv = lab_argv(root, port=port, ip=ip) + list(extra or [])
    landing = f"/lab/tree/{OPEN_FOLDER}" if (Path(root) / OPEN_FOLDER).is_dir() else "/lab"
    print(
        f"iolab lab: JupyterLab on {root}, http://{ip}:{port}{landing} (the URL with its "
        f"token follows); from a laptop: ssh -L {port}:127.0.0.1:{port} user@this-host",
        flush=True,
    )
    sys.stderr.flush()
    os.execv(argv[0], argv)
