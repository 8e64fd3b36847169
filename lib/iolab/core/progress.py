"""Progress for long work, suited to where it goes:

* a notebook's kernel or a terminal: a text bar redrawn in place (``Shown``: one output a
  kernel updates by its display_id, no widget; a rewritten line on a tty) that, once the work
  ends, becomes one short grey line ("runs: done, 12 runs in 41 s") or goes away;
* stderr a file or a pipe (``iolab table DIR 2> log``, CI): a few plain lines — the start,
  about every 10 % with the elapsed time, the end — not one line per update;
* batch runs (papermill, ``make demo``: ``IOLAB_HEADLESS=1``, or ``TQDM_DISABLE=1``): nothing."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence  # not typing's: every command imports this module


def headless() -> bool:
    """True under papermill / batch runs: progress bars and widgets stay quiet."""
    return os.environ.get("IOLAB_HEADLESS") == "1" or os.environ.get("TQDM_DISABLE") == "1"


def bar(iterable: Iterable, desc: str, unit: str = "run", total: int | None = None, delay: float = 0):
    """``iterable`` wrapped in a progress bar (none when headless; shown only after ``delay``
    seconds, so work that ends sooner leaves no bar behind). A loop that ends early (a
    failed run, Ctrl-C) takes its bar away rather than leave a stale "0/4" behind; one that
    ends leaves its one "done" line. When stderr is a file or a pipe and no notebook
    watches, ``Lines`` instead of a bar."""
    if not headless() and not _watched():
        return Lines(iterable, desc, unit, total, delay)
    return Shown(iterable, desc, unit, total, delay, disable=headless())


class Lines:
    """What ``bar`` gives when stderr is a file or a pipe: the same calls as a tqdm bar
    (iterate, ``update``, ``set_postfix_str``, ``close``, ``with``), a line at the start,
    one each time another ``STEP_PCT`` % is done (or every ``STEP_S`` seconds without a
    total), and one at the end with the elapsed time. Nothing for work that ends within
    ``delay`` seconds."""

    STEP_PCT = 10
    STEP_S = 30.0

    def __init__(self, iterable, desc: str, unit: str = "run", total: int | None = None, delay: float = 0):
        import time

        self.iterable, self.desc, self.unit, self.delay = iterable, desc, unit, delay
        self.total = total if total is not None else _len(iterable)
        self.n, self.disable, self.leave, self.postfix = 0, False, True, ""
        self._start = self._last_said = time.monotonic()
        self._said_pct = -1
        self._closed = False
        if not delay:
            self._say("start")

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self) -> int:
        return self.total or 0

    def update(self, n: float = 1) -> None:
        import time

        self.n += n
        now = time.monotonic()
        if self.total:
            pct = int(100 * self.n / self.total) // self.STEP_PCT * self.STEP_PCT
            if pct > self._said_pct and pct < 100:
                self._said_pct = pct
                self._say(f"{pct} %")
        elif now - self._last_said >= self.STEP_S:
            self._say("")

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        self.desc = desc

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._say("done" if not self.total or self.n >= self.total else "stopped")

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _say(self, what: str) -> None:
        import sys
        import time

        self._last_said = now = time.monotonic()
        if now - self._start < self.delay and what != "start":
            return
        count = f"{self.n:g}/{self.total:g}" if self.total else f"{self.n:g}"
        extra = f", {self.postfix}" if self.postfix else ""
        head = f"{what}: " if what else ""
        print(
            f"{self.desc}: {head}{count} {self.unit}(s), {now - self._start:.0f} s{extra}", file=sys.stderr, flush=True
        )


def _len(iterable) -> int | None:
    try:
        return len(iterable)
    except TypeError:
        return None


class Shown(Lines):
    """What ``bar`` gives in a notebook's kernel or on a terminal: tqdm's bar text, redrawn
    at most every ``REDRAW_S`` seconds from ``delay`` on, in a kernel as one display output
    updated by its display_id (plain text and a grey line: no widget, so a reopened notebook
    misses none), on a terminal as a line rewritten on stderr. Closed, it becomes one short
    line ("runs: done, 12 runs in 41 s"; "knee search: 7 of 12 runs in 30 s" when fewer
    than planned were needed), or goes away with ``leave=False`` and when a loop over it
    stops early (its error says why). ``disable``: nothing shown (headless); ``bar_format``:
    tqdm's, when its default does not read well."""

    REDRAW_S = 0.5

    def __init__(self, iterable, desc, unit="run", total=None, delay=0, leave=True, disable=False, bar_format=None):
        self._shown = self._handle = None
        super().__init__(iterable, desc, unit, total, delay)
        self.leave, self.disable, self.bar_format = leave, disable, bar_format
        self._last_said = float("-inf")
        if not delay:
            self._draw()

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        except BaseException:  # GeneratorExit too: the loop around it stopped early
            self.leave = False
            raise
        finally:
            self.close()

    def update(self, n: float = 1) -> None:
        import time

        self.n += n
        now = time.monotonic()
        if now - self._last_said >= self.REDRAW_S and now - self._start >= self.delay:
            self._draw()

    def close(self) -> None:
        import time

        from .readable import readable_seconds

        if self._closed:
            return
        self._closed = True
        if self._shown is None:
            return  # never drawn: ended within its delay, or disabled
        took = readable_seconds(time.monotonic() - self._start)
        if not self.leave:
            self._put("")
        elif not self.total or self.n >= self.total:
            self._put(f"{self.desc}: done, {_count(self.n, self.unit)} in {took}")
        else:
            self._put(f"{self.desc}: {self.n:g} of {_count(self.total, self.unit)} in {took}")

    def _draw(self) -> None:
        import time

        from tqdm.std import tqdm

        if self.disable or self._closed:
            return
        self._last_said = now = time.monotonic()
        width = None if self._kernel() else _columns()
        postfix = self.postfix or None
        self._put(
            tqdm.format_meter(
                self.n,
                self.total,
                now - self._start,
                width,
                self.desc,
                unit=self.unit,
                postfix=postfix,
                bar_format=self.bar_format,
            )
        )

    def _put(self, text: str) -> None:
        """``text`` in place of what this bar showed (nothing: the bar gone)."""
        import html
        import sys

        if self._kernel():
            from IPython.display import display

            grey = f'<div style="color:#666;font-family:monospace;white-space:pre">{html.escape(text)}</div>'
            bundle = {"text/plain": text, "text/html": grey if text else ""}
            if self._handle is None:
                self._handle = display(bundle, raw=True, display_id=True)
            else:
                self._handle.update(bundle, raw=True)
        else:
            end = "\n" if self._closed and text else ""
            sys.stderr.write(f"\r\x1b[K{text}{end}")
            sys.stderr.flush()
        self._shown = text

    @staticmethod
    def _kernel() -> bool:
        return in_kernel()

    def _say(self, what: str) -> None:
        """Lines' plain lines: not for a bar drawn in place."""


