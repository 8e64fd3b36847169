"""The machine snapshot and the read-only readers (knob changes: test_knobs.py)."""

from pathlib import Path

from iolab.core.system import parse_cpu_list, snapshot, turbo_state


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


def test_turbo_state_reads_the_kernel_files():
    """Against the files themselves (intel_pstate.rst: no_turbo 1 = off; cpufreq.rst: boost 1 = on)."""
    on, source = turbo_state()
    no_turbo, boost = (
        Path("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        Path("/sys/devices/system/cpu/cpufreq/boost"),
    )
    if no_turbo.exists():
        assert (on, source) == (no_turbo.read_text().strip() == "0", "intel_pstate/no_turbo")
    elif boost.exists():
        assert (on, source) == (boost.read_text().strip() == "1", "cpufreq/boost")
    else:
        assert (on, source) == (None, "no intel_pstate or cpufreq boost file")
