"""The portfolio: every site of a batch on one row, so the sites can be compared and summed.

An operator with forty sites asks which of them clear their breakeven, how much EBITDA and NPV
the fleet adds up to, and where a TEF programme pays most. The portfolio answers with one row per
site: its name, the inputs that differ between the sites (``gpus`` always), and every summary
output of methodology section 7.

The workbook is laid out for readers of stored values as much as for people (docs/methodology.md
section 9). Its first sheet, ``Portfolio``, holds one Excel Table (``Sites``): one header row,
one row per site and nothing under it, so ``pandas.read_excel`` and Power Query read exactly the
sites. Each header is the catalogue's or the output's label with its unit, the currency put in
for "money" (``Revenue [USD]``, ``Blended price [USD/Mtok]``), and the column name a script uses
(``revenue_total``) in the header's comment; the summary CSV keeps those column names as its
header. Numbers keep every digit and are formatted; columns are wide enough for what they show.
An input that does not apply to a site is blank: the CapEx, salvage and depreciation life of a
rented fleet, the rent of an owned one (and the avoided CapEx of a rented fleet, which the spec
calls none). An output that does not exist (no IRR without a sign change, no payback within the
horizon) is blank too: an empty cell in the workbook, an empty field in the CSV.

The workbook opens on its second sheet, ``Summary``: the answer before the table. Its Excel
Table ``Totals`` sums what adds up across sites (GPUs, equivalent GPUs, avoided CapEx, tokens,
revenue, EBITDA, NPV), gives the portfolio's own ratio where one follows from the sums (EBITDA
margin = Σ EBITDA ÷ Σ revenue; cost per million tokens weighted by tokens sold; TEF and TFI now
weighted by theoretical capacity, gpus × theoretical_tps_per_gpu) and then lists the rest blank
with the reason (IRR, payback, ROI, prices, SLA, breakeven and economic life do not add up).
Money totals are blank when the sites use different currencies. Beside the totals a chart draws
TFI now against breakeven utilisation per site (a site whose TFI bar is shorter than its
breakeven bar loses money on every GPU-hour today), and with the risk columns a second one each
site's NPV from P10 to P90. Printed, the table is four A4 pages wide, each repeating the header
row and the site names; the summary one page wide.

Which columns the table has, what each cell holds and how the totals are made is
:mod:`tokenfactory_xl.portfolio.contents`'s; this module lays them out. :func:`write_portfolio` and
:func:`write_summary_csv` are used by ``tokenfactory-xl batch`` and by ``collect``; both write
atomically.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ..core.catalogue import BY_NAME
from ..files.disk import write_atomically
from ..tfom.inputs import NOTE
from ..workbook.charts import with_caches
from ..workbook.stencil import repack_to
from .contents import (
    APPLIES_WHEN,
    OUTPUT_COLUMNS,
    RISK_COLUMNS,
    Entry,
    applies,
    column_header,
    columns,
    currency_of,
    figures,
    headers,
    how_totalled,
    label_and_unit,
    live_scenarios,
    output_columns,
    output_of,
    site_summary,
    totals,
    value,
)
from .table_xml import TableRows

__all__ = [
    "PORTFOLIO_SHEET", "SUMMARY_SHEET", "TABLE_NAME", "CHART_SITES", "TABLE_PAGES_WIDE",
    "portfolio_bytes", "write_portfolio_to", "write_portfolio", "summary_csv_text",
    "write_summary_csv_to", "write_summary_csv", "shown_text",
    # the table's columns, values and totals (defined in portfolio.contents), read through this
    # module by those who take it for the portfolio
    "APPLIES_WHEN", "OUTPUT_COLUMNS", "RISK_COLUMNS", "Entry", "applies", "columns", "headers",
    "site_summary", "totals", "value",
]

#: The chart shows at most this many sites (a bar chart of thousands of sites is unreadable;
#: the table has them all).
CHART_SITES = 60
#: The Excel Table of the sites, on the first sheet.
TABLE_NAME = "Sites"
PORTFOLIO_SHEET = "Portfolio"
#: The sheet the portfolio opens on: the totals (an Excel Table named ``Totals``) and the charts.
SUMMARY_SHEET = "Summary"
#: Where the summary's charts start: right of the totals' four columns and a gap.
SUMMARY_CHARTS = "F1"
#: The table prints this many pages wide (each repeating the header row and the site names):
#: 67 columns on one page would print at a fifth of their size.
TABLE_PAGES_WIDE = 4

_OUTPUT_FORMATS = {"fraction": "0.0%", "money": "#,##0", "price": "#,##0.0000",
                   "tokens": "#,##0", "gpus": "#,##0.0", "months": "0.0", "ratio": "0.00"}
_INPUT_FORMATS = {"fraction": "0.0%", "integer": "#,##0", "number": "#,##0.00##",
                  "date": "yyyy-mm-dd"}
# A CSV opened in a spreadsheet turns text starting with one of these into a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Column widths, in Excel's units (about one character of the default font each).
_MIN_WIDTH, _MAX_WIDTH, _PADDING = 8, 60, 3


# -- how a column shows --------------------------------------------------------------------------
def _number_format(name: str) -> str:
    output = output_of(name)
    if output is not None:
        return _OUTPUT_FORMATS.get(output.kind, "General")
    base, _, suffix = name.partition(".")
    if suffix == NOTE:
        return "@"  # text, as typed
    return _INPUT_FORMATS.get(BY_NAME[base].kind, "General")


def shown_text(found: object, number_format: str) -> str:
    """About what Excel shows for ``found`` in ``number_format``, to size a column by."""
    if found is None:
        return ""
    if isinstance(found, str):
        return found
    if isinstance(found, dt.date):
        return found.isoformat()
    x = float(found)  # type: ignore[arg-type]
    spec, percent = _shown_spec(number_format)
    return f"{x * 100:{spec}}%" if percent else f"{x:{spec}}"


@functools.cache
def _shown_spec(number_format: str) -> tuple[str, bool]:
    """The Python format spec :func:`shown_text` shows a number in ``number_format`` with
    (its decimals, a thousands separator or not), and whether it is a percentage: read once a
    format, not once a cell."""
    if number_format.endswith("%"):
        decimals = len(number_format.split(".")[1]) - 1 if "." in number_format else 0
        return f",.{decimals}f", True
    decimals = len(number_format.split(".")[1]) if "." in number_format else 0
    return (f",.{decimals}f" if "," in number_format else f".{decimals}f"), False


def _width(longest_value: int, header_text: str) -> float:
    """A column wide enough for its longest shown value (``longest_value`` characters) and for
    the header's longest word (it wraps)."""
    longest_word = max((len(w) for w in header_text.split()), default=0)
    widest = max(longest_value, longest_word, _MIN_WIDTH - _PADDING)
    return float(min(_MAX_WIDTH, widest + _PADDING))


