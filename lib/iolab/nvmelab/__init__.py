"""The NVMe lab: Debian's kernel booted under QEMU with emulated NVMe controllers and PCIe
topology, so every NVMe path runs for real without an SSD (``image``: the guest's kernel,
modules and init; ``vm``: the lab's settings, the boot, the tier and notebooks run inside)."""

__all__ = [  # what the package exports: its modules
    "image",
    "vm",
]
