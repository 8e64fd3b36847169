"""The notebook contract: one declaration per notebook of ``notebooks/``, read by ``iolab
batch``, ``iolab seeds``, ``make demo``, ``iolab reproduce`` and the tests alike.

    nb = declared("01_queue_depth_knee.ipynb")
    nb.defaults()                        # its parameters and defaults, read from its parameters cell
    nb.result("iops_at_qd").name         # "IOPS at QD {qd}": what it records, by key, with its unit
    estimate_run(nb.path, params)        # (fio runs, seconds) a run with params should take
    nb.demo(0.4), nb.smoke               # make demo's settings; the smallest that take every path

The parameters cell is the one source of the parameters and their defaults: a declaration
reads it (``ast``, no kernel). Results are recorded under names people read ("IOPS at QD
32"); each has a stable key here (``iops_at_qd``), and the seed manifests name keys.
Executed notebooks and the history keep the names, so old ones read as before
(``Notebook.key_of``).

A notebook's cost is its fio runs times their runtime plus ``RUN_OVERHEAD_S`` each
(``iolab.measure.plans``), and ``NOTEBOOK_OVERHEAD_S`` for the notebook itself (kernel start,
imports, plots); inside the NVMe lab's QEMU TCG guest (``IOLAB_NVMELAB`` says so) everything
takes ``TCG_SLOWDOWN`` times longer."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core import paths
from ..measure.plans import RUN_OVERHEAD_S

NOTEBOOK_OVERHEAD_S = 15.0  # seconds: kernel start, imports and plots of one notebook on a 2-core VM
TCG_SLOWDOWN = 7.0  # notebook 01 at the seeds' quick settings took 7 times longer in the TCG guest

Cost = Callable[[Mapping[str, Any]], "tuple[int, float]"]


@dataclass(frozen=True)
class Result:
    """One result a notebook records: its stable ``key``, the ``name`` it is recorded under (a
    template: "IOPS at QD {qd}" is one result per depth), its ``unit`` and what it means."""

    key: str
    name: str
    unit: str
    words: str

    def pattern(self) -> re.Pattern:
        """The recorded names this result takes ("IOPS at QD 32" for "IOPS at QD {qd}")."""
        parts = re.split(r"\{[^}]*\}", self.name)
        return re.compile("^" + ".+?".join(map(re.escape, parts)) + "$")


@dataclass(frozen=True)
class Notebook:
    """A notebook's declaration: its file in ``notebooks/``, its cost model (``cost(params)``:
    (fio runs, seconds) before the notebook's own overhead, ``params`` over its defaults), the
    results it records, its smoke settings (the smallest that take every path: the browser
    tests and the headless checks run it with them) and its demo settings (``demo(runtime_s)``,
    for ``make demo``; None: not in the demo)."""

    file: str
    cost: Cost
    results: tuple[Result, ...] = ()
    smoke: Mapping[str, Any] = field(default_factory=dict)
    demo: Callable[[float], dict[str, Any]] | None = None

    @property
    def path(self) -> Path:
        return paths.NOTEBOOKS / self.file

    def defaults(self) -> dict[str, Any]:
        """Its parameters and their defaults, as its parameters cell sets them."""
        return parameters_of(self.path)

    def result(self, key: str) -> Result:
        """The result ``key`` names; KeyError when this notebook records none of that key."""
        for r in self.results:
            if r.key == key:
                return r
        raise KeyError(f"{self.file} records no result {key!r}; its keys: {', '.join(r.key for r in self.results)}")

    def key_of(self, name: str) -> str | None:
        """The key of a recorded result's ``name`` (None: not one this notebook declares)."""
        return next((r.key for r in self.results if r.pattern().match(name)), None)


def _runs(n: int, params: Mapping[str, Any]) -> tuple[int, float]:
    """``n`` fio runs of the notebook's ``runtime_s`` each, with ``RUN_OVERHEAD_S``."""
    return n, n * (_runtime(params) + RUN_OVERHEAD_S)


def _runtime(params: Mapping[str, Any]) -> float:
    return float(params.get("runtime_s", 2.0))


def _repeats(params: Mapping[str, Any]) -> int:
    return int(params.get("repeats", 1))


