"""Theoretical capacity from specifications: the roofline bound that is TEF's denominator.

A decode step of a batch of B sequences on one replica reads the weights it needs and every
sequence's KV cache, and does the matrix and attention arithmetic (methodology section 5,
version 2). Whichever takes longer, moving the bytes or doing the FLOPs, sets the step time;
B tokens come out of each step. Prefill is compute bound. These are upper bounds: what a
replica would produce if nothing but memory bandwidth and tensor throughput limited it.

**What a step reads.** Not simply the active parameters:

- the input embedding is a lookup: a step reads B rows of hidden-size elements, not the whole
  table (Llama-3.1-8B's table is 525 M of its 8.03 B parameters);
- the output projection (LM head) is a full matrix multiply: read whole every step;
- a mixture-of-experts layer routes each of the B tokens to k of its E experts, so a batch
  touches E × (1 − (1 − k/E)^B) distinct experts in expectation (uniform routing). At batch 1
  that is k; at large batch nearly every expert: DeepSeek-V3 (k = 8, E = 256) touches 255.9 of
  256 at B = 256, and decode then reads nearly all 671 B parameters, not the 37 B active ones.

**What a step computes.** 2 FLOPs per active weight per token (the input-embedding lookup
excluded) plus attention over the context: 4 × layers × query heads × head dim × context for
ordinary (MHA/GQA) attention, 2 × layers × query heads × context × (2 × latent + rope dim) for
multi-head latent attention in its absorbed form (about 70 GFLOP per token for DeepSeek-V3 at
4,096 tokens). Sliding-window layers attend over at most their window. Prefill does the same
per prompt token, its attention at half the prompt length (the average position).

The functions come in two layers:

- spec formulas on plain numbers (:func:`experts_touched`, :func:`weights_read_per_step`,
  :func:`kv_bytes_per_token`, :func:`kv_bytes_per_sequence`, :func:`bytes_per_step`,
  :func:`attention_flops_per_token`, :func:`flops_per_step`, :func:`step_time`,
  :func:`decode_tps_per_gpu`, :func:`prefill_tps_per_gpu`, :func:`blended_tps`,
  :func:`max_batch`), each taking scalars or numpy arrays and broadcasting like
  :mod:`tokenfactory_xl.core.economics`;
- catalogue functions (:func:`theoretical_tps`, :func:`max_batch_for`,
  :func:`prefill_tps_for`, :func:`decode_step_for`) that take a GPU and a model by name from
  :mod:`tokenfactory_xl.core.specs` and a precision; their ``…_over`` twins take a
  :class:`Replica`, the figures of one combination or of one per cell, so that a range of
  100,000 GPUs, models and precisions is computed in one pass, each distinct entry read once.

Check values of the spec, pinned by the tests: Llama-3.1-8B in BF16 on one H100 SXM, batch 1,
1,100 tokens of context: 221.1 tokens/s (a published 212.8 stays under it); DeepSeek-V3 in FP8
on 8 × H200, batch 256, 4,096 tokens: 1,740 tokens/s per GPU.

**Precision** is one of ``fp16``, ``bf16``, ``fp8``, ``int8``, ``fp4``, ``int4``. It sets the
bytes per weight (2, 2, 1, 1, 0.5, 0.5), the bytes per KV-cache element unless
``kv_precision`` says otherwise, and the peak FLOPS used: BF16 TFLOPS for fp16/bf16, FP8
TFLOPS for fp8/int8, FP4 TFLOPS for fp4/int4 where the GPU has FP4 tensor cores (FP8 where it
has not: the weights are dequantised into FP8 arithmetic).

**Efficiency factors.** ``mbu`` (memory-bandwidth utilisation) and ``mfu`` (model-FLOPs
utilisation) scale the bandwidth and the FLOPS. Both default to 1.0, so the result is the
spec's upper bound exactly: TEF = actual ÷ theoretical then measures the whole gap between a
factory and its hardware, software included, which is what an optimisation programme closes.
Pass lower factors (well-tuned decode kernels sustain about 0.7–0.85 of peak bandwidth;
prefill reaches about 0.4–0.6 MFU) to get an *attainable* ceiling instead; TEF against it is
correspondingly higher.

**Parallelism.** One replica of the model spans ``gpus_per_replica`` GPUs (tensor or expert
parallel). Its aggregate memory bandwidth, FLOPS and memory are ``gpus_per_replica`` × one
GPU's; the replica's tokens per second are divided by ``gpus_per_replica`` to give tokens per
second **per GPU**, the figure the site inputs (``theoretical_tps_per_gpu``) take. Inter-GPU
communication is not charged: a bound, not a forecast. The KV cache is taken as split across
the replica's GPUs; an engine that copies it to every GPU instead (an MLA latent under tensor
parallelism, or more GPUs than KV heads) fits fewer sequences and reads more per step, which
data-parallel attention avoids.

**Memory.** Weights resident in memory are the *total* parameters (every expert of a MoE
model). GB are 10⁹ bytes. No room is reserved for activations or the runtime, so
:func:`max_batch` is an upper bound too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from .economics import Numeric, _div, _f, _out, blended_capacity
from .errors import InputError, Problem
from .specs import GPU, LLM, gpu, model

#: Bytes per weight and per KV-cache element for each precision.
PRECISIONS: dict[str, float] = {
    "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "int4": 0.5,
}

#: Default memory-bandwidth utilisation [fraction]: 1.0, the spec's pure upper bound.
DEFAULT_MBU = 1.0
#: Default model-FLOPs utilisation [fraction]: 1.0, the spec's pure upper bound.
DEFAULT_MFU = 1.0

TERA = 1e12
GIGA = 1e9


# -- precision -----------------------------------------------------------------------------------
def _precision(precision: str, name: str = "precision") -> str:
    key = str(precision).strip().lower()
    if key not in PRECISIONS:
        raise InputError([Problem(name, precision, "is not a known precision",
                                  f"use one of {', '.join(PRECISIONS)}")])
    return key


def bytes_per_element(precision: str) -> float:
    """Bytes a weight or KV-cache element takes at ``precision`` [bytes]."""
    return PRECISIONS[_precision(precision)]


def peak_tflops(gpu_spec: GPU | str, precision: str) -> float:
    """The dense tensor throughput a GPU offers at ``precision`` [TFLOPS].

    fp16/bf16 → BF16 TFLOPS; fp8/int8 → FP8 TFLOPS; fp4/int4 → FP4 TFLOPS where present,
    else FP8 TFLOPS.
    """
    g = gpu(gpu_spec)
    key = _precision(precision)
    if key in ("fp16", "bf16"):
        return g.bf16_tflops
    if key in ("fp4", "int4") and g.fp4_tflops:
        return g.fp4_tflops
    return g.fp8_tflops


# -- spec formulas on numbers --------------------------------------------------------------------
def kv_bytes_per_token(
    layers: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike, kv_bytes: ArrayLike,
    latent_dim: ArrayLike = 0,
) -> Numeric:
    """KV-cache bytes one token of context costs [bytes/token].

    2 × layers × KV heads × head dim × bytes per element (a key and a value per head per
    layer); for a multi-head-latent-attention model (``latent_dim`` > 0) layers × latent dim ×
    bytes per element, because keys and values are rebuilt from one cached latent.
    """
    latent = _f(latent_dim)
    full = 2 * _f(layers) * _f(kv_heads) * _f(head_dim) * _f(kv_bytes)
    mla = _f(layers) * latent * _f(kv_bytes)
    return _out(np.where(latent > 0, mla, full))


def kv_bytes_per_sequence(
    kv_bytes_per_token: ArrayLike, context_tokens: ArrayLike,
    sliding_share: ArrayLike = 0, sliding_window: ArrayLike = np.inf,
) -> Numeric:
    """KV-cache bytes of one sequence at ``context_tokens`` [bytes].

    KV bytes per token × context (methodology section 5). Where a share ``sliding_share`` of the
    layers attends over a sliding window of ``sliding_window`` tokens, those layers cache at
    most the window: bytes per token × ((1 − s) × context + s × min(context, window)).
    """
    c, s = _f(context_tokens), _f(sliding_share)
    tokens = (1 - s) * c + s * np.minimum(c, _f(sliding_window))
    return _out(_f(kv_bytes_per_token) * tokens)


def experts_touched(experts: ArrayLike, experts_per_token: ArrayLike,
                    batch: ArrayLike) -> Numeric:
    """Distinct experts a batch routes to in one MoE layer, in expectation [experts].

    E × (1 − (1 − k ÷ E)^B) under uniform routing (methodology section 5): each expert is missed
    by one token with probability 1 − k ÷ E, by all B tokens with that to the power B. k at
    B = 1, nearly E at large B. 0 for a dense model (E = 0).

    >>> round(experts_touched(256, 8, 256), 1)  # DeepSeek-V3 at batch 256
    255.9
    """
    e, k = _f(experts), _f(experts_per_token)
    with np.errstate(divide="ignore", invalid="ignore"):
        touched = e * (1 - np.power(1 - np.where(e > 0, k / np.where(e > 0, e, 1), 0),
                                    _f(batch)))
    return _out(np.where(e > 0, touched, 0.0))


def weights_read_per_step(
    active_params: ArrayLike, batch: ArrayLike, embedding_params: ArrayLike = 0,
    hidden_size: ArrayLike = 0, moe_layers: ArrayLike = 0, experts: ArrayLike = 0,
    experts_per_token: ArrayLike = 0, expert_params: ArrayLike = 0,
) -> Numeric:
    """Parameters one decode step of B sequences reads [parameters] (methodology section 5).

    (active − input embedding − k × L_moe × p_expert) + B × hidden + L_moe × E_touched(B) ×
    p_expert: the weights every token uses (attention, dense and shared-expert layers, LM head)
    once, the B embedding rows looked up, and every routed expert the batch touches. For a dense
    model (no experts) it is active − embedding + B × hidden.

    Parameters
    ----------
    active_params : published active parameters, embeddings and LM head included [parameters]
    batch : sequences decoded together [sequences]
    embedding_params : input-embedding table [parameters]; 0 reads it whole (tied embeddings)
    hidden_size : elements of one embedding row [elements]
    moe_layers : MoE layers L_moe; experts : routed experts per layer E;
    experts_per_token : k; expert_params : one routed expert in one layer p_expert [parameters]
    """
    b, p, layers = _f(batch), _f(expert_params), _f(moe_layers)
    always = _f(active_params) - _f(embedding_params) - _f(experts_per_token) * layers * p
    routed = layers * _f(experts_touched(experts, experts_per_token, b)) * p
    return _out(always + b * _f(hidden_size) + routed)


def bytes_per_step(
    weights_read: ArrayLike, bytes_per_weight: ArrayLike, batch: ArrayLike,
    kv_bytes_per_sequence: ArrayLike,
) -> Numeric:
    """Bytes one decode step reads [bytes]: weights read × bytes per weight + B × KV bytes per
    sequence (methodology section 5). ``weights_read`` comes from :func:`weights_read_per_step`."""
    return _out(_f(weights_read) * _f(bytes_per_weight) + _f(batch) * _f(kv_bytes_per_sequence))


def attention_flops_per_token(
    layers: ArrayLike, query_heads: ArrayLike, head_dim: ArrayLike, context_tokens: ArrayLike,
    latent_dim: ArrayLike = 0, rope_dim: ArrayLike = 0, sliding_share: ArrayLike = 0,
    sliding_window: ArrayLike = np.inf,
) -> Numeric:
    """Attention FLOPs one new token does over a context of n tokens [FLOP/token].

    MHA/GQA: 4 × layers × query heads × head dim × n (scores and the weighted sum of values,
    a multiply and an add each). MLA in its absorbed form (``latent_dim`` > 0): 2 × layers ×
    query heads × n × (2 × latent + rope dim), the scores over latent and rotary part and the
    sum over the latent (methodology section 5). A share ``sliding_share`` of the layers attends
    over at most ``sliding_window`` tokens.
    """
    n, s = _f(context_tokens), _f(sliding_share)
    attended = (1 - s) * n + s * np.minimum(n, _f(sliding_window))
    latent = _f(latent_dim)
    mha = 4 * _f(query_heads) * _f(head_dim)
    mla = 2 * _f(query_heads) * (2 * latent + _f(rope_dim))
    return _out(_f(layers) * np.where(latent > 0, mla, mha) * attended)


def flops_per_step(active_params: ArrayLike, batch: ArrayLike, embedding_params: ArrayLike = 0,
                   attention_flops_per_token: ArrayLike = 0) -> Numeric:
    """FLOPs one decode step does [FLOP]: B × (2 × (active − input embedding) params +
    attention FLOPs per token) (a multiply and an add per weight per token; the embedding is a
    lookup, not arithmetic)."""
    per_token = 2 * (_f(active_params) - _f(embedding_params)) + _f(attention_flops_per_token)
    return _out(_f(batch) * per_token)


def step_time(
    bytes_: ArrayLike, flops: ArrayLike, bandwidth: ArrayLike, peak_flops: ArrayLike,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
) -> Numeric:
    """Time of one decode step [s]: max(bytes ÷ (bandwidth × MBU), FLOPs ÷ (peak × MFU)).

    Parameters
    ----------
    bytes_ : bytes read per step [bytes]
    flops : FLOPs per step [FLOP]
    bandwidth : memory bandwidth of the replica [bytes/s]
    peak_flops : dense peak of the replica at the precision used [FLOP/s]
    mbu, mfu : memory-bandwidth and model-FLOPs utilisation [fraction]
    """
    memory = _div(bytes_, _f(bandwidth) * _f(mbu))
    compute = _div(flops, _f(peak_flops) * _f(mfu))
    return _out(np.maximum(memory, compute))


def decode_tps_per_gpu(batch: ArrayLike, step_time: ArrayLike,
                       gpus_per_replica: ArrayLike = 1) -> Numeric:
    """Decode tokens per second per GPU [tokens/s]: B ÷ step time ÷ GPUs per replica."""
    return _out(_div(_f(batch), _f(step_time) * _f(gpus_per_replica)))


def prefill_tps_per_gpu(peak_flops: ArrayLike, active_params: ArrayLike,
                        mfu: ArrayLike = DEFAULT_MFU, embedding_params: ArrayLike = 0,
                        attention_flops_per_token: ArrayLike = 0) -> Numeric:
    """Prompt (prefill) tokens per second per GPU [tokens/s]: peak × MFU ÷ (2 × (active −
    embedding) params + attention FLOPs per prompt token).

    ``peak_flops`` is one GPU's [FLOP/s]; a replica of g GPUs does g times as much over g GPUs.
    ``attention_flops_per_token`` is taken at half the prompt length (methodology section 5): the
    average position of a prompt token.
    """
    per_token = 2 * (_f(active_params) - _f(embedding_params)) + _f(attention_flops_per_token)
    return _out(_div(_f(peak_flops) * _f(mfu), per_token))


def blended_tps(prefill_tps: ArrayLike, decode_tps: ArrayLike,
                output_share: ArrayLike) -> Numeric:
    """Tokens per second of a mix of prompt and output tokens [tokens/s]: methodology section 2's
    blended capacity 1 ÷ ((1 − o) ÷ T_p + o ÷ T_d), stated once in
    :func:`tokenfactory_xl.core.economics.blended_capacity`."""
    return blended_capacity(prefill_tps, decode_tps, output_share)


def max_batch(
    memory_bytes: ArrayLike, gpus_per_replica: ArrayLike, weight_bytes: ArrayLike,
    kv_bytes_per_sequence: ArrayLike,
) -> Numeric:
    """Largest batch whose KV cache fits beside the weights [sequences].

    floor((memory per GPU × GPUs per replica − weight bytes) ÷ KV bytes per sequence), where
    KV bytes per sequence = KV bytes per token × context. 0 when the weights alone do not fit.
    """
    free = _f(memory_bytes) * _f(gpus_per_replica) - _f(weight_bytes)
    batches = np.floor(_div(np.maximum(free, 0), kv_bytes_per_sequence))
    return _out(batches)


# -- from the catalogue --------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelFigures:
    """A catalogue model's figures the roofline reads, each one number, or an array with one
    per cell when many cells are computed at once (:func:`theoretical_tps_over`)."""

    total_params: ArrayLike
    active_params: ArrayLike
    embedding_params: ArrayLike
    hidden_size: ArrayLike
    layers: ArrayLike
    kv_heads: ArrayLike
    head_dim: ArrayLike
    attention_heads: ArrayLike
    #: the cached latent per layer (MLA), 0 for ordinary attention [elements]
    kv_latent: ArrayLike
    #: the latent attention reads besides the rotary part (MLA), 0 otherwise [elements]
    attention_latent: ArrayLike
    rope_dim: ArrayLike
    #: the share of the layers that attend over a sliding window, and the window [tokens]
    sliding_share: ArrayLike
    sliding_window: ArrayLike
    moe_layers: ArrayLike
    experts: ArrayLike
    experts_per_token: ArrayLike
    expert_params: ArrayLike

    @classmethod
    def of(cls, m: LLM) -> ModelFigures:
        share, window = _sliding(m)
        return cls(
            m.total_params, m.active_params, m.embedding_params, m.hidden_size, m.layers,
            m.kv_heads, m.head_dim, m.attention_heads, m.kv_latent_dim or 0,
            (m.kv_latent_dim - m.rope_dim) if m.kv_latent_dim else 0, m.rope_dim, share, window,
            m.moe_layers, m.experts, m.experts_per_token, m.expert_params)

    @classmethod
    def gathered(cls, models: Sequence[LLM], at: np.ndarray) -> ModelFigures:
        """Each cell's figures: ``models[at]``, one array per figure."""
        table = np.array([[getattr(f, name.name) for name in fields(cls)]
                          for f in map(cls.of, models)], dtype=float)
        return cls(*np.take(table.T, at, axis=1))  # one gather: a row of cells per figure


