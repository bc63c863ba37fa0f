"""The LibreOffice bridge refuses what would give a wrong file, before starting LibreOffice."""

from __future__ import annotations

import pytest

from tokenfactory_xl.engines.libreoffice import recalculate


def test_two_files_of_one_name_are_refused_before_anything_is_written(tmp_path):
    # LibreOffice names each result after its file: the second Site.xlsx's result would replace
    # the first's, and a caller would read the wrong site's values under the first name.
    first, second = tmp_path / "a" / "Site.xlsx", tmp_path / "b" / "Site.xlsx"
    other = tmp_path / "a" / "Other.xlsx"
    for path in (first, second, other):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"not read")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"files named Site more than once.*rename them"):
        recalculate([first, other, second], out)
    assert not out.exists()
