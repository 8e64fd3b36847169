"""Why this machine's numbers differ from a write-up's, from what its runs measured, for
``iolab seeds``' pages: per experiment, the gap (this machine's figures ÷ the write-up's) and
the differences that could account for it, ranked by ``iolab.stats.gap``'s rule, the one
``iolab explain`` uses: the write-up's published set-up is side A, this machine's runs side B.

    found = causes(seed, experiment_record, rows, profile, author_polled)
    found.ratio, [c.what for c in found.ranked], [c.what for c in found.unranked]

Side A holds what the write-up says (its clock, whether it polled, its scheduler, its cycles
per IO where it gives them) and, said as assumed, what it does not (other programs: none on
a machine measuring alone; no steal on bare metal; NVMe's default scheduler, none). Side B is
the run folders behind the compared figures (else the experiment's): their ``system.json``,
``params.json`` and samplers, so a cost is read under the figures' own conditions. The channels
with a measured effect are ranked by their share of the gap; what has none here (the target,
a VM, the runtime, the profile's hottest function) is listed with its evidence, not ranked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import IolabError
from ..core.validate import fio_seconds
from ..read.run import RunFolder
from ..runs.runcache import load_runs
from ..stats.gap import Cause, channels, gap_shown, queue_causes, rank, side_facts
from .commands import polls
from .manifest import Seed

# the hottest functions a profile here has shown, in words (kernel symbol -> what it is)
HOT = {
    "iowrite16": "a device doorbell write (virtio or NVMe), which in a VM traps to the hypervisor",
    "iowrite32": "a device doorbell write, which in a VM traps to the hypervisor",
    "copy_page": "the loop device copying each block in memory",
    "memcpy_orig": "memory copies (the loop device's, or the page cache's)",
    "read_hpet": "the HPET clock source: each timestamp fio takes is a read of a timer device, which in a VM or "
    "emulator traps (the TSC clock source does not)",
    "_raw_spin_lock": "spinlock contention",
    "native_queued_spin_lock_slowpath": "spinlock contention",
}
RATES = ("iops", "bw_mib_s")  # the figures a gap is taken over: rates, B ÷ A


@dataclass
class SeedGap:
    """One experiment's gap: this machine's rates ÷ the write-up's (``ratio``, the geometric
    mean over ``figures`` of them, from ``lowest`` to ``highest``; NaN: none compared) and its
    ``ranked`` and ``unranked`` causes (``iolab.stats.gap.Cause``)."""

    ratio: float = math.nan
    figures: int = 0
    lowest: float = math.nan
    highest: float = math.nan
    ranked: list[Cause] = field(default_factory=list)
    unranked: list[Cause] = field(default_factory=list)

    def headline(self) -> str:
        if not self.figures:
            return "no figure of this experiment has a local value to compare: the differences are listed, not ranked"
        if self.figures == 1:
            return f"here {self.ratio:.3g}× the write-up's IOPS or bandwidth (1 figure)"
        spread = (
            f", from {self.lowest:.3g}× to {self.highest:.3g}×" if f"{self.lowest:.3g}" != f"{self.highest:.3g}" else ""
        )
        return f"here {self.ratio:.3g}× the write-up's IOPS or bandwidth (the geometric mean of {self.figures} figures{spread})"


def causes(
    seed: Seed,
    record: Mapping[str, Any] | None,
    rows: pd.DataFrame | None = None,
    profile: Mapping[str, Any] | None = None,
    author_polled: bool = False,
) -> SeedGap:
    """The gap of this experiment's figures and its causes, ranked (module docstring).
    ``record``: the experiment's batch record; ``rows``: its rows of the seed's comparison
    table (``iolab.seeds.comparisons``); ``profile``: a recorded "top function's share of busy
    samples" result of the seed (``seed_profile``; said on the experiment that recorded it);
    ``author_polled``: whether the author's commands for its figures polled (``iolab.seeds.commands.polls``)."""
    behind = [f for runs in (rows["runs"] if rows is not None and "runs" in rows else []) for f in runs or []]
    folders = [f for f in dict.fromkeys(behind or (record or {}).get("run_folders") or []) if Path(f).is_dir()]
    if not folders:
        return SeedGap()
    found = _gap(rows)
    runs = [RunFolder(f) for f in folders]
    here = side_facts(load_runs(folders), folders)
    pub = published(seed, rows, author_polled)
    candidates = [*channels(pub, here, NAMES), *queue_causes(pub, here, NAMES), *_listed(seed, runs, here)]
    if profile and profile.get("note") and profile in ((record or {}).get("results") or []):
        fn = str(profile["note"])
        candidates.append(
            Cause(
                "CPU",
                "the profile",
                "",
                fn,
                f"perf, fio's own samples: the hottest function was {fn}, {profile['value']:.0f} % of them"
                + (f": {HOT[fn]}" if fn in HOT else ""),
            )
        )
    shown = found.figures > 0 and gap_shown(found.ratio)
    found.ranked, found.unranked = rank(candidates, found.ratio if found.figures else 1.0, shown)
    return found


