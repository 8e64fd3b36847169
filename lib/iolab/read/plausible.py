"""Checks that catch arithmetic: figures of one fio report that cannot all be true together.

Each is a ``Check`` (defined here, the record of every run check: ``iolab.read.checks``
adds these to the run's others), judged per (job, direction) row of the report:

* ``littles_law`` — IOs in flight, IOPS x mean latency (Little's law, L = λW; ``lat``, the
  time from fio's issue to completion, and ``clat``), against the IOs the job may hold:
  ``iodepth``, times ``numjobs`` and every job of the reporting group when fio's
  ``group_reporting`` sums them. More in flight than that (by ``LITTLE_OVER``) is
  impossible: the IOPS or the latency is wrong. A run whose queue was full (fio's
  ``iodepth_level``: ``SATURATED_SHARE`` of its IOs submitted at its depth, a power of two
  >= 2) with less than ``LITTLE_UNDER`` of it in flight is as wrong the other way.
  fio 3.33's io_uring with ``sqthread_poll=1`` can report a mean clat far above its own lat
  (tests/fixtures/fio/jsonplus_sqthread_poll.json): Little's law then holds with lat only.
* ``clat_le_lat`` — each IO's lat is its submission latency plus its clat, so the mean clat
  and each clat percentile must not exceed lat's (percentiles from json+ bins: within
  ``BIN_SLACK``).
* ``rates`` — IOPS against total IOs / runtime, bandwidth against bytes / runtime, and
  bandwidth against IOPS x the block size when the job has one block size per direction;
  within ``RATE_SLACK`` (fio computes all of them from the same counts).
* ``cpu_accounting`` — every CPU fio's work may run on (its jobs' ``cpus_allowed`` /
  ``cpumask``, io_uring's SQ poll thread's ``sqthread_poll_cpu``) is one iolab sampled (the
  run's ``cpus``; none: every CPU was sampled). An SQ poll thread without its CPU named is
  placed by the kernel: not proven counted.

Besides the report, ``pcie_path`` judges the run's ``pcie.json`` (the PCI paths of the devices
it opened, before and after it): ``pcie_aer``, an AER counter that rose during the run (seed 000 moved its drive
for correctable errors in the kernel log), and ``pcie_link``, a link that retrained.

Options come from fio's report (``global options`` and each job's ``job options``, as given)
and, for the jobs a reporting group sums, from the run's ``params.json``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ..core.errors import IolabError
from ..core.system import parse_cpu_list
from ..core.validate import parse_size
from .fiojson import PERCENTILES

LITTLE_OVER = 1.25  # in flight may exceed the depth by 25 % (+ half an IO): edges of a short run
LITTLE_UNDER = 0.5  # a full queue holds at least half its depth in flight
SATURATED_SHARE = 99.0  # % of IOs submitted at the job's depth (fio iodepth_level): a full queue
BIN_SLACK = 1.05  # json+ bins are ~1/64 wide: percentiles compared within 5 %
ALL_CLIENTS = "All clients"  # fio's client/server sum over the hosts, beside each host's rows
RATE_SLACK = 0.02  # fio's rates from its own counts agree to 2 % (rounding of runtime, ms)


@dataclass
class Check:
    """One check of one run (and direction): ``passed`` None when it could not be made."""

    name: str
    passed: bool | None
    words: str
    figures: dict[str, Any] = field(default_factory=dict)
    threshold: str = ""
    direction: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _on(value: Any) -> bool:
    """fio's reading of a bool/number option: given without a value, or non-zero."""
    if value is None or value is True:
        return True
    text = str(value).strip()
    try:
        return float(text) != 0
    except ValueError:
        return text.lower() not in ("", "false", "off")


def _int(value: Any, default: int = 1) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


def fio_cpus(options: Mapping[str, Any]) -> set[int] | None:
    """The CPUs a job's ``cpus_allowed`` (cpulist) and ``cpumask`` (a number, bit N = CPU N)
    may put it on (both given: either's), None when neither is given; ValueError when one
    cannot be read."""
    found: set[int] | None = None
    if options.get("cpus_allowed") not in (None, ""):
        found = set(parse_cpu_list(str(options["cpus_allowed"]).replace(" ", "")))
    if options.get("cpumask") not in (None, ""):
        mask = int(str(options["cpumask"]).strip(), 0)
        bits = {i for i in range(mask.bit_length()) if mask >> i & 1}
        found = bits if found is None else found | bits
    return found


