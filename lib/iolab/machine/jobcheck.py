"""The job fio will really run: fio's own parse of a job file, the files each job opens,
and the guard that refuses a job that could destroy data.

fio is asked, not imitated. ``fio --parse-only --debug=parse JOBFILE`` prints, per section::

    parse    3728  Parsing section [x]
    parse    3728  handle_option=rw, ptr=randwrite

with aliases resolved (``readwrite`` -> ``rw``) and the value fio uses (trailing blanks
stripped; ``(null)`` for an option given without a value). A section's options are
printed only after the raw header line of the *next* section, so the ``Parsing section``
lines are the boundaries. Jobs inherit the ``[global]`` options read before them (last
wins). ``fio --parse-only`` may drop a job ("Bad option <...>", "failed parsing ...",
"fio: job x dropped") and still exit 0: that is a FioError here, raised before anything runs.

Many job texts at once (a search's cells): ``iolab.machine.jobbatch`` asks fio once per
chunk of them and gives each what ``guard_job_text`` would.

Fallback, when fio prints no parse debug lines (built without debug): a Python reading of
the ini text, option names mapped to fio's canonical names with the "alias:" lines of
``fio --cmdhelp`` and values stripped of blanks (:func:`normalise`).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core import owned
from ..core.errors import FioError, IolabError, TargetError, UnsafeTargetError
from .fio import _fmt, fio_binary
from .target import Target, block_size_bytes, holds_data, loop_backing

READ_MODES = {"read", "randread"}
# engines whose rw=read/randread only reads the job's files (fio 3.33 `fio --enghelp`);
# any other engine (falloc, ftruncate, e4defrag, filecreate, filedelete, exec, external:...) is a write
READ_ENGINES = {
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "io_uring_cmd",
    "posixaio",
    "mmap",
    "splice",
    "sg",
    "null",
    "filestat",
    "dirstat",
    "cpuio",
    "xnvme",
}
WRITE_IF_SET = (
    "unlink",
    "unlink_each_loop",
    "trim_percentage",
    "trim_backlog",
    "create_only",
    "fill_device",
    "allow_mounted_write",
)
WRITES_TO_PATH = ("write_iolog", "merge_blktrace_file")  # the value is a file fio writes
# the value is a prefix of the logs fio writes (PREFIX_bw.N.log, _clat_hist.N.log ...): writing
# them does not make the job's I/O a write, but a user's file there is not fio's to overwrite
LOG_OPTIONS = ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log")
# what these make fio do is not bounded by the job's files: a command, a replayed log that
# names its own files and may write, a built-in profile with its own jobs
UNBOUNDED = ("exec_prerun", "exec_postrun", "read_iolog", "profile")
FORMAT_EXPANSION_CAP = 256  # $jobnum / $filenum values tried per job
OPENDIR_CAP = 100_000  # files walked below one opendir
_DEBUG = re.compile(r"^parse\s+\d+\s+(.*)$")
_SECTION = re.compile(r"^Parsing section \[(.*)\]\s*$")
_OPTION = re.compile(r"^handle_option=(.*?), ptr=(.*)$")
_FAILED = ("Bad option", "failed parsing", "dropped", "unable to open", "while parsing", "requires an argument")


@dataclass
class Job:
    """One job as fio reads it: canonical option names -> values (None: given without value)."""

    name: str
    options: dict[str, str | None]


@dataclass
class OpenedFile:
    """A path a job opens. ``kind``: block, char, file, directory, missing or other.
    ``device``: the /dev block device holding the data (a char device's block device, the
    loop device a file backs), if any. ``assumed``: checked only to be safe (fio may not open it)."""

    job: str
    option: str
    path: str
    kind: str
    device: str | None
    assumed: bool = False


@dataclass
class JobCheck:
    """fio's reading of a job file, the files it opens and why each job is not read-only
    (``writes[job]`` empty = provably read-only)."""

    jobs: list[Job]
    files: list[OpenedFile]
    writes: dict[str, list[str]]
    parsed_by: str
    warnings: list[str] = field(default_factory=list)

    @property
    def read_only(self) -> bool:
        return not any(self.writes.values())

    @property
    def fio_readonly(self) -> bool:
        """Run fio with ``--readonly`` (it then refuses any write itself): every job is
        read-only and a device is opened. Not for files, which fio may have to lay out."""
        return self.read_only and any(f.kind in ("block", "char") for f in self.files)

    def record(self) -> list[dict[str, Any]]:
        """What fio really opens, for params.json."""
        return [{k: v for k, v in asdict(f).items() if k != "assumed"} for f in self.files if not f.assumed]

    def describe_target(self, target: Target) -> str:
        """``target.describe()``, or the paths fio really opens when options override it."""
        real = [f for f in self.record() if f["option"] in ("filename", "directory+filename")]
        if all(f["path"] == os.path.realpath(target.path) for f in real):
            return target.describe()
        opened = ", ".join(
            f"{f['kind']} {f['path']}" + (f" ({f['device']})" if f["device"] and f["device"] != f["path"] else "")
            for f in real
        )
        return f"{opened} (fio options override the target {target.describe()})"


# ---------------------------------------------------------------- fio's parse
# A question to fio, not a run. Naming a clock source spares fio's start-up its test of the
# CPU clock across CPUs (fio_monotonic_clocktest, gettime.c: a thread per CPU, about half of
# a parse's CPU time on two CPUs, more with more) and changes nothing of fio's reading of the
# jobs: the option's own two parse lines come before the first section, where no job reads
# them, and the sections, messages and exit are the same (a job's own clocksource= wins).
PARSE_ONLY = ("--parse-only", "--debug=parse", "--clocksource=clock_gettime")


def parse_jobfile(
    jobfile: str | os.PathLike, fio: str | None = None, shown: str | None = None, *, text: str | None = None
) -> tuple[list[Job], str, list[str]]:
    """(jobs, "fio --debug=parse" or "python fallback", fio's other stderr lines) for a job
    file (``shown``: how messages name it), or for ``text`` given to fio on its standard
    input (job file ``-``: no file is written, so none is left behind by a kill; an include
    is read from the current folder). Raises FioError with fio's words when fio rejects or
    drops a job."""
    fio = fio or fio_binary()
    source = "-" if text is not None else str(jobfile)
    done = subprocess.run([fio, *PARSE_ONLY, source], input=text, capture_output=True, text=True, check=False)
    debug = [m.group(1) for line in (done.stdout + "\n" + done.stderr).splitlines() if (m := _DEBUG.match(line))]
    said = [line for line in done.stderr.splitlines() if line.strip() and not _DEBUG.match(line)]
    if done.returncode != 0 or any(marker in line for line in said for marker in _FAILED):
        raise FioError(
            f"fio cannot parse {shown or f'the job file {jobfile}'} (`fio --parse-only`, exit "
            f"{done.returncode}): {' | '.join(said) or '(no message)'}. Nothing was run: "
            "fix or remove that option (see `fio --cmdhelp=OPTION`).",
            done.returncode or 1,
            done.stderr,
        )
    if not any(_SECTION.match(d) for d in debug):  # a debug build prints each section it reads
        return _python_jobs(Path(source), fio, text), "python fallback", said
    sections: list[tuple[str, dict[str, str | None]]] = []
    for d in debug:
        if m := _SECTION.match(d):
            sections.append((m.group(1), {}))
        elif (m := _OPTION.match(d)) and sections:
            sections[-1][1][m.group(1)] = None if m.group(2) == "(null)" else m.group(2)
    return _inherit(sections), "fio --debug=parse", said


def _inherit(sections: list[tuple[str, dict[str, str | None]]]) -> list[Job]:
    """Jobs with the [global] options read before them (a later value wins)."""
    glob: dict[str, str | None] = {}
    jobs = []
    for name, opts in sections:
        if name == "global":
            glob.update(opts)
        else:
            jobs.append(Job(name, {**glob, **opts}))
    return jobs


def _python_jobs(jobfile: Path, fio: str, text: str | None = None) -> list[Job]:
    """The fallback reading of an ini job file, or of its ``text`` (comments ; #, include,
    ${VAR})."""
    sections: list[tuple[str, dict[str, Any]]] = []

    def read(path: Path, given: str | None = None) -> None:
        for raw in (path.read_text() if given is None else given).splitlines():
            line = raw.strip()
            if not line or line[0] in ";#":
                continue
            if line.startswith("include "):
                inc = Path(line.split(None, 1)[1].strip())
                read(inc if inc.is_absolute() else path.parent / inc)
            elif line.startswith("[") and line.endswith("]"):
                sections.append((line[1:-1], {}))
            elif sections:
                key, sep, value = line.partition("=")
                sections[-1][1][key.strip()] = (
                    re.sub(r"\$\{(\w+)\}", lambda m: os.environ.get(m.group(1), ""), value) if sep else True
                )  # True: a flag, as in to_jobfile

    read(jobfile, text)
    return _inherit([(name, normalise(opts, fio)) for name, opts in sections])


def jobs_as_written(jobfile: str | os.PathLike, fio: str | None = None) -> list[Job]:
    """The jobs of an ini job file as its text says (option names canonical, ``[global]``
    under the jobs after it), without the engine defaults fio's parse fills in (it prints
    ``nonvectored=-1`` for io_uring_cmd): the options to run again as written."""
    return _python_jobs(Path(jobfile), fio or fio_binary())


@functools.cache
def _cmdhelp(fio: str, what: str) -> tuple[set[str], dict[str, str]]:
    """(canonical names, alias -> name) from ``fio --cmdhelp=WHAT``."""
    out = subprocess.run([fio, f"--cmdhelp={what}"], capture_output=True, text=True, check=False).stdout
    names, aliases, current = set(), {}, None
    for line in out.splitlines():
        key, sep, rest = line.partition(":")
        key = key.strip()
        if not sep or not key or " " in key:
            continue
        if key == "alias" and current:
            aliases[rest.strip()] = current
        elif key not in ("type", "default", "valid values", "minimum", "maximum", "interval"):
            current = key
            names.add(key)
    return names, aliases


def normalise(options: Mapping[str, Any], fio: str | None = None) -> dict[str, str | None]:
    """An option dict as fio would read it (the fallback): alias names -> canonical
    (``readwrite`` -> ``rw``, from the "alias:" lines of ``fio --cmdhelp``), values as
    job-file text with surrounding blanks stripped. Names stay case-sensitive, as in fio."""
    fio = fio or fio_binary()
    names, aliases = _cmdhelp(fio, "all")
    out: dict[str, str | None] = {}
    for key, value in options.items():
        key = str(key).strip()
        if key not in names and key not in aliases:
            aliases = {**aliases, **_cmdhelp(fio, key)[1]}
        if value is not None:
            text = _fmt(value)
            out[aliases.get(key, key)] = None if text is None else text.strip()
    return out


# ---------------------------------------------------------------- what a job does
def _set(value: str | None) -> bool:
    """fio's reading of a number/bool option: given without a value, or non-zero."""
    if value is None:
        return True
    try:
        return float(value.strip().rstrip("%")) != 0
    except ValueError:
        return value.strip() not in ("", "false")


