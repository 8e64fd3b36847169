"""The generic sweep: resume after a SIGKILLed run, knob keys applied around a cell's runs
(not given to fio), and every study forwarding the measurement options to measure."""

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from iolab import studies
from iolab.core.errors import FioError, InputError, KnobUnavailable
from iolab.machine import knobs
from iolab.measure import runner
from iolab.measure.options import MeasureOptions
from iolab.measure.sweep import Grid, sweep
from iolab.studies import kernel_path as kp
from iolab.studies import ladder as lad
from support.cpus import CPU
from support.fio import QUICK
from support.marks import needs_root
from support.paths import PY, REPO

SWEEP = """
import sys
from pathlib import Path
from iolab.measure.sweep import Grid, sweep
from iolab.machine.target import scratch_file
tmp = Path(sys.argv[1])
table = sweep(Grid({"iodepth": [1, 2, 4]}, base={"rw": "randread", "bs": "4k", "runtime": "300ms"}),
              target=scratch_file(tmp / "s", "16m"), cpus=[CPU], runs_dir=tmp / "runs")
print(" ".join(table.run_id), flush=True)
""".replace("cpus=[CPU]", f"cpus=[{CPU}]")


def finished(runs: Path, status: str = "ok") -> dict[str, str | None]:
    """Finished run folders with ``status``: name -> started_utc (None for a run killed before
    its run.json was first written: the repair that marks it interrupted cannot know its start)."""
    out = {}
    for run_json in runs.glob("[!.]*/run.json"):
        meta = json.loads(run_json.read_text())
        if meta["status"] == status:
            out[run_json.parent.name] = meta.get("started_utc")
    return out


