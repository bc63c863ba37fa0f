"""The production model in the shape of the reference's results (tests/reference_v2.py).

:func:`production_run` runs :func:`tokenfactory_xl.run` and returns one scenario's lines and
outputs under the reference's names and conventions: monthly lines as lists indexed by month
0 … H (0.0 in month 0 for flows that start in month 1), fiscal-year lines as dicts keyed by
calendar year, per-cohort lines as lists of monthly lists, "none" as ``None``. With it the
hand-computed cases of ``tests/test_reference_v2.py`` run against the production model too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.core.catalogue import MAX_COHORTS
from tokenfactory_xl.tfom import operating_model as om

#: Reference name → production line (``{k}``: the scenario's key), one per monthly line.
MONTHLY = {
    "hours": "hours", "gpus_in_service": "gpus_in_service_{k}",
    "theoretical_tokens": "theoretical_tokens_{k}", "capex": "capex_{k}",
    "depreciation": "depreciation_{k}", "disposal_nbv": "disposal_book_value_{k}",
    "disposal_proceeds": "disposal_proceeds_{k}", "disposal_gain": "disposal_gain_{k}",
    "rent": "rent_{k}", "power": "power_{k}", "other_opex": "other_opex_{k}",
    "mw_seconds": "mw_seconds_{k}", "contracted_tokens": "contracted_tokens",
    "drawdown": "drawdown_{k}", "interest": "interest_{k}", "principal": "principal_{k}",
    "scheduled_debt_service": "debt_service_{k}", "prepayment": "prepayment_{k}",
    "repayment_at_h": "repayment_at_h_{k}", "debt_balance": "debt_balance_{k}",
    "tef": "tef_{k}", "sell_through": "sell_through_{k}",
    "deliverable_tokens": "deliverable_tokens_{k}", "sellable_tokens": "sellable_tokens_{k}",
    "market_demand_tokens": "market_demand_{k}", "contract_sold_tokens": "contract_sold_{k}",
    "market_sold_tokens": "market_sold_{k}", "tokens_sold": "tokens_sold_{k}",
    "market_price": "price_{k}", "revenue": "revenue_{k}",
    "programme_cost": "programme_cost_{k}", "ebitda": "ebitda_{k}", "ebit": "ebit_{k}",
    "tax": "tax_{k}", "project_cash_flow": "cash_flow_{k}",
    "discounted_cash_flow": "discounted_cash_flow_{k}", "levered_tax": "levered_tax_{k}",
    "cfads": "cfads_{k}", "equity_cash_flow": "equity_cash_flow_{k}",
}
#: Reference name → production fiscal-year line.
YEARLY = {
    "taxable_by_year": "fy_taxable_{k}", "tax_by_year": "fy_tax_{k}",
    "loss_pool_by_year": "fy_loss_pool_{k}", "levered_taxable_by_year": "fy_levered_taxable_{k}",
    "levered_tax_by_year": "fy_levered_tax_{k}",
    "levered_loss_pool_by_year": "fy_levered_loss_pool_{k}",
}


def _inputs(inputs: dict[str, Any], cohorts: list[dict[str, Any]] | None, scenario: str):
    values = {k: v for k, v in inputs.items() if v is not None}
    values["scenario"] = scenario
    rows = [{k: v for k, v in row.items() if k != "site_name"} for row in cohorts or []]
    return make_inputs({**values, "cohorts": rows}, bare="all")


def production_run(inputs: dict[str, Any], cohorts: list[dict[str, Any]] | None = None,
                   scenario: str = "Base") -> dict[str, Any]:
    """One scenario of the production model, named and shaped as ``reference_run``'s result."""
    result = run(_inputs(inputs, cohorts, scenario))
    values = result.values
    key = next(sc.key for sc in om.SCENARIOS if sc.name == scenario)
    horizon = int(result.inputs["horizon_months"])  # type: ignore[call-overload]
    out: dict[str, Any] = {"scenario": scenario}
    for name, line in MONTHLY.items():
        row = [float(x) for x in np.asarray(values[line.format(k=key)])[:horizon + 1]]
        out[name] = [0.0 if math.isnan(x) else x for x in row]
    out["realised_sell_through_monthly"] = [
        s / d if d else 0.0 for s, d in zip(out["tokens_sold"], out["deliverable_tokens"],
                                            strict=True)]
    years = [int(y) for y in np.asarray(values["fy_year"])[:int(values["fiscal_years"])]]
    for name, line in YEARLY.items():
        out[name] = dict(zip(years, (float(x) for x in np.asarray(values[line.format(k=key)])),
                             strict=False))
    dscr = np.asarray(values[f"fy_dscr_{key}"])
    out["dscr_by_year"] = {y: float(x) for y, x in zip(years, dscr, strict=False)
                           if not math.isnan(x)}
    out["fiscal_year"] = [None] + [int(y) for y in np.asarray(values["fiscal_index"])[1:horizon + 1]
                                   + years[0] - 1]
    out["months"] = list(range(horizon + 1))
    # per cohort, from the fleet block's columns (cohorts with GPUs)
    cohorts = [c for c in range(MAX_COHORTS) if float(values["c_gpus"][c]) > 0]
    months = range(horizon + 1)
    col = {name: [float(values[f"c_{name}"][c]) for c in cohorts] for name in (
        "gpus", "online", "dep_months", "capex", "dep_per_month")}
    col["last"] = [float(values[f"c_last_{key}"][c]) for c in cohorts]
    bought = [float(values[f"c_bought_{key}"][c]) for c in cohorts]
    col["capex"] = [x * b for x, b in zip(col["capex"], bought, strict=True)]
    out["in_service"] = [[1.0 if col["online"][i] <= m <= col["last"][i] else 0.0
                          for m in months] for i in range(len(cohorts))]
    out["gpus_in_service_by_cohort"] = [[col["gpus"][i] * s for s in out["in_service"][i]]
                                        for i in range(len(cohorts))]
    out["capex_by_cohort"] = [[col["capex"][i] if m == col["online"][i] - 1 else 0.0
                               for m in months] for i in range(len(cohorts))]
    out["depreciation_by_cohort"] = [
        [col["dep_per_month"][i] if out["in_service"][i][m]
         and m < col["online"][i] + col["dep_months"][i] else 0.0 for m in months]
        for i in range(len(cohorts))]
    out.update(result.scenarios[scenario].summary)
    fired = result.scenarios[scenario].warnings
    out["warnings_fired"] = [w.key for w in om.WARNINGS if w.text in fired]
    return out


def production_scenarios(inputs: dict[str, Any], cohorts: list[dict[str, Any]] | None = None
                         ) -> dict[str, dict[str, Any]]:
    return {sc.name: production_run(inputs, cohorts, sc.name) for sc in om.SCENARIOS}
