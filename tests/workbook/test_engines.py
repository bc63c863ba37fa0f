"""Real spreadsheet engines recompute the TFOM workbook and agree with the Python model.

LibreOffice (headless, forced recalculation) computes every formula of the workbooks built from
the input sets of ``conftest.py`` (cohorts, demand, contracts and debt among them); the §7
outputs of the live scenario (``out_<name>``) and of each scenario (``out_<name>_base`` …) and
every monthly line in every month must equal :func:`operating_model.run` to a relative 1e-9, and
every formula cell must equal what :func:`workbook.cell_values` says it shows (batch stores
those). The workbooks are those ``batch`` writes, stored values included: LibreOffice computes
every formula again on load, as one workbook with a stored value wrong on purpose shows.
Gnumeric, the second engine, is ``tests/test_gnumeric.py``.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from tests.tools.cells import read_cells
from tests.tools.once import build_once
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.operating_model import (
    FROM_MONTH0,
    LINE_NAMES,
    OUTPUT_MISSING,
    OUTPUT_NAMES,
)
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import layout as wbl
from tokenfactory_xl.workbook import risk_values as workbook_risk
from tokenfactory_xl.workbook import values as wbv

from .conftest import INPUT_SETS, RISK_DRAWS, STALE, STALE_NAME, STALE_VALUE, excel_serial

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


def check_against_model(read, inputs) -> list[str]:
    """Mismatches between an engine's values (``read(sheet, coord)``) and operating_model.run."""
    result = run(inputs)
    bad = []
    for name in OUTPUT_NAMES:
        expected = result.summary[name]
        got = read("out", name)
        if not same(got, OUTPUT_MISSING[name] if expected is None else expected):
            bad.append(f"out_{name}: {got!r} != {expected!r}")
    horizon = int(inputs["horizon_months"])
    for line in LINE_NAMES:
        row = wbm.TIMELINE_ROWS[line]
        expected = result.lines[line]
        first = wbm.MONTH0_COL if line in FROM_MONTH0 else wbm.FIRST_MONTH_COL
        for i, col in enumerate(range(first, wbm.LAST_COL + 1)):
            coord = f"{wbl._col(col)}{row}"
            got = read("Timeline", coord)
            want = expected[i] if i < len(expected) else ""
            if not same(got, want):
                bad.append(f"{line} {coord}: {got!r} != {want!r}")
    assert len(result.lines["revenue"]) == horizon
    for sc in om.SCENARIOS:  # every scenario's outputs, side by side (methodology §4.5)
        for name in OUTPUT_NAMES:
            expected = result.scenarios[sc.name].summary[name]
            got = read("out", f"{name}_{sc.key}")
            if not same(got, OUTPUT_MISSING[name] if expected is None else expected):
                bad.append(f"out_{name}_{sc.key}: {got!r} != {expected!r}")
    return bad


def check_against_cell_values(read, inputs, formula_coords) -> list[str]:
    values = wbv.cell_values(wbm.plan(), inputs, figures=workbook_risk.compute(inputs, RISK_DRAWS))
    noise = wbv.irr_sheet_noise(values)
    bad = []
    for sheet, coords in formula_coords.items():
        for coord in coords:
            got, want = read(sheet, coord), values[sheet][coord]
            if sheet == "IRR" and isinstance(got, (int, float)) and isinstance(want, float):
                if abs(got - want) <= noise:
                    continue
            if not same(got, want):
                bad.append(f"{sheet}!{coord}: {got!r} != {want!r}")
    return bad


@pytest.fixture(scope="session")
def formula_coords(tmp_path_factory) -> dict[str, list[str]]:
    """Sheet → the coordinates of the builder's formula cells, found once per run."""
    def build(folder) -> dict[str, list[str]]:
        book = wbm.build_workbook(risk_draws=RISK_DRAWS)
        out: dict[str, list[str]] = {}
        for ws in book.worksheets:
            out[ws.title] = [c.coordinate for row in ws.iter_rows() for c in row
                             if c.data_type == "f"]
        return out
    return build_once(tmp_path_factory, "workbook-formula-coords", build)


# -- LibreOffice --------------------------------------------------------------------------------
def libreoffice_reader(path):
    cells = read_cells(path)  # read once for every test of this file

    def read(sheet, coord):
        if sheet == "out":
            return cells.named(f"out_{coord}")
        return cells.get(sheet, coord)
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
    first = wbm.COVER_FIRST
    assert read("Checks", "B4") == "OK" and read("Cover", f"B{first + 4}") == "OK"
    # the Cover's answer is the live scenario's NPV, IRR and payback as the engine computes them
    for row, output in enumerate(("npv", "irr", "payback_months"), start=first):
        assert read("Cover", f"B{row}") == read("out", output), output
    assert read("Cover", f"C{first}") == input_sets[name]["currency"]


