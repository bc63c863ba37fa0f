"""The portfolio's table: which columns it has, what each site shows in each, each column's
label and unit, and the totals across the sites.

One row per site: its name, the inputs that differ between the sites (``gpus`` always), each
input's source note any site has, every summary output of methodology section 7, each
scenario's NPV and the uplift with its bridge, and, when the sites carry them, the risk of the
live NPV, the "what must be true" values and the latest actual TEF. An input that does not apply
to a site (the CapEx of a rented fleet, the rent of an owned one) and an output that does not
exist are blank (``None``). The totals sum what adds up, give the portfolio's own ratio where
one follows from the sums, and say why the rest is blank.

:mod:`tokenfactory_xl.portfolio.book` writes the table as the portfolio workbook and as CSV;
``collect`` and ``batch`` read a site's figures and columns from here.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..core.catalogue import BY_NAME, INPUTS
from ..tfom.inputs import NOTE, SiteInputs
from ..tfom.operating_model import BRIDGE_LINES, OUTPUTS, SCENARIOS

if TYPE_CHECKING:
    from ..tfom.evaluation import Result
    from ..tfom.operating_model import Output


class _HasSummary(Protocol):
    summary: dict[str, float | None]


#: One site of the portfolio: its inputs and its
#: :class:`~tokenfactory_xl.tfom.evaluation.Result` (a batch passes results holding only
#: ``summary``, with :data:`SCENARIO_COLUMNS` in it: see :func:`figures`).
Entry = tuple[SiteInputs, _HasSummary]

#: The outputs the totals sum.
SUMMED: frozenset[str] = frozenset({
    "equivalent_gpus", "avoided_capex", "tokens_sold_total", "revenue_total", "ebitda_total",
    "npv", "npv_base", "npv_optimised", "npv_downside", "uplift_npv",
})
#: Summed outputs that are none where they do not apply (no owned GPU, no avoided CapEx): such a
#: site adds nothing to the total rather than blanking it.
_NONE_ADDS_NOTHING = frozenset({"avoided_capex"})
#: Outputs in money: their totals need one currency.
_MONEY = frozenset({"avoided_capex", "revenue_total", "ebitda_total", "npv", "npv_base",
                    "npv_optimised", "npv_downside", "uplift_npv"})
#: Inputs that are always columns, whether or not they differ between the sites.
ALWAYS: tuple[str, ...] = ("site_name", "gpus")
#: Columns that apply only to one ownership (methodology section 6: "CapEx = gpus × capex_per_gpu
#: when owned, 0 when rented; rent_per_gpu_hour counts only when rented"); blank otherwise.
APPLIES_WHEN: dict[str, str] = {
    "capex_per_gpu": "own", "salvage_per_gpu": "own", "life_years": "own",
    "avoided_capex": "own", "rent_per_gpu_hour": "rent",
}
# Units that say nothing a header needs: the kind of a text cell.
_NO_UNIT = frozenset({"text", "date", "scenario", "ISO 4217", "own / rent"})


# -- what goes into the table --------------------------------------------------------------------
@dataclass(frozen=True)
class ScenarioColumn:
    """A column of the portfolio beside the live scenario's outputs: one scenario's figure or
    the uplift (methodology §4.5), read from the model's line (and workbook cell) ``line``."""

    name: str
    label: str
    unit: str
    kind: str
    line: str


_NPV = next(o for o in OUTPUTS if o.name == "npv")
#: Each scenario's NPV and the value of the TEF uplift, Optimised − Base, whatever the live
#: scenario: what an investment committee compares across sites.
SCENARIO_COLUMNS: tuple[ScenarioColumn, ...] = tuple(
    ScenarioColumn(f"npv_{sc.key}", f"NPV, {sc.name}", _NPV.unit, _NPV.kind,
                   f"out_npv_{sc.key}") for sc in SCENARIOS) + (
    ScenarioColumn("uplift_npv", "NPV uplift, Optimised − Base", _NPV.unit, _NPV.kind,
                   "out_uplift_npv"),) + tuple(  # its bridge (methodology §10.3)
    ScenarioColumn(line.meta["output"], line.label, _NPV.unit, _NPV.kind, line.name)
    for line in BRIDGE_LINES)
