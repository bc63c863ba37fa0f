"""Many variants of one site: the lines no moved input reaches are computed once, the rest for
every variant, and every value is what the whole model gives, to the last bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tokenfactory_xl.tfom.compiler import QUOTED_NAME, built, compile_lines, loaded
from tokenfactory_xl.tfom.evaluation import LISTS, _formula_constants, formula_inputs
from tokenfactory_xl.tfom.formula import needed
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.tfom.operating_model import LINES
from tokenfactory_xl.tfom.runtime import _RowArray
from tokenfactory_xl.tfom.variants import split, variant_model

TARGETS = ("out_npv_base", "cash_flow_base")


def test_the_lines_a_moved_input_reaches_and_those_it_does_not():
    fixed, moving = split(needed(LINES, list(TARGETS)), frozenset({"tef_target"}))
    fixed_names, moving_names = {ln.name for ln in fixed}, {ln.name for ln in moving}
    # the calendar and the fleet do not read the TEF target; revenue does, and so does all
    # that follows from it
    assert {"month", "month_end", "hours", "gpus_in_service_base", "capex_base"} <= fixed_names
    assert {"tef_base", "revenue_base", "ebitda_base", "cash_flow_base",
            "out_npv_base"} <= moving_names
    # the tax loop computes its two lines together
    assert {"fy_tax_base", "fy_loss_pool_base"} <= moving_names
    # each part keeps the model's order
    order = [ln.name for ln in LINES]
    for part in (fixed, moving):
        positions = [order.index(ln.name) for ln in part]
        assert positions == sorted(positions)


def test_a_pass_lets_each_line_go_after_its_last_reader():
    """A pass over many variants holds its targets only at the end: every other line it
    computes is let go right after the last statement that names it, by the same statements
    that keep them all (the targets to the last bit)."""
    from tokenfactory_xl.tfom import risk

    inputs = make_inputs({"horizon_months": 72})
    key = risk._scenario_key(inputs)[1]
    targets = risk._targets(key, True)
    moved = risk._moved(risk.RISK_DRIVERS)
    model = variant_model(targets, moved)
    fixed, moving = split(needed(LINES, list(targets)), moved)
    kept_all = built(moving, given=fixed)[0]
    source = model._moving.__source__
    statements = source.splitlines()
    let_go = [i for i, line in enumerate(statements) if line.startswith("    V.let_go(")]
    assert "\n".join(line for i, line in enumerate(statements) if i not in let_go) + "\n" \
        == kept_all
    gone = set()
    for i in let_go:
        names = QUOTED_NAME.findall(statements[i])
        assert not set(names) & set(targets)
        gone |= set(names)
        # no later statement names a line let go (a recurrent table's loop is one statement)
        assert not set(QUOTED_NAME.findall("\n".join(statements[i + 1:]))) & set(names)
    computed = {ln.name for ln in moving}
    assert gone == computed - set(targets) and len(gone) > 20
    base = formula_inputs(inputs)
    constants = _formula_constants()
    draws = risk.draw(inputs, 50)
    npv, irr = risk.evaluate(inputs, draws)
    site = model.site_values(base, constants, LISTS)
    given = dict(base, price_factor=np.tile(np.asarray(base["price_factor"], dtype=float),
                                            (50, 1)).view(_RowArray))
    given["price_factor"][:, risk._scenario_key(inputs)[0]] = draws["price_factor"]
    got = model(given, site, constants, LISTS)
    everything = loaded(built(moving, given=fixed))({**given, "_lines": site}, constants, LISTS)
    assert {name for name in computed if name in got} == set(targets) & computed
    assert all(name in everything for name in computed)
    for name in set(targets) & computed:
        a, b = np.asarray(got[name], dtype=float), np.asarray(everything[name], dtype=float)
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
    assert np.isfinite(npv).all() and np.count_nonzero(~np.isnan(irr)) > 0
    # a model of one site keeps every line (its lines are no _Lines, which lets them go)
    with pytest.raises(ValueError, match="many variants"):
        built(moving, returned=targets)


def test_variants_get_the_whole_models_values_to_the_last_bit():
    inputs = make_inputs({"cohorts": [{"cohort": "later", "online_month": 13, "gpus": 256,
                                       "capex_per_gpu": 55_000}], "debt_share": 0.4})
    base = formula_inputs(inputs)
    constants = _formula_constants()
    rng = np.random.default_rng(8)
    capex = rng.uniform(30_000, 50_000, 40)
    tef = np.tile(np.asarray(base["tef_target"], dtype=float), (40, 1))
    tef[:, 0] = rng.uniform(0.2, 0.5, 40)
    given = dict(base, capex_per_gpu=capex, tef_target=tef.view(_RowArray))
    own = np.asarray(base["fleet_capex_per_gpu"], dtype=float)
    given["fleet_capex_per_gpu"] = (own[None, :] * (capex / base["capex_per_gpu"])[:, None]
                                    ).view(_RowArray)
    moved = frozenset({"capex_per_gpu", "fleet_capex_per_gpu", "tef_target"})
    model = variant_model(TARGETS, moved)
    got = model(given, model.site_values(base, constants, LISTS), constants, LISTS)
    whole = compile_lines(needed(LINES, list(TARGETS)))(given, constants, LISTS)
    for name in TARGETS:
        a, b = np.asarray(got[name], dtype=float), np.asarray(whole[name], dtype=float)
        assert a.shape == b.shape and a.shape[0] == 40, name
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
    assert len(set(np.asarray(got["out_npv_base"]).tolist())) == 40  # each variant its own


def test_every_line_reading_a_moving_line_moves_and_a_loop_moves_whole():
    """Whatever the moved inputs, a line that reads a line the variants move is computed for
    every variant too, and a recurrent table's lines (one loop) all move or none does."""
    from tokenfactory_xl.tfom.formula import lines_read
    from tokenfactory_xl.tfom.risk import TORNADO_DRIVERS

    lines = needed(LINES, ["out_npv_base", "out_equity_irr_base", "out_tax_losses_unused_base"])
    for moved in [{name} for name in TORNADO_DRIVERS] + [{"tax_rate"}, {"debt_share"}]:
        fixed, moving = split(lines, frozenset(moved))
        names = {ln.name for ln in moving}
        for ln in fixed:
            reads = lines_read(ln.formula) | (lines_read(ln.first) if ln.first is not None
                                              else set())
            assert not reads & names, (moved, ln.name)
            if ln.table is not None and ln.table.recurrent:
                assert not any(x.name in names for x in lines if x.table is ln.table)