def _sliding(m: LLM) -> tuple[float, float]:
    """The share of a model's layers that attend over a window, and the window [tokens]."""
    if not m.sliding_window:
        return 0.0, np.inf
    return m.sliding_window_layers / m.layers, float(m.sliding_window)


def _kv_per_sequence(f: ModelFigures, context_tokens: ArrayLike, kv_bytes: ArrayLike
                     ) -> np.ndarray:
    per_token = kv_bytes_per_token(f.layers, f.kv_heads, f.head_dim, kv_bytes, f.kv_latent)
    return _f(kv_bytes_per_sequence(per_token, context_tokens, f.sliding_share,
                                    f.sliding_window))


def _attention_flops(f: ModelFigures, context_tokens: ArrayLike) -> Numeric:
    return attention_flops_per_token(f.layers, f.attention_heads, f.head_dim, context_tokens,
                                     f.attention_latent, f.rope_dim, f.sliding_share,
                                     f.sliding_window)


def kv_bytes_per_sequence_for(m: LLM, context_tokens: ArrayLike, kv_bytes: float
                              ) -> np.ndarray:
    """KV-cache bytes of one sequence of ``context_tokens`` for a catalogue model [bytes]:
    its latent or heads × head dim per layer, sliding-window layers capped at their window."""
    return _kv_per_sequence(ModelFigures.of(m), context_tokens, kv_bytes)


