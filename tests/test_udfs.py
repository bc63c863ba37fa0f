"""The Excel functions called as Python, the way xlwings calls them.

Values are checked against the spec's worked examples (methodology sections 1–3, the seeds) and
against hand computations written out here, not against the model's own output. Ranges are
passed as xlwings passes them with ``ndim=2``: lists of rows; 1-D lists are what a Python caller
may pass.
"""

from __future__ import annotations

import datetime as dt
import inspect
import math
from statistics import NormalDist

import numpy as np
import pytest

from tokenfactory_xl.addin import cells, params, udfs
from tokenfactory_xl.addin.udfs import (
    AVOIDED_CAPEX,
    BLENDED_PRICE,
    BREAKEVEN_UTIL,
    COST_PER_MTOK,
    DAILY_TOKEN_VALUE,
    ECONOMIC_LIFE_MONTHS,
    EQUIV_GPU,
    GPU_HOUR_COST,
    IMPLIED_PRICE_PER_MTOK,
    LOAD_FACTOR,
    MARGIN_AT_UTIL,
    PAYBACK_MONTHS,
    PRICE_AFTER,
    REVENUE_PER_GPU_HOUR,
    SLO_ATTAINMENT,
    TEF,
    TFI,
    TOKENS_PER_DAY,
    TPM,
    ArgumentError,
)

approx = pytest.approx


# -- the spec's worked examples ------------------------------------------------------------------
def test_seed_000_tef_and_equivalent_gpus():
    assert TEF(210_000, 700_000) == approx(0.30)
    assert EQUIV_GPU(1_000, 0.30, 0.65) == approx(2_166.67, abs=0.005)
    assert AVOIDED_CAPEX(1_000, 0.30, 0.65, 1) == approx(1_166.67, abs=0.005)


def test_seed_004_breakeven_and_margins():
    assert BREAKEVEN_UTIL(1.89, 5_600, 0.25) == approx(0.375)
    assert BREAKEVEN_UTIL(1.89, 5_000, 0.25) == approx(0.42)
    assert MARGIN_AT_UTIL(1.89, 5_600, 0.25, 0.20) == approx(-0.875)
    assert MARGIN_AT_UTIL(1.89, 5_600, 0.25, 0.40) == approx(0.0625)


def test_seed_004_implied_fleet_price():
    # 155 x 10^12 tokens a day on 128 GPUs at US$38 per GPU-hour: about US$0.000753 per Mtok
    assert IMPLIED_PRICE_PER_MTOK(155e12, 128, 38) == approx(0.000753, abs=5e-7)


def test_seed_001_price_falls_to_about_a_thirteenth_in_a_year():
    assert PRICE_AFTER(1, 0.47, 12) == approx(0.53**4)
    assert 1 / PRICE_AFTER(13, 0.47, 12) == approx(1 / (13 * 0.0789), rel=1e-3)


# -- hand computations ---------------------------------------------------------------------------
def test_simple_products():
    assert TFI(0.30, 0.99, 0.80) == approx(0.30 * 0.99 * 0.80)
    assert LOAD_FACTOR(2e9, 1e10) == approx(0.2)
    assert TPM(1_000) == 60_000
    assert TOKENS_PER_DAY(1_000) == 86_400_000


def test_unit_economics_by_hand():
    assert COST_PER_MTOK(1.89, 5_600, 0.375) == approx(0.25)  # the breakeven price at breakeven
    assert REVENUE_PER_GPU_HOUR(5_600, 0.25, 0.5) == approx(5_600 * 3_600 * 0.5 * 0.25 / 1e6)
    assert DAILY_TOKEN_VALUE(5_600, 0.25, 0.5) == approx(24 * 2.52)


def test_gpu_hour_cost_by_hand():
    depreciation = 40_000 / (4 * 8_760)
    assert GPU_HOUR_COST(40_000, 0, 4, 1.0, 1.3, 0.08) == approx(depreciation + 0.104)
    assert GPU_HOUR_COST(40_000, 0, 4, 1.0, 1.3, 0.08, 0.15) == approx(depreciation + 0.254)
    assert GPU_HOUR_COST(40_000, None, 4, 1.0, 1.3, 0.08) == approx(depreciation + 0.104)
    assert GPU_HOUR_COST(40_000, 4_000, 4, 1.0, 1.3, 0.08, 0.15) == approx(
        36_000 / 35_040 + 0.254)


