"""The ``tokenfactory-xl lite`` command: the Excel functions for xlwings Lite as one ``main.py``
and the ``requirements.txt`` it needs (:mod:`tokenfactory_xl.addin.lite` writes them).
"""

from __future__ import annotations

import argparse

from ..addin.lite import write_bundle


def cmd_lite(args: argparse.Namespace) -> int:
    written = write_bundle(args.output, force=args.force)
    print(f"wrote {written[0]} and {written[1]}: paste each into the xlwings Lite editor's tab "
          f"of the same name")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tokenfactory-xl lite``."""
    p = subparsers.add_parser(
        "lite",
        description="Write the Excel functions for xlwings Lite (Excel on Windows, on the Mac "
                    "and on the web) as one self-contained main.py and the requirements.txt it "
                    "needs (numpy and xlwings): paste each into the xlwings Lite editor's tab of "
                    "the same name. main.py holds the package's own modules.",
        epilog="example: tokenfactory-xl lite -o xlwings-lite")
    p.add_argument("-o", "--output", default="xlwings-lite", metavar="DIR",
                   help="the folder to write main.py and requirements.txt into (default "
                        "xlwings-lite; created if needed)")
    p.add_argument("--force", action="store_true", help="replace files that exist")
    p.set_defaults(func=cmd_lite)
