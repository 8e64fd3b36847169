"""The iolab command run in the test's own process."""

import contextlib
import io
import signal
import subprocess


def cli_here(*args) -> subprocess.CompletedProcess:
    """``iolab ARGS`` run in this process (``iolab.cli.main``), its output captured as a
    subprocess's would be: the imports a command needs (pandas, scipy, kneed: seconds) are
    paid once per test worker, not once per call. For what only a new process shows (start-up
    imports, signals, exit codes from the OS) tests still run ``python -m iolab.cli``."""
    from iolab.cli import main
    from iolab.core import signals

    out, err = io.StringIO(), io.StringIO()
    handlers = {s: signal.getsignal(s) for s in signals.CAUGHT}
    always = signals._always
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse: usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signals._always = always
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess(["iolab", *map(str, args)], code, out.getvalue(), err.getvalue())
