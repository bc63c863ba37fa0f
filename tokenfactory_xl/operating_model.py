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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalogue import BY_NAME, COHORT_SPECS, INPUTS, MAX_COHORTS
from .catalogue import SCENARIOS as SCENARIO_NAMES
from .formula import (
    ABS,
    AND,
    AVERAGE,
    CHOOSE,
    COLUMNS,
    COUNT,
    COUNTA,
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
    NOT,
    OR,
    ROUND,
    ROUNDUP,
    ROWS,
    SIGN,
    SUM,
    SUMIF,
    SUMPRODUCT,
    YEAR,
    At,
    Cell,
    Const,
    Each,
    Expr,
    Input,
    Line,
    ListRef,
    Name,
    Num,
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
    Constant("irr_smallest", "IRR grid: smallest monthly rate either side of 0", "fraction",
             0.0001, "the grid's rates nearest 0"),
    Constant("irr_step", "IRR grid: step from one rate to the next", "factor", 1.1,
             "each rate 10% further from 0 than the one before"),
    Constant("irr_negatives", "IRR grid: rates below 0", "rates", 98,
             "from −0.01% to −99% a month"),
    Constant("irr_lowest", "IRR grid: the lowest monthly rate, as a loss", "fraction", 0.99,
             "−99% a month"),
    Constant("irr_highest", "IRR grid: the highest monthly rate", "fraction", 10,
             "+1,000% a month"),
    Constant("scenario_base", "Scenario number: Base", "", 1, "first column of an S input"),
    Constant("scenario_optimised", "Scenario number: Optimised", "", 2,
             "second column of an S input"),
    Constant("scenario_downside", "Scenario number: Downside", "", 3,
             "third column of an S input"),
)
CONSTANT_VALUES: dict[str, float | tuple[float, ...]] = {c.name: c.value for c in CONSTANTS}

IRR_STEPS = 60  # halvings: any bracket of the IRR grid shrinks below 1e-16
N_IRR = 221  # the IRR grid: 98 rates below 0, 0, and 122 above (CONSTANTS irr_*)
N_UTIL = 20
#: Calendar years a timeline of 120 months can touch (one starting in December: 11).
FISCAL_YEARS = MAX_MONTHS // 12 + 1


@dataclass(frozen=True)
class Scenario:
    """One of the three scenarios computed side by side: its name, the suffix of its lines
    (``revenue_base``) and the constant holding its column in an S input."""

    name: str
    key: str
    number: str


SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(name, name.lower(), f"scenario_{name.lower()}") for name in SCENARIO_NAMES)

# -- tables -----------------------------------------------------------------------------------
MONTHS = Table("months", MAX_MONTHS + 1)  # the Timeline's header rows, month 0 … 120
TIMELINE = Table("timeline", MAX_MONTHS + 1, guard=C.in_horizon.eq(1))
COHORTS = Table("cohorts", MAX_COHORTS)  # the fleet block: cohort 1 is the site's own columns
FISCAL = Table("fiscal", FISCAL_YEARS, guard=Position() <= N.fiscal_years)
YEAR_TABLE = Table("years", YEARS, guard=Position() <= ROUNDUP(I.horizon_months /
                                                               K.months_per_year, 0))
IRR_GRID = Table("irr_grid", N_IRR)
UTIL = Table("utilisation", N_UTIL)


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


def _given(x: Expr) -> Expr:
    """A number was typed (a blank optional input is not)."""
    return COUNT(x).eq(1)


def _pv(line: str) -> Expr:
    """Σ line × discount factor, month 0 undiscounted (text and blanks count as 0)."""
    return SUMPRODUCT(Row("discount_factor"), Row(line))


def _npv_at(cash_flow: str, rate: Expr) -> Expr:
    """Σ cash flow × (1 + rate)^−month; months beyond the horizon count as month 0 (factor 1,
    no flow), so that no engine raises an overflowing power there."""
    return SUMPRODUCT(Row(cash_flow), (1 + rate) ** (-(Row("month") * Row("in_horizon"))))


# -- Capacity: what the site computes once (TFOM-SPEC §1–§3, §6 "Derived once") -----------------
CAPACITY: tuple[Line | str, ...] = (
    "Live scenario",
    _scalar("scenario_number", "Live scenario number", "1–3", "integer",
            MATCH(I.scenario, ListRef("scenario"), 0),
            "position of the selected scenario in Base, Optimised, Downside"),
    _scalar("owned_flag", "Site's own GPUs owned (1) or rented (0)", "flag", "flag",
            IF(I.ownership.eq("own"), 1, 0), "cohort 1's ownership, and every cohort's default"),
    "Throughput (cohort 1: the site's own GPUs, today's fleet)",
    _scalar("site_tps_per_gpu", "Theoretical TPS per GPU", "tokens/s", "tokens",
            IF(AND(_given(I.prefill_tps_per_gpu), _given(I.decode_tps_per_gpu)),
               1 / ((1 - I.output_share) / I.prefill_tps_per_gpu
                    + I.output_share / I.decode_tps_per_gpu), I.theoretical_tps_per_gpu),
            "the input, or 1 ÷ ((1 − o) ÷ prefill + o ÷ decode) when both are given"),
    _scalar("theoretical_tps", "Theoretical TPS (cluster)", "tokens/s", "tokens",
            I.gpus * N.site_tps_per_gpu, "GPUs × theoretical TPS per GPU"),
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
    "Prices",
    _scalar("input_price", "Input price after the cache", "money/Mtok", "price",
            I.cache_hit_rate * I.price_cached_input_per_mtok
            + (1 - I.cache_hit_rate) * I.price_input_per_mtok, "h × cached + (1 − h) × input"),
    _scalar("list_price", "List price", "money/Mtok", "price",
            (1 - I.output_share) * N.input_price + I.output_share * I.price_output_per_mtok,
            "(1 − o) × input + o × output"),
    _scalar("blended_price", "Blended price today (P₀)", "money/Mtok", "price",
            N.list_price * (1 - I.batch_share * I.batch_discount),
            "list × (1 − batch share × discount)"),
    "Cost of a GPU-hour (cohort 1)",
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
    _scalar("revenue_per_gpu_hour", "Revenue per GPU-hour today", "money/GPU-h", "price",
            N.site_tps_per_gpu * K.seconds_per_hour * N.tfi_now * N.blended_price
            / K.tokens_per_mtok, "T × 3,600 × TFI × P₀ ÷ 10⁶"),
    "Finance",
    _scalar("monthly_discount_rate", "Monthly discount rate", "fraction/month", "rate",
            (1 + I.discount_rate) ** (1 / K.months_per_year) - 1, "(1 + r)^(1/12) − 1"),
    _scalar("debt_monthly_rate", "Debt: monthly interest rate", "fraction/month", "rate",
            I.debt_rate / K.months_per_year, "debt rate ÷ 12 (a nominal yearly rate)"),
    _scalar("debt_growth", "Debt: (1 + i) to the tenor", "factor", "factor",
            (1 + N.debt_monthly_rate) ** I.debt_tenor_months,
            "(1 + i)^n, of the annuity and its balances"),
    _scalar("split_costs", "Prefill and decode TPS given (1 = yes)", "flag", "flag",
            IF(AND(_given(I.prefill_tps_per_gpu), _given(I.decode_tps_per_gpu)), 1, 0),
            "the cost per million tokens splits into input and output"),
)


# -- the fleet block: one column per cohort (TFOM-SPEC §4.1) -----------------------------------
def _cohort_number(field: str, site: Expr) -> Expr:
    """Cohort k ≥ 2's number in the fleet block, or the site's own value when left blank."""
    typed = INDEX(Input(f"fleet_{field}"), 1, Position() - 1)
    return IF(_given(typed), typed, site)


def _fleet(name, label, unit, kind, formula, note="", first=None) -> Line:
    return Line(f"c_{name}", label, unit, kind, formula, table=COHORTS, first=first, note=note)


