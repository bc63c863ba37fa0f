"""The numpy side of each spreadsheet function the formulas use: ``SUM``, ``INDEX``, ``MATCH``,
``IRR``'s pieces, dates as serial numbers … each as a spreadsheet computes it (blank and text
cells skipped where a spreadsheet skips them, NaN for a blank), over arrays that carry a
leading axis of variants. :data:`FUNCTIONS` is the table the compiled model calls by name.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
from collections.abc import Callable

import numpy as np


def _pow(a, b):
    """``a ^ b`` by numpy's power whatever the shapes: one site's number then gets what the
    same number gets among many sites' (Python's ``**`` on a numpy float rounds by another
    routine, a last digit apart).

    Always over the whole rows: numpy takes a faster routine when an exponent is the same
    along its innermost loop (−1 as a reciprocal), a last digit apart from ``pow``; a row cut
    short (say, to the months before the horizon) can become one.
    """
    return np.power(a, b)


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """``np.broadcast_shapes(*shapes)``, the same shape (or the same refusal, a ValueError),
    by Python's tuples: a quarter of its cost for the model's few short shapes, asked for by
    most lines of each pass of many variants (a risk run asks some 1,200 times)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != out[i]:
                if out[i] == 1:
                    out[i] = d
                elif d != 1:
                    raise ValueError(f"shapes {shapes} cannot be broadcast together")
    return tuple(out)


