"""The package's layers and the rule between them: a module imports only from its own
sub-package and from layers below it (``docs/architecture.md`` draws them).

:func:`import_graph` reads every module's imports from its source (``ast``: top-level, inside
functions and under ``TYPE_CHECKING`` alike, since a lazy import is still a dependency; or only
those a module runs as it is imported, ``top_level=True``); :func:`upward_imports` lists the
imports that break the layering and :func:`cycles` the circles among modules. Inside the
workbook, the modules that fill a drawn workbook with a site's values (:data:`FILLING`) stand
below those that draw it with openpyxl: :func:`drawing_imports` lists a filling module's import
of a drawing one, :func:`openpyxl_reached` the filling modules whose import loads openpyxl.
``tests/test_layers.py`` holds the package to each, and shows on a planted package that each
mistake is caught.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "tokenfactory_xl"

#: The layers, lowest first. A sub-package may import from its own modules and from any
#: sub-package of a lower layer; sub-packages of one layer are independent of each other.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"core"}),
    frozenset({"files", "engines"}),
    frozenset({"tfom"}),
    frozenset({"workbook", "sites"}),
    frozenset({"capacity", "addin"}),
    frozenset({"portfolio"}),
    frozenset({"cli"}),
)

#: The modules at the package's root and the layer each stands in: the package itself (its
#: public names come from the TFOM), ``python -m`` (the command line) and ``tokenfactory_xl.udfs``
#: (the add-in's import path that workbooks name).
ROOT_MODULES: dict[str, str] = {PACKAGE: "cli", f"{PACKAGE}.__main__": "cli",
                                f"{PACKAGE}.udfs": "addin"}

#: What any module may take from the package root: its version, a constant defined before the
#: root imports anything.
FROM_ROOT: frozenset[str] = frozenset({"__version__"})

#: What the core may import besides the standard library: the xlwings Lite bundle carries the
#: core, and Lite brings numpy and nothing else the core could use.
CORE_THIRD_PARTY: frozenset[str] = frozenset({"numpy"})


#: The workbook's facts and figures: its plan, what each cell shows, the stencil and the charts
#: that a site's values are written into. They import no openpyxl and no module that draws a
#: sheet, so a ``template`` or ``batch`` that finds the drawn workbook kept never loads it.
FILLING: frozenset[str] = frozenset({
    f"{PACKAGE}.workbook.{name}"
    for name in ("plan", "input_cells", "values", "risk_values", "stencil", "charts")})

#: The library that draws the workbook, which :data:`FILLING` does without.
DRAWING_LIBRARY = "openpyxl"


def _executed(tree: ast.Module) -> list[ast.AST]:
    """The nodes of a module that run as it is imported: all but the bodies of its functions."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _nodes(path: Path, top_level: bool) -> list[ast.AST]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return _executed(tree) if top_level else list(ast.walk(tree))


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def import_graph(root: Path, top_level: bool = False) -> dict[str, dict[str, set[str]]]:
    """``{module: {imported module: names imported from it}}`` for every module under ``root``
    (the package folder), package imports only, as absolute dotted names. A name imported
    from a package (``from ..core import specs``) counts as its submodule when one exists.
    ``top_level``: only the imports a module runs as it is imported (none inside a function)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        name, is_package = _module_name(root, path)
        modules[name] = (path, is_package)
    graph: dict[str, dict[str, set[str]]] = {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        edges: dict[str, set[str]] = {}
        for node in _nodes(path, top_level):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)]
                    target = ".".join(base + (node.module.split(".") if node.module else []))
                elif node.module and node.module.split(".")[0] == root.name:
                    target = node.module
                else:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        edges.setdefault(sub, set())
                    else:
                        edges.setdefault(target, set()).add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == root.name:
                        edges.setdefault(alias.name, set())
        edges.pop(name, None)
        graph[name] = edges
    return graph


def third_party(root: Path, module: str, top_level: bool = False) -> set[str]:
    """The top-level names of what ``module`` imports from outside the package and the
    standard library (``top_level``: only as it is imported, none inside a function)."""
    parts = module.split(".")[1:]
    path = root.joinpath(*parts).with_suffix(".py")
    if not path.exists():
        path = root.joinpath(*parts, "__init__.py")
    found = set()
    for node in _nodes(path, top_level):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__", root.name}


def layer_of(module: str, root_name: str = PACKAGE) -> tuple[int, str]:
    """The layer (its index in :data:`LAYERS`) and sub-package of ``module``."""
    if module in {m.replace(PACKAGE, root_name, 1) for m in ROOT_MODULES}:
        package = ROOT_MODULES[module.replace(root_name, PACKAGE, 1)]
    else:
        package = module.split(".")[1]
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index, package
    raise ValueError(f"{module}: {package} is in no layer; add it to LAYERS")


def upward_imports(graph: dict[str, dict[str, set[str]]], root_name: str = PACKAGE
                   ) -> list[str]:
    """Every import that goes up a layer or across to a sibling sub-package, as text."""
    broken = []
    for module, edges in sorted(graph.items()):
        level, package = layer_of(module, root_name)
        for target, names in sorted(edges.items()):
            if target == root_name:
                if names - FROM_ROOT and module.count(".") > 0 and \
                        module.replace(root_name, PACKAGE, 1) not in ROOT_MODULES:
                    broken.append(f"{module} imports {sorted(names - FROM_ROOT)} from the "
                                  f"package root (only {sorted(FROM_ROOT)} may be)")
                continue
            target_level, target_package = layer_of(target, root_name)
            if target_package == package:
                continue
            if target_level > level:
                broken.append(f"{module} ({package}, layer {level}) imports {target} "
                              f"({target_package}, layer {target_level}): up a layer")
            elif target_level == level:
                broken.append(f"{module} ({package}) imports {target} ({target_package}): "
                              f"across to a sibling of the same layer")
    return broken


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The circles among modules: each strongly connected component of more than one module
    (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def drawing_imports(graph: dict[str, dict[str, set[str]]], filling: frozenset[str] = FILLING,
                    root_name: str = PACKAGE) -> list[str]:
    """Every import, lazy ones included, by a module of ``filling`` of a workbook module that
    is not one of them (one that draws), as text."""
    workbook = f"{root_name}.workbook"
    return [f"{module} imports {target}, which draws the workbook"
            for module in sorted(filling) for target in sorted(graph.get(module, {}))
            if (target == workbook or target.startswith(workbook + "."))
            and target not in filling and target != workbook]


def openpyxl_reached(root: Path, filling: frozenset[str] = FILLING) -> dict[str, list[str]]:
    """For each module of ``filling`` whose import loads :data:`DRAWING_LIBRARY`, the chain of
    imports that does it (the module imports it itself, lazily or not, or a module it imports
    as it is imported does at its top)."""
    graph = import_graph(root, top_level=True)
    found: dict[str, list[str]] = {}
    for start in sorted(filling):
        if DRAWING_LIBRARY in third_party(root, start):
            found[start] = [start, DRAWING_LIBRARY]
            continue
        seen, todo = {start: [start]}, [start]
        while todo and start not in found:
            module = todo.pop(0)
            if DRAWING_LIBRARY in third_party(root, module, top_level=True):
                found[start] = [*seen[module], DRAWING_LIBRARY]
            parents = [".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 1)]
            for target in [*parents, *graph.get(module, {})]:  # a package runs its __init__
                if target in graph and target not in seen:
                    seen[target] = [*seen[module], target]
                    todo.append(target)
    return found
