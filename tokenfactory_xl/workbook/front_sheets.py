"""The sheets of the TFOM workbook: each sheet's builder decides where each line of the model
goes and how it looks; :mod:`tokenfactory_xl.workbook.build` assembles them.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence

from openpyxl.chart import BarChart, LineChart, Reference, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.drawing.line import LineProperties
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..core.catalogue import BY_NAME, COHORT_SPECS, INPUTS, MAX_COHORTS, Input
from ..core.errors import InputError, Problem
from ..tfom import operating_model as om
from ..tfom.formula import Line
from ..tfom.inputs import NOTES_NAME, SiteInputs
from ..tfom.operating_model import MAX_MONTHS, OUTPUTS
from . import risk_sheet as workbook_risk
from . import style as st
from .layout import _Builder, _col, _split

MONTH0_COL = 4  # column D holds month 0 (the investment)
FIRST_MONTH_COL = MONTH0_COL + 1
LAST_COL = MONTH0_COL + MAX_MONTHS


MONTH_COLS: tuple[str, ...] = tuple(_col(c) for c in range(FIRST_MONTH_COL, LAST_COL + 1))
ALL_COLS: tuple[str, ...] = (_col(MONTH0_COL),) + MONTH_COLS


# The sheets' layout helpers live in workbook.style, which the Risk sheet's module shares.
_title, _header, _section, _print_setup = st.title, st.header, st.section, st.print_setup


# -- Inputs ----------------------------------------------------------------------------------
_VALUE_COLS = ("E", "F", "G")  # Base, Optimised, Downside (single-valued inputs use E)


def _input_kind(spec: Input) -> str:
    if spec.kind == "fraction":
        return "fraction"
    if spec.kind == "integer":
        return "integer"
    if spec.kind == "date":
        return "date"
    if spec.kind in ("text", "choice", "currency"):
        return "text"
    # per GPU-hour, per kWh, per Mtok: cents matter; per GPU or per month: whole money
    if spec.unit.startswith("money/") and spec.unit.endswith(("GPU-h", "kWh", "Mtok")):
        return "price"
    return "money" if spec.unit.startswith("money") else "number"


def _input_cell(cell, spec: Input, value: object, dv: DataValidation) -> None:  # type: ignore[no-untyped-def]
    """Type ``value`` into an input cell and give it the input's look, format and validation."""
    cell.value = st.input_cell_value(spec, value)
    if spec.kind in ("text", "currency", "choice") and value is not None:
        cell.data_type = "s"  # user text is never a formula
    cell.font, cell.fill, cell.border = st.INPUT_FONT, st.INPUT_FILL, st.BOX
    cell.protection = st.UNLOCKED
    cell.number_format = st.number_format(_input_kind(spec))
    cell.alignment = st.RIGHT
    dv.add(cell)


def _validation(spec: Input, lists: dict[str, str]) -> DataValidation:
    kw: dict[str, object] = {}
    if spec.kind == "choice":
        kw = {"type": "list", "formula1": lists[spec.name]}
    elif spec.kind == "date":
        # Any date; the Checks sheet checks that it is the first of a month.
        kw = {"type": "date", "operator": "between", "formula1": "1", "formula2": "2958465"}
    elif spec.kind == "text":
        kw = {"type": "textLength", "operator": "between", "formula1": "1",
              "formula2": str(spec.max_length)}
    elif spec.kind == "currency":
        kw = {"type": "textLength", "operator": "equal", "formula1": "3"}
    else:
        kind = "whole" if spec.kind == "integer" else "decimal"
        low, high = spec.low, spec.high
        if low is not None and high is not None:
            kw = {"type": kind, "operator": "between", "formula1": repr(low),
                  "formula2": repr(high)}
        elif low is not None:
            op = "greaterThan" if spec.low_open else "greaterThanOrEqual"
            kw = {"type": kind, "operator": op, "formula1": repr(low)}
        else:
            kw = {"type": kind, "operator": "between", "formula1": "-1E+307",
                  "formula2": "1E+307"}
    for k in ("formula1", "formula2"):
        if k in kw and isinstance(kw[k], str):
            kw[k] = kw[k].replace(".0", "") if re.fullmatch(r"-?\d+\.0", kw[k]) else kw[k]
    allowed = spec.allowed
    return DataValidation(
        **kw, allow_blank=spec.optional, showInputMessage=True, showErrorMessage=True,
        promptTitle=spec.label[:32], prompt=f"Allowed: {allowed}."[:255],
        errorTitle="Not allowed", errorStyle="stop",
        error=f"{spec.label} must be {allowed}. {spec.description}"[:255])


def _unit(b: _Builder, ws: Worksheet, row: int, col: int, unit: str) -> None:
    """A unit cell: a money unit in the site's currency (``USD/Mtok``, a formula reading
    in_currency through its line on Capacity, methodology §10.7), any other unit as text."""
    if unit.startswith("money"):
        b.echo(ws, f"{_col(col)}{row}", om.unit_name(unit), "text", font=st.NOTE_FONT)
    else:
        ws.cell(row, col, unit).font = st.NOTE_FONT