def test_gpu_hour_cost_with_the_cost_of_capital():
    """methodology §10.8: at 10 % a year the capital is an annuity: i = 1.1^(1/12) − 1, over
    N = 48 months vᴺ = 1.1^−4; 40,000 × i ÷ (1 − vᴺ) ÷ 730 = 1.378416 a GPU-hour, and the
    default site's GPU-hour costs 1.632415611. A salvage of 4,000 comes back after 4 years,
    worth 4,000 × vᴺ today. Rate 0 (the default) is the straight line."""
    i = 1.1 ** (1 / 12) - 1
    v_n = 1.1 ** -4
    assert GPU_HOUR_COST(40_000, 0, 4, 1.0, 1.3, 0.08, 0.15, 0.10) == approx(1.632415611,
                                                                            rel=1e-9)
    assert GPU_HOUR_COST(40_000, 4_000, 4, 1.0, 1.3, 0.08, 0.15, 0.10) == approx(
        (40_000 - 4_000 * v_n) * i / (1 - v_n) / 730 + 0.254)
    assert GPU_HOUR_COST(40_000, 0, 4, 1.0, 1.3, 0.08, 0.15, 0) == approx(
        40_000 / 35_040 + 0.254)


def test_blended_price_by_hand():
    input_price = 0.5 * 0.07 + 0.5 * 0.28
    list_price = 0.75 * input_price + 0.25 * 1.10
    assert BLENDED_PRICE(0.28, 1.10, 0.25, 0.5, 0.07, 0.2, 0.5) == approx(list_price * 0.9)
    # defaults: no cache hits, the cached price is the input price, no batch work
    assert BLENDED_PRICE(0.28, 1.10, 0.25) == approx(0.75 * 0.28 + 0.25 * 1.10)
    assert BLENDED_PRICE(0.28, 1.10, 0.25, 0.5) == approx(0.75 * 0.28 + 0.25 * 1.10)
    assert BLENDED_PRICE(0.28, 1.10, 0.25, 0, None, 1) == approx((0.75 * 0.28 + 0.275) * 0.5)


def test_economic_life_by_hand():
    assert ECONOMIC_LIFE_MONTHS(5, 1, 0.47) == approx(3 * math.log(1 / 5) / math.log(0.53))
    assert ECONOMIC_LIFE_MONTHS(1, 2, 0.10) == 0  # already below its cash cost


def test_slo_attainment_lognormal_by_hand():
    z99 = NormalDist().inv_cdf(0.99)
    sigma = math.log(1_500 / 400) / z99
    expected = NormalDist().cdf(math.log(2_000 / 400) / sigma)
    assert SLO_ATTAINMENT(400, 1_500, 2_000) == approx(expected)
    assert SLO_ATTAINMENT(400, 1_500, 400) == approx(0.5)  # the median meets half the requests


def test_payback_by_hand():
    # cumulative -100, -50, +10: crosses in month 2, 50 of its 60 needed -> 1 + 50/60
    assert PAYBACK_MONTHS([-100, 50, 60]) == approx(1 + 50 / 60)
    assert PAYBACK_MONTHS([[-100], [50], [60]]) == approx(1 + 50 / 60)  # a column
    assert PAYBACK_MONTHS([[-100, 50, 60, None, None]]) == approx(1 + 50 / 60)  # a row, padded


# -- ranges in, ranges out -----------------------------------------------------------------------
def test_scalar_call_returns_a_plain_number():
    assert isinstance(TEF(1, 2), float)
    assert isinstance(TEF([[1]], [[2]]), float)  # a single cell, as classic Excel passes it


def test_one_dimensional_range():
    assert TEF([210, 0, 70], 700) == approx([0.3, 0.0, 0.1])


def test_column_range_spills_as_a_column():
    result = BREAKEVEN_UTIL([[1.89], [2.52], [0]], [[5_600], [5_600], [5_600]], 0.25)
    assert result == [[approx(0.375)], [approx(0.5)], [0.0]]


def test_row_and_column_broadcast_to_a_grid():
    grid = MARGIN_AT_UTIL(1.89, 5_600, [[0.25, 0.50]], [[0.2], [0.4]])
    assert np.shape(grid) == (2, 2)
    assert grid[0][0] == approx(-0.875) and grid[1][0] == approx(0.0625)
    assert grid[0][1] == approx(1 - 0.1875 / 0.2) and grid[1][1] == approx(1 - 0.1875 / 0.4)


def test_numpy_arrays_are_accepted():
    result = TPM(np.array([[1.0], [2.0]]))
    assert result == [[60.0], [120.0]]


