"""Latency distributions from fio's json+ histograms: the CDF and the percentile spectrum.

    dist = latency_dist.cdf(table, by="qd")        # one row per latency bucket, per qd and direction
    spec = latency_dist.spectrum(table, by="qd")   # the latency at p1 ... p99.999, per qd and direction
    latency_dist.agreement(table)                  # fio's own listed percentiles beside the bins'

Source: the ``bins`` of fio's json+ output (fio >= 3: ``clat_ns.bins``, {bucket value in ns:
IOs}; fio 2.x µs keys are converted, ``iolab.read.fiojson.latency_bins``). ``kind`` picks
the latency: ``clat`` (completion, the default; always binned), ``lat`` (total; binned
with fio's ``lat_percentiles=1``) or ``slat`` (submission; ``slat_percentiles=1``).

Every percentile here is fio's own rule (``calc_clat_percentiles`` in fio's stat.c,
``iolab.read.fiojson.percentiles_from_bins``): the value of the first bucket whose running
count reaches p % of the IOs. So at the percentiles fio lists (``percentile_list``, by
default p1 ... p99.99) the spectrum equals fio's numbers exactly, and the CDF's first row
with ``count_le >= p/100 x total_ios`` is that same bucket; between them nothing is
interpolated. The bucket value is the middle of a bucket at most 1/2^7 ≈ 0.78 % wide
(1/64 of its power of two), which is the resolution of every latency here.

Inputs (``runs``): a run folder, a folder of run folders, fio output files, a list of
those, or a table of runs (its run folders found by ``iolab.core.runfolders``). The IOs of every run
and job that share the values of ``by`` (columns of the table, or a run folder's swept
values from params.json; ``run_id`` works too) are pooled by summing their bins: exact,
never an average of percentiles. Directions (read, write, ...) are always kept apart;
``jobs="apart"`` keeps jobs apart too.

A report without bins (fio's plain ``--output-format=json``; every iolab run is json+): a
lone (run, job, direction) falls back to fio's reported percentile list, marked in the
``source`` column as ``FROM_LIST``, so published outputs of other fio versions can still be
drawn beside iolab's. Their CDF is a few points and their spectrum only fio's listed
percentiles; pooling such reports is refused (InputError: percentiles do not add up), with
the fix: run fio with ``--output-format=json+``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core import runfiles
from ..core.errors import FioOutputError, InputError, IolabError
from ..core.runfiles import PARAMS_JSON
from ..core.runfolders import not_found, of_table, run_folders
from ..core.validate import parse_size
from ..read.fiojson import (
    checked_tidy,
    job_errors,
    latency_bins,
    latency_object,
    load_document,
    merge_bins,
    percentiles_from_bins,
)
from ..read.pool import ALL_CLIENTS, report_of, why_no_bins

KINDS = ("clat", "lat", "slat")
JOBS = ("pooled", "apart")
FROM_BINS = "fio json+ bins"
FROM_LIST = "fio's rounded percentile list, not the bins"
# fio's default percentile_list (stat.c def_percentile_list)
FIO_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)


def nines_grid(low: float = 1.0, high: float = 99.999, per_decade: int = 20) -> list[float]:
    """Percentiles (%) from ``low`` to ``high``, evenly spaced in "nines" (-log10(1 - p/100):
    p90 is 1, p99 is 2, p99.9 is 3), ``per_decade`` to each, with fio's default list
    (``FIO_PERCENTILES``) and both ends among them: what ``spectrum`` reports by default."""
    lo, hi = nines(low), nines(high)
    steps = range(math.ceil(lo * per_decade), math.floor(hi * per_decade) + 1)
    grid = {round(100 * (1 - 10 ** (-k / per_decade)), 6) for k in steps}
    return sorted(grid | {low, high} | {p for p in FIO_PERCENTILES if low <= p <= high})


def nines(p: float) -> float:
    """-log10(1 - p/100): how many nines percentile ``p`` (%) has (p99.9: 3)."""
    return -math.log10(1 - p / 100)


SPECTRUM = tuple(nines_grid())


@dataclass
class _Output:
    """One fio report to read: the run it belongs to and the ``by`` values it was made at."""

    run_id: str  # the run folder's name, or the file's path
    report: Path
    settings: dict[str, Any]


@dataclass
class _Part:
    """One (report, job, direction) that did I/O: its bins in ns, or fio's listed percentiles."""

    output: _Output
    job: str
    direction: str
    total_ios: int
    bins: dict[str, int] | None
    listed: dict[float, float] | None  # percentile -> ns: fio's own list, None when it wrote none
    why: str  # why there are no bins ("" when there are)


