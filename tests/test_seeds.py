"""iolab seeds: the seed manifests cover every published figure; the plan and its estimate;
each seed reproduced for real at its smoke settings (scratch file and loop devices), its
executed notebooks read as the notebook tests read them, its page and the index checked in
Chromium offline; a SIGTERM mid-seed, then the same command, redoes only what was missing.

The smoke runs replace the headless tests of notebooks 01-05 that test_notebooks.py had: the
same notebooks at the same sizes, once, through the command users run; what ``iolab reproduce``
needs of them is checked here, its re-runs in tests/test_reproduce.py."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from iolab.core.errors import InputError
from iolab.read.published import published_figures
from iolab.report.reproduce import parameters, recorded, source_notebook
from iolab.seeds import comparisons as seed_comparisons
from iolab.seeds import manifest as seeds
from support.cli import cli_here
from support.cpus import CPU
from support.marks import is_root
from support.paths import REPO
from support.reading import html_tables, unreadable

PUBLISHED = published_figures()  # seed ids as text: "000"


# ---------------------------------------------------------------- manifests and plans
def test_every_published_figure_has_a_seed_manifest_reading_it():
    loaded = seeds.load_seeds()
    assert [s.ident for s in loaded] == sorted(PUBLISHED["seed"].unique())
    for seed in loaded:
        mine = PUBLISHED[PUBLISHED["seed"] == seed.ident]
        read = {f["experiment"] for f in seed.figures}
        assert set(mine["experiment"]) <= read, (seed.ident, set(mine["experiment"]) - read)
        assert seed.shape, seed.ident  # every seed's page leads with the shape of its result
        for fig in seed.figures:  # a label the manifest names is one the CSV has: no typo goes unread
            unknown = set(fig.get("labels") or {}) - set(mine.loc[mine["experiment"] == fig["experiment"], "label"])
            assert not unknown, (seed.ident, unknown)
        for entry in seed.shape:  # a shape names figures the CSV has
            assert {entry["of"], entry.get("over") or entry["of"]} <= set(mine["label"]), entry


def test_only_takes_numbers_with_or_without_zeros_and_names_the_seeds_when_wrong():
    assert [s.ident for s in seeds.load_seeds("0, seed-003")] == ["000", "003"]
    assert [s.ident for s in seeds.load_seeds(["2", "002"])] == ["002"]
    with pytest.raises(InputError, match="no such seed; the seeds are 000, 001, 002, 003"):
        seeds.load_seeds("9")
    with pytest.raises(InputError, match="no such seed"):
        seeds.load_seeds("../000")


def test_a_bad_manifest_says_what_to_fix(tmp_path):
    good = (REPO / "data/seeds/seed-002.yaml").read_text()
    (tmp_path / "seed-002.yaml").write_text(good.replace("figures:", "figurs:"))
    with pytest.raises(InputError, match="unknown key.*figurs"):
        seeds.load_seeds(folder=tmp_path)
    (tmp_path / "seed-002.yaml").write_text(good.replace("from: per-core", "from: per-cor"))
    with pytest.raises(InputError, match="come from 'per-cor', which is not one of its experiments"):
        seeds.load_seeds(folder=tmp_path)
    (tmp_path / "seed-002.yaml").write_text(good.replace('seed: "002"', "seed: 002"))  # YAML's 2: the id is lost
    with pytest.raises(InputError, match=r"seed-002.yaml: seed is a number \(2\), not the seed's number as text"):
        seeds.load_seeds(folder=tmp_path)
    # figures name the notebook's results by key (iolab.report.contract), not by the name it records
    (tmp_path / "seed-002.yaml").write_text(good.replace("iops: iops_at_qd", 'iops: "IOPS at QD {qd} (t/io_uring)"'))
    with pytest.raises(InputError, match=r"per_core', iops: 03_io_uring_per_core.ipynb records no result 'IOPS at QD"):
        seeds.load_seeds(folder=tmp_path)
    (tmp_path / "seed-002.yaml").write_text(good.replace("    poll: ", "    polling: "))  # preflight's names only
    with pytest.raises(
        InputError,
        match=r"setup: checks: polling is no check of iolab preflight \(did you mean .poll.\?\): use governor, ",
    ):
        seeds.load_seeds(folder=tmp_path)
    (tmp_path / "seed-002.yaml").write_text(good.replace("03_io_uring_per_core.ipynb", "09_none.ipynb"))
    with pytest.raises(InputError, match=r"experiments\[0\]\.notebook: no notebook 09_none.ipynb in "):
        seeds.load_seeds(folder=tmp_path)


def test_dry_run_prints_the_plan_with_run_counts_and_an_estimate(tmp_path):
    done = cli_here("seeds", "--dry-run", "--quick", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    m = re.search(
        r"4 seed\(s\) \(000, 001, 002, 003\), 8 notebook runs, (\d+) fio runs, at most about (\d+) (s|min)", head
    )
    assert m, head
    assert int(m.group(1)) > 20 and (m.group(3) == "s" or int(m.group(2)) <= 10)  # --quick: 10 minutes here
    assert "03_io_uring_per_core.ipynb" in done.stdout and "not polled" in done.stdout
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was made: not even the folder or a spec
    bad = cli_here("seeds", "--dry-run", "--device", "/dev/nonexistent-ssd", "--out", tmp_path / "out")
    assert bad.returncode == 1 and "no such device" in bad.stderr
    mine = tmp_path / "my-data.bin"
    mine.write_bytes(b"keep")
    bad = cli_here("seeds", "--dry-run", "--device", mine, "--out", tmp_path / "out")
    assert bad.returncode == 1 and "is not a block device" in bad.stderr and mine.read_bytes() == b"keep"


def test_devices_given_are_the_many_devices_runs_devices(tmp_path):
    """--device A --device B: notebook 06's one-fio-per-device run reads them, not loop
    devices of its own (in the NVMe lab its losetup found no loop device: the run failed)."""
    planned = seeds.plan(seeds.load_seeds("001"), tmp_path, "quick", devices=["/dev/a", "/dev/b"], dry_run=True)
    (path,) = [p for p in planned if p.experiment.name == "kernel-path"]
    assert path.run.parameters["devices"] == ["/dev/a", "/dev/b"] and path.run.parameters["target"] == "/dev/a"
    assert not (tmp_path / "seed-001").exists()


def test_comparisons_read_recorded_results_and_say_why_a_figure_has_none(tmp_path):
    seed = seeds.load_seeds("002")[0]
    run_dir = tmp_path / "seed-002" / "per-core"
    run_dir.mkdir(parents=True)
    results = [
        {
            "name": "IOPS at QD 1 (t/io_uring)",
            "value": 145000.0,
            "unit": "IO/s",
            "low": 140000.0,
            "high": 150000.0,
            "note": "n=3",
        },
        {"name": "mean latency at QD 1 (fio)", "value": None, "unit": "µs", "note": "skipped: no tool"},
        {"name": "mean latency at QD 1 (t/io_uring)", "value": 6.9, "unit": "µs", "note": "QD ÷ IOPS"},
    ]
    (run_dir / "run.json").write_text(json.dumps({"status": "ok", "results": results, "run_folders": []}))
    table = seed_comparisons.comparisons(seed, tmp_path).set_index(["label", "metric"])
    qd1 = table.loc[("Optane Gen2 QD1 t/io_uring", "iops")]
    assert qd1["local"] == 145000.0 and qd1["ratio"] == pytest.approx(0.5) and qd1["low"] == 140000.0
    assert table.loc[("Optane Gen2 QD1 t/io_uring", "mean_lat_us"), "how"] == "skipped: no tool"  # fio's measured
    # latency, never t/io_uring's QD ÷ IOPS shown as if it were measured
    assert "recorded no 'IOPS at QD 16 (t/io_uring)'" in table.loc[("Optane Gen2 QD16 t/io_uring", "iops"), "how"]
    (run_dir / "run.json").write_text(
        json.dumps({"status": "failed", "error": "fio: bad option\nmore", "results": [], "run_folders": []})
    )
    failed = seed_comparisons.comparisons(seed, tmp_path)
    assert failed["local"].isna().all() and (failed["how"] == "experiment per-core failed: fio: bad option").all()


# ---------------------------------------------------------------- real runs
def _outputs(notebook) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])
    )


def _check_pages(browser, out, idents):  # noqa: F811
    """Every page offline in Chromium: no console error, no failed fetch, every picture
    drawn, every published figure of the seed a row with a local value or a reason, each
    check the write-up names beside this machine's verdict."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    errors, failed = [], []
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto((out / "index.html").as_uri())
        page.wait_for_load_state("load")
        assert page.locator("table tbody tr").count() == len(idents)
        for ident in idents:
            seed = seeds.load_seeds(ident)[0]
            page.goto((out / f"seed-{ident}.html").as_uri())
            page.wait_for_load_state("load")
            rows = page.locator("tr[data-figure]")
            expected = seed_comparisons.comparisons(seed, out)
            assert rows.count() == len(expected) >= len(PUBLISHED[PUBLISHED["seed"] == ident])
            for label in PUBLISHED.loc[PUBLISHED["seed"] == ident, "label"]:
                assert page.locator("td", has_text=label).count() >= 1, label
            why = page.eval_on_selector_all("tr[data-figure][data-local='0'] td.why", "t => t.map(x => x.innerText)")
            assert all(w.strip() for w in why)
            widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
            assert widths and all(w > 0 for w in widths), widths
            text = page.locator("body").inner_text()
            assert "No --device" in text and "Smoke settings" in text and "What differs" in text
            assert page.locator("tr[data-shape]").count() == len(seed.shape)  # the shape leads the page
            assert page.locator("tr[data-command]").count() == expected["label"].nunique()  # each figure's commands
            ran = page.eval_on_selector_all("tr[data-command] td:nth-child(3) code", "c => c.map(x => x.innerText)")
            assert ran and all(c.startswith(("fio --name=", "taskset -c")) for c in ran), ran
            assert "not explained by the manifest" not in text  # every change from the author's command has a reason
            assert "Why the numbers differ, as measured" in text and page.locator("h3[data-gap]").count() >= 1
            gaps = page.eval_on_selector_all("h3[data-gap]", "h => h.map(x => x.innerText)")  # iolab explain's rule
            assert all("× the write-up's" in g or "no figure of this experiment" in g for g in gaps), gaps
            for check, words in (seed.setup.get("checks") or {}).items():  # the write-up's set-up, check by check
                row = page.locator(f"tr[data-check='{check}']")
                assert row.count() == 1 and words in row.inner_text(), check
                assert row.locator("td").nth(2).inner_text() in (
                    "ok",
                    "warn",
                    "fail",
                    "unknown",
                    "not checked",
                    "differs",
                )
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            assert page.locator("section[data-evidence]").count() >= 1  # the notebooks' own readings, tables, figures
            raw = [w for t in html_tables(page.content()) for w in unreadable(t)]  # evidence tables too
            assert not raw, (ident, raw)
            for writeup in (out / f"seed-{ident}").glob("*/*.html"):  # each notebook's write-up reads like a paper
                raw = [w for t in html_tables(writeup.read_text()) for w in unreadable(t)]
                assert not raw, (writeup.name, raw)
    finally:
        context.close()
    assert not errors and not failed, (errors, failed)