def attention_flops_for(m: LLM, context_tokens: ArrayLike) -> Numeric:
    """Attention FLOPs per token of a catalogue model at ``context_tokens`` [FLOP/token]: its
    MLA latent and rope dim, or its query heads × head dim, sliding layers capped."""
    return _attention_flops(ModelFigures.of(m), context_tokens)


@dataclass(frozen=True)
class Replica:
    """What the roofline reads of a GPU, a model and a precision: one combination, or one per
    cell (arrays) when many are computed at once."""

    model: ModelFigures
    hbm_gb: ArrayLike
    bandwidth_tbps: ArrayLike
    #: dense peak of one GPU at the precision [TFLOPS] (:func:`peak_tflops`)
    peak_tflops: ArrayLike
    weight_bytes: ArrayLike
    kv_bytes: ArrayLike

    @classmethod
    def of(cls, gpu_name: GPU | str, model_name: LLM | str, precision: str,
           kv_precision: str | None = None) -> Replica:
        g, m = gpu(gpu_name), model(model_name)
        w_bytes = bytes_per_element(precision)
        kv_bytes = bytes_per_element(kv_precision) if kv_precision else w_bytes
        return cls(ModelFigures.of(m), g.hbm_gb, g.bandwidth_tbps, peak_tflops(g, precision),
                   w_bytes, kv_bytes)

    @classmethod
    def gathered(cls, gpus: Sequence[GPU], models: Sequence[LLM], precisions: Sequence[str],
                 gpu_at: np.ndarray, model_at: np.ndarray, precision_at: np.ndarray
                 ) -> Replica:
        """One replica per cell: GPU ``gpus[gpu_at]``, model ``models[model_at]`` and
        precision ``precisions[precision_at]``, each distinct entry read once."""
        peak = np.array([[peak_tflops(g, p) for p in precisions] for g in gpus], dtype=float)
        per_weight = np.take([bytes_per_element(p) for p in precisions], precision_at)
        return cls(ModelFigures.gathered(models, model_at),
                   np.take([float(g.hbm_gb) for g in gpus], gpu_at),
                   np.take([float(g.bandwidth_tbps) for g in gpus], gpu_at),
                   np.take(peak.reshape(-1), np.ravel_multi_index((gpu_at, precision_at),
                                                                  peak.shape)),
                   per_weight, per_weight)


