"""Latency CDF and percentile spectrum from fio's json+ bins, checked against fio's own
percentiles on real runs; other fio versions' outputs (shared fixtures: plain json, no bins);
the figures and the explorer's distribution views."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from iolab.core.errors import FioOutputError, InputError  # noqa: E402
from iolab.core.validate import fio_time  # noqa: E402
from iolab.measure import sweep  # noqa: E402
from iolab.plots import distributions, explore  # noqa: E402
from iolab.read import pool  # noqa: E402
from iolab.read.fiojson import merge_bins, percentiles_from_bins  # noqa: E402
from iolab.stats import latency_dist as ld  # noqa: E402
from support.cpus import CPU  # noqa: E402
from support.marks import needs_shared  # noqa: E402
from support.paths import FIXTURES, PUBLISHED  # noqa: E402

FIO = FIXTURES / "fio"
OTHER_VERSIONS = PUBLISHED / "fio-published"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(table, runs folder): queue depth 1 and 4 x 2 repeats of 300 ms random reads."""
    from iolab.machine.target import scratch_file

    tmp = tmp_path_factory.mktemp("latency-dist")
    table = sweep.sweep(
        sweep.Grid(
            {"iodepth": [1, 4]},
            base={"rw": "randread", "bs": "4k", "ioengine": "io_uring", "direct": 1, "runtime": fio_time(0.3)},
            aliases={"iodepth": "qd"},
        ),
        target=scratch_file(tmp / "scratch", "32m"),
        cpus=[CPU],
        rounds={"repeats": 2, "warmup": "none"},
        runs_dir=tmp / "runs",
    )
    return table, tmp / "runs"


def fio_report(folder):
    return json.loads((folder / "fio.json").read_text())


def test_at_fios_listed_percentiles_the_spectrum_and_the_cdf_are_fios_numbers(study):
    table, runs = study
    folder = runs / table.run_id.iloc[0]
    clat = fio_report(folder)["jobs"][0]["read"]["clat_ns"]
    listed = {float(p): v / 1000.0 for p, v in clat["percentile"].items()}
    assert set(listed) <= set(ld.SPECTRUM)  # fio's default list is in the dense one
    spec = ld.spectrum(folder).set_index("percentile")
    assert {p: spec.latency_us[p] for p in listed} == listed  # exactly, not approximately
    dist = ld.cdf(folder)
    for p, us in listed.items():  # fio's rule read off the CDF: the first bucket reaching p %
        first = dist[dist.count_le >= p / 100 * dist.total_ios].iloc[0]
        assert first.latency_us == us, p
    assert (spec.source == ld.FROM_BINS).all() and (spec.kind == "clat").all()
    assert list(table.run_folder.unique()) == [str(runs / i) for i in table.run_id.unique()]  # where each row's run is
    check = ld.agreement(table)  # every run, every listed percentile
    assert check.equal.all() and len(check) == len(table) * len(listed)


def test_the_cdf_is_monotone_ends_at_one_and_counts_every_io(study):
    table, runs = study
    dist = ld.cdf(table, by="qd")
    assert list(dist.columns[:4]) == ["qd", "direction", "job", "latency_us"]
    for qd, curve in dist.groupby("qd"):
        assert curve.latency_us.is_monotonic_increasing and curve.latency_us.is_unique
        assert (np.diff(curve.fraction_le) > 0).all() and curve.fraction_le.iloc[-1] == 1.0
        ios = table.loc[table.qd == qd, "total_ios"].sum()
        assert curve["count"].sum() == ios == curve.total_ios.iloc[0] == curve.count_le.iloc[-1]
        assert curve.runs.iloc[0] == 2 and curve.run_id.iloc[0].count(",") == 1
    from_folders = ld.cdf(runs, by="qd")  # the folder of runs: qd read from each params.json
    pd.testing.assert_frame_equal(
        from_folders.drop(columns="run_id"), dist.drop(columns="run_id"), check_dtype=False, check_like=True
    )
    spec = ld.spectrum(table, by="qd")
    for _, curve in spec.groupby("qd"):
        assert curve.latency_us.is_monotonic_increasing and curve.percentile.iloc[-1] == 99.999
        assert np.allclose(curve.ios_above, curve.total_ios * (1 - curve.percentile / 100))


