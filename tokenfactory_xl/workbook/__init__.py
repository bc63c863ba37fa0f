"""The TFOM workbook: native Excel formulas with their values stored beside them.

Drawn once, with openpyxl: :mod:`.layout` places each line and writes its cells' formulas,
:mod:`.build` builds the sheets and assembles the workbook, :mod:`.style` is its look, one module
per group of sheets draws them (:mod:`.risk_sheet` and :mod:`.actuals_sheet` the Risk and Actuals
sheets among them). Filled per site, without openpyxl: :mod:`.plan` says where everything is,
:mod:`.values` gives the model's value of every cell, :mod:`.risk_values` the Risk sheet's
figures, :mod:`.charts` the charts' references and caches, :mod:`.stencil` fills a built
template's cells in its zip. Imports the TFOM, files and core.
"""