def _random_sites(seed: int, count: int) -> list:
    rng = np.random.default_rng(seed)
    sites = []
    while len(sites) < count:
        gpus = int(rng.integers(64, 4096))
        site = {"horizon_months": int(rng.integers(36, 121)), "gpus": gpus,
                "measured_tps": float(round(gpus * 10_000 * rng.uniform(0.15, 0.6))),
                "scenario": str(rng.choice(["Base", "Optimised", "Downside"])),
                "debt_share": float(rng.choice([0.0, 0.4])),
                "market_mtok_month1": float(rng.choice([0.0, 5e5]))}
        if rng.random() < 0.4:
            site["cohorts"] = [{"cohort": "later", "online_month": int(rng.integers(2, 30)),
                                "gpus": int(rng.integers(16, 1024))}]
        sites.append(make_inputs(site))
    return sites


def test_the_lines_no_variant_moves_are_the_whole_runs_to_the_last_bit():
    """What a variant model computes once for the site is, line by line, what a run of the
    whole model gives: a caller holding that run (the workbook) may hand it over instead."""
    from tokenfactory_xl.tfom import risk
    from tokenfactory_xl.tfom.evaluation import run

    constants = _formula_constants()
    for inputs in _random_sites(3, 6):
        whole = run(inputs).values
        key = risk._scenario_key(inputs)[1]
        for moved in (risk._moved(risk.RISK_DRIVERS), risk._moved(risk.TORNADO_DRIVERS),
                      frozenset({"gpus"})):
            model = variant_model(risk._targets(key, True), moved)
            own = model.site_values(formula_inputs(inputs), constants, LISTS)
            taken = model.site_values(formula_inputs(inputs), constants, LISTS, whole)
            assert own.keys() == taken.keys() and len(own) > 20
            for name, value in own.items():
                assert taken[name] is whole[name]  # read from the run, not computed
                a, b = np.asarray(value), np.asarray(taken[name])
                assert a.shape == b.shape and a.dtype == b.dtype, name
                assert np.array_equal(a.view(np.int64) if a.dtype == float else a,
                                      b.view(np.int64) if b.dtype == float else b), name


