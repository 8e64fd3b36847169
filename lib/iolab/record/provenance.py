"""Where a write-up's numbers came from: the iolab checkout (version, git commit, whether
the tree had changes), tool and Python package versions, the machine, the run folders with a
digest of their raw outputs, and the command that runs the notebook again.

    checkout()                       # {"commit": "629840c…", "dirty": True, "changed": 3, ...}
    package_versions()               # {"pandas": "2.2.3", "kneed": "0.8.5", ...}
    folder_digest("data/runs/qd-knee-…")   # {"sha256": "…", "files": 240, "bytes": 2834113}
    rerun_command("/…/notebooks/01_queue_depth_knee.ipynb", {"runtime_s": 1.0})

Nothing here writes. What cannot be read (no git, a package not installed, a run folder
that is gone) is ``None`` with the reason beside it, never a made-up value.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core import paths, runfiles
from ..core.errors import RunFileError
from ..core.runfiles import CHECKS_JSON, RUN_JSON, SYSTEM_JSON
from ..core.system import snapshot
from ..core.version import __version__

#: The Python packages whose versions can change a number or a picture (pyproject's
#: dependencies that compute, draw, run or export notebooks).
PACKAGES = (
    "pandas",
    "numpy",
    "scipy",
    "matplotlib",
    "seaborn",
    "kneed",
    "pyarrow",
    "PyYAML",
    "papermill",
    "nbclient",
    "nbformat",
    "nbconvert",
    "ipykernel",
    "jupyter_client",
    "ipywidgets",
)

#: Files of a run folder left out of its digest: run.json is iolab's bookkeeping (status,
#: start/finish times, pid, wall time), rewritten when `iolab cleanup` marks a run, not a
#: measurement. Names starting with "." (locks, caches such as .iolab-table.parquet,
#: temporary files of atomic writes) are left out too.
NOT_DIGESTED = (RUN_JSON,)


def checkout(where: str | os.PathLike = paths.PACKAGE) -> dict[str, Any]:
    """The git checkout iolab runs from: ``commit`` (HEAD), ``dirty`` (tracked files changed
    or untracked files present, as ``git status --porcelain`` sees them), ``changed`` and
    ``untracked`` counts, ``repo`` (its top folder). ``commit`` is None with ``why`` when
    iolab is not in a git checkout (an installed wheel) or git is missing."""
    out: dict[str, Any] = {
        "iolab_version": __version__,
        "repo": None,
        "commit": None,
        "dirty": None,
        "changed": None,
        "untracked": None,
        "why": "",
    }
    try:
        top = _git(where, "rev-parse", "--show-toplevel")
        out["repo"], out["commit"] = top, _git(where, "rev-parse", "HEAD")
        status = _git(top, "status", "--porcelain").splitlines()
    except FileNotFoundError:
        out["why"] = "git is not installed"
        return out
    except subprocess.CalledProcessError as exc:
        words = (exc.stderr or "").strip().splitlines()
        out["repo"] = out["commit"] = None
        out["why"] = f"{where} is not in a git checkout (an installed package?): {words[0] if words else 'git failed'}"
        return {**out, **_built_from(where)}
    except subprocess.TimeoutExpired:
        out["why"] = "git did not answer within 10 s"
        return out
    out["untracked"] = sum(line.startswith("??") for line in status)
    out["changed"] = len(status) - out["untracked"]
    out["dirty"] = bool(status)
    return out


def _built_from(where: str | os.PathLike) -> dict[str, Any]:
    """An installed wheel's commit, as setup.py wrote it at build time (``iolab/kit/build.json``)."""
    try:
        built = json.loads((Path(where) / "kit" / "build.json").read_text())
        commit, dirty = str(built["commit"]), bool(built.get("dirty"))
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    changes = " with uncommitted changes" if dirty else ""
    return {"commit": commit, "dirty": dirty, "why": f"an installed wheel built from commit {commit[:12]}{changes}"}


