"""Executed notebooks replace the last good ones only when complete."""

import os
import signal
import subprocess
import time

import pytest

from iolab.core import owned
from iolab.core.errors import IolabError
from iolab.core.outputs import claim_folder
from iolab.report.publish import execute
from support.notebooks import TINY_PARAMETERS, write_tiny_notebook
from support.paths import PY, REPO
from support.sigint import sigint_default

NB = REPO / "notebooks" / "01_queue_depth_knee.ipynb"


def test_a_failed_notebook_keeps_the_last_good_one(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    good = tmp_path / "01.ipynb"
    good.write_text("the last good report")
    owned.mark(good)  # iolab's earlier output (a user's file there is refused: test_outputs.py)
    with pytest.raises(IolabError, match=r"01\.failed\.ipynb.*last good one is still"):
        execute(NB, good, {"target": str(tmp_path / "no-such-device"), "interactive": False})
    assert good.read_text() == "the last good report"
    assert "no-such-device" in (tmp_path / "01.failed.ipynb").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".ipynb") == ["01.failed.ipynb", "01.ipynb"]


def test_a_headless_kernel_talks_over_unix_sockets_that_it_removes(tmp_path, monkeypatch):
    """Over TCP a kernel binds ports its manager picked and let go; another process's kernel
    starting meanwhile could take one first, and the kernel died at start-up ("Address already
    in use"). Unix sockets in the temporary folder, named per kernel, cannot collide; a
    temporary folder too deep for a socket's path keeps TCP."""
    import tempfile

    import nbformat as nbf

    nb = nbf.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    said = "import ipykernel.connect as c, json\nprint(json.load(open(c.get_connection_file()))['transport'])"
    nb.cells = [nbf.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}), nbf.v4.new_code_cell(said)]
    nbf.write(nb, tmp_path / "t.ipynb")
    for temporary, transport in ((tmp_path / "t", "ipc"), (tmp_path / ("d" * 80), "tcp")):
        temporary.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(temporary))
        execute(tmp_path / "t.ipynb", tmp_path / "out.ipynb", {"x": 2}, force=True)
        printed = nbf.read(tmp_path / "out.ipynb", as_version=4).cells[-1].outputs[0]["text"]
        assert printed.strip() == transport and not list(temporary.iterdir())  # its sockets and connection file gone


