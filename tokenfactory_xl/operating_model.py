"""The Token Factory Operating Model (TFOM): one site, month by month, from tokens to returns.

TFOM links the technical indicators of a token factory (TPS, TTFT, TEF) to the financial ones
(revenue, EBITDA, ROI) for one site (seed 000). Month 0 holds the investment; months 1…H sell
tokens. Each month the TEF and the sell-through move along linear ramps to their targets, the
price falls by the quarterly decline, and power, opex, rent, depreciation and tax follow the
calendar hours of the month. TFOM-SPEC section 4 is the contract; section 7 names the summary.

**Every line is declared once**, below, as a :class:`~tokenfactory_xl.formula.Line`: its name,
label, unit and formula, written in the expression language of :mod:`tokenfactory_xl.formula`
over inputs (``I.gpus``), named constants (``K.seconds_per_hour``) and other lines. The workbook
renders each declaration as the Excel formula of its cell or row; :func:`run` compiles the same
declarations into one numpy function and returns the monthly lines and the summary; batch
stores those very values beside the formulas. ``docs/architecture.md`` shows how to add a line.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .catalogue import BY_NAME, INPUTS
from .formula import (
    ABS,
    AND,
    AVERAGE,
    COLUMNS,
    COUNT,
    COUNTIF,
    DAY,
    EOMONTH,
    IF,
    IFERROR,
    INDEX,
    INT,
    ISNUMBER,
    ISTEXT,
    LEN,
    LN,
    MATCH,
    MAX,
    MIN,
    NONE,
    NORMSDIST,
    NORMSINV,
    OR,
    ROUNDUP,
    ROWS,
    SIGN,
    SUM,
    SUMIF,
    SUMPRODUCT,
    At,
    Cell,
    Const,
    Each,
    Expr,
    Input,
    Line,
    ListRef,
    Name,
    Position,
    Row,
    RunningSum,
    Table,
    Text,
    compile_model,
    from_serial,
    none_if,
    to_serial,
)
from .inputs import SiteInputs

#: The timeline has this many month columns (TFOM-SPEC §6: horizons of 1–120 months).
MAX_MONTHS = int(BY_NAME["horizon_months"].high)  # type: ignore[arg-type]
YEARS = MAX_MONTHS // 12


class _Names:
    """``I.gpus`` is ``Input("gpus")``, ``K.hours_per_year`` is ``Const("hours_per_year")``…"""

    def __init__(self, make: Callable[[str], Expr]):
        self._make = make

    def __getattr__(self, name: str) -> Expr:
        return self._make(name)


I, K, N, C = _Names(Input), _Names(Const), _Names(Name), _Names(Cell)  # noqa: E741


def prev(line: str) -> Cell:
    return Cell(line, -1)


def nxt(line: str) -> Cell:
    return Cell(line, +1)


# -- constants --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Constant:
    """A number fixed by definition, not an assumption (FAST: no numbers hidden in formulas)."""

    name: str
    label: str
    unit: str
    value: float | tuple[float, ...]
    note: str


CONSTANTS: tuple[Constant, ...] = (
    Constant("seconds_per_minute", "Seconds in a minute", "s", 60, "TPM = TPS × 60"),
    Constant("seconds_per_hour", "Seconds in an hour", "s", 3_600, "tokens per hour = TPS × 3,600"),
    Constant("hours_per_day", "Hours in a day", "hours", 24, "a month's hours = its days × 24"),
    Constant("hours_per_year", "Hours in a year", "hours", 8_760, "365 days × 24 (TFOM-SPEC §2)"),
    Constant("hours_per_month", "Average hours in a month", "hours", 730,
             "8,760 ÷ 12: spreads the fixed opex over GPU-hours (§7)"),
    Constant("months_per_year", "Months in a year", "months", 12,
             "yearly rates and depreciation lives in months"),
    Constant("months_per_quarter", "Months in a quarter", "months", 3,
             "the price declines once per quarter, spread over its months (§3)"),
    Constant("tokens_per_mtok", "Tokens in a million tokens", "tokens", 1_000_000,
             "prices are per million tokens (Mtok)"),
    Constant("kw_per_mw", "Kilowatts in a megawatt", "kW", 1_000, "facility power in MW"),
    Constant("ttft_percentile", "Percentile of the TTFT p99", "fraction", 0.99,
             "z = NORMSINV(0.99) = 2.326 converts p99 ÷ p50 into the log-normal σ (§1)"),
    Constant("util_step", "Sensitivity: utilisation step", "fraction", 0.05,
             "margin against utilisation from 5% to 100%"),
    Constant("check_tolerance", "Checks: relative tolerance", "fraction", 1e-9,
             "how closely two ways of computing a total must agree"),
    Constant("sens_tef_targets", "Sensitivity: TEF targets", "fraction",
             (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), "rows of the NPV grid"),
    Constant("irr_grid", "IRR search: monthly rates that bracket the IRR", "fraction",
             (-0.9999, -0.999, -0.99, -0.95, -0.9, -0.8, -0.6, -0.4, -0.3, -0.2, -0.15, -0.1,
              -0.07, -0.05, -0.03, -0.02, -0.01, -0.005, -0.002, -0.001, -0.0001, 0.0, 0.0001,
              0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0,
              2.0, 5.0, 10.0),
             "Returns: the NPV changes sign between two of them around each IRR"),
    Constant("sens_declines", "Sensitivity: price declines per quarter", "fraction",
             (0.0, 0.05, 0.10, 0.15, 0.25, 0.47), "columns of the NPV grid (0.47: seed 001)"),
)
CONSTANT_VALUES: dict[str, float | tuple[float, ...]] = {c.name: c.value for c in CONSTANTS}

IRR_STEPS = 60  # halvings: any bracket of the IRR grid shrinks below 1e-16
N_IRR = len(CONSTANT_VALUES["irr_grid"])  # type: ignore[arg-type]
N_TEF = len(CONSTANT_VALUES["sens_tef_targets"])  # type: ignore[arg-type]
N_DECLINE = len(CONSTANT_VALUES["sens_declines"])  # type: ignore[arg-type]
N_UTIL = 20

# -- tables -----------------------------------------------------------------------------------
MONTHS = Table("months", MAX_MONTHS + 1)  # the Timeline's header rows, month 0 … 120
TIMELINE = Table("timeline", MAX_MONTHS + 1, guard=C.in_horizon.eq(1))
YEAR_TABLE = Table("years", YEARS, guard=Position() <= ROUNDUP(I.horizon_months /
                                                               K.months_per_year, 0))
IRR_GRID = Table("irr_grid", N_IRR)
IRR_HALVING = Table("irr_halving", IRR_STEPS, guard=N.irr_bracket_found.eq(1), recurrent=True)
UTIL = Table("utilisation", N_UTIL)
SENS_TEF = Table("sens_tef", N_TEF)
SENS_DECLINE = Table("sens_decline", N_DECLINE)
SENS_BASIS = Table("sens_basis", MAX_MONTHS + 1)


def _scalar(name, label, unit, kind, formula, note="", **kw) -> Line:
    return Line(name, label, unit, kind, formula, note=note, defined_name=True, **kw)


def _monthly(name, label, unit, kind, formula, *, month0=False, total=False, missing="",
             **kw) -> Line:
    return Line(name, label, unit, kind, formula, table=TIMELINE, skip_first=not month0,
                total=total, missing=missing, **kw)


def _ramp_share(months: Expr) -> Expr:
    """min(m, ramp) ÷ ramp of the way from today's value to the target; ramp 0: at once."""
    return IF(months.eq(0), 1, MIN(C.month, months) / months)


