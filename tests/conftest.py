import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
if not SHARED.exists():  # CI: shared/ beside the clone
    SHARED = Path(os.environ.get("IOLAB_SHARED", REPO.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PUBLISHED = SHARED / "fixtures"

is_root = os.geteuid() == 0
needs_root = pytest.mark.skipif(not is_root, reason="needs root (loop devices, mounts)")
needs_shared = pytest.mark.skipif(not PUBLISHED.exists(), reason="shared/fixtures not beside the checkout")


@pytest.fixture
def scratch(tmp_path):
    from iolab.target import scratch_file
    return scratch_file(tmp_path / "scratch", "32m")


@pytest.fixture
def runs(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def loopdev():
    from iolab.target import loop_device
    if not is_root:
        pytest.skip("needs root")
    with loop_device("64m") as dev:
        yield dev


def mkfs_ext4(device):
    subprocess.run(["mkfs.ext4", "-q", "-F", str(device)], check=True, capture_output=True)


def write_dos_label(device):
    """One MBR partition (type 0x83, sectors 2048..18431) written by hand: no fdisk needed."""
    import struct
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384)
    with open(device, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")


QUICK = {"runtime": "1s", "ioengine": "psync", "rw": "randread", "bs": "4k"}
