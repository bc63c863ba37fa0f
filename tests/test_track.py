"""Plan against actual: ``track`` appends measured TEF to a workbook's Actuals sheet.

The result files are real published ones (tests/fixtures/track/SOURCES.md); every TEF, plan,
variance and revenue figure below is recomputed by hand from the files' own fields and the spec's
rules (methodology §1, §2, §4.2), not read back from the code.
"""

from __future__ import annotations

import functools
import io
import json
import math
import re
import shutil
import zipfile
from pathlib import Path
from statistics import NormalDist

import pytest
from openpyxl import load_workbook

from tests.tools import command as tool
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.workbook import actuals_sheet as wa

FIXTURES = Path(__file__).parent / "fixtures" / "track"
SGLANG = FIXTURES / "llama_405b_online_output.jsonl"  # 6 runs, 8 × H200 (its SOURCES row)
VLLM_DATED = FIXTURES / "gptoss120b_disagg16_conc4.json"  # "date": "20260428-105748", 16 GPUs
VLLM_64 = FIXTURES / "gptoss120b_disagg16_conc64.json"
SUITE = FIXTURES / "glm5.1_tp2_conc8_mi355x_agentic_agg.json"  # gives tp = 2 itself

#: The site: 1,024 GPUs of 400 tokens/s each, 122,880 tokens/s measured (TEF now 0.30), a Base
#: TEF target of 0.60 reached over 6 months.
SITE = {"theoretical_tps_per_gpu": 400, "measured_tps": 122_880, "tef_target": 0.6}


def workbook(tmp_path: Path, name: str = "site.xlsx", **changes: object) -> Path:
    """A new file of the site's workbook (with ``changes`` to its inputs) to track into."""
    path = tmp_path / name
    path.write_bytes(_workbook_bytes(tuple(sorted(changes.items()))))
    return path


@functools.cache
def _workbook_bytes(changes: tuple[tuple[str, object], ...]) -> bytes:
    """The workbook ``template`` writes for the site with ``changes``, made once per process:
    the tests write it to a file of their own and change only that file."""
    return template_bytes(make_inputs({**SITE, **dict(changes)}), 0)


def track(*argv: object):
    return tool.run("track", *map(str, argv))


def actuals_rows(path: Path) -> list[dict[str, object]]:
    """The Actuals sheet's rows as stored (read-only: openpyxl parses that sheet alone)."""
    book = load_workbook(path, data_only=True, read_only=True)
    try:
        rows = []
        for values in book[wa.ACTUALS_SHEET].iter_rows(
                min_row=wa.FIRST_ROW, max_col=len(wa.ACTUALS_COLUMNS), values_only=True):
            if values[0] is None:
                continue
            rows.append(dict(zip([c.name for c in wa.ACTUALS_COLUMNS], values, strict=True)))
    finally:
        book.close()
    return rows


def sglang_runs() -> list[dict]:
    return [json.loads(line) for line in SGLANG.read_text().splitlines() if line.strip()]


# -- the spec's rules, by hand, for the default site's other inputs -----------------------------
def plan_tef(month: int) -> float:
    """§4.2: linear from TEF now (0.30) to the target (0.60) over 6 months, then held."""
    return 0.30 + (0.60 - 0.30) * min(month, 6) / 6


def worth(variance: float, month: int, days: int) -> float:
    """The variance × the month's theoretical tokens × SLA × sell-through ÷ 10⁶ × price."""
    theoretical_tokens = 1024 * 400 * 3600 * days * 24
    sigma = math.log(1500 / 400) / NormalDist().inv_cdf(0.99)  # z of 0.99, NORMSINV
    sla = 0.995 * NormalDist().cdf(math.log(2000 / 400) / sigma)  # §1, TTFT defaults
    sell_through = 0.50 + (0.80 - 0.50) * min(month, 12) / 12
    p0 = (0.25 * 1.10 + 0.75 * (0.5 * 0.07 + 0.5 * 0.28)) * (1 - 0.20 * 0.50)  # §2 blended
    price = p0 * 1.0 * (1 - 0.10) ** ((month - 1) / 3)  # §4.2, Base decline 10 % a quarter
    return variance * theoretical_tokens * sla * sell_through / 1e6 * price


