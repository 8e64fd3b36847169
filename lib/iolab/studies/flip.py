"""``iolab explain --verify``: the top set-up difference flipped on this machine and B's job
measured again, so the share of the gap it closes is measured, not inferred.

    folder = rerun_with(b_run_folder, {"scheduler": "none"}, repeats=3)

B's job is its first run's as params.json keeps it: the full fio options (the target's file
in them), the CPUs, the target as it was described. The target must still be that device
(its path and size as recorded), else nothing runs. The knobs go through
``iolab.machine.knobs.applied`` — checked before the first change, put back after the runs,
on an error, Ctrl-C, SIGTERM and SIGHUP, and from the ledger after SIGKILL — and the runs
through ``iolab.measure.runner.measure``, the write guard included.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..machine import knobs
from ..machine.target import existing_path
from ..measure.runner import measure
from ..measure.sweep import new_sweep_dir
from ..read.run import RunFolder


def rerun_with(
    run_folder: str | os.PathLike,
    settings: Mapping[str, Any],
    repeats: int = 3,
    runs_dir: str | os.PathLike | None = None,
    allow_destructive: bool = False,
) -> Path:
    """``repeats`` runs of ``run_folder``'s job with ``settings`` (knob -> value) applied,
    into ``runs_dir`` (default data/runs/explain-verify-<UTC time>); the folder they went to."""
    params = RunFolder(run_folder).params()
    options = dict(params.get("fio_options") or {})
    filename = str(options.get("filename") or "")
    if not filename or ":" in filename:
        raise InputError(f"{run_folder}: its job has no single target file (filename={filename!r}) to measure again")
    if not os.path.exists(filename):
        raise InputError(f"{filename}, B's target, is gone: --verify measures B's job on B's device again")
    target = existing_path(filename)
    recorded, now = str(params.get("target") or ""), target.describe()
    if recorded and _size(recorded) != _size(now):
        raise InputError(f"{filename} is not the device B measured ({recorded}; now {now}): nothing was run")
    folder = Path(runs_dir) if runs_dir else new_sweep_dir("explain-verify")
    cpus = params.get("cpus")
    with knobs.applied(target, settings):
        for repeat in range(repeats):
            swept = {**{f"flipped {k}": str(v) for k, v in settings.items()}, "repeat": repeat}
            measure(
                options, target, cpus=cpus, runs_dir=folder, swept=swept, how={"allow_destructive": allow_destructive}
            )
    return folder


def _size(described: str) -> str:
    """'loop /dev/loop0 (/sys/block/loop0), 256 MiB' -> '256 MiB' (the size a target was described with)."""
    return described.rpartition(", ")[2] if ", " in described else ""


__all__ = ["rerun_with"]
