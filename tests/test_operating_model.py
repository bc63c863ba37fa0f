"""The production model (methodology §4, §6, §7) against the independent reference.

``tests/reference_v2.py`` implements the spec from its text with plain loops and shares no
code with ``tokenfactory_xl.tfom.operating_model``; ``tests/test_reference_v2.py`` pins it, and the
production model, to the spec's worked examples and to cases computed by hand. Here random
sites — cohorts, demand, contracts, debt, programme costs, retirements, any horizon and start
month — must give every output of every scenario and every monthly line as the reference
does, and a few properties of the monthly model hold.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.production_adapter import MONTHLY, _inputs, production_run
from tests.reference_v2 import reference_bridge, reference_scenarios
from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.tfom.operating_model import BRIDGE_NAMES, OUTPUT_NAMES, WARNINGS

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


def close(got: float | None, want: float | None, rel: float = 1e-9) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=rel, abs_tol=1e-6)


def _not_a_month(days: float) -> bool:
    return days not in (28.0, 29.0, 30.0, 31.0)


@st.composite
def sites(draw) -> tuple[dict, list[dict]]:
    """A random site with up to 7 more cohorts, version 3 with §10.4's financing."""
    horizon = draw(st.integers(1, 120))

    def num(low, high):  # six decimals: no subnormal rates whose logarithm underflows
        return st.floats(low, high).map(lambda x: round(x, 6))

    frac = num(0, 1)
    site = {
        "start_date": dt.date(2027, draw(st.integers(1, 12)), 1), "horizon_months": horizon,
        "gpus": draw(st.integers(1, 5000)), "ownership": draw(st.sampled_from(["own", "rent"])),
        "capex_per_gpu": draw(num(0, 80_000)), "life_years": draw(num(1, 10)),
        "rent_per_gpu_hour": draw(num(0, 5)),
        "tax_rate": draw(num(0, 0.5)),  # a 100% tax can make every flow 0 ± rounding
        "tef_ramp_months": draw(st.integers(0, 24)),
        "sell_through_ramp_months": draw(st.integers(0, 24)),
        "tef_target": tuple(draw(frac) for _ in range(3)),
        "decline_per_quarter": tuple(draw(num(0, 0.6)) for _ in range(3)),
        "market_growth_per_quarter": tuple(draw(num(-0.5, 1)) for _ in range(3)),
        "price_factor": tuple(draw(num(0.5, 1.5)) for _ in range(3)),
        "market_mtok_month1": draw(st.sampled_from([0.0, 1e4, 3e6, 5e7])),
        "contract_mtok_per_month": draw(st.sampled_from([0.0, 1e5, 2e6])),
        "contract_price_per_mtok": draw(num(0, 1)),
        "contract_months": draw(st.integers(0, 120)),
        "programme_cost_once": (0.0, draw(num(0, 2e6)), 0.0),
        "programme_fee_per_month": (0.0, draw(num(0, 1e5)), 0.0),
        "fixed_opex_per_month": draw(num(0, 1e5)),
        "residual_share": draw(frac), "debt_share": draw(st.sampled_from([0.0, 0.3, 0.9])),
        "debt_rate": draw(st.sampled_from([0.0, 0.05, 0.12])),
        "debt_tenor_months": draw(st.integers(1, 120)),
        "retire_month": draw(st.one_of(st.none(), st.integers(1, 120))),
        "discount_rate": draw(num(0, 0.3)),
        "residual_method": draw(st.sampled_from(["market", "book"])),
        "resale_decline_per_quarter": tuple(draw(num(0, 0.5)) for _ in range(3)),
        "shutdown_month": tuple(draw(st.one_of(st.none(), st.integers(1, 120)))
                                for _ in range(3)),
        "dscr_covenant": draw(num(0.5, 2)),
        "power_escalation_per_year": draw(st.one_of(st.just(0.0), num(-0.1, 0.3))),
        "opex_escalation_per_year": draw(st.one_of(st.just(0.0), num(-0.1, 0.3))),
        # a whole month's days of payables cancel a month's costs exactly in one rounding
        # and not in another, and a sign change of rounding noise is no sign change
        "receivable_days": draw(st.one_of(st.just(0.0), num(0, 120).filter(_not_a_month))),
        "payable_days": draw(st.one_of(st.just(0.0), num(0, 120).filter(_not_a_month))),
        "capex_deposit_share": draw(st.one_of(st.just(0.0), frac)),
        "capex_lead_months": draw(st.integers(0, 24)),
        "tax_life_years": draw(st.one_of(st.none(), num(1, 30))),
    }
    site["salvage_per_gpu"] = draw(num(0, 1)) * site["capex_per_gpu"]
    site["measured_tps"] = site["gpus"] * 10_000 * draw(num(0.01, 1))
    cohorts = []
    for i in range(draw(st.integers(0, 7))):
        online = draw(st.integers(1, horizon))
        row = {"cohort": f"C{i + 2}", "online_month": online, "gpus": draw(st.integers(1, 3000))}
        if draw(st.booleans()):
            row["retire_month"] = draw(st.integers(online, 120))
        if draw(st.booleans()):
            row["ownership"] = draw(st.sampled_from(["own", "rent"]))
        if draw(st.booleans()):
            row["capex_per_gpu"] = site["salvage_per_gpu"] + draw(num(0, 90_000))
        if draw(st.booleans()):
            row["life_years"] = draw(num(1, 10))
        if draw(st.booleans()):
            row["theoretical_tps_per_gpu"] = draw(num(100, 50_000))
        cohorts.append(row)
    return site, cohorts


