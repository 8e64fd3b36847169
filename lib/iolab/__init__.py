"""iolab: a Jupyter notebook research kit for Linux storage I/O performance.

The public surface notebooks use; each module owns one concern (see DESIGN.md):
target -> fio (+ sampling, perf) -> store -> analysis -> plots.
"""
__version__ = "0.1.0"

import sys as _sys

if "IPython" in _sys.modules:  # in a notebook: the kit's own errors as one short block (errors.brief_in_notebooks)
    from .errors import brief_in_notebooks as _brief_in_notebooks

    _brief_in_notebooks()
