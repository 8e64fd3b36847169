"""Every option of every command, given hostile values, answers in one line: no traceback, no
raw control character, no long echo of what it was given.

The parser is walked (``iolab.cli.build_parser``: every subcommand, every argparse action), and
each option and positional gets each of ``HOSTILE`` in an otherwise harmless invocation
(``BASE``: paths that do not exist, ``--dry-run`` where there is one), run in this process
(``cli_here``). Nothing here may measure, execute a notebook or boot the NVMe lab: the entry points
of that work (``GUARDED``) are replaced by a stop that the test counts as "accepted" (the value
passed every check before the work) — never reached by a hostile value it should have refused.

The form of a refusal: one line ``iolab CMD: ...`` (exit 1), or argparse's usage error (exit 2:
the usage, then one line ``iolab CMD: error: ...``)."""

from __future__ import annotations

import argparse
import re
import signal

import pytest

from iolab.cli import build_parser
from support.cli import cli_here

NOWHERE = "/nonexistent-iolab"
HOSTILE = {
    "empty": "",
    "negative": "-1",
    "huge": "9" * 400,
    "nan": "nan",
    "wrong type": "[1, {a: 2}]",
    "control characters": "\x1b]0;pwn\x07\r\x9b",
    "NUL": "a\x00b",  # no command line carries one; a caller in Python (iolab.cli.main) can
    "long": "x" * 5000,
}
# the invocation each command's cases start from: it would stop at a path that does not exist
BASE = {
    "run": ["--target", f"{NOWHERE}/target", "--runs-dir", "runs"],
    "search": [f"{NOWHERE}/spec.yaml", "--dry-run"],
    "sysinfo": [],
    "preflight": ["--sample", "0", "--no-tools"],
    "parse": [f"{NOWHERE}/fio.json"],
    "table": [f"{NOWHERE}/runs"],
    "compare": [f"{NOWHERE}/a", f"{NOWHERE}/b"],
    "explain": [f"{NOWHERE}/a", f"{NOWHERE}/b"],
    "knee": [f"{NOWHERE}/curve.csv", "--x", "qd", "--y", "iops"],
    "fold": [f"{NOWHERE}/perf.txt"],
    "threads": [f"{NOWHERE}/run"],
    "series": [f"{NOWHERE}/run"],
    "check": [f"{NOWHERE}/run"],
    "batch": [f"{NOWHERE}/manifest.yaml", "--dry-run"],
    "seeds": ["--dry-run", "--only", "999", "--out", "seeds"],
    "demo": ["--out", "demo"],
    "nvmelab": [f"{NOWHERE}/notebook.ipynb"],
    "publish": [f"{NOWHERE}/notebook.ipynb"],
    "lab": ["--notebook-dir", f"{NOWHERE}/notebooks"],
    "reproduce": [f"{NOWHERE}/notebook.ipynb"],
    "history": ["--dir", "history"],
    "init": ["workspace"],  # a copy of the kit into this test's folder
    "tio": ["--runs-dir", "runs", f"{NOWHERE}/target"],
    "completion": ["bash"],
}
SKIPPED_COMMANDS = {
    "reset": "no option but --debug; it stops the process holding iolab preflight --tune on this machine",
    "cleanup": "its one option is --debug; it acts on what killed iolab processes left on this machine "
    "(processes, loop devices, namespaces), which a test running beside others must not touch",
}
SKIPPED_OPTIONS = {
    "help": "-h prints the help and exits 0: not an input",
    "debug": "--debug shows the traceback on purpose",
}
# the work a harmless invocation must never start (module, function): each is reached only after
# the command has checked what it was given
GUARDED = [
    ("iolab.machine.target", "_write_scratch"),  # iolab run --target scratch: a scratch file written
    ("iolab.machine.target", "loop_device"),
    ("iolab.measure.runner", "measure"),
    ("iolab.machine.preflight", "cpu_checks"),  # preflight's first reading, after its CPUs and devices are checked
    ("iolab.measure.runner", "measure_tio"),
    ("iolab.measure.clients", "measure_hosts"),
    ("iolab.measure.search", "run"),
    ("iolab.report.batch", "run_batch"),
    ("iolab.seeds.runner", "run"),
    ("iolab.report.publish", "execute"),  # a notebook executed: demo, reproduce, the lab's notebooks
    ("iolab.report.demo", "execute"),
    ("iolab.report.reproduce", "execute"),
    ("iolab.cli.lab", "quiet_lab"),  # after the port and kernel checks, before JupyterLab replaces the process
    ("iolab.nvmelab.vm", "build"),  # the guest's kernel and initramfs: the first step of a boot
    ("iolab.machine.preflight_tune", "hold"),  # preflight --tune: the machine's knobs set and held
]
# a hostile value here reaching that work is a failure: it should have been refused
MUST_REFUSE = {("nvmelab", "what")}
NUMBERS = ("whole", "number")  # iolab.cli.argtypes: no hostile value is a count or a number to use
CASE_LIMIT_S = 10  # one case: a hang is a failure of its own, not a stuck suite
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Reached(BaseException):
    """Work a case would have started (``GUARDED``): not an Exception, so no handler of the
    command turns it into a message."""