def _operands() -> dict[str, list[str]]:
    """Reference name → the reference names of the monthly lines of its unit that its
    production line reads (from the model's own declarations; the scenario suffix of a line
    stands for any): money of money, tokens of tokens, never money of tokens."""
    from tokenfactory_xl.tfom.formula import lines_read
    from tokenfactory_xl.tfom.operating_model import LINES

    base = {line.replace("_{k}", ""): ref for ref, line in MONTHLY.items()}
    declared = {line.name: line for line in LINES}
    found = {}
    for ref, line in MONTHLY.items():
        production = declared[line.format(k="base")]
        names = {n.removesuffix("_base") for n in lines_read(production.formula)}
        found[ref] = sorted(base[n] for n in names if n in base and base[n] != ref
                            and declared[MONTHLY[base[n]].format(k="base")].unit
                            == production.unit)
    return found


OPERANDS = _operands()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sites())
@example(
    case=({'start_date': dt.date(2027, 1, 1),
      'horizon_months': 17,
      'gpus': 1,
      'ownership': 'own',
      'capex_per_gpu': 0.0,
      'life_years': 1.0,
      'rent_per_gpu_hour': 0.0,
      'tax_rate': 0.0,
      'tef_ramp_months': 17,
      'sell_through_ramp_months': 0,
      'tef_target': (0.0, 0.0, 0.0),
      'decline_per_quarter': (0.0, 0.0, 0.0),
      'market_growth_per_quarter': (0.0, 0.0, 0.0),
      'price_factor': (1.0, 1.0, 1.0),
      'market_mtok_month1': 0.0,
      'contract_mtok_per_month': 0.0,
      'contract_price_per_mtok': 0.0,
      'contract_months': 0,
      'programme_cost_once': (0.0, 0.0, 0.0),
      'programme_fee_per_month': (0.0, 0.0, 0.0),
      'fixed_opex_per_month': 0.0,
      'residual_share': 0.0,
      'debt_share': 0.0,
      'debt_rate': 0.0,
      'debt_tenor_months': 1,
      'retire_month': None,
      'discount_rate': 0.0,
      'salvage_per_gpu': 0.0,
      'measured_tps': 4871.45},
     []),
)
@example(  # a gain of -0.92 as the difference of two 16.8 million disposals: one ulp of those
    case=({'start_date': dt.date(2027, 1, 1),
      'horizon_months': 1,
      'gpus': 3354,
      'ownership': 'own',
      'capex_per_gpu': 5001.0,
      'life_years': 1.0,
      'rent_per_gpu_hour': 0.0,
      'tax_rate': 0.0,
      'tef_ramp_months': 0,
      'sell_through_ramp_months': 0,
      'tef_target': (0.0, 0.0, 0.0),
      'decline_per_quarter': (0.0, 0.0, 0.0),
      'market_growth_per_quarter': (0.0, 0.0, 0.0),
      'price_factor': (1.0, 1.0, 1.0),
      'market_mtok_month1': 0.0,
      'contract_mtok_per_month': 0.0,
      'contract_price_per_mtok': 0.0,
      'contract_months': 0,
      'programme_cost_once': (0.0, 0.0, 0.0),
      'programme_fee_per_month': (0.0, 0.0, 0.0),
      'fixed_opex_per_month': 0.0,
      'residual_share': 0.0,
      'debt_share': 0.0,
      'debt_rate': 0.0,
      'debt_tenor_months': 1,
      'retire_month': None,
      'discount_rate': 0.0,
      'salvage_per_gpu': 5001.0,
      'measured_tps': 33540000.0},
     [{'cohort': 'C2',
       'online_month': 1,
       'gpus': 1,
       'capex_per_gpu': 5002.0}]),
)
@example(  # a Downside whose flows stop at a shutdown in month 23 of 95, its IRR near
    # −100 % a year: eight Newton steps on NPV × (1 + rate)^95 did not reach the root
    case=({'start_date': dt.date(2027, 4, 1),
     'horizon_months': 95,
     'gpus': 59,
     'ownership': 'own',
     'capex_per_gpu': 340.0,
     'life_years': 1.0,
     'rent_per_gpu_hour': 0.0,
     'tax_rate': 0.0,
     'tef_ramp_months': 0,
     'sell_through_ramp_months': 0,
     'tef_target': (0.0, 0.0, 0.0),
     'decline_per_quarter': (0.0, 0.0, 0.0),
     'market_growth_per_quarter': (0.0, 0.0, 0.0),
     'price_factor': (1.0, 1.0, 1.0),
     'market_mtok_month1': 0.0,
     'contract_mtok_per_month': 0.0,
     'contract_price_per_mtok': 0.0,
     'contract_months': 0,
     'programme_cost_once': (0.0, 0.0, 0.0),
     'programme_fee_per_month': (0.0, 0.0, 0.0),
     'fixed_opex_per_month': 817.0,
     'residual_share': 1.0,
     'debt_share': 0.0,
     'debt_rate': 0.0,
     'debt_tenor_months': 1,
     'retire_month': None,
     'discount_rate': 0.0,
     'residual_method': 'market',
     'resale_decline_per_quarter': (0.0, 0.0, 0.0),
     'shutdown_month': (None, None, 23),
     'dscr_covenant': 1.0,
     'power_escalation_per_year': 0.0,
     'opex_escalation_per_year': 0.0,
     'receivable_days': 0.0,
     'payable_days': 0.0,
     'capex_deposit_share': 0.0,
     'capex_lead_months': 0,
     'tax_life_years': None,
     'salvage_per_gpu': 0.0,
     'measured_tps': 590000.0},
    []),
)
@example(  # a Downside shut down in month 11 of 12: month 12's flow nets to 0, and one
    # implementation's rounding leaves +1e-14 there, the other's 0.0: no sign change either way
    case=({'start_date': dt.date(2027, 1, 1), 'horizon_months': 12, 'gpus': 1, 'ownership': 'own',
           'capex_per_gpu': 0.0, 'life_years': 1.0, 'rent_per_gpu_hour': 0.0, 'tax_rate': 0.0,
           'tef_ramp_months': 11, 'sell_through_ramp_months': 0, 'tef_target': (0.0, 0.0, 0.0),
           'decline_per_quarter': (0.0, 0.0, 0.0), 'market_growth_per_quarter': (0.0, 0.0, 0.0),
           'price_factor': (1.0, 1.0, 1.0), 'market_mtok_month1': 0.0,
           'contract_mtok_per_month': 0.0, 'contract_price_per_mtok': 0.0, 'contract_months': 0,
           'programme_cost_once': (0.0, 0.0, 0.0), 'programme_fee_per_month': (0.0, 0.0, 0.0),
           'fixed_opex_per_month': 0.0, 'residual_share': 0.0, 'debt_share': 0.0,
           'debt_rate': 0.0, 'debt_tenor_months': 1, 'retire_month': None,
           'discount_rate': 0.0, 'residual_method': 'market',
           'resale_decline_per_quarter': (0.0, 0.0, 0.0), 'shutdown_month': (None, None, 11),
           'dscr_covenant': 1.0, 'power_escalation_per_year': 0.0,
           'opex_escalation_per_year': 0.0, 'receivable_days': 1.0, 'payable_days': 0.0,
           'capex_deposit_share': 0.0, 'capex_lead_months': 0, 'tax_life_years': None,
           'salvage_per_gpu': 0.0, 'measured_tps': 4414.06},
          []),
)
def test_every_output_and_line_of_every_scenario_equals_the_reference(case):
    site, cohorts = case
    reference = reference_scenarios(site, cohorts)
    for scenario, ref in reference.items():
        got = production_run(site, cohorts, scenario)
        bad = [f"{scenario} {name}: {got[name]!r} != {ref[name]!r}" for name in OUTPUT_NAMES
               if not close(got[name], ref[name])]
        for name in MONTHLY:
            # 0 in exact arithmetic is a few ulps of the line's size in either implementation,
            # or of the lines its declaration reads (a gain of the proceeds and book value it
            # is the difference of; a token line of the tokens it splits)
            family = [n for n in MONTHLY if "tokens" in n] if "tokens" in name else [name]
            family += OPERANDS[name]
            scale = 1e-9 * max([1.0] + [abs(x) for n in family for x in ref[n]])
            for m, (a, b) in enumerate(zip(got[name], ref[name], strict=True)):
                if not math.isclose(a, b, rel_tol=1e-9, abs_tol=scale):
                    bad.append(f"{scenario} {name}[{m}]: {a!r} != {b!r}")
                    break
        assert not bad, bad[:5]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sites())
