"""The Token Factory Operating Model (TFOM): one site, month by month, from tokens to returns.

TFOM links the technical indicators of a token factory (TPS, TTFT, TEF) to the financial ones
(revenue, EBITDA, ROI) for one site (seed 000). Month 0 holds the investment; months 1…H sell
tokens. Each month the TEF and the sell-through move along linear ramps to their targets, the
price falls by the quarterly decline, and power, opex, rent, depreciation and tax follow the
calendar hours of the month. methodology section 4 is the contract; section 7 names the summary.

**Every line is declared once**, below, as a :class:`~tokenfactory_xl.tfom.formula.Line`: its name,
label, unit and formula, written in the expression language of :mod:`tokenfactory_xl.tfom.formula`
over inputs (``I.gpus``), named constants (``K.seconds_per_hour``) and other lines. The workbook
renders each declaration as the Excel formula of its cell or row; :func:`run` compiles the same
declarations into one numpy function and returns the monthly lines and the summary; batch
stores those very values beside the formulas. ``docs/architecture.md`` shows how to add a line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...core.catalogue import BY_NAME, COHORT_SPECS, INPUTS, MAX_COHORTS, SCENARIO_NAMES
from ..formula import (
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
    NM,
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
    InputRef,
    Line,
    ListRef,
    Name,
    Num,
    Position,
    Row,
    RunningSum,
    Table,
    Text,
    nm_if,
    none_if,
)

#: The timeline has this many month columns (methodology §6: horizons of 1–120 months).
MAX_MONTHS = int(BY_NAME["horizon_months"].high)  # type: ignore[arg-type]
YEARS = MAX_MONTHS // 12


class _Names:
    """``I.gpus`` is ``Input("gpus")``, ``K.hours_per_year`` is ``Const("hours_per_year")``…"""

    def __init__(self, make: Callable[[str], Expr]):
        self._make = make

    def __getattr__(self, name: str) -> Expr:
        return self._make(name)


I, K, N, C = _Names(InputRef), _Names(Const), _Names(Name), _Names(Cell)  # noqa: E741


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
    Constant("hours_per_year", "Hours in a year", "hours", 8_760, "365 days × 24 (methodology §2)"),
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
    Constant("cent", "Statements: half a cent", "money", 0.005,
             "the balance sheet balances, and the cash-flow statement sums to 0, to the cent"),
    Constant("headroom_warning", "Warnings: the least TFI headroom", "fraction", 0.05,
             "planned TFI less than 5 points above the lifetime breakeven TFI is a warning"),
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

IRR_STEPS = 60  # halvings: any bracket of the IRR grid shrinks below 1e-16 (the risk draws')
IRR_NEWTON_STEPS = 8  # the safeguarded Newton steps in a bracket of the IRR grid (6 suffice)
N_IRR = 221  # the IRR grid: 98 rates below 0, 0, and 122 above (CONSTANTS irr_*)
N_UTIL = 20
#: Calendar years a timeline of 120 months can touch (one starting in December: 11).
FISCAL_YEARS = MAX_MONTHS // 12 + 1


@dataclass(frozen=True)
class Scenario:
    """One of the scenarios computed side by side: its name, the suffix of its lines
    (``revenue_base``) and the constant holding its column in an S input. A step of the
    uplift bridge (methodology §10.3) is a scenario too: Base's column, except the S inputs in
    ``columns`` (input name → the constant of the column it takes instead)."""

    name: str
    key: str
    number: str
    columns: tuple[tuple[str, str], ...] = ()

    def column(self, name: str) -> str:
        """The constant naming the column of S input ``name`` this scenario reads."""
        return dict(self.columns).get(name, self.number)


SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(name, name.lower(), f"scenario_{name.lower()}") for name in SCENARIO_NAMES)

#: The uplift bridge (methodology §10.3): Base's inputs with more and more of Optimised's. Each
#: step is a scenario of its own, computed by live formulas; the last step is Optimised.
BRIDGE_STEPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tef", "TEF target", ("tef_target",)),
    ("sell_through", "sell-through target", ("sell_through_target",)),
    ("market", "prices, demand, resale and shutdown",
     ("price_factor", "decline_per_quarter", "resale_decline_per_quarter",
      "market_growth_per_quarter", "shutdown_month")),
    ("programme", "programme cost", ("programme_cost_once", "programme_fee_per_month")),
)


def _bridge_scenarios() -> tuple[Scenario, ...]:
    out, taken = [], ()
    for key, what, names in BRIDGE_STEPS[:-1]:  # the last step is Optimised itself
        taken += names
        out.append(Scenario(f"Bridge: Base + Optimised {what}", f"step_{key}", "scenario_base",
                            tuple((n, "scenario_optimised") for n in taken)))
    return tuple(out)


BRIDGE_SCENARIOS: tuple[Scenario, ...] = _bridge_scenarios()
ALL_SCENARIOS: tuple[Scenario, ...] = SCENARIOS + BRIDGE_SCENARIOS

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


# -- Capacity: what the site computes once (methodology §1–§3, §6 "Derived once") -----------------
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
    "Finance",
    _scalar("monthly_discount_rate", "Monthly discount rate", "fraction/month", "rate",
            (1 + I.discount_rate) ** (1 / K.months_per_year) - 1, "(1 + r)^(1/12) − 1"),
    _scalar("life_discount", "Discount factor over cohort 1's life (vᴺ)", "factor", "factor",
            (1 + N.monthly_discount_rate) ** (-(I.life_years * K.months_per_year)),
            "(1 + i)^−N, N = 12 × life in months (not rounded)"),
    "Cost of a GPU-hour (cohort 1)",
    _scalar("cash_opex_per_gpu_hour", "Power and other opex", "money/GPU-h", "price",
            I.power_kw_per_gpu * I.pue * I.electricity_per_kwh + I.opex_per_gpu_hour,
            "kW × PUE × price per kWh + other opex"),
    _scalar("capital_per_gpu_hour", "Capital at the discount rate (owned) or rent (rented)",
            "money/GPU-h", "price",
            IF(N.owned_flag.eq(1), IF(N.monthly_discount_rate.eq(0),
                                      (I.capex_per_gpu - I.salvage_per_gpu)
                                      / (I.life_years * K.hours_per_year),
                                      (I.capex_per_gpu - I.salvage_per_gpu * N.life_discount)
                                      * N.monthly_discount_rate / (1 - N.life_discount)
                                      / K.hours_per_month), I.rent_per_gpu_hour),
            "(CapEx − salvage × vᴺ) × i ÷ (1 − vᴺ) ÷ 730: an annuity at the discount rate "
            "(at 0: (CapEx − salvage) ÷ (life × 8,760)); or the rent"),
    _scalar("fixed_per_gpu_hour", "Fixed opex", "money/GPU-h", "price",
            I.fixed_opex_per_month / (I.gpus * K.hours_per_month), "fixed opex ÷ (GPUs × 730)"),
    _scalar("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price",
            N.capital_per_gpu_hour + N.cash_opex_per_gpu_hour + N.fixed_per_gpu_hour,
            "the full cost of one GPU-hour"),
    _scalar("cash_cost_per_gpu_hour", "Cash cost per GPU-hour", "money/GPU-h", "price",
            IF(N.owned_flag.eq(1), 0, N.capital_per_gpu_hour) + N.cash_opex_per_gpu_hour
            + N.fixed_per_gpu_hour, "the GPU-hour cost without the capital charge"),
    _scalar("revenue_per_gpu_hour", "Revenue per GPU-hour today", "money/GPU-h", "price",
            N.site_tps_per_gpu * K.seconds_per_hour * N.tfi_now * N.blended_price
            / K.tokens_per_mtok, "T × 3,600 × TFI × P₀ ÷ 10⁶"),
    _scalar("debt_monthly_rate", "Debt: monthly interest rate", "fraction/month", "rate",
            I.debt_rate / K.months_per_year, "debt rate ÷ 12 (a nominal yearly rate)"),
    _scalar("debt_growth", "Debt: (1 + i) to the tenor", "factor", "factor",
            (1 + N.debt_monthly_rate) ** I.debt_tenor_months,
            "(1 + i)^n, of the annuity and its balances"),
    _scalar("split_costs", "Prefill and decode TPS given (1 = yes)", "flag", "flag",
            IF(AND(_given(I.prefill_tps_per_gpu), _given(I.decode_tps_per_gpu)), 1, 0),
            "the cost per million tokens splits into input and output"),
)


# -- the fleet block: one column per cohort (methodology §4.1) -----------------------------------
def _cohort_number(field: str, site: Expr) -> Expr:
    """Cohort k ≥ 2's number in the fleet block, or the site's own value when left blank."""
    typed = INDEX(InputRef(f"fleet_{field}"), 1, Position() - 1)
    return IF(_given(typed), typed, site)


def _fleet(name, label, unit, kind, formula, note="", first=None) -> Line:
    return Line(f"c_{name}", label, unit, kind, formula, table=COHORTS, first=first, note=note)


_OWN_TYPED = INDEX(InputRef("fleet_ownership"), 1, Position() - 1)


FLEET: tuple[Line, ...] = (
    _fleet("number", "Cohort", "", "integer", Position()),
    _fleet("gpus", "GPUs", "GPUs", "gpus",
           IF(_given(INDEX(InputRef("fleet_gpus"), 1, Position() - 1)),
              INDEX(InputRef("fleet_gpus"), 1, Position() - 1), 0),
           "0 for an empty column", first=I.gpus),
    _fleet("online", "Online month", "month", "integer", _cohort_number("online_month", 1),
           "cohort 1: month 1", first=Num(1)),
    _fleet("last", "Last month planned in service", "month", "integer",
           IF(_given(INDEX(InputRef("fleet_retire_month"), 1, Position() - 1)),
              MIN(INDEX(InputRef("fleet_retire_month"), 1, Position() - 1), I.horizon_months),
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
    _fleet("loan", "Debt drawn", "money", "money", I.debt_share * C.c_capex,
           "debt share × CapEx, drawn when the CapEx is paid"),
    _fleet("draw_month", "Drawdown month", "month", "integer", C.c_online - 1),
    _fleet("deposit_month", "Deposit month", "month", "integer",
           MAX(0, C.c_draw_month - I.capex_lead_months),
           "the deposit share of the CapEx is paid then, never before month 0"),
    _fleet("tax_months", "Tax depreciation months", "months", "integer",
           IF(_given(I.tax_life_years), ROUND(I.tax_life_years * K.months_per_year, 0),
              C.c_dep_months), "ROUND(12 × tax life); blank tax life: the book months"),
    _fleet("tax_dep_per_month", "Tax depreciation per month", "money", "money",
           C.c_owned * C.c_gpus * (C.c_capex_per_gpu - C.c_salvage_per_gpu) / C.c_tax_months),
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
    _scalar("fleet_equivalent", "Fleet in cohort-1 GPUs of equal throughput", "GPUs", "gpus",
            SUMPRODUCT(Row("c_gpus"), Row("c_tps_per_gpu")) / N.site_tps_per_gpu,
            "Σ GPUs × theoretical TPS per GPU ÷ cohort 1's"),
    _scalar("owned_gpus", "Owned GPUs", "GPUs", "gpus", SUMPRODUCT(Row("c_gpus"), Row("c_owned"))),
    _scalar("owned_capex", "CapEx of owned cohorts", "money", "money", SUM(Row("c_capex"))),
    _scalar("rented_gpus", "Rented GPUs", "GPUs", "gpus", N.fleet_gpus - N.owned_gpus),
    _scalar("rented_rent", "Rent of rented cohorts per hour", "money/h", "money",
            SUMPRODUCT(Row("c_gpus"), Row("c_rent_per_gpu_hour"), 1 - Row("c_owned"))),
)


def _in_service(month: Expr, k: str) -> Expr:
    """1 where a cohort is in service in ``month`` in scenario ``k`` (its online month … its
    last month in the scenario; a cohort never bought has its last month before its first)."""
    return (Row("c_online") <= month) * (Row(f"c_last_{k}") >= month)


def _owed(month: Expr, held: Expr) -> Expr:
    """Σ over loans of what is owed after ``month``'s payment, of the cohorts where ``held``
    (a row of flags) is 1: k = month − drawdown month payments made, D × ((1 + i)^n −
    (1 + i)^k) ÷ ((1 + i)^n − 1) for 0 ≤ k < n (D × (n − k) ÷ n at rate 0), nothing before the
    drawdown or after the last payment."""
    k = month - Row("c_draw_month")
    open_loans = Row("c_loan") * held * (k >= 0) * (k < I.debt_tenor_months)
    return IF(N.debt_monthly_rate.eq(0),
              SUMPRODUCT(open_loans * (I.debt_tenor_months - k)) / I.debt_tenor_months,
              SUMPRODUCT(open_loans * (N.debt_growth - (1 + N.debt_monthly_rate) ** k))
              / (N.debt_growth - 1))


# -- Timeline: the header rows and what every scenario shares ----------------------------------
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
    "Every scenario",
    _monthly("hours", "Hours", "hours", "integer", DAY(C.month_end) * K.hours_per_day,
             total=True),
    _monthly("contracted_tokens", "Contracted tokens", "tokens, shown in millions", "mtokens",
             IF(C.month <= I.contract_months, I.contract_mtok_per_month * K.tokens_per_mtok, 0),
             total=True),
    _monthly("discount_factor", "Discount factor", "factor", "factor",
             1 / (1 + N.monthly_discount_rate) ** C.month, month0=True),
    _monthly("days", "Days", "days", "integer", C.hours / K.hours_per_day,
             note="of working capital: a balance is the days' share of the month's flow"),
    _monthly("power_index", "Power price escalation index", "factor", "factor",
             (1 + I.power_escalation_per_year) ** ((C.month - 1) / K.months_per_year),
             note="(1 + power escalation)^((m − 1) ÷ 12)"),
    _monthly("opex_index", "Opex escalation index", "factor", "factor",
             (1 + I.opex_escalation_per_year) ** ((C.month - 1) / K.months_per_year),
             note="(1 + opex escalation)^((m − 1) ÷ 12): opex, fixed opex, programme fee"),
)



# -- each scenario: the fleet, efficiency, demand, profit, tax and cash (§4.1–§4.4, §10) -------
def _s_input(name: str, sc: Scenario) -> Expr:
    """An S input's value in scenario ``sc`` (its column of the input row)."""
    return INDEX(InputRef(name), 1, Const(sc.column(name)))


