"""The stencil engine: a template's cells filled in its zip, values stored, text always text."""

from __future__ import annotations

import datetime as dt
import functools
import io
import re
import zipfile
import zlib

import numpy as np
import openpyxl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenfactory_xl.engines.libreoffice import recalculate
from tokenfactory_xl.workbook.stencil import Stencil, StencilError, excel_serial, repack_to

INJECTIONS = ["Zürich — Süd ≥ 1", '=HYPERLINK("http://x","y")', "+cmd", "@SUM(A1)", "-1+2",
              "<b>&amp;</b>"]


@functools.cache
def template() -> bytes:
    """A small workbook shaped like the TFOM one: input cells, and formulas that use them.

    Built once: openpyxl stamps the time of saving into the file, and two templates saved a
    second apart differ in those bytes, which is not what the tests compare."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws["A1"], ws["B1"] = "Site name", "Example site"
    ws["A2"], ws["B2"] = "GPUs", 1024
    ws["A3"], ws["B3"] = "Start", dt.date(2027, 1, 1)
    ws["B3"].number_format = "yyyy-mm-dd"
    ws["A4"], ws["B4"] = "TEF", 0.3
    calc = wb.create_sheet("Calc & Returns")
    calc["A1"] = "=Inputs!B2*Inputs!B4/7"
    calc["A2"] = '="Site: "&Inputs!B1'
    calc["A3"] = '=IF(Inputs!B2>2000,"",Inputs!B2/3)'
    calc["A4"] = "=Inputs!B2>2000"
    calc["A5"] = "=YEAR(Inputs!B3)+MONTH(Inputs!B3)/100"
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


CELLS = {"Inputs": ["B1", "B2", "B3", "B4"], "Calc & Returns": ["A1", "A2", "A3", "A4", "A5"]}


def values(name: str, gpus: float, start: dt.date, tef: float) -> dict[str, dict[str, object]]:
    """What the template's formulas compute, worked out here in Python."""
    return {
        "Inputs": {"B1": name, "B2": gpus, "B3": start, "B4": tef},
        "Calc & Returns": {
            "A1": gpus * tef / 7,
            "A2": "Site: " + name,
            "A3": "" if gpus > 2000 else gpus / 3,
            "A4": gpus > 2000,
            "A5": start.year + start.month / 100,
        },
    }


def repack(data: bytes) -> bytes:
    """What :func:`repack_to` writes, as bytes."""
    out = io.BytesIO()
    repack_to(data, out)
    return out.getvalue()


def sheet_xml(data: bytes, number: int) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.read(f"xl/worksheets/sheet{number}.xml").decode()


def cell_xml(xml: str, ref: str) -> str:
    match = re.search(rf'<c r="{ref}"[^>]*?(?:/>|>.*?</c>)', xml, re.S)
    assert match, ref
    return match.group(0)


def test_filled_values_are_stored_and_formulas_kept(tmp_path):
    stencil = Stencil(template(), CELLS)
    site = values("Oslo B200", 4096, dt.date(2028, 7, 1), 0.1 + 0.2)
    path = tmp_path / "site.xlsx"
    path.write_bytes(stencil.fill(site))
    stored = openpyxl.load_workbook(path, data_only=True)
    for sheet, cells in site.items():
        for ref, expected in cells.items():
            got = stored[sheet][ref].value
            if isinstance(expected, dt.date):
                assert got == dt.datetime.combine(expected, dt.time())
            elif expected == "":
                assert got in ("", None)
            else:
                assert got == expected, (sheet, ref)   # every digit, e.g. 0.30000000000000004
    formulas = openpyxl.load_workbook(path)
    assert formulas["Calc & Returns"]["A1"].value == "=Inputs!B2*Inputs!B4/7"
    assert formulas["Inputs"]["A1"].value == "Site name"       # untouched cells unchanged
    with zipfile.ZipFile(path) as z:
        assert re.search(rb'<calcPr[^>]*fullCalcOnLoad="1"', z.read("xl/workbook.xml"))


@pytest.mark.parametrize("name", INJECTIONS)
def test_text_is_always_text(tmp_path, name):
    data = Stencil(template(), CELLS).fill(values(name, 1024, dt.date(2027, 1, 1), 0.3))
    inputs, calc = sheet_xml(data, 1), sheet_xml(data, 2)
    site_cell = cell_xml(inputs, "B1")
    assert 't="inlineStr"' in site_cell and "<f>" not in site_cell
    assert 't="str"' in cell_xml(calc, "A2")
    path = tmp_path / "x.xlsx"
    path.write_bytes(data)
    cell = openpyxl.load_workbook(path)["Inputs"]["B1"]
    assert cell.value == name and cell.data_type == "s"


