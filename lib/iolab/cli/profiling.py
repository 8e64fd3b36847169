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
        "--whole-cpu",
        action="store_true",
        help="with --profile: draw and read every program's samples on the run's CPUs, not fio's own (its threads, "
        "io_uring's workers, its devices' kernel workers)",
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
        given = [f for f, on in (("--call-graph", args.call_graph != "fp"), ("--whole-cpu", args.whole_cpu)) if on]
        if given:
            from ..core.errors import InputError

            raise InputError(f"{' and '.join(given)} say how --profile reads its samples: add --profile, or drop them")
        return None
    from ..machine.perf import ProfileSpec

    return ProfileSpec(call_graph=args.call_graph)


def report(run_dir: Path, table, whole_cpu: bool = False) -> None:
    """Write the flame graph into the profiled run folder ``run_dir`` and print the reading of
    its stacks (fio's own samples, or ``whole_cpu``: every program's on its CPUs); ``table``:
    the run's rows with ``add_cycles_per_io``'s columns."""
    from ..core.atomic import write_atomic
    from ..core.runfiles import PERF_FOLDED, PERF_OWN_FOLDED
    from ..machine.perf import stacks_scope
    from ..plots import flamegraph
    from ..read import profile
    from ..read.run import RunFolder
    from ..runs.store import load_stacks

    stacks = load_stacks(run_dir, whole_cpu)
    scope = stacks_scope(run_dir, whole_cpu)
    cpus = RunFolder(run_dir).params().get("cpus")
    where = f"CPU{'s' if cpus and len(cpus) > 1 else ''} {','.join(map(str, cpus))}" if cpus else "every CPU"
    hardware = "perf_cycles" in table and table["perf_cycles"].notna().any()
    event = "cycles" if hardware else "cpu-clock (no hardware counters)"
    title = f"{run_dir.name}: perf record on {where}, {event}; {scope}; width: share of their samples"
    svg = run_dir / FLAME_GRAPH
    write_atomic(svg, flamegraph.svg(stacks, title=title))
    busy = profile.without_idle(stacks)
    folded = run_dir / (PERF_FOLDED if whole_cpu or not (run_dir / PERF_OWN_FOLDED).exists() else PERF_OWN_FOLDED)
    print(f"\nprofile: perf record on {where}, {event}; samples of {scope}; folded stacks {folded}")
    if not whole_cpu and (run_dir / PERF_OWN_FOLDED).exists():
        print(f"every program's samples: {run_dir / PERF_FOLDED} (iolab run --profile --whole-cpu reads them)")
    print(f"flame graph (opens offline in a browser): {svg}")
    print(profile.describe(stacks, WATCH))
    if busy:
        top = profile.frames(busy, TOP)
        print(f"\ntop functions (% of busy samples):\n{top.to_string(index=False, float_format=lambda v: f'{v:.1f}')}")
        kinds = profile.categories(busy)
        print(f"\nkind of work (% of busy samples):\n{kinds.to_string(index=False, float_format=lambda v: f'{v:.1f}')}")
    print("\n" + "\n".join(cycles_lines(table)))


def cycles_lines(table) -> list[str]:
    """Cycles per IO of each row, fio's own and the cores' busy time (with perf stat's where
    the machine counts cycles), each naming its source."""
    out = []
    for row in table.itertuples():
        name = f"{getattr(row, 'job', '')} {getattr(row, 'direction', '')}".strip()
        own = getattr(row, "cycles_per_io", float("nan"))
        busy = getattr(row, "cycles_per_io_core", float("nan"))
        perf = getattr(row, "cycles_per_io_perf", float("nan"))
        other = getattr(row, "other_cpu_pct", float("nan"))
        freq = getattr(row, "freq_source", "?")
        line = (
            f"cycles per IO ({name}), frequency from {freq}: {own:,.0f} fio's own "
            f"({getattr(row, 'cycles_per_io_source', '')}); {busy:,.0f} from the cores' busy time"
            + (f", {other:.0f} % of it other programs'" if other == other else "")
        )
        if perf == perf:  # not NaN
            line += f"; {perf:,.0f} from perf stat cycles ({row.cycles_per_io_disagreement_pct:+.0f} %)"
        else:
            line += "; none from perf stat: no hardware counters here (cycles not supported)"
        out.append(line)
    return out
