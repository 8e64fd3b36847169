"""The column registry: every tidy-table column with its unit, meaning, source and role.

Plots take their axis labels from here (``label("clat_p99_us")`` -> "clat p99 (µs)"),
so a unit is written once. The role says what a column is for: a ``metric`` is measured
(a y axis), a ``setting`` is swept or chosen (an x axis, a hue, a facet), an ``id`` is
bookkeeping that is never plotted. ``scale`` is the natural axis: ``log2`` for settings
that double (queue depth), ``linear`` otherwise. Columns not listed are swept settings
(any fio option a sweep varied) or ids.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    unit: str
    meaning: str
    source: str
    role: str = "metric"  # metric | setting | id
    scale: str = "linear"  # linear | log2
    better: str = ""  # higher | lower | "" (no better direction): which way a metric improves
    summed: bool = False  # a run's jobs add up (IOPS, bytes): summed over them, not averaged
    skewed: bool = False  # a percentile, or a ratio of two sums: skewed over repeats (a bootstrap interval)


_C = Column
_STAT = "/sys/block/<dev>/stat (blockstat.json): "
COLUMNS: dict[str, Column] = {
    c.name: c
    for c in [
        _C(
            "source",
            "",
            "the fio output file a row came from (iolab parse with several files)",
            "iolab.read.fiojson",
            "id",
        ),
        _C(
            "flags",
            "",
            "the plausibility checks this run failed, in words (empty: all passed; iolab check)",
            "iolab.read.checks",
            "id",
        ),
        _C(
            "instruments",
            "",
            "what measured the run besides fio and the samplers (perf, thread sampler, fio logs)",
            "run folder files (iolab.read.checks)",
            "id",
        ),
        _C(
            "instrument_cost_pct",
            "%",
            "how far an instrumented run's metric lies below the clean runs of its cell",
            "iolab.read.checks.instrument_cost",
        ),
        _C("job_index", "", "position of the job in fio's jobs/client_stats array", "fio JSON", "id"),
        _C("job", "", "fio job name (jobname)", "fio JSON", "id"),
        _C("groupid", "", "fio reporting group", "fio JSON", "id"),
        _C("hostname", "", "fio server host (client/server mode), else empty", "fio JSON", "id"),
        _C(
            "host",
            "",
            "fio server as the user named it (address[:port]), or 'pooled' for all hosts together",
            "iolab.read.hosttable",
            "setting",
        ),
        _C("host_status", "", "ok, or failed: the host returned no report (host_error says why)", "hosts.json", "id"),
        _C("host_error", "", "fio's words for a host that failed mid-run", "hosts.json / fio client output", "id"),
        _C("hosts_n", "", "number of hosts running the job at once", "iolab.studies.many_hosts", "setting"),
        _C("direction", "", "read, write, trim, mixed; 'none' for a job that did no I/O", "fio JSON", "setting"),
        _C("iops", "IO/s", "I/O operations per second", "fio JSON iops", better="higher", summed=True),
        _C(
            "bw_bytes_s",
            "B/s",
            "bandwidth",
            "fio bw_bytes, or bw KiB/s x 1024 before fio 3.2",
            better="higher",
            summed=True,
        ),
        _C("bw_mib_s", "MiB/s", "bandwidth", "fio bw_bytes / 2**20", better="higher", summed=True),
        _C("io_bytes", "B", "bytes transferred", "fio io_bytes (KiB x 1024 in fio 2.x)", summed=True),
        _C("total_ios", "IOs", "I/Os completed", "fio JSON total_ios", summed=True),
        _C("runtime_ms", "ms", "time the direction was active", "fio JSON runtime"),
        _C("slat_mean_us", "µs", "mean submission latency", "fio slat_ns / 1000", better="lower"),
        _C("clat_mean_us", "µs", "mean completion latency", "fio clat_ns / 1000", better="lower"),
        _C("clat_min_us", "µs", "minimum completion latency", "fio clat_ns", better="lower"),
        _C("clat_max_us", "µs", "maximum completion latency", "fio clat_ns", better="lower"),
        _C("clat_stddev_us", "µs", "standard deviation of completion latency", "fio clat_ns", better="lower"),
        _C("lat_mean_us", "µs", "mean total latency (submission + completion)", "fio lat_ns / 1000", better="lower"),
        _C("usr_cpu_pct", "%", "fio process user CPU (rusage) relative to one CPU", "fio usr_cpu"),
        _C("sys_cpu_pct", "%", "fio process system CPU (rusage) relative to one CPU", "fio sys_cpu"),
        _C("ctx", "", "context switches of the fio job", "fio ctx", "id"),
        _C("error", "", "fio's error number for the job (0 = none)", "fio error", "id"),
        _C("fio_version", "", "fio version that wrote the output", "fio JSON", "id"),
        _C("percentile_source", "", "which latency carries percentiles: clat, lat or none", "iolab", "id"),
        _C(
            "percentiles_from",
            "",
            "'bins' (recomputed from json+ histogram), 'pooled bins' (iolab.read.pool) or 'reported'",
            "iolab",
            "id",
        ),
        _C(
            "pooled_as",
            "",
            "how rows were pooled: files as repeats (IOPS averaged) or concurrent (summed), "
            "jobs/hosts concurrent (summed)",
            "iolab.read.pool",
            "id",
        ),
        _C(
            "percentile_note",
            "",
            "why pooled percentiles are NaN (a job without json+ bins), else empty",
            "iolab.read.pool",
            "id",
        ),
        _C("qd", "IOs", "queue depth (fio iodepth)", "iolab params", "setting", "log2"),
        _C("cpu_busy_pct", "%", "busy share of the pinned CPUs (user+nice+system+irq+softirq)", "/proc/stat"),
        _C("cpu_usr_pct", "%", "user share of the pinned CPUs", "/proc/stat"),
        _C("cpu_sys_pct", "%", "system share of the pinned CPUs", "/proc/stat"),
        _C("cpu_irq_pct", "%", "hard-interrupt share of the pinned CPUs", "/proc/stat"),
        _C("cpu_softirq_pct", "%", "softirq share of the pinned CPUs", "/proc/stat"),
        _C(
            "cpu_steal_pct",
            "%",
            "hypervisor steal share of the pinned CPUs (time the host took away)",
            "/proc/stat steal",
        ),
        _C(
            "cpu_iowait_pct",
            "%",
            "iowait share of the pinned CPUs (idle while I/O was pending; normal for psync)",
            "/proc/stat iowait",
        ),
        _C(
            "host_steal_pct",
            "%",
            "hypervisor steal share of all CPUs (NaN: run sampled before it was recorded)",
            "/proc/stat cpu line",
        ),
        _C(
            "host_busy_pct",
            "%",
            "busy share of all CPUs, machine-wide (NaN: run sampled before it was recorded)",
            "/proc/stat cpu line",
        ),
        _C(
            "other_cpu_pct",
            "%",
            "share of the pinned CPUs' time other programs took: process time (user+nice+system) "
            "beyond the tool's threads and its devices' kernel workers there (older runs: beyond "
            "fio's usr+sys, an estimate), clipped at 0",
            "/proc/stat and /proc/PID/task/TID/stat (else fio usr_cpu+sys_cpu)",
        ),
        _C(
            "own_cpu_pct",
            "%",
            "CPU time of the measured tool's own threads (fio's jobs, io_uring's iou-wrk and iou-sqp "
            "workers in its processes), % of one CPU, over the sampler window",
            "/proc/PID/task/TID/stat (iolab.machine.proctree)",
        ),
        _C(
            "device_worker_cpu_pct",
            "%",
            "CPU time of the kernel workers serving the run's devices (a loop device's kworkers), "
            "% of one CPU, on any CPU; not in cycles per IO",
            "/proc/PID/stat (iolab.machine.proctree)",
        ),
        _C(
            "workers",
            "",
            "worker threads that did the run's work, by name, % of one CPU",
            "iolab.machine.proctree",
            "id",
        ),
        _C("cycles_per_io_source", "", "whose CPU time cycles per IO counts", "iolab analysis", "id"),
        _C(
            "noise_flag",
            "",
            "steal or other load above iolab.machine.sampling's thresholds, in words ('' none)",
            "iolab.machine.sampling",
            "id",
        ),
        _C("busy_cpu_s", "CPU·s", "busy CPU seconds on the pinned CPUs over the trimmed window", "/proc/stat"),
        _C(
            "cpu_freq_mhz",
            "MHz",
            "mean frequency of the pinned CPUs, trimmed 10 % each end",
            "scaling_cur_freq or /proc/cpuinfo",
        ),
        _C("freq_source", "", "where cpu_freq_mhz came from", "iolab", "id"),
        _C(
            "cycles_per_io",
            "cycles/IO",
            "fio's own CPU seconds (its threads, io_uring's workers among them) x frequency / IOs",
            "iolab analysis",
            better="lower",
            skewed=True,
        ),
        _C(
            "cycles_per_io_core",
            "cycles/IO",
            "busy CPU seconds of the pinned CPUs (every program on them) x frequency / IOs",
            "iolab analysis",
            better="lower",
            skewed=True,
        ),
        _C("littles_qd", "IOs", "IOPS x mean latency (Little's law estimate of outstanding IOs)", "iolab analysis"),
        _C("perf_cycles", "cycles", "CPU cycles on the pinned CPUs over the perf window", "perf stat -e cycles -a -C"),
        _C("perf_window_s", "s", "how long perf stat counted", "iolab: perf_stat_window.json (time.monotonic)"),
        _C(
            "cycles_per_io_perf",
            "cycles/IO",
            "perf stat cycles / (IOPS x window)",
            "perf stat",
            better="lower",
            skewed=True,
        ),
        _C("cycles_per_io_disagreement_pct", "%", "perf-based vs core-busy-based cycles/IO", "iolab analysis"),
        _C("self_pct", "%", "share of samples whose leaf is this frame", "folded stacks"),
        _C("inclusive_pct", "%", "share of samples with this frame anywhere on the stack", "folded stacks"),
        _C(
            "dev_read_ios",
            "IOs",
            "read requests the device completed during the run (whole device)",
            "/sys/block/<dev>/stat",
        ),
        _C(
            "dev_read_req_kib",
            "KiB",
            "mean read request size the device saw",
            "/sys/block/<dev>/stat sectors x 512 / IOs",
            skewed=True,
        ),
        _C("dev_write_req_kib", "KiB", "mean write request size the device saw", "/sys/block/<dev>/stat", skewed=True),
        _C(
            "lat_mean_us_littles",
            "µs",
            "mean latency implied by a full queue: QD x threads / IOPS",
            "Little's law (estimate)",
            skewed=True,
        ),
        _C(
            "max_iops", "IO/s", "highest per-second IOPS t/io_uring printed", "t/io_uring", better="higher", summed=True
        ),
        _C(
            "ios_per_submit_call",
            "IOs/call",
            "mean IOs submitted per io_uring_enter call (steady seconds)",
            "t/io_uring IOS/call",
            skewed=True,
        ),
        _C("submitters", "threads", "submitter threads t/io_uring ran", "t/io_uring header", "setting"),
        _C("polled", "", "1: t/io_uring polled for completions (-p 1), 0: interrupts", "t/io_uring header", "setting"),
        _C("seconds", "s", "per-second lines t/io_uring printed", "t/io_uring", "id"),
        _C(
            "mean_lat_us",
            "µs",
            "mean latency: fio's measured, or t/io_uring's Little's-law estimate",
            "see mean_lat_source",
            better="lower",
        ),
        _C("mean_lat_source", "", "where mean_lat_us came from", "iolab", "id"),
        _C("window_s", "s", "length of the trimmed /proc/stat sampling window", "iolab sampler"),
        _C("dev_read_merges", "IOs", "read requests the block layer merged (whole device)", "/sys/block/<dev>/stat"),
        _C(
            "dev_write_ios",
            "IOs",
            "write requests the device completed during the run (whole device)",
            "/sys/block/<dev>/stat",
        ),
        _C("dev_write_merges", "IOs", "write requests the block layer merged (whole device)", "/sys/block/<dev>/stat"),
        # iostat -x's figures from the same counters (iolab.core.system.iostat); the interval is
        # blockstat.json's interval_s: it spans fio's start-up and exit too, so %util and aqu-sz
        # read lower than fio's own; they are NaN for runs recorded before interval_s was
        _C("dev_util_pct", "%", "%util: share of the run with a request in flight", _STAT + "Δio_ticks/interval_s"),
        _C(
            "dev_await_ms",
            "ms",
            "await: mean time a request took, queued and served",
            _STAT + "Δticks/Δios",
            better="lower",
            skewed=True,
        ),
        _C(
            "dev_r_await_ms",
            "ms",
            "r_await: mean time a read took, queued and served",
            _STAT + "read Δticks/Δios",
            better="lower",
            skewed=True,
        ),
        _C(
            "dev_w_await_ms",
            "ms",
            "w_await: mean time a write took, queued and served",
            _STAT + "write Δticks/Δios",
            better="lower",
            skewed=True,
        ),
        _C("dev_aqu_sz", "requests", "aqu-sz: mean requests in flight", _STAT + "Δtime_in_queue/interval_s"),
        # fio's own disk_util for the run's device (iolab.read.fiojson.disk_util; NaN when fio wrote none)
        _C("fio_disk_util_pct", "%", "fio's %util of the device over its sampling window", "fio JSON disk_util util"),
        _C("fio_disk_read_ios", "IOs", "read requests fio saw the device complete", "fio JSON disk_util read_ios"),
        _C("fio_disk_write_ios", "IOs", "write requests fio saw the device complete", "fio JSON disk_util write_ios"),
        _C(
            "fio_disk_aqu_sz",
            "requests",
            "mean requests in flight by fio's disk stats (estimate: fio gives no window, its runtime is taken)",
            "fio JSON disk_util in_queue / longest runtime",
        ),
        _C("perf_task_clock_ms", "ms", "CPU time perf stat counted on the pinned CPUs", "perf stat -e task-clock"),
        _C("perf_cycles_source", "", "what perf_cycles counted (cycles, or an estimate)", "iolab", "id"),
        _C("cpus_sampled", "", "the CPUs /proc/stat was sampled on", "iolab", "id"),
        _C("fio_warnings", "", "warnings fio printed on stderr", "fio", "id"),
        _C("run_id", "", "the run folder's name", "iolab", "id"),
        _C(
            "run_folder",
            "",
            "the run folder, an absolute path: where readers find the row's run",
            "iolab.runs.runcache",
            "id",
        ),
        _C("status", "", "ok, failed or interrupted", "iolab", "id"),
        _C("repeat", "", "repeat index of a swept cell (0-based): what intervals are taken over", "iolab params", "id"),
        _C("tool", "", "what drove the I/O: fio or t/io_uring", "iolab params", "setting"),
        _C("mode", "", "direct (O_DIRECT) or buffered (page cache)", "iolab params", "setting"),
        _C("scheduler", "", "the block device's I/O scheduler", "/sys/block/<dev>/queue/scheduler", "setting"),
        _C(
            "read_ahead_kb",
            "KiB",
            "the block device's readahead window",
            "/sys/block/<dev>/queue/read_ahead_kb",
            "setting",
        ),
        _C("bs", "", "block size, as fio reads it (4k, 1m: base 2)", "iolab params", "setting"),
        _C("bs_bytes", "B", "block size in bytes", "iolab params", "setting", "log2"),
        _C("device", "", "the block device a run used", "iolab params", "setting"),
        _C("devices", "", "how many devices ran at once", "iolab params", "setting"),
        _C("kernel", "", "the running kernel (uname -r)", "system.json kernel", "id"),
        _C(
            "governor",
            "",
            "cpufreq governor of the pinned CPUs ('a/b' if they differ; NaN: no cpufreq)",
            "system.json governor (/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
            "id",
        ),
        _C(
            "scheduler_active",
            "",
            "the target device's active I/O scheduler (NaN: no block device)",
            "system.json queue (/sys/block/<dev>/queue/scheduler)",
            "id",
        ),
        _C(
            "target_state",
            "",
            "what was written to the target before the runs: written whole once, "
            "not preconditioned, or SNIA steady state",
            "system.json target_state (iolab.machine.target.Target.state)",
            "id",
        ),
        _C(
            "emulated",
            "",
            "True for a run made in the NVMe lab (iolab.nvmelab.vm): an emulator's numbers, never a device's",
            "system.json emulated (IOLAB_NVMELAB in the lab's guest)",
            "id",
        ),
        _C(
            "smt",
            "",
            "SMT state (on, off, forceoff, notsupported, ...)",
            "system.json smt (/sys/devices/system/cpu/smt/control)",
            "id",
        ),
        _C(
            "drift",
            "",
            "what changed in the run's system snapshot since the study's first run ('' none)",
            "iolab.stats.drift",
            "id",
        ),
        # thread states (iolab.machine.threads, iolab.read.threadstates): per run, and the columns of threadstates.table
        _C(
            "threads_active_avg",
            "threads",
            "threads active (running, R, or in uninterruptible sleep, D) per tick, "
            "on average: the run's own and the kernel threads",
            "iolab.machine.threads: /proc/PID/task/TID/stat",
        ),
        _C(
            "threads_running_avg",
            "threads",
            "threads in state R (running or runnable) per tick, on average",
            "iolab.machine.threads: /proc/PID/task/TID/stat",
        ),
        _C(
            "threads_d_state_avg",
            "threads",
            "threads in state D (uninterruptible sleep, usually I/O) per tick, on average",
            "iolab.machine.threads: /proc/PID/task/TID/stat",
        ),
        _C(
            "threads_ticks",
            "ticks",
            "passes the thread-state sampler made over /proc during the run",
            "iolab.machine.threads",
            "id",
        ),
        _C(
            "threads_unreadable",
            "entries",
            "/proc entries the thread-state sampler could not read (a thread "
            "that exited, stack without root); threads.json says which",
            "iolab.machine.threads",
            "id",
        ),
        _C(
            "comm",
            "",
            "thread name, digits replaced by * as psn does (kworker/u*:*)",
            "/proc/PID/task/TID/stat",
            "setting",
        ),
        _C(
            "state",
            "",
            "thread state: R running/runnable, D uninterruptible sleep, S sleeping, ...",
            "/proc/PID/task/TID/stat",
            "setting",
        ),
        _C(
            "syscall",
            "",
            "system call the thread was in ([running] on CPU, [kernel_thread])",
            "/proc/PID/task/TID/syscall",
            "setting",
        ),
        _C("wchan", "", "kernel function the thread waits in (0: none)", "/proc/PID/task/TID/wchan", "setting"),
        _C(
            "kstack",
            "",
            "innermost kernel stack frames, caller first (- empty; needs root)",
            "/proc/PID/task/TID/stack",
            "setting",
        ),
        _C(
            "samples", "samples", "thread-state samples of this kind (one per thread per tick)", "iolab.machine.threads"
        ),
        _C(
            "avg_active_threads",
            "threads",
            "samples / ticks: threads of this kind, in this state, on average",
            "iolab.read.threadstates",
        ),
        _C(
            "pct_of_run",
            "%",
            "share of ticks in which at least one thread of this kind was active",
            "iolab.read.threadstates",
        ),
        # over time (iolab.read.series): fio's interval logs, one row per interval, job and direction
        _C(
            "t_s",
            "s",
            "end of the interval, seconds since fio's first job started (on the log_ms grid; sampler "
            "rows: end of the sampler's interval on the same axis)",
            "fio log stamps (CLOCK_MONOTONIC) / iolab samplers",
            "setting",
        ),
        _C("t_start_s", "s", "start of the interval on the same axis as t_s", "iolab.read.series", "id"),
        _C("interval", "", "interval number k of the log_ms grid (t_s = k x log_ms)", "iolab.read.series", "id"),
        _C(
            "interval_s",
            "s",
            "time the interval's histogram line covers (since fio's previous line; longer after a "
            "stretch without completions)",
            "fio clat_hist log stamps",
        ),
        _C(
            "ios",
            "IOs",
            "IOs completed in the interval (0: none; NaN: after fio's last histogram line)",
            "fio clat_hist log: sum of the interval's bins",
        ),
        _C(
            "job_number",
            "",
            "fio's job number N of the logs' .N (job-file order, numjobs clones after their parent)",
            "fio log file name",
            "id",
        ),
        _C(
            "log_ms",
            "ms",
            "fio's interval-log period (log_avg_msec = log_hist_msec)",
            "iolab params (measure log_ms)",
            "setting",
        ),
        _C("series_intervals", "", "intervals in the run's interval logs", "iolab.read.series", "id"),
        _C(
            "series_ios_covered_pct",
            "%",
            "share of fio's IOs the interval logs account for (fio leaves the last, partial interval out)",
            "iolab.read.series: histogram log vs fio JSON total_ios",
        ),
        _C(
            "steady_from_s",
            "s",
            "where the run's steady part starts (fio's steadystate, else SNIA's rule over the "
            "intervals; NaN: not reached) = its warm-up",
            "iolab.stats.timeline.find_steady",
        ),
        _C("stalls", "", "stretches of intervals below half the run's median IOPS", "iolab.stats.timeline.find_stalls"),
        _C(
            "series_note",
            "",
            "why a run's interval logs could not be read ('' when they could)",
            "iolab.read.series",
            "id",
        ),
        _C("fio_ios", "IOs", "IOs fio's report counts (whole run)", "fio JSON total_ios"),
        _C("series_ios", "IOs", "IOs the interval logs account for", "fio clat_hist log (else IOPS x interval, said)"),
        _C(
            "uncovered_ios",
            "IOs",
            "fio's IOs not in its interval logs (the last, partial interval)",
            "iolab.read.series",
        ),
        _C("covered_pct", "%", "series_ios / fio_ios", "iolab.read.series"),
        _C("covered_s", "s", "end of the last interval in the logs", "iolab.read.series"),
        _C("uncovered_s", "s", "how long fio ran after its last logged interval", "fio JSON runtime - covered_s"),
        _C("runtime_s", "s", "time the direction ran, fio's report", "fio JSON runtime"),
        _C(
            "ios_from",
            "",
            "where the series' IO counts come from: the histogram log, or IOPS x interval (an estimate)",
            "iolab.read.series",
            "id",
        ),
        _C("intervals", "", "intervals counted", "iolab.read.series", "id"),
        _C(
            "part",
            "",
            "which part of a run a summary row covers (fio report, logs, steady part)",
            "iolab.stats.timeline.summary",
            "setting",
        ),
        _C("seconds", "s", "length of the part of the run summarised", "iolab.stats.timeline.summary"),
        _C("iops_min", "IO/s", "lowest total IOPS of a stall's intervals", "iolab.stats.timeline.find_stalls"),
        _C("pct_of_median", "%", "a stall's lowest IOPS, % of the run's median", "iolab.stats.timeline.find_stalls"),
    ]
}
for _state, _what in (
    ("R", "running or runnable"),
    ("D", "uninterruptible sleep, usually I/O"),
    ("S", "sleeping"),
    ("I", "idle kernel thread"),
    ("T", "stopped"),
    ("t", "tracing stop"),
    ("Z", "zombie"),
    ("X", "dead"),
    ("P", "parked"),
):
    COLUMNS[f"threads_{_state}"] = Column(
        f"threads_{_state}",
        "threads",
        f"threads in state {_state} ({_what}) per tick, over a sampler interval (iolab.read.series)",
        "iolab.machine.threads samples_threads.csv",
    )
for _m in ("cpu_steal_pct", "cpu_busy_pct", "cpu_iowait_pct", "host_steal_pct", "cpu_freq_mhz"):
    COLUMNS[f"{_m}_run_median"] = Column(
        f"{_m}_run_median",
        COLUMNS[_m].unit,
        f"the run's median of {_m} over its sampler intervals (beside a stall's)",
        "iolab.stats.timeline.find_stalls",
    )
for _p in ("50", "90", "95", "99", "99_9", "99_99"):
    for _kind in ("clat", "lat"):
        COLUMNS[f"{_kind}_p{_p}_us"] = Column(
            f"{_kind}_p{_p}_us",
            "µs",
            f"{_p.replace('_', '.')}th percentile of {_kind}",
            "json+ bins (as fio computes them) or fio's reported percentile",
            better="lower",
            skewed=True,
        )


PERCENTILE = re.compile(r"_p\d+(_\d+)?_us$")  # clat_p99_us, lat_p99_9_us


def better(name: str) -> str:
    """Which way a metric improves, the one rule every comparison, search and plot uses: the
    column's ``better`` — ``"higher"`` (throughput), ``"lower"`` (latency, CPU cycles per IO,
    the device's await), ``""`` (no better direction: CPU busy, frequency, counts, the device's
    %util and queue size); a name not registered that is a latency in µs (``*lat*_us``) is
    ``"lower"``."""
    col = COLUMNS.get(name)
    if col is not None:
        return col.better
    return "lower" if name.endswith("_us") and "lat" in name else ""


HIGHER_IS_BETTER = frozenset(name for name, col in COLUMNS.items() if col.better == "higher")  # throughput


def summed(name: str) -> bool:
    """Whether a run's jobs add up in ``name`` (the column's ``summed``: IOPS, bandwidth,
    bytes, IOs), so a run's figure is their sum rather than their mean."""
    col = COLUMNS.get(name)
    return col is not None and col.summed


