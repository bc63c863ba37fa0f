"""What every cell of the TFOM workbook shows, computed by the Python model.

A workbook written by openpyxl holds formulas but no values: until Excel or LibreOffice opens
it, previews, pandas and ``openpyxl`` with ``data_only=True`` see empty cells. Batch generation
therefore stores, beside each formula, the value it computes. Those values come from here:
:func:`model_values` runs :func:`tokenfactory_xl.operating_model.run` (and
:func:`~tokenfactory_xl.operating_model.sweep` for the NPV grid) once and states, for every
quantity the workbook shows, the number the formula gives, keyed like the workbook's plan
(``tef_now``, ``tl.revenue``, ``sens.npv_grid`` …). Everything is vectorised with numpy: one
call per site for thousands of sites.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import math

import numpy as np

from . import model as m
from .catalogue import INPUTS, SCENARIOS
from .inputs import SiteInputs
from .operating_model import OUTPUT_NAMES, Result, run, sweep
from .workbook import CONSTANT_VALUES, MAX_MONTHS, cross_checks

NONE = "none"
_TOTALS = ("hours", "theoretical_tokens", "tokens_sold", "revenue", "power", "other_opex",
           "rent", "ebitda", "depreciation", "ebit", "tax", "investment", "salvage",
           "cash_flow", "discounted_cash_flow")


@functools.lru_cache(maxsize=64)
def month_ends(start: dt.date) -> tuple[dt.datetime, ...]:
    """The month ends of months 0…240 from ``start`` (month 0 ends the day before it)."""
    out = []
    year, month = (start.year - 1, 12) if start.month == 1 else (start.year, start.month - 1)
    for _ in range(MAX_MONTHS + 1):
        out.append(dt.datetime(year, month, calendar.monthrange(year, month)[1]))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return tuple(out)


def _or_none(x: float | None) -> object:
    return NONE if x is None else x


def _ok(condition: bool) -> str:
    return "OK" if condition else "ERROR"


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= CONSTANT_VALUES["k_check_tolerance"] * max(1.0, abs(a))  # type: ignore


def _ramp_share(months: int, month: np.ndarray) -> np.ndarray:
    return np.ones_like(month) if months == 0 else np.minimum(month, months) / months


def _input_ok(spec, value) -> bool:
    values = value if spec.per_scenario else (value,)
    if spec.kind == "choice":
        return all(str(v).lower() in (c.lower() for c in spec.choices) for v in values)
    if spec.kind == "date":
        return value.day == 1
    if spec.kind == "text":
        return 1 <= len(value) <= spec.max_length
    if spec.kind == "currency":
        return len(value) == 3
    lows = [v > spec.low if spec.low_open else v >= spec.low for v in values]
    highs = [spec.high is None or v <= spec.high for v in values]
    whole = [spec.kind != "integer" or float(v).is_integer() for v in values]
    return all(lows) and all(highs) and all(whole)


def _npv_at(flows: np.ndarray, rates: np.ndarray, horizon: int) -> np.ndarray:
    """SUMPRODUCT(cash flows, (1 + rate)^-(month × in horizon)); nan where it overflows."""
    months = np.arange(MAX_MONTHS + 1)
    months = np.where(months <= horizon, months, 0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        powers = (1 + rates[:, None]) ** (-months)
        npv = (flows * powers).sum(axis=1)
    return np.where(np.all(np.isfinite(powers), axis=1), npv, np.nan)


def _irr_search(cf: np.ndarray, horizon: int) -> dict[str, object]:
    """The Returns sheet's IRR search: the grid of rates, its brackets, and the halvings."""
    from .workbook import IRR_STEPS

    flows = np.concatenate([cf, np.zeros(MAX_MONTHS - horizon)])
    rates = np.array(CONSTANT_VALUES["k_irr_grid"], dtype=float)
    npv = _npv_at(flows, rates, horizon)
    ok = np.isfinite(npv)
    change = np.zeros(len(rates), dtype=int)
    sign = np.sign(np.where(ok, npv, 0))
    change[:-1] = (ok[:-1] & ok[1:] & (sign[:-1] * sign[1:] <= 0)).astype(int)
    nearest = np.minimum(np.abs(rates[:-1]), np.abs(rates[1:]))
    distance: list[object] = [float(nearest[i]) if change[i] else "" for i in range(len(rates))]
    out: dict[str, object] = {
        "irr.rate": rates, "irr.npv": [float(x) if k else "" for x, k in zip(npv, ok, strict=True)],
        "irr.change": change, "irr.distance": distance,
    }
    if not change.any():
        blank = [""] * IRR_STEPS
        out.update({"irr.found": 0, "irr.position": "", "irr.step": blank, "irr.low": blank,
                    "irr.high": blank, "irr.f_low": blank, "irr.mid": blank,
                    "irr.f_mid": blank})
        return out
    # the first bracket nearest 0, as MATCH(MIN(distances), distances, 0) picks it
    i = int(np.argmin(np.where(change == 1, np.append(nearest, np.inf), np.inf)))
    low, high, f_low = float(rates[i]), float(rates[i + 1]), float(npv[i])
    lows, highs, f_lows, mids, f_mids = [], [], [], [], []
    months = np.arange(MAX_MONTHS + 1)
    exponent = -np.where(months <= horizon, months, 0).astype(float)
    for _ in range(IRR_STEPS):
        mid = (low + high) / 2  # AVERAGE(low, high)
        # inside a bracket with finite ends the powers are finite too
        f_mid = float((flows * (1 + mid) ** exponent).sum())
        lows.append(low)
        highs.append(high)
        f_lows.append(f_low)
        mids.append(mid)
        f_mids.append(f_mid)
        if (f_mid > 0) == (f_low > 0):
            low, f_low = mid, f_mid
        else:
            high = mid
    out.update({"irr.found": 1, "irr.position": i + 1, "irr.step": list(range(1, IRR_STEPS + 1)),
                "irr.low": lows, "irr.high": highs, "irr.f_low": f_lows, "irr.mid": mids,
                "irr.f_mid": f_mids})
    return out


