"""stats: the numbers read from tidy frames — intervals, knees, effects of a search, drift, a run over time. Imports core and read."""

from ..core.submodules import on_demand

__getattr__, __dir__ = on_demand(__name__, __path__)
del on_demand
