"""The reference implementation of the TFOM version 2 (tests/reference_v2.py) against the spec.

First the spec's own worked examples (methodology §7, every input at its default, and the debt
example), to the digits the spec prints. Then small cases computed by hand, each comment
giving the arithmetic. The hand cases share one "simple site" in which every rate is 1 or 0
so that a GPU-hour is one million tokens sold at 1 per Mtok:
- theoretical_tps_per_gpu = 10⁶ ÷ 3,600 (one Mtok per GPU-hour), measured_tps = GPUs × that
  (TEF now = 1), TEF target 1 and sell-through 1 with no ramp, availability 1 and a TTFT
  objective so loose that SLO attainment is 1.0 exactly: SLA = 1;
- every list price 1 per Mtok and no batch share: P₀ = 1; no price decline, price_factor 1;
- power 1 kW per GPU at PUE 1 and 0.1 per kWh: 0.1 per GPU-hour; no other opex;
- the timeline starts on 2029-01-01: 2029 and 2030 have 365 days, 8,760 hours; the months
  have 744 (Jan, Mar, May, Jul, Aug, Oct, Dec), 672 (Feb) or 720 hours (Apr, Jun, Sep, Nov).
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests import reference_v2
from tests.production_adapter import production_run, production_scenarios
from tests.reference_v2 import excel_round, monthly_irr, npv

# Every case below runs twice: on the reference, which it pins to the spec and to the hand
# arithmetic in its comments, and on the production model in the reference's shape
# (tests/production_adapter.py), which must give the same figures.
IMPLEMENTATIONS = {
    "reference": (reference_v2.reference_run, reference_v2.reference_scenarios),
    "production": (production_run, production_scenarios),
}
reference_run = reference_v2.reference_run
reference_scenarios = reference_v2.reference_scenarios


@pytest.fixture(autouse=True, params=list(IMPLEMENTATIONS))
def implementation(request, monkeypatch):
    """Run the module's tests on the reference, then on the production model."""
    one, three = IMPLEMENTATIONS[request.param]
    monkeypatch.setitem(globals(), "reference_run", one)
    monkeypatch.setitem(globals(), "reference_scenarios", three)
    return request.param

REL = 1e-9

#: Hours of each month of 2029 (and of 2030, also not a leap year), January first.
HOURS_2029 = [744, 672, 744, 720, 744, 720, 744, 744, 720, 744, 720, 744]


def approx(value: float, rel: float = REL) -> object:
    return pytest.approx(value, rel=rel, abs=1e-9)


#: §10.9 "without the financing of §10.4": no escalation, no working capital (no deposit and a
#: blank tax life are the defaults).
WITHOUT_FINANCING = {"power_escalation_per_year": 0.0, "opex_escalation_per_year": 0.0,
                     "receivable_days": 0.0, "payable_days": 0.0}


def simple_site(**overrides: object) -> dict:
    """The simple site of the module docstring, 10 owned GPUs, 24 months, no tax, and none of
    §10.4's financing (its own tests below add it)."""
    site = {
        **WITHOUT_FINANCING,
        "start_date": dt.date(2029, 1, 1),
        "horizon_months": 24,
        "gpus": 10,
        "ownership": "own",
        "capex_per_gpu": 2_000.0,
        "salvage_per_gpu": 0.0,
        "life_years": 4,
        "theoretical_tps_per_gpu": 1e6 / 3600,
        "measured_tps": 10 * 1e6 / 3600,
        "tef_target": (1.0, 1.0, 1.0),
        "tef_ramp_months": 0,
        "availability": 1.0,
        "ttft_slo_ms": 1e12,
        "sell_through_start": 1.0,
        "sell_through_target": (1.0, 1.0, 1.0),
        "sell_through_ramp_months": 0,
        "price_input_per_mtok": 1.0,
        "price_cached_input_per_mtok": 1.0,
        "price_output_per_mtok": 1.0,
        "batch_share": 0.0,
        "decline_per_quarter": (0.0, 0.0, 0.0),
        "price_factor": (1.0, 1.0, 1.0),
        "power_kw_per_gpu": 1.0,
        "pue": 1.0,
        "electricity_per_kwh": 0.1,
        "opex_per_gpu_hour": 0.0,
        "tax_rate": 0.0,
        "residual_method": "book",  # version 2's exit, as the hand arithmetic below
    }
    site.update(overrides)
    return site


# --------------------------------------------------------------------------------------------
# The spec's worked examples (methodology §7)
# --------------------------------------------------------------------------------------------

#: §7's worked examples as the spec prints them (Base, Optimised, Downside).
SPEC_TABLE = {
    "revenue_total": ("55,365,599.86", "121,915,542.0", "16,140,358.72"),
    "ebitda_total": ("43,967,152.76", "110,517,094.9", "4,741,911.614"),
    "npv": ("-5,313,537.522", "37,555,182.20", "-35,184,224.24"),
    "irr": ("0.009630190512", "0.7171883966", "none"),
    "payback_months": ("54.83429069", "16.27197444", "none"),
    "lifetime_breakeven_tfi": ("0.2335423301", "0.2335423301", "0.5634013361"),
    "economic_life_months": ("72.56438073", "96.30613555", "23"),
}


def assert_prints_as(value: float | None, printed: str) -> None:
    """``value`` agrees with a figure printed by the spec to every digit it prints.

    The tolerance is half a unit of the last printed decimal (about 1e-10 relative for the
    spec's 10 significant digits), so a reading that moves a figure in its 10th digit fails.
    """
    if printed == "none":
        assert value is None
        return
    text = printed.replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    assert value is not None
    assert abs(value - float(text)) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9), (value, printed)


@pytest.fixture(scope="module")
def computed_once() -> dict[tuple[str, str], dict[str, dict]]:
    """The three scenarios of each set of default inputs below, computed once per module and
    implementation: 144 parametrised cases read them. Read them, never change them."""
    return {}


def scenarios_once(computed: dict, implementation: str, name: str,
                   inputs: dict) -> dict[str, dict]:
    """``reference_scenarios(inputs)`` of ``implementation``, computed the first time only."""
    if (implementation, name) not in computed:
        computed[implementation, name] = IMPLEMENTATIONS[implementation][1](inputs)
    return computed[implementation, name]


@pytest.fixture
def defaults_run(implementation, computed_once) -> dict[str, dict]:
    return scenarios_once(computed_once, implementation, "book",
                          {"residual_method": "book", **WITHOUT_FINANCING})


@pytest.mark.parametrize("name", list(SPEC_TABLE))
@pytest.mark.parametrize("k, scenario", list(enumerate(("Base", "Optimised", "Downside"))))
def test_spec_worked_examples(defaults_run: dict, name: str, k: int, scenario: str) -> None:
    """§7's table, every input at its default and the book method (§10.9: version 2's
    figures): each figure to the digits the spec prints."""
    assert_prints_as(defaults_run[scenario][name], SPEC_TABLE[name][k])


#: §10.9's worked examples of version 3 "without the financing of §10.4" (every input at its
#: default, the market method), and those of its table that financing does not move: the
#: terminal value (proceeds at H), the GPU-hour cost (§10.8) and the warnings.
SPEC_V3_TABLE = {
    "npv": ("-2,221,486.077", "39,839,400.64", "-34,198,455.51"),
    "npv_excl_terminal": ("-5,313,537.522", "36,747,349.20", "-35,184,224.24"),
    "terminal_value_pv": ("3,092,051.445", "3,092,051.445", "985,768.7274"),
    "revenue_total": ("55,365,599.86", "121,915,542.0", "16,140,358.72"),
    "gpu_hour_cost": ("1.632415611", "1.632415611", "1.632415611"),
    "warnings": ("2", "1", "5"),
}


