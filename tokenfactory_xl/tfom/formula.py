"""The formula language of the TFOM: one expression tree, two renderings.

Every line of the operating model (a Capacity quantity, a Timeline row, a summary output, a
check) is declared once, in :mod:`tokenfactory_xl.tfom.operating_model`, as an expression over
inputs, named constants and other lines. This module turns such an expression into

- an **Excel formula** (:func:`excel`): defined names for inputs (``in_gpus``), constants
  (``k_seconds_per_hour``) and scalar lines (``tef_now``), A1 references for the cells of a
  table (``E$4``, ``Timeline!$E$20:$DT$20``), Excel's function names; and
- **Python source over numpy arrays** (:func:`python`), compiled once into one function that
  computes every line of a site (:func:`compile_lines`), the way SQLAlchemy compiles one query
  to the SQL of each database.

The two renderings share the tree, so a rule cannot say one thing in the workbook and another in
Python. The numpy side follows the spreadsheet's semantics where they matter: a blank or
``"none"`` cell is NaN, which ``SUM``, ``COUNT``, ``MIN`` and ``SUMPRODUCT`` skip as Excel skips
text; ``IFERROR`` turns a non-finite result into a blank; comparisons give booleans that
multiply like ``TRUE``/``FALSE``.

Shapes. A *table* is a line of cells along one axis (the Timeline's months, the IRR search's
rates). Inside a table's formula, a cell of a table in the same position is ``x[..., :, None]``
and a whole row being summed is ``x[..., None, :]``, so a formula may aggregate another table's
row for each of its own cells (the NPV at each rate of the IRR grid). Scalars have the shape of
the leading axes, which is ``()`` for one site.
"""

from __future__ import annotations

import datetime as dt
import marshal
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

# -- the tree ---------------------------------------------------------------------------------


class Expr:
    """A node of a formula. Python's operators build larger formulas from smaller ones."""

    def _bin(self, op: str, other: object, swap: bool = False) -> Expr:
        a, b = (lit(other), self) if swap else (self, lit(other))
        return Op(op, (a, b))

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __pow__(self, o): return self._bin("^", o)
    def __rpow__(self, o): return self._bin("^", o, True)
    def __neg__(self): return Op("neg", (self,))
    def __lt__(self, o): return self._bin("<", o)
    def __le__(self, o): return self._bin("<=", o)
    def __gt__(self, o): return self._bin(">", o)
    def __ge__(self, o): return self._bin(">=", o)

    def eq(self, o: object) -> Expr:
        """``=`` (Python's ``==`` stays identity, so that nodes can be dictionary keys)."""
        return self._bin("=", o)

    def ne(self, o: object) -> Expr:
        return self._bin("<>", o)

    def concat(self, o: object) -> Expr:
        """Excel's ``&``."""
        return self._bin("&", o)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True, eq=False)
class Num(Expr):
    """A literal number. Formulas may only type 0 and 1; every other number is a constant."""

    value: float


@dataclass(frozen=True, eq=False)
class Text(Expr):
    """A literal text, such as ``"none"``, ``"OK"`` or ``""``."""

    value: str


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A named constant (``k_<name>``), fixed by definition: hours in a year, tokens per Mtok."""

    name: str


@dataclass(frozen=True, eq=False)
class ListRef(Expr):
    """The named list of an input's choices (``list_<input>``), for MATCH."""

    name: str


@dataclass(frozen=True, eq=False)
class InputRef(Expr):
    """An input of the catalogue (``in_<name>``); a per-scenario input is a row of three."""

    name: str


@dataclass(frozen=True, eq=False)
class Name(Expr):
    """A scalar line, by its defined name."""

    name: str


@dataclass(frozen=True, eq=False)
class Cell(Expr):
    """This table's (or a same-shaped table's) line in the same position; ``shift`` −1 is the
    previous position."""

    line: str
    shift: int = 0


@dataclass(frozen=True, eq=False)
class Row(Expr):
    """A table line as a whole row, to be summed, counted or searched."""

    line: str


@dataclass(frozen=True, eq=False)
class At(Expr):
    """One fixed cell of a table line: position ``index`` (0-based)."""

    line: str
    index: int


@dataclass(frozen=True, eq=False)
class Each(Expr):
    """Several scalar lines laid out as one block of cells (the checks, a grid), for COUNT or
    COUNTIF over all of them; ``shape`` is the block's rows × columns."""

    lines: tuple[str, ...]
    shape: tuple[int, int]


@dataclass(frozen=True, eq=False)
class Position(Expr):
    """The 1-based position of the cell in its own table."""


@dataclass(frozen=True, eq=False)
class RunningSum(Expr):
    """The sum of a line from the table's first position to this one."""

    line: str


@dataclass(frozen=True, eq=False)
class Op(Expr):
    op: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True, eq=False)
class Fn(Expr):
    name: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.args


