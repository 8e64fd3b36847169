"""What fio runs against, and the guard that refuses to destroy data.

Three kinds of target:

* ``scratch_file(dir, size)`` — the default: a file written whole once, when created, and
  reused;
* ``block_device("/dev/nvme0n1")`` — a real device, probed for what it holds;
* ``loop_device(size)`` — a context manager: a file in ``/dev/shm`` (tmpfs) behind a
  loop device with ``--direct-io=on``; always detached on exit (root only).

One way to name them everywhere (``parse_spec``): ``scratch``, ``loop`` / ``loop:SIZE``, a
path, or a list. ``open_target(spec)`` opens one in a ``with`` block; ``use(spec)`` is the
notebook form that gives loop devices back when the kernel stops or a cell fails.

Reads of never-written blocks measure the allocator, not the I/O path, so the scratch
file and a loop device's tmpfs file are written whole once when created (``write_once``);
``Target.state`` says so, and says "not preconditioned" for a device or file iolab did
not write (``iolab.studies.precondition`` brings an SSD to SNIA's steady state on request).

``holds_data(device)`` says what a write would destroy: a filesystem signature, partitions,
a mount, swap or holders. The guard that judges the job fio will really run is
``iolab.machine.jobcheck.guard_job``.

A loop device and its file are in the ledger (``iolab.machine.ledger``) while they exist; what a
killed process left is freed by ``iolab.runs.repair``, which every iolab command runs first.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import owned, signals
from ..core.errors import DiskFullError, TargetError, ToolMissing
from ..core.paths import TARGET_HELP  # noqa: F401 (TARGET_HELP: named here too)
from ..core.paths import scratch_dir as default_scratch
from ..core.progress import bar
from ..core.readable import readable_bytes
from ..core.validate import list_param, parse_size
from . import ledger

NOT_PRECONDITIONED = (
    "not preconditioned: as found (an SSD's figures depend on what was written "
    "before; iolab.studies.precondition reaches SNIA steady state on request)"
)
WRITTEN_ONCE = "written whole once when created (no read hits a never-written block)"
FILL_CHUNK = 1 << 20


def write_once(f, size: int, what: str) -> None:
    """Write ``size`` bytes of a fixed pseudo-random pattern to the open binary file ``f``
    from its start, with a progress bar named ``what``, and flush it to the device."""
    import random  # the pattern, not a source of randomness: seeded, the same every time

    pattern = random.Random(0).randbytes(FILL_CHUNK)
    view = memoryview(pattern)
    left = size
    with bar(None, f"writing {what} once", unit="MiB", total=-(-size // FILL_CHUNK), delay=1) as progress:
        while left > 0:
            left -= f.write(view[: min(left, FILL_CHUNK)])
            progress.update(1)
        f.flush()
        os.fsync(f.fileno())


def _written_whole(path: Path, size: int) -> bool:
    """Whether ``path`` holds ``size`` bytes that were all written (no holes left by truncate)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    return st.st_size >= size and st.st_blocks * 512 >= size


