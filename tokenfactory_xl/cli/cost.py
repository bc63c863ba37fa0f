"""The ``tokenfactory-xl cost`` command: throughput per GPU and the cost of an input and an output
million tokens, from benchmark files, as a table, a workbook and a chart.

The costing is :mod:`tokenfactory_xl.capacity.cost`'s; this module parses the options and
prints or writes what they ask for.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..capacity import actuals
from ..capacity.cost import (
    CostPoint,
    CostProblem,
    best_point,
    cost_point,
    cost_workbook_bytes,
    render_png,
)
from ..core import roofline
from ..core import serving as capacity
from .common import add_csv_option, positive_float, positive_int, write_output


# -- the command ---------------------------------------------------------------------------------
def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None or not math.isfinite(value) else format(value, spec)


def cmd_cost(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..files.disk import check_writable
    from .common import is_stdio, refuse_terminal_output, table_format

    table_format(args)  # --json and --csv: one of them
    if is_stdio(args.output) and is_stdio(args.png):
        raise UsageError("-o - and --png -: only one of them can be the standard output")
    refuse_terminal_output(args.output, "the workbook")  # before reading and rendering
    refuse_terminal_output(args.png, "the PNG", "--png")
    for option, path, suffix in (("--output", args.output, ".xlsx"), ("--png", args.png, ".png")):
        if not path or is_stdio(path):
            continue
        if Path(path).suffix.lower() != suffix:
            raise UsageError(f"{option} {path}: the file must end in {suffix}")
        if not Path(path).resolve().parent.is_dir():
            raise UsageError(f"{option} {path}: its folder does not exist; create it first")
        if os.path.lexists(path) and not args.force:
            raise UsageError(f"{option} {path}: exists; nothing was written (add --force to "
                            "replace it)")
    if args.png and (actuals_soffice() is None or shutil.which("pdftoppm") is None):
        raise UsageError("--png renders the chart with LibreOffice and pdftoppm, which are not "
                        "both installed; install them (apt-get install libreoffice-calc-nogui "
                        "poppler-utils) or leave out --png and open the chart of --output in "
                        "Excel")
    try:
        runs = actuals.read_files(args.files, run=args.run)
    except actuals.FileProblem as exc:
        raise UsageError(str(exc)) from None
    if any(r.format == actuals.FORMATS[3] for r in runs):
        raise UsageError("cost reads benchmark result files, not Prometheus scrapes; use "
                        "actuals for scrapes")
    setup = None
    if args.gpu or args.model or args.precision:
        missing = [o for o, v in (("--gpu", args.gpu), ("--model", args.model),
                                  ("--precision", args.precision)) if not v]
        if missing:
            raise UsageError(f"the model's split needs {', '.join(missing)} too")
    points = []
    for found in runs:
        known = args.gpus or found.gpus
        if not known and (args.gpu or not found.per_gpu_only):
            raise UsageError(f"{found.source}: the file does not say how many GPUs ran it; "
                            + ("the model's split" if found.per_gpu_only else
                               "a cost per token") + " needs --gpus N (the GPUs of the measured "
                            "instance)")
        gpus = int(known or 1)  # a per-GPU-only file's figures are divided by nothing
        if args.gpu:
            setup = capacity.Setup.of(args.gpu, args.model, args.precision, gpus,
                                      args.parallel, args.kv_precision)
        try:
            points.append(cost_point(found, args.gpu_hour, gpus, args.prefill_decode_ratio,
                                     setup))
        except CostProblem as exc:
            raise UsageError(str(exc)) from None
    best = best_point(points, args.ttft_slo_ms) if args.ttft_slo_ms else None
    if args.output or args.png:
        title = f"{len(points)} run{'s' if len(points) != 1 else ''}: " + ", ".join(
            dict.fromkeys(Path(f).name for f in args.files))
        data = cost_workbook_bytes(points, args.gpu_hour, title[:200], best, args.ttft_slo_ms)
        picture = None
        if args.png:  # rendered first: a failure leaves no file written
            for path in (args.output, args.png):  # a read-only or full disk said before it
                if path and not is_stdio(path):
                    check_writable(path)
            try:
                picture = render_png(data)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                raise UsageError(f"--png {args.png}: the chart could not be rendered "
                                f"({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
        if args.output:
            write_output(args.output, data, "the workbook")
        if picture is not None:
            write_output(args.png, picture, "the PNG", "--png")
    if is_stdio(args.output) or is_stdio(args.png):  # the file is the standard output
        with contextlib.redirect_stdout(sys.stderr):
            return _report(args, points, best)
    return _report(args, points, best)


def _ttft(p: CostPoint) -> str:
    """A run's TTFT with the statistic it is (``83 p50``), or ``n/a``."""
    return f"{_fmt(p.ttft_ms, ',.0f')} {p.ttft_stat}" if p.ttft_stat else "n/a"


