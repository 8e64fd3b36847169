"""The repository's own rules: environment.yml matches pyproject.toml, notebooks are
committed without outputs and with a papermill parameters cell, lib/ is not git-ignored."""
import re
import subprocess
import tomllib

import nbformat
import yaml

from conftest import REPO


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pip_deps = {_name(d) for d in project["dependencies"] + project["optional-dependencies"]["dev"]}
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert env["channels"][0] == "conda-forge"
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    conda_python = conda - {"python", "fio", "linux-perf", "pip"}
    assert conda_python == pip_deps, f"only in environment.yml: {conda_python - pip_deps}; only in pyproject: {pip_deps - conda_python}"
    assert {"fio", "linux-perf", "pip"} <= conda


def test_notebooks_are_clean_and_parameterised():
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"
        params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{path.name} needs one cell tagged 'parameters'"
        assert nb.metadata["kernelspec"]["name"] == "python3"


def test_gitignore_keeps_the_package():
    out = subprocess.run(["git", "check-ignore", "-q", "lib/iolab/fio.py"], cwd=REPO)
    assert out.returncode == 1  # not ignored
    assert subprocess.run(["git", "check-ignore", "-q", "data/runs/x/run.json"], cwd=REPO).returncode == 0


def test_every_column_and_cli_command_is_described():
    from iolab.cli import build_parser
    from iolab.columns import COLUMNS, label
    for col in COLUMNS.values():
        assert col.meaning and col.source, col.name
        if col.unit:
            assert label(col.name).endswith(f"({col.unit})")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {c.dest for c in sub._choices_actions} == set(sub.choices)
    assert all(c.help for c in sub._choices_actions)
