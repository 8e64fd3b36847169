"""Why this machine's numbers differ from a write-up's, from what its runs measured, for
``iolab seeds``' pages: one ranked list per experiment, each cause a sentence with its
figure, read from the experiment's run folders (``system.json``, ``params.json``, the
samplers through ``iolab.read.samples.run_columns``) and the seed's recorded profile.

    causes(seed, experiment_record, profile)   # ["the target: a tmpfs-backed loop device ...", ...]

The order is a fixed rule, largest expected effect first: what is measured (the device),
how completions arrive (polling), the machine (a VM, its clock), the block layer (an I/O
scheduler), the method (the runtime), and other programs on the measuring CPUs. A cause
is listed only when its runs show it; nothing here is a guess about hardware it did not see.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import IolabError, RunFileError
from ..core.validate import fio_seconds
from ..read.run import RunFolder
from ..read.samples import run_columns
from .commands import published_options
from .manifest import Seed
from .setups import polled_run

# the hottest functions a profile here has shown, in words (kernel symbol -> what it is)
HOT = {
    "iowrite16": "a device doorbell write (virtio or NVMe), which in a VM traps to the hypervisor",
    "iowrite32": "a device doorbell write, which in a VM traps to the hypervisor",
    "copy_page": "the loop device copying each block in memory",
    "memcpy_orig": "memory copies (the loop device's, or the page cache's)",
    "_raw_spin_lock": "spinlock contention",
    "native_queued_spin_lock_slowpath": "spinlock contention",
}
OTHER_LOAD_SAID = 5.0  # % of the measuring CPUs: other programs below this are not a cause worth a line


def _mean(values: Sequence[float]) -> float | None:
    kept = [v for v in values if isinstance(v, (int, float)) and v == v]
    return statistics.fmean(kept) if kept else None


def _read(folders: Sequence[str]) -> list[dict[str, Any]]:
    """Each readable run folder's snapshot, options and sampler summary."""
    found = []
    for f in folders:
        run = RunFolder(f)
        try:
            params, snap = run.params(), run.snapshot()
        except (OSError, RunFileError):
            continue
        try:
            samples = run_columns(Path(f))
        except (OSError, RunFileError, ValueError, KeyError):
            samples = {}
        found.append({"params": params, "snap": snap, "samples": samples or {}, "argv": run.argv()})
    return found


def _runtime_s(run: Mapping[str, Any]) -> float | None:
    """A run's runtime in seconds: fio's ``runtime``, or t/io_uring's ``-r``."""
    argv = run["argv"]
    if "-r" in argv[:-1] and "io_uring" in Path(argv[0]).name:
        return float(argv[argv.index("-r") + 1])
    value = (run["params"].get("fio_options") or {}).get("runtime")
    try:
        return fio_seconds(value) if value is not None else None
    except IolabError:
        return None


