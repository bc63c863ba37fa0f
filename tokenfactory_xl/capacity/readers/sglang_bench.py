"""Reader of SGLang's ``python -m sglang.bench_serving`` output (JSON lines, one run a line;
see :mod:`..actuals` for its fields)."""

from __future__ import annotations

from ..measurement import FORMATS, Measurement, _num
from .json_fields import _concurrency, _mean, _per_user, _text_of, _tps, _ttft


def read_sglang_bench(obj: dict, path: str) -> Measurement:
    """A ``sglang.bench_serving`` result line (see the module docstring)."""
    what = "SGLang bench_serving result"
    duration = _num(obj, "duration", path, what)
    inp = _num(obj, "total_input_tokens", path, what)
    out = _num(obj, "total_output_tokens", path, what)
    p50, n50 = _ttft(obj, "median", path, what)
    p99, n99 = _ttft(obj, "p99", path, what)
    return Measurement(
        source=path, format=FORMATS[1], duration_s=duration, input_tokens=inp,
        output_tokens=out, tps=_tps(inp, out, duration, path, what),
        output_tps=_num(obj, "output_throughput", path, what, required=False),
        ttft_p50_ms=p50, ttft_p99_ms=p99,
        requests=_num(obj, "completed", path, what, required=False),
        concurrency=_concurrency(obj, path, what), tps_per_user=_per_user(obj, path, what),
        model_name=_text_of(obj, "model_id", "model"),
        prompt_tokens=_mean(inp, obj.get("completed")), notes=n50 + n99)
