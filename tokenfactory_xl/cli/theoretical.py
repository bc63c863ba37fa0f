"""The ``tokenfactory-xl theoretical`` command: a GPU's theoretical TPS from the catalogues.

The TEF denominator, ``theoretical_tps_per_gpu``, is the one input finance teams find hardest
to fill in. This command answers it from the GPU and model catalogues of
:mod:`tokenfactory_xl.core.specs`: the **bound** and the **attainable** figure of
:mod:`tokenfactory_xl.core.serving` (methodology section 5.1) — for a batch and context, or with
``--isl``/``--osl`` the best output throughput per GPU — beside the version-2 roofline of
:mod:`tokenfactory_xl.core.roofline` (section 5) and its working: what a decode step reads and
computes, which bound it hits, how large a batch fits. ``--check TABLE.csv`` puts both figures
beside published measurements. ``--list`` shows the catalogue's names. A thin adapter: no
formula here.
"""

from __future__ import annotations

import argparse
import json

from ..core import roofline, specs
from ..core import serving as capacity
from ..core.errors import InputError
from .common import fraction_arg, positive_int


def setup_of(args: argparse.Namespace) -> capacity.Setup:
    """The serving setup the options describe."""
    return capacity.Setup.of(args.gpu, args.model, args.precision, args.gpus, args.parallel,
                             args.kv_precision, args.dense_precision, args.speculative)


def v3_figures(args: argparse.Namespace) -> dict[str, object]:
    """The bound and the attainable figure (methodology section 5.1) the options ask for."""
    s = setup_of(args)
    out: dict[str, object] = {
        "parallel": s.parallel, "dense_precision": s.dense_precision,
        "expert_compute_precision": s.expert_compute, "kv_precision": s.kv_precision,
        "speculative_tokens_per_step": s.speculative,
        "weights_gb_per_gpu": s.resident_gb()}
    if args.isl is not None:
        for mode in capacity.MODES:
            value, batch = capacity.max_output_tps_per_gpu(s, args.isl, args.osl, mode)
            out[f"{mode}_output_tps_per_gpu"] = value
            out[f"{mode}_batch"] = batch
        out["isl"], out["osl"] = args.isl, args.osl
        return out
    for mode in capacity.MODES:
        try:
            out[f"{mode}_max_batch"] = capacity.max_batch(s, args.context, mode)
            out[f"{mode}_tps_per_gpu"] = capacity.decode_tps_per_gpu(s, args.batch,
                                                                     args.context, mode)
        except InputError as exc:  # shown beside the roofline's working, which still holds
            out[f"{mode}_max_batch"] = out[f"{mode}_tps_per_gpu"] = None
            out[f"{mode}_tps_per_user"] = out[f"{mode}_step_ms"] = None
            out[f"{mode}_overhead_ms"] = None
            out[f"{mode}_problem"] = str(exc.problems[0])
            continue
        out[f"{mode}_tps_per_user"] = out[f"{mode}_tps_per_gpu"] * s.gpus / args.batch
        step = capacity.step(s, args.batch, args.context, mode)
        out[f"{mode}_step_ms"] = step.step_s * 1000
        out[f"{mode}_overhead_ms"] = step.overhead_s * 1000
    return out


