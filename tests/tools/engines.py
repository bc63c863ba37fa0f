"""The ``engines`` marker: the tests that need more than the model in this Python process.

A test is marked when it needs a spreadsheet engine (LibreOffice, Gnumeric), the Node readers,
the xlwings Lite virtual environment, or starts processes of its own (a command line run as a
real process, a batch of worker processes, a signal sent to a run), or reads a fixture made
that way (a real batch's workbooks, workbooks an engine recalculated); and when it runs the
package's own heavy machinery: a whole TFOM workbook built or filled (the template, ``batch``,
``refresh``, ``track``, ``collect``), or the model run for hundreds of variants. Everything else
(the model, the formula language, the catalogue, inputs, sites files, readers, the Excel
functions, the command line's in-process commands) is the everyday loop,
``pytest -m "not engines"``; the plain ``pytest`` runs the whole suite.

The marker is given here, once, from what a test uses (its fixtures, the module it is in, the
calls in its body), so no test has to remember it; ``tests/test_markers.py`` holds a sample of
each kind to it.
"""

from __future__ import annotations

import ast
import functools
import re

import pytest

MARKER = "engines"

#: Fixtures made by an engine, a virtual environment, a real batch or another process.
ENGINE_FIXTURES = frozenset({
    "soffice", "lite_python", "probed", "bundle", "generated", "recalculated",
    "recalculated_risk", "workbooks", "built", "node_env", "readers_env", "gnumeric_values",
    "batch_workbook", "classic", "node", "files", "pages", "ssconvert", "example_out",
    # whole workbooks, built or written by a command
    "book", "fresh", "written", "stored", "workbook", "site48", "noted_template", "help_made",
    "release_outputs", "built_template",
    # every formula of the committed template, read and tokenized
    "formula_tokens",
})

#: Modules whose every test drives an engine or other processes.
ENGINE_MODULES = frozenset({
    "tests/test_gnumeric.py", "tests/test_libreoffice.py", "tests/test_readers.py",
    "tests/test_concurrent_runs.py", "tests/test_collect_resaved.py",
    "tests/workbook/test_engines.py", "tests/workbook/test_print.py", "tests/test_udfs_lite.py",
})

#: Calls in a test's body that start a process or an engine.
ENGINE_CALLS = re.compile(
    # a process, a signal or an engine
    r"\b(?:subprocess\.|Popen\(|run_entry_point\(|command\.process\(|recalculate\(|"
    r"convert\(|render_sheet\(|render_dashboard\(|multiprocessing\.|os\.kill|"
    r"scratch\.result\(|"
    # a whole workbook built, filled or read back
    r"template_bytes\(|build_workbook\(|run_batch\(|WorkbookFactory\(|shared_factory\(|"
    r"save_workbook\(|write_portfolio\(|audit_workbook\(|collect\(|collect_files\(|"
    r"built_template\(|workbook\(tmp_path)"
    # … or by a command: its name as an argument
    r"|[\"'](?:template|batch|refresh|track|collect|render|cost|--jobs|--png)[\"']")

#: Commands that write or read whole workbooks, as a parametrised test names them.
WORKBOOK_COMMANDS = frozenset({"template", "batch", "refresh", "track", "collect", "render",
                               "cost"})

#: Tests of the model that run it for hundreds of variants or sites, by name.
HEAVY_TESTS = frozenset({
    "test_many_sites_in_one_pass_give_each_site_its_own_run_to_the_last_bit",
    "test_every_output_and_line_of_every_scenario_equals_the_reference",
})


def needs_engines(item: pytest.Item) -> bool:
    """Whether ``item`` needs more than this Python process (see the module docstring)."""
    path = item.nodeid.split("::")[0]
    if path in ENGINE_MODULES:
        return True
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and ENGINE_FIXTURES & set(info.names_closure):
        return True
    if getattr(item, "originalname", item.name) in HEAVY_TESTS:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(isinstance(v, str) and v in WORKBOOK_COMMANDS for v in params.values()):
        return True
    function = getattr(item, "function", None)
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    source = _functions(code.co_filename).get(code.co_firstlineno, "")
    return bool(ENGINE_CALLS.search(source))


@functools.cache
def _functions(filename: str) -> dict[int, str]:
    """Each function of a test module by its first line (its first decorator's, as Python
    counts it): its source text. One parse per module, not one per test."""
    try:
        with open(filename, encoding="utf-8") as handle:  # read whole, once
            text = handle.read()
    except OSError:
        return {}
    lines = text.splitlines(keepends=True)
    found = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found[first] = "".join(lines[first - 1:node.end_lineno])
    return found


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: needs LibreOffice, Gnumeric, Node, the Lite virtual environment "
                   "or processes of its own (deselect with -m \"not engines\" for a fast loop)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if needs_engines(item):
            item.add_marker(MARKER)
