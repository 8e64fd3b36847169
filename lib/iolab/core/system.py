"""A snapshot of the machine a run was made on, and read-only readers of /sys and /proc.

``snapshot(device="loop0", cpus=[0])`` -> a JSON-safe dict: CPU model, online CPUs, SMT,
governor, turbo, per-CPU ``scaling_cur_freq`` (kHz), kernel, fio and perf versions, and the
target's block-queue knobs. What is absent on this machine is recorded as ``None`` with a
reason in ``absent`` — never as a made-up value.

Nothing here writes: knob changes (scheduler, readahead, governor, turbo, SMT, NVMe
features) and dropping the page cache are ``iolab.machine.knobs``.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .runfiles import SYSTEM_JSON
from .version import __version__

SYS_CPU = Path("/sys/devices/system/cpu")
QUEUE_KNOBS = (
    "scheduler",
    "read_ahead_kb",
    "nr_requests",
    "io_poll",
    "rotational",
    "logical_block_size",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
)


def read_text(path: str | os.PathLike) -> str | None:
    """Contents of a small /sys or /proc file, stripped; None if absent or unreadable."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def selected(text: str) -> str:
    """The chosen value of a selector file such as queue/scheduler ('[none] mq-deadline'
    -> 'none'); any other text, stripped."""
    return text[text.index("[") + 1 : text.index("]")] if "[" in text and "]" in text else text.strip()


def parse_cpu_list(text: str) -> list[int]:
    """``0-3,8`` -> [0, 1, 2, 3, 8] (kernel cpulist format)."""
    cpus: list[int] = []
    for part in filter(None, str(text).strip().split(",")):
        if "-" in part:
            lo, hi = part.split("-")
            cpus += range(int(lo), int(hi) + 1)
        else:
            cpus.append(int(part))
    return cpus


def cpu_model() -> str | None:
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def cpuinfo_mhz() -> dict[int, float]:
    """Per-CPU 'cpu MHz' from /proc/cpuinfo (x86). On a VM this is often the nominal
    clock, not a live reading: callers label it as the fallback it is."""
    out: dict[int, float] = {}
    cpu = None
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("processor"):
            cpu = int(line.split(":")[1])
        elif line.startswith("cpu MHz") and cpu is not None:
            out[cpu] = float(line.split(":")[1])
    return out


def virtual_machine() -> bool:
    """Whether this kernel runs under a hypervisor: the CPU's ``hypervisor`` flag in
    /proc/cpuinfo (set by every hypervisor that follows the x86 convention: KVM, Xen,
    Hyper-V, VMware). Its doorbell writes and timer interrupts trap to the host."""
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("flags"):
            return "hypervisor" in line.split(":", 1)[-1].split()
    return False


def turbo_file() -> tuple[Path, bool] | None:
    """The file that switches turbo here and whether it is inverted: intel_pstate's
    ``no_turbo`` (1 = off; Documentation/admin-guide/pm/intel_pstate.rst) or cpufreq's
    ``boost`` (1 = on; Documentation/admin-guide/pm/cpufreq.rst); None if neither exists."""
    for name, inverted in (("intel_pstate/no_turbo", True), ("cpufreq/boost", False)):
        if (SYS_CPU / name).exists():
            return SYS_CPU / name, inverted
    return None


def turbo_state() -> tuple[bool | None, str]:
    """(turbo on?, the file read), or (None, why it cannot be read)."""
    found = turbo_file()
    text = read_text(found[0]) if found else None
    if text is None:
        return None, "no intel_pstate or cpufreq boost file"
    path, inverted = found
    return (text == "0") if inverted else (text == "1"), str(path.relative_to(SYS_CPU))


