"""Inputs checked before anything runs: CPUs, the fio options iolab knows, output folders,
input files and notebook parameters. Each check raises ``InputError`` saying what is wrong
and the form that works; none of them starts a process.

    from iolab.core import validate
    validate.check_measure({"iodepth": 32, "runtime": "2s"}, cpus=[0], runs_dir="data/runs")
    validate.cpu_list("0-1")             # -> [0, 1] (kernel cpulist syntax, as taskset -c)

Sources: fio's option types are those of ``man fio`` (fio 3.33), "Parameter types": a
*time* is an integer with an optional d/h/m/s/ms/us suffix (seconds without one; fio drops
a fraction, so 0.5s is read as 0); an *int* is a whole number; a size is an integer with
an optional k/m/g/t/p suffix (``i``/``iB``/``B`` allowed).
"""

from __future__ import annotations

import errno
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .system import SYS_CPU, parse_cpu_list, read_text

# fio options iolab checks, by fio type: name -> smallest allowed value
TIME_OPTIONS = {"runtime": 1, "ramp_time": 0, "startdelay": 0}
INT_OPTIONS = {
    "iodepth": 1,
    "numjobs": 1,
    "iodepth_batch": 0,
    "iodepth_batch_submit": 0,
    "iodepth_batch_complete": 0,
    "iodepth_batch_complete_min": 0,
    "iodepth_batch_complete_max": 0,
}  # fio: 0 = "use iodepth" / "always poll"
SIZE_OPTIONS = ("bs", "size")

_TIME = re.compile(r"(\d+)(?:\.0*)?\s*(d|h|m|s|ms|msec|us|usec)?", re.I)
_SIZE = re.compile(r"(\d+)\s*([kmgtp](?:i?b)?|b)?", re.I)
SIZE_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
SIZE_HINT = "a whole number of bytes with an optional unit, e.g. 4k, 512, 1g"


# ---------------------------------------------------------------- CPUs
_TIME_UNITS = ((1, "s"), (1_000, "ms"), (1_000_000, "us"))


def fio_time(seconds: float) -> str:
    """Seconds -> fio's time syntax, exactly: ``2`` -> ``"2s"``, ``0.5`` -> ``"500ms"``,
    ``0.0125`` -> ``"12500us"``.

    fio reads a time as an integer with a unit suffix (s, ms, us; man fio, "time") and
    drops any fraction: ``runtime=0.5s`` is read as 0 s and ``1.5s`` as 1 s. So the
    coarsest unit that holds the value as a whole number is used; a value that is not a
    whole number of microseconds, not finite, or not > 0 is refused."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise InputError(f"a time of {seconds!r} is not a number of seconds; give e.g. 2 or 0.5") from None
    if isinstance(seconds, bool) or not math.isfinite(value) or value <= 0:
        raise InputError(f"a time of {seconds!r} s cannot be run; give a number of seconds > 0, e.g. 2 or 0.5")
    for factor, unit in _TIME_UNITS:
        scaled = value * factor
        if abs(scaled - round(scaled)) <= 1e-9 * max(1.0, abs(scaled)):
            return f"{round(scaled)}{unit}"
    raise InputError(
        f"a time of {seconds!r} s is not a whole number of microseconds, the finest "
        "unit fio reads; round it, e.g. to 0.5 or 0.001"
    )


def cpu_list(text: str | int | Sequence[int]) -> list[int]:
    """CPUs from the kernel cpulist syntax ``taskset -c`` uses (``0``, ``0,1``, ``0-3,8``)
    or a list of ints; InputError naming the bad part. Duplicates are dropped."""

    if isinstance(text, (list, tuple)):
        items = list(text)
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in items):
            raise InputError(f"CPUs {items!r} are not all whole numbers; give CPU numbers, e.g. [0, 1]")
    else:
        spec = str(text).strip()
        if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", spec):
            raise InputError(
                f"cannot read the CPU list {spec!r}; use CPU numbers and ranges as "
                "taskset -c does, e.g. 0, 0,1 or 0-3,8"
            )
        for lo, hi in re.findall(r"(\d+)-(\d+)", spec):
            if int(hi) < int(lo):
                raise InputError(f"the CPU range {lo}-{hi} in {spec!r} runs backwards; write {hi}-{lo}")
        items = parse_cpu_list(spec)
    return list(dict.fromkeys(items))


def check_cpus(cpus: Sequence[int] | None) -> list[int] | None:
    """``cpus`` when every one exists (``/sys/devices/system/cpu/online``) and this process
    may run on it (``os.sched_getaffinity(0)``: cpusets, taskset, containers); else InputError
    listing the CPUs that can be used. None (no pinning) passes."""
    if cpus is None:
        return None

    cpus = cpu_list(list(cpus))
    if not cpus:
        raise InputError("the CPU list is empty; give at least one CPU, e.g. 0")
    online_text = read_text(SYS_CPU / "online")
    online = set(parse_cpu_list(online_text)) if online_text else set(range(os.cpu_count() or 1))
    allowed = os.sched_getaffinity(0)
    missing = [c for c in cpus if c not in online]
    if missing:
        raise InputError(
            f"CPU {_fmt_cpus(missing)} does not exist on this machine (online CPUs: "
            f"{_fmt_cpus(sorted(online))}); choose from those"
        )
    barred = [c for c in cpus if c not in allowed]
    if barred:
        raise InputError(
            f"CPU {_fmt_cpus(barred)} is online but this process may not run on it "
            f"(its CPU affinity is {_fmt_cpus(sorted(allowed))}: a cpuset, taskset or "
            "container limit); choose from those"
        )
    return cpus


def _fmt_cpus(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel cpulist form)."""
    out, run = [], []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


