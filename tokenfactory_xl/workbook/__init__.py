"""The TFOM workbook: native Excel formulas with their values stored beside them.

:mod:`.layout` places each line and writes its cells' formulas, :mod:`.build` builds the sheets
and assembles the workbook with openpyxl, :mod:`.values` gives the model's value of every cell,
:mod:`.style` is its look, :mod:`.risk_sheet` and :mod:`.actuals_sheet` its Risk and Actuals
sheets, :mod:`.charts` the charts' references and caches, :mod:`.stencil` fills a built
template's cells in its zip. Imports the TFOM, files and core.
"""
