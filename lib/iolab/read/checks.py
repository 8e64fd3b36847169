"""Is this number physically possible? Every run checked against the device, the bus and the
instruments, each check with its name, the figures it compared and its threshold.

The field's most repeated complaint is a number that cannot be true: fio in client mode
reporting ten times what iostat saw (axboe/fio#752), benchmarks above what the hardware can
do because a cache answered (KDiskMark#148, #154, #122), random writes above the datasheet on
a fresh drive (spdk#297), telemetry that slows what it measures (PerfSpect#418). The checks:

* ``device_vs_fio`` — bytes and requests the block device completed (``/sys/block/<dev>/stat``
  before and after the run, ``blockstat.json``, summed over every device the job opens;
  merged requests counted with their IOs) against fio's, per direction. Far fewer bytes at the device than fio moved: a cache
  answered (buffered I/O, a file in the page cache). Far more: other traffic shared the
  device during the run (or readahead, for buffered reads). Below ``MIN_BYTES`` of
  difference nothing is said: a file system's own journal writes are that small.
* ``fio_disk_util`` — fio's own disk statistics (its report's ``disk_util``) against the same
  device's ``blockstat.json`` deltas, IOs per direction: the instruments agree. fio reads the
  counters every 250 ms inside the window iolab's two readings span, and its last reading
  can miss the run's tail (a run here: fio 9,642 read IOs, iolab 10,127 over 2 s), so fio's
  count may be up to ``DISK_TAIL_S`` of the run's IOs (and ``DISK_SLACK_IOS``) below iolab's,
  and no more than ``DISK_SLACK_IOS`` above. Fewer: I/O outside fio's window (its layout of
  files comes before it samples). Not checked without both, or when fio names other devices.
* ``bus_ceiling`` — bandwidth above the PCIe link's capacity (speed x width from sysfs, the
  line code taken off) or above a ceiling the user gives for the device.
* ``latency_floor`` — a mean completion latency below zero or below fio's clock resolution
  (1 ns), or below a floor the user sets for the device class.
* ``ssd_state`` — a write workload on a non-rotational block device that was not
  preconditioned (``target_state``) is fresh-out-of-box: never to be pooled with steady state.
* ``littles_law``, ``clat_le_lat``, ``rates``, ``cpu_accounting`` — the report's figures
  against each other and the CPUs sampled against the CPUs fio used (``iolab.read.plausible``).
* ``shared_cpu`` — other programs (or the hypervisor) took a share of the run's CPUs above
  the samplers' thresholds (``iolab.read.samples``): its numbers were measured beside them.

``run_checks(run_dir)`` derives them from a run folder's files (so older runs can be checked
too); ``iolab.measure.runner`` stores them as ``checks.json``; ``flags(checks)`` is the text of the
failed ones, the ``flags`` column of every table (empty when all pass). The instruments'
cost (a run with perf, the thread sampler or fine logs next to a clean run of the same cell)
is a comparison of runs, ``instrument_cost(table)``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import RunFileError
from ..core.runfiles import (
    BLOCKSTAT_JSON,
    CHECKS_JSON,
    FIO_JSON,
    PARAMS_JSON,
    PCIE_JSON,
    PERF_DATA,
    PERF_STAT_CSV,
    SAMPLES_THREADS_CSV,
    SYSTEM_JSON,
)
from .fiojson import disk_util, run_document, run_rows
from .plausible import Check, arithmetic_checks, pcie_path

FILE = CHECKS_JSON
CACHE_SHARE = 0.5  # the device moved less than this share of fio's bytes: a cache answered
OTHER_SHARE = 1.5  # more than this multiple: other traffic (or readahead)
MIN_BYTES = 4 << 20  # differences below 4 MiB are not judged (journal writes, metadata)
CLOCK_RESOLUTION_US = 0.001
DISK_TAIL_S = 0.5  # fio's disk_util may miss this much of the run's end (2 of its 250 ms samples)
DISK_SLACK_IOS = 16  # fio reads inside iolab's window: more than this above iolab's count cannot be
ROTATIONAL_EXEMPT = re.compile(r"^(loop|ram|zram|nullb|dm-)")  # not an SSD whatever rotational says


def _json(path: Path) -> dict[str, Any] | None:
    """A JSON object of the run folder, None when it is not there; RunFileError when it
    cannot be read (``iolab.core.runfiles``)."""
    return runfiles.read_json(path, optional=True)


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def device_vs_fio(fio: pd.DataFrame, blockstat: Mapping[str, Any] | None, direct: bool | None) -> list[Check]:
    """Bytes and requests at the device against fio's, per direction (module docstring)."""
    if not blockstat:
        return [
            Check(
                "device_vs_fio",
                None,
                "no block device counters (a file on a file system iolab could "
                "not map to a device, or a client/server run): not checked",
            )
        ]
    before, after = blockstat["before"], blockstat["after"]
    dev = blockstat.get("device", "the device")
    out = []
    for rw in ("read", "write"):
        rows = fio[fio["direction"] == rw]
        fio_bytes, fio_ios = float(rows["io_bytes"].sum()), float(rows["total_ios"].sum())
        d = {k: after.get(f"{rw}_{k}", 0) - before.get(f"{rw}_{k}", 0) for k in ("ios", "merges", "sectors")}
        dev_bytes = d["sectors"] * 512.0
        figures = {
            "fio_bytes": fio_bytes,
            "fio_ios": fio_ios,
            "device_bytes": dev_bytes,
            "device_ios": float(d["ios"]),
            "device_merges": float(d["merges"]),
            "device": dev,
        }
        threshold = (
            f"device bytes within {CACHE_SHARE:g}x-{OTHER_SHARE:g}x of fio's, or differing by less "
            f"than {_mib(MIN_BYTES)}"
        )
        if fio_bytes == 0 and dev_bytes < MIN_BYTES:
            continue
        ratio = dev_bytes / fio_bytes if fio_bytes else math.inf
        figures["device_over_fio"] = ratio if fio_bytes else None  # JSON has no infinity
        if abs(dev_bytes - fio_bytes) < MIN_BYTES or CACHE_SHARE <= ratio <= OTHER_SHARE:
            out.append(
                Check("device_vs_fio", True, f"{dev} moved {ratio:.2f}x fio's {rw} bytes", figures, threshold, rw)
            )
        elif ratio < CACHE_SHARE:
            out.append(
                Check(
                    "device_vs_fio",
                    False,
                    f"served by a cache: {dev} read/wrote {_mib(dev_bytes)} for fio's {_mib(fio_bytes)} of "
                    f"{rw}s ({100 * ratio:.0f} %); these figures are the page cache's, not the device's "
                    "(use direct=1, or drop caches and make the file larger than memory)",
                    figures,
                    threshold,
                    rw,
                )
            )
        else:
            why = (
                "other traffic on the device during the run, or readahead (buffered I/O)"
                if direct is False and rw == "read"
                else "other traffic shared the device during the run"
            )
            than = f"{ratio:.1f}x fio's {_mib(fio_bytes)}" if fio_bytes else f"while fio did no {rw}s"
            out.append(
                Check(
                    "device_vs_fio",
                    False,
                    f"{dev} moved {_mib(dev_bytes)} of {rw}s, {than}: {why}; measure on an idle device",
                    figures,
                    threshold,
                    rw,
                )
            )
    return out


