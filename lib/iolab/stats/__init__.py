"""stats: the numbers read from tidy frames — intervals, knees, effects of a search, drift, a run over time. Imports core and read."""

from ..core.submodules import on_demand

__getattr__, __dir__ = on_demand(__name__, __path__)
del on_demand

__all__ = [  # what the package exports: its modules
    "best_config",
    "cycles",
    "drift",
    "effects",
    "frequency",
    "gap",
    "interactions",
    "knee",
    "knee_interval",
    "knee_planner",
    "knee_verdict",
    "latency_dist",
    "operating_points",
    "operating_search",
    "qd_reading",
    "repeat_stats",
    "roofline",
    "search_cells",
    "steady_state",
    "timeline",
    "trend",
]
