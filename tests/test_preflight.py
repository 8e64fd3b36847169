"""The preflight's checks on recorded /sys and /proc trees that plant one fault each, on this
real machine (no NVMe, often no cpufreq: 'unknown' with why, never a crash), and on the
command line.

The trees are written here from the kernel's ABI documentation, file by file:
Documentation/ABI/testing/sysfs-bus-pci (current_link_speed "16.0 GT/s PCIe",
current_link_width, max_link_speed, max_link_width, numa_node, msi_irqs/),
Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats (aer_dev_correctable,
aer_dev_nonfatal, aer_dev_fatal: "<error name> <count>" lines ending in TOTAL_ERR_*),
Documentation/ABI/stable/sysfs-block (queue/scheduler, read_ahead_kb, nr_requests, io_poll,
write_cache, rotational), Documentation/ABI/testing/sysfs-devices-system-cpu (online,
topology/thread_siblings_list, cpufreq/scaling_governor, intel_pstate/no_turbo, smt/control,
cpuidle/current_driver, cpuN/cpuidle/stateN/{name,latency,disable}, vulnerabilities/),
Documentation/ABI/stable/sysfs-devices-node (nodeN/cpulist), Documentation/filesystems/proc.rst
(/proc/stat, /proc/irq/N/effective_affinity_list). Block devices link into the PCI tree with
relative symlinks, as sysfs does (/sys/block/nvme0n1 -> ../devices/pci0000:00/...)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.core.errors import InputError
from iolab.machine import preflight as pf
from iolab.machine import preflight_check as pf_check
from iolab.machine.preflight import preflight, text
from support.cpus import CPU
from support.paths import REPO

HEALTHY = {
    "governor": "performance",
    "no_turbo": "0",
    "poll_queues": "4",
    "io_poll": "1",
    "idle_latency": "2",
    "scheduler": "[none] mq-deadline",
    "read_ahead_kb": "0",
    "nvme0": {"speed": "16.0 GT/s PCIe", "width": "4", "node": "0", "irq_cpu": "3", "aer_cor": 0},
}


def put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def pci_function(root: Path, rel: str, speed: str, width: str, max_speed="16.0 GT/s PCIe", max_width="4", **more):
    for name, value in {
        "current_link_speed": speed,
        "current_link_width": width,
        "max_link_speed": max_speed,
        "max_link_width": max_width,
        **more,
    }.items():
        put(root, f"sys/devices/{rel}/{name}", value)


def aer_text(kind: str, named: dict[str, int]) -> str:
    total = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}[kind]
    names = {"correctable": ["Receiver Error", "Bad TLP", "Bad DLLP"], "nonfatal": ["Undefined", "Completion Timeout"]}
    lines = [f"{n} {named.get(n, 0)}" for n in names.get(kind, ["Undefined"])]
    return "\n".join([*lines, f"{total} {sum(named.values())}"])


def namespace(root: Path, function: str, ctrl: str, facts: dict, irqs: dict[int, str], cor=0, nonfatal=0):
    """An NVMe namespace below PCI ``function`` (a path under sys/devices), its queue, IRQs and AER."""
    name = f"{ctrl}n1"
    block = f"sys/devices/{function}/nvme/{ctrl}/{name}"
    for knob, value in {
        "scheduler": facts["scheduler"],
        "read_ahead_kb": facts["read_ahead_kb"],
        "nr_requests": "1023",
        "io_poll": facts["io_poll"],
        "write_cache": "write back",
        "rotational": "0",
    }.items():
        put(root, f"{block}/queue/{knob}", value)
    (root / "sys/block").mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(root / block, root / "sys/block"), root / f"sys/block/{name}")
    put(root, f"sys/devices/{function}/numa_node", facts.get("node", "0"))
    put(root, f"sys/devices/{function}/aer_dev_correctable", aer_text("correctable", {"Receiver Error": cor}))
    put(root, f"sys/devices/{function}/aer_dev_nonfatal", aer_text("nonfatal", {"Completion Timeout": nonfatal}))
    put(root, f"sys/devices/{function}/aer_dev_fatal", aer_text("fatal", {}))
    for irq, cpus in irqs.items():
        put(root, f"sys/devices/{function}/msi_irqs/{irq}", "msix")
        put(root, f"proc/irq/{irq}/effective_affinity_list", cpus)
        (root / f"proc/irq/{irq}/{ctrl}q{irq % 10}").mkdir(parents=True)
    put(root, f"dev/ng{ctrl.removeprefix('nvme')}n1", "")
    return name


def machine(root: Path, **faults) -> Path:
    """A two-node, eight-CPU machine (siblings 0/1, 2/3 ...; node 0 = CPUs 0-3) with nvme0
    under root port 00:01.1 and nvme1, nvme2 behind a switch under root port 00:03.0."""
    f = {**HEALTHY, **faults, "nvme0": {**HEALTHY["nvme0"], **faults.get("nvme0", {})}}
    cpu = "sys/devices/system/cpu"
    put(root, f"{cpu}/online", "0-7")
    put(root, f"{cpu}/smt/control", "on")
    put(root, f"{cpu}/intel_pstate/no_turbo", f["no_turbo"])
    put(root, f"{cpu}/cpuidle/current_driver", "intel_idle")
    put(root, f"{cpu}/vulnerabilities/spectre_v2", "Mitigation: Enhanced / Automatic IBRS")
    put(root, f"{cpu}/vulnerabilities/meltdown", "Not affected")
    for c in range(8):
        put(root, f"{cpu}/cpu{c}/cpufreq/scaling_governor", f["governor"])
        put(root, f"{cpu}/cpu{c}/topology/thread_siblings_list", f"{c - c % 2}-{c - c % 2 + 1}")
        for state, (name, latency) in enumerate([("POLL", "0"), ("C1", "1"), ("C6", f["idle_latency"])]):
            for key, value in (("name", name), ("latency", latency), ("disable", "0")):
                put(root, f"{cpu}/cpu{c}/cpuidle/state{state}/{key}", value)
    put(root, "sys/devices/system/node/node0/cpulist", "0-3")
    put(root, "sys/devices/system/node/node1/cpulist", "4-7")
    put(root, "sys/module/nvme/parameters/poll_queues", f["poll_queues"])
    put(
        root,
        "proc/stat",
        "cpu  10 0 10 100 0 0 0 0 0 0\n" + "".join(f"cpu{c} 1 0 1 10 0 0 0 0 0 0\n" for c in range(8)),
    )
    put(root, "proc/cmdline", "root=/dev/nvme0n1p2 ro")
    n0 = f["nvme0"]
    pci_function(root, "pci0000:00/0000:00:01.1", "16.0 GT/s PCIe", "4")  # root port of nvme0
    port0 = "pci0000:00/0000:00:01.1/0000:01:00.0"
    pci_function(root, port0, n0["speed"], n0["width"])
    namespace(root, port0, "nvme0", {**f, "node": n0["node"]}, {40: n0["irq_cpu"], 41: "5"}, cor=n0["aer_cor"])
    # root port 00:03.0 -> switch upstream 02:00.0 -> downstream 03:00.0 / 03:01.0 -> nvme1, nvme2
    pci_function(root, "pci0000:00/0000:00:03.0", "16.0 GT/s PCIe", "4")
    up = "pci0000:00/0000:00:03.0/0000:02:00.0"
    pci_function(root, up, "16.0 GT/s PCIe", "4")
    for down, ep, ctrl, irq in (
        ("0000:03:00.0", "0000:04:00.0", "nvme1", 50),
        ("0000:03:01.0", "0000:05:00.0", "nvme2", 60),
    ):
        slow = ctrl == "nvme2" and faults.get("slow_slot")
        pci_function(
            root,
            f"{up}/{down}",
            "8.0 GT/s PCIe" if slow else "16.0 GT/s PCIe",
            "4",
            max_speed="8.0 GT/s PCIe" if slow else "16.0 GT/s PCIe",
        )
        fn = f"{up}/{down}/{ep}"
        pci_function(root, fn, "8.0 GT/s PCIe" if slow else "16.0 GT/s PCIe", "4")
        namespace(root, fn, ctrl, f, {irq: "6"}, nonfatal=1 if slow else 0)
    if faults.get("no_ng1"):
        (root / "dev/ng1n1").unlink()
    return root


def verdicts(report) -> dict[tuple[str, str], pf.Check]:
    return {(c.section, c.name): c for c in report.checks}


def test_each_planted_fault_is_found_named_and_cited(tmp_path):
    root = machine(
        tmp_path,
        governor="powersave",
        no_turbo="1",
        poll_queues="0",
        io_poll="0",
        idle_latency="133",
        scheduler="none [mq-deadline]",
        nvme0={"speed": "8.0 GT/s PCIe", "width": "2", "node": "1", "irq_cpu": "0", "aer_cor": 3},
        slow_slot=True,
        no_ng1=True,
    )
    report = preflight(["nvme0n1", "/dev/nvme1n1", "nvme2n1"], [0], root=root, interval_s=0, tools=False)
    got = verdicts(report)
    cpu, d0, d1, d2 = "cpu", "device nvme0n1", "device nvme1n1", "device nvme2n1"
    shown = pf.Verdicts(report)  # the top of a notebook: one line, then what is not ok, failures first
    assert shown.headline().startswith("preflight of CPU 0, nvme0n1, nvme1n1, nvme2n1: not as recommended — ")
    assert "`iolab preflight --cpus 0 --device nvme0n1 --device nvme1n1 --device nvme2n1` for every check" in str(shown)
    assert {c.name for c in report.checks} <= set(pf_check.CHECK_NAMES)  # the names seed manifests may use
    gone = pf.of_study(["nvme0n1", "/dev/ng1n1", "nvme9n9"], [0, 12], root=root, interval_s=0)
    assert gone.devices == ["nvme0n1", "nvme1n1"] and gone.cpus == [0]  # ng1n1: its namespace
    assert [(c.name, c.verdict) for c in gone.checks if c.name in ("cpus", "device")] == [
        ("cpus", "unknown"),
        ("device", "unknown"),
    ]
    assert "CPU 12 of the study is not online here" in str(pf.Verdicts(gone))
    order = list(shown.table()["verdict"])
    assert order == sorted(order, key=pf.ORDER.__getitem__) and "ok" not in order
    assert "<code>iolab preflight --cpus 0" in shown._repr_html_() and "..." not in shown._repr_html_()
    assert got[cpu, "governor"].verdict == "fail" and got[cpu, "governor"].tune == ("governor", "performance", None)
    assert "64 %" in got[cpu, "governor"].costs and "seed 003" in got[cpu, "governor"].costs
    put(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate")  # its powersave follows the load
    assert pf.governor(pf.Tree(root), [0]).verdict == "warn"
    assert got[cpu, "turbo"].verdict == "warn" and got[cpu, "turbo"].seen.startswith("off (intel_pstate/no_turbo = 1)")
    assert got[cpu, "idle"].verdict == "warn" and "C6 (133 µs)" in got[cpu, "idle"].seen
    assert got[cpu, "mitigations"].seen.startswith("1 mitigated (spectre_v2)")
    assert (
        got[cpu, "load"].verdict == "unknown" and "no tick counted" in got[cpu, "load"].seen
    )  # one recorded /proc/stat
    assert got[d0, "poll"].verdict == "fail" and "poll_queues=0" in got[d0, "poll"].seen
    assert "nvme.poll_queues=N" in got[d0, "poll"].do and got[d0, "poll"].tune is None  # a reboot: advice only
    assert got[d0, "link"].verdict == "fail" and got[d0, "link"].seen.startswith("downgraded: 8 GT/s x2 (1.97 GB/s)")
    assert got[d0, "link"].tune is None and "BIOS" in got[d0, "link"].do
    assert got[d0, "aer"].verdict == "warn" and "0000:01:00.0 correctable 3 (Receiver Error 3)" in got[d0, "aer"].seen
    assert got[d0, "numa"].verdict == "warn" and "device on node 1 (CPUs 4-7); CPU 0 under test" in got[d0, "numa"].seen
    assert got[d0, "irqs"].verdict == "warn" and "IRQ 40 nvme0q0 -> CPU 0" in got[d0, "irqs"].seen
    assert got[d0, "irqs"].tune == ("irq_affinity", "1-7", "40")  # IRQ 41 (CPU 5) is left alone
    assert got[d0, "scheduler"].verdict == "warn" and got[d0, "scheduler"].tune == ("scheduler", "none", "nvme0n1")
    assert got[d0, "passthrough"].verdict == "ok" and got[d1, "passthrough"].verdict == "warn"
    assert got[d0, "root_port"].seen.startswith("0000:00:01.1 under root complex pci0000:00")
    assert got[d1, "link"].verdict == "ok" and got[d1, "aer"].verdict == "ok"
    assert (
        got[d2, "link"].verdict == "warn"
        and "its port 0000:03:01.0 8 GT/s x4: the slot's port stops below" in got[d2, "link"].seen
    )
    assert got[d2, "aer"].verdict == "fail" and "nonfatal 1 (Completion Timeout 1)" in got[d2, "aer"].seen
    shared = got["topology", "shared_port"]
    assert shared.verdict == "warn" and shared.seen.startswith("nvme1n1, nvme2n1 share root port 0000:00:03.0")
    assert "50 GiB/s" in shared.costs
    assert got["topology", "shared_complex"].seen.startswith("nvme0n1, nvme1n1, nvme2n1 share root complex pci0000:00")
    assert report.exit_code == 3 and not report.ready
    shown = text(report)
    assert "\ndevice nvme0n1\n==============\n" in shown and "fail    link         downgraded" in shown
    assert json.loads(pf.as_json(report))["counts"]["fail"] == 6  # governor, 3 x poll, link, AER non-fatal


def test_the_topology_view_names_the_shared_port_as_the_ceiling(tmp_path):
    """Notebook 06's table and picture of the same tree: nvme1 and nvme2 share root port
    00:03.0, whose 7.88 GB/s link is half their own two; a device the tree lacks is a row
    that says so; a disk named twice is one row."""
    import matplotlib

    matplotlib.use("Agg")
    from iolab.machine.topology import readable, topology
    from iolab.plots.topology import draw

    placed = topology(["nvme0n1", "nvme1n1", "/dev/nvme2n1", "/dev/ng2n1", "loop9"], root=machine(tmp_path))
    got = placed.set_index("device")
    assert got.loc["nvme1n1", "root_port"] == got.loc["nvme2n1", "root_port"] == "0000:00:03.0"
    assert list(got["devices_on_port"]) == [1, 2, 2, 0]
    assert got.loc["nvme1n1", "port_over_links"] == pytest.approx(0.5) and got.loc["nvme0n1", "port_over_links"] == 1
    assert got.loc["nvme0n1", "link"] == "16 GT/s x4"
    assert got.loc["nvme0n1", "link_gb_s"] == pytest.approx(7.877, abs=1e-3)
    shown = readable(placed)
    assert "nan" not in shown.to_string().lower() and shown.loc[3, "note"] == "no such block device here"
    ax = draw(placed)
    words = [t.get_text() for t in ax.texts]
    assert any("7.88 GB/s for 2 devices, 0.50× their links" in w for w in words)
    assert any(w.startswith("nvme2n1: 16 GT/s x4 (7.88 GB/s), node 0") for w in words)


def test_a_machine_set_up_as_the_seeds_were_is_ready(tmp_path):
    report = preflight(["nvme0n1"], [0], root=machine(tmp_path), interval_s=0, tools=False)
    not_ok = {(c.section, c.name): c.verdict for c in report.checks if c.verdict != "ok"}
    assert not_ok == {("cpu", "load"): "unknown", ("cpu", "siblings"): "unknown"}  # no second /proc/stat
    assert report.exit_code == 0 and "ready: " in text(report)
    assert verdicts(report)["device nvme0n1", "link"].seen == (
        "16 GT/s x4 (7.88 GB/s); the device can 16 GT/s x4, its port 0000:00:01.1 16 GT/s x4"
    )


def test_load_steal_and_busy_siblings_over_the_interval(tmp_path, monkeypatch):
    """/proc/stat read, the sleep, read again: CPU 0 with 3 % steal, its sibling CPU 1 80 % busy."""
    root = machine(tmp_path)

    def later(seconds):
        assert seconds == 0.5
        rows = {0: "2 0 2 105 0 0 0 3", 1: "41 0 41 30 0 0 0 0"}  # +100 ticks each
        put(root, "proc/stat", "".join(f"cpu{c} {rows.get(c, '1 0 1 110 0 0 0 0')} 0 0\n" for c in range(8)))

    monkeypatch.setattr(pf.time, "sleep", later)
    got = verdicts(preflight([], [0], root=root, tools=False))
    assert got["cpu", "load"].verdict == "warn" and got["cpu", "load"].seen.startswith(
        "busiest CPU under test 0: 2 % busy, 3.0 % steal over 0.5 s"
    )
    assert got["cpu", "siblings"].verdict == "warn" and got["cpu", "siblings"].seen == "siblings CPU 1 80 % busy"
    assert "41.1M instead of 61.7M" in got["cpu", "siblings"].costs


def test_without_cpus_the_checks_that_need_them_say_so(tmp_path):
    got = verdicts(preflight(["nvme0n1"], None, root=machine(tmp_path), interval_s=0, tools=False))
    assert got["device nvme0n1", "irqs"].seen.endswith("no --cpus given: which CPUs will measure?")
    assert got["device nvme0n1", "numa"].verdict == "unknown"
    disk = tmp_path / "sys/block/nvme0n1"  # a partition, as sysfs shows one: a folder of its disk's
    put(tmp_path, f"{os.path.relpath(disk.resolve(), tmp_path)}/nvme0n1p1/partition", "1")
    (tmp_path / "sys/class/block").mkdir(parents=True)
    os.symlink(
        os.path.relpath(disk.resolve() / "nvme0n1p1", tmp_path / "sys/class/block"),
        tmp_path / "sys/class/block/nvme0n1p1",
    )
    assert preflight(["/dev/nvme0n1p1", "nvme0n1"], [0], root=tmp_path, interval_s=0, tools=False).devices == [
        "nvme0n1"
    ]
    with pytest.raises(InputError, match="--device 'sdz': no block device"):
        preflight(["sdz"], [0], root=tmp_path, interval_s=0, tools=False)
    with pytest.raises(InputError, match="CPU 9 is not online here"):
        preflight([], [9], root=tmp_path, interval_s=0, tools=False)


def test_this_machine_and_a_loop_device(loopdev):
    """The real /sys: what this VM lacks is 'unknown' with why, the loop device has no PCI."""
    report = preflight([loopdev.device], [CPU], interval_s=0.1)
    got = verdicts(report)
    dev = f"device {loopdev.device}"
    assert got[dev, "link"].verdict == "unknown" and "no PCIe link" in got[dev, "link"].seen
    assert got[dev, "irqs"].seen.startswith("no PCI function (loop")
    assert got[dev, "aer"].verdict == "unknown" and got[dev, "poll"].verdict == "warn"
    expected = Path(f"/sys/block/{loopdev.device}/queue/read_ahead_kb").read_text().strip()
    assert got[dev, "readahead"].seen == f"{expected} KiB"
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq").exists():
        assert got["cpu", "governor"].verdict == "unknown" and "no cpufreq driver" in got["cpu", "governor"].seen
    assert got["tools", "fio"].seen.startswith("fio-")
    assert all(c.seen for c in report.checks) and all(c.verdict != "unknown" or c.seen for c in report.checks)
    assert report.exit_code in (0, 3) and text(report).count("\n") >= len(report.checks)


def test_the_command_line(loopdev, own_ledger, capsys):
    code = main(["preflight", "--device", loopdev.device, "--cpus", str(CPU), "--json", "--sample", "0", "--no-tools"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if out["ready"] else 3) and out["devices"] == [loopdev.device] and out["cpus"] == [CPU]
    assert main(["preflight", "--device", "/dev/no-such-disk", "--no-tools"]) == 1
    assert capsys.readouterr().err.startswith("iolab preflight: --device 'no-such-disk': no block device")
    main(["preflight", "--cpus", str(CPU), "--json", "--sample", "0", "--no-tools"])  # no --device: the scratch disk
    bare, said = capsys.readouterr()
    from iolab.core import paths
    from iolab.machine.target import device_of_path

    folder = next(p for p in [paths.scratch_dir(), *paths.scratch_dir().parents] if p.exists())
    disk = device_of_path(folder)
    assert json.loads(bare)["devices"] == ([disk] if disk else [])
    assert f"checked {disk}, the disk under iolab's scratch folder" in said if disk else "on no block device" in said


# ---------------------------------------------------------------- --tune, iolab reset, SIGKILL
IOLAB = [sys.executable, "-m", "iolab.cli"]


def queue_values(dev) -> tuple[str, str]:
    q = Path(f"/sys/block/{dev.device}/queue")
    return (q / "scheduler").read_text(), (q / "read_ahead_kb").read_text()


def tune(dev) -> subprocess.Popen:
    """``iolab preflight --tune`` on the loop device, returned once it holds the tune."""
    argv = [*IOLAB, "preflight", "--device", dev.device, "--cpus", str(CPU), "--tune", "--sample", "0", "--no-tools"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    said = []
    while not (said and said[-1].startswith("held by process")):
        line = proc.stderr.readline()
        assert line, f"--tune ended early: {said}"
        said.append(line.strip())
    return proc, said


def reset() -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    return subprocess.run([*IOLAB, "reset"], capture_output=True, text=True, env=env, timeout=60)


def holders(ledger: Path) -> list[Path]:
    """The ledger entries of processes other than this test's (whose fixture holds one)."""
    return [p for p in ledger.glob("*.json") if not p.name.startswith(f"{os.getpid()}-")]