@pytest.fixture
def defaults_v3(implementation, computed_once) -> dict[str, dict]:
    return scenarios_once(computed_once, implementation, "v3", dict(WITHOUT_FINANCING))


@pytest.mark.parametrize("name", list(SPEC_V3_TABLE))
@pytest.mark.parametrize("k, scenario", list(enumerate(("Base", "Optimised", "Downside"))))
def test_spec_v3_worked_examples(defaults_v3: dict, name: str, k: int, scenario: str) -> None:
    assert_prints_as(defaults_v3[scenario][name], SPEC_V3_TABLE[name][k])


def test_spec_v3_breakeven_util_at_the_cost_of_capital(defaults_v3: dict) -> None:
    """§10.8: on the default site breakeven_util = 0.1240201794 (Base)."""
    assert_prints_as(defaults_v3["Base"]["breakeven_util"], "0.1240201794")


def test_spec_v3_bridge(implementation) -> None:
    """§10.9 without financing: the uplift of 42,060,886.72 is TEF 38,066,188.80 +
    sell-through 3,994,697.921 + market 0 + programme 0."""
    if implementation == "reference":
        bridge = reference_v2.reference_bridge(dict(WITHOUT_FINANCING))
    else:
        from tokenfactory_xl import make_inputs, run
        bridge = run(make_inputs(dict(WITHOUT_FINANCING))).uplift
    assert_prints_as(bridge["uplift_npv_tef"], "38,066,188.80")
    assert_prints_as(bridge["uplift_npv_sell_through"], "3,994,697.921")
    assert bridge["uplift_npv_market"] == 0
    assert bridge["uplift_npv_programme"] == 0


def test_spec_debt_example() -> None:
    """§7: debt_share 0.5 at 7 % over 36 months (Base); the project figures are unchanged."""
    r = reference_run({"debt_share": 0.5, "debt_rate": 0.07, "debt_tenor_months": 36,
                       "residual_method": "book", **WITHOUT_FINANCING})
    assert_prints_as(r["equity_irr"], "-0.02935883874")
    assert_prints_as(r["min_dscr"], "1.023661502")
    assert_prints_as(r["avg_dscr"], "1.571233299")
    assert_prints_as(r["npv"], "-5,313,537.522")
    assert_prints_as(r["irr"], "0.009630190512")


def test_downside_has_no_irr_although_its_flows_change_sign(defaults_run: dict) -> None:
    """The spec prints "none" for the Downside IRR, yet its flows change sign twice (−CapEx in
    month 0, positive to month 23, negative from month 24 as the price falls below the cash
    cost): "none" there means "no root", not only "no sign change" as §7's irr row says.
    """
    flows = defaults_run["Downside"]["project_cash_flow"]
    assert flows[0] < 0 and flows[23] > 0 and flows[24] < 0
    assert monthly_irr(flows) is None


def test_defaults_derived_once(defaults_run: dict) -> None:
    """§6 derived quantities at the defaults, by hand.

    TEF now = 3,072,000 ÷ (1,024 × 10,000) = 0.30. P₀: input price 0.5 × 0.07 + 0.5 × 0.28
    = 0.175; list price 0.75 × 0.175 + 0.25 × 1.10 = 0.40625; × (1 − 0.2 × 0.5) = 0.365625.
    Equivalent GPUs (Optimised) = 1,024 × 0.65 ÷ 0.30 = 2,218.67; avoided CapEx = (2,218.67
    − 1,024) × 40,000 = 47,786,666.67. gpu_hour_cost (§10.8) with i = 1.1^(1/12) − 1 and
    vᴺ = 1.1^−4 = 0.6830135: 40,000 × i ÷ (1 − vᴺ) ÷ 730 = 1.3784156 a GPU-hour of capital,
    + 1.0 × 1.3 × 0.08 + 0.15 = 1.6324156; breakeven_util = that ÷ (10,000 × 3,600 ×
    0.365625 ÷ 10⁶) = 1.6324156 ÷ 13.1625.
    """
    base, opt = defaults_run["Base"], defaults_run["Optimised"]
    assert base["tef_now"] == approx(0.30)
    assert base["blended_price"] == approx(0.365625)
    assert opt["equivalent_gpus"] == approx(1024 * 0.65 / 0.30)
    assert opt["avoided_capex"] == approx((1024 * 0.65 / 0.30 - 1024) * 40_000)
    assert base["avoided_rent_per_year"] is None
    i = 1.1 ** (1 / 12) - 1
    capital = 40_000 * i / (1 - 1.1 ** -4) / 730
    assert capital == pytest.approx(1.3784156, abs=1e-7)
    hour_cost = capital + 1.0 * 1.3 * 0.08 + 0.15
    assert base["gpu_hour_cost"] == approx(hour_cost)
    assert base["breakeven_util"] == approx(hour_cost / 13.1625)
    # The Downside's price_factor 0.9 lowers the price the GPU-hour must cover.
    assert defaults_run["Downside"]["breakeven_util"] == approx(hour_cost / (13.1625 * 0.9))
    assert base["min_dscr"] is None and base["avg_dscr"] is None
    assert base["equity_irr"] == base["irr"]


def test_slo_attainment_at_defaults() -> None:
    """§1 at the defaults: σ = ln(1,500 ÷ 400) ÷ 2.3263479 = 1.3217558 ÷ 2.3263479 = 0.5681674;
    x = ln(2,000 ÷ 400) ÷ σ = 1.6094379 ÷ 0.5681674 = 2.832683; Φ(x) = 0.997692 (between the
    table's Φ(2.83) = 0.99767 and Φ(2.84) = 0.99774). The spec's table needs z₀.₉₉ to full
    precision: with the rounded 2.326348 its revenue_total would move by 1e-9 relative.
    """
    r = reference_run({})
    assert r["slo_attainment"] == pytest.approx(0.997692, rel=1e-6)
    assert r["sla"] == approx(0.995 * r["slo_attainment"])


# --------------------------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------------------------

def test_simple_site_is_simple() -> None:
    """The simple site: SLA 1, P₀ 1, one Mtok per GPU-hour; January: 10 × 744 = 7,440 Mtok."""
    r = reference_run(simple_site())
    assert r["sla"] == 1.0 and r["blended_price"] == 1.0 and r["tef_now"] == 1.0
    assert r["hours"][1:13] == HOURS_2029
    assert r["theoretical_tokens"][1] == approx(7_440e6)
    assert r["tokens_sold"][1] == approx(7_440e6)
    assert r["revenue"][1] == approx(7_440)
    assert r["power"][1] == approx(744)  # 10 GPUs × 1 kW × 744 h × 0.1


