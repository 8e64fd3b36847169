"""The repository's own rules: environment.yml matches pyproject.toml, notebooks are
committed without outputs and with a papermill parameters cell, lib/ is not git-ignored."""

import ast
import json
import os
import re
import subprocess
import sys
import tomllib

import nbformat
import pytest
import yaml

from support.paths import REPO


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


@pytest.mark.parametrize(
    "file, extras", [("environment.yml", ("lab", "nvmelab")), ("environment-dev.yml", ("lab", "nvmelab", "dev"))]
)
def test_the_conda_files_match_pyproject(file, extras):
    """A user's conda environment holds the kit and its lab and NVMe-lab extras, not the test
    and lint tools; the developers' holds every extra too."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(project["optional-dependencies"]) == {"lab", "nvmelab", "dev"}
    wanted = [d for name in extras for d in project["optional-dependencies"][name]]
    pip_deps = {_name(d) for d in project["dependencies"] + wanted}
    env = yaml.safe_load((REPO / file).read_text())
    assert env["channels"][0] == "conda-forge"
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    conda_python = conda - {"python", "fio", "linux-perf", "stress-ng", "pip"}
    assert conda_python == pip_deps, (
        f"only in {file}: {conda_python - pip_deps}; only in pyproject: {pip_deps - conda_python}"
    )
    assert {"fio", "linux-perf", "pip"} <= conda


def test_every_library_the_kit_imports_is_declared():
    """A third-party module imported anywhere in lib/ (function-level imports too) comes from
    a distribution pyproject.toml declares (``importlib.metadata.packages_distributions``): a
    dependency, or an extra's for the feature that imports it (the NVMe lab's zstandard)."""
    import ast
    from importlib.metadata import packages_distributions

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_name(d) for d in project["dependencies"] + project["optional-dependencies"]["nvmelab"]}
    imported = set()
    for path in (REPO / "lib" / "iolab").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module.split(".")[0])
    third = imported - set(sys.stdlib_module_names) - {"iolab"}
    where = packages_distributions()
    undeclared = {m: where.get(m) for m in third if not {_name(d) for d in where.get(m, [m])} & declared}
    assert not undeclared, f"imported but not in pyproject.toml's dependencies: {undeclared}"


def test_notebooks_are_clean_and_parameterised():
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"
        params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{path.name} needs one cell tagged 'parameters'"
        assert nb.metadata["kernelspec"]["name"] == "iolab"  # the project's kernel (iolab.report.kernel)


NARRATED = {"studies", "read", "stats", "plots"}  # what a notebook narrates; the rest through the front door


def test_each_notebook_imports_the_front_door_and_what_it_narrates():
    """Issue 43's bar: a notebook imports iolab.nb (targets, how to measure, the record, published
    figures) and the studies, readings and plots it narrates, at most four of these; never
    core/, runs/ or the other layers behind the front door."""
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert "%load_ext iolab" in "\n".join(code), path.name
        source = "\n".join(line for src in code for line in src.splitlines() if not line.lstrip().startswith("%"))
        reached = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "iolab":
                parts = node.module.split(".")
                reached |= {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                reached |= {a.name.split(".")[1] for a in node.names if a.name.startswith("iolab.")}
        assert "nb" in reached, f"{path.name} does not import the front door (iolab.nb)"
        assert reached <= {"nb"} | NARRATED, (
            f"{path.name} reaches past the front door into {reached - NARRATED - {'nb'}}"
        )
        assert len(reached) <= 4, f"{path.name} imports {sorted(reached)}"


def test_gitignore_keeps_the_package():
    out = subprocess.run(["git", "check-ignore", "-q", "lib/iolab/machine/fio.py"], cwd=REPO)
    assert out.returncode == 1  # not ignored
    assert subprocess.run(["git", "check-ignore", "-q", "data/runs/x/run.json"], cwd=REPO).returncode == 0


def test_every_column_is_described_and_labelled_with_its_unit():
    from iolab.core.columns import COLUMNS, label

    for col in COLUMNS.values():
        assert col.meaning and col.source, col.name
        assert col.role in {"metric", "setting", "id"} and col.scale in {"linear", "log2"}, col.name
    # written by hand: what a reader of the plots should see
    assert [
        label(c)
        for c in (
            "iops",
            "clat_p99_us",
            "clat_p99_9_us",
            "bw_mib_s",
            "qd",
            "cycles_per_io",
            "cpu_freq_mhz",
            "runtime_ms",
            "bs",
        )
    ] == [
        "IOPS (IO/s)",
        "clat p99 (µs)",
        "clat p99.9 (µs)",
        "bandwidth (MiB/s)",
        "queue depth (IOs)",
        "CPU cycles per IO, fio's own (cycles/IO)",
        "CPU frequency (MHz)",
        "runtime (ms)",
        "block size",
    ]


def test_every_cli_command_has_help():
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "--help"], capture_output=True, text=True)
    commands = out.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    assert len(commands) >= 7
    for name in commands:
        text = out.stdout.split("\n    " + name, 1)[1].split("\n", 1)[0].strip()
        assert len(text) > 10, f"'iolab {name}' has no help line in 'iolab --help'"


STUDY_CALL = re.compile(
    r"\b(studies\.(?!\w*summary\b)(?!search\.preflight_of\b)[\w.]+|lad\.run_ladder|kp\.(?:direct_vs_buffered|knob_sweep|block_sizes|many_devices)"
    r"|(?<!\.)measure|search\.run)\(|\bpartial\(measure,"  # 04: both profiled runs through one partial
)


def test_every_notebook_forwards_allow_destructive_and_names_targets_one_way():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        if path.name == "09_history.ipynb":  # reads the history only: no target, no write guard
            assert not STUDY_CALL.search(path.read_text()), path.name
            continue
        nb = nbformat.read(path, as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assert "allow_destructive: bool = False" in params.source, path.name
        if "search_study(" not in "\n".join(code):  # a search spec names its own targets (iolab.measure.search)
            assert "targets.use(target, size)" in "\n".join(code), path.name
        calls = [line for src in code for line in src.splitlines() if STUDY_CALL.search(line)]
        assert calls, path.name
        assert "MeasureOptions(allow_destructive=allow_destructive" in "\n".join(code), path.name
        shared = any("common = dict(" in ln and "how=how" in ln for src in code for ln in src.splitlines())
        for line in calls:  # the measuring options built from the parameter, or the calls' own (08: one run)
            assert (
                "how=how" in line
                or ("**common" in line and shared)  # 01: either study with the same keywords
                or "how=MeasureOptions(allow_destructive=allow_destructive" in "\n".join(code)
            ), f"{path.name}: {line}"
        assert not any("__enter__" in src or "__exit__" in src for src in code), path.name


def test_a_notebook_committed_with_outputs_is_stored_without_them(tmp_path):
    """.gitattributes names the nbstripout filter and scripts/setup.sh configures it (as
    make setup does in the clone): what git stores has no outputs, the working copy keeps them."""
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "filter.nbstripout.clean" in setup and "*.ipynb filter=nbstripout" in (REPO / ".gitattributes").read_text()
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run(
        [*git, "config", "filter.nbstripout.clean", f'"{sys.executable}" -m nbstripout --keep-id'], check=True
    )
    (tmp_path / ".gitattributes").write_text((REPO / ".gitattributes").read_text())
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "1 + 1",
                execution_count=1,
                outputs=[nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)],
            )
        ]
    )
    nbformat.write(nb, tmp_path / "n.ipynb")
    subprocess.run([*git, "add", "n.ipynb", ".gitattributes"], check=True)
    stored = nbformat.reads(
        subprocess.run([*git, "show", ":n.ipynb"], check=True, capture_output=True, text=True).stdout, as_version=4
    )
    assert stored.cells[0].outputs == [] and stored.cells[0].execution_count is None
    assert nbformat.read(tmp_path / "n.ipynb", as_version=4).cells[0].outputs  # the user's copy keeps them


def test_provenance_does_not_run_the_notebook_filter(tmp_path):
    """In a fresh clone every notebook is racily clean and git status ran the nbstripout
    filter on all of them (11 s) at every recorded run; provenance reads git without it."""
    import time

    from iolab.record import provenance

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitattributes").write_text("*.ipynb filter=nbstripout\n")
    (tmp_path / "n.ipynb").write_text("{}")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "config", "filter.nbstripout.clean", "sleep 3; cat"], check=True)
    (tmp_path / "n.ipynb").touch()  # a stat change: git status would re-read (and filter) it
    start = time.monotonic()
    state = provenance.checkout(tmp_path)
    assert time.monotonic() - start < 2.5 and state["commit"] and not state.get("why")


def test_each_distribution_names_its_own_packages(tmp_path):
    from iolab.core import distro
    from iolab.core.errors import ToolMissing

    release = tmp_path / "os-release"
    for text, expected in [
        ('ID=debian\nVERSION_ID="12"\n', "debian"),
        ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', "ubuntu"),
        ('ID=pop\nID_LIKE="ubuntu debian"\n', "ubuntu"),
        ("ID=fedora\n", "debian"),  # not in the table: Debian's names
    ]:
        release.write_text(text)
        assert distro.distribution(str(release)) == expected
    assert distro.install_line(["perf", "fio", "losetup", "blkid"], "ubuntu") == (
        "apt-get install linux-tools-generic fio util-linux"
    )
    assert distro.package("kernel", "debian") == "linux-image-amd64"
    said = str(ToolMissing("setpriv"))  # once a TypeError: the package was a required argument
    assert said.startswith("'setpriv' is not installed; install it with: apt-get install util-linux")
    shell = subprocess.run(
        [sys.executable, str(REPO / "lib/iolab/core/distro.py"), "fio", "losetup", "blkid"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout.split() == ["fio", "util-linux"]  # what scripts/setup.sh reads


def test_a_wheel_carries_the_kit_and_init_makes_a_workspace_outside_any_checkout(tmp_path):
    """pip's view: the wheel built from this checkout holds the notebooks, seed manifests,
    examples, reference figures and the licence; installed apart from the checkout, `iolab init`
    makes a workspace from it, and a command run inside that workspace finds its kit there."""
    import zipfile

    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*build, str(REPO)], check=True, capture_output=True, timeout=120)
    (wheel,) = wheels.glob("iolab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    notebooks = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert {f"iolab/kit/notebooks/{n}" for n in notebooks} <= names
    assert {f"iolab/kit/data/seeds/{p.name}" for p in (REPO / "data/seeds").glob("*.yaml")} <= names
    assert "iolab/kit/data/reference/published_figures.csv" in names
    assert "iolab/report/templates/iolab_writeup/index.html.j2" in names  # the write-up's nbconvert template
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "iolab/py.typed" in names  # typed (PEP 561)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    built = json.loads(zipfile.ZipFile(wheel).read("iolab/kit/build.json"))  # provenance of a pip install
    assert built["commit"] == head, built
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Classifier: Operating System :: POSIX :: Linux" in meta and "Keywords:" in meta
    assert "Provides-Extra: lab" in meta and 'Requires-Dist: jupyterlab>=4.0; extra == "lab"' in meta
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # what pip does with a pure-Python wheel's files
    env = {**os.environ, "PYTHONPATH": str(site), "IOLAB_HISTORY": "off"}
    iolab = [sys.executable, "-c", "import sys, iolab.cli; sys.exit(iolab.cli.main(sys.argv[1:]))"]
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from iolab.record.provenance import checkout; print(json.dumps(checkout()))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert json.loads(said.stdout)["commit"] == head and "installed wheel built from commit" in said.stdout, said
    made = subprocess.run([*iolab, "init", "ws"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "Jupyter kernel 'iolab'" in made.stdout, made.stdout  # what init did about the kernel, said
    ws = tmp_path / "ws"
    assert sorted(p.name for p in (ws / "notebooks").glob("*.ipynb")) == notebooks
    plan = subprocess.run(
        [*iolab, "seeds", "--quick", "--only", "002", "--dry-run"],
        cwd=ws / "data",
        env=env,
        text=True,
        capture_output=True,
    )
    assert plan.returncode == 0 and "03_io_uring_per_core.ipynb" in plan.stdout, plan.stderr
    again = subprocess.run([*iolab, "init", "ws"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 1 and "holds files" in again.stderr and "Traceback" not in again.stderr
