"""`tokenfactory-xl theoretical`: the roofline's working, checked by hand."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.specs.test_roofline import GPUS, MODELS, hand_max_batch, hand_prefill, hand_tps
from tests.tools import command
from tokenfactory_xl.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return command.run("theoretical", *args, cwd=ROOT)


@pytest.mark.parametrize(("gpu", "m"), [(GPUS[2], MODELS[4]), (GPUS[6], MODELS[0]),
                                        (GPUS[4], MODELS[5])], ids=lambda x: x["name"])
def test_json_figures_agree_with_a_hand_computation(capsys, gpu, m):
    assert cli.main(["theoretical", "--gpu", gpu["name"].lower(), "--model", m["name"],
                     "--precision", "FP8", "--batch", "16", "--context", "8192", "--gpus", "4",
                     "--mbu", "85%", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["decode_tps_per_gpu"] == pytest.approx(hand_tps(gpu, m, "fp8", 16, 8192, 4,
                                                               mbu=0.85))
    assert got["decode_tps_per_replica"] == pytest.approx(4 * got["decode_tps_per_gpu"])
    # prefill: attention at half the 8,192-token prompt (methodology section 5)
    assert got["prefill_tps_per_gpu"] == pytest.approx(hand_prefill(gpu, m, "fp8", 8192))
    assert got["max_batch"] == hand_max_batch(gpu, m, "fp8", 8192, 4)
    assert got["weights_gb"] == pytest.approx(float(m["total_params"]) / 1e9)
    assert got["step_time_ms"] == pytest.approx(16 / (4 * got["decode_tps_per_gpu"]) * 1000)


def test_list_names_every_catalogue_entry():
    proc = run("--list")
    assert proc.returncode == 0
    for row in GPUS + MODELS:
        assert row["name"] in proc.stdout


def test_missing_options_and_unknown_names_exit_2():
    proc = run("--gpu", "H200")
    assert proc.returncode == 2 and "--model, --precision, --batch, --context" in proc.stderr
    proc = run("--gpu", "H2000", "--model", "Llama-3.1-8B", "--precision", "bf16", "--batch",
               "1", "--context", "1")
    assert proc.returncode == 2 and "did you mean H200" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_users_catalogue_folder_reaches_the_command(tmp_path):
    (tmp_path / "gpus.csv").write_text(
        "name,vendor,hbm_gb,bandwidth_tbps,bf16_tflops,fp8_tflops,power_w\n"
        "Lab-1,Acme,100,2,500,1000,600\n", encoding="utf-8")
    env = {**os.environ, "TOKENFACTORY_XL_CATALOGUE_DIR": str(tmp_path)}
    proc = command.process("theoretical", "--gpu", "lab-1", "--model", "Llama-3.1-8B",
                           "--precision", "fp8", "--batch", "1", "--context", "1000", "--json",
                           cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["gpu"] == "Lab-1"
    # fp8: (8,030,261,248 − 525,336,576 embedding + one 4,096 row) bytes + 1,000 × 65,536 KV
    assert got["decode_tps_per_gpu"] == pytest.approx(
        2e12 / (8_030_261_248 - 128_256 * 4096 + 4096 + 1000 * 2 * 32 * 8 * 128))


def test_weight_only_experts_say_what_they_compute_at(capsys):
    # gpt-oss's MXFP4 experts have no 4-bit activations: BF16 on Hopper (W4A16)
    assert cli.main(["theoretical", "--gpu", "H100", "--model", "gpt-oss-120b", "--precision",
                     "FP4", "--gpus", "4", "--parallel", "dep", "--isl", "1024", "--osl", "1024"]
                    ) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "fp4 weights (bf16 dense, fp8 KV, experts computed at bf16)" in first
    assert cli.main(["theoretical", "--gpu", "B200", "--model", "Qwen3-30B-A3B", "--precision",
                     "fp4", "--isl", "1024", "--osl", "1024", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["expert_compute_precision"] == "fp4"
