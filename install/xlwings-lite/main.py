"""Token Factory functions for xlwings Lite (Excel for Mac, on the web and on Windows).

Paste this whole file into the xlwings Lite editor's main.py tab (replacing what is there), and
into its requirements.txt tab the lines of the requirements.txt beside this file
(numpy, xlwings>=0.35,<0.38): numpy and xlwings are all this file needs. Then type, for example,
=TEF(210000, 700000) into a cell. Pasting it again (a newer version) replaces the functions.

Written by `tokenfactory-xl lite` from tokenfactory_xl 3.1.5; do not edit it by hand: write
it again with that command. It holds the source of the package's modules addin, core, core.economics, core.names, core.errors, core.specs, core.roofline, core.serving, core.number_text, core.catalogue, addin.params, addin.cells, addin.udfs and its
data files, loads them as the package tokenfactory_xl and exposes every Excel function of
tokenfactory_xl.udfs (27 functions): the same functions, with the same names, arguments
and help, as desktop Excel gets.
"""
# ruff: noqa: E501 (the data files' lines are as long as they are)

import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.machinery as _machinery
import io as _io
import linecache as _linecache
import sys as _sys

_PACKAGE = "tokenfactory_xl"
_VERSION = "3.1.5"

# The package's modules, as text: dependencies first.
_SOURCES = {
    'tokenfactory_xl.addin': r'''"""The Excel add-in: the Excel functions (:mod:`.udfs`), their arguments (:mod:`.params`), the
reading of Excel's cells and the answers given back (:mod:`.cells`), and their xlwings Lite
bundle (:mod:`.lite`).

Workbooks and the xlwings settings name the functions' module ``tokenfactory_xl.udfs``; that
path is kept by :mod:`tokenfactory_xl.udfs`, which is :mod:`.udfs` itself.
"""
''',
    'tokenfactory_xl.core': r'''"""The core: what every other layer stands on, and all the Excel functions need.

The input catalogue (:mod:`.catalogue`), the errors a user sees (:mod:`.errors`), the rules for
names and typed numbers (:mod:`.names`, :mod:`.number_text`), the economics of a token factory
(:mod:`.economics`: TEF, TFI, breakeven utilisation …), the GPU and LLM catalogues
(:mod:`.specs`) and the theoretical throughput they bound (:mod:`.roofline`, :mod:`.serving`).
Besides the standard library it imports numpy only and nothing of the package above it: it is
exactly what the xlwings Lite bundle carries.
"""
''',
    'tokenfactory_xl.core.economics': r'''"""The token-factory formulas: capacity, efficiency, unit economics and price dynamics.

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
''',
    'tokenfactory_xl.core.names': r'''"""One rule for the names people type: a site's, a cohort's, a GPU model's, a file's.

A site's name becomes a file name, a row of the portfolio, a line of the report and the key that
tells two sites apart. Two names that look the same must therefore be the same name, and a name
must look like what it is:

- **Unicode NFC.** ``Zürich`` typed on a Mac (``u`` + a combining diaeresis) and on Windows (one
  ``ü``) is one name: every name is read in its composed form (NFC), and names are compared
  composed and without regard to case (:func:`key`).
- **No hidden characters.** Control characters (a tab, a line break), the line and paragraph
  separators U+2028/U+2029, the bidirectional controls (a right-to-left override makes
  ``invoice`` + U+202E + ``xslx.exe`` show as another name) and the invisible characters (a
  zero-width space, a soft hyphen, a byte-order mark) are refused in a name, naming each one
  (:func:`hidden`), and shown escaped (``\\u200b``) wherever a name is echoed (:func:`shown`).
- **No look-alikes.** A Cyrillic ``а`` or a Greek ``Α`` looks like the Latin letter: two names
  that differ only in such letters (or in full-width letters) look the same and are two sites
  to the eye of no one, so they are compared by :func:`look`, and the letters are named
  (:func:`look_alikes`). A name written wholly in Cyrillic or Greek is a name like any other.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters that reorder the text shown around them (Unicode bidirectional controls).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Characters that show as nothing: the soft hyphen, the combining grapheme joiner, the Hangul
#: and Khmer fillers, the Mongolian vowel separator, the zero-width space, non-joiner and
#: joiner, the word joiner and invisible operators, the byte-order mark, and the tag characters.
INVISIBLE = ("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200d\u2060-\u2064\u3164"
             "\ufeff\uffa0\U000e0000-\U000e007f")
#: The line and paragraph separators: a line break that no ``\n`` test finds.
SEPARATORS = "\u2028\u2029"
#: Lone surrogates: no character at all, but how Python holds a byte that is not UTF-8 (a name
#: typed in a terminal set to another encoding reaches the command line so); no file can store
#: one, so a workbook could not be written with it.
SURROGATES = "\ud800-\udfff"
#: Every character a name may not hold: control characters, and the four kinds above.
HIDDEN = re.compile(rf"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}{INVISIBLE}{SEPARATORS}{SURROGATES}]")
#: Every character a free text (an input's source note) may not hold: those of a name but the
#: line break and the tab, which a note written on several lines holds.
HIDDEN_IN_TEXT = re.compile(
    rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}{INVISIBLE}{SEPARATORS}{SURROGATES}]")
_NOT_UTF8 = re.compile(f"[{SURROGATES}]")

_WHAT = {"\t": "a tab", "\n": "a line break", "\r": "a carriage return",
         "\u2028": "a line separator", "\u2029": "a paragraph separator",
         "\u00ad": "a soft hyphen", "\u200b": "a zero-width space",
         "\u200c": "a zero-width non-joiner", "\u200d": "a zero-width joiner",
         "\u2060": "a word joiner", "\ufeff": "a byte-order mark (zero-width no-break space)"}


def _what(char: str) -> str:
    if char in _WHAT:
        return _WHAT[char]
    if re.match(rf"[{BIDI_CONTROLS}]", char):
        return "a bidirectional control"
    if re.match(rf"[{INVISIBLE}]", char):
        return "an invisible character"
    if re.match(rf"[{SURROGATES}]", char):
        return "a byte that is not UTF-8"
    return "a control character"


def normal(text: str) -> str:
    """``text`` in Unicode's composed form (NFC)."""
    return unicodedata.normalize("NFC", text)


def key(text: object) -> str:
    """What tells two names apart: composed (NFC), without regard to case or surrounding
    spaces, any run of spaces (a no-break space too) as one, hidden characters left out
    (``"Zu\\u0308rich"`` and ``"ZÜRICH "`` are one name)."""
    folded = normal(HIDDEN.sub("", str(text)).strip()).casefold()
    return re.sub(r"\s+", " ", normal(folded))  # a no-break space shows as a space


def hidden(text: str, pattern: re.Pattern[str] = HIDDEN) -> str:
    """The hidden characters of ``text`` in words (``"U+200B (a zero-width space) at character
    6"``), at most three, or ``""`` when it has none (those ``pattern`` finds: a name's by
    default, :data:`HIDDEN_IN_TEXT` for a free text)."""
    found = []
    for match in pattern.finditer(text):
        char = match.group()
        if all(not item.startswith(f"U+{ord(char):04X} ") for item in found):
            found.append(f"U+{ord(char):04X} ({_what(char)}) at character {match.start() + 1}")
        if len(found) == 3:
            break
    return ", ".join(found)


def not_utf8(text: str) -> str:
    """Why a text holding bytes that are not UTF-8 (lone surrogates) is refused, or ``""``."""
    which = hidden(text, _NOT_UTF8)
    if not which:
        return ""
    return (f"cannot be stored: {which}; the terminal or file it came from is set to another "
            "encoding than UTF-8")


def problem(text: str) -> str:
    """Why a name holding hidden characters is refused, or ``""`` when it holds none."""
    which = not_utf8(text)
    if which:
        return which
    which = hidden(text)
    if not which:
        return ""
    return (f"contains control characters: {which}, which do not show or change how the "
            "text shows, so two names that look alike could be two sites")


def shown(text: object) -> str:
    """``text`` with its hidden characters written as escapes (``\\u200b``): a value echoed in
    a message or a report cannot rewrite a terminal line, show as another, or hide a
    difference."""
    return HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                      else f"\\U{ord(m.group()):08x}", str(text))


#: Letters of other alphabets that look like a Latin letter (lower case, as :func:`key` folds
#: them; an upper-case look-alike maps through its lower-case form: ``В`` → ``в`` → ``b``).
LOOK_ALIKES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "і": "i", "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "һ": "h", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ү": "y",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "n",
    "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x", "ϲ": "c",
})


def look(text: object) -> str:
    """How a name looks: its :func:`key` with full-width and compatibility letters folded (NFKC)
    and the letters of :data:`LOOK_ALIKES` read as the Latin letters they look like. Two names
    of one look but different keys are two names a reader cannot tell apart."""
    return unicodedata.normalize("NFKC", key(text)).translate(LOOK_ALIKES)


def look_alikes(text: str) -> str:
    """The letters of ``text`` that look like another alphabet's, named (``"а (CYRILLIC SMALL
    LETTER A) at character 5"``), at most three; ``""`` when it has none."""
    found = []
    for at, char in enumerate(text, start=1):
        folded = unicodedata.normalize("NFKC", char).casefold()
        if folded != char.casefold() or folded.translate(LOOK_ALIKES) != folded:
            found.append(f"{char} ({unicodedata.name(char, f'U+{ord(char):04X}')}) at "
                         f"character {at}")
        if len(found) == 3:
            break
    return ", ".join(found)
''',
    'tokenfactory_xl.core.errors': r'''"""The errors tokenfactory_xl raises for what a user can fix: one tree, one base.

Every error a user should read as a message, not as a traceback, is a
:class:`TokenFactoryError`; the command line catches that one class and prints its text (exit
status 2), and a Python user can catch it the same way. Beneath it:

- :class:`InputError` — one or more input values are not allowed. A finance user who types a
  bad value wants to know four things: which input, what they typed, what is allowed, and how
  to fix it. :class:`Problem` carries exactly those; :class:`InputError` carries every problem
  found in one go, so a sheet with five mistakes is fixed in one pass, not five;
- :class:`UsageError` — a mistake that is not an input value: a missing file, an option that
  needs another, an output that exists;
- :class:`EngineMissing` — a spreadsheet engine the task needs (LibreOffice, Gnumeric) is not
  installed;
- refused and unreadable files, and each layer's own refusals, subclass the base where they are
  raised (``files.safe_xlsx.RefusedFile``, ``capacity.measurement.FileProblem`` …).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .names import shown


@dataclass(frozen=True)
class Problem:
    """One bad input.

    Attributes
    ----------
    name : the input's name as the user wrote it (``gpus``, ``tef_target.Optimised``).
    value : what the user gave, unchanged.
    message : what is wrong and what is allowed, in plain words.
    fix : the likely fix, or ``""`` when the message already says it.
    where : where the value came from (``row 4``), or ``""``.
    """

    name: str
    value: object
    message: str
    fix: str = ""
    where: str = ""

    def __str__(self) -> str:
        head = f"{self.where}: " if self.where else ""
        text = f"{head}{self.name}={_show(self.value)}: {self.message}"
        if self.fix:
            text += f"; {self.fix}"
        return text


class TokenFactoryError(Exception):
    """Base of every error the package raises for something its user can act on; its text is
    the whole message (what, the value, what is allowed, the fix)."""


class UsageError(TokenFactoryError):
    """A mistake of the user's that is not an input value (a missing file, a bad option)."""


class EngineMissing(TokenFactoryError, RuntimeError):
    """A spreadsheet engine the task needs (LibreOffice, Gnumeric) is not installed."""


class InputError(TokenFactoryError, ValueError):
    """One or more inputs are not allowed; ``problems`` lists each of them."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self._text())

    def _text(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        lines = [f"{len(self.problems)} inputs need fixing:"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def _show(value: object) -> str:
    """How a user's value is echoed back: text in quotes, numbers as typed; a hidden character
    (a control character, an invisible one, a byte that is not UTF-8) as its escape
    (:func:`~.names.shown`, or ``repr`` in quotes), so the message shows where it is."""
    if isinstance(value, str):
        plain = value and value == value.strip() and not any(c in value for c in " '\"=")
        return shown(value) if plain else repr(value)  # repr escapes what does not print
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
''',
    'tokenfactory_xl.core.specs': r'''"""The hardware and model catalogues behind a theoretical throughput: GPUs and LLMs, with sources.

TEF divides what a factory produces by what it could produce. The second number comes from
specifications: how much memory a GPU has and how fast it reads it, how many dense FLOPS it
does at each precision, and how large a model is and how much KV cache each token of context
costs it. This module holds those figures as two CSV catalogues shipped inside the package,
``tokenfactory_xl/data/gpus.csv`` and ``tokenfactory_xl/data/models.csv``, each figure with the
vendor datasheet or model card it was taken from.

GPU figures are **dense** (no 2:4 structured sparsity). NVIDIA datasheets print Hopper and
Blackwell tensor throughput *with* sparsity (marked with an asterisk); the catalogue halves
those and says so in the source column. Memory is in the vendor's GB (10⁹ bytes; the HBM a
card actually exposes is slightly larger, so capacity limits come out a little conservative).

Model rows carry what the version-2 roofline (methodology section 5) needs beyond sizes: the hidden
size and input-embedding table (a decode step looks up B rows of it), the query heads and the
MLA rope dimension (attention FLOPs), and for mixture-of-experts models the MoE layers, routed
experts, experts per token and parameters of one expert (a batch reads every expert it touches).
Each group has a source column (``embedding_source``, ``attention_source``, ``moe_source``)
quoting the published ``config.json`` fields.

Users add or correct entries with CSV files of their own, in the same columns, in a folder
given as ``catalogue_dir=`` or in the environment variable ``TOKENFACTORY_XL_CATALOGUE_DIR``:
a ``gpus.csv`` and/or ``models.csv`` there is merged over the shipped one, row by row (a row
whose name matches a shipped entry replaces it; other rows are added). Names are matched
without regard to case, spaces, hyphens or underscores (``h100sxm`` finds ``H100 SXM``).

Unknown names raise :class:`tokenfactory_xl.core.errors.InputError` whose fix lists close matches.
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .errors import InputError, Problem

#: Environment variable naming a folder with a user's own ``gpus.csv`` / ``models.csv``.
CATALOGUE_DIR_ENV = "TOKENFACTORY_XL_CATALOGUE_DIR"

GPU_FILE = "gpus.csv"
MODEL_FILE = "models.csv"


@dataclass(frozen=True)
class GPU:
    """One accelerator's specification (per GPU, dense figures).

    Attributes
    ----------
    name : catalogue key, e.g. ``H200``
    vendor : ``NVIDIA``, ``AMD`` …
    hbm_gb : memory capacity [GB, 10⁹ bytes]
    bandwidth_tbps : peak memory bandwidth [TB/s, 10¹² bytes/s]
    bf16_tflops : dense FP16/BF16 tensor throughput [TFLOPS]
    fp8_tflops : dense FP8 tensor throughput [TFLOPS]
    fp4_tflops : dense FP4 tensor throughput [TFLOPS], ``None`` where the part has none
    power_w : maximum board power [W]
    link_gbps : GPU-to-GPU link bandwidth per direction (NVLink, Infinity Fabric, PCIe)
        [GB/s], ``None`` when unknown: what a collective moves data at
    sources : column name → where the figure comes from
    notes : free text
    """

    name: str
    vendor: str
    hbm_gb: float
    bandwidth_tbps: float
    bf16_tflops: float
    fp8_tflops: float
    fp4_tflops: float | None
    power_w: float
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    aliases: tuple[str, ...] = ()
    link_gbps: float | None = None


@dataclass(frozen=True)
class LLM:
    """One LLM's size and KV-cache geometry.

    Attributes
    ----------
    name : catalogue key, e.g. ``Llama-3.1-70B``
    kind : ``dense`` or ``moe``
    total_params : every weight, all experts included: what must sit in memory [parameters]
    active_params : weights used for one token: what a decode step reads [parameters]
    layers : transformer layers
    kv_heads : key/value heads per layer (grouped-query attention)
    head_dim : dimension of one head
    kv_latent_dim : for multi-head latent attention (MLA), the elements cached per layer per
        token (keys and values share one latent); ``None`` for ordinary attention
    sliding_window : tokens a sliding-window (or chunked-attention) layer attends over,
        ``None`` when none
    sliding_window_layers : how many layers use that window (the rest attend over everything)
    max_context : longest context the model supports [tokens]
    hidden_size : width of the residual stream: one embedding row [elements]; 0 when unknown
    embedding_params : input-embedding table (vocabulary × hidden size) that a decode step
        looks up B rows of instead of reading [parameters]; 0 for tied embeddings (the table is
        the LM head, read whole) or when unknown (the table is then read whole: a lower bound)
    query_heads : attention (query) heads per layer; blank in a catalogue row means kv_heads
        (fewer attention FLOPs, so the bound stays an upper bound)
    rope_dim : for MLA, the rotary part of the cached latent (``qk_rope_head_dim``); the
        compressed latent is kv_latent_dim − rope_dim [elements]
    moe_layers : layers whose feed-forward is a mixture of routed experts (0 for dense)
    experts : routed experts per MoE layer (E)
    experts_per_token : routed experts each token uses (k)
    expert_params : parameters of one routed expert in one layer (3 × hidden × expert
        intermediate size for a SwiGLU expert) [parameters]
    released_dense_precision : the precision the model's own release keeps its attention,
        dense and shared-expert layers and LM head at (``bf16`` for gpt-oss, whose release
        quantises only the experts); blank when unstated
    weight_only_experts : the release's 4-bit experts are weight-only (activations are not
        quantised with them), so their GEMMs compute at 8 bits on a GPU with FP4 tensor cores
        and at 16 bits on one without
    attention_params : the attention projections of every layer [parameters]; 0 (blank) for
        ordinary attention means hidden × head dim × 2 × (query heads + KV heads) per layer
        (:attr:`attention_weight_params`); an MLA model states its own
    source : the model card / config.json the figures come from
    sources : column group → where its figures come from (``moe``, ``embedding``,
        ``attention`` from the ``*_source`` columns)
    notes : free text
    """

    name: str
    kind: str
    total_params: float
    active_params: float
    layers: int
    kv_heads: int
    head_dim: int
    kv_latent_dim: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    max_context: int | None = None
    hidden_size: int = 0
    embedding_params: float = 0.0
    query_heads: int = 0
    rope_dim: int = 0
    moe_layers: int = 0
    experts: int = 0
    experts_per_token: int = 0
    expert_params: float = 0.0
    attention_params: float = 0.0
    released_dense_precision: str = ""
    weight_only_experts: bool = False
    source: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def routed_active_params(self) -> float:
        """Routed-expert parameters one token uses: k × MoE layers × params per expert."""
        return self.experts_per_token * self.moe_layers * self.expert_params

    @property
    def attention_weight_params(self) -> float:
        """Parameters of the attention projections over all layers [parameters]: the
        catalogue's ``attention_params``, else layers × hidden × head dim × 2 × (query heads +
        KV heads) (the query and output projections, the key and value projections)."""
        if self.attention_params:
            return float(self.attention_params)
        return float(self.layers * self.hidden_size * self.head_dim * 2
                     * (self.attention_heads + self.kv_heads))

    @property
    def attention_heads(self) -> int:
        """Query heads for the attention FLOPs: ``query_heads``, or ``kv_heads`` when blank."""
        return self.query_heads or self.kv_heads

    @property
    def kv_elements_per_token(self) -> int:
        """KV-cache elements one token adds over all layers (full-attention layers only).

        2 × layers × KV heads × head dim (a key and a value per head), or for MLA models
        layers × latent size.
        """
        if self.kv_latent_dim:
            return self.layers * self.kv_latent_dim
        return 2 * self.layers * self.kv_heads * self.head_dim


# -- reading the catalogues ----------------------------------------------------------------------
_GPU_NUMBERS = ("hbm_gb", "bandwidth_tbps", "bf16_tflops", "fp8_tflops", "power_w")
_GPU_OPTIONAL = ("fp4_tflops", "link_gbps")
_MODEL_NUMBERS = ("total_params", "active_params", "layers", "kv_heads", "head_dim")
_MODEL_OPTIONAL = ("kv_latent_dim", "sliding_window", "sliding_window_layers", "max_context",
                   "hidden_size", "embedding_params", "query_heads", "rope_dim",
                   "attention_params")
#: Columns a ``moe`` row must fill (roofline version 2 reads the experts a batch touches).
_MODEL_MOE = ("moe_layers", "experts", "experts_per_token", "expert_params")
_MODEL_KINDS = ("dense", "moe")

#: Field names that :func:`gpu_spec` / :func:`model_spec` (and GPU_SPEC / MODEL_SPEC) answer.
GPU_FIELDS: tuple[str, ...] = ("name", "vendor", *_GPU_NUMBERS[:4], "fp4_tflops", "power_w",
                               "link_gbps", "notes")
MODEL_FIELDS: tuple[str, ...] = ("name", "kind", *_MODEL_NUMBERS, *_MODEL_OPTIONAL,
                                 *_MODEL_MOE, "kv_elements_per_token", "source", "notes")


def normalise(name: str) -> str:
    """The form names are compared in: case, spaces, hyphens and underscores ignored."""
    return re.sub(r"[\s_\-]+", "", str(name)).casefold()


def _read_csv(path: Path | str, text: str | None = None) -> list[dict[str, str]]:
    try:
        if text is None:
            with open(path, newline="", encoding="utf-8-sig") as handle:
                text = handle.read()
    except OSError as exc:
        raise InputError([Problem("catalogue", str(path), f"cannot be read ({exc.strerror})",
                                  "check the path")]) from None
    rows = list(csv.DictReader(text.splitlines()))
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in rows]


def _number(row: dict[str, str], column: str, where: str, optional: bool = False,
            problems: list[Problem] | None = None) -> float | None:
    text = row.get(column, "").replace(",", "")
    if text == "" and optional:
        return None
    try:
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise ValueError
    except ValueError:
        assert problems is not None
        problems.append(Problem(column, row.get(column, ""), "must be a number of at least 0",
                                "fix the cell" if text else "fill in the cell", where))
        return None
    return value


def _check_columns(rows: list[dict[str, str]], required: tuple[str, ...], path: str) -> None:
    columns = set(rows[0]) if rows else set()
    missing = [c for c in ("name", *required) if c not in columns]
    if missing:
        raise InputError([Problem("catalogue", path, f"has no column {', '.join(missing)}",
                                  f"its header must include {', '.join(('name', *required))}")])


def _parse_gpus(rows: list[dict[str, str]], path: str) -> dict[str, GPU]:
    _check_columns(rows, _GPU_NUMBERS, path)
    out: dict[str, GPU] = {}
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        if not row.get("name"):
            continue
        values = {c: _number(row, c, where, problems=problems) for c in _GPU_NUMBERS}
        fp4 = _number(row, "fp4_tflops", where, optional=True, problems=problems)
        link = _number(row, "link_gbps", where, optional=True, problems=problems)
        if any(v is None for v in values.values()):
            continue
        sources = {k[: -len("_source")]: v for k, v in row.items() if k.endswith("_source") and v}
        out[normalise(row["name"])] = GPU(
            name=row["name"], vendor=row.get("vendor", ""), fp4_tflops=fp4 or None,
            link_gbps=link or None,
            sources=sources, notes=row.get("notes", ""), aliases=_aliases(row),
            **values)  # type: ignore[arg-type]
    if problems:
        raise InputError(problems)
    return out


def _parse_models(rows: list[dict[str, str]], path: str) -> dict[str, LLM]:
    _check_columns(rows, _MODEL_NUMBERS, path)
    out: dict[str, LLM] = {}
    problems: list[Problem] = []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        if not row.get("name"):
            continue
        kind = row.get("kind", "dense").lower() or "dense"
        if kind not in _MODEL_KINDS:
            problems.append(Problem("kind", row.get("kind"), "must be dense or moe", "", where))
        values = {c: _number(row, c, where, problems=problems) for c in _MODEL_NUMBERS}
        extra = {c: _number(row, c, where, optional=True, problems=problems)
                 for c in (*_MODEL_OPTIONAL, *_MODEL_MOE)}
        if any(v is None for v in values.values()) or kind not in _MODEL_KINDS:
            continue
        if values["active_params"] > values["total_params"]:  # type: ignore[operator]
            problems.append(Problem("active_params", row["active_params"],
                                    "exceeds total_params", "active ≤ total", where))
            continue
        if not _moe_ok(kind, values, extra, row, where, problems):
            continue
        sources = {k[: -len("_source")]: v for k, v in row.items() if k.endswith("_source") and v}
        out[normalise(row["name"])] = LLM(
            name=row["name"], kind=kind,
            total_params=values["total_params"], active_params=values["active_params"],
            layers=int(values["layers"]), kv_heads=int(values["kv_heads"]),  # type: ignore[arg-type]
            head_dim=int(values["head_dim"]),  # type: ignore[arg-type]
            kv_latent_dim=_int_or_none(extra["kv_latent_dim"]),
            sliding_window=_int_or_none(extra["sliding_window"]),
            sliding_window_layers=int(extra["sliding_window_layers"] or 0),
            max_context=_int_or_none(extra["max_context"]),
            hidden_size=int(extra["hidden_size"] or 0),
            embedding_params=float(extra["embedding_params"] or 0),
            query_heads=int(extra["query_heads"] or 0),
            rope_dim=int(extra["rope_dim"] or 0),
            moe_layers=int(extra["moe_layers"] or 0), experts=int(extra["experts"] or 0),
            experts_per_token=int(extra["experts_per_token"] or 0),
            expert_params=float(extra["expert_params"] or 0),
            attention_params=float(extra["attention_params"] or 0),
            released_dense_precision=_released_precision(row, where, problems),
            weight_only_experts=_yes(row, "weight_only_experts", where, problems),
            source=row.get("source", ""), sources=sources, notes=row.get("notes", ""),
            aliases=_aliases(row),
        )
    if problems:
        raise InputError(problems)
    return out


def _released_precision(row: dict[str, str], where: str, problems: list[Problem]) -> str:
    """The ``released_dense_precision`` cell, lower case (the capacity method checks it is a
    precision it knows when it uses it)."""
    return (row.get("released_dense_precision") or "").strip().lower()


def _yes(row: dict[str, str], column: str, where: str, problems: list[Problem]) -> bool:
    """A yes/no cell: ``yes`` or blank (``no``)."""
    text = (row.get(column) or "").strip().lower()
    if text not in ("", "yes", "no"):
        problems.append(Problem(column, row.get(column), "must be yes, no or blank",
                                "write yes or leave the cell blank (no)", where))
    return text == "yes"


def _moe_ok(kind: str, values: dict, extra: dict, row: dict[str, str], where: str,
            problems: list[Problem]) -> bool:
    """A ``moe`` row names its experts, and its routed parameters fit in its active count."""
    if kind != "moe":
        return True
    missing = [c for c in _MODEL_MOE if not extra[c]]
    if missing:
        problems.append(Problem(
            missing[0], row.get(missing[0], ""), "is needed for a moe model",
            f"fill in {', '.join(missing)} from the model's config.json (roofline version 2 "
            "counts the experts a batch touches)", where))
        return False
    if extra["experts_per_token"] > extra["experts"] or extra["moe_layers"] > values["layers"]:
        problems.append(Problem("experts_per_token", row.get("experts_per_token"),
                                "must not exceed experts (and moe_layers not exceed layers)",
                                "check the config.json figures", where))
        return False
    fixed = (values["active_params"] - (extra["embedding_params"] or 0)
             - extra["experts_per_token"] * extra["moe_layers"] * extra["expert_params"])
    if fixed < 0:
        problems.append(Problem(
            "expert_params", row.get("expert_params"),
            "makes the routed experts a token uses larger than its active parameters",
            "active_params ≥ embedding_params + experts_per_token × moe_layers × "
            "expert_params", where))
        return False
    return True


def _aliases(row: dict[str, str]) -> tuple[str, ...]:
    """Other names of an entry: the ``aliases`` column, separated by semicolons."""
    return tuple(a.strip() for a in row.get("aliases", "").split(";") if a.strip())


def _int_or_none(x: float | None) -> int | None:
    return int(x) if x else None


@functools.cache
def _shipped_gpus() -> dict[str, GPU]:
    text = (resources.files("tokenfactory_xl") / "data" / GPU_FILE).read_text(encoding="utf-8")
    return _parse_gpus(_read_csv(GPU_FILE, text), f"shipped {GPU_FILE}")


@functools.cache
def _shipped_models() -> dict[str, LLM]:
    text = (resources.files("tokenfactory_xl") / "data" / MODEL_FILE).read_text(encoding="utf-8")
    return _parse_models(_read_csv(MODEL_FILE, text), f"shipped {MODEL_FILE}")


# A user's file is parsed again only when it changes (Excel functions look names up per cell).
_USER_CACHE: dict[tuple[str, int, int], dict] = {}


def _user_entries(path: Path, parse) -> dict:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _USER_CACHE:
        _USER_CACHE[key] = parse(_read_csv(path), str(path))
    return _USER_CACHE[key]


def _user_file(filename: str, catalogue_dir: str | os.PathLike | None) -> Path | None:
    folder = catalogue_dir if catalogue_dir is not None else os.environ.get(CATALOGUE_DIR_ENV)
    if not folder:
        return None
    folder = Path(folder)
    if not folder.is_dir():
        origin = "catalogue_dir" if catalogue_dir is not None else CATALOGUE_DIR_ENV
        raise InputError([Problem(origin, str(folder), "is not a folder",
                                  f"point it at a folder holding {GPU_FILE} and/or {MODEL_FILE}")])
    path = folder / filename
    return path if path.is_file() else None


def load_gpus(catalogue_dir: str | os.PathLike | None = None) -> dict[str, GPU]:
    """The GPU catalogue: shipped entries, with a user's ``gpus.csv`` merged over them.

    Parameters
    ----------
    catalogue_dir : a folder that may hold ``gpus.csv``; ``None`` uses the environment
        variable ``TOKENFACTORY_XL_CATALOGUE_DIR`` when set.

    Returns
    -------
    normalised name → :class:`GPU`, shipped order first, user additions after.
    """
    gpus = dict(_shipped_gpus())
    user = _user_file(GPU_FILE, catalogue_dir)
    if user is not None:
        gpus.update(_user_entries(user, _parse_gpus))
    return gpus


def load_models(catalogue_dir: str | os.PathLike | None = None) -> dict[str, LLM]:
    """The model catalogue, with a user's ``models.csv`` merged over it (see :func:`load_gpus`)."""
    models = dict(_shipped_models())
    user = _user_file(MODEL_FILE, catalogue_dir)
    if user is not None:
        models.update(_user_entries(user, _parse_models))
    return models


# -- looking things up ---------------------------------------------------------------------------
def _close(word: str, names: list[str], n: int = 3) -> list[str]:
    keyed = {normalise(x): x for x in names}
    hits = difflib.get_close_matches(normalise(word), list(keyed), n=n, cutoff=0.4)
    short = len(normalise(word)) < 3  # "5" is in "MI325X" but means nothing by it
    contained = [] if short else [x for k, x in keyed.items() if normalise(word) in k]
    return list(dict.fromkeys([keyed[h] for h in hits] + contained))[:n]


def _unknown(kind: str, word: object, names: list[str]) -> InputError:
    close = _close(str(word), names)
    fix = (f"did you mean {' or '.join(close)}?" if close
           else f"known: {', '.join(names)}")
    return InputError([Problem(kind, word, f"is not in the {kind} catalogue", fix)])


def _find(entries: dict, name: str) -> object | None:
    """An entry by its name or one of its aliases, case and punctuation ignored; a Hugging Face
    id's organisation (``deepseek-ai/DeepSeek-R1`` → ``DeepSeek-R1``) is dropped."""
    for key in dict.fromkeys((normalise(name), normalise(str(name).rsplit("/", 1)[-1]))):
        if key in entries:
            return entries[key]
        for entry in entries.values():
            if key in {normalise(a) for a in entry.aliases}:
                return entry
    return None


def gpu(name: str | GPU, catalogue_dir: str | os.PathLike | None = None) -> GPU:
    """The GPU called ``name`` or one of its aliases (case and punctuation ignored); raises
    InputError listing close matches when there is none."""
    if isinstance(name, GPU):
        return name
    gpus = load_gpus(catalogue_dir)
    found = _find(gpus, name)
    if found is None:
        raise _unknown("gpu", name, [g.name for g in gpus.values()])
    return found  # type: ignore[return-value]


def model(name: str | LLM, catalogue_dir: str | os.PathLike | None = None) -> LLM:
    """The model called ``name`` or one of its aliases (a Hugging Face id such as
    ``meta-llama/Llama-3.1-70B-Instruct`` works); raises InputError listing close matches when
    there is none."""
    if isinstance(name, LLM):
        return name
    models = load_models(catalogue_dir)
    found = _find(models, name)
    if found is None:
        raise _unknown("model", name, [m.name for m in models.values()])
    return found  # type: ignore[return-value]


def _field(obj: object, kind: str, fields: tuple[str, ...], name: str) -> object:
    key = str(name).strip().lower()
    if key not in fields:
        close = difflib.get_close_matches(key, list(fields), n=3, cutoff=0.4)
        fix = f"did you mean {' or '.join(close)}?" if close else f"one of {', '.join(fields)}"
        raise InputError([Problem("field", name, f"is not a {kind} field", fix)])
    return getattr(obj, key)


def gpu_spec(name: str, field_name: str, catalogue_dir: str | os.PathLike | None = None) -> object:
    """One figure of a GPU, e.g. ``gpu_spec("H200", "bandwidth_tbps")`` → 4.8 [TB/s].

    Fields: :data:`GPU_FIELDS`; a figure the part lacks (FP4 on Hopper) is ``None``.
    """
    return _field(gpu(name, catalogue_dir), "GPU", GPU_FIELDS, field_name)


def model_spec(name: str, field_name: str,
               catalogue_dir: str | os.PathLike | None = None) -> object:
    """One figure of a model, e.g. ``model_spec("DeepSeek-V3", "active_params")`` → 3.7e10."""
    return _field(model(name, catalogue_dir), "model", MODEL_FIELDS, field_name)


# -- the capacity method's constants -------------------------------------------------------------
METHOD_FILE = "method.csv"


@dataclass(frozen=True)
class MethodConstant:
    """One constant of the capacity method (methodology section 5.1), with its source.

    Attributes
    ----------
    name : key, e.g. ``kv_bandwidth_share``
    value : the number [``unit``]
    unit : its unit in words
    figure : which figure it moves: ``attainable``, or ``both`` (the bound too)
    what : what it is, in a sentence
    source : where the value comes from
    """

    name: str
    value: float
    unit: str
    figure: str
    what: str
    source: str


@functools.cache
def method_constants() -> dict[str, MethodConstant]:
    """The constants of the bound and the attainable figure, from the shipped ``method.csv``
    (each with its unit, what it is and its source), by name."""
    text = (resources.files("tokenfactory_xl") / "data" / METHOD_FILE).read_text(
        encoding="utf-8")
    out = {}
    for row in _read_csv(METHOD_FILE, text):
        out[row["name"]] = MethodConstant(row["name"], float(row["value"]), row["unit"],
                                    row["figure"], row["what"], row["source"])
    return out


def method_constant(name: str) -> float:
    """The value of one constant of :func:`method_constants`."""
    return method_constants()[name].value
''',
    'tokenfactory_xl.core.roofline': r'''"""Theoretical capacity from specifications: the roofline bound that is TEF's denominator.

A decode step of a batch of B sequences on one replica reads the weights it needs and every
sequence's KV cache, and does the matrix and attention arithmetic (methodology section 5,
version 2). Whichever takes longer, moving the bytes or doing the FLOPs, sets the step time;
B tokens come out of each step. Prefill is compute bound. These are upper bounds: what a
replica would produce if nothing but memory bandwidth and tensor throughput limited it.

**What a step reads.** Not simply the active parameters:

- the input embedding is a lookup: a step reads B rows of hidden-size elements, not the whole
  table (Llama-3.1-8B's table is 525 M of its 8.03 B parameters);
- the output projection (LM head) is a full matrix multiply: read whole every step;
- a mixture-of-experts layer routes each of the B tokens to k of its E experts, so a batch
  touches E × (1 − (1 − k/E)^B) distinct experts in expectation (uniform routing). At batch 1
  that is k; at large batch nearly every expert: DeepSeek-V3 (k = 8, E = 256) touches 255.9 of
  256 at B = 256, and decode then reads nearly all 671 B parameters, not the 37 B active ones.

**What a step computes.** 2 FLOPs per active weight per token (the input-embedding lookup
excluded) plus attention over the context: 4 × layers × query heads × head dim × context for
ordinary (MHA/GQA) attention, 2 × layers × query heads × context × (2 × latent + rope dim) for
multi-head latent attention in its absorbed form (about 70 GFLOP per token for DeepSeek-V3 at
4,096 tokens). Sliding-window layers attend over at most their window. Prefill does the same
per prompt token, its attention at half the prompt length (the average position).

The functions come in two layers:

- spec formulas on plain numbers (:func:`experts_touched`, :func:`weights_read_per_step`,
  :func:`kv_bytes_per_token`, :func:`kv_bytes_per_sequence`, :func:`bytes_per_step`,
  :func:`attention_flops_per_token`, :func:`flops_per_step`, :func:`step_time`,
  :func:`decode_tps_per_gpu`, :func:`prefill_tps_per_gpu`, :func:`blended_tps`,
  :func:`max_batch`), each taking scalars or numpy arrays and broadcasting like
  :mod:`tokenfactory_xl.core.economics`;
- catalogue functions (:func:`theoretical_tps`, :func:`max_batch_for`,
  :func:`prefill_tps_for`, :func:`decode_step_for`) that take a GPU and a model by name from
  :mod:`tokenfactory_xl.core.specs` and a precision; their ``…_over`` twins take a
  :class:`Replica`, the figures of one combination or of one per cell, so that a range of
  100,000 GPUs, models and precisions is computed in one pass, each distinct entry read once.

Check values of the spec, pinned by the tests: Llama-3.1-8B in BF16 on one H100 SXM, batch 1,
1,100 tokens of context: 221.1 tokens/s (a published 212.8 stays under it); DeepSeek-V3 in FP8
on 8 × H200, batch 256, 4,096 tokens: 1,740 tokens/s per GPU.

**Precision** is one of ``fp16``, ``bf16``, ``fp8``, ``int8``, ``fp4``, ``int4``. It sets the
bytes per weight (2, 2, 1, 1, 0.5, 0.5), the bytes per KV-cache element unless
``kv_precision`` says otherwise, and the peak FLOPS used: BF16 TFLOPS for fp16/bf16, FP8
TFLOPS for fp8/int8, FP4 TFLOPS for fp4/int4 where the GPU has FP4 tensor cores (FP8 where it
has not: the weights are dequantised into FP8 arithmetic).

**Efficiency factors.** ``mbu`` (memory-bandwidth utilisation) and ``mfu`` (model-FLOPs
utilisation) scale the bandwidth and the FLOPS. Both default to 1.0, so the result is the
spec's upper bound exactly: TEF = actual ÷ theoretical then measures the whole gap between a
factory and its hardware, software included, which is what an optimisation programme closes.
Pass lower factors (well-tuned decode kernels sustain about 0.7–0.85 of peak bandwidth;
prefill reaches about 0.4–0.6 MFU) to get an *attainable* ceiling instead; TEF against it is
correspondingly higher.

**Parallelism.** One replica of the model spans ``gpus_per_replica`` GPUs (tensor or expert
parallel). Its aggregate memory bandwidth, FLOPS and memory are ``gpus_per_replica`` × one
GPU's; the replica's tokens per second are divided by ``gpus_per_replica`` to give tokens per
second **per GPU**, the figure the site inputs (``theoretical_tps_per_gpu``) take. Inter-GPU
communication is not charged: a bound, not a forecast. The KV cache is taken as split across
the replica's GPUs; an engine that copies it to every GPU instead (an MLA latent under tensor
parallelism, or more GPUs than KV heads) fits fewer sequences and reads more per step, which
data-parallel attention avoids.

**Memory.** Weights resident in memory are the *total* parameters (every expert of a MoE
model). GB are 10⁹ bytes. No room is reserved for activations or the runtime, so
:func:`max_batch` is an upper bound too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from .economics import Numeric, _div, _f, _out, blended_capacity
from .errors import InputError, Problem
from .specs import GPU, LLM, gpu, model

#: Bytes per weight and per KV-cache element for each precision.
PRECISIONS: dict[str, float] = {
    "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "int4": 0.5,
}

#: Default memory-bandwidth utilisation [fraction]: 1.0, the spec's pure upper bound.
DEFAULT_MBU = 1.0
#: Default model-FLOPs utilisation [fraction]: 1.0, the spec's pure upper bound.
DEFAULT_MFU = 1.0

TERA = 1e12
GIGA = 1e9


# -- precision -----------------------------------------------------------------------------------
def _precision(precision: str, name: str = "precision") -> str:
    key = str(precision).strip().lower()
    if key not in PRECISIONS:
        raise InputError([Problem(name, precision, "is not a known precision",
                                  f"use one of {', '.join(PRECISIONS)}")])
    return key


def bytes_per_element(precision: str) -> float:
    """Bytes a weight or KV-cache element takes at ``precision`` [bytes]."""
    return PRECISIONS[_precision(precision)]


def peak_tflops(gpu_spec: GPU | str, precision: str) -> float:
    """The dense tensor throughput a GPU offers at ``precision`` [TFLOPS].

    fp16/bf16 → BF16 TFLOPS; fp8/int8 → FP8 TFLOPS; fp4/int4 → FP4 TFLOPS where present,
    else FP8 TFLOPS.
    """
    g = gpu(gpu_spec)
    key = _precision(precision)
    if key in ("fp16", "bf16"):
        return g.bf16_tflops
    if key in ("fp4", "int4") and g.fp4_tflops:
        return g.fp4_tflops
    return g.fp8_tflops


# -- spec formulas on numbers --------------------------------------------------------------------
def kv_bytes_per_token(
    layers: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike, kv_bytes: ArrayLike,
    latent_dim: ArrayLike = 0,
) -> Numeric:
    """KV-cache bytes one token of context costs [bytes/token].

    2 × layers × KV heads × head dim × bytes per element (a key and a value per head per
    layer); for a multi-head-latent-attention model (``latent_dim`` > 0) layers × latent dim ×
    bytes per element, because keys and values are rebuilt from one cached latent.
    """
    latent = _f(latent_dim)
    full = 2 * _f(layers) * _f(kv_heads) * _f(head_dim) * _f(kv_bytes)
    mla = _f(layers) * latent * _f(kv_bytes)
    return _out(np.where(latent > 0, mla, full))


def kv_bytes_per_sequence(
    kv_bytes_per_token: ArrayLike, context_tokens: ArrayLike,
    sliding_share: ArrayLike = 0, sliding_window: ArrayLike = np.inf,
) -> Numeric:
    """KV-cache bytes of one sequence at ``context_tokens`` [bytes].

    KV bytes per token × context (methodology section 5). Where a share ``sliding_share`` of the
    layers attends over a sliding window of ``sliding_window`` tokens, those layers cache at
    most the window: bytes per token × ((1 − s) × context + s × min(context, window)).
    """
    c, s = _f(context_tokens), _f(sliding_share)
    tokens = (1 - s) * c + s * np.minimum(c, _f(sliding_window))
    return _out(_f(kv_bytes_per_token) * tokens)


def experts_touched(experts: ArrayLike, experts_per_token: ArrayLike,
                    batch: ArrayLike) -> Numeric:
    """Distinct experts a batch routes to in one MoE layer, in expectation [experts].

    E × (1 − (1 − k ÷ E)^B) under uniform routing (methodology section 5): each expert is missed
    by one token with probability 1 − k ÷ E, by all B tokens with that to the power B. k at
    B = 1, nearly E at large B. 0 for a dense model (E = 0).

    >>> round(experts_touched(256, 8, 256), 1)  # DeepSeek-V3 at batch 256
    255.9
    """
    e, k = _f(experts), _f(experts_per_token)
    with np.errstate(divide="ignore", invalid="ignore"):
        touched = e * (1 - np.power(1 - np.where(e > 0, k / np.where(e > 0, e, 1), 0),
                                    _f(batch)))
    return _out(np.where(e > 0, touched, 0.0))


def weights_read_per_step(
    active_params: ArrayLike, batch: ArrayLike, embedding_params: ArrayLike = 0,
    hidden_size: ArrayLike = 0, moe_layers: ArrayLike = 0, experts: ArrayLike = 0,
    experts_per_token: ArrayLike = 0, expert_params: ArrayLike = 0,
) -> Numeric:
    """Parameters one decode step of B sequences reads [parameters] (methodology section 5).

    (active − input embedding − k × L_moe × p_expert) + B × hidden + L_moe × E_touched(B) ×
    p_expert: the weights every token uses (attention, dense and shared-expert layers, LM head)
    once, the B embedding rows looked up, and every routed expert the batch touches. For a dense
    model (no experts) it is active − embedding + B × hidden.

    Parameters
    ----------
    active_params : published active parameters, embeddings and LM head included [parameters]
    batch : sequences decoded together [sequences]
    embedding_params : input-embedding table [parameters]; 0 reads it whole (tied embeddings)
    hidden_size : elements of one embedding row [elements]
    moe_layers : MoE layers L_moe; experts : routed experts per layer E;
    experts_per_token : k; expert_params : one routed expert in one layer p_expert [parameters]
    """
    b, p, layers = _f(batch), _f(expert_params), _f(moe_layers)
    always = _f(active_params) - _f(embedding_params) - _f(experts_per_token) * layers * p
    routed = layers * _f(experts_touched(experts, experts_per_token, b)) * p
    return _out(always + b * _f(hidden_size) + routed)


def bytes_per_step(
    weights_read: ArrayLike, bytes_per_weight: ArrayLike, batch: ArrayLike,
    kv_bytes_per_sequence: ArrayLike,
) -> Numeric:
    """Bytes one decode step reads [bytes]: weights read × bytes per weight + B × KV bytes per
    sequence (methodology section 5). ``weights_read`` comes from :func:`weights_read_per_step`."""
    return _out(_f(weights_read) * _f(bytes_per_weight) + _f(batch) * _f(kv_bytes_per_sequence))


def attention_flops_per_token(
    layers: ArrayLike, query_heads: ArrayLike, head_dim: ArrayLike, context_tokens: ArrayLike,
    latent_dim: ArrayLike = 0, rope_dim: ArrayLike = 0, sliding_share: ArrayLike = 0,
    sliding_window: ArrayLike = np.inf,
) -> Numeric:
    """Attention FLOPs one new token does over a context of n tokens [FLOP/token].

    MHA/GQA: 4 × layers × query heads × head dim × n (scores and the weighted sum of values,
    a multiply and an add each). MLA in its absorbed form (``latent_dim`` > 0): 2 × layers ×
    query heads × n × (2 × latent + rope dim), the scores over latent and rotary part and the
    sum over the latent (methodology section 5). A share ``sliding_share`` of the layers attends
    over at most ``sliding_window`` tokens.
    """
    n, s = _f(context_tokens), _f(sliding_share)
    attended = (1 - s) * n + s * np.minimum(n, _f(sliding_window))
    latent = _f(latent_dim)
    mha = 4 * _f(query_heads) * _f(head_dim)
    mla = 2 * _f(query_heads) * (2 * latent + _f(rope_dim))
    return _out(_f(layers) * np.where(latent > 0, mla, mha) * attended)


def flops_per_step(active_params: ArrayLike, batch: ArrayLike, embedding_params: ArrayLike = 0,
                   attention_flops_per_token: ArrayLike = 0) -> Numeric:
    """FLOPs one decode step does [FLOP]: B × (2 × (active − input embedding) params +
    attention FLOPs per token) (a multiply and an add per weight per token; the embedding is a
    lookup, not arithmetic)."""
    per_token = 2 * (_f(active_params) - _f(embedding_params)) + _f(attention_flops_per_token)
    return _out(_f(batch) * per_token)


def step_time(
    bytes_: ArrayLike, flops: ArrayLike, bandwidth: ArrayLike, peak_flops: ArrayLike,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
) -> Numeric:
    """Time of one decode step [s]: max(bytes ÷ (bandwidth × MBU), FLOPs ÷ (peak × MFU)).

    Parameters
    ----------
    bytes_ : bytes read per step [bytes]
    flops : FLOPs per step [FLOP]
    bandwidth : memory bandwidth of the replica [bytes/s]
    peak_flops : dense peak of the replica at the precision used [FLOP/s]
    mbu, mfu : memory-bandwidth and model-FLOPs utilisation [fraction]
    """
    memory = _div(bytes_, _f(bandwidth) * _f(mbu))
    compute = _div(flops, _f(peak_flops) * _f(mfu))
    return _out(np.maximum(memory, compute))


def decode_tps_per_gpu(batch: ArrayLike, step_time: ArrayLike,
                       gpus_per_replica: ArrayLike = 1) -> Numeric:
    """Decode tokens per second per GPU [tokens/s]: B ÷ step time ÷ GPUs per replica."""
    return _out(_div(_f(batch), _f(step_time) * _f(gpus_per_replica)))


def prefill_tps_per_gpu(peak_flops: ArrayLike, active_params: ArrayLike,
                        mfu: ArrayLike = DEFAULT_MFU, embedding_params: ArrayLike = 0,
                        attention_flops_per_token: ArrayLike = 0) -> Numeric:
    """Prompt (prefill) tokens per second per GPU [tokens/s]: peak × MFU ÷ (2 × (active −
    embedding) params + attention FLOPs per prompt token).

    ``peak_flops`` is one GPU's [FLOP/s]; a replica of g GPUs does g times as much over g GPUs.
    ``attention_flops_per_token`` is taken at half the prompt length (methodology section 5): the
    average position of a prompt token.
    """
    per_token = 2 * (_f(active_params) - _f(embedding_params)) + _f(attention_flops_per_token)
    return _out(_div(_f(peak_flops) * _f(mfu), per_token))


def blended_tps(prefill_tps: ArrayLike, decode_tps: ArrayLike,
                output_share: ArrayLike) -> Numeric:
    """Tokens per second of a mix of prompt and output tokens [tokens/s]: methodology section 2's
    blended capacity 1 ÷ ((1 − o) ÷ T_p + o ÷ T_d), stated once in
    :func:`tokenfactory_xl.core.economics.blended_capacity`."""
    return blended_capacity(prefill_tps, decode_tps, output_share)


def max_batch(
    memory_bytes: ArrayLike, gpus_per_replica: ArrayLike, weight_bytes: ArrayLike,
    kv_bytes_per_sequence: ArrayLike,
) -> Numeric:
    """Largest batch whose KV cache fits beside the weights [sequences].

    floor((memory per GPU × GPUs per replica − weight bytes) ÷ KV bytes per sequence), where
    KV bytes per sequence = KV bytes per token × context. 0 when the weights alone do not fit.
    """
    free = _f(memory_bytes) * _f(gpus_per_replica) - _f(weight_bytes)
    batches = np.floor(_div(np.maximum(free, 0), kv_bytes_per_sequence))
    return _out(batches)


# -- from the catalogue --------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelFigures:
    """A catalogue model's figures the roofline reads, each one number, or an array with one
    per cell when many cells are computed at once (:func:`theoretical_tps_over`)."""

    total_params: ArrayLike
    active_params: ArrayLike
    embedding_params: ArrayLike
    hidden_size: ArrayLike
    layers: ArrayLike
    kv_heads: ArrayLike
    head_dim: ArrayLike
    attention_heads: ArrayLike
    #: the cached latent per layer (MLA), 0 for ordinary attention [elements]
    kv_latent: ArrayLike
    #: the latent attention reads besides the rotary part (MLA), 0 otherwise [elements]
    attention_latent: ArrayLike
    rope_dim: ArrayLike
    #: the share of the layers that attend over a sliding window, and the window [tokens]
    sliding_share: ArrayLike
    sliding_window: ArrayLike
    moe_layers: ArrayLike
    experts: ArrayLike
    experts_per_token: ArrayLike
    expert_params: ArrayLike

    @classmethod
    def of(cls, m: LLM) -> ModelFigures:
        share, window = _sliding(m)
        return cls(
            m.total_params, m.active_params, m.embedding_params, m.hidden_size, m.layers,
            m.kv_heads, m.head_dim, m.attention_heads, m.kv_latent_dim or 0,
            (m.kv_latent_dim - m.rope_dim) if m.kv_latent_dim else 0, m.rope_dim, share, window,
            m.moe_layers, m.experts, m.experts_per_token, m.expert_params)

    @classmethod
    def gathered(cls, models: Sequence[LLM], at: np.ndarray) -> ModelFigures:
        """Each cell's figures: ``models[at]``, one array per figure."""
        table = np.array([[getattr(f, name.name) for name in fields(cls)]
                          for f in map(cls.of, models)], dtype=float)
        return cls(*np.take(table.T, at, axis=1))  # one gather: a row of cells per figure


def _sliding(m: LLM) -> tuple[float, float]:
    """The share of a model's layers that attend over a window, and the window [tokens]."""
    if not m.sliding_window:
        return 0.0, np.inf
    return m.sliding_window_layers / m.layers, float(m.sliding_window)


def _kv_per_sequence(f: ModelFigures, context_tokens: ArrayLike, kv_bytes: ArrayLike
                     ) -> np.ndarray:
    per_token = kv_bytes_per_token(f.layers, f.kv_heads, f.head_dim, kv_bytes, f.kv_latent)
    return _f(kv_bytes_per_sequence(per_token, context_tokens, f.sliding_share,
                                    f.sliding_window))


def _attention_flops(f: ModelFigures, context_tokens: ArrayLike) -> Numeric:
    return attention_flops_per_token(f.layers, f.attention_heads, f.head_dim, context_tokens,
                                     f.attention_latent, f.rope_dim, f.sliding_share,
                                     f.sliding_window)


def kv_bytes_per_sequence_for(m: LLM, context_tokens: ArrayLike, kv_bytes: float
                              ) -> np.ndarray:
    """KV-cache bytes of one sequence of ``context_tokens`` for a catalogue model [bytes]:
    its latent or heads × head dim per layer, sliding-window layers capped at their window."""
    return _kv_per_sequence(ModelFigures.of(m), context_tokens, kv_bytes)


def attention_flops_for(m: LLM, context_tokens: ArrayLike) -> Numeric:
    """Attention FLOPs per token of a catalogue model at ``context_tokens`` [FLOP/token]: its
    MLA latent and rope dim, or its query heads × head dim, sliding layers capped."""
    return _attention_flops(ModelFigures.of(m), context_tokens)


@dataclass(frozen=True)
class Replica:
    """What the roofline reads of a GPU, a model and a precision: one combination, or one per
    cell (arrays) when many are computed at once."""

    model: ModelFigures
    hbm_gb: ArrayLike
    bandwidth_tbps: ArrayLike
    #: dense peak of one GPU at the precision [TFLOPS] (:func:`peak_tflops`)
    peak_tflops: ArrayLike
    weight_bytes: ArrayLike
    kv_bytes: ArrayLike

    @classmethod
    def of(cls, gpu_name: GPU | str, model_name: LLM | str, precision: str,
           kv_precision: str | None = None) -> Replica:
        g, m = gpu(gpu_name), model(model_name)
        w_bytes = bytes_per_element(precision)
        kv_bytes = bytes_per_element(kv_precision) if kv_precision else w_bytes
        return cls(ModelFigures.of(m), g.hbm_gb, g.bandwidth_tbps, peak_tflops(g, precision),
                   w_bytes, kv_bytes)

    @classmethod
    def gathered(cls, gpus: Sequence[GPU], models: Sequence[LLM], precisions: Sequence[str],
                 gpu_at: np.ndarray, model_at: np.ndarray, precision_at: np.ndarray
                 ) -> Replica:
        """One replica per cell: GPU ``gpus[gpu_at]``, model ``models[model_at]`` and
        precision ``precisions[precision_at]``, each distinct entry read once."""
        peak = np.array([[peak_tflops(g, p) for p in precisions] for g in gpus], dtype=float)
        per_weight = np.take([bytes_per_element(p) for p in precisions], precision_at)
        return cls(ModelFigures.gathered(models, model_at),
                   np.take([float(g.hbm_gb) for g in gpus], gpu_at),
                   np.take([float(g.bandwidth_tbps) for g in gpus], gpu_at),
                   np.take(peak.reshape(-1), np.ravel_multi_index((gpu_at, precision_at),
                                                                  peak.shape)),
                   per_weight, per_weight)


def _check_positive(name: str, value: ArrayLike, whole: bool = False) -> np.ndarray:
    arr = _f(value)
    bad = ~np.isfinite(arr) | (arr <= 0) | (whole & (arr != np.floor(arr)))
    if np.any(bad):
        shown = arr[bad].flat[0] if arr.ndim else float(arr)
        allowed = "a whole number of at least 1" if whole else "a number above 0"
        raise InputError([Problem(name, shown, f"must be {allowed}")])
    return arr


def _check_fraction(name: str, value: ArrayLike) -> np.ndarray:
    arr = _f(value)
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > 1)
    if np.any(bad):
        shown = arr[bad].flat[0] if arr.ndim else float(arr)
        fix = (f"enter {shown:g}% or {shown / 100:g}" if 1 < shown <= 100
               else "e.g. 0.8 for 80%")
        raise InputError([Problem(name, shown, "must be a fraction above 0 and at most 1", fix)])
    return arr


def _max_batch_of(r: Replica, context_tokens: np.ndarray, gpus_per_replica: np.ndarray,
                  kv_seq: np.ndarray | None = None) -> Numeric:
    if kv_seq is None:
        kv_seq = _kv_per_sequence(r.model, context_tokens, r.kv_bytes)
    return max_batch(_f(r.hbm_gb) * GIGA, gpus_per_replica,
                     _f(r.model.total_params) * r.weight_bytes, kv_seq)


def max_batch_for(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, context_tokens: ArrayLike,
    gpus_per_replica: ArrayLike = 1, kv_precision: str | None = None,
) -> Numeric:
    """Largest batch of ``context_tokens``-long sequences one replica can hold [sequences].

    (HBM × GPUs per replica − total params × bytes per weight) ÷ KV bytes per sequence,
    rounded down; 0 when the weights do not fit.

    Llama-3.1-70B in FP8 on one H200 at 8,192 tokens: (141 − 70.55) GB of room ÷ 1.34 GB of KV
    cache per sequence.

    >>> max_batch_for("H200", "Llama-3.1-70B", "fp8", 8192)
    52.0
    """
    r = Replica.of(gpu_name, model_name, precision, kv_precision)
    return max_batch_over(r, context_tokens, gpus_per_replica)


def max_batch_over(r: Replica, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1
                   ) -> Numeric:
    """:func:`max_batch_for` of a :class:`Replica`: one combination, or one per cell."""
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    return _max_batch_of(r, ctx, n)


def decode_step_for(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, batch: ArrayLike,
    context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
    kv_precision: str | None = None,
) -> dict[str, Numeric]:
    """The working of one decode step of a catalogue GPU and model (methodology section 5).

    Returns
    -------
    ``weights_read`` [parameters], ``experts_touched`` per MoE layer [experts],
    ``kv_bytes_per_sequence`` [bytes], ``bytes`` and ``flops`` per step [bytes, FLOP],
    ``memory_s`` and ``compute_s`` (each bound's time) and ``step_s`` [s], ``tps_per_gpu``
    [tokens/s], ``max_batch`` [sequences]. Arguments are validated as in
    :func:`theoretical_tps`.
    """
    return decode_step_over(Replica.of(gpu_name, model_name, precision, kv_precision), batch,
                            context_tokens, gpus_per_replica, mbu, mfu)


def decode_step_over(
    r: Replica, batch: ArrayLike, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
) -> dict[str, Numeric]:
    """:func:`decode_step_for` of a :class:`Replica`: one combination, or one per cell."""
    f = r.model
    b = _check_positive("batch", batch, whole=True)
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    mbu_, mfu_ = _check_fraction("mbu", mbu), _check_fraction("mfu", mfu)
    kv_seq = _kv_per_sequence(f, ctx, r.kv_bytes)
    weights = weights_read_per_step(f.active_params, b, f.embedding_params, f.hidden_size,
                                    f.moe_layers, f.experts, f.experts_per_token,
                                    f.expert_params)
    moved = bytes_per_step(weights, r.weight_bytes, b, kv_seq)
    flops = flops_per_step(f.active_params, b, f.embedding_params, _attention_flops(f, ctx))
    memory_s = _div(moved, n * _f(r.bandwidth_tbps) * TERA * mbu_)
    compute_s = _div(flops, n * _f(r.peak_tflops) * TERA * mfu_)
    step = np.maximum(memory_s, compute_s)
    return {
        "weights_read": weights,
        "experts_touched": experts_touched(f.experts, f.experts_per_token, b),
        "kv_bytes_per_sequence": _out(kv_seq), "bytes": moved, "flops": flops,
        "memory_s": _out(memory_s), "compute_s": _out(compute_s), "step_s": _out(step),
        "tps_per_gpu": decode_tps_per_gpu(b, step, n),
        "max_batch": _max_batch_of(r, ctx, n, kv_seq),
    }


def theoretical_tps(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, batch: ArrayLike,
    context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
    kv_precision: str | None = None, check_memory: bool = True,
) -> Numeric:
    """Theoretical decode throughput per GPU [tokens/s] (methodology section 5, version 2).

    One replica spans ``gpus_per_replica`` GPUs: its bandwidth and FLOPS are that many times
    one GPU's, and its tokens per second are divided by the same number.

    step time = max(bytes ÷ (n × bandwidth × MBU), FLOPs ÷ (n × peak × MFU)) with bytes =
    weights read (:func:`weights_read_per_step`: embedding rows, LM head, the experts the batch
    touches) × bytes/weight + B × KV bytes/sequence and FLOPs = B × (2 × (active − embedding)
    + attention FLOPs per token); TPS per GPU = B ÷ step time ÷ n.

    Parameters
    ----------
    gpu_name, model_name : catalogue keys (case ignored) or :class:`GPU` / :class:`Model`
    precision : weight precision: fp16, bf16, fp8, int8, fp4, int4
    batch : sequences decoded together [sequences]
    context_tokens : context length of each sequence [tokens]
    gpus_per_replica : tensor- or expert-parallel GPUs holding one replica [GPUs]
    mbu, mfu : memory-bandwidth and model-FLOPs utilisation [fraction], default 1.0
    kv_precision : KV-cache precision when it differs from ``precision``
    check_memory : where the batch does not fit in the replica's memory the result is nan

    Examples
    --------
    Llama-3.1-8B in BF16 on one H100 SXM, batch 1, 1,100-token context (the spec's check):
    memory bound, 3.35 TB/s ÷ ((8.030 − 0.525) G params + one 4,096-element embedding row) ×
    2 bytes + 0.144 GB of KV cache) ≈ 221.1 tokens/s, above the published 212.8.

    >>> round(theoretical_tps("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1100), 1)
    221.1

    DeepSeek-V3 in FP8 on 8 × H200, batch 256, 4,096 tokens: the batch touches 255.9 of 256
    experts per layer, so a step reads 669 GB of weights and 37 GB of MLA cache.

    >>> round(theoretical_tps("H200", "DeepSeek-V3", "fp8", 256, 4096, 8))
    1740
    """
    return theoretical_tps_over(Replica.of(gpu_name, model_name, precision, kv_precision),
                                batch, context_tokens, gpus_per_replica, mbu, mfu, check_memory)


def theoretical_tps_over(
    r: Replica, batch: ArrayLike, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU, check_memory: bool = True,
) -> Numeric:
    """:func:`theoretical_tps` of a :class:`Replica`: one combination, or one per cell (the
    Excel function THEORETICAL_TPS computes a whole range of GPUs and models in one pass)."""
    step = decode_step_over(r, batch, context_tokens, gpus_per_replica, mbu, mfu)
    tps = _f(step["tps_per_gpu"])
    if check_memory:
        tps = np.where(_check_positive("batch", batch, whole=True) <= _f(step["max_batch"]),
                       tps, np.nan)
    return _out(tps)


def prefill_tps_for(gpu_name: GPU | str, model_name: LLM | str, precision: str,
                    mfu: ArrayLike = DEFAULT_MFU, prompt_tokens: ArrayLike = 0) -> Numeric:
    """Theoretical prompt (prefill) tokens per second per GPU [tokens/s] (methodology section 5):
    peak × MFU ÷ (2 × (active − embedding) params + attention FLOPs at half the prompt length),
    peak at ``precision``. ``prompt_tokens`` 0 leaves attention out (a short prompt).

    >>> round(prefill_tps_for("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1000))
    64792
    """
    g, m = gpu(gpu_name), model(model_name)
    prompt = _f(prompt_tokens)
    if np.any(~np.isfinite(prompt) | (prompt < 0)):
        raise InputError([Problem("prompt_tokens", prompt_tokens, "must be a number of at least 0",
                                  "give the prompt length in tokens")])
    return prefill_tps_per_gpu(peak_tflops(g, precision) * TERA, m.active_params,
                               _check_fraction("mfu", mfu), m.embedding_params,
                               attention_flops_for(m, prompt / 2))
''',
    'tokenfactory_xl.core.serving': r'''"""Capacity you can quote: the bound and the attainable throughput of one serving setup.

TEF = actual ÷ theoretical, so the theoretical figure decides whether a finance team trusts
every number after it. methodology section 5.1 gives two figures for one setup (a GPU, a model,
its precisions, its parallelism):

- **bound** — physics only, never beaten by a real measurement. A decode step of B sequences
  on a replica of g GPUs reads the weights it needs and the KV cache, and does the arithmetic;
  the step takes at least max(bytes ÷ bandwidth, FLOPs ÷ peak). Unlike the version-2 roofline
  (:mod:`tokenfactory_xl.core.roofline`) it counts what each GPU holds and reads:

  * per-component precision: routed experts at the weight precision, the rest (attention,
    dense and shared-expert layers, LM head) at ``dense_precision`` — by default the weight
    precision, but 8-bit under 4-bit weights of a mixture-of-experts model (4-bit checkpoints
    quantise the experts); a weight-only format computes at its activation precision (W4A16:
    the BF16 peak; FP4 on a GPU without FP4 tensor cores, INT4 anywhere);
  * a KV precision that defaults to 8 bits under 4-bit weights (``kv_bits_under_4bit``);
  * parallelism ``tp`` (tensor parallel: every weight split over g), ``ep`` (attention tensor
    parallel, experts spread over g) and ``dep`` (attention data-parallel: each GPU holds the
    attention weights whole and its own sequences' KV cache; experts spread over g). Under
    ``tp``/``ep`` a KV head cannot be split, so each GPU holds B × KV ÷ min(g, KV heads) — an
    MLA latent (one head) is held whole by every tensor-parallel rank;
  * speculative decoding: a step yields ``speculative`` accepted tokens per sequence (1 without).

- **attainable** — what the best engines reach on that hardware today, TEF's default
  denominator. The same step, run as engines run it: each part (weight GEMMs of the dense part,
  routed-expert GEMMs, attention) takes the longer of its bytes at its bandwidth share and its
  FLOPs at its achievable MFU, one after another; plus a per-step floor of a fixed time per
  layer and, on g > 1 GPUs, the collectives of each layer (latency growing with the group, and
  their bytes at the link bandwidth); the batch is what fits beside a memory reserve, capped at
  an engine's batch size.

Every constant is in the catalogue (``data/method.csv``, :func:`tokenfactory_xl.core.specs.
method_constants`) with what it is and its source; the README's capacity section lists them.

Two quantities are quoted (the metrics of the shared measurements table):

- :func:`decode_tps_per_user` — one user's decode rate at a concurrency and a context;
- :func:`max_output_tps_per_gpu` — the best output tokens per second per GPU for an
  input/output length, over every batch that fits, with the prompts' prefill inside it (a
  step carries the prompt tokens of new requests beside the decode tokens: per output token
  ``isl ÷ osl`` prompt tokens of arithmetic).

:func:`decode_tps_per_gpu` gives a batch's decode throughput per GPU (THEORETICAL_TPS).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, replace

import numpy as np

from . import roofline, specs
from .errors import InputError, Problem
from .roofline import GIGA, TERA
from .specs import GPU, LLM

#: Parallel layouts of a replica (see the module docstring).
PARALLEL = ("tp", "ep", "dep")
#: The two figures.
MODES = ("bound", "attainable")
#: Speculative-decoding techniques with a catalogued accepted-tokens figure.
SPECULATIVE = {"none": None, "mtp": "accepted_tokens_mtp", "medusa": "accepted_tokens_medusa",
               "eagle": "accepted_tokens_eagle", "eagle-2": "accepted_tokens_eagle",
               "eagle-3": "accepted_tokens_eagle", "eagle3": "accepted_tokens_eagle"}


def _c(name: str) -> float:
    return specs.method_constant(name)


def _mode(mode: str) -> str:
    key = str(mode).strip().lower()
    if key not in MODES:
        raise InputError([Problem("mode", mode, "is not a figure this method gives",
                                  f"use one of {', '.join(MODES)}")])
    return key


def speculative_tokens(value: object) -> float:
    """Accepted tokens per step for a technique's name (``MTP``, ``Medusa``, ``EAGLE-3``: the
    catalogue's sourced figure), ``none`` (1) or a number of at least 1."""
    text = str(value).strip().lower() if value is not None else "none"
    if text in ("", "none", "no", "off"):
        return 1.0
    if text in SPECULATIVE:
        return _c(SPECULATIVE[text])  # type: ignore[arg-type]
    try:
        number = float(text)
    except ValueError:
        raise InputError([Problem("speculative", value, "is neither a known technique nor a "
                                  "number", "give accepted tokens per step (e.g. 1.9) or one "
                                  "of none, MTP, Medusa, EAGLE-3")]) from None
    if not (math.isfinite(number) and number >= 1):
        raise InputError([Problem("speculative", value, "must be at least 1 accepted token per "
                                  "step", "1 means no speculative decoding")])
    return number


def activation_tflops(gpu_spec: GPU, precision: str) -> float:
    """The dense peak a weight format computes at [TFLOPS]: BF16 for fp16/bf16 and for
    weight-only formats (int4 anywhere, fp4 where the GPU has no FP4 tensor cores: W4A16);
    FP8 for fp8/int8; FP4 for fp4 on a GPU with FP4 tensor cores."""
    if precision in ("fp8", "int8"):
        return gpu_spec.fp8_tflops
    if precision == "fp4" and gpu_spec.fp4_tflops:
        return gpu_spec.fp4_tflops
    return gpu_spec.bf16_tflops


@dataclass(frozen=True)
class Setup:
    """One serving setup: a replica of ``gpus`` GPUs holding the model once.

    Attributes
    ----------
    gpu, model : catalogue entries
    precision : routed experts' (a dense model's: every layer's) weight precision
    dense_precision : attention, dense and shared-expert layers and LM head of a MoE model
    kv_precision : KV-cache elements
    gpus : GPUs of the replica [GPUs]
    parallel : ``tp``, ``ep`` or ``dep`` (:data:`PARALLEL`)
    speculative : accepted tokens per step per sequence [tokens]
    """

    gpu: GPU
    model: LLM
    precision: str
    dense_precision: str
    kv_precision: str
    gpus: int = 1
    parallel: str = "tp"
    speculative: float = 1.0

    @classmethod
    def of(cls, gpu_name: GPU | str, model_name: LLM | str, precision: str, gpus: int = 1,
           parallel: str = "tp", kv_precision: str | None = None,
           dense_precision: str | None = None, speculative: object = 1.0) -> Setup:
        """A validated setup; blank precisions take the method's defaults (module docstring)."""
        g, m = specs.gpu(gpu_name), specs.model(model_name)
        weights = roofline._precision(precision)
        four_bit = roofline.PRECISIONS[weights] < 1
        if dense_precision:
            dense = roofline._precision(dense_precision, "dense_precision")
        elif m.released_dense_precision:
            # the release quantises only the experts
            dense = roofline._precision(m.released_dense_precision, "released_dense_precision")
        else:
            dense = "fp8" if (four_bit and m.experts) else weights
        if kv_precision:
            kv = roofline._precision(kv_precision, "kv_precision")
        else:
            kv = "fp8" if (four_bit and _c("kv_bits_under_4bit") == 8) else dense
        layout = str(parallel).strip().lower()
        if layout not in PARALLEL:
            raise InputError([Problem("parallel", parallel, "is not a parallel layout",
                                      f"use one of {', '.join(PARALLEL)}")])
        if isinstance(gpus, bool) or not float(gpus).is_integer() or gpus < 1:
            raise InputError([Problem("gpus", gpus, "must be a whole number of at least 1")])
        if layout == "dep" and not m.experts:
            layout = "tp"  # a dense model has no experts to spread: attention DP is plain DP
        return cls(g, m, weights, dense, kv, int(gpus), layout, speculative_tokens(speculative))

    # -- what one GPU holds and reads ------------------------------------------------------------
    @property
    def _bytes(self) -> tuple[float, float, float]:
        p = roofline.PRECISIONS
        return p[self.precision], p[self.dense_precision], p[self.kv_precision]

    @property
    def expert_compute(self) -> str:
        """The precision whose dense peak the routed-expert GEMMs compute at: the weights',
        except for a release's weight-only 4-bit experts (:attr:`specs.LLM.
        weight_only_experts`): their activations are not 4-bit, so they compute at 8 bits
        (MXFP4 × MXFP8, the FP8 rate) on a GPU with FP4 tensor cores and at 16 bits (W4A16)
        on one without."""
        if self.model.weight_only_experts and self.precision == "fp4":
            return "fp8" if self.gpu.fp4_tflops else "bf16"
        return self.precision

    @property
    def _kv_split(self) -> float:
        """How many ways a replica's KV cache is split over its GPUs."""
        if self.parallel == "dep":
            return float(self.gpus)
        heads = 1 if self.model.kv_latent_dim else self.model.kv_heads
        return float(min(self.gpus, max(heads, 1)))

    def _dense_parts(self, total: bool) -> tuple[float, float]:
        """(attention, other non-routed) parameters, the embedding table left out of a step's
        reads (a lookup) but in memory when ``total``."""
        m = self.model
        attention = m.attention_weight_params
        routed = (m.moe_layers * m.experts * m.expert_params if total
                  else m.routed_active_params)
        params = m.total_params if total else m.active_params - m.embedding_params
        return attention, max(params - routed - attention, 0.0)

    def resident_gb(self) -> float:
        """Weights one GPU holds [GB]: attention whole under ``dep``, else split; the rest and
        every routed expert split over the replica."""
        _, dense_b, _ = self._bytes
        attention, rest = self._dense_parts(total=True)
        routed = self.model.moe_layers * self.model.experts * self.model.expert_params
        n = self.gpus
        if self.parallel == "dep":
            held = attention * dense_b + rest * dense_b / n
        else:
            held = (attention + rest) * dense_b / n
        return (held + routed * self._bytes[0] / n) / GIGA

    def kv_gb_per_sequence(self, context: float) -> float:
        """KV cache of one sequence of ``context`` tokens, the whole replica's copy [GB]."""
        return float(roofline.kv_bytes_per_sequence_for(self.model, context,
                                                        self._bytes[2])) / GIGA


@dataclass(frozen=True)
class Step:
    """One decode step of a batch on one GPU of the replica, and its parts [s]."""

    batch: float
    weights_gb: float
    kv_gb: float
    tflop: float
    memory_s: float
    compute_s: float
    overhead_s: float
    step_s: float
    bound_by: str


def step(setup: Setup, batch: float, context: float, mode: str = "attainable",
         prompt_per_output: float = 0.0, prompt_tokens: float = 0.0) -> Step:
    """Time of one decode step of ``batch`` sequences of ``context`` tokens (methodology §5.1).

    ``prompt_per_output`` prompt tokens ride along per output token (an output-throughput
    figure's prefill, attention at half of ``prompt_tokens``). See the module docstring for
    what each mode counts.
    """
    mode = _mode(mode)
    s, m, g = setup, setup.model, setup.gpu
    n = s.gpus
    expert_b, dense_b, kv_b = s._bytes
    attention, rest = s._dense_parts(total=False)
    touched = m.moe_layers * float(roofline.experts_touched(
        m.experts, m.experts_per_token, batch)) * m.expert_params
    if s.parallel == "dep":
        dense_read = attention * dense_b + rest * dense_b / n
    else:
        dense_read = (attention + rest) * dense_b / n
    expert_read = touched * expert_b / n
    kv_read = batch * s.kv_gb_per_sequence(context) * GIGA / s._kv_split
    decode_tokens = batch * s.speculative
    tokens = decode_tokens + batch * prompt_per_output
    per_token_dense = 2 * (attention + rest)
    per_token_moe = 2 * m.routed_active_params
    attn_flops = (decode_tokens * float(roofline.attention_flops_for(m, context))
                  + batch * prompt_per_output * float(
                      roofline.attention_flops_for(m, prompt_tokens / 2)))
    f_dense, f_moe, f_attn = tokens * per_token_dense / n, tokens * per_token_moe / n, \
        attn_flops / n
    p_dense = activation_tflops(g, s.dense_precision) * TERA
    p_moe = activation_tflops(g, s.expert_compute) * TERA
    p_attn = (g.fp8_tflops if kv_b <= 1 else g.bf16_tflops) * TERA
    bw = g.bandwidth_tbps * TERA
    weights_gb = (dense_read + expert_read) / GIGA
    tflop = (f_dense + f_moe + f_attn) / TERA
    if mode == "bound":
        memory = (dense_read + expert_read + kv_read) / bw
        compute = f_dense / p_dense + f_moe / p_moe + f_attn / p_attn
        return Step(batch, weights_gb, kv_read / GIGA, tflop, memory, compute, 0.0,
                    max(memory, compute), "memory" if memory >= compute else "compute")
    w_share, kv_share = _c("weight_bandwidth_share"), _c("kv_bandwidth_share")
    parts = [(dense_read / (bw * w_share), f_dense / (p_dense * _c("dense_mfu"))),
             (expert_read / (bw * w_share), f_moe / (p_moe * _c("moe_mfu"))),
             (kv_read / (bw * kv_share), f_attn / (p_attn * _c("attention_mfu")))]
    memory = sum(a for a, b in parts if a >= b)
    compute = sum(b for a, b in parts if b > a)
    overhead = m.layers * _c("layer_overhead_s") + _collectives(s, tokens)
    total = memory + compute + overhead
    return Step(batch, weights_gb, kv_read / GIGA, tflop, memory, compute, overhead, total,
                "memory" if memory >= compute else "compute")


def _collectives(s: Setup, tokens: float) -> float:
    """Per-step time of the collectives of a replica of more than one GPU [s]: their latency
    (per layer, growing with the group) and their bytes at the link bandwidth."""
    n, m = s.gpus, s.model
    if n <= 1:
        return 0.0
    latency = _c("collective_latency_s") + _c("collective_latency_per_doubling_s") * (
        math.log2(n) - 1)
    count = _c("collectives_per_layer")
    if s.parallel == "dep":
        # tokens go to their experts and back: k copies of the hidden state, dispatched in 8
        # bits and combined in 16, the share (n − 1) ÷ n of them to other GPUs
        layers = m.moe_layers
        moved = tokens / n * m.experts_per_token * m.hidden_size * 3 * (n - 1) / n * layers
    else:
        # an all-reduce of the step's hidden states (16 bits) per collective; through an
        # NVSwitch each GPU sends and receives its share once
        layers = m.layers
        moved = tokens * m.hidden_size * 2 * count * (n - 1) / n * layers
    link = s.gpu.link_gbps
    transfer = moved / (link * GIGA * _c("link_efficiency")) if link else 0.0
    return layers * count * latency + transfer


def _memory_problem(s: Setup, need_gb: float, have_gb: float, what: str) -> InputError:
    return InputError([Problem(
        "setup", f"{s.model.name} on {s.gpus} × {s.gpu.name} ({s.precision})",
        f"does not fit in memory: {what} take {need_gb:,.1f} GB per GPU, "
        f"{need_gb - have_gb:,.1f} GB more than the {have_gb:,.1f} GB it has",
        "use more GPUs (--gpus), a smaller precision, or a shorter context")])


def max_batch(setup: Setup, context: float, mode: str = "attainable") -> int:
    """Most sequences of ``context`` tokens the replica decodes together [sequences]: the KV
    cache that fits in the memory the weights leave (less the memory reserve, a share of that
    free memory, attainable), capped at the engine batch size (attainable). Raises InputError
    saying by how much the weights alone or one sequence do not fit."""
    mode = _mode(mode)
    s = setup
    weights = s.resident_gb()
    if weights >= s.gpu.hbm_gb:
        raise _memory_problem(s, weights, s.gpu.hbm_gb, "the weights alone")
    for_kv = (1 - _c("memory_reserve")) if mode == "attainable" else 1.0
    free = (s.gpu.hbm_gb - weights) * for_kv
    # each GPU holds its own sequences under dep, a share of every sequence otherwise
    per_gpu = s.kv_gb_per_sequence(context) / (1 if s.parallel == "dep" else s._kv_split)
    fits = math.floor(free / per_gpu) * (s.gpus if s.parallel == "dep" else 1)
    if fits < 1:
        raise _memory_problem(s, weights + per_gpu / for_kv, s.gpu.hbm_gb,
                              f"the weights and one sequence of {context:,.0f} tokens" + (
                                  " (with the memory reserve)" if for_kv < 1 else ""))
    if mode == "attainable":
        fits = min(fits, int(_c("batch_cap")))
    return int(fits)


def decode_tps_per_user(setup: Setup, concurrency: float, context: float,
                        mode: str = "attainable") -> float:
    """One user's decode rate [tokens/s]: accepted tokens per step ÷ the step time of a
    batch of ``concurrency`` sequences of ``context`` tokens."""
    _fits(setup, concurrency, context, mode)
    return setup.speculative / step(setup, concurrency, context, mode).step_s


def decode_tps_per_gpu(setup: Setup, batch: float, context: float,
                       mode: str = "attainable") -> float:
    """Decode tokens per second per GPU of a batch [tokens/s]: batch × accepted tokens ÷
    step time ÷ GPUs."""
    _fits(setup, batch, context, mode)
    return batch * setup.speculative / step(setup, batch, context, mode).step_s / setup.gpus


def _fits(setup: Setup, batch: float, context: float, mode: str) -> None:
    most = max_batch(setup, context, mode)
    if batch > most:
        limit = ("the engine batch cap" if mode == "attainable" and most == int(
            _c("batch_cap")) else "the memory")
        raise InputError([Problem("batch", batch, f"is more than {limit} allows: at most "
                                  f"{most:,} sequences of {context:,.0f} tokens on "
                                  f"{setup.gpus} × {setup.gpu.name}",
                                  "lower the batch or the context, or add GPUs")])


def max_output_tps_per_gpu(setup: Setup, isl: float, osl: float,
                           mode: str = "attainable") -> tuple[float, int]:
    """The best output tokens per second per GPU for prompts of ``isl`` and outputs of
    ``osl`` tokens, over every batch that fits, prefill inside [tokens/s]; and that batch.

    Each step decodes B sequences at the mean context isl + osl ÷ 2 and carries isl ÷ osl
    prompt tokens per output token.
    """
    if not (isl >= 0 and osl >= 1):
        raise InputError([Problem("osl", osl, "must be at least 1 output token")])
    context = isl + osl / 2
    most = max_batch(setup, context, mode)
    candidates = sorted({int(b) for b in np.unique(np.round(np.geomspace(1, most, 64)))}
                        | {most})
    best, at = 0.0, 1
    for b in candidates:
        t = step(setup, b, context, mode, isl / osl, isl).step_s
        value = b * setup.speculative / t / setup.gpus
        if value > best:
            best, at = value, b
    return best, at


# -- a table of published measurements -----------------------------------------------------------
#: The metrics a measurements table may give, and what each is.
METRICS = {"decode tokens/s per user": "one user's decode rate at a concurrency and context",
           "max output tokens/s per GPU": "best output throughput per GPU at an isl/osl"}
#: The columns :func:`check_table` reads.
TABLE_COLUMNS = ("id", "metric", "measured", "gpu", "model", "precision", "kv_precision", "gpus",
                 "parallel", "concurrency", "context", "isl", "osl", "speculative")


def parallel_of(text: str) -> str:
    """The layout a table's ``parallel`` cell names: ``DEP…`` attention data-parallel,
    ``…(EP)``/``EP…`` expert parallel, anything else (``TP8``, ``8 GPUs``) tensor parallel."""
    t = str(text).strip().upper()
    if t.startswith("DEP"):
        return "dep"
    if "EP" in t.replace("DEP", ""):
        return "ep"
    return "tp"


def verdict(measured: float, bound: float, attainable: float) -> str:
    """A row's verdict in words."""
    if measured > bound * (1 + 1e-9):
        return "above the bound: impossible as described (check the setup)"
    if measured > attainable * (1 + 1e-9):
        return "above the attainable figure"
    share = measured / attainable
    if share >= 0.7:
        return "at the attainable figure"
    if share >= 0.5:
        return "within 2x of the attainable figure"
    return f"{1 / share:.1f}x below the attainable figure"


def _cell(row: dict[str, str], name: str, where: str, whole: bool = False) -> float:
    text = (row.get(name) or "").replace(",", "").strip()
    try:
        value = float(text)
        if not math.isfinite(value) or value <= 0 or (whole and not value.is_integer()):
            raise ValueError
    except ValueError:
        raise InputError([Problem(name, row.get(name, ""), "must be a number above 0" + (
            " (whole)" if whole else ""), "fill in the cell", where)]) from None
    return value


def _count(row: dict[str, str], where: str) -> int:
    """The replica's GPUs: the ``gpus`` cell, else the number in ``parallel`` (``TP8``)."""
    if (row.get("gpus") or "").strip():
        return int(_cell(row, "gpus", where, whole=True))
    found = re.search(r"\d+", row.get("parallel") or "")
    if not found:
        raise InputError([Problem("gpus", "", "is empty and parallel names no GPU count",
                                  "fill in the replica's GPUs", where)])
    return int(found.group())


def _figure(s: Setup, row: dict[str, str], metric: str, mode: str, where: str
            ) -> tuple[float, str]:
    if metric.startswith("decode"):
        users = _cell(row, "concurrency", where, True)
        if (row.get("context") or "").strip():
            context = _cell(row, "context", where, True)
        else:  # the table's definition: input + half the output
            context = _cell(row, "isl", where, True) + _cell(row, "osl", where, True) / 2
        batch = min(users, max_batch(s, context, mode))
        note = (f"{mode}: {batch:,.0f} of the {users:,.0f} users decode together, the rest "
                "wait" if batch < users else "")
        return decode_tps_per_user(s, batch, context, mode), note
    return max_output_tps_per_gpu(s, _cell(row, "isl", where, True),
                                  _cell(row, "osl", where, True), mode)[0], ""


def release_notes(s: Setup) -> list[str]:
    """What a reader of the setup's figures should know about the model's release: a model
    whose release ships weight-only 4-bit experts (:attr:`specs.LLM.weight_only_experts`,
    gpt-oss's MXFP4) given another weight precision is computed as given, which is not the run
    an engine makes of the release; on a GPU without 4-bit tensor cores it runs the release as
    W4A16, at the 16-bit rate (methodology §5.1)."""
    if not s.model.weight_only_experts or s.precision == "fp4":
        return []
    text = (f"{s.model.name} ships its experts as weight-only 4-bit (MXFP4): the figures are for "
            f"{s.precision} experts, as the row says, not for the release")
    if not s.gpu.fp4_tflops:
        text += (f"; {s.gpu.name} has no 4-bit tensor cores, so engines run the release as "
                 "W4A16 at the BF16 rate (precision fp4 reads the run as shipped, kv_precision "
                 "bf16 where the engine keeps the cache in 16 bits)")
    return [text]


def check_row(row: dict[str, str], where: str = "") -> dict[str, object]:
    """The bound, the attainable figure, measured ÷ each and a verdict for one table row.

    A per-user row whose users outnumber the batch that fits (or the engine's cap, attainable)
    is computed at that batch: the other users wait. Raises InputError naming the row when it
    cannot be computed.
    """
    metric = (row.get("metric") or "").strip()
    if metric not in METRICS:
        raise InputError([Problem("metric", metric, "is not a metric the check computes",
                                  f"use one of: {'; '.join(METRICS)}", where)])
    measured = _cell(row, "measured", where)
    figures, notes = {}, []
    try:
        s = Setup.of(row.get("gpu", ""), row.get("model", ""),
                     (row.get("precision") or "").lower(), _count(row, where),
                     parallel_of(row.get("parallel", "")),
                     (row.get("kv_precision") or "").lower() or None, None,
                     row.get("speculative") or "none")
        for mode in MODES:
            figures[mode], note = _figure(s, row, metric, mode, where)
            notes += [note] if note else []
    except InputError as error:  # say which row
        raise InputError([replace(p, where=p.where or where) for p in error.problems]
                         ) from None
    notes += release_notes(s)
    return {"id": row.get("id", ""), "metric": metric, "gpu": s.gpu.name, "model": s.model.name,
            "setup": f"{s.gpus} × {s.gpu.name}, {s.parallel}, {s.precision} weights, "
                     f"{s.dense_precision} dense, {s.kv_precision} KV"
                     + (f", experts computed at {s.expert_compute}"
                        if s.expert_compute != s.precision else "")
                     + (f", {s.speculative:g} tokens/step" if s.speculative != 1 else ""),
            "measured": measured, "bound": figures["bound"],
            "attainable": figures["attainable"],
            "measured_over_bound": measured / figures["bound"],
            "measured_over_attainable": measured / figures["attainable"],
            "verdict": verdict(measured, figures["bound"], figures["attainable"]),
            "notes": notes}


def check_rows(rows: list[dict[str, str]], path: str
               ) -> tuple[list[dict[str, object]], list[str]]:
    """:func:`check_row` of every row; a row that cannot be computed is kept with no figures,
    its problem as its verdict, and the problem is also returned (one line per row)."""
    out, problems = [], []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        try:
            out.append(check_row(row, where))
        except InputError as error:
            text = "; ".join(str(p) for p in error.problems)
            problems.append(text)
            out.append({"id": row.get("id", ""), "metric": row.get("metric", ""),
                        "measured": None, "bound": None, "attainable": None,
                        "measured_over_bound": None, "measured_over_attainable": None,
                        "verdict": f"not computed: {text}", "notes": []})
            measured = (row.get("measured") or "").replace(",", "").strip()
            try:
                out[-1]["measured"] = float(measured)
            except ValueError:
                pass
    return out, problems


def check_table(path: str) -> list[dict[str, object]]:
    """:func:`check_row` for every row of a measurements CSV (the shared table's columns,
    :data:`TABLE_COLUMNS`)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Problem("--check", path, f"cannot be read ({exc})",
                                  "give a CSV file of measurements")]) from None
    missing = [c for c in ("id", "metric", "measured", "gpu", "model", "precision", "gpus")
               if rows and c not in rows[0]]
    if not rows or missing:
        raise InputError([Problem("--check", path, "has no rows" if not rows else
                                  f"has no column {', '.join(missing)}",
                                  f"its header names {', '.join(TABLE_COLUMNS)}")])
    out, problems = check_rows(rows, path)
    if len(problems) == len(rows):  # nothing to show: the first problem is the message
        raise InputError([Problem("--check", path, "has no row that can be computed: "
                                  + problems[0])])
    return out


def prefill_tps_per_gpu(setup: Setup, prompt_tokens: float, mode: str = "attainable") -> float:
    """Prompt tokens per second per GPU [tokens/s]: one ÷ the GPU-seconds of a prompt token's
    arithmetic (dense part, routed experts, attention at half the prompt) at the peaks of the
    setup's precisions, × the achievable MFUs when attainable (compute bound: a prefill chunk
    shares its weight reads among its tokens)."""
    mode = _mode(mode)
    s, m, g = setup, setup.model, setup.gpu
    attention, rest = s._dense_parts(total=False)
    attainable = mode == "attainable"
    parts = ((2 * (attention + rest), activation_tflops(g, s.dense_precision), "dense_mfu"),
             (2 * m.routed_active_params, activation_tflops(g, s.expert_compute), "moe_mfu"),
             (float(roofline.attention_flops_for(m, prompt_tokens / 2)),
              g.fp8_tflops if s._bytes[2] <= 1 else g.bf16_tflops, "attention_mfu"))
    seconds = sum(flops / (peak * TERA * (_c(mfu) if attainable else 1.0))
                  for flops, peak, mfu in parts)
    return 1 / seconds


def gpu_seconds_per_token(setup: Setup, batch: float, context: float,
                          prompt_tokens: float) -> tuple[float, float]:
    """GPU-seconds one prompt token and one output token take at a run's batch (attainable):
    (prefill, decode) [GPU-s/token].

    Decode: a step of ``batch`` sequences of ``context`` tokens (:func:`step`) on every GPU of
    the replica, ÷ the tokens it yields. Prefill: the prompt token's arithmetic at the
    achievable MFUs (dense, routed experts, attention at half the prompt) — compute bound, its
    weight reads shared by a whole prefill chunk. Their ratio splits a run's GPU time between
    input and output tokens without its TTFT, which holds queueing.
    """
    decode = step(setup, batch, context, "attainable").step_s * setup.gpus / (
        batch * setup.speculative)
    return 1 / prefill_tps_per_gpu(setup, prompt_tokens), decode
''',
    'tokenfactory_xl.core.number_text': r'''"""Numbers a person typed as text, read the one way they can mean, or refused saying why.

A number reaches the model as text from many hands: ``--set opex_per_gpu_hour=0,150`` typed by
a user of a German Excel, ``32 000`` pasted from a French report (with a narrow no-break space
between the thousands), ``1,00,000`` from an Indian one, ``2,7648E+06`` from a scientific format
with a decimal comma, a cell of a returned workbook typed as text. This module is the one reader
of all of them: the sites file, ``--set``, the inputs of a returned workbook (``refresh``,
``collect``) and the sites file ``actuals`` updates.

:func:`shape` tells what a number's separators can mean:

=========  =====================================================  ==========================
shape      examples                                               reads as
=========  =====================================================  ==========================
plain      ``1024``, ``32 000``, ``1'000``                        its digits
comma      ``0,150``, ``1,5``, ``1.234,5``, ``1.234.567``         a decimal comma
point      ``0.65``, ``1,234.5``, ``1,234,567``, ``1,00,000``     a decimal point
dot?       ``40.000``                                             40 or 40000: ambiguous
comma?     ``1,100``                                              1.1 or 1100: ambiguous
=========  =====================================================  ==========================

Groups of three digits may be separated by spaces (any of the no-break spaces too) or
apostrophes; the separator after them is then the decimal one. In scientific notation
(``2,7648E+06``) the one separator of the mantissa is the decimal one: no program writes
thousands there. :func:`read` turns text into a float given the decimal separator when it is
known (a file's own convention), and otherwise refuses an ambiguous number naming both readings.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import TokenFactoryError

#: Characters that separate groups of three digits besides ``,`` and ``.``: the space, the
#: no-break space (U+00A0), the narrow no-break space (U+202F, what a French Excel writes), the
#: thin and figure spaces (U+2009, U+2007), and the apostrophes of Swiss usage.
GROUP_SPACES = " \u00a0\u202f\u2009\u2007'\u2019"

_NUMBER = re.compile(r"^([+-]?)([\d.,]*\d[\d.,]*|[\d.,]*[.,])((?:[eE][+-]?\d+)?)(%?)$")
_SPACED = re.compile(rf"^\d{{1,3}}(?:[{GROUP_SPACES}]\d{{3}})+(?:[.,]\d*)?$")
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\d+$"), "plain"),
    (re.compile(r"^\d{1,3}(\.\d{3})+,\d*$|^\d{1,3}(\.\d{3}){2,}$"), "comma"),
    (re.compile(r"^\d{1,3}(,\d{3})+\.\d*$|^\d{1,3}(,\d{3}){2,}$"), "point"),
    # Indian grouping: thousands, then lakhs and crores in twos (1,00,000 = 100,000)
    (re.compile(r"^\d{1,2}(,\d{2})+,\d{3}(\.\d*)?$"), "point"),
    (re.compile(r"^[1-9]\d{0,2}\.\d{3}$"), "dot?"),      # 40.000: 40 or 40 000
    (re.compile(r"^[1-9]\d{0,2},\d{3}$"), "comma?"),    # 1,100: 1 100 or 1.1
    (re.compile(r"^\d*\.\d*$"), "point"),
    (re.compile(r"^\d*,\d*$"), "comma"),
)


class NumberShape(NamedTuple):
    """A number typed as text, taken apart: ``sign``, the digits and separators of ``core``,
    the ``exponent`` (``"E+06"`` or ``""``), ``percent`` (``"%"`` or ``""``) and its ``shape``
    (see the module's table; ``"other"`` when its separators fit no convention)."""

    sign: str
    core: str
    exponent: str
    percent: str
    shape: str


class NumberTextError(TokenFactoryError, ValueError):
    """Text that is no number, or reads two ways: ``reason`` says why, ``fix`` what to type,
    ``readings`` the two numbers an ambiguous text can be (else empty)."""

    def __init__(self, reason: str, fix: str = "", readings: tuple[str, ...] = ()):
        super().__init__(reason)
        self.reason, self.fix, self.readings = reason, fix, readings


#: Signs a word processor or a report writes for the minus: the minus sign U+2212 and the en
#: dash; and the apostrophe Excel shows nowhere but keeps before a number typed as text.
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})


def shape(text: str) -> NumberShape | None:
    """How ``text`` is written as a number, or ``None`` when it is not one at all."""
    compact = text.strip().translate(_MINUS)
    if compact.startswith("'") and compact[1:2].isdigit():
        compact = compact[1:]
    match = _NUMBER.match(re.sub(rf"[{GROUP_SPACES}]", "", compact))
    if not match:
        return None
    sign, core, exponent, percent = match.groups()
    spaced = compact.lstrip("+-").rstrip("%")
    if exponent:
        spaced = spaced[: -len(exponent)]
    if any(c in GROUP_SPACES for c in spaced.strip()):
        # spaces or apostrophes group the thousands: only whole groups of three, and what
        # follows the last group is the decimal separator
        if not _SPACED.match(spaced.strip()):
            return NumberShape(sign, core, exponent, percent, "other")
        decimal = next((c for c in core if c in ".,"), "")
        kind = {"": "plain", ",": "comma", ".": "point"}[decimal]
        return NumberShape(sign, core, exponent, percent, kind)
    if exponent and core.count(",") + core.count(".") == 1:
        return NumberShape(sign, core, exponent, percent, "comma" if "," in core else "point")
    kind = next((name for pattern, name in _SHAPES if pattern.match(core)), "other")
    if exponent and kind not in ("plain",):
        kind = "other"   # thousands separators in a mantissa: no program writes that
    return NumberShape(sign, core, exponent, percent, kind)


def as_read(number: NumberShape, decimal: str) -> str:
    """``number`` written as Python reads it, ``decimal`` being its decimal separator."""
    thousands = "." if decimal == "," else ","
    core = number.core.replace(thousands, "").replace(decimal, ".")
    return number.sign + core + number.exponent + number.percent


def two_readings(text: str) -> tuple[str, str] | None:
    """The two readings of a number typed as text that reads two ways (``"1,100"`` →
    ``("1100", "1.100")``: thousands separator, or decimal separator), or ``None`` when it reads
    one way (or is no number)."""
    number = shape(text)
    if number is None or number.shape not in ("dot?", "comma?"):
        return None
    separator_is_dot = "." in number.core
    return (as_read(number, "," if separator_is_dot else "."),
            as_read(number, "." if separator_is_dot else ","))


def read_number(text: str, decimal: str | None = None) -> tuple[float, bool]:
    """``text`` as a number and whether it ended with ``%`` (the number is not divided by 100).

    ``decimal`` is the decimal separator when the text's source has one convention (a file
    that showed it); ``None`` when nothing says, and then a number that reads two ways is
    refused naming both readings.

    Raises
    ------
    NumberTextError
        not a number, separators no convention writes, ambiguous, or against ``decimal``.
    """
    number = shape(text)
    if number is None:
        raise NumberTextError("is not a number")
    kind = number.shape
    if kind == "other":
        raise NumberTextError(
            "is not a number: its separators fit no way of writing numbers (thousands in groups "
            "of three, or of two then three as in 1,00,000; one decimal separator)",
            "type the number without thousands separators, e.g. 1234.5")
    if kind in ("dot?", "comma?"):
        if decimal is None:
            thousands, decimal_reading = two_readings(text)  # type: ignore[misc]
            separator = "." if "." in number.core else ","
            raise NumberTextError(
                f"is ambiguous: {thousands} if the {separator!r} separates thousands, "
                f"{decimal_reading} if it is the decimal separator",
                f"type {thousands} or {decimal_reading} without a thousands separator",
                (thousands, decimal_reading))
        used = decimal
    elif kind == "plain":
        used = "."
    else:
        used = "," if kind == "comma" else "."
        if decimal is not None and used != decimal:
            raise NumberTextError(
                f"has a decimal {'comma' if used == ',' else 'point'}, but the other numbers "
                f"here have decimal {'points' if decimal == '.' else 'commas'}",
                "write every number with the same decimal separator")
    value = float(as_read(number, used).rstrip("%"))
    return value, bool(number.percent)
''',
    'tokenfactory_xl.core.catalogue': r'''"""The input catalogue: every input of a token-factory site, stated once.

A site is described by the inputs of methodology section 6: the fleet (GPUs, ownership, CapEx),
its running costs (power, PUE, opex), its capacity and efficiency (theoretical and measured
tokens per second), its latency (TTFT p50/p99 against the objective sold), how much of what it
produces it sells, at what prices, and the finance assumptions. Three of them (the TEF target,
the sell-through target and the price decline) take one value per scenario.

This module is the single source of each input's name, label, unit, default, allowed range and
help text. The workbook's Inputs sheet and its data validation, the sites-file schema, the CLI's
``--set`` and every input check are built from :data:`INPUTS`; nothing else restates them.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from . import names, number_text
from .errors import TokenFactoryError

#: The scenarios, in the order of every per-scenario value.
SCENARIO_NAMES: tuple[str, ...] = ("Base", "Optimised", "Downside")

Kind = Literal["number", "integer", "fraction", "text", "choice", "date", "currency"]

#: What the parsers return for an empty cell or an absent value: the caller takes the default.
MISSING = None



#: The largest magnitude of a number input [its unit]: a double holds 15 to 16 significant
#: digits, so sums of figures beyond this (a fleet of a million GPUs at such a price, over 120
#: months) lose their cents, and at 1e308 they overflow to a blank NPV.
MAX_MAGNITUDE = 1e12


class CheckedNumber(float):
    """A number already checked against its input (what a checked site hands back when one of
    its values changes): taken as it is, never read as a percentage typed without its sign."""


class BadValue(TokenFactoryError, ValueError):
    """A single value is not allowed: ``message`` says why, ``fix`` what to enter instead."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.message = message
        self.fix = fix


@dataclass(frozen=True)
class Input:
    """One input of the site schema (methodology section 6).

    ``low``/``high`` bound numbers (``low_open`` makes the lower bound strict: "> 0").
    ``default`` is one value, or a tuple with one value per scenario when ``per_scenario``.
    """

    name: str
    label: str
    unit: str
    group: str
    kind: Kind
    default: object
    description: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    per_scenario: bool = False
    max_length: int = 80
    optional: bool = False  # blank is allowed and means "not given" (the default is None)

    # -- what is allowed, in words ------------------------------------------------------------
    @property
    def allowed(self) -> str:
        """What is allowed, as a sentence fragment for messages and data-validation prompts."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "date":
            return "a date on the first of a month, e.g. 2027-01-01"
        if self.kind == "currency":
            return "a three-letter ISO 4217 currency code such as USD or EUR"
        if self.kind == "text":
            return f"text of 1 to {self.max_length} characters"
        noun = {"integer": "a whole number", "fraction": "a fraction"}.get(self.kind, "a number")
        if self.low is not None and self.high is not None:
            text = f"{noun} from {fmt_number(self.low)} to {fmt_number(self.high)}"
        elif self.low is not None:
            above = "above" if self.low_open else "of at least"
            text = f"{noun} {above} {fmt_number(self.low)}"
        else:
            text = noun
        if self.kind == "fraction":
            text += " (e.g. 0.65 or 65%)"
        if self.optional:
            text += ", or blank"
        return text

    def default_for(self, scenario: str) -> object:
        """The default value, for ``scenario`` when the input is per-scenario."""
        if self.per_scenario:
            return self.default[SCENARIO_NAMES.index(scenario)]  # type: ignore[index]
        return self.default

    # -- checking one value -------------------------------------------------------------------
    def parse(self, value: object) -> object:
        """Return ``value`` as the model uses it, or raise :class:`BadValue`.

        Empty text and ``None`` return :data:`MISSING`. Numbers may come as text (``"1,024"``,
        ``"65%"`` for a fraction), dates as ISO text; choices match without regard to case.
        """
        if value is None or (isinstance(value, str) and value.strip() == ""):
            return MISSING
        if self.kind in ("number", "integer", "fraction"):
            return self._parse_number(value)
        if self.kind == "date":
            return self._parse_date(value)
        text = names.normal(_as_text(value))  # one name however it was composed (NFC)
        hidden = names.problem(text)
        if hidden:
            raise BadValue(hidden, "type it again without them")
        if self.kind == "choice":
            for choice in self.choices:
                if text.lower() == choice.lower():
                    return choice
            raise BadValue(f"must be {self.allowed}", _did_you_mean(text, self.choices))
        if self.kind == "currency":
            code = text.upper()
            if not re.fullmatch(r"[A-Z]{3}", code):
                raise BadValue(f"must be {self.allowed}")
            return code
        if len(text) > self.max_length:
            raise BadValue(
                f"is {len(text)} characters long; allowed: {self.allowed}",
                f"shorten it to {self.max_length} characters",
            )
        return text

    def _parse_number(self, value: object) -> float | int:
        percent = False
        if isinstance(value, bool):
            raise BadValue(f"is TRUE/FALSE, not a number; allowed: {self.allowed}")
        if isinstance(value, str):
            number, percent = self._read_text(value)
            if percent:
                if self.kind != "fraction":
                    raise BadValue(f"is a percentage, but this input is {self.allowed}")
                number /= 100
        elif isinstance(value, (int, float)) or hasattr(value, "__float__"):
            try:
                number = float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise BadValue(f"is not a number; allowed: {self.allowed}") from None
            except OverflowError:
                raise BadValue(f"is too large for a number; allowed: {self.allowed}") from None
        else:
            raise BadValue(f"is not a number; allowed: {self.allowed}")
        if math.isnan(number):
            raise BadValue(f"is not a number (NaN); allowed: {self.allowed}")
        if math.isinf(number):
            raise BadValue(f"is infinite or too large for a number; allowed: {self.allowed}")
        if abs(number) > MAX_MAGNITUDE:
            raise BadValue(f"is too large: the model computes to the cent only with figures up "
                           f"to {fmt_number(MAX_MAGNITUDE)} (beyond, a sum of them overflows "
                           "or loses its cents); allowed: " + self.allowed,
                           "check the unit (per GPU, per hour, per month)")
        if (self.kind == "fraction" and not percent and 1 < number <= 100
                and not isinstance(value, CheckedNumber)):
            # A share or a rate typed as a whole percentage: 5 for 5 %. Where the range allows
            # such a number (growth of up to 1,000 % a quarter) it is still refused unmarked:
            # "5" is far likelier to be 5 % than 500 %.
            shown, fraction = fmt_number(number), fmt_number(number / 100)
            fix = f"enter {shown}% or {fraction}"
            if self.high is not None and number <= self.high:
                whole = fmt_number(number * 100)
                fix += f" (type {whole}% if {whole} % is meant)"
            raise BadValue("looks like a percentage", fix)
        if (
            self.unit == "years"
            and self.high is not None
            and number > self.high
            and (self.low is None or number / 12 >= self.low)
            and number / 12 <= self.high
            and number % 6 == 0
        ):
            # 48 typed for a life of 4 years: a number of months where years belong (a whole
            # or half year of months; 31 for a 30-year limit is no such slip)
            years = fmt_number(round(number / 12, 4))
            raise BadValue(f"looks like months; allowed: {self.allowed}",
                           f"enter {years} (years: {fmt_number(number)} months is {years} years)")
        if self.kind == "integer" and not number.is_integer():
            raise BadValue(f"must be {self.allowed}", f"enter a whole number, e.g. {round(number)}")
        too_low = self.low is not None and (
            number <= self.low if self.low_open else number < self.low
        )
        too_high = self.high is not None and number > self.high
        if too_low or too_high:
            raise BadValue(f"is out of range; allowed: {self.allowed}")
        return int(number) if self.kind == "integer" else number

    def _read_text(self, text: str) -> tuple[float, bool]:
        """A number typed as text, by :func:`number_text.read` (no decimal convention known:
        a number that reads two ways is refused, unless only one reading is a whole number
        and the input takes whole numbers: ``1,024`` GPUs)."""
        if text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):
            return float(text), False   # refused below, by name
        if names.HIDDEN.search(text):
            raise BadValue(f"is not a number: it contains {names.hidden(text)}, which does not "
                           "show, so the number cannot be read as it looks",
                           "type the number again")
        try:
            return number_text.read_number(text)
        except number_text.NumberTextError as exc:
            if exc.readings and self.kind == "integer":
                whole = [r for r in exc.readings if float(r.rstrip("%")).is_integer()]
                if len(whole) == 1:
                    return float(whole[0].rstrip("%")), whole[0].endswith("%")
            allowed = f"; allowed: {self.allowed}" if not exc.readings else ""
            raise BadValue(f"{exc.reason}{allowed}", exc.fix) from None

    def _parse_date(self, value: object) -> _dt.date:
        if isinstance(value, _dt.datetime):
            if value.time() != _dt.time(0):
                raise BadValue(f"has a time of day; allowed: {self.allowed}")
            day = value.date()
        elif isinstance(value, _dt.date):
            day = value
        elif isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}([ T]00:00(:00)?)?", text):
                text = text[:10]
            try:
                day = _dt.date.fromisoformat(text)
            except ValueError:
                raise BadValue(f"is not a date; allowed: {self.allowed}") from None
        else:
            raise BadValue(f"is not a date; allowed: {self.allowed}")
        if day.day != 1:
            raise BadValue(
                f"is not the first of a month; allowed: {self.allowed}",
                f"enter {day.replace(day=1).isoformat()}",
            )
        return day


def fmt_number(x: float) -> str:
    """A number as a finance user writes it: ``1,000,000``, ``0.99``, ``2.5``."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.10g}" if abs(x) >= 1000 else f"{x:.10g}"


def _as_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _did_you_mean(word: str, options: Sequence[str]) -> str:
    lowered = {o.lower(): o for o in options}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.5)
    return f"did you mean {lowered[close[0]]}?" if close else ""


#: Names users reach for that the model derives: what to set instead.
DERIVED_FROM: dict[str, str] = {
    "sla": "availability and ttft_p50_ms / ttft_p99_ms / ttft_slo_ms",
    "slo_attainment": "ttft_p50_ms, ttft_p99_ms and ttft_slo_ms",
    "tef": "measured_tps ÷ (gpus × theoretical_tps_per_gpu); tef_target for the target",
    "tef_now": "measured_tps ÷ (gpus × theoretical_tps_per_gpu)",
    "tfi": "TEF × SLA × sell-through",
    "sell_through": "sell_through_start and sell_through_target",
    "blended_price": "the price_* inputs, output_share, cache_hit_rate and the batch inputs",
    "price_per_mtok": "the price_* inputs, output_share, cache_hit_rate and the batch inputs",
    "capex": "gpus × capex_per_gpu",
}


def closest_name(word: str, names: Sequence[str] | None = None) -> str:
    """The name nearest to ``word`` among ``names`` (default: the inputs' names), for unknown
    columns and ``--set`` names; ``""`` when none is close."""
    base = word.split(".", 1)[0]
    known = [i.name for i in INPUTS] if names is None else list(names)
    close = difflib.get_close_matches(base.lower(), known, n=1, cutoff=0.6)
    return close[0] if close else ""


#: What ``name_fix`` says when no name is close to the word: where the names are listed.
LISTED = "`tokenfactory-xl inputs` lists the names"


def name_fix(word: str, names: Sequence[str] | None = None, otherwise: str = LISTED) -> str:
    """The fix for a name that is not known: the name meant when one is close
    (:func:`closest_name`), else ``otherwise``; and, when the word holds letters the names never
    do (the names are plain ASCII), each of them named: a Cyrillic ``а`` looks like ``a`` but is
    another letter, which no reader of the message could otherwise see."""
    import unicodedata

    hint = closest_name(word, names)
    fix = f"did you mean {hint}?" if hint else otherwise
    odd = [c for c in dict.fromkeys(word.split(".", 1)[0]) if ord(c) > 127]
    if odd:
        shown = ", ".join(f"{c} ({unicodedata.name(c, f'U+{ord(c):04X}')})" for c in odd)
        fix += (f" (it holds {shown}, which no name holds: retype it in plain letters)")
    return fix


_S, _F, _C, _L, _M, _P, _X = (
    "Site",
    "Fleet and costs",
    "Capacity and efficiency",
    "Latency and SLA",
    "Sell-through",
    "Prices",
    "Finance",
)
_D = "Demand and contracts"

#: Every input, in the order of the workbook's Inputs sheet and of a sites file.
INPUTS: tuple[Input, ...] = (
    Input("site_name", "Site name", "text", _S, "text", "Example site",
          "The site; also the workbook's file name when batch-generated."),
    Input("currency", "Currency", "ISO 4217", _S, "currency", "USD",
          "Label for every money figure; no conversion is done."),
    Input("start_date", "Start date", "date", _S, "date", _dt.date(2027, 1, 1),
          "Month 1 of the timeline; the first of a month."),
    Input("horizon_months", "Horizon", "months", _S, "integer", 60,
          "Length of the monthly timeline.", low=1, high=120),
    Input("scenario", "Live scenario", "scenario", _S, "choice", "Base",
          "The scenario the model computes.", choices=SCENARIO_NAMES),
    Input("gpus", "GPUs", "GPUs", _F, "integer", 1024,
          "GPUs in the fleet.", low=1, high=1_000_000),
    Input("gpu_model", "GPU model", "text", _F, "text", "H200",
          "Label, and the GPU catalogue key where one exists."),
    Input("ownership", "Ownership", "own / rent", _F, "choice", "own",
          "Owned fleets have CapEx and depreciation; rented ones pay rent.",
          choices=("own", "rent")),
    Input("capex_per_gpu", "CapEx per GPU", "money/GPU", _F, "number", 40_000,
          "All-in cost per GPU: server, network, installation share.", low=0),
    Input("salvage_per_gpu", "Salvage per GPU", "money/GPU", _F, "number", 0,
          "The floor of a GPU's resale value (scrap), received when its cohort is sold (at "
          "most the CapEx).",
          low=0),
    Input("life_years", "Depreciation life", "years", _F, "number", 4,
          "Straight-line depreciation life.", low=1, high=10),
    Input("rent_per_gpu_hour", "Rent per GPU-hour", "money/GPU-h", _F, "number", 2.00,
          "Rent paid per GPU-hour when the fleet is rented.", low=0),
    Input("power_kw_per_gpu", "Power per GPU", "kW", _F, "number", 1.0,
          "Draw per GPU including its share of the server.", low=0, high=5),
    Input("pue", "PUE", "ratio", _F, "number", 1.3,
          "Data-centre power usage effectiveness.", low=1, high=3),
    Input("electricity_per_kwh", "Electricity price", "money/kWh", _F, "number", 0.08,
          "Price of one kWh.", low=0, high=2),
    Input("opex_per_gpu_hour", "Other opex per GPU-hour", "money/GPU-h", _F, "number", 0.15,
          "Staff, colocation, network, software.", low=0),
    Input("fixed_opex_per_month", "Fixed opex per month", "money/month", _F, "number", 0,
          "Site overheads.", low=0),
    Input("theoretical_tps_per_gpu", "Theoretical TPS per GPU", "tokens/s", _C, "number", 10_000,
          "Full-load capacity of one GPU at its best configuration (the TEF denominator).",
          low=0, low_open=True),
    Input("measured_tps", "Measured TPS (cluster)", "tokens/s", _C, "number", 3_072_000,
          "Measured cluster throughput while the service is up (the TEF numerator).", low=0),
    Input("tef_target", "TEF target", "fraction", _C, "fraction", (0.30, 0.65, 0.30),
          "TEF reached after the ramp.", low=0, high=1, per_scenario=True),
    Input("tef_ramp_months", "TEF ramp", "months", _C, "integer", 6,
          "Months of linear ramp from TEF now to the target.", low=0, high=120),
    Input("availability", "Availability", "fraction", _L, "fraction", 0.995,
          "Share of hours the service is up.", low=0, high=1),
    Input("ttft_p50_ms", "TTFT p50", "ms", _L, "number", 400,
          "Measured median time to first token.", low=0, low_open=True),
    Input("ttft_p99_ms", "TTFT p99", "ms", _L, "number", 1500,
          "Measured 99th-percentile time to first token (above the p50).", low=0,
          low_open=True),
    Input("ttft_slo_ms", "TTFT objective", "ms", _L, "number", 2000,
          "The time-to-first-token objective sold to customers.", low=0, low_open=True),
    Input("sell_through_start", "Sell-through today", "fraction", _M, "fraction", 0.50,
          "Tokens billed / tokens produced today; the ramp starts from it.", low=0, high=1),
    Input("sell_through_target", "Sell-through target", "fraction", _M, "fraction",
          (0.80, 0.85, 0.60), "Sell-through reached after the ramp.", low=0, high=1,
          per_scenario=True),
    Input("sell_through_ramp_months", "Sell-through ramp", "months", _M, "integer", 12,
          "Months of linear ramp from today's sell-through to the target.", low=0, high=120),
    Input("price_input_per_mtok", "Input price", "money/Mtok", _P, "number", 0.28,
          "Price of a million uncached input tokens.", low=0),
    Input("price_cached_input_per_mtok", "Cached input price", "money/Mtok", _P, "number", 0.07,
          "Price of a million input tokens served from the prompt cache.", low=0),
    Input("price_output_per_mtok", "Output price", "money/Mtok", _P, "number", 1.10,
          "Price of a million output tokens.", low=0),
    Input("output_share", "Output share", "fraction", _P, "fraction", 0.25,
          "Output tokens / all tokens.", low=0, high=1),
    Input("cache_hit_rate", "Cache-hit rate", "fraction", _P, "fraction", 0.50,
          "Share of input tokens served from the prompt cache.", low=0, high=1),
    Input("batch_share", "Batch share", "fraction", _P, "fraction", 0.20,
          "Share of tokens sold as batch work.", low=0, high=1),
    Input("batch_discount", "Batch discount", "fraction", _P, "fraction", 0.50,
          "Discount on batch work (50% for work done within 24 hours).", low=0, high=1),
    Input("decline_per_quarter", "Price decline per quarter", "fraction", _P, "fraction",
          (0.10, 0.10, 0.25), "Share by which prices fall each quarter.", low=0, high=0.99,
          per_scenario=True),
    Input("discount_rate", "Discount rate", "fraction/year", _X, "fraction", 0.10,
          "Yearly discount rate for the NPV.", low=0, high=1),
    Input("tax_rate", "Tax rate", "fraction", _X, "fraction", 0.25,
          "Tax on each calendar year's taxable profit after the losses carried forward.",
          low=0, high=1),
    Input("prefill_tps_per_gpu", "Prefill TPS per GPU", "tokens/s", _C, "number", None,
          "Full-load prompt (prefill) tokens per second per GPU; with the decode TPS it sets "
          "the theoretical TPS per GPU as their blend at the output share.", low=0,
          low_open=True, optional=True),
    Input("decode_tps_per_gpu", "Decode TPS per GPU", "tokens/s", _C, "number", None,
          "Full-load output (decode) tokens per second per GPU.", low=0, low_open=True,
          optional=True),
    Input("retire_month", "Retire month", "month", _F, "integer", None,
          "Last month in service of the site's own GPUs (cohort 1); blank: to the horizon.",
          low=1, high=120, optional=True),
    Input("residual_share", "Residual share", "fraction", _F, "fraction", 1.0,
          "What a buyer pays when a cohort is sold or valued at the horizon: with the market "
          "method a share of the new price, with the book method a share of the "
          "undepreciated value above salvage.", low=0, high=1),
    Input("residual_method", "Residual value method", "market / book", _F, "choice", "market",
          "How a cohort sold, or still held at the horizon, is valued: market (its resale "
          "price, falling each quarter) or book (its net book value).",
          choices=("market", "book")),
    Input("resale_decline_per_quarter", "Resale price decline per quarter", "fraction", _F,
          "fraction", (0.10, 0.10, 0.15),
          "Share by which a used GPU's resale price falls each quarter (market method).",
          low=0, high=0.99, per_scenario=True),
    Input("shutdown_month", "Shutdown month", "month", _F, "integer", (None, None, None),
          "Last month any GPU runs in the scenario; every cohort is sold then, a cohort due "
          "later is never bought. Blank: no shutdown.", low=1, high=120, per_scenario=True,
          optional=True),
    Input("market_mtok_month1", "Market demand, month 1", "Mtok/month", _D, "number", 0,
          "Market demand in month 1 in million tokens; 0 = the market takes whatever is "
          "offered.", low=0),
    Input("market_growth_per_quarter", "Market growth per quarter", "fraction", _D, "fraction",
          (0.30, 0.30, 0.10), "Growth of market demand each quarter (−0.99 to 10).",
          low=-0.99, high=10, per_scenario=True),
    Input("price_factor", "Price factor", "ratio", _D, "number", (1.0, 1.0, 0.9),
          "Multiplies today's blended market price.", low=0, high=10, per_scenario=True),
    Input("contract_mtok_per_month", "Contracted tokens", "Mtok/month", _D, "number", 0,
          "Million tokens a month contracted ahead, sold before the market.", low=0),
    Input("contract_price_per_mtok", "Contract price", "money/Mtok", _D, "number", 0.25,
          "Price of contracted tokens, fixed for the contract's term.", low=0),
    Input("contract_months", "Contract term", "months", _D, "integer", 0,
          "Months of the contract from month 1.", low=0, high=120),
    Input("programme_cost_once", "Programme cost, one-off", "money", _X, "number", (0, 0, 0),
          "One-off cost of the optimisation programme, paid in month 1.", low=0,
          per_scenario=True),
    Input("programme_fee_per_month", "Programme fee per month", "money/month", _X, "number",
          (0, 0, 0), "Running cost of the optimisation programme.", low=0, per_scenario=True),
    Input("debt_share", "Debt share", "fraction", _X, "fraction", 0,
          "Share of each owned cohort's CapEx borrowed when it is paid.", low=0, high=0.9),
    Input("debt_rate", "Debt rate", "fraction/year", _X, "fraction", 0.08,
          "Nominal yearly interest rate (monthly: ÷ 12).", low=0, high=1),
    Input("debt_tenor_months", "Debt tenor", "months", _X, "integer", 48,
          "Months of annuity repayments, from the month after the drawdown.", low=1, high=120),
    Input("dscr_covenant", "DSCR covenant", "ratio", _X, "number", 1.20,
          "The lowest yearly DSCR the lenders accept; a year below it is a warning.", low=0,
          high=10),
    Input("power_escalation_per_year", "Power price escalation", "fraction/year", _X,
          "number", 0.02,
          "Yearly growth of the electricity price, compounded month by month from month 1 "
          "(nominal, like the discount rate).", low=-0.5, high=1),
    Input("opex_escalation_per_year", "Opex escalation", "fraction/year", _X, "number", 0.02,
          "Yearly growth of the opex per GPU-hour, the fixed opex and the programme fee "
          "(rent is a contract price: not escalated).", low=-0.5, high=1),
    Input("receivable_days", "Receivable days", "days", _X, "number", 30,
          "Days of revenue customers owe at a month's end (working capital).", low=0,
          high=365),
    Input("payable_days", "Payable days", "days", _X, "number", 30,
          "Days of power, opex, rent and programme cost owed to suppliers at a month's end.",
          low=0, high=365),
    Input("capex_deposit_share", "CapEx deposit share", "fraction", _X, "fraction", 0,
          "Share of a cohort's CapEx paid as a deposit ahead of delivery, funded by equity.",
          low=0, high=1),
    Input("capex_lead_months", "CapEx deposit lead", "months", _X, "integer", 0,
          "Months before the delivery payment (the month before online) the deposit is paid "
          "(never before month 0).", low=0, high=120),
    Input("tax_life_years", "Tax depreciation life", "years", _X, "number", None,
          "Straight-line life of every cohort for tax; blank: each cohort's own "
          "depreciation life.", low=1, high=30, optional=True),
)


# -- risk and tornado ranges around the live case (methodology §10.6) -----------------------------
@dataclass(frozen=True)
class RiskRange:
    """A driver's default range around its live value v: ``factor`` (v × low … v × high) or
    ``offset`` (v + low … v + high)."""

    driver: str
    how: Literal["factor", "offset"]
    low: float
    high: float


#: The drivers the tornado flexes, in the spec's order; the Monte Carlo draws the first nine.
RISK_RANGES: tuple[RiskRange, ...] = (
    RiskRange("tef_target", "factor", 0.75, 1.10),
    RiskRange("sell_through_target", "factor", 0.90, 1.10),
    RiskRange("price_factor", "factor", 0.85, 1.15),
    RiskRange("decline_per_quarter", "offset", -0.05, 0.05),
    RiskRange("market_growth_per_quarter", "factor", 0.5, 1.5),
    RiskRange("capex_per_gpu", "factor", 0.85, 1.15),
    RiskRange("electricity_per_kwh", "factor", 0.75, 1.25),
    RiskRange("resale_decline_per_quarter", "factor", 0.5, 1.5),
    RiskRange("market_mtok_month1", "factor", 0.7, 1.3),
    RiskRange("availability", "offset", -0.005, 0.005),
    RiskRange("discount_rate", "offset", -0.02, 0.02),
    RiskRange("life_years", "factor", 0.8, 1.2),
)
_RANGE_GROUP = "Risk and tornado ranges"
_INPUT_LABELS = {i.name: i.label for i in INPUTS}


def _range_input(r: RiskRange, side: str) -> Input:
    label = _INPUT_LABELS[r.driver]
    value = r.low if side == "low" else r.high
    if r.how == "factor":
        return Input(f"range_{side}_{r.driver}", f"{label}: {side} (× live value)", "factor",
                     _RANGE_GROUP, "number", value,
                     f"The {side} end of {r.driver}'s range for the tornado and the Monte Carlo, "
                     f"as a factor of the live value (v × {value:g}).", low=0, high=10)
    return Input(f"range_{side}_{r.driver}", f"{label}: {side} (+ live value)", "offset",
                 _RANGE_GROUP, "number", value,
                 f"The {side} end of {r.driver}'s range for the tornado and the Monte Carlo, "
                 f"added to the live value (v {value:+g}).", low=-1, high=1)


INPUTS += tuple(_range_input(r, side) for r in RISK_RANGES for side in ("low", "high"))
BY_NAME: dict[str, Input] = {i.name: i for i in INPUTS}

#: The input groups, in the order they appear.
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(i.group for i in INPUTS))

# -- the fleet's cohorts (methodology §4.1, §6 "Cohorts") ------------------------------------------
#: The workbook's fleet block has room for this many cohorts, cohort 1 being the site's columns.
MAX_COHORTS = 8

#: The columns of a cohort row that take the site's own value when left blank.
COHORT_INHERITED: tuple[str, ...] = (
    "gpu_model", "ownership", "capex_per_gpu", "salvage_per_gpu", "life_years",
    "rent_per_gpu_hour", "power_kw_per_gpu", "theoretical_tps_per_gpu")

_Q = "Fleet"
#: Every column of a cohort row (cohorts 2…8), in the order of the workbook's fleet block.
COHORT_SPECS: tuple[Input, ...] = (
    Input("cohort", "Cohort", "text", _Q, "text", None,
          "The cohort's name, unique within the site (e.g. \"B200 2028\").", max_length=40),
    Input("online_month", "Online month", "month", _Q, "integer", None,
          "First month in service (1 … horizon); its CapEx is paid the month before.",
          low=1, high=120),
    Input("retire_month", "Retire month", "month", _Q, "integer", None,
          "Last month in service; blank: to the horizon (never taken from the site).",
          low=1, high=120, optional=True),
    Input("gpus", "GPUs", "GPUs", _Q, "integer", None, "GPUs in the cohort.",
          low=1, high=1_000_000),
) + tuple(
    Input(BY_NAME[name].name, BY_NAME[name].label, BY_NAME[name].unit, _Q, BY_NAME[name].kind,
          None, BY_NAME[name].description + " Blank: the site's value.", low=BY_NAME[name].low,
          high=BY_NAME[name].high, low_open=BY_NAME[name].low_open,
          choices=BY_NAME[name].choices, optional=True)
    for name in COHORT_INHERITED)
COHORT_BY_NAME: dict[str, Input] = {c.name: c for c in COHORT_SPECS}
#: Columns a cohort row must give.
COHORT_REQUIRED: tuple[str, ...] = ("cohort", "online_month", "gpus")
''',
    'tokenfactory_xl.addin.params': r'''"""The Excel functions' arguments: one rule and one help text for each argument name.

An argument that is an input of the catalogue takes the catalogue's rule and unit (one source);
the others state theirs here once. The help is what Excel's function wizard shows (cut at
255 characters by Excel, so the first sentence says the unit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..core.catalogue import BY_NAME, Input, fmt_number

#: Excel cuts function and argument descriptions at this many characters.
EXCEL_HELP_LIMIT = 255


# -- the arguments: one rule and one help text for each name ------------------------------------
@dataclass(frozen=True)
class Param:
    """One Excel-function argument: its rule, its help text and (when optional) its default.

    ``rule`` is a catalogue :class:`~tokenfactory_xl.core.catalogue.Input`, so values are checked
    exactly as the site inputs are. ``default`` is a number, the name of another argument whose
    value it takes (``price_cached_input`` defaults to ``price_input``), or ``None`` when the
    argument is required.
    """

    name: str
    rule: Input
    help: str
    default: float | str | None = None

    @property
    def doc(self) -> str:
        """The help Excel shows for this argument: meaning, unit and allowed range."""
        return f"{self.help} ({_range_words(self.rule)})."


def _range_words(rule: Input) -> str:
    """The allowed range of a number rule, short: "at least 0", "1 to 3", "0 to 100%"."""
    def show(x: float) -> str:
        return f"{fmt_number(x * 100)}%" if rule.kind == "fraction" else fmt_number(x)

    if rule.kind in ("text", "choice"):  # a name, or one of a list: say which
        return rule.allowed
    whole = "whole number, " if rule.kind == "integer" else ""
    if rule.low is not None and rule.high is not None:
        return f"{whole}{show(rule.low)} to {show(rule.high)}"
    if rule.low is not None:
        return f"{whole}{'above' if rule.low_open else 'at least'} {show(rule.low)}"
    return "any number"


def _rule(name: str, kind: str = "number", unit: str = "", low: float | None = 0,
          high: float | None = None, low_open: bool = False) -> Input:
    """A number rule for an argument that is not a site input of the catalogue."""
    return Input(name, name, unit, "Excel functions", kind, None, "", low=low, high=high,  # type: ignore[arg-type]
                 low_open=low_open)


def _catalogue(input_name: str, as_name: str) -> Input:
    """The catalogue's rule for a site input, under the argument's name."""
    return dataclasses.replace(BY_NAME[input_name], name=as_name)


def _fraction(name: str) -> Input:
    return _rule(name, "fraction", "fraction", 0, 1)


_TPS = "tokens per second"


_PER_MTOK = "$ per million tokens"


_PER_GPU_H = "$ per GPU-hour"


_FRACTION = "fraction, e.g. 65%"


#: Every argument name used by the functions, with its rule and help. One name, one meaning.
PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("actual_tps", _rule("actual_tps"),
          f"Measured cluster throughput while the service is up, {_TPS}"),
    Param("theoretical_tps", _rule("theoretical_tps"),
          f"What the same cluster would produce fully busy at its best configuration, {_TPS}"),
    Param("tef", _fraction("tef"),
          f"Token Efficiency Factor, actual / theoretical tokens per second, {_FRACTION}"),
    Param("sla", _fraction("sla"),
          f"Share of the period the service is up and meets its latency objective, {_FRACTION}"),
    Param("sell_through", _fraction("sell_through"),
          f"Tokens billed / tokens produced, {_FRACTION}"),
    Param("gpus", _catalogue("gpus", "gpus"), "GPUs in the fleet, a count"),
    Param("tef_now", _fraction("tef_now"), f"Today's Token Efficiency Factor, {_FRACTION}"),
    Param("tef_target", _catalogue("tef_target", "tef_target"),
          f"Token Efficiency Factor after the optimisation, {_FRACTION}"),
    Param("capex_per_gpu", _catalogue("capex_per_gpu", "capex_per_gpu"),
          "All-in cost of one GPU (server, network, installation share), $ per GPU"),
    Param("tokens_paid", _rule("tokens_paid"), "Tokens billed to customers, tokens"),
    Param("tokens_theoretical", _rule("tokens_theoretical"),
          "Tokens the fleet could have produced fully busy over the same period, tokens"),
    Param("tps", _rule("tps"), f"Throughput, {_TPS}"),
    Param("gpu_hour_cost", _rule("gpu_hour_cost"), f"Cost of one GPU-hour, {_PER_GPU_H}"),
    Param("tps_per_gpu", _rule("tps_per_gpu"),
          f"Tokens one GPU makes at full load, {_TPS} per GPU"),
    Param("price_per_mtok", _rule("price_per_mtok"), f"Price of a million tokens, {_PER_MTOK}"),
    Param("util", _fraction("util"),
          f"Utilisation: share of full-load tokens produced and sold (the TFI), {_FRACTION}"),
    Param("tokens_per_day", _rule("tokens_per_day"),
          "Tokens the whole fleet sells in a day, tokens per day"),
    Param("revenue_per_gpu_hour", _rule("revenue_per_gpu_hour"),
          f"Revenue of one GPU-hour, {_PER_GPU_H}"),
    Param("life_years", _catalogue("life_years", "life_years"),
          "Straight-line depreciation life, years"),
    Param("power_kw", _catalogue("power_kw_per_gpu", "power_kw"),
          "Power drawn per GPU including its share of the server, kW"),
    Param("pue", _catalogue("pue", "pue"), "Data-centre power usage effectiveness, a ratio"),
    Param("price_per_kwh", _catalogue("electricity_per_kwh", "price_per_kwh"),
          "Electricity price, $ per kWh"),
    Param("opex_per_gpu_hour", _catalogue("opex_per_gpu_hour", "opex_per_gpu_hour"),
          f"Other opex (staff, colocation, network, software), {_PER_GPU_H}; default 0", 0.0),
    Param("salvage_per_gpu", _catalogue("salvage_per_gpu", "salvage_per_gpu"),
          "Resale value of one GPU at the end of its life, $ per GPU; default 0", 0.0),
    Param("discount_rate", _catalogue("discount_rate", "discount_rate"),
          "Yearly cost of capital the GPU must earn, a fraction; default 0 (straight line, "
          "as Excel's SLN)", 0.0),
    Param("price_input", _catalogue("price_input_per_mtok", "price_input"),
          f"Price of uncached input tokens, {_PER_MTOK}"),
    Param("price_output", _catalogue("price_output_per_mtok", "price_output"),
          f"Price of output tokens, {_PER_MTOK}"),
    Param("output_share", _catalogue("output_share", "output_share"),
          f"Output tokens / all tokens, {_FRACTION}"),
    Param("cache_hit_rate", _catalogue("cache_hit_rate", "cache_hit_rate"),
          f"Share of input tokens served from the prompt cache, {_FRACTION}; default 0", 0.0),
    Param("price_cached_input", _catalogue("price_cached_input_per_mtok", "price_cached_input"),
          f"Price of cache-hit input tokens, {_PER_MTOK}; default price_input", "price_input"),
    Param("batch_share", _catalogue("batch_share", "batch_share"),
          f"Share of tokens sold as batch work, {_FRACTION}; default 0", 0.0),
    Param("batch_discount", _catalogue("batch_discount", "batch_discount"),
          f"Discount on batch work, {_FRACTION}; default 50%", 0.5),
    Param("price_now", _rule("price_now"), f"Today's price, {_PER_MTOK}"),
    Param("decline_per_quarter", _catalogue("decline_per_quarter", "decline_per_quarter"),
          f"Share by which the price falls each quarter, {_FRACTION}"),
    Param("months", _rule("months"), "Months from today, months"),
    Param("cash_cost_per_gpu_hour", _rule("cash_cost_per_gpu_hour"),
          f"Cash cost of one GPU-hour (power and opex, no depreciation), {_PER_GPU_H}"),
    Param("ttft_p50", _catalogue("ttft_p50_ms", "ttft_p50"),
          "Measured median time to first token, ms (any unit, the same for all three)"),
    Param("ttft_p99", _catalogue("ttft_p99_ms", "ttft_p99"),
          "Measured 99th-percentile time to first token, above the median, ms"),
    Param("ttft_slo", _catalogue("ttft_slo_ms", "ttft_slo"),
          "The time-to-first-token objective sold to customers, ms"),
    Param("prefill_tps", _rule("prefill_tps"),
          f"Full-load prefill (input) tokens one GPU reads, {_TPS} per GPU"),
    Param("decode_tps", _rule("decode_tps"),
          f"Full-load decode (output) tokens one GPU writes, {_TPS} per GPU"),
    Param("cash_flows", _rule("cash_flows", low=None),
          "Monthly cash flows, one row or one column, month 0 (the investment) first, $"),
)}


def _excel_help(f: Callable) -> Callable:
    """Collapse the docstring to the one line the function wizard shows.

    Applied innermost, before xlwings' decorators read ``__doc__``.
    """
    f.__doc__ = " ".join((f.__doc__ or "").split())
    return f
''',
    'tokenfactory_xl.addin.cells': r'''"""Excel's cells in and out: what an Excel function receives and what it gives back.

A cell arrives as a number, text, an empty cell (``None``; Pyodide's ``jsnull`` under older
xlwings Lite), an error value, or a range as a list of rows. Each argument is read by its rule
(:mod:`.params`), every value checked, ranges broadcast against each other; the answer is one
value or a range of the same shape, a spreadsheet error (``#DIV/0!``, ``#NUM!``, ``#N/A``) where
the formula has none, and a message naming the argument, the value and what is allowed where
the user typed something wrong (:class:`ArgumentError`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain

import numpy as np
import xlwings as xw

from ..core.catalogue import BadValue, Input
from ..core.errors import Problem, TokenFactoryError
from .params import PARAMS, Param

#: Excel's own error codes, as the strings Office.js turns into real error values.
DIV0, NUM, NA = "#DIV/0!", "#NUM!", "#N/A"


#: Every error value a cell can hold, as xlwings hands it over with ``err_to_str`` (every
#: argument is read that way): an argument's error comes back as the result's error at its
#: position, as Excel's own functions propagate it, instead of reading as an empty cell.
EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A",
                          "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!",
                          "#CONNECT!", "#BUSY!", "#UNKNOWN!", "#DATA!", "#PYTHON!"})


class ArgumentError(TokenFactoryError, xw.XlwingsError, ValueError):
    """An Excel function was given an argument it cannot use; the message says which and why.

    A subclass of ``xlwings.XlwingsError`` so that Office.js runtimes show it as ``#VALUE!``
    with the message and do not retry the call.
    """


# -- the runtime ---------------------------------------------------------------------------------
def runtime() -> str:
    """Which runtime decorated these functions: ``"classic"``, ``"officejs"`` or ``"python"``.

    xlwings binds ``xlwings.func`` to its COM implementation (``xlwings.udfs``) on Windows, to
    its Office.js one under xlwings Lite and xlwings Server, and to a no-op elsewhere.
    """
    module = getattr(xw.func, "__module__", "")
    if module == "xlwings.udfs":
        return "classic"
    if module.startswith("xlwings.pro") or module == "xlwings.server":
        return "officejs"
    return "python"


# -- reading the cells ---------------------------------------------------------------------------
_NUMERIC_TYPES = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


_NUMBER_OR_EMPTY = _NUMERIC_TYPES | {type(None)}


@dataclass
class _Values:
    """One checked argument: ``values`` (numbers, nan where empty; texts for a text rule) and
    ``empty``, both in the argument's own shape."""

    values: np.ndarray
    empty: np.ndarray
    single: bool  # one cell or one number: the call may answer with a plain number
    #: a text argument's distinct parsed texts (None: an empty cell) and, in its shape, each
    #: cell's position among them: what a catalogue look-up reads once per distinct name
    labels: list[object] | None = None
    codes: np.ndarray | None = None
    #: the error value of each cell that holds one (``None`` elsewhere), or ``None`` for none
    errors: np.ndarray | None = None


def _is_jsnull(value: object) -> bool:
    """Pyodide's ``jsnull``: how an empty cell or an omitted argument reaches a function under
    xlwings Lite with an xlwings older than 0.35 on Pyodide 0.28 or later. It reads as empty."""
    return type(value).__name__ == "JsNull"


def _is_error(value: object) -> bool:
    return type(value) is str and value in EXCEL_ERRORS


def _where(index: tuple[int, ...], shape: tuple[int, ...], name: str) -> str:
    """Where in an argument's range an element sits, in the user's words ("row 3 of sla")."""
    if len(shape) == 0 or int(np.prod(shape)) == 1:
        return ""
    if len(shape) == 1:
        return f"item {index[0] + 1} of {name}"
    row, col = index[0] + 1, index[1] + 1
    if shape[1] == 1:
        return f"row {row} of {name}"
    if shape[0] == 1:
        return f"column {col} of {name}"
    return f"row {row}, column {col} of {name}"


def _bad(param: Param, value: object, error: BadValue, where: str = "") -> ArgumentError:
    return ArgumentError(str(Problem(param.name, value, error.message, error.fix, where)))


def _read(param: Param, raw: object) -> _Values:
    """Check one argument (a number, None, a 1-D or 2-D range) and return it as numbers.

    An argument whose rule is text or a choice (a GPU model, a scenario) comes back as an object
    array of the parsed texts instead, ``None`` where empty.
    """
    if param.rule.kind in ("text", "choice", "currency"):
        return _read_text(param, raw)
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "fiu":
        cells = raw.astype(float, copy=False)
        return _check_numbers(param, cells, cells, np.isnan(cells))
    numbers = _rows_of_numbers(raw)
    if numbers is not None:
        empty = np.isnan(numbers)
        if not _outside(param.rule, numbers, empty).any():
            return _Values(numbers, empty, numbers.size == 1)
        # a value the rule refuses: the general path below finds it and names it
    cells = _cells(param, raw)  # numpy keeps the rows of a ragged range as lists: refused
    if set(map(type, cells.ravel())) <= _NUMERIC_TYPES | {type(None)}:
        numbers = cells.astype(float)  # None becomes nan: an empty cell
        return _check_numbers(param, cells, numbers, np.isnan(numbers))
    numbers = np.empty(cells.shape, dtype=float)
    empty = np.zeros(cells.shape, dtype=bool)
    errors = None
    for index, cell in np.ndenumerate(cells):
        if _is_error(cell):
            if errors is None:
                errors = np.full(cells.shape, None, dtype=object)
            errors[index], numbers[index] = cell, np.nan
            continue
        if (isinstance(cell, float) and np.isnan(cell)) or _is_jsnull(cell):
            parsed = None
        else:
            try:
                parsed = param.rule.parse(cell)
            except BadValue as error:
                raise _bad(param, cell, error, _where(index, cells.shape, param.name)) from None
        if parsed is None:
            empty[index], numbers[index] = True, np.nan
        else:
            numbers[index] = float(parsed)  # type: ignore[arg-type]
    return _Values(numbers, empty, cells.size == 1, errors=errors)


def _flat_rows(raw: object) -> tuple[list[object], tuple[int, int]] | None:
    """A range as xlwings hands it over (a list of rows of one length) as the list of its cells
    and its shape; ``None`` for anything else (one value, ragged or nested rows).

    Each step is one pass of C code over the rows or the cells: no array of Python objects.
    """
    if type(raw) is not list or not raw or type(raw[0]) is not list or not raw[0]:
        return None
    width = len(raw[0])
    try:
        cells = list(chain.from_iterable(raw))
        if width == 1:  # every row holds one cell: none is empty, and they add up
            if len(cells) != len(raw) or not all(raw):
                return None
        elif list(map(len, raw)).count(width) != len(raw):
            return None  # rows of different lengths
    except TypeError:  # a row that is a single value
        return None
    return cells, (len(raw), width)


def _rows_of_numbers(raw: object) -> np.ndarray | None:
    """A list of rows holding only numbers and empty cells as a 2-D array of floats (nan where
    empty), converted by numpy at once; ``None`` for anything else."""
    rows = _flat_rows(raw)
    if rows is None:
        return None
    cells, shape = rows
    types = list(map(type, cells))
    if types.count(float) == len(cells):
        return np.fromiter(cells, dtype=float, count=len(cells)).reshape(shape)
    if not set(types) <= _NUMBER_OR_EMPTY:
        return None  # text, TRUE/FALSE, a date …
    return np.array(cells, dtype=float).reshape(shape)


def _cells(param: Param, raw: object) -> np.ndarray:
    cells = np.asarray(raw, dtype=object) if raw is not None else np.array(None, dtype=object)
    if cells.ndim > 2:
        raise ArgumentError(f"{param.name}: give a single cell or a range of rows and columns")
    if set(map(type, cells.ravel())) & {list, tuple, np.ndarray}:
        raise ArgumentError(f"{param.name}: the rows of the range have different lengths; "
                            "give a rectangular range")
    return cells


def _read_text(param: Param, raw: object) -> _Values:
    """A text or choice argument: each distinct cell value parsed once (a column of 100,000 GPU
    names holds a handful), the first bad one named where it sits."""
    rows = _flat_rows(raw)
    if isinstance(raw, np.ndarray) and raw.ndim <= 2:
        flat, shape = raw.reshape(-1).tolist(), raw.shape
    elif rows is None:
        cells = _cells(param, raw)  # one value, or rows that are not a plain range
        flat, shape = cells.reshape(-1).tolist(), cells.shape
    else:
        flat, shape = rows
    keys = flat
    try:
        number = dict.fromkeys(keys)
    except TypeError:  # a cell that is itself a list
        _cells(param, raw)  # says what is wrong
        raise
    if not all(type(key) is str or key is None for key in number):
        if {tuple, np.ndarray} & set(map(type, number)):
            _cells(param, raw)  # a cell that is itself a row: says what is wrong
        # 1, 1.0 and TRUE are equal keys of a dict, and three different cells (no other value
        # equals a text): each cell keyed with its type
        keys = list(zip(map(type, flat), flat, strict=True))
        number = dict.fromkeys(keys)
    mixed = keys is not flat
    labels: list[object] = []
    for key in number:
        value = key[1] if mixed else key
        try:
            labels.append(param.rule.parse(value))
        except BadValue as error:
            index = np.unravel_index(keys.index(key), shape) if shape else ()
            where = _where(tuple(int(i) for i in index), shape, param.name)
            raise _bad(param, value, error, where) from None
        number[key] = len(labels) - 1
    codes = np.fromiter(list(map(number.__getitem__, keys)), dtype=np.intp, count=len(keys))
    texts = np.empty(len(labels), dtype=object)
    texts[:] = labels
    return _Values(np.take(texts, codes).reshape(shape),
                   np.take(np.equal(texts, None), codes).reshape(shape), codes.size == 1, labels,
                   codes.reshape(shape))


def _outside(rule: Input, numbers: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """Where ``numbers`` break the rule (out of range, infinite, a fraction of an integer)."""
    with np.errstate(invalid="ignore"):
        bad = np.isinf(numbers)
        if rule.low is not None:
            bad |= (numbers <= rule.low) if rule.low_open else (numbers < rule.low)
        if rule.high is not None:
            bad |= numbers > rule.high
        if rule.kind == "integer":
            bad |= ~empty & (numbers != np.round(numbers))
    return bad & ~empty


def _check_numbers(param: Param, cells: np.ndarray, numbers: np.ndarray,
                   empty: np.ndarray) -> _Values:
    """Apply the rule to numbers at array speed; the rule's own message for the first failure."""
    rule = param.rule
    bad = _outside(rule, numbers, empty)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        value = cells[index] if cells.ndim else cells.item()
        try:
            rule.parse(value)
        except BadValue as error:
            raise _bad(param, value, error, _where(index, cells.shape, param.name)) from None
        raise ArgumentError(f"{param.name}={value}: not allowed")  # pragma: no cover
    return _Values(numbers, empty, cells.size == 1)


def _shape_of(values: _Values) -> str:
    shape = values.values.shape
    if len(shape) == 2:
        return f"{shape[0]} × {shape[1]}"
    return f"{shape[0]} items" if shape else "1 cell"


# -- answering -----------------------------------------------------------------------------------
def _answer(result: np.ndarray, empty: np.ndarray, single: bool, undefined: str) -> object:
    """The result as Excel takes it: a number, or rows of cells; errors and blanks in place."""
    result = np.asarray(result, dtype=float)
    bad = ~np.isfinite(result) & ~empty
    if single:
        if empty.any():
            return None
        return undefined if bad.any() else float(result.ravel()[0])
    if bad.any() or empty.any():
        result = result.astype(object)
        result[bad] = undefined
        result[empty] = None
    with _no_cycle_collection():
        return result.tolist()


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while a result's rows are made.

    A spilled range is one Python list per row: 100,000 new lists would set off a hundred or more
    collections, each walking every object of the process, for lists that hold only numbers and
    texts and so can form no cycle. The collector's state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _reply_to(error: ArgumentError) -> str:
    """A bad argument, as the runtime shows it best (see the module docstring)."""
    if runtime() == "classic":
        return str(error)  # the cell shows the message, not a COM traceback
    raise error


def _call(formula: Callable[..., object], names: tuple[str, ...], raws: tuple[object, ...],
          undefined: str = DIV0,
          check: Callable[[dict[str, _Values]], None] | None = None,
          checked: bool = False) -> object:
    """Run ``formula`` of the model over the arguments; the shared body of every function.

    Reads and checks each argument (:data:`PARAMS`), fills optional arguments' empty cells with
    their defaults, broadcasts, calls the model once, and answers with :func:`_answer`.
    ``formula`` takes each argument's values, or with ``checked`` its whole :class:`_Values`
    (a catalogue look-up reads a text argument's distinct names once).
    """
    try:
        read = {name: _read(PARAMS[name], raw) for name, raw in zip(names, raws, strict=True)}
        for name, values in read.items():
            default = PARAMS[name].default
            if default is None or not values.empty.any():
                continue
            if isinstance(default, str):  # another argument's value, element by element
                fill, fill_empty = read[default].values, read[default].empty
            else:
                fill, fill_empty = default, np.zeros((), dtype=bool)
            filled = np.where(values.empty, fill, values.values)
            read[name] = _Values(filled, values.empty & fill_empty,
                                 values.single and filled.size == 1, errors=values.errors)
        try:
            shape = np.broadcast_shapes(*(v.values.shape for v in read.values()))
        except ValueError:
            sizes = ", ".join(f"{n} is {_shape_of(v)}" for n, v in read.items()
                              if v.values.size > 1)
            raise ArgumentError(f"the ranges do not fit together ({sizes}); give ranges of "
                                "the same size, or single cells") from None
        if check is not None:
            check(read)
        empty = np.zeros(shape, dtype=bool)
        for name, values in read.items():
            if PARAMS[name].default is None:
                empty |= values.empty
        result = formula(*(read.values() if checked else (v.values for v in read.values())))
        single = all(v.single for v in read.values())
        answer = _answer(np.broadcast_to(np.asarray(result, dtype=float), shape), empty, single,
                         undefined)
        return _with_errors(answer, read.values(), shape, single)
    except ArgumentError as error:
        return _reply_to(error)


def _with_errors(answer: object, values: Iterator[_Values] | object, shape: tuple[int, ...],
                 single: bool) -> object:
    """``answer`` with each position where an argument holds an error value given that error
    (the first argument's, in the order of the arguments), as Excel's functions propagate it."""
    errors = None
    for argument in values:  # type: ignore[union-attr]
        if argument.errors is None:
            continue
        theirs = np.broadcast_to(argument.errors, shape)
        errors = theirs if errors is None else np.where(np.equal(errors, None), theirs, errors)
    if errors is None:
        return answer
    if single:
        return errors.ravel()[0]
    rows = np.asarray(answer, dtype=object).reshape(shape) if shape else np.asarray(answer)
    rows = np.where(np.equal(errors, None), rows, errors)
    return rows.tolist()
''',
    'tokenfactory_xl.addin.udfs': r'''"""The Excel functions: ``=TEF()``, ``=TFI()``, ``=BREAKEVEN_UTIL()`` … for finance teams.

A finance user types ``=TEF(B2,B3)`` and gets the Token Efficiency Factor, or types
``=BREAKEVEN_UTIL(A2:A10001, B2:B10001, 0.25)`` and gets 10,000 breakeven utilisations from one
call that spills down the column. Each function here is a thin adapter: it checks the cells it is
given, calls the formula of :mod:`tokenfactory_xl.core.economics` (methodology sections 1–4) once
over whole arrays, and gives the result back in the shape Excel expects. No formula is stated here.

The same module serves three runtimes through xlwings' decorators ``func``/``arg``/``ret``:
classic xlwings (Windows desktop Excel, through COM and a generated VBA module), Office.js custom
functions (xlwings Lite in Excel for Mac and the web, and xlwings Server), and plain Python
(where the decorators do nothing and the functions are ordinary callables).

Conventions every function follows (the specs functions ``THEORETICAL_TPS``, ``MAX_BATCH``,
``GPU_SPEC``, ``MODEL_SPEC`` are to follow them too):

1. **Names.** The Python function's name is the Excel name (upper case, the spec's words);
   parameters are the spec's names, positional, optional ones last with their default. No
   keyword-only parameters, none named ``caller``, no VBA reserved words (``currency``, ``date``,
   ``type`` …), no type annotations (xlwings reads annotations as converters).
2. **One source.** Each argument name is declared once in :data:`.params.PARAMS` with its rule (the
   catalogue's where the argument is a site input) and its help; a new function adds its names
   there, a thin decorated function calling :func:`.cells._call` with the model's formula, and its
   name to ``__all__``; then ``python -m tests.tools.regen_golden`` regenerates the golden
   registration files.
3. **Help.** The docstring, collapsed to one line by :func:`_excel_help`, is the description the
   function wizard shows; each argument's help comes from :data:`PARAMS` (the argument's meaning,
   its unit in words, its allowed range derived from the rule). Both must stay within Excel's
   255 characters (tests check). Category :data:`CATEGORY`.
4. **Ranges in, ranges out.** Every argument is declared ``ndim=2`` so a range keeps its
   orientation; any argument may be one cell or a range. :func:`_call` broadcasts like numpy and
   returns a plain number for an all-single-cell call, a list of lists (rows of cells) for ranges,
   which Excel 365 spills. An empty cell in a required argument gives an empty result at that
   position; an empty cell (or an omitted argument) in an optional argument takes its default.
   Every argument is also declared ``err_to_str=True``: a cell holding an error value (``#N/A``
   …) gives that error at its position, as Excel's own functions propagate it (without it,
   xlwings hands an error cell over as an empty one). Pyodide's ``jsnull`` reads as empty.
5. **Bad arguments** (text, TRUE/FALSE, a date, a negative count, 65 for 65 %, ranges whose
   sizes do not fit, p99 ≤ p50 …) stop the whole call with one short message that names the
   argument, the value, what is allowed and the fix. The number rules are the input catalogue's
   (:meth:`tokenfactory_xl.core.catalogue.Input.parse`): a fraction typed as a number in (1, 100] is
   reported as a percentage typed without its % sign. An argument whose rule is text or a
   choice (a GPU model) reaches the formula as an object array of parsed texts, ``None`` where
   empty. How the message reaches the user depends on the runtime (see below).
6. **Undefined results** of one element (a division by zero, no finite answer) give that element
   one of Excel's error codes, ``"#DIV/0!"``, ``"#NUM!"`` or ``"#N/A"``; the other elements compute.

How each runtime shows them (read in xlwings 0.37's own source, ``xlwings/udfs.py``,
``xlwings/_xlwindows.py``, ``xlwings/pro/_xlofficejs.py``, ``xlwings/pro/udfs_officejs.py``):

- **Office.js (xlwings Lite, xlwings Server).** The result strings ``"#DIV/0!"``, ``"#NUM!"`` and
  ``"#N/A"`` are turned into real Excel error values (``ISERROR`` is TRUE, ``IFERROR`` catches
  them, arithmetic propagates them). A bad argument raises :class:`ArgumentError`, an
  ``xlwings.XlwingsError``: the cell shows ``#VALUE!`` with the message on hover, and xlwings
  Server answers it with status 400, which the add-in does not retry (a plain exception is a 500
  and is retried).
- **Classic xlwings (Windows, COM).** A UDF cannot return a real error value there (xlwings
  issue 776; NaN comes back as an empty cell), and a raised exception reaches the cell as
  "Unexpected Python Error" text with the traceback. So in classic Excel a bad argument returns
  the message itself as the cell's text (no traceback), and an undefined element shows the text
  ``#DIV/0!`` / ``#NUM!`` / ``#N/A``: it looks like Excel's error and ``SUM`` skips it, but it is
  text (``ISNUMBER`` is FALSE and ``ISERROR`` is FALSE). ``ISNUMBER()`` tells a result from a
  problem in every runtime.
- **Plain Python.** Bad arguments raise :class:`ArgumentError` (a ``ValueError``); undefined
  elements are the same error strings.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from itertools import product

import numpy as np
import xlwings as xw

from ..core import economics as model
from ..core import roofline, specs
from ..core import serving as capacity
from ..core.catalogue import Input, fmt_number
from ..core.errors import InputError, Problem
from .cells import (
    NA,
    NUM,
    ArgumentError,
    _call,
    _no_cycle_collection,
    _read,
    _reply_to,
    _Values,
    _where,
)
from .params import _FRACTION, PARAMS, Param, _excel_help, _rule

#: The function-wizard category of every function of this module.
CATEGORY = "Token Factory"


def _p99_above_p50(read: dict[str, _Values]) -> None:
    p50, p99 = np.broadcast_arrays(read["ttft_p50"].values, read["ttft_p99"].values)
    with np.errstate(invalid="ignore"):
        broken = ~np.isnan(p50) & ~np.isnan(p99) & (p99 <= p50)
    if broken.any():
        index = np.unravel_index(int(np.argmax(broken)), broken.shape) if broken.ndim else ()
        where = _where(tuple(int(i) for i in index), broken.shape, "ttft_p99")
        problem = Problem("ttft_p99", float(p99[index]),
                          f"must be above ttft_p50 ({fmt_number(float(p50[index]))})",
                          "enter the measured 99th percentile, which is above the median",
                          where)
        raise ArgumentError(str(problem))


def _salvage_within_capex(read: dict[str, _Values]) -> None:
    capex, salvage = np.broadcast_arrays(read["capex_per_gpu"].values,
                                         read["salvage_per_gpu"].values)
    broken = salvage > capex
    if broken.any():
        index = np.unravel_index(int(np.argmax(broken)), broken.shape) if broken.ndim else ()
        where = _where(tuple(int(i) for i in index), broken.shape, "salvage_per_gpu")
        problem = Problem("salvage_per_gpu", float(salvage[index]),
                          f"is more than capex_per_gpu ({fmt_number(float(capex[index]))})",
                          "enter a resale value of at most the cost of the GPU", where)
        raise ArgumentError(str(problem))


def _doc(name: str) -> str:
    return PARAMS[name].doc


# -- the functions -------------------------------------------------------------------------------
# Each: xlwings decorators (name, category, per-argument help), a one-paragraph description, one
# call into the model. Order and names are those of issue 3's table.

@xw.func(category=CATEGORY)
@xw.arg("actual_tps", ndim=2, err_to_str=True, doc=_doc("actual_tps"))
@xw.arg("theoretical_tps", ndim=2, err_to_str=True, doc=_doc("theoretical_tps"))
@_excel_help
def TEF(actual_tps, theoretical_tps):
    """Token Efficiency Factor: actual / theoretical tokens per second, a fraction (210,000 of
    700,000 TPS is 30%). #DIV/0! where the theoretical TPS is 0."""
    return _call(model.tef, ("actual_tps", "theoretical_tps"), (actual_tps, theoretical_tps))


@xw.func(category=CATEGORY)
@xw.arg("tef", ndim=2, err_to_str=True, doc=_doc("tef"))
@xw.arg("sla", ndim=2, err_to_str=True, doc=_doc("sla"))
@xw.arg("sell_through", ndim=2, err_to_str=True, doc=_doc("sell_through"))
@_excel_help
def TFI(tef, sla, sell_through):
    """Token Factory Index: TEF x SLA x sell-through, the share of theoretical capacity that
    becomes revenue, a fraction."""
    return _call(model.tfi, ("tef", "sla", "sell_through"), (tef, sla, sell_through))


@xw.func(category=CATEGORY)
@xw.arg("gpus", ndim=2, err_to_str=True, doc=_doc("gpus"))
@xw.arg("tef_now", ndim=2, err_to_str=True, doc=_doc("tef_now"))
@xw.arg("tef_target", ndim=2, err_to_str=True, doc=_doc("tef_target"))
@_excel_help
def EQUIV_GPU(gpus, tef_now, tef_target):
    """GPUs that would make the same tokens at today's TEF: GPUs x TEF target / TEF now (1,000
    GPUs from 30% to 65% = 2,166.67). #DIV/0! where TEF now is 0."""
    return _call(model.equivalent_gpus, ("gpus", "tef_now", "tef_target"),
                 (gpus, tef_now, tef_target))


@xw.func(category=CATEGORY)
@xw.arg("gpus", ndim=2, err_to_str=True, doc=_doc("gpus"))
@xw.arg("tef_now", ndim=2, err_to_str=True, doc=_doc("tef_now"))
@xw.arg("tef_target", ndim=2, err_to_str=True, doc=_doc("tef_target"))
@xw.arg("capex_per_gpu", ndim=2, err_to_str=True, doc=_doc("capex_per_gpu"))
@_excel_help
def AVOIDED_CAPEX(gpus, tef_now, tef_target, capex_per_gpu):
    """GPU CapEx a TEF uplift saves, in $: (equivalent GPUs - GPUs) x CapEx per GPU. #DIV/0!
    where TEF now is 0."""
    return _call(model.avoided_capex, ("gpus", "tef_now", "tef_target", "capex_per_gpu"),
                 (gpus, tef_now, tef_target, capex_per_gpu))


@xw.func(category=CATEGORY)
@xw.arg("tokens_paid", ndim=2, err_to_str=True, doc=_doc("tokens_paid"))
@xw.arg("tokens_theoretical", ndim=2, err_to_str=True, doc=_doc("tokens_theoretical"))
@_excel_help
def LOAD_FACTOR(tokens_paid, tokens_theoretical):
    """Load factor, the airline measure for tokens: tokens paid / theoretical tokens, a fraction
    (equal to the TFI). #DIV/0! where the theoretical tokens are 0."""
    return _call(model.load_factor, ("tokens_paid", "tokens_theoretical"),
                 (tokens_paid, tokens_theoretical))


@xw.func(category=CATEGORY)
@xw.arg("tps", ndim=2, err_to_str=True, doc=_doc("tps"))
@_excel_help
def TPM(tps):
    """Tokens per minute from tokens per second: TPS x 60."""
    return _call(model.tpm, ("tps",), (tps,))


@xw.func(category=CATEGORY)
@xw.arg("tps", ndim=2, err_to_str=True, doc=_doc("tps"))
@_excel_help
def TOKENS_PER_DAY(tps):
    """Tokens per day from tokens per second: TPS x 86,400."""
    return _call(model.tokens_per_day, ("tps",), (tps,))


@xw.func(category=CATEGORY)
@xw.arg("gpu_hour_cost", ndim=2, err_to_str=True, doc=_doc("gpu_hour_cost"))
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("price_per_mtok", ndim=2, err_to_str=True, doc=_doc("price_per_mtok"))
@_excel_help
def BREAKEVEN_UTIL(gpu_hour_cost, tps_per_gpu, price_per_mtok):
    """Utilisation at which revenue pays the GPU-hour, a fraction: cost / (TPS x 3,600 x price /
    10^6); above 100% never breaks even. #DIV/0! where TPS or price is 0."""
    return _call(model.breakeven_util, ("gpu_hour_cost", "tps_per_gpu", "price_per_mtok"),
                 (gpu_hour_cost, tps_per_gpu, price_per_mtok))


@xw.func(category=CATEGORY)
@xw.arg("gpu_hour_cost", ndim=2, err_to_str=True, doc=_doc("gpu_hour_cost"))
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("price_per_mtok", ndim=2, err_to_str=True, doc=_doc("price_per_mtok"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def MARGIN_AT_UTIL(gpu_hour_cost, tps_per_gpu, price_per_mtok, util):
    """Operating margin at a utilisation, a fraction: 1 - breakeven utilisation / utilisation.
    #DIV/0! where utilisation, TPS or price is 0."""
    return _call(lambda c, t, p, u: model.margin_at_util(u, c, t, p),
                 ("gpu_hour_cost", "tps_per_gpu", "price_per_mtok", "util"),
                 (gpu_hour_cost, tps_per_gpu, price_per_mtok, util))


@xw.func(category=CATEGORY)
@xw.arg("gpu_hour_cost", ndim=2, err_to_str=True, doc=_doc("gpu_hour_cost"))
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def COST_PER_MTOK(gpu_hour_cost, tps_per_gpu, util):
    """Cost of a million sold tokens at a utilisation, in $ per million tokens (also the
    breakeven price). #DIV/0! where TPS or utilisation is 0."""
    return _call(model.cost_per_mtok, ("gpu_hour_cost", "tps_per_gpu", "util"),
                 (gpu_hour_cost, tps_per_gpu, util))


@xw.func(category=CATEGORY)
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("price_per_mtok", ndim=2, err_to_str=True, doc=_doc("price_per_mtok"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def REVENUE_PER_GPU_HOUR(tps_per_gpu, price_per_mtok, util):
    """Revenue of one GPU-hour, in $ per GPU-hour: TPS x 3,600 x utilisation x price / 10^6."""
    return _call(lambda t, p, u: model.revenue_per_gpu_hour(t, u, p),
                 ("tps_per_gpu", "price_per_mtok", "util"), (tps_per_gpu, price_per_mtok, util))


@xw.func(category=CATEGORY)
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("price_per_mtok", ndim=2, err_to_str=True, doc=_doc("price_per_mtok"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def DAILY_TOKEN_VALUE(tps_per_gpu, price_per_mtok, util):
    """Revenue one GPU earns in a day, in $ per GPU per day: TPS x 86,400 x utilisation x price /
    10^6."""
    return _call(lambda t, p, u: model.daily_token_value(t, u, p),
                 ("tps_per_gpu", "price_per_mtok", "util"), (tps_per_gpu, price_per_mtok, util))


@xw.func(category=CATEGORY)
@xw.arg("tokens_per_day", ndim=2, err_to_str=True, doc=_doc("tokens_per_day"))
@xw.arg("gpus", ndim=2, err_to_str=True, doc=_doc("gpus"))
@xw.arg("revenue_per_gpu_hour", ndim=2, err_to_str=True, doc=_doc("revenue_per_gpu_hour"))
@_excel_help
def IMPLIED_PRICE_PER_MTOK(tokens_per_day, gpus, revenue_per_gpu_hour):
    """Fleet-average revenue per million tokens, in $ per million tokens: an average, not a
    price. #DIV/0! where tokens per day is 0."""
    return _call(model.implied_price_per_mtok, ("tokens_per_day", "gpus", "revenue_per_gpu_hour"),
                 (tokens_per_day, gpus, revenue_per_gpu_hour))


@xw.func(category=CATEGORY)
@xw.arg("capex_per_gpu", ndim=2, err_to_str=True, doc=_doc("capex_per_gpu"))
@xw.arg("salvage_per_gpu", ndim=2, err_to_str=True, doc=_doc("salvage_per_gpu"))
@xw.arg("life_years", ndim=2, err_to_str=True, doc=_doc("life_years"))
@xw.arg("power_kw", ndim=2, err_to_str=True, doc=_doc("power_kw"))
@xw.arg("pue", ndim=2, err_to_str=True, doc=_doc("pue"))
@xw.arg("price_per_kwh", ndim=2, err_to_str=True, doc=_doc("price_per_kwh"))
@xw.arg("opex_per_gpu_hour", ndim=2, err_to_str=True, doc=_doc("opex_per_gpu_hour"))
@xw.arg("discount_rate", ndim=2, err_to_str=True, doc=_doc("discount_rate"))
@_excel_help
def GPU_HOUR_COST(capex_per_gpu, salvage_per_gpu, life_years, power_kw, pue, price_per_kwh,
                  opex_per_gpu_hour=0, discount_rate=0):
    """Owned cost of one GPU-hour, in $ per GPU-hour: the capital as a monthly annuity at the
    discount rate (rate 0: (CapEx - salvage) / (life x 8,760), as Excel's SLN) + kW x PUE x $ per
    kWh + other opex. Cost, salvage, life first, as in Excel's SLN."""
    return _call(lambda capex, salvage, life, kw, pue, kwh, opex, rate: model.gpu_hour_cost(
                     capex, life, kw, pue, kwh, opex, salvage, rate),
                 ("capex_per_gpu", "salvage_per_gpu", "life_years", "power_kw", "pue",
                  "price_per_kwh", "opex_per_gpu_hour", "discount_rate"),
                 (capex_per_gpu, salvage_per_gpu, life_years, power_kw, pue, price_per_kwh,
                  opex_per_gpu_hour, discount_rate),
                 check=_salvage_within_capex)


@xw.func(category=CATEGORY)
@xw.arg("price_input", ndim=2, err_to_str=True, doc=_doc("price_input"))
@xw.arg("price_output", ndim=2, err_to_str=True, doc=_doc("price_output"))
@xw.arg("output_share", ndim=2, err_to_str=True, doc=_doc("output_share"))
@xw.arg("cache_hit_rate", ndim=2, err_to_str=True, doc=_doc("cache_hit_rate"))
@xw.arg("price_cached_input", ndim=2, err_to_str=True, doc=_doc("price_cached_input"))
@xw.arg("batch_share", ndim=2, err_to_str=True, doc=_doc("batch_share"))
@xw.arg("batch_discount", ndim=2, err_to_str=True, doc=_doc("batch_discount"))
@_excel_help
def BLENDED_PRICE(price_input, price_output, output_share, cache_hit_rate=0,
                  price_cached_input=None, batch_share=0, batch_discount=0.5):
    """Average price of a million sold tokens, in $ per million tokens, from input, cached-input
    and output prices, the output share and the batch discount."""
    return _call(model.blended_price,
                 ("price_input", "price_output", "output_share", "cache_hit_rate",
                  "price_cached_input", "batch_share", "batch_discount"),
                 (price_input, price_output, output_share, cache_hit_rate, price_cached_input,
                  batch_share, batch_discount))


@xw.func(category=CATEGORY)
@xw.arg("price_now", ndim=2, err_to_str=True, doc=_doc("price_now"))
@xw.arg("decline_per_quarter", ndim=2, err_to_str=True, doc=_doc("decline_per_quarter"))
@xw.arg("months", ndim=2, err_to_str=True, doc=_doc("months"))
@_excel_help
def PRICE_AFTER(price_now, decline_per_quarter, months):
    """Price after a number of months, in $ per million tokens: price now x (1 - decline per
    quarter)^(months / 3)."""
    return _call(model.price_after, ("price_now", "decline_per_quarter", "months"),
                 (price_now, decline_per_quarter, months))


@xw.func(category=CATEGORY)
@xw.arg("revenue_per_gpu_hour", ndim=2, err_to_str=True, doc=_doc("revenue_per_gpu_hour"))
@xw.arg("cash_cost_per_gpu_hour", ndim=2, err_to_str=True, doc=_doc("cash_cost_per_gpu_hour"))
@xw.arg("decline_per_quarter", ndim=2, err_to_str=True, doc=_doc("decline_per_quarter"))
@_excel_help
def ECONOMIC_LIFE_MONTHS(revenue_per_gpu_hour, cash_cost_per_gpu_hour, decline_per_quarter):
    """Months until falling prices bring revenue per GPU-hour down to its cash cost; 0 if already
    there. #NUM! where it never happens (no decline, or a cash cost of 0)."""
    return _call(model.economic_life_months,
                 ("revenue_per_gpu_hour", "cash_cost_per_gpu_hour", "decline_per_quarter"),
                 (revenue_per_gpu_hour, cash_cost_per_gpu_hour, decline_per_quarter),
                 undefined=NUM)


@xw.func(category=CATEGORY)
@xw.arg("ttft_p50", ndim=2, err_to_str=True, doc=_doc("ttft_p50"))
@xw.arg("ttft_p99", ndim=2, err_to_str=True, doc=_doc("ttft_p99"))
@xw.arg("ttft_slo", ndim=2, err_to_str=True, doc=_doc("ttft_slo"))
@_excel_help
def SLO_ATTAINMENT(ttft_p50, ttft_p99, ttft_slo):
    """Share of requests whose time to first token meets the objective, a fraction, modelling
    TTFT as log-normal through its median (p50) and 99th percentile (p99)."""
    return _call(model.slo_attainment, ("ttft_p50", "ttft_p99", "ttft_slo"),
                 (ttft_p50, ttft_p99, ttft_slo), check=_p99_above_p50)


@xw.func(category=CATEGORY)
@xw.arg("cash_flows", ndim=2, err_to_str=True, doc=_doc("cash_flows"))
@_excel_help
def PAYBACK_MONTHS(cash_flows):
    """Months until the cumulative cash flow turns non-negative, interpolated within the month.
    #N/A where it does not within the cash flows given."""
    try:
        flows = _series(cash_flows)
    except ArgumentError as error:
        return _reply_to(error)
    months = model.payback_months(flows)
    return NA if months is None else float(months)


def _series(raw: object) -> np.ndarray:
    """One row or one column of cash flows, trailing empty cells dropped."""
    values = _read(PARAMS["cash_flows"], raw)
    shape = values.values.shape
    if len(shape) == 2 and min(shape) > 1:
        raise ArgumentError(f"cash_flows is a block of {shape[0]} × {shape[1]} cells; give one "
                            "row or one column, month 0 first")
    flows, empty = values.values.ravel(), values.empty.ravel()
    filled = np.nonzero(~empty)[0]
    if filled.size == 0:
        raise ArgumentError("cash_flows is empty; give the monthly cash flows, month 0 first")
    gaps = np.nonzero(empty[: filled[-1]])[0]
    if gaps.size:
        raise ArgumentError(f"cash_flows has an empty cell at month {int(gaps[0])}; enter 0 "
                            "for a month without cash flow")
    return flows[: filled[-1] + 1]


# -- input and output tokens: prefill vs decode (methodology section 2) ---------------------------
@xw.func(category=CATEGORY)
@xw.arg("prefill_tps", ndim=2, err_to_str=True, doc=_doc("prefill_tps"))
@xw.arg("decode_tps", ndim=2, err_to_str=True, doc=_doc("decode_tps"))
@xw.arg("output_share", ndim=2, err_to_str=True, doc=_doc("output_share"))
@_excel_help
def BLENDED_CAPACITY(prefill_tps, decode_tps, output_share):
    """Tokens per second one GPU makes of a mix of input and output tokens: 1 / ((1 - output
    share) / prefill TPS + output share / decode TPS)."""
    return _call(model.blended_capacity, ("prefill_tps", "decode_tps", "output_share"),
                 (prefill_tps, decode_tps, output_share))


@xw.func(category=CATEGORY)
@xw.arg("gpu_hour_cost", ndim=2, err_to_str=True, doc=_doc("gpu_hour_cost"))
@xw.arg("prefill_tps", ndim=2, err_to_str=True, doc=_doc("prefill_tps"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def COST_PER_MTOK_INPUT(gpu_hour_cost, prefill_tps, util):
    """Cost of a million input (prompt) tokens, in $ per million tokens: GPU-hour cost x 10^6 /
    (3,600 x prefill TPS x utilisation)."""
    return _call(model.cost_per_mtok_input, ("gpu_hour_cost", "prefill_tps", "util"),
                 (gpu_hour_cost, prefill_tps, util))


@xw.func(category=CATEGORY)
@xw.arg("gpu_hour_cost", ndim=2, err_to_str=True, doc=_doc("gpu_hour_cost"))
@xw.arg("decode_tps", ndim=2, err_to_str=True, doc=_doc("decode_tps"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def COST_PER_MTOK_OUTPUT(gpu_hour_cost, decode_tps, util):
    """Cost of a million output tokens, in $ per million tokens: GPU-hour cost x 10^6 / (3,600 x
    decode TPS x utilisation)."""
    return _call(model.cost_per_mtok_output, ("gpu_hour_cost", "decode_tps", "util"),
                 (gpu_hour_cost, decode_tps, util))


@xw.func(category=CATEGORY)
@xw.arg("tps_per_gpu", ndim=2, err_to_str=True, doc=_doc("tps_per_gpu"))
@xw.arg("power_kw", ndim=2, err_to_str=True, doc=_doc("power_kw"))
@xw.arg("pue", ndim=2, err_to_str=True, doc=_doc("pue"))
@xw.arg("util", ndim=2, err_to_str=True, doc=_doc("util"))
@_excel_help
def TOKENS_PER_MW(tps_per_gpu, power_kw, pue, util):
    """Tokens per second a megawatt of facility power yields: TPS per GPU x utilisation x 1,000
    / (kW per GPU x PUE)."""
    return _call(lambda t, kw, pue, u: model.tokens_per_mw(t, u, kw, pue),
                 ("tps_per_gpu", "power_kw", "pue", "util"), (tps_per_gpu, power_kw, pue, util))


# -- theoretical capacity from the GPU and model catalogues (issue 7) ----------------------------
# The catalogue functions take names (a GPU, a model, a field) and a precision as well as
# numbers. Names arrive as texts (convention 5); the formula resolves each distinct combination
# once in the catalogues of tokenfactory_xl.specs and runs the roofline of
# tokenfactory_xl.roofline over the cells that share it. An unknown name stops the call with
# the close matches.

#: THEORETICAL_TPS's figures: the two of methodology section 5.1 and the version-2 roofline.
THEORETICAL_MODES = ("attainable", "bound", "roofline")


def _text(name: str) -> Input:
    return Input(name, name, "text", "Excel functions", "text", None, "")


def _choice(name: str, choices: tuple[str, ...]) -> Input:
    return Input(name, name, "choice", "Excel functions", "choice", None, "", choices=choices)


PARAMS.update({p.name: p for p in (
    Param("gpu", _text("gpu"), "GPU name from the GPU catalogue, e.g. H200, B200 or MI300X; "
                               "case ignored"),
    Param("model", _text("model"), "Model name from the model catalogue, e.g. Llama-3.1-70B "
                                   "or DeepSeek-V3; case ignored"),
    Param("precision", _choice("precision", tuple(roofline.PRECISIONS)),
          "Weight precision: it sets the bytes per weight and per KV-cache element and the "
          "peak FLOPS used"),
    Param("field", _text("field"), "The figure to look up, e.g. hbm_gb, bandwidth_tbps, "
                                   "fp8_tflops (GPU_SPEC) or total_params, active_params, "
                                   "layers (MODEL_SPEC); a wrong name lists the fields"),
    Param("batch", _rule("batch", "integer", low=1), "Sequences decoded together, a count"),
    Param("context_tokens", _rule("context_tokens", "integer", low=1),
          "Context length of each sequence, tokens"),
    Param("gpus_per_replica", _rule("gpus_per_replica", "integer", low=1),
          "Tensor-parallel GPUs holding one model replica, a count; default 1", 1.0),
    Param("mbu", _rule("mbu", "fraction", "fraction", 0, 1, low_open=True),
          f"Memory-bandwidth utilisation, {_FRACTION}; default 100%, the pure bound",
          roofline.DEFAULT_MBU),
    Param("mfu", _rule("mfu", "fraction", "fraction", 0, 1, low_open=True),
          f"Model-FLOPs utilisation, {_FRACTION}; default 100%, the pure bound",
          roofline.DEFAULT_MFU),
    Param("mode", _choice("mode", THEORETICAL_MODES),
          "attainable (default: what the best engines reach), bound (physics only) or "
          "roofline (spec 5, with mbu and mfu); one for the whole call", "attainable"),
)})


def _field_of(fields: tuple[str, ...]) -> Callable[[str], str]:
    def resolve(text: str) -> str:
        key = text.strip().lower()
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=3, cutoff=0.4)
            fix = f"did you mean {' or '.join(close)}?" if close else f"one of {', '.join(fields)}"
            raise InputError([Problem("field", text, "is not a field", fix)])
        return key
    return resolve


def _resolve(name: str, resolve: Callable[[str], object], text: _Values, shape: tuple[int, ...],
             at: np.ndarray) -> tuple[list[object], np.ndarray]:
    """The distinct names of one text argument among the cells ``at`` (of the flattened
    ``shape``), each resolved once, and each of those cells' position among them; an unknown
    name raises ArgumentError saying where it first sits."""
    assert text.labels is not None and text.codes is not None
    codes = np.take(np.broadcast_to(text.codes, shape), at)
    used = np.bincount(codes, minlength=len(text.labels)) > 0
    entries = []
    for i in np.flatnonzero(used).tolist():
        label = text.labels[i]
        try:
            entries.append(resolve(str(label)))
        except InputError as error:
            same = np.array([other == label for other in text.labels])[text.codes]
            index = np.unravel_index(int(np.argmax(same)), same.shape) if same.ndim else ()
            where = _where(tuple(int(i) for i in index), same.shape, name)
            problem = dataclasses.replace(error.problems[0], name=name, where=where)
            raise ArgumentError(str(problem)) from None
    return entries, np.take(np.cumsum(used) - 1, codes)


def _by_name(compute: Callable[..., object], names: tuple[str, ...],
             resolvers: tuple[Callable[[str], object], ...]) -> Callable[..., np.ndarray]:
    """A formula for :func:`_call` (``checked``): ``compute(entries of each name …, each
    cell's entry of each name …, numbers …)`` over the cells where every argument is given,
    each distinct name resolved once."""
    def formula(*arguments: _Values) -> np.ndarray:
        texts, numbers = arguments[: len(names)], arguments[len(names):]
        shape = np.broadcast_shapes(*(a.values.shape for a in arguments))
        known = np.ones(shape, dtype=bool)
        for t in texts:
            known &= ~np.broadcast_to(t.empty, shape)
        for n in numbers:
            known &= np.isfinite(np.broadcast_to(n.values, shape))
        at = np.flatnonzero(known)
        resolved = [_resolve(name, resolve, text, shape, at)
                    for name, resolve, text in zip(names, resolvers, texts, strict=True)]
        out = np.full(shape, np.nan)
        if at.size:
            try:
                out.reshape(-1)[at] = compute(
                    *(entries for entries, _ in resolved), *(codes for _, codes in resolved),
                    *(np.take(np.broadcast_to(n.values, shape), at) for n in numbers))
            except InputError as error:  # pragma: no cover - the rules above catch these
                raise ArgumentError(str(error)) from None
        return out
    return formula


def _over_replicas(function: Callable[..., object]) -> Callable[..., object]:
    """A roofline function of a :class:`~tokenfactory_xl.core.roofline.Replica`, as ``compute`` of
    :func:`_by_name`: every cell's GPU, model and precision gathered into one replica."""
    def compute(gpus, models, precisions, gpu_at, model_at, precision_at, *numbers):
        replica = roofline.Replica.gathered(gpus, models, precisions, gpu_at, model_at,
                                            precision_at)
        return function(replica, *numbers)
    return compute


def _over_setups(figure: str) -> Callable[..., object]:
    """``compute`` of :func:`_by_name` for the bound or the attainable figure
    (:mod:`tokenfactory_xl.core.serving`): each distinct setup and batch computed once; nan where
    the batch does not fit (or passes the engine's batch cap, attainable)."""
    def compute(gpus, models, precisions, gpu_at, model_at, precision_at, batch, context, n,
                _mbu, _mfu):
        out = np.full(len(batch), np.nan)
        done: dict[tuple, float] = {}
        for i, key in enumerate(zip(gpu_at.tolist(), model_at.tolist(),
                                    precision_at.tolist(), n.tolist(), batch.tolist(),
                                    context.tolist(), strict=True)):
            if key not in done:
                g, m, p, gpus_n, b, ctx = key
                try:
                    setup = capacity.Setup.of(gpus[g], models[m], precisions[p], int(gpus_n))
                    done[key] = capacity.decode_tps_per_gpu(setup, b, ctx, figure)
                except InputError:
                    done[key] = np.nan
            out[i] = done[key]
        return out
    return compute


def _one_mode(raw: object) -> str:
    """THEORETICAL_TPS's mode: one text for the whole call, empty for attainable."""
    while isinstance(raw, (list, tuple)) and len(raw) == 1:
        raw = raw[0]
    if isinstance(raw, (list, tuple)):
        raise ArgumentError("mode: give one mode for the whole call (attainable, bound or "
                            "roofline), not a range")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return "attainable"
    key = str(raw).strip().lower()
    if key not in THEORETICAL_MODES:
        raise ArgumentError(f"mode={raw}: is not a figure this function gives; use "
                            f"{', '.join(THEORETICAL_MODES)}")
    return key


def _utilisations_unused(mbu: object, mfu: object, figure: str) -> None:
    """The bound and the attainable figure take their efficiencies from the catalogue: an mbu
    or mfu other than 1 (100%) is refused rather than silently ignored."""
    for name, raw in (("mbu", mbu), ("mfu", mfu)):
        values = _read(PARAMS[name], raw)
        given = values.values[~values.empty]
        if np.any(given != 1):
            raise ArgumentError(f"{name}: applies to mode roofline only; the {figure} figure "
                                "takes its efficiencies from the method's catalogue (leave "
                                f"{name} empty or give mode \"roofline\")")


_ROOFLINE_NAMES = ("gpu", "model", "precision")
_ROOFLINE_RESOLVERS = (specs.gpu, specs.model, str)


@xw.func(category=CATEGORY)
@xw.arg("gpu", ndim=2, err_to_str=True, doc=_doc("gpu"))
@xw.arg("model", ndim=2, err_to_str=True, doc=_doc("model"))
@xw.arg("precision", ndim=2, err_to_str=True, doc=_doc("precision"))
@xw.arg("batch", ndim=2, err_to_str=True, doc=_doc("batch"))
@xw.arg("context_tokens", ndim=2, err_to_str=True, doc=_doc("context_tokens"))
@xw.arg("gpus_per_replica", ndim=2, err_to_str=True, doc=_doc("gpus_per_replica"))
@xw.arg("mbu", ndim=2, err_to_str=True, doc=_doc("mbu"))
@xw.arg("mfu", ndim=2, err_to_str=True, doc=_doc("mfu"))
@xw.arg("mode", ndim=2, err_to_str=True, doc=_doc("mode"))
@_excel_help
def THEORETICAL_TPS(gpu, model, precision, batch, context_tokens, gpus_per_replica=1, mbu=1,
                    mfu=1, mode="attainable"):
    """Decode tokens per second per GPU from the GPU and model catalogues: attainable (what the
    best engines reach, TEF's default denominator), bound (physics only) or roofline (spec 5).
    #NUM! where the batch does not fit in memory."""
    try:
        figure = _one_mode(mode)
        if figure != "roofline":
            _utilisations_unused(mbu, mfu, figure)
    except ArgumentError as error:
        return _reply_to(error)
    compute = (_over_replicas(roofline.theoretical_tps_over) if figure == "roofline"
               else _over_setups(figure))
    formula = _by_name(compute, _ROOFLINE_NAMES, _ROOFLINE_RESOLVERS)
    return _call(formula, ("gpu", "model", "precision", "batch", "context_tokens",
                           "gpus_per_replica", "mbu", "mfu"),
                 (gpu, model, precision, batch, context_tokens, gpus_per_replica, mbu, mfu),
                 undefined=NUM, checked=True)  # mode chose the formula


@xw.func(category=CATEGORY)
@xw.arg("gpu", ndim=2, err_to_str=True, doc=_doc("gpu"))
@xw.arg("model", ndim=2, err_to_str=True, doc=_doc("model"))
@xw.arg("precision", ndim=2, err_to_str=True, doc=_doc("precision"))
@xw.arg("context_tokens", ndim=2, err_to_str=True, doc=_doc("context_tokens"))
@xw.arg("gpus_per_replica", ndim=2, err_to_str=True, doc=_doc("gpus_per_replica"))
@_excel_help
def MAX_BATCH(gpu, model, precision, context_tokens, gpus_per_replica=1):
    """Largest batch of sequences whose KV cache fits beside the weights: (memory x GPUs per
    replica - weights) / KV bytes per sequence, rounded down; 0 where the weights alone do not
    fit."""
    formula = _by_name(_over_replicas(roofline.max_batch_over), _ROOFLINE_NAMES,
                       _ROOFLINE_RESOLVERS)
    return _call(formula, ("gpu", "model", "precision", "context_tokens", "gpus_per_replica"),
                 (gpu, model, precision, context_tokens, gpus_per_replica), undefined=NUM,
                 checked=True)


def _spec_lookup(names: tuple[str, str], raws: tuple[object, object],
                 resolvers: tuple[Callable[[str], object], Callable[[str], object]]) -> object:
    """GPU_SPEC / MODEL_SPEC: a figure or a text per cell; #N/A for a figure the entry lacks."""
    try:
        read = [_read(PARAMS[n], r) for n, r in zip(names, raws, strict=True)]
        try:
            shape = np.broadcast_shapes(*(v.values.shape for v in read))
        except ValueError:
            raise ArgumentError(f"the ranges do not fit together ({names[0]} and {names[1]}); "
                                "give ranges of the same size, or single cells") from None
        empty = np.logical_or.reduce([np.broadcast_to(v.empty, shape) for v in read])
        at = np.flatnonzero(~empty)
        (entries, entry_at), (field_names, field_at) = (
            _resolve(name, resolve, values, shape, at)
            for name, resolve, values in zip(names, resolvers, read, strict=True))
        table = np.empty((len(entries), len(field_names)), dtype=object)  # each answer once
        for (i, entry), (j, field_name) in product(enumerate(entries), enumerate(field_names)):
            value = getattr(entry, field_name)  # type: ignore[arg-type]
            table[i, j] = NA if value is None else (
                float(value) if isinstance(value, (int, float)) else value)
        cells = np.empty(shape, dtype=object)
        cells.reshape(-1)[at] = np.take(table.reshape(-1), np.ravel_multi_index(
            (entry_at, field_at), table.shape))
    except ArgumentError as error:
        return _reply_to(error)
    if all(v.single for v in read):
        return cells.ravel()[0]
    with _no_cycle_collection():
        return cells.tolist()


@xw.func(category=CATEGORY)
@xw.arg("gpu", ndim=2, err_to_str=True, doc=_doc("gpu"))
@xw.arg("field", ndim=2, err_to_str=True, doc=_doc("field"))
@_excel_help
def GPU_SPEC(gpu, field):
    """One figure of a catalogue GPU, dense and per GPU: GPU_SPEC("H200", "bandwidth_tbps") is
    4.8 (TB/s); fields hbm_gb, bf16_tflops, fp8_tflops, fp4_tflops, power_w, vendor … #N/A where
    the GPU lacks it."""
    return _spec_lookup(("gpu", "field"), (gpu, field), (specs.gpu, _field_of(specs.GPU_FIELDS)))


@xw.func(category=CATEGORY)
@xw.arg("model", ndim=2, err_to_str=True, doc=_doc("model"))
@xw.arg("field", ndim=2, err_to_str=True, doc=_doc("field"))
@_excel_help
def MODEL_SPEC(model, field):
    """One figure of a catalogue model: MODEL_SPEC("DeepSeek-V3", "active_params") is 37 billion;
    fields total_params, layers, kv_heads, head_dim, kv_latent_dim, source … #N/A where the model
    has none."""
    return _spec_lookup(("model", "field"), (model, field),
                        (specs.model, _field_of(specs.MODEL_FIELDS)))


#: The Excel functions of this module, in the order of issue 3's table.
__all__ = [
    "TEF", "TFI", "EQUIV_GPU", "AVOIDED_CAPEX", "LOAD_FACTOR", "TPM", "TOKENS_PER_DAY",
    "BREAKEVEN_UTIL", "MARGIN_AT_UTIL", "COST_PER_MTOK", "REVENUE_PER_GPU_HOUR",
    "DAILY_TOKEN_VALUE", "IMPLIED_PRICE_PER_MTOK", "GPU_HOUR_COST", "BLENDED_PRICE",
    "PRICE_AFTER", "ECONOMIC_LIFE_MONTHS", "SLO_ATTAINMENT", "PAYBACK_MONTHS",
    "THEORETICAL_TPS", "MAX_BATCH", "GPU_SPEC", "MODEL_SPEC",
    "BLENDED_CAPACITY", "COST_PER_MTOK_INPUT", "COST_PER_MTOK_OUTPUT", "TOKENS_PER_MW",
]
''',
}

