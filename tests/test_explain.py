"""iolab explain A B (issue P36): planted causes on a loop device, each side 3 real fio runs
on one CPU, B differing from A by one thing; the planted cause comes first, with its figures."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.compare.explain import explain_paths, lines
from iolab.machine import knobs
from iolab.machine.stress import stressed
from iolab.measure.runner import measure
from support.cpus import CPU
from support.marks import is_root

RANDOM = {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "direct": 1, "iodepth": 16}
SEQUENTIAL = {"rw": "read", "bs": "4k", "ioengine": "psync", "direct": 0}  # buffered: readahead applies
SHORT = {"runtime": "700ms", "time_based": 1}


@pytest.mark.slow
@pytest.mark.skipif(not is_root, reason="loop devices and queue knobs need root")
def test_planted_causes_come_first(tmp_path):
    from iolab.machine.target import loop_device

    def side(name, options, dev):
        for _ in range(3):
            measure({**options, **SHORT}, dev, cpus=[CPU], runs_dir=tmp_path / name)
        return tmp_path / name

    with loop_device("128m") as dev:
        a = side("a", RANDOM, dev)
        with knobs.applied(dev, {"scheduler": "mq-deadline"}):
            scheduler = side("scheduler", RANDOM, dev)
        with stressed([CPU]):
            hog = side("hog", RANDOM, dev)
        bigger = side("bs", {**RANDOM, "bs": "16k"}, dev)
        with knobs.applied(dev, {"read_ahead_kb": 128}):
            seq = side("seq", SEQUENTIAL, dev)
        with knobs.applied(dev, {"read_ahead_kb": 0}):
            no_readahead = side("ra0", SEQUENTIAL, dev)
            verify = [sys.executable, "-m", "iolab.cli", "explain", str(seq), str(no_readahead), "--verify"]
            verified = subprocess.run(
                [*verify, "--runs-dir", str(tmp_path / "v")], capture_output=True, text=True, timeout=300
            )
            kept = (Path("/sys/block") / dev.device / "queue" / "read_ahead_kb").read_text().strip()
        assert verified.returncode == 0, verified.stderr
        closing = re.search(r"closing (\d+) % \[(\d+) %; (\d+) %\] of the gap", verified.stdout)
        assert closing and int(closing.group(1)) >= 70, verified.stdout  # readahead back on: most of the gap closes
        assert kept == "0" and "read_ahead_kb was put back as it was" in verified.stdout  # B's setting, put back
        assert len(list((tmp_path / "v").iterdir())) >= 3

    found = explain_paths(a, hog)
    assert found.gap_shown and found.ratio < 0.8 and found.top.what == "other programs on the measuring CPUs"
    assert "other programs took" in found.top.evidence and found.top.share > 0.5, lines(found)

    found = explain_paths(a, bigger)
    assert [c.what for c in found.workload] == ["the job's bs"] and "bandwidth A" in found.workload[0].evidence
    assert "a different job (said first" in "\n".join(lines(found))

    found = explain_paths(seq, no_readahead)
    assert found.gap_shown and found.top.what == "the queue's read_ahead_kb", lines(found)
    assert "requests per fio IO" in found.top.evidence

    found = explain_paths(a, scheduler)  # on a loop device mq-deadline costs CPU per IO, not IOPS
    assert found.ranked and found.ranked[0].what == "the I/O scheduler (none → mq-deadline)", lines(found)
    assert "seed 001 measured 2.19×" in found.ranked[0].evidence

    done = subprocess.run(
        [sys.executable, "-m", "iolab.cli", "explain", str(a), str(hog)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "1. other programs on the measuring CPUs" in done.stdout, done.stderr
    gone = subprocess.run(
        [sys.executable, "-m", "iolab.cli", "explain", str(a), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert gone.returncode == 1 and len(gone.stderr.strip().splitlines()) == 1, gone.stderr