def fio_disk_util(
    fio: pd.DataFrame, disks: Mapping[str, Mapping[str, float]], blockstat: Mapping[str, Any] | None
) -> list[Check]:
    """fio's disk_util IOs (``iolab.read.fiojson.disk_util``) against iolab's block counters
    of the same device, per direction (module docstring). The run's rate is iolab's IOs,
    reads and writes, over fio's longest runtime (else blockstat.json's ``interval_s``), so a
    direction with a few IOs (a journal's writes) is not judged by its own trickle."""
    if not disks or not blockstat:
        return []  # fio wrote no disk stats, or iolab read no counters: device_vs_fio says which
    dev = blockstat.get("device")
    names = list(blockstat.get("devices") or [dev])  # a multi-device job: every device it opened
    if len(names) > 1 and all(n in disks for n in names):
        disks = {dev: {k: sum(disks[n][k] for n in names) for k in disks[names[0]]}}
    if dev not in disks:
        return [
            Check(
                "fio_disk_util",
                None,
                f"fio's disk_util names {', '.join(disks)}, iolab counted {dev}: not compared",
                {"device": dev, "fio_devices": list(disks)},
            )
        ]
    before, after = blockstat["before"], blockstat["after"]
    runtime_ms = float(fio["runtime_ms"].max()) if "runtime_ms" in fio and len(fio) else math.nan
    seconds = runtime_ms / 1000 if runtime_ms > 0 else blockstat.get("interval_s")
    counted = {rw: float(after.get(f"{rw}_ios", 0) - before.get(f"{rw}_ios", 0)) for rw in ("read", "write")}
    tail = sum(counted.values()) / seconds * DISK_TAIL_S if seconds else sum(counted.values())
    out = []
    for rw, ours in counted.items():
        theirs = disks[dev][f"{rw}_ios"]
        if math.isnan(theirs) or theirs == 0 and ours == 0:
            continue
        figures = {"fio_disk_ios": theirs, "device_ios": ours, "tail_ios": tail, "device": dev}
        threshold = (
            f"iolab's IOs - {DISK_TAIL_S:g} s of the run's IOs ({tail:,.0f}) - {DISK_SLACK_IOS} <= fio's <= "
            f"iolab's + {DISK_SLACK_IOS}"
        )
        said = f"fio's disk_util counted {theirs:,.0f} {rw} IOs on {dev}, iolab's counters {ours:,.0f}"
        if theirs > ours + DISK_SLACK_IOS:
            words = (
                f"{said}: more than iolab saw over a window that holds fio's; the two did not read the "
                "same counters (a device detached and re-attached during the run?): trust neither count"
            )
        elif theirs < ours - tail - DISK_SLACK_IOS:
            words = (
                f"{said}: {ours - theirs:,.0f} fewer, more than the run's last {DISK_TAIL_S:g} s holds: other "
                "I/O reached the device outside fio's sampling window (fio laying out its files before it "
                "samples, another process), or fio's sampling stopped early; fio's util and in_queue "
                "describe less than the run"
            )
        else:
            out.append(Check("fio_disk_util", True, said, figures, threshold, rw))
            continue
        out.append(Check("fio_disk_util", False, words, figures, threshold, rw))
    return out


