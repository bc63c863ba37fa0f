"""`tokenfactory-xl summary` and `inputs`, run for real."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_operating_model import full, reference
from tokenfactory_xl import cli
from tokenfactory_xl.catalogue import INPUTS
from tokenfactory_xl.operating_model import OUTPUT_NAMES

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokenfactory_xl", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def summary_json(capsys, *args: str) -> dict:
    assert cli.main(["summary", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def assert_matches_reference(got: dict, overrides: dict) -> None:
    _, expected = reference(full(overrides))
    for name, value in expected.items():
        if value is None:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(value, rel=1e-10), name


def test_summary_json_keys_and_values(capsys):
    got = summary_json(capsys)
    assert list(got) == list(OUTPUT_NAMES)
    assert_matches_reference(got, {})


def test_summary_set_and_scenario(capsys):
    got = summary_json(capsys, "--scenario", "Optimised", "--set", "tef_target=0.7",
                       "--set", "gpus=2048", "--set", "measured_tps=6144000")
    assert got["equivalent_gpus"] == pytest.approx(2048 * 0.7 / 0.3)
    assert_matches_reference(got, {"scenario": "Optimised", "tef_target.Optimised": 0.7,
                                   "gpus": 2048, "measured_tps": 6_144_000})


def test_summary_json_null_for_missing_figures(capsys):
    got = summary_json(capsys, "--set", "ownership=rent")
    assert got["roi"] is None  # no CapEx
    assert got["irr"] is None and got["payback_months"] is None  # no investment to pay back


@settings(max_examples=25, deadline=None)
@given(
    gpus=st.integers(8, 20_000),
    tef=st.floats(0.05, 0.9),
    target=st.floats(0.05, 1.0),
    horizon=st.integers(1, 120),
    ownership=st.sampled_from(["own", "rent"]),
    scenario=st.sampled_from(["Base", "Optimised", "Downside"]),
    decline=st.floats(0, 0.6),
    price=st.floats(0.01, 5),
    ramp=st.integers(0, 24),
    start=st.sampled_from(["2027-01-01", "2028-02-01", "2031-12-01"]),
)
def test_summary_json_agrees_with_the_spec_on_any_inputs(
    gpus, tef, target, horizon, ownership, scenario, decline, price, ramp, start
):
    overrides = {
        "gpus": gpus, "measured_tps": gpus * 10_000 * tef, "scenario": scenario,
        f"tef_target.{scenario}": target, "horizon_months": horizon, "ownership": ownership,
        f"decline_per_quarter.{scenario}": decline, "price_output_per_mtok": price,
        "tef_ramp_months": ramp, "start_date": start, "salvage_per_gpu": 2_500,
    }
    args = [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert cli.main(["summary", "--json", *args]) == 0
    assert_matches_reference(json.loads(buffer.getvalue()), overrides)


def test_summary_table_is_readable():
    proc = run_cli("summary")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == "Example site — Base scenario, 60 months from 2027-01-01"
    assert any(line.split()[:2] == ["TEF", "now"] and "30.00%" in line for line in lines)
    assert sum(name in proc.stdout for name in OUTPUT_NAMES) == len(OUTPUT_NAMES)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "availability=99.5"],
         "availability=99.5: looks like a percentage; enter 99.5% or 0.995"),
        (["--set", "gpus=-4"], "gpus=-4: is out of range"),
        (["--set", "gpus"], "--set=gpus: is not NAME=VALUE; e.g. --set gpus=2048"),
        (["--set", "ttft_p99_ms=100"], "ttft_p99_ms=100: must be above ttft_p50_ms"),
        (["--set", "measured_tps=1e9"], "measured_tps=1e9: is above the theoretical"),
        (["--set", "pue=nan"], "pue=nan: is not a number (NaN)"),
        (["--set", "capex_per_gpu=lots", "--set", "tef_target=65"], "2 inputs need fixing"),
    ],
)
def test_bad_input_message_exit_2_no_traceback(args, message):
    proc = run_cli("summary", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_unknown_scenario_is_a_usage_error():
    proc = run_cli("summary", "--scenario", "Best")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "Optimised" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_inputs_lists_the_catalogue():
    proc = run_cli("inputs", "--json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert [r["name"] for r in rows] == [i.name for i in INPUTS]
    tef = next(r for r in rows if r["name"] == "tef_target")
    assert tef["default"] == [0.30, 0.65, 0.30] and tef["per_scenario"]
    text = run_cli("inputs").stdout
    assert "gpus  [GPUs]  default 1024" in text


def test_help_and_version():
    assert "summary" in run_cli("--help").stdout
    assert run_cli("--version").stdout.strip().startswith("tokenfactory-xl ")
    assert "--set NAME=VALUE" in run_cli("summary", "--help").stdout
