"""A table a person made, read as one: a .csv or .xlsx file's header row and the rows under it.

Where the header is (the first row naming a key column, or a given row), which cells a formula
fills without a stored value, which merges are refused, how numbers typed as text read with the
file's one decimal convention: the rules every table of the package shares (sites files and
cohorts files), whatever the columns mean. Only regular files are read.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import re
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core import number_text
from ..core.catalogue import BY_NAME, Input
from ..core.errors import InputError, Problem
from ..core.number_text import two_readings
from ..files.a1 import column_letter
from ..files.disk import (
    NotARegularFile,
    open_regular,
    read_pieces,
    read_regular,
    regular_file_problem,
)

# -- reading -------------------------------------------------------------------------------------
#: Rows searched for the header (the first row holding a ``site_name`` cell) when not given.
HEADER_SEARCH_ROWS = 50


#: The sheet of a sites workbook holding its further cohorts (its title compared ignoring case).
COHORTS_SHEET = "cohorts"

# An .xlsx sites file is a zip; refuse one that unpacks to more than this [bytes] (a zip bomb
# of 0.6 MB can hold gigabytes of XML, and openpyxl has no size guard); no sites or cohorts
# file of either kind read is larger (100,000 sites are some 50 MB of CSV).
MAX_XLSX_UNPACKED = 200 * 2**20


def _is_site_name(value: object) -> bool:
    return isinstance(value, str) and normalise_column(value) == "site_name"


def _is_cohorts_sheet(title: str) -> bool:
    return title.strip().casefold() == COHORTS_SHEET


@dataclass(frozen=True)
class _Formula:
    """A formula cell with no stored value: the file was saved by a program that does not
    calculate, so the value the sheet would show is unknown."""

    coord: str
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class _Source:
    """The cells of a sites file as read, before any checking: a workbook's held as a grid, a
    CSV file's read again from the file each time its rows are asked for (:meth:`rows`), so
    that a file of many thousand rows is never held whole."""

    grid: list[list[object]] | None
    delimiter: str | None = None  # None for a workbook
    sheet: str | None = None
    merges: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # other sheets of the workbook with a site_name cell: title → row
    elsewhere: dict[str, int] = field(default_factory=dict)
    hidden_rows: set[int] = field(default_factory=set)
    hidden_columns: set[int] = field(default_factory=set)  # 0-based
    totals_rows: dict[int, str] = field(default_factory=dict)  # row → its Excel table's name
    sheets: dict[str, str] = field(default_factory=dict)  # a workbook's sheets: title → state
    text: _CsvText | None = None  # a CSV file's text, read row by row

    def rows(self) -> Iterator[list[object]]:
        """Every row of the file from row 1, as read (a CSV file's read from the file again)."""
        if self.grid is not None:
            return iter(self.grid)
        assert self.text is not None and self.delimiter is not None
        return self.text.rows(self.delimiter)


def _filled(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip() == "")


def _find_header(path: Path, head: list[tuple[int, list[object]]], last: int,
                 given: list[object] | None, header_row: int | None, notes: list[str]) -> int:
    """The header's row number: ``header_row``, or the first row with a site_name cell.

    ``head``: the first rows with a value, numbered (the header is looked for among the first
    :data:`HEADER_SEARCH_ROWS`); ``last``: the number of the last row with a value; ``given``:
    the cells of row ``header_row`` (``None`` when it has no value).
    """
    if header_row is not None:
        if header_row < 1 or header_row > last:
            raise InputError([Problem("--header-row", header_row, f"is not a row of {path.name} "
                                      f"(its rows with content are 1 to {last})",
                                      "give the number of the row holding the input names")])
        if given is None:
            raise InputError([Problem("--header-row", header_row, f"is an empty row of "
                                      f"{path.name}", "give the number of the row holding the "
                                      "input names")])
        return header_row
    for n, cells in head[:HEADER_SEARCH_ROWS]:
        if any(_is_site_name(c) for c in cells):
            first = head[0][0]
            if n != first:
                notes.append(f"header found on row {n} (the first row with a site_name cell); "
                             f"rows {first}–{n - 1} above it are not read (--header-row N picks "
                             "another row)")
            return n
    return head[0][0]  # reported by _check_header: no site_name column


def _no_header(problem: Problem, row: int) -> Problem:
    if problem.name != "site_name":
        return problem
    return Problem(problem.name, problem.value, f"column is missing: no row among the first "
                   f"{HEADER_SEARCH_ROWS} has a site_name cell, so row {row} was read as the "
                   "header", problem.fix, problem.where)


def _with_sheet_hint(problem: Problem, elsewhere: dict[str, int]) -> Problem:
    if problem.name != "site_name":
        return problem
    hints = "; ".join(f"sheet {title!r} has one on row {row}: add --sheet {title!r}"
                      if " " in title else f"sheet {title!r} has one on row {row}: add "
                      f"--sheet {title}" for title, row in elsewhere.items())
    return Problem(problem.name, problem.value, problem.message + " on the sheet read",
                   hints, problem.where)


def _formula_problem(cell: _Formula, column: str, row: int) -> Problem:
    return Problem(column, f"={cell.text}", f"cell {cell.coord} holds a formula with no stored "
                   "value (the file was saved by a program that does not calculate), so the "
                   "value it shows is unknown",
                   "open the file in Excel or LibreOffice and save it, or export the sheet as "
                   "CSV UTF-8", f"row {row}")


def _check_cells(source: _Source, header_at: int, body: list[tuple[int, list[object]]],
                 columns: list[str], keep: list[bool], notes: list[str]) -> list[Problem]:
    """Formula cells without a value and merged ranges in the columns read (``body`` is
    updated in place: a merged range down one column gives each row its shown value)."""
    problems: list[Problem] = []
    rows = {n: cells for n, cells in body}
    for ref, r1, c1, r2, c2 in source.merges:
        if r2 < header_at:
            continue  # a title above the header
        span = range(c1, c2 + 1)
        if not any(c < len(keep) and keep[c] for c in span) and r1 > header_at:
            continue  # beside the inputs (a comment column)
        if r1 <= header_at:
            problems.append(Problem("merged cells", ref, "cover the header row, so a column has "
                                    "no name of its own", "unmerge them (Home > Merge & Center)",
                                    f"row {header_at}"))
        elif c2 > c1:
            problems.append(Problem("merged cells", ref, f"span columns {column_letter(c1 + 1)} to "
                                    f"{column_letter(c2 + 1)}: only the first holds a value, the "
                                    "others would read as empty and take the default",
                                    "unmerge them (Home > Merge & Center) and type each value",
                                    f"row {r1}"))
        else:
            first = rows.get(r1)
            value = first[c1] if first is not None and c1 < len(first) else None
            for n in range(r1 + 1, r2 + 1):
                if n in rows:
                    cells = rows[n]
                    cells.extend([None] * (c1 + 1 - len(cells)))
                    cells[c1] = value
            notes.append(f"merged cells {ref}: the value it shows ({_shown(value)}) is read "
                         f"for each of rows {r1}–{r2}, as the sheet shows it beside each")
    for n, cells in body:
        for index, cell in enumerate(cells):
            if isinstance(cell, _Formula):
                if index < len(keep) and keep[index]:
                    problems.append(_formula_problem(cell, columns[index], n))
                cells[index] = None
    return problems


def _rows_text(rows: list[int], most: int = 6) -> str:
    """``3, 5, 9`` or ``3, 5, 9, 11, 12, 14 and 20 more``."""
    text = ", ".join(str(n) for n in rows[:most])
    return text + (f" and {len(rows) - most} more" if len(rows) > most else "")


def _shown(value: object) -> str:
    if value is None:
        return "empty"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    return f"{value:,}" if isinstance(value, (int, float)) else repr(value)


def _read_source(path: Path, sheet: str | None, what: str = "sites file") -> _Source:
    """The cells of a sites file, or of a cohorts file (``what``: how messages name it)."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".xlsx", ".xlsm"):
        problem = regular_file_problem(path)
        if problem is not None:
            raise InputError([Problem(what, str(path), problem.reason, problem.fix)])
        raise InputError([Problem(what, str(path), "is neither .csv nor .xlsx",
                                  f"save the {what[:-5]} as CSV UTF-8 or as an Excel "
                                  "workbook (.xlsx)")])
    try:
        if suffix == ".csv":  # read row by row, later: only opened here
            with open_regular(path, MAX_XLSX_UNPACKED):
                data = b""
        else:
            data = read_regular(path, MAX_XLSX_UNPACKED)
    except NotARegularFile as exc:
        raise _unreadable(path, exc, what) from None
    if suffix == ".csv":
        if sheet is not None:
            raise InputError([Problem("--sheet", sheet, f"applies to .xlsx {what}s only",
                                      "leave --sheet out for a .csv file")])
        return _read_csv(path, what)
    return _read_xlsx(path, data, sheet, what)


def _unreadable(path: Path, exc: NotARegularFile, what: str) -> InputError:
    """What a sites or cohorts file that cannot be read is (missing, a folder, too large …)."""
    fix = exc.fix or f"give the {what} (.csv or .xlsx)"
    if exc.reason == "does not exist":
        fix = "check the path (a .csv or .xlsx file)"
    return InputError([Problem(what, str(path), exc.reason, fix)])


def sniff_delimiter(header_line: str) -> str:
    """The delimiter of a sites CSV from its header line: ``,``, ``;`` or a tab.

    Input names never contain any of them, so the most frequent one in the header is the
    delimiter (a one-column file has none and reads the same with any).
    """
    counts = {d: header_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


# A line and its end (\r\n, \r or \n, as a file opened with newline="" splits them), or the
# last line without one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, each with its end, one at a time: a ``StringIO`` of the text
    would hold four bytes a character beside it."""
    return (match.group() for match in _LINE.finditer(text))


def _header_line(lines: Iterator[str]) -> str:
    """The line the delimiter is read from: the first of the first :data:`HEADER_SEARCH_ROWS`
    with site_name, else the first with any text (read line by line, never split whole)."""
    first_filled = ""
    for number, line in enumerate(lines):
        if number < HEADER_SEARCH_ROWS and "site_name" in line.lower():
            return line
        if not first_filled and line.strip():
            first_filled = line
        if number >= HEADER_SEARCH_ROWS and first_filled:
            break
    return first_filled


def _read_csv(path: Path, what: str = "sites file") -> _Source:
    text = _CsvText(path, what)
    delimiter = sniff_delimiter(_header_line(text.lines()))
    return _Source(None, delimiter, text=text)


class _CsvText:
    """A CSV file's text, read from the file in pieces each time its lines are asked for: a
    file of 10,000 sites is some 1.3 MB, its rows as Python cells twenty times that.

    Each full reading is the same text, or the file is refused: a file changed between two
    readings would have been checked as one file and written as another.
    """

    #: Bytes read at a time.
    PIECE = 1 << 16

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what
        self._digest: bytes | None = None  # of the first full reading

    def lines(self) -> Iterator[str]:
        """The lines of the text, each with its end (``\\r\\n``, ``\\r`` or ``\\n``, as a file
        opened with ``newline=""`` splits them), one at a time."""
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        digest = hashlib.sha256()
        pending = ""
        try:
            for piece in read_pieces(self.path, MAX_XLSX_UNPACKED, first=self.PIECE,
                                     size=self.PIECE):
                digest.update(piece)
                pending += decoder.decode(piece)
                # complete lines only: a final "\r" may be the first half of "\r\n"
                end = len(pending) - pending.endswith("\r")
                cut = max(pending.rfind("\n", 0, end), pending.rfind("\r", 0, end)) + 1
                if cut:
                    yield from _lines(pending[:cut])
                    pending = pending[cut:]
            pending += decoder.decode(b"", final=True)
        except NotARegularFile as exc:
            raise _unreadable(self.path, exc, self.what) from None
        except UnicodeDecodeError:
            raise self._not_utf8() from None
        yield from _lines(pending)
        if self._digest is None:
            self._digest = digest.digest()
        elif digest.digest() != self._digest:
            raise self._changed()

    def rows(self, delimiter: str) -> Iterator[list[object]]:
        """The file's rows from row 1, each a list of its cells (text)."""
        try:
            yield from csv.reader(self.lines(), delimiter=delimiter)
        except csv.Error as exc:
            raise InputError([Problem(self.what, str(self.path),
                                      f"is not valid CSV ({exc})")]) from None

    def _not_utf8(self) -> InputError:
        """The file is no UTF-8 text: said with the byte at which the whole file's decoding
        stops (rare, so the file is read whole to find it)."""
        try:
            read_regular(self.path, MAX_XLSX_UNPACKED).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return InputError([Problem(
                self.what, str(self.path), f"is not UTF-8 text (byte {exc.start + 1})",
                "in Excel: File > Save As > CSV UTF-8 (comma delimited)")])
        except NotARegularFile as exc:
            return _unreadable(self.path, exc, self.what)
        return self._changed()  # it decoded whole this time: not the text read before

    def _changed(self) -> InputError:
        """The file is not the text an earlier reading gave."""
        return InputError([Problem(self.what, str(self.path), "changed while it was read",
                                   "read it once it is complete")])


def _read_xlsx(path: Path, data: bytes, sheet: str | None, what: str = "sites file"
               ) -> _Source:
    import openpyxl  # only needed for .xlsx sites files

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError):
        raise InputError([Problem(
            what, str(path), "is not a readable .xlsx workbook (damaged, encrypted or "
            "an old .xls renamed)", "open it in Excel and save it as .xlsx or CSV UTF-8")]
        ) from None
    if unpacked > MAX_XLSX_UNPACKED:
        raise InputError([Problem(
            what, str(path), f"unpacks to {unpacked / 2**20:,.0f} MB, more than a "
            f"{what} should ({MAX_XLSX_UNPACKED // 2**20} MB)",
            f"save the {what[:-5]} as CSV UTF-8")])
    from ..files.safe_xlsx import STRICT, STRICT_FIX, Limits, RefusedFile, check_sizes, is_strict

    try:  # the limits collect applies to workbooks from outside: a member's ratio, members
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_sizes(archive, Limits(max_uncompressed=MAX_XLSX_UNPACKED))
            strict = is_strict(archive)
    except RefusedFile as exc:
        raise InputError([Problem(what, str(path), exc.reason,
                                  f"save the {what[:-5]} as CSV UTF-8")]) from None
    if strict:  # openpyxl would read it as a workbook of no sheets
        raise InputError([Problem(what, str(path), f"is {STRICT}",
                                  f"{STRICT_FIX}, or save it as CSV UTF-8")])
    try:
        # Twice: the formulas (to find cells with none of their values stored) and the values;
        # openpyxl's warnings (a data validation it drops…) are about display, not values.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            formulas = openpyxl.load_workbook(io.BytesIO(data), data_only=False)
            values = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    except Exception as exc:  # openpyxl raises many types for a damaged package
        raise InputError([Problem(what, str(path),
                                  f"is not a readable .xlsx workbook ({type(exc).__name__})",
                                  "open it in Excel and save it again")]) from None
    notes: list[str] = []

    def listing() -> str:
        return ", ".join(s.title + (" (hidden)" if s.sheet_state != "visible" else "")
                         for s in formulas.worksheets)

    if sheet is None:
        ws = formulas.active
        named = [s for s in formulas.worksheets if _is_cohorts_sheet(s.title)]
        if what == "cohorts file" and named:
            ws = named[0]  # a cohorts workbook may hold other sheets too
        elif what == "sites file" and ws is not None and _is_cohorts_sheet(ws.title):
            others = [s for s in formulas.worksheets
                      if not _is_cohorts_sheet(s.title) and s.sheet_state == "visible"]
            if others:  # the sites are on another sheet; the cohorts come along (load_sites)
                notes.append(f"the workbook opens on its {ws.title!r} sheet; the sites are read "
                             f"from {others[0].title!r} (--sheet NAME reads another)")
                ws = others[0]
        if ws is None or not hasattr(ws, "iter_rows"):
            raise InputError([Problem(what, str(path), "opens on a chart, not a sheet "
                                      "of cells", "add --sheet NAME; the sheets are " + listing())])
        if ws.sheet_state != "visible":
            raise InputError([Problem(what, str(path), f"opens on the hidden sheet "
                                      f"{ws.title!r}, which is not read unless named",
                                      f"add --sheet {ws.title!r} to read it; the sheets are "
                                      + listing())])
        if len(formulas.worksheets) > 1 and not notes:
            others = [t for t in formulas.sheetnames if t != ws.title]
            notes.append(f"read sheet {ws.title!r}, the one the workbook opens on (other sheets: "
                         f"{', '.join(others)}; --sheet NAME reads another)")
    else:
        matches = [s for s in formulas.worksheets if s.title == sheet] or [
            s for s in formulas.worksheets if s.title.strip().casefold() == sheet.casefold()]
        if len(matches) != 1:
            raise InputError([Problem("--sheet", sheet, "is not a sheet of " + path.name,
                                      "the sheets are " + listing())])
        ws = matches[0]
        if ws.sheet_state != "visible":
            notes.append(f"sheet {ws.title!r} is hidden; read because --sheet names it")
    shown = values[ws.title]
    texts: dict[str, str] = {}  # a text repeated down the sheet ("own", "H200") is held once
    filled: dict[int, dict[int, object]] = {}
    for (r, c), cell in _held_cells(ws):
        if cell.data_type == "f":
            value = shown.cell(r, c).value
            if value is None:
                text = cell.value if isinstance(cell.value, str) else getattr(
                    cell.value, "text", "") or ""
                value = _Formula(cell.coordinate, str(text).lstrip("="))
        else:
            value = cell.value
        if value is not None:
            filled.setdefault(r, {})[c] = (texts.setdefault(value, value) if type(value) is str
                                           else value)
    grid = _grid(filled)
    if any(isinstance(c, _Formula) for cells in grid for c in cells):
        _empty_results(path, ws.title, grid)
    merges = [(str(r.coord), r.min_row, r.min_col - 1, r.max_row, r.max_col - 1)
              for r in ws.merged_cells.ranges]
    elsewhere: dict[str, int] = {}
    for other in formulas.worksheets:
        if other is ws or _is_cohorts_sheet(other.title):
            continue
        if not hasattr(other, "_cells"):
            continue   # a chart sheet
        rows = sorted({r for (r, _c), cell in _held_cells(other)
                       if r <= HEADER_SEARCH_ROWS and _is_site_name(cell.value)})
        if rows:
            elsewhere[other.title] = rows[0]
    hidden_rows = {n for n, dim in ws.row_dimensions.items() if dim.hidden}
    hidden_columns = {i - 1 for dim in ws.column_dimensions.values() if dim.hidden
                      and dim.min and dim.max for i in range(dim.min, dim.max + 1)}
    totals_rows: dict[int, str] = {}
    for table in ws.tables.values():
        count = int(getattr(table, "totalsRowCount", 0) or 0)
        if count and table.ref:
            from openpyxl.utils.cell import range_boundaries

            last = range_boundaries(table.ref)[3]
            totals_rows.update({n: table.name for n in range(last - count + 1, last + 1)})
    sheets = {s.title: s.sheet_state for s in formulas.worksheets}
    formulas.close()
    values.close()
    return _Source(grid, None, ws.title, merges, notes, elsewhere, hidden_rows, hidden_columns,
                   totals_rows, sheets)