def link_gts(text: Any) -> float | None:
    """A link speed as sysfs writes it ("16.0 GT/s PCIe"), in GT/s; None for none."""
    m = re.match(r"\s*([\d.]+)\s*GT/s", str(text or ""))
    return float(m.group(1)) if m else None


def link_lanes(text: Any) -> int | None:
    """Lanes, None for none or 255 (PCIE_LNK_WIDTH_UNKNOWN, include/linux/pci.h)."""
    width = int(text) if str(text or "").strip().isdigit() else None
    return width if width and width != 255 else None


def link_capacity_bytes_s(pci: Mapping[str, Any] | None) -> float | None:
    """A PCIe link's data rate, bytes/s: GT/s x lanes x line code (8b/10b to 5 GT/s,
    128b/130b from 8 GT/s) / 8; None without a link in sysfs."""
    gts, width = link_gts((pci or {}).get("link_speed")), link_lanes((pci or {}).get("link_width"))
    if not gts or not width:
        return None
    code = 0.8 if gts < 8 else 128 / 130
    return gts * 1e9 * width * code / 8


def bus_ceiling(fio: pd.DataFrame, snapshot: Mapping[str, Any] | None, ceiling_bytes_s: float | None) -> list[Check]:
    link = link_capacity_bytes_s((snapshot or {}).get("pci"))
    limits = [
        (v, src)
        for v, src in (
            (link, "the PCIe link (sysfs speed x width)"),
            (ceiling_bytes_s, "the ceiling given for the device"),
        )
        if v
    ]
    if not limits:
        return [Check("bus_ceiling", None, "no PCIe link in sysfs and no ceiling given: not checked")]
    limit, source = min(limits)
    bw = float(fio.loc[fio["direction"] != "none", "bw_bytes_s"].sum())
    figures = {"bw_bytes_s": bw, "ceiling_bytes_s": limit, "ceiling_source": source}
    ok = bw <= limit
    words = (
        f"{_rate(bw)} within {source} ({_rate(limit)})"
        if ok
        else f"{_rate(bw)} is above {source}, {_rate(limit)}: impossible for the device; "
        "a cache or a wrong device answered"
    )
    return [Check("bus_ceiling", ok, words, figures, f"bandwidth <= {_rate(limit)}")]


