"""Pooled percentiles on real fio outputs (tests/fixtures/fio, recorded with fio 3.33; the
published outputs of fio 2.18-3.14 in shared/fixtures): every expected number is computed
here by hand from the raw JSON — bins summed with plain Python, then fio's rule (stat.c
calc_clat_percentiles: the first bin whose cumulative count reaches p % of all IOs)."""

import io
import json
import math
import shutil

import pandas as pd
import pytest

from iolab.core.errors import FioOutputError, InputError
from iolab.read.fiojson import latency_bins
from iolab.read.pool import pool_outputs, report_of
from support.marks import needs_shared
from support.paths import FIXTURES, PUBLISHED

REC = FIXTURES / "fio"
PS = {"50": 50, "90": 90, "95": 95, "99": 99, "99_9": 99.9, "99_99": 99.99}


def raw(name):
    return json.loads((REC / name).read_text())


def hand_percentile(jobs, direction, p, kind="clat_ns"):
    """µs: the bins of ``jobs`` summed, then the first bin whose running count >= p % of all."""
    counts = {}
    for job in jobs:
        for ns, n in job[direction][kind]["bins"].items():
            counts[int(ns)] = counts.get(int(ns), 0) + n
    total, running = sum(counts.values()), 0
    for ns in sorted(counts):
        running += counts[ns]
        if running >= p / 100 * total:
            return ns / 1000


def weighted_clat_mean_us(jobs, direction):
    ios = sum(j[direction]["total_ios"] for j in jobs)
    return sum(j[direction]["clat_ns"]["mean"] * j[direction]["total_ios"] for j in jobs) / ios / 1000


def check_percentiles(row, jobs, direction, kind="clat"):
    for name, p in PS.items():
        assert row[f"{kind}_p{name}_us"] == hand_percentile(jobs, direction, p, f"{kind}_ns"), name


def test_jobs_of_one_output_are_summed_and_their_bins_pooled():
    jobs = raw("jsonplus_numjobs3.json")["jobs"]  # numjobs=3, no group_reporting
    row = pool_outputs(REC / "jsonplus_numjobs3.json").iloc[0]
    assert row.direction == "read" and row.pooled_as == "1 file x 3 jobs (concurrent, summed)"
    assert row.iops == pytest.approx(sum(j["read"]["iops"] for j in jobs), rel=1e-12)
    assert row.bw_bytes_s == sum(j["read"]["bw_bytes"] for j in jobs)
    assert row.total_ios == sum(j["read"]["total_ios"] for j in jobs)
    assert row.clat_mean_us == pytest.approx(weighted_clat_mean_us(jobs, "read"), rel=1e-12)
    assert row.clat_max_us == max(j["read"]["clat_ns"]["max"] for j in jobs) / 1000
    check_percentiles(row, jobs, "read")
    assert row.percentiles_from == "pooled bins" and row.percentile_source == "clat"
    # the average of the jobs' own p99s is not the pooled p99 (nor any bin)
    mean_of_p99s = sum(j["read"]["clat_ns"]["percentile"]["99.000000"] for j in jobs) / 3 / 1000
    assert row.clat_p99_us == 79.36 and mean_of_p99s == pytest.approx(79.7013, abs=1e-4)


def test_one_job_pooled_alone_is_what_fio_reported():
    job = raw("jsonplus_randread.json")["jobs"][0]
    row = pool_outputs([REC / "jsonplus_randread.json"]).iloc[0]
    assert row.pooled_as == "1 file x 1 job"
    for name, key in (("50", "50.000000"), ("99", "99.000000"), ("99_9", "99.900000")):
        assert row[f"clat_p{name}_us"] == job["read"]["clat_ns"]["percentile"][key] / 1000


