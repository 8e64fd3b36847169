"""The iolab command line: a thin shell, errors as one line."""
import json
import subprocess
import sys

from conftest import FIXTURES


def iolab(*args, **kw):
    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], capture_output=True, text=True, **kw)


def test_parse_csv_and_json():
    out = iolab("parse", str(FIXTURES / "fio/jsonplus_randrw.json"))
    assert out.returncode == 0 and out.stdout.splitlines()[0].startswith("job_index,job,groupid,hostname")
    rows = json.loads(iolab("parse", str(FIXTURES / "fio/jsonplus_randrw.json"), "--format", "json").stdout)
    assert [r["direction"] for r in rows] == ["read", "write"]


def test_knee(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("qd,iops\n1,10\n2,20\n4,38\n8,47\n16,49\n32,50\n64,50\n")
    assert iolab("knee", str(csv), "--x", "qd", "--y", "iops").stdout.strip() == "8"
    csv.write_text("qd,iops\n1,5\n2,5\n4,5\n")
    assert iolab("knee", str(csv), "--x", "qd", "--y", "iops").stdout.strip() == "none"
    bad = iolab("knee", str(csv), "--x", "nope", "--y", "iops")
    assert bad.returncode == 1 and "has no column 'nope'" in bad.stderr


def test_run_prints_a_summary_and_stores(tmp_path):
    out = iolab("run", "--target", "scratch", "--size", "16m", "--cpus", "0", "--scratch-dir",
                str(tmp_path / "s"), "--runs-dir", str(tmp_path / "r"), "--rw=randread",
                "--runtime=1", "--ioengine=psync")
    assert out.returncode == 0, out.stderr
    assert "cycles_per_io" in out.stdout and "stored:" in out.stdout
    assert len(list((tmp_path / "r").iterdir())) == 1


def test_run_with_bad_option_and_missing_target(tmp_path):
    out = iolab("run", "--scratch-dir", str(tmp_path), "--size", "1m", "--runs-dir", str(tmp_path / "r"),
                "--bogus_option=3", "--runtime=1")
    assert out.returncode == 1 and "bogus_option" in out.stderr and "Traceback" not in out.stderr
    out = iolab("run", "--target", str(tmp_path / "missing"))
    assert out.returncode == 1 and "does not exist" in out.stderr


def test_sysinfo():
    snap = json.loads(iolab("sysinfo").stdout)
    assert "kernel" in snap and "absent" in snap
