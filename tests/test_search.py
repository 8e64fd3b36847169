"""The parameter search: specs checked before anything runs, seed 003's CPU-mask rule, a
real search on loop devices (devices and stress axes, knobs put back), and a search killed
with SIGKILL that resumes with every (cell, repeat) exactly once."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from iolab.core.errors import BusyError, FioError, InputError
from iolab.machine import knobs, locks
from iolab.measure import plans, search, search_spec
from support.cli import cli_here
from support.marks import needs_root
from support.paths import REPO

BASE = {"rw": "randread", "bs": "4k", "ioengine": "psync", "runtime": "300ms"}


def spec_file(tmp_path, **doc):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "target": "scratch", "size": "16m", "base": BASE, **doc}))
    return path


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"axis": {"iodepth": [1]}}, "unknown key 'axis' (did you mean 'axes'?)"),
        ({"axes": {}}, "the spec has no axes"),
        ({"axes": {"iodepth": []}}, "axis 'iodepth' has no values"),
        ({"axes": {"stress": ["busy"]}}, "stress: 'busy' is not one of idle, stressed"),
        ({"axes": {"devices": [1, 2]}}, "the devices axis goes up to 2 but the spec lists 1 target"),
        ({"axes": {"iodepth": [1]}, "order": "sorted"}, "order 'sorted': choose random"),
        ({"axes": {"iodepth": [1, 1]}}, "lists a value twice"),
        ({"axes": {"iodepth": [1]}, "repeats": 0}, "repeats"),
        ({"axes": {"iodepth": [1]}, "stop": {"ci": 5}}, "stop: give {metric: iops, ci_pct: 5"),
    ],
)
def test_bad_specs_are_refused_with_what_to_fix(tmp_path, doc, words):
    with pytest.raises(InputError, match=re.escape(words)):
        search_spec.load_spec(spec_file(tmp_path, **doc))


def test_spec_spellings_and_files(tmp_path):
    spec = search_spec.load_spec(
        spec_file(tmp_path, axes={" stress ": [" Stressed", "IDLE"], "siblings": ["not_used"]})
    )
    assert spec.axes == {"stress": ["stressed", "idle"], "siblings": ["not used"]} and spec.target == ["scratch"]
    with pytest.raises(InputError, match="no such search spec"):
        search_spec.load_spec(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("axes: [1, 2\n")
    with pytest.raises(InputError, match="is not YAML"):
        search_spec.load_spec(tmp_path / "bad.yaml")
    examples = [search_spec.load_spec(p) for p in sorted((REPO / "data" / "examples").glob("search_*.yaml"))]
    assert {e.name for e in examples} >= {"small", "seed003"}
    assert len(examples[0].axes) >= 4 and all(e.path for e in examples)


def test_cpu_mask_follows_seed_003(monkeypatch):
    topology = {0: [0, 2], 2: [0, 2], 1: [1, 3], 3: [1, 3]}  # two cores, two threads each
    monkeypatch.setattr(search, "siblings_of", lambda c: topology[c])
    assert search.cpu_mask([0, 1, 2, 3], 1, siblings=False) == [0]
    assert search.cpu_mask([0, 1, 2, 3], 2, siblings=False) == [0, 1]
    assert search.cpu_mask([0, 1, 2, 3], 2, siblings=True) == [0, 2, 1, 3]
    assert search.cpu_mask([0, 1, 2, 3], 3, siblings=False) is None


def test_what_the_machine_cannot_vary_is_listed_before_anything_runs(tmp_path):
    spec = search_spec.load_spec(
        spec_file(tmp_path, axes={"iodepth": [1, 2], "cores": [1, 64], "siblings": ["not used", "used"]})
    )
    with search.open_targets(spec) as targets:
        with pytest.raises(search.SearchUnavailable) as err:
            search.plan(spec, targets)
        runs = search.plan(spec, targets, drop_unavailable=True)
    text = str(err.value)
    assert "cores 64: the CPU pool" in text and "nothing was run" in text and "--drop-unavailable" in text
    assert {(r.swept["cores"], r.swept["siblings"]) for r in runs} == {(1, "not used")}
    assert len(runs) == 2 and not list(tmp_path.glob("**/run.json"))


def test_a_bad_fio_option_is_refused_before_any_run(tmp_path):
    spec = search_spec.load_spec(spec_file(tmp_path, axes={"iodepth": [1], "not_an_option": [1]}))
    with pytest.raises(FioError), search.open_targets(spec) as targets:
        search.plan(spec, targets)
    spec = search_spec.load_spec(spec_file(tmp_path, axes={"iodepth": [1, 0]}))
    with pytest.raises(InputError, match="iodepth"), search.open_targets(spec) as targets:
        search.plan(spec, targets)


def test_a_dry_run_of_hundreds_of_cells_counts_estimates_warns_and_groups_the_illegal(tmp_path):
    """320 cells checked with a few fio calls: counted and estimated before the listing, a
    warning above 1,000 runs, the illegal cells counted with their reasons grouped (a bad
    option on one engine, a write to a file iolab did not create), the listing cut short."""
    users = tmp_path / "users.dat"
    users.write_bytes(b"u" * (100 << 10))
    axes = {
        "ioengine": ["psync", "io_uring"],  # hipri is an io_uring option: "Bad option" with psync
        "filename": [str(users), str(tmp_path / "new.dat")],
        "rw": ["randread", "randwrite"],  # writing users.dat is refused; reading it is fine
        "iodepth": [1, 2, 4, 8, 16],
        "bs": ["4k", "8k", "16k", "64k"],
        "numjobs": [1, 2],
    }
    base = {**BASE, "ioengine": "psync", "hipri": 1, "size": "64k"}
    done = cli_here("search", "--dry-run", spec_file(tmp_path, axes=axes, base=base, repeats=4))
    out = done.stdout.splitlines()
    assert done.returncode == 1 and "200 of 320 cells cannot run" in done.stderr, done.stderr
    head = re.fullmatch(
        r"search t: 320 cells x 4 repeats = 1,280 runs, about (\d+) min of wall time \(300ms .*", out[0]
    )
    assert head and 20 <= int(head.group(1)) <= 30, out[0]  # 1,281 runs of 0.3 s + 0.7 s
    assert out[1].startswith("WARNING: this plan is 1,280 runs") and "fewer repeats (repeats: 4 now)" in out[1]
    assert out[2].startswith("cells: 120 legal, 200 illegal: 480 runs, about 8 min")
    assert re.match(r"  \(1\) 160 cell\(s\) \(c0, c1, .*Bad option <hipri=1> .*job c<cell> dropped", out[3])
    assert re.match(r"  \(2\) 40 cell\(s\) .*refusing job \[c<cell>\]: fio reads it as rw=randwrite", out[4])
    assert "an existing file of 102,400 bytes that iolab did not create" in out[4] and len(out) == 5 + 1 + 11
    assert "… 310 cells more; --list-all lists every one …" in done.stdout and "c319" in out[-1]
    every = cli_here("search", "--dry-run", "--list-all", spec_file(tmp_path, axes=axes, base=base, repeats=4))
    assert len(every.stdout.splitlines()) == 6 + 320 and every.stdout.count("ILLEGAL (2)") == 40
    assert "(more than 8 h of wall time)" in plans.too_big(10, 9 * 3600, "fio runs", "--quick")
    from iolab.report import batch  # the same words for a batch's plan (iolab batch --dry-run)

    notebook = REPO / "notebooks" / "01_queue_depth_knee.ipynb"
    grid = {"bs": [f"{k}k" for k in range(1, 41)], "runtime_s": list(range(1, 31))}
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"notebook": str(notebook), "grid": grid}))
    said = batch.describe_plan(batch.load_manifest(tmp_path / "b.yaml"), tmp_path / "out").splitlines()
    assert re.match(
        r"batch b.yaml: 1,200 notebook runs of 01_.*, 0 already done in .*, 1,200 to run; about \d", said[0]
    )
    assert said[1].startswith("WARNING: this plan is 1,200 notebook runs") and len(said) == 2 + 11
    assert plans.too_big(1000, 8 * 3600, "runs", "x") == ""


def stress_pids() -> set[int]:
    """stress-ng processes started below this one (tests beside it may run their own)."""
    out = subprocess.run(["pgrep", "-x", "stress-ng"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split() if _descends_from_us(int(p))}


@needs_root
def test_stress_starts_in_a_folder_it_cannot_write(tmp_path, monkeypatch):
    """The NVMe lab runs notebooks in the checkout, shared read-only: stress-ng refused to
    start there ("temp-path '.' must be readable and writeable") until given one."""
    from iolab.machine.stress import stressed

    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], check=True)
    try:
        monkeypatch.chdir(ro)
        with stressed([min(os.sched_getaffinity(0))]) as pid:
            assert pid and pid in stress_pids()
    finally:
        monkeypatch.chdir(tmp_path)
        subprocess.run(["umount", str(ro)], check=True)


def _descends_from_us(pid: int) -> bool:
    while pid > 1:
        if pid == os.getpid():
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


@pytest.mark.slow
@needs_root
def test_a_search_over_devices_stress_and_a_knob(tmp_path, monkeypatch):
    before = stress_pids()
    applied, real = [], knobs.applied

    def spy(target, settings):
        applied.append((target.device, dict(settings)))
        return real(target, settings)

    monkeypatch.setattr(knobs, "applied", spy)
    spec = search_spec.load_spec(
        {
            "name": "real",
            "target": ["loop:32m", "loop:32m"],
            "cpus": [0, 1],
            "repeats": 1,
            "base": {**BASE, "ioengine": "io_uring", "direct": 1},
            "axes": {
                "scheduler": ["none", "mq-deadline"],
                "devices": [2],
                "stress": ["idle", "stressed"],
                "cores": [1],
            },
        }
    )
    # one and two devices, stress and cores together: seed 003's smoke run (test_seeds.py)
    table = search.run(spec, tmp_path / "runs", announce=None)
    per_run = table.drop_duplicates("run_id")
    assert len(per_run) == 4 and set(per_run.devices) == {2} and set(per_run.stress) == {"idle", "stressed"}
    assert per_run.groupby(["scheduler", "stress"]).size().eq(1).all() and (per_run.iops > 0).all()
    assert set(per_run.search) == {spec.ident} and (per_run.scheduler_active == per_run.scheduler).all()
    devices = {d for d, _ in applied}
    assert len(devices) == 2 and {(d, s["scheduler"]) for d, s in applied} == {
        (d, s) for d in devices for s in ("none", "mq-deadline")
    }  # the knob is set on every device read
    two = per_run.run_id.iloc[0]
    job = (tmp_path / "runs" / two / "job.fio").read_text()
    assert job.count("[") == 2 and len({s for s in job.splitlines() if s.startswith("filename=")}) == 2
    stressed = per_run[per_run.stress == "stressed"]
    assert (stressed.other_cpu_pct.fillna(0) >= 0).all() and stress_pids() == before
    again = search.load_table(tmp_path / "runs")
    assert sorted(again.run_id.unique()) == sorted(per_run.run_id)


KILL_SPEC = {
    "name": "killed",
    "repeats": 2,
    "order": "random",
    "seed": 2,
    "base": {**BASE, "runtime": "300ms"},
    "axes": {"scheduler": ["none", "mq-deadline"], "iodepth": [1, 2]},
}


@pytest.mark.slow
@needs_root
def test_a_search_killed_with_sigkill_resumes_with_every_run_exactly_once(loopdev, tmp_path, own_ledger):
    """Over two devices and two CPUs (a job section per device, each naming its file): the
    resume key the campaign plans is the one each run records (measure.planned.fio_job), so
    the resumed search runs only the missing (cell, repeat)s."""
    from iolab.machine.target import loop_device

    with loop_device("64m") as other:
        _killed_and_resumed(loopdev, other, tmp_path)


def _killed_and_resumed(loopdev, other, tmp_path):
    spec = tmp_path / "spec.yaml"
    axes = {**KILL_SPEC["axes"], "devices": [2], "cores": [2]}
    spec.write_text(
        yaml.safe_dump({**KILL_SPEC, "axes": axes, "target": [str(loopdev.path), str(other.path)], "cpus": [0, 1]})
    )
    scheduler = knobs.get("scheduler").read(loopdev)
    env = {**os.environ, "IOLAB_HEADLESS": "1"}
    argv = [str(REPO / ".venv" / "bin" / "iolab"), "search", str(spec), "--runs-dir", str(tmp_path / "runs")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "runs").glob("[!.]*/run.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.25)  # mid-run
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    swept = Counter()
    for run_json in (tmp_path / "runs").glob("[!.]*/run.json"):
        if json.loads(run_json.read_text())["status"] == "ok":
            s = json.loads((run_json.parent / "params.json").read_text())["swept"]
            swept[(s["scheduler"], s["iodepth"], s["repeat"])] += 1
    assert len(swept) == 2 * 2 * 2 and set(swept.values()) == {1}
    assert knobs.get("scheduler").read(loopdev) == scheduler
    one = next((tmp_path / "runs").glob("[!.]*/job.fio")).read_text()
    assert {f"filename={loopdev.path}", f"filename={other.path}"} <= set(one.splitlines())
    assert "best" in done.stdout and "8 runs in 4 cells" in done.stdout
    made = sorted(p.name for p in (tmp_path / "runs").iterdir())
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)  # all done: nothing runs
    assert again.returncode == 0 and sorted(p.name for p in (tmp_path / "runs").iterdir()) == made, again.stderr


def test_the_stop_rule_ends_a_cell_once_its_interval_is_narrow(tmp_path):
    # cpus_sampled is 1 in every run: its interval is 0 wide after min_repeats runs
    spec = search_spec.load_spec(
        spec_file(
            tmp_path,
            repeats=4,
            axes={"iodepth": [1, 2]},
            stop={"metric": "cpus_sampled", "ci_pct": 1, "min_repeats": 2},
        )
    )
    table = search.run(spec, tmp_path / "runs", announce=None)
    assert table.groupby("iodepth").run_id.nunique().to_dict() == {1: 2, 2: 2}
    assert search.run(spec, tmp_path / "runs", announce=None).run_id.nunique() == 4  # nothing more runs
    bad = search_spec.load_spec(
        spec_file(tmp_path, repeats=3, axes={"iodepth": [1]}, stop={"metric": "speed", "min_repeats": 2})
    )
    with pytest.raises(InputError, match="stop.metric 'speed' is not a column"):
        search.run(bad, tmp_path / "runs2", announce=None)


HOLD_RUNS = """
import sys
from iolab.machine.locks import runs_folder_locked
with runs_folder_locked(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_two_searches_into_one_runs_folder_never_double_a_cell(tmp_path, monkeypatch, capsys):
    """One writer per runs folder: while another process's study holds it, a search is refused
    (IOLAB_LOCK_WAIT_S=0) with the holder named and runs nothing; one that may wait says whom
    it waits for, and runs its cell once the holder is done."""
    runs = tmp_path / "runs"
    runs.mkdir()
    spec = search_spec.load_spec(spec_file(tmp_path, axes={"iodepth": [1]}, warmup="none"))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_RUNS, str(runs)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("IOLAB_LOCK_WAIT_S", "0")
        busy = f"runs folder {runs} is in use by pid {holder.pid} "
        with pytest.raises(BusyError, match=re.escape(busy) + ".*choose another runs folder"):
            search.run(spec, runs, announce=None, progress=False)
        assert not list(runs.glob("*/run.json")) and not (runs / "search.yaml").exists()
        monkeypatch.setenv("IOLAB_LOCK_WAIT_S", "30")

        class LetGo(locks.Waiting):  # the holder lets go once the wait is said, not after a fixed time
            def __init__(self, text):
                super().__init__(text)
                if "runs folder" in text and not holder.stdin.closed:
                    holder.stdin.write("done\n")
                    holder.stdin.close()

        monkeypatch.setattr(locks, "Waiting", LetGo)
        table = search.run(spec, runs, announce=None, progress=False)
        assert busy in capsys.readouterr().err and holder.wait(timeout=10) == 0
        assert table.run_id.nunique() == 1
    finally:
        holder.kill()
        holder.wait()