def _lines(text: str, width: float) -> int:
    """Lines ``text`` takes when wrapped at spaces into ``width`` characters."""
    lines, used = 1, 0
    for word in text.split():
        need = len(word) if used == 0 else used + 1 + len(word)
        if need > width - 1 and used:
            lines, used = lines + 1, len(word)
        else:
            used = need
    return lines


# -- the workbook --------------------------------------------------------------------------------
def portfolio_bytes(entries: Sequence[Entry]) -> bytes:
    """The portfolio workbook as ``.xlsx`` bytes (deterministic: same entries, same bytes)."""
    out = io.BytesIO()
    write_portfolio_to(out, entries)
    return out.getvalue()


def write_portfolio_to(out: BinaryIO, entries: Sequence[Entry]) -> None:
    """Write the portfolio workbook to ``out`` (the bytes of :func:`portfolio_bytes`).

    Each site's row is made once: its values sized for the column widths and written at once as
    the sheet's XML (:class:`~tokenfactory_xl.portfolio.table_xml.TableRows`) into a temporary
    file. openpyxl writes the rest (the header with its comments, the widths, the tables, the
    Summary sheet and its charts) around a table of the header alone; the rows are spliced into
    that sheet's file before openpyxl saves the workbook to a temporary file, repacked from
    there member by member, so a table of 10,000 sites is never held whole in memory.
    """
    from openpyxl import Workbook

    input_cols, output_cols = columns(entries)
    names = input_cols + output_cols
    currency = currency_of(entries)
    titles = headers(names, currency)
    formats = [_number_format(name) for name in names]
    n = len(entries)

    wb = Workbook(write_only=True)
    wb.properties.creator = "tokenfactory_xl"
    wb.properties.title = "TFOM portfolio"
    ws = wb.create_sheet(PORTFOLIO_SHEET)
    # The header's style is the workbook's first, as when its row is written first.
    header_row = _header_cells(ws, names, titles, currency)
    with (tempfile.TemporaryFile("w+", encoding="utf-8", errors="xmlcharrefreplace") as table,
          tempfile.TemporaryFile() as saved):  # both removed whatever happens
        # One pass over the sites: the column widths, the rows the charts show (their caches
        # read them), and each row's XML, written as made.
        widest = [0] * len(names)
        rows: list[list[object]] = []
        table_rows = TableRows(ws, formats)
        for number, (inputs, result) in enumerate(entries, start=2):
            flat = inputs.flat()
            summary = figures(result)
            row = [value(name, inputs, summary, flat) for name in names]
            for index, (found, fmt) in enumerate(zip(row, formats, strict=True)):
                widest[index] = max(widest[index], len(shown_text(found, fmt)))
            if len(rows) < CHART_SITES:
                rows.append(row)
            table.write(table_rows.row(number, row))

        _table_layout(ws, titles, widest)
        ws.append(header_row)
        _sites_table(ws, titles, n)

        scenarios = live_scenarios(entries)
        total = totals(entries, named=output_cols, one_currency=currency is not None,
                       scenarios=scenarios)
        summary_ws = _summary_sheet(wb, total, entries, currency, output_cols, scenarios)
        wb.active = 1  # the portfolio opens on its answer; the table stays the first sheet

        if n:
            _summary_charts(summary_ws, ws, names, n, currency)
        charts = _chart_caches(titles, rows) if n else {}
        wb.properties.created = dt.datetime(2000, 1, 1)
        ws.close()  # the sheet's file, the header row its only row: the sites' rows go in
        table.flush()
        # the temporary file openpyxl wrote the sheet into, which its save then reads
        _splice_rows(ws._writer.out, table.buffer)
        wb.save(saved)
        saved.seek(0)
        repack_to(saved, out, rewrite=charts)


