"""Sites files: one row per token-factory site, checked before anything is generated.

An operator with forty sites, or an investor screening two thousand candidates, keeps one row per
site in a spreadsheet or a CSV file. The header row holds input names of the catalogue
(methodology section 6): ``site_name`` is required, every other column is optional and an absent
column or an empty cell takes the catalogue default. A per-scenario input is one column for all
three scenarios (``tef_target``) or one column per scenario (``tef_target.Optimised``); both may
appear, the scenario column winning for its scenario.

:func:`load_sites` reads a ``.csv`` (UTF-8, with or without a byte-order mark; comma-, semicolon-
or tab-separated) or an ``.xlsx`` (the sheet it opens on, or a named one) and checks every row
against the catalogue, collecting every problem with the row number the user sees so that a file
with twenty mistakes is fixed in one pass. It reads what the file shows or says why it cannot:
the header is the first row with a ``site_name`` cell (or a given row); a formula cell without a
stored value, a merge across columns and a file mixing decimal conventions are refused; a merge
down one column gives each row its shown value; numbers typed as text are read with the file's
one decimal convention (:func:`_read_numbers`). What it decided is said in
:attr:`SitesFile.notes`. Only regular files are read
(:func:`tokenfactory_xl.files.disk.open_regular`). It also gives each site the file name its
workbook will have (:func:`safe_file_stem`) and reports two sites that would share one.
:func:`read_sites` is the strict form: the rows, or an
:class:`~tokenfactory_xl.core.errors.InputError` listing every problem.
"""

from __future__ import annotations

import csv
import io
import os
import re
import warnings
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import names, number_text
from ..core.catalogue import BY_NAME, COHORT_BY_NAME, COHORT_REQUIRED, Input, closest_name
from ..core.errors import InputError, Problem
from ..core.number_text import two_readings
from ..files.disk import NotARegularFile, read_regular, regular_file_problem
from ..tfom.inputs import FrozenMapping, SiteInputs, make_inputs, split_key

#: What a row of the body becomes once checked: its cells are let go.
_CHECKED: tuple[int, list[object]] = (0, [])

#: The sheet of a sites workbook holding its further cohorts (its title compared ignoring case).
COHORTS_SHEET = "cohorts"

#: The suffixes :func:`load_sites` reads.
SUFFIXES: tuple[str, ...] = (".csv", ".xlsx", ".xlsm")

#: File stems a site's workbook may not take: Windows device names, and the batch's own output.
RESERVED_STEMS: frozenset[str] = frozenset(
    {"con", "prn", "aux", "nul", "portfolio"}
    | {f"{dev}{n}" for dev in ("com", "lpt") for n in (*"123456789", "¹", "²", "³")}
)

#: Longest file stem [bytes of UTF-8]: far below the 255-byte limit of common file systems,
#: leaving room for the suffix and the temporary name written first.
MAX_STEM_BYTES = 120

# An .xlsx sites file is a zip; refuse one that unpacks to more than this [bytes] (a zip bomb
# of 0.6 MB can hold gigabytes of XML, and openpyxl has no size guard); no sites or cohorts
# file of either kind read is larger (100,000 sites are some 50 MB of CSV).
MAX_XLSX_UNPACKED = 200 * 2**20

# Characters Windows, macOS or Linux refuse in a file name, and every character a name may not
# hold (control characters, bidirectional controls, invisible characters: :mod:`names`).
_UNSAFE_IN_NAME = re.compile(rf'[<>:"/\\|?*]|{names.HIDDEN.pattern}')
#: Characters a name or a label may not hold (:data:`tokenfactory_xl.core.names.HIDDEN`): a site
#: name becomes a file name, one line of a portfolio and a line of a report.
CONTROL_OR_BIDI = names.HIDDEN
#: A value echoed in a message or a report, its hidden characters escaped (``\u202e``).
visible = names.shown


@dataclass(frozen=True)
class SiteRow:
    """One row of a sites file.

    Attributes
    ----------
    row : the row number as Excel or a text editor shows it (the header is row 1).
    values : the cells of the row under their (normalised) column names, as read.
    inputs : the checked inputs, or ``None`` when the row has problems.
    problems : what is wrong with the row, each naming row, column, value and what is allowed.
    file_stem : the file name of the site's workbook, without ``.xlsx`` (``""`` if unknown).
    """

    row: int
    values: Mapping[str, object]
    inputs: SiteInputs | None
    problems: tuple[Problem, ...] = ()
    file_stem: str = ""

    @property
    def ok(self) -> bool:
        """Whether the row can be generated."""
        return self.inputs is not None and not self.problems

    @property
    def site_name(self) -> str:
        """The site name as typed (``""`` when the cell is empty)."""
        value = self.values.get("site_name")
        return "" if value is None else str(value).strip()


