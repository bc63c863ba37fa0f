"""`tokenfactory-xl summary` and `inputs`, run for real."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference_v2 import reference_run
from tests.test_readme import commands as readme_commands
from tests.tools import command
from tokenfactory_xl import make_inputs
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core.catalogue import INPUTS
from tokenfactory_xl.tfom.operating_model import BRIDGE_NAMES, OUTPUT_NAMES

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The command as a pipe reads it: the whole table, whatever COLUMNS the tests inherit."""
    return command.run(*args, cwd=ROOT, env=WHOLE_WIDTH)


WHOLE_WIDTH = {k: v for k, v in os.environ.items() if k != "COLUMNS"}


def run_entry_point(*args: str) -> subprocess.CompletedProcess:
    return command.process(*args, cwd=ROOT)


def summary_json(capsys, *args: str) -> dict:
    assert cli.main(["summary", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def assert_matches_reference(got: dict, overrides: dict) -> None:
    """``got`` (summary --json) equals the independent reference (tests/reference_v2.py): the
    live scenario at the top level and each scenario under "scenarios"."""
    inputs = make_inputs(overrides)
    values = {k: v for k, v in inputs.items() if k != "cohorts"}
    for scenario, figures in [(inputs.scenario, got)] + list(got["scenarios"].items()):
        expected = reference_run(values, list(inputs.cohorts), scenario)
        for name in OUTPUT_NAMES:
            if expected[name] is None:
                assert figures[name] is None, (scenario, name)
            else:
                assert figures[name] == pytest.approx(expected[name], rel=1e-9), (scenario, name)


def test_summary_json_keys_and_values(capsys):
    got = summary_json(capsys)
    assert list(got) == [*OUTPUT_NAMES, "warning_rules", "not_meaningful", "scenarios",
                         "optimised_minus_base", "bridge"]
    assert list(got["scenarios"]) == ["Base", "Optimised", "Downside"]
    assert got["optimised_minus_base"]["npv"] == pytest.approx(
        got["scenarios"]["Optimised"]["npv"] - got["scenarios"]["Base"]["npv"])
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
    decline=st.floats(0, 0.6).map(lambda d: round(d, 6)),  # no log(1 − d) of 0
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
    assert lines[0] == "Example site — Base scenario (live), 60 months from 2027-01-01"
    assert lines[1].split() == ["Base*", "Optimised", "Downside"]
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
        (["--set", "gpus="], "gpus='': is empty; allowed: a whole number from 1 to 1,000,000; "
                             "give a value, or leave out --set gpus= to use the default (1,024)"),
        (["--set", "tef_target.Optimised= "], "tef_target.Optimised=' ': is empty"),
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
    assert "summary" in run_entry_point("--help").stdout
    assert run_entry_point("--version").stdout.strip().startswith("tokenfactory-xl ")
    assert "--set NAME=VALUE" in run_cli("summary", "--help").stdout


@pytest.mark.parametrize("args", [["--version"], ["summary", "--set", "gpus=0"],
                                  ["summary", "--scenario"], ["inputs", "--json"]])
def test_a_run_in_this_process_answers_as_a_process_does(args):
    """tests/tools/command.py stands in for ``python -m tokenfactory_xl`` in most tests: the
    same status, standard output and standard error (argparse's exit included)."""
    alone, here = run_entry_point(*args), run_cli(*args)
    assert (here.returncode, here.stdout, here.stderr) == (alone.returncode, alone.stdout,
                                                           alone.stderr)


def test_a_run_in_this_process_shows_what_escapes_as_python_does(monkeypatch, tmp_path):
    def broken(_args):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(cli, "run_printing_to", broken)
    proc = run_cli("summary", "-o", str(tmp_path / "summary.txt"))
    assert proc.returncode == 1 and proc.stdout == "" and not (tmp_path / "summary.txt").exists()
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert proc.stderr.endswith("ZeroDivisionError: float division by zero\n")


def test_help_names_only_inputs_that_exist():
    text = run_cli("summary", "--help").stdout
    named = re.findall(r"--set ([a-z_]+)(?:\.[A-Za-z]+)?=", text)
    assert named and set(named) <= {i.name for i in INPUTS}, named


def test_summary_prints_every_figure_with_its_unit():
    out = run_cli("summary").stdout.splitlines()
    end = next(i for i, line in enumerate(out) if line.startswith("  * the live scenario"))
    lines = {line.split()[-1]: line for line in out[2:end]}
    assert set(lines) == {*OUTPUT_NAMES, "uplift_npv", *BRIDGE_NAMES}
    # The defaults (methodology §10.9's worked examples): payback 59.01 months in the Base,
    # 17.46 in the Optimised, none in the Downside; blended price 0.28 × 0.75 × (0.5 + 0.5 ×
    # 0.25) + 1.10 × 0.25, with 20 % of tokens sold at half price: × 0.9 = 0.365625 per Mtok.
    assert re.search(r"Payback\s+59\.01 months\s+17\.46 months\s+none  payback_months$",
                     lines["payback_months"])
    assert re.search(r"\d months  economic_life_months$", lines["economic_life_months"])
    assert "USD 0.3656 per Mtok  blended_price" in lines["blended_price"]
    # §10.8: 1.632415611 on the default site
    assert "USD 1.6324 per GPU-h  gpu_hour_cost" in lines["gpu_hour_cost"]
    assert re.search(r"USD -?[\d,]+  npv$", lines["npv"])
    # §10.9 with every input at its default: NPV −2,910,841 / 38,804,238 / −34,658,966
    assert re.search(r"USD -2,910,841\s+USD 38,804,238\s+USD -34,658,966  npv$", lines["npv"])
    assert re.search(r"USD -6,002,892\s+USD 35,712,187\s+USD -35,644,735  npv_excl_terminal$",
                     lines["npv_excl_terminal"])
    assert re.search(r"USD 41,051,141\s+USD 41,441,949\s+USD 40,960,000  peak_funding$",
                     lines["peak_funding"])
    assert re.search(r"\s0 years\s+0 years\s+0 years  dscr_breaches$",
                     lines["dscr_breaches"])  # no debt
    assert " tokens  tokens_sold_total" in lines["tokens_sold_total"]
    # whole GPUs without decimals: 1,024 × 0.30 ÷ 0.30 in the Base, 1,024 × 0.65 ÷ 0.30 in
    # the Optimised = 2,218.67 (methodology §1)
    assert re.search(r"Equivalent GPUs \(cohort-1 GPUs\)\s+1,024 GPUs\s+2,218\.67 GPUs\s+"
                     r"1,024 GPUs  equivalent_gpus$", lines["equivalent_gpus"])
    # Optimised − Base stands in the Optimised column: 38,804,238.20 + 2,910,841.00, and its
    # bridge: TEF 37,761,711.54 + sell-through 3,953,367.67 (§10.9)
    assert re.search(r"NPV: Optimised − Base\s+USD 41,715,079\s+uplift_npv$", lines["uplift_npv"])
    assert re.search(r"TEF target\s+USD 37,761,712\s+uplift_npv_tef$", lines["uplift_npv_tef"])
    assert re.search(r"\s2\s+1\s+5  warnings$", lines["warnings"])
    # the figures line up on the right
    assert len({line.index(name) for name, line in lines.items()}) == 1
    # each warning in words, with the scenarios where it applies
    warnings = out[end + 2:]
    assert "  ! no market demand limit: every sellable token is assumed sold (Base, Optimised, " \
        "Downside)" in warnings
    assert any(w.startswith("  ! the cash flows change sign more than once") and
               w.endswith("(Downside)") for w in warnings)
    assert len(warnings) == 5  # the rules that fire in some scenario: 2, 1 and 5 of them


def test_summary_json_has_the_bridge_and_the_warnings():
    document = json.loads(run_cli("summary", "--json").stdout)
    bridge = document["bridge"]
    assert set(bridge) == {"uplift_npv", *BRIDGE_NAMES}
    assert sum(bridge[name] for name in BRIDGE_NAMES) == pytest.approx(bridge["uplift_npv"],
                                                                      rel=1e-12)
    assert bridge["uplift_npv_tef"] == pytest.approx(37_761_711.54, abs=0.01)  # §10.9
    assert document["warnings"] == 2 and len(document["warning_rules"]) == 2
    assert "no market demand limit: every sellable token is assumed sold" in \
        document["warning_rules"]
    assert document["scenarios"]["Downside"]["warnings"] == 5
    assert len(document["scenarios"]["Downside"]["warning_rules"]) == 5


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": parser, **action.choices}


def test_every_command_is_registered_and_refuses_abbreviations():
    parsers = all_parsers()
    assert sorted(parsers) == sorted(["", *(name for name, _, _ in cli.COMMANDS)])
    for name, parser in parsers.items():
        assert parser.allow_abbrev is False, name
    proc = run_cli("batch", "templates/sites-example.csv", "--out", "x")
    assert proc.returncode == 2 and "the following arguments are required: -o/--output" \
        in proc.stderr
    assert not (ROOT / "x").exists()


def test_every_command_takes_dash_o_output():
    for name, parser in all_parsers().items():
        if not name:
            continue
        options = {o for a in parser._actions for o in a.option_strings}
        assert {"-o", "--output"} <= options, name
    assert "--outdir" in {o for a in all_parsers()["batch"]._actions for o in a.option_strings}


def test_printing_commands_write_into_the_output_file(tmp_path):
    target = tmp_path / "summary.json"
    proc = run_cli("summary", "--json", "-o", str(target))
    assert proc.returncode == 0 and proc.stdout == ""
    assert list(json.loads(target.read_text(encoding="utf-8")))[:len(OUTPUT_NAMES)] == list(
        OUTPUT_NAMES)
    again = run_cli("summary", "-o", str(target))
    assert again.returncode == 2
    assert again.stderr == f"tokenfactory-xl: -o {target}: exists; nothing was written (add " \
                           f"--force to replace it)\n"
    assert run_cli("summary", "-o", str(target), "--force").returncode == 0
    assert target.read_text(encoding="utf-8").startswith("Example site — Base scenario")
    bad = run_cli("summary", "--set", "gpus=0", "-o", str(tmp_path / "none.txt"))
    assert bad.returncode == 2 and not (tmp_path / "none.txt").exists()


def test_help_loads_no_command_module():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "tokenfactory_xl", "--help"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "collect" in proc.stdout
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    for module in ("openpyxl", "xlwings", "tokenfactory_xl.workbook.build",
                   "tokenfactory_xl.portfolio.batch", "tokenfactory_xl.portfolio.collect",
                   "tokenfactory_xl.capacity.actuals",
                   "tokenfactory_xl.portfolio.audit", "tokenfactory_xl.addin.lite"):
        assert module not in loaded, module


#: What the help examples read from a clone of the repository, copied to where they run.
SEEDED = ("templates", "tests/fixtures/actuals", "tests/fixtures/real")


def help_examples() -> list[tuple[str, str]]:
    """Every example line of every command's --help, with the command whose help shows it (""
    for the program's own): `tokenfactory-xl …`, or a `cp` that makes a file a later example
    changes."""
    found = []
    for name, parser in all_parsers().items():
        for line in (parser.epilog or "").splitlines():
            line = line.strip().removeprefix("example:").strip()
            if line.startswith(("tokenfactory-xl ", "cp ")):
                found.append((name, line))
    return found


def written_then_read(argv: list[str], later: list[str]) -> bool:
    """Whether the file or folder ``argv`` writes (its ``-o``) is named by a later example."""
    if "-o" not in argv:
        return False
    target = argv[argv.index("-o") + 1].rstrip("/")
    return any(target in (a.rstrip("/") for a in shlex.split(e)) for e in later)


def runs_here(k: int, examples: list[str]) -> bool:
    """Whether ``examples[k]`` (every help example, in order) runs in its command's test: a `cp`
    is done, not run; an example the README shows as well runs there, as written
    (tests/test_readme.py), unless a later example here reads what it writes."""
    words = shlex.split(examples[k])
    if words[0] == "cp":
        return False
    return examples[k] not in README_COMMANDS or written_then_read(words[1:], examples[k + 1:])


def files_read(argv: list[str]) -> list[str]:
    """The files and folders an example reads: each path or data file it names, but what it
    writes (``-o``, ``--png``, ``--summary-csv``)."""
    return [word for k, word in enumerate(argv)
            if ("/" in word or word.endswith((".csv", ".json", ".jsonl", ".prom", ".xlsx")))
            and not word.endswith("/")
            and (k == 0 or argv[k - 1] not in ("-o", "--output", "--png", "--summary-csv"))]


README_COMMANDS = frozenset(readme_commands())
HELP_EXAMPLES = help_examples()
#: The commands whose help shows an example that runs here: one test each.
HELP_COMMANDS = sorted({name for k, (name, _) in enumerate(HELP_EXAMPLES)
                        if runs_here(k, [e for _, e in HELP_EXAMPLES])})


def do_example(example: str, folder: Path) -> subprocess.CompletedProcess | None:
    """Run (or, for a `cp`, do) one help example in ``folder``, after checking that every file
    it reads is there."""
    words = shlex.split(example)
    if words[0] == "cp":
        shutil.copyfile(folder / words[1], folder / words[2])
        return None
    argv = words[1:]
    for word in files_read(argv):
        assert (folder / word).exists(), (example, word)
    proc = command.run(*argv, cwd=folder)
    assert proc.returncode == 0, (example, proc.stderr)
    assert "Traceback" not in proc.stderr, example
    return proc


def seed(folder: Path) -> None:
    for name in SEEDED:
        shutil.copytree(ROOT / name, folder / name)


def made_by_other_commands() -> dict[str, int]:
    """Each file an example reads that an example of another command makes: the file → the
    index of the first example that writes it (with ``-o``), which made it."""
    examples = [e for _, e in HELP_EXAMPLES]
    found = {}
    for k, (name, example) in enumerate(HELP_EXAMPLES):
        for word in files_read(shlex.split(example)[1:]):
            writers = [j for j in range(k) if "-o" in (w := shlex.split(examples[j]))
                       and w[w.index("-o") + 1].rstrip("/") == word]
            if writers and HELP_EXAMPLES[writers[0]][0] != name:
                found[word] = writers[0]
    return found


@pytest.fixture(scope="module")
def help_made(tmp_path_factory) -> Path:
    """A folder holding what the help examples of one command write for those of another
    (the workbook `template -o TFOM.xlsx` writes, which `refresh` and `track` read), made
    once per run. Copy from it, never change it."""
    from tests.tools.once import build_once

    def make(folder: Path) -> Path:
        seed(folder)
        for k in sorted(set(made_by_other_commands().values())):
            do_example(HELP_EXAMPLES[k][1], folder)
        return folder

    return build_once(tmp_path_factory, "help-made", make)


def test_help_examples_are_many_and_each_command_s_run():
    examples = [e for _, e in HELP_EXAMPLES]
    assert len(examples) >= 12
    ran = [e for k, e in enumerate(examples) if runs_here(k, examples)]
    assert len(ran) >= 12 and "tokenfactory-xl template -o TFOM.xlsx" in ran
    # what refresh and track read is the workbook the template example writes
    assert made_by_other_commands() == {"TFOM.xlsx": examples.index(
        "tokenfactory-xl template -o TFOM.xlsx")}


@pytest.mark.parametrize("name", HELP_COMMANDS, ids=[n or "program" for n in HELP_COMMANDS])
def test_help_examples_run(name, tmp_path, soffice, help_made):
    """Each example of a command's --help runs as written, in order, in a folder holding what
    a clone would (and what an example of another command wrote before it), and leaves only
    files .gitignore ignores."""
    seed(tmp_path)
    examples = [e for _, e in HELP_EXAMPLES]
    borrowed = made_by_other_commands()
    for k, (owner, example) in enumerate(HELP_EXAMPLES):
        if owner != name:
            continue
        for word in files_read(shlex.split(example)[1:]):
            if word in borrowed and not (tmp_path / word).exists():
                shutil.copyfile(help_made / word, tmp_path / word)
        if runs_here(k, examples) or shlex.split(example)[0] == "cp":
            do_example(example, tmp_path)
    # Run in a clone, the examples would leave only files .gitignore ignores.
    git = shutil.which("git")
    if git:
        written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                         if p.is_file() and not any(str(p.relative_to(tmp_path)).startswith(f)
                                                    for f in SEEDED))
        shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
        subprocess.run([git, "init", "-q"], cwd=tmp_path, check=True)
        proc = subprocess.run([git, "check-ignore", "--stdin"], cwd=tmp_path, text=True,
                              input="\n".join(written), capture_output=True)
        assert sorted(proc.stdout.splitlines()) == written


# -- "-": standard input and output -------------------------------------------------------------
def test_dash_o_dash_prints_to_the_standard_output(tmp_path):
    proc = command.run("summary", "--json", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(proc.stdout))[:len(OUTPUT_NAMES)] == list(OUTPUT_NAMES)
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_a_workbook_written_to_dash_goes_to_the_standard_output(tmp_path):
    proc = command.process("template", "-o", "-", "--set", "gpus=2048", cwd=tmp_path,
                           text=False)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "T.xlsx").write_bytes(proc.stdout)
    import openpyxl

    wb = openpyxl.load_workbook(tmp_path / "T.xlsx", read_only=True)
    name = wb.defined_names["in_gpus"]
    sheet, cell = next(name.destinations)
    assert wb[sheet][cell.replace("$", "")].value == 2048


