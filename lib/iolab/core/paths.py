"""Every path iolab uses by default, defined once.

The project folder (``REPO``) is the checkout iolab was installed from (editable install),
else the workspace ``iolab init DIR`` made that holds the current folder (``WORKSPACE_MARK``
in it or a parent), else the current folder. Its ``notebooks/`` and ``data/`` are the kit's;
the data folder is ``$IOLAB_DATA`` if set, else ``data/`` there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import InputError

PACKAGE = Path(__file__).resolve().parents[1]  # lib/iolab: this module is in lib/iolab/core
WORKSPACE_MARK = ".iolab-workspace"  # written by iolab init (iolab.report.workspace)
_CHECKOUT = PACKAGE.parents[1]
IN_CHECKOUT = (_CHECKOUT / "pyproject.toml").exists() and (_CHECKOUT / "notebooks").is_dir()


def _project() -> Path:
    if IN_CHECKOUT:
        return _CHECKOUT
    here = Path.cwd()
    return next((p for p in (here, *here.parents) if (p / WORKSPACE_MARK).is_file()), here)


REPO = _project()
NOTEBOOKS = REPO / "notebooks"
PAPERMILL_RUNS = REPO / "papermill_runs"


def data_dir() -> Path:
    return env_path("IOLAB_DATA") or REPO / "data"


def runs_dir() -> Path:
    return data_dir() / "runs"


def scratch_dir() -> Path:
    return data_dir() / "scratch"


def history_dir() -> Path:
    """The default folder of the results history (``iolab.record.history``; ``$IOLAB_HISTORY``
    overrides it there): ``history/`` in the data folder."""
    return data_dir() / "history"


def reference_dir() -> Path:
    return REPO / "data" / "reference"


def kit_dir() -> Path:
    """Where the kit's own notebooks and data come from for ``iolab init``: the checkout, or
    ``iolab/kit`` inside an installed wheel (setup.py puts them there)."""
    return _CHECKOUT if IN_CHECKOUT else PACKAGE / "kit"


def state_dir() -> Path:
    """Where iolab keeps its ledger and locks: ``$IOLAB_STATE``, else ``/run/iolab`` for root
    (tmpfs: cleared at boot, like the loop devices and knob values it records), else
    ``$XDG_RUNTIME_DIR/iolab`` or ``/tmp/iolab-<uid>``."""
    if env_path("IOLAB_STATE"):
        return env_path("IOLAB_STATE")
    if os.geteuid() == 0 and Path("/run").is_dir():
        return Path("/run/iolab")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "iolab" if runtime else Path(f"/tmp/iolab-{os.geteuid()}")


def lock_dir() -> Path:
    """Per-CPU locks, shared by every user of the machine (a sticky, world-writable folder,
    like /tmp): ``$IOLAB_LOCKS``, else ``/run/lock/iolab`` or ``/tmp/iolab-locks``."""
    if env_path("IOLAB_LOCKS"):
        return env_path("IOLAB_LOCKS")
    return Path("/run/lock/iolab") if Path("/run/lock").is_dir() else Path("/tmp/iolab-locks")


# how targets are named everywhere (iolab.machine.target.parse_spec); here, so the command line's help
# needs no import of the target module
TARGET_HELP = (
    "'scratch' (a scratch file), 'loop' or 'loop:SIZE' (a tmpfs-backed loop device, root), "
    "an existing file or block device path, or a list of them"
)


# ---------------------------------------------------------------- the environment
# IOLAB_* values are read here, checked: a value no folder or time can be is one line
# naming the variable (InputError), never a traceback.
def env_path(name: str) -> Path | None:
    """The folder the environment variable ``name`` gives (IOLAB_DATA, IOLAB_STATE,
    IOLAB_LOCKS), or None when it is unset or empty; InputError for a value no folder can
    have (control characters, e.g. a pasted escape sequence or newline)."""
    value = os.environ.get(name, "")
    if not value:
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(
            f"{name}={value!r} holds control characters, which no folder name should; "
            f"set {name} to a plain folder path, or unset it for iolab's default"
        )
    return Path(value)


def env_seconds(name: str, default: float) -> float:
    """Seconds from the environment variable ``name`` (``default`` when unset or empty): a
    finite number >= 0, else InputError naming the variable and a value that works."""
    import math

    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        shown = repr(text if len(text) <= 40 else text[:39] + "…")
        raise InputError(
            f"{name}={shown} is not a finite number of seconds >= 0; set e.g. "
            f"{name}={default:g}, or unset it (default {default:g} s)"
        )
    return value


# ---------------------------------------------------------------- names that become folders
# Every name iolab joins into a path (search names, batch run names, host folders, sweep
# folders) goes through ``check_name`` (refused: names the user chose as identifiers) or
# ``safe_name`` (sanitised: names made from values, e.g. a batch grid cell's parameters).
NAME_MAX = 100  # characters; file systems allow 255 bytes, and a run folder adds a time stamp
NAME_CHARS = "ASCII letters, digits and . _ = - (not starting with . or -)"
_NAME = re.compile(r"[A-Za-z0-9_=][A-Za-z0-9._=-]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]")


def check_name(name: object, what: str, how: str) -> str:
    """``name`` when it is a safe folder name: 1 to ``NAME_MAX`` characters of ``NAME_CHARS``
    (so never ``..``, a slash, NUL or a hidden name); else InputError naming ``what`` it is
    (e.g. "search name") and ``how`` to give another (e.g. "name: in the spec")."""
    text = str(name)
    if _NAME.fullmatch(text) and len(text) <= NAME_MAX:
        return text
    bad = [c for c in text if _UNSAFE.fullmatch(c) and c not in "/\\"][:1]
    why = (
        "is empty"
        if not text
        else f"has {len(text)} characters (at most {NAME_MAX})"
        if len(text) > NAME_MAX
        else "would leave its folder"
        if "/" in text or "\\" in text or text in (".", "..")
        else f"has {bad[0]!r}"
        if bad
        else f"starts with {text[0]!r}"
    )
    shown = repr(text[:60] + ("…" if len(text) > 60 else ""))
    raise InputError(
        f"{what} {shown} {why}: it becomes a folder name, so use only {NAME_CHARS}, "
        f"at most {NAME_MAX} characters, e.g. {safe_name(text, limit=40)!r}; give it with {how}"
    )


def safe_name(
    text: object, fill: str = "-", fallback: str = "run", limit: int = NAME_MAX, per_char: bool = False
) -> str:
    """``text`` made into one folder name that stays inside its folder: each run of
    characters other than ASCII letters, digits and ``. _ = -`` becomes ``fill`` (each such
    character with ``per_char``); leading dots and dashes go (no ``.``, ``..`` or hidden
    name), and trailing dashes; ``fallback`` if nothing is left.
    A name over ``limit`` characters keeps its start plus ``-`` and 8 hex digits of the
    SHA-256 of ``text``, so two long names stay two."""
    name = re.sub(_UNSAFE.pattern + ("" if per_char else "+"), fill, str(text)).lstrip(".-").rstrip("-") or fallback
    if len(name) > limit:
        import hashlib  # here: its import costs every command's start-up

        digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = name[: limit - 9].rstrip(".-") + "-" + digest
    return name


def inside(root: str | os.PathLike, name: str) -> Path:
    """``root / name`` when it stays inside ``root`` (symbolic links resolved); InputError
    otherwise: the last check before a name becomes a folder."""
    root = Path(root)
    path = root / name
    if os.path.isabs(name) or not path.resolve().is_relative_to(root.resolve()):
        raise InputError(f"{name!r} would put files outside {root}; give a plain name ({NAME_CHARS})")
    return path