@dataclass(frozen=True)
class SitesFile:
    """A read and checked sites file: its rows and the problems of the file as a whole."""

    path: Path
    columns: tuple[str, ...]
    rows: tuple[SiteRow, ...]
    file_problems: tuple[Problem, ...] = field(default=())
    #: What was read and how, where a reader could not tell: the sheet, the header row, the
    #: decimal separator, merged cells (one sentence each).
    notes: tuple[str, ...] = field(default=())
    header_row: int = 1
    sheet: str | None = None
    #: The decimal separator of a CSV file's numbers (``","`` or ``"."``), as read; ``None``
    #: for a workbook, or a file with nothing to decide it.
    decimal: str | None = None
    #: The cohorts table read with the sites (``--cohorts FILE`` or a ``cohorts`` sheet).
    cohorts: CohortsTable | None = None

    @property
    def problems(self) -> tuple[Problem, ...]:
        """Every problem: the file's own first, then each row's in row order."""
        return self.file_problems + tuple(p for r in self.rows for p in r.problems)

    @property
    def valid_rows(self) -> tuple[SiteRow, ...]:
        """The rows that can be generated."""
        return tuple(r for r in self.rows if r.ok)

    @property
    def invalid_rows(self) -> tuple[SiteRow, ...]:
        """The rows that cannot."""
        return tuple(r for r in self.rows if not r.ok)


# -- file names ----------------------------------------------------------------------------------
def safe_file_stem(site_name: str) -> str:
    """A file name (without suffix) for a site's workbook that every common file system accepts.

    Path separators, characters Windows refuses (``<>:"/\\|?*``) and control characters become
    ``_``; runs of white space become one space; leading dots and spaces and trailing dots and
    spaces go (Windows drops them silently); a leading ``~`` becomes ``_`` (``~$Budget`` is how
    Excel names the lock file of an open workbook, which other tools pass over); Windows device
    names (``CON``, ``NUL``, ``COM1``…)
    and ``portfolio`` (the batch's own output) get a ``_`` after that part of the name before
    the first dot (``nul.txt`` → ``nul_.txt``); the result is cut to
    :data:`MAX_STEM_BYTES` bytes of UTF-8 at a character boundary. Never empty.
    """
    text = names.normal(str(site_name))
    text = _UNSAFE_IN_NAME.sub("_", text)
    text = re.sub(r"\s+", " ", text).strip(" .")
    if text.startswith("~"):  # "~$Budget.xlsx" is what Excel names its lock file of Budget.xlsx
        text = "_" + text[1:]
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_STEM_BYTES:
        text = encoded[:MAX_STEM_BYTES].decode("utf-8", errors="ignore").rstrip(" .")
    if not text:
        text = "site"
    # Windows reserves a device name with any extension too ("nul.backup" is the device), so
    # the "_" goes after the part before the first dot.
    first, dot, rest = text.partition(".")
    if first.rstrip(" ").lower() in RESERVED_STEMS:
        text = f"{first.rstrip(' ')}_{dot}{rest}"
    return text


# -- reading -------------------------------------------------------------------------------------
#: Rows searched for the header (the first row holding a ``site_name`` cell) when not given.
HEADER_SEARCH_ROWS = 50


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
    """The cells of a sites file as read, before any checking."""

    grid: list[list[object]]
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


