"""A run folder's file names, and reading one of its files, defensively: its content, or one
RunFileError saying which.

The names below are the only place a run folder's file names are spelled; the modules that
write and read them (the runner, the producers' readers, ``iolab.runs.store``) import them.

Every reader of a run folder's files (``iolab.runs.store``, the producers' readers in
``iolab.runs.producers``, ``iolab.read.checks``, ``iolab.read.series``, ``iolab.read.threadstates``) reads them
through ``read_text``, ``read_json`` or ``read_csv``. A file that is missing, empty, not
UTF-8 text, cut short, not JSON, JSON of another type than iolab wrote (``[]``, ``"x"``), or
a CSV without the columns iolab wrote is a ``RunFileError`` naming the file (its full path),
what is wrong and what to do; ``guard`` turns what a reader meets in a file of the right type
but the wrong content (a key missing, a value of another type) into the same. Content quoted
in a message goes through ``quote``: a file's control characters never reach the terminal.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import RunFileError, printable

try:  # a JSON reader several times faster than the standard library's (a dependency; optional here)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover
    _fast_loads = None

# ---------------------------------------------------------------- the run folder's files
RUN_JSON = "run.json"  # schema, iolab version, status, times, target, error (iolab.runs.store)
PARAMS_JSON = "params.json"  # every swept value and the full fio option dict (or t/io_uring flags)
ARGV_JSON = "argv.json"  # the exact command line
FIO_JSON = "fio.json"  # fio's raw json+ output, byte for byte
FIO_STDERR = "fio.stderr"  # what fio printed on stderr
JOB_FIO = "job.fio"  # the job file fio ran
TIO_TXT = "tio.txt"  # t/io_uring's output, instead of fio's files
SYSTEM_JSON = "system.json"  # the machine snapshot (iolab.core.system.snapshot)
BLOCKSTAT_JSON = "blockstat.json"  # /sys/block/<dev>/stat before and after
PCIE_JSON = "pcie.json"  # the opened devices' PCI links and AER counters before and after
CHECKS_JSON = "checks.json"  # the plausibility checks (iolab.read.checks)
SERIES_JSON = "series.json"  # fio's interval logs were asked for (iolab.read.series)
HOSTS_JSON, HOSTS_LIST, HOSTS_DIR = "hosts.json", "hosts.list", "hosts"  # a run on fio servers
SAMPLES_STAT_CSV, SAMPLES_FREQ_CSV = "samples_stat.csv", "samples_freq.csv"  # the samplers
SAMPLES_THREADS_CSV, THREADS_JSON = "samples_threads.csv", "threads.json"  # the thread sampler
SAMPLES_PROCS_CSV = "samples_procs.csv"  # whose CPU: the tool's threads, its devices' kernel workers
PERF_DATA, PERF_FOLDED = "perf.data", "perf.folded"  # perf record: every program on the CPUs
PERF_OWN_FOLDED = "perf_fio.folded"  # perf record: the measured tool's threads alone
PERF_STAT_CSV, PERF_STAT_WINDOW_JSON = "perf_stat.csv", "perf_stat_window.json"  # perf stat
PERF_STAT_TIDY_V1 = "perf_stat_tidy.csv"  # perf stat's table in schema 1 (still read)

_KINDS = {
    dict: "a JSON object",
    list: "a JSON array",
    str: "a JSON string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    type(None): "null",
}
CONTENT_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError)  # what ``guard`` names
TODO = {CHECKS_JSON: "delete it: `iolab check RUN` derives the checks again from the run's other files"}


def _error(path: str | Path, what: str) -> RunFileError:
    """The RunFileError for ``path``, with what to do about that file (``TODO``, else the default)."""
    path = Path(path)
    return RunFileError(path, what, TODO.get(path.name, ""))


def quote(text: str, limit: int = 40) -> str:
    """``text`` quoted for a one-line message: at most ``limit`` characters, control
    characters escaped as Python writes them (``iolab.core.errors.printable``: ``\\x1b``, ``\\n``)."""
    shown = printable(text[:limit], keep="")
    return f"'{shown}{'...' if len(text) > limit else ''}'"


def _raw(path: str | Path, optional: bool) -> bytes | None:
    """The bytes of ``path``; None when it is missing and ``optional``."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        if optional:
            return None
        raise _error(path, "is missing") from None
    except IsADirectoryError:
        raise _error(path, "is a folder, not a file") from None


