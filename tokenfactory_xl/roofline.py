"""Theoretical capacity from specifications: the roofline bound that is TEF's denominator.

A decode step of a batch of B sequences reads the model's active weights once and every
sequence's KV cache, and does about 2 × active parameters FLOPs per token (TFOM-SPEC
section 5). Whichever takes longer, moving the bytes or doing the FLOPs, sets the step time;
B tokens come out of each step. Prefill is compute bound. These are upper bounds: what a
replica would produce if nothing but memory bandwidth and tensor throughput limited it.

The functions come in two layers:

- spec formulas on plain numbers (:func:`kv_bytes_per_token`, :func:`kv_bytes_per_sequence`,
  :func:`bytes_per_step`, :func:`flops_per_step`, :func:`step_time`,
  :func:`decode_tps_per_gpu`, :func:`prefill_tps_per_gpu`, :func:`blended_tps`,
  :func:`max_batch`), each taking scalars or numpy arrays and broadcasting like
  :mod:`tokenfactory_xl.model`;
- catalogue functions (:func:`theoretical_tps`, :func:`max_batch_for`,
  :func:`prefill_tps_for`) that take a GPU and a model by name from
  :mod:`tokenfactory_xl.specs` and a precision.

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

**Tensor parallelism.** One replica of the model spans ``gpus_per_replica`` GPUs (tensor
parallel). Its aggregate memory bandwidth, FLOPS and memory are ``gpus_per_replica`` × one
GPU's; the replica's tokens per second are divided by ``gpus_per_replica`` to give tokens per
second **per GPU**, the figure the site inputs (``theoretical_tps_per_gpu``) take. Inter-GPU
communication is not charged: a bound, not a forecast. The KV cache is taken as split across
the replica's GPUs; an engine that copies it to every GPU instead (an MLA latent under tensor
parallelism, or more GPUs than KV heads) fits fewer sequences and reads more per step, which
data-parallel attention avoids.

**Mixture of experts.** Following the spec, a decode step reads the *active* parameters.
The tokens of a batch are routed to different experts, so a large batch of a MoE model reads
more than that: for MoE models the bound is the more optimistic the larger the batch.

**Memory.** Weights resident in memory are the *total* parameters (every expert of a MoE
model); a decode step reads the *active* ones. GB are 10⁹ bytes. No room is reserved for
activations or the runtime, so :func:`max_batch` is an upper bound too.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .errors import InputError, Problem
from .model import Numeric, _div, _f, _out
from .specs import GPU, Model, gpu, model

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

    KV bytes per token × context (TFOM-SPEC section 5). Where a share ``sliding_share`` of the
    layers attends over a sliding window of ``sliding_window`` tokens, those layers cache at
    most the window: bytes per token × ((1 − s) × context + s × min(context, window)).
    """
    c, s = _f(context_tokens), _f(sliding_share)
    tokens = (1 - s) * c + s * np.minimum(c, _f(sliding_window))
    return _out(_f(kv_bytes_per_token) * tokens)


def bytes_per_step(
    active_params: ArrayLike, bytes_per_weight: ArrayLike, batch: ArrayLike,
    kv_bytes_per_sequence: ArrayLike,
) -> Numeric:
    """Bytes one decode step reads [bytes]: active params × bytes per weight + B × KV bytes
    per sequence (KV bytes per token × context, TFOM-SPEC section 5)."""
    return _out(_f(active_params) * _f(bytes_per_weight) + _f(batch) * _f(kv_bytes_per_sequence))


def flops_per_step(active_params: ArrayLike, batch: ArrayLike) -> Numeric:
    """FLOPs one decode step does [FLOP]: 2 × active params × B (a multiply and an add per
    weight per token)."""
    return _out(2 * _f(active_params) * _f(batch))


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
                        mfu: ArrayLike = DEFAULT_MFU) -> Numeric:
    """Prompt (prefill) tokens per second per GPU [tokens/s]: peak × MFU ÷ (2 × active params).

    ``peak_flops`` is one GPU's [FLOP/s]; a replica of g GPUs does g times as much over g GPUs.
    """
    return _out(_div(_f(peak_flops) * _f(mfu), 2 * _f(active_params)))