def test_second_cohort_online_in_month_13() -> None:
    """A second cohort online in month 13 (§4.1), with tax and a loss carried forward.

    Cohort 1: 10 GPUs at 12,000, life 1 year (n = 12): CapEx 120,000 in month 0,
    depreciation 10,000 in months 1–12, fully depreciated at H: disposal NBV 0, proceeds 0.
    Cohort "gen2": 20 GPUs online in month 13, 2 Mtok per GPU-hour (theoretical TPS 2 × 10⁶ ÷
    3,600), CapEx 20 × 24,000 = 480,000 paid in month 12, life 2 years (n = 24): depreciation
    20,000 in months 13–24; at H = 24, remaining = 13 + 24 − 1 − 24 = 12 months: NBV =
    480,000 × 12 ÷ 24 = 240,000, proceeds the same (residual_share 1), no gain.
    2029 (months 1–12): 10 GPUs × 8,760 h = 87,600 GPU-h = 87,600 Mtok → revenue 87,600,
    power 8,760, EBITDA 78,840, EBIT 78,840 − 120,000 = −41,160: no tax, loss pool 41,160.
    2030 (months 13–24): tokens 87,600 + 20 × 8,760 × 2 = 438,000 Mtok → revenue 438,000;
    power (10 + 20) × 8,760 × 0.1 = 26,280; EBITDA 411,720; depreciation 240,000; EBIT
    171,720; tax 25 % × (171,720 − 41,160) = 32,640, 2,720 a month; loss pool 0.
    Month 13 (Jan 2030): 30 GPUs in service; theoretical tokens (10 × 1 + 20 × 2) Mtok × 744
    = 37,200 Mtok.
    """
    r = reference_run(
        simple_site(capex_per_gpu=12_000.0, life_years=1, tax_rate=0.25),
        [{"cohort": "gen2", "online_month": 13, "gpus": 20, "capex_per_gpu": 24_000.0,
          "life_years": 2, "theoretical_tps_per_gpu": 2e6 / 3600}])
    assert r["fleet_gpus"] == 30
    assert r["gpus_in_service"][12] == 10 and r["gpus_in_service"][13] == 30
    assert r["gpus_in_service_by_cohort"][1][12:14] == [0, 20]
    assert r["theoretical_tokens"][13] == approx(37_200e6)
    assert r["capex"][0] == approx(120_000) and r["capex"][12] == approx(480_000)
    assert sum(r["capex"]) == approx(600_000)
    assert r["depreciation"][12] == approx(10_000) and r["depreciation"][13] == approx(20_000)
    assert sum(r["depreciation"]) == approx(360_000)
    assert r["disposal_nbv"][24] == approx(240_000)
    assert r["disposal_proceeds"][24] == approx(240_000)
    assert r["disposal_gain"][24] == approx(0)
    assert r["taxable_by_year"] == {2029: approx(-41_160), 2030: approx(171_720)}
    assert r["loss_pool_by_year"] == {2029: approx(41_160), 2030: approx(0)}
    assert r["tax_by_year"] == {2029: approx(0), 2030: approx(32_640)}
    assert r["tax"][13] == approx(2_720) and r["tax"][24] == approx(2_720)
    assert r["revenue_total"] == approx(525_600)
    assert r["ebitda_total"] == approx(78_840 + 411_720)
    # Project cash flow: month 0 −120,000; month 12: December's EBITDA 744 × 9 − 480,000;
    # month 24: December 2030's EBITDA (10 + 40 − 3) × 744 − 2,720 tax + 240,000 proceeds.
    assert r["project_cash_flow"][0] == approx(-120_000)
    assert r["project_cash_flow"][12] == approx(744 * 9 - 480_000)
    assert r["project_cash_flow"][24] == approx(744 * 47 - 2_720 + 240_000)
    # ROI = Σ cash flows ÷ Σ CapEx = (490,560 − 32,640 − 600,000 + 240,000) ÷ 600,000.
    assert r["roi"] == approx(97_920 / 600_000)
    # cost per Mtok = (power 35,040 + depreciation 360,000) ÷ 525,600 Mtok.
    assert r["cost_per_mtok"] == approx(395_040 / 525_600)
    # tokens per MW: 1.5 Mtok per GPU-hour on average (525,600 Mtok ÷ 350,400 GPU-h); one GPU
    # draws 1 kW = 0.001 MW for 3,600 s an hour: 1.5 × 10⁶ ÷ 3.6 tokens/s per MW.
    assert r["tokens_per_mw"] == approx(1.5e6 / 3.6)


def test_second_cohort_sold_below_book_value() -> None:
    """residual_share 0.5: the second cohort (NBV 240,000 at H) sells for 120,000, a loss of
    120,000 in EBIT (not EBITDA). A cohort retired in month 18 of a 24-month life (cohort 1
    here, 10 GPUs at 12,000, life 2) is sold then: remaining 1 + 24 − 1 − 18 = 6 months,
    NBV 120,000 × 6 ÷ 24 = 30,000, proceeds 15,000; it depreciates in months 1–18 only.
    """
    r = reference_run(
        simple_site(capex_per_gpu=12_000.0, life_years=2, residual_share=0.5, retire_month=18),
        [{"cohort": "gen2", "online_month": 13, "gpus": 20, "capex_per_gpu": 24_000.0}])
    assert r["gpus_in_service"][18] == 30 and r["gpus_in_service"][19] == 20
    assert r["disposal_nbv"][18] == approx(30_000)
    assert r["disposal_proceeds"][18] == approx(15_000)
    assert r["disposal_gain"][18] == approx(-15_000)
    assert r["depreciation_by_cohort"][0][18] == approx(5_000)
    assert r["depreciation_by_cohort"][0][19] == 0
    # gen2 inherits life 2 from the site: NBV at H = 480,000 × 12 ÷ 24; sold for half.
    assert r["disposal_nbv"][24] == approx(240_000)
    assert r["disposal_proceeds"][24] == approx(120_000)
    assert r["ebit"][24] == approx(r["ebitda"][24] - 20_000 - 120_000)


def test_contract_and_demand_limited_market() -> None:
    """A contract plus a demand-limited market (§4.2), 12 months of 2029.

    10 GPUs at sell-through 0.5: sellable = 5 Mtok an hour (January 3,720 Mtok). Contract
    1,000 Mtok a month for 6 months at 0.5 per Mtok; market demand 2,000 Mtok in month 1,
    growing 33.1 % a quarter (10 % a month: 2,000 × 1.1^(m − 1)); market price 0.9^((m−1)/3).
    - m = 1 (744 h): sellable 3,720; contract 1,000; demand 2,000 ≤ 2,720 → market sells
      2,000 (demand-limited); revenue 1,000 × 0.5 + 2,000 × 1 = 2,500.
    - m = 4 (720 h): sellable 3,600; demand 2,662 > 3,600 − 1,000 = 2,600 → market sells 2,600
      (capacity-limited) at 0.9: revenue 500 + 2,340 = 2,840.
    - m = 7 (744 h): contract over; demand 2,000 × 1.1⁶ = 3,543.122 ≤ 3,720: revenue
      3,543.122 × 0.81 = 2,869.92882.
    - m = 12 (744 h): demand 5,706.2 > 3,720: sells 3,720 at 0.9^(11/3).
    """
    r = reference_run(simple_site(
        horizon_months=12, sell_through_target=(0.5, 0.5, 0.5), contract_mtok_per_month=1_000.0,
        contract_price_per_mtok=0.5, contract_months=6, market_mtok_month1=2_000.0,
        market_growth_per_quarter=(0.331, 0.331, 0.331), decline_per_quarter=(0.1, 0.1, 0.1)))
    mtok = [x / 1e6 for x in r["market_sold_tokens"]]
    assert r["sellable_tokens"][1] == approx(3_720e6)
    assert r["contract_sold_tokens"][1] == approx(1_000e6)
    assert mtok[1] == approx(2_000) and r["revenue"][1] == approx(2_500)
    assert r["realised_sell_through_monthly"][1] == approx(3_000 / 7_440)
    assert r["market_demand_tokens"][4] == approx(2_662e6)
    assert mtok[4] == approx(2_600) and r["revenue"][4] == approx(2_840)
    assert r["contracted_tokens"][7] == 0
    assert mtok[7] == approx(3_543.122) and r["revenue"][7] == approx(2_869.92882)
    assert mtok[12] == approx(3_720) and r["revenue"][12] == approx(3_720 * 0.9 ** (11 / 3))
    # Sold never exceeds sellable, nor sellable deliverable.
    for m in range(1, 13):
        assert r["tokens_sold"][m] <= r["sellable_tokens"][m] * (1 + 1e-12)
        assert r["sellable_tokens"][m] <= r["deliverable_tokens"][m]


