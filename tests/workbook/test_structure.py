"""The TFOM workbook's structure: names, inputs, validation, protection, formulas, bytes."""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from pathlib import Path

import pytest
from openpyxl.formula.tokenizer import Token
from openpyxl.formula.translate import Translator
from openpyxl.utils import get_column_letter

from tokenfactory_xl import __version__
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.core.catalogue import COHORT_SPECS, INPUTS, SCENARIO_NAMES
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.inputs import default_inputs, make_inputs
from tokenfactory_xl.tfom.operating_model import OUTPUT_NAMES
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import risk_values as workbook_risk
from tokenfactory_xl.workbook import values as wbv
from tools.regenerate import xlsx_differences

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "TFOM.xlsx"

#: Numbers a formula may contain: 0 and 1. Every other number is a named constant (k_…), so a
#: reviewer reading a formula sees names (FAST: no numbers hidden in formulas).
ALLOWED_NUMBERS = {0.0, 1.0}
#: Functions Excel, LibreOffice, Google Sheets and Apple Numbers all compute (the compatibility
#: names NORMSDIST/NORMSINV, not NORM.S.DIST/NORM.S.INV, which some engines lack; no N()).
ALLOWED_FUNCTIONS = {
    "ABS", "AND", "AVERAGE", "CHOOSE", "COLUMNS", "COUNT", "COUNTA", "COUNTIF", "DAY",
    "EOMONTH", "IF", "IFERROR", "INDEX", "INT", "ISNUMBER", "ISTEXT", "LEN", "LN", "MATCH",
    "MAX", "MIN", "NORMSDIST", "NORMSINV", "NOT", "OR", "ROUND", "ROUNDUP", "ROWS", "SIGN",
    "SUM", "SUMIF", "SUMPRODUCT", "TEXT", "YEAR",
}


@pytest.fixture(scope="module")
def book():
    return wbm.build_workbook()


def formula_cells(book):
    for ws in book.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith("=") \
                        and cell.data_type == "f":
                    yield ws, cell


def destination(book, name):
    (sheet, ref), = book.defined_names[name].destinations
    return book[sheet][ref.replace("$", "")]


def test_sheets_in_order(book):
    # the answer first (Cover, Dashboard), then the workings in the order the model runs
    assert book.sheetnames == list(wbm.SHEETS) == [
        "Cover", "Dashboard", "Inputs", "Capacity", "Timeline", "Years", "Statements",
        "Returns", "Scenarios", "IRR", "Sensitivity", "Risk", "Actuals", "Checks"]
    assert book.active.title == "Cover"


def test_the_cover_shows_the_answer_by_formula(book):
    ws = book["Cover"]
    rows = {ws.cell(r, 1).value: r for r in range(1, 30)}
    assert ws.cell(wbm.COVER_FIRST - 1, 1).value == "The answer (live scenario)"
    expected = {"NPV": ("=out_npv", "=in_currency"), "IRR": ("=out_irr", "per year"),
                "Payback": ("=out_payback_months", "months"),
                "Discount rate": ("=in_discount_rate", "per year"),
                "Master check": ("=check_master", None)}
    for label, (formula, unit) in expected.items():
        r = rows[label]
        assert wbm.COVER_FIRST <= r < wbm.COVER_FIRST + len(expected), label
        assert ws[f"B{r}"].value == formula and ws[f"C{r}"].value == unit, label
        assert ws[f"D{r}"].value, f"{label}: what it rests on"
    assert ws[f"B{rows['NPV']}"].number_format == "#,##0;[Red]-#,##0"
    assert ws[f"B{rows['IRR']}"].number_format.startswith("0.0%")


def test_the_fleet_block_holds_seven_cohorts_of_named_input_cells(book):
    for spec in COHORT_SPECS:
        (row,) = destination(book, f"in_fleet_{spec.name}")
        assert len(row) == 7, spec.name
        for cell in row:
            assert cell.parent.title == "Inputs" and cell.protection.locked is False
            assert cell.value is None  # a blank cohort column by default


