"""Names never leave their folder, warm-up has one spelling, and hostile inputs get one line.

Every name that becomes a path (search names, batch run names, hosts, sweep names, run
labels) is refused or sanitised by ``iolab.core.paths``; ``warmup`` is read by
``iolab.core.validate.warmup`` alone; bad manifests, specs, hosts files, notebooks and
environment values give one line naming the file or variable, exit 1, no traceback, and
nothing a file holds reaches the terminal raw. All in-process, no fio run."""

import json
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from iolab.core import paths, validate
from iolab.core.errors import InputError, printable
from iolab.machine import hosts, locks
from iolab.measure import search, search_spec, sweep
from iolab.read import hosttable
from iolab.runs import store
from support.cli import cli_here
from support.paths import REPO

# every hostile name; "../../../victim" from <data>/runs/search-<name> lands at tmp_path/victim
EVIL = ["..", ".", "../../x", "../../../victim", "a/b", "a\0b", "x" * 300, "", "-rf", "\x1b[2Jname"]
SECRET = "SECRET-FIRST-LINE"
SPEC = {"target": "scratch", "size": "16m", "axes": {"iodepth": [1]}}


@pytest.fixture
def home(tmp_path, monkeypatch, own_ledger):
    """IOLAB_DATA in tmp_path/data; the absolute hostile names point at tmp_path/victim."""
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    return tmp_path


def outside(home: Path) -> set[str]:
    """Everything under ``home`` but the data folder, the ledger and this test's inputs."""
    return {
        str(p.relative_to(home)) for p in home.rglob("*") if p.relative_to(home).parts[0] not in ("data", "state", "in")
    }


def one_line(done, command: str) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"iolab {command}: "), done.stderr
    assert "Traceback" not in done.stderr and SECRET not in done.stderr and "\x1b" not in done.stderr
    return done.stderr


def write(home: Path, name: str, text: str | bytes) -> Path:
    path = home / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def tiny_notebook(home: Path) -> Path:
    """A notebook with a parameters cell (papermill inspects it; nothing runs it here)."""
    cell = new_code_cell("x = 1", metadata={"tags": ["parameters"]})
    path = home / "in" / "tiny.ipynb"
    path.parent.mkdir(exist_ok=True)
    nbformat.write(
        new_notebook(
            cells=[cell], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        ),
        path,
    )
    return path


# ---------------------------------------------------------------- 1. names stay in their folder
@pytest.mark.parametrize("name", EVIL + ["/abs/victim"])
def test_safe_name_is_one_component_inside_its_folder(name, tmp_path):
    safe = paths.safe_name(name)
    assert Path(safe).name == safe and safe not in (".", "..") and not safe.startswith((".", "-"))
    assert len(safe) <= paths.NAME_MAX and paths.check_name(safe, "name", "x") == safe
    assert paths.inside(tmp_path, safe).resolve().parent == tmp_path.resolve()
    host = paths.safe_name(name, fill="_", per_char=True)
    assert Path(host).name == host and host not in (".", "..") and "/" not in host
    run_id = store.new_run_id(name)  # run labels: in the run folder's name
    assert Path(run_id).name == run_id and "/" not in run_id and "\0" not in run_id


def test_search_names_are_refused_on_every_way_in(home):
    evil = EVIL + [str(home / "victim")]
    for name in evil:
        with pytest.raises(InputError, match=r"search name .* (would leave|has|is empty|starts with)"):
            search_spec.load_spec({**SPEC, "name": name})
        spec = write(home, "spec.yaml", yaml.safe_dump({**SPEC, "name": name}))
        said = one_line(cli_here("search", spec), "search")
        assert "search name" in said and "ASCII letters, digits and . _ = -" in said
    made = search_spec.load_spec({**SPEC, "name": "ok"})
    for name in evil:  # a Spec made by hand, not by load_spec
        made.name = name
        with pytest.raises(InputError, match="search name"):
            search.default_folder(made)
        with pytest.raises(InputError, match="search name"):
            search.run(made)
    assert search.default_folder(search_spec.load_spec({**SPEC, "name": "bs-qd_1=x.y"})).name == "search-bs-qd_1=x.y"
    assert outside(home) == set() and not (home / "victim").exists()