def test_the_sites_file_can_come_from_the_standard_input(tmp_path):
    sites = (ROOT / "templates" / "sites-example.csv").read_text(encoding="utf-8")
    names = [line.split(",")[0] for line in sites.splitlines()[1:] if line.strip()]
    proc = command.run("batch", "-", "-o", str(tmp_path / "out"), "--risk-draws", "0",
                       "--quiet", cwd=tmp_path, input=sites)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.stem for p in (tmp_path / "out").glob("*.xlsx")) == sorted(
        [*names, "portfolio"])
    bad = (ROOT / "tests" / "data" / "sites-with-mistakes.csv").read_text(encoding="utf-8")
    proc = command.run("batch", "-", "-o", str(tmp_path / "bad"), cwd=tmp_path, input=bad)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tokenfactory-xl: 5 problems in the sites from standard "
                                  "input, so nothing was written:")
    empty = command.run("batch", "-", "-o", str(tmp_path / "none"), cwd=tmp_path, input="")
    assert empty.returncode == 2 and "standard input is empty" in empty.stderr
    assert not (tmp_path / "bad").exists() and not (tmp_path / "none").exists()


def test_summary_fits_the_terminal(monkeypatch):
    wide = command.run("summary", cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "200"}).stdout
    narrow = command.run("summary", cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "80"}).stdout
    assert max(map(len, wide.splitlines())) > 80  # the one-line layout does not fit in 80
    lines = narrow.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[0] == wide.splitlines()[0]
    assert lines[1].split() == ["Base*", "Optimised", "Downside"]
    # each output: its label, unit and name, then the three scenarios' digits
    at = lines.index("  Equivalent GPUs (cohort-1 GPUs) [GPUs]  (equivalent_gpus)")
    assert lines[at + 1].split() == ["1,024", "2,218.67", "1,024"]
    at = lines.index("  Payback [months]  (payback_months)")
    assert lines[at + 1].split() == ["59.01", "17.46", "none"]  # §10.9
    at = lines.index("  Blended price [USD per Mtok]  (blended_price)")
    assert lines[at + 1].split() == ["0.3656"] * 3
    at = lines.index("  NPV: Optimised − Base [USD]  (uplift_npv)")
    assert lines[at + 1].split() == ["41,715,079"]
    # a pipe or a file gets the whole table, whatever the terminal
    assert command.run("summary", cwd=ROOT, env=WHOLE_WIDTH).stdout == wide


