"""The portfolio workbook and CSV: one Excel Table of the sites that pandas and Power Query read
exactly, readable headers with units, blanks where an input does not apply, totals apart."""

from __future__ import annotations

import csv
import math
import re
import zipfile

import openpyxl
import pandas as pd
import pytest

from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.core.catalogue import BY_NAME
from tokenfactory_xl.portfolio import book as pf
from tokenfactory_xl.tfom.operating_model import BRIDGE_NAMES, OUTPUT_NAMES

INJECTION = '=HYPERLINK("http://x","y")'

#: pandas' two readers of .xlsx: openpyxl, its default until pandas 4, and calamine, its default
#: from then on; an analyst's ``pd.read_excel(path)`` must read the same table with either.
PANDAS_ENGINES = pytest.mark.parametrize("engine", ["openpyxl", "calamine"])


def site(name: str, gpus: int, **more) -> tuple:
    inputs = make_inputs({"site_name": name, "gpus": gpus, "measured_tps": gpus * 3000, **more},
                         bare="all")
    return inputs, run(inputs)


@pytest.fixture(scope="module")
def entries():
    """Three sites and their runs, made once for the module's tests: read them, never change
    them."""
    return [
        site(INJECTION, 1024),
        site("Rented", 2048, ownership="rent", rent_per_gpu_hour=2.4, tef_target=0.5),
        site("+cmd", 512, tef_target=0.5, horizon_months=36),
    ]


@pytest.fixture(scope="module")
def path(entries, tmp_path_factory):
    """Their portfolio, written once for the module's tests: read it, never change it."""
    return pf.write_portfolio(tmp_path_factory.mktemp("portfolio") / "portfolio.xlsx", entries)


def names_of(entries) -> list[str]:
    inputs, outputs = pf.columns(entries)
    return inputs + outputs


def table_rows(path) -> list[dict[str, object]]:
    """The rows of the first sheet's Excel Table, read as Power Query does: by its range."""
    ws = openpyxl.load_workbook(path).worksheets[0]
    (table,) = ws.tables.values()
    cells = [[c.value for c in row] for row in ws[table.ref]]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[1:]]


@PANDAS_ENGINES
def test_pandas_and_power_query_read_exactly_the_sites(entries, path, engine):
    # the first sheet, header row 1, as both tools default to
    frame = pd.read_excel(path, engine=engine)
    assert list(frame["Site name"]) == [i["site_name"] for i, _ in entries]
    assert frame["GPUs"].sum() == 1024 + 2048 + 512  # no totals row counted as a site
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws.title == "Portfolio" and list(ws.tables) == ["Sites"]
    last = openpyxl.utils.get_column_letter(len(names_of(entries)))
    assert ws.tables["Sites"].ref == f"A1:{last}4" and ws.max_row == 4
    assert [r["Site name"] for r in table_rows(path)] == [INJECTION, "Rented", "+cmd"]
    assert [c.name for c in ws.tables["Sites"].tableColumns] == list(frame.columns)


def test_headers_are_labels_with_units_and_the_names_in_comments(entries, path):
    ws = openpyxl.load_workbook(path).worksheets[0]
    header = [c.value for c in ws[1]]
    names = names_of(entries)
    differing = ["ownership", "capex_per_gpu", "salvage_per_gpu", "life_years",
                 "rent_per_gpu_hour", "measured_tps", "horizon_months", "tef_target.Base",
                 "tef_target.Optimised", "tef_target.Downside"]
    assert names[:2] == ["site_name", "gpus"]
    columns = [o.name for o in pf.OUTPUT_COLUMNS]
    assert columns == [*OUTPUT_NAMES, "npv_base", "npv_optimised", "npv_downside", "uplift_npv",
                       *BRIDGE_NAMES]
    assert sorted(names[2:-len(columns)]) == sorted(differing)
    assert names[-len(columns):] == columns  # every output, in the list's order, then scenarios
    assert header == pf.headers(names, "USD")
    for name, text in zip(names, header, strict=True):
        label = BY_NAME[name.split(".")[0]].label if name not in columns else \
            next(o.label for o in pf.OUTPUT_COLUMNS if o.name == name)
        assert text.startswith(label), (name, text)
    assert header[0] == "Site name" and header[1] == "GPUs"
    assert "Revenue [USD]" in header and "Blended price [USD/Mtok]" in header
    assert "CapEx per GPU [USD/GPU]" in header and "TEF target (Optimised) [fraction]" in header
    assert ws["A1"].comment.text.startswith("site_name: ")
    npv_col = header.index("NPV [USD]")
    assert ws.cell(row=1, column=npv_col + 1).comment.text == "npv: NPV [USD]"
    assert ws.freeze_panes == "B2"
    assert "NPV, Optimised [USD]" in header and "NPV uplift, Optimised − Base [USD]" in header


