"""Batch: one filled-in TFOM workbook per site of a sites file, and the portfolio of them all.

``tokenfactory-xl batch sites.csv -o out`` checks every row of the sites file first
(:mod:`tokenfactory_xl.sites.load`) and writes nothing when a row is bad, unless ``--skip-invalid``.
It then writes ``out/<site name>.xlsx`` for each site and ``out/portfolio.xlsx`` with one row per
site (:mod:`tokenfactory_xl.portfolio.book`).

Each workbook is the TFOM workbook of :mod:`tokenfactory_xl.workbook.build` with the site's inputs
typed in, its formulas intact, and every formula cell storing the value the Python model computes
for it: tools that read stored values without calculating (pandas, Power Query, previewers,
``openpyxl`` with ``data_only=True``) see the site's numbers, and Excel recalculates on open.

Speed comes from building the workbook once: the template (the default site) is built with
openpyxl and cut into a :class:`~tokenfactory_xl.workbook.stencil.Stencil`; each site then costs its
share of a model run over a few sites at once and one join of the worksheet XML with its values.
``--jobs N`` spreads the sites over N processes, each filling its own copy of the stencil and
sending back only the sites' summary outputs, so memory stays flat however many sites there are.
The parent process checks the sites file row by row (:class:`~tokenfactory_xl.sites.load.SiteRows`)
and keeps the sites to write pickled and deflated by blocks, each site's summary as a row of
floats and each staged workbook by the random part of its temporary name: some 500 bytes a
site in all.

Safety: every target is checked before anything is written (an existing file is never replaced
without ``--force``, an input never, whatever the flags); every file is written under a
temporary name in its folder (:mod:`tokenfactory_xl.files.disk`) and all are renamed into place only
when the last one is complete, so a run that fails (a full disk) or is stopped (Ctrl-C, SIGTERM)
leaves none of its outputs; the same inputs give byte-identical files.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
import time
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.errors import InputError, Problem
from ..files.build_cache import kept
from ..files.disk import (
    TEMP_PREFIX,
    Outputs,
    check_outputs,
    claim,
    discard,
    existing,
    stage,
)
from ..tfom.evaluation import Result, run, run_each
from ..tfom.inputs import SiteInputs, default_inputs
from ..tfom.operating_model import OUTPUT_NAMES
from ..workbook.charts import ChartParts
from ..workbook.stencil import COMPRESSION_LEVEL, Stencil
from .book import write_portfolio_to, write_summary_csv_to
from .contents import RISK_COLUMNS, SCENARIO_COLUMNS, SOLVE_SUFFIX, site_summary, summary_result

if TYPE_CHECKING:  # imported where a batch runs: a ``template`` reads no sites, starts no workers
    from ..sites.load import SiteRow, SiteRows, SitesFile
    from .workers import Workers

#: The portfolio's file name in the output folder (no site's workbook can take it: see
#: :data:`tokenfactory_xl.sites.RESERVED_STEMS`).
PORTFOLIO = "portfolio.xlsx"

#: Exit status when ``--skip-invalid`` left rows out (the others were written).
EXIT_SKIPPED = 1


def end_progress(stream: TextIO | None) -> None:
    """End a progress bar's line, so the message that follows starts on its own."""
    if stream is not None and stream.isatty():
        stream.write("\n")


