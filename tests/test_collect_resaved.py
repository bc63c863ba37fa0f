"""A workbook re-saved, untouched, by another spreadsheet program is not reported as edited."""

from __future__ import annotations

import pytest

from tests.collect_support import copy
from tokenfactory_xl.engines import gnumeric
from tokenfactory_xl.portfolio.audit import audit_workbook, normalise_formula


@pytest.mark.parametrize(("saved", "template"), [
    ("LN(a/b)/_xlfn.NORM.S.INV(k)", "LN(a/b)/NORMSINV(k)"),
    ("_xlfn.NORM.INV(p,m,s)", "NORMINV(p,m,s)"),
    ("_xlfn.LOGNORM.INV(p,m,s)", "LOGINV(p,m,s)"),
    ("_xlfn.STDEV.S(A1:A9)", "STDEV(A1:A9)"),
])
def test_a_functions_newer_name_is_the_same_function(saved, template):
    assert normalise_formula(saved) == normalise_formula(template)


@pytest.mark.parametrize(("saved", "template"), [
    ("_xlfn.NORM.S.DIST(k,TRUE)", "NORMSINV(k)"),          # another function
    ("LOGNORM.INV(p,m,s)", "NORMINV(p,m,s)"),
    ("\"NORM.S.INV(\"&A1", "\"NORMSINV(\"&A1"),             # text is compared as it is
])
def test_other_functions_and_text_are_still_edits(saved, template):
    assert normalise_formula(saved) != normalise_formula(template)


def test_a_workbook_resaved_by_gnumeric_is_not_edited(generated, tmp_path):
    if gnumeric.find_ssconvert() is None:
        pytest.skip("Gnumeric is not installed")
    source = copy(generated["Alpha"], tmp_path / "in")
    (resaved,) = gnumeric.recalculate([source], tmp_path / "out")
    audit = audit_workbook(resaved)
    assert audit.included
    edited = [f for f in audit.findings if f.code.startswith("formula")]
    assert edited == [], [f.message for f in edited]


# -- Strict Open XML ------------------------------------------------------------------------------
_STRICT = [(b"http://schemas.openxmlformats.org/spreadsheetml/2006/main",
            b"http://purl.oclc.org/ooxml/spreadsheetml/main"),
           (b"http://schemas.openxmlformats.org/officeDocument/2006/relationships",
            b"http://purl.oclc.org/ooxml/officeDocument/relationships")]


def as_strict(source, target):
    """``source`` with the namespaces Excel writes in a Strict Open XML Spreadsheet."""
    import zipfile

    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w",
                                                         zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if not info.filename.startswith("[Content_Types]"):
                for old, new in _STRICT:
                    data = data.replace(old, new)
            dst.writestr(info, data)
    return target


def test_strict_open_xml_is_refused_saying_so_everywhere(generated, tmp_path):
    import openpyxl

    from tests.tools import command

    workbook = as_strict(generated["Alpha"], tmp_path / "Alpha.xlsx")
    audit = audit_workbook(workbook)
    assert audit.refused
    assert "saved as Strict Open XML" in audit.findings[0].message
    assert 'not "Strict Open XML Spreadsheet"' in audit.findings[0].message
    wb = openpyxl.Workbook()
    wb.active.append(["site_name", "gpus"])
    wb.active.append(["A", 1024])
    wb.save(tmp_path / "plain.xlsx")
    sites = as_strict(tmp_path / "plain.xlsx", tmp_path / "sites.xlsx")
    proc = command.run("batch", sites, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert "sites.xlsx: is saved as Strict Open XML" in proc.stderr
    assert "the sheets are" not in proc.stderr and "Warning" not in proc.stderr