def load_sites(path: str | os.PathLike, sheet: str | None = None,
               header_row: int | None = None,
               cohorts: str | os.PathLike | None = None) -> SitesFile:
    """Read and check a sites file and the sites' further cohorts; problems are collected, not
    raised.

    Parameters
    ----------
    path : a ``.csv`` or ``.xlsx`` file.
    sheet : the worksheet of an ``.xlsx`` file (default: the sheet the workbook opens on).
    header_row : the row holding the input names, as numbered in Excel (default: the first
        row with a ``site_name`` cell among the first :data:`HEADER_SEARCH_ROWS`).
    cohorts : a cohorts table (:func:`load_cohorts`) giving the sites' cohorts after their own
        GPUs. Without it, an ``.xlsx`` sites file's sheet named ``cohorts`` is read when it has
        one.

    Raises
    ------
    InputError
        only when a file cannot be read at all (missing, not a regular file, wrong type, not
        UTF-8, no such sheet, a hidden sheet not named, no such header row).
    """
    path = Path(path)
    source = _read_source(path, sheet)
    grid = source.grid
    numbered = [(n, cells) for n, cells in enumerate(grid, start=1)
                if any(_filled(c) for c in cells)]
    if not numbered:
        raise InputError([Problem("sites file", str(path), "is empty",
                                  "the first row names the inputs (site_name, gpus, …), each "
                                  "further row is one site")])
    notes = list(source.notes)
    header_at = _find_header(path, numbered, header_row, notes)
    header = list(grid[header_at - 1])
    body = [(n, list(cells)) for n, cells in numbered if n > header_at]
    del grid, numbered
    source.grid = []  # the body holds the rows read: the grid's copy goes
    totals = [n for n, _ in body if n in source.totals_rows]
    if totals:
        body = [(n, cells) for n, cells in body if n not in source.totals_rows]
        notes.append(f"row{'s' if len(totals) > 1 else ''} {_rows_text(totals)}: the totals row "
                     f"of the Excel table {source.totals_rows[totals[0]]!r}, not read as a site")
    file_problems: list[Problem] = []
    for index, cell in enumerate(header):
        if isinstance(cell, _Formula):
            file_problems.append(_formula_problem(cell, "header", header_at))
            header[index] = None
    columns, header_problems, keep = _check_header(header, header_at, body)
    if "site_name" not in columns and header_row is None:
        header_problems = [_no_header(p, header_at) for p in header_problems]
    if "site_name" not in columns and source.elsewhere:
        header_problems = [_with_sheet_hint(p, source.elsewhere) for p in header_problems]
    file_problems += header_problems
    file_problems += _check_cells(source, header_at, body, columns, keep, notes)
    number_problems, number_notes, decimal = _read_numbers(body, columns, keep,
                                                           source.delimiter)
    file_problems += [p for p in number_problems if not p.where]  # the file mixes conventions
    number_problems = [p for p in number_problems if p.where]
    notes += number_notes
    hidden = [n for n, _ in body if n in source.hidden_rows]
    if hidden:
        notes.append(f"row{'s' if len(hidden) > 1 else ''} {_rows_text(hidden)} hidden (or "
                     "filtered out) in the sheet, read like the others")
    hidden_columns = [columns[i] for i in sorted(source.hidden_columns)
                      if i < len(keep) and keep[i]]
    if hidden_columns:
        notes.append(f"hidden column{'s' if len(hidden_columns) > 1 else ''} read: "
                     + ", ".join(hidden_columns))
    if not body:
        file_problems.append(Problem(
            "sites file", str(path), "has a header but no site rows",
            "add one row per site under the header"))
    by_row: dict[str, list[Problem]] = {}
    for problem in number_problems:
        by_row.setdefault(problem.where, []).append(problem)
    table = _cohorts_for(path, source, cohorts, notes, file_problems)
    name_at = columns.index("site_name") if "site_name" in columns else None
    if table is not None and name_at is not None:
        names = [cells[name_at] for _, cells in body
                 if name_at < len(cells) and _filled(cells[name_at])]
        file_problems += _unmatched_cohorts(table, names, path.name)
    rows = []
    memo: dict[object, dict[object, object]] = {}  # each input value held once (sharing)
    for index, (n, cells) in enumerate(body):
        body[index] = _CHECKED  # each row's cells go as it is checked (its values are kept)
        rows.append(_check_row(n, cells, columns, keep, by_row.get(f"row {n}", []),
                               _site_cohorts(table, cells[name_at] if name_at is not None
                                             and name_at < len(cells) else None), memo))
    rows = _mark_duplicates(rows)
    return SitesFile(path, tuple(c for c, k in zip(columns, keep, strict=True) if k),
                     tuple(rows), tuple(file_problems), tuple(notes), header_at, source.sheet,
                     decimal, table)


def _cohorts_for(path: Path, source: _Source, cohorts: str | os.PathLike | None,
                 notes: list[str], problems: list[Problem]) -> CohortsTable | None:
    """The sites' cohorts table: ``--cohorts FILE``, else the workbook's cohorts sheet."""
    sheets = [t for t in source.sheets if _is_cohorts_sheet(t) and t != source.sheet]
    table = None
    if cohorts is not None:
        table = load_cohorts(cohorts)
        if sheets:
            notes.append(f"cohorts read from {table.name}, not from the {sheets[0]!r} sheet of "
                         f"{path.name}")
    elif sheets:
        if source.sheets[sheets[0]] != "visible":
            problems.append(Problem(
                "sheet", sheets[0], f"of {path.name} is hidden, so its cohorts would be added "
                "unseen", "unhide the sheet (right-click a sheet tab > Unhide) to use its "
                "cohorts, or delete it"))
            return None
        table = load_cohorts(path, sheets[0])
    if table is not None:
        notes += table.notes
        problems += table.problems
    return table


