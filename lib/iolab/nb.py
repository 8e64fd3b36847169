"""The notebooks' front door: what every notebook of ``notebooks/`` needs beside the studies,
readings and plots it narrates, in one import.

    %load_ext iolab
    from iolab.nb import MeasureOptions, fio_time, published_figures, results, targets
    tgt = targets.use(target, size)                     # the scratch file, a loop device or a path
    how = MeasureOptions(allow_destructive=allow_destructive, threads=threads)
    job = {"rw": rw, "bs": bs, "runtime": fio_time(runtime_s)}
    ...
    results.record("peak IOPS", value, "IO/s")          # kept with the executed notebook
    results.record_runs(table)

Targets: ``targets`` (``iolab.machine.target``: ``use``, ``release``, ``existing_path``).
How to measure: ``MeasureOptions``, ``measure`` (one run), ``new_sweep_dir`` (a run folder
of its own), ``fio_time`` (seconds as fio's time), ``perf`` (profiling), ``hosts`` and
``fio_version`` (fio servers), ``search`` and ``load_spec`` (a parameter search), and the
readers of notebook parameters papermill passes as text (``positive_ints``, ``list_param``,
``dict_param``). Reading back: ``load_runs``, ``load_stacks``, ``run_commands`` and ``show_commands`` (the command lines behind a table of runs, as a table or printed to copy), ``threadstates`` (the thread
states sampled beside a run). The record: ``results`` (``iolab.record.results``) and
``history`` (``iolab.record.history``, loaded when first named: it needs pyarrow). The
machine: ``snapshot``, ``machine_facts`` (a snapshot as a table of facts in words), ``queue_knobs``, ``preflight`` (``preflight.verdicts(tgt, [cpu])``: is it set
up for the study? the top of every measuring notebook), ``topology`` (where devices sit: root
ports, links, NUMA nodes). Words and numbers: ``wrapped``, ``columns`` (every
column's unit and which way is better), ``details`` (a figure's sources under it), ``save_figure`` (a figure as PNG, SVG and PDF files to keep),
``explorer`` (any setting against any metric, the code for it), ``explain`` (why B differs from A: ``iolab explain``'s
ranking of the recorded differences, two runs folders or two lists of run folders; print it). The seeds' published
figures: ``published_figures``, and ``reference_bars`` (them beside this machine's). Where things are: ``REPO``, ``runs_home``
(``$IOLAB_DATA``/runs: data/runs).
"""

from __future__ import annotations

import importlib
from typing import Any

from .compare.explain import explain_paths as explain
from .core import columns
from .core.paths import REPO
from .core.paths import runs_dir as runs_home
from .core.readable import wrapped
from .core.system import queue_knobs, snapshot
from .core.validate import dict_param, fio_time, list_param, positive_ints
from .machine import hosts, perf, preflight, topology
from .machine import target as targets
from .machine.fio import fio_version
from .measure import search
from .measure.options import MeasureOptions
from .measure.runner import measure
from .measure.search_spec import load_spec
from .measure.sweep import new_sweep_dir
from .plots.common import details, save_figure
from .plots.explore import explorer
from .plots.published import reference_bars
from .read import threadstates
from .read.published import published_figures
from .read.run import run_commands, show_commands
from .record import results
from .record.provenance import machine_facts
from .runs.runcache import load_runs
from .runs.store import load_stacks


def __getattr__(name: str) -> Any:
    if name == "history":  # pyarrow: only for the notebooks that read the history
        return importlib.import_module(".record.history", __package__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "REPO",
    "MeasureOptions",
    "columns",
    "details",
    "dict_param",
    "explain",
    "explorer",
    "fio_time",
    "fio_version",
    "hosts",
    "list_param",
    "load_runs",
    "load_spec",
    "load_stacks",
    "machine_facts",
    "measure",
    "new_sweep_dir",
    "perf",
    "preflight",
    "positive_ints",
    "published_figures",
    "queue_knobs",
    "reference_bars",
    "results",
    "run_commands",
    "runs_home",
    "save_figure",
    "search",
    "show_commands",
    "snapshot",
    "targets",
    "threadstates",
    "topology",
    "wrapped",
]