_OWN_TYPED = INDEX(Input("fleet_ownership"), 1, Position() - 1)
FLEET: tuple[Line, ...] = (
    _fleet("number", "Cohort", "", "integer", Position()),
    _fleet("gpus", "GPUs", "GPUs", "gpus",
           IF(_given(INDEX(Input("fleet_gpus"), 1, Position() - 1)),
              INDEX(Input("fleet_gpus"), 1, Position() - 1), 0),
           "0 for an empty column", first=I.gpus),
    _fleet("online", "Online month", "month", "integer", _cohort_number("online_month", 1),
           "cohort 1: month 1", first=Num(1)),
    _fleet("last", "Last month in service", "month", "integer",
           IF(_given(INDEX(Input("fleet_retire_month"), 1, Position() - 1)),
              MIN(INDEX(Input("fleet_retire_month"), 1, Position() - 1), I.horizon_months),
              I.horizon_months),
           "retire month, or the horizon when blank or later",
           first=IF(_given(I.retire_month), MIN(I.retire_month, I.horizon_months),
                    I.horizon_months)),
    _fleet("owned", "Owned (1) or rented (0)", "flag", "flag",
           IF(LEN(_OWN_TYPED).eq(0), N.owned_flag, IF(_OWN_TYPED.eq("own"), 1, 0)),
           first=N.owned_flag),
    _fleet("capex_per_gpu", "CapEx per GPU", "money/GPU", "money",
           _cohort_number("capex_per_gpu", I.capex_per_gpu), first=I.capex_per_gpu),
    _fleet("salvage_per_gpu", "Salvage per GPU", "money/GPU", "money",
           _cohort_number("salvage_per_gpu", I.salvage_per_gpu), first=I.salvage_per_gpu),
    _fleet("life_years", "Depreciation life", "years", "factor",
           _cohort_number("life_years", I.life_years), first=I.life_years),
    _fleet("rent_per_gpu_hour", "Rent per GPU-hour", "money/GPU-h", "price",
           _cohort_number("rent_per_gpu_hour", I.rent_per_gpu_hour),
           first=I.rent_per_gpu_hour),
    _fleet("power_kw_per_gpu", "Power per GPU", "kW", "factor",
           _cohort_number("power_kw_per_gpu", I.power_kw_per_gpu), first=I.power_kw_per_gpu),
    _fleet("tps_per_gpu", "Theoretical TPS per GPU", "tokens/s", "tokens",
           _cohort_number("theoretical_tps_per_gpu", N.site_tps_per_gpu),
           first=N.site_tps_per_gpu),
    _fleet("dep_months", "Depreciation months", "months", "integer",
           ROUND(C.c_life_years * K.months_per_year, 0), "ROUND(12 × life)"),
    _fleet("capex", "CapEx", "money", "money", C.c_owned * C.c_gpus * C.c_capex_per_gpu,
           "paid the month before the cohort comes online; 0 when rented"),
    _fleet("dep_per_month", "Depreciation per month", "money", "money",
           C.c_owned * C.c_gpus * (C.c_capex_per_gpu - C.c_salvage_per_gpu) / C.c_dep_months),
    _fleet("dep_left", "Depreciation months left at retirement", "months", "integer",
           MAX(0, C.c_online + C.c_dep_months - 1 - C.c_last)),
    _fleet("book_value", "Net book value at retirement", "money", "money",
           C.c_owned * C.c_gpus * (C.c_salvage_per_gpu + (C.c_capex_per_gpu - C.c_salvage_per_gpu)
                                   * C.c_dep_left / C.c_dep_months)),
    _fleet("proceeds", "Disposal proceeds", "money", "money",
           C.c_owned * C.c_gpus * (C.c_salvage_per_gpu + (C.c_capex_per_gpu - C.c_salvage_per_gpu)
                                   * C.c_dep_left / C.c_dep_months * I.residual_share),
           "salvage + the undepreciated value above it × residual share"),
    _fleet("loan", "Debt drawn", "money", "money", I.debt_share * C.c_capex,
           "debt share × CapEx, drawn when the CapEx is paid"),
    _fleet("draw_month", "Drawdown month", "month", "integer", C.c_online - 1),
    _fleet("payment", "Annuity payment", "money/month", "money",
           IF(N.debt_monthly_rate.eq(0), C.c_loan / I.debt_tenor_months,
              C.c_loan * N.debt_monthly_rate / (1 - 1 / N.debt_growth)),
           "D × i ÷ (1 − (1 + i)^−n); D ÷ n at rate 0"),
    _fleet("kw", "Facility power", "kW", "factor", C.c_gpus * C.c_power_kw_per_gpu * I.pue,
           "GPUs × kW × PUE"),
)

FLEET_SCALARS: tuple[Line, ...] = (
    _scalar("fleet_gpus", "GPUs of all cohorts", "GPUs", "gpus", SUM(Row("c_gpus")),
            "the planned fleet"),
    _scalar("owned_gpus", "Owned GPUs", "GPUs", "gpus", SUMPRODUCT(Row("c_gpus"), Row("c_owned"))),
    _scalar("owned_capex", "CapEx of owned cohorts", "money", "money", SUM(Row("c_capex"))),
    _scalar("rented_gpus", "Rented GPUs", "GPUs", "gpus", N.fleet_gpus - N.owned_gpus),
    _scalar("rented_rent", "Rent of rented cohorts per hour", "money/h", "money",
            SUMPRODUCT(Row("c_gpus"), Row("c_rent_per_gpu_hour"), 1 - Row("c_owned"))),
)


def _in_service(month: Expr) -> Expr:
    """1 where a cohort is in service in ``month`` (its online month … its last month)."""
    return (Row("c_online") <= month) * (Row("c_last") >= month)


def _owed(month: Expr) -> Expr:
    """Σ over loans of what is owed after ``month``'s payment: k = month − drawdown month
    payments made, D × ((1 + i)^n − (1 + i)^k) ÷ ((1 + i)^n − 1) for 0 ≤ k < n (D × (n − k) ÷ n
    at rate 0), nothing before the drawdown or after the last payment."""
    k = month - Row("c_draw_month")
    open_loans = Row("c_loan") * (k >= 0) * (k < I.debt_tenor_months)
    return IF(N.debt_monthly_rate.eq(0),
              SUMPRODUCT(open_loans * (I.debt_tenor_months - k)) / I.debt_tenor_months,
              SUMPRODUCT(open_loans * (N.debt_growth - (1 + N.debt_monthly_rate) ** k))
              / (N.debt_growth - 1))


# -- Timeline: the header rows and the fleet, the same in every scenario -----------------------
TIMELINE_HEADER: tuple[Line, ...] = (
    Line("month", "Month", "", "integer", Position() - 1, table=MONTHS),
    Line("month_end", "Month ending", "", "month", EOMONTH(I.start_date, C.month - 1),
         table=MONTHS),
    Line("in_horizon", "In horizon (1 = yes)", "", "flag",
         IF(C.month <= I.horizon_months, 1, 0), table=MONTHS),
    Line("year", "Year of the model", "", "integer", ROUNDUP(C.month / K.months_per_year, 0),
         table=MONTHS),
    Line("fiscal_index", "Fiscal year (1 = the first calendar year)", "", "integer",
         IF(AND(C.month >= 1, C.in_horizon.eq(1)),
            YEAR(C.month_end) - YEAR(I.start_date) + 1, 0), table=MONTHS),
)

_FISCAL_YEARS = _scalar(
    "fiscal_years", "Calendar years the horizon touches", "years", "integer",
    MAX(Row("fiscal_index")), "the first and last may be partial")

