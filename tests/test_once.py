"""tests/tools/once.py: a costly fixture is made once per run, by whichever worker asks first."""

from __future__ import annotations

import pytest

from tests.tools.once import BuiltInGroups, build_once


class Factory:
    """A worker's ``tmp_path_factory``: its base folder is ``…/run/popen-gwK``."""

    def __init__(self, run, worker: str) -> None:
        self._base = run / f"popen-{worker}"

    def getbasetemp(self):
        return self._base


@pytest.fixture
def workers(tmp_path, monkeypatch) -> list[Factory]:
    """Two workers of one run (under xdist, as PYTEST_XDIST_WORKER tells)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    return [Factory(tmp_path, "gw0"), Factory(tmp_path, "gw1")]


def test_the_second_worker_reads_back_what_the_first_made(workers):
    made = []

    def build(folder):
        made.append(folder)
        (folder / "book.xlsx").write_text("made")
        return {"book": folder / "book.xlsx"}

    first = build_once(workers[0], "books", build)
    second = build_once(workers[1], "books", build)
    assert first == second and len(made) == 1
    assert first["book"].read_text() == "made"


def test_a_build_that_fails_is_tried_again_from_an_empty_folder(workers):
    def fails(folder):
        (folder / "half").write_text("")
        raise RuntimeError("engine crashed")

    with pytest.raises(RuntimeError):
        build_once(workers[0], "books", fails)
    assert build_once(workers[1], "books", lambda folder: sorted(folder.iterdir())) == []


def test_groups_are_made_when_first_asked_for_and_once(workers):
    made = []

    def build(names, folder):
        made.append(names)
        return {name: f"{name} in {folder.name}" for name in names}

    groups = [["a", "b"], ["c"]]
    one, two = (BuiltInGroups(w, "books", groups, build) for w in workers)
    assert made == []
    assert one["c"] == "c in books-1" and made == [["c"]]
    assert two["a"] == "a in books-0" and two["c"] == "c in books-1"
    assert one["b"] == "b in books-0"
    assert made == [["c"], ["a", "b"]]
    assert list(one) == ["a", "b", "c"] and len(two) == 3
    with pytest.raises(KeyError):
        one["d"]
