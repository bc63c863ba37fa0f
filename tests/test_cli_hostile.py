"""Rules every command keeps, whatever it is given: no output names a file the command reads
(``--force`` or not), only regular files of a sane size are read, and a write that fails (a full
disk, a read-only folder) is one line and exit status 1, never a traceback or a half file."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from tests.tools import command
from tests.tools.once import build_once
from tokenfactory_xl.engines import libreoffice
from tokenfactory_xl.files import disk as files

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "actuals"
RUN = FIXTURES / "vllm_bench_serve.json"
COHORTS = "cohort,online_month,gpus\n2,6,256\n"


def run(*args, cwd: Path):
    return command.run(*args, cwd=cwd)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# -- inputs are sacred ------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["summary", "--cohorts", "c.csv", "-o", "c.csv", "--force"],
    ["sensitivity", "--cohorts", "c.csv", "-o", "c.csv", "--force"],
    ["risk", "--draws", "50", "--cohorts", "c.csv", "-o", "c.csv", "--force"],
    ["template", "--cohorts", "c.csv", "-o", "c.csv", "--force"],
    ["actuals", "run.json", "-o", "run.json"],
    ["actuals", "run.json", "-o", "./sub/../run.json"],
    ["cost", "run.json", "--gpu-hour", "2", "--gpus", "1", "-o", "run.json"],
    ["actuals", "run.json", "--sites", "c.csv", "--site", "A", "-o", "c.csv"],
])
def test_no_output_names_an_input_whatever_the_flags(tmp_path, args):
    (tmp_path / "c.csv").write_text(COHORTS, encoding="utf-8")
    shutil.copy(RUN, tmp_path / "run.json")
    (tmp_path / "sub").mkdir()
    before = snapshot(tmp_path)
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "an input of this run; an output never replaces an input, whatever the flags" in line
    assert snapshot(tmp_path) == before


def test_an_input_reached_through_a_hard_link_is_an_input_too(tmp_path):
    (tmp_path / "c.csv").write_text(COHORTS, encoding="utf-8")
    os.link(tmp_path / "c.csv", tmp_path / "same.csv")
    proc = run("summary", "--cohorts", "c.csv", "-o", "same.csv", "--force", cwd=tmp_path)
    assert proc.returncode == 2
    assert (tmp_path / "c.csv").read_text(encoding="utf-8") == COHORTS


# -- files that are not files -------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_actuals_refuses_a_fifo_at_once(tmp_path):
    os.mkfifo(tmp_path / "result.json")
    proc = command.process("actuals", "result.json", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("tokenfactory-xl: result.json: is a named pipe (FIFO), not a regular "
                           "file; give a saved file\n")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_actuals_refuses_a_device_and_a_link_to_one(tmp_path):
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    proc = run("actuals", "/dev/zero", cwd=tmp_path)
    assert proc.returncode == 2 and "is a character device, not a regular file" in proc.stderr
    proc = run("actuals", "zero.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "zero.json: is a character device (a link to /dev/zero), not a regular file" \
        in proc.stderr


def test_a_result_file_larger_than_any_result_is_refused_by_its_size(tmp_path, monkeypatch):
    from tokenfactory_xl.capacity import measurement

    monkeypatch.setattr(measurement, "MAX_RESULT_BYTES", 1000)
    (tmp_path / "big.json").write_bytes(b" " * 1001)
    proc = run("actuals", "big.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "big.json: is 1,001 bytes, larger than such a file can be (at most 1,000 bytes are " \
        "read); a benchmark result is far smaller" in proc.stderr


@pytest.mark.parametrize("digits", [400, 5000])
def test_a_json_number_of_hundreds_of_digits_is_refused_in_words(tmp_path, digits):
    text = RUN.read_text(encoding="utf-8").replace('"duration": ', f'"duration": {"9" * digits}'
                                                   ', "was": ', 1)
    (tmp_path / "r.json").write_text(text, encoding="utf-8")
    proc = run("actuals", "r.json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"r.json: holds the number 999999999999…999999 ({digits:,} characters), beyond any " \
        "measurement" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_result_saved_as_utf16_or_utf32_is_read(tmp_path, encoding):
    (tmp_path / "r.json").write_bytes(RUN.read_text(encoding="utf-8").encode(encoding))
    plain = run("actuals", str(RUN), "--json", cwd=tmp_path)
    proc = run("actuals", "r.json", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the same figures as the UTF-8 file gives (the source line names the file)
    assert proc.stdout.replace("r.json", "X") == plain.stdout.replace(str(RUN), "X")


# -- a write that fails ---------------------------------------------------------------------------
SITES = "site_name,gpus\nAlpha,1024\nBeta,2048\n"


#: Every command that writes a file: its arguments, with OUT the folder written into.
WRITERS = {
    "summary": ["summary", "-o", "OUT/s.txt"],
    "inputs": ["inputs", "-o", "OUT/i.txt"],
    "sensitivity": ["sensitivity", "-o", "OUT/t.txt"],
    "risk": ["risk", "--draws", "50", "-o", "OUT/r.txt"],
    "theoretical": ["theoretical", "--gpu", "H200", "--model", "Llama-3.1-70B", "--precision",
                    "fp8", "--batch", "64", "--context", "4096", "-o", "OUT/th.txt"],
    "template": ["template", "-o", "OUT/TFOM.xlsx"],
    "refresh": ["refresh", "WORKBOOK", "-o", "OUT/r.xlsx", "--draws", "50"],
    "batch": ["batch", "in/sites.csv", "-o", "OUT"],
    "collect": ["collect", "WORKBOOK", "-o", "OUT/p.xlsx"],
    "actuals -o": ["actuals", "in/run.json", "-o", "OUT/a.txt"],
    "actuals --sites": ["actuals", "in/run.json", "--sites", "OUT/sites.csv", "--site", "Alpha"],
    "cost": ["cost", "in/run.json", "--gpu-hour", "2", "--gpus", "1", "-o", "OUT/c.xlsx"],
    "cost --png": ["cost", "in/run.json", "--gpu-hour", "2", "--gpus", "1", "--png", "OUT/c.png"],
    "lite": ["lite", "-o", "OUT/lite"],
    "render": ["render", "WORKBOOK", "-o", "OUT/d.png"],
}


@pytest.fixture(scope="module")
def workbook(tmp_path_factory) -> Path:
    """A template, written once per test run: read or copy it."""
    def build(folder: Path) -> Path:
        path = folder / "Site.xlsx"
        assert command.run("template", "-o", str(path), cwd=folder).returncode == 0
        return path

    return build_once(tmp_path_factory, "hostile-workbook", build)


def _failing(monkeypatch, error: int, out: Path) -> None:
    """Every file created or written under ``out`` fails with ``error``."""
    real_open, real_write, ours = os.open, os.write, set()

    def open_(path, flags, *rest, **kwargs):
        if flags & os.O_CREAT and str(out) in os.path.abspath(os.fsdecode(path)):
            if error == errno.EROFS:
                raise OSError(error, os.strerror(error), os.fsdecode(path))
            fd = real_open(path, flags, *rest, **kwargs)
            ours.add(fd)
            return fd
        return real_open(path, flags, *rest, **kwargs)

    def write(fd, data):
        if fd in ours:
            raise OSError(error, os.strerror(error))
        return real_write(fd, data)

    monkeypatch.setattr(files.os, "open", open_)
    monkeypatch.setattr(files.os, "write", write)


def _not_started(*args, **kwargs):
    raise AssertionError("LibreOffice was started for an output that cannot be written")


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS], ids=["full", "read-only"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_every_command_that_writes_says_a_failed_write_in_one_line(tmp_path, monkeypatch,
                                                                   workbook, name, error):
    if name in ("render", "cost --png") and not (shutil.which("soffice")
                                                 and shutil.which("pdftoppm")):
        pytest.skip(f"{name} needs LibreOffice and poppler")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "sites.csv").write_text(SITES, encoding="utf-8")
    shutil.copy(RUN, tmp_path / "in" / "run.json")
    out = tmp_path / "out"
    out.mkdir()
    if name == "actuals --sites":
        (out / "sites.csv").write_text(SITES, encoding="utf-8")
    before = snapshot(tmp_path)
    args = [a.replace("OUT", str(out)).replace("WORKBOOK", str(workbook)) for a in WRITERS[name]]
    if name in ("render", "cost --png"):  # the write is tried before LibreOffice's seconds
        monkeypatch.setattr(libreoffice, "convert", _not_started)
    _failing(monkeypatch, error, out)
    proc = run(*args, cwd=tmp_path)
    monkeypatch.undo()
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "note:" not in ln]
    assert len(lines) == 1, proc.stderr
    reason = "no space left on the disk" if error == errno.ENOSPC else "read-only file system"
    command_name = name.split()[0]
    assert lines[0].startswith(f"tokenfactory-xl: {command_name} failed: {reason} writing "), \
        lines[0]
    assert lines[0].endswith("nothing was written (files that were there before are "
                             "unchanged)")
    assert snapshot(tmp_path) == before   # no half file, no temporary file left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("args", [["refresh", "w.xlsx"], ["render", "w.xlsx", "-o", "d.png"],
                                  ["batch", "w.xlsx", "-o", "out"],
                                  ["summary", "--cohorts", "w.xlsx"]])
def test_a_fifo_given_for_a_workbook_is_refused_at_once(tmp_path, args):
    os.mkfifo(tmp_path / "w.xlsx")
    proc = command.process(*args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "w.xlsx: is a named pipe (FIFO), not a regular file" in proc.stderr


def test_a_sites_file_larger_than_any_sites_file_is_refused_by_its_size(tmp_path, monkeypatch):
    from tokenfactory_xl.sites import table

    monkeypatch.setattr(table, "MAX_XLSX_UNPACKED", 100)
    (tmp_path / "s.csv").write_text("site_name,gpus\n" + "A,1024\n" * 20, encoding="utf-8")
    proc = run("batch", "s.csv", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert "s.csv: is 155 bytes, larger than such a file can be (at most 100 bytes are read)" \
        in proc.stderr
