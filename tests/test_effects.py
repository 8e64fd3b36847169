"""Reading a search (iolab.stats: effects, interactions, best_config, roofline, frequency;
and their plots) on synthetic grids with known effects: main effects ranked with the right
sign and size, the one interaction built in found first, the best configuration and its
ties, the roofline's efficiencies (and seed 003's 99.99 %), the frequency labelled sampled
or nominal; and notebook 05's analysis cells run on such a grid with a stand-in for
iolab.measure.search."""

import itertools
import math
import re
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from iolab.core.errors import InputError  # noqa: E402
from iolab.core.readable import percent  # noqa: E402
from iolab.plots import (
    common,  # noqa: E402
    searches,  # noqa: E402
)
from iolab.plots.common import tick_labels  # noqa: E402
from iolab.read.published import published_figures
from iolab.stats import effects
from iolab.stats.best_config import best_config
from iolab.stats.frequency import describe_frequency, frequency_effects
from iolab.stats.interactions import interaction, interactions
from iolab.stats.roofline import describe_roofline, roofline
from support.notebooks import python_of  # noqa: E402
from support.paths import FIXTURES, REPO  # noqa: E402

QD = {1: 1.0, 4: 3.0, 16: 5.0}  # IOPS factor per iodepth
MQ = 0.8  # mq-deadline costs 20 %
SEED003_ROOF, SEED003_16 = 3_857_938, 61_720_159