def _yearly(lines: dict[str, np.ndarray], horizon: int) -> dict[str, object]:
    """The Returns sheet's yearly summary: sums of months 12y − 11 … 12y, "" after the horizon."""
    from .workbook import YEARS

    used = -(-horizon // 12)
    starts = np.arange(0, horizon, 12)
    sums = {k: np.add.reduceat(lines[k], starts) for k in ("revenue", "ebitda")}
    sums["cash_flow"] = np.add.reduceat(lines["cash_flow"][1:], starts)
    blank = [""] * (YEARS - used)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = [NONE if r == 0 else e / r for r, e in zip(sums["revenue"], sums["ebitda"],
                                                             strict=True)]
    ends = np.minimum(np.arange(1, used + 1) * 12, horizon)
    return {
        "year.year": list(range(1, YEARS + 1)),
        "year.revenue": sums["revenue"].tolist() + blank,
        "year.ebitda": sums["ebitda"].tolist() + blank,
        "year.margin": [float(x) if x != NONE else x for x in margin] + blank,
        "year.cash_flow": sums["cash_flow"].tolist() + blank,
        "year.cumulative": lines["cumulative_cash_flow"][ends].tolist() + blank,
    }


def model_values(inputs: SiteInputs, result: Result | None = None) -> dict[str, object]:
    """Workbook quantity key → its value (a number, a text, or an array over months).

    ``result`` is ``run(inputs)`` when the caller has it already.
    """
    v = inputs
    res = result if result is not None else run(inputs)
    d, s, lines = res.derived, res.summary, res.lines
    horizon = int(v["horizon_months"])
    scenario = SCENARIOS.index(inputs.scenario) + 1
    owned = 1 if v["ownership"] == "own" else 0
    gpus, tps = float(v["gpus"]), float(v["theoretical_tps_per_gpu"])
    tef_target = float(inputs.live("tef_target"))
    sell_target = float(inputs.live("sell_through_target"))
    decline = float(inputs.live("decline_per_quarter"))
    out: dict[str, object] = {}

    # -- Capacity
    theo_tps = gpus * tps
    measured = float(v["measured_tps"])
    sigma = math.log(v["ttft_p99_ms"] / v["ttft_p50_ms"]) / m.Z_99
    theo_year = theo_tps * 3600 * m.HOURS_PER_YEAR
    produced = theo_year * d["tef_now"]
    available = produced * d["sla"]
    sold = available * v["sell_through_start"]
    h = v["cache_hit_rate"]
    input_price = h * v["price_cached_input_per_mtok"] + (1 - h) * v["price_input_per_mtok"]
    o = v["output_share"]
    list_price = (1 - o) * input_price + o * v["price_output_per_mtok"]
    cash_opex = m.cash_gpu_hour_cost(v["power_kw_per_gpu"], v["pue"], v["electricity_per_kwh"],
                                     v["opex_per_gpu_hour"])
    capital = ((v["capex_per_gpu"] - v["salvage_per_gpu"]) / (v["life_years"] * m.HOURS_PER_YEAR)
               if owned else v["rent_per_gpu_hour"])
    breakeven = s["breakeven_util"]
    life_months = v["life_years"] * 12
    out.update({
        "scenario_number": scenario,
        "live_tef_target": tef_target,
        "live_sell_through_target": sell_target,
        "live_decline": decline,
        "owned_flag": owned,
        "theoretical_tps": theo_tps,
        "measured_tps": measured,
        "theoretical_tpm": theo_tps * 60,
        "measured_tpm": measured * 60,
        "theoretical_tokens_day": theo_tps * 3600 * 24,
        "measured_tokens_day": measured * 3600 * 24,
        "theoretical_tokens_year": theo_year,
        "measured_tokens_year": measured * 3600 * m.HOURS_PER_YEAR,
        "tef_now": d["tef_now"],
        "ttft_sigma": sigma,
        "ttft_z": math.log(v["ttft_slo_ms"] / v["ttft_p50_ms"]) / sigma,
        "slo_attainment": d["slo_attainment"],
        "service_level": d["sla"],
        "tfi_now": s["tfi_now"],
        "funnel_theoretical": theo_year,
        "funnel_produced": produced,
        "funnel_available": available,
        "funnel_sold": sold,
        "load_factor": sold / theo_year,
        "equivalent_gpus": _or_none(s["equivalent_gpus"]),
        "avoided_capex": _or_none(s["avoided_capex"]),
        "input_price": input_price,
        "list_price": list_price,
        "blended_price": d["blended_price"],
        "cash_opex_per_gpu_hour": cash_opex,
        "capital_per_gpu_hour": capital,
        "fixed_per_gpu_hour": v["fixed_opex_per_month"] / (gpus * m.HOURS_PER_MONTH),
        "gpu_hour_cost": d["gpu_hour_cost"],
        "cash_cost_per_gpu_hour": d["cash_cost_per_gpu_hour"],
        "revenue_per_gpu_hour": m.revenue_per_gpu_hour(tps, s["tfi_now"], d["blended_price"]),
        "breakeven_util": _or_none(breakeven),
        "breakeven_headroom": NONE if breakeven is None else s["tfi_now"] - breakeven,
        "economic_life": _or_none(s["economic_life_months"]),
        "monthly_discount_rate": m.monthly_rate(v["discount_rate"]),
        "capex_total": d["capex"],
        "salvage_total": gpus * v["salvage_per_gpu"] if owned else 0.0,
        "depreciation_months": life_months,
        "depreciation_per_month": (gpus * (v["capex_per_gpu"] - v["salvage_per_gpu"])
                                   / life_months if owned else 0.0),
    })

    # -- Timeline
    month_all = np.arange(MAX_MONTHS + 1, dtype=float)
    month = month_all[1:horizon + 1]
    months0 = month_all[:horizon + 1]
    ends = month_ends(v["start_date"])
    out["tl.subtitle"] = (f"Monthly operating model · {v['site_name']} · {inputs.scenario} "
                          f"scenario · {horizon} months")
    out["tl.month"] = month_all.astype(int)
    out["tl.end"] = ends
    out["tl.flag"] = (month_all <= horizon).astype(int)
    tl = {k: lines[k] for k in lines}
    tl["tef_ramp_share"] = _ramp_share(int(v["tef_ramp_months"]), month)
    tl["sell_ramp_share"] = _ramp_share(int(v["sell_through_ramp_months"]), month)
    tl["theoretical_tokens"] = gpus * tps * m.SECONDS_PER_HOUR * lines["hours"]
    investment = np.zeros(horizon + 1)
    investment[0] = d["capex"]
    tl["investment"] = investment
    salvage = np.zeros(horizon)
    salvage[-1] = out["salvage_total"]  # type: ignore[assignment]
    tl["salvage"] = salvage
    rate = out["monthly_discount_rate"]
    tl["discount_factor"] = 1 / (1 + rate) ** months0  # type: ignore[operator]
    tl["discounted_cash_flow"] = lines["cash_flow"] * tl["discount_factor"]
    cum = lines["cumulative_cash_flow"]
    cf = lines["cash_flow"]
    crossing = (cum[1:] >= 0) & (cum[:-1] < 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        at = (month - 1) + (-cum[:-1]) / cf[1:]
    tl["payback_crossing"] = [float(x) if c else "" for x, c in zip(at, crossing, strict=True)]
    for key, line in tl.items():
        out[f"tl.{key}"] = line
    for key in _TOTALS:
        out[f"tl.total.{key}"] = float(np.sum(tl[key]))

    out["tl.year"] = np.ceil(month_all / 12).astype(int)

    # -- Returns
    for name in OUTPUT_NAMES:
        out[f"out.{name}"] = _or_none(s[name])
    out.update(_irr_search(cf, horizon))
    signs = (np.min(cf) < 0) and (np.max(cf) > 0)
    out["irr_monthly"] = out["irr.mid"][-1] if signs and out["irr.found"] == 1 else NONE
    out.update({
        "ret.tfi": s["tfi_now"], "ret.breakeven": out["breakeven_util"],
        "ret.headroom": out["breakeven_headroom"], "ret.revenue_hour": out["revenue_per_gpu_hour"],
        "ret.cash_cost_hour": out["cash_cost_per_gpu_hour"], "ret.capex": d["capex"],
        "ret.cash_total": out["tl.total.cash_flow"],
    })

    out.update(_yearly(lines, horizon))

    # -- Sensitivity
    step = CONSTANT_VALUES["k_util_step"]
    util = np.cumsum(np.full(20, step))
    out["sens.breakeven"] = out["breakeven_util"]
    out["sens.tfi"] = s["tfi_now"]
    out["sens.util"] = util
    if breakeven is None:
        out["sens.margin"] = [NONE] * len(util)
        out["sens.breakeven_marker"] = [""] * len(util)
    else:
        out["sens.margin"] = 1 - breakeven / util
        out["sens.breakeven_marker"] = ["◄ breakeven" if c else "" for c in
                                        (breakeven > util - step) & (breakeven <= util)]
    tfi = s["tfi_now"]
    out["sens.tfi_marker"] = ["◄ TFI now" if c else "" for c in
                              (tfi > util - step) & (tfi <= util)]
    tef_axis = np.array(CONSTANT_VALUES["k_sens_tef_targets"], dtype=float)
    decline_axis = np.array(CONSTANT_VALUES["k_sens_declines"], dtype=float)
    out["sens.declines"] = decline_axis
    out["sens.tef_targets"] = tef_axis
    out["sens.npv_grid"] = sweep(inputs, tef_axis, decline_axis)["npv"].ravel()
    pad = MAX_MONTHS - horizon

    def full(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, np.zeros(pad)])

    months = month_all[1:]
    out["sens.month"] = months.astype(int)
    out["sens.discount"] = full(tl["discount_factor"][1:])
    revenue_full = full(tl["theoretical_tokens"] * d["sla"] * lines["sell_through"]
                        / m.TOKENS_PER_MTOK * d["blended_price"])
    out["sens.revenue_full"] = revenue_full
    out["sens.cash_costs"] = full(lines["power"] + lines["other_opex"] + lines["rent"])
    out["sens.depreciation"] = full(lines["depreciation"])
    out["sens.salvage"] = full(salvage)
    share = full(tl["tef_ramp_share"])
    out["sens.tef_ramp_share"] = share
    for i, target in enumerate(tef_axis):
        out[f"sens.revt{i}"] = revenue_full * (d["tef_now"] + (target - d["tef_now"]) * share)
    for j, dec in enumerate(decline_axis):
        out[f"sens.pf{j}"] = (1 - dec) ** ((months - 1) / CONSTANT_VALUES["k_months_per_quarter"])

    # -- Checks
    for spec in INPUTS:
        out[f"check.in.{spec.name}"] = _ok(_input_ok(spec, v[spec.name]))
    total = {k: out[f"tl.total.{k}"] for k in _TOTALS}
    ebitda_sum = total["revenue"] - total["power"] - total["other_opex"] - total["rent"]
    grid = out["sens.npv_grid"]
    conditions = {
        "salvage_le_capex": v["salvage_per_gpu"] <= v["capex_per_gpu"],
        "p99_gt_p50": v["ttft_p99_ms"] > v["ttft_p50_ms"],
        "tef_now_le_1": d["tef_now"] <= 1,
        "tfi_le_1": tfi <= 1,
        "tef_months_le_1": float(np.max(lines["tef"])) <= 1,
        "load_factor_tfi": _close(sold / theo_year, tfi),
        "months_counted": True,
        "sold_le_theoretical": total["tokens_sold"] <= total["theoretical_tokens"],
        "ebitda_total": _close(total["ebitda"], ebitda_sum),
        "cash_total": _close(total["cash_flow"], float(cum[-1])),
        "npv_total": _close(s["npv"], float(np.sum(cf * tl["discount_factor"]))),
        "grid_complete": bool(np.all(np.isfinite(grid))),  # type: ignore[arg-type]
    }
    for key, _, _ in cross_checks():
        out[f"check.{key}"] = _ok(bool(conditions[key]))
    checks = [x for k, x in out.items() if k.startswith("check.")]
    master = _ok(all(x == "OK" for x in checks))
    out["check.master"] = master

    # -- Cover and Dashboard
    out["cover.site"] = v["site_name"]
    out["cover.scenario"] = inputs.scenario
    out["cover.check"] = master
    out["dash.subtitle"] = (f"{v['site_name']} · {inputs.scenario} scenario · {horizon} months "
                            f"from {v['start_date']:%Y-%m-%d} · {v['currency']}")
    out["dash.check"] = master
    for name in OUTPUT_NAMES:
        out[f"dash.kpi.{name}"] = out[f"out.{name}"]
    return out
