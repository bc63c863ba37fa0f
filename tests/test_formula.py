"""The formula language: how an expression reads in Excel and what numpy makes of it.

Each Excel rendering below is what a spreadsheet engine parses back to the same tree (Excel's
precedence: unary minus before ^, then * /, + -, &, comparisons); each numpy value is what
Excel shows for the same formula on the same cells.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tokenfactory_xl.tfom.compiler import compile_lines
from tokenfactory_xl.tfom.excel import ExcelContext, excel
from tokenfactory_xl.tfom.formula import (
    IF,
    INDEX,
    MIN,
    SUM,
    SUMPRODUCT,
    Cell,
    Const,
    InputRef,
    Line,
    Position,
    Row,
    Table,
    lit,
)


class Names(ExcelContext):
    def cell(self, line, shift):
        return {0: "X", -1: "W", 1: "Y"}[shift] + line

    def row(self, line):
        return f"R_{line}"


def xl(e) -> str:
    return excel(e, Names())


def test_precedence_brackets_only_where_needed():
    a, b, c = InputRef("a"), InputRef("b"), InputRef("c")
    assert xl(a - (b - c)) == "in_a-(in_b-in_c)"
    assert xl((a - b) - c) == "in_a-in_b-in_c"
    assert xl(a * (b + c)) == "in_a*(in_b+in_c)"
    assert xl(a / (b * c)) == "in_a/(in_b*in_c)"
    assert xl((1 + a) ** (-(b * c))) == "(1+in_a)^(-(in_b*in_c))"
    assert xl(-a) == "-in_a"
    # comparisons do not chain: (x>0)=(y>0) keeps both brackets
    assert xl((a > 0).eq(b > 0)) == "(in_a>0)=(in_b>0)"


def test_only_zero_and_one_are_typed():
    assert xl(InputRef("a") * 1 + 0) == "in_a*1+0"
    with pytest.raises(ValueError, match="name the constant"):
        xl(InputRef("a") * 3600)
    assert xl(InputRef("a") * Const("seconds_per_hour")) == "in_a*k_seconds_per_hour"


def test_text_is_quoted():
    assert xl(IF(InputRef("a").eq("own"), 1, '"x"')) == 'IF(in_a="own",1,"""x""")'


def test_literals_refuse_booleans():
    with pytest.raises(TypeError):
        lit(True)


T = Table("t", 4)


def test_blank_cells_are_skipped_like_excel():
    """q = 1, blank, 3, blank: SUM 4 and MIN 1 skip the blanks; MIN of no numbers is 0."""
    lines = (
        Line("x", "", "", "number", INDEX(InputRef("mask"), 1, Position()), table=T),
        Line("q", "", "", "number", IF(Cell("x") > 0, Cell("x"), ""), table=T),
        Line("blank", "", "", "number", IF(Cell("x") > 9, 1, ""), table=T),
        Line("s", "", "", "number", SUM(Row("q"))),
        Line("m", "", "", "number", MIN(Row("q"))),
        Line("none_min", "", "", "number", MIN(Row("blank"))),
    )
    v = compile_lines(lines)({"mask": (1.0, 0.0, 3.0, 0.0)}, {}, {})
    assert math.isnan(v["q"][1]) and v["q"][2] == 3
    assert float(v["s"]) == 4 and float(v["m"]) == 1
    assert float(v["none_min"]) == 0


def test_sumproduct_index_and_position_across_tables():
    """NPV at each of three rates of a 3-month flow -10, 4, 7: Σ flow × (1 + r)^−month."""
    months, rates = Table("months", 3), Table("rates", 3)
    lines = (
        Line("flow", "", "", "number", INDEX(InputRef("flows"), 1, Position()), table=months),
        Line("month", "", "", "number", Position() - 1, table=months),
        Line("rate", "", "", "number", INDEX(InputRef("grid"), 1, Position()), table=rates),
        Line("npv", "", "", "number",
             SUMPRODUCT(Row("flow"), (1 + Cell("rate")) ** (-Row("month"))), table=rates),
        Line("npv_first", "", "", "number", INDEX(Row("npv"), 1) * Const("two")),
    )
    v = compile_lines(lines)({"flows": (-10.0, 4.0, 7.0), "grid": (0.0, 0.1, 1.0)},
                             {"two": np.float64(2)}, {})
    expected = [-10 + 4 / (1 + r) + 7 / (1 + r) ** 2 for r in (0.0, 0.1, 1.0)]
    np.testing.assert_allclose(v["npv"], expected, rtol=1e-14)
    assert float(v["npv_first"]) == 2.0
    assert np.isnan(v["flow"]).sum() == 0


def test_shifted_cells_read_neighbours():
    """prev and next positions: a running difference, NaN past either end."""
    lines = (
        Line("x", "", "", "number", INDEX(InputRef("xs"), 1, Position()), table=T),
        Line("d", "", "", "number", Cell("x") - Cell("x", -1), table=T,
             first=Cell("x") * 0),
        Line("ahead", "", "", "number", Cell("x", 1), table=T),
    )
    v = compile_lines(lines)({"xs": (1.0, 4.0, 9.0, 16.0)}, {}, {})
    np.testing.assert_array_equal(v["d"], [0, 3, 5, 7])
    assert list(v["ahead"][:3]) == [4, 9, 16] and math.isnan(v["ahead"][3])


# -- the numpy side keeps numpy's own bits ------------------------------------------------------
def _bits(a) -> bytes:
    return np.ascontiguousarray(a, dtype=float).tobytes()


def _sumif_as_nansum(index, years, values, shape):
    """SUMIF's sums, asserted to be the very bits of numpy's nansum over the picked cells."""
    from tokenfactory_xl.tfom.runtime import _sum_row, _sumif

    got = _sumif(index, years, values)
    expected = _sum_row(np.where(index == years, values, 0.0))
    assert got.shape == expected.shape == shape
    assert _bits(got) == _bits(expected)
    return got


def test_a_sumif_over_many_variants_is_the_nansum_of_the_picked_cells():
    """SUMIF(index row, position, value row) per fiscal year for 7 variants with blanks (NaN):
    the very sums of numpy's nansum over the picked cells, as each variant alone gets them."""
    from tokenfactory_xl.tfom.runtime import _sumif

    rng = np.random.default_rng(3)
    index = np.repeat(np.arange(1.0, 6.0), 12)[None, None, :]  # 5 years of 12 months
    index[..., 50:] = np.nan  # months beyond the horizon
    values = rng.normal(0, 1e6, (7, 1, 60))
    values[:, :, 55:] = np.nan
    values[2, 0, 7] = np.nan
    years = np.arange(1.0, 7.0)[:, None]
    got = _sumif_as_nansum(index, years, values, (7, 6, 1))
    for k in range(7):  # each variant alone: the same sums
        assert _bits(_sumif(index[0], years, values[k, 0])) == _bits(got[k])


