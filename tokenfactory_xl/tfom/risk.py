"""Sensitivity and risk (methodology §8, §10.6): which assumptions move the NPV, how likely a
loss is.

An investment committee does not sign one NPV. The **tornado** gives the live scenario's project
NPV at a low and a high value of each driver, sorted by swing; **risk** draws the uncertain
drivers from triangular distributions around the live value and gives the NPV's P10, P50, P90
and mean, the probability of a loss and the median IRR. Each driver's range is an input
(``range_low_<driver>``, ``range_high_<driver>``: a factor of the live value, or an offset for
the decline, the availability and the discount rate), so the live case sits inside its own
distribution.

Both run the model itself, not an approximation of it: the compiled model evaluates a leading
axis of variants in one numpy pass (every flex of the tornado, every draw of the risk at once,
in chunks that bound the memory), restricted to the lines the NPV and the IRR need. A variant's
NPV is therefore exactly what ``tokenfactory-xl summary --set <driver>=<value>`` gives.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.catalogue import BY_NAME, COHORT_INHERITED, RISK_RANGES, Input
from .evaluation import LISTS, _formula_constants, formula_inputs
from .inputs import SiteInputs
from .operating_model import CONSTANT_VALUES, IRR_STEPS, SCENARIOS
from .sampling import Pcg64, check_triangle, triangular

#: The tornado's drivers (methodology §10.6), in the spec's order; ties in swing keep it.
TORNADO_DRIVERS: tuple[str, ...] = tuple(r.driver for r in RISK_RANGES)
#: Drivers flexed in every cohort alike: a cohort's own value moves by the same factor.
ALL_COHORTS: frozenset[str] = frozenset({"capex_per_gpu", "life_years"})

#: The risk's drivers (the first nine of the tornado's), drawn in this order from one generator.
RISK_DRIVERS: tuple[str, ...] = TORNADO_DRIVERS[:9]
_HOW: Mapping[str, str] = {r.driver: r.how for r in RISK_RANGES}
DEFAULT_DRAWS = 10_000
#: The fixed seed: the same inputs give the same figures, run after run.
SEED = 20_261_203
#: Variants evaluated together: bounds the memory (the IRR grid holds 221 rates per variant).
CHUNK = 500
#: The outputs of a risk run.
RISK_OUTPUTS: tuple[str, ...] = ("npv_p10", "npv_p50", "npv_p90", "npv_mean",
                                 "prob_npv_negative", "irr_p50")


# -- many variants of one site, in one pass --------------------------------------------------------
def _targets(key: str, irr: bool) -> tuple[str, ...]:
    """The live scenario's NPV and (with ``irr``) the project cash flow and the IRR grid's rates
    from which :func:`monthly_irr` finds the IRR: the model's own search (the grid and its
    Newton steps, each a power over every month) would be most of a variant's cost."""
    return (f"out_npv_{key}",) + ((f"cash_flow_{key}", f"irr_rate_project_{key}") if irr
                                  else ())


def _moved(names: Sequence[str]) -> frozenset[str]:
    """The inputs that moving ``names`` moves: for :data:`ALL_COHORTS`, each cohort's own
    value too."""
    return frozenset(names) | {f"fleet_{name}" for name in names
                               if name in ALL_COHORTS and name in COHORT_INHERITED}


def _scenario_key(inputs: SiteInputs) -> tuple[int, str]:
    index = next(i for i, sc in enumerate(SCENARIOS) if sc.name == inputs.scenario)
    return index, SCENARIOS[index].key