def _held_cells(ws: object) -> list[tuple[tuple[int, int], object]]:
    """The cells a sheet's file holds, by (row, column): never the rectangle up to its last
    cell. One formatted empty cell at XFD1048576 makes a sheet's used range 17 billion cells,
    which ``iter_rows`` would create one by one (openpyxl keeps the cells it read in
    ``_cells``; it has no public way to list only those)."""
    return list(ws._cells.items())  # type: ignore[attr-defined]


def _grid(filled: dict[int, dict[int, object]]) -> list[list[object]]:
    """Rows 1 … the last with a value, each as long as its last value: an empty row is one
    shared empty list, so a value in row 1,048,576 costs 8 MB, not a row of cells each."""
    empty: list[object] = []
    grid: list[list[object]] = []
    for r in range(1, max(filled, default=0) + 1):
        cells = filled.get(r)
        if not cells:
            grid.append(empty)
            continue
        row: list[object] = [None] * max(cells)
        for c, value in cells.items():
            row[c - 1] = value
        grid.append(row)
    return grid


def _empty_results(path: Path, title: str, grid: list[list[object]]) -> None:
    """Tell a formula whose stored result is empty text (``=IF(…,"",…)``, saved by Excel as an
    empty value) from one with no stored value at all: openpyxl reads both as ``None``."""
    from ..files.safe_xlsx import RefusedFile, open_xlsx

    try:
        with open_xlsx(path) as content:
            stored = content.cells(title).values
    except (RefusedFile, OSError):
        return
    for cells in grid:
        for index, cell in enumerate(cells):
            if isinstance(cell, _Formula) and stored.get(cell.coord) == "":
                cells[index] = None   # shown empty: an empty cell


