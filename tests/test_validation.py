"""Bad input refused before a run, with what to do; wrong results no longer silent.
Real fio runs (1 s each) against a scratch file where the case is about a run."""

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from iolab.core import validate
from iolab.core.errors import FioError, FioOutputError, InputError
from iolab.core.validate import fio_time
from iolab.machine.fio import raise_for_failure
from iolab.machine.target import resolve
from iolab.measure.runner import measure
from iolab.measure.sweep import Grid, sweep
from iolab.read.fiojson import find_json, parse_output, run_warnings
from iolab.runs.store import read_run
from iolab.stats.knee import find_knee
from iolab.studies import qd_sweep
from support.cpus import CPU
from support.devices import mkfs_ext4, tmpfs
from support.fio import QUICK
from support.marks import needs_root
from support.nobody import run_as_nobody
from support.paths import FIXTURES, PUBLISHED, REPO


# ---------------------------------------------------------------- runtime: seconds -> fio time
def test_fio_time_is_exact():
    assert [fio_time(s) for s in (2, 2.0, 0.5, 1.5, 0.0125, 0.001, 3600)] == [
        "2s",
        "2s",
        "500ms",
        "1500ms",
        "12500us",
        "1ms",
        "3600s",
    ]
    for bad in (0, -5, float("nan"), 1e-7, "x"):
        with pytest.raises(InputError):
            fio_time(bad)


def test_half_a_second_runs_half_a_second(scratch, runs):
    """runtime_s=0.5 used to become runtime=0.5s, which fio reads as 0 (one pass)."""
    result = measure({**QUICK, "runtime": fio_time(0.5)}, scratch, cpus=[CPU], runs_dir=runs)
    assert "runtime=500ms" in (result.path / "job.fio").read_text().split()  # what fio was told, exactly
    # fio ran it (not 0: one pass over the file); how far a loaded machine stretches it past its
    # 500 ms is no matter here, but not by ten times
    assert 400 <= result.table.iloc[0].runtime_ms < 5000


def test_no_runtime_is_formatted_by_hand():
    pattern = re.compile(r"""["']runtime["']\s*:\s*f["']""")
    for path in [*REPO.glob("lib/iolab/*.py"), *REPO.glob("notebooks/*.ipynb")]:
        assert not pattern.search(path.read_text()), f"{path}: use iolab.core.validate.fio_time"


@pytest.mark.parametrize(
    "name,value,words",
    [
        ("runtime", 0.5, "500ms"),
        ("runtime", "0.5s", "500ms"),
        ("runtime", "-5", "negative"),
        ("runtime", 0, "at least 1"),
        ("ramp_time", "1.5s", "1500ms"),
        ("iodepth", 0, ">= 1"),
        ("iodepth", -1, ">= 1"),
        ("iodepth", 2.5, "whole number"),
        ("iodepth", "abc", "whole number"),
        ("numjobs", 0, ">= 1"),
        ("iodepth_batch_submit", -1, ">= 0"),
        ("bs", "1.5m", "size"),
        ("bs", 0, "size"),
        ("size", "-4k", "size"),
        ("iodepth", True, "needs a value"),
    ],
)
def test_fio_options_fio_would_misread(name, value, words):
    with pytest.raises(InputError, match=re.escape(words)):
        validate.check_fio_options({name: value})


def test_fio_options_that_are_fine():
    validate.check_fio_options(
        {
            "runtime": "2s",
            "ramp_time": 0,
            "startdelay": "1-5",
            "iodepth": "32",
            "iodepth_batch_submit": 0,
            "bs": "4k,8k",
            "size": "50%",
            "numjobs": 2.0,
            "rw": "randread",
            "hipri": True,
        }
    )


# ---------------------------------------------------------------- the measure check, CPUs
def test_check_measure(tmp_path):
    validate.check_measure({"iodepth": 4}, cpus=[CPU], runs_dir=tmp_path / "r")
    with pytest.raises(InputError, match="iodepth"):
        validate.check_measure({"iodepth": 0})
    with pytest.raises(InputError, match="does not exist"):
        validate.check_measure({}, cpus=[(os.cpu_count() or 1) + 64])
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="runs folder.*--runs-dir"):
        validate.check_measure({}, runs_dir=tmp_path / "file" / "runs")