# -- one workbook --------------------------------------------------------------------------------
class WorkbookFactory:
    """The TFOM workbook built once, filled per site.

    Parameters
    ----------
    level : zlib level for the worksheets (1: fast; 6: zlib's default; 0: stored).
    """

    def __init__(self, level: int = COMPRESSION_LEVEL):
        from ..workbook import build as workbook
        from ..workbook import values as workbook_values

        self._spots: dict = {}  # the stencil's positions of the plan's lines (StencilCells.at)
        # where each cell is, kept with the drawn template: filling needs no openpyxl
        self.plan = workbook.plan()
        defaults = default_inputs()
        template = _template_bytes(workbook)
        result = run(defaults)
        cells = {sheet: list(values) for sheet, values in
                 workbook_values.cell_values(self.plan, defaults, result).items()}
        self.stencil = Stencil(template, cells, level)
        self.charts = _chart_parts(self.stencil, cells, workbook)

        # The summary outputs are read from the cells the workbook names out_<name>: the
        # portfolio then shows exactly what each workbook stores, without a second model run.
        self._outputs = {name: self.stencil.defined_cells.get(f"out_{name}")
                         for name in OUTPUT_NAMES}
        self._outputs |= {c.name: self.stencil.defined_cells.get(c.line)
                          for c in SCENARIO_COLUMNS}
        # The default site's workbook made once: where the plan's cells, the charts' and the
        # summary's are in the stencil, and the charts cut at their series, are found here and
        # kept with the factory, not in every process's first site.
        self.make(defaults, result=result)

    def __getstate__(self) -> dict:
        # kept between runs (:mod:`build_cache`) with the positions found, named by the plan's
        # lines where they are found by object identity, which means nothing in another process
        from ..workbook.values import StencilCells

        return {**self.__dict__, "_spots": StencilCells.kept(self._spots, self.plan)}

    def __setstate__(self, state: dict) -> None:
        from ..workbook.values import StencilCells

        self.__dict__.update(state)
        self._spots = StencilCells.read_back(state["_spots"], self.plan)

    def workbook_bytes(self, inputs: SiteInputs, risk_draws: int = 0) -> bytes:
        """The site's workbook, every formula cell storing the model's value, as ``.xlsx``
        (its Risk sheet computed with ``risk_draws`` draws; 0: not computed)."""
        return self.make(inputs, risk_draws)[0]

    def make(self, inputs: SiteInputs, risk_draws: int = 0, result: Result | None = None,
             must_be_true: bool = False, solve: tuple[str, ...] = ()
             ) -> tuple[bytes, dict[str, float | None]]:
        """The site's workbook and its summary outputs (``None`` where the spec says none),
        with the risk columns when ``risk_draws`` draws were made (the Risk sheet's figures).
        ``result`` is the model's run of ``inputs`` when the caller has it (computed here if
        ``None``); ``must_be_true`` fills the Risk sheet's "what must be true" block (a solve
        per tornado driver, with the draws); ``solve`` names the inputs whose value at NPV 0
        the summary gets as ``<input>_at_npv0`` (the block's answers where it has them)."""
        from ..workbook import risk_values as workbook_risk
        from ..workbook import values as workbook_values

        if result is None and risk_draws > 0:
            result = run(inputs)  # its values serve the Risk sheet's variants and the cells
        figures = workbook_risk.compute(inputs, risk_draws, must_be_true,
                                        None if result is None else result.values)
        cells = workbook_values.StencilCells(self.stencil, self._spots)
        workbook_values.fill_cells(cells, self.plan, inputs, result, figures)
        values = cells.sheets
        extra: dict[str, float | None] = {}
        if figures is not None:
            risk_summary = figures.risk.summary()
            extra = {c.name: risk_summary[c.name] for c in RISK_COLUMNS}
        if solve:
            from ..tfom.risk import TORNADO_DRIVERS
            from ..tfom.solve import batch_solve

            known = dict(zip(TORNADO_DRIVERS, figures.must, strict=True)) \
                if figures is not None and figures.must is not None else None
            extra |= {name + SOLVE_SUFFIX: value
                      for name, value in batch_solve(
                          inputs, solve, known=known,
                          whole=None if result is None else result.values).items()}
        summary: dict[str, float | None] = {}
        parts = self.charts.render(values, int(inputs["horizon_months"]))  # type: ignore[arg-type]
        data = self.stencil.fill(values, parts)
        for name, where in self._outputs.items():
            if where is None:  # a workbook without that output cell: ask the model
                return data, {**site_summary(result if result is not None else run(inputs)),
                              **extra}
            value = values[where[0]][where[1]]
            summary[name] = float(value) if isinstance(value, (int, float)) else None
        return data, {**summary, **extra}


