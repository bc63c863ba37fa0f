"""The xlwings Lite files expose exactly the functions desktop Excel gets, from the same module."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

from tokenfactory_xl import udfs

ROOT = Path(__file__).resolve().parents[1]
LITE = ROOT / "install" / "xlwings-lite"


def load_main():
    spec = importlib.util.spec_from_file_location("lite_main", LITE / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_main_exposes_the_same_functions_and_signatures():
    main = load_main()
    public = {name for name in vars(main) if not name.startswith("_")}
    assert public == set(udfs.__all__)
    for name in udfs.__all__:
        assert getattr(main, name) is getattr(udfs, name)
        assert inspect.signature(getattr(main, name)) == inspect.signature(getattr(udfs, name))


def test_requirements_name_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = re.search(r'^name = "([^"]+)"', pyproject, re.M)[1]
    lines = [line.strip() for line in (LITE / "requirements.txt").read_text().splitlines()]
    requirements = [re.split(r"[<>=!~ ]", line)[0] for line in lines if line]
    assert requirements == [project]
