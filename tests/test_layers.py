"""Data flows one way: a folder of lib/iolab/ imports only from the folders it is allowed.

Two branches stand on a shared core: the machine -> runs -> measure branch (what touches
the machine and makes run folders) and the read -> stats -> plots branch (what reads tool
outputs and turns them into figures), joined by studies and report. docs/how-it-works.md
lists the same folders in the same order with the modules in each (checked here), and
every folder's ``__init__.py`` says what the layer is for. An import that goes to a folder
not allowed (the parser importing the runner, a plot importing the machine) fails this
test, function-level imports included."""

import ast
import re
from pathlib import Path

from support.paths import REPO

# folder -> the folders it may import besides itself, lowest first
LAYERS = {
    "core": set(),
    "record": {"core"},
    "read": {"core"},
    "stats": {"core", "read"},
    "machine": {"core", "read"},
    "runs": {"core", "read", "stats", "machine"},
    "measure": {"core", "read", "stats", "machine", "runs"},
    "studies": {"core", "read", "stats", "machine", "runs", "measure"},
    "plots": {"core", "read", "stats"},
    "report": {"core", "record", "read", "stats", "machine", "runs", "measure", "studies", "plots"},
    "compare": {"core", "record", "read", "stats", "runs", "plots", "report"},
    "nvmelab": {"core", "record", "read", "machine", "report"},
    "seeds": {"core", "record", "read", "stats", "machine", "runs", "measure", "studies", "plots", "report"},
}
TOP = {
    "__init__",
    "__main__",
    "cli",
    "nb",
}  # the package face, the command line (cli/, a package) and the notebooks' front door: may import every folder
PACKAGE = REPO / "lib" / "iolab"


def folder_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(path: Path) -> set[str]:
    """The folders (or top modules) of lib/iolab that ``path`` imports, at any depth in it."""
    parts = path.relative_to(PACKAGE).parts[:-1] if path.is_relative_to(PACKAGE) else (path.parent.name,)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(parts[: len(parts) - (node.level - 1)])
            names = [node.module] if node.module else [a.name for a in node.names]
            for name in names:
                dotted = base + name.split(".")
                top = dotted[0]
                found.add(top if base or top in LAYERS or top in TOP else "__init__")  # from .. import __version__
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iolab."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "iolab":
            found |= {a.name for a in node.names}
    return found


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_sits_in_a_layer_folder():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.stem not in TOP]
    unknown = [d.name for d in PACKAGE.iterdir() if d.is_dir() and d.name not in ("__pycache__", *LAYERS, *TOP)]
    assert not loose and not unknown, f"put these in a layer folder (tests/test_layers.py LAYERS): {loose + unknown}"
    assert all((PACKAGE / f / "__init__.py").read_text().startswith('"""') for f in LAYERS)


def test_every_import_goes_to_an_allowed_folder():
    wrong = []
    for path in modules():
        mine = folder_of(path)
        if mine in TOP:
            continue
        for dep in imports(path) - {mine, "__init__"}:
            if dep not in LAYERS[mine]:
                wrong.append(f"{path.relative_to(PACKAGE)} ({mine}) imports {dep}")
    assert not wrong, "imports a folder may not make (tests/test_layers.py LAYERS):\n" + "\n".join(wrong)


def test_the_store_imports_no_producer():
    store = {
        n for n in ast.walk(ast.parse((PACKAGE / "runs" / "store.py").read_text())) if isinstance(n, ast.ImportFrom)
    }
    named = {a.name for n in store for a in n.names} | {(n.module or "").split(".")[-1] for n in store}
    assert not named & {"fio", "fiojson", "tio", "sampling", "samples", "system", "perf", "fold"}


def test_the_layer_test_catches_a_wrong_import(tmp_path):
    fake = tmp_path / "read" / "fiojson.py"
    fake.parent.mkdir()
    fake.write_text("from ..measure.runner import measure\n\ndef f():\n    from iolab.plots import explore\n")
    assert imports(fake) == {"measure", "plots"} and not imports(fake) & LAYERS["read"]


def readme_layers() -> dict[str, list[str]]:
    """docs/how-it-works.md's tree: folder -> the modules it lists there."""
    text = (REPO / "docs" / "how-it-works.md").read_text()
    block = text.split("# How it works", 1)[1].split("\n## ", 1)[0]
    tree: dict[str, list[str]] = {}
    folder = None
    for line in block.splitlines():
        if m := re.match(r"^      (\w+)/\s", line + " "):
            folder = m.group(1)
            tree[folder] = []
        elif (m := re.match(r"^        (\w+)\.py\s", line + " ")) and folder:
            tree[folder].append(m.group(1))
    return tree


