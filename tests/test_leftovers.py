"""What a dead iolab leaves is found by `iolab cleanup` and by the next command, and said in
words (iolab.runs.leftovers, iolab.runs.repair): a scratch file's half and a hidden run folder
that no ledger entry names, and a run folder a full disk kept from being finished."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iolab.runs.store import new_run_id
from support.cli import cli_here
from support.marks import needs_root


@pytest.fixture
def dead_pid():
    """The pid of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def data(tmp_path, monkeypatch, own_ledger):
    """iolab's default folders (``IOLAB_DATA``) and ledger, this test's own."""
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def leave(data, pid, **writer):
    """What an iolab of ``pid`` killed mid-way leaves, named as iolab names it: a scratch file's
    half (``target._write_scratch``) and a run folder being written (``store.RunWriter``) in a
    study's folder, its fio report already there."""
    (data / "scratch").mkdir(parents=True, exist_ok=True)
    half = data / "scratch" / f".iolab-scratch.dat.{pid}.tmp"
    half.write_bytes(os.urandom(1 << 20))
    run_id = new_run_id("qd1")
    run = data / "runs" / "search-t" / f".tmp-{run_id}"
    run.mkdir(parents=True)
    meta = {"schema": 2, "run_id": run_id, "status": "running", "pid": pid, **writer}
    (run / "run.json").write_text(json.dumps(meta))
    (run / "fio.json").write_text('{"jobs": []}')
    return half, run


def test_cleanup_finds_removes_and_says_what_a_dead_iolab_left(data, dead_pid):
    half, run = leave(data, dead_pid)
    live_half, live_run = leave(data, os.getpid())  # a live process's: kept as it is
    done = cli_here("cleanup")
    assert done.returncode == 0, done.stderr
    assert f"removed the half-written scratch file {half} (1 MiB): the iolab process writing it (pid {dead_pid})" in (
        done.stdout
    )
    final = run.with_name(run.name.removeprefix(".tmp-"))
    assert f"marked run {final} interrupted (its iolab process, pid {dead_pid}, is gone" in done.stdout
    assert not half.exists() and not run.exists() and live_half.exists() and live_run.is_dir()
    assert json.loads((final / "run.json").read_text())["status"] == "interrupted"
    assert (final / "fio.json").read_text() == '{"jobs": []}'  # what it measured is kept
    assert "nothing to clean up" in cli_here("cleanup").stdout


def test_the_next_command_finds_them_too(data, dead_pid):
    half, run = leave(data, dead_pid)
    done = cli_here("table", data / "runs" / "search-t", "--status", "interrupted")  # repairs before it reads
    said = [line for line in done.stderr.splitlines() if line.startswith("iolab cleanup: ")]
    assert len(said) == 2 and "removed the half-written scratch file" in said[0] and "interrupted" in said[1], said
    assert not half.exists() and not run.exists()
    final = run.with_name(run.name.removeprefix(".tmp-"))
    assert json.loads((final / "run.json").read_text())["status"] == "interrupted"  # the table then saw it finished


def test_a_process_scans_for_them_once_in_a_while_and_cleanup_always(data, dead_pid):
    """A campaign repairs before each run: in one process the folders are scanned at most once
    per SCAN_EVERY_S (over the NVMe lab's 9p share a scan of a large data folder is slow:
    benchmarks/README.md); ``iolab cleanup`` scans every time."""
    from iolab.runs import repair

    repair.recover()  # this process's scan of these folders
    half, run = leave(data, dead_pid)
    assert repair.recover() == [] and half.exists() and run.exists()  # scanned a moment ago
    done = repair.recover(scan=True)
    assert len(done) == 2 and not half.exists() and not run.exists(), done


KILLED_MID_FILL = """
import sys, time
from iolab.machine import target

def stuck(f, size, what):  # the fill, stopped a MiB in, as by a slow disk
    f.write(bytes(1 << 20))
    f.flush()
    print("filling", flush=True)
    time.sleep(60)

target.write_once = stuck
target.scratch_file(sys.argv[1], "8m")
"""


def test_a_scratch_fill_killed_half_way_leaves_a_half_that_cleanup_removes(tmp_path, own_ledger):
    """SIGKILL while the scratch file is written: its hidden half is in the ledger, and the
    next iolab command removes it, saying so."""
    scratch = tmp_path / "scratch"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_MID_FILL), str(scratch)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "filling"
    proc.kill()
    proc.wait()
    half = scratch / f".iolab-scratch.dat.{proc.pid}.tmp"
    assert half.stat().st_size == 1 << 20
    done = cli_here("cleanup")
    assert f"removed the half-written scratch file {half}: its iolab process (pid {proc.pid}) died" in done.stdout
    assert not half.exists() and not list(own_ledger.glob("*.json"))


KILLED_MID_RUN = """
import os, sys
from iolab.runs.store import RunWriter
folder = RunWriter(sys.argv[1], "qd1")
print(folder.path, flush=True)
sys.stdin.read()
"""


