"""Sensitivity and risk (methodology §8): the tornado and the Monte Carlo run the model itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.tfom import risk, sampling
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs

SITE = {"horizon_months": 96, "gpus": 2048, "measured_tps": 2_000_000,
        "cohorts": [{"cohort": "B200 2028", "online_month": 13, "gpus": 512,
                     "capex_per_gpu": 55_000, "life_years": 5}]}


def main(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def summary_npv(capsys, sets: dict[str, object], *extra: str) -> float:
    argv = ["summary", "--json", *extra]
    for name, value in sets.items():
        argv += ["--set", f"{name}={value!r}"]
    status, out, err = main(capsys, *argv)
    assert status == 0, err
    return json.loads(out)["npv"]


@pytest.mark.parametrize("scenario", ["Base", "Optimised"])
def test_each_flex_is_what_summary_set_gives_exactly(capsys, scenario):
    # The "done when" of the tornado: low and high NPVs equal `summary --set DRIVER=VALUE`,
    # bit for bit (one model), and the centre is the live NPV.
    inputs = make_inputs({"scenario": scenario})
    result = risk.tornado(inputs)
    assert result.npv == run(inputs).summary["npv"]
    assert sorted(f.name for f in result.drivers) == sorted(risk.TORNADO_DRIVERS)
    for flex in result.drivers:
        for value, npv in ((flex.low, flex.npv_low), (flex.high, flex.npv_high)):
            assert npv == summary_npv(capsys, {flex.name: value}, "--scenario", scenario), \
                (flex.name, value)


def test_ranges_are_the_spec_defaults_around_the_live_value():
    """methodology §10.6's defaults: factors of the live value, offsets for the decline, the
    availability and the discount rate, kept inside each driver's allowed range."""
    inputs = make_inputs({"availability": 0.998, "discount_rate": 0.1})
    assert risk.flex_values(inputs, "discount_rate") == pytest.approx((0.08, 0.12))
    assert risk.flex_values(inputs, "availability") == pytest.approx((0.993, 1.0))  # 1.003 kept
    assert risk.flex_values(inputs, "decline_per_quarter") == pytest.approx((0.05, 0.15))
    assert risk.flex_values(inputs, "tef_target") == pytest.approx((0.3 * 0.75, 0.3 * 1.10))
    assert risk.flex_values(inputs, "sell_through_target") == pytest.approx((0.72, 0.88))
    assert risk.flex_values(inputs, "capex_per_gpu") == pytest.approx((34_000, 46_000))
    assert risk.flex_values(inputs, "life_years") == pytest.approx((3.2, 4.8))
    assert risk.flex_values(inputs, "resale_decline_per_quarter") == pytest.approx((0.05, 0.15))
    # a market that shrinks: v × 0.5 is the higher end, so the range turns round
    shrinking = make_inputs({"market_growth_per_quarter": -0.2})
    assert risk.flex_values(shrinking, "market_growth_per_quarter") == pytest.approx((-0.3, -0.1))
    # no demand limit (0): nothing to flex
    assert risk.flex_values(inputs, "market_mtok_month1") == (0, 0)
    # a range typed by the user
    wide = make_inputs({"range_low_price_factor": 0.5, "range_high_price_factor": 1.0})
    assert risk.flex_values(wide, "price_factor") == pytest.approx((0.5, 1.0))


def test_the_tornado_is_sorted_by_swing():
    swings = [f.swing for f in risk.tornado(make_inputs(SITE)).drivers]
    assert swings == sorted(swings, reverse=True) and swings[0] > 0


def test_capex_and_life_move_every_cohort_alike():
    inputs = make_inputs(SITE)
    flex = next(f for f in risk.tornado(inputs).drivers if f.name == "capex_per_gpu")
    factor = flex.low / inputs["capex_per_gpu"]
    cohorts = [{**c, "capex_per_gpu": c["capex_per_gpu"] * factor} for c in inputs.cohorts]
    moved = run(inputs.replace({"capex_per_gpu": flex.low, "cohorts": cohorts}))
    assert flex.npv_low == moved.summary["npv"]
    only_site = run(inputs.replace({"capex_per_gpu": flex.low})).summary["npv"]
    assert flex.npv_low > only_site  # the cohort's own CapEx fell too: more NPV


