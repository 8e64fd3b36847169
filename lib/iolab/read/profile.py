"""The reading of a profile in numbers: folded stacks -> shares, kinds, diffs and words.

Input is the folded-stack Counter of ``iolab.read.fold`` (``{"fio;td_io_queue;io_submit_sqes_[k]": 812}``,
weights in samples or sample periods); every share below is % of that total weight.

* ``frames(stacks)`` — self and inclusive share of every function;
* ``share_under(stacks, "td_io_commit")`` — the share of samples under a named function;
* ``categories(stacks, rules)`` — samples by kind (idle, interrupt/softirq, io_uring, block
  layer, driver, page cache, other kernel, user) with editable, ordered regex rules;
* ``kernel_user_split``, ``without_idle`` — where busy samples end, and the busy samples;
* ``diff(a, b)`` — two profiles normalised to equal totals, the biggest movers both ways;
* ``describe(stacks)`` / ``describe_diff(...)`` — the main facts as a short paragraph.

The pictures of the same stacks are ``iolab.plots.flamegraph``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

import pandas as pd

from ..core.readable import wrapped_text

DEFAULT_RULES: list[tuple[str, str]] = [
    ("idle", r"^(swapper|cpu_idle|do_idle|default_idle|.*safe_halt|cpuidle_|intel_idle|acpi_idle)"),
    (
        "interrupt/softirq",
        r"(softirq|^irq_|^__irq_|^handle_irq|^handle_\w+_irq$|_irq_handler|^common_interrupt|"
        r"^asm_(common_interrupt|sysvec_)|^sysvec_|^__sysvec|^net_rx_action)",
    ),
    ("io_uring", r"(io_uring|^io_submit_sqes|^io_issue_sqe|^io_read|^io_write|^io_cq|^__io_|^io_do_iopoll)"),
    ("block layer", r"^(blk_|__blk_|bio_|submit_bio|__submit_bio|bdev_|blkdev_|iomap_dio|__iomap_dio|mpage_)"),
    ("driver", r"^(nvme_|loop_|lo_|virtblk_|virtio_|scsi_|ata_|ahci_|null_)"),
    ("page cache", r"^(filemap_|page_cache_|folio_|__filemap_|readahead|page_cache_ra|ondemand_readahead)"),
]


def bare(frame: str) -> str:
    """A frame's function name without the _[k] (kernel), _[i] (inlined), _[j] (JIT) mark."""
    return re.sub(r"_\[[kij]\]$", "", frame)


def frame_category(frame: str, rules=DEFAULT_RULES) -> str:
    name = bare(frame)
    for category, pattern in rules:
        if re.search(pattern, name):
            return category
    return "kernel" if frame.endswith("_[k]") else "user"


def stack_category(stack: str, rules=DEFAULT_RULES) -> str:
    """A sample's kind: idle if the process is swapper or any frame is idle; otherwise
    the kind of its deepest (leaf-most) frame that a rule names; else kernel/user by leaf."""
    frames = stack.split(";")
    if frames[0].startswith("swapper") or any(frame_category(f, rules[:1]) == "idle" for f in frames[1:]):
        return "idle"
    for frame in reversed(frames[1:]):
        cat = frame_category(frame, rules)
        if cat not in ("kernel", "user"):
            return cat
    return frame_category(frames[-1], rules) if len(frames) > 1 else "user"


def frames(stacks: Counter, top: int | None = None) -> pd.DataFrame:
    """function (its name without the kernel/inlined/JIT mark: ``kind`` says which), self
    and inclusive sample shares (%), kind. A function recursing on one stack counts once for
    inclusive."""
    total = sum(stacks.values()) or 1
    self_c: Counter = Counter()
    incl: Counter = Counter()
    for stack, n in stacks.items():
        parts = stack.split(";")[1:] or stack.split(";")
        self_c[parts[-1]] += n
        for f in set(parts):
            incl[f] += n
    out = pd.DataFrame({"function": list(incl)})
    out["self_pct"] = out.function.map(lambda f: 100 * self_c[f] / total)
    out["inclusive_pct"] = out.function.map(lambda f: 100 * incl[f] / total)
    out["kind"] = out.function.map(frame_category)
    out["function"] = out.function.map(bare)
    out = out.sort_values(["self_pct", "inclusive_pct"], ascending=False, ignore_index=True)
    return out.head(top) if top else out


def _names(function: str, frame: str) -> bool:
    """``function`` names ``frame``: the same name, or its syscall wrappers
    (``io_uring_enter`` names ``__do_sys_io_uring_enter`` and ``__x64_sys_io_uring_enter``)."""
    name = bare(frame)
    return name == function or name.endswith("_sys_" + function)


def share_under(stacks: Counter, function: str) -> float:
    """% of samples whose stack contains ``function`` (see ``_names``), with or without _[k]."""
    total = sum(stacks.values()) or 1
    hit = sum(n for s, n in stacks.items() if any(_names(function, f) for f in s.split(";")))
    return 100 * hit / total


def categories(stacks: Counter, rules=DEFAULT_RULES) -> pd.DataFrame:
    """Samples by kind (% of all samples), largest first."""
    total = sum(stacks.values()) or 1
    by: Counter = Counter()
    for stack, n in stacks.items():
        by[stack_category(stack, rules)] += n
    return pd.DataFrame([{"kind": k, "pct": 100 * v / total} for k, v in by.most_common()], columns=["kind", "pct"])