def test_the_bridge_sums_to_the_uplift_and_equals_the_reference(case):
    """§10.3 on random sites: the four steps sum to uplift_npv to 1e-9, each step is the
    reference's (Base's inputs with more of Optimised's), and each scenario's warnings are the
    reference's rules."""
    site, cohorts = case
    result = run(_inputs(site, cohorts, "Base"))
    steps = [result.uplift[name] for name in BRIDGE_NAMES]
    uplift = result.uplift["npv"]
    scale = 1e-9 * max(1.0, abs(result.scenarios["Base"].summary["npv"]),
                       abs(result.scenarios["Optimised"].summary["npv"]))
    assert math.isclose(sum(steps), uplift, rel_tol=1e-9, abs_tol=scale)
    reference = reference_bridge(site, cohorts)
    for name, got in zip(BRIDGE_NAMES, steps, strict=True):
        assert math.isclose(got, reference[name], rel_tol=1e-9, abs_tol=scale), name
    for scenario, ref in reference_scenarios(site, cohorts).items():
        fired = result.scenarios[scenario].warnings
        assert [w.key for w in WARNINGS if w.text in fired] == ref["warnings_fired"], scenario


def test_named_sites_equal_the_reference():
    """The owned and rented sites of this module and the defaults, every scenario."""
    for overrides in (OWNED, RENTED, {}):
        values = {k: v for k, v in overrides.items() if k not in ("site_name", "scenario")
                  and "." not in k}
        if "tef_target.Optimised" in overrides:
            values["tef_target"] = (0.30, overrides["tef_target.Optimised"], 0.30)
        for scenario, ref in reference_scenarios(values).items():
            got = production_run(values, None, scenario)
            for name in OUTPUT_NAMES:
                assert close(got[name], ref[name]), (scenario, name, got[name], ref[name])


