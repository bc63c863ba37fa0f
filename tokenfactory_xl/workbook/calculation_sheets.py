"""The calculation sheets of the TFOM workbook, in the order the model runs: Capacity (the
constants block, what the site computes once, one column per cohort of the fleet), Timeline
(month 0 to 120, one formula per row copied across), Years (tax by calendar year with losses
carried forward, debt service cover) and Statements (income statement, cash-flow statement and
balance sheet by calendar year).

The Timeline's rows are defined here, its month columns in :mod:`.plan` (the charts' cut at a
site's horizon, :func:`~.plan.timeline_cells`, reads them as each site's workbook is filled): the
Dashboard's charts and the tests read both.
"""

from __future__ import annotations

from openpyxl.formatting.rule import FormulaRule
from openpyxl.worksheet.worksheet import Worksheet

from ..core.catalogue import MAX_COHORTS
from ..tfom import operating_model as om
from ..tfom.formula import Line
from . import style as st
from .layout import _Builder, _col
from .plan import ALL_COLS, LAST_COL, MONTH0_COL, MONTH_COLS, TIMELINE_SHEET


# -- Capacity (with the constants block) -----------------------------------------------------
def build_capacity_sheet(b: _Builder, ws: Worksheet) -> None:
    def quantity_row(line: Line, row: int) -> int:
        """A quantity computed once on ``row``: its label, value, unit and how it is computed;
        gives the next row."""
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line)
        b.unit(ws, row, 3, line.unit)
        ws.cell(row, 4, line.note).font = st.NOTE_FONT
        b.plan.rows[line.name] = row
        return row + 1

    st.title(ws, "Capacity", "From GPUs and tokens per second to TEF, SLA, TFI and the cost of a "
             "GPU-hour: everything the site computes once.")
    st.header(ws, 4, ["Quantity", "Value", "Unit", "How it is computed"])
    row = 5
    st.section(ws, row, "Constants (fixed by definition; not inputs)", 9)
    row += 1
    for c in om.CONSTANTS:
        ws.cell(row, 1, c.label)
        values = c.value if isinstance(c.value, tuple) else (c.value,)
        for i, v in enumerate(values):
            cell = ws.cell(row, 2 + i, v)
            cell.font, cell.fill, cell.protection = st.CONSTANT_FONT, st.CONSTANT_FILL, st.LOCKED
            cell.number_format = st.number_format("fraction" if c.unit == "fraction" else
                                                  "integer")
            if c.name == "check_tolerance":
                cell.number_format = "0.0E+00"
            if c.name == "irr_smallest":
                cell.number_format = st.number_format("rate")
            if c.name == "irr_step":
                cell.number_format = "0.0"
        last = _col(1 + len(values))
        b.name(f"k_{c.name}", ws, f"B{row}" + (f":{last}{row}" if len(values) > 1 else ""))
        b.plan.rows[f"k_{c.name}"] = row
        if len(values) == 1:
            b.unit(ws, row, 3, c.unit)
            ws.cell(row, 4, f"k_{c.name}: {c.note}").font = st.NOTE_FONT
        else:
            ws.cell(row, 2 + len(values), f"k_{c.name}: {c.note}").font = st.NOTE_FONT
        row += 1
    for item in om.CAPACITY:
        if isinstance(item, str):
            row += 1
            st.section(ws, row, item, 9)
            row += 1
            continue
        row = quantity_row(item, row)
    row += 1
    st.section(ws, row, "The fleet: one column per cohort (inputs of cohort 1 from the site, "
               "cohorts 2–8 from the fleet block; empty columns have 0 GPUs)", 9)
    row += 1
    st.header(ws, row, ["Cohort line"] + [f"Cohort {k}" for k in range(1, MAX_COHORTS + 1)]
              + ["Unit"])
    row += 1
    for line in om.FLEET + tuple(ln for sc in om.ALL_SCENARIOS
                                 for ln in om.FLEET_SCENARIO[sc.key]):
        ws.cell(row, 1, line.label)
        b.along(ws, row, 2, line)
        if line.unit:
            b.unit(ws, row, 2 + MAX_COHORTS, line.unit)
        row += 1
    row += 1
    for line in om.FLEET_SCALARS:
        row = quantity_row(line, row)
    row += 1
    st.section(ws, row, "Money units in the site's currency (in_currency; shown in every unit "
               "column)", 9)
    row += 1
    for line in om.UNIT_LINES:
        ws.cell(row, 1, line.label).font = st.NOTE_FONT
        b.scalar(ws, f"B{row}", line, kind="text")
        row += 1
    for col, width in {"A": 40, "B": 22, "C": 13, "D": 14, "E": 12, "F": 12, "G": 12,
                       "H": 12, "I": 30}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    st.print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:I{row}"


