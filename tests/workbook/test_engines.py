"""Real spreadsheet engines recompute the TFOM workbook and agree with the Python model.

LibreOffice (headless, forced recalculation) and the pure-Python ``formulas`` package each
compute every formula of the workbooks built from the input sets of ``conftest.py``; the §7
outputs (``out_<name>``), every monthly line in every month, and the NPV grid must equal
:func:`operating_model.run` to a relative 1e-9, and every
formula cell must equal what :func:`workbook.cell_values` says it shows (batch stores those).
"""

from __future__ import annotations

import datetime as dt
import functools
import math

import numpy as np
import openpyxl
import pytest

from tokenfactory_xl import operating_model as om
from tokenfactory_xl import workbook as wbm
from tokenfactory_xl.operating_model import FROM_MONTH0, LINE_NAMES, OUTPUT_NAMES, run

from .conftest import INPUT_SETS, excel_serial

RTOL = 1e-9
ATOL = 1e-6  # for quantities that are 0 in exact arithmetic (a few ulps of 10⁷ otherwise)


def same(got: object, expected: object) -> bool:
    """A cell's value against the model's: numbers to RTOL, texts exactly, blanks as ""."""
    if got is None:
        got = ""
    if isinstance(expected, float) and math.isnan(expected):
        expected = ""  # a line's blank (no payback crossing that month)
    if isinstance(expected, (dt.date, dt.datetime)):
        if isinstance(got, (dt.date, dt.datetime)):
            return got == expected
        return got == excel_serial(expected)
    if isinstance(expected, str) or isinstance(got, str):
        return got == expected
    return math.isclose(float(got), float(expected), rel_tol=RTOL, abs_tol=ATOL)


def output_cell(book, name: str):
    (sheet, ref), = book.defined_names[f"out_{name}"].destinations
    return book[sheet][ref.replace("$", "")]


def check_against_model(read, inputs) -> list[str]:
    """Mismatches between an engine's values (``read(sheet, coord)``) and operating_model.run."""
    result = run(inputs)
    bad = []
    for name in OUTPUT_NAMES:
        expected = result.summary[name]
        got = read("out", name)
        if not same(got, "none" if expected is None else expected):
            bad.append(f"out_{name}: {got!r} != {expected!r}")
    horizon = int(inputs["horizon_months"])
    for line in LINE_NAMES:
        row = wbm.TIMELINE_ROWS[line]
        expected = result.lines[line]
        first = wbm.MONTH0_COL if line in FROM_MONTH0 else wbm.FIRST_MONTH_COL
        for i, col in enumerate(range(first, wbm.LAST_COL + 1)):
            coord = f"{wbm._col(col)}{row}"
            got = read("Timeline", coord)
            want = expected[i] if i < len(expected) else ""
            if not same(got, want):
                bad.append(f"{line} {coord}: {got!r} != {want!r}")
    assert len(result.lines["revenue"]) == horizon
    grid = om.grid(result)
    assert grid.shape == (om.N_TEF, om.N_DECLINE)
    for i in range(om.N_TEF):
        for j in range(om.N_DECLINE):
            coord = f"{wbm._col(2 + j)}{wbm.SENS_GRID_TOP + 1 + i}"
            got = read("Sensitivity", coord)
            if not same(got, grid[i, j]):
                bad.append(f"NPV grid {coord}: {got!r} != {grid[i, j]!r}")
    return bad


def check_against_cell_values(read, inputs, formula_coords) -> list[str]:
    values = wbm.cell_values(inputs)
    bad = []
    for sheet, coords in formula_coords.items():
        for coord in coords:
            got, want = read(sheet, coord), values[sheet][coord]
            if not same(got, want):
                bad.append(f"{sheet}!{coord}: {got!r} != {want!r}")
    return bad


@pytest.fixture(scope="module")
def formula_coords() -> dict[str, list[str]]:
    book = wbm.build_workbook()
    out: dict[str, list[str]] = {}
    for ws in book.worksheets:
        out[ws.title] = [c.coordinate for row in ws.iter_rows() for c in row
                         if c.data_type == "f"]
    return out


# -- LibreOffice --------------------------------------------------------------------------------
def libreoffice_reader(path):
    book = openpyxl.load_workbook(path, data_only=True)

    def read(sheet, coord):
        if sheet == "out":
            return output_cell(book, coord).value
        return book[sheet][coord].value
    return read


