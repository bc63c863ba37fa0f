"""The GPU and model catalogues: shipped figures, sources, lookups, a user's own files."""

from __future__ import annotations

import csv
import doctest
from pathlib import Path

import pytest

from tokenfactory_xl.core import roofline, specs
from tokenfactory_xl.core.errors import InputError

DATA = Path(specs.__file__).parents[1] / "data"


def rows(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


REQUIRED_GPUS = ("H100 SXM", "H200", "B200", "GB200", "MI300X", "MI325X", "L40S")
REQUIRED_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "Qwen2.5-72B",
                   "DeepSeek-V3", "gpt-oss-120b")
FIGURES = ("hbm_gb", "bandwidth_tbps", "bf16_tflops", "fp8_tflops", "power_w")


def test_the_catalogues_ship_inside_the_package():
    assert {"gpus.csv", "models.csv"} <= {p.name for p in DATA.iterdir()}
    assert [g.name for g in specs.load_gpus().values()][: len(REQUIRED_GPUS)] == list(
        REQUIRED_GPUS)
    assert set(REQUIRED_MODELS) <= {m.name for m in specs.load_models().values()}


@pytest.mark.parametrize("row", rows("gpus.csv"), ids=lambda r: r["name"])
def test_every_gpu_figure_has_a_source(row):
    source_of = {"hbm_gb": "hbm_gb_source", "bandwidth_tbps": "bandwidth_source",
                 "bf16_tflops": "bf16_source", "fp8_tflops": "fp8_source",
                 "fp4_tflops": "fp4_source", "power_w": "power_source"}
    for figure, source_column in source_of.items():
        assert row[source_column].strip(), (row["name"], figure)
        if row[figure]:
            assert float(row[figure]) > 0
    for figure in FIGURES:
        assert row[figure], (row["name"], figure)


@pytest.mark.parametrize("row", rows("gpus.csv"), ids=lambda r: r["name"])
def test_tensor_figures_are_dense(row):
    # NVIDIA prints Hopper and Blackwell tensor figures with sparsity: the catalogue halves
    # them and says so; every vendor's dense FP8 is twice its dense BF16.
    bf16, fp8 = float(row["bf16_tflops"]), float(row["fp8_tflops"])
    assert fp8 == pytest.approx(2 * bf16, rel=0.02)
    if row["fp4_tflops"]:
        # Blackwell Ultra (B300, GB300) raised dense FP4 to three times FP8; others have two
        ratio = 3 if row["name"] in ("B300", "GB300") else 2
        assert float(row["fp4_tflops"]) == pytest.approx(ratio * fp8)
    if row["name"] in ("H100 SXM", "H200", "B200", "GB200", "B300", "GB300", "H20"):
        assert "halved" in row["bf16_source"] and "halved" in row["fp8_source"]
        assert "sparsity" in row["bf16_source"]


def test_todays_gpus():
    # HGX B300: 288 GB, 8 TB/s, FP8 72 PFLOPS sparse over 8 GPUs → 4,500 dense; FP4 108 dense / 8
    b300 = specs.gpu("B300")
    assert (b300.hbm_gb, b300.bandwidth_tbps, b300.bf16_tflops, b300.fp8_tflops,
            b300.fp4_tflops) == (288, 8, 2250, 4500, 13500)
    # GB300 NVL72: 20 TB and 576 TB/s over 72 GPUs; FP4 1,080 PFLOPS dense / 72
    gb300 = specs.gpu("GB300")
    assert (gb300.hbm_gb, gb300.bandwidth_tbps, gb300.fp8_tflops, gb300.fp4_tflops) == (
        278, 8, 5000, 15000)
    mi355x = specs.gpu("MI355X")
    assert (mi355x.hbm_gb, mi355x.bandwidth_tbps, mi355x.bf16_tflops, mi355x.power_w) == (
        288, 8, 2516.6, 1400)
    h20 = specs.gpu("H20")   # H100-class bandwidth, ~15 % of its tensor throughput
    assert (h20.hbm_gb, h20.bandwidth_tbps, h20.bf16_tflops, h20.fp4_tflops) == (
        96, 4, 148, None)


