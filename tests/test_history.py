"""The results history: what a notebook that ran records is kept with its provenance, read
back whole (a damaged part left out, said), filtered by name, notebook and date; the trend
marks the changes the intervals call significant; ``iolab history`` prints it; notebook 09
on an empty history (on a small one it runs in JupyterLab: tests/test_browser.py)."""

import json
import os
import re
import stat
import tempfile
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from iolab.core.errors import InputError
from iolab.record import history, provenance
from iolab.stats import trend
from support.cli import cli_here
from support.marks import is_root
from support.nobody import run_as_nobody
from support.notebooks import python_of
from support.paths import REPO
from support.results import SNAPSHOT, T0, kept, result


# ---------------------------------------------------------------- a real notebook, through publish.execute
def tiny_notebook(path: Path) -> Path:
    """A notebook without fio that records what notebooks record: a figure with its
    interval, a text value, a per-setting figure, and a run folder."""
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Tiny"),
            new_code_cell(
                'scale = 1.0  # multiplies the figure\nruns = ""  # a run folder', metadata={"tags": ["parameters"]}
            ),
            new_code_cell(
                "%load_ext iolab\n"  # as every notebook: a headless run still adds its results once
                "from iolab.record import results\n"
                'results.record("peak IOPS", 1000 * scale, "IO/s", source="made up", low=900, high=1100, note="a test")\n'
                'results.record("slowest host", "h1")\n'
                'results.record_many([{"name": "IOPS at QD 1", "value": 5, "unit": "IO/s"}])\n'
                "results.record_runs(runs)"
            ),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, path)
    return path


def test_an_executed_notebook_adds_its_results_with_their_provenance(tmp_path, monkeypatch):
    from iolab.report.publish import execute

    folder = tmp_path / "history"
    monkeypatch.setenv("IOLAB_HISTORY", str(folder))
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    (run / "system.json").write_text(json.dumps(SNAPSHOT))
    executed = execute(tiny_notebook(tmp_path / "tiny.ipynb"), tmp_path / "out" / "tiny.ipynb", {"runs": str(run)})

    (part,) = folder.iterdir()
    assert part.suffix == ".parquet" and "tiny" in part.name
    table = history.load()
    assert list(table["name"]) == ["peak IOPS", "slowest host", "IOPS at QD 1"]
    peak, text, detail = (table.iloc[i] for i in range(3))
    assert (peak.value, peak.low, peak.high, peak.unit, peak.note) == (1000, 900, 1100, "IO/s", "a test")
    assert np.isnan(text.value) and text.value_text == "h1" and not text.detail and detail.detail
    assert peak.notebook == "tiny" and peak.executed == str(executed)
    assert json.loads(peak.parameters) == {"runs": str(run)} and json.loads(peak.run_folders) == [str(run)]
    assert (peak.kernel, peak.fio_version, peak.hostname, peak.cpu_model) == (
        "6.1.0-test-amd64",
        "fio-3.99",
        "bench-7",
        "Test CPU @ 3.0GHz",
    )
    assert peak.device == "nvme0n1 (Fast SSD 9000, firmware 1.2.3)" and "system.json" in peak.machine_from
    assert peak.commit == provenance.checkout()["commit"] and peak.iolab_version
    assert abs(peak.recorded_utc - pd.Timestamp.now(tz="UTC")) < pd.Timedelta(minutes=5)
    # a second user reads the history as the notebook: the part is at least as readable as it
    assert stat.S_IMODE(executed.stat().st_mode) & 0o444 & ~stat.S_IMODE(part.stat().st_mode) == 0


def test_a_history_that_cannot_be_written_never_fails_the_run(tmp_path, monkeypatch, capsys):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder")
    monkeypatch.setenv("IOLAB_HISTORY", str(in_the_way))
    history.keep(tmp_path / "x.ipynb", kept(result("peak IOPS", 1)))
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "x.ipynb" in err and str(in_the_way) in err and "IOLAB_HISTORY=off" in err
    for off in ("off", "", "OFF"):
        monkeypatch.setenv("IOLAB_HISTORY", off)
        assert history.folder() is None and history.append(tmp_path / "x.ipynb", kept(result("a", 1))) is None
    with pytest.raises(InputError, match="turns the history off"):
        history.load()
    monkeypatch.delenv("IOLAB_HISTORY")
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    assert history.folder() == tmp_path / "data" / "history"


