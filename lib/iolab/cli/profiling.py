"""``iolab run --profile``: perf record around the run on its CPUs (``iolab.machine.perf``, as
notebook 04 does), then the offline flame graph beside the folded stacks in the run folder
(``iolab.plots.flamegraph.svg``) and the reading under the table (``iolab.read.profile``: top
functions, kinds of work; cycles per IO both ways, ``iolab.stats.cycles.add_cycles_per_io``)."""

from __future__ import annotations

from pathlib import Path

FLAME_GRAPH = "flamegraph.svg"  # in a profiled run folder, beside perf.folded: opens offline in a browser
WATCH = ("td_io_commit", "io_uring_enter", "io_submit_sqes", "_raw_spin_lock_irq", "filemap_read")  # notebook 04's
TOP = 10  # functions listed


def add_arguments(p) -> None:
    """``iolab run``'s profiling options."""
    p.add_argument(
        "--profile",
        action="store_true",
        help=f"perf record around the run on its CPUs: folded stacks (perf.folded), a flame graph ({FLAME_GRAPH}) "
        "in the run folder, and the reading (top functions, kinds of work, cycles per IO both ways) under the table",
    )
    p.add_argument(
        "--call-graph",
        choices=("fp", "dwarf", "none"),
        default="fp",
        help="with --profile: how perf unwinds stacks (fp: frame pointers, default; dwarf: a stripped fio's own frames "
        "too, larger perf.data and slower)",
    )


def spec(args):
    """The ProfileSpec ``iolab run``'s options ask for, or None without --profile."""
    if not args.profile:
        if args.call_graph != "fp":
            from ..core.errors import InputError

            raise InputError("--call-graph says how --profile unwinds stacks: add --profile, or drop --call-graph")
        return None
    from ..machine.perf import ProfileSpec

    return ProfileSpec(call_graph=args.call_graph)


def report(run_dir: Path, table) -> None:
    """Write the flame graph into the profiled run folder ``run_dir`` and print the reading of
    its stacks; ``table``: the run's rows with ``add_cycles_per_io``'s columns."""
    from ..core.atomic import write_atomic
    from ..core.runfiles import PERF_FOLDED
    from ..plots import flamegraph
    from ..read import profile
    from ..read.run import RunFolder
    from ..runs.store import load_stacks

    stacks = load_stacks(run_dir)
    cpus = RunFolder(run_dir).params().get("cpus")
    where = f"CPU{'s' if cpus and len(cpus) > 1 else ''} {','.join(map(str, cpus))}" if cpus else "every CPU"
    hardware = "perf_cycles" in table and table["perf_cycles"].notna().any()
    event = "cycles" if hardware else "cpu-clock (no hardware counters)"
    title = f"{run_dir.name}: perf record on {where}, {event}; width: share of the sampled time"
    svg = run_dir / FLAME_GRAPH
    write_atomic(svg, flamegraph.svg(stacks, title=title))
    busy = profile.without_idle(stacks)
    print(f"\nprofile: perf record on {where}, {event}; folded stacks {run_dir / PERF_FOLDED}")
    print(f"flame graph (opens offline in a browser): {svg}")
    print(profile.describe(stacks, WATCH))
    if busy:
        top = profile.frames(busy, TOP).assign(function=lambda d: d.function.map(profile.bare))
        print(f"\ntop functions (% of busy samples):\n{top.to_string(index=False, float_format=lambda v: f'{v:.1f}')}")
        kinds = profile.categories(busy)
        print(f"\nkind of work (% of busy samples):\n{kinds.to_string(index=False, float_format=lambda v: f'{v:.1f}')}")
    print("\n" + "\n".join(cycles_lines(table)))


def cycles_lines(table) -> list[str]:
    """Cycles per IO of each row, by both methods, each naming its source."""
    out = []
    for row in table.itertuples():
        name = f"{getattr(row, 'job', '')} {getattr(row, 'direction', '')}".strip()
        busy = getattr(row, "cycles_per_io", float("nan"))
        perf = getattr(row, "cycles_per_io_perf", float("nan"))
        line = (
            f"cycles per IO ({name}): {busy:,.0f} from busy CPU time x frequency ({getattr(row, 'freq_source', '?')})"
        )
        if perf == perf:  # not NaN
            line += f"; {perf:,.0f} from perf stat cycles ({row.cycles_per_io_disagreement_pct:+.0f} %)"
        else:
            line += "; none from perf stat: no hardware counters here (cycles not supported)"
        out.append(line)
    return out
