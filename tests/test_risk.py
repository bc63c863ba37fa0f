"""Sensitivity and risk (TFOM-SPEC §8): the tornado and the Monte Carlo run the model itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenfactory_xl import cli, risk
from tokenfactory_xl.catalogue import BY_NAME
from tokenfactory_xl.inputs import make_inputs
from tokenfactory_xl.operating_model import run

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


def test_flexes_are_20_percent_kept_in_range_and_decline_moves_5_points():
    inputs = make_inputs({"availability": 0.995, "discount_rate": 0.1})
    assert risk.flex_values(inputs, "discount_rate") == pytest.approx((0.08, 0.12))
    assert risk.flex_values(inputs, "availability") == (0.995 * 0.8, 1.0)  # 1.194 kept at 100 %
    base_decline = inputs["decline_per_quarter"][0]
    assert risk.flex_values(inputs, "decline_per_quarter") == pytest.approx(
        (base_decline - 0.05, base_decline + 0.05))


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
                   for name, values in draws.items()}
        result = run(inputs.replace(changed))
        assert npv[i] == result.summary["npv"]
        want = result.summary["irr"]
        assert (np.isnan(irr[i]) and want is None) or irr[i] == pytest.approx(want, rel=1e-12)


def test_draws_are_triangular_between_the_scenarios():
    inputs = make_inputs({"tef_target": (0.3, 0.65, 0.25),
                          "decline_per_quarter": (0.10, 0.10, 0.25)})
    draws = risk.draw(inputs, 5_000)
    assert risk.triangle(inputs, "tef_target") == (0.25, 0.3, 0.3)  # high = the live value
    assert draws["tef_target"].min() >= 0.25 and draws["tef_target"].max() <= 0.3
    assert draws["decline_per_quarter"].min() >= 0.10
    assert draws["decline_per_quarter"].max() <= 0.25
    # the triangle's mean is (low + mode + high) / 3
    assert draws["decline_per_quarter"].mean() == pytest.approx(0.15, abs=0.005)


def test_three_equal_scenarios_collapse_to_the_live_npv():
    same = {name: (BY_NAME[name].default[0],) * 3 for name in risk.RISK_DRIVERS}
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


def test_risk_and_sensitivity_commands(capsys):
    status, out, err = main(capsys, "risk", "--json", "--draws", "400", "--set", "gpus=2048")
    assert status == 0, err
    figures = json.loads(out)
    assert list(figures) == ["draws", "seed", "npv_p10", "npv_p50", "npv_p90",
                             "prob_npv_negative", "irr_p50"]
    want = risk.risk(make_inputs({"gpus": 2048}), 400).as_json()
    assert figures == want
    status, out, err = main(capsys, "risk", "--draws", "400")
    assert status == 0 and "NPV P10" in out and "seed 20261203" in out
    assert "tef_target: 30.0% · 30.0% · 30.0%" in out
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
