"""How the TFOM workbook looks: cell styles, number formats, the colour legend and the sheets'
layout helpers.

A finance reviewer reads a model by its colours before its formulas: blue on pale yellow is a
value someone typed (an input), purple on lavender a fixed constant, black a calculation, and
green or red a check. Every sheet of the workbook takes its styles from here, so the legend on
the Cover is true everywhere. Number formats follow the display kinds of the operating model's
outputs (money with thousands separators, fractions as percentages, dates as month ends).
"""

from __future__ import annotations

from collections.abc import Sequence

from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side
from openpyxl.worksheet.properties import PageSetupProperties
from openpyxl.worksheet.worksheet import Worksheet

FONT_NAME = "Calibri"

INPUT_FONT = Font(name=FONT_NAME, color="0000FF")
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
CONSTANT_FONT = Font(name=FONT_NAME, color="7030A0")
CONSTANT_FILL = PatternFill("solid", fgColor="EDE7F6")
CALC_FONT = Font(name=FONT_NAME, color="000000")
LINK_FONT = Font(name=FONT_NAME, color="006100")
TOTAL_FONT = Font(name=FONT_NAME, bold=True)
TITLE_FONT = Font(name=FONT_NAME, size=18, bold=True, color="1F3864")
SUBTITLE_FONT = Font(name=FONT_NAME, size=11, italic=True, color="595959")
HEADER_FONT = Font(name=FONT_NAME, bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="1F3864")
SECTION_FONT = Font(name=FONT_NAME, bold=True, color="1F3864")
SECTION_FILL = PatternFill("solid", fgColor="D9E1F2")
NOTE_FONT = Font(name=FONT_NAME, size=9, color="595959")
NAME_FONT = Font(name="Consolas", size=9, color="808080")
KPI_LABEL_FONT = Font(name=FONT_NAME, size=10, color="595959")
KPI_VALUE_FONT = Font(name=FONT_NAME, size=16, bold=True, color="1F3864")
CHECK_OK_FILL = PatternFill("solid", fgColor="C6EFCE")
CHECK_OK_FONT = Font(name=FONT_NAME, bold=True, color="006100")
CHECK_BAD_FILL = PatternFill("solid", fgColor="FFC7CE")
CHECK_BAD_FONT = Font(name=FONT_NAME, bold=True, color="9C0006")

_THIN = Side(style="thin", color="BFBFBF")
BOX = Border(left=_THIN, right=_THIN, top=_THIN, bottom=_THIN)
TOP_RULE = Border(top=Side(style="thin", color="1F3864"))

UNLOCKED = Protection(locked=False)
LOCKED = Protection(locked=True)
RIGHT = Alignment(horizontal="right")
CENTER = Alignment(horizontal="center", vertical="center")
WRAP = Alignment(wrap_text=True, vertical="top")
#: Wrapped text ending on its row's last line, level with the label beside it.
WRAP_BESIDE = Alignment(wrap_text=True, vertical="bottom")
#: Text that follows a column of numbers aligned right: one indent apart, not touching them.
INDENT = Alignment(horizontal="left", indent=1)

#: Number formats by display kind (the ``kind`` of an operating-model output).
NUMBER_FORMATS: dict[str, str] = {
    "money": '#,##0;[Red]-#,##0',
    "price": '#,##0.0000;[Red]-#,##0.0000',
    "fraction": '0.0%;[Red]-0.0%',
    "fraction2": '0.00%;[Red]-0.00%',
    "tokens": '#,##0',
    "mtokens": '#,##0,,',  # tokens, shown in millions so that a month fits its column
    "gpus": '#,##0.0',
    "months": '#,##0.0',
    "ratio": '0.0%;[Red]-0.0%',
    "number": '#,##0.00',
    "integer": '#,##0',
    "date": 'yyyy-mm-dd',
    "month": 'mmm yyyy',
    "rate": '0.0000%',
    "factor": '0.000000',
    "flag": '0',
    "text": '@',
    "constant": 'General',
}


def number_format(kind: str) -> str:
    """The number format for a display kind (``General`` for an unknown one)."""
    return NUMBER_FORMATS.get(kind, "General")


#: The colour legend the Cover shows: (what, font, fill).
LEGEND: tuple[tuple[str, Font, PatternFill | None], ...] = (
    ("Input: typed by you (Inputs sheet only)", INPUT_FONT, INPUT_FILL),
    ("Constant: fixed by definition, named k_…", CONSTANT_FONT, CONSTANT_FILL),
    ("Calculation: a formula, locked", CALC_FONT, None),
    ("Check: OK when the model is sound", CHECK_OK_FONT, CHECK_OK_FILL),
)


# -- sheet layout ------------------------------------------------------------------------------
def title(ws: Worksheet, title: str, subtitle: str | None = None) -> None:
    ws["A1"] = title
    ws["A1"].font = TITLE_FONT
    if subtitle:
        ws["A2"] = subtitle
        ws["A2"].font = SUBTITLE_FONT
    ws.sheet_view.showGridLines = False


def header(ws: Worksheet, row: int, texts: Sequence[str], first_col: int = 1) -> None:
    for i, text in enumerate(texts):
        cell = ws.cell(row, first_col + i, text)
        cell.font, cell.fill = HEADER_FONT, HEADER_FILL
        cell.alignment = _CENTER_WRAP


_CENTER_WRAP = Alignment(horizontal="center", vertical="center", wrap_text=True)


def section(ws: Worksheet, row: int, text: str, width: int) -> None:
    for c in range(1, width + 1):
        ws.cell(row, c).fill = SECTION_FILL
    ws.cell(row, 1, text).font = SECTION_FONT


def print_setup(ws: Worksheet, landscape: bool = True, fit_height: int = 0) -> None:
    ws.page_setup.orientation = "landscape" if landscape else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = fit_height
    ws.print_options.horizontalCentered = True
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5
    ws.oddFooter.center.text = "&A — page &P of &N"
    ws.oddFooter.center.size = 8


def status_format(ws: Worksheet, ref: str) -> None:
    """Colour the status cells ``ref``: green when one says OK, red when it says ERROR."""
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"OK"'],
                                                  fill=CHECK_OK_FILL, font=CHECK_OK_FONT))
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"ERROR"'],
                                                  fill=CHECK_BAD_FILL, font=CHECK_BAD_FONT))


#: The cell a sheet that prints nothing gives as its print area: the third row under a sheet's
#: title and subtitle, which every sheet leaves empty.
EMPTY_PRINT_CELL = "A3"


def print_nothing(ws: Worksheet) -> None:
    """Give ``ws`` no printed page: its print area is an empty cell, and a spreadsheet prints
    no empty page (the sheet stays on screen as it is)."""
    ws.print_area = EMPTY_PRINT_CELL
