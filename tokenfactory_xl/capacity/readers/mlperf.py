"""Reader of MLPerf Inference loadgen's ``mlperf_log_summary.txt``.

Loadgen prints ``key : value`` lines: ``SUT name``, ``Scenario`` (Offline, Server, …),
``Result is`` (VALID or INVALID), ``Samples per second`` and, for LLM benchmarks, ``Tokens per
second`` — generated (output) tokens per second: MLPerf's LLM throughput metric. Server runs add
``Completed tokens per second`` and TTFT percentiles in ns (``TTFT 50.00 percentile`` …, in
recent versions ``50.00 percentile first token latency (ns)``); they are read where present.
The summary holds no input-token count and no GPU count (the submission's system description
does): the measured TPS here is output tokens only, and a note says so.
"""

from __future__ import annotations

import math
import re

from ..measurement import FORMAT_MLPERF, FileProblem, Measurement

_LINE = re.compile(r"^\s*([^:\n]+?)\s*:\s*(\S[^\n]*?)\s*$", re.MULTILINE)


def looks_like(text: str) -> bool:
    """A loadgen summary: its ``MLPerf Results Summary`` banner."""
    return "MLPerf Results Summary" in text


def _ttft(fields: dict[str, str], percentile: str) -> float | None:
    for key in (f"TTFT {percentile} percentile latency (ns)",
                f"{percentile} percentile first token latency (ns)",
                f"{percentile} percentile first token latency"):
        if key in fields:
            try:
                return float(fields[key]) / 1e6
            except ValueError:
                return None
    return None


def read(text: str, path: str) -> Measurement:
    """The measurement of one loadgen summary (see the module docstring)."""
    fields: dict[str, str] = {}
    for key, value in _LINE.findall(text):
        fields.setdefault(key.strip(), value.strip())
    raw = fields.get("Completed tokens per second") or fields.get("Tokens per second")
    if raw is None:
        raise FileProblem(path, "MLPerf summary has no 'Tokens per second' line: only LLM "
                                "benchmarks report tokens (this one reports samples)")
    try:
        tokens = float(raw)
        if not (math.isfinite(tokens) and tokens > 0):
            raise ValueError
    except ValueError:
        raise FileProblem(path, f"MLPerf summary: tokens per second is {raw!r}, expected a "
                                "number above 0") from None
    notes = ["MLPerf counts generated tokens: measured TPS is output tokens only (the summary "
             "has no input-token count)"]
    if fields.get("Result is", "VALID").upper() != "VALID":
        notes.append(f"loadgen says the result is {fields['Result is']}")
    scenario = fields.get("Scenario")
    return Measurement(
        source=path, format=FORMAT_MLPERF, duration_s=None, input_tokens=None,
        output_tokens=None, tps=tokens, output_tps=tokens,
        ttft_p50_ms=_ttft(fields, "50.00"), ttft_p99_ms=_ttft(fields, "99.00"),
        model_name=(fields.get("SUT name") or "")[:80] or None,
        notes=tuple(notes) + ((f"scenario {scenario}",) if scenario else ()))
