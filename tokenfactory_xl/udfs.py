"""The Excel functions, at the import path workbooks name: ``tokenfactory_xl.udfs``.

xlwings finds the functions by a module name written into each user's settings (``UDF
Modules``, the ``xlwings.conf`` sheet) and into the VBA wrappers "Import Functions" writes:
``tokenfactory_xl.udfs``. The functions live in :mod:`tokenfactory_xl.addin.udfs`; this module,
and only this one, keeps that name working: importing it gives that module itself (the same
functions, the same file for xlwings to watch for changes).
"""

import sys

from .addin import udfs as _udfs

sys.modules[__name__] = _udfs
