"""A job means what fio says it means, and a report's figures must agree with each other:
every --name= job runs and is tabled, fio's work stays on the CPUs iolab locks and samples,
no layout reaches past the target's end, and the arithmetic checks (Little's law, clat <= lat,
rates, CPU accounting) flag what cannot be true (iolab.read.plausible, iolab.machine.jobcpus)."""

import json
import re
import shutil

import pytest

from iolab.cli import main
from iolab.core.errors import InputError, TargetError
from iolab.measure.runner import measure
from iolab.read import checks
from iolab.read.fiojson import load_document, tidy
from iolab.read.plausible import arithmetic_checks
from support.cpus import CPU, OTHER_CPU
from support.fio import QUICK
from support.paths import FIXTURES

ARITHMETIC = ("littles_law", "clat_le_lat", "rates", "cpu_accounting")
REC = FIXTURES / "fio"


def no_run_folder(runs):
    assert not runs.exists() or not list(runs.iterdir())


def _arithmetic(run_dir):
    return [c for c in checks.run_checks(run_dir) if c.name in ARITHMETIC]


def test_every_named_job_runs_on_its_own_rows(tmp_path, capsys):
    """`--name=a --rw=randread --name=b --rw=read --numjobs=2`: two jobs in the job file, a
    row each (b's clones summed), options before the first --name global to both; the three
    processes on one CPU are said; two jobs of one name are refused."""
    runs = tmp_path / "r"
    base = ["run", "--scratch-dir", str(tmp_path / "s"), "--target-size", "8m", "--runs-dir", str(runs)]
    base += ["--cpus", str(CPU), "--runtime=300ms", "--ioengine=psync"]
    assert main([*base, "--name=a", "--rw=randread", "--name=b", "--rw=read", "--numjobs=2"]) == 0
    out, err = capsys.readouterr()
    (run,) = runs.iterdir()
    text = (run / "job.fio").read_text()
    assert "[a]" in text and "[b]" in text and text.count("ioengine=psync") == 2
    doc = load_document(run / "fio.json")
    table = tidy(doc)
    assert sorted(table["job"]) == ["a", "b"]
    assert dict(zip(table["job"], table["direction"])) == {"a": "read", "b": "read"}
    rw = {j["jobname"]: j["job options"]["rw"] for j in doc.data["jobs"]}
    assert rw == {"a": "randread", "b": "read"}
    assert "3 fio processes and SQ poll threads share 1 CPU" in " ".join(
        json.loads((run / "run.json").read_text())["fio_warnings"]
    )
    found = _arithmetic(run)
    assert {c.name for c in found} == set(ARITHMETIC) and all(c.passed for c in found), found
    little = [c for c in found if c.name == "littles_law"]
    assert sorted(c.figures["depth"] for c in little) == [1, 2]  # b: iodepth 1 x numjobs 2

    assert main([*base, "--name=a", "--rw=read", "--name=a", "--rw=randread"]) == 1
    assert "two jobs named 'a'" in capsys.readouterr().err
    assert len(list(runs.iterdir())) == 1


def test_sqthread_poll_is_pinned_counted_and_its_clat_judged(scratch, runs):
    """sqthread_poll without its CPU: iolab names one within --cpus, so the SQ thread is locked
    and sampled; the clat fio reports beside it is judged against its lat (fio 3.33 reports a
    mean clat far above lat here: flagged, and Little's law with it)."""
    job = {**QUICK, "ioengine": "io_uring", "direct": 1, "iodepth": 64, "sqthread_poll": 1}
    result = measure(job, scratch, cpus=[CPU], runs_dir=runs)
    assert f"sqthread_poll_cpu={CPU}" in (result.path / "job.fio").read_text()
    found = {c.name: c for c in _arithmetic(result.path)}
    assert found["cpu_accounting"].passed and found["cpu_accounting"].figures["fio_cpus"] == [CPU]
    row = result.table.iloc[0]
    above = row["clat_mean_us"] > row["lat_mean_us"] * 1.001 + 0.01
    assert found["clat_le_lat"].passed is not above
    if above:
        assert "clat_le_lat" in row["flags"]
    assert "share 1 CPU" in " ".join(json.loads((result.path / "run.json").read_text())["fio_warnings"])
    assert "2 fio processes and SQ poll threads shared 1 CPU" in found["cpu_accounting"].words


