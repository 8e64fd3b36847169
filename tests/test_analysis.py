"""Analyses on known answers: kneed's own curves, published fio QD sweeps, seed figures."""

import json

import pandas as pd
import pytest

from iolab.core.errors import InputError
from iolab.stats.cycles import add_cycles_per_io, cycles_per_io
from iolab.stats.knee import find_knee
from iolab.stats.knee_interval import KneeEstimate, knee_with_interval
from iolab.stats.knee_verdict import trusted_knee
from iolab.stats.operating_points import max_x_under, saturation_point
from iolab.stats.qd_reading import describe_qd_study, littles_law, readable_summary
from support.marks import needs_shared
from support.paths import FIXTURES, PUBLISHED


def kneed_cases():
    if not PUBLISHED.exists():
        return []
    expected = json.loads((PUBLISHED / "kneed-upstream/expected_knees.json").read_text())
    curves = json.loads((PUBLISHED / "kneed-upstream/curves.json").read_text())
    out = []
    for name, case in expected["cases"].items():
        if case["params"].get("interp_method", "interp1d") != "interp1d" or case["curve_id"] not in curves:
            continue
        out.append(pytest.param(curves[case["curve_id"]], case, id=name))
    return out


@needs_shared
@pytest.mark.parametrize("curve,case", kneed_cases())
def test_kneedle_on_kneeds_own_curves(curve, case):
    p = {k: v for k, v in case["params"].items() if k in ("S", "curve", "direction", "online")}
    knee = find_knee(curve["x"], curve["y"], log2_x=False, **{"online": False, **p})
    want = case["kneed_result_here"]["knee"]
    if want is None:
        assert knee.x is None and knee.reason
    else:
        assert knee.x == pytest.approx(want, rel=1e-6)


@needs_shared
@pytest.mark.parametrize("folder", ["k01_published_ssd_pm883_randread", "k02_published_hdd_7k2_randread"])
def test_knee_on_published_qd_sweeps(folder):
    curve = json.loads((PUBLISHED / "knee-published" / folder / "curve.json").read_text())
    expected = json.loads((PUBLISHED / "knee-published" / folder / "expected_kneed.json").read_text())
    for r in expected["results"]:
        if r["y"] != "iops":
            continue
        knee = find_knee(curve["qd"], curve["iops"], log2_x=r["x"] == "log2_qd", online=False)
        assert knee.x == r.get("knee_qd", r["knee_x"]) if r["knee_x"] is not None else knee.x is None


def test_no_knee_is_an_answer_with_a_reason():
    assert find_knee([1, 2, 4, 8], [5, 5, 5, 5]).reason == "y is flat: no knee"
    assert find_knee([1, 2], [1, 2]).x is None
    line = find_knee([1, 2, 4, 8, 16], [1, 2, 3, 4, 5])  # straight in log2 x
    assert line.x is None and "threshold" in line.reason


def test_rule_based_points():
    qd, iops = [1, 2, 4, 8, 16, 32], [10, 20, 38, 47, 49, 50]
    assert saturation_point(qd, iops) == 16
    assert max_x_under(qd, [10, 11, 12, 20, 40, 80], 25) == 8
    assert max_x_under(qd, [100] * 6, 25) is None


def test_cycles_per_io_seed_001():
    r = cycles_per_io(busy_cpu_s=1.0, freq_hz=3.9e9, ios=450_000, freq_source="seed 001")
    assert r.cycles_per_io == pytest.approx(8666.67, abs=0.01) and r.freq_source == "seed 001"


def test_cycles_per_io_from_a_table():
    import pandas as pd

    t = pd.DataFrame({"cpu_busy_pct": [100.0], "cpus_sampled": [1], "cpu_freq_mhz": [3900.0], "iops": [450_000.0]})
    assert add_cycles_per_io(t).cycles_per_io_core.iloc[0] == pytest.approx(8666.67, abs=0.01)  # seed 001's way
    # a hog took half the core: fio's own 50 % of it is half the cycles; the core's busy time keeps the hog's
    shared = add_cycles_per_io(t.assign(own_cpu_pct=50.0, usr_cpu_pct=10.0, sys_cpu_pct=38.0))
    assert shared.cycles_per_io.iloc[0] == pytest.approx(8666.67 / 2, abs=0.01)
    assert shared.cycles_per_io_source.iloc[0].startswith("fio's own")
    rusage = add_cycles_per_io(t.assign(usr_cpu_pct=10.0, sys_cpu_pct=38.0))  # older runs: fio's rusage
    assert rusage.cycles_per_io.iloc[0] == pytest.approx(8666.67 * 0.48, abs=0.01)
    two_jobs = pd.DataFrame(  # one run, two jobs: each its own CPU over its own IOs, not the whole CPU's
        {"run_id": ["r", "r"], "job": ["a", "b"], "direction": ["read", "read"], "iops": [300_000.0, 150_000.0],
         "usr_cpu_pct": [20.0, 10.0], "sys_cpu_pct": [40.0, 30.0], "cpu_busy_pct": [100.0] * 2,
         "cpus_sampled": [1] * 2, "cpu_freq_mhz": [3900.0] * 2}
    )  # fmt: skip
    each = add_cycles_per_io(two_jobs)
    assert list(each.cycles_per_io) == pytest.approx([0.6 * 3.9e9 / 300_000, 0.4 * 3.9e9 / 150_000])
    assert list(each.cycles_per_io_core) == pytest.approx([8666.67] * 2, abs=0.01)


