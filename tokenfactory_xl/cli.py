"""The ``tokenfactory-xl`` command line: thin wrappers around the model, workbook and batch.

Each sub-command lives in the module that owns its idea and registers itself through a
``register(subparsers)`` function listed in :data:`COMMANDS`; this module holds what they share:
``--set NAME=VALUE`` and ``--scenario``, number formatting, and the rule that a user's mistake
prints a message and exits with status 2, never a traceback.
"""

from __future__ import annotations

import os

# Before numpy loads: one BLAS thread in a run of the command line. The model's matrix products
# are small (221 rates × 121 months); OpenBLAS's extra threads do not shorten them but spin
# after each one, and a batch already runs a worker process on each core. The figures are the
# same to the last bit; a value the user has set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from . import __version__  # noqa: E402
from .catalogue import (  # noqa: E402
    BY_NAME,
    COHORT_REQUIRED,
    COHORT_SPECS,
    INPUTS,
    MAX_COHORTS,
    SCENARIOS,
    BadValue,
    fmt_number,
)
from .errors import InputError, Problem  # noqa: E402
from .inputs import make_inputs, split_key  # noqa: E402

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
    ("solve", "tokenfactory_xl.solve_cli",
     "what must be true: the input value at which NPV, IRR, payback or DSCR meets a target"),
    ("template", "tokenfactory_xl.workbook_cli", "write the TFOM workbook (Excel, no macros)"),
    ("render", "tokenfactory_xl.workbook_cli",
     "draw a workbook's Dashboard as a PNG (LibreOffice)"),
    ("refresh", "tokenfactory_xl.workbook_cli",
     "recompute a filled-in workbook's Risk sheet for its inputs, as a new workbook"),
    ("batch", "tokenfactory_xl.batch",
     "write one TFOM workbook per site of a sites file, and a portfolio"),
    ("theoretical", "tokenfactory_xl.theoretical",
     "TPS per GPU of a catalogue GPU and model: the bound and the attainable figure"),
    ("actuals", "tokenfactory_xl.actuals",
     "measured TPS, TTFT, SLO attainment and TEF from serving output"),
    ("track", "tokenfactory_xl.track",
     "plan against actual: append measured TEF to a workbook's Actuals sheet"),
    ("cost", "tokenfactory_xl.cost",
     "throughput per GPU and input/output cost per Mtok from benchmark files"),
    ("collect", "tokenfactory_xl.collect",
     "collect filled-in TFOM workbooks into a portfolio, with an audit report"),
    ("completion", "tokenfactory_xl.completion",
     "print a shell completion script (bash, zsh, fish): commands, options, --set names"),
    ("lite", "tokenfactory_xl.lite",
     "write the Excel functions for xlwings Lite (Excel on Windows, Mac, the web) as main.py"),
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


def format_number(value: float, kind: str) -> str:
    """A figure's digits as every table shows them: money in whole units, prices to 4 decimals,
    whole counts (GPUs, tokens) without decimals and others to 2, a fraction as a percentage."""
    if kind == "fraction":
        return f"{value:.2%}"
    if kind == "gpus":
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    digits = {"money": f"{value:,.0f}", "price": f"{value:,.4f}", "tokens": f"{value:,.0f}",
              "months": f"{value:,.2f}"}
    return digits.get(kind) or fmt_number(value)


def unit_text(kind: str, currency: str = "", unit: str = "") -> tuple[str, str]:
    """What stands before and after a figure's digits: ``("USD", "per Mtok")`` for
    ``money/Mtok``, ``("", "months")``, ``("", "a year")`` for ``fraction/year``."""
    if kind == "fraction":
        per = unit.partition("/")[2]
        return "", f"a {per}" if per else ""
    if not unit and kind in ("money", "price"):
        unit = "money"
    if unit.startswith("money"):
        rest = unit[len("money"):].lstrip("/")
        return currency or "money", f"per {rest}" if rest else ""
    if unit in ("", "ratio", "fraction"):
        return "", ""
    return "", unit


def format_value(value: float | None, kind: str, currency: str = "", unit: str = "",
                 missing: str = "none") -> str:
    """A summary value as the table shows it, with its unit (``None`` → ``missing``: "none",
    or "n/m" for a ratio without meaning).

    ``kind`` picks the digits (an output's display kind, :func:`format_number`), ``unit`` is the
    output's unit: ``money/Mtok`` with currency ``USD`` gives ``USD 0.3656 per Mtok``,
    ``months`` gives ``54.83 months``, a ``fraction`` shows as a percentage (``fraction/year``:
    ``0.96% a year``), whole GPUs as ``1,024 GPUs``.
    """
    if value is None:
        return missing
    before, after = unit_text(kind, currency, unit)
    return " ".join(t for t in (before, format_number(value, kind), after) if t)


