"""iostat's %util, await and aqu-sz from the block counters a run records, fio's own disk_util
beside them, and the check that the two instruments agree: hand-computed figures, a recorded
run's numbers, fio fixtures with and without disk_util, and a real run on a loop device."""

import json
import math

import pytest

from iolab.core.columns import COLUMNS, better, interval_method
from iolab.core.system import BLOCK_STAT_FIELDS, iostat
from iolab.read import checks, fiojson
from iolab.runs import producers
from support.cpus import CPU, unshared
from support.fio import QUICK
from support.paths import FIXTURES

NEW = {
    "dev_util_pct": ("%", "", "t"),
    "dev_await_ms": ("ms", "lower", "bootstrap"),
    "dev_r_await_ms": ("ms", "lower", "bootstrap"),
    "dev_w_await_ms": ("ms", "lower", "bootstrap"),
    "dev_aqu_sz": ("requests", "", "t"),
    "fio_disk_util_pct": ("%", "", "t"),
    "fio_disk_read_ios": ("IOs", "", "t"),
    "fio_disk_write_ios": ("IOs", "", "t"),
    "fio_disk_aqu_sz": ("requests", "", "t"),
}

# a recorded run (data/runs/block-size-*/...-bs64k-r0: 2 s of 64k random reads on nvme0n1,
# before interval_s was recorded), its counters and fio's disk_util copied here
RECORDED_BEFORE = dict(zip(BLOCK_STAT_FIELDS, (276588, 0, 6313024, 53922, 0, 0, 0, 0, 0, 28780, 53922)))
RECORDED_AFTER = dict(zip(BLOCK_STAT_FIELDS, (286715, 0, 7609280, 55866, 0, 0, 0, 0, 0, 30396, 55866)))
RECORDED_DISK = {"name": "nvme0n1", "read_ios": 9642, "write_ios": 0, "read_merges": 0, "write_merges": 0}
RECORDED_DISK |= {"read_ticks": 1850, "write_ticks": 0, "in_queue": 1850, "util": 75.810474}


def _stat(**fields) -> dict[str, int]:
    return {name: fields.get(name, 0) for name in BLOCK_STAT_FIELDS}


def test_iostat_by_hand():
    before = _stat(read_ios=100, write_ios=50, read_ticks_ms=40, write_ticks_ms=90, io_ticks_ms=1000)
    after = _stat(
        read_ios=1100,  # 1000 reads in 500 ms of ticks: r_await 0.5 ms
        write_ios=250,  # 200 writes in 600 ms: w_await 3 ms
        read_ticks_ms=540,
        write_ticks_ms=690,
        io_ticks_ms=2600,  # 1600 ms busy of 2 s: 80 %
        time_in_queue_ms=3000,  # 3000 ms of requests in 2 s: 1.5 in flight
    )
    got = iostat(before, after, 2.0)
    assert got == {
        "dev_util_pct": pytest.approx(80.0),
        "dev_r_await_ms": pytest.approx(0.5),
        "dev_w_await_ms": pytest.approx(3.0),
        "dev_await_ms": pytest.approx(1100 / 1200),  # (500 + 600) ms over 1200 requests
        "dev_aqu_sz": pytest.approx(1.5),
    }
    assert iostat(before, {**after, "io_ticks_ms": 3100}, 2.0)["dev_util_pct"] == 100.0  # capped, as iostat does
    idle = iostat(before, before, 2.0)
    assert idle["dev_util_pct"] == 0.0 and idle["dev_aqu_sz"] == 0.0 and math.isnan(idle["dev_await_ms"])


def test_a_recorded_run_without_its_interval_gives_await_only():
    got = iostat(RECORDED_BEFORE, RECORDED_AFTER, None)
    assert got["dev_r_await_ms"] == pytest.approx(1944 / 10127) and got["dev_await_ms"] == got["dev_r_await_ms"]
    assert math.isnan(got["dev_w_await_ms"])
    assert math.isnan(got["dev_util_pct"]) and math.isnan(got["dev_aqu_sz"])  # never a guessed interval
    with_interval = iostat(RECORDED_BEFORE, RECORDED_AFTER, 2.2)
    assert with_interval["dev_util_pct"] == pytest.approx(100 * 1616 / 2200)
    assert with_interval["dev_aqu_sz"] == pytest.approx(1944 / 2200)


def test_every_new_column_is_registered_with_unit_direction_and_interval():
    for name, (unit, direction, method) in NEW.items():
        assert COLUMNS[name].unit == unit and COLUMNS[name].role == "metric", name
        assert better(name) == direction and interval_method(name) == method, name


def _run_folder(tmp_path, report: dict, device="nvme0n1", interval_s=None):
    """A run folder of the recorded run: blockstat.json (with ``interval_s`` when given) and
    ``report`` as fio.json."""
    blockstat = {"device": device, "before": RECORDED_BEFORE, "after": RECORDED_AFTER}
    if interval_s is not None:
        blockstat["interval_s"] = interval_s
    (tmp_path / "blockstat.json").write_text(json.dumps(blockstat))
    (tmp_path / "fio.json").write_text(json.dumps(report))
    return tmp_path