def _where(c, a, b):
    if isinstance(c, (bool, np.bool_)) and isinstance(a, float) and isinstance(b, float):
        return a if c else b
    if isinstance(a, str) or isinstance(b, str):
        return np.where(c, np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    runs = _shared_runs(c, a, b)
    if runs is not None:
        return _where_by_runs(runs, a, b)
    return np.where(c, a, b)


#: From this many cells in ``IF``'s result, a condition that every variant shares is applied
#: by slices (:func:`_where_by_runs`); one site's rows are faster through ``np.where``.
_BY_RUNS_FROM = 4096


def _shared_runs(c, a, b) -> tuple[tuple[int, ...], tuple[tuple[int, int, bool], ...]] | None:
    """For ``IF(c, a, b)`` over many variants' rows with a condition the variants share (one
    mask of positions, (…, n, 1) with every leading axis 1: a month inside the horizon, the
    first month) and numbers on both sides: the result's shape and the runs of positions where
    ``c`` holds or not, as (start, stop, holds); ``None`` where ``np.where`` is the way (a
    condition per variant, texts, truth values, a small result, a mask of many runs)."""
    if not (type(c) is np.ndarray and c.dtype == np.bool_ and c.ndim >= 2 and c.shape[-1] == 1
            and c.size == c.shape[-2] and c.size > 1):
        return None
    shapes = []
    for x in (a, b):
        if type(x) is np.ndarray and x.dtype == np.float64:
            shapes.append(x.shape)
        elif not isinstance(x, float):  # a Python float or a numpy float64
            return None
    shape = _broadcast(c.shape, *shapes)
    if math.prod(shape) < _BY_RUNS_FROM:
        return None
    mask = c.reshape(-1)
    edges = np.flatnonzero(mask[1:] != mask[:-1]) + 1
    if edges.size > 3:
        return None
    bounds = (0, *edges.tolist(), mask.size)
    return shape, tuple((lo, hi, bool(mask[lo])) for lo, hi in itertools.pairwise(bounds))


def _where_by_runs(runs, a, b) -> np.ndarray:
    """``np.where(c, a, b)`` from :func:`_shared_runs`: each run of positions copied from the
    side it takes (the same cells, to the last bit), without a pass over the condition."""
    shape, spans = runs
    out = np.empty(shape)
    for lo, hi, holds in spans:
        side = a if holds else b
        out[..., lo:hi, :] = side if isinstance(side, float) \
            else np.broadcast_to(side, shape)[..., lo:hi, :]
    return out


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


def _in_c_order(a: np.ndarray) -> np.ndarray:
    """``a`` itself if it is in C order, else a copy in C order.

    A reduction along the last axis adds each row in an order that depends on the layout:
    numpy sums a row whose cells lie side by side pairwise (:func:`_pairwise`), but the rows of
    a transposed array cell after cell, across all rows at once; a product of matrices calls
    another BLAS routine for a matrix stored by columns. Among many variants a row would then
    get other last digits than alone. Every sum of a row in this module is taken in C order.
    """
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


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
            # product of matrices, without the grid-sized product in memory. A blank is 0. In C
            # order, so that each variant's grid is multiplied by the same BLAS routine as one
            # site's (a grid stored by columns takes another, with other last digits).
            a = _in_c_order(np.where(np.isnan(a), 0.0, a))
            b = _in_c_order(np.where(np.isnan(b), 0.0, b))
            return np.matmul(b, np.swapaxes(a, -1, -2))
    prod = args[0]
    for a in args[1:]:
        prod = prod * a
    prod = np.asarray(prod, dtype=float)
    if len(args) > 1 and prod.ndim and prod.flags.writeable:  # the product is ours to change:
        prod = _in_c_order(prod)  # (numpy's product follows its factors' layout)
        np.copyto(prod, 0.0, where=np.isnan(prod))  # blanks add nothing (as nansum, no copy)
        return prod.sum(axis=-1, keepdims=True)
    return _sum_row(prod)


def _sumproduct_tree(tree, *factors):
    """``SUMPRODUCT(a * b * …)`` with the product's factors given apart: ``tree`` says how the
    formula multiplies them (a factor's position, or a pair of trees), e.g. ``((0, 1), 2)`` for
    ``(a * b) * c``.

    The same numbers as :func:`_sumproduct` of the product: each cell multiplied as the formula
    multiplies it and the row summed in numpy's order (:func:`_pairwise`). For many variants
    (a risk run's draws, a batch's sites) it goes one column at a time and leaves out a column
    that a factor holds at 0 or blank throughout (an empty cohort; a month mask that never
    holds), instead of multiplying the whole (variants × months × columns) product.
    """
    shapes = [np.shape(f) for f in factors]
    shape = _broadcast(*shapes)
    width = shape[-1] if shape else 1
    if (len(shape) < 2 or width < 2 or math.prod(shape) < _COLUMNWISE_FROM
            or not _pairwise_is_numpys(width)
            or any(np.asarray(f).dtype.kind not in "fb" for f in factors)):
        return _sumproduct(_multiply(tree, factors))
    floats = [i for i, f in enumerate(factors) if np.asarray(f).dtype.kind == "f"]
    if len(floats) == 1 and len(factors) > 1:
        # one number times truth values (a cohort's amount in the months it is in service):
        # a number times 1 or 0 in any order is the same number or the same signed zero (NaN
        # stays NaN), so the truth values are joined first, over their small shapes, and the
        # (variants × months) product is taken once
        mask = functools.reduce(np.logical_and, [np.asarray(f) for i, f in enumerate(factors)
                                                 if i != floats[0]])
        tree, factors = (0, 1), (factors[floats[0]], mask)
        shapes = [np.shape(f) for f in factors]
    kept = np.ones(width, dtype=bool)
    for f, s in zip(factors, shapes, strict=True):
        if len(s) >= 2 and s[-1] == width:  # a factor held at 0 or blank makes its column 0
            f = np.asarray(f)
            nothing = (f == 0) | (f != f)
            kept &= ~nothing.reshape(-1, width).all(axis=0)

    def column(c: int) -> np.ndarray:
        part = [f if np.ndim(f) == 0 else np.asarray(f)[..., c if s[-1] == width else 0]
                for f, s in zip(factors, shapes, strict=True)]
        product = np.asarray(_multiply(tree, part), dtype=float)
        if _no_blank_product(part):
            return product
        return np.where(product != product, 0.0, product)  # a blank adds nothing

    probe = [np.zeros((1,) * len(s), dtype=np.asarray(f).dtype)
             for f, s in zip(factors, shapes, strict=True)]
    if np.asarray(_multiply(tree, probe)).dtype.kind != "f":  # a product of truth values
        return _sumproduct(_multiply(tree, factors))
    total = _row_sum([column(c) if kept[c] else None for c in range(width)])
    if type(total) is np.ndarray and total.shape == shape[:-1] and total.flags.owndata:
        return total[..., None]  # a sum of columns is a new array: no copy of it needed
    return np.array(np.broadcast_to(total, shape[:-1]), dtype=float)[..., None]


#: Below this magnitude a product of factors cannot overflow to infinity (whose product with a
#: zero would be NaN).
_SAFE_PRODUCT = 1e300


def _no_blank_product(part: list) -> bool:
    """Whether a product of the factors ``part`` (one column of each) is sure to hold no NaN:
    each factor finite, and the product of their largest magnitudes far from overflow. Checked
    on the factors' small shapes, it spares a pass over the (variants × months) product."""
    bound = 1.0
    for f in part:
        f = np.asarray(f)
        if f.dtype.kind == "b":
            continue
        if f.size == 0:
            return False
        top = float(np.max(np.abs(f)))
        if not math.isfinite(top):
            return False
        bound *= max(top, 1.0)
    return bound < _SAFE_PRODUCT


def _multiply(tree, factors):
    if isinstance(tree, int):
        return factors[tree]
    return _multiply(tree[0], factors) * _multiply(tree[1], factors)


#: Below this many cells in the product (one site's rows), the whole product at once is faster.
_COLUMNWISE_FROM = 4096
#: The same for SUMIF's table of picked cells, whose columns are many (a row of months): from
#: about a hundred variants' rows against a dozen criteria.
_SUMIF_COLUMNWISE_FROM = 1 << 17


def _row_sum(columns: list) -> np.ndarray | float:
    """numpy's ``sum(axis=-1)`` of a row given as its columns (``None``: a column of zeros),
    to the last bit: a sum that starts at +0 (so a sum of zeros is +0, whatever their signs)
    and adds the row by :func:`_pairwise`."""
    total = _pairwise(columns)
    return 0.0 if total is None else 0.0 + total


def _pairwise(columns: list) -> np.ndarray | None:
    """The sum of ``columns`` (arrays of one shape; ``None`` for a column of zeros) in the order
    numpy sums a row of that many cells (pairwise summation: eight running sums, joined as a
    tree, halves above 128 cells), so that a row summed one column at a time gets numpy's
    ``sum(axis=-1)`` to the last bit (:func:`_pairwise_is_numpys` checks it)."""
    n = len(columns)
    if n < 8:
        return _in_turn(columns)
    if n <= 128:
        body = n - n % 8
        r = [_in_turn(columns[j:body:8]) for j in range(8)]  # cell j, j + 8, … in turn
        total = _plus(_plus(_plus(r[0], r[1]), _plus(r[2], r[3])),
                      _plus(_plus(r[4], r[5]), _plus(r[6], r[7])))
        return _in_turn([total, *columns[body:]])  # the last n % 8 cells, one at a time
    half = n // 2
    half -= half % 8
    return _plus(_pairwise(columns[:half]), _pairwise(columns[half:]))


def _in_turn(columns: list) -> np.ndarray | None:
    """The columns added one after the other (``None`` left out: adding 0 changes nothing)."""
    total = None
    for c in columns:
        if c is not None:
            total = c if total is None else total + c
    return total


def _plus(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


_PAIRWISE_CHECKED: dict[int, bool] = {}


def _pairwise_is_numpys(width: int) -> bool:
    """Whether :func:`_pairwise` sums a row of ``width`` cells as this numpy does (checked once
    per width on numbers chosen to round differently in any other order)."""
    if width not in _PAIRWISE_CHECKED:
        # numbers of every sign and size, without numpy.random (whose import costs more than
        # the check)
        cells = np.arange(64.0 * width)
        rows = (np.sin(cells) * 10.0 ** (cells * 7 % 19 - 9)).reshape(64, width)
        rows[:, ::3] = 0.0  # zero cells, as in a row left out column by column
        rows[1, :] = -0.0  # a sum of zeros: +0
        want = np.ascontiguousarray(rows).sum(axis=-1)
        got = _row_sum([None if not rows[:, c].any() else rows[:, c] for c in range(width)])
        _PAIRWISE_CHECKED[width] = np.array_equal(np.asarray(got).view(np.int64),
                                                  want.view(np.int64))
    return _PAIRWISE_CHECKED[width]


def _sumif(criteria_row, criterion, sum_row):
    hit = np.asarray(criteria_row) == np.asarray(criterion)
    values = np.asarray(sum_row, dtype=float)
    if (hit.ndim == 2 and values.ndim >= 3 and values.shape[-2] == 1
            and values.shape[-1] == hit.shape[-1] and values.size * hit.shape[0]
            >= _SUMIF_COLUMNWISE_FROM and _pairwise_is_numpys(hit.shape[-1])):
        # Many variants' rows against criteria that do not vary (a fiscal year's months): each
        # criterion's cells summed as below, to the last bit, without the (variants ×
        # criteria × cells) table of picked cells
        given = np.where(values != values, 0.0, values)[..., 0, :]
        sums = [np.broadcast_to(_row_sum(_picked_columns(given, row)), given.shape[:-1])
                for row in hit]
        return np.stack(sums, axis=-1)[..., None]
    # _sum_row's nansum of np.where(hit, sum_row, 0), its blanks left out before the cells are
    # picked (the row is a criterion's count of times smaller): the same numbers, summed alike
    picked = np.ascontiguousarray(np.where(hit & ~np.isnan(values), values, 0.0))
    return picked.sum(axis=-1, keepdims=True)


def _picked_columns(given: np.ndarray, row: np.ndarray) -> list:
    """The columns of ``given`` (…, n) where ``row`` (n,) holds, ``None`` elsewhere (a column
    of zeros to :func:`_row_sum`)."""
    columns: list = [None] * len(row)
    for i in np.flatnonzero(row).tolist():
        columns[i] = given[..., i]
    return columns


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
    if arr.dtype.kind == "f" and arr.ndim >= 2 and k.ndim >= 2 and k.shape[-1] == 1 \
            and k.size == k.shape[-2] and (k.size == 1 or arr.shape[-2] == 1):
        # Many variants' rows and positions the same for all of them (the live scenario's
        # column; each month's fiscal year): the cells picked by slicing, as below
        return _index_shared(arr, k)
    n = arr.shape[-1]
    ok = np.isfinite(k) & (k >= 1) & (k <= n)
    idx = np.where(ok, k, 1).astype(int) - 1
    lead = np.broadcast_shapes(arr.shape[:-1], idx.shape[:-1])
    shape = lead + idx.shape[-1:]
    idx = np.broadcast_to(idx, shape)
    picked = np.take_along_axis(np.broadcast_to(arr, lead + (n,)), idx, axis=-1)
    return np.where(np.broadcast_to(ok, shape), picked, np.nan)


def _index_shared(arr: np.ndarray, k: np.ndarray) -> np.ndarray:
    """:func:`_index` of rows ``arr`` (…, r, n) at positions ``k`` (1, …, m, 1) that every
    row shares (m = 1, or r = 1): the same cells, without an index per variant."""
    n = arr.shape[-1]
    positions = k.reshape(-1)
    shape = _broadcast(arr.shape[:-1], k.shape[:-1]) + (1,)
    if positions.size == 1:
        at = float(positions[0])
        if math.isfinite(at) and 1 <= at <= n:
            # one cell of every row (the live scenario's column of a drawn input), as below
            # without its dozen numpy calls on one position: a pass asks about ten times
            picked = arr[..., int(at) - 1:int(at)]
            if picked.shape != shape:
                picked = np.broadcast_to(picked, shape)
            return np.array(picked, dtype=arr.dtype, order="C")
    ok = np.isfinite(positions) & (positions >= 1) & (positions <= n)
    idx = np.where(ok, positions, 1).astype(int) - 1
    if positions.size > 1 and arr.shape[:-2] + (positions.size,) == shape[:-1]:
        # many positions of one row per variant (each month's fiscal year): the cells taken
        # straight into the result, C order, blank off the row (a sixth of the CPU of taking,
        # blanking and copying them in turn for a risk pass's 500 draws × 61 months)
        out = np.empty(shape, dtype=arr.dtype)
        np.take(arr[..., 0, :], idx, axis=-1, out=out[..., 0], mode="clip")  # idx all on it
        if not ok.all():
            out[..., ~ok, :] = np.nan
        return out
    if positions.size == 1:
        picked = arr[..., idx[0]:idx[0] + 1]
    else:  # take, not arr[..., 0, idx]: a fancy index on the last axis gives the rows transposed
        picked = np.take(arr[..., 0, :], idx, axis=-1)[..., None]
    if not ok.all():
        picked = np.where(ok[:, None], picked, np.nan)
    # in C order, whatever the picked cells' layout (np.array keeps a broadcast's by default)
    return np.array(np.broadcast_to(picked, shape), dtype=arr.dtype, order="C")


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
