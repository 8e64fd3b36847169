"""Knobs as check / read / apply / restore, on a real loop device: values really change in
/sys (read here, not through iolab) and are put back after success, an exception, SIGTERM,
and — through the ledger — SIGKILL. A knob the machine lacks is refused before anything
changes, with the reason."""

import os
import signal
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from iolab.core.errors import InputError, IolabError, KnobError, KnobUnavailable, NvmeError
from iolab.machine import knobs
from iolab.runs import repair
from support.fake_tools import failing_nvme
from support.marks import needs_root
from support.paths import PY, REPO
from support.sigint import sigint_default


def queue_file(dev, name) -> Path:
    return Path(f"/sys/block/{dev.device}/queue/{name}")


def selected(dev) -> str:
    text = queue_file(dev, "scheduler").read_text()
    return text[text.index("[") + 1 : text.index("]")]


def other_scheduler(dev) -> str:
    return "mq-deadline" if selected(dev) != "mq-deadline" else "none"


pytestmark = pytest.mark.usefixtures("own_ledger")  # conftest's, for every test of this file


@needs_root
def test_applied_changes_sys_and_restores_after_an_exception(loopdev, own_ledger):
    sched, ra = queue_file(loopdev, "scheduler"), queue_file(loopdev, "read_ahead_kb")
    before = sched.read_text(), ra.read_text()
    want = other_scheduler(loopdev)
    with pytest.raises(RuntimeError, match="experiment failed"):
        with knobs.applied(loopdev, {"scheduler": want, "read_ahead_kb": 0}) as changes:
            assert f"[{want}]" in sched.read_text() and ra.read_text().strip() == "0"
            assert len(changes) == 2 and len(list(own_ledger.glob("*-knob-*.json"))) == 2
            assert knobs.get("read_ahead_kb").read(loopdev) == "0"
            raise RuntimeError("experiment failed")
    assert (sched.read_text(), ra.read_text()) == before
    assert not list(own_ledger.glob("*-knob-*.json"))


@needs_root
def test_a_missing_knob_is_refused_before_anything_changes(loopdev, monkeypatch):
    writes = []
    monkeypatch.setattr(knobs, "write_file", lambda *a: writes.append(a))
    reason = knobs.get("nvme_coalescing").check(loopdev)
    assert reason.startswith(f"not NVMe: {loopdev.device}")
    with pytest.raises(KnobUnavailable, match=r"nvme_coalescing=800: not NVMe.*Nothing was changed"):
        with knobs.applied(loopdev, {"read_ahead_kb": 0, "nvme_coalescing": 0x320}):
            pytest.fail("the block must not run")
    assert writes == []  # read_ahead_kb (first in the dict) was never written
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq").exists():
        assert "no /sys/devices/system/cpu/cpu*/cpufreq" in knobs.get("governor").check(None)
        with pytest.raises(KnobUnavailable, match="governor='performance': no /sys/devices/system/cpu"):
            knobs.applied(None, {"governor": "performance"}).__enter__()
    with pytest.raises(InputError, match="no knob 'readahead'.*read_ahead_kb"):
        knobs.applied(loopdev, {"readahead": 0}).__enter__()


@needs_root
def test_values_are_checked_and_what_the_kernel_keeps_is_verified(loopdev):
    assert "choose one of" in knobs.get("scheduler").check(loopdev, "fifo")
    assert "whole number" in knobs.get("read_ahead_kb").check(loopdev, -1)
    with pytest.raises(InputError, match="on or off"):
        knobs.get("smt").encode("maybe")
    if Path("/sys/devices/system/cpu/smt/control").read_text().strip() == "notsupported":
        assert knobs.get("smt").check(None, "off") == "smt is 'notsupported' here: the kernel does not let it change"
    assert (
        knobs.get("io_poll")
        .check(loopdev, 1)
        .startswith(f"no poll queues: /sys/block/{loopdev.device}/queue/io_poll is 0")
    )
    assert "no block queue" in knobs.get("scheduler").check(None, "none")
    ra = queue_file(loopdev, "read_ahead_kb")
    before = ra.read_text()
    with pytest.raises(KnobError, match="the kernel kept 4 when iolab wrote '5'"):  # kept in 4 KiB pages
        with knobs.applied(loopdev, {"read_ahead_kb": 5}):
            pass
    assert ra.read_text() == before


def test_status_says_why_not():
    table = knobs.status(None)
    assert list(table.knob) == list(knobs.KNOBS)
    assert table.set_index("knob").why_not["scheduler"].startswith("the machine (no target given) has no block queue")


def test_an_nvme_cli_failure_is_an_iolab_error(tmp_path, monkeypatch):
    failing_nvme(tmp_path, monkeypatch)
    with pytest.raises(NvmeError, match=r"exit 2\): NVMe status: Invalid Field.*nvme list") as info:
        knobs.nvme_get_feature("/dev/nvme0", 0x08)
    assert isinstance(info.value, IolabError) and info.value.returncode == 2


@pytest.mark.parametrize(
    "said",
    [
        "get-feature:0x08 (Interrupt Coalescing), Current value:00000320",  # nvme-cli 2.3
        "get-feature:0x8 (Interrupt Coalescing), Current value:0x00000320",
    ],
)  # 1.x
def test_an_nvme_feature_value_is_read_from_either_nvme_cli(said, tmp_path, monkeypatch):
    """Both as nvme-cli prints them; 2.3's form (hex without 0x) was refused until the NVMe
    lab ran the coalescing step against a real nvme driver."""
    fake = tmp_path / "bin" / "nvme"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho '{said}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    assert knobs.nvme_get_feature("/dev/nvme0", 0x08) == 0x320


HOLD = """
import sys, time
from iolab.machine import knobs
from iolab.machine.target import existing_path
with knobs.applied(existing_path(sys.argv[1]), {"read_ahead_kb": 0, "scheduler": sys.argv[2]}):
    print("ready", flush=True)
    for _ in range(1200):  # short sleeps: a signal landing just before a long sleep's syscall would wait it out
        time.sleep(0.05)
"""


def hold(loopdev, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    proc = subprocess.Popen(
        [PY, "-c", textwrap.dedent(HOLD), str(loopdev.path), other_scheduler(loopdev)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=sigint_default,
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_puts_the_knobs_back(loopdev, tmp_path, own_ledger, sig):
    before = queue_file(loopdev, "scheduler").read_text(), queue_file(loopdev, "read_ahead_kb").read_text()
    proc = hold(loopdev, tmp_path)
    assert queue_file(loopdev, "read_ahead_kb").read_text().strip() == "0"
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert (queue_file(loopdev, "scheduler").read_text(), queue_file(loopdev, "read_ahead_kb").read_text()) == before
    assert not list(own_ledger.glob("*-knob-*.json"))


@needs_root
def test_after_sigkill_the_ledger_puts_the_knobs_back(loopdev, tmp_path, own_ledger):
    before = queue_file(loopdev, "scheduler").read_text(), queue_file(loopdev, "read_ahead_kb").read_text()
    proc = hold(loopdev, tmp_path)
    proc.kill()
    proc.wait(timeout=20)
    assert queue_file(loopdev, "read_ahead_kb").read_text().strip() == "0"  # SIGKILL: nothing ran
    done = repair.recover()
    assert len(done) == 2 and all(line.startswith("restored /sys/block/") for line in done)
    assert (queue_file(loopdev, "scheduler").read_text(), queue_file(loopdev, "read_ahead_kb").read_text()) == before
