"""The machine snapshot and the read-only readers (knob changes: test_knobs.py)."""
from pathlib import Path

from iolab.system import parse_cpu_list, snapshot, turbo_state


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


def test_turbo_state_says_where_it_looked():
    on, source = turbo_state()
    assert on in (True, False, None) and source
    assert on is not None or "no intel_pstate" in source
