"""Every function the workbooks use is one that every engine has (methodology section 9).

``tests/data/portable_functions.txt`` lists the functions that Excel, LibreOffice, Google Sheets
and Apple Numbers all implement under one name. Every formula of the committed template and of a
batch-generated workbook (cells, defined names, conditional formats, data validations) is
scanned, and a function outside the list is reported with how often it is used and where.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from tests.tools import command
from tests.tools.formula_tokens import Token, tokenize
from tests.tools.once import build_once

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_FILE = ROOT / "tests" / "data" / "portable_functions.txt"


def allowed() -> set[str]:
    names = set()
    for line in ALLOWED_FILE.read_text(encoding="utf-8").splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name.upper())
    return names


def functions_in(formula: str, tokens: Callable[[str], Sequence[Token]] = tokenize) -> list[str]:
    """The functions a formula calls, upper case, without the ``_xlfn.``/``_xlws.`` prefixes
    (``tokens``: openpyxl's Tokenizer, or what it gave for the formula before)."""
    text = formula if formula.startswith("=") else "=" + formula
    found = []
    for kind, subtype, value in tokens(text):
        if kind == "FUNC" and subtype == "OPEN":
            name = value[:-1].upper()
            for prefix in ("_XLFN.", "_XLWS."):
                name = name.removeprefix(prefix)
            found.append(name)
    return found


def formulas(path: Path) -> list[tuple[str, str]]:
    """Every formula of a workbook: (where, formula text)."""
    book = openpyxl.load_workbook(path)
    found = []
    for ws in book.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                value = cell.value
                if isinstance(value, ArrayFormula):
                    value = value.text
                if isinstance(value, str) and value.startswith("="):
                    found.append((f"{ws.title}!{cell.coordinate}", value))
        for ranges, rules in ws.conditional_formatting._cf_rules.items():
            for rule in rules:
                for text in rule.formula or []:
                    found.append((f"{ws.title} conditional format {ranges.sqref}", text))
        for validation in ws.data_validations.dataValidation:
            for text in (validation.formula1, validation.formula2):
                if text:
                    found.append((f"{ws.title} validation {validation.sqref}", str(text)))
    for name, defined in book.defined_names.items():
        if defined.attr_text:
            found.append((f"name {name}", defined.attr_text))
    return found


@pytest.fixture(scope="module")
def batch_workbook(tmp_path_factory) -> Path:
    """A rented site's workbook, written by the batch once per test run."""
    def build(folder: Path) -> Path:
        sites = folder / "sites.csv"
        sites.write_text("site_name,gpus,measured_tps,ownership,scenario,horizon_months\n"
                         "Rented,256,700000,rent,Optimised,30\n", encoding="utf-8")
        proc = command.run("batch", str(sites), "-o", str(folder / "out"), "--quiet", cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        return folder / "out" / "Rented.xlsx"

    return build_once(tmp_path_factory, "portable", build)


def test_the_allow_list_is_sane():
    names = allowed()
    assert {"IF", "SUM", "NORMSDIST", "NORMSINV", "EOMONTH", "SUMPRODUCT"} <= names
    assert not {"NORM.S.DIST", "NORM.S.INV", "N", "OFFSET", "INDIRECT", "TODAY"} & names
    assert functions_in('=IFERROR(_xlfn.NORM.S.INV(0.99),"none")+sum(A1:A3)') == \
        ["IFERROR", "NORM.S.INV", "SUM"]


@pytest.mark.parametrize("which", ["template", "batch workbook"])
def test_every_function_is_in_every_engine(which, batch_workbook, formula_tokens):
    path = ROOT / "templates" / "TFOM.xlsx" if which == "template" else batch_workbook
    found = formulas(path)
    assert len(found) > 1000, "the workbook's formulas were not found"
    permitted = allowed()
    uses: Counter[str] = Counter()
    first: dict[str, str] = {}
    for where, text in found:
        for name in functions_in(text, formula_tokens):
            uses[name] += 1
            first.setdefault(name, f"{where}: {text[:120]}")
    outside = sorted(set(uses) - permitted)
    assert not outside, (
        f"{len(outside)} function(s) of the {which} are not in every engine's list "
        f"(tests/data/portable_functions.txt):\n  "
        + "\n  ".join(f"{name}: {uses[name]} use(s), first {first[name]}" for name in outside))
