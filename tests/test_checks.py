"""Plausibility checks on real runs: a cache answering, a clean direct read, other traffic on
the device; and each check's rule on recorded figures."""

import json
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from iolab.measure.runner import measure
from iolab.read import checks
from support.cpus import CPU, unshared
from support.paths import REPO

QUICK = {"ioengine": "psync", "runtime": "1s"}


def iolab(*args):
    return subprocess.run(
        [sys.executable, "-m", "iolab.cli", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "lib"), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"},
        timeout=120,
    )


def test_a_buffered_re_read_is_flagged_as_served_by_a_cache(scratch, runs):
    job = {**QUICK, "rw": "read", "direct": 0}
    measure(job, scratch, cpus=[CPU], runs_dir=runs / "first")  # brings the file into the page cache
    # fio drops a file's cached pages before a run unless invalidate=0: then the cache answers
    again = measure({**job, "invalidate": 0}, scratch, cpus=[CPU], runs_dir=runs / "again")
    assert again.table["flags"].iloc[0].startswith("device_vs_fio: served by a cache")
    stored = json.loads((again.path / "checks.json").read_text())["checks"]
    cache = next(c for c in stored if c["name"] == "device_vs_fio")
    assert cache["passed"] is False and cache["figures"]["device_bytes"] < 0.5 * cache["figures"]["fio_bytes"]
    done = iolab("check", str(again.path))
    assert done.returncode == 3 and "FLAG device_vs_fio" in done.stdout and "1 of 1 runs flagged" in done.stdout


def test_a_direct_read_of_loop_devices_is_not_flagged_counting_every_device(loopdev, runs):
    """One job per device (a search's devices axis): the device's counters are summed over
    every device the job opens; counting the first alone read 0.50x and cried 'cache'."""
    from iolab.machine.target import loop_device

    with loop_device("64m") as other:
        jobs = [{"filename": loopdev.path}, {"filename": other.path}]
        result = measure({**QUICK, "rw": "randread", "direct": 1}, loopdev, cpus=[CPU], runs_dir=runs, jobs=jobs)
    assert (result.table["flags"].map(unshared) == "").all()
    found = checks.run_checks(result.path)
    device = next(c for c in found if c.name == "device_vs_fio")
    assert device.passed and device.figures["device_ios"] + device.figures["device_merges"] >= device.figures["fio_ios"]
    assert 0.9 < device.figures["device_over_fio"] < 1.5, device.figures
    counted = json.loads((result.path / "blockstat.json").read_text())
    assert sorted(counted["devices"]) == sorted([loopdev.device, other.device])
    checked = iolab("check", str(runs))
    assert checked.returncode in (0, 3) and "FLAG device_vs_fio" not in checked.stdout  # 3: a shared CPU alone


def test_other_traffic_on_the_device_is_flagged(loopdev, runs):
    def other_reader():  # once fio measures (the run may first wait for its CPU's lock)
        from support.fio import fio_running, wait_for_fio

        wait_for_fio(runs, timeout=120)
        while fio_running(runs):  # 16 MiB again and again until fio ends: one late dd may miss the run
            subprocess.run(
                ["dd", f"if={loopdev.path}", "of=/dev/null", "bs=1M", "count=16", "iflag=direct"], capture_output=True
            )
            time.sleep(0.05)

    t = threading.Thread(target=other_reader)
    t.start()
    result = measure(
        {**QUICK, "rw": "randread", "direct": 1, "rate_iops": 200, "runtime": "1500ms"},
        loopdev,
        cpus=[CPU],
        runs_dir=runs,
    )
    t.join()
    assert "other traffic shared the device" in result.table["flags"].iloc[0]


# ---------------------------------------------------------------- the rules, on recorded figures
FIO = pd.DataFrame(
    [
        {"direction": "read", "io_bytes": 8 << 30, "total_ios": 2 << 20, "bw_bytes_s": 8e9, "clat_mean_us": 0.0004},
        {"direction": "write", "io_bytes": 1 << 30, "total_ios": 1 << 18, "bw_bytes_s": 1e9, "clat_mean_us": 12.0},
    ]
)


