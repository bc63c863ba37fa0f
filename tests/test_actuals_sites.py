"""``actuals --sites``: the measured values go where ``batch`` reads them, in the file's own
number format, leaving every other cell (and every formula's stored value) as it was, and never
a value no site can take."""

from __future__ import annotations

import json
import math
from pathlib import Path

import openpyxl
import pytest

from tests.test_sites_messy import rewrite, save, sheet_of
from tests.tools import command
from tokenfactory_xl.capacity.write_back import write_site_values
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.files.safe_xlsx import open_xlsx
from tokenfactory_xl.sites.load import load_sites

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "actuals" / "vllm_bench_serve.json"
# The fixture's own fields: total_token_throughput 12800.0, median_ttft_ms 412.5,
# p99_ttft_ms 1650.0
MEASURED = {"measured_tps": 12800.0, "ttft_p50_ms": 412.5, "ttft_p99_ms": 1650.0}


def actuals(*args, cwd: Path):
    return command.run("actuals", RUN, *args, cwd=cwd)


def test_a_semicolon_file_with_decimal_points_gets_decimal_points(tmp_path):
    path = tmp_path / "sites.csv"
    path.write_text("site_name;gpus;pue\nAlpha;1024;1.25\nBeta;2048;1.3\n", encoding="utf-8")
    assert actuals("--sites", path, "--site", "Alpha", cwd=tmp_path).returncode == 0
    assert path.read_text(encoding="utf-8").splitlines()[1] == "Alpha;1024;1.25;12800;412.5;1650"
    sites = load_sites(path)   # the file still reads, as it did before
    assert not sites.problems
    assert sites.rows[0].inputs["ttft_p50_ms"] == 412.5


def test_a_semicolon_file_with_decimal_commas_gets_decimal_commas(tmp_path):
    path = tmp_path / "sites.csv"
    path.write_text("site_name;gpus;pue\nAlpha;1024;1,25\n", encoding="utf-8")
    assert actuals("--sites", path, "--site", "Alpha", cwd=tmp_path).returncode == 0
    assert path.read_text(encoding="utf-8").splitlines()[1] == "Alpha;1024;1,25;12800;412,5;1650"
    assert load_sites(path).rows[0].inputs["ttft_p50_ms"] == 412.5


def _with_formula(tmp_path: Path) -> Path:
    """Sites whose pue is a formula =1.2+0.05 with its stored value 1.25, as Excel saves it."""
    wb = sheet_of([["site_name", "gpus", "pue"], ["Alpha", 1024, "=1.2+0.05"],
                   ["Beta", 2048, 1.3]])
    path = save(wb, tmp_path / "sites.xlsx")
    rewrite(path, "xl/worksheets/sheet1.xml",
            lambda d: d.replace(b"<f>1.2+0.05</f><v></v>", b"<f>1.2+0.05</f><v>1.25</v>")
            .replace(b"<f>1.2+0.05</f><v />", b"<f>1.2+0.05</f><v>1.25</v>"))
    with open_xlsx(path) as content:
        assert content.cells("Sites").values["C2"] == 1.25
    return path


def test_a_workbook_keeps_its_formulas_and_their_stored_values(tmp_path):
    path = _with_formula(tmp_path)
    proc = actuals("--sites", path, "--site", "Alpha", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open_xlsx(path) as content:
        cells = content.cells("Sites")
    assert cells.formulas["C2"] == "1.2+0.05" and cells.values["C2"] == 1.25
    assert [cells.values[f"{c}1"] for c in "DEF"] == list(MEASURED)
    assert [cells.values[f"{c}2"] for c in "DEF"] == list(MEASURED.values())
    assert "D3" not in cells.values
    (alpha, beta) = load_sites(path).rows   # batch reads it as before, with the new values
    assert alpha.inputs["pue"] == 1.25 and alpha.inputs["measured_tps"] == 12800
    assert beta.inputs["measured_tps"] == 3_072_000   # the default: Beta was not measured


def test_a_workbook_is_written_on_the_sheet_batch_reads_below_its_title(tmp_path):
    wb = openpyxl.Workbook()
    notes = wb.active
    notes.title = "Notes"
    notes["A1"] = "read me"
    ws = wb.create_sheet("Sites")
    for row in [["Our sites"], ["site_name", "gpus"], ["Alpha", 1024]]:
        ws.append(row)
    wb.active = 1  # opens on Sites, the sheet batch reads
    path = save(wb, tmp_path / "sites.xlsx")
    assert actuals("--sites", path, "--site", "Alpha", cwd=tmp_path).returncode == 0
    with open_xlsx(path) as content:
        assert content.cells("Notes").values == {"A1": "read me"}
        sites = content.cells("Sites").values
    assert (sites["C2"], sites["C3"]) == ("measured_tps", 12800)
    (row,) = load_sites(path).rows
    assert row.inputs["ttft_p99_ms"] == 1650


def _failed_run(tmp_path: Path) -> Path:
    data = json.loads(RUN.read_text(encoding="utf-8"))
    data.update(completed=0, failed=data["num_prompts"], total_input_tokens=0,
                total_output_tokens=0, output_throughput=0.0, total_token_throughput=0.0,
                request_throughput=0.0, request_goodput=0.0)
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_run_whose_every_request_failed_writes_nothing(tmp_path):
    sites = tmp_path / "sites.csv"
    sites.write_text("site_name,gpus\nAlpha,1024\n", encoding="utf-8")
    before = sites.read_bytes()
    proc = command.run("actuals", _failed_run(tmp_path).name, "--sites", sites, "--site", "Alpha",
                       cwd=tmp_path)
    assert proc.returncode == 2
    assert "measured_tps=0: measured in failed.json: no tokens were served" in proc.stderr
    assert sites.read_bytes() == before


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_and_inf_are_never_written(tmp_path, value):
    sites = tmp_path / "sites.csv"
    sites.write_text("site_name,gpus\nAlpha,1024\n", encoding="utf-8")
    before = sites.read_bytes()
    with pytest.raises(InputError) as caught:
        write_site_values(sites, "Alpha", {"measured_tps": 1000.0, "cache_hit_rate": value},
                          source="a scrape")
    (problem,) = caught.value.problems
    assert problem.name == "cache_hit_rate" and "measured in a scrape: is " in problem.message
    assert sites.read_bytes() == before