def _close(a: Expr, b: Expr) -> Expr:
    return ABS(a - b) <= K.check_tolerance * MAX(1, ABS(a))


def _live(name: str) -> Expr:
    return INDEX(Input(name), 1, N.scenario_number)


def _npv_at(rate: Expr) -> Expr:
    """Σ cash flow × (1 + rate)^−month; months beyond the horizon count as month 0 (factor 1,
    no flow), so that no engine raises an overflowing power there."""
    return SUMPRODUCT(Row("cash_flow"), (1 + rate) ** (-(Row("month") * Row("in_horizon"))))


# -- Capacity: what the site computes once (TFOM-SPEC §1–§3) ---------------------------------
CAPACITY: tuple[Line | str, ...] = (
    "Live scenario",
    _scalar("scenario_number", "Live scenario number", "1–3", "integer",
            MATCH(I.scenario, ListRef("scenario"), 0),
            "position of the selected scenario in Base, Optimised, Downside"),
    _scalar("live_tef_target", "TEF target (live)", "fraction", "fraction", _live("tef_target"),
            "the live scenario's TEF target"),
    _scalar("live_sell_through_target", "Sell-through target (live)", "fraction", "fraction",
            _live("sell_through_target")),
    _scalar("live_decline", "Price decline per quarter (live)", "fraction", "fraction",
            _live("decline_per_quarter")),
    _scalar("owned_flag", "Owned fleet (1 = owned, 0 = rented)", "flag", "flag",
            IF(I.ownership.eq("own"), 1, 0), "owned fleets have CapEx and depreciation"),
    "Throughput",
    _scalar("theoretical_tps", "Theoretical TPS (cluster)", "tokens/s", "tokens",
            I.gpus * I.theoretical_tps_per_gpu, "GPUs × theoretical TPS per GPU"),
    _scalar("measured_tps", "Measured TPS (cluster)", "tokens/s", "tokens", I.measured_tps),
    _scalar("theoretical_tpm", "Theoretical TPM", "tokens/min", "tokens",
            N.theoretical_tps * K.seconds_per_minute, "TPS × 60"),
    _scalar("measured_tpm", "Measured TPM", "tokens/min", "tokens",
            N.measured_tps * K.seconds_per_minute),
    _scalar("theoretical_tokens_day", "Theoretical tokens per day", "tokens", "tokens",
            N.theoretical_tps * K.seconds_per_hour * K.hours_per_day, "TPS × 86,400"),
    _scalar("measured_tokens_day", "Measured tokens per day", "tokens", "tokens",
            N.measured_tps * K.seconds_per_hour * K.hours_per_day),
    _scalar("theoretical_tokens_year", "Theoretical tokens per year", "tokens", "tokens",
            N.theoretical_tps * K.seconds_per_hour * K.hours_per_year, "TPS × 3,600 × 8,760"),
    _scalar("measured_tokens_year", "Measured tokens per year", "tokens", "tokens",
            N.measured_tps * K.seconds_per_hour * K.hours_per_year),
    _scalar("tef_now", "TEF now", "fraction", "fraction", N.measured_tps / N.theoretical_tps,
            "Token Efficiency Factor: measured ÷ theoretical"),
    "Latency and service level",
    _scalar("ttft_sigma", "TTFT log-normal σ", "ratio", "factor",
            LN(I.ttft_p99_ms / I.ttft_p50_ms) / NORMSINV(K.ttft_percentile),
            "ln(p99 ÷ p50) ÷ z₀.₉₉"),
    _scalar("ttft_z", "TTFT objective in σ", "ratio", "factor",
            LN(I.ttft_slo_ms / I.ttft_p50_ms) / N.ttft_sigma, "ln(objective ÷ p50) ÷ σ"),
    _scalar("slo_attainment", "SLO attainment", "fraction", "fraction2", NORMSDIST(N.ttft_z),
            "share of requests whose TTFT meets the objective"),
    _scalar("service_level", "SLA", "fraction", "fraction2", I.availability * N.slo_attainment,
            "availability × SLO attainment"),
    _scalar("tfi_now", "TFI now", "fraction", "fraction2",
            N.tef_now * N.service_level * I.sell_through_start,
            "Token Factory Index: TEF × SLA × sell-through"),
    "Token funnel, a year at today's rates",
    _scalar("funnel_theoretical", "Theoretical tokens", "tokens/year", "tokens",
            N.theoretical_tokens_year, "the fleet fully busy at its best configuration"),
    _scalar("funnel_produced", "Produced tokens", "tokens/year", "tokens",
            N.funnel_theoretical * N.tef_now, "× TEF now"),
    _scalar("funnel_available", "Available tokens (within the SLA)", "tokens/year", "tokens",
            N.funnel_produced * N.service_level, "× SLA"),
    _scalar("funnel_sold", "Sold tokens", "tokens/year", "tokens",
            N.funnel_available * I.sell_through_start, "× sell-through today"),
    _scalar("load_factor", "Load factor", "fraction", "fraction2",
            N.funnel_sold / N.funnel_theoretical,
            "sold ÷ theoretical tokens: the airline load factor, equal to the TFI"),
    "Fleet equivalence",
    _scalar("equivalent_gpus", "Equivalent GPUs", "GPUs", "gpus",
            none_if(N.tef_now.eq(0), I.gpus * N.live_tef_target / N.tef_now),
            "GPUs × TEF target ÷ TEF now: the fleet at today's TEF that makes the same tokens"),
    _scalar("avoided_capex", "Avoided GPU CapEx", "money", "money",
            IF(ISNUMBER(N.equivalent_gpus), (N.equivalent_gpus - I.gpus) * I.capex_per_gpu,
               NONE), "(equivalent GPUs − GPUs) × CapEx per GPU"),
    "Prices",
    _scalar("input_price", "Input price after the cache", "money/Mtok", "price",
            I.cache_hit_rate * I.price_cached_input_per_mtok
            + (1 - I.cache_hit_rate) * I.price_input_per_mtok, "h × cached + (1 − h) × input"),
    _scalar("list_price", "List price", "money/Mtok", "price",
            (1 - I.output_share) * N.input_price + I.output_share * I.price_output_per_mtok,
            "(1 − o) × input + o × output"),
    _scalar("blended_price", "Blended price today", "money/Mtok", "price",
            N.list_price * (1 - I.batch_share * I.batch_discount),
            "list × (1 − batch share × discount)"),
    "Cost of a GPU-hour",
    _scalar("cash_opex_per_gpu_hour", "Power and other opex", "money/GPU-h", "price",
            I.power_kw_per_gpu * I.pue * I.electricity_per_kwh + I.opex_per_gpu_hour,
            "kW × PUE × price per kWh + other opex"),
    _scalar("capital_per_gpu_hour", "Depreciation (owned) or rent (rented)", "money/GPU-h",
            "price", IF(N.owned_flag.eq(1), (I.capex_per_gpu - I.salvage_per_gpu)
                        / (I.life_years * K.hours_per_year), I.rent_per_gpu_hour),
            "(CapEx − salvage) ÷ (life × 8,760), or the rent"),
    _scalar("fixed_per_gpu_hour", "Fixed opex", "money/GPU-h", "price",
            I.fixed_opex_per_month / (I.gpus * K.hours_per_month), "fixed opex ÷ (GPUs × 730)"),
    _scalar("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price",
            N.capital_per_gpu_hour + N.cash_opex_per_gpu_hour + N.fixed_per_gpu_hour,
            "the full cost of one GPU-hour"),
    _scalar("cash_cost_per_gpu_hour", "Cash cost per GPU-hour", "money/GPU-h", "price",
            IF(N.owned_flag.eq(1), 0, N.capital_per_gpu_hour) + N.cash_opex_per_gpu_hour
            + N.fixed_per_gpu_hour, "the GPU-hour cost without depreciation"),
    "Unit economics",
    _scalar("revenue_per_gpu_hour", "Revenue per GPU-hour today", "money/GPU-h", "price",
            I.theoretical_tps_per_gpu * K.seconds_per_hour * N.tfi_now * N.blended_price
            / K.tokens_per_mtok, "T × 3,600 × TFI × price ÷ 10⁶"),
    _scalar("breakeven_util", "Breakeven utilisation", "fraction", "fraction2",
            none_if(N.blended_price.eq(0), N.gpu_hour_cost / (
                I.theoretical_tps_per_gpu * K.seconds_per_hour * N.blended_price
                / K.tokens_per_mtok)), "the TFI at which revenue pays the GPU-hour"),
    _scalar("breakeven_headroom", "TFI now above breakeven", "fraction", "fraction2",
            IF(ISNUMBER(N.breakeven_util), N.tfi_now - N.breakeven_util, NONE),
            "negative: today's TFI does not pay the GPU-hour"),
    _scalar("economic_life", "Economic life", "months", "months",
            IF(N.revenue_per_gpu_hour <= N.cash_cost_per_gpu_hour, 0,
               IF(OR(N.live_decline.eq(0), N.cash_cost_per_gpu_hour.eq(0)), NONE,
                  K.months_per_quarter * LN(N.cash_cost_per_gpu_hour / N.revenue_per_gpu_hour)
                  / LN(1 - N.live_decline))),
            "months until revenue per GPU-hour falls to its cash cost"),
    "Finance",
    _scalar("monthly_discount_rate", "Monthly discount rate", "fraction/month", "rate",
            (1 + I.discount_rate) ** (1 / K.months_per_year) - 1, "(1 + r)^(1/12) − 1"),
    _scalar("capex_total", "CapEx (month 0)", "money", "money",
            IF(N.owned_flag.eq(1), I.gpus * I.capex_per_gpu, 0),
            "GPUs × CapEx per GPU; 0 when rented"),
    _scalar("salvage_total", "Salvage (last month)", "money", "money",
            IF(N.owned_flag.eq(1), I.gpus * I.salvage_per_gpu, 0),
            "GPUs × salvage per GPU, received in the last month of the horizon"),
    _scalar("depreciation_months", "Depreciation period", "months", "months",
            I.life_years * K.months_per_year),
    _scalar("depreciation_per_month", "Depreciation per month", "money", "money",
            IF(N.owned_flag.eq(1), I.gpus * (I.capex_per_gpu - I.salvage_per_gpu)
               / N.depreciation_months, 0),
            "straight line while the month is within the depreciation period"),
    _scalar("facility_mw", "Facility power of the fleet", "MW", "factor",
            I.gpus * I.power_kw_per_gpu * I.pue / K.kw_per_mw, "GPUs × kW × PUE ÷ 1,000"),
)

