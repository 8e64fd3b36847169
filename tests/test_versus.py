"""``iolab compare A B``: real small studies on a tmpfs-backed loop device, one pair with a
known difference (fio's rate limit halved: B does half A's IOPS) and one pair with none
(the same study twice), read as runs folders, batch outputs and executed notebooks."""

import json
import math
import re

import pytest

from iolab.cli import main
from iolab.compare import sides
from iolab.compare.page import compare_paths, html, text
from iolab.compare.versus import versus
from iolab.core.errors import InputError, NotComparable, RunSkipped
from iolab.measure.sweep import Grid, sweep
from iolab.report.offline import network_fetches
from support.cpus import CPU
from support.fio import QUICK
from support.marks import is_root

BASE = {**QUICK, "ioengine": "psync", "rw": "randread", "runtime": "300ms"}


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """Three studies of one cell (bs 4k), 3 repeats each: A and its twin at fio's
    rate_iops=2000, B at rate_iops=1000."""
    from iolab.machine.target import loop_device

    if not is_root:
        pytest.skip("needs root (a loop device)")
    root = tmp_path_factory.mktemp("versus")
    with loop_device("32m") as dev:
        for name, rate in (("a", 2000), ("twin", 2000), ("b", 1000)):
            sweep(
                Grid({"bs": ["4k"]}, base={**BASE, "rate_iops": rate}),
                target=dev,
                cpus=[CPU],
                rounds={"repeats": 3},
                runs_dir=root / name,
                progress=None,
            )
    return root


def test_a_halved_rate_is_called_worse_and_the_cli_exits_3(studies, capsys):
    done = compare_paths(studies / "a", studies / "b")
    assert done.versus.by == ["bs"]
    assert ("fio rate_iops", "2000", "1000") in done.differences
    iops = done.versus.cells.set_index("metric").loc["iops"]
    # halved: each side at most its cap; a loaded machine may keep a 0.3 s run below it, so the
    # change is the measured means' and only roughly a half
    assert iops.mean_a <= 1.05 * 2000 and iops.mean_b <= 1.05 * 1000, iops
    assert iops.change_pct == pytest.approx(100 * (iops.mean_b / iops.mean_a - 1), abs=0.01)
    assert iops.call == "worse" and iops.change_pct < -25, iops.verdict
    assert iops.low_pct <= iops.change_pct <= iops.high_pct < -20  # rate-limited repeats can be equal: a point
    worse = round(-iops.change_pct)
    assert iops.verdict.startswith(f"B is worse by {worse} % [")
    lines = text(done)
    assert lines[-1].startswith("B is worse on ")
    assert any("fio rate_iops  2000  ->  1000" in line for line in lines)
    assert main(["compare", str(studies / "a"), str(studies / "b"), "--metric", "iops"]) == 3
    out = capsys.readouterr().out
    assert f"B is worse by {worse} %" in out
    # the other way round, B is better (by 1 / (1 - worse) - 1): exit 0
    assert main(["compare", str(studies / "b"), str(studies / "a"), "--metric", "iops,bw_bytes_s"]) == 0
    better = re.search(r"IOPS .* B is better by (\d+) % \[", capsys.readouterr().out)
    assert better and abs(int(better[1]) - 100 * (1 / (1 + iops.change_pct / 100) - 1)) <= 1, better


def test_two_identical_studies_show_no_difference_for_19_seeds_of_20(studies):
    """The null: the same study twice. The bootstrap's seed must not decide the verdict."""
    calls = [
        compare_paths(studies / "a", studies / "twin", metrics=["iops", "bw_bytes_s"], seed=s).versus.cells
        for s in range(20)
    ]
    quiet = sum(all(c.verdict.startswith("no difference shown") for c in cells.itertuples()) for cells in calls)
    assert quiet >= 19, calls[0].verdict.tolist()