def lit(x: object) -> Expr:
    """A Python value as a node: a node stays itself, a number becomes :class:`Num`."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, str):
        return Text(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a formula value: {x!r}")
    return Num(float(x))


def _fn(name: str) -> Callable[..., Fn]:
    def make(*args: object) -> Fn:
        return Fn(name, tuple(lit(a) for a in args))
    make.__name__ = name
    return make


IF, MIN, MAX, SUM, COUNT, AND, OR = (_fn(n) for n in ("IF", "MIN", "MAX", "SUM", "COUNT",
                                                       "AND", "OR"))
LN, ABS, SIGN, INT, ISNUMBER, ISTEXT, LEN = (_fn(n) for n in ("LN", "ABS", "SIGN", "INT",
                                                               "ISNUMBER", "ISTEXT", "LEN"))
INDEX, MATCH, SUMIF, SUMPRODUCT, COUNTIF = (_fn(n) for n in ("INDEX", "MATCH", "SUMIF",
                                                             "SUMPRODUCT", "COUNTIF"))
IFERROR, AVERAGE, ROUNDUP, DAY, EOMONTH = (_fn(n) for n in ("IFERROR", "AVERAGE", "ROUNDUP",
                                                            "DAY", "EOMONTH"))
TEXT, NORMSDIST, NORMSINV, ROWS, COLUMNS = (_fn(n) for n in ("TEXT", "NORMSDIST", "NORMSINV",
                                                             "ROWS", "COLUMNS"))
ROUND, YEAR, CHOOSE, NOT, COUNTA = (_fn(n) for n in ("ROUND", "YEAR", "CHOOSE", "NOT",
                                                      "COUNTA"))

NONE = "none"  # what a cell shows where the spec says a figure does not exist


def none_if(condition: Expr, value: object) -> Expr:
    """``IF(condition, "none", value)``: the spec's "no figure" (NaN in Python)."""
    return IF(condition, NONE, value)


NM = "n/m"  # what a ratio shows where it has no meaning (a margin on revenue ≤ 0)


def nm_if(condition: Expr, value: object) -> Expr:
    """``IF(condition, "n/m", value)``: a ratio without meaning, "not meaningful" (NaN in
    Python; a line declared with it says ``missing=NM`` so that its stored value is "n/m")."""
    return IF(condition, NM, value)


