"""Workbook stencils: a finished TFOM workbook cut open at every cell a site changes.

A batch writes the same workbook hundreds of times with different inputs. Building each one with
openpyxl costs tens of milliseconds; almost all of the file (styles, theme, charts, defined names,
the labels and formulas of every sheet) is the same for every site. A :class:`Stencil` parses the
template once: every member of its zip except the worksheets is kept as the compressed bytes it
already is, and each worksheet's XML is cut into the text between the cells that carry a value.
Filling a stencil for one site joins those segments with the site's values and compresses only
the worksheets; nothing is parsed again.

The values written are the ones a spreadsheet would store after calculating: numbers in full
``repr`` precision, text as inline strings (``t="inlineStr"``) for input cells and as formula
string results (``t="str"``) for formula cells, booleans as ``t="b"``, dates as Excel serial
numbers. Text is always XML-escaped and always written as text, so a site called
``=HYPERLINK(…)`` stays a name and never becomes a formula. Every formula keeps its formula: the
workbook's ``calcPr`` says ``fullCalcOnLoad="1"``, so Excel recalculates on open, while tools that
only read stored values (openpyxl ``data_only=True``, pandas, Power Query, file previewers) see
the model's numbers.

Output is deterministic: members in the template's order, one fixed timestamp, fixed compression
settings, so the same values give the same bytes with the same deflate library (:data:`DEFLATE`:
ISA-L where its wheel is installed, else zlib; either writes standard deflate).
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import BinaryIO, NamedTuple

import numpy as np

from ..core.errors import TokenFactoryError
from ..files import ooxml
from ..files.ooxml import escape_text as escape

#: The deflate level worksheets are compressed with: the fastest. zlib's level 1 is about four
#: times faster than its default 6 on these files and makes them about 15 % larger.
COMPRESSION_LEVEL = 1

try:  # ISA-L's deflate (the ``isal`` wheel): the same format, written about four times faster
    from isal import isal_zlib as _isal
except ImportError:  # no wheel for this platform, or a Python without it: zlib writes
    _isal = None

#: Which library deflates at :data:`COMPRESSION_LEVEL`: ``"isal"`` where its wheel is installed
#: (its level 1, faster than zlib's level 1 and no larger), else ``"zlib"``. Other levels, and
#: every member the template already holds compressed, are zlib's.
DEFLATE = "zlib" if _isal is None else "isal"

try:  # orjson writes a list of floats as their shortest round-trip digits, in C
    import orjson as _orjson
except ImportError:  # no wheel: ``repr``, one float at a time, gives the same text
    _orjson = None

#: Which formats a worksheet's numbers: ``"orjson"`` where its wheel is installed, else
#: ``"repr"``. Both write the same text (:func:`format_floats`).
FLOAT_FORMAT = "repr" if _orjson is None else "orjson"

#: Every member gets this modification time: 1980-01-01 00:00, the earliest a zip can state.
_DOS_TIME, _DOS_DATE = 0, (0 << 9) | (1 << 5) | 1

_NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NS_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"

_CELL = re.compile(rb"<c\b[^>]*?(?:/>|>.*?</c>)", re.S)
_ATTR = re.compile(rb'\s([\w:]+)="([^"]*)"')
_FORMULA = re.compile(rb"<f\b[^>]*?(?:/>|>.*?</f>)", re.S)
_CALC_PR = re.compile(rb"<calcPr\b[^>]*?/>")
_ONE_CELL = re.compile(r"(?:'((?:[^']|'')+)'|([^'!]+))!\$?([A-Z]{1,3})\$?(\d+)")
# Characters XML 1.0 does not allow in a document, even escaped.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NEEDS_ESCAPE = re.compile("[&<>]")
_EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"})
_EPOCH = dt.date(1899, 12, 30)  # Excel's day 0 in the 1900 date system (after its leap bug)


_ABSENT = object()  # a cell the values do not mention


class StencilError(TokenFactoryError, ValueError):
    """The template and the values do not fit together (a cell the template does not have)."""


class _Cell(NamedTuple):
    """One cell of the template that a site fills: how its XML starts and its formula, made
    from the sheet's parts for a cell whose XML is written whole (a text, a date: a few hundred
    a site)."""

    head: str        # '<c r="B3" s="4"' — the attributes except the type
    formula: str     # '<f>B2*2</f>' or ''
    original: str    # the cell as the template has it, stale stored value removed

    @property
    def is_formula(self) -> bool:
        return bool(self.formula)


@dataclass(frozen=True)
class _Span:
    """A member's compressed bytes left in the zip they are read from, copied a piece at a time
    as they are written (a portfolio's table of 10,000 sites is some 7 MB compressed)."""

    source: BinaryIO
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length

    def copy_to(self, out: BinaryIO) -> None:
        self.source.seek(self.offset)
        left = self.length
        while left:
            piece = self.source.read(min(left, 1 << 20))
            if not piece:
                raise StencilError("damaged zip: a member ends before its stated size")
            out.write(piece)
            left -= len(piece)


@dataclass(frozen=True)
class _Member:
    """One zip member, ready to write: compressed bytes and what its headers state."""

    name: bytes
    method: int
    crc: int
    compressed: bytes | _Span
    size: int


#: What a number cell's XML holds between its head (``<c r="B3" s="4"``) and its formula.
_NUMBER = b' t="n">'
#: What a number cell's XML holds between its formula and its value.
_OPEN = b"<v>"
#: What ends a number cell's XML after its value.
_END = b"</v></c>"
#: What a formula cell's XML holds between its head and its formula when it shows a text.
_AS_TEXT = b' t="str">'
#: What ends the XML of a cell without formula or value, after its head.
_EMPTY = b"/>"
#: What parts a kept sheet's texts: a character no XML document holds, even escaped.
_APART = "\0"

#: The most values a cell keeps its XML for between sites (:meth:`_SheetStencil.render`): more
#: than the start months, currencies or GPU models of any batch's sites, so that what recurs is
#: made once; a text of each site's own (its name, in titles of a few KB of XML each) takes
#: one of them and is let go with the others when the cell has this many.
_MADE_PER_CELL = 64


class _SheetStencil:
    """One worksheet's XML cut at the cells to fill.

    ``_pre[i]`` is the XML before cell ``i``'s value when it is a number: the text since the
    cell before, the cell's head (``<c r="B3" s="4"``, its attributes but the type), ``t="n"``,
    its formula and ``<v>``; ``_cut[i]`` is where its head ends in it. The last of ``_pre``
    is the XML after the last cell. A cell the template holds without a formula (an input)
    keeps its XML as the template has it in ``_elements``.
    """

    def __init__(self, xml: bytes, fill: set[str]):
        refs: list[str] = []
        pre: list[bytes] = []
        cut: list[int] = []
        plain: list[bool] = []  # a formula cell whose part holds no t="n"> before its own
        self._elements: dict[int, bytes] = {}
        self.unfilled_formulas: list[str] = []
        text_start = 0
        data_start = xml.find(b"<sheetData")
        data_end = xml.find(b"</sheetData>")
        if data_start < 0 or data_end < 0:  # an empty sheet writes <sheetData />
            data_start = data_end = len(xml)
        missing = set(fill)
        for match in _CELL.finditer(xml, data_start, data_end):
            element = match.group(0)
            tag = element[: element.find(b">") + 1]
            attrs = dict(_ATTR.findall(tag))
            ref = attrs.get(b"r", b"").decode()
            formula = _FORMULA.search(element)
            formula_xml = formula.group(0) if formula else b""
            head = b"<c" + b"".join(b' %s="%s"' % (k, v) for k, v in attrs.items() if k != b"t")
            if ref in fill:
                missing.discard(ref)
            elif formula_xml:
                # A formula cell keeps its formula and loses any stored value: a template must
                # not carry stale values into a site's workbook.
                self.unfilled_formulas.append(ref)
                if element == head + b">" + formula_xml + b"</c>":
                    continue
            else:
                continue
            segment = xml[text_start: match.start()]
            if not formula_xml:
                self._elements[len(refs)] = element
            refs.append(ref)
            cut.append(len(segment) + len(head))
            plain.append(bool(formula_xml) and _NUMBER not in segment + head)
            pre.append(segment + head + _NUMBER + formula_xml + _OPEN)
            text_start = match.end()
        pre.append(xml[text_start:])
        self.missing = sorted(missing)
        self.refs = refs
        self.count = len(refs)
        self._pre = pre
        self._cut = np.array(cut, dtype=np.int64)
        self._plain = np.array(plain, dtype=bool)
        self._found: dict[str, int] = {}
        self._prepare()

    def _prepare(self) -> None:
        """The parts a site's sheet is joined from, two a cell: ``_pre[i]`` and, for a number,
        its value and ``</v></c>``; a cell written whole (a blank, a text) takes the first
        part and leaves the second empty.

        Speed (a TFOM workbook has some 57,000 cells to fill): the parts are UTF-8 bytes, and
        so are the numbers (:func:`format_floats`), so a sheet is joined without encoding
        megabytes of text (the labels' "−", "·" and "◄" would make every sheet's text a wide
        string); a site's finite floats (most cells) go in with one slice assignment. Text
        stays plain UTF-8: some readers (SheetJS) decode character references in a formula's
        text result twice."""
        count = self.count
        parts = np.empty(2 * count + 1, dtype=object)
        parts[0::2] = np.array(self._pre, dtype=object)
        parts[1::2] = b""
        self._parts = parts
        self._blank = np.full(count, None, dtype=object)  # each cell's XML as a blank, once made
        # cell index → (type, value) → the XML made for it, kept between sites (:meth:`render`)
        self._made: dict[int, dict[tuple[type, object], bytes]] = {}

    @property
    def index(self) -> dict[str, int]:
        """Coordinate → the cell's index, made when first asked for: most of a site's cells
        are found by positions found once (:class:`~.values.StencilCells`), the others by
        :meth:`find`."""
        index = self.__dict__.get("_index")
        if index is None:
            index = self._index = dict(zip(self.refs, range(self.count), strict=True))
        return index

    def find(self, coord: str) -> int | None:
        """The index of the cell at ``coord`` (``None``: not a cell the stencil fills).

        The cells looked for so far are kept with the stencil (its charts' and summary's
        cells: about a thousand), so that a process's first site finds them without
        making :attr:`index` of all the sheet's cells."""
        found = self._found.get(coord)
        if found is None:  # -1: no cell of the stencil (a chart's title, found as often)
            found = self._found[coord] = self.index.get(coord, -1)
        return None if found < 0 else found

    def render(self, values: Mapping[str, object] | SheetValues) -> bytes:
        """The sheet's XML with ``values`` stored: coordinate → value, or a
        :class:`SheetValues` of this sheet."""
        if not isinstance(values, SheetValues):
            values = SheetValues.of(self, values)
        numbers = values.numbers
        finite = np.isfinite(numbers)
        parts = self._parts.copy()
        # every finite float in one call, each with the end of its cell
        parts[1::2][finite] = format_floats(numbers[finite], _END)
        rest = np.flatnonzero(~finite)
        if not rest.size:
            return b"".join(parts.tolist())
        blank = (values.others[rest] == "") & np.isnan(numbers[rest])
        blanks = rest[blank]
        if blanks.size:  # every blank at once (the IRR sheet has thousands)
            parts[2 * blanks] = self._blanks(blanks)
        # the other cells (the currency's units, "OK", "none", dates: some 850 a workbook) mostly
        # show what they showed for the site before: their XML is kept, by cell and value, for
        # at most _MADE_PER_CELL values a cell. A bound by cell, not by sheet: the cells that
        # show each site's name (the XML before the cell included: 12 KB a site) would
        # otherwise pile up until a sheet's bound, and the XML of the cells whose values recur
        # would go with them.
        made = self._made
        for index in rest[~blank].tolist():
            value = values.value_at(index)
            if type(value) is int:
                parts[2 * index + 1] = str(value).encode() + _END
                continue
            shown = made.get(index)
            if shown is None:
                shown = made[index] = {}
            key = (type(value), value)
            xml = shown.get(key)
            if xml is None:
                if len(shown) >= _MADE_PER_CELL:
                    shown.clear()
                segment, cell = self._cell(index)
                xml = shown[key] = segment + (
                    cell.original if value is _ABSENT else _cell_xml(cell, value)).encode()
            parts[2 * index] = xml
        return b"".join(parts.tolist())

    def _cell(self, index: int) -> tuple[bytes, _Cell]:
        """Cell ``index``: the XML before it (since the cell before) and the cell."""
        pre, cut = self._pre[index], int(self._cut[index])
        start = pre.rfind(b"<c", 0, cut)  # the head's "<": its attributes hold none
        head = pre[start:cut].decode()
        formula = pre[cut + len(_NUMBER): -len(_OPEN)].decode()
        element = self._elements.get(index)
        original = f"{head}>{formula}</c>" if element is None else element.decode()
        return pre[:start], _Cell(head, formula, original)

    def _blanks(self, indexes: np.ndarray) -> np.ndarray:
        """The XML of cells ``indexes`` holding a blank (``""``), each made once: what
        :func:`_cell_xml` writes for it, a formula's empty text (``t="str"``, ``<v></v>``)
        or an input's empty cell (``/>``), made from the cell's parts without parsing them
        (a site's first workbook has some 28,000 blanks)."""
        made, pre = self._blank, self._pre
        todo = indexes[np.equal(made[indexes], None)]
        plain = self._plain[todo]
        if plain.any():  # most: the first t="n"> of the cell's part is its own
            some = todo[plain].tolist()
            made[some] = [pre[i].replace(_NUMBER, _AS_TEXT, 1) + _END for i in some]
        if not plain.all():
            some = todo[~plain].tolist()
            cuts = self._cut[some].tolist()
            skip = len(_NUMBER)
            made[some] = [
                pre[i][:cut] + (_AS_TEXT + pre[i][cut + skip:] + _END
                                if len(pre[i]) > cut + skip + len(_OPEN) else _EMPTY)
                for i, cut in zip(some, cuts, strict=True)]
        return made[indexes]

    def __getstate__(self) -> dict[str, object]:
        """What a kept stencil holds (:mod:`tokenfactory_xl.files.build_cache`): the parts
        before the cells' values and the cells' coordinates, each as one long text (NUL
        apart), read back in a few milliseconds where some 57,000 objects each took pickle's
        work and memory; not the parts made from them, nor the XML made for the sites filled
        so far."""
        return {"refs": _APART.join(self.refs), "pre": _APART.encode().join(self._pre),
                "count": self.count,
                "cut": self._cut, "plain": self._plain, "elements": self._elements,
                "found": self._found,
                "unfilled_formulas": self.unfilled_formulas, "missing": self.missing}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._cut = state["cut"]
        self._plain = state["plain"]
        self.count = state["count"]  # type: ignore[assignment]
        self._refs = state["refs"]  # the coordinates split when first asked for (:attr:`refs`)
        self._pre = state["pre"].split(_APART.encode())  # type: ignore[union-attr]
        self._elements = state["elements"]  # type: ignore[assignment]
        self._found = state["found"]  # type: ignore[assignment]
        self.unfilled_formulas = state["unfilled_formulas"]  # type: ignore[assignment]
        self.missing = state["missing"]  # type: ignore[assignment]
        self._prepare()

    def __getattr__(self, name: str) -> object:
        # a stencil read back splits its cells' coordinates when they are first needed: a
        # site's workbook finds its cells by positions kept with it (:meth:`find`)
        if name == "refs" and "_refs" in self.__dict__:
            text = self.__dict__.pop("_refs")
            self.refs = text.split(_APART) if self.count else []
            return self.refs
        raise AttributeError(name)


class SheetValues:
    """One worksheet's values in its stencil's cell order, set a run of cells at a time.

    A site's workbook fills some 27,000 cells, most of them a model line's row of numbers: such
    a row goes into :attr:`numbers` as it is, without a float object per cell, and the sheet
    formats all of them in one call. A cell whose number is not finite shows what
    :attr:`others` holds for it (a text, a date, a count, a line's blank) or, for ±inf, the
    error a spreadsheet shows. As in a dict, the last value set for a cell is the one it shows.
    """

    def __init__(self, sheet: _SheetStencil):
        self._sheet = sheet
        self.numbers = np.full(sheet.count, np.nan)
        self.others = np.full(sheet.count, _ABSENT, dtype=object)

    @classmethod
    def of(cls, sheet: _SheetStencil, values: Mapping[str, object]) -> SheetValues:
        """The values a mapping gives (coordinate → value; a cell it does not name keeps the
        template's content)."""
        out = cls(sheet)
        out.replace(values)
        return out

    def replace(self, values: Mapping[str, object]) -> None:
        """Every cell anew: the value ``values`` gives it (coordinate → value), or the
        template's content where it gives none."""
        self.numbers[:] = np.nan
        self.others[:] = _ABSENT
        refs = self._sheet.refs
        self.put(range(len(refs)), list(map(values.get, refs, repeat(_ABSENT))))

    def positions(self, coords: Iterable[str]) -> np.ndarray:
        """The stencil's indexes of the cells at ``coords`` (KeyError: not a cell it fills)."""
        return np.fromiter(map(self._sheet.index.__getitem__, coords), dtype=np.intp)

    def put(self, positions: Sequence[int] | np.ndarray, values: Sequence[object]) -> None:
        """Set the cells at ``positions`` to ``values`` (one each)."""
        finite = list(map(_finite_float, values))
        where = np.asarray(positions, dtype=np.intp)
        self.numbers[where] = [v if f else np.nan for v, f in zip(values, finite, strict=True)]
        if not all(finite):
            for index, value, number in zip(where.tolist(), values, finite, strict=True):
                if not number:
                    self.others[index] = value

    def put_numbers(self, positions: np.ndarray, numbers: np.ndarray, missing: object) -> None:
        """Set the cells at ``positions`` to the floats ``numbers``; a NaN among them shows
        ``missing`` (a line's blank or "none")."""
        self.numbers[positions] = numbers
        self.others[positions] = missing  # shown where the number is NaN

    def put_same(self, positions: np.ndarray, value: object) -> None:
        """Set the cells at ``positions`` to ``value``, which is not a number (a blank)."""
        self.numbers[positions] = np.nan
        self.others[positions] = value

    def put_one(self, coord: str, value: object) -> None:
        """Set the cell at ``coord`` (an input, a scalar line: hundreds a site, one at a time)."""
        index = self._sheet.find(coord)
        if index is None:
            raise KeyError(coord)
        if _finite_float(value):
            self.numbers[index] = value
        else:
            self.numbers[index] = np.nan
            self.others[index] = value

    def value_at(self, index: int) -> object:
        """The value of the stencil's cell ``index`` (:data:`_ABSENT`: none set)."""
        number = float(self.numbers[index])
        return number if number == number else self.others[index]  # ±inf is a number

    def get(self, coord: str, default: object = None) -> object:
        """The value set for ``coord``; ``default`` for a cell not set (or not filled)."""
        index = self._sheet.find(coord)
        value = _ABSENT if index is None else self.value_at(index)
        return default if value is _ABSENT else value

    def __getitem__(self, coord: str) -> object:
        value = self.get(coord, _ABSENT)
        if value is _ABSENT:
            raise KeyError(coord)
        return value


def _finite_float(value: object) -> bool:
    """Whether a cell's value is a float it stores as a number (not NaN, not ±inf)."""
    return type(value) is float and value - value == 0.0  # inf - inf is NaN


def _cell_xml(cell: _Cell, value: object) -> str:
    """The XML of ``cell`` holding ``value``: the stored value of a formula or an input."""
    if value is None or (value == "" and not cell.is_formula):
        return f"{cell.head}>{cell.formula}</c>" if cell.is_formula else f"{cell.head}/>"
    if isinstance(value, str):
        if _ILLEGAL_XML.search(value):
            raise StencilError(f"{cell.head[3:]}: text with control characters {value!r}")
        text = escape(value) if _NEEDS_ESCAPE.search(value) else value
        if cell.is_formula:
            if value in _EXCEL_ERRORS:
                return f'{cell.head} t="e">{cell.formula}<v>{value}</v></c>'
            return f'{cell.head} t="str">{cell.formula}<v>{text}</v></c>'
        space = ' xml:space="preserve"' if value != value.strip() or "\n" in value else ""
        return f'{cell.head} t="inlineStr"><is><t{space}>{text}</t></is></c>'
    if isinstance(value, bool):
        return f'{cell.head} t="b">{cell.formula}<v>{int(value)}</v></c>'
    if isinstance(value, (dt.date, dt.datetime)):
        return f'{cell.head} t="n">{cell.formula}<v>{_format_number(excel_serial(value))}</v></c>'
    number = value if isinstance(value, int) else float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        # What a spreadsheet shows for a result that is no number; an input is never one.
        return f'{cell.head} t="e">{cell.formula}<v>#NUM!</v></c>'
    return f'{cell.head} t="n">{cell.formula}<v>{_format_number(number)}</v></c>'


def format_floats(numbers: list[float] | np.ndarray, end: bytes = b"") -> list[bytes]:
    """Finite floats (a list, or a float64 array) as the file stores them, in ASCII bytes: the
    text ``repr`` gives each, every digit needed to give the same float back (``1e-05``,
    ``1e+16``, ``0.1``), written in bulk; each followed by ``end`` (no comma in it: a sheet
    gives the end of a number's cell, ``</v></c>``, and joins one part a cell fewer).

    A worksheet stores some 15,000 numbers; ``repr`` one at a time is a third of filling it.
    orjson writes the same shortest digits in C, from an array without a float object per
    number; only where it chooses another notation than ``repr`` (exponents: below 1e-4 and
    from 1e16) is ``repr`` asked, so the text, and the file, do not depend on whether orjson is
    installed.
    """
    if _orjson is None or len(numbers) < 8:
        return [repr(x).encode() + end for x in np.asarray(numbers, dtype=float).tolist()]
    if isinstance(numbers, np.ndarray):
        array = np.ascontiguousarray(numbers, dtype=np.float64)
        texts = _orjson.dumps(array, option=_orjson.OPT_SERIALIZE_NUMPY)
    else:
        array = np.array(numbers, dtype=float)
        texts = _orjson.dumps(numbers)
    body = texts[1:-1]
    if end:
        body = body.replace(b",", end + b",") + end
    out = body.split(b",")
    size = np.abs(array)
    for i in np.flatnonzero(((size < 1e-4) & (size != 0)) | (size >= 1e16)).tolist():
        out[i] = repr(float(array[i])).encode() + end
    return out


def _format_number(number: float | int) -> str:
    """A number as the file stores it: every digit ``repr`` needs to give the same float back."""
    return str(number) if isinstance(number, int) else repr(float(number))


@functools.lru_cache(maxsize=4096)  # a timeline repeats the same month starts site after site
def excel_serial(value: dt.date | dt.datetime) -> float:
    """A date as Excel's serial number in the 1900 date system [days]."""
    if isinstance(value, dt.datetime):
        delta = value - dt.datetime(1899, 12, 30)
        return delta.days + delta.seconds / 86_400 + delta.microseconds / 86_400e6
    return float((value - _EPOCH).days)


class Stencil:
    """A template workbook prepared for filling: build once, :meth:`fill` once per site.

    Parameters
    ----------
    template : the ``.xlsx`` file's bytes; formula cells may carry no stored values (they are
        removed anyway).
    cells : sheet title → the coordinates a site fills (its input and formula cells).
    level : deflate level of the worksheets (0 stores them uncompressed; see :data:`DEFLATE`).

    Raises
    ------
    StencilError
        when a coordinate in ``cells`` is not a cell of the template: a stencil can only fill
        cells that exist (with their styles) in the template.
    """

    def __init__(self, template: bytes, cells: Mapping[str, Iterable[str]],
                 level: int = COMPRESSION_LEVEL):
        self.level = level
        with zipfile.ZipFile(io.BytesIO(template)) as archive:
            parts = _sheet_parts(archive)
            self.defined_cells = _defined_cells(archive)
            unknown = sorted(set(cells) - set(parts))
            if unknown:
                raise StencilError(f"sheets not in the template: {', '.join(unknown)}")
            self._sheets: dict[str, _SheetStencil] = {}
            self._order: list[tuple[str, str | _Member]] = []  # (member name, sheet or member)
            missing: list[str] = []
            by_part = {part: title for title, part in parts.items()}
            self.unfilled_formulas: dict[str, list[str]] = {}
            for info in archive.infolist():
                title = by_part.get(info.filename)
                if title is not None:
                    sheet = _SheetStencil(archive.read(info), set(cells.get(title, ())))
                    missing += [f"{title}!{ref}" for ref in sheet.missing]
                    if sheet.unfilled_formulas:
                        self.unfilled_formulas[title] = sheet.unfilled_formulas
                    self._sheets[title] = sheet
                    self._order.append((info.filename, title))
                    continue
                data = archive.read(info)
                if info.filename == "xl/workbook.xml":
                    data = _full_calc_on_load(data)
                    self._order.append((info.filename, _compress(info.filename, data, 6)))
                elif info.compress_type == zipfile.ZIP_DEFLATED:
                    self._order.append((info.filename, _raw_member(archive, info)))
                else:
                    self._order.append((info.filename, _compress(info.filename, data, 6)))
        if missing:
            shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
            raise StencilError(f"{len(missing)} cells to fill are not in the template: {shown}")

    @property
    def sheets(self) -> tuple[str, ...]:
        """The sheet titles, in the order of the zip."""
        return tuple(self._sheets)

    def values(self) -> dict[str, SheetValues]:
        """Sheet title → an empty :class:`SheetValues` of it, to set and then :meth:`fill`."""
        return {title: SheetValues(sheet) for title, sheet in self._sheets.items()}

    def fill(self, values: Mapping[str, Mapping[str, object] | SheetValues],
             parts: Mapping[str, bytes] | None = None) -> bytes:
        """The workbook with ``values`` (sheet → coordinate → value, or sheet →
        :class:`SheetValues`) stored, as ``.xlsx`` bytes.

        A cell of the stencil that ``values`` does not mention keeps the template's content
        (its formula without a stored value). ``parts`` replaces other members of the zip for
        this site (a chart with its values cached).
        """
        members = []
        parts = parts or {}
        for name, item in self._order:
            if isinstance(item, str):
                xml = self._sheets[item].render(values.get(item, {}))
                members.append(_compress(name, xml, self.level))
            elif name in parts:
                members.append(_compress(name, parts[name], self.level))
            else:
                members.append(item)
        return _zip_bytes(members)

    def member(self, name: str) -> bytes:
        """The template's member ``name`` (not a worksheet), uncompressed, as this stencil
        writes it when no site replaces it."""
        for member_name, item in self._order:
            if member_name == name and isinstance(item, _Member):
                if item.method == zipfile.ZIP_STORED:
                    return item.compressed
                return zlib.decompress(item.compressed, -15)
        raise KeyError(name)

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self._order)