def build_inputs_sheet(b: _Builder, ws: Worksheet, inputs: SiteInputs) -> None:
    _title(ws, "Inputs", "Every assumption of the model, and only here. Type over the blue "
           "cells; each one says what it allows when selected.")
    # Allowed lists (for the drop-downs and the scenario number); fixed, so styled as constants.
    ws["K4"] = "Allowed lists"
    ws["K4"].font = st.SECTION_FONT
    lists: dict[str, str] = {}
    row = 5
    for spec in INPUTS:
        if spec.kind != "choice":
            continue
        ws.cell(row, 11, spec.label).font = st.NOTE_FONT
        for i, choice in enumerate(spec.choices):
            cell = ws.cell(row, 12 + i, choice)
            cell.font, cell.fill, cell.protection = st.CONSTANT_FONT, st.CONSTANT_FILL, st.LOCKED
        ref = f"$L${row}:${_col(11 + len(spec.choices))}${row}"
        lists[spec.name] = ref
        b.name(f"list_{spec.name}", ws, ref.replace("$", ""))
        row += 1

    _header(ws, 4, ["Input", "", "Name", "Unit", "Value · Base", "Optimised", "Downside",
                    "Allowed", "Help", "Source / note"])
    ws.merge_cells("A4:B4")
    row = 5
    notes = inputs.notes
    for group in dict.fromkeys(i.group for i in INPUTS):
        _section(ws, row, group, 10)
        row += 1
        for spec in (i for i in INPUTS if i.group == group):
            ws.cell(row, 1, spec.label)
            ws.cell(row, 3, f"in_{spec.name}").font = st.NAME_FONT
            _unit(b, ws, row, 4, spec.unit)
            ws.cell(row, 8, spec.allowed[:1].upper() + spec.allowed[1:]).font = st.NOTE_FONT
            ws.cell(row, 9, spec.description).font = st.NOTE_FONT
            _note_cell(ws.cell(row, NOTE_COLUMN), notes.get(spec.name, ""))
            b.plan.notes.append((ws.title, f"{_col(NOTE_COLUMN)}{row}", spec.name))
            cols = _VALUE_COLS if spec.per_scenario else _VALUE_COLS[:1]
            dv = _validation(spec, lists)
            ws.add_data_validation(dv)
            for index, col in enumerate(cols):
                cell = ws[f"{col}{row}"]
                value = inputs[spec.name]
                _input_cell(cell, spec, value[index] if spec.per_scenario else value, dv)
                b.plan.inputs.append((ws.title, cell.coordinate, spec.name,
                                      index if spec.per_scenario else None))
            ref = f"{cols[0]}{row}" + (f":{cols[-1]}{row}" if len(cols) > 1 else "")
            b.name(f"in_{spec.name}", ws, ref)
            row += 1
    last = row - 1
    b.name(NOTES_NAME, ws, f"{_col(NOTE_COLUMN)}5:{_col(NOTE_COLUMN)}{last}")
    _fleet_block(b, ws, inputs, lists)
    widths = {"A": 30, "B": 2, "C": 30, "D": 13, "E": 15, "F": 13, "G": 13, "H": 44, "I": 60,
              "J": 40, "K": 34, "S": 13, "T": 30} | {col: 12 for col in FLEET_COLS}
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "E5"
    # Printed readable: the inputs from their labels to what each allows (the notes column is
    # read on screen; the cohorts of the fleet block are printed on Capacity), a page wide and
    # as many long as it takes, the header row on every page.
    _print_setup(ws, fit_height=0)
    ws.print_area = f"A1:H{last}"
    ws.print_title_rows = "4:4"

#: The Inputs sheet's "Source / note" column (J): a note per input that the model never reads
#: and ``refresh`` and ``collect`` keep (methodology §10.7), named :data:`NOTES_NAME`.
NOTE_COLUMN = 10


def _note_cell(cell, text: str) -> None:  # type: ignore[no-untyped-def]
    """An input's source note: the user's text, typed as text (never a formula: the cell's
    format is Text, so what is typed there later stays text too)."""
    cell.value = text or None
    if text:
        cell.data_type = "s"
    cell.font, cell.border, cell.protection = st.INPUT_FONT, st.BOX, st.UNLOCKED
    cell.number_format = "@"


FLEET_TOP = 10  # the fleet block's title row, right of the inputs and under the lists
FLEET_LABEL_COL = 11  # column K
FLEET_COLS: tuple[str, ...] = tuple(_col(FLEET_LABEL_COL + 1 + i)
                                    for i in range(MAX_COHORTS - 1))  # L … R


def _fleet_block(b: _Builder, ws: Worksheet, inputs: SiteInputs, lists: dict[str, str]) -> None:
    """Cohorts 2…8 (methodology §4.1): one column each, one row per cohort column, named
    ``in_fleet_<column>``; a blank cell takes the site's own value (except the retire month)."""
    top, label_col = FLEET_TOP, FLEET_LABEL_COL
    unit_col = label_col + MAX_COHORTS  # S, after the cohorts' columns
    name_col = unit_col + 1
    cell = ws.cell(top, label_col, f"Fleet: cohorts 2–{MAX_COHORTS}")
    cell.font = st.SECTION_FONT
    ws.cell(top + 1, label_col, "Cohort 1 is the site's own GPUs (left); a blank cell takes the "
            "site's value, except the retire month (blank: to the horizon).").font = st.NOTE_FONT
    _header(ws, top + 2, ["Cohort column"] + [f"Cohort {k}" for k in range(2, MAX_COHORTS + 1)]
            + ["Unit", "Name"], first_col=label_col)
    cohorts = inputs.cohorts
    for i, spec in enumerate(COHORT_SPECS):
        row = top + 3 + i
        ws.cell(row, label_col, spec.label)
        if spec.unit not in ("text", ""):
            _unit(b, ws, row, unit_col, spec.unit)
        ws.cell(row, name_col, f"in_fleet_{spec.name}").font = st.NAME_FONT
        dv = _validation(spec, lists)
        dv.allow_blank = True
        ws.add_data_validation(dv)
        for index, col in enumerate(FLEET_COLS):
            cell = ws[f"{col}{row}"]
            value = cohorts[index].get(spec.name) if index < len(cohorts) else None
            _input_cell(cell, spec, value, dv)
            b.plan.inputs.append((ws.title, cell.coordinate, f"fleet_{spec.name}", index))
        b.name(f"in_fleet_{spec.name}", ws, f"{FLEET_COLS[0]}{row}:{FLEET_COLS[-1]}{row}")
        b.plan.rows[f"in_fleet_{spec.name}"] = row