def test_sides_read_batch_outputs_notebooks_and_single_runs(studies, tmp_path):
    folders = sorted(str(p.parent) for p in (studies / "b").glob("*/run.json"))
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "batch.json").write_text(
        json.dumps(
            {"runs": [{"name": "slow", "status": "ok", "run_folders": folders}, {"name": "x", "status": "failed"}]}
        )
    )
    nb = tmp_path / "after.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {"iolab": {"results": [], "run_folders": folders}}}))
    for given, kind in ((batch, "batch output"), (nb, "executed notebook"), (folders[0], "run folder")):
        side = sides.load_side(given)
        assert side.kind == kind and side.swept == ["bs"], given
        assert side.table["run_id"].nunique() == (1 if kind == "run folder" else 3)
    done = compare_paths(studies / "a", nb, metrics=["iops"])
    assert done.versus.cells.iloc[0].call == "worse"
    page = html(done)
    assert re.search(r"B is worse by (4\d|5\d) %", page) and "rate_iops" in page and "<script" not in page
    assert network_fetches(page) == []


def test_a_side_s_set_up_is_read_from_the_runs_it_compares(studies, tmp_path):
    """A run left out of a side's table (its params.json unreadable) does not describe the
    side's set-up either: a run beside it of another pattern (rw=read) made the two sides
    "not comparable" although the runs compared were alike."""
    import shutil

    side = tmp_path / "b"
    shutil.copytree(studies / "b", side)
    odd = sorted(side.glob("*/run.json"))[-1].parent
    params = json.loads((odd / "params.json").read_text())
    params["fio_options"]["rw"] = "read"
    (odd / "params.json").write_bytes(b"\xff" + json.dumps(params).encode())  # unreadable, and another rw
    with pytest.warns(RunSkipped, match="params.json is not text"):
        loaded = sides.load_side(side)
    assert odd not in loaded.folders and sides.setup(loaded)["fio rw"] == "randread"
    assert not sides.not_comparable(sides.setup(sides.load_side(studies / "a")), sides.setup(loaded))