def roofline_figures(args: argparse.Namespace) -> dict[str, object]:
    """The version-2 roofline's figures (methodology section 5) and their working."""
    g, m = specs.gpu(args.gpu), specs.model(args.model)
    w_bytes = roofline.bytes_per_element(args.precision)
    n = args.gpus
    step = roofline.decode_step_for(g, m, args.precision, args.batch, args.context, n,
                                    args.mbu, args.mfu, args.kv_precision)
    decode = float(step["tps_per_gpu"])
    fits = float(step["max_batch"])
    return {
        "gpu": g.name, "model": m.name, "precision": args.precision,
        "kv_precision": args.kv_precision or args.precision, "batch": args.batch,
        "context_tokens": args.context, "gpus_per_replica": n, "mbu": args.mbu,
        "mfu": args.mfu, "peak_tflops_per_gpu": roofline.peak_tflops(g, args.precision),
        "weights_gb": m.total_params * w_bytes / roofline.GIGA,
        "weights_read_gb_per_step": float(step["weights_read"]) * w_bytes / roofline.GIGA,
        "experts_touched_per_layer": float(step["experts_touched"]),
        "experts_per_layer": m.experts,
        "kv_gb_per_sequence": float(step["kv_bytes_per_sequence"]) / roofline.GIGA,
        "bytes_per_step": float(step["bytes"]), "flops_per_step": float(step["flops"]),
        "attention_gflop_per_token": float(roofline.attention_flops_for(m, args.context)) / 1e9,
        "step_time_ms": float(step["step_s"]) * 1000,
        "bound": "memory" if step["memory_s"] >= step["compute_s"] else "compute",
        "max_batch": fits, "fits": args.batch <= fits,
        "decode_tps_per_gpu": decode, "decode_tps_per_replica": decode * n,
        "prefill_tps_per_gpu": float(roofline.prefill_tps_for(g, m, args.precision, args.mfu,
                                                               args.context)),
    }


def _list() -> None:
    print("GPUs (dense figures per GPU):")
    for g in specs.load_gpus().values():
        fp4 = f"{g.fp4_tflops:,.0f}" if g.fp4_tflops else "—"
        print(f"  {g.name:<10} {g.hbm_gb:>5,.0f} GB  {g.bandwidth_tbps:>5.2f} TB/s  BF16 "
              f"{g.bf16_tflops:>7,.1f}  FP8 {g.fp8_tflops:>8,.1f}  FP4 {fp4:>6}  TFLOPS  "
              f"{g.power_w:>5,.0f} W")
    print("models:")
    for m in specs.load_models().values():
        kv = (f"MLA latent {m.kv_latent_dim}" if m.kv_latent_dim
              else f"{m.kv_heads} KV heads × {m.head_dim}")
        moe = (f"  {m.experts} experts, {m.experts_per_token} per token, "
               f"{m.moe_layers} MoE layers" if m.experts else "")
        print(f"  {m.name:<16} {m.kind:<5} {m.total_params / 1e9:>7,.1f}B total "
              f"{m.active_params / 1e9:>6,.1f}B active  {m.layers:>3} layers  {kv}{moe}")


def _printed_as_data(args: argparse.Namespace, out: dict) -> bool:
    """Print ``out`` as one CSV row (``--csv``) or a JSON object (``--json``); False when
    neither is asked and the text report is wanted."""
    from .common import print_records_csv, table_format

    shape = table_format(args)
    if shape == "csv":
        print_records_csv([out])
    elif shape == "json":
        print(json.dumps(out, indent=2))
    return shape != "text"


