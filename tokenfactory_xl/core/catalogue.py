"""The input catalogue: every input of a token-factory site, stated once.

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