def _smoke(out, only):
    done = cli_here("seeds", "--smoke", "--only", only, "--cpus", CPU, "--out", out)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
@pytest.mark.skipif(not is_root, reason="seed 000's ladder runs on a loop device (root)")
def test_seed_000_resumes_after_sigterm_with_only_what_was_missing(browser, tmp_path, loop_watch):  # noqa: F811
    env = {**os.environ, "IOLAB_DATA": str(tmp_path / "data")}
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "iolab.cli",
        "seeds",
        "--smoke",
        "--only",
        "000",
        "--cpus",
        str(CPU),
        "--out",
        str(out),
    ]
    first = out / "seed-000" / "qd-knee" / "notebook_run.json"
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first.exists(), proc.communicate(timeout=60)
        time.sleep(2)  # into the ladder
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err, err[-2000:]
    assert not (out / "seed-000" / "ladder" / "notebook_run.json").exists()
    kept = first.read_text()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ladder: ok" in done.stderr and "qd-knee:" not in done.stderr  # only what was missing
    assert first.read_text() == kept
    knee = _outputs(out / "seed-000/qd-knee/01_queue_depth_knee.ipynb")
    assert "IOPS at QD" in knee and "Cycles per IO" in knee and "recorded 6 results" in knee
    assert "median IOPS of 2 repeats per QD" in knee or "No knee:" in knee
    assert "skipped" in _outputs(out / "seed-000/ladder/02_single_core_tuning_ladder.ipynb")
    assert (out / "seed-000/qd-knee/01_queue_depth_knee.html").read_text().count("data:image/png;base64") >= 4
    assert list((tmp_path / "data/runs").glob("qd-knee-*/*/fio.json"))
    table = seed_comparisons.comparisons(seeds.load_seeds("000")[0], out).set_index(["label", "metric"])
    assert table.loc[("E-core QD32 io_uring (interrupts)", "iops"), "local"] > 0
    assert "skipped" in table.loc[("3 + io_uring_cmd passthrough", "iops"), "how"]
    assert "qd" not in set(table.reset_index()["metric"])  # a depth is a condition: the commands show it
    runs = table.loc[("1 baseline io_uring", "iops"), "runs"]  # the fixed-depth runs, not the climb's
    assert runs and all(json.loads((Path(r) / "params.json").read_text())["fio_options"]["iodepth"] == 32 for r in runs)
    assert pd.isna(table.loc[("7 max polled QD380", "iops"), "local"])  # not step 5's value again: its own reason
    page = (out / "seed-000.html").read_text()  # the ladder's gap: polling listed with the author's figure as context
    assert "polled completions: completions polled in the write-up, by interrupt here" in page
    _check_pages(browser, out, ["000"])
    assert loop_watch.seen and not loop_watch.left_behind()  # detached after SIGTERM too


