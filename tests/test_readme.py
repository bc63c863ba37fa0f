"""The README's examples run as written, in a scratch copy of the repository.

- every ```python block is executed, every ```pycon block is a doctest;
- every `tokenfactory-xl …` line of a ```bash block runs and exits 0;
- every ```console block is a transcript: each `$ command` prints exactly the lines below it
  (stdout and stderr together); one with a shell's syntax (a pipe, a variable, a redirection)
  runs in a shell with `tokenfactory-xl` on the PATH, a plain `tokenfactory-xl …` line as the
  bash blocks' lines run (tests/tools/command.py: the same ``main``, status and output).

The scratch copy holds the repository's files that git tracks or would track, so outputs of
earlier runs in the clone change nothing. Every file an example writes must be one `.gitignore`
ignores, and none may be under `tests/`.
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
    return {str(p.relative_to(folder)): _sha256(p)
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def files_named(command: str) -> set[str]:
    """What ``command`` names that a command may write or read as a file: each word but the
    program, its subcommand, options, ``name=value`` settings and numbers, cut to its first
    folder (``sites-out/summary.csv`` is ``sites-out``). A word that names a file of the
    repository, or one of its folders, is left out: no example may change those (the scratch
    copy is checked for it after every example)."""
    words = shlex.split(command)
    found = set()
    for i, word in enumerate(words):
        if word == PROGRAM or (i and words[i - 1] == PROGRAM) or word.startswith("-") \
                or "=" in word or _number(word):
            continue
        name = word.rstrip("/")
        if name in REPOSITORY:
            continue
        found.add(name.split("/")[0])
    return found


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _repository_names() -> frozenset[str]:
    """The repository's files and every folder above them, relative to the root."""
    names = set()
    for name in repository_files():
        parts = name.split("/")
        names.update("/".join(parts[:k]) for k in range(1, len(parts) + 1))
    return frozenset(names)


REPOSITORY = _repository_names()


def prerequisites(index: int) -> list[int]:
    """The examples before ``STEPS[index]`` it builds on, in the README's order: every earlier
    example that names a file or folder it names (the workbook one writes, the next renders),
    and theirs in turn. The others change nothing it reads, so it need not wait for them."""
    names = [files_named(command) for _, command, _ in STEPS]
    found: set[int] = set()
    todo = [index]
    while todo:
        later = todo.pop()
        for k in range(later):
            if k not in found and names[k] & names[later]:
                found.add(k)
                todo.append(k)
    return sorted(found)


@dataclass(frozen=True)
class Ran:
    """One example's status and output, and the files it wrote (relative to the copy)."""

    proc: subprocess.CompletedProcess
    written: list[str]


@dataclass(frozen=True)
class Scratch:
    """The scratch copy of the repository and the files it started with.

    The examples build on one another (the workbook one writes, the next renders), so each runs
    once, after the examples it builds on (:func:`prerequisites`), whatever order the tests run
    in and on whichever worker: :meth:`result` runs those that have not run yet, then the one
    asked for, under a lock, and keeps each one's status, output and the files it wrote in a
    file beside the copy, where the test of that example (on any worker) reads it.
    """

    path: Path
    bin: Path
    before: dict[str, str]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100",
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def result(self, index: int) -> Ran:
        """The status, output and writes of the example ``STEPS[index]``, run after those it
        builds on."""
        record = self.path.parent / "ran.pickle"
        with locked(self.path.parent / "ran.lock"):
            ran: dict[int, Ran] = (
                pickle.loads(record.read_bytes()) if record.exists() else {})
            for k in prerequisites(index) + [index]:
                if k not in ran:
                    kind, command, _ = STEPS[k]
                    run = run_tool if kind == "bash" or plain(command) else run_shell
                    before = stamps(self.path)
                    proc = run(command, self)
                    ran[k] = Ran(proc, self.changed(before))
                    record.write_bytes(pickle.dumps(ran))
            return ran[index]

    def ignored(self, names: list[str]) -> set[str]:
        """Those of ``names`` (relative to the copy) that its ``.gitignore`` ignores."""
        proc = subprocess.run([GIT, "--git-dir", str(self.path.parent / "git"), "--work-tree",
                               str(self.path), "check-ignore", "--stdin"], cwd=self.path,
                              input="\n".join(names), capture_output=True, text=True)
        assert proc.returncode in (0, 1), proc.stderr  # 1: none of them is ignored
        return set(proc.stdout.splitlines())

    def changed(self, before: dict[str, tuple[int, int]]) -> list[str]:
        """The files of the copy made or changed since ``before`` (:func:`stamps`), but those
        of the repository that hold their own content again."""
        after = stamps(self.path)
        touched = sorted(name for name, stamp in after.items() if before.get(name) != stamp)
        return [name for name in touched if name not in self.before
                or _sha256(self.path / name) != self.before[name]]


