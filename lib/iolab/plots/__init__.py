"""plots: the pictures — standard figures, flame graphs, the explorer, a run over time, many hosts. Imports core, read and stats: a figure never runs anything."""
