"""The single-core tuning ladder of seed 000: each step changes one thing relative to the
previous one and is measured; steps the target cannot do are skipped with the exact reason.

    steps = default_ladder(qd=32)
    table = run_ladder(steps, target, cpu=0, runs_dir=...)
    table[["step", "name", "status", "reason", "iops", "gain_pct"]]

With ``repeats`` > 1 each step runs that many times, in rounds (every step once per
round, later rounds shuffled) after a discarded warm-up run; its figures are means over
the repeats, and its gain has an interval and a verdict (``iolab.stats.repeat_stats``).

A step is data: a name, fio option changes (carried forward to later steps unless
``peak_only``), the capabilities it needs, and optionally a tool (``"tio"`` for fio's
t/io_uring) or knobs to set for that step only (``iolab.machine.knobs``: NVMe interrupt coalescing,
opt-in, always restored). Users write their own ladders as lists of ``Step``. Each step
runs through the generic sweep, so a ladder re-run into the same ``runs_dir`` resumes.
"""

from __future__ import annotations

import os
import platform
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import InputError, IolabError, with_nearest
from ..core.progress import bar
from ..core.validate import fio_seconds, fio_time_text
from ..machine import knobs
from ..machine.target import Target
from ..measure.campaign import Rounds
from ..measure.options import MeasureOptions
from ..measure.sweep import Grid, ask_ahead, new_sweep_dir, sweep, warmup_for
from ..read.published import published_figures
from ..stats import repeat_stats
from ..stats.cycles import add_cycles_per_io
from .per_core import have_tio


@dataclass
class Step:
    name: str
    fio: dict[str, Any] = field(default_factory=dict)
    requires: list[str] = field(default_factory=list)
    peak_only: bool = False  # measured, but not carried forward (gtod_reduce: no latency)
    tool: str = "fio"  # fio | tio
    tio_flags: dict[str, Any] = field(default_factory=dict)
    knobs: dict[str, Any] = field(default_factory=dict)  # iolab.machine.knobs values for this step only
    note: str = ""
    author_qd: int | None = None  # the queue depth seed 000's author ran this step at (studies.climb shows it)

    @classmethod
    def of(cls, given: Any) -> Step:
        """A step as a notebook's ``steps`` parameter gives it ({"name": ..., "fio": {...},
        "requires": [...]}); InputError, one line, for anything else: an unknown key or
        requirement (with the nearest), a missing name, a tool that is not fio or tio."""
        keys = [f.name for f in fields(cls)]
        if not isinstance(given, Mapping):
            raise InputError(
                f"a ladder step is a mapping such as {{'name': 'hipri', 'fio': {{'hipri': 1}}}}, not {given!r}"
            )
        name = given.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"a ladder step needs a name: {dict(given)!r}")
        unknown = [k for k in given if k not in keys]
        if unknown:
            raise InputError(
                f"ladder step {name!r}: unknown key {with_nearest(unknown, keys)}; a step takes {', '.join(keys)}"
            )
        requires = given.get("requires") or []
        if isinstance(requires, str) or not isinstance(requires, list):
            raise InputError(f"ladder step {name!r}: requires is a list such as ['poll'], not {requires!r}")
        known = [*CAPABILITIES, *(f"knob:{k}" for k in knobs.KNOBS)]
        wrong = [r for r in requires if r not in known]
        if wrong:
            raise InputError(
                f"ladder step {name!r}: unknown requirement {with_nearest(wrong, known)}; known: {', '.join(CAPABILITIES)} or knob:NAME"
            )
        if given.get("tool", "fio") not in ("fio", "tio"):
            raise InputError(f"ladder step {name!r}: tool is fio or tio, not {given['tool']!r}")
        bad_knobs = [k for k in given.get("knobs") or {} if k not in knobs.KNOBS]
        if bad_knobs:
            raise InputError(f"ladder step {name!r}: unknown knob {with_nearest(bad_knobs, list(knobs.KNOBS))}")
        return cls(**dict(given))


CAPABILITIES = ("poll", "nvme", "nvme_ng", "nvme_cli", "opt_in", "tio", "root")  # what a step may require


def author_depths() -> dict[str, int]:
    """The queue depth of each step seed 000 published, by its label there
    (data/reference/published_figures.csv, experiment ``ladder``)."""
    ref = published_figures(experiment="ladder", seed="000")
    return {r.label: int(r.qd) for r in ref.itertuples() if pd.notna(r.qd)}