def interval_method(name: str) -> str:
    """How the 95 % interval of a metric's mean over repeats is taken, the one rule every
    table, plot and the explorer use (``iolab.stats.repeat_stats.interval``): ``"bootstrap"``
    for a ``skewed`` column — percentiles and ratios of two sums (a skewed tail: the bootstrap
    joined with Student t) —, ``"t"`` (Student t) for the rest, means of additive figures. A
    name not registered is skewed when it is a percentile (``clat_p99_9_us``)."""
    col = COLUMNS.get(name)
    skewed = col.skewed if col is not None else bool(PERCENTILE.search(name))
    return "bootstrap" if skewed else "t"


# what a quantity can be, the one rule every interval the kit prints or plots is clipped to (``bounds``)
NONNEGATIVE_UNITS = {  # rates, counts, sizes, times, cycles, frequencies
    "IO/s", "B/s", "MiB/s", "B", "KiB", "IOs", "IOs/call", "µs", "ms", "s", "cycles", "cycles/IO", "CPU·s",
    "MHz", "GHz", "requests", "threads", "samples", "ticks", "entries",
}  # fmt: skip
SHARES = {"fio_disk_util_pct", "other_cpu_pct", "covered_pct", "series_ios_covered_pct"}  # 0-100 %, besides
# the registered % columns whose meaning says "share"
NONNEGATIVE_PCT = {
    "usr_cpu_pct", "sys_cpu_pct", "fio_cpu_pct", "own_cpu_pct", "device_worker_cpu_pct", "pct_of_median",
    "efficiency_pct", "effect_pct",
}  # fmt: skip
PERCENT_CHANGES = {"change_pct", "ratio_pct", "gain_pct", "vs_first_pct", "freq_change_pct"}  # 100 x (a/b - 1)
NONNEGATIVE_WORDS = {"ios", "sectors", "merges", "requests", "iops", "bw", "lat", "latency", "cycles", "runs"}
DIFFERENCE_WORDS = {"diff", "delta", "change", "gain", "departure", "disagreement", "cost", "error"}  # can be < 0
INTERVAL_WORDS = "95 % CI"
_UNIT_SUFFIXES = {  # an unregistered name's unit, from how it ends
    "_mib_s": "MiB/s",
    "_bytes_s": "B/s",
    "_us": "µs",
    "_ms": "ms",
    "_s": "s",
    "_pct": "%",
    "_mhz": "MHz",
    "_ghz": "GHz",
    "_kib": "KiB",
    "_kb": "KiB",
    "_bytes": "B",
}
_STATS = {  # a summary's suffix -> what it says of the quantity before it
    "_ci_low": f"{INTERVAL_WORDS} low",
    "_ci_high": f"{INTERVAL_WORDS} high",
    "_low": f"{INTERVAL_WORDS} low",
    "_high": f"{INTERVAL_WORDS} high",
    "_mean": "mean",
    "_median": "median",
    "_min": "min",
    "_max": "max",
}
WORDS = {  # names whose words are not their parts
    "ci_low": f"{INTERVAL_WORDS} low",  # an interval beside a mean of the column before it
    "ci_high": f"{INTERVAL_WORDS} high",
    "hosts_n": "hosts",
    "comm": "thread",
    "syscall": "system call",
    "wchan": "waiting in",
    "avg_active_threads": "average active threads",
    "ios": "IOs",
    "pct_of_run": "share of the run",
    "bs_bytes": "block size",
    "bw_bytes_s": "bandwidth",
    "bw_mib_s": "bandwidth",
    "qd": "queue depth",
    "iops": "IOPS",
    "bs": "block size",
    "read_ahead_kb": "readahead",
    "mean_lat_us": "mean latency",
    "cycles_per_io": "CPU cycles per IO, fio's own",
    "cycles_per_io_core": "CPU cycles per IO, whole core, all programs",
    "own_cpu_pct": "fio's own CPU",
    "device_worker_cpu_pct": "device's kernel workers' CPU",
    "other_cpu_pct": "other programs on its CPU",
    "cpu_freq_mhz": "CPU frequency",
    "cpu_busy_pct": "CPU busy",
    "t_s": "time since fio started",
    "dev_util_pct": "device utilisation",
    "dev_await_ms": "device await",
    "dev_aqu_sz": "device queue size",
    "p_value": "p-value",
    "f_stat": "F statistic",
    "littles_ok": "Little's law holds",
    "littles_qd": "Little's law QD",
    "p99_under_target": "p99 under target",
    "roof_x_n": "roof × count",
    "n": "runs",
    "n_runs": "runs",
    "n_a": "runs A",
    "n_b": "runs B",
    "n_cells": "cells",
    "ratio_pct": "difference",
    "low_pct": f"difference {INTERVAL_WORDS} low",
    "high_pct": f"difference {INTERVAL_WORDS} high",
    "effect_pct": "effect (% of the grand mean)",
    "vs_first_pct": "vs the first level",
    "max_departure_pct": "largest departure",
    "unstable_why": "why unstable",
    "low_level": "low level",
    "high_level": "high level",
    "reference_level": "reference level",
    "freq_note": "frequency note",
    "separated": "intervals apart",
    "shown": "interaction shown",
    "freq_source": "frequency from",
    "mean_lat_source": "mean latency from",
    "freq_share_pct": "share the clock explains",
}
_TOKENS = {"iops": "IOPS", "cpu": "CPU", "freq": "frequency", "lat": "latency", "bw": "bandwidth", "io": "IO"}
_TOKENS |= {"ios": "IOs", "qd": "QD", "dev": "device", "avg": "mean", "x": "×"}


