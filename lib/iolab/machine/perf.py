"""perf around a run: ``perf record`` (call graphs) and ``perf stat`` (counters), probing
first what this machine allows, and perf.data -> folded stacks without a text file.

    caps = probe()                 # perf installed? paranoid? hardware counters? kptr_restrict?
    with Profiler(run_dir, cpus=[0], spec=ProfileSpec(call_graph="dwarf")) as prof:
        ...fio runs...
    prof.folded                    # iolab.read.fold.Folded of the samples on those CPUs
    prof.stat                      # DataFrame: event, value, unit, supported, running_pct
    prof.window_s                  # how long perf stat counted, s

``ProfileSpec.mode``: ``"cpus"`` (default) records everything on the pinned CPUs with
``-C`` — so softirq and interrupt work done there for fio counts; ``"process"`` runs fio
under ``perf record --`` so that fio and the job processes it forks are followed from
their first instruction. fio's own frames are ``[unknown]`` with frame pointers on a stripped
fio: use ``call_graph="dwarf"`` for them (larger perf.data, slower ``perf script``).

In a run folder (``iolab.runs.producers``): ``perf.data`` and ``perf.folded`` (perf record; read by
``read_stacks``), ``perf_stat.csv`` (perf stat's own ``-x,`` output) and
``perf_stat_window.json`` (how long it counted; read with it by ``stat_columns``). Folders of
schema 1 kept the window as a fake ``window_s`` event in ``perf_stat_tidy.csv``; it is read too.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import selectors
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..core import runfiles
from ..core.errors import InputError, PerfError, ToolMissing
from ..core.runfiles import (
    PERF_DATA,
    PERF_FOLDED,
    PERF_OWN_FOLDED,
    PERF_STAT_CSV,
    PERF_STAT_TIDY_V1,
    PERF_STAT_WINDOW_JSON,
)
from ..core.system import read_text
from ..read.fold import Folded, FoldOptions, FoldParts, by_threads, read_folded
from .process import spawn

TYPE_CHECKING = False  # pandas is imported where used: `iolab fold perf.data` imports this module
if TYPE_CHECKING:
    import pandas as pd

STAT_EVENTS_HW = ("cycles", "instructions", "task-clock", "context-switches", "cpu-clock")
SCRIPT_FIELDS = "comm,pid,tid,time,period,event,ip,sym,dso"  # time: the folder reads the period after it
RECORD_FILES = (PERF_DATA, PERF_FOLDED, PERF_OWN_FOLDED)  # in a run folder: perf record (fio's own: since P30)
STAT_FILES = (PERF_STAT_CSV, PERF_STAT_WINDOW_JSON)  # in a run folder: perf stat
STAT_TIDY_V1 = PERF_STAT_TIDY_V1  # schema 1: parse_stat of perf_stat.csv plus a 'window_s' event row


@dataclass
class PerfCapabilities:
    perf: str | None
    paranoid: int | None
    kptr_restrict: int | None
    hardware_counters: bool
    can_record: bool
    problems: list[str] = field(default_factory=list)

    def explain(self) -> str:
        return "; ".join(self.problems) or "perf is ready (record and stat)"


def probe(as_root: bool | None = None) -> PerfCapabilities:
    """What perf can do here, with what to do about each limit. ``as_root=False`` asks
    what an unprivileged user would be told on this machine."""
    perf = shutil.which("perf")
    paranoid = read_text("/proc/sys/kernel/perf_event_paranoid")
    kptr = read_text("/proc/sys/kernel/kptr_restrict")
    caps = PerfCapabilities(perf, int(paranoid) if paranoid else None, int(kptr) if kptr else None, False, False)
    if not perf:
        caps.problems.append(
            "perf is not installed: apt-get install linux-perf (Debian) or linux-tools-$(uname -r) (Ubuntu)"
        )
        return caps
    root = os.geteuid() == 0 if as_root is None else as_root
    if not root and caps.paranoid is not None and caps.paranoid > 1:
        caps.problems.append(
            f"perf_event_paranoid is {caps.paranoid}: CPU-wide profiles and kernel "
            "stacks need root, or: sysctl kernel.perf_event_paranoid=1"
        )
    if not root and caps.kptr_restrict:
        caps.problems.append(
            f"kptr_restrict is {caps.kptr_restrict}: kernel symbols are hidden "
            "(frames show as addresses); run as root or sysctl kernel.kptr_restrict=0"
        )
    caps.hardware_counters, record_error = _trial_runs(perf, root, caps.paranoid, caps.kptr_restrict)
    if not caps.hardware_counters:
        caps.problems.append(
            "no hardware counters (cycles <not supported>, typical in a VM): "
            "profiles use the software cpu-clock event and cycles/IO comes from "
            "busy CPU time x frequency only"
        )
    caps.can_record = record_error is None
    if not caps.can_record:
        caps.problems.append(f"perf record failed: {record_error}")
    return caps


@functools.lru_cache(maxsize=8)
def _trial_runs(perf: str, root: bool, paranoid: int | None, kptr: int | None) -> tuple[bool, str | None]:
    """(hardware counters counted, perf record's error or None), from a trial ``perf stat`` and
    ``perf record`` of ``true``: once a process for the same perf and the same settings (a
    changed sysctl is tried anew), as each trial takes most of a second."""
    out = subprocess.run(
        [perf, "stat", "-x,", "-e", "cycles", "--", "true"], capture_output=True, text=True, check=False
    )
    counters = (
        out.returncode == 0
        and "<not supported>" not in out.stderr
        and "<not counted>" not in out.stderr
        and "cycles" in out.stderr
    )
    test = subprocess.run(
        [perf, "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    return counters, None if test.returncode == 0 else _whole(test.stderr)


@dataclass
class ProfileSpec:
    """How to profile a run. ``freq_hz``: samples per second per CPU (perf -F)."""

    mode: str = "cpus"  # cpus | process
    freq_hz: int = 999
    call_graph: str = "fp"  # fp | dwarf | none
    event: str | None = None  # default: cycles with hardware counters, else cpu-clock
    stat: bool = True
    kernel_annotate: bool = True  # mark kernel frames _[k] in the folded stacks


MMAP_PAGES = 1024  # 4 MiB per CPU with 4 KiB pages: at 999 Hz perf drains it a few times a second


def off_cpus(cpus: list[int] | None) -> list[int] | None:
    """The online CPUs other than ``cpus``, where perf's own processes run so that they do
    not take time from the measured ones; None (anywhere) when there is no other."""
    if not cpus:
        return None
    others = sorted(os.sched_getaffinity(0) - set(cpus))
    return others or None


def record_argv(out: Path, spec: ProfileSpec, cpus: list[int] | None, hardware: bool) -> list[str]:
    event = spec.event or ("cycles" if hardware else "cpu-clock")
    # -m: a ring buffer of MMAP_PAGES per CPU, so perf wakes (and runs) rarely
    argv = ["perf", "record", "-q", "-e", event, "-F", str(spec.freq_hz), "-m", str(MMAP_PAGES), "-o", str(out)]
    if spec.call_graph == "dwarf":
        argv += ["--call-graph", "dwarf,16384"]
    elif spec.call_graph == "fp":
        argv += ["-g"]
    if spec.mode == "process":
        argv += ["--"]  # the command to profile (fio) follows: perf sees its whole process tree
    elif cpus:
        argv += ["-C", ",".join(map(str, cpus))]
    else:
        argv += ["-a"]
    return argv


def stat_argv(out: Path, cpus: list[int] | None, hardware: bool) -> list[str]:
    events = STAT_EVENTS_HW if hardware else ("task-clock", "cpu-clock", "context-switches")
    target = ["-a", "-C", ",".join(map(str, cpus))] if cpus else ["-a"]
    return ["perf", "stat", "-x,", "-o", str(out), "-e", ",".join(events), *target]


def parse_stat(path: str | Path) -> pd.DataFrame:
    """``perf stat -x,`` output -> event, value, unit, supported, running_pct."""
    import pandas as pd

    rows = []
    for line in Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(",")
        if len(parts) < 3:
            continue
        value, unit, event = parts[0], parts[1], parts[2]
        supported = not value.startswith("<")
        rows.append(
            {
                "event": event,
                "value": float(value) if supported else float("nan"),
                "unit": unit,
                "supported": supported,
                "running_pct": float(parts[4]) if len(parts) > 4 and parts[4] else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["event", "value", "unit", "supported", "running_pct"])


def _stop(proc: subprocess.Popen | None, timeout: float = 30) -> None:
    """perf writes its data on SIGINT; stop it by its own pid and wait."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _whole(text: str) -> str:
    """perf's message, whole: its non-empty lines joined (never cut: its advice — e.g. the
    perf_event_paranoid levels for a non-root user — is at the end)."""
    return " ".join(line.strip() for line in (text or "").splitlines() if line.strip()) or "(perf said nothing)"


def script_argv(perf_data: Path, pid_fields: bool = True) -> list[str]:
    """The least text ``perf script`` can print for folding: only the fields the folder
    reads, no inline resolution (addr2line per address is what makes perf script slow)."""
    fields = SCRIPT_FIELDS if pid_fields else SCRIPT_FIELDS.replace("pid,", "")
    return ["perf", "script", "-i", str(perf_data), "-F", fields, "--no-inline"]


PIPE_BYTES = 1 << 20  # perf script -> folder: the pipe's size and perf's stdio buffer
MAX_PARTS = 4  # perf scripts side by side at most: the one folder folds ~2.5x as fast as one prints
SAMPLE_TIME_FEATURE = 21  # HEADER_SAMPLE_TIME in perf's util/header.h: first and last sample time, ns


def sample_times(perf_data: str | Path) -> tuple[int, int] | None:
    """The first and last sample's times in a perf.data file, ns of perf's clock, from its
    header: the HEADER_SAMPLE_TIME feature section that ``perf record`` writes (perf 6.1
    does; layout: perf's util/header.h, ``struct perf_file_header``). None without one (an
    older perf, a pipe-mode or foreign-endian file): then one perf script folds it all."""
    try:
        with open(perf_data, "rb") as f:
            head = f.read(104)
            if len(head) < 104 or head[:8] != b"PERFILE2" or struct.unpack_from("<Q", head, 8)[0] != 104:
                return None  # another byte order, a pipe-mode file, or not perf.data
            data_offset, data_size = struct.unpack_from("<QQ", head, 40)
            features = int.from_bytes(head[72:104], "little")
            if not features >> SAMPLE_TIME_FEATURE & 1:
                return None
            # after the data: one (offset, size) per feature present, in feature order
            f.seek(data_offset + data_size + 16 * (features & ((1 << SAMPLE_TIME_FEATURE) - 1)).bit_count())
            offset, _ = struct.unpack("<QQ", f.read(16))
            f.seek(offset)
            first, last = struct.unpack("<QQ", f.read(16))
    except (OSError, struct.error):
        return None
    return (first, last) if 0 < first <= last else None


def time_ranges(times: tuple[int, int] | None, parts: int) -> list[list[str]]:
    """``perf script --time`` arguments that cut the samples into ``parts`` consecutive time
    ranges of equal length: perf keeps a sample when its time is within a range's bounds,
    both included (ns), so ``,T`` and ``T+1ns,`` share none and miss none."""
    if times is None or parts < 2 or times[1] - times[0] < parts:
        return [[]]
    first, last = times
    cuts = [first + (last - first) * i // parts for i in range(1, parts)]

    def ns(t: int) -> str:
        return f"{t // 1_000_000_000}.{t % 1_000_000_000:09d}"

    starts, ends = ["", *(ns(t + 1) for t in cuts)], [*(ns(t) for t in cuts), ""]
    return [["--time", f"{start},{end}"] for start, end in zip(starts, ends)]


def fold_perf_data(perf_data: str | Path, options: FoldOptions | None = None, parts: int | None = None) -> Folded:
    """perf.data -> folded stacks, streaming ``perf script`` into the folder (no text file):
    the same stacks as ``stackcollapse-perf.pl`` on that text (``script_argv``).

    ``parts`` (default: the CPUs this process may use, at most ``MAX_PARTS``) perf scripts
    run side by side, each printing the samples of one time range (``time_ranges``): their
    texts joined in order are the one perf script's, byte for byte, and ``FoldParts`` folds
    them as they come, so the fold ends about when the slowest part does (on 2 free CPUs, in
    about one perf script's time). perf's stdout is buffered by 1 MiB (``stdbuf``, where
    coreutils has it) and each pipe holds as much: perf's own 4 KiB writes (~40,000 for a
    170 MB text) into a 64 KiB pipe cost the folder more system time than its folding."""
    path = Path(perf_data)
    if not shutil.which("perf"):
        raise ToolMissing("perf")
    if parts is None:
        parts = min(len(os.sched_getaffinity(0)), MAX_PARTS)
    ranges = time_ranges(sample_times(path) if parts > 1 else None, parts)
    argv = script_argv(path)
    stdbuf = shutil.which("stdbuf")
    if stdbuf:
        argv = [stdbuf, f"-o{PIPE_BYTES}", *argv]
    folding = FoldParts(len(ranges), options)
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryFile() as err:  # not a pipe: a chatty perf must never block on it
        try:
            for time_range in ranges:
                procs.append(subprocess.Popen([*argv, *time_range], stdout=subprocess.PIPE, stderr=err))
            _read_parts(procs, folding)
            for proc in procs:
                proc.wait()
        finally:
            for proc in procs:
                if proc.poll() is None:  # folding failed or was interrupted: perf script is not left behind
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
        if any(proc.returncode != 0 for proc in procs):
            err.seek(0)
            said = "\n".join(dict.fromkeys(err.read().decode(errors="replace").splitlines()))  # once, not per part
            raise PerfError(f"perf script failed on {perf_data}: {_whole(said)}")
    return folding.result()


def _read_parts(procs: list[subprocess.Popen], folding: FoldParts) -> None:
    """Each perf script's stdout into ``folding`` as it comes, until every one has ended."""
    with selectors.DefaultSelector() as selector:
        for part, proc in enumerate(procs):
            with contextlib.suppress(OSError):  # a smaller pipe only costs time
                fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            selector.register(proc.stdout, selectors.EVENT_READ, part)
        while selector.get_map():
            for key, _ in selector.select():
                block = os.read(key.fd, PIPE_BYTES)
                if block:
                    folding.feed(key.data, block)
                else:
                    selector.unregister(key.fileobj)
                    folding.end(key.data)


class Profiler:
    """perf record (+ perf stat) on ``cpus`` from ``start()`` to ``stop()`` (or perf record
    as fio's parent in ``process`` mode: ``wrap()``).

    In ``cpus`` mode start it before fio, so the fio job processes forked at start are
    seen with their names (a process perf did not see start shows as ``:PID``).

    Writes ``RECORD_FILES`` and ``STAT_FILES`` into ``run_dir``. The perf processes are
    stopped by their own pids, on success, error and Ctrl-C."""

    def __init__(
        self,
        run_dir: Path,
        cpus: list[int] | None,
        spec: ProfileSpec | None = None,
        caps: PerfCapabilities | None = None,
    ):
        self.dir, self.cpus = Path(run_dir), cpus
        self.data = self.dir / RECORD_FILES[0]
        self.spec = spec or ProfileSpec()
        self.caps = caps or probe()
        if not self.caps.perf or not self.caps.can_record:
            raise PerfError(f"cannot profile: {self.caps.explain()}")
        self._record = self._stat = None
        self._entries: dict = {}
        self.window_s = float("nan")
        self.folded: Folded | None = None  # every program on the CPUs
        self.own: Folded | None = None  # the measured tool's threads (collect's own_tids)
        self.stat: pd.DataFrame | None = None

    def wrap(self) -> list[str]:
        """In ``process`` mode: the argv prefix fio runs under (``perf record ... --``)."""
        if self.spec.mode != "process":
            return []
        return record_argv(self.data, self.spec, self.cpus, self.caps.hardware_counters)

    def start(self) -> None:
        """Start perf stat, and perf record in ``cpus`` mode (in ``process`` mode perf
        record is already running as fio's parent: see ``wrap``)."""
        hw = self.caps.hardware_counters
        if self.spec.mode != "process":
            argv = record_argv(self.data, self.spec, self.cpus, hw)
            self._record, self._entries["record"] = spawn(
                argv,
                name="perf record",
                cpus=off_cpus(self.cpus),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        if self.spec.stat:
            self._stat, self._entries["stat"] = spawn(
                stat_argv(self.dir / STAT_FILES[0], self.cpus, hw),
                name="perf stat",
                cpus=off_cpus(self.cpus),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        self._t0 = time.monotonic()
        if self._record is None:
            return
        # perf creates perf.data before it opens its counters, and writes the file's header
        # once they are open, in well under a second; on a loaded 2-CPU machine a perf that
        # is refused took over 5 s even to exit
        deadline = self._t0 + 15
        while not _has_header(self.data) and time.monotonic() < deadline and self._record.poll() is None:
            time.sleep(0.02)
        if self._record.poll() is not None:
            raise PerfError(
                f"perf record exited at once: {_whole(self._record.stderr.read())}; "
                "profile as root, or as perf says (kernel.perf_event_paranoid)"
            )

    def stop(self) -> None:
        """Stop perf (stat first), and record how long perf stat counted."""
        self.window_s = time.monotonic() - getattr(self, "_t0", time.monotonic())
        _stop(self._stat)
        if self._stat is not None:
            (self.dir / STAT_FILES[1]).write_text(
                json.dumps(
                    {
                        "window_s": self.window_s,
                        "unit": "s",
                        "source": "time.monotonic() from starting perf stat to stopping it",
                    }
                )
                + "\n"
            )
        _stop(self._record)
        for entry in self._entries.values():
            entry.release()
        if not self.data.exists():
            why = _whole(self._record.stderr.read()) if self._record is not None else "perf record -- fio failed"
            raise PerfError(f"perf record wrote no perf.data: {why}")

    def collect(self, own_tids: set[int] | None = None) -> None:
        """Fold perf.data and read the counters (after ``stop``). ``own_tids``: the measured
        tool's threads (and its devices' kernel workers, ``iolab.machine.proctree``): their
        samples alone are folded into ``perf_fio.folded`` too, beside every program's."""
        if self.data.exists():
            from ..core.atomic import write_atomic  # here: `iolab fold` imports this module and needs none

            kernel = self.spec.kernel_annotate
            if own_tids is None:
                self.folded = fold_perf_data(self.data, FoldOptions(kernel=kernel))
            else:
                self.folded, self.own = by_threads(
                    fold_perf_data(self.data, FoldOptions(kernel=kernel, tid=True)), own_tids
                )
                write_atomic(self.dir / PERF_OWN_FOLDED, self.own.text())
            write_atomic(self.dir / RECORD_FILES[1], self.folded.text())
        if self.spec.stat and (self.dir / STAT_FILES[0]).exists():
            self.stat = parse_stat(self.dir / STAT_FILES[0])


def _has_header(data: Path) -> bool:
    """Whether perf record has written ``data``'s header (the file is created empty first)."""
    try:
        return data.stat().st_size > 0
    except OSError:
        return False


# ---------------------------------------------------------------- a run folder's perf files
def stat_columns(run_dir: str | Path) -> dict:
    """perf stat figures of a profiled run folder: ``perf_cycles`` (NaN when the machine has
    no hardware counters), ``perf_task_clock_ms``, ``perf_window_s`` and where cycles came from."""
    import pandas as pd

    value = parse_stat(Path(run_dir) / STAT_FILES[0]).set_index("event")["value"]
    cycles = value.get("cycles", math.nan)
    return {
        "perf_cycles": cycles,
        "perf_window_s": stat_window_s(run_dir),
        "perf_task_clock_ms": value.get("task-clock", math.nan),
        "perf_cycles_source": "perf stat cycles"
        if pd.notna(cycles)
        else "none: no hardware counters (cycles not supported)",
    }


def stat_window_s(run_dir: str | Path) -> float:
    """How long perf stat counted, s: ``perf_stat_window.json``, or in a schema-1 folder the
    ``window_s`` row of ``perf_stat_tidy.csv``; NaN when neither is there."""
    import pandas as pd

    window, old = Path(run_dir) / STAT_FILES[1], Path(run_dir) / STAT_TIDY_V1
    if window.exists():
        return float(runfiles.read_json(window, keys=("window_s",))["window_s"])
    if old.exists():
        return float(pd.read_csv(old).set_index("event")["value"].get("window_s", math.nan))
    return math.nan


def read_stacks(run_dir: str | Path, whole_cpu: bool = False) -> Counter:
    """The folded stacks of a profiled run folder as a Counter: fio's own (``perf_fio.folded``:
    its threads, io_uring's workers and its devices' kernel workers), or with ``whole_cpu``, and
    for runs profiled before fio's were told apart, every program on its CPUs (``perf.folded``)."""
    own = Path(run_dir) / PERF_OWN_FOLDED
    if not whole_cpu and own.exists():
        return read_folded(own)
    folded = Path(run_dir) / RECORD_FILES[1]
    if not folded.exists():
        raise InputError(f"{run_dir} has no perf.folded: run it with profile=ProfileSpec()")
    return read_folded(folded)


def stacks_scope(run_dir: str | Path, whole_cpu: bool = False) -> str:
    """Whose samples ``read_stacks`` gives, in words for a figure's title: "fio's threads (21 %
    of the samples on its CPUs; others: stress-ng-cpu 79 %)", or "every program on its CPUs"."""
    every_path, own_path = Path(run_dir) / RECORD_FILES[1], Path(run_dir) / PERF_OWN_FOLDED
    if whole_cpu or not own_path.exists():
        why = "" if whole_cpu or not every_path.exists() else " (profiled before fio's samples were told apart)"
        return f"every program on its CPUs{why}"
    every, own = read_folded(every_path), read_folded(own_path)
    total = sum(every.values()) or 1
    others = Counter()
    for stack, count in every.items():
        others[stack.split(";", 1)[0]] += count
    for stack, count in own.items():
        others[stack.split(";", 1)[0]] -= count
    idle = sum(n for name, n in others.items() if name.startswith("swapper"))  # the idle task: no program
    named = [
        f"{name} {100 * n / total:.0f} %"
        for name, n in others.most_common(3)
        if 100 * n / total >= 1 and not name.startswith("swapper")
    ][:2]
    said = [f"others: {', '.join(named)}"] if named else []
    said += [f"idle {100 * idle / total:.0f} %"] if 100 * idle / total >= 1 else []
    return f"fio's threads ({100 * sum(own.values()) / total:.0f} % of the samples on its CPUs" + (
        f"; {'; '.join(said)})" if said else ")"
    )