def _mmap_file(mem: str | None) -> str | None:
    """``mem=mmap:/path`` (also mmaphuge, mmapshared): IO buffers are a shared mapping of /path."""
    kind, sep, path = (mem or "").partition(":")
    return path if sep and kind.startswith("mmap") and path else None


def write_reasons(options: Mapping[str, str | None]) -> list[str]:
    """Why a job (canonical options, as fio reads them) is not provably read-only, each as
    ``name=value``; empty when it only reads: ``rw`` (before any ``:``) is read or randread,
    a reading engine, and nothing that writes or runs a command whatever ``rw`` says.
    ``verify`` with a read workload only reads and is allowed."""
    reasons = []
    rw = (options.get("rw") or "read").split(":")[0]
    if rw not in READ_MODES:
        reasons.append(f"rw={options.get('rw')}")
    engine = options.get("ioengine") or "psync"
    if engine not in READ_ENGINES:
        reasons.append(f"ioengine={engine}")
    reasons += [f"{k}={options[k]}" for k in WRITE_IF_SET if k in options and _set(options[k])]
    reasons += [f"{k}={options[k]}" for k in (*WRITES_TO_PATH, *UNBOUNDED) if options.get(k)]
    if _mmap_file(options.get("mem")):
        reasons.append(f"mem={options['mem']}")
    return reasons


