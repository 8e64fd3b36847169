"""The explorer on a real sweep: what it offers, what it draws, the code it gives back."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from iolab.core.columns import label  # noqa: E402
from iolab.core.errors import InputError  # noqa: E402
from iolab.core.validate import fio_time  # noqa: E402
from iolab.measure import sweep  # noqa: E402
from iolab.plots import explore
from iolab.stats import cycles, repeat_stats
from support.cpus import CPU  # noqa: E402
from support.paths import FIXTURES  # noqa: E402


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """Two queue depths x two block sizes x two repeats of 1 s random reads on a scratch file."""
    from iolab.machine.target import scratch_file

    tmp = tmp_path_factory.mktemp("explore")
    tgt = scratch_file(tmp / "scratch", "32m")
    t = sweep.sweep(
        sweep.Grid(
            {"iodepth": [1, 4], "bs": ["64k", "4k"]},
            base={"rw": "randread", "runtime": fio_time(0.3)},
            aliases={"iodepth": "qd"},
        ),
        target=tgt,
        cpus=[CPU],
        rounds={"repeats": 2},
        runs_dir=tmp / "runs",
    )
    return cycles.add_cycles_per_io(t)


def test_offers_settings_and_metrics_not_ids(table):
    c = explore.choices(table)
    assert set(c.settings) == {"qd", "bs"}
    assert {"iops", "clat_p99_us", "cpu_busy_pct", "cycles_per_io"} <= set(c.metrics)
    offered = set(c.settings) | set(c.metrics)
    assert not offered & {"job_index", "groupid", "error", "ctx", "cpus_sampled", "repeat", "run_id"}
    assert c.metrics[0] == "iops"  # registry order: the headline metric first
    assert explore.default_axes(table) == ("qd", "iops")


def test_line_is_the_mean_over_repeats_with_a_t_interval(table):
    one_bs = table[table.bs == "4k"]
    fig = explore.plot(one_bs, x="qd", y="iops")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "IOPS (IO/s)" and ax.get_xlabel() == "queue depth (IOs)"
    assert ax.get_xscale() == "log"  # the registry says qd doubles
    xs, ys = ax.lines[0].get_data()
    means = one_bs.groupby("qd").iops.mean()
    assert list(xs) == [1, 4] and np.allclose(ys, means.to_numpy())
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert np.allclose(sorted(set(band)), sorted(means))  # 2 runs: no interval, the band is the line
    assert "2 runs per point; no interval: fewer than 3 repeats" in " ".join(fig.texts[-1].get_text().split())
    plt.close(fig)
    knee = pd.read_csv(FIXTURES / "knee" / "scratch_randread_3x.csv")  # real repeats, 3 a point
    fig = explore.plot(knee.assign(run_id=range(len(knee))), x="qd", y="iops")
    band = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    intervals = [np.exp(repeat_stats.t_interval(np.log(g.iops))) for _, g in knee.groupby("qd")]
    assert np.isclose(band.min(), min(lo for lo, _ in intervals)) and band.min() > 0  # IOPS: on the log scale
    assert np.isclose(band.max(), max(hi for _, hi in intervals))
    assert "3 runs per point; 95 % Student-t interval" in " ".join(fig.texts[-1].get_text().split())
    plt.close(fig)


def test_categories_in_size_order_with_hue_and_facet(table):
    fig = explore.plot(table, x="bs", y="clat_mean_us", hue="qd", facet="qd")
    assert [ax.get_title() for ax in fig.axes] == ["queue depth (IOs) = 1", "queue depth (IOs) = 4"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["4k", "64k"]  # by bytes, not text
    assert fig.axes[0].get_ylabel() == "clat mean (µs)"
    plt.close(fig)
    # CPU busy is a share: its bars' intervals stop at 100 % (the t interval of 99, 60, 100 reaches 143 %)
    busy = pd.DataFrame(
        {"scheduler": ["none"] * 3 + ["bfq"] * 3, "cpu_busy_pct": [99.0, 60, 100, 50, 52, 51], "run_id": range(6)}
    )
    fig = explore.plot(busy, x="scheduler", y="cpu_busy_pct", hue="scheduler")
    assert max(max(line.get_ydata()) for line in fig.axes[0].lines) == 100
    assert fig._suptitle.get_text() == "CPU busy (%) by scheduler"  # x and hue the same: said once
    assert "within 0-100 %: a share" in " ".join(fig.texts[-1].get_text().split())
    plt.close(fig)


def test_the_copied_code_draws_the_same_figure(table):
    text = explore.code("bs", "cpu_busy_pct", hue="qd", log_y=True, table="table")
    scope = {"table": table}
    exec(text, scope)  # noqa: S102 - the point of the test
    fig = plt.gcf()
    assert fig.axes[0].get_ylabel() == label("cpu_busy_pct") == "CPU busy (%)"
    assert fig.axes[0].get_yscale() == "log"
    plt.close("all")


def test_latency_against_iops_has_one_point_per_setting(table):
    fig = explore.plot(table[table.bs == "4k"], x="iops", y="clat_p99_us")
    ax = fig.axes[0]
    xs, ys = (np.asarray(v, dtype=float) for v in ax.lines[0].get_data())  # object arrays with numpy 1.26
    means = table[table.bs == "4k"].groupby("qd")[["iops", "clat_p99_us"]].mean()
    assert np.allclose(xs, means.iops) and np.allclose(ys, means.clat_p99_us)  # joined in QD order
    assert [t.get_text() for t in ax.texts if t.get_text() in ("1", "4")] == ["1", "4"]
    assert "one point per setting (queue depth (IOs)), the mean of 2 runs" in " ".join(fig.texts[-1].get_text().split())
    plt.close(fig)
    single = table[(table.bs == "4k") & (table.qd == 4)]  # no setting varies: each point is one run
    fig = explore.plot(single, x="iops", y="clat_p99_us")
    assert "one point per run; no interval: one run per point" in " ".join(fig.texts[-1].get_text().split())
    plt.close(fig)


def test_unknown_column_says_what_can_be_plotted(table):
    with pytest.raises(InputError, match="columns worth plotting: .*'qd'"):
        explore.plot(table, x="queue_depth", y="iops")


def test_a_sweep_of_one_setting_value_gets_a_sentence_not_an_error(table, capsys):
    """Notebook 01 with one queue depth: its explorer cell, after every run is done."""
    one = table[(table.qd == 4) & (table.bs == "4k")]
    explore.explorer(one, interactive=False)
    said = capsys.readouterr().out
    assert said.startswith("explorer: nothing to explore: ") and "no setting that varies" in said
    assert said.count("\n") == 1 and "run_id" not in said
    explore.explorer({"one": one, "table": table}, interactive=False)  # the tables that have one are shown
    assert "nothing to explore" not in capsys.readouterr().out
    with pytest.raises(InputError, match="no setting that varies") as refused:
        explore.default_axes(one)
    assert len(str(refused.value)) < 300


def test_widget_redraws_and_updates_the_code(table):
    w = explore._Widget({"table": table, "other": table[table.qd == 1]})
    assert "iolab-explorer" in w.box._dom_classes
    assert w.code.value.endswith("explore.plot(table, x='qd', y='iops')")
    w.x.value, w.y.value, w.hue.value = "bs", "clat_p99_us", "qd"
    assert w.code.value.endswith("explore.plot(table, x='bs', y='clat_p99_us', hue='qd')")
    w.table.value = "other"  # qd no longer varies there: not offered
    assert [v for _, v in w.x.options][:2] == ["bs", "iops"]  # settings first, then measured columns
    assert w.hue.value == explore.NONE and w.code.value.startswith("from iolab.plots import explore")
    assert "other" in w.code.value


def test_t_interval():
    low, high = repeat_stats.t_interval([1.0, 2.0, 3.0])
    assert math.isclose(high - 2.0, 4.302652729911275 / math.sqrt(3), rel_tol=1e-9)  # t(0.975, 2) s/sqrt(n)
    assert math.isnan(repeat_stats.t_interval([5.0])[0])


def test_the_footnote_says_when_points_are_one_runs_intervals_and_big_axes_read_in_si():
    """fio's interval logs of one run are not repeats: the footnote says "intervals of one
    run"; an axis of 1.2e8 IOPS reads 120M, not 1e8 (common.si_axis)."""
    import pandas as pd

    series = pd.DataFrame(
        {
            "run_id": ["r1"] * 6,
            "direction": ["read"] * 6,
            "qd": [1, 1, 1, 4, 4, 4],
            "iops": [1.1e8, 1.2e8, 1.3e8, 1.5e8, 1.6e8, 1.7e8],
        }
    )
    fig = explore.plot(series, x="qd", y="iops")
    assert "mean of 3 intervals of one run per point" in " ".join(fig.texts[-1].get_text().split())
    fig.canvas.draw()
    assert any(t.get_text().endswith("M") for t in fig.axes[0].get_yticklabels())  # 150M, not 1.5e8
    plt.close(fig)


def test_a_numeric_hue_gets_a_sequential_scale_with_no_colour_twice(table):
    import matplotlib.colors as mcolors

    many = pd.concat(
        [table.assign(iodepth_batch=b) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)], ignore_index=True
    )
    fig = explore.plot(many, x="qd", y="iops", hue="iodepth_batch")
    colours = [mcolors.to_hex(line.get_color()) for line in fig.axes[0].get_legend().get_lines()]
    assert len(colours) == 11 and len(set(colours)) == 11  # the default cycle has 10: one would repeat
    plt.close(fig)


def test_the_distribution_views_are_offered_only_for_a_table_that_names_its_runs(table):
    knee = pd.read_csv(FIXTURES / "knee" / "scratch_randread_3x.csv")  # no run_id: no run folders to read
    w = explore._Widget({"table": table, "knee": knee})
    assert [v for _, v in w.view.options] == ["means", "cdf", "tail", "spectrum"]
    w.table.value = "knee"
    assert [v for _, v in w.view.options] == ["means"] and w.view.value == "means"
    with pytest.raises(InputError, match="view='means'"):
        explore.distribution(table, "means")