def _qd_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    return _runs(len(params.get("queue_depths", [])) * _repeats(params) + 1, params)  # + the warm-up run


def _ladder_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    """The fixed-depth ladder, and unless ``operating_point`` is off the climb: each step's
    search at most ``climb_runs_per_step`` runs (3 x repeats by default), an upper bound."""
    from ..studies.ladder import default_ladder

    steps = len(default_ladder())
    runs = steps * _repeats(params) + 1
    if str(params.get("operating_point", "knee")).strip().lower() != "off":
        runs += steps * (int(params.get("climb_runs_per_step") or 0) or 3 * _repeats(params)) + 1
    return _runs(runs, params)


def _per_core_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    qds = len(params.get("queue_depths", [1, 16, 128])) * _repeats(params)
    rt = _runtime(params)
    return 2 * qds, qds * (rt + max(2.0, rt) + 2 * RUN_OVERHEAD_S)  # fio, then t/io_uring (at least 2 s)


def _flame_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    return 2, 2 * (_runtime(params) + 3.0)  # two profiled runs, each with perf record and its report


def _search_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    """(runs, seconds) of notebook 05's search spec on this machine: its legal cells once the
    machine settings it cannot vary are left out, times its repeats; each run as ``iolab
    search --dry-run`` counts it (``iolab.measure.search.run_seconds``)."""
    from ..measure import search
    from ..studies.search import spec_of  # the path as notebook 05 reads it: here, else the checkout

    spec = spec_of(params["spec"])
    try:
        kept = search.runnable_cells(spec, [None])[0]  # the CPU knobs do not look at a target
    except (AttributeError, TypeError, OSError):  # a device knob needs a target: every cell (an upper bound)
        kept = search.cells(spec, [])[0]
    runs = len(kept) * spec.repeats
    return runs, runs * search.run_seconds(spec.base)


def _kernel_path_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    """Direct and buffered, each read-ahead, scheduler and block size, ``repeats`` times each;
    then one fio per device together (no schedulers named: the four Linux offers)."""
    settings = (
        2
        + sum(len(params.get(k) or []) for k in ("readahead_kb", "block_sizes"))
        + len(params.get("schedulers") or [0] * 4)
    )
    return _runs(settings * _repeats(params) + int(params.get("n_devices", 2)), params)


def _many_hosts_cost(params: Mapping[str, Any]) -> tuple[int, float]:
    """Every number of hosts from one to all of them, ``repeats`` times each."""
    hosts = [h for h in str(params.get("hosts") or "").split(",") if h.strip()]
    return _runs((len(hosts) or int(params.get("start_local_servers", 2))) * _repeats(params), params)


def _one_run(params: Mapping[str, Any]) -> tuple[int, float]:
    """A notebook without a finer model: one run of its ``runtime_s``."""
    return 1, _runtime(params)


