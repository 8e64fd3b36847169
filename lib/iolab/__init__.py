"""iolab: a Jupyter notebook research kit for Linux storage I/O performance.

Each module owns one concern; data flows one way, from a run to tables to plots (the
layers: README, "How it works", and tests/test_layers.py):
target -> fio (+ sampling, perf) -> store -> analysis -> plots.
"""

__version__ = "0.1.0"

from .progress import ipython_shell as _ipython_shell

_shell = _ipython_shell()
if _shell is not None:  # in a notebook: the kit's errors as one short block, its tables as in the write-ups
    from .errors import brief_in_notebooks as _brief_in_notebooks
    from .readable import live_tables as _live_tables

    _brief_in_notebooks(_shell)
    _live_tables(_shell)
