"""The audit finds each tampering of a generated workbook, with its cell address.

Every workbook here comes from the real batch; each test copies one and changes it the way a
site manager (or someone editing the file behind Excel's back) would.
"""

from __future__ import annotations

import pytest
from openpyxl.workbook.defined_name import DefinedName

from tokenfactory_xl.portfolio.audit import MAX_VALUE_FINDINGS, audit_workbook, current_template
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs

from .collect_support import (
    cell_of,
    copy,
    edit_stored_value,
    edit_with_openpyxl,
    set_input,
    site_rows,
)


@pytest.fixture
def alpha(generated, tmp_path):
    """A copy of Alpha's workbook to tamper with."""
    return copy(generated["Alpha"], tmp_path)


def codes(audit, severity=None):
    return {(f.code, f.where) for f in audit.findings if severity in (None, f.severity)}


def test_an_untouched_generated_workbook_gives_no_finding(generated):
    for site, path in generated.items():
        audit = audit_workbook(path)
        assert audit.findings == [], (site, audit.findings)
        assert audit.included and audit.version == current_template().version
        expected = run(make_inputs(site_rows()[site]))
        assert audit.result.summary == expected.summary


def test_an_audit_keeps_the_portfolio_row_not_the_months(generated):
    """A collect of thousands of workbooks keeps each one's audit: its result holds the row the
    portfolio writes (every figure a full run gives), not the model's monthly arrays."""
    import pickle

    from tokenfactory_xl.portfolio.contents import figures, site_summary

    for site, path in generated.items():
        audit = audit_workbook(path)
        full = run(make_inputs(site_rows()[site]))
        assert figures(audit.result) == site_summary(full)
        assert audit.result.summary == full.summary and audit.result.uplift == full.uplift
        assert {name: (sc.summary, sc.warnings) for name, sc in audit.result.scenarios.items()} \
            == {name: (sc.summary, sc.warnings) for name, sc in full.scenarios.items()}
        assert audit.result.lines == {}
        assert all(sc.lines == {} for sc in audit.result.scenarios.values())
        assert all(getattr(v, "size", 1) == 1 for v in audit.result.values.values())
        # what a worker process hands back for each workbook
        assert len(pickle.dumps(audit)) < len(pickle.dumps(full)) // 20


def test_a_formula_edited(alpha):
    sheet, coord = cell_of("out_npv")
    original = current_template().formulas[sheet][coord]

    def edit(wb):
        wb[sheet][coord] = f"=({original})*1.1"

    audit = audit_workbook(edit_with_openpyxl(alpha, edit))
    [finding] = [f for f in audit.findings if f.code == "formula_edited"]
    assert (finding.severity, finding.where) == ("error", f"{sheet}!{coord}")
    assert finding.expected == "=" + original and finding.found == f"=({original})*1.1"
    # The portfolio still gets the model's figure, not the edited formula's.
    assert audit.included
    assert audit.result.summary["npv"] == run(make_inputs(site_rows()["Alpha"])).summary["npv"]


def test_a_formula_replaced_by_a_typed_number(alpha):
    sheet, coord = cell_of("out_ebitda_total")
    audit = audit_workbook(edit_with_openpyxl(alpha, lambda wb: wb[sheet].__setitem__(
        coord, 123456789)))
    [finding] = [f for f in audit.findings if f.code == "formula_replaced"]
    assert (finding.severity, finding.where) == ("error", f"{sheet}!{coord}")
    assert "typed number" in finding.message and finding.found == "123,456,789"
    assert finding.expected == "=" + current_template().formulas[sheet][coord]


def test_a_formula_deleted(alpha):
    sheet, coord = cell_of("out_irr")
    audit = audit_workbook(edit_with_openpyxl(alpha, lambda wb: wb[sheet].__setitem__(
        coord, None)))
    assert ("formula_deleted", f"{sheet}!{coord}") in codes(audit, "error")


def test_a_sheet_added_and_a_sheet_deleted(alpha):
    def edit(wb):
        wb.create_sheet("My notes")["A1"] = "call the site on Monday"
        del wb["Sensitivity"]

    audit = audit_workbook(edit_with_openpyxl(alpha, edit))
    assert ("sheet_added", "My notes") in codes(audit, "warning")
    assert ("sheet_deleted", "Sensitivity") in codes(audit, "error")


def test_an_input_typed_as_95_where_95_percent_was_meant(alpha):
    where = []
    audit = audit_workbook(edit_with_openpyxl(
        alpha, lambda wb: where.append(set_input(wb, "availability", 95))))
    [finding] = [f for f in audit.findings if f.code == "input"]
    assert (finding.severity, finding.where) == ("error", where[0])
    assert "availability=95: looks like a percentage" in finding.message
    assert "95% or 0.95" in finding.message
    assert not audit.included  # an input that cannot be trusted keeps the site out


