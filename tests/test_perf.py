"""perf around real fio runs (the software cpu-clock event works in this VM)."""

import json
import os
import shutil
import subprocess
from collections import Counter

import pandas as pd
import pytest

from iolab.core.errors import PerfError
from iolab.machine.perf import (
    STAT_TIDY_V1,
    Profiler,
    ProfileSpec,
    fold_perf_data,
    parse_stat,
    probe,
    script_argv,
    stat_columns,
)
from iolab.machine.target import scratch_file
from iolab.measure.runner import measure
from iolab.read import profile as prof
from iolab.read.fold import FoldOptions, fold_lines
from iolab.runs import producers, store
from iolab.runs.runcache import load_runs
from iolab.runs.store import load_stacks
from iolab.stats.cycles import add_cycles_per_io
from support.cpus import CPU
from support.fio import QUICK
from support.paths import FIXTURES

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="CPU-wide perf needs root here")


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("perf")
    target = scratch_file(tmp, "32m")
    return measure(
        {**QUICK, "ioengine": "io_uring", "iodepth": 8, "direct": 1, "runtime": "2s"},
        target,
        cpus=[CPU],
        runs_dir=tmp / "runs",
        how={"profile": ProfileSpec(freq_hz=499)},
    )


def test_probe_explains_this_machine():
    caps = probe()
    assert caps.perf and caps.can_record
    if not caps.hardware_counters:
        assert "no hardware counters" in caps.explain()


@root_only
def test_profile_of_a_real_run(profiled):
    names = {p.name for p in profiled.path.iterdir()}
    assert {"perf.data", "perf.folded", "perf_stat.csv", "perf_stat_window.json"} <= names
    assert names <= {*store.FILES, *(f for p in producers.PRODUCERS for f in p.files)}  # all declared
    # shares of the busy samples: idle time on the pinned CPU varies with the VM's load
    # (the pinned CPU is shared with the rest of a loaded machine: a busy suite's QEMU and
    # notebook kernels can hold most of its samples, so fio's own are judged among themselves)
    stacks = prof.without_idle(load_stacks(profiled.path))
    fio = Counter({s: n for s, n in stacks.items() if s.startswith("fio;")})
    assert sum(fio.values()) > 0.05 * sum(stacks.values())  # fio's job process is named (pinned at birth)
    assert prof.share_under(fio, "io_uring_enter") > 10  # io_uring submissions are on fio's CPU time
    cats = prof.categories(prof.without_idle(stacks))
    assert abs(cats.pct.sum() - 100) < 1e-6 and "io_uring" in set(cats.kind)


@root_only
def test_folding_perf_data_directly_equals_the_text_route(profiled):
    data = profiled.path / "perf.data"
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True).stdout
    via_text = fold_lines(text.splitlines(keepends=True), FoldOptions(kernel=True))
    direct = fold_perf_data(data, FoldOptions(kernel=True))

    # fio's stacks: the process lives through the whole recording, so both routes name it
    # the same way (a short-lived process that exits mid-run may be named differently)
    def fio_only(stacks):
        return {s: n for s, n in stacks.items() if s.split(";")[0] == "fio"}

    assert fio_only(direct.stacks) == fio_only(via_text.stacks) and sum(fio_only(direct.stacks).values()) > 0
    assert "time" in script_argv(data)[script_argv(data).index("-F") + 1]


@root_only
def test_perf_stat_and_cycles_two_ways(profiled):
    stat = parse_stat(profiled.path / "perf_stat.csv")
    assert {"task-clock", "context-switches"} <= set(stat.event)
    table = load_runs(profiled.path.parent)
    t = add_cycles_per_io(table)
    assert t.cycles_per_io.iloc[0] > 0 and t.perf_window_s.iloc[0] > 1.5
    if probe().hardware_counters:
        assert t.cycles_per_io_perf.iloc[0] > 0
    else:
        assert pd.isna(t.cycles_per_io_perf.iloc[0]) and "no hardware counters" in t.perf_cycles_source.iloc[0]


