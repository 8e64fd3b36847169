"""The record of results: what a notebook records (``results``), where it came from
(``provenance``: the checkout, the machine, the run folders' digests) and the history that
keeps every executed notebook's results to answer "did it get worse?" (``history``)."""

__all__ = [  # what the package exports: its modules
    "history",
    "provenance",
    "results",
]
