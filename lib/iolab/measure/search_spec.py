"""The search spec's schema: ``SearchSpec`` checks a spec's keys and values (pydantic, with
``iolab.core.schema``'s messages) and ``load_spec`` makes the ``Spec`` a search runs
from a YAML file or a mapping. What each key means: ``iolab.measure.search``'s docstring;
data/examples/search_small.yaml is one.

Values are read as before the schema: ``target`` is one or a list, ``repeats: "3"`` and
``seed: 2.0`` are whole numbers, axis values are spelled loosely (``stress: [Stressed]``,
``siblings: [not_used]``), ``warmup`` has the one spelling of ``iolab.core.validate.warmup``
(a time is fio's ``ramp_time`` on every run, in ``base``), ``hosts_file`` is relative to
the spec's folder. Each refusal names the file and the key and says what to write.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..core.errors import InputError
from ..core.paths import check_name, safe_name
from ..core.schema import Table, Text, Word, Words, refusal, validated, whole
from ..core.validate import cpu_list, kind_of, positive_ints, warmup, warmup_text, yaml_mapping
from ..machine import knobs
from ..machine.hosts import hosts_from
from .campaign import with_ramp

STRESS = ("idle", "stressed")
SIBLINGS = ("not used", "used")
ORDERS = ("random", "given")
MAX_REPEATS = 1000  # a spec asking for more is a typo (the plan lists every run before the first)
WHAT = "search spec (YAML; data/examples/search_small.yaml is one)"
STOP_HOW = (
    "stop: give {metric: iops, ci_pct: 5, min_repeats: 3} (end a cell once the 95 % "
    "interval of its mean is within ci_pct % of it)"
)


def _cpus(value: Any) -> Any:
    """``cpus: [0, 1]`` or ``cpus: 0-3`` as a list of CPUs (``validate.cpu_list``)."""
    if value is None:
        return None
    try:
        return cpu_list(value if isinstance(value, list) else str(value))
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _host_names(value: Any) -> Any:
    """``hosts: h1, h2:8766`` (comma-separated, as ``--hosts``) or a list as a list."""
    return [h for h in value.split(",")] if isinstance(value, str) else value


@dataclass
class Spec:
    """A search spec, checked (``load_spec``): what ``iolab.measure.search`` plans and runs."""

    name: str
    target: list[str]
    axes: dict[str, list]
    base: dict[str, Any] = field(default_factory=dict)
    size: str = "1g"
    cpus: list[int] | None = None
    repeats: int = 1
    order: str = "random"
    seed: int = 0
    stop: dict[str, Any] | None = None
    warmup: str = "run"  # validate.warmup's spelling: run, none or a time (2s: ramp_time)
    description: str = ""
    path: Path | None = None
    hosts: list[str] | None = None
    hosts_file: str | None = None

    @property
    def ident(self) -> str:
        """``name-<hash>``: the hash covers what decides a run besides its axes and repeat."""
        what = json.dumps(
            {
                "target": self.target,
                "size": self.size,
                "cpus": self.cpus,
                "base": self.base,
                **({"hosts": self.hosts} if self.hosts else {}),
            },
            sort_keys=True,
            default=str,
        )
        return f"{self.name}-{hashlib.sha256(what.encode()).hexdigest()[:8]}"


class SearchSpec(BaseModel):
    """A search spec as written: its keys, their types and the rules between them."""

    model_config = ConfigDict(extra="forbid")
    name: Word | None = Field(
        default=None, description="a search name (its runs folder: search-<name>)", examples=["bs-qd"]
    )
    description: Word | None = Field(default=None, description="a line of text", examples=["bs x iodepth"])
    target: Words = Field(
        default=["scratch"],
        min_length=1,
        description="scratch, loop:SIZE, a file or device path, or a list of them (one per device)",
        examples=["[loop:128m, loop:128m]"],
    )
    size: Word = Field(default="1g", description="a size fio reads (the scratch file or loop device)", examples=["1g"])
    cpus: Annotated[list[int] | None, BeforeValidator(_cpus)] = Field(
        default=None, description="the CPUs runs use, a list or a CPU list", examples=["[0, 1]"]
    )
    repeats: whole(1, MAX_REPEATS) = Field(
        default=1, description=f"a whole number from 1 to {MAX_REPEATS} (runs of each cell)", examples=["3"]
    )
    order: Any = Field(default="random", validate_default=True)
    seed: whole() = Field(default=0, description="a whole number (the seed of the random order)", examples=["1"])
    base: Table = Field(
        default_factory=dict, description="a mapping of fio option -> value", examples=["{rw: randread, bs: 4k}"]
    )
    axes: Any = Field(default=None, validate_default=True)
    stop: Any = None
    warmup: Any = Field(default="run", validate_default=True)
    hosts: Annotated[list[Word] | None, BeforeValidator(_host_names)] = Field(
        default=None,
        description="fio servers, address[:port], comma-separated or a list",
        examples=["10.0.0.2, h1:8766"],
    )
    hosts_file: Text | None = Field(
        default=None, description="a hosts file, relative to the spec's folder", examples=["hosts.yaml"]
    )

    # ------------------------------------------------ one key each
    @field_validator("name")
    @classmethod
    @refusal
    def _folder_name(cls, name: str | None) -> str | None:
        return None if name is None else check_name(name, "search name", "name: in the spec")

    @field_validator("order", mode="before")
    @classmethod
    @refusal
    def _order(cls, order: Any) -> str:
        text = str(order).strip().lower()
        if text not in ORDERS:
            raise InputError(f"order {text!r}: choose random (cells shuffled with the seed) or given")
        return text

    @field_validator("axes", mode="before")
    @classmethod
    @refusal
    def _axes(cls, axes: Any) -> dict[str, list]:
        if not axes or not isinstance(axes, Mapping):
            raise InputError(
                "the spec has no axes: give `axes:` a mapping of axis -> list of values, e.g. axes: {iodepth: [1, 8, 32]}"
            )
        return {str(axis).strip(): _axis(str(axis).strip(), values) for axis, values in axes.items()}

    @field_validator("stop", mode="before")
    @classmethod
    @refusal
    def _stop(cls, stop: Any) -> dict[str, Any] | None:
        return _stop_rule(stop)

    @field_validator("warmup", mode="before")
    @classmethod
    @refusal
    def _warmup(cls, value: Any) -> str | float | None:
        return warmup(value)  # "run", None or seconds of ramp_time; InputError lists the spellings

    # ------------------------------------------------ keys that must agree
    @model_validator(mode="after")
    @refusal
    def _agree(self, info: ValidationInfo) -> SearchSpec:
        if isinstance(self.warmup, float):  # a time: fio's ramp_time on every run (and in the spec's hash)
            self.base = _ramp(self.base, self.warmup)
        if "devices" in self.axes and max(self.axes["devices"]) > len(self.target):
            raise InputError(
                f"the devices axis goes up to {max(self.axes['devices'])} but the spec lists "
                f"{len(self.target)} target(s): list one target per device under `target:`"
            )
        if self.hosts or self.hosts_file:
            folder = (info.context or {}).get("folder") or Path(".")
            self.hosts_file = str(Path(folder) / self.hosts_file) if self.hosts_file else None
            self.hosts = [h.name for h in hosts_from(self.hosts, self.hosts_file)]
        return self

    def to_spec(self, path: Path | None) -> Spec:
        """The ``Spec`` of this spec read from ``path`` (None: a mapping)."""

        return Spec(
            name=self.name or safe_name(path.stem if path else "search", fallback="search"),
            target=self.target,
            axes=self.axes,
            base=self.base,
            size=self.size,
            cpus=self.cpus,
            repeats=self.repeats,
            order=self.order,
            seed=self.seed,
            stop=self.stop,
            warmup=warmup_text(self.warmup),
            description=self.description or "",
            path=path,
            hosts=self.hosts or None,
            hosts_file=self.hosts_file,
        )


SPEC_KEYS = tuple(SearchSpec.model_fields)


def load_spec(source: str | os.PathLike | Mapping[str, Any]) -> Spec:
    """A search spec from a YAML file (or a mapping), checked by ``SearchSpec``: unknown keys
    (with the nearest known one), empty axes, bad repeats/order/seed/cpus, machine-axis
    values, a hosts file. InputError names the file and key and says what to write; nothing
    runs."""
    if isinstance(source, Mapping):
        path, doc, where = None, {str(k).strip(): v for k, v in source.items()}, "the search spec"
    else:
        path = Path(source)
        doc, where = yaml_mapping(path, WHAT, SPEC_KEYS), str(path)
    checked = validated(SearchSpec, doc, where, context={"folder": path.parent if path else Path(".")})
    return checked.to_spec(path)


# ---------------------------------------------------------------- the rules of each key
def _ramp(base: dict[str, Any], seconds: float) -> dict[str, Any]:
    """``base`` with fio's ramp_time for ``warmup: <time>``; InputError when base sets another."""
    ramped = with_ramp(base, seconds)
    if str(base.get("ramp_time", ramped["ramp_time"])).strip() != ramped["ramp_time"]:
        raise InputError(
            f"the spec sets warmup: {seconds:g}s and base ramp_time: {base['ramp_time']}; "
            "keep one of them (warmup: <time> is fio's ramp_time on every run)"
        )
    return ramped