def grid(
    axes: dict, value, repeats: int = 3, noise: float = 0.01, seed: int = 1, extra=None, jobs: int = 1
) -> pd.DataFrame:
    """A search table: every combination of ``axes`` x ``repeats`` runs, ``value(cell)`` IOPS
    with multiplicative normal noise, split over ``jobs`` rows per run (per_run sums them)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, combo in enumerate(itertools.product(*axes.values())):
        cell = dict(zip(axes, combo))
        for r in range(repeats):
            iops = value(cell) * (1 + noise * rng.standard_normal())
            more = extra(cell, rng) if extra else {}
            for j in range(jobs):
                rows.append(
                    {
                        **cell,
                        "run_id": f"r{i:04d}-{r}",
                        "status": "ok",
                        "repeat": r,
                        "job_index": j,
                        "direction": "read",
                        "iops": iops / jobs,
                        **more,
                    }
                )
    return pd.DataFrame(rows)


MAIN_AXES = {"iodepth": [1, 4, 16], "scheduler": ["none", "mq-deadline"], "nomerges": [0, 1], "bs": ["4k"]}


def main_value(c):
    return 100_000 * QD[c["iodepth"]] * (MQ if c["scheduler"] == "mq-deadline" else 1)


@pytest.fixture(scope="module")
def main_table():
    return grid(MAIN_AXES, main_value, jobs=2)


# ---------------------------------------------------------------- main effects
def test_main_effects_rank_the_known_effects_with_their_sign_and_size(main_table):
    eff = effects.main_effects(main_table, MAIN_AXES)
    ranked = effects.rank_effects(eff)
    assert list(ranked["axis"]) == ["iodepth", "scheduler", "nomerges"]
    assert eff.attrs["skipped"] == {"bs": "one level (4k): nothing to compare"}
    grand = 100_000 * np.mean(list(QD.values())) * (1 + MQ) / 2  # 270k
    assert eff.attrs["grand_mean"] == pytest.approx(grand, rel=0.01)
    qd = eff[eff.axis == "iodepth"].set_index("level")
    for depth, factor in QD.items():  # two jobs per run summed: the run's IOPS
        assert qd.loc[depth, "iops_mean"] == pytest.approx(100_000 * factor * (1 + MQ) / 2, rel=0.01)
        assert qd.loc[depth, "iops_ci_low"] < qd.loc[depth, "iops_mean"] < qd.loc[depth, "iops_ci_high"]
        assert qd.loc[depth, "n_runs"] == 12 and qd.loc[depth, "n_cells"] == 4
    top = ranked.iloc[0]
    assert top.effect_pct == pytest.approx(100 * 0.9 * 4 / 2.7, rel=0.02)  # (450k - 90k) / 270k
    assert top.change_pct == pytest.approx(400, rel=0.02) and top.low_level == 1 and top.high_level == 16
    sched = eff[eff.axis == "scheduler"].set_index("level")
    assert list(sched.index) == ["none", "mq-deadline"]  # the spec's order
    assert sched.loc["mq-deadline", "vs_first_pct"] == pytest.approx(-20, abs=1)
    assert ranked.set_index("axis")["separated"].to_dict() == {"iodepth": True, "scheduler": True, "nomerges": False}
    assert ranked["complete"].all()


def test_describe_effects_says_what_matters_in_words(main_table):
    words = effects.describe_effects(effects.main_effects(main_table, MAIN_AXES))
    top = re.match(
        r"iodepth matters most: IOPS range from (\d+\.?\d*)k at 1 to (\d+)k at 16 \(\+(\d+) %, "
        r"intervals apart\); ",
        words,
    )
    assert top and float(top[1]) == pytest.approx(90, abs=1) and float(top[2]) == pytest.approx(450, abs=5)
    assert float(top[3]) == pytest.approx(400, abs=5)
    sched = re.search(
        r"scheduler: IOPS range from (\d+)k at mq-deadline to (\d+)k at none \(\+(\d+) %, "
        r"intervals apart\)",
        words,
    )
    assert sched and float(sched[3]) == pytest.approx(25, abs=2)
    assert "nomerges: no difference the repeats can show" in words and "intervals overlap" in words
    assert "bs: one level (4k): nothing to compare" in words
    assert words.index("iodepth") < words.index("scheduler") < words.index("nomerges")


def test_levels_sort_as_numbers_and_sizes_without_a_spec():
    t = grid({"bs": ["512", "4k", "1m"], "iodepth": [16, 2]}, lambda c: 1000.0, repeats=2)
    eff = effects.main_effects(t, ["bs", "iodepth"])
    assert list(eff[eff.axis == "bs"]["level"]) == ["512", "4k", "1m"]
    assert list(eff[eff.axis == "iodepth"]["level"]) == [2, 16]


def test_one_run_per_cell_has_no_interval_and_says_so(main_table):
    one = main_table[main_table.repeat == 0]
    eff = effects.main_effects(one, MAIN_AXES)
    assert eff["iops_ci_low"].isna().all() and eff["separated"].isna().all()
    words = effects.describe_effects(eff)
    assert "one run per cell: no interval, as measured" in words and "matters most" not in words
    best, ties = best_config(one, MAIN_AXES)
    assert "ties cannot be judged" in best["note"] and ties.empty


def test_a_cell_with_one_run_borrows_the_pooled_noise(main_table):
    lost = main_table[
        ~(
            (main_table.iodepth == 16)
            & (main_table.scheduler == "none")
            & (main_table.nomerges == 0)
            & (main_table.repeat > 0)
        )
    ]
    eff = effects.main_effects(lost, MAIN_AXES)
    assert eff["iops_ci_low"].notna().all()
    assert eff.set_index(["axis", "level"]).loc[("iodepth", 16), "n_runs"] == 10


def test_failed_runs_and_wrong_axes_are_refused_with_what_to_do(main_table):
    failed = main_table.assign(status=np.where(main_table.iodepth == 1, "failed", "ok"))
    eff = effects.main_effects(failed, MAIN_AXES)
    assert list(eff[eff.axis == "iodepth"]["level"]) == [4, 16]
    with pytest.raises(InputError, match="no column 'governor'.*axes must be columns"):
        effects.main_effects(main_table, ["governor"])
    with pytest.raises(InputError, match="no run with status 'ok'"):
        effects.main_effects(main_table.assign(status="failed"), MAIN_AXES)
    with pytest.raises(InputError, match="no metric 'clat_p99_us'"):
        effects.main_effects(main_table, MAIN_AXES, "clat_p99_us")
    with pytest.raises(InputError, match="no axes given"):
        effects.main_effects(main_table, [])


# ---------------------------------------------------------------- interactions
INTER_AXES = {"cores": [1, 2], "stress": ["idle", "stressed"], "iodepth": [1, 4], "scheduler": ["none", "mq-deadline"]}


def inter_value(c):
    """Multiplicative main effects everywhere; stress halves IOPS only on one core."""
    hurt = 0.5 if (c["cores"] == 1 and c["stress"] == "stressed") else 1
    return 100_000 * c["cores"] * QD[c["iodepth"]] * (MQ if c["scheduler"] == "mq-deadline" else 1) * hurt


@pytest.fixture(scope="module")
def inter_table():
    return grid(INTER_AXES, inter_value)


def test_interactions_find_the_built_in_pair_first(inter_table):
    inter = interactions(inter_table, INTER_AXES)
    assert len(inter) == 6
    top = inter.iloc[0]
    assert (top.a, top.b) == ("cores", "stress") and top.shown and top.p_value < 1e-6 and top.complete
    # log means 0, ln 0.5, 0, 0: every residual is ln(0.5) / 4 -> exp(0.173) - 1 = 18.9 %
    assert top.interaction_pct == pytest.approx(100 * math.expm1(math.log(2) / 4), abs=0.5)
    assert (inter.iloc[1:]["interaction_pct"] < 1).all()  # the rest multiply: no interaction
    assert inter.iloc[1:]["shown"].sum() <= 1  # at 5 %, at most a chance one


def test_the_additive_model_calls_multiplicative_effects_interactions(inter_table):
    add = interactions(inter_table, INTER_AXES, model="additive")
    assert add.set_index(["a", "b"]).loc[("cores", "iodepth"), "interaction_pct"] > 10
    with pytest.raises(InputError, match="choose 'multiplicative'"):
        interactions(inter_table, INTER_AXES, model="log")


def test_interaction_pivot_holds_cell_means_and_departures(inter_table):
    pivot = interaction(inter_table, "cores", "stress", axes=INTER_AXES)
    assert list(pivot.index) == [1, 2] and list(pivot.columns) == ["idle", "stressed"]
    base = 100_000 * np.mean(list(QD.values())[:2]) * (1 + MQ) / 2
    assert pivot.loc[1, "idle"] == pytest.approx(base, rel=0.01)
    assert pivot.loc[1, "stressed"] == pytest.approx(base / 2, rel=0.01)
    assert pivot.loc[2, "stressed"] == pytest.approx(2 * base, rel=0.01)
    dep = np.array(pivot.attrs["departure_pct"])
    assert dep[0, 1] == pytest.approx(100 * math.expm1(-math.log(2) / 4), abs=0.5)  # below the prediction
    assert dep[0, 0] > 0 and pivot.attrs["shown"]


# ---------------------------------------------------------------- best configuration
BEST_AXES = {"iodepth": [1, 4, 16, 32], "scheduler": ["none", "mq-deadline"]}


def test_best_config_and_the_configurations_tied_with_it():
    factor = {1: 1.0, 4: 3.0, 16: 5.0, 32: 5.02}  # 16 and 32 within the noise
    t = grid(
        BEST_AXES, lambda c: 100_000 * factor[c["iodepth"]] * (MQ if c["scheduler"] == "mq-deadline" else 1), noise=0.02
    )
    best, ties = best_config(t, BEST_AXES)
    assert best["scheduler"] == "none" and best["iodepth"] in (16, 32) and best["n"] == 3
    assert best["iops_ci_low"] < best["iops_mean"] < best["iops_ci_high"]
    assert list(ties["iodepth"]) == [48 - best["iodepth"]] and list(ties["scheduler"]) == ["none"]
    assert ties.iloc[0]["low_pct"] <= 0 <= ties.iloc[0]["high_pct"]
    assert ties.iloc[0]["verdict"].startswith("tied with the best: Dunnett's test p =")
    assert "1 other cell(s) tied" in best["note"]
    shown = searches.ties_table(ties, list(BEST_AXES), "iops").iloc[0]  # as notebook 05 shows it
    assert shown["iodepth"] == str(48 - best["iodepth"]) and shown["mean IOPS (IO/s)"] > 0
    assert re.fullmatch(r"[-+]\d+(\.\d)? % \[[-+]\d+, [-+]\d+\]", shown["the best is ahead by"])
    worst, _ = best_config(t, BEST_AXES, higher_is_better=False)
    assert (worst["iodepth"], worst["scheduler"]) == (1, "mq-deadline")


def test_ties_on_recorded_repeats_are_dunnetts_and_never_outside_the_best_interval():
    """Real repeats (tests/fixtures/knee/loop_randread_3x.csv: QD 1-64 on a loop device, 3
    runs each): the ties are the cells Dunnett's test (the best as control) cannot tell from
    the best, less those whose mean is outside the best cell's interval; QD 1-4, at a third
    of the best or less, never; two repeats a cell judge nothing and say why."""
    from scipy import stats

    runs = pd.read_csv(FIXTURES / "knee" / "loop_randread_3x.csv").assign(run_id=lambda t: range(len(t)))
    best, ties = best_config(runs, ["qd"], "iops")
    by_qd = {q: g["iops"].to_numpy() for q, g in runs.groupby("qd")}
    others = [q for q in by_qd if q != best["qd"]]
    p = stats.dunnett(*[by_qd[q] for q in others], control=by_qd[best["qd"]]).pvalue
    expected = {
        q for q, pq in zip(others, p) if pq >= 0.05 and best["iops_ci_low"] <= by_qd[q].mean() <= best["iops_ci_high"]
    }
    assert set(ties["qd"]) == expected and expected and not expected & {1, 2, 4}
    assert (ties["low_pct"] <= ties["ratio_pct"]).all() and (ties["ratio_pct"] <= ties["high_pct"]).all()
    assert f"over {len(others)} cells" in best["note"] and ties.attrs["method"] == "Dunnett"
    fast, fast_ties = best_config(runs, ["qd"], "clat_p99_us", higher_is_better=False)
    assert fast["qd"] in (1, 2) and not set(fast_ties["qd"]) & {32, 64}
    two = runs[runs["repeat"] < 2]
    best2, ties2 = best_config(two, ["qd"], "iops")
    assert ties2.empty and pd.isna(best2["iops_ci_low"]) and "no interval: fewer than 3 repeats" in best2["note"]


# ---------------------------------------------------------------- roofline
ROOF_AXES = {"devices": [1, 2, 4], "cores": [1, 2], "iodepth": [1, 8]}


def roof_value(c):
    """200k per device, 300k per core, half at QD 1."""
    return min(c["devices"] * 200e3, c["cores"] * 300e3) * (0.5 if c["iodepth"] == 1 else 1)


@pytest.fixture(scope="module")
def roof_table():
    return grid(ROOF_AXES, roof_value, noise=0.005)


@pytest.mark.parametrize("hold", ["best", "fixed"])
def test_roofline_efficiency_against_roof_times_n(roof_table, hold):
    r = roofline(roof_table, ROOF_AXES, hold=hold)
    assert r["roof"]["value"] == pytest.approx(200e3, rel=0.01) and "devices=1" in r["roof"]["config"]
    assert r["roof"]["ci_low"] < r["roof"]["value"] < r["roof"]["ci_high"]
    dev = r["devices"].set_index("devices")
    assert list(dev.index) == [1, 2, 4]
    assert dev["roof_x_n"].to_numpy() == pytest.approx(r["roof"]["value"] * np.array([1, 2, 4]))
    assert dev["efficiency_pct"].to_numpy() == pytest.approx([100, 100, 75], abs=1.5)  # 4 devices: 2 cores cap 600k
    assert dev.loc[4, "config"] == "cores=2, iodepth=8"
    cores = r["cores"].set_index("cores")
    assert r["core_roof"]["value"] == pytest.approx(300e3, rel=0.01)
    assert cores["efficiency_pct"].to_numpy() == pytest.approx([100, 100], abs=1.5)
    assert cores.loc[2, "device_bound"] == pytest.approx(4 * r["roof"]["value"])
    words = describe_roofline(r)
    assert "4 devices: 60" in words and "= 75 % of 4 × roof" in words and "core roof 300k" in words


def test_roofline_without_devices_or_cores_is_the_roof_only(roof_table):
    one = roof_table[(roof_table.devices == 1) & (roof_table.cores == 1)]
    r = roofline(one, ["iodepth"])
    assert r["devices"] is None and r["cores"] is None and r["roof"]["value"] == pytest.approx(200e3, rel=0.01)
    assert any("no devices axis" in n for n in r["notes"]) and any("no cores axis" in n for n in r["notes"])
    no_single = roof_table[roof_table.devices > 1]
    r = roofline(no_single, ROOF_AXES)
    assert r["roof"]["value"] == pytest.approx(200e3, rel=0.01)  # best at 2 devices / 2
    assert any("no run with one device" in n for n in r["notes"])
    with pytest.raises(InputError, match="not one; choose from"):
        roofline(roof_table, ROOF_AXES, metric="clat_p99_us")
    with pytest.raises(InputError, match="positive count of devices"):
        roofline(roof_table.assign(devices="many"), ROOF_AXES)


def test_seed_003_roofline_figures():
    """Seed 003: the best single-device run, 3 857 938 IOPS, is the roof; 61 720 159 IOPS with
    16 devices and 8 cores is 99.99 % of 16 x roof (61 727 008)."""
    ref = published_figures()
    rows = ref[(ref.seed == "003") & (ref.experiment == "search_roofline")]
    assert set(rows["iops"]) >= {SEED003_ROOF, SEED003_16}
    a = rows[rows.iops == SEED003_16].iloc[0]
    assert (a.qd, a.bs_bytes, a.cores) == (128, 512, 8) and "16 devices" in a.label
    table = pd.DataFrame({"devices": [1, 16], "run_id": ["one", "sixteen"], "iops": [SEED003_ROOF, SEED003_16]})
    r = roofline(table, ["devices"])
    assert r["devices"].set_index("devices").loc[16, "efficiency_pct"] == pytest.approx(99.989, abs=0.001)
    powersave = ref[(ref.seed == "003") & (ref.experiment == "search_governor")]
    assert len(powersave) == 3 and "64.19" in powersave.iloc[0]["source"]


# ---------------------------------------------------------------- frequency
FREQ_AXES = {"governor": ["performance", "powersave"], "turbo": ["on", "off"], "iodepth": [1, 4]}
CLOCK = {
    ("performance", "on"): 3300,
    ("performance", "off"): 2600,
    ("powersave", "on"): 1200,
    ("powersave", "off"): 1200,
}


def freq_table(source: str) -> pd.DataFrame:
    def extra(c, rng):
        mhz = CLOCK[(c["governor"], c["turbo"])] * (1 + 0.003 * rng.standard_normal())
        return {"cpu_freq_mhz": mhz if source == "scaling_cur_freq" else 2400.0, "freq_source": source}

    return grid(FREQ_AXES, lambda c: 100 * CLOCK[(c["governor"], c["turbo"])] * c["iodepth"], extra=extra)


def test_frequency_effects_sampled_clock_explains_the_governor():
    f = frequency_effects(freq_table("scaling_cur_freq"), FREQ_AXES)
    assert list(f["axis"].unique()) == ["governor", "turbo"] and "iodepth" not in set(f["axis"])
    assert f.attrs["absent"] == ["smt", "siblings", "thread_siblings", "stress"]
    ps = f[(f.axis == "governor") & (f.level == "powersave")].iloc[0]
    assert ps.reference_level == "performance"
    assert ps.change_pct == pytest.approx(100 * (1200 / 2950 - 1), abs=1)  # IOPS follow the clock
    assert ps.freq_change_pct == pytest.approx(ps.change_pct, abs=1)
    assert ps.freq_share_pct == pytest.approx(100, abs=3) and ps.freq_note.startswith("sampled")
    words = describe_frequency(f)
    assert "governor powersave: IOPS -59 % vs performance; CPU frequency -59 %" in words
    assert "scaling_cur_freq" in words and "turbo off: IOPS" in words


def test_frequency_from_proc_cpuinfo_is_labelled_nominal():
    f = frequency_effects(freq_table("proc_cpuinfo"), FREQ_AXES)
    assert f["freq_note"].str.startswith("nominal: /proc/cpuinfo").all()
    assert f["freq_share_pct"].isna().all()
    words = describe_frequency(f)
    assert "is nominal (/proc/cpuinfo, no cpufreq): it cannot say whether the clock explains this" in words
    none = frequency_effects(freq_table("proc_cpuinfo"), ["iodepth"])
    assert none.empty and "not searched" in describe_frequency(none)


def test_frequency_unchanged_or_outrun_is_said_so():
    axes = {"stress": ["idle", "stressed"], "governor": ["performance", "powersave"], "devices": [1, 4]}

    def value(c):  # one device caps IOPS whatever the clock; stress costs 30 % at the same clock
        cpu = 1e6 * (0.4 if c["governor"] == "powersave" else 1) * (0.7 if c["stress"] == "stressed" else 1)
        return min(c["devices"] * 300e3, cpu)

    t = grid(
        axes,
        value,
        extra=lambda c, rng: {
            "cpu_freq_mhz": 1200.0 if c["governor"] == "powersave" else 3000.0,
            "freq_source": "scaling_cur_freq",
        },
    )
    words = describe_frequency(frequency_effects(t, axes))
    assert re.search(r"stress stressed: IOPS -2\d % vs idle; CPU frequency unchanged \(2,100 MHz", words)
    assert "the clock does not explain it" in words
    assert "the clock moved further than IOPS" in words and "bound by something else" in words


# ---------------------------------------------------------------- plots
def test_main_effects_plot_one_panel_per_axis_with_level_means_and_intervals(main_table):
    eff = effects.main_effects(main_table, MAIN_AXES)
    panels = searches.main_effects(eff)
    assert [p.get_xlabel() for p in panels] == ["iodepth", "scheduler", "nomerges"]  # by effect size
    assert panels[0].get_ylabel() == "IOPS (IO/s)"
    for p, axis in zip(panels, ["iodepth", "scheduler", "nomerges"]):
        part = eff[eff.axis == axis]
        means = next(line for line in p.get_lines() if line.get_gid() == f"{axis} means")
        assert list(means.get_ydata()) == pytest.approx(list(part["iops_mean"]))
        whiskers = next(c for c in p.collections if c.get_gid() == f"{axis} intervals")
        segs = whiskers.get_segments()
        assert np.array([sorted(s[:, 1]) for s in segs]) == pytest.approx(
            part[["iops_ci_low", "iops_ci_high"]].to_numpy()
        )
        assert [t.get_text() for t in p.get_xticklabels()] == [str(v) for v in part["level"]]
    # one scale in the titles, the table and the text: lowest to highest level mean, % of the lowest
    effect = percent(effects.rank_effects(eff).iloc[0]["change_pct"], signed=True)  # +398 %: the noise
    top = effects.rank_effects(eff).iloc[0]  # which way: the highest level's mean over the lowest's
    said = f"iodepth: {top['high_level']} {effect} over {top['low_level']}"
    assert panels[0].get_title().startswith(said) and "intervals apart" in panels[0].get_title()
    shown = effects.readable_ranking(effects.rank_effects(eff)).iloc[0]
    assert shown["effect: lowest to highest mean"] == effect
    assert f"({effect}, intervals apart)" in effects.describe_effects(eff)
    assert shown["repeats show it"] == "yes: intervals apart" and shown["lowest mean: IOPS (IO/s)"] > 0
    ticks = [t.get_text() for t in panels[0].get_yticklabels() if t.get_text()]
    assert all(t.endswith("k") for t in ticks) or not any(t.endswith("k") for t in ticks)  # one format per axis
    assert "no difference shown" in panels[2].get_title()
    note = [t.get_text() for p in panels for t in p.texts if t.get_text().startswith("source:")]
    assert len(note) == 1 and "not drawn (one level): bs" in note[0].replace("\n", " ")
    assert "main effects" in panels[0].figure._suptitle.get_text().lower()
    plt.close("all")


def test_interaction_heatmap_annotates_means_departures_and_units(inter_table):
    pivot = interaction(inter_table, "cores", "stress", axes=INTER_AXES)
    ax = searches.interaction_heatmap(pivot, "cores", "stress", "iops")
    cells = [t.get_text() for t in ax.texts if not t.get_text().startswith("source:")]
    assert len(cells) == 4 and all("\n" in c and c.endswith("%") for c in cells)
    assert cells[1].split("\n") == [tick_labels(pivot.to_numpy().ravel())[1], "-16 %"]
    assert len({c.split("\n")[0][-1].isdigit() for c in cells}) == 1  # one number format for every cell
    table = searches.interaction_table(interactions(inter_table, INTER_AXES, "iops"))
    assert table.iloc[0]["settings"] == "cores × stress" and table.iloc[0]["shown at 5 %"] in ("yes", "no")
    assert ax.collections[0].colorbar.ax.get_ylabel() == "IOPS (IO/s)"
    assert ax.get_ylabel() == "cores" and ax.get_xlabel() == "stress"
    assert "interaction 18.9 %" in ax.get_title() and "shown at 5 %" in ax.get_title()
    drawn = [t.get_text() for t in ax.texts if t.get_text().startswith("source:")]
    assert len(drawn) == 1 and drawn[0].count("\n") <= 1 and "Montgomery" in drawn[0]  # a line or two
    assert "within-cell mean square" in " ".join(common.details(ax).split())  # the rest a click away
    plt.close("all")


def test_roofline_plot_draws_roof_times_n_efficiencies_and_seed_003(roof_table):
    r = roofline(roof_table, ROOF_AXES)
    ref = published_figures().query("experiment == 'search_roofline'")
    dev_ax, core_ax = searches.roofline(r, reference=ref)
    roof_line = next(line for line in dev_ax.get_lines() if line.get_gid() == "roof x N")
    assert list(roof_line.get_xdata()) == [1, 2, 4, 16]  # the seed's 16 devices on the axis
    assert list(roof_line.get_ydata()) == pytest.approx(r["roof"]["value"] * np.array([1, 2, 4, 16]))
    shown = searches.roof_table(r["devices"], "devices", "iops")
    assert (
        list(shown.columns[:2]) == ["devices", "aggregate IOPS (IO/s)"]
        and shown["efficiency (% of roof × N)"].str.match(r"\d+").all()
    )
    labels = [t.get_text() for t in dev_ax.texts if t.get_gid() == "efficiency"]
    assert labels == [f"{e:.0f} %" for e in r["devices"]["efficiency_pct"]] and labels[-1] == "75 %"
    published = next(c for c in dev_ax.collections if c.get_gid() == "published")
    assert sorted(published.get_offsets()[:, 1]) == sorted(ref["iops"])
    assert [t.get_text() for t in dev_ax.texts if t.get_gid() == "published efficiency"] == ["100 %", "100 %"]
    seed_roof = next(line for line in dev_ax.get_lines() if line.get_gid() == "published roof x N")
    assert seed_roof.get_ydata()[-1] == pytest.approx(16 * SEED003_ROOF)
    assert dev_ax.get_xlabel() == "devices" and dev_ax.get_ylabel() == "aggregate IOPS (IO/s)"
    ceiling = next(line for line in core_ax.get_lines() if line.get_gid() == "device ceiling")
    assert ceiling.get_ydata()[0] == pytest.approx(4 * r["roof"]["value"])
    assert "16 devices" in " ".join(t.get_text() for t in core_ax.get_legend().get_texts())
    note = " ".join(t.get_text() for t in dev_ax.texts if t.get_text().startswith("source:")).replace("\n", " ")
    assert "seed 003 (data/reference/published_figures.csv)" in note and "seed 003: AiSIO" in " ".join(
        common.details(dev_ax).split()
    )
    plt.close("all")


def test_roofline_plot_of_a_search_without_devices_or_cores(roof_table):
    r = roofline(roof_table[(roof_table.devices == 1) & (roof_table.cores == 1)], ["iodepth"])
    (ax,) = searches.roofline(r)
    assert "no devices or cores axis" in ax.get_title()
    assert ax.patches[0].get_height() == pytest.approx(r["roof"]["value"])
    plt.close("all")


# ---------------------------------------------------------------- notebook 05
NB_AXES = {"iodepth": [1, 4, 16], "governor": ["performance", "powersave"], "devices": [1, 2], "cores": [1, 2]}


def nb_value(c):
    return (
        min(c["devices"] * 200e3, c["cores"] * 150e3)
        * QD[c["iodepth"]]
        / 5
        * (0.4 if c["governor"] == "powersave" else 1)
    )


@pytest.mark.parametrize("existing", [False, True])
def test_notebook_05_analysis_cells_run_on_a_synthetic_search(existing, monkeypatch, tmp_path):
    """Every code cell of notebook 05 runs, in order, with the search its study runs (and its spec reader) replaced by a stand-in
    that returns a synthetic search table (the real one runs fio): once running the spec,
    once reading an existing runs folder (it keeps the spec as search.yaml)."""

    def extra(c, rng):
        return {
            "cpu_freq_mhz": (1300 if c["governor"] == "powersave" else 3300) * (1 + 0.003 * rng.standard_normal()),
            "freq_source": "scaling_cur_freq",
        }

    table = grid(NB_AXES, nb_value, extra=extra)
    calls = []
    from iolab.measure import search as real_search
    from iolab.studies import search as study

    fake = types.SimpleNamespace()

    def load_spec(path):
        calls.append(("load_spec", str(path)))
        return types.SimpleNamespace(name="synthetic", axes=dict(NB_AXES), path=path, target=["scratch"], cpus=[0])

    def run(spec, runs_dir=None, *, drop_unavailable=False, how=None):
        calls.append(("run", runs_dir, drop_unavailable, how.allow_destructive))
        return table.copy()

    fake.run = run
    fake.load_table = lambda runs_dir: calls.append(("load_table", str(runs_dir))) or table.copy()
    fake.varied, fake.left_out = real_search.varied, lambda runs_dir: []  # nothing this machine could not vary
    fake.default_folder = lambda spec: tmp_path / "default-search-folder"
    monkeypatch.setattr(study, "search", fake)  # what the notebook's study reads and runs through
    monkeypatch.setattr(study, "load_spec", load_spec)
    if existing:
        (tmp_path / "search.yaml").write_text("name: synthetic\n")
    nb = nbformat.read(REPO / "notebooks" / "05_parameter_search.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata["tags"]
    space: dict = {}
    exec(compile(code[0].source, "05 parameters", "exec"), space)
    assert (space["spec"], space["runs_dir"], space["metric"]) == ("data/examples/search_small.yaml", "", "iops")
    assert space["drop_unavailable"] is False and space["allow_destructive"] is False
    if existing:
        space["runs_dir"] = str(tmp_path)  # as papermill -p runs_dir would
    for cell in code[1:]:
        exec(compile(python_of(cell.source), f"05 cell {cell.id}", "exec"), space)
        plt.close("all")
    if existing:  # read back: no preflight, nothing runs
        assert calls == [("load_spec", str(tmp_path / "search.yaml")), ("load_table", str(tmp_path))]
    else:  # the preflight's spec, then the study's; '': the spec's own folder
        assert (REPO / calls[0][1]).resolve() == REPO / "data/examples/search_small.yaml"  # cwd or the checkout
        assert calls[1:] == [calls[0], ("run", tmp_path / "default-search-folder", False, False)]
    assert list(space["axes"]) == list(NB_AXES)
    assert effects.rank_effects(space["eff"]).iloc[0]["axis"] == "iodepth"
    assert space["best"]["config"] == "iodepth=16, governor=performance, devices=2, cores=2"
    assert space["roof"]["devices"] is not None and not space["freq"].empty
    assert len(space["pairs"]) == 3


def test_a_cell_far_below_the_best_is_never_tied_with_it():
    """Noisy repeats gave a pairwise interval from -489 % to +1049 %: notebook 05 called
    QD 1 cells at 52-68k tied with a best of 200k. A mean outside the best's interval is not
    tied, even when the test, with one very noisy cell, cannot tell it apart."""
    table = pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(9)],
            "iodepth": [1, 1, 1, 16, 16, 16, 64, 64, 64],
            "iops": [52_000.0, 68_000.0, 60_000.0, 20_000.0, 390_000.0, 90_000.0, 200_000.0, 205_000.0, 202_000.0],
        }
    )
    best, ties = best_config(table, ["iodepth"], "iops")
    assert best["iodepth"] == 64 and best["iops_ci_low"] > 68_000
    assert ties.empty  # QD 16 (mean 167k, outside 64's interval): Dunnett alone, p > 0.05, would tie it


def test_repeats_too_noisy_to_bound_show_no_difference_not_one_run_per_cell():
    """With repeats whose spread leaves no interval (repeat_stats.bounded), a level shows no
    difference the repeats can show; it is not read as "one run per cell"."""
    import pandas as pd

    from iolab.stats import effects

    noisy = {1: [1e3, 5e4, 2e4], 8: [3e3, 6e4, 1e4]}
    table = pd.DataFrame(
        [{"iodepth": q, "iops": v, "run_id": f"{q}-{i}"} for q, vs in noisy.items() for i, v in enumerate(vs)]
    )
    found = effects.main_effects(table, ["iodepth"], "iops")
    assert found["iops_ci_low"].isna().all() and not found["separated"].any()
    said = effects.describe_effects(found)
    assert said.startswith("No setting makes a difference the repeats can show") and "one run per cell" not in said
