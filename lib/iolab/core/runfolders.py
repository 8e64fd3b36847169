"""Which run folders a table, a folder or a list names: the one rule that finds them.

A table names its runs by ``run_id``; each is looked for in the runs folder (``runs_dir``,
``iolab.core.paths.runs_dir()`` by default) or one level below it (a study's folder). A path
is a run folder (it holds ``run.json``) or a folder of run folders (one level down; names
starting with ``.`` are not runs)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import paths
from .errors import InputError


def run_folders(runs: Any, runs_dir: str | os.PathLike | None = None) -> tuple[list[Path], list[str]]:
    """(the absolute run folders ``runs`` names, the run ids that were not found); see
    ``record_runs`` for what ``runs`` may be."""
    found: list[Path] = []
    missing: list[str] = []
    items = [runs] if hasattr(runs, "columns") or isinstance(runs, (str, os.PathLike)) else list(runs)
    for item in items:
        if hasattr(item, "columns"):
            ids = [i for i in dict.fromkeys(item["run_id"]) if isinstance(i, str)] if "run_id" in item else []
            located = _locate(ids, Path(runs_dir) if runs_dir else paths.runs_dir())
            found += located.values()
            missing += [i for i in ids if i not in located]
            continue
        path = Path(item).absolute()
        if (path / "run.json").exists():
            found.append(path)
        elif path.is_dir():
            found += sorted(p.parent for p in path.glob("*/run.json") if not p.parent.name.startswith("."))
        else:
            raise InputError(
                f"{path} is neither a run folder (with run.json) nor a folder of run folders; "
                "give the folder a sweep wrote, or the table it returned"
            )
    return list(dict.fromkeys(found)), missing


def _locate(run_ids: list[str], root: Path) -> dict[str, Path]:
    """run id -> its folder in ``root`` or one level below (a study's folder). Folders that
    held one run are tried first for the next: a study's runs live together."""
    parents = [root] + (sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else [])
    out: dict[str, Path] = {}
    for run_id in run_ids:
        for parent in parents:
            if (parent / run_id / "run.json").exists():
                out[run_id] = (parent / run_id).absolute()
                parents.remove(parent)
                parents.insert(0, parent)
                break
    return out
