"""The fio parser on recorded real outputs: fio 2.18 to 3.34 (shared fixtures, with
expected values extracted independently) and fio 3.33 outputs recorded here
(tests/fixtures/record.sh)."""

import json
import math
import subprocess
import sys

import pytest

from iolab.core.errors import FioOutputError
from iolab.machine.fio import to_argv, to_jobfile
from iolab.read.fiojson import load_document, merge_bins, parse_output, percentiles_from_bins, tidy
from support.marks import needs_shared
from support.paths import FIXTURES, PUBLISHED

REC = FIXTURES / "fio"
REQUIRED = [
    "job_index",
    "job",
    "groupid",
    "hostname",
    "direction",
    "iops",
    "bw_bytes_s",
    "io_bytes",
    "total_ios",
    "runtime_ms",
    "clat_mean_us",
    "clat_p50_us",
    "clat_p99_us",
    "clat_p99_9_us",
    "lat_mean_us",
    "usr_cpu_pct",
    "sys_cpu_pct",
    "ctx",
    "error",
    "fio_version",
]


def published_cases():
    if not PUBLISHED.exists():
        return []
    cases = []
    for expected in sorted((PUBLISHED / "fio-published").glob("*/expected.json")):
        for name, exp in json.loads(expected.read_text()).items():
            cases.append(pytest.param(expected.parent / name, exp, id=f"{expected.parent.name}/{name}"))
    return cases


@needs_shared
@pytest.mark.parametrize("path,expected", published_cases())
def test_published_fio_versions(path, expected):
    table = parse_output(path)
    assert list(table.columns[: len(REQUIRED)]) == REQUIRED
    assert table["fio_version"].iloc[0] == expected["fio_version"]
    for i, job in enumerate(expected["jobs"]):
        rows = table[table.job_index == i]
        assert (rows["error"] == job["error"]).all()
        assert rows["usr_cpu_pct"].iloc[0] == pytest.approx(job["usr_cpu"], rel=1e-9)
        assert rows["ctx"].iloc[0] == job["ctx"]
        dirs = [d for d in ("read", "write", "trim") if d in job]
        if not dirs:
            assert list(rows["direction"]) == ["none"]
        for d in dirs:
            row = rows[rows.direction == d].iloc[0]
            e = job[d]
            assert row.iops == pytest.approx(e["iops"], rel=1e-9)
            assert row.bw_bytes_s == pytest.approx(e["bw_bytes"], rel=1e-9)
            assert row.io_bytes == e["io_bytes"]
            assert row.total_ios == e["total_ios"]
            assert row.runtime_ms == e["runtime_ms"]
            assert row.clat_mean_us * 1000 == pytest.approx(e["clat"]["mean_ns"], rel=1e-9)
            assert row.clat_p50_us * 1000 == pytest.approx(e["clat"]["p50_ns"], rel=1e-12)
            assert row.clat_p99_us * 1000 == pytest.approx(e["clat"]["p99_ns"], rel=1e-12)
            assert row.clat_p99_9_us * 1000 == pytest.approx(e["clat"]["p99.9_ns"], rel=1e-12)
            assert row.percentiles_from == "reported"


@needs_shared
def test_text_before_json_is_kept_as_warnings():
    doc = load_document(PUBLISHED / "fio-published/p07_fio-3.33_error_before_json/write-64-1.json")
    assert len(doc.text_before) == 3 and doc.text_before[0].startswith("fio")
    doc = load_document(PUBLISHED / "fio-published/p08_fio-3.34_sigint_before_json/randread-1-1.json")
    assert any("terminating on signal 2" in line for line in doc.text_before)


def test_bins_reproduce_fio_percentiles_exactly():
    """json+ carries both fio's percentiles and the histogram: recomputing from the bins
    must give fio's own numbers."""
    for name in (
        "jsonplus_randread.json",
        "jsonplus_randrw.json",
        "jsonplus_numjobs3.json",
        "jsonplus_lat_percentiles.json",
    ):
        data = load_document(REC / name).data
        for job in data["jobs"]:
            for d in ("read", "write"):
                for kind in ("clat_ns", "lat_ns"):
                    obj = job[d].get(kind, {})
                    if not obj.get("bins"):
                        continue
                    reported = {float(k): v for k, v in obj["percentile"].items()}
                    assert percentiles_from_bins(obj["bins"], reported) == reported, (name, d, kind)