def cmd_theoretical(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError

    if args.list:
        _list()
        return 0
    if args.check:
        return _check(args)
    if (args.isl is None) != (args.osl is None):
        raise UsageError("--isl and --osl go together (input and output tokens per request)")
    wanted = ("gpu", "model", "precision") + (() if args.isl is not None
                                              else ("batch", "context"))
    missing = [f"--{n}" for n in wanted if getattr(args, n) is None]
    if missing:
        raise UsageError(f"theoretical needs {', '.join(missing)} (or --isl/--osl for the best "
                        "output throughput, --check TABLE.csv, --list for the names)")
    if args.isl is not None:
        out = {"gpu": specs.gpu(args.gpu).name, "model": specs.model(args.model).name,
               "precision": args.precision, "gpus_per_replica": args.gpus, **v3_figures(args)}
        if not _printed_as_data(args, out):
            _print_throughput(out)
        return 0
    out = {**roofline_figures(args), **{f"v3_{k}" if k == "kv_precision" else k: v
                                 for k, v in v3_figures(args).items()}}
    if _printed_as_data(args, out):
        return 0
    fit = "fits" if out["fits"] else "does NOT fit: the figures below cannot be reached"
    print(f"{out['model']} on {out['gpus_per_replica']} × {out['gpu']}, {out['precision']} "
          f"weights, batch {out['batch']:,}, context {out['context_tokens']:,} tokens")
    setup = (f"{out['parallel']}, {out['dense_precision']} dense, {out['v3_kv_precision']} KV"
             + _computed_at(out)
             + (f", {out['speculative_tokens_per_step']:g} tokens/step"
                if out["speculative_tokens_per_step"] != 1 else ""))
    v3 = [
        ("attainable TPS per GPU", (
            f"{out['attainable_tps_per_gpu']:,.1f} tokens/s (per user "
            f"{out['attainable_tps_per_user']:,.1f}; step {out['attainable_step_ms']:,.3f} ms, "
            f"{out['attainable_overhead_ms']:,.3f} ms of it layer and collective overhead)")
            if out["attainable_tps_per_gpu"] is not None
            else f"none: {out['attainable_problem']}"),
        ("bound TPS per GPU", f"{out['bound_tps_per_gpu']:,.1f} tokens/s ({setup})"
         if out["bound_tps_per_gpu"] is not None else f"none: {out['bound_problem']}"),
    ]
    rows = [
        ("weights in memory", f"{out['weights_gb']:,.1f} GB"),
        ("weights read per step", f"{out['weights_read_gb_per_step']:,.2f} GB" + (
            f" ({out['experts_touched_per_layer']:,.1f} of {out['experts_per_layer']} experts "
            "per MoE layer)" if out["experts_per_layer"] else "")),
        ("KV cache per sequence", f"{out['kv_gb_per_sequence']:,.3f} GB"),
        ("attention per token", f"{out['attention_gflop_per_token']:,.2f} GFLOP"),
        ("largest batch that fits", f"{out['max_batch']:,.0f} ({fit})"),
        ("decode step", f"{out['step_time_ms']:,.3f} ms, {out['bound']} bound"),
        ("decode TPS per GPU", f"{out['decode_tps_per_gpu']:,.1f} tokens/s"),
        ("decode TPS per replica", f"{out['decode_tps_per_replica']:,.1f} tokens/s"),
        ("prefill TPS per GPU", f"{out['prefill_tps_per_gpu']:,.1f} tokens/s (prompts of "
                                f"{out['context_tokens']:,} tokens)"),
    ]
    width = max(len(label) for label, _ in v3 + rows)
    for label, shown in v3:
        print(f"  {label:<{width}}  {shown}")
    print(f"  version-2 roofline (spec 5; KV cache {out['kv_precision']}, MBU {out['mbu']:g}, "
          f"MFU {out['mfu']:g}):")
    inner = max(len(label) for label, _ in rows)
    for label, shown in rows:
        print(f"    {label:<{inner}}  {shown}")
    print("  the attainable figure is TEF's default denominator; the bound is physics only")
    return 0


def _computed_at(out: dict[str, object]) -> str:
    """Where weight-only experts compute at another precision than their weights: say so."""
    at = out.get("expert_compute_precision")
    return f", experts computed at {at}" if at and at != str(out["precision"]).lower() else ""


def _print_throughput(out: dict[str, object]) -> None:
    print(f"{out['model']} on {out['gpus_per_replica']} × {out['gpu']}, {out['precision']} "
          f"weights ({out['dense_precision']} dense, {out['kv_precision']} KV"
          f"{_computed_at(out)}), "
          f"{out['parallel']}, prompts of {out['isl']:,} and outputs of {out['osl']:,} tokens")
    for mode in capacity.MODES:
        print(f"  {mode:<10}  {out[f'{mode}_output_tps_per_gpu']:>12,.1f} output tokens/s per "
              f"GPU (batch {out[f'{mode}_batch']:,})")
    print(f"  weights per GPU {out['weights_gb_per_gpu']:,.1f} GB; the attainable figure is "
          "TEF's default denominator, the bound is physics only")


def _check(args: argparse.Namespace) -> int:
    rows = capacity.check_table(args.check)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':<5} {'metric':<28} {'measured':>10} {'bound':>10} {'attainable':>10} "
          f"{'÷bound':>7} {'÷attain':>7}  verdict")
    for r in rows:
        if r["bound"] is None:
            print(f"{r['id']:<5} {r['metric']:<28} {'':>10} {'':>10} {'':>10} {'':>7} {'':>7}  "
                  f"{r['verdict']}")
            continue
        print(f"{r['id']:<5} {r['metric']:<28} {r['measured']:>10,.1f} {r['bound']:>10,.1f} "
              f"{r['attainable']:>10,.1f} {r['measured_over_bound']:>7.2f} "
              f"{r['measured_over_attainable']:>7.2f}  {r['verdict']}"
              + "".join(f"; {n}" for n in r["notes"]))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from .common import add_csv_option, add_print_output

    p = subparsers.add_parser(
        "theoretical",
        description="The bound (physics only) and the attainable figure (what the best "
                    "engines reach; TEF's default denominator) of methodology section 5.1 for a "
                    "GPU and a model of the catalogues, beside the version-2 roofline of "
                    "section 5: decode and prefill tokens per second per GPU, the bound the "
                    "step hits, the largest batch that fits. Use the decode TPS per GPU as the "
                    "theoretical_tps_per_gpu input (or decode and prefill TPS per GPU as the "
                    "decode_tps_per_gpu and prefill_tps_per_gpu inputs; the prefill figure "
                    "takes --context as the prompt length).",
        epilog="examples:\n  tokenfactory-xl theoretical --list\n"
               "  tokenfactory-xl theoretical --gpu H200 --model Llama-3.1-70B --precision fp8 "
               "--batch 64 --context 4096 --gpus 8\n"
               "  tokenfactory-xl theoretical --gpu B200 --model DeepSeek-R1 --precision fp4 "
               "--gpus 4 --parallel dep --isl 1024 --osl 1024\n"
               "  tokenfactory-xl theoretical --check tests/fixtures/real/measurements.csv --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="list the catalogue's GPUs and models")
    p.add_argument("--gpu", help="catalogue GPU, e.g. H200 (case ignored)")
    p.add_argument("--model", help="catalogue model, e.g. Llama-3.1-70B (case ignored)")
    p.add_argument("--precision", choices=tuple(roofline.PRECISIONS), type=str.lower,
                   help="weight precision")
    p.add_argument("--kv-precision", choices=tuple(roofline.PRECISIONS), type=str.lower,
                   help="KV-cache precision (default: the weight precision)")
    p.add_argument("--batch", type=positive_int, help="sequences decoded together")
    p.add_argument("--context", type=positive_int, metavar="TOKENS",
                   help="context length of each sequence")
    p.add_argument("--gpus", type=positive_int, default=1, metavar="N",
                   help="GPUs per replica (default 1)")
    p.add_argument("--mbu", type=fraction_arg, default=roofline.DEFAULT_MBU,
                   help="memory-bandwidth utilisation (default 1.0: the pure bound)")
    p.add_argument("--mfu", type=fraction_arg, default=roofline.DEFAULT_MFU,
                   help="model-FLOPs utilisation (default 1.0: the pure bound)")
    p.add_argument("--parallel", choices=capacity.PARALLEL, type=str.lower, default="tp",
                   help="tp (tensor parallel), ep (attention tensor parallel, experts spread), "
                        "dep (attention data-parallel, experts spread); default tp")
    p.add_argument("--dense-precision", choices=tuple(roofline.PRECISIONS), type=str.lower,
                   help="attention, dense and shared-expert layers and LM head of a MoE model "
                        "(default: the weight precision; fp8 under 4-bit weights)")
    p.add_argument("--speculative", default="none", metavar="N",
                   help="speculative decoding: accepted tokens per step, or MTP, Medusa, "
                        "EAGLE-3 for the catalogue's sourced figure (default none: 1)")
    p.add_argument("--isl", type=positive_int, metavar="TOKENS",
                   help="input tokens per request: with --osl, the best output tokens/s per "
                        "GPU over every batch that fits, prefill inside (no --batch/--context)")
    p.add_argument("--osl", type=positive_int, metavar="TOKENS",
                   help="output tokens per request (with --isl)")
    p.add_argument("--check", metavar="TABLE.csv",
                   help="a table of published measurements (id, metric, measured, gpu, model, "
                        "precision, kv_precision, gpus, parallel, concurrency, context, isl, "
                        "osl, speculative): the bound, the attainable figure, measured ÷ each "
                        "and a verdict per row")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_csv_option(p, "one row of the figures")
    add_print_output(p)
    p.set_defaults(func=cmd_theoretical)
