"""Where the threads wait: a thread-state sampler beside a run (seed 001's pSnapper method).

A flame graph shows where the CPU goes, not the threads that wait. Seed 001 found its
page-cache problem with 0x.tools' psn: tens of kernel workers in state D doing readahead
while three fio threads ran. This sampler does what psn does, beside fio:

    sampler = ThreadSampler(avoid_cpus=[0], interval_s=0.05, states="RD").start()
    ...                                    # the run
    samples = sampler.stop()               # iolab.read.threadstates.ThreadSamples -> the run folder

Every ``interval_s`` (a tick) one thread reads the ``stat`` of every thread of every process
of /proc; for the threads in ``states`` (R and D by default: the active ones; ``"all"``
keeps every state) it also reads ``syscall``, ``wchan`` and, when allowed (root), the
kernel ``stack``. Only those threads are kept — and the run's own threads (the pid given
to ``start`` and the processes below it: fio and its jobs) in ``workload_states`` too, S
by default: where fio sleeps (``io_cqring_wait``, waiting for completions) is the off-CPU
time a flame graph misses, while the machine's idle daemons in S are not worth a row.

What a tick costs (plain ``os.pread``, no psutil): each thread's stat file stays open and
is read again from offset 0 (procfs makes it anew), so a tick does no path lookup; /proc
and the ``task`` folders are listed again only when ``/proc/loadavg`` says a thread may
have started or ended (its thread count or last pid moved), after a failed read, and at
least every ``RESCAN_TICKS`` ticks. On this project's VM (about 85 threads) a tick takes
0.3 ms alone and about 1 ms beside a CPU-bound run (the other vCPU shares the hardware):
2.3 % of a CPU at the default 20 ticks a second. ``benchmarks/threads_overhead.py``
measures what that costs fio: within the noise of this VM (its control) on CPU-bound jobs.

* The sampler runs on a CPU outside ``avoid_cpus`` (the measured ones) when there is one,
  at ``SCHED_IDLE`` (else nice 19; ``idle=False`` keeps the normal priority): a kernel
  worker or fio woken on that CPU preempts it at once. It lives in the calling process
  (fio is another process, so the GIL cannot slow it) and never samples that process (the
  instrument, not the workload).
* A tick that starts more than half an interval late (its CPU was busy) is taken and
  counted (``late_ticks``, ``max_lag_s``); due times passed over because the sampler was a
  whole interval behind are counted as ``skipped_ticks``. Averages divide by the ticks
  really taken, and ``iolab.read.threadstates.notes`` says so.
* An entry that cannot be read is counted per kind and reason and written as
  ``[unreadable: <reason>]``: ``exited`` (the thread ended between the listing and the
  read), ``permission`` (``stack`` without root: not tried again in that run), ``ptrace
  denied`` (a task that refuses even root, e.g. in another user namespace), or the errno
  name. A kernel thread's syscall is ``[kernel_thread]`` (not read); ``[running]`` is what
  the kernel says of a thread on CPU, ``[kernel_direct]`` of one not in a system call.

The files it leaves and their reader are ``iolab.read.threadstates``; one thread's /proc
entries are read (and a system call named) by ``iolab.machine.thread_entries``.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Iterable

import pandas as pd

from ..core.errors import InputError
from ..core.signals import join_started
from ..read.threadstates import SAMPLE_COLUMNS, ThreadSamples, parse_stack, parse_stat
from .thread_entries import PF_KTHREAD, read_once, reread, syscall_label, syscall_names, unreadable_reason

DEFAULT_INTERVAL_S = 0.05
DEFAULT_STATES = "RD"
DEFAULT_WORKLOAD_STATES = "RDS"  # the run's own threads: where fio sleeps is off-CPU time too
ALL_STATES = "RSDIZTtXP"


def check_states(states: str | Iterable[str]) -> str:
    """The thread states to keep, as a string of state letters (``"RD"``); ``"all"`` is
    every state. InputError for a letter that is not a Linux task state."""
    text = ALL_STATES if str(states).strip().lower() == "all" else "".join(states)
    bad = sorted(set(text) - set(ALL_STATES))
    if bad or not text:
        raise InputError(
            f"thread states {states!r}: {'unknown ' + ', '.join(bad) if bad else 'none given'}; "
            f"give letters among {ALL_STATES} (R running, D uninterruptible, S sleeping, I idle) "
            "or 'all'"
        )
    return "".join(dict.fromkeys(text))


def lower_priority() -> str:
    """The calling thread to SCHED_IDLE (it then runs only when its CPU has nothing else to
    do: the loop device's workers and softirqs beside fio are never kept waiting by it), else
    to nice 19; returns the policy it got."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread (Linux)
        return "idle"
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # a thread id: this thread only
        return "nice 19"
    except (AttributeError, OSError):
        return "normal"


class ThreadSampler:
    """Samples the states of every thread on the machine on a thread until stopped (see the
    module docstring). ``proc`` is the /proc to read (a recorded copy in tests); ``stacks``
    False never reads kernel stacks; ``idle`` False keeps the sampler's thread at normal
    priority. Use as a context manager, or ``start()`` / ``stop()``."""

    RESCAN_TICKS = 20  # /proc is listed at least this often even when /proc/loadavg says nothing changed

    def __init__(
        self,
        avoid_cpus: Iterable[int] | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        states: str = DEFAULT_STATES,
        *,
        workload_states: str = DEFAULT_WORKLOAD_STATES,
        stacks: bool = True,
        proc: str | os.PathLike = "/proc",
        exclude_pids: Iterable[int] | None = None,
        idle: bool = True,
    ):
        if not interval_s >= 0:
            raise InputError(
                f"thread sampling interval {interval_s!r} s: give seconds >= 0 (default {DEFAULT_INTERVAL_S})"
            )
        self.avoid_cpus = set(avoid_cpus or ())
        self.interval_s, self.states = float(interval_s), check_states(states)
        self.proc = str(proc)
        self.idle = idle
        self._keep = frozenset(self.states.encode())  # state letters as bytes values: raw[i] is an int
        self.workload_states = "".join(dict.fromkeys(self.states + check_states(workload_states)))
        self._extra = frozenset(self.workload_states.encode()) - self._keep  # the workload's threads only
        self._ppids: dict[str, str] = {}  # pid -> its parent's, read once
        self._members: set[str] = set()  # the pids of the workload's process tree
        self._exclude = {str(p) for p in (exclude_pids if exclude_pids is not None else [os.getpid()])}
        self._stacks = "read" if stacks else "off"
        self._names = syscall_names()
        self._rows: list[tuple] = []
        self._fds: dict[str, int] = {}  # tid -> its open stat file
        self._side: dict[tuple[str, str], int] = {}  # (tid, syscall|wchan|stack) -> its open file, while kept
        self._on_cpu: dict[
            str, list
        ] = {}  # the run's threads: [first tick, first ns on CPU, last tick, last ns, t0, t1]
        self._kept: set[str] = set()  # the threads kept (a row) in this tick
        self._kthreads: set[str] = set()
        self._tasks: list[tuple[str, str, int]] = []  # (pid, tid, stat fd or -1) of the last listing
        self._changes: bytes | None = None  # /proc/loadavg's "/threads last_pid" at the last listing
        self._loadavg = -1
        self._rescan = True  # list /proc again before the next tick
        self._since_scan = 0
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._max_fds = max(0, min(4096, (soft if soft > 0 else 1024) // 2 - 64))
        self._unreadable: dict[str, dict[str, int]] = {}
        self.ticks = self.late_ticks = self.skipped_ticks = self.threads_read = self.scans = 0
        self.max_lag_s = 0.0
        self.cpu_s, self.cpus, self.policy = 0.0, None, "normal"
        self.workload_pid: int | None = None
        self.error = ""  # why sampling stopped before the run did, if it did
        self.t0 = 0.0
        self._last_t = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- one tick
    def _bad(self, kind: str, reason: str) -> str:
        counts = self._unreadable.setdefault(kind, {})
        counts[reason] = counts.get(reason, 0) + 1
        return f"[unreadable: {reason}]"

    def _kept_file(self, kind: str, tid: str, base: str) -> bytes:
        """The bytes of one /proc file of a kept thread (raises ``OSError``). The file stays
        open while the thread is kept tick after tick (fio's threads, a busy worker): read
        again from offset 0, no path lookup."""
        key = (tid, kind)
        path = base + kind
        fd = self._side.get(key)
        if fd is None:
            if len(self._fds) + len(self._side) >= self._max_fds:
                return read_once(path)
            fd = self._side[key] = os.open(path, os.O_RDONLY)
        try:
            return reread(fd, path)
        except OSError:
            os.close(self._side.pop(key))
            raise

    def _value(self, kind: str, tid: str, base: str) -> bytes | str:
        """The bytes of one /proc file of a kept thread (``_kept_file``), or its
        ``[unreadable: ...]`` label (counted)."""
        try:
            return self._kept_file(kind, tid, base)
        except OSError as exc:
            return self._bad(kind, unreadable_reason(exc))

    def _note_on_cpu(self, tid: str, base: str, tick: int, t: float) -> None:
        """The time a run's thread has spent on a CPU (``schedstat``, ns), at its first and
        latest kept tick: ``iolab.read.threadstates.notes`` checks its R samples against it. Not a
        psn field: a file that cannot be read is skipped, not counted."""
        try:
            ns = int(self._kept_file("schedstat", tid, base).split()[0])
        except (OSError, ValueError, IndexError):
            return
        got = self._on_cpu.get(tid)
        if got is None:
            self._on_cpu[tid] = [tick, ns, tick, ns, t, t]
        else:
            got[2], got[3], got[5] = tick, ns, t

    def _stack(self, tid: str, base: str) -> str:
        if self._stacks == "off":
            return "-"
        if self._stacks == "permission":  # no root: not tried again in this run, still counted
            return self._bad("stack", "permission")
        raw = self._value("stack", tid, base)
        if raw == "[unreadable: permission]":
            self._stacks = "permission"
        return raw if isinstance(raw, str) else parse_stack(raw)

    def _drop_side(self) -> None:
        """Closes the kept files of the threads not kept in this tick."""
        for key in [k for k in self._side if k[0] not in self._kept]:
            os.close(self._side.pop(key))

    def _member(self, pid: str, raw: bytes) -> bool:
        """Whether ``pid`` is the workload or descends from it (fio's job processes are its
        children, each in its own session; under perf, perf -> fio -> jobs). ``raw``: one of
        its stat lines, for its parent's pid (read once)."""
        if pid in self._members:
            return True
        ppid = self._ppids.get(pid)
        if ppid is None:
            ppid = self._ppids[pid] = str(parse_stat(raw)[2])
        if ppid in self._members:
            self._members.add(pid)
            return True
        return False

    def _forget(self, tid: str) -> None:
        fd = self._fds.pop(tid, None)
        if fd is not None:
            os.close(fd)
        self._kthreads.discard(tid)
        self._kept.discard(tid)

    def _open(self, pid: str, tid: str) -> int:
        """A new thread's stat file, kept open (-1 when no more descriptors may be kept: then
        opened at each read). A process's leader is read once here: a kernel thread (task
        flags) has one thread, its task/ folder is not listed."""
        path = f"{self.proc}/{pid}/task/{tid}/stat"
        fd = os.open(path, os.O_RDONLY)
        try:
            if pid == tid:
                raw = os.pread(fd, 1024, 0)
                if int(raw[raw.rindex(b")") + 2 :].split(b" ", 7)[6]) & PF_KTHREAD:
                    self._kthreads.add(pid)
        except (ValueError, IndexError):
            pass  # unparsable: read (and counted) in the tick
        except OSError:
            os.close(fd)
            raise
        if len(self._fds) >= self._max_fds:
            os.close(fd)
            return -1
        self._fds[tid] = fd
        return fd

    def _changed(self) -> bool:
        """Whether a thread may have started or ended since the last listing: /proc/loadavg's
        thread count and last pid handed out (every new thread takes a pid; an exit lowers the
        count) differ. True when there is no such file (a recorded /proc) or it is odd."""
        if self._loadavg < 0:
            return True
        try:
            line = os.pread(self._loadavg, 256, 0)
            key = line[line.index(b"/") :]
        except (OSError, ValueError):
            return True
        if key == self._changes:
            return False
        self._changes = key
        return True

    def _scan(self) -> None:
        """Lists every process of /proc and the threads of each (a kernel thread's is not
        listed: it has one); opens the new threads' stat files, closes the ended ones'."""
        proc, tasks, seen = self.proc, [], set()
        for pid in os.listdir(proc):
            if not pid.isdigit() or pid in self._exclude:
                continue
            if pid not in self._fds and pid not in self._kthreads:
                try:  # a new process: its leader first (is it a kernel thread?)
                    self._open(pid, pid)
                except OSError:
                    pass  # read (and counted) below, or the process is gone
            if pid in self._kthreads:
                tids: list[str] | tuple[str, ...] = (pid,)
            else:
                try:
                    tids = os.listdir(f"{proc}/{pid}/task")
                except OSError as exc:
                    self._bad("task", unreadable_reason(exc))
                    continue
            for tid in tids:
                fd = self._fds.get(tid)
                if fd is None:
                    try:
                        fd = self._open(pid, tid)
                    except OSError as exc:
                        self._bad("stat", unreadable_reason(exc))
                        self._rescan = True  # try it again next tick
                        continue
                tasks.append((pid, tid, fd))
                seen.add(tid)
        for tid in self._fds.keys() - seen:  # threads that ended since the last listing
            self._forget(tid)
        pids = {pid for pid, _, _ in tasks}
        for pid in self._ppids.keys() - pids:  # processes that ended
            del self._ppids[pid]
            self._members.discard(pid)
        self._kthreads &= pids
        self._tasks = tasks
        self.scans += 1
        self._since_scan = 0

    def _close(self) -> None:
        for tid in list(self._fds):
            self._forget(tid)
        self._drop_side()
        if self._loadavg >= 0:
            os.close(self._loadavg)
            self._loadavg = -1

    def tick(self) -> int:
        """One pass over every thread: the active ones are kept. Returns the threads read."""
        t = time.monotonic() - self.t0
        if self._loadavg < 0 and self.ticks == 0 and self.scans == 0:
            try:
                self._loadavg = os.open(f"{self.proc}/loadavg", os.O_RDONLY)
            except OSError:
                pass
        changed = self._changed()  # always read: it is the mark the next tick compares with
        if self._rescan or changed or self._since_scan >= self.RESCAN_TICKS:
            self._rescan = False
            self._scan()
        self._since_scan += 1
        tick, keep, extra, proc, rows, read = self.ticks, self._keep, self._extra, self.proc, self._rows, 0
        workload = self.workload_pid is not None
        member, value, kept = self._member, self._value, set()
        self._kept = kept
        pread = os.pread
        for pid, tid, fd in self._tasks:
            try:
                if fd >= 0:
                    raw = pread(fd, 1024, 0)
                else:
                    raw = read_once(f"{proc}/{pid}/task/{tid}/stat")
                state = raw[raw.rindex(b")") + 2]
            except OSError as exc:  # the thread ended: forget it, list /proc again next tick
                self._bad("stat", unreadable_reason(exc))
                self._forget(tid)
                self._rescan = True
                continue
            except (ValueError, IndexError):
                self._bad("stat", "unparsable")
                continue
            read += 1
            if state in keep:
                mine = workload and member(pid, raw)
            elif workload and state in extra and member(pid, raw):
                mine = True
            else:
                continue
            kept.add(tid)
            base = f"{proc}/{pid}/task/{tid}/"
            comm, letter, _, flags = parse_stat(raw)
            kthread = bool(flags & PF_KTHREAD)
            if kthread:
                syscall = "[kernel_thread]"
            else:
                got = value("syscall", tid, base)
                syscall = got if isinstance(got, str) else syscall_label(got, self._names)
            wchan = value("wchan", tid, base)
            wchan = wchan if isinstance(wchan, str) else (wchan.decode(errors="replace").strip() or "0")
            if mine:
                self._note_on_cpu(tid, base, tick, t)
            rows.append(
                (
                    round(t, 4),
                    tick,
                    int(pid),
                    int(tid),
                    int(mine),
                    comm,
                    letter,
                    int(kthread),
                    syscall,
                    wchan,
                    self._stack(tid, base),
                )
            )
        if self._side:
            self._drop_side()
        self.ticks += 1
        self.threads_read += read
        self._last_t = t
        return read

    # ---------------------------------------------------------------- the thread
    def _loop(self) -> None:
        # Off the measured CPUs when there are others (sched_setaffinity(0) is this thread only).
        others = set(os.sched_getaffinity(0)) - self.avoid_cpus
        if others and self.avoid_cpus:
            os.sched_setaffinity(0, others)
        self.cpus = sorted(os.sched_getaffinity(0))
        if self.idle:
            self.policy = lower_priority()
        cpu0 = time.thread_time()
        interval = self.interval_s
        due = time.monotonic()
        try:
            while True:
                lag = time.monotonic() - due
                if interval > 0 and lag > interval / 2:  # started late (its CPU was busy): taken, counted
                    self.late_ticks += 1
                    self.max_lag_s = max(self.max_lag_s, lag)
                self.tick()
                due += interval
                now = time.monotonic()
                if now > due and interval > 0:  # a whole interval behind: those passes are skipped, counted
                    missed = int((now - due) / interval) + 1
                    self.skipped_ticks += missed
                    due += missed * interval
                if self._stop.wait(max(0.0, due - now)):
                    break
        except Exception as exc:  # never the run's failure: what was sampled is kept, and why it stopped
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.cpu_s = time.thread_time() - cpu0
            self._close()

    def start(self, workload_pid: int | None = None) -> ThreadSampler:
        """Sampling starts; ``workload_pid``: the tool that drives the I/O (it and the
        processes below it are the run's own threads, ``iolab.read.threadstates.in_scope``)."""
        if workload_pid is not None:
            self.workload_pid = int(workload_pid)
            self._members = {str(workload_pid)}
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="iolab-threads", daemon=True)
        self._thread.start()
        return self

    @property
    def started(self) -> bool:
        return self._thread is not None

    def stop(self) -> ThreadSamples:
        self._stop.set()
        join_started(self._thread)
        return self.samples()

    def __enter__(self) -> ThreadSampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        if not self._stop.is_set():
            self.stop()

    def samples(self) -> ThreadSamples:
        """What was sampled so far: the rows and how they were taken."""
        frame = pd.DataFrame(self._rows, columns=list(SAMPLE_COLUMNS))
        window = self._last_t
        meta = {
            "interval_s": self.interval_s,
            "states": self.states,
            "workload_states": self.workload_states,
            "ticks": self.ticks,
            "late_ticks": self.late_ticks,
            "skipped_ticks": self.skipped_ticks,
            "max_lag_s": round(self.max_lag_s, 4),
            "ticks_per_s": round((self.ticks - 1) / window, 2) if window > 0 else None,
            "threads_read": self.threads_read,
            "window_s": round(window, 4),
            "scans": self.scans,
            "sampler_cpu_s": round(self.cpu_s, 4),
            "sampler_cpus": self.cpus,
            "sampler_policy": self.policy,
            "stacks": self._stacks,
            "excluded_pids": sorted(int(p) for p in self._exclude),
            "unreadable": self._unreadable,
            "workload_pid": self.workload_pid,
            "error": self.error,
            "workload_on_cpu": {
                tid: {
                    "first_tick": a,
                    "last_tick": b,
                    "on_cpu_s": round((nb - na) / 1e9, 6),
                    "window_s": round(t1 - t0, 4),
                }
                for tid, (a, na, b, nb, t0, t1) in self._on_cpu.items()
                if b > a
            },
            "tool": "iolab.machine.threads (the method of 0x.tools psn)",
        }
        return ThreadSamples(frame, meta)
