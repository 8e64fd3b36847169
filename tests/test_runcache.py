"""The cached table of a folder of runs (iolab.runs.runcache) and `iolab table`: equal to a fresh
runcache.load_runs, re-deriving only what changed, never failing on its cache."""

import json
import os
import shutil
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from iolab.core.errors import IolabError
from iolab.runs import runcache, store

FIO = {"rw": "randread", "ioengine": "psync", "runtime": "300ms"}


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """Two real 1-second fio runs (qd 1 and 2), copied by the tests to make more."""
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    tmp = tmp_path_factory.mktemp("real")
    target = scratch_file(tmp / "scratch", "16m")
    return [
        measure(FIO, target, runs_dir=tmp / "runs", swept={"qd": qd, "repeat": 0}, label=f"qd{qd}").path
        for qd in (1, 2)
    ]


def copy_run(src, root, name, status=None, **swept):
    """A copy of run folder ``src`` as ``root/name``: its own run_id, maybe another status
    and other swept values."""
    dst = root / name
    shutil.copytree(src, dst)
    meta = json.loads((dst / "run.json").read_text())
    meta["run_id"] = name.rsplit("/", 1)[-1]
    meta["status"] = status or meta["status"]
    (dst / "run.json").write_text(json.dumps(meta))
    if swept:
        params = json.loads((dst / "params.json").read_text())
        params["swept"].update(swept)
        (dst / "params.json").write_text(json.dumps(params))
    return dst


@pytest.fixture
def folder(tmp_path, real_runs):
    """Runs whose columns differ in type from run to run, a failed and an interrupted one,
    one without a report, and a warm-up sub-folder that is not part of the folder's table."""
    root = tmp_path / "runs"
    root.mkdir()
    a, b = real_runs
    copy_run(a, root, "r00", bs="4k")
    copy_run(b, root, "r01", bs=4096)  # bs: numbers and strings -> object
    r02 = copy_run(a, root, "r02", bs="4k", note=None)  # None -> an object column in one run
    snap = json.loads((r02 / "system.json").read_text())
    snap["governor"] = {str(cpu): "performance" for cpu in snap.get("cpus_online") or [0]}
    (r02 / "system.json").write_text(json.dumps(snap))  # governor: text here, NaN elsewhere
    copy_run(a, root, "r03", bs="4k", knobs={"read_ahead_kb": 128}, flag=True)  # dict -> JSON text
    copy_run(b, root, "r04", "failed", bs="8k", qd=2.5)  # qd: int and float -> float64
    (copy_run(a, root, "r05", "interrupted") / "fio.json").unlink()  # no report: skipped, warned
    (root / "warmup").mkdir()
    copy_run(a, root, "warmup/w00")
    return root


@pytest.fixture
def derived(monkeypatch):
    """The run folders store.run_record is called on, by name."""
    calls = []
    real = store.run_record

    def counting(path, *args):
        calls.append(os.path.basename(path))
        return real(path, *args)

    monkeypatch.setattr(store, "run_record", counting)
    return calls