def test_the_live_scenario_is_one_of_the_three():
    result = run(make_inputs({"scenario": "Optimised"}))
    assert result.summary == result.scenarios["Optimised"].summary
    np.testing.assert_array_equal(result.lines["revenue"],
                                  result.scenarios["Optimised"].lines["revenue"])
    assert result.uplift["npv"] == pytest.approx(
        result.scenarios["Optimised"].summary["npv"] - result.scenarios["Base"].summary["npv"])


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
    """Life 2.5 years: ROUND(30) depreciation months of 512 × 29,000 ÷ 30; by the book method
    the fully depreciated fleet is sold for its salvage in month 40, with no gain (§4.1)."""
    result = run(make_inputs({**OWNED, "residual_method": "book"}))
    dep = result.lines["depreciation"]
    assert np.all(dep[:30] == pytest.approx(512 * 29_000 / 30))
    assert np.all(dep[30:] == 0)
    assert result.lines["disposal_proceeds"][-1] == 512 * 3_000
    assert result.lines["disposal_gain"][-1] == 0
    flows = result.lines["cash_flow"]
    # month H's cash flow also takes back the working capital of the month before (§10.4)
    held = result.scenarios[result.scenario].lines["working_capital"]
    assert held[-1] == 0 and held[-2] > 0
    last = result.lines["ebitda"][-1] - result.lines["tax"][-1] + 512 * 3_000 + held[-2]
    assert flows[-1] == pytest.approx(last)
    assert flows[0] == -512 * 32_000


