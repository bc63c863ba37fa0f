"""`tokenfactory-xl actuals`: each tool's own file format, read and checked by hand."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path
from statistics import NormalDist

import openpyxl
import pytest

from tests.specs.test_roofline import GPUS, MODELS, hand_prefill, hand_tps
from tests.tools import command
from tokenfactory_xl.capacity import actuals, prometheus, write_back
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core import specs
from tokenfactory_xl.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "actuals"
Z99 = NormalDist().inv_cdf(0.99)


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def hand_slo(p50: float, p99: float, slo: float) -> float:
    """methodology section 1: log-normal TTFT through its p50 and p99."""
    sigma = math.log(p99 / p50) / Z99
    return NormalDist().cdf(math.log(slo / p50) / sigma)


def run(*args: str) -> subprocess.CompletedProcess:
    return command.run("actuals", *args, cwd=ROOT)


def as_json(capsys, *args: str) -> dict:
    assert cli.main(["actuals", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# -- the four formats ----------------------------------------------------------------------------
def test_vllm_bench_serve_result():
    [m] = actuals.read_files([fixture("vllm_bench_serve.json")])
    assert m.format == "vLLM bench serve"
    assert (m.duration_s, m.input_tokens, m.output_tokens) == (100.0, 1_024_000, 256_000)
    assert m.tps == (1_024_000 + 256_000) / 100.0 == 12_800
    assert m.output_tps == 256_000 / 100.0
    assert (m.ttft_p50_ms, m.ttft_p99_ms) == (412.5, 1650.0)
    assert (m.requests, m.request_goodput, m.cache_hit_rate) == (1000, 9.42, None)


def test_older_vllm_percentile_lists_are_read():
    text = json.dumps({"duration": 10.0, "total_input_tokens": 100, "total_output_tokens": 50,
                       "total_token_throughput": 15.0, "median_ttft_ms": 20.0,
                       "percentiles_ttft_ms": [[50, 20.0], [99, 90.0]]})
    m = actuals.read_benchmark("old.json", text)
    assert (m.tps, m.ttft_p99_ms) == (15.0, 90.0)


def test_sglang_bench_serving_reports_every_run_or_the_one_chosen():
    first, second = actuals.read_files([fixture("sglang_bench_serving.jsonl")])
    assert (first.run, second.run) == ("1 of 2", "2 of 2")
    assert first.tps == (240_000 + 96_000) / 50.0
    m = second
    assert m.format == "SGLang bench_serving"
    assert m.tps == (300_000 + 120_000) / 60.0 == 7_000
    assert (m.ttft_p50_ms, m.ttft_p99_ms, m.requests) == (250.0, 980.0, 500)
    [chosen] = actuals.read_files([fixture("sglang_bench_serving.jsonl")], run=2)
    assert chosen == second
    assert actuals.read_benchmark(fixture("sglang_bench_serving.jsonl")).notes == (
        "run 2 of 2 read (the latest)",)
    with pytest.raises(actuals.FileProblem, match="holds 2 runs; --run 3 is not one of them"):
        actuals.read_files([fixture("sglang_bench_serving.jsonl")], run=3)


@pytest.mark.parametrize("name", ["profile_export_aiperf.json",
                                  "profile_export_aiperf_records.json"])
def test_aiperf_export(name):
    [m] = actuals.read_files([fixture(name)])
    assert m.format == "NVIDIA AIPerf"
    assert m.tps == (3_000_000 + 450_000) / 120.0 == 28_750
    assert (m.ttft_p50_ms, m.ttft_p99_ms, m.output_tps, m.requests) == (320.0, 1400.0, 3750.0,
                                                                        1500)


def test_aiperf_units_are_honoured():
    data = json.loads(Path(fixture("profile_export_aiperf.json")).read_text())
    data["time_to_first_token"] = {"unit": "ns", "avg": 1, "p50": 320e6, "p99": 1.4e9}
    data["benchmark_duration"] = {"unit": "ms", "avg": 120_000}
    m = actuals.read_benchmark("ns.json", json.dumps(data))
    assert (m.ttft_p50_ms, m.ttft_p99_ms, m.duration_s) == (320.0, 1400.0, 120.0)


def test_two_prometheus_scrapes():
    [m] = actuals.read_files([fixture("vllm_metrics_before.prom"),
                              fixture("vllm_metrics_after.prom")])
    # two engines summed; the # scraped_at lines are 5 minutes apart
    assert m.duration_s == 300
    assert m.input_tokens == (1_600_000 - 1_000_000) + (1_500_000 - 900_000)
    assert m.output_tokens == (350_000 - 200_000) + (330_000 - 180_000)
    assert m.tps == 1_500_000 / 300 and m.output_tps == 300_000 / 300
    assert m.cache_hit_rate == ((600_000 - 350_000) + (530_000 - 300_000)) / 1_200_000
    # bucket increases (cumulative): ≤0.1 s 50, ≤0.25 300, ≤0.5 700, ≤0.75 900, ≤1 960,
    # ≤2.5 995, ≤5 1000. p50: rank 500 in (0.25, 0.5]: 0.25 + 0.25 × 200/400 = 0.375 s.
    # p99: rank 990 in (1, 2.5]: 1 + 1.5 × 30/35 s.
    assert m.ttft_p50_ms == pytest.approx(375.0)
    assert m.ttft_p99_ms == pytest.approx((1 + 1.5 * 30 / 35) * 1000)


def test_scrapes_in_either_order_give_the_same_answer():
    ab = actuals.read_files([fixture("vllm_metrics_before.prom"),
                             fixture("vllm_metrics_after.prom")])[0]
    ba = actuals.read_files([fixture("vllm_metrics_after.prom"),
                             fixture("vllm_metrics_before.prom")])[0]
    assert (ab.tps, ab.ttft_p99_ms) == (ba.tps, ba.ttft_p99_ms)


def test_untimed_scrapes_need_an_interval():
    files = [fixture("vllm_metrics_before_untimed.prom"),
             fixture("vllm_metrics_after_untimed.prom")]
    with pytest.raises(actuals.FileProblem) as err:
        actuals.read_files(files)
    assert "--interval" in str(err.value) and "untimed" in str(err.value)
    [m] = actuals.read_files(files, interval_s=60)
    assert m.tps == 1_500_000 / 60


def test_sample_timestamps_are_used():
    text = Path(fixture("vllm_metrics_before_untimed.prom")).read_text()
    stamped = "\n".join(line + " 1764583200000" if line and not line.startswith("#") else line
                        for line in text.splitlines())
    scrape = actuals.read_scrape("stamped.prom", stamped)
    assert scrape.time == 1_764_583_200


def test_a_counter_that_fell_means_a_restart():
    before = actuals.read_scrape(fixture("vllm_metrics_after.prom"))
    after = actuals.read_scrape(fixture("vllm_metrics_before.prom"))
    with pytest.raises(actuals.FileProblem) as err:
        actuals.from_scrapes(before, after, interval_s=60)
    assert "restarted" in str(err.value)


def test_a_benchmark_with_scrapes_takes_the_cache_share_from_them():
    [m] = actuals.read_files([fixture("vllm_bench_serve.json"),
                              fixture("vllm_metrics_before.prom"),
                              fixture("vllm_metrics_after.prom")])
    assert (m.tps, m.cache_hit_rate) == (12_800, 0.4)


def test_histogram_quantile_follows_prometheus():
    inf = math.inf
    assert prometheus.histogram_quantile(0.5, {1.0: 10, 2.0: 20, inf: 20}) == 1.0
    assert prometheus.histogram_quantile(0.25, {1.0: 10, 2.0: 20, inf: 20}) == 0.5  # from 0
    assert prometheus.histogram_quantile(0.75, {1.0: 10, 2.0: 20, inf: 20}) == 1.5
    assert prometheus.histogram_quantile(0.99, {1.0: 10, 2.0: 20, inf: 40}) == 2.0  # in +Inf
    assert math.isnan(prometheus.histogram_quantile(0.5, {1.0: 0, inf: 0}))


# -- malformed and unrecognised files ------------------------------------------------------------
@pytest.mark.parametrize(("name", "expected"), [
    ("malformed.json", "is not valid JSON (line 1, column 64)"),
    ("unrecognised.json", "none of the known result formats"),
    ("vllm_bench_serve_bad.json", "has no 'duration'"),
    ("notes.txt", "is not a format this command reads"),
    ("missing.json", "no such file"),
])
def test_bad_files_are_named_with_what_was_expected(name, expected):
    proc = run(fixture(name))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert name in proc.stderr and expected in proc.stderr
    if name != "missing.json":
        assert "vllm bench serve" in proc.stderr or "expected a number" in proc.stderr


def test_one_scrape_is_not_enough():
    proc = run(fixture("vllm_metrics_before.prom"))
    assert proc.returncode == 2 and "expected exactly two" in proc.stderr


# -- the figures printed -------------------------------------------------------------------------
def test_tef_against_a_given_theoretical_figure(capsys):
    got = as_json(capsys, fixture("vllm_bench_serve.json"), "--theoretical-tps", "8000",
                  "--gpus", "2")
    assert got["measured_tps_per_gpu"] == 12_800 / 2
    assert got["tef"] == pytest.approx(12_800 / 2 / 8000)
    assert got["slo_attainment"] == pytest.approx(hand_slo(412.5, 1650.0, 2000))
    assert got["ttft_slo_ms"] == 2000  # the catalogue's ttft_slo_ms default


def test_tef_against_the_roofline(capsys):
    got = as_json(capsys, fixture("vllm_metrics_before.prom"), fixture("vllm_metrics_after.prom"),
                  "--gpu", "h200", "--model", "llama-3.1-70b", "--precision", "fp8",
                  "--batch", "32", "--context", "4096", "--gpus", "2", "--slo-ms", "1500",
                  "--figure", "roofline")
    gpu, model = GPUS[1], MODELS[1]
    decode = hand_tps(gpu, model, "fp8", 32, 4096, 2)
    # two scrapes count no requests: no mean prompt length, attention left out of prefill
    prefill = hand_prefill(gpu, model, "fp8", 0)
    share = 300_000 / 1_500_000
    blended = 1 / ((1 - share) / prefill + share / decode)
    assert got["roofline_decode_tps_per_gpu"] == pytest.approx(decode)
    assert got["theoretical_tps_per_gpu"] == pytest.approx(blended)
    assert got["tef"] == pytest.approx(5000 / 2 / blended)
    assert got["slo_attainment"] == pytest.approx(hand_slo(375, got["ttft_p99_ms"], 1500))
    assert got["cache_hit_rate"] == 0.4


def test_tef_against_the_attainable_figure_by_default(capsys):
    got = as_json(capsys, fixture("vllm_metrics_before.prom"), fixture("vllm_metrics_after.prom"),
                  "--gpu", "h200", "--model", "llama-3.1-70b", "--precision", "fp8",
                  "--batch", "32", "--context", "4096", "--gpus", "2")
    # prefill by hand: 2 × (70,553,706,496 − 1,050,673,152 embedding) FLOPs per prompt token
    # at the FP8 peak of 1,979 TFLOPS × the dense MFU (no mean prompt: attention left out)
    mfu = specs.method_constant("dense_mfu")
    prefill = 1979e12 * mfu / (2 * (70_553_706_496 - 128_256 * 8192))
    assert got["roofline_prefill_tps_per_gpu"] == pytest.approx(prefill)
    # below the version-2 roofline's decode bound, and blended at 20 % output tokens
    decode = got["roofline_decode_tps_per_gpu"]
    assert decode < hand_tps(GPUS[1], MODELS[1], "fp8", 32, 4096, 2)
    share = 300_000 / 1_500_000
    assert got["theoretical_tps_per_gpu"] == pytest.approx(
        1 / ((1 - share) / prefill + share / decode))
    assert got["theoretical_basis"].startswith("attainable (spec 5.1)")
    assert got["tef"] == pytest.approx(2500 / got["theoretical_tps_per_gpu"])


def test_printed_summary():
    proc = run(fixture("sglang_bench_serving.jsonl"), "--theoretical-tps", "10000", "--run", "2",
               "--gpus", "1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(run 2 of 2) (SGLang bench_serving, concurrency 32, 60.0 s, 500 requests)" in out
    assert "(run 1 of 2)" not in out
    assert "7,000.0 tokens/s" in out and "250.0 / 980.0 ms" in out
    assert f"{100 * hand_slo(250, 980, 2000):.2f} %" in out
    assert "TEF" in out and "0.700" in out


def test_no_gpu_count_gives_no_per_gpu_figure_and_names_the_option():
    # the file says nothing of its GPUs: taking 1 would overstate per-GPU throughput
    proc = run(fixture("sglang_bench_serving.jsonl"), "--theoretical-tps", "10000", "--run", "2",
               "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["measured_tps_per_gpu"] is None and got["tef"] is None
    assert got["gpus_per_instance"] is None and got["instance_tps"] == 7000.0
    assert any("give --gpus N" in note for note in got["notes"])
    proc = run(fixture("sglang_bench_serving.jsonl"), "--run", "2", "--gpus", "4", "--json")
    assert json.loads(proc.stdout)["measured_tps_per_gpu"] == 1750.0


def test_a_batch_that_does_not_fit_is_refused():
    proc = run(fixture("vllm_bench_serve.json"), "--gpu", "L40S", "--model", "Llama-3.1-70B",
               "--precision", "fp8", "--batch", "8", "--context", "4096", "--gpus", "1")
    assert proc.returncode == 2 and "does not fit in memory" in proc.stderr


def test_roofline_options_come_together():
    proc = run(fixture("vllm_bench_serve.json"), "--gpu", "H200", "--model", "Llama-3.1-70B")
    assert proc.returncode == 2 and "--precision, --batch, --context" in proc.stderr
    proc = run(fixture("vllm_bench_serve.json"), "--gpu", "H300", "--model", "Llama-3.1-70B",
               "--precision", "fp8", "--batch", "8", "--context", "4096", "--gpus", "1")
    assert proc.returncode == 2 and "gpu=H300: is not in the gpu catalogue" in proc.stderr
    assert "did you mean H200" in proc.stderr


# -- writing into a sites file -------------------------------------------------------------------
SITES = (
    'site_name,gpus,gpu_model,notes,measured_tps,ttft_p50_ms\n'
    'Frankfurt,1024,H200,"colo, hall 3",3072000,400\n'
    'Dublin,512,B200,,1000000,350\n'
    'Oslo,256,MI300X,"quoted ""name""",,\n'
)