def test_a_mistyped_option_gets_the_commands_usage_and_the_option_meant(tmp_path):
    proc = command.run("summary", "--out", "x.txt", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: tokenfactory-xl summary [-h]")
    assert proc.stderr.rstrip().endswith(
        "tokenfactory-xl summary: error: unrecognised arguments: --out (did you mean "
        "--output?), x.txt; `tokenfactory-xl summary --help` lists what it takes")
    proc = command.run("batch", "sites.csv", "-o", "out", "--froce", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: tokenfactory-xl batch [-h] -o OUTDIR")
    assert "unrecognised option: --froce (did you mean --force?)" in proc.stderr
    assert list(tmp_path.iterdir()) == []


# -- --csv wherever a table is printed ------------------------------------------------------------
def test_every_command_with_json_offers_csv():
    for name, parser in all_parsers().items():
        options = {o for a in parser._actions for o in a.option_strings}
        if "--json" in options:
            assert "--csv" in options, name
    proc = run_cli("summary", "--json", "--csv")
    assert proc.returncode == 2 and proc.stderr == ("tokenfactory-xl: --json and --csv: give "
                                                    "one of them\n")


def test_csv_holds_what_json_holds():
    import csv

    figures = json.loads(run_cli("summary", "--json").stdout)
    rows = list(csv.DictReader(io.StringIO(run_cli("summary", "--csv").stdout)))
    bridge = ["uplift_npv_tef", "uplift_npv_sell_through", "uplift_npv_market",
              "uplift_npv_programme"]
    assert [r["name"] for r in rows] == [*OUTPUT_NAMES, "uplift_npv", *bridge]
    for name in ("uplift_npv", *bridge):  # in the Optimised column, as summary prints them
        row = next(r for r in rows if r["name"] == name)
        assert (row["base"], row["optimised"], row["downside"]) == (
            "", repr(float(figures["bridge"][name])), "")
    for row in rows[:len(OUTPUT_NAMES)]:
        for scenario in ("Base", "Optimised", "Downside"):
            want = figures["scenarios"][scenario][row["name"]]
            assert row[scenario.lower()] == ("" if want is None else repr(float(want))
                                             if not isinstance(want, int) else str(want))
    assert float(rows[len(OUTPUT_NAMES)]["optimised"]) == figures["optimised_minus_base"]["npv"]
    tornado = json.loads(run_cli("sensitivity", "--json").stdout)
    drivers = list(csv.DictReader(io.StringIO(run_cli("sensitivity", "--csv").stdout)))
    assert [(d["name"], float(d["npv_low"]), float(d["npv_high"])) for d in drivers] == [
        (d["name"], d["npv_low"], d["npv_high"]) for d in tornado["drivers"]]
    listed = list(csv.DictReader(io.StringIO(run_cli("inputs", "--csv").stdout)))
    assert [r["name"] for r in listed] == [i.name for i in INPUTS]
    sweep = "tests/fixtures/actuals/sglang_llama70b_h200_sweep.jsonl"
    points = list(csv.DictReader(io.StringIO(run_cli(
        "cost", sweep, "--gpu-hour", "2.10", "--gpus", "4", "--ttft-slo-ms", "500",
        "--csv").stdout)))
    assert len(points) == 5 and [p["best"] for p in points] == ["False"] * 3 + ["True", "False"]


def test_inputs_wrap_at_the_terminals_width_and_say_the_same():
    wide = command.run("inputs", cwd=ROOT, env=WHOLE_WIDTH).stdout
    narrow = command.run("inputs", cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "80"}).stdout
    assert max(map(len, narrow.splitlines())) <= 80 < max(map(len, wide.splitlines()))
    assert narrow.split() == wide.split()  # the same words, only the lines break elsewhere


def test_sensitivity_fits_the_terminal():
    narrow = command.run("sensitivity", cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "80"}).stdout
    lines = narrow.splitlines()
    assert max(map(len, lines)) <= 80
    tornado = json.loads(run_cli("sensitivity", "--json").stdout)
    first = tornado["drivers"][0]
    at = next(i for i, line in enumerate(lines) if f"({first['name']}):" in line)
    shown = [float(x.replace(",", "")) for x in lines[at + 1].split()]
    assert shown == [round(first["npv_low"]), round(first["npv_high"]),
                     round(abs(first["npv_high"] - first["npv_low"]))]