def _table_layout(ws, titles: list[str], widest: list[int]) -> None:  # type: ignore[no-untyped-def]
    """The Portfolio sheet's panes, print setup, column widths (for the longest text a column
    shows, ``widest``) and the header row's height."""
    from openpyxl.utils import get_column_letter

    ws.freeze_panes = "B2"
    _page_setup(ws, landscape=True, pages_wide=TABLE_PAGES_WIDE)
    # each page repeats the header and the site names
    ws.print_title_rows = "1:1"
    ws.print_title_cols = "A:A"
    widths = []
    for index, title in enumerate(titles):
        width = _width(widest[index], title)
        widths.append(width)
        ws.column_dimensions[get_column_letter(index + 1)].width = width
    ws.row_dimensions[1].height = 15 * max(_lines(t, w) for t, w in zip(titles, widths,
                                                                         strict=True))


def _sites_table(ws, titles: list[str], n: int) -> None:  # type: ignore[no-untyped-def]
    """The Excel Table ``Sites`` over the header and the ``n`` sites' rows."""
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.filters import AutoFilter
    from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

    # A table needs a data row: with no site, the range is the header and one empty row.
    ref = f"A1:{get_column_letter(len(titles))}{max(n, 1) + 1}"
    sites = Table(displayName=TABLE_NAME, ref=ref, autoFilter=AutoFilter(ref=ref))
    sites.tableColumns = [TableColumn(id=i + 1, name=t) for i, t in enumerate(titles)]
    sites.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
    _add_table(ws, sites)


