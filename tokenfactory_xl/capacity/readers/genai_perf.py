"""Reader of NVIDIA GenAI-Perf's ``profile_export_genai_perf.json`` (the 2024 schema).

GenAI-Perf (triton-inference-server/perf_analyzer, ``genai-perf profile``) writes one object
per metric, ``{"unit": …, "avg": …, "p50": …, "p99": …}``: ``time_to_first_token`` (ms),
``inter_token_latency`` (ms), ``output_token_throughput`` (tokens/s), ``request_throughput``
(requests/s), ``input_sequence_length`` and ``output_sequence_length`` (tokens per request),
and the run's settings under ``input_config`` (``model`` a list, ``concurrency``). It has no
run duration or token totals: input tokens per second are the request throughput × the mean
input length, and the measured TPS adds them to the output tokens per second. The GPU count is
not in the file.
"""

from __future__ import annotations

from ..measurement import FORMAT_GENAI_PERF, FileProblem, Measurement, _num

WHAT = "GenAI-Perf export"


def looks_like(obj: dict) -> bool:
    """A GenAI-Perf export: metric objects with ``request_throughput`` and
    ``time_to_first_token``, and no AIPerf ``benchmark_duration``."""
    return (isinstance(obj.get("time_to_first_token"), dict)
            and isinstance(obj.get("request_throughput"), dict)
            and "benchmark_duration" not in obj and "records" not in obj)


def _stat(obj: dict, tag: str, stat: str, path: str, required: bool = True) -> float | None:
    metric = obj.get(tag)
    if not isinstance(metric, dict):
        if required:
            raise FileProblem(path, f"{WHAT} has no {tag!r} metric; expected "
                                    f'"{tag}": {{"unit": …, "{stat}": …}}')
        return None
    value = _num(metric, stat, path, f"{WHAT} {tag!r}", required=required)
    unit = str(metric.get("unit", ""))
    if value is not None and tag in ("time_to_first_token", "inter_token_latency") \
            and unit != "ms":
        raise FileProblem(path, f"{WHAT} {tag!r} has unit {unit!r}; expected ms")
    return value


def read(obj: dict, path: str) -> Measurement:
    """The measurement of one GenAI-Perf export (see the module docstring)."""
    rps = _stat(obj, "request_throughput", "avg", path)
    out_tps = _stat(obj, "output_token_throughput", "avg", path)
    isl = _stat(obj, "input_sequence_length", "avg", path)
    osl = _stat(obj, "output_sequence_length", "avg", path, required=False)
    itl = _stat(obj, "inter_token_latency", "p50", path, required=False)
    config = obj.get("input_config") if isinstance(obj.get("input_config"), dict) else {}
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    models = next((m for m in (config.get("model"), config.get("model_names"),
                               endpoint.get("model_names")) if m), None)
    name = models[0] if isinstance(models, list) and models else models
    # 2024 exports keep the concurrency at the top of input_config, later ones under the
    # perf_analyzer stimulus
    analyzer = config.get("perf_analyzer") if isinstance(config.get("perf_analyzer"), dict) \
        else {}
    stimulus = analyzer.get("stimulus") if isinstance(analyzer.get("stimulus"), dict) else {}
    concurrency = config.get("concurrency", stimulus.get("concurrency"))
    assert rps is not None and out_tps is not None and isl is not None
    notes = ("input tokens/s = request_throughput × mean input_sequence_length (the file "
             "gives no token totals)",)
    return Measurement(
        source=path, format=FORMAT_GENAI_PERF, duration_s=None, input_tokens=None,
        output_tokens=None, tps=out_tps + rps * isl, output_tps=out_tps,
        ttft_p50_ms=_stat(obj, "time_to_first_token", "p50", path),
        ttft_p99_ms=_stat(obj, "time_to_first_token", "p99", path),
        concurrency=float(concurrency) if isinstance(concurrency, (int, float))
        and not isinstance(concurrency, bool) and concurrency > 0 else None,
        tps_per_user=1000 / itl if itl else None,
        model_name=str(name)[:80] if isinstance(name, str) and name else None,
        prompt_tokens=isl,
        output_per_request=osl, notes=notes)
