"""What must be true: ``solve`` finds the input value at which an output meets a target, and
that value, put back into the model as ``summary --set`` puts it, meets the target."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core.catalogue import BY_NAME
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs
from tokenfactory_xl.tfom.solve import parse_target, solve

ROOT = Path(__file__).resolve().parents[1]


def main(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def put_back(inputs, key: str, value: float, scenario: str | None = None) -> dict:
    """The summary of the site with ``key`` set to ``value``, as ``summary --set`` computes it."""
    if BY_NAME[key.partition(".")[0]].kind == "fraction" and value > 1:
        value = f"{value * 100!r}%"  # as --set takes a fraction above 1 (a growth of 500 %)
    result = run(inputs.replace({key: value}))
    return result.scenarios[scenario or inputs.scenario].summary


def test_default_site_tef_target_for_npv_zero_put_back_with_summary_set(capsys):
    status, out, err = main(capsys, "solve", "--for", "tef_target", "--target", "npv=0",
                            "--json")
    assert status == 0, err
    found = json.loads(out)
    assert found["reached"] and 0.30 < found["value"] < 0.65  # Base loses money, Optimised not
    # the value as printed, put back through the command line
    status, out, err = main(capsys, "summary", "--json", "--set",
                            f"tef_target={found['value']!r}")
    assert status == 0, err
    assert abs(json.loads(out)["npv"]) < 1


def test_the_check_line_printed_is_a_command_that_meets_the_target(capsys):
    status, out, _ = main(capsys, "solve", "--for", "price_factor", "--target", "npv=0")
    assert status == 0
    check = next(line for line in out.splitlines() if "check:" in line)
    argv = check.split("tokenfactory-xl ", 1)[1].split()
    status, out, err = main(capsys, *argv, "--json")
    assert status == 0, err
    assert abs(json.loads(out)["npv"]) < 1


def test_irr_at_the_hurdle_is_where_npv_at_the_hurdle_is_zero():
    # NPV at the discount rate r is zero exactly where the IRR is r (methodology §4.3): two
    # different outputs, one answer
    inputs = make_inputs({})
    rate = float(inputs["discount_rate"])  # type: ignore[arg-type]
    by_irr = solve(inputs, "tef_target", f"irr={rate}")
    by_npv = solve(inputs, "tef_target", "npv=0")
    assert by_irr.reached and by_npv.reached
    assert by_irr.value == pytest.approx(by_npv.value, abs=1e-8)
    assert put_back(inputs, "tef_target", by_irr.value)["irr"] == pytest.approx(rate, abs=1e-8)


def test_dscr_covenant_with_debt():
    inputs = make_inputs({"debt_share": 0.5, "debt_rate": 0.07, "debt_tenor_months": 36})
    found = solve(inputs, "capex_per_gpu", "dscr=1.2")
    assert found.output == "min_dscr" and found.reached
    assert put_back(inputs, "capex_per_gpu", found.value)["min_dscr"] == pytest.approx(
        1.2, abs=1e-8)
    # a DSCR without debt does not exist: no value of the range gives one
    none = solve(make_inputs({}), "capex_per_gpu", "dscr=1.2")
    assert not none.reached and none.value is None


def test_payback_target():
    inputs = make_inputs({})
    found = solve(inputs, "tef_target", "payback_months=36")
    assert found.reached
    assert put_back(inputs, "tef_target", found.value)["payback_months"] == pytest.approx(
        36, abs=1e-6)


def test_a_named_scenario_moves_that_scenario_and_reads_its_output():
    inputs = make_inputs({})  # Base is live
    found = solve(inputs, "tef_target.Optimised", "npv=0")
    assert found.scenario == "Optimised" and found.reached
    summary = put_back(inputs, "tef_target.Optimised", found.value, "Optimised")
    assert abs(summary["npv"]) < 1
    # Base's NPV is untouched by Optimised's TEF target
    assert put_back(inputs, "tef_target.Optimised", found.value)["npv"] == \
        run(inputs).summary["npv"]


def test_unreachable_target_says_so_and_names_the_closest_end(capsys):
    inputs = make_inputs({})
    found = solve(inputs, "tef_target", "npv=1e12")
    assert not found.reached and found.closest == "high" and found.value == 1.0
    # the closest end's output is the model's at TEF target 100 %
    assert found.output_at_value == put_back(inputs, "tef_target", 1.0)["npv"]
    status, out, _ = main(capsys, "solve", "--for", "tef_target", "--target", "npv=1e12")
    assert status == 1
    assert "no value of tef_target from 0 (0.0000%) to 1 (100.0000%) meets it; the high end " \
           "comes closest" in out


def test_an_input_that_does_not_move_the_output():
    inputs = make_inputs({})
    found = solve(inputs, "contract_price_per_mtok", "npv=0")  # no contract: no effect
    assert not found.reached
    assert any("does not change" in n for n in found.notes)


def test_whole_number_input_straddles_the_target():
    inputs = make_inputs({})
    found = solve(inputs, "gpus", "npv=0")
    assert found.reached and isinstance(found.value, int)
    # the target lies between the answer and its neighbour
    near = put_back(inputs, "gpus", found.value)["npv"]
    other = found.value + (1 if near > 0 else -1)
    assert np.sign(put_back(inputs, "gpus", other)["npv"]) == -np.sign(near)
    assert abs(near) <= abs(put_back(inputs, "gpus", other)["npv"])


def test_range_cut_by_the_rules_that_tie_inputs_together():
    # measured TPS may not exceed gpus × theoretical TPS per GPU (TEF now ≤ 1): the search ends
    # there, at 1,024 × 10,000
    found = solve(make_inputs({}), "measured_tps", "npv=1e12")
    assert found.high == 1024 * 10_000 and not found.reached


DRIVERS = ("tef_target", "sell_through_target", "price_factor", "decline_per_quarter",
           "capex_per_gpu", "electricity_per_kwh", "discount_rate", "life_years",
           "availability", "market_growth_per_quarter")


def random_site(rng):
    site = {"gpus": int(rng.integers(64, 4096)), "capex_per_gpu": float(rng.uniform(2e4, 6e4)),
            "horizon_months": int(rng.integers(24, 97)),
            "price_input_per_mtok": float(rng.uniform(0.1, 0.6)),
            "market_mtok_month1": float(rng.choice([0, rng.uniform(1e5, 1e7)])),
            "scenario": str(rng.choice(["Base", "Optimised", "Downside"]))}
    site["measured_tps"] = site["gpus"] * 10_000 * float(rng.uniform(0.1, 0.5))
    return make_inputs(site)


@pytest.mark.parametrize("seed", range(16))
def test_random_sites_and_inputs_reach_a_target_the_model_gives(seed):
    # the target is the output the model gives at a random value of the input: some value of
    # the range meets it, and solve's value, put back, gives it again
    rng = np.random.default_rng(seed)
    inputs = random_site(rng)
    name = str(rng.choice(DRIVERS))
    spec = BY_NAME[name]
    high = spec.high if spec.high is not None else 2 * float(inputs[name])  # type: ignore
    x0 = float(rng.uniform(spec.low, high))
    at_x0 = put_back(inputs, name, x0)
    output = str(rng.choice(["npv", "irr"])) if at_x0["irr"] is not None else "npv"
    found = solve(inputs, name, f"{output}={at_x0[output]!r}")
    assert found.reached, (name, x0, found)
    got = put_back(inputs, name, found.value)[output]
    assert got == pytest.approx(at_x0[output], abs=0.01 if output == "npv" else 1e-8)


@pytest.mark.parametrize("seed", range(8))
def test_random_unreachable_targets_name_the_closest_end(seed):
    rng = np.random.default_rng(100 + seed)
    inputs = random_site(rng)
    name = str(rng.choice(DRIVERS))
    target = float(rng.choice([-1e12, 1e12]))
    found = solve(inputs, name, f"npv={target!r}")
    assert not found.reached
    spec = BY_NAME[name]
    ends = [put_back(inputs, name, x)["npv"] for x in (found.low, found.high)]
    assert found.low == spec.low and (spec.high is None or found.high == spec.high)
    assert found.closest == ("low" if abs(ends[0] - target) <= abs(ends[1] - target)
                             else "high")
    assert found.output_at_value == ends[0 if found.closest == "low" else 1]


@pytest.mark.parametrize(("argv", "says"), [
    (["--for", "tef_targt", "--target", "npv=0"], "--for=tef_targt: is not a known input; did "
                                                  "you mean tef_target?"),
    (["--for", "gpu_model", "--target", "npv=0"], "not a number: a solve moves a numeric input"),
    (["--for", "tef_target", "--target", "nvp=0"], "names 'nvp', which is not an output of the "
                                                   "model; did you mean npv?"),
    (["--for", "tef_target", "--target", "npv"], "is not OUTPUT=VALUE"),
    (["--for", "tef_target", "--target", "npv=abc"], "'abc' is not a number"),
    (["--for", "gpus.Optimised", "--target", "npv=0"], "gpus has one value for all scenarios"),
])
def test_bad_input_is_a_message_and_exit_2(capsys, argv, says):
    status, out, err = main(capsys, "solve", *argv)
    assert status == 2 and out == ""
    assert says in err and "Traceback" not in err


def test_parse_target_accepts_percentages_of_fractions_only():
    assert parse_target("irr=15%").value == pytest.approx(0.15)
    assert parse_target("dscr=1.2").output == "min_dscr"
    with pytest.raises(InputError, match="is a percentage, but npv"):
        parse_target("npv=5%")


def test_batch_solve_columns_put_back_give_npv_zero(tmp_path, capsys):
    import csv

    from tokenfactory_xl.sites.load import load_sites

    sites = ROOT / "templates" / "sites-example.csv"
    out = tmp_path / "out"
    status, _, err = main(capsys, "batch", str(sites), "-o", str(out), "--risk-draws", "0",
                          "--solve", "tef_target,price_factor", "--summary-csv",
                          str(tmp_path / "s.csv"), "--quiet")
    assert status == 0, err
    rows = list(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8")))
    loaded = {row.inputs["site_name"]: row.inputs for row in load_sites(sites).rows}
    assert len(rows) == len(loaded) >= 3
    for row in rows:
        inputs = loaded[row["site_name"]]
        for name in ("tef_target", "price_factor"):
            value = float(row[f"{name}_at_npv0"])
            assert abs(run(inputs.replace({name: value})).summary["npv"]) < 1
    # the portfolio workbook carries the columns, labelled with the input's label
    from openpyxl import load_workbook

    ws = load_workbook(out / "portfolio.xlsx", read_only=True)["Portfolio"]
    header = [c.value for c in next(ws.iter_rows(max_row=1))]
    assert "TEF target at NPV 0 [fraction]" in header
    assert "Price factor at NPV 0 [ratio]" in header


def test_batch_solve_refuses_a_text_input_before_writing(tmp_path, capsys):
    sites = ROOT / "templates" / "sites-example.csv"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["batch", str(sites), "-o", str(tmp_path / "out"), "--solve",
                  "tef_target,site_name"])
    assert exit_.value.code == 2
    assert "site_name: is text of 1 to 80 characters, not a number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_risk_sheet_what_must_be_true_block(tmp_path):
    from tokenfactory_xl.cli.workbook import template_bytes
    from tokenfactory_xl.tfom.risk import TORNADO_DRIVERS
    from tokenfactory_xl.workbook import risk_values as wr

    inputs = make_inputs({"gpus": 2048})
    path = tmp_path / "site.xlsx"
    path.write_bytes(template_bytes(inputs, 50))
    ws = risk_sheet(path)
    assert ws.get(wr.STATUS) == wr.CURRENT  # the block is under the sheet's stale rule
    reached = 0
    for i, name in enumerate(TORNADO_DRIVERS):
        row = wr.FIRST_MUST + i
        assert ws.get(f"B{row}") == name
        assert ws.get(f"C{row}") == pytest.approx(float(inputs.live(name)))
        if ws.get(f"F{row}") == "NPV 0 here":
            reached += 1
            value = ws.get(f"D{row}")
            assert abs(run(inputs.replace({name: value})).summary["npv"]) < 1
    assert reached >= 5  # TEF, sell-through, price, decline, CapEx, discount rate …


def risk_sheet(path: Path) -> dict[str, object]:
    """The Risk sheet's stored values by coordinate (empty cells absent), read with openpyxl's
    read-only mode: the sheet alone is parsed."""
    from openpyxl import load_workbook

    from tokenfactory_xl.workbook import risk_values as wr

    book = load_workbook(path, data_only=True, read_only=True)
    try:
        return {cell.coordinate: cell.value for row in book[wr.RISK_SHEET].iter_rows()
                for cell in row if cell.value is not None}
    finally:
        book.close()


def test_batch_fills_the_block_only_with_solve(tmp_path, capsys):
    from tokenfactory_xl.workbook import risk_values as wr

    sites = ROOT / "templates" / "sites-example.csv"
    for flag, expect in (([], wr.NOT_COMPUTED), (["--solve", "tef_target"], "tef_target")):
        out = tmp_path / ("with" if flag else "without")
        status, _, err = main(capsys, "batch", str(sites), "-o", str(out), "--risk-draws", "20",
                              "--quiet", *flag)
        assert status == 0, err
        book = next(p for p in out.glob("*.xlsx") if p.name != "portfolio.xlsx")
        ws = risk_sheet(book)
        shown = ws.get(f"F{wr.FIRST_MUST}") if not flag else ws.get(f"B{wr.FIRST_MUST}")
        assert shown == expect
