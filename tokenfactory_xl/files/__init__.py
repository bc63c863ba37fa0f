"""Files a user hands the package or gets from it: written whole or not at all, read warily.

:mod:`.disk` writes atomically and never over an input, :mod:`.safe_xlsx` opens untrusted
workbooks within limits, :mod:`.ooxml` spells a package's parts as every reader expects, and
:mod:`.build_cache` keeps builds (the compiled model, the template's stencil) between runs, and
:mod:`.a1` spells cell addresses.
Imports only :mod:`tokenfactory_xl.core`.
"""
