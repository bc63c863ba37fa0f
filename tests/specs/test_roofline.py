"""The roofline of TFOM-SPEC section 5 against a hand computation from the catalogue CSVs."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from tokenfactory_xl import roofline, specs
from tokenfactory_xl.errors import InputError

DATA = Path(specs.__file__).parent / "data"


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


def hand_tps(gpu, m, precision, batch, context, n, mbu=1.0, mfu=1.0, kv_precision=None):
    """Section 5 by hand: B ÷ max(bytes ÷ (n·bw·MBU), FLOPs ÷ (n·peak·MFU)) ÷ n."""
    active = float(m["active_params"])
    moved = active * BYTES[precision] + batch * hand_kv_per_sequence(
        m, context, BYTES[kv_precision or precision])
    flops = 2 * active * batch
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
    # bytes = 70.55e9 + 64 × 4096 × 163,840 = 113.5e9; FLOPs = 9.03e12
    # memory 113.5e9 / 38.4e12 = 2.956 ms > compute 9.03e12 / 15.83e15 = 0.570 ms
    tps = roofline.theoretical_tps("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8)
    bytes_ = 70_553_706_496 + 64 * 4096 * (2 * 80 * 8 * 128)
    assert tps == pytest.approx(64 / (bytes_ / (8 * 4.8e12)) / 8)
    assert round(tps) == 2707


def test_efficiency_factors_scale_the_right_term():
    memory_bound = dict(gpu_name="H100 SXM", model_name="Llama-3.1-8B", precision="bf16",
                        batch=1, context_tokens=1000)
    full = roofline.theoretical_tps(**memory_bound)
    assert roofline.theoretical_tps(**memory_bound, mbu=0.8) == pytest.approx(0.8 * full)
    assert roofline.theoretical_tps(**memory_bound, mfu=0.5) == pytest.approx(full)
    compute_bound = dict(gpu_name="H100 SXM", model_name="Llama-3.1-8B", precision="fp8",
                         batch=4096, context_tokens=1, check_memory=False)
    peak = roofline.theoretical_tps(**compute_bound)
    assert peak == pytest.approx(1979e12 / (2 * 8_030_261_248))  # = prefill bound
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