def _chart_parts(stencil: Stencil, cells: dict[str, list[str]], workbook) -> ChartParts:
    """The template's charts, with the values of the cells they read that no site changes (a
    series' title, a column of labels) taken from the template once."""
    from openpyxl.utils.cell import coordinate_to_tuple

    from ..workbook.plan import timeline_cells

    filled = {sheet: set(coords) for sheet, coords in cells.items()}
    book = workbook.default_workbook()  # what the stencil's template was saved from
    parts = ChartParts(stencil, {}, timeline_cells)
    static: dict[str, dict[str, object]] = {}
    for sheet, coords in parts.references():
        for coord in coords:
            if coord not in filled.get(sheet, set()):
                # read without ``book[sheet][coord]``, which would add the cell to the shared book
                cell = book[sheet]._cells.get(coordinate_to_tuple(coord))
                static.setdefault(sheet, {})[coord] = None if cell is None else cell.value
    parts.static = static
    return parts


def _template_bytes(workbook) -> bytes:
    """The default site's workbook (its Risk sheet not computed: each site's figures fill it),
    saved with the workbook module's deterministic save."""
    return workbook.default_workbook_bytes()


# The worker processes' factory: inherited from the parent where processes fork, built by the
# pool's initializer where they spawn (Windows, macOS).
_FACTORY: WorkbookFactory | None = None


def shared_factory(level: int = COMPRESSION_LEVEL) -> WorkbookFactory:
    """The process's factory at deflate ``level``: built once, or read back as an earlier run of
    this same code kept it (:mod:`tokenfactory_xl.files.build_cache`).

    One kept build serves every level (a level only says how a site's sheets are deflated as
    they are written): a ``template`` (level 6) and a ``batch`` (level 1) read the same file
    instead of each building the workbook once."""
    global _FACTORY
    if _FACTORY is None:
        # kept as it is: read by every run, 10 MB read faster than 1.5 MB inflated
        _FACTORY = kept("workbook-factory", WorkbookFactory, deflated=False)
    _FACTORY.stencil.level = level
    return _FACTORY


@dataclass(frozen=True)
class _Task:
    index: int
    inputs: SiteInputs
    target: Path
    risk_draws: int = 0
    solve: tuple[str, ...] = ()


#: Monte Carlo draws per site for the portfolio's risk columns: enough for a P10 and a P90 that
#: move by a few per cent of their spread between seeds, at about the cost of the workbook.
BATCH_RISK_DRAWS = 500

# The compression level of this batch, set before the workers start (and by the initializer).
_LEVEL = COMPRESSION_LEVEL


#: Sites a worker takes at a time: their model runs in one pass (``run_many``), a fraction of
#: the time of one run per site.
SITES_PER_PASS = 16


def _make(task: _Task, result: Result | None = None) -> tuple[int, dict[str, float | None], Path]:
    """Write one site's workbook under a temporary name beside its target; return its index,
    summary outputs and the temporary file (small, picklable); the batch renames it at the end."""
    data, summary = shared_factory(_LEVEL).make(task.inputs, task.risk_draws, result,
                                                must_be_true=bool(task.solve),
                                                solve=task.solve)
    return task.index, summary, stage(task.target, data)


def _make_some(tasks: list[_Task]) -> list[tuple[int, dict[str, float | None], Path]]:
    """:func:`_make` of a few sites, their model computed in one pass (each site alone if that
    pass fails: a site's own error is then raised as its own)."""
    made = []
    for task, result in zip(tasks, run_each([task.inputs for task in tasks]), strict=True):
        if isinstance(result, Exception):
            raise result
        made.append(_make(task, result))
    return made


def _init_pool(level: int) -> None:
    global _LEVEL
    _LEVEL = level
    shared_factory(level)


