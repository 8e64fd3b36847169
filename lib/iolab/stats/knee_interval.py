"""The queue-depth knee of repeated sweeps with its uncertainty: the knee of the median
curve and a bootstrap interval over the repeats, with the 95 %-of-peak rule as a cross-check
and a note in words.

    est = knee_interval.knee_with_interval(table.qd, table.iops)   # median per QD, bootstrap over repeats
    print(est.label(), est.note)   # 'knee QD 16 (93 % of resamples in [8, 16])'

The methods on one curve are ``knee``'s (Kneedle, maximum power); which of the two to report,
``knee_verdict``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import InputError
from .knee import KNEE_METHODS, POWER_METHOD, Knee, kneedle_points, power_points, refuse_nonpositive
from .operating_points import saturation_point


@dataclass
class KneeEstimate:
    """Result of :func:`knee_with_interval`: the knee of the median curve, the shortest run
    of sampled x around it that holds ``level`` of the bootstrap knees, and the
    95 %-of-peak rule as a cross-check. ``low``/``high`` are None when there is no knee or
    no repeats to resample; ``note`` says why, and when the knee and the rule disagree."""

    x: float | None
    y: float | None
    low: float | None
    high: float | None
    share_in_interval: float  # share of all resamples whose knee is in [low, high]
    rule_x: float | None  # smallest x reaching ``fraction`` of the peak median y
    agree: bool
    note: str
    knee: Knee  # the method's knee of the median curve, with its intermediates
    level: float = 0.9
    n_boot: int = 0
    seed: int | None = 0
    repeats: tuple[int, int] = (0, 0)  # fewest and most repeats of one x
    boot_knees: dict = field(default_factory=dict)  # knee x (None: no knee) -> resamples
    fraction: float = 0.95
    x_used: list[float] = field(default_factory=list)
    y_median: list[float] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return self.knee.reason

    @property
    def method(self) -> str:
        interval = (
            f"interval from {self.n_boot} bootstrap resamples of the repeats (seed {self.seed})"
            if self.n_boot
            else "no interval (nothing resampled)"
        )
        return f"{self.knee.method} on the median of {self.repeats_text} repeats per x; {interval}"

    @property
    def method_name(self) -> str:
        """The method in two words: 'Kneedle' or 'maximum power'."""
        return "maximum power" if self.knee.method == POWER_METHOD else "Kneedle"

    @property
    def repeats_text(self) -> str:
        """The repeats per x in words: '3', or '2–3' when they differ."""
        fewest, most = self.repeats
        return f"{fewest}" if fewest == most else f"{fewest}–{most}"

    def label(self, name: str = "QD") -> str:
        """'knee QD 16 (90 % of resamples in [8, 16])', 'knee QD 16' (no interval) or 'no knee'."""
        if self.x is None:
            return "no knee"
        if self.low is None:
            return f"knee {name} {self.x:g}"
        return (
            f"knee {name} {self.x:g} ({100 * self.share_in_interval:.0f} % of resamples in "
            f"[{self.low:g}, {self.high:g}])"
        )


KNEEDLE_S = 1.0  # Kneedle's sensitivity (Satopää et al. 2011: 1 finds the knee of a clean curve)
SATURATION_FRACTION = 0.95  # the saturation point: the smallest x whose median reaches this share of the peak


def knee_with_interval(
    x: Sequence[float],
    y: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    level: float = 0.9,
    log2_x: bool = True,
    name: str = "QD",
    method: str = "kneedle",
) -> KneeEstimate:
    """The knee of a repeated sweep with its uncertainty.

    ``x`` may repeat (one row per run: qd, iops of each repeat). The knee is Kneedle's most
    prominent knee (``knee.find_knee``, ``prominent=True``) of the **median** y per x, so one
    noisy repeat does not move it. Its interval is a bootstrap over repeats (Efron 1979):
    ``n_boot`` times, each x's repeats are drawn again with replacement, their median taken,
    and the knee found again; the interval is the shortest run of consecutive sampled x
    around the knee that holds at least ``level`` (90 %) of the resamples' knees
    (resamples without a knee count against it), and ``share_in_interval`` is the share it
    actually holds. Seeded: the same ``seed`` gives the same interval.

    With one value per x there is nothing to resample: no interval, said in ``note``. The
    cross-check is ``operating_points.saturation_point`` on the median curve (the smallest x reaching
    ``SATURATION_FRACTION`` of the peak); ``agree`` is whether it falls in the interval (or equals the
    knee, without one, or both say there is no saturation), and ``note`` says in words when
    they disagree. ``name`` is what x is called in the note ('QD').

    ``method="power"`` takes ``knee.power_knee`` (Kleinrock's maximum power) instead of
    Kneedle, everything else the same: on this VM's loop device, two full grids of the
    same sweep agree on it (within one doubling) far more often than on Kneedle's bend.
    """
    method = str(method).strip().lower()
    if method not in KNEE_METHODS:
        raise InputError(f"method={method!r}: choose one of {', '.join(KNEE_METHODS)}")
    if not 0 < level < 1:
        raise InputError(f"level {level:g} is not between 0 and 1; give a share such as 0.9")
    if n_boot < 0:
        raise InputError(
            f"{n_boot} resamples (n_boot, --resamples) is negative; give 0 (no interval) or a count such as 1000"
        )
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    if log2_x:
        refuse_nonpositive(frame["x"])
    groups = [g.to_numpy() for _, g in frame.groupby("x")["y"]]
    xv = np.array(sorted(frame["x"].unique()), float)
    med = np.array([np.median(g) for g in groups])
    counts = [len(g) for g in groups]
    repeats = (min(counts), max(counts)) if counts else (0, 0)
    kw = dict(log2_x=log2_x, S=KNEEDLE_S, curve="concave", direction="increasing", online=False, prominent=True)

    def pick(ys: np.ndarray) -> Knee:
        return power_points(xv, ys) if method == "power" else kneedle_points(xv, ys, **kw)

    knee = pick(med)
    rule = saturation_point(xv, med, SATURATION_FRACTION) if len(xv) else None

    boot: dict = {}
    resampled = n_boot > 0 and repeats[1] > 1 and len(xv) >= 3
    if resampled:
        rng = np.random.default_rng(seed)
        draws = np.column_stack([np.median(g[rng.integers(0, len(g), size=(n_boot, len(g)))], axis=1) for g in groups])
        for row in draws:
            k = pick(row).x
            boot[k] = boot.get(k, 0) + 1
    low = high = None
    share = math.nan
    if resampled and knee.x is not None:
        low, high, share = _shortest_run(xv, boot, knee.x, level, n_boot)

    est = KneeEstimate(
        knee.x,
        knee.y,
        low,
        high,
        share,
        rule,
        False,
        "",
        knee,
        level,
        n_boot if resampled else 0,
        seed,
        repeats,
        dict(sorted(boot.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))),
        SATURATION_FRACTION,
        [float(v) for v in xv],
        [float(v) for v in med],
    )
    est.agree, est.note = _knee_note(est, name, repeats, counts, xv, resampled)
    return est


def _shortest_run(xv: np.ndarray, boot: dict, at: float, level: float, n: int) -> tuple[float, float, float]:
    """The shortest [xv[i], xv[j]] with i <= index(at) <= j holding >= level of n resamples
    (ties: the larger share, then the lower x); all found knees' span when none does."""
    hits = np.array([boot.get(float(v), 0) for v in xv], float)
    k = int(np.flatnonzero(xv == at)[0])
    best = None
    for i in range(k + 1):
        for j in range(k, len(xv)):
            got = hits[i : j + 1].sum() / n
            if got >= level:
                cand = (j - i, -got, i, j)
                best = cand if best is None or cand < best else best
    if best is None:  # no knee in too many resamples: the span of every knee found
        found = np.flatnonzero(hits > 0)
        i, j = min(k, found.min()) if len(found) else k, max(k, found.max()) if len(found) else k
        return float(xv[i]), float(xv[j]), float(hits[i : j + 1].sum() / n)
    _, _, i, j = best
    return float(xv[i]), float(xv[j]), float(hits[i : j + 1].sum() / n)


def _knee_note(
    e: KneeEstimate, name: str, repeats: tuple[int, int], counts: list[int], xv: np.ndarray, resampled: bool
) -> tuple[bool, str]:
    """Whether the knee and the rule agree, and the note in plain words."""
    parts = [f"No knee: {e.knee.reason}."] if e.x is None else []  # first: `iolab knee` leads with it
    pct = f"{100 * e.fraction:g}\u00a0%"  # no break inside "95 %-of-peak"
    if repeats[1] <= 1:
        parts.append(
            f"One value per {name}: no interval (the bootstrap resamples repeats; run 2 or more repeats per {name})."
        )
    elif repeats[0] == 1:
        ones = [f"{v:g}" for v, c in zip(xv, counts) if c == 1]
        parts.append(
            f"{name} {', '.join(ones)} {'has' if len(ones) == 1 else 'have'} one value: "
            "fixed in every resample, so the interval is narrower than it should be."
        )
    none = e.boot_knees.get(None, 0)
    if e.x is None:
        if resampled and none < e.n_boot:
            found = {k: v for k, v in e.boot_knees.items() if k is not None}
            mode = max(found, key=found.get)
            parts.append(
                f"{100 * (e.n_boot - none) / e.n_boot:.0f} % of {e.n_boot} resamples find one "
                f"(most often {name} {mode:g}): a weak bend at best."
            )
    elif resampled:
        parts.append(
            f"{100 * e.share_in_interval:.0f} % of {e.n_boot} resamples of the repeats put the "
            + (f"knee in [{e.low:g}, {e.high:g}]" if e.low != e.high else f"knee at {name} {e.x:g} too")
            + (f"; {100 * none / e.n_boot:.0f} % find no knee at all" if none else "")
            + "."
        )
        if e.share_in_interval < e.level:
            parts.append(
                f"No run of {name}s holds {100 * e.level:.0f} % of them: the knee is not well defined by these repeats."
            )
    if e.rule_x is None:
        return e.x is None, " ".join(parts)
    deepest = float(xv[-1])
    if e.x is None:
        if e.rule_x == float(xv[0]):
            parts.append(
                f"The {pct}-of-peak rule says {name} {e.rule_x:g}, the first: the curve is within "
                f"{100 - 100 * e.fraction:g} % of its peak from the start, so there is nothing "
                "to saturate and no knee to find."
            )
            return True, " ".join(parts)
        agree = e.rule_x == deepest
        parts.append(
            f"The {pct}-of-peak rule agrees: the curve only reaches {pct} of its peak at the "
            f"deepest {name} ({deepest:g}), so neither sees saturation; sweep deeper."
            if agree
            else f"The {pct}-of-peak rule says {name} {e.rule_x:g}: the curve does flatten, but "
            f"without a bend {e.method_name} can name (too gradual on log2 {name}, or too few points)."
        )
        return agree, " ".join(parts)
    low, high = (e.low, e.high) if e.low is not None else (e.x, e.x)
    agree = low <= e.rule_x <= high
    where = f"in [{low:g}, {high:g}]" if e.low is not None and low != high else "at the knee"
    if agree:
        parts.append(f"The {pct}-of-peak rule agrees ({name} {e.rule_x:g}, {where}).")
    else:
        peak = max(e.y_median)
        gain = 100 * (peak / e.y - 1) if e.y else math.nan
        if e.rule_x > high:
            parts.append(
                f"The {pct}-of-peak rule disagrees: it says {name} {e.rule_x:g}, deeper than "
                f"the knee. Past the knee the curve still climbs {gain:.0f} % to its peak: "
                f"the knee is where doubling {name} stops paying in proportion, the rule where "
                f"the curve is within {100 - 100 * e.fraction:g} % of its peak. Take the knee for "
                "latency, the rule for the most IOPS."
            )
        else:
            parts.append(
                f"The {pct}-of-peak rule disagrees: it says {name} {e.rule_x:g}, before the "
                f"knee: the curve is within {100 - 100 * e.fraction:g} % of its peak already "
                f"there, so the bend {e.method_name} picks at {name} {e.x:g} buys little."
            )
    return agree, " ".join(parts)