def test_real_sglang_runs_give_tef_and_variance_computed_by_hand(tmp_path):
    path = workbook(tmp_path)
    proc = track(path, SGLANG, "--month", "2027-03", "--gpus", 8)
    assert proc.returncode == 0, proc.stderr
    rows = actuals_rows(path)
    runs = sglang_runs()
    assert len(rows) == len(runs) == 6
    for row, run in zip(rows, runs, strict=True):
        tps = (run["total_input_tokens"] + run["total_output_tokens"]) / run["duration"]
        tef = tps / 8 / 400
        assert row["month"].date().isoformat() == "2027-03-01" and row["model_month"] == 3
        assert row["measured_tps"] == pytest.approx(tps, rel=1e-12)
        assert row["tef_actual"] == pytest.approx(tef, rel=1e-12)
        assert row["tef_plan"] == pytest.approx(plan_tef(3), rel=1e-12)
        assert row["variance"] == pytest.approx(tef - plan_tef(3), rel=1e-12)
        assert row["revenue_worth"] == pytest.approx(worth(tef - plan_tef(3), 3, 31), rel=1e-9)
        assert row["scenario"] == "Base" and row["format"] == "SGLang bench_serving"
        # the message gives the worth in the workbook's currency, rounded as printed
        assert f"(worth USD {row['revenue_worth']:,.0f} of revenue that month)" in proc.stdout
    assert "6 rows added, 6 on the Actuals sheet" in proc.stdout


def test_twice_adds_nothing_and_leaves_the_file_as_it_was(tmp_path):
    path = workbook(tmp_path)
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    once = path.read_bytes()
    proc = track(path, SGLANG, "--month", "2027-03", "--gpus", 8)
    assert proc.returncode == 0
    assert "already tracked: 6 runs of" in proc.stdout and "0 rows added" in proc.stdout
    assert path.read_bytes() == once
    # another month does not make the same measurement a new one
    proc = track(path, SGLANG, "--month", "2027-09", "--gpus", 8)
    assert "0 rows added" in proc.stdout and path.read_bytes() == once


def test_the_rest_of_the_workbook_is_untouched(tmp_path):
    path = workbook(tmp_path)
    before = path.read_bytes()
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    with zipfile.ZipFile(io.BytesIO(before)) as old, zipfile.ZipFile(path) as new:
        parts = wa.find_parts(new)
        changed = {parts.sheet, *parts.charts}
        assert old.namelist() == new.namelist()
        for name in old.namelist():
            if name not in changed:
                assert old.read(name) == new.read(name), name
        assert old.read(parts.sheet) != new.read(parts.sheet)


def test_a_file_that_states_its_gpus_and_a_file_that_states_its_date(tmp_path):
    # the suite row gives tp = 2: its tokens/s per GPU is the file's tput_per_gpu
    path = workbook(tmp_path)
    assert track(path, SUITE, "--month", "2027-08").returncode == 0
    (row,) = actuals_rows(path)
    per_gpu = json.loads(SUITE.read_text())["tput_per_gpu"]
    assert row["gpus"] == 2 and row["tef_actual"] == pytest.approx(per_gpu / 400, rel=1e-12)
    assert row["tef_plan"] == pytest.approx(0.60)  # month 8: the ramp is done
    # the vLLM file records 2026-04-28: month 4 of a timeline that starts in January 2026
    path = workbook(tmp_path, "early.xlsx", start_date="2026-01-01")
    assert track(path, VLLM_DATED, "--gpus", 16).returncode == 0
    (row,) = actuals_rows(path)
    run = json.loads(VLLM_DATED.read_text())
    assert row["model_month"] == 4
    assert row["tef_actual"] == pytest.approx(run["total_token_throughput"] / 16 / 400,
                                              rel=1e-12)
    assert row["revenue_worth"] == pytest.approx(worth(row["variance"], 4, 30), rel=1e-9)


def test_rows_are_kept_in_month_order_and_the_chart_shows_them(tmp_path):
    path = workbook(tmp_path)
    assert track(path, VLLM_64, "--month", "2027-05", "--gpus", 16).returncode == 0
    assert track(path, SUITE, "--month", "2027-02").returncode == 0
    rows = actuals_rows(path)
    assert [r["model_month"] for r in rows] == [2, 5]
    with zipfile.ZipFile(path) as archive:
        (chart,) = wa.find_parts(archive).charts
        xml = archive.read(chart).decode()
    first, last = wa.FIRST_ROW, wa.FIRST_ROW + 1
    for letter in ("A", wa.actuals_column("tef_plan"), wa.actuals_column("tef_actual")):
        assert f"'Actuals'!${letter}${first}:${letter}${last}" in xml
    # each series carries its values: the plan's TEF in months 2 and 5 (by hand)
    assert f"<v>{plan_tef(2)!r}</v>" in xml and f"<v>{plan_tef(5)!r}</v>" in xml