def test_batch_names_are_sanitised_and_checked_before_a_run(home):
    from iolab.report import batch

    notebook = tiny_notebook(home)
    for name in EVIL + [str(home / "victim")]:  # one manifest each: ".." and "." both sanitise to "run"
        manifest = write(
            home,
            "batch.yaml",
            yaml.safe_dump(
                {
                    "notebook": str(notebook),
                    "runs": [{"name": name or "empty", "parameters": {"x": 1}}],
                    "grid": {"x": ["../../../victim", "a" * 300]},
                }
            ),
        )
        for run in batch.load_manifest(manifest).runs:
            assert Path(run.name).name == run.name and run.name not in (".", "..") and len(run.name) <= paths.NAME_MAX
    by_hand = batch.Manifest(
        notebook, [batch.BatchRun("../../../victim", notebook, {})], home / "data" / "out", 1, manifest
    )
    with pytest.raises(InputError, match="would put files outside"):
        batch.run_batch(by_hand)  # a name not through load_manifest: refused before anything runs
    assert outside(home) == set() and not (home / "victim").exists()


def test_host_names_are_refused_and_their_folders_stay_in_the_run(home):
    for name in [n for n in EVIL if n != "-rf"] + ["-rf", "a..b", str(home / "victim")]:
        with pytest.raises(InputError, match="is not address"):
            hosts.parse_host(name)
        if name and "\0" not in name:
            hosts_file = write(home, "hosts.yaml", yaml.safe_dump({name: {"via": "ssh x"}}))
            with pytest.raises(InputError, match=r"hosts.yaml: host .* is not address"):
                hosts.hosts_from(None, hosts_file)
    for name in ("10.0.0.2", "h1:8766", "[::1]:8765", "[fe80::1%eth0]:8765", "::1"):
        folder = hosts.parse_host(name).folder
        assert Path(folder).name == folder and folder not in (".", "..")
    assert hosts.parse_host("[::1]:8765").folder == "___1__8765"  # as before: run folders keep their layout
    (home / "victim").mkdir()
    (home / "victim" / "system.json").write_text('{"kernel": "victim"}')
    run = home / "data" / "runs" / "r1"
    run.mkdir(parents=True)
    assert hosttable.host_snapshot(run, "../../../../victim") == {}  # a hosts.json's folder read inside hosts/


def test_sweep_names_are_refused(home):
    for name in EVIL + [str(home / "victim")]:
        with pytest.raises(InputError, match="sweep name"):
            sweep.new_sweep_dir(name)
    assert sweep.new_sweep_dir("qd-knee").parent == home / "data" / "runs"


# ---------------------------------------------------------------- 2. one spelling of warm-up
@pytest.mark.parametrize(
    "value,kind",
    [
        ("run", "run"),
        (True, "run"),
        ("none", None),
        (None, None),
        (False, None),
        ("", None),
        (0, None),
        ("2s", 2.0),
        ("500ms", 0.5),
        (" RUN ", "run"),
    ],
)
def test_warmup_spellings(value, kind):
    assert validate.warmup(value) == kind
    assert validate.warmup(validate.warmup_text(kind)) == kind  # what is recorded reads back the same


@pytest.mark.parametrize(
    "value,words",
    [
        (2, "warmup: 2 is not one of run .one discarded run first., none, or a time.*write 2s for seconds"),
        (0.5, "a bare number could mean runs or seconds: write 0.5s"),
        ("soon", "warmup: 'soon' is not one of run"),
        ("-1s", "is not one of run"),
        ([1], "is not one of run"),
    ],
)
def test_warmup_anything_else_is_refused_everywhere(value, words, home):
    with pytest.raises(InputError, match=words):
        validate.warmup(value)
    with pytest.raises(InputError, match=words):
        search_spec.load_spec({**SPEC, "warmup": value})
    with pytest.raises(InputError, match=words):  # before any target, knob or run
        sweep.sweep({"iodepth": [1]}, target=None, rounds={"warmup": value})
    with pytest.raises(InputError, match="t/io_uring has no ramp time; use warmup: run"):
        validate.warmup("2s", tool="t/io_uring")


