"""``iolab run``, ``search``, ``sysinfo`` and ``cleanup``: the commands that measure or
touch this machine (fio runs, parameter searches, the system snapshot, what a killed iolab
left behind). Each command imports what it needs when it runs: ``iolab --help`` stays fast."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core import paths
from ..core.errors import InputError, IolabError
from ..core.paths import TARGET_HELP
from .reading import print_threads


def _fio_options(extra: list[str]) -> dict[str, str | bool]:
    """``--rw=randread --hipri`` -> {"rw": "randread", "hipri": True}."""
    opts: dict[str, str | bool] = {}
    for i, arg in enumerate(extra):
        key, eq, value = arg[2:].partition("=")
        if not arg.startswith("--") or not key:
            before = extra[i - 1] if i else ""
            spelled = f" (write {before}={arg})" if before.startswith("--") and "=" not in before else ""
            raise InputError(
                f"unexpected argument {arg!r}; fio options are written --name=value{spelled}, e.g. --iodepth=32"
            )
        opts[key] = value if eq else True
    return opts


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

    options = _fio_options(extra)
    validate.check_fio_options(options)
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    runs_dir = validate.writable_dir(args.runs_dir or paths.runs_dir(), "runs folder", "--runs-dir DIR")
    scratch_dir = Path(args.scratch_dir or paths.scratch_dir())
    if parse_spec(args.target)[0] == "scratch":
        validate.writable_dir(scratch_dir, "scratch folder", "--scratch-dir DIR")
    if args.threads and (args.hosts or args.hosts_file):
        raise InputError(
            "--threads samples this machine's threads; it does not reach other hosts: drop it "
            "with --hosts (or run iolab run --threads on each host)"
        )
    if args.log_ms is not None and (args.hosts or args.hosts_file):
        from ..machine.logrequest import log_options  # fio's client writes each host's logs, fio_iops.N.log.HOST

        options.update(log_options(args.log_ms))  # stamps from each job's start: the hosts' clocks are not ours
    from ..stats.analysis import add_cycles_per_io  # slow to import (pandas): once the input is known good
    from ..measure.options import MeasureOptions
    from ..measure.runner import measure

    hosts = None
    if args.hosts or args.hosts_file:
        from ..machine.hosts import hosts_from  # read before a scratch file or loop device is made for them

        hosts = hosts_from(args.hosts, args.hosts_file)
    with open_target(args.target, _target_size(args, options), scratch_dir) as target:
        if hosts:
            result = _run_on_hosts(args, hosts, options, target, cpus, runs_dir)
        else:
            how = MeasureOptions(
                allow_destructive=args.allow_destructive,
                threads=args.threads,
                threads_interval_s=args.threads_interval,
                threads_states=args.threads_states,
                log_ms=args.log_ms,
            )
            result = measure(options, target, cpus=cpus, runs_dir=runs_dir, label="cli", how=how)
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
        )
        if c in table and table[c].notna().any()
    ]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    print(f"stored: {result.path}")
    if args.log_ms is not None:
        print(f"over time (fio's interval logs): iolab series {result.path}")
    if args.threads and (result.path / "samples_threads.csv").exists():
        print(f"\nwhere the threads were (iolab threads {result.path}):")
        print_threads(result.path, "comm,state,syscall,wchan", top=10)
    warnings = table["fio_warnings"].iloc[0] if "fio_warnings" in table and len(table) else ""
    if warnings:
        print(f"iolab run: fio warnings (kept in run.json and the fio_warnings column): {warnings}", file=sys.stderr)
    return 0


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
    from ..core.system import snapshot
    import json

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
    p = add("run", help="one fio run with samplers, stored; any --fio-option=value passes through", allow_abbrev=False)
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
        "--threads",
        action="store_true",
        help="sample thread states beside fio (psn's method; iolab threads RUN_DIR reads them)",
    )
    p.add_argument(
        "--threads-interval",
        type=float,
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
        type=int,
        metavar="N",
        help="fio's interval logs every N ms: IOPS, bandwidth, latency and latency histograms per job "
        "(iolab series RUN_DIR reads them)",
    )
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