def _unbounded(options: Mapping[str, str | None]) -> list[str]:
    engine = options.get("ioengine") or ""
    return [f"{k}={options[k]}" for k in UNBOUNDED if options.get(k)] + (
        [f"ioengine={engine}"] if engine == "exec" or "/" in engine or engine.startswith("external") else []
    )


def _split(value: str | None) -> list[str]:
    """fio's colon-separated list (``\\:`` is a literal colon), blanks stripped."""
    parts = re.split(r"(?<!\\):", value or "")
    return [p.replace("\\:", ":").strip() for p in parts if p.strip()]


def _count(value: str | None, default: int = 1) -> int:
    try:
        return max(1, min(int(value or default), FORMAT_EXPANSION_CAP))
    except ValueError:
        return FORMAT_EXPANSION_CAP


def paths_of(job: Job) -> list[tuple[str, str, bool]]:
    """(option, path as fio builds it, assumed) for every file the job may open: ``filename``
    (or ``filename_format`` expanded for each job clone and file number), each under every
    ``directory`` and — conservatively — as given; every file below ``opendir``; the files
    ``write_iolog``, ``merge_blktrace_file``, ``replay_redirect`` and ``mem=mmap:`` name."""
    o = job.options
    dirs = _split(o.get("directory"))
    names = _split(o.get("filename"))
    if not names:
        fmt = o.get("filename_format") or "$jobname.$jobnum.$filenum"
        names = sorted(
            {
                fmt.replace("$jobname", job.name).replace("$jobnum", str(j)).replace("$filenum", str(f))
                for j in range(_count(o.get("numjobs")))
                for f in range(_count(o.get("nrfiles")))
            }
        )
    out = []
    for name in names:
        if dirs:
            out += [("directory+filename", f"{d}/{name}", False) for d in dirs]
        out.append(("filename", name, bool(dirs)))
    if o.get("opendir"):
        out += [("opendir", p, False) for p in _walk(o["opendir"])]
    out += [(k, o[k], False) for k in (*WRITES_TO_PATH, "replay_redirect") if o.get(k)]
    for k in LOG_OPTIONS:  # the logs already there under an absolute prefix (relative: the new run folder)
        prefix = o.get(k)
        if prefix and os.path.isabs(prefix):
            out += [(k, p, False) for p in sorted(glob.glob(glob.escape(prefix) + "_*.log"))]
    if mm := _mmap_file(o.get("mem")):
        out.append(("mem", mm, False))
    return out