def terminal_width() -> int | None:
    """The columns a printed table may use: ``COLUMNS`` when set, else the terminal's width;
    ``None`` (no limit) when the output is a pipe or a file, so that tools reading it get the
    whole table."""
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


# -- argparse types for options that are not site inputs (GPU counts, MBU, intervals) ----------
def _number(text: str, whole: bool = False) -> tuple[float, bool]:
    """An option's number by the one reader of numbers typed as text (``1,500``, ``0,8``,
    ``2,5E+03``); a number that reads two ways is refused naming both, unless ``whole`` and
    only one reading is a whole number."""
    from .number_text import NumberTextError, read

    try:
        return read(text)
    except NumberTextError as exc:
        wholes = [r for r in exc.readings if float(r.rstrip("%")).is_integer()]
        if whole and len(wholes) == 1:
            return float(wholes[0].rstrip("%")), wholes[0].endswith("%")
        raise argparse.ArgumentTypeError(f"{text!r} {exc.reason}"
                                         + (f"; {exc.fix}" if exc.fix else "")) from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``1,024`` accepted)."""
    value, percent = _number(text, whole=True)
    if percent or not value.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return int(value)


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (``1500``, ``1,500.5`` and ``0,5`` accepted;
    ``1,500`` refused naming its two readings)."""
    value, percent = _number(text)
    if percent:
        raise argparse.ArgumentTypeError(f"{text!r} is a percentage; give the number itself")
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
    return value


def fraction_arg(text: str) -> float:
    """An argparse type for MBU/MFU: a fraction in (0, 1], ``80%`` accepted, ``80`` refused."""
    value, percent = _number(text)
    value /= 100 if percent else 1
    text = text.strip()
    if not percent and 1 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text} looks like a percentage; enter {text}% or "
                                         f"{value / 100:g}")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a fraction above 0, at most 1")
    return value