def read_sites(path: str | os.PathLike, sheet: str | None = None,
               header_row: int | None = None) -> list[SiteRow]:
    """The rows of a sites file, every one valid; else :class:`InputError` with every problem."""
    sites = load_sites(path, sheet, header_row)
    if sites.problems:
        raise InputError(sites.problems)
    return list(sites.rows)


def _filled(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip() == "")


def _is_site_name(value: object) -> bool:
    return isinstance(value, str) and normalise_column(value) == "site_name"


def _find_header(path: Path, numbered: list[tuple[int, list[object]]],
                 header_row: int | None, notes: list[str]) -> int:
    """The header's row number: ``header_row``, or the first row with a site_name cell."""
    if header_row is not None:
        last = numbered[-1][0]
        if header_row < 1 or header_row > last:
            raise InputError([Problem("--header-row", header_row, f"is not a row of {path.name} "
                                      f"(its rows with content are 1 to {last})",
                                      "give the number of the row holding the input names")])
        if header_row not in {n for n, _ in numbered}:
            raise InputError([Problem("--header-row", header_row, f"is an empty row of "
                                      f"{path.name}", "give the number of the row holding the "
                                      "input names")])
        return header_row
    for n, cells in numbered[:HEADER_SEARCH_ROWS]:
        if any(_is_site_name(c) for c in cells):
            first = numbered[0][0]
            if n != first:
                notes.append(f"header found on row {n} (the first row with a site_name cell); "
                             f"rows {first}–{n - 1} above it are not read (--header-row N picks "
                             "another row)")
            return n
    return numbered[0][0]  # reported by _check_header: no site_name column


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
            problems.append(Problem("merged cells", ref, f"span columns {_column_letter(c1)} to "
                                    f"{_column_letter(c2)}: only the first holds a value, the "
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
        data = read_regular(path, MAX_XLSX_UNPACKED)
    except NotARegularFile as exc:
        fix = exc.fix or f"give the {what} (.csv or .xlsx)"
        if exc.reason == "does not exist":
            fix = "check the path (a .csv or .xlsx file)"
        raise InputError([Problem(what, str(path), exc.reason, fix)]) from None
    if suffix == ".csv":
        if sheet is not None:
            raise InputError([Problem("--sheet", sheet, f"applies to .xlsx {what}s only",
                                      "leave --sheet out for a .csv file")])
        return _read_csv(path, data, what)
    return _read_xlsx(path, data, sheet, what)


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


def _header_line(text: str) -> str:
    """The line the delimiter is read from: the first of the first :data:`HEADER_SEARCH_ROWS`
    with site_name, else the first with any text (read line by line, never split whole)."""
    first_filled = ""
    for number, line in enumerate(_lines(text)):
        if number < HEADER_SEARCH_ROWS and "site_name" in line.lower():
            return line
        if not first_filled and line.strip():
            first_filled = line
        if number >= HEADER_SEARCH_ROWS and first_filled:
            break
    return first_filled


def _read_csv(path: Path, data: bytes, what: str = "sites file") -> _Source:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(
            what, str(path), f"is not UTF-8 text (byte {exc.start + 1})",
            "in Excel: File > Save As > CSV UTF-8 (comma delimited)")]) from None
    delimiter = sniff_delimiter(_header_line(text))
    texts: dict[str, str] = {}  # a text repeated down the file ("own", "H200") is held once
    try:
        grid: list[list[object]] = [
            [texts.setdefault(cell, cell) for cell in r]
            for r in csv.reader(_lines(text), delimiter=delimiter)]
    except csv.Error as exc:
        raise InputError([Problem(what, str(path), f"is not valid CSV ({exc})")]) from None
    return _Source(grid, delimiter)


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
    """Decide the file's decimal separator once and rewrite every number typed as text by it.

    A number with a separator that only one convention allows (``0,995``, ``1.234,5``,
    ``0.65``, ``1,234.5``) decides; a file with both kinds is refused. Without such a number
    the delimiter decides: a semicolon file is what Excel writes in a decimal-comma locale, a
    comma file one of a decimal-point locale; a tab-separated file or a workbook has no rule,
    and a number that reads two ways there (``1,100``, ``40.000``) is refused naming both.
    ``body`` is updated in place; returns the problems (without ``where`` for a file-wide
    one), the notes saying which convention was used and why, and the decimal separator of the
    file (``None`` when nothing decides: a workbook's numbers are numbers).
    """
    numeric = [i for i, c in enumerate(columns) if i < len(keep) and keep[i]
               and specs[c.split(".", 1)[0]].kind in _NUMERIC_KINDS]

    def typed() -> Iterator[tuple[int, list[object], int, number_text.NumberShape]]:
        """Each number typed as text with a separator: its row, cells, column and shape."""
        for n, cells in body:
            for i in numeric:
                if i < len(cells) and isinstance(cells[i], str):
                    shape = number_text.shape(cells[i])  # type: ignore[arg-type]
                    if shape is not None and (shape.shape != "plain" or shape.exponent
                                              or not shape.core.isdigit()):
                        yield n, cells, i, shape

    # First pass: what decides. Only the first number of each convention is kept, and the
    # numbers that read two ways only while no convention has shown (a 10,000-row file holds
    # some 100,000 numbers; they are read again below rather than held).
    first: dict[str, tuple[int, int, str, number_text.NumberShape]] = {}
    found: list[tuple[int, int, str, number_text.NumberShape]] = []
    for n, cells, i, shape in typed():
        item = (n, i, str(cells[i]), shape)
        if shape.shape in ("comma", "point"):
            first.setdefault(shape.shape, item)
            found.clear()
        elif not first and shape.shape in ("dot?", "comma?"):
            found.append(item)
    if not first and not found:
        return [], [], {";": ","}.get(delimiter or "", ".") if delimiter else None

    def cite(item: tuple[int, int, str, number_text.NumberShape]) -> str:
        return f"row {item[0]} {columns[item[1]]}={item[2].strip()}"

    commas = [first["comma"]] if "comma" in first else []
    points = [first["point"]] if "point" in first else []
    if commas and points:
        fix = "write every number with the same decimal separator (save the file again from " \
              "one program)"
        mixed = [Problem(what, "", f"mixes decimal commas ({cite(commas[0])}) and decimal "
                         f"points ({cite(points[0])}), so its numbers cannot be read safely",
                         fix)]
        for n, cells, i, _shape in typed():  # and no such number is read by a guess
            mixed.append(Problem(columns[i], cells[i], "cannot be read: the file mixes decimal "
                                 "commas and decimal points", fix, f"row {n}"))
        return mixed, [], None
    note = ""
    if commas:
        decimal = ","
        note = (f"numbers read with decimal commas, as a German or French Excel writes them "
                f"({cite(commas[0])} can only be a decimal comma)")
    elif points:
        decimal = "."
        if delimiter == ";":
            note = (f"numbers read with decimal points ({cite(points[0])} can only be a "
                    "decimal point)")
    elif delimiter == ";":
        decimal = ","
        note = ("numbers read with decimal commas and dots between thousands, as a German or "
                "French Excel writes a semicolon-separated file")
    elif delimiter == ",":
        decimal = "."
    else:
        problems = []
        for n, i, text, number in found:
            as_thousands, as_decimal = two_readings(text) or ("", "")
            separator = "." if "." in number.core else ","
            problems.append(Problem(
                columns[i], text, f"is ambiguous: {as_thousands} if the {separator!r} separates "
                f"thousands, {as_decimal} if it is the decimal separator, and no other number "
                "of the file tells which", f"type {as_thousands} or {as_decimal} without a "
                "thousands separator", f"row {n}"))
        return problems, [], None
    changed = []
    for n, cells, i, number in typed():  # second pass: rewritten
        if number.shape == "other":
            continue   # the catalogue says why it is no number
        text, read = str(cells[i]), number_text.as_read(number, decimal)
        cells[i] = _canonical(number, decimal)
        if len(changed) < 2 and read.replace("%", "") != text.strip().replace("%", ""):
            changed.append(f"{cite((n, i, text, number))} = {read}")
    if note and changed:
        note += "; e.g. " + ", ".join(changed[:2])
    return [], [note] if note else [], decimal


