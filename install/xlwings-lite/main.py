"""Token Factory functions for xlwings Lite (Excel for Mac, Excel on the web, Excel on Windows).

Paste this file into the xlwings Lite editor's main.py tab and install/xlwings-lite/requirements.txt
into its requirements.txt tab. xlwings Lite registers every decorated function it finds in main.py,
including imported ones: these are the functions of tokenfactory_xl.udfs, the one module that
defines them for desktop Excel too. =TEF(B2,B3), =BREAKEVEN_UTIL(A2:A10001, B2:B10001, 0.25) …
"""

from tokenfactory_xl.udfs import *  # noqa: F403 (exactly the functions listed in its __all__)
