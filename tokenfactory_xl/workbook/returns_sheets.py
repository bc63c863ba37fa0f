"""The returns sheets of the TFOM workbook: Returns (the live scenario's summary outputs, each
named ``out_<name>``, and the yearly summary), Scenarios (Base, Optimised and Downside side by
side, Optimised − Base and its bridge with the waterfall chart), IRR (each IRR search's grid,
brackets and Newton's steps) and Sensitivity (the margin against utilisation, beside the Risk
sheet's tornado).
"""

from __future__ import annotations

from openpyxl.chart import BarChart, Reference, Series
from openpyxl.formatting.rule import CellIsRule
from openpyxl.worksheet.worksheet import Worksheet

from ..tfom import operating_model as om
from ..tfom.operating_model import OUTPUTS
from . import risk_sheet as workbook_risk
from . import style as st
from .layout import _Builder, _col

# -- Returns ----------------------------------------------------------------------------------
_RETURNS_EXTRAS = (
    ("tfi_now", "TFI now", "fraction", "fraction2"),
    ("revenue_per_gpu_hour", "Revenue per GPU-hour today (cohort 1)", "money/GPU-h", "price"),
    ("cash_cost_per_gpu_hour", "Cash cost per GPU-hour (cohort 1)", "money/GPU-h", "price"),
    ("total_capex", "CapEx, all cohorts", "money", "money"),
    ("total_cash_flow", "Σ cash flows, months 0…H (live scenario)", "money", "money"),
)


def build_returns_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Returns", "The summary outputs of the live scenario (methodology §7), each a "
             "defined name out_<name>; every scenario side by side on Scenarios.")
    st.header(ws, 4, ["Output", "Value", "Unit", "Name", "Definition"])
    row = 5
    for out in OUTPUTS:
        ws.cell(row, 1, out.label)
        kind = "fraction2" if out.kind == "fraction" else out.kind
        b.scalar(ws, f"B{row}", out.line, kind=kind)
        b.unit(ws, row, 3, out.unit)
        ws.cell(row, 4, f"out_{out.name}").font = st.NAME_FONT
        _definition(ws, row, out.note)
        b.plan.rows[f"out_{out.name}"] = row
        row += 1
    row += 1
    st.section(ws, row, "The site today", 5)
    row += 1
    for source, label, unit, kind in _RETURNS_EXTRAS:
        ws.cell(row, 1, label)
        b.echo(ws, f"B{row}", source, kind)
        b.unit(ws, row, 3, unit)
        row += 1
    row = _yearly_summary(b, ws, row + 1)
    for col, width in {"A": 34, "B": 20, "C": 14, "D": 30, "E": _DEFINITION_WIDTH,
                       "F": 17}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    st.print_setup(ws, fit_height=1)
    ws.print_area = f"A1:F{row}"


#: The Definition column's width, and the characters of its note font a line of it holds (a
#: few fewer than fit, whatever the font): a longer definition wraps onto more lines of its row
#: rather than running past the printed page.
_DEFINITION_WIDTH = 62
_DEFINITION_CHARS = 84
_NOTE_LINE_HEIGHT = 12  # points a line of the 9-point note font takes


def _definition(ws: Worksheet, row: int, note: str) -> None:
    """An output's definition in column E, wrapped within it, its row as tall as its lines."""
    cell = ws.cell(row, 5, note)
    cell.font = st.NOTE_FONT
    lines = -(-len(note) // _DEFINITION_CHARS)
    if lines > 1:
        cell.alignment = st.WRAP_BESIDE
        ws.row_dimensions[row].height = _NOTE_LINE_HEIGHT * lines + 3


def _yearly_summary(b: _Builder, ws: Worksheet, row: int) -> int:
    """Revenue, EBITDA, cash flow by year of the model, from ``row`` under the outputs (beside
    them, the page printed at half size); the row after it."""
    st.section(ws, row, "By year of the model", 6)
    ws.cell(row + 1, 1, "Year 1 is months 1–12; the cumulative cash flow includes the "
            "month-0 investment.").font = st.NOTE_FONT
    st.header(ws, row + 2, [ln.label for ln in om.YEARLY_LINES])
    ws.row_dimensions[row + 2].height = 30
    for i, line in enumerate(om.YEARLY_LINES):
        b.down(ws, 1 + i, row + 3, line)
    return row + 3 + om.YEARLY_LINES[0].table.length


# -- Scenarios: the three side by side, and the value of the optimisation programme ------------
SCENARIO_COLS = ("B", "C", "D")


def build_scenarios_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Scenarios", "Base, Optimised and Downside at once from the same inputs; "
             "Optimised − Base: the value of the optimisation programme, net of its cost.")
    st.header(ws, 4, ["Output"] + [sc.name for sc in om.SCENARIOS]
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
        b.unit(ws, row, 6, out.unit)
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
    st.section(ws, row, "Buy instead of optimise: the GPUs the Optimised TEF saves, the "
               "alternative to the programme (not a gain to add to the NPV uplift)", 7)
    row += 1
    for out in OUTPUTS:
        if out.name in om.BUY_INSTEAD:
            output_row(out, row)
            row += 1
    for col, width in {"A": 54, "B": 21, "C": 21, "D": 21, "E": 22, "F": 14, "G": 38}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    st.print_setup(ws, fit_height=1)
    ws.print_area = f"A1:G{row + 1}"


_BAR_LABELS = ("Base NPV", "+ TEF target", "+ sell-through target",
               "+ prices, demand, resale, shutdown", "+ programme cost", "Optimised NPV")


def _bridge_block(b: _Builder, ws: Worksheet, row: int) -> int:
    """Optimised − Base NPV in four steps (methodology §10.3), and its waterfall chart."""
    st.section(ws, row, "Optimised − Base NPV taken apart: each step is Base's inputs with more "
               "of Optimised's (live formulas: the bridge scenarios on Timeline)", 7)
    row += 1
    st.header(ws, row, ["Step", "NPV uplift", "", "", "", "Unit", "Name"])
    row += 1
    for line in om.BRIDGE_LINES:
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line, font=st.TOTAL_FONT)
        b.unit(ws, row, 6, line.unit)
        ws.cell(row, 7, line.name).font = st.NAME_FONT
        row += 1
    ws.cell(row, 1, "Sum of the steps = NPV: Optimised − Base").font = st.TOTAL_FONT
    b.echo(ws, f"B{row}", "out_uplift_npv", "money", font=st.TOTAL_FONT)
    row += 2
    st.header(ws, row, ["Waterfall bar"] + [ln.label for ln in om.BRIDGE_BAR_LINES])
    ws.row_dimensions[row].height = 30  # "Invisible base below 0" takes two lines
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
    chart.x_axis.tickLblPos = "low"  # the steps' names under the plot, clear of bars below 0
    chart.y_axis.delete = False
    chart.gapWidth = 50
    ws.add_chart(chart, f"A{last + 2}")
    return last + 2 + 19