def _report(args: argparse.Namespace, points: list[CostPoint], best: CostPoint | None) -> int:
    from .actuals import json_ready
    from .common import print_csv, say, terminal_width

    if args.csv:
        fields = list(points[0].__dict__) if points else ["label"]
        print_csv([*fields, "best"], [[*p.__dict__.values(), best is p] for p in points])
        return 0
    if args.json:
        payload = {"gpu_hour": args.gpu_hour, "points": [p.__dict__ for p in points],
                   "ttft_slo_ms": args.ttft_slo_ms,
                   "best": best.label if best else None}
        print(json.dumps(json_ready(payload), indent=2, allow_nan=False))
        return 0
    width = terminal_width()
    say(f"cost at ${args.gpu_hour:,.2f} per GPU-hour (utilisation 1: the GPUs are paid for "
        "the whole run)", width)
    lines = [f"  {'run':<40} {'conc':>6} {'tok/s/GPU':>10} {'tok/s/user':>10} "
             f"{'$/Mtok in':>10} {'$/Mtok out':>10} {'TTFT ms':>12}"]
    for p in points:
        label = p.label if len(p.label) <= 40 else "…" + p.label[-39:]
        lines.append(f"  {label:<40} {_fmt(p.concurrency, ',.0f'):>6} {p.tps_per_gpu:>10,.1f} "
                     f"{_fmt(p.tps_per_user, ',.1f'):>10} {_fmt(p.cost_per_mtok_input, '.4f'):>10} "
                     f"{_fmt(p.cost_per_mtok_output, '.4f'):>10} {_ttft(p):>12}"
                     + ("  ← best" if best is p else ""))
    if width is not None and max(map(len, lines)) > width:
        # a narrow terminal: each run's name on a line of its own, its figures named under it
        lines = []
        for p in points:
            lines.append(f"  {p.label}" + ("  ← best" if best is p else ""))
            lines.append(f"    concurrency {_fmt(p.concurrency, ',.0f')}; tok/s per GPU "
                         f"{p.tps_per_gpu:,.1f}, per user {_fmt(p.tps_per_user, ',.1f')}")
            lines.append(f"    $/Mtok in {_fmt(p.cost_per_mtok_input, '.4f')}, out "
                         f"{_fmt(p.cost_per_mtok_output, '.4f')}; TTFT ms {_ttft(p)}")
    for line in lines:
        say(line, width, "      ")
    split = [p for p in points if p.prefill_decode_ratio is not None]
    if split:
        ratios = dict.fromkeys(p.ratio_basis.split(" at the run's batch")[0] for p in split)
        say(f"  input/output split by {'; '.join(ratios)}: prefill ÷ decode tokens per "
            f"GPU-second {', '.join(f'{p.prefill_decode_ratio:,.1f}' for p in split)} "
            "(never the TTFT: it holds queueing)", width, "    ")
    for basis in dict.fromkeys(p.ratio_basis for p in points
                               if p.prefill_decode_ratio is None):
        say(f"  {basis}; the $/Mtok of all tokens is "
            f"{', '.join(f'{p.cost_per_mtok:.4f}' for p in points if p.ratio_basis == basis)}",
            width, "    ")
    if args.ttft_slo_ms:
        if best:
            say(f"best point meeting TTFT ≤ {args.ttft_slo_ms:,.0f} ms ({best.ttft_stat}): "
                f"{best.label}, {best.tps_per_gpu:,.1f} tokens/s per GPU, " + (
                    f"${best.cost_per_mtok_input:.4f} per input and "
                    f"${best.cost_per_mtok_output:.4f} per output Mtok"
                    if best.cost_per_mtok_input is not None else
                    f"${best.cost_per_mtok:.4f} per Mtok (no input/output split)"), width, "  ")
        else:
            print(f"no run meets TTFT ≤ {args.ttft_slo_ms:,.0f} ms")
    for path in (args.output, args.png):
        if path and path != "-":
            print(f"wrote {path}")
    return 0


