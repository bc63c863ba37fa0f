"""Sites files: one row per token-factory site, checked before anything is generated.

An operator with forty sites, or an investor screening two thousand candidates, keeps one row per
site in a spreadsheet or a CSV file. The header row holds input names of the catalogue
(TFOM-SPEC section 6): ``site_name`` is required, every other column is optional and an absent
column or an empty cell takes the catalogue default. A per-scenario input is one column for all
three scenarios (``tef_target``) or one column per scenario (``tef_target.Optimised``); both may
appear, the scenario column winning for its scenario.

:func:`load_sites` reads a ``.csv`` (UTF-8, with or without a byte-order mark; comma-, semicolon-
or tab-separated) or an ``.xlsx`` (the first sheet or a named one) and checks every row against
the catalogue, collecting every problem with the row number the user sees (the header is row 1)
so that a file with twenty mistakes is fixed in one pass. It also gives each site the file name
its workbook will have (:func:`safe_file_stem`) and reports two sites that would share one.
:func:`read_sites` is the strict form: the rows, or an :class:`~tokenfactory_xl.errors.InputError`
listing every problem.
"""

from __future__ import annotations

import csv
import io
import os
import re
import unicodedata
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .catalogue import BY_NAME, closest_name
from .errors import InputError, Problem
from .inputs import SiteInputs, make_inputs, split_key

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
# of 0.6 MB can hold gigabytes of XML, and openpyxl has no size guard).
MAX_XLSX_UNPACKED = 200 * 2**20

