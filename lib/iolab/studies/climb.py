"""The tuning ladder as seed 000's author climbed it: every step measured at its own operating
point, found by searching the queue depth again at each step.

The author did not change one option at a fixed depth: at every step he moved the queue
depth to the new knee of the latency curve (64 -> 32 on the E-core, 48 with passthrough,
128 with batching, 512 for t/io_uring). At a fixed depth a step that lowers the CPU cost
per IO shows no gain when the depth, not the CPU, is the limit. So here each fio step runs
the operating-point search (``iolab.stats.operating_search``: the knee, the peak, or the
deepest queue with p99 under a target) over ``queue_depths``; its row carries the depth
found with its interval, and its IOPS and latencies there; its gain is against the
previous carried-forward step at that step's own depth, with an interval
(``iolab.stats.repeat_stats.compare``). Batching steps scale their batch sizes with the
depth as the author's did (submit 32 and complete 8 at 128: a quarter and a sixteenth).
t/io_uring steps run at their own ``-d`` (not searched), and say so.

    result = climb(default_ladder(), target, cpu=0, rule="knee", runs_dir="data/runs/climb")
    result.steps       # one row per step: qd found [low, high], IOPS and p99 there, gain
    result.frontier    # one row per step and depth measured: IOPS, p50, p99, chosen or not

Steps skipped or failed are rows with their reason, as in ``ladder.run_ladder``; a re-run
into the same ``runs_dir`` replays the searches from the stored runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError, IolabError
from ..core.progress import bar
from ..core.readable import interval_text, readable_seconds
from ..core.validate import positive_ints
from ..machine.target import Target
from ..measure.campaign import Rounds
from ..measure.options import MeasureOptions
from ..measure.plans import RUN_OVERHEAD_S
from ..measure.sweep import Grid, new_sweep_dir, sweep, warmup_for
from ..stats import repeat_stats
from ..stats.cycles import add_cycles_per_io
from ..stats.operating_search import Rule, next_depths, point_with_interval
from .ladder import Step, base_options, capabilities, plan, run_step, step_target, with_gains

DEFAULT_DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
EMULATED = "emulated (iolab's NVMe lab): an emulator's numbers, not a device's"
BATCH_OPTIONS = ("iodepth_batch_submit", "iodepth_batch_complete")


@dataclass
class Climb:
    """What ``climb`` measured: ``steps`` (a row per step), ``frontier`` (a row per step and
    depth measured), ``table`` (every run, tidy), the ``rule`` and the runs it made beside
    those of the fixed-depth ladder with the same repeats (``fixed_runs``)."""

    steps: pd.DataFrame
    frontier: pd.DataFrame
    table: pd.DataFrame
    rule: Rule
    runs: int
    fixed_runs: int


def at_depth(options: Mapping[str, Any], qd: int) -> dict[str, Any]:
    """``options`` at queue depth ``qd``, their batch sizes scaled as a share of the depth
    they were written for (submit 32 at 128 -> 8 at 32), at least 1."""
    out = {**options, "iodepth": int(qd)}
    written = int(options.get("iodepth") or qd)
    for name in BATCH_OPTIONS:
        if name in options:
            out[name] = max(1, min(int(qd), round(int(options[name]) * qd / written)))
    return out


def climb(
    steps: Sequence[Step],
    target: Target,
    *,
    cpu: int = 0,
    base: Mapping[str, Any] | None = None,
    queue_depths: Sequence[int] = DEFAULT_DEPTHS,
    rule: str | Rule = "knee",
    repeats: int = 3,
    budget: int | None = None,
    seed: int = 0,
    runs_dir: str | Path | None = None,
    opt_in: bool = False,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> Climb:
    """Climb ``steps`` on ``target`` pinned to ``cpu``. ``repeats``: runs at each step's
    operating point (``repeats - 1`` at its neighbours), as many as the fixed ladder's per
    step; ``budget``: the most runs one step's search may make (``3 x repeats`` by default:
    the climb costs at most three times the fixed ladder); ``base``: fio options every step
    starts from (4 KiB random reads, ``runtime`` 2 s by default); one discarded warm-up run
    starts the climb. ``runs_dir``: a new ``climb-<time>`` folder under data/runs by default."""
    rule = Rule.parse(rule)
    queue_depths = sorted(set(positive_ints("queue_depths", queue_depths)))
    if len(queue_depths) < 3:
        raise InputError(f"queue_depths={queue_depths}: a step's search needs at least 3 depths, e.g. [1, 4, 16, 64]")
    [repeats] = positive_ints("repeats", [repeats])
    [budget] = positive_ints("budget", [budget or 3 * repeats])
    current, runtime_s = base_options(base)
    runs_dir = runs_dir or new_sweep_dir("climb")
    rows, frontier, frames, measured = [], [], [], {}
    first = True
    planned = plan(list(steps), capabilities(target, opt_in))  # the target probed once
    for i, (step, reason) in enumerate(bar(planned, "climb", unit="step")):
        row: dict[str, Any] = {"step": i, "name": step.name, "tool": step.tool, "author_qd": step.author_qd}
        rows.append(row)
        if reason:
            row |= {"status": "skipped", "reason": reason}
            continue
        opts = {**current, **step.fio}
        try:
            if step.tool == "tio":
                table = run_step(
                    step, i, opts, current, target=target, cpu=cpu, runtime_s=runtime_s, runs_dir=runs_dir,
                    repeats=repeats, warmup=warmup_for("run", first=first), how=how,
                )  # fmt: skip
                qd = int(step.tio_flags.get("d", 128))
                runs = {qd: repeat_stats.per_run(table)}
                point = None
                row["reason"] = f"t/io_uring at its own -d {qd}, not searched"
            else:
                step_rule = rule
                if step.peak_only and rule.kind == "p99":  # gtod_reduce: fio measures no latency
                    step_rule = Rule("peak")
                    row["reason"] = "no latency (peak only): its depth by the peak IOPS, not the p99 target"
                runs, table = _search(step, i, opts, target, cpu, queue_depths, step_rule, repeats, budget, seed,
                                      runs_dir, how, first)  # fmt: skip
                point = point_with_interval(step_rule, {q: _pairs(r) for q, r in runs.items()}, seed=seed)
                qd = point.x
                if point.moved:  # the rule's knee still gained at the next depth: the point moved up
                    row["reason"] = "; ".join(t for t in (row.get("reason"), point.moved) if t)
        except IolabError as exc:
            row |= {"status": "failed", "reason": str(exc).splitlines()[0]}
            continue
        first = False
        frames.append(table)
        frontier += [_frontier_row(i, step.name, q, r, q == qd) for q, r in sorted(runs.items())]
        if qd is None:
            row |= {"status": "no point", "reason": point.note, "runs": sum(len(r) for r in runs.values())}
            continue
        at = runs[qd]
        deeper = [q for q in sorted(runs) if q > qd]
        row |= {
            "status": "measured",
            "qd": int(qd),
            "saturation_shown": bool(point) and bool(deeper) and len(runs[deeper[0]]) >= 2 and len(runs[qd]) >= 2,
            "qd_low": point.low if point else None,
            "qd_high": point.high if point else None,
            "runs": sum(len(r) for r in runs.values()),
            "runs_at_qd": len(at),
            **_figures(at),
            "carried_forward": not step.peak_only and step.tool == "fio",
        }
        row.setdefault("reason", "")
        measured[i] = at.assign(step=f"step {i}")
        if row["carried_forward"]:
            current = opts
    steps_table = with_gains(pd.DataFrame(rows), measured)  # each step at its own operating point
    for column in ("qd", "runs", "runs_at_qd", "author_qd"):
        if column in steps_table:
            steps_table[column] = steps_table[column].astype("Int64")
    table = add_cycles_per_io(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()
    fixed = repeats * sum(not why for _, why in planned)  # the fixed-depth ladder's runs of the same steps
    made = int(table["run_id"].nunique()) if "run_id" in table else 0
    frontier = pd.DataFrame(frontier)
    emulated = bool("emulated" in table and table["emulated"].fillna(False).astype(bool).any())
    steps_table.attrs["emulated"] = frontier.attrs["emulated"] = emulated  # said in the table and the figure
    return Climb(steps_table, frontier, table, rule, made, fixed)


def climb_plan(steps: Sequence[Step], target: Target, *, repeats: int = 3, budget: int | None = None,
               runtime_s: float = 2.0, opt_in: bool = False) -> str:  # fmt: skip
    """The climb's plan in words: the steps that run, at most how many runs and how long,
    beside the fixed-depth ladder's runs (``--dry-run``)."""
    budget = budget or 3 * repeats
    planned = plan(list(steps), capabilities(target, opt_in))
    running = [s for s, why in planned if not why]
    runs = sum(repeats if s.tool == "tio" else budget for s in running)
    skipped = [f"{s.name} ({why})" for s, why in planned if why]
    return (
        f"climb: {len(running)} steps, at most {runs} runs (a search of at most {budget} runs per fio step, "
        f"{repeats} per t/io_uring step), about {readable_seconds(runs * (runtime_s + RUN_OVERHEAD_S))} at most; "
        f"the fixed-depth ladder: {len(running) * repeats} runs"
        + (f"; skipped: {'; '.join(skipped)}" if skipped else "")
    )


