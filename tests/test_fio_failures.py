"""fio's failures in one line: repeated lines collapsed, known causes named (recorded fio words,
tests/fixtures/record_fio_failures.sh), and a real polled run on a loop device without poll queues."""

import re

import pytest

from iolab.read.fio_failures import Facts, causes, collapse, explain
from support.cli import cli_here
from support.cpus import CPU
from support.marks import needs_root
from support.paths import FIXTURES

RECORDED = FIXTURES / "fio_failures"


def said(name: str) -> list[str]:
    return [line for line in (RECORDED / f"{name}.stderr").read_text().splitlines() if line.strip()]


def job(name: str) -> str:
    return (RECORDED / f"{name}.fio").read_text().replace("LOOP", "/dev/loop0").replace("TMPFS", "/tmp/tmpfs")


def test_repeated_lines_that_differ_in_numbers_collapse_to_one():
    lines = said("hipri_no_poll_queues")
    assert len(lines) == 64 and len(set(lines)) > 1  # one line per failed IO, offsets differ
    out = collapse([*lines, "fio: job x dropped", "io_u error on /dev/loop1: Operation not supported"])
    assert out[0] == f"64 x {lines[0]} (the numbers vary)"
    assert out[1:] == ["fio: job x dropped", "io_u error on /dev/loop1: Operation not supported"]  # loop1 stays apart
    assert collapse(["a 1", "a 1"]) == ["2 x a 1"]


NO_POLL = Facts(kinds={"/dev/loop0": "block"}, io_poll={"/dev/loop0": ("/sys/block/loop0/queue/io_poll", "0")})


def test_polled_io_without_poll_queues_is_named_from_the_devices_io_poll():
    (cause,) = causes(said("hipri_no_poll_queues"), job("hipri_no_poll_queues"), NO_POLL)
    assert "poll queues" in cause and "/sys/block/loop0/queue/io_poll is 0" in cause and "drop --hipri" in cause
    polled = Facts(kinds=NO_POLL.kinds, io_poll={"/dev/loop0": ("/sys/block/loop0/queue/io_poll", "1")})
    assert causes(said("hipri_no_poll_queues"), job("hipri_no_poll_queues"), polled) == []  # another cause then
    no_hipri = job("hipri_no_poll_queues").replace("hipri\n", "")
    assert causes(said("hipri_no_poll_queues"), no_hipri, NO_POLL) == []


@pytest.mark.parametrize(
    "name, facts, words",
    [
        ("odirect_char_device", Facts(kinds={"/dev/zero": "char"}), r"/dev/zero is a character device.*--direct=0"),
        ("uring_cmd_block_device", Facts(kinds={"/dev/loop0": "block"}), r"/dev/ngXnY.*/dev/loop0 \(block\)"),
        ("engine_missing", Facts(), r"no xnvme engine.*fio --enghelp"),
        ("cpu_missing", Facts(), r"CPU 7 does not exist here: fio sees CPUs 0-1"),
        ("size_below_block", Facts(), r"size=1024 bytes is less than one block of 4096 bytes"),
        ("no_space", Facts(kinds={"/tmp/tmpfs/big": "missing"}), r"could not lay out /tmp/tmpfs/big.*size=64m"),
    ],
)
def test_each_known_cause_from_fios_recorded_words(name, facts, words):
    found = causes(said(name), job(name), facts)
    assert len(found) == 1 and re.search(words, found[0]), found


def test_old_kernel_for_io_uring_cmd_and_no_cause_for_unknown_words():
    old = Facts(kinds={"/dev/ng0n1": "char"}, kernel="5.15.0-91-generic")
    jobtext = "[x]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\n"
    (cause,) = causes(["fio: io_uring_setup: Invalid argument"], jobtext, old)
    assert "5.19 or later" in cause and "5.15.0-91-generic" in cause
    assert causes(["fio: io_uring_setup: Invalid argument"], jobtext, Facts(kernel="6.1.0")) == []
    assert explain(["fio: something new"], "", "fix it") == ("fio: something new", "fix it")


@needs_root
def test_hipri_on_a_loop_device_fails_in_one_line_with_its_cause(loopdev, tmp_path):
    out = cli_here(
        "run", "--target", loopdev.path, "--cpus", CPU, "--runs-dir", tmp_path, "--rw=randread", "--hipri",
        "--ioengine=io_uring", "--direct=1", "--iodepth=64", "--runtime=300ms",
    )  # fmt: skip
    said = [line for line in out.stderr.splitlines() if line.startswith("iolab run:")]  # (a CPU lock wait says so too)
    assert out.returncode == 1 and len(said) == 1, out.stderr
    n = int(re.search(r"(\d+) x fio: io_u error on file", out.stderr).group(1))
    assert f"{loopdev.device}/queue/io_poll is 0" in out.stderr and "drop --hipri" in out.stderr
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    kept = (folder / "fio.stderr").read_text()  # fio's stderr, whole
    assert n > 1 and kept.count("io_u error on file") == n and f"fio's whole stderr: {folder}/fio.stderr" in out.stderr


@needs_root
def test_odirect_on_a_char_device_is_named(tmp_path):
    out = cli_here(
        "run", "--target", "/dev/zero", "--cpus", CPU, "--runs-dir", tmp_path, "--rw=read", "--size=1m",
        "--direct=1", "--runtime=300ms",
    )  # fmt: skip
    assert out.returncode == 1 and "/dev/zero is a character device" in out.stderr, out.stderr
