"""The ``tokenfactory-xl actuals`` command: measured TPS, TTFT, SLO attainment and TEF from serving
output, printed, or written back into a sites file.

The reading and the arithmetic are :mod:`tokenfactory_xl.capacity.actuals`'s; this module parses
the options, checks how they combine and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..capacity.actuals import (
    FIGURES,
    MEASURED_INPUTS,
    Theoretical,
    read_files,
    summarise,
    theoretical_for,
)
from ..capacity.measurement import (
    FileProblem,
)
from ..capacity.write_back import cell_text, write_site_values
from ..cli.common import fraction_arg, positive_float, positive_int
from ..core import roofline
from ..core import serving as capacity
from ..core.catalogue import BY_NAME


# -- the command ---------------------------------------------------------------------------------
def _fmt(value: object, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"  # type: ignore[str-format]


def _print(summary: dict[str, object]) -> None:
    from .common import say, terminal_width

    wide = terminal_width()
    head = f"{summary['source']} ({summary['format']}"
    described = ", ".join(str(summary[k]) for k in ("model", "hardware", "precision")
                          if summary.get(k))
    if described:
        head += f", {described}"
    if summary.get("concurrency"):
        head += f", concurrency {summary['concurrency']:,.0f}"
    if summary.get("speculative"):
        head += f", speculative decoding {summary['speculative']}"
    if summary["duration_s"]:
        head += f", {summary['duration_s']:,.1f} s"
    if summary["requests"]:
        head += f", {summary['requests']:,.0f} requests"
    say(head + ")", wide, "  ")
    rows = [("measured TPS (instance)", _fmt(summary["instance_tps"], " tokens/s"))]
    if summary["instances"] != 1:
        rows.append((f"measured TPS (× {summary['instances']} instances)",
                     _fmt(summary["measured_tps"], " tokens/s")))
    rows += [
        ("output TPS", _fmt(summary["output_tps"], " tokens/s")),
        ("TTFT p50 / p99", f"{_fmt(summary['ttft_p50_ms'])} / "
                           f"{_fmt(summary['ttft_p99_ms'], ' ms')}"),
        *([(f"TTFT {summary['ttft_tail_stat']} (no p50/p99 in the file)",
            _fmt(summary["ttft_tail_ms"], " ms"))] if summary.get("ttft_tail_stat") else []),
        (f"SLO attainment (TTFT ≤ {summary['ttft_slo_ms']:,.0f} ms)",
         _fmt(None if summary["slo_attainment"] is None
              else 100 * summary["slo_attainment"], " %", 2)),  # type: ignore[operator]
        ("cache-hit share", _fmt(None if summary["cache_hit_rate"] is None
                                 else 100 * summary["cache_hit_rate"], " %")),  # type: ignore[operator]
    ]
    if summary.get("tps_per_user") is not None:
        rows.append(("output tokens/s per user", _fmt(summary["tps_per_user"], " tokens/s")))
    if summary["request_goodput"] is not None:
        rows.append(("request goodput", _fmt(summary["request_goodput"], " req/s", 2)))
    if summary["measured_tps_per_gpu"] is not None:
        rows.append(((f"measured TPS per GPU (÷ {summary['gpus_per_instance']:g} GPUs)"
                      if summary["gpus_per_instance"] else "measured TPS per GPU (the file's)"),
                     _fmt(summary["measured_tps_per_gpu"], " tokens/s")))
    if summary["theoretical_tps_per_gpu"] is not None:
        rows.append(("theoretical TPS per GPU", _fmt(summary["theoretical_tps_per_gpu"],
                                                     " tokens/s")))
        rows.append(("TEF", _fmt(summary["tef"], "", 3)))
    width = max(len(label) for label, _ in rows)
    for label, shown in rows:
        print(f"  {label:<{width}}  {shown}")
    if summary["theoretical_basis"]:
        say(f"  theoretical: {summary['theoretical_basis']}", wide, "    ")
    tef = summary["tef"]
    if isinstance(tef, float) and tef > 1:
        say("  note: TEF above 1 — the measured throughput exceeds the theoretical figure; "
            "check it (batch, context, precision, GPUs).", wide, "    ")
    for note in summary["notes"]:  # type: ignore[union-attr]
        say(f"  note: {note}", wide, "    ")


def cmd_actuals(args: argparse.Namespace) -> int:
    from ..cli.common import print_records_csv, say, table_format, terminal_width
    from ..core.errors import UsageError

    table_format(args)  # --json and --csv: one of them
    try:
        found = read_files(args.files, args.interval, args.run)
    except FileProblem as exc:
        raise UsageError(str(exc)) from None
    roofline_opts = [args.gpu, args.model, args.precision, args.batch, args.context]
    if args.theoretical_tps is not None and any(o is not None for o in roofline_opts):
        raise UsageError("give either --theoretical-tps or --gpu/--model/--precision/--batch/"
                        "--context, not both")
    if any(o is not None for o in roofline_opts) and not all(
            o is not None for o in roofline_opts):
        missing = [n for n, o in zip(("--gpu", "--model", "--precision", "--batch",
                                      "--context"), roofline_opts, strict=True) if o is None]
        raise UsageError(f"the roofline needs {', '.join(missing)} too")
    if args.figure != "roofline" and (args.mbu != 1 or args.mfu != 1):
        raise UsageError(f"--mbu and --mfu apply to --figure roofline only; the {args.figure} "
                        "figure takes its efficiencies from the method's catalogue")
    if args.sites and not args.site:
        raise UsageError("--sites needs --site NAME (the site_name of the row to update)")
    if args.site and not args.sites:
        raise UsageError("--site needs --sites FILE")
    if args.sites and len(found) != 1:
        raise UsageError(f"--sites takes one measurement; the files give {len(found)}")
    slo = args.slo_ms if args.slo_ms is not None else float(BY_NAME["ttft_slo_ms"].default)
    summaries = []
    for measurement in found:
        # GPUs of the instance: --gpus, else what the file says (a suite's tp, trtllm-bench's
        # TP × PP); unknown: no per-GPU figure, never a silent 1
        known = args.gpus or measurement.gpus
        gpus = int(known) if known else None
        theoretical = None
        if args.theoretical_tps is not None:
            theoretical = Theoretical(args.theoretical_tps, "given (--theoretical-tps)")
        elif args.gpu is not None:
            if gpus is None:
                raise UsageError(f"{measurement.source}: the file does not say how many GPUs ran "
                                "it; the theoretical figure needs --gpus N (the GPUs of the "
                                "instance)")
            theoretical = theoretical_for(measurement, args.gpu, args.model, args.precision,
                                          args.batch, args.context, gpus, args.mbu,
                                          args.mfu, args.figure, args.parallel)
        summaries.append(summarise(measurement, slo, theoretical, gpus, args.instances))
    written = None
    if args.sites:
        summary = summaries[0]
        values = {name: summary[name] for name in MEASURED_INPUTS
                  if summary.get(name) is not None}
        changes = write_site_values(
            args.sites, args.site, values, args.force, args.sheet,  # type: ignore[arg-type]
            source=str(summary["source"]),
            on_wait=lambda: print(f"tokenfactory-xl: note: waiting for another run updating "
                                  f"{args.sites}", file=sys.stderr, flush=True))
        written = {name: new for name, _, new in changes}
    if table_format(args) == "csv":
        print_records_csv([json_ready(summary) for summary in summaries])
        return 0
    if args.json:
        payload: object = summaries[0] if len(summaries) == 1 else summaries
        if written is not None:
            payload = {**summaries[0], "written": written}
        print(json.dumps(json_ready(payload), indent=2, allow_nan=False))
        return 0
    for summary in summaries:
        _print(summary)
    if written is not None:
        shown = ", ".join(f"{k}={cell_text(v)}" for k, v in written.items())
        width = terminal_width()
        say(f"wrote {shown} into site {args.site!r} of {args.sites}", width, "  ")
        skipped = [n for n in MEASURED_INPUTS if n not in written]
        if skipped:
            say(f"  not measured, left as they were: {', '.join(skipped)}", width, "    ")
    return 0


def json_ready(value: object) -> object:
    """JSON has no nan: undefined figures become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..cli.common import add_csv_option, add_print_output

    p = subparsers.add_parser(
        "actuals",
        description="Read a serving benchmark's result file (vllm bench serve --save-result, "
                    "SGLang bench_serving, AIPerf profile_export_aiperf.json, a nightly "
                    "suite's per-configuration results such as InferenceMAX's) or two "
                    "Prometheus scrapes of a vLLM server, and print the measured TPS, TTFT "
                    "p50/p99, SLO attainment, cache-hit share and the TEF against a "
                    "theoretical figure: given with --theoretical-tps, or the roofline of a "
                    "catalogue GPU and model. --sites/--site write the measured inputs into "
                    "a sites file.",
        epilog="examples (files of a clone of the repository):\n"
               "  tokenfactory-xl actuals tests/fixtures/actuals/vllm_bench_serve.json "
               "--theoretical-tps 12000\n"
               "  tokenfactory-xl actuals tests/fixtures/actuals/vllm_metrics_before.prom "
               "tests/fixtures/actuals/vllm_metrics_after.prom --gpus 2 --gpu H200 "
               "--model Llama-3.1-70B --precision fp8 --batch 64 --context 4096\n"
               "  cp tests/fixtures/actuals/sites.csv my-sites.csv\n"
               "  tokenfactory-xl actuals tests/fixtures/actuals/vllm_bench_serve.json --gpus 2 "
               "--instances 128 --sites my-sites.csv --site frankfurt",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="benchmark result files, or two Prometheus scrapes (before, after); "
                        "- reads one from standard input")
    p.add_argument("--theoretical-tps", type=positive_float, metavar="N",
                   help="theoretical tokens/s per GPU to compute the TEF against")
    p.add_argument("--gpu", help="catalogue GPU for the roofline, e.g. H200")
    p.add_argument("--model", help="catalogue model for the roofline, e.g. Llama-3.1-70B")
    p.add_argument("--precision", choices=tuple(roofline.PRECISIONS),
                   type=str.lower, help="weight precision for the roofline")
    p.add_argument("--batch", type=positive_int, help="decode batch for the roofline")
    p.add_argument("--context", type=positive_int, metavar="TOKENS",
                   help="context length per sequence for the roofline")
    p.add_argument("--gpus", type=positive_int, metavar="N",
                   help="GPUs serving the measured instance (the tensor-parallel GPUs of its "
                        "replica); measured TPS per GPU divides by it (default: the GPU count "
                        "the file gives, such as a suite result's tp, else 1)")
    p.add_argument("--run", type=positive_int, metavar="N",
                   help="of a file holding several runs (JSON lines, a list of "
                        "configurations), read only run N (from 1); default: every run")
    p.add_argument("--figure", choices=FIGURES, default=FIGURES[0], type=str.lower,
                   help="the theoretical figure of --gpu/--model/…: attainable (default: what "
                        "the best engines reach, TEF's denominator), bound (physics only) or "
                        "roofline (spec 5, with --mbu/--mfu)")
    p.add_argument("--parallel", choices=capacity.PARALLEL, type=str.lower, default="tp",
                   help="parallel layout of the instance's replica (default tp)")
    p.add_argument("--mbu", type=fraction_arg, default=roofline.DEFAULT_MBU,
                   help="memory-bandwidth utilisation for --figure roofline (default 1.0)")
    p.add_argument("--mfu", type=fraction_arg, default=roofline.DEFAULT_MFU,
                   help="model-FLOPs utilisation for --figure roofline (default 1.0)")
    p.add_argument("--slo-ms", type=positive_float, metavar="MS",
                   help=f"TTFT objective for the SLO attainment (default "
                        f"{BY_NAME['ttft_slo_ms'].default:,} ms, the ttft_slo_ms default)")
    p.add_argument("--interval", type=positive_float, metavar="SECONDS",
                   help="seconds between two Prometheus scrapes that carry no timestamps "
                        "(the first file is then the earlier)")
    p.add_argument("--instances", type=positive_int, default=1, metavar="N",
                   help="serving instances like the measured one in the cluster: the "
                        "measured_tps written to a sites file is the instance's × N")
    p.add_argument("--sites", metavar="FILE", help="sites file (.csv or .xlsx) to update")
    p.add_argument("--site", metavar="NAME", help="site_name of the row to update")
    p.add_argument("--sheet", help="worksheet of an .xlsx sites file (default: the first)")
    p.add_argument("--force", action="store_true",
                   help="replace measured values the site's row already holds, and the -o "
                        "file if it exists")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_csv_option(p, "one row per run")
    add_print_output(p, force=False)
    p.set_defaults(func=cmd_actuals)