def _search(step, i, opts, target, cpu, queue_depths, rule, repeats, budget, seed, runs_dir, how, first):
    """One step's operating-point search: {depth: its runs (``per_run``)}, and its tidy table."""
    tgt = step_target(target, opts)
    axes = {name: [value] for name, value in step.knobs.items()}
    runs: dict[int, pd.DataFrame] = {}
    frames = []
    while (
        todo := next_depths(
            rule, {q: _pairs(r) for q, r in runs.items()}, queue_depths, budget=budget, confirm=repeats, seed=seed
        )  # fmt: skip
    ).depths:
        for q in todo.depths:
            q = int(q)
            have = len(runs.get(q, ()))
            grid = Grid({**axes, "iodepth": [q]}, at_depth(opts, q), {"iodepth": "qd"},
                        {"step": i, "step_name": step.name}, "fio", f"step{i}")  # fmt: skip
            table = sweep(grid, target=tgt, cpus=[cpu], runs_dir=runs_dir, how=how, progress=None,
                          rounds=Rounds(have + 1, warmup=warmup_for("run", first=first and not frames)))  # fmt: skip
            new = table[table["repeat"] == have]
            frames.append(new)
            runs[q] = pd.concat([runs[q], repeat_stats.per_run(new)]) if q in runs else repeat_stats.per_run(new)
    return runs, pd.concat(frames, ignore_index=True)


