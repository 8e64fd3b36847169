"""Intervals over repeats and A-vs-B verdicts (iolab.stats.repeat_stats), checked by hand on real fio
runs: three 0.5 s psync runs capped at 300 IOPS (fio's rate_iops) and three capped at 500, on a
tmpfs-backed loop device. Capped and off the disk, the two sides stay apart beside other tests'
load (on a scratch file one run in three was once slowed tenfold by the VM's disk, and a 3-run
interval reached below 0)."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from iolab.core.columns import bounds, interval_method
from iolab.core.errors import InputError
from iolab.machine.target import loop_device
from iolab.measure.sweep import Grid, sweep
from iolab.stats import repeat_stats as rs
from iolab.studies import ladder as lad
from support.cpus import CPU
from support.marks import is_root
from support.paths import FIXTURES

JOB = {
    "rw": "randread",
    "bs": "4k",
    "runtime": "500ms",
    "ioengine": "psync",
    "direct": 1,
    "rate_process": "poisson",
    "randrepeat": 0,
}  # capped rates that still vary from run to run


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    if not is_root:
        pytest.skip("needs root (a loop device)")
    tmp = tmp_path_factory.mktemp("compare")
    with loop_device("32m") as dev:
        return sweep(
            Grid({"rate_iops": [300, 500]}, base=JOB),
            target=dev,
            cpus=[CPU],
            rounds={"repeats": 3},
            runs_dir=tmp / "runs",
            progress=None,
        )


def test_t_interval_of_the_mean_iops_by_hand(capped):
    s = rs.summarise(capped, ["rate_iops"])
    for depth in (300, 500):
        v = capped.loc[capped.rate_iops == depth, "iops"].to_numpy()  # one job, one direction: a row is a run
        logs = np.log(v)  # IOPS cannot be negative: the interval is taken on the log scale
        half = stats.t.ppf(0.975, len(v) - 1) * logs.std(ddof=1) / math.sqrt(len(v))
        row = s[s.rate_iops == depth].iloc[0]
        assert row.n == 3 and row.iops_mean == pytest.approx(v.mean())
        assert (row.iops_ci_low, row.iops_ci_high) == pytest.approx(np.exp([logs.mean() - half, logs.mean() + half]))
        assert row.iops_cv_pct == pytest.approx(100 * v.std(ddof=1) / v.mean())
    assert interval_method("iops") == interval_method("cpu_busy_pct") == "t"


def test_bootstrap_of_three_repeats_is_their_range_and_never_narrower_than_t(capped):
    """Resampling three values, each extreme comes back three times with chance 1/27 = 3.7 %,
    more than the 2.5 % each tail leaves out: the 95 % bootstrap interval is [min, max]. The
    t interval (half-width 4.30 s / sqrt 3 = 2.48 s, here of the logs) holds the range of three
    values (at most 1.15 s from their mean) but for a skew, so joined, a summary's percentile
    interval is the t one, widened to their range where the log scale pulled it in."""
    s = rs.summarise(capped, ["rate_iops"], ["clat_p99_us", "cycles_per_io"])
    runs_of = rs.per_run(capped, ["rate_iops"])  # cycles_per_io is computed per run
    for depth in (300, 500):
        row, runs = s[s.rate_iops == depth].iloc[0], runs_of[runs_of.rate_iops == depth]
        for m in ("clat_p99_us", "cycles_per_io"):
            v = runs[m].to_numpy()
            assert interval_method(m) == "bootstrap"
            assert rs.bootstrap_interval(v) == pytest.approx((v.min(), v.max()))
            logs = np.log(v)  # a latency or cycles: Student t on the log scale, joined with the bootstrap
            half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
            low, high = np.exp([logs.mean() - half, logs.mean() + half])
            low, high = min(low, v.min()), max(high, v.max())
            if high <= rs.MAX_SPAN * low:
                assert (row[f"{m}_ci_low"], row[f"{m}_ci_high"]) == pytest.approx((low, high))
            else:  # the repeats cannot bound it: no interval, and the tables say so
                assert math.isnan(row[f"{m}_ci_low"]) and math.isnan(row[f"{m}_ci_high"]), (m, v)
    pd.testing.assert_frame_equal(s, rs.summarise(capped, ["rate_iops"], ["clat_p99_us", "cycles_per_io"]))
    v = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert rs.bootstrap_interval(v, seed=7) == rs.bootstrap_interval(v, seed=7) != rs.bootstrap_interval(v, seed=8)
    skewed = np.random.default_rng(3).lognormal(0, 1.0, 40)  # a long right tail: the bootstrap reaches further
    (t_low, t_high), (b_low, b_high) = rs.interval(skewed, "iops"), rs.bootstrap_interval(skewed)
    assert t_low < b_low and t_high < b_high and rs.interval(skewed, "clat_p99_us") == (t_low, b_high)
    assert 0 < t_low  # on the log scale, around the geometric mean


def test_a_raised_cap_is_faster_and_the_interval_by_hand(capped):
    """500 against 300 IOPS: the interval by hand (Welch on the log ratio, joined with the
    bootstrap), and the verdict it gives. Beside other tests' load a 0.5 s run starved of CPU
    cannot catch up on its rate (seen: 333 IOPS at a cap of 500, 191 IOs in 573 ms), and one
    such run in three widens the interval past 0: then the verdict says no difference."""
    c = rs.compare(capped, by="rate_iops", a=500, b=300, metric="iops")
    a, b = (capped.loc[capped.rate_iops == d, "iops"].to_numpy() for d in (500, 300))
    assert (c.n_a, c.n_b) == (3, 3) and c.ratio_pct == pytest.approx(100 * (a.mean() / b.mean() - 1))
    assert c.low_pct < c.ratio_pct < c.high_pct and c.ratio_pct > 25  # two thirds, give or take
    back = rs.compare(capped, "rate_iops", 300, 500, "iops")
    if c.low_pct > 0:  # the usual case
        assert c.better == back.better == 500 and c.verdict.startswith(
            f"500 is {c.ratio_pct:.0f} % faster than 300 (IOPS), 95 % CI ["
        )  # the low end: 8.6 % or 12 %
        assert f"{c.low_pct:.2g}" in c.verdict.split("[")[1] or f"{c.low_pct:.0f}" in c.verdict.split("[")[1]
        assert back.verdict.startswith("300 is") and "slower than 500" in back.verdict
    else:
        assert c.better is back.better is None
        assert c.verdict.startswith("no difference the repeats can show: 500 vs 300"), c.verdict
    # Welch by hand: relative variances of the two means add; Welch-Satterthwaite df
    ua, ub = a.var(ddof=1) / (3 * a.mean() ** 2), b.var(ddof=1) / (3 * b.mean() ** 2)
    df = (ua + ub) ** 2 / (ua**2 / 2 + ub**2 / 2)
    r, half = a.mean() / b.mean(), stats.t.ppf(0.975, df) * math.sqrt(ua + ub)  # on log(ratio)
    welch = (100 * (r * math.exp(-half) - 1), 100 * (r * math.exp(half) - 1))
    # the bootstrap by enumeration: every resample of each side (27 x 27, equally likely)
    means = [np.mean(x) for x in itertools.product(a, repeat=3)], [np.mean(x) for x in itertools.product(b, repeat=3)]
    exact = np.sort([100 * (x / y - 1) for x in means[0] for y in means[1]])
    q = {p: np.quantile(exact, p) for p in (0.015, 0.035, 0.965, 0.985)}  # 10,000 resamples: within 1 %
    assert min(q[0.015], welch[0]) - 1e-9 <= c.low_pct <= min(q[0.035], welch[0]) + 1e-9  # joined: lower low
    assert max(q[0.965], welch[1]) - 1e-9 <= c.high_pct <= max(q[0.985], welch[1]) + 1e-9  # higher high
    assert c.method in ("Welch t", "bootstrap", "bootstrap and Welch t")
    assert rs.compare(capped, "rate_iops", 500, 300, "iops") == c  # seeded: the same interval again


def test_equal_settings_are_rarely_called_different():
    """3 runs a side, both from the same normal distribution: a 95 % interval should exclude
    0 about 1 time in 20 (a bootstrap alone: about 1 in 5)."""
    rng, wrong = np.random.default_rng(11), 0
    for k in range(200):
        t = pd.DataFrame({"s": ["a"] * 3 + ["b"] * 3, "iops": rng.normal(100, 5, 6)})
        c = rs.compare(t, "s", "a", "b", "iops", seed=k)
        wrong += not c.low_pct <= 0 <= c.high_pct
    assert wrong / 200 < 0.10


def test_lower_is_better_words():
    """The words for columns where less is better (the registry's direction), on numbers made
    for it: a measured QD 8 uses fewer cycles per IO than QD 1 only beyond the load of the
    tests beside it."""
    qd = pd.DataFrame(
        {
            "iodepth": [1] * 3 + [8] * 3,
            "run_id": [f"r{i}" for i in range(6)],
            "direction": "read",
            "cycles_per_io": [9000.0, 9100, 8900, 4000, 4100, 3900],
            "clat_p50_us": [40.0, 41, 39, 120, 118, 122],
        }
    )
    cycles = rs.compare(qd, "iodepth", 8, 1, "cycles_per_io")
    assert cycles.ratio_pct < 0 and "8 uses" in cycles.verdict and "less CPU per IO than 1" in cycles.verdict
    lat = rs.compare(qd, "iodepth", 1, 8, "clat_p50_us")
    assert lat.verdict.startswith("1 is faster: clat p50") and "lower than 8" in lat.verdict and lat.better == 1


def test_one_run_each_has_no_interval(capped):
    once = capped[capped.repeat == 0]
    c = rs.compare(once, "rate_iops", 500, 300, "iops")
    assert (c.n_a, c.n_b) == (1, 1) and math.isnan(c.low_pct) and math.isnan(c.high_pct) and c.better is None
    assert c.verdict.startswith("one run each: no interval: fewer than 3 repeats; as measured")
    assert "as measured, 500 is" in c.verdict
    s = rs.summarise(once, ["rate_iops"])
    assert (s.n == 1).all() and s.iops_ci_low.isna().all() and not s.unstable.any()


def test_no_difference_the_repeats_can_show():
    t = pd.DataFrame({"scheduler": ["none"] * 3 + ["mq-deadline"] * 3, "iops": [100.0, 110, 90, 105, 95, 100]})
    c = rs.compare(t, "scheduler", "none", "mq-deadline", "iops")
    assert c.low_pct < 0 < c.high_pct and c.better is None
    assert c.verdict.startswith("no difference the repeats can show: none vs mq-deadline +0.0 % (IOPS), 95 % CI [")


def _cell(name, iops, freq=(2000.0,) * 3, busy=(50.0,) * 3, fio=(50.0,) * 3):
    return pd.DataFrame(
        {
            "mode": name,
            "run_id": [f"{name}{i}" for i in range(3)],
            "direction": "read",
            "iops": iops,
            "cpu_freq_mhz": freq,
            "freq_source": "scaling_cur_freq",
            "cpu_busy_pct": busy,
            "cpus_sampled": 1,
            "usr_cpu_pct": 10.0,
            "sys_cpu_pct": [f - 10 for f in fio],
            "cpu_irq_pct": 0.0,
            "cpu_softirq_pct": 0.0,
        }
    )


def test_unstable_cells_and_their_likely_causes():
    t = pd.concat(
        [
            _cell("steady", [100.0, 101, 99]),
            _cell("freq", [100.0, 130, 80], freq=(2000.0, 3000, 2000)),
            _cell("load", [100.0, 130, 80], busy=(50.0, 90, 50)),
            _cell("device", [100.0, 130, 80]),
        ]
    )
    s = rs.summarise(t, ["mode"], ["iops"], cv_threshold=0.10).set_index("mode")
    assert not s.unstable["steady"] and s.unstable_why["steady"] == ""
    assert s.unstable[["freq", "load", "device"]].all()
    cv = 100 * np.std([100, 130, 80], ddof=1) / np.mean([100, 130, 80])
    assert s.unstable_why["freq"].startswith(
        f"IOPS CV {cv:.0f} % > 10 %; likely: the CPU frequency changed "
        "(2,000-3,000 MHz across repeats, scaling_cur_freq)"
    )
    assert "other load on the pinned CPU (up to 40 % of a CPU" in s.unstable_why["load"]
    assert s.unstable_why["device"].endswith("likely: the device's or host's own variance")
    assert not rs.summarise(t, ["mode"], ["iops"], cv_threshold=0.30).unstable.any()
    assert "unstable" in set(rs.readable(rs.summarise(t, ["mode"], ["iops"])).unstable)


def test_a_run_is_its_jobs_summed():
    t = pd.DataFrame(
        {
            "capped": 1,
            "run_id": ["r0", "r0", "r0", "r1"],
            "job_index": [0, 1, 2, 0],
            "direction": ["read", "read", "none", "read"],
            "iops": [100.0, 300, 0, 400],
            "cpu_busy_pct": 40.0,
            "cpus_sampled": 2,
            "cpu_freq_mhz": 1000.0,
            "usr_cpu_pct": [5.0, 5, 5, 10],
            "sys_cpu_pct": [15.0, 15, 15, 30],
        }
    )
    r = rs.per_run(t, ["capped"]).set_index("run_id")
    assert r.iops.to_dict() == {"r0": 400, "r1": 400}
    assert r.cycles_per_io_core["r0"] == pytest.approx(0.4 * 2 * 1e9 / 400)  # busy x CPUs x f / IOPS
    assert r.cycles_per_io["r0"] == pytest.approx(0.4 * 1e9 / 400)  # fio's own: its jobs' rusage x f / IOPS
    assert r.fio_cpu_pct.to_dict() == {"r0": 40, "r1": 40} and r.other_load_pct["r0"] == pytest.approx(40)


def test_refusals(capped):
    with pytest.raises(InputError, match="no run with rate_iops=4"):
        rs.compare(capped, "rate_iops", 4, 300)
    with pytest.raises(InputError, match="no metric 'iops_typo'"):
        rs.summarise(capped, ["rate_iops"], ["iops_typo"])


def test_ladder_repeats_give_each_gain_an_interval(tmp_path):
    """Step 0 is capped at 300 IOPS (fio's rate_iops), step 1 at 500: a gain of two thirds, with
    its interval over 3 repeats and the verdict that interval gives (beside other tests' load a
    0.5 s run starved of CPU at its end cannot catch up on its rate, and one such run in three
    can widen the interval past 0)."""
    steps = [
        lad.Step("capped", {"ioengine": "psync", "rate_iops": 300, "rate_process": "poisson", "randrepeat": 0}),
        lad.Step("raised", {"rate_iops": 500}),
    ]  # poisson arrivals: capped rates that still vary
    if not is_root:
        pytest.skip("needs root (a loop device)")
    with loop_device("32m") as dev:
        t = lad.run_ladder(
            steps,
            dev,
            cpu=CPU,
            base={"runtime": "500ms"},
            runs_dir=tmp_path / "runs",
            rounds={"repeats": 3, "warmup": None},
        )
    assert list(t.runs) == [3, 3] and math.isnan(t.gain_pct[0]) and t.gain_verdict[0] == ""
    assert t.gain_low_pct[1] < t.gain_pct[1] < t.gain_high_pct[1] and t.gain_pct[1] > 25  # two thirds, give or take
    assert t.gain_pct[1] == pytest.approx(100 * (t.iops[1] / t.iops[0] - 1))
    if t.gain_low_pct[1] > 0:  # the usual case; a run starved of CPU beside other tests widens it past 0
        assert t.gain_verdict[1].startswith("step 1 is") and "faster than step 0 (IOPS), 95 % CI" in t.gain_verdict[1]
    else:
        assert t.gain_verdict[1].startswith("no difference the repeats can show: step 1 vs step 0")


def test_the_cells_noise_is_carried_and_named():
    """The samplers' per-run noise columns (iolab.machine.sampling) come through as cell means, and
    high steal or other load is named as the likely cause of an unstable cell."""

    def noisy(name, steal, other):
        return _cell(name, [100.0, 130, 80]).assign(
            cpu_steal_pct=steal, host_steal_pct=steal / 2, cpu_iowait_pct=1.0, other_cpu_pct=other
        )

    t = pd.concat([noisy("steal", 8.0, 2.0), noisy("other", 1.0, 30.0), noisy("quiet", 1.0, 2.0)])
    s = rs.summarise(t, ["mode"], ["iops"]).set_index("mode")
    assert s.loc["steal", "cpu_steal_pct"] == pytest.approx(8) and s.loc["other", "other_cpu_pct"] == pytest.approx(30)
    assert s.loc["quiet", "host_steal_pct"] == pytest.approx(0.5) and s.loc["quiet", "cpu_iowait_pct"] == 1
    assert "hypervisor steal (mean 8 % of the pinned CPUs' time)" in s.unstable_why["steal"]
    assert "other load" not in s.unstable_why["steal"]
    assert "other load on the pinned CPUs (mean 30 % of their time beyond fio's own usr+sys" in s.unstable_why["other"]
    assert "steal" not in s.unstable_why["other"]
    assert s.unstable_why["quiet"].endswith("the device's or host's own variance")
    shown = rs.readable(rs.summarise(t, ["mode"], ["iops"]))
    assert list(shown.columns[:2]) == ["mode", "n"] and "cpu steal (%)" in shown
    assert rs.STEAL_PCT == __import__("iolab.read.samples").read.samples.STEAL_FLAG_PCT


def test_an_interval_of_a_positive_quantity_lives_on_the_log_scale_or_says_it_cannot_bound():
    """Repeats far apart: the t interval of IOPS reached -59,086 (notebook 05's roof), and
    clipped, "25.6 [0, 65.6] µs" said nothing. IOPS, latencies and cycles are bounded on the
    log scale (both ends positive) or not at all ("too noisy to bound"); a gain in % may be
    negative but never -100 %; a share stays within 100 %."""
    assert rs.interval([60_000, 330_000, 45_000], "iops") == (nan_pair := rs.interval([1.0], "iops"))
    assert all(math.isnan(x) for x in nan_pair)
    assert all(math.isnan(x) for x in rs.interval([12.8, 25.6, 38.4], "clat_mean_us"))  # CV 50 %
    low, high = rs.interval([100.0, 110.0, 95.0], "iops")
    assert 0 < low < 95 and 110 < high < 10 * low
    assert all(math.isnan(x) for x in rs.interval([5.0, 900.0, 7.0], "clat_p99_us"))
    low, high = rs.interval([-10.0, 40.0, 5.0], "gain_pct")
    assert -100 < low < -10 and high > 40  # a difference may be negative, not below -100 %
    assert rs.interval([99.0, 60.0, 100.0], "cpu_busy_pct")[1] == 100  # a share: never above 100 %
    assert all(math.isnan(x) for x in rs.interval([415.0, 50.0, 780.0], "dev_read_ios"))  # 06 gave [-169, 1,000]
    assert rs.interval([0.0, 0.0, 0.0], "dev_read_ios") == (0, 0)  # what was measured
    noisy = rs.compare_values([0.1, 5, 0.1], [10, 10.1, 9.9], "iops")  # Welch t reached -153 %
    assert math.isnan(noisy.low_pct) and noisy.verdict.startswith("too noisy to tell")
    assert rs.compare_values([11, 12, 11.5], [10, 10.1, 9.9], "iops").low_pct > 0
    assert bounds("cpu_busy_pct_ci_high") == (0, 100) and bounds("mean_lat_us_ci_low") == (0, math.inf)
    assert bounds("change_pct") == (-100, math.inf) and bounds("other_load_pct") == (-math.inf, math.inf)
    table = pd.DataFrame({"qd": [1, 1, 1], "iops": [60_000, 330_000, 45_000]})
    summary = rs.summarise(table, ["qd"], ["iops"])
    assert summary["iops_ci_low"].isna().all()
    assert rs.readable(summary)["IOPS (IO/s)"].iloc[0].endswith("(too noisy to bound: CV 111 %)")
    shown = rs.summary_table(summary)
    assert shown.iloc[0, 2].endswith("(too noisy to bound)") and "CV 111 %" in shown["note"].iloc[0]


def test_recorded_repeats_give_no_interval_below_zero_and_none_from_two_runs():
    """Real repeats (tests/fixtures/knee/: QD sweeps, 3 runs each, and a 5-trial grid): no
    interval of IOPS or p99 reaches below 0; from two of the runs there is no interval at
    all, and the tables say why instead of printing a ±9-standard-deviation one."""
    knee = FIXTURES / "knee"
    for name in ("loop_randread_3x.csv", "scratch_randread_3x.csv", "grid_randread_5x3.csv"):
        runs = pd.read_csv(knee / name).rename(columns={"rep": "repeat"})
        by = [c for c in ("target", "trial", "qd") if c in runs]
        summary = rs.summarise(runs.assign(run_id=range(len(runs))), by, metrics=["iops", "clat_p99_us"])
        for m in ("iops", "clat_p99_us"):
            low = summary[f"{m}_ci_low"]
            assert (low[low.notna()] > 0).all() and low.notna().mean() > 0.8, (name, m)
            shown = rs.readable(summary[low.isna()])  # the few the repeats cannot bound say so
            assert shown.filter(like="(").apply(lambda c: c.str.contains("too noisy to bound")).any(axis=None) or (
                low.notna().all()
            )
        two = rs.summarise(
            runs[runs["repeat"] < 2].assign(run_id=range((runs["repeat"] < 2).sum())), by, metrics=["iops"]
        )
        assert two["iops_ci_low"].isna().all() and (two["n"] == 2).all()
        assert rs.readable(two)["IOPS (IO/s)"].str.endswith(f"({rs.NO_INTERVAL})").all()


def test_one_rule_says_which_way_a_metric_improves():
    """columns.better: what compare's verdicts, the best configuration and the roofline all
    read (the search notebook decided it by its own rule before)."""
    from iolab.core import columns

    assert [columns.better(m) for m in ("iops", "bw_bytes_s", "clat_p99_us", "lat_mean_us", "cycles_per_io")] == [
        "higher",
        "higher",
        "lower",
        "lower",
        "lower",
    ]
    assert columns.better("cpu_busy_pct") == "" and columns.better("cpu_freq_mhz") == ""
    slow = pd.DataFrame(
        {"run_id": range(6), "qd": [1, 1, 1, 8, 8, 8], "clat_p99_us": [90.0, 92.0, 91.0, 300.0, 310.0, 305.0]}
    )
    from iolab.stats.best_config import best_config

    best, _ = best_config(slow, ["qd"], "clat_p99_us")
    assert best["qd"] == 1  # lower is better, without being told