def test_risk_is_reproducible_and_ordered():
    inputs = make_inputs(SITE)
    a, b = risk.risk(inputs, 2_000), risk.risk(inputs, 2_000)
    assert a.as_json() == b.as_json()
    assert a.npv_p10 <= a.npv_p50 <= a.npv_p90
    assert 0 <= a.prob_npv_negative <= 1
    # the figures are the percentiles of the draws' NPVs, as PERCENTILE.INC gives them
    assert a.npv_p50 == pytest.approx(float(np.median(a.npv)), rel=1e-15)
    assert a.prob_npv_negative == np.count_nonzero(a.npv < 0) / 2_000


def test_each_draw_is_the_model_run_with_the_drawn_values():
    inputs = make_inputs(SITE)
    draws = risk.draw(inputs, 300)
    npv, irr = risk.evaluate(inputs, draws)
    for i in (0, 17, 299):
        changed = {name: (values[i],) + tuple(inputs[name][1:])  # Base is live
                   if isinstance(inputs[name], tuple) else values[i]
                   for name, values in draws.items()}
        factor = draws["capex_per_gpu"][i] / inputs["capex_per_gpu"]  # every cohort alike
        changed["cohorts"] = [{**c, "capex_per_gpu": c["capex_per_gpu"] * factor}
                              for c in inputs.cohorts]
        result = run(inputs.replace(changed))
        assert npv[i] == result.summary["npv"]
        want = result.summary["irr"]
        assert (np.isnan(irr[i]) and want is None) or irr[i] == pytest.approx(want, rel=1e-12)


def test_draws_are_triangular_around_the_live_value():
    inputs = make_inputs({"tef_target": (0.4, 0.65, 0.25)})
    draws = risk.draw(inputs, 5_000)
    assert risk.triangle(inputs, "tef_target") == pytest.approx((0.3, 0.4, 0.44))
    assert draws["tef_target"].min() >= 0.3 and draws["tef_target"].max() <= 0.44
    # the triangle's mean is (low + mode + high) / 3
    assert draws["tef_target"].mean() == pytest.approx((0.3 + 0.4 + 0.44) / 3, abs=0.003)
    assert draws["decline_per_quarter"].min() >= 0.05
    assert draws["decline_per_quarter"].max() <= 0.15
    assert draws["decline_per_quarter"].mean() == pytest.approx(0.10, abs=0.003)
    assert list(draws) == list(risk.TORNADO_DRIVERS[:9])


def test_the_live_npv_lies_inside_its_own_distribution():
    """§10.6: on the default site the Base NPV lies between its P10 and P90."""
    inputs = make_inputs({})
    result = risk.risk(inputs, 2_000)
    live = run(inputs).summary["npv"]
    assert result.npv_p10 < live < result.npv_p90
    assert result.npv_mean == pytest.approx(float(np.mean(result.npv)), rel=1e-15)


def test_a_range_that_is_not_around_the_live_value_is_refused():
    with pytest.raises(InputError) as caught:
        make_inputs({"range_low_tef_target": 1.2, "range_high_tef_target": 1.1})
    assert "range_low_tef_target=1.2: is above range_high_tef_target (1.1)" in str(caught.value)
    with pytest.raises(InputError) as caught:
        make_inputs({"range_high_discount_rate": -0.01})
    assert "range_high_discount_rate=-0.01: leaves the live value" in str(caught.value)


def test_degenerate_ranges_collapse_to_the_live_npv():
    same = {f"range_{side}_{name}": 1 if risk._HOW[name] == "factor" else 0
            for name in risk.RISK_DRIVERS for side in ("low", "high")}
    inputs = make_inputs({**SITE, **same})
    result = risk.risk(inputs, 1_000)
    live = run(inputs).summary
    assert result.npv_p10 == result.npv_p50 == result.npv_p90 == live["npv"]
    assert result.prob_npv_negative == (1.0 if live["npv"] < 0 else 0.0)
    assert result.irr_p50 == pytest.approx(live["irr"], rel=1e-12)


