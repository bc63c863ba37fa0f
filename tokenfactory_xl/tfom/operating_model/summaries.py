"""What the sheets show of the live scenario besides its lines: the yearly summary (Returns),
the margin against utilisation (Sensitivity) and the texts about the site.
"""

from __future__ import annotations

from ..formula import (
    AND,
    IF,
    INDEX,
    ISNUMBER,
    MIN,
    NM,
    NONE,
    SUMIF,
    Expr,
    Line,
    Name,
    Position,
    Row,
    Text,
    nm_if,
)
from .common import UTIL, YEAR_TABLE, C, I, K, N
from .warning_rules import NO_DEMAND_LIMIT


# -- the yearly summary of the live scenario (Returns) -----------------------------------------
def _by_year(line: str) -> Expr:
    return SUMIF(Row("year"), C.year_number, Row(line))


YEARLY_LINES: tuple[Line, ...] = (
    Line("year_number", "Model year", "", "integer", Position(), table=YEAR_TABLE),
    Line("year_revenue", "Revenue", "money", "money", _by_year("revenue"), table=YEAR_TABLE),
    Line("year_ebitda", "EBITDA", "money", "money", _by_year("ebitda"), table=YEAR_TABLE),
    Line("year_margin", "EBITDA margin", "fraction", "fraction",
         nm_if(C.year_revenue <= 0, C.year_ebitda / C.year_revenue), table=YEAR_TABLE,
         missing=NM),
    # months of the year only: the month-0 investment is year 0 of the Timeline
    Line("year_cash_flow", "Cash flow", "money", "money", _by_year("cash_flow"),
         table=YEAR_TABLE),
    Line("year_cumulative", "Cumulative cash flow", "money", "money",
         INDEX(Row("cumulative_cash_flow"), 1,
               MIN(C.year_number * K.months_per_year, I.horizon_months) + 1), table=YEAR_TABLE),
)

# -- Sensitivity: margin against utilisation (live scenario's price factor) --------------------
UTIL_LINES: tuple[Line, ...] = (
    Line("util", "Utilisation", "fraction", "fraction", Position() * K.util_step, table=UTIL),
    Line("util_margin", "Margin", "fraction", "fraction",
         IF(ISNUMBER(Name("out_breakeven_util")), 1 - Name("out_breakeven_util") / C.util, NONE),
         table=UTIL),
    Line("util_breakeven_marker", "Breakeven", "", "text",
         IF(ISNUMBER(Name("out_breakeven_util")),
            IF(AND(Name("out_breakeven_util") > C.util - K.util_step,
                   Name("out_breakeven_util") <= C.util), "◄ breakeven", ""), ""),
         table=UTIL, missing=""),
    Line("util_tfi_marker", "Site today", "", "text",
         IF(AND(N.tfi_now > C.util - K.util_step, N.tfi_now <= C.util), "◄ TFI now", ""),
         table=UTIL, missing=""),
)


_DASHBOARD_NOTE = Text("Money in ").concat(I.currency).concat(
    ". The terminal value is the fleet's resale at the horizon; breakeven utilisation (at "
    "today's price) is on Returns.")
#: Texts the sheets show about the site, in the same language as the model's lines.
TEXT_LINES: tuple[Line, ...] = (
    Line("dashboard_note", "", "", "text",
         IF(I.market_mtok_month1.eq(0),
            _DASHBOARD_NOTE.concat(" " + NO_DEMAND_LIMIT[:1].upper() + NO_DEMAND_LIMIT[1:] + "."),
            _DASHBOARD_NOTE)),
    Line("demand_note", "", "", "text",
         IF(I.market_mtok_month1.eq(0), Text(NO_DEMAND_LIMIT[:1].upper() + NO_DEMAND_LIMIT[1:]),
            Text("")), missing=""),
    # a whole number joins a text as its digits in every engine, so no TEXT() is needed
    Line("timeline_subtitle", "", "", "text",
         Text("Monthly operating model · ").concat(I.site_name).concat(" · live: ")
         .concat(I.scenario).concat(" · ").concat(I.horizon_months).concat(" months")),
    Line("dashboard_subtitle", "", "", "text",
         I.site_name.concat(" · ").concat(I.scenario).concat(" scenario · ")
         .concat(I.horizon_months).concat(" months · money in ").concat(I.currency)),
)
