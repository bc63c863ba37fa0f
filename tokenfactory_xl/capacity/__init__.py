"""Measured and theoretical capacity: benchmark files read, TEF measured, tokens costed.

:mod:`.measurement` is the record every reader fills, :mod:`.readers` holds one module per
benchmark format, :mod:`.actuals` reads serving output and Prometheus scrapes and writes
measured values back to a sites file, :mod:`.theoretical` and :mod:`.cost` turn the catalogues
and measurements into a GPU's throughput and a million tokens' cost. Imports the layers below
(sites, workbook, files, engines, TFOM, core).
"""
