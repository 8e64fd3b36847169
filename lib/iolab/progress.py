"""Progress for long cells: tqdm.auto bars (a widget in JupyterLab, text in a terminal),
quiet in batch runs (papermill, ``make demo``: ``IOLAB_HEADLESS=1``, or ``TQDM_DISABLE=1``)."""
from __future__ import annotations

import os
from typing import Iterable, Sequence


def headless() -> bool:
    """True under papermill / batch runs: progress bars and widgets stay quiet."""
    return os.environ.get("IOLAB_HEADLESS") == "1" or os.environ.get("TQDM_DISABLE") == "1"


def bar(iterable: Iterable, desc: str, unit: str = "run", total: int | None = None, delay: float = 0):
    """``iterable`` wrapped in a progress bar (none when headless; shown only after ``delay``
    seconds, so work that ends sooner leaves no bar behind)."""
    from tqdm.auto import tqdm
    return tqdm(iterable, desc=desc, unit=unit, total=total, disable=headless(), delay=delay)


class Stages:
    """A bar over the named stages of one long step (a profiled run: fio, then perf script
    and folding). ``advance()`` finishes the current stage and names the next; ``close()``
    (or leaving the ``with`` block) ends the bar."""

    def __init__(self, desc: str, names: Sequence[str]):
        from tqdm.auto import tqdm
        self.names = list(names)
        self.done = 0
        self._bar = tqdm(total=len(self.names), desc=desc, unit="stage", disable=headless())
        self._bar.set_postfix_str(self.names[0] if self.names else "")

    def advance(self) -> None:
        self.done += 1
        self._bar.update(1)
        if self.done < len(self.names):
            self._bar.set_postfix_str(self.names[self.done])

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