def test_every_input_is_a_named_validated_unlocked_input_cell(book):
    ws = book["Inputs"]
    validations = ws.data_validations.dataValidation
    for spec in INPUTS:
        cells = destination(book, f"in_{spec.name}")
        cells = [c for row in cells for c in row] if isinstance(cells, tuple) else [cells]
        assert len(cells) == (len(SCENARIO_NAMES) if spec.per_scenario else 1), spec.name
        for cell in cells:
            assert cell.parent.title == "Inputs"
            assert cell.protection.locked is False, spec.name
            assert cell.font.color.rgb.endswith("0000FF"), spec.name
            assert cell.fill.fgColor.rgb.endswith("FFF2CC"), spec.name
            assert not (isinstance(cell.value, str) and cell.value.startswith("=")), spec.name
            mine = [dv for dv in validations if cell.coordinate in dv.sqref]
            assert len(mine) == 1, spec.name
            dv = mine[0]
            assert dv.showInputMessage and dv.showErrorMessage and dv.error and dv.prompt
            assert spec.allowed in dv.prompt, spec.name
            expected = {"choice": "list", "date": "date", "text": "textLength",
                        "currency": "textLength", "integer": "whole"}.get(spec.kind, "decimal")
            assert dv.type == expected, spec.name
            if dv.type == "list":
                assert not dv.formula1.startswith('"'), "lists point at a range"
                assert len(dv.formula1) < 255
            if spec.kind in ("number", "fraction", "integer") and spec.high is not None:
                assert float(dv.formula1) == spec.low and float(dv.formula2) == spec.high


def test_scenario_selector_lists_the_scenarios(book):
    ws = book["Inputs"]
    ref = book.defined_names["list_scenario"].attr_text.split("!")[1].replace("$", "")
    assert tuple(c.value for row in ws[ref] for c in row) == SCENARIO_NAMES


def test_input_cells_hold_the_inputs(book):
    site = make_inputs({"gpus": 77, "measured_tps": 200_000, "ownership": "rent",
                        "tef_target.Downside": 0.45,
                        "start_date": "2029-03-01", "site_name": "=1+1 not a formula"})
    other = wbm.build_workbook(site, risk_draws=0)  # the Risk sheet's figures play no part
    assert destination(other, "in_gpus").value == 77
    assert destination(other, "in_ownership").value == "rent"
    row = destination(other, "in_tef_target")
    assert [c.value for c in row[0]] == [0.3, 0.65, 0.45]
    assert destination(other, "in_start_date").value.date().isoformat() == "2029-03-01"
    name = destination(other, "in_site_name")
    assert name.value == "=1+1 not a formula" and name.data_type == "s"


def test_only_inputs_are_unlocked(book):
    inputs = {c.coordinate for ws, c in (
        (None, destination(book, f"in_{s.name}")) for s in INPUTS if not s.per_scenario)}
    for ws in book.worksheets:
        assert ws.protection.sheet is True and not ws.protection.password, ws.title
        for row in ws.iter_rows():
            for cell in row:
                if cell.protection.locked is False:
                    assert ws.title == "Inputs", cell.coordinate
                    assert cell.font.color.rgb.endswith("0000FF")
    assert inputs


def test_formula_cells_locked_and_free_of_hidden_numbers(book, formula_tokens):
    count = 0
    for ws, cell in formula_cells(book):
        count += 1
        assert cell.protection.locked is True, f"{ws.title}!{cell.coordinate}"
        for kind, subtype, value in formula_tokens(cell.value):  # openpyxl's Tokenizer's
            where = f"{ws.title}!{cell.coordinate}: {cell.value[:80]}"
            if kind == Token.OPERAND and subtype == Token.NUMBER:
                assert float(value) in ALLOWED_NUMBERS, where
            if kind == Token.FUNC and subtype == Token.OPEN:
                assert value[:-1].upper() in ALLOWED_FUNCTIONS, where
            if kind == Token.OPERAND and subtype == Token.RANGE:
                assert "[" not in value, "no external links: " + where
    assert count > 5_000  # 120 months × the Timeline and Sensitivity rows, and the rest


