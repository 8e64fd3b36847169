"""SNIA's steady-state rule, and preconditioning a loop device to it."""

import pytest

from iolab.core.errors import InputError, UnsafeTargetError
from iolab.studies.precondition import precondition, steady_state
from support.devices import mkfs_ext4
from support.marks import needs_root


def test_steady_state_rule():
    ok, why = steady_state([50, 90, 100, 101, 99, 100, 102])  # only the last 5 rounds count
    assert ok and "range 3 % of the mean (limit 20 %)" in why
    rising, why = steady_state([90, 95, 100, 105, 110])  # range 20 %, but the fit climbs 20 %
    assert not rising and "linear-fit excursion 20 % (limit 10 %)" in why
    jumpy, why = steady_state([100, 70, 100, 130, 100])  # flat fit, range 60 %
    assert not jumpy and "range 60 %" in why
    assert steady_state([1, 2, 3]) == (False, "3 of 5 rounds so far")
    with pytest.raises(InputError, match="needs at least 2 rounds"):
        steady_state([1, 2], window=1)


@needs_root
def test_precondition_a_loop_device(loopdev, tmp_path):
    assert loopdev.state.startswith("written whole once")
    rounds = precondition(
        loopdev, runs_dir=tmp_path / "runs", job={"runtime": 0.5, "iodepth": 8}, max_rounds=6, window=3, fill_passes=1
    )
    assert 3 <= len(rounds) <= 6 and (rounds.iops > 0).all() and list(rounds["round"]) == list(range(len(rounds)))
    assert rounds.steady.iloc[-1] == loopdev.state.startswith("SNIA steady state")
    assert "written whole 1x sequentially (128k), then" in loopdev.state and "4k randwrite at QD8" in loopdev.state
    assert len(list((tmp_path / "runs").glob("*/run.json"))) == len(rounds) + 1  # the fill, then each round
    with pytest.raises(InputError, match="fewer than the window"):
        precondition(loopdev, runs_dir=tmp_path / "x", max_rounds=2)


@needs_root
def test_precondition_refuses_a_device_that_holds_a_filesystem(loopdev, tmp_path):
    mkfs_ext4(loopdev.path)
    with pytest.raises(UnsafeTargetError):
        precondition(loopdev, runs_dir=tmp_path / "runs", job={"runtime": 0.5}, max_rounds=5)
    assert loopdev.state.startswith("written whole once")
