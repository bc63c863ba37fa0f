"""The Actuals sheet of the TFOM workbook: measured TEF beside the plan's, month by month.

The model plans a TEF ramp; the serving stack measures throughput every week. ``tokenfactory-xl
track`` (:mod:`tokenfactory_xl.portfolio.track`) appends one dated row per measurement to this
sheet: the measured throughput, the TEF it is against cohort 1's theoretical TPS per GPU, the plan's
TEF for that month, the variance and the revenue the variance is worth at that month's price, with a
chart of plan against actual. The rows are values (what was measured, and the plan when the row
was added), like the Risk sheet's figures: no formula of the model reads them, so they never
change a figure of the model nor its master check.

The template holds the sheet with its header and an empty, formatted first row (whose cell
styles the rows written later take) and the chart; a tracked workbook differs from the template
only in this sheet's rows and the chart's ranges, so ``collect``'s audit still passes on it.

This module owns the layout, and reads and writes the rows in a workbook's zip without touching
any other part: the sheet's XML below its header, and the chart's series. XML is parsed with
defusedxml (no document type declarations): a workbook sent back by a site is untrusted.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import PurePosixPath
from xml.etree import ElementTree

import defusedxml.ElementTree as safe_et
from defusedxml import DefusedXmlException
from openpyxl.chart import LineChart, Reference
from openpyxl.chart.series import SeriesLabel
from openpyxl.worksheet.worksheet import Worksheet

from ..core.errors import TokenFactoryError
from ..files.a1 import column_letter
from ..files.ooxml import escape_text as escape
from ..files.ooxml import unescape_text
from . import style as st
from .plan import ACTUALS_SHEET
from .stencil import excel_serial

#: The chart sits above the table (which grows downward), from this row …
ACTUALS_CHART_ROW = 6
#: … and the table's header below it.
HEADER_ROW = 25
FIRST_ROW = HEADER_ROW + 1


@dataclass(frozen=True)
class Column:
    """One column of the Actuals table: its field name, header, unit and display kind."""

    name: str
    label: str
    unit: str
    kind: str  # a workbook_style number-format kind, or "text"


ACTUALS_COLUMNS: tuple[Column, ...] = (
    Column("month", "Month", "", "month"),
    Column("model_month", "Model month", "", "integer"),
    Column("measured_tps", "Measured TPS", "tokens/s", "tokens"),
    Column("gpus", "GPUs measured", "GPUs", "integer"),
    Column("tps_per_gpu", "Measured TPS per GPU", "tokens/s", "number"),
    Column("theoretical_tps_per_gpu", "Theoretical TPS per GPU, cohort 1", "tokens/s", "number"),
    Column("tef_actual", "TEF actual", "fraction", "fraction2"),
    Column("tef_plan", "TEF plan", "fraction", "fraction2"),
    Column("variance", "Variance, actual − plan", "fraction", "fraction2"),
    Column("revenue_worth", "Revenue the variance is worth", "money", "money"),
    Column("scenario", "Plan scenario", "", "text"),
    Column("source", "Source", "", "text"),
    Column("format", "Format", "", "text"),
    Column("fingerprint", "Fingerprint", "", "text"),
)
BY_FIELD = {c.name: c for c in ACTUALS_COLUMNS}
LAST_COLUMN = column_letter(len(ACTUALS_COLUMNS))
#: Where the chart's top left corner is.
CHART_ANCHOR = f"A{ACTUALS_CHART_ROW}"
#: The chart's series: (column, title). Plan first: the actual is drawn over it.
SERIES: tuple[tuple[str, str], ...] = (("tef_plan", "TEF plan"), ("tef_actual", "TEF actual"))

ACTUALS_NOTE = (
        "TEF actual = measured TPS per GPU ÷ cohort 1's theoretical TPS per GPU. Variance = "
        "actual − plan. The revenue the variance is worth = variance × the month's theoretical "
        "tokens × SLA × the plan's sell-through ÷ 10⁶ × the month's market price (as if every "
        "token it adds or loses found a buyer: no demand limit, no contract).")


def actuals_column(name: str) -> str:
    """The letter of the Actuals table's column of field ``name``."""
    return column_letter([c.name for c in ACTUALS_COLUMNS].index(name) + 1)


def header_text(column: Column, currency: str = "USD") -> str:
    unit = column.unit.replace("money", currency)
    return f"{column.label} [{unit}]" if unit else column.label


