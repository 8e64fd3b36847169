"""t/io_uring: the parser on outputs recorded here, and live runs (make test builds it)."""

import subprocess
import sys

import pytest

from iolab.core.errors import TioError
from iolab.measure.runner import measure_tio
from iolab.read.tio import failure, looks_like_tio, parse_tio, parse_tio_text, summarise_tio
from support.cpus import CPU
from support.marks import needs_root
from support.paths import FIXTURES, REPO

TIO = FIXTURES / "tio"
have_tio = pytest.mark.skipif(not (REPO / "tools/t_io_uring").exists(), reason="t/io_uring not built (make tio)")


def test_parse_interrupt_driven_run():
    f = parse_tio(TIO / "interrupts_qd32.txt")
    assert len(f) >= 2 and (f.iops > 1e4).all() and f.qd.iloc[0] == 32 and f.polled.iloc[0] == 0
    assert f.max_iops.iloc[0] == pytest.approx(f.iops.max(), rel=0.01)
    assert (f.ios_per_submit_call == 32).all() and (f.bw_bytes_s > 0).all()


def test_parse_several_submitters():
    f = parse_tio(TIO / "two_submitters.txt")
    assert f.submitters.iloc[0] == 2
    s = summarise_tio(f)
    assert s["submitters"] == 2 and s["lat_mean_us_littles"] == pytest.approx(16 * 2 / s["iops"] * 1e6)


def test_plain_integer_iops_and_units():
    f = parse_tio(TIO / "qd1_512b.txt")
    assert f.qd.iloc[0] == 1 and f.iops.iloc[0] == int(f.iops.iloc[0])
    assert f.bw_bytes_s.iloc[0] == pytest.approx(f.iops.iloc[0] * 512, rel=0.05)


def test_unsupported_polling_is_detected():
    text = (TIO / "polled_unsupported.txt").read_text()
    assert "support polled IO" in failure(text)
    with pytest.raises(TioError, match="support polled IO"):
        parse_tio_text(text)


def test_iolab_parse_accepts_tio_output():
    out = subprocess.run(
        [sys.executable, "-m", "iolab.cli", "parse", str(TIO / "two_submitters.txt")], capture_output=True, text=True
    )
    assert out.returncode == 0 and "ios_per_submit_call" in out.stdout.splitlines()[0]
    assert looks_like_tio(out.stdout) is False


@have_tio
@needs_root
def test_live_tio_run_and_polling_failure(loopdev, tmp_path):
    r = measure_tio({"p": 0, "d": 16, "r": 2}, loopdev, cpus=[CPU], runs_dir=tmp_path)
    row = r.table.iloc[0]
    assert row.iops > 1e3 and row.tool == "t/io_uring" and 0 < row.cpu_busy_pct <= 100
    with pytest.raises(TioError, match="polled IO.*poll_queues"):
        measure_tio({"p": 1, "d": 16, "r": 2}, loopdev, cpus=[CPU], runs_dir=tmp_path)
