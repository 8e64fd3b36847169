"""The notebook contract: what a run of each notebook of ``notebooks/`` costs, read by
``iolab batch``, ``iolab seeds`` and ``make demo`` alike.

A notebook's cost is its fio runs times their runtime plus ``RUN_OVERHEAD_S`` each
(``iolab.measure.plans``), and ``NOTEBOOK_OVERHEAD_S`` for the notebook itself (kernel start,
imports, plots), measured on this project's 2-core VM; inside the NVMe lab's QEMU TCG guest
(``IOLAB_NVMELAB`` says so) everything takes ``TCG_SLOWDOWN`` times longer (notebook 01 at the
quick settings: 31 s here, 220 s in the guest)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..measure.plans import RUN_OVERHEAD_S

NOTEBOOK_OVERHEAD_S = 15.0
TCG_SLOWDOWN = 7.0


def estimate_run(notebook: Path, params: Mapping[str, Any]) -> tuple[int, float]:
    """(fio runs, seconds) a run of ``notebook`` with ``params`` should take: its runs times
    their runtime plus ``RUN_OVERHEAD_S``, and ``NOTEBOOK_OVERHEAD_S`` for the notebook itself
    (a notebook this does not know: one run of its ``runtime_s``). ``iolab batch`` and
    ``iolab seeds`` plan with it."""
    name = Path(notebook).name
    rt = float(params.get("runtime_s", 2.0))
    repeats = int(params.get("repeats", 1))
    if name.startswith("01"):
        runs = len(params.get("queue_depths", [])) * repeats + 1
        seconds = runs * (rt + RUN_OVERHEAD_S)
    elif name.startswith("02"):
        from ..studies.ladder import default_ladder

        runs = len(default_ladder()) * repeats + 1
        seconds = runs * (rt + RUN_OVERHEAD_S)
    elif name.startswith("03"):
        qds = len(params.get("queue_depths", [1, 16, 128])) * repeats
        runs = 2 * qds  # fio and t/io_uring (which runs at least 2 s)
        seconds = qds * (rt + max(2.0, rt) + 2 * RUN_OVERHEAD_S)
    elif name.startswith("04"):
        runs = 2
        seconds = 2 * (rt + 3.0)  # perf record and its report
    elif name.startswith("05"):
        runs, each = _search_runs(Path(params["spec"]))
        seconds = runs * each
    else:
        runs, seconds = 1, rt
    return runs, (seconds + NOTEBOOK_OVERHEAD_S) * slowdown()


def slowdown() -> float:
    """How much slower than this machine's native speed the plan runs: ``TCG_SLOWDOWN`` in
    the NVMe lab's emulated guest, else 1."""
    return TCG_SLOWDOWN if "TCG" in os.environ.get("IOLAB_NVMELAB", "") else 1.0


def _search_runs(spec_path: Path) -> tuple[int, float]:
    """(runs, seconds each, its overhead included) of a search spec on this machine: its legal
    cells once the machine settings it cannot vary are left out, times its repeats; each run
    as ``iolab search --dry-run`` counts it (``iolab.measure.search.run_seconds``)."""
    from ..measure import search, search_spec

    spec = search_spec.load_spec(spec_path)
    try:
        kept = search.runnable_cells(spec, [None])[0]  # the CPU knobs do not look at a target
    except (AttributeError, TypeError, OSError):  # a device knob needs a target: every cell (an upper bound)
        kept = search.cells(spec, [])[0]
    return len(kept) * spec.repeats, search.run_seconds(spec.base)
