"""The TFOM workbook: the Token Factory Operating Model as a self-contained Excel file.

A finance team lives in a workbook, not in Python. :func:`build_workbook` writes the operating
model of TFOM-SPEC sections 1–4 and 7 as native Excel formulas, laid out the way financial
modellers expect (the FAST Standard): every input on the Inputs sheet, named ``in_<name>`` and
validated from the input catalogue; fixed constants in one labelled block, named ``k_<name>``;
one monthly timeline whose every row holds one formula copied across; the summary outputs of
section 7 named ``out_<name>``; a Checks sheet with one master check. It opens in Excel 2016+,
LibreOffice and Google Sheets with no Python and no macros.

The formulas reproduce :func:`tokenfactory_xl.operating_model.run`; :func:`cell_values` gives,
for every input and formula cell, the value the Python model computes for it
(:mod:`tokenfactory_xl.workbook_values`), which batch generation stores in each site's file.
The CLI commands ``template`` and ``render`` are in :mod:`tokenfactory_xl.workbook_cli`.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import os
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from openpyxl import Workbook
from openpyxl.chart import BarChart, LineChart, Reference, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.drawing.line import LineProperties
from openpyxl.formatting.rule import CellIsRule, ColorScaleRule, FormulaRule
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.properties import PageSetupProperties
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.writer.excel import ExcelWriter

from . import __version__
from . import workbook_style as st
from .catalogue import BY_NAME, INPUTS, Input
from .files import write_atomically
from .inputs import SiteInputs, default_inputs
from .operating_model import OUTPUTS, Result

SHEETS: tuple[str, ...] = (
    "Cover", "Inputs", "Capacity", "Timeline", "Returns", "Sensitivity", "Dashboard", "Checks",
)

#: The timeline always has this many month columns; a shorter horizon leaves the rest blank.
MAX_MONTHS = int(BY_NAME["horizon_months"].high)  # type: ignore[arg-type]
MONTH0_COL = 4  # column D holds month 0 (the investment)
FIRST_MONTH_COL = MONTH0_COL + 1
LAST_COL = MONTH0_COL + MAX_MONTHS

#: Constants: fixed by definition, not assumptions (FAST: no numbers hidden in formulas).
#: (name, label, unit, value or values, note).
CONSTANTS: tuple[tuple[str, str, str, object, str], ...] = (
    ("k_hours_per_year", "Hours in a year", "hours", 8_760, "365 days × 24 (TFOM-SPEC §2)"),
    ("k_hours_per_month", "Average hours in a month", "hours", 730,
     "8,760 ÷ 12: spreads the fixed opex over GPU-hours (§7)"),
    ("k_months_per_quarter", "Months in a quarter", "months", 3,
     "the price declines once per quarter, spread over its months (§3)"),
    ("k_ttft_percentile", "Percentile of the TTFT p99", "fraction", 0.99,
     "z = NORM.S.INV(0.99) = 2.326 converts p99 ÷ p50 into the log-normal σ (§1)"),
    ("k_util_step", "Sensitivity: utilisation step", "fraction", 0.05,
     "margin against utilisation from 5% to 100%"),
    ("k_check_tolerance", "Checks: relative tolerance", "fraction", 1e-9,
     "how closely two ways of computing a total must agree"),
    ("k_sens_tef_targets", "Sensitivity: TEF targets", "fraction",
     (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), "rows of the NPV grid"),
    ("k_irr_grid", "IRR search: monthly rates that bracket the IRR", "fraction",
     (-0.9999, -0.999, -0.99, -0.95, -0.9, -0.8, -0.6, -0.4, -0.3, -0.2, -0.15, -0.1, -0.07,
      -0.05, -0.03, -0.02, -0.01, -0.005, -0.002, -0.001, -0.0001, 0.0, 0.0001, 0.001, 0.002,
      0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0),
     "Returns: the NPV changes sign between two of them around each IRR"),
    ("k_sens_declines", "Sensitivity: price declines per quarter", "fraction",
     (0.0, 0.05, 0.10, 0.15, 0.25, 0.47), "columns of the NPV grid (0.47: seed 001's Red Queen)"),
)
CONSTANT_VALUES: dict[str, object] = {c[0]: c[3] for c in CONSTANTS}

_NONE = '"none"'  # what a cell shows where the spec says "none"


# -- the plan: where each value lives ------------------------------------------------------------
@dataclass
class Plan:
    """Where every input and formula cell is, and which model value it shows.

    ``scalars``: (sheet, coordinate, key); ``vectors``: (sheet, coordinates, key, pad) where
    ``pad`` is ``"all"`` (one value per coordinate), ``"h1"`` (months 1…H, then ``""``) or
    ``"h0"`` (months 0…H, then ``""``); ``inputs``: (sheet, coordinate, name, scenario index).
    """

    scalars: list[tuple[str, str, str]] = field(default_factory=list)
    vectors: list[tuple[str, list[str], str, str]] = field(default_factory=list)
    inputs: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # Timeline/Sensitivity row of a key


class _Builder:
    """Writes cells and records them in the plan."""

    def __init__(self, wb: Workbook):
        self.wb = wb
        self.plan = Plan()

    def name(self, name: str, ws: Worksheet, ref: str) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]*_[a-z0-9_]+", name):
            raise ValueError(f"not a safe defined name: {name}")
        absolute = re.sub(r"([A-Z]+)(\d+)", r"$\1$\2", ref)
        self.wb.defined_names[name] = DefinedName(name, attr_text=f"{ws.title}!{absolute}")

    def formula(self, ws: Worksheet, coord: str, key: str, text: str, kind: str = "number",
                name: str | None = None, font=st.CALC_FONT) -> None:
        cell = ws[coord]
        cell.value = text
        cell.number_format = st.number_format(kind)
        cell.font = font
        cell.protection = st.LOCKED
        if kind in ("money", "price", "fraction", "fraction2", "tokens", "mtokens", "gpus",
                    "months", "number", "integer", "ratio", "rate", "factor"):
            cell.alignment = st.RIGHT
        self.plan.scalars.append((ws.title, coord, key))
        if name:
            self.name(name, ws, coord)

    def vector(self, ws: Worksheet, coords: list[str], key: str, texts: list[str], pad: str,
               kind: str, font=st.CALC_FONT) -> None:
        fmt = st.number_format(kind)
        for coord, text in zip(coords, texts, strict=True):
            cell = ws[coord]
            cell.value = text
            cell.number_format = fmt
            cell.font = font
            cell.protection = st.LOCKED
        self.plan.vectors.append((ws.title, coords, key, pad))


def _col(i: int) -> str:
    return get_column_letter(i)


MONTH_COLS: tuple[str, ...] = tuple(_col(c) for c in range(FIRST_MONTH_COL, LAST_COL + 1))
ALL_COLS: tuple[str, ...] = (_col(MONTH0_COL),) + MONTH_COLS


def _title(ws: Worksheet, title: str, subtitle: str | None = None) -> None:
    ws["A1"] = title
    ws["A1"].font = st.TITLE_FONT
    if subtitle:
        ws["A2"] = subtitle
        ws["A2"].font = st.SUBTITLE_FONT
    ws.sheet_view.showGridLines = False


def _header(ws: Worksheet, row: int, texts: Sequence[str], first_col: int = 1) -> None:
    for i, text in enumerate(texts):
        cell = ws.cell(row, first_col + i, text)
        cell.font, cell.fill = st.HEADER_FONT, st.HEADER_FILL
        cell.alignment = _CENTER_WRAP


_CENTER_WRAP = st.Alignment(horizontal="center", vertical="center", wrap_text=True)


def _section(ws: Worksheet, row: int, text: str, width: int) -> None:
    for c in range(1, width + 1):
        ws.cell(row, c).fill = st.SECTION_FILL
    ws.cell(row, 1, text).font = st.SECTION_FONT


def _print_setup(ws: Worksheet, landscape: bool = True, fit_height: int = 0) -> None:
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


def _protect(ws: Worksheet) -> None:
    # No password: the protection stops accidental overwrites, it is not a security measure.
    ws.protection.sheet = True
    ws.protection.formatColumns = False
    ws.protection.formatRows = False


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


def input_cell_value(spec: Input, value: object) -> object:
    """An input value as the workbook's input cell holds it (dates as datetimes, counts as int)."""
    if spec.kind == "date":
        return dt.datetime(value.year, value.month, value.day)  # type: ignore[attr-defined]
    if spec.kind == "integer":
        return int(value)  # type: ignore[call-overload]
    if spec.kind in ("number", "fraction"):
        number = float(value)  # type: ignore[arg-type]
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


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
        **kw, allow_blank=False, showInputMessage=True, showErrorMessage=True,
        promptTitle=spec.label[:32], prompt=f"Allowed: {allowed}."[:255],
        errorTitle="Not allowed", errorStyle="stop",
        error=f"{spec.label} must be {allowed}. {spec.description}"[:255])