FLEET_LINES: tuple[Line | str, ...] = (
    "Fleet (every scenario)",
    _monthly("hours", "Hours", "hours", "integer", DAY(C.month_end) * K.hours_per_day,
             total=True),
    _monthly("gpus_in_service", "GPUs in service", "GPUs", "gpus",
             SUMPRODUCT(Row("c_gpus") * _in_service(C.month))),
) + tuple(
    _monthly(f"gpus_cohort_{k + 1}", f"  of which cohort {k + 1}", "GPUs", "gpus",
             At("c_gpus", k) * (At("c_online", k) <= C.month) * (At("c_last", k) >= C.month))
    for k in range(MAX_COHORTS)
) + (
    _monthly("theoretical_tokens", "Theoretical tokens", "tokens, shown in millions",
             "mtokens", SUMPRODUCT(Row("c_gpus") * Row("c_tps_per_gpu") * _in_service(C.month))
             * K.seconds_per_hour * C.hours, total=True),
    _monthly("facility_kw", "Facility power in service", "kW", "factor",
             SUMPRODUCT(Row("c_kw") * _in_service(C.month))),
    _monthly("mw_seconds", "Facility power × time", "MW·s", "tokens",
             C.facility_kw / K.kw_per_mw * C.hours * K.seconds_per_hour, total=True),
    _monthly("power", "Power", "money", "money", C.facility_kw * C.hours * I.electricity_per_kwh,
             total=True),
    _monthly("other_opex", "Other opex", "money", "money",
             C.gpus_in_service * I.opex_per_gpu_hour * C.hours + I.fixed_opex_per_month,
             total=True),
    _monthly("rent", "Rent", "money", "money",
             SUMPRODUCT(Row("c_gpus") * Row("c_rent_per_gpu_hour") * (1 - Row("c_owned"))
                        * _in_service(C.month)) * C.hours, total=True),
    _monthly("capex", "CapEx", "money", "money",
             SUMPRODUCT(Row("c_capex") * (Row("c_draw_month")).eq(C.month)), month0=True,
             total=True),
    _monthly("depreciation", "Depreciation", "money", "money",
             SUMPRODUCT(Row("c_dep_per_month") * _in_service(C.month)
                        * (Row("c_online") + Row("c_dep_months") > C.month)), total=True),
    _monthly("disposal_book_value", "Book value of disposals", "money", "money",
             SUMPRODUCT(Row("c_book_value") * Row("c_last").eq(C.month)), total=True),
    _monthly("disposal_proceeds", "Disposal proceeds", "money", "money",
             SUMPRODUCT(Row("c_proceeds") * Row("c_last").eq(C.month)), total=True),
    _monthly("disposal_gain", "Gain or loss on disposal", "money", "money",
             C.disposal_proceeds - C.disposal_book_value, total=True),
    _monthly("contracted_tokens", "Contracted tokens", "tokens, shown in millions", "mtokens",
             IF(C.month <= I.contract_months, I.contract_mtok_per_month * K.tokens_per_mtok, 0),
             total=True),
    _monthly("discount_factor", "Discount factor", "factor", "factor",
             1 / (1 + N.monthly_discount_rate) ** C.month, month0=True),
    "Debt (every scenario)",
    _monthly("drawdown", "Debt drawn", "money", "money",
             SUMPRODUCT(Row("c_loan") * Row("c_draw_month").eq(C.month)), month0=True,
             total=True),
    _monthly("debt_service", "Scheduled debt service", "money", "money",
             SUMPRODUCT(Row("c_payment") * (C.month - Row("c_draw_month") >= 1)
                        * (C.month - Row("c_draw_month") <= I.debt_tenor_months)), total=True),
    _monthly("interest", "Interest", "money", "money",
             IF(N.debt_monthly_rate.eq(0), 0,
                SUMPRODUCT(Row("c_loan") * (C.month - Row("c_draw_month") >= 1)
                           * (C.month - Row("c_draw_month") <= I.debt_tenor_months)
                           * (N.debt_growth - (1 + N.debt_monthly_rate)
                              ** (C.month - Row("c_draw_month") - 1)))
                * N.debt_monthly_rate / (N.debt_growth - 1)),
             note="i × the opening balance of each loan", total=True),
    _monthly("repayment_at_h", "Repaid at the horizon", "money", "money",
             IF(C.month.eq(I.horizon_months), _owed(C.month), 0),
             note="what is still owed after month H's payment (a refinancing)", total=True),
    _monthly("principal", "Principal repaid", "money", "money",
             C.debt_service - C.interest + C.repayment_at_h, total=True),
    _monthly("debt_balance", "Debt outstanding", "money", "money",
             IF(C.month.eq(I.horizon_months), 0, _owed(C.month)), month0=True,
             note="after the month's payments; nothing after the horizon's repayment"),
)



# -- each scenario: efficiency, demand, profit, tax and cash (TFOM-SPEC §4.2–§4.4) -------------
def _s_input(name: str, sc: Scenario) -> Expr:
    """An S input's value in scenario ``sc`` (its column of the input row)."""
    return INDEX(Input(name), 1, Const(sc.number))


def scenario_lines(sc: Scenario) -> tuple[Line | str, ...]:
    """The monthly lines of one scenario, each declared once for all three."""
    k = sc.key

    def S(name: str) -> Cell:  # noqa: N802 - this scenario's line in the same month
        return Cell(f"{name}_{k}")

    def line(name, label, unit, kind, formula, **kw) -> Line:
        return _monthly(f"{name}_{k}", label, unit, kind, formula,
                        meta={"line": name, "scenario": sc.name}, **kw)

    return (
        f"{sc.name}: efficiency, capacity and demand",
        line("tef", "TEF", "fraction", "fraction",
             N.tef_now + (_s_input("tef_target", sc) - N.tef_now)
             * _ramp_share(I.tef_ramp_months)),
        line("sell_through", "Sell-through", "fraction", "fraction",
             I.sell_through_start + (_s_input("sell_through_target", sc) - I.sell_through_start)
             * _ramp_share(I.sell_through_ramp_months)),
        line("deliverable_tokens", "Deliverable tokens", "tokens, shown in millions", "mtokens",
             C.theoretical_tokens * S("tef") * N.service_level, total=True),
        line("sellable_tokens", "Sellable tokens", "tokens, shown in millions", "mtokens",
             S("deliverable_tokens") * S("sell_through"), total=True),
        line("market_demand", "Market demand", "tokens, shown in millions", "mtokens",
             I.market_mtok_month1 * K.tokens_per_mtok
             * (1 + _s_input("market_growth_per_quarter", sc))
             ** ((C.month - 1) / K.months_per_quarter)),
        line("contract_sold", "Contract tokens sold", "tokens, shown in millions", "mtokens",
             MIN(C.contracted_tokens, S("sellable_tokens")), total=True),
        line("market_sold", "Market tokens sold", "tokens, shown in millions", "mtokens",
             IF(I.market_mtok_month1.eq(0), S("sellable_tokens") - S("contract_sold"),
                MIN(S("market_demand"), S("sellable_tokens") - S("contract_sold"))), total=True),
        line("tokens_sold", "Tokens sold", "tokens, shown in millions", "mtokens",
             S("contract_sold") + S("market_sold"), total=True),
        line("price_path", "Price path (per unit of today's price)", "factor", "factor",
             (1 - _s_input("decline_per_quarter", sc)) ** ((C.month - 1) / K.months_per_quarter)),
        line("price", "Market price", "money/Mtok", "price",
             N.blended_price * _s_input("price_factor", sc) * S("price_path")),
        f"{sc.name}: profit and loss",
        line("revenue", "Revenue", "money", "money",
             S("contract_sold") / K.tokens_per_mtok * I.contract_price_per_mtok
             + S("market_sold") / K.tokens_per_mtok * S("price"), total=True),
        line("programme_cost", "Programme cost", "money", "money",
             IF(C.month.eq(1), _s_input("programme_cost_once", sc), 0)
             + _s_input("programme_fee_per_month", sc), total=True),
        line("ebitda", "EBITDA", "money", "money",
             S("revenue") - C.power - C.other_opex - C.rent - S("programme_cost"), total=True),
        line("ebit", "EBIT", "money", "money",
             S("ebitda") - C.depreciation + C.disposal_gain, total=True),
        line("tax", "Tax (instalments of the year's tax)", "money", "money",
             INDEX(Row(f"fy_tax_{k}"), 1, C.fiscal_index)
             / INDEX(Row("fy_months"), 1, C.fiscal_index), total=True),
        f"{sc.name}: cash flow",
        line("cash_flow", "Project cash flow", "money", "money",
             IF(C.month.eq(0), 0, S("ebitda") - S("tax") + C.disposal_proceeds) - C.capex,
             month0=True, total=True),
        line("cumulative_cash_flow", "Cumulative cash flow", "money", "money",
             RunningSum(f"cash_flow_{k}"), month0=True),
        line("discounted_cash_flow", "Discounted cash flow", "money", "money",
             S("cash_flow") * C.discount_factor, month0=True, total=True),
        line("cumulative_discounted", "Cumulative discounted cash flow", "money", "money",
             RunningSum(f"discounted_cash_flow_{k}"), month0=True),
        line("payback_crossing", "Payback crossing", "months", "months",
             IF(AND(S("cumulative_cash_flow") >= 0, Cell(f"cumulative_cash_flow_{k}", -1) < 0),
                (C.month - 1) + (-Cell(f"cumulative_cash_flow_{k}", -1)) / S("cash_flow"), "")),
        line("discounted_crossing", "Discounted payback crossing", "months", "months",
             IF(AND(S("cumulative_discounted") >= 0, Cell(f"cumulative_discounted_{k}", -1) < 0),
                (C.month - 1) + (-Cell(f"cumulative_discounted_{k}", -1))
                / S("discounted_cash_flow"), "")),
        line("ebitda_month", "Month with positive EBITDA", "month", "integer",
             IF(S("ebitda") > 0, C.month, "")),
        f"{sc.name}: financing",
        line("levered_tax", "Tax after interest", "money", "money",
             INDEX(Row(f"fy_levered_tax_{k}"), 1, C.fiscal_index)
             / INDEX(Row("fy_months"), 1, C.fiscal_index), total=True),
        line("cfads", "Cash flow available for debt service", "money", "money",
             S("ebitda") - S("levered_tax"), total=True),
        line("equity_cash_flow", "Equity cash flow", "money", "money",
             IF(C.month.eq(0), 0, S("ebitda") - S("levered_tax") - C.interest - C.principal
                + C.disposal_proceeds) - C.capex + C.drawdown, month0=True, total=True),
    )


SCENARIO_LINES: dict[str, tuple[Line | str, ...]] = {
    sc.key: scenario_lines(sc) for sc in SCENARIOS}
