"""The NVMe lab: a command or a notebook run inside a QEMU guest whose SSDs are QEMU's
emulated NVMe controllers, driven by Debian's own kernel and its real ``nvme`` driver.

    result = nvmelab.run(["fio", "--name=x", "--filename=/dev/nvme0n1", ...])
    result.returncode, result.boot_s, result.accel

What the guest is (facts from a trial on this project's VM, ``shared/DESIGN.md``):

* Debian's ``linux-image-amd64`` kernel with a busybox-static initramfs that loads
  virtio-pci, 9p and nvme (``poll_queues=N``: polled completions work), built once by
  ``iolab.nvmelab.image``;
* the host's root shared read-only over 9p (``cache=loose``: much faster than without,
  benchmarks/README.md), so the
  checkout, its venv, fio, perf and nvme-cli are the host's own; the data folder and
  ``papermill_runs/`` shared read-write at the same paths, so runs land in the host's runs
  folder; tmpfs on /run and /tmp (the kit's ledger and locks);
* ``controllers`` emulated NVMe controllers (``-device nvme``), each with one namespace backed
  by a sparse file of ``namespace_size`` made for this boot and removed after it:
  ``/dev/nvme0n1``, ``/dev/ng0n1``, ...

KVM is used when /dev/kvm opens, TCG otherwise (these VMs: about 6 s to the command). Every
figure measured in the lab is an emulator's, never a device's: the guest's environment carries
``IOLAB_NVMELAB`` (what the lab is), every run's snapshot records it as ``emulated`` and the
write-ups say so in a banner.

The argv crosses into the guest as JSON (never as shell text) and is exec'd there by the
host's own Python; the guest prints the command's exit status on its console (QEMU's own exit
status does not carry it), and that status is the lab's. A guest that outlives ``timeout_s``
is killed by its pid and its files removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from ..core import owned, paths
from ..core.atomic import write_json
from ..core.errors import InputError
from ..core.outputs import claim_output
from ..core.runfiles import quote
from ..core.schema import Settings, Word, refusal, whole
from ..core.validate import parse_size
from .image import EXIT, QEMU, START, LabError, build, cpio_newc, guest_kernel, lab_dir, module_files, module_name

ENV_FLAG = "IOLAB_NVMELAB"

# Under TCG, numpy keeps to its x86-64-v2 baseline: with the AVX2 kernels it picks on QEMU's
# "max" CPU, the kernel of notebook 06 died of a general protection fault in numpy's
# _multiarray_umath, twice (TCG's young AVX2 emulation). A Nehalem CPU avoided it too but
# made the whole guest a third slower.
TCG_NUMPY = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}
KERNEL_OOPS = re.compile(r"^\[\s*\d+\.\d+\] (general protection fault|BUG: |Oops|kernel BUG|Kernel panic)")


class QemuCannotStart(LabError):
    """QEMU itself refused to start on this machine (its own error, before any guest ran)."""


LINK_SPEEDS = {2.5: "2_5", 5: "5", 8: "8", 16: "16"}  # GT/s -> QEMU's x-speed (-device pcie-root-port,help)
LINK_WIDTHS = (1, 2, 4, 8, 12, 16, 32)  # QEMU's x-width


def _speed(speed: float) -> float:
    if speed not in LINK_SPEEDS:
        raise ValueError(
            f"{speed:g} GT/s is not a link speed QEMU's pcie-root-port takes: give "
            + ", ".join(f"{s:g}" for s in LINK_SPEEDS)
        )
    return speed


def _width(width: int) -> int:
    if width not in LINK_WIDTHS:
        raise ValueError(
            f"x{width} is not a link width QEMU's pcie-root-port takes: give {', '.join(map(str, LINK_WIDTHS))}"
        )
    return width


def _size(size: str) -> str:
    if parse_size(size, "namespace_size") < 16 << 20:
        raise ValueError(f"{size!r} is too small: give at least 16m")
    return size


class Slot(Settings):
    """Where one controller sits: behind a ``pcie-root-port`` of its own (QEMU id ``rpN`` for
    controller N) whose link QEMU caps at ``speed`` GT/s x ``width`` (x-speed, x-width), under
    the root complex of guest NUMA node ``node`` (1: a ``pxb-pcie`` host bridge of its own on
    the guest's second node, bus 0x80). A controller without a slot is an integrated endpoint
    on the root bus, as QEMU puts it by default."""

    WHERE: ClassVar[str] = "nvmelab slot"
    speed: Annotated[float, AfterValidator(_speed)] = Field(
        16, description="a link speed in GT/s: 2.5, 5, 8 or 16 (QEMU's x-speed)"
    )
    width: Annotated[whole(), AfterValidator(_width)] = Field(
        32, description="a link width: 1, 2, 4, 8, 12, 16 or 32 lanes (QEMU's x-width)"
    )
    node: whole(0, 1) = Field(0, description="a guest NUMA node: 0 or 1")

    def describe(self) -> str:
        capped = (
            f"a root port capped at {self.speed:g} GT/s x{self.width}"
            if (self.speed, self.width) != (16, 32)
            else "a root port"
        )
        return capped + (" on NUMA node 1 (pxb-pcie)" if self.node else "")


def slots_from(texts: Sequence[str], controllers: int) -> tuple[Slot | None, ...]:
    """``iolab nvmelab --slot`` values, ``INDEX:key=value,...`` (``1:speed=2.5,width=1``,
    ``2:node=1``; the keys of ``Slot``), as ``LabSpec.slots`` for ``controllers``
    controllers: None where no slot was given. InputError for a malformed one, an index
    given twice or past the controllers."""
    slots: list[Slot | None] = [None] * controllers
    given: set[int] = set()
    for text in texts:
        index, sep, rest = str(text).partition(":")
        if not sep or not index.strip().isdigit():
            raise InputError(
                f"--slot {text!r}: write INDEX:key=value,... (e.g. 1:speed=2.5,width=1 or 2:node=1), "
                "INDEX a controller from 0"
            )
        i = int(index)
        if i >= controllers or i in given:
            why = "given twice" if i in given else f"not one of the {controllers} controllers (0-{controllers - 1})"
            raise InputError(f"--slot {text!r}: controller {i} is {why}")
        pairs = [part.partition("=") for part in rest.split(",") if part.strip()]
        if any(not eq for _, eq, _ in pairs):
            raise InputError(f"--slot {text!r}: each setting is key=value (speed, width, node)")
        keys = [k.strip() for k, _, _ in pairs]
        if twice := sorted({k for k in keys if keys.count(k) > 1}):
            raise InputError(f"--slot {text!r}: {', '.join(twice)} given twice: give each once")
        try:
            slots[i] = Slot(**{k.strip(): v.strip() for k, _, v in pairs})
        except InputError as exc:
            raise InputError(f"--slot {text!r}: {str(exc).removeprefix(Slot.WHERE + ': ')}") from None
        given.add(i)
    return tuple(slots)


class LabSpec(Settings):
    """The guest: ``controllers`` NVMe controllers of ``namespace_size`` (fio units) each,
    ``cpus`` vCPUs, ``memory_mb`` MiB, ``poll_queues`` per controller (nvme.poll_queues).
    ``tcg_thread``: under TCG, QEMU's ``-accel tcg,thread=``: ``multi`` (its default) runs
    each vCPU in a host thread of its own, ``single`` runs them all in one, taking turns: on a
    host whose CPUs are busy with other work a vCPU then never spins waiting for another that
    the host descheduled (benchmarks/README.md has the figures), but work the guest does in
    parallel gets one host CPU in all. ``slots``: controller i's ``Slot`` (a root port, its
    link, its NUMA node; None or absent: the root bus); a slot on node 1 gives the guest two
    NUMA nodes, the vCPUs and memory split between them. Checked when made (``Settings``):
    InputError naming the setting and what it takes."""

    WHERE: ClassVar[str] = "nvmelab settings"
    controllers: whole(1, 8) = Field(2, description="a whole number from 1 to 8 (emulated NVMe controllers)")
    namespace_size: Annotated[Word, AfterValidator(_size)] = Field(
        "1g", description="a size fio reads, at least 16m (each controller's namespace)"
    )
    cpus: whole(1, 8) = Field(2, description="a whole number from 1 to 8 (the guest's vCPUs)")
    memory_mb: whole(512) = Field(2048, description="a whole number of MiB, at least 512 (the guest's memory)")
    poll_queues: whole(0, 64) = Field(2, description="a whole number from 0 to 64 (poll queues per controller)")
    timeout_s: float = Field(900.0, gt=0, description="a positive number of seconds (the guest is killed after it)")
    tcg_thread: Literal["multi", "single"] = Field(
        "multi", description="'multi' or 'single' (TCG: a host thread per vCPU, or one for all of them)"
    )
    slots: tuple[Slot | None, ...] = Field((), description="a Slot (or None) per controller")

    @model_validator(mode="after")
    @refusal
    def _agree(self) -> LabSpec:
        if self.poll_queues > self.cpus:  # the nvme module refuses it ("insmod: Invalid argument")
            raise InputError(
                f"poll_queues={self.poll_queues} is more than the guest's {self.cpus} vCPU(s), "
                "which Linux's nvme driver refuses: give as many vCPUs (--vcpus), or fewer poll queues (--poll-queues)"
            )
        if len(self.slots) > self.controllers:
            raise InputError(f"slots: give at most one Slot (or None) per controller ({self.controllers})")
        if self.numa_nodes > 1 and self.cpus < 2:
            raise InputError("a slot on NUMA node 1 needs a vCPU on each node: give cpus=2 or more (--vcpus 2)")
        return self

    @property
    def numa_nodes(self) -> int:
        return 2 if any(s and s.node for s in self.slots) else 1

    def ports(self) -> dict[str, Slot]:
        """QEMU id of each controller's root port -> its slot (the ids ``request_aer`` names)."""
        return {f"rp{i}": s for i, s in enumerate(self.slots) if s is not None}

    def one_host_thread(self, mode: str) -> bool:
        """Whether the guest's vCPUs take turns in one host thread under accelerator ``mode``
        (``tcg_thread="single"`` under TCG; KVM runs a thread per vCPU whatever is asked)."""
        return mode == "tcg" and self.tcg_thread == "single"


