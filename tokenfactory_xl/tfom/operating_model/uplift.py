"""Optimised − Base (methodology §10.3): the uplift of the headline outputs, and the bridge
that splits the NPV's uplift into steps, with the bars of its waterfall chart.
"""

from __future__ import annotations

from ..formula import AND, CHOOSE, IF, ISNUMBER, MAX, MIN, NONE, Expr, Line, Position, Table
from .common import BRIDGE_SCENARIOS, BRIDGE_STEPS, SCENARIOS, C, _o, _t
from .outputs import OUTPUTS

#: The outputs the Scenarios sheet and the portfolio show as Optimised − Base.
UPLIFT_NAMES: tuple[str, ...] = ("npv", "ebitda_total", "revenue_total", "tokens_sold_total",
                                 "equivalent_gpus")
_BASE, _OPTIMISED = SCENARIOS[0], SCENARIOS[1]
UPLIFT_LINES: tuple[Line, ...] = tuple(
    Line(f"out_uplift_{o.name}", f"{o.label}: Optimised − Base", o.unit, o.kind,
         IF(AND(ISNUMBER(_o(o.name, _OPTIMISED)), ISNUMBER(_o(o.name, _BASE))),
            _o(o.name, _OPTIMISED) - _o(o.name, _BASE), NONE),
         defined_name=True, meta={"output": o.name})
    for o in OUTPUTS if o.name in UPLIFT_NAMES)


def _bridge_npv(step: int) -> Expr:
    """The project NPV after ``step`` steps of the bridge (0: Base; the last: Optimised)."""
    if step == 0:
        return _o("npv", _BASE)
    if step == len(BRIDGE_STEPS):
        return _o("npv", _OPTIMISED)
    return _t("discounted_cash_flow", BRIDGE_SCENARIOS[step - 1])


#: The uplift bridge (methodology §10.3): each step's change of the project NPV; the steps sum
#: to ``uplift_npv``.
BRIDGE_LINES: tuple[Line, ...] = tuple(
    Line(f"out_uplift_npv_{key}", f"NPV uplift: + Optimised {what}", "money", "money",
         _bridge_npv(i + 1) - _bridge_npv(i), defined_name=True,
         meta={"output": f"uplift_npv_{key}", "step": key})
    for i, (key, what, _names) in enumerate(BRIDGE_STEPS))
BRIDGE_NAMES: tuple[str, ...] = tuple(f"uplift_npv_{key}" for key, _w, _n in BRIDGE_STEPS)

#: The bridge as a waterfall: Base's NPV, each step, Optimised's NPV. A chart draws each bar
#: as a stack of an invisible part and a visible one, split at 0 (the way every engine's
#: stacked bar chart can draw a waterfall).
BRIDGE_BARS = Table("bridge_bars", len(BRIDGE_STEPS) + 2)
_CUMULATIVE = tuple(_bridge_npv(i) for i in range(len(BRIDGE_STEPS) + 1))
_LOW, _HIGH = (MIN(C.bridge_from, C.bridge_to), MAX(C.bridge_from, C.bridge_to))
BRIDGE_BAR_LINES: tuple[Line, ...] = (
    Line("bridge_from", "From", "money", "money",
         CHOOSE(Position(), 0, *_CUMULATIVE[:-1], 0), table=BRIDGE_BARS),
    Line("bridge_to", "To", "money", "money",
         CHOOSE(Position(), *_CUMULATIVE, _CUMULATIVE[-1]), table=BRIDGE_BARS),
    Line("bridge_change", "Change", "money", "money", C.bridge_to - C.bridge_from,
         table=BRIDGE_BARS),
    Line("bridge_hidden_up", "Invisible base above 0", "money", "money",
         IF(_LOW > 0, _LOW, 0), table=BRIDGE_BARS),
    Line("bridge_hidden_down", "Invisible base below 0", "money", "money",
         IF(_HIGH < 0, _HIGH, 0), table=BRIDGE_BARS),
    Line("bridge_shown_up", "Bar above 0", "money", "money",
         IF(_LOW > 0, _HIGH - _LOW, MAX(_HIGH, 0)), table=BRIDGE_BARS),
    Line("bridge_shown_down", "Bar below 0", "money", "money",
         IF(_HIGH < 0, _LOW - _HIGH, MIN(_LOW, 0)), table=BRIDGE_BARS),
)