def test_bad_sides_say_what_to_give(tmp_path, studies):
    for given, said in (
        (tmp_path / "nope", "does not exist"),
        ("  ", "does not exist"),
        (tmp_path, "holds no runs"),
    ):
        with pytest.raises(InputError, match=said):
            sides.load_side(given)
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(InputError, match="not a notebook"):
        sides.load_side(tmp_path / "x.txt")
    (tmp_path / "empty.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    with pytest.raises(InputError, match="recorded no run folders|cannot be read"):
        sides.load_side(tmp_path / "empty.ipynb")
    with pytest.raises(InputError, match="no column 'cores'"):  # qd is known: iodepth=1 on both
        compare_paths(studies / "a", studies / "b", by=["cores"])
    with pytest.raises(InputError, match="no 'iops_typo' values"):
        compare_paths(studies / "a", studies / "b", metrics=["iops_typo"])
    assert main(["compare", str(tmp_path / "nope"), str(studies / "b")]) == 1


def test_devices_or_patterns_that_differ_are_not_comparable():
    nvme = {"device": "nvme0n1", "device model": "QEMU NVMe Ctrl", "firmware": "7.2", "fio rw": "randread"}
    assert sides.not_comparable(nvme, {**nvme, "firmware": "8.0", "device": "nvme1n1"}) == ""
    assert "the devices differ: QEMU NVMe Ctrl vs Samsung" in sides.not_comparable(
        nvme, {**nvme, "device model": "Samsung"}
    )
    assert "the devices differ: vda vs loop3" in sides.not_comparable({"device": "vda"}, {"device": "loop3"})
    assert sides.not_comparable({"device": "loop0"}, {"device": "loop7"}) == ""
    assert "rw=randread vs randwrite" in sides.not_comparable(nvme, {**nvme, "fio rw": "randwrite"})


def test_verdicts_follow_the_better_direction_and_the_threshold():
    import pandas as pd

    def table(iops, lat):
        return pd.DataFrame(
            {"run_id": range(len(iops)), "direction": "read", "iops": iops, "clat_p99_us": lat, "bs": "4k"}
        )

    a = table([1000, 1010, 990], [100, 101, 99])
    b = table([1200, 1212, 1188], [80, 81, 79])
    cells = versus(a, b, ["bs"], ["iops", "clat_p99_us"]).cells.set_index("metric")
    assert cells.loc["iops", "verdict"].startswith("B is better by 20 %")
    assert cells.loc["clat_p99_us", "verdict"].startswith("B is better by 20 %")  # lower latency
    small = versus(a, table([1010, 1020, 1000], [100, 101, 99]), ["bs"], ["iops"]).cells.iloc[0]
    assert small.call == "" and small.verdict.startswith("no difference shown")
    called = versus(a, table([1010, 1020, 1000], [100, 101, 99]), ["bs"], ["iops"], min_change_pct=0).cells.iloc[0]
    assert called.call in ("better", "") and not math.isnan(called.low_pct)
    judged = versus(a, b, ["bs"], ["iops"], not_comparable="the devices differ: a vs b").cells.iloc[0]
    assert judged.call == "not comparable" and judged.verdict == "not comparable: the devices differ: a vs b"


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """Three small sets of runs on one scratch file, one run a cell, naming their settings as
    iolab's studies do: notebook 01's queue-depth sweep (fio's iodepth swept as ``qd``, bs 4k), a
    search over ``iodepth`` and ``bs``, and two runs made by hand that swept nothing (bs 16k; one
    at fio's default iodepth, one at iodepth 2)."""
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    root = tmp_path_factory.mktemp("named")
    target, job = scratch_file(root / "s", "16m"), {**BASE, "bs": "4k", "rate_iops": 2000, "runtime": "100ms"}
    for name, grid in (
        ("qd", Grid({"iodepth": [1, 2]}, base=job, aliases={"iodepth": "qd"})),
        ("search", Grid({"iodepth": [2], "bs": ["4k", "8k"]}, base=job)),
    ):
        sweep(grid, target=target, cpus=[CPU], rounds={"repeats": 1}, runs_dir=root / name, progress=None)
    for depth in ({}, {"iodepth": 2}):
        measure({**job, "bs": "16384", **depth}, target, cpus=[CPU], runs_dir=root / "hand")
    return root


def _notebook(folder, path):
    """An executed notebook recording the run folders of ``folder`` (as iolab's notebooks do)."""
    runs = sorted(str(p.parent) for p in folder.glob("*/run.json"))
    path.write_text(json.dumps({"cells": [], "metadata": {"iolab": {"results": [], "run_folders": runs}}}))
    return path


def test_notebook_01_and_a_search_meet_on_iodepth_and_bs_cell_by_cell(named, tmp_path, capsys):
    """Notebook 01's qd is a search's iodepth: cells are matched on it and on the bs the search
    varies (the notebook ran 4k only), each cell's mean is that cell's run, never a mean over
    depths and block sizes; a --by that leaves bs out is refused, exit 1, not "not worse"."""
    from iolab.compare.matching import value_of
    from iolab.core.columns import setting_name

    assert [setting_name(n) for n in ("qd", "blocksize", "readwrite", "jobs", "rate_iops")] == [
        "iodepth",
        "bs",
        "rw",
        "numjobs",
        "rate_iops",
    ]
    assert (
        value_of("bs", "4096"),
        value_of("bs", "64KiB"),
        value_of("iodepth", "32"),
        value_of("rw", " randread"),
    ) == (
        "4k",
        "64k",
        32,
        "randread",
    )
    nb, search = _notebook(named / "qd", tmp_path / "01_queue_depth_knee.ipynb"), named / "search"
    done = compare_paths(nb, search, metrics=["iops"])
    v = done.versus
    assert v.by == ["iodepth", "bs"] and not v.not_comparable
    assert v.only_a == [{"iodepth": 1, "bs": "4k"}] and v.only_b == [{"iodepth": 2, "bs": "8k"}]
    (cell,) = v.cells.itertuples()
    a, b = done.a.table, done.b.table
    assert (cell.iodepth, cell.bs, cell.n_a, cell.n_b) == (2, "4k", 1, 1)
    assert cell.mean_a == pytest.approx(a.loc[a.qd == 2, "iops"].sum())  # the qd=2 run, not qd 1 and 2 pooled
    assert cell.mean_b == pytest.approx(b.loc[b.bs == "4k", "iops"].sum())  # the 4k run, not 4k and 8k pooled
    assert main(["compare", str(nb), str(search), "--metric", "iops", "--by", "qd"]) == 4  # no verdict
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        "iolab compare: not comparable: B varies bs (4k, 8k) and --by leaves it out: its cells would be pooled "
        "into one mean; add bs to --by, or keep one value with --where bs=4k"
    ]
    assert main(["compare", str(nb), str(search), "--metric", "iops", "--by", "qd", "--where", "blocksize=4096"]) == 0
    assert "iodepth = 2\n" in capsys.readouterr().out


