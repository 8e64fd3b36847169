"""The NVMe lab (iolab.nvmelab.vm, nvmelab_image): its guest's pieces, its refusals, and the NVMe tier
(tests/test_nvme_tier.py) run inside one guest boot."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.core.errors import InputError
from iolab.nvmelab import image as nvmelab_image
from iolab.nvmelab import vm as nvmelab
from support.cli import cli_here
from support.marks import is_root
from support.nvme_tier import result_path, spec, tier
from support.paths import REPO

LAB_MISSING = nvmelab_image.missing_tools()
needs_lab = pytest.mark.skipif(
    bool(LAB_MISSING) or not is_root,
    reason=f"the NVMe lab needs root and {' '.join(LAB_MISSING) or 'nothing more'} (make setup-nvmelab)",
)


def boot_or_skip(run, *args, **kw):
    """The lab's tests are skipped, with QEMU's own words, only where QEMU cannot start at all."""
    try:
        return run(*args, **kw)
    except nvmelab.QemuCannotStart as exc:
        pytest.skip(str(exc))


# The tier's guest runs its two vCPUs in one host thread (tests/support/nvme_tier.py): under TCG
# it takes about 90 s of one host CPU and ends well before the other tests, at the niceness of
# the tests. Niced (3, its scheduler group too) it was starved enough beside them to fail a
# plausibility check and took up to 250 s (at 10: ended last, one CPU idle for the suite's last
# 45 s). Under pytest-xdist the controller boots it in the background once the workers have collected
# this test and the load-sensitive tests at the suite's head have ended (tests/support/nvme_tier.py,
# started from tests/conftest.py), and this test, scheduled last, reads its result: no worker
# waits two minutes for the guest. Without xdist (make test-nvme) the test boots it itself.
@pytest.mark.nvme_boot
@needs_lab
def test_the_nvme_tier_in_one_guest_boot(request):
    """One boot runs every test of the tier; its exit status is pytest's inside the guest."""
    started = result_path(request.config)
    if started.with_suffix(".started").exists():
        deadline = time.monotonic() + 900
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert started.exists(), "the NVMe tier's background boot gave no result in 15 minutes"
        result = json.loads(started.read_text())
    else:
        result = tier()
    if "skip" in result:
        pytest.skip(result["skip"])
    assert "error" not in result, result.get("error")
    said = result["said"]
    print(said, f"\nboot {result['boot_s']:.1f} s, all {result['wall_s']:.1f} s ({result['accel']})")
    assert result["returncode"] == 0, said[-4000:]
    assert " passed" in said and "skipped" not in said and "deselected" not in said  # every tier test ran


LAB_CHECK = """
import json, os, sys
from pathlib import Path
from iolab.core import owned
print(json.dumps({"model": Path("/sys/class/nvme/nvme0/model").read_text().strip(),
                  "poll_queues": Path("/sys/module/nvme/parameters/poll_queues").read_text().strip(),
                  "ng": Path("/dev/ng0n1").is_char_device(), "flag": os.environ.get("IOLAB_NVMELAB", ""),
                  "owned": owned.is_owned(sys.argv[1])}))
sys.exit(3)
"""


@needs_lab
def test_a_command_in_the_lab_sees_the_nvme_controller_and_its_exit_status_comes_out():
    """The lab's own plumbing, quickly (one controller, no fio: the tier above runs the kit's
    NVMe paths): the controller and its char node, poll queues, the lab's flag in the
    environment, the command's exit status as the lab's, and a page iolab made on the host
    taken as iolab's in the guest (over 9p: owned.vouch)."""
    import json

    from iolab.core import owned, paths

    page = paths.data_dir() / f"lab-owned-check-{os.getpid()}.json"
    page.write_text("{}")
    owned.mark(page)
    lines = []
    try:
        result = boot_or_skip(
            nvmelab.run,
            [sys.executable, "-c", LAB_CHECK, str(page)],
            nvmelab.LabSpec(controllers=1, namespace_size="16m"),
            out=lines.append,
        )
    finally:
        owned.forget(page)
        page.unlink()
    said = json.loads(next(line for line in lines if line.startswith("{")))
    assert result.returncode == 3 and result.accel in ("tcg", "kvm") and result.boot_s < 60
    assert said == {"model": "QEMU NVMe Ctrl", "poll_queues": "2", "ng": True, "flag": said["flag"], "owned": True}
    assert "emulator" in said["flag"]


