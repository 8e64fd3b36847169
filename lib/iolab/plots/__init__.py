"""plots: the pictures — standard figures, flame graphs, the explorer, a run over time, many hosts. Imports core, read and stats: a figure never runs anything."""

from ..core.submodules import on_demand

__getattr__, __dir__ = on_demand(__name__, __path__)
del on_demand

__all__ = [  # what the package exports: its modules
    "common",
    "curves",
    "distributions",
    "explore",
    "flamegraph",
    "hostplots",
    "ladders",
    "pages",
    "published",
    "searches",
    "timeplots",
    "topology",
    "trends",
]