# -- numbers written as text: the decimal convention of the file ---------------------------------
_NUMERIC_KINDS = ("number", "integer", "fraction")


def _canonical(number: number_text.NumberShape, decimal: str) -> str:
    """A number typed as text rewritten so that it reads one way only (``40.000`` with decimal
    points → ``40.0``): what the catalogue gets once the file's convention is known."""
    value = float(number_text.as_read(number, decimal).rstrip("%"))
    return repr(value) + number.percent


def _read_numbers(body: list[tuple[int, list[object]]], columns: list[str], keep: list[bool],
                  delimiter: str | None, specs: Mapping[str, Input] = BY_NAME,
                  what: str = "sites file") -> tuple[list[Problem], list[str], str | None]:
    """Decide the file's decimal separator once and rewrite every number typed as text by it
    (:class:`_Numbers` over rows held together).

    ``body`` is updated in place; returns the problems (without ``where`` for a file-wide
    one), the notes saying which convention was used and why, and the decimal separator of the
    file (``None`` when nothing decides: a workbook's numbers are numbers).
    """
    numbers = _Numbers(columns, keep, delimiter, specs, what)
    numbers.decide(body)
    problems = list(numbers.problems)
    for n, cells in body:
        problems += numbers.read(n, cells)
    return problems, numbers.notes, numbers.decimal