@pytest.fixture
def deadline_scheduler(loopdev, own_ledger):
    """The loop device with mq-deadline, so --tune has a scheduler to set too (put back after)."""
    from iolab.machine import knobs

    with knobs.applied(loopdev, {"scheduler": "mq-deadline", "read_ahead_kb": 128}):
        yield loopdev


@pytest.mark.parametrize("ending", ["reset", "sigkill", "by hand"])
def test_tune_then_reset_puts_every_value_back(deadline_scheduler, own_ledger, ending, capsys):
    """... and a value the user set by hand after the tune is theirs: left, and said."""
    dev = deadline_scheduler
    before = queue_values(dev)
    proc, said = tune(dev)
    try:
        assert f"tuned: scheduler of {dev.device}: mq-deadline -> none" in said
        assert f"tuned: read_ahead_kb of {dev.device}: 128 -> 0" in said
        assert "[none]" in queue_values(dev)[0] and queue_values(dev)[1] == "0\n"
        assert len(holders(own_ledger)) == 2
        if ending == "reset":  # one holder at a time: a second would take the first one's values for the old ones
            argv = ["preflight", "--device", dev.device, "--tune", "--sample", "0", "--no-tools"]
            assert main(argv) == 1 and f"process {proc.pid} holds a tune already" in capsys.readouterr().err
        if ending == "sigkill":
            proc.kill()  # nothing of its own runs: the ledger is all that is left
            proc.wait(timeout=20)
            assert queue_values(dev)[1] == "0\n"
        if ending == "by hand":
            Path(f"/sys/block/{dev.device}/queue/read_ahead_kb").write_text("64")
        done = reset()  # the next command: the ledger's repair first (after SIGKILL), then reset
        assert done.returncode == 0, done.stderr
        assert proc.wait(timeout=20) == (-9 if ending == "sigkill" else 0)
        back = [line for line in done.stdout.splitlines() if line.endswith(": back")]
        if ending == "by hand":
            assert queue_values(dev) == (before[0], "64\n") and len(back) == 1, done.stdout
            assert "read_ahead_kb: left at 64: changed since iolab set it to 0 (it was 128 before)" in done.stdout
            return
        assert queue_values(dev) == before
        assert len(back) == 2 and not holders(own_ledger)
        if ending == "sigkill":
            assert "restored /sys/block/" in done.stderr  # said by the repair before the command
    finally:  # a failed assertion above must not leave the holder holding the loop device's queue
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)