def _rate(bytes_s: float) -> str:
    return f"{bytes_s / 1e9:,.2f} GB/s" if bytes_s >= 1e9 else f"{bytes_s / 1e6:,.1f} MB/s"


def latency_floor(fio: pd.DataFrame, floor_us: float | None) -> list[Check]:
    floor = max(CLOCK_RESOLUTION_US, floor_us or 0.0)
    out = []
    for _, row in fio[fio["direction"] != "none"].iterrows():
        mean = row.get("clat_mean_us", math.nan)
        if mean is None or math.isnan(mean):
            continue
        ok = mean >= floor
        words = (
            f"mean clat {mean:,.3f} µs >= {floor:g} µs"
            if ok
            else f"mean completion latency {mean:,.3f} µs is below {floor:g} µs"
            f" ({'the floor given for the device class' if floor_us else 'fio clock resolution'}): "
            "not a device's latency"
        )
        out.append(
            Check(
                "latency_floor",
                ok,
                words,
                {"clat_mean_us": mean, "floor_us": floor},
                f"clat mean >= {floor:g} µs",
                row["direction"],
            )
        )
    return out


def ssd_state(fio: pd.DataFrame, snapshot: Mapping[str, Any] | None) -> list[Check]:
    snap = snapshot or {}
    device = snap.get("device") or ""
    rotational = str((snap.get("queue") or {}).get("rotational", ""))
    writes = float(fio.loc[fio["direction"] == "write", "io_bytes"].sum())
    if not device or rotational != "0" or ROTATIONAL_EXEMPT.match(device) or writes == 0:
        return []
    state = str(snap.get("target_state") or "not preconditioned")
    ok = "steady" in state or "precondition" in state and not state.startswith("not")
    words = (
        f"writes on {device} after: {state}"
        if ok
        else f"fresh-out-of-box: writes on SSD {device} that was {state}; its write figures are not steady "
        "state (studies.precondition brings it there); never pool them with steady-state runs"
    )
    return [Check("ssd_state", ok, words, {"device": device, "target_state": state}, "preconditioned to steady state")]


def shared_cpu(run_dir: Path) -> list[Check]:
    """``shared_cpu``: other programs took more than ``samples.OTHER_FLAG_PCT`` of the pinned
    CPUs' time (``other_cpu_pct``: their process time beyond the tool's threads and its devices'
    kernel workers), or the hypervisor stole more than ``samples.STEAL_FLAG_PCT``. Such a run's
    IOPS and latencies were measured beside them and its core-busy cycles per IO counts their
    work (fio's own ``cycles_per_io`` does not). Not checked without the samplers' files."""
    from . import samples

    if not (run_dir / samples.STAT_FILE).exists():
        return []
    with runfiles.guard(run_dir / samples.STAT_FILE):
        found = samples.run_columns(run_dir)
    other, steal = found.get("other_cpu_pct", math.nan), found.get("cpu_steal_pct", math.nan)
    if math.isnan(other) and math.isnan(steal):
        return [Check("shared_cpu", None, "no figure of the CPU's other load: not checked")]
    figures = {"other_cpu_pct": other, "cpu_steal_pct": steal, "own_cpu_pct": found.get("own_cpu_pct", math.nan)}
    threshold = (
        f"other programs <= {samples.OTHER_FLAG_PCT:g} % and steal <= {samples.STEAL_FLAG_PCT:g} % of the CPUs' time"
    )
    said = []
    if other > samples.OTHER_FLAG_PCT:
        said.append(f"{other:.0f} % other programs")
    if steal > samples.STEAL_FLAG_PCT:
        said.append(f"{steal:.0f} % hypervisor steal")
    if not said:
        shown = f"{other:.0f} %" if other == other else "not measured"
        return [Check("shared_cpu", True, f"other programs on the run's CPUs: {shown}", figures, threshold)]
    words = (
        f"shared CPU: {' and '.join(said)} on the run's CPUs; its IOPS and latency were measured beside them "
        "and its core-busy cycles per IO counts their work (fio's own does not): measure on an idle CPU"
    )
    return [Check("shared_cpu", False, words, figures, threshold)]