@needs_root
def test_a_run_folder_a_full_disk_kept_unfinished_is_said_and_finished_later(tmp_path, own_ledger):
    """SIGKILL mid-run, then a full disk: the next cleanup cannot finish the run folder; it
    says so in words (not the ledger's raw entry), keeps the entry, and finishes it once there
    is room."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], check=True)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(KILLED_MID_RUN), str(disk / "runs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        run = proc.stdout.readline().strip()
        proc.kill()
        proc.wait()
        filler = disk / "filler"
        with open(filler, "wb") as f, pytest.raises(OSError):
            f.write(bytes(1 << 20))
            f.flush()
        stuck = cli_here("cleanup")
        assert f"could not put back the run {run} left by iolab pid {proc.pid}: no space left" in stuck.stdout
        assert "{" not in stuck.stdout and "held by live" not in stuck.stdout, stuck.stdout
        assert len(list(own_ledger.glob("*.json"))) == 1 and os.path.isdir(run)
        filler.unlink()
        done = cli_here("cleanup")
        assert f"marked run {run.replace('.tmp-', '')} interrupted" in done.stdout, done.stdout
        assert not list(own_ledger.glob("*.json"))
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_run_folders_writer_is_judged_by_its_start_host_and_boot_not_its_pid_alone(data):
    """A live pid started at another time was reused (its run is finished as interrupted); a run
    of an earlier boot is finished too; another host's run in a shared folder is never judged."""
    import socket

    from iolab.machine import ledger
    from iolab.runs.leftovers import hidden_runs

    me = {"pid_start": ledger.start_time(os.getpid()), "host": socket.gethostname(), "boot_id": ledger.boot_id()}
    _, mine = leave(data, os.getpid(), **me)
    _, reused = leave(data, os.getpid(), **{**me, "pid_start": me["pid_start"] + 1})
    _, earlier = leave(data, os.getpid(), **{**me, "boot_id": "not-this-boot"})
    _, elsewhere = leave(data, 1 << 21, **{**me, "host": "another-host"})
    found = dict(hidden_runs(data / "runs"))
    assert mine not in found and elsewhere not in found, found
    assert "that pid is another process's now" in found[reused]
    assert "ran before this machine restarted" in found[earlier]
    ledger_dir = Path(os.environ["IOLAB_STATE"]) / "ledger"  # an entry another process is undoing is not listed
    ledger_dir.mkdir(parents=True, exist_ok=True)
    (ledger_dir / ".claimed-x.json").write_text(json.dumps({"kind": "run", "owner_pid": 1 << 21}))
    assert not list(ledger.entries())


def test_a_ledger_entry_iolab_cannot_read_is_set_aside_and_said_once(data, own_ledger, dead_pid, tmp_path):
    """Ledger entries edited by hand or written by another version: `iolab cleanup` says each in
    one line, keeps it hidden as ``.bad-<name>`` and goes on; the next command says nothing. A
    pid of 0 (kill(2)'s own process group) or ``true`` (1, init) is never signalled, and a run
    entry that names a finished or foreign folder never marks it."""
    own_ledger.mkdir(parents=True, exist_ok=True)
    finished = tmp_path / "study" / "qd1-20260101T000000Z"
    finished.mkdir(parents=True)
    dead = {"owner_pid": dead_pid, "created_utc": "2020-01-01T00:00:00Z"}
    bad = {
        "pid.json": {"kind": "process", **dead, "pid": "abc"},
        "zero.json": {"kind": "process", **dead, "pid": 0},
        "true.json": {"kind": "process", **dead, "pid": True},
        "owner.json": {"kind": "process", "pid": 4321},
        "kind.json": {"kind": "spaceship", **dead},
        "listkind.json": {"kind": ["process"], **dead},
        "run.json": {"kind": "run", **dead, "path": str(finished)},
        "list.json": [1, 2],
        "text.json": "not json {",
        "empty.json": "",
    }
    for name, entry in bad.items():
        (own_ledger / name).write_text(entry if isinstance(entry, str) else json.dumps(entry))
    (own_ledger / "folder.json").mkdir()
    mine = {"kind": "knob", "owner_pid": os.getpid(), "path": "/sys/x"}  # a live owner's, kind aside: listed
    (own_ledger / "live.json").write_text(json.dumps({k: v for k, v in mine.items() if k != "kind"}))
    done = cli_here("cleanup")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("left alone a ledger entry")]
    assert len(said) == len(bad) + 1, done.stdout
    assert "pid 0 is not a process iolab started" in done.stdout and "pid True is not" in done.stdout
    assert "is not a run folder being written" in done.stdout and not (finished / "run.json").exists()
    assert f"held by live iolab pid {os.getpid()}: thing /sys/x" in done.stdout
    assert sorted(p.name for p in own_ledger.iterdir()) == sorted(
        [f".bad-{n}" for n in [*bad, "folder.json"]] + ["live.json"]
    )
    again = cli_here("cleanup")
    assert again.returncode == 0 and "left alone" not in again.stdout, again.stdout


def test_a_repair_cut_short_puts_back_what_it_had_not_done(data, own_ledger, dead_pid, monkeypatch):
    """A Ctrl-C mid-repair (in a Jupyter kernel that lives on) puts back the entries not done
    yet; a repair whose process died with entries claimed is taken back by the next one,
    which then undoes them."""
    from iolab.runs import repair

    own_ledger.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    halves = []
    for i in range(2):
        halves.append(data / f"half{i}")
        halves[-1].write_text("x")
        entry = {"kind": "file", "owner_pid": dead_pid, "path": str(halves[-1])}
        (own_ledger / f"{dead_pid}-file-{i}.json").write_text(json.dumps(entry))

    def ctrl_c(entry):
        raise KeyboardInterrupt

    undo_file = repair.UNDO["file"]
    monkeypatch.setitem(repair.UNDO, "file", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        repair.recover()
    assert sorted(p.name for p in own_ledger.iterdir()) == [f"{dead_pid}-file-0.json", f"{dead_pid}-file-1.json"]
    monkeypatch.setitem(repair.UNDO, "file", undo_file)
    os.rename(own_ledger / f"{dead_pid}-file-0.json", own_ledger / f".claimed-{dead_pid}-1--{dead_pid}-file-0.json")
    said = repair.recover()
    assert any(line.startswith("took back a ledger entry a repair did not finish") for line in said), said
    assert not any(h.exists() for h in halves) and not list(own_ledger.iterdir()), said
