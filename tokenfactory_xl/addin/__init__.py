"""The Excel add-in: the Excel functions (:mod:`.udfs`), their arguments (:mod:`.params`), the
reading of Excel's cells and the answers given back (:mod:`.cells`), and their xlwings Lite
bundle (:mod:`.lite`).

Workbooks and the xlwings settings name the functions' module ``tokenfactory_xl.udfs``; that
path is kept by :mod:`tokenfactory_xl.udfs`, which is :mod:`.udfs` itself.
"""