NOTEBOOKS: dict[str, Notebook] = {
    nb.file: nb
    for nb in (
        Notebook(
            "01_queue_depth_knee.ipynb",
            _qd_cost,
            (
                Result("peak_iops", "peak IOPS", "IO/s", "the most IOPS of the sweep, at its depth"),
                Result("knee_qd", "knee QD", "IOs", "the queue depth where IOPS stop growing"),
                Result(
                    "cycles_per_io_peak", "cycles per IO at the peak", "cycles/IO", "CPU cost of one IO at the peak"
                ),
                Result(
                    "cycles_per_io_core_peak",
                    "core-busy cycles per IO at the peak",
                    "cycles/IO",
                    "the pinned CPU's busy cycles per IO at the peak: fio's own and all else that ran there",
                ),
                Result("clat_p99_knee", "clat p99 at the knee", "µs", "tail latency at the knee"),
                Result("iops_at_qd", "IOPS at QD {qd}", "IO/s", "IOPS at each queue depth, over the repeats"),
                Result("clat_p50_at_qd", "clat p50 at QD {qd}", "µs", "median completion latency at each depth"),
                Result(
                    "clat_p99_at_qd", "clat p99 at QD {qd}", "µs", "99th percentile completion latency at each depth"
                ),
            ),
            smoke={"runtime_s": 0.3, "queue_depths": [1, 4], "size": "64m"},
            # 3 repeats (the knee's interval resamples them) x 8 depths; up to QD 128, where a
            # scratch file on a VM disk flattens (to 64 it may not: "no knee, sweep deeper").
            # The whole demo at 0.4 s per run (fio adds about 0.3 s to each): keep it under a minute.
            demo=lambda rt: {
                "runtime_s": rt,
                "queue_depths": [1, 2, 4, 8, 16, 32, 64, 128],
                "repeats": 3,
                "size": "256m",
            },
        ),
        Notebook(
            "02_single_core_tuning_ladder.ipynb",
            _ladder_cost,
            (
                Result("baseline_iops", "baseline IOPS", "IO/s", "the first measured step's IOPS"),
                Result("final_iops", "final step IOPS", "IO/s", "the last measured step's IOPS"),
                Result("largest_gain", "largest gain", "%", "the biggest gain of one step over the last kept one"),
                Result("step_iops", "IOPS: {step}", "IO/s", "each step's IOPS (a skipped step: its reason)"),
                Result("step_clat_p50", "clat p50: {step}", "µs", "each step's median completion latency"),
                Result("step_clat_p99", "clat p99: {step}", "µs", "each step's 99th percentile completion latency"),
                Result(
                    "qd_at_point", "QD at the operating point: {step}", "QD", "each step's own queue depth, searched"
                ),
                Result(
                    "iops_at_point", "IOPS at the operating point: {step}", "IO/s", "each step's IOPS at its own depth"
                ),
            ),
            # a loop device (root); the climb over three depths, three runs a step
            smoke={
                "runtime_s": 0.3,
                "size": "64m",
                "warmup": "none",
                "climb_depths": [1, 4, 16],
                "climb_runs_per_step": 3,
            },
        ),
        Notebook(
            "03_io_uring_per_core.ipynb",
            _per_core_cost,
            (
                Result("peak_iops_per_core", "peak IOPS per core ({tool})", "IO/s", "one core's most IOPS, per tool"),
                Result("iops_at_qd", "IOPS at QD {qd} ({tool})", "IO/s", "IOPS at each depth, per tool"),
                Result(
                    "mean_lat_at_qd", "mean latency at QD {qd} ({tool})", "µs", "mean latency at each depth, per tool"
                ),
            ),
            smoke={"runtime_s": 0.3, "size": "64m", "queue_depths": [1, 128]},  # fio and t/io_uring
        ),
        Notebook(
            "04_flame_graph.ipynb",
            _flame_cost,
            (
                Result(
                    "top_function_share",
                    "top function's share of busy samples ({label})",
                    "%",
                    "the hottest function's self samples",
                ),
                Result(
                    "kernel_share",
                    "kernel share of busy samples ({label})",
                    "%",
                    "samples whose leaf frame is in the kernel",
                ),
                Result(
                    "cycles_per_io", "cycles per IO ({label})", "cycles/IO", "CPU cost of one IO, per configuration"
                ),
            ),
            smoke={"runtime_s": 0.3, "size": "64m", "freq_hz": 499},
            demo=lambda rt: {
                "runtime_s": round(max(3 * rt, 1.2), 3),
                "size": "256m",
            },  # ~1,200 samples a side at 999 Hz
        ),
        Notebook(
            "05_parameter_search.ipynb",
            _search_cost,
            (
                Result(
                    "best_config", "best configuration's {metric}", "", "the best cell of the search, by its metric"
                ),
                Result("roof", "roof ({metric} of one device)", "", "the best single-device cell: a device's ceiling"),
            ),
        ),
        Notebook(
            "06_kernel_io_path.ipynb",
            _kernel_path_cost,
            (
                Result("direct_vs_buffered", "{what}: direct vs buffered", "%", "direct I/O against the page cache"),
                Result("scheduler_none_vs", "IOPS: scheduler none vs {other}", "%", "no I/O scheduler against another"),
                Result("peak_bandwidth", "peak bandwidth", "MiB/s", "the most bandwidth of the block-size sweep"),
                Result("iops_devices", "IOPS of {n} devices together", "IO/s", "one fio per device, summed"),
            ),
            smoke={
                "runtime_s": 0.3,
                "size": "64m",
                "block_sizes": ["4k", "256k"],
                "readahead_kb": [0, 512],
                "schedulers": ["none", "mq-deadline"],
                "repeats": 2,
            },  # every section on loop devices (root): two settings each, two repeats (an interval each)
        ),
        Notebook(
            "07_many_hosts.ipynb",
            _many_hosts_cost,
            (
                Result(
                    "aggregate_iops",
                    "aggregate IOPS on {hosts} hosts",
                    "IO/s",
                    "every host's IOPS summed, at the most hosts",
                ),
                Result("slowest_host", "slowest host", "", "the host furthest below the others"),
            ),
            smoke={"start_local_servers": 2, "runtime_s": 0.4, "repeats": 3, "size": "64m"},
        ),
        Notebook(
            "08_over_time.ipynb",
            lambda params: _runs(1, params),
            (
                Result("median_iops", "median IOPS per interval", "IO/s", "the run's typical interval"),
                Result("worst_interval", "worst interval / median", "", "the slowest interval against the typical one"),
                Result("warmup", "warm-up", "s", "time until SNIA's steady state holds"),
                Result("stalls", "stalls", "", "intervals far below the median"),
                Result("series_coverage", "IOs the series accounts for", "%", "the interval logs against fio's report"),
            ),
            smoke={"runtime_s": 2.5, "log_ms": 250, "size": "64m", "window": 3},
            # one run over time: 20 intervals, enough for SNIA's 5-interval window to be judged
            demo=lambda rt: {"runtime_s": round(10 * rt, 3), "log_ms": max(100, round(500 * rt)), "size": "256m"},
        ),
        Notebook("09_history.ipynb", lambda params: (0, 0.0), smoke={"over": "kernel"}),
    )
}