def test_types_of_stored_values():
    data = Stencil(template(), CELLS).fill(values("A", 3000, dt.date(2027, 1, 1), 0.3))
    calc = sheet_xml(data, 2)
    assert 't="b"' in cell_xml(calc, "A4") and "<v>1</v>" in cell_xml(calc, "A4")
    # A formula that shows nothing: an empty string result.
    assert re.fullmatch(r'<c r="A3" t="str"><f>.*</f><v></v></c>', cell_xml(calc, "A3"))
    inputs = sheet_xml(data, 1)
    assert f"<v>{excel_serial(dt.date(2027, 1, 1))!r}</v>" in cell_xml(inputs, "B3")
    assert excel_serial(dt.date(2027, 1, 1)) == 46388   # as Excel shows =DATE(2027,1,1)*1


def test_values_set_in_runs_store_what_a_dict_of_them_stores():
    # The batch sets a site's cells a run at a time (a line's row of numbers at once); the file
    # must be the one a dict of the values each cell ends with gives, the last value set for a
    # cell winning. Worked out here: A1..A5 as set last below.
    stencil = Stencil(template(), CELLS)
    site = values("Oslo", 4096, dt.date(2028, 7, 1), 0.1 + 0.2)
    sheets = stencil.values()
    calc = sheets["Calc & Returns"]
    for coord, value in site["Inputs"].items():
        sheets["Inputs"].put_one(coord, value)
    where = calc.positions(["A1", "A2", "A3", "A4", "A5"])
    calc.put_numbers(where, np.array([1.5, np.nan, np.inf, 7.0, 2.0]), "none")
    calc.put(where[1:3], ["Site: Oslo", 12])  # a text and a count over the NaN and the inf
    calc.put_same(where[3:4], "")  # a blank over 7.0
    calc.put_one("A5", 0.30000000000000004)
    expected = {"A1": 1.5, "A2": "Site: Oslo", "A3": 12, "A4": "", "A5": 0.30000000000000004}
    assert {c: calc[c] for c in expected} == expected
    assert stencil.fill(sheets) == stencil.fill({"Inputs": site["Inputs"],
                                                 "Calc & Returns": expected})
    # a NaN of a row shows the line's missing value, ±inf the spreadsheet's error
    calc.put_numbers(where[:2], np.array([np.nan, -np.inf]), "")
    calc.put_numbers(where[2:3], np.array([np.nan]), "none")
    assert (calc["A1"], calc["A2"], calc["A3"]) == ("", -np.inf, "none")
    a2 = cell_xml(sheet_xml(stencil.fill(sheets), 2), "A2")
    assert 't="e"' in a2 and "<v>#NUM!</v>" in a2
    assert calc.get("Z99", "nothing") == "nothing"
    with pytest.raises(KeyError):
        calc.put_one("Z99", 1.0)  # not a cell of the stencil


def test_numbers_blanks_and_other_cells_side_by_side_are_each_whole():
    # A sheet's XML is joined from parts in which a number's end belongs to the next cell's
    # part: every order of numbers, blanks, texts, counts and errors must still give each cell
    # its own complete element. Read back with an XML parser, not the stencil's own rules.
    from itertools import product
    from xml.etree import ElementTree

    ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    kinds = {"number": (0.1 + 0.2, "n", "0.30000000000000004"), "blank": ("", "str", None),
             "text": ("none", "str", "none"), "count": (12, "n", "12"),
             "error": (-np.inf, "e", "#NUM!")}
    stencil = Stencil(template(), CELLS)
    coords = CELLS["Calc & Returns"]
    for order in product(kinds, repeat=len(coords)):
        sheets = stencil.values()
        calc = sheets["Calc & Returns"]
        calc.put(calc.positions(coords), [kinds[kind][0] for kind in order])
        root = ElementTree.fromstring(sheet_xml(stencil.fill(sheets), 2))
        cells = {c.get("r"): c for c in root.iter(f"{ns}c")}
        assert sorted(cells) == coords, order
        for coord, kind in zip(coords, order, strict=True):
            _, type_, shown = kinds[kind]
            cell = cells[coord]
            assert cell.find(f"{ns}f") is not None, (order, coord)  # the formula kept
            assert cell.get("t") == type_, (order, coord)
            value = cell.find(f"{ns}v")
            assert (None if value is None else value.text) == shown, (order, coord)


