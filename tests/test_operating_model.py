"""The monthly TFOM (TFOM-SPEC sections 4, 6, 7) against an independent hand computation.

The reference below is written from the spec's text with plain Python loops, dates and
``math``, sharing no code with ``tokenfactory_xl.operating_model``.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenfactory_xl import make_inputs, run
from tokenfactory_xl import operating_model as om
from tokenfactory_xl.operating_model import OUTPUT_NAMES

#: The monthly lines the reference computes, in its order.
LINE_NAMES = ("hours", "tef", "sell_through", "tokens_sold", "price", "revenue", "power",
              "other_opex", "rent", "ebitda", "depreciation", "ebit", "tax", "cash_flow",
              "cumulative_cash_flow")

SCEN = {"Base": 0, "Optimised": 1, "Downside": 2}


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def reference(v: dict) -> tuple[dict[str, list[float]], dict[str, float | None]]:
    """TFOM-SPEC section 4 and 7, month by month, for inputs ``v`` (already complete)."""
    s = SCEN[v["scenario"]]
    owned = v["ownership"] == "own"
    tef_now = v["measured_tps"] / (v["gpus"] * v["theoretical_tps_per_gpu"])
    sigma = math.log(v["ttft_p99_ms"] / v["ttft_p50_ms"]) / 2.3263478740408408
    slo = phi(math.log(v["ttft_slo_ms"] / v["ttft_p50_ms"]) / sigma)
    sla = v["availability"] * slo
    h = v["cache_hit_rate"]
    p_in = h * v["price_cached_input_per_mtok"] + (1 - h) * v["price_input_per_mtok"]
    p_list = (1 - v["output_share"]) * p_in + v["output_share"] * v["price_output_per_mtok"]
    p0 = p_list * (1 - v["batch_share"] * v["batch_discount"])
    capex = v["gpus"] * v["capex_per_gpu"] if owned else 0.0
    d = v["decline_per_quarter"][s]

    lines: dict[str, list[float]] = {k: [] for k in LINE_NAMES}
    year, month = v["start_date"].year, v["start_date"].month
    horizon = v["horizon_months"]
    for m in range(1, horizon + 1):
        hours = calendar.monthrange(year, month)[1] * 24
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)

        def ramp(start, target, months, m=m):
            return target if months == 0 else start + (target - start) * min(m, months) / months

        tef = ramp(tef_now, v["tef_target"][s], v["tef_ramp_months"])
        sell = ramp(v["sell_through_start"], v["sell_through_target"][s],
                    v["sell_through_ramp_months"])
        tokens = v["gpus"] * v["theoretical_tps_per_gpu"] * 3600 * hours * tef * sla * sell
        price = p0 * (1 - d) ** ((m - 1) / 3)
        revenue = tokens / 1e6 * price
        power = v["gpus"] * v["power_kw_per_gpu"] * v["pue"] * hours * v["electricity_per_kwh"]
        other = v["gpus"] * v["opex_per_gpu_hour"] * hours + v["fixed_opex_per_month"]
        rent = 0.0 if owned else v["gpus"] * v["rent_per_gpu_hour"] * hours
        ebitda = revenue - power - other - rent
        dep = 0.0
        if owned and m <= v["life_years"] * 12:
            dep = v["gpus"] * (v["capex_per_gpu"] - v["salvage_per_gpu"]) / (v["life_years"] * 12)
        ebit = ebitda - dep
        tax = max(ebit, 0.0) * v["tax_rate"]
        flow = ebitda - tax
        if m == horizon and owned:
            flow += v["gpus"] * v["salvage_per_gpu"]
        for name, value in zip(
            LINE_NAMES[:13],
            (hours, tef, sell, tokens, price, revenue, power, other, rent, ebitda, dep, ebit, tax),
            strict=True,
        ):
            lines[name].append(value)
        lines["cash_flow"].append(flow)
    flows = [-capex] + lines["cash_flow"]
    lines["cash_flow"] = flows
    cumulative, total = [], 0.0
    for f in flows:
        total += f
        cumulative.append(total)
    lines["cumulative_cash_flow"] = cumulative

    rm = (1 + v["discount_rate"]) ** (1 / 12) - 1
    npv = sum(f / (1 + rm) ** t for t, f in enumerate(flows))
    payback = None
    for k in range(1, len(flows)):
        if cumulative[k] >= 0 and cumulative[k - 1] < 0:
            payback = (k - 1) + (-cumulative[k - 1]) / flows[k]
            break
    if owned:
        hour_cost = ((v["capex_per_gpu"] - v["salvage_per_gpu"]) / (v["life_years"] * 8760)
                     + v["power_kw_per_gpu"] * v["pue"] * v["electricity_per_kwh"]
                     + v["opex_per_gpu_hour"])
    else:
        hour_cost = (v["rent_per_gpu_hour"] + v["power_kw_per_gpu"] * v["pue"]
                     * v["electricity_per_kwh"] + v["opex_per_gpu_hour"])
    hour_cost += v["fixed_opex_per_month"] / (v["gpus"] * 730)
    tokens_total = sum(lines["tokens_sold"])
    revenue_total = sum(lines["revenue"])
    ebitda_total = sum(lines["ebitda"])
    costs = sum(sum(lines[k]) for k in ("power", "other_opex", "rent", "depreciation"))
    equivalent = v["gpus"] * v["tef_target"][s] / tef_now
    summary = {
        "tef_now": tef_now, "slo_attainment": slo, "sla": sla,
        "tfi_now": tef_now * sla * v["sell_through_start"],
        "equivalent_gpus": equivalent,
        "avoided_capex": (equivalent - v["gpus"]) * v["capex_per_gpu"],
        "blended_price": p0, "gpu_hour_cost": hour_cost,
        "breakeven_util": hour_cost / (v["theoretical_tps_per_gpu"] * 3600 * p0 / 1e6),
        "tokens_sold_total": tokens_total, "revenue_total": revenue_total,
        "ebitda_total": ebitda_total, "ebitda_margin": ebitda_total / revenue_total,
        "npv": npv, "payback_months": payback,
        "roi": sum(flows) / capex if capex else None,
        "cost_per_mtok": costs / (tokens_total / 1e6),
    }
    return lines, summary


def full(overrides: dict) -> dict:
    """Complete inputs as plain values (the reference does not read the catalogue)."""
    return {k: v for k, v in make_inputs(overrides).items()}


OWNED = {
    "site_name": "Frankfurt owned", "start_date": "2027-11-01", "horizon_months": 40,
    "gpus": 512, "capex_per_gpu": 32_000, "salvage_per_gpu": 3_000, "life_years": 2.5,
    "fixed_opex_per_month": 25_000, "tef_ramp_months": 5, "sell_through_ramp_months": 9,
    "measured_tps": 1_228_800, "theoretical_tps_per_gpu": 12_000, "tax_rate": 0.3,
    "scenario": "Optimised", "tef_target.Optimised": 0.62,
}
# Starts in a leap-year February; rented, so no CapEx, depreciation or salvage.
RENTED = {
    "site_name": "Oslo rented", "start_date": "2028-02-01", "horizon_months": 18,
    "ownership": "rent", "rent_per_gpu_hour": 1.75, "gpus": 64, "salvage_per_gpu": 5_000,
    "tef_ramp_months": 0, "sell_through_ramp_months": 3, "scenario": "Downside",
    "measured_tps": 200_000, "price_output_per_mtok": 2.0,
}


@pytest.mark.parametrize("overrides", [OWNED, RENTED, {}], ids=["owned", "rented", "defaults"])
def test_monthly_lines_match_hand_computation(overrides):
    v = full(overrides)
    lines, summary = reference(v)
    result = run(make_inputs(overrides))
    for name in LINE_NAMES:
        got = result.lines[name]
        assert got.shape == (len(lines[name]),), name
        np.testing.assert_allclose(got, lines[name], rtol=1e-12, atol=1e-9, err_msg=name)
    for name, expected in summary.items():
        got = result.summary[name]
        if expected is None:
            assert got is None, name
        else:
            assert got == pytest.approx(expected, rel=1e-10), name


def test_calendar_hours_and_leap_february():
    lines = run(make_inputs(RENTED)).lines
    assert lines["hours"][0] == 29 * 24  # February 2028
    assert lines["hours"][1] == 31 * 24  # March
    lines = run(make_inputs({"start_date": "2027-02-01", "horizon_months": 1})).lines
    assert lines["hours"][0] == 28 * 24


def test_month_ends():
    result = run(make_inputs({"start_date": "2028-01-01", "horizon_months": 3}))
    assert result.month_ends == (dt.date(2028, 1, 31), dt.date(2028, 2, 29), dt.date(2028, 3, 31))


def test_ramps_reach_target_then_hold():
    result = run(make_inputs(OWNED))
    tef = result.lines["tef"]
    assert tef[0] == pytest.approx(0.2 + (0.62 - 0.2) / 5)
    assert tef[4] == pytest.approx(0.62)
    assert np.all(tef[4:] == pytest.approx(0.62))


def test_depreciation_stops_after_the_life_and_salvage_in_last_month():
    result = run(make_inputs(OWNED))
    dep = result.lines["depreciation"]
    assert np.all(dep[:30] == pytest.approx(512 * 29_000 / 30))
    assert np.all(dep[30:] == 0)
    flows = result.lines["cash_flow"]
    last = result.lines["ebitda"][-1] - result.lines["tax"][-1] + 512 * 3_000
    assert flows[-1] == pytest.approx(last)
    assert flows[0] == -512 * 32_000


def test_tax_only_on_positive_ebit():
    # a tiny price makes EBIT negative in every month
    result = run(make_inputs({"price_input_per_mtok": 0.001, "price_output_per_mtok": 0.001,
                              "price_cached_input_per_mtok": 0.001}))
    assert np.all(result.lines["ebit"] < 0)
    assert np.all(result.lines["tax"] == 0)
    result = run(make_inputs({}))
    positive = result.lines["ebit"] > 0
    assert positive.any()
    np.testing.assert_allclose(result.lines["tax"][positive],
                               0.25 * result.lines["ebit"][positive])


def test_first_month_sells_at_todays_price():
    result = run(make_inputs({}))
    assert result.lines["price"][0] == pytest.approx(result.summary["blended_price"])
    assert result.lines["price"][3] == pytest.approx(result.summary["blended_price"] * 0.9)


def test_rented_fleet_has_no_capex_roi_or_irr():
    result = run(make_inputs(RENTED))
    assert result.lines["cash_flow"][0] == 0
    assert result.summary["roi"] is None
    assert np.all(result.lines["depreciation"] == 0)
    assert np.all(result.lines["rent"] > 0)


def test_npv_at_irr_is_zero_for_the_site():
    result = run(make_inputs({}))
    yearly = result.summary["irr"]
    monthly = (1 + yearly) ** (1 / 12) - 1
    flows = result.lines["cash_flow"]
    npv = sum(f / (1 + monthly) ** t for t, f in enumerate(flows))
    assert npv == pytest.approx(0, abs=1e-6 * abs(flows[0]))


def test_summary_has_exactly_the_output_names():
    assert tuple(run(make_inputs({})).summary) == OUTPUT_NAMES


def test_no_tef_now_gives_no_equivalent_gpus():
    summary = run(make_inputs({"measured_tps": 0})).summary
    assert summary["tef_now"] == 0
    assert summary["equivalent_gpus"] is None
    assert summary["avoided_capex"] is None


def test_npv_grid_matches_individual_runs():
    """Each cell of the Sensitivity sheet's NPV grid is the NPV of the site run with that TEF
    target and price decline (the grid re-prices the Timeline's lines; run() computes anew)."""
    site = make_inputs(OWNED)
    grid = om.grid(run(site))
    tefs = om.CONSTANT_VALUES["sens_tef_targets"]
    declines = om.CONSTANT_VALUES["sens_declines"]
    assert grid.shape == (len(tefs), len(declines))
    for i, t in enumerate(tefs):
        for j, d in enumerate(declines):
            one = run(site.replace({"tef_target": t, "decline_per_quarter": d}))
            assert grid[i, j] == pytest.approx(one.summary["npv"], rel=1e-10)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 50), fixed=st.floats(0, 1e5))
def test_scaling_gpus_leaves_breakeven_unchanged(k, fixed):
    base = {"gpus": 100, "measured_tps": 300_000, "fixed_opex_per_month": fixed}
    scaled = {"gpus": 100 * k, "measured_tps": 300_000 * k, "fixed_opex_per_month": fixed * k}
    a = run(make_inputs(base)).summary
    b = run(make_inputs(scaled)).summary
    assert b["breakeven_util"] == pytest.approx(a["breakeven_util"], rel=1e-12)
    assert b["npv"] == pytest.approx(a["npv"] * k, rel=1e-9)