def test_littles_law():
    ok = littles_law(qd=32, iops=472_000, mean_latency_us=67)  # seed 000 E-core QD32
    assert not ok.flagged and ok.estimated_qd == pytest.approx(31.6, abs=0.1)
    assert littles_law(qd=64, iops=100_000, mean_latency_us=100).flagged


# ---------------------------------------------------------------- the knee with its interval
def recorded(name: str) -> pd.DataFrame:
    """3 repeats of QD 1..64, real fio runs (tests/fixtures/knee/README.md)."""
    return pd.read_csv(FIXTURES / "knee" / f"{name}_randread_3x.csv")


def test_knee_interval_on_recorded_repeats():
    t = recorded("loop")
    e = knee_with_interval(t.qd, t.iops)
    median = t.groupby("qd").iops.median()
    assert e.repeats == (3, 3) and e.n_boot == 1000 and sum(e.boot_knees.values()) == 1000
    assert (e.x, e.y) == (8, median[8])  # Kneedle on the median curve
    assert e.low <= e.x <= e.high and (e.low, e.high) == (8, 16)
    inside = sum(n for k, n in e.boot_knees.items() if k is not None and e.low <= k <= e.high)
    assert e.share_in_interval == inside / 1000 >= e.level
    assert e.boot_knees[8] / 1000 < e.level  # [8, 8] alone is too short: the interval is the shortest that holds 90 %
    assert e.label() == "knee QD 8 (96 % of resamples in [8, 16])"
    assert "96 % of 1000 resamples of the repeats put the knee in [8, 16]" in e.note
    # the single repeats say 16, 8 and 8: the interval covers them
    assert {find_knee(r.qd, r.iops, prominent=True).x for _, r in t.groupby("repeat")} == {8, 16}
    # one verdict: a clear bend inside the range that the repeats agree on is Kneedle's
    v = trusted_knee(t.qd, t.iops)
    assert (v.x, v.low, v.high, v.method_name, v.other.method_name) == (8, 8, 16, "Kneedle", "maximum power")
    assert v.line().startswith("knee QD 8 by Kneedle (Satopää et al. 2011") and "maximum power says QD 8" in v.why


def test_knee_and_the_95_percent_rule_say_when_they_disagree():
    e = knee_with_interval(*recorded("loop")[["qd", "iops"]].T.values)
    assert e.rule_x == 32 and not e.agree
    assert "rule disagrees: it says QD 32, deeper than the knee" in e.note
    agreeing = knee_with_interval([1, 2, 4, 8, 16, 32] * 2, [10, 20, 38, 48.5, 49, 50, 11, 19, 39, 49, 49, 51])
    assert agreeing.agree and "rule agrees" in agreeing.note


def test_knee_interval_is_deterministic_with_the_seed():
    t = recorded("loop")
    a, b = knee_with_interval(t.qd, t.iops, seed=7), knee_with_interval(t.qd, t.iops, seed=7)
    assert (a.x, a.low, a.high, a.share_in_interval, a.boot_knees) == (
        b.x,
        b.low,
        b.high,
        b.share_in_interval,
        b.boot_knees,
    )
    other = knee_with_interval(t.qd, t.iops, seed=1)
    assert other.x == a.x and other.low <= other.x <= other.high
    wider = knee_with_interval(t.qd, t.iops, seed=7, level=0.99)
    assert wider.low <= a.low and wider.high >= a.high


@pytest.mark.parametrize("repeat", [0, 1, 2])
def test_one_noisy_point_at_the_deepest_qd_does_not_move_the_knee(repeat):
    """The "falling at QD64 from noise" case: one repeat's QD64 halved."""
    t = recorded("loop")
    noisy = t.copy()
    noisy.loc[(noisy.qd == 64) & (noisy.repeat == repeat), "iops"] *= 0.5
    clean, e = knee_with_interval(t.qd, t.iops), knee_with_interval(noisy.qd, noisy.iops)
    assert (e.x, e.low, e.high) == (clean.x, clean.low, clean.high) == (8, 8, 16)
    if repeat == 1:  # that sweep alone, with kneed keeping the last knee it meets, says QD 32
        alone = noisy[noisy.repeat == 1]
        assert find_knee(alone.qd, alone.iops, online=True).x == 32