def test_a_live_kernel_adds_each_recording_cell_once_and_says_where(tmp_path, monkeypatch, capsys):
    """In JupyterLab (a kernel with %load_ext iolab, not headless) a cell's records become one
    part, named after the session's notebook, its changed parameters kept, marked live; a
    failed cell, IOLAB_HISTORY=off and a headless kernel add none, and the first two say so."""
    from IPython.core.interactiveshell import InteractiveShell

    folder = tmp_path / "h"
    monkeypatch.setenv("IOLAB_HISTORY", str(folder))
    monkeypatch.delenv("IOLAB_HEADLESS", raising=False)
    notebook = tiny_notebook(tmp_path / "03_live.ipynb")
    shell = InteractiveShell.instance()
    shell.kernel = object()  # as ipykernel's shell has one: a live kernel
    shell.user_ns["__session__"] = str(notebook)  # what ipykernel sets from JupyterLab's JPY_SESSION_NAME
    record = "from iolab.record import results\nresults.record('peak IOPS', 5, 'IO/s', low=4, high=6)\n"
    try:
        shell.run_line_magic("load_ext", "iolab")
        shell.run_cell("scale = 2.0\n" + record + "results.record('other', 1)")
        assert "added 2 results to the results history" in capsys.readouterr().out
        shell.run_cell(record + "1 / 0")
        assert "not added to the results history: this cell stopped with an error" in capsys.readouterr().out
        monkeypatch.setenv("IOLAB_HISTORY", "off")
        shell.run_cell(record)
        assert "IOLAB_HISTORY='off' keeps none" in capsys.readouterr().out
        monkeypatch.setenv("IOLAB_HISTORY", str(folder))
        monkeypatch.setenv("IOLAB_HEADLESS", "1")  # publish.execute's kernel: it adds the notebook at its end
        shell.run_cell(record)
        assert "results history" not in capsys.readouterr().out
    finally:
        shell.run_line_magic("unload_ext", "iolab")
        pd.reset_option("display.float_format")
        shell.clear_instance()
    (part,) = folder.iterdir()
    table = history.load(folder)
    assert list(table["name"]) == ["peak IOPS", "other"] and set(table["notebook"]) == {"03_live"}
    assert set(table["executed"]) == {f"{history.LIVE}: {notebook}"} and set(table["parameters"]) == {'{"scale": 2.0}'}
    shown = history.readable(table)
    assert set(shown["notebook"]) == {"03_live (JupyterLab)"} and re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d", shown["date (UTC)"][0]
    )
    assert "(1 of them in JupyterLab)" in history.summary(table) and "every one with kernel" in history.summary(table)
    assert "kernel" not in history.readable(table, fold=True)  # the same on every row: said once, in the summary