def default_ladder(qd: int = 32, batch_qd: int = 128) -> list[Step]:
    """Seed 000's ladder (E-core, 472k -> 2.81M IOPS on a Gen5 NVMe SSD), each step with the
    queue depth its author ran it at (``author_qd``, from the published figures: he moved it to
    each step's knee). His step 4 added fixed buffers, registered files, norandommap and
    gtod_reduce at once: its depth is that of the gtod_reduce step here. InputError for a depth
    below 1 (batch_qd 0 was taken and failed a step in a notebook that ended with exit 0)."""
    for name, depth in (("qd", qd), ("batch_qd", batch_qd)):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise InputError(f"{name} is a queue depth: a whole number from 1, not {depth!r}")
    at = author_depths().get
    return [
        Step(
            "baseline io_uring",
            {"ioengine": "io_uring", "direct": 1, "iodepth": qd},
            author_qd=at("1 baseline io_uring"),
        ),
        Step("polled completions (hipri)", {"hipri": 1}, ["poll"], author_qd=at("2 + hipri (polled)")),
        # direct=0: the ngXnY char device refuses O_DIRECT (fio: "destination does not support
        # O_DIRECT"), and passthrough never goes through the page cache anyway
        Step(
            "NVMe passthrough (io_uring_cmd on /dev/ng)",
            {"ioengine": "io_uring_cmd", "cmd_type": "nvme", "direct": 0},
            ["nvme_ng"],
            note="filename becomes the /dev/ngXnY char device; direct=0 (no page cache on it)",
            author_qd=at("3 + io_uring_cmd passthrough"),
        ),
        Step(
            "fixedbufs + registerfiles + norandommap",
            {"fixedbufs": 1, "registerfiles": 1, "norandommap": 1},
        ),
        Step(
            "gtod_reduce (peak only: no latency)",
            {"gtod_reduce": 1},
            peak_only=True,
            author_qd=at("4 + fixedbufs/registerfiles/norandommap/gtod_reduce"),
        ),
        Step(
            "batching: submit 32, complete 8",
            {"iodepth": batch_qd, "iodepth_batch_submit": 32, "iodepth_batch_complete": 8},
            author_qd=at("5 + batch submit 32 / complete 8"),
        ),
        Step(
            "interrupt coalescing (NVMe feature 0x08 = 0x320)",
            {"hipri": 0},
            ["opt_in"],
            knobs={"nvme_coalescing": 0x320},
            author_qd=at("6 interrupts + NVMe coalescing 0x320"),
        ),
        Step(
            "t/io_uring",
            tool="tio",
            requires=["tio"],
            tio_flags={"d": batch_qd, "s": 32, "c": 8, "b": 4096, "B": 1, "F": 1},
            author_qd=at("8 t/io_uring"),
        ),
    ]


def capabilities(target: Target, opt_in: bool = False) -> dict[str, str | None]:
    """For each capability a step may need: None if available, else why not. A step's
    knobs need ``knob:<name>`` (``iolab.machine.knobs``' own check)."""
    dev = target.device or ""
    ng = Path(f"/dev/{dev.replace('nvme', 'ng', 1)}") if dev.startswith("nvme") else None
    caps: dict[str, str | None] = {
        "poll": knobs.get("io_poll").check(target, 1),
        "nvme": knobs.not_nvme(target),
        "nvme_ng": None
        if ng and ng.exists()
        else (
            f"no {ng} node (kernel 5.19+ with NVMe generic char devices)"
            if ng
            else f"no /dev/ng* node for {dev or target.path} (not NVMe)"
        ),
        "nvme_cli": knobs.no_nvme_cli(),
        "opt_in": None
        if opt_in
        else "changes a device setting: opt in to allow it (the notebook's opt_in_device_changes, iolab seeds' --opt-in-device-changes; always restored)",
        "tio": None if have_tio() else "t/io_uring not built: run `make tio`",
        "root": None if os.geteuid() == 0 else "needs root",
    }
    return caps | {f"knob:{name}": knob.check(target) for name, knob in knobs.KNOBS.items()}


def plan(steps: list[Step], caps: dict[str, str | None]) -> list[tuple[Step, str | None]]:
    """Each step with the reason it will be skipped (None = it runs)."""
    out = []
    for step in steps:
        needs = [f"knob:{k}" for k in step.knobs] + step.requires
        missing = [m for m in (caps.get(r, f"unknown capability {r!r}") for r in needs) if m]
        out.append((step, "; ".join(missing) if missing else None))
    return out