# Characters Windows, macOS or Linux refuse in a file name, and every control character.
_UNSAFE_IN_NAME = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f-\x9f]')
# Control characters in a text value: the catalogue refuses most; line breaks and tabs are also
# refused here because a site name becomes a file name and one line of a portfolio.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A decimal comma, as a semicolon-separated file from a European Excel writes numbers: 0,65
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*%?\s*$")


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
    spaces go (Windows drops them silently); Windows device names (``CON``, ``NUL``, ``COM1``…)
    and ``portfolio`` (the batch's own output) get a ``_`` after that part of the name before
    the first dot (``nul.txt`` → ``nul_.txt``); the result is cut to
    :data:`MAX_STEM_BYTES` bytes of UTF-8 at a character boundary. Never empty.
    """
    text = unicodedata.normalize("NFC", str(site_name))
    text = _UNSAFE_IN_NAME.sub("_", text)
    text = re.sub(r"\s+", " ", text).strip(" .")
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
def load_sites(path: str | os.PathLike, sheet: str | None = None) -> SitesFile:
    """Read and check a sites file; problems are collected, not raised.

    Parameters
    ----------
    path : a ``.csv`` or ``.xlsx`` file.
    sheet : the worksheet of an ``.xlsx`` file (default: the first).

    Raises
    ------
    InputError
        only when the file cannot be read at all (missing, wrong type, not UTF-8, no such sheet).
    """
    path = Path(path)
    grid = _read_grid(path, sheet)
    # Trailing empty rows and rows with nothing in them are skipped, but keep their numbers.
    numbered = [(n, cells) for n, cells in enumerate(grid, start=1)
                if any(_filled(c) for c in cells)]
    if not numbered:
        raise InputError([Problem("sites file", str(path), "is empty",
                                  "the first row names the inputs (site_name, gpus, …), each "
                                  "further row is one site")])
    header_row, header = numbered[0]
    body = numbered[1:]
    columns, file_problems, keep = _check_header(header, header_row, body)
    if not body:
        file_problems.append(Problem(
            "sites file", str(path), "has a header but no site rows",
            "add one row per site under the header"))
    rows = [_check_row(n, cells, columns, keep) for n, cells in body]
    rows = _mark_duplicates(rows)
    return SitesFile(path, tuple(c for c, k in zip(columns, keep, strict=True) if k),
                     tuple(rows), tuple(file_problems))


def read_sites(path: str | os.PathLike, sheet: str | None = None) -> list[SiteRow]:
    """The rows of a sites file, every one valid; else :class:`InputError` with every problem."""
    sites = load_sites(path, sheet)
    if sites.problems:
        raise InputError(sites.problems)
    return list(sites.rows)


def _filled(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip() == "")


def _read_grid(path: Path, sheet: str | None) -> list[list[object]]:
    if not path.exists():
        raise InputError([Problem("sites file", str(path), "does not exist",
                                  "check the path (a .csv or .xlsx file)")])
    if path.is_dir():
        raise InputError([Problem("sites file", str(path), "is a folder, not a file")])
    suffix = path.suffix.lower()
    if suffix == ".csv":
        if sheet is not None:
            raise InputError([Problem("--sheet", sheet, "applies to .xlsx sites files only",
                                      "leave --sheet out for a .csv file")])
        return _read_csv(path)
    if suffix in (".xlsx", ".xlsm"):
        return _read_xlsx(path, sheet)
    raise InputError([Problem("sites file", str(path), "is neither .csv nor .xlsx",
                              "save the sites as CSV UTF-8 or as an Excel workbook (.xlsx)")])


def sniff_delimiter(header_line: str) -> str:
    """The delimiter of a sites CSV from its header line: ``,``, ``;`` or a tab.

    Input names never contain any of them, so the most frequent one in the header is the
    delimiter (a one-column file has none and reads the same with any).
    """
    counts = {d: header_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _read_csv(path: Path) -> list[list[object]]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(
            "sites file", str(path), f"is not UTF-8 text (byte {exc.start + 1})",
            "in Excel: File > Save As > CSV UTF-8 (comma delimited)")]) from None
    first = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = sniff_delimiter(first)
    try:
        grid: list[list[object]] = [list(r) for r in csv.reader(io.StringIO(text, newline=""),
                                                               delimiter=delimiter)]
    except csv.Error as exc:
        raise InputError([Problem("sites file", str(path), f"is not valid CSV ({exc})")]) from None
    if delimiter == ";":
        # Excel in a decimal-comma locale writes "0,65" for 0.65 in its semicolon CSV files.
        grid = [[_DECIMAL_COMMA.sub(lambda m: m.group(0).replace(",", "."), c) if isinstance(
            c, str) else c for c in row] for row in grid]
    return grid


def _read_xlsx(path: Path, sheet: str | None) -> list[list[object]]:
    import openpyxl  # only needed for .xlsx sites files

    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError):
        raise InputError([Problem(
            "sites file", str(path), "is not a readable .xlsx workbook (damaged, encrypted or "
            "an old .xls renamed)", "open it in Excel and save it as .xlsx or CSV UTF-8")]
        ) from None
    if unpacked > MAX_XLSX_UNPACKED:
        raise InputError([Problem(
            "sites file", str(path), f"unpacks to {unpacked / 2**20:,.0f} MB, more than a sites "
            f"file should ({MAX_XLSX_UNPACKED // 2**20} MB)", "save the sites as CSV UTF-8")])
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a damaged package
        raise InputError([Problem("sites file", str(path),
                                  f"is not a readable .xlsx workbook ({type(exc).__name__})",
                                  "open it in Excel and save it again")]) from None
    try:
        if sheet is None:
            ws = wb.worksheets[0]
        elif sheet in wb.sheetnames:
            ws = wb[sheet]
        else:
            raise InputError([Problem("--sheet", sheet, "is not a sheet of " + path.name,
                                      "the sheets are " + ", ".join(wb.sheetnames))])
        return [list(r) for r in ws.iter_rows(values_only=True)]
    finally:
        wb.close()


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


def _check_row(number: int, cells: list[object], columns: list[str], keep: list[bool]) -> SiteRow:
    where = f"row {number}"
    values: dict[str, object] = {}
    for index, column in enumerate(columns):
        if keep[index]:
            values[column] = cells[index] if index < len(cells) else None
    problems: list[Problem] = []
    # Line breaks and tabs pass the catalogue's check but have no place in a name or a label.
    for column, value in values.items():
        spec = BY_NAME[column.split(".", 1)[0]]
        if (spec.kind in ("text", "choice", "currency") and isinstance(value, str)
                and _CONTROL.search(value)):
            problems.append(Problem(column, value, "contains control characters (a line break, "
                                    "a tab…)", "type it on one line without them", where))
    # A cell already reported is left out of make_inputs so that it is not reported twice.
    reported = {p.name for p in problems}
    checked = {k: v for k, v in values.items() if k not in reported}
    name = values.get("site_name")
    if "site_name" in values and not _filled(name):
        problems.append(Problem("site_name", "" if name is None else name, "is empty; every site "
                                "needs a name", "type the site's name (it names its workbook)",
                                where))
    inputs: SiteInputs | None = None
    try:
        inputs = make_inputs(checked, bare="all", where=where)
    except InputError as exc:
        # A bare per-scenario column sets three values: report its problem once, not thrice.
        problems += [p for p in dict.fromkeys(exc.problems) if p not in problems]
    stem = safe_file_stem(str(name).strip()) if _filled(name) else ""
    if problems:
        inputs = None
    return SiteRow(number, values, inputs, tuple(problems), stem)


def _mark_duplicates(rows: list[SiteRow]) -> list[SiteRow]:
    """Report a site whose name, or whose workbook's file name, an earlier row already has.

    Names are compared without regard to case (``Alpha`` and ``ALPHA`` share a file on Windows
    and macOS), and after the file-name mapping (``A/B`` and ``A_B`` both become ``A_B.xlsx``).
    """
    first_by_name: dict[str, SiteRow] = {}
    first_by_stem: dict[str, SiteRow] = {}
    out: list[SiteRow] = []
    for row in rows:
        name, stem = row.site_name, row.file_stem
        if not name:
            out.append(row)
            continue
        key_name, key_stem = name.casefold(), stem.casefold()
        problem = None
        if key_name in first_by_name:
            earlier = first_by_name[key_name]
            problem = Problem("site_name", name, f"is the same site name as row {earlier.row}'s "
                              f"({earlier.site_name!r}; names are compared ignoring case)",
                              "give every site its own name", f"row {row.row}")
        elif key_stem in first_by_stem:
            earlier = first_by_stem[key_stem]
            problem = Problem("site_name", name, f"gives the same file name {stem}.xlsx as row "
                              f"{earlier.row}'s ({earlier.site_name!r})",
                              "make the names differ in letters or digits, not only in "
                              "punctuation or case", f"row {row.row}")
        first_by_name.setdefault(key_name, row)
        first_by_stem.setdefault(key_stem, row)
        if problem:
            row = SiteRow(row.row, row.values, None, row.problems + (problem,), row.file_stem)
        out.append(row)
    return out