# Which of them are packages, and the one whose functions Excel gets.
_PACKAGES = ('tokenfactory_xl.addin', 'tokenfactory_xl.core')
_ROOT = 'addin.udfs'

# The package's data files.
_DATA = {
    'data/gpus.csv': r'''name,vendor,hbm_gb,hbm_gb_source,bandwidth_tbps,bandwidth_source,bf16_tflops,bf16_source,fp8_tflops,fp8_source,fp4_tflops,fp4_source,power_w,power_source,aliases,notes,link_gbps,link_source
H100 SXM,NVIDIA,80,NVIDIA H100 Tensor Core GPU datasheet (2023),3.35,NVIDIA H100 Tensor Core GPU datasheet (2023),989.5,"NVIDIA H100 Tensor Core GPU datasheet (2023): 1,979* with sparsity, halved",1979,"NVIDIA H100 Tensor Core GPU datasheet (2023): 3,958* with sparsity, halved",,no FP4 tensor cores (Hopper),700,NVIDIA H100 Tensor Core GPU datasheet (2023): up to 700 W (configurable),H100; H100 SXM5; H100-SXM5-80GB,The datasheet prints tensor figures with sparsity (asterisk); dense = half. H100 alone (as nightly suites write it) names this SXM part; the PCIe card has 2.0 TB/s and is not in the catalogue.,450,"NVIDIA H100 datasheet (2023): NVLink 900 GB/s (both directions), 450 per direction"
H200,NVIDIA,141,NVIDIA H200 Tensor Core GPU datasheet (2024),4.8,NVIDIA H200 Tensor Core GPU datasheet (2024),989.5,"NVIDIA H200 Tensor Core GPU datasheet (2024): 1,979* with sparsity, halved",1979,"NVIDIA H200 Tensor Core GPU datasheet (2024): 3,958* with sparsity, halved",,no FP4 tensor cores (Hopper),700,NVIDIA H200 Tensor Core GPU datasheet (2024): up to 700 W (configurable),H200 SXM,H200 SXM. Same compute as H100 SXM; more and faster HBM3e. Sparse figures halved.,450,"NVIDIA H200 datasheet (2024): NVLink 900 GB/s (both directions), 450 per direction"
B200,NVIDIA,180,"NVIDIA Blackwell datasheet (2025), HGX B200 column",7.7,"NVIDIA Blackwell datasheet (2025), HGX B200 column",2250,"NVIDIA Blackwell datasheet (2025), HGX B200: 4.5 PFLOPS with sparsity, halved",4500,"NVIDIA Blackwell datasheet (2025), HGX B200: 9 PFLOPS with sparsity, halved",9000,"NVIDIA Blackwell datasheet (2025), HGX B200: 18 PFLOPS with sparsity, halved",1000,"NVIDIA Blackwell datasheet (2025), HGX B200: configurable up to 1,000 W",,One Blackwell GPU of an HGX B200 board. The datasheet's per-GPU tensor figures are with sparsity; dense = half.,900,"NVIDIA Blackwell datasheet (2025), HGX B200: NVLink 1.8 TB/s per GPU (both directions), 900 per direction"
GB200,NVIDIA,186,"NVIDIA Blackwell datasheet (2025), GB200 NVL72 column (13.4 TB HBM3e over 72 GPUs)",8,"NVIDIA Blackwell datasheet (2025), GB200 NVL72 column (576 TB/s over 72 GPUs)",2500,"NVIDIA Blackwell datasheet (2025), GB200 NVL72: 5 PFLOPS with sparsity, halved",5000,"NVIDIA Blackwell datasheet (2025), GB200 NVL72: 10 PFLOPS with sparsity, halved",10000,"NVIDIA Blackwell datasheet (2025), GB200 NVL72: 20 PFLOPS with sparsity, halved",1200,"NVIDIA Blackwell datasheet (2025), GB200 NVL72: configurable up to 1,200 W per GPU",,One Blackwell GPU of a GB200 superchip (two per Grace CPU). Grace CPU power not included. Sparse figures halved.,900,"NVIDIA Blackwell datasheet (2025), GB200 NVL72: NVLink 1.8 TB/s per GPU (both directions), 900 per direction"
MI300X,AMD,192,AMD Instinct MI300X accelerator data sheet (2023),5.3,AMD Instinct MI300X accelerator data sheet (2023),1307.4,"AMD Instinct MI300X accelerator data sheet (2023): peak FP16/BF16 dense (2,614.9 with structured sparsity)",2614.9,"AMD Instinct MI300X accelerator data sheet (2023): peak FP8 dense (5,229.8 with structured sparsity)",,no FP4 matrix support (CDNA 3),750,AMD Instinct MI300X accelerator data sheet (2023): 750 W total board power,,AMD prints dense and sparse figures separately; the dense ones are used.,448,"AMD Instinct MI300X data sheet (2023): 7 Infinity Fabric links, 896 GB/s peer-to-peer (both directions), 448 per direction"
MI325X,AMD,256,AMD Instinct MI325X accelerator data sheet (2024),6,AMD Instinct MI325X accelerator data sheet (2024),1307.4,"AMD Instinct MI325X accelerator data sheet (2024): peak FP16/BF16 dense (2,614.9 with structured sparsity)",2614.9,"AMD Instinct MI325X accelerator data sheet (2024): peak FP8 dense (5,229.8 with structured sparsity)",,no FP4 matrix support (CDNA 3),1000,AMD Instinct MI325X accelerator data sheet (2024): 1000 W total board power,,Same compute as MI300X; 256 GB HBM3E.,448,"AMD Instinct MI325X data sheet (2024): 7 Infinity Fabric links, 896 GB/s peer-to-peer (both directions), 448 per direction"
L40S,NVIDIA,48,NVIDIA L40S GPU datasheet (2023): 48 GB GDDR6 with ECC,0.864,NVIDIA L40S GPU datasheet (2023): 864 GB/s,362.05,NVIDIA L40S GPU datasheet (2023): BF16 362.05 dense (733* with sparsity),733,"NVIDIA L40S GPU datasheet (2023): FP8 733 dense (1,466* with sparsity)",,no FP4 tensor cores (Ada Lovelace),350,NVIDIA L40S GPU datasheet (2023): max power 350 W,,"GDDR6, not HBM: hbm_gb is the card's memory. The datasheet prints dense and sparse (asterisk) side by side; the dense figures are used.",32,"NVIDIA L40S datasheet (2023): no NVLink; PCIe Gen4 x16, 64 GB/s (both directions), 32 per direction"
B300,NVIDIA,288,"NVIDIA HGX B300 datasheet (2025): 2.3 TB HBM3e over 8 GPUs, 288 GB per Blackwell Ultra GPU",8,NVIDIA HGX B300 datasheet (2025): 64 TB/s over 8 GPUs,2250,"NVIDIA HGX B300 datasheet (2025): FP16/BF16 36 PFLOPS with sparsity over 8 GPUs = 4.5 per GPU, halved",4500,"NVIDIA HGX B300 datasheet (2025): FP8 72 PFLOPS with sparsity over 8 GPUs = 9 per GPU, halved",13500,NVIDIA HGX B300 datasheet (2025): FP4 144 PFLOPS with sparsity / 108 PFLOPS dense over 8 GPUs; 108 ÷ 8,1100,"NVIDIA HGX B300 (2025): about 1,100 W per GPU",,One Blackwell Ultra GPU of an HGX B300 board. NVIDIA prints the tensor figures with sparsity; dense = half (FP4: the dense figure NVIDIA gives).,900,"NVIDIA HGX B300 datasheet (2025): NVLink 1.8 TB/s per GPU (both directions), 900 per direction"
GB300,NVIDIA,278,NVIDIA GB300 NVL72 datasheet (2025): up to 20 TB HBM3e over 72 GPUs (277.8 GB each),8,NVIDIA GB300 NVL72 datasheet (2025): up to 576 TB/s over 72 GPUs,2500,"NVIDIA GB300 NVL72 datasheet (2025): FP16/BF16 360 PFLOPS with sparsity over 72 GPUs = 5 per GPU, halved",5000,"NVIDIA GB300 NVL72 datasheet (2025): FP8 720 PFLOPS with sparsity over 72 GPUs = 10 per GPU, halved",15000,"NVIDIA GB300 NVL72 datasheet (2025): FP4 1,440 PFLOPS with sparsity / 1,080 dense over 72 GPUs; 1,080 ÷ 72",1400,"NVIDIA GB300 NVL72 (2025): configurable up to 1,400 W per GPU",,One Blackwell Ultra GPU of a GB300 superchip. Grace CPU power not included. Sparse figures halved.,900,"NVIDIA GB300 NVL72 datasheet (2025): NVLink 1.8 TB/s per GPU (both directions), 900 per direction"
MI355X,AMD,288,AMD Instinct MI355X GPU data sheet (2025): 288 GB HBM3E,8,AMD Instinct MI355X GPU data sheet (2025): 8 TB/s peak memory bandwidth,2516.6,AMD Instinct MI355X GPU data sheet (2025): peak FP16/BF16 dense 2.5 PFLOPS (5.0 with structured sparsity),5033.2,AMD Instinct MI355X GPU data sheet (2025): peak FP8 dense 5.0 PFLOPS (10.1 with structured sparsity),10066.4,AMD Instinct MI355X GPU data sheet (2025): peak MXFP4 dense 10.1 PFLOPS,1400,AMD Instinct MI355X GPU data sheet (2025): 1400 W total board power,,CDNA 4. AMD prints dense and sparse figures separately; the dense ones are used.,538,"AMD Instinct MI355X data sheet (2025): 7 Infinity Fabric links, 1,075 GB/s peer-to-peer (both directions), 538 per direction"
H20,NVIDIA,96,NVIDIA HGX H20 product specification (2024): 96 GB HBM3,4,NVIDIA HGX H20 product specification (2024): 4.0 TB/s,148,"NVIDIA HGX H20 product specification (2024): FP16/BF16 296 TFLOPS with sparsity, halved (148 dense)",296,"NVIDIA HGX H20 product specification (2024): FP8 592 TFLOPS with sparsity, halved (296 dense)",,no FP4 tensor cores (Hopper),400,NVIDIA HGX H20 product specification (2024): 400 W,,"Hopper part for the Chinese market: H100-class memory bandwidth, about 15% of H100's tensor throughput, so decode of large batches turns compute bound early.",450,"NVIDIA HGX H20 product specification (2024): NVLink 900 GB/s (both directions), 450 per direction"
''',
    'data/method.csv': r'''name,value,unit,figure,what,source
weight_bandwidth_share,1.0,fraction,attainable,"share of the datasheet memory bandwidth at which a step streams its weights","NVIDIA NIM (TensorRT-LLM), Llama-3-8B on one H100 SXM, BF16, batch 1, ISL 1,000: inter-token latency 4.70 ms, 96 % of the datasheet-bandwidth bound (docs.nvidia.com/nim benchmarking; measurements.csv row A3): an attainable figure below it would be beaten, so weights stream at the full datasheet bandwidth"
kv_bandwidth_share,0.70,fraction,attainable,"share of the datasheet bandwidth at which decode attention reads the KV cache","paged decode-attention kernels read the cache in pages of 16-64 tokens per sequence and head group; published decode-attention kernels (FlashDecoding, FlashInfer) report 60-85 % of peak bandwidth on H100; 0.70 for the paged layouts serving engines use"
dense_mfu,0.70,fraction,attainable,"achievable share of the dense tensor peak for the matrix multiplies of attention projections, dense and shared-expert layers and the LM head","large FP8/BF16 GEMMs of LLM shapes reach about 70 % of the dense peak on Hopper and Blackwell (cuBLAS); MLPerf Inference v4.1 closed, Llama-2-70B Offline on 8 x H200 (NVIDIA): 31,302.7 tokens/s, 55 % of the FP8 peak over the whole model including attention (measurements.csv row T17)"
moe_mfu,0.30,fraction,attainable,"achievable share of the tensor peak for the grouped GEMMs of routed experts","a step gives each routed expert only B x k / E tokens (about 64 at batch 1,024 for 128 experts, top 8), so grouped expert GEMMs run on small, unevenly filled tiles; with 0.30 TensorRT-LLM's published MoE results (measurements.csv T5, T7, T11) sit at 0.5-1.0 of the attainable figure"
attention_mfu,0.50,fraction,attainable,"achievable share of the tensor peak for attention scores and the weighted sum","FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), abstract: on H100 FP16 attention reaches up to 740 TFLOPS (75 % utilisation) and FP8 close to 1.2 PFLOPS (about 60 % of the FP8 dense peak), at long sequences; 0.50 for the mix of short decode queries and prefill chunks, below what the paper's long-sequence kernels reach"
memory_reserve,0.10,fraction,attainable,"share of the memory the weights leave free that is kept for activations, CUDA graphs and the runtime (not for the KV cache)","TensorRT-LLM's KvCacheConfig free_gpu_memory_fraction default 0.9 (its KV-cache guide: 90 % of the GPU memory free after the weights are loaded goes to the KV cache); vLLM's gpu_memory_utilization 0.9 keeps 10 % of the whole memory"
batch_cap,1024,sequences,attainable,"most sequences one serving instance (replica) decodes together","engines cap the running batch: TensorRT-LLM's LLM API max_batch_size default 2,048 (tensorrt_llm/llmapi/llm_args.py); vLLM's max_num_seqs default 1,024 on GPUs of 70 GiB or more other than A100 and 256 on others (vllm/engine/arg_utils.py get_batch_defaults); 1,024 sequences per replica, the same cap for attention data-parallel replicas"
layer_overhead_s,2e-6,s,attainable,"fixed time per layer per step (kernel launches and synchronisation inside a CUDA graph)","NVIDIA NIM's Llama-3-8B at batch 1 on one H100 (row A3) leaves at most 5.6 us per layer between the bandwidth bound and the measured inter-token latency; 2 us is launch plus synchronisation of about ten kernels in a captured graph"
collective_latency_s,10e-6,s,attainable,"latency of one tensor-parallel all-reduce or expert-parallel exchange between 2 GPUs","small-message NVLink all-reduce latency: TensorRT-LLM's one-shot custom all-reduce and NCCL's low-latency protocols take 5-20 us per collective on H100/H200 NVSwitch systems (NVIDIA technical blog: 3x faster AllReduce with NVSwitch and TensorRT-LLM MultiShot, 2024)"
collective_latency_per_doubling_s,2e-6,s,attainable,"extra collective latency for each doubling of the group beyond 2 GPUs","a tree or two-shot all-reduce adds a hop per doubling of the group: the per-step floor grows with the group size"
collectives_per_layer,2,collectives,attainable,"collectives per layer in a tensor-parallel step","Megatron-LM tensor parallelism (Shoeybi et al. 2019, arXiv:1909.08053): one all-reduce after attention and one after the MLP or MoE block in each layer"
link_efficiency,0.80,fraction,attainable,"share of the per-direction GPU-to-GPU link bandwidth a collective moves data at","NCCL's maintainers on NVIDIA/nccl-tests issue 212 (H100, 2024): NVLink's 450 GB/s is the line rate, and with the protocol overhead (about 20 %) NCCL moves about 370 GB/s, the bus bandwidth of a ring collective: about 0.80 of the per-direction line rate"
kv_bits_under_4bit,8,bits,both,"KV-cache precision when the weights are 4-bit and no KV precision is given","4-bit checkpoints ship with an 8-bit KV cache: NVIDIA ModelOpt NVFP4 checkpoints (FP8 KV), AMD Quark MXFP4 checkpoints (FP8 KV)"
accepted_tokens_mtp,3.2,tokens per step,both,"tokens a multi-token-prediction (MTP) step yields on average, at the three draft tokens engines run it with","DeepSeek-V3 technical report (arXiv:2412.19437) section 5.4.3: the second token of MTP is accepted 85-90 % of the time; engines draft up to three tokens with the MTP layers (TensorRT-LLM's num_nextn_predict_layers 3, the setting of row A6's source): 1 + 0.85 + 0.85^2 + 0.85^3 = 3.2 tokens a step if each draft is accepted at that rate after the one before"
accepted_tokens_medusa,2.3,tokens per step,both,"tokens a Medusa step yields on average","Medusa (Cai et al. 2024, arXiv:2401.10774; FasterDecoding/Medusa README): 2.2-3.6 x speed-up over the original model on a range of LLMs; NVIDIA's HGX H200 Llama-3.1 Medusa blog (2024, row A5's source): up to 1.9 x; a step's accepted tokens are at least the speed-up"
accepted_tokens_eagle,3.0,tokens per step,both,"tokens an EAGLE (EAGLE-2/EAGLE-3) step yields on average","EAGLE-3 (Li et al. 2025, arXiv:2503.01840) draft models served by SGLang with three draft steps: average acceptance lengths of 3.0-3.5 tokens per step (AQ-MedAI's EAGLE-3 draft of Qwen3.5-397B-A17B, model card: MT-Bench 3.03, GSM8K 3.40, Math500 3.53, HumanEval 3.47)"
''',
    'data/models.csv': r'''name,kind,total_params,active_params,layers,kv_heads,head_dim,kv_latent_dim,sliding_window,sliding_window_layers,max_context,hidden_size,embedding_params,embedding_source,query_heads,rope_dim,attention_source,attention_params,moe_layers,experts,experts_per_token,expert_params,moe_source,source,aliases,notes,released_dense_precision,weight_only_experts,release_source
Llama-3.1-8B,dense,8030261248,8030261248,32,8,128,,,,131072,4096,525336576,"meta-llama/Llama-3.1-8B config.json: vocab_size 128,256 × hidden_size 4,096; tie_word_embeddings false (the LM head is a separate matrix, read whole)",32,,meta-llama/Llama-3.1-8B config.json: num_attention_heads 32,,,,,,,"meta-llama/Llama-3.1-8B config.json (hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, vocab_size 128256); Llama 3.1 model card (Jul 2024)",Llama-3.1-8B-Instruct; Meta-Llama-3.1-8B; Meta-Llama-3.1-8B-Instruct,Parameters counted from config.json (untied embeddings); the model card rounds to 8B.,,,
Llama-3.1-70B,dense,70553706496,70553706496,80,8,128,,,,131072,8192,1050673152,"meta-llama/Llama-3.1-70B config.json: vocab_size 128,256 × hidden_size 8,192; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,meta-llama/Llama-3.1-70B config.json: num_attention_heads 64,,,,,,,"meta-llama/Llama-3.1-70B config.json (hidden_size 8192, intermediate_size 28672, num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, vocab_size 128256); Llama 3.1 model card (Jul 2024)",Llama-3.1-70B-Instruct; Meta-Llama-3.1-70B-Instruct; Llama-3.3-70B-Instruct,Parameters counted from config.json (untied embeddings); the model card rounds to 70B.,,,
Llama-3.1-405B,dense,405853388800,405853388800,126,8,128,,,,131072,16384,2101346304,"meta-llama/Llama-3.1-405B config.json: vocab_size 128,256 × hidden_size 16,384; tie_word_embeddings false (the LM head is a separate matrix, read whole)",128,,meta-llama/Llama-3.1-405B config.json: num_attention_heads 128,,,,,,,"meta-llama/Llama-3.1-405B config.json (hidden_size 16384, intermediate_size 53248, num_hidden_layers 126, num_attention_heads 128, num_key_value_heads 8, vocab_size 128256); Llama 3.1 model card (Jul 2024)",Llama-3.1-405B-Instruct; Meta-Llama-3.1-405B-Instruct,Parameters counted from config.json (untied embeddings); the model card rounds to 405B.,,,
Qwen2.5-72B,dense,72706203648,72706203648,80,8,128,,,,131072,8192,1245708288,"Qwen/Qwen2.5-72B-Instruct config.json: vocab_size 152,064 × hidden_size 8,192; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,Qwen/Qwen2.5-72B-Instruct config.json: num_attention_heads 64,,,,,,,"Qwen/Qwen2.5-72B-Instruct config.json (hidden_size 8192, intermediate_size 29568, num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, vocab_size 152064, QKV bias); model card: 72.7B parameters, 131,072-token context with YaRN",Qwen2.5-72B-Instruct,Parameters counted from config.json; agrees with the model card's 72.7B.,,,
DeepSeek-V3,moe,671000000000,37000000000,61,128,128,576,,,163840,7168,926679040,"deepseek-ai/DeepSeek-V3 config.json: vocab_size 129,280 × hidden_size 7,168; tie_word_embeddings false (the LM head is a separate matrix, read whole)",128,64,"deepseek-ai/DeepSeek-V3 config.json: num_attention_heads 128; qk_rope_head_dim 64; attention_params: deepseek-ai/DeepSeek-V3 config.json, per layer: q_a_proj 7,168 × q_lora_rank 1,536 + q_b_proj 1,536 × 128 heads × 192 (qk_nope 128 + rope 64) + kv_a_proj 7,168 × 576 + kv_b_proj 512 × 128 × 256 (k_nope 128 + v 128) + o_proj 128 × 128 × 7,168 = 187,105,280; × 61 layers",11413422080,58,256,8,44040192,"deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61 − first_k_dense_replace 3 = 58 MoE layers (moe_layer_freq 1); 256 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 7,168 × expert intermediate size 2,048","deepseek-ai/DeepSeek-V3 model card (Dec 2024): 671B total, 37B activated per token; config.json: num_hidden_layers 61, kv_lora_rank 512, qk_rope_head_dim 64, num_attention_heads 128, v_head_dim 128, max_position_embeddings 163840",DeepSeek-V3-0324,"Multi-head latent attention (MLA): the KV cache holds one compressed latent of kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 elements per layer per token (keys and values share it), instead of 2 x kv_heads x head_dim. The multi-token-prediction module (14B) is not counted.",,,
DeepSeek-V3.1,moe,671000000000,37000000000,61,128,128,576,,,163840,7168,926679040,"deepseek-ai/DeepSeek-V3.1 config.json: vocab_size 129,280 × hidden_size 7,168; tie_word_embeddings false (the LM head is a separate matrix, read whole)",128,64,"deepseek-ai/DeepSeek-V3.1 config.json: num_attention_heads 128; qk_rope_head_dim 64; attention_params: deepseek-ai/DeepSeek-V3.1 config.json, per layer: q_a_proj 7,168 × q_lora_rank 1,536 + q_b_proj 1,536 × 128 heads × 192 (qk_nope 128 + rope 64) + kv_a_proj 7,168 × 576 + kv_b_proj 512 × 128 × 256 (k_nope 128 + v 128) + o_proj 128 × 128 × 7,168 = 187,105,280; × 61 layers",11413422080,58,256,8,44040192,"deepseek-ai/DeepSeek-V3.1 config.json: num_hidden_layers 61 − first_k_dense_replace 3 = 58 MoE layers (moe_layer_freq 1); 256 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 7,168 × expert intermediate size 2,048","deepseek-ai/DeepSeek-V3.1 model card (Aug 2025): 671B total, 37B activated, 128K context; config.json: the DeepSeek-V3 architecture (num_hidden_layers 61, kv_lora_rank 512, qk_rope_head_dim 64, num_attention_heads 128, v_head_dim 128, max_position_embeddings 163840)",,Same architecture as DeepSeek-V3: MLA caches kv_lora_rank + qk_rope_head_dim = 576 elements per layer per token. The multi-token-prediction module is not counted.,,,
DeepSeek-R1,moe,671000000000,37000000000,61,128,128,576,,,163840,7168,926679040,"deepseek-ai/DeepSeek-R1 config.json: vocab_size 129,280 × hidden_size 7,168; tie_word_embeddings false (the LM head is a separate matrix, read whole)",128,64,"deepseek-ai/DeepSeek-R1 config.json: num_attention_heads 128; qk_rope_head_dim 64; attention_params: deepseek-ai/DeepSeek-R1 config.json, per layer: q_a_proj 7,168 × q_lora_rank 1,536 + q_b_proj 1,536 × 128 heads × 192 (qk_nope 128 + rope 64) + kv_a_proj 7,168 × 576 + kv_b_proj 512 × 128 × 256 (k_nope 128 + v 128) + o_proj 128 × 128 × 7,168 = 187,105,280; × 61 layers",11413422080,58,256,8,44040192,"deepseek-ai/DeepSeek-R1 config.json: num_hidden_layers 61 − first_k_dense_replace 3 = 58 MoE layers (moe_layer_freq 1); 256 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 7,168 × expert intermediate size 2,048","deepseek-ai/DeepSeek-R1 model card (Jan 2025): 671B total, 37B activated, built on DeepSeek-V3-Base; config.json: the DeepSeek-V3 architecture (num_hidden_layers 61, kv_lora_rank 512, qk_rope_head_dim 64, num_attention_heads 128, v_head_dim 128, max_position_embeddings 163840)",DeepSeek-R1-0528,Same architecture as DeepSeek-V3: MLA caches kv_lora_rank + qk_rope_head_dim = 576 elements per layer per token. The multi-token-prediction module is not counted.,,,
gpt-oss-120b,moe,116800000000,5709133440,36,8,64,,128,18,131072,2880,579133440,"openai/gpt-oss-120b config.json: vocab_size 201,088 × hidden_size 2,880; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,openai/gpt-oss-120b config.json: num_attention_heads 64,,36,128,4,24883200,"openai/gpt-oss-120b config.json: every one of the 36 layers is MoE; 128 routed experts, 4 per token; one expert = 3 (gate, up, down) × hidden_size 2,880 × expert intermediate size 2,880","openai/gpt-oss-120b model card (Aug 2025): 117B parameters (116.8B), 5.13B active per token without the input embedding (routed 4 × 36 × 24,883,200 = 3.583B + attention 0.956B + LM head 0.579B + router 0.013B), so 5.13B + 579,133,440 embedding = 5,709,133,440 here; config.json: num_hidden_layers 36, num_key_value_heads 8, head_dim 64, sliding_window 128, layer_types alternating sliding_attention / full_attention",,Half of the layers (18 of 36) attend over a 128-token sliding window and cache at most 128 tokens each. Expert weights ship in MXFP4.,bf16,yes,"openai/gpt-oss-120b config.json quantization_config: quant_method mxfp4, modules_to_not_convert model.layers.*.self_attn, model.layers.*.mlp.router, model.embed_tokens, lm_head (only the experts are MXFP4, the rest BF16); NVIDIA/TensorRT-LLM examples/models/core/gpt_oss/README.md: MoE weights pre-quantized to mxfp4, all the other weights in bf16; the activation is bf16 on Hopper and mxfp8 on Blackwell"
gpt-oss-20b,moe,20900000000,4189133440,24,8,64,,128,12,131072,2880,579133440,"openai/gpt-oss-20b config.json: vocab_size 201,088 × hidden_size 2,880; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,openai/gpt-oss-20b config.json: num_attention_heads 64,,24,32,4,24883200,"openai/gpt-oss-20b config.json: every one of the 24 layers is MoE; 32 routed experts, 4 per token; one expert = 3 (gate, up, down) × hidden_size 2,880 × expert intermediate size 2,880","openai/gpt-oss-20b model card (Aug 2025): 21B parameters (20.9B), 3.61B active per token without the input embedding (routed 4 × 24 × 24,883,200 = 2.389B + attention 0.637B + LM head 0.579B + router 0.002B), so 3.61B + 579,133,440 embedding = 4,189,133,440 here; config.json: num_hidden_layers 24, num_key_value_heads 8, head_dim 64, sliding_window 128, alternating layer_types",,Half of the layers (12 of 24) use a 128-token sliding window.,bf16,yes,"openai/gpt-oss-20b config.json quantization_config: quant_method mxfp4, modules_to_not_convert model.layers.*.self_attn, model.layers.*.mlp.router, model.embed_tokens, lm_head (only the experts are MXFP4, the rest BF16); NVIDIA/TensorRT-LLM examples/models/core/gpt_oss/README.md: MoE weights pre-quantized to mxfp4, all the other weights in bf16; the activation is bf16 on Hopper and mxfp8 on Blackwell"
Qwen3-235B-A22B,moe,235000000000,22000000000,94,4,128,,,,131072,4096,622329856,"Qwen/Qwen3-235B-A22B config.json: vocab_size 151,936 × hidden_size 4,096; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,Qwen/Qwen3-235B-A22B config.json: num_attention_heads 64,,94,128,8,18874368,"Qwen/Qwen3-235B-A22B config.json: decoder_sparse_step 1 and no mlp_only_layers: all 94 layers are MoE; 128 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 4,096 × expert intermediate size 1,536","Qwen/Qwen3-235B-A22B model card (Apr 2025): 235B total, 22B activated, 32,768 tokens native and 131,072 with YaRN; config.json: num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4, head_dim 128",Qwen3-235B-A22B-Instruct-2507; Qwen3-235B-A22B-Thinking-2507,"Grouped-query attention (64 query heads, 4 KV heads).",,,
Qwen3-30B-A3B,moe,30500000000,3300000000,48,4,128,,,,131072,2048,311164928,"Qwen/Qwen3-30B-A3B config.json: vocab_size 151,936 × hidden_size 2,048; tie_word_embeddings false (the LM head is a separate matrix, read whole)",32,,Qwen/Qwen3-30B-A3B config.json: num_attention_heads 32,,48,128,8,4718592,"Qwen/Qwen3-30B-A3B config.json: decoder_sparse_step 1 and no mlp_only_layers: all 48 layers are MoE; 128 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 2,048 × expert intermediate size 768","Qwen/Qwen3-30B-A3B model card (Apr 2025): 30.5B total, 3.3B activated, 32,768 tokens native and 131,072 with YaRN; config.json: num_hidden_layers 48, num_attention_heads 32, num_key_value_heads 4, head_dim 128",Qwen3-30B-A3B-Instruct-2507; Qwen3-30B-A3B-Thinking-2507,"Grouped-query attention (32 query heads, 4 KV heads).",,,
Qwen3-32B,dense,32800000000,32800000000,64,8,128,,,,131072,5120,777912320,"Qwen/Qwen3-32B config.json: vocab_size 151,936 × hidden_size 5,120; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,,Qwen/Qwen3-32B config.json: num_attention_heads 64,,,,,,,"Qwen/Qwen3-32B model card (Apr 2025): 32.8B parameters, 32,768 tokens native and 131,072 with YaRN; config.json: num_hidden_layers 64, num_attention_heads 64, num_key_value_heads 8, head_dim 128, intermediate_size 25600",,"Dense; grouped-query attention (64 query heads, 8 KV heads).",,,
Kimi-K2,moe,1026000000000,32000000000,61,64,128,576,,,131072,7168,1174405120,"moonshotai/Kimi-K2-Instruct config.json: vocab_size 163,840 × hidden_size 7,168; tie_word_embeddings false (the LM head is a separate matrix, read whole)",64,64,"moonshotai/Kimi-K2-Instruct config.json: num_attention_heads 64; qk_rope_head_dim 64; attention_params: moonshotai/Kimi-K2-Instruct config.json, per layer: q_a_proj 7,168 × 1,536 + q_b_proj 1,536 × 64 heads × 192 + kv_a_proj 7,168 × 576 + kv_b_proj 512 × 64 × 256 + o_proj 64 × 128 × 7,168 = 101,122,048; × 61 layers",6168444928,60,384,8,44040192,"moonshotai/Kimi-K2-Instruct config.json: num_hidden_layers 61 − first_k_dense_replace 1 = 60 MoE layers; 384 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 7,168 × expert intermediate size 2,048","moonshotai/Kimi-K2-Instruct model card (Jul 2025): 1T total, 32B activated, 128K context; config.json: num_hidden_layers 61, num_attention_heads 64, kv_lora_rank 512, qk_rope_head_dim 64, v_head_dim 128",Kimi-K2-Instruct; Kimi-K2-Base,"DeepSeek-V3 architecture with 384 experts and 64 heads: MLA caches 512 + 64 = 576 elements per layer per token. The model card rounds the total to 1T; counted from config.json it is about 1.026T (60 MoE layers × 384 experts × 44.04 M parameters = 1,014.7 B, plus the 32 B active less its 8 routed experts), the figure used so that a large batch cannot read more than the model holds.",,,
GLM-4.5,moe,355000000000,32000000000,92,8,128,,,,131072,5120,775946240,"zai-org/GLM-4.5 config.json: vocab_size 151,552 × hidden_size 5,120; tie_word_embeddings false (the LM head is a separate matrix, read whole)",96,,zai-org/GLM-4.5 config.json: num_attention_heads 96,,89,160,8,23592960,"zai-org/GLM-4.5 config.json: num_hidden_layers 92 − first_k_dense_replace 3 = 89 MoE layers; 160 routed experts, 8 per token; one expert = 3 (gate, up, down) × hidden_size 5,120 × expert intermediate size 1,536","zai-org/GLM-4.5 model card (Jul 2025): 355B total, 32B active, 128K context; config.json: num_hidden_layers 92, num_attention_heads 96, num_key_value_heads 8, head_dim 128",,"Grouped-query attention (96 query heads, 8 KV heads). The multi-token-prediction layer (num_nextn_predict_layers 1) is not counted.",,,
Llama-4-Maverick,moe,400000000000,17000000000,48,8,128,,8192,36,1048576,5120,1034485760,"meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (text_config): vocab_size 202,048 × hidden_size 5,120; tie_word_embeddings false (the LM head is a separate matrix, read whole)",40,,meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (text_config): num_attention_heads 40,,24,128,1,125829120,"meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (text_config): interleave_moe_layer_step 2: 24 of the 48 layers are MoE; 128 routed experts, 1 per token; one expert = 3 (gate, up, down) × hidden_size 5,120 × expert intermediate size 8,192","meta-llama/Llama-4-Maverick-17B-128E-Instruct model card (Apr 2025): 400B total, 17B active, 1M context; config.json text_config: num_hidden_layers 48, num_attention_heads 40, num_key_value_heads 8, head_dim 128, attention_chunk_size 8192",Llama-4-Maverick-17B-128E-Instruct; Llama-4-Maverick-17B-128E,"Three of every four layers use chunked attention over 8,192-token chunks (counted as a 8,192-token window: an upper limit on what they cache); every fourth layer attends globally.",,,
Llama-4-Scout,moe,109000000000,17000000000,48,8,128,,8192,36,10485760,5120,1034485760,"meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config): vocab_size 202,048 × hidden_size 5,120; tie_word_embeddings false (the LM head is a separate matrix, read whole)",40,,meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config): num_attention_heads 40,,48,16,1,125829120,"meta-llama/Llama-4-Scout-17B-16E-Instruct config.json (text_config): interleave_moe_layer_step 1: all 48 layers are MoE; 16 routed experts, 1 per token; one expert = 3 (gate, up, down) × hidden_size 5,120 × expert intermediate size 8,192","meta-llama/Llama-4-Scout-17B-16E-Instruct model card (Apr 2025): 109B total, 17B active, 10M context; config.json text_config: num_hidden_layers 48, num_attention_heads 40, num_key_value_heads 8, head_dim 128, attention_chunk_size 8192",Llama-4-Scout-17B-16E-Instruct; Llama-4-Scout-17B-16E,"Three of every four layers use chunked attention over 8,192-token chunks (counted as a 8,192-token window); every fourth layer attends globally.",,,
''',
}


