"""The machine snapshot and temporary knob changes."""
from pathlib import Path

import pytest

from conftest import needs_root
from iolab.system import parse_cpu_list, snapshot, temporary_value


def test_snapshot_records_what_is_absent():
    snap = snapshot("loop0" if Path("/sys/block/loop0").exists() else None, [0])
    assert snap["kernel"] and snap["cpus_online"] and snap["fio_version"].startswith("fio-")
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq").exists():
        assert "cpufreq" in snap["absent"] and snap["scaling_cur_freq_khz"][0] is None
        assert snap["cpuinfo_mhz"][0] > 0
    assert isinstance(snap["absent"], dict) and "pci" in snap and "nvme" in snap
    assert snap["pci"].get("link_speed") or "pci_link" in snap["absent"]


def test_cpu_list():
    assert parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]


@needs_root
def test_temporary_value_restores_on_error(loopdev):
    ra = Path(f"/sys/block/{loopdev.device}/queue/read_ahead_kb")
    sched = Path(f"/sys/block/{loopdev.device}/queue/scheduler")
    before_ra, before_sched = ra.read_text(), sched.read_text()
    with pytest.raises(RuntimeError):
        with temporary_value(ra, "0"), temporary_value(sched, "mq-deadline"):
            assert ra.read_text().strip() == "0" and "[mq-deadline]" in sched.read_text()
            raise RuntimeError("interrupted experiment")
    assert ra.read_text() == before_ra and sched.read_text() == before_sched
    snap = snapshot(loopdev.device)
    assert snap["queue"]["read_ahead_kb"] == before_ra.strip()
    assert "mq-deadline" in snap["queue"]["schedulers_available"]