@needs_lab
def test_a_hung_guest_is_killed_and_its_files_removed():
    spec = nvmelab.LabSpec(controllers=1, namespace_size="16m", cpus=1, poll_queues=1, memory_mb=512, timeout_s=6)
    with pytest.raises(nvmelab_image.LabError, match="did not finish within 6 s; it was killed"):
        nvmelab.run(["sleep", "600"], spec)
    assert not list(nvmelab_image.lab_dir().glob(f"boot-{os.getpid()}-*"))
    left = subprocess.run(["pgrep", "-f", f"qemu-system.*boot-{os.getpid()}-"], capture_output=True, text=True)
    assert not left.stdout.strip()


@needs_lab
def test_a_guest_kernel_crash_ends_the_run_with_the_kernels_words():
    """oops=panic: a crash (here sysrq's; in the lab, 6.1's polled passthrough once oopsed at
    ring exit) powers the guest off at once instead of leaving the command hung."""
    spec = nvmelab.LabSpec(controllers=1, namespace_size="16m", cpus=1, poll_queues=1, memory_mb=512, timeout_s=60)
    with pytest.raises(
        nvmelab_image.LabError,
        match=r"kernel crashed while the command ran in sysrq_handle_crash.*"
        r"Kernel panic - not syncing: sysrq triggered crash",
    ):
        nvmelab.run(["sh", "-c", "echo c > /proc/sysrq-trigger; sleep 600"], spec, out=lambda line: None)
    assert not list(nvmelab_image.lab_dir().glob(f"boot-{os.getpid()}-*"))


@needs_lab
def test_qemu_refusing_to_start_is_its_own_error_and_leaves_nothing():
    """What the lab's tests skip on (boot_or_skip): QEMU's own refusal, here 100 TB of memory."""
    with pytest.raises(nvmelab.QemuCannotStart, match="QEMU could not start here: qemu-system.*memory"):
        nvmelab.run(["true"], nvmelab.LabSpec(controllers=1, namespace_size="16m", memory_mb=10**8))
    assert not list(nvmelab_image.lab_dir().glob(f"boot-{os.getpid()}-*"))


def test_the_initramfs_is_a_cpio_the_kernel_and_cpio_read(tmp_path):
    archive = tmp_path / "a.cpio"
    archive.write_bytes(
        nvmelab_image.cpio_newc(
            [("bin", 0o40755, b""), ("bin/x", 0o100755, b"abc"), ("odd-name-length", 0o100644, b"12345")]
        )
    )
    listed = subprocess.run(["cpio", "-it", "--quiet"], stdin=archive.open("rb"), capture_output=True, text=True)
    assert listed.stdout.split() == ["bin", "bin/x", "odd-name-length"]
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], stdin=archive.open("rb"), cwd=out, check=True)
    assert (out / "bin/x").read_bytes() == b"abc" and (out / "odd-name-length").read_bytes() == b"12345"


@pytest.mark.skipif(
    nvmelab_image.guest_kernel() is None, reason="no kernel in /boot (apt-get install linux-image-amd64)"
)
def test_modules_load_after_their_dependencies():
    _, _, modules = nvmelab_image.guest_kernel()
    names = [p.name for p in nvmelab_image.module_files(modules)]
    assert names.index("nvme-core.ko") < names.index("nvme.ko") and names.index("9pnet.ko") < names.index("9p.ko")
    assert names.index("virtio.ko") < names.index("virtio_pci.ko") and len(names) == len(set(names))