def test_contract_larger_than_capacity_and_no_demand_limit() -> None:
    """A contract of 4,000 Mtok a month above January's sellable 3,720: the contract takes all
    3,720 and the market nothing; from month 7 (no contract, market_mtok_month1 = 0: no
    limit) the market takes all that is sellable, 3,720 in July. Revenue in January 3,720 ×
    0.5 = 1,860; in July 3,720 × 0.81 = 3,013.2.
    """
    r = reference_run(simple_site(
        horizon_months=12, sell_through_target=(0.5, 0.5, 0.5), contract_mtok_per_month=4_000.0,
        contract_price_per_mtok=0.5, contract_months=6, decline_per_quarter=(0.1, 0.1, 0.1)))
    assert r["contract_sold_tokens"][1] == approx(3_720e6)
    assert r["market_sold_tokens"][1] == 0
    assert r["revenue"][1] == approx(1_860)
    assert r["market_sold_tokens"][7] == approx(3_720e6)
    assert r["revenue"][7] == approx(3_013.2)
    assert r["realised_sell_through"] == approx(0.5)


def test_loss_year_then_profit_years() -> None:
    """Tax with losses carried forward (§4.3), three calendar years 2029–2031, 25 % tax.

    A rented fleet (no CapEx, no depreciation): 10 GPUs at 0.5 per GPU-hour rent, no power
    (1 per GPU-hour of revenue less 0.5 rent = 0.5): EBITDA 43,800 a year before the
    programme; the Base scenario's programme costs 100,000 once, in month 1.
    - 2029: taxable 43,800 − 100,000 = −56,200 → tax 0, loss pool 56,200;
    - 2030: taxable 43,800 → tax 25 % × MAX(0, 43,800 − 56,200) = 0, pool 12,400;
    - 2031: taxable 43,800 → tax 25 % × (43,800 − 12,400) = 7,850, 654.17 a month; pool 0.
    Payback: cumulative cash after 2030 is −100,000 + 2 × 43,800 = −12,400; in 2031 a month
    adds 5 × hours − 654.17: Jan +3,065.83 (−9,334.17), Feb +2,705.83 (−6,628.33), Mar
    +3,065.83 (−3,562.50), Apr +2,945.83 (−616.67), May +3,065.83 (+2,449.17): the crossing is
    month k = 29, payback = 28 + 616.67 ÷ 3,065.83. ROI: none (no CapEx).
    """
    r = reference_run(simple_site(
        horizon_months=36, ownership="rent", rent_per_gpu_hour=0.5, electricity_per_kwh=0.0,
        tax_rate=0.25, programme_cost_once=(100_000.0, 0.0, 0.0)))
    assert r["programme_cost"][1] == approx(100_000) and r["programme_cost"][2] == 0
    assert r["taxable_by_year"] == {2029: approx(-56_200), 2030: approx(43_800),
                                    2031: approx(43_800)}
    assert r["loss_pool_by_year"] == {2029: approx(56_200), 2030: approx(12_400),
                                      2031: approx(0)}
    assert r["tax_by_year"] == {2029: approx(0), 2030: approx(0), 2031: approx(7_850)}
    assert r["tax"][25] == approx(7_850 / 12) and r["tax"][24] == 0
    assert r["payback_months"] == approx(28 + (616 + 2 / 3) / (3_720 - 7_850 / 12))
    assert r["roi"] is None
    assert r["capex"] == [0.0] * 37 and r["avoided_capex"] is None
    # The Optimised scenario has no programme cost: 2029 is already a profit year.
    opt = reference_run(simple_site(
        horizon_months=36, ownership="rent", rent_per_gpu_hour=0.5, electricity_per_kwh=0.0,
        tax_rate=0.25, programme_cost_once=(100_000.0, 0.0, 0.0)), scenario="Optimised")
    assert opt["tax_by_year"] == {y: approx(10_950) for y in (2029, 2030, 2031)}


def test_partial_fiscal_years_pay_tax_over_their_own_months() -> None:
    """§4.3: fiscal years are calendar years; a year's tax is paid in equal instalments over
    its months inside the horizon. Six months from 2029-10-01, rented (EBITDA 0.5 a GPU-hour,
    10 GPUs), 25 % tax:
    - 2029 (Oct 744 h, Nov 720 h, Dec 744 h): EBIT 5 × 2,208 = 11,040, tax 2,760: 920 a month;
    - 2030 (Jan 744 h, Feb 672 h, Mar 744 h): EBIT 5 × 2,160 = 10,800, tax 2,700: 900 a month.
    """
    r = reference_run(simple_site(start_date=dt.date(2029, 10, 1), horizon_months=6,
                                  ownership="rent", rent_per_gpu_hour=0.5,
                                  electricity_per_kwh=0.0, tax_rate=0.25))
    assert r["fiscal_year"] == [None, 2029, 2029, 2029, 2030, 2030, 2030]
    assert r["tax_by_year"] == {2029: approx(2_760), 2030: approx(2_700)}
    assert r["tax"] == [0.0, approx(920), approx(920), approx(920), approx(900), approx(900),
                        approx(900)]


def test_fully_depreciated_cohort_sells_for_its_salvage() -> None:
    """§4.1: 10 GPUs at 2,000 with salvage 500, life 1 year: depreciation 10 × 1,500 ÷ 12 =
    1,250 in months 1–12; at H = 24 nothing is left to depreciate: NBV = proceeds = 10 × 500
    = 5,000, no gain, whatever the residual_share (0.5 here applies above salvage only).
    """
    r = reference_run(simple_site(salvage_per_gpu=500.0, life_years=1, residual_share=0.5))
    assert r["depreciation"][1] == approx(1_250) and r["depreciation"][13] == 0
    assert r["disposal_nbv"][24] == approx(5_000)
    assert r["disposal_proceeds"][24] == approx(5_000)
    assert r["disposal_gain"][24] == 0


def test_npv_month_zero_undiscounted_monthly_compounding() -> None:
    """§4.3: −100 now and 110 in month 12 at 10 % a year: 110 ÷ (1.1^(1/12))^12 = 100, NPV 0;
    at 0 % the NPV is the plain sum, 10.
    """
    flows = [-100.0] + [0.0] * 11 + [110.0]
    assert npv(flows, 0.10) == pytest.approx(0.0, abs=1e-12)
    assert npv(flows, 0.0) == approx(10.0)