def test_an_input_out_of_range_in_one_scenario(alpha):
    where = []
    audit = audit_workbook(edit_with_openpyxl(
        alpha, lambda wb: where.append(set_input(wb, "decline_per_quarter", -0.2, scenario=2))))
    [finding] = [f for f in audit.findings if f.code == "input"]
    assert finding.where == where[0]
    assert finding.message.startswith("decline_per_quarter.Downside=-0.2: is out of range")


def test_an_old_template_version(alpha):
    sheet, coord = cell_of("tfom_version")
    audit = audit_workbook(edit_with_openpyxl(alpha, lambda wb: wb[sheet].__setitem__(
        coord, "0.0.9")))
    assert ("version_old", f"{sheet}!{coord}") in codes(audit, "warning")
    assert audit.version == "0.0.9" and audit.included


def test_stale_stored_values_edited_in_the_xml(alpha):
    sheet, coord = cell_of("out_npv")
    old = edit_stored_value(alpha, sheet, coord, "999999999")
    audit = audit_workbook(alpha)
    assert [(f.severity, f.code, f.where) for f in audit.findings] == [
        ("error", "values_stale", f"{sheet}!{coord}")]
    finding = audit.findings[0]
    assert finding.found == "999,999,999"
    assert float(old) == pytest.approx(run(make_inputs(site_rows()["Alpha"])).summary["npv"])


def test_recalculation_noise_in_every_number_hides_no_stale_value(alpha):
    """Every stored number moved in its ninth digit, as another engine's recalculation leaves
    them (too many to compare one by one), and two figures typed over in the XML, one among
    the Timeline's thousands of cells: only those two are stale."""
    import re
    import zipfile

    from tokenfactory_xl.workbook.build import plan

    from .collect_support import rewrite_member

    sheet, coord = cell_of("out_npv")
    edit_stored_value(alpha, sheet, coord, "999999999")
    month = plan().lines["revenue"]
    edit_stored_value(alpha, month.sheet, month.coords[5], "999999999")
    number = re.compile(rb"</f><v>(-?[0-9][0-9.]*(?:E[-+]?[0-9]+)?)</v>")  # a formula's
    with zipfile.ZipFile(alpha) as archive:
        parts = [n for n in archive.namelist() if n.startswith("xl/worksheets/")]
    moved = []

    def nudge(match: re.Match) -> bytes:
        value = float(match.group(1))
        if value in (0.0, 999999999.0):
            return match.group(0)
        moved.append(value)
        return b"</f><v>" + repr(value * (1 + 1e-9)).encode() + b"</v>"

    for part in parts:
        rewrite_member(alpha, part, lambda data: number.sub(nudge, data))
    assert len(moved) > 5_000
    audit = audit_workbook(alpha)
    assert sorted((f.severity, f.code, f.where) for f in audit.findings) == [
        ("error", "values_stale", f"{sheet}!{coord}"),
        ("error", "values_stale", f"Timeline!{month.coords[5]}")]


def test_an_input_edited_in_the_xml_leaves_every_dependent_value_stale(alpha):
    # Typing a value into the XML without recalculating: the inputs say one thing, the stored
    # figures another; the recomputation follows the inputs.
    sheet, coord = cell_of("in_gpus")
    edit_stored_value(alpha, sheet, coord, "4096")
    audit = audit_workbook(alpha)
    assert audit.inputs["gpus"] == 4096
    assert audit.result.summary == run(make_inputs({**site_rows()["Alpha"],
                                                    "gpus": 4096})).summary
    stale = [f for f in audit.findings if f.code == "values_stale"]
    assert {f.severity for f in stale} == {"error"}
    assert len(stale) == MAX_VALUE_FINDINGS + 1
    assert all("!" in f.where for f in stale[:-1])
    assert stale[-1].message.startswith("and ") and "more stored values" in stale[-1].message


def test_a_moved_input_cell_still_resolves(alpha):
    def edit(wb):
        wb["Inputs"]["Z99"] = 3000
        wb.defined_names["in_gpus"] = DefinedName("in_gpus", attr_text="Inputs!$Z$99")

    audit = audit_workbook(edit_with_openpyxl(alpha, edit))
    assert audit.inputs["gpus"] == 3000
    assert ("name_moved", "in_gpus") in codes(audit, "warning")
    expected = make_inputs({**site_rows()["Alpha"], "gpus": 3000})
    assert audit.result.summary == run(expected).summary


def test_a_missing_input_name_keeps_the_site_out(alpha):
    def edit(wb):
        del wb.defined_names["in_pue"]

    audit = audit_workbook(edit_with_openpyxl(alpha, edit))
    assert ("name_missing", "in_pue") in codes(audit, "error")
    assert not audit.included


