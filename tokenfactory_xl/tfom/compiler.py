"""The Python rendering of the model: every line's formula written as numpy source, in order,
into one function compiled once (:func:`compile_lines`), with the recurrent tables (the losses
carried forward, the IRR's halvings) stepped one position at a time.
"""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .formula import (
    NM,
    NONE,
    At,
    Cell,
    Const,
    Each,
    Expr,
    Fn,
    InputRef,
    Line,
    ListRef,
    Name,
    Num,
    Op,
    Position,
    Row,
    RunningMax,
    RunningSum,
    Table,
    Text,
)
from .runtime import (
    FUNCTIONS,
    _broadcast,
    _concat,
    _count,
    _is_row,
    _max,
    _min,
    _pow,
    _RowArray,
    _sum,
    _sumproduct_tree,
    _where,
)

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
    parts: bool = False  # lines may be computed on a span (:class:`_Lines`): many variants
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
                 building: frozenset[str] = frozenset(), shared: _Shared | None = None,
                 cut: bool = False):
        self.table = table
        self.tables = tables  # line name -> its table (absent: a scalar)
        self.step = step  # inside the loop of a recurrent table: position ``_k``
        self.building = building  # in the loop: the lines it builds, a list of steps each
        self.hoisted: dict[str, str] = {}  # code computed once before the loop -> its name
        self.shared = shared if shared is not None else _Shared()
        # the table's positions as operands: cut to the span where its guard holds (``_span``,
        # see :func:`_within`), or whole
        self.cut = cut

    def positions(self, code: str) -> str:
        """An operand along the table's positions, (…, n, 1): cut to ``_span`` where it is."""
        return f"_cut({code}, _span)" if self.cut else code

    def v(self, name: str) -> str:
        """A line's values: ``V['name']``, or those of the earlier line of the same code."""
        return f"V[{self.shared.alias.get(name, name)!r}]"

    def value(self, name: str) -> str:
        """A scalar (or a line of this table in the same position) as a (…, n, 1) operand."""
        if self.tables.get(name) is None:
            return f"_s({self.v(name)})"
        if self.step:
            return self.at_step(name, "_k")
        if self.cut:  # the line's cells in the span as computed, or its whole row cut
            return f"_part(V, {self.shared.alias.get(name, name)!r}, _span)"
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
        if ctx.cut:
            name = ctx.shared.alias.get(e.line, e.line)
            return f"_shifted_part(V, {name!r}, {e.shift}, _span)"
        return f"_c(_shift({ctx.v(e.line)}, {e.shift}))"
    if isinstance(e, At):
        return f"_s({ctx.v(e.line)}[..., {e.index}])"
    if isinstance(e, Each):
        names = ", ".join(ctx.v(n) for n in e.lines)
        return f"_each([{names}])"
    if isinstance(e, Row):
        return f"_r({ctx.v(e.line)})"
    if isinstance(e, Position):
        return "_f64(_k + 1)" if ctx.step else ctx.positions("_position(V['_n'])")
    if isinstance(e, RunningMax):  # MAX leaves blanks out; of blanks alone it is 0
        return ctx.positions(f"_c(_running_max({ctx.v(e.line)}))")
    if isinstance(e, RunningSum):
        return ctx.positions(f"_c(np.nancumsum({ctx.v(e.line)}, axis=-1))")
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
    if e.name == "SUMPRODUCT" and len(e.args) == 1 and isinstance(e.args[0], Op) \
            and e.args[0].op == "*":
        # the product's factors given apart: many variants' rows are then summed column by
        # column, the columns no factor holds at 0 alone (see runtime._sumproduct_tree)
        factors: list[str] = []

        def tree(x: Expr) -> int | tuple:
            if isinstance(x, Op) and x.op == "*":
                return (tree(x.args[0]), tree(x.args[1]))
            factors.append(python(x, ctx))
            return len(factors) - 1

        shape = tree(e.args[0])
        return f"_sumproduct_tree({shape!r}, {', '.join(factors)})"
    if e.name == "SUM" and len(e.args) == 1 and isinstance(e.args[0], Row) \
            and ctx.shared.parts and not ctx.step:
        return f"_sum_line(V, {ctx.shared.alias.get(e.args[0].line, e.args[0].line)!r})"
    args = [python(a, ctx) for a in e.args]
    if e.name in _AGGREGATES:
        return f"_{e.name.lower()}({', '.join(args)})"
    return f"F[{e.name!r}]({', '.join(args)})"


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