# -- Capacity (with the constants block) -----------------------------------------------------
def build_capacity_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Capacity", "From GPUs and tokens per second to TEF, SLA, TFI and the cost of a "
           "GPU-hour: everything the site computes once.")
    _header(ws, 4, ["Quantity", "Value", "Unit", "How it is computed"])
    row = 5
    _section(ws, row, "Constants (fixed by definition; not inputs)", 9)
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
            _unit(b, ws, row, 3, c.unit)
            ws.cell(row, 4, f"k_{c.name}: {c.note}").font = st.NOTE_FONT
        else:
            ws.cell(row, 2 + len(values), f"k_{c.name}: {c.note}").font = st.NOTE_FONT
        row += 1
    for item in om.CAPACITY:
        if isinstance(item, str):
            row += 1
            _section(ws, row, item, 9)
            row += 1
            continue
        ws.cell(row, 1, item.label)
        b.scalar(ws, f"B{row}", item)
        _unit(b, ws, row, 3, item.unit)
        ws.cell(row, 4, item.note).font = st.NOTE_FONT
        b.plan.rows[item.name] = row
        row += 1
    row += 1
    _section(ws, row, "The fleet: one column per cohort (inputs of cohort 1 from the site, "
             "cohorts 2–8 from the fleet block; empty columns have 0 GPUs)", 9)
    row += 1
    _header(ws, row, ["Cohort line"] + [f"Cohort {k}" for k in range(1, MAX_COHORTS + 1)]
            + ["Unit"])
    row += 1
    for line in om.FLEET + tuple(ln for sc in om.ALL_SCENARIOS
                                 for ln in om.FLEET_SCENARIO[sc.key]):
        ws.cell(row, 1, line.label)
        b.along(ws, row, 2, line)
        if line.unit:
            _unit(b, ws, row, 2 + MAX_COHORTS, line.unit)
        row += 1
    row += 1
    for line in om.FLEET_SCALARS:
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line)
        _unit(b, ws, row, 3, line.unit)
        ws.cell(row, 4, line.note).font = st.NOTE_FONT
        b.plan.rows[line.name] = row
        row += 1
    row += 1
    _section(ws, row, "Money units in the site's currency (in_currency; shown in every unit "
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
    _print_setup(ws, landscape=False, fit_height=1)
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
    _title(ws, "Timeline", None)
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
            _section(ws, row, item, 3)
            continue
        ws.cell(row, 1, item.label)
        _unit(b, ws, row, 2, item.unit)
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
    _print_setup(ws, fit_height=1)  # prints no page: UNPRINTED_SHEETS


def timeline_cells(sheet: str, cells: tuple[str, ...], horizon: int) -> tuple[str, ...]:
    """The cells of a chart's reference a site with ``horizon`` months shows: a Timeline row
    from month 1 stops at the horizon; any other reference is kept whole."""
    if sheet != "Timeline" or len(cells) < 2:
        return cells
    split = [_split(c) for c in cells]
    if split[0][0] != _col(FIRST_MONTH_COL) or len({row for _, row in split}) != 1:
        return cells
    return cells[:horizon]


def om_subtitle(name: str) -> Line:
    return om.BY_LINE[name]


# -- Returns ----------------------------------------------------------------------------------
_RETURNS_EXTRAS = (
    ("tfi_now", "TFI now", "fraction", "fraction2"),
    ("revenue_per_gpu_hour", "Revenue per GPU-hour today (cohort 1)", "money/GPU-h", "price"),
    ("cash_cost_per_gpu_hour", "Cash cost per GPU-hour (cohort 1)", "money/GPU-h", "price"),
    ("total_capex", "CapEx, all cohorts", "money", "money"),
    ("total_cash_flow", "Σ cash flows, months 0…H (live scenario)", "money", "money"),
)


def build_returns_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Returns", "The summary outputs of the live scenario (methodology §7), each a "
           "defined name out_<name>; every scenario side by side on Scenarios.")
    _header(ws, 4, ["Output", "Value", "Unit", "Name", "Definition"])
    row = 5
    for out in OUTPUTS:
        ws.cell(row, 1, out.label)
        kind = "fraction2" if out.kind == "fraction" else out.kind
        b.scalar(ws, f"B{row}", out.line, kind=kind)
        _unit(b, ws, row, 3, out.unit)
        ws.cell(row, 4, f"out_{out.name}").font = st.NAME_FONT
        ws.cell(row, 5, out.note).font = st.NOTE_FONT
        b.plan.rows[f"out_{out.name}"] = row
        row += 1
    row += 1
    _section(ws, row, "The site today", 5)
    row += 1
    for source, label, unit, kind in _RETURNS_EXTRAS:
        ws.cell(row, 1, label)
        b.echo(ws, f"B{row}", source, kind)
        _unit(b, ws, row, 3, unit)
        row += 1
    _yearly_summary(b, ws)
    for col, width in {"A": 34, "B": 20, "C": 14, "D": 30, "E": 62, "F": 4, "G": 3, "H": 7,
                       "I": 15, "J": 15, "K": 10, "L": 15, "M": 17}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    _print_setup(ws, fit_height=1)
    ws.print_area = f"A1:M{row}"


def _yearly_summary(b: _Builder, ws: Worksheet) -> None:
    """Revenue, EBITDA, cash flow by year of the model (columns H…M beside the outputs)."""
    _header(ws, 4, [ln.label for ln in om.YEARLY_LINES], first_col=8)
    ws.row_dimensions[4].height = 30
    for i, line in enumerate(om.YEARLY_LINES):
        b.down(ws, 8 + i, 5, line)
    ws.cell(5 + om.YEARS, 8, "Year 1 is months 1–12; the cumulative cash flow includes the "
            "month-0 investment.").font = st.NOTE_FONT


# -- Years: tax by calendar year with losses carried forward, debt service cover ---------------
#: The yearly sheets' (Years, Statements) units column and first year's column.
YEAR_UNIT_COL, YEAR_FIRST_COL = 2, 3