def _compress(data: bytes, how: str) -> bytes:
    import bz2
    import gzip
    import lzma

    import zstandard

    return {
        "gzip": lambda: gzip.compress(data),
        "xz": lambda: lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32),
        "zstd": lambda: zstandard.ZstdCompressor().compress(data),
        "bzip2": lambda: bz2.compress(data),
    }[how]()


@pytest.mark.parametrize("how", ["gzip", "xz", "zstd", "bzip2"])
def test_a_kernel_compressed_any_way_is_unpacked(tmp_path, how):
    """A bzImage as newer Debian (zstd) and older or other kernels (gzip, bzip2) pack it: a
    real ELF (busybox) compressed here, behind a setup header holding decoy magic bytes."""
    elf = Path(nvmelab_image.BUSYBOX).read_bytes()[: 1 << 20]
    decoys = b"".join(nvmelab_image.KERNEL_MAGICS.values()) * 3
    vmlinuz = tmp_path / "vmlinuz"
    vmlinuz.write_bytes(b"MZ" + bytes(4000) + decoys + _compress(elf, how) + b"\0trailer" * 64)
    assert nvmelab_image.extract_vmlinux(vmlinuz) == elf
    vmlinuz.write_bytes(b"MZ" + decoys + bytes(100))
    with pytest.raises(nvmelab_image.LabError, match="no gzip, xz, zstd, bzip2 or lzma stream"):
        nvmelab_image.extract_vmlinux(vmlinuz)


@pytest.mark.skipif(
    nvmelab_image.guest_kernel() is None, reason="no kernel in /boot (apt-get install linux-image-amd64)"
)
def test_compressed_modules_go_into_the_initramfs_plain(tmp_path):
    """Modules shipped as .ko.zst, .ko.xz and .ko.gz (newer Debian and Ubuntu): the kernel's own
    nvme modules compressed here, listed so in modules.dep, come out byte for byte as .ko."""
    _, _, modules = nvmelab_image.guest_kernel()
    host = modules / "kernel/drivers/nvme/host"
    plain = {name: (host / f"{name}.ko").read_bytes() for name in ("nvme-core", "nvme")}
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel/nvme-core.ko.zst").write_bytes(_compress(plain["nvme-core"], "zstd"))
    (tmp_path / "kernel/nvme.ko.xz").write_bytes(_compress(plain["nvme"], "xz"))
    (tmp_path / "modules.dep").write_text("kernel/nvme-core.ko.zst:\nkernel/nvme.ko.xz: kernel/nvme-core.ko.zst\n")
    kos = nvmelab_image.module_files(tmp_path, names=("nvme",))
    assert [nvmelab_image.module_name(k) for k in kos] == ["nvme-core.ko", "nvme.ko"]
    assert [nvmelab_image.module_data(k) for k in kos] == [plain["nvme-core"], plain["nvme"]]
    gz = tmp_path / "kernel/bad.ko.gz"
    gz.write_bytes(_compress(b"not a module", "gzip"))
    with pytest.raises(nvmelab_image.LabError, match="does not hold a kernel module"):
        nvmelab_image.module_data(gz)


@pytest.mark.parametrize(
    "field,value,said",
    [
        ("controllers", 0, "nvmelab settings: controllers is 0, not a whole number from 1 to 8"),
        ("cpus", 99, "cpus is 99"),
        ("memory_mb", 64, "at least 512"),
        ("namespace_size", "1k", "at least 16m"),
        ("cpu", 2, "unknown key 'cpu' \\(did you mean 'cpus'\\?\\)"),
        ("cpus", 1, "poll_queues=2 is more than the guest's 1 vCPU"),
        ("tcg_thread", "many", "tcg_thread is 'many', not 'multi' or 'single'"),
    ],
)
def test_a_lab_spec_out_of_range_is_refused(field, value, said):
    with pytest.raises(InputError, match=said):  # the lab's settings, checked as a file is (iolab.core.schema)
        nvmelab.LabSpec(**{field: value})


