"""A preflight check and what it reads: ``Check`` (a verdict, the value seen, what it costs
when wrong, what to do), ``SOURCES`` (the seed or kernel document behind each check's cost)
and ``Tree`` (the machine's /sys and /proc under a root: ``/``, or a recorded tree). The CPU
and tools checks (``iolab.machine.preflight``) and the device checks
(``iolab.machine.preflight_pci``) are made of these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.system import parse_cpu_list, read_text

VERDICTS = ("ok", "warn", "fail", "unknown")

SOURCES = {
    "governor": "seed 003: the powersave governor cost 64 % of the IOPS on average; "
    "seed 000 switched to performance before anything else",
    "turbo": "seed 003: turbo off (2.6 GHz instead of 3.3) cost 4.4 % of the IOPS",
    "smt": "seed 003: SMT off cost about as much as turbo off (the clock stayed at 2.6 GHz)",
    "siblings": "seed 003: stress-ng on the thread siblings of the measured CPUs: 41.1M instead of 61.7M IOPS",
    "load": "seed 003: other work on the measured cores cost a third of the IOPS; "
    "steal is time the hypervisor gave elsewhere (iolab.stats.repeat_stats flags it)",
    "idle": "Documentation/admin-guide/pm/cpuidle.rst: a wake-up from a deep state adds its exit latency "
    "to an interrupt-driven completion (no seed measured it)",
    "mitigations": "Documentation/admin-guide/hw-vuln/: every system call and interrupt pays them; "
    "compare only with runs under the same mitigations (no seed measured it)",
    "poll": "seed 000: nvme.poll_queues=24 set at boot before anything else; polled completions "
    "1.70M against 1.09M IOPS interrupt-driven on one core",
    "passthrough": "seed 000: io_uring_cmd on /dev/ng0n1 took one core from 546k to 766k IOPS",
    "scheduler": "seed 001: with an I/O scheduler, 525k instead of 1150k IOPS at the same CPU use",
    "readahead": "seed 001: buffered reads first went from ~3200 to 4000+ MiB/s with readahead off, "
    "then dropped again: its author retracted readahead, the cause was page-cache LRU contention once "
    "RAM filled; readahead reads what was not asked for (direct I/O does not read ahead)",
    "nr_requests": "seed 000: iodepths of 128 to 380 on one core; requests beyond nr_requests wait "
    "in the block layer (Documentation/ABI/stable/sysfs-block)",
    "write_cache": "Documentation/ABI/stable/sysfs-block queue/write_cache: 'write back' acknowledges "
    "writes from a volatile cache",
    "numa": "seed 003 saw no NUMA effect on its machine; a device on another node than the CPUs "
    "moves every completion across the interconnect",
    "irqs": "seed 000: completions that interrupt the measured CPU cost a third of its IOPS "
    "(1.09M interrupt-driven against 1.70M polled)",
    "link": "seed 001: a link left at Gen3 by the BIOS gave half of the throughput "
    "(PCIe 3.0 x4: ~3500 MB/s of the drive's 7000)",
    "aer": "seed 000: occasional correctable PCIe errors in the kernel log; the drive was moved to the "
    "slot nearest the root complex before measuring",
    "root_port": "seed 001: two quad-SSD cards under one root complex capped 10 SSDs at 50 GiB/s of 68",
    "fio": "seed 000's ladder needs io_uring and io_uring_cmd (fio 3.31 and later)",
    "perf": "seed 001 profiled with perf; cycles/IO needs hardware counters (iolab.machine.perf)",
}

CHECK_NAMES = (*SOURCES, "io_uring", "shared_port", "shared_complex", "cpus", "device")  # every check, by name


@dataclass
class Check:
    """One check: its ``verdict``, the value ``seen`` (or why unknown), what it ``costs``
    when wrong (from ``SOURCES``), what to ``do``, and — when iolab can set it — the knob and
    value ``--tune`` sets (``tune``: knob name, value, device or None)."""

    section: str
    name: str
    verdict: str
    seen: str
    costs: str = ""
    do: str = ""
    tune: tuple[str, str, str | None] | None = None

    def __post_init__(self) -> None:
        assert self.verdict in VERDICTS, self.verdict
        self.costs = self.costs or SOURCES.get(self.name, "")


class Tree:
    """The machine's /sys and /proc under ``root`` (``/``, or a recorded tree)."""

    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def text(self, rel: str) -> str | None:
        return read_text(self.path(rel))

    def cpu(self, rel: str) -> str | None:
        return self.text(f"sys/devices/system/cpu/{rel}")

    def online(self) -> list[int]:
        return parse_cpu_list(self.cpu("online") or "0")

    def siblings(self, cpu: int) -> list[int]:
        """Thread siblings of ``cpu`` (itself included; topology/thread_siblings_list)."""
        text = self.cpu(f"cpu{cpu}/topology/thread_siblings_list")
        return parse_cpu_list(text) if text else [cpu]

    def nodes(self) -> dict[int, list[int]]:
        """NUMA node -> its CPUs (sys/devices/system/node/nodeN/cpulist); empty without NUMA."""
        out = {}
        for d in sorted(self.path("sys/devices/system/node").glob("node[0-9]*")):
            out[int(d.name[4:])] = parse_cpu_list(read_text(d / "cpulist") or "")
        return out