def test_todays_models_come_from_their_configs():
    # expert = 3 × hidden × expert intermediate; embedding = vocabulary × hidden
    qwen = specs.model("Qwen3-235B-A22B")
    assert (qwen.moe_layers, qwen.experts, qwen.experts_per_token, qwen.expert_params) == (
        94, 128, 8, 3 * 4096 * 1536)
    assert qwen.embedding_params == 151_936 * 4096 and qwen.query_heads == 64
    kimi = specs.model("Kimi-K2")
    assert (kimi.moe_layers, kimi.experts, kimi.kv_latent_dim, kimi.rope_dim) == (60, 384, 576, 64)
    maverick = specs.model("Llama-4-Maverick")
    assert (maverick.moe_layers, maverick.experts, maverick.experts_per_token) == (24, 128, 1)
    assert maverick.expert_params == 3 * 5120 * 8192
    for name in ("DeepSeek-V3.1", "DeepSeek-R1"):   # the DeepSeek-V3 architecture
        m = specs.model(name)
        assert (m.total_params, m.active_params, m.moe_layers, m.expert_params) == (
            671e9, 37e9, 58, 3 * 7168 * 2048)
    for m in specs.load_models().values():
        assert m.sources.get("embedding") and m.sources.get("attention"), m.name
        if m.kind == "moe":
            assert "config.json" in m.sources["moe"], m.name