def test_topology_options_become_qemu_devices_and_only_the_labs_ports_take_aer_requests():
    """The tier's guest (tests/support/nvme_tier.py): its QEMU options, what the lab calls it, and
    the console requests for AER errors the host answers (a monitor that records them)."""
    lab = spec()
    argv = nvmelab._topology(lab)
    assert argv == [
        "-object",
        "memory-backend-ram,id=mem0,size=1024M",
        "-numa",
        "node,nodeid=0,cpus=0-0,memdev=mem0",
        "-object",
        "memory-backend-ram,id=mem1,size=1024M",
        "-numa",
        "node,nodeid=1,cpus=1-1,memdev=mem1",
        "-device",
        "pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,bus=pcie.0",
        "-device",
        "pcie-root-port,id=rp2,bus=pcie.0,chassis=3,x-speed=2_5,x-width=1",
        "-device",
        "pcie-root-port,id=rp3,bus=pxb1,chassis=4,x-speed=16,x-width=32",
    ]
    multi = nvmelab.LabSpec(**{**lab.model_dump(), "tcg_thread": "multi"})  # QEMU's default
    assert (
        "(controller 2 behind a root port capped at 2.5 GT/s x1; controller 3 behind a root port on NUMA node 1 "
        "(pxb-pcie)): an emulator's numbers" in nvmelab.describe(multi, "tcg")
    )
    assert lab.tcg_thread == "single"  # iolab nvmelab --tcg-thread single
    assert (  # what every run in that guest records of it
        "on NUMA node 1 (pxb-pcie); its vCPUs in one host thread (TCG thread=single))" in nvmelab.describe(lab, "tcg")
    )
    assert "thread" not in nvmelab.describe(lab, "kvm") + nvmelab.describe(multi, "tcg")
    accel = {
        (spec.tcg_thread, mode): argv[argv.index("-accel") + 1]
        for spec in (multi, lab)
        for mode in ("tcg", "kvm")
        for argv in [nvmelab._qemu_argv(Path("k"), Path("i"), [], [], spec, mode)]
    }
    assert accel == {  # QEMU's default kept as it was; the vCPUs take turns in one host thread
        ("multi", "tcg"): "tcg",
        ("multi", "kvm"): "kvm",
        ("single", "tcg"): "tcg,thread=single",
        ("single", "kvm"): "kvm",
    }

    class Recorder:
        said = []

        def hmp(self, line):
            self.said.append(line)
            return "OK id: rp2 root bus: 0000:00, bus: 0 devfn: 6.0\r\n"

    monitor = Recorder()
    assert nvmelab._answer_aer("IOLAB-NVMELAB-AER rp2 COMP_TIME\r", lab, monitor).startswith(
        "lab: AER COMP_TIME on rp2 through QEMU's monitor: OK id: rp2"
    )
    assert nvmelab._answer_aer("IOLAB-NVMELAB-AER rp0 COMP_TIME", lab, monitor).startswith(
        "lab: no AER injected: rp0 is none of this guest's root ports (rp2, rp3)"
    )
    assert nvmelab._answer_aer("IOLAB-NVMELAB-AER rp2 RCVR; quit", lab, monitor) is None  # not a request
    assert monitor.said == ["pcie_aer_inject_error rp2 COMP_TIME"]
    with pytest.raises(InputError, match="nvmelab slot: speed: 3 GT/s is not a link speed .* give 2.5, 5, 8, 16"):
        nvmelab.Slot(speed=3)
    with pytest.raises(InputError, match="a slot on NUMA node 1 needs a vCPU on each node"):
        nvmelab.LabSpec(cpus=1, poll_queues=1, slots=(nvmelab.Slot(node=1),))
    with pytest.raises(InputError, match="at most one Slot"):
        nvmelab.LabSpec(controllers=1, slots=(None, nvmelab.Slot()))
    # the same topology from the command line (iolab nvmelab --slot): the tier's four controllers
    assert nvmelab.slots_from(["2:speed=2.5,width=1", "3:node=1"], 4) == lab.slots
    for bad, said in (
        ("5:node=1", "controller 5 is not one of the 4 controllers"),
        ("1:sped=2", "unknown key 'sped' (did you mean 'speed'?)"),
        ("node=1", "write INDEX:key=value"),
        ("1:speed=2.5,speed=16", "speed given twice"),
    ):
        with pytest.raises(InputError, match=re.escape(said)):
            nvmelab.slots_from([bad], 4)


