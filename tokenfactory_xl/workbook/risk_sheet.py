"""The Risk sheet of the TFOM workbook drawn: its titles, headers, number formats, the stale
rule's colours, the tornado and the NPV histogram (methodology §8).

Where each figure goes and what it shows (the tornado, the Monte Carlo, "what must be true",
the copy of the inputs and the status formulas) is :mod:`.risk_values`'s; this module lays the
sheet out around them with openpyxl, once, when the workbook is built.
"""

from __future__ import annotations

from collections.abc import Callable

from openpyxl.chart import BarChart, Reference
from openpyxl.chart.series import SeriesLabel
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.worksheet.worksheet import Worksheet

from ..core.catalogue import BY_NAME
from ..files.a1 import column_index
from ..tfom.inputs import SiteInputs
from ..tfom.risk import RISK_OUTPUTS, TORNADO_DRIVERS
from . import style as st
from .risk_values import (
    BINS,
    CENTRE_ROW,
    CURRENT,
    DRAWS,
    FIRST_BIN,
    FIRST_DRIVER,
    FIRST_FIGURE,
    FIRST_MUST,
    FIRST_SNAP,
    HIST_HEADER,
    LAST_MUST,
    LAST_ROW,
    LAST_SNAP,
    MUST_COLUMNS,
    MUST_HEADER,
    MUST_TOP,
    RISK_SHEET,
    RISK_TOP,
    SEED_CELL,
    SNAP_FLAG,
    SNAP_HEADER,
    SNAP_LABEL,
    SNAP_ROWS,
    SNAP_VALUES,
    STATUS,
    TORNADO_HEADER,
    Figures,
    risk_cell_values,
    status_formula,
)

_RISK_LABELS = {"npv_p10": "NPV P10", "npv_p50": "NPV P50 (median)", "npv_p90": "NPV P90",
                "npv_mean": "NPV mean", "prob_npv_negative": "Probability the NPV is negative",
                "irr_p50": "IRR P50 (median; none ranks lowest)"}
_RISK_KINDS = {"npv_p10": "money", "npv_p50": "money", "npv_p90": "money", "npv_mean": "money",
               "prob_npv_negative": "fraction", "irr_p50": "fraction"}


def _kinds() -> dict[str, str]:
    """The number format kind of each value cell."""
    kinds = {DRAWS: "integer", SEED_CELL: "seed", f"E{CENTRE_ROW}": "money"}
    for i in range(len(TORNADO_DRIVERS)):
        row = FIRST_DRIVER + i
        kinds |= {f"A{row}": "text", f"B{row}": "text", f"C{row}": "number",
                  f"D{row}": "number"}
        kinds |= {f"{c}{row}": "money" for c in "EFGHI"}
    for i, name in enumerate(RISK_OUTPUTS):
        kinds[f"B{FIRST_FIGURE + i}"] = _RISK_KINDS[name]
    for i in range(BINS):
        row = FIRST_BIN + i
        kinds |= {f"A{row}": "money", f"B{row}": "money", f"C{row}": "integer"}
    for i, name in enumerate(TORNADO_DRIVERS):
        row, kind = FIRST_MUST + i, _value_kind(name)
        kinds |= {f"A{row}": "text", f"B{row}": "text", f"C{row}": kind, f"D{row}": kind,
                  f"E{row}": "money", f"F{row}": "text"}
    return kinds


def _value_kind(name: str) -> str:
    """How a driver's value shows: a fraction as a percentage, money with its digits."""
    spec = BY_NAME[name]
    if spec.kind == "fraction":
        return "fraction2"
    if spec.unit in ("money", "money/GPU", "money/month"):
        return "money"
    return "price" if spec.unit.startswith("money") else "number"


