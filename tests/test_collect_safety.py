"""collect never double-counts, never replaces what it reads, and keeps a site's text as text.

Workbooks come from the real batch (:mod:`tests.collect_support`); each case checks the message,
the exit status, and that the inputs and the output folder are exactly as before.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import command
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.files import disk as files
from tokenfactory_xl.files.safe_xlsx import open_xlsx
from tokenfactory_xl.portfolio.audit import audit_workbook
from tokenfactory_xl.portfolio.collect import _md, report_markdown

from .collect_support import (
    address,
    cell_of,
    copy,
    edit_with_openpyxl,
    fingerprint,
    rewrite_member,
    set_input,
)

ROOT = Path(__file__).resolve().parents[1]


def collect(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return command.run("collect", *map(str, args), cwd=cwd)


# -- duplicates -----------------------------------------------------------------------------------
def test_the_same_workbook_twice_stops_the_run_naming_both(generated, tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Alpha"], inbox, "Frankfurt.xlsx")
    copy(generated["Alpha"], inbox, "Frankfurt (1).xlsx")
    copy(generated["Beta"], inbox)
    before = fingerprint(tmp_path)
    proc = collect("inbox", "-o", "portfolio.xlsx", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert ("1 workbook repeats a site already collected, so nothing was written (the "
            "portfolio would count it twice):") in proc.stderr
    assert ("  - inbox/Frankfurt (1).xlsx and inbox/Frankfurt.xlsx: the same content"
            in proc.stderr)
    assert "--allow-duplicates" in proc.stderr and "Traceback" not in proc.stderr
    assert fingerprint(tmp_path) == before

    allowed = collect("inbox", "-o", "portfolio.xlsx", "--allow-duplicates", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    report = (tmp_path / "portfolio-report.md").read_text(encoding="utf-8")
    assert _md("the same content as inbox/Frankfurt (1).xlsx") in report


def test_two_workbooks_of_one_site_name_stop_the_run(generated, tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Alpha"], inbox, "a.xlsx")
    edit_with_openpyxl(copy(generated["Alpha"], inbox, "b.xlsx"),
                       lambda wb: (set_input(wb, "gpus", 2048),
                                   set_input(wb, "site_name", " ALPHA ")))
    proc = collect("inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 2
    assert "  - inbox/a.xlsx and inbox/b.xlsx: the same site name 'ALPHA'" in proc.stderr
    assert not (tmp_path / "p.xlsx").exists() and not (tmp_path / "p-report.md").exists()


# -- formulas in input cells ----------------------------------------------------------------------
def test_an_input_formula_with_a_stale_stored_value_is_an_error(generated, tmp_path):
    path = copy(generated["Alpha"], tmp_path)
    sheet, coord = cell_of("in_gpus")
    with open_xlsx(path) as content:
        part = next(s.part for s in content.sheets if s.title == sheet)

    def add_formula(data: bytes) -> bytes:
        # the cell keeps its stored 1024 while its formula says 512*3: a stale value
        edited, count = re.subn(rf'(<c r="{coord}"[^>]*>)(<v>)'.encode(),
                                rb"\1<f>512*3</f>\2", data)
        assert count == 1
        return edited

    rewrite_member(path, part, add_formula)
    audit = audit_workbook(path)
    (finding,) = [f for f in audit.findings if f.code == "input_formula"]
    assert finding.severity == "error" and finding.where == address("in_gpus")
    assert finding.message == ("gpus holds the formula =512*3 (a stored value of 1,024 that may "
                               "be stale), not a typed value, so the workbook is left out; type "
                               "the value itself")
    assert not audit.included


def test_a_number_typed_as_text_that_reads_two_ways_is_an_error(generated, tmp_path):
    path = edit_with_openpyxl(copy(generated["Alpha"], tmp_path),
                              lambda wb: set_input(wb, "capex_per_gpu", "1,100"))
    audit = audit_workbook(path)
    (finding,) = [f for f in audit.findings if f.code == "input"]
    assert finding.severity == "error" and finding.where == address("in_capex_per_gpu")
    assert finding.message == ("capex_per_gpu='1,100' is a number typed as text that reads two "
                               "ways: 1100 with a thousands separator, 1.100 with a decimal "
                               "separator; type the number itself")
    assert not audit.included


# -- text of a site in the report -----------------------------------------------------------------
# 80 characters: the longest site name the catalogue allows
HOSTILE = '![x](http://e.vil/i.png)<img src="http://e.vil/a">[a](javascript:x)|www.e.vil`c`'
assert len(HOSTILE) <= 80


def test_a_site_name_cannot_load_an_image_or_inject_html(generated, tmp_path):
    path = edit_with_openpyxl(copy(generated["Alpha"], tmp_path / "in"),
                              lambda wb: set_input(wb, "site_name", HOSTILE))
    proc = collect(path, "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = (tmp_path / "p-report.md").read_text(encoding="utf-8")
    assert HOSTILE not in report and not re.search(r"(?<!\\)(!\[|<img)", report)
    assert _md(HOSTILE) in report
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(report)
    assert "<img" not in html and "href=" not in html and "<code>c</code>" not in html
    assert "&lt;img src=&quot;http://e.vil/a&quot;&gt;" in html   # shown as text


def test_markdown_escaping_round_trips_as_text():
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark")
    for text in [HOSTILE, "a_b*c*", "# title", "1. item", "<script>x</script>", "a\\b"]:
        html = md.render(_md(text))
        assert "<em>" not in html and "<script" not in html and "<h1>" not in html
        assert "<a " not in html and "<img" not in html


@pytest.mark.parametrize("char", ["\u202e", "\u2067"])
def test_control_and_bidi_characters_in_a_site_name_are_refused(generated, tmp_path, char):
    path = edit_with_openpyxl(copy(generated["Beta"], tmp_path / "in"),
                              lambda wb: set_input(wb, "site_name", f"Beta{char}gpj.exe"))
    audit = audit_workbook(path)
    assert not audit.included
    (finding,) = [f for f in audit.findings if f.code == "input"]
    assert "contains control characters" in finding.message
    report = report_markdown([audit])
    assert char not in report and f"\\\\u{ord(char):04x}" in report


def test_a_file_name_with_a_bidi_override_is_refused_and_shown_escaped(generated, tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Alpha"], inbox, "invoice\u202exslx.exe.xlsx")
    copy(generated["Beta"], inbox)
    proc = collect("inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 1
    assert "\u202e" not in proc.stdout
    (line,) = [x for x in proc.stdout.splitlines() if "invoice" in x]
    assert line.startswith("refused") and "invoice\\u202exslx.exe.xlsx" in line
    assert "U+202E (a bidirectional control)" in line


def test_a_folder_named_in_another_encoding_is_refused_not_a_traceback(generated, tmp_path):
    # a folder whose name is not UTF-8 (made on a system set to Latin-1): the portfolio and the
    # report could not store its path, so each file in it is refused, and the run goes on
    inbox = tmp_path / b"r\xe9sultats".decode("utf-8", "surrogateescape")
    copy(generated["Alpha"], inbox)
    proc = collect(inbox.name, "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "Alpha" in x]
    assert line.startswith("refused") and "r\\udce9sultats" in line
    assert "U+DCE9 (a byte that is not UTF-8) at character 2" in line
    assert (tmp_path / "p.xlsx").is_file() and (tmp_path / "p-report.md").is_file()


# -- outputs never replace inputs -----------------------------------------------------------------
def test_an_output_named_like_a_collected_workbook_is_refused_even_with_force(generated,
                                                                                tmp_path):
    inbox = tmp_path / "inbox"
    alpha = copy(generated["Alpha"], inbox)
    copy(generated["Beta"], inbox)
    before = fingerprint(tmp_path)
    for args in (["-o", alpha], ["-o", "p.xlsx", "--summary-csv", alpha],
                 ["-o", "p.xlsx", "--report", alpha]):
        proc = collect("inbox", *args, "--force", cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout
        assert ("an output would replace one of the workbooks read or another output, so "
                "nothing was written") in proc.stderr
        assert "is the workbook inbox/Alpha.xlsx, an input of this run" in proc.stderr
        assert fingerprint(tmp_path) == before


def test_an_output_link_is_not_followed(generated, tmp_path):
    victim = tmp_path / "victim.md"
    victim.write_text("keep me")
    (tmp_path / "report.md").symlink_to(victim)
    proc = collect(generated["Alpha"], "-o", "p.xlsx", "--report", "report.md", "--force",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert f"is a link to {victim}; outputs never follow or replace links" in proc.stderr
    assert victim.read_text() == "keep me" and not (tmp_path / "p.xlsx").exists()


def test_a_full_disk_leaves_no_output_and_one_line(generated, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.xlsx").write_bytes(b"last month")
    before = fingerprint(tmp_path)
    real, calls = os.write, []

    def write(fd, data):
        calls.append(fd)
        if len(calls) > 1:   # the portfolio fits, the report does not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(files.os, "write", write)
    code = cli.main(["collect", str(generated["Alpha"]), "-o", "p.xlsx", "--force"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err == ("tokenfactory-xl: collect failed: no space left on the disk writing "
                            "p-report.md; nothing was written (files that were there before "
                            "are unchanged)\n")
    assert fingerprint(tmp_path) == before


# -- what is not a regular file -------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_and_devices_are_refused_without_blocking(generated, tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Beta"], inbox)
    os.mkfifo(inbox / "pipe.xlsx")
    (inbox / "zero.xlsx").symlink_to("/dev/zero")
    proc = command.process("collect", "inbox", "-o", "p.xlsx", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    (pipe,) = [x for x in lines if "pipe.xlsx" in x]
    (zero,) = [x for x in lines if "zero.xlsx" in x]
    assert pipe.startswith("refused") and "is a named pipe (FIFO), not a regular file" in pipe
    assert zero.startswith("refused") and "is a character device (a link to /dev/zero)" in zero
    named = command.process("collect", inbox / "zero.xlsx", "-o", "q.xlsx", cwd=tmp_path)
    assert "no such file" not in named.stderr and "character device" in named.stdout


# -- signals --------------------------------------------------------------------------------------
#: ``tokenfactory-xl`` itself, saying "collecting" on its standard output once collect holds its
#: signal handlers and starts on the files: the moment a signal must find it running.
_SAYS_WHEN_COLLECTING = """
import sys
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.cli import collect
real = collect._collect_into
def announced(*args, **kwargs):
    print("collecting", flush=True)
    return real(*args, **kwargs)
