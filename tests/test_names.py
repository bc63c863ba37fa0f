"""One rule for names: composed (NFC), no hidden characters, the same for duplicates, file names
and display, in the sites file, ``--set`` and collected workbooks alike."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from tests.collect_support import copy, edit_with_openpyxl, set_input
from tests.tools import command
from tokenfactory_xl import make_inputs
from tokenfactory_xl.core import names
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.portfolio.audit import audit_workbook
from tokenfactory_xl.portfolio.collect import duplicates
from tokenfactory_xl.sites.load import MAX_STEM_BYTES, load_sites, safe_file_stem

COMPOSED = "Z\u00fcrich"         # ü as one character (Windows, most keyboards)
DECOMPOSED = "Zu\u0308rich"      # u + a combining diaeresis (a Mac's file names)
HIDDEN = {
    "\u200b": "U+200B (a zero-width space)",
    "\u00ad": "U+00AD (a soft hyphen)",
    "\ufeff": "U+FEFF (a byte-order mark (zero-width no-break space))",
    "\u2028": "U+2028 (a line separator)",
    "\u2029": "U+2029 (a paragraph separator)",
    "\u2060": "U+2060 (a word joiner)",
}


def sites_csv(tmp_path: Path, names_: list[str]) -> Path:
    path = tmp_path / "sites.csv"
    path.write_text("site_name,gpus\n" + "".join(f'"{n}",1024\n' for n in names_),
                    encoding="utf-8")
    return path


def test_the_key_is_composed_and_ignores_case_and_hidden_characters():
    assert COMPOSED != DECOMPOSED
    assert names.key(COMPOSED) == names.key(DECOMPOSED) == names.key(" ZÜRICH ")
    assert names.key("Frank\u200bfurt") == names.key("Frankfurt")
    assert names.key("Frank\u00a0furt") == names.key("Frank furt")  # a no-break space


@pytest.mark.parametrize(("char", "said"), list(HIDDEN.items()))
def test_a_hidden_character_in_a_name_is_refused_naming_it(char, said):
    with pytest.raises(InputError) as caught:
        make_inputs({"site_name": f"Frank{char}furt"})
    (problem,) = caught.value.problems
    assert f"contains control characters: {said} at character 6" in problem.message


def test_a_byte_that_is_not_utf8_in_a_name_is_refused_and_echoed_escaped():
    # a name typed in a terminal set to Latin-1 reaches Python with the byte as a lone surrogate
    typed = b"Z\xfcrich".decode("utf-8", "surrogateescape")
    with pytest.raises(InputError) as caught:
        make_inputs({"site_name": typed})
    (problem,) = caught.value.problems
    assert "U+DCFC (a byte that is not UTF-8) at character 2" in problem.message
    assert "set to another encoding than UTF-8" in problem.message
    assert str(problem).startswith("site_name=Z\\udcfcrich: ")  # echoed as its escape


def test_a_name_typed_in_another_encoding_stops_template_with_one_line(tmp_path):
    typed = b"Z\xfcrich".decode("utf-8", "surrogateescape")
    proc = command.run("template", "-o", "z.xlsx", "--set", f"site_name={typed}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("tokenfactory-xl: site_name=Z\\udcfcrich: cannot be stored")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "z.xlsx").exists()


def test_a_hidden_character_is_echoed_as_its_escape_not_as_itself():
    with pytest.raises(InputError) as caught:
        make_inputs({"site_name": "Frank\u202efurt"})
    assert "\u202e" not in str(caught.value)
    assert str(caught.value).startswith("site_name=Frank\\u202efurt: ")
    with pytest.raises(InputError) as caught:
        make_inputs({"site_name": "Frank \u200bfurt"})  # quoted: repr escapes it
    assert str(caught.value).startswith("site_name='Frank \\u200bfurt': ")


def test_names_are_read_composed():
    assert make_inputs({"site_name": DECOMPOSED})["site_name"] == COMPOSED
    assert unicodedata.is_normalized("NFC", safe_file_stem(DECOMPOSED))


def test_sites_differing_only_in_composition_are_one_site(tmp_path):
    sites = load_sites(sites_csv(tmp_path, [COMPOSED, DECOMPOSED, "zürich"]))
    first, *others = sites.rows
    assert first.ok
    for row in others:
        assert not row.ok
        assert any("is the same site name as row 2" in p.message for p in row.problems)


def test_batch_refuses_four_names_that_all_display_as_frankfurt(tmp_path):
    path = sites_csv(tmp_path, ["Frankfurt", "Frank\u200bfurt", "Frank\u00adfurt",
                                "Frankfurt\u2060"])
    proc = command.run("batch", str(path), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    # each of the three look-alikes: its hidden character, and the same name as row 2's
    assert "6 problems" in proc.stderr
    assert "site_name=Frank\\u200bfurt" in proc.stderr    # shown escaped, not hidden
    assert "U+00AD (a soft hyphen) at character 6" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_excel_lock_file_names_and_reserved_names_are_not_given(tmp_path):
    assert safe_file_stem("~$Budget") == "_$Budget"
    assert safe_file_stem("CON") == "CON_"
    sites = load_sites(sites_csv(tmp_path, ["~$Budget", "Budget"]))
    assert [r.file_stem for r in sites.rows] == ["_$Budget", "Budget"]


def test_a_name_cut_at_the_file_name_limit_is_explained_as_such(tmp_path):
    stem = "東" * (MAX_STEM_BYTES // 3)  # 40 characters of 3 bytes each in UTF-8
    sites = load_sites(sites_csv(tmp_path, [stem + " North", stem + " South"]))
    assert sites.rows[0].ok
    (problem,) = sites.rows[1].problems
    assert f"file names are cut to {MAX_STEM_BYTES} bytes, and the names differ only after " \
        "that" in problem.message
    assert "punctuation or case" not in problem.fix


def renamed(generated, folder: Path, sites: list[tuple[str, str]]) -> list[Path]:
    """Copies of the generated workbooks ``(site, new name)`` in ``folder``, each renamed."""
    return [edit_with_openpyxl(copy(generated[site], folder, f"a{i}.xlsx"),
                               lambda wb, name=name: set_input(wb, "site_name", name))
            for i, (site, name) in enumerate(sites, start=1)]


def test_collect_counts_a_site_once_whatever_the_composition(generated, tmp_path):
    first, second = renamed(generated, tmp_path / "inbox",
                            [("Alpha", COMPOSED), ("Alpha", DECOMPOSED)])
    audits = [audit_workbook(first), audit_workbook(second)]
    assert all(a.included for a in audits)
    (dup,) = duplicates(audits)
    assert dup.second.path == second


def test_collect_refuses_a_site_name_with_an_invisible_character(generated, tmp_path):
    path = edit_with_openpyxl(copy(generated["Alpha"], tmp_path / "in"),
                              lambda wb: set_input(wb, "site_name", "Alp\u200bha"))
    audit = audit_workbook(path)
    assert not audit.included
    assert any("U+200B (a zero-width space) at character 4" in f.message
               for f in audit.findings)


LATIN, CYRILLIC_A, GREEK_ALPHA = "Frankfurt", "Fr\u0430nkfurt", "\u0391thens"


def test_names_that_look_alike_in_other_alphabets_are_one_look_and_their_letters_named():
    assert names.key(LATIN) != names.key(CYRILLIC_A)
    assert names.look(LATIN) == names.look(CYRILLIC_A) == names.look("FR\u0410NKFURT")
    assert names.look("\uff26\uff52\uff41\uff4e\uff4b\uff46\uff55\uff52\uff54") == "frankfurt"
    assert names.look(GREEK_ALPHA) == names.look("Athens")
    assert names.look_alikes(CYRILLIC_A) == "\u0430 (CYRILLIC SMALL LETTER A) at character 3"
    assert names.look_alikes(LATIN) == names.look_alikes("Z\u00fcrich") == ""
    assert names.look("\u041c\u043e\u0441\u043a\u0432\u0430") != names.look("Frankfurt")


def test_batch_refuses_a_site_that_only_looks_like_another_naming_the_letter(tmp_path):
    moscow = "\u041c\u043e\u0441\u043a\u0432\u0430"  # wholly Cyrillic: a name like any other
    sites_csv(tmp_path, [LATIN, CYRILLIC_A, GREEK_ALPHA, "Athens", moscow])
    proc = command.run("batch", "sites.csv", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(
        "tokenfactory-xl: 2 problems in sites.csv, so nothing was written:")
    assert (f"row 3: site_name={CYRILLIC_A}: looks the same as row 2's site name ('Frankfurt') "
            "but is another name: it holds \u0430 (CYRILLIC SMALL LETTER A) at character 3; "
            "type both names in the plain letters of one alphabet") in proc.stderr
    assert ("row 5: site_name=Athens: looks the same as row 4's site name ('\u0391thens') but "
            "is another name: row 4's holds \u0391 (GREEK CAPITAL LETTER ALPHA) at character 1"
            ) in proc.stderr
    assert moscow not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_collect_pairs_workbooks_whose_site_names_only_look_alike(generated, tmp_path):
    first, second = renamed(generated, tmp_path / "inbox",
                            [("Alpha", LATIN), ("Beta", CYRILLIC_A)])
    (dup,) = duplicates([audit_workbook(first), audit_workbook(second)])
    assert (dup.first.path, dup.second.path) == (first, second)
    assert dup.reason == (f"a site name looking the same ({CYRILLIC_A!r} holds \u0430 "
                          "(CYRILLIC SMALL LETTER A) at character 3)")


def test_an_unknown_input_name_with_a_look_alike_letter_says_which():
    with pytest.raises(InputError) as caught:
        make_inputs({"\u0430vailability": 0.99})
    (problem,) = caught.value.problems
    assert problem.fix == ("did you mean availability? (it holds \u0430 (CYRILLIC SMALL LETTER "
                           "A), which no name holds: retype it in plain letters)")
