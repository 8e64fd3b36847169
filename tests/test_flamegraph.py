"""Flame graph pictures and the reading, on known small profiles and a recorded real one."""

import xml.dom.minidom
from collections import Counter

import matplotlib
import pytest

from iolab.plots import flamegraph as fg
from iolab.read import profile as prof
from iolab.read.fold import FoldOptions, fold_file, fold_lines
from support.paths import FIXTURES

matplotlib.use("Agg")
KNOWN = Counter(
    {
        "fio;main;td_io_commit;io_uring_enter_[k];io_submit_sqes_[k];blk_mq_submit_bio_[k]": 60,
        "fio;main;td_io_commit;io_uring_enter_[k];nvme_queue_rq_[k]": 20,
        "fio;main;get_io_u": 10,
        "swapper;do_idle_[k];default_idle_[k]": 10,
    }
)


def test_frames_and_shares():
    f = prof.frames(KNOWN).set_index("function")
    assert f.loc["blk_mq_submit_bio", "self_pct"] == 60 and f.loc["blk_mq_submit_bio", "kind"] != "user"
    assert f.loc["td_io_commit", "inclusive_pct"] == 80 and f.loc["td_io_commit", "self_pct"] == 0
    assert prof.share_under(KNOWN, "td_io_commit") == 80
    assert prof.share_under(KNOWN, "io_uring_enter") == 80


def test_categories_and_split():
    cats = prof.categories(KNOWN).set_index("kind").pct
    assert cats["block layer"] == 60 and cats["driver"] == 20 and cats["idle"] == 10 and cats["user"] == 10
    assert prof.kernel_user_split(KNOWN) == pytest.approx({"kernel_pct": 100 * 80 / 90, "user_pct": 100 * 10 / 90})
    custom = [("submit", r"submit")] + prof.DEFAULT_RULES
    assert prof.categories(KNOWN, custom).set_index("kind").pct["submit"] == 60


def test_diff_is_normalised_both_ways():
    a = Counter({"p;f": 10, "p;g": 10})
    b = Counter({"p;f": 60, "p;g": 20})  # 4x the samples; f went from 50 % to 75 %
    d = prof.diff(a, b, ("a", "b"))
    assert d.scale == pytest.approx(0.25) and d.stacks["p;f"] == (10, 15)
    m = d.movers.set_index("function")
    assert m.loc["f", "delta_pct"] == pytest.approx(25) and m.loc["g", "delta_pct"] == pytest.approx(-25)
    assert "grew — f +25.0 pts" in prof.describe_diff(d, ("a", "b"))
    back = prof.diff(b, a).movers.set_index("function")
    assert back.loc["f", "delta_pct"] == pytest.approx(-25)