# -- the sheet ------------------------------------------------------------------------------------
def build_risk_sheet(ws: Worksheet, inputs: SiteInputs, figures: Figures | None,
          name: Callable[[str, Worksheet, str], None]) -> None:
    """Lay out the sheet with ``figures`` (or blanks) and the copy of ``inputs``; ``name`` adds a
    defined name (``name(defined_name, ws, ref)``)."""
    _title, _header, _section, _print_setup = st.title, st.header, st.section, st.print_setup
    _title(ws, RISK_SHEET, "Tornado and Monte Carlo of the live scenario's project NPV "
           "(methodology §8): values computed by tokenfactory_xl for the inputs copied in "
           "columns U–AC, not live formulas. When an input changes, the status says STALE.")
    ws["A4"] = "Status"
    ws["A4"].font = st.SECTION_FONT
    ws[STATUS] = status_formula()
    ws["A5"] = "Draws"
    ws["C5"] = "Seed"
    ws["C5"].alignment = st.INDENT  # after the draws' count, which stands right
    for coord in (STATUS, DRAWS, SEED_CELL):
        ws[coord].protection = st.LOCKED
    red, green = st.CHECK_BAD_FONT, st.CHECK_OK_FONT
    ws.conditional_formatting.add(STATUS, CellIsRule(operator="equal", formula=[f'"{CURRENT}"'],
                                                     font=green, fill=st.CHECK_OK_FILL))
    ws.conditional_formatting.add(STATUS, FormulaRule(formula=[f'LEFT({STATUS},5)="STALE"'],
                                                      font=red, fill=st.CHECK_BAD_FILL))

    _section(ws, TORNADO_HEADER - 1, "Tornado: the NPV at a low and a high value of each "
             "driver, largest swing first", 9)
    _header(ws, TORNADO_HEADER, ["Driver", "Name", "Low", "High", "NPV at low", "NPV at high",
                                 "Swing", "Low − centre", "High − centre"])
    ws[f"A{CENTRE_ROW}"] = "NPV as it is (the centre)"
    ws[f"A{CENTRE_ROW}"].font = st.TOTAL_FONT
    _section(ws, RISK_TOP, "Monte Carlo: draws of the first nine drivers, each triangular "
             "around its live value (its range: the inputs range_low_/range_high_)", 9)
    for i, out in enumerate(RISK_OUTPUTS):
        ws.cell(FIRST_FIGURE + i, 1, _RISK_LABELS[out])
        ws.cell(FIRST_FIGURE + i, 3, f"risk_{out}").font = st.NAME_FONT
        name(f"risk_{out}", ws, f"B{FIRST_FIGURE + i}")
    _header(ws, HIST_HEADER, ["NPV from", "NPV to", "Draws"])
    _section(ws, MUST_TOP, "What must be true: the value of each driver at which the live NPV "
             "is 0, every other input as it is (tokenfactory-xl solve --for DRIVER --target "
             "npv=0)", 9)
    _header(ws, MUST_HEADER, ["Driver", "Name", "Now", "At NPV 0", "NPV there", "Found"])

    for coord, value in risk_cell_values(inputs, figures).items():
        if coord in (STATUS,) or coord.startswith(SNAP_FLAG) and coord[len(SNAP_FLAG):].isdigit():
            continue
        cell = ws[coord]
        cell.value = value
        if isinstance(value, str):
            cell.data_type = "s"  # a site's text is never a formula
    for coord, kind in _kinds().items():
        ws[coord].number_format = st.number_format(kind)
        ws[coord].protection = st.LOCKED
        if kind != "text":
            ws[coord].alignment = st.RIGHT
    for row in range(FIRST_MUST, LAST_MUST + 1):  # what was found, after the NPV there
        ws[f"{MUST_COLUMNS[-1]}{row}"].alignment = st.INDENT

    # every label text no reader takes for a number (a header "3" is read as 3)
    _header(ws, SNAP_HEADER, ["Computed for these inputs", "Value · Base / cohort 2",
                              "Optimised / cohort 3", "Downside / cohort 4", "Cohort 5",
                              "Cohort 6", "Cohort 7", "Cohort 8", "Same today"],
            first_col=column_index(SNAP_LABEL))
    for r in SNAP_ROWS:
        ws[f"{SNAP_LABEL}{r.row}"] = r.label
        ws[r.flag] = r.formula()
        ws[r.flag].alignment = st.CENTER
        for coord in r.coords:
            ws[coord].font = st.NOTE_FONT
    ws.conditional_formatting.add(f"{SNAP_FLAG}{FIRST_SNAP}:{SNAP_FLAG}{LAST_SNAP}",
                                  CellIsRule(operator="equal", formula=["0"], font=red,
                                             fill=st.CHECK_BAD_FILL))

    _charts(ws)
    widths = {"A": 34, "B": 24, "C": 12, "D": 12, "E": 15, "F": 15, "G": 15, "H": 15, "I": 15,
              "J": 3, SNAP_LABEL: 44, SNAP_FLAG: 11} | {c: 12 for c in SNAP_VALUES}
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A6"
    _print_setup(ws, fit_height=1)
    ws.print_area = f"A1:S{LAST_MUST + 1}"


def tornado_chart(ws: Worksheet) -> BarChart:
    """The tornado drawn from the Risk sheet ``ws``'s table (placed on the Risk sheet, and on the
    Sensitivity sheet, where a reader looks for what moves the NPV)."""
    first, last = FIRST_DRIVER, FIRST_DRIVER + len(TORNADO_DRIVERS) - 1
    chart = BarChart()
    chart.type = "bar"
    chart.grouping = "clustered"
    chart.overlap = 100  # each driver's two bars on one line, left and right of the centre
    chart.gapWidth = 40
    chart.title = "Tornado: change of the NPV from the centre"
    chart.x_axis.scaling.orientation = "maxMin"  # the largest swing on top, as in the table
    chart.y_axis.number_format = "#,##0"
    chart.y_axis.title = "NPV at the driver's value − NPV as it is"
    chart.x_axis.tickLblPos = "low"  # the driver names at the left, clear of the bars
    for col, title in ((8, "Low − centre"), (9, "High − centre")):
        # the values of the drivers' rows only (the centre row between header and drivers
        # would shift every bar against its driver's name)
        chart.add_data(Reference(ws, min_col=col, min_row=first, max_row=last))
        chart.series[-1].tx = SeriesLabel(v=title)
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    chart.height, chart.width = 10.5, 17  # tall enough to name every driver
    return chart


def _charts(ws: Worksheet) -> None:
    ws.add_chart(tornado_chart(ws), "K4")

    hist = BarChart()
    hist.type = "col"
    hist.gapWidth = 10
    hist.title = "NPV of the draws"
    hist.y_axis.title = "draws"
    hist.x_axis.title = "NPV from (millions)"
    hist.x_axis.number_format = '#,##0.0,,'
    hist.x_axis.numFmt.sourceLinked = False
    hist.legend = None
    hist.add_data(Reference(ws, min_col=3, min_row=HIST_HEADER, max_row=LAST_ROW),
                  titles_from_data=True)
    hist.set_categories(Reference(ws, min_col=1, min_row=FIRST_BIN, max_row=LAST_ROW))
    hist.height, hist.width = 9, 17
    ws.add_chart(hist, f"K{RISK_TOP + 6}")
