"""Run folders with a missing, empty, cut-short or corrupt file: `iolab table` keeps the other
runs' rows and names the run, the file and what is wrong, one line each; `iolab threads`,
`iolab series` and `iolab check` of that run say so in one line (iolab.core.runfiles).

One real run (0.3 s of fio, psync, pinned, thread sampler and interval logs on) is made per
module and copied; each case damages one file of one copy and puts it back."""

import json
import shutil

import pytest

from iolab.cli import main
from iolab.core.errors import FioOutputError, RunSkipped
from iolab.runs import runcache
from support.cpus import CPU

FIO = {"rw": "randread", "ioengine": "psync", "runtime": "300ms", "bs": "4k"}
GARBAGE = b"\x00\xff\x1b[31mGARBAGE\x07\n"


def _half(data: bytes) -> bytes:
    """The first half, cut mid-line (one byte less when the half ends a line)."""
    cut = data[: len(data) // 2]
    return cut[:-1] if cut.endswith(b"\n") else cut


DAMAGE = {
    "missing": None,
    "empty": lambda d: b"",
    "half": _half,
    "garbage": lambda d: GARBAGE * 3,
    "[]": lambda d: b"[]",
    "{}": lambda d: b"{}",
    '"x"': lambda d: b'"x"',
}
JSON_TYPES = ("[]", "{}", '"x"')
NOT_READ = ("argv.json", "job.fio", "fio.stderr")  # kept for provenance: a table never judges them
OPTIONAL = ("params.json", "blockstat.json", "system.json", "checks.json", "series.json")  # missing: a run without
ANY_OBJECT = ("params.json", "system.json", "series.json")  # {} is a valid (empty) one
THREAD_FILES = ("samples_threads.csv", "threads.json")
CHECK_FILES = ("fio.json", "params.json", "system.json", "blockstat.json")
READ = (
    "run.json",
    "params.json",
    "fio.json",
    "samples_stat.csv",
    "samples_freq.csv",
    *THREAD_FILES,
    "blockstat.json",
    "system.json",
    "checks.json",
    "series.json",
)


def _cases():
    for name in READ:
        kinds = ["missing", "empty", "half", "garbage"] + (list(JSON_TYPES) if name.endswith(".json") else [])
        yield from ((name, kind) for kind in kinds)
    yield from ((name, kind) for name in NOT_READ for kind in ("missing", "garbage"))


def skipped(name: str, kind: str) -> bool:
    """Whether a table leaves the run out for this damage (the README's rule)."""
    if name in NOT_READ:
        return False
    if kind == "missing":
        return name not in OPTIONAL
    return not (kind == "{}" and name in ANY_OBJECT)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    tmp = tmp_path_factory.mktemp("corrupt")
    return measure(
        FIO,
        scratch_file(tmp / "scratch", "16m"),
        cpus=[CPU],
        runs_dir=tmp / "made",
        swept={"qd": 1, "repeat": 0},
        how={"threads": True, "log_ms": 100},
    ).path


def _copy(src, dst, logs=True):
    shutil.copytree(src, dst)
    meta = json.loads((dst / "run.json").read_text())
    (dst / "run.json").write_text(json.dumps({**meta, "run_id": dst.name}))
    if not logs:  # fio's interval logs cost a table most of its time; series.json stays
        for log in dst.glob("fio_*.log"):
            log.unlink()
    return dst


@pytest.fixture(scope="module")
def root(made, tmp_path_factory):
    """Three copies of the run, r0 r1 r2, with a warm table cache: each case re-derives r1 alone."""
    root = tmp_path_factory.mktemp("three")
    for name in ("r0", "r1", "r2"):
        _copy(made, root / name, logs=False)
    assert main(["table", str(root)]) == 0
    return root


def _damaged(path, kind):
    """Damage ``path`` as ``kind`` says; returns what puts it back."""
    original = path.read_bytes()
    if DAMAGE[kind] is None:
        path.unlink()
    else:
        path.write_bytes(DAMAGE[kind](original))
    return lambda: path.write_bytes(original)


def _one_line(err: str, command: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iolab {command}: "), err
    assert "Traceback" not in err and not set(err) & set("\x00\x07\x1b"), err
    return lines[0]


@pytest.mark.parametrize(("name", "kind"), list(_cases()))
def test_a_table_keeps_the_other_runs_and_names_the_file(root, name, kind, capsys):
    put_back = _damaged(root / "r1" / name, kind)
    try:
        assert main(["table", str(root)]) == 0
        out, err = capsys.readouterr()
        ids = {line.split(",", 1)[0] for line in out.splitlines()[1:]}
        assert "Traceback" not in err and not set(err) & set("\x00\x07\x1b"), err
        said = [line for line in err.splitlines() if "r1" in line]
        if skipped(name, kind):
            assert ids == {"r0", "r2"}, err
            assert len(said) == 1 and said[0].startswith(f"iolab table: skipping run {root / 'r1'}: "), err
            assert name in said[0], said[0]
        else:
            assert ids == {"r0", "r1", "r2"} and not said, err
        for command, files in (("threads", THREAD_FILES), ("check", CHECK_FILES)):
            if (
                name in files
                and skipped(name, kind)
                and (command == "threads" or kind not in ("missing", "{}") or name == "fio.json" and kind == "{}")
            ):
                assert main([command, str(root / "r1")]) == 1
                out, err = capsys.readouterr()
                assert not out and str(root / "r1" / name) in _one_line(err, command)
    finally:
        put_back()


@pytest.fixture(scope="module")
def with_logs(made, tmp_path_factory):
    return _copy(made, tmp_path_factory.mktemp("logs") / "s1")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("series.json", "empty"),
        ("series.json", "half"),
        ("series.json", "[]"),
        ("series.json", '"x"'),
        ("samples_stat.csv", "half"),
        ("fio_clat.1.log", "half"),
        ("fio_iops.1.log", "garbage"),
    ],
)
def test_series_of_a_damaged_run_is_one_line(with_logs, name, kind, capsys):
    put_back = _damaged(with_logs / name, kind)
    try:
        assert main(["series", str(with_logs)]) == 1
        out, err = capsys.readouterr()
        assert not out and str(with_logs / name) in _one_line(err, "series")
    finally:
        put_back()


