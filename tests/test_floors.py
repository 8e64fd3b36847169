"""The dependency floors, proven where they are installed: `make test` runs this module again in
.venv-lowest, where every direct dependency is at the lowest version pyproject.toml accepts (uv's
lowest-direct resolution). Below pydantic 2.7.4 `iolab seeds` crashed at import; with
jupyter_client 8.0.1 papermill hung after the last cell; nbconvert below 7.16.5 crashed
`iolab publish` with today's mistune. Here: the seeds' plan, and a notebook run by `iolab batch`
(papermill's execute_notebook, nbclient, jupyter_client, nbconvert) on a kernel of this very
interpreter (%load_ext iolab, a table, a figure), with its write-up. Its kernel talks over Unix
sockets, as iolab's headless kernels do where the sockets' path fits: over TCP, papermill's own
CLI here once lost its kernel at start-up to a port another test's kernel took first."""

import json
import subprocess
import sys

from support.paths import REPO

NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "rows = 3", "outputs": [],
         "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "import sys\nfrom ipykernel.kernelapp import IPKernelApp\nprint(sys.prefix)\nprint(IPKernelApp.instance().transport)", "outputs": [],
         "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": "## A table and a figure\n\n$x^2$, *read* as a write-up."},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source":
            "%load_ext iolab\nimport matplotlib.pyplot as plt\nimport pandas as pd\n"
            "table = pd.DataFrame({'qd': range(1, rows + 1), 'iops': [12748.6 * q for q in range(1, rows + 1)]})\n"
            "ax = table.plot(x='qd', y='iops')\nplt.show()\ntable"},
    ],
    "metadata": {"kernelspec": {"name": "iolab", "display_name": "floors", "language": "python"}},
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
    kernels = tmp_path / "jupyter" / "kernels" / "iolab"  # the kernel iolab runs on, this interpreter's (JUPYTER_PATH)
    kernels.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "language": "python"}
    (kernels / "kernel.json").write_text(json.dumps({**spec, "display_name": "floors"}))
    (tmp_path / "floors.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "floors.yaml").write_text("notebook: floors.ipynb\nruns: [{name: four, parameters: {rows: 4}}]\n")
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter"), "PYTHONPATH": str(REPO / "lib")}
    done = run("-m", "iolab.cli", "batch", tmp_path / "floors.yaml", "--out", tmp_path / "out", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "out" / "four" / "notebook_run.json").read_text())
    assert record["status"] == "ok" and not record["error"], record  # e.g. "no write-up: " and nbconvert's words
    cells = json.loads((tmp_path / "out" / "four" / "floors.ipynb").read_text())["cells"]
    printed = next(c["outputs"] for c in cells if "".join(c["source"]).startswith("import sys"))
    said = "".join("".join(o["text"]) for o in printed if o.get("name") == "stdout").split()
    assert said == [sys.prefix, "ipc"], said  # the kernel ran at these versions, on Unix sockets
    shown = "".join("".join(o.get("data", {}).get("text/html", "")) for o in cells[-1]["outputs"])
    assert "50,994" in shown  # iolab's table format, in the kernel: 12748.6 x 4
    assert any("image/png" in o.get("data", {}) for o in cells[-1]["outputs"])
    assert "A table and a figure" in (tmp_path / "out" / "four" / "floors.html").read_text()  # its write-up
