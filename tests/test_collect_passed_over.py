"""collect names every file of a folder it does not read, and why: a site sent as .ods, .xlsb
or .numbers is an error (it is missing from the portfolio), Excel's lock file a warning."""

from __future__ import annotations

from pathlib import Path

from tests.collect_support import copy
from tests.tools import command


def collect(*args: str | Path, cwd: Path):
    return command.run("collect", *map(str, args), cwd=cwd)


def test_every_file_not_read_is_listed_with_its_reason(generated, tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Alpha"], inbox)
    copy(generated["Beta"], inbox, "Beta.ods")          # re-saved by LibreOffice
    copy(generated["Gamma"], inbox, "Gamma.xlsb")
    (inbox / "Delta.numbers" / "Index").mkdir(parents=True)  # a Numbers document is a folder
    (inbox / "Delta.numbers" / "Index" / "Document.iwa").write_bytes(b"\0")
    (inbox / "~$Alpha.xlsx").write_bytes(b"\0" * 165)   # Excel's lock file: Alpha is open
    (inbox / "notes.txt").write_text("call Beta", encoding="utf-8")
    proc = collect("inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 1   # sites are missing: errors
    lines = {line.split()[1]: line for line in proc.stdout.splitlines()[:6]}
    assert lines["inbox/Alpha.xlsx"].startswith("ok")
    for name, why in [("Beta.ods", "an OpenDocument spreadsheet"),
                      ("Gamma.xlsb", "an Excel binary workbook"),
                      ("Delta.numbers", "an Apple Numbers document"),
                      ("~$Alpha.xlsx", "an Excel lock file"),
                      ("notes.txt", "not a workbook (.txt), not read")]:
        assert lines[f"inbox/{name}"].startswith("skipped"), name
        assert why in lines[f"inbox/{name}"]
    assert ("6 files: 1 in the portfolio, 0 left out, 5 skipped; 3 errors, 1 warning, 1 note"
            in proc.stdout)
    report = (tmp_path / "p-report.md").read_text(encoding="utf-8")
    assert "Gamma.xlsb" in report and "an Excel binary workbook" in report


def test_a_folder_of_workbooks_in_other_formats_says_what_it_found(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "Beta.ods").write_bytes(b"PK")
    proc = collect("inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no workbook found in inbox" in proc.stderr
    assert "inbox/Beta.ods: an OpenDocument spreadsheet" in proc.stderr


def test_collect_into_a_closed_pipe_does_not_say_nothing_was_written(generated, tmp_path):
    import os
    import subprocess
    import sys

    copy(generated["Alpha"], tmp_path / "inbox")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "collect", "inbox", "-o",
                             "p.xlsx"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    proc.stdout.close()   # the reader is gone before anything is printed (`| head -0`)
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert (tmp_path / "p.xlsx").exists() and (tmp_path / "p-report.md").exists()
    assert "nothing was written" not in err and "Traceback" not in err
