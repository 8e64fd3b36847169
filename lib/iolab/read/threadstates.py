"""Reading thread-state samples: where the threads of a run were, running or waiting.

The sampler (``iolab.machine.threads``, seed 001's pSnapper method) leaves two files in a run folder:

* ``samples_threads.csv`` — one row per kept thread per tick: ``t_s``, ``tick``, ``pid``,
  ``tid``, ``workload`` (1 for the run's own threads), ``comm`` (as the kernel names it),
  ``state`` (R, D, ...), ``kthread`` (1 for a kernel thread), ``syscall``, ``wchan`` and
  ``kstack`` (the kernel stack, outermost frame first, ``;``-separated as in folded stacks;
  ``-`` when empty, e.g. a thread running on another CPU);
* ``threads.json`` — how it sampled: ``interval_s``, ``states``, ``ticks`` (passes over
  /proc, the denominator of every average), ``late_ticks`` (passes that started more than
  half an interval after they were due: the sampler runs only when its CPU is otherwise idle),
  ``skipped_ticks`` (due times passed over because it was a whole interval behind),
  ``max_lag_s``, ``ticks_per_s`` (what it kept up with), ``scans`` (listings of /proc), the
  sampler's own CPU time, CPUs and scheduling policy (``sampler_policy``), ``workload_pid`` (the tool that drove the I/O; it and the processes below it —
  fio's job processes, fio under perf — are the run's own threads) and ``unreadable``: per
  kind of file (``task``, ``stat``, ``syscall``, ``wchan``, ``stack``) and reason
  (``exited``, ``permission``, ...) how many entries could not be read. An unreadable value is written ``[unreadable:
  <reason>]`` in its column, so it is counted in the table under that label, never dropped;
  ``workload_on_cpu``: per thread of the run, its first and last kept tick and the time it
  spent on a CPU between them (``schedstat``), against which ``notes`` checks its R samples.

Kept are the active threads (R and D, by default) and, of the run's own threads, the
sleeping ones too (S: fio waiting in ``io_cqring_wait`` is off-CPU time); a row's
``avg_active_threads`` is the threads in that row's state on average.

The whole machine is sampled, as psn does. The tables keep, by default (``scope="run"``),
the run's own threads (fio and its job processes) and the kernel threads — what the run made
happen; other processes (another user's job, a test running beside it) are left out and
said so (``notes``); ``scope="all"`` keeps them.

``table`` turns them into psn's view: one row per (comm, state, syscall, wchan, top kernel
frames) — or any subset, ``by`` — with ``samples``, ``avg_active_threads`` (samples ÷
ticks: how many such threads were active on average) and ``pct_of_run`` (the share of
ticks in which at least one was). Thread names are normalised as psn does, every run of
digits replaced by ``*`` (``kworker/u8:3-events_unbound`` -> ``kworker/u*:*-events_unbound``),
so the kernel's numbered workers add up.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import InputError
from ..core.readable import wrapped_text
from ..core.runfiles import RUN_JSON, SAMPLES_THREADS_CSV, THREADS_JSON
from ..core.runfolders import not_found, run_folders

SAMPLES_FILE, META_FILE = SAMPLES_THREADS_CSV, THREADS_JSON
FILES = (SAMPLES_FILE, META_FILE)  # in a run folder; the first one there means the sampler ran
SAMPLE_COLUMNS = ("t_s", "tick", "pid", "tid", "workload", "comm", "state", "kthread", "syscall", "wchan", "kstack")
NUMERIC = ("t_s", "tick", "pid", "tid", "workload", "kthread")
KEYS = ("comm", "state", "syscall", "wchan", "kstack")  # what ``table`` can group by
ACTIVE = ("R", "D")  # running or runnable, uninterruptible sleep: the states psn counts as active
SCOPES = ("run", "all")  # the run's process group and the kernel threads, or every thread
DEFAULT_FRAMES = 3  # innermost kernel frames shown in the kstack key
UNDERSAMPLED_ON_CPU_PCT = 20  # a run's thread on a CPU at least this much of the time ...
UNDERSAMPLED_MIN_TICKS = 10  # ... over at least this many ticks, R in under half as much: said (notes)
STATE_NAMES = {
    "R": "running (on CPU or runnable)",
    "D": "uninterruptible sleep (usually I/O)",
    "S": "interruptible sleep",
    "I": "idle kernel thread",
    "T": "stopped",
    "t": "tracing stop",
    "Z": "zombie",
    "X": "dead",
    "P": "parked",
}
_DIGITS = re.compile(r"\d+")
_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+$")


def normalise_comm(comm: str) -> str:
    """A thread name with every run of digits replaced by ``*``, as psn does:
    ``kworker/u8:3`` -> ``kworker/u*:*``, ``iou-wrk-4211`` -> ``iou-wrk-*``."""
    return _DIGITS.sub("*", str(comm))


def parse_stat(raw: bytes | str) -> tuple[str, str, int, int]:
    """(comm, state, parent pid, flags) from one /proc/PID/task/TID/stat line. The name
    sits between the first ``(`` and the last ``)``: it may hold spaces and parentheses."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    left, right = text.index("("), text.rindex(")")
    fields = text[right + 2 :].split(" ", 7)
    return text[left + 1 : right], fields[0], int(fields[1]), int(fields[6])


