"""The summary outputs (methodology §7), each a function of the scenario: ``out_npv_base`` …
on Scenarios, the live ``out_npv`` on Returns, a key of ``run(...).summary`` and a column
of the portfolio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..formula import (
    AND,
    CHOOSE,
    COUNT,
    IF,
    INDEX,
    ISNUMBER,
    LN,
    MAX,
    MIN,
    NM,
    NONE,
    NOT,
    OR,
    SUM,
    SUMPRODUCT,
    Expr,
    Line,
    Name,
    Row,
    nm_if,
    none_if,
)
from .common import SCENARIOS, I, K, N, Scenario, _last, _o, _s_input, _t
from .warning_rules import WARNING_LINES


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


def _pv(line: str) -> Expr:
    """Σ line × discount factor, month 0 undiscounted (text and blanks count as 0)."""
    return SUMPRODUCT(Row("discount_factor"), Row(line))


def _payback(crossing: str, cumulative: str) -> Expr:
    return IF(_last(cumulative) < 0, NONE,
              IF(COUNT(Row(crossing)).eq(0), 0, MAX(Row(crossing))))


def _outlay_pv(sc: Scenario) -> Expr:
    """PV of CapEx − disposal proceeds + power, opex, rent and programme cost."""
    k = sc.key
    return (_pv(f"capex_{k}") - _pv(f"disposal_proceeds_{k}") + _pv(f"power_{k}")
            + _pv(f"other_opex_{k}") + _pv(f"rent_{k}") + _pv(f"programme_cost_{k}"))


def _breakeven(sc: Scenario, tokens: str, price: str) -> Expr:
    """The constant factor on ``tokens`` × ``price`` (per Mtok) at which the pre-tax NPV is 0:
    the outlay's PV over the PV of that revenue; none when that revenue is 0."""
    revenue_pv = SUMPRODUCT(Row("discount_factor"), Row(f"{tokens}_{sc.key}"),
                            Row(f"{price}_{sc.key}"))
    return none_if(revenue_pv.eq(0), _outlay_pv(sc) / (revenue_pv / K.tokens_per_mtok))


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
           lambda sc: N.slo_attainment, "share of requests whose TTFT meets the objective"),
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
           lambda sc: _t("tokens_sold", sc), "Σ tokens sold, months 1…H"),
    Output("revenue_total", "Revenue", "money", "money", lambda sc: _t("revenue", sc),
           "Σ revenue, months 1…H"),
    Output("ebitda_total", "EBITDA", "money", "money", lambda sc: _t("ebitda", sc),
           "Σ EBITDA, months 1…H: revenue − power, other opex, rent and programme cost"),
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
           lambda sc: _breakeven(sc, "theoretical_tokens", "price"),
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
           lambda sc: _breakeven(sc, "tokens_sold", "price_path"),
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
    Output("warnings", "Warnings", "", "integer",
           lambda sc: SUM(*(Name(w.name) for w in WARNING_LINES[sc.key])),
           "how many warning rules fire (Checks lists them; none turns the master check red)"),
)
OUTPUT_NAMES: tuple[str, ...] = tuple(o.name for o in OUTPUTS)
#: What each output shows where it has no figure: "none" or "n/m" (a ratio without meaning).
OUTPUT_MISSING: dict[str, str] = {o.name: o.missing for o in OUTPUTS}


#: Outputs the Scenarios sheet shows apart from the others: what buying GPUs instead of the
#: programme would cost (methodology §10.3), never beside the uplift.
BUY_INSTEAD: tuple[str, ...] = ("avoided_capex", "avoided_rent_per_year")