# -- empty cells ---------------------------------------------------------------------------------
def test_empty_cells_give_empty_results_in_place():
    assert TEF([[210], [None], [70]], 700) == [[approx(0.3)], [None], [approx(0.1)]]
    assert TEF([[210], [70]], [[None], [700]]) == [[None], [approx(0.1)]]


def test_an_empty_single_cell_gives_an_empty_result():
    assert TEF(None, 700) is None
    assert TEF([[None]], [[700]]) is None
    assert PAYBACK_MONTHS([[-100, 50, 60]]) == approx(1 + 50 / 60)


def test_empty_text_counts_as_empty():
    assert TEF([["  "], [70]], 700) == [[None], [approx(0.1)]]


def test_empty_optional_cells_take_the_default():
    expected = 0.75 * 0.28 + 0.25 * 1.10
    assert BLENDED_PRICE(0.28, 1.10, 0.25, [[None]], [[None]], [[None]], [[None]]) == approx(
        expected)
    # cached-input price defaults to each row's own input price
    result = BLENDED_PRICE([[0.28], [0.40]], 1.10, 0.25, 1.0, [[None], [0.10]])
    assert result == [[approx(0.75 * 0.28 + 0.275)], [approx(0.75 * 0.10 + 0.275)]]


# -- undefined elements: Excel's own error codes ---------------------------------------------------
def test_division_by_zero_marks_only_that_element():
    assert TEF([[210_000], [1]], [[700_000], [0]]) == [[approx(0.3)], ["#DIV/0!"]]
    assert TEF(1, 0) == "#DIV/0!"
    assert EQUIV_GPU(1_000, [[0.3], [0]], 0.65) == [[approx(2_166.67, abs=0.005)], ["#DIV/0!"]]
    assert MARGIN_AT_UTIL(1.89, 5_600, 0.25, [[0], [0.4]]) == [["#DIV/0!"], [approx(0.0625)]]
    assert BREAKEVEN_UTIL(1.89, [[0, 5_600]], 0.25) == [["#DIV/0!", approx(0.375)]]
    assert COST_PER_MTOK(1.89, 5_600, 0) == "#DIV/0!"
    assert LOAD_FACTOR(1, 0) == "#DIV/0!"
    assert IMPLIED_PRICE_PER_MTOK(0, 128, 38) == "#DIV/0!"
    assert AVOIDED_CAPEX(1_000, 0, 0.65, 40_000) == "#DIV/0!"


def test_no_finite_economic_life_is_num():
    assert ECONOMIC_LIFE_MONTHS([[5, 5]], [[1, 0]], [[0, 0.1]]) == [["#NUM!", "#NUM!"]]


def test_payback_not_reached_is_na():
    assert PAYBACK_MONTHS([-100, 10, 10]) == "#N/A"


# -- bad arguments: one message naming the argument and the fix ----------------------------------
def message(call, *args) -> str:
    with pytest.raises(ArgumentError) as caught:
        call(*args)
    return str(caught.value)


def test_percentage_typed_without_the_percent_sign():
    assert message(TFI, 0.3, 99.5, 0.8) == (
        "sla=99.5: looks like a percentage; enter 99.5% or 0.995")
    assert "enter 65% or 0.65" in message(MARGIN_AT_UTIL, 1.89, 5_600, 0.25, 65)


def test_percent_text_is_a_fraction():
    assert TFI("30%", "99%", "80%") == approx(0.3 * 0.99 * 0.8)


def test_text_where_a_number_is_expected():
    text = message(TEF, "lots", 700_000)
    assert text.startswith("actual_tps=lots: is not a number; allowed: a number of at least 0")


def test_true_false_and_dates_are_not_numbers():
    assert "TRUE/FALSE" in message(TPM, True)
    assert "not a number" in message(TPM, dt.datetime(2027, 1, 1))


def test_negative_counts_and_amounts():
    assert message(EQUIV_GPU, -5, 0.3, 0.65).startswith(
        "gpus=-5: is out of range; allowed: a whole number from 1 to 1,000,000")
    assert message(TOKENS_PER_DAY, -1).startswith("tps=-1: is out of range")
    assert message(EQUIV_GPU, 10.5, 0.3, 0.65) == (
        "gpus=10.5: must be a whole number from 1 to 1,000,000; enter a whole number, e.g. 10")


