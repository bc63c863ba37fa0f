"""Numbers a person typed as text, read the one way they can mean, or refused saying why.

A number reaches the model as text from many hands: ``--set opex_per_gpu_hour=0,150`` typed by
a user of a German Excel, ``32 000`` pasted from a French report (with a narrow no-break space
between the thousands), ``1,00,000`` from an Indian one, ``2,7648E+06`` from a scientific format
with a decimal comma, a cell of a returned workbook typed as text. This module is the one reader
of all of them: the sites file, ``--set``, the inputs of a returned workbook (``refresh``,
``collect``) and the sites file ``actuals`` updates.

:func:`shape` tells what a number's separators can mean:

=========  =====================================================  ==========================
shape      examples                                               reads as
=========  =====================================================  ==========================
plain      ``1024``, ``32 000``, ``1'000``                        its digits
comma      ``0,150``, ``1,5``, ``1.234,5``, ``1.234.567``         a decimal comma
point      ``0.65``, ``1,234.5``, ``1,234,567``, ``1,00,000``     a decimal point
dot?       ``40.000``                                             40 or 40000: ambiguous
comma?     ``1,100``                                              1.1 or 1100: ambiguous
=========  =====================================================  ==========================

Groups of three digits may be separated by spaces (any of the no-break spaces too) or
apostrophes; the separator after them is then the decimal one. In scientific notation
(``2,7648E+06``) the one separator of the mantissa is the decimal one: no program writes
thousands there. :func:`read` turns text into a float given the decimal separator when it is
known (a file's own convention), and otherwise refuses an ambiguous number naming both readings.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import TokenFactoryError

#: Characters that separate groups of three digits besides ``,`` and ``.``: the space, the
#: no-break space (U+00A0), the narrow no-break space (U+202F, what a French Excel writes), the
#: thin and figure spaces (U+2009, U+2007), and the apostrophes of Swiss usage.
GROUP_SPACES = " \u00a0\u202f\u2009\u2007'\u2019"

_NUMBER = re.compile(r"^([+-]?)([\d.,]*\d[\d.,]*|[\d.,]*[.,])((?:[eE][+-]?\d+)?)(%?)$")
_SPACED = re.compile(rf"^\d{{1,3}}(?:[{GROUP_SPACES}]\d{{3}})+(?:[.,]\d*)?$")
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\d+$"), "plain"),
    (re.compile(r"^\d{1,3}(\.\d{3})+,\d*$|^\d{1,3}(\.\d{3}){2,}$"), "comma"),
    (re.compile(r"^\d{1,3}(,\d{3})+\.\d*$|^\d{1,3}(,\d{3}){2,}$"), "point"),
    # Indian grouping: thousands, then lakhs and crores in twos (1,00,000 = 100,000)
    (re.compile(r"^\d{1,2}(,\d{2})+,\d{3}(\.\d*)?$"), "point"),
    (re.compile(r"^[1-9]\d{0,2}\.\d{3}$"), "dot?"),      # 40.000: 40 or 40 000
    (re.compile(r"^[1-9]\d{0,2},\d{3}$"), "comma?"),    # 1,100: 1 100 or 1.1
    (re.compile(r"^\d*\.\d*$"), "point"),
    (re.compile(r"^\d*,\d*$"), "comma"),
)


class NumberShape(NamedTuple):
    """A number typed as text, taken apart: ``sign``, the digits and separators of ``core``,
    the ``exponent`` (``"E+06"`` or ``""``), ``percent`` (``"%"`` or ``""``) and its ``shape``
    (see the module's table; ``"other"`` when its separators fit no convention)."""

    sign: str
    core: str
    exponent: str
    percent: str
    shape: str


class NumberTextError(TokenFactoryError, ValueError):
    """Text that is no number, or reads two ways: ``reason`` says why, ``fix`` what to type,
    ``readings`` the two numbers an ambiguous text can be (else empty)."""

    def __init__(self, reason: str, fix: str = "", readings: tuple[str, ...] = ()):
        super().__init__(reason)
        self.reason, self.fix, self.readings = reason, fix, readings


#: Signs a word processor or a report writes for the minus: the minus sign U+2212 and the en
#: dash; and the apostrophe Excel shows nowhere but keeps before a number typed as text.
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})