def test_the_most_prominent_knee_not_kneeds_edge_case():
    """Repeat 2 of the loop sweep starts above the chord's line and dips below it: kneed's first
    knee is then the first point (difference 0 there by construction); the prominent one is QD 8."""
    t = recorded("loop")
    r2 = t[t.repeat == 2]
    first = find_knee(r2.qd, r2.iops)
    prominent = find_knee(r2.qd, r2.iops, prominent=True)
    assert first.x == 1 and prominent.x == 8
    assert prominent.all_x == [1, 8] and prominent.prominence[0] == 0 < prominent.prominence[1]


def test_no_knee_in_the_recorded_scratch_sweep():
    t = recorded("scratch")
    e = knee_with_interval(t.qd, t.iops)
    assert e.x is None and e.low is None and e.high is None and e.label() == "no knee"
    assert e.rule_x == 64 and e.agree and "sweep deeper" in e.note and e.note.startswith("No knee:")
    v = trusted_knee(t.qd, t.iops)  # the one answer: maximum power, with what Kneedle lacked, where it saturates
    assert (v.x, v.method_name, v.estimate.knee.method) == (32, "maximum power", v.method.split(" on the")[0])
    assert v.moved_from == 8  # maximum power's own knee: QD 16 and 32 still gained beyond their intervals
    assert v.why.startswith("maximum power says QD 8, not saturated there: QD 16 still gained +38 % [+24 %, +53 %]")
    assert "Kneedle found no knee (the curve stays too close to the straight line" in v.why
    assert v.line().startswith("knee QD 32 by maximum power (IOPS²/QD): maximum power says QD 8, not saturated")
    summary = t.groupby("qd", as_index=False).iops.mean().assign(littles_ok=True)
    said = describe_qd_study(summary, v, 64, None).replace("\n    ", " ")
    assert "puts the knee at QD 8, but the curve is not saturated there; the knee reported is QD 32" in said
    assert "resamples" not in said  # the interval was maximum power's QD 8's, not the reported knee's
    rising = trusted_knee([1, 2, 4, 8, 16], [5, 10, 20, 40, 80])  # no bend, power still rising: no knee
    assert (
        rising.x is None and rising.line().startswith("no knee: Kneedle found no knee") and "sweep deeper" in rising.why
    )


def test_one_value_per_x_has_no_interval():
    e = knee_with_interval([1, 2, 4, 8, 16, 32], [10, 20, 38, 47, 49, 50])
    assert e.x == 8 and e.low is None and e.n_boot == 0 and e.label() == "knee QD 8"
    assert "One value per QD: no interval" in e.note
    t = recorded("loop")
    some = t[~((t.qd == 4) & (t.repeat > 0))]
    assert "QD 4 has one value" in knee_with_interval(some.qd, some.iops).note
    with pytest.raises(InputError, match="log2"):
        knee_with_interval([0, 1, 2], [1, 2, 3])


def test_describe_and_draw_the_knee_with_its_interval():
    import matplotlib

    matplotlib.use("Agg")
    from iolab.plots import curves

    t = recorded("loop")
    e = knee_with_interval(t.qd, t.iops)
    summary = t.groupby("qd", as_index=False).iops.mean().assign(littles_ok=True)
    text = describe_qd_study(summary, e, 32, None)
    shown = readable_summary(
        summary.assign(
            iops_median=summary.iops, clat_p99_us=600.0, p99_under_target=False, littles_qd=summary.qd * 0.5, runs=3
        ),
        500,
    )
    assert {"queue depth", "IOPS median (IO/s)", "p99 ≤ 500 µs", "runs"} <= set(shown.columns)
    assert (
        set(shown["p99 ≤ 500 µs"]) == {"no"} and shown["Little's law: IOPS × mean latency"].iloc[0] == "0.5 IOs: holds"
    )
    assert "median IOPS of 3 repeats per QD puts the knee at QD 8" in text and "[8, 16]" in text
    assert isinstance(e, KneeEstimate)
    ax = curves.qd_curve(t, e)
    assert "knee QD 8 (96 % of resamples in [8, 16])" in ax.get_legend_handles_labels()[1]
    assert [p.get_label() for p in ax.patches].count(e.label()) == 1  # the shaded span over [8, 16]
