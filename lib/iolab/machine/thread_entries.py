"""One thread's /proc entries, as the thread-state sampler (``iolab.machine.threads``) reads them.

A kept entry is read again from offset 0 (``reread``: procfs makes the file anew, no path
lookup), a passing one opened and read once (``read_once``). An entry that cannot be read
has a reason (``unreadable_reason``: ``exited``, ``permission``, ``ptrace denied`` or the
errno name), and ``syscall`` holds a number that ``syscall_label`` names (from the kernel
headers when installed, else a built-in x86_64 table).
"""

from __future__ import annotations

import errno
import os
import platform
from pathlib import Path

PF_KTHREAD = 0x00200000  # task flags (stat field 9): a kernel thread
_UNISTD = ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h")
# x86_64 numbers of the system calls a storage workload waits in, for machines without the
# kernel headers (linux-libc-dev); any other number is written syscall_<n>
_X86_64 = {
    0: "read",
    1: "write",
    2: "open",
    3: "close",
    7: "poll",
    8: "lseek",
    9: "mmap",
    11: "munmap",
    16: "ioctl",
    17: "pread64",
    18: "pwrite64",
    19: "readv",
    20: "writev",
    23: "select",
    24: "sched_yield",
    26: "msync",
    28: "madvise",
    34: "pause",
    35: "nanosleep",
    56: "clone",
    59: "execve",
    61: "wait4",
    74: "fsync",
    75: "fdatasync",
    128: "rt_sigtimedwait",
    130: "rt_sigsuspend",
    162: "sync",
    202: "futex",
    206: "io_setup",
    207: "io_destroy",
    208: "io_getevents",
    209: "io_submit",
    210: "io_cancel",
    217: "getdents64",
    221: "fadvise64",
    230: "clock_nanosleep",
    231: "exit_group",
    232: "epoll_wait",
    247: "waitid",
    257: "openat",
    270: "pselect6",
    271: "ppoll",
    275: "splice",
    281: "epoll_pwait",
    285: "fallocate",
    295: "preadv",
    296: "pwritev",
    306: "syncfs",
    326: "copy_file_range",
    327: "preadv2",
    328: "pwritev2",
    333: "io_pgetevents",
    425: "io_uring_setup",
    426: "io_uring_enter",
    427: "io_uring_register",
    435: "clone3",
    441: "epoll_pwait2",
    449: "futex_waitv",
}


def syscall_names() -> dict[int, str]:
    """System call number -> name on this machine: from the kernel headers' unistd_64.h
    when installed, else the built-in x86_64 table (empty on other architectures)."""
    for path in _UNISTD:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        names = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "#define" and parts[1].startswith("__NR_") and parts[2].isdigit():
                names[int(parts[2])] = parts[1][5:]
        if names:
            return names
    return dict(_X86_64) if platform.machine() == "x86_64" else {}


def syscall_label(raw: bytes | str, names: dict[int, str]) -> str:
    """/proc/PID/task/TID/syscall's first field as a name: ``running`` -> ``[running]``,
    ``-1`` -> ``[kernel_direct]`` (in the kernel, not in a system call), a number -> its
    name (``syscall_<n>`` when unknown)."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    first = text.split(None, 1)[0] if text.strip() else ""
    if first == "running":
        return "[running]"
    if first == "-1":
        return "[kernel_direct]"
    try:
        number = int(first)
    except ValueError:
        return f"[unreadable: {first or 'empty'}]"
    return names.get(number, f"syscall_{number}")


def unreadable_reason(exc: OSError) -> str:
    """Why an entry could not be read, as ``[unreadable: <reason>]`` says it."""
    if exc.errno in (errno.ENOENT, errno.ESRCH):
        return "exited"
    if exc.errno == errno.EACCES:  # stack without CAP_SYS_ADMIN, another user's syscall
        return "permission"
    if exc.errno == errno.EPERM:  # this one task refuses ptrace access (another user namespace, an LSM)
        return "ptrace denied"
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def read_once(path: str) -> bytes:
    """A /proc file opened, read and closed (a thread whose file is not kept open)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 16384)
    finally:
        os.close(fd)


def reread(fd: int, path: str) -> bytes:
    """A kept /proc file read again from offset 0 (procfs makes it anew); ``path`` names it
    (for the tests' fakes)."""
    return os.pread(fd, 8192, 0)
