"""The README's examples run as written, in a scratch copy of the repository.

- every ```python block is executed, every ```pycon block is a doctest;
- every `tokenfactory-xl …` line of a ```bash block runs and exits 0;
- every ```console block is a transcript: each `$ command` runs in a shell (with
  `tokenfactory-xl` on the PATH) and prints exactly the lines below it (stdout and stderr
  together).

The scratch copy holds the repository's files that git tracks or would track, so outputs of
earlier runs in the clone change nothing. Afterwards, every file the examples wrote must be one
`.gitignore` ignores, and none may be under `tests/`.
"""

from __future__ import annotations

import doctest
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.tools import command as tool

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
PROGRAM = "tokenfactory-xl"
GIT = shutil.which("git")

#: The examples build on one another (the workbook the first writes, the next renders): they run
#: in order in one process, whatever the number of test workers (``--dist loadgroup``).
pytestmark = pytest.mark.xdist_group("readme")


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


def repository_files() -> list[str]:
    """The files git tracks or would track (not ignored), relative to the root."""
    if GIT and (ROOT / ".git").exists():
        proc = subprocess.run([GIT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              cwd=ROOT, capture_output=True, check=True)
        return [p for p in proc.stdout.decode().split("\0") if p and (ROOT / p).is_file()]
    skip = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "out"}
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@dataclass
class Scratch:
    """The scratch copy, the files it started with and the examples run in it so far."""

    path: Path
    bin: Path
    before: dict[str, str]
    ran: set[str] = field(default_factory=set)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100",
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Scratch:
    """A copy of the repository's files to run the examples in."""
    base = tmp_path_factory.mktemp("readme")
    target = base / "repo"
    for name in repository_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    shim = base / "bin" / PROGRAM
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tokenfactory_xl "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return Scratch(target, shim.parent, fingerprint(target))


def run_tool(command: str, scratch: Scratch) -> subprocess.CompletedProcess:
    """A `tokenfactory-xl …` line of a bash block."""
    argv = shlex.split(command)
    assert argv[0] == PROGRAM, command
    scratch.ran.add(command)
    return tool.run(*argv[1:], cwd=scratch.path, env=scratch.env())


def run_shell(command: str, scratch: Scratch) -> subprocess.CompletedProcess:
    """A `$ command` line of a console block."""
    scratch.ran.add(command)
    return subprocess.run(["/bin/sh", "-c", command], cwd=scratch.path, env=scratch.env(),
                          capture_output=True, text=True, timeout=600)


def test_readme_has_examples():
    assert blocks("pycon") and commands() and transcripts()


CODE = [("pycon", b) for b in blocks("pycon")] + [("python", b) for b in blocks("python")]


@pytest.mark.parametrize(("language", "code"), CODE, ids=[c.splitlines()[0][:40] for _, c in CODE])
def test_python_examples_run_and_print_what_they_show(language, code, scratch, monkeypatch):
    monkeypatch.chdir(scratch.path)
    if language == "python":
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        return
    test = doctest.DocTestParser().get_doctest(code, {}, "README", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


@pytest.mark.parametrize("command", commands())
def test_bash_examples_exit_zero(command, scratch):
    proc = run_tool(command, scratch)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("command", "expected"), transcripts(), ids=[c for c, _ in transcripts()])
def test_console_transcripts_print_what_they_show(command, expected, scratch):
    proc = run_shell(command, scratch)
    assert (proc.stdout + proc.stderr).rstrip("\n") == expected


@pytest.mark.skipif(GIT is None, reason="needs git to read .gitignore as git does")
def test_examples_write_only_ignored_files_and_nothing_under_tests(scratch):
    # Run here whatever the tests above did not (when this test runs alone).
    for command in commands():
        if command not in scratch.ran:
            run_tool(command, scratch)
    for command, _ in transcripts():
        if command not in scratch.ran:
            run_shell(command, scratch)
    after = fingerprint(scratch.path)
    written = sorted(name for name in after if scratch.before.get(name) != after[name])
    assert written, "the examples wrote nothing: were they run?"
    assert [n for n in written if n.split(os.sep)[0] == "tests"] == []
    subprocess.run([GIT, "init", "-q"], cwd=scratch.path, check=True)
    proc = subprocess.run([GIT, "check-ignore", "--stdin"], cwd=scratch.path,
                          input="\n".join(written), capture_output=True, text=True)
    ignored = set(proc.stdout.splitlines())
    missing = [n for n in written if n not in ignored]
    assert missing == [], f"add these to .gitignore: {missing}"
