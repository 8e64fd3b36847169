"""The published set-up of a seed against this machine's, for ``iolab seeds``' pages
(``iolab.seeds.pages``): this machine as the seed's runs saw it, what differs, and
what could not run here and why.

    snap = local_setup(seed, out)
    differences(seed, snap)              # "Published: ...; Here: ..."
    check_by_check(seed, snap)           # the write-up's set-up against this one, iolab preflight's checks
    cannot_run_here(comparisons(seed, out), snap)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import RunFileError
from ..machine import preflight
from ..read.run import RunFolder
from ..stats.gap import polled_run
from .comparisons import batch_records
from .manifest import Seed


def local_setup(seed: Seed, out: Path) -> dict[str, Any]:
    """This machine as the seed's runs saw it (the first run folder's ``system.json``, else
    ``iolab.core.system.snapshot()``), and whether any of its jobs polled."""
    from ..core import system

    folders = [Path(f) for rec in batch_records(seed, out).values() for f in rec.get("run_folders") or []]
    snap = None
    for f in folders:
        try:
            snap = RunFolder(f).snapshot() or None
        except (OSError, RunFileError):
            continue
        if snap:
            break
    snap = snap or system.snapshot()
    polled = any(polled_run(f) for f in folders)
    return {**snap, "polled": polled, "targets": _targets(folders)}


def _targets(folders: Sequence[Path]) -> list[str]:
    """What the runs read, in words, each once: the scratch file and the disk under it, loop
    devices, block devices (from each run folder's ``params.json`` and ``system.json``)."""
    found: dict[str, None] = {}
    for f in folders:
        run = RunFolder(f)
        try:
            target = str(run.params().get("target") or "")
            device = run.snapshot().get("device")
        except (OSError, RunFileError):
            continue
        kind = target.split()[0] if target else ""
        if kind == "scratch":
            found[f"a scratch file on {device or 'this machine'}'s file system"] = None
        elif kind == "loop" or (device or "").startswith("loop"):
            found["tmpfs-backed loop devices (memory, not an SSD)"] = None
        elif device:
            found[f"/dev/{device}"] = None
    return list(found)


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
        f"emulated: {emulated}"
        if emulated
        else "a virtual machine"
        if snap.get("virtual_machine")
        else "not a virtual machine"
        if snap.get("virtual_machine") is False
        else "",
    ]
    here = [h for h in here if h]
    there = [
        f"{pub.get('cpu_model')}" + (f" at {pub['clock_ghz']} GHz" if pub.get("clock_ghz") else ""),
        str(pub.get("device")),
        f"kernel {pub.get('kernel')}",
        str(pub.get("fio_version")),
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


def check_by_check(seed: Seed, snap: Mapping[str, Any], report: preflight.Report | None = None) -> list[dict[str, str]]:
    """The write-up's set-up against this machine's, check by check (``iolab preflight``'s
    names): each check the write-up names (``setup: checks:`` of its manifest) with the
    verdict here, then each check not ok here that it does not name. ``report``: this
    machine's preflight (None: taken now, for the CPUs and device the seed's runs used).
    A check the manifest ``expects`` a value of (``setup: expects:``) and that sees another
    is "differs", whatever preflight's own verdict: mq-deadline is fine on a rotational disk,
    not for seed 001's method, which measured it at half the IOPS per CPU."""
    device = snap.get("device")
    if report is None:
        report = preflight.of_study([device], snap.get("cpus_in_use"))
    theirs = seed.setup.get("checks") or {}
    expects = seed.setup.get("expects") or {}
    here: dict[str, list[preflight.Check]] = {}
    for c in report.checks:
        here.setdefault(c.name, []).append(c)
    rows = []
    for name in [*theirs, *(n for n, cs in here.items() if n not in theirs and _worst(cs) in ("fail", "warn"))]:
        found = here.get(name, [])
        seen = "; ".join(c.seen for c in found) or _unchecked(name, device, report)
        verdict = _worst(found) if found else "not checked"
        wanted = expects.get(name)
        if (
            found
            and wanted
            and verdict != "unknown"
            and not re.search(rf"(^|\W){re.escape(wanted)}(\W|$)", seen.split(":")[0])
        ):
            verdict = "differs"  # fine for measuring in general, not the write-up's method
            seen = f"{seen} — the write-up's method needs {wanted}"
        rows.append(
            {"check": name, "theirs": theirs.get(name, "not said in the write-up"), "verdict": verdict, "here": seen}
        )
    return rows


def _unchecked(name: str, device: str | None, report: preflight.Report) -> str:
    """Why this machine's preflight has no ``name`` check."""
    if name in ("shared_port", "shared_complex"):
        return f"not checked: it needs two devices or more, and the runs used {len(report.devices) or 'none'}"
    if device and not report.devices:
        return f"not checked: {device}, the runs' device, is not here now"
    return f"not checked: {', '.join(report.devices) or 'the runs’ file'} has nothing of the kind (not NVMe, no PCIe)"


def _worst(checks: Sequence[preflight.Check]) -> str:
    return min((c.verdict for c in checks), key=preflight.ORDER.__getitem__, default="ok")