# ---------------------------------------------------------------- writing and reading parts
def test_a_plain_papermill_run_is_recorded_as_papermill_with_its_notebook(tmp_path):
    """Issue P35: ``papermill IN OUT -p ...`` (docs/notebooks.md) went into the history as a
    JupyterLab run without the notebook's name; it is papermill's, named after IN, its OUT
    the executed notebook, its parameters kept."""
    import subprocess
    import sys

    from iolab.report.kernel import headless_kernel

    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    nb.cells = [
        new_code_cell("scale = 1.0", metadata={"tags": ["parameters"]}),
        new_code_cell(
            "%load_ext iolab\nfrom iolab.record import results\nresults.record('peak IOPS', 5 * scale, 'IO/s')"
        ),
    ]
    nbformat.write(nb, tmp_path / "07_mine.ipynb")
    env = {**os.environ, "IOLAB_HISTORY": str(tmp_path / "h")}
    env.pop("IOLAB_HEADLESS", None)
    papermill = [sys.executable, "-m", "papermill", "07_mine.ipynb", "out/ran.ipynb", "-p", "scale", "2", "-k"]
    (tmp_path / "out").mkdir()
    done = subprocess.run([*papermill, headless_kernel()], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "marked (papermill)" in (tmp_path / "out" / "ran.ipynb").read_text()
    table = history.load(tmp_path / "h")
    assert list(table["notebook"]) == ["07_mine"] and list(table["executed"]) == [str(tmp_path / "out" / "ran.ipynb")]
    assert list(table["value"]) == [10] and json.loads(table["parameters"][0]) == {"scale": 2}
    assert "(JupyterLab)" not in " ".join(history.readable(table)["notebook"])


def test_append_and_load_round_trip(tmp_path):
    folder = tmp_path / "h"
    assert history.append(tmp_path / "n.ipynb", kept(), where=folder) is None  # nothing recorded: no part
    first = history.append(
        tmp_path / "a.ipynb",
        kept(
            result("peak IOPS", 231000, low=225000, high=236000.5),
            result("polled", True, unit=""),
            result("warm-up", None, unit="s"),
            result("huge", 10**400, unit=""),
        ),
        notebook="../../../etc/01 queue/../x y",  # a name never leaves the folder
        where=folder,
        now=T0,
    )
    second = history.append(
        tmp_path / "b.ipynb",
        kept(result("peak IOPS", 198000), bs="4k"),
        notebook="02_x.ipynb",
        where=folder,
        now=T0 + timedelta(days=3),
    )
    assert first.parent == folder and second.parent == folder and first != second
    table = history.load(folder)
    assert len(table) == 5 and table.attrs["history"] == str(folder)
    assert list(table["recorded_utc"]) == [pd.Timestamp(T0)] * 4 + [pd.Timestamp(T0 + timedelta(days=3))]
    peak = table.iloc[0]
    assert (peak.value, peak.low, peak.high) == (231000, 225000, 236000.5)
    assert table.loc[1, "value_text"] == "True" and np.isnan(table.loc[1, "value"])
    assert np.isnan(table.loc[2, "value"]) and pd.isna(table.loc[2, "value_text"])
    assert np.isnan(table.loc[3, "value"])
    assert table.loc[4, "notebook"] == "02_x" and json.loads(table.loc[4, "parameters"]) == {"bs": "4k"}
    assert len(history.load(folder, metrics="peak IOPS")) == 2
    assert list(history.load(folder, notebooks=["02_x.ipynb"])["value"]) == [198000]
    assert list(history.load(folder, since=T0 + timedelta(days=1))["value"]) == [198000]
    assert history.load(tmp_path / "nothing-here").empty
    text = history.as_text(history.load(folder, metrics=["peak IOPS"]))
    assert "231,000 [225,000; 236,000]" in text and "198,000" in text and "bench" not in text


def test_a_damaged_part_is_left_out_and_named(tmp_path):
    folder = tmp_path / "h"
    good = history.append(tmp_path / "a.ipynb", kept(result("peak IOPS", 1.0, low=0.5, high=1.5)), where=folder, now=T0)
    cut = folder / "20261102T000000Z-cut-0000.parquet"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    (folder / "20261103T000000Z-junk-0000.parquet").write_text("not parquet")
    (folder / f".{good.name}.1234abcd.tmp").write_bytes(b"half a part being written")  # ignored
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = history.load(folder)
    named = sorted(str(w.message).split(":")[0] for w in caught if w.category is history.HistoryWarning)
    assert named == [str(cut), str(folder / "20261103T000000Z-junk-0000.parquet")]
    assert list(table["value"]) == [1.0]


def test_a_parquet_file_of_something_else_is_left_out_in_one_line_and_the_rest_read(tmp_path):
    folder = tmp_path / "h"
    history.append(tmp_path / "a.ipynb", kept(result("peak IOPS", 1.0)), where=folder, now=T0)
    pd.DataFrame({"a": [1, 2], "name": [3, 4]}).to_parquet(folder / "20261104T000000Z-foreign.parquet")
    done = cli_here("history", "--dir", folder)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "foreign.parquet: not a readable part" in done.stderr
    assert "no column 'value', 'notebook', 'recorded_utc'" in done.stderr and "peak IOPS" in done.stdout


def test_an_age_beyond_a_century_is_refused_with_its_bound():
    for age in ("99999999999d", "36501d", "99999999999999999999w"):
        with pytest.raises(InputError, match=r"further back than 36,500 days \(100 years\)"):
            history.parse_since(age, now=T0)
    assert history.parse_since("36500d", now=T0).year == 1926


@pytest.mark.parametrize(
    "given,expected",
    [
        ("2026-11-01", "2026-11-01 00:00"),
        ("2026-11-01T08:30", "2026-11-01 08:30"),
        ("2026-11-01T08:30+02:00", "2026-11-01 06:30"),
        ("7d", "2026-10-25 08:00"),
        ("24h", "2026-10-31 08:00"),
        (" 30m ", "2026-11-01 07:30"),
        ("2w", "2026-10-18 08:00"),
    ],
)
def test_since_takes_dates_and_ages(given, expected):
    assert history.parse_since(given, now=T0).strftime("%Y-%m-%d %H:%M") == expected
    assert history.parse_since(given, now=T0).tzinfo is not None


@pytest.mark.parametrize("bad", ["yesterday", "7x", "2026-13-45", "", "-7d", "2026-11-01; rm"])
def test_a_bad_since_says_what_works(bad):
    with pytest.raises(InputError, match=r"neither a date \(2026-11-01.*nor an age \(30m, 24h, 7d"):
        history.parse_since(bad)


# ---------------------------------------------------------------- the trend and its marks
def frame(points) -> pd.DataFrame:
    """A history table from (name, value, low, high, unit, kernel, parameters) tuples, a day apart."""
    rows = [
        {
            "name": name,
            "value": value,
            "low": low,
            "high": high,
            "unit": unit,
            "kernel": kernel,
            "parameters": json.dumps(params),
            "notebook": "01_queue_depth_knee",
            "executed": f"/out/{i}.ipynb",
            "hostname": "bench-7",
            "device": None,
            "detail": False,
            "recorded_utc": pd.Timestamp(T0 + timedelta(days=i)),
        }
        for i, (name, value, low, high, unit, kernel, params) in enumerate(points)
    ]
    table = pd.concat([history.empty(), pd.DataFrame(rows)], ignore_index=True)
    table.attrs["history"] = "/made/up"
    return table


NAN = np.nan
POINTS = [
    ("peak IOPS", 100, 95, 105, "IO/s", "6.1.0", {}),
    ("peak IOPS", 101, 96, 106, "IO/s", "6.1.0", {}),  # overlaps: no change
    ("peak IOPS", 80, 78, 82, "IO/s", "6.12.1", {}),  # apart, lower: worse
    ("peak IOPS", 81, NAN, NAN, "IO/s", "6.12.1", {}),  # no interval: never judged
    ("peak IOPS", 120, 118, 122, "IO/s", "6.2.0", {}),  # apart from 80's: better
    ("p99", 50, 48, 52, "µs", "6.1.0", {}),
    ("p99", 40, 38, 42, "µs", "6.1.0", {}),  # apart, lower: better
    ("gain", 10, 9, 11, "%", "6.1.0", {}),
    ("gain", 20, 19, 21, "%", "6.1.0", {}),  # apart, no direction: shift only
    ("peak IOPS", 500, 490, 510, "IO/s", "6.1.0", {"bs": "64k"}),  # another series
]


def test_trend_marks_intervals_apart_and_nothing_else():
    tr = trend.trend(frame(POINTS))
    iops = tr[(tr.metric == "peak IOPS") & (tr.series == "bs default")]
    assert list(iops["significant"]) == [False, False, True, False, True]
    assert list(iops["change"]) == ["", "", "worse", "", "better"]
    assert list(iops["why"])[1:4] == ["intervals overlap", "intervals apart (-21 %)", "no interval recorded"]
    assert iops["why"].iloc[4] == "intervals apart (+50 %) against the last point with an interval"
    assert iops["previous"].iloc[4] == 80
    other = tr[(tr.metric == "peak IOPS") & (tr.series == "bs 64k")]
    assert len(other) == 1 and not other["significant"].any()  # never compared with the 4k series
    p99, gain = tr[tr.metric == "p99"], tr[tr.metric == "gain"]
    assert list(p99["change"]) == ["", "better"] and list(p99["direction"]) == ["lower"] * 2
    assert list(gain["significant"]) == [False, True] and list(gain["change"]) == ["", ""]
    assert gain["shift"].iloc[1] == "up"
    words = trend.in_words(tr)
    assert len(words) == 4 and any("worse" in w and "-21 %" in w and "80 [78, 82]" in w for w in words)
    assert any(w.startswith("gain") and "changed (up" in w for w in words)


def test_trend_over_kernels_in_version_order():
    tr = trend.trend(frame(POINTS[:5]), over="kernel")
    assert list(dict.fromkeys(tr["at"])) == ["6.1.0", "6.2.0", "6.12.1"]  # 6.2 before 6.12
    assert list(tr["value"]) == [100, 101, 120, 80, 81] and list(tr["change"]) == ["", "", "better", "worse", ""]
    assert "kernel 6.2.0 → 6.12.1" in trend.in_words(tr)[1]
    by_time = trend.trend(frame(POINTS[:5]), over="kernel", order="time")
    assert list(dict.fromkeys(by_time["at"])) == ["6.1.0", "6.12.1", "6.2.0"]
    with pytest.raises(InputError, match="no column 'nope'"):
        trend.trend(frame(POINTS), over="nope")
    assert trend.trend(history.empty()).empty and trend.in_words(trend.trend(history.empty())) == []


def test_which_way_is_better():
    assert [trend.direction("peak IOPS", u) for u in ("IO/s", "MiB/s", "µs", "ms", "cycles/IO", "%", "IOs", "")] == [
        "higher",
        "higher",
        "lower",
        "lower",
        "lower",
        "",
        "",
        "",
    ]
    assert trend.direction("iops") == "higher" and trend.direction("clat_p99_us") == "lower"
    assert sorted(["6.12.1", "6.2.0", "6.1.0-27", None, "6.1.0-3"], key=trend.version_key) == [
        "6.1.0-3",
        "6.1.0-27",
        "6.2.0",
        "6.12.1",
        None,
    ]


def test_the_plot_says_what_it_shows(tmp_path):
    matplotlib.use("Agg")
    from iolab.plots import trends

    tr = trend.trend(frame(POINTS[:5]))
    ax = trends.plot(tr, "peak IOPS")
    texts = [t.get_text() for t in ax.texts]
    assert ax.get_ylabel() == "peak IOPS (IO/s)" and "over time" in ax.get_title()
    assert any(t.startswith("worse -21") for t in texts) and any(t.startswith("better +50") for t in texts)
    assert any("/made/up" in t and "5 results from 5 executed notebooks" in " ".join(t.split()) for t in texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "no interval recorded" in legend and any(t.startswith("worse:") for t in legend)
    ax.figure.savefig(tmp_path / "trend.png")


# ---------------------------------------------------------------- iolab history
@pytest.fixture
def filled(tmp_path):
    folder = tmp_path / "h"
    history.append(tmp_path / "a.ipynb", kept(result("peak IOPS", 231000, low=225000, high=236000)), "01_x", folder, T0)
    history.append(
        tmp_path / "b.ipynb",
        kept(result("peak IOPS", 198000, low=190000, high=200000), result("IOPS at QD 1", 9, detail=True)),
        "01_x",
        folder,
        datetime.now(UTC),
    )
    return folder


def test_iolab_history_prints_the_table(filled):
    out = cli_here("history", "--dir", filled)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "name",
        "value",
        "[interval]",
        "unit",
        "date",
        "(UTC)",
        "kernel",
        "fio",
        "machine",
        "commit",
        "notebook",
    ]
    assert "231,000 [225,000; 236,000]" in out.stdout and "2026-11-01 08:00" in out.stdout and "01_x" in out.stdout
    assert "IOPS at QD 1" not in out.stdout and "1 per-setting results not shown (--all" in lines[-1]
    assert "2 results from 2 executed notebooks" in lines[-1]
    assert "IOPS at QD 1" in cli_here("history", "--dir", filled, "--all").stdout
    recent = cli_here("history", "--dir", filled, "--since", "7d", "--format", "json")
    rows = json.loads(recent.stdout)
    assert [r["value"] for r in rows] == [198000] and {"kernel", "fio_version", "hostname", "commit"} <= set(rows[0])
    csv = cli_here("history", "--dir", filled, "--metric", "IOPS at QD 1", "--format", "csv")
    assert csv.stdout.startswith("name,value,value_text,unit,low,high") and csv.stdout.count("\n") == 2


def test_iolab_history_says_what_is_wrong_in_one_line(filled, tmp_path):
    empty = cli_here("history", "--dir", tmp_path / "none")
    assert (
        empty.returncode == 0 and empty.stdout == "" and "No results in" in empty.stderr and "make demo" in empty.stderr
    )
    for args, words in [
        (("--since", "last week"), "neither a date"),
        (("--metric", "peak iops"), "no result named 'peak iops'"),
    ]:
        out = cli_here("history", "--dir", filled, *args)
        assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
        assert out.stderr.startswith("iolab history: ") and words in out.stderr and "Traceback" not in out.stderr
    assert "'peak IOPS'" in cli_here("history", "--dir", filled, "--metric", "nope").stderr
    later = cli_here("history", "--dir", filled, "--since", "2099-01-01")
    assert later.returncode == 0 and "no result recorded since 2099-01-01" in later.stderr


@pytest.mark.skipif(not is_root, reason="reading as another user needs root (setpriv)")
def test_another_user_reads_the_history():
    base = Path(tempfile.mkdtemp(prefix="iolab-history-"))
    umask = os.umask(0o022)  # the usual one: the history follows it, as the notebooks do
    try:
        base.chmod(0o755)
        history.append(base / "a.ipynb", kept(result("peak IOPS", 231000)), "01_x", base / "h", T0)
        os.umask(umask)
        out = run_as_nobody(
            [REPO / ".venv/bin/python", "-m", "iolab.cli", "history", "--dir", base / "h"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "IOLAB_STATE": str(base / "state")},
        )
        assert out.returncode == 0 and "231,000" in out.stdout, out.stderr
    finally:
        import shutil

        os.umask(umask)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- notebook 09
NB09 = REPO / "notebooks" / "09_history.ipynb"


def test_notebook_09_on_an_empty_history_says_how_to_fill_it(tmp_path, capsys):
    """Its code cells in this process (tests/test_browser.py runs it on a small history in
    JupyterLab)."""
    matplotlib.use("Agg")
    nb = nbformat.read(NB09, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    scope: dict = {}
    exec(cells[0], scope)  # the parameters
    scope["history_dir"] = str(tmp_path / "none-yet")
    for source in cells[1:]:
        exec(python_of(source), scope)
    said = capsys.readouterr().out
    assert (
        "No results in" in said
        and "make demo" in said
        and "Nothing to draw" in said
        and "Nothing to compare yet" in said
    )


def test_one_point_in_time_gets_an_hour_around_it_not_years():
    matplotlib.use("Agg")
    import matplotlib.dates as mdates

    from iolab.plots import trends

    tr = trend.trend(frame(POINTS[:1]))
    low, high = trends.plot(tr, "peak IOPS").get_xlim()
    assert 0.9 / 24 < high - low < 1.1 / 24, (mdates.num2date(low), mdates.num2date(high))  # days: one hour


def test_a_jupyterlab_run_and_papermill_runs_of_the_same_settings_are_one_series(tmp_path):
    """Issue P34: notebook 09 never joined a JupyterLab run and a papermill run of one study.
    A series is what was measured: how the notebook ran (interactive, runs_dir) and values
    equal to the notebook's defaults (papermill keeps what it was given) do not split it."""
    folder, nb = tmp_path / "h", "01_queue_depth_knee"
    history.append(tmp_path / "a.ipynb", kept(result("peak IOPS", 100, low=90, high=110), runtime_s=1), nb, folder, T0)
    history.append(
        tmp_path / "b.ipynb",
        kept(result("peak IOPS", 101, low=91, high=111), runtime_s=1, interactive=False, bs="4k"),  # bs: the default
        nb,
        folder,
        T0 + timedelta(hours=1),
    )
    history.append(
        "live kernel: 01_queue_depth_knee.ipynb",
        kept(result("peak IOPS", 99, low=89, high=109), runtime_s=1),
        nb,
        folder,
    )
    history.append(tmp_path / "c.ipynb", kept(result("peak IOPS", 50), runtime_s=1, bs="64k"), nb, folder)
    tr = trend.trend(history.load(folder))
    assert sorted(tr.groupby("series").size().to_dict().items()) == [("bs 64k", 1), ("bs default", 3)]
