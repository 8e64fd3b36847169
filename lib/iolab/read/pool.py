"""Pooling fio outputs exactly: many jobs, hosts and repeats -> one row per direction.

    pool_outputs(["rep0/fio.json", "rep1/fio.json", "rep2/fio.json"])
    direction pooled_as                                             iops     clat_p99_us ...
    read      3 files (repeats, averaged) x 4 jobs (concurrent, summed) 183412.  412.7

What is pooled and how (units in the column names, see ``iolab.core.columns``):

* jobs and hosts inside one output ran at the same time: their ``iops`` and
  ``bw_bytes_s`` are summed. Separate outputs are repeats by default (``files="repeats"``:
  the per-file sums are averaged over the files) or ran at the same time
  (``files="concurrent"``, e.g. one fio process per disk: summed). ``pooled_as`` says which;
  a direction missing from some files is averaged over the files that have it (and counted so).
* ``total_ios`` and ``io_bytes`` are summed over everything; ``slat/clat/lat_mean_us``
  are weighted by each job's ``total_ios``; ``clat_min_us``/``clat_max_us`` are the
  extremes.
* percentiles come from the json+ ``bins`` of every job of every output, summed, with
  fio's own rule (``calc_clat_percentiles`` in fio's stat.c: the value of the first bucket
  whose cumulative count reaches p % of all IOs; ``iolab.read.fiojson.percentiles_from_bins``).
  This is exact to fio's bucket error (≤ 0.78 %). When any job lacks bins the percentiles
  are NaN and ``percentile_note`` says why — never an average of percentiles, which is
  not a percentile of anything.

The client/server "All clients" entry is fio's own sum of the others and is left out.
Outputs whose jobs sit in several reporting groups (``stonewall``/``new_group``: they may
have run one after another) are refused, since their IOPS cannot be summed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import FioOutputError, InputError
from .fiojson import (
    DIRECTIONS,
    FILES,
    PERCENTILES,
    FioDocument,
    checked_tidy,
    job_errors,
    latency_bins,
    latency_object,
    load_document,
    merge_bins,
    percentiles_from_bins,
)

KINDS = ("clat", "lat")  # latencies whose percentiles are pooled
FILES_ARE = ("repeats", "concurrent")
ALL_CLIENTS = "All clients"  # fio client.c's aggregate entry in client_stats
Input = str | os.PathLike | FioDocument | Mapping[str, Any]


@dataclass
class Part:
    """One (output, job, direction) that did I/O: its tidy row and json+ bins (ns keys)."""

    index: int  # position of the output in the inputs
    source: str  # the path, or "input N": how notes name it
    row: dict[str, Any]
    bins: dict[str, dict | None]  # kind -> {ns: count}, None without bins
    why: dict[str, str]  # kind -> why there are no bins ("" when there are)


# ---------------------------------------------------------------- public
def pool_outputs(inputs: Input | Iterable[Input], files: str = "repeats") -> pd.DataFrame:
    """One row per direction pooling every job of every fio output in ``inputs`` (paths,
    ``FioDocument``s or parsed dicts); ``files`` says whether separate outputs are
    "repeats" (IOPS and bandwidth averaged over them) or "concurrent" (summed).
    See the module docstring for each column's rule."""
    if files not in FILES_ARE:
        raise InputError(
            f"files={files!r}: choose 'repeats' (outputs of repeated runs, averaged) "
            "or 'concurrent' (outputs of runs at the same time, summed)"
        )
    items = [inputs] if isinstance(inputs, (str, os.PathLike, FioDocument, Mapping)) else list(inputs)
    if not items:
        raise InputError("nothing to pool: give one or more fio JSON outputs")
    parts = [p for i, item in enumerate(items) for p in _parts(i, *_load(item, i))]
    rows = [
        _pool_direction(d, [p for p in parts if p.row["direction"] == d], files)
        for d in DIRECTIONS
        if any(p.row["direction"] == d for p in parts)
    ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- reading
def report_of(run_dir: Path) -> Path:
    """The fio report of a run folder; InputError for a folder without one (t/io_uring's)."""
    report = run_dir / FILES[0]
    if not report.is_file():
        raise InputError(
            f"{run_dir}: not a fio run folder (no {FILES[0]}; a t/io_uring run has no "
            "latency bins to pool); give run folders of fio runs"
        )
    return report


def _load(item: Input, index: int) -> tuple[str, Mapping[str, Any]]:
    """(how notes name it, the fio report)."""
    if isinstance(item, FioDocument):
        return f"input {index + 1}", item.data
    if isinstance(item, Mapping):
        return f"input {index + 1}", item
    return str(item), load_document(item).data


def _parts(index: int, source: str, data: Mapping[str, Any]) -> list[Part]:
    """The parts of one report that did I/O, "All clients" left out; refused when a job
    failed, nothing did I/O, or jobs sit in several reporting groups."""
    client_mode = "jobs" not in data
    entries = data.get("client_stats", []) if client_mode else data["jobs"]
    frame = checked_tidy(data, source)
    if client_mode:
        frame = frame[frame["job"] != ALL_CLIENTS]
    if errors := job_errors(frame):
        raise FioOutputError(f"{source}: {'; '.join(errors)}; pool only outputs of runs that worked")
    frame = frame[frame["direction"] != "none"]
    if frame.empty:
        raise FioOutputError(f"{source}: no job did any I/O; nothing to pool")
    if frame["groupid"].nunique() > 1:
        raise InputError(
            f"{source}: jobs in {frame['groupid'].nunique()} reporting groups (stonewall or "
            "new_group: they may have run one after another, so their IOPS cannot be "
            "summed); pool outputs with one group each"
        )
    return [_part(index, source, row, entries[row["job_index"]][row["direction"]]) for row in frame.to_dict("records")]


def _part(index: int, source: str, row: dict[str, Any], dirdata: Mapping[str, Any]) -> Part:
    bins = {kind: latency_bins(dirdata, kind) for kind in KINDS}
    why = {kind: "" if bins[kind] else why_no_bins(dirdata, kind) for kind in KINDS}
    return Part(index, source, row, bins, why)


def why_no_bins(dirdata: Mapping[str, Any], kind: str) -> str:
    """Why fio wrote no json+ bins for this latency (clat, lat or slat) of one direction, and
    the fio option that gives them."""
    obj = latency_object(dirdata, kind)
    if not obj or float(obj.get("max", 0)) == 0:
        return f"fio measured no {kind} (gtod_reduce=1 or disable_{kind}=1); run fio without them"
    if kind != "clat" and not obj.get("percentile"):
        return f"fio writes {kind} bins only with {kind}_percentiles=1 and --output-format=json+"
    return "run fio with --output-format=json+ (iolab's runs always are)"


# ---------------------------------------------------------------- pooling one direction
def _pool_direction(direction: str, parts: list[Part], files: str) -> dict[str, Any]:
    per_file = _by_output(parts)
    combine = _mean if files == "repeats" else sum
    row: dict[str, Any] = {
        "direction": direction,
        "pooled_as": pooled_as(per_file, files),
        "iops": combine([sum(p.row["iops"] for p in ps) for ps in per_file.values()]),
        "bw_bytes_s": combine([sum(p.row["bw_bytes_s"] for p in ps) for ps in per_file.values()]),
        "io_bytes": sum(int(p.row["io_bytes"]) for p in parts),
        "total_ios": sum(int(p.row["total_ios"]) for p in parts),
        "slat_mean_us": _weighted_mean(parts, "slat_mean_us"),
        "clat_mean_us": _weighted_mean(parts, "clat_mean_us"),
        "clat_min_us": _extreme(min, parts, "clat_min_us"),
        "clat_max_us": _extreme(max, parts, "clat_max_us"),
        "lat_mean_us": _weighted_mean(parts, "lat_mean_us"),
    }
    notes, pooled = [], []
    for kind in KINDS:
        values, note = pooled_percentiles(parts, kind)
        row.update(values)
        notes += [note] if note else []
        pooled += [] if note else [kind]
    row["percentile_source"] = pooled[0] if pooled else "none"
    row["percentiles_from"] = "pooled bins" if pooled else math.nan
    row["percentile_note"] = "; ".join(notes)
    row["fio_version"] = ", ".join(dict.fromkeys(str(p.row["fio_version"]) for p in parts))
    return row


def pooled_percentiles(parts: list[Part], kind: str) -> tuple[dict[str, float], str]:
    """({"<kind>_p99_us": µs, ...}, "") from the summed bins of all ``parts`` by fio's rule
    (``percentiles_from_bins``); all NaN and the reason when a part has no bins."""
    missing = [p for p in parts if p.bins[kind] is None]
    names = {f"{kind}_p{name}_us": p for name, p in PERCENTILES.items()}
    if missing:
        first, more = missing[0], len({p.index for p in missing}) - 1
        others = f" (and {more} more)" if more else ""
        note = f"{kind}: {first.source}{others} has no json+ {kind} bins: {first.why[kind]}"
        return dict.fromkeys(names, math.nan), note
    ns = percentiles_from_bins(merge_bins(*(p.bins[kind] for p in parts)), PERCENTILES.values())
    return {col: ns.get(p, math.nan) / 1000.0 for col, p in names.items()}, ""


def pooled_as(per_file: Mapping[int, list[Part]], files: str) -> str:
    """E.g. "3 files (repeats, averaged) x 4 jobs (concurrent, summed)"; "on 2 hosts" in
    client/server mode; a range ("2-4 jobs") when the files differ."""
    counts = [len(ps) for ps in per_file.values()]
    hosts = max(len({p.row["hostname"] for p in ps if p.row["hostname"]}) for ps in per_file.values())
    jobs = f"{min(counts)}-{max(counts)}" if min(counts) != max(counts) else str(counts[0])
    text = f"{jobs} job{'s' if max(counts) > 1 else ''}" + (f" on {hosts} hosts" if hosts > 1 else "")
    text += " (concurrent, summed)" if max(counts) > 1 else ""
    n = len(counts)
    how = {"repeats": "repeats, averaged", "concurrent": "concurrent, summed"}[files]
    return f"{n} file{'s' if n > 1 else ''}{f' ({how})' if n > 1 else ''} x {text}"


def _by_output(parts: list[Part]) -> dict[int, list[Part]]:
    out: dict[int, list[Part]] = {}
    for p in parts:
        out.setdefault(p.index, []).append(p)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _extreme(pick, parts: list[Part], col: str) -> float:
    """``min`` or ``max`` of ``col`` over the jobs; NaN when a job did not measure clat
    (fio then writes 0 for min and max)."""
    values = [float(p.row[col]) for p in parts]
    unmeasured = any(math.isnan(float(p.row["clat_mean_us"])) for p in parts)
    return math.nan if unmeasured or any(math.isnan(v) for v in values) else pick(values)


def _weighted_mean(parts: list[Part], col: str) -> float:
    """Mean of ``col`` over all IOs: per-job means weighted by ``total_ios``; NaN when a
    job did not measure it (a partial mean would describe only some of the IOs)."""
    values = [float(p.row[col]) for p in parts]
    weights = [int(p.row["total_ios"]) for p in parts]
    if any(math.isnan(v) for v in values) or sum(weights) == 0:
        return math.nan
    return sum(v * w for v, w in zip(values, weights)) / sum(weights)