@pytest.mark.slow
def test_seed_001_cycles_per_io_and_where_they_go(browser, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    _smoke(tmp_path / "out", "001")
    flame = _outputs(tmp_path / "out/seed-001/where-cycles-go/04_flame_graph.ipynb")
    assert "of the samples are idle" in flame and "Normalised to equal totals" in flame
    html = (tmp_path / "out/seed-001/where-cycles-go/04_flame_graph.html").read_text()
    assert html.count("data:image/png;base64") >= 2  # both flame graphs are pictures
    row = (
        seed_comparisons.comparisons(seeds.load_seeds("001")[0], tmp_path / "out")
        .set_index("metric")
        .loc["cycles_per_io"]
    )
    assert row["published"] == 8666 and row["local"] > 0 and row["ratio"] > 0
    from iolab.seeds.shape import shapes

    (seed,) = seeds.load_seeds("001")
    busy = shapes(seed, seed_comparisons.comparisons(seed, tmp_path / "out"), tmp_path / "out").iloc[0]
    assert busy["published"] == 8666 and busy["local"] > 0 and "core-busy cycles per IO" in busy["why"]
    assert busy["unit"] == "cycles/IO"  # his arithmetic, a figure: no point on the page's ratio axis
    _check_pages(browser, tmp_path / "out", ["001"])
    page = (tmp_path / "out/seed-001.html").read_text()  # an experiment a level leaves out is said, with why
    assert "kernel-path — notebook 06_kernel_io_path.ipynb (<span class='not run at the smoke level'>" in page
    assert "experiment kernel-path is not run at the smoke level: the smoke level checks" in page
    # what `iolab reproduce` re-runs the seed's notebook with (tests/test_reproduce.py re-runs
    # notebooks): the parameters it ran with, its results and its run folders, recorded
    executed = tmp_path / "out/seed-001/single-core/01_queue_depth_knee.ipynb"
    nb = json.loads(executed.read_text())
    params, kept = parameters(nb), recorded(nb)
    assert source_notebook(nb, executed).resolve() == (REPO / "notebooks" / executed.name).resolve()
    assert (params["queue_depths"], params["runtime_s"], params["repeats"]) == ([1, 32], 0.3, 2)  # the smoke's
    assert [r["name"] for r in kept["results"]][:2] == ["peak IOPS", "knee QD"]
    assert len(kept["run_folders"]) == 4  # QD 1 and 32, 2 repeats


@pytest.mark.slow
@pytest.mark.skipif(not is_root, reason="loop devices need root")
def test_seed_002_per_core_on_a_loop_device(browser, tmp_path, monkeypatch, loop_watch):  # noqa: F811
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    _smoke(tmp_path / "out", "002")
    assert "Little's law estimate" in _outputs(tmp_path / "out/seed-002/per-core/03_io_uring_per_core.ipynb")
    table = seed_comparisons.comparisons(seeds.load_seeds("002")[0], tmp_path / "out").set_index(["label", "metric"])
    qd128 = table.loc[("Optane Gen2 QD128 t/io_uring", "iops")]
    assert qd128["local"] > 0 and pd.isna(qd128["low"])  # 2 repeats: no interval (compare.MIN_REPEATS)
    assert "not measured at these settings" in table.loc[("Optane Gen2 QD16 t/io_uring", "iops"), "how"]
    _check_pages(browser, tmp_path / "out", ["002"])
    assert loop_watch.seen and not loop_watch.left_behind()


@pytest.mark.slow
@pytest.mark.skipif(not is_root, reason="loop devices need root")
def test_seed_003_search_reduced_to_what_the_machine_can_vary(browser, tmp_path, monkeypatch, loop_watch):  # noqa: F811
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path / "data"))
    _smoke(tmp_path / "out", "003")
    text = _outputs(tmp_path / "out/seed-003/search/05_parameter_search.ipynb")
    assert re.search("matters most|No setting makes a difference the repeats can show", text), text[-2000:]
    table = seed_comparisons.comparisons(seeds.load_seeds("003")[0], tmp_path / "out").set_index("label")
    roof = table.loc["device capacity: best of any 1 device run"]
    assert roof["local"] > 0 and "roof" in roof["how"]
    wide = table.loc["C at 512 B: bandwidth"]  # the I/O-size axis, narrowed at smoke to the optimum
    assert wide["local"] > 0 and wide["unit"] == "MiB/s" and "iodepth=128" in wide["how"], wide["how"]
    if not os.path.exists("/sys/devices/system/cpu/cpu0/cpufreq"):  # a VM: said, not measured
        governor = table.loc["A, powersave governor: 16 devices, 8 cores (-61.2 %)"]
        assert pd.isna(governor["local"]) and "cpufreq" in governor["how"]
    assert (tmp_path / "out/seed-003/search/05_parameter_search.html").read_text().count("data:image/png;base64") >= 1
    _check_pages(browser, tmp_path / "out", ["003"])
    assert loop_watch.seen and not loop_watch.left_behind()