def test_a_search_warmup_time_is_ramp_time_on_every_run_and_in_its_hash():
    timed, plain = search_spec.load_spec({**SPEC, "warmup": "2s"}), search_spec.load_spec({**SPEC, "warmup": "none"})
    assert timed.base["ramp_time"] == "2s" and timed.warmup == "2s" and plain.warmup == "none"
    assert timed.ident != plain.ident  # a resumed search never mixes the two
    with pytest.raises(InputError, match="keep one of them"):
        search_spec.load_spec({**SPEC, "warmup": "2s", "base": {"ramp_time": "1s"}})


def test_every_shipped_warmup_is_spelled_the_one_way():
    found = []
    for path in [*REPO.glob("data/examples/*.yaml"), *REPO.glob("tests/fixtures/**/*.yaml")]:
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and "warmup" in doc:
            found.append(validate.warmup(doc["warmup"]))
    for path in REPO.glob("notebooks/*.ipynb"):
        cell = next(
            (c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", [])), None
        )
        line = next((s for s in (cell["source"] if cell else []) if s.startswith("warmup")), None)
        if line:
            found.append(validate.warmup(line.split("=", 1)[1].split("#")[0].strip().strip('"')))
            assert '"2s"' in line and "a number" not in line, f"{path.name}: {line}"
    assert found


# ---------------------------------------------------------------- 3. inputs read defensively
BATCH_CASES = {
    "defaults-list": ({"defaults": [1, 2]}, "batch.yaml: defaults is a list ([1, 2]), not a mapping"),
    "grid-list": ({"grid": [1, 2]}, "batch.yaml: grid is a list ([1, 2]), not a mapping"),
    "params-list": (
        {"runs": [{"name": "a", "parameters": [1, 2]}]},
        "batch.yaml: runs[0].parameters is a list ([1, 2]), not a mapping",
    ),
    "runs-mapping": ({"runs": {"name": "a"}}, "batch.yaml: runs is a mapping ({'name': 'a'}), not a list"),
    "notebook-list": ({"notebook": ["a", "b"]}, "batch.yaml: notebook is a list (['a', 'b'])"),
    "out-number": ({"out": 3, "runs": [{"name": "a"}]}, "batch.yaml: out is a number (3), not one folder"),
    "no-kernel": ({"notebook": "plain.ipynb"}, "papermill cannot read the parameters of"),
}


@pytest.mark.parametrize("case", BATCH_CASES)
def test_bad_batch_manifests_give_one_line(case, home):
    body, words = BATCH_CASES[case]
    nbformat.write(
        new_notebook(cells=[new_code_cell("x = 1", metadata={"tags": ["parameters"]})]), write(home, "plain.ipynb", "")
    )  # no kernelspec: papermill cannot inspect it
    doc = {"notebook": str(tiny_notebook(home)), "runs": [{"name": "a", "parameters": {"x": 2}}], **body}
    said = one_line(cli_here("batch", write(home, "batch.yaml", yaml.safe_dump(doc))), "batch")
    assert words in said


@pytest.mark.parametrize(
    "content,words",
    [
        (f"{SECRET} \x1b[31mred\n\0\x01".encode(), "is NUL): a binary file? give a Jupyter notebook"),
        (b"\x82\xff" + SECRET.encode(), "is not text (byte 0 is not UTF-8)"),
        (json.dumps({SECRET: 1}), "is JSON but not a Jupyter notebook (a mapping without the cells"),
        (json.dumps([SECRET]), "is JSON but not a Jupyter notebook (a list without"),
        (f"{{{SECRET}", "is not a Jupyter notebook: it is not JSON (line 1)"),
    ],
)
def test_a_notebook_that_is_not_one_gives_one_line_without_its_contents(content, words, home):
    notebook = write(home, "x.ipynb", content)
    manifest = write(home, "batch.yaml", yaml.safe_dump({"notebook": str(notebook), "runs": [{"name": "a"}]}))
    said = one_line(cli_here("batch", manifest), "batch")
    assert words in said and f"{notebook} (named in batch.yaml)" in said
    for command in ("publish", "reproduce"):
        assert words in one_line(cli_here(command, notebook), command)


@pytest.mark.parametrize(
    "text,words",
    [
        ("axes: {iodepth: [1]}\nbase: [1, 2]", "base is a list ([1, 2]), not a mapping of fio option"),
        ("axes: {iodepth: [1]}\nstop: {ci_pct: abc}", "stop.ci_pct 'abc' is not a percentage"),
        ("axes: {iodepth: [{a: 1}]}", "axis 'iodepth' has {'a': 1}, a mapping"),
        ("axes: [1]", "the spec has no axes"),
        (f"- {SECRET}", "holds a list, not a mapping"),
        ("axes: [1", "is not YAML this can read"),
        ('axes: {iodepth: [1]}\nname: "\\e[2J"', "search name '\\x1b[2J' has '\\x1b'"),
        (b"\0\x01" + SECRET.encode(), "is not text (byte 0 is NUL)"),
    ],
)
def test_bad_search_specs_give_one_line(text, words, home):
    assert words in one_line(cli_here("search", "--dry-run", write(home, "spec.yaml", text)), "search")


@pytest.mark.parametrize(
    "text,words",
    [
        ("- a\n- b", "holds a list, not a mapping"),
        ("h1: 5", "host h1 is a number (5), not a host entry {via: command prefix}; write it as h1: {via:"),
        ("h1: {via: 5}", "host h1: via is a number (5), not a command prefix"),
        ('h1: {via: "ssh \\"x"}', "close the quote"),
        (b"\0\x01", "is not text"),
    ],
)
def test_bad_hosts_files_give_one_line(text, words, home):
    with pytest.raises(InputError, match="hosts.yaml") as err:
        hosts.hosts_from(None, write(home, "hosts.yaml", text))
    assert words in str(err.value)


@pytest.mark.parametrize("value", ["abc", "-1", "inf", "nan", "1e400"])
def test_odd_lock_wait_values_are_refused_by_name(value, monkeypatch):
    monkeypatch.setenv("IOLAB_LOCK_WAIT_S", value)
    with pytest.raises(InputError, match=f"IOLAB_LOCK_WAIT_S='{value}' is not a finite number of seconds >= 0"):
        locks.default_wait_s()


def test_lock_wait_default_and_plain_values(monkeypatch):
    monkeypatch.delenv("IOLAB_LOCK_WAIT_S", raising=False)
    assert locks.default_wait_s() == 600
    monkeypatch.setenv("IOLAB_LOCK_WAIT_S", " 0 ")
    assert locks.default_wait_s() == 0


@pytest.mark.parametrize(
    "variable,read", [("IOLAB_DATA", paths.data_dir), ("IOLAB_STATE", paths.state_dir), ("IOLAB_LOCKS", paths.lock_dir)]
)
def test_folders_from_the_environment_with_control_characters_are_refused(variable, read, monkeypatch, own_ledger):
    monkeypatch.setenv(variable, "/tmp/a\x1b[2J\nb")
    with pytest.raises(InputError, match=f"{variable}=.*holds control characters"):
        read()
    if variable == "IOLAB_STATE":  # through the command line: one line, escaped
        said = one_line(cli_here("cleanup"), "cleanup")
        assert "IOLAB_STATE='/tmp/a\\x1b[2J\\nb' holds control characters" in said


def test_printable_escapes_controls_and_keeps_text():
    assert printable("a\x1b[2Jb\r\0c\u202ed\te\nf é ✓") == "a\\x1b[2Jb\\r\\x00c\\u202ed\te\nf é ✓"
    assert printable("a\tb\nc", keep="") == "a\\tb\\nc"


def test_messages_quote_names_without_control_characters(home):
    said = one_line(cli_here("parse", write(home, "x\x1b]0;pwn\x07.json", b"\x1b[2Jnot fio\0")), "parse")
    assert "\\x1b]0;pwn\\x07" in said and "\x07" not in said


PERF = (
    "fio 4242 [000] 1.000001: 1001 cpu-clock:\n"
    "\tffffffff81 io_submit_sqes ([kernel.kallsyms])\n\t55d3c0 td_io_queue (/usr/bin/fio)\n\n"
)


@pytest.mark.parametrize(
    "text,words",
    [
        ("", "is empty; give the output of `perf script` on a profile recorded with call graphs (`perf record -g`)"),
        (
            "hello world 12 lines\nnoise\n\nmore 34 words\n\n",
            "holds no perf script sample with a call chain (2 sample(s)",
        ),
        (b"\x82\xff\x00 binary\n\n\x1b[2J", "holds no perf script sample with a call chain"),
    ],
)
def test_fold_without_a_stack_says_what_to_give(text, words, home):
    assert words in one_line(cli_here("fold", write(home, "perf.txt", text)), "fold")


def test_fold_escapes_what_it_echoes_and_keeps_the_partial_note(home):
    evil = PERF.replace("fio 4242", "f\x1b]0;pwned\x07io 4242").replace("io_submit_sqes", "io_\x1b[2Jsubmit")
    done = cli_here("fold", write(home, "perf.txt", evil + "garbage line\n\n" + PERF))
    assert done.returncode == 0 and "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "f\\x1b]0;pwned\\x07io;td_io_queue;io_\\x1b[2Jsubmit 1001" in done.stdout
    assert "fio;td_io_queue;io_submit_sqes 1001" in done.stdout
    assert done.stderr == "iolab fold: 1 lines not recognised\n"


def test_parse_escapes_job_names(home):
    doc = {"fio version": "fio-3.33", "jobs": [{"jobname": "\x1b[2Jevil\u202e", "groupid": 0, "error": 0, "read": {}}]}
    done = cli_here("parse", write(home, "fio.json", json.dumps(doc)))
    assert done.returncode == 0 and "\\x1b[2Jevil\\u202e" in done.stdout and "\x1b" not in done.stdout


def failed_notebook(path: Path, error: bool = True) -> Path:
    """An executed notebook as papermill leaves one that failed in cell 2 (or, without
    ``error``, one whose last cells never ran)."""
    cells = [
        new_markdown_cell("# A study"),
        new_code_cell("print(1)", execution_count=1, outputs=[new_output("stream", name="stdout", text="1\n")]),
        new_code_cell(
            "1 / 0",
            execution_count=2,
            outputs=[
                new_output("error", ename="ZeroDivisionError", evalue="division by \x1b[31mzero\x1b[0m", traceback=[])
            ]
            if error
            else [],
        ),
        new_code_cell("print(3)", metadata={"papermill": {"status": "pending"}}),
        new_code_cell("print(4)"),
    ]
    nbformat.write(new_notebook(cells=cells, metadata={"papermill": {"exception": error, "parameters": {}}}), path)
    return path


def test_a_partial_or_failed_notebook_publishes_with_a_banner(home):
    from iolab.report.publish import unfinished

    for error, words in (
        (
            True,
            "This notebook did not finish: cell 2 raised ZeroDivisionError: division by zero; "
            "2 of its 4 code cells never ran",
        ),
        (False, "This notebook did not finish: 2 of its 4 code cells never ran"),
    ):
        (home / "in").mkdir(exist_ok=True)
        notebook = failed_notebook(home / "in" / "nb.ipynb", error)
        assert unfinished(notebook).startswith(words)
        done = cli_here("publish", notebook)
        assert done.returncode == 0 and done.stdout.startswith("wrote ")
        assert done.stderr.startswith(f"iolab publish: {words}") and done.stderr.count("\n") == 1
        page = notebook.with_suffix(".html").read_text()
        banner = page.index("iolab-unfinished")
        assert words in page and banner < page.index("<h1") and "\x1b" not in page[banner : banner + 400]
