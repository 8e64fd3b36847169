"""Ctrl-C in tests, however the suite was started (a terminal, ``nohup make test &``)."""

import contextlib
import signal


def sigint_default() -> None:
    """``preexec_fn`` for a child a test sends SIGINT to: SIGINT's default action, as a
    terminal's foreground job has it. A job started in the background (``nohup make test &``,
    a script run with ``&``) ignores SIGINT and its children inherit that, so the test's
    Ctrl-C would never arrive; Python turns the default action into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def sigint_raises():
    """Within the block, SIGINT raises KeyboardInterrupt in this process even when it was
    started with SIGINT ignored (see ``sigint_default``)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
