"""The capacity Excel functions: THEORETICAL_TPS, MAX_BATCH, GPU_SPEC, MODEL_SPEC.

Called as xlwings calls them (ranges as lists of rows) and checked against the hand
computation of methodology section 5 in ``test_roofline`` and against the catalogue CSVs.
"""

from __future__ import annotations

import itertools

import pytest

from tests.specs.test_roofline import GPUS, MODELS, hand_max_batch, hand_tps
from tokenfactory_xl.addin import cells
from tokenfactory_xl.addin.udfs import (
    GPU_SPEC,
    MAX_BATCH,
    MODEL_SPEC,
    THEORETICAL_TPS,
    ArgumentError,
)

PAIRS = list(itertools.product(GPUS, MODELS))


def TPS(*args):
    """THEORETICAL_TPS's version-2 roofline (mode "roofline"): the figures worked by hand in
    tests/specs/test_roofline.py."""
    args = list(args) + [None] * (8 - len(args))
    return THEORETICAL_TPS(*args, "roofline")


def message(function, *args) -> str:
    with pytest.raises(ArgumentError) as err:
        function(*args)
    return str(err.value)


@pytest.mark.parametrize(("gpu", "m"), PAIRS, ids=[f"{g['name']}-{m['name']}" for g, m in PAIRS])
def test_theoretical_tps_for_every_gpu_and_model(gpu, m):
    for precision, batch, context, n in (("bf16", 1, 2048, 8), ("fp8", 16, 8192, 8),
                                         ("int4", 4, 1024, 2)):
        got = TPS(gpu["name"], m["name"], precision, batch, context, n)
        if batch <= hand_max_batch(gpu, m, precision, context, n):
            assert got == pytest.approx(hand_tps(gpu, m, precision, batch, context, n), rel=1e-12)
        else:
            assert got == "#NUM!"


def test_efficiency_factors_and_defaults():
    gpu, m = GPUS[1], MODELS[1]
    expected = hand_tps(gpu, m, "fp8", 64, 4096, 8, mbu=0.8, mfu=0.5)
    assert TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, 0.8, 0.5) == \
        pytest.approx(expected)
    assert TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, "80%", "50%") == \
        pytest.approx(expected)
    # empty optional cells take the defaults: one GPU, MBU and MFU 100 %
    assert TPS("h200", "LLAMA-3.1-8B", "BF16", 1, 1024, None, None, None) == \
        pytest.approx(hand_tps(gpu, MODELS[0], "bf16", 1, 1024, 1))


def test_ranges_broadcast_and_keep_empty_cells():
    got = TPS([["H200"], [None], ["B200"]], "Llama-3.1-70B", "fp8", [[1, 64]], 4096, 8)
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
    monkeypatch.setattr(cells, "runtime", lambda: "classic")
    assert GPU_SPEC("H201", "hbm_gb").startswith("gpu=H201: is not in the gpu catalogue")


def test_prefill_decode_split_of_spec_section_2():
    from tokenfactory_xl.addin.udfs import (
        BLENDED_CAPACITY,
        COST_PER_MTOK_INPUT,
        COST_PER_MTOK_OUTPUT,
        TOKENS_PER_MW,
    )
    from tokenfactory_xl.core import economics as model
    # T_p 40,000, T_d 4,000, o 0.25: T = 1 / (0.75/40,000 + 0.25/4,000) = 1 / 8.125e-5
    assert BLENDED_CAPACITY(40_000, 4_000, 0.25) == pytest.approx(1 / 8.125e-5)
    # $2.10 a GPU-hour at full use: input 2.10e6 / (3,600 × 40,000) = $0.014583 per Mtok,
    # output ten times that, as decode is ten times slower
    tin = COST_PER_MTOK_INPUT(2.10, 40_000, 1)
    tout = COST_PER_MTOK_OUTPUT(2.10, 4_000, 1)
    assert tin == pytest.approx(2.10e6 / (3600 * 40_000))
    assert tout / tin == pytest.approx(10)
    # their token-weighted mean is the cost per Mtok at the blended capacity (any utilisation)
    for util in (1, 0.6):
        mean = (0.75 * model.cost_per_mtok_input(2.10, 40_000, util)
                + 0.25 * model.cost_per_mtok_output(2.10, 4_000, util))
        assert mean == pytest.approx(model.cost_per_mtok(2.10, 1 / 8.125e-5, util))
    # GPU-time share of input tokens: 1.875e-5 / 8.125e-5
    assert model.input_time_share(40_000, 4_000, 0.25) == pytest.approx(1.875 / 8.125)
    # 10,000 tokens/s at 50 % on 1 kW × PUE 1.25: 800 GPUs a MW × 5,000 = 4,000,000
    assert TOKENS_PER_MW(10_000, 1.0, 1.25, 0.5) == pytest.approx(4e6)
    assert BLENDED_CAPACITY([[40_000], [20_000]], 4_000, 0.25) == [
        [pytest.approx(1 / 8.125e-5)], [pytest.approx(1 / (0.75 / 20_000 + 0.25 / 4_000))]]
    assert message(COST_PER_MTOK_OUTPUT, 2.10, 4_000, 65) == (
        "util=65: looks like a percentage; enter 65% or 0.65")
    # the roofline's blend is the same formula
    from tokenfactory_xl.core import roofline
    assert roofline.blended_tps(40_000, 4_000, 0.25) == model.blended_capacity(40_000, 4_000, 0.25)


