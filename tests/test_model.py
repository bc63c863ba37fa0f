"""The spec's formulas (methodology sections 1–3): worked examples, broadcasting, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tokenfactory_xl.core import economics as model

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
fraction = st.floats(min_value=0.01, max_value=1.0)


# -- worked examples of the seeds -----------------------------------------------------------------
def test_tef_seed_000_example():
    assert model.tef(210_000, 700_000) == pytest.approx(0.30, rel=1e-12)


def test_equivalent_gpus_seed_000_example():
    assert model.equivalent_gpus(1_000, 0.30, 0.65) == pytest.approx(2166.6667, abs=1e-4)
    assert round(model.equivalent_gpus(1_000, 0.30, 0.65)) == 2167
    assert model.avoided_capex(1_000, 0.30, 0.65, 1) == pytest.approx(1166.6667, abs=1e-4)


def test_breakeven_and_margins_seed_004_example():
    assert model.breakeven_util(1.89, 5_600, 0.25) == pytest.approx(0.375, rel=1e-12)
    assert model.margin_at_util(0.20, 1.89, 5_600, 0.25) == pytest.approx(-0.875, rel=1e-12)
    assert model.margin_at_util(0.40, 1.89, 5_600, 0.25) == pytest.approx(0.0625, rel=1e-12)
    # the seed's 5,000 TPS "blended" preset: breakeven 0.42
    assert model.breakeven_util(1.89, 5_000, 0.25) == pytest.approx(0.42, rel=1e-12)


def test_fleet_average_seed_004_example():
    tokens_per_day = 155e12
    per_gpu_second = model.tokens_per_gpu_second(tokens_per_day, 128)
    assert per_gpu_second == pytest.approx(14.0e6, rel=0.01)
    assert per_gpu_second == pytest.approx(155e12 / 128 / 86_400, rel=1e-12)
    price = model.implied_price_per_mtok(tokens_per_day, 128, 38)
    assert price == pytest.approx(0.000753, rel=0.001)
    assert price == pytest.approx(38 * 128 * 24 / 155e6, rel=1e-12)


def test_yearly_price_factor_seed_001_example():
    assert model.yearly_price_factor(0.47) == pytest.approx(0.0789, abs=5e-5)
    assert 1 / model.yearly_price_factor(0.47) == pytest.approx(13, rel=0.03)  # "to 1/13"
    assert model.price_after(1.0, 0.47, 12) == pytest.approx(0.53**4, rel=1e-12)


def test_red_queen_revenue_flat():
    assert model.revenue_ratio(10, 1 / 10) == pytest.approx(1.0)


def test_throughput_units():
    assert model.tpm(1_000) == 60_000
    assert model.tokens_per_day(1_000) == 86_400_000


# -- the other formulas against the spec's definitions -------------------------------------------
def test_unit_economics_by_hand():
    # C = 2.5 $/GPU-h, T = 12,000 tok/s, P = 0.40 $/Mtok, u = 0.55
    assert model.revenue_per_gpu_hour(12_000, 0.55, 0.40) == pytest.approx(12_000 * 3600 * 0.55
                                                                            * 0.40 / 1e6)
    assert model.daily_token_value(12_000, 0.55, 0.40) == pytest.approx(12_000 * 86_400 * 0.55
                                                                         * 0.40 / 1e6)
    assert model.cost_per_mtok(2.5, 12_000, 0.55) == pytest.approx(2.5 / (12_000 * 3600 * 0.55
                                                                          / 1e6))
    revenue = 12_000 * 3600 * 0.55 * 0.40 / 1e6
    assert model.margin_at_util(0.55, 2.5, 12_000, 0.40) == pytest.approx((revenue - 2.5)
                                                                           / revenue)


def test_gpu_hour_cost_owned_and_cash():
    owned = model.gpu_hour_cost(40_000, 4, 1.0, 1.3, 0.08, 0.15, 4_000)
    assert owned == pytest.approx(36_000 / (4 * 8760) + 1.0 * 1.3 * 0.08 + 0.15, rel=1e-12)
    assert model.cash_gpu_hour_cost(1.0, 1.3, 0.08, 0.15) == pytest.approx(0.254, rel=1e-12)


def test_blended_price_by_hand():
    # h = 0.5, o = 0.25, b = 0.2, d = 0.5 with the spec's default prices
    input_price = 0.5 * 0.07 + 0.5 * 0.28
    list_price = 0.75 * input_price + 0.25 * 1.10
    expected = list_price * (1 - 0.2 * 0.5)
    got = model.blended_price(0.28, 1.10, 0.25, 0.5, 0.07, 0.2, 0.5)
    assert got == pytest.approx(expected, rel=1e-12)
    # defaults: no cache discount, no batch work
    assert model.blended_price(0.28, 1.10, 0.25) == pytest.approx(0.75 * 0.28 + 0.25 * 1.10)


def test_slo_attainment_lognormal():
    # p50 = 400 ms, p99 = 1,500 ms, SLO = 2,000 ms
    sigma = math.log(1500 / 400) / 2.326348
    z = math.log(2000 / 400) / sigma
    expected = 0.5 * (1 + math.erf(z / math.sqrt(2)))
    assert model.slo_attainment(400, 1500, 2000) == pytest.approx(expected, rel=1e-6)
    # the SLO at the p50 meets half the requests, at the p99 meets 99 %
    assert model.slo_attainment(400, 1500, 400) == pytest.approx(0.5, rel=1e-12)
    assert model.slo_attainment(400, 1500, 1500) == pytest.approx(0.99, rel=1e-12)
    assert math.isnan(model.slo_attainment(400, 400, 2000))  # p99 must exceed p50


def test_economic_life():
    # R0 = 3, c = 1, d = 0.25: 3 × ln(1/3) / ln(0.75)
    expected = 3 * math.log(1 / 3) / math.log(0.75)
    assert model.economic_life_months(3, 1, 0.25) == pytest.approx(expected, rel=1e-12)
    # revenue then equals the cash cost
    assert model.price_after(3, 0.25, expected) == pytest.approx(1, rel=1e-12)
    assert model.economic_life_months(1, 2, 0.25) == 0.0
    assert model.economic_life_months(3, 1, 0.0) == math.inf


def test_undefined_elements_are_nan_or_inf_not_exceptions():
    result = model.tef([210_000, 5], [700_000, 0])
    assert result[0] == pytest.approx(0.3)
    assert math.isinf(result[1])
    assert math.isnan(model.tef(0, 0))
    assert math.isinf(model.cost_per_mtok(2.0, 10_000, 0))


# -- broadcasting -------------------------------------------------------------------------------
def test_broadcasting_column_against_scalar():
    costs = np.array([1.0, 1.89, 3.0])
    tps = np.array([[5_600], [10_000]])
    got = model.breakeven_util(costs, tps, 0.25)
    assert got.shape == (2, 3)
    assert got[0, 1] == pytest.approx(0.375)
    assert got[1, 2] == pytest.approx(3.0 / (10_000 * 3600 * 0.25 / 1e6))


def test_scalar_call_returns_float():
    assert type(model.tfi(0.3, 0.99, 0.8)) is float


# -- finance --------------------------------------------------------------------------------------
def test_npv_matches_excel_convention():
    flows = [-100.0, 30.0, 40.0, 50.0]
    rate = 0.01
    excel = flows[0] + sum(cf / (1 + rate) ** (t + 1) for t, cf in enumerate(flows[1:]))
    assert model.npv(rate, flows) == pytest.approx(excel, rel=1e-12)


def test_monthly_rate():
    assert (1 + model.monthly_rate(0.10)) ** 12 == pytest.approx(1.10, rel=1e-12)


def test_irr_known_value_and_none():
    # -100 then 110 one period later: 10 %
    assert model.irr([-100, 110]) == pytest.approx(0.10, rel=1e-12)
    assert model.irr([100, 10, 5]) is None  # no sign change
    assert model.irr([0, 0]) is None


def test_payback_interpolates():
    # cumulative: -100, -60, -20, +20 → crosses in month 3, halfway
    assert model.payback_months([-100, 40, 40, 40]) == pytest.approx(2.5)
    assert model.payback_months([-100, 10, 10]) is None


# -- properties ------------------------------------------------------------------------------------
@given(gpus=st.integers(1, 1_000_000), tef_now=fraction, tef_target=fraction)
def test_equivalent_gpus_times_tef_now_is_gpus_times_target(gpus, tef_now, tef_target):
    equivalent = model.equivalent_gpus(gpus, tef_now, tef_target)
    assert equivalent * tef_now == pytest.approx(gpus * tef_target, rel=1e-12)


@given(cost=positive, tps=positive, price=positive)
def test_margin_at_breakeven_is_zero(cost, tps, price):
    breakeven = model.breakeven_util(cost, tps, price)
    assert model.margin_at_util(breakeven, cost, tps, price) == pytest.approx(0, abs=1e-9)


@given(
    capex=st.floats(1e3, 1e8),
    flows=st.lists(st.floats(1.0, 1e7), min_size=1, max_size=120),
)
def test_npv_at_irr_is_zero(capex, flows):
    cash = [-capex, *flows]
    rate = model.irr(cash)
    assert rate is not None
    assert model.npv(rate, cash) == pytest.approx(0, abs=1e-7 * (capex + sum(flows)))


@example(capex=1000.0, flows=[-4.654118006717223e-12, 1000.0, 20992.0])
@given(
    capex=st.floats(1e3, 1e8),
    flows=st.lists(st.floats(-1e6, 1e7), min_size=1, max_size=120),
)
def test_cumulative_cash_flow_crosses_zero_at_payback(capex, flows):
    cash = np.array([-capex, *flows])
    payback = model.payback_months(cash)
    cumulative = np.cumsum(cash)
    if payback is None:
        crossings = (cumulative[1:] >= 0) & (cumulative[:-1] < 0)
        assert not crossings.any()
        return
    # the first month in which the cumulative turns non-negative from below
    k = next(j for j in range(1, len(cash)) if cumulative[j - 1] < 0 <= cumulative[j])
    # (k − 1 itself where what is left to pay back, −cum_(k−1), is below half an ulp of k − 1
    # after the division: 4.7e-12 ÷ 20,992 added to 2 is 2)
    assert k - 1 <= payback <= k
    # linear interpolation within month k reaches zero at the payback point
    share = payback - (k - 1)
    assert cumulative[k - 1] + share * cash[k] == pytest.approx(0, abs=1e-6 * capex)