def _write_scratch(path: Path, size: int) -> None:
    """The scratch file, written whole under a temporary name and renamed into place, so an
    interrupted fill never leaves a half-written file behind under the real name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # iolab.runs.leftovers knows this name
    entry = ledger.record(  # a SIGKILL while writing: the next iolab command removes the half
        "file", path=str(tmp), what="half-written scratch file", undo=lambda: tmp.unlink(missing_ok=True)
    )
    try:
        with open(tmp, "wb") as f:
            write_once(f, size, f"the scratch file ({size / 2**20:.0f} MiB)")
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise DiskFullError(
                f"no space left to write the scratch file {path}: free space on {path.parent} or pass a smaller size"
            ) from exc
        raise
    finally:
        entry.release()


@dataclass
class Target:
    """A target fio can run against. ``fio_options`` are what to merge into the job."""

    kind: str  # scratch | file | block | loop
    path: Path
    size_bytes: int | None = None
    device: str | None = None  # kernel name under /sys/block (nvme0n1, loop3), if any
    notes: list[str] = field(default_factory=list)
    released: bool = False  # a loop device given back (``release``): runs refuse it
    state: str = NOT_PRECONDITIONED  # what was written to it before the runs (module docstring)

    @property
    def fio_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"filename": str(self.path)}
        if self.kind in ("scratch", "file") and self.size_bytes:
            opts["size"] = self.size_bytes
        return opts

    def describe(self) -> str:
        size = f", {self.size_bytes / 2**20:.0f} MiB" if self.size_bytes else ""
        dev = f" (/sys/block/{self.device})" if self.device and self.kind != "block" else ""
        return f"{self.kind} {self.path}{dev}{size}"


def scratch_file(directory: str | os.PathLike, size: str | int = "1g", name: str = "iolab-scratch.dat") -> Target:
    """The default target: a scratch file of ``size`` bytes under ``directory``.

    The file is written whole once (``write_once``) when it is missing, shorter than
    ``size`` or has holes, and reused otherwise; so fio never lays it out inside a measured
    run and no read hits a never-written block. The device below it is recorded so its
    queue knobs can be snapshot."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if path.is_symlink() or (path.exists() and path.stat().st_nlink > 1):
        raise TargetError(
            f"the scratch file {path} is a symbolic or hard link, so it may be someone's data: "
            "iolab writes only a scratch file of its own; remove the link (the file it points "
            "to stays), or choose another --scratch-dir"
        )
    if path.exists() and not owned.is_owned(path):  # a file of the same name iolab did not write: a user's
        raise TargetError(
            f"{path} exists and iolab did not write it ({owned.why_not_owned(path)}): "
            "iolab writes only a scratch file of its own; move that file away, or choose another --scratch-dir"
        )
    size_bytes = parse_size(size)
    free = shutil.disk_usage(directory).free
    have = path.stat().st_size if path.exists() else 0
    if size_bytes - have > free:
        raise TargetError(
            f"scratch file of {readable_bytes(str(size_bytes))} does not fit in "
            f"{directory} ({readable_bytes(str(free))} free): pass a smaller size"
        )
    if not _written_whole(path, size_bytes):
        _write_scratch(path, max(size_bytes, have))
        owned.mark(path)
    return Target("scratch", path, size_bytes, device=device_of_path(directory), state=WRITTEN_ONCE)


