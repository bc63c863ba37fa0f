"""The bound and the attainable figure of methodology section 5.1, worked by hand from the
catalogue's figures (config.json sizes, datasheet bandwidth and FLOPS) and the method's
constants (tokenfactory_xl/data/method.csv), and held against published measurements."""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from pathlib import Path

import pytest

from tests.tools import command
from tokenfactory_xl.core import serving as capacity
from tokenfactory_xl.core import specs
from tokenfactory_xl.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "fixtures" / "real" / "measurements.csv"
C = {name: c.value for name, c in specs.method_constants().items()}

# Llama-3.1-8B (config.json): 8,030,261,248 parameters, of which a 128,256 × 4,096 input
# embedding; 32 layers, 8 KV heads of 128, 32 query heads, hidden 4,096
L8_READ = 8_030_261_248 - 128_256 * 4096
L8_KV_PER_TOKEN = 2 * 32 * 8 * 128          # elements
H100_BW = 3.35e12


def test_bound_of_llama_8b_at_batch_1_is_the_spec_check_value():
    # bf16: 2 bytes per weight and per KV element; 1,100 tokens of context
    s = capacity.Setup.of("H100 SXM", "Llama-3.1-8B", "bf16")
    want = 1 / ((L8_READ * 2 + 1100 * L8_KV_PER_TOKEN * 2) / H100_BW)
    got = capacity.decode_tps_per_user(s, 1, 1100, "bound")
    assert got == pytest.approx(want)
    assert round(got, 1) == 221.1   # the spec's ≈ 220; NVIDIA NIM measured 212.8 (row A3)


def test_attainable_of_llama_8b_at_batch_1_by_hand():
    # weights at the full datasheet bandwidth, the KV cache at its share, 2 µs a layer
    s = capacity.Setup.of("H100 SXM", "Llama-3.1-8B", "bf16")
    step = (L8_READ * 2 / (H100_BW * C["weight_bandwidth_share"])
            + 1100 * L8_KV_PER_TOKEN * 2 / (H100_BW * C["kv_bandwidth_share"])
            + 32 * C["layer_overhead_s"])
    assert capacity.decode_tps_per_user(s, 1, 1100) == pytest.approx(1 / step)
    assert 212.8 < 1 / step < 221.1


def test_mla_latent_is_held_whole_by_every_tensor_parallel_rank():
    # DeepSeek-R1 on 8 × B200, FP4 routed experts, FP8 attention and the rest, BF16 KV;
    # batch 1: 8 experts in each of 58 MoE layers, 44,040,192 parameters each
    s = capacity.Setup.of("B200", "DeepSeek-R1", "fp4", 8, "ep", kv_precision="bf16")
    m = specs.model("DeepSeek-R1")
    dense = m.active_params - m.embedding_params - 8 * 58 * 44_040_192
    weights = (dense * 1 + 8 * 58 * 44_040_192 * 0.5) / 8
    kv = 2048 * 61 * 576 * 2              # every rank reads the whole latent of the sequence
    want = 1 / ((weights + kv) / 7.7e12)
    assert capacity.decode_tps_per_user(s, 1, 2048, "bound") == pytest.approx(want)
    # the same under attention data-parallel: the attention weights are read whole
    dep = capacity.Setup.of("B200", "DeepSeek-R1", "fp4", 8, "dep", kv_precision="bf16")
    attention = 11_413_422_080
    weights_dep = (attention + (dense - attention) / 8 + 8 * 58 * 44_040_192 * 0.5 / 8)
    kv_dep = 2048 * 61 * 576 * 2 / 8
    assert capacity.step(dep, 1, 2048, "bound").memory_s == pytest.approx(
        (weights_dep + kv_dep) / 7.7e12)


def test_defaults_under_4_bit_weights():
    s = capacity.Setup.of("B200", "DeepSeek-R1", "fp4")
    assert (s.precision, s.dense_precision, s.kv_precision) == ("fp4", "fp8", "fp8")
    dense_4bit = capacity.Setup.of("B200", "Llama-3.1-70B", "int4")
    assert (dense_4bit.dense_precision, dense_4bit.kv_precision) == ("int4", "fp8")
    # weight-only formats compute at their activation precision
    assert capacity.activation_tflops(specs.gpu("H100 SXM"), "fp4") == 989.5   # W4A16: BF16
    assert capacity.activation_tflops(specs.gpu("B200"), "fp4") == 9000
    assert capacity.activation_tflops(specs.gpu("B200"), "int4") == 2250


