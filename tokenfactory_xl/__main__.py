"""``python -m tokenfactory_xl`` runs the ``tokenfactory-xl`` command line."""

import sys

from .cli.main import main

sys.exit(main())
