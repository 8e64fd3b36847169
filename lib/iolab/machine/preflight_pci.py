"""The preflight's device checks: a block device's queue, its NVMe poll queues and
passthrough node, and below it the PCI function: its NUMA node, where its IRQs go, the
link it trained at, its AER counters and the root port and root complex it sits under
(``iolab.machine.preflight`` puts them together; every file read under a ``Tree``).

    device_checks(Tree("/"), "nvme0n1", cpus=[2], given=True)   # -> [Check, ...], section 'device nvme0n1'

Files (Documentation/ABI/stable/sysfs-block; Documentation/ABI/testing/sysfs-bus-pci:
current_link_speed, current_link_width, max_link_speed, max_link_width, numa_node,
msi_irqs; Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats: aer_dev_correctable,
aer_dev_nonfatal, aer_dev_fatal; Documentation/core-api/irq/irq-affinity.rst:
/proc/irq/N/smp_affinity_list and effective_affinity_list).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, printable
from ..core.system import parse_cpu_list, read_text, selected
from ..core.validate import _fmt_cpus as _ranges  # [0, 1, 2, 5] -> '0-2,5'
from ..read.checks import link_capacity_bytes_s, link_gts, link_lanes
from .preflight_check import Check, Tree

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
NR_REQUESTS_LOW = 128  # below the iodepths seed 000 ran one core at
AER_FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}


def disk_name(tree: Tree, device: str) -> str:
    """The kernel name under /sys/block of ``device`` ('/dev/nvme0n1', 'nvme0n1'; a
    partition gives its disk, a passthrough node /dev/ngXnY its namespace). InputError when
    there is none."""
    name = str(device).strip().removeprefix("/dev/")
    if m := re.fullmatch(r"ng(\d+)n(\d+)", name):  # NVMe's passthrough node: its namespace's checks
        name = f"nvme{m.group(1)}n{m.group(2)}"
    if name and "/" not in name and tree.path(f"sys/block/{name}").exists():
        return name
    part = tree.path(f"sys/class/block/{name}")
    if name and "/" not in name and (part / "partition").exists():
        return part.resolve().parent.name
    shown = printable(repr(name if len(name) <= 40 else name[:39] + "…"))
    raise InputError(
        f"--device {shown}: no block device of that name (/sys/block lists them); give one such as nvme0n1 "
        "(for /dev/ng0n1, its namespace nvme0n1)"
    )


@dataclass
class Pci:
    """A block device's PCI function and the functions above it, nearest first."""

    chain: list[Path]  # endpoint, bridges ..., root port
    complex: str  # the host bridge folder (root complex): pci0000:40

    @property
    def endpoint(self) -> Path:
        return self.chain[0]

    @property
    def root_port(self) -> str | None:
        """The root port's address; None for an endpoint on the root bus (integrated)."""
        return self.chain[-1].name if len(self.chain) > 1 else None


def pci_of(tree: Tree, name: str) -> Pci | None:
    """The PCI functions a block device hangs from (sysfs links, read inside the tree), or None
    (loop, zram, a virtual device)."""
    where = tree.path(f"sys/block/{name}").resolve()
    chain = [p for p in [where, *where.parents] if PCI_ADDRESS.match(p.name)]
    if not chain:
        return None
    top = chain[-1].parent
    return Pci(chain, top.name if HOST_BRIDGE.match(top.name) else "?")


def device_checks(tree: Tree, name: str, cpus: Sequence[int], given: bool) -> list[Check]:
    out = queue_checks(tree, name)
    pci = pci_of(tree, name)
    out += [numa(tree, pci, cpus, given), irqs(tree, pci, cpus, given, tree.online()), link(pci), aer(pci)]
    if pci is not None:
        port = pci.root_port or "none (on the root bus)"
        out.append(
            Check("", "root_port", "ok", f"{port} under root complex {pci.complex}; function {pci.endpoint.name}")
        )
    for c in out:
        c.section = f"device {name}"
    return out


