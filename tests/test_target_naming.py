"""One way to name a target everywhere, and the notebook form that always gives loop
devices back: when release() runs, the kernel stops, or a cell fails."""

import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from iolab.core.errors import TargetError
from iolab.machine import target as targets
from iolab.measure.runner import measure
from support.cpus import CPU
from support.marks import needs_root
from support.paths import REPO


@pytest.mark.parametrize(
    "spec,expect",
    [
        ("scratch", ("scratch", None)),
        (" SCRATCH ", ("scratch", None)),
        ("", ("scratch", None)),
        ("scratch:64m", ("scratch", "64m")),
        ("loop", ("loop", None)),
        (" Loop : 64M ", ("loop", "64M")),
        ("/dev/nvme0n1", ("path", "/dev/nvme0n1")),
        ("./loop", ("path", "./loop")),
    ],
)
def test_parse_spec(spec, expect):
    assert targets.parse_spec(spec) == expect


def test_a_misspelt_keyword_gets_a_hint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TargetError, match=r"did you mean 'loop'\?.*'loop:SIZE'"):
        targets.resolve("lopp", tmp_path)


def test_loop_needs_a_context(tmp_path):
    with pytest.raises(TargetError, match="use iolab.machine.target.use"):
        targets.resolve("loop:32m", tmp_path)


def _backing(notes: list[str]) -> str:
    """The /dev/shm file of a loop Target, from its notes ("tmpfs-backed (/dev/shm/...)")."""
    return next(n for n in notes if n.startswith("tmpfs-backed")).split("(")[1].rstrip(")")


def _attached(backing: str) -> list[str]:
    out = subprocess.run(["losetup", "-j", backing], capture_output=True, text=True, check=False)
    return out.stdout.split()


@needs_root
def test_use_holds_until_release_and_runs_refuse_a_released_target(runs):
    loop, other = targets.use(["loop:32m", "loop:16m"])
    backing = _backing(loop.notes)
    assert loop.size_bytes == 32 * 2**20 and other.size_bytes == 16 * 2**20
    assert Path(backing).exists() and _attached(backing)
    targets.release()
    assert loop.released and other.released
    assert not Path(backing).exists() and not _attached(backing)
    with pytest.raises(TargetError, match="was released"):
        measure({"runtime": "300ms"}, loop, cpus=[CPU], runs_dir=runs)


def _notebook(*sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@needs_root
@pytest.mark.parametrize("keep_going", [False, True], ids=["batch stops", "interactive goes on"])
def test_a_failing_middle_cell_leaves_no_loop_device(tmp_path, keep_going):
    """Batch (papermill stops at the error, the kernel shuts down) and interactive (the
    next cells still run) both end with the device detached and its /dev/shm file gone."""
    record = tmp_path / "loop.json"
    nb = _notebook(
        "import json\nfrom iolab.machine import target as targets\ntgt = targets.use('loop:32m')\n"
        f"json.dump({{'dev': str(tgt.path), 'notes': tgt.notes}}, open({str(record)!r}, 'w'))",
        "raise RuntimeError('a middle cell fails')",
        "assert tgt.released, 'the failed cell should have released the loop device'",
        "targets.release()",
    )
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=keep_going, resources={"metadata": {"path": str(REPO)}}
    )
    if keep_going:
        client.execute()
        assert not any(o.get("output_type") == "error" for o in nb.cells[2].outputs), nb.cells[2].outputs
    else:
        with pytest.raises(Exception, match="a middle cell fails"):
            client.execute()
    info = json.loads(record.read_text())
    backing = _backing(info["notes"])
    assert not Path(backing).exists(), f"{backing} left behind"
    assert not _attached(backing), f"{info['dev']} still attached"
