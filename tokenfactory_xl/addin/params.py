"""The Excel functions' arguments: one rule and one help text for each argument name.

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
