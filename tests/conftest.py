"""Shared fixtures of the test suite."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

from tokenfactory_xl.engines.libreoffice import find_soffice
from tokenfactory_xl.files.build_cache import ENV as CACHE_ENV

_CACHE_OWNER = "TOKENFACTORY_XL_TEST_CACHE_OWNER"

#: The cyclic garbage collector's thresholds in the test processes (Python's are 700, 10, 10).
#: A test that loads or saves a whole workbook with openpyxl makes some half a million objects
#: that live until it ends (cells, styles, XML elements); with a young-generation collection
#: every 700 allocations, each walking every young object, the collector took a fifth of the
#: collect and audit tests' CPU. Run some fourteen times less often, it frees the same garbage a
#: little later (a test process holds some 100 MB more at its peak). A Python a test starts as
#: a process of its own keeps Python's thresholds; what each test checks is the same.
GC_THRESHOLDS = (10_000, 10, 10)
gc.set_threshold(*GC_THRESHOLDS)

#: The ``engines`` marker, given from what each test uses (tests/tools/engines.py).
pytest_plugins = ["tests.tools.engines"]

#: The property tests draw the same examples in every run of the same code ("repeatable", the
#: default: a run passes or fails whatever the day, the machine or the tests' order), or new
#: ones each run ("explore": ``python -m pytest --hypothesis-profile=explore``, with
#: ``--hypothesis-seed=N`` to repeat one), which is how a rounding or layout case no fixed set
#: holds gets found; each one found is kept as an ``@example`` of its test.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


def pytest_configure(config: pytest.Config) -> None:
    """One empty build cache for the whole run (workers and the command lines they start
    inherit it): the first build of each kind is kept there, the others read it back, and the
    user's own cache is neither read nor written.

    The commands the tests run print as into a pipe: pytest-xdist starts its workers with
    ``COLUMNS=80``, which would narrow every table on workers only. A test of the terminal's
    width sets ``COLUMNS`` itself."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    if os.environ.get(_CACHE_OWNER) is None:
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="tokenfactory-xl-cache-")
        os.environ[_CACHE_OWNER] = str(os.getpid())


def pytest_unconfigure(config: pytest.Config) -> None:
    if os.environ.get(_CACHE_OWNER) == str(os.getpid()):
        shutil.rmtree(os.environ[CACHE_ENV], ignore_errors=True)


@pytest.fixture(scope="session")
def soffice() -> str:
    """LibreOffice's soffice; a missing one skips locally and fails under CI=true."""
    path = find_soffice()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("LibreOffice is required under CI=true (apt-get install "
                        "libreoffice-calc-nogui)")
        pytest.skip("LibreOffice is not installed")
    return path


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """Alpha, Beta and Gamma's workbooks (tests/collect_support.py), written by the real batch
    once for the collect tests: site name → path. Read or copy them, never change them."""
    from tests.collect_support import generate
    from tests.tools.once import build_once

    return build_once(tmp_path_factory, "generated", generate)


@pytest.fixture(scope="session")
def formula_tokens(tmp_path_factory):
    """``formula_tokens(text)``: openpyxl's Tokenizer's tokens of a formula as (type, subtype,
    value), those of the committed template's formulas made once per run
    (tests/tools/formula_tokens.py)."""
    from tests.tools.formula_tokens import FormulaTokens, tokenized_template
    from tests.tools.once import build_once

    return FormulaTokens(build_once(tmp_path_factory, "formula-tokens", tokenized_template))


#: Fixtures that take seconds to make: a fresh virtual environment with numpy and xlwings
#: installed, a batch run, LibreOffice or Gnumeric recalculating every workbook. Each is made
#: once per run whatever the workers (``tests/tools/once.py``); where xdist honours
#: ``--dist loadgroup``, their tests also run on one worker, which then spares the others the
#: wait.
COSTLY_FIXTURES = ("lite_python", "workbooks", "recalculated", "recalculated_risk", "generated")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for name in COSTLY_FIXTURES:
            if info is not None and name in info.name2fixturedefs:
                where = info.name2fixturedefs[name][-1].baseid  # the module defining it
                item.add_marker(pytest.mark.xdist_group(f"{name}@{where}"))
                break