NAMES = ("in the write-up", "here")


def row_causes(
    seed: Seed,
    records: Mapping[str, Mapping[str, Any]],
    table: pd.DataFrame,
    profile: Mapping[str, Any] | None = None,
) -> list[str]:
    """Per row of a seed's comparison table (``iolab.seeds.comparisons``), in words, the
    largest measured cause of that row's own gap (its local ÷ published rate, against its
    own runs; ``causes``' rule), or that none accounts for it; "" for a row with no rate
    compared (a latency, a figure with no local value)."""
    said = []
    for i, row in table.iterrows():
        ratio = pd.to_numeric(pd.Series([row.get("ratio")]), errors="coerce").iloc[0]
        if row["metric"] not in RATES or not (ratio > 0 and math.isfinite(ratio)) or not row.get("runs"):
            said.append("")
            continue
        found = causes(seed, records.get(row["from"]), table.loc[[i]], profile, polls(row["command"]))
        if not gap_shown(found.ratio):
            said.append("no gap beyond 2 %: nothing to account for")
            continue
        top = found.ranked[0] if found.ranked and found.ranked[0].share else None
        unmeasured = ", ".join(c.what for c in found.unranked if c.kind in ("device", "machine", "method"))
        rest = f"; not measurable here: {unmeasured}" if unmeasured else ""
        if top and top.share >= 0.5:
            said.append(f"largest measured cause: {top.what} (up to {100 * top.share:.0f} % of this row's gap)")
        elif top:
            said.append(f"measured causes: at most {100 * top.share:.0f} % of this row's gap ({top.what}){rest}")
        else:
            said.append(f"no measured difference accounts for this row's gap{rest}")
    return said


def published(seed: Seed, rows: pd.DataFrame | None, author_polled: bool) -> dict[str, Any]:
    """Side A: the write-up's set-up as ``iolab.stats.gap`` reads a side, each value it does
    not say under ``"assumed"`` with why it was taken."""
    pub = seed.setup
    sched = (pub.get("expects") or {}).get("scheduler")
    side: dict[str, Any] = {
        "polled": author_polled,
        "other_cpu_pct": 0.0,
        "cpu_steal_pct": 0.0,
        "scheduler_active": sched or "none",
        "assumed": {
            "other_cpu_pct": "not said: taken as a machine measuring alone",
            "cpu_steal_pct": "bare metal: no steal",
            **({} if sched else {"scheduler_active": "not said: none, NVMe's default"}),
        },
    }
    compared = rows[pd.to_numeric(rows["local"], errors="coerce").notna()] if rows is not None and len(rows) else None
    clocks = pd.to_numeric(compared["freq_ghz"], errors="coerce").dropna() if compared is not None else []
    if len(clocks):  # the clock of the runs behind these figures (a P-core's, an E-core's); none said: none taken
        side["cpu_freq_mhz"] = 1000 * float(clocks.mean())
    elif rows is None and pub.get("clock_ghz"):
        side["cpu_freq_mhz"] = 1000 * float(pub["clock_ghz"])
    cycles = rows[rows["metric"] == "cycles_per_io"]["published"] if rows is not None and len(rows) else []
    if len(cycles):
        side["cycles_per_io"] = float(cycles.iloc[0])
    return side


