"""A planned run: one run of a campaign as a value, made before the first run starts.

Every way iolab runs many jobs — a sweep's grid, a search spec, the ladder's steps, the knee
search's rounds, a job on 1..N hosts — is a planner that returns PlannedRuns; one loop
(``iolab.measure.campaign.execute``) runs them. A PlannedRun says what runs (fio options or
t/io_uring flags, its target, CPUs, per-device jobs, hosts), what is around it (the cell's
knobs, stress-ng on other CPUs), the columns it adds (``swept``: cell values, tags, repeat)
and its one resume key (``key``): a finished run under the same key is not run again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..machine.directio import why_not_direct
from ..machine.target import Target
from ..runs.store import job_key

ENGINES = ("fio", "t/io_uring", "hosts")
DEFAULTS = {
    "ioengine": "io_uring",
    "direct": 1,
    "rw": "randread",
    "bs": "4k",
    "iodepth": 1,
    "time_based": 1,
    "runtime": "2s",
    "group_reporting": 1,
}
TIO_DEFAULTS = {"r": 3}  # t/io_uring's default flags in iolab, stored with its runs


def job_options(
    options: Mapping[str, Any],
    target: Target,
    cpus: list[int] | None,
    defaults: bool = True,
    jobs: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The full option dict of a fio run: iolab's defaults < the target's < the caller's
    options; ``cpus_allowed`` from ``cpus`` unless the options set it (or ``cpumask``, its other spelling).
    Options naming their own files (``filename``, ``directory``, ``filename_format``), or job
    sections (``jobs``) that each name theirs, take none of the target's (its ``size`` would
    reach past a smaller device's end, or grow a user's file).
    iolab's ``direct=1`` yields to fio's ``direct=0`` where O_DIRECT cannot open the job's file
    (a char device, a pipe, a file system refusing it: ``iolab.machine.directio``).
    ``defaults`` False (a fio command or job file as given, ``iolab.machine.pasted``): neither
    iolab's defaults nor the target's, only ``cpus_allowed``."""
    own_files = _names_files(options) or (bool(jobs) and all(map(_names_files, jobs)))  # the target's are not theirs
    mine = {**DEFAULTS, **({} if own_files else target.fio_options)}
    opts: dict[str, Any] = {**mine, **dict(options)} if defaults else dict(options)
    if (
        defaults
        and "direct" not in options
        and "buffered" not in options
        and why_not_direct(str(opts.get("filename") or ""))
    ):
        opts["direct"] = 0
    if cpus is not None and "cpus_allowed" not in options and "cpumask" not in options:
        opts["cpus_allowed"] = ",".join(str(c) for c in cpus)
    return opts


def _names_files(options: Mapping[str, Any]) -> bool:
    return any(k in options for k in ("filename", "directory", "filename_format"))


def fio_key(options: Mapping[str, Any], target: Target, swept: Mapping[str, Any], jobs: Sequence[Mapping] = ()) -> str:
    """The job key of a fio run: its full options (``job_options``), per-device jobs, the
    target as described and the swept values (``iolab.runs.store.job_key``)."""
    return job_key({**options, "jobs": [dict(j) for j in jobs]} if jobs else dict(options), target.describe(), swept)


def fio_job(
    options: Mapping[str, Any],
    target: Target,
    cpus: list[int] | None,
    swept: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]] = (),
    defaults: bool = True,
) -> tuple[dict[str, Any], str]:
    """A fio run's full options (``job_options``) and its resume key (``fio_key``), made in this
    one place: the campaign's ``PlannedRun.key`` and the key ``iolab.measure.runner`` records
    in params.json are this one, so a resumed search finds every finished cell (jobs naming
    their own files too)."""
    opts = job_options(options, target, cpus, defaults=defaults, jobs=jobs)
    return opts, fio_key(opts, target, swept, jobs)


def host_key(
    options: Mapping[str, Any],
    target: Target,
    hosts: Sequence[Any],
    swept: Mapping[str, Any],
    jobs: Sequence[Mapping] = (),
) -> str:
    """The job key of a run on fio servers: ``fio_key``'s with the hosts' names."""
    extra = {"jobs": [dict(j) for j in jobs]} if jobs else {}
    return job_key({**options, **extra, "hosts": [h.name for h in hosts]}, target.describe(), swept)


def tio_key(flags: Mapping[str, Any], target: str, cpus: Any, swept: Mapping[str, Any]) -> str:
    """The job key of a t/io_uring run (its params.json has flags, not fio options)."""
    return job_key({"t/io_uring": {**TIO_DEFAULTS, **flags}, "cpus": cpus}, target, swept)


@dataclass(frozen=True)
class PlannedRun:
    """One run of a campaign (module docstring). ``options``: fio options over iolab's
    defaults and the target's (t/io_uring flags for that engine); ``cell``: runs of one cell
    share its ``knobs`` (set on ``knob_targets``, default the target, once for the cell's
    consecutive runs) and its stop rule; ``stress_cpus``: stress-ng busy there during the
    run; ``jobs``: one fio job section per entry (a device each); ``hosts``: fio servers (the
    "hosts" engine); ``label``: the run folder's name after its time stamp."""

    options: Mapping[str, Any]
    target: Target
    swept: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    cell: int = 0
    cpus: list[int] | None = None
    knobs: Mapping[str, Any] = field(default_factory=dict)
    knob_targets: tuple[Target, ...] = ()
    stress_cpus: tuple[int, ...] = ()
    jobs: tuple[Mapping[str, Any], ...] = ()
    hosts: tuple[Any, ...] = ()
    engine: str = "fio"

    @property
    def repeat(self) -> int:
        return int(self.swept.get("repeat", 0))

    @cached_property
    def _job(self) -> tuple[dict[str, Any], str]:
        return fio_job(self.options, self.target, self.cpus, self.swept, self.jobs)

    @property
    def full_options(self) -> dict[str, Any]:
        """The run's fio options as fio gets them (``job_options``: iolab's defaults < the
        target's < the run's), made once per run: its plan, its checks and its engine read these."""
        return self._job[0]

    @property
    def key(self) -> str:
        """The one resume key: what the engine records as ``job_key`` in params.json."""
        if self.engine == "t/io_uring":
            return tio_key(self.options, self.target.describe(), self.cpus, self.swept)
        if self.engine == "hosts":
            return host_key(self.full_options, self.target, self.hosts, self.swept, self.jobs)
        return self._job[1]

    def warmup(self) -> PlannedRun:
        """The discarded warm-up run of this run's job: the same job, marked ``warmup``."""
        return replace(self, swept={**self.swept, "warmup": True}, label=f"warmup-{self.label}".rstrip("-"))