class _Numbers:
    """The decimal convention of a file's numbers typed as text: decided once over every row
    (:meth:`decide`), then applied to each row (:meth:`read`), so the rows need not be held.

    A number with a separator that only one convention allows (``0,995``, ``1.234,5``,
    ``0.65``, ``1,234.5``) decides; a file with both kinds is refused. Without such a number
    the delimiter decides: a semicolon file is what Excel writes in a decimal-comma locale, a
    comma file one of a decimal-point locale; a tab-separated file or a workbook has no rule,
    and a number that reads two ways there (``1,100``, ``40.000``) is refused naming both.
    """

    def __init__(self, columns: list[str], keep: list[bool], delimiter: str | None,
                 specs: Mapping[str, Input] = BY_NAME, what: str = "sites file"):
        self.columns, self.delimiter, self.what = columns, delimiter, what
        self._numeric = [i for i, c in enumerate(columns) if i < len(keep) and keep[i]
                         and specs[c.split(".", 1)[0]].kind in _NUMERIC_KINDS]
        #: The file-wide problems (no ``where``: the file mixes conventions).
        self.problems: list[Problem] = []
        #: The sentences saying which convention was used and why.
        self.notes: list[str] = []
        #: The decimal separator (``None`` when nothing decides: a workbook's numbers are
        #: numbers, or the file is refused).
        self.decimal: str | None = None
        # how each row is read: "as typed", "mixed" (every number refused), "ambiguous" (the
        # numbers that read two ways refused) or "rewritten" (by the decimal separator)
        self._mode = "as typed"
        self._ambiguous: dict[int, list[Problem]] = {}

    def _typed(self, n: int, cells: list[object]
               ) -> Iterator[tuple[int, number_text.NumberShape]]:
        """Each number of a row typed as text with a separator: its column and shape."""
        for i in self._numeric:
            if i < len(cells) and isinstance(cells[i], str):
                shape = number_text.shape(cells[i])  # type: ignore[arg-type]
                if shape is not None and (shape.shape != "plain" or shape.exponent
                                          or not shape.core.isdigit()):
                    yield i, shape

    def _cite(self, item: tuple[int, int, str, number_text.NumberShape]) -> str:
        return f"row {item[0]} {self.columns[item[1]]}={item[2].strip()}"

    def decide(self, body: Iterable[tuple[int, list[object]]]) -> None:
        """Read every row's numbers once to decide the convention: only the first number of
        each convention is kept, the numbers that read two ways only while no convention has
        shown, and the first two each convention would read otherwise than typed (a 10,000-row
        file holds some 100,000 numbers)."""
        first: dict[str, tuple[int, int, str, number_text.NumberShape]] = {}
        found: list[tuple[int, int, str, number_text.NumberShape]] = []
        changed: dict[str, list[str]] = {",": [], ".": []}
        for n, cells in body:
            for i, shape in self._typed(n, cells):
                item = (n, i, str(cells[i]), shape)
                if shape.shape in ("comma", "point"):
                    first.setdefault(shape.shape, item)
                    found.clear()
                elif not first and shape.shape in ("dot?", "comma?"):
                    found.append(item)
                if shape.shape == "other":
                    continue   # the catalogue says why it is no number
                for decimal, examples in changed.items():
                    read = number_text.as_read(shape, decimal)
                    if len(examples) < 2 and read.replace("%", "") != item[2].strip().replace(
                            "%", ""):
                        examples.append(f"{self._cite(item)} = {read}")
        if not first and not found:
            self.decimal = {";": ","}.get(self.delimiter or "", ".") if self.delimiter else None
            return
        commas = [first["comma"]] if "comma" in first else []
        points = [first["point"]] if "point" in first else []
        if commas and points:
            self._mode = "mixed"
            self.problems = [Problem(self.what, "", f"mixes decimal commas "
                                     f"({self._cite(commas[0])}) and decimal points "
                                     f"({self._cite(points[0])}), so its numbers cannot be read "
                                     "safely", _MIXED_FIX)]
            return
        note = ""
        if commas:
            decimal = ","
            note = (f"numbers read with decimal commas, as a German or French Excel writes them "
                    f"({self._cite(commas[0])} can only be a decimal comma)")
        elif points:
            decimal = "."
            if self.delimiter == ";":
                note = (f"numbers read with decimal points ({self._cite(points[0])} can only "
                        "be a decimal point)")
        elif self.delimiter == ";":
            decimal = ","
            note = ("numbers read with decimal commas and dots between thousands, as a German "
                    "or French Excel writes a semicolon-separated file")
        elif self.delimiter == ",":
            decimal = "."
        else:
            self._mode = "ambiguous"
            for n, i, text, number in found:
                as_thousands, as_decimal = two_readings(text) or ("", "")
                separator = "." if "." in number.core else ","
                self._ambiguous.setdefault(n, []).append(Problem(
                    self.columns[i], text, f"is ambiguous: {as_thousands} if the "
                    f"{separator!r} separates thousands, {as_decimal} if it is the decimal "
                    "separator, and no other number of the file tells which",
                    f"type {as_thousands} or {as_decimal} without a thousands separator",
                    f"row {n}"))
            return
        self._mode, self.decimal = "rewritten", decimal
        if note and changed[decimal]:
            note += "; e.g. " + ", ".join(changed[decimal])
        self.notes = [note] if note else []

    def read(self, n: int, cells: list[object]) -> list[Problem]:
        """Row ``n``'s numbers typed as text read by the file's convention (``cells`` updated
        in place: each rewritten so that it reads one way only); its problems."""
        if self._mode == "as typed":
            return []
        if self._mode == "ambiguous":
            return self._ambiguous.get(n, [])
        if self._mode == "mixed":  # and no such number is read by a guess
            return [Problem(self.columns[i], cells[i], "cannot be read: the file mixes decimal "
                            "commas and decimal points", _MIXED_FIX, f"row {n}")
                    for i, _shape in self._typed(n, cells)]
        for i, number in list(self._typed(n, cells)):
            if number.shape != "other":  # else the catalogue says why it is no number
                cells[i] = _canonical(number, self.decimal)  # type: ignore[arg-type]
        return []


_MIXED_FIX = ("write every number with the same decimal separator (save the file again from "
              "one program)")


# -- checking ------------------------------------------------------------------------------------
def normalise_column(header: object) -> str:
    """A header cell as a column name: ``" GPUs "`` → ``gpus``, ``tef_target.optimised`` kept."""
    if header is None:
        return ""
    text = str(header).strip()
    name, dot, suffix = text.partition(".")
    if name.lower() in BY_NAME:
        name = name.lower()
    return f"{name}{dot}{suffix}"