def _report(disks: list[dict]) -> dict:
    doc = fiojson.load_document(FIXTURES / "fio" / "json_randread.json").data
    job = doc["jobs"][0]
    job["read"].update(total_ios=10127, runtime=2001, io_bytes=10127 * 65536, bw_bytes=331675538)
    return {**doc, "jobs": [job], "disk_util": disks}


def test_the_block_producer_gives_fio_disk_util_for_the_runs_device(tmp_path):
    md = {"name": "md0", "read_ios": 20000, "write_ios": 4, "in_queue": 0, "util": 0.0, "aggr_util": 50.1}
    run = _run_folder(tmp_path, _report([md, RECORDED_DISK]), interval_s=2.2)
    got = producers.block_columns(run)
    assert got["fio_disk_util_pct"] == pytest.approx(75.810474) and got["fio_disk_read_ios"] == 9642
    assert got["fio_disk_write_ios"] == 0 and got["fio_disk_aqu_sz"] == pytest.approx(1850 / 2001)
    assert got["dev_util_pct"] == pytest.approx(100 * 1616 / 2200) and got["dev_read_ios"] == 10127
    other = producers.block_columns(_run_folder(tmp_path, _report([md, RECORDED_DISK]), device="sdz"))
    assert other["fio_disk_read_ios"] == 20000  # not listed: fio's first device
    assert math.isnan(other["dev_util_pct"])  # no interval_s: an older run


def test_a_report_without_disk_util(tmp_path):
    error_report = fiojson.load_document(FIXTURES / "fio" / "json_job_error.json").data
    assert "disk_util" not in error_report and fiojson.disk_util(error_report) == {}
    assert fiojson.disk_util({"disk_util": "garbage"}) == {}
    report = _report([])
    del report["disk_util"]
    got = producers.block_columns(_run_folder(tmp_path, report))
    assert all(math.isnan(got[name]) for name in producers.FIO_DISK_COLUMNS)
    assert got["dev_r_await_ms"] == pytest.approx(1944 / 10127)
    assert [c.name for c in checks.run_checks(tmp_path)].count("fio_disk_util") == 0


def test_fio_disk_util_against_the_counters(tmp_path):
    run = _run_folder(tmp_path, _report([RECORDED_DISK]))
    (found,) = [c for c in checks.run_checks(run) if c.name == "fio_disk_util"]
    assert found.passed and found.figures["fio_disk_ios"] == 9642 and found.figures["device_ios"] == 10127
    assert found.figures["tail_ios"] == pytest.approx(10127 / 2.001 * 0.5)

    fio = fiojson.run_rows(run)
    blockstat = json.loads((run / "blockstat.json").read_text())
    disks = fiojson.disk_util({"disk_util": [RECORDED_DISK]})
    missed = {"nvme0n1": {**disks["nvme0n1"], "read_ios": 6000.0}}
    (low,) = checks.fio_disk_util(fio, missed, blockstat)
    assert low.passed is False and "6,000 read IOs" in low.words and "10,127" in low.words
    assert checks.flags([low]).startswith("fio_disk_util: fio's disk_util counted")
    more = {"nvme0n1": {**disks["nvme0n1"], "read_ios": 10200.0}}
    (high,) = checks.fio_disk_util(fio, more, blockstat)
    assert high.passed is False and "trust neither count" in high.words
    trickle = {**blockstat, "after": {**blockstat["after"], "write_ios": 38}}  # fio's layout, a journal
    assert all(c.passed for c in checks.fio_disk_util(fio, disks, trickle))
    (elsewhere,) = checks.fio_disk_util(fio, {"sdb": disks["nvme0n1"]}, blockstat)
    assert elsewhere.passed is None and "sdb" in elsewhere.words
    assert checks.fio_disk_util(fio, {}, blockstat) == [] and checks.fio_disk_util(fio, disks, None) == []


def test_a_real_run_on_a_loop_device(loopdev, runs):
    from iolab.measure.runner import measure

    result = measure({**QUICK, "direct": 1, "runtime": "500ms"}, loopdev, cpus=[CPU], runs_dir=runs)
    row = result.table.iloc[0]
    blockstat = json.loads((result.path / "blockstat.json").read_text())
    assert blockstat["interval_s"] > 0.5  # fio's runtime and its start-up
    assert 0 < row.dev_util_pct <= 100 and row.dev_await_ms > 0 and row.dev_aqu_sz >= 0
    assert row.dev_r_await_ms == row.dev_await_ms and math.isnan(row.dev_w_await_ms)
    assert row.fio_disk_read_ios > 0 and 0 < row.fio_disk_util_pct <= 100 and row.fio_disk_aqu_sz >= 0
    stored = json.loads((result.path / "checks.json").read_text())["checks"]
    (disk,) = [c for c in stored if c["name"] == "fio_disk_util"]
    assert disk["passed"] is True, disk
    assert unshared(row["flags"]) == ""
