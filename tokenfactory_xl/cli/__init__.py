"""The ``tokenfactory-xl`` command line: every command's parser and entry point.

:mod:`.main` holds :func:`~.main.main` (the console script), the command table and the options
shared by commands; one module per group of commands beside it. The library below never
imports this package: it raises :class:`~tokenfactory_xl.core.errors.TokenFactoryError`, which
``main`` turns into a message and an exit status.
"""
