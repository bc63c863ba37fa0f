"""Each site's charts end at its horizon and carry the values they show (methodology §9)."""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree import ElementTree

import openpyxl
import pytest

from tests.tools.cells import read_cells
from tests.tools.once import build_once
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.files.safe_xlsx import parse_reference
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.workbook import build as wbm
from tokenfactory_xl.workbook.stencil import excel_serial

C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"


@pytest.fixture(scope="module")
def site48(tmp_path_factory):
    """A 48-month site's inputs, its workbook's bytes and the file holding them, built once
    per run: read them, never change the file."""
    inputs = make_inputs({"horizon_months": 48})

    def build(folder):
        path = folder / "site48.xlsx"
        path.write_bytes(template_bytes(inputs, risk_draws=300))
        return path

    path = build_once(tmp_path_factory, "site48", build)
    return inputs, path.read_bytes(), path


def charts(data: bytes) -> dict[str, ElementTree.Element]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: ElementTree.fromstring(z.read(n)) for n in z.namelist()
                if re.fullmatch(r"xl/charts/chart\d+\.xml", n)}


def test_month_series_end_at_the_horizon(site48):
    _, data, _ = site48
    timeline = [parse_reference(f.text) for chart in charts(data).values()
                for f in chart.iter(f"{C}f") if f.text.startswith("'Timeline'")]
    assert len(timeline) >= 4  # the Dashboard's revenue, EBITDA and cash flow, by month
    for sheet, cells in timeline:
        assert sheet == "Timeline" and cells[0].startswith("E")  # month 1
        assert len(cells) == 48 and cells[-1][: -len(cells[0][1:])] == "AZ"  # month 48: AZ


def test_every_series_caches_what_its_cells_store(site48):
    _, data, path = site48
    stored_cells = read_cells(path)  # every stored value, as openpyxl reads it (read-only)
    checked = 0
    for chart in charts(data).values():
        for ref in [*chart.iter(f"{C}numRef"), *chart.iter(f"{C}strRef")]:
            sheet, cells = parse_reference(ref.find(f"{C}f").text)
            cache = ref.find(f"{C}numCache") or ref.find(f"{C}strCache")
            assert cache is not None
            assert cache.find(f"{C}ptCount").get("val") == str(len(cells))
            points = {int(p.get("idx")): p.find(f"{C}v").text for p in cache.iter(f"{C}pt")}
            for i, coord in enumerate(cells):
                stored = stored_cells.get(sheet, coord)
                if stored in (None, "", "none"):
                    assert i not in points
                elif isinstance(stored, (int, float)):
                    assert float(points[i]) == pytest.approx(float(stored), rel=1e-12)
                elif hasattr(stored, "year"):
                    assert float(points[i]) == excel_serial(stored)
                else:
                    assert points[i] == str(stored)
                checked += 1
    assert checked > 48 * 4


def test_a_site_prints_what_the_template_prints(site48):
    # print areas do not depend on the horizon: the Timeline and IRR print no page
    _, data, _ = site48
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        xml = z.read("xl/workbook.xml").decode()
    areas = dict(re.findall(r"_xlnm.Print_Area\" localSheetId=\"\d+\">'?(\w+)'?!([^<]*)<", xml))
    assert areas["Timeline"] == areas["IRR"] == "$A$3"
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True)  # two sheets read
    assert book["Timeline"]["A3"].value is None and book["IRR"]["A3"].value is None


def test_other_references_are_kept_whole():
    assert wbm.timeline_cells("Capacity", ("A51", "A52"), 12) == ("A51", "A52")
    assert wbm.timeline_cells("Timeline", ("D5", "E5", "F5"), 1) == ("D5", "E5", "F5")
    assert wbm.timeline_cells("Timeline", ("E5", "F5", "G5"), 2) == ("E5", "F5")


def test_one_batch_draws_site_after_site_as_each_chart_read_afresh_does():
    # The batch cuts each chart at its series once and keeps each series' cells per horizon;
    # sites of other horizons after one another must get the charts that reading the chart's
    # XML afresh for each site gives (with_caches, as the portfolio writes its charts).
    from tokenfactory_xl.portfolio.batch import shared_factory
    from tokenfactory_xl.workbook.charts import with_caches
    from tokenfactory_xl.workbook.values import cell_values

    parts = shared_factory().charts
    for months in (48, 24, 48, 120):
        values = cell_values(wbm.plan(), make_inputs({"horizon_months": months}))

        def lookup(sheet, coord, values=values):
            return values.get(sheet, {}).get(coord, parts.static.get(sheet, {}).get(coord))

        def clip(sheet, cells, months=months):
            return wbm.timeline_cells(sheet, cells, months)

        drawn = parts.render(values, months)
        assert drawn.keys() == parts.charts.keys() and len(drawn) >= 2
        for name, xml in parts.charts.items():
            assert drawn[name] == with_caches(xml, lookup, clip).encode("utf-8"), (months, name)
        # the month series end at the site's horizon
        assert re.search(rf"'Timeline'!\$E\$\d+:\${_column(months)}\$\d+",
                         b"".join(drawn.values()).decode())


def _column(month: int) -> str:
    """The Timeline's column of ``month`` (month 1 in column E)."""
    from openpyxl.utils.cell import get_column_letter

    return get_column_letter(4 + month)
