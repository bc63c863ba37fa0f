"""The operating model run: the declared lines compiled once and evaluated for one site, many
sites in one pass, or each of many sites alone.

:func:`run` gives a :class:`Result`: every line of the live scenario, each scenario's lines and
summary (:class:`ScenarioResult`), the uplift and its bridge. The lines themselves are declared
in :mod:`.operating_model`; this module only evaluates them (:func:`compiled`, through
:func:`~.compiler.compile_lines`), feeding each the site's inputs, the named constants and the
lists the formulas read.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.catalogue import COHORT_SPECS, INPUTS, MAX_COHORTS
from .compiler import compile_lines
from .formula import Line
from .inputs import SiteInputs
from .operating_model import (
    BRIDGE_LINES,
    CONSTANT_VALUES,
    FROM_MONTH0,
    LINE_NAMES,
    LINES,
    OUTPUT_NAMES,
    SCENARIO_LINE_NAMES,
    SCENARIOS,
    UPLIFT_LINES,
    WARNINGS,
    check_bounds,
)
from .runtime import from_serial, to_serial


# -- evaluation -------------------------------------------------------------------------------
def constant_values() -> dict[str, object]:
    """Every constant by name, the input checks' bounds included (``low_gpus`` …)."""
    out: dict[str, object] = dict(CONSTANT_VALUES)
    bounded = [(spec.name, spec) for spec in INPUTS] + [
        (f"fleet_{spec.name}", spec) for spec in COHORT_SPECS]
    for name, spec in bounded:
        low, high = check_bounds(spec)
        if low is not None:
            out[f"low_{name}"] = low
        if high is not None:
            out[f"high_{name}"] = high
    return out


def _formula_constants() -> dict[str, object]:
    from .compiler import _r

    return {k: _r(np.asarray(v, dtype=float)) if isinstance(v, tuple) else np.float64(v)
            for k, v in constant_values().items()}


LISTS: dict[str, tuple[str, ...]] = {spec.name: spec.choices for spec in INPUTS
                                     if spec.kind == "choice"}


def formula_inputs(inputs: SiteInputs) -> dict[str, object]:
    """The inputs as the compiled model takes them: dates as serial numbers, numbers as floats
    (NaN where an optional input is blank), per-scenario inputs as tuples (Base, Optimised,
    Downside), and the fleet block's rows of cohorts 2…8 as ``fleet_<column>`` tuples."""
    out: dict[str, object] = {}
    for spec in INPUTS:
        value = inputs[spec.name]
        if spec.kind == "date":
            out[spec.name] = to_serial(value)  # type: ignore[arg-type]
        elif spec.kind in ("text", "choice", "currency"):
            out[spec.name] = str(value)
        elif spec.per_scenario:
            out[spec.name] = tuple(np.nan if x is None else float(x)  # blank: not given
                                   for x in value)  # type: ignore[union-attr]
        else:
            out[spec.name] = np.nan if value is None else float(value)  # type: ignore[arg-type]
    cohorts = inputs.cohorts
    for spec in COHORT_SPECS:
        values = [c.get(spec.name) for c in cohorts]
        values += [None] * (MAX_COHORTS - 1 - len(values))
        if spec.kind in ("text", "choice"):
            out[f"fleet_{spec.name}"] = tuple("" if v is None else str(v) for v in values)
        else:
            out[f"fleet_{spec.name}"] = tuple(np.nan if v is None else float(v) for v in values)
    return out


@functools.lru_cache(maxsize=4)
def compiled(lines: tuple[Line, ...] = LINES):
    """The model compiled once: ``evaluate(inputs)`` → line name → values. The whole model's
    compiled code is kept between runs (:mod:`tokenfactory_xl.files.build_cache`): a run of
    the same code reads it back instead of compiling it again."""
    model = compile_lines(lines, keep="compiled-model" if lines is LINES else None)
    constants = _formula_constants()

    def evaluate(inputs: SiteInputs) -> dict[str, np.ndarray]:
        return model(formula_inputs(inputs), constants, LISTS)

    evaluate.__source__ = model.__source__  # type: ignore[attr-defined]
    evaluate.model = model  # type: ignore[attr-defined] - takes formula inputs (run_many)
    return evaluate


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's monthly lines (by their plain names) and summary outputs."""

    name: str
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]
    warnings: tuple[str, ...] = ()  # the texts of the warning rules that fire (§10.5)


@dataclass(frozen=True)
class Result:
    """What :func:`run` computes for one site: all three scenarios at once (methodology §4.5).

    ``lines`` maps each of :data:`LINE_NAMES` to its monthly array (the fleet's lines, and the
    live scenario's); ``summary`` maps each of :data:`OUTPUT_NAMES` to the live scenario's
    float, or ``None`` where the spec says "none". ``scenarios`` holds every scenario's lines,
    summary and warnings by name; ``uplift`` Optimised − Base of :data:`UPLIFT_NAMES` and the
    steps of its bridge (:data:`BRIDGE_NAMES`). ``values`` holds
    every line of the model (:data:`LINES`) as computed, which the workbook stores beside its
    formulas.
    """

    inputs: SiteInputs
    scenario: str
    month_starts: tuple[dt.date, ...]
    month_ends: tuple[dt.date, ...]
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)
    uplift: dict[str, float | None] = field(default_factory=dict)


def run(inputs: SiteInputs, scenario: str | None = None) -> Result:
    """Compute the monthly model of one site, its three scenarios at once, and the summary.

    Parameters
    ----------
    inputs : the site's checked inputs (:func:`tokenfactory_xl.tfom.inputs.make_inputs`).
    scenario : the live scenario (what ``lines`` and ``summary`` show); default
        ``inputs["scenario"]``. Every scenario is in ``Result.scenarios`` either way.
    """
    scenario = scenario or inputs.scenario
    if scenario != inputs.scenario:
        inputs = inputs.replace({"scenario": scenario})
    return result_from(inputs, compiled()(inputs))