def start_sweep(tmp_path):
    env = {**os.environ, "IOLAB_STATE": str(tmp_path / "state"), "PYTHONPATH": str(REPO / "lib")}
    return subprocess.Popen(
        [PY, "-c", textwrap.dedent(SWEEP), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_sweep_killed_mid_way_resumes_with_only_the_missing_cells(tmp_path):
    runs = tmp_path / "runs"
    proc = start_sweep(tmp_path)
    deadline = time.monotonic() + 120  # its first run may wait for its CPU's lock, on a loaded machine
    while not finished(runs) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()  # SIGKILL: no finally, no handler; the ledger has what it held
    proc.wait()
    first = finished(runs)
    # killed mid-way: one cell done, or two when a loaded machine held this test back a while
    assert 1 <= len(first) <= 2, proc.stderr.read()

    again = start_sweep(tmp_path)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    ok = finished(runs)
    assert len(ok) == 3 and all(ok[name] == started for name, started in first.items())  # not re-run
    new = set(ok) - set(first)
    assert len(new) == 3 - len(first)  # only the missing cells ran
    table_ids = out.split()
    assert sorted(table_ids) == sorted(ok)  # exactly its own cells, each once
    swept = [json.loads((runs / r / "params.json").read_text())["swept"]["iodepth"] for r in table_ids]
    assert swept == [1, 2, 4]
    assert set(finished(runs, "interrupted")) | set(ok) == {p.name for p in runs.iterdir()}  # killed run marked


@needs_root
def test_knob_keys_are_set_around_their_runs_not_given_to_fio(loopdev, tmp_path, monkeypatch):
    ra = Path(f"/sys/block/{loopdev.device}/queue/read_ahead_kb")
    before, calls = ra.read_text(), []
    monkeypatch.setattr(knobs, "drop_caches", lambda: calls.append(ra.read_text().strip()))
    table = sweep(
        Grid({"read_ahead_kb": [0, 512]}, base={**QUICK, "rw": "read", "direct": 0}),
        target=loopdev,
        cpus=[CPU],
        runs_dir=tmp_path / "runs",
        how=MeasureOptions(drop_caches=True),
    )
    assert list(table.read_ahead_kb) == [0, 512] and calls == ["0", "512"]
    for row in table.itertuples():
        run = tmp_path / "runs" / row.run_id
        assert "read_ahead_kb" not in json.loads((run / "params.json").read_text())["fio_options"]
        assert json.loads((run / "system.json").read_text())["queue"]["read_ahead_kb"] == str(row.read_ahead_kb)
    assert ra.read_text() == before


@needs_root
def test_a_bad_knob_value_in_a_later_cell_runs_nothing(loopdev, tmp_path):
    with pytest.raises(KnobUnavailable, match="scheduler='fifo'.*choose one of"):
        sweep(
            Grid({"iodepth": [1], "scheduler": ["none", "fifo"]}, base=QUICK),
            target=loopdev,
            cpus=[CPU],
            runs_dir=tmp_path / "runs",
        )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


class Stop(Exception):
    """Raised by the spy: the options reached measure, nothing needs to run."""


STUDIES = {
    "qd_sweep": lambda t, d, kw: studies.qd_sweep(t, [1], QUICK, runs_dir=d, **kw),
    "per_core": lambda t, d, kw: studies.per_core(t, [1], {"runtime": "500ms"}, runs_dir=d, **kw),
    "ladder": lambda t, d, kw: lad.run_ladder(
        [lad.Step("baseline", {"iodepth": 1})], t, base={"runtime": "500ms"}, runs_dir=d, **kw
    ),
    "direct_vs_buffered": lambda t, d, kw: kp.direct_vs_buffered(t, QUICK, runs_dir=d, **kw),
    "knob_sweep": lambda t, d, kw: kp.knob_sweep(t, "read_ahead_kb", [0], QUICK, runs_dir=d, **kw),
    "block_sizes": lambda t, d, kw: kp.block_sizes(t, ["4k"], QUICK, runs_dir=d, **kw),
    "many_devices": lambda t, d, kw: kp.many_devices(1, "16m", QUICK, cpus=[CPU], runs_dir=d, targets=[t], **kw),
}


@needs_root
@pytest.mark.parametrize("study", STUDIES)
def test_every_study_forwards_the_measure_options(study, loopdev, tmp_path, monkeypatch):
    seen = []

    def spy(options, target, **kw):
        seen.append(kw)
        raise Stop

    monkeypatch.setattr(runner, "measure", spy)
    with pytest.raises(Stop):
        STUDIES[study](loopdev, tmp_path / "runs", {"how": {"allow_destructive": True, "timeout_s": 30}})
    how = MeasureOptions.of(seen[0]["how"]) if seen else None
    assert how and how.allow_destructive is True and how.timeout_s == 30


def test_rounds_put_every_cell_in_each_round(scratch):
    from iolab.measure.sweep import plan

    grid = Grid({"iodepth": [1, 2, 4]}, base=QUICK)

    def order(**kw):
        return [
            (r.swept["repeat"], r.options["iodepth"]) for r in plan(grid, target=scratch, rounds={"repeats": 2, **kw})
        ]

    assert order() == [(0, 1), (1, 1), (0, 2), (1, 2), (0, 4), (1, 4)]
    assert order(order="interleaved") == [(0, 1), (0, 2), (0, 4), (1, 1), (1, 2), (1, 4)]
    shuffled = order(order="random", seed=3)
    assert [rep for rep, _ in shuffled] == [0, 0, 0, 1, 1, 1] and shuffled == order(order="random", seed=3)
    assert any(order(order="random", seed=s) != order(order="interleaved") for s in range(5))
    with pytest.raises(InputError, match="order='sideways': choose one of grid, interleaved, random"):
        order(order="sideways")


def test_a_sweep_asks_fio_about_its_jobs_at_once_and_a_refused_one_fails_at_its_turn(scratch, tmp_path, monkeypatch):
    """Each run's write guard reads fio's ``--parse-only`` of its job; a campaign asks fio about
    its next runs' jobs in one call beforehand (``iolab.measure.campaign.ask_ahead``), not one
    fio start-up a run. A job fio refuses is left to its run: the runs before it are made, and
    it fails with fio's words, as before. Each job is built once (``runner.job_file``) and
    carried to its run."""
    asked, real, built, build = [], subprocess.run, [], runner.job_file

    def counting(argv, *args, **kwargs):
        asked.extend([argv] if "--parse-only" in argv else [])
        return real(argv, *args, **kwargs)

    def building(*args, **kwargs):
        built.append(args[4])  # the run's label
        return build(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    monkeypatch.setattr(runner, "job_file", building)
    table = sweep(
        Grid({"iodepth": [1, 2, 4]}, base=QUICK),
        target=scratch,
        cpus=[CPU],
        runs_dir=tmp_path / "a",
        rounds={"warmup": "run"},
    )
    assert len(table) == 3 and len(asked) == 1, asked  # the warm-up's job and the three depths', at once
    assert len(built) == 4 == len(set(built)), built
    with pytest.raises(FioError, match="failed parsing thinktime=abc"):
        sweep(
            Grid({"thinktime": ["0", "abc"]}, base=QUICK),
            target=scratch,
            cpus=[CPU],
            runs_dir=tmp_path / "b",
            rounds={"warmup": "none", "order": "grid"},
        )
    assert len(list((tmp_path / "b").glob("*/run.json"))) == 1


def test_warmup_run_is_discarded_and_ramp_time_is_a_warmup_too(scratch, tmp_path):
    RUN = {"warmup": "run"}
    table = sweep(
        Grid({"iodepth": [1, 2]}, base=QUICK), target=scratch, cpus=[CPU], runs_dir=tmp_path / "r", rounds=RUN
    )
    warm = list((tmp_path / "r" / "warmup").glob("*/run.json"))
    assert len(warm) == 1 and len(table) == 2 and "warmup" not in table
    assert json.loads((warm[0].parent / "params.json").read_text())["swept"] == {
        "iodepth": 1,
        "repeat": 0,
        "warmup": True,
    }
    again = sweep(
        Grid({"iodepth": [1, 2]}, base=QUICK), target=scratch, cpus=[CPU], runs_dir=tmp_path / "r", rounds=RUN
    )
    assert list(again.run_id) == list(table.run_id) and len(list((tmp_path / "r" / "warmup").iterdir())) == 1
    ramped = sweep(
        Grid({"iodepth": [1]}, base=QUICK),
        target=scratch,
        cpus=[CPU],
        runs_dir=tmp_path / "p",
        rounds={"warmup": "500ms"},
    )
    job = json.loads(next((tmp_path / "p").glob("*/params.json")).read_text())["fio_options"]
    assert job["ramp_time"] == "500ms" and len(ramped) == 1
    with pytest.raises(InputError, match="warmup: 'soon' is not one of run .one discarded run first., none, or a time"):
        sweep(Grid({"iodepth": [1]}, base=QUICK), target=scratch, runs_dir=tmp_path / "x", rounds={"warmup": "soon"})
    with pytest.raises(InputError, match="warmup: 0.5 is not one of .*write 0.5s for seconds"):  # runs or seconds?
        sweep(Grid({"iodepth": [1]}, base=QUICK), target=scratch, runs_dir=tmp_path / "x", rounds={"warmup": 0.5})
    with pytest.raises(InputError, match="t/io_uring has no ramp time; use warmup: run"):
        sweep(Grid({}, tool="t/io_uring"), target=scratch, runs_dir=tmp_path / "x", rounds={"warmup": "2s"})


def test_rounds_and_measuring_options_read_mappings_and_name_mistakes():
    from iolab.measure.campaign import Rounds, StopRule

    rounds = Rounds.of({"repeats": "3", "order": " Random ", "stop": {"metric": "iops", "ci_pct": 2}}, warmup="run")
    assert rounds == Rounds(3, "random", 0, "run", StopRule("iops", 2, 3))
    assert Rounds.of({"order": "given"}).order == "interleaved"  # a search spec's spelling
    for bad, words in [
        ({"repeat": 3}, "unknown rounds setting repeat"),
        ({"repeats": 0}, "repeats"),
        ({"order": "up"}, "order='up': choose one of grid, interleaved, random"),
        ({"stop": {"metrc": "iops"}}, "unknown stop setting metrc"),
        ({"stop": 5}, "stop=5: give a StopRule or a mapping"),
    ]:
        with pytest.raises(InputError, match=words):
            Rounds.of(bad)
    assert MeasureOptions.of({"log_ms": 500}).replace(threads=True) == MeasureOptions(threads=True, log_ms=500)
    with pytest.raises(
        InputError, match="unknown measuring option allow_destructiv; the options are allow_destructive"
    ):
        MeasureOptions.of({"allow_destructiv": True})
    with pytest.raises(InputError, match="unknown measuring option profil"):
        MeasureOptions().replace(profil=None)
    with pytest.raises(InputError, match="grid axis 'iodepth' has 8: give a list"):
        Grid.of({"iodepth": 8})
    with pytest.raises(InputError, match="give a Grid or a mapping"):
        Grid.of([("iodepth", [1])])