def _walk(top: str) -> list[str]:
    """Every non-directory entry below ``top`` (fio adds the regular ones; devices and
    symlinks are listed too, to be safe)."""
    found = []
    for root, dirs, files in os.walk(top):
        found += [os.path.join(root, n) for n in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]]
        if len(found) > OPENDIR_CAP:
            raise TargetError(
                f"opendir={top} holds more than {OPENDIR_CAP} files: iolab cannot check "
                "them all; point opendir at a smaller directory"
            )
    return found


def classify(path: str, cwd: str | os.PathLike | None = None) -> tuple[str, str, str | None]:
    """(real path, kind, /dev block device holding the data) of a path fio opens from ``cwd``."""
    real = os.path.realpath(os.path.join(cwd or os.getcwd(), path))
    try:
        st = os.stat(real)
    except OSError:
        return real, "missing", None
    if stat.S_ISBLK(st.st_mode):
        return real, "block", _sys_name("block", st.st_rdev, real)
    if stat.S_ISCHR(st.st_mode):
        return real, "char", _block_of_char(_sys_name("char", st.st_rdev, real))
    if stat.S_ISREG(st.st_mode):
        return real, "file", _loop_backed_by(real)
    return real, "directory" if stat.S_ISDIR(st.st_mode) else "other", None


