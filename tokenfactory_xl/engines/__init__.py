"""The spreadsheet engines the package drives from outside: LibreOffice and Gnumeric.

They recalculate a workbook (the tests' proof that formulas and stored values agree) and draw
its pages (``render``). Imports only :mod:`tokenfactory_xl.core`.
"""