def _check_positive(name: str, value: ArrayLike, whole: bool = False) -> np.ndarray:
    arr = _f(value)
    bad = ~np.isfinite(arr) | (arr <= 0) | (whole & (arr != np.floor(arr)))
    if np.any(bad):
        shown = arr[bad].flat[0] if arr.ndim else float(arr)
        allowed = "a whole number of at least 1" if whole else "a number above 0"
        raise InputError([Problem(name, shown, f"must be {allowed}")])
    return arr


def _check_fraction(name: str, value: ArrayLike) -> np.ndarray:
    arr = _f(value)
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > 1)
    if np.any(bad):
        shown = arr[bad].flat[0] if arr.ndim else float(arr)
        fix = (f"enter {shown:g}% or {shown / 100:g}" if 1 < shown <= 100
               else "e.g. 0.8 for 80%")
        raise InputError([Problem(name, shown, "must be a fraction above 0 and at most 1", fix)])
    return arr


def _max_batch_of(r: Replica, context_tokens: np.ndarray, gpus_per_replica: np.ndarray,
                  kv_seq: np.ndarray | None = None) -> Numeric:
    if kv_seq is None:
        kv_seq = _kv_per_sequence(r.model, context_tokens, r.kv_bytes)
    return max_batch(_f(r.hbm_gb) * GIGA, gpus_per_replica,
                     _f(r.model.total_params) * r.weight_bytes, kv_seq)