# -- progress ------------------------------------------------------------------------------------
class Progress:
    """Progress of a batch on ``stream``: a bar on a terminal, a line every 10 % in a log.

    Parameters
    ----------
    total : the number of workbooks to write.
    stream : usually ``sys.stderr``; ``None`` is silent.
    interactive : draw a bar (default: when ``stream`` is a terminal).
    """

    def __init__(self, total: int, stream: TextIO | None = sys.stderr,
                 interactive: bool | None = None):
        self.total, self.stream, self.done = total, stream, 0
        self.interactive = (bool(stream and stream.isatty()) if interactive is None
                            else interactive)
        self.start = self._last = time.perf_counter()
        self._next_line = 0.1

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self.stream is None:
            return
        now = time.perf_counter()
        if self.interactive:
            if now - self._last >= 0.1 or self.done == self.total:
                self._last = now
                share = self.done / self.total if self.total else 1.0
                bar = "#" * int(share * 30)
                self.stream.write(f"\r  [{bar:<30}] {self.done:,}/{self.total:,} workbooks "
                                  f"written ({self.speed(now)}) ")
                if self.done == self.total:
                    self.stream.write("\n")
                self.stream.flush()
        elif self.done >= self._next_line * self.total or self.done == self.total:
            while self._next_line * self.total <= self.done and self._next_line <= 1:
                self._next_line += 0.1
            self.stream.write(f"  {self.done:,}/{self.total:,} workbooks written "
                              f"({self.speed(now)})\n")
            self.stream.flush()

    def rate(self, now: float | None = None) -> float:
        elapsed = (now or time.perf_counter()) - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def speed(self, now: float | None = None) -> str:
        """The pace so far in words that read right at any speed: "38 a second", "2.5 a
        second", "1.4 s each" (never "0/s")."""
        rate = self.rate(now)
        if rate >= 10:
            return f"{rate:,.0f} a second"
        if rate >= 1:
            return f"{rate:.1f} a second"
        return f"{1 / rate:,.1f} s each" if rate > 0 else "starting"


# -- the batch -----------------------------------------------------------------------------------
@dataclass
class BatchReport:
    """What a batch did."""

    outdir: Path
    written: Sequence[Path] = field(default_factory=list)
    skipped: list[SiteRow] = field(default_factory=list)
    portfolio: Path | None = None
    summary_csv: Path | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def exit_status(self) -> int:
        """0 when every site was written, :data:`EXIT_SKIPPED` when rows were left out."""
        return EXIT_SKIPPED if self.skipped else 0


class TargetsExist(FileExistsError):
    """Files the batch would write exist already and ``force`` was not given.

    ``paths`` lists every one of them; nothing has been written.
    """

    def __init__(self, paths: Sequence[Path]):
        self.paths = list(paths)
        lines = [f"{len(self.paths)} file{'s' if len(self.paths) != 1 else ''} to write "
                 "exist already, so nothing was written (add --force to replace them, or "
                 "choose another -o folder):"]
        lines += [f"  - {p}" for p in self.paths]
        super().__init__("\n".join(lines))


def plan_batch(sites_path: str | os.PathLike, outdir: str | os.PathLike, *,
               sheet: str | None = None, skip_invalid: bool = False, force: bool = False,
               summary_csv: str | os.PathLike | None = None, header_row: int | None = None,
               sites_file: SitesFile | _Checked | None = None,
               cohorts: str | os.PathLike | None = None
               ) -> tuple[Sequence[SiteRow | _Site], list[SiteRow], Sequence[Path]]:
    """Check the sites file and the targets before writing anything.

    Returns the rows to write, the rows skipped, and every file that will be written (the
    workbooks in row order, then the portfolio and the summary CSV). ``sites_file``: the sites
    file as checked already; by default it is checked row by row, holding only the sites to
    write, compactly (:class:`_Checked`).

    Raises
    ------
    InputError
        with every problem of the sites file (unless ``skip_invalid`` and only rows are bad),
        or when a target is the sites file itself, a link or a folder (whatever ``force``).
    TargetsExist
        listing every target that exists already, when ``force`` is not given.
    """
    from ..sites.load import SiteRows

    sites = sites_file or _Checked(SiteRows(sites_path, sheet, header_row, cohorts))
    if sites.file_problems or (sites.problems and not skip_invalid):
        raise InputError(sites.problems)
    rows, skipped = sites.valid_rows, list(sites.invalid_rows)
    if not rows:
        raise InputError([*sites.problems, Problem(
            "sites file", str(sites_path), "has no valid site row, so nothing was written",
            "fix the rows listed above")])
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise InputError([Problem("-o", str(outdir), "is a file, not a folder",
                                  "give a folder for the workbooks (it is created if needed)")])
    others = [("portfolio", outdir / PORTFOLIO)]
    if summary_csv is not None:
        others.append(("--summary-csv", Path(summary_csv)))
    targets = _targets(outdir, rows, [path for _, path in others])
    inputs = [("the sites file", sites_path)]
    if cohorts is not None:
        inputs.append(("the cohorts file", cohorts))
    check_outputs(_labelled(rows, targets, others), inputs)
    if not force:
        clashes = existing(targets)
        if clashes:
            raise TargetsExist(clashes)
    return rows, skipped, targets