# -- checking ------------------------------------------------------------------------------------
def _column_letter(index: int) -> str:
    """0 → A, 25 → Z, 26 → AA: how a spreadsheet names a column."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def normalise_column(header: object) -> str:
    """A header cell as a column name: ``" GPUs "`` → ``gpus``, ``tef_target.optimised`` kept."""
    if header is None:
        return ""
    text = str(header).strip()
    name, dot, suffix = text.partition(".")
    if name.lower() in BY_NAME:
        name = name.lower()
    return f"{name}{dot}{suffix}"


def _check_header(header: list[object], header_row: int, body: list[tuple[int, list[object]]]
                  ) -> tuple[list[str], list[Problem], list[bool]]:
    """Column names, the header's problems, and which columns hold inputs."""
    where = f"row {header_row}"
    columns = [normalise_column(h) for h in header]
    width = max([len(columns)] + [len(cells) for _, cells in body])
    columns += [""] * (width - len(columns))
    problems: list[Problem] = []
    keep = [False] * width
    seen: dict[str, str] = {}
    for index, column in enumerate(columns):
        letter = _column_letter(index)
        here = f"column {letter}"
        if not column:
            if any(index < len(cells) and _filled(cells[index]) for _, cells in body):
                problems.append(Problem(
                    here, "", "has values but no input name in the header",
                    "write the input name in the header row, or delete the column", where))
            continue
        try:
            name, scenario = split_key(column)
        except Exception as exc:  # BadValue from a bad scenario suffix
            problems.append(Problem(here, column, getattr(exc, "message", str(exc)),
                                    getattr(exc, "fix", ""), where))
            continue
        if name not in BY_NAME:
            hint = closest_name(name)
            fix = (f"did you mean {hint}?" if hint
                   else "`tokenfactory-xl inputs` lists the names")
            problems.append(Problem(here, column, "is not a known input", fix, where))
            continue
        canonical = name if scenario is None else f"{name}.{scenario}"
        if canonical in seen:
            problems.append(Problem(here, column,
                                    f"appears twice (also column {seen[canonical]})",
                                    "keep one of the two columns", where))
            continue
        seen[canonical] = letter
        columns[index] = canonical
        keep[index] = True
    if "site_name" not in seen:
        problems.append(Problem("site_name", "", "column is missing; every site needs a name",
                                "add a site_name column (it also names the workbook files)",
                                where))
    return columns, problems, keep