def test_cpu_lists():
    assert validate.cpu_list("0-2,5") == [0, 1, 2, 5] and validate.cpu_list("1,1") == [1]
    for bad, words in (("abc", "taskset"), ("2-1", "backwards"), ("0,", "taskset")):
        with pytest.raises(InputError, match=words):
            validate.cpu_list(bad)
    allowed = sorted(os.sched_getaffinity(0))
    assert validate.check_cpus(allowed) == allowed
    with pytest.raises(InputError, match="does not exist.*online CPUs"):
        validate.check_cpus([max(allowed) + 64])


# ---------------------------------------------------------------- queue depths, notebook lists
@pytest.mark.parametrize("depths", [[0, 1], [-4], [2.5], ["x"], [True], [], "1 2"])
def test_bad_queue_depths_run_nothing(depths, scratch, runs):
    with pytest.raises(InputError):
        qd_sweep(scratch, depths, QUICK, runs_dir=runs)
    assert not runs.exists() or not any(runs.iterdir())


def test_list_parameters_from_papermill_strings():
    assert validate.list_param("queue_depths", "[1,2]") == [1, 2]
    assert validate.list_param("queue_depths", [1, 2]) == [1, 2]
    assert validate.positive_ints("queue_depths", "[1, 4]") == [1, 4]
    assert validate.dict_param("compare_a", '{"direct": 1}') == {"direct": 1}
    with pytest.raises(InputError, match=re.escape("-y 'queue_depths: [1, 2]'")):
        validate.list_param("queue_depths", "1 2")


@pytest.mark.slow
def test_notebook_refuses_a_list_as_plain_string(tmp_path, monkeypatch):
    from iolab.core.errors import IolabError
    from iolab.report.publish import execute

    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    with pytest.raises(IolabError, match=re.escape("-y 'queue_depths: [1, 2]'")):
        execute(
            REPO / "notebooks/01_queue_depth_knee.ipynb",
            tmp_path / "01.ipynb",
            {"queue_depths": "1 2", "size": "16m", "interactive": False},
        )
    assert not list((tmp_path / "data").glob("runs/*/*/fio.json"))  # nothing ran


# ---------------------------------------------------------------- resume keyed on the whole job
def test_sweep_resumes_only_the_same_job(scratch, runs):
    def folders():
        return sorted(p.name for p in runs.iterdir() if not p.name.startswith("."))

    first = sweep(Grid({"iodepth": [1]}, base={**QUICK, "bs": "4k"}), target=scratch, cpus=[CPU], runs_dir=runs)
    assert len(folders()) == 1
    other = sweep(Grid({"iodepth": [1]}, base={**QUICK, "bs": "8k"}), target=scratch, cpus=[CPU], runs_dir=runs)
    assert len(folders()) == 2, "other base options must not reuse the 4k run"
    assert list(other.run_id) != list(first.run_id) and len(other) == 1
    params = json.loads((runs / other.run_id.iloc[0] / "params.json").read_text())
    assert params["fio_options"]["bs"] == "8k"
    again = sweep(Grid({"iodepth": [1]}, base={**QUICK, "bs": "4k"}), target=scratch, cpus=[CPU], runs_dir=runs)
    assert len(folders()) == 2 and list(again.run_id) == list(first.run_id)  # resumed, not re-run


# ---------------------------------------------------------------- what is fio's JSON
def _fixture_files():
    files = [p for p in (FIXTURES / "fio").iterdir()]
    if PUBLISHED.exists():
        files += [p for p in (PUBLISHED / "fio-published").glob("*/*.json") if p.name != "expected.json"]
    return files


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fio_outputs_still_parse(path):
    table = parse_output(path)
    assert len(table) and table.fio_version.iloc[0].startswith("fio-")


def test_other_json_with_jobs_is_not_fio():
    for text in ('{"jobs": [{"name": "x", "read": {"iops": 5}}]}', '{"jobs": []}', '{"client_stats": 3}'):
        with pytest.raises(FioOutputError, match="fio version"):
            find_json(text)
    assert find_json('{"jobs": [{"jobname": "x"}]}').data["jobs"][0]["jobname"] == "x"  # fio without a version
    assert find_json('{"fio version": "fio-3.33", "jobs": []}').data["jobs"] == []
    cut = (FIXTURES / "fio" / "json_randread.json").read_text()[:2000]
    with pytest.raises(FioOutputError, match=r"fio's report is cut short: its JSON stops mid-document after \d+ bytes"):
        find_json(cut)  # said as the run folder's reader says it, not "no fio JSON output found"