def test_the_risk_sheets_figures_from_a_whole_run_are_the_same():
    """The tornado, the draws and a solve, handed the site's whole run, give every figure as
    they do computing what they share themselves."""
    from tokenfactory_xl.tfom import risk
    from tokenfactory_xl.tfom.evaluation import run
    from tokenfactory_xl.tfom.solve import solve

    for inputs in _random_sites(4, 3):
        whole = run(inputs).values
        a, b = risk.risk(inputs, 800), risk.risk(inputs, 800, whole=whole)
        assert np.array_equal(a.npv, b.npv) and a.summary() == b.summary()
        assert risk.tornado(inputs) == risk.tornado(inputs, whole=whole)
        assert solve(inputs, "tef_target", "npv=0") == solve(inputs, "tef_target", "npv=0",
                                                              whole)


def test_every_moving_line_computed_within_the_horizon_is_the_whole_models_to_the_bit():
    """The variants' guarded lines are computed on the months inside the horizon only (one
    run of months every variant shares) and placed among blanks: every line the NPV and the
    cash flow need, for every variant of the risk's drivers, is the whole model's value to the
    last bit, at horizons of 24 to 120 months, with market demand (a power of the month) on
    and off; the tax loop's fiscal years beyond the horizon are blank without being
    computed."""
    from tokenfactory_xl.tfom import risk

    constants = _formula_constants()
    for inputs in _random_sites(9, 4) + [make_inputs({"horizon_months": 24})]:
        base = formula_inputs(inputs)
        index, key = risk._scenario_key(inputs)
        model = variant_model(risk._targets(key, True), risk._moved(risk.RISK_DRIVERS))
        assert "_within(_guard, _span" in model._moving.__source__
        assert "_blank_step(V['fy_tax_" in model._moving.__source__
        draws = risk.draw(inputs, 30, seed=inputs["horizon_months"])
        given = dict(base)
        for name, v in draws.items():
            if isinstance(base[name], tuple):  # per scenario: the live scenario's column
                row = np.tile(np.asarray(base[name], dtype=float), (len(v), 1))
                row[:, index] = v
                given[name] = row.view(_RowArray)
            else:
                given[name] = v
        own = np.asarray(base["fleet_capex_per_gpu"], dtype=float)
        given["fleet_capex_per_gpu"] = (own[None, :] * (draws["capex_per_gpu"]
                                        / base["capex_per_gpu"])[:, None]).view(_RowArray)
        lines = needed(LINES, list(risk._targets(key, True)))
        fixed, moving_lines = split(lines, risk._moved(risk.RISK_DRIVERS))
        # the same statements with every line kept (the command's model lets those that are
        # not its targets go: test_a_pass_lets_each_line_go_after_its_last_reader)
        every = loaded(built(moving_lines, given=fixed))
        got = every({**given, "_lines": model.site_values(base, constants, LISTS)},
                    constants, LISTS)
        whole = compile_lines(lines)(given, constants, LISTS)
        moving = [ln.name for ln in moving_lines]
        assert len(moving) > 20
        for name in moving:
            a, b = np.asarray(got[name], dtype=float), np.asarray(whole[name], dtype=float)
            assert a.shape == b.shape, name
            assert np.array_equal(a.view(np.int64), b.view(np.int64)), name


