"""``iolab run``, ``search``, ``sysinfo`` and ``cleanup``: the commands that measure or
touch this machine (fio runs, parameter searches, the system snapshot, what a killed iolab
left behind). Each command imports what it needs when it runs: ``iolab --help`` stays fast."""

from __future__ import annotations

import contextlib
import difflib
import json
import shlex
import sys
from pathlib import Path

from ..core import paths
from ..core.errors import InputError, IolabError
from ..core.paths import TARGET_HELP
from ..core.runfiles import SAMPLES_THREADS_CSV
from . import profiling
from .argtypes import finite, whole
from .reading import print_run, print_threads


def _fio_options(extra: list[str], ours: list[str] = ()) -> dict[str, str | bool]:
    """``--rw=randread --hipri`` -> {"rw": "randread", "hipri": True}. ``ours``: iolab run's
    own flags, which a misspelt one (``--cpu 0``) is likely meant for."""
    opts: dict[str, str | bool] = {}
    for i, arg in enumerate(extra):
        key, eq, value = arg[2:].partition("=")
        if not arg.startswith("--") or not key:
            before = extra[i - 1] if i else ""
            spelled = f" (write {before}={arg})" if before.startswith("--") and "=" not in before else ""
            if spelled and (meant := difflib.get_close_matches(before, ours, n=1, cutoff=0.8)):
                raise InputError(f"unexpected argument {arg!r} after {before}: did you mean iolab's {meant[0]} {arg}?")
            raise InputError(
                f"unexpected argument {arg!r}; fio options are written --name=value{spelled}, e.g. --iodepth=32"
            )
        opts[key] = value if eq else True
    return opts


def _fio_jobs(extra: list[str], ours: list[str] = ()) -> tuple[dict[str, str | bool], list[dict[str, str | bool]]]:
    """(global options, jobs) as fio reads its command line: every ``--name=`` starts a job,
    options before the first are global. One job (or none named): ([its options], []), the
    name among them. Two jobs of one name: InputError (each is a row of the table)."""
    starts = [i for i, arg in enumerate(extra) if arg.startswith("--name=")]
    if len(starts) < 2:
        return _fio_options(extra, ours), []
    bounds = [*starts, len(extra)]
    jobs = [_fio_options(extra[lo:hi], ours) for lo, hi in zip(bounds, bounds[1:])]
    names = [str(j["name"]) for j in jobs]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise InputError(f"two jobs named {twice[0]!r}: give each --name= a name of its own")
    return _fio_options(extra[: starts[0]], ours), jobs


def _own_form(extra: list[str], ours: list[str] = ()) -> tuple[dict[str, str | bool], list[dict[str, str | bool]]]:
    """``_fio_jobs`` of iolab's own ``--option=value`` form, a relative ``--filename`` or
    ``--directory`` read from the current folder, as in a pasted command or job file."""
    from ..machine.pasted import anchored_paths

    options, jobs = _fio_jobs(extra, ours)
    return anchored_paths(options, Path.cwd()), [anchored_paths(job, Path.cwd()) for job in jobs]


def _pasted(args, extra: list[str]):
    """The fio command (``-- [sudo] [taskset -c CPUS] fio ...``) or job file (``JOB.fio``) in
    ``extra``, read as fio reads it (``iolab.machine.pasted``), with ``cpus`` (taskset's, or
    --cpus) and ``target`` (the first file fio's reading of it opens); None for iolab's own
    ``--option=value`` form. The write guard judges it here, before a target is opened."""
    command = bool(extra) and (extra[0] == "--" or Path(extra[0]).name in ("fio", "taskset", "sudo"))
    jobfile = (
        len(extra) == 1 and not extra[0].startswith("-") and (extra[0].endswith(".fio") or Path(extra[0]).is_file())
    )
    if "--" in extra[1:] or (extra[:1] == ["--"] and len(extra) == 1):
        raise InputError("iolab's options go before --, the fio command after it: iolab run --cpus 0 -- fio --name=...")
    if not (command or jobfile):
        return None
    from ..core.validate import cpu_list
    from ..machine import pasted
    from ..machine.fio import to_jobfile
    from ..machine.jobcheck import guard_job_text

    if args.hosts or args.hosts_file or args.target != "scratch" or args.target_size is not None:
        raise InputError(
            "a fio command or job file names its own files and runs on this machine: drop --target, "
            "--target-size, --hosts (or give fio options: iolab run --target DEV --rw=randread ...)"
        )
    cpus, words = pasted.split_command(extra) if command else (None, [])
    job = pasted.read_command(words, Path.cwd()) if command else pasted.read_jobfile(extra[0])
    job.source = shlex.join(extra[1:] if extra[0] == "--" else extra)  # as typed, taskset included
    if args.cpus is not None and cpus is not None and cpu_list(args.cpus) != cpus:
        raise InputError(f"--cpus {args.cpus} and taskset -c {','.join(map(str, cpus))} differ: give one of them")
    job.cpus = cpus if cpus is not None else cpu_list(args.cpus) if args.cpus is not None else None
    check = guard_job_text(
        to_jobfile({str(j["name"]): {k: v for k, v in j.items() if k != "name"} for j in job.jobs}),
        args.allow_destructive,
    )
    if job.readonly and not check.read_only:
        why = ", ".join(sum(check.writes.values(), []))
        raise InputError(f"fio's --readonly refuses this job, which fio reads as {why}: drop one of them")
    job.target = pasted.opened_target(check)
    return job