def test_each_scenario_npv_and_the_uplift_are_the_model_s(entries, path):
    # methodology §4.5: whatever the live scenario, the row carries the three NPVs and the uplift.
    header = pf.headers(names_of(entries), "USD")
    for row, (_, result) in zip(table_rows(path), entries, strict=True):
        for sc in ("Base", "Optimised", "Downside"):
            assert row[f"NPV, {sc} [USD]"] == result.scenarios[sc].summary["npv"]
        assert row["NPV uplift, Optimised − Base [USD]"] == result.uplift["npv"]
        assert row["NPV uplift, Optimised − Base [USD]"] == pytest.approx(
            result.scenarios["Optimised"].summary["npv"] - result.scenarios["Base"].summary["npv"])
        assert row["NPV [USD]"] == result.scenarios[result.scenario].summary["npv"]
    assert "NPV, Base [USD]" in header


def test_rows_hold_the_model_values_with_every_digit(entries, path):
    rows = table_rows(path)
    header = pf.headers(names_of(entries), "USD")
    for row, (inputs, result) in zip(rows, entries, strict=True):
        assert row["Site name"] == inputs["site_name"]
        for name, text in zip(names_of(entries), header, strict=True):
            if name in OUTPUT_NAMES and pf.applies(name, inputs):
                assert row[text] == result.summary[name], name  # exact, not 16 digits
    ws = openpyxl.load_workbook(path).worksheets[0]
    header_cells = {c.value: c.column for c in ws[1]}
    assert ws.cell(row=3, column=header_cells["ROI over the horizon [ratio]"]).value is None
    assert ws.cell(row=2, column=header_cells["NPV [USD]"]).number_format == "#,##0"
    assert ws.cell(row=2, column=header_cells["TEF now [fraction]"]).number_format == "0.0%"


def test_inputs_that_do_not_apply_are_blank(entries, path):
    owned, rented, _ = table_rows(path)
    for text in ("CapEx per GPU [USD/GPU]", "Salvage per GPU [USD/GPU]",
                 "Depreciation life [years]", "Buy instead of optimise: CapEx [USD]"):
        assert rented[text] is None, text
        assert owned[text] is not None, text
    assert owned["CapEx per GPU [USD/GPU]"] == 40_000  # the default of an owned fleet
    assert owned["Rent per GPU-hour [USD/GPU-h]"] is None
    assert rented["Rent per GPU-hour [USD/GPU-h]"] == 2.4


def test_all_rented_sites_have_no_capex_columns():
    rented = [site("A", 64, ownership="rent"), site("B", 128, ownership="rent")]
    inputs, _ = pf.columns(rented)
    assert inputs == ["site_name", "gpus", "measured_tps"]


def test_columns_are_wide_enough_and_headers_wrap_between_words(entries, path):
    ws = openpyxl.load_workbook(path).worksheets[0]
    for cells in ws.iter_cols(min_row=1, max_row=ws.max_row):
        width = ws.column_dimensions[cells[0].column_letter].width
        for cell in cells[1:]:
            shown = pf.shown_text(cell.value, cell.number_format)
            assert len(shown) + 1 < width, (cells[0].value, shown, width)
        assert max(len(w) for w in cells[0].value.split()) < width
        assert cells[0].alignment.wrap_text
    # 1024 GPUs × 60 months of tokens: the longest figure, "2,…" with 19 characters or more.
    tokens = ws.cell(row=2, column=[c.value for c in ws[1]].index("Tokens sold [tokens]") + 1)
    assert len(f"{tokens.value:,.0f}") >= 19
    assert ws.row_dimensions[1].height >= 30  # long headers take two lines or more


def test_site_names_stay_text_in_the_xml(path):
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws["A2"].value == INJECTION and ws["A2"].data_type == "s"
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in xml and "HYPERLINK" in xml


