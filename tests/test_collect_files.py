"""Untrusted files: each hostile or broken file is recognised and refused in one sentence.

Every bad file is made here in a few lines (no committed binaries). These tests call the safe
reader directly; ``test_collect_cli.py`` checks that a run over a folder of them goes on.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from tokenfactory_xl.files import safe_xlsx
from tokenfactory_xl.files.safe_xlsx import (
    MB,
    OLE2_MAGIC,
    Limits,
    RefusedFile,
    canonical_reference,
    open_xlsx,
    parse_reference,
)
from tokenfactory_xl.portfolio.audit import audit_workbook, normalise_formula

BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">'
              for i in range(1, 10))
    + ']>\n'
)
EXTERNAL_ENTITY = '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'


def plain_workbook(path: Path, names: dict[str, str] | None = None) -> Path:
    """A small genuine .xlsx written by openpyxl: one sheet, a number, a text, a formula."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    ws["A1"], ws["B1"], ws["C1"] = "GPUs", 1024, "=B1*2"
    for name, ref in (names or {}).items():
        wb.defined_names[name] = DefinedName(name, attr_text=ref)
    wb.save(path)
    return path


def rewrite_member(path: Path, member: str, edit) -> None:
    """Rewrite one member of a zip (the rest copied as they are)."""
    with zipfile.ZipFile(path) as src:
        items = [(info, src.read(info.filename)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in items:
            dst.writestr(info.filename, edit(data) if info.filename == member else data)


def refusal(path: Path, limits: Limits | None = None) -> str:
    with pytest.raises(RefusedFile) as caught:
        open_xlsx(path, limits)
    return str(caught.value)


# -- what the file is ---------------------------------------------------------------------------
def test_random_bytes_are_not_a_workbook(tmp_path):
    path = tmp_path / "site.xlsx"
    path.write_bytes(bytes(range(256)) * 8)
    assert "not an Excel workbook" in refusal(path)


def test_a_csv_renamed_to_xlsx_is_named_as_such(tmp_path):
    path = tmp_path / "site.xlsx"
    path.write_text("site_name,gpus\nOslo,1024\n", encoding="utf-8")
    assert "a CSV renamed" in refusal(path)


def test_an_empty_file(tmp_path):
    path = tmp_path / "site.xlsx"
    path.write_bytes(b"")
    assert "empty" in refusal(path)


def test_an_xls_is_recognised_by_its_ole2_header(tmp_path):
    path = tmp_path / "site.xls"
    path.write_bytes(OLE2_MAGIC + bytes(504) + b"Workbook".decode().encode("utf-16-le"))
    text = refusal(path)
    assert ".xls" in text and "save it as .xlsx" in text


def test_an_encrypted_workbook_stand_in_says_password_protected(tmp_path):
    # An OLE2 container with the two streams Excel writes for a password-protected .xlsx.
    path = tmp_path / "site.xlsx"
    names = b"".join(n.encode("utf-16-le") + bytes(64) for n in ("EncryptionInfo",
                                                               "EncryptedPackage"))
    path.write_bytes(OLE2_MAGIC + bytes(2048) + names)
    assert "password-protected" in refusal(path)


def test_a_real_password_protected_workbook_says_password_protected(tmp_path):
    ooxml = pytest.importorskip("msoffcrypto.format.ooxml")
    plain = plain_workbook(tmp_path / "plain.xlsx")
    path = tmp_path / "locked.xlsx"
    with open(plain, "rb") as src, open(path, "wb") as dst:
        ooxml.OOXMLFile(src).encrypt("s3cret", dst)
    assert path.read_bytes()[:8] == OLE2_MAGIC
    assert "password-protected" in refusal(path)


def test_a_truncated_zip_is_damaged(tmp_path):
    data = plain_workbook(tmp_path / "whole.xlsx").read_bytes()
    path = tmp_path / "site.xlsx"
    path.write_bytes(data[: len(data) // 2])
    assert "damaged or truncated" in refusal(path)


def test_a_zip_that_is_no_workbook(tmp_path):
    path = tmp_path / "site.xlsx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes.txt", "hello")
    assert "without a workbook part" in refusal(path)


def test_a_corrupted_member_is_damaged(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx")
    rewrite_member(path, "xl/worksheets/sheet1.xml", lambda data: data[: len(data) // 2])
    with open_xlsx(path) as content:
        with pytest.raises(RefusedFile, match="not well-formed XML"):
            content.cells("Data")


def test_a_damaged_compressed_member_is_damaged(tmp_path):
    # The zip's directory is whole, but a sheet's compressed bytes were corrupted in transit.
    path = plain_workbook(tmp_path / "site.xlsx")
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("xl/worksheets/sheet1.xml")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for i in range(start + 5, start + info.compress_size - 5):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with open_xlsx(path) as content:
        with pytest.raises(RefusedFile, match="damaged"):
            content.cells("Data")


# -- hostile XML ----------------------------------------------------------------------------------
@pytest.mark.parametrize("member", ["xl/workbook.xml", "xl/worksheets/sheet1.xml"])
@pytest.mark.parametrize("prolog", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["laughs", "xxe"])
def test_entity_attacks_are_refused_before_expansion(tmp_path, member, prolog):
    path = plain_workbook(tmp_path / "site.xlsx", {"in_gpus": "Data!$B$1"})

    def attack(data: bytes) -> bytes:
        body = data.decode("utf-8").split("?>", 1)[-1]
        # The entity is used in a cell text, where an unguarded parser would expand it.
        body = body.replace("<v>1024</v>", "<v>&lol9;</v>" if "lol" in prolog else "<v>&e;</v>")
        return (prolog + body).encode("utf-8")

    rewrite_member(path, member, attack)
    with pytest.raises(RefusedFile) as caught:
        with open_xlsx(path) as content:
            content.cells("Data")
    assert "entity attack" in str(caught.value) and member in str(caught.value)


# -- zip bombs ------------------------------------------------------------------------------------
def test_a_member_that_expands_past_the_ratio_is_refused_unread(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx")
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/media/padding.xml", b" " * (3 * MB))
    info = zipfile.ZipFile(path).getinfo("xl/media/padding.xml")
    assert info.file_size / info.compress_size > 100  # the bomb is real
    text = refusal(path)
    assert "zip bomb" in text and "xl/media/padding.xml" in text
    # Allowed with a looser limit.
    open_xlsx(path, Limits(max_ratio=10 * info.file_size / info.compress_size)).close()


def test_a_workbook_past_the_uncompressed_limit_is_refused(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx")
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/media/photo.bin", os.urandom(300_000))  # incompressible: no ratio alarm
    total = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    text = refusal(path, Limits(max_uncompressed=total - 1))
    assert "zip bomb" in text and f"{total:,} bytes" in text
    open_xlsx(path, Limits(max_uncompressed=total)).close()


def test_too_many_members(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx")
    with zipfile.ZipFile(path, "a") as z:
        for i in range(30):
            z.writestr(f"xl/extra/{i}.xml", "<x/>")
    assert "members" in refusal(path, Limits(max_members=20))


# -- what is read ---------------------------------------------------------------------------------
def test_cells_and_defined_names_are_read(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx", {"in_gpus": "Data!$B$1",
                                                   "in_tef_target": "'Data'!$B$2:$D$2"})
    with open_xlsx(path) as content:
        assert [s.title for s in content.sheets] == ["Data"]
        assert content.defined_names == {"in_gpus": "Data!$B$1",
                                         "in_tef_target": "'Data'!$B$2:$D$2"}
        sheet = content.cells("Data")
    assert sheet.values == {"A1": "GPUs", "B1": 1024.0}  # openpyxl stores no formula value
    assert sheet.formulas == {"C1": "B1*2"}


def test_a_shared_formula_is_expanded_at_each_cell(tmp_path):
    # Excel writes a filled-down formula once, as a shared formula; its cells must each read
    # as the formula Excel shows there.
    path = plain_workbook(tmp_path / "site.xlsx")

    def share(data: bytes) -> bytes:
        text = data.decode("utf-8")
        row = ('<row r="2"><c r="C2"><f t="shared" ref="C2:C4" si="0">B2*2</f><v>4</v></c></row>'
               '<row r="3"><c r="C3"><f t="shared" si="0"/><v>6</v></c></row>'
               '<row r="4"><c r="C4"><f t="shared" si="0"/><v>8</v></c></row>')
        return text.replace("</sheetData>", row + "</sheetData>").encode("utf-8")

    rewrite_member(path, "xl/worksheets/sheet1.xml", share)
    with open_xlsx(path) as content:
        sheet = content.cells("Data")
    assert [sheet.formulas[c] for c in ("C2", "C3", "C4")] == ["B2*2", "B3*2", "B4*2"]
    assert sheet.values["C4"] == 8.0


def test_nothing_is_written_to_the_file(tmp_path):
    path = plain_workbook(tmp_path / "site.xlsx", {"in_gpus": "Data!$B$1"})
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    with open_xlsx(path) as content:
        content.cells("Data")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_a_workbook_without_in_names_is_not_a_tfom(tmp_path):
    audit = audit_workbook(plain_workbook(tmp_path / "budget.xlsx"))
    assert audit.refused and not audit.included
    assert [(f.severity, f.code) for f in audit.findings] == [("error", "not_tfom")]
    assert "not a TFOM workbook" in audit.findings[0].message


# -- references and formulas ----------------------------------------------------------------------
def test_references_resolve_to_cells():
    assert parse_reference("Inputs!$C$5") == ("Inputs", ("C5",))
    assert parse_reference("'Inputs'!$C$30:$E$30") == ("Inputs", ("C30", "D30", "E30"))
    assert parse_reference("'It''s'!A1") == ("It's", ("A1",))
    assert parse_reference("#REF!") is None and parse_reference("Inputs!#REF!") is None
    assert canonical_reference("'Inputs'!$C$5") == canonical_reference("Inputs!C5")
    assert canonical_reference("Inputs!$C$5") != canonical_reference("Inputs!$C$6")


def test_formulas_compare_as_excel_means_them():
    assert normalise_formula("=sum(A1:A3)") == normalise_formula("SUM( A1:A3 )")
    assert normalise_formula("'Inputs'!C5*2") == normalise_formula("Inputs!C5*2")
    assert normalise_formula("_xlfn.NORM.S.DIST(A1,TRUE)") == normalise_formula(
        "NORM.S.DIST(A1,TRUE)")
    assert normalise_formula('IF(A1="a b","",1)') != normalise_formula('IF(A1="ab","",1)')
    assert normalise_formula('IF(A1="x","",1)') != normalise_formula('IF(A1="X","",1)')
    assert normalise_formula("A1*2") != normalise_formula("A1*3")
    # LibreOffice saves TRUE as TRUE().
    assert normalise_formula("NORM.S.DIST(x,TRUE())") == normalise_formula("NORM.S.DIST(x,TRUE)")
    assert normalise_formula('IF(A1="TRUE()",1,0)') != normalise_formula('IF(A1="TRUE",1,0)')


def test_a_large_sheet_is_read_cell_by_cell(tmp_path, monkeypatch):
    path = tmp_path / "big.xlsx"
    rows = "".join(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}"><f>A{r}*2</f></c></row>'
                   for r in range(1, 20_000))
    sheet = ('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             f"<sheetData>{rows}</sheetData></worksheet>")
    plain_workbook(path)
    rewrite_member(path, "xl/worksheets/sheet1.xml", lambda _: sheet.encode())
    assert len(sheet) > 1 * MB
    with open_xlsx(path) as content:
        scanned = content.cells("Data")
    assert len(scanned.values) == len(scanned.formulas) == 19_999
    assert scanned.values["A19999"] == 19_999.0 and scanned.formulas["B19999"] == "A19999*2"
    # Past the scan limit the sheet is streamed through defusedxml: the same cells.
    monkeypatch.setattr(safe_xlsx, "SCAN_LIMIT", 100_000)
    with open_xlsx(path) as content:
        assert content.cells("Data") == scanned


def test_a_text_file_that_is_no_csv_is_not_called_one(tmp_path):
    path = tmp_path / "notes.xlsx"
    path.write_text("# Notes\n\nGPUs arrive in May, and the racks in June.\n", encoding="utf-8")
    text = refusal(path)
    assert text == "not an Excel workbook: it is a text file"


def test_a_workbook_from_the_builder_gives_only_the_no_values_note(tmp_path):
    # The builder writes formulas without stored values (openpyxl): nothing to compare, a note.
    from tokenfactory_xl.tfom.evaluation import run
    from tokenfactory_xl.tfom.inputs import make_inputs
    from tokenfactory_xl.workbook.build import build_workbook, save_workbook

    site = make_inputs({"gpus": 2048, "ownership": "rent", "tef_target.Optimised": 0.7})
    path = save_workbook(build_workbook(site, risk_draws=200), tmp_path / "site.xlsx")
    audit = audit_workbook(path)
    assert [(f.severity, f.code) for f in audit.findings] == [("info", "values_absent")]
    assert audit.inputs == site
    assert audit.result.summary == run(site).summary


SHEET_OF_EVERY_CELL = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    '<row r="1"><c r="A1" s="1"/><c r="B1"><v>12.5</v></c><c r="C1" t="n"><v>-3E-7</v></c>'
    '<c r="D1" s="2" t="n"><f>B1*2</f><v>25</v></c><c r="E1" t="n"><f>B1</f></c>'
    '<c r="F1" t="n"><v></v></c></row>'
    '<row r="2"><c r="A2" t="str"><f>IF(B1&gt;0,"a &amp; b","")</f><v>a &amp; b</v></c>'
    '<c r="B2" t="str"><f>IF(B1&lt;0,"x","")</f><v></v></c>'
    '<c r="C2" t="str"><f>""</f><v/></c><c r="D2" t="str"><f>"&#183;"</f></c>'
    '<c r="E2" t="b"><v>1</v></c><c r="F2" t="e"><f>1/0</f><v>#DIV/0!</v></c></row>'
    '<row r="3"><c r="A3" t="s"><v>0</v></c><c r="B3" t="inlineStr"><is>'
    '<t xml:space="preserve"> Oslo &lt;HQ&gt; </t></is></c><c r="C3" t="d"><v>2027-11-01</v></c>'
    '<c r="D3" t="str"><f>"&#183; "&amp;A3</f><v>&#183; GPUs</v></c>'
    '<c r="E3" t="s"><v>7</v></c></row>'
    '</sheetData></worksheet>')


@pytest.mark.parametrize("odd", ["", '<row r="4"><c r="A4" t="n"><v>twelve</v></c></row>'])
def test_the_fast_scan_reads_every_kind_of_cell_as_the_full_parser(tmp_path, odd):
    """Numbers, empty and filled texts of formulas, booleans, errors, shared and inline strings,
    dates, escaped formulas, a formula without a value, a shared string that is not in the
    table, and (second case) a number cell holding text, which sends every value of the sheet
    one by one: the same cells, of the same types, as defusedxml's full parse reads."""
    import io

    with open_xlsx(plain_workbook(tmp_path / "plain.xlsx")) as content:
        content._strings = ["GPUs"]  # the shared strings table of a workbook saved by Excel
        data = SHEET_OF_EVERY_CELL.replace("</sheetData>", odd + "</sheetData>").encode()
        fast = safe_xlsx._scan_cells(data, content)
        full = safe_xlsx._parse_cells(io.BufferedReader(io.BytesIO(data)), "sheet", content)
    assert fast is not None
    assert fast.formulas == full.formulas
    assert {k: (type(v), v) for k, v in fast.values.items()} == \
        {k: (type(v), v) for k, v in full.values.items()}
    assert fast.values["A2"] == "a & b" and fast.values["B2"] == "" == fast.values["C2"]
    assert not {"D2", "E1", "F1", "E3"} & fast.values.keys()
    assert fast.formulas["A2"] == 'IF(B1>0,"a & b","")' and fast.formulas["D2"] == '"·"'
    assert fast.values["E2"] is True and fast.values["A3"] == "GPUs"
    assert fast.values["B3"] == " Oslo <HQ> " and fast.values["D3"] == "· GPUs"
    assert fast.values.get("A4", "twelve") == "twelve"


SHEET_OF_COMMON_CELLS = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    '<row r="1"><c r="A1" t="inlineStr"><is><t>Revenue &amp; opex</t></is></c>'
    '<c r="B1" s="3" t="n"><f>C1*2</f><v>{b1}</v></c><c r="C1"><v>{c1}</v></c>'
    '<c r="D1" t="inlineStr"><is><t xml:space="preserve"></t></is></c><c r="E1" s="1"/></row>'
    '<row r="2"><c r="A2" t="str"><f>IF(C1&gt;{limit},"",C1)</f><v></v></c>'
    '<c r="B2" t="n"><f>SUM(B1:C1)</f></c><c r="C2" t="n"><f>{c2}</f><v>1E-3</v></c>'
    '<c r="E2" t="str"><f>IF(C1&lt;0,"n/m &amp; &#183;","ok")</f><v>n/m &amp; &#183;</v></c>'
    '</row></sheetData></worksheet>')


def _common_sheet(b1="50", c1="25", limit="0", c2="B1/C1") -> bytes:
    return SHEET_OF_COMMON_CELLS.format(b1=b1, c1=c1, limit=limit, c2=c2).encode()


def test_the_fast_scan_reads_the_common_cells_in_bulk_as_the_full_parser(tmp_path,
                                                                          monkeypatch):
    """Numbers, formulas' numbers, empty and filled texts ("n/m", escaped), inline texts
    (escaped, empty), a formula without a value, a styled empty cell: the cells a TFOM sheet
    is made of, each read with its type as defusedxml's full parse reads it, and in bulk (no
    cell read one by one: the Timeline's 46,000 cells hold a few hundred texts of formulas)."""
    import io

    with open_xlsx(plain_workbook(tmp_path / "plain.xlsx")) as content:
        data = _common_sheet()
        with monkeypatch.context() as m:
            m.setattr(safe_xlsx, "_value", lambda *a: pytest.fail(f"read one by one: {a}"))
            fast = safe_xlsx._scan_cells(data, content)
        full = safe_xlsx._parse_cells(io.BufferedReader(io.BytesIO(data)), "sheet", content)
    assert fast is not None
    assert fast.formulas == full.formulas == {"B1": "C1*2", "A2": 'IF(C1>0,"",C1)',
                                              "B2": "SUM(B1:C1)", "C2": "B1/C1",
                                              "E2": 'IF(C1<0,"n/m & ·","ok")'}
    assert {k: (type(v), v) for k, v in fast.values.items()} == \
        {k: (type(v), v) for k, v in full.values.items()}
    assert fast.values == {"A1": "Revenue & opex", "B1": 50.0, "C1": 25.0, "D1": "",
                           "A2": "", "C2": 0.001, "E2": "n/m & ·"}


def test_a_sheet_scanned_again_is_read_from_its_own_text(tmp_path):
    """Sheets with the formulas of one scanned before are not sorted again, but what is read
    is always the sheet's own: its values, and any formula edited (the same number of cells,
    even the same length of text), moved to another cell, or given back as it was."""
    import io

    variants = [_common_sheet(), _common_sheet(b1="70", c1="35"),  # other values, same formulas
                _common_sheet(limit="9"),  # one guard edited: the same number of characters
                _common_sheet(c2="B1*C1"), _common_sheet()]
    moved = _common_sheet().replace(b'<c r="B2" t="n"><f>', b'<c r="D2" t="n"><f>')
    with open_xlsx(plain_workbook(tmp_path / "plain.xlsx")) as content:
        first = safe_xlsx._scan_cells(variants[0], content)
        first.formulas["B1"] = "changed by its reader"  # each sheet has its own dictionary
        for data in variants[1:] + [moved]:
            fast = safe_xlsx._scan_cells(data, content)
            full = safe_xlsx._parse_cells(io.BufferedReader(io.BytesIO(data)), "sheet", content)
            assert (fast.formulas, fast.values) == (full.formulas, full.values)
    assert safe_xlsx._scan_cells(variants[2], content).formulas["A2"] == 'IF(C1>9,"",C1)'
    assert safe_xlsx._scan_cells(moved, content).formulas["D2"] == "SUM(B1:C1)"
    assert safe_xlsx._scan_cells(variants[1], content).values["B1"] == 70.0


@pytest.mark.parametrize("other", [
    '<c\tr="A4"><f>B1*3</f><v>37.5</v></c>',  # a tab, not a space, before the address
    '<c s="1" r="A4"><f>B1*3</f><v>37.5</v></c>',  # the address not first
    '<x:c r="A4"><x:f>B1*3</x:f><x:v>37.5</x:v></x:c>',  # the main namespace under a prefix
    '<c><v>37.5</v></c>',  # no address: no spreadsheet writes it, the parser skips it
])
def test_a_cell_of_another_form_sends_the_sheet_to_the_full_parser(tmp_path, other):
    """A cell the scan does not know is never dropped: the sheet is read by the parser, so
    the typed-over or edited cell is seen as Excel sees it."""
    import io

    data = SHEET_OF_EVERY_CELL.replace(
        "<worksheet ", '<worksheet xmlns:x="http://schemas.openxmlformats.org/'
        'spreadsheetml/2006/main" ').replace(
        "</sheetData>", f'<row r="4">{other}</row></sheetData>').encode()
    path = plain_workbook(tmp_path / "plain.xlsx")
    rewrite_member(path, "xl/worksheets/sheet1.xml", lambda _: data)
    with open_xlsx(path) as content:
        content._strings = ["GPUs"]
        assert safe_xlsx._scan_cells(data, content) is None
        full = safe_xlsx._parse_cells(io.BufferedReader(io.BytesIO(data)), "sheet", content)
        read = content.cells("Data")
    assert (read.formulas, read.values) == (full.formulas, full.values)
    assert read.formulas.get("A4") == ("B1*3" if "r=" in other else None)
    assert read.values["D1"] == 25.0 and read.formulas["A2"] == 'IF(B1>0,"a & b","")'


def test_a_sheet_missing_from_the_zip_is_damaged(tmp_path):
    path = plain_workbook(tmp_path / "plain.xlsx")
    with zipfile.ZipFile(path) as src:
        items = [(i.filename, src.read(i.filename)) for i in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in items:
            if name != "xl/worksheets/sheet1.xml":
                dst.writestr(name, data)
    with open_xlsx(path) as content, pytest.raises(RefusedFile) as caught:
        content.cells("Data")
    assert "damaged workbook: the part xl/worksheets/sheet1.xml is missing" in str(caught.value)


def test_a_directory_that_understates_a_sheet_is_refused(tmp_path):
    """The zip's directory says the sheet is smaller than it inflates to: read no further than
    it says, and refused as damaged, never taken as the whole sheet."""
    path = plain_workbook(tmp_path / "plain.xlsx")
    member = "xl/worksheets/sheet1.xml"
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        size = archive.getinfo(member).file_size
    name = member.encode()
    at = raw.index(b"PK\x01\x02")  # the central directory's first record
    while raw[at + 46:at + 46 + len(name)] != name:
        at = raw.index(b"PK\x01\x02", at + 4)
    raw[at + 24:at + 28] = (size // 2).to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(raw))
    with open_xlsx(path) as content, pytest.raises(RefusedFile) as caught:
        content.cells("Data")
    assert member in str(caught.value)


def test_the_formulas_kept_between_sheets_stay_within_their_cell_budget():
    """What the scan keeps of the sheets it read is bounded by cells, whatever the files: the
    sheets kept longest make room, and a sheet larger than the budget is not kept at all."""
    seen = safe_xlsx._FormulasSeen(cells=12)

    def sheet(n: int, formula: str = "B1*2") -> tuple[list, list]:
        return [f"A{i}" for i in range(1, n + 1)], [formula] * (n - 1) + [None]

    assert seen.formulas(*sheet(4)) == {f"A{i}": "B1*2" for i in range(1, 4)}
    seen.formulas(*sheet(5, "C1&lt;0"))
    assert sorted(seen._seen) == [4, 5]
    assert seen.formulas(*sheet(5, "C1&lt;0"))["A1"] == "C1<0"
    seen.formulas(*sheet(6))  # 4 + 5 + 6 cells: the sheet of 4, kept longest, makes room
    assert sorted(seen._seen) == [5, 6]
    assert seen.formulas(*sheet(13)) == {f"A{i}": "B1*2" for i in range(1, 13)}
    assert sorted(seen._seen) == [5, 6]