class _Lazy(Sequence):
    """A sequence whose items are made when they are read (:meth:`_item`), indexed and sliced
    as a list is: a batch of many thousand sites holds none of them."""

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        at = index + len(self) if index < 0 else index
        if not 0 <= at < len(self):
            raise IndexError(index)
        return self._item(at)

    def _item(self, index: int):  # type: ignore[no-untyped-def]
        raise NotImplementedError


class _RowsThen(_Lazy):
    """``made`` of each of ``rows``, made when it is read, then ``others`` as they are."""

    def __init__(self, rows: Sequence, made: Callable, others: Sequence = ()):
        self._rows, self._made, self._others = rows, made, others

    def __len__(self) -> int:
        return len(self._rows) + len(self._others)

    def _item(self, index: int):  # type: ignore[no-untyped-def]
        if index < len(self._rows):
            return self._made(self._rows[index])
        return self._others[index - len(self._rows)]


def _targets(outdir: Path, rows: Sequence[SiteRow | _Site], others: Sequence[Path] = ()
             ) -> Sequence[Path]:
    """Each site's workbook path, made from its file name when it is asked for, then
    ``others``."""
    return _RowsThen(rows, lambda row: outdir / f"{row.file_stem}.xlsx", others)


def _labelled(rows: Sequence[SiteRow | _Site], targets: Sequence[Path],
              others: Sequence[tuple[str, Path]]) -> Sequence[tuple[str, Path]]:
    """(what it is, path) of every output, for :func:`check_outputs`: each site's workbook,
    made when it is asked for, then ``others``."""
    return _RowsThen(range(len(rows)), lambda i: (
        f"workbook of site {rows[i].site_name!r} (row {rows[i].row})", targets[i]), others)


def run_batch(sites_path: str | os.PathLike, outdir: str | os.PathLike, *,
              sheet: str | None = None, skip_invalid: bool = False, force: bool = False,
              jobs: int = 1, summary_csv: str | os.PathLike | None = None,
              progress: Progress | Callable[[int], Progress] | None = None,
              level: int = COMPRESSION_LEVEL, header_row: int | None = None,
              cohorts: str | os.PathLike | None = None,
              risk_draws: int = BATCH_RISK_DRAWS, solve: Sequence[str] = ()) -> BatchReport:
    """Write one workbook per valid site of ``sites_path`` into ``outdir``, then the portfolio.

    Parameters
    ----------
    sites_path : the sites file (``.csv`` or ``.xlsx``).
    outdir : the output folder (created if needed).
    sheet : the worksheet of an ``.xlsx`` sites file (default: the one it opens on).
    skip_invalid : write the valid rows and list the bad ones instead of writing nothing.
    force : replace existing files.
    jobs : worker processes [count]; 1 writes in this process.
    summary_csv : also write the portfolio table as CSV to this path.
    progress : a :class:`Progress`, or a function of the number of workbooks giving one.
    level : zlib level for the worksheets.
    header_row : the row of the sites file holding the input names (default: found).
    cohorts : a cohorts file for the sites' further cohorts (default: the sites workbook's
        ``cohorts`` sheet, if it has one).
    risk_draws : Monte Carlo draws per site for the portfolio's risk columns (0: none).
    solve : numeric inputs whose value at which each site's live NPV is 0 the portfolio shows
        ("what must be true" columns ``<input>_at_npv0``; blank where no value of the input's
        range gives NPV 0).

    Raises
    ------
    InputError, TargetsExist
        for a bad sites file or existing targets: nothing is written.
    OSError, Stopped, KeyboardInterrupt
        when writing fails or the run is stopped: none of the outputs is written.
    """
    started = time.perf_counter()
    # The workers start before the sites are read: each holds the template it inherits, never
    # the sites (their memory would otherwise grow with the sites file).
    with _start_workers(jobs, level) as pool:
        return _run(pool, started, sites_path, outdir, sheet=sheet, skip_invalid=skip_invalid,
                    force=force, summary_csv=summary_csv, progress=progress, level=level,
                    header_row=header_row, cohorts=cohorts, risk_draws=risk_draws,
                    solve=tuple(solve))


