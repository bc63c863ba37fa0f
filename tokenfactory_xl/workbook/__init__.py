"""The TFOM workbook: native Excel formulas with their values stored beside them.

:mod:`.build` lays out and builds the workbook with openpyxl, :mod:`.style` is its look,
:mod:`.risk_sheet` and :mod:`.actuals_sheet` its Risk and Actuals sheets, :mod:`.charts` the
charts' references and caches, :mod:`.stencil` fills a built template's cells in its zip. Imports
the TFOM, files and core.
"""
