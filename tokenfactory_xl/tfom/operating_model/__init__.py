"""The Token Factory Operating Model (TFOM): one site, month by month, from tokens to returns.

TFOM links the technical indicators of a token factory (TPS, TTFT, TEF) to the financial ones
(revenue, EBITDA, ROI) for one site (seed 000). Month 0 holds the investment; months 1…H sell
tokens. Each month the TEF and the sell-through move along linear ramps to their targets, the
price falls by the quarterly decline, and power, opex, rent, depreciation and tax follow the
calendar hours of the month. methodology section 4 is the contract; section 7 names the summary.

**Every line is declared once**, as a :class:`~tokenfactory_xl.tfom.formula.Line`: its name,
label, unit and formula, written in the expression language of :mod:`tokenfactory_xl.tfom.formula`
over inputs (``I.gpus``), named constants (``K.seconds_per_hour``) and other lines. The workbook
renders each declaration as the Excel formula of its cell or row;
:func:`~tokenfactory_xl.tfom.evaluation.run` compiles the same declarations into one numpy
function and returns the monthly lines and the summary; batch stores those very values beside
the formulas. ``docs/architecture.md`` shows how to add a line.

The declarations live in one module per section of the TFOM:

- :mod:`.common`: the leaves of a formula (``I``, ``K``, ``N``, ``C``), the named constants,
  the scenarios, the tables and the helpers every section declares with;
- :mod:`.capacity`: what the site computes once (the Capacity sheet);
- :mod:`.fleet`: the fleet block, a column per cohort, and each scenario's cohort figures;
- :mod:`.timeline`: the monthly lines, each scenario's and the live scenario's;
- :mod:`.fiscal`: tax by calendar year with losses carried forward, and the DSCR;
- :mod:`.statements`: the income statement, cash-flow statement and balance sheet;
- :mod:`.irr`: the IRR searches;
- :mod:`.warning_rules`: the warnings a committee reads before the figures;
- :mod:`.outputs`: the summary outputs; :mod:`.uplift`: Optimised − Base and its bridge;
- :mod:`.summaries`: the yearly summary, the sensitivity table and the sheets' texts;
- :mod:`.checks`: the Checks sheet.

This module puts them in the one order in which each line needs only those before it
(:data:`LINES`: the workbook's rows follow it), adds the units in the site's currency, and
gives every section's names, so ``operating_model.OUTPUTS`` is the outputs wherever they are
declared.
"""

from __future__ import annotations

from ...core.catalogue import INPUTS
from ..formula import Line
from .capacity import CAPACITY
from .checks import CHECK_NAMES, CROSS_CHECKS, INPUT_CHECKS, MASTER_CHECK, check_bounds
from .common import (
    ALL_SCENARIOS,
    BRIDGE_SCENARIOS,
    BRIDGE_STEPS,
    COHORTS,
    CONSTANT_VALUES,
    CONSTANTS,
    FISCAL,
    FISCAL_YEARS,
    IRR_GRID,
    IRR_NEWTON_STEPS,
    IRR_STEPS,
    MAX_MONTHS,
    MONTHS,
    N_IRR,
    N_UTIL,
    SCENARIOS,
    TIMELINE,
    UTIL,
    YEAR_TABLE,
    YEARS,
    Constant,
    I,
    Scenario,
    _lines,
    nxt,
    prev,
)
from .fiscal import FISCAL_COMMON, FISCAL_LINES, fiscal_lines
from .fleet import FLEET, FLEET_SCALARS, FLEET_SCENARIO, fleet_scenario_lines
from .irr import IRR_SEARCHES, IrrSearch, irr_search
from .outputs import BUY_INSTEAD, OUTPUT_MISSING, OUTPUT_NAMES, OUTPUTS, Output
from .statements import STATEMENT_LINES, STATEMENT_PARTS, statement_lines
from .summaries import TEXT_LINES, UTIL_LINES, YEARLY_LINES
from .timeline import (
    _FISCAL_YEARS,
    FLEET_LINES,
    LIVE_LINES,
    LIVE_SOURCES,
    SCENARIO_LINES,
    TIMELINE_HEADER,
    TIMELINE_LINES,
    TIMELINE_TOTALS,
    scenario_lines,
)
from .uplift import (
    BRIDGE_BAR_LINES,
    BRIDGE_BARS,
    BRIDGE_LINES,
    BRIDGE_NAMES,
    UPLIFT_LINES,
    UPLIFT_NAMES,
)
from .warning_rules import NO_DEMAND_LIMIT, WARNING_LINES, WARNINGS, Warning_

