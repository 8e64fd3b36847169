"""Where fio's work runs, against the CPUs iolab locks and samples (``cpus``, ``--cpus``).

A run's CPU figures (cpu_busy_pct, cycles_per_io) are the sampled CPUs' (``iolab.machine.sampling``)
and only those CPUs are locked against other measurements (``iolab.machine.locks``). Options can
put fio's work elsewhere:

* ``cpus_allowed`` / ``cpumask`` naming other CPUs than ``cpus``: refused (InputError);
* io_uring's SQ poll thread (``sqthread_poll``): a kernel thread that busy-polls a CPU of its
  own. Where the kernel puts it depends on the kernel (one kernel inherits the job's CPUs,
  another lets it run anywhere), so iolab names its CPU — ``sqthread_poll_cpu`` = the last of
  ``cpus`` (``pin_sq_threads``) — and refuses a ``sqthread_poll_cpu`` outside ``cpus``;
* more fio processes (``numjobs`` summed over the jobs, SQ threads counted) than ``cpus``:
  said in the run's warnings (they share CPUs; the figures are honest but CPU-bound).

Unpinned runs (``cpus`` None) lock and sample every CPU: nothing to refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import InputError
from ..read.plausible import fio_cpus, sq_thread
from .fio import _fmt
from .jobcheck import Job, _count


def pin_sq_threads(sections: Mapping[str, Mapping[str, Any]], cpus: Sequence[int] | None) -> dict[str, dict]:
    """``sections`` (job name -> options) with ``sqthread_poll_cpu`` set to the last of
    ``cpus`` in each section that polls without naming its CPU; as they are when unpinned."""
    out = {}
    for name, opts in sections.items():
        opts = dict(opts)
        text = {k: _fmt(v) for k, v in opts.items() if k in ("sqthread_poll", "sqthread_poll_cpu") and v is not None}
        polls, cpu = sq_thread(text)
        if cpus and polls and cpu is None and opts.get("sqthread_poll_cpu") is None:
            opts["sqthread_poll_cpu"] = cpus[-1]
        out[name] = opts
    return out


def check_job_cpus(jobs: Sequence[Job], cpus: Sequence[int] | None) -> list[str]:
    """fio's reading of the jobs (``iolab.machine.jobcheck``) against ``cpus``: InputError for
    a job whose CPUs or SQ thread's CPU are not all in ``cpus``; the notes for the run's
    warnings (fio's processes sharing CPUs) otherwise."""
    if not cpus:
        return []
    allowed = set(cpus)
    shown = ",".join(str(c) for c in cpus)
    processes = 0
    for job in jobs:
        o = job.options
        try:
            theirs = fio_cpus(o)
        except ValueError:
            raise InputError(
                f"job [{job.name}]: cannot read cpus_allowed={o.get('cpus_allowed')!r} / cpumask="
                f"{o.get('cpumask')!r}; drop them: iolab pins fio to --cpus {shown} itself"
            ) from None
        if theirs is not None and not theirs <= allowed:
            raise InputError(
                f"job [{job.name}] runs fio on CPU(s) {_list(theirs)} (cpus_allowed/cpumask), but iolab locks and "
                f"samples CPU(s) {shown} (--cpus): its CPU figures would miss them; drop cpus_allowed/cpumask "
                f"or give --cpus {_list(theirs | allowed)}"
            )
        polls, sq_cpu = sq_thread(o)
        if polls and (sq_cpu is None or sq_cpu not in allowed):
            where = "no CPU named (sqthread_poll_cpu)" if sq_cpu is None else f"CPU {sq_cpu}"
            raise InputError(
                f"job [{job.name}] polls with an io_uring SQ thread on {where}, outside the CPU(s) iolab locks and "
                f"samples ({shown}): that thread's CPU time would be neither locked nor counted; give "
                f"sqthread_poll_cpu within --cpus {shown}, or add its CPU to --cpus"
            )
        processes += _count(o.get("numjobs")) * (2 if polls else 1)
    if processes > len(allowed):
        return [
            f"{processes} fio processes and SQ poll threads share {len(allowed)} CPU(s) ({shown}): they take turns; "
            "the figures are those of CPU-bound jobs (give more --cpus, or fewer numjobs)"
        ]
    return []


def _list(cpus) -> str:
    return ",".join(str(c) for c in sorted(cpus))