def build_years_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Years", "Tax by calendar year, losses carried forward (unlevered and after "
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
            _unit(b, ws, row, YEAR_UNIT_COL, line.unit)
        b.along(ws, row, YEAR_FIRST_COL, line, font=st.TOTAL_FONT if header else st.CALC_FONT)
        if line.name == "fy_year":
            for k in range(om.FISCAL_YEARS):
                ws.cell(row, YEAR_FIRST_COL + k).number_format = "0"
        row += 1
    for sc in om.ALL_SCENARIOS:
        row += 1
        _section(ws, row, f"{sc.name} scenario" if sc in om.SCENARIOS else sc.name,
                 YEAR_FIRST_COL + om.FISCAL_YEARS)
        row += 1
        for line in om.FISCAL_LINES[sc.key]:
            ws.cell(row, 1, line.label.split(": ", 1)[1])
            _unit(b, ws, row, YEAR_UNIT_COL, line.unit)
            b.along(ws, row, YEAR_FIRST_COL, line)
            row += 1
    ws.column_dimensions["A"].width = 42
    ws.column_dimensions[_col(YEAR_UNIT_COL)].width = 10
    for k in range(om.FISCAL_YEARS):
        ws.column_dimensions[_col(YEAR_FIRST_COL + k)].width = 15
    ws.freeze_panes = f"{_col(YEAR_FIRST_COL)}8"
    _print_setup(ws, fit_height=1)


# -- Statements: income, cash flow and balance sheet by calendar year, each scenario -----------
def build_statements_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Statements", "Income statement, cash-flow statement and balance sheet by "
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
    _unit(b, ws, row, YEAR_UNIT_COL, line.unit)
    b.along(ws, row, YEAR_FIRST_COL, line)
    parts = dict(om.STATEMENT_PARTS)
    totals = ("net_income", "cash_change", "balance_gap", "ebit", "ebitda")
    for sc in om.SCENARIOS:
        part = None
        for line in om.STATEMENT_LINES[sc.key]:
            if line.meta["statement"] != part:
                part = line.meta["statement"]
                row += 2
                _section(ws, row, f"{sc.name} scenario: {parts[part]}",
                         YEAR_FIRST_COL + om.FISCAL_YEARS)
            row += 1
            bold = line.meta["key"] in totals
            ws.cell(row, 1, line.label.split(": ", 1)[1]).font = (
                st.TOTAL_FONT if bold else st.CALC_FONT)
            _unit(b, ws, row, YEAR_UNIT_COL, line.unit)
            b.along(ws, row, YEAR_FIRST_COL, line, font=st.TOTAL_FONT if bold else st.CALC_FONT)
    ws.column_dimensions["A"].width = 48
    ws.column_dimensions[_col(YEAR_UNIT_COL)].width = 10
    for k in range(om.FISCAL_YEARS):
        ws.column_dimensions[_col(YEAR_FIRST_COL + k)].width = 15
    ws.freeze_panes = f"{_col(YEAR_FIRST_COL)}5"
    # one page: a year a column, up to eleven, is narrow enough to stand upright
    _print_setup(ws, landscape=False, fit_height=1)


# -- Scenarios: the three side by side, and the value of the optimisation programme ------------
SCENARIO_COLS = ("B", "C", "D")


def build_scenarios_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Scenarios", "Base, Optimised and Downside at once from the same inputs; "
           "Optimised − Base: the value of the optimisation programme, net of its cost.")
    _header(ws, 4, ["Output"] + [sc.name for sc in om.SCENARIOS]
            + ["Optimised − Base", "Unit", "Names"])
    uplift = {ln.meta["output"]: ln for ln in om.UPLIFT_LINES}
    row = 5

    def output_row(out, row: int) -> None:
        ws.cell(row, 1, out.label)
        kind = "fraction2" if out.kind == "fraction" else out.kind
        for col, sc in zip(SCENARIO_COLS, om.SCENARIOS, strict=True):
            b.scalar(ws, f"{col}{row}", out.line_for(sc), kind=kind)
        if out.name in uplift:
            b.scalar(ws, f"E{row}", uplift[out.name], kind=kind, font=st.TOTAL_FONT)
        _unit(b, ws, row, 6, out.unit)
        ws.cell(row, 7, f"out_{out.name}_base, …").font = st.NAME_FONT
        b.plan.rows[f"scenario_{out.name}"] = row

    for out in OUTPUTS:
        if out.name in om.BUY_INSTEAD:
            continue
        output_row(out, row)
        row += 1
    ws.cell(row + 1, 1, "Optimised − Base is shown where it measures the programme: NPV, "
            "revenue, EBITDA, tokens sold and equivalent GPUs (named out_uplift_<name>).").font \
        = st.NOTE_FONT
    b.scalar(ws, f"A{row + 2}", om.BY_LINE["demand_note"], font=st.NOTE_FONT, kind="text")
    row = _bridge_block(b, ws, row + 4)
    _section(ws, row, "Buy instead of optimise: the GPUs the Optimised TEF saves, the "
             "alternative to the programme (not a gain to add to the NPV uplift)", 7)
    row += 1
    for out in OUTPUTS:
        if out.name in om.BUY_INSTEAD:
            output_row(out, row)
            row += 1
    for col, width in {"A": 34, "B": 21, "C": 21, "D": 21, "E": 22, "F": 14, "G": 38}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    _print_setup(ws, fit_height=1)
    ws.print_area = f"A1:G{row + 1}"


_BAR_LABELS = ("Base NPV", "+ TEF target", "+ sell-through target",
               "+ prices, demand, resale, shutdown", "+ programme cost", "Optimised NPV")


def _bridge_block(b: _Builder, ws: Worksheet, row: int) -> int:
    """Optimised − Base NPV in four steps (methodology §10.3), and its waterfall chart."""
    _section(ws, row, "Optimised − Base NPV taken apart: each step is Base's inputs with more "
             "of Optimised's (live formulas: the bridge scenarios on Timeline)", 7)
    row += 1
    _header(ws, row, ["Step", "NPV uplift", "", "", "", "Unit", "Name"])
    row += 1
    for line in om.BRIDGE_LINES:
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line, font=st.TOTAL_FONT)
        _unit(b, ws, row, 6, line.unit)
        ws.cell(row, 7, line.name).font = st.NAME_FONT
        row += 1
    ws.cell(row, 1, "Sum of the steps = NPV: Optimised − Base").font = st.TOTAL_FONT
    b.echo(ws, f"B{row}", "out_uplift_npv", "money", font=st.TOTAL_FONT)
    row += 2
    _header(ws, row, ["Waterfall bar"] + [ln.label for ln in om.BRIDGE_BAR_LINES])
    first = row + 1
    for i, label in enumerate(_BAR_LABELS):
        ws.cell(first + i, 1, label)
    for j, line in enumerate(om.BRIDGE_BAR_LINES):
        b.down(ws, 2 + j, first, line)
    last = first + len(_BAR_LABELS) - 1
    chart = BarChart()
    chart.type = "col"
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.title = "NPV bridge: Base to Optimised"
    chart.height, chart.width = 9, 20
    parts = ("bridge_hidden_up", "bridge_hidden_down", "bridge_shown_up", "bridge_shown_down")
    cols = {ln.name: 2 + j for j, ln in enumerate(om.BRIDGE_BAR_LINES)}
    for name in parts:
        ref = Reference(ws, min_col=cols[name], min_row=first, max_row=last)
        chart.series.append(Series(ref, title=om.BY_LINE[name].label))
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    for series, name in zip(chart.series, parts, strict=True):
        if "hidden" in name:
            series.graphicalProperties.noFill = True
            series.graphicalProperties.line.noFill = True
        else:
            series.graphicalProperties.solidFill = "1F3864"
            series.graphicalProperties.line.solidFill = "1F3864"
    chart.legend = None
    chart.y_axis.number_format = '#,##0.0,,"m"'
    chart.y_axis.title = "NPV (millions)"
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.gapWidth = 50
    ws.add_chart(chart, f"A{last + 2}")
    return last + 2 + 19


