"""The write guard judges the job fio will really run (iolab.machine.jobcheck), on real loop devices.

Every bypass a user found is tried against a real ext4 (or a DOS label, or a mount): it
must be refused before a run folder exists, and ``fsck.ext4 -n -f`` must find the
filesystem intact afterwards."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from iolab.core.errors import FioError, UnsafeTargetError
from iolab.machine.jobcheck import _block_of_char, _split, guard_job, normalise, parse_jobfile, write_reasons
from iolab.machine.target import existing_path
from iolab.measure.runner import measure
from support.devices import mkfs_ext4, write_dos_label
from support.fio import QUICK
from support.marks import needs_root


def fsck_clean(device):
    done = subprocess.run(["fsck.ext4", "-n", "-f", str(device)], capture_output=True, text=True)
    assert done.returncode == 0, f"fsck.ext4 exit {done.returncode}: {done.stdout}{done.stderr}"


def no_run_folder(runs):
    assert not runs.exists() or not list(runs.iterdir())


@pytest.fixture
def ext4(loopdev):
    mkfs_ext4(loopdev.path)
    return loopdev


# ---------------------------------------------------------------- fio's reading (no root)
def test_fio_resolves_aliases_blanks_and_global_order(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text("[global]\nreadwrite=randwrite\n[a]\nrw=randread \nverify=0\n[global]\nbs=8k\n[b]\n")
    jobs, parsed_by, _ = parse_jobfile(job)
    assert parsed_by == "fio --debug=parse"
    assert [(j.name, j.options) for j in jobs] == [
        ("a", {"rw": "randread", "verify": "0"}),
        ("b", {"rw": "randwrite", "bs": "8k"}),
    ]


@pytest.mark.parametrize(
    "text, words",
    [
        ("[x]\nno_such_option=1\n", "Bad option <no_such_option=1>"),
        ("[x]\nioengine=psync\nhipri\n", "Bad option <hipri>"),
        ("[x]\nReadWrite=randwrite\n", "Bad option <ReadWrite=randwrite>"),
        ("[x]\nrw=RANDWRITE\n", "failed parsing rw=RANDWRITE"),
        ("[x]\nrw= randwrite\n", "failed parsing rw= randwrite"),
    ],
)
def test_a_dropped_job_is_a_fio_error(tmp_path, text, words):
    job = tmp_path / "j.fio"
    job.write_text(text)
    with pytest.raises(FioError, match="Nothing was run") as err:
        guard_job(job)
    assert words in str(err.value) and "dropped" in str(err.value)


def test_read_only_judgement():
    assert write_reasons(normalise({"rw": "read", "verify": 0})) == []
    assert write_reasons(normalise({"readwrite": "randread:8", "verify": "md5", "do_verify": 1})) == []
    assert write_reasons(normalise({"readwrite": "randwrite "})) == ["rw=randwrite"]
    for opts, reason in [
        ({"rw": "read", "unlink": 1}, "unlink=1"),
        ({"rw": "read", "trim_percentage": 10}, "trim_percentage=10"),
        ({"rw": "read", "ioengine": "filedelete"}, "ioengine=filedelete"),
        ({"rw": "read", "exec_prerun": "true"}, "exec_prerun=true"),
        ({"rw": "read", "mem": "mmap:/x"}, "mem=mmap:/x"),
    ]:
        assert reason in write_reasons(normalise(opts))
    assert write_reasons(normalise({"rw": "read", "unlink": 0, "trim_backlog": "0"})) == []


def test_file_lists_and_char_devices():
    assert _split(r"/tmp/a\:b: /dev/x :") == ["/tmp/a:b", "/dev/x"]
    assert _block_of_char("/dev/ng0n1") == "/dev/nvme0n1"
    assert _block_of_char("/dev/null") is None


# ---------------------------------------------------------------- bypasses, real ext4
BYPASSES = {  # id: (target is the device?, options; {dev} is the device, {tmp} a temp dir)
    "readwrite alias": (True, {"readwrite": "randwrite"}),
    "trailing blank": (True, {"rw": "randwrite "}),
    "filename overrides scratch": (False, {"rw": "randwrite", "filename": "{dev}"}),
    "directory + filename": (False, {"rw": "write", "directory": "/dev", "filename": "{name}"}),
    "second of two files": (False, {"rw": "write", "filename": "{tmp}/x:{dev}"}),
    "escaped colon first": (False, {"rw": "write", "filename": r"{tmp}/a\:b:{dev}"}),
    "symlink": (False, {"rw": "write", "filename": "{tmp}/link"}),
    "opendir with a link": (False, {"rw": "write", "opendir": "{tmp}/dir", "filename": None}),
    "loop backing file": (False, {"rw": "write", "filename": "{backing}"}),
    "trim": (True, {"rw": "trim"}),
    "randtrim": (True, {"rw": "randtrim"}),
    "exec_postrun": (True, {"rw": "read", "exec_postrun": "true"}),
    "exec_postrun on scratch": (False, {"rw": "read", "exec_postrun": "dd if=/dev/zero of={dev}"}),
    "unlink": (True, {"rw": "read", "unlink": 1}),
    "mem=mmap into the device": (False, {"rw": "read", "mem": "mmap:{dev}"}),
    "write_iolog onto the device": (False, {"rw": "read", "write_iolog": "{dev}"}),
    "filecreate engine": (True, {"rw": "read", "ioengine": "filecreate"}),
}


@needs_root
@pytest.mark.parametrize("case", BYPASSES, ids=list(BYPASSES))
def test_bypass_is_refused_and_ext4_survives(case, ext4, scratch, runs, tmp_path):
    on_device, template = BYPASSES[case]
    (tmp_path / "link").symlink_to(ext4.path)
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "sub" / "dev").symlink_to(ext4.path)
    fill = {
        "dev": ext4.path,
        "name": ext4.path.name,
        "tmp": tmp_path,
        "backing": ext4.notes[0].split("(")[1].rstrip(")"),
    }
    options = {k: v.format(**fill) if isinstance(v, str) else v for k, v in template.items()}
    target = existing_path(ext4.path) if on_device else scratch
    with pytest.raises(UnsafeTargetError, match="allow_destructive") as err:
        measure({**QUICK, **options}, target, runs_dir=runs)
    message = str(err.value)
    assert "job [iolab]" in message
    assert ("ext4" in message and str(ext4.path) in message) or "can write anywhere" in message
    no_run_folder(runs)
    fsck_clean(ext4.path)


@needs_root
def test_leading_blank_is_refused_by_fio(ext4, runs):
    with pytest.raises(FioError, match="failed parsing rw= randwrite"):
        measure({**QUICK, "rw": " randwrite"}, existing_path(ext4.path), runs_dir=runs)
    no_run_folder(runs)
    fsck_clean(ext4.path)


@needs_root
def test_global_inherited_write_is_refused(ext4, runs, tmp_path):
    job = tmp_path / "j.fio"
    job.write_text(
        f"[global]\nfilename={ext4.path}\nruntime=1s\nioengine=psync\n"
        "[reader]\nrw=read\n[global]\nreadwrite=randwrite\n[writer]\n"
    )
    with pytest.raises(UnsafeTargetError, match=r"job \[writer\].*rw=randwrite.*ext4"):
        guard_job(job)
    fsck_clean(ext4.path)


@needs_root
@pytest.mark.parametrize("bad", [{"no_such_option": 1}, {"hipri": True}])
def test_bad_option_fails_before_a_run_folder(ext4, runs, bad):
    with pytest.raises(FioError, match="Bad option") as err:
        measure({**QUICK, **bad}, existing_path(ext4.path), runs_dir=runs)
    assert err.value.returncode == 1
    no_run_folder(runs)


@needs_root
def test_dos_label_and_the_ext4_in_its_partition(loopdev, scratch, runs):
    write_dos_label(loopdev.path)
    subprocess.run(["partx", "-a", str(loopdev.path)], check=True, capture_output=True)
    part = Path(f"{loopdev.path}p1")
    try:
        mkfs_ext4(part)
        with pytest.raises(UnsafeTargetError, match="dos.*partitions loop"):
            measure({**QUICK, "rw": "write"}, existing_path(loopdev.path), runs_dir=runs)
        with pytest.raises(UnsafeTargetError, match=f"{part}.*ext4"):
            measure({**QUICK, "readwrite": "randwrite ", "filename": str(part)}, scratch, runs_dir=runs)
        no_run_folder(runs)
        fsck_clean(part)
        with open(loopdev.path, "rb") as f:
            f.seek(510)
            assert f.read(2) == b"\x55\xaa"
    finally:
        subprocess.run(["partx", "-d", str(loopdev.path)], capture_output=True)


@needs_root
def test_mounted_filesystem(ext4, scratch, runs, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", str(ext4.path), str(mnt)], check=True)
    try:
        with pytest.raises(UnsafeTargetError, match=f"mount at {mnt}"):
            measure({**QUICK, "rw": "randwrite", "filename": str(ext4.path)}, scratch, runs_dir=runs)
        with pytest.raises(UnsafeTargetError, match="allow_mounted_write"):
            measure(
                {**QUICK, "rw": "write", "allow_mounted_write": 1},
                existing_path(ext4.path),
                runs_dir=runs,
                how={"allow_destructive": True},
            )
        no_run_folder(runs)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    fsck_clean(ext4.path)


# ---------------------------------------------------------------- what is allowed, really run
def _argv(folder):
    return json.loads((folder / "argv.json").read_text())["argv"]


@needs_root
def test_read_with_verify_0_runs_readonly(ext4, runs):
    result = measure({**QUICK, "rw": "read", "verify": 0}, existing_path(ext4.path), runs_dir=runs)
    argv = _argv(result.path)
    assert argv[-2:] == ["--readonly", "job.fio"]
    assert result.table.iloc[0].total_ios > 0
    fsck_clean(ext4.path)


@needs_root
def test_randread_with_verify_md5_is_allowed_and_runs_readonly(ext4, runs):
    """Allowed (verify on a read only reads); the run then fails verification because the
    ext4 holds no fio verify headers: a FioError from the run, not a refusal."""
    with pytest.raises(FioError, match="fio error 84|bad magic"):
        measure({**QUICK, "rw": "randread", "verify": "md5"}, existing_path(ext4.path), runs_dir=runs)
    (folder,) = list(runs.iterdir())
    assert "--readonly" in _argv(folder)
    fsck_clean(ext4.path)


@needs_root
def test_params_name_the_device_an_option_overrode_the_scratch_target_with(ext4, scratch, runs):
    result = measure({**QUICK, "rw": "randread", "filename": str(ext4.path)}, scratch, runs_dir=runs)
    params = json.loads((result.path / "params.json").read_text())
    assert params["files"] == [
        {"job": "iolab", "option": "filename", "path": str(ext4.path), "kind": "block", "device": str(ext4.path)}
    ]
    assert params["target"].startswith(f"block {ext4.path} (fio options override the target scratch")
    assert json.loads((result.path / "run.json").read_text())["target"] == params["target"]
    assert "--readonly" in _argv(result.path)


def test_scratch_file_run_records_its_file_and_no_readonly(scratch, runs):
    result = measure({**QUICK, "rw": "randwrite"}, scratch, runs_dir=runs)
    params = json.loads((result.path / "params.json").read_text())
    (opened,) = params["files"]  # "missing" on first use: fio lays the file out
    assert opened["path"] == os.path.realpath(scratch.path) and opened["kind"] in ("file", "missing")
    assert opened["device"] is None
    assert params["target"] == scratch.describe() and "--readonly" not in _argv(result.path)


@needs_root
def test_write_to_a_blank_device_is_allowed(loopdev, runs):
    result = measure({**QUICK, "rw": "randwrite"}, existing_path(loopdev.path), runs_dir=runs)
    assert "--readonly" not in _argv(result.path)


def test_python_fallback_reads_like_fio(tmp_path):
    """The fallback (fio built without parse debug) resolves aliases and blanks the same way."""
    from iolab.machine.fio import fio_binary
    from iolab.machine.jobcheck import _python_jobs

    job = tmp_path / "j.fio"
    job.write_text("[global]\nreadwrite=randwrite\n; note\n[a]\n  rw=randread  \ntime_based\n[global]\nbs=8k\n[b]\n")
    fio_jobs = [(j.name, j.options) for j in parse_jobfile(job)[0]]
    assert [(j.name, j.options) for j in _python_jobs(job, fio_binary())] == fio_jobs


def test_many_jobs_at_once_are_judged_as_one_at_a_time(tmp_path, monkeypatch):
    """The batch guard (iolab.machine.jobbatch) gives each job text what guard_job_text gives
    it — the same JobCheck, or the same error with the same words — on legal jobs, a bad
    option and a bad value (fio drops the job), a write to a file iolab did not create, a
    [global] text and two-section texts, with a few fio calls for 60 texts."""
    import dataclasses
    import subprocess as sp

    from iolab.core.errors import IolabError
    from iolab.machine.fio import to_jobfile
    from iolab.machine.jobbatch import guard_job_texts
    from iolab.machine.jobcheck import guard_job_text

    (tmp_path / "users.dat").write_bytes(b"u" * 5000)
    texts = []
    for i in range(60):
        o = {"ioengine": "psync", "rw": "randread", "filename": str(tmp_path / "new.dat"), "size": "1m", "bs": "4k"}
        o |= [{}, {"hipri": 1}, {"rw": "foo"}, {"rw": "randwrite", "filename": str(tmp_path / "users.dat")}][i % 4]
        texts.append(to_jobfile({f"c{i}-0": o, f"c{i}-1": {**o, "bs": "8k"}} if i % 5 == 0 else {f"c{i}": o}))
    texts.append(to_jobfile({"g": {"rw": "read"}}, {"ioengine": "psync", "filename": str(tmp_path / "new.dat")}))
    calls = []
    real_run = sp.run
    monkeypatch.setattr(sp, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    many = guard_job_texts(texts)
    assert len(calls) <= 6, f"{len(calls)} fio calls for {len(texts)} texts"

    def alone(text):
        try:
            return guard_job_text(text)
        except IolabError as exc:
            return exc

    for i in (0, 1, 2, 3, 4, 5, 9, 10, 30, 59, 60):  # legal, bad option, bad value, user's file; later ones repeat
        one = alone(texts[i])
        if isinstance(one, IolabError):
            assert type(many[i]) is type(one) and str(many[i]) == str(one), i
        else:
            assert dataclasses.asdict(many[i]) == dataclasses.asdict(one), i
    assert [type(many[i]).__name__ for i in range(4)] == ["JobCheck", "FioError", "FioError", "UnsafeTargetError"]
    assert getattr(many[9], "like", None) == 1 and "job c9 dropped" in str(many[9])  # said without asking fio


# ---------------------------------------------------------------- a user's files (P15)
def test_a_users_file_is_refused_and_survives_new_and_own_files_are_written(tmp_path, scratch, runs):
    """A write job on an existing file iolab did not create is refused (judged on the file fio
    opens: a symlink, a directory= option); a file fio lays out in an iolab run, the scratch
    file and an empty file are iolab's to write; --allow-destructive writes anyway."""
    from iolab.core import owned

    precious = tmp_path / "precious.db"
    precious.write_text("".join(f"{i}\n" for i in range(70_000)))
    before = precious.read_bytes()
    (tmp_path / "alias").symlink_to(precious)
    for opts in (
        {"filename": str(precious)},
        {"filename": str(tmp_path / "alias")},
        {"directory": str(tmp_path), "filename": "precious.db"},
    ):
        with pytest.raises(UnsafeTargetError, match="existing file of 408,890 bytes that iolab did not create"):
            measure({**QUICK, "rw": "randwrite", "size": "1m", **opts}, scratch, runs_dir=runs)
    assert precious.read_bytes() == before and not owned.is_owned(precious)
    no_run_folder(runs)
    assert measure(
        {**QUICK, "rw": "randread", "filename": str(precious), "size": "256k"}, scratch, runs_dir=runs
    )  # reads are fine

    laid_out = {**QUICK, "rw": "randwrite", "size": "1m", "filename": str(tmp_path / "new.dat"), "ioengine": "psync"}
    measure(laid_out, scratch, runs_dir=runs)
    assert owned.is_owned(tmp_path / "new.dat")
    measure(laid_out, scratch, runs_dir=runs)  # fio made it in an iolab run: iolab's to write again
    assert owned.is_owned(scratch.path)
    (tmp_path / "users.dat").write_bytes(b"user data")
    (tmp_path / "users.dat").replace(tmp_path / "new.dat")  # replaced by the user: not iolab's any more
    with pytest.raises(UnsafeTargetError, match="did not create"):
        measure(laid_out, scratch, runs_dir=runs)
    measure({**laid_out, "filename": str(precious)}, scratch, runs_dir=runs, how={"allow_destructive": True})
    assert precious.read_bytes() != before