# -- Timeline: one row per line, one column per month (TFOM-SPEC §4) --------------------------
TIMELINE_HEADER: tuple[Line, ...] = (
    Line("month", "Month", "", "integer", Position() - 1, table=MONTHS),
    Line("month_end", "Month ending", "", "month", EOMONTH(I.start_date, C.month - 1),
         table=MONTHS),
    Line("in_horizon", "In horizon (1 = yes)", "", "flag",
         IF(C.month <= I.horizon_months, 1, 0), table=MONTHS),
    Line("year", "Year of the model", "", "integer", ROUNDUP(C.month / K.months_per_year, 0),
         table=MONTHS),
)

TIMELINE_LINES: tuple[Line | str, ...] = (
    "Capacity and sales",
    _monthly("hours", "Hours", "hours", "integer", DAY(C.month_end) * K.hours_per_day,
             total=True),
    _monthly("tef_ramp_share", "TEF ramp share", "fraction", "fraction",
             _ramp_share(I.tef_ramp_months)),
    _monthly("tef", "TEF", "fraction", "fraction",
             N.tef_now + (N.live_tef_target - N.tef_now) * C.tef_ramp_share),
    _monthly("sell_ramp_share", "Sell-through ramp share", "fraction", "fraction",
             _ramp_share(I.sell_through_ramp_months)),
    _monthly("sell_through", "Sell-through", "fraction", "fraction",
             I.sell_through_start + (N.live_sell_through_target - I.sell_through_start)
             * C.sell_ramp_share),
    _monthly("theoretical_tokens", "Theoretical tokens", "tokens, shown in millions",
             "mtokens", I.gpus * I.theoretical_tps_per_gpu * K.seconds_per_hour * C.hours,
             total=True),
    _monthly("tokens_sold", "Tokens sold", "tokens, shown in millions", "mtokens",
             C.theoretical_tokens * C.tef * N.service_level * C.sell_through, total=True),
    _monthly("price", "Price", "money/Mtok", "price",
             N.blended_price * (1 - N.live_decline) ** ((C.month - 1) / K.months_per_quarter)),
    "Profit and loss",
    _monthly("revenue", "Revenue", "money", "money", C.tokens_sold / K.tokens_per_mtok * C.price,
             total=True),
    _monthly("power", "Power", "money", "money",
             I.gpus * I.power_kw_per_gpu * I.pue * C.hours * I.electricity_per_kwh, total=True),
    _monthly("other_opex", "Other opex", "money", "money",
             I.gpus * I.opex_per_gpu_hour * C.hours + I.fixed_opex_per_month, total=True),
    _monthly("rent", "Rent", "money", "money",
             I.gpus * I.rent_per_gpu_hour * C.hours * (1 - N.owned_flag), total=True),
    _monthly("ebitda", "EBITDA", "money", "money", C.revenue - C.power - C.other_opex - C.rent,
             total=True),
    _monthly("depreciation", "Depreciation", "money", "money",
             IF(C.month <= N.depreciation_months, N.depreciation_per_month, 0), total=True),
    _monthly("ebit", "EBIT", "money", "money", C.ebitda - C.depreciation, total=True),
    _monthly("tax", "Tax", "money", "money", MAX(C.ebit, 0) * I.tax_rate, total=True),
    "Cash flow",
    _monthly("investment", "Investment (CapEx)", "money", "money",
             IF(C.month.eq(0), N.capex_total, 0), month0=True, total=True),
    _monthly("salvage", "Salvage proceeds", "money", "money",
             IF(C.month.eq(I.horizon_months), N.salvage_total, 0), total=True),
    _monthly("cash_flow", "Cash flow", "money", "money",
             IF(C.month.eq(0), 0, C.ebitda - C.tax + C.salvage) - C.investment, month0=True,
             total=True),
    _monthly("cumulative_cash_flow", "Cumulative cash flow", "money", "money",
             RunningSum("cash_flow"), month0=True),
    _monthly("discount_factor", "Discount factor", "factor", "factor",
             1 / (1 + N.monthly_discount_rate) ** C.month, month0=True),
    _monthly("discounted_cash_flow", "Discounted cash flow", "money", "money",
             C.cash_flow * C.discount_factor, month0=True, total=True),
    _monthly("payback_crossing", "Payback crossing", "months", "months",
             IF(AND(C.cumulative_cash_flow >= 0, prev("cumulative_cash_flow") < 0),
                (C.month - 1) + (-prev("cumulative_cash_flow")) / C.cash_flow, "")),
)


