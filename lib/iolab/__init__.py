"""iolab: a Jupyter notebook research kit for Linux storage I/O performance.

The public surface notebooks use; each module owns one concern (see DESIGN.md):
target -> fio (+ sampling, perf) -> store -> analysis -> plots.
"""
__version__ = "0.1.0"