def _sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet title → zip member of its worksheet XML, from workbook.xml and its relationships."""
    from xml.etree import ElementTree  # a stencil is cut once: a site's workbook parses nothing

    book = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    rels = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "")
               for r in rels.iter(f"{{{_NS_PKG_REL}}}Relationship")}
    parts = {}
    for sheet in book.iter(f"{{{_NS_MAIN}}}sheet"):
        target = targets.get(sheet.get(f"{{{_NS_REL}}}id"), "")
        part = target.lstrip("/") if target.startswith("/") else "xl/" + target
        parts[sheet.get("name", "")] = part
    return parts


def _defined_cells(archive: zipfile.ZipFile) -> dict[str, tuple[str, str]]:
    """Workbook-level defined names that point at one cell: name → (sheet title, ``B7``)."""
    from xml.etree import ElementTree

    book = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    found = {}
    for item in book.iter(f"{{{_NS_MAIN}}}definedName"):
        if item.get("localSheetId") is not None or not item.text:
            continue
        match = _ONE_CELL.fullmatch(item.text.strip())
        if match:
            sheet = match.group(1) or match.group(2)
            ref = match.group(3) + match.group(4)
            found[item.get("name", "")] = (sheet.replace("''", "'"), ref)
    return found


def _full_calc_on_load(workbook_xml: bytes) -> bytes:
    """workbook.xml with ``fullCalcOnLoad="1"``: Excel recalculates every formula on open."""
    match = _CALC_PR.search(workbook_xml)
    if match is None:
        return workbook_xml.replace(b"</workbook>",
                                    b'<calcPr calcId="191029" fullCalcOnLoad="1"/></workbook>')
    tag = match.group(0)
    if b"fullCalcOnLoad=" in tag:
        new = re.sub(rb'fullCalcOnLoad="[^"]*"', b'fullCalcOnLoad="1"', tag)
    else:
        new = tag[:-2].rstrip() + b' fullCalcOnLoad="1"/>'
    return workbook_xml[: match.start()] + new + workbook_xml[match.end():]


def deflate(data: bytes, level: int = COMPRESSION_LEVEL) -> bytes:
    """``data`` as a raw deflate stream (what a zip member holds), by :data:`DEFLATE` at the
    fastest level and by zlib at any other."""
    if level == COMPRESSION_LEVEL and _isal is not None:
        packer = _isal.compressobj(1, _isal.DEFLATED, -15)
    else:
        packer = zlib.compressobj(level, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _compress(name: str, data: bytes, level: int) -> _Member:
    crc = zlib.crc32(data) if _isal is None else _isal.crc32(data)
    if level == 0:
        return _Member(name.encode(), zipfile.ZIP_STORED, crc, data, len(data))
    return _Member(name.encode(), zipfile.ZIP_DEFLATED, crc, deflate(data, level), len(data))


def _raw_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, held: bool = True
                ) -> _Member:
    """A member's already-compressed bytes, read past its local header without inflating
    (``held``: read into memory; else left in the archive, copied as they are written)."""
    fp = archive.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    if header[:4] != b"PK\x03\x04":
        raise StencilError(f"damaged template zip at {info.filename}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    fp.seek(start)
    compressed = (fp.read(info.compress_size) if held else
                  _Span(fp, start, info.compress_size))  # type: ignore[arg-type]
    return _Member(info.filename.encode(), info.compress_type, info.CRC, compressed,
                   info.file_size)


def _zip_bytes(members: Iterable[_Member]) -> bytes:
    """A zip archive of ``members`` as bytes (:func:`_write_zip`)."""
    out = io.BytesIO()
    _write_zip(members, out)
    return out.getvalue()


def _write_zip(members: Iterable[_Member], out: BinaryIO) -> None:
    """A zip archive of ``members`` written to ``out``: local headers, data, central directory,
    end record; each member written as it comes, so a member made on the way is let go.

    Written by hand so that unchanged members are copied as compressed bytes; the result is a
    plain zip (no zip64: a TFOM workbook is far below 4 GB) that :mod:`zipfile`, Excel and
    LibreOffice read.
    """
    central = []
    offset = 0
    for m in members:
        flags = 0x800 if any(b > 127 for b in m.name) else 0  # bit 11: the name is UTF-8
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, m.method, _DOS_TIME,
                             _DOS_DATE, m.crc, len(m.compressed), m.size, len(m.name), 0)
        out.write(header)
        out.write(m.name)
        if isinstance(m.compressed, _Span):
            m.compressed.copy_to(out)
        else:
            out.write(m.compressed)
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, m.method,
                                   _DOS_TIME, _DOS_DATE, m.crc, len(m.compressed), m.size,
                                   len(m.name), 0, 0, 0, 0, 0, offset) + m.name)
        offset += len(header) + len(m.name) + len(m.compressed)
    size = sum(map(len, central))
    for entry in central:
        out.write(entry)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), size,
                          offset, 0))


#: The creation and modification time written into generated workbooks' document properties:
#: a fixed one, so that the same inputs give the same bytes.
FIXED_TIMESTAMP = "2000-01-01T00:00:00Z"
_CORE_DATES = re.compile(rb"(<dcterms:(?:created|modified)\b[^>]*>)[^<]*(</dcterms:)")


#: The zlib level :mod:`zipfile` deflates with by default (zlib's own default).
_ZIPFILE_LEVEL = 6


def repack_to(data: bytes | BinaryIO, out: BinaryIO, level: int = _ZIPFILE_LEVEL,
              rewrite: Mapping[str, Callable[[bytes], bytes]] | None = None) -> None:
    """Write an ``.xlsx`` to ``out`` rewritten deterministically: fixed zip timestamps and
    document dates.

    openpyxl stamps the save time into ``docProps/core.xml`` and every zip entry; this rewrites
    both to fixed values and recompresses at ``level``, members in their original order (at
    zipfile's own level, a deflated member that is not rewritten is copied compressed: the same
    bytes, without inflating it). ``rewrite`` maps member names to functions that change their
    content on the way. ``data`` is the workbook's bytes or a file holding them; the result is
    written member by member.
    """
    source = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    with zipfile.ZipFile(source) as archive:
        # the spellings every reader expects (relative targets, xdr: drawings, comments)
        renames, rewrite = _with_conventions(archive.namelist(), rewrite or {})

        def members() -> Iterator[_Member]:
            for info in archive.infolist():
                if (level == _ZIPFILE_LEVEL and info.compress_type == zipfile.ZIP_DEFLATED
                        and info.filename not in rewrite and info.filename not in renames
                        and info.filename != "docProps/core.xml"):
                    # Compressed as it would be here: copied without inflating and a piece at
                    # a time (a portfolio's table of many thousand sites is never held).
                    yield _raw_member(archive, info, held=False)
                    continue
                body = archive.read(info)
                if info.filename == "docProps/core.xml":
                    body = _CORE_DATES.sub(rb"\g<1>" + FIXED_TIMESTAMP.encode() + rb"\g<2>",
                                           body)
                if info.filename in rewrite:
                    body = rewrite[info.filename](body)
                yield _compress(renames.get(info.filename, info.filename), body, level)

        _write_zip(members(), out)


def _with_conventions(names: list[str], rewrite: Mapping[str, Callable[[bytes], bytes]]
                      ) -> tuple[dict[str, str], dict[str, Callable[[bytes], bytes]]]:
    """The package conventions of :mod:`ooxml` for these members, after ``rewrite``."""
    renames, conventional = ooxml.conventions(names)
    both = dict(rewrite)
    for name, after in conventional.items():
        first = both.get(name)
        both[name] = after if first is None else (lambda xml, f=first, a=after: a(f(xml)))
    return renames, both