#: Every output column, in the table's order.
OUTPUT_COLUMNS: tuple[Output | ScenarioColumn, ...] = (*OUTPUTS, *SCENARIO_COLUMNS)
#: The risk of each site's live NPV (methodology §8), when the batch computed it (``--risk-draws``).
RISK_COLUMNS: tuple[ScenarioColumn, ...] = (
    ScenarioColumn("npv_p10", "NPV P10", _NPV.unit, _NPV.kind, ""),
    ScenarioColumn("npv_p50", "NPV P50", _NPV.unit, _NPV.kind, ""),
    ScenarioColumn("npv_p90", "NPV P90", _NPV.unit, _NPV.kind, ""),
    ScenarioColumn("prob_npv_negative", "Probability NPV < 0", "fraction", "fraction", ""),
)
#: Plan against actual (the workbooks' Actuals sheets, ``collect``): each site's latest
#: measured TEF, its variance against the plan, and the model month it was measured in.
ACTUAL_COLUMNS: tuple[ScenarioColumn, ...] = (
    ScenarioColumn("actual_tef", "Latest actual TEF", "fraction", "fraction", ""),
    ScenarioColumn("actual_tef_variance", "Latest TEF variance, actual − plan", "fraction",
                   "fraction", ""),
    ScenarioColumn("actual_model_month", "Month of the latest actual", "month", "months", ""),
)
_OUTPUTS = {o.name: o for o in (*OUTPUT_COLUMNS, *RISK_COLUMNS, *ACTUAL_COLUMNS)}

#: "What must be true" columns (``batch --solve``) end with this: ``tef_target_at_npv0`` is the
#: site's TEF target at which its live NPV is 0.
SOLVE_SUFFIX = "_at_npv0"


def solve_column(name: str) -> ScenarioColumn | None:
    """The "what must be true" column ``<input>_at_npv0``, or ``None`` for another name."""
    if not name.endswith(SOLVE_SUFFIX) or name[:-len(SOLVE_SUFFIX)] not in BY_NAME:
        return None
    spec = BY_NAME[name[:-len(SOLVE_SUFFIX)]]
    if spec.kind == "fraction":
        kind = "fraction"
    elif spec.unit in ("money", "money/GPU", "money/month"):
        kind = "money"  # whole currency units
    elif spec.unit.startswith("money"):
        kind = "price"  # a rate: per Mtok, per kWh, per GPU-hour
    else:
        kind = "ratio"
    return ScenarioColumn(name, f"{spec.label} at NPV 0", spec.unit, kind, "")


def output_columns(entries: Sequence[Entry]) -> list[str]:
    """The output columns of these sites: every output, then the risk columns and the "what
    must be true" columns when the sites carry them."""
    names = [o.name for o in OUTPUT_COLUMNS]
    if entries and all(RISK_COLUMNS[0].name in figures(r) for _, r in entries):
        names += [c.name for c in RISK_COLUMNS]
    if entries:
        first = figures(entries[0][1])
        names += [n for n in first if solve_column(n) is not None
                  and all(n in figures(r) for _, r in entries)]
        if all(ACTUAL_COLUMNS[0].name in figures(r) for _, r in entries):
            names += [c.name for c in ACTUAL_COLUMNS]
    return names


def figures(result: _HasSummary) -> dict[str, float | None]:
    """A portfolio row's figures: :func:`site_summary` of a full :class:`Result`, or the summary
    of one that holds only that (a batch's, already with :data:`SCENARIO_COLUMNS`)."""
    return site_summary(result) if getattr(result, "values", None) else result.summary  # type: ignore[arg-type]


def site_summary(result: Result) -> dict[str, float | None]:
    """A site's figures for its portfolio row: the live scenario's outputs and
    :data:`SCENARIO_COLUMNS`, ``None`` where a figure does not exist."""
    out = dict(result.summary)
    for column in SCENARIO_COLUMNS:
        found = np.asarray(result.values.get(column.line, np.nan))
        number = float(found) if found.shape == () and found.dtype.kind == "f" else math.nan
        out[column.name] = number if math.isfinite(number) else None
    return out


def row_result(result: Result) -> Result:
    """``result`` with only what a portfolio row reads of it: the live summary, each scenario's
    summary and warnings, the uplift and the lines of :data:`SCENARIO_COLUMNS`
    (:func:`site_summary` gives the same figures), without the monthly arrays: some 2 MB a
    site, which a collect of thousands of workbooks would otherwise keep for each."""
    from dataclasses import replace

    return replace(result, lines={},
                   values={c.line: result.values[c.line] for c in SCENARIO_COLUMNS
                           if c.line in result.values},
                   scenarios={name: replace(scenario, lines={})
                              for name, scenario in result.scenarios.items()})


def summary_result(inputs: SiteInputs, summary: dict[str, float | None]) -> Result:
    """A :class:`Result` of ``inputs`` carrying only ``summary`` (:func:`site_summary`'s
    figures, and any column a portfolio row adds): all a row of the portfolio reads, and small."""
    from ..tfom.evaluation import Result

    return Result(inputs, inputs.scenario, (), (), {}, summary)


def output_of(name: str):
    """The output named ``name``, or ``None`` for an input column."""
    return _OUTPUTS.get(name) or solve_column(name)


