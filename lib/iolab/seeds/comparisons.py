"""Each published figure of a seed (``data/reference/published_figures.csv``) beside this
machine's value: the table ``iolab seeds``' pages (``iolab.seeds.pages``) show.

    table = comparisons(seed, out)     # one row per published figure and metric

A comparison row holds the published value (cited), the local value with its interval,
their ratio (local ÷ published), the plausibility flags of the runs behind it and, when
there is no local value, the reason: the experiment failed or has not run yet, the step was
skipped here (the notebook's own reason), the machine cannot vary what the figure varies
(the search's left-out axes), or the manifest's reason. Local values come from the results
the executed notebooks recorded (``iolab.record.results``), named by their keys
(``iolab.report.contract``) in the seed manifest's ``figures``; a search's cells (seed 003)
from its runs through ``iolab.measure.search`` and ``iolab.stats.repeat_stats.summarise``.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.columns import unit
from ..read import checks
from ..read.published import published_figures as read_published
from ..report.batch import read_record
from ..report.contract import Notebook, declared
from ..stats import repeat_stats
from ..stats.gap import polled_run
from . import commands
from .evidence import printed
from .manifest import Experiment, Seed

METRICS = ("iops", "bw_mib_s", "clat_p50_us", "clat_p99_us", "mean_lat_us", "cycles_per_io")  # iolab.core.columns
WORDS = {
    "iops": "IOPS",
    "bw_mib_s": "bandwidth",
    "clat_p50_us": "clat p50",
    "clat_p99_us": "clat p99",
    "mean_lat_us": "mean latency",
    "cycles_per_io": "cycles per IO (fio's own)",
}
SWEPT = {
    "qd": "qd",
    "step": "step_name",
    "tool": "tool",
}  # a result name's field -> the runs' swept value (params.json)
COLUMNS = [
    "experiment",
    "label",
    "metric",
    "unit",
    "published",
    "local",
    "low",
    "high",
    "ratio",
    "how",
    "from",
    "flags",
    "source",
    "command",
    "runs",
    "freq_ghz",
    "by",
]


def published_figures(ident: str) -> pd.DataFrame:
    """The rows of ``published_figures.csv`` for seed ``ident``."""
    return read_published(seed=ident).reset_index(drop=True)


def batch_records(seed: Seed, out: Path) -> dict[str, dict[str, Any]]:
    """Each experiment's batch record (``iolab.report.batch.read_record``) in ``out/seed-NNN/``, by name."""
    found = {}
    for exp in seed.experiments:
        record = read_record(Path(out) / seed.slug / exp.name)
        if record is not None:
            found[exp.name] = record
    return found


