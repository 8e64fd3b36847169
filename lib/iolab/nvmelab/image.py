"""The NVMe lab's guest image: Debian's kernel unpacked, and a busybox initramfs with the
modules the guest needs and the init that boots it (``iolab.nvmelab.vm`` boots it).

    vmlinux, initramfs, version = nvmelab_image.build()   # once; again when the kernel changes

* the kernel is Debian's ``linux-image-amd64``, booted directly as the uncompressed ELF image
  (``extract_vmlinux``: the gzip, xz or zstd stream inside the vmlinuz, faster than through SeaBIOS);
* the initramfs (``cpio_newc``, the kernel's newc format) holds busybox-static, the modules
  ``MODULES`` with their dependencies in load order (``module_files``: virtio-pci, 9p, nvme;
  compressed ones unpacked, ``module_data``)
  and ``INIT``: it loads them (nvme with ``poll_queues``), mounts the host's root read-only
  over 9p with the shared folders, waits for the emulated namespaces, runs the command in a
  chroot and prints ``START`` before it and ``EXIT <status>`` after it on the console.

Each boot appends its own ``lab.conf`` (what to share, what to run) to the base initramfs
built here; ``build`` makes the base once under ``lab_dir()``, again when the kernel, busybox
or ``BUILD_VERSION`` change.
"""

from __future__ import annotations

import bz2
import json
import lzma
import re
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path

from ..core import distro, paths
from ..core.atomic import write_atomic, write_json
from ..core.errors import IolabError, ToolMissing

QEMU = "qemu-system-x86_64"
TOOLS = (QEMU, "busybox", "nvme")  # their packages: iolab.core.distro
MODULES = ("virtio_pci", "9pnet_virtio", "9p", "nvme", "loop")  # with their dependencies (modules.dep); loop: a
# notebook's scratch loop devices run in the guest too (losetup found none: notebook 06 failed in the lab)
BUSYBOX = "/bin/busybox"
START, EXIT = "IOLAB-NVMELAB-START", "IOLAB-NVMELAB-EXIT"  # what INIT prints around the command
BUILD_VERSION = 6  # bump when the initramfs or its init changes


class LabError(IolabError):
    """The NVMe lab could not be built or booted, or its guest hung."""


def lab_dir() -> Path:
    """The lab's folder: the built kernel and initramfs, KVM's answer, each boot's files."""
    return paths.data_dir() / "nvmelab"


def missing_tools() -> list[str]:
    """This distribution's packages the lab needs that are not installed (empty: all there)."""
    missing = [
        distro.package(tool)
        for tool in TOOLS
        if not shutil.which(tool) and not (tool == "busybox" and Path(BUSYBOX).exists())
    ]
    if guest_kernel() is None:
        missing.append(distro.package("kernel"))
    return missing


def guest_kernel() -> tuple[str, Path, Path] | None:
    """(version, vmlinuz, modules folder) of the newest kernel in /boot with its modules."""
    found = []
    for vmlinuz in Path("/boot").glob("vmlinuz-*"):
        version = vmlinuz.name[len("vmlinuz-") :]
        modules = Path("/lib/modules") / version
        if (modules / "modules.dep").is_file():
            key = tuple(int(n) for n in re.findall(r"\d+", version)[:4])
            found.append((key, version, vmlinuz, modules))
    if not found:
        return None
    _, version, vmlinuz, modules = max(found)
    return version, vmlinuz, modules


# The compressions a bzImage's payload and a kernel module come in (the kernel's
# scripts/extract-vmlinux and kmod's): magic bytes -> how to undo them.
KERNEL_MAGICS = {
    "gzip": b"\x1f\x8b\x08",
    "xz": b"\xfd7zXZ\x00",
    "zstd": b"\x28\xb5\x2f\xfd",
    "bzip2": b"BZh",
    "lzma": b"\x5d\x00\x00",
}
MODULE_SUFFIXES = {".gz": "gzip", ".xz": "xz", ".zst": "zstd"}