def _parts(name: str) -> tuple[str, str, str]:
    """``(quantity, summary, unit)`` of a column name: ``iops_ci_low`` -> ("iops", "95 % CI
    low", "IO/s"); ``efficiency_low_pct`` -> ("efficiency_pct", "95 % CI low", "%");
    ``low_iops`` -> ("iops", "at low level", "IO/s"); ``iops_cv_pct`` -> ("iops", "CV", "%")."""
    if name.endswith("_run_median") and name[:-11] in COLUMNS:
        return name[:-11], "run median", COLUMNS[name[:-11]].unit
    if name in COLUMNS or name in WORDS:
        return name, "", COLUMNS[name].unit if name in COLUMNS else _suffix_unit(name)
    if name.endswith("_cv_pct"):
        return name[:-7], "CV", "%"
    for prefix in ("low_", "high_"):
        rest = name[len(prefix) :]
        if name.startswith(prefix) and (rest in COLUMNS or rest in WORDS):
            return rest, f"at {prefix[:-1]} level", _unit_of(rest)
    for suffix, words in _STATS.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], words, _unit_of(name[: -len(suffix)])
        for end, unit in _UNIT_SUFFIXES.items():  # efficiency_low_pct: the stat before the unit
            if name.endswith(suffix + end) and len(name) > len(suffix + end):
                return name[: -len(suffix + end)] + end, words, unit
    return name, "", _suffix_unit(name)