def test_a_release_with_weight_only_4_bit_experts_computes_them_at_its_activations():
    # gpt-oss's config.json keeps self_attn, router, embed_tokens and lm_head out of its MXFP4
    # quantisation (BF16), and its experts have no 4-bit activations: MXFP8 on Blackwell (the
    # FP8 rate), BF16 on Hopper
    b200 = capacity.Setup.of("B200", "gpt-oss-120b", "fp4", 2, "dep", kv_precision="fp8")
    assert (b200.dense_precision, b200.kv_precision, b200.expert_compute) == (
        "bf16", "fp8", "fp8")
    h100 = capacity.Setup.of("H100 SXM", "gpt-oss-120b", "fp4", 4, "dep")
    assert (h100.dense_precision, h100.kv_precision, h100.expert_compute) == (
        "bf16", "fp8", "bf16")
    # a checkpoint that quantises activations too keeps the FP4 peak
    assert capacity.Setup.of("B200", "Qwen3-30B-A3B", "fp4").expert_compute == "fp4"
    # the caller's dense precision wins over the release's
    assert capacity.Setup.of("B200", "gpt-oss-120b", "fp4",
                             dense_precision="fp8").dense_precision == "fp8"
    # bound prefill on B200 by hand (config.json figures): routed = 4 experts × 36 layers ×
    # 3 × 2,880 × 2,880 = 3,583,180,800; the rest = 5.13e9 active (model card, no input
    # embedding) − routed = 1,546,819,200 (attention, LM head, router), at the BF16 peak
    # (2,250 TFLOPS); the experts at the FP8 peak (4,500)
    seconds = 2 * 1_546_819_200 / 2250e12 + 2 * 3_583_180_800 / 4500e12
    assert capacity.prefill_tps_per_gpu(b200, 0, "bound") == pytest.approx(1 / seconds)


def test_speculative_tokens_come_from_the_catalogue_or_the_caller():
    # MTP: 1 + 0.85 + 0.85² + 0.85³ (DeepSeek-V3's acceptance over three draft tokens)
    assert capacity.speculative_tokens("MTP") == C["accepted_tokens_mtp"] == round(
        1 + 0.85 + 0.85**2 + 0.85**3, 1)
    assert capacity.speculative_tokens("none") == 1 and capacity.speculative_tokens("2.5") == 2.5
    s1 = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 8)
    s2 = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 8, speculative=2)
    # at batch 1 the step is memory bound: two accepted tokens a step double the user's rate
    assert capacity.decode_tps_per_user(s2, 1, 2048, "bound") == pytest.approx(
        2 * capacity.decode_tps_per_user(s1, 1, 2048, "bound"))
    with pytest.raises(InputError, match="at least 1 accepted token"):
        capacity.speculative_tokens("0.5")


def test_collectives_grow_with_the_group():
    one = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 1)
    two = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 2)
    eight = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 8)
    o1, o2, o8 = (capacity.step(s, 1, 1024).overhead_s for s in (one, two, eight))
    assert o1 == pytest.approx(80 * C["layer_overhead_s"])
    # 2 GPUs: 80 layers × 2 all-reduces × 10 µs, and 2 × 8,192 × 2 bytes per layer of traffic
    traffic = 1 * 8192 * 2 * 2 * (1 / 2) * 80 / (450e9 * C["link_efficiency"])
    assert o2 - o1 == pytest.approx(80 * 2 * C["collective_latency_s"] + traffic)
    assert o8 > o2


