"""The risk draws' IRR (methodology §4.3, §4.6): found in a few Newton steps, it is the root the
model's own search, declared for the workbook, finds by sixty halvings."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

from tokenfactory_xl.tfom import risk
from tokenfactory_xl.tfom.compiler import compile_lines
from tokenfactory_xl.tfom.evaluation import LISTS, _formula_constants, formula_inputs
from tokenfactory_xl.tfom.formula import IF as IF_
from tokenfactory_xl.tfom.formula import INDEX, InputRef, Line, Position, Table, needed
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.tfom.operating_model import LINES, irr_search
from tokenfactory_xl.tfom.runtime import _RowArray

MONTHS = 121
T = Table("t_months", MONTHS)
SEARCH = irr_search("t_cash_flow", "t", "test")


@functools.cache
def _compiled_search() -> Callable:
    """The model's IRR search over a table of given cash flows, compiled once per process."""
    lines = [
        Line("month", "", "", "", Position() - 1, table=T),
        Line("in_horizon", "", "", "", IF_(Position() <= InputRef("horizon_months") + 1, 1, 0),
             table=T),
        Line("t_cash_flow", "", "", "",
             IF_(Position() <= InputRef("horizon_months") + 1,
                 INDEX(InputRef("flows"), 1, Position()), ""), table=T, missing=""),
        *SEARCH.grid, SEARCH.flow_months, *SEARCH.bracket, *SEARCH.steps, SEARCH.result,
    ]
    return compile_lines(lines)


def declared_search(flows: np.ndarray, horizons: np.ndarray) -> dict[str, np.ndarray]:
    """The model's IRR search, as declared, over given cash flows (months past a row's horizon
    ignored): every line's values, the monthly IRR of each row as ``irr`` (NaN: none) and the
    grid's rates as ``grid``."""
    out = _compiled_search()({"flows": flows.view(_RowArray), "horizon_months": horizons},
                             _formula_constants(), LISTS)
    values = {k: np.asarray(v) for k, v in out.items()}
    values["irr"] = np.broadcast_to(out["irr_monthly_t"], (len(flows),)).astype(float)
    values["grid"] = np.asarray(out["irr_rate_t"], dtype=float)
    return values


