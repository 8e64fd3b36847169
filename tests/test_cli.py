"""The iolab command line: a thin shell, errors as one line."""

import contextlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from support.cli import cli_here
from support.marks import needs_root, needs_shared
from support.nobody import NOBODY, run_as_nobody
from support.paths import FIXTURES, PUBLISHED, REPO
from support.sigint import sigint_default


def iolab(*args, **kw):
    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], capture_output=True, text=True, **kw)


def test_parse_csv_and_json():
    out = iolab("parse", str(FIXTURES / "fio/jsonplus_randrw.json"))
    assert out.returncode == 0 and out.stdout.splitlines()[0].startswith("job_index,job,groupid,hostname")
    rows = json.loads(iolab("parse", str(FIXTURES / "fio/jsonplus_randrw.json"), "--format", "json").stdout)
    assert [r["direction"] for r in rows] == ["read", "write"]


@needs_shared
def test_knee(tmp_path):
    """The published PM883 QD sweep (fio-plot's data) and kneed 0.9's own answer on log2 QD."""
    folder = PUBLISHED / "knee-published" / "k01_published_ssd_pm883_randread"
    curve = json.loads((folder / "curve.json").read_text())
    expected = next(
        r
        for r in json.loads((folder / "expected_kneed.json").read_text())["results"]
        if r["x"] == "log2_qd" and r["y"] == "iops"
    )
    csv = tmp_path / "t.csv"
    csv.write_text("qd,iops\n" + "".join(f"{q},{i}\n" for q, i in zip(curve["qd"], curve["iops"])))
    assert (
        iolab("knee", str(csv), "--x", "qd", "--y", "iops").stdout.strip() == f"{expected['knee_qd']:g}"
    )  # a new process
    csv.write_text("qd,iops\n1,5\n2,5\n4,5\n")
    assert cli_here("knee", str(csv), "--x", "qd", "--y", "iops").stdout.strip() == "none"
    bad = cli_here("knee", str(csv), "--x", "nope", "--y", "iops")
    assert bad.returncode == 1 and "has no column 'nope'" in bad.stderr
    csv.write_text("qd,iops\n1,40\n2,80\n4,160\n8,200\n16,200\n")  # IOPS²/QD peaks at QD 4
    power = cli_here("knee", str(csv), "--x", "qd", "--y", "iops", "--method", " Power")
    assert power.stdout.strip() == "4" and "Kleinrock" not in power.stdout
    auto = cli_here("knee", str(csv), "--x", "qd", "--y", "iops", "--method", "auto")  # notebook 01's one answer
    assert re.match(r"iolab knee: (knee qd \d+ by (Kneedle|maximum power)|no knee)", auto.stderr), auto.stderr
    assert auto.stdout.strip() in ("4", "8", "none")


def test_run_prints_a_summary_and_stores(tmp_path):
    out = iolab(
        "run",
        "--target",
        "scratch",
        "--size=16m",
        "--cpus",
        "0",
        "--scratch-dir",
        str(tmp_path / "s"),
        "--runs-dir",
        str(tmp_path / "r"),
        "--rw=randread",
        "--runtime=300ms",
        "--ioengine=psync",
    )
    assert out.returncode == 0, out.stderr
    assert "CPU cycles per IO, fio's own (cycles/IO)" in out.stdout and "stored:" in out.stdout  # in words
    (run,) = (tmp_path / "r").iterdir()
    from iolab.cli.reading import print_run  # --json: the same run's figures as records, the rest on stderr
    from iolab.runs.runcache import load_runs

    with contextlib.redirect_stdout(io.StringIO()) as said, contextlib.redirect_stderr(io.StringIO()) as rest:
        print_run(load_runs(run), ["iops", "cycles_per_io"], run, as_json=True)
    (record,) = json.loads(said.getvalue())
    assert record["iops"] > 0 and record["run_folder"] == str(run) and rest.getvalue() == f"stored: {run}\n"