# -- Timeline ---------------------------------------------------------------------------------
TIMELINE_HEADER_ROWS = {"month": 4, "month_end": 5, "in_horizon": 6, "year": 7,
                        "fiscal_index": 8}


def _timeline_rows() -> dict[str, int]:
    rows = dict(TIMELINE_HEADER_ROWS)
    row = max(TIMELINE_HEADER_ROWS.values())
    for item in om.TIMELINE_LINES:
        row += 1
        if isinstance(item, Line):
            rows[item.name] = row
    return rows


TIMELINE_ROWS: dict[str, int] = _timeline_rows()
_BOLD_LINES = ("revenue", "ebitda", "cash_flow")


def build_timeline_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, TIMELINE_SHEET, None)
    b.scalar(ws, "A2", om_subtitle("timeline_subtitle"), font=st.SUBTITLE_FONT, kind="text")
    ws["A2"].alignment = st.Alignment(horizontal="left")
    rows = TIMELINE_ROWS
    for line in om.TIMELINE_HEADER:
        r = rows[line.name]
        cell = ws.cell(r, 1, line.label)
        cell.font = st.HEADER_FONT
        for c in range(1, 4):
            ws.cell(r, c).fill = st.HEADER_FILL
        b.along(ws, r, MONTH0_COL, line, font=st.HEADER_FONT)
        for c in range(MONTH0_COL, LAST_COL + 1):
            ws.cell(r, c).fill = st.HEADER_FILL
            ws.cell(r, c).alignment = st.RIGHT
    ws.cell(rows["month"], 3, "Total").font = st.HEADER_FONT
    totals = {ln.meta["total_of"]: ln for ln in om.TIMELINE_TOTALS}
    row = max(TIMELINE_HEADER_ROWS.values())
    for item in om.TIMELINE_LINES:
        row += 1
        if isinstance(item, str):
            st.section(ws, row, item, 3)
            continue
        ws.cell(row, 1, item.label)
        b.unit(ws, row, 2, item.unit)
        bold = item.name in _BOLD_LINES
        b.along(ws, row, MONTH0_COL, item, font=st.TOTAL_FONT if bold else st.CALC_FONT)
        if bold:
            ws.cell(row, 1).font = st.TOTAL_FONT
        if item.name in totals:
            b.scalar(ws, f"C{row}", totals[item.name], font=st.TOTAL_FONT)
    ws.column_dimensions["A"].width = 28
    ws.column_dimensions["B"].width = 22
    ws.column_dimensions["C"].width = 17
    for c in ALL_COLS:
        ws.column_dimensions[c].width = 13
    d = _col(MONTH0_COL)
    ws.freeze_panes = f"{d}{rows['fiscal_index'] + 1}"
    # Months beyond the horizon: grey the header so the live months stand out.
    grey = st.Font(name=st.FONT_NAME, color="8EA9DB")
    ws.conditional_formatting.add(
        f"{d}{rows['month']}:{MONTH_COLS[-1]}{rows['fiscal_index']}",
        FormulaRule(formula=[f"{d}${rows['in_horizon']}=0"], font=grey))
    st.print_setup(ws, fit_height=1)  # prints no page: UNPRINTED_SHEETS


def om_subtitle(name: str) -> Line:
    return om.BY_LINE[name]


# -- Years: tax by calendar year with losses carried forward, debt service cover ---------------
#: The yearly sheets' (Years, Statements) units column and first year's column.
YEAR_UNIT_COL, YEAR_FIRST_COL = 2, 3
#: The yearly lines the Statements sheet places at its head (each year's calendar year and the
#: month of its balance sheet) and the Years sheet shows again.
STATEMENTS_HEAD = ("fy_year", "fy_end_month")