def decompress(data: bytes, how: str) -> bytes:
    """The first stream of ``data`` in compression ``how`` (a key of ``KERNEL_MAGICS``)
    undone; what follows the stream is ignored. ValueError when it is not such a stream."""
    try:
        if how == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
        if how in ("xz", "lzma"):
            return lzma.LZMADecompressor(lzma.FORMAT_XZ if how == "xz" else lzma.FORMAT_ALONE).decompress(data)
        if how == "bzip2":
            return bz2.BZ2Decompressor().decompress(data)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise ValueError(str(exc)) from exc
    if how == "zstd":
        try:
            import zstandard  # the nvmelab extra: Python 3.11's standard library has no zstd
        except ImportError:
            raise LabError(
                "this kernel or module is zstd-compressed: install the NVMe lab's extra "
                "(pip install 'iolab[nvmelab]', or .venv/bin/pip install zstandard)"
            ) from None
        try:
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
        except zstandard.ZstdError as exc:
            raise ValueError(str(exc)) from exc
    raise ValueError(f"unknown compression {how!r}")


def extract_vmlinux(vmlinuz: Path) -> bytes:
    """The uncompressed ELF kernel inside a bzImage whose payload is gzip, xz, zstd, bzip2 or
    lzma (Debian's are xz; newer Debian and Ubuntu kernels zstd): each place a known magic
    stands is tried, first to last, until one unpacks to an ELF image, as the kernel's
    scripts/extract-vmlinux does."""
    data = vmlinuz.read_bytes()
    if data.startswith(b"\x7fELF"):
        return data  # already a vmlinux
    tried = []
    for how, magic in KERNEL_MAGICS.items():
        start = data.find(magic)
        while start >= 0:
            try:
                elf = decompress(data[start:], how)
            except ValueError:
                elf = b""
            if elf.startswith(b"\x7fELF"):
                return elf
            tried.append(how)
            start = data.find(magic, start + 1)
    raise LabError(
        f"{vmlinuz}: no gzip, xz, zstd, bzip2 or lzma stream inside unpacks to an ELF kernel "
        f"({len(tried)} places tried); the lab boots bzImage kernels such as {distro.package('kernel')}'s"
    )


def module_data(ko: Path) -> bytes:
    """A kernel module's bytes, uncompressed (``.ko.gz``, ``.ko.xz``, ``.ko.zst`` as newer
    Debian and Ubuntu ship them): the guest's busybox insmod loads plain ``.ko`` files."""
    data = ko.read_bytes()
    how = MODULE_SUFFIXES.get(ko.suffix)
    if how is None:
        return data
    try:
        plain = decompress(data, how)
    except ValueError as exc:
        raise LabError(f"{ko}: not a {how} stream ({exc})") from exc
    if not plain.startswith(b"\x7fELF"):
        raise LabError(f"{ko}: its {how} stream does not hold a kernel module (no ELF header)")
    return plain


def module_name(ko: Path) -> str:
    """The name a module has in the guest's initramfs: ``nvme.ko`` for ``nvme.ko.zst``."""
    return ko.name[: -len(ko.suffix)] if ko.suffix in MODULE_SUFFIXES else ko.name


def module_files(modules_dir: Path, names: Sequence[str] = MODULES) -> list[Path]:
    """The .ko files for ``names`` and their dependencies, each once, in load order."""
    deps = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[Path(path).name.split(".ko")[0].replace("-", "_")] = (path, rest.split())
    order: list[str] = []
    for name in names:
        if name not in deps:
            raise LabError(f"kernel module {name} is not in {modules_dir}/modules.dep")
        path, needs = deps[name]
        for dep in reversed(needs):  # modules.dep lists the deepest dependency last
            if dep not in order:
                order.append(dep)
        if path not in order:
            order.append(path)
    return [modules_dir / rel for rel in order]