def test_todays_pairs_give_finite_bounds():
    # every new GPU and model in a configuration that fits memory
    pairs = [("MI355X", "Qwen3-235B-A22B", "fp8", 64, 4096, 8),
             ("B300", "DeepSeek-R1", "fp4", 256, 8192, 8),
             ("GB300", "Kimi-K2", "fp8", 128, 8192, 8),
             ("H20", "Qwen3-30B-A3B", "bf16", 32, 2048, 1),
             ("B200", "Llama-4-Maverick", "fp8", 64, 4096, 8),
             ("H100 SXM", "GLM-4.5", "fp8", 64, 4096, 8),
             ("H200", "Qwen3-32B", "bf16", 16, 4096, 2),
             ("MI355X", "Llama-4-Scout", "bf16", 32, 8192, 1),
             ("B300", "DeepSeek-V3.1", "fp8", 64, 4096, 8)]
    for p in pairs:
        got = TPS(*p)
        gpu = next(g for g in GPUS if g["name"] == p[0])
        m = next(m for m in MODELS if m["name"] == p[1])
        assert got == pytest.approx(hand_tps(gpu, m, *p[2:])), p


def test_a_long_range_of_names_computes_as_its_rows_do_one_by_one():
    # 600 rows drawn from every catalogue GPU and model, each precision, names in mixed case,
    # some cells empty: the range is resolved once per distinct name and computed in one pass,
    # and each row must equal the function called on that row's cells alone
    import numpy as np

    rng = np.random.default_rng(11)
    rows = 600
    gpus = [[str(rng.choice([g["name"], g["name"].lower()]))] for g in rng.choice(GPUS, rows)]
    models = [[m["name"]] for m in rng.choice(MODELS, rows)]
    precisions = [[str(p).upper()] for p in rng.choice(["fp16", "bf16", "fp8", "int8", "fp4",
                                                          "int4"], rows)]
    batch = [[int(b)] for b in rng.integers(1, 300, rows)]
    context = [[int(c)] for c in rng.integers(256, 32_768, rows)]
    replica = [[int(n)] for n in rng.choice([1, 2, 4, 8], rows)]
    mbu = [[float(x)] for x in rng.uniform(0.5, 1.0, rows)]
    gpus[5], models[17], batch[40], replica[41], mbu[42] = [None], [None], [None], [None], [None]
    arguments = (gpus, models, precisions, batch, context, replica, mbu)
    spilled = TPS(*arguments)
    one_by_one = [[TPS(*(a[i][0] for a in arguments))] for i in range(rows)]
    assert spilled == one_by_one
    assert spilled[5] == spilled[17] == spilled[40] == [None]  # a required cell is empty
    assert spilled[41][0] == TPS(gpus[41][0], models[41][0], precisions[41][0],
                                             batch[41][0], context[41][0], 1, mbu[41][0])
    assert sum(row == ["#NUM!"] for row in spilled) > 10  # batches that do not fit, in place
    sizes = (gpus, models, precisions, context, replica)
    assert MAX_BATCH(*sizes) == [[MAX_BATCH(*(a[i][0] for a in sizes))] for i in range(rows)]
    fields = [[str(f)] for f in rng.choice(["layers", "kv_latent_dim", "source", "experts"],
                                           rows)]
    assert MODEL_SPEC(models, fields) == [[MODEL_SPEC(models[i][0], fields[i][0])]
                                          for i in range(rows)]


def test_an_unknown_name_is_refused_only_where_its_row_computes():
    # the unknown GPU sits in a row whose batch is empty: that row is empty, nothing to refuse
    got = TPS([["H200"], ["H2O0"]], "Llama-3.1-8B", "bf16", [[1], [None]], 1024)
    assert got[1] == [None] and got[0][0] > 0
    assert message(THEORETICAL_TPS, [["H200"], ["H2O0"]], "Llama-3.1-8B", "bf16", 1,
                   1024).startswith("row 2 of gpu: gpu=H2O0: is not in the gpu catalogue")


def test_the_default_figure_is_the_attainable_one_and_the_bound_is_a_mode():
    # TEF's default denominator (methodology section 5.1): the same as the capacity module's
    from tokenfactory_xl.core import serving as capacity

    setup = capacity.Setup.of("H200", "Llama-3.1-70B", "fp8", 8)
    assert THEORETICAL_TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8) == pytest.approx(
        capacity.decode_tps_per_gpu(setup, 64, 4096, "attainable"))
    bound = THEORETICAL_TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, None, None, "Bound")
    assert bound == pytest.approx(capacity.decode_tps_per_gpu(setup, 64, 4096, "bound"))
    assert THEORETICAL_TPS("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8) < bound
    # past the engine's batch cap the attainable figure is #NUM!, the bound is not
    assert THEORETICAL_TPS("H200", "Llama-3.1-8B", "fp8", 1500, 1024, 1) == "#NUM!"
    assert THEORETICAL_TPS("H200", "Llama-3.1-8B", "fp8", 1500, 1024, 1, None, None,
                           "bound") > 0
    # the efficiencies of the roofline are refused, not ignored, by the other figures
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp8", 64, 4096, 8, 0.8).startswith(
        "mbu: applies to mode roofline only")
    assert message(THEORETICAL_TPS, "H200", "Llama-3.1-70B", "fp8", 1, 1, 1, 1, 1,
                   "best").startswith("mode=best: is not a figure")
