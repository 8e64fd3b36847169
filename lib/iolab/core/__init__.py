"""core: what every layer uses — errors, paths, atomic writes, the column registry, readable numbers, progress, signals, the machine's description (system) and the input rules (validate). Imports nothing else of iolab."""

__all__ = [  # what the package exports: its modules
    "atomic",
    "columns",
    "distro",
    "errors",
    "outputs",
    "owned",
    "paths",
    "progress",
    "readable",
    "runfiles",
    "runfolders",
    "schema",
    "signals",
    "submodules",
    "system",
    "validate",
    "version",
]
