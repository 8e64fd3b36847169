import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
if not SHARED.exists():  # CI: shared/ beside the clone
    SHARED = Path(os.environ.get("IOLAB_SHARED", REPO.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PUBLISHED = SHARED / "fixtures"

is_root = os.geteuid() == 0
needs_root = pytest.mark.skipif(not is_root, reason="needs root (loop devices, mounts)")
needs_shared = pytest.mark.skipif(not PUBLISHED.exists(), reason="shared/fixtures not beside the checkout")


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


def mkfs_ext4(device):
    subprocess.run(["mkfs.ext4", "-q", "-F", str(device)], check=True, capture_output=True)


def write_dos_label(device):
    """One MBR partition (type 0x83, sectors 2048..18431) written by hand: no fdisk needed."""
    import struct

    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384)
    with open(device, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")


def python_of(cell_source: str) -> str:
    """A notebook code cell as plain Python for exec(): its IPython magic lines (the notebooks'
    ``%load_ext iolab``) left out."""
    return "\n".join(line for line in cell_source.splitlines() if not line.lstrip().startswith("%"))


QUICK = {"runtime": "300ms", "ioengine": "psync", "rw": "randread", "bs": "4k"}  # plumbing, not numbers

# The CPU this test process measures on: pytest-xdist's workers (make test runs one per CPU
# and one more) take them in turn, so pinned runs of different CPUs never queue on one lock.
_ALLOWED = sorted(os.sched_getaffinity(0))
CPU = _ALLOWED[int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % len(_ALLOWED)]
OTHER_CPU = next((c for c in _ALLOWED if c != CPU), CPU)  # for what must stay off the measured CPU


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


class LoopWatch:
    """The loop devices that processes with this test's ``IOLAB_STATE`` create, read from their
    ledger entries (``iolab.machine.ledger.entries``) while they exist (polled every 20 ms: a loop
    device lives at least one run), so a test can check that exactly those were released
    while other tests make their own."""

    def __init__(self):
        import threading

        self.seen: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        from iolab.machine import ledger

        while not self._stop.wait(0.02):
            for _, entry in ledger.entries():
                if entry.get("kind") == "loop" and entry.get("backing"):
                    self.seen.setdefault(entry["backing"], {}).update({k: v for k, v in entry.items() if v})

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def left_behind(self) -> list[str]:
        """What was seen and is still there: a backing file, or a device still attached to it."""
        from iolab.machine.target import loop_backing

        self.stop()
        return [
            f"{e.get('device')} ({backing})"
            for backing, e in self.seen.items()
            if Path(backing).exists() or (e.get("device") and loop_backing(Path(e["device"]).name) == backing)
        ]


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


def pytest_collection_modifyitems(config, items):
    """The long tests first, spread over the workers. pytest-xdist's ``load`` scheduler hands
    each worker a first chunk of (tests / workers / 4) consecutive tests: sorted plainly, all
    the long ones (notebooks, browser, searches, the NVMe tier) fell in worker 0's chunk and
    it ran 6 minutes while the others idled after 3. So the long tests go, longest first, to
    the worker with the least long work so far, at the head of that worker's chunk; the
    browser tests as one group, as they share one JupyterLab and one Chromium per worker."""

    def weight(item):  # rough seconds of one CPU
        if item.get_closest_marker("nvme_boot"):
            return 0 if in_background else 80
        if item.get_closest_marker("browser"):  # a notebook's Run All and its checks in JupyterLab
            return 25
        return 15 if item.get_closest_marker("slow") else 0

    in_background = "PYTEST_XDIST_WORKER" in os.environ  # the controller boots the tier (TIER_TEST)
    last = [i for i in items if in_background and i.get_closest_marker("nvme_boot")]
    items[:] = [i for i in items if i not in last]

    groups: dict = {}
    for item in items:
        if weight(item):
            groups.setdefault("browser" if item.get_closest_marker("browser") else item.nodeid, []).append(item)
    long_ = sorted(groups.values(), key=lambda g: sum(map(weight, g)), reverse=True)
    short = [i for i in items if not weight(i)]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    chunk = max(len(items) // workers // 4, 2)
    heads: list[list] = [[] for _ in range(workers)]
    for group in long_:
        min(heads, key=lambda h: sum(map(weight, h))).extend(group)
    if workers < 2 or len(items) < 2 * workers or max(map(len, heads)) > chunk:
        items[:] = [i for g in long_ for i in g] + short + last
        return
    ordered, rest = [], iter(short)
    for head in heads:  # worker k's first chunk: its long tests, then short ones to fill it
        ordered += head + [next(rest) for _ in range(chunk - len(head))]
    items[:] = ordered + list(rest) + last  # the tier's test last: it reads what the boot left


TIER_TEST = "tests/test_nvmelab.py::test_the_nvme_tier_in_one_guest_boot"
_tier_boot: list = []  # the controller's background boot of the NVMe tier (a Popen)


def tier_result_path(config) -> Path:
    """Where the controller's background boot of the NVMe tier writes its result (and, with the
    suffix .started, says it started): in the session's temporary folder, which the controller
    and every worker share."""
    base = config._tmp_path_factory.getbasetemp()
    return (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "nvme-tier.json"


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: without it (-p no:xdist, the guest), unused
def pytest_xdist_node_collection_finished(node, ids):
    """On the controller: once a worker has collected the NVMe tier's test, boot the tier in
    the background (tests/nvme_tier_boot.py) so that no worker waits for the guest; the test,
    scheduled last, reads the result. Only when the lab can run here at all."""
    if _tier_boot or TIER_TEST not in ids or not is_root:
        return
    from iolab.nvmelab import image as nvmelab_image

    if nvmelab_image.missing_tools():
        return
    out = tier_result_path(node.config)
    out.with_suffix(".started").write_text(str(os.getpid()))
    _tier_boot.append(
        subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "nvme_tier_boot.py"), str(out)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    )


def pytest_unconfigure(config):
    """The background boot stopped if the session ends before it (Ctrl-C, a failure with -x):
    SIGTERM unwinds it (the guest and its files go), SIGKILL after 60 s."""
    for proc in _tier_boot:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def sigint_default() -> None:
    """``preexec_fn`` for a child a test sends SIGINT to: SIGINT's default action, as a
    terminal's foreground job has it. A job started in the background (``nohup make test &``,
    a script run with ``&``) ignores SIGINT and its children inherit that, so the test's
    Ctrl-C would never arrive; Python turns the default action into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def sigint_raises():
    """Within the block, SIGINT raises KeyboardInterrupt in this process even when it was
    started with SIGINT ignored (see ``sigint_default``)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def cli_here(*args) -> subprocess.CompletedProcess:
    """``iolab ARGS`` run in this process (``iolab.cli.main``), its output captured as a
    subprocess's would be: the imports a command needs (pandas, scipy, kneed: seconds) are
    paid once per test worker, not once per call. For what only a new process shows (start-up
    imports, signals, exit codes from the OS) tests still run ``python -m iolab.cli``."""
    import io
    from iolab.core import signals
    from iolab.cli import main

    out, err = io.StringIO(), io.StringIO()
    handlers = {s: signal.getsignal(s) for s in signals.CAUGHT}
    always = signals._always
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse: usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signals._always = always
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess(["iolab", *map(str, args)], code, out.getvalue(), err.getvalue())


NOBODY = 65534
_BIND_AND_EXEC = (
    "import os, subprocess, sys\n"
    "subprocess.run(['mount', '--bind', sys.argv[1], sys.argv[2]], check=True)\n"
    "os.execvp(sys.argv[3], sys.argv[3:])"
)


def reachable_by_others(path: Path) -> bool:
    """Every folder from / down to ``path`` lets other users through (o+x)."""
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def run_as_nobody(argv, *, env=None, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run(argv)`` as user nobody, who must be able to read this checkout (its
    ``.venv`` and ``lib``). A clone in a folder only root can enter (a home folder, /root,
    ``mktemp -d``) is bind-mounted onto a world-readable folder inside a private mount
    namespace (``unshare --mount``: the mount ends with the process, nothing to undo), and
    the paths of the checkout in ``argv`` and ``env`` are given as seen through it. Skipped,
    with the reason, where that cannot be done."""
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = dict(os.environ if env is None else env)
    if reachable_by_others(REPO):
        return subprocess.run([*drop, *map(str, argv)], env=env, **kw)
    if not shutil.which("unshare"):
        pytest.skip(f"user nobody cannot read {REPO} and unshare is missing to show it through a bind mount")
    view = Path(tempfile.mkdtemp(prefix="iolab-checkout-"))
    try:
        view.chmod(0o755)
        seen = lambda s: str(s).replace(str(REPO), str(view))  # noqa: E731
        env = {k: seen(v) for k, v in env.items()}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(view / "lib"), env.get("PYTHONPATH")]))
        runner = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-c",
            _BIND_AND_EXEC,
            str(REPO),
            str(view),
            *drop,
            *map(seen, argv),
        ]
        done = subprocess.run(runner, env=env, **kw)
        if done.returncode != 0 and "mount" in (done.stderr or "") and "Traceback" in (done.stderr or ""):
            pytest.skip(f"user nobody cannot read {REPO}, and a bind mount to show it failed: {done.stderr[-300:]}")
        return done
    finally:
        view.rmdir()
