"""batch never loses a file: inputs are never outputs, a failed or stopped run writes nothing.

Each case checks the message, the exit status, and that the folder holds exactly what it held
before (no output, no temporary file, the sites file byte for byte).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.files import disk as files
from tokenfactory_xl.files.disk import TEMP_PREFIX
from tokenfactory_xl.portfolio import batch

ROOT = Path(__file__).resolve().parents[1]


def tfxl(*args: str) -> subprocess.CompletedProcess:
    return command.run(*args, cwd=ROOT)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                         else b"<link>" if p.is_symlink() else b"<dir>")
            for p in sorted(folder.rglob("*"))}


def sites_csv(path: Path, names: list[str]) -> Path:
    path.write_text("site_name,gpus\n" + "".join(f"{n},2048\n" for n in names), encoding="utf-8")
    return path


# -- inputs are never outputs ---------------------------------------------------------------------
def test_a_site_named_like_the_sites_workbook_cannot_replace_it_even_with_force(tmp_path):
    wb = openpyxl.Workbook()
    wb.active.append(["site_name", "gpus"])
    wb.active.append(["sites", 2048])
    wb.active.append(["Other", 2048])
    wb.save(tmp_path / "sites.xlsx")
    before = snapshot(tmp_path)
    code = cli.main(["batch", str(tmp_path / "sites.xlsx"), "-o", str(tmp_path), "--force",
                     "--quiet"])
    assert code == 2
    assert snapshot(tmp_path) == before


def test_the_message_names_the_sites_file(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", ["Alpha"])
    before = snapshot(tmp_path)
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"), "--summary-csv", str(sites),
                "--force")
    assert proc.returncode == 2
    assert "an output would replace an input or another output, so nothing was written" \
        in proc.stderr
    assert f"--summary-csv={sites}: is the sites file {sites}, an input of this run" \
        in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(tmp_path) == before


def test_a_hard_link_to_the_sites_file_is_the_sites_file(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", ["Alpha"])
    os.link(sites, tmp_path / "summary.csv")
    before = snapshot(tmp_path)
    with pytest.raises(InputError, match="is the sites file"):
        batch.run_batch(sites, tmp_path / "out", summary_csv=tmp_path / "summary.csv",
                        force=True)
    assert snapshot(tmp_path) == before


def test_an_output_that_is_a_link_is_neither_followed_nor_replaced(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", ["Alpha"])
    victim = tmp_path / "elsewhere" / "ledger.xlsx"
    victim.parent.mkdir()
    victim.write_bytes(b"keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "Alpha.xlsx").symlink_to(victim)
    before = snapshot(tmp_path)
    proc = tfxl("batch", str(sites), "-o", str(out), "--force")
    assert proc.returncode == 2
    assert f"is a link to {victim}; outputs never follow or replace links" in proc.stderr
    assert snapshot(tmp_path) == before


def test_a_prepared_link_at_a_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    target = tmp_path / "out.xlsx"
    names = iter(["a" * 16, "b" * 16])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(names))
    trap = tmp_path / f"{TEMP_PREFIX}{'a' * 16}-out.xlsx.tmp"
    trap.symlink_to(victim)
    files.write_atomically(target, b"new")
    assert victim.read_bytes() == b"keep me" and target.read_bytes() == b"new"
    assert trap.is_symlink()   # left alone; the file went to a fresh name


def test_temporary_names_are_unpredictable(tmp_path):
    names = {files.temp_name(tmp_path / "x.xlsx").name for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith(TEMP_PREFIX) and n.endswith("-x.xlsx.tmp") for n in names)


# -- a run that fails -----------------------------------------------------------------------------
def test_a_full_disk_leaves_nothing_and_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    sites = sites_csv(tmp_path / "sites.csv", [f"Site {i}" for i in range(5)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "Site 1.xlsx").write_bytes(b"last month's")
    before = snapshot(tmp_path)
    real, calls = os.write, []

    def write(fd, data):
        calls.append(fd)
        if len(calls) > 3:   # the disk fills up during the fourth write
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(files.os, "write", write)
    code = cli.main(["batch", str(sites), "-o", str(out), "--force", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith("tokenfactory-xl: batch failed: no space left on the disk writing ")
    assert line.endswith("; nothing was written (files that were there before are unchanged)")
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_the_sites_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "sites.csv"
    os.mkfifo(fifo)
    proc = command.process("batch", str(fifo), "-o", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2
    assert f"sites file={fifo}: is a named pipe (FIFO), not a regular file" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_link_to_dev_zero_is_a_device(tmp_path):
    link = tmp_path / "sites.csv"
    link.symlink_to("/dev/zero")
    proc = command.process("batch", str(link), "-o", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2
    assert "is a character device (a link to /dev/zero), not a regular file" in proc.stderr
    assert "no such file" not in proc.stderr.lower()


# -- a run that is stopped ------------------------------------------------------------------------
@pytest.mark.parametrize(("signum", "status", "group", "delay"), [
    (signal.SIGTERM, 143, False, 0.0),   # kill PID: the parent only
    (signal.SIGTERM, 143, True, 0.0),    # a service manager stopping the whole process group
    (signal.SIGTERM, 143, True, 0.15),   # … a moment later, with workers between chunks
    (signal.SIGTERM, 143, True, 0.6),
    (signal.SIGINT, 130, True, 0.0),     # Ctrl-C: the whole foreground process group
    (signal.SIGINT, 130, True, 0.4),
])
def test_a_stopped_parallel_batch_ends_quietly_and_leaves_nothing(tmp_path, signum, status,
                                                                 group, delay):
    sites = sites_csv(tmp_path / "sites.csv", [f"Site {i}" for i in range(400)])
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "batch", str(sites), "-o",
                             str(out), "--jobs", "2"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    # wait until workbooks are being written (temporary files in the folder)
    while time.monotonic() < deadline and proc.poll() is None:
        if out.is_dir() and any(p.name.startswith(TEMP_PREFIX) for p in out.iterdir()):
            break
        time.sleep(0.02)
    time.sleep(delay)
    assert proc.poll() is None, "the batch ended before it could be stopped"
    if group:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if "workbooks written" not in line]
    assert lines == [f"tokenfactory-xl: batch stopped by {signal.Signals(signum).name}; "
                     "nothing was written"]
    assert sorted(out.iterdir()) == []


# -- what was read is said ------------------------------------------------------------------------
def test_notes_say_where_the_header_was_and_how_numbers_were_read(tmp_path):
    sites = tmp_path / "sites.csv"
    sites.write_text("Our sites;\n;\nsite_name;capex_per_gpu\nA;40.000\n", encoding="utf-8")
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "note: header found on row 3" in proc.stderr
    assert "note: numbers read with decimal commas" in proc.stderr
    assert "row 4 capex_per_gpu=40.000 = 40000" in proc.stderr
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out2"), "--header-row", "1")
    assert proc.returncode == 2
    assert "site_name" in proc.stderr and "column is missing" in proc.stderr
    assert not (tmp_path / "out2").exists()


def test_control_characters_are_shown_escaped_in_messages(tmp_path):
    sites = tmp_path / "sites.csv"
    sites.write_text("site_name,gpus\nRed\x1b[31m,2048\nOK,\x1b[2J\n", encoding="utf-8")
    proc = tfxl("batch", str(sites), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr
    assert "row 2: site_name=Red\\u001b[31m: contains control characters" in proc.stderr
    assert "row 3: gpus=\\u001b[2J: is not a number" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_file_read_under_a_limit_is_read_whole_without_reserving_the_limit(tmp_path,
                                                                             monkeypatch):
    """A sites file is read under a limit of some 200 MB; a small one costs its own size, not
    the limit's, and one read in many pieces is the whole file."""
    import tracemalloc

    small = tmp_path / "sites.csv"
    small.write_bytes(b"site_name,gpus\nLyon,512\n")
    tracemalloc.start()
    try:
        assert files.read_regular(small, 200 * 2**20) == small.read_bytes()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**16  # its own 24 bytes, not the limit's 200 MB
    data = bytes(range(256)) * 40
    several = tmp_path / "several.bin"
    several.write_bytes(data)
    assert files.read_regular(several, len(data)) == data
    assert files.read_regular(several) == data
    # A file that grows after its size was taken is read on in pieces, up to the limit.
    fstat = os.fstat

    def ten_bytes_then(fd):
        found = fstat(fd)
        return os.stat_result((*found[:6], 10, *found[7:]))  # st_size as it was

    monkeypatch.setattr(files, "_PIECE", 7)
    monkeypatch.setattr(files.os, "fstat", ten_bytes_then)
    assert files.read_regular(several, len(data)) == data
    with pytest.raises(files.NotARegularFile, match="grew past"):
        files.read_regular(several, len(data) - 1)


