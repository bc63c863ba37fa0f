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
from typing import TYPE_CHECKING

from . import __version__
from .catalogue import (
    BY_NAME,
    COHORT_REQUIRED,
    COHORT_SPECS,
    INPUTS,
    MAX_COHORTS,
    SCENARIOS,
    BadValue,
    fmt_number,
)
from .errors import InputError, Problem
from .inputs import make_inputs, split_key

if TYPE_CHECKING:
    from .inputs import SiteInputs

#: Every sub-command, in the order ``--help`` lists them: its name, the module whose
#: ``register(subparsers)`` adds it (the module is imported only when its command runs, so
#: ``--help`` stays fast), and the line ``--help`` shows for it.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("summary", "tokenfactory_xl.cli", "print the summary outputs of one site"),
    ("inputs", "tokenfactory_xl.cli", "list every input: name, unit, default, what is allowed"),
    ("statements", "tokenfactory_xl.statements_cli",
     "income statement, cash-flow statement and balance sheet by calendar year"),
    ("sensitivity", "tokenfactory_xl.risk_cli",
     "the tornado: NPV at a low and a high value of each driver"),
    ("risk", "tokenfactory_xl.risk_cli",
     "Monte Carlo of the NPV: P10, P50, P90, probability of a loss, median IRR"),
    ("template", "tokenfactory_xl.workbook_cli", "write the TFOM workbook (Excel, no macros)"),
    ("render", "tokenfactory_xl.workbook_cli",
     "draw a workbook's Dashboard as a PNG (LibreOffice)"),
    ("refresh", "tokenfactory_xl.workbook_cli",
     "recompute a filled-in workbook's Risk sheet for its inputs, as a new workbook"),
    ("batch", "tokenfactory_xl.batch",
     "write one TFOM workbook per site of a sites file, and a portfolio"),
    ("theoretical", "tokenfactory_xl.theoretical",
     "theoretical TPS per GPU of a catalogue GPU and model (roofline)"),
    ("actuals", "tokenfactory_xl.actuals",
     "measured TPS, TTFT, SLO attainment and TEF from serving output"),
    ("cost", "tokenfactory_xl.cost",
     "throughput per GPU and input/output cost per Mtok from benchmark files"),
    ("collect", "tokenfactory_xl.collect",
     "collect filled-in TFOM workbooks into a portfolio, with an audit report"),
    ("lite", "tokenfactory_xl.lite",
     "write the Excel functions for xlwings Lite (Excel for Mac and the web) as one main.py"),
)

EXIT_USAGE = 2


class UserError(Exception):
    """A mistake of the user's that is not an input value (a missing file, a bad option)."""


