"""The portfolio: every site of a batch on one row, so the sites can be compared and summed.

An operator with forty sites asks which of them clear their breakeven, how much EBITDA and NPV
the fleet adds up to, and where a TEF programme pays most. The portfolio answers with one row per
site: its name, the inputs that differ between the sites (``gpus`` always), and every summary
output of TFOM-SPEC section 7, followed by a totals row and a chart of TFI now against breakeven
utilisation per site (a site whose TFI bar is shorter than its breakeven bar loses money on every
GPU-hour today).

Column headers are exactly the catalogue's and the outputs' names (``site_name``, ``gpus``,
``tef_target.Optimised``, …, ``npv``, ``irr``, ``payback_months``) so that pandas, Power Query
or a script can rely on them; the label and unit a person reads are in each header's comment.
An output that does not exist (no IRR without a sign change, no payback within the horizon) is an
empty cell in the workbook and an empty field in the CSV.

The totals row sums what adds up across sites (GPUs, equivalent GPUs, avoided CapEx, tokens,
revenue, EBITDA, NPV), gives the portfolio's own ratio where one follows from the sums (EBITDA
margin = Σ EBITDA ÷ Σ revenue; cost per million tokens weighted by tokens sold; TEF and TFI now
weighted by theoretical capacity, gpus × theoretical_tps_per_gpu) and leaves the rest blank
(IRR, payback, ROI, prices, SLA, breakeven and economic life do not add up). Money totals are
blank when the sites use different currencies.

:func:`write_portfolio` and :func:`write_summary_csv` are used by ``tokenfactory-xl batch`` and
by ``collect``; both write atomically.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from .catalogue import BY_NAME
from .files import write_atomically
from .inputs import SiteInputs
from .operating_model import OUTPUTS
from .stencil import repack


class _HasSummary(Protocol):
    summary: dict[str, float | None]


#: One site of the portfolio: its inputs and its :class:`~tokenfactory_xl.operating_model.Result`
#: (only ``Result.summary`` is read, so a batch can pass results without monthly lines).
Entry = tuple[SiteInputs, _HasSummary]

#: The outputs the totals row sums.
SUMMED: frozenset[str] = frozenset({
    "equivalent_gpus", "avoided_capex", "tokens_sold_total", "revenue_total", "ebitda_total",
    "npv",
})
#: Outputs in money: their totals need one currency.
_MONEY = frozenset({"avoided_capex", "revenue_total", "ebitda_total", "npv"})
#: Inputs that are always columns, whether or not they differ between the sites.
ALWAYS: tuple[str, ...] = ("site_name", "gpus")
#: The chart shows at most this many sites (a bar chart of thousands of sites is unreadable;
#: the table has them all).
CHART_SITES = 60

_OUTPUT_FORMATS = {"fraction": "0.0%", "money": "#,##0", "price": "#,##0.0000",
                   "tokens": "#,##0", "gpus": "#,##0.0", "months": "0.0", "ratio": "0.00"}
_INPUT_FORMATS = {"fraction": "0.0%", "integer": "#,##0", "number": "#,##0.00##",
                  "date": "yyyy-mm-dd"}
# A CSV opened in a spreadsheet turns text starting with one of these into a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def columns(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    """The input columns (``site_name``, ``gpus``, then those that differ) and output columns."""
    flat = [inputs.flat() for inputs, _ in entries]
    names = list(flat[0]) if flat else list(ALWAYS)
    differ = [n for n in names if n not in ALWAYS and len({_key(f[n]) for f in flat}) > 1]
    return [*ALWAYS, *differ], [o.name for o in OUTPUTS]


def _key(value: object) -> object:
    return round(value, 12) if isinstance(value, float) else value


def totals(entries: Sequence[Entry]) -> dict[str, float | None]:
    """The totals row: sums, portfolio ratios and ``None`` where no total makes sense."""
    out: dict[str, float | None] = {o.name: None for o in OUTPUTS}
    if not entries:
        return out
    one_currency = len({inputs["currency"] for inputs, _ in entries}) == 1

    def values(name: str) -> list[float]:
        return [r.summary[name] for _, r in entries if r.summary[name] is not None]

    def weighted(name: str, weights: list[float]) -> float | None:
        pairs = [(r.summary[name], w) for (_, r), w in zip(entries, weights, strict=True)
                 if r.summary[name] is not None]
        total = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / total if pairs and total else None

    for name in SUMMED:
        if name in _MONEY and not one_currency:
            continue
        found = values(name)
        out[name] = math.fsum(found) if len(found) == len(entries) else None
    out["gpus"] = float(sum(inputs["gpus"] for inputs, _ in entries))  # type: ignore[misc]
    revenue, ebitda = out["revenue_total"], out["ebitda_total"]
    if one_currency and revenue and ebitda is not None:
        out["ebitda_margin"] = ebitda / revenue
    capacity = [float(i["gpus"]) * float(i["theoretical_tps_per_gpu"])  # type: ignore[arg-type]
                for i, _ in entries]
    out["tef_now"] = weighted("tef_now", capacity)
    out["tfi_now"] = weighted("tfi_now", capacity)
    if one_currency:
        tokens = [r.summary["tokens_sold_total"] or 0.0 for _, r in entries]
        out["cost_per_mtok"] = weighted("cost_per_mtok", tokens)
    return out


def _cell_value(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- the workbook --------------------------------------------------------------------------------
def portfolio_bytes(entries: Sequence[Entry]) -> bytes:
    """The portfolio workbook as ``.xlsx`` bytes (deterministic: same entries, same bytes)."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.utils import get_column_letter

    input_cols, output_cols = columns(entries)
    names = input_cols + output_cols
    wb = Workbook(write_only=True)
    wb.properties.creator = "tokenfactory_xl"
    wb.properties.title = "TFOM portfolio"
    ws = wb.create_sheet("Portfolio")
    ws.freeze_panes = "B2"
    ws.page_setup.orientation = "landscape"
    n = len(entries)
    last_row = n + 1
    ws.auto_filter.ref = f"A1:{get_column_letter(len(names))}{last_row}"
    ws.column_dimensions["A"].width = 28
    for index in range(2, len(names) + 1):
        ws.column_dimensions[get_column_letter(index)].width = 16

    outputs = {o.name: o for o in OUTPUTS}
    formats = []
    bold = Font(bold=True)
    header_fill = PatternFill("solid", fgColor="DDE4EE")
    header = []
    for name in names:
        if name in outputs:
            o = outputs[name]
            label, unit, fmt = o.label, o.unit, _OUTPUT_FORMATS.get(o.kind, "General")
        else:
            spec = BY_NAME[name.split(".", 1)[0]]
            scenario = name.partition(".")[2]
            label = spec.label + (f" ({scenario})" if scenario else "")
            unit, fmt = spec.unit, _INPUT_FORMATS.get(spec.kind, "@")
        formats.append(fmt)
        cell = WriteOnlyCell(ws, value=name)
        cell.font, cell.fill = bold, header_fill
        cell.alignment = Alignment(wrap_text=True)
        cell.comment = Comment(f"{label} [{unit}]", "tokenfactory_xl", width=220, height=50)
        header.append(cell)
    ws.append(header)

    for inputs, result in entries:
        flat = inputs.flat()
        row = []
        for name, fmt in zip(names, formats, strict=True):
            value = result.summary[name] if name in outputs else flat[name]
            cell = WriteOnlyCell(ws, value=None)
            if isinstance(value, str):
                # Set as text explicitly: openpyxl turns a str starting with "=" into a formula.
                cell.value = value
                cell.data_type = "s"
            else:
                cell.value = _cell_value(value)
                cell.number_format = fmt
            row.append(cell)
        ws.append(row)

    total = totals(entries)
    row = []
    for name, fmt in zip(names, formats, strict=True):
        value = "Portfolio total" if name == "site_name" else total.get(name)
        cell = WriteOnlyCell(ws, value=_cell_value(value))
        cell.font = bold
        if not isinstance(value, str):
            cell.number_format = fmt
        row.append(cell)
    ws.append(row)

    if n:
        chart = BarChart()
        chart.type = "bar"
        title = "TFI now against breakeven utilisation"
        chart.y_axis.title = "share of theoretical capacity"
        chart.y_axis.number_format = "0%"
        chart.y_axis.majorGridlines = None
        chart.x_axis.scaling.orientation = "maxMin"  # the first site on top, as in the table
        shown = min(n, CHART_SITES)
        for name in ("tfi_now", "breakeven_util"):
            col = names.index(name) + 1
            chart.add_data(Reference(ws, min_col=col, min_row=1, max_row=shown + 1),
                           titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=shown + 1))
        chart.height = max(9.0, 0.6 * shown + 3)
        chart.width = 24
        chart.title = title + (f" (first {shown} of {n} sites)" if n > shown else "")
        # A sheet of its own: beside a table of 40 columns the chart would be off screen.
        sheet = wb.create_sheet("Chart")
        sheet.page_setup.orientation = "landscape"
        sheet.sheet_properties.pageSetUpPr.fitToPage = True
        sheet.add_chart(chart, "A1")

    buffer = io.BytesIO()
    wb.properties.created = dt.datetime(2000, 1, 1)
    wb.save(buffer)

    cache: dict[int, dict[str, object]] = {}

    def exact(column: int, row: int) -> object:
        """The value of a table cell (1-based column, row): what openpyxl was given."""
        name = names[column - 1]
        if row == last_row + 1:
            return total.get(name)
        inputs, result = entries[row - 2]
        if name in outputs:
            return result.summary[name]
        if row not in cache:  # the cells come row by row: keep only the current row's inputs
            cache.clear()
            cache[row] = inputs.flat()
        return cache[row][name]

    return repack(buffer.getvalue(), rewrite={"xl/worksheets/sheet1.xml": lambda xml: (
        _every_digit(xml, exact))})