def fleet_scenario_lines(sc: Scenario) -> tuple[Line, ...]:
    """The cohorts' figures that depend on a scenario (methodology §10.1, §10.2): each cohort's
    last month (its retire month, or the scenario's shutdown month if earlier), whether it is
    bought at all, and what it fetches when sold."""
    k = sc.key
    shutdown = _s_input("shutdown_month", sc)

    def cohort(name, label, unit, kind, formula, note="") -> Line:
        return Line(f"c_{name}_{k}", f"{label} · {sc.name}", unit, kind, formula,
                    table=COHORTS, note=note, meta={"line": f"c_{name}", "scenario": sc.name})

    last, life_left = Cell(f"c_last_{k}"), Cell(f"c_dep_left_{k}")
    tax_left = Cell(f"c_tax_left_{k}")
    above_salvage = C.c_capex_per_gpu - C.c_salvage_per_gpu
    market_price = MAX(C.c_salvage_per_gpu,
                       C.c_capex_per_gpu * I.residual_share
                       * (1 - _s_input("resale_decline_per_quarter", sc))
                       ** ((last - C.c_online + 1) / K.months_per_quarter))
    book_price = C.c_salvage_per_gpu + above_salvage * life_left / C.c_dep_months
    paid = last - C.c_draw_month  # annuity payments made by the last month
    return (
        cohort("last", "Last month in service", "month", "integer",
               IF(_given(shutdown), MIN(C.c_last, shutdown), C.c_last),
               "the retire month, or the shutdown month if earlier"),
        cohort("bought", "Bought (1) or not (0)", "flag", "flag",
               IF(C.c_online <= last, 1, 0), "a cohort due online after the shutdown is not"),
        cohort("dep_left", "Depreciation months left when sold", "months", "integer",
               MAX(0, C.c_online + C.c_dep_months - 1 - last)),
        cohort("book_value", "Net book value when sold", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus * book_price),
        cohort("tax_left", "Tax depreciation months left when sold", "months", "integer",
               MAX(0, C.c_online + C.c_tax_months - 1 - last)),
        cohort("tax_value", "Tax written-down value when sold", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus
               * (C.c_salvage_per_gpu + above_salvage * tax_left / C.c_tax_months)),
        cohort("proceeds", "Disposal proceeds", "money", "money",
               Cell(f"c_bought_{k}") * C.c_owned * C.c_gpus
               * IF(I.residual_method.eq("market"), market_price,
                    C.c_salvage_per_gpu + above_salvage * life_left / C.c_dep_months
                    * I.residual_share),
               "market: MAX(salvage, CapEx × residual share × (1 − resale decline)^(quarters "
               "held)); book: salvage + undepreciated value above it × residual share"),
        cohort("exit_owed", "Debt owed after its last month's payment", "money", "money",
               Cell(f"c_bought_{k}") * IF(paid >= I.debt_tenor_months, 0, IF(
                   N.debt_monthly_rate.eq(0),
                   C.c_loan * (I.debt_tenor_months - paid) / I.debt_tenor_months,
                   C.c_loan * (N.debt_growth - (1 + N.debt_monthly_rate) ** paid)
                   / (N.debt_growth - 1))),
               "prepaid from the proceeds when the cohort is sold (repaid at H if held)"),
    )