def _axis(axis: str, values: Any) -> list:
    """One axis's values: a list of plain values (one value alone is a list of one), the
    machine axes spelled their one way, none twice."""
    values = values if isinstance(values, list) else [values]
    nested = [v for v in values if isinstance(v, (Mapping, list))]
    if nested:
        raise InputError(
            f"axis {axis!r} has {nested[0]!r}, a {kind_of(nested[0])}; give a list of "
            f"plain values, e.g. {axis}: [1, 8, 32]"
        )
    if not values:
        raise InputError(f"axis {axis!r} has no values; give a list such as {axis}: [1, 2]")
    if axis in ("cores", "devices"):
        values = positive_ints(axis, values)
    elif axis == "stress":
        values = [_choice(axis, v, STRESS) for v in values]
    elif axis == "siblings":
        values = [_choice(axis, v, SIBLINGS) for v in values]
    elif axis in knobs.KNOBS:
        values = [v.strip() if isinstance(v, str) else v for v in values]
    if len(set(map(str, values))) < len(values):
        raise InputError(f"axis {axis!r} lists a value twice: {values}")
    return values


def _choice(axis: str, value: Any, choices: Sequence[str]) -> str:
    text = " ".join(str(value).strip().lower().replace("_", " ").split())
    aliases = {"on": choices[-1], "off": choices[0], "true": choices[-1], "false": choices[0]}
    text = aliases.get(text, text)
    if text not in choices:
        raise InputError(f"{axis}: {value!r} is not one of {', '.join(choices)}")
    return text


def _stop_rule(stop: Any) -> dict[str, Any] | None:
    """``stop: {metric, ci_pct, min_repeats}`` checked, with its defaults; None for no rule."""
    if not stop:
        return None
    if not isinstance(stop, Mapping) or set(stop) - {"metric", "ci_pct", "min_repeats"}:
        raise InputError(STOP_HOW)
    try:
        ci_pct = float(stop.get("ci_pct", 5))
    except (TypeError, ValueError):
        ci_pct = float("nan")
    if not 0 < ci_pct < float("inf") or isinstance(stop.get("ci_pct"), bool):
        raise InputError(f"stop.ci_pct {stop.get('ci_pct')!r} is not a percentage > 0; " + STOP_HOW)
    out = {
        "metric": str(stop.get("metric", "iops")),
        "ci_pct": ci_pct,
        "min_repeats": positive_ints("stop.min_repeats", [stop.get("min_repeats", 3)])[0],
    }
    if out["min_repeats"] < 2:
        raise InputError("stop.min_repeats must be at least 2: an interval needs two runs")
    return out
