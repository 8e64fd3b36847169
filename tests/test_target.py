"""Targets and the guard that refuses to destroy data (on real loop devices)."""

import subprocess
from pathlib import Path

import pytest

from iolab.core.errors import TargetError, UnsafeTargetError
from iolab.core.validate import parse_size
from iolab.machine.fio import to_jobfile
from iolab.machine.jobcheck import guard_job_text
from iolab.machine.target import existing_path, holds_data, loop_backing, loop_device, scratch_file
from iolab.measure.runner import measure
from support.devices import mkfs_ext4, write_dos_label
from support.fio import QUICK
from support.marks import needs_root


def guard_write(target, options, allow_destructive=False):
    """The write guard on the one-job file of ``target`` + ``options``, as a run's job reaches it."""
    opts = {**target.fio_options, **dict(options)}
    guard_job_text(to_jobfile({str(opts.pop("name", "iolab")): opts}), allow_destructive)


def test_parse_size_reads_sizes_as_fio_does_and_nothing_else():
    """One reading of a size (iolab.core.validate.parse_size): what makes scratch files and what
    checks fio's options agree; a fraction, which fio drops, is refused in both."""
    from iolab.core.errors import InputError
    from iolab.core.validate import check_size

    assert parse_size("4k") == 4096 and parse_size("1g") == 2**30 and parse_size(512) == 512
    assert parse_size("256MiB") == 256 * 2**20 == parse_size("256mb") and parse_size("1p") == 2**50
    check_size("size", "1p")
    for bad in ("1.5m", "4q", "-1k", ""):
        with pytest.raises(InputError, match="not a size fio reads exactly"):
            parse_size(bad)
        with pytest.raises(InputError, match="not a size fio reads exactly"):
            check_size("bs", bad or "x")


def test_scratch_file_is_created_once_and_reused(tmp_path, runs):
    t = scratch_file(tmp_path, "8m")
    measure(QUICK, t, runs_dir=runs)
    inode = t.path.stat().st_ino
    t2 = scratch_file(tmp_path, "8m")
    assert t2.path == t.path and t2.path.stat().st_ino == inode and t2.path.stat().st_size == 8 * 2**20


def test_scratch_file_too_big(tmp_path):
    with pytest.raises(TargetError, match=r"of 100 TiB does not fit in .* [KMGT]?i?B free\): pass a smaller size"):
        scratch_file(tmp_path, "100t")


def test_a_small_scratch_file_on_a_full_disk_says_its_size_in_a_unit_that_shows_it(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(2**30, 2**30, 512))
    with pytest.raises(TargetError, match=r"scratch file of 8.00 MiB does not fit in .* \(512 B free\)"):
        scratch_file(tmp_path, "8m")


@needs_root
def test_loop_device_is_detached_and_its_file_removed():
    with loop_device("16m") as dev:
        name, backing = dev.device, dev.notes[0].split("(")[1].rstrip(")")
        assert Path(f"/sys/block/{name}/queue/scheduler").exists()
        assert holds_data(dev.path) == []
    assert loop_backing(name) != backing  # detached (another test may have taken the name since)
    assert not Path(backing).exists()


@needs_root
def test_a_loop_device_another_program_holds_open_is_detached_once_it_closes_it(monkeypatch, capsys):
    """``losetup -d`` only marks a device held open elsewhere (udev's probe, a scan of the block
    devices) for detaching when it is closed: iolab waits for that, and says when it waited in vain."""
    import threading

    from iolab.machine import target

    monkeypatch.setattr(target, "LOOP_DETACH_WAIT_S", 1.0)
    with loop_device("16m") as dev:
        name, backing = dev.device, dev.notes[0].split("(")[1].rstrip(")")
        with open(dev.path, "rb"):
            said = target.detach_loop(str(dev.path), backing)
            assert "held open by another program" in said and loop_backing(name) == backing, said
        assert loop_backing(name) != backing  # closed: the kernel detached it
    assert not Path(backing).exists() and not capsys.readouterr().err  # the block's end found it detached

    with loop_device("16m") as dev:
        name, backing = dev.device, dev.notes[0].split("(")[1].rstrip(")")
        holder = open(dev.path, "rb")
        threading.Timer(0.3, holder.close).start()
        assert target.detach_loop(str(dev.path), backing) == f"detached loop device {dev.path}"
        assert loop_backing(name) != backing


@needs_root
def test_a_refused_detach_keeps_the_blocks_own_error_and_the_ledger_entry(monkeypatch, capsys, tmp_path):
    """losetup refusing at a block's end: the block's own error is the one raised, the refusal is
    said, and the ledger keeps the device for the process's exit (or ``iolab cleanup``)."""
    from iolab.machine import ledger, target

    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    real = target.detach_loop

    def refusing(device, backing):
        raise OSError(f"losetup -d {device} failed: busy")

    monkeypatch.setattr(target, "detach_loop", refusing)
    with pytest.raises(ValueError, match="the block's own"), loop_device("16m") as dev:
        name, backing = dev.device, dev.notes[0].split("(")[1].rstrip(")")
        raise ValueError("the block's own error")
    assert "failed: busy: the ledger keeps it for `iolab cleanup`" in capsys.readouterr().err
    assert loop_backing(name) == backing and list((tmp_path / "state" / "ledger").glob("*.json"))
    monkeypatch.setattr(target, "detach_loop", real)
    ledger._put_back_own_at_exit()  # what the process's exit does
    assert loop_backing(name) != backing and not Path(backing).exists()
    assert not list((tmp_path / "state" / "ledger").glob("*.json"))


@needs_root
def test_guard_refuses_writes_to_a_filesystem(loopdev, runs):
    mkfs_ext4(loopdev.path)
    found = holds_data(loopdev.path)
    assert any("ext4" in f for f in found)
    with pytest.raises(UnsafeTargetError, match="ext4.*allow_destructive"):
        measure({**QUICK, "rw": "randwrite"}, existing_path(loopdev.path), runs_dir=runs)
    assert not runs.exists() or not list(runs.iterdir())  # refused before anything ran
    # reads are fine, and an explicit allow lets the write through
    measure({**QUICK, "rw": "randread", "direct": 1}, existing_path(loopdev.path), runs_dir=runs)
    guard_write(existing_path(loopdev.path), {"rw": "write"}, allow_destructive=True)


@needs_root
def test_guard_sees_mounts(loopdev, tmp_path):
    mkfs_ext4(loopdev.path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", str(loopdev.path), str(mnt)], check=True)
    try:
        assert any("mount at" in f for f in holds_data(loopdev.path))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@needs_root
def test_guard_sees_partitions(loopdev, runs):
    write_dos_label(loopdev.path)
    subprocess.run(["partx", "-a", str(loopdev.path)], capture_output=True)
    try:
        found = holds_data(loopdev.path)
        assert any("dos" in f or "partitions" in f for f in found)
        with pytest.raises(UnsafeTargetError):
            measure({**QUICK, "rw": "write"}, existing_path(loopdev.path), runs_dir=runs)
    finally:
        subprocess.run(["partx", "-d", str(loopdev.path)], capture_output=True)


def test_guard_ignores_files_and_reads(tmp_path):
    t = scratch_file(tmp_path, "1m")
    guard_write(t, {"rw": "randwrite"})  # a scratch file is ours to overwrite
    with pytest.raises(UnsafeTargetError, match="allow_mounted_write"):
        from iolab.machine.target import Target

        guard_write(Target("block", Path("/dev/null")), {"rw": "write", "allow_mounted_write": 1})
