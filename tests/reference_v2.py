"""An independent reference implementation of the TFOM (methodology §4, §6, §7 and §10).

Version 2 of the spec, with version 3's exit at a market value and shutdown per scenario
(§10.1, §10.2), the bridge and equivalent GPUs of §10.3, the warnings and MIRR of §10.5 and the
GPU-hour at the cost of capital (§10.8); not yet §10.4's financing. With
``residual_method="book"`` and no shutdown it computes version 2's figures (except the
GPU-hour cost, which is version 2's at a discount rate of 0).

This module is the oracle the production model is tested against. It is written from the
specification's text alone, month by month with plain loops, ``calendar`` and ``math``, and
imports nothing from ``tokenfactory_xl``: a mistake in the production model cannot be copied
into it. It favours being easy to check by hand over speed.

Conventions of this module
- Every monthly line is a list indexed by month, ``line[0]`` being month 0 (the investment
  made before month 1) and ``line[H]`` the last month; lines that have nothing in month 0
  hold 0.0 there.
- Per-cohort lines are lists of such lists, in cohort order (cohort 1 = the site's own row).
- Fiscal-year lines are dicts keyed by calendar year.
- Money is in the site's currency, tokens are tokens (not millions), hours are hours.
- "none" of the spec is ``None``.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
from decimal import ROUND_HALF_UP, Decimal
from statistics import NormalDist
from typing import Any

SCENARIOS = ("Base", "Optimised", "Downside")

#: The site inputs and their defaults, methodology §6 (a per-scenario "S" input is a
#: (Base, Optimised, Downside) tuple). Restated here on purpose: the oracle must not read
#: the production catalogue, or a wrong default there would be copied into the oracle.
DEFAULTS: dict[str, Any] = {
    "site_name": "Example site",
    "currency": "USD",
    "start_date": dt.date(2027, 1, 1),
    "horizon_months": 60,
    "scenario": "Base",
    "gpus": 1024,
    "gpu_model": "H200",
    "ownership": "own",
    "capex_per_gpu": 40_000.0,
    "salvage_per_gpu": 0.0,
    "life_years": 4.0,
    "rent_per_gpu_hour": 2.00,
    "power_kw_per_gpu": 1.0,
    "pue": 1.3,
    "electricity_per_kwh": 0.08,
    "opex_per_gpu_hour": 0.15,
    "fixed_opex_per_month": 0.0,
    "theoretical_tps_per_gpu": 10_000.0,
    "measured_tps": 3_072_000.0,
    "tef_target": (0.30, 0.65, 0.30),
    "tef_ramp_months": 6,
    "availability": 0.995,
    "ttft_p50_ms": 400.0,
    "ttft_p99_ms": 1_500.0,
    "ttft_slo_ms": 2_000.0,
    "sell_through_start": 0.50,
    "sell_through_target": (0.80, 0.85, 0.60),
    "sell_through_ramp_months": 12,
    "price_input_per_mtok": 0.28,
    "price_cached_input_per_mtok": 0.07,
    "price_output_per_mtok": 1.10,
    "output_share": 0.25,
    "cache_hit_rate": 0.50,
    "batch_share": 0.20,
    "batch_discount": 0.50,
    "decline_per_quarter": (0.10, 0.10, 0.25),
    "discount_rate": 0.10,
    "tax_rate": 0.25,
    "prefill_tps_per_gpu": None,
    "decode_tps_per_gpu": None,
    "retire_month": None,
    "residual_share": 1.0,
    "market_mtok_month1": 0.0,
    "market_growth_per_quarter": (0.30, 0.30, 0.10),
    "price_factor": (1.0, 1.0, 0.9),
    "contract_mtok_per_month": 0.0,
    "contract_price_per_mtok": 0.25,
    "contract_months": 0,
    "programme_cost_once": (0.0, 0.0, 0.0),
    "programme_fee_per_month": (0.0, 0.0, 0.0),
    "debt_share": 0.0,
    "debt_rate": 0.08,
    "debt_tenor_months": 48,
    # version 3 (§10)
    "residual_method": "market",
    "resale_decline_per_quarter": (0.10, 0.10, 0.15),
    "shutdown_month": (None, None, None),
    "dscr_covenant": 1.20,
    # §10.4: escalation, working capital, CapEx terms, tax depreciation
    "power_escalation_per_year": 0.02,
    "opex_escalation_per_year": 0.02,
    "receivable_days": 30.0,
    "payable_days": 30.0,
    "capex_deposit_share": 0.0,
    "capex_lead_months": 0,
    "tax_life_years": None,
}

#: The "S" inputs of §6: one value per scenario.
S_INPUTS = tuple(name for name, value in DEFAULTS.items() if isinstance(value, tuple))

#: The cohort columns of §4.1 that a cohort row may give and otherwise takes from the site
#: (retire_month is a cohort column too, but never inherited: §4.1).
COHORT_FIELDS = ("gpu_model", "ownership", "capex_per_gpu", "salvage_per_gpu", "life_years",
                 "rent_per_gpu_hour", "power_kw_per_gpu", "theoretical_tps_per_gpu")

#: z₀.₉₉ = NORMSINV(0.99), §1.
Z_99 = NormalDist().inv_cdf(0.99)


# --------------------------------------------------------------------------------------------
# Inputs (§6)
# --------------------------------------------------------------------------------------------

def site_values(inputs: dict[str, Any], scenario: str) -> dict[str, Any]:
    """The site's inputs (§6) with defaults filled in and each S input at ``scenario``'s value.

    An S input may be given as a (Base, Optimised, Downside) 3-tuple or as one number (the
    same in every scenario). §6 "Derived once": with both prefill_tps_per_gpu and
    decode_tps_per_gpu given, theoretical_tps_per_gpu is their §2 blend.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r}: allowed are {', '.join(SCENARIOS)}")
    # the risk ranges (§10.6) are not inputs of the model: the tornado and the draws move the
    # model's own inputs
    unknown = sorted(set(inputs) - set(DEFAULTS) - {n for n in inputs if n.startswith("range_")})
    if unknown:
        raise ValueError(f"unknown inputs {unknown}: the §6 names are {sorted(DEFAULTS)}")
    v = dict(DEFAULTS)
    v.update(inputs)
    k = SCENARIOS.index(scenario)
    for name in S_INPUTS:
        value = v[name]
        v[name] = value[k] if isinstance(value, (tuple, list)) else value
    if isinstance(v["start_date"], str):
        v["start_date"] = dt.date.fromisoformat(v["start_date"])
    if v["prefill_tps_per_gpu"] and v["decode_tps_per_gpu"]:
        v["theoretical_tps_per_gpu"] = blended_tps(
            v["prefill_tps_per_gpu"], v["decode_tps_per_gpu"], v["output_share"])
    return v


