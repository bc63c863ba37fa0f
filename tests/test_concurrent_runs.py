"""Runs at the same time: two batches into one folder refuse rather than mix their files, and
updates of one sites file queue rather than lose each other. Real processes, synchronised by
what they print (a readiness line), never by sleeping."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.collect_support import cell_of
from tests.tools import command
from tokenfactory_xl.files.safe_xlsx import open_xlsx

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "actuals" / "vllm_bench_serve.json"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="claims are flock here")

#: Holds the claim on argv[1], says "ready", and lets go when told (a line on its standard
#: input); with argv[2], it first replaces argv[1] by that file's bytes, as an update does.
HOLDER = """
import sys
from tokenfactory_xl.files.disk import claim, write_atomically
with claim(sys.argv[1], wait=False):
    print("ready", flush=True)
    sys.stdin.readline()
    if len(sys.argv) > 2:
        write_atomically(sys.argv[1], open(sys.argv[2], "rb").read())
"""


def holder(*args: str | Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, *map(str, args)], env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def release(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def sites_csv(path: Path, count: int) -> Path:
    path.write_text("site_name,gpus\n" + "".join(f"Site {i},1024\n" for i in range(count)),
                    encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return {r["site_name"]: r for r in csv.DictReader(handle)}


def test_a_batch_into_a_folder_another_run_is_writing_is_refused(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", 2)
    out = tmp_path / "out"
    out.mkdir()
    held = holder(out)
    try:
        proc = command.run("batch", sites, "-o", out, "--quiet", cwd=tmp_path)
    finally:
        release(held)
    assert proc.returncode == 1
    assert proc.stderr == (f"tokenfactory-xl: batch failed: another tokenfactory-xl run is "
                           f"writing into the folder {out} right now; wait for it to end, or "
                           "choose another; nothing was written (files that were there before "
                           "are unchanged)\n")
    assert list(out.iterdir()) == []
    assert command.run("batch", sites, "-o", out, "--quiet", cwd=tmp_path).returncode == 0


def test_two_batches_into_one_new_folder_one_writes_the_other_refuses(tmp_path):
    first = sites_csv(tmp_path / "first.csv", 3)
    second = tmp_path / "second.csv"
    second.write_text("site_name,gpus\n" + "".join(f"Site {i},2048\n" for i in range(3)),
                      encoding="utf-8")
    out = tmp_path / "out"
    procs = [subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "batch", str(s), "-o",
                               str(out), "--quiet"], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in (first, second)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(code for code, _ in results) in ([0, 1], [0, 2]), results
    (winner,) = [i for i, (code, _) in enumerate(results) if code == 0]
    refused = results[1 - winner][1]
    assert "nothing was written" in refused
    # every file of the folder is the winner's: one run's portfolio, one run's workbooks
    written = sorted(p.name for p in out.iterdir())
    assert written == ["Site 0.xlsx", "Site 1.xlsx", "Site 2.xlsx", "portfolio.xlsx"]
    gpus = {2048 if winner else 1024}
    sheet, coord = cell_of("in_gpus")
    for name in written[:3]:
        with open_xlsx(out / name) as content:
            assert {content.cells(sheet).values[coord]} == gpus
    assert first.read_text(encoding="utf-8").count("1024") == 3


def test_an_update_of_a_sites_file_waits_for_the_run_updating_it(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", 2)
    theirs = tmp_path / "theirs.csv"  # what the other run writes: Site 1 gets 4096 GPUs
    theirs.write_text(sites.read_text(encoding="utf-8").replace("Site 1,1024", "Site 1,4096"),
                      encoding="utf-8")
    held = holder(sites, theirs)
    ours = subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "actuals", str(RUN),
                             "--sites", str(sites), "--site", "Site 0"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the readiness signal: it says that it waits (before the fix it wrote at once)
        line = ours.stderr.readline()
        assert line == f"tokenfactory-xl: note: waiting for another run updating {sites}\n"
    finally:
        release(held)
    assert ours.wait(timeout=120) == 0, ours.stderr.read()
    ours.stdout.close()
    ours.stderr.close()
    after = rows(sites)
    assert after["Site 1"]["gpus"] == "4096"          # the other run's update is kept
    assert after["Site 0"]["measured_tps"] != ""      # and ours is there too


def test_eight_parallel_updates_of_one_file_all_land(tmp_path):
    sites = sites_csv(tmp_path / "sites.csv", 8)
    procs = [subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "actuals", str(RUN),
                               "--instances", str(i + 1), "--sites", str(sites), "--site",
                               f"Site {i}"], env=ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(8)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
        p.stderr.close()
    after = rows(sites)
    measured = [float(after[f"Site {i}"]["measured_tps"]) for i in range(8)]
    # --instances N writes N × the instance's TPS: each site got its own update
    assert all(m == pytest.approx(measured[0] * (i + 1)) for i, m in enumerate(measured))


#: Holds the claim on the folder argv[1], says "ready"; when told, writes argv[2] there (as the
#: other run's output) and lets go.
FOLDER_HOLDER = """
import pathlib, sys
from tokenfactory_xl.files.disk import claim
with claim(sys.argv[1], wait=False):
    print("ready", flush=True)
    sys.stdin.readline()
    (pathlib.Path(sys.argv[1]) / sys.argv[2]).write_bytes(b"the other run's portfolio")
"""


def test_two_collects_into_one_folder_queue_and_the_second_finds_the_first(generated,
                                                                          tmp_path):
    from tests.collect_support import copy

    copy(generated["Alpha"], tmp_path / "inbox")
    out = tmp_path / "out"
    out.mkdir()
    held = subprocess.Popen([sys.executable, "-c", FOLDER_HOLDER, str(out), "p.xlsx"], env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert held.stdout.readline() == "ready\n"
    ours = subprocess.Popen([sys.executable, "-m", "tokenfactory_xl", "collect", "inbox", "-o",
                             str(out / "p.xlsx")], cwd=tmp_path, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ours.stderr.readline()   # the readiness signal: it waits for the folder
        assert line == f"tokenfactory-xl: note: waiting for another run writing into {out}\n"
    finally:
        release(held)
    assert ours.wait(timeout=120) == 2
    err = ours.stderr.read()
    ours.stdout.close()
    ours.stderr.close()
    assert f"{out / 'p.xlsx'} exists; use --force to replace it" in err
    assert (out / "p.xlsx").read_bytes() == b"the other run's portfolio"
