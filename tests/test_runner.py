"""Real fio runs through iolab: stored, parsed, with samplers; and the failures."""

import json
import os
import signal
import threading
import time

import pytest

from iolab.core.errors import FioError, RunInterrupted, TargetError, ToolMissing
from iolab.machine.target import resolve
from iolab.measure.runner import measure
from iolab.runs.runcache import load_runs
from iolab.runs.store import read_run
from support.cpus import CPU
from support.fio import QUICK, wait_for_fio


def test_measure_stores_everything(scratch, runs):
    result = measure({**QUICK, "iodepth": 1}, scratch, cpus=[CPU], runs_dir=runs, swept={"qd": 1})
    names = {p.name for p in result.path.iterdir()}
    assert {
        "run.json",
        "params.json",
        "job.fio",
        "argv.json",
        "fio.json",
        "fio.stderr",
        "system.json",
        "samples_freq.csv",
        "samples_stat.csv",
    } <= names
    assert read_run(result.path)["status"] == "ok"
    argv = json.loads((result.path / "argv.json").read_text())["argv"]
    assert argv[1:] == ["--output-format=json+", "--output=fio.json", "job.fio"]
    assert f"cpus_allowed={CPU}" in (result.path / "job.fio").read_text()
    row = result.table.iloc[0]
    assert row.iops > 100 and row.qd == 1 and row.percentiles_from == "bins"  # plumbing: a loaded VM gave 965
    assert 0 < row.cpu_busy_pct <= 100 and row.cpu_freq_mhz > 0
    assert not list(runs.glob(".tmp-*"))  # renamed into place


def test_bad_fio_option_carries_fios_message(scratch, runs):
    with pytest.raises(FioError) as err:
        measure({**QUICK, "no_such_option": 1}, scratch, runs_dir=runs)
    assert err.value.returncode == 1 and "no_such_option" in str(err.value)
    assert not runs.exists() or not list(runs.iterdir())  # refused by fio's parse, before any run


def test_job_error_is_raised(tmp_path, runs):
    target = resolve("scratch", tmp_path, "1m")
    (tmp_path / "file").write_text("")
    with pytest.raises(FioError, match="Not a directory|error 20"):
        measure({**QUICK, "filename": str(tmp_path / "file" / "x"), "time_based": 0}, target, runs_dir=runs)


def test_missing_target(tmp_path):
    with pytest.raises(TargetError, match="does not exist"):
        resolve(tmp_path / "nope", tmp_path)


def test_no_fio(monkeypatch, scratch, runs):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="apt-get install fio"):
        measure(QUICK, scratch, runs_dir=runs)


def _fio_pids_under(folder):
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (
                os.readlink(f"/proc/{pid}/cwd").startswith(str(folder))
                and open(f"/proc/{pid}/comm").read().strip() == "fio"
            ):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_killed_run_is_kept_and_marked(scratch, runs):
    """fio killed with SIGKILL: RunInterrupted, the folder kept as 'interrupted', and no
    fio process of ours left behind."""

    def kill_fio():  # as soon as fio runs, however long a loaded machine takes to start it
        wait_for_fio(runs, timeout=120)
        os.kill(min(_fio_pids_under(runs)), signal.SIGKILL)

    killer = threading.Thread(target=kill_fio)
    killer.start()
    with pytest.raises(RunInterrupted, match="signal 9"):
        measure({**QUICK, "runtime": "20s"}, scratch, runs_dir=runs)
    killer.join()
    run = next(runs.iterdir())
    assert read_run(run)["status"] == "interrupted"
    assert load_runs(runs).empty  # interrupted runs are not mixed into results
    deadline = time.monotonic() + 10  # well inside the 20 s a fio left behind would still run
    while _fio_pids_under(runs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _fio_pids_under(runs) == []


def test_a_long_run_ticks_a_bar_of_its_seconds_that_goes_away(monkeypatch):
    """Notebook 08's 60 s run showed no progress: a run of LONG_RUN_S or more gets a bar of
    its seconds, ticked from a thread, removed when the run ends (none for a short run)."""
    import time

    from iolab.core import progress
    from iolab.measure.runner import _seconds

    assert _seconds({"runtime": "60s", "ramp_time": "2s"}) == 62 and _seconds({"runtime": 30}) == 30
    monkeypatch.setattr(progress, "headless", lambda: False)
    monkeypatch.setattr(progress, "_watched", lambda: True)  # a notebook, or a terminal
    with progress.Ticking("fio x", 12) as ticking:
        ticking.start()
        deadline = time.monotonic() + 10  # its first tick is due after 1 s; a loaded machine may wake it late
        while ticking._bar.n < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ticking._bar.n >= 1 and not ticking._bar.leave
    assert not ticking._thread.is_alive()
    assert progress.Ticking("fio y", 3)._bar.disable  # short: no bar
    monkeypatch.setattr(progress, "_watched", lambda: False)
    assert progress.Ticking("fio z", 12)._bar.disable  # stderr to a pipe or a log: no bar


def test_a_loop_that_fails_takes_its_bar_away(monkeypatch):
    """A failed cell left a stale "0/4" bar in JupyterLab: a loop over ``progress.bar`` that
    stops early removes its bar; one that finishes keeps it."""
    from iolab.core import progress

    monkeypatch.setattr(progress, "headless", lambda: False)
    monkeypatch.setattr(progress, "_watched", lambda: True)  # a notebook, or a terminal
    failing = progress.bar(range(4), "runs")
    with pytest.raises(RuntimeError):
        for _i in failing:
            raise RuntimeError("fio failed")
    assert failing.leave is False
    done = progress.bar(range(2), "runs")
    assert list(done) == [0, 1] and done.leave is not False


def test_progress_to_a_file_or_a_pipe_is_a_few_plain_lines(monkeypatch, capsys):
    """A bar written to a file printed a line per update (hundreds for one iolab table): with
    stderr not a terminal, the start, every 10 % and the end; nothing under papermill."""
    from iolab.core import progress

    monkeypatch.setattr(progress, "headless", lambda: False)
    monkeypatch.setattr(progress, "_watched", lambda: False)
    assert sum(progress.bar(range(1000), "deriving run tables")) == 499500
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "deriving run tables: start: 0/1000 run(s), 0 s"
    assert [line.split(": ")[1] for line in lines[1:-1]] == [f"{p} %" for p in range(0, 100, 10)]
    assert lines[-1].startswith("deriving run tables: done: 1000/1000 run(s), ") and len(lines) == 12
    with pytest.raises(RuntimeError):
        for i in progress.bar(range(10), "runs", unit="run"):
            if i == 3:
                raise RuntimeError("fio failed")
    assert capsys.readouterr().err.splitlines()[-1].startswith("runs: stopped: 3/10 run(s)")
    with progress.bar(None, "writing once", unit="MiB", total=64, delay=5) as quick:  # ends within its delay
        quick.update(64)
    with progress.Stages("profile", ["fio", "perf script"]) as stages:
        stages.advance()
    assert capsys.readouterr().err.splitlines() == [
        "profile: start: 0/2 stage(s), 0 s",
        "profile: 50 %: 1/2 stage(s), 0 s, perf script",
        "profile: done: 2/2 stage(s), 0 s, perf script",
    ]
    monkeypatch.setattr(progress, "headless", lambda: True)
    list(progress.bar(range(100), "quiet"))
    assert capsys.readouterr().err == ""