def test_a_median_among_draws_without_irr_is_none():
    # an hour of GPU sold far below its cost and a fleet sold at its (nil) book value at the
    # horizon: no draw pays back, no IRR
    inputs = make_inputs({"price_factor": (0.05, 0.05, 0.04), "residual_method": "book"})
    result = risk.risk(inputs, 500)
    assert result.irr_p50 is None and result.prob_npv_negative == 1.0


@pytest.mark.parametrize("site", [{}, {"scenario": "Optimised"}, SITE,
                                  {"price_factor": (0.3, 0.3, 0.3), "residual_method": "book"}])
@pytest.mark.parametrize("draws", [1, 2, 3, 501])
def test_the_median_irr_is_that_of_every_draws_irr(site, draws):
    """risk() searches only the draws whose IRR may be the median's: its median is the
    PERCENTILE.INC of every draw's IRR (none ranked lowest), as evaluate() finds each."""
    inputs = make_inputs(site)
    _, irr = risk.evaluate(inputs, risk.draw(inputs, draws))
    every = risk.percentile(np.where(np.isnan(irr), -np.inf, irr), 50)
    got = risk.risk(inputs, draws).irr_p50
    assert (got is None and not np.isfinite(every)) or got == every


def test_percentile_is_numpys_linear_percentile_to_the_last_bit():
    """PERCENTILE.INC as risk computes it is np.percentile's linear method, bit for bit: ranks
    between two values, the last rank, draws without an IRR (−inf) beside numbers, a NaN."""
    rng = np.random.default_rng(4)
    for count in (1, 2, 3, 10, 11, 500, 10_001):
        for trial in range(6):
            values = rng.normal(size=count) * 10.0 ** rng.integers(-5, 8, count)
            if trial == 1:
                values[rng.random(count) < 0.5] = -np.inf
            if trial == 2:
                values[:] = -np.inf
            if trial == 3:
                values[rng.integers(0, count)] = np.nan
            for q in (0, 10, 50, 90, 100):
                with np.errstate(invalid="ignore"):
                    want = float(np.percentile(values, q, method="linear"))
                got = risk.percentile(values, q)
                assert np.array_equal(np.float64(got).view(np.int64),
                                      np.float64(want).view(np.int64)) or (
                    np.isnan(got) and np.isnan(want)), (count, trial, q)


def test_risk_and_sensitivity_commands(capsys):
    status, out, err = main(capsys, "risk", "--json", "--draws", "400", "--set", "gpus=2048")
    assert status == 0, err
    figures = json.loads(out)
    assert list(figures) == ["draws", "seed", "npv_p10", "npv_p50", "npv_p90", "npv_mean",
                             "prob_npv_negative", "irr_p50"]
    want = risk.risk(make_inputs({"gpus": 2048}), 400).as_json()
    assert figures == want
    status, out, err = main(capsys, "risk", "--draws", "400")
    assert status == 0 and "NPV P10" in out and "seed 20261203" in out
    assert "tef_target: 22.50% · 30.00% · 33.00%" in out  # 0.30 × 0.75, 0.30, 0.30 × 1.10
    status, out, err = main(capsys, "sensitivity", "--json")
    assert status == 0
    document = json.loads(out)
    assert document["npv"] == run(make_inputs({})).summary["npv"]
    assert [d["name"] for d in document["drivers"]] == [
        f.name for f in risk.tornado(make_inputs({})).drivers]
    status, out, _ = main(capsys, "sensitivity")
    assert status == 0 and out.splitlines()[2].split()[0] == "Driver"


def test_risk_refuses_zero_draws(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["risk", "--draws", "0"])
    assert stop.value.code == 2
    assert "--draws" in capsys.readouterr().err


def test_a_site_capex_of_zero_leaves_its_cohorts_own_capex_as_typed():
    # ±20 % of 0 is 0: the flex changes nothing, and no cohort's own CapEx turns blank
    inputs = make_inputs({**SITE, "capex_per_gpu": 0, "salvage_per_gpu": 0})
    flex = next(f for f in risk.tornado(inputs).drivers if f.name == "capex_per_gpu")
    assert flex.low == flex.high == 0
    assert flex.npv_low == flex.npv_high == run(inputs).summary["npv"]


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=float).view(np.int64)


