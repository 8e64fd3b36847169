"""The suite's fixtures and hooks. What tests share besides fixtures lives in tests/support/
(a module for each thing it gives); no test module imports another."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.register_assert_rewrite("support")  # the helpers' asserts explain themselves as a test's do

from support import browser as browsers
from support import nvme_tier
from support.cpus import CPU
from support.devices import LoopWatch
from support.marks import is_root
from support.schedule import spread_long_tests
from support.strays import stop_strays


@pytest.fixture
def scratch(tmp_path):
    from iolab.machine.target import scratch_file

    return scratch_file(tmp_path / "scratch", "32m")


@pytest.fixture
def runs(tmp_path):
    return tmp_path / "runs"


@pytest.fixture
def loopdev():
    from iolab.machine.target import loop_device

    if not is_root:
        pytest.skip("needs root")
    with loop_device("64m") as dev:
        yield dev


@pytest.fixture(scope="session", autouse=True)
def _worker_locks(tmp_path_factory):
    """Under pytest-xdist, the CPU locks (``IOLAB_LOCKS``) in one folder per measuring CPU
    (``CPU``), shared by the workers that measure on it: their runs queue as two users' runs
    would, while an unpinned run, which locks every CPU (iolab.machine.locks), does not hold up the
    workers measuring on another CPU for no reason. The locks' own tests use ``private_locks``."""
    if "PYTEST_XDIST_WORKER" not in os.environ or "IOLAB_LOCKS" in os.environ:
        yield
        return
    folder = tmp_path_factory.getbasetemp().parent / f"locks-cpu{CPU}"  # the session's, not the worker's
    folder.mkdir(exist_ok=True)
    os.environ["IOLAB_LOCKS"] = str(folder)
    yield
    del os.environ["IOLAB_LOCKS"]


@pytest.fixture(scope="session", autouse=True)
def _own_history(tmp_path_factory):
    """The results history (``IOLAB_HISTORY``, iolab.record.history) in a folder of this test
    process's own, inherited by the notebooks and commands it starts: every notebook a test
    executes appends there, never to the checkout's data/history (nor to one IOLAB_HISTORY names)."""
    before = os.environ.get("IOLAB_HISTORY")
    os.environ["IOLAB_HISTORY"] = str(tmp_path_factory.mktemp("history"))
    yield
    if before is None:
        del os.environ["IOLAB_HISTORY"]
    else:
        os.environ["IOLAB_HISTORY"] = before


@pytest.fixture
def private_locks(tmp_path_factory, monkeypatch):
    """A lock folder of this test's own (``IOLAB_LOCKS``), world-writable like the real one:
    for tests about the CPU locks themselves, which must not meet another worker's runs."""
    folder = Path(tempfile.mkdtemp(prefix="iolab-locks-"))
    folder.chmod(0o1777)
    monkeypatch.setenv("IOLAB_LOCKS", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def own_ledger(tmp_path, monkeypatch):
    """``IOLAB_STATE`` of this test's own (children inherit it): what a killed process leaves
    is repaired by this test, not by a command of a test running beside it. The ledger folder."""
    monkeypatch.setenv("IOLAB_STATE", str(tmp_path / "state"))
    return tmp_path / "state" / "ledger"


@pytest.fixture
def loop_watch(own_ledger):
    """A ``LoopWatch`` on this test's own ledger."""
    watch = LoopWatch()
    yield watch
    watch.stop()


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium through Playwright (``support.browser.chromium``), one per test process:
    the browser tests, the seeds' pages and the write-ups share it, each in contexts of its own."""
    with browsers.chromium() as chrome:
        yield chrome


@pytest.fixture(scope="module")
def shots() -> Path:
    """A fresh folder for the module's screenshots (and JupyterLab's log), named in the output."""
    return browsers.shots_folder()


def pytest_collection_modifyitems(config, items):
    """The long tests first, spread over pytest-xdist's workers (``support.schedule``)."""
    spread_long_tests(items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: without it (-p no:xdist, the guest), unused
def pytest_xdist_node_collection_finished(node, ids):
    """On the controller: boot the NVMe tier in the background once a worker has collected its
    test, so that no worker waits for the guest (``support.nvme_tier``)."""
    nvme_tier.boot_in_background(node.config, ids)


def pytest_runtest_logreport(report):
    """On the controller, the tests it waits for before the tier's boot (``support.nvme_tier``)."""
    if report.when == "teardown":
        nvme_tier.test_ended(report.nodeid)


def pytest_sessionfinish(session):
    """On the controller (or a run without workers): no tool the tests started may outlive
    them (``support.strays``); any left fails the session, stopped and named."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    strays = stop_strays(session.config._tmp_path_factory.getbasetemp())
    if strays:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.ensure_newline()
        reporter.write_sep("=", "tools left running by the tests, now stopped (SIGKILL)", red=True)
        for line in strays:
            reporter.write_line(line, red=True)
        if session.exitstatus == pytest.ExitCode.OK:  # an interrupted or failed session keeps its status
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    nvme_tier.stop_background_boot()
