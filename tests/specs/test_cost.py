"""`tokenfactory-xl cost`: throughput per GPU, tokens/s per user and the input/output cost split
of methodology section 2, on the real SGLang sweep (tests/fixtures/actuals/SOURCES.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import openpyxl
import pytest

from tests.tools import command
from tokenfactory_xl.capacity import cost
from tokenfactory_xl.engines import libreoffice

ROOT = Path(__file__).resolve().parents[2]
SWEEP = str(ROOT / "tests" / "fixtures" / "actuals" / "sglang_llama70b_h200_sweep.jsonl")
SUITE = str(ROOT / "tests" / "fixtures" / "actuals" / "suite_agg_list_constructed.json")
REAL = ROOT / "tests" / "fixtures" / "real"


def run(*args: str) -> subprocess.CompletedProcess:
    return command.run("cost", *args, cwd=ROOT)


def hand_point(inp, out, seconds, gpus, ratio, gpu_hour=2.10):
    """Section 2 by hand: 1/T = (1 − o)/(r·T_d) + o/T_d, T_p = r·T_d."""
    per_gpu = (inp + out) / seconds / gpus
    o = out / (inp + out)
    t_d = per_gpu * ((1 - o) / ratio + o)     # 1/T = ((1 − o)/r + o)/T_d
    t_p = ratio * t_d
    return per_gpu, gpu_hour * 1e6 / (3600 * t_p), gpu_hour * 1e6 / (3600 * t_d)


MODEL = ("--gpu", "H200", "--model", "Llama-3.1-70B", "--precision", "bf16")


def test_cost_of_every_run_of_the_real_sweep():
    proc = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "--ttft-slo-ms", "500", "--json",
               *MODEL)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    points = got["points"]
    assert len(points) == 5
    # run 4 of 5: 2,441,917 tokens in 346.69 s on 4 GPUs; ITL 70.81 ms; TTFT 194.50 ms
    p = points[3]
    per_gpu, c_in, c_out = hand_point(1222995, 1218922, 346.69448847300373, 4,
                                      p["prefill_decode_ratio"])
    assert p["tps_per_gpu"] == pytest.approx(per_gpu) and round(per_gpu, 1) == 1760.9
    assert p["cost_per_mtok_input"] == pytest.approx(c_in)
    assert p["cost_per_mtok_output"] == pytest.approx(c_out)
    assert p["tps_per_user"] == pytest.approx(1000 / 70.8101480267942)
    # the token-weighted mean of the two is the cost of a million tokens at T
    o = p["output_share"]
    assert (1 - o) * c_in + o * c_out == pytest.approx(2.10e6 / (3600 * per_gpu))
    # the split is the GPU time of the model at the run's batch, never its TTFT: an input
    # token stays cheaper than an output token at every concurrency, more so at low batch
    # (decode reads every weight for a handful of tokens) than at high batch
    ratios = [q["prefill_decode_ratio"] for q in points]
    assert all(r > 1 for r in ratios) and ratios[0] > ratios[-1]
    assert all(q["ratio_basis"].startswith("GPU time: the attainable model") for q in points)
    # the fastest-per-GPU run whose TTFT (p50: the file has no p99) is within 500 ms
    assert got["best"].endswith("(run 4 of 5)")
    assert p["ttft_stat"] == "p50"


def test_a_measured_prefill_throughput_splits_the_gpu_time():
    # AIPerf's own active prefill throughput: 76,281.14 tokens/s while prefilling (the CSV's
    # avg, the JSON's active_prefill_throughput); total 7,015.6 tokens/s, 78,417 of
    # 12,369,531 tokens output, on 4 GPUs (the run's path says tp4)
    proc = run(str(REAL / "aiperf" / "kimik2.5_mi355x_tp4_conc1_profile_export_aiperf.json"),
               "--gpu-hour", "2", "--gpus", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    [p] = json.loads(proc.stdout)["points"]
    t = (12291114 + 78417) / 1763.1388 / 4
    o = 78417 / (12291114 + 78417)
    t_p = 76281.14 / 4
    t_d = o / (1 / t - (1 - o) / t_p)
    assert p["prefill_decode_ratio"] == pytest.approx(t_p / t_d, rel=1e-3)
    assert p["ratio_basis"] == "GPU time: the file's measured prefill throughput"


def test_a_given_ratio_replaces_the_measured_one():
    proc = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "--run", "1",
               "--prefill-decode-ratio", "10", "--json")
    [p] = json.loads(proc.stdout)["points"]
    o = 160347 / (152612 + 160347)
    per_gpu = (152612 + 160347) / 298.36731477989815 / 4
    t_d = per_gpu * ((1 - o) / 10 + o)
    assert p["decode_tps_per_gpu"] == pytest.approx(t_d)
    assert p["cost_per_mtok_output"] / p["cost_per_mtok_input"] == pytest.approx(10)
    assert p["ratio_basis"] == "given (--prefill-decode-ratio)"


def test_suite_results_take_their_gpu_count_from_the_file():
    # those rows carry no prompt length, so the split takes a given ratio
    proc = run(SUITE, "--gpu-hour", "3", "--json", "--ttft-slo-ms", "2500",
               "--prefill-decode-ratio", "20")
    points = json.loads(proc.stdout)["points"]
    assert [p["tps_per_gpu"] for p in points] == [pytest.approx(98.41), pytest.approx(412.7),
                                                  pytest.approx(903.5)]
    # p99 TTFTs 604.7, 2,103.4 and 7,883.2 ms: the second is the best within 2,500 ms
    assert json.loads(proc.stdout)["best"].endswith("(run 2 of 3)")
    assert points[1]["ttft_stat"] == "p99"


def test_the_sweep_workbook_has_its_points_and_chart(tmp_path):
    out = tmp_path / "curve.xlsx"
    proc = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "--ttft-slo-ms", "500", "-o",
               str(out), *MODEL)
    assert proc.returncode == 0, proc.stderr
    assert "best point meeting TTFT ≤ 500 ms (p50)" in proc.stdout
    wb = openpyxl.load_workbook(out)
    assert wb.sheetnames == ["Curve", "Points"]
    rows = list(wb["Points"].iter_rows(min_row=2, values_only=True))
    assert len(rows) == 5
    users = [r[2] for r in rows]
    assert users == sorted(users)        # plotted left to right by tokens/s per user
    assert len(wb["Curve"]._charts) == 1


def test_an_existing_file_is_replaced_only_with_force(tmp_path):
    out = tmp_path / "curve.xlsx"
    out.write_bytes(b"a workbook of the user's")
    again = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "-o", str(out))
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr == (f"tokenfactory-xl: --output {out}: exists; nothing was written (add "
                            "--force to replace it)\n")
    assert out.read_bytes() == b"a workbook of the user's"
    forced = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "-o", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert openpyxl.load_workbook(out).sheetnames == ["Curve", "Points"]


def test_the_workbook_goes_to_the_standard_output_and_the_table_to_the_standard_error(
        tmp_path):
    proc = command.process("cost", SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "-o", "-",
                           cwd=tmp_path, text=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout[:4] == b"PK\x03\x04" and list(tmp_path.iterdir()) == []
    (tmp_path / "curve.xlsx").write_bytes(proc.stdout)
    wb = openpyxl.load_workbook(tmp_path / "curve.xlsx")
    assert len(list(wb["Points"].iter_rows(min_row=2))) == 5  # the five runs of the sweep
    assert proc.stderr.decode().startswith("cost at $2.10 per GPU-hour")


@pytest.mark.skipif(libreoffice.find_soffice() is None, reason="LibreOffice not installed")
def test_the_png_is_rendered(tmp_path):
    png = tmp_path / "curve.png"
    proc = run(SWEEP, "--gpu-hour", "2.10", "--gpus", "4", "--png", str(png), *MODEL)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("args", "says"), [
    ((SWEEP,), "--gpu-hour"),
    ((SWEEP, "--gpu-hour", "-1"), "--gpu-hour"),
    ((SWEEP, "--gpu-hour", "2", "-o", "curve.csv"), "must end in .xlsx"),
    ((SWEEP, "--gpu-hour", "2", "--png", "/no/such/folder/c.png"), "folder does not exist"),
    (("missing.json", "--gpu-hour", "2"), "missing.json: no such file"),
    ((SWEEP, "--gpu-hour", "2", "--run", "9"), "holds 5 runs; --run 9"),
])
def test_bad_input_is_one_clear_line(args, says):
    proc = run(*args)
    assert proc.returncode == 2
    assert says in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_without_what_the_split_needs_says_what_would_give_it(tmp_path):
    bare = tmp_path / "r.json"
    bare.write_text(json.dumps({"endpoint_type": "vllm", "duration": 10.0, "completed": 5,
                                "total_input_tokens": 100, "total_output_tokens": 50}))
    proc = run(str(bare), "--gpu-hour", "2", "--gpus", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    [p] = json.loads(proc.stdout)["points"]
    # 150 tokens in 10 s on one GPU: $2 buys 3,600 × 15 tokens an hour
    assert p["cost_per_mtok"] == pytest.approx(2e6 / (3600 * 15))
    assert p["cost_per_mtok_input"] is None and p["prefill_decode_ratio"] is None
    assert "--prefill-decode-ratio" in p["ratio_basis"]
    assert "the TTFT is not used" in p["ratio_basis"]
    text = run(str(bare), "--gpu-hour", "2", "--gpus", "1").stdout
    assert "no input/output split" in text and "n/a" in text
    proc = run(str(bare), "--gpu-hour", "2")
    assert proc.returncode == 2 and "needs --gpus N" in proc.stderr
    ok = run(str(bare), "--gpu-hour", "2", "--prefill-decode-ratio", "20", "--json", "--gpus",
             "1")
    [p] = json.loads(ok.stdout)["points"]
    assert p["tps_per_gpu"] == 15.0


def test_best_point_needs_a_known_ttft():
    point = cost.CostPoint("a", None, 100.0, None, 0.5, 10, "", 1, 1, 1, 1, 1, None, None)
    assert cost.best_point([point], 1000) is None


def test_a_file_name_is_never_turned_into_a_formula(tmp_path):
    point = cost.CostPoint('=HYPERLINK("http://x","y")', 8, 100.0, 20.0, 0.5, 10, "", 1, 1, 1, 1,
                           1, 100.0, "p50")
    out = tmp_path / "c.xlsx"
    out.write_bytes(cost.cost_workbook_bytes([point], 2.0, "=1+1 runs"))
    wb = openpyxl.load_workbook(out)
    cell = wb["Points"]["A2"]
    assert cell.data_type == "s" and cell.value == '=HYPERLINK("http://x","y")'
    assert wb["Curve"]["A1"].data_type == "s"
