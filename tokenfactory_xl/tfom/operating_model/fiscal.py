"""The calendar years' tax and debt service cover (methodology §4.3, §4.4): each scenario's
taxable profit summed by calendar year, taxed after the losses carried forward (unlevered
and after interest), and its yearly DSCR against the covenant.
"""

from __future__ import annotations

from ..formula import (
    COUNTIF,
    IF,
    MAX,
    SUMIF,
    SUMPRODUCT,
    YEAR,
    Cell,
    Expr,
    Line,
    Position,
    Row,
    Table,
)
from .common import ALL_SCENARIOS, BRIDGE_SCENARIOS, FISCAL, FISCAL_YEARS, I, Scenario


# -- tax by fiscal year, losses carried forward; debt service cover (methodology §4.3, §4.4) ----
def _by_fiscal_year(line: str) -> Expr:
    return SUMIF(Row("fiscal_index"), Position(), Row(line))


def _due(position: Expr, k: str) -> Expr:
    """1 for the months of fiscal year ``position`` with scheduled debt service."""
    return (Row("fiscal_index").eq(position)) * (Row(f"debt_service_{k}") > 0)


FISCAL_COMMON: tuple[Line, ...] = (
    Line("fy_number", "Fiscal year", "", "integer", Position(), table=FISCAL),
    Line("fy_year", "Calendar year", "", "integer", YEAR(I.start_date) + Position() - 1,
         table=FISCAL),
    Line("fy_months", "Months in the horizon", "months", "integer",
         COUNTIF(Row("fiscal_index"), Position()), table=FISCAL),
    Line("fy_end_month", "Last month of the year in the horizon", "month", "integer",
         SUMPRODUCT((Row("fiscal_index") <= Position()) * Row("in_horizon")) - 1,
         table=FISCAL, note="the balance sheet's date"),
)


def fiscal_lines(sc: Scenario) -> tuple[Line, ...]:
    """One scenario's yearly tax (unlevered and levered) and debt service cover."""
    k = sc.key
    out: list[Line] = []
    levels = (("", f"taxable_profit_{k}", "taxable profit"),
              ("levered_", f"taxable_profit_{k}", "taxable profit less interest"))
    if sc in BRIDGE_SCENARIOS:  # a step of the bridge needs only the project's tax
        levels = levels[:1]
    for prefix, taxable, label in levels:
        pool = Table(f"loss_pool_{prefix}{k}", FISCAL_YEARS, guard=FISCAL.guard, recurrent=True)
        base = _by_fiscal_year(taxable)
        if prefix:
            base = base - _by_fiscal_year(f"interest_{k}")
        t = f"fy_{prefix}taxable_{k}"
        out.append(Line(t, f"{sc.name}: taxable ({label})", "money", "money", base,
                        table=FISCAL, meta={"scenario": sc.name}))
        out.append(Line(f"fy_{prefix}tax_{k}", f"{sc.name}: tax{' (levered)' if prefix else ''}",
                        "money", "money",
                        I.tax_rate * MAX(0, Cell(t) - Cell(f"fy_{prefix}loss_pool_{k}", -1)),
                        table=pool, first=I.tax_rate * MAX(0, Cell(t)),
                        meta={"scenario": sc.name}))
        out.append(Line(f"fy_{prefix}loss_pool_{k}",
                        f"{sc.name}: losses carried forward{' (levered)' if prefix else ''}",
                        "money", "money",
                        MAX(0, Cell(f"fy_{prefix}loss_pool_{k}", -1) - Cell(t)), table=pool,
                        first=MAX(0, -Cell(t)), meta={"scenario": sc.name}))
    if sc in BRIDGE_SCENARIOS:
        return tuple(out)
    service = Cell(f"fy_debt_service_{k}")
    out.append(Line(f"fy_debt_service_{k}", f"{sc.name}: scheduled debt service", "money",
                    "money", SUMPRODUCT(Row(f"debt_service_{k}"), _due(Position(), k)),
                    table=FISCAL, meta={"scenario": sc.name}))
    out.append(Line(f"fy_cfads_{k}", f"{sc.name}: CFADS in months with debt service", "money",
                    "money", SUMPRODUCT(Row(f"cfads_{k}"), _due(Position(), k)), table=FISCAL,
                    meta={"scenario": sc.name}))
    out.append(Line(f"fy_dscr_{k}", f"{sc.name}: DSCR", "ratio", "factor",
                    IF(service > 0, Cell(f"fy_cfads_{k}") / service, ""),
                    table=FISCAL, missing="", meta={"scenario": sc.name}))
    out.append(Line(f"fy_dscr_breach_{k}", f"{sc.name}: DSCR below the covenant (1 = yes)",
                    "flag", "flag",
                    IF(service > 0, IF(Cell(f"fy_dscr_{k}") < I.dscr_covenant, 1, 0), 0),
                    table=FISCAL, meta={"scenario": sc.name}))
    return tuple(out)


FISCAL_LINES: dict[str, tuple[Line, ...]] = {sc.key: fiscal_lines(sc) for sc in ALL_SCENARIOS}