#: The scenario lines a chart or the yearly summary shows for the live scenario.
LIVE_SOURCES: tuple[str, ...] = (
    "tef", "sell_through", "deliverable_tokens", "sellable_tokens", "tokens_sold", "price",
    "revenue", "programme_cost", "ebitda", "ebit", "tax", "cash_flow", "cumulative_cash_flow",
    "discounted_cash_flow", "equity_cash_flow")


def _live_line(name: str) -> Line:
    first = next(x for x in SCENARIO_LINES["base"]
                 if isinstance(x, Line) and x.name == f"{name}_base")
    return _monthly(name, first.label, first.unit, first.kind,
                    CHOOSE(N.scenario_number, *(Cell(f"{name}_{sc.key}") for sc in SCENARIOS)),
                    month0=not first.skip_first, total=first.total)


LIVE_LINES: tuple[Line | str, ...] = ("Live scenario (the one selected on Inputs)",) + tuple(
    _live_line(name) for name in LIVE_SOURCES)


# -- tax by fiscal year, losses carried forward; debt service cover (TFOM-SPEC §4.3, §4.4) ----
def _by_fiscal_year(line: str) -> Expr:
    return SUMIF(Row("fiscal_index"), Position(), Row(line))


def _due(position: Expr) -> Expr:
    """1 for the months of fiscal year ``position`` with scheduled debt service."""
    return (Row("fiscal_index").eq(position)) * (Row("debt_service") > 0)


FISCAL_COMMON: tuple[Line, ...] = (
    Line("fy_number", "Fiscal year", "", "integer", Position(), table=FISCAL),
    Line("fy_year", "Calendar year", "", "integer", YEAR(I.start_date) + Position() - 1,
         table=FISCAL),
    Line("fy_months", "Months in the horizon", "months", "integer",
         COUNTIF(Row("fiscal_index"), Position()), table=FISCAL),
    Line("fy_debt_service", "Scheduled debt service", "money", "money",
         SUMPRODUCT(Row("debt_service"), _due(Position())), table=FISCAL),
)


def fiscal_lines(sc: Scenario) -> tuple[Line, ...]:
    """One scenario's yearly tax (unlevered and levered) and debt service cover."""
    k = sc.key
    out: list[Line] = []
    for prefix, taxable, label in (("", f"ebit_{k}", "EBIT"),
                                   ("levered_", f"ebit_{k}", "EBIT less interest")):
        pool = Table(f"loss_pool_{prefix}{k}", FISCAL_YEARS, guard=FISCAL.guard, recurrent=True)
        base = _by_fiscal_year(taxable)
        if prefix:
            base = base - _by_fiscal_year("interest")
        t = f"fy_{prefix}taxable_{k}"
        out.append(Line(t, f"{sc.name}: taxable ({label})", "money", "money", base,
                        table=FISCAL, meta={"scenario": sc.name}))
        out.append(Line(f"fy_{prefix}tax_{k}", f"{sc.name}: tax{' (levered)' if prefix else ''}",
                        "money", "money",
                        I.tax_rate * MAX(0, Cell(t) - Cell(f"fy_{prefix}loss_pool_{k}", -1)),
                        table=pool, first=I.tax_rate * MAX(0, Cell(t)),
                        meta={"scenario": sc.name}))
        out.append(Line(f"fy_{prefix}loss_pool_{k}",
                        f"{sc.name}: losses carried forward{' (levered)' if prefix else ''}",
                        "money", "money",
                        MAX(0, Cell(f"fy_{prefix}loss_pool_{k}", -1) - Cell(t)), table=pool,
                        first=MAX(0, -Cell(t)), meta={"scenario": sc.name}))
    out.append(Line(f"fy_cfads_{k}", f"{sc.name}: CFADS in months with debt service", "money",
                    "money", SUMPRODUCT(Row(f"cfads_{k}"), _due(Position())), table=FISCAL,
                    meta={"scenario": sc.name}))
    out.append(Line(f"fy_dscr_{k}", f"{sc.name}: DSCR", "ratio", "factor",
                    IF(C.fy_debt_service > 0, Cell(f"fy_cfads_{k}") / C.fy_debt_service, ""),
                    table=FISCAL, missing="", meta={"scenario": sc.name}))
    return tuple(out)


FISCAL_LINES: dict[str, tuple[Line, ...]] = {sc.key: fiscal_lines(sc) for sc in SCENARIOS}


# -- the IRR: the NPV on a grid of monthly rates, then halving the bracket nearest 0 ----------
# Unlike Excel's IRR (Newton's method from a guess), this cannot fail to converge, and it picks
# the same root in every engine where the cash flows change sign more than once.
@dataclass(frozen=True)
class IrrSearch:
    """The lines of one IRR search: of a scenario's project or equity cash flow."""

    tag: str
    cash_flow: str
    label: str
    grid: tuple[Line, ...]
    bracket: tuple[Line, ...]
    halving: tuple[Line, ...]
    result: Line


def irr_search(cash_flow: str, tag: str, label: str) -> IrrSearch:
    def n(name: str) -> str:
        return f"{name}_{tag}"

    def here(name: str) -> Cell:
        return Cell(n(name))

    grid = (
        Line(n("irr_rate"), "Monthly rate", "fraction/month", "rate", _IRR_GRID_RATE,
             table=IRR_GRID),
        Line(n("irr_npv"), "NPV at the rate", "money", "money",
             IFERROR(_npv_at(cash_flow, here("irr_rate")), ""), table=IRR_GRID, missing=""),
        Line(n("irr_change"), "Sign change to next", "flag", "flag",
             IF(AND(ISNUMBER(here("irr_npv")), ISNUMBER(Cell(n("irr_npv"), 1))),
                IF(SIGN(here("irr_npv")) * SIGN(Cell(n("irr_npv"), 1)) <= 0, 1, 0), 0),
             table=IRR_GRID),
        Line(n("irr_above"), "Bracket above 0: its lower rate", "fraction/month", "rate",
             IF(AND(here("irr_change").eq(1), here("irr_rate") >= 0), here("irr_rate"), ""),
             table=IRR_GRID, missing=""),
        Line(n("irr_below"), "Bracket below 0: minus its upper rate", "fraction/month", "rate",
             IF(AND(here("irr_change").eq(1), Cell(n("irr_rate"), 1) <= 0),
                -Cell(n("irr_rate"), 1), ""), table=IRR_GRID, missing=""),
    )
    bracket: list[Line] = []
    halving_lines: list[Line] = []
    roots = {}
    for side in ("above", "below"):
        found, position = n(f"irr_found_{side}"), n(f"irr_position_{side}")
        bracket += [
            Line(found, f"Bracket {side} 0 found (1 = yes)", "flag", "flag",
                 IF(COUNT(Row(n(f"irr_{side}"))) > 0, 1, 0)),
            Line(position, f"Bracket {side} 0 nearest to it: position in the grid", "",
                 "integer", IF(Name(found).eq(1), MATCH(MIN(Row(n(f"irr_{side}"))),
                                                        Row(n(f"irr_{side}")), 0), ""),
                 missing=""),
        ]
        halving_lines += _halving(cash_flow, n, side, Name(found), Name(position))
        roots[side] = Name(found).eq(1)
    up, down = At(n("irr_mid_above"), IRR_STEPS - 1), At(n("irr_mid_below"), IRR_STEPS - 1)
    # the root nearest 0: of the nearest root above and the nearest below, the closer one
    result = Line(n("irr_monthly"), f"{label}: IRR, monthly", "fraction/month", "rate",
                  IF(AND(MIN(Row(cash_flow)) < 0, MAX(Row(cash_flow)) > 0),
                     IF(roots["above"], IF(roots["below"], IF(ABS(down) < ABS(up), down, up), up),
                        IF(roots["below"], down, NONE)), NONE))
    return IrrSearch(tag, cash_flow, label, grid, tuple(bracket), tuple(halving_lines), result)


