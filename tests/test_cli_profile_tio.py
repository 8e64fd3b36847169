"""perf and t/io_uring from the command line: iolab run --profile and iolab tio, on real runs."""

import json
import os

import pytest

from iolab.core.errors import InputError
from iolab.machine.perf import probe
from iolab.read.tio import flags_from_argv
from support.cli import cli_here
from support.cpus import CPU
from support.marks import needs_root
from support.paths import REPO

have_tio = pytest.mark.skipif(not (REPO / "tools/t_io_uring").exists(), reason="t/io_uring not built (make tio)")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="CPU-wide perf needs root here")


def only_folder(runs):
    (folder,) = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return folder


@root_only
def test_run_profile_keeps_stacks_and_a_flame_graph_and_prints_the_reading(scratch, tmp_path):
    caps = probe()
    if not caps.can_record:
        pytest.skip(caps.explain())
    runs = tmp_path / "runs"
    out = cli_here(
        "run", "--profile", "--target", scratch.path, "--cpus", CPU, "--runs-dir", runs, "--rw=randread",
        "--ioengine=io_uring", "--direct=1", "--iodepth=8", "--runtime=300ms",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    folder = only_folder(runs)
    stacks = (folder / "perf.folded").read_text().splitlines()
    assert stacks and all(line.rsplit(" ", 1)[1].isdigit() for line in stacks)
    svg = (folder / "flamegraph.svg").read_text()
    assert svg.startswith("<svg") and "<script><![CDATA[" in svg and svg.count("<g data-x=") > 5
    assert "http://" not in svg.replace("http://www.w3.org/", "")  # nothing fetched: opens offline
    for words in (
        "flame graph",
        "top functions",
        "kind of work",
        "cycles per IO (",
        "fio's own (",
        "from the cores' busy time",
    ):
        assert words in out.stdout, out.stdout
    params = json.loads((folder / "params.json").read_text())
    assert params["cpus"] == [CPU] and f"perf record on CPU {CPU}" in out.stdout


def test_profile_options_are_checked():
    assert "add --profile" in cli_here("run", "--call-graph", "dwarf").stderr
    assert "--whole-cpu say how --profile reads its samples" in cli_here("run", "--whole-cpu").stderr
    assert cli_here("run", "--profile", "--call-graph", "lbr").returncode == 2


def test_tio_flags_pass_through_checked(tmp_path):
    assert flags_from_argv(["-d", "128", "-p0", "-b", "512", "/dev/ng0n1"]) == (
        {"d": 128, "p": 0, "b": 512},
        ["/dev/ng0n1"],
    )
    with pytest.raises(InputError, match="no flag '-q'.*-d IO depth"):
        flags_from_argv(["-q", "1", "loop"])
    with pytest.raises(InputError, match="-d .*whole number, not 'x'"):
        flags_from_argv(["-d", "x", "loop"])
    out = cli_here("tio", "-d", "16")
    assert out.returncode == 1 and "one target, and 0 were given" in out.stderr
    # what crashed t/io_uring (SIGSEGV, SIGFPE) and was recorded as "interrupted": refused, nothing run
    for flag, value, words in (("-d", "0", "-d (IO depth (128)) must be a whole number from 1, not 0"),
                               ("-d", "100000", "at most 32768 entries"),
                               ("-b", "0", "-b (block size, bytes (4096)) must be a whole number from 1")):  # fmt: skip
        out = cli_here("tio", "--runs-dir", tmp_path, flag, value, "-p", "0", "scratch")
        assert out.returncode == 1 and words in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert not list(tmp_path.glob("*/run.json"))


@have_tio
@needs_root
def test_tio_from_the_command_line_is_stored_and_tabled(loopdev, tmp_path):
    out = cli_here("tio", "--cpus", CPU, "--runs-dir", tmp_path, "-p", "0", "-d", "16", "-r", "2", loopdev.path)
    assert out.returncode == 0, out.stderr
    assert "t/io_uring" in out.stdout and "CPU cycles per IO, fio's own" in out.stdout
    folder = only_folder(tmp_path)
    assert "IOS/call=" in (folder / "tio.txt").read_text()
    assert json.loads((folder / "params.json").read_text())["tio_flags"] == {"r": 2, "p": 0, "d": 16}
    (row,) = json.loads(cli_here("table", tmp_path, "--format", "json").stdout)
    assert row["tool"] == "t/io_uring" and row["iops"] > 1e3 and row["qd"] == 16 and row["run_id"] == folder.name
