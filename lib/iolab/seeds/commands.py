"""The author's command beside the one that ran here, for ``iolab seeds``' pages: each
published figure's command line as published (``command`` in
``data/reference/published_figures.csv``), the command of the local runs behind it, and every
difference between the two named with its reason.

    runs = runs_behind(folders, {"qd": 32})      # the run folders of one figure's local value
    RunFolder(runs[0]).command()                 # "fio --name=qd32 --rw=randread ..." (iolab.read.run)
    adaptations(published, runs[0], reasons)     # ["iodepth 64 → 32: ...", ...]

Options are compared as fio reads them: ``--name=value`` on a command line is the job file's
``name=value``; ``taskset -c N`` is the job's ``cpus_allowed``; t/io_uring's ``-d 512`` its
flags. What iolab adds that the write-up does not set (``params.json``'s ``iolab_added``:
the target, the pinning, the bookkeeping) is said as such; every other difference is an adaptation and carries a reason: the
manifest's (``adaptations`` of the experiment), else one of ``REASONS``, else "not
explained" — never silent.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import RunFileError
from ..read.run import RunFolder
from ..stats.gap import polled_run

# options that name the run's bookkeeping, not the measurement
BOOKKEEPING = {"name", "group_reporting", "output", "output-format", "readonly", "cmd_type"}
NOT_CELLS = {"repeat", "step", "search"}  # swept values naming a repeat, a step's place or the search, not a cell
# why an option differs, when the manifest does not say (fio's option names)
REASONS = {
    "filename": "the device here (the write-up's is not on this machine)",
    "runtime": "the runtime of this level (--quick: short runs; the full plan runs longer)",
    "r": "the runtime of this level (--quick: short runs; the full plan runs longer)",
    "time_based": "iolab runs every job for its runtime",
    "size": "the region read here (the scratch file or loop device's size)",
    "cpus_allowed": "pinned to this machine's measuring CPU (the write-up's CPU number does not exist here)",
    "hipri": "no poll queues on this target: polled completions cannot run",
    "ioengine": "no NVMe passthrough node (/dev/ng*) on this target",
    "direct": "passthrough has no page cache; the ng char device refuses O_DIRECT",
    "numjobs": "one job on this machine's CPU",
}
QUICK = "the quick settings' short runs (iolab seeds --quick); the full plan runs longer"
# t/io_uring's flags in words (fio's t/io_uring.c usage)
TIO_FLAGS = {
    "d": "queue depth",
    "s": "submit batch",
    "c": "complete batch",
    "b": "block size",
    "p": "polled",
    "B": "fixed buffers",
    "F": "registered files",
    "u": "passthrough (io_uring_cmd)",
    "O": "O_DIRECT",
    "r": "runtime (s)",
    "n": "threads",
}


def runs_behind(folders: Iterable[str | Path], where: Mapping[str, Any]) -> list[Path]:
    """The run folders of the cell ``where`` names ({"qd": 32, "step_name": ..., "tool":
    "fio"}): their swept values (``params.json``'s ``swept``) match it, compared as text, and
    they vary nothing else but the repeat (a ladder's climb runs at other depths are other
    cells), in order; those of the first sweep folder that has any (a notebook's later sweep
    of the same cell, such as the ladder's climb, measured another figure)."""
    found: list[Path] = []
    for f in folders:
        try:
            swept = RunFolder(f).params().get("swept") or {}
        except (OSError, RunFileError):
            continue
        others = set(swept) - set(where) - NOT_CELLS
        if not others and all(str(swept.get(k)) == str(v) for k, v in where.items() if v is not None):
            found.append(Path(f))
    return [f for f in found if f.parent == found[0].parent]


def _local(folder: Path) -> tuple[dict[str, str], str, list[str]]:
    """(options, tool, what iolab added) of one run folder: fio's job options, or
    t/io_uring's flags (keys without the dash)."""
    run = RunFolder(folder)
    argv = run.argv()
    params = run.params()
    if argv and "io_uring" in Path(argv[0]).name:
        flags, words = {}, argv[1:]
        for i, w in enumerate(words):
            if w.startswith("-") and i + 1 < len(words):
                flags[w.lstrip("-")] = words[i + 1]
        flags["filename"] = next((w for w in reversed(words) if w.startswith("/")), "")
        cpus = RunFolder(folder).cpu_affinity()
        if cpus:
            flags["cpus_allowed"] = ",".join(map(str, cpus))
        return flags, "t/io_uring", []
    added = [str(a.get("option")) for a in params.get("iolab_added") or []]
    opts = {str(k): str(v) for k, v in (params.get("fio_options") or {}).items()}
    return opts, "fio", added


def published_options(command: str) -> tuple[dict[str, str], str]:
    """(options, tool) of a published command line: fio's ``--k=v`` and ``--flag`` (as 1),
    ``taskset -c N`` as ``cpus_allowed``; t/io_uring's ``-x v`` flags and its file. ({}, "")
    for a command that is not fio's or t/io_uring's (a description, SPDK's bdevperf); notes in
    brackets are left out."""
    tail = re.sub(r"\([^)]*\)", "", command).split(";")[-1]  # a note in brackets is the table's, not the command's
    try:
        words = shlex.split(tail)
    except ValueError:
        return {}, ""
    if not any(w.startswith("-") for w in words):  # a description ("t/io_uring, flags not published"), no command
        return {}, ""
    if words[0] == "bdevperf":  # SPDK's: its queue depth, I/O size, pattern and seconds under fio's names
        flags = dict(re.findall(r"(?:^|\s)-([qowtcm])\s+<?(\d+|\w+)", tail))  # -c <16 devices> -m <8 cores>
        return {BDEVPERF[k]: v for k, v in flags.items()}, "bdevperf"
    opts: dict[str, str] = {}
    if "taskset" in words:
        i = words.index("taskset")
        if i + 2 < len(words) and words[i + 1] == "-c":
            opts["cpus_allowed"] = words[i + 2]
    tool = next((w for w in words if Path(w).name in ("fio", "io_uring")), "")
    if not tool:
        return {}, ""
    rest = words[words.index(tool) + 1 :]
    if Path(tool).name == "io_uring":
        for i, w in enumerate(rest):
            if w.startswith("-") and i + 1 < len(rest):
                opts[w.lstrip("-")] = rest[i + 1]
        opts["filename"] = next((w for w in reversed(rest) if w.startswith("/")), "")
        return opts, "t/io_uring"
    for w in rest:
        if w.startswith("--"):
            key, _, value = w[2:].partition("=")
            opts[key] = value if value else "1"
    return opts, "fio"


# SPDK bdevperf's flags under fio's names, and its devices (-c) and cores (-m) under a search's axes
BDEVPERF = {"q": "iodepth", "o": "bs", "w": "rw", "t": "runtime", "c": "devices", "m": "cores"}


def polls(command: str) -> bool:
    """Whether a published command line polls its completions (fio's --hipri, t/io_uring's -p 1;
    a description that says "polled")."""
    opts, tool = published_options(command)
    polled = opts.get("hipri") == "1" or opts.get("p") == "1" or tool == "bdevperf"  # SPDK polls, always
    return polled or bool(re.search(r"\bpolled\b", str(command)))


def _same(a: str, b: str) -> bool:
    """Option values equal as fio reads them: 20 and 20s, 4k and 4096, 1 and 1."""
    norm = {"4k": "4096", "1k": "1024", "512": "512"}
    a, b = norm.get(a.lower(), a.lower()), norm.get(b.lower(), b.lower())
    return a == b or a.rstrip("s") == b.rstrip("s")


@dataclass(frozen=True)
class Change:
    """One difference between the published command and the one run here: the option in
    words (``"iodepth 192 → 32"``), why, and whether the why is one of ``REASONS`` (the same
    on every row: a page says it once)."""

    change: str
    reason: str
    common: bool = False


def adaptations(
    command: str, folder: str | Path | None, reasons: Mapping[str, str] | None = None, quick: bool = False
) -> list[Change]:
    """Every difference between the published ``command`` and the local run in ``folder``,
    in the published command's order, then what iolab adds that the write-up does not set,
    as such. [] when the two are the same; one ``Change`` when they cannot be compared (no
    published command line, a different tool, an unreadable run). ``reasons``: the
    manifest's, by option; ``quick``: the runtime is --quick's."""
    if folder is None:
        return []
    pub, pub_tool = published_options(command)
    try:
        here, tool, added = _local(Path(folder))
    except (OSError, RunFileError) as exc:
        return [Change("the local run cannot be read", str(exc))]
    own = dict(reasons or {})
    unpolled = polls(command) and not polled_run(folder)
    interrupts = Change("polled published, interrupts here", own.get("p") or own.get("hipri") or "not explained")
    if not pub_tool:
        said = Change(
            "no command line to compare", f"the write-up gives no fio or t/io_uring command for this {tool} run"
        )
        return [said, *([interrupts] if unpolled else [])]
    across = pub_tool != tool  # another tool: its options under fio's names, and only those
    if across and not pub:
        return [Change(f"{pub_tool} published, {tool} here", own.get("tool", "the step runs it so"))]
    if quick:
        own.setdefault("runtime", QUICK)
        own.setdefault("r", QUICK)
    if across:  # a search's cell: its devices and cores beside the published command's
        swept = RunFolder(folder).params().get("swept") or {}
        here = {**here, **{k: str(v) for k, v in swept.items() if k in ("devices", "cores")}}
    found = [Change(f"{pub_tool} published, {tool} here", own.get("tool", "the step runs it so"))] if across else []
    found += [interrupts] if unpolled and across else []
    extra = []
    for key in dict.fromkeys([*pub, *([] if across else here)]):
        if key in BOOKKEEPING:
            continue
        if key in added and key not in pub:
            extra.append(key)
            continue
        a, b = pub.get(key), here.get(key)
        if a is not None and b is not None and _same(a, b):
            continue
        name = TIO_FLAGS.get(key, key) if tool == "t/io_uring" else key
        shown = f"{name} {a if a is not None else '(not set)'} → {b if b is not None else '(not set)'}"
        if key in own:
            found.append(Change(shown, own[key]))
        else:
            found.append(Change(shown, REASONS.get(key, "not explained by the manifest"), key in REASONS))
    if extra:
        found.append(
            Change(f"iolab added {', '.join(extra)}", "the write-up does not set them (target and bookkeeping)", True)
        )
    return found


__all__ = ["runs_behind", "published_options", "polls", "adaptations", "Change", "REASONS", "TIO_FLAGS"]