def _halving(cash_flow: str, n: Callable[[str], str], side: str, found: Expr,
             position: Expr) -> tuple[Line, ...]:
    """Bisection of one bracket of the grid, to the last digit."""
    table = Table(n(f"irr_halving_{side}"), IRR_STEPS, guard=found.eq(1), recurrent=True)

    def here(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"))

    def before(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"), -1)

    keep_low = (before("irr_f_mid") > 0).eq(before("irr_f_low") > 0)  # the root is above
    return (
        Line(n(f"irr_low_{side}"), "Low rate", "fraction/month", "rate",
             IF(keep_low, before("irr_mid"), before("irr_low")), table=table,
             first=INDEX(Row(n("irr_rate")), position)),
        Line(n(f"irr_high_{side}"), "High rate", "fraction/month", "rate",
             IF(keep_low, before("irr_high"), before("irr_mid")), table=table,
             first=INDEX(Row(n("irr_rate")), position + 1)),
        Line(n(f"irr_f_low_{side}"), "NPV at low", "money", "money",
             IF(keep_low, before("irr_f_mid"), before("irr_f_low")), table=table,
             first=INDEX(Row(n("irr_npv")), position)),
        Line(n(f"irr_mid_{side}"), "Mid rate", "fraction/month", "rate",
             AVERAGE(here("irr_low"), here("irr_high")), table=table),
        Line(n(f"irr_f_mid_{side}"), "NPV at mid", "money", "money",
             _npv_at(cash_flow, here("irr_mid")), table=table),
    )


_P = Position()
#: The grid's rates: −99%, …, −0.011%, −0.01% a month, 0, +0.01%, +0.011%, …, +1,000% a month.
_IRR_GRID_RATE = IF(
    _P <= K.irr_negatives,
    -MIN(K.irr_lowest, K.irr_smallest * K.irr_step ** (K.irr_negatives - _P)),
    IF(_P.eq(K.irr_negatives + 1), 0,
       MIN(K.irr_highest, K.irr_smallest * K.irr_step ** (_P - (K.irr_negatives + 1) - 1))))


IRR_SEARCHES: tuple[IrrSearch, ...] = tuple(
    irr_search(f"{flow}_{sc.key}", f"{tag}_{sc.key}", f"{sc.name} {what}")
    for sc in SCENARIOS
    for flow, tag, what in (("cash_flow", "project", "project"),
                            ("equity_cash_flow", "equity", "equity")))



def _total(line: Line) -> Line:
    return Line(f"total_{line.name}", f"{line.label}, total", line.unit, line.kind,
                SUM(Row(line.name)), meta={"total_of": line.name})


def _lines(items) -> tuple[Line, ...]:
    return tuple(x for x in items if isinstance(x, Line))


#: Every Timeline row under the header, in order: the fleet and debt, each scenario, the live one.
TIMELINE_LINES: tuple[Line | str, ...] = (
    FLEET_LINES + tuple(x for sc in SCENARIOS for x in SCENARIO_LINES[sc.key]) + LIVE_LINES)
TIMELINE_TOTALS: tuple[Line, ...] = tuple(
    _total(ln) for ln in _lines(TIMELINE_LINES) if ln.total)


# -- the summary outputs (TFOM-SPEC §7), for each scenario -----------------------------------
@dataclass(frozen=True)
class Output:
    """One summary output of TFOM-SPEC section 7: its name, label, unit, display kind and its
    formula for one scenario (a function of the scenario, so that it is written once)."""

    name: str
    label: str
    unit: str
    kind: str  # fraction | money | gpus | tokens | months | price | ratio
    formula: Callable[[Scenario], Expr]
    note: str = ""

    def line_for(self, sc: Scenario) -> Line:
        return Line(f"out_{self.name}_{sc.key}", f"{self.label} · {sc.name}", self.unit,
                    self.kind, self.formula(sc), note=self.note, defined_name=True,
                    meta={"output": self.name, "scenario": sc.name})

    @property
    def line(self) -> Line:
        """The live scenario's value (``out_<name>``)."""
        return Line(f"out_{self.name}", self.label, self.unit, self.kind,
                    CHOOSE(N.scenario_number,
                           *(Name(f"out_{self.name}_{sc.key}") for sc in SCENARIOS)),
                    note=self.note, defined_name=True, meta={"output": self.name})


def _t(name: str, sc: Scenario) -> Name:
    """The total of a scenario's line."""
    return Name(f"total_{name}_{sc.key}")


def _o(name: str, sc: Scenario) -> Name:
    return Name(f"out_{name}_{sc.key}")


def _last(line: str) -> Expr:
    """A monthly line in month H."""
    return INDEX(Row(line), 1, I.horizon_months + 1)


def _payback(crossing: str, cumulative: str) -> Expr:
    return IF(_last(cumulative) < 0, NONE,
              IF(COUNT(Row(crossing)).eq(0), 0, MAX(Row(crossing))))


def _outlay_pv(sc: Scenario) -> Expr:
    """PV of CapEx − disposal proceeds + power, opex, rent and programme cost."""
    return (_pv("capex") - _pv("disposal_proceeds") + _pv("power") + _pv("other_opex")
            + _pv("rent") + _pv(f"programme_cost_{sc.key}"))


def _cash_cost_h(sc: Scenario) -> Expr:
    return (_last("power") + _last("other_opex") + _last("rent")
            + _last(f"programme_cost_{sc.key}"))


def _economic_life(sc: Scenario) -> Expr:
    # c ÷ R_H per GPU-hour in service in month H: the GPU-hours cancel
    k = sc.key
    decline = _s_input("decline_per_quarter", sc)
    return IF(_last(f"ebitda_{k}") <= 0, MAX(Row(f"ebitda_month_{k}")),
              IF(OR(decline.eq(0), _cash_cost_h(sc).eq(0)), NONE,
                 I.horizon_months + K.months_per_quarter
                 * LN(_cash_cost_h(sc) / _last(f"revenue_{k}")) / LN(1 - decline)))


def _irr_yearly(tag: str) -> Expr:
    monthly = Name(f"irr_monthly_{tag}")
    return IF(ISNUMBER(monthly), (1 + monthly) ** K.months_per_year - 1, NONE)


def _cost_total(sc: Scenario) -> Expr:
    return (Name("total_power") + Name("total_other_opex") + Name("total_rent")
            + _t("programme_cost", sc) + Name("total_depreciation"))


OUTPUTS: tuple[Output, ...] = (
    Output("tef_now", "TEF now", "fraction", "fraction", lambda sc: N.tef_now,
           "measured ÷ theoretical TPS of cohort 1"),
    Output("slo_attainment", "SLO attainment", "fraction", "fraction",
           lambda sc: N.slo_attainment),
    Output("sla", "SLA", "fraction", "fraction", lambda sc: N.service_level,
           "availability × SLO attainment"),
    Output("tfi_now", "TFI now", "fraction", "fraction", lambda sc: N.tfi_now,
           "TEF × SLA × sell-through today"),
    Output("fleet_gpus", "Fleet GPUs", "GPUs", "gpus", lambda sc: N.fleet_gpus,
           "GPUs of all cohorts"),
    Output("equivalent_gpus", "Equivalent GPUs", "GPUs", "gpus",
           lambda sc: none_if(N.tef_now.eq(0),
                              N.fleet_gpus * _s_input("tef_target", sc) / N.tef_now),
           "fleet GPUs × TEF target ÷ TEF now: the fleet at today's TEF that makes as many "
           "tokens"),
    Output("avoided_capex", "Avoided GPU CapEx", "money", "money",
           lambda sc: IF(OR(N.owned_gpus.eq(0), NOT(ISNUMBER(_o("equivalent_gpus", sc)))), NONE,
                         (_o("equivalent_gpus", sc) - N.fleet_gpus) / N.fleet_gpus
                         * N.owned_capex),
           "(equivalent − fleet GPUs) × the owned share × their mean CapEx; none when "
           "nothing is owned"),
    Output("avoided_rent_per_year", "Avoided rent per year", "money/year", "money",
           lambda sc: IF(OR(N.rented_gpus.eq(0), NOT(ISNUMBER(_o("equivalent_gpus", sc)))),
                         NONE, (_o("equivalent_gpus", sc) - N.fleet_gpus) / N.fleet_gpus
                         * N.rented_rent * K.hours_per_year),
           "(equivalent − fleet GPUs) × the rented share × their mean rent × 8,760; none "
           "when nothing is rented"),
    Output("blended_price", "Blended price", "money/Mtok", "price", lambda sc: N.blended_price,
           "P₀: list prices after cache hits and the batch discount"),
    Output("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price", lambda sc: N.gpu_hour_cost,
           "cohort 1's, fixed opex included"),
    Output("breakeven_util", "Breakeven utilisation", "fraction", "fraction",
           lambda sc: none_if((N.blended_price * _s_input("price_factor", sc)).eq(0),
                              N.gpu_hour_cost / (N.site_tps_per_gpu * K.seconds_per_hour
                                                 * N.blended_price * _s_input("price_factor", sc)
                                                 / K.tokens_per_mtok)),
           "the TFI at which cohort 1's GPU-hour at today's market price covers its cost"),
    Output("tokens_sold_total", "Tokens sold", "tokens", "tokens",
           lambda sc: _t("tokens_sold", sc)),
    Output("revenue_total", "Revenue", "money", "money", lambda sc: _t("revenue", sc)),
    Output("ebitda_total", "EBITDA", "money", "money", lambda sc: _t("ebitda", sc)),
    Output("ebitda_margin", "EBITDA margin", "fraction", "fraction",
           lambda sc: none_if(_o("revenue_total", sc).eq(0),
                              _o("ebitda_total", sc) / _o("revenue_total", sc))),
    Output("npv", "NPV", "money", "money", lambda sc: _t("discounted_cash_flow", sc),
           "project cash flows; month 0 undiscounted; monthly rate (1 + r)^(1/12) − 1"),
    Output("irr", "IRR (yearly)", "fraction/year", "fraction",
           lambda sc: _irr_yearly(f"project_{sc.key}"),
           "monthly IRR of the project cash flows, shown yearly; none without one"),
    Output("equity_irr", "Equity IRR (yearly)", "fraction/year", "fraction",
           lambda sc: IF(I.debt_share.eq(0), _o("irr", sc), _irr_yearly(f"equity_{sc.key}")),
           "of the equity cash flows; the project IRR without debt"),
    Output("min_dscr", "Minimum DSCR", "ratio", "factor",
           lambda sc: IF(COUNT(Row(f"fy_dscr_{sc.key}")).eq(0), NONE,
                         MIN(Row(f"fy_dscr_{sc.key}"))),
           "the lowest yearly CFADS ÷ scheduled debt service; none without debt"),
    Output("avg_dscr", "Average DSCR", "ratio", "factor",
           lambda sc: IF(SUM(Row("fy_debt_service")).eq(0), NONE,
                         SUM(Row(f"fy_cfads_{sc.key}")) / SUM(Row("fy_debt_service"))),
           "Σ CFADS ÷ Σ scheduled debt service over the months with debt service"),
    Output("payback_months", "Payback", "months", "months",
           lambda sc: _payback(f"payback_crossing_{sc.key}", f"cumulative_cash_flow_{sc.key}"),
           "after the last month the cumulative cash flow crosses 0; none when it ends below"),
    Output("discounted_payback_months", "Discounted payback", "months", "months",
           lambda sc: _payback(f"discounted_crossing_{sc.key}",
                               f"cumulative_discounted_{sc.key}"),
           "the same on discounted cash flows"),
    Output("roi", "ROI over the horizon", "ratio", "fraction",
           lambda sc: none_if(Name("total_capex").eq(0),
                              _t("cash_flow", sc) / Name("total_capex")),
           "Σ cash flows (month 0 included) ÷ Σ CapEx; none without CapEx"),
    Output("lifetime_breakeven_tfi", "Lifetime breakeven TFI", "fraction", "fraction",
           lambda sc: none_if(SUMPRODUCT(Row("discount_factor"), Row("theoretical_tokens"),
                                         Row(f"price_{sc.key}")).eq(0),
                              _outlay_pv(sc) / (SUMPRODUCT(Row("discount_factor"),
                                                           Row("theoretical_tokens"),
                                                           Row(f"price_{sc.key}"))
                                                / K.tokens_per_mtok)),
           "the constant TFI at which the pre-tax NPV is 0 at the market price path"),
    Output("breakeven_price_per_mtok", "Breakeven price", "money/Mtok", "price",
           lambda sc: none_if(SUMPRODUCT(Row("discount_factor"), Row(f"tokens_sold_{sc.key}"),
                                         Row(f"price_path_{sc.key}")).eq(0),
                              _outlay_pv(sc) / (SUMPRODUCT(Row("discount_factor"),
                                                           Row(f"tokens_sold_{sc.key}"),
                                                           Row(f"price_path_{sc.key}"))
                                                / K.tokens_per_mtok)),
           "today's market price at which the pre-tax NPV is 0 with the tokens sold"),
    Output("tokens_per_mw", "Tokens per MW", "tokens/s per MW", "tokens",
           lambda sc: none_if(Name("total_mw_seconds").eq(0),
                              _o("tokens_sold_total", sc) / Name("total_mw_seconds")),
           "tokens sold per second per MW of facility power in service"),
    Output("cost_per_mtok_input", "Cost per million input tokens", "money/Mtok", "price",
           lambda sc: IF(AND(N.split_costs.eq(1), ISNUMBER(_o("cost_per_mtok", sc))),
                         _o("cost_per_mtok", sc) * N.site_tps_per_gpu / I.prefill_tps_per_gpu,
                         NONE),
           "cost per Mtok × T ÷ prefill TPS; none without prefill and decode TPS"),
    Output("cost_per_mtok_output", "Cost per million output tokens", "money/Mtok", "price",
           lambda sc: IF(AND(N.split_costs.eq(1), ISNUMBER(_o("cost_per_mtok", sc))),
                         _o("cost_per_mtok", sc) * N.site_tps_per_gpu / I.decode_tps_per_gpu,
                         NONE),
           "cost per Mtok × T ÷ decode TPS; none without prefill and decode TPS"),
    Output("realised_sell_through", "Realised sell-through", "fraction", "fraction",
           lambda sc: none_if(_t("deliverable_tokens", sc).eq(0),
                              _o("tokens_sold_total", sc) / _t("deliverable_tokens", sc)),
           "tokens sold ÷ deliverable tokens"),
    Output("cost_per_mtok", "Cost per million tokens sold", "money/Mtok", "price",
           lambda sc: none_if(_o("tokens_sold_total", sc).eq(0),
                              _cost_total(sc) / (_o("tokens_sold_total", sc) / K.tokens_per_mtok)),
           "(Σ power, opex, rent, programme cost and depreciation) ÷ Mtok sold"),
    Output("economic_life_months", "Economic life", "months", "months", _economic_life,
           "when revenue per GPU-hour falls to its cash cost"),
)
OUTPUT_NAMES: tuple[str, ...] = tuple(o.name for o in OUTPUTS)
#: The outputs the Scenarios sheet and the portfolio show as Optimised − Base.
UPLIFT_NAMES: tuple[str, ...] = ("npv", "ebitda_total", "revenue_total", "tokens_sold_total",
                                 "equivalent_gpus")
_BASE, _OPTIMISED = SCENARIOS[0], SCENARIOS[1]
UPLIFT_LINES: tuple[Line, ...] = tuple(
    Line(f"out_uplift_{o.name}", f"{o.label}: Optimised − Base", o.unit, o.kind,
         IF(AND(ISNUMBER(_o(o.name, _OPTIMISED)), ISNUMBER(_o(o.name, _BASE))),
            _o(o.name, _OPTIMISED) - _o(o.name, _BASE), NONE),
         defined_name=True, meta={"output": o.name})
    for o in OUTPUTS if o.name in UPLIFT_NAMES)



# -- the yearly summary of the live scenario (Returns) -----------------------------------------
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

# -- Sensitivity: margin against utilisation (live scenario's price factor) --------------------
UTIL_LINES: tuple[Line, ...] = (
    Line("util", "Utilisation", "fraction", "fraction", Position() * K.util_step, table=UTIL),
    Line("util_margin", "Margin", "fraction", "fraction",
         IF(ISNUMBER(Name("out_breakeven_util")), 1 - Name("out_breakeven_util") / C.util, NONE),
         table=UTIL),
    Line("util_breakeven_marker", "Breakeven", "", "text",
         IF(ISNUMBER(Name("out_breakeven_util")),
            IF(AND(Name("out_breakeven_util") > C.util - K.util_step,
                   Name("out_breakeven_util") <= C.util), "◄ breakeven", ""), ""),
         table=UTIL, missing=""),
    Line("util_tfi_marker", "Site today", "", "text",
         IF(AND(N.tfi_now > C.util - K.util_step, N.tfi_now <= C.util), "◄ TFI now", ""),
         table=UTIL, missing=""),
)


# -- Checks ------------------------------------------------------------------------------------
def _input_check(spec, name: str | None = None, *, row: bool = False) -> Expr:
    """The range check of one input (or of a fleet-block row of cohorts 2…8), its bounds named
    ``low_<input>``/``high_<input>``; a blank optional input or cohort cell passes."""
    x = Input(name or spec.name)
    bound = name or spec.name
    if spec.kind == "choice":
        if row:  # each typed cell one of the choices (COUNTIF ignores case, as the parser)
            typed = COUNTIF(x, spec.choices[0])
            for choice in spec.choices[1:]:
                typed = typed + COUNTIF(x, choice)
            cond = typed.eq(COUNTA(x))
        else:
            cond = ISNUMBER(MATCH(x, ListRef(spec.name), 0))
    elif spec.kind == "date":
        cond = AND(ISNUMBER(x), DAY(x).eq(Const(f"low_{bound}")))
    elif spec.kind == "text" and row:
        cond = SUMPRODUCT((LEN(x) > Const(f"high_{bound}")) * 1).eq(0)
    elif spec.kind == "text":
        cond = AND(ISTEXT(x), LEN(x) >= Const(f"low_{bound}"), LEN(x) <= Const(f"high_{bound}"))
    elif spec.kind == "currency":
        cond = AND(ISTEXT(x), LEN(x).eq(Const(f"low_{bound}")))
    else:
        low = Const(f"low_{bound}")
        parts = [MIN(x) > low if spec.low_open else MIN(x) >= low]
        if spec.high is not None:
            parts.append(MAX(x) <= Const(f"high_{bound}"))
        if spec.kind == "integer":
            parts.append(SUMPRODUCT(ABS(x - INT(x))).eq(0))
        if row or spec.optional:  # blanks pass; what is typed must be a number in range
            cond = IF(COUNT(x).eq(0), COUNTA(x).eq(0), AND(COUNTA(x).eq(COUNT(x)), *parts))
        else:
            cond = AND(COUNT(x).eq(COLUMNS(x)), *parts)
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
         _input_check(spec), meta={"input": spec.name}) for spec in INPUTS) + tuple(
    Line(f"check_in_fleet_{spec.name}",
         f"Cohorts 2–{MAX_COHORTS}: {spec.label} (in_fleet_{spec.name}): {spec.allowed}", "",
         "text", _input_check(spec, f"fleet_{spec.name}", row=True),
         meta={"input": f"fleet_{spec.name}", "spec": spec})
    for spec in COHORT_SPECS)