def test_repeats_in_files_are_averaged_and_all_bins_pooled():
    names = ["jsonplus_numjobs3.json", "jsonplus_randread.json", "jsonplus_lat_percentiles.json"]
    docs = [raw(n) for n in names]
    per_file_iops = [sum(j["read"]["iops"] for j in d["jobs"]) for d in docs]
    per_file_bw = [sum(j["read"]["bw_bytes"] for j in d["jobs"]) for d in docs]
    every_job = [j for d in docs for j in d["jobs"]]
    row = pool_outputs([REC / n for n in names]).iloc[0]
    assert row.pooled_as == "3 files (repeats, averaged) x 1-3 jobs (concurrent, summed)"
    assert row.iops == pytest.approx(sum(per_file_iops) / 3, rel=1e-12)
    assert row.bw_bytes_s == pytest.approx(sum(per_file_bw) / 3, rel=1e-12)
    assert row.total_ios == sum(j["read"]["total_ios"] for j in every_job)
    assert row.io_bytes == sum(j["read"]["io_bytes"] for j in every_job)
    assert row.clat_mean_us == pytest.approx(weighted_clat_mean_us(every_job, "read"), rel=1e-12)
    check_percentiles(row, every_job, "read")
    # parsed dicts pool the same as paths; concurrent files are summed
    by_dict = pool_outputs(docs)
    assert by_dict.drop(columns="percentile_note").equals(
        pool_outputs([REC / n for n in names]).drop(columns="percentile_note")
    )
    assert by_dict.percentile_note[0].startswith("lat: input 1 (and 1 more) has no json+ lat bins")
    together = pool_outputs([REC / n for n in names], files="concurrent").iloc[0]
    assert together.iops == pytest.approx(sum(per_file_iops), rel=1e-12)
    assert together.pooled_as.startswith("3 files (concurrent, summed) x")
    assert together.clat_p99_us == row.clat_p99_us


def test_lat_percentiles_pool_lat_bins():
    job = raw("jsonplus_lat_percentiles.json")["jobs"]  # lat_percentiles=1: clat and lat bins
    row = pool_outputs(REC / "jsonplus_lat_percentiles.json").iloc[0]
    check_percentiles(row, job, "read", "clat")
    check_percentiles(row, job, "read", "lat")
    assert row.percentile_note == ""


def test_client_server_pools_hosts_and_leaves_out_all_clients():
    stats = raw("jsonplus_client_server.json")["client_stats"]
    assert stats[-1]["jobname"] == "All clients"  # fio's own sum: counting it would double
    table = pool_outputs(REC / "jsonplus_client_server.json").set_index("direction")
    for direction, job in (("read", stats[0]), ("write", stats[1])):
        row = table.loc[direction]
        assert row.total_ios == job[direction]["total_ios"]
        assert row.iops == job[direction]["iops"]
        check_percentiles(row, [job], direction)


def test_read_and_write_of_a_mixed_job_are_pooled_apart():
    job = raw("jsonplus_randrw.json")["jobs"]
    table = pool_outputs(REC / "jsonplus_randrw.json").set_index("direction")
    assert list(table.index) == ["read", "write"]
    for direction in ("read", "write"):
        check_percentiles(table.loc[direction], job, direction)


def test_an_output_without_bins_gives_nan_and_the_reason():
    table = pool_outputs([REC / "jsonplus_randread.json", REC / "json_randread.json"])
    row = table.iloc[0]
    assert all(math.isnan(row[f"clat_p{n}_us"]) for n in PS)  # never an average of percentiles
    assert pd.isna(row.percentiles_from) and row.percentile_source == "none"
    assert (
        f"clat: {REC / 'json_randread.json'} has no json+ clat bins: run fio with --output-format=json+"
        in row.percentile_note
    )
    iops = [raw(n)["jobs"][0]["read"]["iops"] for n in ("jsonplus_randread.json", "json_randread.json")]
    assert row.iops == pytest.approx(sum(iops) / 2, rel=1e-12)


def test_unmeasured_latency_is_nan_not_zero():
    row = pool_outputs(REC / "json_gtod_reduce.json").iloc[0]
    assert math.isnan(row.clat_mean_us) and math.isnan(row.clat_min_us) and math.isnan(row.clat_max_us)
    assert "fio measured no clat (gtod_reduce=1 or disable_clat=1)" in row.percentile_note
    assert row.total_ios == raw("json_gtod_reduce.json")["jobs"][0]["read"]["total_ios"]