# ---------------------------------------------------------------- around every run
def test_aer_counters_and_links_around_a_run_flag_what_moved(tmp_path):
    """``pcie_state`` before and after a run on the planted tree (nvme2n1: endpoint 05:00.0,
    switch ports 03:01.0 and 02:00.0, root port 00:03.0), and the plausibility flags."""
    from types import SimpleNamespace

    from iolab.machine.preflight_pci import pcie_state
    from iolab.measure.runner import _opened_devices, _pcie_state
    from iolab.read.plausible import pcie_path

    root = machine(tmp_path)
    before = pcie_state("nvme2n1", root=root)
    assert list(before) == ["0000:05:00.0", "0000:03:01.0", "0000:02:00.0", "0000:00:03.0"]
    assert before["0000:05:00.0"] == {
        "link_speed": "16.0 GT/s PCIe",
        "link_width": "4",
        "aer": {"correctable": {}, "nonfatal": {}, "fatal": {}},
    }
    assert before["0000:00:03.0"]["aer"] is None  # no aer_dev_* files: not counted there
    calm = pcie_path({"device": "nvme2n1", "before": before, "after": before})
    assert [(c.name, c.passed) for c in calm] == [("pcie_aer", True), ("pcie_link", True)]
    assert calm[1].words.startswith("links held during the run: 0000:05:00.0 16 GT/s x4, 0000:03:01.0")
    fn = tmp_path / "sys/devices/pci0000:00/0000:00:03.0/0000:02:00.0/0000:03:01.0/0000:05:00.0"
    put(tmp_path, str(fn.relative_to(tmp_path) / "aer_dev_correctable"), aer_text("correctable", {"Bad TLP": 3}))
    put(tmp_path, str(fn.relative_to(tmp_path) / "current_link_speed"), "8.0 GT/s PCIe")
    moved = pcie_path({"device": "nvme2n1", "before": before, "after": pcie_state("nvme2n1", root=root)})
    assert [(c.name, c.passed) for c in moved] == [("pcie_aer", False), ("pcie_link", False)]
    assert moved[0].words.startswith(
        "AER correctable errors rose by 3 during the run on 0000:05:00.0 (Bad TLP +3): the figures may be slowed "
        "by link retries"
    )
    assert moved[0].figures == {"0000:05:00.0 correctable": 3}
    assert moved[1].words.startswith("the link of 0000:05:00.0 went from 16 GT/s x4 to 8 GT/s x4 during the run")
    # nothing for a device without a PCI path, a file or a loop device: no file, no check
    assert pcie_state("loop0", root=root) is None and pcie_path(None) == []
    assert _pcie_state([]) is None and _pcie_state(["loop0"]) is None
    opened = SimpleNamespace(
        files=[
            SimpleNamespace(kind="file", device="/dev/nvme2n1"),  # a file on the disk: not the disk's run
            SimpleNamespace(kind="char", device="/dev/nvme1n1"),  # /dev/ng1n1: its namespace
            SimpleNamespace(kind="block", device="/dev/nvme2n1"),
            SimpleNamespace(kind="block", device="/dev/nvme2n1"),
        ]
    )
    assert _opened_devices(opened) == ["nvme1n1", "nvme2n1"]