def test_cost_and_actuals_fit_the_terminal_and_keep_every_figure():
    sweep = "tests/fixtures/actuals/sglang_llama70b_h200_sweep.jsonl"
    cost = ("cost", sweep, "--gpu-hour", "2.10", "--gpus", "4", "--prefill-decode-ratio", "20",
            "--ttft-slo-ms", "500")
    wide = command.run(*cost, cwd=ROOT, env=WHOLE_WIDTH).stdout
    narrow = command.run(*cost, cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "80"}).stdout
    assert max(map(len, narrow.splitlines())) <= 80 < max(map(len, wide.splitlines()))
    points = json.loads(run_cli(*cost, "--json").stdout)["points"]
    for p in points:  # each run named in full (the wide table cuts it), its figures under it
        lines = narrow.splitlines()
        at = lines.index(f"  {p['label']}" + ("  ← best" if p["label"].endswith("4 of 5)")
                                             else ""))
        assert lines[at + 1].split() == [
            "concurrency", f"{p['concurrency']:,.0f};", "tok/s", "per", "GPU",
            f"{p['tps_per_gpu']:,.1f},", "per", "user", f"{p['tps_per_user']:,.1f}"]
        assert lines[at + 2].split()[:6] == [
            "$/Mtok", "in", f"{p['cost_per_mtok_input']:.4f},", "out",
            f"{p['cost_per_mtok_output']:.4f};", "TTFT"]
    # the notes under the table say the same words, only the lines break elsewhere
    def notes(text: str) -> list[str]:
        return text.split("input/output split by")[1].split()

    assert notes(wide) == notes(narrow)
    actuals = ("actuals", sweep, "--gpus", "4", "--gpu", "H200", "--model", "Llama-3.1-70B",
               "--precision", "bf16", "--batch", "64", "--context", "2048")
    wide = command.run(*actuals, cwd=ROOT, env=WHOLE_WIDTH).stdout
    narrow = command.run(*actuals, cwd=ROOT, env={**WHOLE_WIDTH, "COLUMNS": "80"}).stdout
    assert max(map(len, narrow.splitlines())) <= 80 < max(map(len, wide.splitlines()))
    assert narrow.split() == wide.split()
    assert sweep in narrow.split()  # a path is never broken across lines