_OUT_BLOCK = Each(tuple(f"out_{o.name}_{sc.key}" for o in OUTPUTS for sc in SCENARIOS),
                  (len(OUTPUTS), len(SCENARIOS)))


def _each_scenario(make: Callable[[Scenario], Expr]) -> Expr:
    return AND(*(make(sc) for sc in SCENARIOS))


_CROSS: tuple[tuple[str, str, Expr], ...] = (
    ("salvage_le_capex", "Salvage per GPU at most the CapEx per GPU, every cohort",
     SUMPRODUCT(Row("c_gpus"), (Row("c_salvage_per_gpu") > Row("c_capex_per_gpu")) * 1).eq(0)),
    ("p99_gt_p50", "TTFT p99 above the p50", I.ttft_p99_ms > I.ttft_p50_ms),
    ("tef_now_le_1", "TEF now at most 100% (measured ≤ theoretical TPS of cohort 1)",
     N.tef_now <= 1),
    ("tfi_le_1", "TFI now at most 100%", N.tfi_now <= 1),
    ("cohort_rows", "Every cohort column with GPUs has an online month, and the reverse",
     COUNT(Input("fleet_gpus")).eq(COUNT(Input("fleet_online_month")))),
    ("online_in_horizon", "Every cohort comes online within the horizon",
     MAX(Row("c_online")) <= I.horizon_months),
    ("retire_after_online", "No cohort retires before it comes online",
     SUMPRODUCT((Row("c_last") < Row("c_online")) * 1).eq(0)),
    ("fleet_sum", "GPUs in service each month = the sum of the cohorts' GPUs in service",
     _close(SUM(Row("gpus_in_service")),
            SUM(*(Row(f"gpus_cohort_{k + 1}") for k in range(MAX_COHORTS))))),
    ("tef_months_le_1", "Every month's TEF at most 100%",
     _each_scenario(lambda sc: MAX(Row(f"tef_{sc.key}")) <= 1)),
    ("months_counted", "One revenue figure per month of the horizon",
     _each_scenario(lambda sc: COUNT(Row(f"revenue_{sc.key}")).eq(I.horizon_months))),
    ("sold_le_sellable", "Tokens sold ≤ sellable ≤ deliverable ≤ theoretical",
     _each_scenario(lambda sc: AND(
         _t("tokens_sold", sc) <= _t("sellable_tokens", sc) * (1 + K.check_tolerance),
         _t("sellable_tokens", sc) <= _t("deliverable_tokens", sc) * (1 + K.check_tolerance),
         _t("deliverable_tokens", sc) <= Name("total_theoretical_tokens")
         * (1 + K.check_tolerance)))),
    ("loss_pool", "Tax losses carried forward never negative",
     _each_scenario(lambda sc: AND(MIN(Row(f"fy_loss_pool_{sc.key}")) >= 0,
                                   MIN(Row(f"fy_levered_loss_pool_{sc.key}")) >= 0))),
    ("tax_total", "Monthly tax instalments add up to the yearly tax",
     _each_scenario(lambda sc: _close(_t("tax", sc), SUM(Row(f"fy_tax_{sc.key}"))))),
    ("debt_repaid", "Debt repaid by the horizon",
     _close(Name("total_drawdown"), Name("total_principal"))),
    ("ebitda_total", "EBITDA total = revenue − power − opex − rent − programme totals",
     _each_scenario(lambda sc: _close(
         _t("ebitda", sc), _t("revenue", sc) - Name("total_power") - Name("total_other_opex")
         - Name("total_rent") - _t("programme_cost", sc)))),
    ("cash_total", "Σ monthly cash flows = last cumulative cash flow",
     _each_scenario(lambda sc: _close(_t("cash_flow", sc),
                                      _last(f"cumulative_cash_flow_{sc.key}")))),
    ("npv_total", "NPV = Σ cash flows × discount factors",
     _each_scenario(lambda sc: _close(_o("npv", sc), SUMPRODUCT(Row(f"cash_flow_{sc.key}"),
                                                                Row("discount_factor"))))),
    ("outputs_compute", "Every summary output computes (a number or \"none\")",
     (COUNT(_OUT_BLOCK) + COUNTIF(_OUT_BLOCK, NONE)).eq(ROWS(_OUT_BLOCK) * COLUMNS(_OUT_BLOCK))),
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
         Text("Monthly operating model · ").concat(I.site_name).concat(" · live: ")
         .concat(I.scenario).concat(" · ").concat(I.horizon_months).concat(" months")),
    Line("dashboard_subtitle", "", "", "text",
         I.site_name.concat(" · ").concat(I.scenario).concat(" scenario · ")
         .concat(I.horizon_months).concat(" months · money in ").concat(I.currency)),
)


