"""The three statements of methodology §10.4: income statement, cash-flow statement, balance sheet.

On random sites (cohorts, debt, shutdowns, escalation, working capital, deposits paid ahead and
a tax life of their own) every scenario's balance sheet balances to the cent in every calendar
year, the cash-flow statement's four parts sum to 0, everything is 0 at H and nothing is shown
after it; on a site simple enough to compute by hand the statements are those figures; the
command prints them in the JSON shape pandas and Power Query read as is.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.production_adapter import _inputs
from tests.test_operating_model import sites
from tests.test_reference_v2 import simple_site
from tests.tools import command
from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.statements import statements

CENT = 0.005
BALANCE = ("fixed_assets", "receivables", "debt", "payables", "equity")
CASH = ("operating", "investing", "financing", "equity")


def _holds_together(result) -> None:
    horizon = int(result.inputs["horizon_months"])
    for name, years in statements(result).items():
        last = list(years)[-1]
        for year, parts in years.items():
            b, c = parts["balance"], parts["cash_flow"]
            gap = b["fixed_assets"] + b["receivables"] - b["debt"] - b["payables"] - b["equity"]
            assert abs(gap) < CENT, (name, year, gap)
            assert abs(sum(c[k] for k in CASH)) < CENT, (name, year)
            i = parts["income"]
            assert math.isclose(i["net_income"], i["ebit"] - i["interest"] - i["tax"],
                                rel_tol=1e-12, abs_tol=1e-6)
        assert all(abs(x) < CENT for x in years[last]["balance"].values()), name
        key = next(sc.key for sc in om.SCENARIOS if sc.name == name)
        years_shown = int(result.values["fiscal_years"])
        for line in om.STATEMENT_LINES[key]:  # nothing after H
            assert np.all(np.isnan(result.values[line.name][years_shown:])), line.name
        for line in ("receivables", "payables", "contributions", "distributions"):
            after = result.values[f"{line}_{key}"][horizon + 1:]
            assert np.all(np.isnan(after)), line
    assert result.values["check_statements_balance"] == "OK"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sites())
def test_random_sites_balance_in_every_year_and_scenario(case):
    site, cohorts = case
    _holds_together(run(_inputs(site, cohorts, "Base")))


def test_default_site_and_a_financed_one_balance():
    _holds_together(run(make_inputs({})))
    _holds_together(run(make_inputs({
        "debt_share": 0.5, "debt_rate": 0.07, "debt_tenor_months": 36,
        "capex_deposit_share": 0.3, "capex_lead_months": 3, "tax_life_years": 3,
        "shutdown_month.Downside": 20, "start_date": "2027-08-01",
        "cohorts": [{"cohort": "2", "online_month": 10, "gpus": 256}]})))


def test_the_simple_site_by_hand():
    """10 GPUs bought for 20,000 in month 0 earn 10 and spend 1 (power) an hour from January
    2029, no tax, 31 receivable and 15.5 payable days: receivables 10 × 24 × 31 = 7,440 and
    payables 24 × 15.5 = 372 at every month's end. 2029: net income 9 × 8,760 − 5,000
    depreciation = 73,840; operating cash 78,840 − 7,068 working capital = 71,772; investing
    −20,000 (month 0 counts in 2029); equity takes out the 51,772 left. Its year-end balance
    sheet: 15,000 of GPUs + 7,440 = 372 + equity 22,068. At the end of 2030 the GPUs are sold
    at book value (10,000) and the working capital released: everything is 0."""
    site = {k: v for k, v in simple_site(receivable_days=31.0, payable_days=15.5).items()}
    result = run(_inputs(site, None, "Base"))
    base = statements(result, "Base")["Base"]
    assert list(base) == ["2029", "2030"]
    y = base["2029"]
    assert y["income"]["net_income"] == pytest.approx(73_840.0)
    assert y["income"]["depreciation"] == pytest.approx(5_000.0)
    assert y["cash_flow"]["operating"] == pytest.approx(71_772.0)
    assert y["cash_flow"]["investing"] == pytest.approx(-20_000.0)
    assert y["cash_flow"]["financing"] == 0
    assert y["cash_flow"]["equity"] == pytest.approx(-51_772.0)
    assert y["balance"] == pytest.approx({"fixed_assets": 15_000.0, "receivables": 7_440.0,
                                          "debt": 0.0, "payables": 372.0, "equity": 22_068.0})
    z = base["2030"]
    assert z["cash_flow"]["investing"] == pytest.approx(10_000.0)
    assert z["cash_flow"]["operating"] == pytest.approx(78_840.0 + 7_068.0)
    assert z["balance"] == pytest.approx(dict.fromkeys(BALANCE, 0.0), abs=1e-6)


def test_equity_contributed_and_peak_funding_by_hand():
    """The same site: equity pays the 20,000 of month 0 and the 372 month 1 lacks (EBITDA 6,696
    less 7,068 of working capital): equity_contributed 20,372 and peak funding 20,372."""
    site = simple_site(receivable_days=31.0, payable_days=15.5)
    out = run(_inputs(site, None, "Base")).scenarios["Base"].summary
    assert out["equity_contributed"] == pytest.approx(20_372.0)
    assert out["peak_funding"] == pytest.approx(20_372.0)
    assert out["dscr_breaches"] == 0


def test_statements_json_is_scenario_year_part_line():
    proc = command.run("statements", "--json", "--set", "debt_share=0.5")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert list(document) == ["Base", "Optimised", "Downside"]
    assert list(document["Base"]) == ["2027", "2028", "2029", "2030", "2031"]
    year = document["Optimised"]["2028"]
    assert set(year["income"]) == {"revenue", "ebitda", "depreciation", "gain_on_disposal",
                                   "ebit", "interest", "tax", "net_income"}
    assert list(year["cash_flow"]) == list(CASH)
    assert list(year["balance"]) == list(BALANCE)
    # the model's own figures: revenue of 2027 is the sum of the first twelve months
    result = run(make_inputs({"debt_share": 0.5}))
    assert document["Base"]["2027"]["income"]["revenue"] == pytest.approx(
        float(np.sum(result.scenarios["Base"].lines["revenue"][:12])), rel=1e-12)


def test_statements_scenario_csv_and_text():
    proc = command.run("statements", "--scenario", "Downside", "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()
    assert rows[0] == "scenario,year,statement,line,value"
    assert len(rows) == 1 + 5 * (8 + 4 + 5) and all(r.startswith("Downside,") for r in rows[1:])
    text = command.run("statements", "--scenario", "Base").stdout
    assert "Base scenario" in text and "Downside scenario" not in text
    assert "Balance sheet at the year's end" in text and "2031" in text


@pytest.mark.parametrize("setting, says", [
    ("receivable_days=400", "receivable_days=400: is out of range; allowed: a number from 0 "
                            "to 365"),
    ("payable_days=366", "payable_days=366: is out of range"),
    ("capex_deposit_share=1.5", "capex_deposit_share=1.5: looks like a percentage"),
    ("tax_life_years=0.5", "tax_life_years=0.5: is out of range; allowed: a number from 1 to "
                           "30, or blank"),
    ("tax_life_years=31", "tax_life_years=31: is out of range"),
])
def test_bad_financing_input_is_a_clear_message(setting, says):
    proc = command.run("statements", "--set", setting)
    assert proc.returncode == 2 and proc.stdout == ""
    assert says in proc.stderr and "Traceback" not in proc.stderr


def test_a_blank_tax_life_takes_each_cohorts_own_life():
    """Blank: tax depreciation is book depreciation, cohort by cohort (a 2-year cohort beside
    the site's 4-year GPUs); a tax life of 4 years is the site's own life only."""
    cohorts = [{"cohort": "2", "online_month": 3, "gpus": 100, "life_years": 2}]
    blank = run(make_inputs({"cohorts": cohorts})).scenarios["Base"].lines
    assert np.array_equal(blank["tax_depreciation"], blank["depreciation"])
    four = run(make_inputs({"cohorts": cohorts, "tax_life_years": 4})).scenarios["Base"].lines
    assert four["tax_depreciation"][2] < four["depreciation"][2]  # month 3: 4 years, not 2


NO_FINANCING = {"power_escalation_per_year": 0.0, "opex_escalation_per_year": 0.0,
                "receivable_days": 0.0, "payable_days": 0.0, "capex_deposit_share": 0.0,
                "tax_life_years": None}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sites())
def test_without_financing_the_lines_are_version_3s_own(case):
    """Zero escalation, zero receivable and payable days, no deposit and a blank tax life: tax
    depreciation is the book's, taxable profit is EBIT, no working capital, and the project and
    equity cash flows are §4.3's and §4.4's formulas to the last bit."""
    site, cohorts = case
    result = run(_inputs({**site, **NO_FINANCING}, cohorts, "Base"))
    for sc in result.scenarios.values():
        x = sc.lines
        assert np.array_equal(x["tax_depreciation"], x["depreciation"])
        assert np.array_equal(x["taxable_profit"], x["ebit"])
        assert not np.any(x["working_capital"]) and not np.any(x["wc_change"])
        cash = x["ebitda"] - x["tax"] + x["disposal_proceeds"] - x["capex"][1:]
        assert np.array_equal(x["cash_flow"][1:], cash)
        equity = (x["ebitda"] - x["levered_tax"] - x["interest"] - x["principal"]
                  + x["disposal_proceeds"] - x["capex"][1:] + x["drawdown"][1:])
        assert np.array_equal(x["equity_cash_flow"][1:], equity)
        assert np.array_equal(x["cfads"], x["ebitda"] - x["levered_tax"])


@pytest.mark.parametrize("changes", [
    {"debt_share": 0.6, "receivable_days": 45, "payable_days": 30, "capex_deposit_share": 0.3},
    {"debt_share": 0.4, "tax_rate": 0.3, "shutdown_month": (30, 40, 20), "horizon_months": 84},
    {"ownership": "rent", "receivable_days": 60},
])
def test_the_check_lines_show_zero_not_rounding_noise(changes):
    # the sums of a year's months differ by about 1e-9 from the sums of their parts; a check
    # line below half a cent is exactly 0, so the workbook never shows a red "-0"
    result = run(make_inputs(changes))
    for key in ("base", "optimised", "downside"):
        for line in (f"st_cash_change_{key}", f"st_balance_gap_{key}"):
            years = [x for x in result.values[line].tolist() if x == x]  # past the years: NaN
            assert years and all(x == 0.0 for x in years), (line, years)
