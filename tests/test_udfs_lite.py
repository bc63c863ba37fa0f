"""The xlwings Lite bundle: a main.py that needs only numpy and xlwings and computes what the
package computes, for every Excel function.

The bundle is run in a fresh virtual environment holding only numpy and xlwings (made once per
test session with `python -m venv` and pip), as xlwings Lite's Pyodide holds only those.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.tools import command
from tests.tools.once import build_once
from tokenfactory_xl.addin import lite, udfs

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "install" / "xlwings-lite"

#: Arguments for every Excel function: single values, ranges (lists of rows), empty cells,
#: undefined elements and bad arguments, so the bundle is compared on each path of the code.
CASES: dict[str, list[tuple]] = {
    "TEF": [(210_000, 700_000), ([[210_000], [None], [70_000]], 700_000), (1, 0), ("x", 1)],
    "TFI": [(0.30, 0.995, 0.80), ([[0.3, 0.65]], 0.99, [[0.5], [0.8]]), (0.3, 99.5, 0.8)],
    "EQUIV_GPU": [(1000, 0.30, 0.65), (1000, 0, 0.65), ([[1000], [2048]], 0.3, 0.7)],
    "AVOIDED_CAPEX": [(1000, 0.30, 0.65, 40_000), (-1, 0.3, 0.6, 1)],
    "LOAD_FACTOR": [(2.5e12, 1e13), (1, 0)],
    "TPM": [(10_000,), ([[1], [2], [None]],)],
    "TOKENS_PER_DAY": [(10_000,), ([[1.5, 2.5]],)],
    "BLENDED_CAPACITY": [(60_000, 8_000, 0.25), ([[60_000], [None]], 8_000, 0.25),
                         (60_000, 0, 0.25), (60_000, 8_000, 25)],
    "COST_PER_MTOK_INPUT": [(2.1, 60_000, 0.5), ([[2.1, 3.0]], 60_000, 1), (2.1, 0, 0.5)],
    "COST_PER_MTOK_OUTPUT": [(2.1, 8_000, 0.5), (2.1, [[8_000], [4_000]], 0.8), (2.1, 8_000, 0)],
    "TOKENS_PER_MW": [(10_000, 1.0, 1.3, 0.4), ([[10_000, 20_000]], 1.2, 1.25, 0.4),
                      (10_000, 0, 1.3, 0.4)],
    "BREAKEVEN_UTIL": [(1.89, 5600, 0.25), ([[1.89], [2.52], [1.89]], 5600, [[0.25], [0.25], [0]])],
    "MARGIN_AT_UTIL": [(1.89, 5600, [[0.25, 1.0]], [[0.2], [0.5]]), (1.89, 5600, 0.25, 0)],
    "COST_PER_MTOK": [(1.89, 5600, 0.375), (1.89, 5600, 0)],
    "REVENUE_PER_GPU_HOUR": [(5600, 0.25, 0.375), ([[5600], [None]], 1.1, 0.5)],
    "DAILY_TOKEN_VALUE": [(5600, 0.25, 0.375)],
    "IMPLIED_PRICE_PER_MTOK": [(1e9, 100, 2.0), (0, 100, 2.0)],
    "GPU_HOUR_COST": [(40_000, 0, 4, 1.0, 1.3, 0.08), (40_000, 2_500, 4, 1.0, 1.3, 0.08, 0.15),
                      (40_000, 50_000, 4, 1.0, 1.3, 0.08, None)],
    "BLENDED_PRICE": [(0.28, 1.10, 0.25), (0.28, 1.10, 0.25, 0.5, 0.07, 0.2, 0.5),
                      (0.28, 1.10, 25)],
    "PRICE_AFTER": [(1.0, 0.10, 12), ([[1.0], [2.0]], 0.25, [[3, 6, 9]])],
    "ECONOMIC_LIFE_MONTHS": [(1.0, 0.5, 0.10), (1.0, 0.5, 0), (0.4, 0.5, 0.1)],
    "SLO_ATTAINMENT": [(400, 1500, 2000), (400, 300, 2000)],
    "PAYBACK_MONTHS": [([[-100, 30, 40, 50]],), ([[-100], [10], [10]],)],
    "THEORETICAL_TPS": [("H200", "Llama-3.1-70B", "fp8", 64, 4096, 8),
                        ([["H200"], ["B200"]], "Llama-3.1-70B", "fp8", 64, [[4096, 120000]], 8),
                        ("H201", "Llama-3.1-70B", "fp8", 64, 4096)],
    "MAX_BATCH": [("H200", "Llama-3.1-70B", "fp8", 4096, 8)],
    "GPU_SPEC": [("h200", "fp4_tflops"), ("H200", "bandwidth_tbps"), ("H201", "hbm_gb")],
    "MODEL_SPEC": [("DeepSeek-V3", "kv_latent_dim"), ("Llama-3.1-8B", "source")],
}

# Runs in the bundle's virtual environment: each case's result (or the error it raises).
PROBE = r"""
import json, sys, inspect
import main
cases = json.loads(sys.stdin.read())
out = {"modules": sorted(m for m in sys.modules),
       "public": sorted(n for n in vars(main) if not n.startswith("_")),
       "signatures": {n: str(inspect.signature(getattr(main, n))) for n in main.__all__},
       "results": {}}
