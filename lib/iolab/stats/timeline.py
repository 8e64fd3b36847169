"""Reading a run's time series (``iolab.read.series.Series``): steady state, the warm-up before it, stalls, a summary beside fio's whole-run figures, a latency heatmap, and the run's series columns.

``find_steady``: fio's own steadystate result when the job asked for it, else SNIA's rule
(``steady_state.steady_state``) over a sliding window of intervals; ``find_stalls``: intervals far
below the median, with what the samplers saw then; ``summary``: fio's whole-run figures beside
those of the logs and of the steady part."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import FioOutputError, InputError
from ..core.readable import wrapped_text
from ..read import fiojson
from ..read.fiologs import DIRECTIONS, PERCENTILES, bin_edges_ns
from ..read.series import Series, fio_report, read_meta, read_series
from .steady_state import SNIA_RANGE_PCT, SNIA_SLOPE_PCT, SNIA_WINDOW, steady_state

STALL_FRACTION = 0.5  # an interval below this share of the run's median IOPS is a stall


# ---------------------------------------------------------------- reading it
@dataclass
class Steady:
    """Where a run is in steady state: ``method`` ("fio steadystate" or "SNIA rule"),
    ``reached``, ``from_s`` (start of the steady part, seconds since fio started; the
    warm-up is ``warmup_s`` = from_s), and the figures that decided it in words."""

    method: str
    reached: bool
    from_s: float | None
    text: str

    @property
    def warmup_s(self) -> float | None:
        return self.from_s


def find_steady(
    series: Series, window: int = SNIA_WINDOW, range_pct: float = SNIA_RANGE_PCT, slope_pct: float = SNIA_SLOPE_PCT
) -> Steady:
    """fio's own steadystate result when the job asked for one (``ss=``; fio ends the job when
    it holds, so the steady part is its last ``ss_dur``); else SNIA's rule
    (``steady_state.steady_state``) on the total IOPS of each ``window`` consecutive intervals,
    the first window that holds starting the steady part."""
    if series.steadystate:
        ss = series.steadystate
        if all(s["attained"] for s in ss):
            start = max(s["runtime_s"] - s["duration_s"] for s in ss)
            return Steady(
                "fio steadystate",
                True,
                max(0.0, start),
                "; ".join(
                    f"{s['job']}: fio's steadystate {s['ss']} attained over the last "
                    f"{s['duration_s']:g} s (criterion {s['criterion']})"
                    for s in ss
                ),
            )
        return Steady(
            "fio steadystate",
            False,
            None,
            "; ".join(
                f"{s['job']}: fio's steadystate {s['ss']} "
                f"{'attained' if s['attained'] else 'NOT attained'} (criterion {s['criterion']})"
                for s in ss
            ),
        )
    tot = series.totals()
    iops = _iops_of(tot)
    unit = f"intervals of {series.log_ms / 1000:g} s"
    name = (
        f"SNIA rule over {window} {unit} (range <= {range_pct:g} %, linear-fit excursion <= "
        f"{slope_pct:g} % of the mean)"
    )
    if len(iops) < window:
        return Steady("SNIA rule", False, None, f"{name}: only {len(iops)} intervals, fewer than its window")
    last_why = ""
    for i in range(len(iops) - window + 1):
        ok, why = steady_state(iops[i : i + window], window, range_pct, slope_pct, unit=unit)
        if ok:
            start = float(tot["t_start_s"].iloc[i])
            return Steady(
                "SNIA rule", True, start, f"{name}: holds from {start:g} s ({why.replace('last', 'the')} from there)"
            )
        last_why = why
    return Steady("SNIA rule", False, None, f"{name}: no window holds (the final one: {last_why})")


def _iops_of(tot: pd.DataFrame) -> np.ndarray:
    """Total IOPS per interval: fio's IOPS log, else IOs / interval."""
    iops = tot["iops"] if tot["iops"].notna().all() else tot["ios"] / tot["interval_s"]
    return iops.to_numpy(dtype=float)