def test_an_openpyxl_edit_of_inputs_only_is_a_note(alpha):
    audit = audit_workbook(edit_with_openpyxl(alpha, lambda wb: set_input(wb, "gpus", 2000)))
    assert [(f.severity, f.code) for f in audit.findings] == [("info", "values_absent")]
    assert audit.result.summary == run(make_inputs({**site_rows()["Alpha"],
                                                    "gpus": 2000})).summary


def test_nothing_is_written_to_the_audited_file(alpha):
    before = (alpha.read_bytes(), alpha.stat().st_mtime_ns)
    audit_workbook(alpha)
    assert (alpha.read_bytes(), alpha.stat().st_mtime_ns) == before


def test_the_fast_scan_reads_exactly_what_the_full_parser_reads(generated, tmp_path):
    # The common cells are scanned with a regular expression; defusedxml's full parse of the
    # same sheets is the reference, on a batch workbook and on one saved by openpyxl.
    import io

    from tokenfactory_xl.files import safe_xlsx

    edited = edit_with_openpyxl(copy(generated["Beta"], tmp_path),
                                lambda wb: set_input(wb, "site_name", 'Beta & "Co" <HQ>'))
    for path in (generated["Alpha"], edited):
        with safe_xlsx.open_xlsx(path) as content:
            for sheet in content.sheets:
                data = content._zip.read(sheet.part)
                fast = safe_xlsx._scan_cells(data, content)
                assert fast is not None, (path.name, sheet.title)  # these take the fast path
                full = safe_xlsx._parse_cells(io.BufferedReader(io.BytesIO(data)), sheet.part,
                                              content)
                assert fast == full, (path.name, sheet.title)
                assert fast.values
    assert audit_workbook(edited).inputs["site_name"] == 'Beta & "Co" <HQ>'


def test_worker_processes_give_the_same_audits_in_the_same_order(generated, tmp_path):
    # untouched, edited, refused and repeated files, audited in this process and by two workers
    from tokenfactory_xl.portfolio.collect import collect

    folder = tmp_path / "inbox"
    files = [copy(generated[site], folder) for site in ("Gamma", "Alpha", "Beta")]
    files.append(edit_with_openpyxl(copy(generated["Alpha"], folder, "Alpha edited.xlsx"),
                                    lambda wb: set_input(wb, "gpus", 2048)))
    (folder / "notes.xlsx").write_text("not a workbook", encoding="utf-8")
    files.append(folder / "notes.xlsx")
    files.append(copy(generated["Beta"], folder, "Beta again.xlsx"))
    files *= 3  # more files than workers, so each worker audits several

    def seen(audits):
        return [(a.path, a.status, a.findings, a.inputs,
                 None if a.result is None else a.result.summary)
                for a in audits]

    alone = collect(files, jobs=1)
    shared = collect(files, jobs=2)
    assert seen(shared) == seen(alone)
    assert [a.status for a in alone[:6]] == ["ok", "ok", "ok", "warning", "refused", "warning"]


def test_numbers_compared_in_bulk_agree_with_the_cell_by_cell_rule():
    """Stored values close to the recomputation (as Excel leaves them after recalculating)
    are set aside in bulk; the bulk rule says "close" exactly where ``math.isclose`` (or the
    IRR sheet's noise) does for two finite numbers, and leaves anything else to the
    cell-by-cell comparison."""
    import math
    import random

    from tokenfactory_xl.portfolio.audit import VALUE_ABS_TOL, VALUE_REL_TOL, _close_numbers

    rnd = random.Random(17)
    others = [math.nan, math.inf, -math.inf, None, "", "none", "#N/A", True, False, 3]
    for noise in (0.0, 0.5):
        want, stored = [], []
        for _ in range(5_000):
            w = rnd.choice([rnd.uniform(-1e9, 1e9), rnd.uniform(-1e-5, 1e-5), 0.0,
                            rnd.choice(others)])
            if isinstance(w, float) and rnd.random() < 0.8:
                scale = rnd.choice([1e-12, 1e-9, 1e-7, 1e-6, 1.1e-6, 1e-3, 0.0])
                s = w * (1 + rnd.uniform(-1, 1) * scale) + rnd.choice([0.0, 4e-7, 2e-6, 0.4])
            else:
                s = rnd.choice([rnd.uniform(-1e9, 1e9), *others])
            want.append(w)
            stored.append(s)
        close = _close_numbers(want, stored, noise)
        assert 0 < sum(close) < len(want)
        for w, s, ok in zip(want, stored, close, strict=True):
            numbers = type(w) is float and type(s) is float and math.isfinite(w)
            expected = numbers and (math.isclose(w, s, rel_tol=VALUE_REL_TOL,
                                                 abs_tol=VALUE_ABS_TOL) or abs(w - s) <= noise)
            assert ok == expected, (w, s, noise)