def scenario_lines(sc: Scenario) -> tuple[Line | str, ...]:
    """The monthly lines of one scenario, each declared once for all of them. A step of the
    uplift bridge needs only what its project NPV reads: no debt, no payback, no warnings."""
    k = sc.key
    bridge = sc in BRIDGE_SCENARIOS

    def S(name: str) -> Cell:  # noqa: N802 - this scenario's line in the same month
        return Cell(f"{name}_{k}")

    def line(name, label, unit, kind, formula, **kw) -> Line:
        return _monthly(f"{name}_{k}", label, unit, kind, formula,
                        meta={"line": name, "scenario": sc.name}, **kw)

    def in_service() -> Expr:
        return _in_service(C.month, k)

    last, bought = Row(f"c_last_{k}"), Row(f"c_bought_{k}")
    due = (C.month - Row("c_draw_month") >= 1) * (C.month - Row("c_draw_month")
                                                  <= I.debt_tenor_months) * (last >= C.month)
    fleet: tuple[Line | str, ...] = (
        f"{sc.name}: the fleet",
        line("gpus_in_service", "GPUs in service", "GPUs", "gpus",
             SUMPRODUCT(Row("c_gpus") * in_service())),
    ) + tuple(
        line(f"gpus_cohort_{j + 1}", f"  of which cohort {j + 1}", "GPUs", "gpus",
             At("c_gpus", j) * (At("c_online", j) <= C.month) * (At(f"c_last_{k}", j)
                                                                 >= C.month))
        for j in range(MAX_COHORTS) if not bridge
    ) + (
        line("fleet_running", "Some GPU in service now or later (1 = yes)", "flag", "flag",
             IF(SUMPRODUCT(Row("c_gpus") * bought * (last >= C.month)) > 0, 1, 0),
             note="fixed opex and the programme fee stop after the last month in service"),
        line("theoretical_tokens", "Theoretical tokens", "tokens, shown in millions",
             "mtokens", SUMPRODUCT(Row("c_gpus") * Row("c_tps_per_gpu") * in_service())
             * K.seconds_per_hour * C.hours, total=True),
        line("facility_kw", "Facility power in service", "kW", "factor",
             SUMPRODUCT(Row("c_kw") * in_service())),
        line("mw_seconds", "Facility power × time", "MW·s", "tokens",
             S("facility_kw") / K.kw_per_mw * C.hours * K.seconds_per_hour, total=True),
        line("power", "Power", "money", "money", S("facility_kw") * C.hours
             * I.electricity_per_kwh * C.power_index, total=True),
        line("other_opex", "Other opex", "money", "money",
             (S("gpus_in_service") * I.opex_per_gpu_hour * C.hours
              + I.fixed_opex_per_month * S("fleet_running")) * C.opex_index, total=True),
        line("rent", "Rent", "money", "money",
             SUMPRODUCT(Row("c_gpus") * Row("c_rent_per_gpu_hour") * (1 - Row("c_owned"))
                        * in_service()) * C.hours, total=True),
        line("capex", "CapEx", "money", "money",
             SUMPRODUCT(Row("c_capex") * bought
                        * ((1 - I.capex_deposit_share) * Row("c_draw_month").eq(C.month)
                           + I.capex_deposit_share * Row("c_deposit_month").eq(C.month))),
             month0=True, total=True,
             note="the deposit at the deposit month, the rest the month before online"),
        line("depreciation", "Depreciation", "money", "money",
             SUMPRODUCT(Row("c_dep_per_month") * in_service()
                        * (Row("c_online") + Row("c_dep_months") > C.month)), total=True),
        line("tax_depreciation", "Tax depreciation", "money", "money",
             SUMPRODUCT(Row("c_tax_dep_per_month") * in_service()
                        * (Row("c_online") + Row("c_tax_months") > C.month)), total=True),
        line("disposal_book_value", "Book value of disposals", "money", "money",
             SUMPRODUCT(Row(f"c_book_value_{k}") * last.eq(C.month)), total=True),
        line("disposal_proceeds", "Disposal proceeds", "money", "money",
             SUMPRODUCT(Row(f"c_proceeds_{k}") * last.eq(C.month)), total=True),
        line("disposal_gain", "Gain or loss on disposal", "money", "money",
             S("disposal_proceeds") - S("disposal_book_value"), total=True),
        line("disposal_tax_value", "Tax written-down value of disposals", "money", "money",
             SUMPRODUCT(Row(f"c_tax_value_{k}") * last.eq(C.month)), total=True),
        line("tax_disposal_gain", "Tax gain or loss on disposal", "money", "money",
             S("disposal_proceeds") - S("disposal_tax_value"), total=True),
    )
    debt: tuple[Line | str, ...] = () if bridge else (
        f"{sc.name}: debt",
        line("drawdown", "Debt drawn", "money", "money",
             SUMPRODUCT(Row("c_loan") * bought * Row("c_draw_month").eq(C.month)),
             month0=True, total=True),
        line("debt_service", "Scheduled debt service", "money", "money",
             SUMPRODUCT(Row("c_payment") * bought * due), total=True,
             note="annuity payments due while the cohort is held"),
        line("interest", "Interest", "money", "money",
             IF(N.debt_monthly_rate.eq(0), 0,
                SUMPRODUCT(Row("c_loan") * bought * due
                           * (N.debt_growth - (1 + N.debt_monthly_rate)
                              ** (C.month - Row("c_draw_month") - 1)))
                * N.debt_monthly_rate / (N.debt_growth - 1)),
             note="i × the opening balance of each loan", total=True),
        line("prepayment", "Prepaid on disposal", "money", "money",
             IF(C.month < I.horizon_months,
                SUMPRODUCT(Row(f"c_exit_owed_{k}") * last.eq(C.month)), 0),
             note="what a cohort sold before H still owes after the month's payment",
             total=True),
        line("repayment_at_h", "Repaid at the horizon", "money", "money",
             IF(C.month.eq(I.horizon_months),
                SUMPRODUCT(Row(f"c_exit_owed_{k}") * last.eq(C.month)), 0),
             note="what is still owed after month H's payment (a refinancing)", total=True),
        line("principal", "Principal repaid", "money", "money",
             S("debt_service") - S("interest") + S("prepayment") + S("repayment_at_h"),
             total=True),
        line("debt_balance", "Debt outstanding", "money", "money",
             IF(C.month.eq(I.horizon_months), 0, _owed(C.month, bought * (last > C.month))),
             month0=True, note="after the month's payments; nothing once its cohort is sold"),
    )
    market: tuple[Line | str, ...] = (
        f"{sc.name}: efficiency, capacity and demand",
        line("tef", "TEF", "fraction", "fraction",
             N.tef_now + (_s_input("tef_target", sc) - N.tef_now)
             * _ramp_share(I.tef_ramp_months)),
        line("sell_through", "Sell-through", "fraction", "fraction",
             I.sell_through_start + (_s_input("sell_through_target", sc) - I.sell_through_start)
             * _ramp_share(I.sell_through_ramp_months)),
        line("deliverable_tokens", "Deliverable tokens", "tokens, shown in millions", "mtokens",
             S("theoretical_tokens") * S("tef") * N.service_level, total=True),
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
             + _s_input("programme_fee_per_month", sc) * S("fleet_running") * C.opex_index,
             total=True),
        line("ebitda", "EBITDA", "money", "money",
             S("revenue") - S("power") - S("other_opex") - S("rent") - S("programme_cost"),
             total=True),
        line("ebit", "EBIT", "money", "money",
             S("ebitda") - S("depreciation") + S("disposal_gain"), total=True),
        line("taxable_profit", "Taxable profit (before interest)", "money", "money",
             S("ebitda") - S("tax_depreciation") + S("tax_disposal_gain"), total=True,
             note="EBIT with tax depreciation and the tax gain on disposal"),
        line("tax", "Tax (instalments of the year's tax)", "money", "money",
             INDEX(Row(f"fy_tax_{k}"), 1, C.fiscal_index)
             / INDEX(Row("fy_months"), 1, C.fiscal_index), total=True),
        f"{sc.name}: working capital",
        line("receivables", "Receivables", "money", "money",
             IF(C.month.eq(I.horizon_months), 0, S("revenue") * I.receivable_days / C.days),
             note="revenue × receivable days ÷ the month's days; released at H"),
        line("payables", "Payables", "money", "money",
             IF(C.month.eq(I.horizon_months), 0,
                (S("power") + S("other_opex") + S("rent") + S("programme_cost"))
                * I.payable_days / C.days),
             note="power, opex, rent and programme cost × payable days ÷ the month's days; "
                  "released at H"),
        line("working_capital", "Working capital", "money", "money",
             IF(C.month.eq(0), 0, S("receivables") - S("payables")), month0=True),
        line("wc_change", "Increase in working capital", "money", "money",
             S("working_capital") - Cell(f"working_capital_{k}", -1), total=True,
             note="what the cash flows lose to it; it unwinds when the fleet stops or at H"),
        f"{sc.name}: cash flow",
        line("cash_flow", "Project cash flow", "money", "money",
             IF(C.month.eq(0), 0, S("ebitda") - S("tax") + S("disposal_proceeds")
                - S("wc_change")) - S("capex"),
             month0=True, total=True),
        line("discounted_cash_flow", "Discounted cash flow", "money", "money",
             S("cash_flow") * C.discount_factor, month0=True, total=True),
    )
    if bridge:
        return fleet + market
    returns: tuple[Line | str, ...] = (
        line("cumulative_cash_flow", "Cumulative cash flow", "money", "money",
             RunningSum(f"cash_flow_{k}"), month0=True),
        line("cumulative_discounted", "Cumulative discounted cash flow", "money", "money",
             RunningSum(f"discounted_cash_flow_{k}"), month0=True),
        line("discounted_inflow", "Discounted cash inflow", "money", "money",
             MAX(0, S("discounted_cash_flow")), month0=True, total=True,
             note="the positive discounted cash flows (MIRR)"),
        line("discounted_outflow", "Discounted cash outflow", "money", "money",
             MIN(0, S("discounted_cash_flow")), month0=True, total=True,
             note="the negative discounted cash flows (MIRR)"),
        line("payback_crossing", "Payback crossing", "months", "months",
             IF(AND(S("cumulative_cash_flow") >= 0, Cell(f"cumulative_cash_flow_{k}", -1) < 0),
                (C.month - 1) + (-Cell(f"cumulative_cash_flow_{k}", -1)) / S("cash_flow"), "")),
        line("discounted_crossing", "Discounted payback crossing", "months", "months",
             IF(AND(S("cumulative_discounted") >= 0, Cell(f"cumulative_discounted_{k}", -1) < 0),
                (C.month - 1) + (-Cell(f"cumulative_discounted_{k}", -1))
                / S("discounted_cash_flow"), "")),
        line("ebitda_month", "Month with positive EBITDA", "month", "integer",
             IF(S("ebitda") > 0, C.month, "")),
        line("sign_change", "Cash flow changes sign (1 = yes)", "flag", "flag",
             IF(S("cash_flow") * Cell(f"cash_flow_{k}", -1) < 0, 1, 0), total=True,
             note="against the month before; more than one change: IRR is not unique"),
        f"{sc.name}: financing",
        line("levered_tax", "Tax after interest", "money", "money",
             INDEX(Row(f"fy_levered_tax_{k}"), 1, C.fiscal_index)
             / INDEX(Row("fy_months"), 1, C.fiscal_index), total=True),
        line("cfads", "Cash flow available for debt service", "money", "money",
             S("ebitda") - S("levered_tax") - S("wc_change"), total=True,
             note="after working capital"),
        line("equity_cash_flow", "Equity cash flow", "money", "money",
             IF(C.month.eq(0), 0, S("ebitda") - S("levered_tax") - S("interest")
                - S("principal") + S("disposal_proceeds") - S("wc_change"))
             - S("capex") + S("drawdown"),
             month0=True, total=True),
        line("contributions", "Equity contributions", "money", "money",
             MAX(0, -S("equity_cash_flow")), month0=True, total=True,
             note="the company keeps no cash: equity pays in what the month lacks"),
        line("distributions", "Distributions to equity", "money", "money",
             MAX(0, S("equity_cash_flow")), month0=True, total=True),
        line("cumulative_equity", "Cumulative equity cash flow", "money", "money",
             RunningSum(f"equity_cash_flow_{k}"), month0=True),
        line("net_income", "Net income", "money", "money",
             S("ebit") - S("interest") - S("levered_tax"), total=True),
        line("funding_need", "Equity funds operations (1 = yes)", "flag", "flag",
             IF(AND(C.month > 1, S("equity_cash_flow") < 0, S("ebitda") < 0), 1, 0),
             total=True, note="an equity contribution after month 1 with negative EBITDA"),
        line("ebitda_loss", "EBITDA negative while GPUs run (1 = yes)", "flag", "flag",
             IF(AND(S("gpus_in_service") > 0, S("ebitda") < 0), 1, 0), total=True),
    )
    return fleet + debt + market + returns