# ---------------------------------------------------------------- public
def cdf(
    runs: Any,
    by: str | Sequence[str] = (),
    *,
    kind: str = "clat",
    jobs: str = "pooled",
) -> pd.DataFrame:
    """The latency CDF of ``runs``: one row per json+ bucket that holds IOs, per group of
    ``by`` values and direction (and job with ``jobs="apart"``).

    Columns: the ``by`` columns, ``direction``, ``job`` (its name, or "N jobs" pooled),
    ``latency_us`` (bucket value, µs), ``count`` (IOs in it), ``count_le`` (IOs at or below it),
    ``fraction_le`` (0..1, ``count_le / total_ios``; from fio's list: the percentile / 100, the
    largest one fio gave that latency), ``total_ios`` (IOs of the group),
    ``runs`` (fio reports pooled), ``jobs`` (job entries pooled), ``run_id`` (the runs, comma
    separated), ``kind``, ``source`` (``FROM_BINS``, or ``FROM_LIST`` with NaN counts)."""
    rows = []
    for keys, group in _groups(runs, by, kind, jobs):
        ident = _identity(keys, group, kind)
        bins, listed = _pooled(group, kind)
        if bins is not None:
            pairs = sorted((int(k), int(v)) for k, v in bins.items() if int(v) > 0)
            total = sum(c for _, c in pairs)
            for (value, count), le in zip(pairs, accumulate(c for _, c in pairs)):
                rows.append(
                    {**ident, "latency_us": value / 1000.0, "count": count, "count_le": le, "fraction_le": le / total}
                )
        else:  # one part, fio's list: at each distinct latency the largest percentile that has it
            best: dict[float, float] = {}
            for p, ns in sorted(listed.items()):
                best[ns] = p
            rows += [
                {**ident, "latency_us": ns / 1000.0, "count": math.nan, "count_le": math.nan, "fraction_le": p / 100}
                for ns, p in sorted(best.items())
            ]
    return _frame(rows, by, ["latency_us", "count", "count_le", "fraction_le"])


def spectrum(
    runs: Any,
    by: str | Sequence[str] = (),
    *,
    kind: str = "clat",
    jobs: str = "pooled",
    percentiles: Iterable[float] = SPECTRUM,
) -> pd.DataFrame:
    """The percentile spectrum of ``runs``: the latency at each of ``percentiles`` (%, default
    ``SPECTRUM``: p1 to p99.999 evenly in nines, fio's listed ones among them), per group of
    ``by`` values and direction, by fio's rule on the pooled bins.

    Columns: the ``by`` columns, ``direction``, ``job``, ``percentile`` (%), ``nines``
    (-log10(1 - p/100): p90 is 1, p99.9 is 3), ``latency_us``, ``ios_above`` (total_ios x
    (1 - p/100): below 1 the "percentile" is the slowest IO's bucket, beyond what the run
    can resolve), then ``total_ios``, ``runs``, ``jobs``, ``run_id``, ``kind``, ``source`` as
    in ``cdf``. From fio's list (``FROM_LIST``) only the percentiles fio listed are given."""
    wanted = sorted({float(p) for p in percentiles})
    if not wanted or not all(0 < p < 100 for p in wanted):
        raise InputError(f"percentiles {wanted}: give percentiles above 0 and below 100, e.g. [50, 99, 99.9]")
    rows = []
    for keys, group in _groups(runs, by, kind, jobs):
        ident = _identity(keys, group, kind)
        bins, listed = _pooled(group, kind)
        values = percentiles_from_bins(bins, wanted) if bins is not None else listed
        for p, ns in sorted(values.items()):
            rows.append(
                {
                    **ident,
                    "percentile": p,
                    "nines": nines(p),
                    "latency_us": ns / 1000.0,
                    "ios_above": ident["total_ios"] * (1 - p / 100),
                }
            )
    return _frame(rows, by, ["percentile", "nines", "latency_us", "ios_above"])


def agreement(runs: Any, *, kind: str = "clat") -> pd.DataFrame:
    """fio's own listed percentiles beside the same percentiles from its json+ bins, for
    every (run, job, direction) that has both: ``run_id``, ``job``, ``direction``,
    ``percentile`` (%), ``fio_us``, ``bins_us``, ``equal``. The check that the CDF and the
    spectrum read fio's histogram as fio does (``equal`` all True)."""
    rows = []
    for part in _all_parts(_outputs(runs, []), kind):
        if part.bins is None or not part.listed:
            continue
        ours = percentiles_from_bins(part.bins, part.listed)
        for p, ns in sorted(part.listed.items()):
            rows.append(
                {
                    "run_id": part.output.run_id,
                    "job": part.job,
                    "direction": part.direction,
                    "percentile": p,
                    "fio_us": ns / 1000.0,
                    "bins_us": ours[p] / 1000.0,
                    "equal": ours[p] == ns,
                }
            )
    columns = ["run_id", "job", "direction", "percentile", "fio_us", "bins_us", "equal"]
    return pd.DataFrame(rows, columns=columns)


