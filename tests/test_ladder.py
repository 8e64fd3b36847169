"""The tuning ladder on a loop device: which steps run, which are skipped and why."""

import re

import pytest

from iolab.core.errors import InputError
from iolab.studies import ladder as lad
from support.cpus import CPU
from support.marks import needs_root


@needs_root
def test_capabilities_of_a_loop_device(loopdev):
    caps = lad.capabilities(loopdev)
    assert caps["poll"].startswith(f"no poll queues: /sys/block/{loopdev.device}/queue/io_poll is 0")
    assert caps["nvme"].startswith("not NVMe") and "not NVMe" in caps["nvme_ng"]
    assert lad.tio_polled(loopdev) == 0  # t/io_uring -p 0: no poll queues to poll
    assert (
        "opt_in" in lad.capabilities(loopdev, opt_in=False) and lad.capabilities(loopdev, opt_in=True)["opt_in"] is None
    )


@needs_root
def test_short_ladder(loopdev, tmp_path):
    steps = [
        lad.Step("baseline", {"ioengine": "io_uring", "direct": 1, "iodepth": 8}),
        lad.Step("hipri", {"hipri": 1}, ["poll"]),
        lad.Step("fixedbufs", {"fixedbufs": 1, "registerfiles": 1}),
        lad.Step("gtod_reduce", {"gtod_reduce": 1}, peak_only=True),
        lad.Step("batching", {"iodepth": 32, "iodepth_batch_submit": 16, "iodepth_batch_complete": 4}),
    ]
    t = lad.run_ladder(steps, loopdev, cpu=CPU, base={"runtime": "500ms"}, runs_dir=tmp_path)
    assert list(t.status) == ["measured", "skipped", "measured", "measured", "measured"]
    assert "io_poll is 0" in t.reason[1]
    assert t.iops[0] > 1e3 and pytest.approx(t.gain_pct[2]) == 100 * (t.iops[2] / t.iops[0] - 1)
    # gtod_reduce is peak-only: no latency there, and batching is compared with fixedbufs
    assert t.clat_p99_us.isna()[3] and t.clat_p99_us[4] > 0
    assert pytest.approx(t.gain_pct[4]) == 100 * (t.iops[4] / t.iops[2] - 1)


@needs_root
def test_a_failing_nvme_cli_fails_its_step_not_the_ladder(scratch, tmp_path, monkeypatch):
    """nvme-cli exiting non-zero used to escape as CalledProcessError and abort the ladder."""
    from iolab.machine.target import Target
    from support.fake_tools import failing_nvme

    failing_nvme(tmp_path, monkeypatch)
    as_nvme = Target(scratch.kind, scratch.path, scratch.size_bytes, device="nvme0n1")
    steps = [
        lad.Step("baseline", {"ioengine": "psync", "iodepth": 1}),
        lad.Step("coalescing", {}, knobs={"nvme_coalescing": 0x320}),
        lad.Step("again", {}),
    ]
    t = lad.run_ladder(steps, as_nvme, cpu=CPU, base={"runtime": "500ms"}, runs_dir=tmp_path / "runs")
    assert list(t.status) == ["measured", "failed", "measured"]
    assert "exit 2): NVMe status: Invalid Field" in t.reason[1]


def test_a_wrong_step_is_one_line():
    """A notebook's own steps: an unknown requirement ended in a 68-line pandas KeyError, an
    unknown key in Python's TypeError; each is now one line naming the nearest."""
    for given, words in (
        ({"name": "x", "requires": ["nothing"]}, "unknown requirement 'nothing'"),
        ({"name": "x", "requires": ["pol"]}, "'pol' (did you mean 'poll'?)"),
        ({"name": "x", "fios": {"hipri": 1}}, "unknown key 'fios' (did you mean 'fio'?)"),
        ({"fio": {}}, "a ladder step needs a name"),
        ({"name": "x", "tool": "spdk"}, "tool is fio or tio, not 'spdk'"),
        ({"name": "x", "knobs": {"schedular": "none"}}, "unknown knob 'schedular' (did you mean 'scheduler'?)"),
        ("hipri", "a ladder step is a mapping"),
    ):
        with pytest.raises(InputError, match=re.escape(words)):
            lad.Step.of(given)
    assert lad.Step.of({"name": "hipri", "fio": {"hipri": 1}, "requires": ["poll"]}) == lad.Step(
        "hipri", {"hipri": 1}, ["poll"]
    )
    with pytest.raises(InputError, match="batch_qd is a queue depth: a whole number from 1, not 0"):
        lad.default_ladder(32, 0)  # was taken, and failed a step in a notebook that ended with exit 0