def test_stale_values_of_the_template_are_removed():
    raw = template()
    # A template that carries a stored value in a formula cell no site fills.
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    xml = members["xl/worksheets/sheet2.xml"].decode()
    members["xl/worksheets/sheet2.xml"] = xml.replace(
        "<f>Inputs!B2*Inputs!B4/7</f><v />", "<f>Inputs!B2*Inputs!B4/7</f><v>999</v>").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in members.items():
            z.writestr(name, body)
    cells = {"Inputs": CELLS["Inputs"], "Calc & Returns": CELLS["Calc & Returns"][1:]}
    stencil = Stencil(buffer.getvalue(), cells)
    assert stencil.unfilled_formulas == {"Calc & Returns": ["A1"]}
    site = values("A", 10, dt.date(2027, 1, 1), 0.3)
    del site["Calc & Returns"]["A1"]
    a1 = cell_xml(sheet_xml(stencil.fill(site), 2), "A1")
    assert "999" not in a1 and "<v" not in a1 and "<f>" in a1


def test_other_members_are_copied_unchanged():
    raw = template()
    data = Stencil(raw, CELLS).fill(values("A", 10, dt.date(2027, 1, 1), 0.3))
    with zipfile.ZipFile(io.BytesIO(raw)) as old, zipfile.ZipFile(io.BytesIO(data)) as new:
        assert new.testzip() is None
        assert old.namelist() == new.namelist()
        for info in old.infolist():
            if "worksheets" in info.filename or info.filename == "xl/workbook.xml":
                continue
            assert new.read(info.filename) == old.read(info), info.filename
            assert new.getinfo(info.filename).compress_size == info.compress_size
        assert {i.date_time for i in new.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_same_values_same_bytes_and_levels():
    site = values("A", 10, dt.date(2027, 1, 1), 0.3)
    assert Stencil(template(), CELLS).fill(site) == Stencil(template(), CELLS).fill(site)
    stored = Stencil(template(), CELLS, level=0).fill(site)
    with zipfile.ZipFile(io.BytesIO(stored)) as z:
        assert z.getinfo("xl/worksheets/sheet1.xml").compress_type == zipfile.ZIP_STORED
        assert z.testzip() is None


def test_isal_and_zlib_write_the_same_members():
    # The test extra installs ISA-L's wheel; without it (forced here) zlib deflates. Both write
    # standard deflate that zipfile reads back, CRC-checked, to the same member bytes.
    from tokenfactory_xl.workbook import stencil

    assert stencil.DEFLATE == "isal"
    site = values("Zürich", 3000, dt.date(2027, 5, 1), 0.42)
    fast = Stencil(template(), CELLS).fill(site)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stencil, "_isal", None)
        plain = Stencil(template(), CELLS).fill(site)
    assert fast != plain  # two libraries, two encodings of the same data
    with zipfile.ZipFile(io.BytesIO(fast)) as a, zipfile.ZipFile(io.BytesIO(plain)) as b:
        assert a.testzip() is None and b.testzip() is None
        assert a.namelist() == b.namelist()
        for name in a.namelist():
            assert a.read(name) == b.read(name), name
    data = (b"<row>" + b"<c r='A1'><v>1.5</v></c>" * 5000 + b"</row>") * 20
    for level in (1, 6):
        assert zlib.decompress(stencil.deflate(data, level), -15) == data


EDGES = [0.0, -0.0, 1.0, 0.1 + 0.2, 1e-4, 9.999999999999999e-05, 0.00010000000000000002, 1e15,
         9999999999999998.0, 1e16, 1e22, -1.5e-7, 5e-324, 2.2250738585072014e-308,
         1.7976931348623157e308, 123456789012345.67, -42.0]


@settings(max_examples=300)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=8, max_size=60))
def test_floats_are_written_as_repr_writes_them(numbers):
    # The bulk formatter and ``repr`` give the same text, exponent notation included: a
    # workbook does not depend on which one wrote it. The text comes as the bytes the file
    # stores (ASCII).
    from tokenfactory_xl.workbook import stencil

    assert stencil.FLOAT_FORMAT == "orjson"  # the test extra installs it
    numbers = numbers + EDGES
    expected = [repr(x).encode("ascii") for x in numbers]
    assert stencil.format_floats(numbers) == expected
    assert stencil.format_floats(np.array(numbers)) == expected  # a sheet's row of numbers
    assert stencil.format_floats(np.array(numbers)[::-1]) == expected[::-1]  # not contiguous
    ended = [text + b"</v></c>" for text in expected]  # each with the end of its cell
    assert stencil.format_floats(np.array(numbers), b"</v></c>") == ended
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stencil, "_orjson", None)
        assert stencil.format_floats(numbers) == expected
        assert stencil.format_floats(np.array(numbers)) == expected
        assert stencil.format_floats(np.array(numbers), b"</v></c>") == ended