def _summary_charts(summary_ws, ws, names: list[str], n: int,  # type: ignore[no-untyped-def]
                    currency: str | None) -> None:
    """The Summary sheet's charts of the first :data:`CHART_SITES` of the ``n`` sites: TFI now
    against breakeven utilisation, and with the risk columns each site's NPV from P10 to P90."""
    from openpyxl.chart import BarChart, Reference

    chart = BarChart()
    chart.type = "bar"
    title = "TFI now against breakeven utilisation"
    chart.y_axis.title = "share of theoretical capacity"
    chart.y_axis.number_format = "0%"
    chart.y_axis.majorGridlines = None
    chart.x_axis.scaling.orientation = "maxMin"  # the first site on top, as in the table
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
    # beside the totals (a table of four columns), not the sites' table of sixty
    summary_ws.add_chart(chart, SUMMARY_CHARTS)
    if "npv_p10" in names:
        column = "".join(filter(str.isalpha, SUMMARY_CHARTS))
        summary_ws.add_chart(_risk_chart(ws, names, shown, n, currency),
                             f"{column}{int(chart.height * 2) + 3}")


def _chart_caches(titles: list[str], rows: list[list[object]]) -> dict:
    """The rewrite of each chart member that gives its series the values of the cells they read
    (the header's ``titles``, the first sites' ``rows``), for :func:`repack_to`."""
    from openpyxl.utils.cell import coordinate_to_tuple

    def shown_value(sheet: str, coord: str) -> object:
        """What a cell of the Portfolio sheet holds."""
        if sheet != PORTFOLIO_SHEET:
            return None
        r, c = coordinate_to_tuple(coord)
        if r == 1:
            return titles[c - 1] if c <= len(titles) else None
        return rows[r - 2][c - 1] if r - 2 < len(rows) and c <= len(titles) else None

    def cached(xml: bytes) -> bytes:
        return with_caches(xml.decode("utf-8"), shown_value).encode("utf-8")

    return {f"xl/charts/chart{i}.xml": cached for i in (1, 2)}


def _header_cells(ws, names: list[str], titles: list[str], currency: str | None) -> list:  # type: ignore[no-untyped-def]
    """The table's header row: bold titles, wrapped, each with its column name in a comment."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.comments import Comment
    from openpyxl.styles import Alignment, Font

    bold = Font(bold=True)
    cells = []
    for name, title in zip(names, titles, strict=True):
        cell = WriteOnlyCell(ws, value=title)
        cell.data_type = "s"
        cell.font = bold
        cell.alignment = Alignment(wrap_text=True, vertical="bottom")
        label, unit = label_and_unit(name, currency)
        cell.comment = Comment(f"{name}: {label}" + (f" [{unit}]" if unit else ""),
                               "tokenfactory_xl", width=240, height=50)
        cells.append(cell)
    # Its style registered now, before the rows' number formats: the workbook's first, as
    # when the header row is written before the rows.
    cells[0].style_id  # noqa: B018 (read for what reading it registers)
    return cells


def _splice_rows(sheet_file: str, rows: BinaryIO) -> None:
    """Put the table's rows (``rows``, XML from its start) into the worksheet file openpyxl
    wrote with the header row alone: after the header, before the end of its ``sheetData``."""
    with open(sheet_file, "rb") as handle:
        written = handle.read()  # small: the header row, the widths, the page set-up
    end = written.index(b"</sheetData>")
    rows.seek(0)
    with open(sheet_file, "wb") as handle:
        handle.write(written[:end])
        shutil.copyfileobj(rows, handle)
        handle.write(written[end:])


def _every_digit(cell) -> None:  # type: ignore[no-untyped-def]
    """Store a write-only cell's finite float with every digit (``repr``): openpyxl writes 16
    significant digits, and a portfolio's figures keep all of them."""
    if isinstance(cell.value, float) and math.isfinite(cell.value):
        cell._value = repr(cell.value)