def test_sites_csv_write_keeps_everything_else(tmp_path, capsys):
    path = tmp_path / "sites.csv"
    path.write_text(SITES, encoding="utf-8")
    got = as_json(capsys, fixture("vllm_metrics_before.prom"), fixture("vllm_metrics_after.prom"),
                  "--instances", "100", "--sites", str(path), "--site", "oslo")
    assert got["written"]["measured_tps"] == 5000 * 100
    with open(path, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["site_name", "gpus", "gpu_model", "notes", "measured_tps", "ttft_p50_ms",
                        "ttft_p99_ms", "cache_hit_rate"]
    before = list(csv.reader(SITES.splitlines()))
    assert table[1] == before[1] + ["", ""] and table[2] == before[2] + ["", ""]
    oslo = dict(zip(table[0], table[3], strict=True))
    assert oslo["notes"] == 'quoted "name"' and oslo["gpus"] == "256"
    assert float(oslo["measured_tps"]) == 500_000
    assert float(oslo["ttft_p50_ms"]) == pytest.approx(375)
    assert float(oslo["ttft_p99_ms"]) == pytest.approx(got["ttft_p99_ms"])
    assert float(oslo["cache_hit_rate"]) == 0.4
    assert [p.name for p in tmp_path.iterdir()] == ["sites.csv"]  # no temporary file left


def test_sites_csv_other_rows_stay_byte_for_byte(tmp_path):
    path = tmp_path / "sites.csv"
    text = ('site_name,gpus,gpu_model,notes,measured_tps,ttft_p50_ms,ttft_p99_ms,cache_hit_rate\n'
            'Frankfurt,1024,H200,"colo, hall 3",3072000,400,1500,0.5\n'
            'Dublin,512,B200,,1000000,350,,\n'
            'Oslo,256,MI300X,"quoted ""name""",,,,\n')
    path.write_text(text, encoding="utf-8")
    assert cli.main(["actuals", fixture("vllm_bench_serve.json"), "--sites", str(path),
                     "--site", "Dublin", "--force"]) == 0
    old, new = text.splitlines(), path.read_text(encoding="utf-8").splitlines()
    assert [old[i] for i in (0, 1, 3)] == [new[i] for i in (0, 1, 3)]
    assert new[2] == "Dublin,512,B200,,12800,412.5,1650,"  # no cache share measured: kept


def test_sites_write_refuses_to_overwrite_without_force(tmp_path):
    path = tmp_path / "sites.csv"
    path.write_text(SITES, encoding="utf-8")
    proc = run(fixture("vllm_bench_serve.json"), "--sites", str(path), "--site", "Frankfurt")
    assert proc.returncode == 2
    assert "measured_tps 3072000 → 12800" in proc.stderr and "--force" in proc.stderr
    assert path.read_text(encoding="utf-8") == SITES


def test_an_unknown_site_lists_close_matches(tmp_path):
    path = tmp_path / "sites.csv"
    path.write_text(SITES, encoding="utf-8")
    with pytest.raises(InputError) as err:
        write_back.write_site_values(path, "Frankfort", {"measured_tps": 1.0})
    assert "did you mean Frankfurt?" in str(err.value)
    proc = run(fixture("vllm_bench_serve.json"), "--sites", str(path), "--site", "Zurich")
    assert proc.returncode == 2 and "Frankfurt, Dublin, Oslo" in proc.stderr


def test_sites_xlsx_write_keeps_everything_else(tmp_path):
    path = tmp_path / "sites.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sites"
    for row in csv.reader(SITES.splitlines()):
        sheet.append([int(c) if c.isdigit() else (c or None) for c in row])
    sheet["B2"].number_format = "#,##0"
    readme = book.create_sheet("Read me")
    readme["A1"] = "Do not edit the header row."
    book.save(path)
    shutil.copy(path, tmp_path / "original.xlsx")
    write_back.write_site_values(path, "Dublin", {"measured_tps": 12800.0, "ttft_p99_ms": 1650.0},
                              force=True)
    after = openpyxl.load_workbook(path)
    original = openpyxl.load_workbook(tmp_path / "original.xlsx")
    new, old = after["Sites"], original["Sites"]
    assert [c.value for c in new[1]] == [c.value for c in old[1]] + ["ttft_p99_ms"]
    for r in (2, 4):
        assert [c.value for c in new[r]][:6] == [c.value for c in old[r]]
    assert new["B2"].number_format == "#,##0"
    assert (new["E3"].value, new["G3"].value, new["F3"].value) == (12800.0, 1650.0, 350)
    assert after["Read me"]["A1"].value == "Do not edit the header row."
    assert after.sheetnames == ["Sites", "Read me"]


def test_sites_need_a_site_name_column(tmp_path):
    path = tmp_path / "sites.csv"
    path.write_text("name,gpus\nA,1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        write_back.write_site_values(path, "A", {"measured_tps": 1.0})
    assert "no site_name column" in str(err.value)


def test_a_semicolon_sites_file_gets_decimal_commas(tmp_path):
    # Excel in a decimal-comma locale saves CSV with semicolons and 0,5 for 0.5
    path = tmp_path / "sites.csv"
    text = "Site_Name;GPUs;TTFT_P50_MS\r\nLyon;64;412,5\r\nNice;32;300,25\r\n"
    path.write_text(text, encoding="utf-8")
    write_back.write_site_values(path, "Lyon", {"ttft_p50_ms": 412.5, "ttft_p99_ms": 1650.25})
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    assert lines[0] == "Site_Name;GPUs;TTFT_P50_MS;ttft_p99_ms"  # the same value: no --force
    assert lines[1] == "Lyon;64;412,5;1650,25" and lines[2] == "Nice;32;300,25;"


def test_an_xlsx_sheet_that_is_not_there(tmp_path):
    path = tmp_path / "sites.xlsx"
    book = openpyxl.Workbook()
    book.active.append(["site_name", "gpus"])
    book.active.append(["Oslo", 8])
    book.save(path)
    with pytest.raises(InputError) as err:
        write_back.write_site_values(path, "Oslo", {"measured_tps": 1.0}, sheet="Sites")
    assert "--sheet=Sites: is not a sheet of sites.xlsx; the sheets are Sheet" in str(err.value)


def test_a_histogram_without_its_inf_bucket_is_named():
    text = Path(fixture("vllm_metrics_after.prom")).read_text()
    broken = "\n".join(line for line in text.splitlines() if 'le="+Inf"' not in line)
    before = actuals.read_scrape(fixture("vllm_metrics_before.prom"))
    before.buckets.pop(math.inf)
    with pytest.raises(actuals.FileProblem) as err:
        actuals.from_scrapes(before, actuals.read_scrape("after.prom", broken), interval_s=60)
    assert "after.prom" in str(err.value) and "+Inf" in str(err.value)


def test_a_damaged_xlsx_sites_file_is_named(tmp_path):
    import zipfile

    path = tmp_path / "sites.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "not a workbook")
    proc = run(fixture("vllm_bench_serve.json"), "--sites", str(path), "--site", "Oslo")
    assert proc.returncode == 2 and "is not a readable .xlsx workbook" in proc.stderr
    assert "Traceback" not in proc.stderr
    path.write_text("plain text", encoding="utf-8")
    proc = run(fixture("vllm_bench_serve.json"), "--sites", str(path), "--site", "Oslo")
    assert proc.returncode == 2 and "is not a readable .xlsx workbook" in proc.stderr
