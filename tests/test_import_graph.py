"""The package's own import graph has no circle and no import against the declared layer order
(``nasfilter.LAYERS``; docs/architecture.md, "arrows run one way").

The graph is read from the source with ``ast``, nothing is imported: every ``import`` and
``from ... import`` of a ``nasfilter`` module anywhere in a module counts, at the top, inside
functions and under ``if TYPE_CHECKING:`` alike, so a circle cannot hide behind a local or
type-only import.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from nasfilter import LAYERS

PACKAGE = Path(__file__).resolve().parents[1] / "nasfilter"


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """``name``, or its nearest enclosing module of the package ("" if none)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _targets(module: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``node`` (in ``module``) imports. ``from pkg import name``
    counts as the submodule ``pkg.name`` when there is one, else as ``pkg``."""
    if isinstance(node, ast.Import):
        found = {_resolve(alias.name, modules) for alias in node.names}
    else:
        if node.level:
            base = module.split(".")
            if modules[module].name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        found = {
            f"{stem}.{alias.name}"
            if f"{stem}.{alias.name}" in modules
            else _resolve(stem, modules)
            for alias in node.names
        }
    return {name for name in found if name and name != module}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source."""
    modules = module_files(package)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module] |= _targets(module, node, modules)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path ``[a, b, ..., a]``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """The import graph of the package itself, parsed once for the tests that read it."""
    return import_graph()


def test_the_package_imports_without_a_circle() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_graph_sees_local_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "nasfilter"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("X = 1\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nasfilter.b import Y\n"
    )
    (pkg / "b.py").write_text("def f():\n    from nasfilter import a\n    return a\nY = 2\n")
    (pkg / "c.py").write_text("import numpy\nfrom .sub.leaf import X\n")
    graph = import_graph(pkg)
    assert graph["nasfilter.a"] == {"nasfilter.b"}  # under TYPE_CHECKING
    assert graph["nasfilter.b"] == {"nasfilter.a"}  # inside a function
    assert graph["nasfilter.c"] == {"nasfilter.sub.leaf"}  # relative; numpy is not ours
    assert graph["nasfilter.sub"] == {"nasfilter.sub.leaf"}
    assert find_cycle(graph) == ["nasfilter.a", "nasfilter.b", "nasfilter.a"]


def layer_of(module: str, layers: tuple[str, ...] = LAYERS) -> int:
    """``module``'s rank in the declared order: 0 for a top-level leaf (``nasfilter.checks``),
    ``i + 1`` for a module of ``layers[i]``, above them all for the package's ``__init__`` and
    ``__main__`` (the entry points, loaded lazily)."""
    parts = module.split(".")
    if module in ("nasfilter", "nasfilter.__main__"):
        return len(layers) + 1
    if parts[1] in layers:
        return layers.index(parts[1]) + 1
    assert len(parts) == 2, f"{module}: a subpackage missing from nasfilter.LAYERS"
    return 0


def upward_imports(graph: dict[str, set[str]], layers: tuple[str, ...] = LAYERS) -> list[str]:
    """Every ``a -> b`` where ``b`` sits in a layer above ``a``'s, as text."""
    return [
        f"{a} ({_name(a, layers)}) -> {b} ({_name(b, layers)})"
        for a in sorted(graph)
        for b in sorted(graph[a])
        if layer_of(b, layers) > layer_of(a, layers)
    ]


def _name(module: str, layers: tuple[str, ...]) -> str:
    rank = layer_of(module, layers)
    return "leaf" if rank == 0 else layers[rank - 1] if rank <= len(layers) else "entry"


def test_every_subpackage_has_its_place_in_the_layer_order() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages == set(LAYERS)


# The top of nasfilter/ holds only generic leaves (and __init__, __main__); every
# other module sits in its layer's subpackage.
MAX_TOP_LEVEL_MODULES = 12


def test_the_top_of_the_package_holds_few_modules() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = upward_imports(package_graph())
    assert upward == [], "upward imports against nasfilter.LAYERS:\n" + "\n".join(upward)


def test_an_upward_import_is_found_and_named(tmp_path: Path) -> None:
    pkg = tmp_path / "nasfilter"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from nasfilter.high import up\n")  # entry: may
    (pkg / "leaf.py").write_text("X = 1\n")
    (pkg / "high" / "up.py").write_text("from nasfilter.low import down\nimport nasfilter.leaf\n")
    (pkg / "low" / "down.py").write_text("def f():\n    from nasfilter.high.up import g\n")
    found = upward_imports(import_graph(pkg), ("low", "high"))
    assert found == ["nasfilter.low.down (low) -> nasfilter.high.up (high)"]


_RUN, _STORAGE = "nasfilter.runs.", "nasfilter.runs.storage."


@pytest.mark.parametrize(
    ("leaf", "above"),
    [
        (_RUN + "records", {_RUN + "experiment", _RUN + "results", _STORAGE + "base"}),
        (_STORAGE + "base", {_RUN + "experiment", _RUN + "results", _RUN + "inputs"}),
        (_STORAGE + "sqlite_store", {_RUN + "experiment", _RUN + "results", _RUN + "inputs"}),
        (_RUN + "runner", {_RUN + "experiment", _RUN + "results", _STORAGE + "base"}),
    ],
)
def test_a_lower_layer_imports_nothing_above_it(leaf: str, above: set[str]) -> None:
    graph = package_graph()
    reach, todo = set(), [leaf]
    while todo:  # everything ``leaf`` imports, directly or not
        for nxt in graph[todo.pop()] - reach:
            reach.add(nxt)
            todo.append(nxt)
    assert not reach & above, f"{leaf} reaches {sorted(reach & above)}"


# docs/architecture.md: no module over 500 lines, no function over 60 (the structural step)
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 60


def test_no_module_or_function_over_its_length_limit() -> None:
    long_modules, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text("utf-8")
        name = str(path.relative_to(PACKAGE.parent))
        if text.count("\n") > MAX_MODULE_LINES:
            long_modules.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert long_modules == [] and long_functions == []


# docs/architecture.md, "Local imports": nasfilter's own modules are imported at the top of a
# module; the few left inside functions defer an optional heavy extra's backend (the oracle's
# torch/onnxruntime/TensorRT modules, the survey's timm) or break no circle but a slow start.
MAX_LOCAL_OWN_IMPORTS = 60


def _imports_own(node: ast.AST) -> bool:
    """Whether ``node`` imports a nasfilter module (absolutely or relatively)."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "nasfilter" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "nasfilter"
    return False


def local_own_imports(package: Path = PACKAGE) -> list[str]:
    """Every import of a nasfilter module inside a function, as ``path:line``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        nodes = {
            node
            for func in ast.walk(tree)
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(func)
            if _imports_own(node)
        }
        found += [f"{path.relative_to(package.parent)}:{n.lineno}" for n in nodes]
    return sorted(found)


def test_few_imports_of_the_package_hide_inside_functions(tmp_path: Path) -> None:
    pkg = tmp_path / "nasfilter"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "import json\nfrom nasfilter import b\n\ndef f():\n    import numpy\n"
        "    from nasfilter.b import X\n    def g():\n        from . import b\n"
    )
    assert local_own_imports(pkg) == ["nasfilter/a.py:6", "nasfilter/a.py:8"]
    found = local_own_imports()
    assert len(found) <= MAX_LOCAL_OWN_IMPORTS, "\n".join(found)
