"""measure: one measured run (fio, t/io_uring, or fio's client/server mode) and the grids and searches that run many. Imports core, read, stats, machine and runs."""

__all__ = [  # what the package exports: its modules
    "campaign",
    "clients",
    "options",
    "planned",
    "plans",
    "runner",
    "search",
    "search_spec",
    "sweep",
]