# ---------------------------------------------------------------- failures that exit 0, warnings
MOUNTED = """fio: /dev/loop0 appears mounted, and 'allow_mounted_write' isn't set. Aborting.
{"fio version": "fio-3.33", "jobs": [{"jobname": "t", "groupid": 0, "error": 0,
 "read": {"io_bytes": 0, "total_ios": 0, "iops": 0, "runtime": 0},
 "write": {"io_bytes": 0, "total_ios": 0, "iops": 0, "runtime": 0}}]}
"""


def test_aborted_run_with_zero_io_is_an_error():
    doc = find_json(MOUNTED)
    with pytest.raises(FioError, match="did no I/O.*appears mounted"):
        raise_for_failure(doc, "fio: /dev/loop0 appears mounted, and 'allow_mounted_write' isn't set. Aborting.\n")
    with pytest.raises(FioError, match="did no I/O"):
        raise_for_failure(find_json('{"fio version": "fio-3.33", "jobs": []}'))


@needs_root
def test_fio_refusing_a_mounted_device_is_not_an_ok_run(loopdev, runs, tmp_path):
    mkfs_ext4(loopdev.path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", str(loopdev.path), str(mnt)], check=True)
    try:
        with pytest.raises(FioError, match="appears mounted"):
            measure(
                {**QUICK, "rw": "randwrite", "time_based": 0, "size": "1m"},
                loopdev,
                runs_dir=runs,
                how={"allow_destructive": True},
            )
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    assert read_run(next(p for p in runs.iterdir() if not p.name.startswith(".")))["status"] == "failed"


def test_fio_clamp_is_kept_as_a_warning(scratch, runs):
    result = measure({**QUICK, "iodepth": 4}, scratch, cpus=[CPU], runs_dir=runs)  # psync caps it at 1
    assert "queue depth will be capped at 1" in result.table.fio_warnings.iloc[0]
    assert any("capped at 1" in w for w in read_run(result.path)["fio_warnings"])
    fine = measure({**QUICK, "ioengine": "io_uring", "iodepth": 4}, scratch, cpus=[CPU], runs_dir=runs)
    assert fine.table.fio_warnings.iloc[0] == ""


def test_stray_fio_lines_are_warnings():
    doc = find_json("fio: time_based requires a runtime/timeout setting\n" + MOUNTED.split("\n", 1)[1])
    assert run_warnings(doc, "fio: time_based requires a runtime/timeout setting\n") == [
        "fio: time_based requires a runtime/timeout setting"
    ]


@needs_root
def test_write_to_read_only_file_says_so(tmp_path, runs):
    with tmpfs(tmp_path / "ro", files={"data": bytes(4 << 20)}) as ro:
        target = resolve(ro / "data", tmp_path)
        with pytest.raises(FioError) as err:
            measure(
                {**QUICK, "rw": "randwrite"}, target, runs_dir=runs, how={"allow_destructive": True}
            )  # not iolab's file
    assert "fio error 30 (Read-only file system)" in str(err.value) and "(no message)" not in str(err.value)


# ---------------------------------------------------------------- knee
def test_knee_refuses_x_at_or_below_zero_on_log2():
    with pytest.raises(InputError, match="log2"):
        find_knee([0, 1, 2, 4, 8], [0, 10, 20, 38, 47])
    assert find_knee([0, 1, 2, 4, 8, 16, 32], [0, 10, 20, 38, 47, 49, 50], log2_x=False).x is not None


def test_falling_curve_has_no_knee():
    knee = find_knee([1, 2, 4, 8, 16, 32], [50, 49, 47, 38, 20, 10])
    assert knee.x is None and "not increasing" in knee.reason


# ---------------------------------------------------------------- perf's message, whole
@needs_root
def test_perf_message_for_non_root_is_whole():
    import shutil

    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    if not shutil.which("perf") or paranoid < 1:
        pytest.skip("needs perf and perf_event_paranoid >= 1 (CPU-wide profiles refused to non-root)")
    work = Path(tempfile.mkdtemp(prefix="iolab-perf-"))
    try:
        work.chmod(0o777)
        code = (
            "from iolab.machine.perf import Profiler, ProfileSpec, probe\n"
            "from iolab.core.errors import PerfError\n"
            f"p = Profiler({str(work)!r}, [0], ProfileSpec(stat=False), probe())\n"
            "try:\n    p.start()\nexcept PerfError as e:\n    print(e)\n"
        )
        out = run_as_nobody(
            [REPO / ".venv/bin/python", "-c", code], capture_output=True, text=True, cwd="/", timeout=60
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    said = out.stdout
    assert "perf record exited at once: Error: Access to performance monitoring" in said, out
    assert "kernel.perf_event_paranoid = <setting>)" in said  # the end of perf's advice, not cut