def _count(n: float, unit: str) -> str:
    """'12 runs', '1 run', '64 MiB', '30 s'."""
    plural = n != 1 and unit.isalpha() and unit.islower() and len(unit) > 1
    return f"{n:,g} {unit}{'s' if plural else ''}"


def _columns() -> int:
    import shutil

    return max(40, shutil.get_terminal_size().columns - 1)


class Stages:
    """A bar over the named stages of one long step (a profiled run: fio, then perf script
    and folding). ``advance()`` finishes the current stage and names the next; ``close()``
    (or leaving the ``with`` block) ends the bar."""

    def __init__(self, desc: str, names: Sequence[str]):
        self.names = list(names)
        self.done = 0
        self._bar = bar(None, desc, "stage", total=len(self.names))
        self._bar.set_postfix_str(self.names[0] if self.names else "")

    def advance(self) -> None:
        self.done += 1
        if self.done < len(self.names):
            self._bar.set_postfix_str(self.names[self.done])
        self._bar.update(1)

    def close(self, finished: bool = True) -> None:
        """End the bar; ``finished``: the last stage is done (False: stopped part way)."""
        if finished:
            self._bar.n = self._bar.total
        else:
            self._bar.leave = False
        self._bar.close()

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(finished=kind is None)


LONG_RUN_S = 10.0  # a single run at least this long gets a bar of its seconds (Ticking)


def ipython_shell():
    """The running IPython shell, or None (not imported: IPython is never imported here)."""
    import sys

    return getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()


def in_kernel() -> bool:
    """In a notebook's kernel (JupyterLab, papermill): output there can be updated in place."""
    shell = ipython_shell()
    return shell is not None and type(shell).__module__.startswith("ipykernel")


def _watched() -> bool:
    """In a notebook's kernel or with stderr on a terminal."""
    import sys

    return in_kernel() or sys.stderr.isatty()


class Ticking:
    """A bar over the seconds of one long wait (a 60 s fio run): ``start()`` ticks it once a
    second from a thread, up to ``seconds``; ``close()`` (or leaving the ``with`` block)
    stops it and takes the bar away (``leave=False``: a finished or failed run leaves no
    stale bar). Quiet when headless, for waits shorter than ``LONG_RUN_S``, and when no one
    watches it (not in a notebook and stderr not a terminal: a bar taken away is still in a
    log or a pipe, a line of noise before the command's one line)."""

    def __init__(self, desc: str, seconds: float):
        import threading

        self.seconds = max(0, int(round(seconds)))
        quiet = headless() or seconds < LONG_RUN_S or not _watched()
        shape = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} s"
        self._bar = Shown(None, desc, "s", self.seconds, leave=False, disable=quiet, bar_format=shape)
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

    def __enter__(self) -> Ticking:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