def max_batch_for(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, context_tokens: ArrayLike,
    gpus_per_replica: ArrayLike = 1, kv_precision: str | None = None,
) -> Numeric:
    """Largest batch of ``context_tokens``-long sequences one replica can hold [sequences].

    (HBM × GPUs per replica − total params × bytes per weight) ÷ KV bytes per sequence,
    rounded down; 0 when the weights do not fit.

    Llama-3.1-70B in FP8 on one H200 at 8,192 tokens: (141 − 70.55) GB of room ÷ 1.34 GB of KV
    cache per sequence.

    >>> max_batch_for("H200", "Llama-3.1-70B", "fp8", 8192)
    52.0
    """
    r = Replica.of(gpu_name, model_name, precision, kv_precision)
    return max_batch_over(r, context_tokens, gpus_per_replica)


def max_batch_over(r: Replica, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1
                   ) -> Numeric:
    """:func:`max_batch_for` of a :class:`Replica`: one combination, or one per cell."""
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    return _max_batch_of(r, ctx, n)


def decode_step_for(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, batch: ArrayLike,
    context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
    kv_precision: str | None = None,
) -> dict[str, Numeric]:
    """The working of one decode step of a catalogue GPU and model (methodology section 5).

    Returns
    -------
    ``weights_read`` [parameters], ``experts_touched`` per MoE layer [experts],
    ``kv_bytes_per_sequence`` [bytes], ``bytes`` and ``flops`` per step [bytes, FLOP],
    ``memory_s`` and ``compute_s`` (each bound's time) and ``step_s`` [s], ``tps_per_gpu``
    [tokens/s], ``max_batch`` [sequences]. Arguments are validated as in
    :func:`theoretical_tps`.
    """
    return decode_step_over(Replica.of(gpu_name, model_name, precision, kv_precision), batch,
                            context_tokens, gpus_per_replica, mbu, mfu)