# ---------------------------------------------------------------- fio options
def _whole(name: str, value: Any, minimum: int, unit_hint: str) -> None:
    if value is True or value is None:
        raise InputError(f"fio option {name} needs a value; write {name}=N ({unit_hint})")
    if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
        raise InputError(
            f"fio option {name}={value!r} is not a whole number and fio would drop the "
            f"fraction; give a whole number >= {minimum} ({unit_hint})"
        )


_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}


def check_time(name: str, value: Any, minimum: int = 0) -> None:
    """A fio *time* option: whole number with an optional d/h/m/s/ms/us suffix, >= ``minimum``
    (in its own unit; startdelay may be a range ``a-b``). A fraction is refused with the
    exact spelling (``0.5s`` -> ``500ms``, see ``iolab.core.validate.fio_time``)."""

    hint = "seconds, or with a unit: 500ms, 2s, 1m"
    if value is True or value is None:
        raise InputError(f"fio option {name} needs a value; write {name}=N ({hint})")
    text = str(value).strip()
    parts = text.split("-") if name == "startdelay" and "-" in text[1:] else [text]
    for part in parts:
        frac = re.fullmatch(r"(\d*\.\d+)\s*(d|h|m|s|ms|msec|us|usec)?", part.strip(), re.I)
        if frac and not float(frac.group(1)).is_integer():
            seconds = float(frac.group(1)) * _SECONDS[(frac.group(2) or "s").lower()]
            try:
                exact = f"; write {name}={fio_time(seconds)!r}"
            except InputError:
                exact = f"; give a whole number ({hint})"
            read_as = f"{int(float(frac.group(1)))}{frac.group(2) or 's'}"
            raise InputError(
                f"fio option {name}={value!r} would be read by fio as {read_as} (fio drops the fraction)" + exact
            )
        m = _TIME.fullmatch(part.strip())
        if part.strip().startswith("-"):
            raise InputError(
                f"fio option {name}={value!r} is negative; give a time >= {minimum} ({hint}), e.g. {name}=2s"
            )
        if not m or isinstance(value, bool):
            raise InputError(
                f"fio option {name}={value!r} is not a time fio reads exactly; give a "
                f"whole number >= {minimum} ({hint})"
            )
        if int(m.group(1)) < minimum:
            raise InputError(
                f"fio option {name}={value!r} must be at least {minimum}"
                + (" (0 would not bound the run)" if name == "runtime" else "")
                + f"; give e.g. {name}=2s"
            )