def _inputs_sheet(b: _Builder, ws: Worksheet, inputs: SiteInputs) -> None:
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
                    "Allowed", "Note"])
    ws.merge_cells("A4:B4")
    row = 5
    for group in dict.fromkeys(i.group for i in INPUTS):
        _section(ws, row, group, 9)
        row += 1
        for spec in (i for i in INPUTS if i.group == group):
            ws.cell(row, 1, spec.label)
            ws.cell(row, 3, f"in_{spec.name}").font = st.NAME_FONT
            ws.cell(row, 4, spec.unit).font = st.NOTE_FONT
            ws.cell(row, 8, spec.allowed[:1].upper() + spec.allowed[1:]).font = st.NOTE_FONT
            ws.cell(row, 9, spec.description).font = st.NOTE_FONT
            cols = _VALUE_COLS if spec.per_scenario else _VALUE_COLS[:1]
            dv = _validation(spec, lists)
            ws.add_data_validation(dv)
            for index, col in enumerate(cols):
                cell = ws[f"{col}{row}"]
                value = inputs[spec.name]
                cell.value = input_cell_value(spec, value[index] if spec.per_scenario else value)
                if spec.kind in ("text", "currency", "choice"):
                    cell.data_type = "s"  # user text is never a formula
                cell.font, cell.fill, cell.border = st.INPUT_FONT, st.INPUT_FILL, st.BOX
                cell.protection = st.UNLOCKED
                cell.number_format = st.number_format(_input_kind(spec))
                cell.alignment = st.RIGHT
                dv.add(cell)
                b.plan.inputs.append((ws.title, cell.coordinate, spec.name,
                                      index if spec.per_scenario else None))
            ref = f"{cols[0]}{row}" + (f":{cols[-1]}{row}" if len(cols) > 1 else "")
            b.name(f"in_{spec.name}", ws, ref)
            row += 1
    widths = {"A": 30, "B": 2, "C": 30, "D": 13, "E": 15, "F": 13, "G": 13, "H": 44, "I": 60,
              "J": 3, "K": 16, "L": 11, "M": 11, "N": 11}
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "E5"
    _print_setup(ws, fit_height=1)


# -- Capacity (with the constants block) -----------------------------------------------------
# (key = defined name, label, unit, formula, display kind, note)
_CAPACITY: tuple[tuple[str, ...], ...] = (
    ("#", "Live scenario"),
    ("scenario_number", "Live scenario number", "1–3", "=MATCH(in_scenario,list_scenario,0)",
     "integer", "position of the selected scenario in Base, Optimised, Downside"),
    ("live_tef_target", "TEF target (live)", "fraction",
     "=INDEX(in_tef_target,1,scenario_number)", "fraction", "the live scenario's TEF target"),
    ("live_sell_through_target", "Sell-through target (live)", "fraction",
     "=INDEX(in_sell_through_target,1,scenario_number)", "fraction", ""),
    ("live_decline", "Price decline per quarter (live)", "fraction",
     "=INDEX(in_decline_per_quarter,1,scenario_number)", "fraction", ""),
    ("owned_flag", "Owned fleet (1 = owned, 0 = rented)", "flag",
     '=IF(in_ownership="own",1,0)', "flag", "owned fleets have CapEx and depreciation"),
    ("#", "Throughput"),
    ("theoretical_tps", "Theoretical TPS (cluster)", "tokens/s",
     "=in_gpus*in_theoretical_tps_per_gpu", "tokens", "GPUs × theoretical TPS per GPU"),
    ("measured_tps", "Measured TPS (cluster)", "tokens/s", "=in_measured_tps", "tokens", ""),
    ("theoretical_tpm", "Theoretical TPM", "tokens/min", "=theoretical_tps*60", "tokens",
     "TPS × 60"),
    ("measured_tpm", "Measured TPM", "tokens/min", "=measured_tps*60", "tokens", ""),
    ("theoretical_tokens_day", "Theoretical tokens per day", "tokens",
     "=theoretical_tps*3600*24", "tokens", "TPS × 86,400"),
    ("measured_tokens_day", "Measured tokens per day", "tokens", "=measured_tps*3600*24",
     "tokens", ""),
    ("theoretical_tokens_year", "Theoretical tokens per year", "tokens",
     "=theoretical_tps*3600*k_hours_per_year", "tokens", "TPS × 3,600 × 8,760"),
    ("measured_tokens_year", "Measured tokens per year", "tokens",
     "=measured_tps*3600*k_hours_per_year", "tokens", ""),
    ("tef_now", "TEF now", "fraction", "=measured_tps/theoretical_tps", "fraction",
     "Token Efficiency Factor: measured ÷ theoretical"),
    ("#", "Latency and service level"),
    ("ttft_sigma", "TTFT log-normal σ", "ratio",
     "=LN(in_ttft_p99_ms/in_ttft_p50_ms)/_xlfn.NORM.S.INV(k_ttft_percentile)", "factor",
     "ln(p99 ÷ p50) ÷ z₀.₉₉"),
    ("ttft_z", "TTFT objective in σ", "ratio", "=LN(in_ttft_slo_ms/in_ttft_p50_ms)/ttft_sigma",
     "factor", "ln(objective ÷ p50) ÷ σ"),
    ("slo_attainment", "SLO attainment", "fraction", "=_xlfn.NORM.S.DIST(ttft_z,TRUE)",
     "fraction2", "share of requests whose TTFT meets the objective"),
    ("service_level", "SLA", "fraction", "=in_availability*slo_attainment", "fraction2",
     "availability × SLO attainment"),
    ("tfi_now", "TFI now", "fraction", "=tef_now*service_level*in_sell_through_start",
     "fraction2", "Token Factory Index: TEF × SLA × sell-through"),
    ("#", "Token funnel, a year at today's rates"),
    ("funnel_theoretical", "Theoretical tokens", "tokens/year", "=theoretical_tokens_year",
     "tokens", "the fleet fully busy at its best configuration"),
    ("funnel_produced", "Produced tokens", "tokens/year", "=funnel_theoretical*tef_now",
     "tokens", "× TEF now"),
    ("funnel_available", "Available tokens (within the SLA)", "tokens/year",
     "=funnel_produced*service_level", "tokens", "× SLA"),
    ("funnel_sold", "Sold tokens", "tokens/year", "=funnel_available*in_sell_through_start",
     "tokens", "× sell-through today"),
    ("load_factor", "Load factor", "fraction", "=funnel_sold/funnel_theoretical", "fraction2",
     "sold ÷ theoretical tokens: the airline load factor, equal to the TFI"),
    ("#", "Fleet equivalence"),
    ("equivalent_gpus", "Equivalent GPUs", "GPUs",
     f"=IF(tef_now=0,{_NONE},in_gpus*live_tef_target/tef_now)", "gpus",
     "GPUs × TEF target ÷ TEF now: the fleet at today's TEF that makes the same tokens"),
    ("avoided_capex", "Avoided GPU CapEx", "money",
     f"=IF(ISNUMBER(equivalent_gpus),(equivalent_gpus-in_gpus)*in_capex_per_gpu,{_NONE})",
     "money", "(equivalent GPUs − GPUs) × CapEx per GPU"),
    ("#", "Prices"),
    ("input_price", "Input price after the cache", "money/Mtok",
     "=in_cache_hit_rate*in_price_cached_input_per_mtok"
     "+(1-in_cache_hit_rate)*in_price_input_per_mtok", "price", "h × cached + (1 − h) × input"),
    ("list_price", "List price", "money/Mtok",
     "=(1-in_output_share)*input_price+in_output_share*in_price_output_per_mtok", "price",
     "(1 − o) × input + o × output"),
    ("blended_price", "Blended price today", "money/Mtok",
     "=list_price*(1-in_batch_share*in_batch_discount)", "price",
     "list × (1 − batch share × discount)"),
    ("#", "Cost of a GPU-hour"),
    ("cash_opex_per_gpu_hour", "Power and other opex", "money/GPU-h",
     "=in_power_kw_per_gpu*in_pue*in_electricity_per_kwh+in_opex_per_gpu_hour", "price",
     "kW × PUE × price per kWh + other opex"),
    ("capital_per_gpu_hour", "Depreciation (owned) or rent (rented)", "money/GPU-h",
     "=IF(owned_flag=1,(in_capex_per_gpu-in_salvage_per_gpu)/(in_life_years*k_hours_per_year),"
     "in_rent_per_gpu_hour)", "price", "(CapEx − salvage) ÷ (life × 8,760), or the rent"),
    ("fixed_per_gpu_hour", "Fixed opex", "money/GPU-h",
     "=in_fixed_opex_per_month/(in_gpus*k_hours_per_month)", "price", "fixed opex ÷ (GPUs × 730)"),
    ("gpu_hour_cost", "GPU-hour cost", "money/GPU-h",
     "=capital_per_gpu_hour+cash_opex_per_gpu_hour+fixed_per_gpu_hour", "price",
     "the full cost of one GPU-hour"),
    ("cash_cost_per_gpu_hour", "Cash cost per GPU-hour", "money/GPU-h",
     "=IF(owned_flag=1,0,capital_per_gpu_hour)+cash_opex_per_gpu_hour+fixed_per_gpu_hour",
     "price", "the GPU-hour cost without depreciation"),
    ("#", "Unit economics"),
    ("revenue_per_gpu_hour", "Revenue per GPU-hour today", "money/GPU-h",
     "=in_theoretical_tps_per_gpu*3600*tfi_now*blended_price/1000000", "price",
     "T × 3,600 × TFI × price ÷ 10⁶"),
    ("breakeven_util", "Breakeven utilisation", "fraction",
     f"=IF(blended_price=0,{_NONE},"
     "gpu_hour_cost/(in_theoretical_tps_per_gpu*3600*blended_price/1000000))", "fraction2",
     "the TFI at which revenue pays the GPU-hour"),
    ("breakeven_headroom", "TFI now above breakeven", "fraction",
     f"=IF(ISNUMBER(breakeven_util),tfi_now-breakeven_util,{_NONE})", "fraction2",
     "negative: today's TFI does not pay the GPU-hour"),
    ("economic_life", "Economic life", "months",
     "=IF(revenue_per_gpu_hour<=cash_cost_per_gpu_hour,0,"
     f"IF(OR(live_decline=0,cash_cost_per_gpu_hour=0),{_NONE},"
     "k_months_per_quarter*LN(cash_cost_per_gpu_hour/revenue_per_gpu_hour)/LN(1-live_decline)))",
     "months", "months until revenue per GPU-hour falls to its cash cost"),
    ("#", "Finance"),
    ("monthly_discount_rate", "Monthly discount rate", "fraction/month",
     "=(1+in_discount_rate)^(1/12)-1", "rate", "(1 + r)^(1/12) − 1"),
    ("capex_total", "CapEx (month 0)", "money", "=IF(owned_flag=1,in_gpus*in_capex_per_gpu,0)",
     "money", "GPUs × CapEx per GPU; 0 when rented"),
    ("salvage_total", "Salvage (last month)", "money",
     "=IF(owned_flag=1,in_gpus*in_salvage_per_gpu,0)", "money",
     "GPUs × salvage per GPU, received in the last month of the horizon"),
    ("depreciation_months", "Depreciation period", "months", "=in_life_years*12", "months", ""),
    ("depreciation_per_month", "Depreciation per month", "money",
     "=IF(owned_flag=1,in_gpus*(in_capex_per_gpu-in_salvage_per_gpu)/depreciation_months,0)",
     "money", "straight line while the month is within the depreciation period"),
)