def read_text(path: str | Path, *, optional: bool = False, errors: str = "strict") -> str | None:
    """The UTF-8 text of a run folder's file (None when it is missing and ``optional``).
    RunFileError when it is missing, empty (or blank) or, with ``errors="strict"``, not
    UTF-8 text; OSError (permission) as it is, naming the file."""
    data = _raw(path, optional)
    return None if data is None else _text(data, path, errors)


def _text(data: bytes, path: str | Path, errors: str = "strict") -> str:
    """``data`` (the content of ``path``) as text, or RunFileError (``read_text``)."""
    if not data or data.isspace():
        raise _error(path, f"is empty ({len(data)} bytes, all blank)" if data else "is empty (0 bytes)")
    try:
        return data.decode(errors=errors)
    except UnicodeDecodeError as exc:
        raise _error(
            path,
            f"is not text: byte 0x{data[exc.start]:02x} at offset {exc.start} is not "
            f"UTF-8 (it begins {quote(data[:40].decode(errors='replace'))})",
        ) from None


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether a JSON text fails because it stops mid-document (a file cut short)."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())


def stops_mid_document(text: str) -> bool:
    """Whether ``text`` is JSON cut short: a file whose writer stopped mid-document."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return _cut_short(text, exc)
    return False


def parse_json(text: str, path: str | Path, kind: type | tuple[type, ...] = dict) -> Any:
    """``text`` (the content of ``path``) as JSON of type ``kind``, or RunFileError saying
    how it is not."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if _cut_short(text, exc):
            raise _error(
                path,
                f"is cut short: its JSON stops mid-document after {len(text.encode())} "
                f"bytes (line {exc.lineno}, column {exc.colno})",
            ) from None
        raise _error(
            path,
            f"is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}: {quote(text[exc.pos : exc.pos + 20])})",
        ) from None
    _of_kind(obj, kind, path, text)
    return obj


def _of_kind(obj: Any, kind: type | tuple[type, ...], path: str | Path, text: str) -> None:
    """RunFileError unless ``obj`` (parsed from ``text``) is of type ``kind`` (a bool is no int)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(obj, kinds) or (bool not in kinds and isinstance(obj, bool)):
        raise _error(
            path,
            f"holds {_KINDS.get(type(obj), type(obj).__name__)} ({quote(text.strip(), 20)}), "
            f"not {' or '.join(dict.fromkeys(_KINDS[k] for k in kinds))}",
        )


_NINES = bytes.maketrans(b"012345678", b"999999999")  # every digit a 9: a long number is a long run of 9s
_LONG_INT = b"9" * 19  # orjson reads an integer of this many digits beyond 64 bits as a float; json does not


def read_json(
    path: str | Path, kind: type | tuple[type, ...] = dict, *, optional: bool = False, keys: Iterable[str] = ()
) -> Any:
    """A run folder's JSON file as an object of type ``kind`` (a dict unless said) holding
    ``keys``; None when it is missing and ``optional``. RunFileError otherwise (see
    ``read_text``, ``parse_json``). Parsed by orjson when it reads the text as json does
    (several times faster), else by json, whose errors the messages quote."""
    data = _raw(path, optional)
    if data is None:
        return None
    try:
        if _fast_loads is None or _LONG_INT in data.translate(_NINES):
            raise ValueError("read by json")
        obj = _fast_loads(data)
    except ValueError:  # not JSON for orjson (NaN, a lone surrogate, an error): json decides and says
        obj = parse_json(_text(data, path), path, kind)
    else:
        if not isinstance(obj, kind) or isinstance(obj, bool):
            _of_kind(obj, kind, path, _text(data, path))
    require(obj, path, keys)
    return obj


def require(obj: dict, path: str | Path, keys: Iterable[str]) -> None:
    """RunFileError naming the first of ``keys`` that the JSON object ``obj`` of ``path`` lacks."""
    for key in keys:
        if key not in obj:
            have = ", ".join(quote(str(k), 20) for k in list(obj)[:8]) or "no keys"
            raise _error(path, f"has no {key!r} (it has {have}{', ...' if len(obj) > 8 else ''})")


def _whole_lines(path: Path) -> str:
    """The text of a run folder's CSV file; RunFileError when it cannot be read or stops mid-line."""
    text = read_text(path)
    if not text.endswith("\n"):
        last = text.rsplit("\n", 1)[-1]
        raise _error(
            path, f"is cut short: it stops mid-line after {len(text.encode())} bytes (its last line is {quote(last)})"
        )
    return text


_NUMBER = r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # what pandas reads as a number, less its extras
_INTS = re.compile(r"-?[0-9]+(?:\n-?[0-9]+)*")
_FLOATS = re.compile(rf"{_NUMBER}(?:\n{_NUMBER})*")
_INT64 = 2**63


