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
from .manifest import Seed

METRICS = ("iops", "clat_p50_us", "clat_p99_us", "mean_lat_us", "cycles_per_io")  # units: iolab.core.columns
WORDS = {
    "iops": "IOPS",
    "clat_p50_us": "clat p50",
    "clat_p99_us": "clat p99",
    "mean_lat_us": "mean latency",
    "cycles_per_io": "cycles per IO (fio's own)",
    "qd": "queue depth",
}
OPERATING_POINT = (
    "qd"  # a figure's queue depth is compared only where the manifest names a local one (a searched depth)
)


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
    """One row per published figure of ``seed`` and metric: ``label``, ``metric``, ``unit``,
    ``published``, ``local``, ``low``, ``high`` (its interval), ``ratio`` (local ÷
    published), ``flags``, ``how`` (where the local value comes from, or why there is none)."""
    out = Path(out)
    records = batch_records(seed, out)
    published = published_figures(seed.ident)
    notebooks = {e.name: e.notebook for e in seed.experiments}
    rows, flagged = [], {}
    for fig in seed.figures:
        rec = records.get(fig["from"])
        declaration = declared(notebooks[fig["from"]])
        for _, prow in published[published["experiment"] == fig["experiment"]].iterrows():
            spec = (fig.get("labels") or {}).get(prow["label"]) or {}
            extra = spec.get("published") or {}
            metrics = [m for m in METRICS if m in prow and pd.notna(prow[m])] + [m for m in extra if m in METRICS]
            if OPERATING_POINT in (fig.get("results") or {}) and pd.notna(prow.get(OPERATING_POINT)):
                metrics.append(OPERATING_POINT)  # the author's depth beside the one searched here
            for metric in metrics:
                value = prow[metric] if metric in prow and pd.notna(prow[metric]) else extra[metric]
                local, low, high, how = _local(fig, spec, prow, metric, rec, declaration)
                ratio = local / value if finite(local) and value else None
                flags = flagged.setdefault(
                    fig["from"], checks.folder_flags(rec.get("run_folders") or []) if rec else []
                )
                n_runs = len((rec or {}).get("run_folders") or [])
                rows.append(
                    {
                        "experiment": fig["experiment"],
                        "label": prow["label"],
                        "metric": metric,
                        "unit": "" if metric == OPERATING_POINT else unit(metric),  # "QD 32", not "32 IOs"
                        "published": float(value),
                        "local": local,
                        "low": low,
                        "high": high,
                        "ratio": ratio,
                        "how": how,
                        "from": fig["from"],
                        "flags": f"{len(flags)} of {n_runs} runs" if flags else "",
                        "source": prow["source"],
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
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
        ],
    )


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
) -> tuple[Any, Any, Any, str]:
    """(value, low, high, how) of one published figure here: the manifest's ``results`` name
    a result of the experiment's notebook by its key (``iolab.report.contract``); its name's
    fields ("IOPS at QD {qd} ({tool})") come from the published row, the label's entry and
    the figure's ``fields``."""
    if spec.get("reason"):
        return None, None, None, str(spec["reason"])
    if rec is None:
        return None, None, None, f"experiment {fig['from']} has not run yet: run the same iolab seeds command"
    if rec.get("status") != "ok":
        first = (str(rec.get("error") or "").strip().splitlines() or ["unknown error"])[0]
        return None, None, None, f"experiment {fig['from']} failed: {first[:300]}"
    names = {**(fig.get("results") or {}), **(spec.get("result") or {})}
    if metric in names:
        return _from_results(declaration.result(names[metric]).name, prow, {**(fig.get("fields") or {}), **spec}, rec)
    cells = fig.get("cell") or {}
    if metric in cells:
        return _from_search(cells[metric], spec.get("where") or {}, rec)
    return None, None, None, f"the manifest names no local {WORDS[metric]} for this figure"


def _from_results(template: str, prow: pd.Series, spec: Mapping[str, Any], rec: Mapping[str, Any]):
    fields = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in prow.items() if pd.notna(v)}
    name = str(template).format(**fields, **{k: v for k, v in spec.items() if isinstance(v, str)})
    result = next((r for r in rec.get("results") or [] if r.get("name") == name), None)
    note = f"; {spec['note']}" if spec.get("note") else ""
    if result is None:
        return None, None, None, f"not measured at these settings: the run recorded no {name!r}{note}"
    if not finite(result.get("value")):
        return None, None, None, f"{result.get('note') or 'no value recorded'}{note}"
    return (
        result["value"],
        result.get("low"),
        result.get("high"),
        f"{name} ({result.get('note') or result.get('source') or 'recorded'}){note}",
    )


def _from_search(column: str, where: Mapping[str, Any], rec: Mapping[str, Any]):
    """The mean of ``column`` in the search cell ``where`` selects, at the most devices and
    cores where that cell exists, with its 95 % interval over the repeats."""
    from ..measure import search

    folders = [Path(f) for f in rec.get("run_folders") or []]
    folder = next((f.parent for f in folders if (f.parent / "search.yaml").exists()), None)
    if folder is None:
        return None, None, None, "the search recorded no runs folder"
    import yaml

    table = search.load_table(folder)
    left = {e["axis"]: e for e in search.left_out(folder)}
    varied = search.varied(
        (yaml.safe_load((folder / "search.yaml").read_text()) or {}).get("axes", {}), list(left.values())
    )
    wanted = {str(a): ("on" if v is True else "off" if v is False else str(v)) for a, v in where.items()}
    for axis, value in wanted.items():
        if axis not in varied or axis not in table:
            why = left.get(axis, {}).get("why") or f"the search did not vary {axis}"
            return None, None, None, f"{axis} {value}: not varied here: {why}"
        if value not in set(table[axis].astype(str)):
            why = left.get(axis, {}).get("why") if value in map(str, left.get(axis, {}).get("values", [])) else None
            return None, None, None, f"{axis} {value}: " + (f"not varied here: {why}" if why else "no such cell here")
    axes = [a for a in (*wanted, "devices", "cores") if a in table]
    cells = repeat_stats.summarise(
        table.assign(**{a: table[a].astype(str) for a in wanted}), list(dict.fromkeys(axes)), metrics=[column]
    )
    for axis, value in wanted.items():
        cells = cells[cells[axis] == value]
    if cells.empty:
        return None, None, None, "no cell of the search has " + ", ".join(f"{a}={v}" for a, v in wanted.items())
    cells = cells.sort_values([a for a in ("devices", "cores") if a in cells], ascending=False)
    best = cells.iloc[0]
    where_text = ", ".join(f"{a}={best[a]}" for a in dict.fromkeys(axes))
    return (
        float(best[f"{column}_mean"]),
        float(best[f"{column}_ci_low"]),
        float(best[f"{column}_ci_high"]),
        f"search cell {where_text}: mean of {int(best['n'])} runs, 95 % interval",
    )


def headline(seed: Seed, table: pd.DataFrame) -> Mapping[str, Any] | None:
    """The seed's headline comparison: the published IOPS figure the manifest's
    ``headline`` label names (else its largest published IOPS)."""
    if table.empty:
        return None
    iops = table[table["metric"] == "iops"]
    pick = iops[iops["label"] == seed.headline] if seed.headline else iops.iloc[0:0]
    pick = pick if len(pick) else iops.sort_values("published", ascending=False)
    return (pick if len(pick) else table).iloc[0].to_dict()