__all__ = [
    "ALL_SCENARIOS",
    "BRIDGE_BARS",
    "BRIDGE_BAR_LINES",
    "BRIDGE_LINES",
    "BRIDGE_NAMES",
    "BRIDGE_SCENARIOS",
    "BRIDGE_STEPS",
    "BUY_INSTEAD",
    "BY_LINE",
    "CAPACITY",
    "CHECK_NAMES",
    "COHORTS",
    "CONSTANTS",
    "CONSTANT_VALUES",
    "CROSS_CHECKS",
    "Constant",
    "FISCAL",
    "FISCAL_COMMON",
    "FISCAL_LINES",
    "FISCAL_YEARS",
    "FLEET",
    "FLEET_LINES",
    "FLEET_SCALARS",
    "FLEET_SCENARIO",
    "FROM_MONTH0",
    "INPUT_CHECKS",
    "IRR_GRID",
    "IRR_NEWTON_STEPS",
    "IRR_SEARCHES",
    "IRR_STEPS",
    "IrrSearch",
    "LINES",
    "LINE_NAMES",
    "LIVE_LINES",
    "LIVE_SOURCES",
    "MASTER_CHECK",
    "MAX_MONTHS",
    "MONEY_UNITS",
    "MONTHS",
    "NO_DEMAND_LIMIT",
    "N_IRR",
    "N_UTIL",
    "OUTPUTS",
    "OUTPUT_MISSING",
    "OUTPUT_NAMES",
    "Output",
    "SCENARIOS",
    "SCENARIO_LINES",
    "SCENARIO_LINE_NAMES",
    "STATEMENT_LINES",
    "STATEMENT_PARTS",
    "Scenario",
    "TEXT_LINES",
    "TIMELINE",
    "TIMELINE_HEADER",
    "TIMELINE_LINES",
    "TIMELINE_TOTALS",
    "UNIT_LINES",
    "UPLIFT_LINES",
    "UPLIFT_NAMES",
    "UTIL",
    "UTIL_LINES",
    "WARNINGS",
    "WARNING_LINES",
    "Warning_",
    "YEARLY_LINES",
    "YEARS",
    "YEAR_TABLE",
    "check_bounds",
    "fiscal_lines",
    "fleet_scenario_lines",
    "irr_search",
    "nxt",
    "prev",
    "scenario_lines",
    "statement_lines",
    "unit_name",
]


def _scenario_in_order(sc: Scenario) -> tuple[Line, ...]:
    """A scenario's monthly and fiscal lines in an order in which each needs only those before:
    profit to EBIT, the year's tax, then cash flows, then debt service cover."""
    monthly = _lines(SCENARIO_LINES[sc.key])
    cut = next(i for i, ln in enumerate(monthly) if ln.meta["line"] == "taxable_profit") + 1
    fiscal = FISCAL_LINES[sc.key]
    return monthly[:cut] + fiscal[:6] + monthly[cut:] + fiscal[6:]


def _irr_lines(search: IrrSearch) -> tuple[Line, ...]:
    return search.grid + (search.flow_months,) + search.bracket + search.steps + (search.result,)


