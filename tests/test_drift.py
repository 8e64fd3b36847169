"""Drift within a study (iolab.stats.drift): a run whose system snapshot differs from the study's
first run is flagged with what changed; what the study sweeps is not drift."""

import json
import shutil
from pathlib import Path

import pandas as pd

from iolab.machine.target import scratch_file
from iolab.measure.sweep import Grid, sweep
from iolab.runs import runcache
from iolab.stats import drift
from support.cpus import CPU
from support.fio import QUICK
from support.marks import needs_root


def test_a_changed_kernel_and_governor_are_named_on_the_run_that_changed(tmp_path):
    table = sweep(
        Grid({"iodepth": [1, 2]}, base=QUICK),
        target=scratch_file(tmp_path / "s", "16m"),
        cpus=[CPU],
        runs_dir=tmp_path / "runs",
        progress=None,
    )
    assert list(table.drift) == ["", ""]  # same machine, nothing drifted
    first, second = (tmp_path / "runs" / r for r in table.run_id.unique())
    copy = tmp_path / "copy"
    shutil.copytree(first, copy / first.name)
    shutil.copytree(second, copy / second.name)
    snap_path = copy / second.name / "system.json"
    snap = json.loads(snap_path.read_text())
    was_kernel = snap["kernel"]
    snap["kernel"] = "9.9.9-drifted"
    snap["governor"] = {cpu: "drifty" for cpu in snap["governor"]}
    snap_path.write_text(json.dumps(snap))

    flagged = drift.flag(runcache.load_runs(copy)).set_index("run_id")
    assert flagged.loc[first.name, "drift"] == ""
    said = flagged.loc[second.name, "drift"]
    assert f"kernel {was_kernel} -> 9.9.9-drifted" in said
    assert "governor " in said and "-> drifty" in said
    assert flagged.loc[second.name, "kernel"] == "9.9.9-drifted"


def test_the_first_run_is_the_earliest_and_a_swept_key_is_compared_within_its_cell():
    table = pd.DataFrame(
        {
            "run_id": ["20260102T000000Z-b", "20260101T000000Z-a", "20260103T000000Z-c", "20260104T000000Z-d"],
            "scheduler": ["mq-deadline", "none", "none", "mq-deadline"],
            "scheduler_active": ["mq-deadline", "none", "none", "kyber"],
            "kernel": ["6.1", "6.1", "6.2", "6.1"],
            "governor": [float("nan")] * 4,
        }
    )
    out = drift.flag(table).set_index("run_id").drift
    assert out["20260101T000000Z-a"] == "" and out["20260102T000000Z-b"] == ""
    assert out["20260103T000000Z-c"] == "kernel 6.1 -> 6.2"
    assert out["20260104T000000Z-d"] == "scheduler_active mq-deadline -> kyber"
    # without the swept column, a changed scheduler is drift
    plain = drift.flag(table.drop(columns="scheduler")).set_index("run_id").drift
    assert plain["20260102T000000Z-b"] == "scheduler_active none -> mq-deadline"


@needs_root
def test_a_scheduler_sweep_is_not_drift(loopdev, tmp_path):
    available = Path(f"/sys/block/{loopdev.device}/queue/scheduler").read_text().split()
    schedulers = [s.strip("[]") for s in available][:2]  # none and mq-deadline, both active in turn
    table = sweep(
        Grid({"scheduler": schedulers}, base=QUICK),
        target=loopdev,
        cpus=[CPU],
        runs_dir=tmp_path / "runs",
        progress=None,
    )
    assert list(table.scheduler_active) == list(table.scheduler) == schedulers
    assert list(table.drift) == [""] * len(schedulers)
