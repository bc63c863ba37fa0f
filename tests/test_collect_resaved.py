"""A workbook re-saved, untouched, by another spreadsheet program is not reported as edited."""

from __future__ import annotations

import pytest

from tests.collect_support import copy
from tokenfactory_xl import gnumeric
from tokenfactory_xl.audit import audit_workbook, normalise_formula


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
