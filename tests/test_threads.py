"""Thread states beside a run (iolab.machine.threads, iolab.read.threadstates; seed 001's psn method): a
real buffered workload on a loop device, and the sampler and its table on a recorded /proc."""

import contextlib
import errno
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from iolab import cli
from iolab.core import runfiles
from iolab.core.columns import COLUMNS
from iolab.core.errors import InputError
from iolab.machine import knobs, thread_entries, threads
from iolab.machine.thread_entries import PF_KTHREAD, syscall_label
from iolab.machine.threads import ThreadSampler, check_states
from iolab.measure.runner import measure
from iolab.read import threadstates
from iolab.read.threadstates import normalise_comm, parse_stack, parse_stat, top_frames
from iolab.runs import store
from support.cpus import CPU
from support.marks import needs_root

# -------------------------------------------------------------- a recorded /proc
FIO_STACK = """[<0>] folio_wait_bit_common+0x13d/0x350
[<0>] filemap_read+0x3a1/0x3c0
[<0>] blkdev_read_iter+0x6c/0x150
[<0>] vfs_read+0x23c/0x310
[<0>] __x64_sys_pread64+0x98/0xc0
[<0>] do_syscall_64+0x71/0x280
[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e
"""
WORKER_STACK = """[<0>] loop_process_work+0x4b2/0x880
[<0>] process_one_work+0x174/0x330
[<0>] worker_thread+0x256/0x3b0
[<0>] kthread+0xcf/0x100
[<0>] ret_from_fork+0x31/0x50
"""


def _stat(pid, comm, state, flags=0x400000, ppid=1):
    """A /proc/PID/task/TID/stat line as the kernel writes it (52 fields)."""
    rest = " ".join([str(ppid), "1", "1", "0", "-1", str(flags)] + ["0"] * 43)
    return f"{pid} ({comm}) {state} {rest}\n"


def _thread(
    proc: Path,
    pid,
    tid,
    comm,
    state,
    *,
    flags=0x400000,
    syscall="17 0x5 0x7f 0x1000 0x0 0x0 0x0 0x7ff 0x7f\n",
    wchan="0",
    stack="",
    ppid=1,
):
    d = proc / str(pid) / "task" / str(tid)
    d.mkdir(parents=True)
    (d / "stat").write_text(_stat(tid, comm, state, flags, 2 if flags & PF_KTHREAD else ppid))
    (d / "syscall").write_text(syscall)
    (d / "wchan").write_text(wchan)
    (d / "stack").write_text(stack)
    return d


@pytest.fixture
def proc(tmp_path):
    """fio (pid 90) and its job process (100: threads running, in D in pread64 and asleep in
    io_uring_enter), a loop worker and a kworker (kernel threads, R and D), a sleeping
    shell, another user's running python, and threads that cannot be read."""
    p = tmp_path / "proc"
    _thread(p, 90, 90, "fio", "S", syscall="230 0x1 0x0\n", wchan="hrtimer_nanosleep", ppid=80)
    _thread(p, 100, 100, "fio", "R", syscall="running\n", ppid=90)
    _thread(p, 100, 101, "fio", "D", wchan="folio_wait_bit_common", stack=FIO_STACK, ppid=90)
    _thread(
        p, 100, 102, "fio", "S", syscall="426 0x3 0x0 0x1 0x1 0x0 0x8 0x7ff 0x7f\n", wchan="io_cqring_wait", ppid=90
    )
    _thread(p, 2, 2, "kworker/u8:3+loop0", "R", flags=PF_KTHREAD, stack=WORKER_STACK)
    _thread(p, 7, 7, "kworker/u8:11-events_unbound", "D", flags=PF_KTHREAD, wchan="io_schedule", stack=WORKER_STACK)
    _thread(p, 50, 50, "bash", "S", syscall="61 0xffffffff 0x7ffc\n", wchan="do_wait")
    _thread(p, 70, 70, "python3", "R", syscall="running\n")
    gone = _thread(p, 60, 60, "short (lived)", "R")
    (gone / "stat").unlink()  # listed, then exited before its stat was read
    (p / "61" / "task").mkdir(parents=True)
    (p / "61" / "task" / "61").mkdir()  # no files at all
    (p / "self").mkdir()  # not a pid: skipped
    return p


