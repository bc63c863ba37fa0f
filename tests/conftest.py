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