def test_series_without_a_readable_report_says_which_file(with_logs, capsys):
    """An interrupted run's fio.json may be cut short: the series is read, and the note says why
    fio's report is not compared."""
    put_back = _damaged(with_logs / "fio.json", "half")
    try:
        assert main(["series", str(with_logs)]) == 0
        err = capsys.readouterr().err
        assert "fio.json is cut short" in _one_line(err, "series") and "not compared" in err
    finally:
        put_back()


def test_check_of_many_runs_checks_the_others(root, capsys):
    put_back = _damaged(root / "r1" / "fio.json", "garbage")
    try:
        assert main(["check", str(root)]) in (1, 3)  # 3 when a good run is flagged (a busy shared disk)
        out, err = capsys.readouterr()
        assert out.count(str(root / "r0")) == 1 and out.count(str(root / "r2")) == 1
        assert "1 could not be read" in out and "fio.json is not JSON" in _one_line(err, "check")
    finally:
        put_back()


def test_the_notebooks_loaders_warn_by_name(root):
    """runcache.load_runs (the notebooks' loader) warns with RunSkipped and keeps the other rows."""
    put_back = _damaged(root / "r1" / "run.json", "{}")
    try:
        with pytest.warns(RunSkipped, match=r"r1: run.json has no 'run_id'"):
            table = runcache.load_runs(root)
        assert set(table["run_id"]) == {"r0", "r2"}
    finally:
        put_back()


def test_pooling_a_damaged_report_names_it(root):
    from iolab.read.pool import pool_outputs, report_of

    put_back = _damaged(root / "r1" / "fio.json", "garbage")
    try:
        with pytest.raises(FioOutputError, match=r"r1/fio.json: no fio JSON output found") as got:
            pool_outputs([report_of(root / "r0"), report_of(root / "r1")])
        assert not set(str(got.value)) & set("\x00\x07\x1b")
    finally:
        put_back()


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d.update(jobs=[]), "holds no job"),
        (lambda d: d["jobs"][0].update(read=None, write=None, trim=None), "no read, write or trim figures"),
    ],
)
def test_a_report_with_no_figures_is_damaged_not_a_row_of_zeros(root, edit, words, capsys):
    """Valid JSON that lost its jobs or its figures is skipped by name, never a made-up row."""
    report = root / "r1" / "fio.json"
    original = report.read_bytes()
    doc = json.loads(original)
    edit(doc)
    report.write_text(json.dumps(doc))
    try:
        assert main(["table", str(root)]) == 0
        out, err = capsys.readouterr()
        assert {line.split(",", 1)[0] for line in out.splitlines()[1:]} == {"r0", "r2"}
        assert "skipping run" in err and "fio.json" in err and words in err, err
    finally:
        report.write_bytes(original)
