"""The three statements of a site by calendar year: income, cash flow and balance sheet.

methodology §10.4: for each scenario and calendar year (month 0 counts in the first), the income
statement (revenue to net income, book depreciation), the cash-flow statement (operating,
investing, financing and equity, which sum to 0 because the company keeps no cash) and the
balance sheet at the year's end (fixed assets at net book value + receivables = debt + payables
+ equity). The figures are the model's own lines (``st_<key>_<scenario>`` of
:data:`~tokenfactory_xl.tfom.operating_model.STATEMENT_LINES`), read from a :class:`Result`; this
module only arranges them as the workbook's Statements sheet does.
"""

from __future__ import annotations

from .evaluation import Result
from .operating_model import SCENARIOS, STATEMENT_LINES, STATEMENT_PARTS

#: The statement lines shown apart from the statements' contents: checks, not figures.
CHECK_KEYS: tuple[str, ...] = ("cash_change", "balance_gap")


def statements(result: Result, scenario: str | None = None
               ) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``{scenario: {year: {"income": {…}, "cash_flow": {…}, "balance": {…}}}}`` [money].

    Parameters
    ----------
    result : the site's :func:`~tokenfactory_xl.tfom.evaluation.run`.
    scenario : one scenario's name, or every scenario (None).

    Years are calendar years as text (``"2027"``), in order; the keys of each part are those of
    methodology §10.4: ``income`` revenue, ebitda, depreciation, gain_on_disposal, ebit, interest,
    tax, net_income; ``cash_flow`` operating, investing, financing, equity; ``balance``
    fixed_assets, receivables, debt, payables, equity.
    """
    values = result.values
    years = int(values["fiscal_years"])
    first = int(values["fy_year"][0])
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for sc in SCENARIOS:
        if scenario is not None and sc.name != scenario:
            continue
        by_year: dict[str, dict[str, dict[str, float]]] = {
            str(first + y): {part: {} for part, _ in STATEMENT_PARTS} for y in range(years)}
        for line in STATEMENT_LINES[sc.key]:
            key = line.meta["key"]
            if key in CHECK_KEYS:
                continue
            for y in range(years):
                by_year[str(first + y)][line.meta["statement"]][key] = float(values[line.name][y])
        out[sc.name] = by_year
    return out


def statement_labels() -> dict[tuple[str, str], str]:
    """(part, key) → the line's label, as the Statements sheet shows it."""
    return {(ln.meta["statement"], ln.meta["key"]): ln.label.split(": ", 1)[1]
            for ln in STATEMENT_LINES[SCENARIOS[0].key]}
