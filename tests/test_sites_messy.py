"""Messy sites files: which sheet, which row, which decimal separator, what a cell really shows.

Every file is built here (openpyxl, LibreOffice for a really saved workbook, raw edits of the
zip) and every case asserts the value read or the message given; none may give a silent default.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest

from tokenfactory_xl.core.catalogue import BY_NAME
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.engines.libreoffice import find_soffice, recalculate
from tokenfactory_xl.sites.load import load_sites, read_sites, safe_file_stem


def save(wb: openpyxl.Workbook, path: Path) -> Path:
    wb.save(path)
    return path


def sheet_of(rows: list[list[object]], title: str = "Sites") -> openpyxl.Workbook:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(row)
    return wb


def rewrite(path: Path, member: str, edit) -> None:
    """Rewrite one member of a zip, copying the others as they are."""
    with zipfile.ZipFile(path) as src:
        items = [(i.filename, src.read(i.filename)) for i in src.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in items:
            dst.writestr(name, edit(data) if name == member else data)


def messages(sites) -> str:
    return "\n".join(str(p) for p in sites.problems)


# -- which sheet ----------------------------------------------------------------------------------
def test_the_sheet_the_workbook_opens_on_is_read_not_a_hidden_first_one(tmp_path):
    wb = sheet_of([["site_name", "gpus"], ["Old", 8]], "Old")
    wb.active.sheet_state = "hidden"
    ws = wb.create_sheet("Sites")
    ws.append(["site_name", "gpus"])
    ws.append(["Frankfurt", 2048])
    wb.active = 1
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    assert [r.inputs["gpus"] for r in sites.rows] == [2048]
    assert sites.sheet == "Sites"
    assert any("read sheet 'Sites', the one the workbook opens on" in n for n in sites.notes)


def test_a_workbook_opening_on_a_hidden_sheet_is_refused_unless_named(tmp_path):
    wb = sheet_of([["site_name", "gpus"], ["Hidden", 2048]], "Secret")
    wb.create_sheet("Other").append(["x"])
    wb.active.sheet_state = "hidden"
    path = save(wb, tmp_path / "s.xlsx")
    # openpyxl moves the active tab to a visible sheet on saving: put it back on the hidden one,
    # as another program may leave it
    rewrite(path, "xl/workbook.xml", lambda d: d.replace(b'activeTab="1"', b'activeTab="0"'))
    with pytest.raises(InputError, match=r"opens on the hidden sheet 'Secret'.*--sheet 'Secret'"):
        load_sites(path)
    sites = load_sites(path, sheet="Secret")
    assert [r.inputs["gpus"] for r in sites.rows] == [2048]
    assert any("hidden; read because --sheet names it" in n for n in sites.notes)
    with pytest.raises(InputError, match=r"the sheets are Secret \(hidden\), Other"):
        load_sites(path, sheet="Nope")


def test_site_name_on_another_sheet_is_named_in_the_fix(tmp_path):
    wb = sheet_of([["Read me first"], ["These are our sites"]], "Notes")
    ws = wb.create_sheet("Sites")
    ws.append(["site_name", "gpus"])
    ws.append(["A", 8])
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    (problem,) = [p for p in sites.file_problems if p.name == "site_name"]
    assert "sheet 'Sites' has one on row 1: add --sheet Sites" in problem.fix


# -- which row ------------------------------------------------------------------------------------
def test_header_below_a_title_is_found_and_said(tmp_path):
    wb = sheet_of([["Sites 2027", None], [None, None], ["site_name", "gpus"], ["A", 1024],
                   ["B", 2048]])
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    assert sites.header_row == 3 and not sites.problems
    assert [(r.row, r.inputs["gpus"]) for r in sites.rows] == [(4, 1024), (5, 2048)]
    assert any(n.startswith("header found on row 3") and "rows 1–2" in n for n in sites.notes)


def test_header_row_given(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("site_name,gpus\nTitle,1\nsite_name,gpus\nA,64\n", encoding="utf-8")
    sites = load_sites(path, header_row=3)
    assert [(r.row, r.site_name) for r in sites.rows] == [(4, "A")]
    with pytest.raises(InputError, match=r"--header-row=9: is not a row of s.csv \(its rows "
                                         r"with content are 1 to 4\)"):
        load_sites(path, header_row=9)


def test_no_site_name_anywhere_says_which_row_was_taken(tmp_path):
    path = csv_file(tmp_path, "Our sites\nname,gpus\nA,1024\n")
    sites = load_sites(path)
    (problem,) = [p for p in sites.file_problems if p.name == "site_name"]
    assert problem.message == ("column is missing: no row among the first 50 has a site_name "
                               "cell, so row 1 was read as the header")


def test_a_table_totals_row_is_not_a_site_and_hidden_rows_are_said(tmp_path):
    from openpyxl.worksheet.table import Table

    wb = sheet_of([["site_name", "gpus"], ["A", 1024], ["B", 2048],
                   ["Total", "=SUBTOTAL(109,B2:B3)"]])
    table = Table(displayName="Fleet", ref="A1:B4")
    table.totalsRowCount = 1
    wb.active.add_table(table)
    wb.active.row_dimensions[3].hidden = True
    wb.active.column_dimensions["B"].hidden = True
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    assert [(r.row, r.site_name, r.inputs["gpus"]) for r in sites.rows] == [(2, "A", 1024),
                                                                           (3, "B", 2048)]
    assert sites.notes == ("row 4: the totals row of the Excel table 'Fleet', not read as a site",
                           "row 3 hidden (or filtered out) in the sheet, read like the others",
                           "hidden column read: gpus")


# -- formulas without values ----------------------------------------------------------------------
def test_a_formula_without_stored_value_names_the_cell_and_the_fix(tmp_path):
    # openpyxl stores a formula and no value: what a script writes without opening Excel
    wb = sheet_of([["site_name", "gpus", "availability"], ["A", "=4*256", 0.99],
                   ["B", 512, "=1-0.01"]])
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    text = messages(sites)
    assert "row 2: gpus='=4*256': cell B2 holds a formula with no stored value" in text
    assert "row 3: availability='=1-0.01': cell C3 holds a formula" in text
    assert "open the file in Excel or LibreOffice and save it, or export the sheet as CSV" in text
    assert len(sites.file_problems) == 2   # the file is refused, not rows skipped


def test_a_formula_whose_stored_result_is_empty_text_is_an_empty_cell(tmp_path):
    # Excel stores the result "" of =IF(…,"",…) as an empty value; openpyxl reads it as None
    path = save(sheet_of([["site_name", "gpus", "pue"], ["A", 1024, '=IF(TRUE,"",1.5)']]),
                tmp_path / "s.xlsx")
    rewrite(path, "xl/worksheets/sheet1.xml",
            lambda d: re.sub(rb'<c r="C2"[^>]*><f>(.*?)</f>(<v\s*/>|<v></v>)?</c>',
                             rb'<c r="C2" t="str"><f>\1</f><v></v></c>', d))
    (row,) = read_sites(path)
    assert row.inputs["pue"] == BY_NAME["pue"].default   # shown empty, so the default


@pytest.mark.skipif(find_soffice() is None, reason="LibreOffice is not installed")
def test_a_formula_saved_by_a_spreadsheet_program_gives_its_value(tmp_path):
    wb = sheet_of([["site_name", "gpus"], ["A", "=4*256"]])
    (saved,) = recalculate([save(wb, tmp_path / "s.xlsx")], tmp_path / "saved")
    (row,) = read_sites(saved)
    assert row.inputs["gpus"] == 1024   # 4 × 256, computed and stored by LibreOffice


# -- merged cells ---------------------------------------------------------------------------------
def test_merged_cells_down_one_column_give_each_row_the_shown_value(tmp_path):
    wb = sheet_of([["site_name", "gpus", "measured_tps"], ["A", 64, 33333], ["B", 128, None],
                   ["C", 256, 1000]])
    wb.active.merge_cells("C2:C3")
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    assert [r.inputs["measured_tps"] for r in sites.rows] == [33333, 33333, 1000]
    assert any(n.startswith("merged cells C2:C3: the value it shows (33,333) is read for each "
                            "of rows 2–3") for n in sites.notes)


def test_merged_cells_across_columns_or_over_the_header_are_refused(tmp_path):
    wb = sheet_of([["site_name", "gpus", "pue"], ["A", 64, None], ["B", 128, 1.2]])
    wb.active.merge_cells("B2:C2")
    sites = load_sites(save(wb, tmp_path / "a.xlsx"))
    assert ("row 2: merged cells=B2:C2: span columns B to C: only the first holds a value"
            in messages(sites))
    wb = sheet_of([["site_name", "gpus"], [None, 64], ["B", 128]])
    wb.active.merge_cells("B1:B2")
    sites = load_sites(save(wb, tmp_path / "b.xlsx"))
    assert "merged cells=B1:B2: cover the header row" in messages(sites)
    assert sites.file_problems


def test_merged_title_above_the_header_is_fine(tmp_path):
    wb = sheet_of([["Our sites", None], ["site_name", "gpus"], ["A", 1024]])
    wb.active.merge_cells("A1:B1")
    (row,) = read_sites(save(wb, tmp_path / "s.xlsx"))
    assert row.inputs["gpus"] == 1024


# -- decimal separators ---------------------------------------------------------------------------
def csv_file(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_semicolon_file_reads_german_thousands_and_decimals(tmp_path):
    path = csv_file(tmp_path, "site_name;capex_per_gpu;gpus;pue;tef_target\n"
                              "A;40.000;1.024;1,25;65%\nB;1.234,5;2048;1,3;0,7\n")
    sites = load_sites(path)
    a, b = (r.inputs for r in sites.rows)
    assert (a["capex_per_gpu"], a["gpus"], a["pue"]) == (40000, 1024, 1.25)
    assert (b["capex_per_gpu"], b["tef_target"][0]) == (1234.5, 0.7)
    (note,) = sites.notes
    assert "decimal commas" in note and "row 2 capex_per_gpu=40.000 = 40000" in note


def test_semicolon_file_with_decimal_points_only(tmp_path):
    (row,) = read_sites(csv_file(tmp_path, "site_name;pue;capex_per_gpu\nA;1.25;40.000\n"))
    # 1.25 decides: decimal points; 40.000 is then forty
    assert (row.inputs["pue"], row.inputs["capex_per_gpu"]) == (1.25, 40.0)


def test_a_file_mixing_decimal_commas_and_points_is_refused(tmp_path):
    sites = load_sites(csv_file(tmp_path, "site_name;pue;tef_target\nA;1,25;0.65\n"))
    assert ("mixes decimal commas (row 2 pue=1,25) and decimal points (row 2 tef_target=0.65)"
            in messages(sites))
    assert sites.file_problems and not sites.valid_rows


def test_tab_file_with_a_decimal_comma_is_read_and_said(tmp_path):
    sites = load_sites(csv_file(tmp_path, "site_name\tavailability\tgpus\nA\t0,995\t1.100\n"))
    (row,) = sites.rows
    assert row.inputs["availability"] == 0.995 and row.inputs["gpus"] == 1100
    (note,) = sites.notes
    assert "decimal commas" in note and "row 2 availability=0,995 can only be a decimal comma" \
        in note


def test_tab_file_with_an_ambiguous_number_names_both_readings(tmp_path):
    sites = load_sites(csv_file(tmp_path, "site_name\tcapex_per_gpu\tgpus\nA\t1,100\t1024\n"))
    (problem,) = sites.problems
    assert str(problem).startswith("row 2: capex_per_gpu=1,100: is ambiguous: 1100 if the ',' "
                                   "separates thousands, 1.100 if it is the decimal separator")
    assert not sites.valid_rows


def test_the_number_that_decides_may_come_last(tmp_path):
    # a tab file of 2,000 rows whose numbers read two ways ("1.100": 1100 or 1.1) until the
    # last row, whose 0,995 can only be a decimal comma: every row is read with decimal commas
    rows = "".join(f"S{i}\t1.100\t1\n" for i in range(1999)) + "Z\t2.048\t0,995\n"
    sites = load_sites(csv_file(tmp_path, "site_name\tgpus\tavailability\n" + rows))
    assert not sites.problems and len(sites.valid_rows) == 2000
    assert {r.inputs["gpus"] for r in sites.rows[:-1]} == {1100}
    assert (sites.rows[-1].inputs["gpus"], sites.rows[-1].inputs["availability"]) == (2048,
                                                                                       0.995)
    (note,) = sites.notes
    assert "row 2001 availability=0,995 can only be a decimal comma" in note
    assert "e.g. row 2 gpus=1.100 = 1100, row 3 gpus=1.100 = 1100" in note
    # without it, each of them is refused, naming both readings
    sites = load_sites(csv_file(tmp_path, "site_name\tgpus\n" + "A\t1.100\nB\t40.000\n",
                                "b.csv"))
    assert [p.where for p in sites.problems] == ["row 2", "row 3"]


def test_comma_file_reads_quoted_thousands(tmp_path):
    (row,) = read_sites(csv_file(tmp_path, 'site_name,capex_per_gpu\nA,"40,000"\n'))
    assert row.inputs["capex_per_gpu"] == 40000
    assert load_sites(csv_file(tmp_path, 'site_name,pue\nA,"1,25"\n', "b.csv")).notes


def test_text_columns_are_never_read_as_numbers(tmp_path):
    (row,) = read_sites(csv_file(tmp_path, "site_name;pue\n1,5;1,2\n"))
    assert row.inputs["site_name"] == "1,5" and row.inputs["pue"] == 1.2


# -- names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200f", "\x1b"])
def test_bidirectional_and_control_characters_in_names_are_refused(tmp_path, char):
    sites = load_sites(csv_file(tmp_path, f"site_name,gpus\nEvil{char}xslx.exe,1024\nOK,1024\n"))
    (problem,) = sites.problems
    assert problem.where == "row 2" and "control characters" in problem.message
    assert char not in safe_file_stem(f"a{char}b")


def test_a_sites_workbook_with_a_member_that_expands_too_much_is_refused_unread(tmp_path):
    path = save(sheet_of([["site_name", "gpus"], ["A", 1024]]), tmp_path / "s.xlsx")
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/media/filler.xml", b"\0" * 20_000_000)   # 20 MB of zeros: ~1000x
    with pytest.raises(InputError, match=r"refused as a possible zip bomb: xl/media/filler.xml "
                                         r"expands [\d,]+× .*save the sites as CSV UTF-8"):
        load_sites(path)


# -- what is not a file ---------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "sites.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"sites file=\S+sites.csv: is a named pipe \(FIFO\), "
                                         r"not a regular file"):
        load_sites(fifo)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_link_to_a_device_is_not_no_such_file(tmp_path):
    link = tmp_path / "sites.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputError, match=r"is a character device \(a link to /dev/zero\), not a "
                                         r"regular file"):
        load_sites(link)
    dangling = tmp_path / "gone.xlsx"
    dangling.symlink_to(tmp_path / "moved.xlsx")
    with pytest.raises(InputError, match=r"is a link to \S+moved.xlsx, which does not exist"):
        load_sites(dangling)


def test_a_default_is_never_taken_for_a_merged_follower(tmp_path):
    # the case: C3:C4 showing 33,333 must not give the second site the default
    wb = sheet_of([["site_name", "gpus", "measured_tps"], ["A", 1, 2], ["B", 64, 33333],
                   ["C", 64, None]])
    wb.active.merge_cells("C3:C4")
    sites = load_sites(save(wb, tmp_path / "s.xlsx"))
    assert sites.rows[2].inputs["measured_tps"] == 33333 != BY_NAME["measured_tps"].default


def test_raw_zip_cached_value_of_a_formula_is_used(tmp_path):
    # A formula whose value the file stores (as Excel saves it), made by editing the sheet XML.
    path = save(sheet_of([["site_name", "gpus"], ["A", "=2*512"]]), tmp_path / "s.xlsx")
    rewrite(path, "xl/worksheets/sheet1.xml",
            lambda d: re.sub(rb"(<c r=\"B2\"[^>]*>)<f>([^<]*)</f>(<v\s*/>|<v></v>)?",
                             rb"\1<f>\2</f><v>1024</v>", d))
    (row,) = read_sites(path)
    assert row.inputs["gpus"] == 1024


# -- really saved by a spreadsheet program in another locale -------------------------------------
_LOCALE_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale" oor:op="fuse">\
<value>{locale}</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooLocale" oor:op="fuse">\
<value>{locale}</value></prop></item>
</oor:items>
"""