def _pairs(runs: pd.DataFrame) -> list[tuple[float, float]]:
    p99 = runs["clat_p99_us"] if "clat_p99_us" in runs else pd.Series(float("nan"), index=runs.index)
    return list(zip(runs["iops"].astype(float), p99.astype(float)))


def _figures(runs: pd.DataFrame) -> dict[str, Any]:
    """Means over the runs at the operating point, with 95 % intervals (NaN with one run)."""
    out: dict[str, Any] = {}
    for c in ("iops", "clat_p50_us", "clat_p99_us", "cycles_per_io"):
        if c in runs:
            out[c] = runs[c].mean()
            if c != "cycles_per_io":
                out[f"{c}_ci_low"], out[f"{c}_ci_high"] = repeat_stats.interval(runs[c], c)
    return out


def _frontier_row(i: int, name: str, qd: int, runs: pd.DataFrame, chosen: bool) -> dict[str, Any]:
    return {
        "step": i,
        "name": name,
        "qd": int(qd),
        "runs": len(runs),
        "iops": runs["iops"].mean(),
        "clat_p50_us": runs["clat_p50_us"].mean() if "clat_p50_us" in runs else float("nan"),
        "clat_p99_us": runs["clat_p99_us"].mean() if "clat_p99_us" in runs else float("nan"),
        "chosen": bool(chosen),
    }


def readable(steps: pd.DataFrame) -> pd.DataFrame:
    """The climb's steps as a write-up shows them: the depth found here with its interval
    beside the author's, IOPS and p99 there with their 95 % intervals, the gain over the last
    kept step, and why a step has no figures."""
    rows = []
    for r in steps.to_dict("records"):
        measured = r.get("status") == "measured"
        rows.append(
            {
                "step": f"{r['step']}. {r['name']}",
                "queue depth here": _depth_cell(r) if measured else "–",
                "author's queue depth": "–" if pd.isna(r.get("author_qd")) else f"{int(r['author_qd'])}",
                "IOPS (IO/s) [95 % interval]": _cell(r, "iops") if measured else "–",
                "p99 latency (µs) [95 % interval]": _cell(r, "clat_p99_us") if measured else "–",
                "gain over the last kept step": _gain_cell(r) if measured else "–",
                "runs": "–" if pd.isna(r.get("runs")) else f"{int(r['runs'])}",
                "note": "; ".join(
                    t
                    for t in (
                        r.get("reason") or ("" if measured else r.get("status", "")),
                        EMULATED if measured and steps.attrs.get("emulated") else "",
                    )
                    if t
                ),
            }
        )
    out = pd.DataFrame(rows)
    for column in ("IOPS (IO/s) [95 % interval]", "p99 latency (µs) [95 % interval]"):  # promised only where held
        if len(out) and not out[column].str.contains("[", regex=False).any():
            out = out.rename(columns={column: column.removesuffix(" [95 % interval]")})
    return out


