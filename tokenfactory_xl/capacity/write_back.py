"""Measured values written back into a sites file: the row of one site, its measured columns
replaced, every other cell and byte of the file kept (``tokenfactory-xl actuals --sites``).

A .csv file is rewritten in its own delimiter, decimal mark and quoting; an .xlsx file has only
the cells' XML of its one sheet changed inside the zip. A value the file already holds is
replaced only with ``--force``; a value no site may take is refused (the catalogue's rules).
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..core import names, number_text
from ..core.catalogue import BY_NAME, BadValue
from ..core.errors import InputError, Problem
from ..files.a1 import column_index, column_letter, split_coord
from ..files.disk import claim, read_regular, write_atomically
from ..sites.load import SitesFile
from ..sites.table import (
    MAX_XLSX_UNPACKED,
    _header_line,
    _lines,
    normalise_column,
    sniff_delimiter,
)


def _site_row(sites: SitesFile, site: str) -> int:
    """The row number of ``site`` in ``sites`` (names compared by the one rule for names)."""
    wanted = names.key(site)
    hits = [r.row for r in sites.rows if r.site_name and names.key(r.site_name) == wanted]
    if len(hits) > 1:
        raise InputError([Problem("--site", site, f"names {len(hits)} rows of {sites.path} "
                                  f"(rows {', '.join(map(str, hits))})",
                                  "make site names unique")])
    if not hits:
        known = [r.site_name for r in sites.rows if r.site_name]
        close = difflib.get_close_matches(site, known, n=3, cutoff=0.5)
        fix = f"did you mean {' or '.join(close)}?" if close else (
            f"the file has: {', '.join(known[:10])}" + (" …" if len(known) > 10 else ""))
        raise InputError([Problem("--site", site, f"is not a site_name in {sites.path}", fix)])
    return hits[0]


def cell_text(value: float) -> str:
    return f"{value:.10g}"


def _changes(old: dict[str, object], new: dict[str, float]) -> list[tuple[str, object, float]]:
    return [(k, old.get(k), v) for k, v in new.items()]


def _refuse_overwrite(changes, force: bool, path, decimal: str | None = None) -> None:
    clashes = []
    for name, before, after in changes:
        if before in (None, ""):
            continue
        try:
            same = math.isclose(float(before) if isinstance(before, (int, float)) else
                                number_text.read_number(str(before), decimal)[0], after,
                                rel_tol=1e-9)
        except (ValueError, TypeError):
            same = False
        if not same:
            clashes.append(f"{name} {before} → {cell_text(after)}")
    if clashes and not force:
        raise InputError([Problem("--sites", str(path), "already holds other values: "
                                  + "; ".join(clashes), "add --force to replace them")])


def check_measured(values: dict[str, float], source: str) -> None:
    """Refuse measured values no site can take: not finite (a scrape's ``nan``), or no
    throughput at all (a run whose every request failed measures 0 tokens/s)."""
    problems = []
    for name, value in values.items():
        try:
            BY_NAME[name].parse(value)
        except BadValue as exc:
            problems.append(Problem(name, value, f"measured in {source}: {exc.message}",
                                    "check the run; nothing was written"))
    if values.get("measured_tps") == 0:
        problems.append(Problem("measured_tps", 0, f"measured in {source}: no tokens were served "
                                "(every request of the run failed?), which is no throughput "
                                "a site can plan on", "run the benchmark again; nothing was "
                                "written"))
    if problems:
        raise InputError(problems)


def write_site_values(path: str | os.PathLike, site: str, values: dict[str, float],
                      force: bool = False, sheet: str | None = None,
                      on_wait: Callable[[], object] | None = None,
                      source: str = "the values given") -> list[tuple[str, object, float]]:
    """Write ``values`` (input name → number) into the row of ``site`` in a sites file.

    ``values`` are checked first (:func:`check_measured`; ``source`` names where they were
    measured): nothing is written for a value no site can take.

    The row, sheet and header are found as ``batch`` finds them (the sheet the workbook opens
    on, or ``sheet``; the first row holding ``site_name``). Every other cell, the column order,
    the rows and every formula's stored value stay as they were (a workbook's sheet is changed
    in its XML, cell by cell); missing columns are added at the end of the header; a CSV gets
    the numbers with its own decimal separator. The file is replaced atomically (a temporary
    file in the same folder, then ``os.replace``). Cells that already hold a different value
    are only replaced with ``force``. Returns (name, old value, new value) for each value
    written. Another run updating the file is waited for (``on_wait`` is called when it is, to
    say so).
    """
    from ..sites.load import load_sites

    path = Path(path)
    if not path.is_file():
        raise InputError([Problem("--sites", str(path), "is not a file",
                                  "give the sites file (.csv or .xlsx) to update")])
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".xlsx", ".xlsm"):
        raise InputError([Problem("--sites", str(path), "is neither .csv nor .xlsx",
                                  "save the sites file as CSV or Excel workbook")])
    check_measured(values, source)
    # Runs updating one file queue: each reads the file as the one before it left it, so
    # eight measurements written at once are eight updates, none lost.
    with claim(path, wait=True, what="the file", on_wait=on_wait):
        sites = load_sites(path, sheet)
        if "site_name" not in sites.columns:
            raise InputError([Problem("--sites", str(path), "has no site_name column",
                                      "the header row names the columns; --sheet picks the "
                                      "sheet")])
        row = _site_row(sites, site)
        if suffix == ".csv":
            return _write_csv(path, sites, row, values, force)
        return _write_xlsx(path, sites, row, values, force)


def _write_csv(path: Path, sites: SitesFile, row_number: int, values: dict[str, float],
               force: bool):
    raw = read_regular(path, MAX_XLSX_UNPACKED)
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8-sig")  # load_sites has read it as UTF-8
    newline = "\r\n" if "\r\n" in text else "\n"
    delimiter = sniff_delimiter(_header_line(_lines(text)))
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header_at = sites.header_row - 1
    header = [normalise_column(c) for c in rows[header_at]]
    added = [name for name in values if name not in header]
    for name in added:
        header.append(name)
        rows[header_at].append(name)
    if added:  # keep the file rectangular: every row gets the new (empty) cells
        for other in rows[header_at + 1:]:
            if any(cell != "" for cell in other):
                other.extend([""] * (len(header) - len(other)))
    row = rows[row_number - 1]
    row.extend([""] * (len(header) - len(row)))
    old = {name: row[header.index(name)] for name in values}
    changes = _changes(old, values)
    _refuse_overwrite(changes, force, path, sites.decimal)
    for name, value in values.items():
        # the file's own decimal separator: 412,5 in a decimal-comma file, 412.5 otherwise
        shown = cell_text(value)
        row[header.index(name)] = shown.replace(".", ",") if sites.decimal == "," else shown
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=delimiter, lineterminator=newline)
    writer.writerows(rows)
    data = out.getvalue().encode("utf-8")
    write_atomically(path, (b"\xef\xbb\xbf" if bom else b"") + data)
    return changes


def _write_xlsx(path: Path, sites: SitesFile, row_number: int, values: dict[str, float],
                force: bool):
    from ..files.safe_xlsx import RefusedFile, open_xlsx

    try:
        with open_xlsx(path) as content:
            part = next((s.part for s in content.sheets if s.title == sites.sheet), None)
            cells = content.cells(sites.sheet).values  # type: ignore[arg-type]
    except RefusedFile as exc:
        raise InputError([Problem("--sites", str(path), exc.reason, exc.fix)]) from None
    if part is None:
        raise InputError([Problem("--sites", str(path), f"has no sheet {sites.sheet!r} to write",
                                  "--sheet names the sheet of the sites")])
    columns = _header_columns(cells, sites.header_row)
    width = max([column_index(c) for c in columns.values()], default=0)
    for name in values:
        if name not in columns:
            width += 1
            columns[name] = column_letter(width)
    old = {n: cells.get(f"{columns[n]}{row_number}") for n in values}
    changes = _changes(old, values)
    _refuse_overwrite(changes, force, path)
    header_cells = {f"{columns[n]}{sites.header_row}": _inline_text(n) for n in values
                    if f"{columns[n]}{sites.header_row}" not in cells}
    value_cells = {f"{columns[n]}{row_number}": f"<v>{float(v)!r}</v>" for n, v in values.items()}
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info, data in members:
            if info.filename == part:
                data = _set_cells(data.decode("utf-8"), {**header_cells, **value_cells}
                                  ).encode("utf-8")
            archive.writestr(info, data, compress_type=info.compress_type)
    write_atomically(path, out.getvalue())
    return changes


def _header_columns(cells: dict[str, object], header_row: int) -> dict[str, str]:
    """Input name → column letters, from the header row's cells."""
    found = {}
    for coord, value in cells.items():
        letters, row = split_coord(coord)
        if row == header_row and isinstance(value, str) and normalise_column(value):
            found.setdefault(normalise_column(value), letters)
    return found


