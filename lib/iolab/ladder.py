"""The single-core tuning ladder of seed 000: each step changes one thing relative to the
previous one and is measured; steps the target cannot do are skipped with the exact reason.

    steps = default_ladder(qd=32)
    table = run_ladder(steps, target, cpu=0, runs_dir=...)
    table[["step", "name", "status", "reason", "iops", "gain_pct"]]

A step is data: a name, fio option changes (carried forward to later steps unless
``peak_only``), the capabilities it needs, and optionally a tool (``"tio"`` for fio's
t/io_uring) or an NVMe feature to set (interrupt coalescing, opt-in, always restored).
Users write their own ladders as lists of ``Step``.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import IolabError
from .system import read_text
from .target import Target


@dataclass
class Step:
    name: str
    fio: dict[str, Any] = field(default_factory=dict)
    requires: list[str] = field(default_factory=list)
    peak_only: bool = False        # measured, but not carried forward (gtod_reduce: no latency)
    tool: str = "fio"              # fio | tio
    tio_flags: dict[str, Any] = field(default_factory=dict)
    nvme_feature: tuple[int, int] | None = None   # (feature id, value), restored after the step
    note: str = ""


def default_ladder(qd: int = 32, batch_qd: int = 128) -> list[Step]:
    """Seed 000's ladder (E-core, 472k -> 2.81M IOPS on a Gen5 NVMe SSD)."""
    return [
        Step("baseline io_uring", {"ioengine": "io_uring", "direct": 1, "iodepth": qd}),
        Step("polled completions (hipri)", {"hipri": 1}, ["poll"]),
        Step("NVMe passthrough (io_uring_cmd on /dev/ng)", {"ioengine": "io_uring_cmd", "cmd_type": "nvme"},
             ["nvme_ng"], note="filename becomes the /dev/ngXnY char device"),
        Step("fixedbufs + registerfiles + norandommap", {"fixedbufs": 1, "registerfiles": 1, "norandommap": 1}),
        Step("gtod_reduce (peak only: no latency)", {"gtod_reduce": 1}, peak_only=True),
        Step("batching: submit 32, complete 8", {"iodepth": batch_qd, "iodepth_batch_submit": 32,
                                                 "iodepth_batch_complete": 8}),
        Step("interrupt coalescing (NVMe feature 0x08 = 0x320)", {"hipri": 0}, ["nvme", "nvme_cli", "opt_in"],
             nvme_feature=(0x08, 0x320)),
        Step("t/io_uring", tool="tio", requires=["tio"],
             tio_flags={"d": batch_qd, "s": 32, "c": 8, "b": 4096, "B": 1, "F": 1}),
    ]


def capabilities(target: Target, opt_in: bool = False) -> dict[str, str | None]:
    """For each capability a step may need: None if available, else why not."""
    dev = target.device or ""
    io_poll = read_text(f"/sys/block/{dev}/queue/io_poll") if dev else None
    poll_queues = read_text("/sys/module/nvme/parameters/poll_queues")
    ng = Path(f"/dev/{dev.replace('nvme', 'ng', 1)}") if dev.startswith("nvme") else None
    from .paths import REPO
    caps: dict[str, str | None] = {
        "poll": None if io_poll == "1" else
        (f"no poll queues: /sys/block/{dev}/queue/io_poll is {io_poll}" if io_poll is not None
         else f"{target.kind} target has no block queue (polling needs a block device)")
        + (f"; nvme poll_queues={poll_queues} (boot with nvme.poll_queues=N)" if poll_queues == "0" else ""),
        "nvme": None if dev.startswith("nvme") else f"not NVMe: {dev or target.kind} {target.path}",
        "nvme_ng": None if ng and ng.exists() else (f"no {ng} node (kernel 5.19+ with NVMe generic char devices)"
                                                    if ng else f"no /dev/ng* node for {dev or target.path} (not NVMe)"),
        "nvme_cli": None if shutil.which("nvme") else "nvme-cli not installed (apt-get install nvme-cli)",
        "opt_in": None if opt_in else "changes a device setting: pass opt_in=True to allow (always restored)",
        "tio": None if (REPO / "tools/t_io_uring").exists() else "t/io_uring not built: run `make tio`",
        "root": None if os.geteuid() == 0 else "needs root",
    }
    return caps


