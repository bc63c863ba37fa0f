"""Capacity you can quote: the bound and the attainable throughput of one serving setup.

TEF = actual ÷ theoretical, so the theoretical figure decides whether a finance team trusts
every number after it. methodology section 5.1 gives two figures for one setup (a GPU, a model,
its precisions, its parallelism):

- **bound** — physics only, never beaten by a real measurement. A decode step of B sequences
  on a replica of g GPUs reads the weights it needs and the KV cache, and does the arithmetic;
  the step takes at least max(bytes ÷ bandwidth, FLOPs ÷ peak). Unlike the version-2 roofline
  (:mod:`tokenfactory_xl.core.roofline`) it counts what each GPU holds and reads:

  * per-component precision: routed experts at the weight precision, the rest (attention,
    dense and shared-expert layers, LM head) at ``dense_precision`` — by default the weight
    precision, but 8-bit under 4-bit weights of a mixture-of-experts model (4-bit checkpoints
    quantise the experts); a weight-only format computes at its activation precision (W4A16:
    the BF16 peak; FP4 on a GPU without FP4 tensor cores, INT4 anywhere);
  * a KV precision that defaults to 8 bits under 4-bit weights (``kv_bits_under_4bit``);
  * parallelism ``tp`` (tensor parallel: every weight split over g), ``ep`` (attention tensor
    parallel, experts spread over g) and ``dep`` (attention data-parallel: each GPU holds the
    attention weights whole and its own sequences' KV cache; experts spread over g). Under
    ``tp``/``ep`` a KV head cannot be split, so each GPU holds B × KV ÷ min(g, KV heads) — an
    MLA latent (one head) is held whole by every tensor-parallel rank;
  * speculative decoding: a step yields ``speculative`` accepted tokens per sequence (1 without).

- **attainable** — what the best engines reach on that hardware today, TEF's default
  denominator. The same step, run as engines run it: each part (weight GEMMs of the dense part,
  routed-expert GEMMs, attention) takes the longer of its bytes at its bandwidth share and its
  FLOPs at its achievable MFU, one after another; plus a per-step floor of a fixed time per
  layer and, on g > 1 GPUs, the collectives of each layer (latency growing with the group, and
  their bytes at the link bandwidth); the batch is what fits beside a memory reserve, capped at
  an engine's batch size.

Every constant is in the catalogue (``data/method.csv``, :func:`tokenfactory_xl.core.specs.
method_constants`) with what it is and its source; the README's capacity section lists them.

Two quantities are quoted (the metrics of the shared measurements table):

- :func:`decode_tps_per_user` — one user's decode rate at a concurrency and a context;
- :func:`max_output_tps_per_gpu` — the best output tokens per second per GPU for an
  input/output length, over every batch that fits, with the prompts' prefill inside it (a
  step carries the prompt tokens of new requests beside the decode tokens: per output token
  ``isl ÷ osl`` prompt tokens of arithmetic).

:func:`decode_tps_per_gpu` gives a batch's decode throughput per GPU (THEORETICAL_TPS).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, replace

import numpy as np

from . import roofline, specs
from .errors import InputError, Problem
from .roofline import GIGA, TERA
from .specs import GPU, LLM

#: Parallel layouts of a replica (see the module docstring).
PARALLEL = ("tp", "ep", "dep")
#: The two figures.
MODES = ("bound", "attainable")
#: Speculative-decoding techniques with a catalogued accepted-tokens figure.
SPECULATIVE = {"none": None, "mtp": "accepted_tokens_mtp", "medusa": "accepted_tokens_medusa",
               "eagle": "accepted_tokens_eagle", "eagle-2": "accepted_tokens_eagle",
               "eagle-3": "accepted_tokens_eagle", "eagle3": "accepted_tokens_eagle"}


def _c(name: str) -> float:
    return specs.method_constant(name)


def _mode(mode: str) -> str:
    key = str(mode).strip().lower()
    if key not in MODES:
        raise InputError([Problem("mode", mode, "is not a figure this method gives",
                                  f"use one of {', '.join(MODES)}")])
    return key


def speculative_tokens(value: object) -> float:
    """Accepted tokens per step for a technique's name (``MTP``, ``Medusa``, ``EAGLE-3``: the
    catalogue's sourced figure), ``none`` (1) or a number of at least 1."""
    text = str(value).strip().lower() if value is not None else "none"
    if text in ("", "none", "no", "off"):
        return 1.0
    if text in SPECULATIVE:
        return _c(SPECULATIVE[text])  # type: ignore[arg-type]
    try:
        number = float(text)
    except ValueError:
        raise InputError([Problem("speculative", value, "is neither a known technique nor a "
                                  "number", "give accepted tokens per step (e.g. 1.9) or one "
                                  "of none, MTP, Medusa, EAGLE-3")]) from None
    if not (math.isfinite(number) and number >= 1):
        raise InputError([Problem("speculative", value, "must be at least 1 accepted token per "
                                  "step", "1 means no speculative decoding")])
    return number