def test_the_position_in_a_range_is_named():
    text = message(TFI, 0.3, [[0.99], [0.98], [97]], 0.8)
    assert text == "row 3 of sla: sla=97: looks like a percentage; enter 97% or 0.97"
    assert message(TPM, [[1, 2, "x"]]).startswith("column 3 of tps: tps=x: is not a number")
    assert message(TPM, [[1, 2], [3, -4]]).startswith("row 2, column 2 of tps: tps=-4:")


def test_p99_must_exceed_p50():
    assert message(SLO_ATTAINMENT, 400, 300, 2_000) == (
        "ttft_p99=300: must be above ttft_p50 (400); enter the measured 99th percentile, which "
        "is above the median")
    assert message(SLO_ATTAINMENT, 400, [[1_500], [400]], 2_000).startswith("row 2 of ttft_p99")


def test_salvage_above_capex():
    assert message(GPU_HOUR_COST, 40_000, 50_000, 4, 1, 1.3, 0.08, 0).startswith(
        "salvage_per_gpu=50000: is more than capex_per_gpu (40,000)")


def test_catalogue_ranges_apply_to_site_quantities():
    assert message(GPU_HOUR_COST, 40_000, 0, 4, 1, 0.5, 0.08).startswith(
        "pue=0.5: is out of range; allowed: a number from 1 to 3")


def test_ranges_that_do_not_fit_together():
    assert message(TEF, [[1], [2], [3]], [[1], [2]]) == (
        "the ranges do not fit together (actual_tps is 3 × 1, theoretical_tps is 2 × 1); give "
        "ranges of the same size, or single cells")


def test_ragged_rows():
    assert "different lengths" in message(TPM, [[1, 2], [3]])


def test_payback_takes_one_series():
    assert "one row or one column" in message(PAYBACK_MONTHS, [[-100, 50], [60, 70]])
    assert message(PAYBACK_MONTHS, [-100, None, 60]) == (
        "cash_flows has an empty cell at month 1; enter 0 for a month without cash flow")
    assert "empty" in message(PAYBACK_MONTHS, [[None, None]])
    assert "cash_flows=abc" in message(PAYBACK_MONTHS, [-100, "abc"])


# -- how each runtime shows a bad argument --------------------------------------------------------
def test_classic_excel_shows_the_message_as_the_cells_text(monkeypatch):
    monkeypatch.setattr(cells, "runtime", lambda: "classic")
    assert TFI(0.3, 99.5, 0.8) == "sla=99.5: looks like a percentage; enter 99.5% or 0.995"
    assert PAYBACK_MONTHS([[-100, 50], [60, 70]]).startswith("cash_flows is a block")
    assert TFI(0.3, 0.99, 0.8) == approx(0.2376)


def test_officejs_raises_an_xlwings_error_that_is_not_retried(monkeypatch):
    import xlwings

    monkeypatch.setattr(cells, "runtime", lambda: "officejs")
    with pytest.raises(xlwings.XlwingsError, match="sla=99.5: looks like a percentage"):
        TFI(0.3, 99.5, 0.8)


def test_runtime_follows_the_decorators_xlwings_bound(monkeypatch):
    import xlwings

    assert cells.runtime() == "python"  # on Linux xlwings' decorators are no-ops
    stand_in = type(lambda: None)(TPM.__code__, {})
    for module, expected in (("xlwings.udfs", "classic"),
                             ("xlwings.pro.udfs_officejs", "officejs"),
                             ("xlwings.server", "officejs")):
        stand_in.__module__ = module
        monkeypatch.setattr(xlwings, "func", stand_in)
        assert cells.runtime() == expected


