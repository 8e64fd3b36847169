"""Client/server runs on real fio servers on this machine: network namespaces joined by veth
pairs (root) or loopback ports, each server started and stopped by its pid."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from iolab.core.errors import HostError, InputError, UnsafeTargetError
from iolab.machine import hosts as hostlib
from iolab.machine import ledger
from iolab.machine.fio import fio_version
from iolab.measure.clients import measure_hosts
from iolab.measure.planned import PlannedRun
from iolab.read.pool import pool_outputs
from support.hosts import left_by
from support.marks import is_root
from support.paths import REPO

JOB = {"ioengine": "psync", "runtime": "300ms"}


def on_hosts(options, target, hosts):
    """The planned run of ``options`` on ``target`` on every host of ``hosts`` (fio servers)."""
    return PlannedRun(options, target, label="hosts", hosts=tuple(hosts), engine="hosts")


def iolab(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    return subprocess.run(
        [sys.executable, "-m", "iolab.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def namespaces():
    """Every network namespace but those of other live processes (iolab names them
    ``iolab-<pid>-<n>``): they belong to tests running beside this one."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()

    def live_iolab(line: str) -> bool:
        parts = line.split()[0].split("-") if line.strip() else []
        return (
            len(parts) == 3
            and parts[0] == "iolab"
            and parts[1].isdigit()
            and parts[1] != str(os.getpid())
            and ledger.alive(int(parts[1]), None)
        )

    return "\n".join(line for line in listed if not live_iolab(line))


@pytest.fixture
def loopback_servers():
    with hostlib.local_servers(2, netns=False) as servers:
        yield servers


# ---------------------------------------------------------------- naming hosts
@pytest.mark.parametrize(
    "text,address,port",
    [(" 10.0.0.2 ", "10.0.0.2", 8765), ("h1:8766", "h1", 8766), ("[::1]:9000", "::1", 9000), ("[::1]", "::1", 8765)],
)
def test_host_spellings(text, address, port):
    h = hostlib.parse_host(text)
    assert (h.name, h.address, h.port) == (text.strip(), address, port)


@pytest.mark.parametrize(
    "text,words",
    [
        ("h1:x", "not a number"),
        ("h1:0", "outside 1-65535"),
        ("h 1", "address\\[:port\\]"),
        ("h1,8765", "address\\[:port\\]"),
        ("[::1]8765", "IPv6"),
    ],
)
def test_bad_host_spellings_say_how_to_write_one(text, words):
    with pytest.raises(InputError, match=words):
        hostlib.parse_host(text)


def test_a_host_named_twice_or_none_is_refused(tmp_path):
    with pytest.raises(InputError, match="named twice"):
        hostlib.hosts_from("10.0.0.2, 10.0.0.2:8765")
    with pytest.raises(InputError, match="no hosts given"):
        hostlib.hosts_from(" , ")
    bad = tmp_path / "hosts.yaml"
    bad.write_text("10.0.0.2: {via: ssh root@x, user: me}\n")
    with pytest.raises(InputError, match="hosts.yaml: host 10.0.0.2: unknown key 'user'; the keys are via"):
        hostlib.hosts_from(None, bad)
    good = tmp_path / "good.yaml"
    good.write_text("10.0.0.2:\n  via: ssh -tt root@10.0.0.2\n10.0.0.3:8766: {via: [env]}\n")
    hosts = hostlib.hosts_from("10.0.0.3:8766", good)
    assert hosts[0].via == ("env",) and [h.name for h in hostlib.hosts_from(None, good)] == [
        "10.0.0.2",
        "10.0.0.3:8766",
    ]