def test_every_output_is_named_on_returns(book):
    for name in OUTPUT_NAMES:
        cell = destination(book, f"out_{name}")
        assert cell.parent.title == "Returns"
        assert cell.value.startswith("=")
    assert "economic_life_months" in OUTPUT_NAMES


def test_constants_are_named_and_not_inputs(book):
    for constant in om.CONSTANTS:
        value = constant.value
        cells = destination(book, f"k_{constant.name}")
        cells = [c for row in cells for c in row] if isinstance(cells, tuple) else [cells]
        assert [c.value for c in cells] == list(value if isinstance(value, tuple) else [value])
        for cell in cells:
            assert cell.parent.title == "Capacity"
            assert cell.protection.locked is True
            assert cell.font.color.rgb.endswith("7030A0")
    assert destination(book, "k_hours_per_year").value == 8760


def test_version_on_cover(book):
    cell = destination(book, "tfom_version")
    assert cell.parent.title == "Cover" and cell.value == __version__


def test_defined_names_are_valid_excel_names(book):
    for name in book.defined_names:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name), name
        assert not re.fullmatch(r"[A-Za-z]{1,3}\d+", name), name


def test_timeline_has_every_month_column_and_month_ends(book):
    ws = book["Timeline"]
    assert wbm.MAX_MONTHS == 120  # methodology §6: horizons of 1–120 months
    row = wbm.TIMELINE_ROWS["month_end"]
    assert ws.cell(row, wbm.MONTH0_COL + 120).value.startswith("=EOMONTH(")
    assert ws.cell(row, wbm.MONTH0_COL + 121).value is None
    # one formula per row: every month's formula is the first month's, copied across (the
    # first month's formula read once, moved to each month's cell as a copy moves it)
    for key in wbm.TIMELINE_ROWS:
        r = wbm.TIMELINE_ROWS[key]
        first = ws.cell(r, wbm.FIRST_MONTH_COL)
        copied = Translator(first.value, origin=first.coordinate)
        for c in range(wbm.FIRST_MONTH_COL + 1, wbm.LAST_COL + 1):
            cell = ws.cell(r, c)
            assert copied.translate_formula(cell.coordinate) == cell.value, (key, cell.coordinate)


def test_same_inputs_same_bytes(tmp_path):
    a, b = tmp_path / "a.xlsx", tmp_path / "b.xlsx"
    wbm.save_workbook(wbm.build_workbook(risk_draws=300), a)  # the draws' seed is fixed too
    wbm.save_workbook(wbm.build_workbook(risk_draws=300), b)
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as z:
        core = z.read("docProps/core.xml").decode()
        assert "2026-01-01T00:00:00Z" in core and "tokenfactory_xl" in core
        assert not any(n.endswith(".bin") or "vba" in n.lower() for n in z.namelist())
        assert not any("externalLink" in n for n in z.namelist())


def test_a_template_is_the_same_bytes_with_or_without_isal(monkeypatch):
    # the committed template must not depend on whether ISA-L's wheel is installed
    from tokenfactory_xl.workbook import stencil

    with_isal = template_bytes(default_inputs(), risk_draws=300)
    monkeypatch.setattr(stencil, "_isal", None)
    assert template_bytes(default_inputs(), risk_draws=300) == with_isal


#: A number in a workbook part's text (a cell's value, a chart's cache, a cell reference's row).
def test_xlsx_differences_allow_the_last_digits_only():
    fresh = template_bytes(default_inputs(), 0)
    assert xlsx_differences(fresh, fresh) == []
    with zipfile.ZipFile(io.BytesIO(fresh)) as book:
        part = next(n for n in book.namelist() if n.startswith("xl/worksheets/sheet")
                    and re.search(rb"<v>-?\d+\.\d{6,}</v>", book.read(n)))
        value = re.search(rb"<v>(-?\d+\.\d{6,})</v>", book.read(part)).group(1)

    def changed(old: bytes, new: bytes) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(fresh)) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == part:
                    assert old in data
                    data = data.replace(old, new, 1)
                dst.writestr(info, data)
        return out.getvalue()

    # a few units in the last place pass; a relative 1e-9 does not; nor does a change of text
    near = repr(float(value) * (1 + 4e-16)).encode()
    far = repr(float(value) * (1 + 1e-9)).encode()
    assert xlsx_differences(changed(value, near), fresh) == []
    assert xlsx_differences(changed(value, far), fresh) != []
    assert xlsx_differences(changed(b"<v>", b"<v> "), fresh) != []