def _total(line: Line) -> Line:
    return Line(f"total_{line.name}", f"{line.label}, total", line.unit, line.kind,
                SUM(Row(line.name)), meta={"total_of": line.name})


TIMELINE_TOTALS: tuple[Line, ...] = tuple(
    _total(ln) for ln in TIMELINE_LINES if isinstance(ln, Line) and ln.total)


# -- the summary outputs (TFOM-SPEC §7) -------------------------------------------------------
@dataclass(frozen=True)
class Output:
    """One summary output of TFOM-SPEC section 7: its name, label, unit, display kind, formula."""

    name: str
    label: str
    unit: str
    kind: str  # fraction | money | gpus | tokens | months | price | ratio
    formula: Expr
    note: str = ""

    @property
    def line(self) -> Line:
        return Line(f"out_{self.name}", self.label, self.unit, self.kind, self.formula,
                    note=self.note, defined_name=True)


_T = _Names(lambda name: Name(f"total_{name}"))
_O = _Names(lambda name: Name(f"out_{name}"))

OUTPUTS: tuple[Output, ...] = (
    Output("tef_now", "TEF now", "fraction", "fraction", N.tef_now, "measured ÷ theoretical TPS"),
    Output("slo_attainment", "SLO attainment", "fraction", "fraction", N.slo_attainment),
    Output("sla", "SLA", "fraction", "fraction", N.service_level,
           "availability × SLO attainment"),
    Output("tfi_now", "TFI now", "fraction", "fraction", N.tfi_now,
           "TEF × SLA × sell-through today"),
    Output("equivalent_gpus", "Equivalent GPUs", "GPUs", "gpus", N.equivalent_gpus,
           "GPUs × live TEF target ÷ TEF now"),
    Output("avoided_capex", "Avoided GPU CapEx", "money", "money", N.avoided_capex),
    Output("blended_price", "Blended price", "money/Mtok", "price", N.blended_price),
    Output("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price", N.gpu_hour_cost),
    Output("breakeven_util", "Breakeven utilisation", "fraction", "fraction", N.breakeven_util,
           "compare with the TFI now"),
    Output("tokens_sold_total", "Tokens sold", "tokens", "tokens", _T.tokens_sold),
    Output("revenue_total", "Revenue", "money", "money", _T.revenue),
    Output("ebitda_total", "EBITDA", "money", "money", _T.ebitda),
    Output("ebitda_margin", "EBITDA margin", "fraction", "fraction",
           none_if(_O.revenue_total.eq(0), _O.ebitda_total / _O.revenue_total)),
    Output("npv", "NPV", "money", "money", _T.discounted_cash_flow,
           "month 0 undiscounted; monthly rate (1 + r)^(1/12) − 1"),
    Output("irr", "IRR (yearly)", "fraction/year", "fraction",
           IF(ISNUMBER(N.irr_monthly), (1 + N.irr_monthly) ** K.months_per_year - 1, NONE),
           "monthly IRR of months 0…H, shown yearly: (1 + IRR)^12 − 1; none without a sign "
           "change"),
    Output("payback_months", "Payback", "months", "months",
           IF(COUNT(Row("payback_crossing")).eq(0), NONE, MIN(Row("payback_crossing"))),
           "(k − 1) + (−cum(k − 1)) ÷ cash flow(k); none when not reached"),
    Output("roi", "ROI over the horizon", "ratio", "fraction",
           none_if(N.capex_total.eq(0), _T.cash_flow / N.capex_total),
           "Σ cash flows (month 0 included) ÷ CapEx; none without CapEx"),
    Output("cost_per_mtok", "Cost per million tokens sold", "money/Mtok", "price",
           none_if(_O.tokens_sold_total.eq(0),
                   (_T.power + _T.other_opex + _T.rent + _T.depreciation)
                   / (_O.tokens_sold_total / K.tokens_per_mtok)),
           "(Σ power + opex + rent + depreciation) ÷ Mtok sold"),
    Output("economic_life_months", "Economic life", "months", "months", N.economic_life,
           "months until revenue per GPU-hour falls to its cash cost"),
    Output("tokens_per_mw", "Tokens per MW", "tokens/s per MW", "tokens",
           none_if((N.facility_mw * _T.hours).eq(0),
                   _O.tokens_sold_total / (N.facility_mw * _T.hours * K.seconds_per_hour)),
           "tokens sold per second per MW of facility power in service"),
)
OUTPUT_NAMES: tuple[str, ...] = tuple(o.name for o in OUTPUTS)