# -- IRR: the searches of each scenario's project and equity IRR -------------------------------
IRR_GRID_TOP = 8


def build_irr_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "IRR", "Each IRR: the NPV on a grid of monthly rates, then Newton's steps, kept "
           "inside the brackets nearest 0 on either side; the root nearest 0 is the IRR.")
    for j, search in enumerate(om.IRR_SEARCHES):
        c0 = 1 + 7 * j
        ws.cell(4, c0, search.label).font = st.SECTION_FONT
        ws.cell(5, c0, "IRR, monthly")
        b.scalar(ws, f"{_col(c0 + 1)}5", search.result)
        _header(ws, IRR_GRID_TOP - 1, [ln.label for ln in search.grid], first_col=c0)
        for i, line in enumerate(search.grid):
            b.down(ws, c0 + i, IRR_GRID_TOP, line)
        r = IRR_GRID_TOP + om.N_IRR + 1
        for line in search.bracket:
            ws.cell(r, c0, line.label)
            b.scalar(ws, f"{_col(c0 + 4)}{r}", line)
            r += 1
        for side in ("above", "below"):
            r += 1
            lines = [ln for ln in search.steps if ln.name.endswith(f"_{side}_{search.tag}")
                     or f"_{side}_" in ln.name]
            _header(ws, r, [f"{ln.label} ({side} 0)" for ln in lines], first_col=c0)
            for i, line in enumerate(lines):
                b.down(ws, c0 + i, r + 1, line)
            r += om.IRR_NEWTON_STEPS + 1
        for i in range(6):
            ws.column_dimensions[_col(c0 + i)].width = 15
        ws.column_dimensions[_col(c0 + 6)].width = 3
    _print_setup(ws, fit_height=1)  # prints no page: UNPRINTED_SHEETS
    ws.freeze_panes = f"A{IRR_GRID_TOP}"


# -- Sensitivity ------------------------------------------------------------------------------
SENS_UTIL_FIRST = 7


def build_sensitivity_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Sensitivity", "How the margin of cohort 1's GPU-hour moves with utilisation "
           "(the TFI), at today's market price of the live scenario. Live formulas.")
    ws["A4"] = "Breakeven utilisation"
    b.echo(ws, "B4", "out_breakeven_util", "fraction2")
    ws["C4"] = "TFI now"
    b.echo(ws, "D4", "tfi_now", "fraction2")
    _header(ws, SENS_UTIL_FIRST - 1, [ln.label for ln in om.UTIL_LINES])
    for i, line in enumerate(om.UTIL_LINES):
        b.down(ws, 1 + i, SENS_UTIL_FIRST, line)
    last = SENS_UTIL_FIRST + om.N_UTIL - 1
    red = st.Font(name=st.FONT_NAME, bold=True, color="9C0006")
    ws.conditional_formatting.add(
        f"C{SENS_UTIL_FIRST}:D{last}", CellIsRule(operator="notEqual", formula=['""'], font=red))
    ws.column_dimensions["A"].width = 22
    for c in ("B", "C", "D"):
        ws.column_dimensions[c].width = 16
    _print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:D{last}"


def add_sensitivity_tornado(ws: Worksheet, risk_ws: Worksheet) -> None:
    """The tornado beside the utilisation margin: what moves the NPV, from the Risk sheet."""
    ws["F4"] = "What moves the NPV: the Risk sheet's tornado (see its status)"
    ws["F4"].font = st.SECTION_FONT
    ws.add_chart(workbook_risk.tornado_chart(risk_ws), "F5")
    _print_setup(ws, landscape=True, fit_height=1)
    ws.print_area = f"A1:P{SENS_UTIL_FIRST + om.N_UTIL - 1}"


# -- Checks -----------------------------------------------------------------------------------
CHECK_FIRST = 7


def _status_format(ws: Worksheet, ref: str) -> None:
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"OK"'],
                                                  fill=st.CHECK_OK_FILL, font=st.CHECK_OK_FONT))
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"ERROR"'],
                                                  fill=st.CHECK_BAD_FILL,
                                                  font=st.CHECK_BAD_FONT))


def build_checks_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Checks", "Integrity checks: every one must say OK. The master check is shown on "
           "the Cover and the Dashboard.")
    ws["A4"] = "Master check"
    ws["A4"].font = st.SECTION_FONT
    _header(ws, CHECK_FIRST - 1, ["Check", "Status", "Low", "High"])
    # What a reviewer reads first, and prints: the model's integrity, the warnings and the Risk
    # sheet's status. The check of each input against its range follows, read on screen (the
    # master check includes every one of them).
    row = CHECK_FIRST
    _section(ws, row, "Model integrity", 4)
    row += 1
    first = row
    for line in om.CROSS_CHECKS:
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line)
        ws[f"B{row}"].alignment = st.CENTER
        row += 1
    row += 1
    row = _warnings_block(b, ws, row)
    _section(ws, row - 1, "Computed by tokenfactory_xl (values, not formulas)", 4)
    ws.cell(row, 1, workbook_risk.CHECK_LABEL).alignment = st.WRAP
    ws.row_dimensions[row].height = 30
    ws[f"B{row}"] = workbook_risk.check_formula()
    ws[f"B{row}"].alignment = st.CENTER
    ws[f"B{row}"].protection = st.LOCKED
    b.plan.risk_check = (ws.title, f"B{row}")
    _status_format(ws, f"B{row}")
    red = CellIsRule(operator="equal", formula=['"STALE"'], fill=st.CHECK_BAD_FILL,
                     font=st.CHECK_BAD_FONT)
    ws.conditional_formatting.add(f"B{row}", red)
    printed = row
    row += 2
    _section(ws, row - 1, "Inputs within their allowed ranges (on screen; not printed)", 4)
    for line in om.INPUT_CHECKS:
        spec = line.meta.get("spec") or BY_NAME[str(line.meta["input"])]
        ws.cell(row, 1, line.label)
        for col, bound in zip((3, 4), om.check_bounds(spec), strict=True):
            if bound is not None:
                cell = ws.cell(row, col, int(bound) if float(bound).is_integer() else bound)
                cell.font, cell.fill, cell.protection = (st.CONSTANT_FONT, st.CONSTANT_FILL,
                                                         st.LOCKED)
        b.scalar(ws, f"B{row}", line)
        ws[f"B{row}"].alignment = st.CENTER
        row += 1
    b.scalar(ws, "B4", om.MASTER_CHECK)
    ws["B4"].alignment = st.CENTER
    for ref in (f"B{first}:B{row - 1}", "B4"):
        _status_format(ws, ref)
    for col, width in {"A": 90, "B": 12, "C": 12, "D": 12}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = f"A{CHECK_FIRST}"
    _print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:D{printed}"