def test_the_readme_draws_the_same_layers():
    listed = {folder: names for folder, names in readme_layers().items() if folder not in TOP}
    assert list(listed) == list(LAYERS), "docs/how-it-works.md lists the folders in LAYERS' order"
    for folder, names in listed.items():
        there = sorted(p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__")
        assert sorted(names) == there, f"docs/how-it-works.md lists {folder}/ as {sorted(names)}; it holds {there}"


def test_no_test_module_imports_another():
    """What tests share lives in tests/support/: no test module, nor conftest or support,
    imports a test module or conftest (at any depth in it)."""
    wrong = []
    for path in sorted([*(REPO / "tests").glob("*.py"), *(REPO / "tests" / "support").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            tops = [n.split(".")[0] for n in names]
            found = [n for n in tops if n == "conftest" or n.startswith("test_")]
            wrong += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in found]
    assert not wrong, "test modules imported (move what they share to tests/support/):\n" + "\n".join(wrong)


def module_imports() -> dict[str, set[str]]:
    """Each module of lib/iolab (dotted) -> the modules of lib/iolab it imports, at any depth in
    it (function-level imports too: an import made late to break a circle is still one)."""
    names = {}
    for path in modules():
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        names[dotted.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in names else module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of more than one module
    (Tarjan 1972), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the finder finds one
    found = circles(module_imports())
    assert not found, "modules that import each other (move what they share down a layer):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def notebook_imports(source: str) -> set[str]:
    """The iolab modules a notebook's code imports: ``from iolab.x import y`` is ``iolab.x.y``
    when y is a module, else ``iolab.x`` (a package imported counts once)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "iolab"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "iolab":
            for a in node.names:
                where = PACKAGE.joinpath(*node.module.split(".")[1:], a.name)
                is_module = where.with_suffix(".py").exists() or (where / "__init__.py").exists()
                found.add(f"{node.module}.{a.name}" if is_module else node.module)
    return found


def test_notebooks_come_in_through_the_front_door():
    """Each notebook imports at most four iolab modules (the front door ``iolab.nb`` and the
    studies, readings and plots it narrates), none of core/ or runs/ (the front door holds
    what they need), and names ``runs_dir`` on at most one line beyond its parameters cell
    (the studies make their own folder when given none)."""
    import nbformat

    too_many, too_deep, runs_dir_lines = {}, {}, {}
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = [c for c in nbformat.read(path, 4).cells if c.cell_type == "code"]
        code = "\n".join(
            "\n".join(ln for ln in c.source.splitlines() if not ln.lstrip().startswith(("%", "!"))) for c in cells
        )
        found = notebook_imports(code)
        if len(found) > 4:
            too_many[path.name] = sorted(found)
        if deep := sorted(m for m in found if m.split(".")[1:2] in (["core"], ["runs"])):
            too_deep[path.name] = deep
        lines = [
            ln
            for c in cells
            if "parameters" not in c.metadata.get("tags", [])
            for ln in c.source.splitlines()
            if re.search(r"\bruns_dir\b", ln)
        ]
        if len(lines) > 1:
            runs_dir_lines[path.name] = lines
    assert not too_many, f"more than four iolab modules: {too_many}"
    assert not too_deep, f"notebooks reaching into core/ or runs/: {too_deep}"
    assert not runs_dir_lines, f"runs_dir beyond the parameters cell on more than one line: {runs_dir_lines}"


def test_every_package_says_what_it_exports():
    """Issue P33: each package's ``__all__`` names its modules (and nothing that is not there),
    so a module added or removed is a change to the package's declared surface."""
    import importlib
    import pkgutil

    lib = REPO / "lib" / "iolab"
    for init in sorted(lib.glob("*/__init__.py")):
        package = importlib.import_module(f"iolab.{init.parent.name}")
        modules = {m.name for m in pkgutil.iter_modules([str(init.parent)]) if not m.name.startswith("_")}
        declared = set(package.__all__)
        assert modules <= declared, f"{init.parent.name}: __all__ lacks {sorted(modules - declared)}"
        missing = [n for n in declared if n not in modules and not hasattr(package, n)]
        assert not missing, f"{init.parent.name}: __all__ names {missing}, which it does not hold"
    assert "load_ipython_extension" in importlib.import_module("iolab").__all__