# -- lines and tables -------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """An axis of cells: the months of the Timeline, the rates of the IRR search, …

    ``length`` positions; ``guard``, when given, is the condition under which a position is
    in use (the horizon): elsewhere every line of the table shows a blank. A ``recurrent``
    table has lines that read their own previous positions (a bisection), so Python computes
    it one position at a time.
    """

    name: str
    length: int
    guard: Expr | None = None
    recurrent: bool = False


@dataclass(frozen=True, eq=False)
class Line:
    """One line of the model: its name, label, unit, display kind and formula, stated once.

    ``table`` is ``None`` for a scalar (one cell). ``first``, for a table line, is the formula
    of its first position where that differs (the start of a bisection). ``skip_first`` leaves
    the first position of the table empty (the Timeline's month 0 for monthly flows).
    ``missing`` is what a NaN shows: ``"none"`` for the spec's "no figure", ``"n/m"`` for a
    ratio without meaning (:func:`nm_if`), ``""`` for a blank.
    """

    name: str
    label: str
    unit: str
    kind: str
    formula: Expr
    table: Table | None = None
    first: Expr | None = None
    skip_first: bool = False
    missing: str = NONE
    note: str = ""
    total: bool = False
    defined_name: bool = False
    meta: dict[str, object] = field(default_factory=dict)


def lines_read(e: Expr) -> set[str]:
    """The names of the lines an expression reads."""
    found: set[str] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Name):
            found.add(x.name)
        elif isinstance(x, (Cell, Row, At, RunningSum)):
            found.add(x.line)
        elif isinstance(x, Each):
            found.update(x.lines)
        stack.extend(x.children())
    return found


def needed(lines: Sequence[Line], targets: Sequence[str]) -> tuple[Line, ...]:
    """The lines ``targets`` depend on, themselves included, in the order of ``lines``: what
    to compile to compute only those (a risk run needs the NPV and the IRR, not the checks).
    The lines of a table are kept together (a table's guard and a recurrent table's loop
    read its lines)."""
    by_name = {ln.name: ln for ln in lines}
    by_table: dict[int, list[Line]] = {}
    for ln in lines:
        if ln.table is not None:
            by_table.setdefault(id(ln.table), []).append(ln)
    keep: set[str] = set()
    todo = list(targets)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        ln = by_name[name]
        group = by_table.get(id(ln.table), [ln]) if ln.table is not None \
            and ln.table.recurrent else [ln]
        for member in group:
            if member.name in keep:
                continue
            keep.add(member.name)
            reads = lines_read(member.formula)
            if member.first is not None:
                reads |= lines_read(member.first)
            if member.table is not None and member.table.guard is not None:
                reads |= lines_read(member.table.guard)
            todo.extend(reads - keep)
    return tuple(ln for ln in lines if ln.name in keep)


# -- Excel ------------------------------------------------------------------------------------

_PRECEDENCE = {"=": 1, "<>": 1, "<": 1, "<=": 1, ">": 1, ">=": 1, "&": 2, "+": 3, "-": 3,
               "*": 4, "/": 4, "^": 5, "neg": 6}


class ExcelContext:
    """Where things are, for rendering a formula into one cell. The workbook supplies it."""

    def cell(self, line: str, shift: int) -> str:  # same position of a line
        raise NotImplementedError

    def row(self, line: str) -> str:  # a whole table line as a range
        raise NotImplementedError

    def position(self) -> str:  # the 1-based position of this cell in its table
        raise NotImplementedError

    def running(self, line: str) -> str:  # first position … this one
        raise NotImplementedError

    def name(self, line: str) -> str:  # a scalar line
        return line

    def const(self, name: str) -> str:  # a named constant
        return f"k_{name}"

    def at(self, line: str, index: int) -> str:  # one fixed cell of a table line
        raise NotImplementedError

    def block(self, lines: tuple[str, ...]) -> str:  # the range a block of scalars fills
        raise NotImplementedError


def _number(value: float) -> str:
    if value not in (0.0, 1.0):
        raise ValueError(f"formulas type only 0 and 1; name the constant for {value!r}")
    return str(int(value))


def excel(e: Expr, ctx: ExcelContext) -> str:
    """The Excel formula text of ``e`` (without the leading ``=``)."""
    return _excel(e, ctx, 0)


def _excel(e: Expr, ctx: ExcelContext, outer: int) -> str:
    if isinstance(e, Num):
        return _number(e.value)
    if isinstance(e, Text):
        return '"' + e.value.replace('"', '""') + '"'
    if isinstance(e, Const):
        return ctx.const(e.name)
    if isinstance(e, ListRef):
        return f"list_{e.name}"
    if isinstance(e, InputRef):
        return f"in_{e.name}"
    if isinstance(e, Name):
        return ctx.name(e.name)
    if isinstance(e, Cell):
        return ctx.cell(e.line, e.shift)
    if isinstance(e, Row):
        return ctx.row(e.line)
    if isinstance(e, Position):
        return ctx.position()
    if isinstance(e, RunningSum):
        return ctx.running(e.line)
    if isinstance(e, At):
        return ctx.at(e.line, e.index)
    if isinstance(e, Each):
        return ctx.block(e.lines)
    if isinstance(e, Fn):
        args = ",".join(_excel(a, ctx, 0) for a in e.args)
        return f"{e.name}({args})"
    assert isinstance(e, Op)
    p = _PRECEDENCE[e.op]
    if e.op == "neg":
        # Excel binds unary minus tighter than ^ (-2^2 is 4): keep it on atoms only
        inner = _excel(e.args[0], ctx, 7)
        text = f"-{inner}"
    else:
        a, b = e.args
        # left-associative: a right operand of equal precedence needs brackets (a-(b-c));
        # comparisons do not chain, so a comparison inside a comparison is bracketed too
        left = _excel(a, ctx, p + 1 if p == 1 else p)
        right = _excel(b, ctx, p + 1)
        text = f"{left}{e.op}{right}"
    return f"({text})" if p < outer or (e.op == "neg" and outer > 0) else text


# -- Python -----------------------------------------------------------------------------------

_PY_OPS = {"+": "+", "-": "-", "*": "*", "/": "/", "^": "**", "=": "==", "<>": "!=", "<": "<",
           "<=": "<=", ">": ">", ">=": ">="}
_AGGREGATES = {"SUM", "COUNT", "MIN", "MAX"}


@dataclass
class _Shared:
    """What one pass of the compiled model computes once for all lines: a line whose code is
    that of an earlier line is that line's values (``alias``: the six IRR searches' grid of
    rates), and a power of a table's cells over a whole row (a grid: the IRR search's table of
    discount factors, the same for every search) is computed once, into a variable of its own
    (``powers``), before the first line that needs it (``pending``). The same numpy call on
    the same operands: the same values, to the last bit."""

    enabled: bool = True
    alias: dict[str, str] = field(default_factory=dict)
    powers: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)

    def power(self, code: str, step: bool) -> str:
        if not self.enabled or step or "_c(" not in code or "_r(" not in code or "V['_n']" in code:
            return code
        name = self.powers.get(code)
        if name is None:
            name = self.powers[code] = f"_grid{len(self.powers)}"
            self.pending.append(f"    {name} = {code}")
        return name


class PythonContext:
    """How a line's references read in the generated Python (one table, or scalars)."""

    def __init__(self, table: Table | None, tables: dict[str, Table], step: bool = False,
                 building: frozenset[str] = frozenset(), shared: _Shared | None = None):
        self.table = table
        self.tables = tables  # line name -> its table (absent: a scalar)
        self.step = step  # inside the loop of a recurrent table: position ``_k``
        self.building = building  # in the loop: the lines it builds, a list of steps each
        self.hoisted: dict[str, str] = {}  # code computed once before the loop -> its name
        self.shared = shared if shared is not None else _Shared()

    def v(self, name: str) -> str:
        """A line's values: ``V['name']``, or those of the earlier line of the same code."""
        return f"V[{self.shared.alias.get(name, name)!r}]"

    def value(self, name: str) -> str:
        """A scalar (or a line of this table in the same position) as a (…, n, 1) operand."""
        if self.tables.get(name) is None:
            return f"_s({self.v(name)})"
        if self.step:
            return self.at_step(name, "_k")
        return f"_c({self.v(name)})"

    def at_step(self, name: str, k: str) -> str:
        """In the loop, position ``k`` of a line: a step already built, or a finished line's
        cell (a float for one site, (…, 1, 1) for many)."""
        if name in self.building:
            return f"V[{name!r}][{k}]"
        return f"_pick({self.v(name)}, {k})"


def python(e: Expr, ctx: PythonContext) -> str:
    """Python source evaluating ``e`` over numpy arrays of shape (…, n, m).

    Inside a recurrent table's loop, a part of the formula that does not depend on the
    position is computed once, before the loop.
    """
    code = _python(e, ctx)
    if ctx.step and not isinstance(e, (Num, Text, Const)) and _invariant(e, ctx):
        return ctx.hoisted.setdefault(code, f"_h{len(ctx.hoisted)}")
    return code


def _invariant(e: Expr, ctx: PythonContext) -> bool:
    """Whether ``e`` reads nothing that changes from one position of the loop to the next."""
    if isinstance(e, Position):
        return False
    if isinstance(e, Cell):  # a cell of any table moves with the position
        return ctx.tables.get(e.line) is None
    if isinstance(e, Name):
        return ctx.tables.get(e.name) is not ctx.table
    return all(_invariant(c, ctx) for c in e.children())