def kernel_user_split(stacks: Counter, include_idle: bool = False) -> dict[str, float]:
    """% of (non-idle) samples whose leaf frame is in the kernel vs in user space."""
    k = u = 0
    for stack, n in stacks.items():
        if not include_idle and stack_category(stack) == "idle":
            continue
        if stack.split(";")[-1].endswith("_[k]"):
            k += n
        else:
            u += n
    total = (k + u) or 1
    return {"kernel_pct": 100 * k / total, "user_pct": 100 * u / total}


def without_idle(stacks: Counter) -> Counter:
    return Counter({s: n for s, n in stacks.items() if stack_category(s) != "idle"})


# a run of junk frames: ``[unknown]``; ``[unknown] `` (perf printed a module path with a blank,
# ``(/memfd:x (deleted))``, and folding cut the name there, as stackcollapse-perf.pl does);
# ``[unknown]_[k]``
_UNKNOWN_RUN = re.compile(r"(?:;\[unknown\] *(?:_\[[kij]\])?(?=;|$))+")


def is_diff(stacks) -> bool:
    return bool(stacks) and isinstance(next(iter(stacks.values())), tuple)


def merge_unknown_runs(stacks):
    """Each run of junk ``[unknown]`` frames (see ``_UNKNOWN_RUN``) made one ``[unknown]``;
    samples and known frames unchanged. Frame-pointer unwinding through code built without
    frame pointers (a stripped fio) yields long chains of them.
    ``stacks``: Counter, or a Diff's stacks (stack -> (a, b); merged stacks add both)."""
    pairs = is_diff(stacks)
    out = defaultdict(lambda: (0.0, 0.0)) if pairs else Counter()
    for stack, value in stacks.items():
        key = _UNKNOWN_RUN.sub(";[unknown]", stack)
        out[key] = (out[key][0] + value[0], out[key][1] + value[1]) if pairs else out[key] + value
    return dict(out) if pairs else out


@dataclass
class Diff:
    """Two profiles normalised to equal totals. ``stacks``: stack -> (a, b_scaled)."""

    stacks: dict[str, tuple[float, float]]
    movers: pd.DataFrame  # function, a_pct, b_pct, delta_pct (inclusive share)
    scale: float  # b counts were multiplied by this


def diff(a: Counter, b: Counter, labels: tuple[str, str] = ("A", "B"), merge_unknowns: bool = True) -> Diff:
    """Compare profile ``b`` against ``a`` (as difffolded.pl -n: b normalised to a's total).
    Movers are by inclusive share, sorted by absolute change; positive = grew in b."""
    if merge_unknowns:
        a, b = merge_unknown_runs(a), merge_unknown_runs(b)
    ta, tb = sum(a.values()) or 1, sum(b.values()) or 1
    scale = ta / tb
    stacks = {s: (float(a.get(s, 0)), b.get(s, 0) * scale) for s in set(a) | set(b)}
    fa, fb = frames(a).set_index("function"), frames(b).set_index("function")
    movers = pd.DataFrame({f"{labels[0]}_pct": fa.inclusive_pct, f"{labels[1]}_pct": fb.inclusive_pct}).fillna(0.0)
    movers["delta_pct"] = movers.iloc[:, 1] - movers.iloc[:, 0]
    movers = movers.reindex(movers.delta_pct.abs().sort_values(ascending=False).index)
    return Diff(stacks, movers.rename_axis("function").reset_index(), scale)


@wrapped_text
def describe(
    stacks: Counter, watch: tuple[str, ...] = ("td_io_commit", "io_uring_enter", "_raw_spin_lock_irq", "filemap_read")
) -> str:
    """The main facts of a profile in words, with numbers."""
    total = sum(stacks.values())
    busy = without_idle(stacks)
    if not total:
        return "The profile holds no samples: did perf record run on the CPUs fio used?"
    cats = categories(busy) if busy else pd.DataFrame(columns=["kind", "pct"])
    idle_pct = 100 * (1 - sum(busy.values()) / total)
    top = frames(busy, 3) if busy else frames(stacks, 3)
    ku = kernel_user_split(stacks)
    parts = [f"{idle_pct:.0f} % of the samples are idle."]
    if len(cats):
        parts.append(
            "Of the busy time: " + ", ".join(f"{r.kind} {r.pct:.0f} %" for r in cats.head(4).itertuples()) + "."
        )
    parts.append(f"{ku['kernel_pct']:.0f} % of busy samples end in the kernel, {ku['user_pct']:.0f} % in user space.")
    parts.append(
        "Hottest functions (self): "
        + ", ".join(f"{bare(r.function)} {r.self_pct:.1f} %" for r in top.itertuples())
        + "."
    )
    watched = [(w, share_under(busy or stacks, w)) for w in watch]
    watched = [(w, p) for w, p in watched if p > 0]
    if watched:
        parts.append("Under named functions (of busy): " + ", ".join(f"{w} {p:.1f} %" for w, p in watched) + ".")
    if total < 200:
        parts.append(f"Only {total} samples: raise the sampling frequency or run longer before trusting small shares.")
    return " ".join(parts)


@wrapped_text
def describe_diff(d: Diff, labels: tuple[str, str] = ("A", "B"), n: int = 3) -> str:
    grew = d.movers[d.movers.delta_pct > 0].head(n)
    shrank = d.movers[d.movers.delta_pct < 0].head(n)

    def fmt(rows):
        return ", ".join(f"{bare(r.function)} {r.delta_pct:+.1f} pts" for r in rows.itertuples())

    return (
        f"Normalised to equal totals, {labels[1]} vs {labels[0]}: grew — {fmt(grew) or 'nothing'}; "
        f"shrank — {fmt(shrank) or 'nothing'} (inclusive share of samples)."
    )
