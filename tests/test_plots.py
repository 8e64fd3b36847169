"""The standard figures on synthetic tables: intervals over repeats, unstable cells, the ladder."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from iolab.core.errors import InputError  # noqa: E402
from iolab.plots import common, curves, ladders  # noqa: E402
from iolab.read.published import published_figures
from iolab.stats import repeat_stats
from iolab.stats.knee_interval import knee_with_interval  # noqa: E402

QDS = [1, 2, 4, 8, 16, 32, 64]
UNSTABLE_QD = 16
STEADY = (0.98, 1.0, 1.02)  # CV 2 %
SPREAD = (0.75, 1.0, 1.25)  # CV 25 %: unstable


def qd_table(repeats: int = 3) -> pd.DataFrame:
    """A QD sweep: IOPS saturating towards 200k (knee near QD 8), 3 repeats, QD 16 spread by
    ±25 % while the CPU frequency moved."""
    rows = []
    for qd in QDS:
        spread = SPREAD if qd == UNSTABLE_QD else STEADY
        freqs = (2200, 3000, 3400) if qd == UNSTABLE_QD else (3000, 3000, 3000)
        for rep in range(repeats):
            iops = 200_000 * (1 - np.exp(-qd / 5)) * spread[rep]
            p50 = 0.9e6 * qd / iops
            rows.append(
                {
                    "qd": qd,
                    "repeat": rep,
                    "run_id": f"qd{qd}-r{rep}",
                    "direction": "read",
                    "iops": iops,
                    "clat_p50_us": p50,
                    "clat_p99_us": p50 * (1.6 + 0.05 * rep),
                    "fio_version": "fio-3.36",
                    "percentiles_from": "bins",
                    "cpu_freq_mhz": freqs[rep],
                    "freq_source": "scaling_cur_freq",
                }
            )
    return pd.DataFrame(rows)


def setting_table(x: str = "bs", values=("4k", "64k", "1m"), y: str = "bw_mib_s", unstable="64k") -> pd.DataFrame:
    """Three repeats of ``y`` per value of ``x``; the ``unstable`` value spread by ±25 %."""
    rows = []
    for i, v in enumerate(values):
        for rep in range(3):
            spread = SPREAD if v == unstable else STEADY
            rows.append({x: v, "run_id": f"{v}-r{rep}", "direction": "read", y: 100.0 * (i + 1) * spread[rep]})
    return pd.DataFrame(rows)


def ladder_table(runs: int = 3) -> pd.DataFrame:
    """A ladder as ``run_ladder`` returns it on a loop device: the NVMe and opt-in steps skipped."""
    S, M = "skipped", "measured"
    steps = [  # name, tool, status, reason, iops, carried_forward, gain, low, high
        ("baseline io_uring", "fio", M, "", 100_000, True, np.nan, np.nan, np.nan),
        ("polled completions (hipri)", "fio", S, "no poll queues: /sys/block/loop0/queue/io_poll is 0", *[np.nan] * 5),
        (
            "NVMe passthrough (io_uring_cmd on /dev/ng)",
            "fio",
            S,
            "no /dev/ng* node for loop0 (not NVMe)",
            *[np.nan] * 5,
        ),
        ("fixedbufs + registerfiles + norandommap", "fio", M, "", 112_000, True, 12.0, 4.0, 20.0),
        ("gtod_reduce (peak only: no latency)", "fio", M, "", 125_000, False, 11.6, -2.0, 25.0),
        ("batching: submit 32, complete 8", "fio", M, "", 130_000, True, 16.1, 9.0, 23.0),
        (
            "interrupt coalescing (NVMe feature 0x08 = 0x320)",
            "fio",
            S,
            "changes a device setting: pass opt_in=True to allow (always restored)",
            *[np.nan] * 5,
        ),
        ("t/io_uring", "tio", M, "", 190_000, False, 46.2, 40.0, 52.0),
    ]
    rows = []
    for i, (name, tool, status, reason, iops, kept, gain, low, high) in enumerate(steps):
        measured = status == M
        if runs < 2:
            low = high = np.nan
        rows.append(
            {
                "step": i,
                "name": name,
                "tool": tool,
                "status": status,
                "reason": reason,
                "iops": iops,
                "carried_forward": kept if measured else np.nan,
                "runs": runs if measured else pd.NA,
                "gain_pct": gain,
                "gain_low_pct": low,
                "gain_high_pct": high,
                "gain_verdict": "" if np.isnan(gain) else f"step {i} is {gain:.0f} % faster",
                "cpu_busy_pct": 99.0 if measured else np.nan,
                "cycles_per_io": 3e9 / iops if measured else np.nan,
                "freq_source": "scaling_cur_freq" if measured else np.nan,
            }
        )
    table = pd.DataFrame(rows)
    table["runs"] = table["runs"].astype("Int64")
    return table


def published() -> pd.DataFrame:
    return published_figures().query("experiment == 'ladder'")


def note(ax) -> str:
    """The figure's source in full: its line under the plot and the details beside it."""
    return " ".join(common.details(ax).split())


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------- qd_curve
def test_qd_band_is_the_ci_of_the_mean_from_summarise():
    t = qd_table()
    ax = curves.qd_curve(t, knee_with_interval(t.qd, t.iops))
    s = repeat_stats.summarise(t, by=["qd"], metrics=["iops"])
    band = next(c for c in ax.collections if c.get_gid() == "iops band")
    vertices = {tuple(np.round(v, 6)) for v in band.get_paths()[0].vertices}
    for r in s.itertuples():
        assert (r.qd, round(r.iops_ci_low, 6)) in vertices and (r.qd, round(r.iops_ci_high, 6)) in vertices
    line = next(ln for ln in ax.lines if ln.get_label() == "IOPS")
    assert list(line.get_ydata()) == pytest.approx(list(s.iops_mean))
    assert "band: 95 % CI of the mean over 3 repeats (Student t)" in note(ax)


