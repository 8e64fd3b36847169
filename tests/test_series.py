"""fio's interval logs as a time series (iolab.read.series): a real 3 s run at 500 ms checked against
fio's own report, and recorded run folders (tests/fixtures/record_series.py) for steady
state, stalls, client/server logs and the edge cases."""

import json
import math
import shutil

import matplotlib
import numpy as np
import pytest

from iolab.core.errors import FioOutputError, InputError
from iolab.machine import logrequest
from iolab.read import fiojson, fiologs, series
from iolab.stats import timeline
from iolab.stats.steady_state import steady_state
from support.cpus import CPU
from support.fio import QUICK
from support.paths import FIXTURES

matplotlib.use("Agg")
REC = FIXTURES / "series"


def fio_rule(bins: dict, p: float) -> float:
    """fio's calc_clat_percentiles written another way: the sorted latencies of every IO,
    the one at rank ceil(p/100 x N)."""
    values = np.repeat([int(k) for k in bins], [bins[k] for k in bins])
    values.sort()
    return float(values[max(0, math.ceil(p / 100.0 * len(values)) - 1)])


def copy(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(REC / name, dest)
    return dest


def test_a_three_second_run_at_500_ms_accounts_for_fio_s_ios(scratch, runs):
    from iolab.measure.runner import measure

    run = measure(
        {**QUICK, "rw": "randrw", "runtime": "3s", "numjobs": 2},
        scratch,
        cpus=[CPU],
        runs_dir=runs,
        how={"log_ms": 500},
    )
    s = series.read_series(run.path)
    doc = json.loads((run.path / "fio.json").read_text())
    runtime_s = max(j[d]["runtime"] for j in doc["jobs"] for d in ("read", "write")) / 1000
    assert sorted(s.table["job_number"].unique()) == [1, 2]  # numjobs=2: logs per job, though group_reporting
    for (_job, _direction), rows in s.table.groupby(["job_number", "direction"]):
        # one row per full interval fio logged: 1..n with no gap, n = 5 or 6 in 3 s (fio leaves out the last)
        assert list(rows["interval"]) == list(range(1, len(rows) + 1)) and len(rows) in (5, 6)
        assert np.allclose(rows["t_s"], rows["interval"] * 0.5)
        # fio stamps a histogram line at the first completion after an interval's end: the
        # lines cover the run from its start without a gap, each at least most of an interval
        # (a CPU-starved fio stamps late: a 3 s run's lines once summed to 4.9 s)
        assert rows["interval_s"].sum() >= rows["t_s"].iloc[-1] - 0.1
        assert (rows["interval_s"] >= 0.2).all()
        # the histogram log and the IOPS log count the same IOs (where both have the interval)
        both = rows.dropna(subset=["ios", "iops"])
        assert both["ios"].sum() == pytest.approx((both["iops"] * 0.5).sum(), rel=0.05)
    for direction in ("read", "write"):
        fio_total = sum(j[direction]["total_ios"] for j in doc["jobs"])
        cov = s.coverage.set_index("direction").loc[direction]
        assert (
            cov["fio_ios"] == fio_total
            and cov["series_ios"] == s.table.loc[s.table.direction == direction, "ios"].sum()
        )
        # the IOs add up to fio's total minus the reported uncovered part: the last partial interval
        assert (
            cov["series_ios"] + cov["uncovered_ios"] == fio_total and cov["uncovered_ios"] >= 0
        )  # 0: fio ended on an interval edge (seen under load)
        assert cov["uncovered_s"] == pytest.approx(runtime_s - cov["covered_s"]) and 0 <= cov["uncovered_s"] < 1.0
        assert cov["uncovered_ios"] <= 1.5 * fio_total / runtime_s * cov["uncovered_s"] + 50
        # the pooled histogram is fio's json+ histogram without the uncovered IOs: same bins
        # (fio's index -> latency mapping), never more IOs in a bin, the rest = the uncovered part
        report = fiojson.merge_bins(*[fiojson.latency_bins(j[direction], "clat") for j in doc["jobs"]])
        pooled = s.pooled_bins(direction)
        assert set(pooled) <= set(report) and all(v <= report[k] for k, v in pooled.items())
        rest = {k: v - pooled.get(k, 0) for k, v in report.items()}
        assert sum(rest.values()) == cov["uncovered_ios"] and min(rest.values()) >= 0
        # fio's own percentiles: its report's are its bins' by the rule; the series' are the
        # covered IOs' by the same rule (checked here by ranking every IO)
        reported = {float(k): v for k, v in doc["jobs"][0][direction]["clat_ns"]["percentile"].items()}
        assert fiojson.percentiles_from_bins(fiojson.merge_bins(pooled, rest), [50, 99, 99.9]) == {
            p: reported[p] for p in (50.0, 99.0, 99.9)
        }
        logs = timeline.summary(s).set_index(["part", "direction"]).loc[("logs (covered intervals)", direction)]
        for name, p in (("50", 50), ("99", 99), ("99_9", 99.9)):
            assert logs[f"clat_p{name}_us"] * 1000 == fio_rule(pooled, p)
    row = run.table.iloc[0]  # the producer's per-run columns
    assert row["log_ms"] == 500 and row["series_intervals"] == s.table["interval"].max() and row["series_note"] == ""
    # on the samplers' clock: the sampler started with the fio process, fio's jobs a little later
    assert 0 < s.fio_start_s < 2 and s.samplers["t_start_s"].min() == pytest.approx(-s.fio_start_s, abs=1e-3)
    assert s.samplers["t_s"].max() == pytest.approx(runtime_s, abs=0.6)


def test_fio_s_bin_index_is_the_latency_json_plus_reports():
    s = series.read_series(REC / "mixed")
    doc = json.loads((REC / "mixed/fio.json").read_text())
    for direction in ("read", "write"):
        report = fiojson.latency_bins(doc["jobs"][0][direction], "clat")
        assert set(s.pooled_bins(direction)) <= set(report)
    for idx in (0, 127, 128, 191, 192, 1855):
        low, high = fiologs.bin_edges_ns(idx)
        assert low <= fiologs.plat_idx_to_val(idx) < high
    assert (
        fiologs.hist_layout(1856) == (29, 0)
        and fiologs.hist_layout(1216) == (19, 0)
        and fiologs.hist_layout(464) == (29, 2)
    )
    with pytest.raises(FioOutputError, match="1856"):
        fiologs.hist_layout(1000)


def test_a_stall_is_found_with_what_the_samplers_saw():
    s = series.read_series(REC / "stall")  # fio's job stopped (SIGSTOP) for 1.5 s about 3 s in
    stalls = timeline.find_stalls(s)
    assert len(stalls) == 1
    stall = stalls.iloc[0]
    assert stall["t_s"] - stall["t_start_s"] >= 1.0 and stall["pct_of_median"] < 50
    # the samplers saw it: the pinned CPU idle while fio was stopped
    assert stall["cpu_busy_pct"] < stall["cpu_busy_pct_run_median"]
    # the line fio wrote after the stop covers the whole stretch since its previous one
    assert s.table["interval_s"].max() >= 1.5 and s.table["ios"].sum() == s.coverage["series_ios"].sum()
    text = timeline.reading(s, timeline.find_steady(s), stalls)
    assert "1 stall below 50 % of the median" in text and "the samplers saw" in text
    assert list(timeline.stall_table(stalls).columns) == list(timeline.STALL_COLUMNS)  # notebook 08's: fits 828 px
    with pytest.raises(InputError, match="between 0 and 1"):
        timeline.find_stalls(s, 50)


@pytest.mark.parametrize("limits", [{}, {"range_pct": 60.0, "slope_pct": 30.0}])
def test_steady_state_is_snia_s_rule_over_the_intervals(limits):
    s = series.read_series(REC / "stall")
    steady = timeline.find_steady(s, **limits)
    iops = s.totals()["iops"].to_numpy()
    verdicts = [steady_state(iops[i : i + 5], **limits)[0] for i in range(len(iops) - 4)]
    assert steady.method == "SNIA rule" and steady.reached == any(verdicts)
    if steady.reached:  # the first window that holds starts the steady part; the warm-up is before it
        first = verdicts.index(True)
        assert steady.from_s == steady.warmup_s == s.totals()["t_start_s"].iloc[first]
        parts = timeline.summary(s, steady)
        part = parts[parts["part"].str.startswith("logs, steady state")].iloc[0]
        assert part["ios"] == s.table.loc[s.table["t_s"] > steady.from_s, "ios"].sum()
    else:
        assert "no window holds" in steady.text
    short = timeline.find_steady(series.read_series(REC / "mixed"), window=50)
    assert not short.reached and "fewer than its window" in short.text


def test_fio_s_own_steadystate_is_used_when_the_job_asked_for_it():
    s = series.read_series(REC / "ss")
    ss = json.loads((REC / "ss/fio.json").read_text())["jobs"][0]["steadystate"]
    steady = timeline.find_steady(s)
    assert steady.method == "fio steadystate" and steady.reached == bool(ss["attained"])
    assert ss["criterion"] in steady.text


def test_the_summary_puts_fio_s_report_beside_the_logs():
    s = series.read_series(REC / "mixed")
    doc = json.loads((REC / "mixed/fio.json").read_text())
    parts = timeline.summary(s).set_index(["part", "direction"])
    for direction in ("read", "write"):
        whole = parts.loc[("fio report (whole run)", direction)]
        assert whole["ios"] == doc["jobs"][0][direction]["total_ios"]
        assert whole["iops"] == pytest.approx(doc["jobs"][0][direction]["iops"])
        assert (
            parts.loc[("logs (covered intervals)", direction), "ios"]
            == s.coverage.set_index("direction").loc[direction, "series_ios"]
        )


def test_client_server_logs_carry_their_host_and_their_overlap_is_undone():
    s = series.read_series(REC / "cs")  # fio --client: fio_iops.1.log.127.0.0.1
    doc = json.loads((REC / "cs/fio.json").read_text())
    entry = doc["client_stats"][0]
    assert set(s.table["host"]) == {entry["hostname"]} and s.table["job"].iloc[0] == entry["jobname"]
    # fio 3.33's client writes line i as interval i + i-2 + ...: the raw lines overlap ...
    raw = np.loadtxt(next((REC / "cs").glob("fio_clat_hist.*")), delimiter=",")[:, 3:].sum(axis=1)
    assert raw[2] > 1.1 * (s.table["iops"].iloc[2] * s.table["interval_s"].iloc[2])
    # ... undone, it is fio's own histogram again: no bin above the report's, the rest = the uncovered part
    cov = s.coverage.iloc[0]
    assert cov["ios_from"] == fiologs.UNDONE and "undone by subtracting the line two before" in s.note()
    report, pooled = fiojson.latency_bins(entry["read"], "clat"), s.pooled_bins("read")
    assert all(v <= report.get(k, 0) for k, v in pooled.items())
    assert sum(report.values()) - sum(pooled.values()) == cov["uncovered_ios"] > 0
    assert timeline.heatmap(s).total == cov["series_ios"]


def test_a_histogram_log_that_counts_more_than_fio_is_not_used(tmp_path):
    run = copy("mixed", tmp_path)
    hist = run / "fio_clat_hist.1.log"
    doubled = [
        ", ".join(f[:3] + [str(2 * int(v)) for v in f[3:]])
        for f in (line.split(", ") for line in hist.read_text().splitlines())
    ]
    hist.write_text("\n".join(doubled) + "\n")
    s = series.read_series(run)
    assert "its intervals overlap: its IO counts and percentiles are not used" in s.note()
    assert s.table["ios"].isna().all() and s.coverage["ios_from"].str.contains("estimate").all()


def test_a_host_before_the_prefix_or_a_folder_per_host(tmp_path):
    run = copy("mixed", tmp_path)
    for f in run.glob("fio_*.log"):
        f.rename(run / f"node7_{f.name}")
    assert set(series.read_series(run).table["host"]) == {"node7"}


def test_logs_of_another_fio_layout(tmp_path):
    """A histogram log with fio's pre-2.99 layout (19 bin groups, 1216 bins: the same bins
    without the 10 slowest groups, here all empty) gives the same series; the mixed
    fixture's other logs have log_offset's sixth column."""
    run = copy("mixed", tmp_path)
    assert all(len(line.split(",")) == 6 for line in (run / "fio_iops.1.log").read_text().splitlines())
    before = series.read_series(run)
    hist = run / "fio_clat_hist.1.log"
    lines = []
    for line in hist.read_text().splitlines():
        fields = line.split(", ")
        assert all(v == "0" for v in fields[3 + 1216 :])
        lines.append(", ".join(fields[: 3 + 1216]))
    hist.write_text("\n".join(lines) + "\n")
    after = series.read_series(run)
    assert after.bins.shape[1] == 1216
    cols = ["ios", "clat_p50_us", "clat_p99_us", "clat_p99_9_us"]
    assert after.table[cols].equals(before.table[cols])


def test_what_is_missing_is_said(tmp_path):
    run = copy("mixed", tmp_path)
    for f in run.glob("fio_clat_hist.*"):
        f.unlink()
    s = series.read_series(run)  # no histogram log: IOPS and mean latency, IOs estimated, said so
    assert "no histogram log" in s.note() and s.table["ios"].isna().all() and s.table["clat_p99_us"].isna().all()
    assert s.coverage["ios_from"].str.contains("estimate").all() and s.table["iops"].notna().all()
    empty = copy("mixed", tmp_path / "e")
    for f in empty.glob("fio_*.log"):
        f.write_text("")
    with pytest.raises(InputError, match="empty .* before its first interval"):
        series.read_series(empty)
    (empty / "fio_iops.1.log").write_text("this is not, an fio log\n")
    with pytest.raises(FioOutputError, match="not an fio log"):
        series.read_series(empty)
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(REC / "mixed/fio.json", plain)
    with pytest.raises(InputError, match="without interval logs.*--log-ms"):
        series.read_series(plain)
    for bad in (0, 0.5, "x", True):
        with pytest.raises(InputError, match="log_ms"):
            logrequest.check_log_ms(bad)


def test_iolab_series_prints_it(tmp_path, capsys):
    from iolab.cli import main

    assert main(["series", str(REC / "mixed"), "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert len(rows) == len(series.read_series(REC / "mixed").table) and {"t_s", "iops", "clat_p99_us"} <= set(rows[0])
    assert "the series accounts for" in out.err
    (tmp_path / "run.json").write_text("{}")
    assert main(["series", str(tmp_path)]) == 1
    assert "--log-ms" in capsys.readouterr().err


def test_pictures_over_time_and_the_heatmap():
    from iolab.plots import timeplots

    s = series.read_series(REC / "stall")
    steady, stalls = timeline.find_steady(s, range_pct=60.0, slope_pct=30.0), timeline.find_stalls(s)
    fig = timeplots.over_time(s, steady, stalls)
    axes = fig.axes
    assert [a.get_ylabel() for a in axes] == ["IOPS (IO/s)", "clat (µs, log scale)", "pinned CPUs (%)", "freq (MHz)"]
    assert axes[1].get_yscale() == "log" and axes[-1].get_xlabel() == timeplots.TIME_LABEL
    legend = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert "stall" in legend and any(t.startswith("steady state") for t in legend)
    note = " ".join(t.get_text() for t in axes[-1].texts)
    assert "CLOCK_MONOTONIC" in note and "not in fio's interval logs" in note
    hm = timeplots.latency_heatmap(s)
    assert hm.axes[0].get_yscale() == "log" and "IOs in the interval" in hm.axes[1].get_ylabel()
    grid = timeline.heatmap(s, "read")
    assert grid.counts.sum() + grid.below == s.table["ios"].sum() == grid.total
