"""Where a multi-device study's devices sit (seed 001): each device's PCI function, its root
port and root complex (the tree ``lspci -tv`` draws), its NUMA node, the link it trained at,
and the ceiling of each root port shared by several devices against the sum of their own
links — the seed's "two quad-SSD cards under one root complex capped 10 SSDs at 50 GiB/s".

    table = topology(["nvme0n1", "nvme1n1"])      # one row per device, from /sys
    readable(table)                               # the same in words, for a notebook
    topology_checks(Tree("/"), ["nvme0n1", "nvme1n1"])   # preflight's verdicts on it

Link rates are PCIe's data rates after line coding (``iolab.read.checks.link_capacity_bytes_s``:
GT/s x lanes x 128/130 from Gen3 on, 8/10 before, / 8), in GB/s (10^9 bytes/s). Every file is read
under ``root`` (``/`` by default), as ``iolab.machine.preflight`` reads it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..core.errors import InputError
from ..core.system import read_text
from ..read.checks import link_gts, link_lanes
from .preflight_check import SOURCES, Check, Tree
from .preflight_pci import disk_name, link_rate, pci_of

COLUMNS = {
    "device": "device",
    "pci_function": "PCI function",
    "root_port": "root port",
    "root_complex": "root complex",
    "numa_node": "NUMA node",
    "link": "link",
    "link_gb_s": "its link (GB/s)",
    "devices_on_port": "devices on the port",
    "port_gb_s": "the port's link (GB/s)",
    "port_over_links": "port ÷ their links",
}


def topology(devices: Sequence[Any], root: str | os.PathLike = "/") -> pd.DataFrame:
    """One row per device (kernel names, /dev paths or Targets, each disk once; a passthrough
    node is its namespace; a device /sys does not know is a row that says so): ``pci_function`` ("" for a virtual device: loop, zram), ``root_port``
    ("" on the root bus), ``root_complex``, ``numa_node`` (-1: the firmware named none),
    ``link`` ("16 GT/s x4"), ``link_gb_s``, ``devices_on_port`` (this study's devices under the
    same root port), ``port_gb_s`` (that port's link) and ``port_over_links`` (the port's
    link ÷ the sum of their links: below 1, the port is the ceiling)."""
    tree = Tree(root)
    if isinstance(devices, (str, os.PathLike)) or hasattr(devices, "device"):  # one device
        devices = [devices]
    rows, seen = [], set()
    for given in devices:
        device = getattr(given, "device", given)  # a Target: the disk under it
        if not device:
            rows.append(
                {
                    "device": str(getattr(given, "path", given)),
                    "pci_function": "",
                    "note": "a file on a file system without a disk (tmpfs)",
                }
            )
            continue
        try:
            name = disk_name(tree, device)
        except InputError:
            rows.append({"device": str(device), "pci_function": "", "note": "no such block device here"})
            continue
        if name in seen:  # a partition and its disk, or a path and its name: one device
            continue
        seen.add(name)
        pci = pci_of(tree, name)
        if pci is None:
            rows.append({"device": name, "pci_function": "", "note": "a virtual device: loop, zram, ..."})
            continue
        ep = pci.endpoint
        speed, width = link_gts(read_text(ep / "current_link_speed")), link_lanes(read_text(ep / "current_link_width"))
        node = read_text(ep / "numa_node")
        rows.append(
            {
                "device": name,
                "pci_function": ep.name,
                "root_port": pci.root_port or "",
                "root_complex": pci.complex,
                "numa_node": int(node) if node and node.lstrip("-").isdigit() else -1,
                "link": f"{speed:g} GT/s x{width}" if speed and width else "",
                "link_gb_s": (link_rate(ep) or float("nan")) / 1e9 if speed and width else float("nan"),
                "port_gb_s": (link_rate(pci.chain[-1]) or float("nan")) / 1e9 if pci.root_port else float("nan"),
                "note": "",
            }
        )
    table = pd.DataFrame(rows, columns=[*COLUMNS, "note"])
    on_port = table[table["root_port"].fillna("") != ""].groupby("root_port")
    table["devices_on_port"] = table["root_port"].map(on_port.size()).fillna(0).astype(int)
    table["port_over_links"] = table["port_gb_s"] / table["root_port"].map(on_port["link_gb_s"].sum())
    return table


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """``topology`` as a notebook shows it: columns in words, nothing missing shown as NaN."""
    out = table[[c for c in COLUMNS if c in table]].rename(columns=COLUMNS)
    for col in ("its link (GB/s)", "the port's link (GB/s)", "port ÷ their links"):
        out[col] = [f"{v:.2f}" if pd.notna(v) else "—" for v in out[col]]
    out["NUMA node"] = [str(int(n)) if pd.notna(n) and n >= 0 else "—" for n in out["NUMA node"]]
    out["devices on the port"] = [str(n) if n else "—" for n in out["devices on the port"]]
    for col in ("PCI function", "root port", "root complex", "link"):
        out[col] = out[col].fillna("").replace("", "—")
    out["root port"] = [
        "— (on the root bus)" if port == "—" and fn != "—" else port
        for port, fn in zip(out["root port"], out["PCI function"])
    ]
    if table["note"].fillna("").any():
        out["note"] = table["note"].fillna("").replace("", "—")
    return out


def topology_checks(tree: Tree, names: Sequence[str]) -> list[Check]:
    """Preflight's verdicts on ``topology``: devices that share a root port (one link for
    all: its link against the sum of theirs) or a root complex (seed 001's bottleneck); only
    with two devices or more (``names``: kernel names ``disk_name`` found)."""
    if len(names) < 2:
        return []
    table = topology(names, root=tree.root)
    bare = table["pci_function"].fillna("") == ""
    out = [Check("topology", "shared_port", "unknown", f"{n}: no PCI function") for n in table.loc[bare, "device"]]
    placed = table[~bare]
    for port, devs in placed[placed["root_port"] != ""].groupby("root_port", sort=False):
        if len(devs) < 2:
            continue
        cap, alone = devs["port_gb_s"].iloc[0], devs["link_gb_s"].fillna(0.0).sum()
        known = bool(cap > 0)  # NaN: the port's link is not in sysfs
        ceiling = f"its link {cap:.2f} GB/s for all, {alone:.2f} GB/s their own links" if known else "its link unknown"
        out.append(
            Check(
                "topology",
                "shared_port",
                "warn" if not known or cap < alone else "ok",
                f"{', '.join(devs['device'])} share root port {port}: {ceiling}",
                costs=SOURCES["root_port"],
                do="put them under different root ports, or count the port as the ceiling",
            )
        )
    for cplx, devs in placed.groupby("root_complex", sort=False):
        if len(devs) >= 2:
            out.append(
                Check(
                    "topology",
                    "shared_complex",
                    "warn",
                    f"{', '.join(devs['device'])} share root complex {cplx} (lspci -tv draws it)",
                    costs=SOURCES["root_port"],
                    do="measure each alone and all together; move cards to other root complexes if the sum falls short",
                )
            )
    if len(out) == 0:
        out.append(Check("topology", "shared_port", "ok", "every device under its own root port and root complex"))
    return out
