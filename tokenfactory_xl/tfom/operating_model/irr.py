"""The IRR searches: each scenario's project and equity cash flows' NPV on a grid of monthly
rates, then safeguarded Newton steps in the bracket nearest 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..formula import (
    ABS,
    AND,
    AVERAGE,
    COUNT,
    IF,
    IFERROR,
    INDEX,
    ISNUMBER,
    MATCH,
    MAX,
    MIN,
    NONE,
    SIGN,
    SUMPRODUCT,
    At,
    Cell,
    Expr,
    Line,
    Name,
    Position,
    Row,
    Table,
)
from .common import IRR_GRID, IRR_NEWTON_STEPS, SCENARIOS, C, K, _monthly


def _npv_at(cash_flow: str, rate: Expr) -> Expr:
    """Σ cash flow × (1 + rate)^−month; months beyond the horizon count as month 0 (factor 1,
    no flow), so that no engine raises an overflowing power there."""
    return SUMPRODUCT(Row(cash_flow), (1 + rate) ** (-(Row("month") * Row("in_horizon"))))


# -- the IRR: the NPV on a grid of monthly rates, then Newton's steps in the bracket nearest 0 --
# Unlike Excel's IRR (Newton's method from a guess), this cannot wander off: every step stays in a
# bracket of the grid where the NPV changes sign, so it picks the same root in every engine where
# the cash flows change sign more than once.
@dataclass(frozen=True)
class IrrSearch:
    """The lines of one IRR search: of a scenario's project or equity cash flow."""

    tag: str
    cash_flow: str
    label: str
    grid: tuple[Line, ...]
    flow_months: Line  # month by month: the month where the cash flow is not 0, else 0
    bracket: tuple[Line, ...]
    steps: tuple[Line, ...]
    result: Line


def irr_search(cash_flow: str, tag: str, label: str) -> IrrSearch:
    def n(name: str) -> str:
        return f"{name}_{tag}"

    def here(name: str) -> Cell:
        return Cell(n(name))

    grid = (
        Line(n("irr_rate"), "Monthly rate", "fraction/month", "rate", _IRR_GRID_RATE,
             table=IRR_GRID),
        Line(n("irr_npv"), "NPV at the rate", "money", "money",
             IFERROR(_npv_at(cash_flow, here("irr_rate")), ""), table=IRR_GRID, missing=""),
        Line(n("irr_change"), "Sign change to next", "flag", "flag",
             IF(AND(ISNUMBER(here("irr_npv")), ISNUMBER(Cell(n("irr_npv"), 1))),
                IF(SIGN(here("irr_npv")) * SIGN(Cell(n("irr_npv"), 1)) <= 0, 1, 0), 0),
             table=IRR_GRID),
        Line(n("irr_above"), "Bracket above 0: its lower rate", "fraction/month", "rate",
             IF(AND(here("irr_change").eq(1), here("irr_rate") >= 0), here("irr_rate"), ""),
             table=IRR_GRID, missing=""),
        Line(n("irr_below"), "Bracket below 0: minus its upper rate", "fraction/month", "rate",
             IF(AND(here("irr_change").eq(1), Cell(n("irr_rate"), 1) <= 0),
                -Cell(n("irr_rate"), 1), ""), table=IRR_GRID, missing=""),
    )
    flow_months = _monthly(n("irr_flow_month"), "Month with a cash flow", "", "integer",
                           IF(Cell(cash_flow).ne(0), C.month, 0), month0=True)
    last_flow = Line(n("irr_last_flow"), "Last month with a cash flow", "", "integer",
                     MAX(Row(n("irr_flow_month"))))
    bracket: list[Line] = [last_flow]
    step_lines: list[Line] = []
    roots = {}
    for side in ("above", "below"):
        found, position = n(f"irr_found_{side}"), n(f"irr_position_{side}")
        bracket += [
            Line(found, f"Bracket {side} 0 found (1 = yes)", "flag", "flag",
                 IF(COUNT(Row(n(f"irr_{side}"))) > 0, 1, 0)),
            Line(position, f"Bracket {side} 0 nearest to it: position in the grid", "",
                 "integer", IF(Name(found).eq(1), MATCH(MIN(Row(n(f"irr_{side}"))),
                                                        Row(n(f"irr_{side}")), 0), ""),
                 missing=""),
        ]
        step_lines += _newton(cash_flow, n, side, Name(found), Name(position),
                              Name(last_flow.name))
        roots[side] = Name(found).eq(1)
    up = At(n("irr_x_above"), IRR_NEWTON_STEPS - 1)
    down = At(n("irr_x_below"), IRR_NEWTON_STEPS - 1)
    # the root nearest 0: of the nearest root above and the nearest below, the closer one
    result = Line(n("irr_monthly"), f"{label}: IRR, monthly", "fraction/month", "rate",
                  IF(AND(MIN(Row(cash_flow)) < 0, MAX(Row(cash_flow)) > 0),
                     IF(roots["above"], IF(roots["below"], IF(ABS(down) < ABS(up), down, up), up),
                        IF(roots["below"], down, NONE)), NONE))
    return IrrSearch(tag, cash_flow, label, grid, flow_months, tuple(bracket),
                     tuple(step_lines), result)


