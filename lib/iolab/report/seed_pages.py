"""The pages of ``iolab seeds``: each published figure of a seed beside the local one, and an
index of the seeds side by side. One offline file each: inline style, the figure an
embedded PNG, no script.

    table = comparisons(seed, out)     # one row per published figure and metric
    write_seed_page(seed, out)         # out/seed-NNN.html (the level and devices from out/plan.json)
    write_index(out)                   # out/index.html

A comparison row holds the published value (``data/reference/published_figures.csv``, cited),
the local value with its interval, their ratio (local ÷ published), the plausibility flags
of the runs behind it and, when there is no local value, the reason: the experiment failed
or has not run yet, the step was skipped here (the notebook's own reason), the machine
cannot vary what the figure varies (the search's left-out axes), or the manifest's reason.
Local values come from the results the executed notebooks recorded (``iolab.core.results``),
named in the seed manifest's ``figures``; a search's cells (seed 003) from its runs
through ``iolab.measure.search`` and ``iolab.stats.compare.summarise``.
"""

from __future__ import annotations

import base64
import io
import json
import math
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..read import checks
from ..stats import compare
from ..core import paths
from ..core.atomic import write_atomic
from .batch_index import STYLE, _esc, _link
from ..core.readable import readable_value
from .seeds import Seed, load_seed

METRICS = {"iops": "IO/s", "clat_p50_us": "µs", "clat_p99_us": "µs", "mean_lat_us": "µs", "cycles_per_io": "cycles/IO"}
WORDS = {
    "iops": "IOPS",
    "clat_p50_us": "clat p50",
    "clat_p99_us": "clat p99",
    "mean_lat_us": "mean latency",
    "cycles_per_io": "cycles per IO",
}
PAGE_STYLE = (
    STYLE
    + """
.banner{background:#fff4e5;border-left:4px solid #e8a33d;padding:.6em 1em;margin:1em 0}
td.why{color:#555;font-size:.85em;max-width:30em} .ratio{font-weight:600}
"""
)


def published_figures(ident: str) -> pd.DataFrame:
    """The rows of ``published_figures.csv`` for seed ``ident``."""
    table = pd.read_csv(paths.reference_dir() / "published_figures.csv", dtype={"seed": str})
    return table[table["seed"] == ident].reset_index(drop=True)


def _records(seed: Seed, out: Path) -> dict[str, dict[str, Any]]:
    """Each experiment's batch record (``run.json``) in ``out/seed-NNN/``, by name."""
    found = {}
    for exp in seed.experiments:
        try:
            found[exp.name] = json.loads((Path(out) / seed.slug / exp.name / "run.json").read_text())
        except (OSError, ValueError):
            continue
    return found