SCENARIO_LINES: dict[str, tuple[Line | str, ...]] = {
    sc.key: scenario_lines(sc) for sc in ALL_SCENARIOS}
FLEET_SCENARIO: dict[str, tuple[Line, ...]] = {
    sc.key: fleet_scenario_lines(sc) for sc in ALL_SCENARIOS}
#: The scenario lines a chart or the yearly summary shows for the live scenario.
LIVE_SOURCES: tuple[str, ...] = (
    "gpus_in_service", "theoretical_tokens", "facility_kw", "mw_seconds", "power", "other_opex",
    "rent", "capex", "depreciation", "disposal_book_value", "disposal_proceeds",
    "disposal_gain", "drawdown", "debt_service", "interest", "prepayment", "repayment_at_h",
    "principal", "debt_balance",
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


# -- tax by fiscal year, losses carried forward; debt service cover (methodology §4.3, §4.4) ----
def _by_fiscal_year(line: str) -> Expr:
    return SUMIF(Row("fiscal_index"), Position(), Row(line))


def _due(position: Expr, k: str) -> Expr:
    """1 for the months of fiscal year ``position`` with scheduled debt service."""
    return (Row("fiscal_index").eq(position)) * (Row(f"debt_service_{k}") > 0)


FISCAL_COMMON: tuple[Line, ...] = (
    Line("fy_number", "Fiscal year", "", "integer", Position(), table=FISCAL),
    Line("fy_year", "Calendar year", "", "integer", YEAR(I.start_date) + Position() - 1,
         table=FISCAL),
    Line("fy_months", "Months in the horizon", "months", "integer",
         COUNTIF(Row("fiscal_index"), Position()), table=FISCAL),
    Line("fy_end_month", "Last month of the year in the horizon", "month", "integer",
         SUMPRODUCT((Row("fiscal_index") <= Position()) * Row("in_horizon")) - 1,
         table=FISCAL, note="the balance sheet's date"),
)


def fiscal_lines(sc: Scenario) -> tuple[Line, ...]:
    """One scenario's yearly tax (unlevered and levered) and debt service cover."""
    k = sc.key
    out: list[Line] = []
    levels = (("", f"taxable_profit_{k}", "taxable profit"),
              ("levered_", f"taxable_profit_{k}", "taxable profit less interest"))
    if sc in BRIDGE_SCENARIOS:  # a step of the bridge needs only the project's tax
        levels = levels[:1]
    for prefix, taxable, label in levels:
        pool = Table(f"loss_pool_{prefix}{k}", FISCAL_YEARS, guard=FISCAL.guard, recurrent=True)
        base = _by_fiscal_year(taxable)
        if prefix:
            base = base - _by_fiscal_year(f"interest_{k}")
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
    if sc in BRIDGE_SCENARIOS:
        return tuple(out)
    service = Cell(f"fy_debt_service_{k}")
    out.append(Line(f"fy_debt_service_{k}", f"{sc.name}: scheduled debt service", "money",
                    "money", SUMPRODUCT(Row(f"debt_service_{k}"), _due(Position(), k)),
                    table=FISCAL, meta={"scenario": sc.name}))
    out.append(Line(f"fy_cfads_{k}", f"{sc.name}: CFADS in months with debt service", "money",
                    "money", SUMPRODUCT(Row(f"cfads_{k}"), _due(Position(), k)), table=FISCAL,
                    meta={"scenario": sc.name}))
    out.append(Line(f"fy_dscr_{k}", f"{sc.name}: DSCR", "ratio", "factor",
                    IF(service > 0, Cell(f"fy_cfads_{k}") / service, ""),
                    table=FISCAL, missing="", meta={"scenario": sc.name}))
    out.append(Line(f"fy_dscr_breach_{k}", f"{sc.name}: DSCR below the covenant (1 = yes)",
                    "flag", "flag",
                    IF(service > 0, IF(Cell(f"fy_dscr_{k}") < I.dscr_covenant, 1, 0), 0),
                    table=FISCAL, meta={"scenario": sc.name}))
    return tuple(out)


FISCAL_LINES: dict[str, tuple[Line, ...]] = {sc.key: fiscal_lines(sc) for sc in ALL_SCENARIOS}


# -- the three statements by calendar year (methodology §10.4) -----------------------------------
def _in_statement_year(line: str) -> Expr:
    """Σ a monthly line over the statement's year (month 0 counts in the first)."""
    return SUMPRODUCT(Row(line), Row("fiscal_index").eq(Position())
                      + Row("month").eq(0) * Position().eq(1))


def _to_year_end(line: str) -> Expr:
    """Σ a monthly line from month 0 to the year's end."""
    return SUMPRODUCT(Row(line), (Row("fiscal_index") <= Position()) * Row("in_horizon"))


def _at_year_end(line: str) -> Expr:
    """A monthly balance at the year's end."""
    return INDEX(Row(line), 1, C.fy_end_month + 1)


#: Each statement's part and the keys ``tokenfactory-xl statements --json`` gives them.
STATEMENT_PARTS: tuple[tuple[str, str], ...] = (
    ("income", "Income statement"), ("cash_flow", "Cash-flow statement"),
    ("balance", "Balance sheet at the year's end"))


def statement_lines(sc: Scenario) -> tuple[Line, ...]:
    """One scenario's income statement, cash-flow statement and balance sheet by calendar
    year: the income statement keeps book depreciation; the cash-flow statement's four parts
    sum to 0 (the company keeps no cash); the balance sheet balances, and is 0 after H."""
    k = sc.key

    def st(part: str, key: str, label: str, formula: Expr, note: str = "") -> Line:
        name = "equity_flow" if (part, key) == ("cash_flow", "equity") else key
        return Line(f"st_{name}_{k}", f"{sc.name}: {label}", "money", "money", formula,
                    table=FISCAL, note=note,
                    meta={"scenario": sc.name, "statement": part, "key": key})

    def y(line: str) -> Expr:
        return _in_statement_year(f"{line}_{k}")

    def to_the_cent(gap: Expr) -> Expr:
        """A check line's gap, 0 below half a cent: the rounding of sums of a year's months
        (about 1e-9) shows as 0, not as a red "-0"; a real gap shows whole."""
        return IF(ABS(gap) < K.cent, 0, gap)

    return (
        st("income", "revenue", "Revenue", y("revenue")),
        st("income", "ebitda", "EBITDA", y("ebitda")),
        st("income", "depreciation", "Depreciation", y("depreciation"), "book depreciation"),
        st("income", "gain_on_disposal", "Gain or loss on disposal", y("disposal_gain")),
        st("income", "ebit", "EBIT", y("ebit")),
        st("income", "interest", "Interest", y("interest")),
        st("income", "tax", "Tax", y("levered_tax"), "the year's tax after interest"),
        st("income", "net_income", "Net income",
           Cell(f"st_ebit_{k}") - Cell(f"st_interest_{k}") - Cell(f"st_tax_{k}")),
        st("cash_flow", "operating", "Operating cash flow",
           y("ebitda") - y("levered_tax") - y("wc_change"), "EBITDA − tax − ΔWC"),
        st("cash_flow", "investing", "Investing cash flow",
           y("disposal_proceeds") - y("capex"), "disposal proceeds − CapEx (deposits included)"),
        st("cash_flow", "financing", "Financing cash flow",
           y("drawdown") - y("interest") - y("principal"),
           "drawdowns − interest − principal (prepayments and the repayment at H included)"),
        st("cash_flow", "equity", "Equity: contributions − distributions",
           y("contributions") - y("distributions")),
        st("cash_flow", "cash_change", "Change in cash (the company keeps none: 0)",
           to_the_cent(Cell(f"st_operating_{k}") + Cell(f"st_investing_{k}")
                       + Cell(f"st_financing_{k}") + Cell(f"st_equity_flow_{k}"))),
        st("balance", "fixed_assets", "Fixed assets at net book value",
           _to_year_end(f"capex_{k}") - _to_year_end(f"depreciation_{k}")
           - _to_year_end(f"disposal_book_value_{k}"),
           "CapEx paid (deposits included) − depreciation − book value of disposals"),
        st("balance", "receivables", "Receivables", _at_year_end(f"receivables_{k}")),
        st("balance", "debt", "Debt", _at_year_end(f"debt_balance_{k}")),
        st("balance", "payables", "Payables", _at_year_end(f"payables_{k}")),
        st("balance", "equity", "Equity",
           _to_year_end(f"contributions_{k}") - _to_year_end(f"distributions_{k}")
           + _to_year_end(f"net_income_{k}"),
           "Σ contributions − distributions + net income"),
        st("balance", "balance_gap", "Assets − debt − payables − equity (0: it balances)",
           to_the_cent(Cell(f"st_fixed_assets_{k}") + Cell(f"st_receivables_{k}")
                       - Cell(f"st_debt_{k}") - Cell(f"st_payables_{k}")
                       - Cell(f"st_equity_{k}"))),
    )


STATEMENT_LINES: dict[str, tuple[Line, ...]] = {sc.key: statement_lines(sc)
                                                for sc in SCENARIOS}


# -- the IRR: the NPV on a grid of monthly rates, then Newton's steps in the bracket nearest 0 --
# Unlike Excel's IRR (Newton's method from a guess), this cannot wander off: every step stays in a
# bracket of the grid where the NPV changes sign, so it picks the same root in every engine where
# the cash flows change sign more than once.
@dataclass(frozen=True)
class IrrSearch:
    """The lines of one IRR search: of a scenario's project or equity cash flow."""

    tag: str
    cash_flow: str
    label: str
    grid: tuple[Line, ...]
    bracket: tuple[Line, ...]
    steps: tuple[Line, ...]
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
    step_lines: list[Line] = []
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
        step_lines += _newton(cash_flow, n, side, Name(found), Name(position))
        roots[side] = Name(found).eq(1)
    up = At(n("irr_x_above"), IRR_NEWTON_STEPS - 1)
    down = At(n("irr_x_below"), IRR_NEWTON_STEPS - 1)
    # the root nearest 0: of the nearest root above and the nearest below, the closer one
    result = Line(n("irr_monthly"), f"{label}: IRR, monthly", "fraction/month", "rate",
                  IF(AND(MIN(Row(cash_flow)) < 0, MAX(Row(cash_flow)) > 0),
                     IF(roots["above"], IF(roots["below"], IF(ABS(down) < ABS(up), down, up), up),
                        IF(roots["below"], down, NONE)), NONE))
    return IrrSearch(tag, cash_flow, label, grid, tuple(bracket), tuple(step_lines), result)


def _newton(cash_flow: str, n: Callable[[str], str], side: str, found: Expr,
            position: Expr) -> tuple[Line, ...]:
    """Newton's method in one bracket of the grid, safeguarded: it starts at the bracket's
    false-position point; each step's NPV keeps the half of the bracket where the sign
    changes; a step that leaves the bracket (or meets a flat NPV) takes its midpoint instead;
    an exact root (an NPV of 0, a grid rate included) is kept."""
    table = Table(n(f"irr_steps_{side}"), IRR_NEWTON_STEPS, guard=found.eq(1), recurrent=True)

    def here(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"))

    def before(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"), -1)

    keep_low = (before("irr_f") > 0).eq(before("irr_f_low") > 0)  # the root is above
    low, high, f_low = here("irr_low"), here("irr_high"), here("irr_f_low")
    f_high = INDEX(Row(n("irr_npv")), position + 1)
    middle = AVERAGE(low, high)
    regula = low - f_low * (high - low) / (f_high - f_low)
    # below 0 the step is Newton's on NPV × (1 + rate)^H, the same roots and signs: near −99 %
    # a month the NPV is ruled by its last months' (1 + rate)^−m, that product by its last
    # flows, nearly a straight line; above 0 by its first months: Newton's on the NPV itself
    slope = before("irr_slope")
    if side == "below":
        slope = slope + I.horizon_months * before("irr_f") / (1 + before("irr_x"))
    newton = before("irr_x") - before("irr_f") / slope
    return (
        Line(n(f"irr_low_{side}"), "Low rate", "fraction/month", "rate",
             IF(keep_low, before("irr_x"), before("irr_low")), table=table,
             first=INDEX(Row(n("irr_rate")), position)),
        Line(n(f"irr_high_{side}"), "High rate", "fraction/month", "rate",
             IF(keep_low, before("irr_high"), before("irr_x")), table=table,
             first=INDEX(Row(n("irr_rate")), position + 1)),
        Line(n(f"irr_f_low_{side}"), "NPV at low", "money", "money",
             IF(keep_low, before("irr_f"), before("irr_f_low")), table=table,
             first=INDEX(Row(n("irr_npv")), position)),
        Line(n(f"irr_x_{side}"), "Rate tried", "fraction/month", "rate",
             IF(before("irr_f").eq(0), before("irr_x"),
                IF(slope.eq(0), middle,
                   IF(AND(newton >= low, newton <= high), newton, middle))), table=table,
             first=IF(f_low.eq(0), low, IF(f_high.eq(0), high,
                                            IF(AND(regula > low, regula < high), regula,
                                               middle)))),
        Line(n(f"irr_f_{side}"), "NPV at the rate", "money", "money",
             _npv_at(cash_flow, here("irr_x")), table=table),
        Line(n(f"irr_slope_{side}"), "Slope of the NPV at the rate", "money/(fraction/month)",
             "money", _npv_slope_at(cash_flow, here("irr_x")), table=table),
    )


def _npv_slope_at(cash_flow: str, rate: Expr) -> Expr:
    """The NPV's derivative in the rate, −Σ month × cash flow × (1 + rate)^(−month − 1)."""
    return -SUMPRODUCT(Row(cash_flow), Row("month"),
                       (1 + rate) ** (-(Row("month") * Row("in_horizon")) - 1))


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
    FLEET_LINES + tuple(x for sc in ALL_SCENARIOS for x in SCENARIO_LINES[sc.key])
    + LIVE_LINES)
TIMELINE_TOTALS: tuple[Line, ...] = tuple(
    _total(ln) for ln in _lines(TIMELINE_LINES) if ln.total)


# -- the summary outputs (methodology §7), for each scenario -----------------------------------
@dataclass(frozen=True)
class Output:
    """One summary output of methodology section 7: its name, label, unit, display kind and its
    formula for one scenario (a function of the scenario, so that it is written once)."""

    name: str
    label: str
    unit: str
    kind: str  # fraction | money | gpus | tokens | months | price | ratio
    formula: Callable[[Scenario], Expr]
    note: str = ""
    #: what the output shows where it has no figure: "none" (the spec's "no figure") or "n/m"
    #: (a ratio without meaning, :func:`formula.nm_if`)
    missing: str = NONE

    def line_for(self, sc: Scenario) -> Line:
        return Line(f"out_{self.name}_{sc.key}", f"{self.label} · {sc.name}", self.unit,
                    self.kind, self.formula(sc), note=self.note, defined_name=True,
                    missing=self.missing, meta={"output": self.name, "scenario": sc.name})

    @property
    def line(self) -> Line:
        """The live scenario's value (``out_<name>``)."""
        return Line(f"out_{self.name}", self.label, self.unit, self.kind,
                    CHOOSE(N.scenario_number,
                           *(Name(f"out_{self.name}_{sc.key}") for sc in SCENARIOS)),
                    note=self.note, defined_name=True, missing=self.missing,
                    meta={"output": self.name})


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
    k = sc.key
    return (_pv(f"capex_{k}") - _pv(f"disposal_proceeds_{k}") + _pv(f"power_{k}")
            + _pv(f"other_opex_{k}") + _pv(f"rent_{k}") + _pv(f"programme_cost_{k}"))


def _cash_cost_h(sc: Scenario) -> Expr:
    k = sc.key
    return (_last(f"power_{k}") + _last(f"other_opex_{k}") + _last(f"rent_{k}")
            + _last(f"programme_cost_{k}"))


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
    return (_t("power", sc) + _t("other_opex", sc) + _t("rent", sc)
            + _t("programme_cost", sc) + _t("depreciation", sc))


def _mirr(sc: Scenario) -> Expr:
    """Excel's MIRR of months 0…H at the monthly discount rate i, financing and reinvesting:
    (FV of the inflows ÷ −PV of the outflows)^(1/H) − 1 = (1 + i) × (PV in ÷ −PV out)^(1/H)
    − 1, shown yearly; none without an outflow and an inflow."""
    inflow, outflow = _t("discounted_inflow", sc), _t("discounted_outflow", sc)
    return IF(AND(MIN(Row(f"cash_flow_{sc.key}")) < 0, MAX(Row(f"cash_flow_{sc.key}")) > 0),
              ((1 + N.monthly_discount_rate) * (inflow / -outflow) ** (1 / I.horizon_months))
              ** K.months_per_year - 1, NONE)


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
    Output("equivalent_gpus", "Equivalent GPUs (cohort-1 GPUs)", "GPUs", "gpus",
           lambda sc: none_if(N.tef_now.eq(0),
                              N.fleet_equivalent * _s_input("tef_target", sc) / N.tef_now),
           "the fleet in cohort-1 GPUs of equal throughput × TEF target ÷ TEF now: the fleet "
           "at today's TEF that makes as many tokens"),
    Output("avoided_capex", "Buy instead of optimise: CapEx", "money", "money",
           lambda sc: IF(OR(N.owned_flag.eq(0), NOT(ISNUMBER(_o("equivalent_gpus", sc)))), NONE,
                         (_o("equivalent_gpus", sc) - N.fleet_equivalent) * I.capex_per_gpu),
           "(equivalent GPUs − the fleet in cohort-1 GPUs) × cohort 1's CapEx per GPU; the "
           "alternative to the programme, not a gain beside it; none when cohort 1 is rented"),
    Output("avoided_rent_per_year", "Buy instead of optimise: rent per year", "money/year",
           "money",
           lambda sc: IF(OR(N.owned_flag.eq(1), NOT(ISNUMBER(_o("equivalent_gpus", sc)))),
                         NONE, (_o("equivalent_gpus", sc) - N.fleet_equivalent)
                         * I.rent_per_gpu_hour * K.hours_per_year),
           "(equivalent GPUs − the fleet in cohort-1 GPUs) × cohort 1's rent × 8,760; none "
           "when cohort 1 is owned"),
    Output("blended_price", "Blended price", "money/Mtok", "price", lambda sc: N.blended_price,
           "P₀: list prices after cache hits and the batch discount"),
    Output("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price", lambda sc: N.gpu_hour_cost,
           "cohort 1's, fixed opex included"),
    Output("breakeven_util", "Breakeven utilisation (at today's price)", "fraction", "fraction",
           lambda sc: none_if((N.blended_price * _s_input("price_factor", sc)).eq(0),
                              N.gpu_hour_cost / (N.site_tps_per_gpu * K.seconds_per_hour
                                                 * N.blended_price * _s_input("price_factor", sc)
                                                 / K.tokens_per_mtok)),
           "the TFI at which cohort 1's GPU-hour (capital at the discount rate) is paid at "
           "today's market price; over the plan's life see the lifetime breakeven TFI"),
    Output("tokens_sold_total", "Tokens sold", "tokens", "tokens",
           lambda sc: _t("tokens_sold", sc)),
    Output("revenue_total", "Revenue", "money", "money", lambda sc: _t("revenue", sc)),
    Output("ebitda_total", "EBITDA", "money", "money", lambda sc: _t("ebitda", sc)),
    Output("ebitda_margin", "EBITDA margin", "fraction", "fraction",
           lambda sc: nm_if(_o("revenue_total", sc) <= 0,
                            _o("ebitda_total", sc) / _o("revenue_total", sc)),
           "EBITDA ÷ revenue; n/m when revenue ≤ 0", missing=NM),
    Output("npv", "NPV", "money", "money", lambda sc: _t("discounted_cash_flow", sc),
           "project cash flows; month 0 undiscounted; monthly rate (1 + r)^(1/12) − 1"),
    Output("terminal_value_pv", "Terminal value (PV)", "money", "money",
           lambda sc: SUMPRODUCT(Row(f"c_proceeds_{sc.key}"),
                                 Row(f"c_last_{sc.key}").eq(I.horizon_months) * 1)
           * _last("discount_factor"),
           "present value of the proceeds at H of the cohorts still held then"),
    Output("npv_excl_terminal", "NPV without the terminal value", "money", "money",
           lambda sc: _o("npv", sc) - _o("terminal_value_pv", sc),
           "NPV − the terminal value's PV: what the plan earns before its exit"),
    Output("tax_losses_unused", "Tax losses unused", "money", "money",
           lambda sc: INDEX(Row(f"fy_loss_pool_{sc.key}"), 1, N.fiscal_years),
           "the loss pool after the last calendar year (unlevered); shown, never valued"),
    Output("irr", "IRR (yearly)", "fraction/year", "fraction",
           lambda sc: _irr_yearly(f"project_{sc.key}"),
           "monthly IRR of the project cash flows, shown yearly; none without one"),
    Output("mirr", "MIRR (yearly)", "fraction/year", "fraction", _mirr,
           "Excel's MIRR of months 0…H at the discount rate, shown yearly; read it when the "
           "IRR is not unique"),
    Output("equity_irr", "Equity IRR (yearly)", "fraction/year", "fraction",
           lambda sc: IF(I.debt_share.eq(0), _o("irr", sc), _irr_yearly(f"equity_{sc.key}")),
           "of the equity cash flows; the project IRR without debt"),
    Output("min_dscr", "Minimum DSCR", "ratio", "factor",
           lambda sc: IF(COUNT(Row(f"fy_dscr_{sc.key}")).eq(0), NONE,
                         MIN(Row(f"fy_dscr_{sc.key}"))),
           "the lowest yearly CFADS ÷ scheduled debt service; none without debt"),
    Output("avg_dscr", "Average DSCR", "ratio", "factor",
           lambda sc: IF(SUM(Row(f"fy_debt_service_{sc.key}")).eq(0), NONE,
                         SUM(Row(f"fy_cfads_{sc.key}")) / SUM(Row(f"fy_debt_service_{sc.key}"))),
           "Σ CFADS ÷ Σ scheduled debt service over the months with debt service"),
    Output("equity_contributed", "Equity contributed", "money", "money",
           lambda sc: _t("contributions", sc),
           "Σ the months' equity contributions (deposits, CapEx less debt, shortfalls)"),
    Output("peak_funding", "Peak funding", "money", "money",
           lambda sc: MAX(0, -MIN(Row(f"cumulative_equity_{sc.key}"))),
           "the most equity in the plan at once: −(lowest cumulative equity cash flow)"),
    Output("dscr_breaches", "DSCR breaches", "years", "integer",
           lambda sc: SUM(Row(f"fy_dscr_breach_{sc.key}")),
           "calendar years whose DSCR is below the covenant; 0 without debt"),
    Output("payback_months", "Payback", "months", "months",
           lambda sc: _payback(f"payback_crossing_{sc.key}", f"cumulative_cash_flow_{sc.key}"),
           "after the last month the cumulative cash flow crosses 0; none when it ends below"),
    Output("discounted_payback_months", "Discounted payback", "months", "months",
           lambda sc: _payback(f"discounted_crossing_{sc.key}",
                               f"cumulative_discounted_{sc.key}"),
           "the same on discounted cash flows"),
    Output("roi", "ROI over the horizon", "ratio", "fraction",
           lambda sc: none_if(_t("capex", sc).eq(0), _t("cash_flow", sc) / _t("capex", sc)),
           "Σ cash flows (month 0 included) ÷ Σ CapEx; none without CapEx"),
    Output("lifetime_breakeven_tfi", "Lifetime breakeven TFI", "fraction", "fraction",
           lambda sc: none_if(SUMPRODUCT(Row("discount_factor"),
                                         Row(f"theoretical_tokens_{sc.key}"),
                                         Row(f"price_{sc.key}")).eq(0),
                              _outlay_pv(sc) / (SUMPRODUCT(Row("discount_factor"),
                                                           Row(f"theoretical_tokens_{sc.key}"),
                                                           Row(f"price_{sc.key}"))
                                                / K.tokens_per_mtok)),
           "the constant TFI at which the pre-tax NPV is 0 at the market price path"),
    Output("planned_tfi", "Planned TFI", "fraction", "fraction",
           lambda sc: _s_input("tef_target", sc) * N.service_level
           * _s_input("sell_through_target", sc),
           "TEF target × SLA × sell-through target: the plan after its ramps"),
    Output("tfi_headroom", "TFI headroom", "fraction", "fraction",
           lambda sc: IF(ISNUMBER(_o("lifetime_breakeven_tfi", sc)),
                         _o("planned_tfi", sc) - _o("lifetime_breakeven_tfi", sc), NONE),
           "planned TFI − lifetime breakeven TFI: how far the plan may fall short"),
    Output("breakeven_price_per_mtok", "Breakeven price", "money/Mtok", "price",
           lambda sc: none_if(SUMPRODUCT(Row("discount_factor"), Row(f"tokens_sold_{sc.key}"),
                                         Row(f"price_path_{sc.key}")).eq(0),
                              _outlay_pv(sc) / (SUMPRODUCT(Row("discount_factor"),
                                                           Row(f"tokens_sold_{sc.key}"),
                                                           Row(f"price_path_{sc.key}"))
                                                / K.tokens_per_mtok)),
           "today's market price at which the pre-tax NPV is 0 with the tokens sold"),
    Output("tokens_per_mw", "Tokens per MW", "tokens/s per MW", "tokens",
           lambda sc: nm_if(_t("mw_seconds", sc).eq(0),
                            _o("tokens_sold_total", sc) / _t("mw_seconds", sc)),
           "tokens sold per second per MW of facility power in service; n/m with none in "
           "service", missing=NM),
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
           lambda sc: nm_if(_t("deliverable_tokens", sc).eq(0),
                            _o("tokens_sold_total", sc) / _t("deliverable_tokens", sc)),
           "tokens sold ÷ deliverable tokens; n/m when none are deliverable", missing=NM),
    Output("cost_per_mtok", "Cost per million tokens sold", "money/Mtok", "price",
           lambda sc: nm_if(_o("tokens_sold_total", sc).eq(0),
                            _cost_total(sc) / (_o("tokens_sold_total", sc) / K.tokens_per_mtok)),
           "(Σ power, opex, rent, programme cost and depreciation) ÷ Mtok sold; n/m when none "
           "is sold", missing=NM),
    Output("economic_life_months", "Economic life", "months", "months", _economic_life,
           "when revenue per GPU-hour falls to its cash cost"),
)