# -- the IRR: the NPV on a grid of monthly rates, then halving the bracket nearest 0 ----------
# Unlike Excel's IRR (Newton's method from a guess), this cannot fail to converge, and it picks
# the same root in every engine where the cash flows change sign more than once.
IRR_GRID_LINES: tuple[Line, ...] = (
    Line("irr_rate", "Monthly rate", "fraction/month", "rate",
         INDEX(Const("irr_grid"), 1, Position()), table=IRR_GRID),
    Line("irr_npv", "NPV at the rate", "money", "money", IFERROR(_npv_at(C.irr_rate), ""),
         table=IRR_GRID, missing=""),
    Line("irr_change", "Sign change to next", "flag", "flag",
         IF(AND(ISNUMBER(C.irr_npv), ISNUMBER(nxt("irr_npv"))),
            IF(SIGN(C.irr_npv) * SIGN(nxt("irr_npv")) <= 0, 1, 0), 0), table=IRR_GRID),
    Line("irr_distance", "Distance from 0", "fraction/month", "rate",
         IF(C.irr_change.eq(1), MIN(ABS(C.irr_rate), ABS(nxt("irr_rate"))), ""),
         table=IRR_GRID, missing=""),
)
IRR_BRACKET: tuple[Line, ...] = (
    _scalar("irr_bracket_found", "Bracket found (1 = yes)", "flag", "flag",
            IF(COUNT(Row("irr_distance")) > 0, 1, 0)),
    _scalar("irr_bracket_position", "Bracket: position in the grid", "", "integer",
            IF(N.irr_bracket_found.eq(1),
               MATCH(MIN(Row("irr_distance")), Row("irr_distance"), 0), ""), missing=""),
)
_KEEP_LOW = (prev("irr_f_mid") > 0).eq(prev("irr_f_low") > 0)  # the root is above the mid
IRR_HALVING_LINES: tuple[Line, ...] = (
    Line("irr_step", "Halving", "", "integer", Position(), table=IRR_HALVING),
    Line("irr_low", "Low rate", "fraction/month", "rate",
         IF(_KEEP_LOW, prev("irr_mid"), prev("irr_low")), table=IRR_HALVING,
         first=INDEX(Row("irr_rate"), N.irr_bracket_position)),
    Line("irr_high", "High rate", "fraction/month", "rate",
         IF(_KEEP_LOW, prev("irr_high"), prev("irr_mid")), table=IRR_HALVING,
         first=INDEX(Row("irr_rate"), N.irr_bracket_position + 1)),
    Line("irr_f_low", "NPV at low", "money", "money",
         IF(_KEEP_LOW, prev("irr_f_mid"), prev("irr_f_low")), table=IRR_HALVING,
         first=INDEX(Row("irr_npv"), N.irr_bracket_position)),
    Line("irr_mid", "Mid rate", "fraction/month", "rate", AVERAGE(C.irr_low, C.irr_high),
         table=IRR_HALVING),
    Line("irr_f_mid", "NPV at mid", "money", "money", _npv_at(C.irr_mid), table=IRR_HALVING),
)
IRR_RESULT = _scalar(
    "irr_monthly", "IRR, monthly (from the search below)", "fraction/month", "rate",
    IF(AND(MIN(Row("cash_flow")) < 0, MAX(Row("cash_flow")) > 0, N.irr_bracket_found.eq(1)),
       At("irr_mid", IRR_STEPS - 1), NONE))