def activation_tflops(gpu_spec: GPU, precision: str) -> float:
    """The dense peak a weight format computes at [TFLOPS]: BF16 for fp16/bf16 and for
    weight-only formats (int4 anywhere, fp4 where the GPU has no FP4 tensor cores: W4A16);
    FP8 for fp8/int8; FP4 for fp4 on a GPU with FP4 tensor cores."""
    if precision in ("fp8", "int8"):
        return gpu_spec.fp8_tflops
    if precision == "fp4" and gpu_spec.fp4_tflops:
        return gpu_spec.fp4_tflops
    return gpu_spec.bf16_tflops


@dataclass(frozen=True)
class Setup:
    """One serving setup: a replica of ``gpus`` GPUs holding the model once.

    Attributes
    ----------
    gpu, model : catalogue entries
    precision : routed experts' (a dense model's: every layer's) weight precision
    dense_precision : attention, dense and shared-expert layers and LM head of a MoE model
    kv_precision : KV-cache elements
    gpus : GPUs of the replica [GPUs]
    parallel : ``tp``, ``ep`` or ``dep`` (:data:`PARALLEL`)
    speculative : accepted tokens per step per sequence [tokens]
    """

    gpu: GPU
    model: LLM
    precision: str
    dense_precision: str
    kv_precision: str
    gpus: int = 1
    parallel: str = "tp"
    speculative: float = 1.0

    @classmethod
    def of(cls, gpu_name: GPU | str, model_name: LLM | str, precision: str, gpus: int = 1,
           parallel: str = "tp", kv_precision: str | None = None,
           dense_precision: str | None = None, speculative: object = 1.0) -> Setup:
        """A validated setup; blank precisions take the method's defaults (module docstring)."""
        g, m = specs.gpu(gpu_name), specs.model(model_name)
        weights = roofline._precision(precision)
        four_bit = roofline.PRECISIONS[weights] < 1
        if dense_precision:
            dense = roofline._precision(dense_precision, "dense_precision")
        elif m.released_dense_precision:
            # the release quantises only the experts
            dense = roofline._precision(m.released_dense_precision, "released_dense_precision")
        else:
            dense = "fp8" if (four_bit and m.experts) else weights
        if kv_precision:
            kv = roofline._precision(kv_precision, "kv_precision")
        else:
            kv = "fp8" if (four_bit and _c("kv_bits_under_4bit") == 8) else dense
        layout = str(parallel).strip().lower()
        if layout not in PARALLEL:
            raise InputError([Problem("parallel", parallel, "is not a parallel layout",
                                      f"use one of {', '.join(PARALLEL)}")])
        if isinstance(gpus, bool) or not float(gpus).is_integer() or gpus < 1:
            raise InputError([Problem("gpus", gpus, "must be a whole number of at least 1")])
        if layout == "dep" and not m.experts:
            layout = "tp"  # a dense model has no experts to spread: attention DP is plain DP
        return cls(g, m, weights, dense, kv, int(gpus), layout, speculative_tokens(speculative))

    # -- what one GPU holds and reads ------------------------------------------------------------
    @property
    def _bytes(self) -> tuple[float, float, float]:
        p = roofline.PRECISIONS
        return p[self.precision], p[self.dense_precision], p[self.kv_precision]

    @property
    def expert_compute(self) -> str:
        """The precision whose dense peak the routed-expert GEMMs compute at: the weights',
        except for a release's weight-only 4-bit experts (:attr:`specs.LLM.
        weight_only_experts`): their activations are not 4-bit, so they compute at 8 bits
        (MXFP4 × MXFP8, the FP8 rate) on a GPU with FP4 tensor cores and at 16 bits (W4A16)
        on one without."""
        if self.model.weight_only_experts and self.precision == "fp4":
            return "fp8" if self.gpu.fp4_tflops else "bf16"
        return self.precision

    @property
    def _kv_split(self) -> float:
        """How many ways a replica's KV cache is split over its GPUs."""
        if self.parallel == "dep":
            return float(self.gpus)
        heads = 1 if self.model.kv_latent_dim else self.model.kv_heads
        return float(min(self.gpus, max(heads, 1)))

    def _dense_parts(self, total: bool) -> tuple[float, float]:
        """(attention, other non-routed) parameters, the embedding table left out of a step's
        reads (a lookup) but in memory when ``total``."""
        m = self.model
        attention = m.attention_weight_params
        routed = (m.moe_layers * m.experts * m.expert_params if total
                  else m.routed_active_params)
        params = m.total_params if total else m.active_params - m.embedding_params
        return attention, max(params - routed - attention, 0.0)

    def resident_gb(self) -> float:
        """Weights one GPU holds [GB]: attention whole under ``dep``, else split; the rest and
        every routed expert split over the replica."""
        _, dense_b, _ = self._bytes
        attention, rest = self._dense_parts(total=True)
        routed = self.model.moe_layers * self.model.experts * self.model.expert_params
        n = self.gpus
        if self.parallel == "dep":
            held = attention * dense_b + rest * dense_b / n
        else:
            held = (attention + rest) * dense_b / n
        return (held + routed * self._bytes[0] / n) / GIGA

    def kv_gb_per_sequence(self, context: float) -> float:
        """KV cache of one sequence of ``context`` tokens, the whole replica's copy [GB]."""
        return float(roofline.kv_bytes_per_sequence_for(self.model, context,
                                                        self._bytes[2])) / GIGA


