"""plots: the pictures — standard figures, flame graphs, the explorer, a run over time, many hosts. Imports core, read and stats: a figure never runs anything."""

from ..core.submodules import on_demand

__getattr__, __dir__ = on_demand(__name__, __path__)
del on_demand
