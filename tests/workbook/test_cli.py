"""The ``template`` and ``render`` commands, run for real, as the README shows them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.tools import command
from tests.tools.cells import read_cells
from tokenfactory_xl.cli.workbook import template_bytes
from tokenfactory_xl.tfom.evaluation import run
from tokenfactory_xl.tfom.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return command.run(*args, cwd=cwd, env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def readme_examples(command: str) -> list[list[str]]:
    """The ``tokenfactory-xl <command> …`` lines of the README's workbook section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The TFOM workbook", 1)[1].split("\n## ", 1)[0]
    lines = re.findall(rf"^tokenfactory-xl {command} .*$", section, flags=re.M)
    return [line.split()[1:] for line in lines]


def test_template_writes_the_workbook_with_the_inputs(tmp_path):
    out = cli("template", "-o", "site.xlsx", "--set", "gpus=2048", "--set",
              "measured_tps=6000000", "--scenario", "Optimised", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    stored = read_cells(tmp_path / "site.xlsx")
    assert stored.named("in_gpus") == 2048
    assert stored.named("in_scenario") == "Optimised"
    site = make_inputs({"gpus": 2048, "measured_tps": 6_000_000, "scenario": "Optimised"})
    assert (tmp_path / "site.xlsx").read_bytes() == template_bytes(site)
    # every formula cell stores its value: a previewer reads the figures without Excel
    assert stored.named("out_npv") == run(site).summary["npv"]


def test_template_refuses_to_overwrite_without_force(tmp_path):
    (tmp_path / "TFOM.xlsx").write_bytes(b"keep me")
    out = cli("template", "-o", "TFOM.xlsx", cwd=tmp_path)
    assert out.returncode == 2
    assert "--force" in out.stderr and "Traceback" not in out.stderr
    assert (tmp_path / "TFOM.xlsx").read_bytes() == b"keep me"
    assert cli("template", "-o", "TFOM.xlsx", "--force", cwd=tmp_path).returncode == 0
    assert (tmp_path / "TFOM.xlsx").read_bytes()[:2] == b"PK"


def test_template_bad_input_names_the_input_and_writes_nothing(tmp_path):
    out = cli("template", "-o", "TFOM.xlsx", "--set", "availability=99.5", cwd=tmp_path)
    assert out.returncode == 2
    assert "availability=99.5" in out.stderr and "99.5%" in out.stderr
    assert "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_template_wants_an_xlsx_name(tmp_path):
    out = cli("template", "-o", "TFOM.xls", cwd=tmp_path)
    assert out.returncode == 2 and ".xlsx" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_readme_template_examples_run(tmp_path):
    examples = readme_examples("template")
    assert len(examples) >= 2
    for args in examples:
        out = cli(*args, "--force", cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)


def test_render_draws_the_dashboard(soffice, tmp_path):
    assert cli("template", "-o", "TFOM.xlsx", cwd=tmp_path).returncode == 0
    for args in readme_examples("render"):
        out = cli(*args, cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)
    png = tmp_path / "dashboard.png"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert width > height > 400  # one landscape page
    again = cli("render", "TFOM.xlsx", "-o", "dashboard.png", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    scenarios = (tmp_path / "scenarios.png").read_bytes()  # the README's --sheet example
    assert scenarios[:8] == b"\x89PNG\r\n\x1a\n" and scenarios != data
    assert int.from_bytes(scenarios[16:20], "big") > 400
    wrong = cli("render", "TFOM.xlsx", "-o", "x.png", "--sheet", "Scenario", cwd=tmp_path)
    assert wrong.returncode == 2 and "Scenarios" in wrong.stderr and "Traceback" not in \
        wrong.stderr
    unprinted = cli("render", "TFOM.xlsx", "-o", "t.png", "--sheet", "Timeline", cwd=tmp_path)
    assert unprinted.returncode == 2 and "prints no page" in unprinted.stderr
    assert "Dashboard" in unprinted.stderr and not (tmp_path / "t.png").exists()
    # the Cover's page starts with the model's name, not the sheet's: it is found all the same
    cover = cli("render", "TFOM.xlsx", "-o", "cover.png", "--sheet", "Cover", cwd=tmp_path)
    assert cover.returncode == 0, cover.stderr
    drawn = (tmp_path / "cover.png").read_bytes()
    assert drawn[:8] == b"\x89PNG\r\n\x1a\n" and drawn not in (data, scenarios)
    assert int.from_bytes(drawn[20:24], "big") > int.from_bytes(drawn[16:20], "big")  # upright


def test_render_missing_workbook_is_a_message(tmp_path):
    out = cli("render", "nothere.xlsx", "-o", "d.png", cwd=tmp_path)
    assert out.returncode == 2 and "nothere.xlsx" in out.stderr
    assert "Traceback" not in out.stderr
