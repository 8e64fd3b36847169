"""One run on many hosts through fio's client/server mode, stored as one run folder.

    from iolab.measure.clients import measure_hosts
    from iolab.measure.planned import PlannedRun
    from iolab.machine.hosts import hosts_from
    run = PlannedRun({"rw": "randread", "iodepth": 16}, target, hosts=tuple(hosts_from("10.0.0.2,10.0.0.3")))
    result = measure_hosts(run, runs_dir="data/runs")
    result.table   # a row per host and direction, and the pooled row (iolab.read.hosttable)

fio starts the same job file on every host together (``fio --client=hosts.list job.fio``)
and returns every host's json+ report. Before any run folder exists every host is checked
(``iolab.machine.hosts.check_hosts``: reachable, accepting, the same fio); the job is judged by
fio's own reading of it on this machine (``iolab.machine.jobcheck``), and a job that writes to a
block device is refused on hosts iolab cannot inspect unless ``allow_destructive``. A host
that fails mid-run is marked failed in ``hosts.json`` with fio's words; the others' results
are kept. The run fails only when no host reported.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import FioError, UnsafeTargetError
from ..core.paths import runs_dir as default_runs_dir
from ..core.runfiles import ARGV_JSON, FIO_JSON, FIO_STDERR, HOSTS_DIR, JOB_FIO, SYSTEM_JSON
from ..core.validate import check_measure
from ..machine.fio import fio_argv, fio_binary, fio_version, read_output, to_jobfile
from ..machine.hosts import Host, check_hosts, is_this_machine, snapshot_on
from ..machine.jobcheck import guard_job_text, mark_created
from ..machine.process import run_pinned
from ..read.fiojson import run_warnings
from ..read.hosttable import HOST_LIST, HOSTS_FILE
from ..runs.store import run_folder, run_table
from .options import MeasureOptions
from .planned import PlannedRun
from .runner import RunResult, held_for


def _refuse_blind_writes(check, hosts: Sequence[Host], allow_destructive: bool) -> None:
    """A job that writes to a block device, on a host that is not this machine, is refused:
    iolab cannot see what that device holds there."""
    blind = [h.name for h in hosts if not is_this_machine(h.address)]
    devices = [f.path for f in check.files if f.kind == "block" and check.writes.get(f.job)]
    if blind and devices and not allow_destructive:
        raise UnsafeTargetError(
            f"the job writes to {', '.join(sorted(set(devices)))} on {', '.join(blind)}, where iolab cannot see "
            "what that device holds; check it there and pass allow_destructive=True (--allow-destructive) "
            "to write to it anyway"
        )


def _failures(hosts: Sequence[Host], doc_data: Mapping[str, Any], said: str, returncode: int) -> dict[str, str]:
    """{host name: fio's words} for the hosts fio returned no report for."""
    reported = {(str(e.get("hostname", "")), int(e.get("port", 0))) for e in doc_data.get("client_stats", [])}
    lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
    out = {}
    for host in hosts:
        if (host.address, host.port) in reported:
            continue
        words = [ln for ln in lines if host.address in ln and not ln.startswith("<")]
        out[host.name] = (
            "; ".join(dict.fromkeys(words)) or "fio returned no report for this host"
        ) + f" (fio exited {returncode})"
    return out


def measure_hosts(
    run: PlannedRun,
    *,
    runs_dir: str | Path | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
    snapshots: bool = True,
) -> RunResult:
    """Run ``run``'s job on every host of ``run.hosts`` at once and store the run (module
    docstring), e.g. ``measure_hosts(PlannedRun(options, target, hosts=hosts, cpus=[0]))``.
    ``run.cpus`` pins the job on every host (``cpus_allowed``); ``run.target`` names the file
    or device each host opens (the same path on each). ``how``: the write guard's
    permission and a timeout (``MeasureOptions``). ``snapshots``: take each host's system
    snapshot (a few tenths of a second per host). Raises HostError (a host not ready) or
    UnsafeTargetError before any run folder exists; FioError when no host reported."""
    with held_for(run.target, run.cpus):
        return _measure_hosts(run, Path(runs_dir or default_runs_dir()), MeasureOptions.of(how), snapshots)


def _measure_hosts(run: PlannedRun, runs_dir: Path, how: MeasureOptions, snapshots: bool) -> RunResult:
    options, target, cpus, swept, jobs = run.options, run.target, run.cpus, run.swept, run.jobs
    label, hosts = run.label or "hosts", list(run.hosts)
    allow_destructive, timeout_s = how.allow_destructive, how.timeout_s
    check_measure(options, runs_dir=runs_dir)
    fio = fio_binary()
    versions = check_hosts(hosts, fio_version(fio))
    jobs = [dict(j) for j in jobs or []]
    opts = dict(run.full_options)  # as PlannedRun.key made it
    key = run.key
    name = str(opts.pop("name", label or "iolab"))
    jobtext = to_jobfile({f"{name}-{i}": {**opts, **j} for i, j in enumerate(jobs)} if jobs else {name: opts})
    check = guard_job_text(jobtext, allow_destructive, fio=fio, cwd=Path(runs_dir).absolute() / ".tmp-run")
    _refuse_blind_writes(check, hosts, allow_destructive)
    with run_folder(runs_dir, label) as folder:
        folder.write_text(JOB_FIO, jobtext)
        folder.write_text(HOST_LIST, "".join(f"{h.fio_line}\n" for h in hosts))
        described = check.describe_target(target)
        folder.write_params(
            {
                "swept": dict(swept or {}),
                "fio_options": opts,
                "files": check.record(),
                "job_key": key,
                "hosts": [h.name for h in hosts],
                **({"jobs": jobs} if jobs else {}),
            },
            cpus,
            described,
        )
        folder.meta["target"] = described
        records = [
            {
                "name": h.name,
                "address": h.address,
                "port": h.port,
                "via": list(h.via),
                "folder": h.folder,
                "fio_version": versions.get(h.name),
                "status": "running",
            }
            for h in hosts
        ]
        folder.write_json(HOSTS_FILE, {"hosts": records})
        if snapshots:
            for h in hosts:
                (folder.path / HOSTS_DIR / h.folder).mkdir(parents=True, exist_ok=True)
                folder.write_json(
                    f"{HOSTS_DIR}/{h.folder}/{SYSTEM_JSON}",
                    {**snapshot_on(h, target.device, cpus), "target_state": target.state},
                )
        argv = fio_argv(Path(JOB_FIO), Path(FIO_JSON), fio)
        argv[-1:-1] = [f"--client={HOST_LIST}"]
        folder.write_json(ARGV_JSON, {"argv": argv, "cwd": "<this run folder>", "hosts": [h.name for h in hosts]})
        start = time.monotonic()
        done = run_pinned(
            argv,
            name="fio client",
            cwd=folder.path,
            timeout_s=timeout_s,
            kept="the hosts' reports, if any, are kept in fio.json",
        )
        mark_created(check)
        folder.write_text(FIO_STDERR, done.stderr)
        folder.meta["wall_s"] = time.monotonic() - start
        report = folder.file(FIO_JSON)
        said = "\n".join([done.stdout, done.stderr, report.read_text(errors="replace") if report.exists() else ""])
        try:
            doc = read_output(report, done.stderr, folder.final / JOB_FIO)
        except Exception:
            failed = _failures(hosts, {}, said, done.returncode)
            _record_hosts(folder, records, failed)
            raise FioError(
                "no host reported: " + "; ".join(f"{k}: {v}" for k, v in failed.items()), done.returncode, done.stderr
            ) from None
        failed = _failures(hosts, doc.data, said, done.returncode)
        _record_hosts(folder, records, failed)
        if len(failed) == len(hosts):
            raise FioError(
                "no host reported: " + "; ".join(f"{k}: {v}" for k, v in failed.items()), done.returncode, done.stderr
            )
        folder.meta["fio_warnings"] = run_warnings(doc, done.stderr) + [
            f"host {k} failed: {v}" for k, v in failed.items()
        ]
        folder.meta["hosts_failed"] = failed
    return RunResult(folder.path, run_table(folder.path))


def _record_hosts(folder, records: list[dict[str, Any]], failed: Mapping[str, str]) -> None:
    for r in records:
        r.update(status="failed", error=failed[r["name"]]) if r["name"] in failed else r.update(status="ok")
    folder.write_json(HOSTS_FILE, {"hosts": records})