def _capacity_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Capacity", "From GPUs and tokens per second to TEF, SLA, TFI and the cost of a "
           "GPU-hour: everything the site computes once.")
    _header(ws, 4, ["Quantity", "Value", "Unit", "How it is computed"])
    row = 5
    _section(ws, row, "Constants (fixed by definition; not inputs)", 9)
    row += 1
    for name, label, unit, value, note in CONSTANTS:
        ws.cell(row, 1, label)
        values = value if isinstance(value, tuple) else (value,)
        for i, v in enumerate(values):
            cell = ws.cell(row, 2 + i, v)
            cell.font, cell.fill, cell.protection = st.CONSTANT_FONT, st.CONSTANT_FILL, st.LOCKED
            cell.number_format = st.number_format("fraction" if unit == "fraction" else
                                                  "integer")
            if name == "k_check_tolerance":
                cell.number_format = "0.0E+00"
            if name == "k_irr_grid":
                cell.number_format = st.number_format("rate")
        last = _col(1 + len(values))
        b.name(name, ws, f"B{row}" + (f":{last}{row}" if len(values) > 1 else ""))
        b.plan.rows[name] = row
        if len(values) == 1:
            ws.cell(row, 3, unit).font = st.NOTE_FONT
            ws.cell(row, 4, f"{name}: {note}").font = st.NOTE_FONT
        else:
            ws.cell(row, 2 + len(values), f"{name}: {note}").font = st.NOTE_FONT
        row += 1
    for item in _CAPACITY:
        if item[0] == "#":
            row += 1
            _section(ws, row, item[1], 9)
            row += 1
            continue
        key, label, unit, text, kind, note = item
        ws.cell(row, 1, label)
        b.formula(ws, f"B{row}", key, text, kind, name=key)
        ws.cell(row, 3, unit).font = st.NOTE_FONT
        ws.cell(row, 4, note).font = st.NOTE_FONT
        b.plan.rows[key] = row
        row += 1
    for col, width in {"A": 40, "B": 22, "C": 13, "D": 14, "E": 12, "F": 12, "G": 12,
                       "H": 12, "I": 30}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    _print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:I{row}"


# -- Timeline ---------------------------------------------------------------------------------
# (key, label, unit, body, kind, total, month 0 too). The body is wrapped in
# IF(<month in horizon>, body, ""); {c} is this column, {p} the previous, {<key>} a row number.
_LINES: tuple[tuple[object, ...], ...] = (
    ("#", "Capacity and sales"),
    ("hours", "Hours", "hours", "DAY({c}${end})*24", "integer", True, False),
    ("tef_ramp_share", "TEF ramp share", "fraction",
     "IF(in_tef_ramp_months=0,1,MIN({c}${month},in_tef_ramp_months)/in_tef_ramp_months)",
     "fraction", False, False),
    ("tef", "TEF", "fraction", "tef_now+(live_tef_target-tef_now)*{c}{tef_ramp_share}",
     "fraction", False, False),
    ("sell_ramp_share", "Sell-through ramp share", "fraction",
     "IF(in_sell_through_ramp_months=0,1,"
     "MIN({c}${month},in_sell_through_ramp_months)/in_sell_through_ramp_months)",
     "fraction", False, False),
    ("sell_through", "Sell-through", "fraction",
     "in_sell_through_start+(live_sell_through_target-in_sell_through_start)*{c}{sell_ramp_share}",
     "fraction", False, False),
    ("theoretical_tokens", "Theoretical tokens", "tokens, shown in millions",
     "in_gpus*in_theoretical_tps_per_gpu*3600*{c}{hours}", "mtokens", True, False),
    ("tokens_sold", "Tokens sold", "tokens, shown in millions",
     "{c}{theoretical_tokens}*{c}{tef}*service_level*{c}{sell_through}", "mtokens", True,
     False),
    ("price", "Price", "money/Mtok",
     "blended_price*(1-live_decline)^(({c}${month}-1)/k_months_per_quarter)", "price",
     False, False),
    ("#", "Profit and loss"),
    ("revenue", "Revenue", "money", "{c}{tokens_sold}/1000000*{c}{price}", "money", True, False),
    ("power", "Power", "money",
     "in_gpus*in_power_kw_per_gpu*in_pue*{c}{hours}*in_electricity_per_kwh", "money", True,
     False),
    ("other_opex", "Other opex", "money",
     "in_gpus*in_opex_per_gpu_hour*{c}{hours}+in_fixed_opex_per_month", "money", True, False),
    ("rent", "Rent", "money", "in_gpus*in_rent_per_gpu_hour*{c}{hours}*(1-owned_flag)",
     "money", True, False),
    ("ebitda", "EBITDA", "money", "{c}{revenue}-{c}{power}-{c}{other_opex}-{c}{rent}", "money",
     True, False),
    ("depreciation", "Depreciation", "money",
     "IF({c}${month}<=depreciation_months,depreciation_per_month,0)", "money", True, False),
    ("ebit", "EBIT", "money", "{c}{ebitda}-{c}{depreciation}", "money", True, False),
    ("tax", "Tax", "money", "MAX({c}{ebit},0)*in_tax_rate", "money", True, False),
    ("#", "Cash flow"),
    ("investment", "Investment (CapEx)", "money", "IF({c}${month}=0,capex_total,0)", "money",
     True, True),
    ("salvage", "Salvage proceeds", "money", "IF({c}${month}=in_horizon_months,salvage_total,0)",
     "money", True, False),
    ("cash_flow", "Cash flow", "money",
     "N({c}{ebitda})-N({c}{tax})+N({c}{salvage})-{c}{investment}", "money", True, True),
    ("cumulative_cash_flow", "Cumulative cash flow", "money", "SUM($D{cash_flow}:{c}{cash_flow})",
     "money", False, True),
    ("discount_factor", "Discount factor", "factor", "1/(1+monthly_discount_rate)^{c}${month}",
     "factor", False, True),
    ("discounted_cash_flow", "Discounted cash flow", "money",
     "{c}{cash_flow}*{c}{discount_factor}", "money", True, True),
    ("payback_crossing", "Payback crossing", "months",
     'IF(AND({c}{cumulative_cash_flow}>=0,{p}{cumulative_cash_flow}<0),'
     '({c}${month}-1)+(-{p}{cumulative_cash_flow})/{c}{cash_flow},"")', "months", False, False),
)
TIMELINE_HEADER_ROWS = {"month": 4, "end": 5, "flag": 6, "year": 7}
_LINE_LABELS = {str(item[0]): item[1] for item in _LINES if item[0] != "#"}


def _timeline_rows() -> dict[str, int]:
    rows = dict(TIMELINE_HEADER_ROWS)
    row = max(TIMELINE_HEADER_ROWS.values())
    for item in _LINES:
        row += 1
        if item[0] == "#":
            row += 0
            continue
        rows[str(item[0])] = row
    return rows


TIMELINE_ROWS: dict[str, int] = _timeline_rows()