class TooSlow(BaseException):
    """A case over ``CASE_LIMIT_S``."""


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _invocations(name: str, parser: argparse.ArgumentParser) -> list[tuple[str, list[str], bool]]:
    """(what is tried, argv, whether reaching the work is a failure) for every option and
    positional of one command and every hostile value."""
    base = BASE[name]
    cases = []
    positionals = [a for a in parser._actions if not a.option_strings]
    for action in parser._actions:
        if action.dest in SKIPPED_OPTIONS:
            continue
        strict = (
            (name, action.dest) in MUST_REFUSE
            or action.type in (int, float)
            or getattr(action.type, "__name__", "") in NUMBERS
        )
        if not action.option_strings:  # a positional: the hostile value in its place
            index = positionals.index(action)
            for label, value in HOSTILE.items():
                argv = [*base]
                argv[index] = value
                cases.append((f"{action.dest}={label}", argv, strict))
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # a switch: alone, it is the base with it on
            cases.append((flag, [*base, flag], False))
            continue
        for label, value in HOSTILE.items():
            if isinstance(action.nargs, int) and action.nargs > 1:
                cases.append((f"{flag} {label}", [*base, flag, *[value] * action.nargs], strict))
            else:
                cases.append((f"{flag} {label}", [*base, f"{flag}={value}"], strict))
    return cases


def _problem(name: str, result) -> str | None:
    """What is wrong with one answer, or None."""
    said = result.stdout + result.stderr
    if "Traceback" in said:
        return f"a traceback: {result.stderr[-300:]!r}"
    if CONTROL.search(said):
        return f"a raw control character in {said[:200]!r}"
    if "x" * 120 in said or "9" * 120 in said:
        return f"echoes a long input whole ({len(said):,} characters)"
    lines = result.stderr.splitlines()
    if result.returncode == 2:  # argparse: the usage, then its one line
        if not (lines and lines[0].startswith("usage:") and lines[-1].startswith(f"iolab {name}: error: ")):
            return f"exit 2 without argparse's usage and error line: {result.stderr[:300]!r}"
        if any(not (line.startswith(("usage:", " ")) or line == lines[-1]) for line in lines):
            return f"an argparse error of several lines: {result.stderr[:300]!r}"
        return None
    said_lines = [line for line in lines if line.startswith(f"iolab {name}:")]
    if result.returncode == 1 and len(said_lines) != 1:  # an error (other statuses are verdicts: compare's 3)
        return f"exit {result.returncode} with {len(said_lines)} lines of its own: {result.stderr[:300]!r}"
    if len(said_lines) > 1:
        return f"{len(said_lines)} lines: {result.stderr[:300]!r}"
    return None


@pytest.fixture
def harmless(tmp_path, monkeypatch, own_ledger):
    """This test's own data folder and working folder; the expensive work replaced by ``Reached``."""
    import importlib

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    for module, _ in GUARDED:  # each imported before any is stubbed: none binds another's stub at its import
        importlib.import_module(module)
    for module, function in GUARDED:

        def stop(*args, _what=f"{module}.{function}", **kw):
            raise Reached(_what)

        monkeypatch.setattr(importlib.import_module(module), function, stop)

    def too_slow(signum, frame):
        raise TooSlow()

    before = signal.signal(signal.SIGALRM, too_slow)
    yield tmp_path
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, before)


