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
one decimal convention (:mod:`.table`, the reading every table shares; the cohorts file's rows
are :mod:`.cohorts`'). What it decided is said in
:attr:`SitesFile.notes`. Only regular files are read
(:func:`tokenfactory_xl.files.disk.open_regular`). It also gives each site the file name its
workbook will have (:func:`safe_file_stem`) and reports two sites that would share one.
:func:`read_sites` is the strict form: the rows, or an
:class:`~tokenfactory_xl.core.errors.InputError` listing every problem. :class:`SiteRows` gives
the same rows one at a time, holding none of them (a batch of 10,000 sites): a CSV file is read
row by row, a few times over, from the disk.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import names
from ..core.catalogue import BY_NAME, name_fix
from ..core.errors import InputError, Problem
from ..files.a1 import column_letter
from ..tfom.inputs import FrozenMapping, SiteInputs, make_inputs, split_key
from .cohorts import CohortsTable, _site_cohorts, _site_key, _unmatched_cohorts, load_cohorts
from .table import (
    HEADER_SEARCH_ROWS,
    _check_cells,
    _filled,
    _find_header,
    _Formula,
    _formula_problem,
    _is_cohorts_sheet,
    _is_site_name,
    _no_header,
    _Numbers,
    _read_source,
    _rows_text,
    _Source,
    _with_sheet_hint,
    normalise_column,
)

#: What a row of the body becomes once checked: its cells are let go.
_CHECKED: tuple[int, list[object]] = (0, [])




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




# Characters Windows, macOS or Linux refuse in a file name, and every character a name may not
# hold (control characters, bidirectional controls, invisible characters: :mod:`names`).
_UNSAFE_IN_NAME = re.compile(rf'[<>:"/\\|?*]|{names.HIDDEN.pattern}')
#: Characters a name or a label may not hold (:data:`tokenfactory_xl.names.HIDDEN`): a site
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
        return _site_name(self.values.get("site_name"))


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
    sites = SiteRows(path, sheet, header_row, cohorts)
    memo: dict[object, dict[object, object]] = {}  # each input value held once (sharing)
    return SitesFile(sites.path, sites.columns, tuple(sites.checked(memo)), sites.file_problems,
                     sites.notes, sites.header_row, sites.sheet, sites.decimal, sites.cohorts)


class SiteRows:
    """A sites file read and checked row by row: what :func:`load_sites` gives, without holding
    every row at once.

    Made, it has read the file's rows a few times, one at a time, holding only what the file as
    a whole says: its header, its :attr:`file_problems` and :attr:`notes`, the decimal
    separator, the cohorts and which rows may share a site name. :meth:`checked` reads the rows
    once more and gives each checked (its problems and those of an earlier row sharing its
    name included), in row order. A CSV file is read from the disk each time (and refused if
    it changed in between); a workbook's cells are held, as ``openpyxl`` read them.

    Raises
    ------
    InputError
        as :func:`load_sites`, only when a file cannot be read at all.
    """

    def __init__(self, path: str | os.PathLike, sheet: str | None = None,
                 header_row: int | None = None, cohorts: str | os.PathLike | None = None):
        self.path = path = Path(path)
        source = self._source = _read_source(path, sheet)
        self.sheet = source.sheet
        head, given, last = _head(source, header_row)
        if not head:
            raise InputError([Problem("sites file", str(path), "is empty",
                                      "the first row names the inputs (site_name, gpus, …), "
                                      "each further row is one site")])
        notes = list(source.notes)
        self.header_row = header_at = _find_header(path, head, last, given, header_row, notes)
        header = list(next(cells for n, cells in head if n == header_at) if given is None
                      else given)
        del head
        self._body: list[tuple[int, list[object]]] | None = None
        if source.grid is not None:  # a workbook's rows are held: its merges fill them in
            self._body = [(n, list(cells)) for n, cells in self._rows(header_at, totals=True)]
            source.grid = []  # the body holds the rows read: the grid's copy goes
        width, filled, count, totals, hidden = len(header), set(), 0, [], []
        for n, cells in self._rows(header_at, totals=True):
            if n in source.totals_rows:
                totals.append(n)
                continue
            count += 1
            width = max(width, len(cells))
            filled.update(i for i, c in enumerate(cells) if _filled(c))
            if n in source.hidden_rows:
                hidden.append(n)
        self.count = count
        if totals:
            if self._body is not None:
                self._body = [(n, cells) for n, cells in self._body
                              if n not in source.totals_rows]
            notes.append(f"row{'s' if len(totals) > 1 else ''} {_rows_text(totals)}: the "
                         f"totals row of the Excel table {source.totals_rows[totals[0]]!r}, "
                         "not read as a site")
        file_problems: list[Problem] = []
        for index, cell in enumerate(header):
            if isinstance(cell, _Formula):
                file_problems.append(_formula_problem(cell, "header", header_at))
                header[index] = None
        columns, header_problems, keep = _check_header(header, header_at, width, filled)
        if "site_name" not in columns and header_row is None:
            header_problems = [_no_header(p, header_at) for p in header_problems]
        if "site_name" not in columns and source.elsewhere:
            header_problems = [_with_sheet_hint(p, source.elsewhere) for p in header_problems]
        file_problems += header_problems
        if self._body is not None:  # a CSV file has neither formulas nor merged cells
            file_problems += _check_cells(source, header_at, self._body, columns, keep, notes)
        self._columns, self._keep = columns, keep
        self._numbers = _Numbers(columns, keep, source.delimiter)
        self._name_at = columns.index("site_name") if "site_name" in columns else None
        self._numbers.decide(self._body_rows())
        self.decimal = self._numbers.decimal
        file_problems += self._numbers.problems  # the file mixes conventions
        notes += self._numbers.notes
        if hidden:
            notes.append(f"row{'s' if len(hidden) > 1 else ''} {_rows_text(hidden)} hidden (or "
                         "filtered out) in the sheet, read like the others")
        hidden_columns = [columns[i] for i in sorted(source.hidden_columns)
                          if i < len(keep) and keep[i]]
        if hidden_columns:
            notes.append(f"hidden column{'s' if len(hidden_columns) > 1 else ''} read: "
                         + ", ".join(hidden_columns))
        if not count:
            file_problems.append(Problem(
                "sites file", str(path), "has a header but no site rows",
                "add one row per site under the header"))
        self.cohorts = table = _cohorts_for(path, source, cohorts, notes, file_problems)
        if table is not None and self._name_at is not None:
            file_problems += self._unmatched(table)
        self._shared = self._shared_names()
        #: The problems of the file as a whole (each row's come with the row).
        self.file_problems = tuple(file_problems)
        #: What was read and how, where a reader could not tell (:attr:`SitesFile.notes`).
        self.notes = tuple(notes)
        #: The input columns read, in the file's order.
        self.columns = tuple(c for c, k in zip(columns, keep, strict=True) if k)

    def _rows(self, header_at: int, totals: bool = False) -> Iterator[tuple[int, list[object]]]:
        """The rows under the header with a value, numbered (a table's totals row only with
        ``totals``)."""
        if self._body is not None:
            yield from self._body
            return
        for n, cells in enumerate(self._source.rows(), start=1):
            if n > header_at and any(_filled(c) for c in cells) and (
                    totals or n not in self._source.totals_rows):
                yield n, cells

    def _body_rows(self) -> Iterator[tuple[int, list[object]]]:
        return self._rows(self.header_row)

    def _name(self, cells: list[object]) -> object:
        """The row's site_name cell as read (``None``: none)."""
        at = self._name_at
        return cells[at] if at is not None and at < len(cells) else None

    def _unmatched(self, table: CohortsTable) -> list[Problem]:
        """A cohort row naming no site of the file (:func:`_unmatched_cohorts`): the sites'
        names are gathered only when a cohort row's is not among them."""
        wanted = {_site_key(row.site) for row in table.rows}
        found = {key for _, cells in self._body_rows()
                 if _filled(name := self._name(cells)) and (key := _site_key(name)) in wanted}
        if wanted <= found:
            return []
        names = [name for _, cells in self._body_rows() if _filled(name := self._name(cells))]
        return _unmatched_cohorts(table, names, self.path.name)

    def _shared_names(self) -> set[int]:
        """The rows (by their number) whose site name, file name or look another row may share:
        the only ones :class:`_Duplicates` compares (a 64-bit hash of each a row, not its
        names, is held for the rest)."""
        import numpy as np  # a command's --help loads no numpy

        numbers, hashes = array("q"), [array("q") for _ in range(3)]
        for n, cells in self._body_rows():
            name = _site_name(self._name(cells))
            if name:
                numbers.append(n)
                for kept, key in zip(hashes, _name_keys(name, _file_stem(self._name(cells))),
                                     strict=True):
                    kept.append(hash(key))
        shared: set[int] = set()
        found = np.frombuffer(numbers, dtype=np.int64)
        for kept in hashes:
            values = np.frombuffer(kept, dtype=np.int64)
            unique, counts = np.unique(values, return_counts=True)
            shared.update(found[np.isin(values, unique[counts > 1])].tolist())
        return shared

    def checked(self, memo: dict[object, dict[object, object]] | None = None
                ) -> Iterator[SiteRow]:
        """Every row under the header, checked, in row order: its problems (a number of the
        file's convention refused, an earlier row's name) and, where it has none, its inputs.

        ``memo``: each input value held once across the rows given (see
        :meth:`~tokenfactory_xl.tfom.inputs.FrozenMapping.sharing`), for a caller keeping them.
        """
        duplicates = _Duplicates()
        body = self._body
        for index, (n, cells) in enumerate(self._body_rows()):
            if body is not None:
                body[index] = _CHECKED  # each row's cells go as it is checked
            found = self._numbers.read(n, cells)
            row = _check_row(n, cells, self._columns, self._keep, found,
                             _site_cohorts(self.cohorts, self._name(cells)), memo)
            yield duplicates.mark(row) if n in self._shared else row


def _head(source: _Source, header_row: int | None
          ) -> tuple[list[tuple[int, list[object]]], list[object] | None, int]:
    """The first rows with a value (at most :data:`HEADER_SEARCH_ROWS`, where the header is
    looked for), the cells of row ``header_row`` when it is given and has a value, and the
    number of the last row with a value (0: none). Every row is read unless the header is
    found among the first."""
    head: list[tuple[int, list[object]]] = []
    given, last = None, 0
    for n, cells in enumerate(source.rows(), start=1):
        if not any(_filled(c) for c in cells):
            continue
        last = n
        if len(head) < HEADER_SEARCH_ROWS:
            head.append((n, cells))
            if header_row is None and any(_is_site_name(c) for c in cells):
                break  # the header: the rows under it are read as the body
        if n == header_row:
            given = cells
    return head, given, last


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





def _check_header(header: list[object], header_row: int, width: int, filled: set[int]
                  ) -> tuple[list[str], list[Problem], list[bool]]:
    """Column names, the header's problems, and which columns hold inputs; ``width``: the
    widest row's cells, ``filled``: the columns with a value in some row under the header."""
    where = f"row {header_row}"
    columns = [normalise_column(h) for h in header]
    width = max(width, len(columns))
    columns += [""] * (width - len(columns))
    problems: list[Problem] = []
    keep = [False] * width
    seen: dict[str, str] = {}
    for index, column in enumerate(columns):
        letter = column_letter(index + 1)
        here = f"column {letter}"
        if not column:
            if index in filled:
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
            problems.append(Problem(here, column, "is not a known input", name_fix(name), where))
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
    stem = _file_stem(name)
    if problems:
        inputs = None
    if inputs is not None and memo is not None:  # the file's rows hold each value once
        inputs = inputs.sharing(memo)  # type: ignore[assignment]
    # the cells as a frozen mapping: the column names are held once for every row of the file
    return SiteRow(number, FrozenMapping(values), inputs, tuple(problems), stem)


def _site_name(value: object) -> str:
    """A row's site name as :attr:`SiteRow.site_name` gives it, from its cell."""
    return "" if value is None else str(value).strip()


def _file_stem(value: object) -> str:
    """A row's :attr:`SiteRow.file_stem`, from its site_name cell."""
    return safe_file_stem(str(value).strip()) if _filled(value) else ""


def _name_keys(name: str, stem: str) -> tuple[str, str, str]:
    """What two rows' names are compared by (:class:`_Duplicates`): the name's key, its file
    name's and its look."""
    return names.key(name), names.key(stem), names.look(name)


class _Duplicates:
    """Report a site whose name, or whose workbook's file name, an earlier row already has.

    Names are compared by :func:`tokenfactory_xl.core.names.key`: composed (NFC) and without regard
    to case (``Alpha`` and ``ALPHA`` share a file on Windows and macOS), and after the file-name
    mapping (``A/B`` and ``A_B`` both become ``A_B.xlsx``). Rows are given in row order.
    """

    def __init__(self) -> None:
        self._by_name: dict[str, SiteRow] = {}
        self._by_stem: dict[str, SiteRow] = {}
        self._by_look: dict[str, SiteRow] = {}

    def mark(self, row: SiteRow) -> SiteRow:
        """``row``, with the problem of a name an earlier row has (and no inputs)."""
        name, stem = row.site_name, row.file_stem
        if not name:
            return row
        key_name, key_stem, look = _name_keys(name, stem)
        problem = None
        if key_name in self._by_name:
            earlier = self._by_name[key_name]
            problem = Problem("site_name", name, f"is the same site name as row {earlier.row}'s "
                              f"({earlier.site_name!r}; names are compared ignoring case, hidden "
                              "characters and how accents are encoded)",
                              "give every site its own name", f"row {row.row}")
        elif look in self._by_look:
            earlier = self._by_look[look]
            here = names.look_alikes(name)
            holds = (f"it holds {here}" if here else f"row {earlier.row}'s holds "
                     f"{names.look_alikes(earlier.site_name)}")
            problem = Problem("site_name", name, f"looks the same as row {earlier.row}'s site "
                              f"name ({earlier.site_name!r}) but is another name: {holds}",
                              "type both names in the plain letters of one alphabet, or give "
                              "every site a name that looks its own", f"row {row.row}")
        elif key_stem in self._by_stem:
            earlier = self._by_stem[key_stem]
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
        self._by_name.setdefault(key_name, row)
        self._by_stem.setdefault(key_stem, row)
        self._by_look.setdefault(look, row)
        if problem:
            row = SiteRow(row.row, row.values, None, row.problems + (problem,), row.file_stem)
        return row