def fresh(root, status="ok"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runcache.load_runs(root, status)


def cached(root, status="ok", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return runcache.load_cached(root, status, **kw)


STATUSES = ("ok", None, "failed", "interrupted")


def plain(root, status="ok"):
    """The table as load_runs built it before it read runs without pandas: pd.concat of
    store.run_table of each run with that status that can be read, then each row's run folder."""
    frames, folders = [], []
    for path in sorted(root.glob("*/run.json")):
        try:
            if not status or store.read_run(path.parent)["status"] == status:
                frames.append(store.run_table(path.parent))
                folders += [str(path.parent.absolute())] * len(frames[-1])
        except (OSError, ValueError, IolabError):
            continue
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    table["run_folder"] = pd.Series(folders, dtype=table["run_id"].dtype)  # the loader's last column
    return table


@pytest.mark.parametrize("pool", [False, True])
def test_the_table_is_the_plain_one_exactly(folder, real_runs, pool, monkeypatch):
    """load_runs and load_cached (cold, warm, no cache) read each run without a DataFrame
    (store.run_record), in worker processes when there are many: the same frame, bit for
    bit, as pd.concat of each run's store.run_table. With a job that did no IO (a row
    without latencies), a job named by a number (a column pandas types as object: its
    frame decides) and a swept integer beyond 64 bits."""
    odd = copy_run(real_runs[0], folder, "r06", bs="4k", big=2**70)
    report = json.loads((odd / "fio.json").read_text())
    idle = json.loads(json.dumps(report["jobs"][0]))
    for rw in ("read", "write", "trim"):
        idle[rw].update(total_ios=0, io_bytes=0)
    report["jobs"].append({**idle, "jobname": 7})
    (odd / "fio.json").write_text(json.dumps(report))
    if pool:  # workers for any number of runs, forked, two runs to a task
        monkeypatch.setattr(runcache, "POOL_FROM", 1)
        monkeypatch.setattr(runcache, "CHUNK", 2)
        monkeypatch.setattr(runcache.threading, "active_count", lambda: 1)
    for status in STATUSES:
        want = plain(folder, status)
        pd.testing.assert_frame_equal(fresh(folder, status), want, check_exact=True)
        pd.testing.assert_frame_equal(cached(folder, status, cache=False), want, check_exact=True)
        (folder / runcache.CACHE_NAME).unlink(missing_ok=True)
        for _ in range(2):  # cold, then from the cache
            pd.testing.assert_frame_equal(cached(folder, status), want, check_exact=True)
    odd = cached(folder, None).query("run_id == 'r06'")
    assert odd["direction"].tolist() == ["read", "none"] and odd["job"].iloc[1] == 7 and odd["big"].iloc[0] == 2**70


def test_a_cached_load_equals_a_fresh_one(folder, derived):
    for status in STATUSES:
        pd.testing.assert_frame_equal(cached(folder, status), fresh(folder, status))
    assert (folder / runcache.CACHE_NAME).is_file()
    table = cached(folder, None)
    assert table["run_id"].tolist() == ["r00", "r01", "r02", "r03", "r04"]  # not warmup/w00
    assert table["bs"].tolist() == ["4k", 4096, "4k", "4k", "8k"] and table["bs"].dtype == object
    assert table["knobs"].iloc[3] == '{"read_ahead_kb": 128}' and table["qd"].dtype == "float64"
    assert table["governor"].iloc[2] == "performance" and table["governor"].dtype == object


def test_a_warm_load_derives_nothing(folder, derived):
    cached(folder)
    derived.clear()
    cached(folder, None)
    cached(folder, "failed")
    assert derived == []


def test_a_new_run_is_the_only_one_derived(folder, real_runs, derived):
    cached(folder)
    derived.clear()
    copy_run(real_runs[1], folder, "r00a", bs=4096)  # sorts between r00 and r01
    table = cached(folder)
    assert derived == ["r00a"]
    assert table["run_id"].tolist() == ["r00", "r00a", "r01", "r02", "r03"]
    pd.testing.assert_frame_equal(table, fresh(folder))


def test_a_changed_status_is_picked_up(folder, derived):
    cached(folder)
    meta = json.loads((folder / "r01" / "run.json").read_text())
    meta.update(status="interrupted", error="marked interrupted by a repair")
    (folder / "r01" / "run.json").write_text(json.dumps(meta, indent=2))
    derived.clear()
    table = cached(folder)
    assert derived == ["r01"] and "r01" not in table["run_id"].tolist()
    assert cached(folder, "interrupted")["run_id"].tolist() == ["r01"]
    for status in STATUSES:
        pd.testing.assert_frame_equal(cached(folder, status), fresh(folder, status))


def test_every_file_of_a_run_is_watched(folder, derived):
    """Any file of a run folder rewritten (other content, a later mtime), removed or added
    re-derives that run alone: the producers' files too, not run.json and params.json only."""
    cached(folder)
    run = folder / "r00"
    for path in sorted(run.iterdir()):
        st = path.stat()
        path.write_bytes(path.read_bytes() + b"\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        derived.clear()
        cached(folder)
        assert derived == ["r00"], path.name
    for change in (lambda: (run / "checks.json").unlink(), lambda: (run / "notes.txt").write_text("x")):
        change()
        derived.clear()
        table = cached(folder)
        assert derived == ["r00"]
    pd.testing.assert_frame_equal(table, fresh(folder))


def test_a_changed_fio_json_changes_the_table(folder, derived):
    """fio.json edited in place to the same size, its mtime put back: the new IOPS, not the cached
    ones (the stamp has ctime, which no tool can set)."""
    before = cached(folder)
    report = folder / "r00" / "fio.json"
    st, text = report.stat(), report.read_text()
    at = next(i for i in range(text.index('"iops"'), len(text)) if text[i].isdigit())
    report.write_text(text[:at] + ("2" if text[at] != "2" else "3") + text[at + 1 :])
    os.utime(report, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert report.stat().st_size == st.st_size and report.stat().st_mtime_ns == st.st_mtime_ns
    derived.clear()
    after = cached(folder)
    assert derived == ["r00"]
    iops = [t.loc[(t.run_id == "r00") & (t.direction == "read"), "iops"].iloc[0] for t in (before, after)]
    assert iops[0] != iops[1]
    pd.testing.assert_frame_equal(after, fresh(folder))


def test_a_removed_run_loses_its_rows(folder, derived):
    cached(folder)
    shutil.rmtree(folder / "r01")  # the only run with a number in bs: bs is text again
    derived.clear()
    table = cached(folder)
    assert derived == [] and "r01" not in table["run_id"].tolist()
    pd.testing.assert_frame_equal(table, fresh(folder))
    assert pd.api.types.is_string_dtype(table["bs"]) and all(isinstance(v, str) for v in table["bs"])  # pandas 2 and 3
    assert runcache._read_cache(folder).runs.keys() == {"r00", "r02", "r03", "r04", "r05"}


def test_skipped_runs_are_warned_about_as_load_runs_does(folder):
    for status in STATUSES:
        for _ in range(2):  # cold, then from the cache
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                runcache.load_cached(folder, status)
            with warnings.catch_warnings(record=True) as theirs:
                warnings.simplefilter("always")
                runcache.load_runs(folder, status)
            assert [str(w.message) for w in ours] == [str(w.message) for w in theirs], status
    assert "r05 holds no report" in str(theirs[0].message)


def test_a_run_folder_copied_beside_its_original_is_read_once_and_said(tmp_path, real_runs):
    """A copy of a run folder (same run id) counts once: summed or counted by run, its IOs
    would be there twice. The first folder in name order is kept, the copy skipped with a
    warning, cached or not; a study that holds only the copy reads it."""
    root = tmp_path / "runs"
    root.mkdir()
    a, _ = real_runs
    copy_run(a, root, "r00")
    shutil.copytree(root / "r00", root / "r00 copy")
    for load in (runcache.load_runs, runcache.load_cached, runcache.load_cached):  # cold, then cached
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            table = load(root)
        assert set(table["run_folder"]) == {str((root / "r00").absolute())}, load
        assert [str(w.message) for w in said] == [
            f"skipping run {(root / 'r00 copy').absolute()}: it holds run r00, as {(root / 'r00').absolute()} "
            "does (a copy?), and its rows would count twice; keep one of the two"
        ]


@pytest.mark.parametrize("damage", [b"not parquet at all", "truncated", b""])
def test_a_damaged_cache_is_rebuilt(folder, derived, damage):
    cached(folder)
    path = folder / runcache.CACHE_NAME
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2] if damage == "truncated" else damage)
    derived.clear()
    table = cached(folder)
    assert sorted(derived) == ["r00", "r01", "r02", "r03", "r04", "r05"]
    pd.testing.assert_frame_equal(table, fresh(folder))
    assert runcache._read_cache(folder) is not None


def test_a_cache_of_another_format_is_rebuilt(folder, derived, monkeypatch):
    cached(folder)
    monkeypatch.setattr(runcache, "CACHE_VERSION", runcache.CACHE_VERSION + 1)
    derived.clear()
    table = cached(folder)
    assert sorted(derived) == ["r00", "r01", "r02", "r03", "r04", "r05"]
    pd.testing.assert_frame_equal(table, fresh(folder))


def test_a_folder_that_cannot_be_written_loads_without_a_cache(folder, monkeypatch):
    def refuse(path, write):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(runcache, "_replace", refuse)
    pd.testing.assert_frame_equal(cached(folder, None), fresh(folder, None))
    assert not (folder / runcache.CACHE_NAME).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a read-only folder")
def test_a_read_only_folder_loads_without_a_cache(folder):
    folder.chmod(0o555)
    try:
        pd.testing.assert_frame_equal(cached(folder), fresh(folder))
        assert not (folder / runcache.CACHE_NAME).exists()
    finally:
        folder.chmod(0o755)


def test_no_cache_reads_and_writes_none(folder):
    pd.testing.assert_frame_equal(cached(folder, cache=False), fresh(folder))
    assert not (folder / runcache.CACHE_NAME).exists()


def test_two_loaders_at_once_leave_a_good_cache(folder, real_runs):
    for i in range(6):
        copy_run(real_runs[i % 2], folder, f"r1{i}")
    code = "import sys, iolab.runs.runcache as r; print(len(r.load_cached(sys.argv[1])))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o.strip() for o, _ in outs] == ["10", "10"]
    assert runcache._read_cache(folder) is not None
    assert not list(folder.glob(".*.tmp"))
    pd.testing.assert_frame_equal(cached(folder), fresh(folder))


def test_empty_and_missing_folders(tmp_path):
    assert cached(tmp_path).empty and cached(tmp_path / "nowhere").empty
    assert not (tmp_path / runcache.CACHE_NAME).exists()


def test_a_symbolic_link_loop_beside_runs_hides_only_itself(tmp_path, real_runs):
    """Two links that point at each other cannot be looked at (ELOOP): they are not folders,
    and the runs beside them are read (the whole listing was given up, "holds no run folders")."""
    from iolab.core.runfolders import runs_under

    root = tmp_path / "runs"
    root.mkdir()
    copy_run(real_runs[0], root, "r00")
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    assert runs_under(root) == [root / "r00"]
    assert list(fresh(root)["run_id"].unique()) == ["r00"] and list(cached(root)["run_id"].unique()) == ["r00"]


def test_a_single_run_folder_is_loaded_as_load_runs_does(real_runs):
    pd.testing.assert_frame_equal(cached(real_runs[0]), fresh(real_runs[0]))
    assert not (real_runs[0] / runcache.CACHE_NAME).exists()


def test_write_parquet_keeps_mixed_columns_as_text(tmp_path):
    frame = pd.DataFrame({"bs": ["4k", 4096, None], "qd": [1, 2, 3]})
    runcache.write_parquet(frame, tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert back["bs"].tolist()[:2] == ["4k", "4096"] and pd.isna(back["bs"].iloc[2])
    assert back["qd"].tolist() == [1, 2, 3] and not list(tmp_path.glob(".*.tmp"))


# ---------------------------------------------------------------- iolab table
def iolab(*args):
    """``iolab ARGS`` in this process (support.cli.cli_here): pandas and pyarrow imported once."""
    from support.cli import cli_here

    return cli_here(*args)


def test_cli_prints_csv_and_json(folder):
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "table", str(folder)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("run_id,") and len(lines) == 1 + 4
    assert (folder / runcache.CACHE_NAME).is_file()
    rows = json.loads(iolab("table", folder, "--format", "json", "--status", "all").stdout)
    assert [r["run_id"] for r in rows] == ["r00", "r01", "r02", "r03", "r04"]
    assert [r["bs"] for r in rows] == ["4k", 4096, "4k", "4k", "8k"]
    failed = iolab("table", folder, "--status", "failed", "--no-cache")
    assert failed.stdout.count("\nr04,") == 1 and "r05 holds no report" not in failed.stderr


def test_cli_writes_parquet_to_a_file(folder, tmp_path):
    out = iolab("table", folder, "--format", "parquet")
    assert out.returncode == 1 and "add --output FILE" in out.stderr and not out.stdout
    out = iolab("table", folder, "--format", "parquet", "--output", tmp_path / "t.parquet", "--status", "all")
    assert out.returncode == 0 and "5 rows of 5 runs" in out.stderr
    assert "iolab table: skipping run" in out.stderr and "r05 holds no report" in out.stderr
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert back["run_id"].tolist() == ["r00", "r01", "r02", "r03", "r04"] and back["bs"].iloc[1] == "4096"


def test_cli_input_errors_are_one_line(tmp_path, folder):
    (tmp_path / "deeper").mkdir()
    (tmp_path / "deeper" / "studies").symlink_to(tmp_path)  # the runs two levels below: not read, one found
    above = iolab("table", tmp_path, "--format", "json")  # a folder of study folders: each read, and said so
    assert above.returncode == 0 and len(json.loads(above.stdout)) == 4, above.stderr
    assert f"the runs of the 1 folder(s) in {tmp_path} (e.g. {folder.name})" in above.stderr
    alone = iolab("table", folder, "--format", "json")  # a study's folder: its runs, its warm-up said, not read
    assert len(json.loads(alone.stdout)) == 4 and "are not part of it (give a sub-folder" in alone.stderr
    for args, words in [
        ((tmp_path / "nowhere",), "no such folder"),
        ((folder / "r00" / "fio.json",), "fio.json is a file, not a folder; give the folder"),
        ((tmp_path / "deeper",), "holds no run folders (<run>/run.json), nor do its folders; give the folder"),
        ((folder / "r05",), "r05 holds no ok run that can be read (it has 1 interrupted)"),
        (
            (folder, "--status", "interrupted", "--no-cache"),
            "holds no interrupted run that can be read (it has 4 ok, 1 failed, 1 interrupted)",
        ),
    ]:
        out = iolab("table", *args)
        assert out.returncode == 1 and not out.stdout, out
        assert out.stderr.startswith("iolab table: ") and words in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


# ---------------------------------------------------------------- the readers without pandas
def test_the_samplers_summary_is_summarise_exactly(real_runs, tmp_path):
    """samples.run_columns reads plain sampler files without pandas (runfiles.csv_columns,
    samples._summary): the same dict as summarise of the pandas frames, bit for bit, key
    order and types too; files it does not read as plain go to summarise itself."""
    from iolab.core import runfiles
    from iolab.read import samples

    def stat_rows(run, edit):
        lines = (run / samples.STAT_FILE).read_text().splitlines()
        (run / samples.STAT_FILE).write_text("\n".join([lines[0], *edit(lines[1:])]) + "\n")

    def second_cpu(rows):  # another CPU (7), a little busier than CPU 0; its rows after CPU 0's
        out = []
        for row in rows:
            cells = row.split(",")
            busier = (str(int(c) + 7 * i) for i, c in enumerate(cells[2:10]))  # the host columns as they are
            out += [row, ",".join([cells[0], "7", *busier, *cells[10:]])] if cells[1] == "0" else [row]
        return out

    def cell(rows, col, value):  # the last row's cell ``col`` set to ``value``
        cells = rows[-1].split(",")
        cells[col] = value
        return [*rows[:-1], ",".join(cells)]

    variants = {
        "as made": lambda run: None,
        "another cpu": lambda run: stat_rows(run, second_cpu),
        "whole seconds": lambda run: stat_rows(
            run, lambda rows: [f"{i}," + r.split(",", 1)[1] for i, r in enumerate(rows)]
        ),
        "no host columns": lambda run: (run / samples.STAT_FILE).write_text(
            "".join(",".join(r.split(",")[:10]) + "\n" for r in (run / samples.STAT_FILE).read_text().splitlines())
        ),
        "a row twice": lambda run: stat_rows(run, lambda rows: [*rows, rows[-1]]),
        "a float counter": lambda run: stat_rows(run, lambda rows: cell(rows, 2, rows[-1].split(",")[2] + ".5")),
        "a source pandas reads as NA": lambda run: (run / samples.FREQ_FILE).write_text(
            (run / samples.FREQ_FILE).read_text().replace("proc_cpuinfo", "None").replace("scaling_cur_freq", "None")
        ),
    }
    for name, change in variants.items():
        run = copy_run(real_runs[0], tmp_path, name.replace(" ", "-"))
        change(run)
        want = samples.summarise(samples.Samples.read(run), fio_cpu=samples.fio_cpu_pct(run))
        got = samples.run_columns(run)
        stat = runfiles.csv_columns(run / samples.STAT_FILE, numeric=(*samples.STAT_COLUMNS, *samples.HOST_FIELDS))
        freq = runfiles.csv_columns(run / samples.FREQ_FILE, numeric=samples.FREQ_COLUMNS[:3])
        quick = stat and freq and samples._summary(stat, freq, samples.fio_cpu_pct(run))
        assert bool(quick) == (name in ("as made", "another cpu", "whole seconds", "no host columns")), name
        assert list(got) == list(want), name
        for key, value in want.items():
            same = value == got[key] or value != value and got[key] != got[key]
            assert same and type(value) is type(got[key]), (name, key, value, got[key])


@pytest.mark.parametrize(
    "text, plain",
    [
        ("a,b,c\n1,2.5,x\n-3,1e-06,y\n", True),
        ("a,b,c\n007,.5,x\n9223372036854775807,2.,y\n", True),
        ("a,b,c\n1,2,x\n99999999999999999999,3,y\n", False),  # beyond int64: pandas' own types
        ('a,b,c\n1,2,"x,y"\n', False),  # quoted
        ("a,b,c\n1,,x\n", False),  # a blank cell: NaN for pandas
        ("a,b,c\n1,2,x\n\n3,4,y\n", False),  # a blank line, which pandas skips
        ("a,b,c\n1,+2,x\n", False),
        ("a,b,c\n1,nan,x\n", False),
        ("a,b\n1,2,3\n", False),  # ragged
    ],
)
def test_plain_csv_is_read_as_pandas_reads_it(tmp_path, text, plain):
    """runfiles.csv_columns: the numbers of a plain CSV as pandas.read_csv types and parses
    them; None (read_csv decides) for anything less plain."""
    from iolab.core import runfiles

    path = tmp_path / "f.csv"
    path.write_text(text)
    got = runfiles.csv_columns(path, numeric=("a", "b"))
    assert (got is not None) == plain
    if plain:
        frame = pd.read_csv(path)
        assert list(got) == list(frame.columns)
        for col in ("a", "b"):
            assert got[col] == frame[col].tolist()
            assert [type(v) for v in got[col]] == [type(v) for v in frame[col].tolist()]


# ---------------------------------------------------------------- the worker processes
LOADER = """
import multiprocessing, sys, time
from pathlib import Path
from iolab.core import signals
from iolab.runs import runcache
signals.raise_always()  # as the iolab command does: SIGTERM raises in this process
runcache.POOL_FROM, runcache.CHUNK = 1, 8  # a pool for a few runs
parts = runcache._derive_all([(f"r{i}", Path(sys.argv[1]), None) for i in range(32)], "ok", lazy=True)
next(parts)
print(*[p.pid for p in multiprocessing.active_children()], flush=True)
time.sleep(60)
"""


def _proc_stat(pid):
    """(state, start time in ticks) of ``pid`` from /proc/PID/stat; None when it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[19])


def _ended(pid, start, timeout_s=5.0):
    """Whether ``pid`` (started at ``start``) is gone or a zombie within ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = _proc_stat(pid)
        if now is None or now[1] != start or now[0] == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: runs are read without worker processes")
def test_workers_die_with_their_loader_even_by_sigkill(real_runs):
    """A SIGKILLed loader (`iolab table` killed) leaves no worker behind, parent 1, blocked
    forever; and a worker ends on SIGTERM (iolab's own handler, inherited at fork, is not kept)."""
    proc = subprocess.Popen([sys.executable, "-c", LOADER, str(real_runs[0])], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in proc.stdout.readline().split()]
        assert len(workers) >= 2
        starts = {pid: _proc_stat(pid)[1] for pid in workers}
        for pid in workers:
            caught = int(open(f"/proc/{pid}/status").read().split("SigCgt:")[1].split()[0], 16)
            assert not caught & (1 << (15 - 1)), "a worker catches SIGTERM"
        proc.kill()
        proc.wait()
        assert [pid for pid in workers if not _ended(pid, starts[pid])] == []
    finally:
        proc.kill()
        proc.wait()


def test_a_run_folder_another_user_cannot_read_is_named_not_dropped(real_runs):
    """As another user, a run folder without read permission vanished from `iolab table`
    (5 rows for 6 runs, exit 0, no word); docs/refuses.md promises "left out, and said"."""
    import os
    import tempfile
    from pathlib import Path

    from support.nobody import NOBODY, run_as_nobody
    from support.paths import REPO

    root = Path(tempfile.mkdtemp(prefix="iolab-shared-runs-"))  # a folder both users reach (pytest's is root's)
    try:
        theirs = copy_run(real_runs[0], root, "theirs")
        mine = copy_run(real_runs[1], root, "mine")
        for path in (root, mine, *mine.iterdir()):
            os.chown(path, NOBODY, NOBODY)
        theirs.chmod(0o700)  # root's, private
        argv = [REPO / ".venv" / "bin" / "python", "-m", "iolab.cli", "table", root, "--format", "json"]
        env = {**os.environ, "HOME": str(root)}
        done = run_as_nobody(argv, capture_output=True, text=True, timeout=120, env=env)
    finally:
        shutil.rmtree(root)
    assert done.returncode == 0, done.stderr
    assert [r["run_id"] for r in json.loads(done.stdout)] == ["mine"]
    assert f"skipping {theirs}: cannot read it (no permission" in done.stderr