def sq_thread(options: Mapping[str, Any]) -> tuple[bool, int | None]:
    """(the job polls with an io_uring SQ thread, its ``sqthread_poll_cpu`` or None)."""
    polls = "sqthread_poll" in options and _on(options["sqthread_poll"])
    cpu = options.get("sqthread_poll_cpu")
    return polls, (_int(cpu, -1) if polls and cpu not in (None, "") else None)


def _report_jobs(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(data.get("jobs") or data.get("client_stats") or [])


def job_opts(data: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The options of job ``index`` of fio's report: its global options, then its own."""
    jobs = _report_jobs(data)
    own = jobs[index].get("job options") if 0 <= index < len(jobs) else None
    return {**(data.get("global options") or {}), **(own or {})}


def sections(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The job sections iolab ran, from params.json: one per ``jobs`` entry over
    ``fio_options`` (an entry with its own ``name`` in a reporting group of its own:
    ``iolab.measure.runner.job_sections``), else ``fio_options`` alone."""
    base = dict(params.get("fio_options") or {})
    jobs = [dict(j) for j in params.get("jobs") or []]
    return [{**base, **j, **({"new_group": True} if j.get("name") else {})} for j in jobs] or [base]


def _group_depths(params_sections: Sequence[Mapping[str, Any]]) -> list[int]:
    """IOs each reporting group may hold: iodepth x numjobs summed over its sections; a
    section with ``new_group`` or ``stonewall`` starts the next group (as fio numbers them)."""
    depths: list[int] = []
    for i, s in enumerate(params_sections):
        if not depths or i and any(k in s and _on(s[k]) for k in ("new_group", "stonewall", "wait_for_previous")):
            depths.append(0)
        depths[-1] += _int(s.get("iodepth")) * _int(s.get("numjobs"))
    return depths


def depth_of(data: Mapping[str, Any], index: int, params: Mapping[str, Any] | None) -> int:
    """The IOs job ``index`` of the report may hold at once (module docstring)."""
    o = job_opts(data, index)
    depth = _int(o.get("iodepth"))
    jobs = _report_jobs(data)
    alone = sum(j.get("jobname") == jobs[index].get("jobname") for j in jobs) == 1
    grouped = _on(o.get("group_reporting", "0")) or alone and _int(o.get("numjobs")) > 1  # --group_reporting
    if not grouped:
        return depth
    if params and params.get("fio_options"):
        groups = _group_depths(sections(params))
        gid = _int(_report_jobs(data)[index].get("groupid", 0), 0)
        if 0 <= gid < len(groups):
            return max(groups[gid], depth)
    return depth * _int(o.get("numjobs"))


def _finite(*values: float) -> bool:
    return all(v is not None and not pd.isna(v) for v in values)


def littles_law(fio: pd.DataFrame, data: Mapping[str, Any], params: Mapping[str, Any] | None) -> list[Any]:
    """In flight against the depth, per job (its directions summed: they share its queue)."""
    out = []
    io = fio[fio["direction"] != "none"]
    for index, rows in io.groupby("job_index", sort=True):
        index = int(index)
        if rows["job"].iloc[0] == ALL_CLIENTS:
            continue  # fio's sum of the hosts' figures: each host's own row is judged
        depth = depth_of(data, index, params)
        by = {kind: (rows["iops"] * rows[f"{kind}_mean_us"] / 1e6).sum(min_count=1) for kind in ("lat", "clat")}
        known = {k: float(v) for k, v in by.items() if _finite(v)}
        if not known:
            continue
        kind = "lat" if "lat" in known else "clat"
        worst = max(known, key=known.get)
        figures = {"depth": depth, **{f"in_flight_{k}": v for k, v in known.items()}}
        job = str(rows["job"].iloc[0])
        ceiling = depth * LITTLE_OVER + 0.5
        said = ", ".join(f"IOPS x mean {k} = {v:,.2f}" for k, v in known.items())
        threshold = f"in flight <= {LITTLE_OVER:g} x depth + 0.5; a full queue >= {LITTLE_UNDER:g} x depth"
        if known[worst] > ceiling:
            words = (
                f"job {job}: {said} IOs in flight, more than its depth {depth} allows: the IOPS or the "
                f"mean {worst} is wrong (fio's own arithmetic does not hold)"
            )
            out.append(Check("littles_law", False, words, figures, threshold, _dir(rows)))
            continue
        full = _saturated(_report_jobs(data)[index] if index < len(_report_jobs(data)) else {}, depth)
        if full and known[kind] < depth * LITTLE_UNDER:
            words = (
                f"job {job}: fio's iodepth_level says its queue of {depth} stayed full, yet IOPS x mean {kind} "
                f"= {known[kind]:,.2f} IOs in flight: the IOPS or the latency is wrong"
            )
            out.append(Check("littles_law", False, words, figures, threshold, _dir(rows)))
            continue
        words = f"job {job}: {said} IOs in flight, depth {depth}"
        out.append(Check("littles_law", True, words, figures, threshold, _dir(rows)))
    return out


def _dir(rows: pd.DataFrame) -> str:
    return "/".join(rows["direction"].astype(str))


def _saturated(job: Mapping[str, Any], depth: int) -> bool:
    """fio's iodepth_level puts ``SATURATED_SHARE`` of the job's IOs at ``depth`` (a power of
    two >= 2: fio's buckets are 1, 2, 4, ... 32, >=64, so only then is the bucket the depth)."""
    if depth < 2 or depth & (depth - 1) or depth > 64:
        return False
    levels = job.get("iodepth_level") or {}
    share = levels.get(">=64" if depth == 64 else str(depth))
    try:
        return float(share) >= SATURATED_SHARE
    except (TypeError, ValueError):
        return False


def clat_le_lat(fio: pd.DataFrame) -> list[Any]:
    """Mean clat and each clat percentile at most lat's, per row."""
    out = []
    for _, row in fio[fio["direction"] != "none"].iterrows():
        pairs = [("mean", row.get("clat_mean_us"), row.get("lat_mean_us"), 1.001)]
        pairs += [
            (f"p{name}", row.get(f"clat_p{name}_us"), row.get(f"lat_p{name}_us"), BIN_SLACK) for name in PERCENTILES
        ]
        pairs = [(n, c, t, slack) for n, c, t, slack in pairs if _finite(c, t)]
        if not pairs:
            continue
        bad = [(n, c, t) for n, c, t, slack in pairs if c > t * slack + 0.01]
        figures = {f"clat_{n}_us": c for n, c, _, _ in pairs} | {f"lat_{n}_us": t for n, _, t, _ in pairs}
        threshold = f"clat <= lat (mean: 0.1 %, percentiles: {BIN_SLACK - 1:.0%} for json+ bins)"
        if bad:
            shown = ", ".join(f"{n} clat {c:,.1f} µs > lat {t:,.1f} µs" for n, c, t in bad[:3])
            words = (
                f"job {row['job']}: {shown}: an IO's clat is part of its lat, so fio's clock or its report is "
                "wrong here (fio 3.33 io_uring with sqthread_poll does this): trust neither clat nor Little's law "
                "from clat"
            )
            out.append(Check("clat_le_lat", False, words, figures, threshold, row["direction"]))
        else:
            out.append(
                Check("clat_le_lat", True, f"job {row['job']}: clat <= lat", figures, threshold, row["direction"])
            )
    return out


def _bs(options: Mapping[str, Any], direction: str) -> int | None:
    """The job's one block size for ``direction`` (bs=4k or bs=4k,64k,... per read,write,trim),
    None for ranges, splits or what cannot be read."""
    if any(options.get(k) for k in ("bsrange", "bssplit", "blocksize_range", "blocksize_unaligned", "bs_unaligned")):
        return None
    text = str(options.get("bs", options.get("blocksize", "4k")))
    parts = [p.strip() for p in text.split(",")]
    at = {"read": 0, "write": 1, "trim": 2}.get(direction)
    if at is None or any(c in text for c in "-:/"):
        return None
    part = parts[at] if at < len(parts) and parts[at] else parts[0] if len(parts) == 1 else None
    try:
        return parse_size(part) if part else None
    except (IolabError, ValueError):
        return None


def rates(fio: pd.DataFrame, data: Mapping[str, Any]) -> list[Any]:
    """IOPS, bandwidth and block size against fio's own counts and runtime, per row."""
    out = []
    for _, row in fio[fio["direction"] != "none"].iterrows():
        seconds = float(row.get("runtime_ms") or 0) / 1000
        if not seconds > 0:
            continue
        iops, bw = float(row["iops"]), float(row["bw_bytes_s"])
        want = {"iops": row["total_ios"] / seconds, "bw_bytes_s": row["io_bytes"] / seconds}
        have = {"iops": iops, "bw_bytes_s": bw}
        bs = _bs(job_opts(data, int(row["job_index"])), row["direction"])
        if bs:
            want["bw_bytes_s (IOPS x bs)"] = iops * bs
            have["bw_bytes_s (IOPS x bs)"] = bw
        off = [k for k in want if not _close(have[k], want[k])]
        figures = {"iops": iops, "bw_bytes_s": bw, "total_ios": float(row["total_ios"]), "runtime_s": seconds}
        figures |= {"io_bytes": float(row["io_bytes"]), "bs": bs}
        threshold = f"within {RATE_SLACK:.0%} (+1) of what fio's counts give"
        if off:
            said = "; ".join(f"{k} {have[k]:,.6g} where its counts give {want[k]:,.6g}" for k in off)
            words = (
                f"job {row['job']}: {said} ({row['total_ios']:,} IOs, {row['io_bytes']:,} bytes in "
                f"{seconds:,.3f} s): the report's figures disagree with each other (edited, or not fio's)"
            )
            out.append(Check("rates", False, words, figures, threshold, row["direction"]))
        else:
            words = f"job {row['job']}: IOPS and bandwidth agree with {row['total_ios']:,} IOs in {seconds:,.3f} s"
            out.append(Check("rates", True, words, figures, threshold, row["direction"]))
    return out


def _close(have: float, want: float) -> bool:
    return math.isfinite(have) and abs(have - want) <= RATE_SLACK * abs(want) + 1


def cpu_accounting(data: Mapping[str, Any], params: Mapping[str, Any] | None) -> list[Any]:
    """Every CPU fio's jobs and SQ poll threads may use, against the CPUs sampled."""
    if not params or "cpus" not in params:
        return [Check("cpu_accounting", None, "no params.json with the run's CPUs: not checked")]
    sampled = params.get("cpus")
    used: set[int] = set()
    unplaced: list[str] = []
    processes = 0
    for i, job in enumerate(_report_jobs(data)):
        o = job_opts(data, i)
        processes += _int(o.get("numjobs")) * (2 if sq_thread(o)[0] else 1)
        try:
            cpus = fio_cpus(o)
        except ValueError:
            cpus = None
        used |= cpus if cpus is not None else set(sampled or [])
        polls, sq_cpu = sq_thread(o)
        if polls and sq_cpu is not None:
            used.add(sq_cpu)
        elif polls:
            unplaced.append(str(job.get("jobname", i)))
    figures = {"sampled_cpus": sampled, "fio_cpus": sorted(used), "sq_threads_unplaced": unplaced}
    threshold = "every CPU fio's jobs and SQ poll threads may use is sampled"
    if sampled is None:
        return [Check("cpu_accounting", True, "unpinned run: every CPU was locked and sampled", figures, threshold)]
    missed = sorted(used - set(sampled))
    if missed or unplaced:
        why = [f"fio used CPU(s) {_cpus(missed)}, which iolab did not sample"] if missed else []
        why += (
            [f"job(s) {', '.join(unplaced)} poll with an SQ thread the kernel placed (no sqthread_poll_cpu)"]
            if unplaced
            else []
        )
        words = (
            f"{'; '.join(why)}: the CPU figures (cpu_busy_pct, cycles_per_io) cover CPU(s) {_cpus(sampled)} "
            "only, not all of fio's work"
        )
        return [Check("cpu_accounting", False, words, figures, threshold)]
    shared = (
        f"; {processes} fio processes and SQ poll threads shared {len(set(sampled))} CPU(s)"
        if processes > len(set(sampled))
        else ""
    )
    words = f"fio's CPU(s) {_cpus(used)} all sampled{shared}"
    return [Check("cpu_accounting", True, words, figures, threshold)]


def _cpus(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus)) or "none"


def arithmetic_checks(fio: pd.DataFrame, data: Mapping[str, Any], params: Mapping[str, Any] | None) -> list[Any]:
    """Every check of this module for one report (``fio``: its tidy rows; ``data``: the
    report; ``params``: the run's params.json, None for a bare report)."""
    return [*littles_law(fio, data, params), *clat_le_lat(fio), *rates(fio, data), *cpu_accounting(data, params)]


# ---------------------------------------------------------------- the PCIe path during the run
AER_WORDS = {
    "correctable": (
        "correctable",
        "the figures may be slowed by link retries (each corrected error is a packet sent again)",
    ),
    "nonfatal": ("non-fatal", "an uncorrectable error the kernel recovered from: the figures may hold its stalls"),
    "fatal": ("fatal", "the link was reset: the figures are not the device's"),
}


def _total(counts: Mapping[str, int] | None) -> int:
    counts = counts or {}
    return int(counts.get("total", sum(v for k, v in counts.items() if k != "total")))


def _link(speed: Any, width: Any) -> str:
    """sysfs's '8.0 GT/s PCIe' and '4' as '8 GT/s x4' ('' without a link)."""
    try:
        gts = float(str(speed).split()[0])
    except (ValueError, IndexError):
        return ""
    return f"{gts:g} GT/s x{width}"


def pcie_path(pcie: Mapping[str, Any] | None) -> list[Any]:
    """AER counters and links of the PCI functions from each device the run opened to its root
    port, before and after the run (``pcie.json``: ``iolab.machine.preflight_pci.pcie_state`` twice):
    ``pcie_aer`` fails when a counter rose, ``pcie_link`` when a link trained to another speed
    or width during the run. [] for a target without a PCI path (a file, a loop device)."""
    if not pcie or not pcie.get("before") or not pcie.get("after"):
        return []
    before, after = pcie["before"], pcie["after"]
    risen, moved, counted, held = [], [], [], []
    for addr, now in after.items():
        was = before.get(addr) or {}
        if now.get("aer") is not None:
            counted.append(addr)
            for kind, counts in now["aer"].items():
                old = (was.get("aer") or {}).get(kind) or {}
                rise = _total(counts) - _total(old)
                if rise > 0:
                    named = {k: v - old.get(k, 0) for k, v in counts.items() if k != "total" and v > old.get(k, 0)}
                    risen.append((addr, kind, rise, named))
        then_, now_ = (
            _link(was.get("link_speed"), was.get("link_width")),
            _link(now.get("link_speed"), now.get("link_width")),
        )
        if then_ != now_:
            moved.append((addr, then_ or "no link", now_ or "no link"))
        elif now_:
            held.append(f"{addr} {now_}")
    out = []
    threshold = "no AER error counted on the device's PCI path during the run"
    if risen:
        said = "; ".join(
            f"AER {AER_WORDS[kind][0]} errors rose by {rise} during the run on {addr}"
            + (f" ({', '.join(f'{k} +{v}' for k, v in named.items())})" if named else "")
            for addr, kind, rise, named in risen
        )
        costs = "; ".join(dict.fromkeys(AER_WORDS[kind][1] for _, kind, _, _ in risen))
        figures = {f"{addr} {kind}": rise for addr, kind, rise, _ in risen}
        out.append(Check("pcie_aer", False, f"{said}: {costs}", figures, threshold))
    elif counted:
        out.append(
            Check("pcie_aer", True, f"no AER error counted during the run on {', '.join(counted)}", {}, threshold)
        )
    else:
        out.append(
            Check(
                "pcie_aer", None, "no aer_dev_* counters on the device's PCI path (AER off or unsupported): not checked"
            )
        )
    threshold = "every link on the path at the same speed and width after the run as before"
    if moved:
        said = "; ".join(f"the link of {addr} went from {a} to {b}" for addr, a, b in moved)
        figures = {addr: f"{a} -> {b}" for addr, a, b in moved}
        out.append(
            Check("pcie_link", False, f"{said} during the run: the bus under the figures changed", figures, threshold)
        )
    elif held:
        out.append(Check("pcie_link", True, f"links held during the run: {', '.join(held)}", {}, threshold))
    return out