def test_thread_names_are_normalised_as_psn_does():
    assert normalise_comm("kworker/u8:3") == "kworker/u*:*"
    assert normalise_comm("kworker/0:1H-kblockd") == "kworker/*:*H-kblockd"
    assert normalise_comm("kworker/u8:3+loop0") == "kworker/u*:*+loop*"
    assert normalise_comm("iou-wrk-4211") == "iou-wrk-*"
    assert normalise_comm("fio") == "fio"


def test_proc_lines_are_parsed():
    assert parse_stat(_stat(9, "a (b) c", "D", 0x40, 7)) == ("a (b) c", "D", 7, 0x40)  # spaces and parentheses
    assert parse_stack(FIO_STACK).split(";")[:2] == ["entry_SYSCALL_64_after_hwframe", "do_syscall_64"]
    assert parse_stack(FIO_STACK).endswith("filemap_read;folio_wait_bit_common") and parse_stack("") == "-"
    assert top_frames(parse_stack(FIO_STACK), 2) == "filemap_read->folio_wait_bit_common"
    assert top_frames("[unreadable: permission]") == "[unreadable: permission]" and top_frames("-") == "-"
    names = thread_entries.syscall_names()
    assert syscall_label("running", names) == "[running]" and syscall_label("-1 0x0", names) == "[kernel_direct]"
    assert syscall_label("426 0x3 0x1", names) == "io_uring_enter" and syscall_label("17 0x5", names) == "pread64"
    assert syscall_label("99999 0x0", names) == "syscall_99999"
    assert check_states("all") == threads.ALL_STATES and check_states("DRD") == "DR"
    with pytest.raises(InputError, match="unknown Q"):
        check_states("RQ")


def test_recorded_proc_table_counts_and_labels(proc, tmp_path, monkeypatch):
    sampler = ThreadSampler(proc=proc, exclude_pids=[])
    sampler.workload_pid, sampler._members = 90, {"90"}  # as start(fio's pid) sets them
    sampler.tick()
    shutil.rmtree(proc / "100" / "task" / "100")  # fio's running thread ends: its kept file is closed
    sampler.tick()
    assert "100" not in sampler._fds and "101" in sampler._fds
    got = sampler.samples()
    assert got.ticks == 2 and set(got.samples.columns) == set(threadstates.SAMPLE_COLUMNS)
    assert got.meta["unreadable"] == {"stat": {"exited": 4}}  # pid 60 and 61, both ticks
    assert "bash" not in set(got.samples.comm) and "python3" in set(got.samples.comm)  # S is not kept by default...
    assert set(got.samples[got.samples.tid == 102].state) == {"S"}  # ...but for the run's own threads

    run = tmp_path / "run"
    run.mkdir()
    for name, text in got.files().items():
        (run / name).write_text(text)
    (run / "run.json").write_text("{}")
    tab = threadstates.table(run)
    assert list(tab.columns) == [*threadstates.KEYS, "samples", "avg_active_threads", "pct_of_run"]
    assert set(tab.columns) <= set(COLUMNS)
    active = tab.state.isin(["R", "D"])
    assert active.iloc[: active.sum()].all() and tab.state.iloc[-1] == "S"  # active first, then asleep
    fio_d = tab[(tab.comm == "fio") & (tab.state == "D")].iloc[0]
    assert (fio_d.syscall, fio_d.wchan, fio_d.kstack) == (
        "pread64",
        "folio_wait_bit_common",
        "blkdev_read_iter->filemap_read->folio_wait_bit_common",
    )
    assert (fio_d.samples, fio_d.avg_active_threads, fio_d.pct_of_run) == (2, 1.0, 100.0)
    fio_s = tab[(tab.comm == "fio") & (tab.state == "S")].set_index("syscall")  # the run's own sleep too
    assert fio_s.loc["io_uring_enter", "wchan"] == "io_cqring_wait" and fio_s.loc["io_uring_enter", "samples"] == 2
    assert fio_s.loc["clock_nanosleep", "avg_active_threads"] == 1.0  # fio's parent, waiting for its job
    fio_r = tab[(tab.comm == "fio") & (tab.state == "R")].iloc[0]
    assert (fio_r.syscall, fio_r.avg_active_threads, fio_r.pct_of_run) == ("[running]", 0.5, 50.0)
    workers = threadstates.table(run, by=["comm", "state", "syscall"])
    assert {("kworker/u*:*+loop*", "R"), ("kworker/u*:*-events_unbound", "D")} <= set(zip(workers.comm, workers.state))
    assert set(workers[workers.comm.str.startswith("kworker")].syscall) == {"[kernel_thread]"}
    by_state = threadstates.table(run, by="state").set_index("state")
    assert by_state.loc["D", "avg_active_threads"] == 2.0 and by_state.loc["R", "samples"] == 3
    assert "python*" not in set(tab.comm)  # another process: left out, and said so
    assert "other processes' threads left out: 1.00 active on average" in threadstates.notes(run)
    assert "stat 4 exited" in threadstates.notes(run)
    everything = threadstates.table(run, by=["comm"], scope="all").set_index("comm")
    assert everything.loc["python*", "avg_active_threads"] == 1.0
    columns = threadstates.run_columns(run)
    assert columns == {
        "threads_active_avg": 3.5,
        "threads_running_avg": 1.5,
        "threads_d_state_avg": 2.0,
        "threads_ticks": 2,
        "threads_unreadable": 4,
    }
    assert runfiles.csv_columns(run / threadstates.SAMPLES_FILE) is not None  # read without pandas...
    with monkeypatch.context() as m:
        m.setattr(runfiles, "csv_columns", lambda *a, **k: None)
        assert threadstates.run_columns(run) == columns  # ...as pandas reads it
    samples = run / threadstates.SAMPLES_FILE
    samples.write_text("\ufeff" + samples.read_text())  # a byte-order mark (an editor's save): pandas reads it
    assert threadstates.run_columns(run) == columns
    assert "fio D pread64 folio_wait_bit_common" in threadstates.describe(tab)
    side = threadstates.compare({"a": run, "b": [run]}, by=["comm", "state"])
    assert list(side.columns) == ["comm", "state", "a", "b"] and (side.a == side.b).all()


