"""Which cells of ``iolab compare``'s two sides hold the same settings: matched by meaning,
never pooled across a setting that varies inside a side.

    m = match(side_a, side_b)                       # or by=["qd"], where={"bs": "4k"}
    versus(m.a, m.b, m.by)                          # the tables carry one column per matched setting
    m.differences                                   # settings fixed on each side at different values

A setting of a run is a value its study swept (``params.json`` "swept", a column of the side's
table) or, where the study did not sweep it, a constant of the study: a fio option of its runs
(``iolab.compare.sides.part_setups``), or the scheduler or CPU governor of its system snapshot; a
fio option that differs between runs no sweep recorded is read from each run's params.json
(``iolab.compare.sides.unswept_options``). In a side of several studies a constant that differs
between them varies like a swept value.

Names are fio's own (``iolab.core.columns.setting_name``: notebook 01's ``qd`` is a search's
``iodepth``); values are read as fio reads them (``4k`` = ``4096``, ``"32"`` = ``32``); a fio
option a study did not give has fio's default (``iolab.core.columns.FIO_DEFAULTS``: iodepth 1,
bs 4k; "default" for the others).

Cells are matched on every setting that varies on either side, and on the settings both sides
swept. A side holding one value of a setting the other varies meets the other's cell of that
value (the other cells are listed as one-sided, not compared). ``NotComparable`` (exit 1, no
verdict) when a setting that varies cannot be matched: the other side does not record it, no
value is on both sides, or ``by`` leaves it out. ``where`` keeps only the runs with the given
values, on both sides, before anything is matched.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.columns import FIO_DEFAULTS, SIZE_SETTINGS, setting_name
from ..core.errors import InputError, NotComparable
from ..core.runfiles import quote
from ..core.validate import SIZE_UNITS, parse_size
from .sides import Side, option_names, part_setups, unswept_options

DEFAULT = "default"  # a fio option the study did not give: fio's default
SNAPSHOT_SETTINGS = ("scheduler", "governor")  # knobs a study's system snapshot records
NOT_SETTINGS = {"part", "repeat", "run_id"}
UNKNOWN = "not recorded"


@dataclass
class Matched:
    """Both sides' tables with a column per matched setting (``by``, values as fio reads them),
    the settings fixed at one value on each side, and those whose values differ."""

    a: pd.DataFrame
    b: pd.DataFrame
    by: list[str]
    fixed_a: dict[str, Any] = field(default_factory=dict)
    fixed_b: dict[str, Any] = field(default_factory=dict)

    @property
    def differences(self) -> list[tuple[str, str, str]]:
        """(setting, A's value, B's value) for each setting fixed on both sides at different values."""
        a, b = self.fixed_a, self.fixed_b
        return [(s, str(a[s]), str(b[s])) for s in a if s in b and a[s] != b[s]]


def match(
    side_a: Side, side_b: Side, by: Sequence[str] | None = None, where: Mapping[str, Any] | None = None
) -> Matched:
    """Side A's and B's tables ready to compare cell by cell (see the module docstring).
    ``by`` None: the settings that vary and those both sides swept; else the settings named."""
    options = option_names(side_a) | option_names(side_b)
    sa, sb = settings(side_a, options), settings(side_b, options)
    ta, tb = side_a.table, side_b.table
    for name, value in (where or {}).items():
        if setting_name(name) not in {*sa, *sb}:
            raise InputError(
                f"--where {quote(f'{name}={value}')}: neither side records {quote(name)}; "
                f"give one of {', '.join(sorted({*sa, *sb}))}"
            )
        ta, sa = _where(ta, sa, name, value, "A")
        tb, sb = _where(tb, sb, name, value, "B")
    swept_a, swept_b = ({setting_name(c) for c in s.swept} for s in (side_a, side_b))
    names = list(dict.fromkeys([*sa, *sb]))
    varying = [s for s in names if _varies(sa, s) or _varies(sb, s)]
    if by is None:
        keys = [s for s in names if s in varying or (s in swept_a and s in swept_b and _known(sa, s) & _known(sb, s))]
    else:  # settings, and any other column both tables have (host, direction) as it is
        plain = [c for c in by if c == "part" or (c in ta and c in tb and not {setting_name(c)} <= {*sa} & {*sb})]
        keys = list(dict.fromkeys(setting_name(c) for c in by if c not in plain))
        for side, frame in (("A", sa), ("B", sb)):
            missing = [c for c in by if c not in plain and setting_name(c) not in frame]
            if missing:
                raise InputError(
                    f"side {side} has no column {', '.join(map(repr, missing))} to match cells on; "
                    "give --by settings both sides have (the settings they swept), or 'none' for one cell"
                )
        left = [s for s in varying if s not in keys]
        if left:
            s = left[0]
            side, frame = ("A", sa) if _varies(sa, s) else ("B", sb)
            raise NotComparable(
                f"not comparable: {side} varies {s} ({_show(frame[s])}) and --by leaves it out: its cells would be "
                f"pooled into one mean; add {s} to --by, or keep one value with --where {s}={_first(frame[s])}"
            )
    for s in keys:
        _check(s, sa, sb)
    fixed = [{s: next(iter(_known(f, s))) for s in f if s not in keys and _fixed(f, s)} for f in (sa, sb)]
    shown = {s: _shown_name(s, side_a, side_b) for s in keys}  # qd on both sides stays qd
    if by is None:
        both = all("part" in side.swept and "part" in side.table for side in (side_a, side_b))
        order = ["part"] * both + [shown[s] for s in keys]
    else:
        order = list(dict.fromkeys(c if c in plain else shown[setting_name(c)] for c in by))
    return Matched(
        ta.assign(**{shown[s]: sa[s] for s in keys}),
        tb.assign(**{shown[s]: sb[s] for s in keys}),
        order,
        *fixed,
    )


def _shown_name(s: str, side_a: Side, side_b: Side) -> str:
    """The name both sides swept ``s`` under when it is the same one, else fio's."""
    names = {c for side in (side_a, side_b) for c in side.swept if setting_name(c) == s}
    return names.pop() if len(names) == 1 else s


