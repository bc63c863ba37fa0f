"""The Timeline's lines, month by month (methodology §4.1–§4.4, §10): its header rows, what
every scenario shares (hours, the discount factor, the escalation indices), each
scenario's fleet, debt, efficiency, demand, profit, tax, working capital and cash flows
(:func:`scenario_lines`, declared once for all of them), the live scenario's, and the
totals of column C.
"""

from __future__ import annotations

from ...core.catalogue import MAX_COHORTS
from ..formula import (
    ABS,
    AND,
    CHOOSE,
    DAY,
    EOMONTH,
    IF,
    INDEX,
    MAX,
    MIN,
    ROUNDUP,
    SIGN,
    SUM,
    SUMPRODUCT,
    YEAR,
    At,
    Cell,
    Expr,
    Line,
    Position,
    Row,
    RunningMax,
    RunningSum,
)
from .common import (
    ALL_SCENARIOS,
    BRIDGE_SCENARIOS,
    MONTHS,
    SCENARIOS,
    C,
    I,
    K,
    N,
    Scenario,
    _lines,
    _monthly,
    _s_input,
    _scalar,
)
from .fleet import _in_service, _owed

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
def _ramp_share(months: Expr) -> Expr:
    """min(m, ramp) ÷ ramp of the way from today's value to the target; ramp 0: at once."""
    return IF(months.eq(0), 1, MIN(C.month, months) / months)


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
        # Sign changes as the IRR sees them: months without a flow (below half a cent: a cash
        # flow that is 0 but for rounding) are passed over, so + 0 − is a change and the
        # rounding left in a month that nets to 0 is none.
        line("flow_sign", "Cash flow's sign (0: none to the cent)", "", "integer",
             IF(ABS(S("cash_flow")) < K.cent, 0, SIGN(S("cash_flow"))), month0=True),
        line("flow_month", "Month with a flow of half a cent or more", "", "integer",
             IF(S("flow_sign").ne(0), C.month, 0), month0=True),
        line("last_flow_month", "Last such month so far", "", "integer",
             RunningMax(f"flow_month_{k}"), month0=True),
        line("sign_change", "Cash flow changes sign (1 = yes)", "flag", "flag",
             IF(S("flow_sign") * INDEX(Row(f"flow_sign_{k}"), 1,
                                       Cell(f"last_flow_month_{k}", -1) + 1) < 0, 1, 0),
             total=True, note="against the last month with a flow; more than one change: IRR is "
             "not unique"),
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


def _total(line: Line) -> Line:
    return Line(f"total_{line.name}", f"{line.label}, total", line.unit, line.kind,
                SUM(Row(line.name)), meta={"total_of": line.name})


#: Every Timeline row under the header, in order: the fleet and debt, each scenario, the live one.
TIMELINE_LINES: tuple[Line | str, ...] = (
    FLEET_LINES + tuple(x for sc in ALL_SCENARIOS for x in SCENARIO_LINES[sc.key])
    + LIVE_LINES)
TIMELINE_TOTALS: tuple[Line, ...] = tuple(
    _total(ln) for ln in _lines(TIMELINE_LINES) if ln.total)