def cpio_newc(entries: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A cpio archive in the kernel's initramfs format (newc): (name, mode, data) entries;
    a symlink's data is its target."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        raw = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0)
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + raw
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


INIT = r"""#!/bin/busybox sh
# The NVMe lab's guest init (iolab.nvmelab.vm): mounts, modules, the host root, the command.
/bin/busybox mkdir -p /proc /sys /dev /host /tmp
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
ip link set lo up  # Jupyter's kernels talk over 127.0.0.1 (ZeroMQ)
. /lab.conf
for m in $LAB_MODULES; do
    case "$m" in */nvme.ko) insmod "$m" poll_queues=$LAB_POLL_QUEUES ;; *) insmod "$m" ;; esac
done
opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $opts,ro,cache=loose hostroot /host || { echo "lab: the host root did not mount"; poweroff -f; }
mount --bind /proc /host/proc; mount --bind /sys /host/sys; mount --bind /dev /host/dev
mount -t tmpfs tmpfs /host/run; mount -t tmpfs tmpfs /host/tmp
mkdir -p /host/dev/pts /host/dev/shm; mount -t devpts devpts /host/dev/pts; mount -t tmpfs tmpfs /host/dev/shm
# after the tmpfs: a checkout or data folder under the host's /tmp is seen through its own share
i=0
for path in $LAB_RO; do
    mkdir -p "/host$path" 2>/dev/null
    mount -t 9p -o $opts,ro,cache=loose "ro$i" "/host$path" || echo "lab: $path did not mount"
    i=$((i + 1))
done
i=0
for path in $LAB_RW; do
    mkdir -p "/host$path" 2>/dev/null
    mount -t 9p -o $opts,cache=mmap "rw$i" "/host$path" || echo "lab: $path did not mount read-write"
    i=$((i + 1))
done
n=0
while [ ! -e /dev/nvme$((LAB_CONTROLLERS - 1))n1 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
[ -e /dev/nvme$((LAB_CONTROLLERS - 1))n1 ] || { echo "lab: the emulated NVMe namespaces did not appear in 20 s"; poweroff -f; }
echo IOLAB-NVMELAB-START
chroot /host "$LAB_PYTHON" "$LAB_EXEC" "$LAB_ARGV"
echo "IOLAB-NVMELAB-EXIT $?"
sync
poweroff -f
"""


def build(force: bool = False) -> tuple[Path, Path, str]:
    """The guest's kernel (uncompressed) and base initramfs under the lab folder, built once
    (again when the kernel, busybox or this module's build version change). Returns
    (vmlinux, initramfs, kernel version)."""
    missing = missing_tools()
    if missing:
        raise ToolMissing(missing[0], " ".join(missing))
    version, vmlinuz, modules_dir = guest_kernel()
    busybox = Path(shutil.which("busybox") or BUSYBOX)
    folder = lab_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = {
        "build": BUILD_VERSION,
        "kernel": version,
        "vmlinuz_mtime": vmlinuz.stat().st_mtime_ns,
        "busybox_mtime": busybox.stat().st_mtime_ns,
    }
    vmlinux, initramfs, stamp_file = folder / "vmlinux", folder / "initramfs.cpio", folder / "build.json"
    if not force and vmlinux.is_file() and initramfs.is_file():
        try:
            if json.loads(stamp_file.read_text()) == stamp:
                return vmlinux, initramfs, version
        except (OSError, ValueError):
            pass
    kos = module_files(modules_dir)
    entries = [
        ("bin", 0o40755, b""),
        ("bin/busybox", 0o100755, busybox.read_bytes()),
        ("init", 0o100755, INIT.encode()),
        ("lib", 0o40755, b""),
        ("lib/modules", 0o40755, b""),
    ]
    entries += [(f"lib/modules/{module_name(ko)}", 0o100644, module_data(ko)) for ko in kos]
    write_atomic(vmlinux, extract_vmlinux(vmlinuz))
    write_atomic(initramfs, cpio_newc(entries))
    write_json(stamp_file, {**stamp, "modules": [module_name(k) for k in kos]})
    return vmlinux, initramfs, version
