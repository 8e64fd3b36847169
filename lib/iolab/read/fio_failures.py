"""fio's failure in one line: its repeated lines collapsed, and the known causes named with
what to do.

    said = ["fio: io_u error on file /dev/loop0: Operation not supported: read offset=4046848, buflen=4096", ...]
    collapse(said)            # ["64 x fio: io_u error on file /dev/loop0: ... (the numbers vary)"]
    causes(said, jobtext)     # ["polled IO (hipri) needs poll queues, and /dev/loop0 has none (...): drop --hipri ..."]

``causes`` reads fio's words (the regexes of ``RULES``), the job's options (the job file iolab
wrote) and facts of this machine (``Facts``: what each file of the job is, its block queue's
``io_poll``, the kernel, the CPUs). fio prints one error line per IO that failed: a queue of
64 polled reads without poll queues is 64 lines that differ only in their offsets.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.system import read_text

# numbers not inside a name (loop0, nvme0n1, sd1 keep theirs): offsets, sizes, pids, errnos, line numbers
_NUMBER = re.compile(r"(?<![\w/.])(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)")


def collapse(lines: Iterable[str]) -> list[str]:
    """Lines that differ only in their numbers, once: ``"N x <the first of them> (the numbers
    vary)"``; a line seen once stays as it is. Order of first appearance."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_NUMBER.sub("#", line), []).append(line)
    out = []
    for same in groups.values():
        distinct = len(set(same))
        if len(same) == 1:
            out.append(same[0])
        else:
            out.append(f"{len(same)} x {same[0]}" + (" (the numbers vary)" if distinct > 1 else ""))
    return out


# ---------------------------------------------------------------- the job and the machine
def sections_of(jobtext: str) -> list[dict[str, str]]:
    """The options of each job in a job file iolab wrote (``iolab.machine.fio.to_jobfile``:
    ``[name]`` sections, ``key=value`` or a bare ``key`` for a flag, read as "1"), the
    ``[global]`` section's under each."""
    glob: dict[str, str] = {}
    jobs: list[dict[str, str]] = []
    section: dict[str, str] | None = None
    for raw in jobtext.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = glob if line == "[global]" else {}
            if section is not glob:
                jobs.append(section)
            continue
        if section is not None:
            key, eq, value = line.partition("=")
            section[key.strip()] = value.strip() if eq else "1"
    return [{**glob, **job} for job in jobs] or ([glob] if glob else [])


