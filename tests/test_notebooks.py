"""Notebooks run headless through papermill with short settings, and export to HTML with
their figures as inline pictures."""
import re

import nbformat

import pytest

from conftest import CPU, REPO
from iolab.publish import execute, to_html


@pytest.mark.slow
def test_queue_depth_knee_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    out = execute(REPO / "notebooks/01_queue_depth_knee.ipynb", tmp_path / "01.ipynb",
                  {"queue_depths": [1, 4, 16, 64], "runtime_s": 0.3, "size": "64m", "repeats": 2,
                   "interactive": False, "cpu": CPU})
    nb = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "IOPS at QD" in text and "Cycles per IO" in text
    assert "median IOPS of 2 repeats per QD" in text or "No knee:" in text  # knee_with_interval's words
    assert "resamples" in text or "sweep deeper" in text or "rule says" in text
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert images >= 4
    html = to_html(out).read_text()
    assert html.count("data:image/png;base64") >= 4 and "qd_sweep(" not in html  # no code cells
    assert list((tmp_path / "data/runs").glob("qd-knee-*/*/fio.json"))


def test_unknown_parameter_is_refused(tmp_path):
    from iolab.errors import IolabError
    with pytest.raises(IolabError, match="no parameter.*queue_depth"):
        execute(REPO / "notebooks/01_queue_depth_knee.ipynb", tmp_path / "x.ipynb", {"queue_depth": [1]})


@pytest.mark.slow
def test_flame_graph_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    out = execute(REPO / "notebooks/04_flame_graph.ipynb", tmp_path / "04.ipynb",
                  {"runtime_s": 0.5, "size": "64m", "interactive": False, "cpu": CPU})
    nb = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "of the samples are idle" in text and "Normalised to equal totals" in text
    html = to_html(out).read_text()
    assert html.count("data:image/png;base64") >= 2  # both flame graphs are pictures


@pytest.mark.slow
def test_over_time_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    out = execute(REPO / "notebooks/08_over_time.ipynb", tmp_path / "08.ipynb",
                  {"runtime_s": 3, "log_ms": 500, "size": "64m", "interactive": False, "cpu": CPU})
    nb = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in nb.cells for o in c.get("outputs", []))
    assert "the series accounts for" in text and "intervals of 500 ms" in text
    assert "steady state (" in text.lower() and "stall" in text
    html = to_html(out).read_text()
    assert html.count("data:image/png;base64") >= 3  # the aligned series, the heatmap, the explorer's figure
    assert "fio report (whole run)" in html and "logs (covered intervals)" in html
    assert list((tmp_path / "data/runs").glob("over-time-*/*/fio_clat_hist.1.log"))


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="loop devices need root")
@pytest.mark.parametrize("name,params,expect", [
    ("02_single_core_tuning_ladder.ipynb", {"runtime_s": 0.3, "size": "128m", "repeats": 2}, "skipped"),
    ("03_io_uring_per_core.ipynb", {"runtime_s": 0.5, "size": "128m", "queue_depths": [1, 16]}, "Little's law estimate"),
    # either verdict is the notebook's: beside other tests' load, 2 repeats may leave every interval overlapping
    ("05_parameter_search.ipynb", {"spec": str(REPO / "tests/fixtures/search/notebook05.yaml")},
     "matters most|No setting makes a difference the repeats can show"),
    ("06_kernel_io_path.ipynb", {"runtime_s": 0.3, "size": "128m", "block_sizes": ["4k", "256k"], "repeats": 2,
                                 "readahead_kb": [0, 512], "schedulers": ["none", "mq-deadline"]},
     "queue knobs restored"),
])
def test_loop_device_notebooks(name, params, expect, tmp_path, monkeypatch, loop_watch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    out = execute(REPO / "notebooks" / name, tmp_path / name, {**params, "cpu": CPU} if "spec" not in params else params)
    nb = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in nb.cells for o in c.get("outputs", []))
    assert re.search(expect, text), text[-2000:]
    assert to_html(out).read_text().count("data:image/png;base64") >= 1
    assert loop_watch.seen and not loop_watch.left_behind()  # its loop devices, detached and removed