def test_unreadable_entries_are_counted_and_labelled_never_a_crash(proc, monkeypatch):
    real = thread_entries.reread

    def reread(fd, path):  # /proc says no when the file is read, not when it is opened
        if path.endswith("/stack"):
            raise PermissionError(errno.EACCES, "Permission denied")  # stack without root
        if path.endswith("/7/task/7/wchan"):
            raise ProcessLookupError(errno.ESRCH, "No such process")  # exited mid-sample
        if path.endswith("/101/syscall"):
            raise PermissionError(errno.EPERM, "Operation not permitted")  # ptrace refused
        return real(fd, path)

    monkeypatch.setattr(threads, "reread", reread)  # as the sampler calls it
    sampler = ThreadSampler(proc=proc, states="all", exclude_pids=[])
    sampler.tick()
    sampler.tick()
    got = sampler.samples()
    bad = got.meta["unreadable"]
    assert bad["stack"] == {"permission": 16} and got.meta["stacks"] == "permission"  # 8 kept threads x 2 ticks
    assert bad["wchan"] == {"exited": 2} and bad["syscall"] == {"ptrace denied": 2}
    rows = got.samples.set_index("tid")
    assert set(rows.kstack) == {"[unreadable: permission]"}
    assert set(rows.loc[7, "wchan"]) == {"[unreadable: exited]"}
    assert set(rows.loc[101, "syscall"]) == {"[unreadable: ptrace denied]"}
    assert set(rows.loc[50, "syscall"]) == {"wait4"} and set(rows.loc[50, "state"]) == {"S"}


def test_a_run_without_thread_samples_says_to_rerun_with_threads(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(InputError, match=f"{tmp_path}.*re-run it with --threads"):
        threadstates.table(tmp_path)
    with pytest.raises(InputError, match="choose among comm,state"):
        threadstates.table(tmp_path, by="comm,cpu")


def test_the_sampler_runs_off_the_measured_cpu(proc, monkeypatch):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nowhere else to run")
    measured = min(os.sched_getaffinity(0))
    lower = threads.lower_priority

    def lowered_then_normal():  # the policy it gets is still reported; then normal priority, as
        got = lower()  # at SCHED_IDLE beside a saturated CPU it may not tick for many seconds
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 0)
        return got

    monkeypatch.setattr(threads, "lower_priority", lowered_then_normal)
    with ThreadSampler([measured], interval_s=0.01, proc=proc, exclude_pids=[]) as sampler:
        # beside other tests' load it may get few ticks in 0.15 s, so wait for five ticks (up
        # to 10 s) instead of a fixed time
        deadline = time.monotonic() + 10
        while sampler.ticks < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    got = sampler.samples()
    assert measured not in got.meta["sampler_cpus"] and got.ticks >= 5
    assert got.meta["sampler_policy"] in ("idle", "nice 19", "normal") and got.meta["ticks_per_s"] > 0
    assert not sampler._fds and not sampler._side  # every kept file closed