# -- IRR: the searches of each scenario's project and equity IRR -------------------------------
IRR_GRID_TOP = 8


def build_irr_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "IRR", "Each IRR: the NPV on a grid of monthly rates, then Newton's steps, kept "
             "inside the brackets nearest 0 on either side; the root nearest 0 is the IRR.")
    for j, search in enumerate(om.IRR_SEARCHES):
        c0 = 1 + 7 * j
        ws.cell(4, c0, search.label).font = st.SECTION_FONT
        ws.cell(5, c0, "IRR, monthly")
        b.scalar(ws, f"{_col(c0 + 1)}5", search.result)
        st.header(ws, IRR_GRID_TOP - 1, [ln.label for ln in search.grid]
                  + [search.flow_months.label], first_col=c0)
        for i, line in enumerate(search.grid):
            b.down(ws, c0 + i, IRR_GRID_TOP, line)
        b.down(ws, c0 + len(search.grid), IRR_GRID_TOP, search.flow_months)
        r = IRR_GRID_TOP + om.N_IRR + 1
        for line in search.bracket:
            ws.cell(r, c0, line.label)
            b.scalar(ws, f"{_col(c0 + 4)}{r}", line)
            r += 1
        for side in ("above", "below"):
            r += 1
            lines = [ln for ln in search.steps if ln.name.endswith(f"_{side}_{search.tag}")
                     or f"_{side}_" in ln.name]
            st.header(ws, r, [f"{ln.label} ({side} 0)" for ln in lines], first_col=c0)
            for i, line in enumerate(lines):
                b.down(ws, c0 + i, r + 1, line)
            r += om.IRR_NEWTON_STEPS + 1
        for i in range(6):
            ws.column_dimensions[_col(c0 + i)].width = 15
        ws.column_dimensions[_col(c0 + 6)].width = 3
    st.print_setup(ws, fit_height=1)  # prints no page: UNPRINTED_SHEETS
    ws.freeze_panes = f"A{IRR_GRID_TOP}"


# -- Sensitivity ------------------------------------------------------------------------------
SENS_UTIL_FIRST = 7


def build_sensitivity_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Sensitivity", "How the margin of cohort 1's GPU-hour moves with utilisation "
             "(the TFI), at today's market price of the live scenario. Live formulas.")
    ws["A4"] = "Breakeven utilisation"
    b.echo(ws, "B4", "out_breakeven_util", "fraction2")
    ws["C4"] = "TFI now"
    ws["C4"].alignment = st.INDENT  # after the breakeven, which stands right
    b.echo(ws, "D4", "tfi_now", "fraction2")
    st.header(ws, SENS_UTIL_FIRST - 1, [ln.label for ln in om.UTIL_LINES])
    for i, line in enumerate(om.UTIL_LINES):
        b.down(ws, 1 + i, SENS_UTIL_FIRST, line)
    last = SENS_UTIL_FIRST + om.N_UTIL - 1
    red = st.Font(name=st.FONT_NAME, bold=True, color="9C0006")
    ws.conditional_formatting.add(
        f"C{SENS_UTIL_FIRST}:D{last}", CellIsRule(operator="notEqual", formula=['""'], font=red))
    ws.column_dimensions["A"].width = 22
    for c in ("B", "C", "D"):
        ws.column_dimensions[c].width = 16
    st.print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:D{last}"


def add_sensitivity_tornado(ws: Worksheet, risk_ws: Worksheet) -> None:
    """The tornado beside the utilisation margin: what moves the NPV, from the Risk sheet."""
    ws["F4"] = "What moves the NPV: the Risk sheet's tornado (see its status)"
    ws["F4"].font = st.SECTION_FONT
    ws.add_chart(workbook_risk.tornado_chart(risk_ws), "F5")
    st.print_setup(ws, landscape=True, fit_height=1)
    ws.print_area = f"A1:P{SENS_UTIL_FIRST + om.N_UTIL - 1}"