def settings(side: Side, options: set[str] = frozenset()) -> pd.DataFrame:
    """One column per setting of the side (fio's names), a row per row of its table: the swept
    value, else its study's constant; fio's default for a fio option in ``options`` the study did
    not give (``FIO_DEFAULTS``, else ``DEFAULT``); None where nothing says."""
    table = side.table
    parts = table["part"] if "part" in table else pd.Series(next(iter(side.parts), ""), index=table.index)
    constants = {}
    for name, values in part_setups(side).items():
        constants[name] = {setting_name(k[4:]): v for k, v in values.items() if k.startswith("fio ")}
        constants[name] |= {k: values[k] for k in SNAPSHOT_SETTINGS if k in values}
    columns: dict[str, list[str]] = {}
    for col in side.swept:
        if col in table and col not in NOT_SETTINGS:
            columns.setdefault(setting_name(col), []).append(col)
    per_run = unswept_options(side)  # options that differ between runs no sweep recorded
    ids = table["run_id"].astype(str) if per_run and "run_id" in table else pd.Series(dtype=str)
    names = dict.fromkeys(
        [*columns, *(s for c in constants.values() for s in c), *(s for o in per_run.values() for s in o)]
    )
    out = {}
    for s in names:  # each distinct value read once: a side may have 100,000 rows
        default = FIO_DEFAULTS.get(s, DEFAULT) if s in options else None
        per_part = {
            p: value_of(s, constants.get(p, {}).get(s, default if p in constants else None)) for p in set(parts)
        }
        given = parts.map(per_part).astype(object)
        mine = ids[ids.map(lambda r, s=s: s in per_run.get(r, ()))]
        if len(mine):
            read = mine.map(
                lambda r, s=s, default=default: value_of(s, default if per_run[r][s] is None else per_run[r][s])
            )
            given = given.where(~given.index.isin(mine.index), read)
        for col in columns.get(s, []):
            swept = table[col][table[col].notna()]
            if swept.map(lambda v: isinstance(v, (list, dict))).any():  # a JSON list as a value: its text
                swept = swept.map(str)
            given = (
                swept.map({v: value_of(s, v) for v in swept.unique()})
                .astype(object)
                .reindex(table.index)
                .where(table[col].notna(), given)
            )
        out[s] = given.where(given.notna(), None)
    return pd.DataFrame(out, index=table.index, dtype=object)