def test_market_exit_sells_at_the_resale_price_and_books_a_gain():
    """§10.1: held 40 months, 512 GPUs bought at 32,000 fetch 32,000 × 0.9^(40 ÷ 3) each
    (7,853.3, above the 3,000 salvage); the book value is the salvage, so the gain is the
    difference, in EBIT; the proceeds' present value is the terminal value."""
    result = run(make_inputs(OWNED))
    resale = 32_000 * 0.9 ** (40 / 3)
    assert resale == pytest.approx(7_853.3, abs=0.1)
    assert result.lines["disposal_proceeds"][-1] == pytest.approx(512 * resale, rel=1e-12)
    assert result.lines["disposal_gain"][-1] == pytest.approx(512 * (resale - 3_000),
                                                              rel=1e-12)
    discount = 1.1 ** (-40 / 12)  # the default 10 % a year, 40 months
    assert result.summary["terminal_value_pv"] == pytest.approx(512 * resale * discount,
                                                                rel=1e-12)
    assert result.summary["npv_excl_terminal"] == pytest.approx(
        result.summary["npv"] - 512 * resale * discount, rel=1e-12)


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


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 50), fixed=st.floats(0, 1e5))
def test_scaling_gpus_leaves_breakeven_unchanged(k, fixed):
    base = {"gpus": 100, "measured_tps": 300_000, "fixed_opex_per_month": fixed}
    scaled = {"gpus": 100 * k, "measured_tps": 300_000 * k, "fixed_opex_per_month": fixed * k}
    a = run(make_inputs(base)).summary
    b = run(make_inputs(scaled)).summary
    assert b["breakeven_util"] == pytest.approx(a["breakeven_util"], rel=1e-12)
    assert b["npv"] == pytest.approx(a["npv"] * k, rel=1e-9)


