"""tokenfactory_xl: the economics of token factories, in Python and in Excel.

A token factory is an AI inference cluster judged by the tokens it sells, not by the GPUs it
owns. This package turns throughput and latency (TPS, TPM, TTFT) into money (revenue, EBITDA,
ROI) and shows how much of a fleet's theoretical capacity is actually sold:

Data flows one way, inputs → model → outputs:

- :mod:`~tokenfactory_xl.catalogue` — every site input, its unit, default and allowed range;
- :mod:`~tokenfactory_xl.inputs` — one site's checked inputs (:func:`make_inputs`);
- :mod:`~tokenfactory_xl.model` — the formulas: TEF, TFI, breakeven utilisation, equivalent GPUs…;
- :mod:`~tokenfactory_xl.operating_model` — the monthly Token Factory Operating Model (TFOM);
- :mod:`~tokenfactory_xl.specs`, :mod:`~tokenfactory_xl.roofline` — GPU and model catalogues and
  the theoretical throughput they bound; :mod:`~tokenfactory_xl.actuals` — measured throughput
  and latency from serving benchmarks and metrics;
- :mod:`~tokenfactory_xl.udfs` — the Excel functions (xlwings, desktop Excel and xlwings Lite);
- :mod:`~tokenfactory_xl.workbook` — the TFOM workbook in native Excel formulas;
- :mod:`~tokenfactory_xl.sites`, :mod:`~tokenfactory_xl.batch`, :mod:`~tokenfactory_xl.portfolio`
  — one workbook per site of a sites file, and the portfolio of them;
- :mod:`~tokenfactory_xl.cli` — the ``tokenfactory-xl`` command line.
"""

#: The version of the package and of the model it computes (version 3 of the TFOM), shown on the
#: workbook's Cover as ``tfom_version`` and in the README.
__version__ = "3.1.0"

__all__ = ["InputError", "Problem", "Result", "SiteInputs", "__version__", "make_inputs", "run"]

#: Where each name of :data:`__all__` is defined. They are imported when first used, so that
#: importing the package (as the command line does first) loads neither numpy nor the model.
_DEFINED_IN = {"InputError": "errors", "Problem": "errors", "SiteInputs": "inputs",
               "make_inputs": "inputs", "Result": "operating_model", "run": "operating_model"}


def __getattr__(name: str) -> object:
    if name not in _DEFINED_IN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_DEFINED_IN[name]}", __name__), name)
    globals()[name] = value
    return value
