"""One version number everywhere, and the licence the package states."""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tokenfactory_xl import __version__

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later


def test_the_package_readme_workbook_and_lite_bundle_show_one_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # the package's metadata reads tokenfactory_xl.__version__ (no second copy to keep in step)
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "tokenfactory_xl.__version__"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^Version (\S+) \(version (\d+) of the Token Factory Operating Model\)",
                     readme, re.M).groups() == (__version__, __version__.split(".")[0])
    wb = openpyxl.load_workbook(ROOT / "templates" / "TFOM.xlsx", read_only=True)
    sheet, cell = next(wb.defined_names["tfom_version"].destinations)
    assert wb[sheet][cell.replace("$", "")].value == __version__
    lite = (ROOT / "install" / "xlwings-lite" / "main.py").read_text(encoding="utf-8")
    assert f'_VERSION = "{__version__}"' in lite
    assert command.run("--version").stdout == f"tokenfactory-xl {__version__}\n"


def test_the_licence_file_is_the_one_pyproject_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == {"text": "MIT"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text
