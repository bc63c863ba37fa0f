"""The front of the TFOM workbook, what a reader sees first: the Cover (the live scenario's NPV,
IRR and payback, what each rests on, the versions and the build date, how to use the model),
the Dashboard (the headline figures and charts) and Checks (the integrity checks, the warnings
and the master check that the Cover and the Dashboard show).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from openpyxl.chart import BarChart, LineChart, Reference, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.drawing.line import LineProperties
from openpyxl.formatting.rule import CellIsRule
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..core.catalogue import BY_NAME
from ..tfom import operating_model as om
from ..tfom.operating_model import OUTPUTS
from . import risk_values as workbook_risk
from . import style as st
from .calculation_sheets import TIMELINE_ROWS, om_subtitle
from .layout import _Builder, _col
from .plan import FIRST_MONTH_COL, LAST_COL, TIMELINE_SHEET
from .returns_sheets import SENS_UTIL_FIRST

# -- Cover ------------------------------------------------------------------------------------
#: The version of the method (docs/methodology.md) the model implements, shown on the Cover.
SPEC_VERSION = 3


#: The fixed date of the workbook's document properties and the Cover's build date until a
#: workbook is filled (:func:`~.values.build_date`), so that the same inputs give the same bytes.
DOC_TIME = dt.datetime(2026, 1, 1)


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
#: The Cover's title, which is also the file's document title; every other sheet's page starts
#: with the sheet's own name.
COVER_TITLE = "Token Factory Operating Model (TFOM)"


def build_cover_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, COVER_TITLE)
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
    st.header(ws, COVER_FIRST - 1,
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
    st.status_format(ws, f"B{check}")
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
    st.print_setup(ws, landscape=False, fit_height=1)


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
    st.title(ws, "Dashboard")
    b.scalar(ws, "A2", om_subtitle("dashboard_subtitle"), font=st.SUBTITLE_FONT, kind="text")
    ws["A2"].alignment = st.Alignment(horizontal="left")
    ws["I1"] = "Master check"
    ws["I1"].font = st.KPI_LABEL_FONT
    ws["I1"].alignment = st.RIGHT
    b.echo(ws, "J1", "check_master", "text", font=st.CHECK_OK_FONT)
    ws["J1"].alignment = st.CENTER
    st.status_format(ws, "J1")
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
    tl = b.wb[TIMELINE_SHEET]
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
    st.print_setup(ws, fit_height=1)
    ws.page_setup.fitToHeight = 1


# -- Checks -----------------------------------------------------------------------------------
CHECK_FIRST = 7


def build_checks_sheet(b: _Builder, ws: Worksheet) -> None:
    st.title(ws, "Checks", "Integrity checks: every one must say OK. The master check is shown on "
             "the Cover and the Dashboard.")
    ws["A4"] = "Master check"
    ws["A4"].font = st.SECTION_FONT
    st.header(ws, CHECK_FIRST - 1, ["Check", "Status", "Low", "High"])
    # What a reviewer reads first, and prints: the model's integrity, the warnings and the Risk
    # sheet's status. The check of each input against its range follows, read on screen (the
    # master check includes every one of them).
    row = CHECK_FIRST
    st.section(ws, row, "Model integrity", 4)
    row += 1
    first = row
    for line in om.CROSS_CHECKS:
        ws.cell(row, 1, line.label)
        b.scalar(ws, f"B{row}", line)
        ws[f"B{row}"].alignment = st.CENTER
        row += 1
    row += 1
    row = _warnings_block(b, ws, row)
    st.section(ws, row - 1, "Computed by tokenfactory_xl (values, not formulas)", 4)
    ws.cell(row, 1, workbook_risk.CHECK_LABEL).alignment = st.WRAP
    ws.row_dimensions[row].height = 30
    ws[f"B{row}"] = workbook_risk.check_formula()
    ws[f"B{row}"].alignment = st.CENTER
    ws[f"B{row}"].protection = st.LOCKED
    b.plan.risk_check = (ws.title, f"B{row}")
    st.status_format(ws, f"B{row}")
    red = CellIsRule(operator="equal", formula=['"STALE"'], fill=st.CHECK_BAD_FILL,
                     font=st.CHECK_BAD_FONT)
    ws.conditional_formatting.add(f"B{row}", red)
    printed = row
    row += 2
    st.section(ws, row - 1, "Inputs within their allowed ranges (on screen; not printed)", 4)
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
        st.status_format(ws, ref)
    for col, width in {"A": 90, "B": 12, "C": 12, "D": 12}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = f"A{CHECK_FIRST}"
    st.print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:D{printed}"


def _warnings_block(b: _Builder, ws: Worksheet, row: int) -> int:
    """The warnings of methodology §10.5, one row a rule and a column a scenario (1 = it fires):
    apart from the checks, and never part of the master check."""
    st.section(ws, row - 1, "Warnings (not errors: they never turn the master check red)", 4)
    st.header(ws, row, ["Warning (1 = it applies)"] + [sc.name for sc in om.SCENARIOS])
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