def _start_workers(jobs: int, level: int) -> AbstractContextManager[Workers | None]:
    """The worker processes of a run with ``jobs`` > 1, the template built first for them to
    inherit where processes fork; none for one job (the sites are written in this process)."""
    if jobs <= 1:
        return nullcontext(None)
    from .workers import Workers

    _init_pool(level)  # the parent's factory, which forked workers inherit
    return Workers(_make_some, jobs, initializer=_init_pool, initargs=(level,))


def _run(pool: Workers | None, started: float, sites_path: str | os.PathLike,
         outdir: str | os.PathLike, *, sheet: str | None, skip_invalid: bool, force: bool,
         summary_csv: str | os.PathLike | None,
         progress: Progress | Callable[[int], Progress] | None, level: int,
         header_row: int | None, cohorts: str | os.PathLike | None,
         risk_draws: int, solve: tuple[str, ...] = ()) -> BatchReport:
    from ..sites.load import SiteRows

    # every row read and checked, one at a time, before a folder is made
    sites = _Checked(SiteRows(sites_path, sheet, header_row, cohorts))
    plan_batch(sites_path, outdir, skip_invalid=skip_invalid, force=force, summary_csv=summary_csv,
         sites_file=sites, cohorts=cohorts)
    Path(outdir).mkdir(parents=True, exist_ok=True)
    # One run at a time writes into a folder: a second one is refused (not queued: its files
    # would replace the first's), and the targets are checked again once the folder is ours.
    with claim(outdir, wait=False, what="into the folder"):
        rows, skipped, targets = plan_batch(sites_path, outdir, skip_invalid=skip_invalid,
                                      force=force, summary_csv=summary_csv, sites_file=sites,
                                      cohorts=cohorts)
        notes = sites.notes
        inputs = sites.valid_rows.inputs  # each site's checked inputs, read back as asked for
        del rows
        outdir = Path(outdir)
        if callable(progress):
            progress = progress(len(inputs))
        report = BatchReport(outdir, skipped=skipped, notes=notes)
        workbook_targets = _targets(outdir, sites.valid_rows)
        del targets
        summaries = _Summaries(len(inputs))
        results = _generate(inputs, workbook_targets, pool, level, risk_draws, solve)
        with Outputs() as outputs:
            staged = outputs.many(workbook_targets)
            try:
                for index, summary, temp in results:
                    staged.put(index, temp)
                    summaries.put(index, summary)
                    if progress is not None:
                        progress.advance()
                entries = _Entries(inputs, summaries)
                report.portfolio = outputs.add(  # written as it is made, never held whole
                    outdir / PORTFOLIO,
                    lambda handle: write_portfolio_to(handle, entries))  # type: ignore[arg-type]
                if summary_csv is not None:
                    report.summary_csv = outputs.add(  # written row by row, never held whole
                        summary_csv,
                        lambda handle: write_summary_csv_to(handle, entries))  # type: ignore[arg-type]
                outputs.commit()
            except BaseException:
                results.close()  # the workers are gone before their temporary files are removed
                outputs.discard()
                _remove_temporaries(workbook_targets)
                raise
        report.written = workbook_targets
        report.seconds = time.perf_counter() - started
        return report


@dataclass(frozen=True)
class _Site:
    """A site checked and kept to be written: what the batch reads of its row."""

    row: int
    site_name: str
    file_stem: str
    inputs: SiteInputs


class _Kept(_Lazy):
    """The sites to write, kept compactly: in blocks of :data:`BLOCK` sites, each pickled and
    deflated (some 100 bytes a site, where the checked inputs are 1 KB), read back a block at
    a time as they are asked for, in order (the last block read is held)."""

    #: Sites a block.
    BLOCK = 64

    def __init__(self) -> None:
        self._blocks: list[bytes] = []
        self._filling: list[_Site] = []
        self._count = 0
        self._read: tuple[int, list[_Site]] = (-1, [])

    def append(self, site: _Site) -> None:
        self._filling.append(site)
        self._count += 1
        if len(self._filling) == self.BLOCK:
            self._close_block()

    def _close_block(self) -> None:
        self._blocks.append(zlib.compress(pickle.dumps(self._filling, pickle.HIGHEST_PROTOCOL),
                                          1))
        self._filling = []

    def __len__(self) -> int:
        return self._count

    def _item(self, index: int) -> _Site:
        block, at = divmod(index, self.BLOCK)
        if block == len(self._blocks):
            return self._filling[at]
        if self._read[0] != block:
            self._read = (block, pickle.loads(zlib.decompress(self._blocks[block])))
        return self._read[1][at]

    @property
    def inputs(self) -> Sequence[SiteInputs]:
        """Each site's checked inputs."""
        return _RowsThen(self, lambda site: site.inputs)