# -- every function: scalars, 1-D and 2-D ranges, empty cells, text -------------------------------
#: One valid call per function and its value worked out by hand (no model code involved).
HAND = {
    "TEF": ((210_000, 700_000), 0.3),
    "TFI": ((0.5, 0.9, 0.8), 0.36),
    "EQUIV_GPU": ((100, 0.25, 0.5), 200.0),
    "AVOIDED_CAPEX": ((100, 0.25, 0.5, 40_000), 4_000_000.0),
    "LOAD_FACTOR": ((3e9, 1.2e10), 0.25),
    "TPM": ((250,), 15_000.0),
    "TOKENS_PER_DAY": ((250,), 21_600_000.0),
    "BREAKEVEN_UTIL": ((1.8, 10_000, 0.1), 0.5),          # 1.8 / (10,000 x 3,600 x 0.1 / 1e6)
    "MARGIN_AT_UTIL": ((1.8, 10_000, 0.1, 0.8), 0.375),   # 1 - 0.5 / 0.8
    "COST_PER_MTOK": ((1.8, 10_000, 0.5), 0.1),
    "REVENUE_PER_GPU_HOUR": ((10_000, 0.1, 0.5), 1.8),
    "DAILY_TOKEN_VALUE": ((10_000, 0.1, 0.5), 43.2),
    "IMPLIED_PRICE_PER_MTOK": ((2.4e9, 10, 2), 0.2),      # 2 x 10 x 24 / 2,400
    "GPU_HOUR_COST": ((35_040, 0, 4, 1, 1.5, 0.1, 0.05), 1.2),  # 1 + 0.15 + 0.05
    "BLENDED_PRICE": ((0.2, 1.0, 0.5, 0, 0.2, 0.5, 0.5), 0.45),  # 0.6 x 0.75
    "PRICE_AFTER": ((1.0, 0.19, 6), 0.6561),              # 0.81 ** 2
    "ECONOMIC_LIFE_MONTHS": ((4.0, 1.0, 0.75), 3.0),       # 3 x ln(1/4) / ln(1/4)
    "SLO_ATTAINMENT": ((100, 1_000, 100), 0.5),
}


#: (function, argument position) for every argument of every function above.
ARGUMENTS = [(name, i) for name, (args, _) in HAND.items() for i in range(len(args))]


def argument_name(name: str, position: int) -> str:
    return list(inspect.signature(getattr(udfs, name)).parameters)[position]


@pytest.mark.parametrize("name", list(HAND))
def test_each_function_by_hand_as_a_scalar(name):
    args, expected = HAND[name]
    assert getattr(udfs, name)(*args) == approx(expected)


@pytest.mark.parametrize(("name", "position"), ARGUMENTS)
def test_each_argument_as_a_column_with_an_empty_cell(name, position):
    args, expected = HAND[name]
    column = list(args)
    column[position] = [[args[position]], [None], [args[position]]]
    result = getattr(udfs, name)(*column)
    optional = params.PARAMS[argument_name(name, position)].default
    if optional is None:
        assert result == [[approx(expected)], [None], [approx(expected)]]
    else:  # an empty optional cell takes the default
        assert len(result) == 3 and result[0] == [approx(expected)]
    row = list(args)
    row[position] = [args[position], None, args[position]]
    result = getattr(udfs, name)(*row)
    assert result[0] == approx(expected) and result[2] == approx(expected)


@pytest.mark.parametrize(("name", "position"), ARGUMENTS)
def test_text_in_each_argument_is_named(name, position):
    args, _ = HAND[name]
    bad = list(args)
    bad[position] = "n/a"
    argument = argument_name(name, position)
    assert message(getattr(udfs, name), *bad).startswith(f"{argument}=n/a: is not a number")


# -- the shared conventions, as a new function (GPU_SPEC …) would use them -----------------------
def test_text_arguments_use_the_catalogue_rule(monkeypatch):
    from tokenfactory_xl.core.catalogue import BY_NAME

    monkeypatch.setitem(params.PARAMS, "scenario",
                        params.Param("scenario", BY_NAME["scenario"], "A scenario"))
    factor = {"Base": 1.0, "Optimised": 2.0, "Downside": 0.5}

    def formula(scenario, tps):
        return np.vectorize(lambda s, t: factor[s] * t if s else np.nan)(scenario, tps)

    assert cells._call(formula, ("scenario", "tps"), ("optimised", 10)) == 20.0
    assert cells._call(formula, ("scenario", "tps"), ([["Base"], [None], ["Downside"]], 10)) == [
        [10.0], [None], [5.0]]
    with pytest.raises(ArgumentError, match="scenario=Bse: must be one of Base, Optimised, "
                                            "Downside; did you mean Base?"):
        cells._call(formula, ("scenario", "tps"), ("Bse", 10))