def test_memory_limits_say_by_how_much():
    s = capacity.Setup.of("H100 SXM", "Llama-3.1-405B", "fp8")
    with pytest.raises(InputError) as caught:
        capacity.max_batch(s, 4096)
    # 405.85 GB of FP8 weights on an 80 GB GPU
    text = str(caught.value)
    assert "does not fit in memory" in text and "405.9 GB per GPU" in text
    assert f"{405.853388800 - 80:,.1f} GB more than the 80.0 GB" in text
    # Llama-3.1-70B fits on one H200 (70.6 GB of 141), but not a 1M-token sequence beside it
    one = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8")
    with pytest.raises(InputError, match="the weights and one sequence of 1,000,000 tokens"):
        capacity.max_batch(one, 1_000_000)
    # the KV cache takes 90 % of the memory the weights leave (TensorRT-LLM's default)
    free = (141 - 70.553706496) * (1 - C["memory_reserve"])
    assert capacity.max_batch(one, 8192) == math.floor(free / (8192 * 2 * 80 * 8 * 128 / 1e9))
    fits = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 8)
    assert capacity.max_batch(fits, 4096) == C["batch_cap"]          # capped by the engine
    assert capacity.max_batch(fits, 4096, "bound") > C["batch_cap"]  # the bound is not


def test_unknown_names_name_the_nearest():
    with pytest.raises(InputError, match="did you mean H200"):
        capacity.Setup.of("H2000", "Llama-3.1-8B", "bf16")
    with pytest.raises(InputError, match="did you mean DeepSeek-R1"):
        capacity.Setup.of("H200", "DeepSeek-R2", "fp8")


def test_every_constant_used_is_in_the_catalogue_with_a_source():
    source = (ROOT / "tokenfactory_xl" / "core" / "serving.py").read_text(encoding="utf-8")
    used = set(re.findall(r'_c\("([a-z0-9_]+)"\)', source))
    used |= {v for v in capacity.SPECULATIVE.values() if v}
    constants = specs.method_constants()
    assert used <= set(constants)
    for c in constants.values():
        assert c.unit and c.what and len(c.source) > 40, c.name
        assert c.figure in ("attainable", "both")


# -- the shared measurements table -----------------------------------------------------------
def check(*args: str):
    return command.run("theoretical", "--check", str(TABLE), *args, cwd=ROOT)


def test_the_check_holds_every_row_under_its_bound_and_attainable_figure():
    proc = check("--json")
    assert proc.returncode == 0, proc.stderr
    got = {r["id"]: r for r in json.loads(proc.stdout)}
    rows = list(csv.DictReader(TABLE.open(encoding="utf-8")))
    assert set(got) == {r["id"] for r in rows}
    for row in rows:
        g = got[row["id"]]
        assert g["measured"] == float(row["measured"])
        assert g["measured"] <= g["bound"] and g["measured"] <= g["attainable"] <= g["bound"]
        assert g["measured_over_attainable"] == pytest.approx(g["measured"] / g["attainable"])
        if row["speculative"] == "none":
            assert g["measured_over_attainable"] >= 0.15, row["id"]
    vendor = [got[r["id"]]["measured_over_attainable"] for r in rows
              if r["speculative"] == "none" and re.search("TRT-LLM|NIM", r["engine"])]
    # most vendor-tuned results reach half the attainable figure (TensorRT-LLM's gpt-oss-120b
    # on H100 does not: see the README's capacity section)
    assert statistics.median(vendor) > 0.65
    assert sum(v >= 0.5 for v in vendor) >= len(vendor) - 1


def test_a_row_that_names_another_format_than_the_release_says_so():
    # gpt-oss ships MXFP4 experts (config.json quantization_config): a row written fp8 is
    # computed for fp8 experts as given, and its notes say it is not the release's run; on
    # Hopper (no FP4 tensor cores) they say how the engines run the release instead
    row = {"id": "X", "metric": "max output tokens/s per GPU", "measured": "4715",
           "gpu": "H100 SXM", "model": "gpt-oss-120b", "precision": "fp8", "gpus": "4",
           "parallel": "DEP4", "isl": "1024", "osl": "1024"}
    checked = capacity.check_row(row)
    assert checked["setup"].startswith("4 × H100 SXM, dep, fp8 weights")
    (note,) = [n for n in checked["notes"] if "ships its experts" in n]
    assert "the figures are for fp8 experts" in note and "W4A16 at the BF16 rate" in note
    blackwell = capacity.check_row({**row, "gpu": "B200"})
    (note,) = [n for n in blackwell["notes"] if "ships its experts" in n]
    assert "W4A16" not in note     # B200 computes 4-bit: nothing to say of Hopper's way
    as_shipped = capacity.check_row({**row, "precision": "fp4"})
    assert not [n for n in as_shipped["notes"] if "ships its experts" in n]
    dense = capacity.check_row({**row, "model": "Llama-3.1-8B", "parallel": "TP1",
                                "gpus": "1"})
    assert not [n for n in dense["notes"] if "ships its experts" in n]