def _scenario_in_order(sc: Scenario) -> tuple[Line, ...]:
    """A scenario's monthly and fiscal lines in an order in which each needs only those before:
    profit to EBIT, the year's tax, then cash flows, then debt service cover."""
    monthly = _lines(SCENARIO_LINES[sc.key])
    cut = next(i for i, ln in enumerate(monthly) if ln.meta["line"] == "ebit") + 1
    fiscal = FISCAL_LINES[sc.key]
    return monthly[:cut] + fiscal[:6] + monthly[cut:] + fiscal[6:]


def _irr_lines(search: IrrSearch) -> tuple[Line, ...]:
    return search.grid + search.bracket + search.halving + (search.result,)


# the input and output costs split the cost per Mtok, so they are computed after it
_COMPUTE_ORDER = tuple(sorted(OUTPUTS, key=lambda o: o.name.startswith("cost_per_mtok_")))

#: Every line of the model, in an order in which each needs only those before it.
LINES: tuple[Line, ...] = (
    _lines(CAPACITY) + FLEET + FLEET_SCALARS + TIMELINE_HEADER + (_FISCAL_YEARS,)
    + _lines(FLEET_LINES) + FISCAL_COMMON
    + tuple(ln for sc in SCENARIOS for ln in _scenario_in_order(sc))
    + _lines(LIVE_LINES) + TIMELINE_TOTALS
    + tuple(ln for s in IRR_SEARCHES for ln in _irr_lines(s))
    + tuple(o.line_for(sc) for o in _COMPUTE_ORDER for sc in SCENARIOS)
    + tuple(o.line for o in OUTPUTS) + UPLIFT_LINES + YEARLY_LINES + UTIL_LINES
    + INPUT_CHECKS + CROSS_CHECKS + (MASTER_CHECK,) + TEXT_LINES
)
BY_LINE: dict[str, Line] = {ln.name: ln for ln in LINES}

#: The monthly lines :func:`run` returns, in the Timeline's order: the fleet's, and the live
#: scenario's under their plain names. Each is an array over months 1…H, except those that start
#: at month 0 (``capex``, ``cash_flow``, ``cumulative_cash_flow`` …).
LINE_NAMES: tuple[str, ...] = tuple(ln.name for ln in _lines(FLEET_LINES) + _lines(LIVE_LINES))
#: Each scenario's monthly lines, by their plain names (``revenue`` for ``revenue_base`` …).
SCENARIO_LINE_NAMES: tuple[str, ...] = tuple(
    ln.meta["line"] for ln in _lines(SCENARIO_LINES["base"]))  # type: ignore[misc]
FROM_MONTH0: frozenset[str] = frozenset(
    ln.name for ln in _lines(TIMELINE_LINES) if not ln.skip_first) | frozenset(
    ln.meta["line"] for ln in _lines(SCENARIO_LINES["base"]) if not ln.skip_first)


# -- evaluation -------------------------------------------------------------------------------
def constant_values() -> dict[str, object]:
    """Every constant by name, the input checks' bounds included (``low_gpus`` …)."""
    out: dict[str, object] = dict(CONSTANT_VALUES)
    bounded = [(spec.name, spec) for spec in INPUTS] + [
        (f"fleet_{spec.name}", spec) for spec in COHORT_SPECS]
    for name, spec in bounded:
        low, high = check_bounds(spec)
        if low is not None:
            out[f"low_{name}"] = low
        if high is not None:
            out[f"high_{name}"] = high
    return out


