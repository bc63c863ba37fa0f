"""The three statements by calendar year (methodology §10.4): each scenario's income
statement, cash-flow statement and balance sheet as lines of the calendar years' table.
:mod:`tokenfactory_xl.tfom.statements` arranges their figures for ``tokenfactory-xl
statements``.
"""

from __future__ import annotations

from ..formula import ABS, IF, INDEX, SUMPRODUCT, Cell, Expr, Line, Position, Row
from .common import FISCAL, SCENARIOS, C, K, Scenario


# -- the three statements by calendar year (methodology §10.4) -----------------------------------
def _in_statement_year(line: str) -> Expr:
    """Σ a monthly line over the statement's year (month 0 counts in the first)."""
    return SUMPRODUCT(Row(line), Row("fiscal_index").eq(Position())
                      + Row("month").eq(0) * Position().eq(1))


def _to_year_end(line: str) -> Expr:
    """Σ a monthly line from month 0 to the year's end."""
    return SUMPRODUCT(Row(line), (Row("fiscal_index") <= Position()) * Row("in_horizon"))


def _at_year_end(line: str) -> Expr:
    """A monthly balance at the year's end."""
    return INDEX(Row(line), 1, C.fy_end_month + 1)


#: Each statement's part and the keys ``tokenfactory-xl statements --json`` gives them.
STATEMENT_PARTS: tuple[tuple[str, str], ...] = (
    ("income", "Income statement"), ("cash_flow", "Cash-flow statement"),
    ("balance", "Balance sheet at the year's end"))


def statement_lines(sc: Scenario) -> tuple[Line, ...]:
    """One scenario's income statement, cash-flow statement and balance sheet by calendar
    year: the income statement keeps book depreciation; the cash-flow statement's four parts
    sum to 0 (the company keeps no cash); the balance sheet balances, and is 0 after H."""
    k = sc.key

    def st(part: str, key: str, label: str, formula: Expr, note: str = "") -> Line:
        name = "equity_flow" if (part, key) == ("cash_flow", "equity") else key
        return Line(f"st_{name}_{k}", f"{sc.name}: {label}", "money", "money", formula,
                    table=FISCAL, note=note,
                    meta={"scenario": sc.name, "statement": part, "key": key})

    def y(line: str) -> Expr:
        return _in_statement_year(f"{line}_{k}")

    def to_the_cent(gap: Expr) -> Expr:
        """A check line's gap, 0 below half a cent: the rounding of sums of a year's months
        (about 1e-9) shows as 0, not as a red "-0"; a real gap shows whole."""
        return IF(ABS(gap) < K.cent, 0, gap)

    return (
        st("income", "revenue", "Revenue", y("revenue")),
        st("income", "ebitda", "EBITDA", y("ebitda")),
        st("income", "depreciation", "Depreciation", y("depreciation"), "book depreciation"),
        st("income", "gain_on_disposal", "Gain or loss on disposal", y("disposal_gain")),
        st("income", "ebit", "EBIT", y("ebit")),
        st("income", "interest", "Interest", y("interest")),
        st("income", "tax", "Tax", y("levered_tax"), "the year's tax after interest"),
        st("income", "net_income", "Net income",
           Cell(f"st_ebit_{k}") - Cell(f"st_interest_{k}") - Cell(f"st_tax_{k}")),
        st("cash_flow", "operating", "Operating cash flow",
           y("ebitda") - y("levered_tax") - y("wc_change"), "EBITDA − tax − ΔWC"),
        st("cash_flow", "investing", "Investing cash flow",
           y("disposal_proceeds") - y("capex"), "disposal proceeds − CapEx (deposits included)"),
        st("cash_flow", "financing", "Financing cash flow",
           y("drawdown") - y("interest") - y("principal"),
           "drawdowns − interest − principal (prepayments and the repayment at H included)"),
        st("cash_flow", "equity", "Equity: contributions − distributions",
           y("contributions") - y("distributions")),
        st("cash_flow", "cash_change", "Change in cash (the company keeps none: 0)",
           to_the_cent(Cell(f"st_operating_{k}") + Cell(f"st_investing_{k}")
                       + Cell(f"st_financing_{k}") + Cell(f"st_equity_flow_{k}"))),
        st("balance", "fixed_assets", "Fixed assets at net book value",
           _to_year_end(f"capex_{k}") - _to_year_end(f"depreciation_{k}")
           - _to_year_end(f"disposal_book_value_{k}"),
           "CapEx paid (deposits included) − depreciation − book value of disposals"),
        st("balance", "receivables", "Receivables", _at_year_end(f"receivables_{k}")),
        st("balance", "debt", "Debt", _at_year_end(f"debt_balance_{k}")),
        st("balance", "payables", "Payables", _at_year_end(f"payables_{k}")),
        st("balance", "equity", "Equity",
           _to_year_end(f"contributions_{k}") - _to_year_end(f"distributions_{k}")
           + _to_year_end(f"net_income_{k}"),
           "Σ contributions − distributions + net income"),
        st("balance", "balance_gap", "Assets − debt − payables − equity (0: it balances)",
           to_the_cent(Cell(f"st_fixed_assets_{k}") + Cell(f"st_receivables_{k}")
                       - Cell(f"st_debt_{k}") - Cell(f"st_payables_{k}")
                       - Cell(f"st_equity_{k}"))),
    )


STATEMENT_LINES: dict[str, tuple[Line, ...]] = {sc.key: statement_lines(sc)
                                                for sc in SCENARIOS}