def beside_author(steps: pd.DataFrame) -> list[str]:
    """Where this machine's operating points and the author's disagree, in words, one line per
    measured step with an author's depth ("here the knee of step 1 is at QD 16, the author's at
    32: this CPU or device saturates sooner"). "Saturates sooner" only where the step's own runs
    show it: the next depth was run at least twice and gained no more than its interval (or 5 %)
    over the point (``operating_points.saturated``); else it says that is not shown."""
    lines = []
    for r in steps.to_dict("records"):
        if r.get("status") != "measured" or pd.isna(r.get("author_qd")) or r.get("tool") == "tio":
            continue
        here, theirs = int(r["qd"]), int(r["author_qd"])
        low, high = r.get("qd_low"), r.get("qd_high")
        inside = low is not None and not pd.isna(low) and low <= theirs <= high
        if here == theirs or inside:
            lines.append(f"step {r['step']} ({r['name']}): QD {here} here, {theirs} for the author: the same point")
        elif here < theirs and not r.get("saturation_shown"):  # no deeper depth measured twice: not shown
            lines.append(
                f"step {r['step']} ({r['name']}): QD {here} here, {theirs} for the author: whether this CPU or "
                "device saturates sooner is not shown (no deeper depth was run twice here)"
            )
        else:
            why = (
                "this CPU or device saturates sooner"
                if here < theirs
                else "this CPU or device keeps up to a deeper queue"
            )
            lines.append(f"step {r['step']} ({r['name']}): QD {here} here, {theirs} for the author: {why}")
    return lines


def _depth_cell(r: Mapping[str, Any]) -> str:
    low, high = r.get("qd_low"), r.get("qd_high")
    if low is None or pd.isna(low) or pd.isna(high) or low == high == r["qd"]:
        return f"{int(r['qd'])}"  # no interval, or every resample chose this depth
    return f"{int(r['qd'])} [{low:g}, {high:g}]"


def _cell(r: Mapping[str, Any], metric: str) -> str:
    mean, low, high = r.get(metric), r.get(f"{metric}_ci_low"), r.get(f"{metric}_ci_high")
    if mean is None or pd.isna(mean):
        return "–"
    if low is None or pd.isna(low) or pd.isna(high):  # the header promises an interval: say why there is none
        return f"{mean:,.0f} ({repeat_stats.no_interval_words(r.get('runs'), r.get(f'{metric}_cv_pct'))})"
    return f"{mean:,.0f} {interval_text(f'{low:,.0f}', f'{high:,.0f}')}"


def _gain_cell(r: Mapping[str, Any]) -> str:
    gain, low, high = r.get("gain_pct"), r.get("gain_low_pct"), r.get("gain_high_pct")
    if gain is None or pd.isna(gain):
        return "–"
    if pd.isna(low) or pd.isna(high):
        return f"{gain:+.0f} %"
    return f"{gain:+.0f} % [{low:+.0f}, {high:+.0f}]"


def step_points(steps: pd.DataFrame) -> list[dict[str, Any]]:
    """Every step's operating point as ``results.record_many`` entries: "QD at the operating
    point: baseline io_uring" (with its interval) and "IOPS at the operating point: ..." (with
    its 95 % interval); a step without one has no value and its reason as the note (what
    ``iolab seeds`` puts beside the author's depths)."""
    out = []
    for r in steps.to_dict("records"):
        measured = r.get("status") == "measured"
        note = (r.get("reason") or "") if measured else f"{r.get('status')}: {r.get('reason') or ''}"
        for what, column, unit in (("QD", "qd", "QD"), ("IOPS", "iops", "IO/s")):
            low, high = (
                (r.get("qd_low"), r.get("qd_high")) if column == "qd" else (r.get("iops_ci_low"), r.get("iops_ci_high"))
            )
            out.append(
                {
                    "name": f"{what} at the operating point: {r['name']}",
                    "value": r.get(column) if measured else None,
                    "unit": unit,
                    "low": None if low is None or pd.isna(low) else low,
                    "high": None if high is None or pd.isna(high) else high,
                    "source": f"step {r['step']}",
                    "note": note,
                }
            )
    return out
