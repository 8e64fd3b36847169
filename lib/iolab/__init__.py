"""iolab: a Jupyter notebook research kit for Linux storage I/O performance.

Each module owns one concern; data flows one way, from a run to tables to plots. The
folders are the layers (docs/how-it-works.md and tests/test_layers.py): a shared
``core``; ``machine`` -> ``runs`` -> ``measure`` -> ``studies`` (what touches the machine);
``read`` -> ``stats`` -> ``plots`` (what reads the tools' outputs and draws them);
``report`` (notebooks, write-ups, batch, seeds) and ``cli`` over all of them.
"""

__version__ = "0.1.0"

from .core.progress import ipython_shell as _ipython_shell

_shell = _ipython_shell()
if _shell is not None:  # in a notebook: the kit's errors as one short block, its tables as in the write-ups
    from .core.errors import brief_in_notebooks as _brief_in_notebooks
    from .core.readable import live_tables as _live_tables

    _brief_in_notebooks(_shell)
    _live_tables(_shell)