def _timeline_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Timeline", None)
    ws["A2"] = '="Monthly operating model · "&in_site_name&" · "&in_scenario&" scenario · "' \
               '&TEXT(in_horizon_months,"0")&" months"'
    b.formula(ws, "A2", "tl.subtitle", ws["A2"].value, "text", font=st.SUBTITLE_FONT)
    ws["A2"].alignment = st.Alignment(horizontal="left")
    rows = TIMELINE_ROWS
    d = _col(MONTH0_COL)
    for label, key in (("Month", "month"), ("Month ending", "end"),
                       ("In horizon (1 = yes)", "flag"), ("Year of the model", "year")):
        r = rows[key]
        cell = ws.cell(r, 1, label)
        cell.font = st.HEADER_FONT
        for c in range(1, 4):
            ws.cell(r, c).fill = st.HEADER_FILL
    ws.cell(rows["month"], 3, "Total").font = st.HEADER_FONT
    # The timeline header: month numbers, month ends, and the horizon flag.
    # One formula per header row: the month number counts the columns from month 0 (in the
    # empty row above: a range holding the cell itself would be circular), and
    # month m ends EOMONTH(start, m - 1) (month 0 ends the day before the start date).
    b.vector(ws, [f"{c}{rows['month']}" for c in ALL_COLS], "tl.month",
             [f"=COLUMNS(${d}${rows['month'] - 1}:{c}${rows['month'] - 1})-1"
              for c in ALL_COLS],
             "all", "integer", font=st.HEADER_FONT)
    ends = [f"=EOMONTH(in_start_date,{c}${rows['month']}-1)" for c in ALL_COLS]
    b.vector(ws, [f"{c}{rows['end']}" for c in ALL_COLS], "tl.end", ends, "all", "month",
             font=st.HEADER_FONT)
    b.vector(ws, [f"{c}{rows['flag']}" for c in ALL_COLS], "tl.flag",
             [f"=IF({c}${rows['month']}<=in_horizon_months,1,0)" for c in ALL_COLS], "all",
             "flag", font=st.HEADER_FONT)
    b.vector(ws, [f"{c}{rows['year']}" for c in ALL_COLS], "tl.year",
             [f"=ROUNDUP({c}${rows['month']}/12,0)" for c in ALL_COLS], "all", "integer",
             font=st.HEADER_FONT)
    for c in range(MONTH0_COL, LAST_COL + 1):
        for r in (rows["month"], rows["end"], rows["flag"], rows["year"]):
            ws.cell(r, c).fill = st.HEADER_FILL
            ws.cell(r, c).alignment = st.RIGHT
    row = max(TIMELINE_HEADER_ROWS.values())
    fmt = {k: r for k, r in rows.items()}
    for item in _LINES:
        row += 1
        if item[0] == "#":
            _section(ws, row, str(item[1]), 3)
            continue
        key, label, unit, body, kind, total, month0 = item  # type: ignore[misc]
        r = rows[str(key)]
        ws.cell(r, 1, str(label))
        ws.cell(r, 2, str(unit)).font = st.NOTE_FONT
        cols = ALL_COLS if month0 else MONTH_COLS
        texts = []
        for c in cols:
            p = _col(max(MONTH0_COL, _column_index(c) - 1))
            inner = str(body).format(c=c, p=p, **fmt)
            texts.append(f'=IF({c}${rows["flag"]}=1,{inner},"")')
        bold = key in ("revenue", "ebitda", "cash_flow")
        font = st.TOTAL_FONT if bold else st.CALC_FONT
        b.vector(ws, [f"{c}{r}" for c in cols], f"tl.{key}", texts, "h0" if month0 else "h1",
                 str(kind), font=font)
        if bold:
            ws.cell(r, 1).font = st.TOTAL_FONT
        if total:
            first = d if month0 else MONTH_COLS[0]
            b.formula(ws, f"C{r}", f"tl.total.{key}", f"=SUM({first}{r}:{MONTH_COLS[-1]}{r})",
                      str(kind), font=st.TOTAL_FONT)
    ws.column_dimensions["A"].width = 28
    ws.column_dimensions["B"].width = 22
    ws.column_dimensions["C"].width = 17
    for c in ALL_COLS:
        ws.column_dimensions[c].width = 13
    ws.freeze_panes = f"{d}{rows['year'] + 1}"
    # Months beyond the horizon: grey the header so the live months stand out.
    grey = st.Font(name=st.FONT_NAME, color="8EA9DB")
    ws.conditional_formatting.add(
        f"{d}{rows['month']}:{MONTH_COLS[-1]}{rows['year']}",
        FormulaRule(formula=[f"{d}${rows['flag']}=0"], font=grey))
    _print_setup(ws, fit_height=1)
    # 240 months do not fit a page: print at half size, about a year a page, labels repeated
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=False)
    ws.page_setup.scale = 50
    ws.print_title_cols = "A:C"


def _column_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def _tl(key: str, col: str | None = None) -> str:
    """A Timeline cell or row range, as another sheet refers to it."""
    r = TIMELINE_ROWS[key]
    if col:
        return f"Timeline!{col}{r}"
    return f"Timeline!$D${r}:${MONTH_COLS[-1]}${r}"


def _tl_total(key: str) -> str:
    return f"Timeline!$C${TIMELINE_ROWS[key]}"


# -- Returns ----------------------------------------------------------------------------------
def _output_formulas() -> dict[str, str]:
    crossing = f"Timeline!${MONTH_COLS[0]}${TIMELINE_ROWS['payback_crossing']}:" \
               f"${MONTH_COLS[-1]}${TIMELINE_ROWS['payback_crossing']}"
    costs = "+".join(_tl_total(k) for k in ("power", "other_opex", "rent", "depreciation"))
    return {
        "tef_now": "=tef_now",
        "slo_attainment": "=slo_attainment",
        "sla": "=service_level",
        "tfi_now": "=tfi_now",
        "equivalent_gpus": "=equivalent_gpus",
        "avoided_capex": "=avoided_capex",
        "blended_price": "=blended_price",
        "gpu_hour_cost": "=gpu_hour_cost",
        "breakeven_util": "=breakeven_util",
        "tokens_sold_total": f"={_tl_total('tokens_sold')}",
        "revenue_total": f"={_tl_total('revenue')}",
        "ebitda_total": f"={_tl_total('ebitda')}",
        "ebitda_margin": f"=IF(out_revenue_total=0,{_NONE},out_ebitda_total/out_revenue_total)",
        "npv": f"={_tl_total('discounted_cash_flow')}",
        "irr": f"=IF(ISNUMBER(irr_monthly),(1+irr_monthly)^12-1,{_NONE})",
        "payback_months": f"=IF(COUNT({crossing})=0,{_NONE},MIN({crossing}))",
        "roi": f"=IF(capex_total=0,{_NONE},{_tl_total('cash_flow')}/capex_total)",
        "cost_per_mtok": f"=IF(out_tokens_sold_total=0,{_NONE},"
                         f"({costs})/(out_tokens_sold_total/1000000))",
        "economic_life_months": "=economic_life",
    }


_OUTPUT_NOTES = {
    "tef_now": "measured ÷ theoretical TPS",
    "sla": "availability × SLO attainment",
    "tfi_now": "TEF × SLA × sell-through today",
    "equivalent_gpus": "GPUs × live TEF target ÷ TEF now",
    "breakeven_util": "compare with the TFI now",
    "npv": "month 0 undiscounted; monthly rate (1 + r)^(1/12) − 1",
    "irr": "monthly IRR of months 0…H, shown yearly: (1 + IRR)^12 − 1; none without a sign change",
    "payback_months": "(k − 1) + (−cum(k − 1)) ÷ cash flow(k); none when not reached",
    "roi": "Σ cash flows (month 0 included) ÷ CapEx; none without CapEx",
    "cost_per_mtok": "(Σ power + opex + rent + depreciation) ÷ Mtok sold",
    "economic_life_months": "months until revenue per GPU-hour falls to its cash cost",
}


