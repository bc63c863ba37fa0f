"""The portfolio's table written as text is the table openpyxl writes, byte for byte.

:mod:`tokenfactory_xl.portfolio.table_xml` writes the Portfolio sheet's rows itself and
:mod:`tokenfactory_xl.portfolio.book` splices them into the sheet openpyxl writes around them.
These tests hold the result to openpyxl writing every cell (``tests/openpyxl_portfolio.py``, the
way the portfolio was written before): whole files, every member, its order and the zip's
metadata, over sites with hostile names and notes, owned and rented fleets, blanks, missing
outputs, mixed currencies, risk, "what must be true" and actual columns, no site at all and more
sites than the charts show; and each kind of cell value on its own, against openpyxl's writer.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
import types

import numpy as np
import pytest
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.utils.exceptions import IllegalCharacterError

from tests import openpyxl_portfolio as oracle
from tokenfactory_xl import make_inputs, run
from tokenfactory_xl.portfolio import book
from tokenfactory_xl.portfolio.contents import ACTUAL_COLUMNS, RISK_COLUMNS, site_summary
from tokenfactory_xl.portfolio.table_xml import TableRows

HOSTILE = ['=HYPERLINK("http://x","y")', "+cmd", "-2+3", "@SUM(A1)", '<&>"\'', "]]> &amp;",
           "Zürich 🚀 数据中心", "#N/A", "=", "x" * 76]


def site(name: str, gpus: int, **more):
    inputs = make_inputs({"site_name": name, "gpus": gpus, "measured_tps": gpus * 3000, **more},
                         bare="all")
    return inputs, run(inputs)


def slim(inputs, summary: dict):
    """An entry as a batch passes it: the inputs and a result holding only its summary."""
    return inputs, types.SimpleNamespace(summary=summary)


@pytest.fixture(scope="module")
def runs():
    """Sites of every kind, run once for the module: read them, never change them."""
    return [
        site(HOSTILE[0], 1024, **{"gpus.note": "PO 4411 <signed>\nby \"finance\" & legal"}),
        site(HOSTILE[1], 2048, ownership="rent", rent_per_gpu_hour=2.4, tef_target=0.5,
             start_date="2028-03-01"),
        site(HOSTILE[2], 512, tef_target=0.5, horizon_months=36, gpu_model="B200 <NVL72>"),
        site(HOSTILE[3], 256, measured_tps=1000, horizon_months=24, tef_target=0.01),  # no payback
        site(HOSTILE[4], 4096, ownership="rent", rent_per_gpu_hour=3.1, scenario="Optimised"),
        site(HOSTILE[5], 8192, capex_per_gpu=1, **{"capex_per_gpu.note": "  spaced  "}),
        site(HOSTILE[6], 300, availability=0.999, pue=1.1),
        site(HOSTILE[7], 64, life_years=7, salvage_per_gpu=0),
    ]


def same_bytes(entries) -> None:
    new, old = book.portfolio_bytes(entries), oracle.portfolio_bytes(entries)
    assert new == old, "the portfolio differs from openpyxl's"


def test_varied_sites_give_openpyxl_s_bytes(runs):
    assert any(s.summary["payback_months"] is None for _, s in runs)  # a blank output
    same_bytes(runs)


def test_one_site_and_no_site_give_openpyxl_s_bytes(runs):
    same_bytes(runs[:1])
    same_bytes(runs[4:5])  # rented, Optimised
    same_bytes([])


def test_mixed_currencies_give_openpyxl_s_bytes(runs):
    euro = site(HOSTILE[8], 128, currency="EUR")
    same_bytes([*runs[:3], euro])


def test_batch_like_entries_with_risk_solve_and_actual_columns(runs):
    """Slim results as a batch's, with the risk, "what must be true" and actual columns, on more
    sites than the charts show, names and notes of every kind, some figures missing."""
    extra = [c.name for c in (*RISK_COLUMNS, *ACTUAL_COLUMNS)] + ["tef_target_at_npv0"]
    entries = []
    for i in range(book.CHART_SITES + 7):
        inputs, result = runs[i % len(runs)]
        name = HOSTILE[i % len(HOSTILE)] + f" {i}"
        inputs = make_inputs({**inputs, "site_name": name, "gpus": inputs["gpus"] + i,
                              **({"gpus.note": f" note {i} "} if i % 3 else {})})
        summary = dict(site_summary(result))
        for k, column in enumerate(extra):
            summary[column] = None if (i + k) % 5 == 0 else (i - 30) * 1234.5678 / (k + 1)
        summary["npv"] = None if i % 7 == 0 else summary["npv"]
        entries.append(slim(inputs, summary))
    same_bytes(entries)
    same_bytes(entries[:3])


def test_the_batch_s_portfolio_is_openpyxl_s(tmp_path, monkeypatch):
    """A real batch with risk draws: its portfolio, from its own compact entries, is the bytes
    openpyxl writes for them."""
    from tokenfactory_xl.portfolio import batch

    sites = tmp_path / "sites.csv"
    sites.write_text("site_name,gpus,measured_tps,ownership,rent_per_gpu_hour,currency\n"
                     '"=HYPERLINK(""x"")",512,1500000,own,,USD\n'
                     "Oslo 🚀,256,600000,rent,2.5,USD\n"
                     '"<&>""\'",1024,100,own,,USD\n', encoding="utf-8")
    compared = []

    def both(handle, entries):
        data = oracle.portfolio_bytes(entries)
        book.write_portfolio_to(handle, entries)
        compared.append(data)

    monkeypatch.setattr(batch, "write_portfolio_to", both)
    report = batch.run_batch(sites, tmp_path / "out", risk_draws=20)
    assert compared and report.portfolio.read_bytes() == compared[0]


# -- cell by cell --------------------------------------------------------------------------------
FORMATS = ["General", "0.0%", "#,##0", "#,##0.0000", "@", "yyyy-mm-dd", "0.00"]
TEXTS = [*HOSTILE, "", " ", " lead", "trail ", "\u3000wide\u3000", "a\tb", "a\nb", "a\r\nb",
         "\x85next line", "x" * 40_000,
         "\ud800 lone surrogate"]  # written as a character reference
NUMBERS = [0.1, 1e-05, 1e16, 123456789.0, -0.0, 5e-324, 1.7976931348623157e308, 2 / 3,
           math.nan, math.inf, -math.inf, 0, -3, 2**53 + 1, 10**20, True, False,
           dt.date(2027, 1, 1), dt.date(1900, 2, 1), dt.datetime(2027, 1, 1, 12, 30),
           np.float64(0.5), np.int64(3), None]


def openpyxl_rows(rows: list[list[object]], formats: list[str]) -> tuple[bytes, list, list]:
    """The sheet XML of ``rows`` written by openpyxl (each cell made as the portfolio made it),
    and the workbook's cell styles and number formats after."""
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Portfolio")
    for row in rows:
        cells = []
        for found, fmt in zip(row, formats, strict=True):
            cell = WriteOnlyCell(ws, value=None)
            cell.value = found
            if isinstance(found, str):
                cell.data_type = "s"
            else:
                cell.number_format = fmt
                book._every_digit(cell)
            cells.append(cell)
        ws.append(cells)
    ws.close()
    with open(ws._writer.out, "rb") as handle:
        xml = handle.read()
    start = xml.index(b"<sheetData>") + len(b"<sheetData>")
    return xml[start:xml.index(b"</sheetData>")], list(wb._cell_styles), list(wb._number_formats)