def test_bash_completion_is_written_from_the_parser():
    script = iolab("completion", "bash").stdout

    def complete(*words):
        line = f"source /dev/stdin; COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}"
        done = subprocess.run(
            ["bash", "-c", line + '; _iolab; echo "${COMPREPLY[@]}"'],
            input=script,
            text=True,
            capture_output=True,
            check=True,
        )
        return done.stdout.split()

    assert complete("iolab", "ta") == ["table"] and "--json" in complete("iolab", "check", "--")
    assert complete("iolab", "table", "--format", "") == ["csv", "json", "parquet"]


def test_run_with_bad_option_and_missing_target(tmp_path):
    out = iolab(
        "run",
        "--scratch-dir",
        str(tmp_path),
        "--size=1m",
        "--runs-dir",
        str(tmp_path / "r"),
        "--bogus_option=3",
        "--runtime=300ms",
    )
    assert out.returncode == 1 and "bogus_option" in out.stderr and "Traceback" not in out.stderr
    out = iolab("run", "--target", str(tmp_path / "missing"))
    assert out.returncode == 1 and "does not exist" in out.stderr


def test_sysinfo():
    snap = json.loads(iolab("sysinfo").stdout)
    assert "kernel" in snap and "absent" in snap


# ---------------------------------------------------------------- one line for every user mistake
PYTHON = str(REPO / ".venv/bin/python")
NOTES = ("iolab: CPU ", "iolab cleanup: ")  # notes of the CPU locks and the ledger, not errors


def cli(*args, user=None, **kw):
    """``.venv/bin/python -m iolab.cli ARGS``, optionally as another user (setpriv)."""
    argv = [PYTHON, "-m", "iolab.cli", *map(str, args)]
    if user is not None:
        assert user == NOBODY
        return run_as_nobody(argv, capture_output=True, text=True, timeout=300, **kw)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


def one_line(out, *words, code=1):
    """Exit ``code``; stderr is one line starting ``iolab <cmd>:``, with ``words``, no traceback."""
    lines = [line for line in out.stderr.splitlines() if not line.startswith(NOTES)]
    assert out.returncode == code, (out.returncode, out.stderr)
    assert len(lines) == 1 and lines[0].startswith("iolab "), out.stderr
    assert "Traceback" not in out.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def run_args(tmp_path, *more):
    return ["run", "--size=16m", "--scratch-dir", tmp_path / "s", "--runs-dir", tmp_path / "r", *more]


def test_run_accepts_cpulist_ranges(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    spec = f"{allowed[0]}-{allowed[1]}" if len(allowed) > 1 and allowed[1] == allowed[0] + 1 else str(allowed[0])
    out = cli(*run_args(tmp_path, "--cpus", spec, "--runtime=300ms", "--ioengine=psync"))
    assert out.returncode == 0, out.stderr
    params = json.loads(next((tmp_path / "r").glob("*/params.json")).read_text())
    from iolab.core.validate import cpu_list

    assert params["cpus"] == cpu_list(spec) and "cpus_allowed" in params["fio_options"]


@pytest.mark.parametrize(
    "more,words",
    [
        (["--cpus", "{absent}"], ["CPU {absent} does not exist", "online CPUs"]),
        (["--cpus", "zero"], ["cannot read the CPU list", "0-3"]),
        (["--runtime=-5"], ["runtime", "negative"]),
        (["--runtime=0.5"], ["runtime", "500ms"]),
        (["--iodepth=0"], ["iodepth", ">= 1"]),
        (["--iodepth=-3"], ["iodepth", ">= 1"]),
        (["--iodepth=2.5"], ["iodepth", "whole number"]),
        (["--numjobs=0"], ["numjobs", ">= 1"]),
        (["--bs=1.5m"], ["bs", "size"]),
        (["rw=read"], ["unexpected argument", "--name=value"]),
        (["--cpu", "0"], ["unexpected argument '0' after --cpu", "did you mean iolab's --cpus 0?"]),
    ],
)
def test_run_refuses_bad_input_before_running(tmp_path, more, words, capsys):
    """In-process (``main``): the command line's own path is the subprocess tests' above."""
    from iolab.cli import main

    absent = str((os.cpu_count() or 1) + 64)
    code = main([str(a) for a in run_args(tmp_path, *[m.format(absent=absent) for m in more])])
    said = capsys.readouterr()
    out = subprocess.CompletedProcess([], code, said.out, said.err)
    one_line(out, "iolab run:", *[w.format(absent=absent) for w in words])
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())  # nothing ran