# -- warnings (methodology §10.5): what a committee should read before the figures --------------
def _flag_if_number(x: Expr, condition: Callable[[Expr], Expr]) -> Expr:
    """1 where ``x`` is a number meeting ``condition``; 0 where it is none."""
    return IF(ISNUMBER(x), IF(condition(x), 1, 0), 0)


@dataclass(frozen=True)
class Warning_:
    """A rule of methodology §10.5: it never turns the master check red, it is counted in the
    ``warnings`` output and printed by ``summary``."""

    key: str
    text: str
    formula: Callable[[Scenario], Expr]

    def line_for(self, sc: Scenario) -> Line:
        return Line(f"warn_{self.key}_{sc.key}", self.text, "flag", "flag",
                    self.formula(sc), meta={"warning": self.key, "scenario": sc.name})


NO_DEMAND_LIMIT = "no market demand limit: every sellable token is assumed sold"
WARNINGS: tuple[Warning_, ...] = (
    Warning_("no_demand_limit", NO_DEMAND_LIMIT,
             lambda sc: IF(I.market_mtok_month1.eq(0), 1, 0)),
    Warning_("terminal_value", "the NPV rests on the terminal value: positive with it, "
             "negative without it",
             lambda sc: _flag_if_number(_o("npv_excl_terminal", sc), lambda x: AND(
                 x < 0, _o("npv", sc) > 0))),
    Warning_("dscr", "a year's DSCR is below the covenant, or below 1",
             lambda sc: _flag_if_number(_o("min_dscr", sc),
                                        lambda x: x < MAX(1, I.dscr_covenant))),
    Warning_("funding", "operations need funding: equity pays in after month 1 in a month "
             "of negative EBITDA", lambda sc: IF(_t("funding_need", sc) > 0, 1, 0)),
    Warning_("ebitda_loss", "EBITDA is negative in a month while GPUs are in service",
             lambda sc: IF(_t("ebitda_loss", sc) > 0, 1, 0)),
    Warning_("headroom", "the planned TFI is less than 5 points above the lifetime breakeven "
             "TFI", lambda sc: _flag_if_number(_o("tfi_headroom", sc),
                                                lambda x: x < K.headroom_warning)),
    Warning_("irr_not_unique", "the cash flows change sign more than once: the IRR is not "
             "unique (read the MIRR)", lambda sc: IF(_t("sign_change", sc) > 1, 1, 0)),
)
WARNING_LINES: dict[str, tuple[Line, ...]] = {
    sc.key: tuple(w.line_for(sc) for w in WARNINGS) for sc in SCENARIOS}