def _returns_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Returns", "The summary outputs (TFOM-SPEC §7), each a defined name out_<name>.")
    _header(ws, 4, ["Output", "Value", "Unit", "Name", "Definition"])
    formulas = _output_formulas()
    row = 5
    for out in OUTPUTS:
        ws.cell(row, 1, out.label)
        kind = "fraction2" if out.kind == "fraction" else out.kind
        b.formula(ws, f"B{row}", f"out.{out.name}", formulas[out.name], kind,
                  name=f"out_{out.name}")
        ws.cell(row, 3, out.unit).font = st.NOTE_FONT
        ws.cell(row, 4, f"out_{out.name}").font = st.NAME_FONT
        ws.cell(row, 5, _OUTPUT_NOTES.get(out.name, "")).font = st.NOTE_FONT
        b.plan.rows[f"out.{out.name}"] = row
        row += 1
    row += 1
    _section(ws, row, "Breakeven against the TFI, and the IRR", 5)
    row += 1
    cf = _tl("cash_flow")
    for key, label, unit, text, kind in (
        ("irr_monthly", "IRR, monthly (from the search below)", "fraction/month",
         f"=IF(AND(MIN({cf})<0,MAX({cf})>0,irr_bracket_found=1),"
         f"${_col(IRR_MID_COL)}${IRR_BISECT_TOP + IRR_STEPS - 1},{_NONE})", "rate"),
        ("ret.tfi", "TFI now", "fraction", "=tfi_now", "fraction2"),
        ("ret.breakeven", "Breakeven utilisation", "fraction", "=breakeven_util", "fraction2"),
        ("ret.headroom", "TFI now above breakeven", "fraction", "=breakeven_headroom",
         "fraction2"),
        ("ret.revenue_hour", "Revenue per GPU-hour today", "money/GPU-h",
         "=revenue_per_gpu_hour", "price"),
        ("ret.cash_cost_hour", "Cash cost per GPU-hour", "money/GPU-h",
         "=cash_cost_per_gpu_hour", "price"),
        ("ret.capex", "CapEx (month 0)", "money", "=capex_total", "money"),
        ("ret.cash_total", "Σ cash flows, months 0…H", "money", f"={_tl_total('cash_flow')}",
         "money"),
    ):
        ws.cell(row, 1, label)
        b.formula(ws, f"B{row}", key, text, kind,
                  name=key if key.startswith("irr_") else None)
        ws.cell(row, 3, unit).font = st.NOTE_FONT
        row += 1
    _irr_search(b, ws)
    _yearly_summary(b, ws)
    for col, width in {"A": 34, "B": 20, "C": 14, "D": 28, "E": 62, "F": 20, "G": 3, "H": 7,
                       "I": 15, "J": 15, "K": 10, "L": 15, "M": 17}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "B5"
    _print_setup(ws, fit_height=1)
    ws.print_area = f"A1:M{IRR_TOP - 2}"


YEARS = MAX_MONTHS // 12


def _yearly_summary(b: _Builder, ws: Worksheet) -> None:
    """Revenue, EBITDA, cash flow by year of the model (columns H…M beside the outputs)."""
    tl = TIMELINE_ROWS
    last = MONTH_COLS[-1]
    years = f"Timeline!${MONTH_COLS[0]}${tl['year']}:${last}${tl['year']}"

    def by_year(key: str, r: int) -> str:
        line = f"Timeline!${MONTH_COLS[0]}${tl[key]}:${last}${tl[key]}"
        return f'=IF($H{r}<=ROUNDUP(in_horizon_months/12,0),SUMIF({years},$H{r},{line}),"")'

    _header(ws, 4, ["Year", "Revenue", "EBITDA", "EBITDA margin", "Cash flow",
                    "Cumulative cash flow"], first_col=8)
    ws.row_dimensions[4].height = 30
    rows = [5 + i for i in range(YEARS)]
    cum = _tl("cumulative_cash_flow")
    b.vector(ws, [f"H{r}" for r in rows], "year.year", [f"=ROWS(H$4:H{r - 1})" for r in rows],
             "all", "integer")
    b.vector(ws, [f"I{r}" for r in rows], "year.revenue", [by_year("revenue", r) for r in rows],
             "all", "money")
    b.vector(ws, [f"J{r}" for r in rows], "year.ebitda", [by_year("ebitda", r) for r in rows],
             "all", "money")
    b.vector(ws, [f"K{r}" for r in rows], "year.margin",
             [f'=IF(ISNUMBER(I{r}),IF(I{r}=0,{_NONE},J{r}/I{r}),"")' for r in rows], "all",
             "fraction")
    b.vector(ws, [f"L{r}" for r in rows], "year.cash_flow",
             [by_year("cash_flow", r) for r in rows], "all", "money")
    b.vector(ws, [f"M{r}" for r in rows], "year.cumulative",
             [f'=IF(ISNUMBER(L{r}),INDEX({cum},1,MIN($H{r}*12,in_horizon_months)+1),"")'
              for r in rows], "all", "money")
    for r in rows:
        for c in "IJKLM":
            ws[f"{c}{r}"].alignment = st.RIGHT
    ws.cell(rows[-1] + 1, 8, "Year 1 is months 1–12; the cumulative cash flow includes the "
            "month-0 investment.").font = st.NOTE_FONT


# The IRR, found the way the Python model finds it: the rates of k_irr_grid bracket the roots
# of NPV(rate); the bracket nearest 0 is halved IRR_STEPS times. Unlike Excel's IRR (Newton's
# method from a guess), this cannot fail to converge, and it picks the same root as the Python
# model where the cash flows change sign more than once (a rented fleet, a price collapse).
IRR_TOP = 40  # header row of the grid
IRR_STEPS = 60  # halvings: any bracket of k_irr_grid shrinks below 1e-16
IRR_MID_COL = 5  # column E: the midpoint of each halving
IRR_BISECT_TOP = IRR_TOP + len(CONSTANT_VALUES["k_irr_grid"]) + 6  # type: ignore[arg-type]


def _npv_at(rate: str) -> str:
    # Months beyond the horizon count as month 0 (factor 1; their cash flow is ""), so that
    # no engine raises a factor beyond the horizon to an overflowing power.
    last = MONTH_COLS[-1]
    months = (f"Timeline!$D${TIMELINE_ROWS['month']}:${last}${TIMELINE_ROWS['month']}"
              f"*Timeline!$D${TIMELINE_ROWS['flag']}:${last}${TIMELINE_ROWS['flag']}")
    return f"SUMPRODUCT({_tl('cash_flow')},(1+{rate})^(-{months}))"


def _irr_search(b: _Builder, ws: Worksheet) -> None:
    grid = CONSTANT_VALUES["k_irr_grid"]
    n = len(grid)  # type: ignore[arg-type]
    top = IRR_TOP
    _section(ws, top - 1, "IRR search: NPV at a grid of monthly rates, then halving the "
             "bracket nearest 0", 6)
    _header(ws, top, ["Monthly rate", "", "NPV at the rate", "Sign change to next",
                      "Distance from 0"], first_col=1)
    rows = [top + 1 + i for i in range(n)]
    const_row = b.plan.rows["k_irr_grid"]
    b.vector(ws, [f"A{r}" for r in rows], "irr.rate",
             [f"=Capacity!{_col(2 + i)}${const_row}" for i in range(n)], "all", "rate")
    b.vector(ws, [f"C{r}" for r in rows], "irr.npv",
             [f'=IFERROR({_npv_at(f"$A{r}")},"")' for r in rows], "all", "money")
    b.vector(ws, [f"D{r}" for r in rows], "irr.change",
             [f"=IF(AND(ISNUMBER(C{r}),ISNUMBER(C{r + 1})),IF(SIGN(C{r})*SIGN(C{r + 1})<=0,1,0),0)"
              for r in rows], "all", "flag")
    b.vector(ws, [f"E{r}" for r in rows], "irr.distance",
             [f'=IF(D{r}=1,MIN(ABS(A{r}),ABS(A{r + 1})),"")' for r in rows], "all", "rate")
    dist = f"$E${rows[0]}:$E${rows[-1]}"
    rates = f"$A${rows[0]}:$A${rows[-1]}"
    npvs = f"$C${rows[0]}:$C${rows[-1]}"
    r = rows[-1] + 2
    ws.cell(r, 1, "Bracket found (1 = yes)")
    b.formula(ws, f"B{r}", "irr.found", f"=IF(COUNT({dist})>0,1,0)", "flag",
              name="irr_bracket_found")
    ws.cell(r + 1, 1, "Bracket: position in the grid")
    b.formula(ws, f"B{r + 1}", "irr.position",
              f'=IF(irr_bracket_found=1,MATCH(MIN({dist}),{dist},0),"")', "integer",
              name="irr_bracket_position")
    top2 = r + 3
    assert top2 + 1 == IRR_BISECT_TOP, (top2, IRR_BISECT_TOP)
    _header(ws, top2, ["Halving", "Low rate", "High rate", "NPV at low", "Mid rate",
                       "NPV at mid"], first_col=1)
    steps = [top2 + 1 + k for k in range(IRR_STEPS)]
    found = "irr_bracket_found=1"
    b.vector(ws, [f"A{x}" for x in steps], "irr.step",
             [f'=IF({found},ROWS($B${steps[0]}:B{x}),"")' for x in steps], "all", "integer")
    low = [f'=IF({found},INDEX({rates},irr_bracket_position),"")'] + [
        f'=IF({found},IF((F{x - 1}>0)=(D{x - 1}>0),E{x - 1},B{x - 1}),"")' for x in steps[1:]]
    high = [f'=IF({found},INDEX({rates},irr_bracket_position+1),"")'] + [
        f'=IF({found},IF((F{x - 1}>0)=(D{x - 1}>0),C{x - 1},E{x - 1}),"")' for x in steps[1:]]
    f_low = [f'=IF({found},INDEX({npvs},irr_bracket_position),"")'] + [
        f'=IF({found},IF((F{x - 1}>0)=(D{x - 1}>0),F{x - 1},D{x - 1}),"")' for x in steps[1:]]
    b.vector(ws, [f"B{x}" for x in steps], "irr.low", low, "all", "rate")
    b.vector(ws, [f"C{x}" for x in steps], "irr.high", high, "all", "rate")
    b.vector(ws, [f"D{x}" for x in steps], "irr.f_low", f_low, "all", "money")
    b.vector(ws, [f"E{x}" for x in steps], "irr.mid",
             [f'=IF({found},AVERAGE(B{x},C{x}),"")' for x in steps], "all", "rate")
    b.vector(ws, [f"F{x}" for x in steps], "irr.f_mid",
             [f'=IF({found},{_npv_at(f"E{x}")},"")' for x in steps], "all", "money")