def test_a_moe_row_must_name_its_experts(tmp_path):
    (tmp_path / "models.csv").write_text(
        "name,kind,total_params,active_params,layers,kv_heads,head_dim\n"
        "Mine,moe,100e9,10e9,40,8,128\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        specs.load_models(tmp_path)
    assert "moe_layers" in str(err.value) and "config.json" in str(err.value)
    (tmp_path / "models.csv").write_text(
        "name,kind,total_params,active_params,layers,kv_heads,head_dim,moe_layers,experts,"
        "experts_per_token,expert_params\nMine,moe,100e9,10e9,40,8,128,40,64,8,1e8\n",
        encoding="utf-8")
    with pytest.raises(InputError) as err:   # 8 × 40 × 100 M = 32 B routed > 10 B active
        specs.load_models(tmp_path)
    assert "expert_params" in str(err.value)


def test_a_release_format_cell_is_checked(tmp_path):
    head = ("name,kind,total_params,active_params,layers,kv_heads,head_dim,moe_layers,experts,"
            "experts_per_token,expert_params,released_dense_precision,weight_only_experts\n")
    (tmp_path / "models.csv").write_text(
        head + "Mine,moe,100e9,10e9,40,8,128,40,64,8,1e7,bf16,maybe\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        specs.load_models(tmp_path)
    assert "weight_only_experts=maybe" in str(err.value) and "yes, no or blank" in str(
        err.value)
    (tmp_path / "models.csv").write_text(
        head + "Mine,moe,100e9,10e9,40,8,128,40,64,8,1e7,fp6,yes\n", encoding="utf-8")
    mine = specs.load_models(tmp_path)["mine"]
    assert (mine.released_dense_precision, mine.weight_only_experts) == ("fp6", True)
    from tokenfactory_xl.core import (
        serving as capacity,  # the precision is checked where it is used
    )
    with pytest.raises(InputError) as err:
        capacity.Setup.of("B200", mine, "fp4")
    assert "released_dense_precision" in str(err.value) and "fp6" in str(err.value)


def test_datasheet_figures():
    # dense = the datasheet's sparse figure ÷ 2 (NVIDIA), or AMD's dense figure as printed
    h100 = specs.gpu("H100 SXM")
    assert (h100.hbm_gb, h100.bandwidth_tbps, h100.bf16_tflops, h100.fp8_tflops) == (
        80, 3.35, 1979 / 2, 3958 / 2)
    assert h100.fp4_tflops is None and h100.power_w == 700
    assert specs.gpu("H200").hbm_gb == 141 and specs.gpu("H200").bandwidth_tbps == 4.8
    b200 = specs.gpu("B200")
    assert (b200.bf16_tflops, b200.fp8_tflops, b200.fp4_tflops) == (4500 / 2, 9000 / 2, 18000 / 2)
    gb200 = specs.gpu("GB200")
    assert (gb200.fp8_tflops, gb200.fp4_tflops, gb200.power_w) == (10000 / 2, 20000 / 2, 1200)
    assert specs.gpu("MI300X").fp8_tflops == 2614.9 and specs.gpu("MI325X").hbm_gb == 256
    assert specs.gpu("L40S").bandwidth_tbps == 0.864


def llama_like_params(vocab, hidden, intermediate, layers, heads, kv_heads, head_dim,
                      qkv_bias=False):
    """Parameters of a Llama/Qwen2 decoder from its config.json, counted weight by weight."""
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    if qkv_bias:
        attention += heads * head_dim + 2 * kv_heads * head_dim
    per_layer = attention + 3 * hidden * intermediate + 2 * hidden
    return layers * per_layer + 2 * vocab * hidden + hidden


@pytest.mark.parametrize(("name", "config"), [
    ("Llama-3.1-8B", (128256, 4096, 14336, 32, 32, 8, 128)),
    ("Llama-3.1-70B", (128256, 8192, 28672, 80, 64, 8, 128)),
    ("Llama-3.1-405B", (128256, 16384, 53248, 126, 128, 8, 128)),
])
def test_dense_parameter_counts_follow_from_config(name, config):
    m = specs.model(name)
    assert m.total_params == m.active_params == llama_like_params(*config)
    assert (m.layers, m.kv_heads, m.head_dim) == (config[3], config[5], config[6])


def test_qwen_and_the_moe_models():
    qwen = specs.model("Qwen2.5-72B")
    assert qwen.total_params == llama_like_params(152064, 8192, 29568, 80, 64, 8, 128,
                                                  qkv_bias=True)
    assert round(qwen.total_params / 1e9, 1) == 72.7  # the model card's figure
    ds = specs.model("DeepSeek-V3")
    assert (ds.kind, ds.total_params, ds.active_params, ds.layers) == ("moe", 671e9, 37e9, 61)
    assert ds.kv_latent_dim == 512 + 64  # kv_lora_rank + qk_rope_head_dim
    assert ds.kv_elements_per_token == 61 * 576
    oss = specs.model("gpt-oss-120b")
    assert oss.kind == "moe" and round(oss.total_params / 1e9) == 117
    # the model card's 5.13 B active leave out the input embedding (201,088 × 2,880)
    assert oss.active_params == pytest.approx(5.13e9 + 201_088 * 2_880, rel=1e-3)
    assert (oss.layers, oss.kv_heads, oss.head_dim) == (36, 8, 64)
    assert (oss.sliding_window, oss.sliding_window_layers) == (128, 18)
    for m in specs.load_models().values():
        assert m.active_params <= m.total_params and m.source


def test_names_match_without_regard_to_case_or_punctuation():
    assert specs.gpu("h200").name == "H200"
    assert specs.gpu("h100-sxm").name == specs.gpu("H100_SXM").name == "H100 SXM"
    assert specs.model("LLAMA-3.1-70b").name == "Llama-3.1-70B"
    assert specs.model("deepseek v3").name == "DeepSeek-V3"


def test_unknown_names_list_close_matches():
    with pytest.raises(InputError) as err:
        specs.gpu("H201")
    text = str(err.value)
    assert "H201" in text and "not in the gpu catalogue" in text and "H200" in text
    with pytest.raises(InputError) as err:
        specs.model("Llama-3.1-7B")
    assert "Llama-3.1-70B" in str(err.value) or "Llama-3.1-8B" in str(err.value)
    with pytest.raises(InputError) as err:
        specs.model("zzzz")
    assert "known:" in str(err.value) and "DeepSeek-V3" in str(err.value)


def test_spec_fields():
    assert specs.gpu_spec("H200", "bandwidth_tbps") == 4.8
    assert specs.gpu_spec("h200", "FP4_TFLOPS") is None
    assert specs.model_spec("DeepSeek-V3", "active_params") == 37e9
    assert specs.model_spec("Llama-3.1-8B", "kv_elements_per_token") == 2 * 32 * 8 * 128
    with pytest.raises(InputError) as err:
        specs.gpu_spec("H200", "bandwith_tbps")
    assert "bandwidth_tbps" in str(err.value)


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


GPU_HEADER = ("name,vendor,hbm_gb,hbm_gb_source,bandwidth_tbps,bandwidth_source,bf16_tflops,"
              "bf16_source,fp8_tflops,fp8_source,fp4_tflops,fp4_source,power_w,power_source,notes\n")


def test_a_users_catalogue_is_merged_over_the_shipped_one(tmp_path, monkeypatch):
    write(tmp_path, "gpus.csv", GPU_HEADER
          + "h200,NVIDIA,141,lab,5.0,our measurement,989.5,ds,1979,ds,,,700,ds,\n"
          + "X1,Acme,96,acme,2,acme,500,acme,1000,acme,2000,acme,600,acme,\n")
    write(tmp_path, "models.csv",
          "name,kind,total_params,active_params,layers,kv_heads,head_dim,source\n"
          "Tiny-1B,dense,1e9,1e9,16,4,64,our config.json\n")
    gpus = specs.load_gpus(tmp_path)
    assert gpus["h200"].bandwidth_tbps == 5.0          # replaced
    assert gpus["x1"].fp4_tflops == 2000               # added
    assert gpus["b200"].hbm_gb == 180                   # kept
    assert specs.model("tiny-1b", tmp_path).kv_heads == 4
    assert specs.model("Llama-3.1-8B", tmp_path).layers == 32
    # the environment variable does the same, and the roofline follows it
    monkeypatch.setenv(specs.CATALOGUE_DIR_ENV, str(tmp_path))
    assert specs.gpu("X1").vendor == "Acme"
    assert roofline.theoretical_tps("X1", "Tiny-1B", "bf16", 1, 1) == pytest.approx(
        2e12 / (1e9 * 2 + 2 * 16 * 4 * 64 * 2))
    monkeypatch.delenv(specs.CATALOGUE_DIR_ENV)
    with pytest.raises(InputError):
        specs.gpu("X1")


def test_a_bad_user_catalogue_names_file_row_and_column(tmp_path):
    write(tmp_path, "gpus.csv", GPU_HEADER + "X2,Acme,lots,a,2,a,500,a,1000,a,,,600,a,\n")
    with pytest.raises(InputError) as err:
        specs.load_gpus(tmp_path)
    text = str(err.value)
    assert "gpus.csv row 2" in text and "hbm_gb=lots: must be a number" in text
    write(tmp_path, "gpus.csv", "name,hbm_gb\nX3,80\n")
    with pytest.raises(InputError) as err:
        specs.load_gpus(tmp_path)
    assert "has no column bandwidth_tbps" in str(err.value)
    with pytest.raises(InputError) as err:
        specs.load_gpus(tmp_path / "missing")
    assert "is not a folder" in str(err.value)


def test_module_examples():
    for module in (specs, roofline):
        assert doctest.testmod(module).failed == 0


def test_names_as_published_find_their_entry():
    # Hugging Face ids (organisation dropped), released variants, and the suites' short names
    assert specs.model("deepseek-ai/DeepSeek-R1-0528").name == "DeepSeek-R1"
    assert specs.model("meta-llama/Llama-3.3-70B-Instruct").name == "Llama-3.1-70B"
    assert specs.model("moonshotai/Kimi-K2-Instruct").name == "Kimi-K2"
    assert specs.model("openai/gpt-oss-120b").name == "gpt-oss-120b"
    assert specs.model("Qwen/Qwen3-235B-A22B-Instruct-2507").name == "Qwen3-235B-A22B"
    assert specs.gpu("h100").name == "H100 SXM" and specs.gpu("H200 SXM").name == "H200"
    with pytest.raises(InputError, match="did you mean"):
        specs.model("Llama-3.1-7B")