DEFAULT_SPEC = LabSpec()  # the lab as it boots when nothing is asked (frozen: one is enough)


@dataclass
class LabResult:
    returncode: int
    accel: str  # "kvm" or "tcg"
    boot_s: float  # QEMU started -> the command started, seconds
    wall_s: float  # the whole boot, seconds
    console: list[str] = field(default_factory=list)  # the guest's console before the command


QEMU_BASE = [
    "-nodefaults",
    "-no-reboot",
    "-display",
    "none",
    "-monitor",
    "none",
    "-serial",
    "stdio",
]  # a console, no more


def accel() -> str:
    """ "kvm" when KVM boots a guest here, else "tcg". On this project's VMs /dev/kvm opens
    but a KVM guest fails (``-cpu host``: "failed to set MSR 0x10a") or hangs before its
    first console line, so KVM is tried once with the lab's kernel (5 s at most) and the
    answer kept in the lab folder for this host kernel and QEMU."""
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
    except OSError:
        return "tcg"
    from ..core.system import tool_version

    key = {"host_kernel": os.uname().release, "qemu": tool_version([QEMU, "--version"])}
    note = lab_dir() / "accel.json"
    try:
        kept = json.loads(note.read_text())
        if kept.get("key") == key:
            return kept["accel"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    vmlinux, _, _ = build()
    mode = "kvm" if _kvm_boots(vmlinux) else "tcg"
    write_json(note, {"key": key, "accel": mode})
    return mode


def _kvm_boots(vmlinux: Path, wait_s: float = 5.0) -> bool:
    """Does the kernel print its first line under KVM within ``wait_s``?"""
    argv = [
        shutil.which(QEMU) or QEMU,
        *QEMU_BASE,
        "-accel",
        "kvm",
        "-cpu",
        "host",
        "-m",
        "256",
        "-kernel",
        str(vmlinux),
        "-append",
        "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 rdinit=/none",
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            deadline, seen = time.monotonic() + wait_s, b""
            while time.monotonic() < deadline and b"Linux version" not in seen:
                if sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    seen += chunk
        return b"Linux version" in seen
    finally:
        proc.kill()
        proc.wait()


def describe(spec: LabSpec, mode: str) -> str:
    """What ``IOLAB_NVMELAB`` says inside the guest (and every run's snapshot records)."""
    placed = "; ".join(f"controller {port[2:]} behind {s.describe()}" for port, s in spec.ports().items())
    if spec.one_host_thread(mode):  # parallel work in the guest gets one host CPU
        placed = "; ".join(filter(None, [placed, "its vCPUs in one host thread (TCG thread=single)"]))
    return (
        f"QEMU {mode.upper()} guest with {spec.controllers} emulated NVMe controller(s) of "
        f"{spec.namespace_size}{f' ({placed})' if placed else ''}: an emulator's numbers, not a device's"
    )


# Runs in the guest under the host's Python: the argv list from its JSON file, exec'd.
EXEC = """import json, os, shutil, sys
job = json.load(open(sys.argv[1]))
os.chdir(job["cwd"])
env = job["env"]
mpl = os.path.join(env.get("HOME", "/root"), ".cache", "matplotlib")
if os.path.isdir(mpl):  # the host's font cache: a read-only home would make matplotlib rebuild it
    shutil.copytree(mpl, "/tmp/matplotlib", dirs_exist_ok=True)
    env.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
sys.stdout.flush()
try:
    os.execvpe(job["argv"][0], job["argv"], env)
except OSError as exc:  # as a shell says it: one line, 127 for a command not found, 126 for one not runnable
    print(f"iolab nvmelab: {job['argv'][0][:80]!r}: {exc.strerror}", file=sys.stderr)
    sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)
"""


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # the guest's, when iolab has none


class CommandNotFound(LabError):
    """The command to run in the lab is on no folder of the guest's PATH, or its path is not
    there: exit 127, as a shell's (``returncode``)."""

    returncode = 127


def check_command(argv: Sequence[str], cwd: str | os.PathLike | None = None) -> None:
    """Refuse before the boot what the guest could not start: ``CommandNotFound`` (exit 127)
    for a name on no folder of the PATH the guest gets, or a path that is not there; LabError
    for a file that is not a program (not executable: a notebook's name mistyped, a text file)
    or a folder. The guest sees this machine's root read-only, so what is found here is there."""
    name = str(argv[0]) if argv else ""
    shown = quote(name, 60)
    if not name.strip():
        raise LabError("nvmelab: the command is empty; give a notebook (.ipynb) or a command after '--'")
    here = Path(name)
    if "/" not in name and not shutil.which(name, path=os.environ.get("PATH") or DEFAULT_PATH):
        if here.is_file():
            raise LabError(
                f"nvmelab: {shown} is a file, but neither a notebook (.ipynb) nor a command: give a notebook, "
                "or a program's path after '--' (./script.sh)"
            )
        raise CommandNotFound(
            f"nvmelab: {shown}: command not found (on the PATH the guest gets, this machine's); give a "
            "notebook (.ipynb) or a command installed here, after '--'"
        )
    if "/" in name:
        path = Path(cwd or paths.REPO) / name  # the guest runs it in the checkout unless told
        if not path.exists():
            raise CommandNotFound(f"nvmelab: {shown}: no such file (in {path.parent}); give a notebook or a program")
        if path.is_dir() or not os.access(path, os.X_OK):
            what = "a folder" if path.is_dir() else "a file that is not executable"
            raise LabError(
                f"nvmelab: {shown} is {what}, neither a notebook (.ipynb) nor a program: give a notebook, or "
                "a program (chmod +x) after '--'"
            )


def _quote_conf(value: str) -> str:
    if "'" in value or "\n" in value:
        raise LabError(f"nvmelab: the path {value!r} cannot be shared with the guest (a quote or newline)")
    return f"'{value}'"


def _share(path: Path) -> str:
    """A folder shared with the guest, as the guest's init reads it (a space-separated list)."""
    text = str(path)
    if any(c.isspace() for c in text) or "," in text:
        raise LabError(
            f"nvmelab: {text!r} holds a space or comma, which QEMU's -virtfs and the guest's "
            "init cannot take; move the checkout (or IOLAB_DATA) to a path without them"
        )
    return text


def rw_paths() -> list[Path]:
    """The host folders the guest writes to, at the same paths: the data folder (runs), the
    executed-notebook folder, and the results history when it is kept elsewhere."""
    from ..record.history import folder

    shares = [paths.data_dir().resolve(), paths.PAPERMILL_RUNS.resolve()]
    kept = folder()
    if kept is not None and not kept.resolve().is_relative_to(shares[0]):
        shares.append(kept.resolve())
    return shares


# ---------------------------------------------------------------- QEMU's monitor
AER_REQUEST = "IOLAB-NVMELAB-AER"  # a guest's console line asking the host for an AER error
AER_LINE = re.compile(rf"{AER_REQUEST} (rp\d) ([A-Z_]{{2,24}})")


def request_aer(port: str, error: str = "COMP_TIME") -> None:
    """Inside the lab: ask the host to inject PCIe error ``error`` on root port ``port``
    (``LabSpec.ports``) through QEMU's monitor (HMP ``pcie_aer_inject_error``; its names, as
    Linux's aer-inject tool's: RCVR, BAD_TLP, REP_ROLL ... correctable; COMP_TIME,
    UNSUP ... uncorrectable, non-fatal unless the port's severity register says fatal).
    QEMU before 8.0 forwards no correctable error to the guest (hw/pci/pcie_aer.c sends an
    error message up only for uncorrectable errors with SERR# set; 8.0 added the Device
    Control branch of PCIe r6.0 figure 6-3), so on those only uncorrectable ones are counted.
    An uncorrectable one also zeroes the low half of the port's Link Capabilities (QEMU writes
    the 16-bit Device Status as 32 bits): its max_link_speed reads "Unknown" after, so read a
    port's link before injecting on it.
    The request is a console line the host reads (``_follow``): this returns at once and the
    caller waits for the port's aer_dev_* counters to move."""
    fd = os.open("/dev/console", os.O_WRONLY | os.O_NOCTTY)
    try:
        os.write(fd, f"\n{AER_REQUEST} {port} {error}\n".encode())
    finally:
        os.close(fd)


class Monitor:
    """QEMU's QMP socket, HMP commands sent through ``human-monitor-command`` (QEMU's
    docs/interop/qmp-spec: a greeting, ``qmp_capabilities``, then one reply per command,
    events between them skipped)."""

    def __init__(self, path: Path):
        self.path, self.sock, self.file = path, None, None

    def hmp(self, line: str, timeout_s: float = 10.0) -> str:
        import socket

        if self.file is None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout_s)
            self.sock.connect(str(self.path))
            self.file = self.sock.makefile("rwb")
            self.file.readline()  # {"QMP": {...}}
            self._call({"execute": "qmp_capabilities"})
        return self._call({"execute": "human-monitor-command", "arguments": {"command-line": line}})

    def _call(self, message: dict) -> str:
        self.file.write(json.dumps(message).encode() + b"\n")
        self.file.flush()
        while True:
            line = self.file.readline()
            if not line:
                raise LabError("nvmelab: QEMU's monitor closed its socket")
            reply = json.loads(line)
            if "error" in reply:
                raise LabError(f"nvmelab: QEMU's monitor refused {message['execute']}: {reply['error'].get('desc')}")
            if "return" in reply:
                return reply["return"] if isinstance(reply["return"], str) else ""

    def close(self) -> None:
        for held in (self.file, self.sock):
            if held is not None:
                with contextlib.suppress(OSError):
                    held.close()


def _answer_aer(line: str, spec: LabSpec, monitor: Monitor | None) -> str | None:
    """The host's side of ``request_aer``: the words to show for a request line, None for
    any other line. Only the spec's own root ports are named."""
    m = AER_LINE.fullmatch(line.strip())
    if not m:
        return None
    port, error = m.groups()
    if monitor is None or port not in spec.ports():
        return f"lab: no AER injected: {port} is none of this guest's root ports ({', '.join(spec.ports()) or 'none'})"
    try:
        said = monitor.hmp(f"pcie_aer_inject_error {port} {error}").strip()
    except (OSError, ValueError, LabError) as exc:
        said = f"the monitor failed: {exc}"
    return f"lab: AER {error} on {port} through QEMU's monitor: {said or 'no answer'}"


# ---------------------------------------------------------------- running
def run(
    argv: Sequence[str],
    spec: LabSpec = DEFAULT_SPEC,
    *,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    out: Callable[[str], None] | None = None,
) -> LabResult:
    """Boot the lab, run ``argv`` in it (in ``cwd``, the checkout by default) and power off.
    The command's console output goes to ``out`` line by line (stdout by default). The
    result's returncode is the command's own; LabError when the guest never reached it."""
    from ..core import owned, signals
    from ..machine import process

    argv = [str(a) for a in argv]
    if not argv:
        raise LabError("nvmelab: no command given; e.g. iolab nvmelab -- nvme list")
    check_command(argv, cwd)
    out = out or (lambda line: print(line, flush=True))
    vmlinux, base_initramfs, _ = build()
    mode = accel()
    shares = rw_paths()
    for share in shares:
        share.mkdir(parents=True, exist_ok=True)
    _remove_stale_boots()
    boot = Path(tempfile.mkdtemp(prefix=f"boot-{os.getpid()}-", dir=lab_dir()))
    proc = entry = monitor = None
    started, since_wall = time.monotonic(), time.time()
    try:
        images = []
        for i in range(spec.controllers):
            image = boot / f"nvme{i}.img"
            with open(image, "wb") as f:
                f.truncate(parse_size(spec.namespace_size))  # sparse: no space used until written
            images.append(image)
        guest_env = _guest_env(env, spec, mode)
        vouched = boot / "owned.json"  # iolab's files in the shares, as the host knows them (owned.vouch)
        vouched.write_text(json.dumps(owned.vouch(shares)))
        guest_env[owned.VOUCHED_ENV] = str(vouched)
        job, runner = boot / "argv.json", boot / "exec.py"
        runner.write_text(EXEC)
        job.write_text(json.dumps({"argv": argv, "cwd": str(Path(cwd or paths.REPO).resolve()), "env": guest_env}))
        _, _, modules_dir = guest_kernel()
        conf = "\n".join(
            [
                f"LAB_MODULES={_quote_conf(' '.join('/lib/modules/' + module_name(k) for k in module_files(modules_dir)))}",
                f"LAB_POLL_QUEUES={spec.poll_queues}",
                f"LAB_CONTROLLERS={spec.controllers}",
                f"LAB_RO={_quote_conf(_share(paths.REPO.resolve()))}",
                f"LAB_RW={_quote_conf(' '.join(_share(s) for s in shares))}",
                f"LAB_PYTHON={_quote_conf(sys.executable)}",
                f"LAB_EXEC={_quote_conf(str(runner))}",
                f"LAB_ARGV={_quote_conf(str(job))}",
                "",
            ]
        )
        initramfs = boot / "initramfs.cpio"
        initramfs.write_bytes(base_initramfs.read_bytes() + cpio_newc([("lab.conf", 0o100644, conf.encode())]))
        qemu = _qemu_argv(vmlinux, initramfs, images, shares, spec, mode)
        if spec.ports():  # AER injection (request_aer) through QEMU's monitor
            monitor = Monitor(_socket_path(boot))
            qemu += ["-qmp", f"unix:{monitor.path},server=on,wait=off"]
        proc, entry = process.spawn(
            qemu, name="qemu (nvmelab)", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        result = _follow(proc, spec, mode, started, out, monitor)
        proc.wait()
        owned.adopt(shares, since_wall)  # the pages and folders the guest marked are iolab's here too
        return result
    finally:
        if monitor is not None:
            monitor.close()
        if proc is not None:
            if proc.poll() is None:
                process.stop_group(proc, grace_s=2)
            with signals.deferred():
                entry.release()
        shutil.rmtree(boot, ignore_errors=True)


def _socket_path(boot: Path) -> Path:
    """The monitor's socket in the boot folder (a socket's path holds at most 107 bytes)."""
    path = boot / "qmp.sock"
    if len(os.fsencode(path)) > 107:
        raise LabError(
            f"nvmelab: the monitor's socket {path} is longer than a socket's path may be (107 bytes): "
            "set IOLAB_DATA to a shorter folder for a lab with root ports"
        )
    return path


def _guest_env(env: dict[str, str] | None, spec: LabSpec, mode: str) -> dict[str, str]:
    from ..machine.process import TOKEN  # the host's ledger token means nothing in the guest

    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "VIRTUAL_ENV", "PYTHONPATH")
    base = {k: v for k, v in os.environ.items() if k in keep or (k.startswith("IOLAB_") and k != TOKEN)}
    base.setdefault("PATH", DEFAULT_PATH)
    base.update(
        {
            "PYTHONDONTWRITEBYTECODE": "1",
            "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime",
            "IPYTHONDIR": "/tmp/ipython",
            "IOLAB_HEADLESS": "1",
            ENV_FLAG: describe(spec, mode),
        }
    )
    if mode == "tcg":
        base.update(TCG_NUMPY)
    base.update(env or {})
    return base


def _qemu_argv(
    vmlinux: Path, initramfs: Path, images: list[Path], shares: list[Path], spec: LabSpec, mode: str
) -> list[str]:
    argv = [
        shutil.which(QEMU) or QEMU,
        *QEMU_BASE,
        "-machine",
        "q35",
        "-accel",
        "tcg,thread=single" if spec.one_host_thread(mode) else mode,
        "-cpu",
        "max" if mode == "tcg" else "host",
        "-smp",
        str(spec.cpus),
        "-m",
        str(spec.memory_mb),
        "-kernel",
        str(vmlinux),
        "-initrd",
        str(initramfs),
        # nowatchdog, no RCU stall reports: under TCG a vCPU can be descheduled for many
        # seconds, and the soft-lockup dump landed in the middle of a notebook's output
        # oops=panic: a guest kernel that oopses powers off (panic=-1, -no-reboot) and the
        # run ends with the oops's words, not a hung command waiting for the timeout
        # no_timer_check: the boot's IO-APIC timer test counts ticks in a delay loop, and a
        # vCPU starved by a loaded host (the test suite's guest beside the other tests) failed it: a panic in
        # setup_IO_APIC before the command ran
        "-append",
        "console=ttyS0 quiet loglevel=3 panic=-1 oops=panic rdinit=/init nowatchdog rcupdate.rcu_cpu_stall_suppress=1 "
        "no_timer_check",
        # multidevs=remap: the host's /proc and /sys roots share an inode number, and without it
        # the guest's 9p client takes one for the other (/proc/stat went missing)
        "-virtfs",
        "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
    ]
    argv += [
        "-virtfs",
        f"local,path={paths.REPO.resolve()},mount_tag=ro0,security_model=none,readonly=on,multidevs=remap",
    ]
    for i, share in enumerate(shares):
        argv += ["-virtfs", f"local,path={share},mount_tag=rw{i},security_model=none"]
    argv += _topology(spec)
    for i, image in enumerate(images):
        slot = spec.slots[i] if i < len(spec.slots) else None
        argv += [
            "-drive",
            f"file={image},if=none,id=ns{i},format=raw,cache=none,aio=threads",
            "-device",
            f"nvme,serial=IOLABLAB{i:04d},drive=ns{i},bus={f'rp{i}' if slot else 'pcie.0'}",
        ]
    return argv


def _topology(spec: LabSpec) -> list[str]:
    """QEMU's options for the guest's NUMA nodes, the pxb-pcie host bridge of node 1 and each
    slot's root port (docs: QEMU's docs/pcie.txt and docs/devel/numa, ``-device pxb-pcie,help``)."""
    argv = []
    if spec.numa_nodes > 1:
        half_cpus, half_mb = spec.cpus // 2, spec.memory_mb // 2
        for node, (cpus, mb) in enumerate(
            [((0, half_cpus - 1), half_mb), ((half_cpus, spec.cpus - 1), spec.memory_mb - half_mb)]
        ):
            argv += [
                "-object",
                f"memory-backend-ram,id=mem{node},size={mb}M",
                "-numa",
                f"node,nodeid={node},cpus={cpus[0]}-{cpus[1]},memdev=mem{node}",
            ]
        argv += ["-device", "pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,bus=pcie.0"]
    for port, slot in spec.ports().items():
        argv += [
            "-device",
            f"pcie-root-port,id={port},bus={'pxb1' if slot.node else 'pcie.0'},chassis={int(port[2:]) + 1},"
            f"x-speed={LINK_SPEEDS[slot.speed]},x-width={slot.width}",
        ]
    return argv


def _follow(
    proc: subprocess.Popen,
    spec: LabSpec,
    mode: str,
    started: float,
    out: Callable[[str], None],
    monitor: Monitor | None = None,
) -> LabResult:
    """Read the guest's console until the command's exit line, answering its AER requests
    (``request_aer``) through ``monitor``; kill the guest past the timeout."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    console, buffer, boot_s, code = [], b"", None, None
    oops = culprit = None
    deadline = started + spec.timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LabError(
                f"nvmelab: the guest did not finish within {spec.timeout_s:g} s; it was killed "
                f"(pid {proc.pid}). Give a longer --timeout, or look at its console: " + " | ".join(console[-5:])
            )
        if not sel.select(timeout=min(left, 1.0)):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace").rstrip("\r")
            if boot_s is None:
                if line.strip() == START:
                    boot_s = time.monotonic() - started
                else:
                    console.append(line)
                continue
            m = re.fullmatch(rf"{EXIT} (\d+)", line.strip())
            if m:
                code = int(m.group(1))
                continue
            if code is None:
                said = _answer_aer(line, spec, monitor) if AER_REQUEST in line else None
                out(line if said is None else said)
                if oops is None and KERNEL_OOPS.search(line):
                    oops = line
                elif oops is not None and culprit is None:
                    frame = re.search(r"\]\s+(\w+)\+0x", line)  # the first frame not panic's own
                    if frame and frame.group(1) not in ("dump_stack_lvl", "dump_stack", "panic", "show_stack"):
                        culprit = line.split("]", 1)[1].strip()
    sel.close()
    wall = time.monotonic() - started
    if boot_s is None:
        said = " | ".join(line for line in console[-8:] if line.strip())
        if proc.wait() != 0 and any(line.startswith(("qemu-system", "qemu:")) for line in console):
            raise QemuCannotStart(f"nvmelab: QEMU could not start here: {said}")
        raise LabError(f"nvmelab: the guest stopped before running the command; its console said: {said}")
    if code is None and oops:
        where = f" in {culprit}" if culprit else ""
        raise LabError(
            f"nvmelab: the guest's kernel crashed while the command ran{where}: "
            f"{oops.split(']', 1)[-1].strip()} (Linux {guest_kernel()[0]}'s own failure; its whole "
            "report is on the console above). Try again, or boot a newer kernel (linux-image-amd64)"
        )
    if code is None:
        raise LabError("nvmelab: the guest stopped while the command ran (no exit status on its console)")
    return LabResult(code, mode, boot_s, wall, console)


def _remove_stale_boots() -> None:
    """Boot folders of lab runs whose iolab process is gone (killed with SIGKILL)."""
    for folder in lab_dir().glob("boot-*"):
        m = re.match(r"boot-(\d+)-", folder.name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- notebooks
def lab_defaults(spec: LabSpec) -> dict:
    """What a notebook run in the lab is given unless the caller says otherwise: the first
    emulated namespace as its target, every controller's namespace for notebook 06's one fio
    per device, polled completions (its poll queues), and the device changes the lab exists
    to try (always restored)."""
    return {
        "target": "/dev/nvme0n1",
        "opt_in_device_changes": True,
        "polled": spec.poll_queues > 0,
        "devices": [f"/dev/nvme{i}n1" for i in range(spec.controllers)] if spec.controllers > 1 else [],
    }


def notebook_output(notebook: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> Path:
    """Where a lab run of ``notebook`` goes: ``papermill_runs/<name>.nvmelab.ipynb``."""
    return Path(out_dir or paths.PAPERMILL_RUNS).resolve() / f"{Path(notebook).stem}.nvmelab.ipynb"


def notebook_job(
    notebook: str | os.PathLike,
    parameters: dict | None = None,
    spec: LabSpec = DEFAULT_SPEC,
    *,
    out_dir: str | os.PathLike | None = None,
    force: bool = False,
) -> tuple[list[str], Path]:
    """The guest command that executes ``notebook`` with ``parameters`` (papermill) and writes
    its offline write-up (``iolab.report.publish``), and the executed notebook's path in ``out_dir``
    (``papermill_runs/``). ``lab_defaults`` fill the parameters the notebook has and the
    caller did not give. A parameter the notebook lacks, or an output that would replace a file
    iolab did not write (unless ``force``: ``iolab.core.outputs``), is refused here, before any boot."""
    from ..report.publish import refuse_unknown_parameters

    notebook = Path(notebook).resolve()
    if not notebook.is_file() or notebook.suffix != ".ipynb":
        raise LabError(f"nvmelab: {notebook} is not a notebook (.ipynb) file")
    import papermill as pm

    known = pm.inspect_notebook(str(notebook))
    refuse_unknown_parameters(notebook, parameters, known)
    parameters = {**{k: v for k, v in lab_defaults(spec).items() if k in known}, **(parameters or {})}
    output = notebook_output(notebook, out_dir)
    for path in (output, output.with_suffix(".html"), output.with_name(f"{output.stem}.results.json")):
        claim_output(path, force=force, inputs=(notebook,))
    if output.parent not in rw_paths() and not any(p in output.parents for p in rw_paths()):
        raise LabError(
            f"nvmelab: the guest writes only under {', '.join(map(str, rw_paths()))}; {output.parent} is outside them"
        )
    return [
        sys.executable,
        "-m",
        "iolab.nvmelab.vm",
        "notebook",
        str(notebook),
        str(output),
        json.dumps(parameters),
    ], output


def run_notebook(
    notebook: str | os.PathLike,
    parameters: dict | None = None,
    spec: LabSpec = DEFAULT_SPEC,
    *,
    out_dir: str | os.PathLike | None = None,
    out: Callable[[str], None] | None = None,
) -> tuple[LabResult, Path]:
    """Execute ``notebook`` inside the lab (``notebook_job``); the executed notebook and its
    write-up land in ``out_dir`` (``papermill_runs/``)."""
    argv, output = notebook_job(notebook, parameters, spec, out_dir=out_dir)
    return run_notebook_job(argv, output, spec, out=out), output


def run_notebook_job(
    argv: list[str], output: Path, spec: LabSpec = DEFAULT_SPEC, *, out: Callable[[str], None] | None = None
) -> LabResult:
    """Run a ``notebook_job`` in the lab; a half-run notebook is kept (``_keep_partial``)."""
    result = None
    try:
        result = run(argv, spec, out=out)
        if result.returncode == 0:  # the guest's notes name its own view of them (9p's device and inodes)
            for path in (output, output.with_suffix(".html"), output.with_name(f"{output.stem}.results.json")):
                if path.is_file():
                    owned.mark(path)
        return result
    finally:
        if result is None or result.returncode != 0:
            _keep_partial(output)


def _keep_partial(output: Path) -> None:
    """The guest's half-executed notebook (papermill writes it to a hidden running name) as
    ``NAME.interrupted.ipynb``, when the guest crashed, hung or was stopped before renaming it."""
    from ..report.publish import keep_partial

    for running in output.parent.glob(f".{output.stem}.*.running{output.suffix}"):
        with contextlib.suppress(OSError):
            keep_partial(running, output, "interrupted")


def _guest_notebook(notebook: str, output: str, parameters: str) -> int:
    """Inside the guest: execute and publish (``run_notebook``'s other half)."""
    from ..report.publish import execute, publish

    try:
        # the host checked the outputs before the boot (notebook_job), --force or not
        executed = execute(notebook, output, json.loads(parameters), force=True)
    except Exception as exc:  # noqa: BLE001 - the guest's last word: one line, then the exit status
        print(
            f"iolab nvmelab: {Path(notebook).name} did not run in the lab: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return 1
    print(f"wrote {executed}\nwrote {publish(executed, force=True)}")
    return 0


if __name__ == "__main__":  # python -m iolab.nvmelab.vm notebook NB OUT PARAMS (in the guest)
    if len(sys.argv) == 5 and sys.argv[1] == "notebook":
        sys.exit(_guest_notebook(*sys.argv[2:]))
    sys.exit("usage: python -m iolab.nvmelab.vm notebook NOTEBOOK OUTPUT PARAMETERS_JSON (iolab nvmelab runs it)")