def test_runs_that_swept_nothing_are_read_from_their_params(named, capsys):
    """Runs that swept nothing still ran rw=randread (not "rw=randread vs -"), one at fio's
    default iodepth 1 and one at 2, both bs 16k: their depths meet the notebook's qd cells, each
    run in its own cell, never one mean; against the search's bs 4k and 8k nothing can be
    matched: one line, exit 4."""
    done = compare_paths(named / "hand", named / "qd", metrics=["iops"])
    v, hand = done.versus, done.a.table
    assert v.not_comparable == "" and v.by == ["qd"] and v.only_a == v.only_b == []
    assert ("fio bs", "16k", "4k") in done.differences
    depth = hand["run_id"].map({f.name: json.loads((f / "params.json").read_text()) for f in done.a.folders})
    by_depth = hand.groupby(depth.map(lambda p: p["fio_options"].get("iodepth", 1)))["iops"].sum()
    assert v.cells.set_index("qd")["mean_a"].to_dict() == pytest.approx(by_depth.to_dict())
    assert main(["compare", str(named / "hand"), str(named / "search"), "--metric", "iops"]) == 4
    assert capsys.readouterr().err.strip() == (
        "iolab compare: not comparable: no bs is on both sides: A has bs=16k only, B has bs 4k, 8k"
    )


def test_a_side_of_several_studies_is_matched_on_what_differs_between_them(studies):
    """data/runs-like: the studies at fio's rate_iops 2000, 2000 and 1000 against the one at
    1000. Before, their runs were pooled into one mean (B "better by 20 %"); now rate_iops is
    a setting of the cells: the 1000 cell holds the same runs on both sides."""
    done = compare_paths(studies, studies / "b", metrics=["iops"])
    v = done.versus
    assert v.by == ["bs", "rate_iops"] and v.only_a == [{"bs": "4k", "rate_iops": 2000}]
    (cell,) = v.cells.itertuples()
    assert (cell.rate_iops, cell.n_a, cell.n_b, cell.change_pct) == (1000, 3, 3, 0)
    with pytest.raises(NotComparable, match=r"A varies rate_iops \(2000, 1000\) and --by leaves it out"):
        compare_paths(studies, studies / "b", by=["bs"])


def test_a_verdict_on_runs_beside_other_programs_says_so():
    """Runs flagged shared_cpu are compared all the same, and every verdict of their cell says so."""
    import pandas as pd

    a = pd.DataFrame({"run_id": ["a0", "a1", "a2"], "iops": [100.0, 101, 99], "flags": ["", "", ""]})
    b = pd.DataFrame(
        {"run_id": ["b0", "b1", "b2"], "iops": [50.0, 51, 49], "flags": ["shared_cpu: shared CPU: 53 %", "", ""]}
    )
    cells = versus(a, b, metrics=["iops"]).cells
    assert cells["verdict"].iloc[0].endswith("; shared CPU: B 1 of 3 runs beside other programs")
    assert cells["call"].iloc[0] == "worse"
    clean = versus(a, a.assign(run_id=["c0", "c1", "c2"]), metrics=["iops"]).cells
    assert "shared CPU" not in clean["verdict"].iloc[0]
