"""Reproduce an executed notebook: run its source notebook again with the parameters it ran
with, and compare each result it recorded (``iolab.record.results``) with the new one.

    report = reproduce("papermill_runs/01_queue_depth_knee.ipynb")
    print(report.text())      # the table: original, re-run, difference %, agreement
    report.agrees             # every result inside its original interval, or within tolerance

A result with an interval [low, high] agrees when the new value lies inside it; one without
agrees when it is within ``tolerance_pct`` % of the original (a string or None: when it is
the same). When something drifted, the machine is compared as ``iolab.stats.drift`` compares the
runs of a study (kernel, fio version, governor, frequency source, scheduler, SMT, target
state): the first original run folder's snapshot against the re-run's first run folder, or
against the machine now (``iolab.core.system.snapshot``) when the re-run recorded no runs.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import paths, system
from ..core.atomic import write_json
from ..core.errors import InputError
from ..core.outputs import claim_folder, claim_output
from ..core.runfiles import RUN_JSON, SYSTEM_JSON
from ..core.validate import input_file, notebook_file
from ..machine.sampling import read_freq_mhz
from ..read.run import RunFolder
from ..record import results
from ..runs import producers, runcache
from ..stats import drift
from .publish import execute


@dataclass
class Row:
    """One recorded result: the original and the re-run's value, the difference in % of
    the original (None when not two numbers), whether they agree and by which rule."""

    name: str
    unit: str
    original: Any
    new: Any
    low: Any
    high: Any
    diff_pct: float | None
    agrees: bool
    rule: str


@dataclass
class Report:
    """What ``reproduce`` found. ``differences``: the machine's drift keys that changed
    ("kernel 6.1.0 -> 6.12.0"), None when the machine could not be compared; ``machine``:
    what was compared with what, or why nothing was."""

    executed: Path
    reproduced: Path
    rows: list[Row]
    differences: list[str] | None = None
    machine: str = ""
    notes: list[str] = field(default_factory=list)
    tolerance_pct: float = 10.0

    @property
    def agrees(self) -> bool:
        return all(row.agrees for row in self.rows)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "result": row.name + (f" ({row.unit})" if row.unit else ""),
                    "original": results.show(row.original),
                    "re-run": results.show(row.new),
                    "diff %": "" if row.diff_pct is None else f"{row.diff_pct:+.1f}",
                    "rule": row.rule,
                    "agrees": "yes" if row.agrees else "NO",
                }
                for row in self.rows
            ]
        )

    def text(self) -> str:
        drifted = [row for row in self.rows if not row.agrees]
        table = self.table()
        cells = [list(table.columns), *table.values.tolist()]
        widths = [max(len(str(r[i])) for r in cells) for i in range(len(cells[0]))]
        lines = [
            "  ".join(
                str(v).ljust(w) if name in ("result", "rule") else str(v).rjust(w)
                for name, v, w in zip(table.columns, r, widths)
            ).rstrip()
            for r in cells
        ]
        if drifted:
            lines.append(
                f"drifted: {len(drifted)} of {len(self.rows)} results of {self.executed} differ "
                f"({', '.join(row.name for row in drifted)}); the re-run is {self.reproduced}"
            )
        else:
            lines.append(
                f"reproduced: all {len(self.rows)} results of {self.executed} agree; the re-run is {self.reproduced}"
            )
        if self.differences:
            lines.append(f"the machine changed ({self.machine}): {'; '.join(self.differences)}")
        elif drifted and self.differences is None and self.machine:
            lines.append(f"the machine: {self.machine}")
        elif drifted:
            lines.append(
                f"the machine shows no difference in {', '.join(drift.DRIFT_KEYS)} ({self.machine}): "
                "look at the runs themselves (noise, other load, the target's state)"
            )
        return "\n".join(lines + self.notes)


def reproduce(
    executed: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    tolerance_pct: float = 10.0,
    force: bool = False,
) -> Report:
    """Run the notebook ``executed`` was made from again, with its parameters, into
    ``out_dir`` (default ``papermill_runs/reproduced``), and compare the recorded results.
    InputError when ``executed`` recorded none or its source notebook cannot be found;
    IolabError when the re-run fails (``iolab.report.publish.execute``). ``OutputExists`` before
    anything runs when ``out_dir`` or the re-run's notebook is a user's (``iolab.core.outputs``),
    unless ``force``."""
    if not (isinstance(tolerance_pct, (int, float)) and math.isfinite(tolerance_pct) and tolerance_pct >= 0):
        raise InputError(f"tolerance {tolerance_pct!r} %: give a number of per cent, 0 or more (e.g. 10)")
    executed = input_file(executed, "executed notebook").absolute()
    nb = notebook_file(executed, "executed notebook")
    original = recorded(nb)
    if not original["results"]:
        raise InputError(
            f"{executed} recorded no results (no iolab.record.results.record output): reproduce "
            "compares recorded results; run a notebook that records them, then reproduce that"
        )
    given = Path(out_dir) if out_dir else paths.PAPERMILL_RUNS / "reproduced"
    output = given / executed.name
    if output.absolute() == executed:
        output = output.with_name(f"{executed.stem}.reproduced{executed.suffix}")
    source = source_notebook(nb, executed)
    claim_output(output, force=force, inputs=(executed, source))  # before the folder is made
    claim_folder(given, force=force)
    params = parameters(nb)
    new = recorded(json.loads(execute(source, output, params, force=force).read_text()))
    by_name = {entry["name"]: entry for entry in new["results"]}
    rows = [compare(entry, by_name.get(entry["name"]), tolerance_pct) for entry in original["results"]]
    differences, machine = machine_differences(original["run_folders"], new["run_folders"])
    notes = (
        [
            f"note: runs_dir={params['runs_dir']!r} was passed again: runs already in it may have been "
            "read (resumed), not measured anew"
        ]
        if params.get("runs_dir")
        else []
    )
    return Report(executed, output, rows, differences, machine, notes, tolerance_pct)


def recorded(nb: Mapping[str, Any]) -> dict[str, list]:
    """The results and run folders of an executed notebook: its ``metadata["iolab"]``
    (``iolab.report.publish.execute``), else its outputs (papermill run by hand)."""
    kept = _mapping(_mapping(nb.get("metadata")).get("iolab"))
    if kept.get("results"):
        return kept
    try:
        return results.collect(nb)
    except (ValueError, TypeError, AttributeError, KeyError):  # outputs iolab did not write
        raise InputError(
            "the notebook's result outputs cannot be read (not as iolab.record.results writes them); "
            "give an executed notebook as papermill or JupyterLab saved it"
        ) from None


def parameters(nb: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters an executed notebook ran with (papermill's record, and iolab's)."""
    meta = _mapping(nb.get("metadata"))
    return {
        **_mapping(_mapping(meta.get("papermill")).get("parameters")),
        **_mapping(_mapping(meta.get("iolab")).get("parameters")),
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else {}: a notebook's metadata as written by anyone."""
    return value if isinstance(value, Mapping) else {}


def source_notebook(nb: Mapping[str, Any], executed: Path) -> Path:
    """The notebook ``executed`` was run from: papermill's ``input_path``, else the notebook
    of that name in notebooks/."""
    given = _mapping(_mapping(nb.get("metadata")).get("papermill")).get("input_path")
    given = given if isinstance(given, str) and given.strip() and "\0" not in given else None
    candidates = [Path(given), paths.NOTEBOOKS / Path(given).name] if given else []
    for candidate in [*candidates, paths.NOTEBOOKS / executed.name]:
        if candidate.is_file():
            return candidate.absolute()
    tried = " or ".join(dict.fromkeys(str(c) for c in [*candidates, paths.NOTEBOOKS / executed.name]))
    raise InputError(
        f"the notebook {executed.name} was run from is not at {tried}; put it back "
        "(git checkout notebooks/) or copy it there"
    )


def compare(original: Mapping[str, Any], new: Mapping[str, Any] | None, tolerance_pct: float) -> Row:
    """One result against its re-run (None: the re-run did not record it)."""
    a, low, high = original.get("value"), original.get("low"), original.get("high")
    row = Row(
        original["name"], original.get("unit") or "", a, None, low, high, None, False, "not recorded by the re-run"
    )
    if new is None:
        return row
    row.new = b = new.get("value")
    if _number(a) and _number(b) and a != 0:
        row.diff_pct = 100 * (b - a) / abs(a)
    if _number(low) and _number(high):
        row.rule = f"in [{results.show(low)}, {results.show(high)}]"
        row.agrees = _number(b) and low <= b <= high
    elif _number(a) and _number(b):
        row.rule = f"within {tolerance_pct:g} %"
        row.agrees = abs(b - a) <= tolerance_pct / 100 * abs(a)
    else:
        row.rule, row.agrees = "the same", a == b
    return row


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def machine_differences(original: Sequence[str], rerun: Sequence[str]) -> tuple[list[str] | None, str]:
    """(the drift keys that changed, as "key old -> new", or None when nothing could be
    compared; what was compared, or why nothing was) between the first original run folder
    that still reads and the re-run's first new one (not one the original used too), or
    the machine now."""
    before = _first_run(original)
    if before is None:
        return None, (
            "the original run folders are gone" if original else "the notebook recorded no run folders"
        ) + ": nothing to compare the machine with"
    after = _first_run([folder for folder in rerun if folder not in original])
    if after is None:
        how, now = "the first original run against the machine now", _now(before[0])
    else:
        how, now = "the first original run against the re-run's first", after[1]
    keys = [k for k in drift.DRIFT_KEYS if k in before[1] and k in now]
    runs = pd.DataFrame([{"run_id": "original", **before[1]}, {"run_id": "now", **now}])[["run_id", *keys]]
    found = drift.changes(runs, keys, swept=())["now"]
    return [change for change in found.split("; ") if change], how


def _first_run(folders: Sequence[str]) -> tuple[Path, dict[str, Any]] | None:
    """The earliest run folder (run ids start with their UTC time) that still reads, and its
    drift-key columns."""
    for folder in sorted((Path(f) for f in folders if (Path(f) / RUN_JSON).exists()), key=lambda p: p.name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unreadable run is skipped: the next one is tried
            table = runcache.load_runs([folder], status=None)
        if not table.empty:
            row = table.iloc[0]
            return folder, {k: row[k] for k in drift.DRIFT_KEYS if k in row}
    return None


def _now(folder: Path) -> dict[str, Any]:
    """The drift keys of the machine now, read for the device and CPUs of the run in
    ``folder`` (the scheduler only if that device is still there; no target state: that
    belongs to a run)."""
    old = RunFolder(folder).snapshot()
    device = old.get("device") if old.get("device") and Path("/sys/block", old["device"]).exists() else None
    cpus = old.get("cpus_in_use") or [0]
    snap = system.snapshot(device, cpus)
    with tempfile.TemporaryDirectory() as tmp:  # the snapshot read as a run's system.json is read
        write_json(Path(tmp) / SYSTEM_JSON, snap)
        now = producers.system_columns(tmp)
    now.pop("target_state", None)
    if device is None:
        now.pop("scheduler_active", None)
    return {**now, "fio_version": snap["fio_version"], "freq_source": read_freq_mhz(cpus)[1]}