def _running_max(x):
    """MAX of each cell and those before it, as a spreadsheet's ``MAX($A1:B1)``: blanks left
    out, 0 where there is nothing but blanks."""
    x = np.asarray(x, dtype=float)
    out = np.fmax.accumulate(x, axis=-1)
    return np.where(out != out, 0.0, out)


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


def compile_lines(lines: Sequence[Line], share: bool = True, keep: str | None = None,
                  given: Sequence[Line] = ()
                  ) -> Callable[[dict, dict, dict], dict[str, np.ndarray]]:
    """One Python function computing every line, in order, from inputs and constants.

    With ``share`` (the default) what several lines compute alike is computed once per pass
    (:class:`_Shared`); without, each line computes all of its own formula (the same values).
    With ``keep``, the compiled code is kept between runs under that name in the build cache
    (:mod:`tokenfactory_xl.files.build_cache`), which names it after this package's code: the name
    must stand for ``lines`` (the whole model's are the same in every run of the same code).

    The function takes ``(inputs, constants, lists)`` (inputs by catalogue name, per-scenario
    ones as tuples, dates as serial numbers) and returns line name → values. The source it was
    built from is its ``__source__``. With ``given``, earlier lines that ``lines`` read but do
    not compute: their values come in ``inputs["_lines"]`` (line name → values, as this
    function returns them), e.g. computed once for many variants that do not move them.
    """
    if keep is None:
        return loaded(built(lines, share, given))
    from ..files.build_cache import kept

    return loaded(kept(keep, lambda: built(lines, share, given), libraries=False))


#: What :func:`built` gives: the source, its compiled code (``marshal``), the inputs the lines
#: read and the texts that may differ between the sites of one pass.
Built = tuple[str, bytes, frozenset[str], frozenset[str]]


def built(lines: Sequence[Line], share: bool = True, given: Sequence[Line] = (),
          returned: Collection[str] | None = None) -> Built:
    """:func:`compile_lines`'s build, as plain data: what the build cache keeps (for the risk's
    variants, two parts in one kept file: :mod:`~tokenfactory_xl.tfom.variants`), and
    :func:`loaded` makes the function of. With ``returned`` (for many variants: with
    ``given``), the function's result holds those lines (and the ``given`` ones) only: each
    other line is let go after the last statement that reads it (:func:`_let_go`)."""
    if returned is not None and not given:
        raise ValueError("returned: a model over many variants only (given earlier lines)")
    source = _model_source(lines, share, given)
    if returned is not None:
        source = _let_go(source, frozenset(returned))
    return (source, marshal.dumps(compile(source, "<tfom model>", "exec")), inputs_of(lines),
            texts_per_site(lines))


def loaded(build: Built) -> Callable[[dict, dict, dict], dict[str, np.ndarray]]:
    """The function of a :func:`built` build (:func:`compile_lines`'s)."""
    source, code, inputs, texts = build
    namespace = {
        "np": np, "F": FUNCTIONS, "_nan": np.nan, "_c": _c, "_s": _s, "_r": _r,
        "_shift": _shift, "_running_max": _running_max, "_position": _position, "_fit": _fit,
        "_i": _input_value, "_where": _where, "_guarded": _guarded, "_min": _min, "_max": _max,
        "_sum": _sum, "_count": _count,
        "_concat": _concat, "_first": _first, "_blank_first": _blank_first, "_each": _each,
        "_columns": _columns, "_step": _step, "_stack": _stack, "_f64": np.float64,
        "_pick": _pick, "_blank_table": _blank_table, "_guarded_rows": _guarded_rows,
        "_take": _take, "_put": _put, "_pow": _pow, "_sumproduct_tree": _sumproduct_tree,
        "_cut": _cut, "_span_of": _span_of, "_within": _within, "_part": _part,
        "_Lines": _Lines, "_shifted_part": _shifted_part, "_sum_line": _sum_line,
        "_blank_step": _blank_step, "_false": np.False_, "_true": np.True_,
    }
    exec(marshal.loads(code), namespace)  # noqa: S102 - our own model's code (see built)
    compiled = namespace["model"]

    def model(inputs: dict, constants: dict, lists: dict) -> dict[str, np.ndarray]:
        with np.errstate(all="ignore"):
            return compiled(inputs, constants, lists)

    model.__source__ = source  # type: ignore[attr-defined]
    model.inputs = inputs  # type: ignore[attr-defined]
    model.texts_per_site = texts  # type: ignore[attr-defined]
    return model


