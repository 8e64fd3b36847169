"""``iolab`` commands: a thin shell over the library (errors become one line and exit 1).

Every iolab error and OS error (permission, read-only file system, no space, a folder given
for a file) is one line on stderr, ``iolab <cmd>: <what happened>; <what to do>``, exit 1;
``--debug`` shows the traceback too. Ctrl-C: one line, exit 130. Usage errors: argparse's
message, exit 2.

    iolab run --target scratch --rw=randread --bs=4k --iodepth=32   # any fio long option
    iolab parse fio.json --format csv
    iolab table data/runs --format json        # every run of a folder (cached in it)
    iolab knee table.csv --x qd --y iops
    iolab fold perf.script.txt --kernel        # or a perf.data file
    iolab threads RUN_DIR --by comm,state      # thread states of a run made with iolab run --threads
    iolab series RUN_DIR --format csv          # fio's interval logs of a run made with iolab run --log-ms N
    iolab sysinfo
    iolab demo
    iolab lab --port 8889                      # JupyterLab on notebooks/, as make lab
    iolab seeds --quick --out DIR              # the seed write-ups reproduced here, a page per seed
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from pathlib import Path

from .core import paths, signals
from .core.errors import InputError, IolabError, printable
from .core.paths import TARGET_HELP


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
    from .core.validate import parse_size

    if args.target_size is not None:
        return args.target_size
    try:
        parse_size(str(options.get("size", "")))
    except (IolabError, ValueError):
        return "1g"
    return str(options["size"])


def cmd_run(args, extra) -> int:
    from .core import validate
    from .machine.target import open_target, parse_spec

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
        from .read.series import log_options  # fio's client writes each host's logs, fio_iops.N.log.HOST

        options.update(log_options(args.log_ms))  # stamps from each job's start: the hosts' clocks are not ours
    from .stats.analysis import add_cycles_per_io  # slow to import (pandas): once the input is known good
    from .measure.runner import measure

    hosts = None
    if args.hosts or args.hosts_file:
        from .machine.hosts import hosts_from  # read before a scratch file or loop device is made for them

        hosts = hosts_from(args.hosts, args.hosts_file)
    with open_target(args.target, _target_size(args, options), scratch_dir) as target:
        if hosts:
            result = _run_on_hosts(args, hosts, options, target, cpus, runs_dir)
        else:
            result = measure(
                options,
                target,
                cpus=cpus,
                runs_dir=runs_dir,
                allow_destructive=args.allow_destructive,
                label="cli",
                threads=args.threads,
                threads_interval_s=args.threads_interval,
                threads_states=args.threads_states,
                log_ms=args.log_ms,
            )
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
        _print_threads(result.path, "comm,state,syscall,wchan", top=10)
    warnings = table["fio_warnings"].iloc[0] if "fio_warnings" in table and len(table) else ""
    if warnings:
        print(f"iolab run: fio warnings (kept in run.json and the fio_warnings column): {warnings}", file=sys.stderr)
    return 0


def _run_on_hosts(args, hosts, options, target, cpus, runs_dir):
    """``iolab run --hosts``: one client/server run (servers started first with --start-servers)."""
    import contextlib

    from .measure.clients import measure_hosts
    from .machine.hosts import start_server

    with contextlib.ExitStack() as servers:
        for host in hosts if args.start_servers else []:
            servers.callback(start_server(host).stop)
        return measure_hosts(
            options,
            target,
            hosts=hosts,
            cpus=cpus,
            runs_dir=runs_dir,
            allow_destructive=args.allow_destructive,
            label="cli-hosts",
        )


def cmd_search(args, _extra) -> int:
    from .measure import search  # slow to import (pandas): only for this command

    spec = search.load_spec(args.spec)
    if args.dry_run:
        with search.open_targets(spec) as targets:
            runs = search.plan(spec, targets, args.drop_unavailable, args.allow_destructive)
        print(search.describe_plan(runs, spec))
        return 0
    runs_dir = Path(args.runs_dir) if args.runs_dir else search.default_folder(spec)
    print(f"iolab search: runs go to {runs_dir} (the same command resumes)", file=sys.stderr)
    table = search.run(
        spec,
        runs_dir,
        drop_unavailable=args.drop_unavailable,
        allow_destructive=args.allow_destructive,
        announce=lambda m: print(m, file=sys.stderr),
    )
    print(search.summary(table, spec))
    return 0


def cmd_batch(args, _extra) -> int:
    from .report import batch  # slow to import (papermill): only for this command

    manifest = batch.load_manifest(args.manifest)

    def said(record) -> None:
        line = f"{record['name']}: {record['status']} in {record['duration_s']:g} s"
        print(
            line if record["status"] == "ok" else f"{line}: {_one_line(record['error'].splitlines()[0])}",
            file=sys.stderr,
        )

    records = batch.run_batch(manifest, out=args.out, jobs=args.jobs, on_done=said)
    failed = [r["name"] for r in records if r["status"] != "ok"]
    out = Path(records[0]["output"] or ".").parent.parent if records else Path(args.out or ".")
    print(f"{len(records) - len(failed)} of {len(records)} runs ok; index: {out / 'index.html'}")
    if failed:
        print(
            f"iolab batch: {len(failed)} run(s) failed ({', '.join(failed)}); their notebooks keep papermill's "
            "error banner. Fix and run the same command again: only failed or missing runs re-run",
            file=sys.stderr,
        )
        return 3
    return 0


def cmd_seeds(args, _extra) -> int:
    from .core import validate
    from .report import seeds  # slow to import (papermill): only for this command

    level = "smoke" if args.smoke else "quick" if args.quick else "full"
    devices = [d.strip() for d in args.device or [] if d.strip()]
    for dev in devices:
        if not Path(dev).exists():
            raise InputError(
                f"--device {dev}: no such device; give a block device such as /dev/nvme0n1 "
                "(or none: the scratch default)"
            )
        if not stat.S_ISBLK(os.stat(dev).st_mode):
            raise InputError(
                f"--device {dev} is not a block device: give one such as /dev/nvme0n1 (a file or "
                "folder is not measured here; without --device the seeds use iolab's scratch file)"
            )
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    out = validate.writable_dir(args.out or seeds.default_out(), "seeds folder", "--out DIR")
    chosen = seeds.load_seeds(args.only)
    todo = seeds.plan(
        chosen,
        out,
        level,
        devices=devices,
        cpus=cpus,
        allow_destructive=args.allow_destructive,
        opt_in_device_changes=args.opt_in_device_changes,
    )
    print(seeds.describe(todo, level), file=sys.stderr if not args.dry_run else sys.stdout)
    if args.dry_run:
        return 0

    def said(record) -> None:
        line = f"  {record['name']}: {record['status']} in {record['duration_s']:g} s"
        print(
            line if record["status"] == "ok" else f"{line}: {_one_line(record['error'].splitlines()[0])}",
            file=sys.stderr,
        )

    records = seeds.run(todo, out, level, devices=devices, on_done=said)
    failed = [f"{ident}/{r['name']}" for ident, recs in records.items() for r in recs if r["status"] != "ok"]
    print(
        f"{sum(len(r) for r in records.values()) - len(failed)} of {len(todo)} experiments ok; "
        f"pages: {Path(out) / 'index.html'}"
    )
    if failed:
        print(
            f"iolab seeds: {len(failed)} experiment(s) failed ({', '.join(failed)}); their pages say why. "
            "Fix and run the same command again: only failed or missing experiments re-run",
            file=sys.stderr,
        )
        return 3
    return 0


def cmd_parse(args, _extra) -> int:
    from .core import validate

    if len(args.file) > 1 and not args.pool:
        raise InputError(
            f"{len(args.file)} files given; parse one at a time, or add --pool for one row "
            "per direction pooling them all"
        )
    if args.files_are and not args.pool:
        raise InputError("--files-are says how --pool treats several files; add --pool")
    texts = [
        validate.input_file(f, "fio JSON file", inside=("fio.json", "tio.txt")).read_text(errors="replace")
        for f in args.file
    ]
    from .read.fiojson import parse_output  # slow to import (pandas): once the files are known to be there
    from .read.pool import pool_outputs
    from .read.tio import looks_like_tio, parse_tio

    tio = [f for f, text in zip(args.file, texts) if looks_like_tio(text)]
    if args.pool and tio:
        raise InputError(
            f"{tio[0]} is t/io_uring output, which has no latency bins to pool; "
            "--pool takes fio JSON output (json+ for percentiles)"
        )
    if args.pool:
        table = pool_outputs(args.file, files=args.files_are or "repeats")
    else:
        table = parse_tio(args.file[0]) if tio else parse_output(args.file[0])
    # job names and fio's words come from the file: no raw control characters reach the terminal
    if args.format == "json":
        print(printable(table.to_json(orient="records", indent=1)))
    else:
        sys.stdout.write(printable(table.to_csv(index=False)))
    return 0


def cmd_table(args, _extra) -> int:
    import warnings

    from .core.atomic import write_atomic

    root, out = Path(args.dir), Path(args.output) if args.output else None
    if not root.is_dir():
        raise InputError(
            f"{root}{' is a file, not a folder' if root.exists() else ': no such folder'}; give "
            "the folder that holds run folders, e.g. data/runs or a study's runs folder"
        )
    if args.format == "parquet" and out is None:
        raise InputError(
            "--format parquet is binary, not for the terminal: add --output FILE, e.g. --output table.parquet"
        )
    if out is not None and out.is_dir():
        raise InputError(f"--output {out} is a folder; give a file name, e.g. {out / ('table.' + args.format)}")
    if out is not None and not out.parent.is_dir():
        raise InputError(f"--output {out}: there is no folder {out.parent}; create it or choose another --output")
    from .runs.runcache import (
        load_cached,
        statuses,
        write_parquet,
    )  # slow to import (pandas): once the input is known good

    status = None if args.status == "all" else args.status
    with warnings.catch_warnings(record=True) as skipped:  # unreadable runs: one line each, not a traceback
        warnings.simplefilter("always")
        table = load_cached(root, status=status, cache=not args.no_cache)
    for warning in skipped:
        print(f"iolab table: {warning.message}", file=sys.stderr)
    if table.empty:
        counts = statuses(root)
        if not counts:
            deeper = sorted({p.parent.parent for p in root.glob("*/*/run.json")})
            raise InputError(
                f"{root} holds no run folders (<run>/run.json); give the folder that holds "
                + (f"them, e.g. {deeper[0]}" if deeper else "them, e.g. data/runs or a study's runs folder")
            )
        have = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        raise InputError(
            f"{root} holds no {status + ' ' if status else ''}run that can be read (it has {have})"
            + ("; --status all shows every run" if status else "; the lines above say why")
        )
    if args.format == "parquet":
        write_parquet(table, out)
    else:
        text = table.to_json(orient="records", indent=1) + "\n" if args.format == "json" else table.to_csv(index=False)
        if out:
            write_atomic(out, text)
        else:
            sys.stdout.write(text)
    if out:
        print(f"iolab table: {len(table)} rows of {table['run_id'].nunique()} runs -> {out}", file=sys.stderr)
    return 0


def cmd_knee(args, _extra) -> int:
    from .stats.analysis import knee_with_interval  # slow to import (pandas): only for this command

    table = _read_curve(args.csv, args.x, args.y)
    est = knee_with_interval(
        table[args.x],
        table[args.y],
        log2_x=not args.linear,
        n_boot=args.resamples,
        seed=args.seed,
        level=args.level,
        name=args.x,
        method=args.method,
    )
    print("none" if est.x is None else f"{est.x:g}")  # stdout: the knee alone, for scripts
    lead = (
        f"knee {args.x} {est.x:g}. {est.note}"
        if est.x is not None
        else "no knee: " + est.note.removeprefix("No knee: ")
    )
    print(f"iolab knee: {lead}", file=sys.stderr)  # stderr: the interval and the rule's word
    return 0


def _read_curve(csv: str, x: str, y: str):
    """The x and y columns of a CSV as numbers; InputError for a missing, empty or
    unreadable file, a missing column, or a value that is not a number."""
    import pandas as pd  # slow to import: only for this command

    from .core import validate

    path = validate.input_file(csv, "CSV file")
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{csv} is empty; give a CSV with a header row and columns {x!r} and {y!r}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{csv} is not a CSV pandas can read ({str(exc).strip().splitlines()[0]}); "
            f"give a comma-separated file with columns {x!r} and {y!r}"
        ) from None
    for col in (x, y):
        if col not in table:
            raise InputError(
                f"{csv} has no column {col!r}; it has: {', '.join(map(str, table.columns))}; "
                "name the columns with --x and --y"
            )
    if table.empty:
        raise InputError(f"{csv} has a header but no rows; give one row per point of the curve")
    for col in (x, y):
        numbers = pd.to_numeric(table[col], errors="coerce")
        bad = table[col][numbers.isna() & table[col].notna()]
        if len(bad):
            raise InputError(
                f"{csv} column {col!r} has {bad.iloc[0]!r} (row {bad.index[0] + 1}), which is "
                "not a number; give numbers only (empty cells are skipped)"
            )
        table[col] = numbers
    return table


def cmd_fold(args, _extra) -> int:
    from .read.fold import FoldOptions, fold_file

    opts = FoldOptions(
        pid=args.pid,
        tid=args.tid,
        kernel=args.kernel or args.all,
        jit=args.jit or args.all,
        addrs=args.addrs,
        event_filter=args.event_filter or "",
    )
    path = Path(args.input)
    if not path.is_file() or not os.access(path, os.R_OK):  # validate.input_file says why: its import is slow
        from .core import validate

        validate.input_file(args.input, "perf script text or perf.data file", inside=("perf.data", "perf.folded"))
    with open(path, "rb") as f:
        is_perf_data = f.read(8) == b"PERFILE2"
    if is_perf_data:
        from .machine.perf import fold_perf_data  # perf script streamed into the folder

        folded = fold_perf_data(path, opts)
    else:
        folded = fold_file(path, opts)
    if not folded.has_frames:
        raise InputError(_no_stacks(path, folded))
    sys.stdout.write(printable(folded.text()))  # function names from the file: no raw control characters
    if folded.skipped_other_events:
        print(
            f"iolab fold: kept only '{folded.event}' samples; skipped {folded.skipped_other_events} "
            "of other events (--event-filter to choose)",
            file=sys.stderr,
        )
    if folded.unrecognized_lines:
        print(f"iolab fold: {folded.unrecognized_lines} lines not recognised", file=sys.stderr)
    return 0


def _no_stacks(path: Path, folded) -> str:
    """Why ``iolab fold`` has nothing to print, and what to give it instead."""
    seen = [
        f"{n} {what}"
        for n, what in (
            (folded.samples, "sample(s) without one"),
            (folded.unrecognized_lines, "line(s) not recognised"),
        )
        if n
    ]
    what = (
        "is empty"
        if path.stat().st_size == 0
        else "holds no perf script sample with a call chain" + (f" ({', '.join(seen)})" if seen else "")
    )
    return (
        f"{path} {what}; give the output of `perf script` on a profile recorded with call graphs "
        "(`perf record -g`), or its perf.data file"
    )


def _print_threads(
    runs: Path, by: str, *, frames: int = 3, top: int | None = None, fmt: str = "text", scope: str = "run"
) -> None:
    from .read import threadstates  # slow to import (pandas): only for these commands

    tab = threadstates.table(runs, by, frames=frames, scope=scope)
    shown = tab.head(top) if top else tab
    if fmt == "csv":
        sys.stdout.write(shown.to_csv(index=False))
    elif fmt == "json":
        print(shown.to_json(orient="records", indent=1))
    else:
        print(
            shown.to_string(index=False, float_format=lambda v: f"{v:,.2f}")
            if len(shown)
            else "no thread was active in the sampled states"
        )
        if top and len(tab) > top:
            print(f"({len(tab) - top} more rows: --top 0 shows them all)")
    note = threadstates.notes(runs, scope)
    if note:
        print(f"iolab threads: {note}", file=sys.stderr)


def cmd_threads(args, _extra) -> int:
    _print_threads(
        Path(args.run_dir),
        args.by,
        frames=args.frames,
        top=args.top,
        fmt=args.format,
        scope="all" if args.all else "run",
    )
    return 0


def cmd_series(args, _extra) -> int:
    from .read import series  # slow to import (pandas): only for this command

    s = series.read_series(Path(args.run_dir))
    if args.format == "json":
        print(s.table.to_json(orient="records", indent=1))
    else:
        sys.stdout.write(s.table.to_csv(index=False))
    print(f"iolab series: {s.note()}", file=sys.stderr)
    return 0


def cmd_check(args, _extra) -> int:
    from .read import checks
    from .core import validate
    from .core.validate import parse_size

    runs = []
    for given in args.run_dir:
        path = validate.input_file(given, "run folder") if not Path(given).is_dir() else Path(given)
        runs += (
            [path]
            if (path / "run.json").exists()
            else [  # every run below, sweeps' folders too
                r.parent for r in sorted(path.rglob("run.json")) if not any(p.startswith(".tmp-") for p in r.parts)
            ]
        )
    if not runs:
        raise InputError(f"no run folders in {', '.join(args.run_dir)} (a run folder holds run.json)")
    ceiling = parse_size(args.ceiling) if args.ceiling else None
    failed = unreadable = 0
    for run in runs:
        if not (run / "fio.json").exists():
            print(f"{run}: no fio report (failed, interrupted or a t/io_uring run): nothing to check")
            continue
        try:
            found = checks.run_checks(run, ceiling_bytes_s=ceiling, latency_floor_us=args.latency_floor_us)
        except IolabError as exc:  # a file it cannot read: one line naming it; the other runs are checked
            if len(runs) == 1:
                raise
            from .runs.store import skip_message

            print(f"iolab check: {_one_line(skip_message(run, exc))}", file=sys.stderr)
            unreadable += 1
            continue
        stored = "" if (run / checks.FILE).exists() else " (re-derived: stored before checks were)"
        print(f"{run}{stored}")
        for c in found:
            mark = {True: "ok  ", False: "FLAG", None: "--  "}[c.passed]
            print(
                f"  {mark} {c.name:14} {c.direction:6} {c.words}" + (f"  [{c.threshold}]" if c.passed is False else "")
            )
        failed += any(c.passed is False for c in found)
    print(
        f"{failed} of {len(runs)} runs flagged"
        + (f"; {unreadable} could not be read (said above, on stderr)" if unreadable else "")
    )
    return 3 if failed else 1 if unreadable else 0


def cmd_sysinfo(args, _extra) -> int:
    from .core.system import snapshot
    import json

    print(json.dumps(snapshot(args.device), indent=1, default=str))
    return 0


def cmd_cleanup(args, _extra) -> int:
    """Repair what dead iolab processes left behind (the ledger), and list what live ones hold."""
    from .runs.repair import cleanup_report  # slow to import (pandas): only for this command

    print("\n".join(cleanup_report()))
    return 0


def cmd_demo(args, _extra) -> int:
    from .core.validate import fio_time  # slow to import (pandas): only for this command

    from .report.demo import DEFAULT_RUNTIME_S, run_demo

    runtime_s = DEFAULT_RUNTIME_S if args.runtime is None else args.runtime
    try:
        fio_time(runtime_s)
    except InputError as exc:
        raise InputError(f"--runtime {runtime_s:g}: {exc}") from None
    for path in run_demo(out_dir=Path(args.out) if args.out else paths.PAPERMILL_RUNS, runtime_s=runtime_s):
        print(f"wrote {path}")
    return 0


def _papermill_value(text: str):
    """papermill's -p: True/False/None, an int, a float, else the text."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def cmd_nvmelab(args, _extra) -> int:
    from .report import nvmelab

    spec = nvmelab.LabSpec(
        controllers=args.controllers,
        namespace_size=args.namespace_size,
        cpus=args.vcpus,
        memory_mb=args.memory_mb,
        poll_queues=args.poll_queues,
        timeout_s=args.timeout,
    )
    what = args.what
    if not what:
        raise InputError(
            "give a notebook (iolab nvmelab notebooks/02_single_core_tuning_ladder.ipynb) or a "
            "command after '--' (iolab nvmelab -- nvme list)"
        )
    notebook = len(what) == 1 and what[0].endswith(".ipynb")
    if args.parameter and not notebook:
        raise InputError("-p sets a notebook's parameter: give one notebook (.ipynb), not a command")
    params = {name.strip(): _papermill_value(value) for name, value in args.parameter}
    if notebook:  # checked (parameters too) before the boot
        what, output = nvmelab.notebook_job(what[0], params, spec)
    print(
        f"iolab nvmelab: booting a QEMU {nvmelab.accel().upper()} guest with {spec.controllers} emulated NVMe "
        f"controller(s) of {spec.namespace_size}: its numbers are an emulator's, never a device's",
        file=sys.stderr,
        flush=True,
    )
    result = nvmelab.run_notebook_job(what, output, spec) if notebook else nvmelab.run(what, spec)
    print(
        f"iolab nvmelab: guest ({result.accel}) booted in {result.boot_s:.1f} s; the command exited "
        f"{result.returncode} after {result.wall_s:.1f} s in all",
        file=sys.stderr,
    )
    return result.returncode