def test_a_guarded_line_within_a_span_is_np_where_of_the_whole_line():
    """A guarded line computed on a span (:func:`_within`) keeps the span's cells side by side
    and, made whole when read whole (:class:`_Lines`), has the shape, type and cells of
    ``np.where(guard, value, NaN)`` over the whole line, for numbers per variant and month,
    one number per variant, truth values and texts; without a span (a guard per variant, or
    one holding everywhere) it is the guard itself."""
    from tokenfactory_xl.tfom.compiler import _cut, _Lines, _part, _span_of, _within

    rng = np.random.default_rng(2)
    month = np.arange(121.0)[:, None]
    guard = month <= 60
    span = _span_of(guard)
    assert span == (0, 61, 121)
    assert _span_of(month <= 200) is None and _span_of((month <= 3) | (month > 100)) is None
    assert _span_of(rng.random((5, 121, 1)) < 0.5) is None
    assert _span_of((month >= 12) & (month <= 47)) == (12, 48, 121)
    rows = rng.normal(size=(7, 121, 1))
    for whole in (rows, rng.normal(size=(7, 1, 1)), rows > 0,
                  np.where(rows > 0, "a", "b").astype(object), 2.5):
        want = np.where(guard, whole, np.asarray(np.nan, dtype=object)
                        if np.asarray(whole).dtype == object else np.nan)[..., 0]
        lines = _Lines({"_inputs": {}})
        lines.put("line", _within(guard, span, _cut(whole, span), fresh=False), 121)
        cells = _part(lines, "line", span)  # what the lines after it read: the span's cells
        assert cells.flags.c_contiguous and cells.shape == want[..., :61, None].shape
        assert "line" in lines and "line" not in dict.keys(lines)  # not yet made whole
        got = lines["line"]
        assert got.shape == want.shape and got.dtype == want.dtype
        if got.dtype == object:
            assert [x if x == x else "blank" for x in got.ravel()] \
                == [x if x == x else "blank" for x in want.ravel()]
        else:
            assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert _within(guard, None, rows.copy(), fresh=True).shape == (7, 121, 1)
    lines = _Lines({"_inputs": {}})
    lines.put("first", _within(guard, span, rows[:, :61] * 2.0, fresh=True, skip_first=True),
              121)
    assert np.isnan(lines["first"][:, 0]).all() and np.isnan(lines["first"][:, 61:]).all()
    assert np.array_equal(lines["first"][:, 1:61], rows[:, 1:61, 0] * 2.0)
    assert lines.get("absent") is None


