"""The Token Factory Operating Model (TFOM): one site, month by month, from tokens to returns.

TFOM links the technical indicators of a token factory (TPS, TTFT, TEF) to the financial ones
(revenue, EBITDA, ROI) for one site (seed 000). Month 0 holds the investment; months 1…H sell
tokens. Each month the TEF and the sell-through move along linear ramps to their targets, the
price falls by the quarterly decline, and power, opex, rent, depreciation and tax follow the
calendar hours of the month. TFOM-SPEC section 4 is the contract; section 7 names the summary.

:func:`run` returns the monthly lines and the summary for the live scenario (or any other).
The monthly arithmetic broadcasts: :func:`sweep` evaluates a grid of TEF targets × price
declines in one call, which the workbook's Sensitivity sheet needs for every site of a batch.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from . import model as m
from .inputs import SiteInputs

#: The monthly lines, in the order of the workbook's Timeline sheet. Each is an array over
#: months 1…H, except ``cash_flow`` and ``cumulative_cash_flow``, which start at month 0.
LINE_NAMES: tuple[str, ...] = (
    "hours", "tef", "sell_through", "tokens_sold", "price", "revenue", "power", "other_opex",
    "rent", "ebitda", "depreciation", "ebit", "tax", "cash_flow", "cumulative_cash_flow",
)


@dataclass(frozen=True)
class Output:
    """One summary output of TFOM-SPEC section 7: its name, label, unit and display kind."""

    name: str
    label: str
    unit: str
    kind: str  # fraction | money | gpus | tokens | months | price | ratio


#: The summary outputs of TFOM-SPEC section 7 (and the economic life of section 3), in order.
OUTPUTS: tuple[Output, ...] = (
    Output("tef_now", "TEF now", "fraction", "fraction"),
    Output("slo_attainment", "SLO attainment", "fraction", "fraction"),
    Output("sla", "SLA", "fraction", "fraction"),
    Output("tfi_now", "TFI now", "fraction", "fraction"),
    Output("equivalent_gpus", "Equivalent GPUs", "GPUs", "gpus"),
    Output("avoided_capex", "Avoided GPU CapEx", "money", "money"),
    Output("blended_price", "Blended price", "money/Mtok", "price"),
    Output("gpu_hour_cost", "GPU-hour cost", "money/GPU-h", "price"),
    Output("breakeven_util", "Breakeven utilisation", "fraction", "fraction"),
    Output("tokens_sold_total", "Tokens sold", "tokens", "tokens"),
    Output("revenue_total", "Revenue", "money", "money"),
    Output("ebitda_total", "EBITDA", "money", "money"),
    Output("ebitda_margin", "EBITDA margin", "fraction", "fraction"),
    Output("npv", "NPV", "money", "money"),
    Output("irr", "IRR (yearly)", "fraction/year", "fraction"),
    Output("payback_months", "Payback", "months", "months"),
    Output("roi", "ROI over the horizon", "ratio", "fraction"),
    Output("cost_per_mtok", "Cost per million tokens sold", "money/Mtok", "price"),
    Output("economic_life_months", "Economic life", "months", "months"),
)
OUTPUT_NAMES: tuple[str, ...] = tuple(o.name for o in OUTPUTS)


@dataclass(frozen=True)
class Result:
    """What :func:`run` computes for one site and scenario.

    ``lines`` maps each of :data:`LINE_NAMES` to its monthly array; ``summary`` maps each of
    :data:`OUTPUT_NAMES` to a float, or ``None`` where the spec says "none" (no IRR, no payback,
    no ROI without CapEx, or a division by zero such as a TEF now of 0).
    """

    inputs: SiteInputs
    scenario: str
    month_starts: tuple[dt.date, ...]
    month_ends: tuple[dt.date, ...]
    lines: dict[str, np.ndarray]
    summary: dict[str, float | None]
    derived: dict[str, float] = field(default_factory=dict)


def calendar_months(start: dt.date, count: int) -> tuple[list[dt.date], list[dt.date]]:
    """First and last days of ``count`` calendar months from ``start`` (a first of a month)."""
    starts, ends = [], []
    year, month = start.year, start.month
    for _ in range(count):
        days = calendar.monthrange(year, month)[1]
        starts.append(dt.date(year, month, 1))
        ends.append(dt.date(year, month, days))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return starts, ends


def ramp(start: np.ndarray | float, target: np.ndarray | float, months: int,
         month: np.ndarray) -> np.ndarray:
    """Linear ramp: start + (target − start) × min(m, ramp) / ramp; ramp 0 is the target at once."""
    share = np.ones_like(month) if months == 0 else np.minimum(month, months) / months
    return start + (np.asarray(target, dtype=float) - start) * share


def _derived(inputs: SiteInputs) -> dict[str, float]:
    """The quantities TFOM-SPEC section 6 derives once per site (scenario-independent)."""
    v = inputs
    owned = v["ownership"] == "own"
    slo = m.slo_attainment(v["ttft_p50_ms"], v["ttft_p99_ms"], v["ttft_slo_ms"])
    service = m.sla(v["availability"], slo)
    price0 = m.blended_price(
        v["price_input_per_mtok"], v["price_output_per_mtok"], v["output_share"],
        v["cache_hit_rate"], v["price_cached_input_per_mtok"], v["batch_share"],
        v["batch_discount"],
    )
    cash = m.cash_gpu_hour_cost(v["power_kw_per_gpu"], v["pue"], v["electricity_per_kwh"],
                                v["opex_per_gpu_hour"])
    fixed_share = v["fixed_opex_per_month"] / (v["gpus"] * m.HOURS_PER_MONTH)
    if owned:
        hour_cost = m.gpu_hour_cost(
            v["capex_per_gpu"], v["life_years"], v["power_kw_per_gpu"], v["pue"],
            v["electricity_per_kwh"], v["opex_per_gpu_hour"], v["salvage_per_gpu"],
        )
        cash_cost = cash
    else:
        hour_cost = cash_cost = v["rent_per_gpu_hour"] + cash
    return {
        "tef_now": inputs.tef_now,
        "slo_attainment": slo,
        "sla": service,
        "blended_price": price0,
        "capex": v["gpus"] * v["capex_per_gpu"] if owned else 0.0,
        "gpu_hour_cost": hour_cost + fixed_share,
        "cash_cost_per_gpu_hour": cash_cost + fixed_share,
    }


def _timeline(inputs: SiteInputs, d: dict[str, float], hours: np.ndarray, tef_target,
              sell_through_target, decline) -> dict[str, np.ndarray]:
    """The monthly lines of TFOM-SPEC section 4.

    The per-scenario inputs may be arrays of shape (k, 1): every line then has shape (k, H).
    """
    v = inputs
    owned = v["ownership"] == "own"
    horizon = hours.shape[-1]
    month = np.arange(1, horizon + 1, dtype=float)
    gpus = float(v["gpus"])
    tef = ramp(d["tef_now"], tef_target, int(v["tef_ramp_months"]), month)
    sell = ramp(v["sell_through_start"], sell_through_target,
                int(v["sell_through_ramp_months"]), month)
    capacity = gpus * v["theoretical_tps_per_gpu"] * m.SECONDS_PER_HOUR * hours  # at full load
    tokens = capacity * tef * d["sla"] * sell
    price = d["blended_price"] * (1 - np.asarray(decline, dtype=float)) ** ((month - 1) / 3)
    revenue = tokens / m.TOKENS_PER_MTOK * price
    power = gpus * v["power_kw_per_gpu"] * v["pue"] * hours * v["electricity_per_kwh"]
    other = gpus * v["opex_per_gpu_hour"] * hours + v["fixed_opex_per_month"]
    rent = gpus * v["rent_per_gpu_hour"] * hours * (0.0 if owned else 1.0)
    ebitda = revenue - power - other - rent
    life_months = v["life_years"] * 12
    per_month = gpus * (v["capex_per_gpu"] - v["salvage_per_gpu"]) / life_months
    depreciation = np.where(month <= life_months, per_month, 0.0) * (1.0 if owned else 0.0)
    ebit = ebitda - depreciation
    tax = np.maximum(ebit, 0) * v["tax_rate"]
    flows = ebitda - tax
    salvage = gpus * v["salvage_per_gpu"] if owned else 0.0
    flows = flows + np.where(month == horizon, salvage, 0.0)
    shape = np.broadcast_shapes(flows.shape, (horizon,))
    flows = np.broadcast_to(flows, shape)
    month0 = np.full(shape[:-1] + (1,), -d["capex"])
    cash_flow = np.concatenate([month0, flows], axis=-1)
    monthly = {
        "hours": hours, "tef": tef, "sell_through": sell, "tokens_sold": tokens, "price": price,
        "revenue": revenue, "power": power, "other_opex": other, "rent": rent, "ebitda": ebitda,
        "depreciation": depreciation, "ebit": ebit, "tax": tax,
    }
    lines = {k: np.broadcast_to(np.asarray(x, dtype=float), shape) for k, x in monthly.items()}
    lines["cash_flow"] = cash_flow
    lines["cumulative_cash_flow"] = np.cumsum(cash_flow, axis=-1)
    return lines


def _hours(inputs: SiteInputs) -> tuple[np.ndarray, list[dt.date], list[dt.date]]:
    starts, ends = calendar_months(inputs["start_date"], int(inputs["horizon_months"]))
    hours = np.array([(e.day) * 24 for e in ends], dtype=float)
    return hours, starts, ends


def run(inputs: SiteInputs, scenario: str | None = None) -> Result:
    """Compute the monthly model and the summary of one site.

    Parameters
    ----------
    inputs : the site's checked inputs (:func:`tokenfactory_xl.inputs.make_inputs`).
    scenario : the scenario to compute; default the live one (``inputs["scenario"]``).
    """
    scenario = scenario or inputs.scenario
    hours, starts, ends = _hours(inputs)
    d = _derived(inputs)
    tef_target = inputs.live("tef_target", scenario)
    lines = _timeline(inputs, d, hours, tef_target,
                      inputs.live("sell_through_target", scenario),
                      inputs.live("decline_per_quarter", scenario))
    summary = _summary(inputs, d, lines, tef_target, inputs.live("decline_per_quarter", scenario))
    return Result(inputs, scenario, tuple(starts), tuple(ends), lines, summary, d)


def _none_if_undefined(x: float | None) -> float | None:
    if x is None or not np.isfinite(x):
        return None
    return float(x)


def _summary(inputs: SiteInputs, d: dict[str, float], lines: dict[str, np.ndarray],
             tef_target: float, decline: float) -> dict[str, float | None]:
    v = inputs
    gpus = v["gpus"]
    tfi_now = m.tfi(d["tef_now"], d["sla"], v["sell_through_start"])
    equivalent = m.equivalent_gpus(gpus, d["tef_now"], tef_target)
    revenue = float(np.sum(lines["revenue"]))
    ebitda = float(np.sum(lines["ebitda"]))
    tokens = float(np.sum(lines["tokens_sold"]))
    costs = sum(float(np.sum(lines[k])) for k in ("power", "other_opex", "rent", "depreciation"))
    flows = lines["cash_flow"]
    rate = m.monthly_rate(v["discount_rate"])
    monthly_irr = m.irr(flows)
    revenue_hour = m.revenue_per_gpu_hour(v["theoretical_tps_per_gpu"], tfi_now,
                                          d["blended_price"])
    out = {
        "tef_now": d["tef_now"],
        "slo_attainment": d["slo_attainment"],
        "sla": d["sla"],
        "tfi_now": tfi_now,
        "equivalent_gpus": equivalent,
        "avoided_capex": (equivalent - gpus) * v["capex_per_gpu"],
        "blended_price": d["blended_price"],
        "gpu_hour_cost": d["gpu_hour_cost"],
        "breakeven_util": m.breakeven_util(d["gpu_hour_cost"], v["theoretical_tps_per_gpu"],
                                           d["blended_price"]),
        "tokens_sold_total": tokens,
        "revenue_total": revenue,
        "ebitda_total": ebitda,
        "ebitda_margin": ebitda / revenue if revenue else None,
        "npv": m.npv(rate, flows),
        "irr": None if monthly_irr is None else (1 + monthly_irr) ** 12 - 1,
        "payback_months": m.payback_months(flows),
        "roi": float(np.sum(flows)) / d["capex"] if d["capex"] else None,
        "cost_per_mtok": costs / (tokens / m.TOKENS_PER_MTOK) if tokens else None,
        "economic_life_months": m.economic_life_months(
            revenue_hour, d["cash_cost_per_gpu_hour"], decline),
    }
    return {k: _none_if_undefined(x) for k, x in out.items()}


def sweep(inputs: SiteInputs, tef_targets, declines, scenario: str | None = None
          ) -> dict[str, np.ndarray]:
    """EBITDA and NPV totals over a grid of TEF targets (rows) × quarterly price declines (columns).

    The other inputs are those of ``scenario`` (default: the live one). Returns arrays of shape
    ``(len(tef_targets), len(declines))`` under ``"ebitda_total"`` and ``"npv"``.
    """
    scenario = scenario or inputs.scenario
    hours, _, _ = _hours(inputs)
    tef = np.asarray(tef_targets, dtype=float)[:, None, None]
    dec = np.asarray(declines, dtype=float)[None, :, None]
    lines = _timeline(inputs, _derived(inputs), hours, tef,
                      inputs.live("sell_through_target", scenario), dec)
    flows = lines["cash_flow"]
    rate = m.monthly_rate(inputs["discount_rate"])
    discount = (1 + rate) ** -np.arange(flows.shape[-1])
    return {"ebitda_total": lines["ebitda"].sum(axis=-1), "npv": (flows * discount).sum(axis=-1)}
