"""Where the devices sit, drawn: root complex -> root port -> device, as ``lspci -tv`` nests
them, each device with its link and NUMA node, each root port that several devices share with
its link against the sum of theirs (``iolab.machine.topology``: seed 001's bottleneck)."""

from __future__ import annotations

import pandas as pd

from .common import CATEGORICAL, NOTEBOOK_WIDTH_IN, UNSTABLE_COLOR, source_note

GREY = "0.35"


def _gb(v) -> str:
    return f"{v:.2f} GB/s" if pd.notna(v) else "link unknown"


def _box(ax, x: float, y: float, text: str, color):
    return ax.text(
        x, y, text, ha="left", va="center", fontsize=8, zorder=3,
        bbox={"boxstyle": "round,pad=0.35", "facecolor": "white", "edgecolor": color, "linewidth": 1.2},
    )  # fmt: skip


def _join(ax, links) -> None:
    """A line from each parent box's right edge to its child box's left edge (drawn once the
    boxes' sizes are known)."""
    ax.figure.canvas.draw()
    to_data = ax.transData.inverted()

    def edges(t):
        (x0, _), (x1, _) = to_data.transform(t.get_bbox_patch().get_window_extent())
        return x0, x1

    for parent, child in links:
        _, right = edges(parent)
        left, _ = edges(child)
        (_, py), (_, cy) = parent.get_position(), child.get_position()
        middle = (right + left) / 2
        ax.plot([right, middle, middle, left], [py, py, cy, cy], color=GREY, linewidth=0.8, zorder=1)


def draw(table: pd.DataFrame, ax=None):
    """The tree of ``table`` (``iolab.machine.topology.topology``): one line per device, devices
    coloured by NUMA node; a port whose link is below the sum of its devices' links in red.
    Devices without a PCI function (loop, zram) are listed apart. Returns the ``ax``."""
    import matplotlib.pyplot as plt

    pci = table[table["pci_function"].fillna("") != ""].sort_values(["root_complex", "root_port", "device"])
    apart = table[table["pci_function"].fillna("") == ""]
    rows = len(pci) + (1 if len(apart) else 0)
    if ax is None:
        _, ax = plt.subplots(figsize=(NOTEBOOK_WIDTH_IN, 0.9 + 0.45 * max(rows, 1)))
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(rows - 0.5, -0.9)
    if pci.empty:
        listed = ", ".join(f"{d} ({n})" if n else d for d, n in zip(apart["device"], apart["note"].fillna("")))
        ax.text(0.0, 0, f"No device here has a PCI function: {listed or 'no device given'}", fontsize=9, va="center")
        ax.set_title("Where the devices sit: nothing to draw", fontsize=10)
        return ax
    ax.text(0.0, -0.7, "root complex", fontsize=8, color=GREY)
    ax.text(0.2, -0.7, "root port", fontsize=8, color=GREY)
    ax.text(0.6, -0.7, "device: link, NUMA node", fontsize=8, color=GREY)
    y_of = {dev: i for i, dev in enumerate(pci["device"])}
    nodes = sorted({int(n) for n in pci["numa_node"].dropna()})
    links = []
    for cplx, devs in pci.groupby("root_complex", sort=False):
        y = devs["device"].map(y_of).mean()
        top = _box(ax, 0.0, y, cplx, GREY)
        for port, under in devs.groupby("root_port", sort=False):
            ys = under["device"].map(y_of)
            py = ys.mean()
            first = under.iloc[0]
            shared = bool(port) and len(under) > 1  # devices on the root bus share no port
            short = shared and pd.notna(first["port_over_links"]) and first["port_over_links"] < 1
            words = port or "on the root bus"
            if shared:
                ratio = f", {first['port_over_links']:.2f}× their links" if pd.notna(first["port_over_links"]) else ""
                words += f"\n{_gb(first['port_gb_s'])} for {len(under)} devices{ratio}"
            mid = _box(ax, 0.2, py, words, UNSTABLE_COLOR if short else GREY)
            links.append((top, mid))
            for dev_y, (_, d) in zip(ys, under.iterrows()):
                node = int(d["numa_node"]) if pd.notna(d["numa_node"]) and d["numa_node"] >= 0 else None
                color = CATEGORICAL[nodes.index(node) % len(CATEGORICAL)] if node is not None else GREY
                link = f"{d['link']} ({_gb(d['link_gb_s'])})" if d["link"] else "no PCIe link in sysfs"
                leaf = _box(ax, 0.6, dev_y, f"{d['device']}: {link}, node {node if node is not None else '—'}", color)
                links.append((mid, leaf))
    if len(apart):
        absent = apart["note"].fillna("") == "no such block device here"
        lines = [
            f"{words}: "
            + ", ".join(
                f"{d} ({n})" if n and not missing else d for d, n in zip(part["device"], part["note"].fillna(""))
            )
            for words, part, missing in (
                ("no PCI function", apart[~absent], False),
                ("not found here", apart[absent], True),
            )
            if len(part)
        ]
        ax.text(0.0, rows - 1, "; ".join(lines), fontsize=8, color=GREY, va="center")
    _join(ax, links)
    ax.set_title("Where the devices sit: root complexes, root ports, links and NUMA nodes", fontsize=10)
    source_note(ax, "/sys/bus/pci (the tree lspci -tv draws); link rates after line coding", below_pt=4)
    return ax
