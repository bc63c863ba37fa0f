"""Work on many sites: one workbook per site and the portfolio of them, and what comes back.

:mod:`.batch` writes a workbook per site of a sites file, :mod:`.book` the portfolio workbook,
:mod:`.collect` reads filled-in workbooks back (checked by :mod:`.audit`), :mod:`.track`
appends measured TEF to a workbook's Actuals sheet; :mod:`.workers` and :mod:`.interrupts` run
and stop them. Imports every layer below the command line.
"""
