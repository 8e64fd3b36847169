"""iolab: a Jupyter notebook research kit for Linux storage I/O performance.

Each module owns one concern; data flows one way, from a run to tables to plots. The
folders are the layers (docs/how-it-works.md and tests/test_layers.py): a shared
``core``; ``machine`` -> ``runs`` -> ``measure`` -> ``studies`` (what touches the machine);
``read`` -> ``stats`` -> ``plots`` (what reads the tools' outputs and draws them);
``report`` (notebooks, write-ups, batch, seeds) and ``cli`` over all of them.
"""

from .core.version import __version__  # noqa: F401 (iolab.__version__)


def _command() -> int:
    """The ``iolab`` program (``[project.scripts]``): ``iolab.cli.main``, and a Ctrl-C while the
    command line loads (its first tenth of a second) said in one line, exit 130, rather than as
    Python's traceback: iolab's own handling starts once it has loaded."""
    import sys

    try:
        from .cli import main
    except KeyboardInterrupt:
        print("iolab: interrupted (Ctrl-C) while starting; nothing was run", file=sys.stderr)
        return 130
    return main()


def load_ipython_extension(ipython) -> None:
    """``%load_ext iolab`` (each notebook's first import cell): the kit's errors as one short
    block (``%tb`` shows the traceback), DataFrames as the write-ups show them, and in a live
    kernel what each cell records added to the results history (``iolab.record.history.keep_live``).
    ``import iolab`` alone changes nothing in pandas or IPython; ``%unload_ext iolab`` undoes this."""
    from .core.errors import brief_in_notebooks
    from .core.readable import live_tables
    from .record.results import keep_live

    brief_in_notebooks(ipython)
    live_tables(ipython)
    keep_live(_to_history)
    _refuse_unknown_parameters(ipython)


def _refuse_unknown_parameters(ipython) -> None:
    """A papermill run given a parameter the notebook does not have (``-p runs_dir ...`` on a
    notebook without one) stops here with what it has, nearest first: papermill only warns,
    and the run would go on as if it had not been given."""
    from .core.errors import InputError, with_nearest
    from .core.validate import unknown_injected

    unknown, known = unknown_injected(list(getattr(ipython, "user_ns", {}).get("In", []) or []))
    if unknown:
        raise InputError(
            f"papermill was given {with_nearest(unknown, known)}: this notebook has no such parameter, so it would "
            f"change nothing; its parameters are {', '.join(known)}"
        )


def _to_history(kept, finished: bool) -> None:
    from .record.history import keep_live  # pyarrow: only once a cell has recorded

    keep_live(kept, finished)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext iolab``: IPython's tracebacks and pandas' display as they were."""
    from .core.errors import full_in_notebooks
    from .core.readable import plain_tables
    from .record.results import keep_live

    full_in_notebooks(ipython)
    plain_tables(ipython)
    keep_live(None)


__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]