def run_many(many: Sequence[SiteInputs]) -> list[Result]:
    """:func:`run` for many sites: the same results, in the order given.

    Sites whose texts that the model reads (ownership, scenario …) are the same are computed in
    one pass of the compiled model along a leading axis of sites, as the risk run computes its
    draws: one pass for eight sites costs about what two single ones do.
    """
    given = [formula_inputs(inputs) for inputs in many]
    groups: dict[tuple, list[int]] = {}
    for index, values in enumerate(given):
        groups.setdefault(_texts_of(values), []).append(index)
    results: list[Result | None] = [None] * len(many)
    for members in groups.values():
        for index, values in zip(members, _evaluate_many([given[i] for i in members]),
                                 strict=True):
            results[index] = result_from(many[index], values)
    return results  # type: ignore[return-value]


def run_each(many: Sequence[SiteInputs]) -> list[Result | Exception]:
    """:func:`run_many`, or, if that pass fails, :func:`run` of each site alone: a site's own
    failure is then its own entry (the exception), and the other sites keep their results."""
    try:
        return list(run_many(many))
    except Exception:  # noqa: BLE001 - each site is then run alone, its own failure its own
        out: list[Result | Exception] = []
        for inputs in many:
            try:
                out.append(run(inputs))
            except Exception as exc:  # noqa: BLE001
                out.append(exc)
        return out


#: Each line's number of dimensions for one site: 1 for a table's row, 0 for a single figure.
_LINE_NDIM = {ln.name: 0 if ln.table is None else 1 for ln in LINES}


def _is_text(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, tuple) and any(isinstance(x, str)
                                                                       for x in value))


def _texts_of(values: dict[str, object]) -> tuple:
    """What sites computed in one pass must share: each text input the model compares or
    looks up (a site's name, only measured and shown, may differ)."""
    model = compiled().model
    return tuple((k, v) for k, v in values.items()
                 if k in model.inputs and k not in model.texts_per_site and _is_text(v))


def _same(column: list[object]) -> bool:
    first = column[0]
    return all(v == first or (v != v and first != first) for v in column)  # NaN: blank alike


def _evaluate_many(group: list[dict[str, object]]) -> list[dict[str, object]]:
    """The compiled model's values for each site of ``group`` (formula inputs whose texts read
    by the model are the same), in one pass: a number that differs among the sites is given
    along a leading axis (a row per site for a per-scenario or cohort input)."""
    from .runtime import _RowArray

    model, constants = compiled().model, _formula_constants()
    if len(group) == 1:
        return [model(group[0], constants, LISTS)]
    count, first = len(group), group[0]
    stacked: dict[str, object] = {}
    for name, value in first.items():
        column = [values[name] for values in group]
        if _same(column) or (_is_text(value) and name not in model.texts_per_site):
            stacked[name] = value  # the same for all (a text the model compares: grouped so)
        else:
            kind = object if _is_text(value) else float
            if isinstance(value, tuple):
                stacked[name] = np.asarray(column, dtype=kind).view(_RowArray)
            else:
                stacked[name] = np.asarray(column, dtype=kind)
    out = model(stacked, constants, LISTS)
    per_site: list[dict[str, object]] = [{"_inputs": values} for values in group]
    for name, value in out.items():
        if name == "_inputs":
            continue
        # one site's line is a row (a table's) or a single figure, as it is declared
        ndim = _LINE_NDIM.get(name)
        if ndim is None or not isinstance(value, np.ndarray) or value.ndim == ndim:
            for values in per_site:  # the same for every site (reads no input that differs)
                values[name] = value
        elif value.ndim == ndim + 1 and value.shape[0] == count:
            for i, values in enumerate(per_site):
                values[name] = value[i, ...]
        else:
            raise AssertionError(f"the line {name} has the shape {value.shape} for {count} "
                                 "sites at once, not one per site")
    return per_site


def _number(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def result_from(inputs: SiteInputs, values: dict[str, np.ndarray]) -> Result:
    """The :class:`Result` of values computed by a compiled model that holds :data:`LINES`."""
    horizon = int(inputs["horizon_months"])  # type: ignore[call-overload]

    def months(name: str, plain: str) -> np.ndarray:
        start = 0 if plain in FROM_MONTH0 else 1
        return np.asarray(values[name][start:horizon + 1], dtype=float)

    lines = {name: months(name, name) for name in LINE_NAMES}
    summary = {name: _number(values[f"out_{name}"]) for name in OUTPUT_NAMES}
    scenarios = {}
    for sc in SCENARIOS:
        scenarios[sc.name] = ScenarioResult(
            sc.name, {name: months(f"{name}_{sc.key}", name) for name in SCENARIO_LINE_NAMES},
            {name: _number(values[f"out_{name}_{sc.key}"]) for name in OUTPUT_NAMES},
            tuple(w.text for w in WARNINGS if float(values[f"warn_{w.key}_{sc.key}"]) == 1))
    uplift = {ln.meta["output"]: _number(values[ln.name])
              for ln in UPLIFT_LINES + BRIDGE_LINES}
    ends = tuple(from_serial(s).date() for s in values["month_end"][1:horizon + 1])
    starts = tuple(e.replace(day=1) for e in ends)
    return Result(inputs, inputs.scenario, starts, ends, lines, summary, values, scenarios,
                  uplift)  # type: ignore[arg-type]