def queue_checks(tree: Tree, name: str) -> list[Check]:
    q = f"sys/block/{name}/queue"
    nvme = name.startswith("nvme")
    out = [poll(tree, name, nvme)]
    if nvme:
        out.append(passthrough(tree, name))
    sched = tree.text(f"{q}/scheduler")
    if sched is None:
        out.append(Check("", "scheduler", "unknown", f"no /{q}/scheduler"))
    elif selected(sched) == "none":
        out.append(Check("", "scheduler", "ok", "none"))
    else:
        rotational = tree.text(f"{q}/rotational") == "1"
        out.append(
            Check(
                "",
                "scheduler",
                "ok" if rotational else "warn",
                f"{selected(sched)}" + (" (rotational: a scheduler helps it)" if rotational else ""),
                do="" if rotational else "iolab preflight --tune (none)",
                tune=None if rotational else ("scheduler", "none", name),
            )
        )
    ra = tree.text(f"{q}/read_ahead_kb")
    if ra is None:
        out.append(Check("", "readahead", "unknown", f"no /{q}/read_ahead_kb"))
    else:
        verdict = "ok" if ra == "0" else "warn"
        out.append(
            Check(
                "",
                "readahead",
                verdict,
                f"{ra} KiB",
                do=""
                if verdict == "ok"
                else "iolab preflight --tune (0), unless buffered sequential reads are studied",
                tune=None if verdict == "ok" else ("read_ahead_kb", "0", name),
            )
        )
    nr = tree.text(f"{q}/nr_requests")
    if nr is None or not nr.isdigit():
        out.append(Check("", "nr_requests", "unknown", f"no /{q}/nr_requests"))
    else:
        low = int(nr) < NR_REQUESTS_LOW
        out.append(
            Check(
                "",
                "nr_requests",
                "warn" if low else "ok",
                nr,
                do=f"keep iodepth at most {nr} per hardware queue, or raise it (echo N > /{q}/nr_requests)"
                if low
                else "",
            )
        )
    wc = tree.text(f"{q}/write_cache")
    out.append(
        Check("", "write_cache", "unknown", f"no /{q}/write_cache")
        if wc is None
        else Check("", "write_cache", "ok", wc + (": writes land in a volatile cache" if wc == "write back" else ""))
    )
    return out


def poll(tree: Tree, name: str, nvme: bool) -> Check:
    io_poll = tree.text(f"sys/block/{name}/queue/io_poll")
    queues = tree.text("sys/module/nvme/parameters/poll_queues")
    if io_poll is None:
        return Check("", "poll", "unknown", f"no /sys/block/{name}/queue/io_poll")
    if io_poll == "1":
        return Check(
            "", "poll", "ok", "io_poll 1: polled IO possible" + (f" (nvme poll_queues={queues})" if queues else "")
        )
    if not nvme:
        return Check(
            "",
            "poll",
            "warn",
            f"io_poll 0: {name}'s driver has no poll queues (polled study steps are skipped)",
            do="polled IO needs an NVMe namespace whose driver was loaded with poll queues",
        )
    return Check(
        "",
        "poll",
        "fail",
        f"io_poll 0: no poll queues (nvme poll_queues={queues or '?'}); fio --hipri cannot poll",
        do="boot with nvme.poll_queues=N (N: the CPUs under test; seed 000 used 24): a reboot, never iolab",
    )


def passthrough(tree: Tree, name: str) -> Check:
    generic = "ng" + name.removeprefix("nvme")  # nvme0n1 -> ng0n1 (drivers/nvme/host/core.c)
    node, in_sys = tree.path(f"dev/{generic}"), tree.path(f"sys/class/nvme-generic/{generic}").exists()
    if node.exists():
        return Check("", "passthrough", "ok", f"/dev/{generic}: io_uring_cmd possible")
    why = "no node in /dev (udev?)" if in_sys else "the kernel made none (5.13 or later, CONFIG_NVME_CORE)"
    return Check(
        "", "passthrough", "warn", f"no /dev/{generic}: {why}", do="a kernel of 5.13 or later; udev creating /dev/ng*"
    )