def existing_path(path: str | os.PathLike) -> Target:
    """A file or block device the user names. Raises TargetError when it does not exist."""
    p = Path(path).absolute()
    if not p.exists():
        near = difflib.get_close_matches(str(path).strip().lower(), KEYWORDS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise TargetError(f"target {p} does not exist{hint}: give {TARGET_HELP}")
    mode = p.stat().st_mode
    if stat.S_ISBLK(mode):
        return Target("block", p, block_size_bytes(p.resolve().name), device=p.resolve().name)
    if stat.S_ISCHR(mode):
        return Target("char", p, None, device=p.name)  # e.g. /dev/ng0n1 for io_uring_cmd
    if stat.S_ISREG(mode):
        return Target("file", p, p.stat().st_size, device=device_of_path(p))
    raise TargetError(f"target {p} is neither a regular file nor a block or character device")


KEYWORDS = ("scratch", "loop")


def parse_spec(spec: str | os.PathLike) -> tuple[str, str | None]:
    """How a target is named, everywhere (notebooks, CLI, studies): ``('scratch', size)``,
    ``('loop', size)`` or ``('path', path)``; ``size`` None means the caller's default.
    Keywords ignore case and stray spaces; ``default`` and ``''`` mean scratch."""
    text = str(spec).strip()
    word, _, size = text.partition(":")
    word = word.strip().lower()
    if word in ("scratch", "default", "") and not text.startswith(("/", ".")):
        return "scratch", size.strip() or None
    if word == "loop":
        return "loop", size.strip() or None
    return "path", text


def resolve(spec: str | os.PathLike, scratch_dir: str | os.PathLike, size: str | int = "1g") -> Target:
    """``'scratch'`` -> the default scratch file; a path -> that path. (``'loop'`` needs a
    context: ``open_target`` or ``use``.)"""
    kind, value = parse_spec(spec)
    if kind == "scratch":
        return scratch_file(scratch_dir, value or size)
    if kind == "loop":
        raise TargetError(
            f"{str(spec).strip()!r} is a loop device, which must be released: "
            "use iolab.machine.target.use(...) in a notebook or open_target(...) in a with block"
        )
    return existing_path(value)


def block_size_bytes(dev: str) -> int | None:
    try:
        return int(Path(f"/sys/class/block/{dev}/size").read_text()) * 512
    except OSError:
        return None


def device_of_path(path: str | os.PathLike) -> str | None:
    """Kernel name of the whole block device holding ``path`` (``vda``, ``nvme0n1``), or None
    (tmpfs, overlay)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    link = Path(f"/sys/dev/block/{major}:{minor}")
    if not link.exists():
        return None
    real = link.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


# ---------------------------------------------------------------- the data guard
def holds_data(device_path: str | os.PathLike) -> list[str]:
    """What is on a block device that a write would destroy: filesystem or RAID
    signatures (``blkid -p``), partitions, mounts, swap, holders (dm, md). Empty = blank."""
    dev = Path(device_path).resolve()
    name = dev.name
    found: list[str] = []
    if shutil.which("blkid"):
        probe = subprocess.run(["blkid", "-p", "-o", "export", str(dev)], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            info = dict(line.split("=", 1) for line in probe.stdout.splitlines() if "=" in line)
            what = info.get("TYPE") or info.get("PTTYPE") or "unknown"
            found.append(f"a {what} signature (blkid -p)")
    else:
        found.append("no blkid to check for signatures (install util-linux)")
    sysdir = Path(f"/sys/class/block/{name}")
    parts = sorted(p.name for p in sysdir.glob(f"{name}*") if (p / "partition").exists())
    if parts:
        found.append(f"partitions {', '.join(parts)}")
    majmin = {_read(sysdir / "dev")} | {_read(sysdir / p / "dev") for p in parts}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[2] in majmin:
            found.append(f"a mount at {fields[4]}")
    for line in Path("/proc/swaps").read_text().splitlines()[1:]:
        swapdev = Path(line.split()[0])
        if swapdev.exists() and swapdev.resolve().name in {name, *parts}:
            found.append(f"active swap {line.split()[0]}")
    holders = [h.name for h in (sysdir / "holders").glob("*")] if (sysdir / "holders").exists() else []
    if holders:
        found.append(f"holders {', '.join(holders)} (device-mapper / md)")
    return found


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return ""


def loop_backing(name: str) -> str | None:
    """The file behind loop device ``name`` (``loop3``), or None when it is not attached."""
    text = _read(Path(f"/sys/block/{name}/loop/backing_file"))
    return text.removesuffix(" (deleted)") or None


LOOP_DETACH_WAIT_S = 5.0  # how long a detach waits for the kernel to finish it


def detach_loop(device: str, backing: str) -> str:
    """Detach loop ``device`` if it is still backed by ``backing`` (by the time it is detached
    another program may have attached the same /dev/loopN: it is left alone), and say what was
    done. ``losetup -d`` only marks a device another program holds open (udev's probe, a
    scan of the block devices) to be detached when that program closes it, so this waits up
    to ``LOOP_DETACH_WAIT_S`` for the kernel to finish. OSError: losetup refused."""
    name = Path(device).name
    current = loop_backing(name)
    if not current:
        return f"loop device {device} was already detached"
    if os.path.realpath(current) != os.path.join(os.path.realpath(os.path.dirname(backing)), os.path.basename(backing)):
        return f"left {device} attached: it is now backed by {current}, not iolab's {backing}"
    done = subprocess.run(["losetup", "-d", device], capture_output=True, text=True, check=False)
    if done.returncode != 0 and loop_backing(name) == current:  # not a detach that finished meanwhile
        raise OSError(f"losetup -d {device} failed: {done.stderr.strip() or f'exit {done.returncode}'}")
    deadline = time.monotonic() + LOOP_DETACH_WAIT_S
    while loop_backing(name) == current and time.monotonic() < deadline:
        time.sleep(0.05)
    if loop_backing(name) == current:
        return (
            f"loop device {device} is held open by another program: the kernel detaches it when that program "
            f"closes it (see fuser -v {device})"
        )
    return f"detached loop device {device}"


# ---------------------------------------------------------------- tmpfs-backed loop device
@contextlib.contextmanager
def loop_device(size: str | int = "1g", backing_dir: str = "/dev/shm", direct_io: bool = True) -> Iterator[Target]:
    """A loop device over a file in tmpfs, detached (by its own name) and the file removed
    on exit, whatever happens inside. Needs root and ``losetup`` (util-linux). What killed
    processes left is not freed here: ``iolab.runs.repair.recover_and_report()`` does that (every
    iolab command runs it first)."""
    if os.geteuid() != 0:
        raise TargetError("a loop device needs root: run as root, or use the scratch-file target")
    if not shutil.which("losetup"):
        raise ToolMissing("losetup")
    dev = None

    def give_back() -> None:  # at the end of the block, or at exit (iolab.machine.ledger); detaches once
        nonlocal dev
        if dev:
            said = detach_loop(dev, backing)  # OSError: the ledger keeps it for iolab cleanup
            if loop_backing(Path(dev).name) == backing:  # still attached to iolab's file: said where the user looks
                print(f"iolab: {said}", file=sys.stderr)
            dev = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(backing)

    with signals.held():
        with signals.deferred():  # the file exists only once the ledger knows it
            fd, backing = tempfile.mkstemp(prefix="iolab-loop-", suffix=".img", dir=backing_dir)
            os.close(fd)
            entry = ledger.record("loop", device=None, backing=backing, undo=give_back)
        try:
            try:
                with open(backing, "r+b") as f:
                    write_once(
                        f, parse_size(size), f"the loop device's tmpfs file ({parse_size(size) / 2**20:.0f} MiB)"
                    )
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                raise TargetError(
                    f"no room in {backing_dir} for a {size} loop device: pass a smaller size (loop:256m) or free memory"
                ) from exc
            argv = ["losetup", "--find", "--show"]
            if direct_io:
                argv.append("--direct-io=on")
            with signals.deferred():
                out = subprocess.run(argv + [backing], capture_output=True, text=True, check=False)
                if out.returncode == 0:
                    dev = out.stdout.strip()
                    entry.update(device=dev)
            if out.returncode != 0:
                raise TargetError(f"losetup failed: {out.stderr.strip()} (is the loop module loaded?)")
            yield Target(
                "loop",
                Path(dev),
                parse_size(size),
                device=Path(dev).name,
                notes=[f"tmpfs-backed ({backing})", f"direct-io={'on' if direct_io else 'off'}"],
                state=WRITTEN_ONCE,
            )
        except BaseException:
            try:
                entry.put_back()
            except OSError as exc:  # the block's own error is the one to see; this one is said
                print(f"iolab: {exc}: the ledger keeps it for `iolab cleanup`", file=sys.stderr)
            raise
        else:
            entry.put_back()  # OSError: losetup refused, said as the block's error


def open_target(
    spec: str | os.PathLike, size: str | int = "1g", scratch_dir: str | os.PathLike | None = None
) -> contextlib.AbstractContextManager[Target]:
    """What a ``target`` parameter names (``parse_spec``), as a context manager: a loop
    device is detached and its file removed on exit; anything else is just resolved."""
    kind, value = parse_spec(spec)
    if kind == "loop":
        return loop_device(value or size)
    return contextlib.nullcontext(resolve(spec, scratch_dir or default_scratch(), size))


# ---------------------------------------------------------------- notebook-safe targets
_held: list[tuple[contextlib.ExitStack, list[Target]]] = []


def use(
    spec: str | os.PathLike | Sequence[str | os.PathLike],
    size: str | int = "1g",
    scratch_dir: str | os.PathLike | None = None,
) -> Target | list[Target]:
    """The notebook form of ``open_target``: the target(s) ``spec`` names (a list, or a
    list literal string from papermill, gives a list), held until ``release()``, the
    kernel stops, or a cell fails — whichever comes first — so a loop device and its
    /dev/shm file never outlive the notebook. No ``__enter__``/``__exit__`` by hand."""
    specs = list_param("target", spec) if _is_list(spec) else [spec]
    stack = contextlib.ExitStack()
    try:
        targets = [stack.enter_context(open_target(s, size, scratch_dir)) for s in specs]
    except BaseException:
        stack.close()
        raise
    _held.append((stack, targets))
    _install_release_hooks()
    return targets if _is_list(spec) else targets[0]


def _is_list(spec) -> bool:
    return isinstance(spec, (list, tuple)) or str(spec).strip().startswith("[")


def release() -> None:
    """Give back every target ``use`` holds (newest first): loop devices detached, their
    files removed, the Target objects marked released so runs refuse them."""
    while _held:
        stack, targets = _held.pop()
        for t in targets:
            t.released = t.kind == "loop"
        try:
            stack.close()
        except OSError as exc:  # losetup refused: said, and the others still given back
            print(f"iolab: {exc}: the ledger keeps it for `iolab cleanup`", file=sys.stderr)


def _install_release_hooks() -> None:
    """``release`` at interpreter exit (the kernel stops) and after a cell that raised."""
    if getattr(_install_release_hooks, "done", False):
        return
    atexit.register(release)
    try:
        from IPython import get_ipython  # optional, and slow to import: only once a target is held

        shell = get_ipython()
    except ImportError:  # plain Python: atexit is enough
        shell = None
    if shell is not None:
        shell.events.register("post_run_cell", _release_after_error)
    _install_release_hooks.done = True


def _release_after_error(result) -> None:
    if result.error_in_exec is not None and any(t.kind == "loop" for _, ts in _held for t in ts):
        release()
        print(
            "iolab: a cell failed, so the loop device(s) were released (detached, file removed). "
            "Fix the cell, then re-run from the cell that opens the target.",
            file=sys.stderr,
        )