def _formula_constants() -> dict[str, object]:
    from .formula import _r

    return {k: _r(np.asarray(v, dtype=float)) if isinstance(v, tuple) else np.float64(v)
            for k, v in constant_values().items()}


LISTS: dict[str, tuple[str, ...]] = {spec.name: spec.choices for spec in INPUTS
                                     if spec.kind == "choice"}


def formula_inputs(inputs: SiteInputs) -> dict[str, object]:
    """The inputs as the compiled model takes them: dates as serial numbers, numbers as floats
    (NaN where an optional input is blank), per-scenario inputs as tuples (Base, Optimised,
    Downside), and the fleet block's rows of cohorts 2…8 as ``fleet_<column>`` tuples."""
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
            out[spec.name] = np.nan if value is None else float(value)  # type: ignore[arg-type]
    cohorts = inputs.cohorts
    for spec in COHORT_SPECS:
        values = [c.get(spec.name) for c in cohorts]
        values += [None] * (MAX_COHORTS - 1 - len(values))
        if spec.kind in ("text", "choice"):
            out[f"fleet_{spec.name}"] = tuple("" if v is None else str(v) for v in values)
        else:
            out[f"fleet_{spec.name}"] = tuple(np.nan if v is None else float(v) for v in values)
    return out


@functools.lru_cache(maxsize=4)
def compiled(lines: tuple[Line, ...] = LINES):
    """The model compiled once: ``evaluate(inputs)`` → line name → values."""
    model = compile_model(lines)
    constants = _formula_constants()

    def evaluate(inputs: SiteInputs) -> dict[str, np.ndarray]:
        return model(formula_inputs(inputs), constants, LISTS)

    evaluate.__source__ = model.__source__  # type: ignore[attr-defined]
    evaluate.model = model  # type: ignore[attr-defined] - takes formula inputs (run_many)
    return evaluate


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's monthly lines (by their plain names) and summary outputs."""

    name: str
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]


@dataclass(frozen=True)
class Result:
    """What :func:`run` computes for one site: all three scenarios at once (TFOM-SPEC §4.5).

    ``lines`` maps each of :data:`LINE_NAMES` to its monthly array (the fleet's lines, and the
    live scenario's); ``summary`` maps each of :data:`OUTPUT_NAMES` to the live scenario's
    float, or ``None`` where the spec says "none". ``scenarios`` holds every scenario's lines
    and summary by name; ``uplift`` Optimised − Base of :data:`UPLIFT_NAMES`. ``values`` holds
    every line of the model (:data:`LINES`) as computed, which the workbook stores beside its
    formulas.
    """

    inputs: SiteInputs
    scenario: str
    month_starts: tuple[dt.date, ...]
    month_ends: tuple[dt.date, ...]
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)
    uplift: dict[str, float | None] = field(default_factory=dict)


def run(inputs: SiteInputs, scenario: str | None = None) -> Result:
    """Compute the monthly model of one site, its three scenarios at once, and the summary.

    Parameters
    ----------
    inputs : the site's checked inputs (:func:`tokenfactory_xl.inputs.make_inputs`).
    scenario : the live scenario (what ``lines`` and ``summary`` show); default
        ``inputs["scenario"]``. Every scenario is in ``Result.scenarios`` either way.
    """
    scenario = scenario or inputs.scenario
    if scenario != inputs.scenario:
        inputs = inputs.replace({"scenario": scenario})
    return result_from(inputs, compiled()(inputs))


def run_many(many: Sequence[SiteInputs]) -> list[Result]:
    """:func:`run` for many sites: the same results, in the order given.

    Sites whose texts that the model reads (ownership, scenario …) are the same are computed in
    one pass of the compiled model along a leading axis of sites, as the risk run computes its
    draws: one pass for eight sites costs about what two single ones do.
    """
    given = [formula_inputs(inputs) for inputs in many]
    groups: dict[tuple, list[int]] = {}
    for index, values in enumerate(given):
        groups.setdefault(_texts_of(values), []).append(index)
    results: list[Result | None] = [None] * len(many)
    for members in groups.values():
        for index, values in zip(members, _evaluate_many([given[i] for i in members]),
                                 strict=True):
            results[index] = result_from(many[index], values)
    return results  # type: ignore[return-value]


def run_each(many: Sequence[SiteInputs]) -> list[Result | Exception]:
    """:func:`run_many`, or, if that pass fails, :func:`run` of each site alone: a site's own
    failure is then its own entry (the exception), and the other sites keep their results."""
    try:
        return list(run_many(many))
    except Exception:  # noqa: BLE001 - each site is then run alone, its own failure its own
        out: list[Result | Exception] = []
        for inputs in many:
            try:
                out.append(run(inputs))
            except Exception as exc:  # noqa: BLE001
                out.append(exc)
        return out


#: Each line's number of dimensions for one site: 1 for a table's row, 0 for a single figure.
_LINE_NDIM = {ln.name: 0 if ln.table is None else 1 for ln in LINES}


def _is_text(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, tuple) and any(isinstance(x, str)
                                                                       for x in value))


def _texts_of(values: dict[str, object]) -> tuple:
    """What sites computed in one pass must share: each text input the model compares or
    looks up (a site's name, only measured and shown, may differ)."""
    model = compiled().model
    return tuple((k, v) for k, v in values.items()
                 if k in model.inputs and k not in model.texts_per_site and _is_text(v))


def _same(column: list[object]) -> bool:
    first = column[0]
    return all(v == first or (v != v and first != first) for v in column)  # NaN: blank alike


def _evaluate_many(group: list[dict[str, object]]) -> list[dict[str, object]]:
    """The compiled model's values for each site of ``group`` (formula inputs whose texts read
    by the model are the same), in one pass: a number that differs among the sites is given
    along a leading axis (a row per site for a per-scenario or cohort input)."""
    from .formula import _RowArray

    model, constants = compiled().model, _formula_constants()
    if len(group) == 1:
        return [model(group[0], constants, LISTS)]
    count, first = len(group), group[0]
    stacked: dict[str, object] = {}
    for name, value in first.items():
        column = [values[name] for values in group]
        if _same(column) or (_is_text(value) and name not in model.texts_per_site):
            stacked[name] = value  # the same for all (a text the model compares: grouped so)
        else:
            kind = object if _is_text(value) else float
            if isinstance(value, tuple):
                stacked[name] = np.asarray(column, dtype=kind).view(_RowArray)
            else:
                stacked[name] = np.asarray(column, dtype=kind)
    out = model(stacked, constants, LISTS)
    per_site: list[dict[str, object]] = [{"_inputs": values} for values in group]
    for name, value in out.items():
        if name == "_inputs":
            continue
        # one site's line is a row (a table's) or a single figure, as it is declared
        ndim = _LINE_NDIM.get(name)
        if ndim is None or not isinstance(value, np.ndarray) or value.ndim == ndim:
            for values in per_site:  # the same for every site (reads no input that differs)
                values[name] = value
        elif value.ndim == ndim + 1 and value.shape[0] == count:
            for i, values in enumerate(per_site):
                values[name] = value[i, ...]
        else:
            raise AssertionError(f"the line {name} has the shape {value.shape} for {count} "
                                 "sites at once, not one per site")
    return per_site


def _number(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def result_from(inputs: SiteInputs, values: dict[str, np.ndarray]) -> Result:
    """The :class:`Result` of values computed by a compiled model that holds :data:`LINES`."""
    horizon = int(inputs["horizon_months"])  # type: ignore[call-overload]

    def months(name: str, plain: str) -> np.ndarray:
        start = 0 if plain in FROM_MONTH0 else 1
        return np.asarray(values[name][start:horizon + 1], dtype=float)

    lines = {name: months(name, name) for name in LINE_NAMES}
    summary = {name: _number(values[f"out_{name}"]) for name in OUTPUT_NAMES}
    scenarios = {}
    for sc in SCENARIOS:
        scenarios[sc.name] = ScenarioResult(
            sc.name, {name: months(f"{name}_{sc.key}", name) for name in SCENARIO_LINE_NAMES},
            {name: _number(values[f"out_{name}_{sc.key}"]) for name in OUTPUT_NAMES})
    uplift = {ln.meta["output"]: _number(values[ln.name]) for ln in UPLIFT_LINES}
    ends = tuple(from_serial(s).date() for s in values["month_end"][1:horizon + 1])
    starts = tuple(e.replace(day=1) for e in ends)
    return Result(inputs, inputs.scenario, starts, ends, lines, summary, values, scenarios,
                  uplift)  # type: ignore[arg-type]
