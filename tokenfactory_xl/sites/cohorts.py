"""Cohorts files: the fleet's further cohorts, one row each (a name, the online month, the GPUs
and any cohort column that differs from the site's), for one site or, with a ``site_name``
column, for every site of a sites file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core import names
from ..core.catalogue import BY_NAME, COHORT_BY_NAME, COHORT_REQUIRED, Input, closest_name, name_fix
from ..core.errors import Problem
from ..files.a1 import column_letter
from .table import (
    HEADER_SEARCH_ROWS,
    _check_cells,
    _filled,
    _Formula,
    _is_site_name,
    _read_numbers,
    _read_source,
    _Source,
)


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
    # a cohorts table is a few rows a site: held whole
    numbered = [(n, cells) for n, cells in enumerate(source.rows(), start=1)
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
    header = list(next(cells for n, cells in numbered if n == header_at))
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
        letter = column_letter(index + 1)
        if not column:
            if any(index < len(cells) and _filled(cells[index]) for _, cells in body):
                problems.append(Problem(f"column {letter}", "", "has values but no cohort column "
                                        "name in the header", "write the column's name in the "
                                        "header row, or delete the column", where))
            continue
        if column not in _COHORT_COLUMNS:
            fix = name_fix(column, tuple(_COHORT_COLUMNS),
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