def fio_seconds(value: Any) -> float:
    """A fio time in seconds, read as fio reads it: a bare number is seconds, else a whole
    number with a unit (d/h/m/s/ms/us: ``check_time``); InputError for anything else."""
    check_time("runtime", value)
    m = _TIME.fullmatch(str(value).strip())
    return int(m.group(1)) * _SECONDS[(m.group(2) or "s").lower()]


def fio_time_text(value: Any) -> str:
    """A job's time as fio's spelling: a number of seconds through ``fio_time`` (0.5 ->
    "500ms"), text as written (checked by ``check_time``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return fio_time(value)
    check_time("runtime", value)
    return str(value).strip()


def check_int(name: str, value: Any, minimum: int = 1) -> None:
    """A fio *int* option given as an int or decimal digits, >= ``minimum``."""
    _whole(name, value, minimum, f"e.g. {name}={max(minimum, 1)}")
    text = str(int(value)) if isinstance(value, float) else str(value).strip()
    if not re.fullmatch(r"-?\d+", text) or int(text) < minimum:
        raise InputError(
            f"fio option {name}={value!r} must be a whole number >= {minimum}; give e.g. {name}={max(minimum, 1)}"
        )


def parse_size(value: str | int, name: str = "size") -> int:
    """A fio size in bytes, read as fio reads it: a whole number with an optional unit k, m,
    g, t or p, base 2 (fio's default; ``4k``, ``4KiB`` and ``4kb`` are 4096; ``1g`` is
    2**30). The one reading of a size in iolab: scratch files, loop devices and namespaces
    are made with it and fio's options are checked with it, so they always agree. Anything
    else, a fraction included (fio drops it: ``1.5m`` would be read as 1 byte), is refused
    with an InputError saying what to give."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE.fullmatch(str(value).strip())
    if not m:
        raise InputError(
            f"{name} {value!r} is not a size fio reads exactly (fio drops fractions: 1.5m would "
            f"be 1 byte); give {SIZE_HINT}"
        )
    return int(m.group(1)) * SIZE_UNITS[(m.group(2) or "")[:1].lower()]


def check_size(name: str, value: Any) -> None:
    """A fio size option (``bs``, ``size``): ``parse_size`` and > 0; ``bs`` may give
    read,write,trim sizes (``4k,8k``) and ``size`` a share of the file (``50%``)."""
    _whole(name, value, 1, SIZE_HINT)
    parts = str(value).split(",") if name == "bs" else [str(value)]
    for part in parts:
        part = part.strip()
        if name == "bs" and not part and len(parts) > 1:
            continue  # bs=,8k: fio's default for reads, 8k for writes
        if name == "size" and re.fullmatch(r"\d+(\.\d+)?%", part) and 0 < float(part[:-1]) <= 100:
            continue
        if parse_size(part, f"fio option {name}=") == 0:
            raise InputError(f"fio option {name}={value!r}: a size of 0; give {SIZE_HINT}")


def check_fio_options(options: Mapping[str, Any]) -> None:
    """The fio options iolab knows, checked by fio's type for values fio would misread or
    silently change: times (runtime > 0, ramp_time, startdelay), whole numbers (iodepth,
    numjobs >= 1; iodepth_batch_* >= 0) and sizes (bs, size). Other options pass to fio."""
    for name, value in options.items():
        if name in TIME_OPTIONS:
            check_time(name, value, TIME_OPTIONS[name])
        elif name in INT_OPTIONS:
            check_int(name, value, INT_OPTIONS[name])
        elif name in SIZE_OPTIONS:
            check_size(name, value)


