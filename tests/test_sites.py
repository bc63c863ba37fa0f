"""Reading and checking sites files: every problem at once, with row, column, value and remedy."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tools.memory import many_sites, traced_peak
from tokenfactory_xl.core.catalogue import BY_NAME, INPUTS
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.sites.load import (
    MAX_STEM_BYTES,
    RESERVED_STEMS,
    load_sites,
    read_sites,
    safe_file_stem,
)

ROOT = Path(__file__).resolve().parents[1]


def write_csv(tmp_path: Path, text: str, name: str = "sites.csv", bom: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def test_example_sites_file_is_valid_and_varied():
    rows = read_sites(ROOT / "templates" / "sites-example.csv")
    assert len(rows) == 5
    inputs = [r.inputs for r in rows]
    assert {i["ownership"] for i in inputs} == {"own", "rent"}
    assert len({i["gpu_model"] for i in inputs}) >= 4
    assert len({i["horizon_months"] for i in inputs}) >= 4
    assert len({i["price_output_per_mtok"] for i in inputs}) >= 3
    # The per-scenario column overrides one scenario; the bare column sets all three first.
    header = (ROOT / "templates" / "sites-example.csv").read_text().splitlines()[0].split(",")
    assert "tef_target" in header and "tef_target.Optimised" in header
    for i in inputs:
        base, optimised, downside = i["tef_target"]
        assert base == downside and optimised > base


def test_defaults_fill_missing_columns_and_empty_cells(tmp_path):
    path = write_csv(tmp_path, "site_name,gpus,pue\nAlpha,,1.4\nBeta,2048,\n")
    alpha, beta = read_sites(path)
    assert (alpha.row, beta.row) == (2, 3)
    assert alpha.inputs["gpus"] == BY_NAME["gpus"].default
    assert alpha.inputs["pue"] == 1.4
    assert beta.inputs["gpus"] == 2048 and beta.inputs["pue"] == BY_NAME["pue"].default
    assert beta.inputs["availability"] == BY_NAME["availability"].default


def test_bare_per_scenario_column_sets_every_scenario_and_a_suffix_one(tmp_path):
    path = write_csv(tmp_path, "site_name,tef_target,decline_per_quarter.downside\nA,0.4,35%\n")
    (row,) = read_sites(path)
    assert row.inputs["tef_target"] == (0.4, 0.4, 0.4)
    base, optimised, _ = BY_NAME["decline_per_quarter"].default
    assert row.inputs["decline_per_quarter"] == (base, optimised, 0.35)


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
@pytest.mark.parametrize("bom", [False, True])
def test_delimiters_and_byte_order_mark(tmp_path, delimiter, bom):
    text = delimiter.join(["site_name", "gpus", "tef_target"]) + "\n"
    text += delimiter.join(["Zürich", "512", "0.5"]) + "\n"
    (row,) = read_sites(write_csv(tmp_path, text, bom=bom))
    assert row.inputs["site_name"] == "Zürich"
    assert row.inputs["gpus"] == 512 and row.inputs["tef_target"][0] == 0.5


def test_semicolon_file_reads_decimal_commas(tmp_path):
    path = write_csv(tmp_path, "site_name;pue;tef_target\nA;1,25;0,4\n")
    (row,) = read_sites(path)
    assert row.inputs["pue"] == 1.25 and row.inputs["tef_target"][0] == 0.4


def test_every_problem_at_once_with_row_column_value_and_allowed(tmp_path):
    path = write_csv(tmp_path, (
        "site_name,gpus,availability,ownership,start_date\n"
        "Alpha,many,0.99,own,2027-01-01\n"
        "\n"                                  # an empty line: skipped, but it keeps its number
        "Beta,1024,99.5,lease,2027-01-15\n"
        "Gamma,0,,,\n"
    ))
    sites = load_sites(path)
    problems = sites.problems
    found = {(p.where, p.name, p.value) for p in problems}
    assert ("row 2", "gpus", "many") in found
    assert ("row 4", "availability", "99.5") in found
    assert ("row 4", "ownership", "lease") in found
    assert ("row 4", "start_date", "2027-01-15") in found
    assert ("row 5", "gpus", "0") in found
    text = str(InputError(problems))
    # The catalogue's words: what is allowed, and the fix.
    assert f"allowed: {BY_NAME['gpus'].allowed}" in text
    assert "enter 99.5% or 0.995" in text
    assert "one of own, rent" in text
    assert "enter 2027-01-01" in text
    assert [r.ok for r in sites.rows] == [False, False, False]
    with pytest.raises(InputError) as caught:
        read_sites(path)
    assert len(caught.value.problems) == len(problems)


def test_unknown_columns_are_named_with_the_nearest_known_name(tmp_path):
    header = "site_name,gpu,capex_per_gpu,availabilty,tef_target.Best"
    path = write_csv(tmp_path, header + "\nA,1,2,3,4\n")
    sites = load_sites(path)
    messages = [str(p) for p in sites.file_problems]
    assert any("column B" in m and "did you mean gpus?" in m for m in messages), messages
    assert any("column D" in m and "did you mean availability?" in m for m in messages)
    assert any("column E" in m and "is not a scenario" in m for m in messages)
    assert not any("capex_per_gpu" in m for m in messages)


def test_header_names_ignore_case_and_spaces(tmp_path):
    (row,) = read_sites(write_csv(tmp_path, " Site_Name , GPUs \nA,2048\n"))
    assert row.inputs["gpus"] == 2048


def test_missing_site_name_column_duplicate_column_and_no_rows(tmp_path):
    sites = load_sites(write_csv(tmp_path, "gpus,gpus\n1,2\n"))
    text = " | ".join(str(p) for p in sites.file_problems)
    assert "site_name" in text and "column is missing" in text
    assert "appears twice (also column A)" in text
    empty = load_sites(write_csv(tmp_path, "site_name,gpus\n\n,\n", name="empty.csv"))
    assert "has a header but no site rows" in str(InputError(empty.problems))
    with pytest.raises(InputError, match="is empty"):
        load_sites(write_csv(tmp_path, "\n\n", name="blank.csv"))


def test_empty_site_name_is_a_problem_not_the_default(tmp_path):
    sites = load_sites(write_csv(tmp_path, "site_name,gpus\n,2048\nB,2048\n"))
    (problem,) = sites.problems
    assert problem.where == "row 2" and problem.name == "site_name" and "empty" in problem.message


def test_duplicate_site_names_ignoring_case_and_after_file_name_mapping(tmp_path):
    sites = load_sites(write_csv(tmp_path, "site_name\nAlpha\nALPHA\nA/B\nA_B\nA:B.\n"))
    by_row = {p.where: str(p) for p in sites.problems}
    assert set(by_row) == {"row 3", "row 5", "row 6"}
    assert "same site name as row 2" in by_row["row 3"]
    assert "same file name A_B.xlsx as row 4" in by_row["row 5"]
    assert "same file name A_B.xlsx as row 4" in by_row["row 6"]
    assert [r.ok for r in sites.rows] == [True, False, True, False, False]


def test_control_characters_are_refused(tmp_path):
    sites = load_sites(write_csv(tmp_path, 'site_name,gpu_model\n"Two\nlines",H100\nB,"x\x07"\n'))
    names = {(p.where, p.name) for p in sites.problems}
    assert names == {("row 2", "site_name"), ("row 3", "gpu_model")}
    assert all("control characters" in p.message for p in sites.problems)


def test_not_utf8_and_wrong_type_and_missing(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("site_name\nZ\xfcrich\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8.*CSV UTF-8"):
        load_sites(latin)
    with pytest.raises(InputError, match="neither .csv nor .xlsx"):
        load_sites(write_csv(tmp_path, "x", name="sites.txt"))
    with pytest.raises(InputError, match="does not exist"):
        load_sites(tmp_path / "nope.csv")
    fake = tmp_path / "fake.xlsx"
    fake.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable .xlsx"):
        load_sites(fake)


def test_xlsx_first_sheet_named_sheet_and_typed_cells(tmp_path):
    wb = openpyxl.Workbook()
    first = wb.active
    first.title = "Notes"
    first.append(["site_name", "gpus"])
    first.append(["First", 1024])
    ws = wb.create_sheet("Sites")
    ws.append(["site_name", "start_date", "gpus", "tef_target.Optimised", "ownership"])
    ws.append(["Dublin", dt.datetime(2028, 3, 1), 512, 0.7, "Rent"])
    ws.append([None, None, None, None, None])
    ws.append(["Cork", dt.datetime(2028, 3, 2), 256.5, 1.7, "own"])
    path = tmp_path / "sites.xlsx"
    wb.save(path)
    (first_row,) = read_sites(path)
    assert first_row.inputs["site_name"] == "First"
    sites = load_sites(path, sheet="Sites")
    dublin, cork = sites.rows
    assert dublin.ok and dublin.inputs["start_date"] == dt.date(2028, 3, 1)
    assert dublin.inputs["ownership"] == "rent" and dublin.inputs["tef_target"][1] == 0.7
    assert cork.row == 4
    assert {p.name for p in cork.problems} == {"start_date", "gpus", "tef_target.Optimised"}
    with pytest.raises(InputError, match="the sheets are Notes, Sites"):
        load_sites(path, sheet="Missing")


def test_every_catalogue_input_is_a_valid_column(tmp_path):
    header, values = [], []
    for spec in INPUTS:
        header.append(spec.name)
        default = spec.default[0] if spec.per_scenario else spec.default
        values.append("" if default is None else str(default))  # blank: an optional input
    (row,) = read_sites(write_csv(tmp_path, ",".join(header) + "\n" + ",".join(values) + "\n"))
    for spec in INPUTS:
        expected = (spec.default[0],) * 3 if spec.per_scenario else spec.default
        assert row.inputs[spec.name] == expected, spec.name


@pytest.mark.parametrize(("name", "stem"), [
    ("Frankfurt H100 (owned)", "Frankfurt H100 (owned)"),
    ("a/b\\c:d*e?f\"g<h>i|j", "a_b_c_d_e_f_g_h_i_j"),
    ("CON", "CON_"),
    ("nul.txt", "nul_.txt"),
    ("Com3 .old", "Com3_.old"),
    ("lpt1", "lpt1_"),
    ("Portfolio", "Portfolio_"),
    ("trailing. . ", "trailing"),
    ("..hidden", "hidden"),
    ("...", "site"),
    ("tab\there", "tab_here"),
    ("=HYPERLINK(\"x\")", "=HYPERLINK(_x_)"),
])
def test_safe_file_stem(name, stem):
    assert safe_file_stem(name) == stem


def test_safe_file_stem_is_length_limited_at_a_character_boundary():
    stem = safe_file_stem("Ü" * 80)
    assert len(stem.encode("utf-8")) <= MAX_STEM_BYTES
    assert stem == "Ü" * (MAX_STEM_BYTES // 2)


@given(st.text(min_size=0, max_size=120))
def test_safe_file_stem_is_always_a_safe_name(name):
    stem = safe_file_stem(name)
    assert stem and stem == stem.rstrip(" .") and not stem.startswith((" ", "."))
    assert not any(c in stem for c in '<>:"/\\|?*')
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in stem)
    assert len(stem.encode("utf-8")) <= MAX_STEM_BYTES + 1   # + the "_" after a device name
    assert stem.split(".", 1)[0].rstrip(" ").lower() not in RESERVED_STEMS


def test_a_sites_file_is_checked_row_by_row_in_memory_that_does_not_grow_with_its_rows(tmp_path):
    """Checking every row of a sites file holds one row at a time (and a 64-bit hash of each
    row's names, to find two rows that may share one): under 250 bytes a row in all, where
    reading the file whole held its rows as cells, some 2.5 KB each."""
    from tokenfactory_xl.sites.load import SiteRows

    def check(count: int) -> int:
        path = many_sites(tmp_path / f"sites-{count}.csv", count)

        def work() -> None:
            assert sum(row.ok for row in SiteRows(path).checked()) == count

        return traced_peak(work)

    check(20)  # what is made once a process (caches, layouts) is not the rows'
    small, large = check(200), check(2_000)
    assert (large - small) / 1_800 < 250, (small, large)


def test_a_sites_file_read_row_by_row_gives_the_rows_read_whole(tmp_path):
    """The rows checked one at a time are those of :func:`load_sites`, each with its inputs."""
    from tokenfactory_xl.sites.load import SiteRows

    path = many_sites(tmp_path / "sites.csv", 300)
    whole = load_sites(path)
    rows = list(SiteRows(path).checked())
    assert [(r.row, r.file_stem, r.inputs) for r in rows] == [
        (r.row, r.file_stem, r.inputs) for r in whole.rows]
    assert rows[-1].inputs["gpus"] == 555 and rows[-1].site_name == "Site 00299 of the fleet"


def test_a_sites_file_changed_between_its_readings_is_refused(tmp_path):
    """A CSV file is read again for each pass over its rows: one changed in between would be
    checked as one file and written as another, so it is refused."""
    from tokenfactory_xl.sites.load import SiteRows

    path = many_sites(tmp_path / "sites.csv", 5)
    sites = SiteRows(path)
    path.write_text(path.read_text(encoding="utf-8").replace("Site 00004", "Site 00009"),
                    encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(sites.checked())
    assert [(p.value, p.message, p.fix) for p in caught.value.problems] == [
        (str(path), "changed while it was read", "read it once it is complete")]