def build_years_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Years", "Tax by calendar year, losses carried forward (unlevered and after "
             "interest), and debt service cover, for each scenario.")
    row = 4
    ws.cell(row, 1, om.BY_LINE["fiscal_years"].label)
    b.scalar(ws, f"{_col(YEAR_FIRST_COL)}{row}", om.BY_LINE["fiscal_years"])
    row += 2
    for line in om.FISCAL_COMMON:
        header = line.name in ("fy_number", "fy_year")
        ws.cell(row, 1, line.label).font = st.TOTAL_FONT if header else st.CALC_FONT
        if line.name == "fy_number":
            ws.cell(row, YEAR_UNIT_COL, "Unit").font = st.TOTAL_FONT
        else:
            b.unit(ws, row, YEAR_UNIT_COL, line.unit)
        font = st.TOTAL_FONT if header else st.CALC_FONT
        if line.name in STATEMENTS_HEAD:  # placed on Statements, which heads its years with them
            b.again(ws, row, YEAR_FIRST_COL, line, font=font)
        else:
            b.along(ws, row, YEAR_FIRST_COL, line, font=font)
        if line.name == "fy_year":
            for k in range(om.FISCAL_YEARS):
                ws.cell(row, YEAR_FIRST_COL + k).number_format = "0"
        row += 1
    for sc in om.ALL_SCENARIOS:
        row += 1
        st.section(ws, row, f"{sc.name} scenario" if sc in om.SCENARIOS else sc.name,
                   YEAR_FIRST_COL + om.FISCAL_YEARS)
        row += 1
        for line in om.FISCAL_LINES[sc.key]:
            ws.cell(row, 1, line.label.split(": ", 1)[1])
            b.unit(ws, row, YEAR_UNIT_COL, line.unit)
            b.along(ws, row, YEAR_FIRST_COL, line)
            row += 1
    ws.column_dimensions["A"].width = 42
    ws.column_dimensions[_col(YEAR_UNIT_COL)].width = 10
    for k in range(om.FISCAL_YEARS):
        ws.column_dimensions[_col(YEAR_FIRST_COL + k)].width = 15
    ws.freeze_panes = f"{_col(YEAR_FIRST_COL)}8"
    st.print_setup(ws, fit_height=1)


# -- Statements: income, cash flow and balance sheet by calendar year, each scenario -----------
def build_statements_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Statements", "Income statement, cash-flow statement and balance sheet by "
             "calendar year, for each scenario (month 0 counts in the first year). The company "
             "keeps no cash: equity pays in what a year lacks and takes out what it earns.")
    row = 4
    ws.cell(row, 1, "Calendar year").font = st.TOTAL_FONT
    ws.cell(row, YEAR_UNIT_COL, "Unit").font = st.TOTAL_FONT
    b.along(ws, row, YEAR_FIRST_COL, om.BY_LINE["fy_year"], font=st.TOTAL_FONT)
    for k in range(om.FISCAL_YEARS):
        ws.cell(row, YEAR_FIRST_COL + k).number_format = "0"
    row += 1
    line = om.BY_LINE["fy_end_month"]
    ws.cell(row, 1, line.label).font = st.CALC_FONT
    b.unit(ws, row, YEAR_UNIT_COL, line.unit)
    b.along(ws, row, YEAR_FIRST_COL, line)
    parts = dict(om.STATEMENT_PARTS)
    totals = ("net_income", "cash_change", "balance_gap", "ebit", "ebitda")
    for sc in om.SCENARIOS:
        part = None
        for line in om.STATEMENT_LINES[sc.key]:
            if line.meta["statement"] != part:
                part = line.meta["statement"]
                row += 2
                st.section(ws, row, f"{sc.name} scenario: {parts[part]}",
                           YEAR_FIRST_COL + om.FISCAL_YEARS)
            row += 1
            bold = line.meta["key"] in totals
            ws.cell(row, 1, line.label.split(": ", 1)[1]).font = (
                st.TOTAL_FONT if bold else st.CALC_FONT)
            b.unit(ws, row, YEAR_UNIT_COL, line.unit)
            b.along(ws, row, YEAR_FIRST_COL, line, font=st.TOTAL_FONT if bold else st.CALC_FONT)
    ws.column_dimensions["A"].width = 48
    ws.column_dimensions[_col(YEAR_UNIT_COL)].width = 10
    for k in range(om.FISCAL_YEARS):
        ws.column_dimensions[_col(YEAR_FIRST_COL + k)].width = 15
    ws.freeze_panes = f"{_col(YEAR_FIRST_COL)}5"
    # one page: a year a column, up to eleven, is narrow enough to stand upright
    st.print_setup(ws, landscape=False, fit_height=1)