@pytest.mark.parametrize(("argv", "says"), [
    ([SGLANG, "--month", "2026-12", "--gpus", 8],
     "measured in 2026-12, before the workbook's timeline starts (2027-01 is month 1)"),
    ([SGLANG, "--month", "2032-01", "--gpus", 8],
     "measured in 2032-01, after the workbook's horizon (2027-01 to 2031-12, 60 months)"),
    ([VLLM_DATED, "--gpus", 16], "measured in 2026-04, before the workbook's timeline starts"),
    ([SGLANG, "--gpus", 8], "the file records no date; give the month it was measured with "
                            "--month YYYY-MM"),
    ([VLLM_64, "--month", "2027-03"], "the file does not say how many GPUs served this "
                                      "throughput; give --gpus N"),
    ([FIXTURES / "SOURCES.md", "--month", "2027-03"], "is not a format this command reads"),
    ([FIXTURES / "missing.json", "--month", "2027-03"], "no such file"),
])
def test_bad_files_are_refused_with_the_reason_and_nothing_is_written(tmp_path, argv, says):
    path = workbook(tmp_path)
    before = path.read_bytes()
    proc = track(path, *argv)
    assert proc.returncode == 2
    assert says in proc.stderr and "nothing was written" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before


def test_a_file_with_no_usable_throughput(tmp_path):
    run = json.loads(VLLM_64.read_text())
    run.update(total_token_throughput=0, total_input_tokens=0, total_output_tokens=0)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(run))
    path = workbook(tmp_path)
    before = path.read_bytes()
    proc = track(path, empty, "--month", "2027-03", "--gpus", 16)
    assert proc.returncode == 2 and "measured no throughput" in proc.stderr
    assert path.read_bytes() == before


def test_one_bad_file_among_good_ones_writes_nothing(tmp_path):
    path = workbook(tmp_path)
    before = path.read_bytes()
    proc = track(path, SUITE, VLLM_64, "--month", "2027-03")  # the second states no GPUs
    assert proc.returncode == 2 and path.read_bytes() == before


def test_a_workbook_without_an_actuals_sheet_is_refused(tmp_path):
    path = workbook(tmp_path)
    source = zipfile.ZipFile(path)
    older = tmp_path / "older.xlsx"
    with zipfile.ZipFile(older, "w") as out:  # the workbook as a version without the sheet
        for info in source.infolist():
            body = source.read(info.filename)
            if info.filename == "xl/workbook.xml":
                body = body.replace(b'name="Actuals"', b'name="Notes"')
            out.writestr(info, body)
    proc = track(older, SUITE, "--month", "2027-03")
    assert proc.returncode == 2 and "has no Actuals sheet" in proc.stderr


def test_collect_audits_a_tracked_workbook_clean(tmp_path):
    path = workbook(tmp_path)
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    from tokenfactory_xl.portfolio.collect import collect

    (audit,) = collect([path])
    assert audit.included
    assert [f for f in audit.findings if f.severity != "info"] == []


def test_libreoffice_opens_the_tracked_workbook_with_the_master_check_ok(tmp_path, soffice):
    from tests.tools.cells import read_cells
    from tokenfactory_xl.engines.libreoffice import recalculate

    path = workbook(tmp_path)
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    assert track(path, SUITE, "--month", "2027-08").returncode == 0
    (done,) = recalculate([path], tmp_path / "lo")
    cells = read_cells(done)
    assert cells.named("check_master") == "OK"
    rows = actuals_rows(Path(shutil.copy(done, tmp_path / "read.xlsx")))
    assert len(rows) == 7 and rows[-1]["model_month"] == 8