def comparisons(seed: Seed, out: str | Path) -> pd.DataFrame:
    """One row per published figure of ``seed`` and metric, every row of the seed in
    ``published_figures.csv`` in its order: ``label``, ``metric``, ``unit``, ``published``,
    ``local``, ``low``, ``high`` (its interval), ``ratio`` (local ÷ published), ``flags``,
    ``how`` (where the local value comes from, or why there is none), ``command`` (the
    author's, as published) and ``runs`` (the local run folders behind the value, whose
    command ``iolab.seeds.commands`` sets beside the author's). A row of an experiment no
    manifest figure reads says so: no published figure is left off the page."""
    out = Path(out)
    records = batch_records(seed, out)
    published = published_figures(seed.ident)
    notebooks = {e.name: e.notebook for e in seed.experiments}
    experiments = {e.name: e for e in seed.experiments}
    level = run_level(seed, out)
    figures = {f["experiment"]: f for f in reversed(seed.figures)}
    rows, flagged, common = [], {}, {}
    for _, prow in published.iterrows():
        fig = figures.get(prow["experiment"])
        spec = ((fig or {}).get("labels") or {}).get(prow["label"]) or {}
        extra = spec.get("published") or {}
        metrics = [m for m in METRICS if m in prow and pd.notna(prow[m])] + [m for m in extra if m in METRICS]
        rec = records.get(fig["from"]) if fig else None
        if fig and fig.get("cell") and prow["experiment"] not in common:
            common[prow["experiment"]] = _common_levels(fig, rec)
        for metric in metrics:
            value = prow[metric] if metric in prow and pd.notna(prow[metric]) else extra[metric]
            if fig is None:
                local, low, high, how, runs = None, None, None, "no seed manifest figure reads this one", []
            else:
                declaration = declared(notebooks[fig["from"]])
                local, low, high, how, runs = _local(
                    fig,
                    spec,
                    prow,
                    metric,
                    rec,
                    declaration,
                    common.get(prow["experiment"]),
                    level,
                    experiments[fig["from"]],
                )
            ratio = local / value if finite(local) and value else None
            source = (fig or {}).get("from", "")
            flags = flagged.setdefault(source, checks.folder_flags(rec.get("run_folders") or []) if rec else [])
            n_runs = len((rec or {}).get("run_folders") or [])
            rows.append(
                {
                    "experiment": prow["experiment"],
                    "label": prow["label"],
                    "metric": metric,
                    "unit": unit(metric),
                    "published": float(value),
                    "local": local,
                    "low": low,
                    "high": high,
                    "ratio": ratio,
                    "how": how,
                    "from": source,
                    "flags": f"{len(flags)} of {n_runs} runs" if flags and finite(local) else "",
                    "source": prow["source"],
                    "command": prow.get("command") if isinstance(prow.get("command"), str) else "",
                    "runs": [str(r) for r in runs],
                    "freq_ghz": float(prow["freq_ghz"]) if finite(prow.get("freq_ghz")) else None,
                    "by": str(((fig or {}).get("metric_fields") or {}).get(metric, {}).get("tool") or "")
                    or str(((fig or {}).get("fields") or {}).get("tool") or ""),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _published_runs(table: pd.DataFrame) -> dict[str, Any]:
    """label -> its published run (the command and the values it quotes)."""
    return {
        label: (g["command"].iloc[0], tuple(sorted(zip(g["metric"], g["published"]))))
        for label, g in table.groupby("label", sort=False)
    }


def coverage(table: pd.DataFrame) -> tuple[int, int]:
    """(with a local value, all): the published figures of a comparison table, one per
    published run: two labels quoting one run (the same command and values, as seed 000's
    baseline is both its E-core QD 32 point and its ladder's first step) count once."""
    runs = _published_runs(table)
    have = {runs[label] for label in table.loc[table["local"].map(finite), "label"]} if len(table) else set()
    return len(have), len(set(runs.values()))


def same_run(table: pd.DataFrame) -> dict[str, str]:
    """label -> the first label quoting the same published run (``coverage``), for the labels
    that repeat one."""
    first: dict[Any, str] = {}
    out = {}
    for label, run in _published_runs(table).items():
        if run in first:
            out[label] = first[run]
        first.setdefault(run, label)
    return out


def plan(out: str | Path) -> dict[str, Any]:
    """``out/plan.json`` (``iolab seeds``' plan: which seeds ran at which level), empty when there is none."""
    import json

    try:
        return json.loads((Path(out) / "plan.json").read_text())
    except (OSError, ValueError):
        return {}


def run_level(seed: Seed, out: str | Path) -> str | None:
    """The level ``iolab seeds`` ran ``seed`` at into ``out`` (its plan.json), None when unknown."""
    level = (plan(out).get("seeds") or {}).get(seed.ident, {}).get("level")
    return level if isinstance(level, str) else None


def skipped(exp: Experiment, level: str | None) -> str:
    """Why ``exp`` is not run at ``level`` ("is not run at the smoke level: ..."), "" when it is."""
    return f"is not run at the {level} level: {exp.skip[level]}" if level in exp.skip else ""


def flag_texts(seed: Seed, out: str | Path) -> dict[str, str]:
    """Each experiment's plausibility checks that its runs failed, in words (none: absent)."""
    texts = {}
    for name, rec in batch_records(seed, Path(out)).items():
        folders = rec.get("run_folders") or []
        flagged = checks.folder_flags(folders)
        if flagged:
            texts[name] = checks.banner_text(flagged, len(folders))
    return texts


def finite(x: Any) -> bool:
    """Whether ``x`` is a number to show (not None, NaN, infinite or a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _local(
    fig: Mapping[str, Any],
    spec: Mapping[str, Any],
    prow: pd.Series,
    metric: str,
    rec: Mapping[str, Any] | None,
    declaration: Notebook,
    levels: Mapping[str, str] | None = None,
    level: str | None = None,
    skip: Experiment | None = None,
) -> tuple[Any, Any, Any, str, list[Path]]:
    """(value, low, high, how, runs) of one published figure here: the manifest's ``results``
    name a result of the experiment's notebook by its key (``iolab.report.contract``); its
    name's fields ("IOPS at QD {qd} ({tool})") come from the published row, the label's
    entry, the figure's ``fields`` and its ``metric_fields`` for this metric. ``runs``: the
    run folders behind the value."""
    if spec.get("reason"):
        return None, None, None, str(spec["reason"]), []
    if rec is None:
        why = (skip and skipped(skip, level)) or "has not run yet: run the same iolab seeds command"
        return None, None, None, f"experiment {fig['from']} {why}", []
    if rec.get("status") != "ok":
        first = (str(rec.get("error") or "").strip().splitlines() or ["unknown error"])[0]
        return None, None, None, f"experiment {fig['from']} failed: {first[:300]}", []
    names = {**(fig.get("results") or {}), **(spec.get("result") or {})}
    if metric in names:
        fields = {**(fig.get("fields") or {}), **((fig.get("metric_fields") or {}).get(metric) or {}), **spec}
        return _as_polled(_from_results(declaration.result(names[metric]).name, prow, fields, rec), spec)
    cells = fig.get("cell") or {}
    if metric in cells:
        return _from_search(cells[metric], spec.get("where") or {}, rec, levels)
    return None, None, None, f"the manifest names no local {WORDS[metric]} for this figure", []


def _from_results(template: str, prow: pd.Series, spec: Mapping[str, Any], rec: Mapping[str, Any]):
    fields = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in prow.items() if pd.notna(v)}
    fields |= {k: v for k, v in spec.items() if isinstance(v, str)}
    name = str(template).format(**fields)
    result = next((r for r in rec.get("results") or [] if r.get("name") == name), None)
    note = f"; {spec['note']}" if spec.get("note") else ""
    if result is None:
        said = "".join(f"; the notebook said: {line}" for line in printed(rec.get("output"), "not recorded:"))
        return None, None, None, f"not measured at these settings: the run recorded no {name!r}{note}{said}", []
    used = [f for _, f, _, _ in string.Formatter().parse(str(template)) if f]
    where = {SWEPT[f]: fields[f] for f in used if f in SWEPT and f in fields}
    at = re.search(r"\bat QD (\d+)", str(result.get("note") or ""))
    if not where and at:
        where = {"qd": at.group(1)}
    bs = re.match(r"bs (\S+?),", str(result.get("source") or ""))  # notebook 06's best block size
    cell = re.fullmatch(r"(\w+=[^,=]+)(, \w+=[^,=]+)*", str(result.get("note") or ""))  # a search's cell
    if not where and bs:
        where = {"bs": bs.group(1)}
    elif not where and cell:
        where = dict(part.split("=", 1) for part in cell.group(0).split(", "))
    runs = commands.runs_behind(rec.get("run_folders") or [], where) if where else []
    if not finite(result.get("value")):
        return None, None, None, f"{result.get('note') or 'no value recorded'}{note}", runs
    return (
        result["value"],
        result.get("low"),
        result.get("high"),
        f"{name} ({result.get('note') or result.get('source') or 'recorded'}){note}",
        runs,
    )


def _as_polled(found: tuple, spec: Mapping[str, Any]) -> tuple:
    """``found`` when its runs polled as the label's ``polled`` asks (true: the author polled;
    false: he took interrupts), else no value and the label's ``otherwise``: a figure is
    compared only with local runs of its own condition."""
    value, _, _, _, runs = found
    if spec.get("polled") is None or not runs or not finite(value):
        return found
    if any(polled_run(r) for r in runs) == bool(spec["polled"]):
        return found
    return None, None, None, str(spec.get("otherwise") or "the local runs did not poll as the author's did"), []


def _search_table(rec: Mapping[str, Any]):
    """(folder, table, left-out axes by name, varied axes) of a search experiment's runs; None
    when it recorded no search folder."""
    from ..measure import search

    folders = [Path(f) for f in rec.get("run_folders") or []]
    folder = next((f.parent for f in folders if (f.parent / "search.yaml").exists()), None)
    if folder is None:
        return None
    import yaml

    table = search.load_table(folder)
    if "bw_bytes_s" in table:  # published bandwidths are MiB/s (seed 003's, read as GiB/s x 1024)
        table = table.assign(bw_mib_s=table["bw_bytes_s"] / 2**20)
    left = {e["axis"]: e for e in search.left_out(folder)}
    varied = search.varied(
        (yaml.safe_load((folder / "search.yaml").read_text()) or {}).get("axes", {}), list(left.values())
    )
    return folder, table, left, varied


def _common_levels(fig: Mapping[str, Any], rec: Mapping[str, Any] | None) -> dict[str, str]:
    """The devices and cores at which every label of a search figure has a cell, the most of
    each: the figure's rows are read at the same scale (siblings not used has fewer cores on
    a small machine; reading it at 1 core beside 2 would show a penalty that is the cores')."""
    if not rec or rec.get("status") != "ok":
        return {}
    found = _search_table(rec)
    if found is None:
        return {}
    _, table, _, _ = found
    scale = [a for a in ("devices", "cores") if a in table]
    if not scale:
        return {}
    shared = None
    for spec in (fig.get("labels") or {}).values():
        where = {
            str(a): ("on" if v is True else "off" if v is False else str(v))
            for a, v in (spec.get("where") or {}).items()
        }
        if spec.get("reason") or any(a not in table for a in where):
            continue
        sel = table
        for a, v in where.items():
            sel = sel[sel[a].astype(str) == v]
        levels = set(map(tuple, sel[scale].astype(str).drop_duplicates().itertuples(index=False)))
        if not levels:  # no cell here: its row says why, and it does not narrow the others
            continue
        shared = levels if shared is None else shared & levels
    if not shared:
        return {}
    best = max(shared, key=lambda lv: tuple(float(x) if x.replace(".", "", 1).isdigit() else 0.0 for x in lv))
    return dict(zip(scale, best))


def _from_search(
    column: str, where: Mapping[str, Any], rec: Mapping[str, Any], levels: Mapping[str, str] | None = None
):
    """The mean of ``column`` in the search cell ``where`` selects, at ``levels`` (the devices
    and cores common to the figure's rows) else the most devices and cores where that cell
    exists, with its 95 % interval over the repeats, and its runs."""
    found = _search_table(rec)
    if found is None:
        return None, None, None, "the search recorded no runs folder", []
    folder, table, left, varied = found
    wanted = {str(a): ("on" if v is True else "off" if v is False else str(v)) for a, v in where.items()}
    for axis, value in wanted.items():
        if axis not in varied or axis not in table:
            why = left.get(axis, {}).get("why") or f"the search did not vary {axis}"
            return None, None, None, f"{axis} {value}: not varied here: {why}", []
        if value not in set(table[axis].astype(str)):
            why = left.get(axis, {}).get("why") if value in map(str, left.get(axis, {}).get("values", [])) else None
            return (
                None,
                None,
                None,
                f"{axis} {value}: " + (f"not varied here: {why}" if why else "no such cell here"),
                [],
            )
    axes = [a for a in (*wanted, "devices", "cores") if a in table]
    cells = repeat_stats.summarise(
        table.assign(**{a: table[a].astype(str) for a in axes}), list(dict.fromkeys(axes)), metrics=[column]
    )
    for axis, value in {**wanted, **(levels or {})}.items():
        if axis in cells:
            cells = cells[cells[axis].astype(str) == str(value)]
    if cells.empty:
        return None, None, None, "no cell of the search has " + ", ".join(f"{a}={v}" for a, v in wanted.items()), []
    cells = cells.sort_values([a for a in ("devices", "cores") if a in cells], ascending=False, key=_numeric)
    best = cells.iloc[0]
    where_text = ", ".join(f"{a}={best[a]}" for a in dict.fromkeys(axes))
    cell = {a: best[a] for a in dict.fromkeys(axes)}
    runs = commands.runs_behind(rec.get("run_folders") or [], cell)
    same = " (the scale every row of this figure has)" if levels else ""
    return (
        float(best[f"{column}_mean"]),
        float(best[f"{column}_ci_low"]),
        float(best[f"{column}_ci_high"]),
        f"search cell {where_text}{same}: mean of {int(best['n'])} runs, 95 % interval",
        runs,
    )


def _numeric(col: pd.Series) -> pd.Series:
    return pd.to_numeric(col, errors="coerce").fillna(0)
