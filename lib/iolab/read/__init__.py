"""read: parsers of what the tools wrote — fio's JSON and interval logs, the samplers' files, perf's folded stacks, t/io_uring, thread states, host tables — into tidy frames. Imports core only: reading never runs anything."""

__all__ = [  # what the package exports: its modules
    "checks",
    "fio_failures",
    "fiojson",
    "fiologs",
    "fold",
    "hosttable",
    "plausible",
    "pool",
    "profile",
    "published",
    "run",
    "samples",
    "series",
    "threadstates",
    "tio",
]
