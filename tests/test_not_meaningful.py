"""A ratio without meaning shows "n/m", not a number and not "none" (methodology §10.7): the
EBITDA margin on revenue ≤ 0, the cost per Mtok with no tokens sold. One declaration gives the
workbook's formula, the Python model's value (NaN: ``None`` in a summary) and the stored text;
LibreOffice and Gnumeric recompute it in ``tests/workbook/test_engines.py`` (input set
``nothing_sold_downside``) and ``tests/test_gnumeric.py``."""

from __future__ import annotations

import json

from tests.tools import command
from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.tfom.operating_model import OUTPUT_MISSING
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook import values as wbv

# The Downside sells at a price factor of 0: its revenue is 0 by hand (tokens × 0), its tokens
# sold are not.
FREE_DOWNSIDE = {"price_factor.Downside": 0}
# Nothing is ever sold in the Downside: no revenue and no tokens sold.
NOTHING_SOLD = {"sell_through_start": 0, "sell_through_target.Downside": 0}


def stored(inputs, line: str) -> object:
    place = wbm.plan().lines[line]
    return wbv.cell_values(wbm.plan(), inputs)[place.sheet][place.coords[0]]


def test_the_margin_on_no_revenue_is_nm_in_python_formula_and_stored_value():
    inputs = make_inputs({**FREE_DOWNSIDE, "scenario": "Downside"})
    result = run(inputs)
    downside = result.scenarios["Downside"].summary
    assert downside["revenue_total"] == 0
    assert downside["tokens_sold_total"] > 0
    assert downside["ebitda_margin"] is None
    assert downside["cost_per_mtok"] > 0  # tokens were sold: the cost per Mtok has a meaning
    base = result.scenarios["Base"].summary
    assert base["ebitda_margin"] == base["ebitda_total"] / base["revenue_total"]
    assert stored(inputs, "out_ebitda_margin_downside") == "n/m"
    assert stored(inputs, "out_ebitda_margin") == "n/m"  # the live scenario is the Downside
    assert stored(inputs, "out_ebitda_margin_base") == base["ebitda_margin"]
    book = wbm.build_workbook(inputs, risk_draws=0)
    place = wbm.plan().lines["out_ebitda_margin_downside"]
    assert book[place.sheet][place.coords[0]].value == (
        '=IF(out_revenue_total_downside<=0,"n/m",'
        'out_ebitda_total_downside/out_revenue_total_downside)')
    # the Years sheet's margin of the live scenario: "n/m" in every year it runs
    years = wbm.plan().lines["year_margin"]
    shown = [wbv.cell_values(wbm.plan(), inputs)[years.sheet][c] for c in years.coords]
    assert set(shown) == {"n/m", ""} and shown[0] == "n/m"


def test_no_tokens_sold_makes_the_cost_per_mtok_nm():
    inputs = make_inputs({**NOTHING_SOLD, "scenario": "Downside"})
    downside = run(inputs).scenarios["Downside"].summary
    assert downside["tokens_sold_total"] == 0
    assert downside["cost_per_mtok"] is None and downside["ebitda_margin"] is None
    assert stored(inputs, "out_cost_per_mtok_downside") == "n/m"
    # the split of a cost that has no meaning is no figure: "none", as without the split
    assert stored(inputs, "out_cost_per_mtok_input_downside") == "none"
    # the master check still holds: "n/m" is an answer, not an error
    assert stored(inputs, "check_outputs_compute") == "OK"
    assert stored(inputs, "check_master") == "OK"


def test_only_ratios_say_nm():
    assert {name for name, text in OUTPUT_MISSING.items() if text == "n/m"} == {
        "ebitda_margin", "cost_per_mtok", "realised_sell_through", "tokens_per_mw"}
    assert OUTPUT_MISSING["irr"] == OUTPUT_MISSING["payback_months"] == "none"


def test_summary_prints_nm_and_json_names_the_nulls_that_are_nm():
    args = [a for k, v in NOTHING_SOLD.items() for a in ("--set", f"{k}={v}")]
    text = command.run("summary", *args)
    assert text.returncode == 0, text.stderr
    margin = next(line for line in text.stdout.splitlines() if line.endswith(" ebitda_margin"))
    assert margin.split()[-2:] == ["n/m", "ebitda_margin"]
    assert "none" not in margin
    payback = next(line for line in text.stdout.splitlines()
                   if line.endswith(" payback_months"))
    # the Downside never pays back: no figure ("none"), not a ratio without meaning
    assert payback.split()[-2:] == ["none", "payback_months"]
    got = json.loads(command.run("summary", "--json", *args).stdout)
    downside = got["scenarios"]["Downside"]
    assert downside["ebitda_margin"] is None and downside["cost_per_mtok"] is None
    assert downside["not_meaningful"] == ["ebitda_margin", "cost_per_mtok"]
    assert got["scenarios"]["Base"]["not_meaningful"] == []
    assert got["not_meaningful"] == []  # the live scenario (Base) sells