def _warnings_block(b: _Builder, ws: Worksheet, row: int) -> int:
    """The warnings of methodology §10.5, one row a rule and a column a scenario (1 = it fires):
    apart from the checks, and never part of the master check."""
    _section(ws, row - 1, "Warnings (not errors: they never turn the master check red)", 4)
    _header(ws, row, ["Warning (1 = it applies)"] + [sc.name for sc in om.SCENARIOS])
    row += 1
    for i, warning in enumerate(om.WARNINGS):
        ws.cell(row, 1, warning.text[:1].upper() + warning.text[1:]).alignment = st.WRAP
        for j, sc in enumerate(om.SCENARIOS):
            b.scalar(ws, f"{_col(2 + j)}{row}", om.WARNING_LINES[sc.key][i], kind="integer")
            ws[f"{_col(2 + j)}{row}"].alignment = st.CENTER
        row += 1
    ws.cell(row, 1, "Warnings, count (out_warnings_<scenario>)").font = st.TOTAL_FONT
    for j, sc in enumerate(om.SCENARIOS):
        b.echo(ws, f"{_col(2 + j)}{row}", f"out_warnings_{sc.key}", "integer",
               font=st.TOTAL_FONT)
        ws[f"{_col(2 + j)}{row}"].alignment = st.CENTER
    return row + 2


# -- Cover ------------------------------------------------------------------------------------
#: The version of the method (docs/methodology.md) the model implements, shown on the Cover.
SPEC_VERSION = 3


def build_date() -> dt.date:
    """The date a workbook is built on, shown on the Cover: the UTC day of ``SOURCE_DATE_EPOCH``
    (seconds since 1970-01-01 UTC, the reproducible-builds convention) when that environment
    variable is set, today otherwise. Written as each workbook is filled, so a template kept
    between runs never carries yesterday's date."""
    text = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not text:
        return dt.date.today()
    try:
        seconds = int(text)
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).date()
    except (ValueError, OverflowError, OSError):
        raise InputError([Problem(
            "SOURCE_DATE_EPOCH", text,
            "the environment variable must be a whole number of seconds since 1970-01-01 UTC",
            "set it to e.g. 1767225600 (2026-01-01), or unset it to date workbooks today")]
        ) from None


_HOW_TO = (
    "1. Dashboard (the next tab) shows the headline figures and charts; Checks must all say OK.",
    "2. On Inputs, pick the live scenario (Base, Optimised or Downside) and type over the blue "
    "cells; each cell says what it allows.",
    "3. Capacity turns GPUs and tokens per second into TEF, SLA and TFI, the token funnel and "
    "the cost of a GPU-hour.",
    "4. Timeline runs the site month by month: tokens sold, price, revenue, costs, EBITDA, tax "
    "and cash flow.",
    "5. Years holds the tax by calendar year (losses carried forward) and the debt cover.",
    "6. Returns gives NPV, IRR, payback, ROI and the other outputs of the live scenario "
    "(named out_…); Scenarios shows all three and Optimised − Base.",
    "7. Sensitivity shows the margin against utilisation; Risk the tornado and the Monte Carlo "
    "of the NPV (values: when it says STALE, run tokenfactory-xl refresh FILE).",
    "IRR holds the IRR searches' working; it prints no page, nor does Timeline (its years are "
    "on Years and Returns).",
    "Sheets are protected without a password so formulas are not overwritten by accident; "
    "Review → Unprotect Sheet to change the structure.",
)

#: The Cover's answer: (label, the name the value cell shows, display kind, unit: an input's
#: name whose value is the unit, or the unit itself, and what the figure rests on).
COVER_HEADLINES: tuple[tuple[str, str, str, str, str], ...] = (
    ("NPV", "out_npv", "money", "in_currency",
     "project cash flows before financing, discounted at the rate below"),
    ("IRR", "out_irr", "fraction", "per year",
     "of the same cash flows; none when they never change sign"),
    ("Payback", "out_payback_months", "months", "months",
     "until the cumulative cash flow turns positive for good; none if not within the horizon"),
    ("Discount rate", "in_discount_rate", "fraction", "per year", "an input (Inputs)"),
    ("Master check", "check_master", "text", "",
     "OK when every integrity check on Checks holds"),
)
#: The Cover's row of its first headline (NPV).
COVER_FIRST = 7


