"""Files written whole or not at all: the text goes to a temporary name beside the file,
then is renamed over it, so a reader sees the old file or the new one, never half of one.

    write_atomic("data/runs/x/run.json", text)
    write_json("data/runs/x/params.json", {"swept": {"qd": 32}})
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from pathlib import Path
from typing import Any

from .errors import DiskFullError


def write_atomic(path: str | os.PathLike, text: str | bytes) -> None:
    """Write ``text`` (or bytes) to a temporary name beside ``path``, then rename over it.
    DiskFullError, saying what to do, when the disk is full (the temporary file is removed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_bytes(text) if isinstance(text, bytes) else tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(
                f"no space left to write {path}: free space on {path.parent}, or write elsewhere (IOLAB_DATA=DIR for data/, --runs-dir or --out for a command)"
            ) from exc
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """``obj`` as indented JSON with sorted keys (values JSON lacks as ``str``), atomically."""
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")
