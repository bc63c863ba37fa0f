"""The ``engines`` marker goes where a test needs more than the model in this process
(``tests/tools/engines.py``), and nowhere else: ``pytest -m "not engines"`` is the fast loop."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

from tests.tools.engines import MARKER, needs_engines


def _item(nodeid="tests/test_model.py::test_x", fixtures=(), function=None, params=None):
    return SimpleNamespace(nodeid=nodeid, name=nodeid.split("::")[-1],
                           originalname=nodeid.split("::")[-1],
                           _fixtureinfo=SimpleNamespace(names_closure=list(fixtures)),
                           function=function,
                           callspec=SimpleNamespace(params=params) if params else None)


#: a command that writes workbooks, and one that does not (named here, not in a test's body,
#: where the rule would read them as the test's own)
WRITES_WORKBOOKS, PRINTS = "batch", "inputs"
ENGINE_FIXTURE, VENV_FIXTURE = "soffice", "lite_python"


def a_model_test():
    assert 0.3 * 700_000 == 210_000


def a_test_starting_a_process():
    subprocess.run(["true"], check=True)


def a_test_building_the_template():
    from tokenfactory_xl.cli.workbook import template_bytes  # noqa: F401 - read, never run

    template_bytes(None)


def test_a_plain_model_test_is_in_the_fast_loop(request):
    assert not needs_engines(_item(function=a_model_test, fixtures=["tmp_path"]))
    assert request.node.get_closest_marker(MARKER) is None  # this very test


def test_an_engine_a_process_or_a_whole_workbook_is_marked():
    assert needs_engines(_item("tests/test_gnumeric.py::test_x"))           # the module
    assert needs_engines(_item(fixtures=["tmp_path", ENGINE_FIXTURE]))      # LibreOffice
    assert needs_engines(_item(fixtures=[VENV_FIXTURE]))                     # the Lite venv
    assert needs_engines(_item(function=a_test_starting_a_process))          # a process
    assert needs_engines(_item(function=a_test_building_the_template))       # the template
    assert needs_engines(_item(params={"command": WRITES_WORKBOOKS}))        # a batch run
    assert not needs_engines(_item(params={"command": PRINTS}))


def test_the_collected_items_carry_the_marker_where_the_rule_says(request):
    """The real collection agrees: none of this module's tests is marked, every test of a
    module that starts processes is (when the run collected it)."""
    items = request.session.items
    here = [item for item in items if item.nodeid.startswith("tests/test_markers.py")]
    assert len(here) == 3 and not any(item.get_closest_marker(MARKER) for item in here)
    processes = [item for item in items if item.nodeid.startswith("tests/test_concurrent_runs")]
    assert all(item.get_closest_marker(MARKER) for item in processes)