def build_cover_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Token Factory Operating Model (TFOM)")
    ws["A2"] = ("From GPUs, tokens per second and time to first token to revenue, EBITDA, NPV "
                "and IRR — for one site, month by month.")
    ws["A2"].font = st.SUBTITLE_FONT
    ws["A4"], ws["A5"] = "Site", "Live scenario"
    for r in (4, 5):
        ws[f"A{r}"].font = st.SECTION_FONT
    b.echo(ws, "B4", "in_site_name", "text", font=st.TOTAL_FONT)
    b.echo(ws, "B5", "in_scenario", "text", font=st.TOTAL_FONT)
    ws["C5"] = "chosen on Inputs; every scenario side by side on Scenarios"
    ws["C5"].font = st.NOTE_FONT
    _header(ws, COVER_FIRST - 1,
            ["The answer (live scenario)", "Value", "Unit", "What it rests on"])
    for i, (label, source, kind, unit, note) in enumerate(COVER_HEADLINES):
        r = COVER_FIRST + i
        ws.cell(r, 1, label).font = st.SECTION_FONT
        b.echo(ws, f"B{r}", source, kind, font=st.KPI_VALUE_FONT)
        if unit.startswith("in_"):
            b.echo(ws, f"C{r}", unit, "text", font=st.NOTE_FONT)
            ws[f"C{r}"].alignment = st.Alignment(horizontal="left")
        elif unit:
            ws.cell(r, 3, unit).font = st.NOTE_FONT
        ws.cell(r, 4, note).font = st.NOTE_FONT
        ws.row_dimensions[r].height = 24
        for c in "ABCD":
            ws[f"{c}{r}"].border = st.BOX
    check = COVER_FIRST + len(COVER_HEADLINES) - 1
    ws[f"B{check}"].alignment = st.CENTER
    _status_format(ws, f"B{check}")
    r = check + 1
    ws.cell(r, 1, "Model version").font = st.NOTE_FONT
    ws.cell(r, 2, __version__).font = st.NOTE_FONT
    b.name("tfom_version", ws, f"B{r}")
    ws.cell(r, 4, "tokenfactory_xl, the package that wrote this workbook").font = st.NOTE_FONT
    ws.cell(r + 1, 1, "Specification version").font = st.NOTE_FONT
    ws.cell(r + 1, 2, SPEC_VERSION).font = st.NOTE_FONT
    ws.cell(r + 1, 4, "the method the model implements (docs/methodology.md)").font = st.NOTE_FONT
    ws.cell(r + 2, 1, "Built on").font = st.NOTE_FONT
    # a value each workbook gets as it is written (fill_cells), not part of the kept template
    date = ws.cell(r + 2, 2, DOC_TIME.date())
    date.font, date.number_format = st.NOTE_FONT, "yyyy-mm-dd"
    b.plan.build_date = (ws.title, f"B{r + 2}")
    ws.cell(r + 2, 4, "the day the workbook was written (SOURCE_DATE_EPOCH when set)"
            ).font = st.NOTE_FONT
    for row in (r, r + 1, r + 2):
        ws[f"B{row}"].alignment = st.Alignment(horizontal="left")
    r += 2
    r += 2
    ws.cell(r, 1, "What it is").font = st.SECTION_FONT
    about = ws.cell(r + 1, 1, (
        "A token factory is an AI inference cluster judged by the tokens it sells. This model "
        "links its technical indicators (TPS, TTFT, TEF) to its financial ones (revenue, EBITDA, "
        "NPV, IRR): TEF = measured ÷ theoretical TPS; TFI = TEF × SLA × sell-through, the share "
        "of theoretical capacity that becomes revenue; the breakeven utilisation is the TFI at "
        "which revenue pays the GPU-hour. Prices fall each quarter, so a GPU earns its keep for "
        "a limited economic life."))
    about.alignment = st.WRAP
    ws.merge_cells(start_row=r + 1, start_column=1, end_row=r + 1, end_column=4)
    ws.row_dimensions[r + 1].height = 64
    r += 3
    ws.cell(r, 1, "How to use it").font = st.SECTION_FONT
    for i, line in enumerate(_HOW_TO):
        ws.cell(r + 1 + i, 1, line).alignment = st.WRAP
        ws.merge_cells(start_row=r + 1 + i, start_column=1, end_row=r + 1 + i, end_column=4)
        ws.row_dimensions[r + 1 + i].height = 30
    r += 2 + len(_HOW_TO)
    ws.cell(r, 1, "Colour legend").font = st.SECTION_FONT
    for i, (text, font, fill) in enumerate(st.LEGEND):
        cell = ws.cell(r + 1 + i, 1, text)
        cell.font = font
        if fill is not None:
            cell.fill = fill
    for col, width in {"A": 30, "B": 22, "C": 12, "D": 62}.items():
        ws.column_dimensions[col].width = width
    _print_setup(ws, landscape=False, fit_height=1)


# -- Dashboard --------------------------------------------------------------------------------
#: The headline figures (methodology §10.5), two rows: the returns a committee asks first, then
#: the plan against its lifetime breakeven and the uplift taken apart.
_KPIS = (
    ("npv", "NPV"), ("npv_excl_terminal", "NPV excl. terminal"),
    ("irr", "IRR (yearly)"), ("mirr", "MIRR (yearly)"), ("payback_months", "Payback (months)"),
    ("equity_irr", "Equity IRR (yearly)"), ("min_dscr", "Minimum DSCR"),
    ("peak_funding", "Peak funding"), ("warnings", "Warnings (see Checks)"),
)
_KPIS_PLAN = (
    ("planned_tfi", "Planned TFI"), ("lifetime_breakeven_tfi", "Lifetime breakeven TFI"),
    ("tfi_headroom", "TFI headroom"), ("uplift_npv", "NPV: Optimised − Base"),
    ("uplift_npv_tef", "of which TEF"), ("uplift_npv_sell_through", "of which sell-through"),
    ("uplift_npv_market", "of which market"), ("uplift_npv_programme", "of which programme"),
)
#: Rows of the Dashboard: the two rows of headline figures, the notes, the first charts.
KPI_ROWS, PLAN_ROWS, NOTE_ROW, CHART_ROW = (4, 5), (7, 8), 9, 11


