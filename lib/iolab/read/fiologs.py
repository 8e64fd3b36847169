"""fio's interval log files in a run folder, and its latency histogram bins.

Finds the logs (``fio_iops.1.log``, per host in client/server mode), reads each as numbers, and
maps fio's histogram bin index to a latency (stat.h: FIO_IO_U_PLAT_BITS=6, FIO_IO_U_PLAT_VAL=64;
1856 bins now, 1216 before fio 2.99). fio 3.33's client writes each histogram line as its
interval plus every second one before it: ``undo_overlap`` takes the earlier ones back out when
the result checks out against the IOPS log (``iolab.read.series`` decides)."""

from __future__ import annotations

import functools
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import FioOutputError
from ..core.runfolders import is_run
from . import fiojson

PREFIX = "fio"  # log file prefix inside the run folder: fio_iops.1.log, ...
KINDS = ("clat_hist", "iops", "bw", "clat", "slat", "lat")  # longest first: clat_hist before clat
DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
PLAT_BITS, PLAT_VAL = 6, 64  # fio stat.h FIO_IO_U_PLAT_BITS / FIO_IO_U_PLAT_VAL
GROUPS = (29, 19)  # FIO_IO_U_PLAT_GROUP_NR now (1856 bins) and before fio 2.99 (1216)
PERCENTILES = {"50": 50.0, "99": 99.0, "99_9": 99.9}


# ---------------------------------------------------------------- fio's bins
def plat_idx_to_val(idx: int) -> int:
    """fio's ``plat_idx_to_val`` (stat.c): the latency (ns) a histogram bin stands for — its
    index itself below 128, else the middle of its bucket. The same values are json+ ``bins``
    keys, so log bins and report bins can be compared and pooled."""
    if idx < (PLAT_VAL << 1):
        return idx
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return base + int((k + 0.5) * (1 << error_bits))


def bin_edges_ns(idx: int) -> tuple[int, int]:
    """The latency range [low, high) in ns that fio's bin ``idx`` counts."""
    if idx < (PLAT_VAL << 1):
        return idx, idx + 1
    error_bits = (idx >> PLAT_BITS) - 1
    low = (1 << (error_bits + PLAT_BITS)) + (idx % PLAT_VAL) * (1 << error_bits)
    return low, low + (1 << error_bits)


def hist_layout(nbins: int) -> tuple[int, int]:
    """(bin groups, log_hist_coarseness) of a histogram log line with ``nbins`` counts:
    groups*64 / 2**coarseness (fio writes every 2**c bins summed). FioOutputError otherwise."""
    for groups in GROUPS:
        for coarse in range(7):
            if groups * PLAT_VAL == nbins << coarse:
                return groups, coarse
    raise FioOutputError(
        f"a histogram log line with {nbins} bins: fio writes 1856 (or 1216 before fio 2.99) "
        "divided by 2**log_hist_coarseness; is it a fio clat_hist log?"
    )