def blended_tps(prefill_tps: ArrayLike, decode_tps: ArrayLike,
                output_share: ArrayLike) -> Numeric:
    """Tokens per second of a mix of prompt and output tokens [tokens/s].

    A GPU that reads prompts at P tokens/s and writes output at D tokens/s spends
    (1 − o) ÷ P + o ÷ D seconds per token of a mix whose output share is o, so it makes
    1 ÷ ((1 − o) ÷ P + o ÷ D) tokens/s of that mix: the ceiling to set against a measured
    throughput that counts input and output tokens alike.
    """
    o = _f(output_share)
    seconds = _div(1 - o, prefill_tps) + _div(o, decode_tps)
    return _out(_div(1.0, seconds))


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
def kv_bytes_per_sequence_for(m: Model, context_tokens: ArrayLike, kv_bytes: float
                              ) -> np.ndarray:
    """KV-cache bytes of one sequence of ``context_tokens`` for a catalogue model [bytes]:
    its latent or heads × head dim per layer, sliding-window layers capped at their window."""
    per_token = kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, kv_bytes,
                                   m.kv_latent_dim or 0)
    share = m.sliding_window_layers / m.layers if m.sliding_window else 0.0
    window = m.sliding_window or np.inf
    return _f(kv_bytes_per_sequence(per_token, context_tokens, share, window))


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


def max_batch_for(
    gpu_name: GPU | str, model_name: Model | str, precision: str, context_tokens: ArrayLike,
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
    g, m = gpu(gpu_name), model(model_name)
    w_bytes = bytes_per_element(precision)
    kv_bytes = bytes_per_element(kv_precision) if kv_precision else w_bytes
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    return max_batch(g.hbm_gb * GIGA, n, m.total_params * w_bytes,
                     kv_bytes_per_sequence_for(m, ctx, kv_bytes))


def theoretical_tps(
    gpu_name: GPU | str, model_name: Model | str, precision: str, batch: ArrayLike,
    context_tokens: ArrayLike, gpus_per_replica: ArrayLike = 1,
    mbu: ArrayLike = DEFAULT_MBU, mfu: ArrayLike = DEFAULT_MFU,
    kv_precision: str | None = None, check_memory: bool = True,
) -> Numeric:
    """Theoretical decode throughput per GPU [tokens/s] (TFOM-SPEC section 5).

    One replica spans ``gpus_per_replica`` GPUs: its bandwidth and FLOPS are that many times
    one GPU's, and its tokens per second are divided by the same number.

    step time = max((active × bytes/weight + B × KV bytes/sequence) ÷ (n × bandwidth × MBU),
    2 × active × B ÷ (n × peak × MFU)); TPS per GPU = B ÷ step time ÷ n.

    Parameters
    ----------
    gpu_name, model_name : catalogue keys (case ignored) or :class:`GPU` / :class:`Model`
    precision : weight precision: fp16, bf16, fp8, int8, fp4, int4
    batch : sequences decoded together [sequences]
    context_tokens : context length of each sequence [tokens]
    gpus_per_replica : tensor-parallel GPUs holding one replica [GPUs]
    mbu, mfu : memory-bandwidth and model-FLOPs utilisation [fraction], default 1.0
    kv_precision : KV-cache precision when it differs from ``precision``
    check_memory : where the batch does not fit in the replica's memory the result is nan

    Examples
    --------
    Llama-3.1-8B in BF16 on one H100 SXM, batch 1, 1,000-token context: memory bound,
    3.35 TB/s ÷ (16.06 GB + 0.131 GB) ≈ 206.9 tokens/s.

    >>> round(theoretical_tps("H100 SXM", "Llama-3.1-8B", "bf16", 1, 1000), 1)
    206.9
    """
    g, m = gpu(gpu_name), model(model_name)
    w_bytes = bytes_per_element(precision)
    kv_bytes = bytes_per_element(kv_precision) if kv_precision else w_bytes
    b = _check_positive("batch", batch, whole=True)
    ctx = _check_positive("context_tokens", context_tokens, whole=True)
    n = _check_positive("gpus_per_replica", gpus_per_replica, whole=True)
    mbu_, mfu_ = _check_fraction("mbu", mbu), _check_fraction("mfu", mfu)
    kv_seq = kv_bytes_per_sequence_for(m, ctx, kv_bytes)
    step = step_time(
        bytes_per_step(m.active_params, w_bytes, b, kv_seq),
        flops_per_step(m.active_params, b),
        n * g.bandwidth_tbps * TERA, n * peak_tflops(g, precision) * TERA, mbu_, mfu_)
    tps = _f(decode_tps_per_gpu(b, step, n))
    if check_memory:
        fits = b <= _f(max_batch(g.hbm_gb * GIGA, n, m.total_params * w_bytes, kv_seq))
        tps = np.where(fits, tps, np.nan)
    return _out(tps)


def prefill_tps_for(gpu_name: GPU | str, model_name: Model | str, precision: str,
                    mfu: ArrayLike = DEFAULT_MFU) -> Numeric:
    """Theoretical prompt (prefill) tokens per second per GPU [tokens/s]: peak × MFU ÷
    (2 × active params), peak at ``precision``."""
    g, m = gpu(gpu_name), model(model_name)
    return prefill_tps_per_gpu(peak_tflops(g, precision) * TERA, m.active_params,
                               _check_fraction("mfu", mfu))