# -- the template's sheet --------------------------------------------------------------------------
def build_actuals_sheet(ws: Worksheet) -> None:
    """Lay out the empty sheet: title, note, header, one formatted empty row, the chart."""
    st.title(ws, ACTUALS_SHEET, "Plan against actual: measured TEF beside the plan's TEF, one row "
             "per measurement, added by tokenfactory-xl track WORKBOOK RESULT_FILE… (values: "
             "the plan as it was when each row was added).")
    ws["A4"] = ACTUALS_NOTE
    ws["A4"].font = st.NOTE_FONT
    st.header(ws, HEADER_ROW, [header_text(c) for c in ACTUALS_COLUMNS])
    for i, column in enumerate(ACTUALS_COLUMNS, start=1):
        cell = ws.cell(FIRST_ROW, i)
        cell.number_format = st.number_format(column.kind) if column.kind != "text" \
            else "General"
        cell.font = st.CALC_FONT if column.kind != "text" else st.NOTE_FONT
        cell.protection = st.LOCKED
    widths = {"A": 11, "B": 8, "F": 16, "K": 11, "L": 40, "M": 20, "N": 18}
    for i in range(1, len(ACTUALS_COLUMNS) + 1):
        letter = column_letter(i)
        ws.column_dimensions[letter].width = widths.get(letter, 14)
    ws.row_dimensions[HEADER_ROW].height = 60
    ws.add_chart(chart(ws), CHART_ANCHOR)
    st.print_setup(ws, fit_height=0)


def chart(ws: Worksheet) -> LineChart:
    """TEF plan and TEF actual by month (the template's ranges are the first row; ``track``
    sets them to the rows it writes)."""
    line = LineChart()
    line.title = "TEF: plan against actual"
    line.y_axis.title = "TEF"
    line.y_axis.number_format = "0%"
    # TEF runs from 0 to 100 %: an empty sheet's chart shows that span, not a spreadsheet's
    # guess (0 to 1,200 %); a measurement above 100 % lifts the top (:func:`chart_xml`)
    line.y_axis.scaling.min = 0
    line.y_axis.scaling.max = 1
    line.x_axis.number_format = "mmm yy"
    line.x_axis.title = "month measured"
    for name, title in SERIES:
        col = [c.name for c in ACTUALS_COLUMNS].index(name) + 1
        line.add_data(Reference(ws, min_col=col, min_row=FIRST_ROW, max_row=FIRST_ROW))
        series = line.series[-1]
        series.tx = SeriesLabel(v=title)
        series.marker.symbol = "circle"
        series.marker.size = 7
        series.smooth = False
    line.set_categories(Reference(ws, min_col=1, min_row=FIRST_ROW, max_row=FIRST_ROW))
    line.height, line.width = 9.5, 30
    return line


# -- the rows --------------------------------------------------------------------------------------
ActualsRow = dict[str, object]  # field name → value (the month as a date)


class NotATrackableWorkbook(TokenFactoryError, ValueError):
    """The file has no Actuals sheet laid out as this version writes it."""


@dataclass
class Parts:
    """The members of a workbook's zip that hold the Actuals sheet and its chart."""

    sheet: str
    charts: tuple[str, ...]
    shared_strings: tuple[str, ...]


_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
       "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
       "rel": "http://schemas.openxmlformats.org/package/2006/relationships"}


