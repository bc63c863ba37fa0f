"""What must be true: the value of one input at which a summary output meets a target.

The tornado (:mod:`tokenfactory_xl.tfom.risk`) says how far each assumption moves the NPV; a board
asks the inverse: *what TEF target, price factor or CapEx per GPU makes the NPV zero, or the IRR
our hurdle rate?* :func:`solve` answers it with the model itself, not an approximation:

1. **scan** the input's allowed range (the catalogue's bounds; an input without an upper bound
   from its lower bound to :data:`UNBOUNDED_SPAN` × its value, widened tenfold up to
   :data:`WIDEN` times while the target lies beyond) at :data:`SCAN_POINTS` values, all in one
   numpy pass of the compiled model (its leading axis of variants, as the risk run uses);
2. **bracket**: two neighbouring values at which the output lies on either side of the target
   (values the inputs' own rules refuse, such as a salvage above the CapEx, and values at which
   the output is "none" take no part);
3. **refine** each bracket by :data:`SECTIONS`-section until the output is within
   :func:`tolerance` of the target (a cent for money, 1e-9 otherwise) or the bracket is two
   neighbouring whole numbers (an integer input) or two neighbouring floats (the output jumps
   across the target there: said so).

A pass of the model costs about as much for a hundred values as for fifteen, so the passes are
shared: a pass that computes a step's values also computes those of the steps the search will
likely take next (:func:`_ahead`: along the chord and the parabolas through the bracket and its
neighbours; from the scan's pass itself where the caller knows outputs near, such as the
tornado's), and every value's output is kept. Each step still decides on the model's own
figures, and a variant's figures do not depend on the others of its pass: what the search finds
is what a pass per step finds, to the last bit (the Risk sheet's twelve solves make about 23
passes instead of 69).

A value found is exactly what ``tokenfactory-xl summary --set INPUT=VALUE`` computes: a variant's
arithmetic is the same elementwise sequence a single run does. When no value of the range meets
the target, the answer says so and which end of the range comes closest.

A per-scenario input (``tef_target``) is the live scenario's value and the target is read in the
live scenario; named for one scenario (``tef_target.Optimised``) it is that scenario's value and
the target is that scenario's output.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.catalogue import BY_NAME, SCENARIO_NAMES, BadValue, fmt_number, name_fix
from ..core.errors import InputError, Problem
from .evaluation import LISTS, _formula_constants, formula_inputs
from .inputs import SiteInputs, split_key
from .operating_model import OUTPUTS
from .operating_model import SCENARIOS as MODEL_SCENARIOS

#: Values of the input evaluated in the first scan of its range (one numpy pass).
SCAN_POINTS = 65
#: Points inside a bracket evaluated at each step of the refinement (one numpy pass).
SECTIONS = 15
#: Steps of refinement at most: 15 sections a step shrink any bracket below a float's spacing.
MAX_STEPS = 40
#: An input without an upper bound is first searched up to this many times its value (or 1) …
UNBOUNDED_SPAN = 10.0
#: … and the span widened tenfold at most this many times while the target lies beyond it.
WIDEN = 6
#: Brackets refined at most: the one nearest the input's value first.
MAX_ROOTS = 5
#: Targets named as users say them, and the output they mean: a lender's DSCR covenant is
#: tested on the weakest year.
TARGET_ALIASES: Mapping[str, str] = {"dscr": "min_dscr"}
#: Outputs by name.
OUTPUT_BY_NAME = {o.name: o for o in OUTPUTS}
#: The kinds of input a solve can move.
NUMERIC_KINDS = ("number", "integer", "fraction")


@dataclass(frozen=True)
class Target:
    """``output = value``: a summary output of methodology §7 and the value it should take."""

    output: str
    value: float
    text: str  # as the user wrote it

    @property
    def unit(self) -> str:
        return OUTPUT_BY_NAME[self.output].unit

    @property
    def kind(self) -> str:
        return OUTPUT_BY_NAME[self.output].kind


def parse_target(text: str) -> Target:
    """``"npv=0"``, ``"irr=15%"``, ``"payback_months=36"``, ``"dscr=1.2"`` → a :class:`Target`.

    A fraction output's target is a fraction (``irr=0.15``) or a percentage (``irr=15%``);
    ``irr=15`` is 1,500 % (an IRR may exceed 100 %: the target is echoed as a percentage).
    Raises :class:`InputError` naming the problem: not ``OUTPUT=VALUE``, an output the model does
    not have, a value that is not a number.
    """
    name, sep, raw = text.partition("=")
    name = name.strip().lower()
    if not sep or not name or not raw.strip():
        raise InputError([Problem("--target", text, "is not OUTPUT=VALUE",
                                  "e.g. --target npv=0, --target irr=0.15 or --target "
                                  "payback_months=36")])
    output = TARGET_ALIASES.get(name, name)
    if output not in OUTPUT_BY_NAME:
        fix = name_fix(name, list(OUTPUT_BY_NAME) + list(TARGET_ALIASES),
                       "the outputs are listed by `tokenfactory-xl summary` (last column)")
        raise InputError([Problem("--target", text, f"names {name!r}, which is not an output "
                                  "of the model", fix)])
    spec = OUTPUT_BY_NAME[output]
    number = raw.strip().replace(",", "")
    percent = number.endswith("%")
    try:
        value = float(number.rstrip("%")) / (100 if percent else 1)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError([Problem("--target", text, f"{raw.strip()!r} is not a number",
                                  f"give the {output} to reach, e.g. {output}=0")])
    if percent and spec.kind != "fraction":
        raise InputError([Problem("--target", text, f"is a percentage, but {output} is in "
                                  f"{spec.unit}", f"give a number, e.g. {output}="
                                  f"{fmt_number(value * 100)}")])
    return Target(output, value, text.strip())


@dataclass(frozen=True)
class Solvable:
    """The input a solve moves: its catalogue entry, the key ``--set`` takes, and the scenario
    whose value it is (per-scenario inputs) and whose output the target reads."""

    name: str
    key: str  # tef_target.Optimised, or the bare name
    scenario: str
    index: int  # the scenario's position (Base, Optimised, Downside)

    @property
    def spec(self):
        return BY_NAME[self.name]


def solvable(text: str, inputs: SiteInputs) -> Solvable:
    """The input ``--for`` names; raises :class:`InputError` for an unknown or a non-numeric
    input."""
    try:
        name, scenario = split_key(text)
    except BadValue as exc:
        raise InputError([Problem("--for", text, exc.message, exc.fix)]) from None
    spec = BY_NAME.get(name)
    if spec is None:
        raise InputError([Problem("--for", text, "is not a known input", name_fix(name))])
    if spec.kind not in NUMERIC_KINDS:
        raise InputError([Problem("--for", text, f"is {spec.allowed}, not a number: a solve "
                                  "moves a numeric input", "choose a numeric input, e.g. "
                                  "tef_target")])
    scenario = scenario or inputs.scenario
    key = f"{name}.{scenario}" if spec.per_scenario and scenario != inputs.scenario else name
    return Solvable(name, key, scenario, SCENARIO_NAMES.index(scenario))


def tolerance(target: Target) -> float:
    """How close to the target the output must come: a cent of a money output, else 1e-9 of
    the target (at least 1e-9)."""
    if target.unit.startswith("money"):
        return 0.005
    return 1e-9 * max(1.0, abs(target.value))


@dataclass(frozen=True)
class Solution:
    """A solve's answer.

    ``value`` is the input's value at which ``output`` comes within :func:`tolerance` of
    ``target`` (``reached``); when no value of ``[low, high]`` does, ``value`` is the end of the
    range whose output comes closest (``closest``: ``"low"`` or ``"high"``) and ``reached`` is
    false. ``jump`` is true when the output jumps across the target at ``value`` (no value meets
    it exactly: ``output_at_value`` and ``output_beyond`` are the two sides). ``roots`` lists
    every value found that meets the target, nearest to the input's current value first.
    """

    site: str
    input: str
    key: str
    scenario: str
    output: str
    target: float
    current: float | None
    output_now: float | None
    low: float
    high: float
    output_low: float | None
    output_high: float | None
    reached: bool
    value: float | None
    output_at_value: float | None
    closest: str | None = None
    jump: bool = False
    output_beyond: float | None = None
    roots: tuple[float, ...] = ()
    bounded: bool = True
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, object]:
        def plain(x: object) -> object:  # numpy's scalars as JSON's
            if isinstance(x, (bool, np.bool_)):
                return bool(x)
            if isinstance(x, (int, np.integer)):
                return int(x)
            return float(x) if isinstance(x, (float, np.floating)) else x

        return {k: [plain(v) for v in x] if isinstance(x, list) else plain(x)
                for k, x in self._fields().items()}

    def _fields(self) -> dict[str, object]:
        return {"site": self.site, "input": self.input, "key": self.key,
                "scenario": self.scenario, "output": self.output, "target": self.target,
                "reached": self.reached, "value": self.value,
                "output_at_value": self.output_at_value, "current": self.current,
                "output_now": self.output_now, "low": self.low, "high": self.high,
                "output_low": self.output_low, "output_high": self.output_high,
                "closest": self.closest, "jump": self.jump,
                "output_beyond": self.output_beyond, "roots": list(self.roots),
                "notes": list(self.notes)}


# -- many values of one input, in one pass --------------------------------------------------------
class _Site:
    """What every solve of one site reads alike: its inputs as the compiled model takes them,
    the model's constants, and the whole model's values where the caller has them."""

    def __init__(self, inputs: SiteInputs, whole: Mapping[str, np.ndarray] | None):
        self.inputs, self.whole = inputs, whole
        self.base = formula_inputs(inputs)
        self.constants = _formula_constants()


class _Evaluator:
    """The output ``target`` of the site with the input moved to each of many values.

    Each value's output is kept: a pass of the model costs about as much for one value as for a
    hundred (its lines run once over the values' axis), so a search asks for the values it will
    need next in the pass that computes those it needs now (``ahead``), and finds them kept.
    A variant's output does not depend on the others of its pass (each line is elementwise
    along that axis: the same figures to the last bit), so what a search finds does not depend
    on how its values were grouped into passes.
    """

    def __init__(self, site: _Site, moved: Solvable, output: str):
        self.inputs, self.moved = site.inputs, moved
        from .variants import variant_model

        self.line = f"out_{output}_{MODEL_SCENARIOS[moved.index].key}"
        # the output line and the lines it needs, those the input does not reach computed once
        self.model = variant_model((self.line,), frozenset({moved.name}))
        self.constants, self.base = site.constants, site.base
        self.fixed = self.model.site_values(self.base, self.constants, LISTS, site.whole)
        self.integer = moved.spec.kind == "integer"
        self.known: dict[int, float] = {}  # a value's bits (0.0 is not -0.0) → its output
        self.passes = 0

    def valid(self, value: float) -> bool:
        """Whether the inputs' own rules allow the value (the catalogue's range and the rules
        that tie inputs together: salvage ≤ CapEx, measured ≤ theoretical TPS …)."""
        return self.inputs.allows(self.moved.key, int(value) if self.integer else value)

    def __call__(self, values: np.ndarray,
                 ahead: Callable[[], np.ndarray] | None = None) -> np.ndarray:
        """The output at each of ``values`` (NaN: none); where some are not known yet, one pass
        computes them with the values ``ahead()`` names (those the search will likely ask for
        next)."""
        values = np.ascontiguousarray(values, dtype=float)
        keys = values.view(np.int64).tolist()
        if any(k not in self.known for k in keys):
            wanted = dict.fromkeys(keys)
            if ahead is not None:
                more = np.ascontiguousarray(ahead(), dtype=float)
                wanted.update(dict.fromkeys(more.view(np.int64).tolist()))
            todo = np.array([k for k in wanted if k not in self.known],
                            dtype=np.int64).view(float)
            self.known.update(zip(todo.view(np.int64).tolist(), self._pass(todo).tolist(),
                                  strict=True))
        return np.array([self.known[k] for k in keys], dtype=float)

    def _pass(self, values: np.ndarray) -> np.ndarray:
        """One numpy pass of the compiled model over ``values``."""
        from .risk import _numbers
        from .runtime import _RowArray

        self.passes += 1
        given = dict(self.base)
        if self.moved.spec.per_scenario:
            row = np.tile(np.asarray(self.base[self.moved.name], dtype=float),
                          (len(values), 1))
            row[:, self.moved.index] = values
            given[self.moved.name] = row.view(_RowArray)
        else:
            given[self.moved.name] = values
        out = self.model(given, self.fixed, self.constants, LISTS)
        return _numbers(out[self.line], len(values))


def _grid(low: float, high: float, count: int, integer: bool) -> np.ndarray:
    """``count`` values evenly spread over ``[low, high]``, and as many spread evenly on a log
    scale where the range spans more than two orders of magnitude (1 … 1,000,000 GPUs)."""
    grid = np.linspace(low, high, count)
    floor = max(low, high * 1e-6) if low <= 0 else low
    if high > 0 and high / max(floor, 1e-300) > 100:
        grid = _unique(np.concatenate((grid, np.geomspace(floor, high, count))))
    if integer:
        grid = _unique(np.round(grid))
    return grid


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted, as ``np.unique`` gives them (one NaN, last, for any), without
    ``np.unique``'s first call importing ``numpy.ma`` (30 ms of a template's CPU)."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    blank = np.isnan(x)
    keep = ~blank
    keep[1:] &= x[1:] != x[:-1]
    return np.append(x[keep], np.nan) if blank.any() else x[keep]


def _edge(valid, inside: float, outside: float, integer: bool) -> float:
    """The allowed value nearest ``outside`` between an allowed ``inside`` and a refused
    ``outside`` (the rules that tie inputs together are bounds: one edge between them)."""
    for _ in range(80):
        if abs(outside - inside) <= (1 if integer else 4 * np.spacing(abs(inside) + 1e-300)):
            break
        middle = (inside + outside) / 2
        if integer:
            middle = float(np.floor(middle) if outside > inside else np.ceil(middle))
            if middle in (inside, outside):
                break
        if valid(middle):
            inside = middle
        else:
            outside = middle
    return inside


def _allowed(valid: Callable[[float], bool], x: np.ndarray, inside: float | None) -> np.ndarray:
    """Which of the increasing values ``x`` the inputs' rules allow (``inside``: a value known to
    be allowed where it is one of them, the input's value now).

    Each rule is a bound on the input (its range in the catalogue, salvage ≤ CapEx, measured ≤
    theoretical TPS, a cohort's online month within the horizon …), so the values allowed are
    one interval: allowed at both ends, every value between is; allowed at one end, the other
    edge is found by halving (a few checks of the rules where checking each of the scan's 130
    values took longer than the scan's pass of the model). With no value known to be allowed
    inside, every value is checked."""
    n = len(x)
    ok = np.zeros(n, dtype=bool)
    if not n:
        return ok
    first, last = valid(x[0]), valid(x[-1])
    known = 0 if first else n - 1 if last else None
    if known is None and inside is not None:
        at = np.flatnonzero(x == inside)
        known = int(at[0]) if len(at) and valid(x[at[0]]) else None
    if known is None:
        return np.array([valid(v) for v in x], dtype=bool)

    def edge(refused: int, allowed: int) -> int:
        while abs(allowed - refused) > 1:
            middle = (allowed + refused) // 2
            if valid(x[middle]):
                allowed = middle
            else:
                refused = middle
        return allowed

    ok[edge(0, known) if not first else 0:(edge(n - 1, known) if not last else n - 1) + 1] = True
    return ok


def _sign_changes(x: np.ndarray, f: np.ndarray, target: float) -> list[tuple[int, int]]:
    """Pairs of neighbouring points (among those with a figure) on either side of the
    target, or on it."""
    keep = np.flatnonzero(np.isfinite(f))
    a, b = keep[:-1], keep[1:]
    da, db = f[a] - target, f[b] - target
    # on the target at a, or on opposite sides (a point on the target at b starts the next pair)
    cross = (da == 0) | (((da < 0) != (db < 0)) & (db != 0))
    pairs = list(zip(a[cross].tolist(), b[cross].tolist(), strict=True))
    if len(keep) and f[keep[-1]] == target:
        pairs.append((int(keep[-1]), int(keep[-1])))
    return pairs


def _inner(a: float, b: float, integer: bool) -> np.ndarray:
    """The values a step of the refinement evaluates inside ``[a, b]``: :data:`SECTIONS` − 1
    evenly spread (whole numbers for an integer input), none when ``a`` and ``b`` are
    neighbours."""
    inner = np.linspace(a, b, SECTIONS + 2)[1:-1]
    if integer:
        inner = _unique(np.round(inner))
    return inner[(inner > a) & (inner < b)]


def _refine(evaluate: _Evaluator, a: float, fa: float, b: float, fb: float, target: float,
            tol: float, integer: bool) -> tuple[float, float, float, float]:
    """Shrink the bracket ``[a, b]`` around the target; returns the point nearest the target,
    its output, and the other end of the last bracket with its output."""
    for _ in range(MAX_STEPS):
        best, fbest, other, fother = (a, fa, b, fb) if abs(fa - target) <= abs(fb - target) \
            else (b, fb, a, fa)
        if abs(fbest - target) <= tol:
            return best, fbest, other, fother
        if integer and b - a <= 1:
            return best, fbest, other, fother
        inner = _inner(a, b, integer)
        if not len(inner):  # two neighbouring floats: the output jumps across the target
            return best, fbest, other, fother
        x = np.concatenate(([a], inner, [b]))
        f = np.concatenate(([fa], evaluate(inner, ahead=lambda a=a, fa=fa, b=b, fb=fb: _ahead(
            evaluate, a, fa, b, fb, target, tol, integer)), [fb]))
        pairs = _sign_changes(x, f, target)
        if not pairs:  # "none" inside the bracket: keep the side of a that still has a figure
            return best, fbest, other, fother
        i, j = pairs[0]
        a, fa, b, fb = x[i], f[i], x[j], f[j]
        if i == j:
            return a, fa, b, fb
    best, fbest, other, fother = (a, fa, b, fb) if abs(fa - target) <= abs(fb - target) \
        else (b, fb, a, fa)
    return best, fbest, other, fother


def _ahead(evaluate: _Evaluator, a: float, fa: float, b: float, fb: float, target: float,
           tol: float, integer: bool) -> np.ndarray:
    """The values :func:`_refine` is likely to evaluate from the bracket ``[a, b]`` on: each
    step's :func:`_inner` values in the section where :func:`_guesses` have the output meet the
    target, down to a section whose ends the chord's slope puts well within the tolerance, or
    to the step where the guesses part (each one's next step, then no further: below that
    the guesses say little). A guess only: the refinement decides with the model's own
    figures, and evaluates in a pass of its own what was not guessed."""
    if not (math.isfinite(fa) and math.isfinite(fb)) or fa == fb:
        return _inner(a, b, integer)
    slope = abs(fb - fa) / (b - a)
    guesses = _guesses(evaluate, a, fa, b, fb, target)

    def step(lo: float, hi: float) -> np.ndarray:
        # the refinement stops where an end is within the tolerance: at the latest where the
        # section's rise is twice it; one step more for the slope's change within it
        if slope * (hi - lo) <= tol / 8 or (integer and hi - lo <= 1):
            return np.empty(0)
        return _inner(lo, hi, integer)

    points = []
    lo, hi = a, b
    for _ in range(MAX_STEPS):
        inner = step(lo, hi)
        if not len(inner):
            break
        points.append(inner)
        x = np.concatenate(([lo], inner, [hi]))
        sections = sorted({_section(x, g) for g in guesses})
        if len(sections) > 1:
            points += [step(float(x[k - 1]), float(x[k])) for k in sections]
            break
        lo, hi = float(x[sections[0] - 1]), float(x[sections[0]])
    return np.concatenate(points) if points else np.empty(0)


def _section(x: np.ndarray, value: float) -> int:
    """``k``: the section ``x[k - 1] … x[k]`` of the increasing ``x`` that holds ``value`` (the
    first or the last beyond them)."""
    return min(max(int(np.searchsorted(x, value)), 1), len(x) - 1)


def _toward(x: np.ndarray, guess: float, integer: bool, steps: int = 2) -> np.ndarray:
    """The values of the refinement's first ``steps`` steps from the section of the scan ``x``
    that holds ``guess``, toward it."""
    points = []
    k = _section(x, guess)
    lo, hi = float(x[k - 1]), float(x[k])
    for _ in range(steps):
        inner = _inner(lo, hi, integer)
        if not len(inner):
            break
        points.append(inner)
        section = np.concatenate(([lo], inner, [hi]))
        k = _section(section, guess)
        lo, hi = float(section[k - 1]), float(section[k])
    return np.concatenate(points) if points else np.empty(0)


def _guess(near: Sequence[tuple[float, float]], target: float) -> float | None:
    """Where the output meets ``target``, by the chord through two of the points ``near``
    (value of the input, output there): two on either side of the target, else the two that
    come nearest it; ``None`` where no two differ."""
    points = sorted((float(v), float(y)) for v, y in near
                    if math.isfinite(v) and math.isfinite(y))
    best: tuple[tuple[bool, float], float] | None = None
    for (v0, y0), (v1, y1) in zip(points[:-1], points[1:], strict=True):
        if v0 == v1 or y0 == y1:
            continue
        rank = ((y0 - target) * (y1 - target) > 0, min(abs(y0 - target), abs(y1 - target)))
        if best is None or rank < best[0]:
            best = rank, v0 + (target - y0) * (v1 - v0) / (y1 - y0)
    return None if best is None else best[1]


def _guesses(evaluate: _Evaluator, a: float, fa: float, b: float, fb: float,
             target: float) -> list[float]:
    """Where, between ``a`` and ``b``, the output may meet ``target``: on the chord (exact where
    the output is linear in the input, as it is in a price or a CapEx), and on the parabola
    through ``a``, ``b`` and the nearest known value on either side (where it curves, as in a
    decline or a discount rate; a kink between the three points, such as the month the market
    caps the tokens sold, makes the parabola miss, hence the chord too)."""
    d1 = (fb - fa) / (b - a)
    chord = a + (target - fa) / d1
    out = [chord]
    x = np.array(list(evaluate.known), dtype=np.int64).view(float)
    f = np.array(list(evaluate.known.values()))
    has = np.isfinite(f)
    for side in (has & (x < a), has & (x > b)):
        if not side.any():
            continue
        near = np.flatnonzero(side)[np.argmin(np.abs(x[side] - chord))]
        c, fc = float(x[near]), float(f[near])
        d2 = ((fc - fa) / (c - a) - d1) / (c - b)  # f = fa + d1 (x - a) + d2 (x - a)(x - b)
        root = chord
        for _ in range(8):  # Newton's steps from the chord's root
            rise = d1 + d2 * (2 * root - a - b)
            if not rise or not math.isfinite(rise):
                break
            root -= (fa + (root - a) * (d1 + d2 * (root - b)) - target) / rise
        if a <= root <= b and root != chord:
            out.append(root)
    return out


def _figure(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def solve(inputs: SiteInputs, for_input: str, target: Target | str,
          whole: Mapping[str, np.ndarray] | None = None) -> Solution:
    """The value of ``for_input`` at which the output ``target`` names meets its value.

    Parameters
    ----------
    inputs : the site's checked inputs.
    for_input : a numeric input of the catalogue (``tef_target``, ``capex_per_gpu``), or a
        per-scenario input named for one scenario (``tef_target.Optimised``).
    target : ``"npv=0"`` or a :class:`Target`.
    whole : the site's values from a run of the whole model (``Result.values``), where the
        caller has them: the lines the input does not reach are read from it, not computed.

    Raises :class:`InputError` for an unknown or non-numeric input, or a bad target.
    """
    return _solve(_Site(inputs, whole), for_input, target)


def solve_each(inputs: SiteInputs, names: tuple[str, ...], target: Target | str = "npv=0",
               whole: Mapping[str, np.ndarray] | None = None,
               near: Mapping[str, Sequence[tuple[float, float]]] | None = None
               ) -> tuple[Solution, ...]:
    """:func:`solve` of each of ``names`` for one site (the Risk sheet's "what must be true"
    block, a batch's ``--solve`` columns), the site's inputs as the model takes them made once
    for all of them.

    ``near``: by input name, outputs the caller knows at some values of it (the tornado's NPV
    at each driver's low and high value and at its value now): the pass that scans the input's
    range also computes the refinement's first steps toward where they have the target met.
    Only a guess, and only of what to compute: every figure of a solution is the model's own,
    whatever ``near`` says.
    """
    site = _Site(inputs, whole)
    return tuple(_solve(site, name, target, (near or {}).get(name, ())) for name in names)


def _solve(site: _Site, for_input: str, target: Target | str,
           near: Sequence[tuple[float, float]] = ()) -> Solution:
    """:func:`solve` of one input of ``site`` (``near``: as :func:`solve_each`'s)."""
    inputs = site.inputs
    if isinstance(target, str):
        target = parse_target(target)
    moved = solvable(for_input, inputs)
    spec = moved.spec
    evaluate = _Evaluator(site, moved, target.output)
    integer = spec.kind == "integer"
    current_raw = inputs.live(moved.name, moved.scenario)
    current = None if current_raw is None else float(current_raw)  # type: ignore[arg-type]
    tol = tolerance(target)
    notes: list[str] = []

    low = float(spec.low) if spec.low is not None else -UNBOUNDED_SPAN * max(1, abs(current or 1))
    if spec.low_open:
        low = low + (1 if integer else max(1e-9, 1e-9 * abs(current or 1)))
    bounded = spec.high is not None
    high = float(spec.high) if bounded else max(low + 1, UNBOUNDED_SPAN * max(1.0, abs(
        current or 0.0)))

    guess = _guess(near, target.value) if near else None

    def scan(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        x = _grid(lo, hi, SCAN_POINTS, integer)
        if current is not None and lo <= current <= hi:
            x = _unique(np.concatenate((x, [current])))
        ok = _allowed(evaluate.valid, x, current)
        if ok.any() and not ok.all():
            # the rules that tie inputs together cut the range: find where, to the last digit
            first, last = np.flatnonzero(ok)[[0, -1]]
            edges = []
            if first > 0:
                edges.append(_edge(evaluate.valid, x[first], x[first - 1], integer))
            if last < len(x) - 1:
                edges.append(_edge(evaluate.valid, x[last], x[last + 1], integer))
            x = _unique(np.concatenate((x[ok], edges)))
        else:
            x = x[ok]
        if not len(x):
            return x, np.empty(0)
        ahead = None if guess is None or not x[0] <= guess <= x[-1] else \
            functools.partial(_toward, x, guess, integer)
        return x, evaluate(x, ahead)

    x, f = scan(low, high)
    widened = 0
    while not bounded and not _sign_changes(x, f, target.value) and widened < WIDEN:
        finite = np.isfinite(f)
        if finite.sum() >= 2:
            first, last = f[finite][0], f[finite][-1]
            # stop widening when the output does not move toward the target at the top
            if not (abs(last - target.value) < abs(first - target.value)):
                break
        widened += 1
        lo = high
        high = high * 10
        more_x, more_f = scan(lo, high)
        x, f = np.concatenate((x, more_x[1:])), np.concatenate((f, more_f[1:]))
    if not len(x):
        raise InputError([Problem("--for", for_input, "has no value its rules allow with the "
                                  "other inputs as they are", "check the site's inputs")])
    allowed_low = float(spec.low) if spec.low is not None else None
    if (allowed_low is not None and x[0] > low) or x[-1] < high:
        notes.append(f"the other inputs allow {moved.name} from {fmt_number(float(x[0]))} to "
                     f"{fmt_number(float(x[-1]))} (the rules that tie inputs together, such as "
                     "salvage ≤ CapEx and measured ≤ theoretical TPS)")
    elif not bounded:
        notes.append(f"{moved.name} has no upper bound: searched up to {fmt_number(float(x[-1]))}")
    low, high = float(x[0]), float(x[-1])
    output_now = None
    if current is not None:
        at = np.flatnonzero(x == current)
        output_now = _figure(f[at[0]]) if len(at) else _figure(evaluate(np.array([current]))[0])
    ends = (_figure(f[0]), _figure(f[-1]))

    pairs = _sign_changes(x, f, target.value)
    centre = current if current is not None else (low + high) / 2
    pairs.sort(key=lambda p: min(abs(x[p[0]] - centre), abs(x[p[1]] - centre)))
    found: list[tuple[float, float, float, float]] = []
    for i, j in pairs[:MAX_ROOTS]:
        found.append(_refine(evaluate, float(x[i]), float(f[i]), float(x[j]), float(f[j]),
                             target.value, tol, integer))
    if len(pairs) > MAX_ROOTS:
        notes.append(f"{len(pairs)} crossings of the target found; the {MAX_ROOTS} nearest the "
                     "value now are refined")

    common = dict(site=str(inputs["site_name"]), input=for_input, key=moved.key,
                  scenario=moved.scenario, output=target.output, target=target.value,
                  current=current, output_now=output_now, low=low, high=high,
                  output_low=ends[0], output_high=ends[1], bounded=bounded)
    if not found:
        candidates = [(abs(v - target.value), side, x0, v) for side, x0, v in
                      (("low", low, ends[0]), ("high", high, ends[1])) if v is not None]
        if not candidates:
            notes.append(f"the model gives no {target.output} (none) anywhere in the range")
            return Solution(**common, reached=False, value=None, output_at_value=None,
                            notes=tuple(notes))  # type: ignore[arg-type]
        _, side, x0, v = min(candidates)
        if ends[0] is not None and ends[0] == ends[1] and np.nanmin(f) == np.nanmax(f):
            notes.append(f"{target.output} does not change with {moved.name}")
        return Solution(**common, reached=False, value=x0, output_at_value=v, closest=side,
                        notes=tuple(notes))  # type: ignore[arg-type]
    best, fbest, other, fother = found[0]

    def met(result: tuple[float, float, float, float]) -> bool:
        # a whole-number input meets the target between two neighbours: the nearer is the answer
        return abs(result[1] - target.value) <= tol or (integer and abs(result[2] - result[0])
                                                        <= 1)

    reached = bool(met(found[0]))
    exact = bool(abs(fbest - target.value) <= tol)
    jump = not reached
    if integer and not exact:
        notes.append(f"{moved.name} is a whole number: the target lies between "
                     f"{fmt_number(min(best, other))} and {fmt_number(max(best, other))}; "
                     f"{fmt_number(best)} comes nearer ({target.output} {fbest:,.6g} against "
                     f"{fother:,.6g})")
    roots = tuple(int(r[0]) if integer else float(r[0]) for r in found if met(r))
    value = int(best) if integer else best
    return Solution(**common, reached=reached, value=value, output_at_value=fbest,
                    jump=jump, output_beyond=None if exact else fother, roots=roots,
                    notes=tuple(notes))  # type: ignore[arg-type]


def batch_solve(inputs: SiteInputs, names: tuple[str, ...], target: str = "npv=0",
                known: Mapping[str, Solution] | None = None,
                whole: Mapping[str, np.ndarray] | None = None) -> dict[str, float | None]:
    """For a portfolio: each input's value at which ``target`` is met (``None`` when no value
    of its range meets it). ``known`` holds solutions of this site already found for the same
    target (the Risk sheet's block), by input name; ``whole``, as :func:`solve`'s."""
    known = known or {}
    found = dict(zip((n for n in names if n not in known),
                     solve_each(inputs, tuple(n for n in names if n not in known), target, whole),
                     strict=True))
    return {name: (s.value if s.reached else None)
            for name in names for s in (known.get(name) or found[name],)}
