"""Files a user writes (batch manifests, hosts files, search specs, seed manifests) and
settings given in Python or on the command line (the NVMe lab's) checked by pydantic models,
and what pydantic finds said the project's way: the one rule for those messages.

A model declares each key's type, what it expects (``Field(description=...)``, a phrase
that reads on from "not": "a mapping of parameter -> value") and an example
(``examples=[...]``, YAML as the user would write it); a model that is an item of a list
or a mapping says the same in its ``model_config`` (``title`` and ``json_schema_extra``'s
"examples"). ``validated(Model, doc, where)`` returns the checked model, or raises
InputError naming the file, the key, what was given, what is expected and an example::

    batch.yaml: defaults is a list ([1, 2]), not a mapping of parameter -> value; write it as defaults: {runtime_s: 1}
    hosts.yaml: host h1 is a number (5), not a host entry {via: command prefix}; write it as h1: {via: ssh h1}
    spec.yaml: unknown key 'axis' (did you mean 'axes'?); the keys are name, description, ...

Settings given as keyword arguments rather than a file (``LabSpec(cpus=2)``) are a
``Settings`` model: checked when made, the same messages with ``WHERE`` in front.

A rule no type can say (a name that becomes a folder, a value from a set, two keys that
must agree) is a validator's, decorated with ``refusal``: it raises InputError with a
sentence that names the key and what to write instead, and ``validated`` puts the file in
front. A type's own before-validator (which does not know its key) raises ValueError with
words that read on from the key (``holds no command``). pydantic's own wording never
reaches a user.
"""

from __future__ import annotations

import functools
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel, Strict, ValidationError
from pydantic.fields import FieldInfo

from .errors import InputError, printable, with_nearest

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "validated",
    "Settings",
    "refusal",
    "message",
    "key_path",
    "given",
    "whole",
    "Text",
    "Word",
    "Table",
    "Words",
]


# ---------------------------------------------------------------- checking a document
class Refused(ValueError):
    """A validator's InputError as pydantic collects it (``refusal``): its sentence, as written."""


def refusal(check: Callable[..., Any]) -> Callable[..., Any]:
    """A validator that refuses with InputError (a sentence naming the key and what to write)
    as one pydantic collects with its other findings: ``message`` says it as written, after
    any unknown key (a misspelt key explains a rule broken by its absence)."""

    @functools.wraps(check)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return check(*args, **kwargs)
        except InputError as exc:
            raise Refused(str(exc)) from None

    return checked


def validated(model: type[M], doc: Any, where: str, context: Mapping[str, Any] | None = None) -> M:
    """``model`` checked from ``doc`` (what YAML gave); InputError ``"<where>: ..."`` saying
    what is wrong, for the first problem found (and how many more there are). ``where`` is
    the file as the user named it (or e.g. "the search spec" for a mapping given in Python);
    ``context`` reaches the model's validators (``info.context``: the file's folder, ...)."""
    try:
        return model.model_validate(doc, context=dict(context or {}))
    except ValidationError as exc:
        raise InputError(message(model, exc, where)) from None
    except InputError as exc:  # a validator's own sentence
        raise InputError(f"{where}: {exc}") from None


