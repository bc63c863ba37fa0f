"""The token-factory formulas: capacity, efficiency, unit economics and price dynamics.

A token factory is an inference cluster judged by the tokens it sells. Its capacity is the
theoretical throughput of its GPUs; the **TEF** (Token Efficiency Factor) is the share of that
capacity it actually produces; the **TFI** (Token Factory Index) multiplies in the service level
and the sell-through to give the share of theoretical capacity that becomes revenue (seed 000).
Unit economics follow from three numbers, the cost of a GPU-hour, the tokens a GPU makes per
second and the price of a million tokens: the **breakeven utilisation** is the TFI at which
revenue pays the GPU-hour (seed 004). Prices fall each quarter (the Red Queen of seed 001), which
limits how long a GPU earns more than its cash cost.

Every function here is methodology sections 1–3, stated once. Each takes scalars or numpy arrays
and broadcasts, so one call computes a whole spreadsheet column; a scalar call returns a float.
Where a result is undefined (a division by zero) the element is ``nan`` or ``inf``, never an
exception: callers (the Excel functions) turn those into Excel's own error values.
This module imports neither xlwings nor openpyxl.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

#: Seconds in an hour, hours in a day and a year, tokens in a million: the spec's constants.
SECONDS_PER_HOUR = 3_600
SECONDS_PER_DAY = 86_400
HOURS_PER_YEAR = 8_760
HOURS_PER_MONTH = 730  # 8,760 / 12: spreads a monthly fixed cost over GPU-hours
TOKENS_PER_MTOK = 1_000_000

#: The 99th percentile of the standard normal distribution (Excel ``NORM.S.INV(0.99)``).
Z_99 = NormalDist().inv_cdf(0.99)

Numeric = float | np.ndarray


def _out(x: np.ndarray) -> Numeric:
    """numpy result → float for a scalar call, array otherwise."""
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _f(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _div(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(_f(a), _f(b))


# -- 1. Capacity and efficiency ----------------------------------------------------------------
def tpm(tps: ArrayLike) -> Numeric:
    """Tokens per minute [tokens/min] from tokens per second ``tps`` [tokens/s]: TPS × 60."""
    return _out(_f(tps) * 60)


def tokens_per_day(tps: ArrayLike) -> Numeric:
    """Tokens per day [tokens/day] from ``tps`` [tokens/s]: TPS × 86,400."""
    return _out(_f(tps) * SECONDS_PER_DAY)


def tef(actual_tps: ArrayLike, theoretical_tps: ArrayLike) -> Numeric:
    """Token Efficiency Factor [fraction]: actual ÷ theoretical throughput.

    Parameters
    ----------
    actual_tps : measured cluster throughput while the service is up [tokens/s]
    theoretical_tps : what the same cluster would produce fully busy at its best
        configuration [tokens/s]

    Examples
    --------
    Seed 000: 700,000 TPS theoretical, 210,000 actual.

    >>> tef(210_000, 700_000)
    0.3
    """
    return _out(_div(actual_tps, theoretical_tps))


def tfi(tef: ArrayLike, sla: ArrayLike, sell_through: ArrayLike) -> Numeric:
    """Token Factory Index [fraction]: TEF × SLA × sell-through (seed 000).

    The share of theoretical capacity that becomes revenue.
    """
    return _out(_f(tef) * _f(sla) * _f(sell_through))


def load_factor(tokens_paid: ArrayLike, tokens_theoretical: ArrayLike) -> Numeric:
    """The airline load factor of seed 001 [fraction]: tokens paid ÷ theoretical tokens.

    With the definitions of methodology section 1 it equals the TFI.
    """
    return _out(_div(tokens_paid, tokens_theoretical))


def equivalent_gpus(gpus: ArrayLike, tef_now: ArrayLike, tef_target: ArrayLike) -> Numeric:
    """GPUs that would give the same tokens at today's TEF [GPUs]: GPUs × TEF_target ÷ TEF_now.

    >>> round(equivalent_gpus(1000, 0.30, 0.65), 2)  # seed 000: "about 2,167"
    2166.67
    """
    return _out(_div(_f(gpus) * _f(tef_target), tef_now))


def avoided_capex(
    gpus: ArrayLike, tef_now: ArrayLike, tef_target: ArrayLike, capex_per_gpu: ArrayLike
) -> Numeric:
    """GPU CapEx a TEF uplift saves [money]: (equivalent GPUs − GPUs) × CapEx per GPU."""
    extra = _f(equivalent_gpus(gpus, tef_now, tef_target)) - _f(gpus)
    return _out(extra * _f(capex_per_gpu))


def slo_attainment(ttft_p50: ArrayLike, ttft_p99: ArrayLike, ttft_slo: ArrayLike) -> Numeric:
    """Share of requests whose time to first token meets the objective [fraction].

    TTFT is modelled as log-normal through its median and 99th percentile:
    σ = ln(p99 / p50) / z₀.₉₉ and attainment = Φ(ln(SLO / p50) / σ), Excel's
    ``NORM.S.DIST(LN(slo/p50)/σ, TRUE)``. All three in the same unit (ms). p99 must exceed p50;
    where it does not, the element is ``nan``.
    """
    p50, p99, slo = np.broadcast_arrays(_f(ttft_p50), _f(ttft_p99), _f(ttft_slo))
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = np.log(p99 / p50) / Z_99
        z = np.log(slo / p50) / sigma
        z = np.where(sigma > 0, z, np.nan)
    return _out(_norm_cdf(z))


#: ``math.erfc`` elementwise, looped in C (numpy has no erfc; ``math.erfc(nan)`` is nan).
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _norm_cdf(z: np.ndarray) -> np.ndarray:
    """Φ(z), the standard normal distribution function, elementwise (nan stays nan)."""
    scaled = -np.asarray(z, dtype=float) / math.sqrt(2)
    return 0.5 * np.asarray(_ERFC(scaled), dtype=float)


def sla(availability: ArrayLike, slo_attainment: ArrayLike) -> Numeric:
    """Service level [fraction]: availability × SLO attainment (methodology section 1)."""
    return _out(_f(availability) * _f(slo_attainment))


# -- 2. Unit economics -------------------------------------------------------------------------
def revenue_per_gpu_hour(
    tps_per_gpu: ArrayLike, util: ArrayLike, price_per_mtok: ArrayLike
) -> Numeric:
    """Revenue of one GPU-hour [money/GPU-h]: T × 3,600 × u × P / 10⁶.

    Parameters
    ----------
    tps_per_gpu : tokens per second per GPU at full load [tokens/s]
    util : share of full-load tokens produced and sold [fraction]
    price_per_mtok : price [money per million tokens]
    """
    tokens = _f(tps_per_gpu) * SECONDS_PER_HOUR * _f(util)
    return _out(tokens * _f(price_per_mtok) / TOKENS_PER_MTOK)


def breakeven_util(
    gpu_hour_cost: ArrayLike, tps_per_gpu: ArrayLike, price_per_mtok: ArrayLike
) -> Numeric:
    """Utilisation at which revenue pays the GPU-hour [fraction]: C ÷ (T × 3,600 × P / 10⁶).

    Independent of the GPU count; above 1 the factory never breaks even (seed 004).

    >>> breakeven_util(1.89, 5_600, 0.25)
    0.375
    """
    full = _f(tps_per_gpu) * SECONDS_PER_HOUR * _f(price_per_mtok) / TOKENS_PER_MTOK
    return _out(_div(gpu_hour_cost, full))


def margin_at_util(
    util: ArrayLike, gpu_hour_cost: ArrayLike, tps_per_gpu: ArrayLike, price_per_mtok: ArrayLike
) -> Numeric:
    """Operating margin at utilisation ``util`` [fraction]: 1 − breakeven ÷ u.

    Equals (revenue − cost) ÷ revenue. Seed 004: −0.875 at 20 % and +0.0625 at 40 % for
    C = 1.89, T = 5,600, P = 0.25.
    """
    return _out(1 - _div(breakeven_util(gpu_hour_cost, tps_per_gpu, price_per_mtok), util))


def cost_per_mtok(gpu_hour_cost: ArrayLike, tps_per_gpu: ArrayLike, util: ArrayLike) -> Numeric:
    """Cost of a million sold tokens at utilisation ``util`` [money/Mtok].

    C ÷ (T × 3,600 × u / 10⁶): also the breakeven price at that utilisation.
    """
    mtok_per_hour = _f(tps_per_gpu) * SECONDS_PER_HOUR * _f(util) / TOKENS_PER_MTOK
    return _out(_div(gpu_hour_cost, mtok_per_hour))


def daily_token_value(
    tps_per_gpu: ArrayLike, util: ArrayLike, price_per_mtok: ArrayLike
) -> Numeric:
    """Revenue one GPU earns in a day [money/GPU/day]: T × 86,400 × u × P / 10⁶."""
    tokens = _f(tps_per_gpu) * SECONDS_PER_DAY * _f(util)
    return _out(tokens * _f(price_per_mtok) / TOKENS_PER_MTOK)


def implied_price_per_mtok(
    tokens_per_day: ArrayLike, gpus: ArrayLike, revenue_per_gpu_hour: ArrayLike
) -> Numeric:
    """Fleet-average revenue per million tokens [money/Mtok] — an average, not a price.

    revenue per GPU-hour × GPUs × 24 ÷ (tokens per day / 10⁶). Seed 004: 155 × 10¹² tokens a
    day on 128 GPUs at US$38 per GPU-hour gives about US$0.000753.
    """
    revenue_per_day = _f(revenue_per_gpu_hour) * _f(gpus) * 24
    return _out(_div(revenue_per_day, _f(tokens_per_day) / TOKENS_PER_MTOK))


def tokens_per_gpu_second(tokens_per_day: ArrayLike, gpus: ArrayLike) -> Numeric:
    """Fleet throughput per GPU [tokens/s per GPU]: tokens per day ÷ (GPUs × 86,400)."""
    return _out(_div(tokens_per_day, _f(gpus) * SECONDS_PER_DAY))


def cash_gpu_hour_cost(
    power_kw: ArrayLike, pue: ArrayLike, price_per_kwh: ArrayLike, opex_per_gpu_hour: ArrayLike = 0
) -> Numeric:
    """Cash cost of a GPU-hour [money/GPU-h]: power kW × PUE × price per kWh + other opex."""
    return _out(_f(power_kw) * _f(pue) * _f(price_per_kwh) + _f(opex_per_gpu_hour))


def gpu_hour_cost(
    capex_per_gpu: ArrayLike,
    life_years: ArrayLike,
    power_kw: ArrayLike,
    pue: ArrayLike,
    price_per_kwh: ArrayLike,
    opex_per_gpu_hour: ArrayLike = 0,
    salvage_per_gpu: ArrayLike = 0,
    discount_rate: ArrayLike = 0,
) -> Numeric:
    """Owned cost of a GPU-hour [money/GPU-h] (methodology §10.8).

    The capital charged as a monthly annuity at the yearly ``discount_rate`` r [fraction]:
    (CapEx per GPU − salvage × vᴺ) × i ÷ (1 − vᴺ) ÷ 730, with i = (1 + r)^(1/12) − 1,
    v = 1 ÷ (1 + i) and N = 12 × life years (not rounded); at r = 0 (the default, as Excel's
    SLN) the straight line (CapEx − salvage) ÷ (life years × 8,760). Plus the cash cost of
    :func:`cash_gpu_hour_cost`.
    """
    capex, salvage, life = _f(capex_per_gpu), _f(salvage_per_gpu), _f(life_years)
    i = (1 + _f(discount_rate)) ** (1 / 12) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        v_n = (1 + i) ** -(12 * life)
        annuity = (capex - salvage * v_n) * i / (1 - v_n) / (HOURS_PER_YEAR / 12)
    straight = _div(capex - salvage, life * HOURS_PER_YEAR)
    capital = np.where(i == 0, straight, annuity)
    cash = cash_gpu_hour_cost(power_kw, pue, price_per_kwh, opex_per_gpu_hour)
    return _out(capital + _f(cash))


def blended_price(
    price_input: ArrayLike,
    price_output: ArrayLike,
    output_share: ArrayLike,
    cache_hit_rate: ArrayLike = 0,
    price_cached_input: ArrayLike | None = None,
    batch_share: ArrayLike = 0,
    batch_discount: ArrayLike = 0.5,
) -> Numeric:
    """Average price of a million sold tokens [money/Mtok] (methodology section 2).

    input price = h × P_cached + (1 − h) × P_input; list price = (1 − o) × input price + o ×
    P_output; blended = list price × (1 − b × d). ``price_cached_input`` defaults to
    ``price_input`` (no cache discount); the batch discount defaults to seed 001's 50 %.
    """
    if price_cached_input is None:
        price_cached_input = price_input
    h, o = _f(cache_hit_rate), _f(output_share)
    input_price = h * _f(price_cached_input) + (1 - h) * _f(price_input)
    list_price = (1 - o) * input_price + o * _f(price_output)
    return _out(list_price * (1 - _f(batch_share) * _f(batch_discount)))


# -- 3. Price dynamics: the Red Queen ----------------------------------------------------------
def price_after(price_now: ArrayLike, decline_per_quarter: ArrayLike, months: ArrayLike) -> Numeric:
    """Price after ``months`` months [money/Mtok]: P₀ × (1 − d)^(m / 3)."""
    return _out(_f(price_now) * (1 - _f(decline_per_quarter)) ** (_f(months) / 3))


def yearly_price_factor(decline_per_quarter: ArrayLike) -> Numeric:
    """What a price is multiplied by in a year [ratio]: (1 − d)⁴.

    >>> round(yearly_price_factor(0.47), 4)  # seed 001: "to 1/13 in about a year"
    0.0789
    """
    return _out((1 - _f(decline_per_quarter)) ** 4)


def revenue_ratio(volume_growth: ArrayLike, price_factor: ArrayLike) -> Numeric:
    """Revenue after ÷ before [ratio]: volume growth × price factor (10× at 1/10 is flat)."""
    return _out(_f(volume_growth) * _f(price_factor))


def economic_life_months(
    revenue_per_gpu_hour: ArrayLike,
    cash_cost_per_gpu_hour: ArrayLike,
    decline_per_quarter: ArrayLike,
) -> Numeric:
    """Months until revenue per GPU-hour falls to its cash cost [months].

    m* = 3 × ln(c / R₀) / ln(1 − d); 0 when R₀ ≤ c already; ``inf`` (no finite answer) when the
    price does not decline (d = 0) and R₀ > c.
    """
    r0, c, d = np.broadcast_arrays(
        _f(revenue_per_gpu_hour), _f(cash_cost_per_gpu_hour), _f(decline_per_quarter)
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        months = 3 * np.log(c / r0) / np.log1p(-d)
    months = np.where(r0 <= c, 0.0, months)
    months = np.where((r0 > c) & (d == 0), np.inf, months)
    return _out(months)


# -- Finance: discounting, IRR, payback ---------------------------------------------------------
def monthly_rate(yearly_rate: ArrayLike) -> Numeric:
    """The monthly rate equivalent to a yearly one: (1 + r)^(1/12) − 1."""
    return _out((1 + _f(yearly_rate)) ** (1 / 12) - 1)


def npv(monthly_rate: float, cash_flows: ArrayLike) -> float:
    """Net present value of monthly ``cash_flows``, month 0 first and undiscounted [money].

    Excel's ``=CF0 + NPV(rate, CF1:CFn)``; numpy-financial's ``npv(rate, values)``.
    """
    flows = _f(cash_flows)
    months = np.arange(flows.shape[-1])
    return float(np.sum(flows / (1 + monthly_rate) ** months))


def irr(cash_flows: ArrayLike) -> float | None:
    """The periodic internal rate of return of ``cash_flows`` (month 0 first), or ``None``.

    ``None`` when the flows have no sign change or no rate above −100 % zeroes the NPV. Where
    several rates do, the one nearest 0 is returned (Excel's ``IRR`` starts its search at 10 %).
    The root is bracketed on a grid and bisected to full double precision.
    """
    flows = _f(cash_flows)
    signs = np.sign(flows[flows != 0])
    if signs.size == 0 or np.all(signs == signs[0]):
        return None
    grid, growth = _irr_grid(flows.shape[-1])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        values = np.sum(flows / growth, axis=-1)
    change = np.nonzero(np.sign(values[:-1]) * np.sign(values[1:]) <= 0)[0]
    if change.size == 0:
        return None
    roots = [_bisect(flows, grid[i], grid[i + 1]) for i in change]
    return min(roots, key=abs)


@functools.lru_cache(maxsize=8)
def _irr_grid(periods: int) -> tuple[np.ndarray, np.ndarray]:
    """The rates IRR brackets its roots on, and (1 + rate)^month for each of them.

    Computed once per number of periods and evaluated in one broadcast: a Python loop over the
    ~1,100 rates made IRR cost ~10 ms, the bulk of a batch's time per site.
    """
    grid = np.concatenate([-1 + np.geomspace(1e-9, 1, 200)[:-1], np.geomspace(1e-9, 1e9, 600)])
    grid = np.unique(np.concatenate([grid, -grid[grid < 1], [0.0]]))
    grid = grid[grid > -1]
    with np.errstate(over="ignore"):
        growth = (1 + grid[:, None]) ** np.arange(periods)
    grid.flags.writeable = growth.flags.writeable = False
    return grid, growth


def _bisect(flows: np.ndarray, low: float, high: float) -> float:
    f_low = npv(low, flows)
    if f_low == 0:
        return float(low)
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        f_mid = npv(mid, flows)
        if f_mid == 0:
            return mid
        if (f_mid > 0) == (f_low > 0):
            low, f_low = mid, f_mid
        else:
            high = mid
    return 0.5 * (low + high)


def payback_months(cash_flows: ArrayLike) -> float | None:
    """Months until the cumulative cash flow turns non-negative, interpolated, or ``None``.

    With cum_k the cumulative cash flow after month k (month 0 first), the first k with
    cum_k ≥ 0 and cum_(k−1) < 0 gives (k − 1) + (−cum_(k−1)) ÷ cash flow_k. ``None`` when the
    cumulative never crosses from below within the flows.
    """
    flows = _f(cash_flows)
    cumulative = np.cumsum(flows)
    crossing = np.nonzero((cumulative[1:] >= 0) & (cumulative[:-1] < 0))[0]
    if crossing.size == 0:
        return None
    k = int(crossing[0]) + 1
    return (k - 1) + float(-cumulative[k - 1] / flows[k])


# -- 2. Input and output tokens: prefill vs decode -------------------------------------------
def blended_capacity(prefill_tps: ArrayLike, decode_tps: ArrayLike,
                     output_share: ArrayLike) -> Numeric:
    """Tokens per GPU-second of a mix of input and output tokens [tokens/s] (methodology §2).

    T = 1 ÷ ((1 − o) ÷ T_p + o ÷ T_d): a GPU spends (1 − o) ÷ T_p seconds on the input and
    o ÷ T_d on the output of each token of a mix whose output share is o. The
    ``theoretical_tps_per_gpu`` a site gets when it gives prefill and decode TPS instead.

    Parameters
    ----------
    prefill_tps : T_p, full-load prefill (input) tokens per second per GPU [tokens/s]
    decode_tps : T_d, full-load decode (output) tokens per second per GPU [tokens/s]
    output_share : o, output tokens ÷ all tokens [fraction]

    Examples
    --------
    40,000 prefill and 4,000 decode tokens/s, a quarter of the tokens output:
    1 ÷ (0.75 ÷ 40,000 + 0.25 ÷ 4,000) = 1 ÷ 0.00008125 ≈ 12,307.7.

    >>> round(blended_capacity(40_000, 4_000, 0.25), 1)
    12307.7
    """
    o = _f(output_share)
    return _out(_div(1.0, _div(1 - o, prefill_tps) + _div(o, decode_tps)))


def input_time_share(prefill_tps: ArrayLike, decode_tps: ArrayLike,
                     output_share: ArrayLike) -> Numeric:
    """Share of GPU time spent on input tokens [fraction] (methodology §2): s_in =
    ((1 − o) ÷ T_p) ÷ ((1 − o) ÷ T_p + o ÷ T_d); output tokens take 1 − s_in.

    >>> round(input_time_share(40_000, 4_000, 0.25), 4)  # 0.00001875 ÷ 0.00008125
    0.2308
    """
    o = _f(output_share)
    time_in = _div(1 - o, prefill_tps)
    return _out(_div(time_in, time_in + _div(o, decode_tps)))


def cost_per_mtok_input(gpu_hour_cost: ArrayLike, prefill_tps: ArrayLike,
                        util: ArrayLike) -> Numeric:
    """Cost of a million input (prompt) tokens at utilisation u [$ per million tokens]
    (methodology §2): C × 10⁶ ÷ (3,600 × T_p × u), :func:`cost_per_mtok` at the prefill rate.

    >>> round(cost_per_mtok_input(2.10, 40_000, 1), 5)  # 2.10 × 10⁶ ÷ 144,000,000
    0.01458
    """
    return cost_per_mtok(gpu_hour_cost, prefill_tps, util)


def cost_per_mtok_output(gpu_hour_cost: ArrayLike, decode_tps: ArrayLike,
                         util: ArrayLike) -> Numeric:
    """Cost of a million output tokens at utilisation u [$ per million tokens] (methodology §2):
    C × 10⁶ ÷ (3,600 × T_d × u). The token-weighted mean of the input and output costs,
    (1 − o) × input + o × output, is :func:`cost_per_mtok` at the :func:`blended_capacity`.

    >>> round(cost_per_mtok_output(2.10, 4_000, 1), 4)  # 2.10 × 10⁶ ÷ 14,400,000
    0.1458
    """
    return cost_per_mtok(gpu_hour_cost, decode_tps, util)


def tokens_per_mw(tps_per_gpu: ArrayLike, util: ArrayLike, power_kw_per_gpu: ArrayLike,
                  pue: ArrayLike) -> Numeric:
    """Facility tokens per second per megawatt [tokens/s/MW] (methodology §2): T × u × 1,000 ÷
    (kW per GPU × PUE), the GPUs a megawatt of facility power feeds times what each produces.

    >>> tokens_per_mw(10_000, 0.5, 1.0, 1.25)  # 5,000 tokens/s per 1.25 kW → 800 GPUs a MW
    4000000.0
    """
    return _out(_div(_f(tps_per_gpu) * _f(util) * 1_000, _f(power_kw_per_gpu) * _f(pue)))


def decode_tps_from_blend(tps: ArrayLike, output_share: ArrayLike,
                          prefill_decode_ratio: ArrayLike) -> Numeric:
    """Decode (output) tokens per GPU-second T_d behind a blended throughput [tokens/s].

    methodology §2's blend T = 1 ÷ ((1 − o) ÷ T_p + o ÷ T_d) solved for T_d when the prefill rate
    is r times the decode rate (T_p = r × T_d): T_d = T × ((1 − o) ÷ r + o). With T_p = r × T_d,
    :func:`blended_capacity` of the two gives T back. Used to split a measured throughput into
    the input and output rates that price input and output tokens.

    >>> round(decode_tps_from_blend(1 / 8.125e-5, 0.25, 10), 6)  # §2 example: 4,000, 40,000
    4000.0
    """
    o, r = _f(output_share), _f(prefill_decode_ratio)
    return _out(_f(tps) * (_div(1 - o, r) + o))