def _target_size(args, options: dict) -> str:
    """The size of the scratch file or loop device to make: --target-size, else fio's own
    --size= when it is a plain size (not a percentage), else 1g."""
    from ..core.validate import parse_size

    if args.target_size is not None:
        return args.target_size
    try:
        parse_size(str(options.get("size", "")))
    except (IolabError, ValueError):
        return "1g"
    return str(options["size"])


def cmd_run(args, extra) -> int:
    from ..core import validate
    from ..machine.target import open_target, parse_spec

    pasted = _pasted(args, extra)  # `-- fio ...` or JOB.fio: the job as fio reads it (iolab.machine.pasted)
    ours = [f"--{name.replace('_', '-')}" for name in vars(args)]
    options, jobs = ({}, pasted.jobs) if pasted else _own_form(extra, ours)
    for given in () if pasted else (options, *jobs):
        validate.check_fio_options(given)
    if jobs and (args.hosts or args.hosts_file):
        raise InputError("several --name= jobs run on this machine only: give one job with --hosts")
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    cpus = validate.check_cpus(pasted.cpus) if pasted else cpus
    runs_dir = validate.writable_dir(args.runs_dir or paths.runs_dir(), "runs folder", "--runs-dir DIR")
    scratch_dir = Path(args.scratch_dir or paths.scratch_dir())
    if parse_spec(args.target)[0] == "scratch" and not pasted:
        validate.writable_dir(scratch_dir, "scratch folder", "--scratch-dir DIR")
    if args.hosts is not None and not args.hosts.strip(" ,") and not args.hosts_file:  # else: this machine, silently
        raise InputError("--hosts is empty: name the fio servers (--hosts 10.0.0.2,10.0.0.3:8766), or leave it out")
    profile = profiling.spec(args)  # InputError: --call-graph without --profile
    if args.profile and (args.hosts or args.hosts_file):
        raise InputError("--profile records perf on this machine's CPUs; it does not reach other hosts: drop it")
    if args.threads and (args.hosts or args.hosts_file):
        raise InputError(
            "--threads samples this machine's threads; it does not reach other hosts: drop it "
            "with --hosts (or run iolab run --threads on each host)"
        )
    if args.log_ms is not None and (args.hosts or args.hosts_file):
        from ..machine.logrequest import log_options  # fio's client writes each host's logs, fio_iops.N.log.HOST

        options.update(log_options(args.log_ms))  # stamps from each job's start: the hosts' clocks are not ours
    from ..measure.options import MeasureOptions
    from ..measure.runner import measure
    from ..stats.cycles import add_cycles_per_io  # slow to import (pandas): once the input is known good

    hosts = None
    if args.hosts or args.hosts_file:
        from ..machine.hosts import hosts_from  # read before a scratch file or loop device is made for them

        hosts = hosts_from(args.hosts, args.hosts_file)
    chosen = contextlib.nullcontext(pasted.target) if pasted else None  # the target its job names
    with chosen or open_target(args.target, _target_size(args, options), scratch_dir) as target:
        if hosts:
            result = _run_on_hosts(args, hosts, options, target, cpus, runs_dir)
        else:
            how = MeasureOptions(
                allow_destructive=args.allow_destructive,
                threads=args.threads,
                threads_interval_s=args.threads_interval,
                threads_states=args.threads_states,
                log_ms=args.log_ms,
                profile=profile,
                as_given=pasted.record() if pasted else None,
            )
            result = measure(options, target, cpus=cpus, runs_dir=runs_dir, label="cli", jobs=jobs, how=how)
    table = add_cycles_per_io(result.table)
    cols = [
        c
        for c in (
            "host",
            "host_status",
            "job",
            "direction",
            "iops",
            "bw_bytes_s",
            "clat_mean_us",
            "clat_p50_us",
            "clat_p99_us",
            "cpu_busy_pct",
            "cpu_freq_mhz",
            "freq_source",
            "cycles_per_io",
            "cycles_per_io_core",
            "other_cpu_pct",
        )
        if c in table and table[c].notna().any()
    ]
    print_run(table, cols, result.path, args.json)
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():  # stdout: the JSON alone
        _said_after(args, result, table)
    return 0


