"""SIGTERM and SIGHUP end a run the way Ctrl-C does: fio stopped by its pid, knobs put
back, loop devices released, the run folder marked ``interrupted``.

Python's default for SIGTERM and SIGHUP is to die on the spot, skipping every ``finally``.
While iolab holds something (``with held():`` — a run, a loop device, a changed knob) the
two signals raise :class:`Terminated` instead, a ``KeyboardInterrupt`` subclass, so the
cleanup already written for Ctrl-C runs. When the outermost ``held()`` block has unwound,
the signal is delivered again with the handler the process had before, so a Jupyter kernel
or a papermill run still ends as its owner asked. Outside ``held()`` blocks nothing changes.

An owner may swallow the exception (a Jupyter kernel idle between cells catches a
KeyboardInterrupt in its event loop and goes on). So ``held()`` also arms a last resort:
if the process is still alive ``FORCE_EXIT_AFTER_S`` later, its exit handlers run (the
ledger puts back what this process holds) and it exits with 128 + the signal number.

A program that handles ``Terminated`` itself (the ``iolab`` command) calls
``raise_always()`` so the signal is turned into the exception at any time.

SIGKILL cannot be caught: ``iolab.runs.repair`` puts right what a killed process left (``iolab.machine.ledger``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Iterator  # not typing's: its import costs every command's start-up

from .paths import env_seconds

CAUGHT = (signal.SIGTERM, signal.SIGHUP)
FORCE_EXIT_AFTER_S = 30.0  # longer than any cleanup (fio gets 10 s to stop)
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


_depth = 0
_pending: int | None = None
_always = False
_previous: dict[int, object] = {}


def _handler(signum, _frame) -> None:
    global _pending
    if _depth > 0 or _always:
        _pending = signum
        if not _always:
            _arm_last_resort(signum)
        raise Terminated(signum)
    _redeliver(signum)


def _arm_last_resort(signum: int) -> None:
    """Exit for good ``FORCE_EXIT_AFTER_S`` from now if ``Terminated`` was swallowed."""

    def force_exit() -> None:
        atexit._run_exitfuncs()  # the same cleanup a normal exit runs
        os._exit(128 + signum)

    try:  # tests shorten it; inside a signal handler a bad value is no reason to fail: the default
        delay = env_seconds("IOLAB_FORCE_EXIT_S", FORCE_EXIT_AFTER_S)
    except ValueError:
        delay = FORCE_EXIT_AFTER_S
    timer = threading.Timer(delay, force_exit)
    timer.daemon = True  # a process that ends as asked never waits for it
    timer.start()


def _redeliver(signum: int) -> None:
    """Give the signal to the handler the process had before iolab's."""
    signal.signal(signum, _previous.get(signum, signal.SIG_DFL))
    _previous.pop(signum, None)
    os.kill(os.getpid(), signum)


def _install() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in CAUGHT:
        current = signal.getsignal(sig)
        if current is not _handler:
            _previous[sig] = current if current is not None else signal.SIG_DFL
            signal.signal(sig, _handler)
    return True


def raise_always() -> None:
    """SIGTERM and SIGHUP raise ``Terminated`` from now on (for a program's main)."""
    global _always
    _always = True
    _install()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A block during which SIGTERM and SIGHUP unwind like Ctrl-C (main thread only; in
    other threads the main thread's handler does the unwinding)."""
    global _depth, _pending
    installed = _install()
    if installed:
        _depth += 1
    try:
        yield
    finally:
        if installed:
            _depth -= 1
            if _depth == 0 and _pending is not None and not _always:
                signum, _pending = _pending, None
                _redeliver(signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back for a few statements that must not be split
    (start a process and record its pid); they are handled when the block ends.

    Python runs signal handlers in the main thread whichever thread the kernel delivered
    the signal to (the sampler's, say), so masking is not enough: the handlers themselves
    are swapped for ones that only note the signal. In other threads nothing is needed —
    handlers never run there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in STOPPING}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(caught):
            handler = old[signum]
            if callable(handler):
                handler(signum, None)
            else:
                os.kill(os.getpid(), signum)


def join_started(thread: threading.Thread | None) -> None:
    """Join ``thread`` if it began; a Ctrl-C can land between ``Thread()`` and ``start()``
    (or inside ``start()``), and the thread that never ran has nothing to join. Its loop
    must watch a stop flag set before this call, so a late start ends at once."""
    if thread is None:
        return
    try:
        thread.join()
    except RuntimeError:
        pass  # "cannot join thread before it is started"