def applies(name: str, inputs: SiteInputs) -> bool:
    """Whether column ``name`` (an input or output) applies to the site (see APPLIES_WHEN)."""
    when = APPLIES_WHEN.get(name.split(".", 1)[0])
    return when is None or inputs["ownership"] == when


def value(name: str, inputs: SiteInputs, summary: dict[str, float | None],
          flat: dict[str, object]) -> object:
    """What the portfolio shows for one site in column ``name``: ``None`` for a blank cell."""
    noted, when, is_output = _column(name)
    if noted is not None:  # a source note, kept whether or not the input applies
        return inputs.notes.get(noted)
    if when is not None and inputs["ownership"] != when:  # see applies
        return None
    found = summary[name] if is_output else flat[name]
    if isinstance(found, float) and not math.isfinite(found):
        return None
    return found


@functools.cache
def _column(name: str) -> tuple[str | None, str | None, bool]:
    """How :func:`value` reads column ``name``, found once a name (a table of many sites asks
    for each cell): the input whose source note the column is (``None``: not a note), the
    ownership the column applies to (``None``: any, see :data:`APPLIES_WHEN`), and whether it
    is an output."""
    base, _, suffix = name.partition(".")
    return (base if suffix == NOTE else None, APPLIES_WHEN.get(base), bool(output_of(name)))