def test_libreoffice_recalculates_instead_of_keeping_stored_values(recalculated, input_sets):
    """The workbooks store every formula's value; a stored value wrong on purpose must not
    survive: LibreOffice computes every formula again, those whose inputs did not change too."""
    got = read_cells(recalculated[STALE]).named(STALE_NAME)
    want = run(input_sets["template"]).summary[STALE_NAME.removeprefix("out_")]
    assert got != float(STALE_VALUE)
    assert math.isclose(got, want, rel_tol=RTOL)


def test_short_horizon_leaves_later_months_blank(recalculated, input_sets):
    read = libreoffice_reader(recalculated["downside_7_months"])
    row = wbm.TIMELINE_ROWS["revenue"]
    values = [read("Timeline", f"{c}{row}") for c in wbm.MONTH_COLS]
    assert all(isinstance(v, float) and v > 0 for v in values[:7])
    assert all(v in (None, "") for v in values[7:])
    total = read("Timeline", f"C{row}")
    assert math.isclose(total, float(np.sum(run(input_sets["downside_7_months"])
                                            .lines["revenue"])), rel_tol=RTOL)


def test_master_check_stays_ok_while_warnings_fire(recalculated):
    """§10.5: the default site's Base has two warnings (no demand limit, TFI headroom below 5
    points), its Downside five; the master check (integrity only) says OK in LibreOffice."""
    cells = read_cells(recalculated["template"])
    assert cells.named("check_master") == "OK"
    assert [cells.named(f"out_warnings_{sc.key}") for sc in om.SCENARIOS] == [2, 1, 5]


def test_a_loan_is_prepaid_when_its_gpus_are_sold(recalculated, input_sets):
    """§10.2 in LibreOffice: the Downside shuts down in month 24; its loan is prepaid then and no
    debt service is scheduled after it, so DSCR never divides by a payment after the sale."""
    read = libreoffice_reader(recalculated["v3_shutdown_prepaid_debt"])
    result = run(input_sets["v3_shutdown_prepaid_debt"]).scenarios["Downside"]
    prepaid = read("Timeline", f"{wbl._col(wbm.FIRST_MONTH_COL + 23)}"
                               f"{wbm.TIMELINE_ROWS['prepayment_downside']}")
    assert prepaid > 0 and math.isclose(prepaid, result.lines["prepayment"][23], rel_tol=RTOL)
    row = wbm.TIMELINE_ROWS["debt_service_downside"]
    after = [read("Timeline", f"{wbl._col(wbm.FIRST_MONTH_COL + m)}{row}") for m in range(24, 60)]
    assert all(v == 0 for v in after)


def test_leap_year_february_has_29_days(recalculated):
    read = libreoffice_reader(recalculated["leap_february_120"])
    first = wbm.MONTH_COLS[0]
    assert read("Timeline", f"{first}{wbm.TIMELINE_ROWS['hours']}") == 29 * 24
    end = read("Timeline", f"{first}{wbm.TIMELINE_ROWS['month_end']}")
    assert end.date() == dt.date(2028, 2, 29)


def test_statements_balance_in_libreoffice(recalculated, input_sets):
    """§10.4 in LibreOffice: with escalation, working capital, deposits paid ahead, a tax life of
    its own, debt and a Downside shutdown, each scenario's balance sheet balances to the cent in
    every calendar year, the cash-flow statement's four parts sum to 0, and the last year's
    balance sheet is all 0 (everything sold, repaid and released at H)."""
    cells = read_cells(recalculated["v3_financing_statements"])
    plan = wbm.plan()
    years = int(run(input_sets["v3_financing_statements"]).values["fiscal_years"])
    assert years == 5  # May 2027 … October 2031

    def row(key: str, sc) -> list[object]:
        placement = plan.lines[f"st_{key}_{sc.key}"]
        return [cells.get("Statements", c) for c in placement.coords]

    for sc in om.SCENARIOS:
        lines = {key: row(key, sc) for key in ("fixed_assets", "receivables", "debt", "payables",
                                               "equity", "operating", "investing", "financing",
                                               "equity_flow")}
        for y in range(years):
            assets = lines["fixed_assets"][y] + lines["receivables"][y]
            claims = lines["debt"][y] + lines["payables"][y] + lines["equity"][y]
            assert abs(assets - claims) < 0.005, (sc.name, y)
            parts = sum(lines[k][y] for k in ("operating", "investing", "financing",
                                              "equity_flow"))
            assert abs(parts) < 0.005, (sc.name, y)
        for key in ("fixed_assets", "receivables", "debt", "payables", "equity"):
            assert abs(lines[key][years - 1]) < 0.005, (sc.name, key)  # all 0 at H
            assert all(x in (None, "") for x in lines[key][years:])  # no year after H
        assert lines["receivables"][0] > 0 and lines["payables"][0] > 0
    assert cells.named("check_master") == "OK"
