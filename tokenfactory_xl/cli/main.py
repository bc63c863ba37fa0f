"""The ``tokenfactory-xl`` command line: thin wrappers around the model, workbook and batch.

Each sub-command lives in a module of this package that registers it through a
``register(subparsers)`` function listed in :data:`COMMANDS`; :mod:`.common` holds what they
share (``--set NAME=VALUE`` and ``--scenario``, number formatting, ``--csv``, ``-o FILE``). This
module parses the command line and keeps the rule that a user's mistake prints a message and
exits with status 2, never a traceback: every such mistake the library finds is a
:class:`~tokenfactory_xl.core.errors.TokenFactoryError`, caught here once.
"""

from __future__ import annotations

import os

# Before numpy loads: one BLAS thread in a run of the command line. The model's matrix products
# are small (221 rates × 121 months); OpenBLAS's extra threads do not shorten them but spin
# after each one, and a batch already runs a worker process on each core. The figures are the
# same to the last bit; a value the user has set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from .. import __version__  # noqa: E402
from ..core.errors import TokenFactoryError  # noqa: E402
from .common import EXIT_FAILED, EXIT_USAGE, run_printing_to  # noqa: E402

#: Every sub-command, in the order ``--help`` lists them: its name, the module whose
#: ``register(subparsers)`` adds it (the module is imported only when its command runs, so
#: ``--help`` stays fast), and the line ``--help`` shows for it.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("summary", "tokenfactory_xl.cli.site", "print the summary outputs of one site"),
    ("inputs", "tokenfactory_xl.cli.site",
     "list every input: name, unit, default, what is allowed"),
    ("statements", "tokenfactory_xl.cli.statements",
     "income statement, cash-flow statement and balance sheet by calendar year"),
    ("sensitivity", "tokenfactory_xl.cli.risk",
     "the tornado: NPV at a low and a high value of each driver"),
    ("risk", "tokenfactory_xl.cli.risk",
     "Monte Carlo of the NPV: P10, P50, P90, probability of a loss, median IRR"),
    ("solve", "tokenfactory_xl.cli.solve",
     "what must be true: the input value at which NPV, IRR, payback or DSCR meets a target"),
    ("template", "tokenfactory_xl.cli.workbook", "write the TFOM workbook (Excel, no macros)"),
    ("render", "tokenfactory_xl.cli.workbook",
     "draw a workbook's Dashboard as a PNG (LibreOffice)"),
    ("refresh", "tokenfactory_xl.cli.workbook",
     "recompute a filled-in workbook's Risk sheet for its inputs, as a new workbook"),
    ("batch", "tokenfactory_xl.cli.batch",
     "write one TFOM workbook per site of a sites file, and a portfolio"),
    ("theoretical", "tokenfactory_xl.cli.theoretical",
     "TPS per GPU of a catalogue GPU and model: the bound and the attainable figure"),
    ("actuals", "tokenfactory_xl.cli.actuals",
     "measured TPS, TTFT, SLO attainment and TEF from serving output"),
    ("track", "tokenfactory_xl.cli.track",
     "plan against actual: append measured TEF to a workbook's Actuals sheet"),
    ("cost", "tokenfactory_xl.cli.cost",
     "throughput per GPU and input/output cost per Mtok from benchmark files"),
    ("collect", "tokenfactory_xl.cli.collect",
     "collect filled-in TFOM workbooks into a portfolio, with an audit report"),
    ("completion", "tokenfactory_xl.cli.completion",
     "print a shell completion script (bash, zsh, fish): commands, options, --set names"),
    ("lite", "tokenfactory_xl.cli.lite",
     "write the Excel functions for xlwings Lite (Excel on Windows, Mac, the web) as main.py"),
)


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
    never an input (:func:`tokenfactory_xl.files.disk.check_outputs`). Folders given as outputs are
    checked by their commands, file by file.
    """
    from ..files.disk import check_outputs

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


def _keep_freed_memory() -> None:
    """Where the C library is glibc: memory freed at the top of the heap kept for the next
    arrays, not handed back to the system at once.

    glibc hands such memory back past a threshold it raises as large blocks come and go; a
    pass of the model over many variants (the risk's draws, a batch site's Risk sheet) frees
    and asks again for arrays of half a megabyte line after line, and each page handed back
    is faulted in again when the next line writes it (a 4,000-draw run: 12,600 page faults,
    1,000 with the memory kept). Blocks below 32 MB come from the heap and up to 256 MB freed at
    its top is kept: the same numbers, the process's peak memory the same (what it frees it
    reuses). Set by :func:`main` for the command it runs (a batch's or collect's workers
    inherit it), not on import: a program that imports this module keeps its own."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return
    except (AttributeError, ValueError, OSError):  # not a glibc system
        return
    import ctypes

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: the largest block taken from the heap
        mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: freed memory kept at the heap's top


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
    _keep_freed_memory()
    try:
        check_inputs_sacred(args, command, _options_of(parser, command))
        if getattr(args, "print_to", None):
            return run_printing_to(args)
        return int(args.func(args) or 0)
    except TokenFactoryError as exc:  # a bad input, option or file: its message, status 2
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
        from ..files.disk import describe_os_error

        print(f"tokenfactory-xl: {command} failed: {describe_os_error(exc)}; nothing was "
              "written (files that were there before are unchanged)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