def cash_flow_sets(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cash flows of many kinds: projects (an outlay, then income that may fade), flows that
    change sign many times, flows without a sign change, flows of whole numbers whose sum is 0
    (a root at exactly 0), short and long horizons."""
    rng = np.random.default_rng(seed)
    flows = np.empty((n, MONTHS))
    horizons = rng.integers(1, MONTHS, n).astype(float)
    kinds = rng.integers(0, 6, n)
    for i, kind in enumerate(kinds):
        m = np.arange(MONTHS)
        if kind == 0:  # a project: an outlay, then income growing or fading
            flows[i] = rng.uniform(0.2, 3) * 1e6 * rng.uniform(0.9, 1.02) ** m
            flows[i, 0] = -rng.uniform(1e6, 2e8)
        elif kind == 1:  # a project with a late outlay (two sign changes or more)
            flows[i] = rng.uniform(0.5, 2) * 1e6 + rng.normal(0, 2e5, MONTHS)
            flows[i, 0] = -rng.uniform(1e7, 8e7)
            flows[i, rng.integers(1, MONTHS)] -= rng.uniform(1e7, 1e8)
        elif kind == 2:  # noise: many sign changes
            flows[i] = rng.normal(0, 1e6, MONTHS)
        elif kind == 3:  # no sign change
            flows[i] = rng.uniform(0, 1e6, MONTHS) * rng.choice([-1, 1])
        elif kind == 4:  # whole numbers summing to 0: the NPV at a rate of 0 is exactly 0
            flows[i] = rng.integers(-1000, 1000, MONTHS).astype(float)
            h = int(horizons[i])
            flows[i, 0] -= flows[i, :h + 1].sum()
        else:  # losses at the start, huge income later: a root far above 0 (or far below)
            flows[i] = -rng.uniform(1, 5e6, MONTHS)
            flows[i, rng.integers(1, MONTHS):] = rng.uniform(1e7, 1e9)
    return flows, horizons


def given(flows: np.ndarray, horizons: np.ndarray) -> np.ndarray:
    """The flows as the model holds them: blank (NaN) past each row's horizon."""
    return np.where(np.arange(MONTHS)[None, :] <= horizons[:, None], flows, np.nan)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_same_root_as_the_declared_search(seed):
    flows, horizons = cash_flow_sets(seed, 600)
    declared = declared_search(flows, horizons)
    want, grid = declared["irr"], declared["grid"]
    got = risk.monthly_irr(given(flows, horizons), grid)
    # the same draws have no IRR
    assert np.array_equal(np.isnan(got), np.isnan(want))
    # a real mix: roots above 0 and below it, none, and more than one sign change
    assert np.count_nonzero(np.isnan(want)) > 50
    assert np.count_nonzero(want > 0) > 100 and np.count_nonzero(want < 0) > 50
    found = ~np.isnan(want)
    assert np.max(np.abs(got[found] - want[found])) <= 1e-12


def test_a_root_at_exactly_zero_and_flows_of_one_month():
    flows = np.full((4, MONTHS), np.nan)
    flows[0, :3] = [-3.0, 1.0, 2.0]  # sums to 0: the IRR is 0
    flows[1, :1] = [-5.0]  # one month: no sign change
    flows[2, :2] = [-100.0, 110.0]  # 10 % a month
    flows[3, :2] = [100.0, -110.0]  # the same root, the signs turned round
    declared = declared_search(np.nan_to_num(flows), np.array([2.0, 0.0, 1.0, 1.0]))
    want, grid = declared["irr"], declared["grid"]
    got = risk.monthly_irr(flows, grid)
    # by hand: −3 + v + 2v² = 0 at v = 1; −100 + 110 v = 0 at v = 1 ÷ 1.1
    assert abs(got[0]) <= 1e-15 and abs(want[0]) <= 1e-15
    assert np.isnan(got[1]) and np.isnan(want[1])
    assert got[2] == pytest.approx(0.1, abs=1e-15) and got[3] == pytest.approx(0.1, abs=1e-15)
    assert np.max(np.abs(got[[0, 2, 3]] - want[[0, 2, 3]])) <= 1e-12


def test_the_risk_draws_irr_is_the_models():
    """Each draw's yearly IRR is what the model's IRR line gives for that draw."""
    # prices low enough that some draws never pay back (no IRR), and the book exit of §4.1
    inputs = make_inputs({"horizon_months": 72, "price_factor": (0.6, 1, 0.3),
                          "residual_method": "book", "range_low_price_factor": 0.5,
                          "range_high_price_factor": 1.5})
    draws = risk.draw(inputs, 400)
    npv, irr = risk.evaluate(inputs, draws)
    reference = compile_lines(needed(LINES, ["out_npv_base", "out_irr_base"]))
    values = {**draws}
    base = formula_inputs(inputs)
    given_ = dict(base)
    for name, column in values.items():
        if isinstance(base[name], tuple):
            row = np.tile(np.asarray(base[name], dtype=float), (len(column), 1))
            row[:, 0] = column
            given_[name] = row.view(_RowArray)
        else:
            given_[name] = np.asarray(column, dtype=float)
    own = np.asarray(base["fleet_capex_per_gpu"], dtype=float)
    factor = values["capex_per_gpu"] / float(base["capex_per_gpu"])
    given_["fleet_capex_per_gpu"] = (own[None, :] * factor[:, None]).view(_RowArray)
    out = reference(given_, _formula_constants(), LISTS)
    want = risk._numbers(out["out_irr_base"], len(irr))
    assert np.array_equal(npv, np.asarray(out["out_npv_base"], dtype=float))
    assert np.array_equal(np.isnan(irr), np.isnan(want))
    assert np.count_nonzero(np.isnan(want)) > 0 and np.count_nonzero(~np.isnan(want)) > 100
    monthly = lambda y: (1 + y) ** (1 / 12) - 1  # noqa: E731
    assert np.nanmax(np.abs(monthly(irr) - monthly(want))) <= 1e-12


@pytest.mark.parametrize("seed", [4, 5])
def test_the_brackets_are_the_declared_searchs(seed):
    """Each row's bracket above 0 and below it: the positions the model's own lines find
    (``irr_found_…``, ``irr_position_…``: MATCH of the MIN of the candidates)."""
    flows, horizons = cash_flow_sets(seed, 600)
    declared = declared_search(flows, horizons)
    grid = declared["grid"]
    brackets = risk.IrrBrackets(given(flows, horizons), grid)
    for side, (rows, low, high, *_) in zip(("above", "below"), brackets.kinds, strict=True):
        found = np.broadcast_to(declared[f"irr_found_{side}_t"], (600,)) == 1
        position = np.broadcast_to(declared[f"irr_position_{side}_t"], (600,))
        assert np.array_equal(rows, np.flatnonzero(found)) and rows.size > 200
        at = np.searchsorted(grid, low)
        assert np.array_equal(grid[at], low) and np.array_equal(grid[at + 1], high)
        assert np.array_equal(at + 1, position[rows].astype(float))


def _brackets_by_hand(change: np.ndarray, grid: np.ndarray) -> list[dict[int, int]]:
    """Row by row, the rule as the workbook states it: of the positions j with a change, those
    with grid[j] ≥ 0 (above) and those with grid[j + 1] ≤ 0 (below), the first holding the
    smallest grid[j] (above) or the smallest −grid[j + 1] (below)."""
    out: list[dict[int, int]] = [{}, {}]
    for r, row in enumerate(change):
        above = [(grid[j], j) for j in range(len(row)) if row[j] and grid[j] >= 0]
        below = [(-grid[j + 1], j) for j in range(len(row)) if row[j] and grid[j + 1] <= 0]
        for side, found in enumerate((above, below)):
            if found:
                least = min(key for key, _ in found)
                out[side][r] = next(j for key, j in found if key == least)
    return out


@pytest.mark.parametrize("order", ["rising", "shuffled"])
def test_the_brackets_rule_on_any_grid(order):
    """The positions of the brackets, by the search along each row on a grid of rising rates
    and by the table of candidates on any other, are the rule's."""
    rng = np.random.default_rng(11)
    grid = np.concatenate([-np.geomspace(0.9, 1e-4, 30), [0.0], np.geomspace(1e-4, 5, 30)])
    if order == "shuffled":
        grid = rng.permutation(grid)
    change = rng.random((300, grid.size - 1)) < rng.choice([0.0, 0.02, 0.3], (300, 1))
    got = risk._brackets(change, grid)
    want = _brackets_by_hand(change, grid)
    for (rows, at), by_hand in zip(got, want, strict=True):
        assert dict(zip(rows.tolist(), at.tolist(), strict=True)) == by_hand
    assert 0 < len(want[0]) < 300 and 0 < len(want[1]) < 300


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=float).view(np.int64)