def _suffix_unit(name: str) -> str:
    return next((unit for end, unit in _UNIT_SUFFIXES.items() if name.endswith(end)), "")


def _unit_of(quantity: str) -> str:
    return COLUMNS[quantity].unit if quantity in COLUMNS else _suffix_unit(quantity)


def _words(quantity: str) -> str:
    if quantity in WORDS:
        return WORDS[quantity]
    col = COLUMNS.get(quantity)
    unit = _unit_of(quantity)
    ends = ("_us", "_ms", "_pct", "_s", "_mhz", "_kib", "_kb", "_ghz")
    words = quantity.rsplit("_", 1)[0] if unit and quantity.endswith(ends) else quantity
    words = words.replace("_p99_9", " p99.9").replace("_p99_99", " p99.99")
    if col:
        return words.replace("_", " ")
    return " ".join(_TOKENS.get(t, t) for t in words.split("_"))


def label(name: str) -> str:
    """A column's label: words and unit, e.g. ``clat p99 (µs)``; for a name the registry does
    not list, words and unit from its parts (``iops_ci_low`` -> "IOPS 95 % CI low (IO/s)",
    ``mean_lat_us_mean`` -> "mean latency mean (µs)", ``change_pct`` -> "change (%)",
    ``p_value`` -> "p-value"). A unit the words already end with is not repeated."""
    quantity, summary, unit = _parts(name)
    words = " ".join(w for w in (_words(quantity), summary) if w)
    return f"{words} ({unit})" if unit and not words.endswith((unit, ")")) else words