def test_cells_missing_from_the_template_are_refused():
    with pytest.raises(StencilError, match="Inputs!Z9"):
        Stencil(template(), {"Inputs": ["B1", "Z9"]})
    with pytest.raises(StencilError, match="Nope"):
        Stencil(template(), {"Nope": ["A1"]})


def test_control_characters_never_reach_the_xml():
    with pytest.raises(StencilError, match="control characters"):
        Stencil(template(), CELLS).fill(values("bell\x07", 10, dt.date(2027, 1, 1), 0.3))


def test_repack_fixes_document_dates_and_timestamps():
    a, b = repack(template()), repack(template())
    assert a == b
    with zipfile.ZipFile(io.BytesIO(a)) as z:
        core = z.read("docProps/core.xml").decode()
    assert "2000-01-01T00:00:00Z" in core


def test_stored_values_equal_libreoffice_recalculation(soffice, tmp_path):
    stencil = Stencil(template(), CELLS)
    sites = [values("=HYPERLINK(\"http://x\",\"y\")", 1024, dt.date(2027, 1, 1), 0.3),
             values("Big", 4096, dt.date(2031, 12, 1), 0.65)]
    files = []
    for number, site in enumerate(sites):
        path = tmp_path / f"site{number}.xlsx"
        path.write_bytes(stencil.fill(site))
        files.append(path)
    recalculated = recalculate(files, tmp_path / "lo")
    for ours, theirs in zip(files, recalculated, strict=True):
        mine = openpyxl.load_workbook(ours, data_only=True)["Calc & Returns"]
        lo = openpyxl.load_workbook(theirs, data_only=True)["Calc & Returns"]
        for ref in CELLS["Calc & Returns"]:
            a, b = mine[ref].value, lo[ref].value
            if a in ("", None) or b in ("", None):
                assert a in ("", None) and b in ("", None), ref
            elif isinstance(a, float):
                assert a == pytest.approx(b, rel=1e-9), ref
            else:
                assert a == b, ref


def test_repack_copies_what_it_leaves_unchanged_as_a_recompression_would():
    """A member repack does not rewrite is copied compressed; the file is byte for byte the one
    made by inflating every member, writing it in the package's conventions (ooxml) and
    deflating it again at zipfile's level."""
    from tokenfactory_xl.files import ooxml
    from tokenfactory_xl.workbook import stencil

    wb = openpyxl.Workbook()
    wb.active.append(list(range(200)))
    wb.active["A2"] = "text " * 400
    raw = io.BytesIO()
    wb.save(raw)
    copied = repack(raw.getvalue())
    with zipfile.ZipFile(io.BytesIO(raw.getvalue())) as archive:
        renames, rewrite = ooxml.conventions(archive.namelist())
        assert "_rels/.rels" in rewrite and not renames  # relative targets; no comments here
        members = []
        for info in archive.infolist():
            body = archive.read(info)
            if info.filename == "docProps/core.xml":
                body = stencil._CORE_DATES.sub(
                    rb"\g<1>" + stencil.FIXED_TIMESTAMP.encode() + rb"\g<2>", body)
            if info.filename in rewrite:
                body = rewrite[info.filename](body)
            members.append(stencil._compress(info.filename, body, 6))
    assert copied == stencil._zip_bytes(members)
    with zipfile.ZipFile(io.BytesIO(copied)) as archive:
        assert archive.testzip() is None


def test_one_stencil_fills_site_after_site_as_a_fresh_one_does():
    """A stencil keeps the XML of the cells that are no number (texts, dates, TRUE) from one
    site to the next: each site's file is still the one a fresh stencil writes, and a kept
    stencil holds none of it."""
    import pickle

    sites = [values(name, gpus, start, tef) for name, gpus, start, tef in (
        ("Oslo", 1024, dt.date(2027, 1, 1), 0.3), ("Lyon", 4096, dt.date(2028, 7, 1), 0.25),
        ("Oslo", 1024, dt.date(2027, 1, 1), 0.3), ("Zürich — Süd", 2048, dt.date(2027, 1, 1),
                                                  0.5))]
    used = Stencil(template(), CELLS)
    for site in sites:
        assert used.fill(site) == Stencil(template(), CELLS).fill(site)
    assert "Lyon" in sheet_xml(used.fill(sites[1]), 1)
    assert "Lyon" not in sheet_xml(used.fill(sites[0]), 1)
    assert b"Oslo" not in pickle.dumps(used)


