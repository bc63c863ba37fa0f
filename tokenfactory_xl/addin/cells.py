"""Excel's cells in and out: what an Excel function receives and what it gives back.

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