def decode_step_over(
    r: Replica, batch: ArrayLike, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
) -> dict[str, Numeric]:
    """:func:`decode_step_for` of a :class:`Replica`: one combination, or one per cell."""
    f = r.model
    b = _check_positive("batch", batch, whole=True)
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    mbu_, mfu_ = _check_fraction("mbu", mbu), _check_fraction("mfu", mfu)
    kv_seq = _kv_per_sequence(f, ctx, r.kv_bytes)
    weights = weights_read_per_step(f.active_params, b, f.embedding_params, f.hidden_size,
                                    f.moe_layers, f.experts, f.experts_per_token,
                                    f.expert_params)
    moved = bytes_per_step(weights, r.weight_bytes, b, kv_seq)
    flops = flops_per_step(f.active_params, b, f.embedding_params, _attention_flops(f, ctx))
    memory_s = _div(moved, n * _f(r.bandwidth_tbps) * TERA * mbu_)
    compute_s = _div(flops, n * _f(r.peak_tflops) * TERA * mfu_)
    step = np.maximum(memory_s, compute_s)
    return {
        "weights_read": weights,
        "experts_touched": experts_touched(f.experts, f.experts_per_token, b),
        "kv_bytes_per_sequence": _out(kv_seq), "bytes": moved, "flops": flops,
        "memory_s": _out(memory_s), "compute_s": _out(compute_s), "step_s": _out(step),
        "tps_per_gpu": decode_tps_per_gpu(b, step, n),
        "max_batch": _max_batch_of(r, ctx, n, kv_seq),
    }