@dataclass(frozen=True)
class Step:
    """One decode step of a batch on one GPU of the replica, and its parts [s]."""

    batch: float
    weights_gb: float
    kv_gb: float
    tflop: float
    memory_s: float
    compute_s: float
    overhead_s: float
    step_s: float
    bound_by: str


def step(setup: Setup, batch: float, context: float, mode: str = "attainable",
         prompt_per_output: float = 0.0, prompt_tokens: float = 0.0) -> Step:
    """Time of one decode step of ``batch`` sequences of ``context`` tokens (methodology §5.1).

    ``prompt_per_output`` prompt tokens ride along per output token (an output-throughput
    figure's prefill, attention at half of ``prompt_tokens``). See the module docstring for
    what each mode counts.
    """
    mode = _mode(mode)
    s, m, g = setup, setup.model, setup.gpu
    n = s.gpus
    expert_b, dense_b, kv_b = s._bytes
    attention, rest = s._dense_parts(total=False)
    touched = m.moe_layers * float(roofline.experts_touched(
        m.experts, m.experts_per_token, batch)) * m.expert_params
    if s.parallel == "dep":
        dense_read = attention * dense_b + rest * dense_b / n
    else:
        dense_read = (attention + rest) * dense_b / n
    expert_read = touched * expert_b / n
    kv_read = batch * s.kv_gb_per_sequence(context) * GIGA / s._kv_split
    decode_tokens = batch * s.speculative
    tokens = decode_tokens + batch * prompt_per_output
    per_token_dense = 2 * (attention + rest)
    per_token_moe = 2 * m.routed_active_params
    attn_flops = (decode_tokens * float(roofline.attention_flops_for(m, context))
                  + batch * prompt_per_output * float(
                      roofline.attention_flops_for(m, prompt_tokens / 2)))
    f_dense, f_moe, f_attn = tokens * per_token_dense / n, tokens * per_token_moe / n, \
        attn_flops / n
    p_dense = activation_tflops(g, s.dense_precision) * TERA
    p_moe = activation_tflops(g, s.expert_compute) * TERA
    p_attn = (g.fp8_tflops if kv_b <= 1 else g.bf16_tflops) * TERA
    bw = g.bandwidth_tbps * TERA
    weights_gb = (dense_read + expert_read) / GIGA
    tflop = (f_dense + f_moe + f_attn) / TERA
    if mode == "bound":
        memory = (dense_read + expert_read + kv_read) / bw
        compute = f_dense / p_dense + f_moe / p_moe + f_attn / p_attn
        return Step(batch, weights_gb, kv_read / GIGA, tflop, memory, compute, 0.0,
                    max(memory, compute), "memory" if memory >= compute else "compute")
    w_share, kv_share = _c("weight_bandwidth_share"), _c("kv_bandwidth_share")
    parts = [(dense_read / (bw * w_share), f_dense / (p_dense * _c("dense_mfu"))),
             (expert_read / (bw * w_share), f_moe / (p_moe * _c("moe_mfu"))),
             (kv_read / (bw * kv_share), f_attn / (p_attn * _c("attention_mfu")))]
    memory = sum(a for a, b in parts if a >= b)
    compute = sum(b for a, b in parts if b > a)
    overhead = m.layers * _c("layer_overhead_s") + _collectives(s, tokens)
    total = memory + compute + overhead
    return Step(batch, weights_gb, kv_read / GIGA, tflop, memory, compute, overhead, total,
                "memory" if memory >= compute else "compute")


