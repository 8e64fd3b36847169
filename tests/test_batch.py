"""iolab batch: a manifest checked before anything runs, failures kept while the batch goes
on, resume that re-runs only failed or missing runs, batch.json and the index page."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from iolab.core.errors import InputError
from iolab.report import batch
from support.notebooks import manifest, tiny_notebook

IOLAB = [sys.executable, "-m", "iolab.cli"]


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"runs": [{"name": "a", "parameters": {"y": 2}}]}, "has no parameter(s) y (\"'y'"),
        ({"runs": [{"name": "a", "parameters": {"fial": True}}]}, "'fial': did you mean 'fail'?"),
        ({"runs": [{"name": "a"}, {"name": "a"}]}, "run name(s) a appear twice"),
        ({"grid": {}}, "has no runs"),
        ({"runs": [{"parameters": {"x": 1}}]}, "batch.yaml: runs[0].name is missing: give a run name"),
        ({"run": [{"name": "a"}]}, "batch.yaml: unknown key 'run' (did you mean 'runs'?); the keys are notebook,"),
        (
            {"runs": [{"name": "a", "paramters": {"x": 1}}]},
            "runs[0]: unknown key 'paramters' (did you mean 'parameters'?)",
        ),
        ({"runs": ["a"]}, "runs[0] is text ('a'), not a run {name, parameters}; write it as - {name: bs-4k"),
        ({"runs": [{"name": ["a"]}]}, "runs[0].name is a list (['a']), not a run name"),
        ({"runs": [{"name": "a"}], "jobs": True}, "jobs is true/false (True), not a whole number from 1 to 1000"),
        ({"runs": [{"name": "a"}], "jobs": 10**30}, "jobs is 1000000000000000000000000000000, not a whole number"),
        ({"runs": [{"name": "a"}], "jobs": 2.5}, "jobs is a number (2.5), not a whole number"),
        ({"runs": [{"name": "a"}], "notebook": " "}, "notebook is empty, not the notebook to run"),
        ({"runs": [{"name": "a"}], "notebook": "../nope.ipynb"}, "does not exist; give the path of an .ipynb file"),
    ],
)
def test_bad_manifests_are_refused_before_anything_runs(tmp_path, doc, words):
    with pytest.raises(InputError) as err:
        batch.load_manifest(manifest(tmp_path, **doc))
    assert words.split(' ("')[0] in str(err.value)
    assert not (tmp_path / "batch-batch").exists()


def test_manifest_spellings_read_as_before(tmp_path):
    """Keys with stray spaces, numbers where text is meant, whole numbers as text, an empty
    ``runs:``, a grid value that is one value: read as they always were."""
    path = tmp_path / "batch.yaml"
    tiny_notebook(tmp_path / "tiny.ipynb")
    path.write_text("' notebook ': tiny.ipynb\njobs: ' 2 '\nout: ' o '\nruns:\ngrid: {x: [1, 2], cpu: 0}\n")
    m = batch.load_manifest(path)
    assert [(r.name, r.parameters) for r in m.runs] == [
        ("x=1-cpu=0", {"x": 1, "cpu": 0}),
        ("x=2-cpu=0", {"x": 2, "cpu": 0}),
    ]
    assert m.jobs == 2 and m.out == (tmp_path / "o").resolve()
    path.write_text("notebook: tiny.ipynb\nruns: [{name: 2024}, {name: ../../x, parameters: {' x ': 3}}]\n")
    assert [(r.name, r.parameters) for r in batch.load_manifest(path).runs] == [("2024", {}), ("x", {"x": 3})]


def test_paths_are_relative_to_the_manifest(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "s.yaml").write_text("x")
    m = batch.load_manifest(
        manifest(tmp_path, defaults={"x": 1}, runs=[{"name": "a", "parameters": {"cpu": 0}}], grid={"x": [1, 2]})
    )
    assert m.notebook == (tmp_path / "tiny.ipynb").resolve() and [r.name for r in m.runs] == ["a", "x=1", "x=2"]
    assert batch._paths({"spec": "specs/s.yaml", "rw": "randread"}, tmp_path) == {
        "spec": str(tmp_path / "specs" / "s.yaml"),
        "rw": "randread",
    }


@pytest.mark.slow
def test_a_failed_run_is_kept_the_batch_goes_on_and_a_rerun_only_redoes_it(tmp_path):
    path = manifest(
        tmp_path,
        runs=[
            {"name": "one", "parameters": {"x": 1}},
            {"name": "bad", "parameters": {"x": 2, "fail": True}},
            {"name": "three", "parameters": {"x": 3, "cpu": 1}},
        ],
        jobs=2,
    )
    first = subprocess.run(
        IOLAB + ["batch", str(path), "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 3, first.stderr
    assert "1 run(s) failed (bad)" in first.stderr and "2 of 3 runs ok" in first.stdout
    doc = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert [r["status"] for r in doc["runs"]] == ["ok", "failed", "ok"]
    bad = doc["runs"][1]
    assert "asked to fail" in bad["error"] and bad["output"].endswith("tiny.failed.ipynb")
    assert "papermill-error-cell" in (tmp_path / "out" / "bad" / "tiny.failed.ipynb").read_text()
    assert doc["runs"][0]["results"][0]["value"] == 2 and doc["runs"][2]["results"][0]["high"] == 7
    index = (tmp_path / "out" / "index.html").read_text()
    assert "double (units)" in index and "6 [5, 7]" in index and "data:image/png;base64" in index
    assert 'href="one/tiny.html"' in index and "http" not in index.split("<body>")[1].split("Manifest")[0]
    started = json.loads((tmp_path / "out" / "one" / "notebook_run.json").read_text())["started_utc"]
    one = tmp_path / "out" / "one"
    (one / "notebook_run.json").rename(one / "run.json")  # the name batches gave it before

    path.write_text(path.read_text().replace("fail: true", "fail: false"))
    again = subprocess.run(
        IOLAB + ["batch", str(path), "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert again.stderr.count(": ok in") == 1 and "bad: ok" in again.stderr  # only the changed run re-ran
    assert batch.read_record(tmp_path / "out" / "one")["started_utc"] == started  # the old name read: not re-run
    doc = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert [r["status"] for r in doc["runs"]] == ["ok", "ok", "ok"]
    assert [r["results"][0]["value"] for r in doc["runs"]] == [2, 4, 6]


def test_runs_on_one_cpu_never_overlap(tmp_path, monkeypatch):
    runs = [batch.BatchRun(n, tmp_path / "nb.ipynb", {"cpu": c}) for n, c in (("a", 0), ("b", 0), ("c", 1))]
    assert batch._cpus_of({"cpu": 0}) == {0} and batch._cpus_of({"cpus": "0,1"}) == {0, 1}
    assert batch._cpus_of({"x": 1}) == set() and batch._cpus_of({"cpus": [2, 3]}) == {2, 3}
    assert batch._cpus_of({"cpus": "0-3"}) & batch._cpus_of({"cpu": 2})  # a range holds its CPUs
    spans = []

    def fake(run, run_dir, force=False):
        import time

        start = time.monotonic()
        time.sleep(0.3)
        return {"name": run.name, "cpu": run.parameters["cpu"], "span": (start, time.monotonic())}

    monkeypatch.setattr(batch, "_execute_in_worker", fake)  # a worker's signal set-up needs a process
    in_process = lambda max_workers, **bind: batch.cf.ThreadPoolExecutor(max_workers)  # noqa: E731 - no die_with_parent
    monkeypatch.setattr(batch.cf, "ProcessPoolExecutor", in_process)  # the schedule, in-process
    spans = list(batch._execute_all(runs, tmp_path, jobs=3))
    on0 = sorted(s["span"] for s in spans if s["cpu"] == 0)
    assert len(spans) == 3 and on0[0][1] <= on0[1][0]  # a and b one after the other


def test_the_index_page_shows_what_users_wrote_as_text(tmp_path):
    """The index is a jinja2 template with autoescaping: a run name, a parameter and an error
    with markup in them are shown, never run; links are relative to the page."""
    from iolab.report.batch_index import index_html

    evil = "<script>alert(1)</script>"
    doc = {
        "notebook": "nb/tiny.ipynb",
        "manifest": "m.yaml",
        "runs": [
            {
                "name": evil,
                "status": "failed",
                "parameters": {"x": "<b>1</b>"},
                "error": "<img src=x onerror=alert(2)>",
                "results": [],
                "run_folders": [],
                "html": str(tmp_path / "a" / "tiny.html"),
            },
            {
                "name": "two",
                "status": "ok",
                "parameters": {"x": 2},
                "results": [{"name": "v", "value": 3, "unit": "s"}],
                "run_folders": [],
                "output": str(tmp_path / "b" / "tiny.ipynb"),
                "duration_s": 1.5,
            },
        ],
    }
    page = index_html(doc, tmp_path)
    assert evil not in page and "&lt;script&gt;" in page and "<b>1</b>" not in page and "onerror=alert(2)>" not in page
    assert 'href="a/tiny.html"' in page and 'href="b/tiny.ipynb">notebook</a>' in page
    assert "1 failed" in page and "<th>v (s)</th>" in page and '<td class="num">3</td>' in page


def test_ctrl_c_with_an_idle_worker_is_one_line(tmp_path):
    """Ctrl-C reaches every process of the terminal's group: a worker waiting for work ended in
    multiprocessing's traceback (22 lines per worker) before the batch's own message."""
    script = tmp_path / "go.py"
    script.write_text(
        "import time, sys\nfrom pathlib import Path\nfrom iolab.report import batch\n"
        "def fake(run, run_dir, force=False):\n    time.sleep(run.parameters['s'])\n    return {'name': run.name}\n"
        "batch.execute_one = fake\n"
        "runs = [batch.BatchRun(n, Path('nb.ipynb'), {'s': s, 'cpu': c}) for n, s, c in (('a', 0, 0), ('b', 60, 1))]\n"
        "try:\n    for r in batch._execute_all(runs, Path('.'), 2):\n        print(r['name'], flush=True)\n"
        "except KeyboardInterrupt:\n    sys.exit('interrupted')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )
    assert proc.stdout.readline() == "a\n"  # a's worker is idle now, b's still runs
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and err == "interrupted\n", err