def _inline_text(text: str) -> str:
    from xml.sax.saxutils import escape

    return f'<is><t>{escape(text)}</t></is>'


_ROW = re.compile(r'<((?:\w+:)?)row\b[^>]*?\br="(\d+)"[^>]*?(?:/>|>.*?</\1row>)', re.DOTALL)


_CELL = re.compile(r'<((?:\w+:)?)c\b[^>]*?\br="([A-Z]+)(\d+)"[^>]*?(?:/>|>.*?</\1c>)', re.DOTALL)


_STYLE = re.compile(r'\bs="(\d+)"')


def _set_cells(xml: str, contents: dict[str, str]) -> str:
    """The sheet's XML with each cell of ``contents`` (coordinate → the cell's inner XML, a
    value or an inline text) replaced or added in its row, keeping the cell's style; every
    other byte stays as it was, formulas and their stored values with it."""
    by_row: dict[int, dict[str, str]] = {}
    for coord, inner in contents.items():
        letters, row = split_coord(coord)
        by_row.setdefault(row, {})[letters] = inner

    def cell(prefix: str, coord: str, inner: str, style: str) -> str:
        kind = ' t="inlineStr"' if inner.startswith("<is>") else ""
        if prefix:  # the sheet's own namespace prefix on every element
            inner = inner.replace("</", "\0").replace("<", f"<{prefix}").replace(
                "\0", f"</{prefix}")
        return f'<{prefix}c r="{coord}"{style}{kind}>{inner}</{prefix}c>'

    def patch_row(match: re.Match[str]) -> str:
        prefix, number = match.group(1), int(match.group(2))
        wanted = by_row.get(number)
        if not wanted:
            return match.group(0)
        text = match.group(0)
        if text.endswith("/>") and f"</{prefix}row>" not in text:
            text = text[:-2] + f"></{prefix}row>"
        head_end = text.index(">") + 1
        body, tail = text[head_end:-len(f"</{prefix}row>")], f"</{prefix}row>"
        pieces = []
        pending = dict(sorted(wanted.items(), key=lambda kv: column_index(kv[0])))
        for c in _CELL.finditer(body):
            letters = c.group(2)
            for new in [k for k in pending if column_index(k) < column_index(letters)]:
                pieces.append(cell(prefix, f"{new}{number}", pending.pop(new), ""))
            if letters in pending:
                style = _STYLE.search(c.group(0)[:c.group(0).index(">")])
                pieces.append(cell(prefix, f"{letters}{number}", pending.pop(letters),
                                   f' s="{style.group(1)}"' if style else ""))
            else:
                pieces.append(c.group(0))
        for new, inner in pending.items():
            pieces.append(cell(prefix, f"{new}{number}", inner, ""))
        return text[:head_end] + "".join(pieces) + tail

    patched = _ROW.sub(patch_row, xml)
    missing = set(by_row) - {int(m.group(2)) for m in _ROW.finditer(xml)}
    if missing:  # pragma: no cover - the header and the site's row hold cells load_sites read
        raise InputError([Problem("--sites", "", f"rows {sorted(missing)} are not in the sheet's "
                                  "file", "open the file in Excel and save it again")])
    return patched