def actuals_soffice() -> str | None:
    """LibreOffice's soffice, when installed (the PNG is rendered with it)."""
    from ..engines import libreoffice

    return libreoffice.find_soffice() or shutil.which("soffice")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "cost", help="$ per input and output Mtok, per GPU and per user, from benchmark files",
        description="For each run of each benchmark result file (vllm bench serve, SGLang "
                    "bench_serving, AIPerf, nightly-suite results): the throughput per GPU, "
                    "the output tokens/s per user and the cost of a million input and output "
                    "tokens at a GPU-hour price. A sweep gives the throughput-per-GPU vs "
                    "tokens/s-per-user curve as an Excel chart (--output) and a PNG (--png), "
                    "and --ttft-slo-ms names the best point meeting a TTFT objective.",
        epilog="examples (a file of a clone of the repository):\n"
               "  tokenfactory-xl cost tests/fixtures/actuals/sglang_llama70b_h200_sweep.jsonl "
               "--gpu-hour 2.10 --gpus 4 --prefill-decode-ratio 20\n"
               "  tokenfactory-xl cost tests/fixtures/actuals/sglang_llama70b_h200_sweep.jsonl "
               "--gpu-hour 2.10 --gpus 4 --gpu H200 --model Llama-3.1-70B --precision bf16 "
               "--ttft-slo-ms 500 -o curve.xlsx --png curve.png",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="benchmark result files (- reads one from standard input)")
    p.add_argument("--gpu-hour", type=positive_float, required=True, metavar="DOLLARS",
                   help="price of one GPU-hour, $ (e.g. 2.10)")
    p.add_argument("--gpus", type=positive_int, metavar="N",
                   help="GPUs behind each measured instance (default: the file's GPU count, "
                        "such as a suite result's tp; a file without one needs it)")
    p.add_argument("--gpu", help="catalogue GPU of the run, for the model's prefill/decode "
                                 "split when the file has no measured prefill throughput")
    p.add_argument("--model", help="catalogue model of the run (with --gpu)")
    p.add_argument("--precision", choices=tuple(roofline.PRECISIONS), type=str.lower,
                   help="weight precision of the run (with --gpu)")
    p.add_argument("--kv-precision", choices=tuple(roofline.PRECISIONS), type=str.lower,
                   help="KV-cache precision of the run (default: the method's)")
    p.add_argument("--parallel", choices=capacity.PARALLEL, type=str.lower, default="tp",
                   help="parallel layout of the run's replica (default tp)")
    p.add_argument("--run", type=positive_int, metavar="N",
                   help="of a file holding several runs, use only run N (default: every run)")
    p.add_argument("--prefill-decode-ratio", type=positive_float, metavar="R",
                   help="prefill ÷ decode tokens per GPU-second for the input/output split "
                        "(default: the file's measured prefill throughput, else the model of "
                        "--gpu/--model/--precision at the run's batch; never the TTFT)")
    p.add_argument("--ttft-slo-ms", type=positive_float, metavar="MS",
                   help="TTFT objective: name the run with the most tokens per GPU meeting it")
    p.add_argument("-o", "--output", metavar="FILE.xlsx",
                   help="write the points and the Excel chart of the curve (- for the standard "
                        "output; the table then goes to the standard error)")
    p.add_argument("--png", metavar="FILE.png",
                   help="write the chart as a PNG (rendered with LibreOffice; - for the "
                        "standard output)")
    p.add_argument("--force", action="store_true",
                   help="replace the files of --output and --png if they exist (without it, "
                        "an existing file stops the command before anything is written)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_csv_option(p, "one row per run (best: the point --ttft-slo-ms names)")
    p.set_defaults(func=cmd_cost)