def value_of(name: str, value: Any) -> Any:
    """A setting's value as fio reads it, so two spellings meet: sizes in fio's short form
    (``4096`` -> ``4k``), whole numbers as int (``"32"`` -> 32), other text stripped; None for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, bool):
        return int(value)
    text = str(value).strip()
    if name in SIZE_SETTINGS and text != DEFAULT:
        try:
            return size_text(parse_size(text))
        except InputError:
            return text  # bs=4k,64k (reads, writes) or a range: compared as written
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number if math.isfinite(number) else text


def size_text(size: int) -> str:
    """Bytes in fio's short form, the largest unit that divides them: 4096 -> 4k, 3 MiB -> 3m."""
    for unit in "ptgmk":
        if size and size % SIZE_UNITS[unit] == 0:
            return f"{size // SIZE_UNITS[unit]}{unit}"
    return str(size)


def _known(frame: pd.DataFrame, s: str) -> set:
    return set(frame[s].dropna()) if s in frame else set()


def _varies(frame: pd.DataFrame, s: str) -> bool:
    """More than one value (None, "not recorded", counts as one)."""
    return s in frame and frame[s].nunique(dropna=False) > 1


def _fixed(frame: pd.DataFrame, s: str) -> bool:
    return s in frame and frame[s].nunique(dropna=False) == 1 and frame[s].notna().all()


def _check(s: str, sa: pd.DataFrame, sb: pd.DataFrame) -> None:
    """NotComparable when cells cannot be matched on ``s``: a side does not record it for
    (some of) its runs, or no value is on both sides."""
    for side, frame, other, varied in (("A", sa, "B", sb), ("B", sb, "A", sa)):
        if s not in frame or frame[s].isna().any():
            some = "" if s not in frame or frame[s].isna().all() else " for some of its runs"
            shown = f"{other} has {s} {_show(varied[s])}" if s in varied else f"{other} does not record it either"
            keep = f"; keep one value with --where {s}={_first(varied[s])}" if _known(varied, s) else ""
            raise NotComparable(f"not comparable: {side} does not record {s}{some}, {shown}{keep}")
    if not _known(sa, s) & _known(sb, s):
        raise NotComparable(f"not comparable: no {s} is on both sides: A has {_has(sa[s], s)}, B has {_has(sb[s], s)}")


def _where(table: pd.DataFrame, frame: pd.DataFrame, name: str, value: Any, side: str):
    """The runs of one side with setting ``name`` at ``value``; a side that does not record it
    keeps every run (nothing says which to drop)."""
    s = setting_name(name)
    if s not in frame or frame[s].isna().all():
        return table, frame
    keep = frame[s] == value_of(s, value)
    if not keep.any():
        raise InputError(
            f"--where {quote(f'{name}={value}')}: side {side} has no such run; its {s} is {_show(frame[s])}"
        )
    return table[keep.to_numpy()], frame[keep]


def _show(values: pd.Series) -> str:
    seen = [UNKNOWN if v is None else str(v) for v in dict.fromkeys(values)]
    return ", ".join(seen[:6]) + (f" and {len(seen) - 6} more" if len(seen) > 6 else "")


def _first(values: pd.Series) -> str:
    return str(next(v for v in values if v is not None))


def _has(values: pd.Series, s: str) -> str:
    seen = list(dict.fromkeys(values))
    return f"{s}={seen[0]} only" if len(seen) == 1 else f"{s} {_show(values)}"
