"""The run-folder contract (iolab.runs.producers): every column a producer emits is described in
iolab.core.columns, every file of a run folder is declared once, and the store knows the registry,
never a producer."""

import ast
import json
import shutil

import pytest

from iolab.core.columns import COLUMNS
from iolab.machine.target import scratch_file
from iolab.measure.runner import measure
from iolab.runs import producers, runcache, store
from support.cpus import CPU
from support.fio import QUICK
from support.paths import FIXTURES, REPO

PRODUCER_MODULES = {"fio", "fiojson", "tio", "sampling", "system", "perf", "fold"}
BY_NAME = {p.name: p for p in producers.PRODUCERS}


def _undescribed(producer, run_dir) -> set[str]:
    out = producer.read(run_dir)
    return set(out.columns if producer.rows else out) - set(COLUMNS)


def _layout() -> list[str]:
    return [*store.FILES, *(name for p in producers.PRODUCERS for name in p.files)]


@pytest.fixture(scope="module")
def fio_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fio")
    return measure(QUICK, scratch_file(tmp, "32m"), cpus=[CPU], runs_dir=tmp / "runs").path


def test_every_column_of_a_real_fio_run_is_described(fio_run):
    ran = [p for p in producers.PRODUCERS if p.ran(fio_run)]
    assert {"fio", "samplers", "system snapshot"} <= {p.name for p in ran}
    for producer in ran:
        assert not _undescribed(producer, fio_run), f"{producer.name}: add these to iolab.core.columns"
    table = runcache.load_runs(fio_run.parent)
    assert len(table) == 1 and set(table.columns) <= set(COLUMNS)


def test_every_file_of_a_run_folder_is_declared_once(fio_run):
    layout = _layout()
    assert len(layout) == len(set(layout)), "a file name is declared twice"
    assert {p.name for p in fio_run.iterdir()} <= set(layout)
    assert all(p.files for p in producers.PRODUCERS)


@pytest.mark.parametrize("name", ["interrupts_qd32.txt", "two_submitters.txt", "qd1_512b.txt"])
def test_every_column_of_t_io_uring_is_described(name, tmp_path):
    shutil.copy(FIXTURES / "tio" / name, tmp_path / "tio.txt")
    tio = BY_NAME["t/io_uring"]
    assert tio.ran(tmp_path) and tio.rows and not _undescribed(tio, tmp_path)


@pytest.mark.parametrize("name", ["stat_software.csv", "stat_hardware_list.csv"])
def test_every_column_of_perf_stat_is_described(name, tmp_path):
    shutil.copy(FIXTURES / "perf" / name, tmp_path / "perf_stat.csv")
    (tmp_path / "perf_stat_window.json").write_text(json.dumps({"window_s": 1.3}))
    stat = BY_NAME["perf stat"]
    assert stat.ran(tmp_path) and not _undescribed(stat, tmp_path)
    assert stat.read(tmp_path)["perf_window_s"] == 1.3


def test_store_imports_the_registry_and_no_producer():
    tree = ast.parse((REPO / "lib/iolab/runs/store.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):  # from .x import y -> x; from . import y, z -> y, z
            names = [node.module] if node.module else [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        imported |= {name.split(".")[-1] for name in names}
    readers = {p.read.__module__.split(".")[-1] for p in producers.PRODUCERS} - {"producers"}
    assert "producers" in imported
    assert not imported & (PRODUCER_MODULES | readers), (
        f"store imports producers: {imported & (PRODUCER_MODULES | readers)}"
    )
