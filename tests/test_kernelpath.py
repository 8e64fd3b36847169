"""Kernel-path experiments on loop devices; every knob restored, even after an interrupt."""

import signal
import threading
import time

import pytest

from iolab.core.errors import RunInterrupted
from iolab.core.system import block_stat, queue_knobs, request_sizes
from iolab.machine.knobs import drop_caches
from iolab.studies import kernel_path as kp
from support.fio import QUICK
from support.marks import needs_root
from support.sigint import sigint_raises


@needs_root
def test_interrupted_sweep_restores_the_knob(loopdev, tmp_path):
    """Ctrl-C in the middle of a scheduler sweep: the run is stopped and marked, and the
    scheduler is back to what it was."""
    from support.fio import fio_running

    before = queue_knobs(loopdev.device)

    def ctrl_c_once_fio_runs():  # not on a timer: the run may first wait for its CPU lock
        deadline = time.monotonic() + 60
        while not fio_running(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.raise_signal(signal.SIGINT)

    timer = threading.Thread(target=ctrl_c_once_fio_runs)
    timer.start()
    with sigint_raises(), pytest.raises((KeyboardInterrupt, RunInterrupted)):
        kp.knob_sweep(
            loopdev,
            "scheduler",
            ["mq-deadline", "kyber"],
            {**QUICK, "runtime": "10s"},
            runs_dir=tmp_path,
            rounds={"warmup": None},
        )
    timer.join()
    assert queue_knobs(loopdev.device) == before
    run = next(tmp_path.iterdir())
    assert '"interrupted"' in (run / "run.json").read_text()


@needs_root
def test_scheduler_and_readahead_really_change(loopdev, tmp_path):
    t = kp.knob_sweep(loopdev, "scheduler", ["none", "mq-deadline"], {**QUICK, "direct": 1}, runs_dir=tmp_path / "s")
    assert set(t.scheduler) == {"none", "mq-deadline"} and (t.iops > 0).all()
    ra = kp.knob_sweep(
        loopdev,
        "read_ahead_kb",
        [0, 1024],
        {**QUICK, "rw": "read", "direct": 0},
        runs_dir=tmp_path / "r",
        how={"drop_caches": True},
    )
    size = ra.set_index("read_ahead_kb").dev_read_req_kib
    assert size[0] == pytest.approx(4, abs=0.5) and size[1024] > 8 * size[0]


@needs_root
def test_fio_ios_match_the_device_counters(loopdev, tmp_path):
    """Cross-check with an independent source: fio's IO count vs /sys/block/<dev>/stat."""
    t = kp.block_sizes(loopdev, ["4k", "64k"], {**QUICK, "rw": "read", "direct": 1}, runs_dir=tmp_path)
    for row in t.itertuples():
        assert row.dev_read_ios == pytest.approx(row.total_ios, rel=0.01)
        assert row.dev_read_req_kib == pytest.approx(row.bs_bytes / 1024, rel=0.01)


@needs_root
def test_many_devices_one_fio_each(tmp_path, loop_watch):
    t = kp.many_devices(2, "32m", {**QUICK, "direct": 1}, cpus=[0, 1], runs_dir=tmp_path)
    agg = kp.aggregate(t)
    assert len(t) == 2 and agg.iops.iloc[-1] == pytest.approx(t.iops.sum())
    assert agg.bw_mib_s.iloc[-1] == pytest.approx(t.bw_bytes_s.sum() / 2**20)  # one unit: MiB/s, labelled so
    assert loop_watch.seen and not loop_watch.left_behind()  # its loop devices, detached and removed


@needs_root
def test_drop_caches_and_request_sizes(loopdev):
    before = block_stat(loopdev.device)
    with open(loopdev.path, "rb") as f:
        f.read(1 << 20)
    drop_caches()
    after = block_stat(loopdev.device)
    assert request_sizes(before, after)["dev_read_ios"] > 0


def test_the_tables_06_shows_read_like_a_write_up():
    """One short cell per figure ("mean [low, high]", never broken across lines), counts never
    below 0, whole settings, and the note in words: no CV in every cell, no raw names."""
    import pandas as pd

    from iolab.stats import repeat_stats

    runs = pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(7)],
            "read_ahead_kb": [0.0] * 3 + [128.0] * 3 + [512.0],
            "iops": [128_000, 76_000, 180_000, 5_000, 5_100, 4_900, 7_000],
            "dev_read_ios": [415, 10, 1000, 159, 150, 170, 3],
        }
    )
    shown = repeat_stats.summary_table(repeat_stats.summarise(runs, ["read_ahead_kb"], ["iops", "dev_read_ios"]))
    assert list(shown.columns) == [
        "readahead (KiB)",
        "runs",
        "IOPS (IO/s) [95 % interval]",
        "dev read ios (IOs) [95 % interval]",
        "note",
    ]
    assert list(shown["readahead (KiB)"]) == ["0", "128", "512"]
    count = shown["dev read ios (IOs) [95 % interval]"][0]
    # a count's repeats 50-780 cannot bound it (its t interval reached -169): said, never "[0, …]"
    assert count == "475 (too noisy to bound)"  # its CV: the note's
    assert shown["note"][0].startswith("unstable: ") and "iops" not in shown["note"][0] and "CV" not in count
    assert (
        shown["note"][2] == "no interval: fewer than 3 repeats" and shown["IOPS (IO/s) [95 % interval]"][2] == "7,000"
    )
