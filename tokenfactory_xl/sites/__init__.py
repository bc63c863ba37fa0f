"""Sites files: one row of inputs per site (.csv or .xlsx), and the fleet's cohorts.

:mod:`.load` reads a sites or cohorts file into checked inputs, row by row, saying where each
problem is. Imports the TFOM, files and core.
"""
