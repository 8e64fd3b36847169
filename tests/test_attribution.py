"""Only fio's work, or say so: a CPU hog pinned beside fio (issue P30). fio's own CPU time,
cycles per IO and flame graph leave the hog out; the core-busy figures keep it and say so; the
run is flagged where its numbers appear."""

import os
from collections import Counter

import pandas as pd
import pytest

from iolab.machine.perf import ProfileSpec, stacks_scope
from iolab.machine.stress import stressed
from iolab.measure.runner import measure
from iolab.read.fold import Folded, by_threads
from iolab.read.samples import _worker_name
from iolab.record import provenance
from iolab.record.history import readable, rows
from iolab.runs.store import load_stacks
from iolab.stats.cycles import OWN_SOURCE, add_cycles_per_io
from support.cpus import CPU

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="CPU-wide perf needs root here")


@root_only
def test_a_cpu_hog_beside_fio_is_flagged_and_left_out_of_fio_s_own_figures(scratch, tmp_path):
    job = {"ioengine": "io_uring", "iodepth": 8, "direct": 1, "rw": "randread", "runtime": "2s"}
    with stressed([CPU]):  # stress-ng --cpu 1 on fio's own CPU, stopped by its pid
        result = measure(job, scratch, cpus=[CPU], runs_dir=tmp_path, how={"profile": ProfileSpec(freq_hz=499)})
    row = add_cycles_per_io(result.table).iloc[0]
    assert row.other_cpu_pct > 25 and row.own_cpu_pct > 5, (row.other_cpu_pct, row.own_cpu_pct)
    assert row.cycles_per_io_source == OWN_SOURCE
    assert row.cycles_per_io < 0.8 * row.cycles_per_io_core  # the core's busy time holds the hog's
    assert "shared_cpu: shared CPU:" in row["flags"] and "other programs" in row["flags"]
    own, every = load_stacks(result.path), load_stacks(result.path, whole_cpu=True)
    roots = Counter(stack.split(";", 1)[0] for stack in every)
    assert any(r.startswith("stress-ng") for r in roots), roots  # perf saw the hog on the CPU
    assert not any(s.startswith("stress-ng") for s in own) and sum(own.values()) > 0
    scope = stacks_scope(result.path)
    assert scope.startswith("fio's threads (") and "stress-ng" in scope
    assert stacks_scope(result.path, whole_cpu=True) == "every program on its CPUs"
    note = provenance.shared_cpu_note([result.path])
    assert note.startswith("shared CPU: up to ") and note.endswith("(1 of 1 runs)")
    kept = {"results": [{"name": "IOPS", "value": row.iops, "unit": "IO/s"}], "run_folders": [str(result.path)]}
    history = pd.DataFrame(rows(kept, "x.ipynb"))
    assert readable(history)["flags"].iloc[0] == note  # the history says it beside the number


def test_samples_are_told_apart_by_thread_and_workers_named_without_numbers():
    folded = Folded(Counter({"fio-10/11;io_uring_enter": 5, "stress-ng-cpu-20/20;main": 7, "iou-sqp-10-10/12;x": 2}))
    every, own = by_threads(folded, {11, 12})
    assert every.stacks == Counter({"fio;io_uring_enter": 5, "stress-ng-cpu;main": 7, "iou-sqp-10;x": 2})
    assert own.stacks == Counter({"fio;io_uring_enter": 5, "iou-sqp-10;x": 2})
    names = ("iou-sqp-4242", "iou-wrk-17", "kworker/u8:1+loop0", "kworker/u8:2-loop12")
    assert [_worker_name(n) for n in names] == ["iou-sqp", "iou-wrk", "kworker loop0", "kworker loop12"]


def test_a_thread_born_inside_the_window_counts_from_zero_and_kworkers_do_not():
    """A 0.3 s run: the samplers tick at 0, 0.5 and 0.57 s; fio's job is forked after the first
    tick (first seen with 16 ticks used), a loop kworker is first seen by name later with 1,249
    ticks from long before. The job's ticks count whole; the kworker's only from its first sight."""
    from iolab.read.samples import USER_HZ, attribution

    cols = {  # samples_procs.csv, as iolab.machine.proctree writes it
        "t_s": [0.0, 0.5, 0.5, 0.57, 0.57, 0.57],
        "tid": [10, 10, 12, 10, 12, 99],
        "comm": ["setpriv", "fio", "fio", "fio", "fio", "kworker/u8:1-loop0"],
        "kind": ["own", "own", "own", "own", "own", "device"],
        "utime": [0, 0, 2, 0, 2, 0],
        "stime": [0, 0, 14, 0, 17, 1249],
        "cpu": [1, 1, 1, 1, 1, 0],
    }
    seen = attribution(cols, [0.0, 0.5, 0.57], {1})
    assert seen["own_cpu_pct"] == pytest.approx(100 * 19 / USER_HZ / 0.57)
    assert seen["device_worker_cpu_pct"] == 0 and seen["workers"] == ""


@root_only
def test_a_short_profiled_run_still_knows_fio_s_threads(scratch, tmp_path):
    """fio's job process of a 0.2 s run can be forked and gone between two 0.5 s ticks: its
    thread ids are gathered every 20 ms, so its samples are still fio's own. fio's null engine
    keeps its job on the CPU the whole run (with psync on the scratch file, a loaded machine once
    left 8 samples on the CPU in all, none of them fio's: nothing of the rule to judge)."""
    job = {"ioengine": "null", "rw": "randread", "runtime": "200ms", "time_based": 1}
    result = measure(job, scratch, cpus=[CPU], runs_dir=tmp_path, how={"profile": ProfileSpec(freq_hz=999)})
    own = load_stacks(result.path)
    assert sum(n for stack, n in own.items() if stack.startswith("fio;")) > 0, own.most_common(3)