@pytest.mark.parametrize("name", list(INPUT_SETS))
def test_libreoffice_matches_the_python_model(recalculated, input_sets, name):
    bad = check_against_model(libreoffice_reader(recalculated[name]), input_sets[name])
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


@pytest.mark.parametrize("name", list(INPUT_SETS))
def test_libreoffice_matches_cell_values(recalculated, input_sets, formula_coords, name):
    read = libreoffice_reader(recalculated[name])
    bad = check_against_cell_values(read, input_sets[name], formula_coords)
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
    assert read("Checks", "B4") == "OK" and read("Cover", "B7") == "OK"


def test_short_horizon_leaves_later_months_blank(recalculated, input_sets):
    read = libreoffice_reader(recalculated["downside_7_months"])
    row = wbm.TIMELINE_ROWS["revenue"]
    values = [read("Timeline", f"{c}{row}") for c in wbm.MONTH_COLS]
    assert all(isinstance(v, float) and v > 0 for v in values[:7])
    assert all(v in (None, "") for v in values[7:])
    total = read("Timeline", f"C{row}")
    assert math.isclose(total, float(np.sum(run(input_sets["downside_7_months"])
                                            .lines["revenue"])), rel_tol=RTOL)


def test_leap_year_february_has_29_days(recalculated):
    read = libreoffice_reader(recalculated["leap_february_120"])
    first = wbm.MONTH_COLS[0]
    assert read("Timeline", f"{first}{wbm.TIMELINE_ROWS['hours']}") == 29 * 24
    end = read("Timeline", f"{first}{wbm.TIMELINE_ROWS['month_end']}")
    assert end.date() == dt.date(2028, 2, 29)


# -- the formulas package -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def formulas_model(built):
    """The template compiled once by ``formulas`` (about a minute), reused for every input set."""
    formulas = pytest.importorskip("formulas")
    return formulas.ExcelModel().loads(str(built["template"])).finish()


@functools.lru_cache(maxsize=4)
def defined_names(path):
    return openpyxl.load_workbook(path).defined_names


def formulas_reader(model, path, inputs):
    """Recompute ``model`` with the input cells of ``inputs`` and read cells from it."""
    book = path.name
    values = wbm.cell_values(inputs)["Inputs"]
    new = {}
    for coord, value in values.items():
        if isinstance(value, dt.datetime):
            value = excel_serial(value)
        new[f"'[{book}]INPUTS'!{coord}"] = value
    solution = model.calculate(inputs=new)
    cells = {}
    for key, ranges in solution.items():
        sheet, _, ref = key.rpartition("!")
        if ":" in ref or not sheet:
            continue
        value = ranges.value[0][0] if hasattr(ranges, "value") else ranges
        cells[(sheet.split("]")[-1].strip("'"), ref)] = value
    book_names = defined_names(path)

    def read(sheet, coord):
        if sheet == "out":
            (sheet, ref), = book_names[f"out_{coord}"].destinations
            coord = ref.replace("$", "")
        value = cells.get((sheet.upper(), coord))
        if hasattr(value, "item"):
            value = value.item()
        if isinstance(value, bool):
            return int(value)
        if value is not None and not isinstance(value, (int, float, str)):
            return str(value)  # an Excel error value
        return value
    return read


@pytest.fixture(scope="module")
def formulas_values(formulas_model, built, input_sets):
    """Name → a reader of the template recomputed by ``formulas`` with that input set."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = formulas_reader(formulas_model, built["template"], input_sets[name])
        return cache[name]
    return get


# formulas takes ~15 s a recomputation: the template and the three sets that cover rented and
# owned, every scenario, a short horizon and a leap-year start (LibreOffice does all five).
FORMULAS_SETS = ["template", "rented_optimised", "downside_7_months", "leap_february_120"]


@pytest.mark.parametrize("name", FORMULAS_SETS)
def test_formulas_package_matches_the_python_model(formulas_values, input_sets, name):
    bad = check_against_model(formulas_values(name), input_sets[name])
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


@pytest.mark.parametrize("name", ["template", "downside_7_months", "rented_optimised"])
def test_formulas_package_matches_cell_values(formulas_values, input_sets, formula_coords,
                                               name):
    bad = check_against_cell_values(formulas_values(name), input_sets[name], formula_coords)
    assert not bad, f"{name}: {len(bad)} mismatches, e.g. {bad[:5]}"