def test_a_sumif_over_many_draws_sums_each_criterion_alone_to_the_same_bits():
    """With hundreds of variants SUMIF sums each criterion's cells alone, the others left out,
    in numpy's order: the same bits as the nansum over the whole table of picked cells."""

    rng = np.random.default_rng(5)
    index = np.concatenate([[0.0], np.repeat(np.arange(1.0, 12.0), 12)[:120]])[None, :]
    values = rng.normal(0, 1e6, (500, 1, 121)) * 10.0 ** rng.integers(-6, 6, (500, 1, 121))
    values[:, :, 100:] = np.nan
    values[9, 0, 13] = np.nan
    _sumif_as_nansum(index, np.arange(1.0, 12.0)[:, None], values, (500, 11, 1))


@pytest.mark.parametrize("months", [60, 121, 241, 300])
def test_a_sumif_over_many_draws_sums_each_criterion_to_the_same_bits_at_any_length(months):
    """Each criterion's cells summed in numpy's order (eight running sums joined as a tree; a
    row above 128 cells halved first): the bits of the nansum over the whole table of picked
    cells, for fiscal years, a criterion no cell meets, one met by scattered cells, and zeros
    of both signs."""
    rng = np.random.default_rng(months)
    index = np.concatenate([[0.0], np.repeat(np.arange(1.0, 30.0), 12)])[None, :months]
    index[0, 5::7] = 40.0  # a criterion met by cells scattered along the row
    values = rng.normal(0, 1e6, (500, 1, months)) * 10.0 ** rng.integers(-6, 6, (500, 1, months))
    values[:, :, months * 3 // 4:] = np.nan
    values[rng.random(values.shape) < 0.05] = -0.0
    values[3, 0, :] = -0.0
    years = np.concatenate([np.arange(1.0, months / 12 + 2), [40.0, 99.0]])[:, None]
    _sumif_as_nansum(index, years, values, (500, len(years), 1))


def _product(tree, factors):
    if isinstance(tree, int):
        return factors[tree]
    return _product(tree[0], factors) * _product(tree[1], factors)


@pytest.mark.parametrize("width", [1, 3, 7, 8, 9, 16, 121, 128, 129, 300])
def test_a_row_summed_column_by_column_is_numpys_sum(width):
    """A row summed one column at a time (a column of zeros left out) is numpy's sum of the
    row, to the last bit: the order in which numpy adds a row's cells, replayed."""
    from tokenfactory_xl.tfom.runtime import _row_sum

    rng = np.random.default_rng(width)
    rows = rng.standard_normal((200, width)) * 10.0 ** rng.integers(-12, 12, (200, width))
    rows[:, 1::4] = 0.0
    rows[7, :] = -0.0  # numpy's sum of zeros is +0, whatever their signs
    got = _row_sum([rows[:, c] if rows[:, c].any() else None for c in range(width)])
    assert _bits(got) == _bits(rows.sum(axis=-1))


def test_a_sumproduct_of_many_draws_column_by_column_is_the_whole_products_sum():
    """SUMPRODUCT(row × row × mask) over 300 variants, by columns with empty ones left out, is
    the whole product's SUMPRODUCT bit for bit: a cohort row per variant, blanks, masks of
    months, a column factor and a factor of two columns of zeros, a row times masks alone,
    products that overflow."""
    from tokenfactory_xl.tfom.runtime import _sumproduct, _sumproduct_tree

    rng = np.random.default_rng(11)
    cost = rng.normal(4e7, 3e7, (300, 1, 8)) * 10.0 ** rng.integers(-3, 3, (300, 1, 8))
    cost[:, :, 5:] = 0.0  # cohorts without GPUs
    cost[4, 0, 2] = np.nan
    bought = (rng.random((1, 8)) < 0.8).astype(float)
    bought[0, 1] = 0.0
    online = rng.integers(1, 60, 8).astype(float)[None, :]
    month = np.arange(121.0)[:, None]
    in_service = (online <= month) * (online + 36 > month)  # bools: (121, 8)
    scale = rng.random((121, 1))
    with np.errstate(over="ignore"):
        huge = cost * 1e300
    for tree, factors in (
        (((0, 1), 2), (cost, bought, in_service)),
        ((0, (1, 2)), (cost, in_service, scale)),
        (((0, 1), (2, 3)), (cost, bought, in_service, 0.25)),
        # one row of numbers times masks alone (a cohort's depreciation in the months it runs):
        # the masks joined first; a negative number times a mask that fails is -0
        (((0, (1, 2)), 3), (-cost, online <= month, online + 36 > month, month < 100)),
        # so large that the product may overflow: infinity times a failed mask is a blank
        (((0, 1), 2), (huge, 1e10 * bought, in_service)),
        (((0, 1), 2), (np.where(cost > 5e7, np.inf, cost), in_service, month > 3)),
    ):
        with np.errstate(all="ignore"):  # as the compiled model runs
            want = _sumproduct(_product(tree, factors))
            got = _sumproduct_tree(tree, *factors)
        assert got.shape == want.shape == (300, 121, 1)
        assert _bits(got) == _bits(want), tree


def _stored_by_columns(a: np.ndarray) -> np.ndarray:
    """The same numbers with each variant's last two axes stored column by column (as numpy
    lays out a fancy index on the last axis, or a copy of a broadcast row)."""
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def test_a_sumproduct_of_many_variants_sums_each_row_as_alone_whatever_the_layout():
    """SUMPRODUCT(row, row) of 6 variants' cohort rows (8 cells: proceeds and a mask of the
    cohorts held at the horizon) is, variant by variant, the sum that variant's rows alone get,
    whether the rows lie in C order, transposed (the variants' axis innermost) or stored by
    columns: the sum of a row never depends on how the rows are laid out."""
    from tokenfactory_xl.tfom.runtime import _sumproduct

    rng = np.random.default_rng(8)
    proceeds = rng.normal(0, 1e7, (6, 1, 8)) * 10.0 ** rng.integers(-4, 4, (6, 1, 8))
    proceeds[1, 0, 6] = np.nan  # a cohort without GPUs
    held = (rng.random((6, 1, 8)) < 0.8) * 1.0
    # numpy sums 8 cells pairwise, ((1 + 2) + (3 + 4)) + ((5 + 6) + (7 + 8)): these rows round
    # otherwise when their cells are added one after the other
    cells = np.where(np.isnan(proceeds * held), 0.0, proceeds * held)[:, 0, :].tolist()
    pairwise = [((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]))
                for c in cells]
    assert any(0.0 + sum(c) != p for c, p in zip(cells, pairwise, strict=True))
    for layout in (np.ascontiguousarray, np.asfortranarray, _stored_by_columns):
        got = _sumproduct(layout(proceeds), layout(held))
        assert got.shape == (6, 1, 1)
        assert got[:, 0, 0].tolist() == pairwise, layout.__name__
        for k in range(6):  # each variant alone: the same bits
            assert _bits(_sumproduct(proceeds[k], held[k])) == _bits(got[k]), layout.__name__