@pytest.mark.parametrize("seed", [6, 7])
def test_many_searches_at_once_are_each_search_alone_to_the_bit(seed):
    """The median's IRR searches every pass's rows at once (``risk._roots``): each row's root is
    the one its pass's search alone gives, bit for bit, whatever the rows beside it (cash flows
    of every kind in passes of different sizes, all rows or a few of each, a pass with none)."""
    flows, horizons = cash_flow_sets(seed, 1_200)
    grid = declared_search(flows[:2], horizons[:2])["grid"]
    cut = [0, 500, 517, 518, 1_018, 1_200]
    passes = [risk.IrrBrackets(given(flows[a:b], horizons[a:b]), grid)
              for a, b in zip(cut[:-1], cut[1:], strict=True)]
    rng = np.random.default_rng(seed)
    masks = [rng.random(len(p)) < 0.1 for p in passes]
    masks[2][:] = False
    for only in (None, masks):
        searches = [(p, None if only is None else only[i]) for i, p in enumerate(passes)]
        together = risk._roots(searches)
        for (p, mask), got in zip(searches, together, strict=True):
            alone = p.roots(mask)
            assert np.array_equal(bits(got), bits(alone))
    assert sum(np.count_nonzero(~np.isnan(r)) for r in together) > 50


def test_a_slope_of_many_groups_is_each_groups_alone_to_the_bit():
    """The Newton step's slope (a matrix-vector product, whose last bits depend on the rows
    beside each row, with this machine's BLAS) is taken for each group of rows apart: each
    group's slope is the one its rows alone give, bit for bit."""
    flows, horizons = cash_flow_sets(8, 700)
    cf = np.nan_to_num(given(flows, horizons))
    rate = np.random.default_rng(8).uniform(-0.05, 0.2, len(cf))
    groups = [13, 0, 300, 1, 21, 365]
    npv, slope = risk._npv_and_slope(cf, rate, groups)
    starts = np.cumsum([0, *groups])
    for start, count in zip(starts[:-1], groups, strict=True):
        alone = risk._npv_and_slope(cf[start:start + count], rate[start:start + count])
        assert np.array_equal(bits(npv[start:start + count]), bits(alone[0]))
        assert np.array_equal(bits(slope[start:start + count]), bits(alone[1]))