def test_the_portfolio_opens_on_its_summary(entries, path):
    # the table stays the first sheet (pandas and Power Query read it by default); the file
    # opens on the summary: the totals and the charts beside them
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["Portfolio", "Summary"]
    assert book.active.title == "Summary" and book.active.sheet_view.tabSelected
    assert not book["Portfolio"].sheet_view.tabSelected
    assert list(book["Summary"].tables) == ["Totals"]
    with zipfile.ZipFile(path) as z:
        rels = z.read("xl/worksheets/_rels/sheet2.xml.rels").decode()
        drawing = re.search(r'Target="\.\./drawings/(drawing\d+\.xml)"', rels).group(1)
        anchors = z.read(f"xl/drawings/{drawing}").decode()
    assert anchors.count("<xdr:graphicFrame") == 1  # the TFI chart (no risk columns here)
    # beside the totals' four columns: its anchor is column F (index 5)
    assert "<xdr:from><xdr:col>5</xdr:col>" in anchors
    # the totals that add up come first, under the count of the sites
    totals = pd.read_excel(path, sheet_name="Summary", engine="openpyxl")
    filled = list(totals["Portfolio total"].notna())
    assert filled == sorted(filled, reverse=True)


@PANDAS_ENGINES
def test_totals_are_on_their_own_sheet(entries, path, engine):
    totals = pd.read_excel(path, sheet_name="Summary", engine=engine)
    assert list(totals.columns) == ["Figure", "Portfolio total", "How it is totalled", "Column"]
    got = {c: t for c, t in zip(totals["Column"], totals["Portfolio total"], strict=True)
           if isinstance(c, str)}
    assert totals["Portfolio total"][0] == 3  # the sites
    assert got["gpus"] == 1024 + 2048 + 512
    for name in ("revenue_total", "ebitda_total", "npv", "tokens_sold_total"):
        assert got[name] == pytest.approx(sum(r.summary[name] for _, r in entries), rel=1e-12)
    # Avoided CapEx: the owned sites' (the rented fleet has none).
    assert got["avoided_capex"] == pytest.approx(
        entries[0][1].summary["avoided_capex"] + entries[2][1].summary["avoided_capex"])
    revenue = sum(r.summary["revenue_total"] for _, r in entries)
    ebitda = sum(r.summary["ebitda_total"] for _, r in entries)
    assert got["ebitda_margin"] == pytest.approx(ebitda / revenue, rel=1e-12)
    # TEF now of the whole fleet: measured over theoretical throughput, summed over sites.
    measured = sum(i["measured_tps"] for i, _ in entries)
    theoretical = sum(i["gpus"] * i["theoretical_tps_per_gpu"] for i, _ in entries)
    assert got["tef_now"] == pytest.approx(measured / theoretical, rel=1e-12)
    # Cost per million tokens of the fleet: every site's costs over every token sold.
    costs = sum(r.summary["cost_per_mtok"] * r.summary["tokens_sold_total"] / 1e6
                for _, r in entries)
    tokens = sum(r.summary["tokens_sold_total"] for _, r in entries)
    assert got["cost_per_mtok"] == pytest.approx(costs / (tokens / 1e6), rel=1e-12)
    for name in ("irr", "payback_months", "roi", "breakeven_util", "blended_price"):
        assert math.isnan(got[name]), name
    how = dict(zip(totals["Column"], totals["How it is totalled"], strict=True))
    assert how["irr"] == "blank: does not add up across sites"
    assert how["ebitda_margin"] == "Σ EBITDA ÷ Σ revenue"
    ws = openpyxl.load_workbook(path)["Summary"]
    assert list(ws.tables) == ["Totals"] and ws.tables["Totals"].ref == f"A1:D{len(totals) + 1}"


def test_money_totals_blank_across_currencies(entries):
    mixed = [*entries, site("Paris", 1024, currency="EUR")]
    total = pf.totals(mixed)
    assert total["npv"] is None and total["revenue_total"] is None
    assert total["gpus"] == 1024 + 2048 + 512 + 1024
    assert total["tokens_sold_total"] == pytest.approx(
        sum(r.summary["tokens_sold_total"] for _, r in mixed))
    assert pf.headers(["npv", "currency"], None) == ["NPV [money]", "Currency"]


def test_chart_compares_tfi_with_breakeven(entries, path):
    with zipfile.ZipFile(path) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        xml = z.read(charts[0]).decode()
    assert len(charts) == 1
    header = [c.value for c in openpyxl.load_workbook(path)["Portfolio"][1]]
    letter = openpyxl.utils.get_column_letter
    for text in ("TFI now [fraction]", "Breakeven utilisation (at today's price) [fraction]"):
        col = letter(header.index(text) + 1)
        assert f"'Portfolio'!${col}$2:${col}$4" in xml
    assert "'Portfolio'!$A$2:$A$4" in xml