def test_jsonplus_uses_bins():
    row = parse_output(REC / "jsonplus_randread.json").iloc[0]
    assert row.percentiles_from == "bins" and row.percentile_source == "clat"
    assert 0 < row.clat_p50_us <= row.clat_p99_us <= row.clat_p99_9_us <= row.clat_max_us * 1.008


def test_merged_bins_give_group_percentiles():
    jobs = load_document(REC / "jsonplus_numjobs3.json").data["jobs"]
    merged = merge_bins(*(j["read"]["clat_ns"]["bins"] for j in jobs))
    assert sum(merged.values()) == sum(j["read"]["clat_ns"]["N"] for j in jobs)
    p = percentiles_from_bins(merged, [50.0, 99.0])
    singles = [percentiles_from_bins(j["read"]["clat_ns"]["bins"], [99.0])[99.0] for j in jobs]
    assert min(singles) <= p[99.0] <= max(singles)


def test_numjobs_without_group_reporting_indexes_by_position():
    table = parse_output(REC / "jsonplus_numjobs3.json")
    assert list(table.job_index) == [0, 1, 2] and set(table.job) == {"nj"}
    grouped = parse_output(REC / "jsonplus_numjobs3_group.json")
    assert len(grouped) == 1
    assert grouped.iops.iloc[0] == pytest.approx(table.iops.sum(), rel=0.25)


def test_mixed_rw_gives_two_rows():
    table = parse_output(REC / "jsonplus_randrw.json")
    assert list(table.direction) == ["read", "write"]
    assert table.iops.iloc[0] > table.iops.iloc[1] > 0  # rwmixread=70


def test_jobfile_with_two_jobs():
    table = parse_output(REC / "jsonplus_jobfile_two_jobs.json")
    assert list(zip(table.job, table.direction)) == [("reader", "read"), ("writer", "write")]


def test_lat_percentiles():
    row = parse_output(REC / "jsonplus_lat_percentiles.json").iloc[0]
    assert row.lat_p99_us >= row.clat_p99_us * 0.99 and not math.isnan(row.lat_p50_us)


def test_gtod_reduce_has_no_latency_but_iops():
    row = parse_output(REC / "json_gtod_reduce.json").iloc[0]
    assert row.iops > 0 and math.isnan(row.clat_mean_us) and math.isnan(row.clat_p99_us)
    assert row.percentile_source == "none"


def test_failed_job_keeps_one_row_with_its_error():
    doc = load_document(REC / "json_job_error.json")
    assert any("Not a directory" in line for line in doc.text_before)
    table = tidy(doc)
    assert list(table.direction) == ["none"] and table.error.iloc[0] == 20


def test_json_plus_normal_mixed_output():
    doc = load_document(REC / "jsonplus_normal.txt")
    assert any("IOPS=" in line for line in doc.text_after + doc.text_before)
    assert tidy(doc).iops.iloc[0] > 0


def test_client_server_hostnames():
    table = parse_output(REC / "jsonplus_client_server.json")
    assert set(table.hostname) == {"127.0.0.1"}
    assert "All clients" in set(table.job)


def test_status_interval_takes_the_final_document():
    table = parse_output(REC / "json_status_interval.json")
    assert table.runtime_ms.iloc[0] > 1500  # the 2 s final report, not the 1 s interim one


def test_no_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "out.txt"
    bad.write_text("fio: unrecognized option '--bogus'\n")
    with pytest.raises(FioOutputError, match="no fio JSON output found.*unrecognized option"):
        parse_output(bad)
    cli = subprocess.run([sys.executable, "-m", "iolab.cli", "parse", str(bad)], capture_output=True, text=True)
    assert cli.returncode == 1 and "Traceback" not in cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1


def test_option_dicts_to_argv_and_jobfile():
    opts = {
        "name": "a",
        "rw": "randread",
        "iodepth": 32,
        "hipri": True,
        "norandommap": False,
        "percentile_list": [50, 99],
    }
    assert to_argv(opts) == [
        "fio",
        "--name=a",
        "--rw=randread",
        "--iodepth=32",
        "--hipri",
        "--norandommap=0",
        "--percentile_list=50:99",
    ]
    text = to_jobfile({"r": {"rw": "read"}}, {"bs": "4k"})
    assert text.splitlines()[:4] == ["[global]", "bs=4k", "", "[r]"]