def positive_ints(name: str, values: Any) -> list[int]:
    """A list of whole numbers >= 1 (queue depths, repeats): ints, or strings / floats that
    are whole numbers; InputError naming the first bad value."""
    values = list_param(name, values)
    out = []
    for v in values:
        ok = not isinstance(v, bool) and (
            isinstance(v, int) or isinstance(v, float) and v.is_integer() or isinstance(v, str) and v.strip().isdigit()
        )
        if not ok or int(float(v)) < 1:
            raise InputError(f"{name} has {v!r}, which is not a whole number >= 1; give e.g. {name}=[1, 2, 4, 8]")
        out.append(int(float(v)))
    if not out:
        raise InputError(f"{name} is empty; give at least one value, e.g. {name}=[1, 2, 4, 8]")
    return out


# ---------------------------------------------------------------- folders and files
def writable_dir(path: str | os.PathLike, what: str = "runs folder", how: str = "--runs-dir DIR") -> Path:
    """``path`` created if missing and proven writable (a file is made and removed there);
    else InputError naming the folder, why (permission, read-only file system, no space)
    and how to choose another (``how``, e.g. ``--runs-dir DIR``, or ``IOLAB_DATA``)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        import tempfile  # here: every command imports this module, few write

        with tempfile.NamedTemporaryFile(dir=path, prefix=".iolab-write-test-"):
            pass
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno == errno.EEXIST or isinstance(exc, (FileExistsError, NotADirectoryError)):
            why = "a file of that name (or above it) is in the way"
        raise InputError(
            f"cannot write to the {what} {path} ({why}); choose a folder you can "
            f"write: {how}, or IOLAB_DATA=DIR for iolab's default folders"
        ) from None
    return path


def input_file(path: str | os.PathLike, what: str = "file", inside: Sequence[str] = ()) -> Path:
    """``path`` when it is a readable file; InputError for a missing path or a folder (naming
    a file ``inside`` it that would do, e.g. a run folder's fio.json)."""
    path = Path(path)
    if path.is_dir():
        hits = [path / n for n in inside if (path / n).is_file()]
        raise InputError(f"{path} is a folder, not a {what}; give a file" + (f", e.g. {hits[0]}" if hits else ""))
    if not path.exists():
        raise InputError(f"{path}: no such {what}; check the path")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied; give a {what} you can read")
    return path


def yaml_mapping(path: str | os.PathLike, what: str, keys: Sequence[str]) -> dict[str, Any]:
    """The mapping a YAML file (a search spec, a batch manifest) holds, with its keys
    stripped; InputError for a missing or unreadable file, bad YAML, or no mapping."""
    import yaml  # only the commands that read a spec need it

    path = input_file(path, what)
    size = path.stat().st_size
    if size > YAML_MAX_BYTES:
        raise InputError(
            f"{path} is {size:,} bytes, more than a {what} holds (at most {YAML_MAX_BYTES:,}): is it the right file?"
        )
    text = text_of(path, f"a {what}")
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        first = (str(exc).splitlines() or ["nested too deep"])[0][:120]
        raise InputError(f"{path} is not YAML this can read: {first}; give a {what}") from None
    if _values_over(doc, YAML_MAX_VALUES):
        raise InputError(
            f"{path} holds more than {YAML_MAX_VALUES:,} values once its aliases (*name) are expanded: a {what} is "
            "far smaller (aliases repeating aliases, a 'billion laughs'?); write the values out, without aliases"
        )
    if not isinstance(doc, Mapping):
        found = "nothing" if doc is None else f"a {kind_of(doc)}"
        raise InputError(f"{path} holds {found}, not a mapping of keys ({', '.join(keys)}); give a {what}")
    return {str(k).strip(): v for k, v in doc.items()}


YAML_MAX_BYTES = 4 << 20  # a spec, manifest or hosts file: a few KiB; a bigger file is another file
YAML_MAX_VALUES = 100_000  # values once aliases are expanded: a grid of that many is not a spec


def _values_over(doc: Any, limit: int) -> bool:
    """Whether ``doc`` holds more than ``limit`` values counting each alias's values every
    time it is used (as every reader of the document sees them), without expanding it:
    each shared list or mapping is counted once and multiplied by its uses."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int = 0) -> int:
        if not isinstance(node, (list, Mapping)) or depth > 100:
            return 1
        if id(node) in sizes:
            return sizes[id(node)]
        sizes[id(node)] = limit + 1  # a node reached again inside itself (a recursive alias): too many
        items = list(node.items()) if isinstance(node, Mapping) else node
        total = 1
        for item in items:
            total += sum(size(v, depth + 1) for v in item) if isinstance(node, Mapping) else size(item, depth + 1)
            if total > limit:
                break
        sizes[id(node)] = min(total, limit + 1)
        return sizes[id(node)]

    return size(doc) > limit


def text_of(path: Path, what: str, where: str = "") -> str:
    """The text of ``path`` (UTF-8); InputError for a binary file (a NUL byte, or bytes that
    are not UTF-8), saying ``what`` was expected instead (e.g. "a search spec (YAML)")."""
    data = path.read_bytes()
    bad = data.find(b"\0")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        bad = exc.start if bad < 0 else min(bad, exc.start)
    if bad >= 0:
        raise InputError(
            f"{path}{where} is not text (byte {bad:,} is {'NUL' if data[bad] == 0 else 'not UTF-8'}): "
            f"a binary file? give {what}"
        )
    return text


def kind_of(value: Any) -> str:
    """A YAML value's kind in words: list, mapping, text, number, true/false."""
    return (
        "list"
        if isinstance(value, (list, tuple))
        else "mapping"
        if isinstance(value, Mapping)
        else "true/false"
        if isinstance(value, bool)
        else "number"
        if isinstance(value, (int, float))
        else "text"
        if isinstance(value, str)
        else type(value).__name__
    )


def mapping(value: Any, where: str, example: str) -> dict[str, Any]:
    """``value`` when it is a mapping (None: empty), with its keys as text; InputError for a
    list or anything else where a mapping belongs, naming ``where`` (e.g. "defaults in
    batch.yaml") and an ``example`` of the form that works."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where} is a {kind_of(value)} ({_short(value)}), not a mapping; write it as {example}")
    return {str(k).strip(): v for k, v in value.items()}


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notebook_file(path: str | os.PathLike, what: str = "notebook", where: str = "") -> dict[str, Any]:
    """The JSON of the Jupyter notebook at ``path`` (nbformat 4: an object with a list of
    ``cells`` and ``nbformat``); InputError for a missing file, a binary file, text that is
    not JSON or JSON that is not a notebook, never quoting the file's contents. ``where``
    says where the path came from (e.g. " (named in batch.yaml)")."""
    import json

    path = input_file(path, what)
    give = "give an .ipynb file saved by Jupyter or papermill"
    text = text_of(path, "a Jupyter notebook (.ipynb) saved by Jupyter or papermill", where)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InputError(
            f"{path}{where} is not a Jupyter notebook: it is not JSON (line {getattr(exc, 'lineno', '?')}); {give}"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list) or not isinstance(doc.get("nbformat"), int):
        raise InputError(
            f"{path}{where} is JSON but not a Jupyter notebook (a {kind_of(doc)} without the cells "
            f"and nbformat a notebook has); {give}"
        )
    if doc["nbformat"] < 4 or not all(isinstance(c, dict) and "cell_type" in c for c in doc["cells"]):
        raise InputError(
            f"{path}{where} is an nbformat {doc['nbformat']} notebook iolab cannot read; open and "
            "save it in JupyterLab (nbformat 4), then give it again"
        )
    return doc


# ---------------------------------------------------------------- warm-up
WARMUP_HELP = (
    "run (one discarded run first), none, or a time with its unit such as 2s or 500ms (fio's ramp_time on every run)"
)


def warmup(value: Any, tool: str = "fio") -> str | float | None:
    """A ``warmup`` setting, one spelling everywhere (search specs, sweeps, the ladder, the
    knee search, the notebooks): ``"run"`` (one discarded run of the first job first;
    ``True`` too), ``"none"`` (also None, False, "", 0) or a time with its unit (``"2s"``,
    ``"500ms"``: fio's ``ramp_time`` on every run, returned in seconds). A bare number is
    refused: 2 could mean runs or seconds. InputError lists the spellings."""

    if value is None or value is False or value is True:
        return "run" if value else None
    text = str(value).strip().lower()
    if text in ("none", "", "0", "0s", "0ms"):
        return None
    if text == "run":
        return "run"
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m)", text)
    if not m:
        bare = re.fullmatch(r"\d+(\.\d+)?", text)
        why = f"; a bare number could mean runs or seconds: write {text}s for seconds" if bare else ""
        raise InputError(f"warmup: {value!r} is not one of {WARMUP_HELP}{why}")
    seconds = float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60}[m.group(2)]
    if tool != "fio":
        raise InputError(f"warmup: {value!r}: {tool} has no ramp time; use warmup: run (one discarded run first)")
    fio_time(seconds)  # a time fio can run exactly, or InputError
    return seconds


def warmup_text(kind: str | float | None) -> str:
    """The spelling of a ``warmup`` result (``warmup``): "run", "none" or "2s"."""
    return "none" if kind is None else kind if isinstance(kind, str) else f"{kind:g}s"


# ---------------------------------------------------------------- notebook parameters
def list_param(name: str, value: Any) -> list:
    """A notebook's list parameter as a list. papermill ``-p name '[1,2]'`` passes a string:
    a JSON / Python list literal in a string is read; any other string is refused (it
    would be iterated character by character) with the form that works."""
    return _literal(name, value, (list, tuple), "[1, 2]", list)


def dict_param(name: str, value: Any) -> dict:
    """A notebook's dict parameter as a dict; a JSON / Python dict literal in a string is read."""
    return _literal(name, value, (dict,), '{"direct": 1}', dict)


def _literal(name: str, value: Any, kinds: tuple, example: str, cast):
    if isinstance(value, kinds):
        return cast(value)
    if isinstance(value, str):
        try:
            import ast  # here: every command imports this module, notebooks parse lists

            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, kinds):
            return cast(parsed)
    kind = kinds[0].__name__
    raise InputError(
        f"parameter {name} must be a {kind}, got {type(value).__name__} {value!r}; "
        f"with papermill give it as YAML: -y '{name}: {example}'"
    )


# ---------------------------------------------------------------- one call for a run
def check_measure(
    options: Mapping[str, Any], *, cpus: Sequence[int] | None = None, runs_dir: str | os.PathLike | None = None
) -> None:
    """Everything about one run that can be refused before it starts: the fio options iolab
    knows (:func:`check_fio_options`), the CPUs (:func:`check_cpus`) and the runs folder
    (:func:`writable_dir`). Raises InputError; starts nothing."""
    check_fio_options(options)
    check_cpus(cpus)
    if runs_dir is not None:
        writable_dir(runs_dir, "runs folder", "--runs-dir DIR (runs_dir= in Python)")


def _assigned(source: str) -> set[str]:
    """The names a cell's top-level statements assign (``x = 1``, ``x: int = 1``)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def unknown_injected(sources: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the names papermill's injected parameters cell assigns that no cell before it assigns,
    the names those cells assign): ``sources`` are a kernel's cells in order (IPython's ``In``),
    the injected one starting "# Parameters" as papermill writes it. papermill itself only
    warns of a parameter the notebook does not have, and runs on with it changing nothing.
    ([], []) when no cell was injected."""
    for i, source in enumerate(sources):
        if str(source).startswith("# Parameters\n"):
            known = set().union(*(_assigned(str(s)) for s in sources[:i]))
            given = sorted(_assigned(str(source)))
            return [n for n in given if n not in known], sorted(known)
    return [], []