for name, calls in cases.items():
    got = []
    for args in calls:
        try:
            got.append(["value", getattr(main, name)(*args)])
        except Exception as exc:
            got.append(["error", type(exc).__name__, str(exc)])
    out["results"][name] = got
print(json.dumps(out))
"""


def package_results() -> dict[str, list]:
    results = {}
    for name, calls in CASES.items():
        got = []
        for args in calls:
            try:
                got.append(["value", _plain(getattr(udfs, name)(*args))])
            except Exception as exc:  # noqa: BLE001 (the message is compared)
                got.append(["error", type(exc).__name__, str(exc)])
        results[name] = got
    return results


def _plain(value):
    """A result as JSON gives it back (tuples → lists, numpy scalars → floats)."""
    return json.loads(json.dumps(value, default=float))


@pytest.fixture(scope="session")
def lite_python(tmp_path_factory) -> str:
    """The python of a fresh virtual environment that holds only numpy and xlwings."""
    return build_once(tmp_path_factory, "lite-venv", _venv)


def _venv(folder: Path) -> str:
    venv.EnvBuilder(with_pip=False).create(folder)
    python = str(folder / ("Scripts" if os.name == "nt" else "bin") / "python")
    install = ["install", "--quiet", "--disable-pip-version-check", "numpy", "xlwings"]
    # This pip installs into the new environment (pip 22.3's --python): no pip of its own to set
    # up there, half the fixture's time. An older pip puts one there first.
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", python, *install],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and "no such option" in proc.stderr:
        subprocess.run([python, "-m", "ensurepip", "--default-pip"], capture_output=True,
                       check=True, timeout=900)
        proc = subprocess.run([python, "-m", "pip", *install], capture_output=True, text=True,
                              timeout=900)
    if proc.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"pip install numpy xlwings failed: {proc.stderr[-500:]}")
        pytest.skip("numpy and xlwings cannot be installed into a fresh venv (no index?)")
    return python


@pytest.fixture(scope="session")
def bundle(tmp_path_factory) -> Path:
    """What `tokenfactory-xl lite -o DIR` writes, written once per run: read it, never change
    it."""
    def build(base: Path) -> Path:
        folder = base / "xlwings-lite"
        proc = command.run("lite", "-o", str(folder), cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"wrote {folder / 'main.py'} and")
        return folder

    return build_once(tmp_path_factory, "lite-bundle", build)


@pytest.fixture(scope="session")
def probed(bundle, lite_python, tmp_path_factory) -> dict:
    """What the bundle's functions answer in the Lite environment, asked once per run."""
    def build(_folder: Path) -> dict:
        proc = subprocess.run([lite_python, "-c", PROBE], cwd=bundle, input=json.dumps(CASES),
                              capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return build_once(tmp_path_factory, "lite-probed", build)


def test_every_function_has_cases():
    assert set(CASES) == set(udfs.__all__)


def test_the_bundle_computes_what_the_package_computes(probed):
    expected = package_results()
    for name in udfs.__all__:
        got, want = probed["results"][name], expected[name]
        assert len(got) == len(want), name
        for case, g, w in zip(CASES[name], got, want, strict=True):
            assert g[0] == w[0], (name, case, g, w)
            if g[0] == "error":
                assert g[1:] == w[1:], (name, case)
            else:
                assert _close(g[1], w[1]), (name, case, g[1], w[1])
    # The seeds' worked examples, as the spec states them.
    assert probed["results"]["TEF"][0] == ["value", 0.3]
    assert probed["results"]["BREAKEVEN_UTIL"][0][1] == pytest.approx(0.375, rel=1e-12)
    assert probed["results"]["EQUIV_GPU"][0][1] == pytest.approx(2166.6666666666665, rel=1e-12)


def _close(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=0)
    return a == b


def test_the_bundle_exposes_exactly_the_excel_functions(probed):
    assert probed["public"] == sorted(udfs.__all__)
    for name in udfs.__all__:
        assert probed["signatures"][name] == str(inspect.signature(getattr(udfs, name)))


def test_the_bundle_needs_only_numpy_and_xlwings(probed, bundle):
    top = {m.split(".")[0] for m in probed["modules"]}
    assert top - set(sys.stdlib_module_names) - {"__main__", "main", "numpy", "xlwings",
                                                 "tokenfactory_xl"} \
        <= {"_distutils_hack", "sitecustomize", "usercustomize"}, top
    assert "openpyxl" not in top and "defusedxml" not in top
    source = (bundle / "main.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\s+tokenfactory_xl", source, re.M)
    assert (bundle / "requirements.txt").read_text(encoding="utf-8").splitlines() == [
        "numpy", "xlwings>=0.35,<0.38"]


def test_the_lite_xlwings_range_ends_where_the_packages_does():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (package,) = [d for d in project["dependencies"] if d.startswith("xlwings")]
    (lite_range,) = [r for r in lite.LITE_REQUIREMENTS if r.startswith("xlwings")]
    assert package.split(",")[-1] == lite_range.split(",")[-1] == "<0.38"
    # 0.35 is where xlwings turns Pyodide's jsnull into None (its own Office.js engine says so)
    assert lite_range.startswith("xlwings>=0.35,")


# Runs main.py twice in one process, as a second paste into the editor does, and calls a
# function each time; a third time after the finder of the first run is gone.
TWICE = r"""
import json, runpy, sys
first = runpy.run_path("main.py", run_name="main")
second = runpy.run_path("main.py", run_name="main")
third = runpy.run_path("main.py", run_name="main")
finders = [f for f in sys.meta_path if getattr(f, "tokenfactory_xl_bundle", False)]
print(json.dumps([first["TEF"](210000, 700000), second["TEF"](210000, 700000),
                  third["MARGIN_AT_UTIL"](1.89, 5600, 0.25, 0.4), len(finders),
                  sys.modules["tokenfactory_xl.addin.udfs"].TEF is third["TEF"]]))
"""


def test_the_bundle_runs_again_in_the_same_process(bundle, lite_python):
    proc = subprocess.run([lite_python, "-c", TWICE], cwd=bundle, capture_output=True,
                          text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr
    tef, again, margin, finders, fresh = json.loads(proc.stdout)
    assert tef == again == 0.3
    assert margin == pytest.approx(0.0625, rel=1e-12)  # seed 004: 1 − 0.375 ÷ 0.40
    assert finders == 1 and fresh is True  # one finder: the last run's modules compute


def test_the_bundle_holds_udfs_and_what_it_imports():
    order = lite.modules()
    assert sorted(order) == ["addin", "addin.cells", "addin.params", "addin.udfs", "core",
                             "core.catalogue", "core.economics", "core.errors", "core.names",
                             "core.number_text", "core.roofline", "core.serving", "core.specs"]
    for position, module in enumerate(order):  # dependencies first
        assert set(lite._imports(module)[0]) <= set(order[:position]), module
    assert set(lite.data_files()) == {"data/gpus.csv", "data/models.csv", "data/method.csv"}


def test_a_module_importing_outside_numpy_and_xlwings_is_refused(monkeypatch):
    real = lite._source
    monkeypatch.setattr(lite, "_source", lambda m: real(m) + (
        "\nimport openpyxl\n" if m == "core.economics" else ""))
    with pytest.raises(lite.BundleError, match="core/economics.py imports openpyxl"):
        lite.modules()


def test_lite_refuses_to_overwrite(bundle):
    proc = command.run("lite", "-o", str(bundle), cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr == (f"tokenfactory-xl: -o {bundle}: main.py and requirements.txt exist; "
                           f"nothing was written (add --force to replace)\n")


def test_the_bundle_holds_the_package_sources_verbatim(bundle):
    tree = ast.parse((bundle / "main.py").read_text(encoding="utf-8"))
    literals = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("_SOURCES", "_DATA")}
    assert literals["_SOURCES"] == {f"tokenfactory_xl.{m}": lite._source(m)
                                    for m in lite.modules()}
    assert literals["_DATA"] == lite.data_files()