def test_debt_with_dscr_and_refinancing_at_h() -> None:
    """Debt at 0 % over 36 months on a 24-month horizon (§4.4).

    10 GPUs at 12,000 (CapEx 120,000 in month 0), life 1 year, tax 25 %. Debt 50 %: 60,000
    drawn in month 0, repaid 60,000 ÷ 36 = 1,666.67 a month from month 1; after month 24's
    payment 12 × 1,666.67 = 20,000 is still owed and repaid at H (not in DSCR).
    2029: EBITDA 78,840 (87,600 GPU-h at 0.9), depreciation 120,000, EBIT −41,160, no
    interest: no tax, pool 41,160; CFADS 78,840, debt service 20,000 → DSCR 3.942.
    2030: EBIT 78,840, tax 25 % × (78,840 − 41,160) = 9,420; CFADS 69,420 → DSCR 3.471.
    min_dscr 3.471; avg_dscr (78,840 + 69,420) ÷ 40,000 = 3.7065.
    Equity cash flow: month 0 −120,000 + 60,000 = −60,000; month 24: December's EBITDA
    744 × 9 − 785 tax − 1,666.67 − 20,000.
    """
    r = reference_run(simple_site(capex_per_gpu=12_000.0, life_years=1, tax_rate=0.25,
                                  debt_share=0.5, debt_rate=0.0, debt_tenor_months=36))
    assert r["drawdown"][0] == approx(60_000)
    assert r["scheduled_debt_service"][1] == approx(60_000 / 36)
    assert r["scheduled_debt_service"][24] == approx(60_000 / 36)
    assert r["repayment_at_h"][24] == approx(20_000)
    assert r["debt_balance"][23] == approx(20_000 + 60_000 / 36) and r["debt_balance"][24] == 0
    assert r["dscr_by_year"] == {2029: approx(3.942), 2030: approx(3.471)}
    assert r["min_dscr"] == approx(3.471)
    assert r["avg_dscr"] == approx(3.7065)
    assert r["equity_cash_flow"][0] == approx(-60_000)
    assert r["equity_cash_flow"][24] == approx(744 * 9 - 9_420 / 12 - 60_000 / 36 - 20_000)
    assert sum(r["equity_cash_flow"]) == approx(sum(r["project_cash_flow"]))


def test_debt_interest_is_deductible() -> None:
    """Debt at 12 % a year (1 % a month) over 12 months (§4.4), 24-month horizon.

    D = 60,000 in month 0; payment = 60,000 × 0.01 ÷ (1 − 1.01⁻¹²) = 5,330.9273 in months
    1–12; interest month 1 = 600, principal 4,730.9273; total interest 12 × payment − 60,000
    = 3,971.1278. Life 2 years: depreciation 60,000 a year. Levered taxable 2029 = 78,840 −
    60,000 − 3,971.1278 = 14,868.8722, tax 3,717.2180 (unlevered: 4,710); CFADS 75,122.7820,
    debt service 63,971.1278: the only year with debt service, DSCR 1.1743232.
    """
    r = reference_run(simple_site(capex_per_gpu=12_000.0, life_years=2, tax_rate=0.25,
                                  debt_share=0.5, debt_rate=0.12, debt_tenor_months=12))
    payment = 600 / (1 - 1.01 ** -12)
    assert payment == pytest.approx(5_330.9273, rel=1e-8)
    assert r["interest"][1] == approx(600) and r["principal"][1] == approx(payment - 600)
    assert sum(r["interest"]) == approx(12 * payment - 60_000)
    assert r["debt_balance"][12] == 0 and r["repayment_at_h"][24] == 0
    assert r["levered_tax_by_year"][2029] == approx(0.25 * (18_840 - (12 * payment - 60_000)))
    assert r["tax_by_year"][2029] == approx(4_710)
    assert r["levered_tax_by_year"][2029] == pytest.approx(3_717.2180, abs=5e-5)
    assert r["cfads"][1] == approx(744 * 9 - r["levered_tax_by_year"][2029] / 12)
    dscr = (78_840 - 0.25 * (18_840 - (12 * payment - 60_000))) / (12 * payment)
    assert dscr == pytest.approx(1.1743232, rel=1e-7)
    assert r["min_dscr"] == approx(dscr) and r["avg_dscr"] == approx(dscr)
    assert list(r["dscr_by_year"]) == [2029]


def test_payback_that_crosses_twice() -> None:
    """Payback is the last crossing (§4.3), not the first. No tax.

    Cohort 1: 10 GPUs at 2,000 (CapEx 20,000 in month 0), EBITDA 0.9 per GPU-hour:
    cumulative cash −20,000, Jan +6,696 (−13,304), Feb +6,048 (−7,256), Mar +6,696 (−560),
    Apr +6,480 (+5,920: a first crossing, at 3 + 560 ÷ 6,480 = 3.09 months), … Nov
    (+52,144). Cohort 2 (10 GPUs at 8,000, online in month 13) costs 80,000 in month 12:
    Dec 6,696 − 80,000 → −21,160, below zero again. 2030 with 20 GPUs: Jan +13,392
    (−7,768), Feb +12,096 (+4,328): the last crossing, k = 14, payback = 13 + 7,768 ÷ 12,096
    = 13.6422 months; cumulative cash stays positive to H.
    """
    r = reference_run(simple_site(),
                      [{"cohort": "2", "online_month": 13, "gpus": 10, "capex_per_gpu": 8_000.0}])
    cum, total = [], 0.0
    for flow in r["project_cash_flow"]:
        total += flow
        cum.append(total)
    assert cum[3] == approx(-560) and cum[4] == approx(5_920)
    assert cum[12] == approx(-21_160) and cum[13] == approx(-7_768) and cum[14] == approx(4_328)
    assert r["payback_months"] == approx(13 + 7_768 / 12_096)


def test_payback_never_negative_and_never_recovered() -> None:
    """Payback 0 when the cumulative cash is never negative (a rented fleet with positive
    EBITDA from month 1); none when it ends below zero (CapEx 1,000,000 that 24 months of
    about 6,500 cannot repay); the discounted payback follows the same rule.
    """
    rented = reference_run(simple_site(ownership="rent", rent_per_gpu_hour=0.5))
    assert rented["payback_months"] == 0.0 and rented["discounted_payback_months"] == 0.0
    sunk = reference_run(simple_site(capex_per_gpu=100_000.0, life_years=10, residual_share=0))
    assert sunk["payback_months"] is None and sunk["discounted_payback_months"] is None
    assert sunk["irr"] is not None  # flows change sign: the IRR exists, very negative
    assert sunk["irr"] < -0.5


def test_rented_fleet_avoided_rent() -> None:
    """A rented fleet's avoided rent (§7), the defaults' TEF 0.30 → 0.65 (Optimised).

    64 rented GPUs at 2.00 per GPU-hour, TEF now = 192,000 ÷ (64 × 10,000) = 0.30:
    equivalent GPUs 64 × 0.65 ÷ 0.30 = 138.67; avoided rent (138.67 − 64) × 2.00 × 8,760 =
    1,308,160 a year; no avoided CapEx (none: nothing is owned). In the Base scenario
    (target 0.30) nothing is avoided.
    """
    site = {"gpus": 64, "ownership": "rent", "measured_tps": 192_000.0}
    opt = reference_run(site, scenario="Optimised")
    assert opt["equivalent_gpus"] == approx(64 * 0.65 / 0.30)
    assert opt["avoided_rent_per_year"] == approx(1_308_160)
    assert opt["avoided_capex"] is None
    assert opt["capex"] == [0.0] * 61 and sum(opt["depreciation"]) == 0
    # gpu_hour_cost of a rented cohort 1: rent 2.00 + power 1.3 × 0.08 + opex 0.15.
    assert opt["gpu_hour_cost"] == approx(2.254)
    assert reference_run(site)["avoided_rent_per_year"] == approx(0)


