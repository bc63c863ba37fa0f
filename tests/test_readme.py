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
import pickle
import re
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tools import command as tool
from tests.tools.once import build_once, locked

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
PROGRAM = "tokenfactory-xl"
GIT = shutil.which("git")

#: Where xdist honours ``--dist loadgroup``, the examples' tests share one worker; they do not
#: rely on it (see :class:`Scratch`).
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


def steps() -> list[tuple[str, str, str]]:
    """Every example that runs a command, in the README's order: ``("bash", command, "")`` for a
    `tokenfactory-xl …` line of a bash block, ``("console", command, output)`` for a `$ command`
    of a console block."""
    found: list[tuple[int, tuple[str, str, str]]] = []
    for match in BLOCK.finditer(README):
        lang, body = match.group(1), match.group(2)
        if lang == "bash":
            for line in body.splitlines():
                line = line.split(" #", 1)[0].strip()
                if PROGRAM + " " in line + " " and not line.startswith("#"):
                    found.append((match.start(), ("bash", line[line.index(PROGRAM):], "")))
        elif lang == "console":
            for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
                command, _, output = chunk.partition("\n")
                found.append((match.start(), ("console", command.strip(), output.rstrip("\n"))))
    return [step for _, step in found]


STEPS = steps()


@dataclass(frozen=True)
class Scratch:
    """The scratch copy of the repository and the files it started with.

    The examples build on one another (the workbook one writes, the next renders), so each runs
    once, in the README's order, whatever order the tests run in and on whichever worker:
    :meth:`result` runs every example before the one asked for that has not run yet, under a
    lock, and keeps each one's status and output in a file beside the copy, where the test of
    that example (on any worker) reads it.
    """

    path: Path
    bin: Path
    before: dict[str, str]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100",
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def result(self, index: int) -> subprocess.CompletedProcess:
        """The status and output of the example ``STEPS[index]``, run in order."""
        record = self.path.parent / "ran.pickle"
        with locked(self.path.parent / "ran.lock"):
            ran: dict[int, subprocess.CompletedProcess] = (
                pickle.loads(record.read_bytes()) if record.exists() else {})
            for k in range(index + 1):
                if k not in ran:
                    kind, command, _ = STEPS[k]
                    run = run_tool if kind == "bash" else run_shell
                    ran[k] = run(command, self)
                    record.write_bytes(pickle.dumps(ran))
            return ran[index]


def _copy_repository(base: Path) -> Scratch:
    target = base / "repo"
    for name in repository_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    shim = base / "bin" / PROGRAM
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tokenfactory_xl "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return Scratch(target, shim.parent, fingerprint(target))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Scratch:
    """A copy of the repository's files to run the examples in, one per test run."""
    return build_once(tmp_path_factory, "readme", _copy_repository)


def run_tool(command: str, scratch: Scratch) -> subprocess.CompletedProcess:
    """A `tokenfactory-xl …` line of a bash block."""
    argv = shlex.split(command)
    assert argv[0] == PROGRAM, command
    return tool.run(*argv[1:], cwd=scratch.path, env=scratch.env())


def run_shell(command: str, scratch: Scratch) -> subprocess.CompletedProcess:
    """A `$ command` line of a console block."""
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


BASH = [k for k, (kind, _, _) in enumerate(STEPS) if kind == "bash"]
CONSOLE = [k for k, (kind, _, _) in enumerate(STEPS) if kind == "console"]


@pytest.mark.parametrize("index", BASH, ids=[STEPS[k][1] for k in BASH])
def test_bash_examples_exit_zero(index, scratch):
    proc = scratch.result(index)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("index", CONSOLE, ids=[STEPS[k][1] for k in CONSOLE])
def test_console_transcripts_print_what_they_show(index, scratch):
    proc = scratch.result(index)
    assert (proc.stdout + proc.stderr).rstrip("\n") == STEPS[index][2]


def test_every_example_is_a_step():
    assert [c for kind, c, _ in STEPS if kind == "bash"] == commands()
    assert [(c, out) for kind, c, out in STEPS if kind == "console"] == transcripts()


@pytest.mark.skipif(GIT is None, reason="needs git to read .gitignore as git does")
def test_examples_write_only_ignored_files_and_nothing_under_tests(scratch):
    scratch.result(len(STEPS) - 1)  # every example has run (when this test runs alone, here)
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