def test_describe_says_the_numbers():
    text = prof.describe(KNOWN)
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
    d = prof.diff(stacks, Counter({s: n * (2 if "io_uring" in s else 1) for s, n in stacks.items()}))
    fg.draw(d.stacks, title="diff").figure.savefig(tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 10_000


def _svg_frames(svg: str):
    """(viewBox width, [(data-x, data-w, data-d, data-n, rect x, rect width)]) of an svg() output."""
    root = xml.dom.minidom.parseString(svg).documentElement
    out = []
    for g in root.getElementsByTagName("g"):
        if g.hasAttribute("data-x"):
            rect = g.getElementsByTagName("rect")[0]
            assert g.getElementsByTagName("text")
            out.append(
                (
                    float(g.getAttribute("data-x")),
                    float(g.getAttribute("data-w")),
                    int(g.getAttribute("data-d")),
                    g.getAttribute("data-n"),
                    float(rect.getAttribute("x")),
                    float(rect.getAttribute("width")),
                )
            )
    return float(root.getAttribute("viewBox").split()[2]), out


def test_svg_fits_its_container_and_has_the_hooks():
    svg = fg.svg(KNOWN, title="known", width=1000)
    root = xml.dom.minidom.parseString(svg).documentElement
    assert root.getAttribute("class") == "iolab-flame" and root.getAttribute("width") == "100%"
    assert root.getAttribute("viewBox").startswith("0 0 1000 ") and not root.hasAttribute("height")
    classes = {e.getAttribute("class") for e in root.getElementsByTagName("*")}
    assert {"q", "status", "reset", "bg"} <= classes
    assert root.getElementsByTagName("input")[0].getAttribute("class") == "q"
    assert "Reset zoom" in svg and "click a frame to zoom, background or Reset to zoom out" in svg
    assert "document.currentScript" in svg and "http" not in svg.replace("http://www.w3.org", "")
    width, frames = _svg_frames(svg)
    assert len(frames) == 11 and {f[3] for f in frames} >= {"fio", "io_uring_enter", "default_idle"}  # bare names
    assert all(0 <= x and x + w <= width + 1e-9 for *_, x, w in frames)  # laid out for script-less viewers
    idle = next(f for f in frames if f[3] == "swapper")
    assert idle[0] == pytest.approx(0.9) and idle[1] == pytest.approx(0.1)


def test_no_frame_overflows_the_total_when_tiny_roots_are_dropped():
    stacks = Counter({"a;x": 1, "b;y": 1, "z;big;leaf": 98})  # a and b sort first, then are dropped
    width, frames = _svg_frames(fg.svg(stacks, min_fraction=0.05))
    assert {f[3] for f in frames} == {"z", "big", "leaf"}
    assert max(f[0] + f[1] for f in frames) == pytest.approx(1.0) and all(f[0] + f[1] <= 1 + 1e-9 for f in frames)
    assert all(x + w <= width + 1e-9 for *_, x, w in frames)
    ax = fg.draw(stacks, min_fraction=0.05)
    ends = [p.get_x() + p.get_width() for p in ax.patches]
    assert len(ends) == 3 and all(e <= 1 + 1e-9 for e in ends) and max(ends) == pytest.approx(1.0)


_JUNK = """memfd:sealed-91 13945/13945  4440.108529:    1001001 cpu-clock: 
\tffffffff816eb37d fdget_raw ([kernel.kallsyms])
\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t           c6a96 [unknown] (/memfd:sealed-91173221a7ea (deleted))
\t           8e07d [unknown] (/memfd:sealed-91173221a7ea (deleted))
\t           20064 [unknown] ([unknown])
\t           132b5 [unknown] (/memfd:sealed-91173221a7ea (deleted))

fio 4242/4242  4440.2:    1001001 cpu-clock: 
\tffffffff81a0 io_submit_sqes ([kernel.kallsyms])
\t          55d3c0 [unknown] ([unknown])
\t          55d3c1 [unknown] ([unknown])
\t          55d3c2 td_io_queue (/usr/bin/fio)

"""


def test_junk_unknown_runs_are_one_frame_in_svg_and_draw_and_diff():
    stacks = fold_lines(_JUNK.splitlines(keepends=True), FoldOptions(kernel=True)).stacks
    assert (
        "memfd:sealed-91;[unknown] ;[unknown];[unknown] ;[unknown] ;entry_SYSCALL_64_after_hwframe_[k];"
        "fdget_raw_[k]" in stacks
    )  # what perf's "(deleted)" modules fold to, as with stackcollapse-perf.pl
    merged = prof.merge_unknown_runs(stacks)
    assert set(merged) == {
        "memfd:sealed-91;[unknown];entry_SYSCALL_64_after_hwframe_[k];fdget_raw_[k]",
        "fio;td_io_queue;[unknown];io_submit_sqes_[k]",
    }
    _, frames = _svg_frames(fg.svg(stacks))
    assert max(f[2] for f in frames) + 1 == 4 == fg.draw(stacks).get_ylim()[1]
    assert sum(f[3] == "[unknown]" for f in frames) == 2
    raw = prof.diff(stacks, stacks, merge_unknowns=False).stacks  # a diff's (a, b) stacks merge too
    _, frames = _svg_frames(fg.svg(raw))
    assert max(f[2] for f in frames) + 1 == 4 == fg.draw(raw).get_ylim()[1]
    assert prof.merge_unknown_runs(raw)["fio;td_io_queue;[unknown];io_submit_sqes_[k]"] == (1001001, 1001001)


def test_differential_svg_fits_and_says_the_colours():
    d = prof.diff(KNOWN, Counter({s: n * (3 if "nvme" in s else 1) for s, n in KNOWN.items()}))
    svg = fg.svg(d.stacks, title="b vs a")
    root = xml.dom.minidom.parseString(svg).documentElement
    assert root.getAttribute("width") == "100%" and root.getAttribute("viewBox").startswith("0 0 1200 ")
    assert "red: grew, blue: shrank" in svg and "pts)" in svg
    _, frames = _svg_frames(svg)
    assert all(f[0] + f[1] <= 1 + 1e-9 for f in frames)