# -- Sensitivity ------------------------------------------------------------------------------
SENS_UTIL_FIRST = 7
SENS_UTIL_COUNT = 20
SENS_GRID_TOP = SENS_UTIL_FIRST + SENS_UTIL_COUNT + 3  # header row of the NPV grid
N_TEF = len(CONSTANT_VALUES["k_sens_tef_targets"])  # type: ignore[arg-type]
N_DECLINE = len(CONSTANT_VALUES["k_sens_declines"])  # type: ignore[arg-type]
SENS_BASIS_TOP = SENS_GRID_TOP + N_TEF + 4
_BASIS = ("month", "discount", "revenue_full", "cash_costs", "depreciation", "salvage",
          "tef_ramp_share")
SENS_ROWS: dict[str, int] = {k: SENS_BASIS_TOP + 1 + i for i, k in enumerate(_BASIS)}
SENS_REVT_TOP = SENS_ROWS["tef_ramp_share"] + 2  # revenue at each TEF target, one row each
SENS_PF_TOP = SENS_REVT_TOP + N_TEF + 1  # price factor at each decline, one row each


def _sensitivity_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Sensitivity", "How the margin moves with utilisation, and the NPV with the TEF "
           "target and the price decline. Live formulas: they follow the inputs.")
    ws["A4"] = "Breakeven utilisation"
    b.formula(ws, "B4", "sens.breakeven", "=breakeven_util", "fraction2")
    ws["C4"] = "TFI now"
    b.formula(ws, "D4", "sens.tfi", "=tfi_now", "fraction2")
    _header(ws, SENS_UTIL_FIRST - 1, ["Utilisation", "Margin", "Breakeven", "Site today"])
    rows = range(SENS_UTIL_FIRST, SENS_UTIL_FIRST + SENS_UTIL_COUNT)
    b.vector(ws, [f"A{r}" for r in rows], "sens.util",
             ["=k_util_step"] + [f"=A{r - 1}+k_util_step" for r in rows][1:], "all", "fraction")
    b.vector(ws, [f"B{r}" for r in rows], "sens.margin",
             [f"=IF(ISNUMBER(breakeven_util),1-breakeven_util/A{r},{_NONE})" for r in rows],
             "all", "fraction")
    b.vector(ws, [f"C{r}" for r in rows], "sens.breakeven_marker",
             [f'=IF(ISNUMBER(breakeven_util),IF(AND(breakeven_util>A{r}-k_util_step,'
              f'breakeven_util<=A{r}),"◄ breakeven",""),"")' for r in rows], "all", "text")
    b.vector(ws, [f"D{r}" for r in rows], "sens.tfi_marker",
             [f'=IF(AND(tfi_now>A{r}-k_util_step,tfi_now<=A{r}),"◄ TFI now","")'
              for r in rows], "all", "text")
    for r in rows:
        ws[f"B{r}"].alignment = st.RIGHT
    red = st.Font(name=st.FONT_NAME, bold=True, color="9C0006")
    ws.conditional_formatting.add(
        f"C{SENS_UTIL_FIRST}:D{rows[-1]}", CellIsRule(operator="notEqual", formula=['""'],
                                                      font=red))

    # The NPV grid: TEF targets down, price declines across.
    top = SENS_GRID_TOP
    _section(ws, top - 1, "NPV over the TEF target (rows) and the price decline per quarter "
             "(columns); other inputs as in the live scenario", 8)
    ws.cell(top, 1, "TEF target ↓ · decline →").font = st.HEADER_FONT
    ws.cell(top, 1).fill = st.HEADER_FILL
    grid_cols = [_col(2 + j) for j in range(N_DECLINE)]
    b.vector(ws, [f"{c}{top}" for c in grid_cols], "sens.declines",
             [f"=Capacity!{_col(2 + j)}${b.plan.rows['k_sens_declines']}"
              for j in range(N_DECLINE)], "all",
             "fraction", font=st.HEADER_FONT)
    for c in grid_cols:
        ws[f"{c}{top}"].fill = st.HEADER_FILL
    tef_rows = [top + 1 + i for i in range(N_TEF)]
    b.vector(ws, [f"A{r}" for r in tef_rows], "sens.tef_targets",
             [f"=Capacity!{_col(2 + i)}${b.plan.rows['k_sens_tef_targets']}"
              for i in range(N_TEF)], "all",
             "fraction", font=st.TOTAL_FONT)
    first, last = MONTH_COLS[0], MONTH_COLS[-1]

    def basis(key: str) -> str:
        return f"${first}${SENS_ROWS[key]}:${last}${SENS_ROWS[key]}"

    coords, texts = [], []
    for i, r in enumerate(tef_rows):
        revt = f"${first}${SENS_REVT_TOP + i}:${last}${SENS_REVT_TOP + i}"
        for j, c in enumerate(grid_cols):
            pf = f"${first}${SENS_PF_TOP + j}:${last}${SENS_PF_TOP + j}"
            ebitda = f"{revt}*{pf}-{basis('cash_costs')}"
            ebit = f"({ebitda}-{basis('depreciation')})"
            coords.append(f"{c}{r}")
            texts.append(f"=-capex_total+SUMPRODUCT({basis('discount')},"
                         f"{ebitda}-({ebit}>0)*{ebit}*in_tax_rate+{basis('salvage')})")
    b.vector(ws, coords, "sens.npv_grid", texts, "all", "money")
    ws.conditional_formatting.add(
        f"{grid_cols[0]}{tef_rows[0]}:{grid_cols[-1]}{tef_rows[-1]}",
        ColorScaleRule(start_type="min", start_color="F8696B", mid_type="num", mid_value=0,
                       mid_color="FFFFFF", end_type="max", end_color="63BE7B"))

    # The monthly basis of the grid: the Timeline's lines, 0 beyond the horizon.
    _section(ws, SENS_BASIS_TOP, "Monthly basis of the NPV grid (from the Timeline; 0 beyond "
             "the horizon)", 8)
    labels = {
        "month": ("Month", "=Timeline!{c}$" + str(TIMELINE_ROWS["month"]), "integer"),
        "discount": ("Discount factor in the horizon", "=N(" + _tl("discount_factor", "{c}") + ")",
                     "factor"),
        "revenue_full": ("Revenue at TEF 100% and today's price",
                         "=N(" + _tl("theoretical_tokens", "{c}") + ")*service_level*N("
                         + _tl("sell_through", "{c}") + ")/1000000*blended_price", "money"),
        "cash_costs": ("Power, other opex and rent",
                       "=N(" + _tl("power", "{c}") + ")+N(" + _tl("other_opex", "{c}")
                       + ")+N(" + _tl("rent", "{c}") + ")", "money"),
        "depreciation": ("Depreciation", "=N(" + _tl("depreciation", "{c}") + ")", "money"),
        "salvage": ("Salvage proceeds", "=N(" + _tl("salvage", "{c}") + ")", "money"),
        "tef_ramp_share": ("TEF ramp share", "=N(" + _tl("tef_ramp_share", "{c}") + ")",
                           "fraction"),
    }
    for key in _BASIS:
        label, template, kind = labels[key]
        r = SENS_ROWS[key]
        ws.cell(r, 1, label)
        b.vector(ws, [f"{c}{r}" for c in MONTH_COLS], f"sens.{key}",
                 [template.format(c=c) for c in MONTH_COLS], "all", kind)
    for i in range(N_TEF):
        r = SENS_REVT_TOP + i
        ws.cell(r, 1, f"Revenue at TEF target (row {i + 1} of the grid), today's price")
        b.vector(ws, [f"{c}{r}" for c in MONTH_COLS], f"sens.revt{i}",
                 [f"={c}${SENS_ROWS['revenue_full']}*(tef_now+($A${tef_rows[i]}-tef_now)"
                  f"*{c}${SENS_ROWS['tef_ramp_share']})" for c in MONTH_COLS], "all", "money")
    for j in range(N_DECLINE):
        r = SENS_PF_TOP + j
        ws.cell(r, 1, f"Price factor at decline (column {j + 1} of the grid)")
        b.vector(ws, [f"{c}{r}" for c in MONTH_COLS], f"sens.pf{j}",
                 [f"=(1-${grid_cols[j]}${top})^(({c}${SENS_ROWS['month']}-1)"
                  f"/k_months_per_quarter)" for c in MONTH_COLS], "all", "factor")
    ws.column_dimensions["A"].width = 34
    for c in ("B", "C", "D", "E", "F", "G"):
        ws.column_dimensions[c].width = 16
    for c in MONTH_COLS[1:]:
        ws.column_dimensions[c].width = 13
    _print_setup(ws, landscape=False, fit_height=1)
    ws.print_area = f"A1:G{tef_rows[-1] + 1}"


