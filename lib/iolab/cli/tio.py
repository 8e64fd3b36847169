"""``iolab tio``: fio's t/io_uring with its own flags, pinned and sampled, stored in a run folder
and tabled like a fio run (``iolab.measure.runner.measure_tio``; ``iolab table`` reads it back).

    iolab tio --cpus 0 -d 128 -b 512 -p 0 -r 3 /dev/ng0n1
    iolab tio --cpus 0 -p 0 -r 2 loop          # a scratch loop device (root), as iolab run --target
"""

from __future__ import annotations

from pathlib import Path

from ..core import paths
from ..core.errors import InputError
from ..core.paths import TARGET_HELP
from .argtypes import finite

COLUMNS = (
    "job",
    "iops",
    "max_iops",
    "bw_bytes_s",
    "qd",
    "submitters",
    "polled",
    "ios_per_submit_call",
    "lat_mean_us_littles",
    "cpu_busy_pct",
    "cpu_freq_mhz",
    "freq_source",
    "cycles_per_io",
)


def cmd_tio(args, extra) -> int:
    from ..core import validate
    from ..read.tio import check_flags, flags_from_argv

    flags, files = flags_from_argv(extra)
    check_flags(flags)  # before a target is made: values t/io_uring would crash on
    if len(files) != 1:
        raise InputError(
            f"t/io_uring runs here on one target, and {len(files)} were given: name one last, e.g. "
            "iolab tio -d 128 -p 0 /dev/ng0n1 (or loop, loop:SIZE, scratch)"
        )
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    runs_dir = validate.writable_dir(args.runs_dir or paths.runs_dir(), "runs folder", "--runs-dir DIR")
    scratch_dir = Path(args.scratch_dir or paths.scratch_dir())
    from ..machine.target import open_target, parse_spec

    if parse_spec(files[0])[0] == "scratch":
        validate.writable_dir(scratch_dir, "scratch folder", "--scratch-dir DIR")
    from ..measure.options import MeasureOptions
    from ..measure.runner import measure_tio
    from ..stats.cycles import add_cycles_per_io  # slow to import (pandas): once the input is known good
    from .reading import print_run

    how = MeasureOptions(tio=args.tio, timeout_s=args.timeout)
    with open_target(files[0], args.target_size, scratch_dir) as target:
        result = measure_tio(flags, target, cpus=cpus, runs_dir=runs_dir, label="cli-tio", how=how)
    table = add_cycles_per_io(result.table)
    cols = [c for c in COLUMNS if c in table and table[c].notna().any()]
    print_run(table, cols, result.path, args.json)
    return 0


def add_commands(add) -> None:
    """``iolab tio``'s parser (``iolab.cli.build_parser``)."""
    p = add(
        "tio",
        help="fio's t/io_uring with its own flags (-d -b -p -r ...) on one target, stored and tabled like a fio run",
        description="Runs fio's t/io_uring (make tio builds it) pinned to --cpus with the samplers, and stores it "
        "in a run folder (tio.txt, samples, system snapshot) that iolab table reads like a fio run. Its flags "
        "pass through: -d depth, -b block size, -p polled (1 by default: needs poll queues), -n threads, -r "
        "seconds (iolab: 3), -B/-F/-O/-R/-u ... (t_io_uring -h). The target comes last: " + TARGET_HELP + ".",
        usage="iolab tio [--cpus CPUS] [--runs-dir DIR] [--target-size SIZE] [--tio PATH] [--timeout S] [--json] "
        "[-d N -b N -p 0|1 -n N -r S ...] TARGET",
        allow_abbrev=False,
    )
    p.add_argument("--cpus", help="CPUs to pin t/io_uring to and sample, e.g. 0 or 0,1 (as taskset -c)")
    p.add_argument("--runs-dir", help="where run folders go (default data/runs)")
    p.add_argument("--scratch-dir", help="where the scratch file lives (default data/scratch)")
    p.add_argument(
        "--target-size", default="1g", metavar="SIZE", help="size of a scratch file or loop device iolab makes (1g)"
    )
    p.add_argument("--tio", metavar="PATH", help="the t/io_uring binary (default: the one make tio built)")
    p.add_argument(
        "--json", action="store_true", help="the run's figures as JSON records on stdout, the rest on stderr"
    )
    p.add_argument("--timeout", type=finite(1, 86400), metavar="S", help="stop it after S seconds (default 120)")
    p.set_defaults(func=cmd_tio)
