"""iolab reproduce: an executed notebook run again with its parameters, its recorded results
compared (exit 0 when they agree, 3 when one drifted, 1 when there is nothing to compare)."""

import json
import shutil

import nbformat
import pytest

from iolab.cli import main
from iolab.core.errors import InputError
from iolab.report import reproduce as rep
from iolab.report.publish import execute
from support.notebooks import notebook
from support.paths import FIXTURES

DETERMINISTIC = """
from iolab.record import results
results.record("square", n * n, "IO/s", source="n squared")
results.record("half", n / 2, low=n / 2 - 0.5, high=n / 2 + 0.5, note="a made-up interval")
results.record("name", f"n{n}")
"""
FROM_A_FILE = """
from pathlib import Path
from iolab.record import results
results.record("from the file", float(Path(path).read_text()), "IO/s")
results.record("steady", 7.0)
results.record_runs([old_run] if old_run else [])
"""


@pytest.fixture(autouse=True)
def quiet_state(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))  # the CLI's ledger check: not the machine's
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))


def test_a_deterministic_notebook_reproduces(tmp_path, capsys):
    (tmp_path / "nb").mkdir()
    source = notebook(tmp_path / "nb" / "square.ipynb", DETERMINISTIC)
    executed = execute(source, tmp_path / "first" / "square.ipynb", {"n": 4})
    assert main(["reproduce", str(executed), "--out", str(tmp_path / "again")]) == 0
    out = capsys.readouterr().out
    assert "reproduced: all 3 results" in out and "NO" not in out
    again = json.loads((tmp_path / "again" / "square.ipynb").read_text())
    assert again["metadata"]["iolab"]["parameters"] == {"n": 4}  # the recorded parameter, not the default 1
    assert again["metadata"]["iolab"]["results"][0]["value"] == 16


def test_a_changed_input_is_drift(tmp_path, capsys):
    (tmp_path / "nb").mkdir()
    source = notebook(tmp_path / "nb" / "file.ipynb", FROM_A_FILE, parameters="path = ''\nold_run = ''")
    value = tmp_path / "value.txt"
    value.write_text("100")
    old_run = tmp_path / "runs" / "20200101T000000Z-old-0a1b2c"  # a run made on another kernel
    old_run.mkdir(parents=True)
    shutil.copy(FIXTURES / "fio" / "jsonplus_randread.json", old_run / "fio.json")
    (old_run / "run.json").write_text(
        json.dumps({"schema": 2, "schema_version": 2, "run_id": old_run.name, "status": "ok"})
    )
    (old_run / "system.json").write_text(json.dumps({"kernel": "1.0-long-ago", "cpus_in_use": [0]}))
    executed = execute(source, tmp_path / "first" / "file.ipynb", {"path": str(value), "old_run": str(old_run)})
    value.write_text("150")
    report = rep.reproduce(executed, tmp_path / "again", tolerance_pct=10)
    assert not report.agrees and [r.agrees for r in report.rows] == [False, True]
    assert report.rows[0].diff_pct == pytest.approx(50.0)
    assert any(d.startswith("kernel 1.0-long-ago -> ") for d in report.differences)
    assert main(["reproduce", str(executed), "--out", str(tmp_path / "again")]) == 3
    out = capsys.readouterr().out
    assert "+50.0" in out and "NO" in out and "drifted: 1 of 2 results" in out
    assert "the machine changed" in out and "kernel 1.0-long-ago ->" in out


def test_a_notebook_without_results_is_refused_in_one_line(tmp_path, capsys):
    executed = tmp_path / "plain.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), executed)
    assert main(["reproduce", str(executed)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "recorded no results" in err
    (tmp_path / "not.ipynb").write_text("not json")
    with pytest.raises(InputError, match="not a Jupyter notebook: it is not JSON"):
        rep.reproduce(tmp_path / "not.ipynb")
    with pytest.raises(InputError, match="no such executed notebook"):
        rep.reproduce(tmp_path / "missing.ipynb")


def test_the_source_notebook_must_be_found(tmp_path):
    nb = {"metadata": {"papermill": {"input_path": str(tmp_path / "gone" / "zz_no_such.ipynb")}}}
    with pytest.raises(InputError, match="zz_no_such.ipynb was run from is not at"):
        rep.source_notebook(nb, tmp_path / "zz_no_such.ipynb")


def test_the_rules_of_agreement():
    def row(original, new, tolerance=10):
        return rep.compare({"name": "x", **original}, None if new is None else {"value": new}, tolerance)

    assert row({"value": 100, "low": 90, "high": 95}, 93).agrees  # inside the interval, though 7 % off
    assert not row({"value": 100, "low": 99, "high": 101}, 105).agrees
    assert row({"value": 100}, 109).agrees and not row({"value": 100}, 111).agrees
    assert row({"value": 100}, 111, tolerance=20).agrees
    assert row({"value": "none"}, "none").agrees and not row({"value": 16}, "none").agrees
    missing = row({"value": 1}, None)
    assert not missing.agrees and missing.rule == "not recorded by the re-run"
    assert row({"value": 0}, 0).agrees and row({"value": 0}, 0).diff_pct is None
    with pytest.raises(InputError, match="tolerance"):
        rep.reproduce("x.ipynb", tolerance_pct=-1)


def test_the_machine_is_compared_with_the_reruns_own_first_run(tmp_path):
    """A re-run that made run folders of its own: its first is what the original's first is
    compared with (not the machine now), the folders both share left out."""

    def run(name: str, kernel: str) -> str:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(FIXTURES / "fio" / "jsonplus_randread.json", folder / "fio.json")
        (folder / "run.json").write_text(json.dumps({"schema": 2, "schema_version": 2, "run_id": name, "status": "ok"}))
        (folder / "system.json").write_text(json.dumps({"kernel": kernel, "cpus_in_use": [0]}))
        return str(folder)

    old, new = run("20200101T000000Z-old-0a1b2c", "1.0-long-ago"), run("20260101T000000Z-new-0a1b2c", "6.12.1")
    found, how = rep.machine_differences([old], [old, new])
    assert how == "the first original run against the re-run's first"
    assert found == ["kernel 1.0-long-ago -> 6.12.1"]
    assert rep.machine_differences([old], [old])[1] == "the first original run against the machine now"