def run_checks(
    run_dir: str | Path, *, ceiling_bytes_s: float | None = None, latency_floor_us: float | None = None
) -> list[Check]:
    """Every check of one run folder, derived from its files (module docstring)."""
    run_dir = Path(run_dir)
    fio = run_rows(run_dir)
    with runfiles.guard(run_dir / PARAMS_JSON):  # a file of the right type, the wrong content: named
        params = _json(run_dir / PARAMS_JSON)
        options = (params or {}).get("fio_options", {})
    direct = None if options.get("direct") is None else str(options["direct"]) not in ("0", "false", "False")
    snapshot = _json(run_dir / SYSTEM_JSON)
    with runfiles.guard(run_dir / BLOCKSTAT_JSON):
        blockstat = _json(run_dir / BLOCKSTAT_JSON)
    if options.get("ioengine") == "io_uring_cmd":
        # NVMe passthrough commands bypass the block layer's accounting: /sys/block/<dev>/stat
        # stays still however much fio reads (seen in the NVMe lab: "0 MiB for fio's 22 MiB")
        device = [
            Check(
                "device_vs_fio",
                None,
                "NVMe passthrough (io_uring_cmd): the block device's counters do not count it: not checked",
            )
        ]
    else:
        with runfiles.guard(run_dir / BLOCKSTAT_JSON):
            device = device_vs_fio(fio, blockstat, direct)
    data = run_document(run_dir / FIO_JSON).data
    with runfiles.guard(run_dir / BLOCKSTAT_JSON):
        disk = fio_disk_util(fio, disk_util(data), blockstat)
    with runfiles.guard(run_dir / SYSTEM_JSON):
        bus, ssd = bus_ceiling(fio, snapshot, ceiling_bytes_s), ssd_state(fio, snapshot)
    with runfiles.guard(run_dir / PARAMS_JSON):
        arithmetic = arithmetic_checks(fio, data, params)
    with runfiles.guard(run_dir / PCIE_JSON):
        pcie = pcie_path(_json(run_dir / PCIE_JSON))
    return [*device, *disk, *bus, *latency_floor(fio, latency_floor_us), *ssd, *arithmetic, *pcie, *shared_cpu(run_dir)]


def flags(checks: list[Check] | list[dict]) -> str:
    """The words of the failed checks, "name: words" joined by " | "; "" when all pass."""
    items = [c if isinstance(c, Check) else Check(**c) for c in checks]
    return " | ".join(f"{c.name}: {c.words}" for c in items if c.passed is False)


def stored_checks(run_dir: str | Path) -> list[dict[str, Any]]:
    """The checks stored with a run (``checks.json``); RunFileError when it cannot be read or
    its ``checks`` is not a list of checks."""
    path = os.path.join(run_dir, FILE)
    found = runfiles.read_json(path, keys=("checks",))["checks"]
    if not isinstance(found, list) or not all(isinstance(c, dict) and "name" in c and "passed" in c for c in found):
        raise RunFileError(
            Path(path),
            "has 'checks' that is not a list of checks (objects with 'name' and 'passed')",
            runfiles.TODO[FILE],
        )
    return found