collect._collect_into = announced
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_collect_quietly_with_nothing_written(generated, tmp_path, signum,
                                                            status):
    inbox = tmp_path / "inbox"
    for i in range(150):   # about 7 s of auditing on a 2-core machine
        copy(generated["Alpha"], inbox, f"site{i:03}.xlsx")
    before = fingerprint(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _SAYS_WHEN_COLLECTING, "collect", str(inbox),
                             "-o", "p.xlsx", "--allow-duplicates"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the readiness signal: collect has its signal handlers and starts on the files
    assert proc.stdout.readline() == "collecting\n", "collect ended before it could be stopped"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == status
    assert stderr == (f"tokenfactory-xl: collect stopped by {signal.Signals(signum).name}; "
                      "nothing was written\n")
    assert fingerprint(tmp_path) == before


def test_the_portfolio_written_into_a_collected_folder_is_replaced_not_collected(generated,
                                                                                  tmp_path):
    inbox = tmp_path / "inbox"
    copy(generated["Alpha"], inbox)
    first = collect("inbox", "-o", "inbox/portfolio.xlsx", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    again = collect("inbox", "-o", "inbox/portfolio.xlsx", "--force", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 file: 1 in the portfolio, 0 left out" in again.stdout   # not the portfolio
    # named explicitly as a workbook to collect, it is an input and cannot be an output
    named = collect("inbox/Alpha.xlsx", "inbox/portfolio.xlsx", "-o", "inbox/portfolio.xlsx",
                    "--force", cwd=tmp_path)
    assert named.returncode == 2 and "is the workbook inbox/portfolio.xlsx" in named.stderr