def test_an_npv_grid_of_many_variants_is_each_variants_own_whatever_the_layout():
    """SUMPRODUCT(cash flow row, grid of discount factors) — the NPV at each of 221 rates for
    3 variants, a product of matrices — is, variant by variant, what the variant's row and grid
    alone give, with the grids in C order or each stored by columns (which numpy would hand to
    another BLAS routine, with other last digits)."""
    from tokenfactory_xl.tfom.runtime import _sumproduct

    rng = np.random.default_rng(9)
    flows = rng.normal(0, 1e6, (3, 1, 121)) * 10.0 ** rng.integers(-3, 3, (3, 1, 121))
    flows[:, :, 100:] = np.nan  # months beyond the horizon
    rates = np.linspace(-0.5, 2.0, 221)[:, None] * rng.random((3, 1, 1))
    grid = (1.0 + rates) ** -np.arange(121.0)
    for layout in (np.ascontiguousarray, _stored_by_columns):
        got = _sumproduct(layout(flows), layout(grid))
        assert got.shape == (3, 221, 1)
        for k in range(3):
            alone = _sumproduct(flows[k], grid[k])
            assert alone.shape == (221, 1)
            assert _bits(alone) == _bits(got[k]), layout.__name__
            np.testing.assert_allclose(got[k, :, 0], np.nansum(flows[k] * grid[k], axis=-1),
                                       rtol=1e-9, atol=1e-6 * np.nanmax(np.abs(flows[k])))


