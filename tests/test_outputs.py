"""Never destroy a user's file (iolab.core.outputs): every output option of every command, given
a user's file or a folder holding one, is refused in one line and leaves the file as it was
(sha256), unless --force; iolab's own earlier outputs are replaced without it; the commands that
execute notebooks refuse before any runs. And the CPU lock files: not world-writable, and what
another user wrote in one reaches the terminal escaped."""

import fcntl
import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import nbformat
import pytest

from iolab.cli import build_parser, main
from iolab.core import owned, paths
from iolab.core.errors import BusyError, OutputExists
from iolab.core.outputs import FOLDER_MARK, claim_folder, claim_output, folder_is_owned, write_output
from support.cpus import CPU
from support.fio import QUICK
from support.notebooks import manifest, tiny_notebook

PRECIOUS = "a user's data, never to be replaced\n"


class Reached(BaseException):
    """A notebook would have been executed: the refusal came too late."""


@pytest.fixture(autouse=True)
def own_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))


@pytest.fixture
def no_execution(monkeypatch):
    """Executing a notebook raises Reached, wherever it is called from."""

    def reached(*args, **kw):
        raise Reached(args[1] if len(args) > 1 else kw)

    for module in ("iolab.report.publish", "iolab.report.demo", "iolab.report.reproduce"):
        monkeypatch.setattr(f"{module}.execute", reached)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder holding one real 0.3 s fio run, and a copy of it: compare's two sides."""
    from iolab.machine.target import scratch_file
    from iolab.measure.runner import measure

    tmp = tmp_path_factory.mktemp("outputs")
    measure(QUICK, scratch_file(tmp / "s", "16m"), cpus=[CPU], runs_dir=tmp / "a")
    shutil.copytree(tmp / "a", tmp / "b")
    return tmp / "a", tmp / "b"


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def users(path: Path) -> Path:
    """A file of the user's at ``path`` (its folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PRECIOUS)
    return path


def refused(capsys, argv, *precious, says="iolab did not write") -> str:
    """``iolab ARGV`` exits 1 with one line on stderr saying ``says``; ``precious`` unchanged."""
    before = {p: (sha(p), owned.is_owned(p)) for p in precious}
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith(f"iolab {argv[0]}: "), lines
    assert {p: (sha(p), owned.is_owned(p)) for p in precious} == before  # nor claimed as iolab's
    return lines[0]


def executed_notebook(path: Path, **iolab) -> Path:
    """A notebook as papermill leaves it (a code cell with its output), no kernel needed."""
    cell = nbformat.v4.new_code_cell("print('hello')")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    cell.execution_count = 1
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A study"), cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if iolab:
        nb.metadata["iolab"] = iolab
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# ---------------------------------------------------------------- the guard itself
def test_the_guard_replaces_only_what_iolab_wrote(tmp_path):
    new = write_output(tmp_path / "new.csv", "1\n")
    assert owned.is_owned(new) and write_output(new, "2\n").read_text() == "2\n"  # its own: replaced
    theirs = users(tmp_path / "theirs.csv")
    with pytest.raises(OutputExists, match="theirs.csv exists and iolab did not write it: give --force"):
        claim_output(theirs)
    assert write_output(theirs, "3\n", force=True).read_text() == "3\n" and owned.is_owned(theirs)
    with pytest.raises(OutputExists, match="is an input of this command"):
        claim_output(new, inputs=[tmp_path / "." / "new.csv"])  # iolab's, but read by the same command
    with pytest.raises(OutputExists, match="is a folder"):
        claim_output(tmp_path, force=True)
    os.link(new, tmp_path / "hard.csv")  # a hard link to iolab's file may be a user's name for it
    with pytest.raises(OutputExists):
        claim_output(tmp_path / "hard.csv")


def test_a_folder_iolab_made_is_marked_and_a_users_file_in_it_stays_theirs(tmp_path, monkeypatch):
    out = claim_folder(tmp_path / "out")
    assert folder_is_owned(out) and (out / FOLDER_MARK).exists()
    write_output(out / "index.html", "<p>one</p>")
    claim_folder(out)  # iolab's, holding its own page: fine again
    dropped = users(out / "notes.html")
    claim_folder(out)  # the folder is still iolab's ...
    with pytest.raises(OutputExists, match="notes.html exists and iolab did not write it"):
        write_output(dropped, "<p>two</p>")  # ... but not the file a user put in it
    assert dropped.read_text() == PRECIOUS
    theirs = users(tmp_path / "theirs" / "a.txt").parent
    with pytest.raises(OutputExists, match="holds files iolab did not write .e.g. a.txt.: give --force"):
        claim_folder(theirs)
    assert not folder_is_owned(theirs)
    assert claim_folder(theirs, force=True) and folder_is_owned(theirs)
    monkeypatch.setattr(paths, "PAPERMILL_RUNS", tmp_path / "papermill_runs")  # a checkout's: git gives it a README
    readme = users(tmp_path / "papermill_runs" / "README.md")
    assert folder_is_owned(claim_folder(readme.parent)) and folder_is_owned(claim_folder(readme.parent / "seeds"))
    with pytest.raises(OutputExists):
        claim_output(readme)  # iolab's folder by place; the README in it is not iolab's output
    with pytest.raises(OutputExists, match="is a file, not a folder"):
        claim_folder(users(tmp_path / "file"), force=True)


def test_every_output_option_has_the_one_force_flag():
    """Every command with an option naming a file or folder to write (--output, --html, --out;
    nvmelab's papermill_runs/ files) takes --force, said in its help; no other spelling."""
    parser = build_parser()
    sub = next(a for a in parser._actions if getattr(a, "choices", None) and "table" in a.choices)
    writers = {"nvmelab"}
    for name, command in sub.choices.items():
        flags = {s: a for a in command._actions for s in a.option_strings}
        assert not {"--overwrite", "--replace", "--clobber", "-f"} & set(flags), name
        if {"--output", "--html", "--out"} & set(flags) or name in writers:
            writers.add(name)
            assert "--force" in flags and "iolab did not write" in flags["--force"].help, name
    assert {"table", "compare", "publish", "batch", "seeds", "demo", "reproduce"} < writers


# ---------------------------------------------------------------- table --output, compare --html
def test_table_output(tmp_path, capsys, runs):
    theirs = users(tmp_path / "table.csv")
    for fmt in ("csv", "parquet"):
        refused(capsys, ["table", runs[0], "--output", theirs, "--format", fmt], theirs)
    refused(capsys, ["table", tmp_path / "no-runs-here-yet", "--output", theirs], theirs, says="no such folder")
    assert main(["table", str(runs[0]), "--output", str(theirs), "--force"]) == 0
    assert "run_id" in theirs.read_text() and owned.is_owned(theirs)
    theirs.write_text("")  # iolab's file, edited in place: still its inode, still iolab's
    assert main(["table", str(runs[0]), "--output", str(theirs)]) == 0 and "run_id" in theirs.read_text()


def test_a_users_file_named_as_the_table_cache_is_left_as_it_is(tmp_path, capsys, runs):
    folder = tmp_path / "runs"
    shutil.copytree(runs[0], folder)
    (folder / ".iolab-table.parquet").unlink(missing_ok=True)
    theirs = users(folder / ".iolab-table.parquet")
    before = sha(theirs)
    assert main(["table", str(folder), "--format", "csv"]) == 0 and "run_id" in capsys.readouterr().out
    assert sha(theirs) == before  # the table derived without a cache; the file not replaced


def test_a_users_file_named_as_a_searchs_spec_is_refused_before_any_run(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"name: guard\ntarget: scratch\nsize: 16m\ncpus: [{CPU}]\nrepeats: 1\n"
        "base: {rw: randread, bs: 4k, ioengine: psync, runtime: 300ms}\naxes: {iodepth: [1]}\n"
    )
    folder = tmp_path / "runs"
    sha_of_precious = hashlib.sha256(PRECIOUS.encode()).hexdigest()
    for name in ("search.yaml", "unavailable.json"):
        theirs = users(folder / name)
        capsys.readouterr()
        assert main(["search", str(spec), "--runs-dir", str(folder)]) == 1 and sha(theirs) == sha_of_precious
        said = capsys.readouterr().err.strip().splitlines()  # where the runs go, then the one error line
        assert said[-1].startswith("iolab search: ") and "is not a search's" in said[-1] and len(said) == 2
        assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [name]  # no run
        theirs.unlink()


def test_a_spec_run_from_its_own_runs_folder_is_left_as_written(tmp_path):
    folder = tmp_path / "study"
    folder.mkdir()
    spec = folder / "search.yaml"  # the user keeps the spec beside its runs: `iolab search search.yaml --runs-dir .`
    spec.write_text(
        f"# mine: every word of it\nname: own\ntarget: scratch\nsize: 16m\ncpus: [{CPU}]\nrepeats: 1\n"
        "base: {rw: randread, bs: 4k, ioengine: psync, runtime: 300ms}\naxes: {iodepth: [1]}\n"
    )
    written = spec.read_bytes()
    assert main(["search", str(spec), "--runs-dir", str(folder)]) == 0
    assert spec.read_bytes() == written and len(list(folder.glob("2*Z-iodepth1-*"))) == 1  # ran, spec as written


def test_compare_html(tmp_path, capsys, runs, monkeypatch):
    theirs = users(tmp_path / "compare.html")
    refused(capsys, ["compare", tmp_path / "nowhere-a", tmp_path / "nowhere-b", "--html", theirs], theirs)
    side_b = executed_notebook(tmp_path / "b.ipynb")
    owned.mark(side_b)  # an executed notebook iolab wrote, given as side B: still not to be replaced
    refused(capsys, ["compare", runs[0], side_b, "--html", side_b], side_b, says="is an input of this command")
    refused(capsys, ["compare", runs[0], runs[1], "--html", runs[1]], says="give a file")
    assert main(["compare", str(runs[0]), str(runs[1]), "--html", str(theirs), "--force"]) in (0, 3)
    assert "<html" in theirs.read_text() and owned.is_owned(theirs)
    theirs.write_text("")
    assert main(["compare", str(runs[0]), str(runs[1]), "--html", str(theirs)]) in (0, 3)
    assert "<html" in theirs.read_text()


# ---------------------------------------------------------------- publish -o
def test_publish_output(tmp_path, capsys):
    executed = executed_notebook(tmp_path / "nb.ipynb")
    beside = users(tmp_path / "nb.html")  # the default output: the notebook's name, .html
    refused(capsys, ["publish", executed], beside, executed)
    theirs = users(tmp_path / "w.html")
    refused(capsys, ["publish", executed, "-o", theirs], theirs, executed)
    assert main(["publish", str(executed), "-o", str(theirs), "--force"]) == 0
    assert "A study" in theirs.read_text() and owned.is_owned(theirs)
    theirs.write_text("")
    assert main(["publish", str(executed), "-o", str(theirs)]) == 0 and "A study" in theirs.read_text()


# ---------------------------------------------------------------- folders: batch, seeds, demo, reproduce, nvmelab
def test_batch_out(tmp_path, capsys, no_execution):
    path = manifest(tmp_path, runs=[{"name": "a", "parameters": {"x": 1}}])
    out = tmp_path / "out"
    theirs = users(out / "thesis.tex")
    refused(capsys, ["batch", path, "--out", out], theirs)
    assert not folder_is_owned(out)
    refused(capsys, ["batch", path, "--out", theirs], theirs, says="is a file, not a folder")
    ours = claim_folder(tmp_path / "ours")  # iolab's batch folder: a user's page or run file in it stays
    for dropped in (ours / "index.html", ours / "batch.json", ours / "a" / "tiny.ipynb"):
        users(dropped)
        refused(capsys, ["batch", path, "--out", ours], dropped)
        dropped.unlink()
    with pytest.raises(Reached):  # with --force the batch goes on to run
        main(["batch", str(path), "--out", str(out), "--force"])
    assert theirs.read_text() == PRECIOUS  # a file of no output's name is never touched


def test_seeds_out(tmp_path, capsys, no_execution):
    out = tmp_path / "seeds"
    theirs = users(out / "notes.txt")
    for extra in (["--dry-run"], []):
        refused(capsys, ["seeds", "--smoke", "--only", "000", "--cpus", CPU, "--out", out, *extra], theirs)
    ours = claim_folder(tmp_path / "ours")
    page = users(ours / "seed-000.html")
    refused(capsys, ["seeds", "--smoke", "--only", "000", "--cpus", CPU, "--out", ours], page)
    with pytest.raises(Reached):
        main(["seeds", "--smoke", "--only", "000", "--cpus", str(CPU), "--out", str(out), "--force"])


def test_demo_out(tmp_path, capsys, no_execution):
    out = tmp_path / "demo"
    theirs = users(out / "notes.txt")
    refused(capsys, ["demo", "--out", out], theirs)
    ours = claim_folder(tmp_path / "ours")
    for name in ("01_queue_depth_knee.ipynb", "04_flame_graph.html", "08_over_time.results.json"):
        dropped = users(ours / name)
        refused(capsys, ["demo", "--out", ours], dropped)
        dropped.unlink()
    with pytest.raises(Reached):
        main(["demo", "--out", str(out), "--force"])


def test_reproduce_out(tmp_path, capsys, no_execution):
    (tmp_path / "nb").mkdir()
    source = tiny_notebook(tmp_path / "nb" / "tiny.ipynb")
    executed = executed_notebook(tmp_path / "tiny.ipynb", results=[{"name": "double", "value": 2}], parameters={})
    nb = json.loads(executed.read_text())
    nb["metadata"]["papermill"] = {"input_path": str(source), "parameters": {}}
    executed.write_text(json.dumps(nb))
    out = tmp_path / "again"
    theirs = users(out / "tiny.ipynb")
    refused(capsys, ["reproduce", executed, "--out", out], theirs, executed)
    theirs.rename(out / "notes.txt")
    refused(capsys, ["reproduce", executed, "--out", out], out / "notes.txt", executed)
    with pytest.raises(Reached):
        main(["reproduce", str(executed), "--out", str(out), "--force"])


def test_nvmelab_refuses_before_the_boot(tmp_path):
    from iolab.nvmelab import vm as nvmelab

    nb = tiny_notebook(tmp_path / "tiny.ipynb")
    theirs = users(tmp_path / "out" / "tiny.nvmelab.html")
    with pytest.raises(OutputExists, match="tiny.nvmelab.html exists and iolab did not write it"):
        nvmelab.notebook_job(nb, {}, out_dir=tmp_path / "out")
    assert theirs.read_text() == PRECIOUS


# ---------------------------------------------------------------- run --scratch-dir
def test_a_users_file_named_as_the_scratch_file_is_neither_written_nor_claimed(tmp_path, capsys):
    theirs = users(tmp_path / "s" / "iolab-scratch.dat")
    argv = ["run", "--target", "scratch", "--scratch-dir", tmp_path / "s", "--target-size", "1m"]
    line = refused(capsys, [*argv, "--runs-dir", tmp_path / "runs", "--rw=randread", "--runtime=300ms"], theirs)
    assert str(theirs) in line and "move that file away, or choose another --scratch-dir" in line
    assert not owned.note_of(theirs).exists()


# ---------------------------------------------------------------- CPU lock files
def test_a_lock_file_is_not_world_writable_and_its_text_reaches_the_terminal_escaped(tmp_path):
    from iolab.machine import locks

    fresh = tmp_path / "cpu7.lock"
    with locks.locked(fresh, "CPU 7", wait_s=0):
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        assert f"pid {os.getpid()}" in locks.holder(fresh)
    hostile = tmp_path / "cpu9.lock"
    hostile.write_text(f"pid {os.getpid()} \x1b[2J\x1b]0;owned\x07\r\u202eevil " + "x" * 5000 + "\n")
    hostile.chmod(0o666)  # as an older iolab left it
    fd = os.open(hostile, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # its holder: this process, as the kernel says
    try:
        with pytest.raises(BusyError) as caught, locks.locked(hostile, "CPU 9", wait_s=0):
            pass
        said = str(caught.value)
        assert "\x1b" not in said and "\x07" not in said and "\r" not in said and "\u202e" not in said
        assert "\\x1b[2J\\x1b]0;owned\\x07\\r\\u202eevil" in said and len(said) < 600
        assert stat.S_IMODE(hostile.stat().st_mode) == 0o644  # made the owner's alone once opened
        hostile.write_text("pid 1 (root: a line another user forged)\n")
        assert locks.holder(hostile) == f"pid {os.getpid()}"  # the kernel's holder, not the forged line
    finally:
        os.close(fd)


def test_pages_the_nvme_lab_wrote_stay_iolabs_on_the_host(tmp_path):
    """Over 9p the guest marks a page with its own device and inode numbers and no birth
    time: the host took the lab's seed pages for a user's and refused to write them again.
    After the lab, its fresh notes are adopted; an old note or a file without one is not."""
    import json
    import time

    from iolab.core import owned

    page, old, mine = tmp_path / "seed-000.html", tmp_path / "old.html", tmp_path / "mine.html"
    for f in (page, old, mine):
        f.write_text("x")
    start = time.time() - 5
    guest = {"dev": 29, "ino": 1, "born_ns": None, "by": "iolab"}
    owned.note_of(page).write_text(json.dumps({**guest, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ")}))
    owned.note_of(old).write_text(json.dumps({**guest, "created_utc": "2020-01-01T00:00:00Z"}))
    assert not owned.is_owned(page)
    assert owned.adopt([tmp_path], start) == 1
    assert owned.is_owned(page) and not owned.is_owned(old) and not owned.is_owned(mine)
    write_output(page, "again")  # the host writes the lab's page again
