"""Whose CPU time: the measured tool's threads and the kernel workers serving its devices,
read from /proc at each sampler tick (``iolab.machine.sampling``).

fio's report gives each job's rusage (``usr_cpu``, ``sys_cpu``), taken with RUSAGE_THREAD:
io_uring's own workers (``iou-wrk-PID``, io-wq, where a blocking IO is punted; ``iou-sqp-PID``,
the SQPOLL thread) are threads of fio's process that it leaves out, and a loop device does its
copying in kworkers (``kworker/u8:1+loop0``) that are no thread of fio's at all. /proc/stat's
busy time counts every program on the CPU. Read here per thread (``/proc/PID/task/TID/stat``:
utime and stime in USER_HZ ticks, and the CPU it last ran on):

* ``own`` — every thread of the tool's process tree (the pid the runner started and the
  processes below it: fio's job processes, t/io_uring's submitters), io_uring's workers
  included (they belong to the process that owns the ring);
* ``device`` — kernel workers whose name says they last ran a work item of one of the run's
  devices' workqueues (``[+-]loop0``, Linux 5.5+ names a kworker by its workqueue): the device's
  work done in the kernel on fio's behalf, an attribution by name (a kworker that served
  another queue between two ticks is counted whole).

``iolab.read.samples`` turns the series (``ROWS``) into fio's own CPU and the other programs'.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable

from ..read.samples import PROCS_COLUMNS

ROWS = PROCS_COLUMNS  # samples_procs.csv, as its reader names them
KTHREADD = 2


def _stat(path: str) -> tuple[str, list[str]] | None:
    """(comm, the fields after it) of one /proc stat file; None when it is gone."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:  # the thread ended between the listing and the read
        return None
    right = text.rindex(")")
    return text[text.index("(") + 1 : right], text[right + 2 :].split()


def tree(root: int) -> list[int]:
    """``root`` and every process below it (``/proc/PID/task/TID/children``), each once."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                continue
    return seen


def thread_ids(root: int) -> set[int]:
    """Every thread id of ``root``'s process tree now (``tree``, then each process's ``task``)."""
    found: set[int] = set()
    for pid in tree(root):
        with contextlib.suppress(OSError):
            found.update(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    return found


def device_workers(devices: Iterable[str]) -> re.Pattern | None:
    """The kworker names of ``devices``' workqueues (``kworker/u8:1+loop0``, ``-loop0``)."""
    names = [re.escape(d) for d in dict.fromkeys(devices) if d and re.fullmatch(r"loop\d+", d)]
    return re.compile(rf"kworker/.+[+-]({'|'.join(names)})") if names else None


def read(root: int | None, workers: re.Pattern | None, t: float) -> list[tuple]:
    """One tick's rows (``ROWS``): the threads of ``root``'s tree, and the kernel threads
    whose name ``workers`` matches."""
    rows = []
    for pid in tree(root) if root else []:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            found = _stat(f"/proc/{pid}/task/{tid}/stat")
            if found:
                comm, f = found
                rows.append((t, pid, int(tid), comm, "own", int(f[11]), int(f[12]), int(f[36])))
    if workers is None:
        return rows
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        found = _stat(f"/proc/{entry}/stat")
        if found and found[1][1] == str(KTHREADD) and workers.fullmatch(found[0]):
            comm, f = found
            rows.append((t, int(entry), int(entry), comm, "device", int(f[11]), int(f[12]), int(f[36])))
    return rows