def test_latency_bands_on_the_twin_axis():
    t = qd_table()
    ax = curves.qd_curve(t)
    lat = next(a for a in ax.figure.axes if a is not ax)
    s = repeat_stats.summarise(t, by=["qd"], metrics=["clat_p99_us"])
    band = next(c for c in lat.collections if c.get_gid() == "clat_p99_us band")
    ys = band.get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(s.clat_p99_us_ci_low.min())
    assert max(ys) == pytest.approx(s.clat_p99_us_ci_high.max())


def test_unstable_ring_only_at_the_unstable_qd():
    t = qd_table()
    ax = curves.qd_curve(t, knee_with_interval(t.qd, t.iops))
    rings = [c for c in ax.collections if c.get_gid() == "unstable"]
    assert len(rings) == 1 and [p[0] for p in rings[0].get_offsets()] == [UNSTABLE_QD]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "unstable: CV > 10 % over repeats" in labels and labels.count("unstable: CV > 10 % over repeats") == 1
    assert "IOPS (mean, 95 % CI band)" in labels and any(lb.startswith("knee QD") for lb in labels)
    assert f"QD {UNSTABLE_QD}: IOPS CV".lower() in note(ax).lower() and "the CPU frequency changed" in note(ax)


def test_one_run_per_qd_has_no_band_and_no_flag():
    ax = curves.qd_curve(qd_table(repeats=1))
    assert not [c for c in ax.collections if c.get_gid() in ("iops band", "unstable")]
    assert "one run per QD: no interval" in note(ax)
    assert "unstable" not in " ".join(t.get_text() for t in ax.get_legend().get_texts())


def test_total_latency_when_fio_gave_no_clat():
    t = qd_table().rename(columns={"clat_p50_us": "lat_p50_us", "clat_p99_us": "lat_p99_us"})
    ax = curves.qd_curve(t)
    lat = next(a for a in ax.figure.axes if a is not ax)
    assert lat.get_ylabel() == "lat latency (µs)"
    assert {c.get_gid() for c in lat.collections} == {"lat_p50_us band", "lat_p99_us band"}


# ---------------------------------------------------------------- by_setting
def whiskers(ax) -> list[float]:
    """low, high of each error bar, by x, flat."""
    segments = [s for c in ax.collections for s in c.get_segments()]
    return [y for s in sorted(segments, key=lambda s: s[0, 0]) for y in (min(s[:, 1]), max(s[:, 1]))]


def ci(s: pd.DataFrame, m: str) -> list[float]:
    return [y for lo, hi in zip(s[f"{m}_ci_low"], s[f"{m}_ci_high"]) for y in (lo, hi)]


