"""The Excel add-in: the Excel functions (:mod:`.udfs`) and their xlwings Lite bundle
(:mod:`.lite`).

Workbooks and the xlwings settings name the functions' module ``tokenfactory_xl.udfs``; that
path is kept by :mod:`tokenfactory_xl.udfs`, which re-exports :mod:`.udfs`.
"""
