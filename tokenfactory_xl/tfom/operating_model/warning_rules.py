"""The warnings (methodology §10.5): what a committee should read before the figures. A rule
never turns the master check red; the ``warnings`` output counts those that fire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..formula import AND, IF, ISNUMBER, MAX, Expr, Line
from .common import SCENARIOS, I, K, Scenario, _o, _t


# -- warnings (methodology §10.5): what a committee should read before the figures --------------
def _flag_if_number(x: Expr, condition: Callable[[Expr], Expr]) -> Expr:
    """1 where ``x`` is a number meeting ``condition``; 0 where it is none."""
    return IF(ISNUMBER(x), IF(condition(x), 1, 0), 0)


@dataclass(frozen=True)
class Warning_:
    """A rule of methodology §10.5: it never turns the master check red, it is counted in the
    ``warnings`` output and printed by ``summary``."""

    key: str
    text: str
    formula: Callable[[Scenario], Expr]

    def line_for(self, sc: Scenario) -> Line:
        return Line(f"warn_{self.key}_{sc.key}", self.text, "flag", "flag",
                    self.formula(sc), meta={"warning": self.key, "scenario": sc.name})


NO_DEMAND_LIMIT = "no market demand limit: every sellable token is assumed sold"
WARNINGS: tuple[Warning_, ...] = (
    Warning_("no_demand_limit", NO_DEMAND_LIMIT,
             lambda sc: IF(I.market_mtok_month1.eq(0), 1, 0)),
    Warning_("terminal_value", "the NPV rests on the terminal value: positive with it, "
             "negative without it",
             lambda sc: _flag_if_number(_o("npv_excl_terminal", sc), lambda x: AND(
                 x < 0, _o("npv", sc) > 0))),
    Warning_("dscr", "a year's DSCR is below the covenant, or below 1",
             lambda sc: _flag_if_number(_o("min_dscr", sc),
                                        lambda x: x < MAX(1, I.dscr_covenant))),
    Warning_("funding", "operations need funding: equity pays in after month 1 in a month "
             "of negative EBITDA", lambda sc: IF(_t("funding_need", sc) > 0, 1, 0)),
    Warning_("ebitda_loss", "EBITDA is negative in a month while GPUs are in service",
             lambda sc: IF(_t("ebitda_loss", sc) > 0, 1, 0)),
    Warning_("headroom", "the planned TFI is less than 5 points above the lifetime breakeven "
             "TFI", lambda sc: _flag_if_number(_o("tfi_headroom", sc),
                                                lambda x: x < K.headroom_warning)),
    Warning_("irr_not_unique", "the cash flows change sign more than once: the IRR is not "
             "unique (read the MIRR)", lambda sc: IF(_t("sign_change", sc) > 1, 1, 0)),
)
WARNING_LINES: dict[str, tuple[Line, ...]] = {
    sc.key: tuple(w.line_for(sc) for w in WARNINGS) for sc in SCENARIOS}