@needs_root
def test_run_as_non_root_into_a_root_owned_folder():
    top = Path(tempfile.mkdtemp(prefix="iolab-root-owned-"))  # root's, 0755: nobody cannot write
    try:
        top.chmod(0o755)
        out = cli(
            "run", "--runs-dir", top / "runs", "--scratch-dir", top / "s", "--runtime=300ms", user=NOBODY, cwd="/"
        )
        one_line(out, "iolab run:", f"runs folder {top / 'runs'}", "Permission denied", "--runs-dir", "IOLAB_DATA")
        out = cli("run", "--runtime=300ms", user=NOBODY, cwd="/", env={**os.environ, "IOLAB_DATA": str(top / "data")})
        one_line(out, "iolab run:", str(top / "data" / "runs"), "--runs-dir", "IOLAB_DATA")
    finally:
        import shutil

        shutil.rmtree(top, ignore_errors=True)


@needs_root
def test_run_into_a_read_only_folder(tmp_path):
    from support.devices import tmpfs

    with tmpfs(tmp_path / "ro") as ro:
        out = cli("run", "--size=16m", "--scratch-dir", tmp_path / "s", "--runs-dir", ro / "runs", "--runtime=300ms")
        one_line(out, "iolab run:", "Read-only file system", "--runs-dir")


@needs_root
def test_write_to_a_read_only_file(tmp_path):
    from support.devices import tmpfs

    with tmpfs(tmp_path / "ro", files={"data": bytes(4 << 20)}) as ro:
        out = cli(
            "run",
            "--target",
            ro / "data",
            "--allow-destructive",
            "--runs-dir",
            tmp_path / "r",
            "--rw=randwrite",
            "--runtime=300ms",
            "--ioengine=psync",
        )
    line = one_line(out, "iolab run:", "fio error 30 (Read-only file system)")
    assert "(no message)" not in line


def test_parse_mistakes(tmp_path):
    one_line(cli("parse", tmp_path), "iolab parse:", "is a folder", "give a file")
    (tmp_path / "fio.json").write_text((FIXTURES / "fio/json_randread.json").read_text())
    one_line(cli("parse", tmp_path), "iolab parse:", f"e.g. {tmp_path / 'fio.json'}")
    one_line(cli("parse", tmp_path / "missing.json"), "iolab parse:", "no such", "check the path")
    (tmp_path / "other.json").write_text('{"jobs": [{"name": "x", "read": {"iops": 5}}]}')
    one_line(cli("parse", tmp_path / "other.json"), "iolab parse:", "no fio JSON", "fio version")


def test_fold_mistakes(tmp_path):
    one_line(cli("fold", tmp_path), "iolab fold:", "is a folder")
    one_line(cli("fold", tmp_path / "missing"), "iolab fold:", "no such", "check the path")


@pytest.mark.parametrize(
    "text,words",
    [
        (None, ["no such CSV file"]),
        ("", ["is empty"]),
        ("qd,iops\n", ["no rows"]),
        ("qd,iops\n1,10\n2,lots\n4,30\n", ["'iops'", "'lots'", "not a number"]),
        ("qd,iops\n0,1\n1,10\n2,20\n4,30\n", ["log2", "--linear"]),
    ],
)
def test_knee_mistakes(tmp_path, text, words):
    csv = tmp_path / "t.csv"
    if text is not None:
        csv.write_text(text)
    one_line(cli_here("knee", csv, "--x", "qd", "--y", "iops"), "iolab knee:", *words)


