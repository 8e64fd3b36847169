"""How a run is measured, beside what it runs: one value every run, sweep, search and study
takes (``how=``), instead of the same keyword arguments passed down by hand.

    how = MeasureOptions(profile=ProfileSpec(), log_ms=500, timeout_s=120)
    measure({"rw": "randread"}, target, cpus=[0], how=how)
    studies.qd.qd_sweep(target, [1, 8, 32], cpus=[0], how=how)

A dict with the same keys works wherever a MeasureOptions does (``MeasureOptions.of``): a
papermill parameter can be a plain mapping. None of these change which job a run is: a
resumed sweep reuses its runs made with other measuring options (``iolab.runs.store.job_key``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError
from ..machine.perf import ProfileSpec
from ..machine.threads import DEFAULT_INTERVAL_S, DEFAULT_STATES


@dataclass(frozen=True)
class MeasureOptions:
    """How each run is measured.

    ``allow_destructive``: let fio write to a device or file that holds data (the write guard,
    ``iolab.machine.jobcheck``, refuses otherwise). ``sample_interval_s``: the CPU samplers'
    period (s). ``timeout_s``: a run's wall-clock limit (s; None: fio's runtime decides, 120 s
    for t/io_uring). ``profile``: perf record/stat around fio (``iolab.machine.perf``).
    ``threads``: the thread-state sampler beside fio every ``threads_interval_s`` (s), for the
    states in ``threads_states`` (``iolab.machine.threads``). ``log_ms``: fio's interval logs
    every ``log_ms`` ms (``iolab.read.series``). ``tio``: the t/io_uring binary (None: the one
    ``make tio`` built). ``drop_caches``: drop the page cache before each run of a sweep or
    campaign (``iolab.machine.knobs.drop_caches``: buffered runs start cold). ``as_given``: the
    job is a fio command or job file as the user gave it (``iolab.machine.pasted``): iolab adds
    none of its defaults and no reporting groups, only what does not change what fio measures;
    the mapping (the command, fio's report options iolab replaced) goes into params.json."""

    allow_destructive: bool = False
    sample_interval_s: float = 0.5
    timeout_s: float | None = None
    profile: ProfileSpec | None = None
    threads: bool = False
    threads_interval_s: float = DEFAULT_INTERVAL_S
    threads_states: str = DEFAULT_STATES
    log_ms: int | None = None
    tio: str | None = None
    drop_caches: bool = False
    as_given: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, value: MeasureOptions | Mapping[str, Any] | None = None, **changes: Any) -> MeasureOptions:
        """``value`` as MeasureOptions (a mapping of its fields, or None: the defaults), with
        ``changes`` on top; InputError naming a key that is not a field."""
        if value is None:
            value = cls()
        elif isinstance(value, Mapping):
            value = cls._from_mapping(value)
        elif not isinstance(value, cls):
            raise InputError(f"how={value!r}: give a MeasureOptions or a mapping of its fields ({', '.join(FIELDS)})")
        return value.replace(**changes) if changes else value

    @classmethod
    def _from_mapping(cls, value: Mapping[str, Any]) -> MeasureOptions:
        _check_names(value)
        return cls(**value)

    def replace(self, **changes: Any) -> MeasureOptions:
        """A copy with ``changes`` (InputError for a name that is not a field)."""
        _check_names(changes)
        return dataclasses.replace(self, **changes)


FIELDS = tuple(f.name for f in dataclasses.fields(MeasureOptions))


def _check_names(value: Mapping[str, Any]) -> None:
    unknown = [str(k) for k in value if k not in FIELDS]
    if unknown:
        raise InputError(f"unknown measuring option {', '.join(unknown)}; the options are {', '.join(FIELDS)}")
