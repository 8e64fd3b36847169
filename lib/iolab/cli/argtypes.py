"""Option types checked by argparse itself: a bad value is a usage error (exit 2) naming the
option, before the command starts. The value is quoted short and escaped (``printable``)."""

from __future__ import annotations

import argparse
import math

from ..core.runfiles import quote as _shown


def whole(minimum: int = 0, maximum: int | None = None, what: str = "a whole number"):
    """An argparse ``type``: an integer from ``minimum`` (to ``maximum``), else a usage error
    saying the range (``--seed -1``: numpy's generators take no negative seed)."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not {what}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{_shown(text)}: give {what} {_range(minimum, maximum)}")
        return value

    check.__name__ = "whole"  # argparse names the type in its "invalid ... value" message
    return check


def finite(minimum: float | None = None, maximum: float | None = None):
    """An argparse ``type``: a finite number within [``minimum``, ``maximum``] (NaN and inf
    refused: every comparison with NaN is false, so a NaN passes every later check)."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number") from None
        low = -math.inf if minimum is None else minimum
        high = math.inf if maximum is None else maximum
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{_shown(text)}: give a number {_range(minimum, maximum)}")
        return value

    check.__name__ = "number"
    return check


def _range(minimum: float | None, maximum: float | None) -> str:
    """'from 0 to 60', 'from 1 up', 'up to 8': the range a value must be in, in words."""

    def num(x: float) -> str:
        return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"

    if minimum is None:
        return f"up to {num(maximum)}" if maximum is not None else "(finite)"
    return f"from {num(minimum)} to {num(maximum)}" if maximum is not None else f"from {num(minimum)} up"
