"""``iolab preflight`` and ``iolab reset``: is this machine set up for the measurement, and
put back what ``--tune`` set (``iolab.machine.preflight``, ``iolab.machine.preflight_tune``).

    iolab preflight --device nvme0n1 --cpus 2      # a section per part, one line per check; exit 0 ready, 3 not
    iolab preflight --device nvme0n1 --cpus 2 --json
    iolab preflight --device nvme0n1 --cpus 2 --tune   # set what iolab can, hold until Ctrl-C or iolab reset
    iolab reset                                    # stop the holder; every value read back
"""

from __future__ import annotations

import sys

from .argtypes import finite


def _cpus(text: str) -> list[int]:
    import argparse

    from ..core.system import parse_cpu_list

    try:
        cpus = parse_cpu_list(text)
    except ValueError:
        cpus = []
    if not cpus or min(cpus) < 0:
        shown = repr(text if len(text) <= 30 else text[:29] + "…")
        raise argparse.ArgumentTypeError(f"{shown} is not a CPU list such as 0, 0,2 or 0-3")
    return cpus


_cpus.__name__ = "cpu list"


def cmd_preflight(args, _extra) -> int:
    from ..machine.preflight import as_json, preflight, text

    if args.tune:
        from ..machine.preflight_tune import refuse_second

        refuse_second()  # before the report: a second holder would record the first one's values as the old ones
    devices, said = (args.device, "") if args.device or args.tune else _scratch_disk()  # --tune: only those named
    report = preflight(devices or (), args.cpus, interval_s=args.sample, tools=not args.no_tools)
    print(as_json(report) if args.json else text(report), flush=True)
    if said:  # after the report: an error above stays one line
        print(said, file=sys.stderr)
    if not args.tune:
        return report.exit_code
    from ..machine.preflight_tune import hold

    return hold(report, lambda line: print(line, file=sys.stderr, flush=True))


def _scratch_disk() -> tuple[list[str], str]:
    """Without --device: the disk under iolab's scratch folder (the default target of every
    study, as a notebook's preflight checks its target's disk), and the line that says so."""
    from ..core import paths
    from ..machine.target import device_of_path

    folder = paths.scratch_dir()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    disk = device_of_path(folder)
    if disk:
        return [disk], (
            f"iolab preflight: no --device: checked {disk}, the disk under iolab's scratch folder {paths.scratch_dir()} "
            "(the default target); --device DEV checks another"
        )
    return [], (
        f"iolab preflight: no --device, and iolab's scratch folder {paths.scratch_dir()} is on no block device "
        "(tmpfs, overlay): the CPUs and tools only; --device DEV checks a device"
    )


def cmd_reset(args, _extra) -> int:
    from ..machine.preflight_tune import reset

    lines = reset()
    print("\n".join(lines))
    return 1 if any("NOT back" in line for line in lines) else 0


def add_commands(add) -> None:
    """The parsers of this module's commands (``iolab.cli.build_parser``)."""
    p = add(
        "preflight",
        help="is this machine set up for the measurement? every check with a verdict, its cost (the seed "
        "that measured it) and what to do; exit 0 ready, 3 not as recommended",
    )
    p.add_argument(
        "--device", action="append", metavar="DEV", help="a block device under test, e.g. nvme0n1 (repeat for more)"
    )
    p.add_argument("--cpus", type=_cpus, help="the CPUs that will measure, e.g. 2 or 0-3 (as taskset -c)")
    p.add_argument("--json", action="store_true", help="the checks as JSON")
    p.add_argument(
        "--sample",
        type=finite(0, 10),
        default=0.5,
        metavar="S",
        help="seconds of /proc/stat read for other load and steal (default 0.5)",
    )
    p.add_argument("--no-tools", action="store_true", help="skip the fio and perf probes (about a second)")
    p.add_argument(
        "--tune",
        action="store_true",
        help="set what iolab can (governor, turbo, scheduler, readahead, IRQ affinity) and hold it until "
        "Ctrl-C or iolab reset; what needs a reboot or the BIOS stays advice",
    )
    p.set_defaults(func=cmd_preflight)
    p = add("reset", help="put back what iolab preflight --tune set (stops the process holding it) and read it back")
    p.set_defaults(func=cmd_reset)