# -- the yearly summary (Returns) --------------------------------------------------------------


def _by_year(line: str) -> Expr:
    return SUMIF(Row("year"), C.year_number, Row(line))


YEARLY_LINES: tuple[Line, ...] = (
    Line("year_number", "Year", "", "integer", Position(), table=YEAR_TABLE),
    Line("year_revenue", "Revenue", "money", "money", _by_year("revenue"), table=YEAR_TABLE),
    Line("year_ebitda", "EBITDA", "money", "money", _by_year("ebitda"), table=YEAR_TABLE),
    Line("year_margin", "EBITDA margin", "fraction", "fraction",
         none_if(C.year_revenue.eq(0), C.year_ebitda / C.year_revenue), table=YEAR_TABLE),
    # months of the year only: the month-0 investment is year 0 of the Timeline
    Line("year_cash_flow", "Cash flow", "money", "money", _by_year("cash_flow"),
         table=YEAR_TABLE),
    Line("year_cumulative", "Cumulative cash flow", "money", "money",
         INDEX(Row("cumulative_cash_flow"), 1,
               MIN(C.year_number * K.months_per_year, I.horizon_months) + 1), table=YEAR_TABLE),
)

# -- Sensitivity: margin against utilisation, NPV over TEF target × price decline -------------
UTIL_LINES: tuple[Line, ...] = (
    Line("util", "Utilisation", "fraction", "fraction", Position() * K.util_step, table=UTIL),
    Line("util_margin", "Margin", "fraction", "fraction",
         IF(ISNUMBER(N.breakeven_util), 1 - N.breakeven_util / C.util, NONE), table=UTIL),
    Line("util_breakeven_marker", "Breakeven", "", "text",
         IF(ISNUMBER(N.breakeven_util),
            IF(AND(N.breakeven_util > C.util - K.util_step, N.breakeven_util <= C.util),
               "◄ breakeven", ""), ""), table=UTIL, missing=""),
    Line("util_tfi_marker", "Site today", "", "text",
         IF(AND(N.tfi_now > C.util - K.util_step, N.tfi_now <= C.util), "◄ TFI now", ""),
         table=UTIL, missing=""),
)
SENS_AXES: tuple[Line, ...] = (
    Line("sens_tef_target", "TEF target", "fraction", "fraction",
         INDEX(Const("sens_tef_targets"), 1, Position()), table=SENS_TEF),
    Line("sens_decline", "Price decline per quarter", "fraction", "fraction",
         INDEX(Const("sens_declines"), 1, Position()), table=SENS_DECLINE),
)


def _in_horizon(line: Expr) -> Expr:
    # 0 beyond the horizon, so that the grid's SUMPRODUCTs multiply numbers only
    return IF(C.in_horizon.eq(1), line, 0)


SENS_BASIS_LINES: tuple[Line, ...] = (
    Line("basis_discount", "Discount factor in the horizon", "factor", "factor",
         _in_horizon(C.discount_factor), table=SENS_BASIS, skip_first=True),
    Line("basis_revenue_full", "Revenue at TEF 100% and today's price", "money", "money",
         _in_horizon(C.theoretical_tokens * N.service_level * C.sell_through / K.tokens_per_mtok
                     * N.blended_price), table=SENS_BASIS, skip_first=True),
    Line("basis_cash_costs", "Power, other opex and rent", "money", "money",
         _in_horizon(C.power + C.other_opex + C.rent), table=SENS_BASIS, skip_first=True),
    Line("basis_depreciation", "Depreciation", "money", "money", _in_horizon(C.depreciation),
         table=SENS_BASIS, skip_first=True),
    Line("basis_salvage", "Salvage proceeds", "money", "money", _in_horizon(C.salvage),
         table=SENS_BASIS, skip_first=True),
    Line("basis_tef_ramp_share", "TEF ramp share", "fraction", "fraction",
         _in_horizon(C.tef_ramp_share), table=SENS_BASIS, skip_first=True),
) + tuple(
    Line(f"basis_revenue_tef{i}", f"Revenue at TEF target (row {i + 1} of the grid), today's "
         "price", "money", "money",
         C.basis_revenue_full * (N.tef_now + (At("sens_tef_target", i) - N.tef_now)
                                 * C.basis_tef_ramp_share), table=SENS_BASIS, skip_first=True)
    for i in range(N_TEF)
) + tuple(
    Line(f"basis_price_factor{j}", f"Price factor at decline (column {j + 1} of the grid)",
         "factor", "factor",
         (1 - At("sens_decline", j)) ** ((C.month - 1) / K.months_per_quarter),
         table=SENS_BASIS, skip_first=True)
    for j in range(N_DECLINE)
)


