"""One reader for numbers typed as text: the sites file, ``--set`` and a returned workbook's
inputs read ``0,150``, ``32 000``, ``1,00,000`` and ``2,7648E+06`` alike, and refuse what reads
two ways naming both readings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools import command
from tokenfactory_xl import make_inputs
from tokenfactory_xl.core.catalogue import BY_NAME, BadValue
from tokenfactory_xl.core.errors import InputError
from tokenfactory_xl.core.number_text import NumberTextError, read_number, two_readings
from tokenfactory_xl.sites.load import load_sites

ROOT = Path(__file__).resolve().parents[1]
NNBSP = "\u202f"  # narrow no-break space: a French Excel's thousands separator


@pytest.mark.parametrize(("text", "value"), [
    ("0,150", 0.15),              # a leading 0 is never a thousands group
    ("1,5", 1.5),
    ("1.234,5", 1234.5),          # German
    ("1,234.5", 1234.5),          # English
    (f"32{NNBSP}000", 32000),     # French, narrow no-break space
    ("32\u00a0000,5", 32000.5),   # no-break space, then a decimal comma
    ("1'000'000", 1e6),           # Swiss
    ("1,00,000", 1e5),            # Indian grouping: one lakh
    ("12,34,56,789.5", 123456789.5),
    ("2,7648E+06", 2764800),      # scientific notation with a decimal comma
    ("2.7648e6", 2764800),
    ("-0,5", -0.5),
])
def test_numbers_read_the_one_way_they_can_mean(text, value):
    assert read_number(text) == (pytest.approx(value), False)


@pytest.mark.parametrize(("text", "readings"), [
    ("1,100", ("1100", "1.100")),
    ("40.000", ("40000", "40.000")),
])
def test_a_number_that_reads_two_ways_is_refused_naming_both(text, readings):
    assert two_readings(text) == readings
    with pytest.raises(NumberTextError) as caught:
        read_number(text)
    assert caught.value.readings == readings
    assert "ambiguous" in caught.value.reason
    # a source whose convention is known reads it
    assert read_number(text, ",")[0] == float(readings[1 if "," in text else 0])


@pytest.mark.parametrize("text", ["1 5", "1,2,3", "1.2.3,4,5", "32 00", "1,0000,000"])
def test_separators_no_convention_writes_are_no_number(text):
    with pytest.raises(NumberTextError) as caught:
        read_number(text)
    assert "fit no way of writing numbers" in caught.value.reason


def test_set_reads_a_decimal_comma_as_one():
    proc = command.run("summary", "--json", "--set", "opex_per_gpu_hour=0,150", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert make_inputs({"opex_per_gpu_hour": "0,150"})["opex_per_gpu_hour"] == 0.15


def test_set_refuses_an_ambiguous_number_saying_why():
    proc = command.run("summary", "--set", "capex_per_gpu=30,000", cwd=ROOT)
    assert proc.returncode == 2
    assert ("capex_per_gpu=30,000: is ambiguous: 30000 if the ',' separates thousands, 30.000 "
            "if it is the decimal separator; type 30000 or 30.000" in proc.stderr)


def test_a_whole_number_input_takes_the_only_whole_reading():
    # 1.024 GPUs cannot be: the comma separates thousands
    assert make_inputs({"gpus": "1,024"})["gpus"] == 1024


def test_special_spaces_and_indian_grouping_in_returned_inputs():
    # a returned workbook's cell typed as text goes through the same catalogue reader
    values = make_inputs({"measured_tps": f"3{NNBSP}072{NNBSP}000", "capex_per_gpu": "1,00,000",
                          "theoretical_tps_per_gpu": "1,0E+04"})
    assert values["measured_tps"] == 3_072_000
    assert values["capex_per_gpu"] == 100_000
    assert values["theoretical_tps_per_gpu"] == 10_000


def test_market_growth_as_a_percentage_is_read_and_a_bare_five_is_refused():
    assert BY_NAME["market_growth_per_quarter"].parse("5%") == pytest.approx(0.05)
    assert BY_NAME["market_growth_per_quarter"].parse("250%") == pytest.approx(2.5)
    with pytest.raises(BadValue) as caught:
        BY_NAME["market_growth_per_quarter"].parse("5")
    assert caught.value.message == "looks like a percentage"
    assert caught.value.fix == "enter 5% or 0.05 (type 500% if 500 % is meant)"
    with pytest.raises(InputError):
        make_inputs({"market_growth_per_quarter": 5})


def test_huge_numbers_typed_or_stored_are_refused_not_a_traceback():
    for value in ("1" + "0" * 400, "9" * 5000, 10**400):
        with pytest.raises(BadValue) as caught:
            BY_NAME["measured_tps"].parse(value)
        assert "too large" in caught.value.message


def test_sites_file_reads_the_same_shapes(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(f"site_name;measured_tps;capex_per_gpu;opex_per_gpu_hour\n"
                    f"A;3{NNBSP}072{NNBSP}000;40.000;0,15\nB;2,7648E+06;35.000,5;0,2\n",
                    encoding="utf-8")
    a, b = (row.inputs for row in load_sites(path).rows)
    assert (a["measured_tps"], a["capex_per_gpu"], a["opex_per_gpu_hour"]) == (3072000, 40000,
                                                                               0.15)
    assert (b["measured_tps"], b["capex_per_gpu"]) == (2764800, 35000.5)


def test_sites_file_with_indian_grouping_reads_decimal_points(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text('site_name,capex_per_gpu,pue\nA,"1,00,000",1.25\n', encoding="utf-8")
    (row,) = load_sites(path).rows
    assert (row.inputs["capex_per_gpu"], row.inputs["pue"]) == (100000, 1.25)


def test_a_figure_too_large_to_compute_to_the_cent_is_refused_not_a_blank_npv():
    # 1e308 per GPU × 1,024 GPUs overflows to infinity: the NPV would show as "none"
    proc = command.run("summary", "--set", "capex_per_gpu=1e308", cwd=ROOT)
    assert proc.returncode == 2
    assert "capex_per_gpu=1e308: is too large: the model computes to the cent only with " \
        "figures up to 1,000,000,000,000" in proc.stderr
    assert BY_NAME["capex_per_gpu"].parse("1e12") == 1e12


@pytest.mark.parametrize(("args", "message"), [
    (["--theoretical-tps", "12,5"], None),                  # 12.5, not 125
    (["--theoretical-tps", "1,500"], "'1,500' is ambiguous: 1500 if the ',' separates "
                                     "thousands, 1.500 if it is the decimal separator"),
])
def test_options_read_numbers_by_the_same_reader(tmp_path, args, message):
    run = ROOT / "tests" / "fixtures" / "actuals" / "vllm_bench_serve.json"
    proc = command.run("actuals", run, "--json", *args, cwd=tmp_path)
    if message is None:
        assert proc.returncode == 0, proc.stderr
        import json

        # the TEF is measured ÷ theoretical: 12,800 tokens/s ÷ 12.5 (the fixture's own field)
        assert json.loads(proc.stdout)["theoretical_tps_per_gpu"] == 12.5
    else:
        assert proc.returncode == 2 and message in proc.stderr


def test_whole_number_options_take_the_whole_reading():
    from tokenfactory_xl.cli.common import fraction_arg, positive_int

    assert positive_int("1,024") == 1024
    assert fraction_arg("0,8") == 0.8 and fraction_arg("80%") == 0.8


@pytest.mark.parametrize(("text", "value"), [
    ("\u22125%", -0.05),          # the minus sign of a report, not a hyphen
    ("\u20130,5%", -0.005),
    ("'1024", 1024),              # Excel's text prefix kept in a CSV
])
def test_a_report_minus_and_a_text_prefix(text, value):
    read_value, percent = read_number(text)
    assert (read_value / (100 if percent else 1)) == pytest.approx(value)


def test_a_hidden_character_in_a_number_is_named():
    with pytest.raises(BadValue) as caught:
        BY_NAME["gpus"].parse("1\u200b024")
    assert caught.value.message.startswith("is not a number: it contains U+200B (a zero-width "
                                           "space) at character 2")
