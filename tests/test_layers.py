"""The package's folders are its layers, and imports only go down (``docs/architecture.md``).

The import contract of ``tests/tools/layers.py`` read against the package's own source: no
module imports from a higher layer or from a sibling of its layer, no two modules import each
other round a circle, the library never imports the command line, and the core (what the xlwings
Lite bundle carries) needs nothing but numpy. The last tests plant the mistakes in a small
package of their own and show the contract catches each of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.layers import (
    CORE_THIRD_PARTY,
    LAYERS,
    cycles,
    import_graph,
    layer_of,
    third_party,
    upward_imports,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tokenfactory_xl"


@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def test_every_sub_package_is_in_one_layer():
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    placed = [package for layer in LAYERS for package in layer]
    assert sorted(placed) == sorted(set(placed)), "a sub-package in two layers"
    assert folders == set(placed), f"folders without a layer: {folders - set(placed)}; " \
                                   f"layers without a folder: {set(placed) - folders}"


def test_no_module_imports_from_a_higher_layer_or_a_sibling(graph):
    assert len(graph) > 60  # the whole package was read
    assert upward_imports(graph) == []


def test_no_modules_import_each_other_round_a_circle(graph):
    assert cycles(graph) == []


def test_the_library_never_imports_the_command_line(graph):
    library = [m for m in graph if not m.startswith("tokenfactory_xl.cli")
               and m not in ("tokenfactory_xl", "tokenfactory_xl.__main__")]
    assert [(m, t) for m in library for t in graph[m] if t.startswith("tokenfactory_xl.cli")] == []


def test_the_core_needs_only_numpy(graph):
    core = [m for m in graph if layer_of(m)[1] == "core"]
    assert len(core) >= 9
    assert {m: third_party(PACKAGE, m) - CORE_THIRD_PARTY for m in core} == {m: set() for m in core}


# -- the contract catches what it should: a planted package ---------------------------------------
def _plant(root: Path, files: dict[str, str]) -> Path:
    package = root / "tokenfactory_xl"
    for folder in ("", "core", "tfom", "files", "workbook", "sites", "cli"):
        (package / folder).mkdir(parents=True, exist_ok=True)
        (package / folder / "__init__.py").write_text('__version__ = "0"\n' if not folder else "")
    for name, text in files.items():
        (package / name).write_text(text)
    return package


def test_a_planted_upward_import_is_caught(tmp_path):
    package = _plant(tmp_path, {
        "core/numbers.py": "from ..cli import main\n",           # up: core → cli
        "cli/main.py": "from ..core import numbers\n",            # down: allowed
        "workbook/sheet.py": "def fill():\n    from ..sites.rows import read\n",  # across, lazily
        "sites/rows.py": "from .. import __version__\ndef read(): pass\n",  # the version: allowed
        "tfom/model.py": "from ..files import disk\n",           # down: allowed
        "files/disk.py": "",
    })
    broken = upward_imports(import_graph(package))
    assert broken == [
        "tokenfactory_xl.core.numbers (core, layer 0) imports tokenfactory_xl.cli.main "
        "(cli, layer 6): up a layer",
        "tokenfactory_xl.workbook.sheet (workbook) imports tokenfactory_xl.sites.rows (sites): "
        "across to a sibling of the same layer",
    ]


def test_a_planted_import_of_the_package_root_is_caught(tmp_path):
    package = _plant(tmp_path, {"tfom/model.py": "from tokenfactory_xl import run\n"})
    assert upward_imports(import_graph(package)) == [
        "tokenfactory_xl.tfom.model imports ['run'] from the package root (only "
        "['__version__'] may be)"]


def test_a_planted_circle_is_caught(tmp_path):
    package = _plant(tmp_path, {"core/a.py": "from . import b\n",
                                "core/b.py": "def f():\n    from .a import g\n"})
    graph = import_graph(package)
    assert upward_imports(graph) == []
    assert cycles(graph) == [["tokenfactory_xl.core.a", "tokenfactory_xl.core.b"]]


def test_a_planted_third_party_import_in_the_core_is_caught(tmp_path):
    package = _plant(tmp_path, {"core/a.py": "import numpy\nimport openpyxl.cell\nimport json\n"})
    assert third_party(package, "tokenfactory_xl.core.a") - CORE_THIRD_PARTY == {"openpyxl"}