def plan(steps: list[Step], caps: dict[str, str | None]) -> list[tuple[Step, str | None]]:
    """Each step with the reason it will be skipped (None = it runs)."""
    out = []
    for step in steps:
        missing = [caps.get(r, f"unknown capability {r!r}") for r in step.requires]
        missing = [m for m in missing if m]
        out.append((step, "; ".join(missing) if missing else None))
    return out


def run_ladder(steps: list[Step], target: Target, *, cpu: int = 0, base: dict[str, Any] | None = None,
               runtime_s: float = 2.0, runs_dir: str | Path, opt_in: bool = False) -> pd.DataFrame:
    """Run the ladder; one row per step (skipped steps included, with their reason), with
    ``gain_pct`` against the previous measured carried-forward step."""
    from .analysis import add_cycles_per_io
    from .fio import fio_time
    from .progress import bar
    from .runner import measure, measure_tio
    from .system import nvme_feature

    caps = capabilities(target, opt_in)
    current: dict[str, Any] = {"rw": "randread", "bs": "4k", **(base or {}), "runtime": fio_time(runtime_s)}
    rows = []
    for i, (step, reason) in enumerate(bar(plan(steps, caps), "ladder", unit="step")):
        row = {"step": i, "name": step.name, "tool": step.tool}
        if reason:
            rows.append({**row, "status": "skipped", "reason": reason})
            continue
        opts = {**current, **step.fio}
        tgt = target
        if step.fio.get("ioengine") == "io_uring_cmd":
            ng = Path(f"/dev/{target.device.replace('nvme', 'ng', 1)}")
            tgt = Target("char", ng, None, device=target.device)
        swept = {"step": i, "step_name": step.name}
        try:
            if step.tool == "tio":
                flags = {"p": int(bool(current.get("hipri"))), "r": max(int(runtime_s), 2), **step.tio_flags}
                result = measure_tio(flags, tgt, cpus=[cpu], runs_dir=runs_dir, swept=swept, label=f"step{i}")
            elif step.nvme_feature:
                controller = "/dev/" + target.device.rsplit("n", 1)[0]
                with nvme_feature(controller, *step.nvme_feature):
                    result = measure(opts, tgt, cpus=[cpu], runs_dir=runs_dir, swept=swept, label=f"step{i}")
            else:
                result = measure(opts, tgt, cpus=[cpu], runs_dir=runs_dir, swept=swept, label=f"step{i}")
        except IolabError as exc:
            rows.append({**row, "status": "failed", "reason": str(exc).splitlines()[0]})
            continue
        t = add_cycles_per_io(result.table)
        agg = {"iops": t["iops"].sum(), **{c: t[c].iloc[0] for c in
               ("clat_p50_us", "clat_p99_us", "clat_p99_9_us", "cpu_busy_pct", "cycles_per_io",
                "freq_source", "lat_mean_us_littles") if c in t}}
        rows.append({**row, "status": "measured", "reason": "", **agg,
                     "carried_forward": not step.peak_only and step.tool == "fio", "run_id": t["run_id"].iloc[0]})
        if not step.peak_only and step.tool == "fio":
            current = opts
    table = pd.DataFrame(rows)
    prev = None
    gains = []
    for r in table.itertuples():
        if r.status != "measured":
            gains.append(float("nan"))
            continue
        gains.append(100 * (r.iops / prev - 1) if prev else float("nan"))
        if getattr(r, "carried_forward", False) or prev is None:
            prev = r.iops
    table["gain_pct"] = gains
    return table