def columns(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    """The input columns (``site_name``, ``gpus``, then those that differ, then each input's
    source note that any site has, ``gpus.note``) and output columns.

    An input differs when the sites show different values for it (a blank for an input that
    does not apply counts as a value: owned and rented sites with the default CapEx still
    differ in their CapEx column).
    """
    names: list[str] = list(ALWAYS)
    first: dict[str, object] = {}
    differ: set[str] = set()
    noted: set[str] = set()
    first_flat: dict[str, object] = {}
    first_ownership = None
    # One pass, keeping each column's first value only: memory does not grow with the sites.
    for number, (inputs, _) in enumerate(entries):
        noted.update(inputs.notes)
        flat = inputs.flat()
        if number == 0:
            names = list(flat)
            first_flat, first_ownership = flat, inputs["ownership"]
        # A site of the first's ownership shows what the first does where its value is equal.
        same_ownership = inputs["ownership"] == first_ownership
        for n in names:
            if n in ALWAYS or n in differ:
                continue
            if number and same_ownership and flat[n] == first_flat[n]:
                continue
            key = _key(value(n, inputs, {}, flat))
            if number == 0:
                first[n] = key
            elif key != first[n]:
                differ.add(n)
    notes = [f"{spec.name}.{NOTE}" for spec in INPUTS if spec.name in noted]
    return [*ALWAYS, *(n for n in names if n in differ), *notes], output_columns(entries)


def _key(found: object) -> object:
    return round(found, 12) if isinstance(found, float) else found


def currency_of(entries: Sequence[Entry]) -> str | None:
    """The sites' one currency, or ``None`` when they use several."""
    found = {str(inputs["currency"]) for inputs, _ in entries}
    return found.pop() if len(found) == 1 else None


def label_and_unit(name: str, currency: str | None = None) -> tuple[str, str]:
    """A column's label and unit, from the input catalogue or the output list.

    ``money`` in a unit becomes the currency when the sites share one; a unit that only names
    a kind of text (``text``, ``date``) is ``""``.
    """
    output = output_of(name)
    if output is not None:
        label, unit = output.label, output.unit
    else:
        base, _, scenario = name.partition(".")
        spec = BY_NAME[base]
        if scenario == NOTE:
            return f"{spec.label}: source / note", ""
        label = spec.label + (f" ({scenario})" if scenario else "")
        unit = "" if spec.unit in _NO_UNIT else spec.unit
    if currency:
        unit = re.sub(r"\bmoney\b", currency, unit)
    return label, unit


def column_header(name: str, currency: str | None = None) -> str:
    """The header a person reads: ``Revenue [USD]``, ``GPUs [GPUs]``, ``Site name``."""
    label, unit = label_and_unit(name, currency)
    return f"{label} [{unit}]" if unit and unit.lower() != label.lower() else label


def headers(names: Sequence[str], currency: str | None = None) -> list[str]:
    """:func:`header` of each column, made unique (an Excel Table needs unique headers)."""
    out: list[str] = []
    for name in names:
        text = column_header(name, currency)
        if text.lower() in {h.lower() for h in out}:
            text = f"{text} ({name})"
        out.append(text)
    return out


# -- the totals ----------------------------------------------------------------------------------
#: Totals of the live scenario's figures, which add up only when every site has one live
#: scenario: the per-scenario NPV columns add up whatever each site's is.
_LIVE_TOTALS = frozenset({"equivalent_gpus", "avoided_capex", "tokens_sold_total",
                          "revenue_total", "ebitda_total", "npv", "ebitda_margin",
                          "cost_per_mtok"})


def live_scenarios(entries: Sequence[Entry]) -> dict[str, int]:
    """How many sites have each live scenario, the most common first."""
    counts: dict[str, int] = {}
    for inputs, _ in entries:
        counts[str(inputs["scenario"])] = counts.get(str(inputs["scenario"]), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def totals(entries: Sequence[Entry], *, named: Sequence[str] | None = None,
           one_currency: bool | None = None, scenarios: dict[str, int] | None = None
           ) -> dict[str, float | None]:
    """The totals: sums, portfolio ratios and ``None`` where no total makes sense (money of
    several currencies; the live scenario's figures of sites whose live scenarios differ: one
    site's Optimised NPV added to others' Base NPVs is no figure of any scenario).

    ``named``, ``one_currency`` and ``scenarios`` are the sites' :func:`output_columns`, whether
    they share one currency (:func:`currency_of`) and their :func:`live_scenarios`, when the
    caller has them already: found from ``entries`` otherwise (a pass over the sites each).
    """
    if named is None:
        named = output_columns(entries)
    out: dict[str, float | None] = {name: None for name in named}
    if not entries:
        return out
    if one_currency is None:
        one_currency = currency_of(entries) is not None
    one_scenario = len(scenarios if scenarios is not None else live_scenarios(entries)) == 1
    summed = [name for name in named if name in SUMMED and (name not in _MONEY or one_currency)
              and (one_scenario or name not in _LIVE_TOTALS)]
    ratios = [name for name in ("tef_now", "tfi_now") if name in out]
    cost = one_currency and "cost_per_mtok" in out
    read = list(dict.fromkeys(summed + ratios + (["cost_per_mtok", "tokens_sold_total"]
                                                 if cost else [])))
    # One pass over the sites, each column kept as 8-byte floats (NaN: blank): the totals of
    # 10,000 sites hold no row of figures per site.
    found = {name: array("d") for name in read}
    capacity = array("d")
    gpus = 0
    for inputs, result in entries:
        summary = figures(result)
        for name in read:
            shown = value(name, inputs, summary, {})
            found[name].append(math.nan if shown is None else shown)  # type: ignore[arg-type]
        gpus += inputs["gpus"]  # type: ignore[operator]
        capacity.append(float(inputs["gpus"]) * float(inputs["theoretical_tps_per_gpu"]))  # type: ignore[arg-type]

    def weighted(name: str, weights: Sequence[float]) -> float | None:
        pairs = [(v, w) for v, w in zip(found[name], weights, strict=True) if v == v]
        total = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / total if pairs and total else None

    for name in summed:
        given = [v for v in found[name] if v == v]
        complete = len(given) == len(capacity) or (name in _NONE_ADDS_NOTHING and given)
        out[name] = math.fsum(given) if complete else None
    out["gpus"] = float(gpus)
    revenue, ebitda = out.get("revenue_total"), out.get("ebitda_total")
    if one_currency and revenue and ebitda is not None and "ebitda_margin" in out:
        out["ebitda_margin"] = ebitda / revenue
    for name in ratios:
        out[name] = weighted(name, capacity)
    if cost and one_scenario:
        tokens = [v if v == v else 0.0 for v in found["tokens_sold_total"]]
        out["cost_per_mtok"] = weighted("cost_per_mtok", tokens)
    return out


def how_totalled(name: str, total: float | None, one_currency: bool,
                  scenarios: dict[str, int] | None = None) -> str:
    """Why the Totals sheet shows ``total`` (or nothing) for output ``name``; ``scenarios``:
    the sites' live scenarios (:func:`live_scenarios`)."""
    if name in _MONEY and not one_currency:
        return "blank: the sites use different currencies"
    if scenarios and len(scenarios) > 1 and name in _LIVE_TOTALS:
        counts = ", ".join(f"{scenario} for {n:,}" for scenario, n in scenarios.items())
        return (f"blank: the sites' live scenarios differ ({counts}), and their figures do "
                "not add up; the NPV of each scenario does (its own row)")
    if total is None and name not in SUMMED | {"ebitda_margin", "tef_now", "tfi_now",
                                                "cost_per_mtok"}:
        return "blank: does not add up across sites"
    how = {
        "ebitda_margin": "Σ EBITDA ÷ Σ revenue",
        "tef_now": "weighted by theoretical capacity (GPUs × theoretical TPS per GPU)",
        "tfi_now": "weighted by theoretical capacity (GPUs × theoretical TPS per GPU)",
        "cost_per_mtok": "weighted by tokens sold",
        "gpus": "sum over the sites",
    }.get(name, "sum over the sites")
    if name in _NONE_ADDS_NOTHING:
        how += " (sites where it does not apply add nothing)"
    return how if total is not None else "blank: not every site has this figure"
