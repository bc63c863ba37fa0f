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

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.catalogue import BY_NAME, COHORT_INHERITED, RISK_RANGES, Input
from .inputs import SiteInputs
from .operating_model import LINES, LISTS, SCENARIOS, _formula_constants, formula_inputs

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
@functools.lru_cache(maxsize=6)
def _model(key: str, irr: bool = True):
    """The model compiled for the live scenario's NPV and (with ``irr``) IRR only: the IRR's
    searches are two thirds of a variant's cost, and the tornado does without them."""
    from .formula import compile_lines, needed

    wanted = [f"out_npv_{key}"] + ([f"out_irr_{key}"] if irr else [])
    return compile_lines(needed(LINES, wanted))


def _scenario_key(inputs: SiteInputs) -> tuple[int, str]:
    index = next(i for i, sc in enumerate(SCENARIOS) if sc.name == inputs.scenario)
    return index, SCENARIOS[index].key


def evaluate(inputs: SiteInputs, values: Mapping[str, np.ndarray], *, irr: bool = True
             ) -> tuple[np.ndarray, np.ndarray]:
    """The live scenario's NPV and IRR (NaN: none; all NaN when ``irr`` is false, not
    computed) for each variant of the site.

    ``values`` maps a driver to one value per variant (all of the same length): the live
    scenario's value of a per-scenario input, the site's value otherwise, and for
    :data:`ALL_COHORTS` every cohort's own value scaled alike.
    """
    from .formula import _RowArray

    index, key = _scenario_key(inputs)
    model = _model(key, irr)
    constants = _formula_constants()
    base = formula_inputs(inputs)
    count = len(next(iter(values.values()))) if values else 1
    npv, irrs = np.empty(count), np.full(count, np.nan)
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
        out = model(given, constants, LISTS)
        npv[part] = np.broadcast_to(np.asarray(out[f"out_npv_{key}"], dtype=float),
                                    (part.stop - part.start,))
        if irr:
            irrs[part] = _numbers(out[f"out_irr_{key}"], part.stop - part.start)
    return npv, irrs


def _numbers(x: object, n: int) -> np.ndarray:
    """Figures as floats, NaN where the model says none."""
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        arr = np.vectorize(lambda v: float(v) if isinstance(v, (int, float)) else math.nan,
                           otypes=[float])(arr)
    return np.broadcast_to(arr.astype(float), (n,)).copy()


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


def tornado(inputs: SiteInputs, drivers: Sequence[str] = TORNADO_DRIVERS) -> Tornado:
    """The live scenario's project NPV at each driver's low and high value, sorted by swing."""
    flexes = [(name, *flex_values(inputs, name)) for name in drivers]
    count = 2 * len(flexes) + 1  # the last variant is the site as it is: the centre
    values = {name: np.full(count, live_value(inputs, name)) for name in drivers}
    for i, (name, low, high) in enumerate(flexes):
        values[name][2 * i], values[name][2 * i + 1] = low, high
    npv, _ = evaluate(inputs, values, irr=False)
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
    """Each risk driver's draws, triangular (constant where low = high)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in RISK_DRIVERS:
        low, mode, high = triangle(inputs, name)
        out[name] = rng.triangular(low, mode, high, draws) if high > low \
            else np.full(draws, mode)
    return out


def percentile(values: np.ndarray, q: float) -> float:
    """The q-th percentile as PERCENTILE.INC gives it (linear between the ranks)."""
    with np.errstate(invalid="ignore"):  # -inf (no IRR) beside a number: NaN, then none
        return float(np.percentile(values, q, method="linear"))


def risk(inputs: SiteInputs, draws: int = DEFAULT_DRAWS, seed: int = SEED) -> Risk:
    """P10/P50/P90 of the live scenario's NPV over ``draws`` draws of :data:`RISK_DRIVERS`, the
    probability the NPV is negative, and the median IRR (a draw without an IRR ranks below every
    IRR; ``None`` when the median falls among those)."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    npv, irr = evaluate(inputs, draw(inputs, draws, seed))
    ranked = np.where(np.isnan(irr), -np.inf, irr)
    irr_p50 = percentile(ranked, 50) if draws else math.nan
    return Risk(draws, seed, percentile(npv, 10), percentile(npv, 50), percentile(npv, 90),
                float(np.mean(npv)), float(np.mean(npv < 0)),
                irr_p50 if math.isfinite(irr_p50) else None, npv)
