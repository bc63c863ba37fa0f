"""The Token Factory Operating Model: its lines declared once, evaluated by numpy.

:mod:`.formula` is the expression language's tree, :mod:`.excel` and :mod:`.compiler` its Excel
and numpy renderings, :mod:`.runtime` the spreadsheet functions in numpy; :mod:`.operating_model`
declares every line of the model (a module per section of the TFOM), :mod:`.evaluation` runs it,
:mod:`.inputs` checks one site's inputs, :mod:`.variants` evaluates many variants of one site
(the lines they do not move computed once), and :mod:`.risk`, :mod:`.solve` and
:mod:`.statements` read the compiled model for the risk sheet, "what must be true" and the
three statements. Imports :mod:`tokenfactory_xl.core` and :mod:`tokenfactory_xl.files` (the build
cache keeps the compiled model).
"""