def _small_proc(tmp_path, threads_last_pid="3/90 4000"):
    p = tmp_path / "small-proc"
    _thread(p, 10, 10, "fio", "R", syscall="running\n")
    _thread(p, 2, 2, "kworker/u8:0+loop0", "D", flags=PF_KTHREAD, wchan="io_schedule", stack=WORKER_STACK)
    (p / "loadavg").write_text(f"0.50 0.40 0.30 {threads_last_pid}\n")
    return p


def test_proc_is_listed_again_only_when_a_thread_may_have_started_or_ended(tmp_path):
    proc = _small_proc(tmp_path)
    sampler = ThreadSampler(proc=proc, exclude_pids=[])
    sampler.tick()
    sampler.tick()
    assert sampler.scans == 1 and len(sampler._fds) == 2  # /proc/loadavg unchanged: the same threads
    _thread(proc, 10, 11, "fio", "D", wchan="folio_wait_bit_common", stack=FIO_STACK)  # fio starts a thread
    sampler.tick()
    assert 11 not in set(sampler.samples().samples.tid)  # not yet seen...
    (proc / "loadavg").write_text("0.50 0.40 0.30 4/91 4001\n")  # ...until the last pid handed out moves
    sampler.tick()
    assert sampler.scans == 2 and set(sampler.samples().samples.query("tick == 3").tid) == {10, 11, 2}
    for _ in range(ThreadSampler.RESCAN_TICKS):  # and at least every RESCAN_TICKS ticks whatever it says
        sampler.tick()
    assert sampler.scans == 3
    rows = sampler.samples().samples
    assert set(rows[rows.tid == 11].kstack) == {threadstates.parse_stack(FIO_STACK)}  # read through kept files
    assert len(sampler._side) == 8  # syscall, wchan, stack of fio's 2 threads; the kworker's wchan and stack
    sampler._close()
    assert not sampler._fds and not sampler._side


class _Oversleeps(threading.Event):
    def wait(self, timeout=None):  # the sampler's CPU was busy: it is woken 8 ms late
        time.sleep((timeout or 0) + 0.008)
        return self.is_set()


def test_late_and_skipped_ticks_are_counted_never_dropped_silently(tmp_path):
    sampler = ThreadSampler(interval_s=0.01, proc=_small_proc(tmp_path), exclude_pids=[], idle=False)
    sampler._stop = _Oversleeps()
    real, calls = sampler.tick, []

    def tick():
        calls.append(1)
        if len(calls) == 3:
            time.sleep(0.035)  # one pass takes 3.5 intervals: the next 3 due times are skipped
        return real()

    sampler.tick = tick
    with sampler:
        deadline = time.monotonic() + 10  # enough ticks to see the late ones, even under load
        while (len(calls) < 8 or time.monotonic() < deadline - 9.85) and time.monotonic() < deadline:
            time.sleep(0.02)
    meta = sampler.samples().meta
    assert meta["skipped_ticks"] >= 3 and meta["late_ticks"] >= 3 and meta["max_lag_s"] >= 0.005
    assert 0 < meta["ticks_per_s"] < 80 and meta["sampler_policy"] == "normal"
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    for name, text in sampler.samples().files().items():
        (run / name).write_text(text)
    assert "ticks late" in threadstates.notes(run)