def _git(where: str | os.PathLike, *args: str) -> str:
    """``git -C where ARGS``'s output, without the notebooks' nbstripout filter: in a fresh
    clone every notebook is "racily clean", and ``git status`` ran the filter (a Python start
    and nbformat's import per notebook) on all of them at every call, past this call's 10 s
    limit, at each run a notebook records (benchmarks/README.md). Without it a notebook with
    outputs in the working copy counts as changed, which it is."""
    return subprocess.run(
        ["git", "-c", "filter.nbstripout.clean=", "-C", str(where), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout.strip()


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (importlib.metadata); None if not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def tool_versions(machine: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """Kernel, fio, perf (from ``machine``, a ``system.snapshot`` or a run folder's
    system.json, else this machine now) and the Python that publishes."""
    machine = machine or snapshot()
    return {
        "kernel": machine.get("kernel"),
        "fio": machine.get("fio_version"),
        "perf": machine.get("perf_version"),
        "python": platform.python_version(),
    }


def folder_digest(folder: str | os.PathLike) -> dict[str, Any]:
    """SHA-256 of a run folder's raw outputs (fio.json, tio.txt, perf files, params.json,
    job.fio, argv.json, system.json, samples — every file below ``folder``, sub-folders
    included, except ``NOT_DIGESTED`` and names starting with "."). For each file, in the
    order of its path relative to ``folder`` (POSIX, sorted), the digest takes
    ``path NUL size NUL bytes``; a symbolic link is taken as ``path NUL -> NUL target``
    (not followed). Two copies of a folder have the same digest whatever their location
    or file times. Returns ``sha256``, ``files``, ``bytes``; ``sha256`` None with ``why``
    when the folder is missing or unreadable."""
    root = Path(folder)
    out: dict[str, Any] = {"path": str(root), "sha256": None, "files": 0, "bytes": 0, "why": ""}
    if not root.is_dir():
        out["why"] = "not on this machine" if not root.exists() else "not a folder"
        return out
    digest = hashlib.sha256()
    try:
        for rel in sorted(_digested(root)):
            path = root / rel
            digest.update(rel.encode() + b"\0")
            if path.is_symlink():
                digest.update(b"->\0" + os.readlink(path).encode())
                continue
            data = path.read_bytes()
            digest.update(str(len(data)).encode() + b"\0" + data)
            out["files"] += 1
            out["bytes"] += len(data)
    except OSError as exc:
        out.update(files=0, bytes=0, why=f"unreadable: {exc.strerror or exc}")
        return out
    out["sha256"] = digest.hexdigest()
    return out


def _digested(root: Path) -> list[str]:
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith(".") and name not in NOT_DIGESTED:
                found.append(Path(here, name).relative_to(root).as_posix())
        found += [Path(here, d).relative_to(root).as_posix() for d in dirs if Path(here, d).is_symlink()]
    return found


PAPERMILL = "papermill"  # how a kernel papermill runs says it (``papermill_parent``)
INJECTED = "# Parameters\n"  # the first line of the cell papermill injects with -p/-y


def papermill_parent(inputs: Iterable[str] = ()) -> tuple[str | None, str | None] | None:
    """(input notebook, output notebook), absolute, when this kernel was started by
    papermill's command line (``papermill IN.ipynb OUT.ipynb -p ...``: its parent process);
    (None, None) when papermill ran it from Python (its injected parameters cell among
    ``inputs``, the kernel's ``In``: the paths are not known to the kernel); None otherwise."""
    ppid = os.getppid()
    try:
        words = [w.decode(errors="replace") for w in Path(f"/proc/{ppid}/cmdline").read_bytes().split(b"\0") if w]
        cwd = os.readlink(f"/proc/{ppid}/cwd")
    except OSError:
        words, cwd = [], "/"
    if any(Path(w).name == PAPERMILL for w in words[:3]):
        books = [str(Path(cwd, w)) for w in words if w.endswith(".ipynb")] + [None, None]
        return books[0], books[1]
    if any(isinstance(cell, str) and cell.startswith(INJECTED) for cell in inputs):
        return None, None
    return None


def machine_of(run_folders: Iterable[str | os.PathLike]) -> tuple[dict[str, Any], str]:
    """The machine snapshot stored with the first run (``system.json`` of the first run
    folder that has one, searched below each folder), and where it came from; this
    machine now when no run folder has one."""
    for folder in run_folders:
        for found in sorted(Path(folder).glob(f"**/{SYSTEM_JSON}")) if Path(folder).is_dir() else []:
            try:
                return runfiles.read_json(found), f"stored with the run in {found}"
            except (OSError, RunFileError):
                continue
    return snapshot(), "this machine when the write-up was made (no run folder holds a system.json)"


def emulated(run_folders: Iterable[str | os.PathLike]) -> str | None:
    """What the NVMe lab said of itself (``iolab.nvmelab.vm``) when a run among ``run_folders``
    was made there, or when this process runs in the lab; else None."""
    for folder in run_folders:
        for found in sorted(Path(folder).glob(f"**/{SYSTEM_JSON}")) if Path(folder).is_dir() else []:
            try:
                said = runfiles.read_json(found).get("emulated")
            except (OSError, RunFileError):
                continue
            if said:
                return str(said)
    return os.environ.get("IOLAB_NVMELAB") or None


def shared_cpu_note(run_folders: Iterable[str | os.PathLike]) -> str:
    """ "shared CPU: up to 53 % other programs (2 of 3 runs)" when the stored ``shared_cpu``
    checks (``checks.json``, ``iolab.read.checks``) of ``run_folders`` failed, else "": what a
    recorded result carries beside its number (the history's ``flags``)."""
    folders = [Path(f) for f in run_folders]
    shares = []
    for folder in folders:
        try:
            found = runfiles.read_json(folder / CHECKS_JSON, optional=True) or {}
        except RunFileError:
            continue
        for c in found.get("checks") or [] if isinstance(found, dict) else []:
            if isinstance(c, dict) and c.get("name") == "shared_cpu" and c.get("passed") is False:
                shares.append((c.get("figures") or {}).get("other_cpu_pct"))
    if not shares:
        return ""
    top = max((v for v in shares if isinstance(v, (int, float)) and v == v), default=None)
    most = f"up to {top:.0f} % other programs" if top is not None else "other programs or steal"
    return f"shared CPU: {most} ({len(shares)} of {len(folders)} runs)"


def machine_rows(snap: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A snapshot as short (what, value) rows for a table: per-CPU values folded when they
    agree, lspci's tree and empty values left out, what is absent with its reason."""

    def fold(per_cpu: Mapping[Any, Any] | None, unit: str = "") -> str:
        values = {str(v) for v in (per_cpu or {}).values()}
        if not values:
            return ""
        if len(values) == 1:
            return f"{values.pop()}{unit} (all CPUs)"
        return ", ".join(f"cpu{k}: {v}{unit}" for k, v in (per_cpu or {}).items())

    queue = snap.get("queue") or {}
    pci = snap.get("pci") or {}
    rows = [
        ("host", snap.get("hostname")),
        ("kernel", snap.get("kernel")),
        ("CPU", snap.get("cpu_model")),
        ("CPUs online", _cpulist(snap.get("cpus_online"))),
        ("CPUs measured", _cpulist(snap.get("cpus_in_use"))),
        ("SMT", snap.get("smt")),
        ("turbo", snap.get("turbo")),
        ("governor", fold(snap.get("governor")) if any((snap.get("governor") or {}).values()) else None),
        (
            "scaling_cur_freq",
            fold(snap.get("scaling_cur_freq_khz"), " kHz")
            if any((snap.get("scaling_cur_freq_khz") or {}).values())
            else None,
        ),
        ("cpu MHz (/proc/cpuinfo)", fold(snap.get("cpuinfo_mhz"))),
        ("fio", snap.get("fio_version")),
        ("perf", snap.get("perf_version")),
        ("perf_event_paranoid", snap.get("perf_event_paranoid")),
        ("device", snap.get("device")),
        ("scheduler", queue.get("scheduler_active") or queue.get("scheduler")),
        (
            "queue",
            ", ".join(
                f"{k}={v}"
                for k, v in queue.items()
                if k not in ("scheduler", "scheduler_active", "schedulers_available") and v is not None
            ),
        ),
        ("NVMe driver", ", ".join(f"{k}={v}" for k, v in (snap.get("nvme") or {}).items())),
        ("PCIe", " ".join(f"{k}={v}" for k, v in pci.items() if k != "lspci_tree" and v)),
    ]
    rows += [(f"absent: {k}", v) for k, v in (snap.get("absent") or {}).items()]
    return [(k, str(v)) for k, v in rows if v not in (None, "", [], {})]


def machine_facts(snap: Mapping[str, Any]):
    """``machine_rows`` as a two-column table ("fact", "value") for a notebook to show."""
    import pandas as pd

    return pd.DataFrame(machine_rows(snap), columns=["fact", "value"])


def _cpulist(cpus: Any) -> str | None:
    return ",".join(map(str, cpus)) if isinstance(cpus, (list, tuple)) else cpus


def rerun_command(
    input_path: str | os.PathLike | None, parameters: Mapping[str, Any], output: str = "out.ipynb"
) -> str | None:
    """The papermill command that runs the notebook again with the same parameters, from
    the iolab checkout (``.venv/bin/papermill notebooks/… out.ipynb -p …``). Strings go
    as ``-r`` (raw: "1" stays a string), numbers, booleans and None as ``-p``, lists and
    dicts as ``-y 'name: [1, 2]'`` (papermill -p would pass them as a string). None when
    the notebook's input path is unknown."""
    if not input_path:
        return None
    path = Path(input_path)
    inside = path.is_absolute() and path.is_relative_to(paths.REPO)
    argv = [
        ".venv/bin/papermill" if inside else "papermill",
        str(path.relative_to(paths.REPO)) if inside else str(path),
        output,
    ]
    for name, value in parameters.items():
        if isinstance(value, str):
            argv += ["-r", name, value]
        elif value is None or isinstance(value, (bool, int, float)):
            argv += ["-p", name, str(value)]
        else:
            argv += ["-y", f"{name}: {json.dumps(value, default=str)}"]
    return shlex.join(argv)