def test_mixed_fleet_avoided_capex_and_rent() -> None:
    """§10.3: an owned cohort 1 (64 GPUs at 40,000) and a rented cohort of 32 GPUs twice as
    fast (20,000 tokens/s): the fleet is 64 + 32 × 2 = 128 cohort-1 GPUs; Optimised needs
    128 × 0.65 ÷ 0.30 = 277.33, 149.33 more, bought at cohort 1's 40,000: 5,973,333.33.
    Cohort 1 is owned, so there is no avoided rent; with cohort 1 rented at 3.00, the same
    GPUs × 3.00 × 8,760 a year and no avoided CapEx.
    """
    rented = [{"cohort": "rented", "online_month": 1, "gpus": 32, "ownership": "rent",
               "rent_per_gpu_hour": 3.0, "theoretical_tps_per_gpu": 20_000.0}]
    r = reference_run({"gpus": 64, "measured_tps": 192_000.0}, rented, scenario="Optimised")
    assert r["fleet_gpus"] == 96
    assert r["equivalent_gpus"] == approx(128 * 0.65 / 0.30)
    assert r["avoided_capex"] == approx((128 * 0.65 / 0.30 - 128) * 40_000)
    assert r["avoided_rent_per_year"] is None
    r = reference_run({"gpus": 64, "measured_tps": 192_000.0, "ownership": "rent",
                       "rent_per_gpu_hour": 3.0}, rented, scenario="Optimised")
    assert r["avoided_capex"] is None
    assert r["avoided_rent_per_year"] == approx((128 * 0.65 / 0.30 - 128) * 3.0 * 8760)


def test_cohort_inherits_site_values_but_not_retire_month() -> None:
    """§4.1/§6: a cohort row's missing columns take the site's values, except retire_month.

    The site (cohort 1) retires in month 6; cohort 2 (online in month 3, no columns but gpus)
    runs to H = 12 with the site's 3 Mtok per GPU-hour and 1.5 kW, and its life of 4 years
    where the row's cell is blank (None): 5 × 2,000 ÷ 48 a month.
    """
    r = reference_run(simple_site(horizon_months=12, retire_month=6, power_kw_per_gpu=1.5,
                                  theoretical_tps_per_gpu=3e6 / 3600, measured_tps=30e6 / 3600),
                      [{"site_name": "Example site", "cohort": "b", "online_month": 3,
                        "gpus": 5, "life_years": None}])
    assert r["gpus_in_service_by_cohort"][0][6:8] == [10, 0]
    assert r["gpus_in_service_by_cohort"][1][2:4] == [0, 5]
    assert r["gpus_in_service_by_cohort"][1][12] == 5
    assert r["theoretical_tokens"][12] == approx(5 * 3 * 744 * 1e6)
    assert r["power"][12] == approx(5 * 1.5 * 744 * 0.1)
    assert r["capex"][2] == approx(5 * 2_000)
    assert r["depreciation_by_cohort"][1][3] == approx(10_000 / 48)


def test_depreciation_months_round_half_up() -> None:
    """n_c = ROUND(12 × life): 2.125 years → 25.5 → 26 months (Excel rounds halves up)."""
    assert excel_round(12 * 2.125) == 26
    assert excel_round(12 * 1.04) == 12
    r = reference_run(simple_site(horizon_months=30, life_years=2.125))
    assert r["depreciation"][26] == approx(20_000 / 26) and r["depreciation"][27] == 0


@pytest.mark.parametrize("cohorts, message", [
    ([{"cohort": "x", "online_month": 25, "gpus": 1}], "online_month"),
    ([{"cohort": "x", "online_month": 5, "gpus": 1, "retire_month": 4}], "retire_month"),
    ([{"cohort": "x", "online_month": 2, "gpus": 1},
      {"cohort": "x", "online_month": 3, "gpus": 1}], "duplicate"),
])
def test_cohort_errors(cohorts: list, message: str) -> None:
    """§4.1/§6: an online_month past H, a retire_month before online_month, a duplicate name."""
    with pytest.raises(ValueError, match=message):
        reference_run(simple_site(), cohorts)


@pytest.mark.parametrize("flows, expected", [
    ([-100.0, 110.0], 0.10),                 # 110 ÷ 1.1 = 100
    ([-100.0, 90.0], -0.10),                 # a negative root
    ([-100.0, 230.0, -132.0], 0.10),         # roots 10 % and 20 %: the one nearest zero
    ([100.0, -230.0, 132.0], 0.10),          # the same, signs reversed
    ([-100.0, 0.0, 121.0], 0.10),            # 121 ÷ 1.1² = 100
])
def test_monthly_irr_root_nearest_zero(flows: list[float], expected: float) -> None:
    """§4.3: the monthly IRR, the root nearest zero where there are several.

    −100 + 230 ÷ x − 132 ÷ x² = 0 ⇔ 100x² − 230x + 132 = 0 ⇔ x = (230 ± 10) ÷ 200 = 1.1 or 1.2.
    """
    assert monthly_irr(flows) == pytest.approx(expected, rel=1e-12)


def test_irr_none() -> None:
    """No sign change, or a sign change whose NPV never reaches zero: no IRR.

    [−100, 50, −10]: NPV = −100 + 50x − 10x² with x = 1 ÷ (1 + r) > 0 has discriminant
    2,500 − 4,000 < 0: never zero.
    """
    assert monthly_irr([100.0, 10.0]) is None
    assert monthly_irr([-100.0, 50.0, -10.0]) is None



def test_prefill_and_decode_split_the_cost_per_mtok() -> None:
    """§2/§7: T_p = 20,000 and T_d = 2,000 tokens/s with 25 % output tokens blend to
    T = 1 ÷ (0.75 ÷ 20,000 + 0.25 ÷ 2,000) = 1 ÷ 0.0001625 = 6,153.846 tokens/s, so TEF now =
    3,072,000 ÷ (1,024 × 6,153.846) = 0.4875. Input tokens cost T ÷ T_p = 0.3077 of the mean,
    output tokens T ÷ T_d = 3.077 of it: ten times the input cost, token-weighted mean 1.
    """
    r = reference_run({"prefill_tps_per_gpu": 20_000.0, "decode_tps_per_gpu": 2_000.0})
    assert r["tef_now"] == approx(0.4875)
    assert r["theoretical_tokens"][1] == approx(1024 / 0.0001625 * 3600 * 744)
    assert r["cost_per_mtok_input"] == approx(r["cost_per_mtok"] / 0.0001625 / 20_000)
    assert r["cost_per_mtok_output"] == approx(10 * r["cost_per_mtok_input"])
    assert 0.75 * r["cost_per_mtok_input"] + 0.25 * r["cost_per_mtok_output"] == approx(
        r["cost_per_mtok"])
    assert reference_run({})["cost_per_mtok_input"] is None


#: A site using every version-2 rule at once: three cohorts (one rented, one retired early
#: and sold below book), a contract, a demand-limited market, a programme cost, debt.
RICH_SITE = {
    "horizon_months": 48, "start_date": dt.date(2027, 7, 1), "gpus": 256, "retire_month": 40,
    "measured_tps": 768_000.0, "salvage_per_gpu": 4_000.0, "residual_share": 0.6,
    "life_years": 3.5, "market_mtok_month1": 2_000_000.0, "contract_mtok_per_month": 200_000.0,
    "contract_months": 18, "contract_price_per_mtok": 0.3, "fixed_opex_per_month": 50_000.0,
    "programme_cost_once": (0.0, 500_000.0, 0.0), "programme_fee_per_month": (0.0, 20_000.0, 0.0),
    "debt_share": 0.6, "debt_rate": 0.09, "debt_tenor_months": 60,
}
RICH_COHORTS = [
    {"cohort": "B200", "online_month": 7, "gpus": 512, "capex_per_gpu": 55_000.0,
     "theoretical_tps_per_gpu": 25_000.0, "power_kw_per_gpu": 1.4, "life_years": 5},
    {"cohort": "rented", "online_month": 13, "gpus": 128, "ownership": "rent",
     "rent_per_gpu_hour": 2.5, "retire_month": 36},
]