class Settings(BaseModel):
    """Settings given in Python or on the command line, checked when made as a file is by
    ``validated``: ``Model(key=value)`` raises InputError in the project's words with
    ``WHERE`` in front (``nvmelab settings: cpus is 99, not a whole number from 1 to 8``).
    Unknown keys are refused; once made, settings do not change (frozen)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    WHERE: ClassVar[str] = "the settings"

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as exc:
            raise InputError(message(type(self), exc, self.WHERE)) from None
        except InputError as exc:  # a validator's own sentence
            raise InputError(f"{self.WHERE}: {exc}") from None


def message(model: type[BaseModel], error: ValidationError, where: str) -> str:
    """One line for ``error``: its first problem in the project's words (unknown keys of one
    mapping are one problem, said before any other), then how many more there are."""
    errors = error.errors(include_url=False)
    # an unknown key first: a misspelt key explains the key found missing
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    if first["type"] == "extra_forbidden":
        parent = first["loc"][:-1]
        unknown = [e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == parent]
        text = _unknown(model, parent, [str(e["loc"][-1]) for e in unknown])
        rest = len(errors) - len(unknown)
    else:
        text, rest = _problem(model, first), len(errors) - 1
    more = f" ({rest} more problem{'s' if rest > 1 else ''} after this one)" if rest else ""
    return f"{where}: {text}{more}"


def _problem(model: type[BaseModel], error: Mapping[str, Any]) -> str:
    loc, kind, value = error["loc"], error["type"], error.get("input")
    expected, example = _expected(model, loc)
    write = f"; write it as {example}" if example else ""
    key = key_path(model, loc)
    if kind == "missing":
        return f"{key} is missing: give {expected}{write}"
    if kind == "value_error" and isinstance(error["ctx"]["error"], Refused):  # a validator's own sentence
        return str(error["ctx"]["error"])
    if kind == "value_error":  # a type's ValueError: its words, with the key
        return f"{key}: {printable(error['ctx']['error'])}{write}"
    shown = given(value) if kind.endswith(("_type", "_parsing")) or value in (None, "") else _short(value)
    return f"{key} is {shown}, not {expected}{write}"


def _unknown(model: type[BaseModel], parent: tuple, names: list[str]) -> str:
    """``unknown key 'axis' (did you mean 'axes'?)`` for the keys of one mapping."""
    owner = _model_at(model, parent)
    known = list(owner.model_fields) if owner and not issubclass(owner, RootModel) else []
    inside = f"{key_path(model, parent)}: " if parent else ""
    listed = f"; the keys are {', '.join(known)}" if known else ""
    return printable(f"{inside}unknown key {with_nearest(names, known)}{listed}")


def key_path(model: type[BaseModel], loc: tuple) -> str:
    """``loc`` as a user writes it: ``runs[0].parameters``; a mapping of named entries (a root
    model whose field has a ``title``, e.g. "host") names its entries ``host h1: via``."""
    parts: list[str] = []
    for step in loc:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        else:
            parts.append(("." if parts else "") + str(step))
    title = model.model_fields["root"].title if issubclass(model, RootModel) else None
    if title and loc:  # host h1: via
        rest = "".join(parts[1:]).lstrip(".")
        return printable(f"{title} {loc[0]}" + (f": {rest}" if rest else ""))
    return printable("".join(parts) or "the file")


def given(value: Any) -> str:
    """What a YAML value is, in words, with a short quote: ``a list ([1, 2])``, ``text
    ('abc')``, ``empty``."""
    if value is None or value == "":
        return "empty"
    kind = (
        "true/false"
        if isinstance(value, bool)
        else "a number"
        if isinstance(value, (int, float))
        else "text"
        if isinstance(value, str)
        else "a list"
        if isinstance(value, (list, tuple))
        else "a mapping"
        if isinstance(value, Mapping)
        else f"a {type(value).__name__}"
    )
    return f"{kind} ({_short(value)})"


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return printable(text if len(text) <= limit else text[: limit - 1] + "…")


# ---------------------------------------------------------------- what a key expects
def _expected(model: type[BaseModel], loc: tuple) -> tuple[str, str]:
    """(what the key at ``loc`` expects, a line to write) from the model's declarations: the
    field's description and example, or for an item of a list or mapping that is a model,
    its ``title`` and example."""
    info, item, on_field = _walk(model, loc)
    if _is_model(item) and loc and not on_field:
        examples = (item.model_config.get("json_schema_extra") or {}).get("examples") or [""]
        what = item.model_config.get("title") or "a mapping of " + ", ".join(item.model_fields)
        return what, _line(loc, examples[0])
    if info is None:
        return "a value iolab can use", ""
    what, example = info.description or "a value iolab can use", (info.examples or [""])[0]
    if on_field or not loc:
        return what, _line(loc, example)
    named = [step for step in loc if isinstance(step, str)]  # an item of a field's list or mapping
    return f"an item of {what}", _line(tuple(named[-1:]), example)


def _line(loc: tuple, example: str) -> str:
    """``name: example`` for a key, ``- example`` for a list item."""
    if not example:
        return ""
    if loc and isinstance(loc[-1], int):
        return f"- {example}"
    return printable(f"{loc[-1]}: {example}" if loc else example)


def _walk(model: type[BaseModel], loc: tuple) -> tuple[FieldInfo | None, Any, bool]:
    """Follow ``loc`` through the declarations: the last field named on the way, the type
    ``loc`` ends in, and whether it ends on a field (else on an item of a list or mapping,
    or on a key the model does not have: then the type is None)."""
    info: FieldInfo | None = model.model_fields["root"] if issubclass(model, RootModel) else None
    current: Any = model
    on_field = False
    for step in loc:
        if _is_model(current) and issubclass(current, RootModel):
            current = _inner(current.model_fields["root"].annotation)
        if _is_model(current):
            if step not in current.model_fields:
                return info, None, False
            info, on_field = current.model_fields[step], True
            current = _inner(info.annotation)
        else:
            current, on_field = _inner(_item(current)), False
    return info, current, on_field


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model whose keys sit at ``loc``."""
    current = _walk(model, loc)[1]
    return current if _is_model(current) else None


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _inner(annotation: Any) -> Any:
    """``annotation`` without Annotated and Optional: list[Run] | None -> list[Run]."""
    while True:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        kept = [a for a in args if a is not type(None)]
        if origin is Annotated:
            annotation = args[0]
        elif origin in (typing.Union, types.UnionType) and len(kept) == 1:
            annotation = kept[0]
        else:
            return annotation


