"""tokenfactory_xl: the economics of token factories, in Python and in Excel.

A token factory is an AI inference cluster judged by the tokens it sells, not by the GPUs it
owns. This package turns throughput and latency (TPS, TPM, TTFT) into money (revenue, EBITDA,
ROI) and shows how much of a fleet's theoretical capacity is actually sold.

Data flows one way, inputs → model → outputs, through folders that are layers (each imports
only from those below it; ``docs/architecture.md`` draws them):

- :mod:`~tokenfactory_xl.core` — the input catalogue, the errors, the economics (TEF, TFI,
  breakeven utilisation …), the GPU and LLM catalogues and the throughput they bound;
- :mod:`~tokenfactory_xl.tfom` — the monthly Token Factory Operating Model: its lines declared
  once, one site's checked inputs (:func:`make_inputs`), :func:`run`, risk, solve, statements;
- :mod:`~tokenfactory_xl.files`, :mod:`~tokenfactory_xl.engines` — files written whole and read
  warily; LibreOffice and Gnumeric;
- :mod:`~tokenfactory_xl.workbook`, :mod:`~tokenfactory_xl.sites` — the TFOM workbook in native
  Excel formulas; sites and cohorts files;
- :mod:`~tokenfactory_xl.capacity`, :mod:`~tokenfactory_xl.addin` — measured throughput from
  benchmark files and metrics; the Excel functions (``tokenfactory_xl.udfs``) and their xlwings
  Lite bundle;
- :mod:`~tokenfactory_xl.portfolio` — one workbook per site, the portfolio, collect and track;
- :mod:`~tokenfactory_xl.cli` — the ``tokenfactory-xl`` command line.
"""

#: The version of the package and of the model it computes (version 3 of the TFOM), shown on the
#: workbook's Cover as ``tfom_version`` and in the README.
__version__ = "3.1.5"

__all__ = ["InputError", "Problem", "Result", "SiteInputs", "__version__", "make_inputs", "run"]

#: Where each name of :data:`__all__` is defined. They are imported when first used, so that
#: importing the package (as the command line does first) loads neither numpy nor the model.
_DEFINED_IN = {"InputError": "core.errors", "Problem": "core.errors", "SiteInputs": "tfom.inputs",
               "make_inputs": "tfom.inputs", "Result": "tfom.evaluation", "run": "tfom.evaluation"}


def __getattr__(name: str) -> object:
    if name not in _DEFINED_IN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_DEFINED_IN[name]}", __name__), name)
    globals()[name] = value
    return value