def _sys_name(kind: str, rdev: int, fallback: str) -> str:
    """/dev/<kernel name> of a device node by its numbers (the node may be named anything)."""
    link = Path(f"/sys/dev/{kind}/{os.major(rdev)}:{os.minor(rdev)}")
    named = f"/dev/{link.resolve().name}" if link.exists() else fallback
    return named if os.path.exists(named) else fallback


def _block_of_char(dev: str) -> str | None:
    """The block device behind a char device: NVMe generic ngXnY -> nvmeXnY, SCSI sgN ->
    /sys/class/scsi_generic/sgN/device/block/*. None for any other char device."""
    name = Path(dev).name
    if m := re.fullmatch(r"ng(\d+)n(\d+)", name):
        return f"/dev/nvme{m.group(1)}n{m.group(2)}"
    blocks = sorted(Path(f"/sys/class/scsi_generic/{name}/device/block").glob("*"))
    return f"/dev/{blocks[0].name}" if blocks else None


def _loop_backed_by(path: str) -> str | None:
    """The loop device this regular file backs: writing the file writes that device."""
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        text = loop_backing(backing.parent.parent.name)
        if text and os.path.realpath(text) == path:
            return f"/dev/{backing.parent.parent.name}"
    return None


# ---------------------------------------------------------------- the guard
def guard_job(
    jobfile: str | os.PathLike,
    allow_destructive: bool = False,
    *,
    fio: str | None = None,
    cwd: str | os.PathLike | None = None,
    shown: str | None = None,
) -> JobCheck:
    """fio's reading of ``jobfile`` (run from ``cwd``), judged. Raises FioError when fio
    rejects or drops a job; UnsafeTargetError for ``allow_mounted_write`` (always), and,
    unless ``allow_destructive``, for a job that is not provably read-only and opens a
    device holding data, or that runs a command or replays a log (iolab cannot see what
    those touch)."""
    return _judge(*parse_jobfile(jobfile, fio, shown), allow_destructive, cwd)


class _Looks:
    """What the guard reads about the paths of one judgement: a path's kind, a device's
    contents, a file's size and owner, each read once (a search judges thousands of jobs on
    one scratch file: ``iolab.machine.jobbatch``). A fresh one per judgement: files are
    judged afresh every time."""

    def __init__(self) -> None:
        self._seen: dict[tuple, Any] = {}

    def _once(self, key: tuple, read) -> Any:
        if key not in self._seen:
            self._seen[key] = read()
        return self._seen[key]

    def classify(self, path: str, cwd: str | os.PathLike | None) -> tuple[str, str, str | None]:
        return self._once(("kind", path, cwd), lambda: classify(path, cwd))

    def holds_data(self, device: str) -> list[str]:
        return self._once(("holds", device), lambda: holds_data(device))

    def size(self, real: str) -> int | None:
        return self._once(("size", real), lambda: _size(real))

    def owned(self, real: str) -> bool:
        return self._once(("owned", real), lambda: owned.is_owned(real))

    def device_size(self, device: str) -> int | None:
        return self._once(("devsize", device), lambda: block_size_bytes(Path(device).name))


