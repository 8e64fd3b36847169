"""The seeds' experiments, each a function over the generic sweep (``iolab.measure.sweep``): every
one checks all its settings before the first run, resumes into the same ``runs_dir``,
returns only its own runs, changes knobs only through ``iolab.machine.knobs`` and takes the
measurement options (``allow_destructive``, ``profile``, ``timeout_s``, ...) that it gives
to ``iolab.measure.runner.measure``; given no ``runs_dir`` each makes a new folder of its own
under data/runs. Its modules are the package's attributes (``studies.climb``), but for
``per_core`` and ``precondition``, which name the study functions above.

    qd_sweep            (qd.py)           seed 000: IOPS, latency and cycles/IO vs queue depth on one CPU
    knee_search         (qd.py)           the same knee with about half the runs (iolab.stats.knee_planner)
    per_core            (per_core.py)     seed 002: one core at QD1/16/128, t/io_uring and fio side by side
    per_core_summary    (per_core.py)     its means over the repeats, with intervals
    ladder.run_ladder   (ladder.py)       seed 000: the single-core tuning ladder, one change per step
    kernel_path.*       (kernel_path.py)  seed 001: direct vs buffered, readahead, schedulers, block
                                          sizes, one fio per device
    precondition        (precondition.py) SNIA PTS steady state before measuring a real SSD
    search.search_study (search.py)       seed 003: a parameter search read back, or its spec run
    many_hosts.*        (many_hosts.py)   one job on many hosts (fio client/server): per host, pooled, scaling
"""

from . import kernel_path, ladder, many_hosts
from .per_core import per_core
from .per_core import summary as per_core_summary
from .precondition import precondition
from .qd import knee_search, qd_sweep

__all__ = [  # the study functions above, and every module (per_core and precondition: their functions)
    "climb",
    "flip",
    "kernel_path",
    "knee_search",
    "ladder",
    "many_hosts",
    "per_core",
    "per_core_summary",
    "precondition",
    "qd",
    "qd_sweep",
    "search",
]

from ..core.submodules import on_demand

__getattr__, __dir__ = on_demand(__name__, __path__)
del on_demand
