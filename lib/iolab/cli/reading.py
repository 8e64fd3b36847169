"""``iolab parse``, ``table``, ``compare``, ``explain``, ``knee``, ``fold``, ``threads``, ``series`` and
``check``: the commands that read what runs and tools left (fio output, run folders, CSV
curves, perf stacks, thread states, interval logs) and print a table or a verdict. Each command imports
what it needs when it runs (pandas is slow to import): ``iolab --help`` stays fast."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..core.errors import InputError, IolabError, printable
from ..core.outputs import FORCE_HELP
from ..core.runfiles import FIO_JSON, PERF_DATA, PERF_FOLDED, RUN_JSON, TIO_TXT
from .argtypes import finite, whole
from .messages import one_line


def cmd_parse(args, _extra) -> int:
    from ..core import validate

    if len(args.file) > 1 and not args.pool:
        raise InputError(
            f"{len(args.file)} files given; parse one at a time, or add --pool for one row "
            "per direction pooling them all"
        )
    if args.files_are and not args.pool:
        raise InputError("--files-are says how --pool treats several files; add --pool")
    texts = [
        validate.input_file(f, "fio JSON file", inside=(FIO_JSON, TIO_TXT)).read_text(errors="replace")
        for f in args.file
    ]
    from ..read.fiojson import parse_output  # slow to import (pandas): once the files are known to be there
    from ..read.pool import pool_outputs
    from ..read.tio import looks_like_tio, parse_tio

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

    from ..core.outputs import claim_output, write_output
    from ..core.owned import mark

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
    if out is not None:
        claim_output(out, force=args.force, flag="--output")  # before the runs are read
    import pandas as pd

    from ..core.runfolders import RUN_FOLDER, runs_in, runs_under
    from ..runs.runcache import (
        load_cached,
        statuses,
        write_parquet,
    )  # slow to import (pandas): once the input is known good

    status = None if args.status == "all" else args.status
    # a folder of runs is read alone (a study's warm-up sub-folder is not its table, and is said);
    # a folder of study folders, each of them (runs_under's rule: one level below), each with its cache
    below = sorted({run.parent for run in runs_under(root)} - {root}) if not (root / RUN_JSON).exists() else []
    folders = below if below and not runs_in(root) else []
    with warnings.catch_warnings(record=True) as skipped:  # unreadable runs: one line each, not a traceback
        warnings.simplefilter("always")
        parts = [load_cached(f, status=status, cache=not args.no_cache) for f in folders or [root]]
        table = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
        table = table.drop(columns=RUN_FOLDER, errors="ignore")
    for warning in skipped:
        print(f"iolab table: {warning.message}", file=sys.stderr)
    if folders and not table.empty:
        print(
            f"iolab table: the runs of the {len(folders)} folder(s) in {root} (e.g. {folders[0].name}); "
            "give one of them for its runs alone",
            file=sys.stderr,
        )
    elif below and not folders:
        print(
            f"iolab table: {root}'s runs only; the runs in its sub-folder(s) {', '.join(f.name for f in below)} "
            "are not part of it (give a sub-folder to read them)",
            file=sys.stderr,
        )
    if table.empty:
        counts = statuses(root)
        for f in folders:
            counts.update(statuses(f))
        if not counts:
            raise InputError(
                f"{root} holds no run folders (<run>/run.json), nor do its folders; give the folder that holds "
                "them, e.g. data/runs or a study's runs folder"
            )
        have = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        raise InputError(
            f"{root} holds no {status + ' ' if status else ''}run that can be read (it has {have})"
            + ("; the lines above say why" if skipped or not status else "; --status all shows every run")
        )
    if args.format == "parquet":
        write_parquet(table, claim_output(out, force=args.force, flag="--output"))
        mark(out)
    else:
        text = table.to_json(orient="records", indent=1) + "\n" if args.format == "json" else table.to_csv(index=False)
        if out:
            write_output(out, text, force=args.force, flag="--output")
        else:
            sys.stdout.write(printable(text))  # labels and values from run folders: no raw control characters
    if out:
        print(f"iolab table: {len(table)} rows of {table['run_id'].nunique()} runs -> {out}", file=sys.stderr)
    return 0


def _html_out(args, example: str) -> Path | None:
    """``--html FILE`` of compare and explain, checked and claimed before the sides are read:
    never side A or B, never a user's file (``iolab.core.outputs``)."""
    from ..core.outputs import claim_output

    html_out = Path(args.html) if args.html else None
    if html_out is not None and (html_out.is_dir() or not html_out.parent.is_dir()):
        raise InputError(f"--html {html_out}: give a file in a folder that exists, e.g. {example}")
    if html_out is not None:
        claim_output(html_out, force=args.force, inputs=(args.a, args.b), flag="--html")
    return html_out


