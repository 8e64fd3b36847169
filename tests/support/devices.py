"""Block devices in tests: a file system or a partition label written on one, a tmpfs mounted
for a case, and the loop devices that processes with the test's ledger made."""

import struct
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path


def mkfs_ext4(device) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", str(device)], check=True, capture_output=True)


def write_dos_label(device) -> None:
    """One MBR partition (type 0x83, sectors 2048..18431) written by hand: no fdisk needed."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384)
    with open(device, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")


@contextmanager
def tmpfs(path: Path, *, size: str = "16m", files: dict[str, bytes] | None = None, ro: bool = True):
    """A tmpfs at ``path`` holding ``files``, remounted read-only when ``ro``; always unmounted."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        for name, data in (files or {}).items():
            (path / name).write_bytes(data)
        if ro:
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


class LoopWatch:
    """The loop devices that processes with this test's ``IOLAB_STATE`` create, read from their
    ledger entries (``iolab.machine.ledger.entries``) while they exist (polled every 100 ms: a
    loop device lives at least one run, 0.3 s or more, and one left behind stays listed), so a
    test can check that exactly those were released while other tests make their own."""

    def __init__(self):
        self.seen: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        from iolab.machine import ledger

        while not self._stop.wait(0.1):
            for _, entry in ledger.entries():
                if entry.get("kind") == "loop" and entry.get("backing"):
                    self.seen.setdefault(entry["backing"], {}).update({k: v for k, v in entry.items() if v})

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def left_behind(self) -> list[str]:
        """What was seen and is still there: a backing file, or a device still attached to it."""
        from iolab.machine.target import loop_backing

        self.stop()
        return [
            f"{e.get('device')} ({backing})"
            for backing, e in self.seen.items()
            if Path(backing).exists() or (e.get("device") and loop_backing(Path(e["device"]).name) == backing)
        ]
