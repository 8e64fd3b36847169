"""Notebooks run headless through papermill. Notebooks 01-05 run headless in
tests/test_seeds.py, through the seeds' smoke runs (the same sizes, once); all nine run in
JupyterLab (tests/test_browser.py), the write-ups of 06, 07 and 08 made from what JupyterLab
saved."""

import pytest

from conftest import REPO
from iolab.report.publish import execute


def test_unknown_parameter_is_refused(tmp_path):
    from iolab.core.errors import IolabError

    with pytest.raises(IolabError, match="no parameter.*queue_depth"):
        execute(REPO / "notebooks/01_queue_depth_knee.ipynb", tmp_path / "x.ipynb", {"queue_depth": [1]})
