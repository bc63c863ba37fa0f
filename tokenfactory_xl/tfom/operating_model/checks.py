"""The Checks sheet's lines (FAST: a Checks sheet): each input's range, the rules that tie
inputs and lines together, and the master check, which is OK only when every other is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.catalogue import COHORT_SPECS, INPUTS, MAX_COHORTS
from ..formula import (
    ABS,
    AND,
    COLUMNS,
    COUNT,
    COUNTA,
    COUNTIF,
    DAY,
    IF,
    INT,
    ISNUMBER,
    ISTEXT,
    LEN,
    MATCH,
    MAX,
    MIN,
    NM,
    NONE,
    ROWS,
    SUM,
    SUMPRODUCT,
    Const,
    Each,
    Expr,
    InputRef,
    Line,
    ListRef,
    Name,
    Row,
)
from .common import SCENARIOS, I, K, N, Scenario, _last, _o, _scalar, _t
from .outputs import BUY_INSTEAD, OUTPUT_NAMES


# -- Checks ------------------------------------------------------------------------------------
def _close(a: Expr, b: Expr) -> Expr:
    """Two ways of computing a total agree, to the checks' relative tolerance."""
    return ABS(a - b) <= K.check_tolerance * MAX(1, ABS(a))


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
