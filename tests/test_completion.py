"""Shell completion: the script completes the commands, their options and the --set names."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.tools import command
from tokenfactory_xl.cli import main as cli
from tokenfactory_xl.core.catalogue import INPUTS, SCENARIO_NAMES

BASH = shutil.which("bash")


def complete(script: str, *words: str) -> list[str]:
    """What bash offers after ``words`` (the last is the word being typed) with the script."""
    line = " ".join(f"'{w}'" for w in words)
    probe = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMPREPLY=();"
             " _tokenfactory_xl; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run([BASH, "--norc", "--noprofile", "-c", probe], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


@pytest.fixture(scope="module")
def bash_script() -> str:
    proc = command.run("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_completes_commands_options_and_input_names(bash_script):
    assert complete(bash_script, "tokenfactory-xl", "") == [
        *(name for name, _, _ in cli.COMMANDS), "--help", "--version"]
    assert complete(bash_script, "tokenfactory-xl", "ba") == ["batch"]
    assert complete(bash_script, "tokenfactory-xl", "summary", "--s") == ["--set", "--scenario"]
    assert "--risk-draws" in complete(bash_script, "tokenfactory-xl", "batch", "x.csv", "--")
    # every input of the catalogue after --set, a per-scenario one for each scenario as well
    names = complete(bash_script, "tokenfactory-xl", "summary", "--set", "")
    assert {f"{i.name}=" for i in INPUTS} <= set(names)
    assert complete(bash_script, "tokenfactory-xl", "risk", "--set", "tef_t") == [
        "tef_target=", *(f"tef_target.{s}=" for s in SCENARIO_NAMES)]
    assert complete(bash_script, "tokenfactory-xl", "summary", "--scenario", "") == list(
        SCENARIO_NAMES)


def test_zsh_loads_the_bash_script_and_fish_gets_its_own(bash_script):
    zsh = command.run("completion", "zsh").stdout
    assert "bashcompinit" in zsh and zsh.endswith(bash_script)
    fish = command.run("completion", "fish").stdout.splitlines()
    for name, _, text in cli.COMMANDS:
        quoted = "'" + text.replace("'", "\\'") + "'"  # fish's quoting
        assert f"complete -c tokenfactory-xl -n __fish_use_subcommand -a {name} -d {quoted}" \
            in fish, name
    (set_line,) = [line for line in fish if "__fish_seen_subcommand_from summary'" in line
                   and "-l set" in line]
    assert "gpus= " in set_line and "tef_target.Optimised=" in set_line


def test_an_unknown_shell_is_refused_with_the_ones_there_are():
    proc = command.run("completion", "powershell")
    assert proc.returncode == 2
    assert "invalid choice: 'powershell'" in proc.stderr and "bash" in proc.stderr
