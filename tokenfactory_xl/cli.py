"""The ``tokenfactory-xl`` command line: thin wrappers around the model, workbook and batch.

Each sub-command lives in the module that owns its idea and registers itself through a
``register(subparsers)`` function listed in :data:`COMMANDS`; this module holds what they share:
``--set NAME=VALUE`` and ``--scenario``, number formatting, and the rule that a user's mistake
prints a message and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from collections.abc import Sequence

from . import __version__
from .catalogue import INPUTS, SCENARIOS, fmt_number
from .errors import InputError, Problem
from .inputs import SiteInputs, make_inputs
from .operating_model import OUTPUTS, run

#: Modules that add a sub-command, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "tokenfactory_xl.cli",
    "tokenfactory_xl.workbook_cli",
    "tokenfactory_xl.batch",
    "tokenfactory_xl.theoretical",
    "tokenfactory_xl.actuals",
    "tokenfactory_xl.cost",
    "tokenfactory_xl.collect",
)

EXIT_USAGE = 2


class UserError(Exception):
    """A mistake of the user's that is not an input value (a missing file, a bad option)."""


# -- shared options ------------------------------------------------------------------------------
def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE`` (repeatable) and ``--scenario``, as every site-level command takes."""
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
        help="override an input (repeatable), e.g. --set gpus=2048 --set sla=99.5%%; a "
             "per-scenario input sets the live scenario's value (tef_target=0.7) or one "
             "scenario's (tef_target.Optimised=0.7). `tokenfactory-xl inputs` lists the names.")
    parser.add_argument("--scenario", choices=SCENARIOS, type=_scenario,
                        help="the live scenario (default: Base)")


def _scenario(text: str) -> str:
    for scenario in SCENARIOS:
        if text.lower() == scenario.lower():
            return scenario
    return text  # argparse's choices check names the allowed values


def inputs_from_args(args: argparse.Namespace) -> SiteInputs:
    """The site's inputs from ``--set`` and ``--scenario``; raises :class:`InputError`."""
    values: dict[str, object] = {}
    problems: list[Problem] = []
    for item in args.sets:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            problems.append(Problem("--set", item, "is not NAME=VALUE", "e.g. --set gpus=2048"))
            continue
        values[name.strip()] = value
    if args.scenario:
        values["scenario"] = args.scenario
    if problems:
        try:
            make_inputs(values)
        except InputError as exc:
            problems += exc.problems
        raise InputError(problems)
    return make_inputs(values)


def format_value(value: float | None, kind: str, currency: str = "") -> str:
    """A summary value as the table shows it (``None`` → ``none``)."""
    if value is None:
        return "none"
    if kind == "fraction":
        return f"{value:.2%}"
    if kind == "money":
        return f"{currency} {value:,.0f}".strip()
    if kind == "price":
        return f"{currency} {value:,.4f}".strip()
    if kind == "tokens":
        return f"{value:,.0f}"
    if kind in ("gpus", "months"):
        return f"{value:,.2f}"
    return fmt_number(value)


# -- argparse types for options that are not site inputs (GPU counts, MBU, intervals) ----------
def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``1,024`` accepted)."""
    try:
        value = int(text.replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (``1,500`` accepted)."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
    return value


def fraction_arg(text: str) -> float:
    """An argparse type for MBU/MFU: a fraction in (0, 1], ``80%`` accepted, ``80`` refused."""
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if 1 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text} looks like a percentage; enter {text}% or "
                                         f"{value / 100:g}")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a fraction above 0, at most 1")
    return value


# -- summary -------------------------------------------------------------------------------------
def cmd_summary(args: argparse.Namespace) -> int:
    inputs = inputs_from_args(args)
    result = run(inputs)
    if args.json:
        print(json.dumps(result.summary, indent=2, allow_nan=False))
        return 0
    currency = str(inputs["currency"])
    print(f"{inputs['site_name']} — {result.scenario} scenario, "
          f"{inputs['horizon_months']:.0f} months from {inputs['start_date']:%Y-%m-%d}")
    width = max(len(o.label) for o in OUTPUTS)
    for out in OUTPUTS:
        shown = format_value(result.summary[out.name], out.kind, currency)
        print(f"  {out.label:<{width}}  {shown:>22}  {out.name}")
    return 0


def cmd_inputs(args: argparse.Namespace) -> int:
    if args.json:
        rows = [{"name": i.name, "label": i.label, "unit": i.unit, "group": i.group,
                 "default": list(i.default) if i.per_scenario else i.default,
                 "per_scenario": i.per_scenario, "allowed": i.allowed,
                 "description": i.description} for i in INPUTS]
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for spec in INPUTS:
        default = (" / ".join(str(d) for d in spec.default) if spec.per_scenario
                   else str(spec.default))
        scen = f"  (per scenario: {' / '.join(SCENARIOS)})" if spec.per_scenario else ""
        print(f"{spec.name}  [{spec.unit}]  default {default}{scen}")
        print(f"    {spec.label}: {spec.description} Allowed: {spec.allowed}.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "summary", help="print the summary outputs of one site",
        description="Compute the TFOM for one site (the defaults, changed with --set) and print "
                    "the summary outputs: TEF, TFI, breakeven utilisation, NPV, IRR, payback …",
        epilog="example: tokenfactory-xl summary --set gpus=2048 --set tef_target=0.65 --json")
    add_input_options(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object keyed by the output names (none → null)")
    p.set_defaults(func=cmd_summary)

    p = subparsers.add_parser(
        "inputs", help="list every input: name, unit, default, what is allowed",
        description="List the input catalogue: the names --set and a sites file take.")
    p.add_argument("--json", action="store_true", help="as a JSON list")
    p.set_defaults(func=cmd_inputs)


# -- entry point ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tokenfactory-xl",
        description="Token-factory economics: from TPS, TTFT and TEF to revenue, EBITDA and ROI.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"tokenfactory-xl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except UserError as exc:
        print(f"tokenfactory-xl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokenfactory-xl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`… | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
