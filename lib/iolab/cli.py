"""``iolab`` commands: a thin shell over the library (errors become one line and exit 1).

    iolab run --target scratch --rw=randread --bs=4k --iodepth=32   # any fio long option
    iolab parse fio.json --format csv
    iolab knee table.csv --x qd --y iops
    iolab fold perf.script.txt --kernel        # or a perf.data file
    iolab sysinfo
    iolab demo
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import paths
from .errors import IolabError


def _fio_options(extra: list[str]) -> dict[str, str | bool]:
    """``--rw=randread --hipri`` -> {"rw": "randread", "hipri": True}."""
    opts: dict[str, str | bool] = {}
    for arg in extra:
        if not arg.startswith("--"):
            raise IolabError(f"unexpected argument {arg!r}: fio options are written --name=value")
        key, eq, value = arg[2:].partition("=")
        opts[key] = value if eq else True
    return opts


def cmd_run(args, extra) -> int:
    from .analysis import add_cycles_per_io
    from .runner import measure
    from .target import resolve

    target = resolve(args.target, args.scratch_dir or paths.scratch_dir(), args.size)
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else None
    result = measure(_fio_options(extra), target, cpus=cpus, runs_dir=args.runs_dir or paths.runs_dir(),
                     allow_destructive=args.allow_destructive, label="cli")
    table = add_cycles_per_io(result.table)
    cols = [c for c in ("job", "direction", "iops", "bw_bytes_s", "clat_mean_us", "clat_p50_us",
                        "clat_p99_us", "cpu_busy_pct", "cpu_freq_mhz", "freq_source", "cycles_per_io")
            if c in table]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    print(f"stored: {result.path}")
    return 0


def cmd_parse(args, _extra) -> int:
    from .fio import parse_output
    from .tio import looks_like_tio, parse_tio

    text = Path(args.file).read_text(errors="replace") if Path(args.file).exists() else ""
    table = parse_tio(args.file) if looks_like_tio(text) else parse_output(args.file)
    if args.format == "json":
        print(table.to_json(orient="records", indent=1))
    else:
        sys.stdout.write(table.to_csv(index=False))
    return 0


def cmd_knee(args, _extra) -> int:
    import pandas as pd

    from .analysis import find_knee

    table = pd.read_csv(args.csv)
    for col in (args.x, args.y):
        if col not in table:
            raise IolabError(f"{args.csv} has no column {col!r}; it has: {', '.join(table.columns)}")
    knee = find_knee(table[args.x], table[args.y], log2_x=not args.linear)
    print("none" if knee.x is None else f"{knee.x:g}")
    if knee.x is None and args.verbose:
        print(knee.reason, file=sys.stderr)
    return 0


def cmd_fold(args, _extra) -> int:
    from .fold import FoldOptions, fold_file
    from .perf import fold_perf_data

    opts = FoldOptions(pid=args.pid, tid=args.tid, kernel=args.kernel or args.all,
                       jit=args.jit or args.all, addrs=args.addrs, event_filter=args.event_filter or "")
    path = Path(args.input)
    if not path.exists():
        raise IolabError(f"{path}: no such file")
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
    from .system import snapshot

    print(json.dumps(snapshot(args.device), indent=1, default=str))
    return 0


def cmd_demo(args, _extra) -> int:
    from .demo import run_demo

    for path in run_demo(out_dir=Path(args.out) if args.out else paths.PAPERMILL_RUNS,
                         runtime_s=args.runtime):
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iolab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="one fio run with samplers, stored; any --fio-option=value passes through")
    p.add_argument("--target", default="scratch", help="'scratch' (default) or a file / block device path")
    p.add_argument("--size", default="1g", help="scratch file size (fio units, default 1g)")
    p.add_argument("--cpus", help="CPUs to pin fio to and sample, e.g. 0 or 0,1")
    p.add_argument("--runs-dir", help="where run folders go (default data/runs)")
    p.add_argument("--scratch-dir", help="where the scratch file lives (default data/scratch)")
    p.add_argument("--allow-destructive", action="store_true",
                   help="allow writes to a block device that holds a filesystem, partitions or mounts")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("parse", help="any fio JSON output (or t/io_uring text) -> the tidy table")
    p.add_argument("file")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.set_defaults(func=cmd_parse)
    p = sub.add_parser("knee", help="knee of a curve in a CSV (prints its x, or 'none')")
    p.add_argument("csv")
    p.add_argument("--x", required=True, help="column for x (e.g. qd)")
    p.add_argument("--y", required=True, help="column for y (e.g. iops)")
    p.add_argument("--linear", action="store_true", help="use x as is instead of log2(x)")
    p.add_argument("-v", "--verbose", action="store_true", help="say why when there is no knee")
    p.set_defaults(func=cmd_knee)
    p = sub.add_parser("fold", help="perf script text (or perf.data) -> folded stacks, as stackcollapse-perf.pl")
    p.add_argument("input", help="perf script output, or a perf.data file")
    for flag, text in (("--pid", "append -PID to the process name"), ("--tid", "append -PID/TID"),
                       ("--kernel", "mark kernel frames _[k]"), ("--jit", "mark JIT frames _[j]"),
                       ("--all", "--kernel and --jit"), ("--addrs", "keep addresses of unknown frames")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--event-filter", help="keep this event (default: the first one seen)")
    p.set_defaults(func=cmd_fold)
    p = sub.add_parser("sysinfo", help="the system snapshot as JSON")
    p.add_argument("--device", help="block device name for queue knobs, e.g. nvme0n1")
    p.set_defaults(func=cmd_sysinfo)
    p = sub.add_parser("demo", help="run the flagship notebooks headless and write HTML reports")
    p.add_argument("--out", help="output folder (default papermill_runs/)")
    p.add_argument("--runtime", type=float, default=1.0, help="seconds per fio run (default 1)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args, extra)
    except IolabError as exc:
        print(f"iolab {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"iolab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