# -- long ranges: the fast readings agree with the cell-by-cell one ------------------------------
def test_a_long_column_reads_as_its_cells_do_one_by_one():
    # 5,000 rows of ints, floats, numpy numbers and empty cells; each row's BREAKEVEN_UTIL is
    # the same function called on that row's three cells alone
    rng = np.random.default_rng(7)
    cost = [[float(x)] for x in rng.uniform(0.5, 3.0, 5_000)]
    tps = [[int(x)] for x in rng.integers(1_000, 20_000, 5_000)]
    price = [[np.float64(x)] for x in rng.uniform(0.05, 2.0, 5_000)]
    cost[17], tps[301], price[4_999] = [None], [None], [None]
    spilled = BREAKEVEN_UTIL(cost, tps, price)
    one_by_one = [[BREAKEVEN_UTIL(c[0], t[0], p[0])] for c, t, p in zip(cost, tps, price,
                                                                          strict=True)]
    assert spilled == one_by_one
    assert spilled[17] == spilled[301] == spilled[4_999] == [None]
    as_arrays = BREAKEVEN_UTIL(*(np.array(x, dtype=float) for x in (
        [[c[0] if c[0] is not None else np.nan] for c in cost],
        [[t[0] if t[0] is not None else np.nan] for t in tps],
        [[p[0] if p[0] is not None else np.nan] for p in price])))
    assert as_arrays == spilled


@pytest.mark.parametrize(("cell", "says"), [
    (True, "tps=True"), ("x", "tps=x: is not a number"),
    (dt.datetime(2027, 1, 1), "not a number"), (-3, "tps=-3: is out of range")])
def test_one_bad_cell_deep_in_a_long_range_is_named(cell, says):
    column = [[1_000.0]] * 20_000
    column[12_344] = [cell]
    text = message(TPM, column)
    assert text.startswith("row 12345 of tps: ") and says in text


def test_a_text_argument_is_read_once_per_distinct_value_and_named_where_bad():
    from tokenfactory_xl.addin.udfs import GPU_SPEC

    gpus = [["H200"], ["B200"]] * 5_000
    assert GPU_SPEC(gpus, "hbm_gb") == [[141.0], [180.0]] * 5_000
    gpus[7_777] = ["H2000"]
    assert message(GPU_SPEC, gpus, "hbm_gb").startswith(
        "row 7778 of gpu: gpu=H2000: is not in the gpu catalogue")
    # the number 1 and TRUE are different cells, although Python calls them equal
    assert message(GPU_SPEC, [["H200"], [1], [True]], "hbm_gb").startswith("row 2 of gpu:")


def test_the_garbage_collector_is_left_as_it_was():
    import gc

    column = [[1.0]] * 1_000
    assert gc.isenabled()
    TPM(column)
    assert gc.isenabled()
    gc.disable()
    try:
        TPM(column)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- error values and Pyodide's jsnull in the cells -------------------------------------------
def test_an_error_in_a_cell_comes_back_as_that_error_at_its_position():
    # xlwings hands an error cell over as its text (every argument is read with err_to_str)
    assert TEF("#N/A", 700_000) == "#N/A"
    assert TEF([[210_000], ["#REF!"], [None]], 700_000) == [[0.3], ["#REF!"], [None]]
    # an error in a single cell spreads along the range it is combined with, as in Excel
    assert BREAKEVEN_UTIL([[1.89], [2.52]], "#VALUE!", 0.25) == [["#VALUE!"], ["#VALUE!"]]
    # the first argument's error wins where two arguments hold one
    assert TEF([["#N/A"], [70_000]], [["#DIV/0!"], ["#NUM!"]]) == [["#N/A"], ["#NUM!"]]
    # an error in an optional argument is not taken for an empty cell (the default)
    assert GPU_HOUR_COST(40_000, 0, 4, 1.0, 1.3, 0.08, "#N/A") == "#N/A"


def test_every_argument_is_read_with_its_errors():
    # what xlwings registers is checked in tests/test_udfs_registration.py
    source = inspect.getsource(udfs)
    assert source.count("@xw.arg(") == source.count("err_to_str=True, doc=") > 80


class JsNull:
    """Stands in for Pyodide's ``pyodide.ffi.JsNull`` (Pyodide 0.28 and later)."""


def test_pyodides_jsnull_reads_as_an_empty_cell():
    assert TEF(JsNull(), 700_000) is None
    assert TEF([[210_000], [JsNull()]], 700_000) == [[0.3], [None]]
    # an omitted optional argument that arrives as jsnull takes its default (0: no other opex)
    depreciation = 40_000 / (4 * 8_760)
    assert GPU_HOUR_COST(40_000, JsNull(), 4, 1.0, 1.3, 0.08, JsNull()) == approx(
        depreciation + 0.104)


def test_months_typed_for_a_life_in_years_get_the_hint():
    assert message(GPU_HOUR_COST, 40_000, 0, 60, 1, 1.3, 0.08).startswith(
        "life_years=60: looks like months; allowed: a number from 1 to 10; enter 5 (years: 60 "
        "months is 5 years)")