def _collectives(s: Setup, tokens: float) -> float:
    """Per-step time of the collectives of a replica of more than one GPU [s]: their latency
    (per layer, growing with the group) and their bytes at the link bandwidth."""
    n, m = s.gpus, s.model
    if n <= 1:
        return 0.0
    latency = _c("collective_latency_s") + _c("collective_latency_per_doubling_s") * (
        math.log2(n) - 1)
    count = _c("collectives_per_layer")
    if s.parallel == "dep":
        # tokens go to their experts and back: k copies of the hidden state, dispatched in 8
        # bits and combined in 16, the share (n − 1) ÷ n of them to other GPUs
        layers = m.moe_layers
        moved = tokens / n * m.experts_per_token * m.hidden_size * 3 * (n - 1) / n * layers
    else:
        # an all-reduce of the step's hidden states (16 bits) per collective; through an
        # NVSwitch each GPU sends and receives its share once
        layers = m.layers
        moved = tokens * m.hidden_size * 2 * count * (n - 1) / n * layers
    link = s.gpu.link_gbps
    transfer = moved / (link * GIGA * _c("link_efficiency")) if link else 0.0
    return layers * count * latency + transfer


def _memory_problem(s: Setup, need_gb: float, have_gb: float, what: str) -> InputError:
    return InputError([Problem(
        "setup", f"{s.model.name} on {s.gpus} × {s.gpu.name} ({s.precision})",
        f"does not fit in memory: {what} take {need_gb:,.1f} GB per GPU, "
        f"{need_gb - have_gb:,.1f} GB more than the {have_gb:,.1f} GB it has",
        "use more GPUs (--gpus), a smaller precision, or a shorter context")])


def max_batch(setup: Setup, context: float, mode: str = "attainable") -> int:
    """Most sequences of ``context`` tokens the replica decodes together [sequences]: the KV
    cache that fits in the memory the weights leave (less the memory reserve, a share of that
    free memory, attainable), capped at the engine batch size (attainable). Raises InputError
    saying by how much the weights alone or one sequence do not fit."""
    mode = _mode(mode)
    s = setup
    weights = s.resident_gb()
    if weights >= s.gpu.hbm_gb:
        raise _memory_problem(s, weights, s.gpu.hbm_gb, "the weights alone")
    for_kv = (1 - _c("memory_reserve")) if mode == "attainable" else 1.0
    free = (s.gpu.hbm_gb - weights) * for_kv
    # each GPU holds its own sequences under dep, a share of every sequence otherwise
    per_gpu = s.kv_gb_per_sequence(context) / (1 if s.parallel == "dep" else s._kv_split)
    fits = math.floor(free / per_gpu) * (s.gpus if s.parallel == "dep" else 1)
    if fits < 1:
        raise _memory_problem(s, weights + per_gpu / for_kv, s.gpu.hbm_gb,
                              f"the weights and one sequence of {context:,.0f} tokens" + (
                                  " (with the memory reserve)" if for_kv < 1 else ""))
    if mode == "attainable":
        fits = min(fits, int(_c("batch_cap")))
    return int(fits)