def causes(
    seed: Seed, record: Mapping[str, Any] | None, profile: Mapping[str, Any] | None = None, author_polled: bool = False
) -> list[str]:
    """The measured reasons this experiment's numbers differ from the write-up's, ranked
    (module docstring). ``record``: the experiment's batch record; ``profile``: a recorded
    "top function's share of busy samples" result of the seed (``seed_profile``; said on the
    experiment that recorded it; None: no profile ran); ``author_polled``: whether the
    author's commands for this experiment's figures polled (``polls``)."""
    runs = _read((record or {}).get("run_folders") or [])
    if not runs:
        return []
    pub = seed.setup
    snap = runs[0]["snap"]
    said = []
    target = str(runs[0]["params"].get("target") or snap.get("device") or "")
    workers = _mean([r["samples"].get("device_worker_cpu_pct") for r in runs])
    own = _mean([r["samples"].get("own_cpu_pct") for r in runs])
    if target.startswith("loop") or str(snap.get("device") or "").startswith("loop"):
        said.append(
            f"The target: a tmpfs-backed loop device (memory, not {pub.get('device') or 'an SSD'}): each IO is a "
            "memory copy by the loop driver's kernel worker"
            + (f", which took {workers:.0f} % of a CPU beside fio's own {own:.0f} %" if workers and own else "")
            + "."
        )
    elif target.startswith("scratch"):
        said.append(
            f"The target: a scratch file on {snap.get('device') or 'this machine'}'s file system, not "
            f"{pub.get('device') or 'an SSD'}: the file system and this machine's disk set the pace."
        )
    polled = any(polled_run(f) for f in (record or {}).get("run_folders") or [])
    if author_polled and not polled:
        io_poll = str((snap.get("queue") or {}).get("io_poll"))
        said.append(
            "Completions by interrupt where the author polled"
            + (": the target has no poll queues (io_poll 0)" if io_poll == "0" else "")
            + "."
        )
    if snap.get("emulated"):
        said.append(
            "An emulated NVMe device in a QEMU guest: each IO is the emulator's work on this host's CPUs, and "
            "the guest's doorbells, timers and interrupts trap to it."
        )
    elif snap.get("virtual_machine"):
        said.append(
            "A virtual machine: device doorbells, timers and interrupts trap to the host, and its vCPUs share "
            "the host's cores."
        )
    mhz = [v for v in (snap.get("cpuinfo_mhz") or {}).values() if v]
    cur = [v / 1e3 for v in (snap.get("scaling_cur_freq_khz") or {}).values() if v]
    clock = max(cur) if cur else max(mhz) if mhz else None
    if clock and pub.get("clock_ghz"):
        said.append(
            f"The clock: {clock / 1e3:.2f} GHz here "
            + ("(cpufreq)" if cur else "(/proc/cpuinfo's nominal figure: no cpufreq in this machine)")
            + f" against {pub['clock_ghz']} GHz published; IOPS per core scale with it, cycles per IO do not."
        )
    sched = (snap.get("queue") or {}).get("scheduler_active")
    if sched and sched != "none":
        said.append(
            f"The I/O scheduler {sched} was active on {snap.get('device')}; seed 001 measured mq-deadline at half the "
            "IOPS per CPU of none."
        )
    seconds = [s for s in map(_runtime_s, runs) if s]
    if seconds:
        said.append(
            f"The runtime: {min(seconds):g}–{max(seconds):g} s per run"
            if min(seconds) != max(seconds)
            else f"The runtime: {seconds[0]:g} s per run"
        )
        said[-1] += (
            f" against the write-up's {pub['runtime_s']:g} s"
            if pub.get("runtime_s")
            else " (the write-up does not say its own)"
        ) + "; short runs carry start-up and ramp in their mean."
    other = [r["samples"].get("other_cpu_pct") for r in runs]
    mean_other = _mean(other)
    if mean_other is not None and mean_other >= OTHER_LOAD_SAID:
        said.append(
            f"Other programs on the measuring CPUs: {mean_other:.0f} % of their time on average "
            f"(at most {max(v for v in other if isinstance(v, (int, float)) and v == v):.0f} %), counted apart "
            "from fio's own."
        )
    steal = _mean([r["samples"].get("cpu_steal_pct") for r in runs])
    if steal and steal >= 1:
        said.append(f"Steal: the host took {steal:.0f} % of the measuring CPUs' time from this VM.")
    if profile and profile.get("note") and profile in ((record or {}).get("results") or []):
        fn = str(profile["note"])
        said.append(
            f"The profile (perf, fio's own samples): the hottest function was {fn}, {profile['value']:.0f} % of "
            "them" + (f": {HOT[fn]}" if fn in HOT else "") + "."
        )
    return said


def polls(command: str) -> bool:
    """Whether a published command line polls its completions (fio's --hipri, t/io_uring's -p 1;
    a description that says "polled")."""
    opts, _ = published_options(command)
    return opts.get("hipri") == "1" or opts.get("p") == "1" or bool(re.search(r"\bpolled\b", str(command)))


def seed_profile(records: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first recorded "top function's share of busy samples" of a seed's experiments."""
    for rec in records.values():
        for r in rec.get("results") or []:
            if str(r.get("name", "")).startswith("top function's share of busy samples"):
                return r
    return None


__all__ = ["causes", "seed_profile", "HOT"]
