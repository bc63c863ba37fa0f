"""What Excel would register: classic desktop Excel (VBA + MacroOptions) and Office.js.

Classic: ``tests/tools/regen_golden.py`` imports ``xlwings.udfs`` with pywin32 stand-ins in a
fresh process and generates the VBA module with xlwings' own ``generate_vba_wrapper``; here it is
compared with the committed golden files, and every description and argument help is checked
against Excel's 255-character limit. Office.js: every name is checked against the custom-function
naming rules, against Excel's built-in function names and against cell references.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import regen_golden
from tests.tools.once import build_once
from tokenfactory_xl.addin import cells, udfs

ROOT = Path(__file__).resolve().parents[1]

#: Issue 3's table: the Excel names and their arguments, in order, optional ones with defaults.
TABLE = {
    "TEF": "actual_tps, theoretical_tps",
    "TFI": "tef, sla, sell_through",
    "EQUIV_GPU": "gpus, tef_now, tef_target",
    "AVOIDED_CAPEX": "gpus, tef_now, tef_target, capex_per_gpu",
    "LOAD_FACTOR": "tokens_paid, tokens_theoretical",
    "TPM": "tps",
    "TOKENS_PER_DAY": "tps",
    "BREAKEVEN_UTIL": "gpu_hour_cost, tps_per_gpu, price_per_mtok",
    "MARGIN_AT_UTIL": "gpu_hour_cost, tps_per_gpu, price_per_mtok, util",
    "COST_PER_MTOK": "gpu_hour_cost, tps_per_gpu, util",
    "REVENUE_PER_GPU_HOUR": "tps_per_gpu, price_per_mtok, util",
    "DAILY_TOKEN_VALUE": "tps_per_gpu, price_per_mtok, util",
    "IMPLIED_PRICE_PER_MTOK": "tokens_per_day, gpus, revenue_per_gpu_hour",
    "GPU_HOUR_COST": "capex_per_gpu, salvage_per_gpu, life_years, power_kw, pue, "
                     "price_per_kwh, [opex_per_gpu_hour=0], [discount_rate=0]",
    "BLENDED_PRICE": "price_input, price_output, output_share, [cache_hit_rate=0], "
                     "[price_cached_input=price_input], [batch_share=0], [batch_discount=0.5]",
    "PRICE_AFTER": "price_now, decline_per_quarter, months",
    "ECONOMIC_LIFE_MONTHS": "revenue_per_gpu_hour, cash_cost_per_gpu_hour, decline_per_quarter",
    "SLO_ATTAINMENT": "ttft_p50, ttft_p99, ttft_slo",
    "PAYBACK_MONTHS": "cash_flows",
    "THEORETICAL_TPS": "gpu, model, precision, batch, context_tokens, [gpus_per_replica=1], "
                       "[mbu=1], [mfu=1], [mode=attainable]",
    "MAX_BATCH": "gpu, model, precision, context_tokens, [gpus_per_replica=1]",
    "GPU_SPEC": "gpu, field",
    "MODEL_SPEC": "model, field",
    "BLENDED_CAPACITY": "prefill_tps, decode_tps, output_share",
    "COST_PER_MTOK_INPUT": "gpu_hour_cost, prefill_tps, util",
    "COST_PER_MTOK_OUTPUT": "gpu_hour_cost, decode_tps, util",
    "TOKENS_PER_MW": "tps_per_gpu, power_kw, pue, util",
}
#: What a Python default stands for where the table names another argument.
SAME_AS = {None: "price_input"}


@pytest.fixture(scope="module")
def classic(tmp_path_factory) -> dict:
    """What desktop Excel would register (tests/tools/regen_golden.py in a process of its
    own), asked once per run."""
    def build(_folder) -> dict:
        proc = subprocess.run([sys.executable, "-m", "tests.tools.regen_golden", "--stdout"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return build_once(tmp_path_factory, "classic-registration", build)


def test_the_vba_module_matches_the_golden_file(classic):
    golden = regen_golden.VBA_FILE.read_text(encoding="utf-8")
    assert classic["vba"] == golden, "run: python -m tests.tools.regen_golden, review, commit"


def test_the_registration_matches_the_golden_file(classic):
    golden = regen_golden.REGISTRATION_FILE.read_text(encoding="utf-8")
    assert regen_golden.registration_json(classic["functions"]) == golden


def test_classic_registers_exactly_the_table(classic):
    registered = {}
    for f in classic["functions"]:
        args = []
        for a in f["args"]:
            if "optional" in a:
                default = SAME_AS.get(a["optional"], a["optional"])
                args.append(f"[{a['name']}={default:g}]" if isinstance(default, float | int)
                            else f"[{a['name']}={default}]")
            else:
                args.append(a["name"])
        registered[f["name"]] = ", ".join(args)
    assert registered == TABLE


def test_the_vba_declares_each_function_with_its_arguments(classic):
    declared = dict(re.findall(r"^Function (\w+)\((.*)\)$", classic["vba"], re.M))
    assert set(declared) == set(TABLE)
    for name, args in TABLE.items():
        expected = ", ".join(f"Optional {a[1:].split('=')[0]}" if a.startswith("[") else a
                             for a in args.split(", "))
        assert declared[name] == expected
        assert f'XLPy.CallUDF("tokenfactory_xl.udfs", "{name}", Array(' in classic["vba"]


def test_category_descriptions_and_argument_help_fit_excel(classic):
    for f in classic["functions"]:
        assert f["category"] == "Token Factory"
        assert 20 < len(f["description"]) <= 255, f["name"]
        assert "\n" not in f["description"] and "  " not in f["description"]
        for a in f["args"]:
            assert 10 < len(a["doc"]) <= 255, (f["name"], a["name"])
            assert not a["doc"].startswith("Positional argument"), (f["name"], a["name"])


def test_help_gives_units(classic):
    docs = {a["name"]: a["doc"] for f in classic["functions"] for a in f["args"]}
    assert "tokens per second" in docs["actual_tps"]
    assert "$ per million tokens" in docs["price_per_mtok"]
    assert "fraction, e.g. 65%" in docs["sla"] and "0% to 100%" in docs["sla"]
    assert "$ per GPU-hour" in docs["gpu_hour_cost"]
    assert "1 to 3" in docs["pue"]  # the catalogue's range for the PUE


def test_runs_under_the_classic_decorators(classic):
    assert classic["runtime"] == "classic"
    assert classic["calls"]["TEF"] == [[0.3], ["#DIV/0!"]]
    assert classic["calls"]["TFI"] == "tef=65: looks like a percentage; enter 65% or 0.65"


def test_python_signatures_match_the_table():
    for name, args in TABLE.items():
        params = inspect.signature(getattr(udfs, name)).parameters.values()
        assert [p.name for p in params] == [a.strip("[]").split("=")[0] for a in args.split(", ")]
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        assert all(p.annotation is p.empty for p in params)  # xlwings reads them as converters
    assert udfs.__all__ == list(TABLE)


# -- Office.js custom-function names ---------------------------------------------------------------
BUILTINS = {line.strip() for line in
            (ROOT / "tests" / "data" / "excel_builtin_functions.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
MAX_COLUMN, MAX_ROW = 16_384, 1_048_576  # XFD, Excel's last column and row


def column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number


def looks_like_a_cell(name: str) -> bool:
    a1 = re.fullmatch(r"([A-Z]{1,3})([0-9]+)", name.upper())
    if a1 and column_number(a1[1]) <= MAX_COLUMN and 1 <= int(a1[2]) <= MAX_ROW:
        return True
    r1c1 = re.fullmatch(r"R([0-9]*)C([0-9]*)", name.upper())
    return bool(r1c1) or name.upper() in ("R", "C")


def test_the_cell_reference_check_itself():
    assert looks_like_a_cell("A1") and looks_like_a_cell("XFD1048576")
    assert looks_like_a_cell("TPM1") and looks_like_a_cell("R1C1") and looks_like_a_cell("RC")
    assert not looks_like_a_cell("XFE1") and not looks_like_a_cell("A1048577")
    assert not looks_like_a_cell("TEF") and not looks_like_a_cell("EQUIV_GPU")


def test_the_builtin_list_is_plausible():
    assert {"SUM", "NPV", "IRR", "XLOOKUP", "NORM.S.DIST", "T"} <= BUILTINS
    assert len(BUILTINS) > 450


@pytest.mark.parametrize("name", udfs.__all__)
def test_officejs_would_accept_the_name(name):
    # Office.js ids: letters A-Z, digits, underscores and periods, starting with a letter, at
    # least three characters; xlwings adds a limit of 128.
    assert re.fullmatch(r"[A-Z][A-Z0-9_.]{2,127}", name)
    assert name not in BUILTINS
    assert not looks_like_a_cell(name)
    assert not any(looks_like_a_cell(part) for part in name.split("."))


# -- the xlwings behaviour the error conventions rest on (read in the installed source) ----------
XLWINGS = Path(inspect.getfile(__import__("xlwings"))).parent


def source(relative: str) -> str:
    return (XLWINGS / relative).read_text(encoding="utf-8")


def test_officejs_turns_our_error_strings_into_error_values():
    # read, not imported: xlwings.pro is licensed separately and nothing here may need it
    officejs = source("pro/_xlofficejs.py")
    table = re.search(r"error_to_type = \{(.*?)\}", officejs, re.S)[1]
    for code in (cells.DIV0, cells.NUM, cells.NA):
        assert f'"{code}":' in table
    assert 'isinstance(x, str) and x.startswith("#")' in officejs
    assert "return errorstr_to_errortype(x" in officejs


def test_officejs_takes_an_empty_single_cell_as_the_optional_default():
    calls = source("pro/udfs_officejs.py")
    assert 'args[i] = arg_info.get("optional", None)' in calls


def test_classic_cannot_show_nan_and_puts_an_exception_text_in_the_cell():
    assert re.search(r"np\.isnan\(x\):\s*return \"\"", source("_xlwindows.py"))
    assert 'vba.writeln(fname + " = Err.Description")' in source("udfs.py")


def test_every_argument_keeps_its_range_orientation_and_reads_error_values_as_text(classic):
    for f in classic["functions"]:
        assert set(f["options"]) == {a["name"] for a in f["args"]}
        for arg in f["args"]:
            assert f["options"][arg["name"]] == {"ndim": 2, "err_to_str": True}, (f["name"], arg)


def _officejs_engine():
    """xlwings' own Office.js engine (xlwings Lite and Server read custom-function arguments
    with it), loaded from its file without importing xlwings.pro, which needs a licence key:
    the Excel functions never import it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("xlwings.pro._xlofficejs",
                                                  XLWINGS / "pro" / "_xlofficejs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Engine


def test_an_error_cell_reaches_the_function_as_its_code_and_comes_back_as_that_error():
    engine = _officejs_engine()
    # what Office.js sends for a range holding 210,000, #N/A and an empty cell
    cells = [[210_000.0], [{"type": "Error", "basicValue": "#N/A", "errorType": "NotAvailable"}],
             [""]]
    read = engine.clean_value_data(cells, None, None, None, True)  # err_to_str, as registered
    assert read == [[210_000.0], ["#N/A"], [None]]
    assert udfs.TEF(read, 700_000) == [[0.3], ["#N/A"], [None]]
    # without err_to_str the error would read as an empty cell, and the result be blank
    assert engine.clean_value_data(cells, None, None, None, False)[1] == [None]
    # and "#N/A" goes back to Excel as the error value itself
    officejs = source("pro/_xlofficejs.py")
    assert '"#N/A": "NotAvailable"' in officejs