def _risk_chart(ws, names: list[str], shown: int, n: int, currency: str | None):
    """Each site's NPV from P10 to P90 (a vertical line, as a high-low chart draws it) with its
    P50 (a tick)."""
    from openpyxl.chart import Reference, StockChart
    from openpyxl.chart.axis import ChartLines
    from openpyxl.chart.shapes import GraphicalProperties
    from openpyxl.drawing.line import LineProperties

    chart = StockChart()
    chart.title = "NPV P10 to P90 of each site, P50 marked" + (
        f" (first {shown} of {n} sites)" if n > shown else "")
    chart.y_axis.title = f"NPV [{currency}]" if currency else "NPV"
    chart.y_axis.number_format = "#,##0"
    chart.x_axis.tickLblPos = "low"  # the site names under the bars, below negative NPVs
    # a high-low-close chart: high (P90), low (P10), close (P50)
    for name in ("npv_p90", "npv_p10", "npv_p50"):
        col = names.index(name) + 1
        chart.add_data(Reference(ws, min_col=col, min_row=1, max_row=shown + 1),
                       titles_from_data=True)
        series = chart.series[-1]
        series.graphicalProperties.line.noFill = True  # no line from site to site
        series.marker.symbol = "dash" if name == "npv_p50" else "none"
        series.marker.size = 12
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=shown + 1))
    chart.hiLowLines = ChartLines(spPr=GraphicalProperties(ln=LineProperties(w=38100)))
    chart.height = 10
    chart.width = max(24.0, 0.8 * shown + 4)
    return chart


def _page_setup(ws, landscape: bool, pages_wide: int) -> None:
    """A4, ``pages_wide`` pages wide and as many long as it takes, numbered in the footer."""
    from openpyxl.worksheet.worksheet import Worksheet

    ws.page_setup.orientation = "landscape" if landscape else "portrait"
    ws.page_setup.paperSize = Worksheet.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = pages_wide
    ws.page_setup.fitToHeight = 0
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.oddFooter.center.text = "&A — page &P of &N"
    ws.oddFooter.center.size = 8