def test_by_setting_whiskers_hatching_and_order():
    t = setting_table()
    ax = curves.by_setting(t, "bs", "bw_mib_s", order=["4k", "64k", "1m"])
    s = repeat_stats.summarise(t, by=["bs"], metrics=["bw_mib_s"]).set_index("bs").loc[["4k", "64k", "1m"]]
    assert [tk.get_text() for tk in ax.get_xticklabels()] == ["4k", "64k", "1m"]
    assert whiskers(ax) == pytest.approx(ci(s, "bw_mib_s"))
    bars = ax.patches
    assert [b.get_height() for b in bars] == pytest.approx(list(s.bw_mib_s_mean))
    assert [b.get_hatch() for b in bars] == [None, "//", None]
    labels = [" ".join(t.get_text().split()) for t in ax.texts if not t.get_text().startswith("source")]
    assert labels == ["100", "200 unstable", "300"]
    assert "whiskers: 95 % CI of the mean over 3 repeats (Student t)" in note(ax)
    assert "bars: mean of 3 repeats per block size" in note(ax)
    reordered = curves.by_setting(t, "bs", "bw_mib_s", order=["1m", "4k", "64k"], ax=plt.subplots()[1])
    assert [tk.get_text() for tk in reordered.get_xticklabels()] == ["1m", "4k", "64k"]


def test_by_setting_on_a_ratio_takes_the_joined_interval():
    t = setting_table("read_ahead_kb", (2048, 0, 128), "dev_read_req_kib", unstable=None)
    ax = curves.by_setting(t, "read_ahead_kb", "dev_read_req_kib")
    assert [tk.get_text() for tk in ax.get_xticklabels()] == ["0", "128", "2048"]  # numbers sorted
    s = repeat_stats.summarise(t, by=["read_ahead_kb"], metrics=["dev_read_req_kib"]).sort_values("read_ahead_kb")
    assert whiskers(ax) == pytest.approx(ci(s, "dev_read_req_kib"))
    assert "bootstrap joined with Student t" in note(ax) and not any(b.get_hatch() for b in ax.patches)
    assert "no readahead (KiB) unstable" in note(ax)


def test_by_setting_with_one_run_has_no_whiskers():
    t = setting_table().query("run_id.str.endswith('r0')")
    ax = curves.by_setting(t, "bs", "bw_mib_s", order=["4k", "64k", "1m"])
    assert whiskers(ax) == [] and "one run per block size: no interval" in note(ax)
    with pytest.raises(InputError, match="no metric 'cycles_per_io'"):
        curves.by_setting(t, "bs", "cycles_per_io")


# ---------------------------------------------------------------- the ladder
def test_waterfall_gain_with_its_interval():
    ax = ladders.ladder_waterfall(ladder_table())
    texts = [t.get_text() for t in ax.texts]
    assert " 112,000  +12 % [4, 20]" in texts and " 125,000  +12 % [-2, 25]" in texts
    assert " 100,000  " in texts  # the baseline has no gain
    assert texts.count("  skipped") == 3 and "over both steps' repeats" in note(ax)
    on_figure = next(t.get_text() for t in ax.texts if t.get_gid() == "source")
    assert on_figure.count("\n") <= 1 and "over both steps' repeats" not in on_figure  # the detail: details(ax)
    assert common.details(ax)._repr_html_().startswith('<details style="color:#666')  # a click away
    ax.figure.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()][:3] == ["0", "50k", "100k"]  # one style on the axis
    one = ladders.ladder_waterfall(ladder_table(runs=1), ax=plt.subplots()[1])
    assert " 112,000  +12 %" in [t.get_text() for t in one.texts]
    assert "one run per step: the gains have no interval" in note(one)


def test_normalised_ladder_each_on_its_own_baseline():
    table, ref = ladder_table(), published()
    pub_ax, loc_ax = ladders.ladder_normalised(table, ref)
    pub_bars, loc_bars = pub_ax.patches, loc_ax.patches
    assert len(pub_bars) == len(ref) == 9 and len(loc_bars) == len(table) == 8
    assert pub_bars[0].get_width() == 1.0 and loc_bars[0].get_width() == 1.0
    assert pub_bars[-1].get_width() == pytest.approx(2_810_000 / 472_000)
    assert loc_bars[7].get_width() == pytest.approx(1.9)
    assert [tk.get_text() for tk in pub_ax.get_yticklabels()] == list(ref.label)
    skipped = [t.get_text() for t in loc_ax.texts if "skipped" in t.get_text()]
    assert len(skipped) == 3 and skipped[0].startswith("  skipped: no poll queues")
    assert pub_ax.get_xlim() == loc_ax.get_xlim()
    assert "each over its own baseline" in pub_ax.figure.get_suptitle()
    fig = pub_ax.figure  # it reads at 1280 px: the panels keep their width (issue P34: a 15 px sliver)
    assert pub_ax.get_position().width * fig.get_figwidth() > 2.5 and fig.get_figwidth() <= 8.25
    assert "published: seed 000" in note(loc_ax) and "this machine: 3 repeats per step" in note(loc_ax)
    assert "baseline: step 0, 100,000 IOPS" in loc_ax.get_title(loc="left")


