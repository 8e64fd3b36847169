"""Small notebooks for tests, written to a path (no fio: they run in seconds), and a notebook
cell as plain Python."""

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from iolab.record.results import MIME as RESULTS_MIME

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
TINY_PARAMETERS = {"label": "tiny run", "depths": [1, 4, 16]}  # for ``write_tiny_notebook``


def python_of(cell_source: str) -> str:
    """A notebook code cell as plain Python for exec(): its IPython magic lines (the notebooks'
    ``%load_ext iolab``) left out."""
    return "\n".join(line for line in cell_source.splitlines() if not line.lstrip().startswith("%"))


def notebook(path, *code, parameters="n = 1\nruns_dir = ''"):
    """A notebook with a parameters cell and the cells ``code``, written to ``path``."""
    cells = [new_code_cell(parameters, metadata={"tags": ["parameters"]})]
    cells += [new_code_cell(c) for c in code]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC}), path)
    return path


def tiny_notebook(path):
    """A notebook with parameters x, fail and cpu that records 2x: what a batch runs."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x: int = 1  # a number\nfail: bool = False  # raise on purpose\ncpu: int = 0")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "import time\nfrom iolab.record import results\nif fail:\n    raise ValueError('asked to fail')\n"
            "time.sleep(0.5)\nresults.record('double', 2 * x, 'units', 'the test notebook', low=2 * x - 1, high=2 * x + 1)"
        ),
    ]
    nb.metadata["kernelspec"] = KERNELSPEC
    nbformat.write(nb, path)
    return path


def manifest(tmp_path, **doc):
    """A batch manifest (batch.yaml in ``tmp_path``) of ``tiny_notebook`` with the keys ``doc``."""
    tiny_notebook(tmp_path / "tiny.ipynb")
    path = tmp_path / "batch.yaml"
    path.write_text(yaml.safe_dump({"notebook": "tiny.ipynb", **doc}))
    return path


def write_tiny_notebook(path):
    """A notebook to write up: a parameters cell, a DataFrame with numbers to make readable,
    a matplotlib figure, an iolab results output, a link in the text."""
    nb = new_notebook(
        cells=[
            new_markdown_cell(
                "# A tiny study\n\nMade-up numbers that check the write-up; "
                "[a paper](https://example.org/paper) stays a link."
            ),
            new_code_cell(
                'label = "tiny"  # what this run is called\nscale = 1.0  # multiplies every number\n'
                "depths = [1, 2]  # queue depths",
                metadata={"tags": ["parameters"]},
            ),
            new_code_cell(
                "import pandas as pd\n"
                'pd.DataFrame({"qd": depths, "iops": [22441.558442 * scale, 1234.56, 0.982029],\n'
                '              "clat_p99_us": [64.256, 2.596134, 1500.0], "year": [2011, 2020, 2024],\n'
                '              "what": ["a", "b", "c"]})'
            ),
            new_code_cell(
                "import matplotlib.pyplot as plt\n"
                "fig, ax = plt.subplots(figsize=(4, 3))\nax.plot(depths, [1, 2, 3])\nax.set_title(label)\n"
                "plt.show()"
            ),
            new_code_cell(
                "from IPython.display import display\n"
                f"display({{{RESULTS_MIME!r}: {{'results': [{{'name': 'peak IOPS', 'value': 22441.558442, "
                "'unit': 'IO/s', 'source': 'made up', 'low': 21000, 'high': 23500.5, 'note': 'a test'}]}, "
                "'text/plain': 'RESULT-OUTPUT-MARKER'}, raw=True)"
            ),
        ],
        metadata={"kernelspec": KERNELSPEC},
    )
    nbformat.write(nb, path)
    return path
