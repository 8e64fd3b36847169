"""The queue-depth knee (with a bootstrap interval over repeats), and the figures the other
layers take from here: cycles per IO, the Student-t interval of repeats and SNIA's steady
state.

    est = analysis.knee_with_interval(table.qd, table.iops)   # median per QD, bootstrap over repeats
    print(est.label(), est.note)                               # 'knee QD 16 (93 % of resamples in [8, 16])'

Each function implements one method, names its source, states units, and returns a result
that carries its intermediates (and, when it finds nothing, a reason). The per-depth table
of a sweep and its reading in words are in ``qd_reading``; the rule-based points (95 % of
the peak, a latency target) in ``operating_points``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.readable import si_number
from .operating_points import saturation_point


# ---------------------------------------------------------------- knee (Kneedle)
@dataclass
class Knee:
    """Result of :func:`find_knee`. ``x is None`` means no knee, with ``reason`` saying why.
    ``all_x`` are every knee Kneedle met (in the order it met them) and ``prominence`` their
    difference-curve heights (see :func:`find_knee`)."""

    x: float | None
    y: float | None
    method: str
    reason: str = ""
    log2_x: bool = True
    x_used: list[float] = field(default_factory=list)
    y_used: list[float] = field(default_factory=list)
    difference: list[float] = field(default_factory=list)
    all_x: list[float] = field(default_factory=list)
    prominence: list[float] = field(default_factory=list)


NEAR_TOP = 0.9  # prominent=True: knees within 90 % of the most prominent one count as ties


def find_knee(
    x: Sequence[float],
    y: Sequence[float],
    *,
    log2_x: bool = True,
    S: float = 1.0,
    curve: str = "concave",
    direction: str = "increasing",
    online: bool = False,
    prominent: bool = False,
) -> Knee:
    """Knee of a saturating curve (IOPS vs queue depth) by Kneedle.

    Kneedle: V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a
    Haystack: Detecting Knee Points in System Behavior", ICDCS Workshops 2011; via the
    ``kneed`` package (interp1d, so the knee is one of the sampled x). Queue depths are
    geometric, so x is taken as log2(x) by default (the knee is returned in the original
    units). Repeated x are averaged first (:func:`knee_with_interval` takes their median and
    resamples them). "No knee" is a valid answer: ``Knee.x is None``, also for a curve that
    does not go the way ``direction`` says (an "increasing" curve whose y never rises above
    its first value: Kneedle would name a point of a falling curve).
    x <= 0 on the log2 axis is refused (InputError): log2 is undefined there.

    Which knee, when Kneedle meets several: ``online=False`` (the default, kneed's offline
    mode) returns the first it meets; ``online=True`` keeps the last, so one noisy dip at the
    deepest QDs can move it there. ``prominent=True`` (what :func:`knee_with_interval`, the
    notebook and ``iolab knee`` use) returns the most prominent: the knee where the
    normalised curve stands highest above the straight line from first to last point (its
    difference-curve value, Kneedle's own measure); of knees within ``NEAR_TOP`` (90 %) of
    the highest, the smallest x; a "knee" at height <= 0 (kneed's edge case at the first
    point, on a curve that starts below that line) is never taken.
    """
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    frame = frame.groupby("x", as_index=False)["y"].mean().sort_values("x")
    if log2_x:
        _refuse_nonpositive(frame["x"])
    return _kneedle(
        frame["x"].to_numpy(),
        frame["y"].to_numpy(),
        log2_x=log2_x,
        S=S,
        curve=curve,
        direction=direction,
        online=online,
        prominent=prominent,
    )


def _kneedle(
    xv: np.ndarray, ys: np.ndarray, *, log2_x: bool, S: float, curve: str, direction: str, online: bool, prominent: bool
) -> Knee:
    """:func:`find_knee` on distinct sorted x (> 0 on log2) and their y: no pandas, so the
    bootstrap of :func:`knee_with_interval` can call it a thousand times."""
    from kneed import KneeLocator  # kneed loads matplotlib: only when a knee is asked for

    pick = "most prominent" if prominent else "last" if online else "first"
    method = f"kneedle (kneed, S={S}, {curve}/{direction}{', log2 x' if log2_x else ''}, {pick} knee)"
    xs_list, ys_list = [float(v) for v in xv], [float(v) for v in ys]
    if len(xv) < 3:
        return Knee(None, None, method, f"need at least 3 distinct x values, got {len(xv)}", log2_x)
    xs = np.log2(xv) if log2_x else xv
    if np.ptp(ys) == 0:
        return Knee(None, None, method, "y is flat: no knee", log2_x, xs_list, ys_list)
    never = ys.max() <= ys[0] if direction == "increasing" else ys.min() >= ys[0]
    if never:
        way = "rises above" if direction == "increasing" else "falls below"
        return Knee(
            None,
            None,
            method,
            f"y never {way} its value at the first x ({ys[0]:g} at x="
            f"{xv[0]:g}; {ys[-1]:g} at x={xv[-1]:g}): the curve is not "
            f"{direction}, so it has no knee",
            log2_x,
            xs_list,
            ys_list,
        )
    kl = KneeLocator(
        xs, ys, S=S, curve=curve, direction=direction, online=online or prominent, interp_method="interp1d"
    )
    diff = [float(v) for v in getattr(kl, "y_difference", [])]
    met = [float(k) for k in kl.all_knees] if kl.knee is not None else []
    heights = [float(kl.y_difference[np.argmin(np.abs(kl.x_difference - nk))]) for nk in kl.all_norm_knees]
    all_x = [_sample(xv, 2**k if log2_x else k) for k in met]
    chosen = kl.knee
    if prominent and met:
        top = max(heights)
        near = [k for k, h in zip(met, heights) if h > 0 and h >= NEAR_TOP * top]
        chosen = min(near) if near else None
        if chosen is None:
            return Knee(
                None,
                None,
                method,
                "its only candidate is the first point, where the curve does not rise above "
                "the straight line from first to last point: no bend",
                log2_x,
                xs_list,
                ys_list,
                diff,
                all_x,
                heights,
            )
    if chosen is None:
        return Knee(
            None,
            None,
            method,
            "the curve stays too close to the straight line from its first to its last point "
            "for Kneedle's threshold: too straight, or too few points",
            log2_x,
            xs_list,
            ys_list,
            diff,
        )
    knee_x = _sample(xv, 2**chosen if log2_x else chosen)
    knee_y = float(ys[np.flatnonzero(xv == knee_x)[0]])
    return Knee(knee_x, knee_y, method, "", log2_x, xs_list, ys_list, diff, all_x, heights)


def _refuse_nonpositive(x: pd.Series) -> None:
    """InputError naming the x <= 0 (log2 is undefined there)."""
    if (x <= 0).any():
        bad = ", ".join(f"{v:g}" for v in sorted(set(x[x <= 0])))
        raise InputError(
            f"x = {bad} cannot go on a log2 axis (log2 needs x > 0); drop those rows, "
            "or use a linear x axis (--linear in `iolab knee`, log2_x=False in Python)"
        )


def _sample(xv: np.ndarray, value: float) -> float:
    """The sampled x nearest ``value`` (kneed's knee, back from log2, is one of them)."""
    return float(xv[np.argmin(np.abs(xv - value))])


def power_knee(x: Sequence[float], y: Sequence[float]) -> Knee:
    """The queue depth of maximum power: throughput ÷ latency, the optimal operating point
    of a closed queue (L. Kleinrock, "Power and deterministic rules of thumb for
    probabilistic problems in computer communications", ICC 1979; R. Jain, "The Art of
    Computer Systems Performance Analysis", 1991, the "knee" of the throughput curve).

    With latency from Little's law (mean latency = QD ÷ IOPS), power = IOPS² ÷ QD, so only
    IOPS and QD are needed. Below the knee IOPS grow in proportion to depth and power
    grows; past it IOPS stay flat while latency grows with depth and power falls. Its
    argmax is a single comparison of every point, so a creeping plateau or one noisy
    deep point cannot move it far (Kneedle's bend can jump from QD 16 to 64 on such a
    curve). Repeated x are averaged; ``Knee.difference`` holds each x's power
    normalised to the largest. x <= 0 is refused; a curve with no positive y has no knee."""
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    frame = frame.groupby("x", as_index=False)["y"].mean().sort_values("x")
    _refuse_nonpositive(frame["x"])
    return _power(frame["x"].to_numpy(), frame["y"].to_numpy())


POWER_METHOD = "Kleinrock power (max of IOPS²/QD: throughput ÷ latency by Little's law)"


def _power(xv: np.ndarray, ys: np.ndarray) -> Knee:
    """:func:`power_knee` on distinct sorted x > 0 (no pandas: the bootstrap calls it)."""
    xs_list, ys_list = [float(v) for v in xv], [float(v) for v in ys]
    if len(xv) < 2:
        return Knee(
            None, None, POWER_METHOD, f"need at least 2 distinct x values, got {len(xv)}", False, xs_list, ys_list
        )
    if not (ys > 0).any():
        return Knee(None, None, POWER_METHOD, "no positive y: nothing was done", False, xs_list, ys_list)
    power = np.where(ys > 0, ys, 0.0) ** 2 / xv
    i = int(np.argmax(power))
    return Knee(
        float(xv[i]),
        float(ys[i]),
        POWER_METHOD,
        "",
        False,
        xs_list,
        ys_list,
        [float(v) for v in power / power[i]],
        [float(xv[i])],
        [1.0],
    )


KNEE_METHODS = ("kneedle", "power")


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
    prominent knee (:func:`find_knee`, ``prominent=True``) of the **median** y per x, so one
    noisy repeat does not move it. Its interval is a bootstrap over repeats (Efron 1979):
    ``n_boot`` times, each x's repeats are drawn again with replacement, their median taken,
    and the knee found again; the interval is the shortest run of consecutive sampled x
    around the knee that holds at least ``level`` (90 %) of the resamples' knees
    (resamples without a knee count against it), and ``share_in_interval`` is the share it
    actually holds. Seeded: the same ``seed`` gives the same interval.

    With one value per x there is nothing to resample: no interval, said in ``note``. The
    cross-check is :func:`saturation_point` on the median curve (the smallest x reaching
    ``SATURATION_FRACTION`` of the peak); ``agree`` is whether it falls in the interval (or equals the
    knee, without one, or both say there is no saturation), and ``note`` says in words when
    they disagree. ``name`` is what x is called in the note ('QD').

    ``method="power"`` takes :func:`power_knee` (Kleinrock's maximum power) instead of
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
        _refuse_nonpositive(frame["x"])
    groups = [g.to_numpy() for _, g in frame.groupby("x")["y"]]
    xv = np.array(sorted(frame["x"].unique()), float)
    med = np.array([np.median(g) for g in groups])
    counts = [len(g) for g in groups]
    repeats = (min(counts), max(counts)) if counts else (0, 0)
    kw = dict(log2_x=log2_x, S=KNEEDLE_S, curve="concave", direction="increasing", online=False, prominent=True)

    def pick(ys: np.ndarray) -> Knee:
        return _power(xv, ys) if method == "power" else _kneedle(xv, ys, **kw)

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


@dataclass
class KneeVerdict:
    """Result of :func:`trusted_knee`: the one knee iolab reports for a sweep. ``estimate`` is
    the trusted method's :class:`KneeEstimate` (what to plot and record), ``other`` the other
    method's (a detail), ``why`` says in words why this method on this curve."""

    estimate: KneeEstimate
    other: KneeEstimate
    why: str

    x = property(lambda self: self.estimate.x)
    y = property(lambda self: self.estimate.y)
    low = property(lambda self: self.estimate.low)
    high = property(lambda self: self.estimate.high)
    method = property(lambda self: self.estimate.method)
    method_name = property(lambda self: self.estimate.method_name)

    def line(self, name: str = "QD", lead: bool = True) -> str:
        """The verdict in one line: 'knee QD 8 by maximum power (IOPS²/QD; 100 % of resamples in
        [4, 16]): Kneedle found no knee (the curve ...)'; ``lead=False`` leaves out 'knee QD 8 '
        (a recorded result's note, beside its value)."""
        e = self.estimate
        if e.x is None:
            return f"no knee: {self.why}"
        how = "IOPS²/QD" if e.method_name == "maximum power" else "Satopää et al. 2011, on log2 QD"
        spread = (
            f"; {100 * e.share_in_interval:.0f} % of resamples in [{e.low:g}, {e.high:g}]" if e.low is not None else ""
        )
        return f"{f'knee {name} {e.x:g} ' if lead else ''}by {e.method_name} ({how}{spread}): {self.why}"


def trusted_knee(
    x: Sequence[float],
    y: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    level: float = 0.9,
    name: str = "QD",
    searched: bool = False,
) -> KneeVerdict:
    """The one knee to report for a queue-depth sweep, and why that method.

    Both :func:`knee_with_interval` methods run on the same median curve. Kneedle
    (Satopää et al. 2011, :func:`find_knee`) names the bend itself, so it is trusted when it
    finds a knee inside the swept range (not its first or deepest x), where the curve is
    concave (IOPS gained per doubling of x fall past the knee) and, with repeats, the repeats
    agree on it: ``level`` (90 %) of the resamples' knees lie within a doubling of it (its
    interval no wider than [x/2, 2x], sampled x). Otherwise Kleinrock's maximum
    power (:func:`power_knee`, IOPS²/QD) is reported, which names a depth on any curve with
    IOPS, and ``why`` says what Kneedle lacked ("Kneedle found no knee (the curve ...)").
    When maximum power finds none, or peaks at the deepest x (IOPS²/QD still rising: the
    knee lies deeper), the verdict is no knee, with the reasons. x on a log2 axis;
    ``name`` is what x is called. ``searched``: the depths are those the adaptive search
    (``iolab.stats.knee_search``) ran for maximum power's knee, which is then reported:
    Kneedle's line from first to last point needs the full grid."""
    kneedle = knee_with_interval(x, y, n_boot=n_boot, seed=seed, level=level, name=name)
    power = knee_with_interval(x, y, n_boot=n_boot, seed=seed, level=level, name=name, method="power")
    doubt = (
        "the adaptive search ran only the depths maximum power needs (Kneedle's bend needs the full grid)"
        if searched
        else _kneedle_doubt(kneedle, name)
    )
    if not doubt:
        before, after = _gain_per_doubling(kneedle)
        other = f"maximum power says {name} {power.x:g}" if power.x is not None else "maximum power finds none"
        why = (
            f"a bend inside the swept {name}s ({kneedle.x_used[0]:g}-{kneedle.x_used[-1]:g}): "
            f"each doubling adds {si_number(before, k_from=1e3)} IOPS before it, {si_number(after, k_from=1e3)} after"
            + (", and the repeats agree on it" if kneedle.low is not None else "")
            + f" ({other})"
        )
        return KneeVerdict(kneedle, power, why)
    if power.x is None:
        return KneeVerdict(kneedle, power, f"{doubt}; maximum power finds none either ({power.reason})")
    if power.x == power.x_used[-1] and len(power.x_used) > 1:
        return KneeVerdict(
            kneedle,
            power,
            f"{doubt}; maximum power still rises at the deepest {name} swept ({power.x:g}): the knee, "
            "if any, lies deeper; sweep deeper",
        )
    return KneeVerdict(power, kneedle, doubt)


def _gain_per_doubling(e: KneeEstimate) -> tuple[float, float]:
    """The median curve's mean rise per doubling of x from the first point to the knee, and
    from the knee to the last point (a knee between them)."""
    xv, med = np.log2(e.x_used), np.array(e.y_median)
    i = e.x_used.index(e.x)
    return (med[i] - med[0]) / (xv[i] - xv[0]), (med[-1] - med[i]) / (xv[-1] - xv[i])


def _kneedle_doubt(e: KneeEstimate, name: str) -> str:
    """Why Kneedle's knee is not the one to report ('' when it is)."""
    if e.x is None:
        return f"Kneedle found no knee ({e.reason})"
    if e.x in (e.x_used[0], e.x_used[-1]):
        end = "first" if e.x == e.x_used[0] else "deepest"
        return f"Kneedle's knee is the {end} {name} swept ({e.x:g}): no bend inside the range"
    before, after = _gain_per_doubling(e)
    if after >= before:
        return f"Kneedle's bend at {name} {e.x:g} is not a saturation: the curve is not concave there"
    if e.low is not None and (e.share_in_interval < e.level or e.low < e.x / 2 or e.high > 2 * e.x):
        return (
            f"Kneedle's knee moves with the repeats: {100 * e.share_in_interval:.0f} % of the resamples' knees in "
            f"[{e.low:g}, {e.high:g}], not {100 * e.level:.0f} % within a doubling of {name} {e.x:g}"
        )
    return ""


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


# ---------------------------------------------------------------- cycles per IO
@dataclass
class CyclesPerIO:
    cycles_per_io: float
    busy_cpu_s: float
    freq_hz: float
    ios: float
    freq_source: str
    method: str = "busy CPU seconds x frequency / IOs"


def cycles_per_io(busy_cpu_s: float, freq_hz: float, ios: float, freq_source: str = "given") -> CyclesPerIO:
    """CPU cycles spent per IO = busy CPU seconds x frequency (Hz) / IOs.

    Seed 001: one core fully busy at 3.9 GHz doing 450k IOPS for 1 s
    -> 1.0 x 3.9e9 / 450e3 = 8,666.7 cycles/IO. ``freq_source`` travels with the figure,
    because a nominal /proc/cpuinfo frequency is not a measured clock."""
    value = busy_cpu_s * freq_hz / ios if ios else math.nan
    return CyclesPerIO(value, busy_cpu_s, freq_hz, ios, freq_source)


def add_cycles_per_io(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``cycles_per_io`` to a run table that has sampler columns (cpu_busy_pct,
    cpus_sampled, cpu_freq_mhz, freq_source) and fio columns (iops).

    busy CPU·s per second = cpu_busy_pct/100 x cpus_sampled, so
    cycles/IO = busy fraction x CPUs x f / IOPS — the same as busy_s x f / IOs.
    Runs without samplers (client/server runs on other hosts) get NaN."""
    out = table.copy()
    for col in ("cpu_busy_pct", "cpus_sampled", "cpu_freq_mhz"):
        if col not in out:
            out[col] = math.nan
    busy_per_s = out["cpu_busy_pct"] / 100.0 * out["cpus_sampled"]
    out["cycles_per_io"] = busy_per_s * out["cpu_freq_mhz"] * 1e6 / out["iops"].where(out["iops"] > 0)
    if "perf_cycles" in out:
        # perf stat counted over its own window: IOs in it = IOPS x window
        ios = out["iops"] * out["perf_window_s"]
        out["cycles_per_io_perf"] = out["perf_cycles"] / ios.where(ios > 0)
        out["cycles_per_io_disagreement_pct"] = 100 * (out["cycles_per_io_perf"] / out["cycles_per_io"] - 1)
    return out


# ---------------------------------------------------------------- repeats
def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (repeats of one setting):
    (low, high); NaN for fewer than two values. Used for every "mean and interval" figure."""
    from scipy import (
        stats,
    )  # here, not at the top: scipy.stats adds 0.5 s to every import of iolab (15 s in the NVMe lab)

    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return math.nan, math.nan
    half = stats.t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)


def summarise_repeats(table: pd.DataFrame, by: Sequence[str], value: str, confidence: float = 0.95) -> pd.DataFrame:
    """Mean, standard deviation, coefficient of variation and the confidence interval of
    ``value`` over repeats (``compare.interval``: Student t, stopped at 0 for a rate or a
    time, NaN below 3 repeats), per group ``by``. n = 1 gives NaN spread."""
    g = table.groupby(list(by))[value]
    out = g.agg(["mean", "std", "count", "min", "max"]).reset_index()
    from .compare import interval  # compare imports this module

    ci = [interval(v, value, confidence) for _, v in g]
    out["ci_low"], out["ci_high"] = [lo for lo, _ in ci], [hi for _, hi in ci]
    out["cv_pct"] = 100 * out["std"] / out["mean"]
    return out.rename(
        columns={c: f"{value}_{c}" for c in ("mean", "std", "count", "min", "max", "ci_low", "ci_high", "cv_pct")}
    )


# ---------------------------------------------------------------- steady state (SNIA PTS)
SNIA_WINDOW = 5  # rounds in SNIA's measurement window
SNIA_RANGE_PCT = 20.0  # max - min of the window, % of its mean
SNIA_SLOPE_PCT = 10.0  # excursion of the best linear fit across the window, % of its mean


def steady_state(
    values: Sequence[float],
    window: int = SNIA_WINDOW,
    range_pct: float = SNIA_RANGE_PCT,
    slope_pct: float = SNIA_SLOPE_PCT,
    unit: str = "rounds",
) -> tuple[bool, str]:
    """Whether the last ``window`` figures (IOPS of rounds, or of intervals of a run: ``unit``)
    are in steady state by SNIA's Solid State Storage Performance Test Specification
    (Enterprise v1.1, sections 2.1 and 3): their range is at most ``range_pct`` % of their
    mean and the best linear fit through them moves at most ``slope_pct`` % of the mean
    across the window. Returns the verdict and the figures that decide it in words. Fewer
    than ``window`` figures: not yet. Used by ``studies.precondition`` and ``iolab.read.series``."""
    if window < 2:
        raise InputError(f"window={window}: SNIA's rule needs at least 2 {unit} (it uses 5)")
    y = np.asarray(values, float)[-window:]
    if len(y) < window:
        return False, f"{len(y)} of {window} {unit} so far"
    mean = y.mean()
    spread = 100 * (y.max() - y.min()) / mean if mean else float("inf")
    slope = np.polyfit(np.arange(window), y, 1)[0]
    excursion = 100 * abs(slope) * (window - 1) / mean if mean else float("inf")
    ok = spread <= range_pct and excursion <= slope_pct
    return ok, (
        f"last {window} {unit}: range {spread:.0f} % of the mean (limit {range_pct:g} %), "
        f"linear-fit excursion {excursion:.0f} % (limit {slope_pct:g} %)"
    )