def theoretical_tps(
    gpu_name: GPU | str, model_name: LLM | str, precision: str, batch: ArrayLike,
    context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
    kv_precision: str | None = None, check_memory: bool = True,
) -> Numeric:
    """Theoretical decode throughput per GPU [tokens/s] (methodology section 5, version 2).

    One replica spans ``gpus_per_replica`` GPUs: its bandwidth and FLOPS are that many times
    one GPU's, and its tokens per second are divided by the same number.

    step time = max(bytes ÷ (n × bandwidth × MBU), FLOPs ÷ (n × peak × MFU)) with bytes =
    weights read (:func:`weights_read_per_step`: embedding rows, LM head, the experts the batch
    touches) × bytes/weight + B × KV bytes/sequence and FLOPs = B × (2 × (active − embedding)
    + attention FLOPs per token); TPS per GPU = B ÷ step time ÷ n.

    Parameters
    ----------
    gpu_name, model_name : catalogue keys (case ignored) or :class:`GPU` / :class:`Model`
    precision : weight precision: fp16, bf16, fp8, int8, fp4, int4
    batch : sequences decoded together [sequences]
    context_tokens : context length of each sequence [tokens]
    gpus_per_replica : tensor- or expert-parallel GPUs holding one replica [GPUs]
    mbu, mfu : memory-bandwidth and model-FLOPs utilisation [fraction], default 1.0
    kv_precision : KV-cache precision when it differs from ``precision``
    check_memory : where the batch does not fit in the replica's memory the result is nan

    Examples
    --------
    Llama-3.1-8B in BF16 on one H100 SXM, batch 1, 1,100-token context (the spec's check):
    memory bound, 3.35 TB/s ÷ ((8.030 − 0.525) G params + one 4,096-element embedding row) ×
    2 bytes + 0.144 GB of KV cache) ≈ 221.1 tokens/s, above the published 212.8.

    >>> round(theoretical_tps("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1100), 1)
    221.1

    DeepSeek-V3 in FP8 on 8 × H200, batch 256, 4,096 tokens: the batch touches 255.9 of 256
    experts per layer, so a step reads 669 GB of weights and 37 GB of MLA cache.

    >>> round(theoretical_tps("H200", "DeepSeek-V3", "fp8", 256, 4096, 8))
    1740
    """
    return theoretical_tps_over(Replica.of(gpu_name, model_name, precision, kv_precision),
                                batch, context_tokens, gpus_per_replica, mbu, mfu, check_memory)