def _python(e: Expr, ctx: PythonContext) -> str:
    if isinstance(e, Num):
        return repr(e.value)
    if isinstance(e, Text):
        return "_nan" if e.value in ("", NONE, NM) else repr(e.value)
    if isinstance(e, Const):
        return f"K[{e.name!r}]"
    if isinstance(e, ListRef):
        return f"L[{e.name!r}]"
    if isinstance(e, InputRef):
        return f"_i(V, {e.name!r})"
    if isinstance(e, Name):
        return ctx.value(e.name)
    if isinstance(e, Cell):
        if e.shift == 0:
            return ctx.value(e.line)
        if ctx.step:
            return ctx.at_step(e.line, f"_k {e.shift:+d}")
        return f"_c(_shift({ctx.v(e.line)}, {e.shift}))"
    if isinstance(e, At):
        return f"_s({ctx.v(e.line)}[..., {e.index}])"
    if isinstance(e, Each):
        names = ", ".join(ctx.v(n) for n in e.lines)
        return f"_each([{names}])"
    if isinstance(e, Row):
        return f"_r({ctx.v(e.line)})"
    if isinstance(e, Position):
        return "_f64(_k + 1)" if ctx.step else "_position(V['_n'])"
    if isinstance(e, RunningSum):
        return f"_c(np.nancumsum({ctx.v(e.line)}, axis=-1))"
    if isinstance(e, Op):
        if e.op == "neg":
            return f"(-{python(e.args[0], ctx)})"
        a, b = (python(x, ctx) for x in e.args)
        if e.op == "&":
            return f"_concat({a}, {b})"
        if e.op == "^":
            return ctx.shared.power(f"_pow({a}, {b})", ctx.step)
        return f"({a} {_PY_OPS[e.op]} {b})"
    assert isinstance(e, Fn)
    if e.name in ("ROWS", "COLUMNS"):
        (arg,) = e.args
        if isinstance(arg, Each):
            return repr(float(arg.shape[0 if e.name == "ROWS" else 1]))
        return f"_columns({python(arg, ctx)})"
    if e.name == "COUNTIF" and isinstance(e.args[1], Text) and e.args[1].value == NM:
        # Python holds "n/m" as NaN, as it holds "none": COUNTIF(…, "none") counts both there,
        # where a spreadsheet counts the two texts apart
        return "0.0"
    args = [python(a, ctx) for a in e.args]
    if e.name in _AGGREGATES:
        return f"_{e.name.lower()}({', '.join(args)})"
    return f"F[{e.name!r}]({', '.join(args)})"


# -- the numpy side of each Excel function ----------------------------------------------------


def _pow(a, b):
    """``a ^ b`` by numpy's power whatever the shapes: one site's number then gets what the
    same number gets among many sites' (Python's ``**`` on a numpy float rounds by another
    routine, a last digit apart).

    Always over the whole rows: numpy takes a faster routine when an exponent is the same
    along its innermost loop (−1 as a reciprocal), a last digit apart from ``pow``; a row cut
    short (say, to the months before the horizon) can become one.
    """
    return np.power(a, b)


