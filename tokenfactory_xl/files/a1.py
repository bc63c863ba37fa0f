"""A1 cell addresses, as every spreadsheet spells them: a column's letters and its number
(``A`` is 1, ``Z`` 26, ``AA`` 27), a cell's column and row (``E9``).

The workbook's plan, the charts' references and the audit's reading of a returned file all
spell cells this way; here is the one rule they share, with no spreadsheet library behind it.
"""

from __future__ import annotations

import functools
import re

_COORD = re.compile(r"([A-Z]+)(\d+)")


@functools.lru_cache(maxsize=1 << 12)
def column_letter(index: int) -> str:
    """The letters of column ``index`` (1 → ``A``, 27 → ``AA``)."""
    letters = ""
    while index > 0:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def column_index(letters: str) -> int:
    """The number of column ``letters`` (``A`` → 1, ``AA`` → 27)."""
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


@functools.lru_cache(maxsize=1 << 16)  # a workbook's formulas name the same cells many times
def split_coord(coord: str) -> tuple[str, int]:
    """A cell's column letters and row number (``"E9"`` → ``("E", 9)``)."""
    m = _COORD.fullmatch(coord)
    assert m, coord
    return m.group(1), int(m.group(2))


def absolute(coord: str) -> str:
    """A cell's absolute address (``"E9"`` → ``"$E$9"``)."""
    letters, row = split_coord(coord)
    return f"${letters}${row}"