def _item(annotation: Any) -> Any:
    """What a list or mapping holds: list[Run] -> Run, dict[str, Host] -> Host."""
    args = typing.get_args(annotation)
    return args[-1] if args else annotation


# ---------------------------------------------------------------- types a YAML file uses
def _whole(value: Any) -> Any:
    """An int from an int, a whole float or text of digits (`` 2 ``, ``-1``); anything else
    (true/false, a fraction, a word) is left for the strict int check to refuse."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    return value


def whole(minimum: int | None = None, maximum: int | None = None) -> Any:
    """A whole number (``jobs: 2``, ``repeats: "3"``, ``2.0``) in [minimum, maximum]; true/false,
    fractions and words are refused. Give the key's ``description`` saying the bound."""
    return Annotated[int, BeforeValidator(_whole), Strict(), Field(ge=minimum, le=maximum)]


def _text(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _word(value: Any) -> Any:
    """A name or setting YAML may read as a number (``name: 2024``, ``size: 1024``) as text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return _text(value)


def _table(value: Any) -> Any:
    """A mapping with its keys as stripped text (YAML reads ``1:`` as a number); an empty
    value (``defaults:`` alone) is an empty mapping."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k).strip(): v for k, v in value.items()}
    return value


def _words(value: Any) -> Any:
    """One value or a list of them as a list (``target: scratch`` or ``target: [a, b]``); an
    empty value is left for the type check to refuse."""
    return value if isinstance(value, list) or value is None else [value]


Text = Annotated[str, BeforeValidator(_text), Strict()]  # text, stripped; a number is refused
Word = Annotated[str, BeforeValidator(_word), Strict()]  # text or a number read as text, stripped
Table = Annotated[dict[str, Any], BeforeValidator(_table)]  # keys as text; empty: {}
Words = Annotated[list[Word], BeforeValidator(_words)]  # one word or a list of them