# -- Checks -----------------------------------------------------------------------------------
CHECK_FIRST = 7


def _input_check(spec: Input) -> tuple[str, object, object]:
    """(formula with {lo}/{hi} for the bound cells, low constant, high constant) of one input."""
    n = f"in_{spec.name}"
    if spec.kind == "choice":
        return f'=IF(ISNUMBER(MATCH({n},list_{spec.name},0)),"OK","ERROR")', None, None
    if spec.kind == "date":
        return f'=IF(AND(ISNUMBER({n}),DAY({n})={{lo}}),"OK","ERROR")', 1, None
    if spec.kind == "text":
        return (f'=IF(AND(ISTEXT({n}),LEN({n})>={{lo}},LEN({n})<={{hi}}),"OK","ERROR")', 1,
                spec.max_length)
    if spec.kind == "currency":
        return f'=IF(AND(ISTEXT({n}),LEN({n})={{lo}}),"OK","ERROR")', 3, None
    parts = [f"COUNT({n})=COLUMNS({n})"]
    parts.append(f"MIN({n})>{{lo}}" if spec.low_open else f"MIN({n})>={{lo}}")
    if spec.high is not None:
        parts.append(f"MAX({n})<={{hi}}")
    if spec.kind == "integer":
        parts.append(f"{n}=INT({n})")
    return f'=IF(AND({",".join(parts)}),"OK","ERROR")', spec.low, spec.high


def _tolerance(a: str, b: str) -> str:
    return f"ABS({a}-({b}))<=k_check_tolerance*MAX(1,ABS({a}))"


def cross_checks() -> tuple[tuple[str, str, str], ...]:
    """The integrity checks beyond the input ranges: (key, description, condition)."""
    tl = TIMELINE_ROWS
    rev = f"Timeline!${MONTH_COLS[0]}${tl['revenue']}:${MONTH_COLS[-1]}${tl['revenue']}"
    tef = f"Timeline!${MONTH_COLS[0]}${tl['tef']}:${MONTH_COLS[-1]}${tl['tef']}"
    cum = _tl("cumulative_cash_flow")
    grid = f"Sensitivity!$B${SENS_GRID_TOP + 1}:${_col(1 + N_DECLINE)}${SENS_GRID_TOP + N_TEF}"
    ebitda_sum = (f"{_tl_total('revenue')}-{_tl_total('power')}-{_tl_total('other_opex')}"
                  f"-{_tl_total('rent')}")
    return (
        ("salvage_le_capex", "Salvage per GPU at most the CapEx per GPU",
         "in_salvage_per_gpu<=in_capex_per_gpu"),
        ("p99_gt_p50", "TTFT p99 above the p50", "in_ttft_p99_ms>in_ttft_p50_ms"),
        ("tef_now_le_1", "TEF now at most 100% (measured ≤ theoretical TPS)", "tef_now<=1"),
        ("tfi_le_1", "TFI now at most 100%", "tfi_now<=1"),
        ("tef_months_le_1", "Every month's TEF at most 100%", f"MAX({tef})<=1"),
        ("load_factor_tfi", "Load factor equals the TFI", _tolerance("load_factor", "tfi_now")),
        ("months_counted", "One revenue figure per month of the horizon",
         f"COUNT({rev})=in_horizon_months"),
        ("sold_le_theoretical", "Tokens sold at most the theoretical tokens",
         f"{_tl_total('tokens_sold')}<={_tl_total('theoretical_tokens')}"),
        ("ebitda_total", "EBITDA total = revenue − power − opex − rent totals",
         _tolerance(_tl_total("ebitda"), ebitda_sum)),
        ("cash_total", "Σ monthly cash flows = last cumulative cash flow",
         _tolerance(_tl_total("cash_flow"), f"INDEX({cum},1,in_horizon_months+1)")),
        ("npv_total", "NPV = Σ discounted cash flows",
         _tolerance("out_npv", f"SUMPRODUCT({_tl('cash_flow')},{_tl('discount_factor')})")),
        ("grid_complete", "Every NPV grid cell computes",
         f"COUNT({grid})=ROWS({grid})*COLUMNS({grid})"),
    )


def _checks_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Checks", "Integrity checks: every one must say OK. The master check is shown on "
           "the Cover and the Dashboard.")
    ws["A4"] = "Master check"
    ws["A4"].font = st.SECTION_FONT
    _header(ws, CHECK_FIRST - 1, ["Check", "Status", "Low", "High"])
    row = CHECK_FIRST
    _section(ws, row, "Inputs within their allowed ranges", 4)
    row += 1
    for spec in INPUTS:
        text, low, high = _input_check(spec)
        ws.cell(row, 1, f"{spec.label} (in_{spec.name}): {spec.allowed}")
        for col, bound in ((3, low), (4, high)):
            if bound is not None:
                cell = ws.cell(row, col, int(bound) if float(bound).is_integer() else bound)
                cell.font, cell.fill, cell.protection = (st.CONSTANT_FONT, st.CONSTANT_FILL,
                                                         st.LOCKED)
        b.formula(ws, f"B{row}", f"check.in.{spec.name}",
                  text.format(lo=f"$C${row}", hi=f"$D${row}"), "text")
        ws[f"B{row}"].alignment = st.CENTER
        row += 1
    row += 1
    _section(ws, row, "Model integrity", 4)
    row += 1
    for key, label, condition in cross_checks():
        ws.cell(row, 1, label)
        b.formula(ws, f"B{row}", f"check.{key}", f'=IF({condition},"OK","ERROR")', "text")
        ws[f"B{row}"].alignment = st.CENTER
        row += 1
    status = f"$B${CHECK_FIRST}:$B${row - 1}"
    b.formula(ws, "B4", "check.master",
              f'=IF(COUNTIF({status},"ERROR")=0,"OK","ERROR")', "text", name="check_master")
    ws["B4"].alignment = st.CENTER
    for ref in (status.replace("$", ""), "B4"):
        ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"OK"'],
                                                      fill=st.CHECK_OK_FILL,
                                                      font=st.CHECK_OK_FONT))
        ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"ERROR"'],
                                                      fill=st.CHECK_BAD_FILL,
                                                      font=st.CHECK_BAD_FONT))
    for col, width in {"A": 90, "B": 12, "C": 12, "D": 12}.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = f"A{CHECK_FIRST}"
    _print_setup(ws, landscape=False, fit_height=0)


# -- Cover ------------------------------------------------------------------------------------
_HOW_TO = (
    "1. On Inputs, pick the live scenario (Base, Optimised or Downside) and type over the blue "
    "cells; each cell says what it allows.",
    "2. Capacity turns GPUs and tokens per second into TEF, SLA and TFI, the token funnel and "
    "the cost of a GPU-hour.",
    "3. Timeline runs the site month by month: tokens sold, price, revenue, costs, EBITDA, tax "
    "and cash flow.",
    "4. Returns gives NPV, IRR, payback, ROI and the other summary outputs (named out_…).",
    "5. Sensitivity shows the margin against utilisation and the NPV over TEF target × price "
    "decline.",
    "6. Dashboard shows the headline figures and charts. Checks must all say OK.",
    "Sheets are protected without a password so formulas are not overwritten by accident; "
    "Review → Unprotect Sheet to change the structure.",
)


def _cover_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Token Factory Operating Model (TFOM)")
    ws["A2"] = ("From GPUs, tokens per second and time to first token to revenue, EBITDA, NPV "
                "and IRR — for one site, month by month.")
    ws["A2"].font = st.SUBTITLE_FONT
    ws["A4"], ws["A5"], ws["A6"], ws["A7"] = "Site", "Live scenario", "Template version", \
        "Master check"
    for r in range(4, 8):
        ws[f"A{r}"].font = st.SECTION_FONT
    b.formula(ws, "B4", "cover.site", "=in_site_name", "text", font=st.TOTAL_FONT)
    b.formula(ws, "B5", "cover.scenario", "=in_scenario", "text", font=st.TOTAL_FONT)
    ws["B6"] = __version__
    ws["B6"].font = st.TOTAL_FONT
    b.name("tfom_version", ws, "B6")
    b.formula(ws, "B7", "cover.check", "=check_master", "text", font=st.TOTAL_FONT)
    for ref in ("B7",):
        ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"OK"'],
                                                      fill=st.CHECK_OK_FILL,
                                                      font=st.CHECK_OK_FONT))
        ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=['"ERROR"'],
                                                      fill=st.CHECK_BAD_FILL,
                                                      font=st.CHECK_BAD_FONT))
    ws["A9"] = "What it is"
    ws["A9"].font = st.SECTION_FONT
    ws["A10"] = ("A token factory is an AI inference cluster judged by the tokens it sells. "
                 "This model links its technical indicators (TPS, TTFT, TEF) to its financial "
                 "ones (revenue, EBITDA, NPV, IRR): TEF = measured ÷ theoretical TPS; "
                 "TFI = TEF × SLA × sell-through, the share of theoretical capacity that "
                 "becomes revenue; the breakeven utilisation is the TFI at which revenue pays "
                 "the GPU-hour. Prices fall each quarter, so a GPU earns its keep for a limited "
                 "economic life.")
    ws["A10"].alignment = st.WRAP
    ws.merge_cells("A10:D10")
    ws.row_dimensions[10].height = 64
    ws["A12"] = "How to use it"
    ws["A12"].font = st.SECTION_FONT
    for i, line in enumerate(_HOW_TO):
        ws.cell(13 + i, 1, line).alignment = st.Alignment(wrap_text=False)
    r = 14 + len(_HOW_TO)
    ws.cell(r, 1, "Colour legend").font = st.SECTION_FONT
    for i, (text, font, fill) in enumerate(st.LEGEND):
        cell = ws.cell(r + 1 + i, 1, text)
        cell.font = font
        if fill is not None:
            cell.fill = fill
    ws.column_dimensions["A"].width = 46
    ws.column_dimensions["B"].width = 30
    ws.column_dimensions["C"].width = 30
    ws.column_dimensions["D"].width = 30
    _print_setup(ws, landscape=False, fit_height=1)


