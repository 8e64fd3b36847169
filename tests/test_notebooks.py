"""Notebooks run headless through papermill with short settings, and export to HTML with
their figures as inline pictures. Notebooks 01-05 run in tests/test_seeds.py, through the
seeds' smoke runs (the same sizes, once); 07 and 08 in JupyterLab (tests/test_browser.py),
their write-ups made from what JupyterLab saved."""

import re

import nbformat

import pytest

from conftest import CPU, REPO
from iolab.report.publish import execute, to_html


def test_unknown_parameter_is_refused(tmp_path):
    from iolab.core.errors import IolabError

    with pytest.raises(IolabError, match="no parameter.*queue_depth"):
        execute(REPO / "notebooks/01_queue_depth_knee.ipynb", tmp_path / "x.ipynb", {"queue_depth": [1]})


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="loop devices need root")
@pytest.mark.parametrize(
    "name,params,expect",
    [
        # notebooks 01-05 run through iolab seeds' smoke runs (tests/test_seeds.py)
        (
            "06_kernel_io_path.ipynb",
            {
                "runtime_s": 0.3,
                "size": "128m",
                "block_sizes": ["4k", "256k"],
                "repeats": 1,
                "readahead_kb": [0, 512],
                "schedulers": ["none", "mq-deadline"],
            },
            "queue knobs restored",
        ),
    ],
)
def test_loop_device_notebooks(name, params, expect, tmp_path, monkeypatch, loop_watch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    out = execute(
        REPO / "notebooks" / name, tmp_path / name, {**params, "cpu": CPU} if "spec" not in params else params
    )
    nb = nbformat.read(out, as_version=4)
    text = "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
    )
    assert re.search(expect, text), text[-2000:]
    assert to_html(out).read_text().count("data:image/png;base64") >= 1
    assert loop_watch.seen and not loop_watch.left_behind()  # its loop devices, detached and removed