def _said_after(args, result, table) -> None:
    """What ``iolab run`` says after the figures: the logs, threads, profile, fio's warnings, failed checks."""
    if args.log_ms is not None:
        print(f"over time (fio's interval logs): iolab series {result.path}")
    if args.threads and (result.path / SAMPLES_THREADS_CSV).exists():
        print(f"\nwhere the threads were (iolab threads {result.path}):")
        print_threads(result.path, "comm,state,syscall,wchan", top=10)
    if args.profile:
        profiling.report(result.path, table, args.whole_cpu)
    from ..read.run import RunFolder

    said = RunFolder(result.path).meta().get("fio_warnings")  # fio's and iolab's (fio processes sharing CPUs)
    warnings = " | ".join(said) if said else table["fio_warnings"].iloc[0] if "fio_warnings" in table else ""
    if warnings:
        print(f"iolab run: fio warnings (kept in run.json and the fio_warnings column): {warnings}", file=sys.stderr)
    flagged = table["flags"].iloc[0] if "flags" in table and len(table) else ""
    if flagged:  # the last line: these numbers are not to be used as they stand
        print(
            f"iolab run: failed plausibility checks, so the figures above are not to be used as they stand "
            f"(iolab check {result.path}): {flagged}",
            file=sys.stderr,
        )


def _run_on_hosts(args, hosts, options, target, cpus, runs_dir):
    """``iolab run --hosts``: one client/server run (servers started first with --start-servers)."""
    import contextlib

    from ..machine.hosts import start_server
    from ..measure.clients import measure_hosts
    from ..measure.options import MeasureOptions
    from ..measure.planned import PlannedRun

    with contextlib.ExitStack() as servers:
        for host in hosts if args.start_servers else []:
            servers.callback(start_server(host).stop)
        run = PlannedRun(options, target, label="cli-hosts", cpus=cpus, hosts=tuple(hosts), engine="hosts")
        return measure_hosts(run, runs_dir=runs_dir, how=MeasureOptions(allow_destructive=args.allow_destructive))


def cmd_search(args, _extra) -> int:
    from ..measure import search, search_spec  # slow to import (pandas): only for this command

    spec = search_spec.load_spec(args.spec)
    if args.dry_run:
        with search.open_targets(spec) as targets:
            checked = search.check(
                spec,
                targets,
                args.drop_unavailable,
                args.allow_destructive,
                announce=lambda size: print(size, flush=True),  # before its cells are checked: big specs take seconds
            )
        print(search.describe_check(checked, every=args.list_all))
        if checked.refused:
            raise InputError(
                f"{len(checked.refused):,} of {len(checked.cells):,} cells cannot run (the reasons are listed "
                "above): iolab search refuses this spec before its first run; change or remove those values"
            )
        return 0
    runs_dir = Path(args.runs_dir) if args.runs_dir else search.default_folder(spec)
    print(f"iolab search: runs go to {runs_dir} (the same command resumes)", file=sys.stderr)
    table = search.run(
        spec,
        runs_dir,
        drop_unavailable=args.drop_unavailable,
        how={"allow_destructive": args.allow_destructive},
        announce=lambda m: print(m, file=sys.stderr),
    )
    print(search.summary(table, spec))
    return 0


def cmd_sysinfo(args, _extra) -> int:
    from ..core.runfiles import quote
    from ..core.system import snapshot

    name = (args.device or "").strip().removeprefix("/dev/")
    if args.device is not None and (not name or "/" in name or not Path("/sys/class/block", name).exists()):
        raise InputError(
            f"--device {quote(name, 40)}: no block device of that name (/sys/class/block lists them); give one such as "
            "nvme0n1 or /dev/sda, or leave --device out"
        )
    args.device = name or None
    print(json.dumps(snapshot(args.device), indent=1, default=str))
    return 0


def cmd_cleanup(args, _extra) -> int:
    """Repair what dead iolab processes left behind (the ledger), and list what live ones hold."""
    from ..runs.repair import cleanup_report  # slow to import (pandas): only for this command

    print("\n".join(cleanup_report()))
    return 0