def agreement_words(check: pd.DataFrame) -> str:
    """``agreement``'s table in one line: how many of fio's listed percentiles equal the bins',
    and where up to three differ (job, percentile, both values in µs)."""
    line = (
        f"fio's listed percentiles: {check.equal.sum()} of {len(check)} equal to the bins' "
        f"({check.run_id.nunique()} runs)"
    )
    if check.equal.all():
        return line
    return (
        line
        + "; they differ at "
        + ", ".join(
            f"{r.job} p{r.percentile:g}: fio {r.fio_us:,.1f} µs, bins {r.bins_us:,.1f} µs"
            for r in check[~check.equal].head(3).itertuples()
        )
    )


# ---------------------------------------------------------------- which reports
def _by(by: str | Sequence[str]) -> list[str]:
    names = [b.strip() for b in by.split(",")] if isinstance(by, str) else list(by)
    return [b for b in names if b]


def _outputs(runs: Any, by: list[str]) -> list[_Output]:
    """The fio reports ``runs`` names, each with its ``by`` values."""
    if isinstance(runs, pd.DataFrame):
        return _table_outputs(runs, by)
    items = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    if not items:
        raise InputError("no runs given: give a run folder, a list of them, fio output files or a table with run_id")
    out = []
    for item in items:
        path = Path(item)
        if path.is_file():  # a fio output file given by hand: no settings but its name
            out.append(_Output(str(path), path, _settings({"run_id": str(path)}, by, path)))
            continue
        folders, _ = run_folders(path)
        if not folders:
            raise InputError(f"{path} holds no run folder (a folder with run.json); give run folders or fio.json files")
        for folder in folders:
            swept = runfiles.read_json(folder / PARAMS_JSON, optional=True) or {}
            values = {**(swept.get("swept") or {}), "run_id": folder.name}
            out.append(_Output(folder.name, report_of(folder), _settings(values, by, folder)))
    return out


def _table_outputs(table: pd.DataFrame, by: list[str]) -> list[_Output]:
    missing = [c for c in ["run_id", *by] if c not in table.columns]
    if missing:
        raise InputError(
            f"the table has no column {missing[0]!r}; "
            + (
                "give the table a study or sweep returned (it has run_id)"
                if missing[0] == "run_id"
                else f"group by columns it has, e.g. {[c for c in ('qd', 'bs', 'mode') if c in table.columns] or ['run_id']}"
            )
        )
    did_io = table[table["direction"] != "none"] if "direction" in table.columns else table
    rows = did_io.dropna(subset=["run_id"]).drop_duplicates("run_id")
    if rows.empty:
        raise InputError("the table names no run that did I/O (no row with a run_id and a direction)")
    where = of_table(rows)
    if missing_ids := [i for i in rows["run_id"] if i not in where]:
        raise InputError(not_found(missing_ids))
    return [_Output(r["run_id"], report_of(where[r["run_id"]]), {b: r[b] for b in by}) for r in rows.to_dict("records")]


def _settings(values: Mapping[str, Any], by: list[str], where: Path) -> dict[str, Any]:
    if unknown := [b for b in by if b not in values]:
        known = sorted(values)
        raise InputError(
            f"{where}: no setting {unknown[0]!r} (its settings: {known}); group run folders by their swept "
            "values, or give the study's table, whose columns can all be used"
        )
    return {b: values[b] for b in by}


# ---------------------------------------------------------------- reading the parts
def _all_parts(outputs: list[_Output], kind: str) -> list[_Part]:
    if kind not in KINDS:
        raise InputError(f"kind={kind!r}: choose 'clat' (completion latency), 'lat' (total) or 'slat' (submission)")
    return [part for output in outputs for part in _parts(output, kind)]


def _parts(output: _Output, kind: str) -> list[_Part]:
    """The (job, direction) parts of one report that did I/O; "All clients" (fio's own sum of
    the hosts) left out; FioOutputError when a job failed."""
    data = load_document(output.report).data
    entries = data["jobs"] if "jobs" in data else data.get("client_stats", [])
    frame = checked_tidy(data, output.report)
    frame = frame[frame["job"] != ALL_CLIENTS]
    if errors := job_errors(frame):
        raise FioOutputError(f"{output.report}: {'; '.join(errors)}; draw only runs that worked")
    rows = frame[frame["direction"] != "none"].to_dict("records")
    names = {r["job_index"]: _job_name(r) for r in rows}
    parts = []
    for row in rows:
        dirdata = entries[row["job_index"]][row["direction"]]
        bins = latency_bins(dirdata, kind)
        name = names[row["job_index"]]
        if list(names.values()).count(name) > 1:  # numjobs=N without group_reporting: N jobs of one name
            name += f" [{row['job_index']}]"
        why = "" if bins else why_no_bins(dirdata, kind)
        listed = _listed_of(dirdata, kind)
        parts.append(_Part(output, name, row["direction"], int(row["total_ios"]), bins, listed, why))
    return parts