@pytest.mark.parametrize("seed", [0, 1, 7, risk.SEED, 2**32, 2**64 + 3, 2**200 + 12_345])
def test_the_generator_is_numpys_pcg64_to_the_last_bit(seed):
    """The draws' generator gives the doubles numpy's PCG64 gives from the same seed (seeded as
    ``default_rng`` seeds it, seeds of one to seven 32-bit words), call after call, and ends in
    the same state."""
    ours = sampling.Pcg64(seed)
    theirs = np.random.Generator(np.random.PCG64(seed))
    state = theirs.bit_generator.state["state"]
    assert (ours.state, ours.inc) == (state["state"], state["inc"])
    for count in (1, 2, 3, 7, 1_000, 4_097, 0, 10_001, 2 * sampling.DOUBLES_AT_ONCE + 5):
        assert np.array_equal(bits(ours.doubles(count)), bits(theirs.random(count))), count
        assert ours.state == theirs.bit_generator.state["state"]["state"], count


@pytest.mark.parametrize("site", [{}, SITE, {"scenario": "Optimised", "horizon_months": 36}])
@pytest.mark.parametrize("draws", [1, 2, 999])
def test_the_draws_are_numpys_triangular_draws_to_the_last_bit(site, draws):
    """Each driver's draws are ``default_rng(seed).triangular``'s, one driver after the
    other; a driver whose range is one value takes no number from the generator."""
    inputs = make_inputs(site)
    for seed in (risk.SEED, 3):
        rng = np.random.default_rng(seed)
        got = risk.draw(inputs, draws, seed)
        assert list(got) == list(risk.RISK_DRIVERS)
        for name in risk.RISK_DRIVERS:
            low, mode, high = risk.triangle(inputs, name)
            want = rng.triangular(low, mode, high, draws) if high > low \
                else np.full(draws, mode)
            assert np.array_equal(bits(got[name]), bits(want)), (name, seed)
    # a range of one value (sell-through's, here) leaves the generator to the next driver
    one = make_inputs({**site, "range_low_sell_through_target": 1,
                       "range_high_sell_through_target": 1})
    got, rng = risk.draw(one, draws), np.random.default_rng(risk.SEED)
    assert (got["sell_through_target"] == risk.live_value(one, "sell_through_target")).all()
    for name in risk.RISK_DRIVERS:
        low, mode, high = risk.triangle(one, name)
        if high > low:
            assert np.array_equal(bits(got[name]), bits(rng.triangular(low, mode, high, draws)))


def test_a_triangle_draw_at_its_ends_and_its_checks_are_numpys():
    """The mode at either end of the range, ranges of every size, and numpy's refusals."""
    for low, mode, high in ((0.0, 0.0, 1.0), (0.0, 1.0, 1.0), (-3e7, 1.5, 2e9),
                            (0.1, 0.1000000001, 0.1000000002), (-1.0, -0.999, -0.5)):
        uniform = sampling.Pcg64(11).doubles(5_000)
        want = np.random.default_rng(11).triangular(low, mode, high, 5_000)
        assert np.array_equal(bits(sampling.triangular(uniform, low, mode, high)), bits(want))
    for low, mode, high in ((1.0, 0.5, 2.0), (0.0, 3.0, 2.0)):
        with pytest.raises(ValueError) as ours:
            sampling.check_triangle(low, mode, high)
        with pytest.raises(ValueError) as theirs:
            np.random.default_rng(1).triangular(low, mode, high, 3)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError):
        sampling.Pcg64(-1)


def test_a_risk_run_does_not_import_numpy_random():
    """``numpy.random`` is not imported by the risk command's draws (8 ms of its CPU)."""
    import subprocess
    import sys

    code = ("import sys; from tokenfactory_xl.tfom import risk; "
            "from tokenfactory_xl.tfom.inputs import make_inputs; "
            "r = risk.risk(make_inputs({}), 50); "
            "print('numpy.random' in sys.modules, r.npv_p50)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    imported, median = done.stdout.split()
    assert imported == "False" and float(median) == risk.risk(make_inputs({}), 50).npv_p50