# the input and output costs split the cost per Mtok, so they are computed after it
_COMPUTE_ORDER = tuple(sorted(OUTPUTS, key=lambda o: o.name.startswith("cost_per_mtok_")))

#: Every line of the model, in an order in which each needs only those before it.
_MODEL_LINES: tuple[Line, ...] = (
    _lines(CAPACITY) + FLEET + tuple(ln for sc in ALL_SCENARIOS for ln in FLEET_SCENARIO[sc.key])
    + FLEET_SCALARS + TIMELINE_HEADER + (_FISCAL_YEARS,)
    + _lines(FLEET_LINES) + FISCAL_COMMON
    + tuple(ln for sc in ALL_SCENARIOS for ln in _scenario_in_order(sc))
    + tuple(ln for sc in SCENARIOS for ln in STATEMENT_LINES[sc.key])
    + _lines(LIVE_LINES) + TIMELINE_TOTALS
    + tuple(ln for s in IRR_SEARCHES for ln in _irr_lines(s))
    + tuple(o.line_for(sc) for o in _COMPUTE_ORDER if o.name != "warnings" for sc in SCENARIOS)
    + tuple(ln for sc in SCENARIOS for ln in WARNING_LINES[sc.key])
    + tuple(o.line_for(sc) for o in OUTPUTS if o.name == "warnings" for sc in SCENARIOS)
    + tuple(o.line for o in OUTPUTS) + UPLIFT_LINES + BRIDGE_LINES + BRIDGE_BAR_LINES
    + YEARLY_LINES + UTIL_LINES
    + INPUT_CHECKS + CROSS_CHECKS + (MASTER_CHECK,) + TEXT_LINES
)


# -- units in the site's currency (methodology §10.7) -------------------------------------------
def unit_name(unit: str) -> str:
    """The line that spells a money unit in the site's currency: ``money/GPU-h`` →
    ``unit_money_per_gpu_h`` (``USD/GPU-h``); plain ``money`` is the input ``in_currency``."""
    if unit == "money":
        return "in_currency"
    return "unit_" + unit.lower().replace("/", "_per_").replace("-", "_").replace(" ", "_")


#: Every money unit a line, an output or an input is stated in.
MONEY_UNITS: tuple[str, ...] = tuple(sorted(
    u for u in {ln.unit for ln in _MODEL_LINES} | {o.unit for o in OUTPUTS}
    | {i.unit for i in INPUTS} if u.startswith("money")))
# (the currency is only ever joined into a text, so sites of different currencies still share
# a pass of run_many)
UNIT_LINES: tuple[Line, ...] = tuple(
    Line(unit_name(u), u, "", "text", I.currency.concat(u[len("money"):]), meta={"unit": u})
    for u in MONEY_UNITS if u != "money")

#: Every line of the model, in an order in which each needs only those before it.
LINES: tuple[Line, ...] = UNIT_LINES + _MODEL_LINES
BY_LINE: dict[str, Line] = {ln.name: ln for ln in LINES}

#: The monthly lines :func:`run` returns, in the Timeline's order: the fleet's, and the live
#: scenario's under their plain names. Each is an array over months 1…H, except those that start
#: at month 0 (``capex``, ``cash_flow``, ``cumulative_cash_flow`` …).
LINE_NAMES: tuple[str, ...] = tuple(ln.name for ln in _lines(FLEET_LINES) + _lines(LIVE_LINES))
#: Each scenario's monthly lines, by their plain names (``revenue`` for ``revenue_base`` …).
SCENARIO_LINE_NAMES: tuple[str, ...] = tuple(
    ln.meta["line"] for ln in _lines(SCENARIO_LINES["base"]))  # type: ignore[misc]
FROM_MONTH0: frozenset[str] = frozenset(
    ln.name for ln in _lines(TIMELINE_LINES) if not ln.skip_first) | frozenset(
    ln.meta["line"] for ln in _lines(SCENARIO_LINES["base"]) if not ln.skip_first)
