"""Every sheet with figures has a units column (methodology §10.7): the yearly sheets, Years and
Statements, show each line's unit between its label and its first year, money in the site's
currency."""

from __future__ import annotations

import io

import openpyxl
import pytest

from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import layout as wbl


@pytest.fixture(scope="module")
def stored():
    data = template_bytes(make_inputs({"currency": "EUR"}), 0)
    # read-only: the two yearly sheets the tests read are parsed, not all fourteen
    return openpyxl.load_workbook(io.BytesIO(data), data_only=True, read_only=True)


@pytest.mark.parametrize("sheet", ["Years", "Statements"])
def test_each_yearly_line_shows_its_unit(stored, sheet):
    ws = stored[sheet]
    unit_col, first = wbm.YEAR_UNIT_COL, wbm.YEAR_FIRST_COL
    placed = {p.coords[0]: p.line for p in wbm.plan().lines.values()
              if p.sheet == sheet and p.line.table is om.FISCAL}
    rows = {int(coord.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")): line
            for coord, line in placed.items()
            if coord.startswith(wbl._col(first))}
    assert len(rows) == len(placed) > 10  # every yearly line starts in the first year's column
    header = min(rows)
    assert ws.cell(header, unit_col).value == "Unit"
    money = 0
    for row, line in rows.items():
        if row == header:
            continue
        shown = ws.cell(row, unit_col).value
        if line.unit.startswith("money"):
            money += 1
            assert shown == "EUR", (sheet, line.name, shown)
        else:
            assert shown == (line.unit or None), (sheet, line.name, shown)
    assert money > 5