def test_every_command_is_walked():
    assert set(_commands()) == set(BASE) | set(SKIPPED_COMMANDS), "a new command: give it a harmless BASE"


@pytest.mark.parametrize("name", sorted(BASE))
def test_hostile_values_are_refused_in_one_line(name, harmless):
    cases = _invocations(name, _commands()[name])
    assert len(cases) >= len(HOSTILE)
    problems = []
    for what, argv, strict in cases:
        signal.setitimer(signal.ITIMER_REAL, CASE_LIMIT_S)
        try:
            result = cli_here(name, *argv)
        except Reached as stop:  # the value passed every check: a failure where it must not
            if strict:
                problems.append(f"{what}: accepted, reached {stop}")
            continue
        except TooSlow:
            problems.append(f"{what}: over {CASE_LIMIT_S} s")
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        problem = _problem(name, result)
        if problem:
            problems.append(f"{what}: {problem}")
    assert not problems, f"iolab {name}:\n" + "\n".join(problems)


# ---------------------------------------------------------------- the cases the issue named
def bomb(indent: str) -> str:
    """Six lines, each an anchor of nine uses of the one before: 9**6 (531,441) values expanded."""
    lines = [f"{indent}a: &a [{', '.join(['lol'] * 9)}]"]
    lines += [f"{indent}{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcde", "bcdef")]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "command,file,text",
    [
        ("search", "spec.yaml", "name: x\naxes: {iodepth: [1]}\nbase:\n" + bomb("  ")),
        ("batch", "manifest.yaml", "notebook: x.ipynb\ndefaults:\n" + bomb("  ")),
        ("search", "spec.yaml", "a: &a [1, *a]\n"),  # an alias inside itself
    ],
)
def test_a_yaml_alias_bomb_is_refused_in_one_short_line(command, file, text, tmp_path):
    (tmp_path / file).write_text(text)
    done = cli_here(command, tmp_path / file, "--dry-run")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and len(done.stderr) < 400, done.stderr[:500]
    assert "once its aliases (*name) are expanded" in done.stderr and done.stdout == ""


def test_hosts_half_written_or_empty_are_refused(tmp_path):
    from iolab.core.errors import InputError
    from iolab.machine.hosts import parse_host

    for text in ("[::1", "[::1]x", "[::1]:99999"):
        with pytest.raises(InputError, match="IPv6 host as|outside 1-65535"):
            parse_host(text)
    assert parse_host("[::1]:8766").address == "::1"
    for given in ("", " , "):  # not a run on this machine, silently
        done = cli_here("run", "--hosts", given, "--target", f"{NOWHERE}/t", "--runs-dir", tmp_path)
        assert done.returncode == 1 and "--hosts is empty" in done.stderr and done.stderr.count("\n") == 1


def test_compare_refuses_a_negative_seed_before_reading_anything():
    done = cli_here("compare", f"{NOWHERE}/a", f"{NOWHERE}/b", "--seed", "-1")
    assert done.returncode == 2 and done.stderr.splitlines()[-1] == (
        "iolab compare: error: argument --seed: '-1': give a whole number from 0 up"
    )


@pytest.mark.parametrize("cell", ["abc", "1.2.3", "0x10"])
def test_a_numeric_column_holding_text_is_refused_whatever_pandas_reads_text_as(cell, tmp_path):
    from iolab.core import runfiles
    from iolab.core.errors import RunFileError

    path = tmp_path / "samples.csv"
    path.write_text(f"t_s,state\n0.1,R\n{cell},S\n")
    with pytest.raises(RunFileError, match=rf"has '{re.escape(cell)}' in column 't_s' on line 3, not a number"):
        runfiles.read_csv(path, numeric=("t_s",))
    path.write_text("t_s,state\n0.1,R\n0.2,S\n")
    assert runfiles.read_csv(path, numeric=("t_s",))["t_s"].tolist() == [0.1, 0.2]
