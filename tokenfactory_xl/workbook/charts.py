"""Each site's charts: the month axis ends at the site's horizon, and every series
carries a cache of the values it shows.

The template's charts are drawn once, for the longest horizon. A site's workbook rewrites them
(as the stencil fills its cells, methodology §9): a series over the Timeline's months stops at the
site's last month, so a 48-month site's charts end at month 48 in Excel and in LibreOffice, and
each reference gets the values it points at as a cache (``numCache``/``strCache``), which
previewers and Excel show before any recalculation. The values come from the same
:func:`.values.cell_values` the cells store.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping

from ..files.a1 import absolute
from ..files.ooxml import escape_text as escape
from ..files.ooxml import unescape_text
from .stencil import Stencil, excel_serial

#: A series' reference inside a chart, as openpyxl writes it.
_REF = re.compile(r"<(numRef|strRef)><f>([^<]*)</f></\1>")
_CHART = re.compile(r"xl/charts/chart\d+\.xml")
_DATE_FORMAT = "mmm yy"

#: A reference and the site's horizon → the cells the site's chart shows (the same, or fewer).
Clip = Callable[[str, tuple[str, ...], int], tuple[str, ...]]


class ChartParts:
    """The template's charts, ready to be written for each site.

    Parameters
    ----------
    stencil : the template's stencil (its chart members are read from it).
    static : sheet → coordinate → value of the template cells a chart reads that no site
        changes (a series' title, a label column).
    clip : the cells a reference keeps for a horizon.
    """

    def __init__(self, stencil: Stencil, static: Mapping[str, Mapping[str, object]], clip: Clip):
        self.charts = {name: stencil.member(name).decode("utf-8")
                       for name in stencil.members if _CHART.fullmatch(name)}
        self.static = static
        self.clip = clip

    def references(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every (sheet, cells) the charts read."""
        from ..files.safe_xlsx import parse_reference

        found = []
        for xml in self.charts.values():
            for match in _REF.finditer(xml):
                parsed = parse_reference(_unescape(match.group(2)))
                if parsed is not None:
                    found.append(parsed)
        return found

    def render(self, values: Mapping[str, Mapping[str, object]], horizon: int) -> dict[str, bytes]:
        """Member name → the site's chart XML."""

        def lookup(sheet: str, coord: str) -> object:
            return values.get(sheet, {}).get(coord, self.static.get(sheet, {}).get(coord))

        def clip(sheet: str, cells: tuple[str, ...]) -> tuple[str, ...]:
            return self.clip(sheet, cells, horizon)

        # Speed: the charts are the same for every site; each is cut at its series once
        # (:class:`_Chart`), and each series' cells for a horizon found once, both kept with
        # the charts between runs (:mod:`tokenfactory_xl.files.build_cache`).
        charts = self.__dict__.get("_cut")
        if charts is None:
            charts = self._cut = {name: _Chart(xml) for name, xml in self.charts.items()}
        return {name: chart.render(lookup, clip, horizon).encode("utf-8")
                for name, chart in charts.items()}



class _Chart:
    """A chart's XML cut at each series reference: ``texts[i]`` precedes ``series[i]`` (kind,
    sheet, cells, whether it is the category axis); the last text follows the last series."""

    def __init__(self, xml: str):
        from ..files.safe_xlsx import parse_reference

        self.texts: list[str] = []
        self.series: list[tuple[str, str, tuple[str, ...], bool]] = []
        start = 0
        for match in _REF.finditer(xml):
            parsed = parse_reference(_unescape(match.group(2)))
            if parsed is None:  # kept as it is, as :func:`with_caches` keeps it
                continue
            self.texts.append(xml[start:match.start()])
            self.series.append((match.group(1), *parsed, _in_category(match)))
            start = match.end()
        self.texts.append(xml[start:])
        self._clipped: dict[tuple[int, int], tuple[tuple[str, ...], str]] = {}

    def render(self, lookup: Callable[[str, str], object],
               clip: Callable[[str, tuple[str, ...]], tuple[str, ...]], horizon: int) -> str:
        """The chart's XML, each series with the cells ``clip`` keeps for ``horizon`` and a
        cache of what ``lookup`` says they hold (:func:`with_caches`)."""
        out = [self.texts[0]]
        for i, (kind, sheet, cells, in_category) in enumerate(self.series):
            clipped = self._clipped.get((i, horizon))
            if clipped is None:
                kept = clip(sheet, cells)
                clipped = self._clipped[i, horizon] = (kept, _reference(sheet, kept))
            out.append(_series_xml(kind, sheet, *clipped, in_category, lookup))
            out.append(self.texts[i + 1])
        return "".join(out)


def with_caches(xml: str, lookup: Callable[[str, str], object],
                clip: Callable[[str, tuple[str, ...]], tuple[str, ...]] | None = None) -> str:
    """A chart's XML with each series reference given a cache of the values ``lookup(sheet,
    coordinate)`` says its cells hold (and cut by ``clip`` first, when given)."""
    return _REF.sub(lambda m: _series(m, lookup, clip), xml)


def _series(match: re.Match, lookup: Callable[[str, str], object],
            clip: Callable[[str, tuple[str, ...]], tuple[str, ...]] | None) -> str:
    from ..files.safe_xlsx import parse_reference  # not for a site's charts: they are cut once

    kind, text = match.group(1), _unescape(match.group(2))
    parsed = parse_reference(text)
    if parsed is None:
        return match.group(0)
    sheet, cells = parsed
    if clip is not None:
        cells = clip(sheet, cells)
    return _series_xml(kind, sheet, cells, _reference(sheet, cells), _in_category(match), lookup)


def _in_category(match: re.Match) -> bool:
    """Whether a series reference is its chart's categories (the axis labels)."""
    return match.string[max(0, match.start() - 5):match.start()] == "<cat>"


def _series_xml(kind: str, sheet: str, cells: tuple[str, ...], ref: str, in_category: bool,
                lookup: Callable[[str, str], object]) -> str:
    """A series reference ``ref`` to ``cells`` with a cache of the values they hold."""
    shown = [lookup(sheet, c) for c in cells]
    if kind == "strRef" or (in_category and any(isinstance(v, str) and v not in ("", "none")
                                                for v in shown)):
        points = "".join(f'<pt idx="{i}"><v>{escape(_text(v))}</v></pt>'
                         for i, v in enumerate(shown) if _text(v) != "")
        return (f"<strRef><f>{escape(ref)}</f><strCache><ptCount val=\"{len(cells)}\"/>"
                f"{points}</strCache></strRef>")
    dates = any(isinstance(v, dt.date) for v in shown)
    points = "".join(f'<pt idx="{i}"><v>{number}</v></pt>'
                     for i, v in enumerate(shown) if (number := _number(v)) is not None)
    code = _DATE_FORMAT if dates else "General"
    return (f"<numRef><f>{escape(ref)}</f><numCache><formatCode>{code}</formatCode>"
            f"<ptCount val=\"{len(cells)}\"/>{points}</numCache></numRef>")


_unescape = unescape_text


def _reference(sheet: str, cells: tuple[str, ...]) -> str:
    quoted = "'" + sheet.replace("'", "''") + "'"
    if len(cells) == 1:
        return f"{quoted}!{absolute(cells[0])}"
    return f"{quoted}!{absolute(cells[0])}:{absolute(cells[-1])}"


def _number(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return repr(excel_serial(value))
    if isinstance(value, (int, float)) and math.isfinite(value):
        return repr(float(value))
    return None


def _text(value: object) -> str:
    if value is None or value == "none":
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