# -- shared options ------------------------------------------------------------------------------
def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE`` (repeatable) and ``--scenario``, as every site-level command takes."""
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
        help="override an input (repeatable), e.g. --set gpus=2048 --set availability=99.5%%; "
             "a per-scenario input sets the live scenario's value (tef_target=0.7) or one "
             "scenario's (tef_target.Optimised=0.7). `tokenfactory-xl inputs` lists the names.")
    parser.add_argument("--scenario", choices=SCENARIOS, type=_scenario,
                        help="the live scenario (default: Base)")
    parser.add_argument(
        "--cohorts", metavar="FILE",
        help="the site's further cohorts (.csv or .xlsx: cohort, online_month, gpus and any "
             "cohort column, one row per cohort; with a site_name column, the rows of this "
             "site). `tokenfactory-xl inputs` lists the columns.")


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
        if not value.strip():
            empty = _empty_value(name.strip(), value)
            if empty is not None:
                problems.append(empty)
                continue
        values[name.strip()] = value
    if args.scenario:
        values["scenario"] = args.scenario
    cohort_where: list[str] = []
    if getattr(args, "cohorts", None):
        cohort_where = _cohorts_of_site(args.cohorts, values, problems)
    if problems:
        try:
            make_inputs(values, cohort_where=cohort_where)
        except InputError as exc:
            problems += [p for p in exc.problems if p not in problems]
        raise InputError(problems)
    return make_inputs(values, cohort_where=cohort_where)


def _cohorts_of_site(path: str, values: dict[str, object], problems: list[Problem]
                     ) -> list[str]:
    """Put the site's rows of the cohorts file ``path`` into ``values["cohorts"]``; returns
    where each row was read. With a site_name column, the rows naming the site are taken."""
    from .sites import load_cohorts

    table = load_cohorts(path, need_site_name=False)
    for note in table.notes:
        print(f"tokenfactory-xl: note: {note}", file=sys.stderr)
    problems += table.problems
    rows = list(table.rows)
    if table.has_site_name:
        site = values.get("site_name", BY_NAME["site_name"].default)
        rows = table.for_site(site)
        if not rows and table.rows:
            names = ", ".join(dict.fromkeys(repr(r.site) for r in table.rows))
            problems.append(Problem("site_name", site, f"has no row in {table.name}, whose "
                                    f"sites are {names}",
                                    "give --set site_name=NAME of the site the cohorts belong "
                                    "to, or a file of this site's cohorts only"))
    for row in rows:
        problems += row.problems
    reported = {(p.where, p.name) for p in problems}
    values["cohorts"] = [{k: v for k, v in row.values.items() if (row.where, k) not in reported}
                         for row in rows]
    return [row.where for row in rows]


def _empty_value(key: str, value: str) -> Problem | None:
    """The problem of ``--set NAME=`` with nothing after ``=`` (``None`` for an unknown name,
    which the catalogue check reports with the names it knows)."""
    try:
        name, scenario = split_key(key)
    except BadValue:
        return None
    spec = BY_NAME.get(name)
    if spec is None:
        return None
    default = spec.default[SCENARIOS.index(scenario)] if spec.per_scenario and scenario \
        else spec.default
    if isinstance(default, tuple):
        default = " / ".join(_plain(d) for d in default)
    return Problem(key, value, f"is empty; allowed: {spec.allowed}",
                   f"give a value, or leave out --set {key}= to use the default "
                   f"({_plain(default)})")


def _plain(value: object) -> str:
    return fmt_number(value) if isinstance(value, (int, float)) else str(value)


def format_value(value: float | None, kind: str, currency: str = "", unit: str = "") -> str:
    """A summary value as the table shows it, with its unit (``None`` → ``none``).

    ``kind`` picks the digits (an output's display kind), ``unit`` is the output's unit:
    ``money/Mtok`` with currency ``USD`` gives ``USD 0.3656 per Mtok``, ``months`` gives
    ``54.83 months``, a ``fraction`` shows as a percentage (``fraction/year``: ``0.96% a year``).
    """
    if value is None:
        return "none"
    if kind == "fraction":
        per = unit.partition("/")[2]
        return f"{value:.2%}" + (f" a {per}" if per else "")
    digits = {"money": f"{value:,.0f}", "price": f"{value:,.4f}", "tokens": f"{value:,.0f}",
              "gpus": f"{value:,.2f}", "months": f"{value:,.2f}"}
    number = digits.get(kind) or fmt_number(value)
    if not unit and kind in ("money", "price"):
        unit = "money"
    if unit.startswith("money"):
        rest = unit[len("money"):].lstrip("/")
        return f"{currency or 'money'} {number}" + (f" per {rest}" if rest else "")
    if unit in ("", "ratio", "fraction"):
        return number
    return f"{number} {unit}"


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
    from .operating_model import BRIDGE_LINES, BRIDGE_NAMES, OUTPUTS, run

    inputs = inputs_from_args(args)
    result = run(inputs)
    live = result.scenarios[result.scenario]
    if args.json:
        bridge = {"uplift_npv": result.uplift["npv"],
                  **{name: result.uplift[name] for name in BRIDGE_NAMES}}
        document = {**result.summary, "warning_rules": list(live.warnings),
                    "scenarios": {name: {**sc.summary, "warning_rules": list(sc.warnings)}
                                  for name, sc in result.scenarios.items()},
                    "optimised_minus_base": {k: v for k, v in result.uplift.items()
                                             if k not in BRIDGE_NAMES},
                    "bridge": bridge}
        print(json.dumps(document, indent=2, allow_nan=False))
        return 0
    currency = str(inputs["currency"])
    cohorts = len(inputs.cohorts)
    fleet = f", {cohorts + 1} cohorts" if cohorts else ""
    print(f"{inputs['site_name']} — {result.scenario} scenario (live), "
          f"{inputs['horizon_months']:.0f} months from {inputs['start_date']:%Y-%m-%d}{fleet}")
    names = list(result.scenarios)
    rows = [(o.label, [format_value(result.scenarios[n].summary[o.name], o.kind, currency, o.unit)
                       for n in names], o.name) for o in OUTPUTS]
    rows.append(("NPV: Optimised − Base", ["", format_value(result.uplift["npv"], "money",
                                                           currency, "money"), ""], "uplift_npv"))
    for line in BRIDGE_LINES:  # the uplift taken apart (TFOM-SPEC §10.3)
        step = line.meta["output"]
        rows.append((f"  {line.label.removeprefix('NPV uplift: ')}",
                     ["", format_value(result.uplift[step], "money", currency, "money"), ""],
                     step))
    marked = [f"{n}*" if n == result.scenario else n for n in names]
    width = max(len(label) for label, _, _ in rows)
    right = [max(len(texts[j]) for _, texts, _ in rows + [("", marked, "")])
             for j in range(len(names))]
    print(f"  {'':<{width}}  " + "  ".join(f"{n:>{r}}" for n, r in zip(marked, right,
                                                                         strict=True)))
    for label, texts, name in rows:
        cells = "  ".join(f"{t:>{r}}" for t, r in zip(texts, right, strict=True))
        print(f"  {label:<{width}}  {cells}  {name}")
    print("  * the live scenario (--scenario); --json gives its figures and every scenario's")
    fired: dict[str, list[str]] = {}
    for name, sc in result.scenarios.items():
        for text in sc.warnings:
            fired.setdefault(text, []).append(name)
    if fired:
        print("Warnings (they do not make the figures wrong; read them before the figures):")
        for text, where in fired.items():
            print(f"  ! {text} ({', '.join(where)})")
    return 0


def cmd_inputs(args: argparse.Namespace) -> int:
    if args.json:
        rows = [{"name": i.name, "label": i.label, "unit": i.unit, "group": i.group,
                 "default": list(i.default) if i.per_scenario else i.default,
                 "per_scenario": i.per_scenario, "allowed": i.allowed,
                 "description": i.description} for i in INPUTS]
        cohorts = [{"name": c.name, "label": c.label, "unit": c.unit,
                    "required": c.name in COHORT_REQUIRED, "allowed": c.allowed,
                    "description": c.description} for c in COHORT_SPECS]
        print(json.dumps({"inputs": rows, "cohort_columns": cohorts} if args.cohorts else rows,
                         indent=2, default=str))
        return 0
    for spec in INPUTS:
        default = (" / ".join(str(d) for d in spec.default) if spec.per_scenario
                   else str(spec.default))
        scen = f"  (per scenario: {' / '.join(SCENARIOS)})" if spec.per_scenario else ""
        print(f"{spec.name}  [{spec.unit}]  default {default}{scen}")
        print(f"    {spec.label}: {spec.description} Allowed: {spec.allowed}.")
    print(f"\nCohort columns: a cohorts table (--cohorts FILE, or a sheet named cohorts in a sites "
          f"workbook) has one row per cohort after the site's own GPUs (cohort 1), at most "
          f"{MAX_COHORTS - 1} per site; site_name says which site a row belongs to.")
    for spec in COHORT_SPECS:
        need = "required" if spec.name in COHORT_REQUIRED else "optional"
        print(f"{spec.name}  [{spec.unit}]  {need}")
        print(f"    {spec.label}: {spec.description} Allowed: {spec.allowed}.")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "summary",
        description="Compute the TFOM for one site (the defaults, changed with --set) and print "
                    "the summary outputs of the three scenarios side by side: TEF, TFI, "
                    "breakeven utilisation, NPV, IRR, payback …",
        epilog="examples:\n  tokenfactory-xl summary --set gpus=2048 --set tef_target=0.65 "
               "--json\n  tokenfactory-xl summary --scenario Optimised -o optimised.txt",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_options(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object keyed by the output names (none → null): the live "
                        "scenario's figures, every scenario's under \"scenarios\" and Optimised "
                        "− Base under \"optimised_minus_base\"")
    add_print_output(p)
    p.set_defaults(func=cmd_summary)

    p = subparsers.add_parser(
        "inputs",
        description="List the input catalogue: the names --set and a sites file take.",
        epilog="example: tokenfactory-xl inputs --json -o inputs.json")
    p.add_argument("--json", action="store_true", help="as a JSON list")
    p.add_argument("--cohorts", action="store_true",
                   help="with --json: an object of the inputs and the cohort columns (the text "
                        "listing always ends with the cohort columns)")
    add_print_output(p)
    p.set_defaults(func=cmd_inputs)


# -- printing into a file -----------------------------------------------------------------------
def add_print_output(parser: argparse.ArgumentParser, force: bool = True) -> None:
    """``-o/--output FILE`` for a command that prints: the text goes into FILE instead.

    ``force`` adds ``--force`` (a command that has its own ``--force`` says in its help that it
    also replaces FILE). Without it an existing FILE is refused and nothing is written.
    """
    parser.add_argument("-o", "--output", dest="print_to", metavar="FILE",
                        help="write what would be printed into FILE (never replaced without "
                             "--force; nothing is written when the command fails)")
    if force:
        parser.add_argument("--force", action="store_true", help="replace FILE if it exists")
    parser.set_defaults(print_to=None)


def _run_printing_to(args: argparse.Namespace) -> int:
    """Run the command with its standard output captured into ``args.print_to``."""
    import contextlib
    import io

    from .files import write_atomically

    path = args.print_to
    if os.path.isdir(path):
        raise UserError(f"-o {path}: is a folder; give a file name")
    if os.path.exists(path) and not getattr(args, "force", False):
        raise UserError(f"-o {path}: exists; nothing was written (add --force to replace it)")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = int(args.func(args) or 0)
    write_atomically(path, buffer.getvalue().encode("utf-8"))
    return status


# -- entry point ---------------------------------------------------------------------------------
class _Commands:
    """The sub-parsers as ``register`` functions see them: every parser refuses abbreviated
    options (``--out`` is not ``--output``) and takes its ``--help`` line from :data:`COMMANDS`."""

    def __init__(self, subparsers: argparse._SubParsersAction):
        self._subparsers = subparsers
        self.added: list[str] = []

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        kwargs.setdefault("help", _HELP[name])
        kwargs.setdefault("allow_abbrev", False)
        self.added.append(name)
        return self._subparsers.add_parser(name, **kwargs)


_HELP = {name: text for name, _, text in COMMANDS}


def _command_named(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``tokenfactory-xl`` parser.

    With ``argv``, only the module of the command it names is imported and registers its full
    options; every other command gets a stand-in that carries its ``--help`` line, so that
    ``tokenfactory-xl --help`` imports no command's heavy modules. Without ``argv`` every command
    is registered in full.
    """
    parser = argparse.ArgumentParser(
        prog="tokenfactory-xl", allow_abbrev=False,
        description="Token-factory economics: from TPS, TTFT and TEF to revenue, EBITDA and ROI.",
        epilog="examples:\n  tokenfactory-xl summary --set gpus=2048\n"
               "  tokenfactory-xl batch templates/sites-example.csv -o sites-out\n"
               "`tokenfactory-xl COMMAND --help` describes a command.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    commands = _Commands(subparsers)
    wanted = None if argv is None else _command_named(argv)
    wanted_module = next((m for n, m, _ in COMMANDS if n == wanted), None)
    for name, module, text in COMMANDS:
        if name in commands.added:
            continue
        if argv is None or module == wanted_module:
            importlib.import_module(module).register(commands)  # type: ignore[arg-type]
            if name not in commands.added:
                raise RuntimeError(f"{module}.register added no {name!r} command")
        else:
            commands.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        if getattr(args, "print_to", None):
            return _run_printing_to(args)
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
