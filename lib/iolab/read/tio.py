"""fio's ``t/io_uring`` peak-IOPS tool: parse its text output into a tidy table.

Input (one line per second after a header per submitter)::

    submitter=0, tid=380209, file=/dev/ng0n1, nfiles=1, node=-1
    polled=1, fixedbufs=1, register_files=1, buffered=1, QD=512
    IOPS=2.81M, BW=10.96GiB/s, IOS/call=43/43
    Maximum IOPS=2.81M

Output: one row per reported second: ``second, iops, bw_bytes_s, ios_per_submit_call,
ios_per_reap_call``, with the header facts (``polled``, ``qd``, ``submitters``,
``max_iops``) as columns. Older t/io_uring prints plain integers (``IOPS=290123``).

A run folder of ``iolab.measure.runner.measure_tio`` keeps that text as ``tio.txt``; ``run_rows``
reads it back as the run's one table row (``summarise_tio``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..core.errors import InputError, TioError, ToolMissing, printable
from ..core.paths import REPO
from ..core.runfiles import TIO_TXT

SUFFIX = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
BW_UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9}
_IOPS = re.compile(r"^IOPS=([\d.]+)([KMG]?), (?:BW=([\d.]+)([KMGT]?i?B)/s, )?IOS/call=(\d+)/(\d+)")
_MAX = re.compile(r"^Maximum IOPS=([\d.]+)([KMG]?)")
FILES = (TIO_TXT,)  # in a run folder (written by iolab.measure.runner.measure_tio)


def looks_like_tio(text: str) -> bool:
    return "IOS/call=" in text or text.lstrip().startswith("submitter=")


def _num(value: str, suffix: str) -> float:
    return float(value) * SUFFIX[suffix]


def parse_tio_text(text: str) -> pd.DataFrame:
    header: dict[str, object] = {"submitters": 0}
    rows, max_iops = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("submitter="):
            header["submitters"] = int(header["submitters"]) + 1
            for key, value in re.findall(r"(\w+)=([^,\s]+)", line):
                if key in ("file", "nfiles"):
                    header[key] = value
        elif line.startswith("polled="):
            for key, value in re.findall(r"(\w+)=([^,\s]+)", line):
                header["qd" if key == "QD" else key] = int(value) if value.lstrip("-").isdigit() else value
        elif m := _IOPS.match(line):
            bw = float(m.group(3)) * BW_UNIT[m.group(4)] if m.group(3) else float("nan")
            rows.append(
                {
                    "second": len(rows) + 1,
                    "iops": _num(m.group(1), m.group(2)),
                    "bw_bytes_s": bw,
                    "ios_per_submit_call": int(m.group(5)),
                    "ios_per_reap_call": int(m.group(6)),
                }
            )
        elif m := _MAX.match(line):
            max_iops = _num(m.group(1), m.group(2))
    if not rows:
        reason = failure(text)
        if reason:
            raise TioError(f"t/io_uring reported a failure and measured nothing: {reason}")
        if "Exiting on timeout" in text:
            raise TioError(
                "t/io_uring stopped at its -r runtime before its first report (it reports once a second): give -r 2 or more"
            )
        raise TioError(
            "no t/io_uring 'IOPS=..., IOS/call=...' lines found: is this t/io_uring output? " + _failure_reason(text)
        )
    frame = pd.DataFrame(rows)
    for key, value in header.items():
        frame[key] = value
    frame["max_iops"] = max_iops if max_iops is not None else frame["iops"].max()
    return frame


def _failure_reason(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return ("It said: " + " | ".join(lines[:4])) if lines else "The output is empty."


def parse_tio(path: str | Path) -> pd.DataFrame:
    return parse_tio_text(Path(path).read_text(errors="replace"))


UNSUPPORTED = ("doesn't support polled IO", "unexpected ret=", "Invalid argument", "Operation not supported", "open: ")


def failure(text: str) -> str | None:
    """t/io_uring exits 0 even when polled IO is unsupported ('unexpected ret=-95'):
    the reason, if its output says the run failed."""
    hits = [line.strip() for line in text.splitlines() if any(u in line for u in UNSUPPORTED)]
    return "; ".join(dict.fromkeys(hits)) if hits else None


def binary(path: str | Path | None = None) -> Path:
    """The built t/io_uring (``make tio``), or a path the user gives."""
    p = Path(path) if path else REPO / "tools" / "t_io_uring"
    if not p.exists():
        raise ToolMissing(
            "t/io_uring",
            "fio",
            how="build it from fio's source: `make tio` in the iolab checkout (or FIO_SRC=/path/to/fio make tio)",
        )
    return p


# t/io_uring's flags (its -h, fio 3.33): each takes a number; "bool" ones 0 or 1
FLAGS = {
    "d": "IO depth (128)",
    "s": "batch submit (32)",
    "c": "batch complete (32)",
    "b": "block size, bytes (4096)",
    "p": "polled IO, bool (1)",
    "B": "fixed buffers, bool (1)",
    "D": "DMA map fixed buffers, bool (0)",
    "F": "register files, bool (1)",
    "n": "threads (1)",
    "O": "O_DIRECT, bool (1)",
    "N": "no-op requests only, bool (0)",
    "t": "track IO latencies, bool (0)",
    "T": "TSC rate, Hz",
    "r": "runtime, s (iolab: 3)",
    "R": "random IO, bool (1)",
    "a": "legacy aio, bool (0)",
    "S": "sync IO (preadv2), bool (0)",
    "X": "registered ring, bool (1)",
    "P": "place on the device's home node, bool (0)",
    "u": "NVMe passthrough, bool (0)",
}


def flags_from_argv(args: list[str]) -> tuple[dict[str, int], list[str]]:
    """t/io_uring's own command line (``-d 128 -p0 /dev/ng0n1``) -> (flags, files), checked:
    InputError for a flag it does not have or a value that is not a whole number."""
    flags: dict[str, int] = {}
    files: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            files += args[i + 1 :]
            break
        if not arg.startswith("-") or arg == "-":
            files.append(arg)
            i += 1
            continue
        key, value = arg[1:2], arg[2:]
        if key not in FLAGS or arg.startswith("--"):
            shown = printable(repr(arg[:20]))
            raise InputError(
                f"t/io_uring has no flag {shown}; its flags: " + ", ".join(f"-{k} {v}" for k, v in FLAGS.items())
            )
        if not value:
            i += 1
            value = args[i] if i < len(args) else ""
        if not value.isdigit():
            shown = printable(repr(value[:20]))
            raise InputError(f"t/io_uring -{key} ({FLAGS[key]}) takes a whole number, not {shown}: e.g. -{key} 1")
        flags[key] = int(value)
        i += 1
    return flags, files


POSITIVE = ("d", "s", "c", "b", "n", "r")  # counts and sizes: 0 crashed t/io_uring (SIGSEGV, SIGFPE)
MAX_DEPTH = 32768  # io_uring's largest ring (IORING_MAX_ENTRIES); -d 65536 crashed at io_uring_setup


def check_flags(flags: dict) -> None:
    """InputError, one line, for t/io_uring flags it would crash on instead of refusing:
    a depth, batch, block size, thread count or runtime below 1, a depth above ``MAX_DEPTH``."""
    for key in POSITIVE:
        value = flags.get(key)
        if value is None:
            continue
        whole = not isinstance(value, bool) and str(value).strip().isdigit()  # 512 or "512", as notebooks give it
        if not whole or int(str(value)) < 1:
            raise InputError(f"t/io_uring -{key} ({FLAGS[key]}) must be a whole number from 1, not {value!r}")
    if int(str(flags.get("d", 1))) > MAX_DEPTH:
        raise InputError(f"t/io_uring -d {flags['d']}: io_uring's rings hold at most {MAX_DEPTH} entries")


def tio_argv(target: str | Path, flags: dict, tio: str | Path | None = None) -> list[str]:
    """t/io_uring command line from flags {'d': 128, 'b': 512, 'p': 0, 'r': 3, ...}, checked
    (``check_flags``) before t/io_uring sees them."""
    check_flags(flags)
    argv = [str(binary(tio))]
    for key, value in flags.items():
        argv += [f"-{key}", str(int(value) if isinstance(value, bool) else value)]
    return argv + [str(target)]


def summarise_tio(frame: pd.DataFrame) -> dict:
    """One row per run: steady IOPS (mean of the per-second lines, first one dropped when
    there are 3 or more: ramp-up), the maximum, IOs per call, and the mean latency Little's
    law gives for a full queue (QD x submitters / IOPS) — an estimate, labelled as such."""
    steady = frame.iloc[1:] if len(frame) >= 3 else frame
    iops = float(steady["iops"].mean())
    qd = float(frame["qd"].iloc[0]) if "qd" in frame else float("nan")
    subs = int(frame["submitters"].iloc[0]) if "submitters" in frame else 1
    return {
        "tool": "t/io_uring",
        "iops": iops,
        "max_iops": float(frame["max_iops"].iloc[0]),
        "bw_bytes_s": float(steady["bw_bytes_s"].mean()),
        "ios_per_submit_call": float(steady["ios_per_submit_call"].mean()),
        "qd": qd,
        "submitters": subs,
        "polled": frame.get("polled", pd.Series([None])).iloc[0],
        "lat_mean_us_littles": qd * subs / iops * 1e6 if iops else float("nan"),
        "seconds": len(frame),
    }


def run_rows(run_dir: str | Path) -> pd.DataFrame:
    """The table row of a t/io_uring run folder: one reading "job" with ``summarise_tio``'s
    columns (the tool reads only, so the direction is ``read``)."""
    summary = summarise_tio(parse_tio(Path(run_dir) / FILES[0]))
    return pd.DataFrame([{"job_index": 0, "job": "t/io_uring", "direction": "read", **summary}])