# -- many sites in one pass ----------------------------------------------------------------------
def _same(a: object, b: object) -> bool:
    """Equal to the last bit: arrays of the same dtype and shape, NaN where NaN, texts alike."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape):
            return False
        if a.dtype.kind == "f":  # numbers in bulk: equal, or NaN where NaN
            return bool(np.array_equal(a, b, equal_nan=True))
        return _same(a.tolist(), b.tolist())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


@st.composite
def many_sites(draw) -> list:
    """Two to nine random sites: some share their scenario and ownership (one pass of the
    model), their names, currencies, GPU models and cohort names differ."""
    count = draw(st.integers(2, 9))
    out = []
    for i in range(count):
        site, cohorts = draw(sites())
        site = {**site, "site_name": draw(st.sampled_from(["Frankfurt", "Oslo", "Site " * 8])),
                "currency": draw(st.sampled_from(["USD", "EUR"])),
                "gpu_model": draw(st.sampled_from(["H200", "B200 NVL72", "MI355X"])),
                "ownership": draw(st.sampled_from(["own", "own", "rent"]))}
        scenario = draw(st.sampled_from(["Base", "Base", "Optimised", "Downside"]))
        cohorts = [{**row, "cohort": f"{row['cohort']}-{i}"} for row in cohorts]
        out.append(_inputs_of(site, cohorts, scenario))
    return out


def _inputs_of(site: dict, cohorts: list[dict], scenario: str):
    from tests.production_adapter import _inputs

    return _inputs(site, cohorts, scenario)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(many=many_sites())
def test_many_sites_in_one_pass_give_each_site_its_own_run_to_the_last_bit(many):
    """``run_many`` computes sites that share their compared texts along one axis; every line,
    output, scenario and uplift is the very number ``run`` gives the site alone."""
    from tokenfactory_xl.tfom.evaluation import run_many

    alone = [run(inputs) for inputs in many]
    together = run_many(many)
    assert len(together) == len(many)
    for one, other in zip(alone, together, strict=True):
        assert other.inputs is one.inputs or other.inputs == one.inputs
        assert one.values.keys() == other.values.keys()
        bad = [name for name in one.values if not _same(one.values[name], other.values[name])]
        assert not bad, bad[:5]
        assert _same(one.summary, other.summary)
        assert _same(one.uplift, other.uplift)
        assert one.month_ends == other.month_ends
        for name, scenario in one.scenarios.items():
            assert _same(scenario.summary, other.scenarios[name].summary)
            assert _same(scenario.lines, other.scenarios[name].lines)


def test_many_sites_share_a_pass_only_when_their_compared_texts_agree():
    """Two owned sites and one rented: the owned ones in one pass, the rented alone (the
    model compares the ownership); the site names differ and do not split them."""
    from tokenfactory_xl.tfom import evaluation

    many = [make_inputs({**OWNED, "site_name": f"Site {i}", "ownership": own}, bare="all")
            for i, own in enumerate(["own", "rent", "own"])]
    groups = {}
    for i, values in enumerate(evaluation.formula_inputs(x) for x in many):
        groups.setdefault(evaluation._texts_of(values), []).append(i)
    assert sorted(groups.values()) == [[0, 2], [1]]
    assert {"site_name", "currency", "gpu_model"} <= evaluation.compiled().model.texts_per_site
    assert "ownership" not in evaluation.compiled().model.texts_per_site
    assert [r.summary for r in evaluation.run_many(many)] == [run(x).summary for x in many]


def test_sixteen_typical_sites_in_one_pass_equal_their_own_runs():
    """Sites as a batch file gives them (the defaults, with their fleet, throughput, cost and
    availability drawn): their IRRs exist, so the rates' powers and the searches are compared
    too, to the last bit."""
    import random

    from tokenfactory_xl.tfom.evaluation import run_many

    rnd = random.Random(11)
    many = []
    for i in range(16):
        gpus = rnd.randint(8, 4096)
        many.append(make_inputs({
            "site_name": f"S{i:05d}", "gpus": gpus,
            "measured_tps": round(gpus * 10_000 * rnd.uniform(0.15, 0.6)),
            "capex_per_gpu": rnd.randint(20_000, 60_000),
            "availability": round(rnd.uniform(0.95, 0.999), 4)}))
    alone = [run(inputs) for inputs in many]
    assert sum(r.summary["irr"] is not None for r in alone) >= 8
    for one, other in zip(alone, run_many(many), strict=True):
        bad = [name for name in one.values if not _same(one.values[name], other.values[name])]
        assert not bad, bad[:5]


def test_a_site_among_others_sums_its_cohorts_proceeds_as_alone():
    """Two owned sites whose fleets differ by one GPU, in one pass: each keeps five cohorts to
    the horizon, whose proceeds round otherwise when added one after the other than in numpy's
    pairwise order. The terminal value is that pairwise sum times the last discount factor, and
    every line and output of the pass is the very number of the site's own run."""
    from tokenfactory_xl.tfom.evaluation import run_many

    def site(name: str, last_cohort_gpus: int):
        cohorts = [(3, 590, 41_000), (7, 1137, 27_000), (12, 3645, 55_000),
                   (20, last_cohort_gpus, 19_000)]
        return make_inputs({
            "site_name": name, "horizon_months": 36, "gpus": 512, "capex_per_gpu": 32_000,
            "residual_share": 0.3,
            "cohorts": [{"cohort": f"C{j}", "online_month": online, "gpus": gpus,
                         "capex_per_gpu": capex}
                        for j, (online, gpus, capex) in enumerate(cohorts, start=2)]})

    many = [site("A", 1038), site("B", 1039)]
    alone = [run(inputs) for inputs in many]
    one = alone[0].values
    at_h = np.asarray(one["c_last_base"]) == 36
    c = np.where(at_h, one["c_proceeds_base"], 0.0).tolist()
    assert sum(x != 0 for x in c) == 5  # the site's own GPUs and its four cohorts
    pairwise = ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]))
    assert sum(c) != pairwise  # the order of the additions shows in the last digit
    assert alone[0].summary["terminal_value_pv"] == pairwise * float(one["discount_factor"][36])
    for own, other in zip(alone, run_many(many), strict=True):
        assert other.summary["terminal_value_pv"] == own.summary["terminal_value_pv"]
        bad = [name for name in own.values if not _same(own.values[name], other.values[name])]
        assert not bad, bad[:5]


