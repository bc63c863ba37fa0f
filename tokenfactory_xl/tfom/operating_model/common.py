"""What every section of the operating model declares with: the leaves of a formula (``I``
an input, ``K`` a named constant, ``N`` another scalar line, ``C`` a line of the same table
this month, ``prev``/``nxt`` the month before or after), the named constants, the scenarios
and the bridge's steps, the tables (the Timeline, the fleet block, the calendar years, the
IRR grid …), and the helpers the sections share (``_scalar`` and ``_monthly`` declare a
line; ``_s_input`` reads an S input in a scenario; ``_t``, ``_o`` and ``_last`` name a
scenario's total, output and month H).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.catalogue import BY_NAME, MAX_COHORTS, SCENARIO_NAMES
from ..formula import (
    COUNT,
    INDEX,
    ROUNDUP,
    Cell,
    Const,
    Expr,
    InputRef,
    Line,
    Name,
    Position,
    Row,
    Table,
)

#: The timeline has this many month columns (methodology §6: horizons of 1–120 months).
MAX_MONTHS = int(BY_NAME["horizon_months"].high)  # type: ignore[arg-type]
YEARS = MAX_MONTHS // 12


class _Names:
    """``I.gpus`` is ``Input("gpus")``, ``K.hours_per_year`` is ``Const("hours_per_year")``…"""

    def __init__(self, make: Callable[[str], Expr]):
        self._make = make

    def __getattr__(self, name: str) -> Expr:
        return self._make(name)


I, K, N, C = _Names(InputRef), _Names(Const), _Names(Name), _Names(Cell)  # noqa: E741


def prev(line: str) -> Cell:
    return Cell(line, -1)


def nxt(line: str) -> Cell:
    return Cell(line, +1)


# -- constants --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Constant:
    """A number fixed by definition, not an assumption (FAST: no numbers hidden in formulas)."""

    name: str
    label: str
    unit: str
    value: float | tuple[float, ...]
    note: str


CONSTANTS: tuple[Constant, ...] = (
    Constant("seconds_per_minute", "Seconds in a minute", "s", 60, "TPM = TPS × 60"),
    Constant("seconds_per_hour", "Seconds in an hour", "s", 3_600, "tokens per hour = TPS × 3,600"),
    Constant("hours_per_day", "Hours in a day", "hours", 24, "a month's hours = its days × 24"),
    Constant("hours_per_year", "Hours in a year", "hours", 8_760, "365 days × 24 (methodology §2)"),
    Constant("hours_per_month", "Average hours in a month", "hours", 730,
             "8,760 ÷ 12: spreads the fixed opex over GPU-hours (§7)"),
    Constant("months_per_year", "Months in a year", "months", 12,
             "yearly rates and depreciation lives in months"),
    Constant("months_per_quarter", "Months in a quarter", "months", 3,
             "the price declines once per quarter, spread over its months (§3)"),
    Constant("tokens_per_mtok", "Tokens in a million tokens", "tokens", 1_000_000,
             "prices are per million tokens (Mtok)"),
    Constant("kw_per_mw", "Kilowatts in a megawatt", "kW", 1_000, "facility power in MW"),
    Constant("ttft_percentile", "Percentile of the TTFT p99", "fraction", 0.99,
             "z = NORMSINV(0.99) = 2.326 converts p99 ÷ p50 into the log-normal σ (§1)"),
    Constant("util_step", "Sensitivity: utilisation step", "fraction", 0.05,
             "margin against utilisation from 5% to 100%"),
    Constant("check_tolerance", "Checks: relative tolerance", "fraction", 1e-9,
             "how closely two ways of computing a total must agree"),
    Constant("cent", "Half a cent", "money", 0.005,
             "the statements balance to the cent; a cash flow below it is none (sign changes)"),
    Constant("headroom_warning", "Warnings: the least TFI headroom", "fraction", 0.05,
             "planned TFI less than 5 points above the lifetime breakeven TFI is a warning"),
    Constant("irr_smallest", "IRR grid: smallest monthly rate either side of 0", "fraction",
             0.0001, "the grid's rates nearest 0"),
    Constant("irr_step", "IRR grid: step from one rate to the next", "factor", 1.1,
             "each rate 10% further from 0 than the one before"),
    Constant("irr_negatives", "IRR grid: rates below 0", "rates", 98,
             "from −0.01% to −99% a month"),
    Constant("irr_lowest", "IRR grid: the lowest monthly rate, as a loss", "fraction", 0.99,
             "−99% a month"),
    Constant("irr_highest", "IRR grid: the highest monthly rate", "fraction", 10,
             "+1,000% a month"),
    Constant("scenario_base", "Scenario number: Base", "", 1, "first column of an S input"),
    Constant("scenario_optimised", "Scenario number: Optimised", "", 2,
             "second column of an S input"),
    Constant("scenario_downside", "Scenario number: Downside", "", 3,
             "third column of an S input"),
)
CONSTANT_VALUES: dict[str, float | tuple[float, ...]] = {c.name: c.value for c in CONSTANTS}

IRR_STEPS = 60  # halvings: any bracket of the IRR grid shrinks below 1e-16 (the risk draws')
IRR_NEWTON_STEPS = 8  # the safeguarded Newton steps in a bracket of the IRR grid (6 suffice)
N_IRR = 221  # the IRR grid: 98 rates below 0, 0, and 122 above (CONSTANTS irr_*)
N_UTIL = 20
#: Calendar years a timeline of 120 months can touch (one starting in December: 11).
FISCAL_YEARS = MAX_MONTHS // 12 + 1


@dataclass(frozen=True)
class Scenario:
    """One of the scenarios computed side by side: its name, the suffix of its lines
    (``revenue_base``) and the constant holding its column in an S input. A step of the
    uplift bridge (methodology §10.3) is a scenario too: Base's column, except the S inputs in
    ``columns`` (input name → the constant of the column it takes instead)."""

    name: str
    key: str
    number: str
    columns: tuple[tuple[str, str], ...] = ()

    def column(self, name: str) -> str:
        """The constant naming the column of S input ``name`` this scenario reads."""
        return dict(self.columns).get(name, self.number)


SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(name, name.lower(), f"scenario_{name.lower()}") for name in SCENARIO_NAMES)

#: The uplift bridge (methodology §10.3): Base's inputs with more and more of Optimised's. Each
#: step is a scenario of its own, computed by live formulas; the last step is Optimised.
BRIDGE_STEPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tef", "TEF target", ("tef_target",)),
    ("sell_through", "sell-through target", ("sell_through_target",)),
    ("market", "prices, demand, resale and shutdown",
     ("price_factor", "decline_per_quarter", "resale_decline_per_quarter",
      "market_growth_per_quarter", "shutdown_month")),
    ("programme", "programme cost", ("programme_cost_once", "programme_fee_per_month")),
)


def _bridge_scenarios() -> tuple[Scenario, ...]:
    out, taken = [], ()
    for key, what, names in BRIDGE_STEPS[:-1]:  # the last step is Optimised itself
        taken += names
        out.append(Scenario(f"Bridge: Base + Optimised {what}", f"step_{key}", "scenario_base",
                            tuple((n, "scenario_optimised") for n in taken)))
    return tuple(out)


BRIDGE_SCENARIOS: tuple[Scenario, ...] = _bridge_scenarios()
ALL_SCENARIOS: tuple[Scenario, ...] = SCENARIOS + BRIDGE_SCENARIOS

# -- tables -----------------------------------------------------------------------------------
MONTHS = Table("months", MAX_MONTHS + 1)  # the Timeline's header rows, month 0 … 120
TIMELINE = Table("timeline", MAX_MONTHS + 1, guard=C.in_horizon.eq(1))
COHORTS = Table("cohorts", MAX_COHORTS)  # the fleet block: cohort 1 is the site's own columns
FISCAL = Table("fiscal", FISCAL_YEARS, guard=Position() <= N.fiscal_years)
YEAR_TABLE = Table("years", YEARS, guard=Position() <= ROUNDUP(I.horizon_months /
                                                               K.months_per_year, 0))
IRR_GRID = Table("irr_grid", N_IRR)
UTIL = Table("utilisation", N_UTIL)


# -- what the sections share: declaring a line, reading an S input, naming a total ------------
def _scalar(name, label, unit, kind, formula, note="", **kw) -> Line:
    """A line of one cell, with a defined name (the Capacity sheet, the outputs, checks)."""
    return Line(name, label, unit, kind, formula, note=note, defined_name=True, **kw)


def _monthly(name, label, unit, kind, formula, *, month0=False, total=False, missing="",
             **kw) -> Line:
    """A Timeline line, month 1 … H (from month 0 with ``month0``); ``total``: its total in
    column C, the line ``total_<name>``."""
    return Line(name, label, unit, kind, formula, table=TIMELINE, skip_first=not month0,
                total=total, missing=missing, **kw)


def _given(x: Expr) -> Expr:
    """A number was typed (a blank optional input is not)."""
    return COUNT(x).eq(1)


def _s_input(name: str, sc: Scenario) -> Expr:
    """An S input's value in scenario ``sc`` (its column of the input row)."""
    return INDEX(InputRef(name), 1, Const(sc.column(name)))


def _t(name: str, sc: Scenario) -> Name:
    """The total of a scenario's line."""
    return Name(f"total_{name}_{sc.key}")


def _o(name: str, sc: Scenario) -> Name:
    """A scenario's summary output."""
    return Name(f"out_{name}_{sc.key}")


def _last(line: str) -> Expr:
    """A monthly line in month H."""
    return INDEX(Row(line), 1, I.horizon_months + 1)


def _lines(items) -> tuple[Line, ...]:
    """The lines of a block, without its section titles."""
    return tuple(x for x in items if isinstance(x, Line))
