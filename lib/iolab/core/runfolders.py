"""Which run folders a table, a folder or a list names: the one rule that finds them.

A table made by the loader (``iolab.runs.runcache.load_runs``) holds each row's run folder,
an absolute path, in its ``run_folder`` column (``RUN_FOLDER``): its runs are those folders.
A table without it (built by hand, or whose folders have moved) names its runs by
``run_id``; each is looked for in the runs folder (``iolab.core.paths.runs_dir()``) or one
level below it (a study's folder). A path is a run folder (it holds ``run.json``) or a
folder of run folders (``runs_in``: one level down, names starting with ``.`` are not runs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import paths
from .errors import InputError
from .runfiles import RUN_JSON

RUN_FOLDER = "run_folder"  # the table column holding each row's run folder (absolute path)


def run_folders(runs: Any) -> tuple[list[Path], list[str]]:
    """(the absolute run folders ``runs`` names, the run ids that were not found). ``runs``: a
    table (its ``run_folder`` column, else its ``run_id`` looked up under the runs folder),
    a run folder, a folder of run folders, or a list of those."""
    found: list[Path] = []
    missing: list[str] = []
    items = [runs] if hasattr(runs, "columns") or isinstance(runs, (str, os.PathLike)) else list(runs)
    for item in items:
        if hasattr(item, "columns"):
            located = of_table(item)
            found += located.values()
            ids = [i for i in dict.fromkeys(item["run_id"]) if isinstance(i, str)] if "run_id" in item else []
            missing += [i for i in ids if i not in located]
            continue
        path = Path(item).absolute()
        if is_run(path):
            found.append(path)
        elif path.is_dir():
            found += runs_in(path)
        else:
            raise InputError(
                f"{path} is neither a run folder (with {RUN_JSON}) nor a folder of run folders; "
                "give the folder a sweep wrote, or the table it returned"
            )
    return list(dict.fromkeys(found)), missing


def is_run(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` is a run folder: it holds run.json (a finished run)."""
    return os.path.exists(os.path.join(folder, RUN_JSON))


def runs_in(root: str | os.PathLike) -> list[Path]:
    """The run folders directly in ``root``, by name; hidden folders (``.tmp-*`` being
    written, others) are not runs. One listing and a lookup per folder (a glob costs ten
    times as much with 100,000 runs); none when ``root`` cannot be listed."""
    root = Path(root)
    return [root / name for name in _visible_folders(root) if is_run(root / name)]


def runs_under(root: str | os.PathLike) -> list[Path]:
    """The run folders ``root`` holds: itself when it is one, else those directly in it and
    in its folders one level below (a runs folder of studies' folders), by path."""
    root = Path(root)
    if is_run(root):
        return [root]
    return sorted([*runs_in(root), *(run for sub in _folders(root) for run in runs_in(sub))])


def _folders(root: Path) -> list[Path]:
    """The folders directly in ``root`` that are not runs and not hidden, by name."""
    return [root / name for name in _visible_folders(root) if not is_run(root / name)]


def _visible_folders(root: Path) -> list[str]:
    """The names of the folders directly in ``root`` that are not hidden, sorted; none when
    ``root`` cannot be listed (missing, not a folder, not readable: as a glob finds none). An
    entry that cannot be looked at (a symbolic link in a loop) is not a folder: it alone is
    passed over, not the whole listing."""
    try:
        with os.scandir(root) as it:
            return sorted(e.name for e in it if not e.name.startswith(".") and _is_dir(e))
    except OSError:
        return []


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def not_found(missing: list[str]) -> str:
    """Why a table's runs ``missing`` (run ids) were not found, and what to give instead."""
    return (
        f"{len(missing)} run(s) of the table (e.g. {missing[0]}) have no {RUN_FOLDER} that holds them "
        f"and are not under {paths.runs_dir()} or one level below: give their run folders instead "
        "(the folder the study wrote, or a list of run folders)"
    )


def of_table(table: Any) -> dict[str, Path]:
    """run id -> its folder, for the runs of a table in its order: by ``run_folder`` where
    that folder still holds a run, else looked up by ``run_id`` (``_locate``)."""
    out: dict[str, Path] = {}
    if "run_id" not in table:
        return out
    if RUN_FOLDER in table:
        for run_id, folder in zip(table["run_id"], table[RUN_FOLDER]):
            if isinstance(run_id, str) and isinstance(folder, str) and run_id not in out and is_run(folder):
                out[run_id] = Path(folder)
    ids = [i for i in dict.fromkeys(table["run_id"]) if isinstance(i, str)]
    rest = [i for i in ids if i not in out]
    if rest:
        out |= _locate(rest, paths.runs_dir())
    return {i: out[i] for i in ids if i in out}


def _locate(run_ids: list[str], root: Path) -> dict[str, Path]:
    """run id -> its folder in ``root`` or one level below (a study's folder). Folders that
    held one run are tried first for the next: a study's runs live together."""
    parents = [root, *_folders(root)]
    out: dict[str, Path] = {}
    for run_id in run_ids:
        for parent in parents:
            if is_run(parent / run_id):
                out[run_id] = (parent / run_id).absolute()
                parents.remove(parent)
                parents.insert(0, parent)
                break
    return out