def _on(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("0", "false", "no", "off", "")


def _files(job: dict[str, str]) -> list[str]:
    """The paths a job names (``filename`` split at fio's ``:``; ``directory`` joined)."""
    names = [n for n in re.split(r"(?<!\\):", job.get("filename", "")) if n]
    folder = job.get("directory")
    return [os.path.join(folder, n) if folder and not n.startswith("/") else n for n in names]


@dataclass
class Facts:
    """What this machine says about a failed job's files: kind (``block``, ``char``,
    ``file``, ``missing``), the ``io_poll`` file of the block queue a path's IO goes to and
    its value, the kernel release, the number of CPUs and nvme's ``poll_queues``."""

    kinds: dict[str, str] = field(default_factory=dict)
    io_poll: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    kernel: str = ""
    cpus: int = 0
    nvme_poll_queues: str | None = None

    @classmethod
    def of(cls, paths: Iterable[str]) -> Facts:
        facts = cls(
            kernel=os.uname().release,
            cpus=os.cpu_count() or 0,
            nvme_poll_queues=read_text("/sys/module/nvme/parameters/poll_queues"),
        )
        for path in paths:
            facts.kinds[path], queue = _kind_and_queue(path)
            if queue is not None:
                facts.io_poll[path] = (str(queue / "io_poll"), read_text(queue / "io_poll"))
        return facts


def _kind_and_queue(path: str) -> tuple[str, Path | None]:
    """A path's kind and the sysfs ``queue`` folder of the block device its IO reaches (the
    device itself, or the one holding the file's file system; a partition's is its disk's)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing", None
    if stat.S_ISCHR(st.st_mode):
        return "char", None
    kind, dev = ("block", st.st_rdev) if stat.S_ISBLK(st.st_mode) else ("file", st.st_dev)
    sysdev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdev.exists():
        return kind, None
    real = sysdev.resolve()
    disk = real.parent if (real / "partition").exists() else real
    short = Path("/sys/block", disk.name, "queue")  # the name users know: /sys/block/loop0/queue
    queue = short if short.exists() else disk / "queue"
    return kind, queue if queue.exists() else None


# ---------------------------------------------------------------- the known causes
@dataclass(frozen=True)
class Rule:
    """A known cause: fio's words (``words``, searched in all it said) and a judge that, from
    the match, the jobs and the facts, names the cause and what to do (None: not this one)."""

    name: str
    words: re.Pattern
    judge: Callable[[re.Match, list[dict[str, str]], Facts], str | None]


def _no_poll_queues(m, jobs, facts) -> str | None:
    polled = [j for j in jobs if _on(j.get("hipri"))]
    for path in (p for j in polled for p in _files(j)):
        where, value = facts.io_poll.get(path, (None, None))
        if value == "1":
            continue
        nvme = f"; nvme.poll_queues is {facts.nvme_poll_queues}" if facts.nvme_poll_queues is not None else ""
        what = f"{path} has none ({where} is {value})" if where else f"{path} reaches no queue with poll queues"
        return (
            f"polled IO (hipri) needs poll queues, and {what}{nvme}: drop --hipri, or run on an NVMe "
            "namespace whose driver has poll queues (boot with nvme.poll_queues=N, or reload nvme with poll_queues=N)"
        )
    return None


def _odirect(m, jobs, facts) -> str | None:
    for path in (p for j in jobs if _on(j.get("direct")) or j.get("buffered") == "0" for p in _files(j)):
        if facts.kinds.get(path) == "char":
            return (
                f"{path} is a character device: it takes no O_DIRECT (direct=1): give --direct=0 "
                "(NVMe passthrough, io_uring_cmd on /dev/ngXnY, skips the page cache anyway)"
            )
        if facts.kinds.get(path) == "file":
            return (
                f"the file system holding {path} refuses O_DIRECT (direct=1; tmpfs on old kernels, overlayfs, "
                "some network file systems): give --direct=0, or put the file on one that takes it (ext4, xfs)"
            )
    return None


def _uring_cmd_needs_char(m, jobs, facts) -> str | None:
    paths = [p for j in jobs if j.get("ioengine") == "io_uring_cmd" for p in _files(j)]
    named = ", ".join(f"{p} ({facts.kinds.get(p, 'not a char device')})" for p in paths[:2]) or "the file given"
    return (
        f"ioengine=io_uring_cmd sends NVMe commands to a namespace's generic char device (/dev/ngXnY), "
        f"not {named}: give --filename=/dev/ngXnY (ls /dev/ng*), or use --ioengine=io_uring on the block device"
    )


def _uring_cmd_old_kernel(m, jobs, facts) -> str | None:
    if not any(j.get("ioengine") == "io_uring_cmd" for j in jobs):
        return None
    found = re.match(r"(\d+)\.(\d+)", facts.kernel)
    if not found or (int(found.group(1)), int(found.group(2))) >= (5, 19):
        return None
    return (
        f"ioengine=io_uring_cmd (NVMe passthrough) needs Linux 5.19 or later, and this kernel is "
        f"{facts.kernel}: use --ioengine=io_uring, or a newer kernel"
    )


def _engine_missing(m, jobs, facts) -> str | None:
    return (
        f"this fio has no {m.group(1)} engine (it was built without it, or its plugin is not installed; "
        "`fio --enghelp` lists the engines it has): choose another --ioengine, or install a fio built with it"
    )


def _cpu_missing(m, jobs, facts) -> str | None:
    return (
        f"CPU {m.group(1)} does not exist here: fio sees CPUs 0-{m.group(2)} (nproc): give --cpus or "
        "cpus_allowed within them"
    )


def _size_below_block(m, jobs, facts) -> str | None:
    return (
        f"size={m.group(1)} bytes is less than one block of {m.group(2)} bytes: give a --size of at "
        "least one block (e.g. --size=1m), or a smaller --bs"
    )


def _size_unknown(m, jobs, facts) -> str | None:
    paths = [p for j in jobs for p in _files(j)]
    what = ", ".join(f"{p} ({facts.kinds.get(p, '?')})" for p in paths[:2]) or "the file"
    return f"fio cannot tell how large {what} is, nor how much to lay out: give --size="


def _no_space(m, jobs, facts) -> str | None:
    files = [p for j in jobs for p in _files(j) if facts.kinds.get(p) in ("file", "missing")]
    if not files:
        return None
    sizes = sorted({j["size"] for j in jobs if j.get("size")})
    return (
        f"fio could not lay out {files[0]}: its file system is full (asked for size={', '.join(sizes) or '?'}; "
        f"df -h {os.path.dirname(files[0]) or '.'} shows what is free): give a smaller --size (or --target-size), "
        "or free space there"
    )


def _offset_beyond(m, jobs, facts) -> str | None:
    return "offset= lies beyond the end of the file or device: give an offset inside it, or a larger size"


RULES: tuple[Rule, ...] = (
    Rule("polled IO without poll queues", re.compile(r"Operation not supported|error 95\b|err=95\b"), _no_poll_queues),
    Rule(
        "O_DIRECT refused",
        re.compile(r"does not support O_DIRECT|does not support direct=1"),
        _odirect,
    ),
    Rule(
        "io_uring_cmd on a block device",
        re.compile(r"io_uring_cmd only works with nvme ns generic char devices"),
        _uring_cmd_needs_char,
    ),
    Rule(
        "io_uring_cmd on an old kernel",
        re.compile(r"Invalid argument|Operation not supported|io_uring_(setup|queue_init)"),
        _uring_cmd_old_kernel,
    ),
    Rule("an engine fio was built without", re.compile(r"engine (\S+) not loadable"), _engine_missing),
    Rule("a CPU that does not exist", re.compile(r"CPU (\d+) too large \(max=(\d+)\)"), _cpu_missing),
    Rule(
        "a size below one block",
        re.compile(r"size too small, must not be less than minimum block size: (\d+) < (\d+)"),
        _size_below_block,
    ),
    Rule("a size fio cannot tell", re.compile(r"you need to specify size="), _size_unknown),
    Rule("no space to lay out the file", re.compile(r"No space left on device|err=28\b"), _no_space),
    Rule("an offset beyond the end", re.compile(r"you need to specify valid offset="), _offset_beyond),
)


def causes(said: Iterable[str], jobtext: str = "", facts: Facts | None = None) -> list[str]:
    """The known causes (``RULES``) of a failure from fio's lines ``said`` and the job file
    ``jobtext``, each with what to do; [] when none is known. ``facts``: this machine's,
    read for the job's files unless given."""
    text = "\n".join(said)
    jobs = sections_of(jobtext)
    if facts is None:
        facts = Facts.of(dict.fromkeys(p for j in jobs for p in _files(j)))
    out: list[str] = []
    for rule in RULES:
        m = rule.words.search(text)
        cause = rule.judge(m, jobs, facts) if m else None
        if cause and cause not in out:
            out.append(cause)
    return out


def explain(said: Iterable[str], jobtext: str = "", default: str = "fix the cause fio names") -> tuple[str, str]:
    """(what fio said, collapsed and joined with "; ", the causes and what to do — or
    ``default`` when none is known)."""
    said = list(said)
    found = causes(said, jobtext)
    return "; ".join(collapse(said)) or "(no message)", ("the cause: " + "; ".join(found)) if found else default