def test_cell_values_cover_every_formula_and_input_cell(book):
    values = wbv.cell_values(wbm.plan(), default_inputs())
    expected: dict[str, set[str]] = {name: set() for name in wbm.SHEETS}
    for ws, cell in formula_cells(book):
        expected[ws.title].add(cell.coordinate)
    for spec in INPUTS + tuple(f"fleet_{c.name}" for c in COHORT_SPECS):
        cells = destination(book, f"in_{getattr(spec, 'name', spec)}")
        cells = [c for row in cells for c in row] if isinstance(cells, tuple) else [cells]
        expected["Inputs"].update(c.coordinate for c in cells)
    # the Risk sheet's figures and its copy of the inputs: values each site changes
    expected["Risk"] |= set(workbook_risk.risk_cell_values(default_inputs(), None))
    # the Cover's build date: a value each workbook gets as it is written
    sheet, coord = wbm.plan().build_date
    expected[sheet].add(coord)
    # each input's source note, on the input's row (blank for the defaults)
    for spec in INPUTS:
        cells = destination(book, f"in_{spec.name}")
        first = cells[0][0] if isinstance(cells, tuple) else cells
        expected["Inputs"].add(f"{get_column_letter(wbm.NOTE_COLUMN)}{first.row}")
    assert {k: set(v) for k, v in values.items()} == expected


def test_cell_values_blank_beyond_the_horizon():
    site = make_inputs({"horizon_months": 7})
    values = wbv.cell_values(wbm.plan(), site)["Timeline"]
    r = wbm.TIMELINE_ROWS["revenue"]
    cols = wbm.MONTH_COLS
    assert all(isinstance(values[f"{c}{r}"], float) for c in cols[:7])
    assert all(values[f"{c}{r}"] == "" for c in cols[7:])
    assert len(cols) == 120
    # the fleet, held 7 months, is valued at its resale price at the horizon: 10 % less a
    # quarter (methodology §10.1), 40,000 × 0.9^(7 ÷ 3) a GPU
    proceeds = values[f"{cols[6]}{wbm.TIMELINE_ROWS['disposal_proceeds']}"]
    assert proceeds == pytest.approx(1024 * 40_000 * 0.9 ** (7 / 3), rel=1e-12)


def test_cell_values_are_plain_python_values(book):
    site = make_inputs({"ownership": "rent", "horizon_months": 13})
    kinds = set()
    for cells in wbv.cell_values(wbm.plan(), site).values():
        for value in cells.values():
            kinds.add(type(value))
    assert kinds <= {int, float, str, dt.datetime, type(None)}, kinds  # None: a blank input
    returns = wbv.cell_values(wbm.plan(), site)["Returns"]
    # out_roi's cell: the same in every site's workbook (batch fills one template for all)
    (_, ref), = book.defined_names["out_roi"].destinations
    assert returns[ref.replace("$", "")] == "none"  # no CapEx when rented


def test_the_dashboard_heads_with_the_committee_figures_by_formula(book):
    """Methodology §10.5: NPV with and without the terminal value, IRR, MIRR, payback, equity
    IRR, minimum DSCR and peak funding, then the warnings, each a formula of its output."""
    ws = book["Dashboard"]
    label_row, value_row = wbm.KPI_ROWS
    shown = {ws.cell(label_row, c).value: ws.cell(value_row, c).value for c in range(1, 12)
             if ws.cell(label_row, c).value}
    assert shown == {
        "NPV": "=out_npv", "NPV excl. terminal": "=out_npv_excl_terminal",
        "IRR (yearly)": "=out_irr", "MIRR (yearly)": "=out_mirr",
        "Payback (months)": "=out_payback_months", "Equity IRR (yearly)": "=out_equity_irr",
        "Minimum DSCR": "=out_min_dscr", "Peak funding": "=out_peak_funding",
        "Warnings (see Checks)": "=out_warnings"}