def theoretical_tps_over(
    r: Replica, batch: ArrayLike, context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU, check_memory: bool = True,
) -> Numeric:
    """:func:`theoretical_tps` of a :class:`Replica`: one combination, or one per cell (the
    Excel function THEORETICAL_TPS computes a whole range of GPUs and models in one pass)."""
    step = decode_step_over(r, batch, context_tokens, gpus_per_replica, mbu, mfu)
    tps = _f(step["tps_per_gpu"])
    if check_memory:
        tps = np.where(_check_positive("batch", batch, whole=True) <= _f(step["max_batch"]),
                       tps, np.nan)
    return _out(tps)


def prefill_tps_for(gpu_name: GPU | str, model_name: LLM | str, precision: str,
                    mfu: ArrayLike = DEFAULT_MFU, prompt_tokens: ArrayLike = 0) -> Numeric:
    """Theoretical prompt (prefill) tokens per second per GPU [tokens/s] (methodology section 5):
    peak × MFU ÷ (2 × (active − embedding) params + attention FLOPs at half the prompt length),
    peak at ``precision``. ``prompt_tokens`` 0 leaves attention out (a short prompt).

    >>> round(prefill_tps_for("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1000))
    64792
    """
    g, m = gpu(gpu_name), model(model_name)
    prompt = _f(prompt_tokens)
    if np.any(~np.isfinite(prompt) | (prompt < 0)):
        raise InputError([Problem("prompt_tokens", prompt_tokens, "must be a number of at least 0",
                                  "give the prompt length in tokens")])
    return prefill_tps_per_gpu(peak_tflops(g, precision) * TERA, m.active_params,
                               _check_fraction("mfu", mfu), m.embedding_params,
                               attention_flops_for(m, prompt / 2))
