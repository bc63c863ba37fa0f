"""How the TFOM workbook looks: cell styles, number formats and the colour legend.

A finance reviewer reads a model by its colours before its formulas: blue on pale yellow is a
value someone typed (an input), purple on lavender a fixed constant, black a calculation, and
green or red a check. Every sheet of the workbook takes its styles from here, so the legend on
the Cover is true everywhere. Number formats follow the display kinds of the operating model's
outputs (money with thousands separators, fractions as percentages, dates as month ends).
"""

from __future__ import annotations

from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side

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

#: Number formats by display kind (the ``kind`` of an operating-model output).
FORMATS: dict[str, str] = {
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
    return FORMATS.get(kind, "General")


#: The colour legend the Cover shows: (what, font, fill).
LEGEND: tuple[tuple[str, Font, PatternFill | None], ...] = (
    ("Input: typed by you (Inputs sheet only)", INPUT_FONT, INPUT_FILL),
    ("Constant: fixed by definition, named k_…", CONSTANT_FONT, CONSTANT_FILL),
    ("Calculation: a formula, locked", CALC_FONT, None),
    ("Check: OK when the model is sound", CHECK_OK_FONT, CHECK_OK_FILL),
)
