"""`actuals` on real public result files and on today's formats (tests/fixtures/actuals/SOURCES.md
says where each file comes from); a published measurement never beats the roofline bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools import command
from tokenfactory_xl.capacity import actuals, measurement
from tokenfactory_xl.core import economics as model
from tokenfactory_xl.core import roofline

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "actuals"


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def cli_json(*args: str) -> object:
    proc = command.run("actuals", *args, "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- the real SGLang sweep (Llama 3.3 70B on H200, five request rates) ---------------------------
SWEEP = [  # total input tokens, total output tokens, duration s, completed, median TTFT, ITL ms
    (152612, 160347, 298.36731477989815, 300, 82.87082647439092, 13.637926895171404),
    (308748, 308712, 312.64655844308436, 600, 84.7704210318625, 14.773549977689981),
    (615860, 607936, 296.7945813878905, 1200, 103.338644024916, 19.343842985108495),
    (1222995, 1218922, 346.69448847300373, 2400, 194.49735060334206, 70.8101480267942),
    (1629242, 1642637, 387.5871320969891, 3200, 1292.0442644972354, 190.5858819372952),
]


def test_every_run_of_the_real_sglang_sweep():
    runs = actuals.read_files([fixture("sglang_llama70b_h200_sweep.jsonl")])
    assert [r.run for r in runs] == [f"{i} of 5" for i in range(1, 6)]
    for got, (inp, out, seconds, done, ttft, itl) in zip(runs, SWEEP, strict=True):
        assert got.format == "SGLang bench_serving"
        assert got.tps == pytest.approx((inp + out) / seconds, rel=1e-12)
        assert got.ttft_p50_ms == ttft and got.ttft_p99_ms is None   # older output: no p99
        assert got.tps_per_user == pytest.approx(1000 / itl)
        assert got.prompt_tokens == pytest.approx(inp / done)
    # run 1: 312,959 tokens in 298.37 s
    assert round(runs[0].tps, 1) == 1048.9
    # driven by request rate: average in flight by Little's law, 300 / 298.37 s × 7.811 s
    assert runs[0].concurrency == pytest.approx(300 / 298.36731477989815 * 7.8112642198785525)


def test_actuals_json_of_the_real_sweep_and_run_choice():
    got = cli_json(fixture("sglang_llama70b_h200_sweep.jsonl"), "--gpus", "4")
    assert len(got) == 5
    inp, out, seconds, *_ = SWEEP[4]
    assert got[4]["measured_tps"] == pytest.approx((inp + out) / seconds)
    assert got[4]["measured_tps_per_gpu"] == pytest.approx((inp + out) / seconds / 4)
    assert got[4]["ttft_p50_ms"] == pytest.approx(1292.0442644972354)
    assert got[4]["ttft_p99_ms"] is None
    [one] = [cli_json(fixture("sglang_llama70b_h200_sweep.jsonl"), "--run", "3")]
    assert one["run"] == "3 of 5" and one["measured_tps"] == pytest.approx(
        (615860 + 607936) / 296.7945813878905)


def test_the_real_deepseek_run_reads_its_infinite_request_rate():
    [m] = actuals.read_files([fixture("sglang_deepseek_v3_8xh200.jsonl")])
    # 10,000 prompts of 1 token and 5,120,000 output tokens in 412.49 s
    assert m.tps == pytest.approx(5_130_000 / 412.49091206211597)
    assert round(m.tps / 8, 1) == 1554.6


# -- a published measurement must never beat the bound ------------------------------------------
def _best_bound(gpu: str, name: str, precision: str, context: int, gpus: int,
                prompt: float, output_share: float) -> float:
    """The roofline ceiling for a token mix: decode at the largest batch that fits (decode TPS
    grows with the batch), blended with prefill by the output share (methodology sections 2, 5)."""
    batch = roofline.max_batch_for(gpu, name, precision, context, gpus)
    decode = roofline.theoretical_tps(gpu, name, precision, batch, context, gpus)
    prefill = roofline.prefill_tps_for(gpu, name, precision, 1.0, prompt)
    return float(model.blended_capacity(prefill, decode, output_share))


def test_the_real_measurements_stay_under_their_bounds():
    # Llama 3.3 70B (the Llama-3.1-70B architecture) in BF16 on 4 × H200, ~2,048-token contexts
    for m in actuals.read_files([fixture("sglang_llama70b_h200_sweep.jsonl")]):
        bound = _best_bound("H200", "Llama-3.1-70B", "bf16", 2048, 4, m.prompt_tokens,
                            m.output_share)
        assert m.tps / 4 < bound, (m.run, m.tps / 4, bound)
    # DeepSeek-V3 in FP8 on 8 × H200, 513-token contexts: 1,554.6 measured per GPU
    [ds] = actuals.read_files([fixture("sglang_deepseek_v3_8xh200.jsonl")])
    bound = _best_bound("H200", "DeepSeek-V3", "fp8", 513, 8, 1, ds.output_share)
    assert ds.tps / 8 < bound
    # ... and even at batch 256 (the spec's check batch) the bound stays above it: 1,823 per
    # GPU at 513 tokens, where version 1 (active parameters only) claimed about 16,000
    at_256 = roofline.theoretical_tps("H200", "DeepSeek-V3", "fp8", 256, 513, 8)
    assert ds.tps / 8 < at_256 < 2000


def test_published_nim_llama_8b_figure_stays_under_the_bound():
    # FIELD-NOTES: NVIDIA NIM, Llama-3-8B, H100 SXM, BF16, concurrency 1, ISL 1,000 / OSL 200:
    # ITL 4.70 ms = 212.8 tokens/s; the context runs from 1,000 to 1,200 tokens
    for context in (1000, 1100, 1200):
        assert roofline.theoretical_tps("H100 SXM", "Llama-3.1-8B", "bf16", 1, context) > 212.8


# -- today's formats -----------------------------------------------------------------------------
def test_suite_results_per_gpu_seconds_and_interactivity():
    runs = actuals.read_files([fixture("suite_agg_list_constructed.json")])
    assert [r.run for r in runs] == ["1 of 3", "2 of 3", "3 of 3"]
    second = runs[1]
    assert second.format == "benchmark suite result"
    assert (second.gpus, second.concurrency, second.hardware, second.precision) == (
        8, 32, "h200", "fp8")
    assert second.tps == pytest.approx(412.7 * 8) and second.output_tps == pytest.approx(
        206.1 * 8)
    # seconds without _ms become milliseconds, and the note says which unit was assumed
    assert (second.ttft_p50_ms, second.ttft_p99_ms) == (pytest.approx(512.7),
                                                        pytest.approx(2103.4))
    assert "median_ttft has no unit in its name: read as seconds (0.5127 s = 512.7 ms)" in \
        second.notes
    assert second.tps_per_user == 27.02
    got = cli_json(fixture("suite_agg_list_constructed.json"), "--run", "2")
    assert got["measured_tps_per_gpu"] == pytest.approx(412.7)   # --gpus from the file's tp
    assert got["measured_tps"] == pytest.approx(3301.6)
    assert (got["ttft_p50_ms"], got["ttft_p99_ms"]) == (pytest.approx(512.7),
                                                        pytest.approx(2103.4))


def test_suite_row_with_metrics_nested():
    [m] = actuals.read_files([fixture("suite_row_metrics_constructed.json")])
    assert (m.gpus, m.hardware, m.precision, m.prompt_tokens) == (4, "b200", "fp4", 1024)
    assert m.tps == pytest.approx(2781.5 * 4)
    assert m.ttft_p50_ms == pytest.approx(87.5) and m.ttft_p99_ms == pytest.approx(312.1)


def test_aiperf_current_export_with_short_tags():
    [m] = actuals.read_files([fixture("profile_export_aiperf_ttft_constructed.json")])
    assert m.format == "NVIDIA AIPerf"
    assert m.tps == pytest.approx((55000 + 19992) / 15.8)
    assert (m.ttft_p50_ms, m.ttft_p99_ms, m.requests, m.tps_per_user) == (15.34, 68.82, 100,
                                                                          131.2)
    # the same metrics given as a list of records with their tags
    data = json.loads(Path(fixture("profile_export_aiperf_ttft_constructed.json")).read_text())
    data["records"] = list(data["records"].values())
    listed = actuals.read_benchmark("list.json", json.dumps(data))
    assert listed.tps == m.tps and listed.ttft_p99_ms == 68.82


@pytest.mark.parametrize(("fields", "p50", "note"), [
    ({"median_ttft": 0.25, "p99_ttft": 1.5}, 250.0, "read as seconds (0.25 s = 250 ms)"),
    ({"median_ttft": 250.0, "p99_ttft": 1500.0}, 250.0, "too long for seconds"),
    ({"median_ttft_ms": 250.0, "p99_ttft_ms": 1500.0}, 250.0, None),
])
def test_ttft_without_a_unit_says_which_unit_was_assumed(fields, p50, note):
    base = {"endpoint_type": "vllm", "duration": 10.0, "completed": 5,
            "total_input_tokens": 100, "total_output_tokens": 50, **fields}
    m = actuals.read_benchmark("r.json", json.dumps(base))
    assert m.ttft_p50_ms == p50 and m.ttft_p99_ms == 1500.0
    assert any(note in n for n in m.notes) if note else not any("unit" in n for n in m.notes)


# -- hostile and malformed files: one line, exit 2 ----------------------------------------------
@pytest.mark.parametrize(("content", "says"), [
    ("[]", "holds no result"),
    ("[1, 2]", "holds a JSON int"),
    ("42", "is not a format this command reads"),
    ("[" * 100_000 + "]" * 100_000, "nests JSON too deeply"),
    ('{"tput_per_gpu": "fast"}', "'tput_per_gpu' is 'fast', expected a number"),
    ('{"tput_per_gpu": NaN}', "expected a number of at least 0"),
    ('{"tput_per_gpu": -5}', "expected a number of at least 0"),
    ('{"endpoint_type": "vllm", "duration": 1e309}', "expected a number of at least 0"),
    ('{"a": 1}\n{"total_token_throughput": 1', "is not valid JSON (line 2)"),
    ('{"=cmd|\' /C calc\'!A0": 1}', "none of the known result formats"),
    ("\x00\x01\x02", "is not a format this command reads"),
], ids=lambda x: x[:20] if isinstance(x, str) else None)
def test_hostile_files_get_one_clear_line(tmp_path, content, says):
    path = tmp_path / "result.json"
    path.write_text(content, encoding="utf-8")
    proc = command.run("actuals", str(path), cwd=ROOT)
    assert proc.returncode == 2
    assert says in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(b"{" + b" " * 2048 + b"}")
    monkeypatch.setattr(measurement, "MAX_RESULT_BYTES", 1024)
    with pytest.raises(actuals.FileProblem, match="give the summary file"):
        actuals.read_files([str(path)])


def test_format_comes_from_content_not_the_name(tmp_path):
    # a suite row saved under an SGLang-looking name, an AIPerf export named .jsonl
    row = tmp_path / "sglang_output.jsonl"
    row.write_text(Path(fixture("suite_row_metrics_constructed.json")).read_text())
    aiperf = tmp_path / "vllm_result.json"
    aiperf.write_text(Path(fixture("profile_export_aiperf_ttft_constructed.json")).read_text())
    assert [m.format for m in actuals.read_files([str(row), str(aiperf)])] == [
        "benchmark suite result", "NVIDIA AIPerf"]


def test_aiperf_without_totals_uses_mean_lengths_times_requests():
    data = json.loads(Path(fixture("profile_export_aiperf_ttft_constructed.json")).read_text())
    del data["records"]["total_isl"], data["records"]["total_osl"]
    data["records"]["input_sequence_length"] = {"tag": "input_sequence_length", "avg": 550.0}
    data["records"]["output_sequence_length"] = {"tag": "output_sequence_length", "avg": 199.92}
    m = actuals.read_benchmark("means.json", json.dumps(data))
    assert m.tps == pytest.approx((550 * 100 + 199.92 * 100) / 15.8)
    assert "input tokens = mean input_sequence_length × request_count" in m.notes
    del data["records"]["input_sequence_length"]
    with pytest.raises(actuals.FileProblem, match="no 'total_isl' metric"):
        actuals.read_benchmark("none.json", json.dumps(data))


def test_a_disaggregated_suite_row_counts_prefill_and_decode_gpus():
    row = {"hw": "gb200", "precision": "fp4", "conc": 512, "num_prefill_gpu": 8,
           "num_decode_gpu": 16, "prefill_tp": 4, "decode_tp": 8,
           "metrics": {"tput_per_gpu": 1000.0, "median_ttft": 0.5}}
    m = actuals.read_benchmark("disagg.json", json.dumps(row))
    assert m.gpus == 24 and m.tps == 24_000.0
    # a colocated row (disagg false) runs on its tp GPUs, whatever counts it repeats
    row = {**row, "disagg": False, "tp": 8, "num_prefill_gpu": 8, "num_decode_gpu": 8}
    m = actuals.read_benchmark("colocated.json", json.dumps(row))
    assert m.gpus == 8 and m.tps == 8_000.0


def test_an_older_vllm_file_is_told_from_sglang_by_its_own_fields():
    # benchmark_serving.py of 2024 wrote input_throughput (as SGLang does) and no
    # total_token_throughput; tokenizer_id is vLLM's
    old = {"backend": "vllm", "model_id": "m", "tokenizer_id": "m", "duration": 10.0,
           "completed": 10, "total_input_tokens": 1000, "total_output_tokens": 500,
           "input_throughput": 100.0, "output_throughput": 50.0, "median_ttft_ms": 30.0,
           "p99_ttft_ms": 90.0, "median_tpot_ms": 20.0}
    m = actuals.read_benchmark("old.json", json.dumps(old))
    assert m.format == "vLLM bench serve" and m.tps == 150.0 and m.tps_per_user == 50.0
    sglang_client_on_vllm = {**old, "total_output_tokens_retokenized": 499}
    del sglang_client_on_vllm["tokenizer_id"]
    assert actuals.read_benchmark("s.json", json.dumps(sglang_client_on_vllm)).format == \
        "SGLang bench_serving"


def test_a_suite_row_without_a_gpu_count_gives_its_per_gpu_figures_only(tmp_path):
    # tput_per_gpu is one GPU's; without tp the instance is unknown, never taken as one GPU
    row = tmp_path / "row.json"
    row.write_text(json.dumps({"hw": "h200", "conc": 8, "tput_per_gpu": 1000.0,
                               "output_tput_per_gpu": 200.0, "median_ttft": 0.5,
                               "p99_ttft": 1.0}), encoding="utf-8")
    proc = command.run("actuals", str(row), "--json", cwd=ROOT)
    got = json.loads(proc.stdout)
    assert got["measured_tps_per_gpu"] == 1000.0 and got["output_tps_per_gpu"] == 200.0
    assert got["instance_tps"] is None and got["measured_tps"] is None
    assert any("give --gpus N for the instance's" in n for n in got["notes"])
    got = json.loads(command.run("actuals", str(row), "--json", "--gpus", "4",
                                 cwd=ROOT).stdout)
    assert (got["instance_tps"], got["output_tps"], got["measured_tps_per_gpu"]) == (
        4000.0, 800.0, 1000.0)
    # cost divides nothing: the file's figure is per GPU already
    cost = json.loads(command.run("cost", str(row), "--gpu-hour", "3",
                                  "--prefill-decode-ratio", "10", "--json", cwd=ROOT).stdout)
    assert cost["points"][0]["tps_per_gpu"] == 1000.0
