"""Executed notebooks replace the last good ones only when complete."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO
from iolab.errors import IolabError
from iolab.publish import execute

PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
NB = REPO / "notebooks" / "01_queue_depth_knee.ipynb"


def test_a_failed_notebook_keeps_the_last_good_one(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    good = tmp_path / "01.ipynb"
    good.write_text("the last good report")
    with pytest.raises(IolabError, match=r"01\.failed\.ipynb.*last good one is still"):
        execute(NB, good, {"target": str(tmp_path / "no-such-device"), "interactive": False})
    assert good.read_text() == "the last good report"
    assert "no-such-device" in (tmp_path / "01.failed.ipynb").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".ipynb") == ["01.failed.ipynb", "01.ipynb"]


def test_interrupted_demo_prints_one_line_and_keeps_the_reports(tmp_path):
    """Ctrl-C of `iolab demo` (what `make demo` runs), sent to its whole process group as a
    terminal does: one line on stderr, the last good notebook kept, the partial one beside."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "01_queue_depth_knee.ipynb").write_text("good")
    env = {**os.environ, "IOLAB_DATA": str(tmp_path / "data"), "IOLAB_STATE": str(tmp_path / "state")}
    proc = subprocess.Popen([PY, "-m", "iolab.cli", "demo", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list((tmp_path / "data").glob("runs/qd-knee-*/*/job.fio")) and time.monotonic() < deadline:
        time.sleep(0.1)  # the notebook's kernel is measuring
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert (out / "01_queue_depth_knee.ipynb").read_text() == "good"
    assert (out / "01_queue_depth_knee.partial.ipynb").exists()
    assert not list(out.glob(".*running*"))