class _Checked:
    """A sites file checked row by row for a batch (:class:`~tokenfactory_xl.sites.load.SiteRows`):
    every problem, the rows that cannot be written, and the sites to write kept compactly
    (:class:`_Kept`), never every row at once."""

    def __init__(self, sites: SiteRows):
        self.file_problems, self.notes = sites.file_problems, sites.notes
        self.invalid_rows: list[SiteRow] = []
        self.valid_rows = _Kept()
        for row in sites.checked():
            if row.ok:
                self.valid_rows.append(_Site(row.row, row.site_name, row.file_stem,
                                             row.inputs))  # type: ignore[arg-type]
            else:
                self.invalid_rows.append(row)

    @property
    def problems(self) -> tuple[Problem, ...]:
        """Every problem: the file's own first, then each row's in row order."""
        return self.file_problems + tuple(p for r in self.invalid_rows for p in r.problems)


class _Summaries:
    """Each site's summary outputs, kept as one row of floats (NaN: none) per site: a tenth of
    the memory of a dict per site, for batches of many thousand sites."""

    def __init__(self, count: int):
        self.keys: tuple[str, ...] = ()
        self._table = array("d")
        self._count = count

    def put(self, index: int, summary: dict[str, float | None]) -> None:
        if not self.keys:
            self.keys = tuple(summary)
            self._table = array("d", [math.nan]) * (self._count * len(self.keys))
        assert summary.keys() == set(self.keys), "every site's summary has the same outputs"
        width = len(self.keys)
        found = [summary[k] for k in self.keys]
        self._table[index * width:(index + 1) * width] = array(
            "d", [math.nan if v is None else v for v in found])

    def get(self, index: int) -> dict[str, float | None]:
        width = len(self.keys)
        row = self._table[index * width:(index + 1) * width]
        return {k: (v if math.isfinite(v) else None) for k, v in zip(self.keys, row, strict=True)}


class _Entries(_Lazy):
    """The portfolio's entries, each made when it is read (the portfolio reads them a few times
    over): the sites' inputs with their summaries, nothing per site kept beside them."""

    def __init__(self, inputs: Sequence[SiteInputs], summaries: _Summaries):
        self._inputs, self._summaries = inputs, summaries

    def __len__(self) -> int:
        return len(self._inputs)

    def _item(self, index: int) -> tuple[SiteInputs, Result]:
        inputs = self._inputs[index]
        return inputs, summary_result(inputs, self._summaries.get(index))


def _generate(sites: Sequence[SiteInputs], targets: Sequence[Path], pool: Workers | None,
              level: int, risk_draws: int = 0, solve: tuple[str, ...] = ()
              ) -> Iterator[tuple[int, dict[str, float | None], Path]]:
    from .workers import passes

    parts = ([_Task(i, sites[i], targets[i], risk_draws, solve) for i in part]
             for part in passes(len(sites), pool.jobs if pool else 1, SITES_PER_PASS))
    if pool is None:
        _init_pool(level)  # this process writes every workbook
        for part in parts:
            yield from _make_some(part)
        return
    for made in pool.imap_unordered(parts):
        yield from made


def _remove_temporaries(targets: Sequence[Path]) -> None:
    """Remove the temporary files of workbooks a failed or interrupted run left behind (a worker
    stopped between writing one and handing it over)."""
    folders = {t.parent for t in targets}
    names = {t.name for t in targets}
    for folder in folders:
        discard(temp for temp in folder.glob(f"{TEMP_PREFIX}*.tmp")
                if temp.name[len(TEMP_PREFIX):-len(".tmp")].partition("-")[2] in names)
