"""The roofline of methodology section 5 against a hand computation from the catalogue CSVs."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from tokenfactory_xl.core import roofline, specs
from tokenfactory_xl.core.errors import InputError

DATA = Path(specs.__file__).parents[1] / "data"


def table(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


GPUS, MODELS = table("gpus.csv"), table("models.csv")
BYTES = {"fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5, "int4": 0.5}


def hand_peak(gpu: dict[str, str], precision: str) -> float:
    """FLOP/s at a precision, read straight from the CSV row."""
    if precision in ("fp16", "bf16"):
        return float(gpu["bf16_tflops"]) * 1e12
    if precision in ("fp4", "int4") and gpu["fp4_tflops"]:
        return float(gpu["fp4_tflops"]) * 1e12
    return float(gpu["fp8_tflops"]) * 1e12


def hand_kv_per_sequence(m: dict[str, str], context: int, kv_bytes: float) -> float:
    layers = int(m["layers"])
    if m["kv_latent_dim"]:
        per_layer_token = int(m["kv_latent_dim"]) * kv_bytes            # one MLA latent
    else:
        per_layer_token = 2 * int(m["kv_heads"]) * int(m["head_dim"]) * kv_bytes
    sliding = int(m["sliding_window_layers"] or 0) if m["sliding_window"] else 0
    window = int(m["sliding_window"]) if m["sliding_window"] else context
    return per_layer_token * ((layers - sliding) * context + sliding * min(context, window))


def hand_max_batch(gpu, m, precision, context, n, kv_precision=None) -> int:
    free = float(gpu["hbm_gb"]) * 1e9 * n - float(m["total_params"]) * BYTES[precision]
    kv = hand_kv_per_sequence(m, context, BYTES[kv_precision or precision])
    return max(0, math.floor(free / kv))


def _num(m: dict[str, str], column: str) -> float:
    return float(m[column]) if m.get(column) else 0.0


def hand_weights_read(m: dict[str, str], batch: int) -> float:
    """Section 5 v2 by hand: parameters a step reads (embedding rows, LM head, experts touched)."""
    active, embedding = float(m["active_params"]), _num(m, "embedding_params")
    experts, k = _num(m, "experts"), _num(m, "experts_per_token")
    layers, p = _num(m, "moe_layers"), _num(m, "expert_params")
    touched = experts * (1 - (1 - k / experts) ** batch) if experts else 0.0
    return active - embedding - k * layers * p + batch * _num(m, "hidden_size") \
        + layers * touched * p


def hand_attention(m: dict[str, str], context: float) -> float:
    """Attention FLOPs per token by hand: MHA/GQA 4·L·H·d·n, MLA 2·L·H·n·(2·latent + rope)."""
    layers = int(m["layers"])
    heads = int(m["query_heads"] or m["kv_heads"])
    sliding = int(m["sliding_window_layers"] or 0) if m["sliding_window"] else 0
    window = int(m["sliding_window"]) if m["sliding_window"] else context
    token_layers = (layers - sliding) * context + sliding * min(context, window)
    if m["kv_latent_dim"]:
        rope = _num(m, "rope_dim")
        latent = int(m["kv_latent_dim"]) - rope
        return 2 * heads * token_layers * (2 * latent + rope)
    return 4 * heads * int(m["head_dim"]) * token_layers


def hand_prefill(gpu: dict[str, str], m: dict[str, str], precision: str, prompt: int = 0,
                 mfu: float = 1.0) -> float:
    dense_flops = 2 * (float(m["active_params"]) - _num(m, "embedding_params"))
    return hand_peak(gpu, precision) * mfu / (dense_flops + hand_attention(m, prompt / 2))


def hand_tps(gpu, m, precision, batch, context, n, mbu=1.0, mfu=1.0, kv_precision=None):
    """Section 5 by hand: B ÷ max(bytes ÷ (n·bw·MBU), FLOPs ÷ (n·peak·MFU)) ÷ n."""
    active = float(m["active_params"])
    moved = hand_weights_read(m, batch) * BYTES[precision] + batch * hand_kv_per_sequence(
        m, context, BYTES[kv_precision or precision])
    flops = batch * (2 * (active - _num(m, "embedding_params")) + hand_attention(m, context))
    seconds = max(moved / (n * float(gpu["bandwidth_tbps"]) * 1e12 * mbu),
                  flops / (n * hand_peak(gpu, precision) * mfu))
    return batch / seconds / n


CASES = list(itertools.product(
    GPUS, MODELS, [("bf16", 1, 1024, 1), ("fp8", 32, 4096, 8), ("fp4", 256, 2048, 8),
                   ("int8", 8, 32768, 4)]))


@pytest.mark.parametrize(("gpu", "m", "case"), CASES,
                         ids=[f"{g['name']}-{m['name']}-{c[0]}" for g, m, c in CASES])
def test_theoretical_tps_agrees_with_a_hand_computation(gpu, m, case):
    precision, batch, context, n = case
    got = roofline.theoretical_tps(gpu["name"], m["name"], precision, batch, context, n)
    if batch > hand_max_batch(gpu, m, precision, context, n):
        assert math.isnan(got)
        unchecked = roofline.theoretical_tps(gpu["name"], m["name"], precision, batch, context,
                                             n, check_memory=False)
        assert unchecked == pytest.approx(hand_tps(gpu, m, precision, batch, context, n),
                                          rel=1e-12)
    else:
        assert got == pytest.approx(hand_tps(gpu, m, precision, batch, context, n), rel=1e-12)


def test_every_combination_fits_somewhere():
    # the cases above exercise both regimes: fitting and not fitting, memory and compute bound
    fits = [c for c in CASES if c[2][1] <= hand_max_batch(c[0], c[1], c[2][0], c[2][2],
                                                          c[2][3])]
    assert 0 < len(fits) < len(CASES)


def test_a_worked_example():
    # Llama-3.1-70B, FP8, 8 × H200, batch 64, 4,096 tokens:
    # weights read = 70,553,706,496 − 1,050,673,152 (128,256 × 8,192 embedding) + 64 × 8,192
    # bytes = 69.503e9 + 64 × 4096 × 163,840 = 112.45e9; memory 112.45e9 / 38.4e12 = 2.928 ms
    # FLOPs = 64 × (2 × 69.503e9 + 4 × 80 × 64 × 128 × 4096) = 9.57e12; compute 0.605 ms
    tps = roofline.theoretical_tps("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8)
    bytes_ = 70_553_706_496 - 128_256 * 8192 + 64 * 8192 + 64 * 4096 * (2 * 80 * 8 * 128)
    assert tps == pytest.approx(64 / (bytes_ / (8 * 4.8e12)) / 8)
    assert round(tps) == 2732


def test_spec_check_value_llama_8b_stays_above_the_published_measurement():
    # methodology section 5: H100 SXM, bf16, B = 1, context 1,100: ≈ 220 and above NVIDIA NIM's
    # measured 212.8 tokens/s (ITL 4.70 ms, Llama-3-8B, concurrency 1, ISL 1,000 / OSL 200).
    # (8,030,261,248 − 525,336,576 + 4,096) × 2 bytes + 131,072 × 1,100 bytes of KV cache
    # = 15,154,036,736 bytes at 3.35 TB/s: 4.5236 ms a token.
    tps = roofline.theoretical_tps("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1100)
    assert tps == pytest.approx(3.35e12 / 15_154_036_736, rel=1e-12)
    assert round(tps, 1) == 221.1
    assert tps > 212.8


def test_spec_check_value_deepseek_v3_on_eight_h200():
    # methodology section 5: DeepSeek-V3, 8 × H200, fp8, B = 256, context 4,096: ≈ 1,740.
    # touched = 256 × (1 − (1 − 8/256)^256) = 255.92 of 256 experts in each of 58 MoE layers;
    # weights read = 37e9 − 926.7e6 − 8 × 58 × 44.04e6 + 256 × 7,168 + 58 × 255.92 × 44.04e6
    # = 669.36e9 bytes at fp8; KV 256 × 61 × 576 × 4,096 = 36.84e9 bytes; ÷ 38.4 TB/s = 18.39 ms
    touched = 256 * (1 - (1 - 8 / 256) ** 256)
    expert = 3 * 7168 * 2048
    weights = 37e9 - 129_280 * 7168 - 8 * 58 * expert + 256 * 7168 + 58 * touched * expert
    step = (weights + 256 * 61 * 576 * 4096) / (8 * 4.8e12)
    tps = roofline.theoretical_tps("H200", "DeepSeek-V3", "fp8", 256, 4096, 8)
    assert tps == pytest.approx(256 / step / 8, rel=1e-12)
    assert round(tps) == 1740
    # version 1 read only the 37 B active parameters: about ten times as many tokens
    v1 = 256 / ((37e9 + 256 * 61 * 576 * 4096) / (8 * 4.8e12)) / 8
    assert 9 < v1 / tps < 11
    # the attention of the absorbed MLA at 4,096 tokens: 2 × 61 × 128 × 4,096 × (2 × 512 + 64)
    assert roofline.attention_flops_for(specs.model("DeepSeek-V3"), 4096) == \
        2 * 61 * 128 * 4096 * 1088 == pytest.approx(69.6e9, rel=1e-3)


def test_experts_touched():
    assert roofline.experts_touched(256, 8, 1) == pytest.approx(8)         # batch 1: k
    assert roofline.experts_touched(256, 8, 256) == pytest.approx(255.92, abs=0.01)
    assert roofline.experts_touched(128, 8, 256) == pytest.approx(128, abs=1e-4)  # Qwen3-235B
    assert roofline.experts_touched(0, 0, 64) == 0                         # dense
    # two tokens, top-1 of 2 experts: both land on one expert half the time → 1.5 expected
    assert roofline.experts_touched(2, 1, 2) == 1.5


def test_moe_bounds_are_physically_plausible():
    # a step at large batch reads close to all the weights: never less than the active ones,
    # never more than the total plus embedding rows; tokens per GPU fall as the batch touches
    # more experts per token produced only sub-linearly
    for m in specs.load_models().values():
        if m.kind != "moe":
            continue
        for batch in (1, 8, 64, 256, 1024):
            read = roofline.weights_read_per_step(
                m.active_params, batch, m.embedding_params, m.hidden_size, m.moe_layers,
                m.experts, m.experts_per_token, m.expert_params)
            assert m.active_params - m.embedding_params < read <= m.total_params + batch * \
                m.hidden_size, (m.name, batch)
        big = roofline.weights_read_per_step(
            m.active_params, 4096, m.embedding_params, m.hidden_size, m.moe_layers, m.experts,
            m.experts_per_token, m.expert_params)
        assert big / m.total_params > 0.9, m.name   # nearly every expert at batch 4,096


def test_efficiency_factors_scale_the_right_term():
    memory_bound = dict(gpu_name="H100 SXM", model_name="Llama-3.1-8B", precision="bf16",
                        batch=1, context_tokens=1000)
    full = roofline.theoretical_tps(**memory_bound)
    assert roofline.theoretical_tps(**memory_bound, mbu=0.8) == pytest.approx(0.8 * full)
    assert roofline.theoretical_tps(**memory_bound, mfu=0.5) == pytest.approx(full)
    compute_bound = dict(gpu_name="H100 SXM", model_name="Llama-3.1-8B", precision="fp8",
                         batch=4096, context_tokens=1, check_memory=False)
    peak = roofline.theoretical_tps(**compute_bound)
    # context 1: 2 × (8,030,261,248 − 525,336,576) + 4 × 32 × 32 × 128 × 1 FLOPs a token
    assert peak == pytest.approx(1979e12 / (2 * 7_504_924_672 + 4 * 32 * 32 * 128))
    assert roofline.theoretical_tps(**compute_bound, mfu=0.5) == pytest.approx(0.5 * peak)


def test_tensor_parallel_gpus_share_the_work():
    # memory bound: n GPUs have n × the bandwidth and make n × the tokens: the same per GPU
    one = roofline.theoretical_tps("H200", "Llama-3.1-70B", "bf16", 1, 2048, 2)
    four = roofline.theoretical_tps("H200", "Llama-3.1-70B", "bf16", 1, 2048, 4)
    assert one == pytest.approx(four)
    # ... but only the larger replica fits a bigger batch
    assert roofline.max_batch_for("H200", "Llama-3.1-70B", "bf16", 2048, 1) < \
        roofline.max_batch_for("H200", "Llama-3.1-70B", "bf16", 2048, 4)


@pytest.mark.parametrize(("gpu", "m"), list(itertools.product(GPUS, MODELS))[::3],
                         ids=lambda x: x["name"])
@pytest.mark.parametrize("precision", ["bf16", "fp8", "int4"])
def test_max_batch_agrees_with_a_hand_computation(gpu, m, precision):
    for context, n in ((4096, 1), (131072, 8)):
        got = roofline.max_batch_for(gpu["name"], m["name"], precision, context, n)
        assert got == hand_max_batch(gpu, m, precision, context, n)


def test_max_batch_is_zero_when_the_weights_do_not_fit():
    assert roofline.max_batch_for("L40S", "Llama-3.1-405B", "bf16", 1024) == 0
    assert math.isnan(roofline.theoretical_tps("L40S", "Llama-3.1-405B", "bf16", 1, 1024))


def test_precision_sets_bytes_flops_and_kv():
    assert [roofline.bytes_per_element(p) for p in roofline.PRECISIONS] == [2, 2, 1, 1, .5, .5]
    assert roofline.peak_tflops("B200", "fp4") == 9000 and roofline.peak_tflops("B200",
                                                                                 "int4") == 9000
    assert roofline.peak_tflops("H200", "fp4") == 1979       # no FP4 on Hopper: FP8 instead
    assert roofline.peak_tflops("H200", "INT8") == 1979
    assert roofline.peak_tflops("MI300X", "fp16") == 1307.4
    # an FP8 KV cache on BF16 weights halves the cache, not the weights
    both = hand_max_batch(GPUS[1], MODELS[1], "bf16", 8192, 2)
    fp8_kv = roofline.max_batch_for("H200", "Llama-3.1-70B", "bf16", 8192, 2,
                                    kv_precision="fp8")
    assert fp8_kv == hand_max_batch(GPUS[1], MODELS[1], "bf16", 8192, 2, "fp8")
    assert fp8_kv == 2 * both or fp8_kv == 2 * both + 1
    tps = roofline.theoretical_tps("H200", "Llama-3.1-70B", "bf16", 8, 8192, 2,
                                   kv_precision="fp8")
    assert tps == pytest.approx(hand_tps(GPUS[1], MODELS[1], "bf16", 8, 8192, 2,
                                         kv_precision="fp8"))
    with pytest.raises(InputError) as err:
        roofline.theoretical_tps("H200", "Llama-3.1-70B", "fp12", 1, 1)
    assert "fp12" in str(err.value) and "fp16, bf16, fp8, int8, fp4, int4" in str(err.value)


def test_mla_and_sliding_windows_shrink_the_kv_cache():
    ds = specs.model("DeepSeek-V3")
    per_token = roofline.kv_bytes_per_token(ds.layers, ds.kv_heads, ds.head_dim, 1,
                                            ds.kv_latent_dim)
    assert per_token == 61 * 576                       # not 2 × 61 × 128 × 128
    assert roofline.kv_bytes_per_sequence(1000, 4096, 0.5, 128) == 1000 * (2048 + 64)


def test_arrays_broadcast():
    got = roofline.theoretical_tps("H200", "Llama-3.1-8B", "bf16", np.array([1, 8, 64]),
                                   np.array([[1024], [8192]]))
    assert got.shape == (2, 3)
    for i, context in enumerate((1024, 8192)):
        for j, batch in enumerate((1, 8, 64)):
            assert got[i, j] == pytest.approx(hand_tps(GPUS[1], MODELS[0], "bf16", batch,
                                                       context, 1))
    assert roofline.max_batch_for("H200", "Llama-3.1-8B", "fp8", [1024, 2048]).shape == (2,)
    assert isinstance(roofline.theoretical_tps("H200", "Llama-3.1-8B", "bf16", 1, 1), float)


def test_spec_formulas_on_numbers():
    assert roofline.bytes_per_step(10, 2, 3, 5) == 35
    assert roofline.flops_per_step(10, 3) == 60
    assert roofline.flops_per_step(10, 3, embedding_params=4, attention_flops_per_token=1) == 39
    # dense: 100 active − 20 embedding + 3 rows of 2 = 86; MoE: 2 layers of 4 experts, top-1,
    # 5 params each, batch 2: touched 4 × (1 − 0.75²) = 1.75 → 100 − 20 − 10 + 4 + 17.5
    assert roofline.weights_read_per_step(100, 3, 20, 2) == 86
    assert roofline.weights_read_per_step(100, 2, 20, 2, 2, 4, 1, 5) == pytest.approx(91.5)
    assert roofline.attention_flops_per_token(2, 4, 8, 100) == 4 * 2 * 4 * 8 * 100
    assert roofline.attention_flops_per_token(2, 4, 8, 100, 10, 2) == 2 * 2 * 4 * 100 * 22
    assert roofline.attention_flops_per_token(2, 4, 8, 100, sliding_share=0.5,
                                              sliding_window=10) == 4 * 4 * 8 * (100 + 10)
    assert roofline.prefill_tps_per_gpu(1e15, 5e9, 0.5, 1e9, 2e9) == 5e14 / 10e9
    assert roofline.step_time(100, 1000, 10, 100, 0.5, 1.0) == 20
    assert roofline.decode_tps_per_gpu(8, 0.01, 4) == 200
    assert roofline.prefill_tps_per_gpu(1e15, 5e9, 0.5) == 5e4
    assert roofline.max_batch(100, 2, 50, 30) == 5
    # half prompt tokens at 1,000/s, half output at 100/s: 2 / (1/1000 + 1/100) tokens/s
    assert roofline.blended_tps(1000, 100, 0.5) == pytest.approx(1 / (0.5 / 1000 + 0.5 / 100))


@pytest.mark.parametrize(("name", "value", "message"), [
    ("batch", 0, "whole number of at least 1"), ("batch", 2.5, "whole number"),
    ("context_tokens", -1, "whole number"), ("gpus_per_replica", 0, "whole number"),
    ("mbu", 80, "enter 80% or 0.8"), ("mfu", 0, "fraction above 0"),
])
def test_bad_arguments_are_named(name, value, message):
    args = dict(gpu_name="H200", model_name="Llama-3.1-8B", precision="bf16", batch=1,
                context_tokens=1)
    args[name] = value
    with pytest.raises(InputError) as err:
        roofline.theoretical_tps(**args)
    assert name in str(err.value) and message in str(err.value)