def decode_tps_per_user(setup: Setup, concurrency: float, context: float,
                        mode: str = "attainable") -> float:
    """One user's decode rate [tokens/s]: accepted tokens per step ÷ the step time of a
    batch of ``concurrency`` sequences of ``context`` tokens."""
    _fits(setup, concurrency, context, mode)
    return setup.speculative / step(setup, concurrency, context, mode).step_s


def decode_tps_per_gpu(setup: Setup, batch: float, context: float,
                       mode: str = "attainable") -> float:
    """Decode tokens per second per GPU of a batch [tokens/s]: batch × accepted tokens ÷
    step time ÷ GPUs."""
    _fits(setup, batch, context, mode)
    return batch * setup.speculative / step(setup, batch, context, mode).step_s / setup.gpus


def _fits(setup: Setup, batch: float, context: float, mode: str) -> None:
    most = max_batch(setup, context, mode)
    if batch > most:
        limit = ("the engine batch cap" if mode == "attainable" and most == int(
            _c("batch_cap")) else "the memory")
        raise InputError([Problem("batch", batch, f"is more than {limit} allows: at most "
                                  f"{most:,} sequences of {context:,.0f} tokens on "
                                  f"{setup.gpus} × {setup.gpu.name}",
                                  "lower the batch or the context, or add GPUs")])


def max_output_tps_per_gpu(setup: Setup, isl: float, osl: float,
                           mode: str = "attainable") -> tuple[float, int]:
    """The best output tokens per second per GPU for prompts of ``isl`` and outputs of
    ``osl`` tokens, over every batch that fits, prefill inside [tokens/s]; and that batch.

    Each step decodes B sequences at the mean context isl + osl ÷ 2 and carries isl ÷ osl
    prompt tokens per output token.
    """
    if not (isl >= 0 and osl >= 1):
        raise InputError([Problem("osl", osl, "must be at least 1 output token")])
    context = isl + osl / 2
    most = max_batch(setup, context, mode)
    candidates = sorted({int(b) for b in np.unique(np.round(np.geomspace(1, most, 64)))}
                        | {most})
    best, at = 0.0, 1
    for b in candidates:
        t = step(setup, b, context, mode, isl / osl, isl).step_s
        value = b * setup.speculative / t / setup.gpus
        if value > best:
            best, at = value, b
    return best, at


# -- a table of published measurements -----------------------------------------------------------
#: The metrics a measurements table may give, and what each is.
METRICS = {"decode tokens/s per user": "one user's decode rate at a concurrency and context",
           "max output tokens/s per GPU": "best output throughput per GPU at an isl/osl"}
#: The columns :func:`check_table` reads.
TABLE_COLUMNS = ("id", "metric", "measured", "gpu", "model", "precision", "kv_precision", "gpus",
                 "parallel", "concurrency", "context", "isl", "osl", "speculative")


def parallel_of(text: str) -> str:
    """The layout a table's ``parallel`` cell names: ``DEP…`` attention data-parallel,
    ``…(EP)``/``EP…`` expert parallel, anything else (``TP8``, ``8 GPUs``) tensor parallel."""
    t = str(text).strip().upper()
    if t.startswith("DEP"):
        return "dep"
    if "EP" in t.replace("DEP", ""):
        return "ep"
    return "tp"


def verdict(measured: float, bound: float, attainable: float) -> str:
    """A row's verdict in words."""
    if measured > bound * (1 + 1e-9):
        return "above the bound: impossible as described (check the setup)"
    if measured > attainable * (1 + 1e-9):
        return "above the attainable figure"
    share = measured / attainable
    if share >= 0.7:
        return "at the attainable figure"
    if share >= 0.5:
        return "within 2x of the attainable figure"
    return f"{1 / share:.1f}x below the attainable figure"


def _cell(row: dict[str, str], name: str, where: str, whole: bool = False) -> float:
    text = (row.get(name) or "").replace(",", "").strip()
    try:
        value = float(text)
        if not math.isfinite(value) or value <= 0 or (whole and not value.is_integer()):
            raise ValueError
    except ValueError:
        raise InputError([Problem(name, row.get(name, ""), "must be a number above 0" + (
            " (whole)" if whole else ""), "fill in the cell", where)]) from None
    return value