def stamps(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder``: its size and time of last change, in nanoseconds."""
    found = {}
    for p in folder.rglob("*"):
        if "__pycache__" not in p.parts and p.is_file():
            info = p.stat()
            found[str(p.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return found


def _copy_repository(base: Path) -> Scratch:
    target = base / "repo"
    for name in repository_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    shim = base / "bin" / PROGRAM
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tokenfactory_xl "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    if GIT:  # a repository beside the copy, for git to read its .gitignore as a clone's
        subprocess.run([GIT, "--git-dir", str(base / "git"), "init", "-q"], check=True)
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


#: What makes a console line the shell's to run: a pipe, a list, a redirection, a variable or
#: a command substitution, a glob, a comment, a home folder, a line continued.
SHELL_SYNTAX = re.compile(r"[|&;<>$`()*?\[#~\\\n]")


def plain(command: str) -> bool:
    """Whether a console line is ``tokenfactory-xl`` with arguments and nothing for a shell to
    do but split them (quotes aside): a variable set before it, a pipe after it and the like
    need the shell."""
    words = shlex.split(command)
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", command)
    return bool(words) and words[0] == PROGRAM and not SHELL_SYNTAX.search(unquoted)


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
    proc = scratch.result(index).proc
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("index", CONSOLE, ids=[STEPS[k][1] for k in CONSOLE])
def test_console_transcripts_print_what_they_show(index, scratch):
    proc = scratch.result(index).proc
    assert (proc.stdout + proc.stderr).rstrip("\n") == STEPS[index][2]


def test_a_console_line_with_shell_syntax_runs_in_a_shell():
    assert plain('tokenfactory-xl template -o a.xlsx --set gpus.note="PO 4411, signed 2026-03"')
    assert plain('tokenfactory-xl summary --set site_name="Lyon; Nord"')  # quoted: an argument
    for line in ("tokenfactory-xl summary --json | grep npv",
                 "SOURCE_DATE_EPOCH=1767225600 tokenfactory-xl template -o a.xlsx",
                 "tokenfactory-xl summary > out.txt", "tokenfactory-xl batch ~/sites.csv",
                 "tokenfactory-xl summary \\\n  --json", "cp a.csv b.csv"):
        assert not plain(line), line


def test_every_example_is_a_step():
    assert [c for kind, c, _ in STEPS if kind == "bash"] == commands()
    assert [(c, out) for kind, c, out in STEPS if kind == "console"] == transcripts()


@pytest.mark.skipif(GIT is None, reason="needs git to read .gitignore as git does")
@pytest.mark.parametrize("index", range(len(STEPS)), ids=[command for _, command, _ in STEPS])
def test_examples_write_only_ignored_files_and_nothing_under_tests(index, scratch):
    ran = scratch.result(index)
    assert [n for n in ran.written if n.split(os.sep)[0] == "tests"] == []
    missing = [n for n in ran.written if n not in scratch.ignored(ran.written)]
    assert missing == [], f"add these to .gitignore: {missing}"
    # what an example that succeeds writes with -o is seen as written
    words = shlex.split(STEPS[index][1])
    if "-o" in words and ran.proc.returncode == 0:
        target = words[words.index("-o") + 1].rstrip("/")
        assert any(n == target or n.startswith(target + os.sep) for n in ran.written), ran.written


def test_an_example_builds_on_those_that_name_its_files():
    """The workbook the template example writes is what the render examples read; the batch
    examples into one folder run in the README's order; an example that names no file of its
    own waits for none."""
    index = {command: k for k, (_, command, _) in enumerate(STEPS)}
    template = index["tokenfactory-xl template -o TFOM.xlsx"]
    render = index["tokenfactory-xl render TFOM.xlsx -o scenarios.png --sheet Scenarios"]
    assert prerequisites(render) == [template, render - 1]
    into = [k for k, (_, command, _) in enumerate(STEPS) if "-o sites-out" in command]
    assert len(into) == 3 and prerequisites(into[-1]) == into[:-1]
    assert prerequisites(index["tokenfactory-xl summary"]) == []
    assert files_named("tokenfactory-xl batch templates/sites-example.csv -o out/ --jobs 2 "
                       "--set gpus=2") == {"out"}
