"""The model's IRR search (methodology §4.3), declared once for the workbook and numpy: the grid
of monthly rates and the bracket nearest 0 on either side, then a few safeguarded Newton steps.
It finds the root that sixty halvings of the same brackets find, the search of earlier versions,
kept here as the reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_risk_irr import MONTHS, cash_flow_sets, declared_search, given
from tokenfactory_xl.tfom import risk
from tokenfactory_xl.tfom.operating_model import IRR_NEWTON_STEPS

HALVINGS = 60


def bisection(flows: np.ndarray, horizons: np.ndarray, grid: np.ndarray, npv: np.ndarray
              ) -> np.ndarray:
    """The reference: the same grid, its NPVs ``npv`` and brackets, each bracket halved sixty
    times (the last midpoint its root), the root nearer 0 the IRR; NaN where there is none."""
    flows = given(flows, horizons)
    cf = np.nan_to_num(flows)
    months = np.arange(MONTHS, dtype=float)
    npv = np.array(npv, dtype=float).reshape(len(cf), len(grid))

    def npv_at(rate: np.ndarray) -> np.ndarray:
        return (cf * np.power(1.0 + rate[:, None], -months)).sum(axis=1)
    sign = np.sign(npv)
    with np.errstate(invalid="ignore"):
        change = ~np.isnan(npv[:, :-1]) & ~np.isnan(npv[:, 1:]) & (sign[:, :-1] * sign[:, 1:] <= 0)
    roots = []
    rows = np.arange(len(cf))
    for ok, key in ((change & (grid[:-1] >= 0), grid[:-1]), (change & (grid[1:] <= 0), -grid[1:])):
        candidates = np.where(ok, key, np.inf)
        at = np.argmin(candidates, axis=1)  # the first position of the smallest
        low, high, f_low = grid[at], grid[at + 1], npv[rows, at]
        mid = (low + high) / 2
        with np.errstate(all="ignore"):
            f_mid = npv_at(mid)
            for _ in range(1, HALVINGS):
                keep_low = (f_mid > 0) == (f_low > 0)
                low, high = np.where(keep_low, mid, low), np.where(keep_low, high, mid)
                f_low = np.where(keep_low, f_mid, f_low)
                mid = (low + high) / 2
                f_mid = npv_at(mid)
        roots.append(np.where(np.isfinite(candidates.min(axis=1)), mid, np.nan))
    up, down = roots
    nearest = np.where(np.isnan(down), up,
                       np.where(np.isnan(up) | (np.abs(down) < np.abs(up)), down, up))
    signed = (np.nanmin(np.where(np.isnan(flows), 0, flows), axis=1) < 0) \
        & (np.nanmax(np.where(np.isnan(flows), 0, flows), axis=1) > 0)
    return np.where(signed, nearest, np.nan)


def compare(flows: np.ndarray, horizons: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    out = declared_search(flows, horizons)
    want = bisection(flows, horizons, out["grid"], out["irr_npv_t"])  # its grid, its NPVs
    assert np.array_equal(np.isnan(out["irr"]), np.isnan(want))  # none where it had none
    return out["irr"], want, out


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_the_root_of_sixty_halvings_in_a_few_steps(seed):
    flows, horizons = cash_flow_sets(seed, 600)
    got, want, out = compare(flows, horizons)
    found = ~np.isnan(want)
    # a real mix: roots above 0 and below it (down to −94 % a month), none, several changes
    assert np.count_nonzero(~found) > 50 and np.count_nonzero(want < -0.9) >= 3
    assert np.count_nonzero(want > 0) > 100 and np.count_nonzero(want < 0) > 50
    assert np.max(np.abs(got[found] - want[found])) <= 1e-14
    # converged with steps to spare: the last two steps moved no rate by more than the NPV's
    # rounding lets Newton's step resolve (a few ulps; 1e-14 of the rate, or of 1 %)
    for side in ("above", "below"):
        x = out[f"irr_x_{side}_t"].reshape(len(flows), IRR_NEWTON_STEPS)
        ok = ~np.isnan(x[:, -1])
        assert np.count_nonzero(ok) > 200
        moved = np.abs(x[ok, -1] - x[ok, -3])
        assert np.all(moved <= 2e-14 * np.maximum(np.abs(x[ok, -1]), 0.01)), side


def _polynomial_flows(rates: list[float], scale: float = 1e7) -> np.ndarray:
    """Flows of months 0 … len(rates) whose NPV is 0 at exactly these monthly rates: the
    coefficients of Π (1 − (1 + r) v) in v = 1 ÷ (1 + rate)."""
    coefficients = np.array([1.0])
    for r in rates:
        coefficients = np.convolve(coefficients, [1.0, -(1.0 + r)])
    row = np.zeros(MONTHS)
    row[:len(coefficients)] = -scale * coefficients
    return row


def test_roots_on_and_beside_the_grids_rates():
    """A root exactly at a rate of the grid, or a hair (1e-12) either side of one, anywhere from
    −99 % to +1,000 % a month; a root exactly at 0 (the grid's middle rate)."""
    grid = declared_search(np.zeros((1, MONTHS)), np.array([12.0]))["grid"]
    picks = [float(r) for r in grid[::9]] + [0.0, float(grid[-1])]
    rates = np.array(sorted({r * f for r in picks for f in (1, 1 + 1e-12, 1 - 1e-12)}))
    flows = np.array([_polynomial_flows([r]) for r in rates])
    got, want, _ = compare(flows, np.full(len(rates), 12.0))
    inside = (rates >= -0.99) & (rates <= 10)  # a root outside the grid is none
    assert np.array_equal(np.isnan(got), ~inside)
    # each the rate it was built on, to the precision the NPV allows
    assert np.max(np.abs(got - rates)[inside] / np.maximum(np.abs(rates[inside]), 1e-4)) <= 1e-10
    assert got[list(rates).index(0.0)] == 0.0  # the NPV at 0 is exactly 0: the grid's own rate
    # the halvings found the same, but where the NPV at a grid rate is exactly 0 and the
    # bracket starts there (below 0 here): halvings read that 0 as below 0 and walk to the
    # bracket's other end, not a root; the steps keep the root
    differ = inside & (np.abs(got - want) > 1e-14)
    assert 0 < np.count_nonzero(differ) <= 10 and np.all(np.isin(rates[differ], grid))
    assert np.array_equal(got[differ], rates[differ])
    assert np.allclose(want[differ], grid[np.searchsorted(grid, rates[differ]) + 1], rtol=1e-14,
                       atol=0)
    # the risk draws' IRR keeps those roots too (below +1,000 % a month: there its grid NPV, a
    # matrix product, is not exactly 0, and a root exactly at the grid's end has no bracket)
    draws = risk.monthly_irr(given(flows, np.full(len(rates), 12.0)), grid)
    below = rates < grid[-1]
    assert np.array_equal(np.isnan(draws[below]), np.isnan(got[below]))
    assert np.nanmax(np.abs(draws - got)[below]) <= 1e-14


def test_roots_close_together_and_far_below_zero():
    """Two or three roots near one another (a bracket of the grid holds none of them, for the
    grid sees no sign change, or three: either search returns one of those), and roots near
    −99 % a month, where the NPV spans hundreds of orders of magnitude."""
    sets = [[-0.05, 0.02, 0.021], [0.3, 0.31, 0.305], [-0.97, -0.5],
            [-0.985, 0.01], [-0.95, -0.951, 2.0], [9.5, 0.001], [-0.02, 0.03, 0.031]]
    flows = np.array([_polynomial_flows(s, scale) for s in sets for scale in (1.0, 3e8)])
    got, want, _ = compare(flows, np.full(len(flows), 60.0))
    # 1.2 % and 1.25 % a month: one bracket, no sign change at its ends: none, as before
    two = np.array([_polynomial_flows([0.012, 0.0125], scale) for scale in (1.0, 3e8)])
    assert np.all(np.isnan(compare(two, np.full(2, 60.0))[0]))
    for g, w, s in zip(got, want, [s for s in sets for _ in range(2)], strict=True):
        assert min(abs(g - r) for r in s) <= 1e-10  # one of its roots, as the halvings' is
        assert min(abs(w - r) for r in s) <= 1e-10
    # three roots in one bracket of the grid (30 %, 30.5 %, 31 %): each search takes its own
    assert got[2] == pytest.approx(0.3, abs=1e-10) and want[2] == pytest.approx(0.31, abs=1e-10)
    others = np.ones(len(got), dtype=bool)
    others[[2, 3]] = False
    # two roots 0.1 % apart make the NPV nearly flat between them: its rounding fixes each
    # only to about 1e-11, and both searches land inside that
    assert np.max(np.abs(got - want)[others]) <= 1e-10
    # elsewhere to the rounding of the NPV: with −2 %, 3 % and 3.1 % as roots and flows of 3e8,
    # the NPV computed in floats is ±3.6e-7 about its root, which its slope there fixes to some
    # 4e-13 (either search is a root to that)
    assert np.max(np.abs(got - want)[others & ~np.isin(np.arange(len(got)), [0, 1])]) <= 1e-12


def test_no_root_and_a_single_month():
    flows = np.zeros((3, MONTHS))
    flows[0, :5] = [-1.0, -2.0, -3.0, -4.0, -5.0]  # never a sign change
    flows[1, :3] = [-1.0, 0.0, -1e-300]
    flows[2, 0] = 7.0
    got, want, _ = compare(flows, np.array([4.0, 2.0, 0.0]))
    assert np.all(np.isnan(got)) and np.all(np.isnan(want))
