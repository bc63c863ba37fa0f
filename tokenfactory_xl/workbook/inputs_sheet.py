"""The Inputs sheet of the TFOM workbook: every input of the catalogue in a blue cell named
``in_<name>`` (three, Base, Optimised and Downside, for a per-scenario input), its unit, what it
allows, its help and a source note of the user's own; beside them the fleet block, cohorts 2–8
one column each.

Each value cell takes its number format and data validation from the input's entry in
:mod:`tokenfactory_xl.core.catalogue`: no range or default is stated here.
"""

from __future__ import annotations

import re

from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from ..core.catalogue import COHORT_SPECS, INPUTS, MAX_COHORTS, Input
from ..tfom.inputs import NOTES_NAME, SiteInputs
from . import style as st
from .input_cells import input_cell_value
from .layout import _Builder, _col

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
    cell.value = input_cell_value(spec, value)
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


def build_inputs_sheet(b: _Builder, ws: Worksheet, inputs: SiteInputs) -> None:
    st.title(ws, "Inputs", "Every assumption of the model, and only here. Type over the blue "
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

    st.header(ws, 4, ["Input", "", "Name", "Unit", "Value · Base", "Optimised", "Downside",
                    "Allowed", "Help", "Source / note"])
    ws.merge_cells("A4:B4")
    row = 5
    notes = inputs.notes
    for group in dict.fromkeys(i.group for i in INPUTS):
        st.section(ws, row, group, 10)
        row += 1
        for spec in (i for i in INPUTS if i.group == group):
            ws.cell(row, 1, spec.label)
            ws.cell(row, 3, f"in_{spec.name}").font = st.NAME_FONT
            b.unit(ws, row, 4, spec.unit)
            allowed = ws.cell(row, 8, spec.allowed[:1].upper() + spec.allowed[1:])
            allowed.font, allowed.alignment = st.NOTE_FONT, st.INDENT
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
    widths = {"A": 40, "B": 2, "C": 34, "D": 13, "E": 15, "F": 13, "G": 13, "H": 44, "I": 60,
              "J": 40, "K": 34, "S": 13, "T": 30} | {col: 12 for col in FLEET_COLS}
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "E5"
    # Printed readable: the inputs from their labels to what each allows (the notes column is
    # read on screen; the cohorts of the fleet block are printed on Capacity), a page wide and
    # as many long as it takes, the header row on every page.
    st.print_setup(ws, fit_height=0)
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
    st.header(ws, top + 2, ["Cohort column"] + [f"Cohort {k}" for k in range(2, MAX_COHORTS + 1)]
              + ["Unit", "Name"], first_col=label_col)
    cohorts = inputs.cohorts
    for i, spec in enumerate(COHORT_SPECS):
        row = top + 3 + i
        ws.cell(row, label_col, spec.label)
        if spec.unit not in ("text", ""):
            b.unit(ws, row, unit_col, spec.unit)
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