def _by_and_where(args) -> tuple[list[str] | None, dict[str, str]]:
    """``--by`` (None: iolab.compare.matching decides; 'none': one cell) and ``--where SETTING=VALUE``."""
    from ..core.runfiles import quote

    by = None if args.by is None else [c.strip() for c in args.by.split(",") if c.strip() and c.strip() != "none"]
    pairs = [w.partition("=") for w in args.where or []]
    bad = [k + eq + v for k, eq, v in pairs if not (k.strip() and eq and v.strip())]
    if bad:
        raise InputError(f"--where {quote(bad[0])}: give SETTING=VALUE, e.g. --where bs=4k")
    return by, {k.strip(): v.strip() for k, _, v in pairs}


RUN_ROWS = ("host", "host_status", "job", "direction")  # what names a row of one run's table


def print_run_table(table, cols) -> None:
    """One run's figures for a terminal: a line per figure in words with its unit (bandwidth in
    MiB/s, the frequency's source in words), a column per job, direction or host."""
    import pandas as pd

    from ..core.columns import label
    from ..core.readable import readable_value
    from ..stats.frequency import FREQ_WORDS

    shown = table[list(cols)].copy()
    if "bw_bytes_s" in shown:
        shown.insert(shown.columns.get_loc("bw_bytes_s"), "bw_mib_s", shown.pop("bw_bytes_s") / 2**20)
    if "freq_source" in shown:
        shown["freq_source"] = shown["freq_source"].map(lambda v: FREQ_WORDS.get(v, v))
    names = [c for c in RUN_ROWS if c in shown]
    heads = [" ".join(str(v) for v in row) or f"row {i}" for i, row in enumerate(shown[names].itertuples(index=False))]
    figures = [c for c in shown.columns if c not in names]
    out = pd.DataFrame(
        {head: [readable_value(v) for v in shown.iloc[i][figures]] for i, head in enumerate(heads)},
        index=[label(c) for c in figures],
    )
    print(out.to_string())


def print_run(table, cols, path, as_json: bool = False) -> None:
    """One stored run for ``iolab run`` and ``iolab tio``: ``print_run_table`` and where it is
    stored; with ``as_json``, JSON records on stdout for scripts (the figures' columns, run id
    and folder) and the rest on stderr."""
    if as_json:
        frame = table[[c for c in ("run_id", *cols) if c in table]].assign(run_folder=str(path))
        _print_frame(frame, "json")
        print(f"stored: {path}", file=sys.stderr)
    else:
        print_run_table(table, cols)
        print(f"stored: {path}")


def _print_frame(frame, form: str) -> None:
    """A table for scripts: ``form`` json (records) or csv, control characters escaped."""
    print(printable(frame.to_json(orient="records", indent=1) if form == "json" else frame.to_csv(index=False)), end="")


