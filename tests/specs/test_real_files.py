"""`actuals` on the 14 real, published result files of tests/fixtures/real (SOURCES.md names the
repository, path and commit of each). Every expected figure is read by hand in the file's own
fields (quoted beside it); per-GPU figures appear only where the file gives the GPU count."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.tools import command

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"


def actuals(name: str, *args: str) -> list[dict]:
    proc: subprocess.CompletedProcess = command.run("actuals", str(REAL / name), "--json", *args,
                                                    cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    got = json.loads(proc.stdout)
    return got if isinstance(got, list) else [got]


def test_every_real_file_is_listed_in_sources():
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    files = sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*")
                   if p.is_file() and p.name not in ("SOURCES.md", "measurements.csv"))
    assert len(files) == 14
    for name in files:
        assert f"| {name} |" in sources


def test_aiperf_json_new_schema():
    [r] = actuals("aiperf/kimik2.5_mi355x_tp4_conc1_profile_export_aiperf.json")
    # "total_isl" 12291114, "total_osl" 78417, "benchmark_duration" 1763.1354885120002 s
    assert r["instance_tps"] == pytest.approx((12291114 + 78417) / 1763.1354885120002)
    assert r["output_tps"] == pytest.approx(44.4758786326626)
    # "time_to_first_token": "p50": 1676.3191095, "p99": 6915.946556320003 (ms)
    assert r["ttft_p50_ms"] == pytest.approx(1676.3191095)
    assert r["ttft_p99_ms"] == pytest.approx(6915.946556320003)
    # input_config.loadgen.concurrency 1, input_config.endpoint.model_names ["amd/Kimi-K2.5-MXFP4"]
    assert r["concurrency"] == 1 and r["model"] == "amd/Kimi-K2.5-MXFP4"
    # "active_prefill_throughput" avg 76281.1373599146 tokens/s
    assert r["prefill_tps"] == pytest.approx(76281.1373599146)
    # the GPU count (tp4) is in the folder name only, not in the file
    assert r["measured_tps_per_gpu"] is None and r["gpus_per_instance"] is None
    assert any("--gpus" in n for n in r["notes"])
    [r4] = actuals("aiperf/kimik2.5_mi355x_tp4_conc1_profile_export_aiperf.json", "--gpus", "4")
    assert r4["measured_tps_per_gpu"] == pytest.approx(r["instance_tps"] / 4)


def test_aiperf_csv():
    [r] = actuals("aiperf_csv/kimik2.5_mi355x_tp4_conc1_profile_export_aiperf.csv")
    # "Total Token Throughput (tokens/sec),7015.64", "Output Token Throughput (tokens/sec),44.48"
    assert r["instance_tps"] == 7015.64 and r["output_tps"] == 44.48
    # "Time to First Token (ms)": p50 1676.32, p99 6915.95
    assert (r["ttft_p50_ms"], r["ttft_p99_ms"]) == (1676.32, 6915.95)
    # "Benchmark Duration (sec),1763.14", "Request Count,84.00"
    assert r["duration_s"] == 1763.14 and r["requests"] == 84
    assert r["input_tokens"] == 12291114 and r["output_tokens"] == 78417
    assert r["measured_tps_per_gpu"] is None


def test_aiperf_json_old_schema():
    [r] = actuals("aiperf_old/qwen_concurrency1_profile_export_aiperf.json")
    # total_isl 6400, total_osl 12799, benchmark_duration 255.56017270100003 s
    assert r["instance_tps"] == pytest.approx((6400 + 12799) / 255.56017270100003)
    assert r["output_tps"] == pytest.approx(50.08213863971112)
    assert r["ttft_p50_ms"] == pytest.approx(30.668547999999998)
    assert r["ttft_p99_ms"] == pytest.approx(34.344268879999994)
    assert r["concurrency"] == 1 and r["model"] == "Qwen/Qwen3-0.6B"


def test_genai_perf_json():
    [r] = actuals("genai_perf/llama3-8b_nim_trtllm_conc1_profile_export_genai_perf.json")
    # output_token_throughput 86.44141069162954; request_throughput 1.4932838222478375 req/s
    # × input_sequence_length avg 200.0188679245283 tokens of input per request
    assert r["output_tps"] == pytest.approx(86.44141069162954)
    assert r["instance_tps"] == pytest.approx(86.44141069162954
                                              + 1.4932838222478375 * 200.0188679245283)
    assert r["ttft_p50_ms"] == pytest.approx(24.530877999999998)
    assert r["ttft_p99_ms"] == pytest.approx(26.267317079999998)
    # inter_token_latency p50 11.250686 ms; input_config: concurrency 1, model [meta/llama3-8b…]
    assert r["tps_per_user"] == pytest.approx(1000 / 11.250686)
    assert r["concurrency"] == 1 and r["model"] == "meta/llama3-8b-instruct"
    assert r["measured_tps_per_gpu"] is None


def test_genai_perf_csv():
    [r] = actuals("genai_perf_csv/llama3-8b_nim_trtllm_conc1_profile_export_genai_perf.csv")
    # "Time To First Token (ms)" p50 24.53, p99 26.27; "Output Token Throughput (per sec),86.44";
    # "Request Throughput (per sec),1.49" × "Input Sequence Length" avg 200.02
    assert (r["ttft_p50_ms"], r["ttft_p99_ms"]) == (24.53, 26.27)
    assert r["output_tps"] == 86.44
    assert r["instance_tps"] == pytest.approx(86.44 + 1.49 * 200.02)


def test_inferencex_row_with_speculative_decoding():
    [r] = actuals("inferencex/agg_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp"
                  "_conc4_MI355-gbt350-odcdh5-wbb3.json")
    # "tp": 8, "disagg": false: 8 GPUs; "tput_per_gpu": 55.62670336516291
    assert r["gpus_per_instance"] == 8
    assert r["measured_tps_per_gpu"] == pytest.approx(55.62670336516291)
    assert r["instance_tps"] == pytest.approx(8 * 55.62670336516291)
    assert r["output_tps"] == pytest.approx(8 * 27.678011491816765)
    # "median_ttft": 0.2969768075272441, "p99_ttft": 0.5859901384473777 (seconds)
    assert r["ttft_p50_ms"] == pytest.approx(296.9768075272441)
    assert r["ttft_p99_ms"] == pytest.approx(585.9901384473777)
    assert r["concurrency"] == 4 and r["model"] == "moonshotai/Kimi-K2.5"
    assert r["speculative"] == "mtp"      # "spec_decoding": "mtp"
    assert r["tps_per_user"] == pytest.approx(57.49142521935413)   # "median_intvty"


def test_inferencex_agentic_row():
    [r] = actuals("inferencex/glm5.1_tp2_conc8_mi355x_agentic_agg.json")
    # "tp": 2; "tput_per_gpu": 2939.612669598447 (= "total_tput_tps" 5879.225339196894 ÷ 2)
    assert r["gpus_per_instance"] == 2
    assert r["instance_tps"] == pytest.approx(5879.225339196894)
    assert r["duration_s"] == pytest.approx(1826.93898946)
    assert r["input_tokens"] == 10649375 and r["output_tokens"] == 91611
    # no median or p99 TTFT: "p95_ttft" 70.92152420354998 s is the highest, and is named
    assert r["ttft_p50_ms"] is None and r["ttft_p99_ms"] is None
    assert r["ttft_tail_stat"] == "p95"
    assert r["ttft_tail_ms"] == pytest.approx(70921.52420354998)
    assert any("p95 TTFT" in n for n in r["notes"])
    assert r["concurrency"] == 8 and r["model"] == "amd/GLM-5.1-MXFP4"
    assert r["cache_hit_rate"] is None    # "server_gpu_cache_hit_rate": null


def test_llmperf_summary():
    [r] = actuals("llmperf/fireworks_70b_summary.json")
    # results_mean_output_throughput_token_per_s 162.86950633872; 64.92561266104798 requests a
    # minute × results_number_input_tokens_mean 550 input tokens
    assert r["output_tps"] == pytest.approx(162.86950633872)
    assert r["instance_tps"] == pytest.approx(162.86950633872 + 64.92561266104798 / 60 * 550)
    assert r["ttft_p50_ms"] == pytest.approx(516.5989695000235)
    assert r["ttft_p99_ms"] == pytest.approx(951.4515243999448)
    assert r["concurrency"] == 5   # num_concurrent_requests
    assert r["model"] == "accounts/fireworks/models/llama-v2-70b-chat"
    assert r["tps_per_user"] == pytest.approx(1 / 0.024403158119206642)
    assert r["measured_tps_per_gpu"] is None


def test_mlperf_summary():
    [r] = actuals("mlperf/h200x8_llama2-70b_offline_mlperf_log_summary.txt")
    # "Tokens per second: 31302.7" (generated tokens); no GPU count in the summary
    assert r["output_tps"] == 31302.7 and r["instance_tps"] == 31302.7
    assert r["measured_tps_per_gpu"] is None
    assert any("output tokens only" in n for n in r["notes"])
    # the submission's system is 8 × H200: 31,302.7 ÷ 8 = 3,912.84, the table's row T17
    [r8] = actuals("mlperf/h200x8_llama2-70b_offline_mlperf_log_summary.txt", "--gpus", "8")
    assert r8["measured_tps_per_gpu"] == pytest.approx(3912.8375)


def test_sglang_jsonl_sweep():
    runs = actuals("sglang/llama_405b_online_output.jsonl")
    assert len(runs) == 6
    r = runs[0]
    # line 1: total_input_tokens 152612, total_output_tokens 160347, duration 317.54681650106795
    assert r["instance_tps"] == pytest.approx((152612 + 160347) / 317.54681650106795)
    assert r["output_tps"] == pytest.approx(504.95546378579655)
    assert r["ttft_p50_ms"] == pytest.approx(218.80842198152095) and r["ttft_p99_ms"] is None
    # driven by request rate 1.0: requests in flight by Little's law, 300 ÷ 317.5 s × 24.37 s
    assert r["concurrency"] == pytest.approx(300 / 317.54681650106795 * 24.370785914754182)


def test_trtllm_bench_log():
    [r] = actuals("trtllm_bench/llama3.1-70b_8xH100_tp8_result_256_128_20000.txt")
    # "Token Throughput (tokens/sec): 10269.1929" = 80.2281 req/s × 128 output tokens
    assert r["output_tps"] == 10269.1929
    assert r["instance_tps"] == pytest.approx(10269.1929 + 80.2281 * 256)
    # "TP Size: 8", "PP Size: 1": 8 GPUs, from the log itself
    assert r["gpus_per_instance"] == 8
    assert r["measured_tps_per_gpu"] == pytest.approx((10269.1929 + 80.2281 * 256) / 8)
    assert r["requests"] == 20000 and r["duration_s"] == pytest.approx(249.2893078)
    assert r["model"] == "meta-llama/Llama-3.1-70B-Instruct" and r["precision"] == "FP8"
    assert r["ttft_p50_ms"] is None


@pytest.mark.parametrize(("name", "tps", "p50", "p99", "conc"), [
    ("vllm/gptoss120b_disagg16_conc4.json", 918.4321435036439, 124.30587713606656,
     987.5254542799665, 4),
    ("vllm/gptoss120b_disagg16_conc64.json", 10005.210669241294, 176.69113306328654,
     685.4502430907452, 64),
])
def test_vllm_raw_results(name, tps, p50, p99, conc):
    [r] = actuals(name)
    assert r["instance_tps"] == pytest.approx(tps)     # "total_token_throughput"
    assert (r["ttft_p50_ms"], r["ttft_p99_ms"]) == (pytest.approx(p50), pytest.approx(p99))
    assert r["concurrency"] == conc                    # "max_concurrency"
    # "model_id" is a Hugging Face cache path: …/models--openai--gpt-oss-120b/snapshots/…
    assert r["model"] == "openai/gpt-oss-120b"
    # 8 prefill + 8 decode GPUs says the file's name only: no per-GPU figure
    assert r["measured_tps_per_gpu"] is None


def test_vllm_post_processed_result():
    [r] = actuals("vllm_derived/glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json")
    # total_input_tokens 40960, total_output_tokens 5120, duration 31.08160568587482
    assert r["instance_tps"] == pytest.approx((40960 + 5120) / 31.08160568587482)
    # "median_ttft": 0.26499967742711306 and "p99_ttft": 0.5848183088190854 in seconds
    assert r["ttft_p50_ms"] == pytest.approx(264.99967742711306)
    assert r["ttft_p99_ms"] == pytest.approx(584.8183088190854)
    assert r["concurrency"] == 4 and r["model"] == "zai-org/GLM-5-FP8"
    assert r["tps_per_user"] == pytest.approx(1 / 0.021372462615488082)   # "median_tpot" (s)


def test_a_file_of_no_known_format_lists_the_formats_read(tmp_path):
    odd = tmp_path / "results.txt"
    odd.write_text("throughput: 1234 tokens per second\n", encoding="utf-8")
    proc = command.run("actuals", str(odd), cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for fmt in ("GenAI-Perf", "AIPerf", "LLMPerf", "trtllm-bench", "MLPerf", "InferenceX",
                "vllm bench serve", "SGLang", "Prometheus"):
        assert fmt in proc.stderr
