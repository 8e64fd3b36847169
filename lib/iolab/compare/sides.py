"""The two sides of ``iolab compare A B``: any result set read as runs, and what differs
between two of them.

A side is one of

* a run folder (``run.json`` in it), or a study's folder of run folders
  (``data/runs/qd-knee-<time>``), or a folder of study folders (``data/runs``);
* a batch output (``batch.json``: ``iolab batch``), or a folder of them (``iolab seeds --out``);
* an executed notebook (``.ipynb``: its ``metadata["iolab"]`` or result outputs,
  ``iolab.report.reproduce.recorded``).

All become the run folders behind them and their tidy table (``iolab.runs.runcache``; a folder
of run folders through its parquet cache). A side made of several studies (a batch of
several notebooks, ``data/runs`` with several studies) gets a ``part`` column naming the
study each run belongs to — the batch run's name, or the study folder's name without its
time stamp — so a cell never pools two different studies.

``setup(side)`` reads the system snapshots and job options of the first and last run of
each part (``system.json``, ``params.json``): kernel, fio, iolab, machine, CPU, device
model and firmware, governor, scheduler, SMT, turbo, the lab, and the job's fio options
other than the file names and the swept ones. ``differences(a, b)`` lists the keys whose
values differ; ``not_comparable(a, b)`` says why the figures of the two cannot be compared
at all: the devices differ (model, or device kind when no model is known) or the I/O
pattern (``rw``) differs.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.columns import setting_name
from ..core.errors import InputError, RunFileError
from ..core.runfiles import PARAMS_JSON, RUN_JSON
from ..core.runfolders import RUN_FOLDER, is_run, runs_in, runs_under
from ..core.system import MACHINE_FACTS, machine_facts
from ..read.run import RunFolder
from ..runs import runcache

STAMP = re.compile(r"-\d{8}T\d{6}Z$")
NOT_OPTIONS = {"filename", "directory", "cpus_allowed", "numa_cpu_nodes", "name"}
WHAT = (
    "give a run folder, a study's folder of runs (data/runs/<study>), a batch output (with batch.json), "
    "a folder of seed outputs, or an executed notebook (.ipynb)"
)


@dataclass
class Side:
    """One side: where it came from, what it is, its run folders, parts and table."""

    path: Path
    kind: str
    folders: list[Path]
    table: pd.DataFrame
    parts: dict[str, list[Path]] = field(default_factory=dict)
    swept: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.path} ({self.kind}, {self.table['run_id'].nunique() if 'run_id' in self.table else 0} runs)"


def load_side(path: str | os.PathLike | Sequence[str | os.PathLike]) -> Side:
    """The side at ``path`` (see the module docstring), or the run folders a list names (a
    notebook's cells of one setting: ``table.run_folder[table.scheduler == "none"]``)."""
    if isinstance(path, (list, tuple)) or (hasattr(path, "tolist") and not isinstance(path, str)):
        folders = [Path(f) for f in dict.fromkeys(map(str, list(path)))]
        if not folders:
            raise InputError(f"no run folders given: {WHAT}")
        where = Path(os.path.commonpath(folders)) if len(folders) > 1 else folders[0]
        return _side(where, f"{len(folders)} run folders", {_part_name(where): folders})
    given = str(path)
    path = Path(given.strip())
    if not given.strip() or not path.exists():
        raise InputError(f"{given!r} does not exist: {WHAT}")
    if path.is_file():
        if path.suffix != ".ipynb":
            raise InputError(f"{path} is a file but not a notebook: {WHAT}")
        return _side(path, "executed notebook", {path.stem: _notebook_folders(path)})
    if (path / RUN_JSON).is_file() and not (path / "batch.json").exists() and (path / PARAMS_JSON).exists():
        return _side(path, "run folder", {_part_name(path.parent): [path]})
    if (path / "batch.json").is_file():
        return _side(path, "batch output", _batch_parts(path / "batch.json", ""))
    if runs_in(path):
        return _side(path, "runs folder", {_part_name(path): []})
    studies = [run for run in runs_under(path) if (run / PARAMS_JSON).exists()]  # a folder of studies
    if studies:
        parts: dict[str, list[Path]] = {}
        for folder in studies:
            parts.setdefault(_part_name(folder.parent), []).append(folder)
        return _side(path, "folder of studies", parts)
    batches = sorted(path.glob("*/batch.json"))
    if batches:
        parts = {}
        for batch in batches:
            parts.update(_batch_parts(batch, f"{batch.parent.name}/"))
        return _side(path, "seed outputs", parts)
    raise InputError(f"{path} holds no runs, batch output or notebook iolab can read: {WHAT}")


def _side(path: Path, kind: str, parts: dict[str, list[Path]]) -> Side:
    frames, folders = [], []
    for name, part_folders in parts.items():
        if kind == "runs folder":
            table = runcache.load_cached(path)
            part_folders = runs_in(path)
            parts[name] = part_folders
        else:
            present = [f for f in part_folders if is_run(f)]
            gone = [f for f in part_folders if f not in present]
            if gone:
                warnings.warn(
                    f"{len(gone)} of the {len(part_folders)} run folders {path} recorded are gone "
                    f"(first: {gone[0]}); compared without them",
                    stacklevel=3,
                )
            table = runcache.load_runs(present) if present else pd.DataFrame()
        if len(table):  # the set-up is read from the runs compared: not a skipped, failed or copied one
            read = set(table[RUN_FOLDER])
            parts[name] = part_folders = [f for f in part_folders if str(f.absolute()) in read]
            frames.append(table.assign(part=name))
        folders += part_folders
    if not frames:
        raise InputError(f"{path} ({kind}) has no finished run with results: nothing to compare; {WHAT}")
    table = pd.concat(frames, ignore_index=True)
    if table["part"].nunique() < 2:
        table = table.drop(columns="part")
    swept = _swept(folders)
    if "part" in table:
        swept = ["part", *swept]
    return Side(path, kind, folders, table, parts, swept)


def _part_name(folder: Path) -> str:
    return STAMP.sub("", folder.name)


def _notebook_folders(path: Path) -> list[Path]:
    from ..report.reproduce import recorded

    try:
        nb = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{path} is not a notebook (not JSON): {WHAT}") from None
    kept = (nb.get("metadata") or {}).get("iolab") or {} if isinstance(nb, dict) else {}
    listed = kept.get("run_folders") if isinstance(kept, dict) else None
    folders = [Path(f) for f in listed or recorded(nb).get("run_folders") or [] if isinstance(f, str)]
    if not folders:
        raise InputError(
            f"{path} recorded no run folders (iolab.record.results.record_runs): run it with an iolab "
            "notebook to the end, or give the runs folder itself"
        )
    return folders


def _batch_parts(batch_json: Path, prefix: str) -> dict[str, list[Path]]:
    try:
        doc = json.loads(batch_json.read_text())
        runs = [r for r in doc["runs"] if isinstance(r, dict)]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise InputError(f"{batch_json} is not a batch record iolab wrote (cut short?); run the batch again") from None
    parts = {
        f"{prefix}{r.get('name')}": [Path(f) for f in r.get("run_folders") or [] if isinstance(f, str)]
        for r in runs
        if r.get("status") == "ok"
    }
    return {name: folders for name, folders in parts.items() if folders}


def _swept(folders: list[Path]) -> list[str]:
    """The swept settings of the runs (``params.json`` "swept"), first seen first."""
    keys: dict[str, None] = {}
    for folder in _sampled(folders):
        keys.update(dict.fromkeys(_read(folder, RunFolder.params).get("swept") or {}))
    return [k for k in keys if k != "repeat"]


def _sampled(folders: list[Path]) -> list[Path]:
    """Enough runs to know a study's set-up without reading thousands: the first, middle and last."""
    return list(dict.fromkeys(folders[i] for i in (0, len(folders) // 2, -1))) if folders else []


def _read(folder: Path, part) -> dict[str, Any]:
    """``part`` of a run folder (``RunFolder.params``, ``RunFolder.snapshot``); {} when it cannot be read."""
    try:
        return part(RunFolder(folder))
    except (OSError, RunFileError):
        return {}


# ---------------------------------------------------------------- the sides' setups
def setup(side: Side) -> dict[str, str]:
    """What the side ran on and with: key -> value (several values joined by " / ")."""
    return _joined(_part_setup(_sampled(folders)) for folders in side.parts.values())


def part_setups(side: Side) -> dict[str, dict[str, str]]:
    """``setup`` of each part (study) of the side on its own: part name -> key -> value."""
    return {name: _joined([_part_setup(_sampled(folders))]) for name, folders in side.parts.items()}


def option_names(side: Side) -> set[str]:
    """The fio options the side's sampled runs name (``params.json`` fio_options, swept ones
    included), under fio's own names (``iolab.core.columns.setting_name``)."""
    return {
        setting_name(k)
        for folders in side.parts.values()
        for f in _sampled(folders)
        for k in _read(f, RunFolder.params).get("fio_options") or {}
        if k not in NOT_OPTIONS
    }


def unswept_options(side: Side) -> dict[str, dict[str, Any]]:
    """run_id -> {fio option: value or None} (fio's names) for every run of each part whose
    runs differ in an option the part did not sweep (hand-made runs in one folder: iodepth 1
    in one, 32 in the next; ``setup`` leaves such options out), read from every run's
    params.json (not a sample: one run apart must not be pooled with the others); None for an
    option a run did not give. {} when every part's runs agree."""
    out: dict[str, dict[str, Any]] = {}
    for folders in side.parts.values():
        params = [_read(f, RunFolder.params) for f in folders]
        options = [p.get("fio_options") or {} for p in params]
        swept = {setting_name(k) for p in params for k in p.get("swept") or {}}
        keys = {k for o in options for k in o if k not in NOT_OPTIONS and setting_name(k) not in swept}
        varied = {setting_name(k) for k in keys if len({str(o.get(k)) for o in options}) > 1}
        for folder, o in zip(folders, options) if varied else ():
            given = {setting_name(k): v for k, v in o.items()}
            out[folder.name] = {k: given.get(k) for k in varied}  # None: not given (fio's default)
    return out


def _joined(parts) -> dict[str, str]:
    seen: dict[str, dict[str, None]] = {}
    for runs in parts:
        for values in runs:
            for key, value in values.items():
                if value not in (None, "", {}):
                    seen.setdefault(key, {})[str(value)] = None
    return {key: " / ".join(values) for key, values in seen.items()}


def _part_setup(folders: list[Path]) -> list[dict[str, Any]]:
    """The set-up of each sampled run of one study. A fio option is left out when it is
    what the study swept: it varies between the sampled runs, or it is a swept setting, maybe
    under another name (a ``qd`` axis sets ``iodepth``: ``iolab.core.columns.SETTING_ALIASES``).
    Options are keyed by fio's own names."""
    snaps = [_snapshot_of(_read(f, RunFolder.snapshot)) for f in folders]
    params = [_read(f, RunFolder.params) for f in folders]
    options = [p.get("fio_options") or {} for p in params]
    swept = [{k: str(v) for k, v in (p.get("swept") or {}).items() if k != "repeat"} for p in params]
    named = {setting_name(k) for s in swept for k in s}
    keys = dict.fromkeys(k for o in options for k in o if k not in NOT_OPTIONS)
    kept = [k for k in keys if setting_name(k) not in named and len({str(o.get(k)) for o in options}) == 1]
    return [snap | {f"fio {setting_name(k)}": o.get(k) for k in sorted(kept)} for snap, o in zip(snaps, options)]


def _snapshot_of(snap: dict[str, Any]) -> dict[str, Any]:
    """The machine facts of a run's snapshot (``iolab.core.system.MACHINE_FACTS``) under the
    words the set-up table shows; the lab's in words."""
    facts = machine_facts(snap)
    facts["emulated"] = "NVMe lab (emulated)" if facts["emulated"] else "not emulated"
    return {f.words: facts[f.name] for f in MACHINE_FACTS if f.name in facts}


def differences(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str, str]]:
    """(key, A's value, B's value) for every key whose values differ; "-" for a key one side lacks."""
    return [(k, a.get(k, "-"), b.get(k, "-")) for k in dict.fromkeys([*a, *b]) if a.get(k, "-") != b.get(k, "-")]


def not_comparable(a: dict[str, str], b: dict[str, str]) -> str:
    """Why A's and B's figures cannot be compared ("" when they can): a different device
    (its model; the device's kind, loop/vda/nvme, when no model is known) or I/O pattern."""
    if a.get("device model") and b.get("device model"):
        if a["device model"] != b["device model"]:
            return f"the devices differ: {a['device model']} vs {b['device model']}"
    elif _kind(a.get("device", "")) != _kind(b.get("device", "")):
        return f"the devices differ: {a.get('device', '-')} vs {b.get('device', '-')}"
    if a.get("fio rw") and b.get("fio rw") and a["fio rw"] != b["fio rw"]:  # a swept rw: cells match on it
        return f"the I/O patterns differ: rw={a['fio rw']} vs {b['fio rw']}"
    return ""


def _kind(device: str) -> str:
    """nvme0n1 -> nvme, loop3 -> loop, vda -> vd, sdb2 -> sd: the kind of device, not which."""
    return re.sub(r"\d.*$", "", device) if not device.startswith("vd") and not device.startswith("sd") else device[:2]
