"""The Excel rendering of a line's formula: :func:`excel` writes the text a cell holds, with the
references its :class:`ExcelContext` gives (a defined name, an address relative to the cell)
and no parenthesis the precedence does not need.
"""

from __future__ import annotations

from .formula import (
    At,
    Cell,
    Const,
    Each,
    Expr,
    Fn,
    InputRef,
    ListRef,
    Name,
    Num,
    Op,
    Position,
    Row,
    RunningSum,
    Text,
)

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

    def running(self, line: str, function: str) -> str:  # SUM or MAX: first position … here
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
        return ctx.running(e.line, e.function)
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
