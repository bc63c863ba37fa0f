"""Sites files: one row of inputs per site (.csv or .xlsx), and the fleet's cohorts.

:mod:`.table` reads a table a person made (its header, its cells, numbers typed as text),
:mod:`.load` checks a sites file's rows into inputs, :mod:`.cohorts` a cohorts file's rows.
Imports the TFOM, files and core.
"""
