"""Reader of LLMPerf's summary JSON (``token_benchmark_ray.py``, ray-project/llmperf).

The summary is flat: ``results_ttft_s_quantiles_p50``/``_p99`` (seconds),
``results_inter_token_latency_s_quantiles_p50`` (seconds),
``results_mean_output_throughput_token_per_s`` (output tokens per second over the run),
``results_num_completed_requests_per_min``, ``mean_input_tokens``, ``mean_output_tokens``
(the requested lengths; ``results_number_input_tokens_mean`` and
``results_number_output_tokens_mean`` the measured ones), ``num_concurrent_requests`` and
``model``. Input tokens per second are the completed requests per second × the measured mean
input length. The GPU count is not in the file (often a provider's API: no hardware at all).
"""

from __future__ import annotations

from ..measurement import FORMAT_LLMPERF, Measurement, _num

WHAT = "LLMPerf summary"


def looks_like(obj: dict) -> bool:
    """An LLMPerf summary: its ``results_ttft_s_*`` and ``num_concurrent_requests`` fields."""
    return "results_ttft_s_quantiles_p50" in obj and "num_concurrent_requests" in obj


def read(obj: dict, path: str) -> Measurement:
    """The measurement of one LLMPerf summary (see the module docstring)."""
    def n(key: str, required: bool = True) -> float | None:
        return _num(obj, key, path, WHAT, required=required)

    out_tps = n("results_mean_output_throughput_token_per_s")
    per_min = n("results_num_completed_requests_per_min")
    isl = n("results_number_input_tokens_mean", False) or n("mean_input_tokens")
    osl = n("results_number_output_tokens_mean", False) or n("mean_output_tokens", False)
    itl = n("results_inter_token_latency_s_quantiles_p50", False)
    p50, p99 = n("results_ttft_s_quantiles_p50"), n("results_ttft_s_quantiles_p99")
    assert out_tps is not None and per_min is not None and isl is not None
    assert p50 is not None and p99 is not None
    model = obj.get("model")
    return Measurement(
        source=path, format=FORMAT_LLMPERF, duration_s=None, input_tokens=None,
        output_tokens=None, tps=out_tps + per_min / 60 * isl, output_tps=out_tps,
        ttft_p50_ms=p50 * 1000, ttft_p99_ms=p99 * 1000,
        requests=n("results_num_completed_requests", False),
        concurrency=n("num_concurrent_requests", False),
        tps_per_user=1 / itl if itl else None,
        model_name=str(model)[:80] if isinstance(model, str) else None, prompt_tokens=isl,
        output_per_request=osl,
        notes=("input tokens/s = completed requests per second × mean input tokens",))