def instruments(run_dir: str | Path) -> str:
    """What measured the run besides fio and the 0.5 s samplers, from its files: perf record,
    perf stat, the thread-state sampler, fio's interval logs ("" for a clean run)."""
    run_dir = Path(run_dir)
    try:
        names = set(os.listdir(run_dir))  # once, not a lookup per file and a listing per pattern
    except OSError:  # a folder it may not list: look each file up (no pattern matches, as with glob)
        names = None
    found = [
        name
        for name, file in (
            ("perf record", PERF_DATA),
            ("perf stat", PERF_STAT_CSV),
            ("thread sampler", SAMPLES_THREADS_CSV),
        )
        if (names is None or file in names) and (run_dir / file).exists()
    ]
    if any(fnmatchcase(n, "*_iops*.log") or fnmatchcase(n, "*_clat_hist*.log") for n in names or ()):
        found.append("fio interval logs")
    return ", ".join(found)


def flag_columns(run_dir: str | Path) -> dict[str, str]:
    """The ``flags`` and ``instruments`` columns of a run (a producer's reader: ``iolab.runs.producers``)."""
    return {"flags": flags(stored_checks(run_dir)), "instruments": instruments(run_dir)}


def instrument_cost(
    table: pd.DataFrame, by: tuple[str, ...] | list[str] = ("direction",), metric: str = "iops"
) -> pd.DataFrame:
    """``table`` with ``instrument_cost_pct`` on every instrumented run: how far its
    ``metric`` lies below the mean of the clean runs of the same cell (the columns ``by``),
    and that figure added to its ``flags`` — never the two mixed silently. An instrumented
    run with no clean run in its cell is flagged as such."""
    out = table.copy()
    if "instruments" not in out:
        return out
    out["flags"] = out["flags"].fillna("") if "flags" in out else ""
    out["instrument_cost_pct"] = math.nan
    keys = [c for c in by if c in out]
    for _, cell in out.groupby(keys, dropna=False) if keys else [((), out)]:
        used = cell["instruments"].fillna("") != ""
        clean = cell.loc[~used, metric]
        for i in cell.index[used]:
            what = out.at[i, "instruments"]
            if clean.empty:
                words = (
                    f"instrument_cost: measured with {what} and no clean run of this cell to compare with; "
                    "its figures carry the instruments' cost"
                )
            else:
                cost = 100 * (1 - out.at[i, metric] / clean.mean())
                out.at[i, "instrument_cost_pct"] = cost
                words = (
                    f"instrument_cost: measured with {what}: {metric} {cost:+.1f} % below the mean of "
                    f"{len(clean)} clean run(s) of this cell"
                )
            out.at[i, "flags"] = " | ".join(f for f in (out.at[i, "flags"], words) if f)
    return out


def folder_flags(run_folders) -> list[tuple[str, str]]:
    """(run folder, its flags) of each folder whose stored checks failed one: what reports
    put in a banner. Folders without ``checks.json`` (older runs) are not judged here."""
    out = []
    for folder in run_folders:
        path = Path(folder) / FILE
        if path.exists():
            try:
                text = flags(stored_checks(folder))
            except RunFileError as exc:  # a banner says so rather than hiding the run
                text = f"checks: {exc.path.name} {exc.what}"
            if text:
                out.append((str(folder), text))
    return out


def banner_summary(flagged: list[tuple[str, str]], total: int) -> str:
    """One line for the top of a report: how many runs failed which checks (their names, each
    once) and what that means for the figures; ``banner_text`` holds the details."""
    names = list(
        dict.fromkeys(w.split(":")[0].strip().replace("_", " ") for _, text in flagged for w in text.split(" | "))
    )
    return (
        f"{len(flagged)} of {total} runs behind these figures failed a plausibility check "
        f"({', '.join(names[:4])}{', …' if len(names) > 4 else ''}): the figures include them; read them as less "
        "certain, or re-run those settings"
    )


def banner_text(flagged: list[tuple[str, str]], total: int) -> str:
    """One paragraph for a report: how many runs failed a check and the words of each check."""
    words = list(dict.fromkeys(w.strip() for _, text in flagged for w in text.split(" | ")))
    shown = "; ".join(words[:6]) + (f"; and {len(words) - 6} more" if len(words) > 6 else "")
    return (
        f"{len(flagged)} of {total} runs behind these figures failed a plausibility check "
        f"(iolab check RUN_DIR shows them): {shown}"
    )
