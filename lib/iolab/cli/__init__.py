"""``iolab`` commands: a thin shell over the library (errors become one line and exit 1).

Every iolab error and OS error (permission, read-only file system, no space, a folder given
for a file) is one line on stderr, ``iolab <cmd>: <what happened>; <what to do>``, exit 1;
``--debug`` shows the traceback too. Ctrl-C: one line, exit 130. Usage errors: argparse's
message, exit 2.

    iolab run --target scratch --rw=randread --bs=4k --iodepth=32   # any fio long option
    iolab parse fio.json --format csv
    iolab table data/runs --format json        # every run of a folder (cached in it)
    iolab compare data/runs/qd-knee-A data/runs/qd-knee-B   # B against A; exit 3 when B is worse
    iolab explain data/runs/qd-knee-A data/runs/qd-knee-B   # why B differs: the causes, ranked, with evidence
    iolab knee table.csv --x qd --y iops
    iolab fold perf.script.txt --kernel        # or a perf.data file
    iolab threads RUN_DIR --by comm,state      # thread states of a run made with iolab run --threads
    iolab series RUN_DIR --format csv          # fio's interval logs of a run made with iolab run --log-ms N
    iolab sysinfo
    iolab demo
    iolab lab --port 8889                      # JupyterLab on notebooks/, as make lab
    iolab seeds --quick --out DIR              # the seed write-ups reproduced here, a page per seed
    iolab history --since 7d                   # every recorded result of executed notebooks, with provenance

The commands live by what they do: ``measuring`` (run, search, sysinfo, cleanup; ``profiling``: run
--profile), ``preflight`` (preflight, reset: the machine checked, tuned and put back), ``tio`` (fio's
t/io_uring), ``reading``
(parse, table, compare, explain, knee, fold, threads, series, check) and ``notebooks`` (batch, seeds, demo,
nvmelab, publish, lab, reproduce, history); ``messages`` turns an error into its one line.
"""

from __future__ import annotations

import argparse
import sys

from ..core import signals
from ..core.errors import IolabError, NotComparable
from ..core.version import __version__
from . import completion, measuring, notebooks, preflight, reading, tio
from .messages import Parser, one_line, os_error

# commands that only read files: no repair of what a killed iolab left first (it imports the
# whole library, and these must start fast)
READ_ONLY = ("cleanup", "fold", "sysinfo")


class _Skipped:
    """A subcommand's parser not built (``build_parser(only=...)``): its arguments are ignored."""

    def add_argument(self, *args, **kw) -> None:
        pass

    def set_defaults(self, **kw) -> None:
        pass

    def add_mutually_exclusive_group(self, **kw) -> _Skipped:
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, just that subcommand's parser is built (a command
    such as ``iolab fold`` must start fast: building all of them takes several ms)."""
    parser = Parser(prog="iolab", description=__doc__.split("\n")[0])
    parser.names = []
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--version", action="version", version=f"iolab {__version__}")
    common = argparse.ArgumentParser(add_help=False)  # --debug after the command too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kw) -> argparse.ArgumentParser:
        parser.names.append(name)
        if kw.get("help") and not kw.get("description"):  # iolab CMD --help says what CMD does
            kw["description"] = kw["help"][0].upper() + kw["help"][1:] + "."
        return sub.add_parser(name, parents=[common], **kw) if only in (None, name) else _Skipped()

    for group in (measuring, preflight, tio, reading, notebooks):
        group.add_commands(add)
    completion.add_commands(add, build_parser)
    return parser


def _without_iri_grammars() -> None:
    """Spare this process a second of start-up: jsonschema (imported by nbformat, so by every
    command that runs, reads or publishes a notebook) builds about 35 Earley parsers at import
    for the ``iri`` formats when rfc3987-syntax is installed, which jupyter-events pulls in
    (python-jsonschema/jsonschema#1428). No notebook schema uses those formats; with the module
    marked absent, jsonschema leaves the two unchecked. Only in the ``iolab`` process, never
    in a user's kernel."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]  # None: "not installed"


FIO_VALUED = ("--profile=",)  # fio's options with a value whose names are iolab run's flags too


def main(argv: list[str] | None = None) -> int:
    """``iolab ARGS``: the command's exit status (1: an error, said in one line; 130: Ctrl-C)."""
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=given[0] if given and not given[0].startswith("-") else None)
    if given and parser.names and given[0] not in parser.names:
        parser = build_parser()  # a misspelt command: argparse names every one
    cut = given.index("--") if "--" in given else len(given)
    fios = [a for a in given[:cut] if a.startswith(FIO_VALUED)] if given and given[0] == "run" else []
    args, extra = parser.parse_known_args([a for a in given[:cut] if a not in fios] + given[cut:])
    extra = fios + extra  # --profile=tiobench is fio's job profile; iolab's --profile takes no value
    if extra and args.command not in ("run", "lab", "tio"):  # fio options, jupyter's, t/io_uring's flags
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if any("\0" in str(arg) for arg in given):  # only a caller in Python can pass one: no command line carries it
        print(f"iolab {args.command}: an argument holds a NUL byte, which no path or value can hold", file=sys.stderr)
        return 1
    signals.raise_always()
    if argv is None:  # the iolab program itself, not a caller's process (a test, a notebook)
        _without_iri_grammars()
    try:
        if args.command not in READ_ONLY:
            from ..runs.repair import recover_and_report

            recover_and_report()
        return args.func(args, extra)
    except BrokenPipeError:  # `iolab history | head`: the reader has what it wanted; quiet, as git and cat are
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 128 + 13  # SIGPIPE's status
    except (IolabError, OSError) as exc:
        if args.debug:
            __import__("traceback").print_exc()
        what = str(exc) if isinstance(exc, IolabError) else os_error(exc, args.command)
        what = what.removeprefix(f"{args.command}: ")  # the library's own "nvmelab: ..." prefix, once
        print(f"iolab {args.command}: {one_line(what)}", file=sys.stderr)
        stop = exc.__cause__  # a run stopped by Ctrl-C, SIGTERM or SIGHUP (RunInterrupted): as if unwound here
        if isinstance(stop, signals.Terminated):
            return 128 + stop.signum
        return 130 if isinstance(stop, KeyboardInterrupt) else 4 if isinstance(exc, NotComparable) else 1
    except signals.Terminated as exc:
        print(f"iolab {args.command}: {exc}; {_after_a_stop(args.command)}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        if args.debug:
            __import__("traceback").print_exc()
        print(f"iolab {args.command}: interrupted (Ctrl-C); {_after_a_stop(args.command)}", file=sys.stderr)
        return 130


def _after_a_stop(command: str) -> str:
    """What a stopped command leaves: preflight makes no run, and what --tune set is put back."""
    if command in ("preflight", "reset"):
        return "no run was made; a setting --tune had changed is put back"
    return "what was running was stopped; a run that had started is kept, marked interrupted"


__all__ = [  # what the package exports: its modules, and the command line
    "main",
    "build_parser",
    "argtypes",
    "completion",
    "lab",
    "measuring",
    "messages",
    "notebooks",
    "preflight",
    "profiling",
    "reading",
    "tio",
]
