"""Recorded results (iolab.record.results): what a notebook records reaches the executed notebook's
metadata and the side file beside it, JSON-safe, the later of one name winning."""

import json
import re
import subprocess
import sys

import nbformat
import numpy as np
import pandas as pd
import pytest

from iolab.core.errors import InputError, IolabError
from iolab.core.runfolders import runs_under
from iolab.record import results
from iolab.report.publish import execute
from support.notebooks import notebook

RECORDING = """
import numpy as np
import pandas as pd
from iolab.record import results
results.record("square", np.int64(n) ** 2, "IO/s", source="n squared", low=np.float64(n * n - 1), high=n * n + 1.0,
               note="a made-up interval")
results.record("nothing", float("nan"), note="NaN becomes null")
results.record("square", np.int64(n) ** 2 + 1, "IO/s", source="recorded again")
results.record_runs(pd.DataFrame({"run_id": ["r1", "r1", None], "run_folder": [runs_dir + "/r1"] * 2 + [None]}))
results.record_runs([runs_dir + "/r2"])
"""


def run_folders(root, *names):
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "run.json").write_text("{}")
    return root


def test_a_notebook_records_its_results_in_its_metadata_and_beside_it(tmp_path):
    runs = run_folders(tmp_path / "runs", "r1", "r2")
    source = notebook(tmp_path / "rec.ipynb", RECORDING)
    out = execute(source, tmp_path / "out" / "rec.ipynb", {"n": 3, "runs_dir": str(runs)})
    meta = nbformat.read(out, as_version=4).metadata["iolab"]
    side = json.loads((tmp_path / "out" / "rec.results.json").read_text())
    assert side == json.loads(json.dumps(meta))
    assert meta["parameters"] == {"n": 3, "runs_dir": str(runs)}
    assert meta["results"] == [
        {
            "name": "square",
            "value": 10,
            "unit": "IO/s",
            "source": "recorded again",
            "low": None,
            "high": None,
            "note": "",
        },  # replaced by the later record, in the first one's place
        {
            "name": "nothing",
            "value": None,
            "unit": "",
            "source": "",
            "low": None,
            "high": None,
            "note": "NaN becomes null",
        },
    ]
    assert meta["run_folders"] == [str(runs / "r1"), str(runs / "r2")]
    text = "".join(
        o.get("data", {}).get("text/plain", "")
        for c in nbformat.read(out, as_version=4).cells
        for o in c.get("outputs", [])
    )
    assert "recorded: square = 9 IO/s [8, 10] (a made-up interval)" in text
    assert "recorded: 1 run folder" in text
    assert results.collect(out) == {k: meta[k] for k in ("results", "run_folders")}


def test_a_failed_notebook_keeps_what_it_recorded_beside_it(tmp_path):
    source = notebook(
        tmp_path / "source.ipynb",
        "from iolab.record import results\nresults.record('n', n)",
        "raise RuntimeError('broken')",
    )
    with pytest.raises(IolabError, match="fails.failed.ipynb"):
        execute(source, tmp_path / "fails.ipynb", {"n": 5})
    side = json.loads((tmp_path / "fails.failed.results.json").read_text())
    assert side["results"][0]["value"] == 5 and side["parameters"] == {"n": 5}
    meta = json.loads((tmp_path / "fails.failed.ipynb").read_text())["metadata"]["iolab"]
    assert meta["results"] == side["results"]
    mine = tmp_path / "fails.failed.results.json"  # a user's file of that name: kept, the results beside it
    (tmp_path / "mine").write_text("mine")
    (tmp_path / "mine").replace(mine)  # another inode (a deleted file's could come back: core.owned)
    with pytest.raises(IolabError, match="fails.failed.ipynb"):
        execute(source, tmp_path / "fails.ipynb", {"n": 6})
    assert mine.read_text() == "mine"
    (beside,) = tmp_path.glob("fails.failed.*.results.json")
    assert json.loads(beside.read_text())["parameters"] == {"n": 6}