def comparisons(seed: Seed, out: str | Path) -> pd.DataFrame:
    """One row per published figure of ``seed`` and metric: ``label``, ``metric``, ``unit``,
    ``published``, ``local``, ``low``, ``high`` (its interval), ``ratio`` (local ÷
    published), ``flags``, ``how`` (where the local value comes from, or why there is none)."""
    out = Path(out)
    records = _records(seed, out)
    published = published_figures(seed.ident)
    rows, flagged = [], {}
    for fig in seed.figures:
        rec = records.get(fig["from"])
        for _, prow in published[published["experiment"] == fig["experiment"]].iterrows():
            spec = (fig.get("labels") or {}).get(prow["label"]) or {}
            extra = spec.get("published") or {}
            for metric in [m for m in METRICS if m in prow and pd.notna(prow[m])] + [m for m in extra if m in METRICS]:
                value = prow[metric] if metric in prow and pd.notna(prow[metric]) else extra[metric]
                local, low, high, how = _local(fig, spec, prow, metric, rec)
                ratio = local / value if _number(local) and value else None
                flags = flagged.setdefault(
                    fig["from"], checks.folder_flags(rec.get("run_folders") or []) if rec else []
                )
                n_runs = len((rec or {}).get("run_folders") or [])
                rows.append(
                    {
                        "experiment": fig["experiment"],
                        "label": prow["label"],
                        "metric": metric,
                        "unit": METRICS[metric],
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
    for name, rec in _records(seed, Path(out)).items():
        folders = rec.get("run_folders") or []
        flagged = checks.folder_flags(folders)
        if flagged:
            texts[name] = checks.banner_text(flagged, len(folders))
    return texts


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _local(
    fig: Mapping[str, Any], spec: Mapping[str, Any], prow: pd.Series, metric: str, rec: Mapping[str, Any] | None
) -> tuple[Any, Any, Any, str]:
    """(value, low, high, how) of one published figure here."""
    if spec.get("reason"):
        return None, None, None, str(spec["reason"])
    if rec is None:
        return None, None, None, f"experiment {fig['from']} has not run yet: run the same iolab seeds command"
    if rec.get("status") != "ok":
        first = (str(rec.get("error") or "").strip().splitlines() or ["unknown error"])[0]
        return None, None, None, f"experiment {fig['from']} failed: {first[:300]}"
    names = {**(fig.get("results") or {}), **(spec.get("result") or {})}
    if metric in names:
        return _from_results(names[metric], prow, spec, rec)
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
    if not _number(result.get("value")):
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
    cells = compare.summarise(
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


# ---------------------------------------------------------------- the set-ups
def local_setup(seed: Seed, out: Path) -> dict[str, Any]:
    """This machine as the seed's runs saw it (the first run folder's ``system.json``, else
    ``iolab.core.system.snapshot()``), and whether any of its jobs polled."""
    from ..core import system

    folders = [Path(f) for rec in _records(seed, out).values() for f in rec.get("run_folders") or []]
    snap = None
    for f in folders:
        try:
            snap = json.loads((f / "system.json").read_text())
            break
        except (OSError, ValueError):
            continue
    snap = snap or system.snapshot()
    polled = any(_polled(f) for f in folders)
    return {**snap, "polled": polled, "targets": _targets(folders)}


def _targets(folders: Sequence[Path]) -> list[str]:
    """What the runs read, in words, each once: the scratch file and the disk under it, loop
    devices, block devices (from each run folder's ``params.json`` and ``system.json``)."""
    found: dict[str, None] = {}
    for f in folders:
        try:
            target = str(json.loads((f / "params.json").read_text()).get("target") or "")
            device = json.loads((f / "system.json").read_text()).get("device")
        except (OSError, ValueError, AttributeError):
            continue
        kind = target.split()[0] if target else ""
        if kind == "scratch":
            found[f"a scratch file on {device or 'this machine'}'s file system"] = None
        elif kind == "loop" or (device or "").startswith("loop"):
            found["tmpfs-backed loop devices (memory, not an SSD)"] = None
        elif device:
            found[f"/dev/{device}"] = None
    return list(found)


def _polled(folder: Path) -> bool:
    try:
        job = (folder / "job.fio").read_text()
    except OSError:
        job = ""
    try:
        argv = " ".join(json.loads((folder / "argv.json").read_text()))
    except (OSError, ValueError, TypeError):
        argv = ""
    return "hipri=1" in job.replace(" ", "") or " -p 1" in argv or " -p1" in argv


def _clock(snap: Mapping[str, Any]) -> str:
    cur = [v for v in (snap.get("scaling_cur_freq_khz") or {}).values() if v]
    if cur:
        return f"{max(cur) / 1e6:.2f} GHz (cpufreq)"
    nominal = [v for v in (snap.get("cpuinfo_mhz") or {}).values() if v]
    return f"{max(nominal) / 1e3:.2f} GHz nominal (/proc/cpuinfo: no cpufreq here)" if nominal else "clock unknown"


def _device(snap: Mapping[str, Any]) -> str:
    dev = snap.get("device")
    if not dev:
        return "a scratch file on this machine's file system"
    if str(dev).startswith("loop"):
        return f"{dev}, a tmpfs-backed loop device (memory, not an SSD)"
    return str(dev)


def differences(seed: Seed, snap: Mapping[str, Any]) -> str:
    """A sentence on what differs between the published set-up and this one."""
    pub = seed.setup
    emulated = snap.get("emulated")
    here = [
        f"{snap.get('cpu_model') or 'an unknown CPU'} at {_clock(snap)}",
        " and ".join(snap.get("targets") or []) or _device(snap),
        f"kernel {snap.get('kernel')}",
        str(snap.get("fio_version") or "fio"),
        "polled" if snap.get("polled") else "interrupts (not polled)",
        f"emulated: {emulated}" if emulated else "not emulated",
    ]
    there = [
        f"{pub.get('cpu')}" + (f" at {pub['clock_ghz']} GHz" if pub.get("clock_ghz") else ""),
        str(pub.get("device")),
        f"kernel {pub.get('kernel')}",
        str(pub.get("fio")),
        "polled" if pub.get("polled") else "interrupts",
        "emulated" if pub.get("emulated") else "real hardware",
    ]
    return "Published: " + "; ".join(there) + ". Here: " + "; ".join(here) + "."


def cannot_run_here(table: pd.DataFrame, snap: Mapping[str, Any]) -> list[str]:
    """What could not be run here and why: the reasons of the figures without a local
    value (each once, with how many figures it costs) and the machine's absences."""
    lines = []
    missing = table[table["local"].isna()] if len(table) else table
    for why, group in missing.groupby("how", sort=False) if len(missing) else []:
        labels = list(dict.fromkeys(group["label"]))
        lines.append(f"{why} — {len(group)} figure{'s' if len(group) > 1 else ''}: " + "; ".join(labels))
    absent = snap.get("absent") or {}
    if "cpufreq" in absent:
        lines.append(
            f"no cpufreq: no governor or turbo axis, and cycles per IO use the nominal clock ({absent['cpufreq']})"
        )
    if "nvme" in absent:
        lines.append(
            "no NVMe: no poll queues, no passthrough (/dev/ng), no interrupt coalescing — "
            "`iolab nvmelab` runs these notebooks in a QEMU guest with emulated NVMe (an emulator's numbers)"
        )
    return lines


# ---------------------------------------------------------------- the pages
def _plot(table: pd.DataFrame, seed: Seed) -> str | None:
    """Local ÷ published for every figure with a local value (log scale, whiskers: the
    local interval ÷ the published value), as a data: URI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table[table["ratio"].notna()]
    if rows.empty:
        return None
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(rows) + 1.8))
    ys = range(len(rows))
    ratios = rows["ratio"].astype(float).to_numpy()
    ax.barh(list(ys), ratios, color=["#4c72b0" if m == "iops" else "#dd8452" for m in rows["metric"]])
    for y, (_, r) in zip(ys, rows.iterrows()):
        if _number(r["low"]) and _number(r["high"]) and r["published"]:
            lo, hi = r["low"] / r["published"], r["high"] / r["published"]
            if lo > 0:
                ax.errorbar(
                    r["ratio"],
                    y,
                    xerr=[[max(r["ratio"] - lo, 0)], [max(hi - r["ratio"], 0)]],
                    color="k",
                    capsize=3,
                    linewidth=1,
                )
        ax.annotate(f"{r['ratio']:.3g}×", (r["ratio"], y), textcoords="offset points", xytext=(4, -3), fontsize=7)
    ax.axvline(1, color="0.3", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([textwrap.shorten(f"{WORDS[r.metric]}: {r.label}", 60) for r in rows.itertuples()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("local ÷ published (×, log scale; 1 = the same)")
    ax.set_title(
        f"Seed {seed.ident}: this machine ÷ the write-up\nblue: IOPS (higher is faster); orange: latency "
        "and cycles per IO (higher is slower)",
        fontsize=10,
    )
    fig.text(
        0.01,
        0.005,
        "sources: data/reference/published_figures.csv (published); this machine's executed notebooks' "
        "recorded results (local); whiskers: the local interval",
        fontsize=6.5,
        color="0.35",
    )
    fig.subplots_adjust(left=0.34, right=0.96, top=1 - 0.75 / fig.get_figheight(), bottom=0.75 / fig.get_figheight())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _value(v: Any, unit: str) -> str:
    return f"{readable_value(v)} {unit}" if _number(v) else "–"


def _interval(r: Mapping[str, Any]) -> str:
    if not _number(r.get("local")):
        return "–"
    return (
        f"[{readable_value(r['low'])}, {readable_value(r['high'])}]"
        if _number(r.get("low")) and _number(r.get("high"))
        else compare.NOT_INFORMATIVE
    )


def _plan(out: Path) -> dict[str, Any]:
    try:
        return json.loads((out / "plan.json").read_text())
    except (OSError, ValueError):
        return {}


def _banners(seed: Seed, out: Path, snap: Mapping[str, Any]) -> list[str]:
    entry = _plan(out).get("seeds", {}).get(seed.ident, {})
    banners = []
    if snap.get("emulated"):
        banners.append(
            f"Emulated: {snap['emulated']}. The code paths are real (Linux's nvme driver, poll "
            "queues, passthrough); the numbers measure the emulator on this host, never an SSD."
        )
    if not entry.get("devices"):
        banners.append(
            "No --device: these experiments ran on iolab's scratch default — a scratch file on this "
            "machine's file system, and tmpfs-backed loop devices where a step needs a block device. "
            "They measure the CPU path of the I/O stack, not an SSD. Give --device /dev/nvme0n1 to "
            "measure one."
        )
    else:
        banners.append("Devices: " + ", ".join(entry["devices"]))
    if entry.get("level") == "smoke":
        banners.append(
            "Smoke settings (the test suite's): the smallest runs that go through every step. "
            "The numbers are not meaningful; run --quick or the full plan to read them."
        )
    elif entry.get("level") == "quick":
        banners.append(
            "Quick settings: the write-up's steps at short runtimes (--quick). Run without --quick for the full method."
        )
    return banners


def seed_page(seed: Seed, out: Path) -> str:
    """The page of one seed (links relative to ``out``)."""
    table = comparisons(seed, out)
    snap = local_setup(seed, out)
    records = _records(seed, out)
    notes = _plan(out).get("notes", {})
    flags = flag_texts(seed, out)
    have = int(table["local"].notna().sum()) if len(table) else 0
    body = [
        f"<h1>Seed {_esc(seed.ident)}: {_esc(seed.title)}</h1>",
        f"<p class='note'>{_esc(seed.author)}, {_esc(seed.date)}; the write-up: <code>shared/seeds/"
        f"{_esc(seed.write_up)}</code>. Reproduced by <code>iolab seeds --only {_esc(seed.ident)}</code> "
        f"(manifest <code>data/seeds/{_esc(seed.path.name)}</code>).</p>",
    ]
    body += [f"<div class='banner'>{_esc(b)}</div>" for b in _banners(seed, out, snap)]
    body += [
        f"<p><b>{have} of {len(table)}</b> published figures have a local value here; each of the others says why.</p>",
        "<h2>What differs between the two set-ups</h2>",
        f"<p>{_esc(differences(seed, snap))}</p>",
        "<h2>Published against local</h2>",
    ]
    cols = [
        "figure",
        "metric",
        "published",
        "local",
        "95 % interval",
        "local ÷ published",
        "plausibility flags",
        "local value from, or why there is none",
    ]
    rows = []
    for r in table.to_dict("records"):
        ratio = f"{r['ratio']:.3g}×" if _number(r["ratio"]) else "–"
        rows.append(
            "<tr data-figure='1' data-local='" + ("1" if _number(r["local"]) else "0") + "'>"
            f"<td>{_esc(r['label'])}</td><td>{_esc(WORDS[r['metric']])}</td>"
            f"<td class='num'>{_esc(_value(r['published'], r['unit']))}</td>"
            f"<td class='num'>{_esc(_value(r['local'], r['unit']))}</td>"
            f"<td class='num'>{_esc(_interval(r))}</td><td class='num ratio'>{ratio}</td>"
            + (
                f"<td class='failed' title='{_esc(flags.get(r['from'], ''))}'>⚠ {_esc(r['flags'])}</td>"
                if r["flags"]
                else "<td>none</td>"
            )
            + f"<td class='why'>{_esc(r['how'])}</td></tr>"
        )
    body.append(
        "<table><thead><tr>"
        + "".join(f"<th>{_esc(c)}</th>" for c in cols)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    for name, text in flags.items():
        body.append(f"<p class='note'><span class='failed'>⚠ {_esc(name)}:</span> {_esc(text)}</p>")
    uri = _plot(table, seed)
    body.append(
        f"<figure><img alt='seed {_esc(seed.ident)}: local ÷ published' src='{uri}'></figure>"
        if uri
        else "<p class='note'>No figure has a local value yet: nothing to draw.</p>"
    )
    body.append("<h2>Method</h2>")
    for exp in seed.experiments:
        rec = records.get(exp.name)
        status = (rec or {}).get("status", "not run yet")
        links = " ".join(
            x
            for x in (
                _link((rec or {}).get("html"), out, "write-up"),
                _link((rec or {}).get("output"), out, "executed notebook"),
            )
            if x
        )
        extra = "; ".join(notes.get(f"{seed.ident}/{exp.name}", []))
        err = (str((rec or {}).get("error") or "").splitlines() or [""])[0]
        body.append(
            f"<h3>{_esc(exp.name)} — notebook {_esc(exp.notebook.name)} "
            f"(<span class='{_esc(status)}'>{_esc(status)}</span>)</h3>"
            f"<p class='note'>Follows the write-up's {_esc(exp.section)}.</p><p>{_esc(exp.method)}</p>"
            + (f"<p class='note'>{_esc(extra)}</p>" if extra else "")
            + (f"<p class='err'>{_esc(err[:400])}</p>" if status == "failed" and err else "")
            + (f"<p>{links}</p>" if links else "")
        )
    body.append("<h2>What could not be run here, and why</h2>")
    lines = cannot_run_here(table, snap)
    body.append("<ul>" + "".join(f"<li>{_esc(x)}</li>" for x in lines) + "</ul>" if lines else "<p>Everything ran.</p>")
    body.append(
        f"<p class='note'>Published figures: <code>data/reference/published_figures.csv</code> "
        f"({_esc(published_figures(seed.ident)['source'].iloc[0]) if have or len(table) else ''}). "
        "<a href='index.html'>All seeds</a>.</p>"
    )
    return _html(f"iolab seeds: seed {seed.ident}", body)


def _html(title: str, body: Sequence[str]) -> str:
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{PAGE_STYLE}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def write_seed_page(seed: Seed, out: str | Path) -> Path:
    out = Path(out)
    page = out / f"{seed.slug}.html"
    write_atomic(page, seed_page(seed, out))
    return page


def headline(seed: Seed, table: pd.DataFrame) -> Mapping[str, Any] | None:
    """The seed's headline comparison: the published IOPS figure the manifest's
    ``headline`` label names (else its largest published IOPS)."""
    if table.empty:
        return None
    iops = table[table["metric"] == "iops"]
    pick = iops[iops["label"] == seed.headline] if seed.headline else iops.iloc[0:0]
    pick = pick if len(pick) else iops.sort_values("published", ascending=False)
    return (pick if len(pick) else table).iloc[0].to_dict()


def index_page(out: Path) -> str:
    """The index: every seed of ``out/plan.json`` with its headline comparison."""
    plan = _plan(out).get("seeds", {})
    rows = []
    for ident, entry in plan.items():
        try:
            seed = load_seed(entry["manifest"])
        except Exception as exc:  # a manifest moved or broken since: the row says so
            rows.append(f"<tr><td>{_esc(ident)}</td><td colspan='7' class='err'>{_esc(exc)}</td></tr>")
            continue
        table = comparisons(seed, out)
        top = headline(seed, table)
        have = int(table["local"].notna().sum())
        recs = _records(seed, out)
        ok = sum(r.get("status") == "ok" for r in recs.values())
        cells = [f"<td>{_link(str(out / (seed.slug + '.html')), out, seed.ident)}</td>", f"<td>{_esc(seed.title)}</td>"]
        if top:
            cells += [
                f"<td>{_esc(WORDS[top['metric']])}: {_esc(top['label'])}</td>",
                f"<td class='num'>{_esc(_value(top['published'], top['unit']))}</td>",
                f"<td class='num'>{_esc(_value(top['local'], top['unit']))}<div class='note'>{_esc(_interval(top))}</div>"
                + ("" if _number(top["local"]) else f"<div class='why'>{_esc(top['how'])}</div>")
                + "</td>",
                f"<td class='num ratio'>{(format(top['ratio'], '.3g') + '×') if _number(top['ratio']) else '–'}</td>",
            ]
        else:
            cells += ["<td colspan='4'>no published figure</td>"]
        cells += [
            f"<td class='num'>{have} of {len(table)}</td>",
            f"<td>{ok} of {len(seed.experiments)} ok; {_esc(entry.get('level', ''))}"
            + (f"; devices {_esc(', '.join(entry['devices']))}" if entry.get("devices") else "; scratch default")
            + "</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cols = [
        "seed",
        "write-up",
        "headline figure",
        "published",
        "local [95 % interval]",
        "local ÷ published",
        "figures with a local value",
        "experiments",
    ]
    body = [
        "<h1>iolab seeds: the write-ups reproduced on this machine</h1>",
        "<p>Each seed's page sets every figure its write-up published beside this machine's, with the "
        "interval, the ratio, the plausibility flags, what differs between the set-ups and what could not "
        "run here. Re-run the same <code>iolab seeds</code> command to finish what failed or is missing.</p>",
        "<table><thead><tr>"
        + "".join(f"<th>{_esc(c)}</th>" for c in cols)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>",
    ]
    return _html("iolab seeds", body)


def write_index(out: str | Path) -> Path:
    out = Path(out)
    page = out / "index.html"
    write_atomic(page, index_page(out))
    return page


__all__ = [
    "comparisons",
    "seed_page",
    "index_page",
    "write_seed_page",
    "write_index",
    "differences",
    "local_setup",
    "published_figures",
    "headline",
    "cannot_run_here",
]
