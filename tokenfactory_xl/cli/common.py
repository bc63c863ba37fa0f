"""What the commands share: ``--set``/``--scenario``, the inputs they give, number formatting,
options' value types, ``--csv``/``--json`` tables and ``-o FILE`` for printed output.

Every command module of this package builds on these; the library below never imports them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ..core.catalogue import (
    BY_NAME,
    SCENARIO_NAMES,
    BadValue,
    fmt_number,
)
from ..core.errors import InputError, Problem, UsageError
from ..tfom.inputs import make_inputs, split_key

#: Exit status of a user's mistake (an input, an option, a file): the message says which.
EXIT_USAGE = 2
#: Exit status of a command that failed for a reason of the machine (a full disk, a folder that
#: cannot be written): not the user's input; nothing was written.
EXIT_FAILED = 1

if TYPE_CHECKING:
    from ..tfom.inputs import SiteInputs



# -- shared options ------------------------------------------------------------------------------
def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE`` (repeatable) and ``--scenario``, as every site-level command takes."""
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
        help="override an input (repeatable), e.g. --set gpus=2048 --set availability=99.5%%; "
             "a per-scenario input sets the live scenario's value (tef_target=0.7) or one "
             "scenario's (tef_target.Optimised=0.7). `tokenfactory-xl inputs` lists the names.")
    parser.add_argument("--scenario", choices=SCENARIO_NAMES, type=_scenario,
                        help="the live scenario (default: Base)")
    parser.add_argument(
        "--cohorts", metavar="FILE",
        help="the site's further cohorts (.csv or .xlsx: cohort, online_month, gpus and any "
             "cohort column, one row per cohort; with a site_name column, the rows of this "
             "site; - for the standard input). `tokenfactory-xl inputs` lists the columns.")


def _scenario(text: str) -> str:
    for scenario in SCENARIO_NAMES:
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
    from ..sites.cohorts import load_cohorts

    with read_stdin_as_file(path, "--cohorts") as readable:
        table = load_cohorts(readable, need_site_name=False)
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
    default = spec.default[SCENARIO_NAMES.index(scenario)] if spec.per_scenario and scenario \
        else spec.default
    if isinstance(default, tuple):
        default = " / ".join(plain_value(d) for d in default)
    return Problem(key, value, f"is empty; allowed: {spec.allowed}",
                   f"give a value, or leave out --set {key}= to use the default "
                   f"({plain_value(default)})")


def plain_value(value: object) -> str:
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


def say(text: str, width: int | None, then: str | None = None) -> None:
    """Print a line of text, wrapped at ``width`` (:func:`terminal_width`) when there is one and
    the line is longer: the lines after the first keep its indent, or ``then``. Words are never
    broken, so a file's path stays whole and can be copied."""
    if width is None or len(text) <= width:
        print(text)
        return
    import textwrap

    indent = text[:len(text) - len(text.lstrip())]
    print(textwrap.fill(text.strip(), max(width, 40), initial_indent=indent,
                        subsequent_indent=indent if then is None else then,
                        break_on_hyphens=False, break_long_words=False))


# -- argparse types for options that are not site inputs (GPU counts, MBU, intervals) ----------
def _number(text: str, whole: bool = False) -> tuple[float, bool]:
    """An option's number by the one reader of numbers typed as text (``1,500``, ``0,8``,
    ``2,5E+03``); a number that reads two ways is refused naming both, unless ``whole`` and
    only one reading is a whole number."""
    from ..core.number_text import NumberTextError, read_number

    try:
        return read_number(text)
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


# -- tables as CSV -------------------------------------------------------------------------------
def add_csv_option(parser: argparse.ArgumentParser, rows: str) -> None:
    """``--csv``: the table the command prints, as CSV (``rows`` says what a row is)."""
    parser.add_argument("--csv", action="store_true",
                        help=f"print the table as CSV: a header row of names, then {rows}; "
                             "numbers with every digit, empty where there is no figure")


def table_format(args: argparse.Namespace) -> str:
    """``"json"``, ``"csv"`` or ``"text"``; both ``--json`` and ``--csv`` is a usage mistake."""
    if getattr(args, "json", False) and getattr(args, "csv", False):
        raise UsageError("--json and --csv: give one of them")
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


def write_output(path: str | os.PathLike, data: bytes, what: str, option: str = "-o") -> None:
    """Write ``data`` to the file ``path`` (through a temporary file and a rename), or to the
    standard output when ``path`` is ``-``; ``what`` names the content, and ``option`` the
    option that asked for it, for the message when standard output is a terminal (a workbook is
    not text to show)."""
    from ..files.disk import write_atomically

    if not is_stdio(path):
        write_atomically(path, data)
        return
    refuse_terminal_output(path, what, option)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def refuse_terminal_output(path: str | os.PathLike | None, what: str,
                           option: str = "-o") -> None:
    """Refuse ``-o -`` (or ``option -``) when the standard output is a terminal: ``what`` (a
    workbook, a PNG) is not text to show. A command that computes for long asks before it
    computes."""
    if is_stdio(path) and sys.stdout.isatty():
        raise UsageError(f"{option} -: {what} goes to standard output, which is a terminal; "
                         f"redirect it ({option} - > FILE) or pipe it, or give a file name")


@contextlib.contextmanager
def read_stdin_as_file(path: str | None, option: str) -> Iterator[str | None]:
    """``path`` itself, or, when it is ``-``, a temporary file holding the standard input
    (``standard-input.xlsx`` when the bytes are a zip, else ``standard-input.csv``), removed
    after the block. Reading stdin once and keeping it lets a command read its file twice and
    check it as it checks any file."""
    if not is_stdio(path):
        yield path
        return
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError(f"{option} -: reads standard input, which is a terminal; pipe or "
                        f"redirect a file into it (… {option} - < FILE), or name the file")
    buffer = getattr(sys.stdin, "buffer", None)
    data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    if not data:
        raise UsageError(f"{option} -: standard input is empty; pipe or redirect a file into it")
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


def run_printing_to(args: argparse.Namespace) -> int:
    """Run the command with its standard output captured into ``args.print_to``."""
    import contextlib
    import io

    from ..files.disk import write_atomically

    path = args.print_to
    if is_stdio(path):
        return int(args.func(args) or 0)
    if os.path.isdir(path):
        raise UsageError(f"-o {path}: is a folder; give a file name")
    if os.path.exists(path) and not getattr(args, "force", False):
        raise UsageError(f"-o {path}: exists; nothing was written (add --force to replace it)")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = int(args.func(args) or 0)
    write_atomically(path, buffer.getvalue().encode("utf-8"))
    return status