class _Data:
    """A file or folder of the bundled package data, as importlib.resources.files() gives it."""

    def __init__(self, path=""):
        self._path = path
        self.name = path.rsplit("/", 1)[-1]

    def _children(self):
        prefix = self._path + "/" if self._path else ""
        return sorted({prefix + key[len(prefix):].split("/")[0]
                       for key in _DATA if key.startswith(prefix)})

    def is_file(self):
        return self._path in _DATA

    def is_dir(self):
        return not self.is_file() and bool(self._children())

    def iterdir(self):
        return iter([_Data(child) for child in self._children()])

    def joinpath(self, *names):
        parts = [self._path] if self._path else []
        for name in names:
            parts.extend(part for part in str(name).split("/") if part)
        return _Data("/".join(parts))

    __truediv__ = joinpath

    def read_text(self, encoding=None, errors=None):
        if not self.is_file():
            raise FileNotFoundError(f"{_PACKAGE}/{self._path}")
        return _DATA[self._path]

    def read_bytes(self):
        return self.read_text().encode("utf-8")

    def open(self, mode="r", *args, **kwargs):
        return _io.BytesIO(self.read_bytes()) if "b" in mode else _io.StringIO(self.read_text())


class _Reader:
    def files(self):
        return _Data()


class _Bundle(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Imports the bundled modules of tokenfactory_xl from the sources above."""

    #: marks the finders and modules of any run of this file, this one's or an earlier paste's
    tokenfactory_xl_bundle = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PACKAGE and fullname not in _SOURCES:
            return None
        spec = _machinery.ModuleSpec(fullname, self, origin=self._file(fullname),
                                     is_package=fullname == _PACKAGE or fullname in _PACKAGES)
        spec.has_location = False
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        module.__file__ = self._file(name)
        if name == _PACKAGE:
            module.__version__ = _VERSION
            module.__doc__ = "tokenfactory_xl, as bundled for xlwings Lite: " + ", ".join(
                sorted(key.rsplit(".", 1)[-1] for key in _SOURCES)) + "."
            return
        source = _SOURCES[name]
        # Tracebacks then show the line that failed.
        _linecache.cache[module.__file__] = (len(source), None, source.splitlines(True),
                                            module.__file__)
        exec(compile(source, module.__file__, "exec"), module.__dict__)

    def get_resource_reader(self, fullname):
        return _Reader() if fullname == _PACKAGE else None

    @staticmethod
    def _file(fullname):
        return "<bundled " + fullname.replace(".", "/") + (
            "/__init__.py>" if fullname == _PACKAGE or fullname in _PACKAGES else ".py>")



def _from_a_bundle(thing):
    return getattr(thing, "tokenfactory_xl_bundle", False) is True


if _PACKAGE in _sys.modules and not _from_a_bundle(
        getattr(_sys.modules[_PACKAGE], "__loader__", None)):
    raise ImportError("another tokenfactory_xl is already imported; this file is for "
                      "xlwings Lite, where the package itself is not installed")
# Run again in the same process (pasted again, perhaps a newer version): the earlier run's
# finder and modules make way, so the sources above are the ones imported.
_sys.meta_path[:] = [finder for finder in _sys.meta_path if not _from_a_bundle(finder)]
for _name in [n for n in _sys.modules if n == _PACKAGE or n.startswith(_PACKAGE + ".")]:
    del _sys.modules[_name]
_sys.meta_path.insert(0, _Bundle())

_udfs = _importlib.import_module(_PACKAGE + "." + _ROOT)
globals().update({name: getattr(_udfs, name) for name in _udfs.__all__})
__all__ = list(_udfs.__all__)