_NUMBER_CELL = re.compile(rb'<c r="([A-Z]+)(\d+)"([^>]*)><v>([^<]*)</v></c>')


def _every_digit(xml: bytes, exact) -> bytes:
    """The sheet with each number as ``repr`` writes it: openpyxl keeps only 16 digits."""
    from openpyxl.utils import column_index_from_string

    def one(match: re.Match) -> bytes:
        if b't="n"' not in match.group(3):
            return match.group(0)
        value = exact(column_index_from_string(match.group(1).decode()), int(match.group(2)))
        if not isinstance(value, float) or not math.isfinite(value):
            return match.group(0)
        return (b'<c r="' + match.group(1) + match.group(2) + b'"' + match.group(3) + b"><v>"
                + repr(value).encode() + b"</v></c>")

    return _NUMBER_CELL.sub(one, xml)


def write_portfolio(path: str | os.PathLike, entries: Sequence[Entry]) -> Path:
    """Write the portfolio workbook to ``path`` atomically.

    Parameters
    ----------
    path : the ``.xlsx`` file to write (replaced if it exists: the caller checks ``--force``).
    entries : ``(SiteInputs, Result)`` per site, in the order of the rows.
    """
    return write_atomically(path, portfolio_bytes(entries))


# -- the CSV -------------------------------------------------------------------------------------
def summary_csv_text(entries: Sequence[Entry]) -> str:
    """The portfolio table as CSV text: one row per site, no totals row (tools sum themselves)."""
    input_cols, output_cols = columns(entries)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(input_cols + output_cols)
    for inputs, result in entries:
        flat = inputs.flat()
        row = [_csv_field(flat[c]) for c in input_cols]
        row += [_csv_field(result.summary[c]) for c in output_cols]
        writer.writerow(row)
    return out.getvalue()


def _csv_field(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value)
    # A spreadsheet opening the CSV would run "=HYPERLINK(…)" as a formula; a leading
    # apostrophe is the spreadsheet's own "this is text" mark.
    return "'" + text if text.startswith(_FORMULA_START) else text


def write_summary_csv(path: str | os.PathLike, entries: Sequence[Entry]) -> Path:
    """Write the portfolio table as UTF-8 CSV to ``path`` atomically.

    Headers are the column names of the portfolio; ``None`` is an empty field; numbers have
    every digit (``repr``); text that a spreadsheet would take for a formula (starting with
    ``= + - @``) gets a leading apostrophe.
    """
    return write_atomically(path, summary_csv_text(entries).encode("utf-8"))