def unit(name: str) -> str:
    """A column's unit: the registry's, or read from its name (``bw_bytes_s_mean`` -> "B/s",
    ``duration_s`` -> "s"); "" when it has none."""
    return _parts(name)[2]


PROPER_NAMES = {"io_uring", "io_uring_cmd", "gfapi_async"}  # values with an underscore of their own (fio engines)


def labelled(name: str) -> bool:
    """Whether a table header ``name`` is a column's name that ``label`` spells in words
    (registered, read from its parts, or any other snake_case name), rather than a setting's
    value shown as a header (``PROPER_NAMES``: io_uring; 4k), which stays as it is."""
    quantity, summary, unit = _parts(name)
    known = name in COLUMNS or quantity in COLUMNS or quantity in WORDS or summary or unit
    return bool(known or ("_" in name and name not in PROPER_NAMES))


def bounds(name: str) -> tuple[float, float]:
    """What a quantity can be, ``(low, high)``: the one rule every interval the kit prints or
    plots is clipped to (``iolab.stats.repeat_stats.interval``, the explorer). Counts, rates, sizes,
    latencies, cycles and frequencies from 0 up; shares (CPU busy, %util, coverage) 0-100 %; a
    change 100 x (a/b - 1) of two such quantities from -100 %; any other difference or estimate
    unbounded. A summary column (``iops_ci_low``, ``cpu_busy_pct_mean``) is bounded as its
    quantity; a CV from 0."""
    quantity, summary, unit = _parts(name)
    col = COLUMNS.get(quantity)
    if summary == "CV":
        return 0.0, math.inf
    if quantity in PERCENT_CHANGES or quantity in ("low_pct", "high_pct") or quantity.endswith("_change_pct"):
        return -100.0, math.inf
    if unit == "%":
        if quantity in SHARES or (col is not None and "share" in col.meaning):
            return 0.0, 100.0
        return (0.0, math.inf) if quantity in NONNEGATIVE_PCT else (-math.inf, math.inf)
    words = set(quantity.split("_"))
    if col is None and words & DIFFERENCE_WORDS:
        return -math.inf, math.inf
    if unit in NONNEGATIVE_UNITS or (col is None and NONNEGATIVE_WORDS & words):
        return 0.0, math.inf
    return -math.inf, math.inf