def cmd_compare(args, _extra) -> int:
    import warnings

    from ..core.outputs import write_output

    html_out = _html_out(args, "compare.html")
    if not 0.5 <= args.confidence < 1:
        raise InputError(f"--confidence {args.confidence:g}: give a level between 0.5 and 1, e.g. 0.95")
    if args.min_change < 0:
        raise InputError(f"--min-change {args.min_change:g}: give a percentage >= 0 (0 calls any difference shown)")
    from ..compare.page import compare_paths, html, table, text

    by, where = _by_and_where(args)
    metrics = [m.strip() for m in args.metric.split(",") if m.strip()] if args.metric else None
    with warnings.catch_warnings(record=True) as said:  # skipped runs, folders gone: one line each
        warnings.simplefilter("always")
        done = compare_paths(
            args.a, args.b, by, metrics, args.confidence, args.seed, args.min_change, args.across_devices, where
        )
    for warning in said:
        print(f"iolab compare: {warning.message}", file=sys.stderr)
    if args.format == "text":
        print(printable("\n".join(text(done))))  # names and set-ups read from the sides' files, escaped
    else:
        _print_frame(table(done), args.format)
    if html_out:
        write_output(html_out, html(done), force=args.force, inputs=(args.a, args.b), flag="--html")
        print(f"iolab compare: the page is {html_out}", file=sys.stderr)
    if done.versus.not_comparable:
        print(
            f"iolab compare: not comparable: {done.versus.not_comparable}; no verdict given "
            "(--across-devices compares anyway)",
            file=sys.stderr,
        )
        return 4
    return 3 if len(done.versus.worse) else 0


def cmd_explain(args, _extra) -> int:
    import warnings

    from ..compare.explain import explain_paths, lines, table
    from ..core.outputs import write_output

    html_out = _html_out(args, "explain.html")
    by, where = _by_and_where(args)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        found = explain_paths(args.a, args.b, args.metric, by=by, across_devices=args.across_devices, where=where)
    for warning in said:
        print(f"iolab explain: {warning.message}", file=sys.stderr)
    if args.format == "text":
        print(printable("\n".join(lines(found))))
    else:
        _print_frame(table(found), args.format)
    verified = _verify(found, args) if args.verify else None
    if html_out:
        from ..compare.explain_page import html

        write_output(html_out, html(found, verified), force=args.force, inputs=(args.a, args.b), flag="--html")
        print(f"iolab explain: the page is {html_out}", file=sys.stderr)
    return 0


def _verify(found, args):
    """``--verify``: the top set-up difference set to A's value on B's device, B's job run again
    (``iolab.studies.flip``), the share of the gap that closed (``iolab.compare.explain.closed``)."""
    from ..compare.explain import closed, flippable
    from ..runs.runcache import load_runs
    from ..stats.repeat_stats import per_run
    from ..studies.flip import rerun_with

    cause = flippable(found)
    first = found.compared.b.folders[0]
    print(
        f"iolab explain: --verify: {cause.knob} {cause.b} -> {cause.a} on B's device, B's job x {args.repeats}",
        file=sys.stderr,
    )
    folder = rerun_with(first, {cause.knob: cause.a}, args.repeats, args.runs_dir, args.allow_destructive)
    values = per_run(load_runs(folder))[found.metric].dropna().tolist()
    result = closed(found, cause, values)
    print(printable(result.words(found.metric) + f" (runs: {folder})"))
    return result


def cmd_knee(args, _extra) -> int:
    from ..stats.knee_interval import knee_with_interval
    from ..stats.knee_verdict import trusted_knee  # slow to import (pandas): only for this command

    table = _read_curve(args.csv, args.x, args.y)
    if args.method == "auto":  # notebook 01's one answer: the method this curve supports, and why
        if args.linear:
            raise InputError("--method auto reads the curve on log2 x: leave out --linear, or choose kneedle or power")
        verdict = trusted_knee(
            table[args.x], table[args.y], n_boot=args.resamples, seed=args.seed, level=args.level, name=args.x
        )
        print("none" if verdict.x is None else f"{verdict.x:g}")
        print(f"iolab knee: {verdict.line(args.x)}", file=sys.stderr)
        return 0
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

    from ..core import validate

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
    from ..read.fold import FoldOptions, fold_file

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
        from ..core import validate

        validate.input_file(args.input, "perf script text or perf.data file", inside=(PERF_DATA, PERF_FOLDED))
    with open(path, "rb") as f:
        is_perf_data = f.read(8) == b"PERFILE2"
    if is_perf_data:
        from ..machine.perf import fold_perf_data  # perf script streamed into the folder

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


