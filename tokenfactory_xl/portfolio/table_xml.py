"""The portfolio table's rows as worksheet XML, the text openpyxl's write-only mode writes.

A portfolio of many sites is mostly its table: a row per site, sixty-odd cells a row. openpyxl
makes an object of each cell and serialises it through ElementTree: most of the 1.1 to 1.6 ms
of CPU a site that the portfolio took (a batch's workbook takes some 35). :class:`TableRows`
writes the same rows as text, character for character, and
:mod:`tokenfactory_xl.portfolio.book` splices them into the sheet that openpyxl writes around
them (its header row and comments, the columns' widths, the table, the page set-up), so the
workbook's bytes are those openpyxl alone would write. (openpyxl serialises through the
standard library's ElementTree, by et_xmlfile, unless lxml is installed, which spells an empty
element ``<c/>``: the package does not depend on lxml, and these rows are always spelled as
ElementTree spells them.)

What openpyxl writes for a cell of a write-only sheet, and so what this writes:

- text: ``<c r="A2" t="inlineStr"><is><t>…</t></is></c>``, ``&``, ``<`` and ``>`` as entities
  (quotes as they are), ``xml:space="preserve"`` on text with white space around other
  characters, cut at 32,767 characters (Excel's limit); a control character XML cannot hold is
  refused (openpyxl's ``IllegalCharacterError``); the empty text is ``<c r="A2" t="inlineStr" />``;
- a number: ``<c r="B2" s="3" t="n"><v>…</v></c>``, a float with every digit (``repr``), an
  integer as ``%.16g``, a date as its serial day;
- a blank: ``<c r="B2" s="3" t="n" />`` in a column with a number format, nothing in one without;
- any other value (a bool, a numpy scalar): openpyxl's own cell writer.

``s`` is the index of the column's number format among the workbook's cell styles, which
openpyxl numbers in the order cells first use them: a column's style is registered with the
workbook at its first number or blank, in the order of the rows, as openpyxl would.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import re
from collections.abc import Sequence

from ..files.ooxml import escape_text

#: The longest text a cell holds (Excel's limit; openpyxl cuts longer text there).
MOST_CHARACTERS = 32_767
#: The number format openpyxl gives a date cell, and the portfolio's for a date column.
DATE_FORMAT = "yyyy-mm-dd"
_finite = math.isfinite
# The characters openpyxl refuses in a cell's text (XML 1.0 cannot hold them).
_ILLEGAL = re.compile(r"[\000-\010]|[\013-\014]|[\016-\037]")


class TableRows:
    """The rows of a write-only worksheet's table as XML text, one call a row.

    Parameters
    ----------
    ws : the openpyxl write-only worksheet the rows belong to (its workbook registers the
        cells' styles).
    formats : each column's number format, for its numbers and blanks (text has none).
    """

    def __init__(self, ws, formats: Sequence[str]):  # type: ignore[no-untyped-def]
        from openpyxl.utils import get_column_letter

        self._ws = ws
        self._formats = list(formats)
        self._letters = [get_column_letter(i) for i in range(1, len(formats) + 1)]
        # each column's ' s="…"' ("" for a column in General), found at its first number
        self._styles: list[str | None] = [None] * len(formats)

    def _style(self, column: int) -> str:
        """Column ``column``'s style attribute (0-based), registered on first use."""
        found = self._styles[column]
        if found is None:
            from openpyxl.cell import WriteOnlyCell

            cell = WriteOnlyCell(self._ws)
            cell.number_format = self._formats[column]
            found = f' s="{cell.style_id}"' if cell.has_style else ""
            self._styles[column] = found
        return found

    def row(self, number: int, values: Sequence[object]) -> str:
        """Row ``number`` (1-based) holding ``values`` (``None``: blank), as ``<row>`` text."""
        parts = [f'<row r="{number}">']
        styles = self._styles
        for column, (found, letter) in enumerate(zip(values, self._letters, strict=True)):
            kind = type(found)
            if kind is str:
                parts.append(_text_cell(f"{letter}{number}", found))  # type: ignore[arg-type]
                continue
            style = styles[column]
            if style is None:
                style = self._style(column)
            if kind is float and _finite(found):
                parts.append(f'<c r="{letter}{number}"{style} t="n"><v>{found!r}</v></c>')
            elif kind is int:
                parts.append(f'<c r="{letter}{number}"{style} t="n"><v>{found:.16g}</v></c>')
            elif found is None:
                if style:  # openpyxl leaves out a blank cell without a style
                    parts.append(f'<c r="{letter}{number}"{style} t="n" />')
            elif kind is dt.date and self._formats[column] == DATE_FORMAT:
                from openpyxl.utils.datetime import to_excel

                serial = to_excel(found, self._ws.parent.epoch)
                parts.append(f'<c r="{letter}{number}"{style} t="n"><v>{serial:.16g}</v></c>')
            else:
                parts.append(self._by_openpyxl(found, column, number))
        parts.append("</row>")
        return "".join(parts)

    def _by_openpyxl(self, found: object, column: int, number: int) -> str:
        """The cell as openpyxl's write-only sheet writes it, made the way the portfolio makes
        its cells: text as text, anything else with the column's number format."""
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.cell._writer import write_cell
        from openpyxl.xml.functions import xmlfile

        cell = WriteOnlyCell(self._ws, value=None)
        cell.value = found
        if isinstance(found, str):
            cell.data_type = "s"  # text, even when it starts with "="
        else:
            cell.number_format = self._formats[column]
            if isinstance(found, float) and math.isfinite(found):
                cell._value = repr(found)  # every digit, as the portfolio's numbers
        cell.row, cell.column = number, column + 1
        if cell._value is None and not cell.has_style:
            return ""
        out = io.BytesIO()
        with xmlfile(out) as xf, xf.element("sheetData"):
            write_cell(xf, self._ws, cell, cell.has_style)
        text = out.getvalue().decode("utf-8")
        return text[text.index(">") + 1:text.rindex("<")]


def _text_cell(ref: str, text: str) -> str:
    """A text cell as openpyxl writes it (see the module's notes)."""
    if len(text) > MOST_CHARACTERS:
        text = text[:MOST_CHARACTERS]
    if _ILLEGAL.search(text):
        from openpyxl.utils.exceptions import IllegalCharacterError

        raise IllegalCharacterError(f"{text} cannot be used in worksheets.")
    if not text:
        return f'<c r="{ref}" t="inlineStr" />'
    stripped = text.strip()
    space = ' xml:space="preserve"' if stripped and stripped != text else ""
    return f'<c r="{ref}" t="inlineStr"><is><t{space}>{escape_text(text)}</t></is></c>'