def test_perf_stat_columns_from_recorded_outputs(tmp_path):
    """perf stat as the Profiler runs it, recorded here (tests/fixtures/record_perf_stat.sh)."""
    shutil.copy(FIXTURES / "perf/stat_hardware_list.csv", tmp_path / "perf_stat.csv")
    (tmp_path / "perf_stat_window.json").write_text(json.dumps({"window_s": 1.27}))
    cols = stat_columns(tmp_path)
    assert cols["perf_task_clock_ms"] == 1273.22 and cols["perf_window_s"] == 1.27
    assert pd.isna(cols["perf_cycles"]) and cols["perf_cycles_source"].startswith("none: no hardware counters")


def test_schema_1_perf_window_is_still_read(tmp_path):
    """Schema 1 kept the window as a fake 'window_s' event appended to perf_stat_tidy.csv."""
    shutil.copy(FIXTURES / "perf/stat_software.csv", tmp_path / "perf_stat.csv")
    old = pd.concat(
        [
            parse_stat(tmp_path / "perf_stat.csv"),
            pd.DataFrame([{"event": "window_s", "value": 1.31, "unit": "s", "supported": True, "running_pct": 100.0}]),
        ],
        ignore_index=True,
    )
    old.to_csv(tmp_path / STAT_TIDY_V1, index=False)
    cols = stat_columns(tmp_path)
    assert cols["perf_window_s"] == 1.31 and cols["perf_task_clock_ms"] == 1313.80
    (tmp_path / STAT_TIDY_V1).unlink()
    assert pd.isna(stat_columns(tmp_path)["perf_window_s"])  # not recorded: NaN, never a guess


def test_no_perf_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/nonexistent")
    caps = probe()
    assert not caps.perf and "apt-get install linux-perf" in caps.explain()
    with pytest.raises(PerfError, match="linux-perf"):
        Profiler(tmp_path, [0], caps=caps)


def test_unprivileged_user_is_told_about_paranoid_and_kptr():
    paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    kptr = int(open("/proc/sys/kernel/kptr_restrict").read())
    text = probe(as_root=False).explain()
    assert ("perf_event_paranoid is" in text) == (paranoid > 1)
    assert ("kptr_restrict is" in text) == (kptr > 0)
    if paranoid > 1:
        assert "sysctl kernel.perf_event_paranoid=1" in text


def test_process_mode_follows_fio_from_its_start(tmp_path):
    r = measure(
        {**QUICK, "ioengine": "io_uring", "iodepth": 4, "runtime": "1s"},
        scratch_file(tmp_path, "16m"),
        cpus=[CPU],
        runs_dir=tmp_path / "runs",
        how={"profile": ProfileSpec(mode="process", freq_hz=499)},
    )
    roots = {s.split(";")[0] for s in load_stacks(r.path)}
    assert roots == {"fio"}  # only fio's own tree, every process named
    assert json.loads((r.path / "argv.json").read_text())["argv"][:2] == ["perf", "record"]


def test_a_profile_with_no_busy_sample_reads_as_empty_tables_not_errors():
    """The NVMe lab's TCG guest gave notebook 04 a profile that was 100 % idle (the guest's
    cpu-clock saw only its halt loop): its tables are empty, with their columns."""
    from collections import Counter

    from iolab.read import profile as prof

    idle = Counter({"swapper;secondary_startup_64_no_verify_[k];native_safe_halt_[k]": 50})
    busy = prof.without_idle(idle)
    assert list(prof.categories(busy).assign(pct=lambda d: d.pct.round(1)).columns) == ["kind", "pct"]
    assert prof.frames(busy, 15).empty and prof.share_under(busy, "td_io_commit") == 0
    assert "100 % of the samples are idle" in prof.describe(idle, ("td_io_commit",))