def test_a_run_thread_on_cpu_far_more_than_its_r_samples_say_is_said(tmp_path, monkeypatch):
    """On this project's VM the sampler's ticks fell while fio's job waited: R in 18 % of the
    samples while its schedstat said 72 % on a CPU. Recorded here: one thread always S while
    its schedstat grows at 80 % of the time, one always R at 90 %, on the sampler's own clock
    (a loaded machine must not stretch the time between a file's write and its tick)."""
    p = tmp_path / "proc"
    _thread(p, 90, 90, "fio", "S", ppid=80)
    waits = _thread(p, 100, 100, "fio", "S", wchan="io_cqring_wait", ppid=90)
    runs = _thread(p, 100, 101, "fio", "R", syscall="running\n", ppid=90)
    now = [100.0]
    monkeypatch.setattr(threads, "time", SimpleNamespace(monotonic=lambda: now[0], thread_time=time.thread_time))
    sampler = ThreadSampler(proc=p, exclude_pids=[])
    sampler.workload_pid, sampler._members = 90, {"90"}
    sampler.t0 = start = now[0]
    for i in range(12):
        now[0] = start + 0.01 * i
        elapsed = now[0] - start
        (waits / "schedstat").write_text(f"{int(0.8 * elapsed * 1e9)} 0 0\n")
        (runs / "schedstat").write_text(f"{int(0.9 * elapsed * 1e9)} 0 0\n")
        sampler.tick()
    got = sampler.samples()
    assert set(got.meta["workload_on_cpu"]) == {"100", "101"}  # fio's parent: no schedstat file, skipped
    assert got.meta["workload_on_cpu"]["100"]["last_tick"] == 11 and got.meta["unreadable"] == {}
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    for name, text in got.files().items():
        (run / name).write_text(text)
    said = threadstates.notes(run)
    on = re.search(r"thread fio \(100\) was on a CPU (\d+) % of the sampled time", said)
    assert on and 70 <= int(on.group(1)) <= 90 and "R in 0 % of the samples" in said
    assert "(101)" not in said  # R in every sample: nothing to say


@needs_root
def test_buffered_reads_on_a_loop_device_show_fio_and_the_kernel_workers(loopdev, runs, capsys, monkeypatch):
    """Seed 001's finding, small: buffered random reads keep fio waiting while kernel
    threads (the loop device's workers) do the reads. The sampler keeps normal priority here:
    at SCHED_IDLE (its default, so it never delays the loop workers) it barely runs beside
    other tests' load, and what it sees, not its timing, is the point of this test."""
    monkeypatch.setattr(threads, "lower_priority", lambda: "normal (test)")
    knobs.drop_caches()
    result = measure(
        {"rw": "randread", "bs": "4k", "ioengine": "psync", "direct": 0, "runtime": "1500ms", "time_based": 1},
        loopdev,
        cpus=[CPU],
        runs_dir=runs,
        how={"threads": True},
    )
    got = threadstates.load(result.path)
    # every interval of the 1.5 s run taken or counted as skipped (a loaded CPU may delay ticks:
    # their timing is not the point), and enough taken to see what fio and the kernel do
    assert got.ticks + got.meta["skipped_ticks"] >= 20 and got.ticks >= 5 and got.meta["interval_s"] == 0.05
    assert got.meta["late_ticks"] <= got.ticks
    assert got.meta["workload_pid"] and CPU not in got.meta["sampler_cpus"]  # off fio's CPU
    assert any(v["on_cpu_s"] > 0 for v in got.meta["workload_on_cpu"].values())  # fio's schedstat read
    tab = threadstates.table(result.path, by=["comm", "state", "syscall"])
    fio = tab[tab.comm == "fio"]
    assert "D" in set(fio.state) and set(fio.state) <= {"R", "D", "S"}  # its job reads; the parent sleeps
    assert "pread64" in set(fio[fio.state == "D"].syscall)
    kernel = tab[tab.syscall == "[kernel_thread]"]
    assert len(kernel) and set(kernel.state) <= {"R", "D"}, tab
    assert kernel.comm.str.contains("loop").any(), tab  # the loop device's own workers
    row = store.run_table(result.path).iloc[0]  # the run's columns
    assert row.threads_ticks == got.ticks and row.threads_active_avg > 0
    assert cli.main(["threads", str(result.path), "--by", "comm,state"]) == 0
    out = capsys.readouterr().out
    assert "fio" in out and "avg_active_threads" in out and "kworker" in out
    samples = pd.read_csv(result.path / "samples_threads.csv")
    assert samples.tick.max() < json.loads((result.path / "threads.json").read_text())["ticks"]


def test_a_sampler_that_fails_keeps_what_it_had_and_says_why(tmp_path):
    with ThreadSampler(interval_s=0.01, proc=tmp_path / "no-proc") as sampler:
        time.sleep(0.05)
    got = sampler.samples()
    assert got.ticks == 0 and got.meta["error"].startswith("FileNotFoundError")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    for name, text in got.files().items():
        (run / name).write_text(text)
    assert threadstates.table(run).empty and "sampling stopped early (FileNotFoundError" in threadstates.notes(run)