def test_many_staged_files_are_kept_by_their_random_part_and_committed_or_discarded(tmp_path):
    """A batch's workbooks, staged by its workers, are kept by index and the 8 random bytes of
    each temporary name; committed, each lands on its own target, and discarded, none is left."""
    targets = [tmp_path / f"site {i}.xlsx" for i in range(5)]
    other = tmp_path / "elsewhere.tmp"  # staged under a name not made by temp_name
    with files.Outputs() as outputs:
        staged = outputs.many(targets)
        for index in (3, 0, 1):  # in the order the workers finish
            staged.put(index, files.stage(targets[index], f"book {index}".encode()))
        other.write_bytes(b"book 4")
        staged.put(4, other)
        assert [t.name for _, t in staged.pairs()] == ["site 0.xlsx", "site 1.xlsx",
                                                       "site 3.xlsx", "site 4.xlsx"]
        outputs.commit()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "site 0.xlsx": b"book 0", "site 1.xlsx": b"book 1", "site 3.xlsx": b"book 3",
        "site 4.xlsx": b"book 4"}

    with files.Outputs() as outputs:
        staged = outputs.many(targets[:2])
        staged.put(1, files.stage(targets[1], b"new"))
        outputs.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "site 0.xlsx", "site 1.xlsx", "site 3.xlsx", "site 4.xlsx"]
    assert targets[1].read_bytes() == b"book 1"