def excel_round(x: float) -> int:
    """Excel's ROUND(x, 0): halves round away from zero (§4.1, n_c = ROUND(12 × life))."""
    return int(Decimal(f"{x:.15g}").quantize(Decimal(1), rounding=ROUND_HALF_UP))


def cohort_table(v: dict[str, Any], cohorts: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The fleet's cohorts, §4.1 and §6 "Cohorts".

    Cohort 1 is the site's own row, online in month 1, its retire_month the site's. Each
    further cohort row gives ``online_month`` and ``gpus`` and may give any §4.1 column; a
    missing column (absent or None, a blank cell) takes the site's value, except
    retire_month (never inherited: blank). A ``site_name`` key (the cohorts table's link to
    its site) is ignored. ``last`` is the last month in service: retire_month, or H when
    blank or past H.
    """
    horizon = v["horizon_months"]
    rows = [{"cohort": "1", "online_month": 1, "gpus": v["gpus"],
             "retire_month": v["retire_month"], **{f: v[f] for f in COHORT_FIELDS}}]
    for row in cohorts or []:
        missing = {"cohort", "online_month", "gpus"} - set(row)
        if missing:
            raise ValueError(f"cohort row {row}: missing {sorted(missing)}")
        given = {k: value for k, value in row.items() if value is not None and k != "site_name"}
        rows.append({"retire_month": None, **{f: v[f] for f in COHORT_FIELDS}, **given})
    names = [str(r["cohort"]) for r in rows]
    for r in rows:
        if names.count(str(r["cohort"])) > 1:
            raise ValueError(f"cohort {r['cohort']!r}: duplicate cohort name")
        if not 1 <= r["online_month"] <= horizon:
            raise ValueError(f"cohort {r['cohort']!r}: online_month={r['online_month']} "
                             f"is outside 1 … {horizon}")
        retire = r["retire_month"]
        if retire is not None and retire < r["online_month"]:
            raise ValueError(f"cohort {r['cohort']!r}: retire_month={retire} is before its "
                             f"online_month={r['online_month']}")
        r["last"] = horizon if retire is None or retire > horizon else retire
        # §10.2: a shutdown ends every cohort's service; one due later is never bought
        if v["shutdown_month"] is not None:
            r["last"] = min(r["last"], v["shutdown_month"])
        r["bought"] = r["online_month"] <= r["last"]
        r["owned"] = r["ownership"] == "own"
        r["n_dep"] = excel_round(12 * r["life_years"])
        # §10.4: one tax life for every cohort, or each cohort's own book life when blank
        r["n_tax"] = (r["n_dep"] if v["tax_life_years"] is None
                      else excel_round(12 * v["tax_life_years"]))
    return rows


# --------------------------------------------------------------------------------------------
# §1 and §2: the quantities derived once
# --------------------------------------------------------------------------------------------

def phi(x: float) -> float:
    """The standard normal distribution function, NORMSDIST(x)."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def slo_attainment(p50_ms: float, p99_ms: float, slo_ms: float) -> float:
    """§1: TTFT log-normal, σ = ln(p99 / p50) ÷ z₀.₉₉; SLO attainment = Φ(ln(SLO / p50) ÷ σ).

    Returns the share of requests within the objective [fraction]. z₀.₉₉ is NORMSINV(0.99)
    to full precision: the spec's worked examples need it (its rounded 2.326348 moves the
    revenue by about 1e-9 relative).
    """
    sigma = math.log(p99_ms / p50_ms) / Z_99
    return phi(math.log(slo_ms / p50_ms) / sigma)


def blended_price(v: dict[str, Any]) -> float:
    """§2 "Blended price": P₀ [money/Mtok] from list prices, cache hits and batch discount."""
    h = v["cache_hit_rate"]
    o = v["output_share"]
    input_price = h * v["price_cached_input_per_mtok"] + (1 - h) * v["price_input_per_mtok"]
    list_price = (1 - o) * input_price + o * v["price_output_per_mtok"]
    return list_price * (1 - v["batch_share"] * v["batch_discount"])


def blended_tps(prefill: float, decode: float, output_share: float) -> float:
    """§2: T = 1 ÷ ((1 − o) ÷ T_p + o ÷ T_d) [tokens/s per GPU]."""
    return 1.0 / ((1 - output_share) / prefill + output_share / decode)


# --------------------------------------------------------------------------------------------
# §4: the timeline
# --------------------------------------------------------------------------------------------

def timeline(start: dt.date, horizon: int) -> tuple[list[float], list[int | None]]:
    """§4 and "Units": hours_m = days in calendar month m × 24, and each month's fiscal year.

    Index 0 is month 0 (no hours, no fiscal year); month 1 is the month of ``start``.
    """
    hours: list[float] = [0.0]
    years: list[int | None] = [None]
    year, month = start.year, start.month
    for _ in range(horizon):
        hours.append(calendar.monthrange(year, month)[1] * 24.0)
        years.append(year)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return hours, years


# --------------------------------------------------------------------------------------------
# §4.1: the fleet
# --------------------------------------------------------------------------------------------

def fleet(v: dict[str, Any], rows: list[dict[str, Any]], hours: list[float]) -> dict[str, Any]:
    """§4.1: in service, theoretical tokens, CapEx, depreciation, disposal, rent, power, opex.

    These lines depend on no S input (§4.5): they are the same in every scenario.
    """
    horizon = len(hours) - 1
    months = range(horizon + 1)
    zeros = [0.0] * (horizon + 1)
    gpus_in_service, theoretical, power, mw_seconds = (list(zeros) for _ in range(4))
    capex, depreciation, nbv, proceeds, gain, rent = (list(zeros) for _ in range(6))
    tax_depreciation, tax_value, loan_base_c = list(zeros), list(zeros), []
    in_service, gpus_by_cohort, capex_c, depreciation_c = [], [], [], []
    # §10.4: escalation from month 1, compounded monthly at the yearly rate
    power_up = [(1 + v["power_escalation_per_year"]) ** ((m - 1) / 12) for m in months]
    opex_up = [(1 + v["opex_escalation_per_year"]) ** ((m - 1) / 12) for m in months]
    terminal = 0.0  # §10.1: proceeds at H of the cohorts still held then
    for r in rows:
        s = [1.0 if r["online_month"] <= m <= r["last"] else 0.0 for m in months]
        cap_c, dep_c, loan_c = list(zeros), list(zeros), list(zeros)
        if r["owned"] and r["bought"]:
            on, n, last = r["online_month"], r["n_dep"], r["last"]
            whole = r["gpus"] * r["capex_per_gpu"]
            # §10.4: the deposit share paid capex_lead_months earlier (not before month 0), the
            # rest the month before online; the loan is on the whole CapEx, at online − 1
            deposit_month = max(0, on - 1 - v["capex_lead_months"])
            cap_c[deposit_month] += v["capex_deposit_share"] * whole
            cap_c[on - 1] += (1 - v["capex_deposit_share"]) * whole
            loan_c[on - 1] = whole
            per_month = r["gpus"] * (r["capex_per_gpu"] - r["salvage_per_gpu"]) / n
            for m in months:
                if s[m] and m < on + n:
                    dep_c[m] = per_month
            n_tax = r["n_tax"]
            tax_per_month = r["gpus"] * (r["capex_per_gpu"] - r["salvage_per_gpu"]) / n_tax
            for m in months:
                if s[m] and m < on + n_tax:
                    tax_depreciation[m] += tax_per_month
            tax_left = max(0, on + n_tax - 1 - last)
            tax_value[last] += r["gpus"] * (r["salvage_per_gpu"] + (
                r["capex_per_gpu"] - r["salvage_per_gpu"]) * tax_left / n_tax)
            remaining = max(0, on + n - 1 - last)
            above_salvage = (r["capex_per_gpu"] - r["salvage_per_gpu"]) * remaining / n
            book = r["gpus"] * (r["salvage_per_gpu"] + above_salvage)
            if v["residual_method"] == "book":
                paid = r["gpus"] * (r["salvage_per_gpu"] + above_salvage * v["residual_share"])
            else:  # §10.1: the resale price after the quarters held, at least the salvage
                held_quarters = (last - on + 1) / 3
                resale = max(r["salvage_per_gpu"], r["capex_per_gpu"] * v["residual_share"]
                             * (1 - v["resale_decline_per_quarter"]) ** held_quarters)
                paid = r["gpus"] * resale
            nbv[last] += book
            proceeds[last] += paid
            gain[last] += paid - book
            if last == horizon:
                terminal += paid
        for m in months:
            gpus_in_service[m] += r["gpus"] * s[m]
            theoretical[m] += r["gpus"] * r["theoretical_tps_per_gpu"] * s[m] * 3600 * hours[m]
            kw = r["gpus"] * r["power_kw_per_gpu"] * s[m] * v["pue"]
            power[m] += kw * hours[m] * v["electricity_per_kwh"] * power_up[m]
            # Facility power in service [MW·s]: the denominator of §7's tokens_per_mw.
            mw_seconds[m] += kw / 1000 * hours[m] * 3600
            if not r["owned"]:
                rent[m] += r["gpus"] * r["rent_per_gpu_hour"] * s[m] * hours[m]
            capex[m] += cap_c[m]
            depreciation[m] += dep_c[m]
        in_service.append(s)
        gpus_by_cohort.append([r["gpus"] * s[m] for m in months])
        capex_c.append(cap_c)
        loan_base_c.append(loan_c)
        depreciation_c.append(dep_c)
    # §10.2: the fixed opex (and the programme fee) stop after the last month any GPU runs
    fleet_end = max((r["last"] for r in rows if r["bought"] and r["gpus"] > 0), default=0)
    other_opex = [0.0] + [(gpus_in_service[m] * v["opex_per_gpu_hour"] * hours[m]
                           + (v["fixed_opex_per_month"] if m <= fleet_end else 0.0)) * opex_up[m]
                          for m in months[1:]]
    return {
        "fleet_end": fleet_end, "terminal_proceeds": terminal,
        "last_by_cohort": [r["last"] for r in rows],
        "hours": hours, "in_service": in_service, "gpus_in_service": gpus_in_service,
        "gpus_in_service_by_cohort": gpus_by_cohort,
        "theoretical_tokens": theoretical, "capex": capex, "capex_by_cohort": capex_c,
        "loan_base_by_cohort": loan_base_c, "opex_escalation": opex_up,
        "tax_depreciation": tax_depreciation, "disposal_tax_value": tax_value,
        "depreciation": depreciation, "depreciation_by_cohort": depreciation_c,
        "disposal_nbv": nbv, "disposal_proceeds": proceeds, "disposal_gain": gain,
        "rent": rent, "power": power, "other_opex": other_opex, "mw_seconds": mw_seconds,
    }


# --------------------------------------------------------------------------------------------
# §4.2: efficiency, capacity and demand
# --------------------------------------------------------------------------------------------

def ramp(start: float, target: float, ramp_months: int, m: int) -> float:
    """§4.2 / §6: month m has moved min(m, ramp) ÷ ramp of the way; ramp 0 = target at once."""
    if ramp_months == 0:
        return target
    return start + (target - start) * min(m, ramp_months) / ramp_months


def demand(v: dict[str, Any], d: dict[str, Any], theoretical: list[float]) -> dict[str, Any]:
    """§4.2: TEF, sell-through, deliverable, sellable, contract and market sales, revenue."""
    horizon = len(theoretical) - 1
    lines: dict[str, list[float]] = {name: [0.0] * (horizon + 1) for name in (
        "tef", "sell_through", "deliverable_tokens", "sellable_tokens", "contracted_tokens",
        "market_demand_tokens", "contract_sold_tokens", "market_sold_tokens", "tokens_sold",
        "realised_sell_through_monthly", "market_price", "revenue")}
    for m in range(1, horizon + 1):
        tef = ramp(d["tef_now"], v["tef_target"], v["tef_ramp_months"], m)
        sell = ramp(v["sell_through_start"], v["sell_through_target"],
                    v["sell_through_ramp_months"], m)
        deliverable = theoretical[m] * tef * d["sla"]
        sellable = deliverable * sell
        contracted = v["contract_mtok_per_month"] * 1e6 if m <= v["contract_months"] else 0.0
        market = (v["market_mtok_month1"] * 1e6
                  * (1 + v["market_growth_per_quarter"]) ** ((m - 1) / 3))
        contract_sold = min(contracted, sellable)
        if v["market_mtok_month1"] == 0:
            market_sold = sellable - contract_sold
        else:
            market_sold = min(market, sellable - contract_sold)
        sold = contract_sold + market_sold
        price = d["p0"] * v["price_factor"] * (1 - v["decline_per_quarter"]) ** ((m - 1) / 3)
        revenue = (contract_sold / 1e6 * v["contract_price_per_mtok"]
                   + market_sold / 1e6 * price)
        for name, value in (("tef", tef), ("sell_through", sell),
                            ("deliverable_tokens", deliverable), ("sellable_tokens", sellable),
                            ("contracted_tokens", contracted), ("market_demand_tokens", market),
                            ("contract_sold_tokens", contract_sold),
                            ("market_sold_tokens", market_sold), ("tokens_sold", sold),
                            ("realised_sell_through_monthly",
                             sold / deliverable if deliverable else 0.0),
                            ("market_price", price), ("revenue", revenue)):
            lines[name][m] = value
    return lines


# --------------------------------------------------------------------------------------------
# §4.3: profit, tax and cash
# --------------------------------------------------------------------------------------------

def yearly_tax(taxable_m: list[float], years: list[int | None],
               tax_rate: float) -> dict[str, Any]:
    """§4.3 tax: yearly, losses carried forward, paid in equal monthly instalments.

    taxable_y = Σ taxable_m over the fiscal year's months in the horizon; with L₀ = 0,
    tax_y = rate × MAX(0, taxable_y − L_(y−1)) and L_y = MAX(0, L_(y−1) − taxable_y);
    tax_m = tax_y ÷ (the year's months inside the horizon). No refund of a final loss.
    """
    fiscal = [y for y in dict.fromkeys(years) if y is not None]
    taxable_y = {y: 0.0 for y in fiscal}
    months_y = {y: 0 for y in fiscal}
    for m, y in enumerate(years):
        if y is not None:
            taxable_y[y] += taxable_m[m]
            months_y[y] += 1
    tax_y, pool_y = {}, {}
    pool = 0.0
    for y in fiscal:
        tax_y[y] = tax_rate * max(0.0, taxable_y[y] - pool)
        pool = max(0.0, pool - taxable_y[y])
        pool_y[y] = pool
    tax_m = [0.0 if y is None else tax_y[y] / months_y[y] for y in years]
    return {"taxable_by_year": taxable_y, "tax_by_year": tax_y, "loss_pool_by_year": pool_y,
            "tax": tax_m}


def monthly_rate(yearly: float) -> float:
    """§4.3: the monthly rate (1 + r)^(1/12) − 1 of a yearly rate r."""
    return (1 + yearly) ** (1 / 12) - 1


def present_values(flows: list[float], rate_m: float) -> list[float]:
    """Each month's flow discounted at the monthly rate; month 0 undiscounted (§4.3)."""
    return [f / (1 + rate_m) ** m for m, f in enumerate(flows)]


def npv(flows: list[float], yearly_rate: float) -> float:
    """§4.3 NPV at a yearly rate, monthly compounding, month 0 undiscounted [money]."""
    return sum(present_values(flows, monthly_rate(yearly_rate)))


def _npv_at(flows: list[float], rate_m: float) -> float:
    """Σ flow_m ÷ (1 + rate)^m by Horner's rule in x = 1 ÷ (1 + rate)."""
    x = 1.0 / (1.0 + rate_m)
    total = 0.0
    for f in reversed(flows):
        total = total * x + f
    return total


def _irr_grid() -> list[float]:
    """Monthly rates from −99 % to +1,000 % a month, dense near 0 (5 % geometric steps from 1e-7).

    A pair of roots closer together than one step (5 % of the rate) would cancel unseen; that
    needs a cash flow whose NPV curve touches zero twice within a 5 % band of the rate, which
    no realistic project produces.
    """
    magnitudes, r = [], 1e-7
    while r < 10:
        magnitudes.append(r)
        r *= 1.05
    positive = magnitudes + [10.0]
    negative = [-r for r in magnitudes if r < 0.99] + [-0.99]
    return sorted(negative) + [0.0] + positive


_GRID = _irr_grid()


def monthly_irr(flows: list[float]) -> float | None:
    """§4.3 IRR: the monthly rate where NPV = 0, the root nearest to zero; None when none.

    Root finder: NPV is evaluated on a fixed grid of monthly rates (``_irr_grid``); every pair
    of neighbouring grid rates where NPV changes sign brackets a root, refined by bisection to
    the last representable digit; of all roots the one with the smallest |rate| is returned.
    Cash flows without a sign change, or whose NPV has no zero in (−99 %, +1,000 %) a month,
    have no IRR (None).
    """
    if not (any(f > 0 for f in flows) and any(f < 0 for f in flows)):
        return None
    values = [_npv_at(flows, r) for r in _GRID]
    roots = []
    for k in range(len(_GRID) - 1):
        a, b, fa, fb = _GRID[k], _GRID[k + 1], values[k], values[k + 1]
        if fa == 0:
            roots.append(a)
        elif fa * fb < 0:
            lo, hi, flo = a, b, fa
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if mid in (lo, hi):
                    break
                fmid = _npv_at(flows, mid)
                if fmid == 0:
                    lo = hi = mid
                    break
                if (fmid < 0) == (flo < 0):
                    lo, flo = mid, fmid
                else:
                    hi = mid
            roots.append(0.5 * (lo + hi))
    if values[-1] == 0:
        roots.append(_GRID[-1])
    if not roots:
        return None
    return min(roots, key=abs)


def yearly_irr(flows: list[float]) -> float | None:
    """§4.3: the monthly IRR shown yearly, (1 + IRR_m)^12 − 1; None when no IRR."""
    irr_m = monthly_irr(flows)
    return None if irr_m is None else (1 + irr_m) ** 12 - 1


def payback(flows: list[float]) -> float | None:
    """§4.3 payback [months]: the last crossing of cumulative cash flow from below zero.

    With cum_k the cumulative flow after month k: the last k with cum_(k−1) < 0 ≤ cum_k,
    payback = (k − 1) + (−cum_(k−1)) ÷ flow_k; 0 when cum is never negative; None when
    cum_H < 0.
    """
    cum, total = [], 0.0
    for f in flows:
        total += f
        cum.append(total)
    if cum[-1] < 0:
        return None
    if all(c >= 0 for c in cum):
        return 0.0
    last = max(k for k in range(1, len(cum)) if cum[k - 1] < 0 <= cum[k])
    return (last - 1) + (-cum[last - 1]) / flows[last]


# --------------------------------------------------------------------------------------------
# §4.4: financing
# --------------------------------------------------------------------------------------------

def debt_schedule(v: dict[str, Any], capex_by_cohort: list[list[float]],
                  last_months: list[int]) -> dict[str, Any]:
    """§4.4: one annuity loan per owned cohort's CapEx, summed month by month.

    D = debt_share × CapEx_c drawn in the CapEx month d; i = debt_rate ÷ 12; payments
    D × i ÷ (1 − (1 + i)^(−n)) (D ÷ n at rate 0) in months d + 1 … d + n, interest = i ×
    opening balance, principal = payment − interest; the balance still owed after month H's
    payment is repaid in month H ("repayment at H", not scheduled debt service). §10.2: a
    cohort sold before H (its last month ``last_months[c]``) prepays what it still owes in that
    month, after the month's payment ("prepayment", not scheduled debt service either).
    """
    horizon = len(capex_by_cohort[0]) - 1
    i = v["debt_rate"] / 12
    n = v["debt_tenor_months"]
    keys = ("drawdown", "interest", "principal", "scheduled_debt_service", "repayment_at_h",
            "debt_balance", "prepayment")
    out = {k: [0.0] * (horizon + 1) for k in keys}
    for cap_c, last in zip(capex_by_cohort, last_months, strict=True):
        for d_month, capex in enumerate(cap_c):
            loan = v["debt_share"] * capex
            if loan == 0:
                continue
            payment = loan / n if i == 0 else loan * i / (1 - (1 + i) ** (-n))
            out["drawdown"][d_month] += loan
            balance = loan
            out["debt_balance"][d_month] += balance
            for m in range(d_month + 1, horizon + 1):
                if m > last:  # sold, and the loan prepaid: nothing more
                    break
                if m <= d_month + n:
                    interest = i * balance
                    principal = payment - interest
                    out["interest"][m] += interest
                    out["principal"][m] += principal
                    out["scheduled_debt_service"][m] += payment
                    balance -= principal
                    if m == d_month + n:
                        balance = 0.0  # the last annuity payment clears the loan exactly
                if m == horizon and balance != 0:
                    out["repayment_at_h"][m] += balance
                    out["principal"][m] += balance
                    balance = 0.0
                if m == last and balance != 0:
                    out["prepayment"][m] += balance
                    out["principal"][m] += balance
                    balance = 0.0
                out["debt_balance"][m] += balance
    return out


def debt_service_cover(cfads: list[float], debt_service: list[float],
                       years: list[int | None]) -> dict[str, Any]:
    """§4.4 DSCR [ratio] over the months with scheduled debt service (the repayment at H excluded).

    A fiscal year's DSCR = Σ CFADS ÷ Σ scheduled debt service over its months with debt
    service; min_dscr the lowest of them; avg_dscr the same ratio over all such months. None
    (both) without debt service.
    """
    due = [m for m, service in enumerate(debt_service) if service > 0]
    by_year: dict[int, float] = {}
    for y in dict.fromkeys(years[m] for m in due):
        months = [m for m in due if years[m] == y]
        by_year[y] = sum(cfads[m] for m in months) / sum(debt_service[m] for m in months)
    if not due:
        return {"dscr_by_year": by_year, "min_dscr": None, "avg_dscr": None}
    return {"dscr_by_year": by_year, "min_dscr": min(by_year.values()),
            "avg_dscr": sum(cfads[m] for m in due) / sum(debt_service[m] for m in due)}


# --------------------------------------------------------------------------------------------
# §4.5 and the run
# --------------------------------------------------------------------------------------------

def derived_once(v: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, float]:
    """§6 "Derived once": TEF now (of cohort 1), SLO attainment, SLA and P₀."""
    tef_now = v["measured_tps"] / (rows[0]["gpus"] * rows[0]["theoretical_tps_per_gpu"])
    if tef_now > 1:
        raise ValueError(f"measured_tps={v['measured_tps']} gives TEF now = {tef_now} > 1")
    slo = slo_attainment(v["ttft_p50_ms"], v["ttft_p99_ms"], v["ttft_slo_ms"])
    return {"tef_now": tef_now, "slo_attainment": slo, "sla": v["availability"] * slo,
            "p0": blended_price(v)}


def profit_and_cash(v: dict[str, Any], f: dict[str, Any], s: dict[str, Any],
                    years: list[int | None]) -> dict[str, Any]:
    """§4.3: programme cost, EBITDA, EBIT, yearly tax (unlevered), project and discounted cash."""
    months = range(len(years))
    programme = [0.0] + [(v["programme_fee_per_month"] * f["opex_escalation"][m]
                          if m <= f["fleet_end"] else 0.0)
                         + (v["programme_cost_once"] if m == 1 else 0.0) for m in months[1:]]
    ebitda = [s["revenue"][m] - f["power"][m] - f["other_opex"][m] - f["rent"][m] - programme[m]
              for m in months]
    ebit = [ebitda[m] - f["depreciation"][m] + f["disposal_gain"][m] for m in months]
    # §10.4: taxable profit with tax depreciation and the tax gain on disposal
    taxable = [ebitda[m] - f["tax_depreciation"][m]
               + (f["disposal_proceeds"][m] - f["disposal_tax_value"][m]) for m in months]
    tax = yearly_tax(taxable, years, v["tax_rate"])
    wc = working_capital(v, f, s["revenue"], programme)
    project_cf = [ebitda[m] - tax["tax"][m] - f["capex"][m] + f["disposal_proceeds"][m]
                  - wc["wc_flow"][m] for m in months]
    return {"programme_cost": programme, "ebitda": ebitda, "ebit": ebit, **tax, **wc,
            "taxable_profit": taxable, "project_cash_flow": project_cf,
            "discounted_cash_flow": present_values(project_cf, monthly_rate(v["discount_rate"]))}


def working_capital(v: dict[str, Any], f: dict[str, Any], revenue: list[float],
                    programme: list[float]) -> dict[str, list[float]]:
    """§10.4: receivables_m = revenue_m × receivable_days ÷ days_m, payables_m = (power + other
    opex + rent + programme cost)_m × payable_days ÷ days_m (days_m = hours_m ÷ 24), WC =
    receivables − payables with WC_0 = 0; a month's cash flow loses WC_m − WC_(m−1), and month H
    adds WC_H back (the release). ``wc_flow`` is what each month's cash flow loses to it."""
    horizon = len(revenue) - 1
    receivables, payables, wc, flow = ([0.0] * (horizon + 1) for _ in range(4))
    for m in range(1, horizon + 1):
        days = f["hours"][m] / 24
        receivables[m] = revenue[m] * v["receivable_days"] / days
        payables[m] = (f["power"][m] + f["other_opex"][m] + f["rent"][m] + programme[m]) \
            * v["payable_days"] / days
        wc[m] = receivables[m] - payables[m]
        flow[m] = wc[m] - wc[m - 1]
    flow[horizon] -= wc[horizon]  # released at H: the month's cash flow adds WC_H back
    return {"receivables": receivables, "payables": payables, "working_capital": wc,
            "wc_flow": flow}


def financing(v: dict[str, Any], f: dict[str, Any], p: dict[str, Any],
              years: list[int | None]) -> dict[str, Any]:
    """§4.4: the debt schedule, levered tax (interest deductible), CFADS, DSCR, equity cash."""
    months = range(len(years))
    debt = debt_schedule(v, f["loan_base_by_cohort"], f["last_by_cohort"])
    levered = yearly_tax([p["taxable_profit"][m] - debt["interest"][m] for m in months], years,
                         v["tax_rate"])
    cfads = [p["ebitda"][m] - levered["tax"][m] - p["wc_flow"][m] for m in months]
    equity_cf = [-f["capex"][m] + debt["drawdown"][m] + p["ebitda"][m] - levered["tax"][m]
                 - debt["interest"][m] - debt["principal"][m] + f["disposal_proceeds"][m]
                 - p["wc_flow"][m] for m in months]
    # §10.4 funding: the company keeps no cash
    contributions = [max(0.0, -x) for x in equity_cf]
    distributions = [max(0.0, x) for x in equity_cf]
    return {**debt, **{"levered_" + k: value for k, value in levered.items()},
            "cfads": cfads, "equity_cash_flow": equity_cf,
            "contributions": contributions, "distributions": distributions,
            "dscr_by_year": debt_service_cover(cfads, debt["scheduled_debt_service"],
                                               years)["dscr_by_year"]}


def reference_run(inputs: dict[str, Any], cohorts: list[dict[str, Any]] | None = None,
                  scenario: str = "Base") -> dict[str, Any]:
    """Every monthly line of §4 and every summary output of §7 for one scenario (§4.5).

    ``inputs`` holds §6 names (missing ones take ``DEFAULTS``), S inputs as (Base,
    Optimised, Downside) tuples or single numbers; ``cohorts`` the extra cohort rows of §6
    (cohort 1 is the site's own row). The scenario computed is ``scenario`` (an input named
    "scenario" only says which one a workbook would show live). Returns one flat dict:
    - monthly lines, lists indexed by month 0 … H: ``hours``, ``gpus_in_service``,
      ``theoretical_tokens``, ``capex``, ``depreciation``, ``disposal_nbv``,
      ``disposal_proceeds``, ``disposal_gain``, ``rent``, ``power``, ``other_opex``,
      ``tef``, ``sell_through``, ``deliverable_tokens``, ``sellable_tokens``,
      ``contracted_tokens``, ``market_demand_tokens``, ``contract_sold_tokens``,
      ``market_sold_tokens``, ``tokens_sold``, ``realised_sell_through_monthly``,
      ``market_price``, ``revenue``, ``programme_cost``, ``ebitda``, ``ebit``, ``tax``
      (the instalments), ``project_cash_flow``, ``discounted_cash_flow``, ``drawdown``,
      ``interest``, ``principal`` (the repayment at H included), ``scheduled_debt_service``,
      ``repayment_at_h``, ``debt_balance`` (closing), ``levered_tax``, ``cfads``,
      ``equity_cash_flow``, ``fiscal_year`` (None in month 0);
    - per cohort (a list of monthly lines, cohort 1 first): ``in_service``,
      ``gpus_in_service_by_cohort``, ``capex_by_cohort``, ``depreciation_by_cohort``;
    - per fiscal year (dicts by calendar year): ``taxable_by_year``, ``tax_by_year``,
      ``loss_pool_by_year`` and their ``levered_`` twins, ``dscr_by_year``;
    - the §7 outputs by their §7 names.
    """
    v = site_values(inputs, scenario)
    rows = cohort_table(v, cohorts)
    d = derived_once(v, rows)
    hours, years = timeline(v["start_date"], v["horizon_months"])
    f = fleet(v, rows, hours)
    s = demand(v, d, f["theoretical_tokens"])
    p = profit_and_cash(v, f, s, years)
    fin = financing(v, f, p, years)
    lines: dict[str, Any] = {"months": list(range(len(years))), "fiscal_year": years,
                             **f, **s, **p, **fin}
    outputs = summary_outputs(v, rows, d, lines)
    clash = set(lines) & set(outputs)
    assert not clash, f"a line and an output share a name: {clash}"
    return {"scenario": scenario, **lines, **outputs}


# --------------------------------------------------------------------------------------------
# §7: the summary outputs
# --------------------------------------------------------------------------------------------

def gpu_hour_cost(v: dict[str, Any], first: dict[str, Any]) -> float:
    """§7 gpu_hour_cost [money/GPU-h], cohort 1's (fixed opex spread over cohort 1's GPUs).

    §10.8: an owned GPU's capital as a monthly annuity at the discount rate, (CapEx − salvage ×
    vᴺ) × i ÷ (1 − vᴺ) per month, ÷ 730 hours; straight line at a rate of 0.
    """
    power = first["power_kw_per_gpu"] * v["pue"] * v["electricity_per_kwh"]
    i = monthly_rate(v["discount_rate"])
    if first["owned"] and i > 0:
        v_n = (1 / (1 + i)) ** (12 * first["life_years"])
        own = (first["capex_per_gpu"] - first["salvage_per_gpu"] * v_n) * i / (1 - v_n) / 730
    elif first["owned"]:
        own = (first["capex_per_gpu"] - first["salvage_per_gpu"]) / (first["life_years"] * 8760)
    else:
        own = first["rent_per_gpu_hour"]
    return own + power + v["opex_per_gpu_hour"] + v["fixed_opex_per_month"] / (first["gpus"] * 730)


def economic_life(v: dict[str, Any], lines: dict[str, Any]) -> float | None:
    """§7 economic_life_months: from the timeline's last month H.

    EBITDA_H ≤ 0: the last month with EBITDA > 0 (0 when none). Otherwise
    H + 3 × ln(c ÷ R_H) ÷ ln(1 − d), R_H and c month H's revenue and cash cost (power, other
    opex, rent, programme cost) per GPU-hour in service; None when d = 0 or c = 0.
    """
    horizon = len(lines["ebitda"]) - 1
    if lines["ebitda"][horizon] <= 0:
        return float(max((m for m in range(1, horizon + 1) if lines["ebitda"][m] > 0), default=0))
    gpu_hours = lines["gpus_in_service"][horizon] * lines["hours"][horizon]
    revenue = lines["revenue"][horizon] / gpu_hours
    cash_cost = sum(lines[k][horizon] for k in ("power", "other_opex", "rent",
                                                 "programme_cost")) / gpu_hours
    d = v["decline_per_quarter"]
    if d == 0 or cash_cost == 0:
        return None
    return horizon + 3 * math.log(cash_cost / revenue) / math.log(1 - d)


def summary_outputs(v: dict[str, Any], rows: list[dict[str, Any]], d: dict[str, float],
                    lines: dict[str, Any]) -> dict[str, Any]:
    """The §7 outputs of one scenario from its lines."""
    months = range(len(lines["months"]))
    rate_m = monthly_rate(v["discount_rate"])
    total_capex = sum(lines["capex"])
    cover = debt_service_cover(lines["cfads"], lines["scheduled_debt_service"],
                               lines["fiscal_year"])
    fleet_gpus = sum(r["gpus"] for r in rows)
    first = rows[0]
    # §10.3: the planned fleet in cohort-1 GPUs of equal theoretical throughput
    fleet_equiv = sum(r["gpus"] * r["theoretical_tps_per_gpu"] for r in rows) \
        / first["theoretical_tps_per_gpu"]
    equivalent = fleet_equiv * v["tef_target"] / d["tef_now"]
    avoided_capex = ((equivalent - fleet_equiv) * first["capex_per_gpu"]
                     if first["owned"] else None)
    avoided_rent = (None if first["owned"]
                    else (equivalent - fleet_equiv) * first["rent_per_gpu_hour"] * 8760)
    hour_cost = gpu_hour_cost(v, first)
    p0 = d["p0"]
    sold_total = sum(lines["tokens_sold"])
    revenue_total = sum(lines["revenue"])
    ebitda_total = sum(lines["ebitda"])
    pv = [1 / (1 + rate_m) ** m for m in months]
    cash_costs = [lines["power"][m] + lines["other_opex"][m] + lines["rent"][m]
                  + lines["programme_cost"][m] for m in months]
    # Pre-tax NPV = 0 ⇔ PV(revenue) = PV(CapEx) − PV(proceeds) + PV(cash costs).
    pv_outlay = sum(pv[m] * (lines["capex"][m] - lines["disposal_proceeds"][m] + cash_costs[m])
                    for m in months)
    pv_theoretical_value = sum(pv[m] * lines["theoretical_tokens"][m] / 1e6
                               * lines["market_price"][m] for m in months)
    # The market price path per unit of P₀ × price_factor: (1 − d)^((m − 1) / 3).
    pv_sold_at_unit_price = sum(pv[m] * lines["tokens_sold"][m] / 1e6
                                * (1 - v["decline_per_quarter"]) ** ((m - 1) / 3)
                                for m in months if m >= 1)
    mw_seconds = sum(lines["mw_seconds"])
    deliverable_total = sum(lines["deliverable_tokens"])
    cost_total = sum(cash_costs) + sum(lines["depreciation"])
    cost_per_mtok = cost_total / (sold_total / 1e6) if sold_total else None
    split = bool(v["prefill_tps_per_gpu"] and v["decode_tps_per_gpu"]) and cost_per_mtok is not None
    blend = v["theoretical_tps_per_gpu"]
    irr = yearly_irr(lines["project_cash_flow"])
    return {
        "tef_now": d["tef_now"],
        "slo_attainment": d["slo_attainment"],
        "sla": d["sla"],
        "tfi_now": d["tef_now"] * d["sla"] * v["sell_through_start"],
        "fleet_gpus": fleet_gpus,
        "equivalent_gpus": equivalent,
        "avoided_capex": avoided_capex,
        "avoided_rent_per_year": avoided_rent,
        "blended_price": p0,
        "gpu_hour_cost": hour_cost,
        "breakeven_util": hour_cost / (first["theoretical_tps_per_gpu"] * 3600 * p0
                                       * v["price_factor"] / 1e6),
        "tokens_sold_total": sold_total,
        "revenue_total": revenue_total,
        "ebitda_total": ebitda_total,
        "ebitda_margin": ebitda_total / revenue_total if revenue_total else None,
        "npv": sum(lines["discounted_cash_flow"]),
        "irr": irr,
        "equity_irr": (yearly_irr(lines["equity_cash_flow"]) if v["debt_share"] > 0
                       else irr),
        "min_dscr": cover["min_dscr"],
        "avg_dscr": cover["avg_dscr"],
        **funding(v, lines, cover["dscr_by_year"]),
        "payback_months": payback(lines["project_cash_flow"]),
        "discounted_payback_months": payback(lines["discounted_cash_flow"]),
        "roi": sum(lines["project_cash_flow"]) / total_capex if total_capex else None,
        "lifetime_breakeven_tfi": (pv_outlay / pv_theoretical_value
                                   if pv_theoretical_value else None),
        "breakeven_price_per_mtok": (pv_outlay / pv_sold_at_unit_price
                                     if pv_sold_at_unit_price else None),
        "tokens_per_mw": sold_total / mw_seconds if mw_seconds else None,
        "cost_per_mtok_input": cost_per_mtok * blend / v["prefill_tps_per_gpu"] if split else None,
        "cost_per_mtok_output": cost_per_mtok * blend / v["decode_tps_per_gpu"] if split else None,
        "realised_sell_through": sold_total / deliverable_total if deliverable_total else None,
        "cost_per_mtok": cost_per_mtok,
        "economic_life_months": economic_life(v, lines),
        **version3_outputs(v, d, lines, cover["min_dscr"], pv_outlay / pv_theoretical_value
                           if pv_theoretical_value else None),
    }


def funding(v: dict[str, Any], lines: dict[str, Any],
            dscr_by_year: dict[int, float]) -> dict[str, float]:
    """§10.4: equity_contributed = Σ contributions; peak_funding = −(the lowest cumulative
    equity cash flow), 0 when it never falls below 0; dscr_breaches = the fiscal years whose
    DSCR is below dscr_covenant."""
    cumulative, lowest = 0.0, 0.0
    for x in lines["equity_cash_flow"]:
        cumulative += x
        lowest = min(lowest, cumulative)
    return {"equity_contributed": sum(lines["contributions"]), "peak_funding": -lowest,
            "dscr_breaches": float(sum(1 for d in dscr_by_year.values()
                                       if d < v["dscr_covenant"]))}


def mirr(flows: list[float], rate_m: float) -> float | None:
    """Excel's MIRR(values, rate, rate) of monthly flows, shown yearly (§10.5): with n the
    number of flows, (−FV(positives) ÷ PV(negatives))^(1 ÷ (n − 1)) − 1, FV compounded to the
    last flow at the reinvestment rate and PV discounted to the first at the finance rate."""
    n = len(flows)
    if not (any(f > 0 for f in flows) and any(f < 0 for f in flows)):
        return None
    fv_in = sum(f * (1 + rate_m) ** (n - 1 - t) for t, f in enumerate(flows) if f > 0)
    pv_out = sum(f / (1 + rate_m) ** t for t, f in enumerate(flows) if f < 0)
    monthly = (fv_in / -pv_out) ** (1 / (n - 1)) - 1
    return (1 + monthly) ** 12 - 1


def warnings_of(v: dict[str, Any], lines: dict[str, Any], out: dict[str, Any],
                min_dscr: float | None) -> list[str]:
    """§10.5: the warning rules that fire, each once (the workbook's stale figures aside)."""
    flows = lines["project_cash_flow"]
    months = range(len(flows))
    fired = []
    if v["market_mtok_month1"] == 0:
        fired.append("no_demand_limit")
    if out["npv"] > 0 > out["npv_excl_terminal"]:
        fired.append("terminal_value")
    if min_dscr is not None and (min_dscr < v["dscr_covenant"] or min_dscr < 1):
        fired.append("dscr")
    if any(m > 1 and lines["equity_cash_flow"][m] < 0 and lines["ebitda"][m] < 0
           for m in months):
        fired.append("funding")
    if any(lines["gpus_in_service"][m] > 0 and lines["ebitda"][m] < 0 for m in months):
        fired.append("ebitda_loss")
    if out["tfi_headroom"] is not None and out["tfi_headroom"] < 0.05:
        fired.append("headroom")
    # sign changes of the flows in turn, a month without a flow passed over (Descartes' count);
    # a flow below half a cent is none: what is left of a month that nets to 0 in rounding
    signs = [(f > 0) - (f < 0) for f in flows if abs(f) >= 0.005]
    changes = sum(1 for a, b in zip(signs, signs[1:], strict=False) if a != b)
    if changes > 1:
        fired.append("irr_not_unique")
    return fired


def version3_outputs(v: dict[str, Any], d: dict[str, float], lines: dict[str, Any],
                     min_dscr: float | None, breakeven_tfi: float | None) -> dict[str, Any]:
    """§10.1, §10.3 and §10.5's new outputs."""
    horizon = len(lines["months"]) - 1
    rate_m = monthly_rate(v["discount_rate"])
    npv_value = sum(lines["discounted_cash_flow"])
    terminal = lines["terminal_proceeds"] / (1 + rate_m) ** horizon
    planned = v["tef_target"] * d["sla"] * v["sell_through_target"]
    out = {
        "terminal_value_pv": terminal,
        "npv_excl_terminal": npv_value - terminal,
        "tax_losses_unused": list(lines["loss_pool_by_year"].values())[-1],
        "mirr": mirr(lines["project_cash_flow"], rate_m),
        "planned_tfi": planned,
        "tfi_headroom": None if breakeven_tfi is None else planned - breakeven_tfi,
        "npv": npv_value,
    }
    fired = warnings_of(v, lines, out, min_dscr)
    del out["npv"]
    return {**out, "warnings": len(fired), "warnings_fired": fired}


def reference_scenarios(inputs: dict[str, Any],
                        cohorts: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """§4.5: the three scenarios side by side, keyed by scenario name."""
    return {name: reference_run(inputs, cohorts, name) for name in SCENARIOS}


#: §10.3: the bridge's steps, each adding Optimised's values of these S inputs to Base's.
BRIDGE = (("tef", ("tef_target",)), ("sell_through", ("sell_through_target",)),
          ("market", ("price_factor", "decline_per_quarter", "resale_decline_per_quarter",
                      "market_growth_per_quarter", "shutdown_month")),
          ("programme", ("programme_cost_once", "programme_fee_per_month")))


def reference_bridge(inputs: dict[str, Any],
                     cohorts: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """§10.3: uplift_npv_<step>, each step the NPV of Base's inputs with more of Optimised's,
    less the NPV before it; the last step ends at Optimised's NPV."""
    v = dict(DEFAULTS)
    v.update(inputs)
    mixed: dict[str, Any] = {}
    before = reference_run(inputs, cohorts, "Base")["npv"]
    out = {}
    for key, names in BRIDGE:
        for name in names:
            value = v[name]
            optimised = value[1] if isinstance(value, (tuple, list)) else value
            mixed[name] = optimised  # one value for every scenario: Base computes it
        after = reference_run({**inputs, **mixed}, cohorts, "Base")["npv"]
        out[f"uplift_npv_{key}"] = after - before
        before = after
    return out