def evaluate(inputs: SiteInputs, values: Mapping[str, np.ndarray], *, irr: bool = True,
             whole: Mapping[str, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The live scenario's NPV and IRR (NaN: none; all NaN when ``irr`` is false, not
    computed) for each variant of the site.

    ``values`` maps a driver to one value per variant (all of the same length): the live
    scenario's value of a per-scenario input, the site's value otherwise, and for
    :data:`ALL_COHORTS` every cohort's own value scaled alike. ``whole``: the site's values
    from a run of the whole model (``Result.values``), where the caller has them: the lines no
    variant moves are then read from it, not computed again.
    """
    count = _count(values)
    npv, irrs = np.empty(count), np.full(count, np.nan)
    for part, npv_part, brackets in _passes(inputs, values, irr, whole):
        npv[part] = npv_part
        if brackets is not None:
            irrs[part] = _yearly(brackets.roots())
    return npv, irrs


def _count(values: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(values.values()))) if values else 1


def _yearly(monthly: np.ndarray) -> np.ndarray:
    """As the model's yearly IRR: (1 + IRR_m)^12 − 1."""
    with np.errstate(all="ignore"):
        return np.power(1.0 + monthly, CONSTANT_VALUES["months_per_year"]) - 1.0


def _passes(inputs: SiteInputs, values: Mapping[str, np.ndarray], irr: bool,
            whole: Mapping[str, np.ndarray] | None = None
            ) -> Iterator[tuple[slice, np.ndarray, IrrBrackets | None]]:
    """:func:`evaluate`'s passes of the model, :data:`CHUNK` variants each: which variants,
    their NPVs and (with ``irr``) the brackets of their IRRs."""
    from .runtime import _RowArray
    from .variants import variant_model

    index, key = _scenario_key(inputs)
    model = variant_model(_targets(key, irr), _moved(tuple(values)))
    constants = _formula_constants()
    base = formula_inputs(inputs)
    fixed = model.site_values(base, constants, LISTS, whole)  # what no variant moves, once
    count = _count(values)
    for start in range(0, count, CHUNK):
        part = slice(start, min(count, start + CHUNK))
        given = dict(base)
        for name, column in values.items():
            v = np.asarray(column, dtype=float)[part]
            if BY_NAME[name].per_scenario:
                row = np.tile(np.asarray(base[name], dtype=float), (len(v), 1))
                row[:, index] = v
                given[name] = row.view(_RowArray)
            else:
                given[name] = v
            if name in ALL_COHORTS and name in COHORT_INHERITED:
                own = np.asarray(base[f"fleet_{name}"], dtype=float)
                site = float(base[name])  # type: ignore[arg-type]
                # a cohort's own value moves by the site's factor; a site value of 0 has none,
                # and its cohorts keep their own values
                factor = v / site if site != 0 else np.ones_like(v)
                given[f"fleet_{name}"] = (own[None, :] * factor[:, None]).view(_RowArray)
        out = model(given, fixed, constants, LISTS)
        npv = np.broadcast_to(np.asarray(out[f"out_npv_{key}"], dtype=float),
                              (part.stop - part.start,))
        brackets = None
        if irr:
            flows = out.zero_filled(f"cash_flow_{key}")  # blanks as 0, as the scan reads them
            flows = np.broadcast_to(flows, (part.stop - part.start, flows.shape[-1]))
            brackets = IrrBrackets(flows, np.asarray(out[f"irr_rate_project_{key}"],
                                                     dtype=float), blank_free=True)
            del flows
        # this pass's lines let go before the next pass computes its own: half the memory
        # (each first use of a page of memory costs the system a fault)
        del out, given
        yield part, npv, brackets


def _numbers(x: object, n: int) -> np.ndarray:
    """Figures as floats, NaN where the model says none."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        arr = np.vectorize(lambda v: float(v) if isinstance(v, (int, float)) else math.nan,
                           otypes=[float])(arr)
    return np.broadcast_to(arr.astype(float), (n,)).copy()


# -- the IRR of many cash flows at once --------------------------------------------------------
#: Newton steps (each backed by false position) before a cash flow falls back to halving.
IRR_ITERATIONS = 50


def monthly_irr(cash_flows: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The monthly IRR [fraction/month] of each row of ``cash_flows`` (months 0, 1, …; NaN beyond
    the horizon), the root the model's own IRR search finds (methodology §4.3, §4.6): NaN where
    it has none.

    The model's search, declared once in :mod:`~tokenfactory_xl.tfom.operating_model.irr` for the
    workbook, takes the NPV at each rate of ``grid`` (its ``irr_rate`` line), the first sign
    change at or above 0 and the last below it, and steps into each bracket by Newton's method
    kept inside it (earlier versions halved it sixty times: the same root); the root is the
    nearer to 0 of the two. Here the grid's NPVs are one matrix product for every row, and
    each bracket's root is found by Newton's method from the false-position point of the
    bracket, a step that leaves the bracket replaced by false position (the Illinois variant),
    the powers of v = 1 ÷ (1 + r) by a cumulative product, and only the rows not yet converged
    stepping on. A bracket with an NPV of exactly 0 at an end gets that rate, as in the model;
    a root not found in :data:`IRR_ITERATIONS` steps is found by halving the bracket, so every
    row gets the model's root (to about 1e-15).
    """
    return IrrBrackets(cash_flows, grid).roots()


class IrrBrackets:
    """The brackets of :func:`monthly_irr`'s search for rows of cash flows: the grid's NPVs
    scanned once, each row's root then found in its brackets (:meth:`roots`), for every row
    or only for some (a median needs only the rows that may hold it: :meth:`bounds`)."""

    def __init__(self, cash_flows: np.ndarray, grid: np.ndarray, *, blank_free: bool = False):
        """``blank_free``: ``cash_flows`` hold no blank month (NaN), its blanks given as 0
        already (the risk's passes: :meth:`~tokenfactory_xl.tfom.compiler._Lines.zero_filled`)."""
        flows = np.atleast_2d(np.asarray(cash_flows, dtype=float))
        grid = np.asarray(grid, dtype=float)
        # a blank month adds nothing
        cf = np.ascontiguousarray(flows) if blank_free else np.where(np.isnan(flows), 0.0, flows)
        with np.errstate(all="ignore"):
            npv = cf @ _discount_table(grid, flows.shape[-1])
        finite = np.isfinite(npv)
        if not finite.all():
            npv[~finite] = np.nan  # IFERROR(…, ""): no figure at that rate
        # the NPV changes sign between two neighbouring rates: SIGN(a) × SIGN(b) ≤ 0, neither
        # blank (a blank is neither ≥ 0 nor ≤ 0)
        with np.errstate(invalid="ignore"):
            nonneg, nonpos = npv >= 0, npv <= 0
        change = (nonneg[:, :-1] & nonpos[:, 1:]) | (nonpos[:, :-1] & nonneg[:, 1:])
        self.cf = cf
        #: For the bracket above 0 and the one below: the rows that have it, its ends and the
        #: NPVs there (:func:`_brackets`).
        self.kinds: list[tuple[np.ndarray, ...]] = [
            (rows, grid[at], grid[at + 1], npv[rows, at], npv[rows, at + 1])
            for rows, at in _brackets(change, grid)]
        # the flows must change sign: MIN < 0 < MAX over the months given (no month: 0; a
        # blank month, 0 in ``cf``, moves neither test; an infinite MIN or MAX counts as 0)
        low, high = cf.min(axis=1, initial=0.0), cf.max(axis=1, initial=0.0)
        self.signed = (np.where(np.isinf(low), 0.0, low) < 0) \
            & (np.where(np.isinf(high), 0.0, high) > 0)

    def __len__(self) -> int:
        return len(self.cf)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row, rates between which its IRR lies (the bracket the root is taken from, or
        both brackets' span when it has two); −inf for both where it has none."""
        n = len(self)
        (up, up_low, up_high, *_), (down, down_low, down_high, *_) = self.kinds
        has_up, has_down = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        has_up[up], has_down[down] = True, True
        low, high = np.full(n, np.inf), np.full(n, -np.inf)
        low[up], high[up] = up_low, up_high
        low[down] = down_low  # a bracket below 0 starts lower than one above it
        high[down] = np.where(has_up[down], high[down], down_high)
        found = self.signed & (has_up | has_down)
        return np.where(found, low, -np.inf), np.where(found, high, -np.inf)

    def roots(self, only: np.ndarray | None = None) -> np.ndarray:
        """Each row's monthly IRR, NaN where it has none; with ``only`` (a mask of rows), the
        others' left NaN, not searched."""
        return _roots([(self, only)])[0]


def _roots(searches: Sequence[tuple[IrrBrackets, np.ndarray | None]]) -> list[np.ndarray]:
    """:meth:`IrrBrackets.roots` of each of ``searches`` (brackets and the mask of rows to
    search, ``None`` for all), every pass's rows searched at once: numpy's calls cost the same
    for 20 rows as for 400, and a risk run searches some 20 rows in each of its 20 passes.

    The root of a row is that of the pass's own search to the last bit: each step's arithmetic
    is row by row, except the slope's product of a matrix and a vector, whose last bits depend
    on the rows beside each row (the BLAS routine's blocks); it is computed for each pass's
    rows apart, the same rows in the same order as that pass's search alone (``groups``)."""
    found = [[np.full(len(brackets), np.nan) for brackets, _ in searches] for _ in range(2)]
    for kind in range(2):
        picked = []
        for i, (brackets, only) in enumerate(searches):
            rows, a, b, fa, fb = brackets.kinds[kind]
            pick = np.arange(len(rows)) if only is None else np.flatnonzero(only[rows])
            if pick.size:  # a search of no row is skipped, not run empty
                picked.append((i, rows[pick], brackets.cf[rows[pick]], a[pick], b[pick],
                               fa[pick], fb[pick]))
        if not picked:
            continue
        cf, a, b, fa, fb = (np.concatenate([p[k] for p in picked]) for k in range(2, 7))
        root = _bracketed_root(cf, a, b, fa, fb, groups=[len(p[1]) for p in picked])
        start = 0
        for i, rows, *_ in picked:
            found[kind][i][rows] = root[start:start + len(rows)]
            start += len(rows)
    out = []
    for (brackets, _), up, down in zip(searches, *found, strict=True):
        nearest = np.where(np.isnan(down), up,
                           np.where(np.isnan(up) | (np.abs(down) < np.abs(up)), down, up))
        roots = np.full(len(brackets), np.nan)
        roots[brackets.signed] = nearest[brackets.signed]
        out.append(roots)
    return out


#: The last grid's table of discount factors (the grid is the model's, the same for every site).
_TABLE: list[tuple[bytes, int, np.ndarray]] = []


def _discount_table(grid: np.ndarray, months: int) -> np.ndarray:
    """(1 + rate)^−month for each month 0 … ``months`` − 1 (rows) and rate of ``grid``
    (columns): the same powers for every pass of a run, computed once."""
    key = grid.tobytes()
    if _TABLE and _TABLE[0][0] == key and _TABLE[0][1] == months:
        return _TABLE[0][2]
    with np.errstate(all="ignore"):
        table = np.power(1.0 + grid[None, :], -np.arange(months, dtype=float)[:, None])
    table.flags.writeable = False
    _TABLE[:] = [(key, months, table)]
    return table


def _brackets(change: np.ndarray, grid: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """For the bracket above 0 and the one below, the rows of ``change`` (a sign change
    between rates j and j + 1 of ``grid``) that have one and its position j: "above", the
    lower rate of a bracket at or above 0, the smallest; "below", minus the upper rate of a
    bracket at or below 0, the smallest; each the first position holding it (MATCH).

    On a grid of rising rates (the model's) that is the first change from the first rate at or
    above 0, and the last change before the first rate above 0: a search along each row, not a
    table of candidate rates (the same positions: the general rule is kept for any other grid).
    """
    if grid.size >= 2 and bool(np.all(grid[1:] > grid[:-1])):
        first = int(np.searchsorted(grid[:-1], 0.0, side="left"))  # grid[j] ≥ 0 from here
        last = int(np.searchsorted(grid[1:], 0.0, side="right"))  # grid[j + 1] ≤ 0 below it
        above, below = change[:, first:], change[:, :last][:, ::-1]
        up, down = np.flatnonzero(above.any(axis=1)), np.flatnonzero(below.any(axis=1))
        return [(up, first + np.argmax(above[up], axis=1)),
                (down, last - 1 - np.argmax(below[down], axis=1))]
    out = []
    for ok, key in ((change & (grid[:-1] >= 0), grid[:-1]),
                    (change & (grid[1:] <= 0), -grid[1:])):
        candidates = np.where(ok, key, np.inf)
        best = candidates.min(axis=1)
        rows = np.flatnonzero(np.isfinite(best))
        out.append((rows, np.argmax(candidates[rows] == best[rows, None], axis=1)))
    return out


def _npv_and_slope(cf: np.ndarray, rate: np.ndarray, groups: Sequence[int] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Σ cf_m v^m and its derivative in the rate, −Σ m cf_m v^(m+1), at v = 1 ÷ (1 + rate);
    with ``groups`` (counts of consecutive rows), the slope's matrix product is taken for each
    group of rows apart (:func:`_roots`)."""
    v = 1.0 / (1.0 + rate)
    powers = np.empty_like(cf)
    powers[:, 0] = 1.0
    if cf.shape[1] > 1:
        powers[:, 1:] = v[:, None]
        np.cumprod(powers[:, 1:], axis=1, out=powers[:, 1:])
    weighted = cf * powers
    npv = weighted.sum(axis=1)
    months = np.arange(1.0, cf.shape[1])
    if groups is None or len(groups) == 1:
        return npv, -v * (weighted[:, 1:] @ months)
    ends = np.cumsum(groups)
    return npv, -v * np.concatenate([weighted[end - count:end, 1:] @ months
                                     for count, end in zip(groups, ends.tolist(), strict=True)
                                     if count])


def _bracketed_root(cf: np.ndarray, a: np.ndarray, b: np.ndarray, fa: np.ndarray,
                    fb: np.ndarray, groups: Sequence[int] | None = None) -> np.ndarray:
    """A root of each row's NPV in [a, b], where the NPV changes sign (fa × fb ≤ 0); with
    ``groups`` (counts of consecutive rows, :func:`_roots`), each group's roots those of a search
    of its rows alone, to the last bit."""
    bounds = None if groups is None else np.cumsum([0, *groups])
    a0, b0, fa0 = (np.asarray(x, dtype=float) for x in (a, b, fa))
    a, b, fa, fb = (np.array(x, dtype=float) for x in (a, b, fa, fb))
    out = np.full(len(cf), np.nan)
    # an NPV of exactly 0 at an end of the bracket: the model keeps that rate (its low end first)
    out = np.where(fa == 0, a, np.where(fb == 0, b, out))
    halve = np.zeros(len(cf), dtype=bool)
    with np.errstate(all="ignore"):
        x = np.where(fb == fa, (a + b) / 2, a - fa * (b - a) / (fb - fa))
        x = np.where((x > a) & (x < b), x, (a + b) / 2)
    side = np.zeros(len(cf))  # which end the last step replaced (−1 low, +1 high): Illinois
    todo = np.flatnonzero((fa != 0) & (fb != 0))
    for _ in range(IRR_ITERATIONS):
        if todo.size == 0:
            break
        with np.errstate(all="ignore"):
            f, slope = _npv_and_slope(cf[todo], x[todo], None if bounds is None
                                      else np.diff(np.searchsorted(todo, bounds)).tolist())
            lo, hi, flo, fhi = a[todo], b[todo], fa[todo], fb[todo]
            same_as_low = np.sign(f) == np.sign(flo)
            # the bracket shrinks to the side where the sign changes; an end kept twice in a
            # row has its NPV halved (Illinois), so that false position cannot stall
            keep = side[todo]
            flo = np.where(~same_as_low & (keep == 1), flo / 2, flo)
            fhi = np.where(same_as_low & (keep == -1), fhi / 2, fhi)
            lo = np.where(same_as_low, x[todo], lo)
            flo = np.where(same_as_low, f, flo)
            hi = np.where(same_as_low, hi, x[todo])
            fhi = np.where(same_as_low, fhi, f)
            side[todo] = np.where(same_as_low, -1.0, 1.0)
            step = np.where(slope != 0, f / slope, np.inf)
            newton = x[todo] - step
            inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
            regula = np.where(fhi == flo, (lo + hi) / 2, lo - flo * (hi - lo) / (fhi - flo))
            regula = np.where((regula > lo) & (regula < hi), regula, (lo + hi) / 2)
            nxt = np.where(inside, newton, regula)
        lost = ~np.isfinite(f)  # an NPV out of floating range: halved as the model halves
        halve[todo[lost]] = True
        done = lost | (f == 0) | (inside & (np.abs(step) <= 1e-14 * (1 + np.abs(x[todo])))) \
            | (hi - lo <= 4e-16 * (1 + np.abs(x[todo])))
        found = done & ~lost
        out[todo[found]] = np.where(f[found] == 0, x[todo[found]], nxt[found])
        a[todo], b[todo], fa[todo], fb[todo], x[todo] = lo, hi, flo, fhi, nxt
        todo = todo[~done]
    halve[todo] = True
    rows = np.flatnonzero(halve)
    if rows.size:
        out[rows] = _halving(cf[rows], a0[rows], b0[rows], fa0[rows])
    return out


def _halving(cf: np.ndarray, low: np.ndarray, high: np.ndarray, f_low: np.ndarray
             ) -> np.ndarray:
    """Bisection of each bracket [low, high], as the model searched before its Newton steps:
    sixty halvings, the last midpoint."""
    months = np.arange(cf.shape[1], dtype=float)

    def npv(rate: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return (cf * np.power(1.0 + rate[:, None], -months)).sum(axis=1)

    mid = (low + high) / 2
    f_mid = npv(mid)
    for _ in range(1, IRR_STEPS):
        keep_low = (f_mid > 0) == (f_low > 0)  # the root is above the midpoint
        low, high = np.where(keep_low, mid, low), np.where(keep_low, high, mid)
        f_low = np.where(keep_low, f_mid, f_low)
        mid = (low + high) / 2
        f_mid = npv(mid)
    return mid


def live_value(inputs: SiteInputs, name: str) -> float:
    """A driver's value for the live scenario."""
    value = inputs[name]
    if isinstance(value, tuple):
        return float(value[_scenario_key(inputs)[0]])
    return float(value)  # type: ignore[arg-type]


def _clip(spec: Input, value: float) -> float:
    if spec.high is not None:
        value = min(value, spec.high)
    if spec.low is not None and not spec.low_open:
        value = max(value, spec.low)
    return float(value)


# -- the tornado ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flex:
    """One driver of the tornado: its low and high value and the NPV at each."""

    name: str
    label: str
    value: float
    low: float
    high: float
    npv_low: float
    npv_high: float

    @property
    def swing(self) -> float:
        return abs(self.npv_high - self.npv_low)


@dataclass(frozen=True)
class Tornado:
    npv: float  # the live NPV: the tornado's centre
    drivers: tuple[Flex, ...]  # sorted by swing, largest first

    def as_json(self) -> dict[str, object]:
        return {"npv": self.npv, "drivers": [
            {"name": f.name, "low": f.low, "high": f.high, "npv_low": f.npv_low,
             "npv_high": f.npv_high} for f in self.drivers]}


def flex_values(inputs: SiteInputs, name: str) -> tuple[float, float]:
    """A driver's low and high value (methodology §10.6): the live value v × the range's factors
    (or v + its offsets), kept inside the driver's allowed range; turned round where v < 0
    makes the low end the higher (a shrinking market)."""
    spec, value = BY_NAME[name], live_value(inputs, name)
    lo = float(inputs[f"range_low_{name}"])  # type: ignore[arg-type]
    hi = float(inputs[f"range_high_{name}"])  # type: ignore[arg-type]
    low, high = (value * lo, value * hi) if _HOW[name] == "factor" else (value + lo, value + hi)
    low, high = _clip(spec, low), _clip(spec, high)
    return (high, low) if low > high else (low, high)


def tornado(inputs: SiteInputs, drivers: Sequence[str] = TORNADO_DRIVERS,
            whole: Mapping[str, np.ndarray] | None = None) -> Tornado:
    """The live scenario's project NPV at each driver's low and high value, sorted by swing
    (``whole``: as :func:`evaluate`'s)."""
    flexes = [(name, *flex_values(inputs, name)) for name in drivers]
    count = 2 * len(flexes) + 1  # the last variant is the site as it is: the centre
    values = {name: np.full(count, live_value(inputs, name)) for name in drivers}
    for i, (name, low, high) in enumerate(flexes):
        values[name][2 * i], values[name][2 * i + 1] = low, high
    npv, _ = evaluate(inputs, values, irr=False, whole=whole)
    out = [Flex(name, BY_NAME[name].label, live_value(inputs, name), low, high,
                float(npv[2 * i]), float(npv[2 * i + 1]))
           for i, (name, low, high) in enumerate(flexes)]
    order = sorted(range(len(out)), key=lambda i: (-out[i].swing, i))
    return Tornado(float(npv[-1]), tuple(out[i] for i in order))


# -- risk ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Risk:
    draws: int
    seed: int
    npv_p10: float
    npv_p50: float
    npv_p90: float
    npv_mean: float
    prob_npv_negative: float
    irr_p50: float | None
    npv: np.ndarray  # every draw's NPV, for the histogram

    def as_json(self) -> dict[str, object]:
        return {"draws": self.draws, "seed": self.seed, "npv_p10": self.npv_p10,
                "npv_p50": self.npv_p50, "npv_p90": self.npv_p90, "npv_mean": self.npv_mean,
                "prob_npv_negative": self.prob_npv_negative, "irr_p50": self.irr_p50}

    def summary(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in RISK_OUTPUTS}


def triangle(inputs: SiteInputs, name: str) -> tuple[float, float, float]:
    """A risk driver's low, mode and high: its range around the live value (:func:`flex_values`),
    the live value the mode."""
    low, high = flex_values(inputs, name)
    return low, live_value(inputs, name), high


def draw(inputs: SiteInputs, draws: int = DEFAULT_DRAWS, seed: int = SEED
         ) -> dict[str, np.ndarray]:
    """Each risk driver's draws, triangular (constant where low = high), from one generator
    in :data:`RISK_DRIVERS`' order: the numbers ``numpy.random.default_rng(seed)``'s
    ``triangular`` gives, one driver after the other (:class:`~.sampling.Pcg64`)."""
    drivers = [(name, *triangle(inputs, name)) for name in RISK_DRIVERS]
    drawn = [d for d in drivers if d[3] > d[1]]
    for _, low, mode, high in drawn:
        check_triangle(low, mode, high)
    uniform = Pcg64(seed).doubles(len(drawn) * draws).reshape(len(drawn), draws)
    given = iter(uniform)
    return {name: triangular(next(given), low, mode, high) if high > low
            else np.full(draws, mode) for name, low, mode, high in drivers}


#: Up to this many draws, the median IRR searches only the draws that may hold it
#: (:func:`_ranked_for_median`), keeping every draw's cash flows meanwhile (1 kB a draw).
MEDIAN_BY_BOUNDS_MOST = 50_000


def _ranked_for_median(inputs: SiteInputs, values: Mapping[str, np.ndarray],
                       whole: Mapping[str, np.ndarray] | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Every draw's NPV, and its IRR ranked as :func:`risk` ranks it (no IRR: −inf) where it
    may be one of the two the median reads, −inf or +inf elsewhere (below or above them).

    A median reads two ranks. Each draw's IRR lies in a bracket of the grid its search starts
    from (:meth:`IrrBrackets.bounds`); a draw whose bracket ends below the lower rank's
    lowest possible value (the brackets' starts at that rank) ranks below it, one whose
    bracket starts above the upper rank's highest (the brackets' ends at that rank) ranks
    above it, and only the draws between are searched (a few per cent of them, every pass's
    at once: :func:`_roots`): the median is that of every draw's IRR."""
    count = _count(values)
    npv = np.empty(count)
    passes, low, high = [], np.empty(count), np.empty(count)
    for part, npv_part, brackets in _passes(inputs, values, irr=True, whole=whole):
        npv[part] = npv_part
        passes.append((part, brackets))
        low[part], high[part] = brackets.bounds()
    lower = (count - 1) // 2  # PERCENTILE.INC's 50th reads this rank and the next
    upper = min(lower + 1, count - 1)
    floor = np.partition(low, lower)[lower]
    ceiling = np.partition(high, upper)[upper]
    ranked = np.where(high < floor, -np.inf, np.inf)
    between = (high >= floor) & (low <= ceiling)
    searches = [(part, brackets, between[part]) for part, brackets in passes]
    searches = [(part, brackets, only) for part, brackets, only in searches if only.any()]
    for (part, _, only), roots in zip(searches, _roots([(b, o) for _, b, o in searches]),
                                      strict=True):
        yearly = _yearly(roots)
        ranked[part][only] = np.where(np.isnan(yearly), -np.inf, yearly)[only]
    return npv, ranked


def percentile(values: np.ndarray, q: float) -> float:
    """The q-th percentile as PERCENTILE.INC gives it (linear between the ranks): the value at
    rank (n − 1) × q ÷ 100 of the sorted values, between two ranks the nearer's value moved
    toward the other's by the fraction; NaN where a value is NaN, or where the two values are
    −inf and a number (a draw without an IRR beside one with).

    Step for step what ``np.percentile(values, q)`` computes, to the last bit (a test compares
    them), without its first call's import of ``numpy.ma`` (30 ms of a risk run's CPU)."""
    values = np.asarray(values, dtype=float).ravel()
    count = len(values)
    if count == 0 or np.isnan(values).any():
        return math.nan
    rank = (count - 1) * (q / 100)
    below = math.floor(rank)
    if rank >= count - 1:  # the last value (numpy's index −1, the weight measured from it)
        below, above, weight = count - 1, count - 1, rank + 1
    else:
        above, weight = below + 1, rank - below
    ranked = np.partition(values, sorted({below, above}))
    low, high = float(ranked[below]), float(ranked[above])
    with np.errstate(all="ignore"):
        step = np.float64(high) - np.float64(low)
        if weight >= 0.5:
            return float(np.float64(high) - step * (1 - weight))
        return float(np.float64(low) + step * weight)


def risk(inputs: SiteInputs, draws: int = DEFAULT_DRAWS, seed: int = SEED,
         whole: Mapping[str, np.ndarray] | None = None) -> Risk:
    """P10/P50/P90 of the live scenario's NPV over ``draws`` draws of :data:`RISK_DRIVERS`, the
    probability the NPV is negative, and the median IRR (a draw without an IRR ranks below every
    IRR; ``None`` when the median falls among those). ``whole``: as :func:`evaluate`'s."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    values = draw(inputs, draws, seed)
    if draws > MEDIAN_BY_BOUNDS_MOST:
        npv, irr = evaluate(inputs, values, whole=whole)
        ranked = np.where(np.isnan(irr), -np.inf, irr)
    else:
        npv, ranked = _ranked_for_median(inputs, values, whole)
    irr_p50 = percentile(ranked, 50) if draws else math.nan
    return Risk(draws, seed, percentile(npv, 10), percentile(npv, 50), percentile(npv, 90),
                float(np.mean(npv)), float(np.mean(npv < 0)),
                irr_p50 if math.isfinite(irr_p50) else None, npv)
