"""The capacity Excel functions: THEORETICAL_TPS, MAX_BATCH, GPU_SPEC, MODEL_SPEC.

Called as xlwings calls them (ranges as lists of rows) and checked against the hand
computation of TFOM-SPEC section 5 in ``test_roofline`` and against the catalogue CSVs.
"""

from __future__ import annotations

import itertools

import pytest

from tests.specs.test_roofline import GPUS, MODELS, hand_max_batch, hand_tps
from tokenfactory_xl import udfs
from tokenfactory_xl.udfs import GPU_SPEC, MAX_BATCH, MODEL_SPEC, THEORETICAL_TPS, ArgumentError

PAIRS = list(itertools.product(GPUS, MODELS))


def message(function, *args) -> str:
    with pytest.raises(ArgumentError) as err:
        function(*args)
    return str(err.value)


@pytest.mark.parametrize(("gpu", "m"), PAIRS, ids=[f"{g['name']}-{m['name']}" for g, m in PAIRS])
def test_theoretical_tps_for_every_gpu_and_model(gpu, m):
    for precision, batch, context, n in (("bf16", 1, 2048, 8), ("fp8", 16, 8192, 8),
                                         ("int4", 4, 1024, 2)):
        got = THEORETICAL_TPS(gpu["name"], m["name"], precision, batch, context, n)
        if batch <= hand_max_batch(gpu, m, precision, context, n):
            assert got == pytest.approx(hand_tps(gpu, m, precision, batch, context, n), rel=1e-12)
        else:
            assert got == "#NUM!"


def test_efficiency_factors_and_defaults():
    gpu, m = GPUS[1], MODELS[1]
    expected = hand_tps(gpu, m, "fp8", 64, 4096, 8, mbu=0.8, mfu=0.5)
    assert THEORETICAL_TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, 0.8, 0.5) == \
        pytest.approx(expected)
    assert THEORETICAL_TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, "80%", "50%") == \
        pytest.approx(expected)
    # empty optional cells take the defaults: one GPU, MBU and MFU 100 %
    assert THEORETICAL_TPS("h200", "LLAMA-3.1-8B", "BF16", 1, 1024, None, None, None) == \
        pytest.approx(hand_tps(gpu, MODELS[0], "bf16", 1, 1024, 1))


def test_ranges_broadcast_and_keep_empty_cells():
    got = THEORETICAL_TPS([["H200"], [None], ["B200"]], "Llama-3.1-70B", "fp8", [[1, 64]], 4096, 8)
    assert got[1] == [None, None]
    for row, gpu in ((0, GPUS[1]), (2, GPUS[2])):
        for col, batch in enumerate((1, 64)):
            assert got[row][col] == pytest.approx(hand_tps(gpu, MODELS[1], "fp8", batch, 4096, 8))
    models = MAX_BATCH("H200", [["Llama-3.1-8B"], ["DeepSeek-V3"]], "fp8", 4096, 8)
    assert models == [[hand_max_batch(GPUS[1], MODELS[0], "fp8", 4096, 8)],
                      [hand_max_batch(GPUS[1], MODELS[4], "fp8", 4096, 8)]]


@pytest.mark.parametrize(("gpu", "m"), PAIRS[::2], ids=[f"{g['name']}-{m['name']}"
                                                         for g, m in PAIRS[::2]])
def test_max_batch_by_hand(gpu, m):
    for precision, context, n in (("bf16", 4096, 1), ("fp8", 32768, 8)):
        assert MAX_BATCH(gpu["name"], m["name"], precision, context, n) == hand_max_batch(
            gpu, m, precision, context, n)
    assert MAX_BATCH(gpu["name"], m["name"], "fp8", 4096) == hand_max_batch(gpu, m, "fp8",
                                                                             4096, 1)


@pytest.mark.parametrize("row", GPUS, ids=lambda r: r["name"])
def test_gpu_spec_reads_the_catalogue(row):
    for field in ("hbm_gb", "bandwidth_tbps", "bf16_tflops", "fp8_tflops", "power_w"):
        assert GPU_SPEC(row["name"].lower(), field.upper()) == float(row[field])
    assert GPU_SPEC(row["name"], "fp4_tflops") == (float(row["fp4_tflops"]) if row["fp4_tflops"]
                                                   else "#N/A")
    assert GPU_SPEC(row["name"], "vendor") == row["vendor"]


@pytest.mark.parametrize("row", MODELS, ids=lambda r: r["name"])
def test_model_spec_reads_the_catalogue(row):
    for field in ("total_params", "active_params", "layers", "kv_heads", "head_dim"):
        assert MODEL_SPEC(row["name"], field) == float(row[field])
    latent = MODEL_SPEC(row["name"], "kv_latent_dim")
    assert latent == (float(row["kv_latent_dim"]) if row["kv_latent_dim"] else "#N/A")
    assert MODEL_SPEC(row["name"], "source") == row["source"]


def test_spec_ranges():
    assert GPU_SPEC([["H200", "B200"]], [["hbm_gb"], ["vendor"]]) == [[141.0, 180.0],
                                                                    ["NVIDIA", "NVIDIA"]]
    assert MODEL_SPEC([["DeepSeek-V3"], [None]], "layers") == [[61.0], [None]]


def test_unknown_names_list_close_matches():
    assert message(THEORETICAL_TPS, "H201", "Llama-3.1-70B", "fp8", 1, 1024) == (
        "gpu=H201: is not in the gpu catalogue; did you mean H20 or H200 or B200?")
    assert "did you mean Llama-3.1-70B" in message(MAX_BATCH, "H200", "Llama-3.1-07B", "fp8",
                                                   1024)
    assert message(THEORETICAL_TPS, [["H200"], ["H2"]], "Llama-3.1-70B", "fp8", 1, 1).startswith(
        "row 2 of gpu: gpu=H2: is not in the gpu catalogue")
    assert message(GPU_SPEC, "H200", "bandwith_tbps").startswith(
        "field=bandwith_tbps: is not a field; did you mean bandwidth_tbps")
    assert "did you mean layers" in message(MODEL_SPEC, "DeepSeek-V3", "layer")


def test_bad_arguments():
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp12", 1, 1) == (
        "precision=fp12: must be one of fp16, bf16, fp8, int8, fp4, int4; did you mean fp16?")
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp8", 1, 1, 1, 80) == (
        "mbu=80: looks like a percentage; enter 80% or 0.8")
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp8", 0, 1).startswith("batch=0")
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp8", 1.5, 1).startswith(
        "batch=1.5")
    assert message(MAX_BATCH, 5, "Llama-3.1-70B", "fp8", 1).startswith(
        "gpu=5: is not in the gpu catalogue")


def test_classic_excel_shows_the_message_as_the_cells_text(monkeypatch):
    monkeypatch.setattr(udfs, "runtime", lambda: "classic")
    assert GPU_SPEC("H201", "hbm_gb").startswith("gpu=H201: is not in the gpu catalogue")