def test_same_entries_same_bytes(entries, tmp_path):
    a = pf.write_portfolio(tmp_path / "a.xlsx", entries).read_bytes()
    b = pf.write_portfolio(tmp_path / "b.xlsx", entries).read_bytes()
    assert a == b


def test_summary_csv_is_the_table_under_the_column_names(entries, path, tmp_path):
    csv_path = pf.write_summary_csv(tmp_path / "summary.csv", entries)
    # written row by row: the same bytes as the text made whole
    assert csv_path.read_bytes() == pf.summary_csv_text(entries).encode("utf-8")
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    names = names_of(entries)
    assert list(rows[0]) == names
    for row, table_row in zip(rows, table_rows(path), strict=True):
        for name, text in zip(names, pf.headers(names, "USD"), strict=True):
            cell = table_row[text]
            if cell is None:
                assert row[name] == "", name
            elif isinstance(cell, (int, float)):
                assert float(row[name]) == cell, name
    # Text a spreadsheet would run as a formula carries the apostrophe that marks it as text.
    assert rows[0]["site_name"] == "'" + INJECTION and rows[2]["site_name"] == "'+cmd"
    assert rows[1]["site_name"] == "Rented" and rows[1]["roi"] == ""
    assert rows[1]["capex_per_gpu"] == "" and rows[0]["capex_per_gpu"] == "40000"


def test_writes_are_atomic(entries, tmp_path, monkeypatch):
    target = tmp_path / "portfolio.xlsx"
    target.write_bytes(b"previous")

    def broken(handle, _entries):  # the disk fills once part of the workbook is written
        handle.write(b"PK\x03\x04" + bytes(2 << 20))
        raise OSError("disk full")

    monkeypatch.setattr(pf, "write_portfolio_to", broken)
    with pytest.raises(OSError):
        pf.write_portfolio(target, entries)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["portfolio.xlsx"]


def test_non_finite_values_are_empty(entries):
    inputs, result = entries[0]
    summary = {**result.summary, "economic_life_months": math.inf}
    assert pf.value("economic_life_months", inputs, summary, {}) is None
    assert pf._csv_field(math.inf) == ""


def test_many_sites_chart_the_first_ones(tmp_path):
    many = [site(f"Site {i:03d}", 1024 + i) for i in range(pf.CHART_SITES + 5)]
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", many)
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws.max_row == len(many) + 1
    assert len(pd.read_excel(path, engine="calamine")) == len(many)
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/charts/chart1.xml").decode()
    assert f"first {pf.CHART_SITES} of {len(many)} sites" in xml
    assert f"$A$2:$A${pf.CHART_SITES + 1}" in xml


def test_the_charts_carry_the_values_they_show(entries, path):
    # A previewer draws a chart from its cache: each cache holds the table's cells.
    rows = table_rows(path)
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/charts/chart1.xml").decode()
    caches = re.findall(r"<(?:numRef|strRef)><f>([^<]*)</f><(?:num|str)Cache>(.*?)</(?:num|str)"
                        r"Cache>", xml)
    assert len(caches) == 6  # two series: a title, the site names, the values
    header = pf.headers(names_of(entries), "USD")
    for ref, cache in caches:
        points = re.findall(r"<pt idx=\"(\d+)\"><v>([^<]*)</v></pt>", cache)
        if ref.endswith("$1"):  # a series' title: its header
            col = header.index(points[0][1])
            assert points == [("0", header[col])]
        elif "$A$" in ref:
            assert [v for _, v in points] == [r["Site name"] for r in rows]
        else:  # a column of figures: TFI now or breakeven utilisation, exactly as stored
            values = [float(v) for _, v in points]
            assert any(values == [r[h] for r in rows] for h in header
                       if h.startswith(("TFI now", "Breakeven")))


def test_the_portfolio_prints_in_few_pages(soffice, entries, path, tmp_path):
    # the table four pages wide (a handful of sites: one page tall), the summary on one page
    import subprocess

    from tokenfactory_xl.engines.libreoffice import convert

    (pdf,) = convert([path], tmp_path / "pdf", "pdf")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    footers = re.findall(r"(\w+) — page \d+ of (\d+)", text)
    assert [sheet for sheet, _ in footers] == ["Portfolio"] * pf.TABLE_PAGES_WIDE + ["Summary"]
    assert {int(n) for _, n in footers} == {pf.TABLE_PAGES_WIDE + 1}
