"""Which regular files iolab created, so the write guards (``iolab.machine.jobcheck`` for fio's
files, ``iolab.core.outputs`` for pages, tables and folders) can tell iolab's own files from a
file that holds a user's data.

A file iolab made — the scratch file, or a file fio laid out itself during an iolab run —
gets a small hidden note beside it, ``.NAME.iolab-owned``, holding the file's device and
inode numbers::

    data/scratch/iolab-scratch.dat
    data/scratch/.iolab-scratch.dat.iolab-owned   {"dev": 2049, "ino": 1311, "created_utc": ...}

The note lives with the file (no registry to lose at reboot, one per user or machine), and
it names that very file: a file replaced under the same name (another inode, e.g. renamed
over it) is no longer iolab's. A file deleted and created anew often gets the old inode back
(ext4 and tmpfs re-use a freed inode at once: a user's file copied to the scratch file's name
had iolab's inode number), so the note also holds the inode's birth time (``statx``'s btime,
ns; ext4, xfs, btrfs and tmpfs keep it): a file born later under the same inode number is not
iolab's. On a file system without birth times, device and inode are all there is, and the
note says so (``born_ns`` null). A note that cannot be written (a folder iolab may not
write) only means the next write to that file asks for ``--allow-destructive`` (fio's files)
or ``--force`` (an output).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path

SUFFIX = ".iolab-owned"


def note_of(path: str | os.PathLike) -> Path:
    """The note beside ``path`` (its real path: a symlink's note is its target's)."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}{SUFFIX}")  # (mark() never writes one for a symlink)


def mark(path: str | os.PathLike) -> bool:
    """Record the regular file ``path`` as iolab's. False when it is not a regular file or
    the note cannot be written (then it stays a user's file to the guard)."""
    from .atomic import write_json

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:  # a symlink or a hard link: maybe a user's file
            return False
        write_json(
            note_of(path),
            {
                "dev": st.st_dev,
                "ino": st.st_ino,
                "born_ns": birth_ns(path),
                "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "by": "iolab",
            },
        )
    except OSError:
        return False
    return True


def is_owned(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file iolab created (its note names this very inode), or,
    in the NVMe lab's guest, one the host found iolab's at boot and that is unchanged since
    (``vouch``)."""
    try:
        st = os.stat(path)
        note = json.loads(note_of(path).read_text())
        same = stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and (note["dev"], note["ino"]) == (st.st_dev, st.st_ino)
        born = note.get("born_ns")  # absent in notes written before it was kept: device and inode alone
        return (same and (born is None or born == birth_ns(path))) or _vouched(path, st)
    except (OSError, ValueError, KeyError, TypeError):
        return False


VOUCHED_ENV = "IOLAB_VOUCHED"  # in the NVMe lab's guest: the host's list of iolab's files at boot (``vouch``)


def vouch(folders) -> list[dict]:
    """Every file under ``folders`` that is iolab's here (``is_owned``), with its size and
    modification time (ns): the NVMe lab's guest, which sees other device and inode numbers
    over 9p and no birth time, takes these as iolab's while they are unchanged (``is_owned``
    reads the list ``$IOLAB_VOUCHED`` names). A second lab run into one output folder was
    refused there ("plan.json exists and iolab did not write it")."""
    found = []
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                if name.startswith(".") and name.endswith(SUFFIX) and len(name) > len(SUFFIX) + 1:
                    target = Path(dirpath) / name[1 : -len(SUFFIX)]
                    with contextlib.suppress(OSError):
                        if is_owned(target):
                            st = os.stat(target)
                            found.append(
                                {"path": os.path.realpath(target), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
                            )
    return found


_VOUCHED: dict[str, dict[str, tuple[int, int]]] = {}  # list file -> path -> (size, mtime_ns), read once


def _vouched(path: str | os.PathLike, st: os.stat_result) -> bool:
    listed = os.environ.get(VOUCHED_ENV)
    if not listed:
        return False
    if listed not in _VOUCHED:
        try:
            _VOUCHED[listed] = {e["path"]: (e["size"], e["mtime_ns"]) for e in json.loads(Path(listed).read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            _VOUCHED[listed] = {}
    return _VOUCHED[listed].get(os.path.realpath(path)) == (st.st_size, st.st_mtime_ns) and stat.S_ISREG(st.st_mode)


_STATX_BTIME, _AT_FDCWD = 0x800, -100


def birth_ns(path: str | os.PathLike) -> int | None:
    """When the inode at ``path`` was born, ns since the epoch (``statx(2)``'s ``stx_btime``,
    through the C library: Python has no statx), following a symlink as ``os.stat`` does;
    None where the file system (or the C library) keeps no birth time."""
    import ctypes

    try:
        statx = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):
        return None
    buf = ctypes.create_string_buffer(256)  # struct statx: stx_mask at 0, stx_btime at 80 (tv_sec i64, tv_nsec u32)
    if statx(_AT_FDCWD, os.fsencode(path), 0, _STATX_BTIME, buf) != 0:
        return None
    raw = buf.raw
    if not int.from_bytes(raw[0:4], "little") & _STATX_BTIME:
        return None
    return int.from_bytes(raw[80:88], "little", signed=True) * 1_000_000_000 + int.from_bytes(raw[88:92], "little")


def why_not_owned(path: str | os.PathLike) -> str:
    """Why ``path`` is not iolab's, in words for a refusal ("" when it is): no note beside it,
    or a note that names another file (replaced under the name, or born after iolab's)."""
    if is_owned(path):
        return ""
    if not note_of(path).exists():
        return f"no note {note_of(path).name} beside it"
    return f"{note_of(path).name} names the file iolab made, and this one was put there since (a copy or a new file)"


def adopt(folders, since: float) -> int:
    """Mark again, as this machine sees them, the files a guest of iolab's NVMe lab marked in
    the folders it shares read-write (``folders``) since ``since`` (epoch seconds): over 9p the
    guest's device and inode numbers are not the host's and there is no birth time, so the
    host would take its pages and folders for a user's. Only notes written since ``since``,
    whose file is a regular file changed since then, are adopted. How many."""
    adopted = 0
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                if not (name.startswith(".") and name.endswith(SUFFIX)) or len(name) <= len(SUFFIX) + 1:
                    continue  # not a file's note (a folder's marker is its own file)
                note = Path(dirpath) / name
                target = note.with_name(name[1 : -len(SUFFIX)])
                try:
                    said = json.loads(note.read_text())
                    st = os.lstat(target)
                except (OSError, ValueError):
                    continue
                fresh = str(said.get("created_utc", "")) >= stamp and st.st_mtime >= since - 1
                if fresh and not is_owned(target) and stat.S_ISREG(st.st_mode) and mark(target):
                    adopted += 1
    return adopted


def forget(path: str | os.PathLike) -> None:
    """Remove the note of ``path`` (when iolab removes the file)."""
    with contextlib.suppress(OSError):
        note_of(path).unlink()