def test_a_benchmark_result_can_come_from_the_standard_input():
    result = (ROOT / "tests" / "fixtures" / "actuals" / "vllm_bench_serve.json").read_text()
    piped = command.run("actuals", "-", "--theoretical-tps", "12000", "--json", input=result)
    named = command.run("actuals", "tests/fixtures/actuals/vllm_bench_serve.json",
                        "--theoretical-tps", "12000", "--json")
    assert piped.returncode == 0, piped.stderr
    got, want = json.loads(piped.stdout), json.loads(named.stdout)
    assert got["source"] == "standard input" and got["measured_tps"] == 12_800.0
    assert {k: v for k, v in got.items() if k != "source"} == {
        k: v for k, v in want.items() if k != "source"}
    sweep = (ROOT / "tests" / "fixtures" / "actuals" / "sglang_llama70b_h200_sweep.jsonl")
    proc = command.run("cost", "-", "--gpu-hour", "2.10", "--gpus", "4", "--csv",
                       input=sweep.read_text())
    assert proc.returncode == 0 and proc.stdout.count("standard input (run ") == 5


def test_a_workbook_piped_into_render(tmp_path, soffice):
    workbook = command.process("template", "-o", "-", "--set", "horizon_months=24",
                               cwd=tmp_path, text=False)
    assert workbook.returncode == 0, workbook.stderr
    proc = command.process("render", "-", "-o", "-", cwd=tmp_path, input=workbook.stdout,
                           text=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout[:8] == b"\x89PNG\r\n\x1a\n" and list(tmp_path.iterdir()) == []


def test_summary_loads_neither_openpyxl_nor_xlwings(tmp_path):
    """`summary` is the first answer a user waits for: the model, read back compiled from the
    build cache from the second run on, and nothing of the workbook's."""
    env = {**os.environ, "TOKENFACTORY_XL_CACHE": str(tmp_path / "cache")}
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "tokenfactory_xl",
                               "summary"], cwd=ROOT, capture_output=True, text=True, env=env,
                              timeout=120)
        assert proc.returncode == 0 and "npv_excl_terminal" in proc.stdout
        loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
        for module in ("openpyxl", "xlwings", "tokenfactory_xl.workbook",
                       "tokenfactory_xl.workbook.stencil"):
            assert module not in loaded, module
    assert [p.name.split("-")[:2] for p in (tmp_path / "cache").iterdir()] == [
        ["compiled", "model"]]


