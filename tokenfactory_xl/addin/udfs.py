"""The Excel functions: ``=TEF()``, ``=TFI()``, ``=BREAKEVEN_UTIL()`` … for finance teams.

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
