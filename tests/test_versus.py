"""``iolab compare A B``: real small studies on a tmpfs-backed loop device, one pair with a
known difference (fio's rate limit halved: B does half A's IOPS) and one pair with none
(the same study twice), read as runs folders, batch outputs and executed notebooks."""

import json
import math
import re

import pytest

from conftest import CPU, QUICK, is_root
from iolab.cli import main
from iolab.core.errors import InputError
from iolab.measure.sweep import Grid, sweep
from iolab.report import sides
from iolab.report.offline import network_fetches
from iolab.report.compare_page import compare_paths, html, text
from iolab.stats.versus import versus

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
    assert iops.call == "worse" and -52 < iops.change_pct < -48, iops.verdict
    assert iops.low_pct <= iops.change_pct <= iops.high_pct < -40  # rate-limited repeats can be equal: a point
    assert iops.verdict.startswith("B is worse by 50 % [")
    lines = text(done)
    assert lines[-1].startswith("B is worse on ")
    assert any("fio rate_iops  2000  ->  1000" in line for line in lines)
    assert main(["compare", str(studies / "a"), str(studies / "b"), "--metric", "iops"]) == 3
    out = capsys.readouterr().out
    assert "B is worse by 50 %" in out
    # the other way round, B is better: exit 0
    assert main(["compare", str(studies / "b"), str(studies / "a"), "--metric", "iops,bw_bytes_s"]) == 0
    assert re.search(r"IOPS .* B is better by (9[89]|10[01]) % \[", capsys.readouterr().out)


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
    assert "B is worse by 50 %" in page and "rate_iops" in page and "<script" not in page
    assert network_fetches(page) == []


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
    with pytest.raises(InputError, match="no column 'qd'"):
        compare_paths(studies / "a", studies / "b", by=["qd"])
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