def _count(row: dict[str, str], where: str) -> int:
    """The replica's GPUs: the ``gpus`` cell, else the number in ``parallel`` (``TP8``)."""
    if (row.get("gpus") or "").strip():
        return int(_cell(row, "gpus", where, whole=True))
    found = re.search(r"\d+", row.get("parallel") or "")
    if not found:
        raise InputError([Problem("gpus", "", "is empty and parallel names no GPU count",
                                  "fill in the replica's GPUs", where)])
    return int(found.group())


def _figure(s: Setup, row: dict[str, str], metric: str, mode: str, where: str
            ) -> tuple[float, str]:
    if metric.startswith("decode"):
        users = _cell(row, "concurrency", where, True)
        if (row.get("context") or "").strip():
            context = _cell(row, "context", where, True)
        else:  # the table's definition: input + half the output
            context = _cell(row, "isl", where, True) + _cell(row, "osl", where, True) / 2
        batch = min(users, max_batch(s, context, mode))
        note = (f"{mode}: {batch:,.0f} of the {users:,.0f} users decode together, the rest "
                "wait" if batch < users else "")
        return decode_tps_per_user(s, batch, context, mode), note
    return max_output_tps_per_gpu(s, _cell(row, "isl", where, True),
                                  _cell(row, "osl", where, True), mode)[0], ""


def release_notes(s: Setup) -> list[str]:
    """What a reader of the setup's figures should know about the model's release: a model
    whose release ships weight-only 4-bit experts (:attr:`specs.LLM.weight_only_experts`,
    gpt-oss's MXFP4) given another weight precision is computed as given, which is not the run
    an engine makes of the release; on a GPU without 4-bit tensor cores it runs the release as
    W4A16, at the 16-bit rate (methodology §5.1)."""
    if not s.model.weight_only_experts or s.precision == "fp4":
        return []
    text = (f"{s.model.name} ships its experts as weight-only 4-bit (MXFP4): the figures are for "
            f"{s.precision} experts, as the row says, not for the release")
    if not s.gpu.fp4_tflops:
        text += (f"; {s.gpu.name} has no 4-bit tensor cores, so engines run the release as "
                 "W4A16 at the BF16 rate (precision fp4 reads the run as shipped, kv_precision "
                 "bf16 where the engine keeps the cache in 16 bits)")
    return [text]


def check_row(row: dict[str, str], where: str = "") -> dict[str, object]:
    """The bound, the attainable figure, measured ÷ each and a verdict for one table row.

    A per-user row whose users outnumber the batch that fits (or the engine's cap, attainable)
    is computed at that batch: the other users wait. Raises InputError naming the row when it
    cannot be computed.
    """
    metric = (row.get("metric") or "").strip()
    if metric not in METRICS:
        raise InputError([Problem("metric", metric, "is not a metric the check computes",
                                  f"use one of: {'; '.join(METRICS)}", where)])
    measured = _cell(row, "measured", where)
    figures, notes = {}, []
    try:
        s = Setup.of(row.get("gpu", ""), row.get("model", ""),
                     (row.get("precision") or "").lower(), _count(row, where),
                     parallel_of(row.get("parallel", "")),
                     (row.get("kv_precision") or "").lower() or None, None,
                     row.get("speculative") or "none")
        for mode in MODES:
            figures[mode], note = _figure(s, row, metric, mode, where)
            notes += [note] if note else []
    except InputError as error:  # say which row
        raise InputError([replace(p, where=p.where or where) for p in error.problems]
                         ) from None
    notes += release_notes(s)
    return {"id": row.get("id", ""), "metric": metric, "gpu": s.gpu.name, "model": s.model.name,
            "setup": f"{s.gpus} × {s.gpu.name}, {s.parallel}, {s.precision} weights, "
                     f"{s.dense_precision} dense, {s.kv_precision} KV"
                     + (f", experts computed at {s.expert_compute}"
                        if s.expert_compute != s.precision else "")
                     + (f", {s.speculative:g} tokens/step" if s.speculative != 1 else ""),
            "measured": measured, "bound": figures["bound"],
            "attainable": figures["attainable"],
            "measured_over_bound": measured / figures["bound"],
            "measured_over_attainable": measured / figures["attainable"],
            "verdict": verdict(measured, figures["bound"], figures["attainable"]),
            "notes": notes}


