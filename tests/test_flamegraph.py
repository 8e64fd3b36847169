"""Flame graph pictures and the reading, on known small profiles and a recorded real one."""
import xml.dom.minidom
from collections import Counter

import matplotlib
import pytest

from conftest import FIXTURES
from iolab import flamegraph as fg
from iolab.fold import FoldOptions, fold_file

matplotlib.use("Agg")
KNOWN = Counter({
    "fio;main;td_io_commit;io_uring_enter_[k];io_submit_sqes_[k];blk_mq_submit_bio_[k]": 60,
    "fio;main;td_io_commit;io_uring_enter_[k];nvme_queue_rq_[k]": 20,
    "fio;main;get_io_u": 10,
    "swapper;do_idle_[k];default_idle_[k]": 10,
})


def test_frames_and_shares():
    f = fg.frames(KNOWN).set_index("function")
    assert f.loc["blk_mq_submit_bio_[k]", "self_pct"] == 60
    assert f.loc["td_io_commit", "inclusive_pct"] == 80 and f.loc["td_io_commit", "self_pct"] == 0
    assert fg.share_under(KNOWN, "td_io_commit") == 80
    assert fg.share_under(KNOWN, "io_uring_enter") == 80


def test_categories_and_split():
    cats = fg.categories(KNOWN).set_index("kind").pct
    assert cats["block layer"] == 60 and cats["driver"] == 20 and cats["idle"] == 10 and cats["user"] == 10
    assert fg.kernel_user_split(KNOWN) == pytest.approx({"kernel_pct": 100 * 80 / 90, "user_pct": 100 * 10 / 90})
    custom = [("submit", r"submit")] + fg.DEFAULT_RULES
    assert fg.categories(KNOWN, custom).set_index("kind").pct["submit"] == 60


def test_diff_is_normalised_both_ways():
    a = Counter({"p;f": 10, "p;g": 10})
    b = Counter({"p;f": 60, "p;g": 20})  # 4x the samples; f went from 50 % to 75 %
    d = fg.diff(a, b, ("a", "b"))
    assert d.scale == pytest.approx(0.25) and d.stacks["p;f"] == (10, 15)
    m = d.movers.set_index("function")
    assert m.loc["f", "delta_pct"] == pytest.approx(25) and m.loc["g", "delta_pct"] == pytest.approx(-25)
    assert "grew — f +25.0 pts" in fg.describe_diff(d, ("a", "b"))
    back = fg.diff(b, a).movers.set_index("function")
    assert back.loc["f", "delta_pct"] == pytest.approx(-25)


def test_describe_says_the_numbers():
    text = fg.describe(KNOWN)
    assert "10 % of the samples are idle" in text and "td_io_commit 88.9 %" in text
    assert "Only 100 samples" in text


def test_draw_and_svg_on_a_real_profile(tmp_path):
    stacks = fold_file(FIXTURES / "perf/fio_fp_default.txt", FoldOptions(kernel=True)).stacks
    ax = fg.draw(stacks, title="real")
    ax.figure.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000
    icicle = fg.draw(stacks, icicle=True)
    assert icicle.get_ylim()[1] >= 3
    svg = fg.svg(stacks)
    doc = xml.dom.minidom.parseString(svg)  # well-formed, self-contained
    assert doc.getElementsByTagName("script") and "http" not in svg.replace("http://www.w3.org", "")
    assert len(doc.getElementsByTagName("g")) > 20
    d = fg.diff(stacks, Counter({s: n * (2 if "io_uring" in s else 1) for s, n in stacks.items()}))
    fg.draw(d.stacks, title="diff").figure.savefig(tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 10_000
