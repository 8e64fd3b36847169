"""Data flows one way: a module imports only from its own layer or the layers below.

The layers, lowest first (README, "How it works"). A new module must be placed here; an
import that goes up a layer (the parser importing the runner, the store importing a
producer) fails this test, function-level imports included."""

import ast
from pathlib import Path

from conftest import REPO

LAYERS = [
    (
        "foundations",
        {"__init__", "errors", "paths", "atomic", "columns", "readable", "progress", "signals", "results", "runfiles"},
    ),
    (
        "readers and parsers",
        {
            "system",
            "fiojson",
            "fold",
            "profile",
            "tio",
            "analysis",
            "ledger",
            "owned",
            "pool",
            "compare",
            "drift",
            "knee_search",
            "effects",
            "hosttable",
            "threadstates",
            "checks",
        },
    ),
    (
        "tools and resources",
        {
            "process",
            "fio",
            "perf",
            "sampling",
            "locks",
            "jobcheck",
            "validate",
            "target",
            "knobs",
            "stress",
            "hosts",
            "threads",
            "series",
        },
    ),
    ("run folders", {"producers", "store", "runcache"}),
    ("repair", {"repair"}),
    ("one run", {"runner", "clients"}),
    ("grids", {"sweep", "search"}),
    ("studies", {"studies"}),
    ("pictures", {"plots", "flamegraph", "explore", "hostplots", "timeplots"}),
    (
        "notebooks",
        {"publish", "demo", "lab", "batch", "batch_index", "reproduce", "provenance", "nvmelab", "seeds", "seed_pages"},
    ),
    ("command line", {"cli"}),
]
PACKAGE = REPO / "lib" / "iolab"


def layer_of(module: str) -> int:
    top = module.split(".")[0]
    for i, (_, members) in enumerate(LAYERS):
        if top in members:
            return i
    raise AssertionError(f"lib/iolab/{top} is in no layer: add it to LAYERS in tests/test_layers.py")


def _is_module(name: str) -> bool:
    top = name.split(".")[0]
    return (PACKAGE / f"{top}.py").exists() or (PACKAGE / top).is_dir()


def imports(path: Path) -> set[str]:
    """The iolab modules ``path`` imports (relative imports, any depth in the file)."""
    inside_studies = path.parent.name == "studies"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            from_package = node.level == 2 or not inside_studies
            names = [node.module] if node.module else [a.name for a in node.names]
            names = [n if _is_module(n) else "__init__" for n in names]  # from . import __version__
            found |= {n if from_package else "studies" for n in names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iolab."):
            found.add(node.module.removeprefix("iolab."))
    return found


def test_every_import_goes_down_or_sideways():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = "studies" if path.parent.name == "studies" else path.stem
        mine = layer_of(module)
        for dep in imports(path):
            if layer_of(dep) > mine:
                upward.append(
                    f"{path.relative_to(PACKAGE)} ({LAYERS[mine][0]}) imports {dep} ({LAYERS[layer_of(dep)][0]})"
                )
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_the_store_imports_no_producer():
    assert not imports(PACKAGE / "store.py") & {"fio", "fiojson", "tio", "sampling", "system", "perf", "fold"}


def test_the_layer_test_catches_an_upward_import(tmp_path):
    fake = tmp_path / "fiojson.py"
    fake.write_text("from .runner import measure\n")
    assert "runner" in imports(fake) and layer_of("runner") > layer_of("fiojson")
