"""Where things are in the TFOM workbook, known without drawing it: the sheets' names and order,
the Timeline's month columns, and the :class:`Plan` in which the sheet builders record where
each input, line and echo went.

The workbook is drawn once with openpyxl (:mod:`.build`, :mod:`.layout` and the sheet modules);
a site's workbook is that drawing filled with the site's values (:mod:`.values`,
:mod:`.risk_values`, :mod:`.stencil`, :mod:`.charts`), which needs these facts and no openpyxl.
So a ``template`` or a ``batch`` that finds the drawing kept between runs
(:mod:`tokenfactory_xl.files.build_cache`) writes a site's workbook without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..files.a1 import column_letter, split_coord
from ..tfom import operating_model as om
from ..tfom.formula import Line
from ..tfom.operating_model import MAX_MONTHS

# -- the sheets ---------------------------------------------------------------------------------
#: The monthly timeline's sheet (its month columns are below).
TIMELINE_SHEET = "Timeline"
#: The sheet of the IRR searches' working (grid, brackets, Newton's steps).
IRR_SHEET = "IRR"
#: The sheet of the tornado and the Monte Carlo (:mod:`.risk_values`).
RISK_SHEET = "Risk"
#: The sheet of measured TEF beside the plan's (:mod:`.actuals_sheet`).
ACTUALS_SHEET = "Actuals"

#: The tabs in order. The first two answer "what is it worth, and can we trust it": the Cover
#: shows the live scenario's NPV, IRR and payback beside the master check, the Dashboard the
#: headline figures and charts; the workings follow in the order the model runs.
SHEETS: tuple[str, ...] = (
    "Cover", "Dashboard", "Inputs", "Capacity", TIMELINE_SHEET, "Years", "Statements", "Returns",
    "Scenarios", IRR_SHEET, "Sensitivity", RISK_SHEET, ACTUALS_SHEET, "Checks",
)


# -- the months' columns (Timeline, and the charts that read it) ------------------------------
MONTH0_COL = 4  # column D holds month 0 (the investment)
FIRST_MONTH_COL = MONTH0_COL + 1
LAST_COL = MONTH0_COL + MAX_MONTHS
MONTH_COLS: tuple[str, ...] = tuple(column_letter(c) for c in range(FIRST_MONTH_COL, LAST_COL + 1))
ALL_COLS: tuple[str, ...] = (column_letter(MONTH0_COL),) + MONTH_COLS


def timeline_cells(sheet: str, cells: tuple[str, ...], horizon: int) -> tuple[str, ...]:
    """The cells of a chart's reference a site with ``horizon`` months shows: a Timeline row
    from month 1 stops at the horizon; any other reference is kept whole."""
    if sheet != TIMELINE_SHEET or len(cells) < 2:
        return cells
    split = [split_coord(c) for c in cells]
    if split[0][0] != column_letter(FIRST_MONTH_COL) or len({row for _, row in split}) != 1:
        return cells
    return cells[:horizon]


# -- the plan: where each line lives ------------------------------------------------------------
@dataclass
class Placement:
    """Where one line's cells are: a scalar's cell, or a table line's cells by position."""

    line: Line
    sheet: str
    coords: list[str]  # one per position (a scalar: one)
    orient: str  # "s" scalar, "h" along a row, "v" down a column

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # kept between runs (:mod:`build_cache`) by the line's name: a plan read back holds the
        # model's own declarations, not copies of them; the coordinates as one text (a plan
        # has some 57,000 of them: one split instead of an object each for pickle to read)
        return _placement, (self.line.name, self.sheet, " ".join(self.coords), self.orient)


def _placement(line: str, sheet: str, coords: str, orient: str) -> Placement:
    return Placement(om.BY_LINE[line], sheet, coords.split(" ") if coords else [], orient)


@dataclass
class Plan:
    """Where every input, formula cell and echo is (the sheet builders record it as they draw
    the workbook: :class:`~tokenfactory_xl.workbook.layout._Builder`).

    ``lines``: line name → :class:`Placement`, where each line's formulas are; ``copies``:
    :data:`COPY` key → :class:`Placement`, a table line shown again on another sheet, each cell
    reading the line's cell at its position (the Years sheet's calendar years, whose line the
    Statements sheet holds); ``inputs``: (sheet, coordinate, input name, scenario index);
    ``echoes``: (sheet, coordinate, line name or ``in_<input>``), cells that show another line
    or an input as it is.
    """

    lines: dict[str, Placement] = field(default_factory=dict)
    copies: dict[str, Placement] = field(default_factory=dict)
    inputs: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    echoes: list[tuple[str, str, str]] = field(default_factory=list)
    #: (sheet, coordinate, input name): each input's source note, in the Inputs sheet's notes
    #: column (:data:`~tokenfactory_xl.workbook.inputs_sheet.NOTE_COLUMN`)
    notes: list[tuple[str, str, str]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # row of a line or constant
    #: the Checks sheet's cell saying whether the Risk sheet's figures are current
    risk_check: tuple[str, str] = ("", "")
    #: the Cover's cell holding the date the workbook was built
    #: (:func:`~tokenfactory_xl.workbook.values.build_date`)
    build_date: tuple[str, str] = ("", "")

    def placements(self) -> list[tuple[str, Placement]]:
        """Every placement with its key: a line's by its name, a copy's by :func:`copy_key`."""
        return [*self.lines.items(), *self.copies.items()]

    def placement(self, key: str) -> Placement:
        """The placement :meth:`placements` names ``key``."""
        return self.lines[key] if key in self.lines else self.copies[key]


def copy_key(line: str, sheet: str) -> str:
    """The key of a copy of ``line`` on ``sheet`` (a line name holds no ``@``)."""
    return f"{line}@{sheet}"