def test_the_check_row_of_the_spec_check_value_by_hand():
    proc = check("--json")
    a3 = next(r for r in json.loads(proc.stdout) if r["id"] == "A3")
    # context 1,100: the bound of the first test
    assert a3["bound"] == pytest.approx(1 / ((L8_READ * 2 + 1100 * L8_KV_PER_TOKEN * 2)
                                             / H100_BW))


def test_the_readme_shows_the_check_table_as_printed():
    proc = check()
    assert proc.returncode == 0, proc.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert proc.stdout.strip() in readme


def test_a_bad_table_is_one_clear_line(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("id,metric,measured,gpu,model,precision,gpus\nX,tokens,1,H200,"
                   "Llama-3.1-8B,fp8,1\n", encoding="utf-8")
    proc = command.run("theoretical", "--check", str(bad), cwd=ROOT)
    assert proc.returncode == 2 and "metric=tokens" in proc.stderr
    assert "decode tokens/s per user" in proc.stderr and "Traceback" not in proc.stderr
    bad.write_text("id,metric,measured,gpu,model,precision,gpus\nX,decode tokens/s per user,1,"
                   "H2000,Llama-3.1-8B,fp8,1\n", encoding="utf-8")
    proc = command.run("theoretical", "--check", str(bad), cwd=ROOT)
    assert proc.returncode == 2 and f"{bad} row 2: gpu=H2000" in proc.stderr
    assert "did you mean H200" in proc.stderr
    bad.write_text("id,metric\n", encoding="utf-8")
    proc = command.run("theoretical", "--check", str(bad), cwd=ROOT)
    assert proc.returncode == 2 and "has no rows" in proc.stderr


def test_a_row_that_cannot_be_computed_keeps_the_others(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text(
        "id,metric,measured,gpu,model,precision,gpus,parallel,concurrency,context,isl,osl\n"
        "X,decode tokens/s per user,1,H100 PCIe,Llama-3.1-8B,fp8,1,TP1,1,1000,,\n"
        "Y,decode tokens/s per user,20,H200,Llama-3.1-8B,fp8,,TP1,4096,,1000,200\n",
        encoding="utf-8")
    proc = command.run("theoretical", "--check", str(table), "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    x, y = json.loads(proc.stdout)
    assert x["bound"] is None and x["verdict"].startswith("not computed: ")
    assert "gpu='H100 PCIe': is not in the gpu catalogue" in x["verdict"]
    # Y: no gpus cell (TP1 says one), no context (1,000 + 200 ÷ 2), and 4,096 users: the
    # attainable batch is the engine's cap, the others wait
    s = capacity.Setup.of("H200", "Llama-3.1-8B", "fp8")
    assert y["attainable"] == pytest.approx(capacity.decode_tps_per_user(s, C["batch_cap"],
                                                                         1100))
    assert any("1,024 of the 4,096 users" in n for n in y["notes"])


def test_max_output_throughput_includes_prefill():
    s = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8")
    short, _ = capacity.max_output_tps_per_gpu(s, 128, 2048)
    long_prompt, _ = capacity.max_output_tps_per_gpu(s, 2048, 128)
    assert long_prompt < short          # 16 prompt tokens of arithmetic per output token
    for isl, osl in ((128, 2048), (1024, 1024)):
        value, batch = capacity.max_output_tps_per_gpu(s, isl, osl)
        assert 1 <= batch <= C["batch_cap"] and math.isfinite(value)


def test_the_readme_lists_every_constant_as_the_catalogue_has_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for c in specs.method_constants().values():
        raw = next(r for r in csv.DictReader((ROOT / "tokenfactory_xl" / "data" / "method.csv")
                                              .open(encoding="utf-8")) if r["name"] == c.name)
        assert f"| `{c.name}` | {raw['value']} {c.unit} | {c.what} | {c.source} |" in readme