def test_pooling_two_runs_sums_their_bins(study):
    table, runs = study
    folders = [runs / r for r in table[table.qd == 4].run_id]
    bins = [fio_report(f)["jobs"][0]["read"]["clat_ns"]["bins"] for f in folders]
    summed = merge_bins(*bins)
    dist = ld.cdf(folders)
    assert dict(zip((dist.latency_us * 1000).round().astype(int).astype(str), dist["count"])) == {
        k: v for k, v in summed.items() if v
    }
    spec = ld.spectrum(folders, percentiles=[50, 99, 99.9])
    ours = percentiles_from_bins(summed, [50, 99, 99.9])
    assert list(spec.latency_us) == [ours[p] / 1000 for p in (50, 99, 99.9)]
    pooled = pool.pool_outputs([pool.report_of(f) for f in folders]).iloc[
        0
    ]  # iolab.read.pool's pooled p99 is the same bucket
    assert pooled.clat_p99_us == spec.latency_us.iloc[1]
    assert spec.runs.iloc[0] == 2 and spec.jobs.iloc[0] == 2


def test_directions_are_kept_apart_and_jobs_pooled_or_apart():
    rw = ld.spectrum(FIO / "jsonplus_randrw.json", percentiles=[50, 99])
    assert list(rw.direction) == ["read", "read", "write", "write"]
    assert list(rw.total_ios.unique()) == [27149, 11628]
    pooled = ld.cdf(FIO / "jsonplus_numjobs3.json")
    apart = ld.cdf(FIO / "jsonplus_numjobs3.json", jobs="apart")
    assert pooled.jobs.iloc[0] == 3 and pooled["count"].sum() == 38179 + 38397 + 38379
    assert list(apart.groupby("job", sort=False)["count"].sum()) == [38179, 38397, 38379]  # 3 jobs named "nj"
    assert list(apart.job.unique()) == ["nj [0]", "nj [1]", "nj [2]"]
    lat = ld.spectrum(FIO / "jsonplus_lat_percentiles.json", kind="lat")  # lat_percentiles=1: lat bins
    listed = json.loads((FIO / "jsonplus_lat_percentiles.json").read_text())["jobs"][0]["read"]["lat_ns"]["percentile"]
    got = lat.set_index("percentile").latency_us
    assert all(got[float(p)] == v / 1000 for p, v in listed.items())


@needs_shared
def test_other_fio_versions_without_bins_fall_back_to_fios_list_labelled():
    """fio 2.18 (µs), 3.1 and 3.16 plain json: fio's own rounded list, said in ``source``."""
    for name, direction in (
        ("p01_fio-2.18_randread_qd1/randread-01.json", "read"),
        ("p02_fio-3.1_ssd_pm883_randread_qd_sweep/randread-16-1.json", "read"),
        ("p06_fio-3.16_raid5_randrw_qd8/randrw-8-1.json", "write"),
    ):
        path = OTHER_VERSIONS / name
        job = json.loads(path.read_text())["jobs"][0][direction]
        clat, to_us = (job["clat_ns"], 1e-3) if "clat_ns" in job else (job["clat"], 1.0)
        listed = {float(p): v * to_us for p, v in clat["percentile"].items() if float(p) > 0}
        spec = ld.spectrum(path)
        spec = spec[spec.direction == direction]
        assert (spec.source == ld.FROM_LIST).all() and "not the bins" in ld.FROM_LIST
        assert dict(zip(spec.percentile, spec.latency_us)) == pytest.approx(listed, rel=1e-12)
        dist = ld.cdf(path).query("direction == @direction")
        assert dist.fraction_le.is_monotonic_increasing and dist["count"].isna().all()
    sweep_files = sorted((OTHER_VERSIONS / "p02_fio-3.1_ssd_pm883_randread_qd_sweep").glob("randread-*.json"))
    with pytest.raises(InputError, match="do not add up.*--output-format=json\\+"):
        ld.cdf(sweep_files[:2])  # pooling percentiles is refused
    assert ld.cdf(sweep_files[:2], by="run_id").run_id.nunique() == 2  # each on its own is fine
    with pytest.raises(FioOutputError, match="fio error 22"):
        ld.cdf(OTHER_VERSIONS / "p07_fio-3.33_error_before_json/write-64-1.json")