def _where(c, a, b):
    if isinstance(c, (bool, np.bool_)) and isinstance(a, float) and isinstance(b, float):
        return a if c else b
    if isinstance(a, str) or isinstance(b, str):
        return np.where(c, np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    return np.where(c, a, b)


def _aggregate(reduce_row, combine, empty):
    def f(*args):
        parts = []
        for a in args:
            a = np.asarray(a, dtype=float)
            if a.shape[-1:] != (1,) or a.ndim < 2:
                a = reduce_row(a)
            parts.append(a)
        out = parts[0]
        for p in parts[1:]:
            out = combine(out, p)
        return out
    return f


def _nanmin_row(a):
    a = np.asarray(a, dtype=float)
    if a.ndim < 2:
        return a
    with np.errstate(invalid="ignore"):
        m = np.fmin.reduce(a, axis=-1, keepdims=True)
    return np.where(np.isnan(m), 0.0, m)  # MIN of no numbers is 0, as in Excel


def _nanmax_row(a):
    a = np.asarray(a, dtype=float)
    if a.ndim < 2:
        return a
    m = np.fmax.reduce(a, axis=-1, keepdims=True)
    return np.where(np.isnan(m), 0.0, m)


def _count_row(a):
    a = np.asarray(a, dtype=float)
    return np.sum(np.isfinite(a), axis=-1, keepdims=True).astype(float)


def _sum_row(a):
    # in C order: a row is then summed the same way alone or among many sites' rows
    return np.nansum(np.ascontiguousarray(a, dtype=float), axis=-1, keepdims=True)


def _min(*args):
    out = None
    for a in args:
        a = _nanmin_row(a) if _is_row(a) else np.asarray(a, dtype=float)
        out = a if out is None else np.minimum(out, a)
    return out


def _max(*args):
    out = None
    for a in args:
        a = _nanmax_row(a) if _is_row(a) else np.asarray(a, dtype=float)
        out = a if out is None else np.maximum(out, a)
    return out


def _sum(*args):
    out = 0.0
    for a in args:
        out = out + (_sum_row(a) if _is_row(a) else np.asarray(a, dtype=float))
    return out


def _count(*args):
    out = 0.0
    for a in args:
        if _is_row(a):
            out = out + _count_row(a)
        else:
            out = out + np.isfinite(np.asarray(a, dtype=float)).astype(float)
    return out


class _RowArray(np.ndarray):
    """A whole row in a formula (``_r``): aggregates reduce it; arithmetic keeps it a row."""


def _is_row(a) -> bool:
    return isinstance(a, _RowArray)


def _sumproduct(*args):
    if len(args) == 2:
        a, b = (np.asarray(x, dtype=float) for x in args)
        if a.ndim >= 2 and b.ndim >= 2 and a.shape[-2] == 1 and b.shape[-2] > 1 \
                and a.shape[-1] == b.shape[-1] > 1:
            # One row against the rows of a grid (the NPV at every rate of the IRR search): a
            # product of matrices, without the grid-sized product in memory. A blank is 0.
            a = np.where(np.isnan(a), 0.0, a)
            b = np.where(np.isnan(b), 0.0, b)
            return np.matmul(b, np.swapaxes(a, -1, -2))
    prod = args[0]
    for a in args[1:]:
        prod = prod * a
    prod = np.asarray(prod, dtype=float)
    if len(args) > 1 and prod.ndim and prod.flags.writeable:  # the product is ours to change:
        np.copyto(prod, 0.0, where=np.isnan(prod))  # blanks add nothing (as nansum, no copy)
        return prod.sum(axis=-1, keepdims=True)
    return _sum_row(prod)


def _sumif(criteria_row, criterion, sum_row):
    hit = np.asarray(criteria_row) == np.asarray(criterion)
    # _sum_row's nansum of np.where(hit, sum_row, 0), its blanks left out before the cells are
    # picked (the row is a criterion's count of times smaller): the same numbers, summed alike
    values = np.asarray(sum_row, dtype=float)
    picked = np.ascontiguousarray(np.where(hit & ~np.isnan(values), values, 0.0))
    return picked.sum(axis=-1, keepdims=True)


def _countif(row, criterion):
    arr = np.asarray(row, dtype=object)
    if isinstance(criterion, float) and math.isnan(criterion):  # "none" (or a blank) is NaN
        hit = np.vectorize(lambda v: isinstance(v, float) and math.isnan(v), otypes=[bool])(arr)
    else:
        hit = arr == criterion
    return np.sum(hit, axis=-1, keepdims=True)


def _index(row, r, c=None):
    """INDEX(row, 1, k) (or INDEX(column, k)): the k-th cell of a row; NaN where k is not a
    position of the row."""
    k = np.asarray(c if c is not None else r, dtype=float)
    arr = np.asarray(row)
    if arr.ndim == 2 and arr.shape[0] == 1 and arr.dtype.kind in "fO" and k.size == 1 \
            and k.ndim <= 2:
        # One site's row and one position (most INDEXes of a run): the cell itself, as the
        # general case below gives it, shaped (1, 1), without its dozen numpy calls.
        n, at = arr.shape[1], float(k.flat[0])
        out = np.empty((1, 1), dtype=arr.dtype)
        out[0, 0] = arr[0, int(at) - 1] if math.isfinite(at) and 1 <= at <= n else np.nan
        return out
    if k.ndim < arr.ndim:  # numpy's broadcasting: missing leading axes
        k = k.reshape((1,) * (arr.ndim - k.ndim) + k.shape)
    n = arr.shape[-1]
    ok = np.isfinite(k) & (k >= 1) & (k <= n)
    idx = np.where(ok, k, 1).astype(int) - 1
    lead = np.broadcast_shapes(arr.shape[:-1], idx.shape[:-1])
    shape = lead + idx.shape[-1:]
    idx = np.broadcast_to(idx, shape)
    picked = np.take_along_axis(np.broadcast_to(arr, lead + (n,)), idx, axis=-1)
    return np.where(np.broadcast_to(ok, shape), picked, np.nan)


def _match(x, row, _exact=0):
    if isinstance(row, tuple) or np.ndim(row) == 0:
        items = list(row)
        key = x.item() if isinstance(x, np.ndarray) and x.size == 1 else x
        for i, item in enumerate(items):
            if _same(item, key):
                return np.asarray(float(i + 1)).reshape(np.shape(x))
        return np.full(np.shape(x), np.nan)
    hit = np.asarray(row, dtype=float) == np.asarray(x, dtype=float)
    first = np.argmax(hit, axis=-1)[..., None]
    return np.where(np.any(hit, axis=-1, keepdims=True), first + 1.0, np.nan)


def _same(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return a == b


def _iferror(x, fallback):
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), x, fallback)


def _isnumber(x):
    if isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype == object):
        return np.vectorize(lambda v: isinstance(v, (int, float)) and math.isfinite(v),
                            otypes=[bool])(x)
    return np.isfinite(np.asarray(x, dtype=float))


def _istext(x):
    if isinstance(x, np.ndarray) and x.dtype == object:
        return np.vectorize(lambda v: isinstance(v, str), otypes=[bool])(x)
    return np.asarray(isinstance(x, str) or (isinstance(x, np.ndarray) and x.dtype.kind == "U"))


def _len(x):
    return np.vectorize(lambda v: float(len(str(v))), otypes=[float])(x)


_EPOCH = dt.date(1899, 12, 30)  # serial 0 of the 1900 date system (after Excel's leap bug)


def to_serial(d: dt.date) -> float:
    """The spreadsheet serial number of a date."""
    return float((dt.date(d.year, d.month, d.day) - _EPOCH).days)


def from_serial(serial: float) -> dt.datetime:
    return dt.datetime.combine(_EPOCH + dt.timedelta(days=int(serial)), dt.time())


