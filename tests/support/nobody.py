"""A command run as user nobody, who must be able to read the checkout: through a bind mount
in a private mount namespace where the clone sits in a folder only root can enter."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.paths import REPO

NOBODY = 65534
_BIND_AND_EXEC = (
    "import os, subprocess, sys\n"
    "subprocess.run(['mount', '--bind', sys.argv[1], sys.argv[2]], check=True)\n"
    "os.execvp(sys.argv[3], sys.argv[3:])"
)


def reachable_by_others(path: Path) -> bool:
    """Every folder from / down to ``path`` lets other users through (o+x)."""
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def run_as_nobody(argv, *, env=None, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run(argv)`` as user nobody, who must be able to read this checkout (its
    ``.venv`` and ``lib``). A clone in a folder only root can enter (a home folder, /root,
    ``mktemp -d``) is bind-mounted onto a world-readable folder inside a private mount
    namespace (``unshare --mount``: the mount ends with the process, nothing to undo), and
    the paths of the checkout in ``argv`` and ``env`` are given as seen through it. Skipped,
    with the reason, where that cannot be done."""
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = dict(os.environ if env is None else env)
    if reachable_by_others(REPO):
        return subprocess.run([*drop, *map(str, argv)], env=env, **kw)
    if not shutil.which("unshare"):
        pytest.skip(f"user nobody cannot read {REPO} and unshare is missing to show it through a bind mount")
    view = Path(tempfile.mkdtemp(prefix="iolab-checkout-"))
    try:
        view.chmod(0o755)
        seen = lambda s: str(s).replace(str(REPO), str(view))  # noqa: E731
        env = {k: seen(v) for k, v in env.items()}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(view / "lib"), env.get("PYTHONPATH")]))
        runner = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-c",
            _BIND_AND_EXEC,
            str(REPO),
            str(view),
            *drop,
            *map(seen, argv),
        ]
        done = subprocess.run(runner, env=env, **kw)
        if done.returncode != 0 and "mount" in (done.stderr or "") and "Traceback" in (done.stderr or ""):
            pytest.skip(f"user nobody cannot read {REPO}, and a bind mount to show it failed: {done.stderr[-300:]}")
        return done
    finally:
        view.rmdir()