def parse_stack(raw: bytes | str) -> str:
    """/proc/PID/task/TID/stack (``[<0>] func+0x37/0x90`` per line, innermost first) as the
    function names outermost first, ``;``-separated (folded-stack order); ``-`` if empty."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    frames = [_OFFSET.sub("", line.split("] ", 1)[-1].strip()) for line in text.splitlines() if line.strip()]
    return ";".join(reversed(frames)) or "-"


def top_frames(kstack: str, frames: int = DEFAULT_FRAMES) -> str:
    """The innermost ``frames`` frames of a stored ``kstack``, caller first, joined by ``->``
    as psn prints them (``filemap_read->folio_wait_bit_common``); labels (``-``,
    ``[unreadable: ...]``) are kept as they are."""
    kstack = str(kstack)
    if kstack.startswith("[") or kstack == "-" or frames <= 0:
        return kstack
    return "->".join(kstack.split(";")[-frames:])


@dataclass
class ThreadSamples:
    """A run's raw thread-state samples (``SAMPLE_COLUMNS``) and how they were taken
    (threads.json)."""

    samples: pd.DataFrame
    meta: dict[str, Any]

    def files(self) -> dict[str, str]:
        """The run-folder files: file name -> text."""
        return {
            SAMPLES_FILE: self.samples.to_csv(index=False),
            META_FILE: json.dumps(self.meta, indent=1, sort_keys=True) + "\n",
        }

    @property
    def ticks(self) -> int:
        return _ticks(self.meta)

    @property
    def unreadable(self) -> int:
        """How many entries could not be read, all kinds together."""
        return _unreadable(self.meta)


def _ticks(meta: Mapping[str, Any]) -> int:
    return int(meta.get("ticks", 0))


def _unreadable(meta: Mapping[str, Any]) -> int:
    return sum(sum(reasons.values()) for reasons in (meta.get("unreadable") or {}).values())


def _read_meta(path: Path) -> dict[str, Any]:
    """threads.json, its counts numbers as the sampler wrote them (else RunFileError)."""
    meta = runfiles.read_json(path, keys=("ticks",))
    with runfiles.guard(path):
        _ticks(meta) + _unreadable(meta)
    return meta


def _in_run(kthread, workload):
    """The samples ``in_scope`` keeps by default (a mask of columns, or one sample's verdict):
    kernel threads and the run's own threads."""
    return (kthread == 1) | (workload == 1)


def load(run_dir: str | os.PathLike) -> ThreadSamples:
    """The thread-state samples of one run folder. InputError, naming the folder, when the
    run was made without the thread sampler (neither file is there); RunFileError
    (``iolab.core.runfiles``) naming the file when one is missing, empty, cut short or not as the
    sampler wrote it."""
    run_dir = Path(run_dir)
    samples, meta = run_dir / SAMPLES_FILE, run_dir / META_FILE
    if not samples.exists() and not meta.exists():
        raise InputError(
            f"{run_dir} holds no thread-state samples ({SAMPLES_FILE}): the run was made without the "
            "thread sampler; re-run it with --threads (iolab run --threads, or threads=True in "
            "measure and the notebooks)"
        )
    frame = runfiles.read_csv(
        samples,
        columns=SAMPLE_COLUMNS,
        dtype={c: str for c in KEYS},
        keep_default_na=False,
        numeric=NUMERIC,
    )
    return ThreadSamples(frame, _read_meta(meta))


def _runs(runs: Any) -> list[Path]:
    """The run folders ``runs`` names (see ``iolab.core.runfolders.run_folders``); InputError when one
    is missing or none is named."""
    found, missing = run_folders(runs)
    if missing:
        raise InputError(not_found(missing))
    if not found:
        shown = repr(os.fspath(runs)) if isinstance(runs, os.PathLike) else repr(runs)
        raise InputError(
            f"{shown} names no run folder (a folder with {RUN_JSON}); give a run folder, a list "
            "of them, or the table a study returned"
        )
    return found


def in_scope(got: ThreadSamples, scope: str = "run") -> pd.DataFrame:
    """The samples of ``scope``: ``run``, the run's own threads (``workload``: the tool that
    drove the I/O and the processes below it) and the kernel threads; ``all``, every thread
    sampled. Samples taken without a known workload are all kept."""
    if scope not in SCOPES:
        raise InputError(f"scope {scope!r}: choose 'run' (the run's own threads and the kernel threads) or 'all'")
    samples = got.samples
    if scope == "all" or got.meta.get("workload_pid") is None:
        return samples
    return samples[_in_run(samples["kthread"], samples["workload"])]


def table(
    runs: Any,
    by: Sequence[str] = KEYS,
    *,
    frames: int = DEFAULT_FRAMES,
    normalise: bool = True,
    scope: str = "run",
) -> pd.DataFrame:
    """psn's table of one or more runs: one row per distinct ``by`` (a subset of ``KEYS``),
    the active states (R, D) first, most samples first, then the run's own threads asleep
    (S), with ``samples``, ``avg_active_threads`` (samples ÷ ticks, over all
    the runs' ticks) and ``pct_of_run`` (% of ticks with at least one such thread).
    ``runs``: a run folder, a list of them, or a table of runs (``iolab.core.runfolders``). ``kstack`` is the innermost ``frames`` frames (``top_frames``); comm is
    ``normalise_comm``-ed unless ``normalise`` is False; ``scope``: see ``in_scope``."""
    by = _keys(by)
    frames_in, ticks = [], 0
    for i, path in enumerate(_runs(runs)):
        got = load(path)
        ticks += got.ticks
        frames_in.append(in_scope(got, scope).assign(run=i))
    samples = pd.concat(frames_in, ignore_index=True)
    return _grouped(samples, ticks, by, frames, normalise)


def _keys(by: Sequence[str] | str) -> list[str]:
    by = [k.strip() for k in by.split(",")] if isinstance(by, str) else list(by)
    bad = [k for k in by if k not in KEYS]
    if bad or not by:
        raise InputError(
            f"cannot group thread samples by {', '.join(bad) or 'nothing'}: choose among "
            f"{','.join(KEYS)} (e.g. --by comm,state)"
        )
    return by


def _grouped(samples: pd.DataFrame, ticks: int, by: list[str], frames: int, normalise: bool) -> pd.DataFrame:
    columns = [*by, "samples", "avg_active_threads", "pct_of_run"]
    if samples.empty or not ticks:
        return pd.DataFrame(columns=columns)
    keyed = samples.copy()
    if normalise:
        keyed["comm"] = keyed["comm"].map(normalise_comm)
    keyed["kstack"] = keyed["kstack"].map(lambda s: top_frames(s, frames))
    out = pd.DataFrame(
        {
            "samples": keyed.groupby(by, dropna=False, sort=False).size(),
            "ticks_seen": keyed.drop_duplicates([*by, "run", "tick"]).groupby(by, dropna=False, sort=False).size(),
        }
    )
    out["avg_active_threads"] = out["samples"] / ticks
    out["pct_of_run"] = 100.0 * out["ticks_seen"] / ticks
    out = out.reset_index()
    out["asleep"] = ~out["state"].isin(ACTIVE) if "state" in by else False
    out = out.sort_values(["asleep", "samples", *by], ascending=[True, False, *[True] * len(by)], ignore_index=True)
    return out[columns]


def compare(
    groups: Mapping[str, Any],
    by: Sequence[str] = ("comm", "state", "wchan"),
    *,
    frames: int = DEFAULT_FRAMES,
    scope: str = "run",
    metric: str = "avg_active_threads",
) -> pd.DataFrame:
    """Side by side: ``table`` of each group of runs (``{"direct": runs, "buffered": runs}``),
    one row per ``by`` key, one ``metric`` column per group (0 where a group never saw that
    key), sorted by the largest value, the active states (R, D) first."""
    tables = {
        label: table(runs, by, frames=frames, scope=scope).set_index(_keys(by))[metric]
        for label, runs in groups.items()
    }
    wide = pd.concat(tables, axis=1).fillna(0.0).reset_index()
    order = pd.DataFrame(
        {"asleep": ~wide["state"].isin(ACTIVE) if "state" in wide else False, "most": -wide[list(tables)].max(axis=1)}
    )
    return wide.loc[order.sort_values(["asleep", "most"], kind="stable").index].reset_index(drop=True)


def run_columns(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The per-run columns of a run folder's thread samples (the run's own threads and the
    kernel threads, ``in_scope``): average active threads (``threads_active_avg``: running,
    R, or in uninterruptible sleep, D), each of the two, the ticks and the unreadable
    entries."""
    meta, states = _states_in_scope(Path(run_dir))
    ticks = _ticks(meta)
    avg = (lambda n: n / ticks) if ticks else (lambda n: float("nan"))
    return {
        "threads_active_avg": avg(sum(state in ACTIVE for state in states)),
        "threads_running_avg": avg(states.count("R")),
        "threads_d_state_avg": avg(states.count("D")),
        "threads_ticks": ticks,
        "threads_unreadable": _unreadable(meta),
    }


def _states_in_scope(run_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """``load``'s meta and the ``state`` of ``in_scope``'s samples, read without pandas when
    the CSV is plain (``runfiles.csv_columns``; a table of thousands of runs reads one per
    run), through ``load`` otherwise: the same values, the same errors."""
    samples = run_dir / SAMPLES_FILE
    cols = runfiles.csv_columns(samples, columns=SAMPLE_COLUMNS, numeric=NUMERIC) if samples.exists() else None
    if cols is None:
        got = load(run_dir)
        return got.meta, in_scope(got)["state"].tolist()
    meta = _read_meta(run_dir / META_FILE)
    if meta.get("workload_pid") is None:
        return meta, cols["state"]
    return meta, [s for s, k, w in zip(cols["state"], cols["kthread"], cols["workload"]) if _in_run(k, w)]


WORDS = {  # a ``table``'s columns as a reader says them
    "comm": "thread",
    "syscall": "system call",
    "wchan": "kernel wait (wchan)",
    "samples": "samples (thread × tick)",
    "avg_active_threads": "threads in this state, on average",
    "pct_of_run": "share of ticks (%)",
}


def readable(tab: pd.DataFrame) -> pd.DataFrame:
    """A ``table`` for people: its columns in words (``WORDS``), no wait channel as "none"
    (the kernel's 0), empty cells blank."""
    return tab.rename(columns=WORDS).fillna("").replace({WORDS["wchan"]: {"0": "none"}})


@wrapped_text
def describe(tab: pd.DataFrame, top: int = 5) -> str:
    """The first ``top`` rows of a ``table`` in words, one line each: ``fio R [running]: 1.00
    threads on average, active in 100 % of the run``."""
    keys = [k for k in KEYS if k in tab.columns]
    lines = []
    for _, row in tab.head(top).iterrows():
        what = " ".join(str(row[k]) for k in keys if str(row[k]) not in ("0", "-", ""))  # no wait (0), no stack (-)
        lines.append(
            f"{what}: {row.avg_active_threads:.2f} threads on average, active in {row.pct_of_run:.0f} % of the run"
        )
    return "\n".join(lines) or "no active thread was sampled"


def _undersampled(name: str, got: ThreadSamples) -> list[str]:
    """The run's threads whose R samples fall far short of the time they were on a CPU
    (their ``schedstat`` between their first and last kept tick, ``threads.json``'s
    ``workload_on_cpu``): the ticks were not independent of the run. Seen on this project's
    2-vCPU VM: a thread on CPU 72 % of the time was R in 18 % of the samples taken at 20 a
    second, 35 % at 2,000 a second; the sampler's vCPU runs when fio's halts."""
    said = []
    for tid, got_on in (got.meta.get("workload_on_cpu") or {}).items():
        ticks = got_on["last_tick"] - got_on["first_tick"] + 1
        if ticks < UNDERSAMPLED_MIN_TICKS or not got_on["window_s"]:
            continue
        on_pct = 100 * got_on["on_cpu_s"] / got_on["window_s"]
        mine = got.samples[
            (got.samples.tid == int(tid)) & got.samples.tick.between(got_on["first_tick"], got_on["last_tick"])
        ]
        r_pct = 100 * (mine.state == "R").sum() / ticks
        if on_pct >= UNDERSAMPLED_ON_CPU_PCT and r_pct < on_pct / 2:
            comm = mine.comm.iloc[0] if len(mine) else "?"
            said.append(
                f"{name}: the run's thread {comm} ({tid}) was on a CPU {on_pct:.0f} % of the sampled time "
                f"(its schedstat) but R in {r_pct:.0f} % of the samples: the ticks fell mostly while it "
                "waited (on a VM whose vCPUs share a physical CPU, the sampler's vCPU runs while the run's "
                "halts); read the run's R rows as a lower bound"
            )
    return said


@wrapped_text
def notes(runs: Any, scope: str = "run") -> str:
    """What the tables of these runs do not show, in words (``''`` when nothing): a sampler
    that stopped early, the entries that could not be read (counted, labelled
    ``[unreadable: ...]``), and the other processes' active threads that ``scope="run"``
    leaves out."""
    total: dict[str, dict[str, int]] = {}
    ticks = other = 0
    said = []
    for path in _runs(runs):
        got = load(path)
        ticks += got.ticks
        if got.meta.get("error"):
            said.append(f"{path.name}: sampling stopped early ({got.meta['error']})")
        late, skipped = got.meta.get("late_ticks") or 0, got.meta.get("skipped_ticks") or 0
        if late or skipped:
            rate, interval = got.meta.get("ticks_per_s"), got.meta.get("interval_s") or 0
            said.append(
                f"{path.name}: {late} of {got.ticks} ticks late (up to {1e3 * (got.meta.get('max_lag_s') or 0):.0f}"
                f" ms), {skipped} skipped (the sampler's CPU was busy)"
                + (f": {rate:.1f} ticks a second of the {1 / interval:.0f} asked" if rate and interval else "")
            )
        said += _undersampled(path.name, got)
        other += len(got.samples) - len(in_scope(got, scope))
        for kind, reasons in (got.meta.get("unreadable") or {}).items():
            for reason, n in reasons.items():
                total.setdefault(kind, {}).setdefault(reason, 0)
                total[kind][reason] += n
    if total:
        said.append(
            "unreadable /proc entries (counted, labelled [unreadable: ...]): "
            + ", ".join(
                f"{kind} {n} {reason}"
                for kind, reasons in sorted(total.items())
                for reason, n in sorted(reasons.items())
            )
        )
    if other and ticks:
        said.append(
            f"other processes' threads left out: {other / ticks:.2f} active on average (scope='all', "
            "iolab threads --all, shows them)"
        )
    return "; ".join(said)