def test_knee_of_a_falling_curve_is_none_with_the_reason(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("qd,iops\n1,50\n2,49\n4,47\n8,38\n16,20\n32,10\n")
    out = cli_here("knee", csv, "--x", "qd", "--y", "iops")
    assert out.stdout.strip() == "none"
    one_line(out, "iolab knee: no knee", "not increasing", code=0)


def test_knee_takes_repeated_x_and_says_its_interval_on_stderr(tmp_path):
    """The recorded loop-device sweep, 3 repeats per QD (tests/fixtures/knee): stdout is the knee
    alone (scripts), stderr one line with its bootstrap interval and the 95 %-of-peak rule."""
    csv = FIXTURES / "knee" / "loop_randread_3x.csv"
    out = cli_here("knee", csv, "--x", "qd", "--y", "iops")
    assert out.stdout == "8\n"
    line = one_line(out, "iolab knee: knee qd 8.", "96 % of 1000 resamples", "[8, 16]", "rule disagrees", code=0)
    assert cli_here("knee", csv, "--x", "qd", "--y", "iops").stderr == out.stderr  # seeded: the same every time
    fewer = cli_here("knee", csv, "--x", "qd", "--y", "iops", "--resamples", "200", "--seed", "3", "--level", "0.8")
    assert fewer.stdout == "8\n" and "of 200 resamples" in fewer.stderr and fewer.stderr != line
    refused = cli_here("knee", csv, "--x", "qd", "--y", "iops", "--resamples", "-1")  # argparse's usage error
    assert refused.returncode == 2 and refused.stderr.splitlines()[-1].endswith(
        "'-1': give a whole number from 0 to 1,000,000"
    )
    one_line(cli_here("knee", csv, "--x", "qd", "--y", "iops", "--level", "90"), "iolab knee:", "between 0 and 1")
    scratch = cli_here("knee", FIXTURES / "knee" / "scratch_randread_3x.csv", "--x", "qd", "--y", "iops")
    assert scratch.stdout == "none\n"
    one_line(scratch, "iolab knee: no knee", "sweep deeper", code=0)


def test_demo_refuses_a_runtime_of_zero():
    one_line(cli("demo", "--runtime", "0"), "iolab demo:", "--runtime 0", "> 0")


def test_debug_shows_the_traceback(tmp_path):
    for args in (["--debug", "parse", tmp_path / "missing"], ["parse", tmp_path / "missing", "--debug"]):
        out = cli(*args)
        assert out.returncode == 1 and "Traceback" in out.stderr
        assert out.stderr.strip().splitlines()[-1].startswith("iolab parse:")


def test_os_errors_are_one_line(tmp_path):
    from iolab.cli.messages import os_error

    line = os_error(PermissionError(13, "Permission denied", "/data/runs"), "run")
    assert (
        line == "/data/runs: Permission denied; check its permissions, or choose a folder you can "
        "write (--runs-dir / --scratch-dir, or IOLAB_DATA=DIR)"
    )
    assert "free space" in os_error(OSError(28, "No space left on device", "/x"), "run")
    assert "give a file" in os_error(IsADirectoryError(21, "Is a directory", "/x"), "parse")


def test_usage_errors_exit_2():
    out = cli("knee")
    assert out.returncode == 2 and "usage:" in out.stderr and "Traceback" not in out.stderr


def test_ctrl_c_is_one_line_and_130(tmp_path):
    proc = subprocess.Popen(
        [PYTHON, "-m", "iolab.cli", *map(str, run_args(tmp_path, "--runtime=30", "--ioengine=psync"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((tmp_path / "r").glob(".tmp-*/job.fio")):
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.splitlines() if not line.startswith(NOTES)]
    assert proc.returncode == 130, err
    assert len(lines) == 1 and lines[0].startswith("iolab run:") and "Traceback" not in err, err


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_run_stopped_by_a_signal_exits_as_the_signal_says(stop, monkeypatch, own_ledger, capsys):
    """A run that ends in RunInterrupted because of a signal exits 128 + that signal's number, as
    a command stopped outside a run does: 130 for Ctrl-C, 143 for SIGTERM (was 1), 129 for SIGHUP."""
    from iolab.cli import main, measuring
    from iolab.core import signals
    from iolab.core.errors import RunInterrupted

    cause = KeyboardInterrupt() if stop == signal.SIGINT else signals.Terminated(stop)

    def stopped(args, extra):
        raise RunInterrupted("fio (pid 1234) was stopped before it finished") from cause

    monkeypatch.setattr(measuring, "cmd_run", stopped)
    assert main(["run", "--rw=read"]) == 128 + stop
    assert "iolab run: fio (pid 1234) was stopped before it finished" in capsys.readouterr().err


CTRL_C_WHILE_LOADING = """
import builtins, sys
real = builtins.__import__
def ctrl_c(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "cli" and level == 1:  # iolab's `from .cli import main`: a Ctrl-C lands while it loads
        raise KeyboardInterrupt
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = ctrl_c
import iolab
sys.exit(iolab._command())
"""


def test_a_ctrl_c_while_the_program_loads_is_one_line_and_130():
    """The ``iolab`` program (pyproject's [project.scripts]) catches a Ctrl-C while the command
    line loads, before iolab's own handling starts: one line and 130, not Python's traceback
    (one start in 20 showed it to a SIGINT 50-70 ms in)."""
    done = subprocess.run([PYTHON, "-c", CTRL_C_WHILE_LOADING], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "iolab: interrupted (Ctrl-C) while starting; nothing was run\n")


def test_the_command_reads_notebooks_without_building_iri_grammars(tmp_path):
    """jsonschema's rfc3987-syntax parsers (a second of every notebook command) are not built
    in the iolab program, and nbformat still validates notebooks without them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "iolab.cli", "publish", str(tmp_path / "none.ipynb")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "no such notebook" in done.stderr and "nbformat" in imported and "lark" not in imported
    code = (
        "from iolab import cli\n"
        "cli._without_iri_grammars()\n"
        "import nbformat\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "try:\n"
        "    nbformat.validate(nbformat.from_dict({**nb, 'cells': [{'cell_type': 'code'}]}))\n"
        "except nbformat.ValidationError:\n"
        "    print('refused')\n"
    )
    checked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert checked.stdout.split() == ["refused"], checked.stderr[-2000:]


def test_demo_takes_one_cpu_to_measure_on_and_refuses_others_before_anything_runs(tmp_path):
    """``iolab demo`` waited up to 600 s for CPU 0 with no way to choose another (issue P35)."""
    for given, said in (("0-1", "the demo measures on one CPU"), ("99", "CPU 99 does not exist"), ("x", "cannot read")):
        done = cli_here("demo", "--cpus", given, "--out", tmp_path / "out")
        assert done.returncode == 1 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()
    assert "--cpus" in cli_here("demo", "--help").stdout


def test_a_ledger_or_lock_folder_that_cannot_be_written_names_its_own_setting(tmp_path, monkeypatch):
    """An OSError in the ledger's folder names IOLAB_STATE, in the locks' IOLAB_LOCKS, and
    elsewhere the data folder's settings, as before (they cannot move the ledger)."""
    from iolab.cli.messages import os_error

    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("IOLAB_LOCKS", str(tmp_path / "locks"))
    denied = [
        PermissionError(13, "Permission denied", str(tmp_path / p)) for p in ("state/ledger", "locks/cpu0", "runs")
    ]
    said = [os_error(exc, "run") for exc in denied]
    assert said[0].endswith("(IOLAB_STATE=DIR)") and said[1].endswith("(IOLAB_LOCKS=DIR)"), said
    assert said[2].endswith("(--runs-dir / --scratch-dir, or IOLAB_DATA=DIR)"), said
