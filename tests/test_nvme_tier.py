"""The NVMe tier: the kit's NVMe paths on Linux's real nvme driver, inside the NVMe lab
(``iolab.nvmelab.vm``: QEMU's emulated NVMe controllers). Every test here runs in one guest
boot, which ``tests/test_nvmelab.py::test_the_nvme_tier_in_one_guest_boot`` makes; outside
the lab they are skipped. The guest (``tests/support/nvme_tier.py``) has four controllers, two
poll queues each, on two NUMA nodes: two on the root bus, one behind root port ``rp2`` capped at
2.5 GT/s x1 (the preflight's planted faults: no poll queues, AER errors), one under a pxb-pcie
host bridge on node 1. The kernel numbers them as it probes them, so the planted ones are found
by serial; its figures are an emulator's: these tests are about code paths, never numbers."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.core import system
from iolab.core.errors import UnsafeTargetError
from iolab.machine import knobs
from iolab.machine.target import Target, existing_path
from iolab.measure.runner import measure
from iolab.read import checks
from iolab.studies import kernel_path, ladder, per_core, precondition
from iolab.studies.per_core import LATENCY_SOURCE, have_tio

IN_LAB = bool(os.environ.get("IOLAB_NVMELAB")) and Path("/dev/nvme1n1").exists()
pytestmark = [
    pytest.mark.nvme,
    pytest.mark.skipif(not IN_LAB, reason="runs inside the NVMe lab (tests/test_nvmelab.py boots it)"),
]
QUICK = {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "direct": 1, "runtime": "300ms"}


GENERIC_STEPS = {
    "fixedbufs + registerfiles + norandommap",
    "gtod_reduce (peak only: no latency)",
    "batching: submit 32, complete 8",
}


@pytest.fixture
def ns0():
    return existing_path("/dev/nvme0n1")


def test_the_snapshot_names_the_controller_its_queues_and_the_lab():
    snap = system.snapshot("nvme0n1", [0])
    dev = snap["nvme_device"]
    assert dev["model"] == "QEMU NVMe Ctrl" and dev["firmware_rev"] and dev["transport"] == "pcie"
    assert dev["io_poll"] == "1" and dev["hw_queues"] >= 3  # default queues and the 2 poll queues
    assert snap["nvme"]["poll_queues"] == "2" and snap["queue"]["scheduler_active"] in ("none", "mq-deadline")
    assert "emulator" in snap["emulated"] and system.snapshot_columns(snap)["emulated"] is True


def test_the_seed_000_ladder_runs_every_nvme_step_or_says_the_devices_words(ns0, tmp_path):
    # the steps that need an NVMe device; the generic io_uring ones (fixedbufs, gtod_reduce,
    # batching) run in seed 000's smoke ladder on a loop device (tests/test_seeds.py), and
    # each fio start costs seconds of the emulated guest
    steps = [s for s in ladder.default_ladder(qd=8, batch_qd=16) if s.name not in GENERIC_STEPS]
    table = ladder.run_ladder(
        steps, ns0, base={"runtime": "300ms"}, runs_dir=tmp_path / "runs", opt_in=True, rounds={"warmup": None}
    )
    status = dict(zip(table.name, table.status))
    why = dict(zip(table.name, table.reason.fillna("")))
    for name in ("baseline io_uring", "polled completions (hipri)", "NVMe passthrough (io_uring_cmd on /dev/ng)"):
        assert status[name] == "measured", f"{name}: {why[name]}"
    coalescing = "interrupt coalescing (NVMe feature 0x08 = 0x320)"
    assert status[coalescing] == "failed" and "Feature Not Changeable" in why[coalescing]
    assert status["t/io_uring"] == ("measured" if have_tio() else "skipped"), why["t/io_uring"]
    print(table[["name", "status", "iops", "reason"]].to_string())


def test_per_core_table_with_t_io_uring_polled(ns0, tmp_path):
    if not have_tio():
        pytest.skip("t/io_uring not built (make tio)")
    table = per_core(ns0, [8], {"runtime": "300ms"}, polled=True, runs_dir=tmp_path / "runs")
    assert set(table.tool) == {"fio", "t/io_uring"} and (table.iops > 0).all()
    assert set(table.mean_lat_source) == set(LATENCY_SOURCE.values()) and table.mean_lat_us.notna().all()


def test_one_fio_per_device_on_two_controllers(tmp_path):
    targets = [existing_path("/dev/nvme0n1"), existing_path("/dev/nvme1n1")]
    table = kernel_path.many_devices(
        2, "", {**QUICK, "iodepth": 4}, cpus=[0, 1], runs_dir=tmp_path / "runs", targets=targets
    )
    assert set(table.device) == {"nvme0n1", "nvme1n1"} and (table.iops > 0).all()


@pytest.mark.parametrize("how", ["block", "passthrough"])
def test_the_plausibility_checks_pass_plain_nvme_runs(how, tmp_path):
    """Through /dev/nvme0n1, and through /dev/ng0n1 (io_uring_cmd), which the block layer's
    counters in /sys/block/nvme0n1/stat never see."""
    job, target = {**QUICK, "iodepth": 8}, existing_path("/dev/nvme0n1")
    if how == "passthrough":  # as the ladder runs it: the char node, the namespace's counters beside it
        job = {**job, "ioengine": "io_uring_cmd", "cmd_type": "nvme", "direct": 0}
        target = Target("char", Path("/dev/ng0n1"), None, device="nvme0n1")
    result = measure(job, target, cpus=[0], runs_dir=tmp_path / "runs")
    # shared_cpu aside: in the guest, the test's own python shares fio's vCPU (a real other load)
    failed = [c for c in checks.run_checks(result.path) if c.passed is False and c.name != "shared_cpu"]
    assert not failed, failed


def test_the_guard_refuses_writes_to_a_namespace_holding_ext4_through_both_nodes(tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", "/dev/nvme1n1"], check=True, capture_output=True)
    try:
        with pytest.raises(UnsafeTargetError, match="ext4"):
            measure({**QUICK, "rw": "randwrite"}, existing_path("/dev/nvme1n1"), cpus=[0], runs_dir=tmp_path / "a")
        with pytest.raises(UnsafeTargetError, match="ext4"):
            measure(
                {**QUICK, "rw": "randwrite", "ioengine": "io_uring_cmd", "cmd_type": "nvme"},
                existing_path("/dev/ng1n1"),
                cpus=[0],
                runs_dir=tmp_path / "b",
            )
        done = subprocess.run(
            ["blkid", "-p", "-o", "value", "-s", "TYPE", "/dev/nvme1n1"], capture_output=True, text=True
        )
        assert done.stdout.strip() == "ext4"  # untouched
    finally:
        subprocess.run(["wipefs", "-a", "-q", "/dev/nvme1n1"], check=True)


HOLD_KNOBS = """
import sys, time
from iolab.machine import knobs
from iolab.machine.target import Target, existing_path
with knobs.applied(existing_path("/dev/nvme0n1"), {"scheduler": sys.argv[1], "nr_requests": 32}):
    print("set", flush=True)
    for _ in range(12000):  # short sleeps: a signal landing just before a long sleep's syscall would wait it out
        time.sleep(0.05)
