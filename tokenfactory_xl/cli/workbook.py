"""The ``template`` and ``render`` commands: the TFOM workbook from the command line.

``tokenfactory-xl template -o TFOM.xlsx`` writes the workbook of
:mod:`tokenfactory_xl.workbook.build` with the site's inputs (``--set``, ``--scenario``) typed in,
never overwriting without ``--force``. ``tokenfactory-xl render TFOM.xlsx -o dashboard.png`` lets
LibreOffice recalculate a workbook and draws its Dashboard page as a PNG, so that a person can look
at the charts without Excel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..files.disk import write_atomically


def cmd_template(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from .common import inputs_from_args, is_stdio, refuse_terminal_output, write_output

    inputs = inputs_from_args(args)
    if is_stdio(args.output):
        refuse_terminal_output(args.output, "the workbook")  # before 10,000 draws, not after
        write_output(args.output, template_bytes(inputs), "the workbook")
        return 0
    path = Path(args.output)
    if path.suffix.lower() != ".xlsx":
        raise UsageError(f"{path}: the workbook must be an .xlsx file (e.g. -o TFOM.xlsx)")
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; add --force to overwrite it")
    if not path.parent.is_dir():
        raise UsageError(f"{path.parent}: no such folder")
    write_atomically(path, template_bytes(inputs))
    print(f"wrote {path}")
    return 0


#: The deflate level of a workbook ``template`` writes: zlib's default. One file to keep or send
#: is worth its smallest size, and zlib writes the same bytes on every machine (the batch's
#: fastest level uses ISA-L where it is installed).
TEMPLATE_LEVEL = 6


def template_bytes(inputs, risk_draws: int | None = None) -> bytes:
    """The TFOM workbook of ``inputs`` as ``template`` writes it: every formula cell storing its
    value (previewers and ``openpyxl data_only`` read the figures without a spreadsheet engine),
    the Risk sheet computed with ``risk_draws`` draws (default 10,000), "what must be true"
    included."""
    from ..portfolio.batch import shared_factory
    from ..tfom.risk import DEFAULT_DRAWS

    return shared_factory(TEMPLATE_LEVEL).make(inputs, DEFAULT_DRAWS if risk_draws is None
                                                else risk_draws, must_be_true=True)[0]


DASHBOARD_MARKER = "Master check"


def render_dashboard(workbook: str | os.PathLike, png: str | os.PathLike,
                     resolution: int = 80) -> Path:
    """Recalculate ``workbook`` in LibreOffice and write its Dashboard page as a PNG."""
    return render_sheet(workbook, png, "Dashboard", resolution)


def render_sheet(workbook: str | os.PathLike, png: str | os.PathLike, sheet: str = "Dashboard",
                 resolution: int = 80) -> Path:
    """Recalculate ``workbook`` in LibreOffice and write the first printed page of ``sheet``.

    LibreOffice exports every sheet to one PDF; a sheet's first page is the one that starts with
    its title (the sheet's name; the Cover's is the model's name, and the Dashboard's page also
    carries "Master check"), found with ``pdftotext`` and turned into ``png`` by ``pdftoppm``.
    """
    from ..core.errors import UsageError
    from ..engines.libreoffice import LibreOfficeMissing, convert
    from ..workbook.build import SHEETS, UNPRINTED_SHEETS
    from ..workbook.front_sheets import COVER_TITLE

    if sheet not in SHEETS:
        raise UsageError(f"--sheet {sheet}: not a sheet of the TFOM workbook; the sheets are "
                        + ", ".join(SHEETS))
    if sheet in UNPRINTED_SHEETS:
        printed = [s for s in SHEETS if s not in UNPRINTED_SHEETS]
        raise UsageError(f"--sheet {sheet}: the {sheet} sheet prints no page (it is read on "
                        "screen); render one of " + ", ".join(printed))
    for tool in ("pdftoppm", "pdftotext"):
        if shutil.which(tool) is None:
            raise UsageError(f"{tool} is not installed (apt-get install poppler-utils)")
    png = Path(png)
    with tempfile.TemporaryDirectory(prefix="tfxl-render-") as tmp:
        try:
            pdf = convert([workbook], tmp, "pdf")[0]
        except LibreOfficeMissing as exc:
            raise UsageError(str(exc)) from None
        text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                              text=True, check=True).stdout
        pages = text.split("\f")
        title = COVER_TITLE if sheet == "Cover" else sheet  # what its first page starts with
        page = next((i + 1 for i, t in enumerate(pages)
                     if t.lstrip().startswith(title)
                     and (sheet != "Dashboard" or DASHBOARD_MARKER in t)), None)
        if page is None:
            raise UsageError(f"{workbook}: no {sheet} page found in the PDF export")
        stem = Path(tmp, "page")
        subprocess.run(["pdftoppm", "-png", "-r", str(resolution), "-f", str(page), "-l",
                        str(page), "-singlefile", str(pdf), str(stem)], check=True,
                       capture_output=True)
        write_atomically(png, Path(f"{stem}.png").read_bytes())
    return png


def cmd_render(args: argparse.Namespace) -> int:
    from .common import read_stdin_as_file

    with read_stdin_as_file(args.workbook, "WORKBOOK") as workbook:
        return _render(args, workbook)


def _render(args: argparse.Namespace, workbook: str) -> int:
    from ..core.errors import UsageError
    from ..files.disk import check_writable, regular_file_problem
    from .common import is_stdio, write_output

    source = Path(workbook)
    problem = regular_file_problem(source)
    if problem is not None:  # a FIFO would block LibreOffice, a folder is no workbook
        raise UsageError(str(problem))
    if is_stdio(args.output):
        with tempfile.TemporaryDirectory(prefix="tfxl-render-") as tmp:
            picture = render_sheet(source, Path(tmp, "page.png"), args.sheet, args.resolution)
            write_output(args.output, picture.read_bytes(), "the PNG")
        return 0
    out = Path(args.output)
    if out.suffix.lower() != ".png":
        raise UsageError(f"{out}: the picture must be a .png file (e.g. -o dashboard.png)")
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists; add --force to overwrite it")
    check_writable(out)  # a read-only or full disk is said before LibreOffice's seconds
    render_sheet(source, out, args.sheet, args.resolution)
    print(f"wrote {out}")
    return 0


#: Findings that a refreshed workbook does not carry over (it is made anew from the inputs).
_NOT_CARRIED = frozenset({"formula_edited", "formula_replaced", "formula_deleted",
                          "formula_added", "sheet_added", "sheet_deleted", "name_moved"})


def cmd_refresh(args: argparse.Namespace) -> int:
    """Recompute a filled-in workbook's Risk sheet: a new workbook made from its inputs. The
    workbook may come from the standard input and go to the standard output (``-``); what the
    command says then goes to the standard error."""
    from ..core.errors import UsageError
    from .common import is_stdio, read_stdin_as_file

    if is_stdio(args.workbook) and not args.output:
        raise UsageError("refresh -: the workbook comes from the standard input, so give where "
                         "the new one goes: -o NEW.xlsx (or -o - for the standard output)")
    with read_stdin_as_file(args.workbook, "WORKBOOK") as readable:
        shown = "the workbook from standard input" if is_stdio(args.workbook) else None
        return _refresh(args, Path(readable), shown)


def _refresh(args: argparse.Namespace, source: Path, shown: str | None) -> int:
    """``refresh`` of the workbook ``source`` (``shown``: how to name it when it is not a file
    the user named)."""
    from ..core.errors import UsageError
    from ..files.disk import regular_file_problem
    from ..portfolio.batch import shared_factory
    from ..portfolio.collect import collect
    from ..sites.load import visible
    from .common import is_stdio, refuse_terminal_output, write_output

    refuse_terminal_output(args.output, "the workbook")  # before the Risk sheet's draws
    problem = regular_file_problem(source)
    if problem is not None:
        raise UsageError(visible(str(problem)))
    name = shown or visible(source)
    to_stdout = is_stdio(args.output)
    target = Path(args.output) if args.output else source.with_name(
        f"{source.stem}-refreshed.xlsx")
    in_place = not to_stdout and shown is None and target.resolve() == source.resolve()
    if not to_stdout and target.suffix.lower() != ".xlsx":
        raise UsageError(f"{visible(target)}: the workbook must be an .xlsx file")
    if not to_stdout and target.exists() and not args.force:
        what = "it is the workbook read" if in_place else "it exists"
        raise UsageError(f"{visible(target)}: {what}; add --force to replace it (or -o NEW.xlsx)")
    (audit,) = collect([source])
    if not audit.included:
        lines = [f"{name}: its inputs cannot be read, so nothing was written:"]
        lines += [f"  - {f.where + ': ' if f.where else ''}{visible(f.message)}"
                  for f in audit.findings if f.severity == "error"]
        raise UsageError("\n".join(lines))
    empty = [f for f in audit.findings if f.code == "input_empty"]
    if empty:
        # The new workbook types every input: a default the model used for an empty cell would
        # appear there as if someone had typed it.
        lines = [f"{name}: {len(empty)} input cell{'s are' if len(empty) > 1 else ' is'}"
                 " empty, and the new workbook would type the default there as if it had been "
                 "typed, so nothing was written:"]
        lines += [f"  - {f.where}: {visible(f.message)}" for f in empty]
        lines.append("type the value meant into each cell (the default, to keep it) and refresh "
                     "again")
        raise UsageError("\n".join(lines))
    lost = [f for f in audit.findings if f.code in _NOT_CARRIED]
    if lost and in_place:
        raise UsageError(f"{name}: {len(lost)} change(s) to the template's formulas "
                        "or sheets would be lost in place; write a new file with -o NEW.xlsx")
    data, summary = shared_factory().make(audit.inputs, args.draws, must_be_true=True)
    data, tracked = _keep_actuals(source, data, str(audit.inputs["currency"]))
    write_output(target, data, "the workbook")
    told = sys.stderr if to_stdout else sys.stdout  # the standard output holds the workbook
    if tracked:
        print(f"kept the {tracked} row{'s' if tracked != 1 else ''} of the Actuals sheet "
              "(plan against actual) as they were", file=told)
    for f in lost:
        print(f"tokenfactory-xl: note: not carried over from {name}: {f.where}: "
              f"{visible(f.message)}", file=told)
    print(f"wrote {'the standard output' if to_stdout else visible(target)}: "
          f"{visible(audit.inputs['site_name'])}, the Risk sheet computed with {args.draws:,} "
          f"draws for the inputs of {shown or visible(source.name)} (NPV P50 "
          f"{summary['npv_p50']:,.0f})", file=told)
    return 0


def _keep_actuals(source: Path, data: bytes, currency: str) -> tuple[bytes, int]:
    """``data`` (a refreshed workbook) with the Actuals rows ``source`` holds, and their count:
    measurements are history, which a refresh keeps."""
    import zipfile

    from ..workbook.actuals_sheet import NotATrackableWorkbook, read_sheet, rewrite

    try:
        with zipfile.ZipFile(source) as archive:
            rows = read_sheet(archive).rows
    except (NotATrackableWorkbook, zipfile.BadZipFile, OSError):
        return data, 0
    return (rewrite(data, rows, currency), len(rows)) if rows else (data, 0)


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..tfom.risk import DEFAULT_DRAWS
    from .common import add_input_options, positive_int

    p = subparsers.add_parser(
        "template",
        description="Write the TFOM workbook: the monthly Token Factory Operating Model as "
                    "native Excel formulas, with the inputs (defaults, changed with --set) "
                    "typed into its Inputs sheet.",
        epilog="example: tokenfactory-xl template -o site-2048.xlsx --set gpus=2048 "
               "--scenario Optimised")
    p.add_argument("-o", "--output", required=True, metavar="FILE.xlsx",
                   help="the workbook to write (- for the standard output: … -o - > FILE.xlsx)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    add_input_options(p)
    p.set_defaults(func=cmd_template)

    r = subparsers.add_parser(
        "render",
        description="Recalculate a TFOM workbook in LibreOffice and write its Dashboard "
                    "(headline figures and charts), or another sheet's first page, as a PNG.",
        epilog="examples:\n  tokenfactory-xl template -o TFOM.xlsx\n"
               "  tokenfactory-xl render TFOM.xlsx -o dashboard.png\n"
               "  tokenfactory-xl render TFOM.xlsx -o scenarios.png --sheet Scenarios",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("workbook", help="the TFOM workbook (.xlsx; - reads it from standard input)")
    r.add_argument("-o", "--output", required=True, metavar="FILE.png",
                   help="the picture to write (- for the standard output)")
    r.add_argument("--sheet", default="Dashboard", metavar="NAME",
                   help="the sheet to draw (default Dashboard; e.g. Scenarios)")
    r.add_argument("--resolution", type=int, default=80, metavar="DPI",
                   help="pixels per inch (default 80)")
    r.add_argument("--force", action="store_true", help="overwrite an existing file")
    r.set_defaults(func=cmd_render)

    f = subparsers.add_parser(
        "refresh",
        description="Recompute the Risk sheet (tornado and Monte Carlo) of a filled-in TFOM "
                    "workbook for the inputs and fleet it holds now, writing a new workbook made "
                    "from them (every formula and stored value fresh). The workbook read is "
                    "never changed unless -o names it and --force is given.",
        epilog="examples (the first writes TFOM-refreshed.xlsx):\n"
               "  tokenfactory-xl refresh TFOM.xlsx\n"
               "  tokenfactory-xl refresh TFOM.xlsx -o TFOM.xlsx --force --draws 2000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("workbook", help="the filled-in TFOM workbook (.xlsx; - for the standard "
                                    "input, with -o)")
    f.add_argument("-o", "--output", metavar="FILE.xlsx",
                   help="the workbook to write (default: NAME-refreshed.xlsx beside it; - for "
                        "the standard output: … -o - > FILE.xlsx)")
    f.add_argument("--draws", type=positive_int, default=DEFAULT_DRAWS, metavar="N",
                   help=f"Monte Carlo draws (default {DEFAULT_DRAWS:,})")
    f.add_argument("--force", action="store_true", help="replace an existing file")
    f.set_defaults(func=cmd_refresh)
