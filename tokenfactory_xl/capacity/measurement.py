"""What one benchmark run measured: the record every reader fills in, the formats read, the
checks of a number they share, and the reading of a result file's text.

A reader turns one tool's result file into a :class:`Measurement` (tokens, rates, TTFT, what
the file says of the setup) or raises :class:`FileProblem` naming the file and what was
expected. The readers of the serving tools (vLLM, SGLang, AIPerf, nightly suites) live in
:mod:`tokenfactory_xl.capacity.actuals`, the Prometheus scrapes in
:mod:`tokenfactory_xl.capacity.prometheus`, the others one module each in
:mod:`tokenfactory_xl.capacity.readers`; all of them import this module.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..core.errors import TokenFactoryError
from ..files.disk import NotARegularFile, decode_text, read_regular

FORMAT_GENAI_PERF = "NVIDIA GenAI-Perf"
FORMAT_LLMPERF = "LLMPerf summary"
FORMAT_TRTLLM_BENCH = "trtllm-bench log"
FORMAT_MLPERF = "MLPerf loadgen summary"
FORMAT_PERF_CSV = "GenAI-Perf/AIPerf CSV"
FORMATS = ("vLLM bench serve", "SGLang bench_serving", "NVIDIA AIPerf", "vLLM Prometheus",
           "benchmark suite result", FORMAT_GENAI_PERF, FORMAT_LLMPERF, FORMAT_TRTLLM_BENCH,
           FORMAT_MLPERF, FORMAT_PERF_CSV)
_EXPECTED = ("one of the formats read: vllm bench serve --save-result JSON; SGLang "
             "bench_serving JSON(L); AIPerf profile_export_aiperf.json or its CSV; GenAI-Perf "
             "profile_export_genai_perf.json or its CSV; an LLMPerf summary JSON; a "
             "trtllm-bench throughput log; an MLPerf loadgen mlperf_log_summary.txt; a nightly "
             "suite's per-configuration result (InferenceX, tput_per_gpu); or a Prometheus "
             "text scrape of a vLLM server's /metrics")


class FileProblem(TokenFactoryError, ValueError):
    """A file that cannot be read as what it claims or seems to be; names file and expectation."""

    def __init__(self, path: str | os.PathLike, message: str):
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class Measurement:
    """What one benchmark run (or one pair of scrapes) measured.

    Attributes
    ----------
    source : the file(s) read
    format : one of :data:`FORMATS`
    duration_s : length of the run or of the interval between scrapes [s]
    input_tokens, output_tokens : tokens read and written in it [tokens]
    tps : input + output tokens per second [tokens/s]
    output_tps : output tokens per second [tokens/s]
    ttft_p50_ms, ttft_p99_ms : time to first token, median and 99th percentile [ms]
    cache_hit_rate : share of input tokens served from the prefix cache [fraction] or None
    requests : requests completed, when known
    request_goodput : requests per second meeting the benchmark's SLOs, when measured
    gpus : GPUs the measured instance ran on, when the file says (a suite result's ``tp``)
    concurrency : requests in flight the run was driven at, when the file says
    tps_per_user : output tokens per second one user sees (interactivity, 1 ÷ time per
        output token) [tokens/s], when the file gives it or its time per output token
    hardware, precision, model_name : what the file says was measured, when it says
    run : which run of a file of several (``"2 of 5"``), else None
    prompt_tokens : mean input tokens per request [tokens], when the file gives it
    output_per_request : mean output tokens per request [tokens], when the file gives it
    prefill_tps : measured prefill (prompt) tokens per second while prefilling [tokens/s],
        when the file gives it (AIPerf's active prefill throughput)
    speculative : the speculative-decoding technique the file names (``mtp``), or None
    ttft_tail_ms, ttft_tail_stat : a file without p50/p99 TTFT: its highest TTFT percentile
        [ms] and which one (``p95``)
    per_gpu_only : the file gives throughput per GPU and no GPU count: ``tps`` and
        ``output_tps`` are one GPU's, and the instance's are unknown
    notes : remarks the reader made (which unit was assumed, …)
    """

    source: str
    format: str
    duration_s: float | None
    input_tokens: float | None
    output_tokens: float | None
    tps: float
    output_tps: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    cache_hit_rate: float | None = None
    requests: float | None = None
    request_goodput: float | None = None
    gpus: float | None = None
    concurrency: float | None = None
    tps_per_user: float | None = None
    hardware: str | None = None
    precision: str | None = None
    model_name: str | None = None
    run: str | None = None
    prompt_tokens: float | None = None
    output_per_request: float | None = None
    prefill_tps: float | None = None
    speculative: str | None = None
    ttft_tail_ms: float | None = None
    ttft_tail_stat: str | None = None
    per_gpu_only: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def output_share(self) -> float | None:
        """Output tokens ÷ all tokens [fraction]."""
        if self.input_tokens is None or self.output_tokens is None:
            if self.output_tps is not None and self.tps > 0 and self.output_tps < self.tps:
                return self.output_tps / self.tps
            if self.prompt_tokens is not None and self.output_per_request:
                return self.output_per_request / (self.prompt_tokens + self.output_per_request)
            return None
        total = self.input_tokens + self.output_tokens
        return self.output_tokens / total if total > 0 else None



def _num(obj: dict, key: str, path, what: str, required: bool = True) -> float | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise FileProblem(path, f"{what} has no {key!r}; expected a number there")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FileProblem(path, f"{what}: {key!r} is {value!r}, expected a number")
    if not math.isfinite(value) or value < 0:
        raise FileProblem(path, f"{what}: {key!r} is {value!r}, expected a number of at least 0")
    return float(value)


# -- reading a result file ----------------------------------------------------------------------
#: Largest result file read [bytes]: benchmark summaries are kilobytes.
MAX_RESULT_BYTES = 64 * 1024 * 1024


def read_result_stdin() -> str:
    """A result file given as ``-``: the standard input, read whole (at most the size of a
    result file)."""
    import sys

    if sys.stdin is None or sys.stdin.isatty():
        raise FileProblem("-", "reads standard input, which is a terminal; pipe or redirect a "
                               "result file into it (… - < result.json), or name the file")
    text = sys.stdin.read(MAX_RESULT_BYTES + 1)
    if len(text) > MAX_RESULT_BYTES:
        raise FileProblem("standard input", f"holds more than {MAX_RESULT_BYTES / 1e6:,.0f} MB; "
                                            "a benchmark result is far smaller: give the "
                                            "summary file, not per-request records")
    return text.removeprefix("\ufeff")


def read_result_text(path: str) -> str:
    """A result file's text: a regular file (never a FIFO or a device) of at most
    :data:`MAX_RESULT_BYTES`, in UTF-8, UTF-16 or UTF-32."""
    try:
        data = read_regular(path, MAX_RESULT_BYTES)
    except NotARegularFile as exc:
        if exc.reason.startswith("is ") and "larger than" in exc.reason:
            raise FileProblem(path, f"{exc.reason}; a benchmark result is far smaller: give "
                                    "the summary file, not per-request records") from None
        if exc.reason == "does not exist":
            raise FileProblem(path, "no such file") from None
        raise FileProblem(path, exc.reason + (f"; {exc.fix}" if exc.fix else "")) from None
    try:
        return decode_text(data)
    except UnicodeDecodeError:
        raise FileProblem(path, f"is not text (UTF-8, UTF-16 or UTF-32); expected {_EXPECTED}"
                          ) from None