def _job_name(row: Mapping[str, Any]) -> str:
    """fio's job name, with its host in client/server mode."""
    return str(row["job"]) + (f" on {row['hostname']}" if row.get("hostname") else "")


def _listed_of(dirdata: Mapping[str, Any], kind: str) -> dict[float, float] | None:
    """fio's reported percentiles of one direction, {percentile: ns}; fio 2.x µs converted;
    the "0.00": 0 placeholders of fio 2.x/3.1 dropped."""
    obj = latency_object(dirdata, kind)
    to_ns = 1.0 if f"{kind}_ns" in dirdata else 1000.0
    listed = {float(p): float(v) * to_ns for p, v in ((obj or {}).get("percentile") or {}).items() if float(p) > 0}
    return listed or None


# ---------------------------------------------------------------- grouping and pooling
def _groups(runs: Any, by: str | Sequence[str], kind: str, jobs: str) -> list[tuple[tuple, list[_Part]]]:
    """[(the group's by values + direction (+ job), its parts)], in the settings' order."""
    if jobs not in JOBS:
        raise InputError(f"jobs={jobs!r}: choose 'pooled' (a run's jobs summed) or 'apart' (each job its own curve)")
    names = _by(by)
    groups: dict[tuple, list[_Part]] = {}
    for part in _all_parts(_outputs(runs, names), kind):
        key = tuple(part.output.settings[b] for b in names) + (part.direction,)
        groups.setdefault(key + ((part.job,) if jobs == "apart" else ()), []).append(part)
    if not groups:
        raise InputError("no job of these runs did any I/O: there is no latency to draw")
    return sorted(groups.items(), key=lambda kv: [_sort_key(v) for v in kv[0]])


def _sort_key(value: Any) -> tuple:
    """Numbers by value, fio sizes ("4k", "1m") by bytes, other text as text."""
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return (0, float(value), "")
    try:
        return (0, float(parse_size(str(value))), "")
    except (IolabError, ValueError, TypeError):
        return (1, 0.0, str(value))


def _pooled(parts: list[_Part], kind: str) -> tuple[dict[str, int] | None, dict[float, float] | None]:
    """(the summed bins, None), or (None, fio's list) for a lone part without bins."""
    missing = [p for p in parts if p.bins is None]
    if not missing:
        return merge_bins(*(p.bins for p in parts)), None
    first = missing[0]
    where = f"{first.output.report} (job {first.job!r}, {first.direction})"
    if len(missing) > 1:
        where += f" and {len(missing) - 1} more of the {len(parts)} job entries pooled here"
    if not first.listed:
        raise InputError(f"{where}: no json+ {kind} bins and no {kind} percentiles: {first.why}")
    if len(parts) == 1:
        return None, first.listed
    raise InputError(
        f"{where}: no json+ {kind} bins, and percentiles of several runs or jobs do not add up (only bins "
        f"do); {first.why}, or draw each run on its own (by='run_id', jobs='apart')"
    )


def _identity(keys: tuple, parts: list[_Part], kind: str) -> dict[str, Any]:
    """The columns that say which IOs a row describes."""
    names = list(dict.fromkeys(p.job for p in parts))
    pooled_bins = all(p.bins is not None for p in parts)
    total = sum(int(v) for p in parts for v in p.bins.values()) if pooled_bins else sum(p.total_ios for p in parts)
    return {
        "_keys": keys,
        "direction": parts[0].direction,
        "job": names[0] if len(names) == 1 else f"{len(parts)} jobs",
        "total_ios": total,
        "runs": len({p.output.run_id for p in parts}),
        "jobs": len(parts),
        "run_id": ", ".join(dict.fromkeys(p.output.run_id for p in parts)),
        "kind": kind,
        "source": FROM_BINS if pooled_bins else FROM_LIST,
    }


def _frame(rows: list[dict[str, Any]], by: str | Sequence[str], values: list[str]) -> pd.DataFrame:
    names = _by(by)
    for row in rows:
        row.update(zip(names, row.pop("_keys")))
    rest = ["direction", "job", *values, "total_ios", "runs", "jobs", "run_id", "kind", "source"]
    columns = names + [c for c in rest if c not in names]  # by="run_id": one run_id column
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs["by"] = names
    return frame
