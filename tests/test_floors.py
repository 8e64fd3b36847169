"""The dependency floors, proven where they are installed: `make test` runs this module again in
.venv-lowest, where every direct dependency is at the lowest version pyproject.toml accepts (uv's
lowest-direct resolution). Below pydantic 2.7.4 `iolab seeds` crashed at import; with
jupyter_client 8.0.1 papermill hung after the last cell; nbconvert below 7.16.5 crashed
`iolab publish` with today's mistune. Here: the seeds' plan, a notebook of iolab's executed by
papermill on a kernel of this very interpreter (%load_ext iolab, a table, a figure), and its
write-up."""

import json
import subprocess
import sys

from support.paths import REPO

NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "rows = 3", "outputs": [],
         "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": "## A table and a figure\n\n$x^2$, *read* as a write-up."},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source":
            "%load_ext iolab\nimport matplotlib.pyplot as plt\nimport pandas as pd\n"
            "table = pd.DataFrame({'qd': range(1, rows + 1), 'iops': [12748.6 * q for q in range(1, rows + 1)]})\n"
            "ax = table.plot(x='qd', y='iops')\nplt.show()\ntable"},
    ],
    "metadata": {"kernelspec": {"name": "floors", "display_name": "floors", "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip


def run(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True, timeout=240, **kw)


def test_the_plan_a_notebook_and_its_write_up_at_these_versions(tmp_path):
    import os

    version = run("-m", "iolab", "--version")  # python -m iolab, as pip users try it first
    assert version.returncode == 0 and version.stdout.startswith("iolab "), version.stderr
    plan = run("-m", "iolab.cli", "seeds", "--dry-run", "--out", tmp_path / "seeds")
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "notebook runs" in plan.stdout and not (tmp_path / "seeds").exists()
    kernels = tmp_path / "jupyter" / "kernels" / "floors"  # a kernel of this interpreter, found through JUPYTER_PATH
    kernels.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "language": "python"}
    (kernels / "kernel.json").write_text(json.dumps({**spec, "display_name": "floors"}))
    given = tmp_path / "floors.ipynb"
    given.write_text(json.dumps(NOTEBOOK))
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter"), "PYTHONPATH": str(REPO / "lib")}
    out = tmp_path / "floors.out.ipynb"
    done = run("-m", "papermill", given, out, "-p", "rows", "4", "--log-level", "WARNING", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    cells = json.loads(out.read_text())["cells"]
    shown = "".join("".join(o.get("data", {}).get("text/html", "")) for o in cells[-1]["outputs"])
    assert "50,994" in shown  # iolab's table format, in the kernel: 12748.6 x 4
    assert any("image/png" in o.get("data", {}) for o in cells[-1]["outputs"])
    page = run("-m", "iolab.cli", "publish", out, "-o", tmp_path / "floors.html", env=env)
    assert page.returncode == 0, page.stderr[-2000:]
    assert "A table and a figure" in (tmp_path / "floors.html").read_text()
