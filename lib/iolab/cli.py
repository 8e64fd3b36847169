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
    iolab sysinfo
    iolab demo
    iolab lab --port 8889                      # JupyterLab on notebooks/, as make lab
"""
from __future__ import annotations

import argparse
import errno
import json
import sys
import traceback
from pathlib import Path

from . import paths, signals, validate
from .demo import run_demo
from .errors import InputError, IolabError
from .fold import FoldOptions, fold_file
from .lab import serve
from .system import snapshot
from .target import TARGET_HELP, open_target, parse_spec


def _fio_options(extra: list[str]) -> dict[str, str | bool]:
    """``--rw=randread --hipri`` -> {"rw": "randread", "hipri": True}."""
    opts: dict[str, str | bool] = {}
    for arg in extra:
        key, eq, value = arg[2:].partition("=")
        if not arg.startswith("--") or not key:
            raise InputError(f"unexpected argument {arg!r}; fio options are written --name=value, "
                             "e.g. --iodepth=32")
        opts[key] = value if eq else True
    return opts


def cmd_run(args, extra) -> int:
    from .analysis import add_cycles_per_io  # slow to import (pandas): only for this command
    from .runner import measure  # slow to import (pandas): only for this command

    options = _fio_options(extra)
    validate.check_fio_options(options)
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    runs_dir = validate.writable_dir(args.runs_dir or paths.runs_dir(), "runs folder", "--runs-dir DIR")
    scratch_dir = Path(args.scratch_dir or paths.scratch_dir())
    if parse_spec(args.target)[0] == "scratch":
        validate.writable_dir(scratch_dir, "scratch folder", "--scratch-dir DIR")
    with open_target(args.target, args.size, scratch_dir) as target:
        result = measure(options, target, cpus=cpus, runs_dir=runs_dir,
                         allow_destructive=args.allow_destructive, label="cli")
    table = add_cycles_per_io(result.table)
    cols = [c for c in ("job", "direction", "iops", "bw_bytes_s", "clat_mean_us", "clat_p50_us",
                        "clat_p99_us", "cpu_busy_pct", "cpu_freq_mhz", "freq_source", "cycles_per_io")
            if c in table]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    print(f"stored: {result.path}")
    warnings = table["fio_warnings"].iloc[0] if "fio_warnings" in table and len(table) else ""
    if warnings:
        print(f"iolab run: fio warnings (kept in run.json and the fio_warnings column): {warnings}",
              file=sys.stderr)
    return 0


def cmd_search(args, _extra) -> int:
    from . import search  # slow to import (pandas): only for this command

    spec = search.load_spec(args.spec)
    if args.dry_run:
        with search.open_targets(spec) as targets:
            runs = search.plan(spec, targets, args.drop_unavailable, args.allow_destructive)
        print(search.describe_plan(runs, spec))
        return 0
    runs_dir = Path(args.runs_dir) if args.runs_dir else paths.runs_dir() / f"search-{spec.name}"
    print(f"iolab search: runs go to {runs_dir} (the same command resumes)", file=sys.stderr)
    table = search.run(spec, runs_dir, drop_unavailable=args.drop_unavailable,
                       allow_destructive=args.allow_destructive, announce=lambda m: print(m, file=sys.stderr))
    print(search.summary(table, spec))
    return 0


def cmd_batch(args, _extra) -> int:
    from . import batch  # slow to import (papermill): only for this command

    manifest = batch.load_manifest(args.manifest)

    def said(record) -> None:
        line = f"{record['name']}: {record['status']} in {record['duration_s']:g} s"
        print(line if record["status"] == "ok" else f"{line}: {record['error'].splitlines()[0]}", file=sys.stderr)
    records = batch.run_batch(manifest, out=args.out, jobs=args.jobs, on_done=said)
    failed = [r["name"] for r in records if r["status"] != "ok"]
    out = Path(records[0]["output"] or ".").parent.parent if records else Path(args.out or ".")
    print(f"{len(records) - len(failed)} of {len(records)} runs ok; index: {out / 'index.html'}")
    if failed:
        print(f"iolab batch: {len(failed)} run(s) failed ({', '.join(failed)}); their notebooks keep papermill's "
              "error banner. Fix and run the same command again: only failed or missing runs re-run",
              file=sys.stderr)
        return 3
    return 0


def cmd_parse(args, _extra) -> int:
    from .fiojson import parse_output  # slow to import (pandas): only for this command
    from .pool import pool_outputs  # slow to import (pandas): only for this command
    from .tio import looks_like_tio, parse_tio  # slow to import (pandas): only for this command

    if len(args.file) > 1 and not args.pool:
        raise InputError(f"{len(args.file)} files given; parse one at a time, or add --pool for one row "
                         "per direction pooling them all")
    if args.files_are and not args.pool:
        raise InputError("--files-are says how --pool treats several files; add --pool")
    texts = [validate.input_file(f, "fio JSON file", inside=("fio.json", "tio.txt")).read_text(errors="replace")
             for f in args.file]
    tio = [f for f, text in zip(args.file, texts) if looks_like_tio(text)]
    if args.pool and tio:
        raise InputError(f"{tio[0]} is t/io_uring output, which has no latency bins to pool; "
                         "--pool takes fio JSON output (json+ for percentiles)")
    if args.pool:
        table = pool_outputs(args.file, files=args.files_are or "repeats")
    else:
        table = parse_tio(args.file[0]) if tio else parse_output(args.file[0])
    if args.format == "json":
        print(table.to_json(orient="records", indent=1))
    else:
        sys.stdout.write(table.to_csv(index=False))
    return 0


def cmd_table(args, _extra) -> int:
    import warnings

    from .atomic import write_atomic
    from .runcache import load_cached, statuses, write_parquet  # slow to import (pandas): only for this command

    root, out = Path(args.dir), Path(args.output) if args.output else None
    if not root.is_dir():
        raise InputError(f"{root}{' is a file, not a folder' if root.exists() else ': no such folder'}; give "
                         "the folder that holds run folders, e.g. data/runs or a study's runs folder")
    if args.format == "parquet" and out is None:
        raise InputError("--format parquet is binary, not for the terminal: add --output FILE, "
                         "e.g. --output table.parquet")
    if out is not None and out.is_dir():
        raise InputError(f"--output {out} is a folder; give a file name, e.g. {out / ('table.' + args.format)}")
    if out is not None and not out.parent.is_dir():
        raise InputError(f"--output {out}: there is no folder {out.parent}; create it or choose another --output")
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
            raise InputError(f"{root} holds no run folders (<run>/run.json); give the folder that holds "
                             + (f"them, e.g. {deeper[0]}" if deeper else "them, e.g. data/runs or a study's runs folder"))
        have = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        raise InputError(f"{root} holds no {status + ' ' if status else ''}run that can be read (it has {have})"
                         + ("; --status all shows every run" if status else "; the lines above say why"))
    if args.format == "parquet":
        write_parquet(table, out)
    else:
        text = (table.to_json(orient="records", indent=1) + "\n" if args.format == "json"
                else table.to_csv(index=False))
        if out:
            write_atomic(out, text)
        else:
            sys.stdout.write(text)
    if out:
        print(f"iolab table: {len(table)} rows of {table['run_id'].nunique()} runs -> {out}", file=sys.stderr)
    return 0


def cmd_knee(args, _extra) -> int:
    from .analysis import knee_with_interval  # slow to import (pandas): only for this command

    table = _read_curve(args.csv, args.x, args.y)
    est = knee_with_interval(table[args.x], table[args.y], log2_x=not args.linear, n_boot=args.resamples,
                             seed=args.seed, level=args.level, name=args.x, method=args.method)
    print("none" if est.x is None else f"{est.x:g}")  # stdout: the knee alone, for scripts
    lead = (f"knee {args.x} {est.x:g}. {est.note}" if est.x is not None
            else "no knee: " + est.note.removeprefix("No knee: "))
    print(f"iolab knee: {lead}", file=sys.stderr)  # stderr: the interval and the rule's word
    return 0


def _read_curve(csv: str, x: str, y: str):
    """The x and y columns of a CSV as numbers; InputError for a missing, empty or
    unreadable file, a missing column, or a value that is not a number."""
    import pandas as pd  # slow to import: only for this command

    path = validate.input_file(csv, "CSV file")
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{csv} is empty; give a CSV with a header row and columns {x!r} and {y!r}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{csv} is not a CSV pandas can read ({str(exc).strip().splitlines()[0]}); "
                         f"give a comma-separated file with columns {x!r} and {y!r}") from None
    for col in (x, y):
        if col not in table:
            raise InputError(f"{csv} has no column {col!r}; it has: {', '.join(map(str, table.columns))}; "
                             "name the columns with --x and --y")
    if table.empty:
        raise InputError(f"{csv} has a header but no rows; give one row per point of the curve")
    for col in (x, y):
        numbers = pd.to_numeric(table[col], errors="coerce")
        bad = table[col][numbers.isna() & table[col].notna()]
        if len(bad):
            raise InputError(f"{csv} column {col!r} has {bad.iloc[0]!r} (row {bad.index[0] + 1}), which is "
                             "not a number; give numbers only (empty cells are skipped)")
        table[col] = numbers
    return table


def cmd_fold(args, _extra) -> int:
    from .perf import fold_perf_data  # slow to import (pandas): only for this command

    opts = FoldOptions(pid=args.pid, tid=args.tid, kernel=args.kernel or args.all,
                       jit=args.jit or args.all, addrs=args.addrs, event_filter=args.event_filter or "")
    path = validate.input_file(args.input, "perf script text or perf.data file", inside=("perf.data", "perf.folded"))
    with open(path, "rb") as f:
        is_perf_data = f.read(8) == b"PERFILE2"
    folded = fold_perf_data(path, opts) if is_perf_data else fold_file(path, opts)
    sys.stdout.write(folded.text())
    if folded.skipped_other_events:
        print(f"iolab fold: kept only '{folded.event}' samples; skipped {folded.skipped_other_events} "
              "of other events (--event-filter to choose)", file=sys.stderr)
    if folded.unrecognized_lines:
        print(f"iolab fold: {folded.unrecognized_lines} lines not recognised", file=sys.stderr)
    return 0


def cmd_sysinfo(args, _extra) -> int:
    print(json.dumps(snapshot(args.device), indent=1, default=str))
    return 0


def cmd_cleanup(args, _extra) -> int:
    """Repair what dead iolab processes left behind (the ledger), and list what live ones hold."""
    from .repair import cleanup_report  # slow to import (pandas): only for this command

    print("\n".join(cleanup_report()))
    return 0


def cmd_demo(args, _extra) -> int:
    from .fio import fio_time  # slow to import (pandas): only for this command

    try:
        fio_time(args.runtime)
    except InputError as exc:
        raise InputError(f"--runtime {args.runtime:g}: {exc}") from None
    for path in run_demo(out_dir=Path(args.out) if args.out else paths.PAPERMILL_RUNS,
                         runtime_s=args.runtime):
        print(f"wrote {path}")
    return 0


def cmd_publish(args, _extra) -> int:
    from .publish import publish  # nbconvert and papermill are slow to import: only for this command

    print(f"wrote {publish(args.notebook, args.output)}")
    return 0


def cmd_lab(args, extra) -> int:
    serve(args.notebook_dir or paths.NOTEBOOKS, port=args.port, ip=args.ip, extra=extra)
    return 1  # serve returns only by raising


def cmd_reproduce(args, _extra) -> int:
    from .reproduce import reproduce  # slow to import (pandas, papermill): only for this command

    report = reproduce(args.executed, out_dir=args.out, tolerance_pct=args.tolerance_pct)
    print(report.text())
    return 0 if report.agrees else 3  # 3: a result drifted (1 is an error, 130 Ctrl-C)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iolab", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    common = argparse.ArgumentParser(add_help=False)  # --debug after the command too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kw) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kw)

    p = add("run", help="one fio run with samplers, stored; any --fio-option=value passes through")
    p.add_argument("--target", default="scratch", help=f"{TARGET_HELP} (default: scratch)")
    p.add_argument("--size", default="1g", help="scratch file / loop device size (fio units, default 1g)")
    p.add_argument("--cpus", help="CPUs to pin fio to and sample, e.g. 0, 0,1 or 0-3 (as taskset -c)")
    p.add_argument("--runs-dir", help="where run folders go (default data/runs)")
    p.add_argument("--scratch-dir", help="where the scratch file lives (default data/scratch)")
    p.add_argument("--allow-destructive", action="store_true",
                   help="allow writes to a block device that holds a filesystem, partitions or mounts")
    p.set_defaults(func=cmd_run)
    p = add("search", help="run a parameter search spec (YAML): cells in seeded random order, repeats, resumable",
            description="Runs the Cartesian product of a spec's axes (fio options, knobs, cores, devices, "
                        "stress, siblings) with repeats; killed at any moment, the same command resumes and "
                        "ends with every (cell, repeat) exactly once. See iolab.search and "
                        "data/examples/search_small.yaml.")
    p.add_argument("spec", help="the search spec (YAML)")
    p.add_argument("--runs-dir", help="where its runs go (default data/runs/search-<name>)")
    p.add_argument("--drop-unavailable", action="store_true",
                   help="run without the axes/values this machine cannot vary (they are listed first)")
    p.add_argument("--dry-run", action="store_true", help="check the spec and every cell, print the plan, run nothing")
    p.add_argument("--allow-destructive", action="store_true",
                   help="allow writes to a block device that holds a filesystem, partitions or mounts")
    p.set_defaults(func=cmd_search)
    p = add("batch", help="run a notebook over parameter sets from a YAML manifest; resumable; index page",
            description="Runs a manifest's notebook once per run (runs: name + parameters, or a grid), each "
                        "into OUT/<name>/ with its executed notebook, write-up and run.json; a failed run is "
                        "kept and the batch goes on (exit 3 when any failed). Running it again re-runs only "
                        "failed or missing runs. OUT/batch.json and OUT/index.html list them all.")
    p.add_argument("manifest", help="the batch manifest (YAML): notebook, defaults, runs and/or grid")
    p.add_argument("--out", help="output folder (default: the manifest's out:, else batch-<manifest> beside it)")
    p.add_argument("--jobs", type=int, help="runs at once, as separate processes (default: the manifest's jobs:, 1)")
    p.set_defaults(func=cmd_batch)
    p = add("parse", help="any fio JSON output (or t/io_uring text) -> the tidy table")
    p.add_argument("file", nargs="+", help="fio output file(s); several only with --pool")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--pool", action="store_true",
                   help="one row per direction pooling every job of every file: IOPS summed over jobs, "
                        "percentiles from the summed json+ bins (iolab.pool)")
    p.add_argument("--files-are", choices=("repeats", "concurrent"),
                   help="with --pool: files are repeats (IOPS averaged, the default) or ran at the same "
                        "time (summed)")
    p.set_defaults(func=cmd_parse)
    p = add("table", help="the tidy table of a folder of runs (one row per run and direction), cached",
            description="The tidy table of every run folder in DIR (DIR/<run>/run.json; sub-folders such "
                        "as warmup/ are not included): one row per run and direction, the swept values as "
                        "columns, re-derived from the run folders. A cache in DIR (.iolab-table.parquet) "
                        "re-derives only new or changed runs, so thousands of runs load in seconds.")
    p.add_argument("dir", help="a folder of run folders, e.g. data/runs or a study's runs folder")
    p.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                   help="csv (default) or json records on stdout; parquet needs --output")
    p.add_argument("--output", help="write the table to FILE instead of stdout")
    p.add_argument("--status", choices=("all", "ok", "failed", "interrupted"), default="ok",
                   help="the runs to include (default ok)")
    p.add_argument("--no-cache", action="store_true", help="derive every run again; read and write no cache")
    p.set_defaults(func=cmd_table)
    p = add("knee", help="knee of a curve in a CSV (prints its x, or 'none')",
            description="Kneedle's most prominent knee of the median y per x (x may repeat: one row "
                        "per repeat). stdout is one line, the knee's x or 'none', for scripts. stderr is "
                        "one line for people: the knee's bootstrap interval over the repeats ('iolab knee: "
                        "knee qd 16. 92 % of 1000 resamples of the repeats put the knee in [8, 16]') and "
                        "whether the 95 %-of-peak rule agrees; or why there is no knee.")
    p.add_argument("csv")
    p.add_argument("--x", required=True, help="column for x (e.g. qd); may repeat (one row per repeat)")
    p.add_argument("--y", required=True, help="column for y (e.g. iops)")
    p.add_argument("--linear", action="store_true", help="use x as is instead of log2(x)")
    p.add_argument("--resamples", type=int, default=1000,
                   help="bootstrap resamples of the repeats for the interval (default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0: repeatable)")
    p.add_argument("--level", type=float, default=0.9,
                   help="share of resamples the interval holds (default 0.9)")
    p.add_argument("--method", choices=["kneedle", "power"], default="kneedle", type=lambda s: s.strip().lower(),
                   help="kneedle (default): the bend of the curve; power: the x of maximum y²/x "
                        "(throughput ÷ latency by Little's law, Kleinrock's optimal operating point)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="(kept for old scripts: why there is no knee is always said on stderr)")
    p.set_defaults(func=cmd_knee)
    p = add("fold", help="perf script text (or perf.data) -> folded stacks, as stackcollapse-perf.pl")
    p.add_argument("input", help="perf script output, or a perf.data file")
    for flag, text in (("--pid", "append -PID to the process name"), ("--tid", "append -PID/TID"),
                       ("--kernel", "mark kernel frames _[k]"), ("--jit", "mark JIT frames _[j]"),
                       ("--all", "--kernel and --jit"), ("--addrs", "keep addresses of unknown frames")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--event-filter", help="keep this event (default: the first one seen)")
    p.set_defaults(func=cmd_fold)
    p = add("sysinfo", help="the system snapshot as JSON")
    p.add_argument("--device", help="block device name for queue knobs, e.g. nvme0n1")
    p.set_defaults(func=cmd_sysinfo)
    p = add("cleanup", help="release loop devices, restore knobs, stop fio and mark runs that a "
                                       "killed iolab process left behind")
    p.set_defaults(func=cmd_cleanup)
    p = add("demo", help="run the flagship notebooks headless and write HTML reports")
    p.add_argument("--out", help="output folder (default papermill_runs/)")
    p.add_argument("--runtime", type=float, default=1.0, help="seconds per fio run (default 1)")
    p.set_defaults(func=cmd_demo)
    p = add("publish", help="an executed notebook -> one offline HTML write-up (no code; parameters, results, provenance)",
            description="Writes the write-up of an executed notebook: one HTML file that needs no network "
                        "(figures inline, no script or style from a CDN), without code cells, tables with "
                        "thousands separators and units, the parameters and recorded results at the top, and "
                        "a provenance appendix: iolab's git commit, fio/perf/kernel and package versions, the "
                        "machine, each run folder with a SHA-256 of its raw outputs, the command that runs it "
                        "again. make demo writes the same.")
    p.add_argument("notebook", help="an executed notebook, e.g. papermill_runs/01_queue_depth_knee.ipynb")
    p.add_argument("-o", "--output", help="the HTML file to write (default: the notebook's name, .html)")
    p.set_defaults(func=cmd_publish)
    p = add("lab", allow_abbrev=False,
            help="JupyterLab on notebooks/ with the project's kernel (as make lab); "
                 "other --options pass through to JupyterLab")
    p.add_argument("--port", default="8888", help="port on --ip (default 8888); a busy port is an error")
    p.add_argument("--ip", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: reach it with ssh -L 8888:127.0.0.1:8888)")
    p.add_argument("--notebook-dir", help="folder JupyterLab opens (default notebooks/)")
    p.set_defaults(func=cmd_lab)
    p = add("reproduce", help="run an executed notebook's source again with its parameters; compare its recorded results",
            description="Re-executes the notebook EXECUTED was run from (papermill's input_path, else "
                        "notebooks/<its name>) with the parameters it ran with, and prints each recorded "
                        "result (iolab.results): original, re-run, difference %% and whether the re-run lies "
                        "in the original's interval [low, high] (without one: within --tolerance-pct). When "
                        "a result drifted, the machine snapshot differences that may explain it (kernel, fio "
                        "version, governor, frequency source, scheduler, SMT). Exit 0: all agree; 3: a result "
                        "drifted; 1: an error (e.g. no recorded results); 130: interrupted.")
    p.add_argument("executed", help="an executed notebook (papermill_runs/…ipynb) that recorded results")
    p.add_argument("--out", help="folder for the re-executed notebook (default papermill_runs/reproduced)")
    p.add_argument("--tolerance-pct", type=float, default=10.0,
                   help="how far (%% of the original) a result without an interval may move (default 10)")
    p.set_defaults(func=cmd_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("run", "lab"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    signals.raise_always()
    try:
        if args.command != "cleanup":
            from .repair import recover_and_report  # slow to import (pandas): not for --help or a usage error
            recover_and_report()
        return args.func(args, extra)
    except (IolabError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        what = str(exc) if isinstance(exc, IolabError) else _os_error(exc, args.command)
        print(f"iolab {args.command}: {_one_line(what)}", file=sys.stderr)
        ctrl_c = type(exc.__cause__) is KeyboardInterrupt  # a run stopped by Ctrl-C (RunInterrupted)
        return 130 if ctrl_c else 1
    except signals.Terminated as exc:
        print(f"iolab {args.command}: {exc}; what was running was stopped and its run marked "
              "interrupted", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print(f"iolab {args.command}: interrupted (Ctrl-C); a run that had started is kept, marked "
              "interrupted", file=sys.stderr)
        return 130


def _one_line(text: str) -> str:
    """A message on one line: its non-empty lines joined with '; '."""
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip()) or "(no message)"


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