def _bytes(n: int) -> str:
    """A byte count in words: ``10.0 GiB (10,737,418,240 bytes)``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _judge(
    jobs: list[Job],
    parsed_by: str,
    warnings: list[str],
    allow_destructive: bool,
    cwd: str | os.PathLike | None,
    looks: _Looks | None = None,
) -> JobCheck:
    """:func:`guard_job` on fio's reading of a job file (``looks``: what was read about its
    paths already, for many jobs judged at once)."""
    looks = looks or _Looks()
    files, writes = [], {}
    for job in jobs:
        writes[job.name] = write_reasons(job.options)
        if _set(job.options.get("allow_mounted_write", "0")):
            raise UnsafeTargetError(
                f"job [{job.name}] sets allow_mounted_write: iolab never sets fio's allow_mounted_write; remove it"
            )
        if (unbounded := _unbounded(job.options)) and not allow_destructive:
            raise UnsafeTargetError(
                f"refusing job [{job.name}]: fio reads it as {', '.join(unbounded)}, which can write "
                "anywhere and iolab cannot see what it touches. Remove it, or pass "
                "allow_destructive=True (MeasureOptions, or a notebook parameter; CLI: --allow-destructive) if you really mean it."
            )
        for option, path, assumed in paths_of(job):
            real, kind, device = looks.classify(path, cwd)
            files.append(OpenedFile(job.name, option, real, kind, device, assumed))
            found = looks.holds_data(device) if device and writes[job.name] and not allow_destructive else []
            if found:
                via = (
                    f" (the file behind {device})"
                    if kind == "file"
                    else f" (char device of {device})"
                    if kind == "char"
                    else ""
                )
                raise UnsafeTargetError(
                    f"refusing job [{job.name}]: fio reads it as {', '.join(writes[job.name])} (not "
                    f"read-only), and its {option} {path!r} opens {real}{via}, which holds "
                    f"{'; '.join(found)}. Writing would destroy that data. Use a scratch file or an "
                    "empty device, or pass allow_destructive=True (MeasureOptions, or a notebook parameter; CLI: --allow-destructive) if you "
                    "really mean it."
                )
            if kind == "file" and not device and not allow_destructive:
                _refuse_users_file(job, writes[job.name], option, path, real, looks)
            if (kind == "block" or kind == "file" and not allow_destructive) and not assumed:
                _refuse_beyond_end(job, option, path, real, kind, device, looks)
    return JobCheck(jobs, files, writes, parsed_by, warnings)


def _refuse_beyond_end(
    job: Job, option: str, path: str, real: str, kind: str, device: str | None, looks: _Looks
) -> None:
    """TargetError for a job whose ``offset`` (+ ``offset_increment`` per clone) + ``size``
    (or ``filesize``) reaches past the end of an existing file or device: fio would grow the
    file on its file system (a scratch file on the root disk), or fail on the device. A file
    is let grow with ``allow_destructive`` (the user's word that fio may change it)."""
    have = looks.size(real) if kind == "file" else looks.device_size(device or real)
    reach, how = reach_bytes(job.options)
    if not have or reach <= have:
        return
    what = "file" if kind == "file" else "device"
    then = (
        f"fio would grow the file to {_bytes(reach)} on the file system that holds it"
        if kind == "file"
        else "fio cannot write or read past a device's end"
    )
    raise TargetError(
        f"refusing job [{job.name}]: {how} reach {_bytes(reach)} into its {option} {path!r}, a {what} of "
        f"{_bytes(have)}: {then}. Lower offset/size (a percentage such as offset=50% stays inside), or use a "
        "larger target (--target-size, or a bigger file or device)"
    )


def reach_bytes(options: Mapping[str, str | None]) -> tuple[int, str]:
    """(how far into its file a job reaches, in bytes; the options that say so, in words):
    ``offset`` + ``offset_increment`` x (``numjobs`` - 1) + ``filesize`` (its upper end) or
    ``size`` / ``nrfiles``. Percentages (a share of the file) and what cannot be read count 0."""
    from ..core.validate import parse_size

    def size_of(key: str) -> int:
        text = (options.get(key) or "").strip()
        if not text or "%" in text:
            return 0
        try:
            return parse_size(re.split(r"[-:]", text)[-1])
        except (IolabError, ValueError):
            return 0

    clones = _count(options.get("numjobs")) - 1
    length = size_of("filesize") or size_of("size") // _count(options.get("nrfiles"))
    reach = size_of("offset") + size_of("offset_increment") * clones + length
    said = [f"{k}={options[k]}" for k in ("offset", "offset_increment", "size", "filesize") if size_of(k)]
    if clones and size_of("offset_increment"):
        said.append(f"numjobs={options.get('numjobs')}")
    return reach, "fio reads it as " + ", ".join(said) + ", which"


def _refuse_users_file(job: Job, writes: list[str], option: str, path: str, real: str, looks: _Looks) -> None:
    """UnsafeTargetError for a job that would change a regular file holding bytes iolab did
    not write (``iolab.core.owned``): it writes (``writes``), fio writes its logs there, or fio
    would lay the file out anew because it is shorter than the job's ``size`` + ``offset``
    (deleting what it held, even for reads). An empty file, a new one, or iolab's own is fine."""
    size = looks.size(real)
    if not size or looks.owned(real):
        return
    why = writes or (
        [f"{option} (fio writes its log there)"]
        if option in LOG_OPTIONS
        else [f"size={job.options.get('size')} beyond the file's {size:,} bytes (fio lays it out again)"]
        if _needs_bytes(job.options) > size
        else []
    )
    if not why:
        return
    raise UnsafeTargetError(
        f"refusing job [{job.name}]: fio reads it as {', '.join(why)} (not read-only), and its {option} "
        f"{path!r} opens {real}, an existing file of {size:,} bytes that iolab did not create. Writing "
        "would destroy its contents. Use the scratch target (--target scratch), a new file name, or pass "
        "allow_destructive=True (MeasureOptions, or a notebook parameter; CLI: --allow-destructive) if you really mean it."
    )


def _needs_bytes(options: Mapping[str, str | None]) -> int:
    """The bytes a job's ``size`` + ``offset`` reach into its file (0 for a percentage or
    none given: within the file)."""
    from ..core.validate import parse_size

    try:
        return sum(parse_size(options[k]) for k in ("size", "offset") if options.get(k))
    except (IolabError, ValueError):
        return 0


def mark_created(check: JobCheck) -> None:
    """After a run: the files fio laid out itself (missing when the job was judged, regular
    files now) are iolab's (``iolab.core.owned``), so the next run of the job may write them again."""
    for f in check.files:
        if f.kind == "missing" and os.path.isfile(f.path):
            owned.mark(f.path)


def guard_job_text(
    text: str, allow_destructive: bool = False, *, fio: str | None = None, cwd: str | os.PathLike | None = None
) -> JobCheck:
    """:func:`guard_job` on job-file text (given to fio on its standard input)."""
    return _judge(*_parse_text(text, fio or fio_binary()), allow_destructive, cwd)


def _parse_text(text: str, fio: str) -> tuple[list[Job], str, list[str]]:
    """fio's reading of job text iolab built, remembered per (fio binary, text): the repeats
    of a sweep ask for the same text, each ``fio --parse-only`` pays fio's start-up, and a
    campaign asks for all its runs' texts at once beforehand (``iolab.machine.jobbatch.
    parse_ahead``). (Only iolab's own text: a user's job file may ``include`` files that
    change.) What the files it names hold is judged afresh every time."""
    if not remembered(fio, text):
        remember_parse(fio, text, parse_jobfile("-", fio, "the job iolab built", text=text))  # a FioError: not kept
    jobs, parsed_by, warnings = _PARSED[_parse_key(fio, text)]
    return [Job(j.name, dict(j.options)) for j in jobs], parsed_by, list(warnings)


_PARSED: dict[tuple[str, int | None, str], tuple[list[Job], str, list[str]]] = {}  # oldest first
PARSES_KEPT = 4096  # job texts remembered (a search's cells, each a few hundred bytes)


def _parse_key(fio: str, text: str) -> tuple[str, int | None, str]:
    """The fio binary (and its mtime: a new fio is asked anew) and the text."""
    try:
        return fio, os.stat(fio).st_mtime_ns, text
    except OSError:
        return fio, None, text


def remembered(fio: str, text: str) -> bool:
    """Whether fio's reading of ``text`` is kept (``remember_parse``)."""
    return _parse_key(fio, text) in _PARSED


def remember_parse(fio: str, text: str, parsed: tuple[list[Job], str, list[str]]) -> None:
    """Keep fio's reading of a text, the oldest forgotten past ``PARSES_KEPT``."""
    key = _parse_key(fio, text)
    _PARSED.pop(key, None)
    _PARSED[key] = parsed
    while len(_PARSED) > PARSES_KEPT:
        del _PARSED[next(iter(_PARSED))]