def test_values_become_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(results.FILE_ENV, str(tmp_path / "results.json"))
    results.record("a", np.float32(0.5), low=np.int32(0), high=np.inf)
    results.record("b", pd.NA)
    results.record("c", "randread")
    results.record("a", 2.5)
    results.record_runs(run_folders(tmp_path / "study", "r1", "r2"))  # a folder of run folders
    kept = json.loads((tmp_path / "results.json").read_text())
    assert [(r["name"], r["value"], r["low"], r["high"]) for r in kept["results"]] == [
        ("a", 2.5, None, None),
        ("b", None, None, None),
        ("c", "randread", None, None),
    ]
    assert kept["run_folders"] == [str(tmp_path / "study" / "r1"), str(tmp_path / "study" / "r2")]
    assert "recorded: a = 0.5 [0, none]" in capsys.readouterr().out  # outside IPython: the text line
    with pytest.raises(InputError, match="not a number"):
        results.record("d", object())
    with pytest.raises(InputError, match="needs a name"):
        results.record("", 1)
    with pytest.raises(InputError, match="neither a run folder"):
        results.record_runs([tmp_path / "nothing-here"])


def test_run_ids_not_found_are_said(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    results.record_runs(pd.DataFrame({"run_id": ["gone"]}))
    assert "1 run(s) of the table (e.g. gone) have no run_folder" in capsys.readouterr().out


def test_run_ids_are_found_in_a_study_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    run_folders(tmp_path / "runs" / "qd-knee-1", "r1", "r2")
    found, missing = results.run_folders(pd.DataFrame({"run_id": ["r2", "r1", "r3"]}))
    assert found == [tmp_path / "runs" / "qd-knee-1" / "r2", tmp_path / "runs" / "qd-knee-1" / "r1"]
    assert missing == ["r3"]
    elsewhere = run_folders(tmp_path / "elsewhere", "r1")  # the table's run_folder first; a moved one by run_id
    moved = str(tmp_path / "moved" / "r2")
    table = pd.DataFrame({"run_id": ["r2", "r1"], "run_folder": [moved, str(elsewhere / "r1")]})
    assert results.run_folders(table) == ([tmp_path / "runs" / "qd-knee-1" / "r2", elsewhere / "r1"], [])
    study = tmp_path / "runs" / "qd-knee-1"  # the one rule for a path: a run, runs in it, runs one level below
    assert runs_under(tmp_path / "runs") == runs_under(study) == [study / "r1", study / "r2"]
    assert runs_under(study / "r1") == [study / "r1"] and runs_under(tmp_path / "nowhere") == []


def test_collect_reads_a_notebook_node():
    bundle = {results.MIME: {"results": [{"name": "x", "value": 1}]}, "text/plain": "recorded: x = 1"}
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("display_data", data=bundle)])]
    )
    assert results.collect(nb)["results"][0]["value"] == 1
    assert results.collect(nbformat.v4.new_notebook()) == {"results": [], "run_folders": []}


def test_the_kits_errors_show_as_one_block_in_a_notebook_and_tb_shows_the_traceback(capsys):
    """In IPython (a notebook's kernel), an IolabError is its name and message, not a screen of
    frames; %tb still shows where it was raised; other errors keep their traceback."""
    from IPython.core.interactiveshell import InteractiveShell

    from iolab.core import errors

    shell = InteractiveShell()
    try:
        assert errors.brief_in_notebooks(shell)
        result = shell.run_cell(
            "from iolab.core.errors import InputError\n"
            "def check():\n    raise InputError('runtime: 0.5s: give 500ms')\ncheck()"
        )
        assert isinstance(result.error_in_exec, errors.InputError)
        shown = capsys.readouterr().out
        assert "InputError" in shown and "give 500ms" in shown and "%tb" in shown
        assert "check()" not in shown and len(shown.strip().splitlines()) == 2
        shell.run_cell("%tb")
        assert "def check" in re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # the traceback, one magic away
        shell.run_cell("1 / 0")
        assert "ZeroDivisionError" in capsys.readouterr().out  # not ours: IPython's own
    finally:
        shell.clear_instance()