def csv_columns(
    path: str | Path, *, columns: Iterable[str] = (), numeric: Iterable[str] = ()
) -> dict[str, list] | None:
    """A plain CSV file of a run folder as ``{column: values}`` in file order, without pandas:
    the ``numeric`` columns as Python ints (every cell an integer that fits int64) or floats,
    exactly as ``read_csv`` (pandas) types and parses them; the others as text. None when the
    file is not that plain (a byte-order mark, quotes, carriage returns, blank lines or cells, ragged lines, a
    header cell twice, no rows, a numeric cell that is not a decimal number): ``read_csv``
    then reads it, or says what is wrong. RunFileError as ``read_csv`` for a file that is
    missing, empty, not text, cut mid-line or without one of ``columns``."""
    text = _whole_lines(path)
    if (
        text.startswith("\ufeff")
        or '"' in text
        or "\r" in text
        or "\n\n" in text
        or ",," in text
        or ",\n" in text
        or "\n," in text
    ):
        return None
    lines = text.split("\n")
    header, body = lines[0].split(","), lines[1:-1]
    width = len(header)
    if not body or len(set(header)) != width or "" in header or any(line.count(",") != width - 1 for line in body):
        return None
    for col in columns:
        if col not in header:
            raise _error(path, f"has no column {col!r} (its header is {quote(lines[0], 60)})")
    cells = ",".join(body).split(",")
    out = {name: cells[i::width] for i, name in enumerate(header)}
    for name in numeric:
        values = out.get(name)
        if values is None:
            continue
        joined = "".join(values)
        if joined.isdigit() and joined.isascii() and max(map(len, values)) < 19:  # small non-negative ints
            out[name] = list(map(int, values))
            continue
        joined = "\n".join(values)
        if _INTS.fullmatch(joined):
            ints = list(map(int, values))
            if max(ints) >= _INT64 or min(ints) < -_INT64:
                return None
            out[name] = ints
        elif _FLOATS.fullmatch(joined):
            out[name] = list(map(float, values))
        else:
            return None
    return out


def read_csv(path: str | Path, *, columns: Iterable[str] = (), numeric: Iterable[str] = (), **kw):
    """A run folder's CSV file (iolab wrote it with a header and a newline after every line)
    as a DataFrame (``pandas.read_csv`` with ``kw``). RunFileError when it is missing, empty,
    not text, cut mid-line, not CSV, without one of ``columns``, or holds something other
    than a number in one of the ``numeric`` columns."""
    import pandas as pd  # slow to import: only when a CSV is read

    path = Path(path)
    text = _whole_lines(path)
    try:
        frame = pd.read_csv(io.StringIO(text), **kw)
    except (ValueError, pd.errors.ParserError) as exc:
        raise _error(path, f"is not the CSV iolab wrote ({quote(_first_line(exc), 80)})") from None
    for col in columns:
        if col not in frame:
            raise _error(path, f"has no column {col!r} (its header is {quote(text.split(chr(10), 1)[0], 60)})")
    _numbers_only(frame, path, numeric)
    return frame


def _numbers_only(frame, path: Path, numeric: Iterable[str]) -> None:
    """RunFileError naming the first cell of a ``numeric`` column that is not a number
    (pandas reads such a column as text)."""
    import pandas as pd

    for col in numeric:  # a text column is object in pandas 2, str in pandas 3: any dtype not numeric
        if col in frame and not pd.api.types.is_numeric_dtype(frame[col].dtype):
            bad = frame.index[pd.to_numeric(frame[col], errors="coerce").isna() & frame[col].notna()]
            if len(bad):
                raise _error(
                    path,
                    f"has {quote(str(frame[col].iloc[bad[0]]), 20)} in column {col!r} on line "
                    f"{bad[0] + 2}, not a number",
                )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextmanager
def guard(path: str | Path) -> Iterator[None]:
    """Turn the errors a reader meets in a file that parsed but does not hold what iolab
    wrote there (``CONTENT_ERRORS``: a key missing, a value of another type) into a
    RunFileError naming ``path``."""
    try:
        yield
    except CONTENT_ERRORS as exc:
        raise content_error(path, exc) from exc


def content_error(path: str | Path, exc: BaseException) -> RunFileError:
    """The RunFileError of ``guard``: ``path`` does not hold what iolab wrote there (``exc``)."""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _error(path, f"does not hold what iolab wrote there ({quote(detail, 80)})")