def test_rows_picked_for_many_variants_lie_in_c_order():
    """INDEX of two sites' fleet rows (cohorts 2…8) at the cohorts' positions 0…7 (0 is off
    the row: blank), as the model reads the fleet block: each site's own cells, and its row's
    cells side by side (C order), as one site's row; a later SUMPRODUCT sums it uncopied."""
    from tokenfactory_xl.tfom.runtime import _index

    fleet = np.arange(1.0, 15.0).reshape(2, 1, 7)
    got = _index(fleet, 1.0, np.arange(8.0)[:, None])
    assert got.shape == (2, 8, 1)
    assert np.array_equal(got[..., 0], [[np.nan, 1, 2, 3, 4, 5, 6, 7],
                                        [np.nan, 8, 9, 10, 11, 12, 13, 14]], equal_nan=True)
    assert got.flags.c_contiguous


def test_match_finds_numbers_in_a_row_of_many_variants_and_texts_in_a_list():
    """MATCH(x, row, 0): the first position of x in each variant's row (NaN: not found);
    over a list of texts, the case-insensitive position."""
    from tokenfactory_xl.tfom.runtime import _match

    rows = np.array([[[3.0, 1.0, 1.0, np.nan]], [[2.0, 2.0, 5.0, 1.0]]])
    got = _match(np.array([[[1.0]], [[7.0]]]), rows, 0)
    assert got[0, 0, 0] == 2 and np.isnan(got[1, 0, 0])
    assert _match(1.0, rows[1], 0).item() == 4
    assert float(_match("optimised", ("Base", "Optimised", "Downside"), 0)) == 2
    assert np.isnan(_match("Upside", ("Base", "Optimised", "Downside"), 0))


