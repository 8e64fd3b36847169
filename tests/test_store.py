"""Run folders: atomic, versioned, loadable; a full disk loses nothing already written."""
import json
import subprocess

import pytest

from conftest import QUICK, needs_root
from iolab.errors import DiskFullError, SchemaError
from iolab.runner import measure
from iolab.store import load_runs, read_run, run_folder, write_atomic


def test_load_many_runs_into_one_table(scratch, runs):
    for qd in (1, 2):
        measure({**QUICK, "iodepth": qd, "ioengine": "io_uring"}, scratch, runs_dir=runs,
                swept={"qd": qd, "repeat": 0})
    table = load_runs(runs)
    assert sorted(table.qd) == [1, 2] and table.run_id.nunique() == 2
    assert {"cpu_busy_pct", "cpu_freq_mhz", "freq_source", "busy_cpu_s"} <= set(table.columns)


def test_schema_mismatch_says_what_to_do(scratch, runs):
    path = measure(QUICK, scratch, runs_dir=runs).path
    meta = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(SchemaError, match="Upgrade iolab"):
        read_run(path)
    with pytest.warns(UserWarning, match="skipping run"):
        assert load_runs(runs).empty


def test_failed_block_is_finished_as_failed(tmp_path):
    with pytest.raises(ValueError):
        with run_folder(tmp_path, "x") as folder:
            folder.write_text("a.txt", "kept")
            raise ValueError("boom")
    (run,) = tmp_path.iterdir()
    assert read_run(run)["status"] == "failed" and (run / "a.txt").read_text() == "kept"


@needs_root
def test_disk_full_keeps_what_was_written(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        write_atomic(mnt / "result.json", "old result")
        with pytest.raises(DiskFullError, match="no space left"):
            write_atomic(mnt / "result.json", "x" * 200_000)
        assert (mnt / "result.json").read_text() == "old result"
        assert [p.name for p in mnt.iterdir()] == ["result.json"]  # no temp file left
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