# ---------------------------------------------------------------- before any run
def test_a_host_without_iolab_runs_the_snapshots_own_source_unchanged(tmp_path):
    """``iolab.core.system`` goes to a remote host as it is (no source rewritten), its sibling
    imports given as stand-ins holding their constants; a module that imports more is refused."""
    from iolab.core import readable, system

    script = hostlib.standalone(system, "snapshot(None, [0])")
    assert repr((REPO / "lib/iolab/core/system.py").read_text()) in script
    done = subprocess.run(["python3", "-"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["kernel"] == os.uname().release, done.stderr
    with pytest.raises(AssertionError, match="cannot run alone: it imports"):
        hostlib.standalone(readable, "x")


def test_a_host_that_is_down_is_named_before_any_run(loopback_servers, scratch, runs):
    down = hostlib.Host("127.0.0.1:1", "127.0.0.1", 1)
    with pytest.raises(HostError, match="127.0.0.1:1 refused the connection on port 1: no fio server"):
        measure_hosts(on_hosts(JOB, scratch, [*loopback_servers.hosts, down]), runs_dir=runs)
    assert not runs.exists() or not list(runs.iterdir())


def test_another_fio_version_is_named_before_any_run(loopback_servers, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "fio").write_text("#!/bin/sh\necho fio-3.99\n")
    (fake / "fio").chmod(0o755)
    h = loopback_servers.hosts[0]
    odd = hostlib.Host(h.name, h.address, h.port, ("env", f"PATH={fake}:{os.environ['PATH']}"))
    with pytest.raises(HostError, match=f"{h.name} runs fio-3.99, this machine fio-3"):
        hostlib.check_hosts([odd, loopback_servers.hosts[1]], fio_version())


# ---------------------------------------------------------------- runs
def test_iolab_run_hosts_gives_a_row_per_host_and_a_pooled_row(loopback_servers, tmp_path):
    names = [h.name for h in loopback_servers.hosts]  # same address, two ports: two hosts
    done = iolab(
        "run",
        "--hosts",
        f" {names[0]} ,{names[1]}",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--scratch-dir",
        str(tmp_path / "s"),
        "--size=32m",
        "--runtime=1s",
        "--ioengine=psync",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(name in lines[0] for name in [*names, "pooled"]) and lines[1].startswith("IOPS (IO/s)")  # a column each
    run = next((tmp_path / "runs").iterdir())
    from iolab.runs.store import run_table

    table = run_table(run)
    hosts, pooled = table[table.host != "pooled"], table[table.host == "pooled"].iloc[0]
    assert list(hosts.host) == names and set(hosts.host_status) == {"ok"}
    assert pooled.iops == pytest.approx(hosts.iops.sum()) and pooled.total_ios == hosts.total_ios.sum()
    assert pooled.clat_p99_us == pool_outputs([run / "fio.json"], files="concurrent").clat_p99_us.iloc[0]
    assert hosts.clat_p99_us.min() <= pooled.clat_p99_us <= hosts.clat_p99_us.max()
    for name in ("fio.json", "hosts.list", "hosts.json", "job.fio"):
        assert (run / name).exists()
    assert all(
        json.loads((run / "hosts" / h.folder / "system.json").read_text())["kernel"] for h in loopback_servers.hosts
    )  # this machine: its snapshot is taken without a prefix
    assert "Starting 1 process" not in (table.fio_warnings.iloc[0] or "")


@pytest.mark.skipif(not is_root or not hostlib.netns_allowed(), reason="network namespaces need root and ip")
def test_servers_in_network_namespaces_are_stopped_and_removed(scratch, runs):
    with hostlib.local_servers(2) as servers:
        assert servers.kind.startswith("network namespaces")
        pids = [s.proc.pid for s in servers.servers]
        result = measure_hosts(on_hosts(JOB, scratch, servers.hosts), runs_dir=runs)
        names = [h.name for h in servers.hosts]
        assert list(result.table.host) == [*names, "pooled"]
        assert set(result.table.kernel.dropna()) == {os.uname().release}  # snapshots through `ip netns exec`
    assert not left_by(os.getpid())
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_host_killed_mid_run_is_marked_failed_and_the_other_kept(loopback_servers, scratch, runs):
    victim = loopback_servers.servers[0]

    def kill_soon():  # once the run is under way (it may first wait for its CPU's lock)
        from support.fio import wait_for_fio

        wait_for_fio(runs, timeout=60)
        time.sleep(1.0)
        os.killpg(victim.proc.pid, signal.SIGKILL)  # the server and the job it forked

    import threading

    threading.Thread(target=kill_soon, daemon=True).start()
    result = measure_hosts(on_hosts({**JOB, "runtime": "3s"}, scratch, loopback_servers.hosts), runs_dir=runs)
    t = result.table.set_index("host")
    dead, alive = victim.host.name, loopback_servers.hosts[1].name
    assert t.loc[dead, "host_status"] == "failed" and "disconnected" in t.loc[dead, "host_error"]
    assert t.loc[alive, "host_status"] == "ok" and t.loc[alive, "iops"] > 0
    assert "pooled" not in t.index  # one host reported: nothing to pool
    meta = json.loads((result.path / "run.json").read_text())
    assert meta["status"] == "ok" and dead in meta["hosts_failed"]


@pytest.mark.skipif(not is_root or not hostlib.netns_allowed(), reason="network namespaces need root and ip")
def test_writes_to_a_block_device_on_hosts_iolab_cannot_see_are_refused(loopdev, runs):
    with hostlib.local_servers(1) as servers:
        with pytest.raises(UnsafeTargetError, match="cannot see what that device holds"):
            measure_hosts(on_hosts({**JOB, "rw": "randwrite"}, loopdev, servers.hosts), runs_dir=runs)
    assert not runs.exists() or not list(runs.iterdir())


@pytest.mark.skipif(not is_root or not hostlib.netns_allowed(), reason="network namespaces need root and ip")
def test_sigkill_leaves_nothing_the_next_command_does_not_remove(tmp_path, own_ledger):
    code = (
        f"import os, signal, sys; sys.path.insert(0, {str(REPO / 'lib')!r})\n"
        "from iolab.machine import hosts\n"
        "s = hosts.start_local_servers(1)\n"
        "print(s.servers[0].proc.pid, s.namespaces[0][0], flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    pid, ns = out.split()
    assert ns in namespaces()
    from iolab.runs.repair import recover

    said = recover()
    assert ns not in namespaces() and any(ns in s for s in said)
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)


def test_search_spec_with_hosts(loopback_servers, tmp_path):
    from iolab.measure import search, search_spec

    spec = {
        "name": "h",
        "target": "scratch",
        "size": "32m",
        "base": {**JOB},
        "axes": {"iodepth": [1]},
        "hosts": ",".join(h.name for h in loopback_servers.hosts),
        "warmup": None,
    }
    os.environ["IOLAB_DATA"] = str(tmp_path / "data")
    try:
        table = search.run(search_spec.load_spec(spec), tmp_path / "runs", announce=None, progress=False)
    finally:
        del os.environ["IOLAB_DATA"]
    assert sorted(table.host) == sorted([*(h.name for h in loopback_servers.hosts), "pooled"])


def test_host_scaling_resumes_only_what_is_not_finished(loopback_servers, scratch, runs):
    """The many-hosts planner through the campaign loop: a run left interrupted (as SIGKILL
    leaves it, marked by repair) runs again, the finished ones are kept."""
    from iolab.studies.many_hosts import host_scaling

    def scale():
        return host_scaling(scratch, loopback_servers.hosts, JOB, rounds={"repeats": 1, "warmup": None}, runs_dir=runs)

    first = scale()
    done = sorted(p.parent for p in runs.glob("*/run.json"))
    assert len(done) == 2 and sorted(first.hosts_n.unique()) == [1, 2]
    meta = json.loads((done[0] / "run.json").read_text())
    (done[0] / "run.json").write_text(json.dumps({**meta, "status": "interrupted"}))
    again = scale()
    now = sorted(p.parent for p in runs.glob("*/run.json"))
    assert len(now) == 3 and done[1] in now  # one run again, the finished one kept
    assert sorted(again.run_id.unique()) == sorted({*again.run_id.unique()} - {done[0].name})
