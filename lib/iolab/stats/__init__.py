"""stats: the numbers read from tidy frames — intervals, knees, effects of a search, drift, a run over time. Imports core and read."""