def _eomonth_one(serial: float, months: float) -> float:
    if not (math.isfinite(serial) and math.isfinite(months)):
        return math.nan
    d = _EPOCH + dt.timedelta(days=int(serial))
    total = d.year * 12 + (d.month - 1) + int(months) + 1  # the month after the target
    first_next = dt.date(total // 12, total % 12 + 1, 1)
    return float((first_next - dt.timedelta(days=1) - _EPOCH).days)


_eomonth = np.vectorize(_eomonth_one, otypes=[float])
_day = np.vectorize(lambda s: float((_EPOCH + dt.timedelta(days=int(s))).day)
                    if math.isfinite(s) else math.nan, otypes=[float])


def _text(x, fmt):
    def one(v):
        if fmt == "0":
            return f"{v:.0f}"
        if fmt == "yyyy-mm-dd":
            return f"{from_serial(v):%Y-%m-%d}"
        raise ValueError(f"TEXT format {fmt!r} is not supported")
    return np.vectorize(one, otypes=[object])(x)


def _concat(a, b):
    return np.vectorize(lambda x, y: _as_text(x) + _as_text(y), otypes=[object])(a, b)


def _as_text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _normsdist(z):
    z = np.asarray(z, dtype=float)
    return 0.5 * _erfc(-z / math.sqrt(2))


_erfc = np.vectorize(math.erfc, otypes=[float])


def _normsinv(p):
    from statistics import NormalDist

    return np.vectorize(lambda q: NormalDist().inv_cdf(q), otypes=[float])(p)


def _round(x, _digits):
    """ROUND(x, 0) as the spreadsheets do it: halves away from zero."""
    x = np.asarray(x, dtype=float)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_year = np.vectorize(lambda s: float((_EPOCH + dt.timedelta(days=int(s))).year)
                     if math.isfinite(s) else math.nan, otypes=[float])


def _choose(k, *options):
    """CHOOSE(k, a, b, …): the k-th option; NaN where k is not a position of the options."""
    k = np.asarray(k, dtype=float)
    out = np.full(np.broadcast_shapes(k.shape, *(np.shape(o) for o in options)), np.nan)
    for i, option in enumerate(options, start=1):
        out = np.where(k == i, np.asarray(option, dtype=float), out)
    return out


def _counta(x):
    """COUNTA: the cells that are not blank (a blank text cell is "", a blank number NaN)."""
    arr = np.asarray(x, dtype=object)
    filled = np.vectorize(lambda v: not (v is None or v == "" or (isinstance(v, float)
                                                                   and math.isnan(v))),
                          otypes=[float])(arr)
    return np.sum(filled, axis=-1, keepdims=True) if arr.ndim >= 2 else filled


def _and(*args):
    out = np.asarray(True)
    for a in args:
        out = out & np.asarray(a, dtype=bool)
    return out


def _or(*args):
    out = np.asarray(False)
    for a in args:
        out = out | np.asarray(a, dtype=bool)
    return out


FUNCTIONS: dict[str, Callable] = {
    "IF": _where,
    "AND": _and,
    "OR": _or,
    "LN": lambda x: np.log(np.asarray(x, dtype=float)),
    "ABS": lambda x: np.abs(np.asarray(x, dtype=float)),
    "SIGN": lambda x: np.sign(np.asarray(x, dtype=float)),
    "INT": lambda x: np.floor(np.asarray(x, dtype=float)),
    "ROUNDUP": lambda x, _d: np.ceil(np.asarray(x, dtype=float)),  # digits 0, x ≥ 0
    "ISNUMBER": _isnumber,
    "ISTEXT": _istext,
    "LEN": _len,
    "INDEX": _index,
    "MATCH": _match,
    "SUMIF": _sumif,
    "SUMPRODUCT": _sumproduct,
    "COUNTIF": _countif,
    "IFERROR": _iferror,
    "AVERAGE": lambda a, b: (np.asarray(a, dtype=float) + b) / 2,
    "DAY": _day,
    "EOMONTH": _eomonth,
    "TEXT": _text,
    "NORMSDIST": _normsdist,
    "NORMSINV": _normsinv,
    "ROUND": _round,
    "YEAR": _year,
    "CHOOSE": _choose,
    "NOT": lambda x: np.logical_not(np.asarray(x, dtype=bool)),
    "COUNTA": _counta,
}


# -- compiling the model ----------------------------------------------------------------------


def _c(x):
    """A line of this table (…, n) as an operand (…, n, 1); a scalar passes as (…, 1, 1)."""
    x = np.asarray(x)
    return x[..., :, None]


def _s(x):
    # one site's scalar stays a numpy float: IEEE arithmetic (x / 0 is inf, as numpy gives)
    if isinstance(x, np.float64):
        return x
    x = np.asarray(x)
    if x.ndim == 0 and x.dtype.kind == "f":
        return x[()]
    return x[..., None, None]


def _r(x):
    return np.asarray(x, dtype=float)[..., None, :].view(_RowArray)


def _shift(x, by: int):
    """The line moved by ``by`` positions (−1: each cell sees its predecessor), NaN-padded."""
    x = np.asarray(x, dtype=float)
    pad = np.full(x.shape[:-1] + (abs(by),), np.nan)
    if by < 0:
        return np.concatenate([pad, x[..., :by]], axis=-1)
    return np.concatenate([x[..., by:], pad], axis=-1)


def _each(values):
    stacked = np.stack(np.broadcast_arrays(*(np.asarray(v, dtype=object) for v in values)),
                       axis=-1)
    return stacked[..., None, :].view(_RowArray)


def _columns(x):
    return float(np.shape(x)[-1]) if _is_row(x) else 1.0


def _position(n):
    return np.arange(1.0, n + 1)[:, None]


def _fit(value, n: int | None):
    """A formula's (…, n, 1) result as the line's values: (…, n) for a table, (…) otherwise."""
    value = np.asarray(value)
    if isinstance(value, _RowArray):
        value = value.view(np.ndarray)
    if value.ndim < 2:
        value = value[..., None, None]
    if n is None:
        return value[..., 0, 0]
    lead = value.shape[:-2]
    return np.broadcast_to(value[..., 0], lead + (n,)) if value.shape[-2] == 1 \
        else value[..., 0]


def _input_value(values: dict, name: str):
    v = values["_inputs"][name]
    if isinstance(v, _RowArray):  # a row per draw (…, m): many values of a per-scenario input
        rows = np.asarray(v)  # (or many sites' rows of cohort texts)
        return (rows if rows.dtype == object else rows.astype(float, copy=False)
                )[..., None, :].view(_RowArray)
    if isinstance(v, np.ndarray) and v.dtype == object:  # a text per site (texts_per_site)
        return v[..., None, None]
    if isinstance(v, tuple):  # per scenario (a row of three), or the fleet block's cohorts
        if any(isinstance(x, str) for x in v):  # a row of texts, "" where blank
            return np.asarray(v, dtype=object)[..., None, :].view(_RowArray)
        return np.asarray([np.nan if x is None else x for x in v],
                          dtype=float)[..., None, :].view(_RowArray)
    if isinstance(v, str):
        return v
    return np.asarray(v, dtype=float)[..., None, None]


def compile_lines(lines: Sequence[Line], share: bool = True, keep: str | None = None
                  ) -> Callable[[dict, dict, dict], dict[str, np.ndarray]]:
    """One Python function computing every line, in order, from inputs and constants.

    With ``share`` (the default) what several lines compute alike is computed once per pass
    (:class:`_Shared`); without, each line computes all of its own formula (the same values).
    With ``keep``, the compiled code is kept between runs under that name in the build cache
    (:mod:`tokenfactory_xl.files.build_cache`), which names it after this package's code: the name
    must stand for ``lines`` (the whole model's are the same in every run of the same code).

    The function takes ``(inputs, constants, lists)`` (inputs by catalogue name, per-scenario
    ones as tuples, dates as serial numbers) and returns line name → values. The source it was
    built from is its ``__source__``.
    """
    def build() -> tuple[str, bytes, frozenset[str], frozenset[str]]:
        source = _model_source(lines, share)
        return (source, marshal.dumps(compile(source, "<tfom model>", "exec")),
                inputs_of(lines), texts_per_site(lines))

    if keep is None:
        source, code, inputs, texts = build()
    else:
        from ..files.build_cache import kept

        source, code, inputs, texts = kept(keep, build, libraries=False)
    namespace = {
        "np": np, "F": FUNCTIONS, "_nan": np.nan, "_c": _c, "_s": _s, "_r": _r,
        "_shift": _shift, "_position": _position, "_fit": _fit, "_i": _input_value,
        "_where": _where, "_min": _min, "_max": _max, "_sum": _sum, "_count": _count,
        "_concat": _concat, "_first": _first, "_blank_first": _blank_first, "_each": _each,
        "_columns": _columns, "_step": _step, "_stack": _stack, "_f64": np.float64,
        "_pick": _pick, "_blank_table": _blank_table, "_guarded_rows": _guarded_rows,
        "_take": _take, "_put": _put, "_pow": _pow,
    }
    exec(marshal.loads(code), namespace)  # noqa: S102 - our own model's code (see build)
    compiled = namespace["model"]

    def model(inputs: dict, constants: dict, lists: dict) -> dict[str, np.ndarray]:
        with np.errstate(all="ignore"):
            return compiled(inputs, constants, lists)

    model.__source__ = source  # type: ignore[attr-defined]
    model.inputs = inputs  # type: ignore[attr-defined]
    model.texts_per_site = texts  # type: ignore[attr-defined]
    return model


def _model_source(lines: Sequence[Line], share: bool) -> str:
    """The Python source of :func:`compile_lines`'s function."""
    tables = {ln.name: ln.table for ln in lines}
    body = ["def model(inputs, K, L):", "    V = {'_inputs': inputs}"]
    done: set[str] = set()
    shared = _Shared(enabled=share)
    by_code: dict[tuple[str, int | None], str] = {}  # a line's code and table -> the line
    i = 0
    while i < len(lines):
        ln = lines[i]
        t = ln.table
        if t is not None and t.recurrent:
            group = [x for x in lines[i:] if x.table is t]
            body += _recurrent(group, t, tables, shared)
            done.update(x.name for x in group)
            i += len(group)
            continue
        ctx = PythonContext(t, tables, shared=shared)
        n = None if t is None else t.length
        code = python(ln.formula, ctx)
        if t is not None:
            body.append(f"    V['_n'] = {n}")
            if ln.first is not None:
                code = f"_first({python(ln.first, ctx)}, {code})"
            if t.guard is not None:
                code = f"_where({python(t.guard, ctx)}, {code}, _nan)"
            if ln.skip_first:
                code = f"_blank_first({code})"
        code = f"_fit({code}, {n})"
        body += shared.pending
        shared.pending.clear()
        same = by_code.setdefault((code, None if t is None else id(t)), ln.name) if share \
            else ln.name
        if same != ln.name:
            shared.alias[ln.name] = same
            code = f"V[{same!r}]"
        body.append(f"    V[{ln.name!r}] = {code}")
        done.add(ln.name)
        i += 1
    body.append("    return V")
    return "\n".join(body) + "\n"


#: Where a text input may hold a different text for each site of one pass (:func:`texts_per_site`):
#: its length measured, its kind tested, or joined into a caption.
_PER_SITE_TEXT = frozenset({("Fn", "ISTEXT"), ("Fn", "LEN"), ("Op", "&")})


def _input_uses(lines: Sequence[Line]) -> dict[str, set[tuple[str, str]]]:
    """Each input the formulas of ``lines`` read (first values and guards included) → the
    nodes it is read in, as (kind, function or operator)."""
    uses: dict[str, set[tuple[str, str]]] = {}
    stack: list[tuple[Expr, tuple[str, str]]] = [
        (e, ("", "")) for ln in lines
        for e in (ln.formula, ln.first, ln.table.guard if ln.table is not None else None)
        if e is not None]
    while stack:
        e, parent = stack.pop()
        if isinstance(e, InputRef):
            uses.setdefault(e.name, set()).add(parent)
        here = (type(e).__name__, getattr(e, "name", getattr(e, "op", "")))
        stack.extend((child, here) for child in e.children())
    return uses


def inputs_of(lines: Sequence[Line]) -> frozenset[str]:
    """The inputs the formulas of ``lines`` read (their first values and guards included)."""
    return frozenset(_input_uses(lines))


def texts_per_site(lines: Sequence[Line]) -> frozenset[str]:
    """The inputs that ``lines`` read only inside ``ISTEXT``, ``LEN`` or ``&``: a pass of the
    model for many sites may give them a text per site; any other input read as text (compared,
    looked up, counted) must be the same for all of them."""
    return frozenset(name for name, seen in _input_uses(lines).items()
                     if seen <= _PER_SITE_TEXT)


def _first(first, rest):
    first, rest = np.broadcast_arrays(np.asarray(first, dtype=float),
                                      np.asarray(rest, dtype=float))
    out = np.array(rest)
    out[..., 0, :] = first[..., 0, :]
    return out


def _blank_first(x):
    out = np.array(np.asarray(x, dtype=float))
    out[..., 0, :] = np.nan
    return out


def _recurrent(group: list[Line], t: Table, tables: dict[str, Table | None],
               shared: _Shared | None = None) -> list[str]:
    """A recurrent table: one position at a time, each line reading the previous position.

    For one site every operand of a step is a plain float, so a step costs Python arithmetic,
    not numpy calls; for many sites at once the same code runs on arrays.
    """
    ctx = PythonContext(t, tables, step=True, building=frozenset(ln.name for ln in group),
                        shared=shared)
    loop = []
    for ln in group:
        code = python(ln.formula, ctx)
        if ln.first is not None:
            code = f"({python(ln.first, ctx)} if _k == 0 else {code})"
        if t.guard is not None:
            code = f"_where({python(t.guard, ctx)}, {code}, _nan)"
        loop.append(f"        V[{ln.name!r}].append(_step({code}))")
    out = [f"    {name} = {code}" for code, name in ctx.hoisted.items()]
    guard = python(t.guard, ctx) if t.guard is not None else None
    indent = "    "
    compress = guard in ctx.hoisted.values() and not any("_pick(" in line for line in loop)
    if compress:
        # Many variants at once (a risk run): the loop runs only for those where the guard
        # holds; the others are blank, as the guard makes them. A guard that holds nowhere
        # leaves the table blank without a step.
        out.append(f"    _rows = _guarded_rows({guard})")
        out.append("    if _rows is not None and _rows.size == 0:")
        out += [f"        V[{ln.name!r}] = _blank_table({guard}, {t.length})" for ln in group]
        out.append("    else:")
        indent = "        "
        out.append(f"        _full = {guard}")
        for name in ctx.hoisted.values():
            out.append(f"        {name} = _take({name}, _rows)")
    out += [f"{indent}V[{ln.name!r}] = []" for ln in group]
    out.append(f"{indent}for _k in range({t.length}):")
    out += [indent + line for line in loop]
    for ln in group:
        stacked = f"_stack(V[{ln.name!r}])"
        if compress:
            stacked = f"_put({stacked}, _rows, _full, {t.length})"
        out.append(f"{indent}V[{ln.name!r}] = {stacked}")
    return out


def _guarded_rows(guard):
    """For many variants (a guard of shape (k, 1, 1)), the variants where it holds; ``None``
    for one site (a plain boolean), whose loop runs unless the guard fails."""
    g = np.asarray(guard)
    if g.ndim != 3:
        return None if bool(np.any(g)) else np.empty(0, dtype=int)
    return np.flatnonzero(g[:, 0, 0])


def _take(x, rows):
    """An operand of the loop restricted to the variants ``rows`` (shared operands as they
    are)."""
    if rows is None or np.ndim(x) != 3 or np.shape(x)[0] == 1:
        return x
    return np.asarray(x)[rows]


def _put(values, rows, guard, n: int):
    """A loop's lines computed for the variants ``rows`` put back among all, blank elsewhere."""
    if rows is None:
        return values
    out = np.full((np.shape(guard)[0], n), np.nan)
    out[rows] = values
    return out


def _blank_table(guard, n: int) -> np.ndarray:
    """A recurrent table whose guard holds nowhere: blank (NaN) at every position."""
    shape = np.shape(guard)
    return np.full((shape[:-2] if len(shape) >= 2 else shape) + (n,), np.nan)


def _step(value):
    """A step's (…, 1, 1) result as the value of that position: a float for one site, an
    operand of shape (…, 1, 1) for many (what the next step reads)."""
    value = np.asarray(value, dtype=float)
    if value.ndim == 2:
        value = value[0, 0]
    return value[()] if value.ndim == 0 else value


def _pick(line, k: int):
    """Cell ``k`` of a finished line (…, n) as a step operand."""
    if np.ndim(line) == 1:
        return line[k]
    return np.asarray(line)[..., k, None, None]


def _stack(values: list) -> np.ndarray:
    """The steps of a recurrent line as its values (…, n)."""
    if values and all(type(v) in (float, np.float64) for v in values):
        return np.array(values, dtype=float)  # one site's steps, numbers: the same row at once
    return np.stack([np.asarray(v, dtype=float).reshape(np.shape(v)[:-2] or np.shape(v))
                     for v in values], axis=-1)
