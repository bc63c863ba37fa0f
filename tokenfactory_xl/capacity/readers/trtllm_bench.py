"""Reader of a ``trtllm-bench throughput`` console log (TensorRT-LLM).

The command prints blocks between lines of ``=``: ``ENGINE DETAILS`` (``Model:``,
``Quantization:``, ``KV Cache Dtype:``), ``WORLD + RUNTIME INFORMATION`` (``TP Size:``,
``PP Size:``: the GPUs are TP × PP) and ``PERFORMANCE OVERVIEW`` (``Number of requests:``,
``Average Input Length (tokens):``, ``Average Output Length (tokens):``, ``Token Throughput
(tokens/sec):`` — output tokens per second, = request throughput × average output length —,
``Request Throughput (req/sec):``, ``Total Latency (ms):``, the run's length). Newer versions
name the output figure ``Output Throughput (tokens/sec)`` or ``Total Output Throughput
(tokens/sec)`` and add ``Total Token Throughput (tokens/sec)``, ``Concurrency`` and TTFT
percentiles (``[TTFT] P50 : …`` in ms); all are read where present. An offline throughput run
has no TTFT and no concurrency.
"""

from __future__ import annotations

import math
import re

from ..measurement import FORMAT_TRTLLM_BENCH, FileProblem, Measurement

_FIELD = re.compile(r"^\s*([A-Za-z][^:\n]*?)\s*:\s*(\S[^\n]*?)\s*$", re.MULTILINE)
_TTFT = re.compile(r"^\s*\[TTFT\]\s*P(50|99)\s*:\s*([0-9.eE+-]+)", re.MULTILINE)


def looks_like(text: str) -> bool:
    """A trtllm-bench log: its ``PERFORMANCE OVERVIEW`` block."""
    return "= PERFORMANCE OVERVIEW" in text and "Request Throughput (req/sec)" in text


def _fields(text: str) -> dict[str, str]:
    start = text.find("= ENGINE DETAILS")
    found: dict[str, str] = {}
    for key, value in _FIELD.findall(text[start if start >= 0 else 0:]):
        found.setdefault(key.strip(), value.strip())
    return found


def read(text: str, path: str) -> Measurement:
    """The measurement of one trtllm-bench log (see the module docstring)."""
    f = _fields(text)

    def n(*keys: str, required: bool = True) -> float | None:
        for key in keys:
            if key in f:
                try:
                    value = float(f[key].replace(",", ""))
                except ValueError:
                    raise FileProblem(path, f"trtllm-bench log: {key!r} is {f[key]!r}, "
                                            "expected a number") from None
                if math.isfinite(value) and value >= 0:
                    return value
        if required:
            raise FileProblem(path, f"trtllm-bench log has no {keys[0]!r} line in its "
                                    "PERFORMANCE OVERVIEW")
        return None

    rps = n("Request Throughput (req/sec)")
    isl = n("Average Input Length (tokens)")
    osl = n("Average Output Length (tokens)")
    out_tps = n("Output Throughput (tokens/sec)", "Total Output Throughput (tokens/sec)",
                "Token Throughput (tokens/sec)")
    total = n("Total Token Throughput (tokens/sec)", required=False)
    requests = n("Number of requests", required=False)
    latency_ms = n("Total Latency (ms)", required=False)
    tp = n("TP Size", required=False)
    pp = n("PP Size", required=False) or 1.0
    concurrency = n("Concurrency", required=False)
    ttft = {p: float(v) for p, v in _TTFT.findall(text)}
    assert rps is not None and isl is not None and osl is not None and out_tps is not None
    notes = [] if ttft else ["an offline throughput run: no TTFT"]
    if total is None:
        total = out_tps + rps * isl
        notes.append("measured TPS = output tokens/s + request throughput × average input "
                     "length")
    return Measurement(
        source=path, format=FORMAT_TRTLLM_BENCH,
        duration_s=latency_ms / 1000 if latency_ms else None,
        input_tokens=requests * isl if requests else None,
        output_tokens=requests * osl if requests else None, tps=total, output_tps=out_tps,
        ttft_p50_ms=ttft.get("50"), ttft_p99_ms=ttft.get("99"), requests=requests,
        concurrency=concurrency if concurrency and concurrency > 0 else None,
        gpus=tp * pp if tp else None, model_name=f.get("Model", "")[:80] or None,
        precision=f.get("Quantization") or None, prompt_tokens=isl, output_per_request=osl,
        notes=tuple(notes))