# -- summary -------------------------------------------------------------------------------------
def cmd_summary(args: argparse.Namespace) -> int:
    from .operating_model import BRIDGE_LINES, BRIDGE_NAMES, OUTPUTS, run

    form = table_format(args)
    inputs = inputs_from_args(args)
    result = run(inputs)
    live = result.scenarios[result.scenario]
    if form == "csv":
        names = list(result.scenarios)
        print_csv(["name", "label", "unit", *(n.lower() for n in names)],
                  [[o.name, o.label, o.unit, *(result.scenarios[n].summary[o.name]
                                               for n in names)] for o in OUTPUTS]
                  + [["uplift_npv", "NPV: Optimised − Base", "money",
                      *(result.uplift["npv"] if n == "Optimised" else None for n in names)]]
                  + [[line.meta["output"], line.label, "money",
                      *(result.uplift[line.meta["output"]] if n == "Optimised" else None
                        for n in names)] for line in BRIDGE_LINES])
        return 0
    if args.json:
        bridge = {"uplift_npv": result.uplift["npv"],
                  **{name: result.uplift[name] for name in BRIDGE_NAMES}}
        document = {**result.summary, "warning_rules": list(live.warnings),
                    "not_meaningful": _not_meaningful(result.summary),
                    "scenarios": {name: {**sc.summary, "warning_rules": list(sc.warnings),
                                         "not_meaningful": _not_meaningful(sc.summary)}
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
    marked = [f"{n}*" if n == result.scenario else n for n in names]
    rows = [(o.label, o.kind, o.unit, [result.scenarios[n].summary[o.name] for n in names],
             o.name) for o in OUTPUTS]
    rows.append(("NPV: Optimised − Base", "money", "money", [None, result.uplift["npv"], None],
                 "uplift_npv"))
    for line in BRIDGE_LINES:  # the uplift taken apart (methodology §10.3)
        step = line.meta["output"]
        rows.append((f"  {line.label.removeprefix('NPV uplift: ')}", "money", "money",
                     [None, result.uplift[step], None], step))
    wide = _summary_wide(rows, marked, currency)
    width = terminal_width()
    lines = wide if width is None or max(map(len, wide)) <= width else \
        _summary_narrow(rows, marked, currency)
    for line in lines:
        print(line)
    print("  * the live scenario (--scenario); --json gives every scenario's figures")
    fired: dict[str, list[str]] = {}
    for name, sc in result.scenarios.items():
        for text in sc.warnings:
            fired.setdefault(text, []).append(name)
    if fired:
        print("Warnings (they do not make the figures wrong; read them before the figures):")
        import textwrap

        for text, where in fired.items():
            line = f"  ! {text} ({', '.join(where)})"
            print(line if width is None else textwrap.fill(line, width, subsequent_indent="    "))
    return 0


def _not_meaningful(summary: dict[str, float | None]) -> list[str]:
    """The outputs whose ``null`` in ``--json`` is a ratio without meaning ("n/m" in the table
    and the workbook), not a figure that does not exist ("none")."""
    from .operating_model import NM, OUTPUT_MISSING

    return [name for name, missing in OUTPUT_MISSING.items()
            if missing == NM and summary.get(name) is None]


#: The rows (the uplift and its bridge) whose empty cells are no figure at all (not "none").
_UPLIFT = "uplift_npv"


def _summary_wide(rows: list, marked: list[str], currency: str) -> list[str]:
    """One line per output: its label, each scenario's figure with its unit, its name."""
    from .operating_model import OUTPUT_MISSING

    texts = [[("" if name.startswith(_UPLIFT) and v is None
               else format_value(v, kind, currency, unit, OUTPUT_MISSING.get(name, "none")))
              for v in values] for _, kind, unit, values, name in rows]
    width = max(len(label) for label, *_ in rows)
    right = [max(len(t[j]) for t in texts + [marked]) for j in range(len(marked))]
    out = [f"  {'':<{width}}  " + "  ".join(f"{n:>{r}}" for n, r in zip(marked, right,
                                                                        strict=True))]
    for (label, *_, name), cells in zip(rows, texts, strict=True):
        line = "  ".join(f"{t:>{r}}" for t, r in zip(cells, right, strict=True))
        out.append(f"  {label:<{width}}  {line}  {name}")
    return out


def _summary_narrow(rows: list, marked: list[str], currency: str) -> list[str]:
    """For a narrow terminal: each output's label, unit and name on one line, its figures
    (digits only) on the next, in the scenarios' columns."""
    from .operating_model import OUTPUT_MISSING

    digits = [[("" if name.startswith(_UPLIFT) and v is None else
                OUTPUT_MISSING.get(name, "none") if v is None else format_number(v, kind))
               for v in values]
              for _, kind, _, values, name in rows]
    right = max(len(t) for t in [*(c for r in digits for c in r), *marked])
    out = ["    " + "  ".join(f"{n:>{right}}" for n in marked)]
    for (label, kind, unit, _, name), cells in zip(rows, digits, strict=True):
        unit_words = " ".join(t for t in unit_text(kind, currency, unit) if t)
        out.append(f"  {label}{f' [{unit_words}]' if unit_words else ''}  ({name})")
        out.append("    " + "  ".join(f"{t:>{right}}" for t in cells).rstrip())
    return out


def cmd_inputs(args: argparse.Namespace) -> int:
    if table_format(args) == "csv":
        def default(spec) -> object:
            return " / ".join(map(_plain, spec.default)) if spec.per_scenario else spec.default

        print_csv(["name", "label", "unit", "group", "default", "per_scenario", "allowed",
                   "description"],
                  [[i.name, i.label, i.unit, i.group, default(i), i.per_scenario, i.allowed,
                    i.description] for i in INPUTS])
        return 0
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
    width = terminal_width()

    def say(text: str, indent: str = "", then: str | None = None) -> None:
        """One paragraph, wrapped at the terminal's width when there is one (the lines after
        the first indented by ``then``)."""
        if width is None:
            print(indent + text)
        else:
            import textwrap

            print(textwrap.fill(text, max(width, 40), initial_indent=indent,
                                subsequent_indent=indent if then is None else then,
                                break_on_hyphens=False))

    for spec in INPUTS:
        default = (" / ".join("blank" if d is None else str(d) for d in spec.default)
                   if spec.per_scenario else str(spec.default))
        scen = f"  (per scenario: {' / '.join(SCENARIOS)})" if spec.per_scenario else ""
        say(f"{spec.name}  [{spec.unit}]  default {default}{scen}", "", "    ")
        say(f"{spec.label}: {spec.description} Allowed: {spec.allowed}.", "    ")
    print()
    say(f"Cohort columns: a cohorts table (--cohorts FILE, or a sheet named cohorts in a sites "
        f"workbook) has one row per cohort after the site's own GPUs (cohort 1), at most "
        f"{MAX_COHORTS - 1} per site; site_name says which site a row belongs to.")
    for spec in COHORT_SPECS:
        need = "required" if spec.name in COHORT_REQUIRED else "optional"
        print(f"{spec.name}  [{spec.unit}]  {need}")
        say(f"{spec.label}: {spec.description} Allowed: {spec.allowed}.", "    ")
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
    add_csv_option(p, "one row per output (its name, label and unit, then each scenario's "
                      "figure)")
    add_print_output(p)
    p.set_defaults(func=cmd_summary)

    p = subparsers.add_parser(
        "inputs",
        description="List the input catalogue: the names --set and a sites file take.",
        epilog="example: tokenfactory-xl inputs --json -o inputs.json")
    p.add_argument("--json", action="store_true", help="as a JSON list")
    add_csv_option(p, "one row per input")
    p.add_argument("--cohorts", action="store_true",
                   help="with --json: an object of the inputs and the cohort columns (the text "
                        "listing always ends with the cohort columns)")
    add_print_output(p)
    p.set_defaults(func=cmd_inputs)


# -- tables as CSV -------------------------------------------------------------------------------
def add_csv_option(parser: argparse.ArgumentParser, rows: str) -> None:
    """``--csv``: the table the command prints, as CSV (``rows`` says what a row is)."""
    parser.add_argument("--csv", action="store_true",
                        help=f"print the table as CSV: a header row of names, then {rows}; "
                             "numbers with every digit, empty where there is no figure")


def table_format(args: argparse.Namespace) -> str:
    """``"json"``, ``"csv"`` or ``"text"``; both ``--json`` and ``--csv`` is a usage mistake."""
    if getattr(args, "json", False) and getattr(args, "csv", False):
        raise UserError("--json and --csv: give one of them")
    return "json" if getattr(args, "json", False) else "csv" if getattr(args, "csv", False) \
        else "text"


def print_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A table as CSV on the standard output (``None`` → an empty field)."""
    import csv

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])


def print_records_csv(records: Sequence[dict]) -> None:
    """Records of one shape (what ``--json`` prints) as CSV, one row each; a list in a field is
    joined with ``; ``."""
    header = list(dict.fromkeys(k for r in records for k in r))
    print_csv(header, [["; ".join(map(str, v)) if isinstance(v, (list, tuple)) else v
                        for v in (r.get(k) for k in header)] for r in records])


# -- standard input and output ("-") ------------------------------------------------------------
#: The file name that means standard input (for a file read) or standard output (for a file
#: written), as in every Unix tool. A file really named ``-`` is ``./-``.
STDIO = "-"


def is_stdio(path: object) -> bool:
    """Whether ``path`` is ``-``: standard input or output."""
    return path is not None and os.fspath(path) == STDIO  # type: ignore[arg-type]


def write_output(path: str | os.PathLike, data: bytes, what: str) -> None:
    """Write ``data`` to the file ``path`` (through a temporary file and a rename), or to the
    standard output when ``path`` is ``-``; ``what`` names the content for the message when
    standard output is a terminal (a workbook is not text to show)."""
    from .files import write_atomically

    if not is_stdio(path):
        write_atomically(path, data)
        return
    if sys.stdout.isatty():
        raise UserError(f"-o -: {what} goes to standard output, which is a terminal; redirect it "
                        f"(-o - > FILE) or pipe it, or give a file name")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


@contextlib.contextmanager
def read_stdin_as_file(path: str, option: str) -> Iterator[str]:
    """``path`` itself, or, when it is ``-``, a temporary file holding the standard input
    (``standard-input.xlsx`` when the bytes are a zip, else ``standard-input.csv``), removed
    after the block. Reading stdin once and keeping it lets a command read its file twice and
    check it as it checks any file."""
    if not is_stdio(path):
        yield path
        return
    if sys.stdin is None or sys.stdin.isatty():
        raise UserError(f"{option} -: reads standard input, which is a terminal; pipe or "
                        f"redirect a file into it (… {option} - < FILE), or name the file")
    buffer = getattr(sys.stdin, "buffer", None)
    data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    if not data:
        raise UserError(f"{option} -: standard input is empty; pipe or redirect a file into it")
    suffix = ".xlsx" if data[:4] == b"PK\x03\x04" else ".csv"
    with tempfile.TemporaryDirectory(prefix="tokenfactory-xl-") as folder:
        target = os.path.join(folder, f"standard-input{suffix}")
        with open(target, "wb") as handle:
            handle.write(data)
        yield target


# -- printing into a file -----------------------------------------------------------------------
def add_print_output(parser: argparse.ArgumentParser, force: bool = True) -> None:
    """``-o/--output FILE`` for a command that prints: the text goes into FILE instead.

    ``force`` adds ``--force`` (a command that has its own ``--force`` says in its help that it
    also replaces FILE). Without it an existing FILE is refused and nothing is written.
    """
    parser.add_argument("-o", "--output", dest="print_to", metavar="FILE",
                        help="write what would be printed into FILE (never replaced without "
                             "--force; nothing is written when the command fails); - is the "
                             "standard output")
    if force:
        parser.add_argument("--force", action="store_true", help="replace FILE if it exists")
    parser.set_defaults(print_to=None)


def _run_printing_to(args: argparse.Namespace) -> int:
    """Run the command with its standard output captured into ``args.print_to``."""
    import contextlib
    import io

    from .files import write_atomically

    path = args.print_to
    if is_stdio(path):
        return int(args.func(args) or 0)
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


def _unknown_arguments(parser: argparse.ArgumentParser, command: str | None,
                       extra: list[str]) -> None:
    """Stop with the usage of the command the mistake was made in (not the top-level one) and,
    for a mistyped option, the options it may have meant. Exits with status 2."""
    import difflib

    chosen = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen = action.choices[command]
    options = [o for a in chosen._actions for o in a.option_strings]
    words = []
    for word in extra:
        name = word.split("=", 1)[0]
        near = difflib.get_close_matches(name, options, n=1, cutoff=0.7) \
            if name.startswith("-") else []
        guess = f" (did you mean {' or '.join(near)}?)" if near else ""
        words.append(f"{word}{guess}")
    kind = "option" if all(w.startswith("-") for w in extra) else "argument"
    chosen.error(f"unrecognised {kind}{'s' if len(extra) > 1 else ''}: {', '.join(words)}; "
                 f"`{chosen.prog} --help` lists what it takes")


# -- inputs are sacred ------------------------------------------------------------------------
#: The options naming a file (or folder) a command writes.
OUTPUT_DESTS: tuple[str, ...] = ("print_to", "output", "png", "report", "summary_csv", "outdir")
#: Files a command may replace by design: ``refresh FILE -o FILE --force`` writes the workbook
#: it read anew (and refuses when that would lose changes). ``actuals --sites FILE`` updates
#: its file too, but FILE is no output option: ``-o FILE`` naming it is refused.
UPDATED_DESTS: dict[str, tuple[str, ...]] = {"refresh": ("workbook",)}
#: Commands that check their outputs against their inputs themselves, with every file of the
#: run (a folder of workbooks, the files of an output folder) by the same rule.
CHECKS_ITS_OWN_OUTPUTS: frozenset[str] = frozenset({"batch", "collect"})
#: Exit status of a command that failed for a reason of the machine (a full disk, a folder that
#: cannot be written): not the user's input.
EXIT_FAILED = 1


def _options_of(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """dest → how messages name the option (``--cohorts``; ``the file`` for a positional)."""
    for action in parser._actions:  # the sub-parsers' action: its choices are the commands
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return {a.dest: a.option_strings[0] if a.option_strings else "the file"
                    for a in action.choices[command]._actions}
    return {}


def check_inputs_sacred(args: argparse.Namespace, command: str,
                        options: dict[str, str] | None = None) -> None:
    """Refuse, before anything runs, an output that names a file the command reads.

    Every argument naming an existing file that is not an output (nor a file the command
    updates by design, :data:`UPDATED_DESTS`) is an input; ``--force`` replaces old outputs,
    never an input (:func:`tokenfactory_xl.files.check_outputs`). Folders given as outputs are
    checked by their commands, file by file.
    """
    from .files import check_outputs

    if command in CHECKS_ITS_OWN_OUTPUTS:
        return
    options = options or {}
    updated = UPDATED_DESTS.get(command, ())
    outputs, inputs = [], []
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, (str, os.PathLike)) or str(item) in ("", "-"):
                continue
            label = options.get(dest, dest)
            if dest in OUTPUT_DESTS:
                if not os.path.isdir(item):
                    outputs.append((label, item))
            elif dest not in updated and os.path.lexists(item) and not os.path.isdir(item):
                inputs.append((label, item))
    if outputs and inputs:
        check_outputs(outputs, inputs)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        _unknown_arguments(parser, _command_named(argv), extra)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    command = _command_named(argv) or ""
    try:
        check_inputs_sacred(args, command, _options_of(parser, command))
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
    except OSError as exc:
        # a full disk, a read-only or vanished folder: one line, as batch and collect say it
        from .files import describe_os_error

        print(f"tokenfactory-xl: {command} failed: {describe_os_error(exc)}; nothing was "
              "written (files that were there before are unchanged)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
