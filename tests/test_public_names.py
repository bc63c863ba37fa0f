"""One name, one thing: no two public classes, functions or constants of the package share a
name, except the functions a family of modules implements alike (an interface).

Two ``Input`` classes or two ``SCENARIOS`` make a reader ask which one a line means; an import
of the wrong one runs. A name re-exported (``X = other.X``, the same object) is one thing.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import TypeVar

import tokenfactory_xl

ROOT = Path(tokenfactory_xl.__file__).parent

#: Names a family of modules defines alike on purpose, and the family: each command module's
#: ``register``, each benchmark reader's ``looks_like``/``read``/``WHAT``, each engine's
#: ``recalculate``, and the questions both methods of a GPU's throughput answer (the
#: version-2 roofline and the bound and attainable figures of methodology §5.1).
INTERFACES: dict[str, str] = {
    "register": "tokenfactory_xl.cli.",
    "looks_like": "tokenfactory_xl.capacity.readers.",
    "read": "tokenfactory_xl.capacity.readers.",
    "WHAT": "tokenfactory_xl.capacity.readers.",
    "recalculate": "tokenfactory_xl.engines.",
    "decode_tps_per_gpu": "tokenfactory_xl.core.",
    "max_batch": "tokenfactory_xl.core.",
    "prefill_tps_per_gpu": "tokenfactory_xl.core.",
}


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(ROOT)], "tokenfactory_xl.")
                  if not m.name.endswith("__main__"))


def _source(module: str) -> Path:
    path = ROOT.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def public_definitions() -> dict[str, list[tuple[str, object]]]:
    """Every public name defined at the top of a module (not imported into it): name →
    [(module, object)]."""
    found: dict[str, list[tuple[str, object]]] = {}
    for module in _modules():
        if module == "tokenfactory_xl.udfs":
            continue  # the add-in's import path: the same module as tokenfactory_xl.addin.udfs
        loaded = importlib.import_module(module)
        tree = ast.parse(_source(module).read_text(encoding="utf-8"))
        names = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    elts = target.elts if isinstance(target, ast.Tuple) else [target]
                    names += [e.id for e in elts if isinstance(e, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.append(node.target.id)
        for name in names:
            if name.startswith("_") or name == "__all__":
                continue
            value = getattr(loaded, name)
            if isinstance(value, TypeVar):
                continue
            found.setdefault(name, []).append((module, value))
    return found


def clashes(found: dict[str, list[tuple[str, object]]]) -> dict[str, list[str]]:
    """The names that stand for two or more things, with the modules defining them."""
    out = {}
    for name, places in found.items():
        things = []
        for _, value in places:
            if any(value is other and not isinstance(value, (int, float, str, bytes))
                   for other in things):
                continue  # one object under one name in two modules: a re-export
            things.append(value)
        if len(things) < 2:
            continue
        family = INTERFACES.get(name)
        if family and all(m.startswith(family) for m, _ in places):
            continue
        out[name] = [m for m, _ in places]
    return out


def test_no_two_public_things_share_a_name():
    found = public_definitions()
    assert len(found) > 500  # the whole package was read
    assert clashes(found) == {}


def test_a_clash_is_found_and_a_re_export_is_not():
    shared = {"a": 1}
    assert clashes({"SCENARIOS": [("m.one", ("Base",)), ("m.two", [object()])],
                    "TABLE": [("m.one", shared), ("m.two", shared)],
                    "register": [("tokenfactory_xl.cli.a", len), ("tokenfactory_xl.cli.b", abs)],
                    "read": [("tokenfactory_xl.core.number_text", len),
                             ("tokenfactory_xl.capacity.readers.x", abs)]}) == {
        "SCENARIOS": ["m.one", "m.two"],
        "read": ["tokenfactory_xl.core.number_text", "tokenfactory_xl.capacity.readers.x"]}