OUTPUTS += (
    Output("warnings", "Warnings", "", "integer",
           lambda sc: SUM(*(Name(w.name) for w in WARNING_LINES[sc.key])),
           "how many warning rules fire (Checks lists them; none turns the master check red)"),
)
OUTPUT_NAMES: tuple[str, ...] = tuple(o.name for o in OUTPUTS)
#: What each output shows where it has no figure: "none" or "n/m" (a ratio without meaning).
OUTPUT_MISSING: dict[str, str] = {o.name: o.missing for o in OUTPUTS}
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


def _bridge_npv(step: int) -> Expr:
    """The project NPV after ``step`` steps of the bridge (0: Base; the last: Optimised)."""
    if step == 0:
        return _o("npv", _BASE)
    if step == len(BRIDGE_STEPS):
        return _o("npv", _OPTIMISED)
    return _t("discounted_cash_flow", BRIDGE_SCENARIOS[step - 1])


#: The uplift bridge (methodology §10.3): each step's change of the project NPV; the steps sum
#: to ``uplift_npv``.
BRIDGE_LINES: tuple[Line, ...] = tuple(
    Line(f"out_uplift_npv_{key}", f"NPV uplift: + Optimised {what}", "money", "money",
         _bridge_npv(i + 1) - _bridge_npv(i), defined_name=True,
         meta={"output": f"uplift_npv_{key}", "step": key})
    for i, (key, what, _names) in enumerate(BRIDGE_STEPS))
