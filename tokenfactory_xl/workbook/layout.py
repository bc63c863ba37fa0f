"""The layout engine of the TFOM workbook: where each line lives and how its cells are written.

A sheet builder places a line with :class:`_Builder` (one cell, a row along a table, a column
down one); the :class:`~.plan.Plan` records every placement; each cell's formula is its line's
declaration rendered with a context (:class:`_Context`) that turns a reference into the A1
address seen from that cell, blank beyond a table's guard (:class:`_Gaps`).
"""

from __future__ import annotations

import copy
import functools
import re

from openpyxl import Workbook
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from ..files.a1 import absolute
from ..files.a1 import column_index as _column_index
from ..files.a1 import column_letter as _col
from ..files.a1 import split_coord as _split
from ..tfom import operating_model as om
from ..tfom.excel import ExcelContext, excel
from ..tfom.formula import Line
from . import style as st
from .plan import Placement, Plan, copy_key


@functools.lru_cache(maxsize=1 << 16)
def _row_column(coord: str) -> tuple[int, int]:
    col, row = _split(coord)
    return row, _column_index(col)


def _cell(ws: Worksheet, coord: str):  # type: ignore[no-untyped-def]
    """``ws[coord]`` without parsing ``coord`` again each time (tens of thousands of cells)."""
    row, column = _row_column(coord)
    return ws.cell(row=row, column=column)


def _abs(sheet: str, coord: str) -> str:
    return f"{sheet}!{absolute(coord)}"


class _Context(ExcelContext):
    """Renders references from the cell of ``here`` at ``position``."""

    def __init__(self, plan: Plan, here: Placement, position: int):
        self.plan, self.here, self.k = plan, here, position

    def _prefix(self, p: Placement) -> str:
        return "" if p.sheet == self.here.sheet else f"{p.sheet}!"

    def cell(self, line: str, shift: int) -> str:
        p = self.plan.lines[line]
        if p.orient == "s":
            return self.name(line)
        col, row = _split(p.coords[self.k + shift] if 0 <= self.k + shift < len(p.coords)
                          else _beyond(p, self.k + shift))
        ref = f"{col}${row}" if p.orient == "h" else f"${col}{row}"
        return self._prefix(p) + ref

    def row(self, line: str) -> str:
        p = self.plan.lines[line]
        if p.orient == "s":
            return self.name(line)
        return f"{_abs(p.sheet, p.coords[0])}:{_abs(p.sheet, p.coords[-1]).split('!')[1]}"

    def position(self) -> str:
        p = self.here
        col, row = _split(p.coords[self.k])
        first_col, first_row = _split(p.coords[0])
        if p.orient == "h":
            before = _col(_column_index(first_col) - 1)
            prev_col = _col(_column_index(col) - 1)
            return f"COLUMNS(${before}${row}:{prev_col}${row})"
        return f"ROWS(${col}${first_row - 1}:${col}{row - 1})"

    def running(self, line: str, function: str) -> str:
        p = self.plan.lines[line]
        first_col, row = _split(p.coords[0])
        col, _ = _split(p.coords[self.k])
        return f"{function}({self._prefix(p)}${first_col}${row}:{col}${row})"

    def name(self, line: str) -> str:
        p = self.plan.lines[line]
        if p.line.defined_name:
            return line
        return _abs(p.sheet, p.coords[0])

    def const(self, name: str) -> str:
        if name.startswith(("low_", "high_")):
            p = self.plan.lines[f"check_in_{name.split('_', 1)[1]}"]
            _, row = _split(p.coords[0])
            return f"${'C' if name.startswith('low_') else 'D'}${row}"
        return f"k_{name}"

    def at(self, line: str, index: int) -> str:
        p = self.plan.lines[line]
        return _abs(p.sheet, p.coords[index]) if p.sheet != self.here.sheet else \
            _abs(p.sheet, p.coords[index]).split("!")[1]

    def block(self, lines: tuple[str, ...]) -> str:
        cells = [_split(self.plan.lines[n].coords[0]) for n in lines]
        sheet = self.plan.lines[lines[0]].sheet
        cols = [_column_index(c) for c, _ in cells]
        rows = [r for _, r in cells]
        first = f"${_col(min(cols))}${min(rows)}"
        last = f"${_col(max(cols))}${max(rows)}"
        return ("" if sheet == self.here.sheet else f"{sheet}!") + f"{first}:{last}"