def _check_row(number: int, cells: list[object], columns: list[str], keep: list[bool],
               found: Sequence[Problem] = (),
               cohorts: tuple[list[dict[str, object]], list[str], list[Problem]] = ([], [], []),
               memo: dict[object, dict[object, object]] | None = None) -> SiteRow:
    where = f"row {number}"
    values: dict[str, object] = {}
    for index, column in enumerate(columns):
        if keep[index]:
            values[column] = cells[index] if index < len(cells) else None
    problems: list[Problem] = list(found)
    # Line breaks and tabs pass the catalogue's check but have no place in a name or a label.
    for column, value in values.items():
        spec = BY_NAME[column.split(".", 1)[0]]
        if (spec.kind in ("text", "choice", "currency") and isinstance(value, str)
                and CONTROL_OR_BIDI.search(value)):
            problems.append(Problem(column, value, names.problem(value),
                                    "type it again on one line without them", where))
    # A cell already reported is left out of make_inputs so that it is not reported twice.
    reported = {p.name for p in problems}
    checked = {k: v for k, v in values.items() if k not in reported}
    name = values.get("site_name")
    if "site_name" in values and not _filled(name):
        problems.append(Problem("site_name", "" if name is None else name, "is empty; every site "
                                "needs a name", "type the site's name (it names its workbook)",
                                where))
    cohort_values, cohort_where, cohort_problems = cohorts
    problems += cohort_problems
    if cohort_values:
        reported = {(p.where, p.name) for p in cohort_problems}
        checked["cohorts"] = [{k: v for k, v in row.items() if (at, k) not in reported}
                              for row, at in zip(cohort_values, cohort_where, strict=True)]
    inputs: SiteInputs | None = None
    try:
        inputs = make_inputs(checked, bare="all", where=where, cohort_where=cohort_where)
    except InputError as exc:
        # A bare per-scenario column sets three values: report its problem once, not thrice.
        problems += [p for p in dict.fromkeys(exc.problems) if p not in problems]
    stem = safe_file_stem(str(name).strip()) if _filled(name) else ""
    if problems:
        inputs = None
    if inputs is not None and memo is not None:  # the file's rows hold each value once
        inputs = inputs.sharing(memo)  # type: ignore[assignment]
    # the cells as a frozen mapping: the column names are held once for every row of the file
    return SiteRow(number, FrozenMapping(values), inputs, tuple(problems), stem)