@pytest.mark.parametrize("scenario", ["Base", "Optimised", "Downside"])
def test_rich_site_invariants(scenario: str) -> None:
    """The checks §4 asks of every model, on a site that uses every rule: cohort GPUs sum to
    the fleet in service; sold ≤ sellable ≤ deliverable; the loss pool is never negative; the
    debt is repaid by H; book value is conserved (CapEx = depreciation + NBV at disposal);
    equity cash − project cash = drawdown − interest − principal + (unlevered − levered tax).
    """
    r = reference_run(RICH_SITE, RICH_COHORTS, scenario)
    for m in r["months"]:
        assert sum(c[m] for c in r["gpus_in_service_by_cohort"]) == r["gpus_in_service"][m]
        assert r["tokens_sold"][m] <= r["sellable_tokens"][m] * (1 + 1e-12)
        assert r["sellable_tokens"][m] <= r["deliverable_tokens"][m] * (1 + 1e-12)
        gap = (r["drawdown"][m] - r["interest"][m] - r["principal"][m]
               + r["tax"][m] - r["levered_tax"][m])
        assert r["equity_cash_flow"][m] - r["project_cash_flow"][m] == approx(gap, rel=1e-9)
    assert min(r["loss_pool_by_year"].values()) >= 0
    assert r["debt_balance"][-1] == 0 and r["repayment_at_h"][-1] > 0
    assert sum(r["drawdown"]) == approx(sum(r["principal"]))
    assert sum(r["capex"]) == approx(sum(r["depreciation"]) + sum(r["disposal_nbv"]))
    # Retired cohort 1 (month 40) and the rented cohort (month 36) leave the fleet.
    assert r["gpus_in_service"][40] == 256 + 512 and r["gpus_in_service"][41] == 512
    assert r["rent"][36] > 0 and r["rent"][37] == 0
    # The demand limit binds somewhere and the contract is served in full while it runs.
    assert any(r["market_sold_tokens"][m] == r["market_demand_tokens"][m] for m in r["months"][1:])
    assert r["contract_sold_tokens"][18] == approx(2e11) and r["contracted_tokens"][19] == 0
    # avg_dscr is the debt-service-weighted mean of the yearly DSCRs: never below the lowest.
    assert r["min_dscr"] is not None and r["min_dscr"] <= r["avg_dscr"] + 1e-12


def test_scenarios_share_the_lines_no_s_input_touches() -> None:
    """§4.5: without a shutdown and with the book method, hours, fleet, CapEx, depreciation,
    power, opex, rent and debt are equal in the three scenarios; the demand lines differ.
    (§10.1: the market method's proceeds follow each scenario's resale decline.)
    """
    runs = reference_scenarios({**RICH_SITE, "residual_method": "book"}, RICH_COHORTS)
    shared = ("hours", "gpus_in_service", "theoretical_tokens", "capex", "depreciation",
              "disposal_proceeds", "power", "other_opex", "rent", "drawdown", "interest",
              "principal", "scheduled_debt_service")
    for name in shared:
        assert runs["Base"][name] == runs["Optimised"][name] == runs["Downside"][name], name
    assert runs["Base"]["tokens_sold"] != runs["Optimised"]["tokens_sold"]
    assert runs["Optimised"]["programme_cost"][1] == approx(520_000)


# --------------------------------------------------------------------------------------------
# Version 3: shutdown per scenario, loans tied to their GPUs, the exit at a market value (§10)
# --------------------------------------------------------------------------------------------

def test_shutdown_prepays_the_loan_and_dscr_stops_with_the_gpus() -> None:
    """§10.2: 10 GPUs at 12,000, half borrowed at 0 % over 36 months (1,666.67 a month), shut
    down in month 18 (June 2030) of 24; book exit, fully depreciated after 12 months: no
    proceeds. After month 18's payment 60,000 − 18 × 1,666.67 = 30,000 is still owed: prepaid
    in month 18, not scheduled debt service. DSCR 2029: 78,840 ÷ 20,000 = 3.942; 2030 over its
    six months held: EBITDA (744 + 672 + 744 + 720 + 744 + 720) × 10 × 0.9 = 39,096 less the
    fixed opex 6 × 100, ÷ 10,000 = 3.8496. The fixed opex stops after month 18."""
    r = reference_run(simple_site(capex_per_gpu=12_000.0, life_years=1, debt_share=0.5,
                                  debt_rate=0.0, debt_tenor_months=36, fixed_opex_per_month=100.0,
                                  shutdown_month=(18, 18, 18)))
    payment = 60_000 / 36
    assert r["scheduled_debt_service"][18] == approx(payment)
    assert r["scheduled_debt_service"][19:] == [0.0] * 6
    assert r["prepayment"][18] == approx(30_000)
    assert r["repayment_at_h"][24] == 0
    assert r["debt_balance"][17] == approx(30_000 + payment) and r["debt_balance"][18] == 0
    assert sum(r["principal"]) == approx(60_000)
    assert r["gpus_in_service"][18] == 10 and r["gpus_in_service"][19] == 0
    assert r["other_opex"][18] == approx(100) and r["other_opex"][19] == 0
    assert r["dscr_by_year"] == {2029: approx(78_840 / 20_000 - 1_200 / 20_000),
                                 2030: approx((39_096 - 600) / 10_000)}
    assert r["min_dscr"] == approx(3.8496)
    assert r["equity_cash_flow"][18] == approx(720 * 9 - 100 - payment - 30_000)
    assert r["terminal_value_pv"] == 0  # nothing is held at H


def test_market_exit_is_each_scenarios_own() -> None:
    """§10.1: shut down in month 18, the GPUs fetch 12,000 × (1 − r_s)^(18 ÷ 3): Base and
    Optimised (r = 0.10) 12,000 × 0.9⁶ = 6,377.29, Downside (0.15) 12,000 × 0.85⁶ = 4,525.79;
    the book value is 0 (depreciated over 12 months), so all of it is a gain, in EBIT."""
    runs = reference_scenarios(simple_site(capex_per_gpu=12_000.0, life_years=1,
                                           residual_method="market",
                                           shutdown_month=(18, 18, 18)))
    assert runs["Base"]["disposal_proceeds"][18] == approx(10 * 12_000 * 0.9 ** 6)
    assert runs["Downside"]["disposal_proceeds"][18] == approx(10 * 12_000 * 0.85 ** 6)
    assert runs["Downside"]["disposal_gain"][18] == approx(10 * 12_000 * 0.85 ** 6)
    assert runs["Base"]["ebit"][18] == approx(720 * 9 + 10 * 12_000 * 0.9 ** 6)
    # held to H = 24 instead: the proceeds at H are the terminal value, discounted as the NPV
    held = reference_scenarios(simple_site(capex_per_gpu=12_000.0, life_years=1,
                                           residual_method="market", discount_rate=0.1))
    for name, decline in (("Base", 0.10), ("Downside", 0.15)):
        proceeds = 10 * 12_000 * (1 - decline) ** 8
        assert held[name]["terminal_value_pv"] == approx(proceeds / 1.1 ** 2)
        assert held[name]["npv_excl_terminal"] == approx(held[name]["npv"] - proceeds / 1.1 ** 2)
    assert held["Downside"]["terminal_value_pv"] < held["Base"]["terminal_value_pv"]


def test_a_cohort_due_after_the_shutdown_is_never_bought() -> None:
    """§10.2: cohort 2 (5 GPUs, online in month 20) with the fleet shut down in month 18: no
    CapEx in month 19, no GPU of it ever in service; the site's cohort runs months 1–18."""
    r = reference_run(simple_site(shutdown_month=(18, 18, 18)),
                      [{"cohort": "late", "online_month": 20, "gpus": 5}])
    assert r["capex"][19] == 0 and sum(r["capex"]) == approx(10 * 2_000)
    assert r["gpus_in_service"][20] == 0 and r["gpus_in_service"][18] == 10