def test_a_pcie_link_caps_bandwidth():
    pci = {"link_speed": "8.0 GT/s PCIe", "link_width": "4"}
    assert checks.link_capacity_bytes_s(pci) == pytest.approx(8e9 * 4 * 128 / 130 / 8)
    assert checks.link_capacity_bytes_s({"link_speed": "2.5 GT/s", "link_width": "1"}) == pytest.approx(2.5e8)
    assert checks.link_capacity_bytes_s({}) is None
    (over,) = checks.bus_ceiling(FIO, {"pci": pci}, None)
    assert over.passed is False and "above the PCIe link" in over.words
    (given,) = checks.bus_ceiling(FIO, {}, 20e9)
    assert given.passed and "ceiling given" in given.words
    (none,) = checks.bus_ceiling(FIO, {}, None)
    assert none.passed is None


def test_latency_below_the_clock_or_the_floor_is_impossible():
    found = {c.direction: c for c in checks.latency_floor(FIO, None)}
    assert found["read"].passed is False and "fio clock resolution" in found["read"].words
    assert found["write"].passed
    floored = {c.direction: c for c in checks.latency_floor(FIO, 20.0)}
    assert floored["write"].passed is False and "floor given" in floored["write"].words


def test_writes_on_a_fresh_ssd_are_labelled_fresh_out_of_box():
    ssd = {"device": "nvme0n1", "queue": {"rotational": "0"}, "target_state": "not preconditioned: as found"}
    (fresh,) = checks.ssd_state(FIO, ssd)
    assert fresh.passed is False and "fresh-out-of-box" in fresh.words
    assert checks.ssd_state(FIO, {**ssd, "target_state": "preconditioned: SNIA steady state in round 7"})[0].passed
    assert checks.ssd_state(FIO, {**ssd, "device": "loop3"}) == []  # not an SSD
    assert checks.ssd_state(FIO[FIO.direction == "read"], ssd) == []  # no writes


def test_instrument_cost_is_a_figure_not_a_silent_mix():
    table = pd.DataFrame(
        {
            "qd": [1, 1, 1, 8],
            "direction": "read",
            "iops": [100.0, 102.0, 90.0, 50.0],
            "instruments": ["", "", "perf record, perf stat", "thread sampler"],
            "flags": "",
        }
    )
    out = checks.instrument_cost(table, by=["qd", "direction"])
    assert out.loc[2, "instrument_cost_pct"] == pytest.approx(100 * (1 - 90 / 101))
    assert "perf record, perf stat: iops +10.9 % below the mean of 2 clean run(s)" in out.loc[2, "flags"]
    assert "no clean run of this cell" in out.loc[3, "flags"] and out.loc[0, "flags"] == ""


def test_figures_and_reports_carry_a_banner(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from iolab.plots import curves

    df = pd.DataFrame(
        {
            "run_id": ["a", "b"],
            "qd": [1, 1],
            "iops": [10.0, 11.0],
            "flags": ["device_vs_fio: served by a cache: vda read 0.1 MiB; use direct=1", ""],
        }
    )
    ax = curves.by_setting(df, "qd")
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("⚠ 1 of 2 runs failed a plausibility check (device vs fio)") for t in texts)  # one line
    assert all("\n" not in t for t in texts if t.startswith("⚠")) and any("iolab check RUN_DIR" in t for t in texts)
    run = tmp_path / "r1"
    run.mkdir()
    (run / "checks.json").write_text(
        json.dumps({"checks": [checks.Check("latency_floor", False, "below 0").as_dict()]})
    )
    flagged = checks.folder_flags([run, tmp_path / "older-run"])
    assert flagged == [(str(run), "latency_floor: below 0")]
    assert checks.banner_text(flagged, 2).startswith("1 of 2 runs behind these figures failed")
    summary = checks.banner_summary(flagged, 2)  # the write-up's one line: names the check, details folded
    assert summary.startswith("1 of 2 runs behind these figures failed a plausibility check (latency floor)")
    assert "below 0" not in summary and "\n" not in summary