def test_when_the_pass_fails_each_site_runs_alone_and_only_the_bad_one_fails(monkeypatch):
    """``run_each``: the pass's failure falls back to one run per site; a site whose own run
    fails gets its exception in its place, the others their usual results."""
    from tokenfactory_xl.tfom import evaluation

    many = [make_inputs({"gpus": g}) for g in (1024, 2048, 4096)]
    expected = [run(x).summary for x in many]
    assert [r.summary for r in evaluation.run_each(many)] == expected  # the pass itself

    def broken_pass(_many):
        raise RuntimeError("pass failed")

    real_run = evaluation.run

    def run_but_128(inputs, scenario=None):
        if inputs["gpus"] == 2048:
            raise ValueError("site 2048")
        return real_run(inputs, scenario)

    monkeypatch.setattr(evaluation, "run_many", broken_pass)
    monkeypatch.setattr(evaluation, "run", run_but_128)
    first, bad, last = evaluation.run_each(many)
    assert (first.summary, last.summary) == (expected[0], expected[2])
    assert isinstance(bad, ValueError) and str(bad) == "site 2048"


def _sign_changes(flows: list[float]) -> np.ndarray:
    """The model's own sign-change lines (Base's), computed on ``flows`` as months 0 … H."""
    from tokenfactory_xl.tfom.compiler import compile_lines
    from tokenfactory_xl.tfom.formula import INDEX, InputRef, Position
    from tokenfactory_xl.tfom.operating_model import LINES
    from tokenfactory_xl.tfom.operating_model.common import CONSTANT_VALUES, _monthly

    declared = {line.name: line for line in LINES}
    cash_flow = _monthly("cash_flow_base", "", "", "money",
                         INDEX(InputRef("flows"), 1, Position()), month0=True)
    lines = (declared["month"], declared["in_horizon"], cash_flow,
             *(declared[f"{name}_base"]
               for name in ("flow_sign", "flow_month", "last_flow_month", "sign_change")))
    values = compile_lines(lines)({"flows": tuple(flows), "horizon_months": len(flows) - 1},
                                  dict(CONSTANT_VALUES), {})
    return values["sign_change_base"][1:len(flows)]


def test_a_sign_change_is_counted_across_months_without_a_flow_and_never_on_rounding():
    """§10.5's "the cash flows change sign more than once", read as the IRR reads them: −5 in
    month 0, +3, two months of nothing, −2 (a change, though not from the month before),
    1e-14 (what rounding leaves of a month that nets to 0: no flow), +4 (a change from −2)."""
    assert list(_sign_changes([-5.0, 3.0, 0.0, 0.0, -2.0, 1e-14, 4.0])) == [1, 0, 0, 1, 0, 1]
    # a flow of half a cent is a flow; below it, none, of either sign
    assert list(_sign_changes([-5.0, 0.005, -0.004, -1.0])) == [1, 0, 1]
    assert list(_sign_changes([0.0, 0.0, 7.0, -1e-9, 7.0])) == [0, 0, 0, 0]