def build_dashboard_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Dashboard")
    b.scalar(ws, "A2", om_subtitle("dashboard_subtitle"), font=st.SUBTITLE_FONT, kind="text")
    ws["A2"].alignment = st.Alignment(horizontal="left")
    ws["I1"] = "Master check"
    ws["I1"].font = st.KPI_LABEL_FONT
    ws["I1"].alignment = st.RIGHT
    b.echo(ws, "J1", "check_master", "text", font=st.CHECK_OK_FONT)
    ws["J1"].alignment = st.CENTER
    ws.conditional_formatting.add("J1", CellIsRule(operator="equal", formula=['"OK"'],
                                                   fill=st.CHECK_OK_FILL, font=st.CHECK_OK_FONT))
    ws.conditional_formatting.add("J1", CellIsRule(operator="equal", formula=['"ERROR"'],
                                                   fill=st.CHECK_BAD_FILL,
                                                   font=st.CHECK_BAD_FONT))
    kinds = {o.name: o.kind for o in OUTPUTS} | {"uplift_npv": "money"} | {
        name: "money" for name in om.BRIDGE_NAMES}
    for kpis, (label_row, value_row) in ((_KPIS, KPI_ROWS), (_KPIS_PLAN, PLAN_ROWS)):
        for i, (name, label) in enumerate(kpis):
            col = _col(1 + i)
            ws[f"{col}{label_row}"] = label
            ws[f"{col}{label_row}"].font = st.KPI_LABEL_FONT
            ws[f"{col}{label_row}"].alignment = st.CENTER
            kind = kinds[name]
            b.echo(ws, f"{col}{value_row}", f"out_{name}",
                   {"money": "money", "fraction": "fraction", "months": "months",
                    "gpus": "integer", "price": "price"}.get(kind, kind),
                   font=st.KPI_VALUE_FONT)
            ws[f"{col}{value_row}"].alignment = st.CENTER
            ws[f"{col}{label_row}"].border = ws[f"{col}{value_row}"].border = st.BOX
            ws.column_dimensions[col].width = 17
        ws.row_dimensions[value_row].height = 30
    for i in range(11):  # the charts' two columns: A–E and F–K
        ws.column_dimensions[_col(1 + i)].width = 17
    b.scalar(ws, f"A{NOTE_ROW}", om.BY_LINE["dashboard_note"], font=st.NOTE_FONT, kind="text")

    # The monthly charts read the Timeline: months beyond the horizon show "" there, which
    # charts draw as zero-height columns (invisible) rather than a line falling to zero.
    tl = b.wb["Timeline"]
    first_col, last_col = FIRST_MONTH_COL, LAST_COL
    dates = Reference(tl, min_col=first_col, max_col=last_col, min_row=TIMELINE_ROWS["month_end"])

    def column_chart(title: str, keys: Sequence[str], y_title: str) -> BarChart:
        chart = BarChart()
        chart.type = "col"
        chart.grouping = "clustered"
        chart.title = title
        chart.height, chart.width = 10, 20.5
        for key in keys:
            ref = Reference(tl, min_col=first_col, max_col=last_col, min_row=TIMELINE_ROWS[key])
            series = Series(ref, title=om.BY_LINE[key].label)
            chart.series.append(series)
        chart.set_categories(dates)
        chart.gapWidth = 20
        chart.overlap = 100  # EBITDA drawn inside revenue
        chart.x_axis.number_format = "mmm yy"
        chart.x_axis.tickLblSkip = 12
        chart.x_axis.tickMarkSkip = 12
        chart.x_axis.tickLblPos = "low"
        chart.y_axis.title = y_title
        chart.y_axis.number_format = '#,##0.0,,"m"'
        chart.y_axis.majorGridlines.spPr = GraphicalProperties(ln=LineProperties(
            solidFill="D9D9D9"))
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        chart.legend.position = "b"
        if len(keys) == 1:
            chart.legend = None
        colours = ("1F3864", "70AD47")
        for series, colour in zip(chart.series, colours, strict=False):
            series.graphicalProperties.solidFill = colour
            series.graphicalProperties.line.solidFill = colour
        return chart

    ws.add_chart(column_chart("Monthly revenue and EBITDA", ["revenue", "ebitda"],
                              "per month (millions)"), f"A{CHART_ROW}")
    ws.add_chart(column_chart("Cumulative cash flow", ["cumulative_cash_flow"],
                              "millions (payback where it crosses 0)"), f"F{CHART_ROW}")

    cap = b.wb["Capacity"]
    funnel = BarChart()
    funnel.type = "bar"
    funnel.title = "Token funnel: a year at today's rates"
    funnel.height, funnel.width = 10, 20.5
    first = b.plan.rows["funnel_theoretical"]
    funnel.add_data(Reference(cap, min_col=2, min_row=first, max_row=first + 3),
                    titles_from_data=False)
    funnel.set_categories(Reference(cap, min_col=1, min_row=first, max_row=first + 3))
    funnel.legend = None
    funnel.x_axis.scaling.orientation = "maxMin"
    funnel.y_axis.number_format = "#,##0,,,,\"tn\""
    funnel.y_axis.title = "tokens per year (trillions)"
    funnel.x_axis.delete = False
    funnel.y_axis.delete = False
    funnel.series[0].graphicalProperties.solidFill = "1F3864"
    funnel.gapWidth = 40
    ws.add_chart(funnel, f"A{CHART_ROW + 21}")

    sens = b.wb["Sensitivity"]
    margin = LineChart()
    margin.title = "Margin against utilisation"
    margin.height, margin.width = 10, 20.5
    last = SENS_UTIL_FIRST + om.N_UTIL - 1
    margin.add_data(Reference(sens, min_col=2, min_row=SENS_UTIL_FIRST - 1, max_row=last),
                    titles_from_data=True)
    margin.set_categories(Reference(sens, min_col=1, min_row=SENS_UTIL_FIRST, max_row=last))
    margin.y_axis.scaling.min = -1
    margin.y_axis.scaling.max = 1
    margin.y_axis.number_format = "0%"
    margin.x_axis.number_format = "0%"
    margin.x_axis.title = "utilisation (TFI)"
    margin.y_axis.title = "margin (breakeven at 0)"
    margin.x_axis.delete = False
    margin.y_axis.delete = False
    margin.legend = None
    margin.x_axis.tickLblSkip = 3
    margin.x_axis.tickLblPos = "low"
    for series in margin.series:
        series.smooth = False
        series.graphicalProperties.line.solidFill = "1F3864"
        series.graphicalProperties.line.width = 28000
    ws.add_chart(margin, f"F{CHART_ROW + 21}")
    ws.print_area = f"A1:K{CHART_ROW + 41}"
    _print_setup(ws, fit_height=1)
    ws.page_setup.fitToHeight = 1


#: The fixed date of the workbook's document properties and the Cover's build date until a
#: workbook is filled (:func:`build_date`), so that the same inputs give the same bytes.
DOC_TIME = dt.datetime(2026, 1, 1)