def _newton(cash_flow: str, n: Callable[[str], str], side: str, found: Expr,
            position: Expr, last_flow: Expr) -> tuple[Line, ...]:
    """Newton's method in one bracket of the grid, safeguarded: it starts at the bracket's
    false-position point; each step's NPV keeps the half of the bracket where the sign
    changes; a step that leaves the bracket (or meets a flat NPV) takes its midpoint instead;
    an exact root (an NPV of 0, a grid rate included) is kept."""
    table = Table(n(f"irr_steps_{side}"), IRR_NEWTON_STEPS, guard=found.eq(1), recurrent=True)

    def here(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"))

    def before(name: str) -> Cell:
        return Cell(n(f"{name}_{side}"), -1)

    keep_low = (before("irr_f") > 0).eq(before("irr_f_low") > 0)  # the root is above
    low, high, f_low = here("irr_low"), here("irr_high"), here("irr_f_low")
    f_high = INDEX(Row(n("irr_npv")), position + 1)
    middle = AVERAGE(low, high)
    regula = low - f_low * (high - low) / (f_high - f_low)
    # below 0 the step is Newton's on NPV × (1 + rate)^L, L the last month with a cash flow,
    # the same roots and signs: far below 0 the NPV is ruled by its last flows'
    # (1 + rate)^−m, that product by its last flows, nearly a straight line (with the horizon
    # for L, a cash flow ending long before it made the product a high power, which eight steps
    # did not solve); above 0 by its first months: Newton's on the NPV itself
    slope = before("irr_slope")
    if side == "below":
        slope = slope + last_flow * before("irr_f") / (1 + before("irr_x"))
    newton = before("irr_x") - before("irr_f") / slope
    return (
        Line(n(f"irr_low_{side}"), "Low rate", "fraction/month", "rate",
             IF(keep_low, before("irr_x"), before("irr_low")), table=table,
             first=INDEX(Row(n("irr_rate")), position)),
        Line(n(f"irr_high_{side}"), "High rate", "fraction/month", "rate",
             IF(keep_low, before("irr_high"), before("irr_x")), table=table,
             first=INDEX(Row(n("irr_rate")), position + 1)),
        Line(n(f"irr_f_low_{side}"), "NPV at low", "money", "money",
             IF(keep_low, before("irr_f"), before("irr_f_low")), table=table,
             first=INDEX(Row(n("irr_npv")), position)),
        Line(n(f"irr_x_{side}"), "Rate tried", "fraction/month", "rate",
             IF(before("irr_f").eq(0), before("irr_x"),
                IF(slope.eq(0), middle,
                   IF(AND(newton >= low, newton <= high), newton, middle))), table=table,
             first=IF(f_low.eq(0), low, IF(f_high.eq(0), high,
                                            IF(AND(regula > low, regula < high), regula,
                                               middle)))),
        Line(n(f"irr_f_{side}"), "NPV at the rate", "money", "money",
             _npv_at(cash_flow, here("irr_x")), table=table),
        Line(n(f"irr_slope_{side}"), "Slope of the NPV at the rate", "money/(fraction/month)",
             "money", _npv_slope_at(cash_flow, here("irr_x")), table=table),
    )


def _npv_slope_at(cash_flow: str, rate: Expr) -> Expr:
    """The NPV's derivative in the rate, −Σ month × cash flow × (1 + rate)^(−month − 1)."""
    return -SUMPRODUCT(Row(cash_flow), Row("month"),
                       (1 + rate) ** (-(Row("month") * Row("in_horizon")) - 1))


_P = Position()
#: The grid's rates: −99%, …, −0.011%, −0.01% a month, 0, +0.01%, +0.011%, …, +1,000% a month.
_IRR_GRID_RATE = IF(
    _P <= K.irr_negatives,
    -MIN(K.irr_lowest, K.irr_smallest * K.irr_step ** (K.irr_negatives - _P)),
    IF(_P.eq(K.irr_negatives + 1), 0,
       MIN(K.irr_highest, K.irr_smallest * K.irr_step ** (_P - (K.irr_negatives + 1) - 1))))


IRR_SEARCHES: tuple[IrrSearch, ...] = tuple(
    irr_search(f"{flow}_{sc.key}", f"{tag}_{sc.key}", f"{sc.name} {what}")
    for sc in SCENARIOS
    for flow, tag, what in (("cash_flow", "project", "project"),
                            ("equity_cash_flow", "equity", "equity")))