def test_normalised_ladder_baseline_is_the_first_measured_step():
    table = ladder_table()
    table.loc[0, ["status", "reason", "iops"]] = ["failed", "fio: exit 1", np.nan]
    _, loc_ax = ladders.ladder_normalised(table, published_figures())
    widths = [b.get_width() for b in loc_ax.patches]
    assert np.isnan(widths[0]) and widths[3] == 1.0 and widths[5] == pytest.approx(130 / 112)
    assert "baseline: step 3" in loc_ax.get_title(loc="left")
    with pytest.raises(InputError, match="two panels"):
        ladders.ladder_normalised(table, published(), ax=plt.subplots()[1])


def test_a_ladder_with_nothing_measured_still_draws():
    table = ladder_table()[["step", "name", "tool"]].assign(status="skipped", reason="not NVMe")
    assert "nothing to normalise" in ladders.ladder_normalised(table, published())[1].get_title(loc="left")
    assert [t.get_text() for t in ladders.ladder_waterfall(table, ax=plt.subplots()[1]).texts].count("  skipped") == 8


# ---------------------------------------------------------------- common
def test_one_tick_style_per_axis_and_labels_kept_apart():
    """ "10k" never beside "1,000" on one axis; labels that would overlap are stacked ("80,742
    unstable55,268 unstable"), the axis grown to hold them."""
    assert common.tick_labels([0, 2500, 5000, 7500, 10000]) == ["0", "2.5k", "5k", "7.5k", "10k"]
    assert common.tick_labels([0, 250, 500, 750, 1000]) == ["0", "250", "500", "750", "1,000"]
    assert common.tick_labels([10, 100, 1000, 10000, 1e5]) == ["10", "100", "1k", "10k", "100k"]
    assert common.tick_labels([100000, 100500, 101000]) == ["100k", "100.5k", "101k"]
    assert common.tick_labels([1000, 10000], top=5000) == ["1,000", "10,000"]  # 10,000 out of view
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.bar([0, 1], [80742, 78268])
    labels = [
        ax.annotate(f"{v:,} unstable", (i, v), xytext=(0, 3), textcoords="offset points", ha="center")
        for i, v in enumerate([80742, 78268])
    ]
    top = ax.get_ylim()[1]
    assert common.keep_apart(labels) == []
    boxes = [t.get_window_extent() for t in labels]
    assert not boxes[0].overlaps(boxes[1]) and ax.get_ylim()[1] > top
    assert all(ax.get_window_extent().y1 + 1 >= b.y1 for b in boxes)


def test_a_figure_is_kept_as_png_svg_and_pdf_and_never_over_a_users_file(tmp_path):
    from iolab.core.errors import InputError, OutputExists
    from iolab.nb import save_figure

    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    paths = save_figure(ax, "knee", tmp_path / "figs")
    assert [p.suffix for p in paths] == [".png", ".svg", ".pdf"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and b"<svg" in paths[1].read_bytes()
    assert paths[2].read_bytes().startswith(b"%PDF")
    assert save_figure(fig, "knee", tmp_path / "figs", formats=("png",))[0] == paths[0]  # its own file: replaced
    (tmp_path / "figs" / "mine.png").write_bytes(b"the user's")
    with pytest.raises(OutputExists, match="iolab did not write it"):
        save_figure(fig, "mine", tmp_path / "figs", formats=("png",))
    assert (tmp_path / "figs" / "mine.png").read_bytes() == b"the user's"
    with pytest.raises(InputError, match="choose from png, svg, pdf"):
        save_figure(fig, "x", tmp_path / "figs", formats=("gif",))
    with pytest.raises(InputError):
        save_figure(fig, "../escape", tmp_path / "figs")
    plt.close(fig)
