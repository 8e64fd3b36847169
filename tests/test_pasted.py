"""Your fio command, unchanged: ``iolab run -- [taskset -c N] fio ...`` and ``iolab run JOB.fio``
run the job as fio reads it — none of iolab's defaults, the target(s) the job names, the CPUs
taskset names — and every fio command line the seed write-ups print (tests/fixtures/
seed_commands.txt) is stored with a row, or refused in one line naming why. iolab's own
defaults (``iolab run --rw=...``) never make a job fail that fio runs (direct=1 on a char
device or a pipe: ``iolab.machine.directio``)."""

import json
import os
import re
import shlex

import pytest

from iolab.cli import main
from iolab.machine.directio import why_not_direct
from support.cpus import CPU
from support.paths import FIXTURES
from support.seed_commands import adapted, seed_commands

# what iolab may add to a pasted job: none of these changes what fio measures (docs/command-line.md)
MAY_ADD = {"cpus_allowed", "output-format", "output", "readonly"}


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("iolab run:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_the_seed_commands_are_every_fio_line_the_write_ups_print():
    """The fixture against the write-ups (beside the checkout, where the team keeps them):
    every prompt line that runs fio with a job, none left out, none retyped."""
    printed = []
    for seed in ("000", "001"):
        found = sorted((FIXTURES.parents[2] / "shared/seeds").glob(f"{seed}_*.txt"))
        if not found:
            pytest.skip("the seed write-ups are not beside this checkout (../shared/seeds)")
        text = found[0].read_text()
        printed += [
            (f"{seed}:{i}", line[2:])
            for i, line in enumerate(text.splitlines(), 1)
            if re.match(r"\$ .*fio --name", line)
        ]
    assert seed_commands() == printed


def test_every_seed_command_runs_or_says_why_on_a_loop_device(loopdev, tmp_path, capsys):
    """The block-device lines are stored with a row and iolab added nothing that changes the
    job; polled (hipri) lines fail on the loop device's missing poll queues and passthrough
    (io_uring_cmd) lines on its not being an NVMe char device, each in one line saying so.
    Lines that differ only in their CPUs run once."""
    runs = tmp_path / "runs"
    seen, outcome = set(), {}
    for where, command in seed_commands():
        argv = adapted(command, CPU, str(loopdev.path), str(loopdev.path))
        if tuple(argv) in seen:
            continue
        seen.add(tuple(argv))
        code = main(["run", "--runs-dir", str(runs), "--", *argv])
        out, err = capsys.readouterr()
        if "--hipri" in argv or "--ioengine=io_uring_cmd" in argv:
            assert code == 1, (where, out)
            said = one_line(err)
            why = "io_uring_cmd sends NVMe commands" if "io_uring_cmd" in command else "needs poll queues"
            assert why in said, (where, said)
            outcome[where] = "refused"
            continue
        assert code == 0, (where, err)
        run = runs / re.search(r"stored: .*/(\S+)", out).group(1)
        params = json.loads((run / "params.json").read_text())
        assert params["as_given"]["source"] == shlex.join(argv)
        added = {a["option"] for a in params["iolab_added"]}
        assert added <= MAY_ADD, (where, added - MAY_ADD)
        jobtext = (run / "job.fio").read_text()
        assert "direct=1" in jobtext and "new_group" not in jobtext and "runtime=300ms" in jobtext
        assert re.search(r"^\s*baseline read\s*\nIOPS \(IO/s\)\s+[\d,.]+", out, re.M), out  # its column, its IOPS
        outcome[where] = "stored"
    assert set(outcome.values()) == {"stored", "refused"} and len(outcome) == 10, outcome


def test_a_job_file_runs_as_written_from_where_it_names(tmp_path, capsys, monkeypatch):
    """``iolab run JOB.fio``: its [global] under each job, a relative filename from the folder
    iolab runs in, no defaults of iolab's (psync, fio's default engine, stays; no direct=1), the
    CPUs of --cpus; --cpus and a taskset that differ are refused; so is a bare fio word. iolab's
    own ``--filename=`` form reads a relative path from that folder too."""
    monkeypatch.chdir(tmp_path)
    job = tmp_path / "job.fio"
    job.write_text("[global]\nrw=randread\nsize=4m\nruntime=300ms\ntime_based\n[one]\nfilename=data.bin\n")
    runs = tmp_path / "runs"
    assert main(["run", "--runs-dir", str(runs), "--cpus", str(CPU), "job.fio"]) == 0
    out, _ = capsys.readouterr()
    (run,) = runs.iterdir()
    text = (run / "job.fio").read_text()
    assert f"filename={tmp_path / 'data.bin'}" in text and f"cpus_allowed={CPU}" in text
    assert "ioengine" not in text and "direct" not in text and "iodepth" not in text
    assert (tmp_path / "data.bin").stat().st_size == 4 * 2**20
    params = json.loads((run / "params.json").read_text())
    assert params["files"][0]["path"] == str(tmp_path / "data.bin") and params["cpus"] == [CPU]

    other = next(c for c in sorted(os.sched_getaffinity(0)) + [CPU + 1] if c != CPU)
    command = ["run", "--runs-dir", str(runs), "--cpus", str(CPU), "--", "taskset", "-c", str(other), "fio"]
    assert main([*command, "--name=x", "--filename=data.bin", "--size=4m"]) == 1
    assert "differ: give one of them" in one_line(capsys.readouterr().err)
    assert main(["run", "--runs-dir", str(runs), "--", "dd", "if=/dev/zero"]) == 1
    assert "expects a fio command" in one_line(capsys.readouterr().err)
    assert len(list(runs.iterdir())) == 1

    own = [
        "run",
        "--runs-dir",
        str(runs),
        "--cpus",
        str(CPU),
        "--rw=randread",
        "--filename=data.bin",
        "--runtime=300ms",
    ]
    assert main(own) == 0  # iolab's own form: the same file, from the same folder (it read the run folder's)
    (again,) = set(runs.iterdir()) - {run}
    params = json.loads((again / "params.json").read_text())
    assert params["files"][0]["path"] == str(tmp_path / "data.bin") and not (again / "data.bin").exists()


def test_iolab_direct_default_yields_where_o_direct_cannot_open(tmp_path, capsys):
    """iolab's direct=1 is not added on a char device (fio's direct=0 runs there); a pipe is
    named too; a --filename= of the user's takes none of the scratch target's options (its
    size); a user's explicit --direct=1 stays theirs (and fails as fio fails)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "pipe" in why_not_direct(str(fifo)) and "character device" in why_not_direct("/dev/zero")
    assert why_not_direct(str(tmp_path)) is None and why_not_direct(str(tmp_path / "new")) is None
    runs = tmp_path / "runs"
    base = ["run", "--runs-dir", str(runs), "--scratch-dir", str(tmp_path / "s"), "--cpus", str(CPU)]
    base += ["--filename=/dev/zero", "--size=4m", "--runtime=300ms"]
    assert main(base) == 0
    (run,) = runs.iterdir()
    text = (run / "job.fio").read_text()
    assert "direct=0" in text and "filename=/dev/zero" in text and text.count("size=") == 1
    added = {a["option"]: a["value"] for a in json.loads((run / "params.json").read_text())["iolab_added"]}
    assert added["direct"] == "0" and added["ioengine"] == "io_uring" and added["output-format"] == "json+"
    capsys.readouterr()
    assert main([*base, "--direct=1"]) == 1
    assert "character device" in one_line(capsys.readouterr().err)