def _grid_npv(i: int, j: int) -> Expr:
    """NPV at TEF target i and decline j: the Timeline's EBITDA, tax and salvage re-priced."""
    ebitda = Row(f"basis_revenue_tef{i}") * Row(f"basis_price_factor{j}") \
        - Row("basis_cash_costs")
    ebit = ebitda - Row("basis_depreciation")
    return -N.capex_total + SUMPRODUCT(Row("basis_discount"), ebitda - (ebit > 0) * ebit
                                       * I.tax_rate + Row("basis_salvage"))


SENS_GRID: tuple[tuple[Line, ...], ...] = tuple(
    tuple(Line(f"npv_grid_{i}_{j}", "NPV", "money", "money", _grid_npv(i, j))
          for j in range(N_DECLINE)) for i in range(N_TEF))
GRID_NAMES: tuple[str, ...] = tuple(ln.name for row in SENS_GRID for ln in row)
_GRID = Each(GRID_NAMES, (N_TEF, N_DECLINE))


# -- Checks ------------------------------------------------------------------------------------
def _input_check(spec) -> Expr:
    """The range check of one input, its bounds named ``low_<input>``/``high_<input>``."""
    x = Input(spec.name)
    if spec.kind == "choice":
        cond = ISNUMBER(MATCH(x, ListRef(spec.name), 0))
    elif spec.kind == "date":
        cond = AND(ISNUMBER(x), DAY(x).eq(Const(f"low_{spec.name}")))
    elif spec.kind == "text":
        cond = AND(ISTEXT(x), LEN(x) >= Const(f"low_{spec.name}"),
                   LEN(x) <= Const(f"high_{spec.name}"))
    elif spec.kind == "currency":
        cond = AND(ISTEXT(x), LEN(x).eq(Const(f"low_{spec.name}")))
    else:
        parts = [COUNT(x).eq(COLUMNS(x))]
        low = Const(f"low_{spec.name}")
        parts.append(MIN(x) > low if spec.low_open else MIN(x) >= low)
        if spec.high is not None:
            parts.append(MAX(x) <= Const(f"high_{spec.name}"))
        if spec.kind == "integer":
            parts.append(x.eq(INT(x)))
        cond = AND(*parts)
    return IF(cond, "OK", "ERROR")


def check_bounds(spec) -> tuple[object, object]:
    """The low and high bound cells of an input's check (None where there is none)."""
    if spec.kind == "choice":
        return None, None
    if spec.kind == "date":
        return 1, None
    if spec.kind == "text":
        return 1, spec.max_length
    if spec.kind == "currency":
        return 3, None
    return spec.low, spec.high


INPUT_CHECKS: tuple[Line, ...] = tuple(
    Line(f"check_in_{spec.name}", f"{spec.label} (in_{spec.name}): {spec.allowed}", "", "text",
         _input_check(spec), meta={"input": spec.name}) for spec in INPUTS)

_CROSS: tuple[tuple[str, str, Expr], ...] = (
    ("salvage_le_capex", "Salvage per GPU at most the CapEx per GPU",
     I.salvage_per_gpu <= I.capex_per_gpu),
    ("p99_gt_p50", "TTFT p99 above the p50", I.ttft_p99_ms > I.ttft_p50_ms),
    ("tef_now_le_1", "TEF now at most 100% (measured ≤ theoretical TPS)", N.tef_now <= 1),
    ("tfi_le_1", "TFI now at most 100%", N.tfi_now <= 1),
    ("tef_months_le_1", "Every month's TEF at most 100%", MAX(Row("tef")) <= 1),
    ("load_factor_tfi", "Load factor equals the TFI", _close(N.load_factor, N.tfi_now)),
    ("months_counted", "One revenue figure per month of the horizon",
     COUNT(Row("revenue")).eq(I.horizon_months)),
    ("sold_le_theoretical", "Tokens sold at most the theoretical tokens",
     _T.tokens_sold <= _T.theoretical_tokens),
    ("ebitda_total", "EBITDA total = revenue − power − opex − rent totals",
     _close(_T.ebitda, _T.revenue - _T.power - _T.other_opex - _T.rent)),
    ("cash_total", "Σ monthly cash flows = last cumulative cash flow",
     _close(_T.cash_flow, INDEX(Row("cumulative_cash_flow"), 1, I.horizon_months + 1))),
    ("npv_total", "NPV = Σ discounted cash flows",
     _close(_O.npv, SUMPRODUCT(Row("cash_flow"), Row("discount_factor")))),
    ("grid_complete", "Every NPV grid cell computes",
     COUNT(_GRID).eq(ROWS(_GRID) * COLUMNS(_GRID))),
)
CROSS_CHECKS: tuple[Line, ...] = tuple(
    Line(f"check_{key}", label, "", "text", IF(condition, "OK", "ERROR"))
    for key, label, condition in _CROSS)
CHECK_NAMES: tuple[str, ...] = tuple(ln.name for ln in INPUT_CHECKS + CROSS_CHECKS)
MASTER_CHECK = _scalar(
    "check_master", "Master check", "", "text",
    IF(COUNTIF(Each(CHECK_NAMES, (len(CHECK_NAMES), 1)), "ERROR").eq(0), "OK", "ERROR"))


#: Texts the sheets show about the site, in the same language as the model's lines.
TEXT_LINES: tuple[Line, ...] = (
    # a whole number joins a text as its digits in every engine, so no TEXT() is needed
    Line("timeline_subtitle", "", "", "text",
         Text("Monthly operating model · ").concat(I.site_name).concat(" · ")
         .concat(I.scenario).concat(" scenario · ").concat(I.horizon_months).concat(" months")),
    Line("dashboard_subtitle", "", "", "text",
         I.site_name.concat(" · ").concat(I.scenario).concat(" scenario · ")
         .concat(I.horizon_months).concat(" months · money in ").concat(I.currency)),
)