def test_collect_brings_the_latest_actual_into_the_portfolio(tmp_path):
    import csv

    tracked = workbook(tmp_path, "tracked.xlsx", site_name="Tracked")
    plain = workbook(tmp_path, "plain.xlsx", site_name="Plain")
    assert track(tracked, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    assert track(tracked, SUITE, "--month", "2027-02").returncode == 0  # earlier: not latest
    out = tmp_path / "out"
    out.mkdir()
    proc = tool.run("collect", str(tracked), str(plain), "-o", str(out / "portfolio.xlsx"),
                    "--summary-csv", str(out / "portfolio.csv"))
    assert proc.returncode == 0, proc.stderr
    rows = {r["site_name"]: r for r in csv.DictReader((out / "portfolio.csv").open())}
    last = sglang_runs()[-1]  # March's last run: the latest month, the row written last
    tef = (last["total_input_tokens"] + last["total_output_tokens"]) / last["duration"] / 8 / 400
    assert float(rows["Tracked"]["actual_tef"]) == pytest.approx(tef, rel=1e-12)
    assert float(rows["Tracked"]["actual_tef_variance"]) == pytest.approx(tef - plan_tef(3),
                                                                        rel=1e-12)
    assert float(rows["Tracked"]["actual_model_month"]) == 3
    assert rows["Plain"]["actual_tef"] == "" and rows["Plain"]["actual_tef_variance"] == ""


def test_refresh_keeps_the_actuals_rows(tmp_path):
    path = workbook(tmp_path)
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    proc = tool.run("refresh", str(path), "-o", str(tmp_path / "new.xlsx"), "--draws", "20")
    assert proc.returncode == 0, proc.stderr
    assert "kept the 6 rows of the Actuals sheet" in proc.stdout
    assert actuals_rows(tmp_path / "new.xlsx") == actuals_rows(path)
    # and tracking the refreshed workbook again adds nothing
    proc = track(tmp_path / "new.xlsx", SGLANG, "--month", "2027-03", "--gpus", 8)
    assert "0 rows added" in proc.stdout


def test_two_prometheus_scrapes_dated_by_their_own_times(tmp_path):
    # constructed scrapes of the actuals fixtures, taken 2026-12-01 10:00 and 10:05 UTC
    scrapes = [Path(__file__).parent / "fixtures" / "actuals" / f"vllm_metrics_{w}.prom"
               for w in ("before", "after")]

    def counted(path: Path) -> float:
        return sum(float(line.split()[-1]) for line in path.read_text().splitlines()
                   if line.startswith(("vllm:prompt_tokens_total", "vllm:generation_tokens_total")))

    tps = (counted(scrapes[1]) - counted(scrapes[0])) / 300
    path = workbook(tmp_path, start_date="2026-12-01")
    assert track(path, *scrapes, "--gpus", 2).returncode == 0
    (row,) = actuals_rows(path)
    assert row["model_month"] == 1 and row["format"] == "vLLM Prometheus"
    assert row["tef_actual"] == pytest.approx(tps / 2 / 400, rel=1e-12)
    assert row["tef_plan"] == pytest.approx(plan_tef(1), rel=1e-12)
    once = path.read_bytes()
    assert "0 rows added" in track(path, *scrapes, "--gpus", 2).stdout
    assert path.read_bytes() == once


def test_a_month_after_cohort_1_retires_is_refused(tmp_path):
    path = workbook(tmp_path, retire_month=2)
    before = path.read_bytes()
    proc = track(path, SUITE, "--month", "2027-03")
    assert proc.returncode == 2 and path.read_bytes() == before
    assert "measured in 2027-03 (month 3), after cohort 1 retires (retire_month 2)" in proc.stderr


def _chart(path: Path) -> str:
    with zipfile.ZipFile(path) as archive:
        (chart,) = wa.find_parts(archive).charts
        return archive.read(chart).decode()


def test_the_chart_spans_0_to_100_percent_until_a_measurement_beats_it(tmp_path):
    # an empty sheet's chart shows TEF from 0 to 100 % (not a spreadsheet's 0 to 1,200 %)
    path = workbook(tmp_path, theoretical_tps_per_gpu=2_000)
    assert re.search(r'<max val="1" ?/><min val="0" ?/>', _chart(path))
    assert track(path, SGLANG, "--month", "2027-03", "--gpus", 8).returncode == 0
    assert max(r["tef_actual"] for r in actuals_rows(path)) <= 1
    assert re.search(r'<max val="1" ?/>', _chart(path))       # kept: every TEF fits
    # 10 tokens/s per GPU of theory: the same runs measure a TEF far above 100 %
    # (at the site's 400, the busiest run is already at 114 %)
    high = workbook(tmp_path, "high.xlsx", theoretical_tps_per_gpu=10, measured_tps=5_000)
    proc = track(high, SGLANG, "--month", "2027-03", "--gpus", 8)
    assert proc.returncode == 0 and "TEF above 100 %" in proc.stdout
    assert not re.search(r"<max ", _chart(high))               # the axis grows to show it
    assert re.search(r'<min val="0" ?/>', _chart(high))