def _model_source(lines: Sequence[Line], share: bool, given: Sequence[Line] = ()) -> str:
    """The Python source of :func:`compile_lines`'s function."""
    tables = {ln.name: ln.table for ln in (*given, *lines)}
    body = ["def model(inputs, K, L):", "    V = {'_inputs': inputs}"]
    if given:
        # lines computed on their guard's span only (:func:`_within`), whole when first read
        body[-1] = "    V = _Lines({'_inputs': inputs})"
        body.append("    V.update(inputs['_lines'])")
    done: set[str] = set()
    shared = _Shared(enabled=share, parts=bool(given))
    by_code: dict[tuple[str, int | None], str] = {}  # a line's code and table -> the line
    guard_in_use = None  # the guard (its code and table length) ``_guard`` and ``_span`` hold
    i = 0
    while i < len(lines):
        ln = lines[i]
        t = ln.table
        if t is not None and t.recurrent:
            group = [x for x in lines[i:] if x.table is t]
            body += _recurrent(group, t, tables, shared, many=bool(given))
            done.update(x.name for x in group)
            i += len(group)
            continue
        # many variants (``given``): a guarded line computed on the positions where its guard
        # holds, when every variant shares them (:func:`_within`)
        cut = bool(given) and t is not None and t.guard is not None and ln.first is None \
            and not _shares_a_power(ln, tables)
        ctx = PythonContext(t, tables, shared=shared, cut=cut)
        n = None if t is None else t.length
        code = python(ln.formula, ctx)
        if t is not None:
            body.append(f"    V['_n'] = {n}")
            if ln.first is not None:
                code = f"_first({python(ln.first, ctx)}, {code})"
            if cut:
                assert t.guard is not None
                whole = PythonContext(t, tables, shared=shared)
                guard = (python(t.guard, whole), n)
                if guard != guard_in_use:
                    # the lines of a table share its guard: computed once for a run of them
                    # (a guard reads earlier lines only, which no later line changes)
                    body.append(f"    _guard = {guard[0]}")
                    body.append("    _span = _span_of(_guard)")
                    guard_in_use = guard
                within = f"_within(_guard, _span, {code}, {_new_array(ln.formula)}, " \
                    f"{ln.skip_first})"
                body += shared.pending
                shared.pending.clear()
                same = by_code.setdefault((within, id(t)), ln.name) if share else ln.name
                if same != ln.name:
                    shared.alias[ln.name] = same
                    body.append(f"    V[{ln.name!r}] = V[{same!r}]")
                else:
                    body.append(f"    V.put({ln.name!r}, {within}, {n})")
                done.add(ln.name)
                i += 1
                continue
            if t.guard is not None:
                # an arithmetic formula's result is a new array of its own: blanked in place
                code = f"_guarded({python(t.guard, ctx)}, {code})" \
                    if ln.first is None and _fresh(ln.formula) \
                    else f"_where({python(t.guard, ctx)}, {code}, _nan)"
            if ln.skip_first:
                # np.where's result is a new array: blanked where it stands, not copied first
                code = f"_blank_first({code}, fresh=True)" if t.guard is not None \
                    else f"_blank_first({code})"
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


#: A line's name where the generated code reads or writes it: always quoted.
QUOTED_NAME = re.compile(r"'([A-Za-z][A-Za-z0-9_]*)'")