@pytest.mark.skipif(find_soffice() is None, reason="LibreOffice is not installed")
@pytest.mark.parametrize(("locale", "delimiter", "line"), [
    ("de-DE", 59, "Berlin;40.000,0;1,25;0,995;1.024"),    # ; in a German locale
    ("de-DE", 9, "Berlin\t40.000,0\t1,25\t0,995\t1.024"),  # tab, German
    ("en-US", 59, "Berlin;40,000.0;1.25;0.995;1,024"),    # ; written by an English locale
])
def test_csv_saved_by_libreoffice_in_a_locale_reads_the_same(tmp_path, locale, delimiter, line):
    import subprocess

    wb = sheet_of([["site_name", "capex_per_gpu", "pue", "availability", "gpus"],
                   ["Berlin", 40000, 1.25, 0.995, 1024], ["Paris", 1234.5, 1.3, 0.99, 2048]])
    for row in (2, 3):   # thousands separators and a decimal, as a finance sheet shows them
        wb.active.cell(row, 2).number_format = "#,##0.0"
        wb.active.cell(row, 5).number_format = "#,##0"
    source = save(wb, tmp_path / "sites.xlsx")
    profile = tmp_path / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(
        _LOCALE_PROFILE.format(locale=locale), encoding="utf-8")
    # tokens: delimiter, quote, UTF-8, first line, -, language, -, -, save cells as shown
    flt = f"csv:Text - txt - csv (StarCalc):{delimiter},34,76,1,,0,false,true,true"
    subprocess.run([find_soffice(), f"-env:UserInstallation={profile.as_uri()}", "--headless",
                    "--convert-to", flt, "--outdir", str(tmp_path / "csv"), str(source)],
                   check=True, capture_output=True, timeout=180)
    saved = tmp_path / "csv" / "sites.csv"
    assert saved.read_text(encoding="utf-8").splitlines()[1] == line   # what the locale wrote
    sites = load_sites(saved)
    assert not sites.problems
    assert [(r.inputs["capex_per_gpu"], r.inputs["pue"], r.inputs["availability"],
             r.inputs["gpus"]) for r in sites.rows] == [(40000, 1.25, 0.995, 1024),
                                                         (1234.5, 1.3, 0.99, 2048)]