def test_the_command_line_refuses_what_it_cannot_run(tmp_path, monkeypatch):
    done = cli_here("nvmelab")
    assert done.returncode == 1 and "give a notebook" in done.stderr
    done = cli_here("nvmelab", "-p", "x", "1", "--", "nvme", "list")
    assert done.returncode == 1 and "-p sets a notebook's parameter" in done.stderr
    with pytest.raises(nvmelab_image.LabError, match="is not a notebook"):
        nvmelab.run_notebook(tmp_path / "missing.ipynb")
    with pytest.raises(nvmelab_image.LabError, match="no command given"):
        nvmelab.run([])
    booted = []  # a misspelt parameter is refused before the guest boots (its build comes first)

    def no_boot(*args, **kw):
        booted.append(args)
        raise AssertionError("the guest was booted")

    monkeypatch.setattr(nvmelab, "build", no_boot)
    done = cli_here("nvmelab", "--slot", "1:speed=2.5", "--slot", "1:node=1", "--", "true")
    assert done.returncode == 1 and "--slot '1:node=1': controller 1 is given twice" in done.stderr
    done = cli_here("nvmelab", str(REPO / "notebooks/02_single_core_tuning_ladder.ipynb"), "-p", "runtime", "1")
    assert done.returncode == 1 and "has no parameter(s) runtime" in done.stderr and "runtime_s" in done.stderr
    assert not booted
    assert isinstance(nvmelab_image.LabError("x"), Exception) and not issubclass(nvmelab_image.LabError, InputError)


def test_what_the_guest_could_not_start_is_refused_before_the_boot_in_one_line(tmp_path, monkeypatch):
    def no_boot(*args, **kw):
        raise AssertionError("the guest was booted")

    monkeypatch.setattr(nvmelab, "build", no_boot)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not a program\n")
    done = cli_here("nvmelab", "--", "no-such-command-iolab", "--flag")  # as a shell: 127
    assert (done.returncode, done.stderr.count("\n")) == (127, 1) and "command not found" in done.stderr
    done = cli_here("nvmelab", "notes.txt")  # a file named where a notebook was meant
    assert (done.returncode, done.stderr.count("\n")) == (1, 1) and "neither a notebook" in done.stderr
    for path, what in ((tmp_path / "notes.txt", "not executable"), (tmp_path, "a folder")):
        done = cli_here("nvmelab", "--", str(path))
        assert (done.returncode, done.stderr.count("\n")) == (1, 1) and what in done.stderr
    with pytest.raises(nvmelab.CommandNotFound, match="no such file"):
        nvmelab.run([str(tmp_path / "gone.sh")])
    assert "Traceback" not in done.stderr


def test_a_lab_notebook_gets_the_lab_defaults_it_has_and_the_callers_win():
    import json

    argv, output = nvmelab.notebook_job(REPO / "notebooks/03_io_uring_per_core.ipynb", {"runtime_s": 0.5})
    assert json.loads(argv[-1]) == {"target": "/dev/nvme0n1", "polled": True, "runtime_s": 0.5}
    assert output.name == "03_io_uring_per_core.nvmelab.ipynb"
    argv, _ = nvmelab.notebook_job(
        REPO / "notebooks/06_kernel_io_path.ipynb", {"target": "/dev/nvme1n1"}, nvmelab.LabSpec(controllers=3)
    )
    assert json.loads(argv[-1]) == {
        "target": "/dev/nvme1n1",
        "devices": ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"],
    }