def _gap(rows: pd.DataFrame | None) -> SeedGap:
    if rows is None or not len(rows):
        return SeedGap()
    ratios = pd.to_numeric(rows.loc[rows["metric"].isin(RATES), "ratio"], errors="coerce")
    ratios = ratios[(ratios > 0) & ratios.map(math.isfinite)]
    if ratios.empty:
        return SeedGap()
    return SeedGap(float(math.exp(ratios.map(math.log).mean())), len(ratios), float(ratios.min()), float(ratios.max()))


def _listed(seed: Seed, runs: list[RunFolder], here: Mapping[str, Any]) -> list[Cause]:
    """What differs with no channel measured here: the target, a VM, the runtime."""
    pub = seed.setup
    device = pub.get("device") or "an SSD"
    target = str(_first(runs, lambda r: r.params().get("target")) or "")
    out = []
    workers, own = here.get("device_worker_cpu_pct"), here.get("own_cpu_pct")
    if target.startswith("loop") or here.get("device", "").startswith("loop"):
        out.append(
            Cause(
                "device",
                "the target",
                device,
                "a tmpfs-backed loop device",
                f"a tmpfs-backed loop device (memory, not {device}): each IO is a memory copy by the loop driver's "
                "kernel worker"
                + (f", which took {workers:.0f} % of a CPU beside fio's own {own:.0f} %" if workers and own else ""),
            )
        )
    elif target.startswith("scratch"):
        disk = here.get("device") or "this machine"
        out.append(
            Cause(
                "device",
                "the target",
                device,
                f"a scratch file on {disk}",
                f"a scratch file on {disk}'s file system, not {device}: the file system and this machine's disk "
                "set the pace",
            )
        )
    if here.get("emulated"):
        out.append(
            Cause(
                "machine",
                "an emulated NVMe device",
                "bare metal",
                "a QEMU guest",
                "each IO is the emulator's work on the host's CPUs, and the guest's doorbells, timers and "
                "interrupts trap to it",
            )
        )
    elif here.get("virtual_machine"):
        out.append(
            Cause(
                "machine",
                "a virtual machine",
                "bare metal",
                "a VM",
                "device doorbells, timers and interrupts trap to the host, and its vCPUs share the host's cores",
            )
        )
    seconds = [s for s in map(_runtime_s, runs) if s]
    if seconds:
        span = f"{min(seconds):g}–{max(seconds):g} s" if min(seconds) != max(seconds) else f"{seconds[0]:g} s"
        theirs = f"{pub['runtime_s']:g} s" if pub.get("runtime_s") else "not said"
        against = f"against the write-up's {theirs}" if pub.get("runtime_s") else "(the write-up does not say its own)"
        out.append(
            Cause(
                "method",
                "the runtime",
                theirs,
                span,
                f"{span} per run here {against}; short runs carry start-up and ramp in their mean",
            )
        )
    return out


def _first(runs: list[RunFolder], get) -> Any:
    for run in runs:
        try:
            value = get(run)
        except (OSError, IolabError):
            continue
        if value:
            return value
    return None


def _runtime_s(run: RunFolder) -> float | None:
    """A run's runtime in seconds: fio's ``runtime``, or t/io_uring's ``-r``."""
    try:
        argv, options = run.argv(), run.params().get("fio_options") or {}
    except (OSError, IolabError):
        return None
    if "-r" in argv[:-1] and "io_uring" in Path(argv[0]).name:
        return float(argv[argv.index("-r") + 1])
    try:
        return fio_seconds(options["runtime"]) if options.get("runtime") is not None else None
    except IolabError:
        return None


def seed_profile(records: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first recorded "top function's share of busy samples" of a seed's experiments."""
    for rec in records.values():
        for r in rec.get("results") or []:
            if str(r.get("name", "")).startswith("top function's share of busy samples"):
                return r
    return None


__all__ = ["HOT", "NAMES", "SeedGap", "causes", "published", "row_causes", "seed_profile"]