@needs_shared
def test_published_outputs_of_other_fio_versions():
    """fio 3.1 QD files as repeats (no bins: NaN and why), fio 2.18's µs latencies, fio 3.14
    numjobs=4 with group_reporting (one entry: fio already summed it)."""
    pub = PUBLISHED / "fio-published"
    paths = [
        pub / "p05_fio-3.14_ssd_randread_qd16_nj4/randread-16-4.json",
        pub / "p01_fio-2.18_randread_qd1/randread-01.json",
    ]
    jobs = [json.loads(p.read_text())["jobs"][0]["read"] for p in paths]
    row = pool_outputs(paths).iloc[0]
    assert row.pooled_as == "2 files (repeats, averaged) x 1 job"
    assert row.iops == pytest.approx((jobs[0]["iops"] + jobs[1]["iops"]) / 2, rel=1e-12)
    ios = [j["total_ios"] for j in jobs]
    clat_us = [jobs[0]["clat_ns"]["mean"] / 1000, jobs[1]["clat"]["mean"]]  # fio 2.x: µs
    assert row.clat_mean_us == pytest.approx((clat_us[0] * ios[0] + clat_us[1] * ios[1]) / sum(ios), rel=1e-12)
    assert math.isnan(row.clat_p99_us) and "--output-format=json+" in row.percentile_note
    sweep = sorted((pub / "p02_fio-3.1_ssd_pm883_randread_qd_sweep").glob("randread-*.json"))
    assert pool_outputs(sweep).iloc[0].total_ios == sum(
        json.loads(p.read_text())["jobs"][0]["read"]["total_ios"] for p in sweep
    )


def test_fio_2_bins_are_converted_to_ns():
    assert latency_bins({"clat": {"min": 1, "max": 9, "bins": {"10": 3}}}, "clat") == {"10000": 3}
    assert latency_bins({"clat_ns": {"bins": {"10": 3}}}, "clat") == {"10": 3}
    assert latency_bins({"clat_ns": {"mean": 1}}, "clat") is None


def test_run_folders_pool_their_fio_json(tmp_path):
    names = ["jsonplus_numjobs3.json", "jsonplus_randread.json"]
    dirs = []
    for i, name in enumerate(names):
        (tmp_path / f"run{i}").mkdir()
        shutil.copy(REC / name, tmp_path / f"run{i}" / "fio.json")
        dirs.append(tmp_path / f"run{i}")
    pooled = pool_outputs([report_of(d) for d in dirs]).drop(columns="percentile_note")
    assert pooled.equals(pool_outputs([REC / n for n in names]).drop(columns="percentile_note"))
    (tmp_path / "tio").mkdir()
    with pytest.raises(InputError, match="not a fio run folder"):
        pool_outputs([report_of(dirs[0]), report_of(tmp_path / "tio")])


def test_what_cannot_be_pooled_is_refused():
    with pytest.raises(FioOutputError, match="fio error 20"):
        pool_outputs([REC / "jsonplus_randread.json", REC / "json_job_error.json"])
    two_groups = raw("jsonplus_numjobs3.json")
    two_groups["jobs"][1]["groupid"] = 1  # as stonewall writes it: may have run one after another
    with pytest.raises(InputError, match="2 reporting groups"):
        pool_outputs(two_groups)
    with pytest.raises(InputError, match="'repeats'"):
        pool_outputs(REC / "jsonplus_randread.json", files="averaged")
    with pytest.raises(InputError, match="nothing to pool"):
        pool_outputs([])


def iolab(*args):
    """``iolab ARGS`` in this process (support.cli.cli_here)."""
    from support.cli import cli_here

    return cli_here(*args)


def test_cli_pool(tmp_path):
    files = [REC / "jsonplus_numjobs3.json", REC / "jsonplus_randread.json"]
    out = iolab("parse", *files, "--pool")
    assert out.returncode == 0, out.stderr
    csv = pd.read_csv(io.StringIO(out.stdout))
    assert csv.clat_p99_us[0] == pool_outputs(files).clat_p99_us[0]
    rows = json.loads(iolab("parse", *files, "--pool", "--format", "json", "--files-are", "concurrent").stdout)
    assert rows[0]["pooled_as"].startswith("2 files (concurrent, summed)")
    single = iolab("parse", files[0])  # unchanged without --pool
    assert single.stdout.splitlines()[0].startswith("job_index,job,groupid,hostname")
    for args, words in (
        ((*files,), "add --pool"),
        ((files[0], tmp_path, "--pool"), "is a folder"),
        ((files[0], "--files-are", "repeats"), "add --pool"),
        ((files[0], next((FIXTURES / "tio").glob("*.txt")), "--pool"), "t/io_uring output"),
        ((files[0], tmp_path / "missing.json", "--pool"), "no such"),
    ):
        bad = iolab("parse", *args)
        assert bad.returncode == 1 and bad.stdout == "", args
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith("iolab parse:") and words in line, line
