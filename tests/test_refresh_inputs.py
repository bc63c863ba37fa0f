"""refresh writes a workbook anew from the inputs read: a default the model used for an empty
cell is never typed into the new workbook as if someone had typed it."""

from __future__ import annotations

from tests.collect_support import copy, edit_with_openpyxl, set_input
from tests.tools import command


def test_refresh_refuses_to_type_a_default_for_an_empty_input(generated, tmp_path):
    source = edit_with_openpyxl(copy(generated["Alpha"], tmp_path),
                                lambda wb: set_input(wb, "pue", None))
    proc = command.run("refresh", source, "-o", tmp_path / "new.xlsx", "--draws", "50",
                       cwd=tmp_path)
    assert proc.returncode == 2
    assert "1 input cell is empty, and the new workbook would type the default there" \
        in proc.stderr
    assert "pue is empty, so the default 1.3 is used" in proc.stderr   # the catalogue's 1.3
    assert not (tmp_path / "new.xlsx").exists()


def test_refresh_of_a_workbook_with_every_input_typed_writes_it(generated, tmp_path):
    source = copy(generated["Alpha"], tmp_path)
    proc = command.run("refresh", source, "-o", tmp_path / "new.xlsx", "--draws", "50",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "new.xlsx").exists()


def test_refresh_reads_a_decimal_comma_typed_as_text(generated, tmp_path):
    from tokenfactory_xl.files.safe_xlsx import open_xlsx, parse_reference

    source = edit_with_openpyxl(copy(generated["Alpha"], tmp_path),
                                lambda wb: set_input(wb, "opex_per_gpu_hour", "0,150"))
    proc = command.run("refresh", source, "-o", tmp_path / "new.xlsx", "--draws", "50",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open_xlsx(tmp_path / "new.xlsx") as content:
        sheet, coords = parse_reference(content.defined_names["in_opex_per_gpu_hour"])
        assert content.cells(sheet).values[coords[0]] == 0.15   # it wrote 150


def test_refresh_reads_the_standard_input_and_writes_the_standard_output(generated, tmp_path):
    """``refresh - -o -`` writes the workbook ``refresh FILE -o NEW`` writes, byte for byte, and
    says what it wrote on the standard error; without -o it asks where to write."""
    import os

    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000"}
    source = copy(generated["Alpha"], tmp_path)
    named = command.process("refresh", source, "-o", tmp_path / "new.xlsx", "--draws", "50",
                            cwd=tmp_path, env=env)
    assert named.returncode == 0, named.stderr
    piped = command.process("refresh", "-", "-o", "-", "--draws", "50", cwd=tmp_path, env=env,
                            input=source.read_bytes(), text=False)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "new.xlsx").read_bytes()
    told = piped.stderr.decode()
    assert told.startswith("wrote the standard output: Alpha, the Risk sheet computed with 50 "
                           "draws for the inputs of the workbook from standard input")
    asked = command.run("refresh", "-", cwd=tmp_path, input="")
    assert asked.returncode == 2 and "give where the new one goes: -o NEW.xlsx" in asked.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, "new.xlsx"])


def test_refresh_to_a_terminal_is_refused_before_the_draws(generated, tmp_path, monkeypatch,
                                                           capsys):
    """``-o -`` on a terminal is refused at once, not after the Risk sheet's draws."""
    import io
    import sys

    from tokenfactory_xl.cli.main import main
    from tokenfactory_xl.portfolio import batch

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def no_draws():
        raise AssertionError("the workbook was computed before the refusal")

    monkeypatch.setattr(batch, "shared_factory", no_draws)
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert main(["refresh", str(copy(generated["Alpha"], tmp_path)), "-o", "-"]) == 2
    assert "-o -: the workbook goes to standard output, which is a terminal" \
        in capsys.readouterr().err
    assert sys.stdout.getvalue() == ""