def numa(tree: Tree, pci: Pci | None, cpus: Sequence[int], given: bool) -> Check:
    nodes = tree.nodes()
    if len(nodes) <= 1:
        return Check("", "numa", "ok", "one NUMA node")
    if pci is None:
        return Check("", "numa", "unknown", "no PCI function (a virtual device): no NUMA node")
    node = read_text(pci.endpoint / "numa_node")
    if node is None or node == "-1" or int(node) not in nodes:
        return Check("", "numa", "unknown", f"numa_node is {node}: the firmware named no node")
    near = nodes[int(node)]
    if not given:
        return Check("", "numa", "unknown", f"device on node {node} (CPUs {_ranges(near)}); no --cpus given")
    far = sorted(set(cpus) - set(near))
    if not far:
        return Check("", "numa", "ok", f"device and CPUs under test on node {node}")
    return Check(
        "",
        "numa",
        "warn",
        f"device on node {node} (CPUs {_ranges(near)}); CPU {_ranges(far)} under test on another node",
        do=f"measure from node {node}'s CPUs: --cpus within {_ranges(near)}",
    )


def device_irqs(tree: Tree, pci: Pci) -> dict[int, tuple[str, list[int]]]:
    """IRQ -> (its action's name, the CPUs it is delivered to) of a PCI function: MSI/MSI-X
    vectors (msi_irqs/) or its legacy line (irq)."""
    folder = pci.endpoint / "msi_irqs"
    numbers = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    legacy = read_text(pci.endpoint / "irq")
    if not numbers and legacy and legacy.isdigit() and legacy != "0":
        numbers = [int(legacy)]
    out = {}
    for n in sorted(numbers):
        d = tree.path(f"proc/irq/{n}")
        where = read_text(d / "effective_affinity_list") or read_text(d / "smp_affinity_list")
        action = next((p.name for p in sorted(d.iterdir()) if p.is_dir()), "") if d.is_dir() else ""
        out[n] = (action, parse_cpu_list(where) if where else [])
    return out


def irqs(tree: Tree, pci: Pci | None, cpus: Sequence[int], given: bool, online: Sequence[int]) -> Check:
    if pci is None:
        return Check("", "irqs", "unknown", "no PCI function (loop or virtual device): no interrupts of its own")
    found = device_irqs(tree, pci)
    if not found:
        return Check("", "irqs", "unknown", f"{pci.endpoint.name} lists no msi_irqs and no irq")
    if not given:
        return Check("", "irqs", "unknown", f"{len(found)} IRQs; no --cpus given: which CPUs will measure?")
    hit = {n: (a, c) for n, (a, c) in found.items() if set(c) & set(cpus)}
    if not hit:
        return Check("", "irqs", "ok", f"{len(found)} IRQs, none delivered to the CPUs under test")
    shown = ", ".join(f"IRQ {n} {a} -> CPU {_ranges(c)}".replace("  ", " ") for n, (a, c) in hit.items())
    others = sorted(set(online) - set(cpus))
    return Check(
        "",
        "irqs",
        "warn",
        f"{len(hit)} of {len(found)} IRQs on the CPUs under test: {shown}" + _irqbalance(tree),
        do="polled IO, or iolab preflight --tune moves those the kernel lets move (an NVMe queue's own IRQ stays)",
        tune=("irq_affinity", _ranges(others), ",".join(map(str, hit))) if others else None,
    )


def _irqbalance(tree: Tree) -> str:
    for comm in tree.path("proc").glob("[0-9]*/comm"):
        if read_text(comm) == "irqbalance":
            return " (irqbalance runs: it may move them back)"
    return ""