def text_rows(rows: list[list[object]], formats: list[str]) -> tuple[bytes, list, list]:
    """The same by :class:`TableRows`, through a text file as the portfolio writes them."""
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Portfolio")
    table = TableRows(ws, formats)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="xmlcharrefreplace") as out:
        for number, row in enumerate(rows, start=1):
            out.write(table.row(number, row))
        out.flush()
        out.buffer.seek(0)
        xml = out.buffer.read()
    return xml, list(wb._cell_styles), list(wb._number_formats)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_kind_of_value_is_written_as_openpyxl_writes_it(fmt):
    rows = [[found, found] for found in [*TEXTS, *NUMBERS]]
    formats = [fmt, "#,##0.0"]
    assert text_rows(rows, formats) == openpyxl_rows(rows, formats)


def test_styles_are_registered_in_openpyxl_s_order():
    """A column's style is registered where openpyxl registers it: at its first number or
    blank, text passed over (so a later column can take an earlier index)."""
    rows = [["a", None, "b", 1.5, "c"], ["d", 2.0, 3, None, "e"], [None, "f", 4.5, 1, 7]]
    formats = ["0.0%", "#,##0.0000", "0.00", "@", "yyyy-mm-dd"]
    assert text_rows(rows, formats) == openpyxl_rows(rows, formats)


def test_characters_xml_cannot_hold_are_refused_as_openpyxl_refuses_them():
    for text in ["a\x01b", "\x0b", "x\x1f"]:
        with pytest.raises(IllegalCharacterError):
            openpyxl_rows([[text]], ["General"])
        with pytest.raises(IllegalCharacterError):
            text_rows([[text]], ["General"])
