"""Reader of a public nightly inference benchmark suite's rows (InferenceX's ``agg_*.json``)."""

from __future__ import annotations

from ..measurement import FORMATS, Measurement, _num
from .json_fields import _concurrency, _per_user, _text_of, _ttft


def read_suite_result(obj: dict, path: str) -> Measurement:
    """One configuration of a public nightly inference benchmark suite (InferenceX's, formerly
    InferenceMAX's, ``agg_*.json`` rows written by its ``utils/process_result.py``, flat or
    with the figures under ``"metrics"``; agentic rows alike).

    Those files give throughput **per GPU** (``tput_per_gpu``, ``output_tput_per_gpu``), the
    tensor-parallel GPUs of the instance (``tp``; a disaggregated row, ``disagg`` true, counts
    its prefill and decode GPUs, ``num_prefill_gpu`` + ``num_decode_gpu``), latencies in
    seconds with the ``_ms`` dropped (``median_ttft``, ``p99_ttft``), interactivity
    (``median_intvty``, tokens/s per user), the concurrency (``conc``; agentic rows ``users``),
    hardware (``hw``), precision and ``spec_decoding``. The instance's throughput is tokens/s
    per GPU × GPUs. An agentic row has no median or p99 TTFT: its highest percentile is shown
    instead, named; its cache-hit rate is the server's GPU prefix-cache hit rate where given.
    """
    what = "benchmark suite result"
    figures = obj["metrics"] if isinstance(obj.get("metrics"), dict) else obj
    per_gpu = _num(figures, "tput_per_gpu", path, what)
    gpus = None
    notes: list[str] = []
    prefill_gpus = _num(obj, "num_prefill_gpu", path, what, required=False)
    decode_gpus = _num(obj, "num_decode_gpu", path, what, required=False)
    # disagg false: one instance on tp GPUs, whatever prefill/decode counts the row repeats
    colocated = obj.get("disagg") is False or str(obj.get("disagg")).lower() == "false"
    if not colocated and prefill_gpus and decode_gpus:
        gpus = prefill_gpus + decode_gpus
    for key in ("num_gpus", "total_gpus", "tp", "decode_tp"):
        value = _num(obj, key, path, what, required=False)
        if value and gpus is None:
            gpus = value
            break
    if gpus is None:
        notes.append("no GPU count (tp) in the file: it gives per-GPU figures only; give "
                     "--gpus N for the instance's")
    out_per_gpu = _num(figures, "output_tput_per_gpu", path, what, required=False)
    p50, n50 = _ttft(figures, "median", path, what)
    p99, n99 = _ttft(figures, "p99", path, what)
    tail = tail_stat = None
    if p50 is None and p99 is None:
        for stat in ("p95", "p90", "p75"):
            value = _num(figures, f"{stat}_ttft", path, what, required=False)
            if value is not None:
                tail, tail_stat = value * 1000, stat
                mean = _num(figures, "mean_ttft", path, what, required=False)
                notes.append(f"no p50/p99 TTFT in the file: its {stat} TTFT, {tail:,.1f} ms, "
                             "is shown instead (seconds in the file)" + (
                                 f"; mean {mean * 1000:,.1f} ms" if mean is not None else ""))
                break
    cache = None
    for key in ("server_gpu_cache_hit_rate", "cache_hit_rate"):
        value = _num(figures, key, path, what, required=False)
        if value is not None:
            cache = value / 100 if value > 1 else value
            if value > 1:
                notes.append(f"{key} {value:g} read as a percentage")
            break
    theoretical_hit = _num(figures, "theoretical_cache_hit_rate", path, what, required=False)
    if cache is None and theoretical_hit is not None:
        notes.append(f"the file's theoretical cache-hit rate ({theoretical_hit:g}) is what the "
                     "trace could reuse, not a measured hit rate: not used")
    spec = _text_of(obj, "spec_decoding")
    duration = _num(figures, "duration_seconds", path, what, required=False)
    inp = _num(figures, "total_prompt_tokens", path, what, required=False)
    out = _num(figures, "total_generation_tokens", path, what, required=False)
    assert per_gpu is not None
    return Measurement(
        source=path, format=FORMATS[4], duration_s=duration, input_tokens=inp,
        output_tokens=out, tps=per_gpu * (gpus or 1),
        output_tps=None if out_per_gpu is None else out_per_gpu * (gpus or 1),
        ttft_p50_ms=p50, ttft_p99_ms=p99, cache_hit_rate=cache, gpus=gpus,
        requests=_num(figures, "total_requests_completed", path, what, required=False),
        concurrency=_concurrency(obj, path, what), tps_per_user=_per_user(figures, path, what),
        hardware=_text_of(obj, "hw", "hardware", "device"),
        precision=_text_of(obj, "precision"), model_name=_text_of(obj, "model"),
        prompt_tokens=_num(obj, "isl", path, what, required=False)
        or _num(figures, "mean_input_tokens", path, what, required=False) or None,
        output_per_request=_num(obj, "osl", path, what, required=False)
        or _num(figures, "mean_output_tokens_actual", path, what, required=False) or None,
        speculative=None if spec in (None, "none") else spec,
        ttft_tail_ms=tail, ttft_tail_stat=tail_stat, per_gpu_only=gpus is None,
        notes=tuple(notes) + n50 + n99 + ((f"speculative decoding: {spec}",)
                                           if spec not in (None, "none") else ()))