def find_stalls(series: Series, fraction: float = STALL_FRACTION) -> pd.DataFrame:
    """Stretches of intervals whose total IOPS is below ``fraction`` of the run's median:
    t_start_s, t_s (end), intervals, iops_min, pct_of_median, and the mean over the
    overlapping sampler intervals of steal, busy and iowait on the pinned CPUs, the
    machine's steal and the frequency, with the run's medians of each beside them
    (``*_run_median``) — what the samplers saw then."""
    if not 0 < fraction < 1:
        raise InputError(
            f"fraction={fraction!r}: a stall is below a share of the median IOPS, between 0 and 1 (e.g. 0.5)"
        )
    tot = series.totals()
    iops = _iops_of(tot)
    median = float(np.nanmedian(iops)) if len(iops) else math.nan
    low = iops < fraction * median
    stalls = []
    i = 0
    while i < len(iops):
        if not low[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(iops) and low[j + 1]:
            j += 1
        row = {
            "t_start_s": float(tot["t_start_s"].iloc[i]),
            "t_s": float(tot["t_s"].iloc[j]),
            "intervals": j - i + 1,
            "iops_min": float(np.nanmin(iops[i : j + 1])),
            "pct_of_median": 100 * float(np.nanmin(iops[i : j + 1])) / median,
        }
        row.update(_samplers_during(series.samplers, row["t_start_s"], row["t_s"]))
        stalls.append(row)
        i = j + 1
    cols = ["t_start_s", "t_s", "intervals", "iops_min", "pct_of_median"]
    return pd.DataFrame(stalls, columns=cols if not stalls else None)


SAMPLED = ("cpu_steal_pct", "cpu_busy_pct", "cpu_iowait_pct", "host_steal_pct", "cpu_freq_mhz")
STALL_COLUMNS = ("t_start_s", "t_s", "intervals", "iops_min", "pct_of_median", "cpu_steal_pct", "cpu_busy_pct")


def stall_table(stalls: pd.DataFrame) -> pd.DataFrame:
    """``find_stalls`` as a notebook shows it: when, how deep, and the pinned CPUs' steal and
    busy then (the run's medians and the other samplers' means stay in ``stalls``), rounded,
    so it fits the page (all of it was 923 px in a notebook 828 px wide)."""
    return stalls[[c for c in STALL_COLUMNS if c in stalls]].round(1)


def _samplers_during(samplers: pd.DataFrame, t0: float, t1: float) -> dict[str, float]:
    if samplers.empty:
        return {}
    over = samplers[(samplers["t_s"] > t0) & (samplers["t_start_s"] < t1)]
    out = {}
    for col in SAMPLED:
        if col in samplers:
            out[col] = float(over[col].mean()) if len(over) else math.nan
            out[f"{col}_run_median"] = float(samplers[col].median())
    return out


def summary(series: Series, steady: Steady | None = None) -> pd.DataFrame:
    """The run's figures per direction, three ways: fio's report (the whole run), the logs'
    covered intervals, and the logs' steady part (from ``steady.from_s``): ios, seconds,
    iops, clat_mean_us (IO-weighted) and clat p50/p99/p99.9 (pooled bins, fio's rule)."""
    rows = []
    doc = fio_report(series.run_dir)
    if doc is not None:
        fio = fiojson.tidy(doc)
        fio = fio[fio["direction"].isin(DIRECTIONS.values()) & (fio["job"] != "All clients")]
        for direction, part in fio.groupby("direction", sort=False):
            jobs = [j for j in doc.get("jobs") or doc.get("client_stats") or [] if j.get("jobname") != "All clients"]
            bins = fiojson.merge_bins(
                *[
                    b
                    for j in jobs
                    if isinstance(j.get(direction), dict)
                    for b in [fiojson.latency_bins(j[direction], "clat")]
                    if b
                ]
            )
            ios = float(part["total_ios"].sum())
            rows.append(
                {
                    "part": "fio report (whole run)",
                    "direction": direction,
                    "ios": ios,
                    "seconds": float(part["runtime_ms"].max()) / 1000.0,
                    "iops": float(part["iops"].sum()),
                    "clat_mean_us": float((part["clat_mean_us"] * part["total_ios"]).sum() / ios) if ios else math.nan,
                    **_pcts(bins),
                }
            )
    parts = [("logs (covered intervals)", None)]
    if steady is not None and steady.reached and steady.from_s is not None:
        parts.append((f"logs, steady state (from {steady.from_s:g} s, {steady.method})", steady.from_s))
    for name, t_from in parts:
        for direction in series.table["direction"].unique():
            pick = (series.table["direction"] == direction) & (
                series.table["t_s"] > (t_from if t_from is not None else -1) + 1e-9
            )
            part = series.table[pick]
            if part.empty:
                continue
            seconds = float(part["t_s"].max() - part["t_start_s"].min())
            ios = float(part["ios"].sum()) if part["ios"].notna().any() else math.nan
            w = part.dropna(subset=["clat_mean_us", "ios"])
            tot = series.totals(by_direction=True)
            tot = tot[(tot["direction"] == direction) & (tot["t_s"] > (t_from if t_from is not None else -1) + 1e-9)]
            rows.append(
                {
                    "part": name,
                    "direction": direction,
                    "ios": ios,
                    "seconds": seconds,
                    "iops": ios / seconds if ios == ios and seconds else float(tot["iops"].mean()),
                    "clat_mean_us": float((w["clat_mean_us"] * w["ios"]).sum() / w["ios"].sum())
                    if w["ios"].sum()
                    else math.nan,
                    **_pcts(series.pooled_bins(direction, t_from=t_from)),
                }
            )
    return pd.DataFrame(rows)


def _pcts(bins: Mapping[str, int] | None) -> dict[str, float]:
    got = fiojson.percentiles_from_bins(bins, PERCENTILES.values()) if bins else {}
    return {f"clat_p{name}_us": got[p] / 1000.0 if p in got else math.nan for name, p in PERCENTILES.items()}


@dataclass
class Heatmap:
    """``heatmap``'s grid: ``counts[latency bucket, interval]`` (IOs), ``t_edges`` (s) and
    ``lat_edges_us`` (µs); ``below``: IOs faster than the lowest row drawn (left out so a
    handful of outliers do not stretch the axis; said under the picture)."""

    t_edges: np.ndarray
    lat_edges_us: np.ndarray
    counts: np.ndarray
    below: int
    total: int


def heatmap(series: Series, direction: str | None = None, per_doubling: int = 4, low_pct: float = 0.01) -> Heatmap:
    """A latency heatmap of the histogram log, summed over jobs and hosts (and directions
    unless one is named). fio's bins are regrouped into ``per_doubling`` buckets per doubling
    of latency (fio's own are 64 per doubling), so the picture's rows are even on a log axis.
    The rows start at the bucket holding the run's ``low_pct`` % quantile (the IOs below it
    are counted in ``below``); every slower IO is drawn."""
    t = series.table
    pick = np.ones(len(t), dtype=bool) if direction is None else (t["direction"] == direction).to_numpy()
    if not series.bins[pick].any():
        raise InputError(
            f"{series.run_dir}: no histogram-log IOs{' for ' + direction if direction else ''} to draw "
            "(the run needs fio's write_hist_log: iolab asks for it with log_ms)"
        )
    times = np.sort(t.loc[pick, "t_s"].unique())
    col = np.searchsorted(times, t.loc[pick, "t_s"].to_numpy())
    lows = (
        np.array([bin_edges_ns(i)[0] for i in range(len(series.bin_ns))])
        if len(series.bin_ns) == 1856
        else series.bin_ns
    )
    bucket = np.floor(np.log2(np.maximum(lows, 1)) * per_doubling).astype(int)
    per_bin = series.bins[pick].sum(axis=0)
    used = np.nonzero(per_bin)[0]
    order = np.argsort(bucket[used], kind="stable")
    cum = np.cumsum(per_bin[used][order])
    lo = int(bucket[used][order][np.searchsorted(cum, low_pct / 100.0 * cum[-1])])
    hi = int(bucket[used].max())
    grid = np.zeros((hi - lo + 1, len(times)))
    for row, c in zip(series.bins[pick], col):
        nz = np.nonzero(row)[0]
        nz = nz[bucket[nz] >= lo]
        np.add.at(grid, (bucket[nz] - lo, np.full(len(nz), c)), row[nz])
    starts = t.loc[pick].groupby("t_s")["t_start_s"].min().reindex(times).to_numpy()
    t_edges = np.concatenate([[starts[0]], times])
    lat_edges_us = 2.0 ** (np.arange(lo, hi + 2) / per_doubling) / 1000.0
    return Heatmap(t_edges, lat_edges_us, grid, int(per_bin[bucket < lo].sum()), int(cum[-1]))


@wrapped_text
def reading(series: Series, steady: Steady, stalls: pd.DataFrame) -> str:
    """What the run looks like over time, in words: steady state and warm-up, stalls and
    what the samplers saw during them, how much of fio's run the series covers."""
    tot = series.totals()
    iops = _iops_of(tot)
    parts = [
        f"{len(tot)} intervals of {series.log_ms} ms; total IOPS per interval: median {np.nanmedian(iops):,.0f}, "
        f"min {np.nanmin(iops):,.0f}, max {np.nanmax(iops):,.0f} (max/min {np.nanmax(iops) / max(np.nanmin(iops), 1e-9):.1f}x)."
    ]
    if steady.reached:
        parts.append(
            f"Steady state ({steady.method}) from {steady.from_s:g} s: a warm-up of {steady.warmup_s:g} s. {steady.text}."
        )
    else:
        parts.append(f"No steady state ({steady.method}): {steady.text}.")
    if len(stalls):
        said = []
        for s in stalls.itertuples():
            seen = []
            if "cpu_steal_pct" in stalls and s.cpu_steal_pct == s.cpu_steal_pct:
                seen.append(f"steal {s.cpu_steal_pct:.0f} % (run median {s.cpu_steal_pct_run_median:.0f} %)")
            if "cpu_busy_pct" in stalls and s.cpu_busy_pct == s.cpu_busy_pct:
                seen.append(f"busy {s.cpu_busy_pct:.0f} % (median {s.cpu_busy_pct_run_median:.0f} %)")
            if "cpu_iowait_pct" in stalls and s.cpu_iowait_pct == s.cpu_iowait_pct:
                seen.append(f"iowait {s.cpu_iowait_pct:.0f} % (median {s.cpu_iowait_pct_run_median:.0f} %)")
            said.append(
                f"{s.t_start_s:g}-{s.t_s:g} s (down to {s.iops_min:,.0f} IOPS, {s.pct_of_median:.0f} % of the median"
                + (f"; the samplers saw {', '.join(seen)}" if seen else "")
                + ")"
            )
        parts.append(
            f"{len(stalls)} stall{'s' if len(stalls) > 1 else ''} below {100 * STALL_FRACTION:g} % of the median: "
            + "; ".join(said)
            + "."
        )
    else:
        parts.append(f"No stall: no interval below {100 * STALL_FRACTION:g} % of the median IOPS.")
    if not series.samplers.empty and "cpu_steal_pct" in series.samplers:
        s = series.samplers
        parts.append(
            f"Steal on the pinned CPUs: median {s['cpu_steal_pct'].median():.0f} %, max "
            f"{s['cpu_steal_pct'].max():.0f} %"
            + (f" (at {s.loc[s['cpu_steal_pct'].idxmax(), 't_s']:.1f} s)" if s["cpu_steal_pct"].max() > 0 else "")
            + "."
        )
    parts.append(series.note())
    return " ".join(parts)


def run_columns(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The per-run columns of a run with interval logs (``iolab.runs.producers``): log_ms,
    series_intervals, series_ios_covered_pct, steady_from_s (NaN: not reached), stalls, and
    series_note (why the series could not be read, '' when it could)."""
    nan = math.nan
    try:
        s = read_series(run_dir, with_samplers=False)  # the columns need only the logs
    except (InputError, FioOutputError, OSError, ValueError) as exc:
        meta = read_meta(run_dir)
        return {
            "log_ms": meta.get("log_ms", nan),
            "series_intervals": 0,
            "series_ios_covered_pct": nan,
            "steady_from_s": nan,
            "stalls": nan,
            "series_note": str(exc),
        }
    steady = find_steady(s)
    cov = s.coverage
    covered = 100 * cov["series_ios"].sum() / cov["fio_ios"].sum() if cov["fio_ios"].sum() else nan
    return {
        "log_ms": s.log_ms,
        "series_intervals": int(s.table["interval"].max()),
        "series_ios_covered_pct": float(covered),
        "steady_from_s": steady.from_s if steady.reached else nan,
        "stalls": len(find_stalls(s)),
        "series_note": "",
    }
