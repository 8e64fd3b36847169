"""Asking fio for its interval logs (``log_ms``): the job options that make fio write them into the run folder, and the note (``series.json``) that says what was asked and on which clock (read back by ``iolab.read.series``)."""

from __future__ import annotations

import functools
import math
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.atomic import write_json
from ..core.errors import InputError
from ..read.fiologs import PREFIX
from ..read.series import META


# ---------------------------------------------------------------- asking fio for the logs
def check_log_ms(log_ms: Any) -> int:
    """``log_ms`` as fio's whole milliseconds (log_avg_msec, log_hist_msec), or InputError."""
    try:
        value = float(log_ms)
    except (TypeError, ValueError):
        raise InputError(f"log_ms={log_ms!r} is not a number of milliseconds; give e.g. 500") from None
    if isinstance(log_ms, bool) or not math.isfinite(value) or value < 1 or value != int(value):
        raise InputError(f"log_ms={log_ms!r}: fio logs whole milliseconds >= 1 (log_avg_msec); give e.g. 500 or 1000")
    return int(value)


@functools.cache
def monotonic_epoch_supported(fio: str) -> bool:
    """Whether this fio can stamp its logs with CLOCK_MONOTONIC (log_alternate_epoch and
    log_alternate_epoch_clock_id, fio >= 3.31); asks fio itself (``--cmdhelp``)."""
    for option in ("log_alternate_epoch", "log_alternate_epoch_clock_id"):
        said = subprocess.run([fio, f"--cmdhelp={option}"], capture_output=True, text=True, check=False)
        if f"{option}:" not in said.stdout:
            return False
    return True


def log_options(log_ms: int, fio: str | None = None, prefix: str = PREFIX) -> dict[str, Any]:
    """The fio options that write the interval logs at ``log_ms`` into the run folder (fio's
    working directory): IOPS, bandwidth, latency (averaged per interval) and completion-latency
    histograms, stamped with CLOCK_MONOTONIC when ``fio`` supports it (the samplers' clock)."""
    log_ms = check_log_ms(log_ms)
    opts: dict[str, Any] = {
        "write_iops_log": prefix,
        "write_bw_log": prefix,
        "write_lat_log": prefix,
        "log_avg_msec": log_ms,
        "write_hist_log": prefix,
        "log_hist_msec": log_ms,
    }
    if fio and monotonic_epoch_supported(fio):
        opts.update(log_alternate_epoch=1, log_alternate_epoch_clock_id=1)  # 1: CLOCK_MONOTONIC
    return opts


def job_names(sections: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """fio's job names by job number (index N-1 of the logs' ``.N``): each section of a job
    file in order, repeated ``numjobs`` times (fio numbers clones right after their parent)."""
    names: list[str] = []
    for name, opts in sections.items():
        try:
            clones = int(str(opts.get("numjobs", 1)))
        except ValueError:
            clones = 1
        names += [name] * max(1, clones)
    return names


def record(
    run_dir: str | os.PathLike,
    *,
    log_ms: int,
    options: Mapping[str, Any],
    jobs: Sequence[str],
    sampler_t0: float | None,
    prefix: str = PREFIX,
) -> dict[str, Any]:
    """Write ``series.json``: what the reader needs to put the logs on the samplers' axis —
    the interval, the log prefix, the job names by number, the logs' clock and the sampler's
    start on that clock (``sampling.Sampler.t0``, time.monotonic) and on the wall clock."""
    now_mono, now_unix = time.monotonic(), time.time()
    meta = {
        "log_ms": int(log_ms),
        "prefix": prefix,
        "jobs": list(jobs),
        "time_base": "monotonic" if options.get("log_alternate_epoch_clock_id") == 1 else "job start",
        "sampler_t0_monotonic_s": sampler_t0,
        "sampler_t0_unix_s": None if sampler_t0 is None else now_unix - (now_mono - sampler_t0),
    }
    write_json(Path(run_dir) / META, meta)
    return meta
