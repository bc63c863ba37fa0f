"""The ``tokenfactory-xl theoretical`` command: a GPU's theoretical TPS from the catalogues.

The TEF denominator, ``theoretical_tps_per_gpu``, is the one input finance teams find hardest
to fill in. This command answers it from the GPU and model catalogues of
:mod:`tokenfactory_xl.specs` with the roofline of :mod:`tokenfactory_xl.roofline` (TFOM-SPEC
section 5) and shows the working: what a decode step reads and computes, which bound it hits,
how large a batch fits. ``--list`` shows the catalogue's names. A thin adapter: no formula here.
"""

from __future__ import annotations

import argparse
import json

from . import roofline, specs
from .cli import fraction_arg, positive_int


def figures(args: argparse.Namespace) -> dict[str, object]:
    """Every figure the command prints, from the catalogue and the roofline."""
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


def cmd_theoretical(args: argparse.Namespace) -> int:
    from .cli import UserError, print_records_csv, table_format

    if args.list:
        _list()
        return 0
    missing = [f"--{n}" for n in ("gpu", "model", "precision", "batch", "context")
               if getattr(args, n) is None]
    if missing:
        raise UserError(f"theoretical needs {', '.join(missing)} (or --list for the names)")
    out = figures(args)
    if table_format(args) == "csv":
        print_records_csv([out])
        return 0
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    fit = "fits" if out["fits"] else "does NOT fit: the figures below cannot be reached"
    print(f"{out['model']} on {out['gpus_per_replica']} × {out['gpu']}, {out['precision']} "
          f"(KV cache {out['kv_precision']}), batch {out['batch']:,}, context "
          f"{out['context_tokens']:,} tokens, MBU {out['mbu']:g}, MFU {out['mfu']:g}")
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
    width = max(len(label) for label, _ in rows)
    for label, shown in rows:
        print(f"  {label:<{width}}  {shown}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from .cli import add_csv_option, add_print_output

    p = subparsers.add_parser(
        "theoretical",
        description="The roofline bound of TFOM-SPEC section 5 for a GPU and a model of the "
                    "catalogues: decode and prefill tokens per second per GPU, the bound the "
                    "step hits, the largest batch that fits. Use the decode TPS per GPU as the "
                    "theoretical_tps_per_gpu input (or decode and prefill TPS per GPU as the "
                    "decode_tps_per_gpu and prefill_tps_per_gpu inputs; the prefill figure "
                    "takes --context as the prompt length).",
        epilog="examples:\n  tokenfactory-xl theoretical --list\n"
               "  tokenfactory-xl theoretical --gpu H200 --model Llama-3.1-70B --precision fp8 "
               "--batch 64 --context 4096 --gpus 8",
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
                   help="tensor- or expert-parallel GPUs per replica (default 1)")
    p.add_argument("--mbu", type=fraction_arg, default=roofline.DEFAULT_MBU,
                   help="memory-bandwidth utilisation (default 1.0: the pure bound)")
    p.add_argument("--mfu", type=fraction_arg, default=roofline.DEFAULT_MFU,
                   help="model-FLOPs utilisation (default 1.0: the pure bound)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_csv_option(p, "one row of the figures")
    add_print_output(p)
    p.set_defaults(func=cmd_theoretical)