# -- Dashboard --------------------------------------------------------------------------------
_KPIS = (
    ("npv", "NPV"), ("irr", "IRR (yearly)"), ("payback_months", "Payback (months)"),
    ("ebitda_margin", "EBITDA margin"), ("revenue_total", "Revenue"),
    ("tfi_now", "TFI now"), ("breakeven_util", "Breakeven utilisation"),
    ("tef_now", "TEF now"), ("equivalent_gpus", "Equivalent GPUs"),
    ("cost_per_mtok", "Cost per Mtok sold"),
)


def _dashboard_sheet(b: _Builder, ws: Worksheet) -> None:
    _title(ws, "Dashboard")
    ws["A2"] = '=in_site_name&" · "&in_scenario&" scenario · "&TEXT(in_horizon_months,"0")' \
               '&" months from "&TEXT(in_start_date,"yyyy-mm-dd")&" · "&in_currency'
    b.formula(ws, "A2", "dash.subtitle", ws["A2"].value, "text", font=st.SUBTITLE_FONT)
    ws["A2"].alignment = st.Alignment(horizontal="left")
    ws["I1"] = "Master check"
    ws["I1"].font = st.KPI_LABEL_FONT
    ws["I1"].alignment = st.RIGHT
    b.formula(ws, "J1", "dash.check", "=check_master", "text", font=st.CHECK_OK_FONT)
    ws["J1"].alignment = st.CENTER
    ws.conditional_formatting.add("J1", CellIsRule(operator="equal", formula=['"OK"'],
                                                   fill=st.CHECK_OK_FILL, font=st.CHECK_OK_FONT))
    ws.conditional_formatting.add("J1", CellIsRule(operator="equal", formula=['"ERROR"'],
                                                   fill=st.CHECK_BAD_FILL,
                                                   font=st.CHECK_BAD_FONT))
    kinds = {o.name: o.kind for o in OUTPUTS}
    for i, (name, label) in enumerate(_KPIS):
        col = _col(1 + i)
        ws[f"{col}4"] = label
        ws[f"{col}4"].font = st.KPI_LABEL_FONT
        ws[f"{col}4"].alignment = st.CENTER
        kind = kinds[name]
        b.formula(ws, f"{col}5", f"dash.kpi.{name}", f"=out_{name}",
                  {"money": "money", "fraction": "fraction", "months": "months",
                   "gpus": "integer", "price": "price"}.get(kind, kind),
                  font=st.KPI_VALUE_FONT)
        ws[f"{col}5"].alignment = st.CENTER
        ws[f"{col}4"].border = ws[f"{col}5"].border = st.BOX
        ws.column_dimensions[col].width = 17
    ws.row_dimensions[5].height = 30

    # The monthly charts read the Timeline: months beyond the horizon show "" there, which
    # charts draw as zero-height columns (invisible) rather than a line falling to zero.
    tl = b.wb["Timeline"]
    first_col, last_col = FIRST_MONTH_COL, LAST_COL
    dates = Reference(tl, min_col=first_col, max_col=last_col, min_row=TIMELINE_ROWS["end"])

    def column_chart(title: str, keys: Sequence[str], y_title: str) -> BarChart:
        chart = BarChart()
        chart.type = "col"
        chart.grouping = "clustered"
        chart.title = title
        chart.height, chart.width = 10, 20.5
        for key in keys:
            ref = Reference(tl, min_col=first_col, max_col=last_col, min_row=TIMELINE_ROWS[key])
            series = Series(ref, title=str(_LINE_LABELS[key]))
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
                              "per month (millions)"), "A7")
    ws.add_chart(column_chart("Cumulative cash flow", ["cumulative_cash_flow"],
                              "millions (payback where it crosses 0)"), "F7")

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
    ws.add_chart(funnel, "A28")

    sens = b.wb["Sensitivity"]
    margin = LineChart()
    margin.title = "Margin against utilisation"
    margin.height, margin.width = 10, 20.5
    last = SENS_UTIL_FIRST + SENS_UTIL_COUNT - 1
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
    ws.add_chart(margin, "F28")
    ws.print_area = "A1:J48"
    _print_setup(ws, fit_height=1)
    ws.page_setup.fitToHeight = 1


# -- the workbook -----------------------------------------------------------------------------
def _build(inputs: SiteInputs) -> tuple[Workbook, Plan]:
    wb = Workbook()
    wb.remove(wb.active)
    sheets = {name: wb.create_sheet(name) for name in SHEETS}
    b = _Builder(wb)
    _inputs_sheet(b, sheets["Inputs"], inputs)
    _capacity_sheet(b, sheets["Capacity"])
    _timeline_sheet(b, sheets["Timeline"])
    _returns_sheet(b, sheets["Returns"])
    _sensitivity_sheet(b, sheets["Sensitivity"])
    _checks_sheet(b, sheets["Checks"])
    _cover_sheet(b, sheets["Cover"])
    _dashboard_sheet(b, sheets["Dashboard"])
    for ws in wb.worksheets:
        _protect(ws)
        ws.sheet_view.zoomScale = 90
    colours = {"Cover": "1F3864", "Inputs": "FFC000", "Dashboard": "1F3864", "Checks": "70AD47"}
    for name, colour in colours.items():
        sheets[name].sheet_properties.tabColor = colour
    wb.active = SHEETS.index("Cover")
    wb.calculation.fullCalcOnLoad = True
    return wb, b.plan


def build_workbook(inputs: SiteInputs | None = None) -> Workbook:
    """The TFOM workbook with ``inputs`` typed in (the catalogue defaults when ``None``).

    Native formulas only, no stored values: Excel and LibreOffice compute on opening (the
    workbook asks for a full calculation on load).
    """
    wb, _ = _build(inputs if inputs is not None else default_inputs())
    return wb


@functools.lru_cache(maxsize=1)
def plan() -> Plan:
    """Where every input and formula cell of the workbook is (the same for every site)."""
    return _build(default_inputs())[1]


#: Fixed document properties, so that the same inputs give the same bytes.
DOC_TIME = dt.datetime(2026, 1, 1)
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)


def workbook_bytes(wb: Workbook) -> bytes:
    """The ``.xlsx`` file of ``wb``, deterministic: fixed document dates, creator, zip times."""
    wb.properties.creator = "tokenfactory_xl"
    wb.properties.lastModifiedBy = "tokenfactory_xl"
    wb.properties.created = DOC_TIME
    wb.properties.modified = DOC_TIME
    wb.properties.title = "Token Factory Operating Model (TFOM)"
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        ExcelWriter(wb, archive).write_data()  # openpyxl's save() stamps the current time
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o600 << 16
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def save_workbook(wb: Workbook, path: str | os.PathLike, *, force: bool = True) -> Path:
    """Write ``wb`` to ``path`` deterministically and atomically (temp file, then rename).

    With ``force=False`` an existing file is left alone and ``FileExistsError`` raised.
    """
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(str(path))
    return write_atomically(path, workbook_bytes(wb))


# -- cell values from the Python model -------------------------------------------------------
def cell_values(inputs: SiteInputs, result: Result | None = None
                ) -> dict[str, dict[str, object]]:
    """Sheet → coordinate → the value each input and formula cell shows, from the Python model.

    Numbers are floats (input counts ints, dates ``datetime``), texts are strings, ``"none"``
    where the spec says none, ``""`` for months beyond the horizon. ``result`` is
    ``run(inputs)`` when the caller has it already (it is not computed twice).
    """
    from .workbook_values import model_values

    p = plan()
    values = model_values(inputs, result)
    horizon = int(inputs["horizon_months"])  # type: ignore[call-overload]
    out: dict[str, dict[str, object]] = {name: {} for name in SHEETS}
    for sheet, coord, name, index in p.inputs:
        spec = BY_NAME[name]
        value = inputs[name]
        out[sheet][coord] = input_cell_value(spec, value[index] if index is not None else value)
    for sheet, coord, key in p.scalars:
        out[sheet][coord] = values[key]
    blank_h1 = [""] * (MAX_MONTHS - horizon)
    for sheet, coords, key, pad in p.vectors:
        v = values[key]
        items = v.tolist() if isinstance(v, np.ndarray) else list(v)
        if pad != "all":
            items = items + blank_h1
        out[sheet].update(zip(coords, items, strict=True))
    return out