@pytest.mark.parametrize("position", [1, 2, 2.7, 4, 0, 0.5, 5, -1, np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("row", [[10.0, np.nan, 30.0, 40.0], ["a", 2.0, "c", np.nan]],
                         ids=["numbers", "texts"])
def test_one_sites_index_is_the_cell_many_variants_would_pick(row, position):
    """INDEX of one site's row at one position (a shortcut) against the same row among two
    variants (numpy's general picking): the same cell, its type, and NaN off the row."""
    from tokenfactory_xl.tfom.runtime import _index

    one = np.array([row], dtype=float if isinstance(row[0], float) else object)
    for k in (position, np.array([[position]])):
        alone = _index(one, k)
        among = _index(np.vstack([one, one]), np.full((2, 1), position))[:1]
        assert alone.shape == among.shape == (1, 1) and alone.dtype == among.dtype
        a, b = alone[0, 0], among[0, 0]
        assert (a is b or a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))
        # Excel's INDEX(row, 1, 2.7) is its second cell: the position is truncated
        want = row[int(position) - 1] if math.isfinite(position) and 1 <= position <= 4 \
            else np.nan
        assert a == want or (isinstance(want, float) and math.isnan(want) and math.isnan(a))


def test_many_variants_index_at_shared_positions_picks_each_variants_own_cells():
    """INDEX over 200 variants' rows at positions they all share (the live scenario's column;
    each month's fiscal year, some off the row or blank) is, variant by variant, what that
    variant's row alone gives: the cell at the position (truncated), NaN off the row."""
    from tokenfactory_xl.tfom.runtime import _index

    rng = np.random.default_rng(21)
    rows = rng.normal(0, 1e6, (200, 1, 11))
    rows[:, :, 4] = np.nan
    years = np.concatenate([[np.nan, 0.0], rng.integers(1, 12, 117), [12.0, 2.7]])[:, None]
    singles = [np.array([[p]]) for p in (3.0, 0.0, 2.7, 1.0, 11.0, 12.0, np.nan, -np.inf)]
    for positions in (years, *singles):
        got = _index(rows, 1.0, positions)
        assert got.shape == (200, len(positions), 1) and got.flags.c_contiguous
        for i in (0, 57, 199):
            alone = np.array([[rows[i, 0, int(p) - 1] if math.isfinite(p) and 1 <= p <= 11
                               else np.nan] for p in positions[:, 0]])
            assert _bits(got[i]) == _bits(alone)


def test_shapes_broadcast_as_numpy_broadcasts_them():
    """The model's own broadcast of shapes (a pass of many variants asks it for most lines)
    gives numpy's shape, and refuses what numpy refuses."""
    from tokenfactory_xl.tfom.runtime import _broadcast

    rng = np.random.default_rng(5)
    for _ in range(2_000):
        shapes = [tuple(int(d) for d in rng.choice([0, 1, 1, 1, 2, 3, 8, 121, 500],
                                                   rng.integers(0, 4)))
                  for _ in range(rng.integers(1, 4))]
        try:
            want = np.broadcast_shapes(*shapes)
        except ValueError:
            with pytest.raises(ValueError):
                _broadcast(*shapes)
        else:
            assert _broadcast(*shapes) == want, shapes
    assert _broadcast() == np.broadcast_shapes() == ()


def test_a_recurrent_line_of_one_site_stacks_its_steps_as_many_variants_do():
    from tokenfactory_xl.tfom.compiler import _stack

    steps = [np.float64(0.1) * i for i in range(7)] + [np.float64(np.nan)]
    alone = _stack(steps)
    among = _stack([np.full((2, 1, 1), s) for s in steps])
    assert alone.shape == (8,) and among.shape == (2, 8) and alone.dtype == among.dtype
    np.testing.assert_array_equal(alone, among[0])  # NaN where NaN, else bit for bit


def _site_values(rng: np.random.Generator) -> dict:
    """A random site with cohorts, debt, a shutdown and a contract: most lines move."""
    gpus = int(rng.integers(64, 4096))
    return {
        "gpus": gpus, "measured_tps": gpus * float(rng.uniform(1000, 9000)),
        "horizon_months": int(rng.integers(1, 121)),
        "capex_per_gpu": float(rng.integers(15_000, 60_000)),
        "tef_target": tuple(float(x) for x in rng.uniform(0.3, 0.95, 3)),
        "debt_share": float(rng.choice([0.0, 0.5])), "debt_tenor_months": 36,
        "shutdown_month": (None, None, int(rng.integers(1, 121))),
        "contract_mtok_per_month": float(rng.choice([0.0, 5e5])), "contract_months": 24,
        "cohorts": [{"cohort": "later", "online_month": 1, "gpus": int(rng.integers(1, 500)),
                     "ownership": str(rng.choice(["own", "rent"]))}],
    }


def test_what_several_lines_compute_alike_is_computed_once_to_the_last_bit():
    """The model computes a line of the same code as an earlier one (the six IRR searches'
    grids of rates) and a grid's powers (their discount factors) once per pass: every value of
    random sites, alone and many at once, is the same float as when each line computes its own
    formula."""
    from tokenfactory_xl.tfom.evaluation import (
        LISTS,
        _formula_constants,
        compiled,
        formula_inputs,
        run_many,
    )
    from tokenfactory_xl.tfom.inputs import make_inputs
    from tokenfactory_xl.tfom.operating_model import LINES

    shared = compiled().model
    source = shared.__source__
    assert source.count("_grid") >= 2 and "V['irr_rate_project_base']" in source
    assert "V['irr_rate_equity_downside'] = V['irr_rate_project_base']" in source
    alone = compile_lines(LINES, share=False)
    assert "_grid" not in alone.__source__
    rng = np.random.default_rng(37)
    sites = []
    while len(sites) < 12:
        try:
            sites.append(make_inputs(_site_values(rng)))
        except Exception:  # noqa: BLE001 - a random site the catalogue refuses: draw again
            continue
    constants = _formula_constants()
    many = [result.values for result in run_many(sites)]  # in passes of many sites
    for site, together in zip(sites, many, strict=True):
        want = alone(formula_inputs(site), constants, LISTS)
        for got in (shared(formula_inputs(site), constants, LISTS), together):
            for name, value in want.items():
                if name == "_inputs":
                    continue
                a, b = np.asarray(got[name]), np.asarray(value)
                assert a.shape == b.shape and a.dtype == b.dtype, name
                if a.dtype.kind == "f":
                    assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
                else:  # texts, NaN where blank
                    assert all(x == y or (x != x and y != y)
                               for x, y in zip(a.ravel(), b.ravel(), strict=True)), name


def test_a_guard_blanks_a_new_array_in_place_and_copies_anything_else():
    """A table's guard over an arithmetic formula's result (a new array) blanks it in place;
    the values are np.where's to the last bit (NaN where the guard fails), whatever the mask
    (a horizon's tail, scattered months, one mask per variant), and a value some line holds
    (a view, a row) is never written: the guard copies it."""
    from tokenfactory_xl.tfom.compiler import _guarded

    rng = np.random.default_rng(5)
    tail = (np.arange(121) <= 60)[:, None]
    scattered = rng.random((121, 1)) < 0.7
    per_variant = rng.random((40, 121, 1)) < 0.5
    one = np.zeros((1, 1, 1), dtype=bool)  # a guard that holds for no position of any variant
    for guard, variants in ((tail, 40), (scattered, 40), (per_variant, 40),
                            (np.ones((121, 1), dtype=bool), 40), (True, 40), (False, 40),
                            (one, 1), (~one, 1), (one[0], 1), (tail, 1)):
        value = rng.normal(size=(variants, 121, 1))
        value[0, 3, 0] = -0.0
        want = np.where(guard, value, np.nan)
        got = _guarded(guard, value)
        assert got is value  # blanked in place: no copy
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
    held = rng.normal(size=(40, 121))
    before = held.copy()
    for value in (held[..., None], held[:, None, :]):  # a line's values as an operand: views
        got = _guarded(tail, value)
        assert got is not value and np.array_equal(got, np.where(tail, value, np.nan),
                                                    equal_nan=True)
    assert np.array_equal(held, before)
    # a smaller value than the result (one per variant): broadcast, as np.where does
    small = rng.normal(size=(40, 1, 1))
    assert np.array_equal(_guarded(tail, small), np.where(tail, small, np.nan), equal_nan=True)


def test_a_guarded_line_never_writes_into_the_line_it_reads():
    """A line whose formula is another line's cell (no arithmetic) gets the guard's copy: the
    line it reads keeps its values beyond the guard."""
    t = Table("t_guarded", 5, guard=Cell("t_on").eq(1))
    plain = Table("t_plain", 5)
    lines = [Line("t_src", "", "", "", Position() * 2.0, table=plain),
             Line("t_on", "", "", "", IF(Position() <= 3, 1, 0), table=plain),
             Line("t_copy", "", "", "", Cell("t_src"), table=t),
             Line("t_double", "", "", "", Cell("t_src") * 2, table=t)]
    model = compile_lines(lines)
    assert "V['t_copy'] = _fit(_where(" in model.__source__
    assert "V['t_double'] = _fit(_guarded(" in model.__source__
    out = model({}, {}, {})
    assert np.array_equal(out["t_src"], [2.0, 4.0, 6.0, 8.0, 10.0])
    assert np.array_equal(out["t_copy"], [2.0, 4.0, 6.0, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(out["t_double"], [4.0, 8.0, 12.0, np.nan, np.nan], equal_nan=True)


def test_if_over_many_variants_with_a_shared_condition_is_np_where_bit_for_bit():
    """IF(condition, a, b) where every variant shares the condition (a month mask: inside the
    horizon, the first month, a span) is filled run by run of the mask: the same cells, shape
    and type as ``np.where``, with numbers, blanks and signed zeros on either side."""
    from tokenfactory_xl.tfom.runtime import _shared_runs, _where

    rng = np.random.default_rng(37)
    month = np.arange(121)[:, None]
    row = rng.normal(size=(500, 121, 1))
    row[rng.random(row.shape) < 0.1] = -0.0
    row[rng.random(row.shape) < 0.1] = np.nan
    sides = [0.0, np.nan, np.float64(-2.5), row, rng.normal(size=(500, 1, 1)),
             rng.normal(size=(121, 1))]
    masks = [month <= 60, month == 0, (month >= 13) & (month <= 48), month <= 130,
             (month <= 60)[None]]
    by_runs = 0
    for condition in masks:
        for a in sides:
            for b in sides:
                want = np.where(condition, a, b)
                by_runs += _shared_runs(condition, a, b) is not None
                got = _where(condition, a, b)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert _bits(got) == _bits(want)
    assert by_runs > 50  # most of them are filled by runs (not two scalars, nor a small row)