def test_warnings_and_mirr_by_hand() -> None:
    """§10.5: the simple site earns 0.9 a GPU-hour on 2,000 a GPU, and at H its GPUs are sold
    at their book value, 20,000 × 24 ÷ 48 = 10,000: no demand limit (market_mtok_month1 0) is
    one warning; its flows change sign once. MIRR at a discount rate of 0: (Σ inflows ÷
    −Σ outflows)^(1 ÷ 24) − 1 a month, shown yearly."""
    r = reference_run(simple_site(discount_rate=0.0))
    assert r["warnings_fired"] == ["no_demand_limit"]
    inflows = 9 * (8_760 + 8_760) + 10_000
    monthly = (inflows / 20_000) ** (1 / 24) - 1
    assert r["mirr"] == approx((1 + monthly) ** 12 - 1)


# --------------------------------------------------------------------------------------------
# §10.4: escalation, working capital, CapEx terms, tax depreciation, funding (§10.9's figures)
# --------------------------------------------------------------------------------------------

#: §10.9's table with every input at its default (escalation 0.02, receivable and payable days
#: 30), as the spec prints it.
SPEC_V3_FINANCED = {
    "ebitda_total": ("43,393,309.03", "109,943,251.1", "4,168,067.883"),
    "npv": ("-2,910,841.000", "38,804,238.20", "-34,658,966.42"),
    "npv_excl_terminal": ("-6,002,892.445", "35,712,186.76", "-35,644,735.15"),
    "terminal_value_pv": ("3,092,051.445", "3,092,051.445", "985,768.7274"),
    "irr": ("0.05905447208", "0.6559833718", "-0.8341535195"),
    "mirr": ("0.08393775394", "0.2554325856", "-0.1846220623"),
    "payback_months": ("59.01312176", "17.45507800", "none"),
    "lifetime_breakeven_tfi": ("0.2210473693", "0.2210473693", "0.5569967570"),
    "tfi_headroom": ("0.01720148688", "0.3274213517", "-0.3783101149"),
    "peak_funding": ("41,051,141.27", "41,441,948.73", "40,960,000.00"),
    "warnings": ("2", "1", "5"),
}


@pytest.fixture
def defaults_financed(implementation, computed_once) -> dict[str, dict]:
    return scenarios_once(computed_once, implementation, "financed", {})


@pytest.mark.parametrize("name", list(SPEC_V3_FINANCED))
@pytest.mark.parametrize("k, scenario", list(enumerate(("Base", "Optimised", "Downside"))))
def test_spec_v3_financed_worked_examples(defaults_financed: dict, name: str, k: int,
                                         scenario: str) -> None:
    assert_prints_as(defaults_financed[scenario][name], SPEC_V3_FINANCED[name][k])


def test_spec_v3_financed_debt_and_shutdown_examples() -> None:
    """§10.9: the debt example (Base) and a Downside shutdown in month 24, every other input at
    its default."""
    r = reference_run({"debt_share": 0.5, "debt_rate": 0.07, "debt_tenor_months": 36})
    assert_prints_as(r["equity_irr"], "0.06099666956")
    assert_prints_as(r["min_dscr"], "1.055894456")
    assert_prints_as(r["avg_dscr"], "1.542342773")
    assert r["dscr_breaches"] == 1
    assert_prints_as(r["peak_funding"], "21,177,832.45")
    d = reference_run({"shutdown_month": (None, None, 24)}, scenario="Downside")
    assert_prints_as(d["npv"], "-22,499,327.34")
    assert_prints_as(d["irr"], "-0.3639751595")
    assert_prints_as(d["tax_losses_unused"], "19,982,740.76")


def test_escalation_compounds_monthly_from_month_1() -> None:
    """Power at 21 % a year is 1.21 times month 1's price in month 13; opex at 44 % (per GPU-hour
    and fixed alike) 1.44 times: January 2030 has 744 hours, so power = 10 GPUs × 1 kW × 744 h ×
    0.1 × 1.21 = 900.24 and other opex = (10 × 0.5 × 744 + 100) × 1.44 = 5,500.8."""
    r = reference_run(simple_site(power_escalation_per_year=0.21, opex_escalation_per_year=0.44,
                                  opex_per_gpu_hour=0.5, fixed_opex_per_month=100.0))
    assert r["power"][1] == approx(744.0) and r["other_opex"][1] == approx(3_820.0)
    assert r["power"][13] == approx(900.24)
    assert r["other_opex"][13] == approx(5_500.8)
    assert r["rent"][13] == 0  # rent is a contract price (none here: owned)


def test_working_capital_is_held_then_released_at_h() -> None:
    """10 GPUs sell 1 Mtok an hour each at 1 per Mtok: revenue 10 × hours, power 1 × hours.
    With 31 receivable days and 15.5 payable days, every month holds receivables of
    10 × 24 × 31 = 7,440 and payables of 24 × 15.5 = 372, whatever its length:
    working capital 7,068 from month 1. Month 1's cash flow is EBITDA 6,696 − 7,068 = −372;
    February's is its EBITDA 6,048 (no change); month 24 (H) adds the 7,068 back, with the
    book value 10,000 of GPUs half depreciated."""
    r = reference_run(simple_site(receivable_days=31.0, payable_days=15.5))
    cf = r["project_cash_flow"]
    assert cf[0] == approx(-20_000.0)
    assert cf[1] == approx(6_696 - 7_068)
    assert cf[2] == approx(6_048.0)
    assert cf[24] == approx(9 * 744 + 10_000 + 7_068)
    assert sum(cf) == approx(-20_000 + 9 * 17_520 + 10_000)  # the working capital nets out
    assert r["cfads"][24] == approx(9 * 744 + 7_068)


def test_deposit_paid_ahead_loan_on_the_whole_capex_and_tax_life() -> None:
    """A second cohort of 10 GPUs online in month 7 pays a quarter of its 20,000 three months
    ahead of the month before online (month 3), the rest in month 6, when the loan is drawn on
    half of the whole 20,000. Cohort 1 (online in month 1) has its deposit at month 0 as well.
    A tax life of 1 year writes cohort 1 off for tax in 2029 (20,000) while the books take
    5,000 a year; at H its GPUs sell for their book value 10,000, a tax gain of 10,000."""
    r = reference_run(simple_site(capex_deposit_share=0.25, capex_lead_months=3,
                                  debt_share=0.5, debt_rate=0.0, debt_tenor_months=24,
                                  tax_rate=0.5, tax_life_years=1.0))
    assert r["capex"][0] == approx(20_000.0)
    assert r["drawdown"][0] == approx(10_000.0)
    assert r["taxable_by_year"][2029] == approx(9 * 8_760 - 20_000)
    assert r["taxable_by_year"][2030] == approx(9 * 8_760 + 10_000)
    assert r["tax_by_year"][2029] == approx(0.5 * (9 * 8_760 - 20_000))
    assert sum(r["ebit"][1:13]) == approx(9 * 8_760 - 5_000)  # the books keep 4 years
    two = reference_run(simple_site(capex_deposit_share=0.25, capex_lead_months=3,
                                    debt_share=0.5, debt_rate=0.0, debt_tenor_months=24),
                        [{"cohort": "2", "online_month": 7, "gpus": 10}])
    assert two["capex"][3] == approx(5_000.0) and two["capex"][6] == approx(15_000.0)
    assert two["drawdown"][6] == approx(10_000.0) and two["drawdown"][3] == 0
    # month 6: the delivery payment less the loan, from equity with the month's cash
    assert two["equity_cash_flow"][6] == approx(two["ebitda"][6] - 15_000 + 10_000
                                                - two["principal"][6])