@functools.cache
def bin_values_ns(nbins: int) -> np.ndarray:
    """The latency (ns) each of ``nbins`` histogram-log columns stands for; a coarse column
    (log_hist_coarseness) is fio's bins [g*2**c, (g+1)*2**c) summed, valued at its middle bin.
    Read-only: one array per layout, shared by every caller."""
    _, coarse = hist_layout(nbins)
    stride = 1 << coarse
    values = np.array([plat_idx_to_val(g * stride + stride // 2) for g in range(nbins)], dtype=np.int64)
    values.flags.writeable = False
    return values


# ---------------------------------------------------------------- finding and reading the logs
@dataclass(frozen=True)
class LogFile:
    path: Path
    kind: str  # iops, bw, clat, lat, slat, clat_hist
    job_number: int  # fio's N in ``.N.log`` (0: per_job_logs=0, one log for every job)
    host: str  # "" for a local run


def find_logs(run_dir: str | os.PathLike, prefix: str = PREFIX) -> list[LogFile]:
    """The interval logs in ``run_dir`` by name, ``[HOST.]PREFIX_KIND[.N].log[.HOST]`` (or,
    when it holds none, in its sub-folders, each named for its host)."""
    pattern = re.compile(
        rf"^(?:(?P<pre>.+?)[._-])?{re.escape(prefix)}_(?P<kind>{'|'.join(KINDS)})"
        rf"(?:\.(?P<job>\d+))?\.log(?:\.(?P<post>.+))?$"
    )

    def logs_in(folder: Path, folder_host: str) -> list[LogFile]:
        found = []
        for path in sorted(folder.iterdir()):
            m = pattern.match(path.name)
            if m and path.is_file():
                found.append(LogFile(path, m["kind"], int(m["job"] or 0), m["post"] or m["pre"] or folder_host))
        return found

    run_dir = Path(run_dir)
    here = logs_in(run_dir, "")
    if here:
        return here
    return [
        f for d in sorted(run_dir.iterdir()) if d.is_dir() and not is_run(d) for f in logs_in(d, d.name)
    ]  # a sub-folder with run.json is a run of its own, not a host


def _numbers(path: Path, min_cols: int) -> pd.DataFrame:
    """The comma-separated numbers of one fio log (no header), or FioOutputError saying why not:
    not numbers, cut mid-line, or a line with fewer than ``min_cols`` of them."""
    if path.stat().st_size == 0:
        return pd.DataFrame()
    plain = _plain_numbers(path.read_bytes(), min_cols)
    if plain is not None:
        return pd.DataFrame(plain)
    try:
        frame = pd.read_csv(path, header=None, skipinitialspace=True, dtype=np.float64)
    except (ValueError, pd.errors.ParserError) as exc:
        first = (path.read_text(errors="replace").splitlines() or [""])[0][:80]
        raise FioOutputError(
            f"{path}: not an fio log (lines of comma-separated numbers: time in ms, value, "
            f"direction, ...); it begins {first!r} ({type(exc).__name__})"
        ) from None
    if frame.shape[1] < min_cols:
        raise FioOutputError(
            f"{path}: {frame.shape[1]} columns per line; fio's logs have at least {min_cols} "
            "(time ms, value, direction, block size[, offset][, priority])"
        )
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        cut = f.read(1) != b"\n"
    short = np.flatnonzero(frame.iloc[:, :min_cols].isna().any(axis=1).to_numpy())
    if cut or len(short):
        where = (
            f"it stops mid-line ({len(frame)} lines)"
            if cut
            else f"line {short[0] + 1} has fewer than {min_cols} numbers"
        )
        raise FioOutputError(
            f"{path}: cut short: {where}; fio writes whole lines (was it stopped while writing? "
            "then its interval logs cannot be read)"
        )
    return frame


_NOT_WHOLE = re.compile(rb"[^0-9, \n-]")  # a byte no line of whole numbers holds


def _plain_numbers(text: bytes, min_cols: int) -> np.ndarray | None:
    """The numbers of a log as fio writes it — whole lines of the same count of comma-separated
    numbers — parsed at once (a histogram log in a tenth of pandas' time); None for anything
    else (blank or ragged lines, a line cut short, words), which ``_numbers`` reads with pandas
    and explains."""
    lines = text.split(b"\n")
    if not text.endswith(b"\n") or len(lines) < 2:
        return None
    commas = {line.count(b",") for line in lines[:-1]}
    if len(commas) != 1 or (width := commas.pop() + 1) < min_cols:
        return None
    if not _NOT_WHOLE.search(text):  # whole numbers, as fio writes them: numpy's integer reader, 10x faster
        try:
            whole = np.loadtxt(io.BytesIO(text), delimiter=",", dtype=np.int64, ndmin=2)
        except (ValueError, OverflowError):
            return None
        return whole.astype(np.float64) if whole.shape == (len(lines) - 1, width) else None
    try:
        values = np.array(text.replace(b",", b" ").split(), dtype=np.float64)
    except ValueError:
        return None
    if values.size != width * (len(lines) - 1):
        return None  # an empty field (",,") or a line of blanks
    return values.reshape(len(lines) - 1, width)


def read_log(path: str | os.PathLike) -> pd.DataFrame:
    """One IOPS / bandwidth / latency log: t_ms, value, ddir (fio 2.x-3.x: 4 to 6 columns:
    time, value, direction, block size[, offset][, priority]). Empty when fio wrote nothing."""
    frame = _numbers(Path(path), 3)
    if frame.empty:
        return pd.DataFrame({"t_ms": [], "value": [], "ddir": []})
    return pd.DataFrame({"t_ms": frame[0], "value": frame[1], "ddir": frame[2].astype(int)})


def read_hist(path: str | os.PathLike) -> tuple[pd.DataFrame, np.ndarray]:
    """One histogram log: (t_ms, ddir, bs per line; the counts, lines x bins)."""
    frame = _numbers(Path(path), 4)
    if frame.empty:
        return pd.DataFrame({"t_ms": [], "ddir": [], "bs": []}), np.zeros((0, 1856), dtype=np.int64)
    counts = frame.iloc[:, 3:].to_numpy()
    hist_layout(counts.shape[1])  # FioOutputError for an unknown layout
    if (counts < 0).any() or not np.all(counts == np.round(counts)):
        raise FioOutputError(f"{path}: histogram counts must be whole numbers >= 0")
    return (pd.DataFrame({"t_ms": frame[0], "ddir": frame[1].astype(int), "bs": frame[2]}), counts.astype(np.int64))


OVERLAP_RATIO = 1.10  # client/server: a regular interval whose histogram line counts this many times its


# IOPS log's IOs (+10) overlaps the ones before (on a quiet machine the two agree
# within 1 %; on a loaded one their windows drift apart, so it is not checked locally)
UNDONE = "histogram log (client/server overlap undone)"


def drop_bad_hist(
    table: pd.DataFrame, bins: np.ndarray, coverage: pd.DataFrame, notes: list[str], client_server: bool
) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """A histogram log whose intervals overlap — it counts more IOs than fio's report, or, in
    client/server mode, a regular interval's line counts more than ``OVERLAP_RATIO`` times
    the IOs its IOPS log says. fio 3.33's client writes each line as its interval plus every
    second one before it: that is undone (``_undo_overlap``) when the result checks out
    against the IOPS log; any other overlap, or one that does not check out, is not used for
    IO counts and percentiles, the IOs estimated from the IOPS log instead. Said in the notes."""
    log_s = float(np.median(table["interval_s"])) if len(table) else 0.0
    values = bin_values_ns(bins.shape[1])
    for i, r in coverage[coverage["ios_from"] == "histogram log"].iterrows():
        where = (
            (table["direction"] == r["direction"]) & ((table["host"] == r["host"]) if r["host"] else True)
        ).to_numpy()
        part = table[where]
        regular = _regular(part, log_s)
        expected = regular["iops"] * regular["interval_s"]
        over_report = r["uncovered_ios"] < 0
        over_iops = client_server and bool((regular["ios"] > OVERLAP_RATIO * expected + 10).any())
        if not (over_report or over_iops):
            continue
        who = f"{r['host'] + ': ' if r['host'] else ''}{r['direction']}: fio's histogram log counts {r['series_ios']:,.0f} IOs"
        undone = _undo_overlap(part, bins, log_s) if client_server else None
        if undone is not None and undone.sum() <= r["fio_ios"]:
            bins[part.index] = undone
            table.loc[part.index, "ios"] = undone.sum(axis=1).astype(float)
            for j, row in zip(part.index, undone):
                for col, v in row_percentiles(row, values).items():
                    table.loc[j, col] = v
            got = float(undone.sum())
            coverage.loc[i, ["series_ios", "uncovered_ios", "covered_pct", "ios_from"]] = [
                got,
                r["fio_ios"] - got,
                100 * got / r["fio_ios"] if r["fio_ios"] else np.nan,
                UNDONE,
            ]
            notes.append(
                f"{who}: each line is its interval plus every second one before it (fio's client/server "
                "mode writes them so); undone by subtracting the line two before — checked: no bin below "
                "zero, every interval's IOs within 5 % of its IOPS log"
            )
            continue
        than = (
            "more than the {:,.0f} of its report".format(r["fio_ios"])
            if over_report
            else "and an interval's line up to {:.2f} times what its IOPS log says for it".format(
                float((regular["ios"] / expected.where(expected > 0)).max())
            )
        )
        notes.append(
            f"{who}, {than} — its intervals overlap: its IO counts and percentiles are not used, IOs "
            "per interval are estimated as IOPS x interval"
        )
        table.loc[where, ["ios", *[f"clat_p{p}_us" for p in PERCENTILES]]] = np.nan
        bins[where] = 0
        from_iops = float((part["iops"] * part["interval_s"]).sum())
        coverage.loc[i, ["series_ios", "uncovered_ios", "covered_pct", "ios_from"]] = [
            from_iops,
            r["fio_ios"] - from_iops,
            100 * from_iops / r["fio_ios"] if r["fio_ios"] else np.nan,
            "IOPS log x interval (an estimate: histogram log unusable)",
        ]
    return table, bins, coverage


def _regular(part: pd.DataFrame, log_s: float) -> pd.DataFrame:
    """Rows of one interval's length with both an IOPS sample and a histogram line."""
    return part[(abs(part["interval_s"] - log_s) < 0.1 * log_s) & part["iops"].notna() & part["ios"].notna()]


def _undo_overlap(part: pd.DataFrame, bins: np.ndarray, log_s: float) -> np.ndarray | None:
    """Each interval's own histogram from client/server lines L_i = D_i + D_(i-2) + D_(i-4) + ...:
    D_i = L_i - L_(i-2), per job, for the rows of ``part`` in its order. None unless every
    interval up to the last line has a line, no bin goes below zero and every regular
    interval's IOs are within 5 % (+10) of what its IOPS log says."""
    out = bins[part.index].copy()
    position = {label: n for n, label in enumerate(part.index)}
    for _, rows in part.groupby("job_number"):
        lines = rows[rows["ios"].notna()].sort_values("interval")
        if (lines["ios"] == 0).any() or list(lines["interval"]) != list(range(1, len(lines) + 1)):
            return None
        at = [position[label] for label in lines.index]
        raw = bins[lines.index]
        own = raw.copy()
        own[2:] -= raw[:-2]
        if (own < 0).any():
            return None
        out[at] = own
        check = _regular(lines.assign(ios=own.sum(axis=1)), log_s)
        expected = check["iops"] * check["interval_s"]
        if (abs(check["ios"] - expected) > 0.05 * expected + 10).any():
            return None
    return out


def row_percentiles(row: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """clat_p50_us, clat_p99_us, clat_p99_9_us of one histogram row (fio's rule); NaN when empty."""
    nz = np.nonzero(row)[0]
    got = (
        fiojson.percentiles_from_bins({str(int(values[j])): int(row[j]) for j in nz}, PERCENTILES.values())
        if len(nz)
        else {}
    )
    return {f"clat_p{name}_us": got[p] / 1000.0 if p in got else np.nan for name, p in PERCENTILES.items()}