def tool_version(argv: list[str]) -> str | None:
    """The first line ``argv`` prints (``fio --version``); None when the tool is not on PATH.
    Asked once per installed binary: every run's snapshot records it."""
    path = shutil.which(argv[0])
    if not path:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _version_of(tuple(argv), path, stat.st_ino, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _version_of(argv: tuple[str, ...], path: str, inode: int, mtime_ns: int) -> str | None:
    # keyed on the binary's inode and mtime: an upgrade in the middle of a session is seen
    out = subprocess.run([path, *argv[1:]], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else None


def queue_knobs(device: str | None) -> dict[str, Any]:
    """Block-queue settings of ``/sys/block/<device>/queue`` (None where absent)."""
    if not device:
        return {}
    qdir = Path(f"/sys/block/{device}/queue")
    knobs = {k: read_text(qdir / k) for k in QUEUE_KNOBS}
    sched = knobs.get("scheduler")
    if sched and "[" in sched:
        knobs["scheduler_active"] = selected(sched)
        knobs["schedulers_available"] = sched.replace("[", "").replace("]", "").split()
    return knobs


def nvme_params() -> dict[str, Any]:
    """NVMe driver module parameters (poll_queues, write_queues, io_queue_depth)."""
    pdir = Path("/sys/module/nvme/parameters")
    if not pdir.exists():
        return {}
    return {p.name: read_text(p) for p in pdir.iterdir()}


def nvme_device(device: str | None) -> dict[str, Any]:
    """An NVMe namespace's controller facts from sysfs: model, firmware, serial, the
    controller's transport, and its hardware queues by kind (``/sys/block/<ns>/mq/*``: one
    folder per hardware queue; the nvme driver's default/read/poll split is its module
    parameters). Empty for a device that is not NVMe."""
    if not device or not device.startswith("nvme"):
        return {}
    ctrl = Path(f"/sys/block/{device}/device")
    mq = Path(f"/sys/block/{device}/mq")
    facts = {k: read_text(ctrl / k) for k in ("model", "firmware_rev", "serial", "transport", "queue_count")}
    facts["hw_queues"] = len([p for p in mq.iterdir() if p.is_dir()]) if mq.is_dir() else None
    facts["io_poll"] = read_text(Path(f"/sys/block/{device}/queue/io_poll"))
    return facts


def snapshot(device: str | None = None, cpus: list[int] | None = None) -> dict[str, Any]:
    """The machine as it is now. ``absent`` lists what could not be read and why."""
    absent: dict[str, str] = {}
    online = parse_cpu_list(read_text(SYS_CPU / "online") or "0")
    smt = read_text(SYS_CPU / "smt/control")
    if smt is None:
        absent["smt"] = "no /sys/devices/system/cpu/smt/control"
    governors, cur_khz = {}, {}
    for cpu in online:
        freq_dir = SYS_CPU / f"cpu{cpu}/cpufreq"
        governors[cpu] = read_text(freq_dir / "scaling_governor")
        cur = read_text(freq_dir / "scaling_cur_freq")
        cur_khz[cpu] = int(cur) if cur else None
    if all(v is None for v in cur_khz.values()):
        absent["cpufreq"] = (
            "no /sys/devices/system/cpu/cpu*/cpufreq: frequency falls back "
            "to /proc/cpuinfo 'cpu MHz' (nominal on many VMs)"
        )
    turbo, turbo_src = turbo_state()
    if turbo is None:
        absent["turbo"] = turbo_src
    snap = {
        "iolab_version": __version__,
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpus_online": online,
        "cpus_in_use": cpus,
        "smt": smt,
        "governor": governors,
        "turbo": turbo,
        "scaling_cur_freq_khz": cur_khz,
        "cpuinfo_mhz": cpuinfo_mhz(),
        "fio_version": tool_version(["fio", "--version"]),
        "perf_version": tool_version(["perf", "--version"]),
        "perf_event_paranoid": read_text("/proc/sys/kernel/perf_event_paranoid"),
        "device": device,
        "queue": queue_knobs(device),
        "nvme": nvme_params(),
        "nvme_device": nvme_device(device),
        "pci": pci_topology(device),
        "cpu_numa_nodes": cpu_nodes(cpus or online),
        # set inside the NVMe lab (iolab.nvmelab.vm): the run is an emulator's, never a device's
        "emulated": os.environ.get("IOLAB_NVMELAB") or None,
        "virtual_machine": virtual_machine(),
        "absent": absent,
    }
    if device and not snap["queue"].get("scheduler"):
        absent["queue"] = f"no /sys/block/{device}/queue"
    if not snap["pci"].get("link_speed"):
        absent["pci_link"] = f"{device or 'the target'} has no PCIe link in sysfs (virtual device?)"
    if "lspci_tree" not in snap["pci"]:
        absent["lspci"] = "pciutils not installed (apt-get install pciutils)"
    if not snap["nvme"]:
        absent["nvme"] = "nvme driver not loaded (no /sys/module/nvme/parameters)"
    if snap["fio_version"] is None:
        absent["fio"] = "fio not installed"
    if snap["perf_version"] is None:
        absent["perf"] = "perf not installed (Debian: linux-perf)"
    return snap


BLOCK_STAT_FIELDS = (
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
)


class Fact(NamedTuple):
    """A fact of the machine that matters when two sets of figures are compared."""

    name: str  # its one name: system.json's key, the run table's column, a seed's set-up key
    words: str  # how a page says it (iolab compare's set-up table)
    column: str = ""  # where the run table's column comes from ("": not a column of every run)


# The machine facts that matter when figures are compared — a run with its study's first
# (iolab.stats.drift), a re-run with the original (iolab reproduce), side A with side B (iolab
# compare), this machine with a seed's published set-up (iolab seeds) — in the order pages list them.
MACHINE_FACTS = (
    Fact("kernel", "kernel", SYSTEM_JSON),
    Fact("fio_version", "fio", "fio JSON"),
    Fact("iolab_version", "iolab"),
    Fact("hostname", "machine"),
    Fact("cpu_model", "cpu"),
    Fact("device", "device"),
    Fact("device_model", "device model"),
    Fact("firmware", "firmware"),
    Fact("governor", "governor", SYSTEM_JSON),
    Fact("freq_source", "frequency source", "samplers"),
    Fact("scheduler_active", "scheduler", SYSTEM_JSON),
    Fact("smt", "smt", SYSTEM_JSON),
    Fact("turbo", "turbo"),
    Fact("target_state", "target state", SYSTEM_JSON),
    Fact("emulated", "lab", SYSTEM_JSON),
)
RUN_FACTS = tuple(f.name for f in MACHINE_FACTS if f.column)  # every run's row: compared between runs


def machine_facts(snap: dict[str, Any]) -> dict[str, Any]:
    """The ``MACHINE_FACTS`` a snapshot (``system.json``) holds, by name, None when absent: the
    cpufreq governor of the pinned CPUs (of every online CPU when none were pinned; "a/b" when
    they differ), the target's active I/O scheduler, its NVMe model and firmware, what was
    written to the target before (``iolab.machine.target.Target.state``), what the NVMe lab
    said of itself (``emulated``). Not ``freq_source``: the samplers say it, per run."""
    governors = snap.get("governor") or {}
    cpus = snap.get("cpus_in_use") or snap.get("cpus_online") or []
    mine = sorted({g for cpu, g in governors.items() if g and (not cpus or int(cpu) in cpus)})
    nvme = snap.get("nvme_device") or {}
    return {
        "kernel": snap.get("kernel"),
        "fio_version": snap.get("fio_version"),
        "iolab_version": snap.get("iolab_version"),
        "hostname": snap.get("hostname"),
        "cpu_model": snap.get("cpu_model"),
        "device": snap.get("device"),
        "device_model": nvme.get("model"),
        "firmware": nvme.get("firmware_rev"),
        "governor": "/".join(mine) or None,
        "scheduler_active": (snap.get("queue") or {}).get("scheduler_active"),
        "smt": snap.get("smt"),
        "turbo": snap.get("turbo"),
        "target_state": snap.get("target_state"),
        "emulated": snap.get("emulated"),
    }


def snapshot_columns(snap: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's columns in every run's row (the ``MACHINE_FACTS`` from ``system.json``):
    the kernel, the governor (NaN without cpufreq), the active I/O scheduler (NaN without a
    block device), the SMT state, the target's state (NaN in older runs) and whether the run
    was made in the NVMe lab (``emulated``: an emulator's numbers)."""
    facts = machine_facts(snap)
    columns = {f.name: facts[f.name] or float("nan") for f in MACHINE_FACTS if f.column == SYSTEM_JSON}
    return columns | {"emulated": bool(facts["emulated"])}


def block_stat(device: str | None) -> dict[str, int] | None:
    """Counters of ``/sys/block/<device>/stat`` (Documentation/block/stat.rst; sectors are
    512 bytes whatever the device's block size)."""
    text = read_text(f"/sys/block/{device}/stat") if device else None
    if not text:
        return None
    return dict(zip(BLOCK_STAT_FIELDS, map(int, text.split())))


def block_stats(devices: Sequence[str | None]) -> dict[str, dict[str, int]]:
    """``block_stat`` of each device that has counters, by name, each once."""
    read = {d: block_stat(d) for d in dict.fromkeys(d for d in devices if d)}
    return {d: v for d, v in read.items() if v is not None}


def summed_block_stats(stats: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """The counters of several devices added field by field: what a job over all of them
    moved (a multi-device job's IOs, merges, sectors and ticks)."""
    return {f: sum(int(s.get(f, 0)) for s in stats.values()) for f in BLOCK_STAT_FIELDS}


def request_sizes(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """What the device saw between two ``block_stat`` readings: IOs, merges and the mean
    request size in KiB, per direction."""
    d = {k: after[k] - before[k] for k in BLOCK_STAT_FIELDS if k in before and k in after}
    out = {}
    for rw in ("read", "write"):
        ios = d.get(f"{rw}_ios", 0)
        out[f"dev_{rw}_ios"] = float(ios)
        out[f"dev_{rw}_merges"] = float(d.get(f"{rw}_merges", 0))
        out[f"dev_{rw}_req_kib"] = d.get(f"{rw}_sectors", 0) * 512 / 1024 / ios if ios else float("nan")
    return out


def iostat(
    before: dict[str, int], after: dict[str, int], interval_s: float | None, devices: int = 1
) -> dict[str, float]:
    """``iostat -x``'s device figures between two ``block_stat`` readings, by sysstat's
    iostat.c and the kernel's Documentation/admin-guide/iostats.rst (reads and writes; the
    discard and flush counters are not recorded):

    * ``dev_util_pct`` — %util: Δio_ticks / interval, the share of the interval with at least
      one request in flight (capped at 100 % as iostat caps it). For a device that serves
      requests in parallel (NVMe, a loop device) 100 % is not saturation.
    * ``dev_r_await_ms``, ``dev_w_await_ms``, ``dev_await_ms`` — Δticks / Δios: the mean time a
      request spent queued and served, ms (reads, writes, both); NaN without requests.
    * ``dev_aqu_sz`` — Δtime_in_queue / interval: the mean number of requests in flight.

    ``interval_s`` is the monotonic seconds between the two readings (blockstat.json's
    ``interval_s``, written by ``iolab.measure.runner``). It spans fio's start-up (process start,
    file layout) and exit as well as its runtime, so %util and aqu-sz read lower than fio's own
    disk_util over a short run. Runs recorded before the interval was (no ``interval_s``, None
    here) get NaN for those two: an interval is never guessed; the awaits need none.
    ``devices``: how many devices ``before`` and ``after`` add up (``summed_block_stats``):
    %util is then their mean."""
    d = {k: after[k] - before[k] for k in BLOCK_STAT_FIELDS if k in before and k in after}
    nan = float("nan")

    def per_io(ticks: float, ios: float) -> float:
        return ticks / ios if ios else nan

    ios = {rw: d.get(f"{rw}_ios", 0) for rw in ("read", "write")}
    ticks = {rw: d.get(f"{rw}_ticks_ms", 0) for rw in ("read", "write")}
    ms = interval_s * 1000.0 if interval_s else None
    return {
        "dev_util_pct": min(100.0, 100.0 * d["io_ticks_ms"] / ms / max(1, devices))
        if ms and "io_ticks_ms" in d
        else nan,
        "dev_r_await_ms": per_io(ticks["read"], ios["read"]),
        "dev_w_await_ms": per_io(ticks["write"], ios["write"]),
        "dev_await_ms": per_io(ticks["read"] + ticks["write"], ios["read"] + ios["write"]),
        "dev_aqu_sz": d["time_in_queue_ms"] / ms if ms and "time_in_queue_ms" in d else nan,
    }


def cpu_nodes(cpus: list[int]) -> dict[str, int]:
    """Each CPU's NUMA node (``/sys/devices/system/cpu/cpuN/nodeM``), {} without NUMA in sysfs."""
    out = {}
    for cpu in cpus:
        node = next(Path(f"/sys/devices/system/cpu/cpu{cpu}").glob("node[0-9]*"), None)
        if node is not None:
            out[str(cpu)] = int(node.name[4:])
    return out


def pci_topology(device: str | None) -> dict[str, Any]:
    """PCIe path, link speed and width of a block device's controller (from sysfs), and
    ``lspci -tv`` when pciutils is installed."""
    out: dict[str, Any] = {}
    if device:
        dev = Path(f"/sys/block/{device}/device").resolve() if Path(f"/sys/block/{device}/device").exists() else None
        pci = next((p for p in ([dev] + list(dev.parents) if dev else []) if (p / "current_link_speed").exists()), None)
        if pci:
            out.update(
                {
                    "pci_address": pci.name,
                    "link_speed": read_text(pci / "current_link_speed"),
                    "link_width": read_text(pci / "current_link_width"),
                    "max_link_speed": read_text(pci / "max_link_speed"),
                    "max_link_width": read_text(pci / "max_link_width"),
                    "numa_node": read_text(pci / "numa_node"),
                }
            )
            port = next((p for p in pci.parents if (p / "max_link_speed").exists()), None)  # the slot's port
            if port:
                out["port_max_link_speed"] = read_text(port / "max_link_speed")
                out["port_max_link_width"] = read_text(port / "max_link_width")
    if shutil.which("lspci"):
        out["lspci_tree"] = subprocess.run(["lspci", "-tv"], capture_output=True, text=True).stdout
    return out
