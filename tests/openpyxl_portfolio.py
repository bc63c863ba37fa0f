"""The portfolio workbook as openpyxl alone writes it: the oracle the portfolio's bytes are held to.

:func:`write_portfolio_to` is how :mod:`tokenfactory_xl.portfolio.book` wrote the portfolio before
its table's rows were written as text: a write-only cell per cell, with its number format, every
row made twice (once for the widths, once to write it). ``tests/test_portfolio_bytes.py`` holds
the package's portfolio to these bytes, whole file for whole file.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from tokenfactory_xl.portfolio.book import (
    CHART_SITES,
    PORTFOLIO_SHEET,
    SUMMARY_CHARTS,
    TABLE_NAME,
    TABLE_PAGES_WIDE,
    _add_table,
    _every_digit,
    _lines,
    _number_format,
    _page_setup,
    _risk_chart,
    _summary_sheet,
    _width,
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
from tokenfactory_xl.workbook.charts import with_caches
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
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.cell import coordinate_to_tuple
    from openpyxl.worksheet.filters import AutoFilter
    from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

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
    ws.freeze_panes = "B2"
    _page_setup(ws, landscape=True, pages_wide=TABLE_PAGES_WIDE)
    ws.print_title_rows = "1:1"
    ws.print_title_cols = "A:A"
    widths = []
    for index, title in enumerate(titles):
        width = _width(widest[index], title)
        widths.append(width)
        ws.column_dimensions[get_column_letter(index + 1)].width = width
    ws.row_dimensions[1].height = 15 * max(_lines(t, w) for t, w in zip(titles, widths,
                                                                         strict=True))

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
    ref = f"A1:{get_column_letter(len(names))}{max(n, 1) + 1}"
    table = Table(displayName=TABLE_NAME, ref=ref, autoFilter=AutoFilter(ref=ref))
    table.tableColumns = [TableColumn(id=i + 1, name=t) for i, t in enumerate(titles)]
    table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
    _add_table(ws, table)

    total = totals(entries)
    summary = _summary_sheet(wb, total, entries, currency)
    wb.active = 1

    if n:
        chart = BarChart()
        chart.type = "bar"
        title = "TFI now against breakeven utilisation"
        chart.y_axis.title = "share of theoretical capacity"
        chart.y_axis.number_format = "0%"
        chart.y_axis.majorGridlines = None
        chart.x_axis.scaling.orientation = "maxMin"
        shown = min(n, CHART_SITES)
        for name in ("tfi_now", "breakeven_util"):
            if name not in names:
                continue
            col = names.index(name) + 1
            chart.add_data(Reference(ws, min_col=col, min_row=1, max_row=shown + 1),
                           titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=shown + 1))
        chart.height = max(9.0, 0.6 * shown + 3)
        chart.width = 24
        chart.title = title + (f" (first {shown} of {n} sites)" if n > shown else "")
        summary.add_chart(chart, SUMMARY_CHARTS)
        if "npv_p10" in names:
            column = "".join(filter(str.isalpha, SUMMARY_CHARTS))
            summary.add_chart(_risk_chart(ws, names, shown, n, currency),
                              f"{column}{int(chart.height * 2) + 3}")

    def shown(sheet: str, coord: str) -> object:
        if sheet != PORTFOLIO_SHEET:
            return None
        r, c = coordinate_to_tuple(coord)
        if r == 1:
            return titles[c - 1] if c <= len(titles) else None
        return rows[r - 2][c - 1] if r - 2 < len(rows) and c <= len(names) else None

    def cached(xml: bytes) -> bytes:
        return with_caches(xml.decode("utf-8"), shown).encode("utf-8")

    charts = {f"xl/charts/chart{i}.xml": cached for i in (1, 2)} if n else {}
    wb.properties.created = dt.datetime(2000, 1, 1)
    with tempfile.TemporaryFile() as saved:
        wb.save(saved)
        saved.seek(0)
        repack_to(saved, out, rewrite=charts)
