"""The package's folders are its layers, and imports only go down (``docs/architecture.md``).

The import contract of ``tests/tools/layers.py`` read against the package's own source: no
module imports from a higher layer or from a sibling of its layer, no two modules import each
other round a circle, the library never imports the command line, the core (what the xlwings
Lite bundle carries) needs nothing but numpy, and the modules that fill a drawn workbook with a
site's values neither draw nor load openpyxl, which a warm ``template`` and ``batch`` then never
import. The last tests plant the mistakes in a small package of their own and show the contract
catches each of them.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.layers import (
    CORE_THIRD_PARTY,
    FILLING,
    LAYERS,
    cycles,
    drawing_imports,
    import_graph,
    layer_of,
    openpyxl_reached,
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


def test_the_modules_that_fill_a_workbook_never_import_one_that_draws(graph):
    assert FILLING <= set(graph)
    assert drawing_imports(graph) == []


def test_filling_a_workbook_loads_no_openpyxl():
    assert openpyxl_reached(PACKAGE) == {}


#: Run in a fresh process: a template, then a batch of two sites, with the drawn workbook kept;
#: prints whether openpyxl was loaded after the template, and when the batch began writing its
#: portfolio (the one part of a batch openpyxl draws, once per batch), after every site's.
_WARM_RUN = """
import sys
from tokenfactory_xl.cli.main import main
from tokenfactory_xl.portfolio import batch

seen = {}
write = batch.write_portfolio_to


def portfolio(*args, **kwargs):
    seen["sites"] = "openpyxl" in sys.modules
    return write(*args, **kwargs)


batch.write_portfolio_to = portfolio
assert main(["template", "-o", "t.xlsx"]) == 0
seen["template"] = "openpyxl" in sys.modules
assert main(["batch", "sites.csv", "-o", "out", "--risk-draws", "0", "--quiet"]) == 0
print(seen)
"""


def test_a_warm_template_and_a_batch_s_workbooks_import_no_openpyxl(tmp_path):
    from tokenfactory_xl.portfolio.batch import shared_factory

    shared_factory()  # the drawn workbook, kept in the run's build cache (tests/conftest.py)
    (tmp_path / "sites.csv").write_text("site_name,gpus\nLyon,512\nNantes,1024\n",
                                        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _WARM_RUN], cwd=tmp_path, env=env, check=True,
                          capture_output=True, text=True)
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == {"template": False,
                                                                      "sites": False}
    assert (tmp_path / "t.xlsx").stat().st_size > 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "Lyon.xlsx", "Nantes.xlsx", "portfolio.xlsx"]


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


def test_a_planted_filling_module_that_draws_or_loads_openpyxl_is_caught(tmp_path):
    package = _plant(tmp_path, {
        "workbook/plan.py": "",
        "workbook/values.py": "from . import plan\ndef fill():\n    from . import sheet\n",
        "workbook/sheet.py": "import openpyxl\n",
        "workbook/stencil.py": "def cut():\n    import openpyxl\n",  # lazily: still caught
        "workbook/charts.py": "from . import stencil\n",
        "workbook/risk_values.py": "from ..files import disk\n",
        "files/disk.py": "from ..workbook import sheet\n",  # up a layer, drawing on import
        "workbook/input_cells.py": "",
    })
    graph = import_graph(package)
    assert drawing_imports(graph) == [
        "tokenfactory_xl.workbook.values imports tokenfactory_xl.workbook.sheet, which draws "
        "the workbook"]
    assert openpyxl_reached(package) == {
        "tokenfactory_xl.workbook.risk_values": [
            "tokenfactory_xl.workbook.risk_values", "tokenfactory_xl.files.disk",
            "tokenfactory_xl.workbook.sheet", "openpyxl"],
        "tokenfactory_xl.workbook.stencil": ["tokenfactory_xl.workbook.stencil", "openpyxl"],
    }