def test_a_line_with_its_blanks_as_zero_is_the_whole_lines_to_the_bit():
    """The risk's cash flows as the IRR scan reads them (blanks as 0), taken from the cells a
    span computed (its first month blank or not, cells that are blank themselves, a −0), from a
    line made whole already, and from one computed whole: ``np.where(isnan(x), 0, x)`` of the
    whole line, bit for bit, in a new array of its own; and the scan's brackets of such flows
    are those of the flows with their blanks."""
    from tokenfactory_xl.tfom import risk
    from tokenfactory_xl.tfom.compiler import _cut, _Lines, _span_of, _within

    rng = np.random.default_rng(3)
    month = np.arange(121.0)[:, None]
    rows = rng.normal(0, 1e6, size=(9, 121, 1))
    rows[2, 20, 0], rows[3, 30, 0], rows[4, 12, 0] = np.nan, -0.0, np.nan
    for guard in ((month >= 12) & (month <= 47), month <= 60):
        span = _span_of(guard)
        for skip_first, read_whole_first in itertools.product((False, True), repeat=2):
            lines = _Lines({"_inputs": {}})
            lines.put("flow", _within(guard, span, _cut(rows, span), fresh=False,
                                      skip_first=skip_first), 121)
            lines.put("whole", rows[..., 0], 121)
            if read_whole_first:
                lines["flow"]
            assert ("flow" in dict.keys(lines)) == read_whole_first
            for name in ("flow", "whole"):
                got = lines.zero_filled(name)  # before the line is read whole, if it was not
                whole = np.asarray(lines[name])
                want = np.where(np.isnan(whole), 0.0, whole)
                assert got.shape == want.shape and got.flags.c_contiguous and got.flags.owndata
                assert np.array_equal(got.view(np.int64), want.view(np.int64)), name
                assert not np.shares_memory(got, whole)
    grid = np.concatenate([-np.geomspace(0.99, 1e-4, 40), [0.0], np.geomspace(1e-4, 10, 40)])
    flows = np.where((month[:, 0] >= 12) & (month[:, 0] <= 47), rows[..., 0], np.nan)
    flows[:, 12] -= 2e7
    plain = risk.IrrBrackets(flows, grid)
    filled = risk.IrrBrackets(np.where(np.isnan(flows), 0.0, flows), grid, blank_free=True)
    assert np.array_equal(plain.cf, filled.cf) and np.array_equal(plain.signed, filled.signed)
    for mine, theirs in zip(plain.kinds, filled.kinds, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert np.array_equal(a, b)
    assert len(plain.kinds[0][0]) + len(plain.kinds[1][0]) > 0


def test_a_shifted_line_read_within_a_span_is_the_whole_lines_shift_cut_to_it():
    """A line shifted by some positions (a month's predecessor), read by a line computed on a
    span, is the whole line's shift cut to the span, bit for bit: cells shifted in from
    outside the span or beyond the table are blank."""
    from tokenfactory_xl.tfom.compiler import (
        _c,
        _cut,
        _Lines,
        _shift,
        _shifted_part,
        _span_of,
        _within,
    )

    rng = np.random.default_rng(6)
    month = np.arange(121.0)[:, None]
    for guard in (month <= 60, (month >= 12) & (month <= 47)):
        span = _span_of(guard)
        rows = rng.normal(size=(9, 121, 1))
        rows[rng.random(rows.shape) < 0.1] = np.nan
        lines = _Lines({"_inputs": {}})
        lines.put("line", _within(guard, span, _cut(rows, span) + 0.0, fresh=True), 121)
        whole = np.asarray(lines["line"])
        for by in (-70, -3, -1, 1, 2, 70):
            want = _cut(_c(_shift(whole, by)), span)
            got = _shifted_part(lines, "line", by, span)
            assert got.shape == want.shape
            assert np.array_equal(got.view(np.int64), np.ascontiguousarray(want).view(np.int64))


def test_the_sum_of_a_line_computed_on_a_span_is_the_whole_rows_sum_to_the_bit():
    """SUM of a line computed on a span (the discounted cash flows summed into the NPV) is
    taken from its cells, blanks as 0, and is the whole row's SUM bit for bit: blank cells,
    signed zeros, a first month left blank, spans from the first month or later."""
    from tokenfactory_xl.tfom.compiler import _cut, _Lines, _r, _span_of, _sum_line, _within
    from tokenfactory_xl.tfom.runtime import _sum

    rng = np.random.default_rng(12)
    month = np.arange(121.0)[:, None]
    for guard, skip_first in ((month <= 60, True), ((month >= 12) & (month <= 47), False)):
        span = _span_of(guard)
        rows = rng.normal(0, 1e6, (300, 121, 1)) * 10.0 ** rng.integers(-8, 8, (300, 121, 1))
        rows[rng.random(rows.shape) < 0.05] = np.nan
        rows[rng.random(rows.shape) < 0.05] = -0.0
        lines = _Lines({"_inputs": {}})
        lines.put("line", _within(guard, span, _cut(rows, span) * 1.0, fresh=True,
                                  skip_first=skip_first), 121)
        got = _sum_line(lines, "line")
        want = _sum(_r(lines["line"]))
        assert got.shape == want.shape == (300, 1, 1) and type(got) is type(want)
        assert np.array_equal(np.asarray(got).view(np.int64), np.asarray(want).view(np.int64))


def test_the_split_and_both_parts_are_kept_as_one_file_and_read_back(tmp_path, monkeypatch):
    """A variant model is kept whole in the build cache: read back, it neither gathers the
    lines its targets need nor splits them nor compiles, and it computes what a model built
    afresh computes, to the last bit."""
    from tokenfactory_xl.files import build_cache
    from tokenfactory_xl.tfom import compiler, variants

    monkeypatch.setenv(build_cache.ENV, str(tmp_path / "cache"))
    moved = frozenset({"tef_target"})
    first = variants.VariantModel(TARGETS, moved)
    assert [p.name.startswith("variants-") for p in (tmp_path / "cache").iterdir()] == [True]

    def no_building(*_args, **_kw):
        raise AssertionError("built again")

    for module, name in ((variants, "_needed"), (variants, "split"),
                         (compiler, "_model_source")):
        monkeypatch.setattr(module, name, no_building)
    again = variants.VariantModel(TARGETS, moved)
    fixed, moving = split(needed(LINES, list(TARGETS)), moved)
    assert again.fixed_lines == first.fixed_lines == tuple(ln.name for ln in fixed)
    assert again._moving.__source__ == first._moving.__source__
    assert set(again._moving.inputs) == set(compiler.inputs_of(moving))
    base = formula_inputs(make_inputs({}))
    constants = _formula_constants()
    tef = np.tile(np.asarray(base["tef_target"], dtype=float), (3, 1))
    tef[:, 0] = (0.3, 0.4, 0.5)
    given = dict(base, tef_target=tef.view(_RowArray))
    want = first(given, first.site_values(base, constants, LISTS), constants, LISTS)
    got = again(given, again.site_values(base, constants, LISTS), constants, LISTS)
    for name in TARGETS:
        a, b = np.asarray(got[name], dtype=float), np.asarray(want[name], dtype=float)
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
    assert len(set(np.asarray(got["out_npv_base"]).tolist())) == 3
