"""Input checking: every bad value is reported with its name, value, what is allowed and the fix."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from tokenfactory_xl import InputError, make_inputs
from tokenfactory_xl.core.catalogue import BY_NAME, INPUTS, SCENARIO_NAMES


def problems(values, **kw) -> list[str]:
    with pytest.raises(InputError) as info:
        make_inputs(values, **kw)
    return [str(p) for p in info.value.problems]


def test_defaults_are_the_spec_defaults():
    site = make_inputs()
    assert site["gpus"] == 1024 and isinstance(site["gpus"], int)
    assert site["start_date"] == dt.date(2027, 1, 1)
    assert site["tef_target"] == (0.30, 0.65, 0.30)
    assert site["sell_through_target"] == (0.80, 0.85, 0.60)
    assert site["decline_per_quarter"] == (0.10, 0.10, 0.25)
    assert site.tef_now == pytest.approx(0.30)


def test_every_default_passes_its_own_check():
    for spec in INPUTS:
        values = spec.default if spec.per_scenario else (spec.default,)
        for value in values:
            assert spec.parse(value) == value, spec.name


def test_percentage_typed_without_sign_gets_the_hint():
    [message] = problems({"availability": 99.5})
    assert message == "availability=99.5: looks like a percentage; enter 99.5% or 0.995"


def test_months_typed_for_years_get_the_hint():
    # a depreciation life of 1 to 10 years: 48 is 4 years typed as months, 30 is 2.5 years
    [message] = problems({"life_years": 48})
    assert message == ("life_years=48: looks like months; allowed: a number from 1 to 10; "
                       "enter 4 (years: 48 months is 4 years)")
    [message] = problems({"life_years": 30})
    assert message.endswith("enter 2.5 (years: 30 months is 2.5 years)")
    # 200 months would be 16.7 years, out of range either way: no hint
    [message] = problems({"life_years": 200})
    assert message == "life_years=200: is out of range; allowed: a number from 1 to 10"
    assert make_inputs({"life_years": 10})["life_years"] == 10


def test_percent_text_and_fraction_are_accepted():
    assert make_inputs({"availability": "99.5%"})["availability"] == pytest.approx(0.995)
    assert make_inputs({"availability": 0.995})["availability"] == 0.995
    assert make_inputs({"gpus": "2,048"})["gpus"] == 2048


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"gpus": "many"}, "gpus='many'"[:5]),
        ({"gpus": -5}, "gpus=-5: is out of range; allowed: a whole number from 1 to 1,000,000"),
        ({"gpus": 10.5}, "gpus=10.5: must be a whole number from 1 to 1,000,000"),
        ({"pue": math.nan}, "pue=nan: is not a number (NaN)"),
        ({"capex_per_gpu": math.inf}, "capex_per_gpu=inf: is infinite"),
        ({"capex_per_gpu": True}, "capex_per_gpu=True: is TRUE/FALSE, not a number"),
        ({"theoretical_tps_per_gpu": 0}, "allowed: a number above 0"),
        ({"ownership": "lease"}, "ownership=lease: must be one of own, rent"),
        ({"scenario": "Optimized"}, "did you mean Optimised?"),
        ({"start_date": "2027-01-15"}, "is not the first of a month"),
        ({"start_date": "next year"}, "is not a date"),
        ({"currency": "dollars"}, "three-letter ISO 4217"),
        ({"site_name": "x" * 81}, "shorten it to 80 characters"),
        ({"site_name": "bad\x07name"}, "control characters"),
        ({"decline_per_quarter": 47}, "looks like a percentage; enter 47% or 0.47"),
        ({"decline_per_quarter": 1}, "allowed: a fraction from 0 to 0.99"),
        ({"tef_target.Optimised": 120}, "tef_target.Optimised=120: is out of range"),
        ({"tef_target.Optimised": 1.2}, "tef_target.Optimised=1.2: looks like a percentage"),
        ({"gpus.Base": 3}, "gpus has one value for all scenarios"),
        ({"tef_target.Best": 0.7}, "is not a scenario"),
        ({"gpu": 8}, "gpu=8: is not a known input; did you mean gpus?"),
        ({"sla": 0.99}, "sla=0.99: is computed by the model, not an input"),
    ],
)
def test_bad_values_name_input_value_and_rule(values, expected):
    [message] = problems(values)
    assert expected in message


def test_text_where_number_expected():
    [message] = problems({"gpus": "many"})
    assert message == "gpus=many: is not a number; allowed: a whole number from 1 to 1,000,000"


def test_p99_not_above_p50():
    [message] = problems({"ttft_p50_ms": 800, "ttft_p99_ms": 800})
    assert message.startswith("ttft_p99_ms=800: must be above ttft_p50_ms (800 ms)")


def test_measured_above_theoretical():
    [message] = problems({"gpus": 10, "theoretical_tps_per_gpu": 1000, "measured_tps": 20_000})
    assert "measured_tps=20000: is above the theoretical 10,000 tokens/s" in message
    assert "TEF now would exceed 100%" in message


def test_salvage_above_capex():
    [message] = problems({"capex_per_gpu": 1000, "salvage_per_gpu": 2000})
    assert message.startswith("salvage_per_gpu=2000: is more than capex_per_gpu (1,000)")


def test_several_problems_are_reported_together():
    found = problems({"gpus": -1, "pue": 9, "availability": 99, "ttft_p99_ms": 100,
                      "colour": "red"}, where="row 7")
    assert len(found) == 5
    assert all(p.startswith("row 7: ") for p in found)
    assert {p.split(":")[1].strip().split("=")[0] for p in found} == {
        "gpus", "pue", "availability", "ttft_p99_ms", "colour"}


def test_error_message_lists_every_problem():
    with pytest.raises(InputError) as info:
        make_inputs({"gpus": -1, "pue": 9})
    text = str(info.value)
    assert text.splitlines()[0] == "2 inputs need fixing:"
    assert "gpus=-1" in text and "pue=9" in text


def test_bare_per_scenario_value_sets_live_or_all():
    live = make_inputs({"scenario": "Optimised", "tef_target": 0.7})
    assert live["tef_target"] == (0.30, 0.7, 0.30)
    every = make_inputs({"tef_target": 0.7}, bare="all")
    assert every["tef_target"] == (0.7, 0.7, 0.7)
    one = make_inputs({"tef_target": 0.7, "tef_target.downside": 0.4}, bare="all")
    assert one["tef_target"] == (0.7, 0.7, 0.4)
    triple = make_inputs({"tef_target": [0.3, 0.6, 0.2]})
    assert triple["tef_target"] == (0.3, 0.6, 0.2)
    assert triple.live("tef_target", "Optimised") == 0.6


def test_empty_values_take_the_default():
    site = make_inputs({"gpus": "", "tef_target.Optimised": None, "pue": "  "})
    assert site["gpus"] == BY_NAME["gpus"].default
    assert site["tef_target"][1] == 0.65
    assert site["pue"] == 1.3


def test_choices_and_dates_are_normalised():
    site = make_inputs({"scenario": "downside", "ownership": "RENT", "currency": "eur",
                        "start_date": dt.datetime(2028, 3, 1)})
    assert (site["scenario"], site["ownership"], site["currency"]) == ("Downside", "rent", "EUR")
    assert site["start_date"] == dt.date(2028, 3, 1)


def test_replace_and_flat_round_trip():
    site = make_inputs({"scenario": "Downside"})
    changed = site.replace({"decline_per_quarter": 0.3})
    assert changed["decline_per_quarter"] == (0.10, 0.10, 0.3)
    assert make_inputs(changed.flat()) == changed
    assert set(site.flat()) >= {f"tef_target.{s}" for s in SCENARIO_NAMES}


# -- memory: many sites hold each repeated value once --------------------------------------------
def test_sharing_keeps_every_value_and_its_type():
    from tokenfactory_xl.tfom.inputs import SiteInputs

    memo: dict[object, object] = {}
    first = SiteInputs({"a": 1.2, "b": (0.1, 0.2, 0.3), "c": 1, "d": "own",
                        "e": dt.date(2027, 1, 1)})
    second = SiteInputs({"a": 1.2, "b": (0.1, 0.2, 0.3), "c": True, "d": "own",
                         "e": dt.datetime(2027, 1, 1)})
    zeros = SiteInputs({"a": -0.0, "b": (0.0, -0.0, 1.0), "c": math.nan, "d": None, "e": [1]})
    one, two, three = (m.sharing(memo) for m in (first, second, zeros))
    assert dict(one) == dict(first) and dict(two) == dict(second) and type(one) is SiteInputs
    # equal values of the same type are one object; 1 and TRUE, a date and a datetime are not
    assert two["a"] is one["a"] and two["b"] is one["b"] and two["d"] is one["d"]
    assert type(two["c"]) is bool and type(one["c"]) is int
    assert type(two["e"]) is dt.datetime and type(one["e"]) is dt.date
    # a zero keeps its sign, NaN stays NaN, an unhashable value is kept as it is
    assert math.copysign(1, three["a"]) == -1 and math.copysign(1, three["b"][1]) == -1
    assert math.isnan(three["c"]) and three["d"] is None and three["e"] == [1]


def test_the_sites_of_a_file_share_their_repeated_values(tmp_path):
    from tokenfactory_xl.sites.load import load_sites

    path = tmp_path / "sites.csv"
    path.write_text("site_name,gpus,pue,tef_target\nA,512,1.25,0.4\nB,512,1.25,0.4\n"
                    "C,1024,1.3,0.5\n", encoding="utf-8")
    a, b, c = (row.inputs for row in load_sites(path).rows)
    assert a["pue"] == b["pue"] == 1.25 and a["pue"] is b["pue"]
    assert a["tef_target"] is b["tef_target"] and a["gpus"] is b["gpus"]
    assert c["pue"] == 1.3 and c["gpus"] == 1024
    assert a == make_inputs({"site_name": "A", "gpus": 512, "pue": 1.25, "tef_target": 0.4},
                            bare="all")


def test_version_3_inputs_refuse_bad_values_with_the_fix():
    """A shutdown before month 1 or past 120 and an unknown residual method name the input,
    the value and what is allowed."""
    with pytest.raises(InputError) as caught:
        make_inputs({"shutdown_month.Downside": 0, "residual_method": "fair"})
    text = str(caught.value)
    assert "shutdown_month.Downside=0" in text and "a whole number from 1 to 120, or blank" in text
    assert "residual_method=fair: must be one of market, book" in text
    with pytest.raises(InputError) as caught:
        make_inputs({"shutdown_month": 121})
    assert "shutdown_month=121" in str(caught.value)
    site = make_inputs({"shutdown_month.Downside": 24})
    assert site["shutdown_month"] == (None, None, 24)


def test_a_growth_above_100_percent_survives_a_change_to_the_last_bit():
    # a growth of 560.64…% a quarter is typed with its sign; a later change of another input
    # hands it back as the checked number it is, not as a bare 5.6 read as a likely typo
    site = make_inputs({"market_growth_per_quarter": "560.6443440139841%"})
    changed = site.replace({"gpus": 2048})
    assert changed["market_growth_per_quarter"] == site["market_growth_per_quarter"]
    assert changed["market_growth_per_quarter"][0] == 5.606443440139841
    with pytest.raises(InputError, match="looks like a percentage"):
        make_inputs({"market_growth_per_quarter": 5.606443440139841})


def test_allows_answers_as_replace_does_for_every_numeric_input():
    """``SiteInputs.allows`` (what a solve asks of each value it scans) says yes exactly when
    ``replace`` checks the site without a problem: over every numeric input, each scenario,
    values inside and outside its range, and sites whose rules tie inputs together."""
    import numpy as np

    sites = [make_inputs({}),
             make_inputs({"ownership": "rent", "debt_share": 0.5, "prefill_tps_per_gpu": 20_000,
                          "decode_tps_per_gpu": 5_000}),
             make_inputs({"horizon_months": 36,
                          "cohorts": [{"cohort": "b", "online_month": 12, "gpus": 100}]})]
    compared = refused = 0
    for site in sites:
        for spec in INPUTS:
            if spec.kind not in ("number", "integer", "fraction"):
                continue
            keys = [f"{spec.name}.{s}" for s in SCENARIO_NAMES] + [spec.name] \
                if spec.per_scenario else [spec.name]
            low = spec.low if spec.low is not None else -1e6
            high = spec.high if spec.high is not None else 1e7
            for key in keys:
                for value in [*np.linspace(low - 1, high + 1, 9).tolist(), 0.0, 1.0, 5.0, 150.0]:
                    value = int(round(value)) if spec.kind == "integer" else value
                    try:
                        site.replace({key: value})
                        allowed = True
                    except InputError:
                        allowed = False
                    assert site.allows(key, value) is allowed, (key, value)
                    compared += 1
                    refused += not allowed
    assert compared > 2_000 and 0 < refused < compared   # both answers were exercised
