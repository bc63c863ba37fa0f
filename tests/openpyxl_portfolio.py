"""The portfolio workbook as openpyxl alone writes it: the oracle the portfolio's bytes are held to.

:func:`write_portfolio_to` is how :mod:`tokenfactory_xl.portfolio.book` wrote the portfolio before
its table's rows were written as text: a write-only cell per cell, with its number format, every
row made twice (once for the widths, once to write it), the header's cells made here too. The
sheet's layout, its Excel Table and the Summary's charts are the package's own helpers, which
neither way of writing the rows touches. ``tests/test_portfolio_bytes.py`` holds the package's
portfolio to these bytes, whole file for whole file."""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from tokenfactory_xl.portfolio.book import (
    CHART_SITES,
    PORTFOLIO_SHEET,
    _chart_caches,
    _every_digit,
    _number_format,
    _sites_table,
    _summary_charts,
    _summary_sheet,
    _table_layout,
)
from tokenfactory_xl.portfolio.contents import (
    Entry,
    applies,
    columns,
    currency_of,
    figures,
    headers,
    label_and_unit,
    output_of,
    totals,
)
from tokenfactory_xl.tfom.inputs import NOTE
from tokenfactory_xl.workbook.stencil import repack_to


def shown_text(found: object, number_format: str) -> str:
    """About what Excel shows for ``found`` in ``number_format``, to size a column by."""
    if found is None:
        return ""
    if isinstance(found, str):
        return found
    if isinstance(found, dt.date):
        return found.isoformat()
    x = float(found)  # type: ignore[arg-type]
    if number_format.endswith("%"):
        decimals = len(number_format.split(".")[1]) - 1 if "." in number_format else 0
        return f"{x * 100:,.{decimals}f}%"
    decimals = len(number_format.split(".")[1]) if "." in number_format else 0
    return f"{x:,.{decimals}f}" if "," in number_format else f"{x:.{decimals}f}"


def value(name: str, inputs, summary: dict[str, float | None],  # type: ignore[no-untyped-def]
          flat: dict[str, object]) -> object:
    """What the portfolio shows for one site in column ``name``: ``None`` for a blank cell."""
    base, _, suffix = name.partition(".")
    if suffix == NOTE:
        return inputs.notes.get(base)
    if not applies(name, inputs):
        return None
    found = summary[name] if output_of(name) else flat[name]
    if isinstance(found, float) and not math.isfinite(found):
        return None
    return found


def portfolio_bytes(entries: Sequence[Entry]) -> bytes:
    """The portfolio workbook openpyxl writes for ``entries``, as ``.xlsx`` bytes."""
    import io

    out = io.BytesIO()
    write_portfolio_to(out, entries)
    return out.getvalue()


def write_portfolio_to(out: BinaryIO, entries: Sequence[Entry]) -> None:
    """Write the portfolio workbook to ``out``, every cell through openpyxl."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.comments import Comment
    from openpyxl.styles import Alignment, Font

    input_cols, output_cols = columns(entries)
    names = input_cols + output_cols
    currency = currency_of(entries)
    titles = headers(names, currency)
    formats = [_number_format(name) for name in names]
    n = len(entries)

    def each_row() -> Iterator[list[object]]:
        for inputs, result in entries:
            flat = inputs.flat()
            summary = figures(result)
            yield [value(name, inputs, summary, flat) for name in names]

    widest = [0] * len(names)
    rows: list[list[object]] = []
    for row in each_row():
        for index, (found, fmt) in enumerate(zip(row, formats, strict=True)):
            widest[index] = max(widest[index], len(shown_text(found, fmt)))
        if len(rows) < CHART_SITES:
            rows.append(row)

    wb = Workbook(write_only=True)
    wb.properties.creator = "tokenfactory_xl"
    wb.properties.title = "TFOM portfolio"
    ws = wb.create_sheet(PORTFOLIO_SHEET)
    _table_layout(ws, titles, widest)

    bold = Font(bold=True)
    header_row = []
    for name, title in zip(names, titles, strict=True):
        cell = WriteOnlyCell(ws, value=title)
        cell.data_type = "s"
        cell.font = bold
        cell.alignment = Alignment(wrap_text=True, vertical="bottom")
        label, unit = label_and_unit(name, currency)
        cell.comment = Comment(f"{name}: {label}" + (f" [{unit}]" if unit else ""),
                               "tokenfactory_xl", width=240, height=50)
        header_row.append(cell)
    ws.append(header_row)
    for row in each_row():
        cells = []
        for found, fmt in zip(row, formats, strict=True):
            cell = WriteOnlyCell(ws, value=None)
            if isinstance(found, str):
                cell.value = found
                cell.data_type = "s"
            else:
                cell.value = found
                cell.number_format = fmt
                _every_digit(cell)
            cells.append(cell)
        ws.append(cells)
    _sites_table(ws, titles, n)

    total = totals(entries)
    summary = _summary_sheet(wb, total, entries, currency)
    wb.active = 1

    # The charts and their caches are the package's own (tests/test_portfolio.py reads them):
    # what this oracle holds the package to is the table's cells and the workbook's styles.
    if n:
        _summary_charts(summary, ws, names, n, currency)
    charts = _chart_caches(titles, rows) if n else {}
    wb.properties.created = dt.datetime(2000, 1, 1)
    with tempfile.TemporaryFile() as saved:
        wb.save(saved)
        saved.seek(0)
        repack_to(saved, out, rewrite=charts)