def _mark_duplicates(rows: list[SiteRow]) -> list[SiteRow]:
    """Report a site whose name, or whose workbook's file name, an earlier row already has.

    Names are compared by :func:`tokenfactory_xl.core.names.key`: composed (NFC) and without regard
    to case (``Alpha`` and ``ALPHA`` share a file on Windows and macOS), and after the file-name
    mapping (``A/B`` and ``A_B`` both become ``A_B.xlsx``).
    """
    first_by_name: dict[str, SiteRow] = {}
    first_by_stem: dict[str, SiteRow] = {}
    out: list[SiteRow] = []
    for row in rows:
        name, stem = row.site_name, row.file_stem
        if not name:
            out.append(row)
            continue
        key_name, key_stem = names.key(name), names.key(stem)
        problem = None
        if key_name in first_by_name:
            earlier = first_by_name[key_name]
            problem = Problem("site_name", name, f"is the same site name as row {earlier.row}'s "
                              f"({earlier.site_name!r}; names are compared ignoring case, hidden "
                              "characters and how accents are encoded)",
                              "give every site its own name", f"row {row.row}")
        elif key_stem in first_by_stem:
            earlier = first_by_stem[key_stem]
            cut = len(names.normal(name).encode("utf-8")) > MAX_STEM_BYTES
            why = (f"file names are cut to {MAX_STEM_BYTES} bytes, and the names differ only "
                   "after that" if cut else "")
            problem = Problem("site_name", name, f"gives the same file name {stem}.xlsx as row "
                              f"{earlier.row}'s ({earlier.site_name!r})"
                              + (f": {why}" if why else ""),
                              f"shorten the names so that they differ within their first "
                              f"{MAX_STEM_BYTES} bytes of UTF-8 (a plain letter takes one, an "
                              "accented letter two, a Chinese character three)" if cut else
                              "make the names differ in letters or digits, not only in "
                              "punctuation or case", f"row {row.row}")
        first_by_name.setdefault(key_name, row)
        first_by_stem.setdefault(key_stem, row)
        if problem:
            row = SiteRow(row.row, row.values, None, row.problems + (problem,), row.file_stem)
        out.append(row)
    return out


# -- the cohorts table (methodology §4.1, §6 "Cohorts") --------------------------------------------
@dataclass(frozen=True)
class CohortRow:
    """One row of a cohorts table: the site it belongs to, where it was read, its columns."""

    site: str  # the site_name as written ("" in a table without that column)
    where: str  # "cohorts.csv row 3", named in every problem of the row
    values: dict[str, object]
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class CohortsTable:
    """A cohorts table as read: its rows in file order, its file-wide problems and notes."""

    name: str  # how messages name it: "cohorts.csv", "sheet 'cohorts' of sites.xlsx"
    rows: tuple[CohortRow, ...]
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()
    has_site_name: bool = True

    def for_site(self, site_name: object) -> list[CohortRow]:
        """The rows of one site (names compared ignoring case and surrounding spaces)."""
        key = _site_key(site_name)
        return [r for r in self.rows if _site_key(r.site) == key]


#: The columns a cohorts table may have: the site it belongs to, then the cohort's own.
_COHORT_COLUMNS: dict[str, Input] = {"site_name": BY_NAME["site_name"], **COHORT_BY_NAME}


def _site_key(name: object) -> str:
    return names.key(name) if _filled(name) else ""


def _is_cohorts_sheet(title: str) -> bool:
    return title.strip().casefold() == COHORTS_SHEET


def load_cohorts(path: str | os.PathLike, sheet: str | None = None, *,
                 need_site_name: bool = True) -> CohortsTable:
    """Read a cohorts table: a header of cohort columns (``site_name``, ``cohort``,
    ``online_month``, ``gpus`` …; ``tokenfactory-xl inputs`` lists them), one row per cohort.

    Read as a sites file is: the header is the first row with a ``site_name`` cell (else the first
    row), numbers typed as text by the file's one decimal convention, formula cells without a
    stored value and merges across columns refused. An ``.xlsx`` file is read on its sheet named
    ``cohorts``, else on the sheet it opens on; ``sheet`` names one. ``need_site_name``: whether
    the table must say which site each row belongs to (a batch of many sites) or may leave it out
    (one site). Problems are collected in the table and its rows, never raised, except when the
    file cannot be read at all (:class:`InputError`).
    """
    path = Path(path)
    source = _read_source(path, sheet, "cohorts file")
    name = path.name if source.sheet is None else f"sheet {source.sheet!r} of {path.name}"
    return _cohorts_table(path, source, name, need_site_name)


