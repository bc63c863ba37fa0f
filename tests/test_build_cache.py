"""The build cache: a kept build is read back, never trusted when it should not be, and gives
exactly the workbook a fresh build gives."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tokenfactory_xl.files import build_cache
from tokenfactory_xl.portfolio.batch import WorkbookFactory
from tokenfactory_xl.tfom import evaluation
from tokenfactory_xl.tfom import operating_model as om
from tokenfactory_xl.tfom.inputs import default_inputs
from tokenfactory_xl.workbook import build as workbook

ROOT = Path(__file__).resolve().parents[1]


class Builds:
    """A build that counts its runs."""

    def __init__(self, value: object):
        self.value, self.runs = value, 0

    def __call__(self) -> object:
        self.runs += 1
        return self.value


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(build_cache.ENV, str(folder))
    return folder


def kept_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_build_is_kept_and_read_back(cache):
    build = Builds({"figures": [1.5, 2.5]})
    assert build_cache.kept("thing", build) == {"figures": [1.5, 2.5]}
    assert build_cache.kept("thing", build) == {"figures": [1.5, 2.5]}
    assert build.runs == 1
    assert kept_files(cache) == [f"thing-{build_cache.fingerprint()}.pickle"]
    if os.name == "posix":
        assert cache.stat().st_mode & 0o777 == 0o700


def test_a_file_cut_short_is_built_anew_and_replaced(cache):
    build_cache.kept("thing", Builds([1, 2, 3]))
    (path,) = cache.iterdir()
    path.write_bytes(path.read_bytes()[:10])
    build = Builds([1, 2, 3])
    assert build_cache.kept("thing", build) == [1, 2, 3]
    assert build.runs == 1
    assert build_cache.kept("thing", build) == [1, 2, 3] and build.runs == 1  # kept again


@pytest.mark.parametrize("isal", [True, False])
def test_a_kept_file_is_read_back_with_or_without_isal(cache, monkeypatch, isal):
    """The file is zlib's format: ISA-L inflates it where its wheel imports, zlib where not,
    and both give the build back (a file cut short still builds anew)."""
    build_cache.fingerprint(True)  # the name kept() gives, with ISA-L's version as every run
    if not isal:
        monkeypatch.setitem(sys.modules, "isal", None)  # import isal then fails
    value = {"text": "x" * 100_000, "figures": list(range(1000))}
    build_cache.kept("thing", Builds(value))
    (path,) = cache.iterdir()
    assert zlib.decompress(path.read_bytes()) == pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    build = Builds(value)
    assert build_cache.kept("thing", build) == value and build.runs == 0
    path.write_bytes(path.read_bytes()[:-20])
    assert build_cache.kept("thing", build) == value and build.runs == 1


def test_a_build_kept_as_it_is_is_read_back_and_a_file_cut_short_built_anew(cache):
    # the workbook factory's way: the pickle itself, no deflate to undo
    value = {"text": "x" * 100_000, "figures": list(range(1000))}
    build_cache.kept("thing", Builds(value), deflated=False)
    (path,) = cache.iterdir()
    assert path.read_bytes() == pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    build = Builds(value)
    assert build_cache.kept("thing", build, deflated=False) == value and build.runs == 0
    assert build_cache.kept("thing", build) == value and build.runs == 0  # either way read
    path.write_bytes(path.read_bytes()[:-20])
    assert build_cache.kept("thing", build, deflated=False) == value and build.runs == 1
    assert path.read_bytes() == pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def test_another_version_s_file_is_not_read(cache):
    cache.mkdir(mode=0o700)
    old = cache / ("thing-" + "0" * len(build_cache.fingerprint()) + ".pickle")
    old.write_bytes(zlib.compress(pickle.dumps("from another version")))
    other = cache / f"other-{build_cache.fingerprint()}.pickle"
    other.write_bytes(zlib.compress(pickle.dumps("another name")))
    assert build_cache.kept("thing", Builds("this version")) == "this version"
    assert old.exists() and other.exists()  # another version's, kept for it


def as_version(monkeypatch, digit: str) -> str:
    """Run :func:`build_cache.kept` as another version of the package would: its fingerprint."""
    fingerprint = digit * len(build_cache.fingerprint())
    monkeypatch.setattr(build_cache, "fingerprint", lambda libraries=True: fingerprint)
    return f"thing-{fingerprint}.pickle"


def test_two_versions_taking_turns_each_read_their_own_build(cache, monkeypatch):
    """Two environments sharing the folder (the add-in's and the command line's) build once
    each, not once each time the other one ran."""
    one, other = Builds("version 1"), Builds("version 2")
    for _ in range(3):
        as_version(monkeypatch, "1")
        assert build_cache.kept("thing", one) == "version 1"
        as_version(monkeypatch, "2")
        assert build_cache.kept("thing", other) == "version 2"
    assert (one.runs, other.runs) == (1, 1)
    assert len(kept_files(cache)) == 2


def test_a_name_keeps_the_versions_used_last(cache, monkeypatch):
    """A fourth version's build removes the build of the version used longest ago: a read marks
    a file used, so the one read last is kept although it was written first."""
    cache.mkdir(mode=0o700)
    names = {}
    for age, digit in ((400, "1"), (300, "2"), (200, "3")):
        names[digit] = as_version(monkeypatch, digit)
        build_cache.kept("thing", Builds(digit))
        os.utime(cache / names[digit], (time.time() - age, time.time() - age))
    as_version(monkeypatch, "1")
    build = Builds("again")
    assert build_cache.kept("thing", build) == "1" and build.runs == 0  # read: used now
    names["4"] = as_version(monkeypatch, "4")
    build_cache.kept("thing", Builds("4"))
    assert build_cache.VERSIONS_KEPT == 3
    assert kept_files(cache) == sorted([names["1"], names["3"], names["4"]])  # 2: used first


def test_a_kept_file_unused_for_long_is_removed_and_no_other_file(cache, monkeypatch):
    cache.mkdir(mode=0o700)
    long_ago = time.time() - (build_cache.UNUSED_DAYS + 1) * 86_400
    fingerprint = "a" * len(build_cache.fingerprint())
    stale = cache / f"variants-0123456789abcdef-site-{fingerprint}.pickle"  # an older release's
    recent = cache / f"variants-0123456789abcdef-site-{'b' * len(fingerprint)}.pickle"
    theirs = [cache / "notes.pickle", cache / f"Thing-{fingerprint}.pickle",
              cache / f"thing-{fingerprint}.pickle.txt"]
    for path in (stale, recent, *theirs):
        path.write_bytes(b"kept")
        os.utime(path, (long_ago, long_ago))
    os.utime(recent)
    build_cache.kept("thing", Builds("now"))
    assert not stale.exists()
    assert recent.exists() and all(path.exists() for path in theirs)


def test_a_build_that_cannot_be_kept_is_still_returned_and_leaves_no_file(cache):
    unpicklable = lambda: "a local function"  # noqa: E731 - pickle refuses a lambda
    assert build_cache.kept("thing", Builds(unpicklable)) is unpicklable
    assert list(cache.iterdir()) == []


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.ENV, "off")
    monkeypatch.chdir(tmp_path)
    build = Builds(7)
    assert build_cache.kept("thing", build) == 7
    assert build_cache.kept("thing", build) == 7
    assert build.runs == 2 and list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_made_does_not_stop_the_build(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(build_cache.ENV, str(blocker / "cache"))
    assert build_cache.kept("thing", Builds("built")) == "built"


@pytest.mark.skipif(os.name != "posix", reason="folder permissions are POSIX modes")
def test_a_folder_others_may_write_to_is_neither_read_nor_written(cache):
    cache.mkdir()
    cache.chmod(0o777)
    planted = cache / f"thing-{build_cache.fingerprint()}.pickle"
    planted.write_bytes(zlib.compress(pickle.dumps("planted")))
    build = Builds("built")
    assert build_cache.kept("thing", build) == "built"
    assert build.runs == 1 and pickle.loads(zlib.decompress(planted.read_bytes())) == "planted"


def test_default_folder_follows_the_platform_convention(monkeypatch, tmp_path):
    monkeypatch.delenv(build_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform not in ("win32", "darwin"):
        assert build_cache.folder() == tmp_path / "tokenfactory_xl"
    monkeypatch.setenv(build_cache.ENV, "  OFF ")
    assert build_cache.folder() is None


def test_the_fingerprint_covers_every_file_of_the_package():
    package = Path(build_cache.__file__).parents[1]
    assert build_cache._PACKAGE == package.resolve()
    names = {p.relative_to(package).as_posix() for p in package.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert {"workbook/build.py", "core/catalogue.py", "data/gpus.csv"} <= names
    assert len(build_cache.fingerprint()) == 20


def test_a_factory_read_back_writes_the_same_bytes_as_a_fresh_one():
    fresh = WorkbookFactory()
    read_back = pickle.loads(pickle.dumps(fresh, protocol=pickle.HIGHEST_PROTOCOL))
    site = default_inputs().replace({"gpus": 2048, "site_name": "Read back"})
    assert read_back.make(site, 50) == fresh.make(site, 50)
    # Where the plan's cells are in the stencil came back with it, named by the plan's lines:
    # the first site found them all without an index of every cell of a sheet.
    assert len(read_back._spots) == len(fresh._spots) > 600
    assert [title for title, sheet in read_back.stencil._sheets.items()
            if "_index" in sheet.__dict__] == []
    for months in (36, 120):  # other runs of blanks, from the same kept positions
        other = site.replace({"horizon_months": months, "site_name": f"{months} months"})
        assert read_back.make(other) == fresh.make(other)


def test_a_plan_read_back_holds_the_model_s_own_lines():
    plan = workbook.plan()
    again = pickle.loads(pickle.dumps(plan))
    assert (again.inputs, again.echoes, again.rows, again.risk_check) == (
        plan.inputs, plan.echoes, plan.rows, plan.risk_check)
    assert [key for key, _ in again.placements()] == [key for key, _ in plan.placements()]
    assert again.copies  # the lines shown again (Years' calendar years) come back too
    for key, place in again.placements():
        assert place.line is om.BY_LINE[key.split("@")[0]]
        before = plan.placement(key)
        assert (place.sheet, place.coords, place.orient) == (before.sheet, before.coords,
                                                             before.orient)


def written(path: Path) -> int:
    """Which file is kept under ``path``: a build kept again is a new file (written beside and
    moved in place); a read changes its time of use, not this."""
    return path.stat().st_ino


def test_the_second_run_reads_the_kept_build_and_writes_the_same_workbook(tmp_path):
    env = {**os.environ, build_cache.ENV: str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    (tmp_path / "sites.csv").write_text("site_name,gpus\nLyon,512\n", encoding="utf-8")
    outputs = []
    for name in ("first", "second"):
        subprocess.run([sys.executable, "-m", "tokenfactory_xl", "batch", "sites.csv", "-o", name,
                        "--risk-draws", "50", "--quiet"], cwd=tmp_path, env=env, check=True,
                       capture_output=True)
        outputs.append((tmp_path / name / "Lyon.xlsx").read_bytes())
        if name == "first":
            kept = {p: written(p) for p in (tmp_path / "cache").iterdir()}
    assert outputs[0] == outputs[1]
    assert any(p.name.startswith("workbook-factory-") for p in kept)
    assert {p: written(p) for p in kept} == kept  # read, not written again


def test_a_template_and_a_batch_share_one_kept_factory(tmp_path):
    # The factory is the same at every deflate level: a batch (level 1) after a template
    # (level 6) reads the build the template kept, and writes what a fresh build writes.
    env = {**os.environ, build_cache.ENV: str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    (tmp_path / "sites.csv").write_text("site_name,gpus\nLyon,512\n", encoding="utf-8")

    def run(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "tokenfactory_xl", *args], cwd=tmp_path, env=env,
                       check=True, capture_output=True)

    run("template", "-o", "t.xlsx")
    kept = {p: written(p) for p in (tmp_path / "cache").iterdir()
            if p.name.startswith("workbook-factory-")}
    assert len(kept) == 1
    run("batch", "sites.csv", "-o", "out", "--risk-draws", "0", "--quiet")
    after = {p: written(p) for p in (tmp_path / "cache").iterdir()
             if p.name.startswith("workbook-factory-")}
    assert after == kept  # read, not built and written again
    site = default_inputs().replace({"site_name": "Lyon", "gpus": 512})
    assert (tmp_path / "out" / "Lyon.xlsx").read_bytes() == WorkbookFactory().make(site)[0]


def test_the_compiled_model_is_kept_and_read_back(cache, monkeypatch):
    """The whole model's compiled code is kept under a fingerprint of the package's code, Python
    and numpy (no openpyxl: ``summary`` reads it without), and read back as it was built."""
    from tokenfactory_xl.tfom import compiler

    fresh = compiler.compile_lines(om.LINES)
    first = compiler.compile_lines(om.LINES, keep="compiled-model")
    assert kept_files(cache) == [f"compiled-model-{build_cache.fingerprint(False)}.pickle"]
    assert build_cache.fingerprint(False) != build_cache.fingerprint()

    def no_compiling(*_args, **_kw):
        raise AssertionError("compiled again")

    monkeypatch.setattr(compiler, "_model_source", no_compiling)
    again = compiler.compile_lines(om.LINES, keep="compiled-model")
    assert again.__source__ == first.__source__ == fresh.__source__
    assert again.inputs == fresh.inputs and again.texts_per_site == fresh.texts_per_site
    inputs = evaluation.formula_inputs(default_inputs())
    want = fresh(inputs, evaluation._formula_constants(), evaluation.LISTS)
    got = again(inputs, evaluation._formula_constants(), evaluation.LISTS)
    assert float(got["out_npv_base"]) == float(want["out_npv_base"])
    assert float(got["out_irr_optimised"]) == float(want["out_irr_optimised"])


def test_the_fingerprint_names_the_deflate_the_stencil_uses():
    from tokenfactory_xl.workbook import stencil

    assert build_cache._deflate() == stencil.DEFLATE


@pytest.mark.parametrize("library", ["openpyxl", "numpy", "isal", "tokenfactory_xl"])
def test_a_library_s_version_is_the_one_its_metadata_gives(library):
    # read from the name of its dist-info folder where it has one beside it (openpyxl, numpy
    # and isal here), else from the metadata (this package: an editable install, or none)
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as by_metadata

    pytest.importorskip(library)
    try:
        expected = by_metadata(library)
    except PackageNotFoundError:
        with pytest.raises(PackageNotFoundError):
            build_cache.version(library)
        return
    assert build_cache.version(library) == expected