def _let_go(source: str, returned: frozenset[str]) -> str:
    """:func:`_model_source`'s ``source`` of a model over many variants (its lines in a
    :class:`_Lines`) with each line it computes, but those of ``returned``, let go
    (``V.let_go``) right after the last top-level statement naming it (a recurrent table's
    loop is one statement).

    A pass over many variants holds each line's values for all of them (500 draws × 121
    months: half a megabyte a line): held to the end of the pass, the lines outgrow the
    processor's caches, and each new line is written to memory not touched for a while; let go
    as soon as no later statement reads them, the next lines reuse memory still in the cache
    (a warm 10,000-draw risk run takes some 10 % less CPU, and holds a third less at its peak).
    Reading the source, not the formulas, finds every reader: guards, shared powers, a loop's
    steps."""
    lines = source.rstrip("\n").split("\n")
    statements: list[list[str]] = []
    for line in lines[1:]:  # after the ``def``: a statement starts at the body's indentation
        if line.startswith("    ") and not line.startswith("     ") or not statements:
            statements.append([line])
        else:
            statements[-1].append(line)
    computed: dict[str, None] = {}  # in the order first computed
    last: dict[str, int] = {}
    for i, statement in enumerate(statements):
        head = statement[0]
        if head.startswith(("    V[", "    V.put(")):
            name = QUOTED_NAME.search(head)
            if name and not name.group(1).startswith("_"):
                computed.setdefault(name.group(1))
        for name in QUOTED_NAME.findall("\n".join(statement)):
            last[name] = i
    after: dict[int, list[str]] = {}
    for name in computed:
        if name not in returned:
            after.setdefault(last[name], []).append(name)
    out = [lines[0]]
    for i, statement in enumerate(statements):
        out += statement
        if i in after and not statement[0].startswith("    return"):
            out.append(f"    V.let_go({', '.join(map(repr, after[i]))})")
    return "\n".join(out) + "\n"


def _shares_a_power(ln: Line, tables: dict[str, Table | None]) -> bool:
    """Whether ``ln``'s formula holds a power over a whole row that :class:`_Shared` computes
    once for every line that needs it (the IRR search's table of discount factors)."""
    probe = _Shared()
    python(ln.formula, PythonContext(ln.table, tables, shared=probe))
    return bool(probe.powers)


def _span_of(guard):
    """For a table's guard that every variant shares ((…, n, 1), every leading axis 1), holding
    on one run of at least two positions but not on all (the months up to the horizon): that
    run and the table's length, (start, stop, n); otherwise ``None``."""
    if not (type(guard) is np.ndarray and guard.dtype == np.bool_ and guard.ndim >= 2
            and guard.shape[-1] == 1 and guard.size == guard.shape[-2]):
        return None
    held = np.flatnonzero(guard.reshape(-1))
    if held.size < 2 or held.size == guard.size or held[-1] - held[0] + 1 != held.size:
        return None
    return int(held[0]), int(held[-1]) + 1, guard.size


def _cut(x, span):
    """An operand along the table's positions, (…, n, 1), cut to ``span`` (:func:`_span_of`);
    an operand the same at every position ((…, 1, 1)) as it is."""
    if span is None:
        return x
    start, stop, n = span
    if np.ndim(x) >= 2 and np.shape(x)[-2] == n:
        return x[..., start:stop, :]
    return x


class _Part(NamedTuple):
    """A line computed on the span of its table where its guard holds (:func:`_within`)."""

    span: tuple[int, int, int]  # (start, stop, n)
    cells: np.ndarray  # the cells in the span, side by side: (…, stop − start, 1)
    shape: tuple[int, ...]  # the whole line's, (…, n, 1)
    skip_first: bool  # the first position is blank


class _Lines(dict):
    """The values of the lines of a pass of many variants, by name: a line computed on a span
    (:meth:`put` of a :class:`_Part`) is made whole, blanks around its cells, when it is first
    read whole (a sum or a lookup over its row, a shift, the caller's result); the lines after
    it read its cells as they were computed (:func:`_part`), and most never need it whole."""

    def __init__(self, *args):
        super().__init__(*args)
        self.parts: dict[str, _Part] = {}

    def put(self, name: str, value, n: int) -> None:
        """Line ``name`` from :func:`_within`: its whole values, or its part in a span."""
        if isinstance(value, _Part):
            self.parts[name] = value
        else:
            self[name] = _fit(value, n)

    def __missing__(self, name: str):
        part = self.parts.get(name)
        if part is None:
            raise KeyError(name)
        (start, stop, n), cells = part.span, part.cells
        whole = np.empty(part.shape, dtype=cells.dtype)
        whole[..., :start, :] = np.nan
        whole[..., stop:, :] = np.nan
        whole[..., start:stop, :] = cells
        if part.skip_first:
            whole[..., 0, :] = np.nan
        value = self[name] = _fit(whole, n)
        return value

    def zero_filled(self, name: str) -> np.ndarray:
        """Line ``name`` (…, n) as numbers, its blanks as 0, in a new array (the risk's cash
        flows, which the IRR scan reads so): a line computed on a span is filled around its
        cells with zeros, not made whole with blanks first and then read again for them."""
        part = None if super().__contains__(name) else self.parts.get(name)
        if part is None or part.cells.dtype != np.float64:
            values = np.asarray(self[name], dtype=float)
            return np.where(np.isnan(values), 0.0, values)
        # (a first position left blank is blank among the cells already, or outside them)
        (start, stop, _), cells = part.span, part.cells[..., 0]
        out = np.zeros(part.shape[:-1], dtype=float)
        np.copyto(out[..., start:stop], cells, where=~np.isnan(cells))
        return out

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self.parts

    def let_go(self, *names: str) -> None:
        """Lines no later statement reads (:func:`_let_go`), whole or computed on a span."""
        for name in names:
            self.pop(name, None)
            self.parts.pop(name, None)

    def get(self, name, default=None):
        return self[name] if name in self else default