def test_mistakes_say_what_to_do(study, tmp_path):
    table, runs = study
    with pytest.raises(InputError, match="no column 'run_id'"):
        ld.cdf(table.drop(columns="run_id"))
    with pytest.raises(InputError, match="no column 'queue_depth'.*'qd'"):
        ld.cdf(table, by="queue_depth")
    with pytest.raises(InputError, match="no run_folder that holds them .*give their run folders"):
        ld.cdf(table.assign(run_folder=str(tmp_path)))  # folders moved away, ids not in the runs folder
    with pytest.raises(InputError, match="kind='xlat': choose 'clat'"):
        ld.cdf(table, kind="xlat")
    with pytest.raises(InputError, match="lat_percentiles=1"):
        ld.spectrum(table, kind="lat")  # iolab's runs bin clat only
    with pytest.raises(InputError, match="no setting 'bs'.*'qd'"):
        ld.cdf(runs, by="bs")
    with pytest.raises(InputError, match="above 0 and below 100"):
        ld.spectrum(table, percentiles=[50, 100])
    with pytest.raises(InputError, match="jobs='together'"):
        ld.cdf(table, jobs="together")


def test_the_figures_say_what_they_show(study):
    table, runs = study
    dist = ld.cdf(table, by="qd")
    ax = distributions.plot_cdf(dist)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
    assert ax.get_xlabel() == "clat latency (µs)" and ax.get_ylabel() == "fraction of IOs ≤ latency"
    assert ax.get_title() == "clat latency CDF by queue depth (IOs)"
    legend = ax.get_legend()
    assert legend.get_title().get_text() == "queue depth (IOs)" and [t.get_text() for t in legend.texts] == ["1", "4"]
    colours = {line.get_color() for line in ax.lines}
    assert len(colours) == 2
    note = " ".join(" ".join(t.get_text() for t in ax.texts).split())
    assert "fio json+ clat bins" in note and "pooled over 2 run(s)" in note
    plt.close(ax.figure)
    ax = distributions.plot_cdf(dist, tail=True)
    assert ax.get_yscale() == "log" and "1 − CDF" in ax.get_ylabel()
    assert all((line.get_ydata() > 0).all() for line in ax.lines)  # the last bucket (0 slower) is left out
    plt.close(ax.figure)
    ax = distributions.plot_spectrum(ld.spectrum(table, by="qd"))
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["p50", "p90", "p99", "p99.9", "p99.99", "p99.999"]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "clat latency (µs)"
    assert ax.lines[0].get_xdata()[0] == 1.0  # x holds percentiles; the axis spaces them in nines
    plt.close(ax.figure)
    with pytest.raises(InputError, match="latency_dist.spectrum"):
        distributions.plot_spectrum(dist)


@needs_shared
def test_a_figure_from_fios_list_says_so():
    path = OTHER_VERSIONS / "p02_fio-3.1_ssd_pm883_randread_qd_sweep/randread-16-1.json"
    ax = distributions.plot_spectrum(ld.spectrum(path))
    assert ax.lines[0].get_marker() == "o" and ax.lines[0].get_linestyle() == "--"
    assert "rounded percentile list, not the bins" in " ".join(" ".join(t.get_text() for t in ax.texts).split())
    plt.close(ax.figure)


def test_the_explorer_draws_the_cells_distributions(study):
    table, runs = study
    w = explore._Widget({"table": table})
    assert [v for _, v in w.view.options] == ["means", "cdf", "tail", "spectrum"]
    w.hue.value, w.view.value = "qd", "tail"
    assert w.x.disabled and w.y.disabled
    assert "dist = latency_dist.cdf(table, by=['qd'])" in w.code.value
    assert w.code.value.endswith("distributions.plot_cdf(dist, hue='qd', tail=True)")
    scope = {"table": table}
    exec(w.code.value, scope)  # noqa: S102 - the copied code draws the same figure
    assert plt.gca().get_yscale() == "log" and plt.gca().get_legend().get_title().get_text() == "queue depth (IOs)"
    plt.close("all")
    w.view.value = "spectrum"
    assert "latency_dist.spectrum(" in w.code.value
    w.view.value = "means"
    assert not w.x.disabled and w.code.value.startswith("from iolab.plots import explore")
    fig = explore.distribution(table, "spectrum", hue="qd")
    assert fig.axes[0].get_title() == "clat latency percentiles by queue depth (IOs)"
    plt.close(fig)