def clipped(low: float, high: float, name: str) -> tuple[float, float]:
    """An interval ``(low, high)`` of ``name`` held within ``bounds(name)`` (NaN stays NaN)."""
    floor, ceiling = bounds(name)
    return (
        min(max(low, floor), ceiling) if low == low else low,
        max(min(high, ceiling), floor) if high == high else high,
    )


def nonnegative(name: str) -> bool:
    """Whether ``name`` can never be below zero (``bounds``): rates, counts, sizes, times, CPU
    busy, cycles (not a difference, a gain or an estimate that subtracts)."""
    return bounds(name)[0] >= 0


SETTING_ALIASES = {  # another name of a setting -> fio's own option name, the one a comparison matches on
    "qd": "iodepth",  # iolab's queue-depth column (iolab.studies.qd)
    "queue_depth": "iodepth",
    "blocksize": "bs",  # fio's aliases (fio --cmdhelp=OPTION, "alias:")
    "block_size": "bs",
    "blockalign": "ba",
    "readwrite": "rw",
    "timeout": "runtime",
    "jobs": "numjobs",
    "engine": "ioengine",
    "mode": "direct",  # iolab.studies.kernel_path: direct 1 / buffered 0
}
SIZE_SETTINGS = frozenset({"bs", "ba", "size", "io_size", "filesize", "offset"})  # fio sizes: 4k = 4096
FIO_DEFAULTS = {  # what fio uses for an option a job does not give (fio --cmdhelp=OPTION, "default:"; Linux)
    "iodepth": 1,
    "numjobs": 1,
    "bs": "4k",
    "rw": "read",
    "direct": 0,
    "ioengine": "psync",
    "rwmixread": 50,
}


def setting_name(name: str) -> str:
    """The one name of a setting, fio's own option name: ``qd`` and ``iodepth`` -> ``iodepth``,
    ``blocksize`` -> ``bs`` (``SETTING_ALIASES``); any other name as it is."""
    return SETTING_ALIASES.get(str(name).strip(), str(name).strip())