def _lines(items) -> tuple[Line, ...]:
    return tuple(x for x in items if isinstance(x, Line))


#: Every line of the model, in an order in which each needs only those before it.
LINES: tuple[Line, ...] = (
    _lines(CAPACITY) + TIMELINE_HEADER + _lines(TIMELINE_LINES) + TIMELINE_TOTALS
    + IRR_GRID_LINES + IRR_BRACKET + IRR_HALVING_LINES + (IRR_RESULT,)
    + tuple(o.line for o in OUTPUTS) + YEARLY_LINES + UTIL_LINES + SENS_AXES + SENS_BASIS_LINES
    + tuple(ln for row in SENS_GRID for ln in row) + INPUT_CHECKS + CROSS_CHECKS
    + (MASTER_CHECK,) + TEXT_LINES
)
BY_LINE: dict[str, Line] = {ln.name: ln for ln in LINES}

#: The monthly lines :func:`run` returns, in the Timeline's order. Each is an array over months
#: 1…H, except those that start at month 0 (``cash_flow``, ``cumulative_cash_flow`` …).
LINE_NAMES: tuple[str, ...] = tuple(ln.name for ln in _lines(TIMELINE_LINES))
FROM_MONTH0: frozenset[str] = frozenset(
    ln.name for ln in _lines(TIMELINE_LINES) if not ln.skip_first)


# -- evaluation -------------------------------------------------------------------------------
def constant_values() -> dict[str, object]:
    """Every constant by name, the input checks' bounds included (``low_gpus`` …)."""
    out: dict[str, object] = dict(CONSTANT_VALUES)
    for spec in INPUTS:
        low, high = check_bounds(spec)
        if low is not None:
            out[f"low_{spec.name}"] = low
        if high is not None:
            out[f"high_{spec.name}"] = high
    return out


def _formula_constants() -> dict[str, object]:
    from .formula import _r

    return {k: _r(np.asarray(v, dtype=float)) if isinstance(v, tuple) else np.float64(v)
            for k, v in constant_values().items()}


LISTS: dict[str, tuple[str, ...]] = {spec.name: spec.choices for spec in INPUTS
                                     if spec.kind == "choice"}


def formula_inputs(inputs: SiteInputs) -> dict[str, object]:
    """The inputs as the compiled model takes them: dates as serial numbers, numbers as floats,
    per-scenario inputs as tuples (Base, Optimised, Downside)."""
    out: dict[str, object] = {}
    for spec in INPUTS:
        value = inputs[spec.name]
        if spec.kind == "date":
            out[spec.name] = to_serial(value)  # type: ignore[arg-type]
        elif spec.kind in ("text", "choice", "currency"):
            out[spec.name] = str(value)
        elif spec.per_scenario:
            out[spec.name] = tuple(float(x) for x in value)  # type: ignore[union-attr]
        else:
            out[spec.name] = float(value)  # type: ignore[arg-type]
    return out


@functools.lru_cache(maxsize=4)
def compiled(lines: tuple[Line, ...] = LINES):
    """The model compiled once: ``evaluate(inputs)`` → line name → values."""
    model = compile_model(lines)
    constants = _formula_constants()

    def evaluate(inputs: SiteInputs) -> dict[str, np.ndarray]:
        return model(formula_inputs(inputs), constants, LISTS)

    evaluate.__source__ = model.__source__  # type: ignore[attr-defined]
    return evaluate


@dataclass(frozen=True)
class Result:
    """What :func:`run` computes for one site and scenario.

    ``lines`` maps each of :data:`LINE_NAMES` to its monthly array; ``summary`` maps each of
    :data:`OUTPUT_NAMES` to a float, or ``None`` where the spec says "none" (no IRR, no payback,
    no ROI without CapEx, or a division by zero such as a TEF now of 0). ``values`` holds every
    line of the model (:data:`LINES`) as computed, which the workbook stores beside its formulas.
    """

    inputs: SiteInputs
    scenario: str
    month_starts: tuple[dt.date, ...]
    month_ends: tuple[dt.date, ...]
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]
    values: dict[str, np.ndarray] = field(default_factory=dict)


def run(inputs: SiteInputs, scenario: str | None = None) -> Result:
    """Compute the monthly model and the summary of one site.

    Parameters
    ----------
    inputs : the site's checked inputs (:func:`tokenfactory_xl.inputs.make_inputs`).
    scenario : the scenario to compute; default the live one (``inputs["scenario"]``).
    """
    scenario = scenario or inputs.scenario
    if scenario != inputs.scenario:
        inputs = SiteInputs({**inputs, "scenario": scenario})
    return result_from(inputs, compiled()(inputs))


def result_from(inputs: SiteInputs, values: dict[str, np.ndarray]) -> Result:
    """The :class:`Result` of values computed by a compiled model that holds :data:`LINES`."""
    horizon = int(inputs["horizon_months"])  # type: ignore[call-overload]
    lines = {}
    for name in LINE_NAMES:
        start = 0 if name in FROM_MONTH0 else 1
        lines[name] = np.asarray(values[name][start:horizon + 1], dtype=float)
    summary: dict[str, float | None] = {}
    for name in OUTPUT_NAMES:
        x = float(values[f"out_{name}"])
        summary[name] = x if np.isfinite(x) else None
    ends = tuple(from_serial(s).date() for s in values["month_end"][1:horizon + 1])
    starts = tuple(e.replace(day=1) for e in ends)
    return Result(inputs, inputs.scenario, starts, ends, lines, summary, values)


def grid(result: Result) -> np.ndarray:
    """The Sensitivity sheet's NPV grid: TEF targets (rows) × price declines (columns)."""
    return np.array([[float(result.values[ln.name]) for ln in row] for row in SENS_GRID])