def _part(values: _Lines, name: str, span):
    """A line of the table as an operand of a line computed on ``span``: the cells its own
    :func:`_within` computed (side by side in memory: numpy passes over them at once), or its
    whole row cut to the span (a line computed once for the site)."""
    kept = values.parts.get(name) if span is not None else None
    if kept is not None and kept.span == span:
        return kept.cells
    return _cut(_c(values[name]), span)


def _sum_line(values: _Lines, name: str):
    """``SUM`` of a line's whole row, as :func:`~.runtime._sum` of it; of a line computed on a
    span, from its cells, without making it whole: numpy's ``nansum`` adds the row with its
    blanks as +0, and this is that row (+0 outside the span, a blank cell +0), summed alike."""
    part = values.parts.get(name)
    if part is None or part.cells.dtype != np.float64:
        return _sum(_r(values[name]))
    start, stop, n = part.span
    row = np.zeros(part.shape[:-2] + (1, n))
    cells = row[..., 0, start:stop]
    cells[...] = part.cells[..., 0]
    np.copyto(cells, 0.0, where=cells != cells)
    return 0.0 + row.sum(axis=-1, keepdims=True)


def _shifted_part(values: _Lines, name: str, by: int, span):
    """:func:`_shift` of a line by ``by`` positions as an operand cut to ``span``: from the
    cells its :func:`_within` computed where it has them in the same span (its cells outside
    the span are blank, as are those shifted in from beyond the table), else from its whole
    row."""
    kept = values.parts.get(name) if span is not None else None
    if kept is None or kept.span != span or kept.cells.dtype != np.float64:
        return _cut(_c(_shift(values[name], by)), span)
    if abs(by) >= kept.cells.shape[-2]:  # every cell sees one outside the span: a blank
        return np.full(kept.cells.shape, np.nan)
    return _c(_shift(kept.cells[..., 0], by))


def _within(guard, span, value, fresh: bool, skip_first: bool = False):
    """A guarded line, ``IF(guard, value, "")`` (with ``skip_first``, its first position blank
    too): its whole values, or with ``span`` the :class:`_Part` of it computed there.

    With ``span``, ``value`` was computed on the positions where the guard holds only (its
    operands cut to the span: :func:`_part`); made whole (:class:`_Lines`), it has the shape,
    type and cells ``np.where`` gives. Each cell of a formula that works cell by cell
    (arithmetic, comparisons, functions of a cell) is the same number whichever other cells
    are computed beside it; a formula reading a whole row (a sum, a lookup) reads it whole,
    uncut. Without ``span`` (the guard differs between variants, or holds everywhere), as
    :func:`_guarded` (``fresh``: ``value`` is a new array of its own) or ``np.where``."""
    if span is None:
        out = _guarded(guard, value) if fresh else _where(guard, value, np.nan)
        return _blank_first(out, fresh=True) if skip_first else out
    start, stop, n = span
    value = np.asarray(value)
    cells = value.shape
    if value.ndim >= 2 and cells[-2] == stop - start:
        cells = cells[:-2] + (n, cells[-1])
    shape = _broadcast(np.shape(guard), cells)
    kind = object if value.dtype == object else np.result_type(value.dtype, np.float64)
    part = shape[:-2] + (stop - start, shape[-1])
    if not (fresh and type(value) is np.ndarray and value.shape == part and value.dtype == kind
            and value.flags.c_contiguous and value.flags.owndata and value.flags.writeable):
        value = np.array(np.broadcast_to(value, part), dtype=kind, order="C")
    if skip_first and start == 0:
        value[..., 0, :] = np.nan
    return _Part(span, value, shape, skip_first)


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


