"""Which package holds each tool iolab uses, one table per distribution, and the line that
installs them. ``scripts/setup.sh`` runs this file with the system's Python (before any venv
exists) to name what to install; iolab's errors name the same packages.

    python3 lib/iolab/core/distro.py fio perf      # -> fio linux-perf   (on Debian)

Debian 12 is what the project tests; Ubuntu's names are from its archive (22.04 and later).
A distribution not in the table gets Debian's names.
"""

from __future__ import annotations

import sys

# tool (a command, or a role: "venv", "kernel") -> package, per distribution
PACKAGES: dict[str, dict[str, str]] = {
    "debian": {
        "fio": "fio",
        "perf": "linux-perf",
        "stress-ng": "stress-ng",
        "losetup": "util-linux",
        "blkid": "util-linux",
        "setpriv": "util-linux",
        "mkfs.ext4": "e2fsprogs",
        "ip": "iproute2",
        "venv": "python3-venv",
        "chromium": "chromium",
        "qemu-system-x86_64": "qemu-system-x86",
        "busybox": "busybox-static",
        "nvme": "nvme-cli",
        "kernel": "linux-image-amd64",
        "lspci": "pciutils",
    },
    "ubuntu": {
        "perf": "linux-tools-generic",  # perf for the running kernel: linux-tools-$(uname -r)
        "chromium": "chromium-browser",
        "kernel": "linux-image-generic",
    },
}


def distribution(os_release: str = "/etc/os-release") -> str:
    """The key of ``PACKAGES`` for this machine: its ID, else the first of its ID_LIKE found,
    else "debian"."""
    fields = {}
    try:
        with open(os_release) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                fields[key] = value.strip('"')
    except OSError:
        pass
    for name in [fields.get("ID", ""), *fields.get("ID_LIKE", "").split()]:
        if name in PACKAGES:
            return name
    return "debian"


def package(tool: str, distro: str | None = None) -> str:
    """The package that holds ``tool`` on ``distro`` (this machine's by default)."""
    distro = distro or distribution()
    return PACKAGES.get(distro, {}).get(tool) or PACKAGES["debian"].get(tool, tool)


def install_line(tools: list[str], distro: str | None = None) -> str:
    """``apt-get install P ...`` for the packages of ``tools`` (each once, in order)."""
    names = list(dict.fromkeys(package(t, distro) for t in tools))
    return "apt-get install " + " ".join(names)


if __name__ == "__main__":  # scripts/setup.sh: tools in, packages out (each once)
    print(" ".join(dict.fromkeys(package(t) for t in sys.argv[1:])))