def test_the_cohorts_can_come_from_the_standard_input(tmp_path):
    table = "cohort,online_month,gpus\n2,13,512\n"
    (tmp_path / "cohorts.csv").write_text(table, encoding="utf-8")
    named = command.run("summary", "--json", "--cohorts", "cohorts.csv", cwd=tmp_path)
    piped = command.run("summary", "--json", "--cohorts", "-", cwd=tmp_path, input=table)
    assert named.returncode == piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout
    assert json.loads(piped.stdout)["scenarios"]["Base"]["equivalent_gpus"] > 1024
    sites = "site_name,gpus\nA,1024\n"
    both = command.run("batch", "-", "--cohorts", "-", "-o", "out", cwd=tmp_path, input=sites)
    assert both.returncode == 2 and both.stderr == (
        "tokenfactory-xl: SITES - and --cohorts -: the standard input holds one file; give the "
        "sites or the cohorts as a file name\n")
    (tmp_path / "sites.csv").write_text(sites, encoding="utf-8")
    bad = command.run("batch", "sites.csv", "--cohorts", "-", "-o", "out", cwd=tmp_path,
                      input="site_name,cohort,online_month,gpus\nA,2,13,-5\n")
    assert bad.returncode == 2
    assert bad.stderr.startswith("tokenfactory-xl: 1 problem in sites.csv and the cohorts from "
                                 "standard input, so nothing was written:")
    assert not (tmp_path / "out").exists()
    collect = command.run("collect", "-", "-o", "p.xlsx", cwd=tmp_path)
    assert collect.returncode == 2 and "collect reads workbooks from files and folders, not " \
        "from the standard input" in collect.stderr