def test_t_io_uring_polls_where_the_device_can_whatever_the_coalescing_step_carried(scratch, monkeypatch):
    """The coalescing step runs fio unpolled (hipri: 0) and is carried forward; the author's
    t/io_uring 2.81M was polled (-p 1): the last step's -p follows the device, not that step."""
    from iolab.machine import knobs

    grids = []
    monkeypatch.setattr(lad, "sweep", lambda grid, **kw: grids.append(grid) or __import__("pandas").DataFrame())
    monkeypatch.setattr(lad, "add_cycles_per_io", lambda table: table)
    tio = lad.default_ladder()[-1]
    carried = {"ioengine": "io_uring", "hipri": 0}  # after "interrupt coalescing"
    poll = knobs.get("io_poll")
    monkeypatch.setattr(poll, "check", lambda target, value=None: None)  # a device with poll queues
    lad.run_step(tio, 7, carried, carried, target=scratch, cpu=CPU, runtime_s=2, runs_dir="unused")
    monkeypatch.setattr(poll, "check", lambda target, value=None: "no poll queues")
    lad.run_step(tio, 7, carried, carried, target=scratch, cpu=CPU, runtime_s=2, runs_dir="unused")
    assert [g.base["p"] for g in grids] == [1, 0]


@pytest.mark.slow
def test_ladder_repeats_run_in_shuffled_rounds_after_a_warmup(scratch, tmp_path, monkeypatch):
    """Round 1 walks the ladder in order, later rounds run every step once more, shuffled. fio
    reads every step's job (and the warm-up's) in one ``--parse-only`` before the first run
    (``iolab.studies.ladder._ask_ahead``), not one fio start-up a step."""
    import json
    import subprocess

    asked, real = [], subprocess.run

    def counting(argv, *args, **kwargs):
        asked.extend([argv] if "--parse-only" in argv else [])
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    steps = [
        lad.Step("one", {"ioengine": "psync", "iodepth": 1}),
        lad.Step("two", {"bs": "8k"}),
        lad.Step("three", {"bs": "16k"}),
    ]
    t = lad.run_ladder(
        steps, scratch, cpu=CPU, base={"runtime": "300ms"}, runs_dir=tmp_path / "runs", rounds={"repeats": 3, "seed": 1}
    )
    assert list(t.status) == ["measured"] * 3 and list(t.runs) == [3, 3, 3]
    assert len(asked) == 1, asked
    # in the order they ran: run.json is written as a run ends (started_utc has whole seconds)
    ran = sorted(
        ((p.parent / "run.json").stat().st_mtime_ns, json.loads(p.read_text())["swept"])
        for p in (tmp_path / "runs").glob("*/params.json")
    )
    rounds = [[s["step"] for _, s in ran if s["repeat"] == r] for r in range(3)]
    assert [s["repeat"] for _, s in ran] == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # round by round
    assert rounds[0] == [0, 1, 2] and rounds[1:] != [[0, 1, 2]] * 2  # later rounds shuffled (seed 1)
    assert len(list((tmp_path / "runs" / "warmup").glob("*/run.json"))) == 1
    bounded = t.gain_low_pct.notna()[1] and t.gain_low_pct[1] > -100  # or said: the repeats cannot bound it
    assert (bounded or t.gain_verdict[1].startswith("too noisy to tell")) and t.gain_verdict[1]
    with pytest.raises(InputError, match="order='up': choose one of"):
        lad.run_ladder(steps, scratch, runs_dir=tmp_path / "x", rounds={"order": "up"})