def shape(text: str) -> NumberShape | None:
    """How ``text`` is written as a number, or ``None`` when it is not one at all."""
    compact = text.strip().translate(_MINUS)
    if compact.startswith("'") and compact[1:2].isdigit():
        compact = compact[1:]
    match = _NUMBER.match(re.sub(rf"[{GROUP_SPACES}]", "", compact))
    if not match:
        return None
    sign, core, exponent, percent = match.groups()
    spaced = compact.lstrip("+-").rstrip("%")
    if exponent:
        spaced = spaced[: -len(exponent)]
    if any(c in GROUP_SPACES for c in spaced.strip()):
        # spaces or apostrophes group the thousands: only whole groups of three, and what
        # follows the last group is the decimal separator
        if not _SPACED.match(spaced.strip()):
            return NumberShape(sign, core, exponent, percent, "other")
        decimal = next((c for c in core if c in ".,"), "")
        kind = {"": "plain", ",": "comma", ".": "point"}[decimal]
        return NumberShape(sign, core, exponent, percent, kind)
    if exponent and core.count(",") + core.count(".") == 1:
        return NumberShape(sign, core, exponent, percent, "comma" if "," in core else "point")
    kind = next((name for pattern, name in _SHAPES if pattern.match(core)), "other")
    if exponent and kind not in ("plain",):
        kind = "other"   # thousands separators in a mantissa: no program writes that
    return NumberShape(sign, core, exponent, percent, kind)


def as_read(number: NumberShape, decimal: str) -> str:
    """``number`` written as Python reads it, ``decimal`` being its decimal separator."""
    thousands = "." if decimal == "," else ","
    core = number.core.replace(thousands, "").replace(decimal, ".")
    return number.sign + core + number.exponent + number.percent


def two_readings(text: str) -> tuple[str, str] | None:
    """The two readings of a number typed as text that reads two ways (``"1,100"`` →
    ``("1100", "1.100")``: thousands separator, or decimal separator), or ``None`` when it reads
    one way (or is no number)."""
    number = shape(text)
    if number is None or number.shape not in ("dot?", "comma?"):
        return None
    separator_is_dot = "." in number.core
    return (as_read(number, "," if separator_is_dot else "."),
            as_read(number, "." if separator_is_dot else ","))


def read_number(text: str, decimal: str | None = None) -> tuple[float, bool]:
    """``text`` as a number and whether it ended with ``%`` (the number is not divided by 100).

    ``decimal`` is the decimal separator when the text's source has one convention (a file
    that showed it); ``None`` when nothing says, and then a number that reads two ways is
    refused naming both readings.

    Raises
    ------
    NumberTextError
        not a number, separators no convention writes, ambiguous, or against ``decimal``.
    """
    number = shape(text)
    if number is None:
        raise NumberTextError("is not a number")
    kind = number.shape
    if kind == "other":
        raise NumberTextError(
            "is not a number: its separators fit no way of writing numbers (thousands in groups "
            "of three, or of two then three as in 1,00,000; one decimal separator)",
            "type the number without thousands separators, e.g. 1234.5")
    if kind in ("dot?", "comma?"):
        if decimal is None:
            thousands, decimal_reading = two_readings(text)  # type: ignore[misc]
            separator = "." if "." in number.core else ","
            raise NumberTextError(
                f"is ambiguous: {thousands} if the {separator!r} separates thousands, "
                f"{decimal_reading} if it is the decimal separator",
                f"type {thousands} or {decimal_reading} without a thousands separator",
                (thousands, decimal_reading))
        used = decimal
    elif kind == "plain":
        used = "."
    else:
        used = "," if kind == "comma" else "."
        if decimal is not None and used != decimal:
            raise NumberTextError(
                f"has a decimal {'comma' if used == ',' else 'point'}, but the other numbers "
                f"here have decimal {'points' if decimal == '.' else 'commas'}",
                "write every number with the same decimal separator")
    value = float(as_read(number, used).rstrip("%"))
    return value, bool(number.percent)