@pytest.mark.parametrize("argv, what, computes", [
    (["template", "-o", "-"], "-o -: the workbook", "tokenfactory_xl.cli.workbook.template_bytes"),
    (["cost", "x.json", "--gpu-hour", "2", "-o", "-"], "-o -: the workbook",
     "tokenfactory_xl.capacity.actuals.read_files"),
    (["cost", "x.json", "--gpu-hour", "2", "--png", "-"], "--png -: the PNG",
     "tokenfactory_xl.capacity.actuals.read_files"),
])
def test_a_file_for_a_terminal_is_refused_before_anything_is_computed(argv, what, computes,
                                                                      monkeypatch, capsys):
    """``template -o -`` and ``cost -o -``/``--png -`` on a terminal are refused at once: the
    template's 10,000 draws and the benchmark files' reading (and the chart's rendering) are
    never started for a file that would not be written."""
    import io
    import sys

    from tokenfactory_xl.cli.main import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def computed(*args, **kwargs):
        raise AssertionError("computed before the refusal")

    monkeypatch.setattr(computes, computed)
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{what} goes to standard output, which is a terminal" in err
    assert sys.stdout.getvalue() == ""


def test_the_command_keeps_freed_memory_for_its_next_arrays_where_the_c_library_is_glibc(
        monkeypatch):
    """On glibc the command line sets malloc's thresholds once (blocks below 32 MB from the
    heap, up to 256 MB freed at its top kept): a risk run's passes reuse the memory of the
    lines they let go instead of faulting fresh pages in; elsewhere nothing is called."""
    import ctypes

    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, option: int, value: int) -> int:
            calls.append((option, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36")
    cli._keep_freed_memory()
    assert calls == [(-3, 32 << 20), (-1, 256 << 20)]
    calls.clear()
    # set by a command's run, not by importing the module (nor by --help)
    import importlib

    importlib.reload(cli)
    assert calls == []
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert calls == []
    assert cli.main(["inputs", "--json"]) == 0
    assert calls == [(-3, 32 << 20), (-1, 256 << 20)]
    calls.clear()
    for other in ("musl 1.2", ValueError("unrecognized configuration name")):
        def confstr(name: str, other=other) -> str:
            if isinstance(other, Exception):
                raise other
            return other

        monkeypatch.setattr(os, "confstr", confstr)
        cli._keep_freed_memory()
    assert calls == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_risk_run_faults_fewer_pages_in_with_the_commands_malloc_thresholds():
    """The same risk run in a fresh process, once with the command line's malloc thresholds
    set and once with glibc's own: the passes' freed memory kept, far fewer pages are faulted
    in (counted by the system, not timed)."""
    code = ("import sys, resource\n"
            "from tokenfactory_xl.cli.main import _keep_freed_memory\n"
            "if sys.argv[1] == 'command': _keep_freed_memory()\n"
            "from tokenfactory_xl.tfom.inputs import make_inputs\n"
            "from tokenfactory_xl.tfom import risk\n"
            "inputs = make_inputs({'horizon_months': 120})\n"
            "risk.risk(inputs, 500)\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "risk.risk(inputs, 4000)\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    faults = {how: int(subprocess.run([sys.executable, "-c", code, how], capture_output=True,
                                      text=True, env=env, check=True).stdout)
              for how in ("command", "library")}
    assert faults["command"] < 0.5 * faults["library"], faults
