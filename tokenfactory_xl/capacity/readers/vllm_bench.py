"""Reader of vLLM's ``vllm bench serve --save-result`` JSON (see :mod:`..actuals` for its
fields)."""

from __future__ import annotations

from ..measurement import FORMATS, Measurement, _num
from .json_fields import _concurrency, _mean, _per_user, _text_of, _tps, _ttft


def read_vllm_bench(obj: dict, path: str) -> Measurement:
    """A ``vllm bench serve --save-result`` result (see the module docstring)."""
    what = "vllm bench serve result"
    duration = _num(obj, "duration", path, what)
    inp = _num(obj, "total_input_tokens", path, what)
    out = _num(obj, "total_output_tokens", path, what)
    tps = _num(obj, "total_token_throughput", path, what, required=False)
    if tps is None:
        tps = _tps(inp, out, duration, path, what)
    p50, n50 = _ttft(obj, "median", path, what)
    p99, n99 = _ttft(obj, "p99", path, what)
    listed = obj.get("percentiles_ttft_ms")
    if isinstance(listed, list):
        for pair in listed:
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
                    isinstance(x, (int, float)) for x in pair):
                if float(pair[0]) == 99 and p99 is None:
                    p99 = float(pair[1])
                if float(pair[0]) == 50 and p50 is None:
                    p50 = float(pair[1])
    notes = n50 + n99 + (() if p99 is not None else (
        "no p99_ttft_ms: run vllm bench serve with --metric-percentiles 50,99",))
    return Measurement(
        source=path, format=FORMATS[0], duration_s=duration, input_tokens=inp,
        output_tokens=out, tps=tps,
        output_tps=_num(obj, "output_throughput", path, what, required=False),
        ttft_p50_ms=p50, ttft_p99_ms=p99,
        requests=_num(obj, "completed", path, what, required=False),
        request_goodput=_num(obj, "request_goodput", path, what, required=False),
        concurrency=_concurrency(obj, path, what), tps_per_user=_per_user(obj, path, what),
        model_name=_text_of(obj, "model_id"), prompt_tokens=_mean(inp, obj.get("completed")),
        notes=notes)
