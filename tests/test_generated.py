"""The files the repository commits but nobody edits are what ``tools/regenerate.py`` builds.

``templates/TFOM.xlsx`` (values to 1e-12, the Cover's build date aside) and the xlwings Lite
bundle (byte for byte); when one is stale the test says the one command that rebuilds both. The
files are marked generated in ``.gitattributes``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import regenerate

ROOT = Path(__file__).resolve().parents[1]
STALE = "is stale: run `python tools/regenerate.py` and commit what it rewrites"


@pytest.fixture(scope="module")
def built_template(tmp_path_factory) -> bytes:
    """What ``tools/regenerate.py`` builds as the template, built once per run: read it."""
    from tests.tools.once import build_once

    return build_once(tmp_path_factory, "built-template",
                      lambda folder: regenerate.built_template())


def test_the_committed_template_is_what_the_command_builds(built_template):
    assert regenerate.stale_template(built_template) == [], f"templates/TFOM.xlsx {STALE}"


def test_the_committed_lite_bundle_is_what_the_command_builds():
    assert regenerate.stale_lite(regenerate.built_lite()) == [], \
        f"install/xlwings-lite/ {STALE}"


def test_a_stale_file_is_found_and_named(tmp_path, monkeypatch):
    built = regenerate.built_lite()
    for name, data in built.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.setattr(regenerate, "LITE", tmp_path)
    assert regenerate.stale_lite(built) == []
    (tmp_path / "main.py").write_bytes(built["main.py"] + b"# edited by hand\n")
    assert regenerate.stale_lite(built) == ["main.py"]


def test_a_missing_template_is_stale_and_one_built_another_day_is_not(built_template, tmp_path,
                                                                     monkeypatch):
    built = built_template
    monkeypatch.setattr(regenerate, "TEMPLATE", tmp_path / "TFOM.xlsx")
    assert regenerate.stale_template(built) == ["TFOM.xlsx is missing"]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")  # 2 January 1970: another Cover date
    (tmp_path / "TFOM.xlsx").write_bytes(regenerate.built_template())
    assert (tmp_path / "TFOM.xlsx").read_bytes() != built
    assert regenerate.stale_template(built) == []


def test_the_generated_files_are_marked_generated():
    marked = (ROOT / ".gitattributes").read_text(encoding="utf-8").splitlines()
    for path in ("templates/TFOM.xlsx", "install/xlwings-lite/main.py",
                 "install/xlwings-lite/requirements.txt"):
        assert f"{path} linguist-generated=true" in marked, path
    assert (ROOT / "install" / "xlwings-lite" / "main.py").read_text(
        encoding="utf-8").count("do not edit it by hand") == 1