def cmd_publish(args, _extra) -> int:
    from .report.publish import publish, unfinished  # nbconvert and papermill are slow to import: only for this command

    html = publish(args.notebook, args.output)
    print(f"wrote {html}")
    note = unfinished(args.notebook)
    if note:
        print(f"iolab publish: {_one_line(note)} The write-up says so at its top.", file=sys.stderr)
    return 0


def cmd_lab(args, extra) -> int:
    from .report.lab import serve

    serve(args.notebook_dir or paths.NOTEBOOKS, port=args.port, ip=args.ip, extra=extra)
    return 1  # serve returns only by raising


def cmd_reproduce(args, _extra) -> int:
    from .report.reproduce import reproduce  # slow to import (pandas, papermill): only for this command

    report = reproduce(args.executed, out_dir=args.out, tolerance_pct=args.tolerance_pct)
    print(report.text())
    return 0 if report.agrees else 3  # 3: a result drifted (1 is an error, 130 Ctrl-C)


class _Skipped:
    """A subcommand's parser not built (``build_parser(only=...)``): its arguments are ignored."""

    def add_argument(self, *args, **kw) -> None:
        pass

    def set_defaults(self, **kw) -> None:
        pass

    def add_mutually_exclusive_group(self, **kw) -> "_Skipped":
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, just that subcommand's parser is built (a command
    such as ``iolab fold`` must start fast: building all of them takes several ms)."""
    parser = argparse.ArgumentParser(prog="iolab", description=__doc__.split("\n")[0])
    parser.names = []
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    common = argparse.ArgumentParser(add_help=False)  # --debug after the command too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kw) -> argparse.ArgumentParser:
        parser.names.append(name)
        return sub.add_parser(name, parents=[common], **kw) if only in (None, name) else _Skipped()

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
    p.add_argument("--dry-run", action="store_true", help="check the spec and every cell, print the plan, run nothing")
    p.add_argument(
        "--allow-destructive",
        action="store_true",
        help="allow writes to a block device that holds a filesystem, partitions or mounts, "
        "and to an existing file iolab did not create",
    )
    p.set_defaults(func=cmd_search)
    p = add(
        "batch",
        help="run a notebook over parameter sets from a YAML manifest; resumable; index page",
        description="Runs a manifest's notebook once per run (runs: name + parameters, or a grid), each "
        "into OUT/<name>/ with its executed notebook, write-up and run.json; a failed run is "
        "kept and the batch goes on (exit 3 when any failed). Running it again re-runs only "
        "failed or missing runs. OUT/batch.json and OUT/index.html list them all.",
    )
    p.add_argument("manifest", help="the batch manifest (YAML): notebook, defaults, runs and/or grid")
    p.add_argument("--out", help="output folder (default: the manifest's out:, else batch-<manifest> beside it)")
    p.add_argument("--jobs", type=int, help="runs at once, as separate processes (default: the manifest's jobs:, 1)")
    p.set_defaults(func=cmd_batch)
    p = add(
        "seeds",
        help="reproduce the seed write-ups here: one batch per seed, then a page per seed with "
        "each published figure beside this machine's",
        description="Runs the notebooks each seed manifest (data/seeds/*.yaml) names, one iolab batch per "
        "seed into OUT/seed-NNN/ (resumable: the same command runs only what failed or is "
        "missing; a failed experiment is kept and the rest go on, exit 3), then writes "
        "OUT/seed-NNN.html (every published figure beside the local one, with its interval, "
        "ratio and flags) and OUT/index.html. Without --device: the scratch file, and "
        "tmpfs-backed loop devices where a step needs a block device (root).",
    )
    p.add_argument(
        "--device",
        nargs="+",
        metavar="DEV",
        help="block device(s) to measure (the search uses all, "
        "the other experiments the first); default: the scratch default",
    )
    p.add_argument("--cpus", help="CPUs to use, e.g. 0 or 2-3 (the single-core experiments use the first)")
    p.add_argument("--only", help="these seeds only, e.g. 000,002")
    level = p.add_mutually_exclusive_group()
    level.add_argument("--quick", action="store_true", help="short runtimes: about 10 minutes on a 2-core VM")
    level.add_argument(
        "--smoke", action="store_true", help="the smallest settings (the test suite's): plumbing, not numbers"
    )
    p.add_argument("--out", help="output folder (default papermill_runs/seeds)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (every notebook run, its fio runs) and the time it should take; run nothing",
    )
    p.add_argument(
        "--allow-destructive",
        action="store_true",
        help="allow writes to a device that holds data (the seeds only read; passed to every notebook)",
    )
    p.add_argument(
        "--opt-in-device-changes",
        action="store_true",
        help="let the ladder change an NVMe device setting (interrupt coalescing; always restored)",
    )
    p.set_defaults(func=cmd_seeds)
    p = add("parse", help="any fio JSON output (or t/io_uring text) -> the tidy table")
    p.add_argument("file", nargs="+", help="fio output file(s); several only with --pool")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument(
        "--pool",
        action="store_true",
        help="one row per direction pooling every job of every file: IOPS summed over jobs, "
        "percentiles from the summed json+ bins (iolab.read.pool)",
    )
    p.add_argument(
        "--files-are",
        choices=("repeats", "concurrent"),
        help="with --pool: files are repeats (IOPS averaged, the default) or ran at the same time (summed)",
    )
    p.set_defaults(func=cmd_parse)
    p = add(
        "table",
        help="the tidy table of a folder of runs (one row per run and direction), cached",
        description="The tidy table of every run folder in DIR (DIR/<run>/run.json; sub-folders such "
        "as warmup/ are not included): one row per run and direction, the swept values as "
        "columns, re-derived from the run folders. A cache in DIR (.iolab-table.parquet) "
        "re-derives only new or changed runs, so thousands of runs load in seconds.",
    )
    p.add_argument("dir", help="a folder of run folders, e.g. data/runs or a study's runs folder")
    p.add_argument(
        "--format",
        choices=("csv", "json", "parquet"),
        default="csv",
        help="csv (default) or json records on stdout; parquet needs --output",
    )
    p.add_argument("--output", help="write the table to FILE instead of stdout")
    p.add_argument(
        "--status",
        choices=("all", "ok", "failed", "interrupted"),
        default="ok",
        help="the runs to include (default ok)",
    )
    p.add_argument("--no-cache", action="store_true", help="derive every run again; read and write no cache")
    p.set_defaults(func=cmd_table)
    p = add(
        "knee",
        help="knee of a curve in a CSV (prints its x, or 'none')",
        description="Kneedle's most prominent knee of the median y per x (x may repeat: one row "
        "per repeat). stdout is one line, the knee's x or 'none', for scripts. stderr is "
        "one line for people: the knee's bootstrap interval over the repeats ('iolab knee: "
        "knee qd 16. 92 % of 1000 resamples of the repeats put the knee in [8, 16]') and "
        "whether the 95 %-of-peak rule agrees; or why there is no knee.",
    )
    p.add_argument("csv")
    p.add_argument("--x", required=True, help="column for x (e.g. qd); may repeat (one row per repeat)")
    p.add_argument("--y", required=True, help="column for y (e.g. iops)")
    p.add_argument("--linear", action="store_true", help="use x as is instead of log2(x)")
    p.add_argument(
        "--resamples",
        type=int,
        default=1000,
        help="bootstrap resamples of the repeats for the interval (default 1000; 0: none)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0: repeatable)")
    p.add_argument("--level", type=float, default=0.9, help="share of resamples the interval holds (default 0.9)")
    p.add_argument(
        "--method",
        choices=["kneedle", "power"],
        default="kneedle",
        type=lambda s: s.strip().lower(),
        help="kneedle (default): the bend of the curve; power: the x of maximum y²/x "
        "(throughput ÷ latency by Little's law, Kleinrock's optimal operating point)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="(kept for old scripts: why there is no knee is always said on stderr)",
    )
    p.set_defaults(func=cmd_knee)
    p = add("fold", help="perf script text (or perf.data) -> folded stacks, as stackcollapse-perf.pl")
    p.add_argument("input", help="perf script output, or a perf.data file")
    for flag, text in (
        ("--pid", "append -PID to the process name"),
        ("--tid", "append -PID/TID"),
        ("--kernel", "mark kernel frames _[k]"),
        ("--jit", "mark JIT frames _[j]"),
        ("--all", "--kernel and --jit"),
        ("--addrs", "keep addresses of unknown frames"),
    ):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--event-filter", help="keep this event (default: the first one seen)")
    p.set_defaults(func=cmd_fold)
    p = add(
        "threads",
        help="where a run's threads were: thread states sampled beside it (iolab run --threads)",
        description="psn's table of a run made with --threads (or threads=True): one row per thread name "
        "(digits as *: kworker/u*:*), state (R running, D uninterruptible: usually I/O), system "
        "call, wait channel and innermost kernel frames, with the samples, the threads active on "
        "average (samples / ticks) and the share of the run's ticks they were active in. A folder "
        "of run folders pools them all. Shown: the run's own threads (fio and its job processes) and "
        "the kernel threads; other processes' are counted on stderr (--all shows them).",
    )
    p.add_argument("run_dir", help="a run folder made with --threads (or a folder of them)")
    p.add_argument(
        "--by",
        default="comm,state,syscall,wchan,kstack",
        help="what to group by, comma-separated among comm,state,syscall,wchan,kstack (default: all of them)",
    )
    p.add_argument("--frames", type=int, default=3, help="innermost kernel frames in kstack (default 3)")
    p.add_argument("--top", type=int, default=20, help="rows to print (default 20; 0: all)")
    p.add_argument(
        "--all",
        action="store_true",
        help="every process's threads (default: the run's own, fio and its jobs, and the kernel threads)",
    )
    p.add_argument("--format", choices=("text", "csv", "json"), default="text")
    p.set_defaults(func=cmd_threads)
    p = add(
        "series",
        help="fio's interval logs of a run (iolab run --log-ms N): one row per interval, job and direction",
        description="The time series of a run made with --log-ms N (or log_ms=N): one row per interval, job and "
        "direction with t_s (end of the interval, seconds since fio started), ios, iops, bw_bytes_s, "
        "clat_mean_us and clat p50/p99/p99.9 from fio's histogram log (fio's percentile rule). "
        "stderr says how many of fio's IOs the series accounts for: fio leaves the last, partial "
        "interval out of its logs.",
    )
    p.add_argument("run_dir", help="a run folder made with --log-ms N")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.set_defaults(func=cmd_series)
    p = add(
        "check",
        help="is each number physically possible? the plausibility checks of stored runs "
        "(device vs fio, bus ceiling, latency floor, SSD state); exit 3 when one fails",
    )
    p.add_argument("run_dir", nargs="+", help="run folders, or folders holding them (older runs are re-derived)")
    p.add_argument("--ceiling", help="the device's bandwidth ceiling, bytes/s with fio's units (e.g. 3.5G = 3.5 GiB/s)")
    p.add_argument(
        "--latency-floor-us", type=float, help="the least mean completion latency the device class can do, µs"
    )
    p.set_defaults(func=cmd_check)
    p = add("sysinfo", help="the system snapshot as JSON")
    p.add_argument("--device", help="block device name for queue knobs, e.g. nvme0n1")
    p.set_defaults(func=cmd_sysinfo)
    p = add(
        "cleanup",
        help="release loop devices, restore knobs, stop fio and mark runs that a killed iolab process left behind",
    )
    p.set_defaults(func=cmd_cleanup)
    p = add("demo", help="run the flagship notebooks headless and write HTML reports")
    p.add_argument("--out", help="output folder (default papermill_runs/)")
    p.add_argument("--runtime", type=float, help="seconds per fio run (default 0.4; 08 runs 10x that)")
    p.set_defaults(func=cmd_demo)
    p = add(
        "nvmelab",
        help="run a notebook or a command in the NVMe lab: a QEMU guest with emulated NVMe "
        "SSDs and Linux's real nvme driver (an emulator's numbers, never a device's)",
        description="Boots a QEMU guest (Debian's kernel, the host's root read-only, the data folder and "
        "papermill_runs/ read-write) with emulated NVMe controllers (/dev/nvme0n1, /dev/ng0n1, "
        "poll queues) and runs NOTEBOOK there (executed notebook and write-up in "
        "papermill_runs/NAME.nvmelab.ipynb and .html) or the COMMAND after '--'. The exit "
        "status is the command's own. Set-up: make setup-nvmelab (qemu-system-x86, "
        "linux-image-amd64, busybox-static, nvme-cli).",
        usage="iolab nvmelab [options] NOTEBOOK [-p NAME VALUE]...  |  iolab nvmelab [options] -- COMMAND...",
    )
    p.add_argument("what", nargs="*", help="a notebook (.ipynb), or after '--' a command and its arguments")
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        default=[],
        help="a notebook parameter, as papermill's -p (numbers and True/False read as such)",
    )
    p.add_argument("--controllers", type=int, default=2, help="emulated NVMe controllers (default 2)")
    p.add_argument("--namespace-size", default="1g", help="size of each one's namespace, fio units (default 1g)")
    p.add_argument("--vcpus", type=int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--memory-mb", type=int, default=2048, help="guest memory in MiB (default 2048)")
    p.add_argument("--poll-queues", type=int, default=2, help="nvme.poll_queues: queues for polled IO (default 2)")
    p.add_argument("--timeout", type=float, default=900, help="seconds before a hung guest is killed (default 900)")
    p.set_defaults(func=cmd_nvmelab)
    p = add(
        "publish",
        help="an executed notebook -> one offline HTML write-up (no code; parameters, results, provenance)",
        description="Writes the write-up of an executed notebook: one HTML file that needs no network "
        "(figures inline, no script or style from a CDN), without code cells, tables with "
        "thousands separators and units, the parameters and recorded results at the top, and "
        "a provenance appendix: iolab's git commit, fio/perf/kernel and package versions, the "
        "machine, each run folder with a SHA-256 of its raw outputs, the command that runs it "
        "again. make demo writes the same.",
    )
    p.add_argument("notebook", help="an executed notebook, e.g. papermill_runs/01_queue_depth_knee.ipynb")
    p.add_argument("-o", "--output", help="the HTML file to write (default: the notebook's name, .html)")
    p.set_defaults(func=cmd_publish)
    p = add(
        "lab",
        allow_abbrev=False,
        help="JupyterLab on notebooks/ with the project's kernel (as make lab); "
        "other --options pass through to JupyterLab",
    )
    p.add_argument("--port", default="8888", help="port on --ip (default 8888); a busy port is an error")
    p.add_argument(
        "--ip",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: reach it with ssh -L 8888:127.0.0.1:8888)",
    )
    p.add_argument("--notebook-dir", help="folder JupyterLab opens (default notebooks/)")
    p.set_defaults(func=cmd_lab)
    p = add(
        "reproduce",
        help="run an executed notebook's source again with its parameters; compare its recorded results",
        description="Re-executes the notebook EXECUTED was run from (papermill's input_path, else "
        "notebooks/<its name>) with the parameters it ran with, and prints each recorded "
        "result (iolab.core.results): original, re-run, difference %% and whether the re-run lies "
        "in the original's interval [low, high] (without one: within --tolerance-pct). When "
        "a result drifted, the machine snapshot differences that may explain it (kernel, fio "
        "version, governor, frequency source, scheduler, SMT). Exit 0: all agree; 3: a result "
        "drifted; 1: an error (e.g. no recorded results); 130: interrupted.",
    )
    p.add_argument("executed", help="an executed notebook (papermill_runs/…ipynb) that recorded results")
    p.add_argument("--out", help="folder for the re-executed notebook (default papermill_runs/reproduced)")
    p.add_argument(
        "--tolerance-pct",
        type=float,
        default=10.0,
        help="how far (%% of the original) a result without an interval may move (default 10)",
    )
    p.set_defaults(func=cmd_reproduce)
    return parser


# commands that only read files: no repair of what a killed iolab left first (it imports the
# whole library, and these must start fast)
READ_ONLY = ("cleanup", "fold", "sysinfo")


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=given[0] if given and not given[0].startswith("-") else None)
    if given and parser.names and given[0] not in parser.names:
        parser = build_parser()  # a misspelt command: argparse names every one
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("run", "lab"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    signals.raise_always()
    try:
        if args.command not in READ_ONLY:
            from .runs.repair import recover_and_report

            recover_and_report()
        return args.func(args, extra)
    except (IolabError, OSError) as exc:
        if args.debug:
            __import__("traceback").print_exc()
        what = str(exc) if isinstance(exc, IolabError) else _os_error(exc, args.command)
        what = what.removeprefix(f"{args.command}: ")  # the library's own "nvmelab: ..." prefix, once
        print(f"iolab {args.command}: {_one_line(what)}", file=sys.stderr)
        ctrl_c = type(exc.__cause__) is KeyboardInterrupt  # a run stopped by Ctrl-C (RunInterrupted)
        return 130 if ctrl_c else 1
    except signals.Terminated as exc:
        print(
            f"iolab {args.command}: {exc}; what was running was stopped and its run marked interrupted", file=sys.stderr
        )
        return 128 + exc.signum
    except KeyboardInterrupt:
        if args.debug:
            __import__("traceback").print_exc()
        print(
            f"iolab {args.command}: interrupted (Ctrl-C); a run that had started is kept, marked interrupted",
            file=sys.stderr,
        )
        return 130


def _one_line(text: str) -> str:
    """A message on one line: its non-empty lines joined with '; ', control characters
    from what it quotes (a file's bytes, a name) escaped (``iolab.core.errors.printable``)."""
    lines = printable(str(text), keep="\n").split("\n")
    return "; ".join(line.strip() for line in lines if line.strip()) or "(no message)"


_OS_ADVICE = {
    errno.EACCES: "check its permissions, or choose a folder you can write ({where})",
    errno.EPERM: "check its permissions, or choose a folder you can write ({where})",
    errno.EROFS: "it is on a read-only file system: choose a folder on a writable one ({where})",
    errno.ENOSPC: "free space there, or choose a folder on another file system ({where})",
    errno.EDQUOT: "free space in your quota, or choose another folder ({where})",
    errno.ENOENT: "check the path",
    errno.EISDIR: "give a file, not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
}


def _os_error(exc: OSError, command: str) -> str:
    """'<path>: <strerror>; <what to do>' for an OSError that reached the command line."""
    where = "--runs-dir / --scratch-dir, or IOLAB_DATA=DIR" if command == "run" else "IOLAB_DATA=DIR"
    what = exc.strerror or str(exc)
    names = " -> ".join(str(n) for n in (exc.filename, exc.filename2) if n)
    advice = _OS_ADVICE.get(exc.errno, "check the path and try again").format(where=where)
    return f"{names + ': ' if names else ''}{what}; {advice}"


if __name__ == "__main__":
    sys.exit(main())