# -- a used range of millions of empty cells ------------------------------------------------------
@pytest.mark.parametrize("far", ["XFD1048576", "A1048576", "XFD1"])
def test_a_formatted_empty_cell_far_away_does_not_make_the_reader_hang(tmp_path, far):
    from openpyxl.styles import Font

    from tests.tools import command

    wb = sheet_of([["site_name", "gpus", "pue", "availability"], ["A", 1024, 1.3, "99.5%"]])
    wb.active[far].font = Font(bold=True)   # formatted, empty: the used range reaches it
    path = save(wb, tmp_path / "sites.xlsx")
    # a process of its own: before, reading this sheet created every cell of its used range
    proc = command.process("batch", path, "-o", tmp_path / "out", "--quiet", cwd=tmp_path,
                           timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["A.xlsx", "portfolio.xlsx"]
    (row,) = load_sites(path).rows
    assert (row.inputs["gpus"], row.inputs["pue"], row.inputs["availability"]) == (1024, 1.3,
                                                                                   0.995)


def test_a_value_far_down_is_read_as_a_row_without_a_rectangle_of_cells(tmp_path):
    wb = sheet_of([["site_name", "gpus"], ["A", 1024]])
    wb.active["A1048576"] = "Z"
    wb.active["B1048576"] = 2048
    sites = load_sites(save(wb, tmp_path / "sites.xlsx"))
    assert [(r.row, r.site_name) for r in sites.rows] == [(2, "A"), (1048576, "Z")]
    assert sites.rows[1].inputs["gpus"] == 2048
