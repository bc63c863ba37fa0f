"""The README's examples run as written.

- every ```python block is executed, every ```pycon block is a doctest;
- every `tokenfactory-xl …` line of a ```bash block runs and exits 0;
- every ```console block is a transcript: each `$ command` runs and prints exactly the lines below
  it (stdout and stderr together).

Commands run in a scratch copy of the repository, so examples may write files (`-o out`).
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
PROGRAM = "tokenfactory-xl"


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def commands() -> list[str]:
    found = []
    for body in blocks("bash"):
        for line in body.splitlines():
            line = line.split(" #", 1)[0].strip()
            if PROGRAM + " " in line + " " and not line.startswith("#"):
                found.append(line[line.index(PROGRAM):])
    return found


def transcripts() -> list[tuple[str, str]]:
    found = []
    for body in blocks("console"):
        for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            found.append((command.strip(), output.rstrip("\n")))
    return found


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A copy of the repository's files to run the examples in."""
    target = tmp_path_factory.mktemp("readme") / "repo"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", "out"))
    return target


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == PROGRAM, command
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "tokenfactory_xl", *argv[1:]], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_readme_has_examples():
    assert blocks("pycon") and commands() and transcripts()


CODE = [("pycon", b) for b in blocks("pycon")] + [("python", b) for b in blocks("python")]


@pytest.mark.parametrize(("language", "code"), CODE, ids=[c.splitlines()[0][:40] for _, c in CODE])
def test_python_examples_run_and_print_what_they_show(language, code, scratch, monkeypatch):
    monkeypatch.chdir(scratch)
    if language == "python":
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        return
    test = doctest.DocTestParser().get_doctest(code, {}, "README", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


@pytest.mark.parametrize("command", commands())
def test_bash_examples_exit_zero(command, scratch):
    proc = shell(command, scratch)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("command", "expected"), transcripts(), ids=[c for c, _ in transcripts()])
def test_console_transcripts_print_what_they_show(command, expected, scratch):
    proc = shell(command, scratch)
    assert (proc.stdout + proc.stderr).rstrip("\n") == expected