def link(pci: Pci | None) -> Check:
    """The endpoint's link against what it and its port can do: 'downgraded' below both."""
    ep = pci.endpoint if pci else None
    speed = link_gts(read_text(ep / "current_link_speed")) if ep else None
    width = link_lanes(read_text(ep / "current_link_width")) if ep else None
    if not speed or not width:
        return Check("", "link", "unknown", "no PCIe link in sysfs (a virtual or integrated device)")
    ep_max = link_gts(read_text(ep / "max_link_speed")) or speed, link_lanes(read_text(ep / "max_link_width")) or width
    port = pci.chain[1] if len(pci.chain) > 1 else None
    read = (
        (link_gts(read_text(port / "max_link_speed")), link_lanes(read_text(port / "max_link_width"))) if port else ()
    )
    port_max = (read[0] or ep_max[0], read[1] or ep_max[1]) if port else ep_max
    can = min(ep_max[0], port_max[0]), min(ep_max[1], port_max[1])
    rate = link_capacity_bytes_s({"link_speed": f"{speed} GT/s", "link_width": width}) or 0.0
    best = link_capacity_bytes_s({"link_speed": f"{ep_max[0]} GT/s", "link_width": ep_max[1]}) or 0.0
    shown = f"{speed:g} GT/s x{width} ({rate / 1e9:.2f} GB/s); the device can {ep_max[0]:g} GT/s x{ep_max[1]}"
    if port:
        shown += f", its port {port.name} " + (f"{read[0]:g} GT/s x{read[1]}" if all(read) else "of unknown maximum")
    if speed < can[0] or width < can[1]:
        return Check(
            "",
            "link",
            "fail",
            f"downgraded: {shown}",
            do="check the BIOS link speed (Auto may mean Gen3) and bifurcation, reseat the card: "
            "firmware and hardware, never iolab",
        )
    if can[0] < ep_max[0] or can[1] < ep_max[1]:
        return Check(
            "",
            "link",
            "warn",
            f"{shown}: the slot's port stops below the device ({rate / 1e9:.2f} of {best / 1e9:.2f} GB/s)",
            do="move it to a slot whose port runs at the device's maximum",
        )
    return Check("", "link", "ok", shown)


def aer_counts(function: Path) -> dict[str, dict[str, int]] | None:
    """Kind -> {error name: count} of a PCI function's AER files (non-zero ones; the TOTAL_*
    line kept as 'total'); None when it has none (AER off or unsupported)."""
    out = {}
    for kind, file in AER_FILES.items():
        text = read_text(function / file)
        if text is None:
            continue
        counts = {}
        for line in text.splitlines():
            name, _, number = line.rpartition(" ")
            if number.isdigit() and int(number):
                counts["total" if name.startswith("TOTAL_") else name] = int(number)
        out[kind] = counts
    return out or None


def aer(pci: Pci | None) -> Check:
    if pci is None:
        return Check("", "aer", "unknown", "no PCI function: no AER counters")
    seen = {p.name: c for p in pci.chain if (c := aer_counts(p)) is not None}
    if not seen:
        return Check("", "aer", "unknown", "no aer_dev_* files (AER not enabled or not supported on this path)")
    words, worst = [], "ok"
    for addr, kinds in seen.items():
        for kind in ("fatal", "nonfatal", "correctable"):
            counts = kinds.get(kind) or {}
            total = counts.get("total", sum(counts.values()))
            if total:
                named = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "total")
                words.append(f"{addr} {kind} {total}" + (f" ({named})" if named else ""))
                worst = "fail" if kind != "correctable" else ("warn" if worst == "ok" else worst)
    if worst == "ok":
        return Check("", "aer", "ok", f"no errors counted since boot on {', '.join(seen)}")
    return Check(
        "",
        "aer",
        worst,
        "; ".join(words) + " (since boot)",
        do="read dmesg for 'AER:'; reseat the card or move it to a slot nearer the root complex",
    )


def pcie_state(device: str | None, root: str | Path = "/") -> dict[str, dict] | None:
    """The link and AER counters of each PCI function from ``device``'s endpoint up to its
    root port: {address: {"link_speed", "link_width", "aer": {kind: {error: count}}}} (sysfs
    text as the kernel writes it; "aer" None where the function has no aer_dev_* files).
    None for a device with no PCI function (loop, a file's RAM disk). A few small sysfs
    reads: taken before and after every run (``iolab.measure.runner``)."""
    tree = Tree(root)
    if not device or not tree.path(f"sys/block/{device}").exists():
        return None
    pci = pci_of(tree, device)
    if pci is None:
        return None
    return {
        p.name: {
            "link_speed": read_text(p / "current_link_speed"),
            "link_width": read_text(p / "current_link_width"),
            "aer": aer_counts(p),
        }
        for p in pci.chain
    }


def link_rate(function: Path) -> float | None:
    """The data rate of the link a PCI function trained at, bytes/s (iolab.read.checks)."""
    return link_capacity_bytes_s(
        {
            "link_speed": read_text(function / "current_link_speed"),
            "link_width": read_text(function / "current_link_width"),
        }
    )
