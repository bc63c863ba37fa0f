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
2. **One source.** Each argument name is declared once in :data:`PARAMS` with its rule (the
   catalogue's where the argument is a site input) and its help; a new function adds its names
   there, a thin decorated function calling :func:`_call` with the model's formula, and its
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
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, product

import numpy as np
import xlwings as xw

from ..core import economics as model
from ..core import roofline, specs
from ..core import serving as capacity
from ..core.catalogue import BY_NAME, BadValue, Input, fmt_number
from ..core.errors import InputError, Problem, TokenFactoryError

#: The function-wizard category of every function of this module.
CATEGORY = "Token Factory"

#: Excel's own error codes, as the strings Office.js turns into real error values.
DIV0, NUM, NA = "#DIV/0!", "#NUM!", "#N/A"

#: Every error value a cell can hold, as xlwings hands it over with ``err_to_str`` (every
#: argument is read that way): an argument's error comes back as the result's error at its
#: position, as Excel's own functions propagate it, instead of reading as an empty cell.
EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A",
                          "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!",
                          "#CONNECT!", "#BUSY!", "#UNKNOWN!", "#DATA!", "#PYTHON!"})

#: Excel cuts function and argument descriptions at this many characters.
EXCEL_HELP_LIMIT = 255


class ArgumentError(TokenFactoryError, xw.XlwingsError, ValueError):
    """An Excel function was given an argument it cannot use; the message says which and why.

    A subclass of ``xlwings.XlwingsError`` so that Office.js runtimes show it as ``#VALUE!``
    with the message and do not retry the call.
    """


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
# once in the catalogues of tokenfactory_xl.core.specs and runs the roofline of
# tokenfactory_xl.core.roofline over the cells that share it. An unknown name stops the call with
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