def test_fio_work_off_the_locked_cpus_is_refused(scratch, runs):
    """cpus_allowed / cpumask / sqthread_poll_cpu outside --cpus: refused before a run folder."""
    if OTHER_CPU == CPU:
        pytest.skip("needs two CPUs")
    for extra, said in (
        ({"cpus_allowed": str(OTHER_CPU)}, f"runs fio on CPU(s) {OTHER_CPU}"),
        ({"cpumask": str(1 << OTHER_CPU)}, f"runs fio on CPU(s) {OTHER_CPU}"),
        ({"ioengine": "io_uring", "sqthread_poll": 1, "sqthread_poll_cpu": OTHER_CPU}, f"SQ thread on CPU {OTHER_CPU}"),
    ):
        with pytest.raises(InputError, match=re.escape(said)):
            measure({**QUICK, **extra}, scratch, cpus=[CPU], runs_dir=runs)
    no_run_folder(runs)


def test_a_layout_past_the_targets_end_is_refused(scratch, runs):
    """offset=10g on a 32 MiB scratch file would grow it on its file system; offset_increment
    x numjobs likewise: each refused with the sizes, nothing run."""
    size = scratch.path.stat().st_size
    with pytest.raises(TargetError, match=r"reach 10\.0 GiB .* a file of 32\.0 MiB"):
        measure({**QUICK, "offset": "10g"}, scratch, cpus=[CPU], runs_dir=runs)
    with pytest.raises(TargetError, match=r"offset_increment=16m, size=33554432, numjobs=3, which reach 64\.0 MiB"):
        measure({**QUICK, "offset_increment": "16m", "numjobs": 3}, scratch, cpus=[CPU], runs_dir=runs)
    assert scratch.path.stat().st_size == size
    no_run_folder(runs)


def test_a_layout_past_a_devices_end_is_refused(loopdev, runs):
    with pytest.raises(TargetError, match=r"reach 1\.0 GiB .* a device of 64\.0 MiB"):
        measure({**QUICK, "offset": "1g"}, loopdev, cpus=[CPU], runs_dir=runs)
    no_run_folder(runs)


def test_an_edited_report_fails_check_and_a_real_run_passes(scratch, runs, tmp_path, capsys):
    """A real 0.3 s run passes every arithmetic check; its fio.json edited to claim 10^11 IOPS
    fails `iolab check` (exit 3) on Little's law and on its rates."""
    result = measure({**QUICK, "rw": "randread"}, scratch, cpus=[CPU], runs_dir=runs)
    found = _arithmetic(result.path)
    assert found and all(c.passed for c in found), found
    edited = tmp_path / "edited"
    shutil.copytree(result.path, edited)
    data = json.loads((edited / "fio.json").read_text())
    data["jobs"][0]["read"]["iops"] = 1e11
    (edited / "fio.json").write_text(json.dumps(data))
    (edited / checks.FILE).unlink()
    assert main(["check", str(edited)]) == 3
    out = capsys.readouterr().out
    assert "FLAG littles_law" in out and "FLAG rates" in out and "1 of 1 runs flagged" in out


def test_recorded_reports_judged():
    """Real fio reports: numjobs=3 with --group_reporting holds 3 IOs (not 1); the SQ poll run
    (fio 3.33, QD 64, no sqthread_poll_cpu) fails clat <= lat and Little's law by clat, holds
    it by lat, and is not proven counted on the CPUs sampled."""
    group = load_document(REC / "jsonplus_numjobs3_group.json")
    found = {c.name: c for c in arithmetic_checks(tidy(group), group.data, None)}
    assert found["littles_law"].passed and found["littles_law"].figures["depth"] == 3
    sq = load_document(REC / "jsonplus_sqthread_poll.json")
    found = {c.name: c for c in arithmetic_checks(tidy(sq), sq.data, {"cpus": [0], "fio_options": {}})}
    assert found["clat_le_lat"].passed is False and found["littles_law"].passed is False
    little = found["littles_law"].figures
    assert little["in_flight_lat"] <= 64 * 1.25 < little["in_flight_clat"]
    assert found["rates"].passed
    assert found["cpu_accounting"].passed is False and "SQ thread the kernel placed" in found["cpu_accounting"].words


def test_jobs_that_name_their_own_files_take_none_of_the_targets_options(tmp_path):
    """`--name=a --filename=F ...`: the scratch target's filename and size stay out of the
    global section when every job names its file (its size would grow a user's file to the
    scratch file's); one job without a file keeps them."""
    from iolab.machine.target import scratch_file
    from iolab.measure.planned import job_options

    target = scratch_file(tmp_path / "s", "1m")
    assert {"filename", "size"} <= set(target.fio_options)
    own = [{"name": "a", "filename": str(tmp_path / "a")}, {"name": "b", "directory": str(tmp_path)}]
    opts = job_options({"rw": "read"}, target, [CPU], jobs=own)
    assert "size" not in opts and "filename" not in opts and opts["cpus_allowed"] == str(CPU)
    opts = job_options({"rw": "read"}, target, [CPU], jobs=[own[0], {"name": "c"}])
    assert opts["size"] == target.fio_options["size"] and opts["filename"] == target.fio_options["filename"]
