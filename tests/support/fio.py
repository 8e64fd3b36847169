"""fio for tests: job options for plumbing runs, and the fio processes running under a folder."""

import os
import time
from pathlib import Path

QUICK = {"runtime": "300ms", "ioengine": "psync", "rw": "randread", "bs": "4k"}  # plumbing, not numbers


def fio_running(folder) -> list[int]:
    """The pids of the fio processes whose working directory is under ``folder``."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "fio" and os.readlink(f"/proc/{pid}/cwd").startswith(
                str(folder)
            ):
                out.append(int(pid))
        except OSError:
            continue
    return out


def wait_for_fio(folder, timeout=20) -> None:
    """Until a fio runs under ``folder`` (polled every 50 ms); AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fio_running(folder):
            return
        time.sleep(0.05)
    raise AssertionError("fio never started")


def wait_for_fio_job(folder, timeout=120) -> None:
    """Until a fio job (a fio process whose parent is fio) under ``folder`` has made a read or
    write call: fio is measuring, past its start-up (polled every 50 ms); AssertionError after
    ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in fio_running(folder):
            try:
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                calls = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
                if Path(f"/proc/{ppid}/comm").read_text().strip() == "fio" and (
                    int(calls["syscr"]) + int(calls["syscw"]) > 0
                ):
                    return
            except (OSError, ValueError, IndexError, KeyError):
                continue
        time.sleep(0.05)
    raise AssertionError("no fio job started measuring")
