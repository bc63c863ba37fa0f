"""The formula language of the TFOM: one expression tree, two renderings.

Every line of the operating model (a Capacity quantity, a Timeline row, a summary output, a
check) is declared once, in :mod:`tokenfactory_xl.tfom.operating_model`, as an expression over
inputs, named constants and other lines. This module holds the tree (its nodes, lines and
tables); two renderers turn such an expression into

- an **Excel formula** (:func:`.excel.excel`): defined names for inputs (``in_gpus``), constants
  (``k_seconds_per_hour``) and scalar lines (``tef_now``), A1 references for the cells of a
  table (``E$4``, ``Timeline!$E$20:$DT$20``), Excel's function names; and
- **Python source over numpy arrays** (:func:`.compiler.python`), compiled once into one
  function that computes every line of a site (:func:`.compiler.compile_lines`, calling the
  spreadsheet functions of :mod:`.runtime`), the way SQLAlchemy compiles one query
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


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
    function = "SUM"


@dataclass(frozen=True, eq=False)
class RunningMax(RunningSum):
    """The largest cell of a line from the table's first position to this one."""

    function = "MAX"


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
