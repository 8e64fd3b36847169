"""Run folders: atomic, versioned, loadable; a full disk loses nothing already written."""

import json
import subprocess

import pandas as pd
import pytest

from iolab.core.atomic import write_atomic
from iolab.core.errors import DiskFullError, FioOutputError, SchemaError
from iolab.core.runfolders import runs_in
from iolab.measure.runner import measure
from iolab.runs.runcache import load_runs
from iolab.runs.store import SCHEMA_VERSION, read_run, run_folder, run_table, schema_of
from support.fio import QUICK
from support.marks import needs_root


def test_load_many_runs_into_one_table(scratch, runs):
    for qd in (1, 2):
        measure({**QUICK, "iodepth": qd, "ioengine": "io_uring"}, scratch, runs_dir=runs, swept={"qd": qd, "repeat": 0})
    table = load_runs(runs)
    assert sorted(table.qd) == [1, 2] and table.run_id.nunique() == 2
    assert {"cpu_busy_pct", "cpu_freq_mhz", "freq_source", "busy_cpu_s"} <= set(table.columns)


def _rewrite_meta(path, **changes):
    """run.json of ``path`` with ``changes`` (a value None drops the key)."""
    meta = {**json.loads((path / "run.json").read_text()), **changes}
    (path / "run.json").write_text(json.dumps({k: v for k, v in meta.items() if v is not None}))


def test_newer_schema_says_what_to_do(scratch, runs):
    path = measure(QUICK, scratch, runs_dir=runs).path
    assert read_run(path)["schema"] == SCHEMA_VERSION
    _rewrite_meta(path, schema=SCHEMA_VERSION + 1)
    with pytest.raises(
        SchemaError,
        match=rf"schema {SCHEMA_VERSION + 1}; this iolab .* reads schemas 1 to "
        rf"{SCHEMA_VERSION}\. Upgrade iolab \(git pull; make setup\)",
    ):
        read_run(path)
    with pytest.warns(UserWarning, match="skipping run.*Upgrade iolab"):
        assert load_runs(runs).empty
    _rewrite_meta(path, schema=None, schema_version=99)  # a layout-1 style stamp from the future
    with pytest.raises(SchemaError, match="Upgrade iolab"):
        read_run(path)
    _rewrite_meta(path, schema="two", schema_version=None)
    with pytest.raises(SchemaError, match="which no iolab wrote.*Re-run the experiment"):
        read_run(path)


def test_runs_without_the_schema_field_load_as_version_1(scratch, runs):
    """Schema 1 (run.json with ``schema_version`` or none at all) loads as it did."""
    path = measure({**QUICK, "iodepth": 2}, scratch, runs_dir=runs, swept={"qd": 2}).path
    before = load_runs(runs)
    _rewrite_meta(path, schema=None, schema_version=1)
    assert schema_of(read_run(path)) == 1
    pd.testing.assert_frame_equal(load_runs(runs), before)
    _rewrite_meta(path, schema_version=None)
    assert schema_of(read_run(path)) == 1
    pd.testing.assert_frame_equal(load_runs(runs), before)


def test_a_folder_without_a_report_says_why(tmp_path):
    with run_folder(tmp_path, "x"):
        pass
    (run,) = tmp_path.iterdir()
    with pytest.raises(FioOutputError, match="holds no report.*run.json says why"):
        run_table(run)


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


def test_runs_in_takes_what_the_glob_took(tmp_path):
    """runs_in lists root once (a glob of root/*/run.json cost ten times as much with 100,000
    runs) and finds what the glob found: by name, hidden and .tmp- folders left out, links to
    run folders in, a folder named run.json counted, files and empty folders not."""
    for name in ("b", "a", ".tmp-x", ".hidden", "B", "é", "empty", "c"):
        (tmp_path / name).mkdir()
        if name not in ("empty", "c"):
            (tmp_path / name / "run.json").write_text("{}")
    (tmp_path / "c" / "run.json").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    glob = sorted(p for p in tmp_path.glob("*/run.json") if not p.parent.name.startswith("."))
    assert runs_in(tmp_path) == [p.parent for p in glob]
    assert [p.parent.name for p in glob] == ["B", "a", "b", "c", "link", "é"]
    assert runs_in(tmp_path / "nowhere") == [] and runs_in(tmp_path / "file") == []


def test_every_pandas_text_dtype_gets_a_tag_or_none_never_an_error():
    """pandas 2.2 reads text as object (tagged json), pandas 3 as str; a StringDtype column with
    pd.NA (either version) has no tag: the table is then built by pandas, not the fast path."""
    from iolab.runs.store import dtype_tag

    text = pd.Series(["a", None]).dtype
    assert dtype_tag(text) == ("str" if pd.__version__ >= "3" else "json")
    assert dtype_tag(pd.Series(["a"], dtype="string").dtype) is None
    assert dtype_tag(pd.Series([1, 2]).dtype) == "int64" and dtype_tag(pd.Series([True]).dtype) == "bool"