def test_fio_options_named_like_iolabs_reach_fio(tmp_path):
    """--size is fio's (it also sizes the scratch file iolab makes); iolab's own is --target-size;
    --thread is fio's, never an abbreviation of --threads."""
    from iolab.cli import main

    base = [
        "run",
        "--scratch-dir",
        str(tmp_path / "s"),
        "--runs-dir",
        str(tmp_path / "r"),
        "--rw=randread",
        "--runtime=300ms",
        "--ioengine=psync",
    ]
    assert main([*base, "--size=4m", "--thread"]) == 0
    params = json.loads(next((tmp_path / "r").glob("*/params.json")).read_text())
    assert params["fio_options"]["size"] == "4m" and params["fio_options"]["thread"] is True
    assert (tmp_path / "s/iolab-scratch.dat").stat().st_size == 4 << 20
    assert main([*base, "--target-size", "8m", "--size=2m"]) == 0
    assert (tmp_path / "s/iolab-scratch.dat").stat().st_size == 8 << 20
    # --profile=tiobench is fio's job profile (argparse took it for iolab's --profile flag): fio's guard judges it
    assert main([*base, "--profile=tiobench"]) == 1


def test_links_logs_and_short_files_of_a_user_are_refused(tmp_path, scratch, runs):
    """What a hostile review found: a scratch path that links to a user's file, fio's log
    prefixes naming a user's files, and a read job whose size would make fio lay a user's
    shorter file out again."""
    from iolab.core.errors import TargetError
    from iolab.machine.target import scratch_file

    precious = tmp_path / "precious.bin"
    precious.write_bytes(os.urandom(100 << 10))
    before = precious.read_bytes()
    for how, link in (("symbolic", os.symlink), ("hard", os.link)):
        folder = tmp_path / how
        folder.mkdir()
        link(precious, folder / "iolab-scratch.dat")
        with pytest.raises(TargetError, match="is a symbolic or hard link"):
            scratch_file(folder, "64k")
    (tmp_path / "log_bw.1.log").write_text("0, 1, 0, 4096, 0\n")
    with pytest.raises(UnsafeTargetError, match="write_bw_log"):
        measure({**QUICK, "rw": "randread", "write_bw_log": str(tmp_path / "log")}, scratch, runs_dir=runs)
    with pytest.raises(UnsafeTargetError, match="lays it out again"):
        measure({**QUICK, "rw": "read", "filename": str(precious), "size": "1m"}, scratch, runs_dir=runs)
    assert precious.read_bytes() == before and not list(tmp_path.glob(".precious.bin.iolab-owned"))
    no_run_folder(runs)