def base_options(base: Mapping[str, Any] | None) -> tuple[dict[str, Any], float]:
    """The fio options every step starts from (4 KiB random reads for 2 s, ``base`` on top) and
    their runtime in seconds; InputError for a runtime fio would not take."""
    current: dict[str, Any] = {"rw": "randread", "bs": "4k", "runtime": "2s", **(base or {})}
    current["runtime"] = fio_time_text(current["runtime"])
    return current, fio_seconds(current["runtime"])


def run_ladder(
    steps: list[Step],
    target: Target,
    *,
    cpu: int = 0,
    base: dict[str, Any] | None = None,
    runs_dir: str | Path | None = None,
    opt_in: bool = False,
    rounds: Rounds | Mapping[str, Any] | None = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run the ladder; one row per step (skipped steps included, with their reason), with
    ``gain_pct`` against the previous measured carried-forward step. A step that fails
    (fio, t/io_uring, a knob or nvme-cli: any IolabError) is a row with the reason, and
    the ladder goes on. ``base``: fio options every step starts from (4 KiB random reads for
    ``runtime`` 2 s by default; t/io_uring's steps run as many whole seconds, at least 2);
    ``how``: how each run is measured (``MeasureOptions``).

    Each step runs ``rounds.repeats`` times (``runs``: how many did); its figures are means over
    them, and ``gain_low_pct``/``gain_high_pct``/``gain_verdict`` are the gain's 95 %
    interval and its reading (``iolab.stats.repeat_stats.compare``; no interval with one run each).

    Step order and first touch can make a "gain" by themselves, so the repeats run in
    rounds: the first round walks the ladder in order (which steps run, and what each
    carries forward, is settled there), each later round runs every measured step once
    more — in ladder order (``order="interleaved"``) or shuffled by ``random.Random(seed)``
    (``"random"``, the default); ``"grid"`` runs each step's repeats back to back. The
    ladder starts with one discarded warm-up run (``warmup``, see ``iolab.measure.sweep.sweep``).
    ``runs_dir``: a new ``ladder-<time>`` folder under data/runs by default."""
    rounds = Rounds.of(rounds, order="random", warmup="run")  # InputError before anything runs
    repeats, order, seed, warm = rounds.repeats, rounds.order, rounds.seed, rounds.warmup_kind()
    current, runtime_s = base_options(base)
    rows: list[dict[str, Any]] = []
    measured: dict[int, tuple[Step, dict, dict]] = {}  # step -> (step, its options, what it built on)
    tables: dict[int, pd.DataFrame] = {}
    kw = dict(target=target, cpu=cpu, runtime_s=runtime_s, runs_dir=runs_dir or new_sweep_dir("ladder"), how=how)
    planned = plan(steps, capabilities(target, opt_in))
    _ask_ahead(planned, current, repeats, warm, kw)
    for i, (step, reason) in enumerate(bar(planned, "ladder", unit="step")):
        row = {"step": i, "name": step.name, "tool": step.tool}
        rows.append(row)
        if reason:
            row |= {"status": "skipped", "reason": reason}
            continue
        opts = {**current, **step.fio}
        try:
            tables[i] = run_step(
                step,
                i,
                opts,
                current,
                repeats=repeats if order == "grid" else 1,
                warmup=warmup_for(warm, first=not measured),
                **kw,
            )
        except IolabError as exc:
            row |= {"status": "failed", "reason": str(exc).splitlines()[0]}
            continue
        if step.tool == "tio":
            row["reason"] = _tio_unpolled(opts, target) or ""
        measured[i] = (step, opts, current)
        if not step.peak_only and step.tool == "fio":
            current = opts
    rng = random.Random(seed)
    for rnd in bar(range(1, repeats) if order != "grid" else [], "ladder rounds", unit="round"):
        ids = list(measured)
        if order == "random":
            rng.shuffle(ids)
        for i in ids:
            step, opts, built_on = measured[i]
            try:
                tables[i] = run_step(
                    step, i, opts, built_on, repeats=rnd + 1, warmup=warmup_for(warm, first=False), **kw
                )
            except IolabError as exc:  # the runs it has stay; the row says what failed
                rows[i]["reason"] = f"round {rnd + 1} failed: {str(exc).splitlines()[0]}"
    step_runs = {}
    for i, (step, _, _) in measured.items():
        step_runs[i] = repeat_stats.per_run(tables[i]).assign(step=f"step {i}")
        rows[i] |= {
            "status": "measured",
            "reason": rows[i].get("reason", ""),
            **_summary(step_runs[i]),
            "carried_forward": not step.peak_only and step.tool == "fio",
            "runs": len(step_runs[i]),
            "run_id": tables[i]["run_id"].iloc[0],
        }
    table = pd.DataFrame(rows)
    if "runs" in table:
        table["runs"] = table["runs"].astype("Int64")  # skipped steps: <NA>, not 2.0
    return with_gains(table, step_runs)


def with_gains(table: pd.DataFrame, step_runs: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """``table`` (a row per step) with each measured step's IOPS gain over the last measured
    carried-forward step: ``gain_pct``, its 95 % interval ``gain_low_pct``/``gain_high_pct``
    and ``gain_verdict`` (``step_runs``: step -> its runs, their ``step`` column "step N")."""
    gains = _gains(table, step_runs)
    table["gain_pct"] = [g.ratio_pct if g else float("nan") for g in gains]
    table["gain_low_pct"] = [g.low_pct if g else float("nan") for g in gains]
    table["gain_high_pct"] = [g.high_pct if g else float("nan") for g in gains]
    table["gain_verdict"] = [g.verdict if g else "" for g in gains]
    return table


def run_step(
    step: Step,
    i: int,
    opts: dict,
    current: dict,
    *,
    target: Target,
    cpu: int,
    runtime_s: float,
    runs_dir: str | Path,
    repeats: int = 1,
    warmup: Any = None,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One step through the generic sweep (its knobs applied around it): its tidy table."""
    grid, common = _step_sweep(step, i, opts, target, cpu, runtime_s, repeats, warmup)
    return add_cycles_per_io(sweep(grid, runs_dir=runs_dir, progress=None, how=how, **common))


def _step_sweep(
    step: Step, i: int, opts: dict, target: Target, cpu: int, runtime_s: float, repeats: int, warmup: Any
) -> tuple[Grid, dict[str, Any]]:
    """A step's sweep: its grid, and its target, CPUs and rounds (``run_step`` runs them)."""
    tgt = step_target(target, opts)
    common: dict[str, Any] = {"target": tgt, "cpus": [cpu]}
    tags, label = {"step": i, "step_name": step.name}, f"step{i}"
    axes = {name: [value] for name, value in step.knobs.items()}
    if step.tool == "tio":  # t/io_uring has no ramp time: a timed warm-up is fio's steps' only
        common["rounds"] = Rounds(repeats, warmup=warmup if warmup == "run" else None)
        flags = {"p": tio_polled(target), "r": max(int(runtime_s), 2), **step.tio_flags}
        if tgt.kind == "char":  # after the passthrough step: t/io_uring's own passthrough, without O_DIRECT
            flags |= {"u": 1, "O": 0}
        if _tio_unpolled(opts, target):
            flags["p"] = 0
        return Grid(axes, flags, {}, tags, "t/io_uring", label), common
    common["rounds"] = Rounds(repeats, warmup=warmup)
    return Grid(axes, opts, {}, tags, "fio", label), common


def _ask_ahead(planned: list[tuple[Step, str | None]], current: dict, repeats: int, warm: Any, kw: dict) -> None:
    """fio's reading of every fio run's job (each step's ``repeats`` and the warm-up), asked at
    once (``iolab.measure.sweep.ask_ahead``) as if every step is measured and carried forward
    (but ``peak_only`` ones), as the first round goes when none fails. Only a head start: a step whose job turns out
    otherwise has its own job read as it runs. ``kw``: run_ladder's arguments for ``run_step``."""
    sweeps = []
    for i, (step, reason) in enumerate(planned):
        opts = {**current, **step.fio}
        if reason or step.tool != "fio":
            continue
        first = warmup_for(warm, not sweeps)
        grid, common = _step_sweep(step, i, opts, kw["target"], kw["cpu"], kw["runtime_s"], repeats, first)
        sweeps.append({"grid": grid, **common})
        if not step.peak_only:
            current = opts
    ask_ahead(sweeps, kw["how"])


def step_target(target: Target, opts: Mapping[str, Any]) -> Target:
    """The target a step's options run on: the NVMe generic char device (/dev/ngXnY) once the
    passthrough engine is in them (this step's, or carried forward), else ``target``."""
    if opts.get("ioengine") == "io_uring_cmd":
        return Target("char", Path(f"/dev/{target.device.replace('nvme', 'ng', 1)}"), None, device=target.device)
    return target


def polled_passthrough_hazard() -> str | None:
    """Why t/io_uring's passthrough runs unpolled here, or None. In the NVMe lab, Debian's
    6.1 kernel oopsed (general protection fault in nvme_ns_chr_uring_cmd_iopoll, from
    io_ring_exit_work) each time t/io_uring exited with polled passthrough commands in flight
    (-u1 -p1 at -d128; fio, which reaps its IOs before it exits, never did). On a host that
    would take the machine down, so on 6.1 kernels the step is run without polling and says so."""
    release = platform.release()
    if release.startswith("6.1."):
        return (
            f"t/io_uring's passthrough ran unpolled (-p0): Linux {release} oopsed at ring exit with "
            "polled passthrough commands in flight (nvme_ns_chr_uring_cmd_iopoll, seen in the NVMe lab)"
        )
    return None


def tio_polled(target: Target) -> int:
    """t/io_uring's ``-p`` for the ladder's last step: 1 where the target has poll queues, as the
    author's 2.81M was polled (``-p 1``), whatever an earlier step set (the coalescing step runs
    fio unpolled, ``hipri: 0``, to measure interrupts; that is its measurement, not the ladder's
    last); 0 where polled IO cannot run (a loop device, an NVMe without poll queues)."""
    return int(knobs.get("io_poll").check(target, 1) is None)


def _tio_unpolled(opts: dict, target: Target) -> str | None:
    """Why this t/io_uring step, polled passthrough by what it carries, runs unpolled (None: it does not)."""
    if opts.get("ioengine") == "io_uring_cmd" and tio_polled(target):
        return polled_passthrough_hazard()
    return None


STEP_FIGURES = (("IOPS", "iops", "IO/s"), ("clat p50", "clat_p50_us", "µs"), ("clat p99", "clat_p99_us", "µs"))


def step_results(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Every step's IOPS, clat p50 and clat p99 as ``results.record_many`` entries ("IOPS:
    baseline io_uring", with the step's interval); a skipped or failed step has no value and
    its reason as the note (what ``iolab seeds`` reads)."""
    out = []
    for step in table.to_dict("records"):
        measured = step.get("status") == "measured"
        reason = step.get("reason") or ""
        note = (
            f"mean of {step.get('runs')} runs, 95 % t interval" + (f"; {reason}" if reason else "")
            if measured
            else f"{step.get('status')}: {reason}"
        )
        out += [
            {
                "name": f"{what}: {step['name']}",
                "value": step.get(column) if measured else None,
                "unit": unit,
                "low": step.get(f"{column}_ci_low"),
                "high": step.get(f"{column}_ci_high"),
                "source": f"step {step['step']}",
                "note": note,
            }
            for what, column, unit in STEP_FIGURES
        ]
    return out


def _summary(runs: pd.DataFrame) -> dict[str, Any]:
    """A step's figures from its runs (``repeat_stats.per_run``: IOPS summed over jobs): means
    over the repeats, and for IOPS and the p50/p99 latencies their 95 % t interval
    (``<column>_ci_low``/``_ci_high``; NaN with one run)."""
    out = {
        c: runs[c].iloc[0] if c == "freq_source" else runs[c].mean()
        for c in (
            "iops",
            "clat_p50_us",
            "clat_p99_us",
            "clat_p99_9_us",
            "cpu_busy_pct",
            "cycles_per_io",
            "freq_source",
            "lat_mean_us_littles",
        )
        if c in runs
    }
    for c in ("iops", "clat_p50_us", "clat_p99_us"):
        if c in runs:
            out[f"{c}_ci_low"], out[f"{c}_ci_high"] = repeat_stats.interval(runs[c], c)
    return out


def _gains(table: pd.DataFrame, step_runs: dict[int, pd.DataFrame]) -> list[repeat_stats.Comparison | None]:
    """Each measured step's IOPS against the last measured carried-forward step, over their
    repeats (None: nothing to compare with)."""
    prev, gains = None, []
    for r in table.itertuples():
        if r.status != "measured":
            gains.append(None)
            continue
        gains.append(
            repeat_stats.compare(
                pd.concat([step_runs[r.step], step_runs[prev]]),
                by="step",
                a=f"step {r.step}",
                b=f"step {prev}",
                metric="iops",
            )
            if prev is not None
            else None
        )
        if getattr(r, "carried_forward", False) or prev is None:
            prev = r.step
    return gains