def declared(notebook: str | os.PathLike) -> Notebook:
    """The declaration of ``notebook`` (a path or a file name in ``notebooks/``); a notebook
    this contract does not know (a user's own): its parameters cell, one run of its
    ``runtime_s``, no declared results."""
    name = Path(notebook).name
    if name in NOTEBOOKS:
        return NOTEBOOKS[name]
    return _Unknown(name, _one_run, source=Path(notebook))


@dataclass(frozen=True)
class _Unknown(Notebook):
    source: Path = Path()

    @property
    def path(self) -> Path:
        return self.source


def estimate_run(notebook: str | os.PathLike, params: Mapping[str, Any]) -> tuple[int, float]:
    """(fio runs, seconds) a run of ``notebook`` with ``params`` should take, by its
    declaration's cost model, and ``NOTEBOOK_OVERHEAD_S`` for the notebook itself. ``iolab
    batch`` and ``iolab seeds`` plan with it."""
    runs, seconds = declared(notebook).cost(params)
    return runs, (seconds + NOTEBOOK_OVERHEAD_S) * slowdown()


def slowdown() -> float:
    """How much slower than this machine's native speed the plan runs: ``TCG_SLOWDOWN`` in
    the NVMe lab's emulated guest, else 1."""
    return TCG_SLOWDOWN if "TCG" in os.environ.get("IOLAB_NVMELAB", "") else 1.0


def parameters_of(notebook: str | os.PathLike) -> dict[str, Any]:
    """The parameters of a notebook's ``parameters`` cell and their defaults (a default that is
    not a literal: its source text). ``{}`` when it has no such cell."""
    path = Path(notebook)
    return copy.deepcopy(dict(_parameters(str(path), path.stat().st_mtime_ns)))


@lru_cache(maxsize=32)
def _parameters(path: str, _mtime: int) -> tuple[tuple[str, Any], ...]:
    cells = json.loads(Path(path).read_text()).get("cells", [])
    cell = next((c for c in cells if "parameters" in (c.get("metadata") or {}).get("tags", [])), None)
    if cell is None:
        return ()
    source = cell.get("source")
    try:
        tree = ast.parse("".join(source) if isinstance(source, list) else source)
    except SyntaxError:  # not plain Python (a magic): papermill refuses the notebook in its own words
        return ()
    found = []
    for node in tree.body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) else None)
        )
        if isinstance(target, ast.Name) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = ast.unparse(node.value)
            found.append((target.id, value))
    return tuple(found)