BRIDGE_NAMES: tuple[str, ...] = tuple(f"uplift_npv_{key}" for key, _w, _n in BRIDGE_STEPS)

#: The bridge as a waterfall: Base's NPV, each step, Optimised's NPV. A chart draws each bar
#: as a stack of an invisible part and a visible one, split at 0 (the way every engine's
#: stacked bar chart can draw a waterfall).
BRIDGE_BARS = Table("bridge_bars", len(BRIDGE_STEPS) + 2)
_CUMULATIVE = tuple(_bridge_npv(i) for i in range(len(BRIDGE_STEPS) + 1))
_LOW, _HIGH = (MIN(C.bridge_from, C.bridge_to), MAX(C.bridge_from, C.bridge_to))
BRIDGE_BAR_LINES: tuple[Line, ...] = (
    Line("bridge_from", "From", "money", "money",
         CHOOSE(Position(), 0, *_CUMULATIVE[:-1], 0), table=BRIDGE_BARS),
    Line("bridge_to", "To", "money", "money",
         CHOOSE(Position(), *_CUMULATIVE, _CUMULATIVE[-1]), table=BRIDGE_BARS),
    Line("bridge_change", "Change", "money", "money", C.bridge_to - C.bridge_from,
         table=BRIDGE_BARS),
    Line("bridge_hidden_up", "Invisible base above 0", "money", "money",
         IF(_LOW > 0, _LOW, 0), table=BRIDGE_BARS),
    Line("bridge_hidden_down", "Invisible base below 0", "money", "money",
         IF(_HIGH < 0, _HIGH, 0), table=BRIDGE_BARS),
    Line("bridge_shown_up", "Bar above 0", "money", "money",
         IF(_LOW > 0, _HIGH - _LOW, MAX(_HIGH, 0)), table=BRIDGE_BARS),
    Line("bridge_shown_down", "Bar below 0", "money", "money",
         IF(_HIGH < 0, _LOW - _HIGH, MIN(_LOW, 0)), table=BRIDGE_BARS),
)