def test_the_dashboards_peak_funding_is_the_models_with_debt(book):
    from tokenfactory_xl.tfom.evaluation import run

    inputs = make_inputs({"debt_share": 0.6})
    result = run(inputs)
    values = wbv.cell_values(wbm.plan(), inputs, result)["Dashboard"]
    label_row, value_row = wbm.KPI_ROWS
    column = next(c for c in range(1, 12)
                  if book["Dashboard"].cell(label_row, c).value == "Peak funding")
    stored = values[f"{get_column_letter(column)}{value_row}"]
    # −(lowest cumulative equity cash flow), from the model's own monthly line
    lowest = min(result.values["cumulative_equity_base"])
    assert stored == result.summary["peak_funding"] == pytest.approx(-lowest, rel=1e-12)
    assert 0 < stored < run(make_inputs({})).summary["peak_funding"]  # debt funds the rest


def test_every_money_unit_shown_names_the_currency():
    """Methodology §10.7: a money unit reads ``EUR/GPU-h``, never ``money/GPU-h``, wherever a
    sheet states one (units columns, the fleet block, the constants); the only ``money…`` texts
    left are the labels of the lines that spell each unit in the site's currency."""
    inputs = make_inputs({"currency": "EUR"})
    values = wbv.cell_values(wbm.plan(), inputs)
    wb = wbm.build_workbook(inputs)
    plan = wbm.plan()
    labels = {(plan.lines[ln.name].sheet, f"A{re.sub(r'[A-Z]', '', plan.lines[ln.name].coords[0])}")
              for ln in om.UNIT_LINES}
    raw = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                shown = values.get(ws.title, {}).get(cell.coordinate, cell.value)
                if (isinstance(shown, str) and re.fullmatch(r"money(/.*)?", shown)
                        and (ws.title, cell.coordinate) not in labels):
                    raw.append(f"{ws.title}!{cell.coordinate} {shown}")
    assert raw == []
    assert values["Returns"]  # the Returns sheet's units came from the same rule
    assert "EUR/GPU-h" in values["Returns"].values()


def test_a_line_is_placed_once():
    # a second place would take the line's formulas away from the first one's cells, which
    # then show nothing (the Years sheet's calendar years did, under their label)
    from openpyxl import Workbook

    from tokenfactory_xl.workbook.layout import _Builder

    b = _Builder(Workbook())
    ws = b.wb.active
    b.along(ws, 4, 3, om.BY_LINE["fy_year"])
    with pytest.raises(AssertionError, match="fy_year placed twice"):
        b.along(ws, 9, 3, om.BY_LINE["fy_year"])
    b.again(ws, 9, 3, om.BY_LINE["fy_year"])  # shown again: its cells read the line's
    assert list(b.plan.lines) == ["fy_year"]


def test_a_line_shown_again_reads_its_own_cells_and_shows_their_values(book):
    plan = wbm.plan()
    assert set(plan.copies) == {"fy_year@Years", "fy_end_month@Years"}
    site = make_inputs({"horizon_months": 30, "start_date": "2027-07-01"})
    values = wbv.cell_values(plan, site)
    for copy in plan.copies.values():
        home = plan.lines[copy.line.name]
        assert copy.sheet != home.sheet and len(copy.coords) == len(home.coords)
        for here, there in zip(copy.coords, home.coords, strict=True):
            col, row = re.fullmatch(r"([A-Z]+)(\d+)", there).groups()
            assert book[copy.sheet][here].value == f"={home.sheet}!${col}${row}"
            assert values[copy.sheet][here] == values[home.sheet][there]
    # the Years sheet heads its years with their calendar years: 2027, 2028 and 2029 for a
    # site from July 2027 over 30 months (to December 2029), blank beyond
    years = [values["Years"][c] for c in plan.copies["fy_year@Years"].coords]
    assert years[:3] == [2027.0, 2028.0, 2029.0] and set(years[3:]) == {""}
