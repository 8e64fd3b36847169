"""runs: run folders — what each producer writes and how it is read back, the store and its cached table, and repair of what a killed iolab left. Imports core, read, stats and machine."""

__all__ = [  # what the package exports: its modules
    "leftovers",
    "producers",
    "repair",
    "runcache",
    "store",
]