# -- the yearly summary of the live scenario (Returns) -----------------------------------------
def _by_year(line: str) -> Expr:
    return SUMIF(Row("year"), C.year_number, Row(line))


YEARLY_LINES: tuple[Line, ...] = (
    Line("year_number", "Model year", "", "integer", Position(), table=YEAR_TABLE),
    Line("year_revenue", "Revenue", "money", "money", _by_year("revenue"), table=YEAR_TABLE),
    Line("year_ebitda", "EBITDA", "money", "money", _by_year("ebitda"), table=YEAR_TABLE),
    Line("year_margin", "EBITDA margin", "fraction", "fraction",
         nm_if(C.year_revenue <= 0, C.year_ebitda / C.year_revenue), table=YEAR_TABLE,
         missing=NM),
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
    x = InputRef(name or spec.name)
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


#: Outputs the Scenarios sheet shows apart from the others: what buying GPUs instead of the
#: programme would cost (methodology §10.3), never beside the uplift.
BUY_INSTEAD: tuple[str, ...] = ("avoided_capex", "avoided_rent_per_year")


def _out_block(names: Sequence[str]) -> Each:
    return Each(tuple(f"out_{n}_{sc.key}" for n in names for sc in SCENARIOS),
                (len(names), len(SCENARIOS)))


_OUT_BLOCKS = (_out_block([n for n in OUTPUT_NAMES if n not in BUY_INSTEAD]),
               _out_block(BUY_INSTEAD))


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
     COUNT(InputRef("fleet_gpus")).eq(COUNT(InputRef("fleet_online_month")))),
    ("online_in_horizon", "Every cohort comes online within the horizon",
     MAX(Row("c_online")) <= I.horizon_months),
    ("retire_after_online", "No cohort retires before it comes online",
     SUMPRODUCT((Row("c_last") < Row("c_online")) * 1).eq(0)),
    ("fleet_sum", "GPUs in service each month = the sum of the cohorts' GPUs in service",
     _each_scenario(lambda sc: _close(
         SUM(Row(f"gpus_in_service_{sc.key}")),
         SUM(*(Row(f"gpus_cohort_{j + 1}_{sc.key}") for j in range(MAX_COHORTS)))))),
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
    ("debt_repaid", "Debt repaid by the horizon, or when its GPUs are sold",
     _each_scenario(lambda sc: _close(_t("drawdown", sc), _t("principal", sc)))),
    ("ebitda_total", "EBITDA total = revenue − power − opex − rent − programme totals",
     _each_scenario(lambda sc: _close(
         _t("ebitda", sc), _t("revenue", sc) - _t("power", sc) - _t("other_opex", sc)
         - _t("rent", sc) - _t("programme_cost", sc)))),
    ("cash_total", "Σ monthly cash flows = last cumulative cash flow",
     _each_scenario(lambda sc: _close(_t("cash_flow", sc),
                                      _last(f"cumulative_cash_flow_{sc.key}")))),
    ("npv_total", "NPV = Σ cash flows × discount factors",
     _each_scenario(lambda sc: _close(_o("npv", sc), SUMPRODUCT(Row(f"cash_flow_{sc.key}"),
                                                                Row("discount_factor"))))),
    ("statements_balance", "The balance sheet balances and the cash-flow statement sums to 0, "
     "to the cent, every year and scenario",
     _each_scenario(lambda sc: AND(
         MAX(Row(f"st_balance_gap_{sc.key}")) <= K.cent,
         MIN(Row(f"st_balance_gap_{sc.key}")) >= -K.cent,
         MAX(Row(f"st_cash_change_{sc.key}")) <= K.cent,
         MIN(Row(f"st_cash_change_{sc.key}")) >= -K.cent))),
    ("outputs_compute", "Every summary output computes (a number, \"none\" or \"n/m\")",
     AND(*((COUNT(block) + COUNTIF(block, NONE) + COUNTIF(block, NM))
           .eq(ROWS(block) * COLUMNS(block))
           for block in _OUT_BLOCKS))),
)
CROSS_CHECKS: tuple[Line, ...] = tuple(
    Line(f"check_{key}", label, "", "text", IF(condition, "OK", "ERROR"))
    for key, label, condition in _CROSS)
CHECK_NAMES: tuple[str, ...] = tuple(ln.name for ln in INPUT_CHECKS + CROSS_CHECKS)
MASTER_CHECK = _scalar(
    "check_master", "Master check", "", "text",
    IF(COUNTIF(Each(CHECK_NAMES, (len(CHECK_NAMES), 1)), "ERROR").eq(0), "OK", "ERROR"))


_DASHBOARD_NOTE = Text("Money in ").concat(I.currency).concat(
    ". The terminal value is the fleet's resale at the horizon; breakeven utilisation (at "
    "today's price) is on Returns.")
#: Texts the sheets show about the site, in the same language as the model's lines.
TEXT_LINES: tuple[Line, ...] = (
    Line("dashboard_note", "", "", "text",
         IF(I.market_mtok_month1.eq(0),
            _DASHBOARD_NOTE.concat(" " + NO_DEMAND_LIMIT[:1].upper() + NO_DEMAND_LIMIT[1:] + "."),
            _DASHBOARD_NOTE)),
    Line("demand_note", "", "", "text",
         IF(I.market_mtok_month1.eq(0), Text(NO_DEMAND_LIMIT[:1].upper() + NO_DEMAND_LIMIT[1:]),
            Text("")), missing=""),
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
    cut = next(i for i, ln in enumerate(monthly) if ln.meta["line"] == "taxable_profit") + 1
    fiscal = FISCAL_LINES[sc.key]
    return monthly[:cut] + fiscal[:6] + monthly[cut:] + fiscal[6:]


def _irr_lines(search: IrrSearch) -> tuple[Line, ...]:
    return search.grid + search.bracket + search.steps + (search.result,)


# the input and output costs split the cost per Mtok, so they are computed after it
_COMPUTE_ORDER = tuple(sorted(OUTPUTS, key=lambda o: o.name.startswith("cost_per_mtok_")))

#: Every line of the model, in an order in which each needs only those before it.
_MODEL_LINES: tuple[Line, ...] = (
    _lines(CAPACITY) + FLEET + tuple(ln for sc in ALL_SCENARIOS for ln in FLEET_SCENARIO[sc.key])
    + FLEET_SCALARS + TIMELINE_HEADER + (_FISCAL_YEARS,)
    + _lines(FLEET_LINES) + FISCAL_COMMON
    + tuple(ln for sc in ALL_SCENARIOS for ln in _scenario_in_order(sc))
    + tuple(ln for sc in SCENARIOS for ln in STATEMENT_LINES[sc.key])
    + _lines(LIVE_LINES) + TIMELINE_TOTALS
    + tuple(ln for s in IRR_SEARCHES for ln in _irr_lines(s))
    + tuple(o.line_for(sc) for o in _COMPUTE_ORDER if o.name != "warnings" for sc in SCENARIOS)
    + tuple(ln for sc in SCENARIOS for ln in WARNING_LINES[sc.key])
    + tuple(o.line_for(sc) for o in OUTPUTS if o.name == "warnings" for sc in SCENARIOS)
    + tuple(o.line for o in OUTPUTS) + UPLIFT_LINES + BRIDGE_LINES + BRIDGE_BAR_LINES
    + YEARLY_LINES + UTIL_LINES
    + INPUT_CHECKS + CROSS_CHECKS + (MASTER_CHECK,) + TEXT_LINES
)


# -- units in the site's currency (methodology §10.7) -------------------------------------------
def unit_name(unit: str) -> str:
    """The line that spells a money unit in the site's currency: ``money/GPU-h`` →
    ``unit_money_per_gpu_h`` (``USD/GPU-h``); plain ``money`` is the input ``in_currency``."""
    if unit == "money":
        return "in_currency"
    return "unit_" + unit.lower().replace("/", "_per_").replace("-", "_").replace(" ", "_")


#: Every money unit a line, an output or an input is stated in.
MONEY_UNITS: tuple[str, ...] = tuple(sorted(
    u for u in {ln.unit for ln in _MODEL_LINES} | {o.unit for o in OUTPUTS}
    | {i.unit for i in INPUTS} if u.startswith("money")))
# (the currency is only ever joined into a text, so sites of different currencies still share
# a pass of run_many)
UNIT_LINES: tuple[Line, ...] = tuple(
    Line(unit_name(u), u, "", "text", I.currency.concat(u[len("money"):]), meta={"unit": u})
    for u in MONEY_UNITS if u != "money")

#: Every line of the model, in an order in which each needs only those before it.
LINES: tuple[Line, ...] = UNIT_LINES + _MODEL_LINES
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