def check_rows(rows: list[dict[str, str]], path: str
               ) -> tuple[list[dict[str, object]], list[str]]:
    """:func:`check_row` of every row; a row that cannot be computed is kept with no figures,
    its problem as its verdict, and the problem is also returned (one line per row)."""
    out, problems = [], []
    for number, row in enumerate(rows, start=2):
        where = f"{path} row {number}"
        try:
            out.append(check_row(row, where))
        except InputError as error:
            text = "; ".join(str(p) for p in error.problems)
            problems.append(text)
            out.append({"id": row.get("id", ""), "metric": row.get("metric", ""),
                        "measured": None, "bound": None, "attainable": None,
                        "measured_over_bound": None, "measured_over_attainable": None,
                        "verdict": f"not computed: {text}", "notes": []})
            measured = (row.get("measured") or "").replace(",", "").strip()
            try:
                out[-1]["measured"] = float(measured)
            except ValueError:
                pass
    return out, problems


def check_table(path: str) -> list[dict[str, object]]:
    """:func:`check_row` for every row of a measurements CSV (the shared table's columns,
    :data:`TABLE_COLUMNS`)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Problem("--check", path, f"cannot be read ({exc})",
                                  "give a CSV file of measurements")]) from None
    missing = [c for c in ("id", "metric", "measured", "gpu", "model", "precision", "gpus")
               if rows and c not in rows[0]]
    if not rows or missing:
        raise InputError([Problem("--check", path, "has no rows" if not rows else
                                  f"has no column {', '.join(missing)}",
                                  f"its header names {', '.join(TABLE_COLUMNS)}")])
    out, problems = check_rows(rows, path)
    if len(problems) == len(rows):  # nothing to show: the first problem is the message
        raise InputError([Problem("--check", path, "has no row that can be computed: "
                                  + problems[0])])
    return out


def prefill_tps_per_gpu(setup: Setup, prompt_tokens: float, mode: str = "attainable") -> float:
    """Prompt tokens per second per GPU [tokens/s]: one ÷ the GPU-seconds of a prompt token's
    arithmetic (dense part, routed experts, attention at half the prompt) at the peaks of the
    setup's precisions, × the achievable MFUs when attainable (compute bound: a prefill chunk
    shares its weight reads among its tokens)."""
    mode = _mode(mode)
    s, m, g = setup, setup.model, setup.gpu
    attention, rest = s._dense_parts(total=False)
    attainable = mode == "attainable"
    parts = ((2 * (attention + rest), activation_tflops(g, s.dense_precision), "dense_mfu"),
             (2 * m.routed_active_params, activation_tflops(g, s.expert_compute), "moe_mfu"),
             (float(roofline.attention_flops_for(m, prompt_tokens / 2)),
              g.fp8_tflops if s._bytes[2] <= 1 else g.bf16_tflops, "attention_mfu"))
    seconds = sum(flops / (peak * TERA * (_c(mfu) if attainable else 1.0))
                  for flops, peak, mfu in parts)
    return 1 / seconds


def gpu_seconds_per_token(setup: Setup, batch: float, context: float,
                          prompt_tokens: float) -> tuple[float, float]:
    """GPU-seconds one prompt token and one output token take at a run's batch (attainable):
    (prefill, decode) [GPU-s/token].

    Decode: a step of ``batch`` sequences of ``context`` tokens (:func:`step`) on every GPU of
    the replica, ÷ the tokens it yields. Prefill: the prompt token's arithmetic at the
    achievable MFUs (dense, routed experts, attention at half the prompt) — compute bound, its
    weight reads shared by a whole prefill chunk. Their ratio splits a run's GPU time between
    input and output tokens without its TTFT, which holds queueing.
    """
    decode = step(setup, batch, context, "attainable").step_s * setup.gpus / (
        batch * setup.speculative)
    return 1 / prefill_tps_per_gpu(setup, prompt_tokens), decode