@needs_root
def test_a_copy_under_iolabs_name_on_its_reused_inode_is_a_users_file(ext4, runs, tmp_path):
    """ext4 (and tmpfs) give a freed inode to the next file at once: a user's file copied where
    iolab's scratch file, a file fio laid out, or an output page was had iolab's inode number
    and was overwritten without a flag. The note's birth time tells them apart; each is refused,
    and the user's bytes survive."""
    from iolab.core import owned
    from iolab.core.errors import TargetError
    from iolab.core.outputs import OutputExists, write_output
    from iolab.machine.target import scratch_file

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", str(ext4.path), str(mnt)], check=True)
    try:
        mine = os.urandom(300_000)

        def replaced(path: Path) -> int:
            """``path`` removed and a user's file copied to its name; how often its inode came back."""
            ino = path.stat().st_ino
            path.unlink()
            path.write_bytes(mine)
            return int(path.stat().st_ino == ino)

        scratch = scratch_file(mnt, "1m").path
        assert owned.is_owned(scratch)
        reused = replaced(scratch)
        with pytest.raises(TargetError, match="names the file iolab made, and this one was put there since"):
            scratch_file(mnt, "1m")
        laid_out = {**QUICK, "rw": "randwrite", "size": "1m", "filename": str(mnt / "fio.dat"), "ioengine": "psync"}
        measure(laid_out, scratch_file(tmp_path / "s", "1m"), runs_dir=runs)
        assert owned.is_owned(mnt / "fio.dat")
        reused += replaced(mnt / "fio.dat")
        with pytest.raises(UnsafeTargetError, match="did not create"):
            measure(laid_out, scratch_file(tmp_path / "s", "1m"), runs_dir=runs)
        page = write_output(mnt / "page.html", "<p>iolab's</p>")
        reused += replaced(page)
        with pytest.raises(OutputExists, match="iolab did not write it"):
            write_output(page, "<p>iolab's again</p>")
        assert all(p.read_bytes() == mine for p in (scratch, mnt / "fio.dat", page))
        assert reused >= 2, "ext4 gave back the freed inode in fewer than 2 of 3 cases: the test proves less"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    fsck_clean(ext4.path)


