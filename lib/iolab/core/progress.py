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
    seconds, so work that ends sooner leaves no bar behind). A loop that ends early (a
    failed run, Ctrl-C) takes its bar away rather than leave a stale "0/4" behind."""
    from tqdm.auto import tqdm

    class Bar(tqdm):
        def __iter__(self):
            inner = super().__iter__()
            try:
                yield from inner
            except BaseException:  # GeneratorExit too: the loop around it stopped early
                self.leave = False
                inner.close()
                raise

    return Bar(iterable, desc=desc, unit=unit, total=total, disable=headless(), delay=delay)


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


LONG_RUN_S = 10.0  # a single run at least this long gets a bar of its seconds (Ticking)


def ipython_shell():
    """The running IPython shell, or None (not imported: IPython is never imported here)."""
    import sys

    return getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()


def _watched() -> bool:
    """In a notebook's kernel (a widget) or with stderr on a terminal."""
    import sys

    shell = ipython_shell()
    return (shell is not None and type(shell).__module__.startswith("ipykernel")) or sys.stderr.isatty()


class Ticking:
    """A bar over the seconds of one long wait (a 60 s fio run): ``start()`` ticks it once a
    second from a thread, up to ``seconds``; ``close()`` (or leaving the ``with`` block)
    stops it and takes the bar away (``leave=False``: a finished or failed run leaves no
    stale bar). Quiet when headless, for waits shorter than ``LONG_RUN_S``, and when no one
    watches it (not in a notebook and stderr not a terminal: a bar taken away is still in a
    log or a pipe, a line of noise before the command's one line)."""

    def __init__(self, desc: str, seconds: float):
        import threading
        from tqdm.auto import tqdm

        self.seconds = max(0, int(round(seconds)))
        self._bar = tqdm(
            total=self.seconds,
            desc=desc,
            unit="s",
            leave=False,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} s",
            disable=headless() or seconds < LONG_RUN_S or not _watched(),
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="iolab-progress", daemon=True)

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if self._bar.n < self.seconds:
                self._bar.update(1)

    def start(self) -> None:
        if not self._bar.disable and not self._thread.is_alive():
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self._bar.close()

    def __enter__(self) -> "Ticking":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