"""


def test_nvme_queue_knobs_come_back_after_sigterm(ns0):
    before = {k: knobs.get(k).read(ns0) for k in ("scheduler", "nr_requests", "io_poll")}
    other = "mq-deadline" if before["scheduler"] == "none" else "none"
    proc = subprocess.Popen([sys.executable, "-c", HOLD_KNOBS, other], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "set"
    assert knobs.get("scheduler").read(ns0) == other and knobs.get("nr_requests").read(ns0) == "32"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert {k: knobs.get(k).read(ns0) for k in before} == before


def test_precondition_an_nvme_namespace(tmp_path):
    # the fill and the rounds on a namespace, through the write guard; the rule's rounds and
    # window are tested on a loop device (tests/test_precondition.py): two here, the least
    target = existing_path("/dev/nvme1n1")
    started = time.monotonic()
    rounds = precondition(
        target, runs_dir=tmp_path / "runs", job={"runtime": 0.3}, max_rounds=2, window=2, fill_passes=1
    )
    assert len(rounds) == 2 and (rounds.iops > 0).all() and target.state
    assert time.monotonic() - started < 120


def test_the_seed_000_polled_and_passthrough_commands_run_as_printed(tmp_path, capsys):
    """Seed 000's fio lines with --hipri or io_uring_cmd (tests/fixtures/seed_commands.txt),
    pasted into ``iolab run --`` with only the runtime and CPUs changed: each stored with a
    row (no direct=1 of iolab's on /dev/ng0n1: fio's direct=0 stays). Of the eight, the four
    that carry every option the others do (each fio start costs seconds of the emulated
    guest): polled on the block device (line 108), passthrough polled (127), polled with
    fixedbufs, registerfiles, norandommap, gtod_reduce and batching (161), and by interrupt
    with gtod_reduce=0 and batching (202); the other four differ from these in depths and
    batch sizes only. On a loop device they are refused in one line naming why
    (tests/test_pasted.py)."""
    import re

    from iolab.cli import main
    from support.seed_commands import adapted, seed_commands

    cpu = max(os.sched_getaffinity(0))
    lines = [(where, c) for where, c in seed_commands() if "--hipri" in c or "io_uring_cmd" in c]
    assert len(lines) == 8
    carried = {"000:108", "000:127", "000:161", "000:202"}  # every option of the eight (the docstring)
    options = {o.split("=")[0] for _, c in lines for o in c.split() if o.startswith("--")}
    assert options == {o.split("=")[0] for w, c in lines if w in carried for o in c.split() if o.startswith("--")}
    for where, command in [(w, c) for w, c in lines if w in carried]:
        argv = adapted(command, cpu, "/dev/nvme0n1", "/dev/ng0n1", runtime="100ms")
        code = main(["run", "--runs-dir", str(tmp_path / "runs"), "--", *argv])
        out, err = capsys.readouterr()
        assert code == 0 and re.search(r"^\s*baseline read\s*\nIOPS \(IO/s\)\s+[\d,.]+", out, re.M), (where, out, err)


# ---------------------------------------------------------------- the preflight's planted faults
SLOW, FAR = "IOLABLAB0002", "IOLABLAB0003"  # behind rp2 (2.5 GT/s x1); under the pxb-pcie on node 1


def controller(serial: str) -> Path:
    found = [c for c in Path("/sys/class/nvme").iterdir() if (c / "serial").read_text().strip() == serial]
    assert len(found) == 1, f"no controller with serial {serial}: was the tier booted by tests/support/nvme_tier.py?"
    return found[0]


def wait_for(read, want, what: str, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while (value := read()) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert value == want, f"{what}: {value!r} after {timeout_s:g} s, not {want!r}"


def nonfatal(port: Path) -> int:
    last = (port / "aer_dev_nonfatal").read_text().split()
    return int(last[-1])  # TOTAL_ERR_NONFATAL n (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats)


def inject_nonfatal(port: Path) -> None:
    """One Completion Timeout on root port rp2 through QEMU's monitor; QEMU 7.2 drops
    correctable errors before the guest sees them (iolab.nvmelab.vm.request_aer)."""
    from iolab.nvmelab.vm import request_aer

    before = nonfatal(port)
    request_aer("rp2", "COMP_TIME")
    wait_for(lambda: nonfatal(port), before + 1, f"{port.name}'s TOTAL_ERR_NONFATAL after the injection")


@contextlib.contextmanager
def without_poll_queues(ctrl: Path):
    """nvme.poll_queues=0 on one controller (the module reads it at each reset), 2 again after."""
    param = Path("/sys/module/nvme/parameters/poll_queues")
    io_poll = Path(f"/sys/block/{ctrl.name}n1/queue/io_poll")
    try:
        param.write_text("0")
        (ctrl / "reset_controller").write_text("1")
        wait_for(lambda: io_poll.read_text().strip(), "0", f"{io_poll} after a reset with poll_queues=0")
        yield
    finally:
        param.write_text("2")
        (ctrl / "reset_controller").write_text("1")
        wait_for(lambda: io_poll.read_text().strip(), "1", f"{io_poll} after a reset with poll_queues=2")


def test_preflight_names_each_fault_the_lab_planted(capsys):
    from iolab.cli import main

    slow, far = controller(SLOW), controller(FAR)
    port = Path(os.path.realpath(slow / "device")).parent
    devices = [f"{slow.name}n1", f"{far.name}n1"]
    argv = ["preflight", "--cpus", "0", "--json", "--sample", "0", "--no-tools", "--device", devices[0]]

    def preflight(*more):
        code = main([*argv, *more])
        return code, {(c["section"], c["name"]): c for c in json.loads(capsys.readouterr().out)["checks"]}

    with without_poll_queues(slow):
        code, got = preflight("--device", devices[1])
    s, f = (f"device {d}" for d in devices)
    assert code == 3 and got[s, "poll"]["verdict"] == "fail" and "(nvme poll_queues=0)" in got[s, "poll"]["seen"]
    # QEMU's NVMe endpoint reports 2.5 GT/s x1 as its own maximum, so no port can downgrade it:
    # the port's cap (x-speed, x-width) is read back; "downgraded" is tested on trees (test_preflight.py)
    assert got[s, "link"]["verdict"] == "ok" and got[s, "link"]["seen"].startswith("2.5 GT/s x1 (0.25 GB/s)")
    assert got[s, "link"]["seen"].endswith(f"its port {port.name} 2.5 GT/s x1")
    assert got[f, "link"]["seen"].endswith("16 GT/s x32") and "root complex pci0000:80" in got[f, "root_port"]["seen"]
    assert got[f, "numa"]["verdict"] == "warn"
    assert got[f, "numa"]["seen"] == "device on node 1 (CPUs 1); CPU 0 under test on another node"
    assert got[s, "aer"]["verdict"] == got[f, "aer"]["verdict"] == got[f, "poll"]["verdict"] == "ok"
    from iolab.machine.topology import topology  # notebook 06's view of the same tree

    placed = topology(devices).set_index("device")
    assert (placed.loc[devices[0], "root_port"], placed.loc[devices[0], "link"]) == (port.name, "2.5 GT/s x1")
    assert (placed.loc[devices[1], "root_complex"], placed.loc[devices[1], "numa_node"]) == ("pci0000:80", 1)
    inject_nonfatal(port)  # after the links were read (request_aer: QEMU zeroes the port's link capability)
    code, got = preflight()
    assert got[s, "aer"]["verdict"] == "fail"
    assert re.search(rf"{port.name} nonfatal \d+ \(CmpltTO \d+\)", got[s, "aer"]["seen"]), got[s, "aer"]


def test_an_aer_error_during_a_run_flags_it(tmp_path, monkeypatch):
    """The run's pcie.json (the path's AER counters and links before and after fio) and its
    flag; the error lands between the first reading and fio's start, inside the run's window."""
    from iolab.machine.preflight_pci import pcie_state
    from iolab.measure import runner

    slow = controller(SLOW)
    endpoint = Path(os.path.realpath(slow / "device"))
    port = endpoint.parent
    readings = []

    def then_an_error(devices):
        readings.append(pcie_state(devices[0]))
        if len(readings) == 1:
            inject_nonfatal(port)
        return readings[-1]

    reads_all = runner._pcie_state
    monkeypatch.setattr(runner, "_pcie_state", then_an_error)
    result = measure({**QUICK, "iodepth": 4}, existing_path(f"/dev/{slow.name}n1"), cpus=[0], runs_dir=tmp_path / "r")
    recorded = json.loads((result.path / runner.PCIE_FILE).read_text())
    assert recorded["before"] == readings[0] and sorted(recorded["after"]) == sorted([endpoint.name, port.name])
    flagged = checks.flags(checks.stored_checks(result.path))
    aer = f"pcie_aer: AER non-fatal errors rose by 1 during the run on {port.name} (CmpltTO +1)"
    assert aer in flagged, flagged  # beside it, at times, Little's law: the emulator's stall around the error
    assert result.table["flags"].str.contains("pcie_aer").all()
    # a job on two devices: both PCI paths before and after (the far one under the pxb-pcie on node 1)
    monkeypatch.setattr(runner, "_pcie_state", reads_all)
    far = controller(FAR)
    both = [{"filename": f"/dev/{c.name}n1"} for c in (slow, far)]
    two = measure(QUICK, existing_path(f"/dev/{slow.name}n1"), cpus=[0], runs_dir=tmp_path / "r", jobs=both)
    recorded = json.loads((two.path / runner.PCIE_FILE).read_text())
    assert recorded["devices"] == [f"{slow.name}n1", f"{far.name}n1"]
    assert {endpoint.name, Path(os.path.realpath(far / "device")).name} <= set(recorded["before"])
