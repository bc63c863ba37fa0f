"""The portfolio workbook and CSV: one row per site, names other tools rely on, honest totals."""

from __future__ import annotations

import csv
import math
import zipfile

import openpyxl
import pytest

from tokenfactory_xl import make_inputs, run
from tokenfactory_xl import portfolio as pf
from tokenfactory_xl.operating_model import OUTPUT_NAMES

INJECTION = '=HYPERLINK("http://x","y")'


def site(name: str, gpus: int, **more) -> tuple:
    inputs = make_inputs({"site_name": name, "gpus": gpus, "measured_tps": gpus * 3000, **more},
                         bare="all")
    return inputs, run(inputs)


@pytest.fixture()
def entries():
    return [
        site(INJECTION, 1024),
        site("Rented", 2048, ownership="rent", rent_per_gpu_hour=2.4),
        site("+cmd", 512, tef_target=0.5, horizon_months=36),
    ]


def test_columns_are_the_catalogue_and_output_names(entries, tmp_path):
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", entries)
    ws = openpyxl.load_workbook(path).active
    header = [c.value for c in ws[1]]
    differing = ["ownership", "rent_per_gpu_hour", "measured_tps", "horizon_months",
                 "tef_target.Base", "tef_target.Optimised", "tef_target.Downside"]
    assert header[:2] == ["site_name", "gpus"]
    assert sorted(header[2:-len(OUTPUT_NAMES)]) == sorted(differing)
    assert header[-len(OUTPUT_NAMES):] == list(OUTPUT_NAMES)
    assert ws.freeze_panes == "B2"
    assert ws["B1"].comment is not None and "GPUs" in ws["B1"].comment.text


def test_rows_hold_the_model_values_none_as_empty(entries, tmp_path):
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", entries)
    ws = openpyxl.load_workbook(path).active
    header = [c.value for c in ws[1]]
    for row, (inputs, result) in zip(ws.iter_rows(min_row=2, max_row=4), entries, strict=True):
        cells = dict(zip(header, row, strict=True))
        assert cells["site_name"].value == inputs["site_name"]
        for name in OUTPUT_NAMES:
            assert cells[name].value == result.summary[name], name
    rented = dict(zip(header, ws[3], strict=True))
    assert rented["roi"].value is None       # no CapEx, no ROI
    assert rented["npv"].number_format == "#,##0"
    assert rented["tef_now"].number_format == "0.0%"


def test_site_names_stay_text_in_the_xml(entries, tmp_path):
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", entries)
    ws = openpyxl.load_workbook(path).active
    assert ws["A2"].value == INJECTION and ws["A2"].data_type == "s"
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in xml and "HYPERLINK" in xml


def test_totals_sum_what_adds_up(entries, tmp_path):
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", entries)
    ws = openpyxl.load_workbook(path).active
    header = [c.value for c in ws[1]]
    total = {h: c.value for h, c in zip(header, ws[5], strict=True)}
    assert total["site_name"] == "Portfolio total"
    assert total["gpus"] == 1024 + 2048 + 512
    for name in ("revenue_total", "ebitda_total", "npv", "tokens_sold_total", "avoided_capex"):
        assert total[name] == pytest.approx(sum(r.summary[name] for _, r in entries), rel=1e-12)
    revenue = sum(r.summary["revenue_total"] for _, r in entries)
    ebitda = sum(r.summary["ebitda_total"] for _, r in entries)
    assert total["ebitda_margin"] == pytest.approx(ebitda / revenue, rel=1e-12)
    # TEF now of the whole fleet: measured over theoretical throughput, summed over sites.
    measured = sum(i["measured_tps"] for i, _ in entries)
    theoretical = sum(i["gpus"] * i["theoretical_tps_per_gpu"] for i, _ in entries)
    assert total["tef_now"] == pytest.approx(measured / theoretical, rel=1e-12)
    # Cost per million tokens of the fleet: every site's costs over every token sold.
    costs = sum(r.summary["cost_per_mtok"] * r.summary["tokens_sold_total"] / 1e6
                for _, r in entries)
    tokens = sum(r.summary["tokens_sold_total"] for _, r in entries)
    assert total["cost_per_mtok"] == pytest.approx(costs / (tokens / 1e6), rel=1e-12)
    for name in ("irr", "payback_months", "roi", "breakeven_util", "blended_price"):
        assert total[name] is None


def test_money_totals_blank_across_currencies(entries):
    mixed = [*entries, site("Paris", 1024, currency="EUR")]
    total = pf.totals(mixed)
    assert total["npv"] is None and total["revenue_total"] is None
    assert total["gpus"] == 1024 + 2048 + 512 + 1024
    assert total["tokens_sold_total"] == pytest.approx(
        sum(r.summary["tokens_sold_total"] for _, r in mixed))


def test_chart_compares_tfi_with_breakeven(entries, tmp_path):
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", entries)
    with zipfile.ZipFile(path) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        xml = z.read(charts[0]).decode()
    assert len(charts) == 1
    header = [c.value for c in openpyxl.load_workbook(path).active[1]]
    letter = openpyxl.utils.get_column_letter
    for name in ("tfi_now", "breakeven_util"):
        col = letter(header.index(name) + 1)
        assert f"'Portfolio'!${col}$2:${col}$4" in xml
    assert "'Portfolio'!$A$2:$A$4" in xml


def test_same_entries_same_bytes(entries, tmp_path):
    a = pf.write_portfolio(tmp_path / "a.xlsx", entries).read_bytes()
    b = pf.write_portfolio(tmp_path / "b.xlsx", entries).read_bytes()
    assert a == b


def test_summary_csv(entries, tmp_path):
    path = pf.write_summary_csv(tmp_path / "summary.csv", entries)
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(entries)
    assert list(rows[0])[:2] == ["site_name", "gpus"]
    assert list(rows[0])[-len(OUTPUT_NAMES):] == list(OUTPUT_NAMES)
    for row, (_, result) in zip(rows, entries, strict=True):
        for name in OUTPUT_NAMES:
            value = result.summary[name]
            assert row[name] == "" if value is None else float(row[name]) == value, name
    # Text a spreadsheet would run as a formula carries the apostrophe that marks it as text.
    assert rows[0]["site_name"] == "'" + INJECTION and rows[2]["site_name"] == "'+cmd"
    assert rows[1]["site_name"] == "Rented" and rows[1]["roi"] == ""


def test_writes_are_atomic(entries, tmp_path, monkeypatch):
    target = tmp_path / "portfolio.xlsx"
    target.write_bytes(b"previous")

    def broken(_entries):
        raise OSError("disk full")

    monkeypatch.setattr(pf, "portfolio_bytes", broken)
    with pytest.raises(OSError):
        pf.write_portfolio(target, entries)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["portfolio.xlsx"]


def test_non_finite_values_are_empty(entries):
    inputs, result = entries[0]
    result.summary["economic_life_months"] = math.inf
    assert pf._csv_field(result.summary["economic_life_months"]) == ""


def test_many_sites_chart_the_first_ones(tmp_path):
    many = [site(f"Site {i:03d}", 1024 + i) for i in range(pf.CHART_SITES + 5)]
    path = pf.write_portfolio(tmp_path / "portfolio.xlsx", many)
    ws = openpyxl.load_workbook(path).worksheets[0]
    assert ws.max_row == len(many) + 2
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/charts/chart1.xml").decode()
    assert f"first {pf.CHART_SITES} of {len(many)} sites" in xml
    assert f"$A$2:$A${pf.CHART_SITES + 1}" in xml