def _target(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    return str(PurePosixPath(base).parent.joinpath(target)).replace("/./", "/")


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def _rels(archive: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Relationship id → (type's last word, target member) of ``part``."""
    path = PurePosixPath(part)
    rels = f"{path.parent}/_rels/{path.name}.rels"
    if rels not in archive.namelist():
        return {}
    root = safe_et.fromstring(archive.read(rels))
    out = {}
    for rel in root.findall("rel:Relationship", _NS):
        if rel.get("TargetMode") == "External":
            continue
        out[rel.get("Id", "")] = (rel.get("Type", "").rsplit("/", 1)[-1],
                                  _normalise(_target(part, rel.get("Target", ""))))
    return out


def find_parts(archive: zipfile.ZipFile) -> Parts:
    """The Actuals sheet's member and its chart members; raises :class:`NotATrackableWorkbook`."""
    try:
        book = safe_et.fromstring(archive.read("xl/workbook.xml"))
    except KeyError:
        raise NotATrackableWorkbook("is not an Excel workbook (no xl/workbook.xml)") from None
    rels = _rels(archive, "xl/workbook.xml")
    sheet = None
    for element in book.iterfind("m:sheets/m:sheet", _NS):
        if element.get("name") == ACTUALS_SHEET:
            sheet = rels.get(element.get(f"{{{_NS['r']}}}id", ""), ("", ""))[1]
    if not sheet or sheet not in archive.namelist():
        raise NotATrackableWorkbook(
            f"has no {ACTUALS_SHEET} sheet: it was made by an older version of tokenfactory_xl; "
            "make it anew with `tokenfactory-xl refresh WORKBOOK` (it keeps the inputs), then "
            "track that")
    charts = []
    for kind, drawing in _rels(archive, sheet).values():
        if kind == "drawing":
            charts += [t for k, t in _rels(archive, drawing).values() if k == "chart"]
    strings = tuple(t for k, t in rels.values() if k == "sharedStrings")
    return Parts(sheet, tuple(charts), strings)


def _shared_strings(archive: zipfile.ZipFile, parts: Parts) -> list[str]:
    if not parts.shared_strings or parts.shared_strings[0] not in archive.namelist():
        return []
    root = safe_et.fromstring(archive.read(parts.shared_strings[0]))
    return ["".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t"))
            for si in root.findall("m:si", _NS)]


_SHEET_DATA = re.compile(rb"<(\w+:)?sheetData\b[^>]*?(/>|>(.*?)</\1?sheetData>)", re.S)
_ROW = re.compile(rb"<(\w+:)?row\b[^>]*?\br=\"(\d+)\"[^>]*?(/>|>.*?</\1?row>)", re.S)


def _cells_of(row_xml: bytes, strings: list[str]) -> dict[str, object]:
    """Column letter → value of one ``<row>`` (numbers as floats, text as str)."""
    text = row_xml.decode("utf-8")
    if ":row" in text.split(">", 1)[0]:
        prefix = text[1:text.index(":row")]
        text = re.sub(rf"<(/?){prefix}:", r"<\1", text)
    root = safe_et.fromstring(re.sub(r"<row\b", f'<row xmlns="{_NS["m"]}"', text, count=1))
    out: dict[str, object] = {}
    for c in root.findall("m:c", _NS):
        ref = c.get("r", "")
        letters = re.match(r"[A-Z]+", ref)
        if letters is None:
            continue
        kind = c.get("t", "n")
        v = c.find("m:v", _NS)
        if kind == "inlineStr":
            out[letters.group()] = "".join(t.text or "" for t in c.iter(f"{{{_NS['m']}}}t"))
        elif v is None or v.text is None:
            continue
        elif kind == "s":
            out[letters.group()] = strings[int(v.text)]
        elif kind in ("str", "e"):
            out[letters.group()] = v.text
        elif kind == "b":
            out[letters.group()] = v.text == "1"
        else:
            out[letters.group()] = float(v.text)
    return out


def _date(value: object) -> dt.date | None:
    if isinstance(value, float):
        return (dt.datetime(1899, 12, 30) + dt.timedelta(days=value)).date()
    return None


@dataclass
class ActualsSheet:
    """The Actuals sheet of one workbook: its rows as read, and what it needs to be rewritten."""

    parts: Parts
    xml: bytes
    rows: list[ActualsRow]
    styles: dict[str, str]  # column letter → the s attribute of the template's first row

    def fingerprints(self) -> dict[str, ActualsRow]:
        return {str(r["fingerprint"]): r for r in self.rows if r.get("fingerprint")}


def read_sheet(archive: zipfile.ZipFile) -> ActualsSheet:
    """The Actuals rows of a workbook's zip (raises :class:`NotATrackableWorkbook`)."""
    parts = find_parts(archive)
    xml = archive.read(parts.sheet)
    strings = _shared_strings(archive, parts)
    data = _SHEET_DATA.search(xml)
    if data is None:
        raise NotATrackableWorkbook(f"its {ACTUALS_SHEET} sheet has no table")
    styles: dict[str, str] = {}
    rows: list[ActualsRow] = []
    letters = [column_letter(i) for i in range(1, len(ACTUALS_COLUMNS) + 1)]
    header = None
    for match in _ROW.finditer(data.group(3) or b""):
        number = int(match.group(2))
        if number == HEADER_ROW:
            header = _cells_of(match.group(0), strings)
        if number < FIRST_ROW:
            continue
        if number == FIRST_ROW:
            styles = {m.group(1).decode(): m.group(2).decode() for m in re.finditer(
                rb'<(?:\w+:)?c\b[^>]*?\br="([A-Z]+)\d+"[^>]*?\bs="(\d+)"', match.group(0))}
            more = {m.group(2).decode(): m.group(1).decode() for m in re.finditer(
                rb'<(?:\w+:)?c\b[^>]*?\bs="(\d+)"[^>]*?\br="([A-Z]+)\d+"', match.group(0))}
            styles = {**more, **styles}
        cells = _cells_of(match.group(0), strings)
        if not cells:
            continue
        row: ActualsRow = {}
        for letter, column in zip(letters, ACTUALS_COLUMNS, strict=True):
            value = cells.get(letter)
            row[column.name] = _date(value) if column.name == "month" else value
        rows.append(row)
    if header is None or str(header.get("A", "")) != ACTUALS_COLUMNS[0].label or \
            not str(header.get(LAST_COLUMN, "")).startswith(ACTUALS_COLUMNS[-1].label):
        first = ", ".join(header_text(c) for c in ACTUALS_COLUMNS[:3])
        raise NotATrackableWorkbook(f"its {ACTUALS_SHEET} sheet's header is not the one this "
                                    f"version writes (row {HEADER_ROW}: {first} …)")
    return ActualsSheet(parts, xml, rows, styles)


def _cell(coord: str, value: object, style: str | None) -> str:
    s = f' s="{style}"' if style else ""
    if value is None or value == "":
        return f'<c r="{coord}"{s}/>' if style else ""
    if isinstance(value, dt.date):
        return f'<c r="{coord}"{s}><v>{excel_serial(value)!r}</v></c>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<c r="{coord}"{s}><v>{float(value)!r}</v></c>'
    text = escape(str(value))
    return f'<c r="{coord}"{s} t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'


def _row_xml(number: int, values: Sequence[object], styles: dict[str, str]) -> str:
    cells = "".join(_cell(f"{column_letter(i)}{number}", v,
                          styles.get(column_letter(i)))
                    for i, v in enumerate(values, start=1))
    return f'<row r="{number}">{cells}</row>'


def sheet_xml(sheet: ActualsSheet, rows: Sequence[ActualsRow], currency: str) -> bytes:
    """The sheet's XML with ``rows`` from :data:`FIRST_ROW` on and the header's currency;
    everything above the header kept byte for byte."""
    data = _SHEET_DATA.search(sheet.xml)
    assert data is not None
    kept, header_xml = [], b""
    for match in _ROW.finditer(data.group(3) or b""):
        number = int(match.group(2))
        if number < HEADER_ROW:
            kept.append(match.group(0))
        elif number == HEADER_ROW:
            header_xml = match.group(0)
    header_styles = {m.group(1).decode(): m.group(2).decode() for m in re.finditer(
        rb'<(?:\w+:)?c\b[^>]*?\br="([A-Z]+)\d+"[^>]*?\bs="(\d+)"', header_xml)}
    open_tag = re.match(rb"<(?:\w+:)?row\b[^>]*?>", header_xml)
    header_open = open_tag.group(0).decode() if open_tag else f'<row r="{HEADER_ROW}">'
    header = header_open + "".join(
        _cell(f"{column_letter(i)}{HEADER_ROW}", header_text(c, currency),
              header_styles.get(column_letter(i)))
        for i, c in enumerate(ACTUALS_COLUMNS, start=1)
    ) + "</row>"
    body = [_row_xml(FIRST_ROW + i, [row.get(c.name) for c in ACTUALS_COLUMNS], sheet.styles)
            for i, row in enumerate(rows)]
    if not rows:  # the template's empty, formatted row
        body = [_row_xml(FIRST_ROW, [None] * len(ACTUALS_COLUMNS), sheet.styles)]
    prefix = (data.group(1) or b"").decode()
    if prefix:  # a sheet saved with a namespace prefix: write our rows with it too
        header = re.sub(r"<(/?)(row|c|v|is|t)\b", rf"<\1{prefix}\2", header)
        body = [re.sub(r"<(/?)(row|c|v|is|t)\b", rf"<\1{prefix}\2", b) for b in body]
    inner = b"".join(kept) + header.encode("utf-8") + "".join(body).encode("utf-8")
    new_data = f"<{prefix}sheetData>".encode() + inner + f"</{prefix}sheetData>".encode()
    xml = sheet.xml[:data.start()] + new_data + sheet.xml[data.end():]
    last = FIRST_ROW + max(len(rows), 1) - 1
    return re.sub(rb'(<(?:\w+:)?dimension\b[^>]*?\bref=")[^"]*(")',
                  lambda m: m.group(1) + f"A1:{LAST_COLUMN}{last}".encode() + m.group(2),
                  xml, count=1)


_SERIES_REF = re.compile(
    r"<((?:\w+:)?)(numRef|strRef)><((?:\w+:)?)f>([^<]*)</\3f>(?:<\1(?:numCache|strCache)>.*?"
    r"</\1(?:numCache|strCache)>)?</\1\2>", re.S)
_ONE_COLUMN = re.compile(r"^(?:'?(?P<sheet>(?:[^']|'')+)'?!)?\$?(?P<col>[A-Z]+)\$?(?P<row>\d+)"
                         r"(?::\$?[A-Z]+\$?\d+)?$")


#: The TEF axis's fixed top (100 %), which a row above it removes.
_TOP_AT_ONE = re.compile(r'<(?:\w+:)?max val="1(?:\.0)?"\s*/>')


def chart_xml(xml: str, rows: Sequence[ActualsRow]) -> str:
    """The chart's XML with each series over the Actuals rows written (its title cell kept),
    each with a cache of its values (previewers draw the chart before any recalculation)."""
    count = max(len(rows), 1)
    by_letter = {actuals_column(c.name): c.name for c in ACTUALS_COLUMNS}

    def series(match: re.Match) -> str:
        p, kind, fp, ref = match.group(1), match.group(2), match.group(3), unescape_text(
            match.group(4))
        found = _ONE_COLUMN.match(ref)
        if found is None or (found.group("sheet") or ACTUALS_SHEET).replace("''", "'") \
                != ACTUALS_SHEET:
            return match.group(0)
        letter, first = found.group("col"), int(found.group("row"))
        name = by_letter.get(letter)
        if first < FIRST_ROW or name is None:  # not a column of the rows
            return match.group(0)
        values = [r.get(name) for r in rows] or [None]
        target = f"'{ACTUALS_SHEET}'!${letter}${FIRST_ROW}:${letter}${FIRST_ROW + count - 1}"
        if kind == "strRef":
            points = "".join(f'<{p}pt idx="{i}"><{p}v>{escape(str(v))}</{p}v></{p}pt>'
                             for i, v in enumerate(values) if v not in (None, ""))
            cache = f"<{p}strCache><{p}ptCount val=\"{count}\"/>{points}</{p}strCache>"
        else:
            code = "mmm yy" if name == "month" else "General"
            points = "".join(
                f'<{p}pt idx="{i}"><{p}v>{excel_serial(v) if isinstance(v, dt.date) else v!r}'
                f"</{p}v></{p}pt>" for i, v in enumerate(values)
                if isinstance(v, (int, float, dt.date)) and not isinstance(v, bool))
            cache = (f"<{p}numCache><{p}formatCode>{code}</{p}formatCode>"
                     f"<{p}ptCount val=\"{count}\"/>{points}</{p}numCache>")
        return f"<{p}{kind}><{fp}f>{escape(target)}</{fp}f>{cache}</{p}{kind}>"

    xml = _SERIES_REF.sub(series, xml)
    if any(isinstance(r.get(name), (int, float)) and r.get(name) > 1  # type: ignore[operator]
           for r in rows for name, _ in SERIES):
        xml = _TOP_AT_ONE.sub("", xml)  # the axis grows to show a TEF above 100 %
    return xml


def rewrite(data: bytes, rows: Sequence[ActualsRow], currency: str) -> bytes:
    """The workbook ``data`` with its Actuals rows replaced by ``rows`` (and the chart set to
    them): every other member of the zip keeps its bytes, name, order and date."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        sheet = read_sheet(archive)
        new = {sheet.parts.sheet: sheet_xml(sheet, rows, currency)}
        for name in sheet.parts.charts:
            new[name] = chart_xml(archive.read(name).decode("utf-8"), rows).encode("utf-8")
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for info in archive.infolist():
                body = new.get(info.filename)
                if body is None:
                    body = archive.read(info.filename)
                copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                copy.compress_type = info.compress_type
                copy.external_attr = info.external_attr
                target.writestr(copy, body)
    return out.getvalue()


def latest_actual(path: str | PathLike[str]) -> ActualsRow | None:
    """The latest row of a workbook's Actuals sheet (the latest month; of one month, the row
    written last), or ``None`` when it has none or no such sheet."""
    try:
        with zipfile.ZipFile(path) as archive:
            rows = read_sheet(archive).rows
    except (NotATrackableWorkbook, zipfile.BadZipFile, OSError, KeyError, ValueError,
            ElementTree.ParseError, DefusedXmlException):
        return None
    dated = [(r["month"], i) for i, r in enumerate(rows) if isinstance(r.get("month"), dt.date)]
    return rows[max(dated)[1]] if dated else None