def _beyond(p: Placement, k: int) -> str:
    """The cell one step past either end of a table line (empty in the layout)."""
    col, row = _split(p.coords[0] if k < 0 else p.coords[-1])
    step = -1 if k < 0 else 1
    if p.orient == "h":
        return f"{_col(_column_index(col) + step)}{row}"
    return f"{col}{row + step}"


class _Gaps(_Context):
    """Renders a formula once for every position of a line: a reference that moves with the
    position is left as a numbered gap (``\0n\0``), which :func:`formula_texts` fills per cell."""

    def __init__(self, plan: Plan, here: Placement):
        super().__init__(plan, here, 0)
        self.gaps: list[tuple] = []

    def _gap(self, method, *args) -> str:  # type: ignore[no-untyped-def]
        self.gaps.append((method, args))
        return f"\0{len(self.gaps) - 1}\0"

    def cell(self, line: str, shift: int) -> str:
        if self.plan.lines[line].orient == "s":
            return self.name(line)
        return self._gap(_Context.cell, line, shift)

    def position(self) -> str:
        return self._gap(_Context.position)

    def running(self, line: str, function: str) -> str:
        return self._gap(_Context.running, line, function)


def formula_texts(plan: Plan, p: Placement) -> list[str | None]:
    """The formula of each position of a placed line, from its declaration (``None`` where the
    line leaves its first cell to the layout).

    A line's formula is rendered once; the references that move along the line are then
    written into it position by position, as a person filling the formula right would.
    """
    ln = p.line
    shapes: dict[int, list] = {}

    def shape(body) -> list:  # type: ignore[no-untyped-def]
        key = id(body)
        if key not in shapes:
            gaps = _Gaps(plan, p)
            text = excel(body, gaps)
            t = ln.table
            if t is not None and t.guard is not None:
                text = f'IF({excel(t.guard, gaps)},{text},"")'
            assert text.count("\0") == 2 * len(gaps.gaps), text  # no other NUL in a formula
            pieces = ("=" + text).split("\0")
            shapes[key] = [pieces[0::2], [gaps.gaps[int(i)] for i in pieces[1::2]]]
        return shapes[key]

    out: list[str | None] = []
    for k in range(len(p.coords)):
        if k == 0 and ln.skip_first:
            out.append(None)
            continue
        fixed, gaps = shape(ln.first if (k == 0 and ln.first is not None) else ln.formula)
        if not gaps:
            out.append(fixed[0])
            continue
        here = _Context(plan, p, k)
        filled = [method(here, *args) for method, args in gaps]
        text = [fixed[0]]
        for gap, after in zip(filled, fixed[1:], strict=True):
            text += (gap, after)
        out.append("".join(text))
    return out


