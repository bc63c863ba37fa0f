"""What an input and an output million tokens cost, from benchmark files: the arithmetic, the
workbook and the chart of ``tokenfactory-xl cost`` (the command: :mod:`tokenfactory_xl.cli.cost`).

A serving benchmark says how many tokens a GPU made and how fast each user saw them; the price
of a GPU-hour turns that into money. For each run of each file read by
:mod:`tokenfactory_xl.capacity.actuals` (vLLM, SGLang, AIPerf, nightly-suite results) the command
prints the throughput per GPU, the output tokens per second one user sees, and the cost of a million
input and of a million output tokens at ``--gpu-hour`` dollars per GPU-hour.

**Input vs output.** Prefill reads a prompt token far faster than decode writes an output token
(methodology §2), so an output token costs more. A run measures the blend T of both, with output
share o; splitting it needs the ratio r of the prefill to the decode rate: how the GPUs' time
divides between prefill and decode. Never from the TTFT, which holds the time a request waited
in the queue (at high concurrency most of it: an input token would come out dearer than an
output token). In order: ``--prefill-decode-ratio`` as given; the file's measured prefill
throughput (AIPerf's active prefill rate: tokens per second while prefilling), with T_d from
the blend; else, given ``--gpu``/``--model``/``--precision``, the attainable model of
methodology §5.1 at the run's batch (its concurrency) and context
(:func:`tokenfactory_xl.core.serving.gpu_seconds_per_token`). The output says which.
Then T_d = T × ((1 − o) ÷ r + o) and T_p = r × T_d
(:func:`tokenfactory_xl.core.economics.decode_tps_from_blend`), and the costs are §2's
C × 10⁶ ÷ (3,600 × T_p) and C × 10⁶ ÷ (3,600 × T_d) at the measured load (the GPUs were paid
for the whole run: utilisation 1). Their token-weighted mean is the cost of a million tokens.

**A sweep** (files, or runs of one file, at several concurrencies) draws the classic trade-off:
throughput per GPU against tokens per second per user. ``-o FILE.xlsx`` writes the points and
an Excel scatter chart of that curve; ``--png FILE.png`` renders the chart through LibreOffice
(no plotting library needed). ``--ttft-slo-ms`` names the best point, the one with the most
tokens per GPU (so the cheapest tokens) whose TTFT meets the objective (p99 where the file
gives it, else the median, and the output says which).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..core import economics as model
from ..core import serving as capacity
from ..core.errors import TokenFactoryError
from ..workbook.stencil import repack_to
from . import actuals


@dataclass(frozen=True)
class CostPoint:
    """One run's throughput and costs.

    Attributes
    ----------
    label : the file (and run) it came from
    concurrency : requests in flight, when the file says
    tps_per_gpu : all tokens per second per GPU [tokens/s]
    tps_per_user : output tokens per second one user sees [tokens/s], when known
    output_share : output tokens ÷ all tokens [fraction]
    prefill_decode_ratio : r, prefill ÷ decode tokens per GPU-second; None when nothing gives
        it (then no input/output split either)
    ratio_basis : where r came from, or what would give it
    prefill_tps_per_gpu, decode_tps_per_gpu : T_p and T_d [tokens/s], or None
    cost_per_mtok, cost_per_mtok_input, cost_per_mtok_output : [$ per million tokens]; the
        split ones None without r
    ttft_ms : the TTFT the objective is checked against [ms], and ``ttft_stat`` (p99 or p50)
    """

    label: str
    concurrency: float | None
    tps_per_gpu: float
    tps_per_user: float | None
    output_share: float
    prefill_decode_ratio: float | None
    ratio_basis: str
    prefill_tps_per_gpu: float | None
    decode_tps_per_gpu: float | None
    cost_per_mtok: float
    cost_per_mtok_input: float | None
    cost_per_mtok_output: float | None
    ttft_ms: float | None
    ttft_stat: str | None


class CostProblem(TokenFactoryError, ValueError):
    """A run whose costs cannot be split: says what is missing and the fix."""


#: What a run without a split basis says instead of one.
NO_SPLIT = ("no input/output split: the file has no measured prefill throughput; give --gpu, "
            "--model and --precision (the model of spec 5.1 at the run's batch) or "
            "--prefill-decode-ratio (the TTFT is not used: it holds queueing)")


def measured_prefill_ratio(found: actuals.Measurement, gpus: int) -> float | None:
    """r = T_p ÷ T_d from the file's measured prefill throughput: T_p = prefill tokens/s ÷
    GPUs, T_d from the blend 1/T = (1 − o)/T_p + o/T_d; None when the file has no prefill rate
    or it does not fit the blend (the prefill alone would take longer than the run)."""
    share = found.output_share
    if not found.prefill_tps or share is None or not share > 0:
        return None
    t, t_p = found.tps / gpus, found.prefill_tps / gpus
    room = 1 / t - (1 - share) / t_p
    if not room > 0:
        return None
    return t_p / (share / room)


def model_ratio(found: actuals.Measurement, setup: capacity.Setup) -> float | None:
    """r = T_p ÷ T_d from the attainable model of methodology §5.1 at the run's batch (its
    concurrency) and context (mean prompt + half the mean output); None without them."""
    if not (found.concurrency and found.prompt_tokens):
        return None
    output = found.output_per_request or 0.0
    prefill, decode = capacity.gpu_seconds_per_token(
        setup, max(round(found.concurrency), 1), found.prompt_tokens + output / 2,
        found.prompt_tokens)
    return decode / prefill


def cost_point(found: actuals.Measurement, gpu_hour: float, gpus: int,
               ratio: float | None = None, setup: capacity.Setup | None = None) -> CostPoint:
    """The throughput per GPU and the input/output cost split of one run (module docstring)."""
    label = found.source
    share = found.output_share
    if share is None:
        raise CostProblem(f"{label}: gives no input/output token counts or rates; the cost "
                          "split needs the output share")
    basis = "given (--prefill-decode-ratio)"
    if ratio is None:
        ratio = measured_prefill_ratio(found, gpus)
        basis = "GPU time: the file's measured prefill throughput"
    if ratio is None and setup is not None:
        ratio = model_ratio(found, setup)
        basis = (f"GPU time: the attainable model (spec 5.1) at the run's batch "
                 f"{found.concurrency:,.0f}" if found.concurrency else "")
    per_gpu = found.tps if found.per_gpu_only else found.tps / gpus
    ttft, stat = ((found.ttft_p99_ms, "p99") if found.ttft_p99_ms is not None
                  else (found.ttft_p50_ms, "p50") if found.ttft_p50_ms is not None
                  else (None, None))
    if ratio is None:  # the cost of a token, but no split: nothing measured or modelled gives it
        return CostPoint(
            label=label, concurrency=found.concurrency, tps_per_gpu=per_gpu,
            tps_per_user=found.tps_per_user, output_share=share, prefill_decode_ratio=None,
            ratio_basis=NO_SPLIT + ("" if setup is None else
                                    " (the model needs the run's concurrency and prompt "
                                    "length, which the file does not give)"),
            prefill_tps_per_gpu=None, decode_tps_per_gpu=None,
            cost_per_mtok=float(model.cost_per_mtok(gpu_hour, per_gpu, 1.0)),
            cost_per_mtok_input=None, cost_per_mtok_output=None, ttft_ms=ttft, ttft_stat=stat)
    decode = float(model.decode_tps_from_blend(per_gpu, share, ratio))
    prefill = ratio * decode
    return CostPoint(
        label=label, concurrency=found.concurrency, tps_per_gpu=per_gpu,
        tps_per_user=found.tps_per_user, output_share=share, prefill_decode_ratio=ratio,
        ratio_basis=basis, prefill_tps_per_gpu=prefill, decode_tps_per_gpu=decode,
        cost_per_mtok=float(model.cost_per_mtok(gpu_hour, per_gpu, 1.0)),
        cost_per_mtok_input=float(model.cost_per_mtok_input(gpu_hour, prefill, 1.0)),
        cost_per_mtok_output=float(model.cost_per_mtok_output(gpu_hour, decode, 1.0)),
        ttft_ms=ttft, ttft_stat=stat)


def best_point(points: list[CostPoint], slo_ms: float) -> CostPoint | None:
    """The point with the most tokens per GPU whose TTFT meets ``slo_ms``; None when none does."""
    meeting = [p for p in points if p.ttft_ms is not None and p.ttft_ms <= slo_ms]
    return max(meeting, key=lambda p: p.tps_per_gpu) if meeting else None


# -- the workbook and its chart -----------------------------------------------------------------
_COLUMNS = (("run", "label", None), ("concurrency", "concurrency", "#,##0"),
            ("tokens/s per user", "tps_per_user", "#,##0.0"),
            ("tokens/s per GPU", "tps_per_gpu", "#,##0"),
            ("output share", "output_share", "0.0%"),
            ("prefill:decode ratio", "prefill_decode_ratio", "0.0"),
            ("$ per Mtok", "cost_per_mtok", "0.0000"),
            ("$ per input Mtok", "cost_per_mtok_input", "0.0000"),
            ("$ per output Mtok", "cost_per_mtok_output", "0.0000"),
            ("TTFT ms", "ttft_ms", "#,##0"), ("TTFT statistic", "ttft_stat", None))


def cost_workbook_bytes(points: list[CostPoint], gpu_hour: float, title: str,
                   best: CostPoint | None = None, slo_ms: float | None = None) -> bytes:
    """An .xlsx with the chart first (sheet ``Curve``) and the points (sheet ``Points``): the
    throughput per GPU against tokens/s per user of the runs that give both."""
    from openpyxl import Workbook
    from openpyxl.chart import Reference, ScatterChart, Series
    from openpyxl.chart.legend import Legend
    from openpyxl.chart.marker import Marker
    from openpyxl.chart.shapes import GraphicalProperties
    from openpyxl.styles import Font

    wb = Workbook()
    curve = wb.active
    curve.title = "Curve"
    sheet = wb.create_sheet("Points")
    sheet.append([header for header, _, _ in _COLUMNS])
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    plotted = sorted((p for p in points if p.tps_per_user), key=lambda p: p.tps_per_user or 0)
    rest = [p for p in points if not p.tps_per_user]
    for p in plotted + rest:
        # labels are written as text values, never formulas (a file name may start with "=")
        sheet.append([getattr(p, attr) for _, attr, _ in _COLUMNS])
        sheet.cell(sheet.max_row, 1).data_type = "s"
    for col, (_, _, fmt) in enumerate(_COLUMNS, start=1):
        if fmt:
            for row in range(2, sheet.max_row + 1):
                sheet.cell(row, col).number_format = fmt
    sheet.column_dimensions["A"].width = 48
    for letter in "BCDEFGHIJK":
        sheet.column_dimensions[letter].width = 16
    curve["A1"] = title
    curve["A1"].data_type = "s"  # a title made of file names stays text, never a formula
    curve["A1"].font = Font(bold=True, size=12)
    curve["A2"] = f"at ${gpu_hour:,.2f} per GPU-hour; points on sheet Points"
    curve["A2"].data_type = "s"
    if plotted:
        chart = ScatterChart()
        chart.title = "Throughput per GPU vs tokens/s per user"
        chart.style = 13
        chart.scatterStyle = "lineMarker"
        chart.x_axis.title = "output tokens/s per user"
        chart.y_axis.title = "tokens/s per GPU"
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        chart.legend = None
        xs = Reference(sheet, min_col=3, min_row=2, max_row=len(plotted) + 1)
        ys = Reference(sheet, min_col=4, min_row=2, max_row=len(plotted) + 1)
        series = Series(ys, xs, title="runs")
        series.marker = Marker(symbol="circle", size=8)
        series.marker.graphicalProperties = GraphicalProperties(solidFill="1F4E79")
        series.graphicalProperties.line.solidFill = "1F4E79"
        series.graphicalProperties.line.width = 28575
        series.smooth = False
        chart.series.append(series)
        if best is not None and best in plotted:
            row = plotted.index(best) + 2
            mark = Series(Reference(sheet, min_col=4, min_row=row),
                          Reference(sheet, min_col=3, min_row=row),
                          title=f"best meeting TTFT ≤ {slo_ms:,.0f} ms" if slo_ms
                          else "best meeting the TTFT objective")
            mark.marker = Marker(symbol="diamond", size=15)
            mark.marker.graphicalProperties = GraphicalProperties(solidFill="C00000")
            mark.graphicalProperties.line.noFill = True
            mark.smooth = False
            chart.series.append(mark)
            chart.legend = Legend()
            chart.legend.position = "b"
        chart.width, chart.height = 22, 12
        curve.add_chart(chart, "A4")
    curve.page_setup.orientation = "landscape"
    curve.page_setup.fitToWidth = 1
    curve.page_setup.fitToHeight = 1
    curve.sheet_properties.pageSetUpPr.fitToPage = True
    buffer = io.BytesIO()
    wb.save(buffer)
    out = io.BytesIO()  # fixed timestamps, and the spellings every reader expects (ooxml)
    repack_to(buffer.getvalue(), out)
    return out.getvalue()


def render_png(xlsx: bytes, dpi: int = 90) -> bytes:
    """The chart sheet of ``xlsx`` as PNG bytes: LibreOffice prints it to PDF, poppler's
    ``pdftoppm`` rasterises the first page (the project's own render path; no plotting library).
    Raises RuntimeError naming what is missing or failed."""
    from ..engines import libreoffice

    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        raise RuntimeError("pdftoppm is not installed (apt-get install poppler-utils)")
    with tempfile.TemporaryDirectory(prefix="tfxl-cost-") as folder:
        source = Path(folder, "curve.xlsx")
        source.write_bytes(xlsx)
        [pdf] = libreoffice.convert([source], folder, "pdf")
        # the chart fills the top of the landscape page: keep 6.7 inches of it
        proc = subprocess.run([pdftoppm, "-png", "-r", str(dpi), "-singlefile", "-f", "1",
                               "-l", "1", "-H", str(round(6.7 * dpi)), str(pdf),
                               str(Path(folder, "curve"))],
                              capture_output=True, text=True, timeout=120)
        png = Path(folder, "curve.png")
        if proc.returncode != 0 or not png.exists():
            raise RuntimeError(f"pdftoppm failed (exit {proc.returncode}): {proc.stderr.strip()}")
        return png.read_bytes()
