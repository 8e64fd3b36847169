"""``iolab batch``, ``seeds``, ``demo``, ``nvmelab``, ``publish``, ``lab``, ``reproduce`` and
``history``: the commands that run notebooks (headless with papermill, in the NVMe lab's guest,
in JupyterLab), publish or re-run them, and print the history of what they recorded. papermill
and nbconvert are slow to import: each command imports them when it runs, so ``iolab --help``
stays fast."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

from ..core import paths
from ..core.errors import InputError, printable
from ..core.outputs import FORCE_HELP, check_folder, claim_folder
from .argtypes import finite, whole
from .messages import one_line


def cmd_batch(args, _extra) -> int:
    from ..report import batch  # slow to import (papermill): only for this command

    manifest = batch.load_manifest(args.manifest)
    if not args.dry_run:  # said before the plan: nothing runs
        batch.check_outputs(batch.out_of(manifest, args.out), manifest.runs, args.force)
    print(
        batch.describe_plan(manifest, args.out, every=args.list_all),
        file=sys.stdout if args.dry_run else sys.stderr,
        flush=True,
    )
    if args.dry_run:
        return 0

    def said(record) -> None:
        line = f"{record['name']}: {record['status']} in {record['duration_s']:g} s"
        print(
            line if record["status"] == "ok" else f"{line}: {one_line(record['error'].splitlines()[0])}",
            file=sys.stderr,
        )

    records = batch.run_batch(manifest, out=args.out, jobs=args.jobs, on_done=said, force=args.force)
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
    from ..core import validate
    from ..seeds import manifest as seeds  # slow to import (papermill): only for this command
    from ..seeds import runner

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
    given = args.out or seeds.default_out()
    check_folder(given, force=args.force)  # before a spec is written there
    if args.dry_run:  # the plan alone: no folder made, no spec written
        out = Path(given).absolute()
    else:
        out = validate.writable_dir(given, "seeds folder", "--out DIR")
        claim_folder(out, force=args.force)
    chosen = seeds.load_seeds(args.only)
    todo = seeds.plan(
        chosen,
        out,
        level,
        devices=devices,
        cpus=cpus,
        allow_destructive=args.allow_destructive,
        opt_in_device_changes=args.opt_in_device_changes,
        force=args.force,
        dry_run=args.dry_run,
    )
    runner.check_outputs(todo, out, args.force)  # said before the plan: nothing runs
    print(seeds.describe(todo, level), file=sys.stderr if not args.dry_run else sys.stdout)
    if args.dry_run:
        return 0

    def said(record) -> None:
        line = f"  {record['name']}: {record['status']} in {record['duration_s']:g} s"
        print(
            line if record["status"] == "ok" else f"{line}: {one_line(record['error'].splitlines()[0])}",
            file=sys.stderr,
        )

    records = runner.run(todo, out, level, devices=devices, on_done=said, force=args.force)
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


def cmd_init(args, _extra) -> int:
    from ..report.workspace import init

    copied, kernel = init(args.folder)
    shown = printable(args.folder)  # a name's control characters escaped, never sent to the terminal
    print(f"made the workspace {shown} ({len(copied)} files: notebooks/, data/, papermill_runs/)")
    print(kernel)
    print(f"next: cd {shlex.quote(shown)} && iolab demo   (or iolab lab: JupyterLab on its notebooks)")
    return 0


def cmd_demo(args, _extra) -> int:
    from ..core import validate
    from ..core.validate import fio_time  # slow to import (pandas): only for this command
    from ..report.demo import DEFAULT_RUNTIME_S, run_demo

    runtime_s = DEFAULT_RUNTIME_S if args.runtime is None else args.runtime
    try:
        fio_time(runtime_s)
    except InputError as exc:
        raise InputError(f"--runtime {runtime_s:g}: {exc}") from None
    cpus = validate.check_cpus(validate.cpu_list(args.cpus)) if args.cpus is not None else None
    if cpus is not None and len(cpus) != 1:
        raise InputError(f"--cpus {args.cpus}: the demo measures on one CPU; give one, e.g. --cpus 1")
    out_dir = Path(args.out) if args.out else paths.PAPERMILL_RUNS
    for path in run_demo(out_dir=out_dir, runtime_s=runtime_s, force=args.force, cpu=cpus[0] if cpus else None):
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
    from ..nvmelab import vm as nvmelab

    spec = nvmelab.LabSpec(
        controllers=args.controllers,
        namespace_size=args.namespace_size,
        cpus=args.vcpus,
        memory_mb=args.memory_mb,
        poll_queues=min(2, args.vcpus) if args.poll_queues is None else args.poll_queues,
        timeout_s=args.timeout,
        tcg_thread=args.tcg_thread,
        slots=nvmelab.slots_from(args.slot, args.controllers),
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
        what, output = nvmelab.notebook_job(what[0], params, spec, force=args.force)
    else:
        try:
            nvmelab.check_command(what)
        except nvmelab.CommandNotFound as exc:  # a shell's status for it, 127, not 1
            print(f"iolab nvmelab: {one_line(str(exc).removeprefix('nvmelab: '))}", file=sys.stderr)
            return exc.returncode
    accel = nvmelab.accel()
    asked = spec.tcg_thread == "single" and not spec.one_host_thread(accel)
    ignored = " (--tcg-thread ignored: KVM, not TCG)" if asked else ""
    print(f"iolab nvmelab: booting a {nvmelab.describe(spec, accel)}{ignored}", file=sys.stderr, flush=True)
    result = nvmelab.run_notebook_job(what, output, spec) if notebook else nvmelab.run(what, spec)
    print(
        f"iolab nvmelab: guest ({result.accel}) booted in {result.boot_s:.1f} s; the command exited "
        f"{result.returncode} after {result.wall_s:.1f} s in all",
        file=sys.stderr,
    )
    return result.returncode


def cmd_publish(args, _extra) -> int:
    # nbconvert and papermill are slow to import: only for this command
    from ..report.publish import publish, unfinished

    html = publish(args.notebook, args.output, force=args.force)
    print(f"wrote {html}")
    note = unfinished(args.notebook)
    if note:
        print(f"iolab publish: {one_line(note)} The write-up says so at its top.", file=sys.stderr)
    return 0


def cmd_lab(args, extra) -> int:
    from .lab import serve

    serve(args.notebook_dir or paths.REPO, port=args.port, ip=args.ip, extra=extra)
    return 1  # serve returns only by raising


def cmd_reproduce(args, _extra) -> int:
    from ..report.reproduce import reproduce  # slow to import (pandas, papermill): only for this command

    report = reproduce(args.executed, out_dir=args.out, tolerance_pct=args.tolerance_pct, force=args.force)
    print(printable(report.text()))  # result names and values read from the notebooks
    return 0 if report.agrees else 3  # 3: a result drifted (1 is an error, 130 Ctrl-C)


def cmd_history(args, _extra) -> int:
    import warnings

    from ..core.errors import printable
    from ..record import history  # pandas and pyarrow: only for this command

    since = history.parse_since(args.since) if args.since is not None else None  # a bad --since before any reading
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", history.HistoryWarning)
        table = history.load(args.dir, notebooks=args.notebook)
    for warning in caught:
        print(f"iolab history: {one_line(str(warning.message))}", file=sys.stderr)
    where = table.attrs["history"]
    if table.empty:
        print(f"iolab history: {one_line(history.summary(table))}", file=sys.stderr)
        return 0
    if args.metric:
        unknown = [m for m in args.metric if m not in set(table["name"])]
        if unknown:
            names = list(dict.fromkeys(table.loc[~table["detail"], "name"]))
            raise InputError(
                f"no result named {', '.join(map(repr, unknown))} in {where}"
                + (" of notebook(s) " + ", ".join(args.notebook) if args.notebook else "")
                + f"; its results are named: {', '.join(map(repr, names[:20]))}{' …' if len(names) > 20 else ''} "
                "(quote a name with spaces: --metric 'peak IOPS')"
            )
        table = table[table["name"].isin(args.metric)]
    hidden = 0
    if not args.all and not args.metric:
        hidden = int(table["detail"].sum())
        table = table[~table["detail"]]
        if table.empty:
            print(f"iolab history: {one_line(where)} holds only per-setting results: --all shows them", file=sys.stderr)
            return 0
    if since is not None:
        latest = table["recorded_utc"].max()
        table = table[table["recorded_utc"] >= since]
        if table.empty:
            print(
                f"iolab history: no result recorded since {since:%Y-%m-%d %H:%M} UTC in {one_line(where)}; the latest is "
                f"from {latest:%Y-%m-%d %H:%M} UTC (give an earlier --since)",
                file=sys.stderr,
            )
            return 0
    if args.format == "csv":
        sys.stdout.write(printable(table.to_csv(index=False)))
    elif args.format == "json":
        print(printable(table.to_json(orient="records", date_format="iso", indent=1, force_ascii=False)))
    else:
        print(printable(history.as_text(table)))
        print(
            history.summary(table)
            + (f" {hidden:,} per-setting results not shown (--all shows them)." if hidden else "")
        )
    return 0


def add_commands(add) -> None:
    """The parsers of this module's commands: ``add(name, **kw)`` makes one (``iolab.cli.build_parser``)."""
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
    p.add_argument(
        "--jobs", type=whole(1), help="runs at once, as separate processes (default: the manifest's jobs:, 1)"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan (runs, those already done, an estimate), run nothing"
    )
    p.add_argument("--list-all", action="store_true", help="with --dry-run: list every run")
    p.add_argument("--force", action="store_true", help=FORCE_HELP + " (OUT, its index.html and batch.json)")
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
        help="block device(s) to measure (the search and notebook 06's one fio per device use all, "
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
    p.add_argument("--force", action="store_true", help=FORCE_HELP + " (OUT and the pages in it)")
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
    p = add(
        "init",
        help="make a workspace for a pip-installed iolab: the notebooks, seed manifests, examples and reference figures",
        description="Copies the kit (notebooks/, data/seeds, data/examples, data/reference) into FOLDER, a new "
        "or empty folder, and marks it: every iolab command run inside it uses it as a checkout's folder.",
    )
    p.add_argument("folder", help="the new workspace (a new or empty folder)")
    p.set_defaults(func=cmd_init)
    p = add("demo", help="run the flagship notebooks headless and write HTML reports")
    p.add_argument("--out", help="output folder (default papermill_runs/)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP + " (OUT, its notebooks and pages)")
    p.add_argument("--runtime", type=finite(0), help="seconds per fio run (default 0.4; 08 runs 10x that)")
    p.add_argument("--cpus", help="the CPU to measure on, e.g. 1 (default: CPU 0, as the notebooks)")
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
    p.add_argument("--controllers", type=whole(1, 8), default=2, help="emulated NVMe controllers (default 2)")
    p.add_argument("--namespace-size", default="1g", help="size of each one's namespace, fio units (default 1g)")
    p.add_argument("--vcpus", type=whole(1, 8), default=2, help="guest CPUs (default 2)")
    p.add_argument("--memory-mb", type=whole(512, 1 << 20), default=2048, help="guest memory in MiB (default 2048)")
    p.add_argument(
        "--poll-queues",
        type=whole(0, 64),
        default=None,
        help="nvme.poll_queues: queues for polled IO (default 2, or 1 with one vCPU)",
    )
    p.add_argument(
        "--timeout", type=finite(0.001), default=900, help="seconds before a hung guest is killed (default 900)"
    )
    p.add_argument(
        "--tcg-thread",
        choices=("multi", "single"),
        default="multi",
        help="without KVM: a host thread per vCPU (multi, QEMU's default) or one for them all (single: "
        "less CPU time on a host busy with other work; parallel work in the guest gets one host CPU)",
    )
    p.add_argument(
        "--slot",
        action="append",
        default=[],
        metavar="INDEX:KEY=VALUE,...",
        help="put controller INDEX behind a PCIe root port of its own: the port's link speed (GT/s: 2.5, 5, 8, "
        "16) and width (lanes), node (guest NUMA node 0 or 1, a pxb-pcie host bridge), e.g. --slot "
        "1:speed=2.5,width=1 --slot 2:node=1; QEMU's NVMe endpoint itself trains at 2.5 GT/s x1, so a port "
        "shows its cap in sysfs, not a slower device (iolab preflight in the guest names what each changes)",
    )
    p.add_argument("--force", action="store_true", help=FORCE_HELP + " (papermill_runs/NAME.nvmelab.ipynb, .html)")
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
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=cmd_publish)
    p = add(
        "lab",
        allow_abbrev=False,
        help="JupyterLab on the project folder, notebooks/ open, with the project's kernel (as make lab); "
        "other --options pass through to JupyterLab",
    )
    p.add_argument("--port", default="8888", help="port on --ip (default 8888); a busy port is an error")
    p.add_argument(
        "--ip",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: reach it with ssh -L 8888:127.0.0.1:8888)",
    )
    p.add_argument(
        "--notebook-dir",
        help="folder JupyterLab serves (default: the project folder, README.md at its top; the file browser "
        "opens on its notebooks/ when it has one)",
    )
    p.set_defaults(func=cmd_lab)
    p = add(
        "reproduce",
        help="run an executed notebook's source again with its parameters; compare its recorded results",
        description="Re-executes the notebook EXECUTED was run from (papermill's input_path, else "
        "notebooks/<its name>) with the parameters it ran with, and prints each recorded "
        "result (iolab.record.results): original, re-run, difference %% and whether the re-run lies "
        "in the original's interval [low, high] (without one: within --tolerance-pct). When "
        "a result drifted, the machine snapshot differences that may explain it (kernel, fio "
        "version, governor, frequency source, scheduler, SMT). Exit 0: all agree; 3: a result "
        "drifted; 1: an error (e.g. no recorded results); 130: interrupted.",
    )
    p.add_argument("executed", help="an executed notebook (papermill_runs/…ipynb) that recorded results")
    p.add_argument("--out", help="folder for the re-executed notebook (default papermill_runs/reproduced)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP + " (OUT and the re-executed notebook)")
    p.add_argument(
        "--tolerance-pct",
        type=finite(0),
        default=10.0,
        help="how far (%% of the original) a result without an interval may move (default 10)",
    )
    p.set_defaults(func=cmd_reproduce)
    p = add(
        "history",
        help="the results every executed notebook recorded, with their provenance (the local history)",
        description="Prints the local history of recorded results (iolab.record.history): every result a "
        "notebook recorded when it ran to its end through papermill (iolab batch, demo, reproduce, seeds, "
        "nvmelab), with its interval, unit, date, kernel, fio version, machine, iolab commit and notebook. "
        "The history is a folder of Parquet parts: IOLAB_HISTORY, else history/ in the data folder "
        "(IOLAB_HISTORY=off keeps none). Per-setting results (record_many) are left out unless --all or "
        "--metric names them. Notebook 09_history.ipynb draws each result over time or kernel version.",
    )
    p.add_argument(
        "--metric",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="only the results of these names (exact, e.g. --metric 'peak IOPS')",
    )
    p.add_argument("--since", help="only results recorded since a date (2026-11-01, UTC) or an age (7d, 24h, 30m)")
    p.add_argument(
        "--notebook",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="only the results of these notebooks (names without .ipynb, e.g. 01_queue_depth_knee)",
    )
    p.add_argument("--format", choices=("text", "csv", "json"), default="text", help="text (default), csv or json")
    p.add_argument("--dir", help="the history folder to read (default: IOLAB_HISTORY, else data/history)")
    p.add_argument("--all", action="store_true", help="the per-setting results too")
    p.set_defaults(func=cmd_history)