def test_each_cell_keeps_a_bounded_number_of_values_however_many_sites(monkeypatch):
    """The XML a stencil keeps between sites is bounded by cell: a text of each site's own
    (its name) is let go once its cell holds ``_MADE_PER_CELL`` values, so memory does not grow
    with the sites, and each site's file is still the one a fresh stencil writes."""
    from tokenfactory_xl.workbook import stencil as engine

    monkeypatch.setattr(engine, "_MADE_PER_CELL", 3)
    used = Stencil(template(), CELLS)
    for i in range(10):
        site = values(f"Site {i}", 1024 + i, dt.date(2027, 1 + i % 2, 1), 0.3)
        assert used.fill(site) == Stencil(template(), CELLS).fill(site)
        for sheet in used._sheets.values():
            assert all(len(shown) <= 3 for shown in sheet._made.values())
    inputs = used._sheets["Inputs"]
    name, start = inputs.refs.index("B1"), inputs.refs.index("B3")
    assert 1 <= len(inputs._made[name]) <= 3  # a name a site: let go as it comes
    assert len(inputs._made[start]) == 2  # two start dates, kept for every site


def test_blanks_made_in_bulk_are_what_one_blank_cell_writes():
    """A sheet makes its blanks from the cells' parts, thousands at a time, without the rule
    of :func:`_cell_xml`: each must be the XML that rule gives the cell for ``""`` (a formula's
    empty text, an input's empty cell), and a stencil read back from a kept file makes the
    same."""
    import pickle

    from tokenfactory_xl.workbook import stencil as engine

    fresh = Stencil(template(), CELLS)
    for kept in (fresh, pickle.loads(pickle.dumps(fresh))):
        for sheet in kept._sheets.values():
            every = np.arange(len(sheet.refs))
            by_rule = [b"".join((segment, engine._cell_xml(cell, "").encode()))
                       for segment, cell in map(sheet._cell, every.tolist())]
            assert sheet._blanks(every).tolist() == by_rule
    blank = fresh.fill({"Inputs": dict.fromkeys(CELLS["Inputs"], ""),
                        "Calc & Returns": dict.fromkeys(CELLS["Calc & Returns"], "")})
    assert cell_xml(sheet_xml(blank, 1), "B2") == '<c r="B2"/>'
    assert cell_xml(sheet_xml(blank, 2), "A1") == \
        '<c r="A1" t="str"><f>Inputs!B2*Inputs!B4/7</f><v></v></c>'


def test_blanks_around_a_number_the_stencil_does_not_fill_keep_that_number():
    # The text between two formula cells may hold a cell the stencil leaves as it is, with its
    # own t="n" and <v>: the blanks on either side are written from their own parts, and the
    # number stays a number.
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Calc"
    ws["A1"], ws["A2"], ws["A3"] = "=1+1", 5, "=A2*2"
    buffer = io.BytesIO()
    wb.save(buffer)
    stencil = Stencil(buffer.getvalue(), {"Calc": ["A1", "A3"]})
    xml = sheet_xml(stencil.fill({"Calc": {"A1": "", "A3": ""}}), 1)
    assert cell_xml(xml, "A1") == '<c r="A1" t="str"><f>1+1</f><v></v></c>'
    assert cell_xml(xml, "A2") == '<c r="A2" t="n"><v>5</v></c>'
    assert cell_xml(xml, "A3") == '<c r="A3" t="str"><f>A2*2</f><v></v></c>'


def test_a_member_repacked_unchanged_is_copied_a_piece_at_a_time(tmp_path):
    """A deflated member the repacking does not change is copied from the zip as it is written,
    never held whole: repacking a zip with an 8 MB member holds less than 3 MB at once (the
    portfolio's table of 10,000 sites is some 7 MB compressed), and the member reads back."""
    import os

    from tests.tools.memory import traced_peak

    table = os.urandom(8 << 20)  # does not deflate: its compressed bytes are as large
    source = tmp_path / "book.xlsx"
    with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", table)
        archive.writestr("docProps/core.xml", b"<dcterms:created>2026</dcterms:created>")
    out = tmp_path / "out.xlsx"
    with open(source, "rb") as data, open(out, "wb") as handle:
        peak = traced_peak(lambda: repack_to(data, handle))
    assert peak < 3 << 20, peak
    with zipfile.ZipFile(out) as archive:
        assert archive.read("xl/worksheets/sheet1.xml") == table