def _summary_sheet(wb, total: dict[str, float | None], entries: Sequence[Entry],
                   currency: str | None, named: Sequence[str] | None = None,
                   scenarios: dict[str, int] | None = None):
    """The sheet ``Summary``: the totals, one row per figure (label, total, how it is
    totalled), as the Excel Table ``Totals``; the caller draws the charts beside it.
    ``named`` and ``scenarios``: the sites' output columns and live scenarios, when the caller
    has them (found from ``entries`` otherwise)."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Alignment, Font
    from openpyxl.worksheet.filters import AutoFilter
    from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

    ws = wb.create_sheet(SUMMARY_SHEET)
    ws.freeze_panes = "A2"
    ws.sheet_view.tabSelected = True  # the tab it opens on (the workbook's active one)
    _page_setup(ws, landscape=True, pages_wide=1)
    ws.print_title_rows = "1:1"
    one_currency = currency is not None
    figures = [("sites", "Sites", float(len(entries)), "#,##0", "count of the sites"),
               ("gpus", column_header("gpus", currency), total.get("gpus"), _number_format("gpus"),
                "sum over the sites")]
    if scenarios is None:
        scenarios = live_scenarios(entries)
    # the figures that add up first, then those that do not (blank, with the reason)
    names = sorted(output_columns(entries) if named is None else named,
                   key=lambda name: total.get(name) is None)
    for name in names:
        figures.append((name, column_header(name, currency), total.get(name), _number_format(name),
                        how_totalled(name, total.get(name), one_currency, scenarios)))
    titles = ["Figure", "Portfolio total", "How it is totalled", "Column"]
    rows = [[label, found, how, name if name != "sites" else None]
            for name, label, found, _, how in figures]
    fmts = [fmt for *_, fmt, _ in figures]
    widths = [max(len(str(r[0])) for r in rows) + _PADDING,
              max([len(shown_text(r[1], f)) for r, f in zip(rows, fmts, strict=True)]
                  + [len(titles[1])]) + _PADDING,
              max(len(str(r[2])) for r in rows) + _PADDING,
              max(len(str(r[3] or "")) for r in rows) + _PADDING]
    for letter, width in zip("ABCD", widths, strict=True):
        ws.column_dimensions[letter].width = float(min(_MAX_WIDTH + 20, width))
    bold = Font(bold=True)
    cells = []
    for title in titles:
        cell = WriteOnlyCell(ws, value=title)
        cell.font = bold
        cell.alignment = Alignment(vertical="bottom")
        cells.append(cell)
    ws.append(cells)
    for row, fmt in zip(rows, fmts, strict=True):
        label, found, how, name = row
        cells = [WriteOnlyCell(ws, value=label), WriteOnlyCell(ws, value=found),
                 WriteOnlyCell(ws, value=how), WriteOnlyCell(ws, value=name)]
        for cell in (cells[0], cells[2], cells[3]):
            cell.data_type = "s"
        cells[1].number_format = fmt
        _every_digit(cells[1])
        ws.append(cells)
    ref = f"A1:D{len(rows) + 1}"
    table = Table(displayName="Totals", ref=ref, autoFilter=AutoFilter(ref=ref))
    table.tableColumns = [TableColumn(id=i + 1, name=t) for i, t in enumerate(titles)]
    table.tableStyleInfo = TableStyleInfo(name="TableStyleLight9", showRowStripes=True)
    _add_table(ws, table)
    return ws


def _add_table(ws, table) -> None:
    """Add ``table`` to a write-only sheet (its columns are set, so openpyxl's warning is moot)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ws.add_table(table)


def write_portfolio(path: str | os.PathLike, entries: Sequence[Entry]) -> Path:
    """Write the portfolio workbook to ``path`` atomically.

    Parameters
    ----------
    path : the ``.xlsx`` file to write (replaced if it exists: the caller checks ``--force``).
    entries : ``(SiteInputs, Result)`` per site, in the order of the rows.
    """
    return write_atomically(path, lambda handle: write_portfolio_to(handle, entries))


# -- the CSV -------------------------------------------------------------------------------------
def summary_csv_text(entries: Sequence[Entry]) -> str:
    """The portfolio table as CSV text: the column names as header, one row per site.

    The same columns and values as the workbook's table (an input that does not apply is an
    empty field); no totals row (tools sum themselves).
    """
    out = io.BytesIO()
    write_summary_csv_to(out, entries)
    return out.getvalue().decode("utf-8")


def write_summary_csv_to(out: BinaryIO, entries: Sequence[Entry]) -> None:
    """Write :func:`summary_csv_text` to ``out`` as UTF-8, row by row: the table of 10,000 sites
    is never held whole."""
    input_cols, output_cols = columns(entries)
    names = input_cols + output_cols
    text = io.TextIOWrapper(out, encoding="utf-8", newline="")
    try:
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(names)
        for inputs, result in entries:
            flat = inputs.flat()
            writer.writerow([_csv_field(value(n, inputs, figures(result), flat))
                             for n in names])
    finally:
        text.detach()  # written through; ``out`` stays open for its owner


def _csv_field(found: object) -> str:
    if found is None:
        return ""
    if isinstance(found, float):
        return repr(found) if math.isfinite(found) else ""
    if isinstance(found, dt.date):
        return found.isoformat()
    text = str(found)
    # A spreadsheet opening the CSV would run "=HYPERLINK(…)" as a formula; a leading
    # apostrophe is the spreadsheet's own "this is text" mark.
    return "'" + text if text.startswith(_FORMULA_START) else text


def write_summary_csv(path: str | os.PathLike, entries: Sequence[Entry]) -> Path:
    """Write the portfolio table as UTF-8 CSV to ``path`` atomically.

    Headers are the column names of the portfolio (``site_name``, ``npv`` …); ``None`` is an
    empty field; numbers have every digit (``repr``); text that a spreadsheet would take for a
    formula (starting with ``= + - @``) gets a leading apostrophe.
    """
    return write_atomically(path, lambda handle: write_summary_csv_to(handle, entries))