def print_threads(
    runs: Path, by: str, *, frames: int = 3, top: int | None = None, fmt: str = "text", scope: str = "run"
) -> None:
    from ..read import threadstates  # slow to import (pandas): only for these commands

    tab = threadstates.table(runs, by, frames=frames, scope=scope)
    shown = tab.head(top) if top else tab
    if fmt == "csv":
        sys.stdout.write(printable(shown.to_csv(index=False)))  # thread names and frames from the run's files
    elif fmt == "json":
        print(printable(shown.to_json(orient="records", indent=1)))
    else:
        print(
            printable(shown.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
            if len(shown)
            else "no thread was active in the sampled states"
        )
        if top and len(tab) > top:
            print(f"({len(tab) - top} more rows: --top 0 shows them all)")
    note = threadstates.notes(runs, scope)
    if note:
        print(f"iolab threads: {note}", file=sys.stderr)


def cmd_threads(args, _extra) -> int:
    print_threads(
        Path(args.run_dir),
        args.by,
        frames=args.frames,
        top=args.top,
        fmt=args.format,
        scope="all" if args.all else "run",
    )
    return 0


def cmd_series(args, _extra) -> int:
    from ..read import series  # slow to import (pandas): only for this command

    s = series.read_series(Path(args.run_dir))
    if args.format == "json":
        print(printable(s.table.to_json(orient="records", indent=1)))
    else:
        sys.stdout.write(printable(s.table.to_csv(index=False)))  # job names from fio's files
    print(f"iolab series: {s.note()}", file=sys.stderr)
    return 0


def cmd_check(args, _extra) -> int:
    from ..core import validate
    from ..core.validate import parse_size
    from ..read import checks

    runs = []
    for given in args.run_dir:
        path = validate.input_file(given, "run folder") if not Path(given).is_dir() else Path(given)
        runs += (
            [path]
            if (path / RUN_JSON).exists()
            else [  # every run below, sweeps' folders too
                r.parent for r in sorted(path.rglob(RUN_JSON)) if not any(p.startswith(".tmp-") for p in r.parts)
            ]
        )
    if not runs:
        raise InputError(f"no run folders in {', '.join(args.run_dir)} (a run folder holds run.json)")
    ceiling = parse_size(args.ceiling) if args.ceiling else None
    failed = unreadable = 0
    rows = []  # --json: one record per run and check
    out = sys.stderr if args.json else sys.stdout  # --json: stdout holds the records alone
    for run in runs:
        if not (run / FIO_JSON).exists():
            print(
                printable(f"{run}: no fio report (failed, interrupted or a t/io_uring run): nothing to check"), file=out
            )
            continue
        try:
            found = checks.run_checks(run, ceiling_bytes_s=ceiling, latency_floor_us=args.latency_floor_us)
        except IolabError as exc:  # a file it cannot read: one line naming it; the other runs are checked
            if len(runs) == 1:
                raise
            from ..runs.store import skip_message

            print(f"iolab check: {one_line(skip_message(run, exc))}", file=sys.stderr)
            unreadable += 1
            continue
        stored = "" if (run / checks.FILE).exists() else " (re-derived: stored before checks were)"
        print(printable(f"{run}{stored}"), file=out)  # a folder's name as found on disk
        rows += [
            {"run_folder": str(run), "check": c.name, "direction": c.direction, "passed": c.passed, "words": c.words}
            | {"threshold": c.threshold}
            for c in found
        ]
        for c in found:
            mark = {True: "ok  ", False: "FLAG", None: "--  "}[c.passed]
            print(
                f"  {mark} {c.name:14} {c.direction:6} {c.words}" + (f"  [{c.threshold}]" if c.passed is False else ""),
                file=out,
            )
        failed += any(c.passed is False for c in found)
    print(
        f"{failed} of {len(runs)} runs flagged"
        + (f"; {unreadable} could not be read (said above, on stderr)" if unreadable else ""),
        file=out,
    )
    if args.json:
        print(printable(json.dumps(rows, indent=1, default=str)))
    return 3 if failed else 1 if unreadable else 0


def add_commands(add) -> None:
    """The parsers of this module's commands: ``add(name, **kw)`` makes one (``iolab.cli.build_parser``)."""
    p = add("parse", help="any fio JSON output (or t/io_uring text) -> the tidy table")
    p.add_argument("file", nargs="+", help="fio output file(s); several only with --pool")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
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
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument(
        "--status",
        choices=("all", "ok", "failed", "interrupted"),
        default="ok",
        help="the runs to include (default ok)",
    )
    p.add_argument("--no-cache", action="store_true", help="derive every run again; read and write no cache")
    p.set_defaults(func=cmd_table)
    p = add(
        "compare",
        help="did it get worse? B against A, cell by cell, with intervals (exit 3 when B is worse, 4 when the two cannot be compared)",
        description="Compare two result sets: runs folders (a study's, or data/runs), run folders, batch "
        "outputs (batch.json), seed outputs or executed notebooks. Cells are matched on every setting that "
        "varies on either side, by fio's names (a notebook's qd is a search's iodepth; iolab.compare.matching), "
        "never pooled across one; each metric gets B ÷ A - 1 with its interval (bootstrap and Welch t over the "
        "repeats, iolab.compare.versus) and a verdict: 'B is better by 12 %% [8, 16]', 'no difference "
        "shown', or 'not comparable: the devices differ'. What differs between the two set-ups (kernel, "
        "fio, governor, scheduler, firmware, job options) is listed first. Exit 3 when a metric got "
        "worse beyond its interval and the --min-change threshold (for CI); 1 on an error, and when the "
        "sides are not comparable (a setting one side varies cannot be matched on the other, or the devices "
        "or I/O patterns differ); 0 otherwise.",
    )
    p.add_argument("a", help="the baseline: a runs folder, batch output, seed outputs or executed notebook")
    p.add_argument("b", help="the one to judge against A, the same kinds")
    p.add_argument(
        "--by",
        help="settings to match cells on, comma-separated (default: every setting that varies on either side; "
        "refused when it leaves one out; 'none': one cell)",
    )
    p.add_argument(
        "--metric",
        help="metrics, comma-separated (default: iops, bw_bytes_s, clat_p50_us, clat_p99_us, cpu_busy_pct, "
        "cycles_per_io, those both sides have)",
    )
    p.add_argument("--format", choices=("text", "csv", "json"), default="text", help="text (default), csv or json")
    p.add_argument("--html", help="also write the comparison as an offline HTML page to FILE")
    p.add_argument("--force", action="store_true", help=FORCE_HELP + "; --html may then replace side A or B")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the bootstrap (default 0: repeatable)")
    p.add_argument(
        "--min-change",
        type=finite(0),
        default=2.0,
        help="smallest change in %% called better or worse, however sure (default 2: a shared machine drifts "
        "about that much; 0: call every difference the repeats show)",
    )
    p.add_argument(
        "--where",
        action="append",
        metavar="SETTING=VALUE",
        help="compare only the runs with this setting on both sides, e.g. --where bs=4k (repeatable; fio's "
        "names or iolab's: qd = iodepth)",
    )
    p.add_argument(
        "--across-devices",
        action="store_true",
        help="give verdicts even when the devices or I/O patterns differ (default: 'not comparable')",
    )
    p.set_defaults(func=cmd_compare)
    p = add(
        "explain",
        help="why is B slower than A? the recorded differences that account for the gap, ranked, with evidence",
        description="The gap as iolab compare gives it (B ÷ A of --metric over the matched cells), then every "
        "recorded difference between the two sides that could move it: a different job first (the comparison "
        "may stop there), then set-up, CPU and device causes ranked by how much of the gap each could account "
        "for on its own, from what both sides measured (other programs' share of the measuring CPUs, the "
        "clock, fio's cycles per IO and the scheduler behind them, readahead's device bytes per byte read), "
        "each with its figures; differences with no measured channel (kernel, fio versions, other queue "
        "settings) are listed, not ranked (iolab.compare.explain). Exit 0, or 1 on an error.",
    )
    p.add_argument("a", help="the baseline: a runs folder, batch output, seed outputs or executed notebook")
    p.add_argument("b", help="the slower one (or any other), the same kinds")
    p.add_argument("--metric", default="iops", help="the figure whose gap is explained (default iops)")
    p.add_argument("--by", help="settings to match cells on, as iolab compare --by")
    p.add_argument("--where", action="append", metavar="SETTING=VALUE", help="as iolab compare --where")
    p.add_argument("--format", choices=("text", "csv", "json"), default="text", help="text (default), csv or json")
    p.add_argument("--across-devices", action="store_true", help="explain even when the devices differ")
    p.add_argument(
        "--verify",
        action="store_true",
        help="test the top set-up difference: set it to A's value on B's device (put back after, Ctrl-C and "
        "SIGKILL included), run B's job again and say how much of the gap closed, with its interval",
    )
    p.add_argument("--repeats", type=whole(2), default=3, help="with --verify: runs of B's job (default 3)")
    p.add_argument("--runs-dir", help="with --verify: where its runs go (default data/runs/explain-verify-<time>)")
    p.add_argument("--allow-destructive", action="store_true", help="with --verify: B's job may write to a device")
    p.add_argument("--html", help="also write the explanation as an offline HTML page to FILE")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.set_defaults(func=cmd_explain)
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
        type=whole(0, 1_000_000),
        default=1000,
        help="bootstrap resamples of the repeats for the interval (default 1000; 0: none)",
    )
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the resampling (default 0: repeatable)")
    p.add_argument("--level", type=float, default=0.9, help="share of resamples the interval holds (default 0.9)")
    p.add_argument(
        "--method",
        choices=["kneedle", "power", "auto"],
        default="kneedle",
        type=lambda s: s.strip().lower(),
        help="kneedle (default): the bend of the curve; power: the x of maximum y²/x "
        "(throughput ÷ latency by Little's law, Kleinrock's optimal operating point); auto: the one "
        "answer notebook 01 gives (Kneedle where the curve supports it, else maximum power, and why)",
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
    p.add_argument("--frames", type=whole(0), default=3, help="innermost kernel frames in kstack (default 3)")
    p.add_argument("--top", type=whole(0), default=20, help="rows to print (default 20; 0: all)")
    p.add_argument(
        "--all",
        action="store_true",
        help="every process's threads (default: the run's own, fio and its jobs, and the kernel threads)",
    )
    p.add_argument("--format", choices=("text", "csv", "json"), default="text", help="text (default), csv or json")
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
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
    p.set_defaults(func=cmd_series)
    p = add(
        "check",
        help="is each number physically possible? the plausibility checks of stored runs "
        "(device vs fio, bus ceiling, latency floor, SSD state); exit 3 when one fails",
    )
    p.add_argument("run_dir", nargs="+", help="run folders, or folders holding them (older runs are re-derived)")
    p.add_argument(
        "--json", action="store_true", help="one JSON record per run and check on stdout, the text on stderr"
    )
    p.add_argument("--ceiling", help="the device's bandwidth ceiling, bytes/s with fio's units (e.g. 3.5G = 3.5 GiB/s)")
    p.add_argument(
        "--latency-floor-us", type=finite(0), help="the least mean completion latency the device class can do, µs"
    )
    p.set_defaults(func=cmd_check)