class _Builder:
    """Places lines, inputs and echoes on the sheets and records them in the plan."""

    def __init__(self, wb: Workbook):
        self.wb = wb
        self.plan = Plan()
        self.styles: list[tuple[Worksheet, str, str, object]] = []
        self._styled: dict[tuple[str, int], tuple[object, object]] = {}

    def name(self, name: str, ws: Worksheet, ref: str) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]*_[a-z0-9_]+", name):
            raise ValueError(f"not a safe defined name: {name}")
        fixed = ":".join(absolute(cell) for cell in ref.split(":"))  # a cell or a range
        self.wb.defined_names[name] = DefinedName(name, attr_text=f"{ws.title}!{fixed}")

    def _style(self, ws: Worksheet, coord: str, kind: str, font) -> None:
        cell = _cell(ws, coord)
        # Tens of thousands of cells share a handful of styles: the first cell of each is
        # styled through openpyxl (which registers the style's parts), the others copy its
        # style indices.
        key = (kind, id(font))
        known = self._styled.get(key)
        if known is not None:
            cell._style = copy.copy(known[1])
            return
        cell.number_format = st.number_format(kind)
        cell.font = font
        cell.protection = st.LOCKED
        if kind not in ("text", "flag_text"):
            cell.alignment = st.RIGHT
        self._styled[key] = (font, copy.copy(cell._style))  # the font kept: its id stays its own

    def scalar(self, ws: Worksheet, coord: str, line: Line, font=st.CALC_FONT,
               kind: str | None = None) -> None:
        self._place(Placement(line, ws.title, [coord], "s"))
        self._style(ws, coord, kind or line.kind, font)
        if line.defined_name:
            self.name(line.name, ws, coord)

    def along(self, ws: Worksheet, row: int, first_col: int, line: Line,
              font=st.CALC_FONT) -> None:
        self._place(self._row(ws, row, first_col, line, font))
        self.plan.rows[line.name] = row

    def again(self, ws: Worksheet, row: int, first_col: int, line: Line,
              font=st.CALC_FONT) -> None:
        """A table line shown again along ``row``: each cell reads the line's own cell at its
        position, wherever the line is placed (before or after; :meth:`render` writes them)."""
        self.plan.copies[copy_key(line.name, ws.title)] = self._row(ws, row, first_col, line,
                                                                    font)

    def _row(self, ws: Worksheet, row: int, first_col: int, line: Line, font) -> Placement:
        """A table line's cells along ``row`` from ``first_col``, styled (its first one left to
        the layout where the line skips it)."""
        t = line.table
        assert t is not None
        coords = [f"{_col(first_col + k)}{row}" for k in range(t.length)]
        for k, coord in enumerate(coords):
            if not (k == 0 and line.skip_first):
                self._style(ws, coord, line.kind, font)
        return Placement(line, ws.title, coords, "h")

    def _place(self, placement: Placement) -> None:
        """Record where a line's formulas are: once (a second place would leave the first
        one's cells without formulas; :meth:`again` shows a line twice)."""
        name = placement.line.name
        assert name not in self.plan.lines, f"{name} placed twice: show it again with again()"
        self.plan.lines[name] = placement

    def down(self, ws: Worksheet, col: int, first_row: int, line: Line,
             font=st.CALC_FONT) -> None:
        t = line.table
        assert t is not None
        coords = [f"{_col(col)}{first_row + k}" for k in range(t.length)]
        self._place(Placement(line, ws.title, coords, "v"))
        for coord in coords:
            self._style(ws, coord, line.kind, font)

    def echo(self, ws: Worksheet, coord: str, source: str, kind: str, font=st.CALC_FONT) -> None:
        """A cell that shows a line (by name) or an input (``in_<name>``) as it is."""
        self.plan.echoes.append((ws.title, coord, source))
        self._style(ws, coord, kind, font)

    def unit(self, ws: Worksheet, row: int, col: int, unit: str) -> None:
        """A unit cell: a money unit in the site's currency (``USD/Mtok``, a formula reading
        in_currency through its line on Capacity, methodology §10.7), any other unit as text."""
        if unit.startswith("money"):
            self.echo(ws, f"{_col(col)}{row}", om.unit_name(unit), "text", font=st.NOTE_FONT)
        else:
            ws.cell(row, col, unit).font = st.NOTE_FONT

    def render(self) -> None:
        """Write every placed line's formulas, every copy's and every echo (after all are
        placed)."""
        for p in self.plan.lines.values():
            ws = self.wb[p.sheet]
            for coord, text in zip(p.coords, formula_texts(self.plan, p), strict=True):
                if text is not None:
                    _cell(ws, coord).value = text
        for copy_of in self.plan.copies.values():
            home = self.plan.lines[copy_of.line.name]
            ws = self.wb[copy_of.sheet]
            for k, coord in enumerate(copy_of.coords):
                if not (k == 0 and copy_of.line.skip_first):
                    _cell(ws, coord).value = f"={_abs(home.sheet, home.coords[k])}"
        for sheet, coord, source in self.plan.echoes:
            ref = source if source.startswith("in_") else _Context(
                self.plan, self.plan.lines[source], 0).name(source)
            self.wb[sheet][coord].value = f"={ref}"




def _protect(ws: Worksheet) -> None:
    # No password: the protection stops accidental overwrites, it is not a security measure.
    ws.protection.sheet = True
    ws.protection.formatColumns = False
    ws.protection.formatRows = False