def add_commands(add) -> None:
    """The parsers of this module's commands: ``add(name, **kw)`` makes one (``iolab.cli.build_parser``)."""
    # allow_abbrev off: a fio option that begins like one of iolab's (--thread) reaches fio whole
    p = add(
        "run",
        help="one fio run with samplers, stored; any --fio-option=value passes through",
        description="iolab run [OPTIONS] --fio-option=value ... (iolab's defaults, then yours); "
        "iolab run [OPTIONS] -- [taskset -c CPUS] fio ... (a fio command as you would type it); "
        "iolab run [OPTIONS] JOB.fio (a job file). A fio command or job file runs as fio reads it: "
        "docs/command-line.md lists what iolab adds (its report format, cpus_allowed) and why.",
        allow_abbrev=False,
    )
    p.add_argument("--target", default="scratch", help=f"{TARGET_HELP} (default: scratch)")
    p.add_argument(
        "--target-size",
        metavar="SIZE",
        help="size of the scratch file or loop device iolab makes (fio units; default: fio's --size=, "
        "else 1g). --size=... is fio's own option and goes to fio",
    )
    p.add_argument("--cpus", help="CPUs to pin fio to and sample, e.g. 0, 0,1 or 0-3 (as taskset -c)")
    p.add_argument("--runs-dir", help="where run folders go (default data/runs)")
    p.add_argument("--scratch-dir", help="where the scratch file lives (default data/scratch)")
    p.add_argument(
        "--allow-destructive",
        action="store_true",
        help="allow writes to a block device that holds a filesystem, partitions or mounts, "
        "and to an existing file iolab did not create",
    )
    p.add_argument(
        "--hosts",
        help="run on these fio servers at once (fio client/server mode), comma-separated "
        "address[:port] (port 8765 by default); a row per host plus a pooled row",
    )
    p.add_argument(
        "--hosts-file",
        help="YAML: host -> {via: command prefix reaching it, e.g. ssh -tt root@h1}; "
        "every host in it when --hosts is not given",
    )
    p.add_argument(
        "--start-servers",
        action="store_true",
        help="start fio --server on each host through its via: prefix first, stop it after",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="the run's figures as JSON records on stdout (one per job), everything else on stderr",
    )
    p.add_argument(
        "--threads",
        action="store_true",
        help="sample thread states beside fio (psn's method; iolab threads RUN_DIR reads them)",
    )
    p.add_argument(
        "--threads-interval",
        type=finite(0.001, 60),
        default=0.05,
        metavar="S",
        help="with --threads: seconds between passes over /proc (default 0.05)",
    )
    p.add_argument(
        "--threads-states",
        default="RD",
        metavar="LETTERS",
        help="with --threads: the thread states kept (default RD: running and uninterruptible; 'all')",
    )
    p.add_argument(
        "--log-ms",
        type=whole(1, 3_600_000),
        metavar="N",
        help="fio's interval logs every N ms: IOPS, bandwidth, latency and latency histograms per job "
        "(iolab series RUN_DIR reads them)",
    )
    profiling.add_arguments(p)
    p.set_defaults(func=cmd_run)
    p = add(
        "search",
        help="run a parameter search spec (YAML): cells in seeded random order, repeats, resumable",
        description="Runs the Cartesian product of a spec's axes (fio options, knobs, cores, devices, "
        "stress, siblings) with repeats; killed at any moment, the same command resumes and "
        "ends with every (cell, repeat) exactly once. See iolab.measure.search and "
        "data/examples/search_small.yaml.",
    )
    p.add_argument("spec", help="the search spec (YAML)")
    p.add_argument("--runs-dir", help="where its runs go (default data/runs/search-<name>)")
    p.add_argument(
        "--drop-unavailable",
        action="store_true",
        help="run without the axes/values this machine cannot vary (they are listed first)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the spec and every cell, print the plan (its size and wall time first, illegal cells "
        "with why, the first and last cells), run nothing; exit 1 when a cell cannot run",
    )
    p.add_argument(
        "--list-all", action="store_true", help="with --dry-run: list every cell, not only the first and last"
    )
    p.add_argument(
        "--allow-destructive",
        action="store_true",
        help="allow writes to a block device that holds a filesystem, partitions or mounts, "
        "and to an existing file iolab did not create",
    )
    p.set_defaults(func=cmd_search)
    p = add("sysinfo", help="the system snapshot as JSON")
    p.add_argument("--device", help="block device name for queue knobs, e.g. nvme0n1")
    p.set_defaults(func=cmd_sysinfo)
    p = add(
        "cleanup",
        help="release loop devices, restore knobs, stop fio and mark runs that a killed iolab process left behind",
    )
    p.set_defaults(func=cmd_cleanup)