#: The operators whose numpy result is always a new array (or a number): Python's arithmetic.
_ARITHMETIC = frozenset({"+", "-", "*", "/", "neg"})


def _fresh(e: Expr) -> bool:
    """Whether ``e``'s Python rendering gives a value no other line or variable holds: an
    arithmetic operator's result (never a shared power, a line's values or a function's)."""
    return isinstance(e, Op) and e.op in _ARITHMETIC


def _new_array(e: Expr) -> bool:
    """Whether ``e``'s Python rendering in a line computed on a span (:func:`_within`) is a new
    array no other line or variable holds: :func:`_fresh`'s arithmetic, ``IF`` (``np.where``
    or :func:`_where_by_runs`) and a power (such a line shares none, :func:`_shares_a_power`)."""
    return _fresh(e) or (isinstance(e, Fn) and e.name == "IF") \
        or (isinstance(e, Op) and e.op == "^")


def _guarded(guard, value):
    """A table's guard over a formula's value: ``IF(guard, value, "")``, i.e. ``np.where(guard,
    value, NaN)``, the same values without the copy where ``value`` is a new array of floats of
    the whole result's shape (:func:`_fresh`): blanked in place where the guard fails (a
    horizon's months beyond it: a slice)."""
    guard = np.asarray(guard)
    if (type(value) is not np.ndarray or value.dtype != np.float64 or not value.flags.owndata
            or not value.flags.writeable or guard.dtype != np.bool_
            or np.broadcast_shapes(guard.shape, value.shape) != value.shape):
        return _where(guard, value, np.nan)
    if guard.ndim >= 2 and guard.shape[-2:] == (value.shape[-2], 1) \
            and guard.size == guard.shape[-2]:
        off = np.flatnonzero(~guard.reshape(-1))  # one mask of positions for every variant
        if off.size and off[-1] - off[0] + 1 == off.size:
            value[..., off[0]:off[-1] + 1, :] = np.nan
        elif off.size:
            value[..., off, :] = np.nan
        return value
    np.copyto(value, np.nan, where=~guard)
    return value


def _blank_first(x, fresh: bool = False):
    """The first cell of a line blank (month 0 of a monthly line); with ``fresh``, ``x`` is a
    new array no other line holds (``np.where``'s result) and, if of floats, is blanked in
    place."""
    if fresh and isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim >= 2 \
            and x.flags.owndata and x.flags.writeable:
        x[..., 0, :] = np.nan
        return x
    out = np.array(np.asarray(x, dtype=float))
    out[..., 0, :] = np.nan
    return out


def _recurrent(group: list[Line], t: Table, tables: dict[str, Table | None],
               shared: _Shared | None = None, many: bool = False) -> list[str]:
    """A recurrent table: one position at a time, each line reading the previous position.

    For one site every operand of a step is a plain float, so a step costs Python arithmetic,
    not numpy calls; for many sites at once the same code runs on arrays. With ``many`` (the
    variants of one site), a step whose guard fails for every variant alike (a fiscal year
    beyond the horizon) is blank without computing its lines (:func:`_blank_step`), and one
    whose guard holds for every variant is its lines' values as they are (``np.where`` of a
    guard that holds copies them, and :func:`_step` takes them as floats either way).
    """
    ctx = PythonContext(t, tables, step=True, building=frozenset(ln.name for ln in group),
                        shared=shared)
    loop = []
    skip = many and t.guard is not None
    if skip:
        loop.append(f"        _g = {python(t.guard, ctx)}")
    for ln in group:
        code = python(ln.formula, ctx)
        if ln.first is not None:
            code = f"({python(ln.first, ctx)} if _k == 0 else {code})"
        if skip:
            line = f"V[{ln.name!r}]"
            loop.append(f"        {line}.append(_step({code}) if _g is _true else "
                        f"_blank_step({line}) if _g is _false and {line} else "
                        f"_step(_where(_g, {code}, _nan)))")
            continue
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


def _blank_step(steps: list):
    """A step of a recurrent line whose guard fails for every variant: blank, shaped as the
    line's earlier steps (what ``np.where(False, …, NaN)`` gives, without computing the …)."""
    return np.full(np.shape(steps[-1]), np.nan)


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
