"""Analyses on known answers: kneed's own curves, published fio QD sweeps, seed figures."""
import json
import math

import pytest

from conftest import PUBLISHED, needs_shared
from iolab.analysis import (add_cycles_per_io, cycles_per_io, find_knee, littles_law, max_x_under,
                            saturation_point, summarise_repeats)


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
    t = pd.DataFrame({"cpu_busy_pct": [100.0], "cpus_sampled": [1], "cpu_freq_mhz": [3900.0],
                      "iops": [450_000.0]})
    assert add_cycles_per_io(t).cycles_per_io.iloc[0] == pytest.approx(8666.67, abs=0.01)


def test_littles_law():
    ok = littles_law(qd=32, iops=472_000, mean_latency_us=67)  # seed 000 E-core QD32
    assert not ok.flagged and ok.estimated_qd == pytest.approx(31.6, abs=0.1)
    assert littles_law(qd=64, iops=100_000, mean_latency_us=100).flagged


def test_repeats_summary():
    import pandas as pd
    t = pd.DataFrame({"qd": [1, 1, 1, 2], "iops": [10.0, 12.0, 11.0, 20.0]})
    s = summarise_repeats(t, ["qd"], "iops")
    row = s[s.qd == 1].iloc[0]
    assert row.iops_mean == 11 and row.iops_count == 3 and row.iops_ci_low < 11 < row.iops_ci_high
    assert math.isnan(s[s.qd == 2].iloc[0].iops_std)
