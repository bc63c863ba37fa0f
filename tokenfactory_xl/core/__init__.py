"""The core: what every other layer stands on, and all the Excel functions need.

The input catalogue (:mod:`.catalogue`), the errors a user sees (:mod:`.errors`), the rules for
names and typed numbers (:mod:`.names`, :mod:`.number_text`), the economics of a token factory
(:mod:`.economics`: TEF, TFI, breakeven utilisation …), the GPU and LLM catalogues
(:mod:`.specs`) and the theoretical throughput they bound (:mod:`.roofline`, :mod:`.serving`).
Besides the standard library it imports numpy only and nothing of the package above it: it is
exactly what the xlwings Lite bundle carries.
"""
