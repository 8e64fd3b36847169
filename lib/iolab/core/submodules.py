"""A package's modules as its attributes, each imported when first named (PEP 562), so a
notebook writes ``from iolab import stats`` and then ``stats.knee_verdict.verdict(...)``
without paying for the modules it never uses. ``dir()`` lists them for tab completion.

    __getattr__, __dir__ = on_demand(__name__, __path__)   # in a package's __init__.py
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any


def on_demand(package: str, path: Iterable[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__`` and ``__path__``)."""
    names = sorted(m.name for m in pkgutil.iter_modules(list(path)) if not m.name.startswith("_"))

    def __getattr__(name: str) -> Any:
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*names, *importlib.import_module(package).__dict__})

    return __getattr__, __dir__