def test_a_refused_job_does_not_wait_for_its_cpu_first(tmp_path, scratch, runs, private_locks, monkeypatch):
    """A job the guard refuses waited up to 10 minutes for a busy CPU's lock before saying so:
    it is judged first, and refused at once."""
    import fcntl
    import time

    from support.cpus import CPU

    monkeypatch.setenv("IOLAB_LOCK_WAIT_S", "60")
    precious = tmp_path / "precious.db"
    precious.write_text("x" * 100_000)
    busy = os.open(private_locks / f"cpu{CPU}.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(busy, fcntl.LOCK_EX)  # another measurement holds the CPU
    try:
        start = time.monotonic()
        with pytest.raises(UnsafeTargetError, match="iolab did not create"):
            measure({**QUICK, "rw": "randwrite", "filename": str(precious)}, scratch, cpus=[CPU], runs_dir=runs)
        assert time.monotonic() - start < 20  # fio's parse only: never the 60 s wait
    finally:
        os.close(busy)
    assert precious.read_text() == "x" * 100_000
    no_run_folder(runs)


def test_the_nvme_labs_guest_takes_the_hosts_files_while_they_are_unchanged(tmp_path, monkeypatch):
    """Over 9p the guest sees other device and inode numbers and no birth time: a second lab
    run into one output folder was refused there ("plan.json exists and iolab did not write
    it"). The host lists its files at boot (owned.vouch); the guest takes one as iolab's while
    its size and modification time are those listed, and a file changed since is a user's."""
    from iolab.core import owned

    page, mine = tmp_path / "plan.json", tmp_path / "mine.json"
    page.write_text("{}")
    mine.write_text("keep")
    assert owned.mark(page)
    listed = tmp_path / "owned.json"
    listed.write_text(json.dumps(owned.vouch([tmp_path])))
    assert [Path(e["path"]).name for e in json.loads(listed.read_text())] == ["plan.json"]
    note = json.loads(owned.note_of(page).read_text())
    owned.note_of(page).write_text(json.dumps({**note, "dev": 1, "ino": 2, "born_ns": None}))  # as the guest sees it
    assert not owned.is_owned(page)
    monkeypatch.setenv(owned.VOUCHED_ENV, str(listed))
    assert owned.is_owned(page) and not owned.is_owned(mine)
    page.write_text('{"a user": "copy"}')  # changed since the host listed it
    assert not owned.is_owned(page)
