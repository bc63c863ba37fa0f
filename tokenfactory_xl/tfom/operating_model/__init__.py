"""The Token Factory Operating Model (TFOM): every line of the model, declared once.

The declarations move to one module per section of the TFOM; until they do, they are all in
:mod:`.timeline`, and this package gives its names.
"""

from .timeline import *  # noqa: F403