def test_interrupted_demo_prints_one_line_and_keeps_the_reports(tmp_path):
    """Ctrl-C of `iolab demo` (what `make demo` runs), sent to its whole process group as a
    terminal does: one line on stderr, the last good notebook kept, the partial one beside."""
    out = tmp_path / "out"
    claim_folder(out)  # iolab's output folder, with its earlier report (test_outputs.py: a user's is refused)
    (out / "01_queue_depth_knee.ipynb").write_text("good")
    owned.mark(out / "01_queue_depth_knee.ipynb")
    env = {**os.environ, "IOLAB_DATA": str(tmp_path / "data"), "IOLAB_STATE": str(tmp_path / "state")}
    proc = subprocess.Popen(
        [PY, "-m", "iolab.cli", "demo", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=sigint_default,
    )
    deadline = time.monotonic() + 60
    while not list((tmp_path / "data").glob("runs/qd-knee-*/*/job.fio")) and time.monotonic() < deadline:
        time.sleep(0.1)  # the notebook's kernel is measuring
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert (out / "01_queue_depth_knee.ipynb").read_text() == "good"
    assert (out / "01_queue_depth_knee.partial.ipynb").exists()
    assert not list(out.glob(".*running*"))


# ---------------------------------------------------------------- the write-up (iolab publish)
import html as markup  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402

import nbformat  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook  # noqa: E402

from iolab.core.errors import InputError  # noqa: E402
from iolab.core.readable import readable_number, readable_tables  # noqa: E402
from iolab.record import provenance  # noqa: E402
from iolab.report.notebook_html import WIDGET_VIEW  # noqa: E402
from iolab.report.offline import network_fetches, offline  # noqa: E402
from iolab.report.publish import publish, to_html  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny notebook executed (papermill, through iolab.report.publish.execute) and published."""
    folder = tmp_path_factory.mktemp("tiny")
    executed = execute(write_tiny_notebook(folder / "tiny.ipynb"), folder / "out" / "tiny.ipynb", TINY_PARAMETERS)
    page = publish(executed)
    return executed, page, page.read_text()


def test_the_write_up_fetches_nothing_and_shows_no_code(tiny):
    executed, page, text = tiny
    assert page == executed.with_suffix(".html")
    assert network_fetches(text) == []
    for tag in re.finditer(r"<(\w+)[^>]*\s(?:src|href|srcset|data)\s*=\s*[\"']?\s*(?:https?:)?//", text):
        assert tag.group(1).lower() == "a", f"<{tag.group(1)}> fetches from the network: {tag.group(0)[:120]}"
    assert not re.search(r"<script[^>]*\ssrc\s*=", text) and not re.search(r"<link[^>]*\shref\s*=", text)
    assert 'href="https://example.org/paper"' in text  # a link is not a fetch
    for code in ("pd.DataFrame(", "plt.subplots", "display(", "# Parameters"):
        assert code not in text
    assert len(re.findall(r'<img\b[^>]*\ssrc="data:image/png;base64,', text)) == 1  # the figure, inline
    assert "<title>A tiny study</title>" in text


def test_the_write_up_tables_are_readable(tiny):
    text = tiny[2]
    table = text[text.index('class="dataframe"') :]
    table = table[: table.index("</table>")]
    for shown in ("22,442", "1,235", "0.982", "64.3", "2.60", "1,500", ">2011<", ">2024<", ">a<"):
        assert shown in table, shown
    assert "22441.558442" not in text and "2,011" not in table
    assert '<th title="iops">IOPS (IO/s)</th>' in table and '<th title="clat_p99_us">clat p99 (µs)</th>' in table
    assert "<th>what</th>" in table  # not a registered column: as it was


def test_the_write_up_opens_with_the_parameters_and_drops_result_outputs(tiny):
    text = markup.unescape(tiny[2])
    params = text[text.index("<h2>Parameters</h2>") :]
    params = params[: params.index("</table>")]
    assert '<td>label</td><td>"tiny run"</td><td>given</td><td>what this run is called</td>' in params
    assert "<td>scale</td><td>1.0</td><td>default</td><td>multiplies every number</td>" in params
    assert "<td>depths</td><td>[1, 4, 16]</td><td>given</td>" in params
    assert text.index("<h2>Parameters</h2>") < text.index('class="dataframe"')
    assert text.index("A tiny study") < text.index("<h2>Parameters</h2>")  # after the title
    assert "RESULT-OUTPUT-MARKER" not in text  # the results table shows it instead
    assert 'Recorded: see the <a href="#iolab-results">results table</a> at the top.' in text
    assert '<h2 id="iolab-results">Results</h2>' in text


def test_the_write_up_ends_with_its_provenance(tiny):
    executed, _, text = tiny
    text = markup.unescape(text)
    appendix = text[text.index("<h2>Provenance</h2>") :]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert head and head in appendix
    assert re.search(r"\((clean|with changes: \d+ file\(s\) changed, \d+ untracked)\)", appendix)
    import matplotlib
    import nbconvert
    import pandas
    import papermill

    for name, module in (
        ("pandas", pandas),
        ("matplotlib", matplotlib),
        ("papermill", papermill),
        ("nbconvert", nbconvert),
    ):
        assert f"<td>{name}</td><td>{module.__version__}</td>" in appendix, name
    for tool in ("<td>Linux kernel</td>", "<td>fio</td>", "<td>perf</td>", "<td>kernel</td>", "<td>CPUs online</td>"):
        assert tool in appendix, tool
    source = executed.parent.parent / "tiny.ipynb"
    command = shlex.join(["papermill", str(source), "out.ipynb", "-r", "label", "tiny run", "-y", "depths: [1, 4, 16]"])
    assert f"<pre>{command}</pre>" in appendix
    assert "recorded no run folders" in appendix


def test_the_results_table_and_the_run_folders_come_from_the_metadata(tiny, tmp_path):
    run = tmp_path / "runs" / "qd-knee-x" / "run-1"
    run.mkdir(parents=True)
    (run / "fio.json").write_text('{"jobs": []}')
    (run / "run.json").write_text('{"status": "ok"}')
    (run / "system.json").write_text(
        json.dumps(
            {"kernel": "9.9.9-test", "fio_version": "fio-9.99", "hostname": "measured-here", "cpus_online": [0, 1]}
        )
    )
    nb = nbformat.read(tiny[0], as_version=4)
    nb.metadata["iolab"] = {
        "results": [
            {
                "name": "knee",
                "value": 32.0,
                "unit": "IOs",
                "source": "Kneedle",
                "low": 16.0,
                "high": 32,
                "note": "81 % of resamples",
            },
            {
                "name": "cycles per IO",
                "value": 13847.25,
                "unit": "cycles/IO",
                "source": "perf stat",
                "low": None,
                "high": None,
                "note": "",
            },
        ],
        "run_folders": [str(run.parent), str(tmp_path / "gone")],
        "parameters": {"label": "from iolab"},
    }
    nbformat.write(nb, tmp_path / "meta.ipynb")
    text = markup.unescape(publish(tmp_path / "meta.ipynb", tmp_path / "meta.html").read_text())
    results = text[text.index('<h2 id="iolab-results">Results</h2>') :]
    results = results[: results.index("</table>")]
    assert (
        '<td>knee</td><td class="num">32</td><td>IOs</td><td class="num">[16, 32]</td><td>Kneedle</td>'
        "<td>81 % of resamples</td>"
    ) in results
    assert '<td>cycles per IO</td><td class="num">13,847</td><td>cycles/IO</td><td class="num"></td>' in results
    assert "peak IOPS" not in results  # the metadata, not the outputs, when both are there
    assert '<td>label</td><td>"from iolab"</td><td>given</td>' in text
    digest = provenance.folder_digest(run.parent)
    assert digest["sha256"] and digest["files"] == 2  # fio.json and system.json; run.json is not hashed
    assert f'<td>{run.parent}</td><td class="num">2</td>' in text and digest["sha256"] in text
    assert (
        f'<td>{tmp_path / "gone"}</td><td class="num">0</td><td class="num">0</td><td>not on this machine</td>' in text
    )
    assert "<td>kernel</td><td>9.9.9-test</td>" in text and "<td>host</td><td>measured-here</td>" in text
    assert "<td>fio</td><td>fio-9.99</td>" in text  # the fio that measured, from the run folder


def test_the_results_come_from_the_outputs_without_metadata(tiny, tmp_path):
    """A notebook run by papermill itself (or in JupyterLab) has no metadata["iolab"]."""
    nb = nbformat.read(tiny[0], as_version=4)
    nb.metadata.pop("iolab", None)
    nbformat.write(nb, tmp_path / "plain.ipynb")
    text = publish(tmp_path / "plain.ipynb").read_text()
    assert '<td>peak IOPS</td><td class="num">22,442</td><td>IO/s</td><td class="num">[21,000; 23,500]</td>' in text
    assert "RESULT-OUTPUT-MARKER" not in text


def test_to_html_is_the_write_up_or_the_notebook_with_its_code(tiny, tmp_path):
    assert "<h2>Provenance</h2>" in to_html(tiny[0], tmp_path / "a.html").read_text()
    with_code = to_html(tiny[0], tmp_path / "b.html", no_input=False).read_text()
    assert "subplots" in with_code and "<h2>Provenance</h2>" not in with_code
    assert network_fetches(with_code) == []


def test_a_failed_notebook_says_so(tmp_path):
    nb = new_notebook(
        cells=[
            new_code_cell(
                "1 / 0",
                outputs=[
                    nbformat.v4.new_output(
                        "error",
                        ename="ZeroDivisionError",
                        evalue="division by zero",
                        traceback=["ZeroDivisionError: division by zero"],
                    )
                ],
            )
        ],
        metadata={"papermill": {"exception": True, "parameters": {}, "input_path": "/x/nb.ipynb"}},
    )
    nbformat.write(nb, tmp_path / "nb.failed.ipynb")
    text = publish(tmp_path / "nb.failed.ipynb").read_text()
    assert "This notebook did not finish: code cell 1 raised ZeroDivisionError: division by zero" in text
    assert "papermill /x/nb.ipynb out.ipynb" in text


def test_publish_refuses_what_it_cannot_write_up(tiny, tmp_path):
    (tmp_path / "not.ipynb").write_text("hello")
    fresh = write_tiny_notebook(tmp_path / "fresh.ipynb")
    cases = [
        (tmp_path / "missing.ipynb", None, "no such notebook"),
        (tmp_path, None, "is a folder"),
        (tmp_path / "not.ipynb", None, "not a Jupyter notebook"),
        (fresh, None, "has no outputs: it has not been run"),
        (tiny[0], tiny[0], "is the notebook itself"),
        (tiny[0], tmp_path / "nowhere" / "x.html", "there is no folder"),
    ]
    for notebook, html, words in cases:
        with pytest.raises(InputError, match=words):
            publish(notebook, html)
    assert not list(tmp_path.glob("*.html"))


def test_iolab_publish_command(tiny, tmp_path):
    """The write-up in this process (nbconvert imported once per worker); the one-line
    refusal from a new process."""
    from support.cli import cli_here

    env = {**os.environ, "IOLAB_STATE": str(tmp_path / "state")}
    ok = cli_here("publish", tiny[0], "-o", tmp_path / "w.html")
    assert ok.returncode == 0 and ok.stdout.strip() == f"wrote {tmp_path / 'w.html'}", ok.stderr
    assert network_fetches((tmp_path / "w.html").read_text()) == []
    bad = subprocess.run(
        [PY, "-m", "iolab.cli", "publish", str(tmp_path / "nope.ipynb")], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("iolab publish:") and "no such notebook" in bad.stderr


@pytest.mark.parametrize(
    "text,shown",
    [
        ("22441.558442", "22,442"),
        ("472000", "472,000"),
        ("999", "999"),
        ("-12345", "-12,345"),
        ("100.4", "100"),
        ("64.256", "64.3"),
        ("2.596134", "2.60"),
        ("1.0", "1.00"),
        ("0.982029", "0.982"),
        ("0.000123456", "0.000123"),
        ("0.0", "0"),
        ("1.5e-07", "1.5e-07"),
        ("2.5e6", "2,500,000"),
        ("NaN", "NaN"),
        ("True", "True"),
        ("proc_cpuinfo", "proc_cpuinfo"),
        ("1_000", "1_000"),
        ("", ""),
        ("4k", "4k"),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_readable_number(text, shown):
    assert readable_number(text) == shown


def test_readable_tables_count_columns_from_the_right():
    """A named index adds a header row and index cells; a year column keeps its digits."""
    import pandas as pd

    table = pd.DataFrame({"qd": [1, 2], "year": [2011, 2024], "iops": [22441.558442, 1234567.0]}).set_index("qd")
    page = readable_tables("<p>12345.678</p>" + table.to_html())
    assert page.startswith("<p>12345.678</p>")  # outside tables: untouched
    assert "<td>2011</td>" in page and "<td>22,442</td>" in page and "<td>1,234,567</td>" in page
    assert "<th>1</th>" in page  # index cells: as they were
    assert '<th title="iops">IOPS (IO/s)</th>' in page and '<th title="qd">queue depth (IOs)</th>' in page


def test_offline_disables_every_fetch_and_keeps_links():
    page = (
        '<html><head><script src="https://cdn.example/require.js"></script>'
        "<link rel='stylesheet' href='http://cdn.example/x.css'>"
        '<style>@import url("https://fonts.example/f.css"); body { background: url(//img.example/b.png) }</style>'
        '</head><body><img alt="x" src=//img.example/a.png><img src="data:image/png;base64,AAAA">'
        '<a href="https://example.org/paper">paper</a><div style="background: url(\'https://x.example/c.png\')">'
        "</div><script>var a = 1;</script><main></main></body></html>"
    )
    assert len(network_fetches(page)) == 6
    fixed, disabled = offline(page)
    assert network_fetches(fixed) == [] and len(disabled) == 6
    assert 'data-offline-src="https://cdn.example/require.js"' in fixed
    assert '<a href="https://example.org/paper">' in fixed and 'src="data:image/png;base64,AAAA"' in fixed
    assert "<script>var a = 1;</script>" in fixed


def test_folder_digest_covers_the_raw_outputs_only(tmp_path):
    run = tmp_path / "a" / "run-1"
    run.mkdir(parents=True)
    (run / "fio.json").write_text('{"jobs": []}')
    (run / "job.fio").write_text("[job]\nrw=randread\n")
    (run / "run.json").write_text('{"started_utc": "2026-01-01T00:00:00Z"}')
    first = provenance.folder_digest(tmp_path / "a")
    assert first["files"] == 2 and first["bytes"] == 12 + 18 and len(first["sha256"]) == 64
    (run / "run.json").write_text('{"started_utc": "2027-01-01T00:00:00Z", "status": "interrupted"}')
    (tmp_path / "a" / ".iolab-table.parquet").write_text("cache")
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    assert provenance.folder_digest(tmp_path / "copy")["sha256"] == first["sha256"]
    (run / "fio.json").write_text('{"jobs": [1]}')
    assert provenance.folder_digest(tmp_path / "a")["sha256"] != first["sha256"]
    assert provenance.folder_digest(tmp_path / "none") == {
        "path": str(tmp_path / "none"),
        "sha256": None,
        "files": 0,
        "bytes": 0,
        "why": "not on this machine",
    }


def test_rerun_command_spells_each_kind_of_value():
    nb = REPO / "notebooks" / "01_queue_depth_knee.ipynb"
    command = provenance.rerun_command(
        nb,
        {
            "target": "/dev/nvme0n1",
            "size": "1",
            "runtime_s": 1.5,
            "cpu": 3,
            "interactive": False,
            "queue_depths": [1, 4],
            "knobs": {"a": 1},
        },
    )
    assert shlex.split(command) == [
        ".venv/bin/papermill",
        "notebooks/01_queue_depth_knee.ipynb",
        "out.ipynb",
        "-r",
        "target",
        "/dev/nvme0n1",
        "-r",
        "size",
        "1",
        "-p",
        "runtime_s",
        "1.5",
        "-p",
        "cpu",
        "3",
        "-p",
        "interactive",
        "False",
        "-y",
        "queue_depths: [1, 4]",
        "-y",
        'knobs: {"a": 1}',
    ]
    assert provenance.rerun_command(None, {}) is None


def test_checkout_without_git_says_why(tmp_path):
    state = provenance.checkout(tmp_path)
    assert state["commit"] is None and "not in a git checkout" in state["why"]


def test_widgets_give_way_to_their_static_fallback(tmp_path):
    """A notebook saved from JupyterLab: widget views need a widget manager from a CDN."""
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    out = nbformat.v4.new_output
    nb = new_notebook(
        cells=[
            new_code_cell(
                "w", outputs=[out("display_data", data={WIDGET_VIEW: view, "text/plain": "HBox(children=(...))"})]
            ),
            new_code_cell(
                "e",
                outputs=[
                    out("display_data", data={WIDGET_VIEW: view, "image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
                ],
            ),
        ],
        metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}},
    )
    nbformat.write(nb, tmp_path / "w.ipynb")
    text = publish(tmp_path / "w.ipynb").read_text()
    assert "HBox(children" not in text and "widget-view" not in text and "widget-state" not in text
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in text


def test_the_demo_runs_the_committed_notebooks_and_says_which(tmp_path, monkeypatch):
    """A notebook whose cells differ from HEAD's (a test cell autosaved in JupyterLab) runs as
    committed, named in one line; saved outputs alone are no change; outside git, as on disk."""
    import nbformat

    from iolab.core import paths
    from iolab.report.demo import committed

    repo, nb = tmp_path / "repo", nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    (repo / "notebooks").mkdir(parents=True)
    for name in ("a.ipynb", "b.ipynb"):
        nbformat.write(nb, repo / "notebooks" / name)
    monkeypatch.setattr(paths, "NOTEBOOKS", repo / "notebooks")
    assert committed(["a.ipynb"], tmp_path / "copies")[1].startswith(
        "not a git checkout: the demo runs the notebooks as they are on disk"
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "notebooks"], check=True)
    subprocess.run([*git, "-c", "filter.nbstripout.clean=", "commit", "-qm", "notebooks"], check=True)
    edited = nbformat.read(repo / "notebooks" / "a.ipynb", as_version=4)
    edited.cells.append(nbformat.v4.new_code_cell("assert False  # a test cell"))
    nbformat.write(edited, repo / "notebooks" / "a.ipynb")
    saved = nbformat.read(repo / "notebooks" / "b.ipynb", as_version=4)
    saved.cells[0].outputs = [nbformat.v4.new_output("stream", text="1")]
    nbformat.write(saved, repo / "notebooks" / "b.ipynb")
    sources, said = committed(["a.ipynb", "b.ipynb"], tmp_path / "copies")
    assert (
        sources["a.ipynb"] == tmp_path / "copies" / "a.ipynb" and sources["b.ipynb"] == repo / "notebooks" / "b.ipynb"
    )
    assert (
        "assert False" not in sources["a.ipynb"].read_text() and "committed a.ipynb" in said and "b.ipynb" not in said
    )