def _cohorts_table(path: Path, source: _Source, name: str, need_site_name: bool
                   ) -> CohortsTable:
    grid = source.grid
    numbered = [(n, cells) for n, cells in enumerate(grid, start=1)
                if any(_filled(c) for c in cells)]
    if not numbered:
        return CohortsTable(name, (), (Problem("cohorts table", name, "is empty",
                                               "the first row names the cohort columns "
                                               "(site_name, cohort, online_month, gpus, …), each "
                                               "further row is one cohort"),))
    notes: list[str] = []
    header_at = next((n for n, cells in numbered[:HEADER_SEARCH_ROWS]
                      if any(_is_site_name(c) for c in cells)), numbered[0][0])
    if header_at != numbered[0][0]:
        notes.append(f"{name}: header found on row {header_at} (the first row with a site_name "
                     "cell); the rows above it are not read")
    header = list(grid[header_at - 1])
    body = [(n, list(cells)) for n, cells in numbered if n > header_at]
    where = f"{name} row {header_at}"
    width = max([len(header)] + [len(cells) for _, cells in body])
    header += [None] * (width - len(header))
    columns = [str(h).strip().lower() if _filled(h) and not isinstance(h, _Formula) else ""
               for h in header]
    keep = [False] * width
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for index, column in enumerate(columns):
        letter = _column_letter(index)
        if not column:
            if any(index < len(cells) and _filled(cells[index]) for _, cells in body):
                problems.append(Problem(f"column {letter}", "", "has values but no cohort column "
                                        "name in the header", "write the column's name in the "
                                        "header row, or delete the column", where))
            continue
        if column not in _COHORT_COLUMNS:
            hint = closest_name(column, tuple(_COHORT_COLUMNS))
            fix = (f"did you mean {hint}?" if hint else
                   "the cohort columns are " + ", ".join(_COHORT_COLUMNS))
            problems.append(Problem(f"column {letter}", header[index], "is not a cohort column",
                                    fix, where))
            continue
        if column in seen:
            problems.append(Problem(f"column {letter}", header[index], f"appears twice (also "
                                    f"column {seen[column]})", "keep one of the two columns",
                                    where))
            continue
        seen[column] = letter
        keep[index] = True
    for column in (("site_name",) if need_site_name else ()) + COHORT_REQUIRED:
        if column not in seen:
            what = ("which site each cohort belongs to" if column == "site_name"
                    else "a value in every row")
            problems.append(Problem(column, "", "column is missing", f"add the {column} column "
                                    f"({what})", where))
    problems += _check_cells(source, header_at, body, columns, keep, notes)
    number_problems, number_notes, _decimal = _read_numbers(body, columns, keep, source.delimiter,
                                                  _COHORT_COLUMNS, "cohorts table")
    notes += [f"{name}: {note}" for note in number_notes]
    for p in number_problems:
        if not p.where:  # a file mixing decimal conventions: one problem for the table
            problems.append(Problem(p.name, name, p.message, p.fix))
    by_row: dict[str, list[Problem]] = {}
    for p in number_problems:
        if p.where:
            by_row.setdefault(p.where, []).append(
                Problem(p.name, p.value, p.message, p.fix, f"{name} {p.where}"))
    # problems from _check_cells name "row N" of the table: say which table
    problems = [Problem(p.name, p.value, p.message, p.fix,
                        f"{name} {p.where}" if p.where.startswith("row ") else p.where)
                for p in problems]
    rows: list[CohortRow] = []
    for n, cells in body:
        values = {column: (cells[i] if i < len(cells) else None)
                  for i, column in enumerate(columns) if keep[i]}
        site = values.pop("site_name", "")
        values = {k: v for k, v in values.items() if _filled(v)}
        rows.append(CohortRow("" if site is None else str(site).strip(), f"{name} row {n}",
                              values, tuple(by_row.get(f"row {n}", ()))))
    if not body and not problems:
        notes.append(f"{name}: a header but no cohort rows; the sites have their own GPUs only")
    return CohortsTable(name, tuple(rows), tuple(problems), tuple(notes), "site_name" in seen)


def _site_cohorts(table: CohortsTable | None, site_name: object
                  ) -> tuple[list[dict[str, object]], list[str], list[Problem]]:
    """A site's cohort rows for :func:`make_inputs`: their values, where each was read, and the
    problems already found in them."""
    if table is None:
        return [], [], []
    rows = table.for_site(site_name) if table.has_site_name else list(table.rows)
    return ([r.values for r in rows], [r.where for r in rows],
            [p for r in rows for p in r.problems])


def _unmatched_cohorts(table: CohortsTable, site_names: Sequence[object],
                       what: str) -> list[Problem]:
    """A cohort row naming no site of the sites read is an error: its GPUs would be lost."""
    keys = {_site_key(n) for n in site_names}
    listed = ", ".join(repr(str(n).strip()) for n in list(site_names)[:8])
    more = " …" if len(site_names) > 8 else ""
    problems = []
    for row in table.rows:
        if _site_key(row.site) in keys:
            continue
        if not row.site:
            problems.append(Problem("site_name", "", "is empty; every cohort row names its site",
                                    "type the site_name of the site it belongs to", row.where))
            continue
        by_key = {_site_key(n): str(n).strip() for n in site_names}
        hint = by_key.get(closest_name(_site_key(row.site), tuple(by_key)), "")
        fix = f"did you mean {hint!r}?" if hint else f"the sites are {listed}{more}"
        problems.append(Problem("site_name", row.site, f"is not a site of {what}", fix,
                                row.where))
    return problems
