"""A plan in words, the same for ``iolab search``, ``iolab batch`` and ``iolab seeds``: its
size and wall time first (counted before anything is listed or checked; the time in words by
``iolab.core.readable.readable_seconds``), a warning above a size people rarely mean, then a
listing cut to its ends when it is long.

The warning's thresholds: a plan of more than ``WARN_RUNS`` runs, or more than ``WARN_S``
seconds of wall time (a working day; a search spec with one axis too many is 10x that).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.readable import readable_seconds

WARN_RUNS = 1_000
WARN_S = 8 * 3600.0
ENDS = 5  # lines listed at each end of a long listing
# seconds a fio run costs beyond its runtime and ramp_time (fio's start, the samplers, the
# snapshot, the run folder), measured on this project's 2-core VM
RUN_OVERHEAD_S = 0.7


def too_big(runs: int, seconds: float, what: str, smaller: str) -> str:
    """The warning above a plan of ``runs`` runs and ``seconds`` of wall time (``what``: what
    a run is, e.g. "fio runs") when either is past its threshold, with ``smaller``: how to
    make it smaller; "" for a plan of the usual size."""
    over = [
        f"more than {WARN_RUNS:,} {what}" if runs > WARN_RUNS else "",
        f"more than {readable_seconds(WARN_S)} of wall time" if seconds > WARN_S else "",
    ]
    over = [o for o in over if o]
    if not over:
        return ""
    return (
        f"WARNING: this plan is {runs:,} {what}, about {readable_seconds(seconds)} ({' and '.join(over)}). "
        f"Is that what you meant? To make it smaller: {smaller}."
    )


def cut(lines: Sequence[str], every: bool = False, what: str = "lines", how_all: str = "") -> list[str]:
    """``lines`` whole when short or ``every``; else the first and last ``ENDS`` with a line
    saying how many are between and ``how_all`` (the option that lists them all)."""
    if every or len(lines) <= 2 * ENDS + 1:
        return list(lines)
    hidden = len(lines) - 2 * ENDS
    tail = f"; {how_all} lists every one" if how_all else ""
    return [*lines[:ENDS], f"  … {hidden:,} {what} more{tail} …", *lines[-ENDS:]]


__all__ = ["too_big", "cut", "WARN_RUNS", "WARN_S"]