def test_live_tables_in_a_notebook_read_like_the_write_ups():
    """``%load_ext iolab`` in a kernel shows DataFrames as the write-ups do: 12748.502994 read
    12,748.502994 live and 12,749 published, raw bytes (275873792.0) as 263 MiB, units in
    the headers, inside a box that scrolls sideways; pandas' text form rounds too."""
    from IPython.core.interactiveshell import InteractiveShell

    from iolab.core.readable import SCROLL_BOX, live_tables

    shell = InteractiveShell()
    try:
        live_tables(shell)
        frame = pd.DataFrame(
            {"iops": [12748.502994, 2.596134], "io_bytes": [275873792.0, float("nan")], "run_id": [2011, 2024]}
        )
        text = frame.to_string()
        assert "12,749" in text and "2.60" in text and "NaN" in text
        html = shell.display_formatter.format(frame)[0]["text/html"]
        assert html.startswith(f'<div class="{SCROLL_BOX}" style="overflow-x: auto')
        assert ">12,749<" in html and ">263 MiB<" in html and ">2011<" in html
        # a byte column's cells carry their binary unit (263 MiB): its header says none, never "(B)" over MiB
        assert '<th title="iops">IOPS (IO/s)</th>' in html and '<th title="io_bytes">io bytes</th>' in html
    finally:
        pd.reset_option("display.float_format")
        shell.clear_instance()


def test_import_changes_nothing_and_the_extension_comes_and_goes():
    """`import iolab` leaves pandas and IPython as they were (in a fresh interpreter, as a user's
    kernel would import it); `%load_ext iolab` brings the brief errors and readable tables,
    `%unload_ext iolab` takes them away again."""
    from IPython.core.interactiveshell import InteractiveShell

    from iolab.core import errors

    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pandas as pd; before = pd.get_option('display.float_format'); import iolab, iolab.cli; "
            "print(pd.get_option('display.float_format') is before)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == "True"
    shell = InteractiveShell()
    try:
        shell.run_line_magic("load_ext", "iolab")
        assert shell.custom_exceptions == (errors.IolabError,) and pd.get_option("display.float_format") is not None
        assert "12,749" in shell.display_formatter.format(pd.DataFrame({"iops": [12748.6]}))[0]["text/html"]
        shell.run_line_magic("unload_ext", "iolab")
        assert shell.custom_exceptions == () and pd.get_option("display.float_format") is None
        assert "12748.6" in shell.display_formatter.format(pd.DataFrame({"iops": [12748.6]}))[0]["text/html"]
        html = shell.display_formatter.formatters["text/html"]  # a user's own DataFrame formatter survives
        html.for_type(pd.DataFrame, lambda df: "<b>mine</b>")
        shell.run_line_magic("load_ext", "iolab")
        shell.run_line_magic("unload_ext", "iolab")
        assert shell.display_formatter.format(pd.DataFrame({"iops": [1]}))[0]["text/html"] == "<b>mine</b>"
    finally:
        pd.reset_option("display.float_format")
        shell.clear_instance()


def test_per_setting_results_are_kept_but_folded_under_the_key_ones(tmp_path):
    """record_many's results (one per QD, per step) are details: the write-up folds them
    under the key figures and a batch index makes no column of them."""
    from iolab.report.batch_index import result_names

    bundle = results.merged(
        [
            {"results": [{"name": "peak IOPS", "value": 5}]},
            {"results": [{"name": "IOPS at QD 1", "value": 1, "detail": True}]},
        ]
    )
    assert "detail" not in bundle["results"][0] and bundle["results"][1]["detail"] is True
    assert [name for name, _ in result_names([{"results": bundle["results"]}])] == ["peak IOPS"]
