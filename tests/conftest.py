"""Shared fixtures of the test suite."""

from __future__ import annotations

import os

import pytest

from tokenfactory_xl.libreoffice import find_soffice


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


#: Fixtures that take seconds to make, once per session or module: a fresh virtual environment
#: with numpy and xlwings installed, a batch run, LibreOffice or Gnumeric recalculating every
#: workbook. The tests that use one run on one worker (``--dist loadgroup``), so it is made
#: once, not once on each worker.
COSTLY_FIXTURES = ("lite_python", "workbooks", "recalculated", "generated")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for name in COSTLY_FIXTURES:
            if info is not None and name in info.name2fixturedefs:
                where = info.name2fixturedefs[name][-1].baseid  # the module defining it
                item.add_marker(pytest.mark.xdist_group(f"{name}@{where}"))
                break
