"""Actual throughput from a serving stack's own output: TEF's numerator, measured.

A token factory already measures itself: its benchmark tools write result files and its
inference servers expose Prometheus counters. This module reads those, in the field names the
tools themselves write, and turns them into the site inputs the TFOM takes — measured TPS,
TTFT p50 and p99, cache-hit share — plus the SLO attainment (methodology section 1) and the TEF
against a theoretical figure (given, or the roofline of :mod:`tokenfactory_xl.roofline`).

Formats, and the source file each reader follows:

- **vLLM** ``vllm bench serve --save-result`` JSON: ``vllm/benchmarks/serve.py`` of
  vllm-project/vllm (the ``result`` dict of ``benchmark()`` merged into ``result_json`` in
  ``main``): ``duration``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``request_goodput``, ``output_throughput``,
  ``total_token_throughput``, ``mean_ttft_ms``, ``median_ttft_ms``, ``p99_ttft_ms`` (one
  ``p{N}_ttft_ms`` per ``--metric-percentiles`` entry; older versions also wrote
  ``percentiles_ttft_ms`` as ``[[p, ms], …]``, read too).
- **SGLang** ``python -m sglang.bench_serving`` output file (JSON lines, one object per run,
  appended): ``python/sglang/bench_serving.py`` of sgl-project/sglang (the ``result`` dict of
  ``benchmark()``): ``duration``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``total_output_tokens_retokenized``, ``input_throughput``,
  ``output_throughput``, ``median_ttft_ms``, ``p99_ttft_ms``, ``mean_e2e_latency_ms``,
  ``concurrency``. Each line is one run.
- **NVIDIA AIPerf** ``profile_export_aiperf.json``: ``aiperf/exporters/json_exporter.py`` and
  ``aiperf/common/models/export_models.py`` of ai-dynamo/aiperf: one object per metric tag
  (``time_to_first_token``, ``output_token_throughput``, ``request_throughput``,
  ``request_count``, ``benchmark_duration``, ``total_isl``, ``total_osl``, ``goodput``), each
  ``{"unit": …, "avg": …, "p50": …, "p99": …}``; the current export keys them under
  ``"records"`` by short tags (``ttft``, ``total_isl``, ``total_osl``, ``benchmark_duration``),
  other versions by the long tags or as a list of records each with its ``tag``; all are read.
  Units are honoured (ns, us, ms, sec).
- **Nightly suites' per-configuration results** (InferenceMAX's ``agg_*.json`` rows written by
  its ``utils/process_result.py``, one object or a list; newer rows keep the figures under
  ``"metrics"``): ``tput_per_gpu``, ``output_tput_per_gpu``, ``tp``, ``conc``, ``hw``,
  ``precision``, ``model``, latencies in **seconds** with ``_ms`` dropped (``median_ttft``,
  ``p99_ttft``) and interactivity ``median_intvty`` (tokens/s per user).
- **vLLM Prometheus scrapes** (two ``/metrics`` texts, before and after): metric names from
  ``vllm/v1/metrics/loggers.py`` of vllm-project/vllm. Counters are declared as
  ``vllm:prompt_tokens``, ``vllm:generation_tokens``, ``vllm:prefix_cache_queries`` and
  ``vllm:prefix_cache_hits`` (``vllm:gpu_prefix_cache_*`` before 0.9) and exposed with the
  Prometheus ``_total`` suffix; TTFT is the histogram ``vllm:time_to_first_token_seconds``
  (``_bucket{le=…}``). Series with different labels (engines, models) are summed. Rates are
  the counter increases divided by the time between the scrapes; TTFT quantiles come from the
  bucket increases, interpolated linearly inside the bucket as Prometheus'
  ``histogram_quantile`` does. The time of a scrape is taken from the samples' own timestamps
  (the optional third field of the exposition format, ms since the epoch), else from a comment
  line ``# scraped_at <unix seconds or ISO 8601 time>`` (e.g.
  ``{ echo "# scraped_at $(date +%s)"; curl -s $SERVER/metrics; } > before.prom``);
  ``--interval SECONDS`` overrides both (then the first file given is the earlier).

- **Other tools**, one reader module each (as pvlib's ``iotools``): GenAI-Perf's JSON export
  (:mod:`tokenfactory_xl.read_genai_perf`), the GenAI-Perf and AIPerf CSV exports
  (:mod:`tokenfactory_xl.read_perf_csv`), LLMPerf summaries (:mod:`tokenfactory_xl.read_llmperf`),
  ``trtllm-bench throughput`` logs (:mod:`tokenfactory_xl.read_trtllm_bench`) and MLPerf
  loadgen summaries (:mod:`tokenfactory_xl.read_mlperf`); each module names the fields it reads.

The format is recognised from the fields, never from the file's name. A file of several runs
(JSON lines, a JSON list) gives one measurement per run. A TTFT field whose name carries no unit
is read as seconds (milliseconds when above a minute) and a note says which was assumed.

Measured TPS counts input and output tokens alike, as the TFOM's tokens sold do. A figure per
GPU needs the GPU count, from the file (a suite row's ``tp``, trtllm-bench's TP × PP) or
``--gpus``; without it there is none, and a note names the option. A benchmark
measures one serving instance; a site's ``measured_tps`` is the whole cluster's, so
``--instances N`` multiplies by the number of such instances when writing a sites file.
"""

from __future__ import annotations

import csv
import datetime as _dt
import difflib
import io
import json
import math
import os
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..core import economics as model
from ..core import names, number_text, roofline, specs
from ..core import serving as capacity
from ..core.catalogue import BY_NAME, BadValue
from ..core.errors import InputError, Problem
from ..files.disk import NotARegularFile, claim, decode_text, read_regular, write_atomically
from ..sites.load import (
    MAX_XLSX_UNPACKED,
    SitesFile,
    _header_line,
    normalise_column,
    sniff_delimiter,
)
from .measurement import (
    _EXPECTED,
    FORMAT_GENAI_PERF,
    FORMAT_LLMPERF,
    FORMAT_MLPERF,
    FORMAT_PERF_CSV,
    FORMAT_TRTLLM_BENCH,
    FORMATS,
    FileProblem,
    Measurement,
    _num,
)
from .readers import genai_perf as read_genai_perf
from .readers import llmperf as read_llmperf
from .readers import mlperf as read_mlperf
from .readers import perf_csv as read_perf_csv
from .readers import trtllm_bench as read_trtllm_bench

#: The site inputs a measurement fills in, in the order they are written.
MEASURED_INPUTS: tuple[str, ...] = ("measured_tps", "ttft_p50_ms", "ttft_p99_ms",
                                    "cache_hit_rate")


# -- reading files -------------------------------------------------------------------------------
def _tps(input_tokens: float | None, output_tokens: float | None, duration: float | None,
         path, what: str) -> float:
    if input_tokens is None or output_tokens is None or not duration:
        raise FileProblem(path, f"{what}: needs input and output token counts and a duration "
                                "above 0 to give a throughput")
    return (input_tokens + output_tokens) / duration


#: A TTFT above this many "seconds" is taken to be milliseconds after all [s].
_LONGEST_TTFT_S = 60.0


def _ttft(obj: dict, stat: str, path, what: str) -> tuple[float | None, tuple[str, ...]]:
    """A TTFT percentile in ms, and a note when its unit had to be assumed.

    ``{stat}_ttft_ms`` is milliseconds. A key without the unit (``median_ttft``, ``p99_ttft``,
    ``ttft_p50``: how the nightly suites and post-processed vLLM files store them) is read as
    seconds, the unit those files convert to, unless it is above a minute, which no serving TTFT
    is in seconds: then it is read as milliseconds. Either way a note says which unit was
    assumed. ``stat`` is ``median`` or ``p99``.
    """
    alias = "p50" if stat == "median" else stat
    for key in (f"{stat}_ttft_ms", f"{alias}_ttft_ms", f"ttft_{alias}_ms"):
        value = _num(obj, key, path, what, required=False)
        if value is not None:
            return value, ()
    for key in (f"{stat}_ttft", f"{alias}_ttft", f"ttft_{alias}"):
        value = _num(obj, key, path, what, required=False)
        if value is None:
            continue
        if value <= _LONGEST_TTFT_S:
            return value * 1000, (f"{key} has no unit in its name: read as seconds "
                                  f"({value:g} s = {value * 1000:g} ms)",)
        return value, (f"{key} has no unit in its name and {value:g} is too long for seconds: "
                       "read as milliseconds",)
    return None, ()


def _per_user(obj: dict, path, what: str) -> float | None:
    """Output tokens per second one user sees: the file's interactivity, else 1 ÷ its median
    time per output token (TPOT; inter-token latency where there is no TPOT)."""
    for key in ("median_intvty", "intvty_p50", "p50_intvty", "mean_intvty"):
        value = _num(obj, key, path, what, required=False)
        if value:
            return value
    # a key without "_ms" is in seconds, as the suites write it (agentic rows: mean ITL only)
    for key, scale in (("median_tpot_ms", 1000.0), ("median_tpot", 1.0),
                       ("median_itl_ms", 1000.0), ("median_itl", 1.0), ("mean_itl", 1.0)):
        value = _num(obj, key, path, what, required=False)
        if value:
            return scale / value
    return None


def _concurrency(obj: dict, path, what: str) -> float | None:
    """The concurrency a run was driven at; for a run driven by request rate instead, the
    average requests in flight by Little's law: completed ÷ duration × mean latency."""
    for key in ("max_concurrency", "conc", "concurrency", "users"):
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                math.isfinite(value) and value > 0:
            return float(value)
    latency = next((obj[k] for k in ("mean_e2e_latency_ms", "mean_e2el_ms") if k in obj), None)
    done, seconds = obj.get("completed"), obj.get("duration")
    numbers = (latency, done, seconds)
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
           and x > 0 for x in numbers):
        return float(done) / float(seconds) * float(latency) / 1000  # type: ignore[arg-type]
    return None


def _mean(total: float | None, count: object) -> float | None:
    """Mean per request, when both are numbers and there were requests."""
    if total is None or isinstance(count, bool) or not isinstance(count, (int, float)) or \
            not (math.isfinite(count) and count > 0):
        return None
    return total / count


def _text_of(obj: dict, *keys: str) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            # a Hugging Face cache path names its model: …/models--openai--gpt-oss-120b/…
            cached = re.search(r"models--([^/\\]+?)--([^/\\]+)", value)
            return (f"{cached[1]}/{cached[2]}" if cached else value.strip())[:80]
    return None


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


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0, "s": 1.0}


#: AIPerf metric tags under their other names (the current export's short tags first).
_AIPERF_ALIASES = {"time_to_first_token": ("ttft",), "total_osl": ("total_output_tokens",),
                   "output_token_throughput": ("output_tps",)}


def _aiperf_records(obj: dict) -> dict:
    """The metrics of an AIPerf export by tag: top level (one release), ``"records"`` as an
    object (the current export) or as a list of objects each with its ``tag``."""
    records = obj.get("records")
    if isinstance(records, list):
        return {r["tag"]: r for r in records if isinstance(r, dict) and isinstance(
            r.get("tag"), str)}
    return records if isinstance(records, dict) else {}


def _aiperf_metric(obj: dict, tag: str, stat: str, path, required: bool = True,
                   unit_to: str | None = None) -> float | None:
    records = _aiperf_records(obj)
    metric = None
    for name in (tag, *_AIPERF_ALIASES.get(tag, ())):
        metric = obj.get(name) if isinstance(obj.get(name), dict) else records.get(name)
        if metric is not None:
            tag = name
            break
    what = f"AIPerf export {tag!r}"
    if metric is None:
        if required:
            raise FileProblem(path, f"AIPerf export has no {tag!r} metric; expected "
                                    f'"{tag}": {{"unit": …, "{stat}": …}}')
        return None
    if not isinstance(metric, dict):
        raise FileProblem(path, f"{what} is {metric!r}, expected an object with unit and {stat}")
    value = _num(metric, stat, path, what, required=required)
    if value is None or unit_to is None:
        return value
    unit = str(metric.get("unit", unit_to))
    if unit not in _TIME_UNITS:
        raise FileProblem(path, f"{what} has unit {unit!r}; expected one of "
                                f"{', '.join(_TIME_UNITS)}")
    return value * _TIME_UNITS[unit] / _TIME_UNITS[unit_to]


def read_aiperf(obj: dict, path: str) -> Measurement:
    """An AIPerf ``profile_export_aiperf.json`` (see the module docstring)."""
    duration = _aiperf_metric(obj, "benchmark_duration", "avg", path, unit_to="sec")
    requests = _aiperf_metric(obj, "request_count", "avg", path, required=False)
    notes: list[str] = []
    inp = _aiperf_metric(obj, "total_isl", "avg", path, required=False)
    if inp is None:  # totals absent: mean sequence length × requests
        mean_isl = _aiperf_metric(obj, "input_sequence_length", "avg", path, required=False)
        if mean_isl is not None and requests:
            inp = mean_isl * requests
            notes.append("input tokens = mean input_sequence_length × request_count")
    out = _aiperf_metric(obj, "total_osl", "avg", path, required=False)
    if out is None:
        mean_osl = _aiperf_metric(obj, "output_sequence_length", "avg", path, required=False)
        if mean_osl is not None and requests:
            out = mean_osl * requests
            notes.append("output tokens = mean output_sequence_length × request_count")
    if inp is None or out is None:
        missing = "total_isl" if inp is None else "total_osl"
        raise FileProblem(path, f"AIPerf export has no {missing!r} metric (nor the mean sequence "
                                f"length and request_count); expected \"{missing}\": "
                                "{\"unit\": …, \"avg\": …}")
    config = obj.get("input_config") if isinstance(obj.get("input_config"), dict) else {}
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else {}
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    names = endpoint.get("model_names")
    name = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else None
    concurrency = loadgen.get("concurrency")
    if isinstance(concurrency, bool) or not isinstance(concurrency, (int, float)) or \
            not concurrency > 0:
        concurrency = None
    return Measurement(
        source=path, format=FORMATS[2], duration_s=duration, input_tokens=inp,
        output_tokens=out, tps=_tps(inp, out, duration, path, "AIPerf export"),
        output_tps=_aiperf_metric(obj, "output_token_throughput", "avg", path, required=False),
        ttft_p50_ms=_aiperf_metric(obj, "time_to_first_token", "p50", path, unit_to="ms"),
        ttft_p99_ms=_aiperf_metric(obj, "time_to_first_token", "p99", path, unit_to="ms"),
        requests=requests, prompt_tokens=_mean(inp, requests),
        request_goodput=_aiperf_metric(obj, "goodput", "avg", path, required=False),
        tps_per_user=_aiperf_metric(obj, "output_token_throughput_per_user", "avg", path,
                                    required=False),
        concurrency=float(concurrency) if concurrency is not None else None,
        model_name=name[:80] if name else None,
        prefill_tps=_aiperf_metric(obj, "active_prefill_throughput", "avg", path,
                                   required=False), notes=tuple(notes))


def _benchmark_kind(obj: dict) -> str | None:
    """Which tool wrote a result object, from its field names (never the file's name)."""
    if read_genai_perf.looks_like(obj):
        return FORMAT_GENAI_PERF
    if read_llmperf.looks_like(obj):
        return FORMAT_LLMPERF
    if "tput_per_gpu" in obj or (isinstance(obj.get("metrics"), dict)
                                 and "tput_per_gpu" in obj["metrics"]):
        return FORMATS[4]
    records = _aiperf_records(obj)
    if {"time_to_first_token", "ttft"} & (set(obj) | set(records)) and (
            "benchmark_duration" in obj or "benchmark_duration" in records):
        return FORMATS[2]
    # SGLang's own fields first (its client can benchmark a vLLM server: "backend" says
    # nothing), then vLLM's; older vLLM files share input_throughput with SGLang
    if {"total_output_tokens_retokenized", "mean_e2e_latency_ms"} & set(obj):
        return FORMATS[1]
    if {"total_token_throughput", "endpoint_type", "request_goodput", "tokenizer_id",
            "burstiness"} & set(obj):
        return FORMATS[0]
    if "input_throughput" in obj:
        return FORMATS[1]
    return None


_READERS = {FORMATS[0]: read_vllm_bench, FORMATS[1]: read_sglang_bench,
            FORMATS[2]: read_aiperf, FORMATS[4]: read_suite_result}


def read_benchmark_runs(path: str | os.PathLike, text: str | None = None) -> list[Measurement]:
    """Every run in a benchmark result file, recognised by its field names: one per line of a
    JSON-lines file (SGLang appends a line per run), one per object of a JSON array (a suite's
    collected configurations), else the one object."""
    path = str(path)
    if text is None:
        text = _read_text(path)
    objects = _json_objects(text, path)
    if objects is None:
        raise FileProblem(path, f"is not JSON; expected {_EXPECTED}")
    if len(objects) == 1 and isinstance(objects[0], list):
        objects = objects[0]
    if not objects:
        raise FileProblem(path, f"holds no result (an empty list); expected {_EXPECTED}")
    runs = []
    for number, obj in enumerate(objects, start=1):
        where = path if len(objects) == 1 else f"{path} (run {number} of {len(objects)})"
        if not isinstance(obj, dict):
            raise FileProblem(where, f"holds a JSON {type(obj).__name__}, expected an object: "
                                     f"{_EXPECTED}")
        kind = _benchmark_kind(obj)
        if kind in (FORMAT_GENAI_PERF, FORMAT_LLMPERF):
            reader = read_genai_perf if kind == FORMAT_GENAI_PERF else read_llmperf
            runs.append(reader.read(obj, where))
            continue
        if kind is None:
            raise FileProblem(where, "is JSON but none of the known result formats (no "
                                     "total_token_throughput, time_to_first_token, "
                                     "mean_e2e_latency_ms, results_ttft_s_quantiles_p50 or "
                                     f"tput_per_gpu); expected {_EXPECTED}")
        found = _READERS[kind](obj, where)
        if len(objects) > 1:
            found = replace(found, run=f"{number} of {len(objects)}")
        runs.append(found)
    return runs


def read_benchmark(path: str | os.PathLike, text: str | None = None) -> Measurement:
    """The latest run of a benchmark result file (the last line or object); see
    :func:`read_benchmark_runs` for every run."""
    runs = read_benchmark_runs(path, text)
    if len(runs) == 1:
        return runs[0]
    return replace(runs[-1], notes=runs[-1].notes + (
        f"run {len(runs)} of {len(runs)} read (the latest)",))


#: Largest result file read [bytes]: benchmark summaries are kilobytes.
MAX_RESULT_BYTES = 64 * 1024 * 1024


def _read_stdin() -> str:
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


def _read_text(path: str) -> str:
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


class _HugeNumber(ValueError):
    """A JSON number too long to be a measurement."""


#: Longest number of a result file read [digits]: a float has 17 significant digits and
#: exponents to 308; a longer number is no measurement (and Python refuses ints past 4,300).
MAX_NUMBER_DIGITS = 400


def _json_number(text: str) -> float | int:
    if len(text) > MAX_NUMBER_DIGITS:
        raise _HugeNumber(text)
    if any(c in text for c in ".eE"):
        return float(text)  # 1e999 is infinity, which the readers refuse by name
    value = int(text)
    try:
        float(value)
    except OverflowError:   # an int past a float's range
        raise _HugeNumber(text) from None
    return value


def _loads(text: str) -> object:
    """``json.loads`` with numbers checked: no number of hundreds of digits, no whole number
    past a float's range."""
    return json.loads(text, parse_int=_json_number, parse_float=_json_number)


def _json_objects(text: str, path: str) -> list | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return [_loads(stripped)]
    except _HugeNumber as exc:
        raise FileProblem(path, _huge(str(exc))) from None
    except RecursionError:
        raise FileProblem(path, "nests JSON too deeply to be a benchmark result") from None
    except json.JSONDecodeError as whole:
        lines = [ln for ln in stripped.splitlines() if ln.strip()]
        objects = []
        for number, line in enumerate(lines, start=1):
            try:
                objects.append(_loads(line))
            except _HugeNumber as exc:
                raise FileProblem(path, _huge(str(exc))) from None
            except RecursionError:
                raise FileProblem(path, "nests JSON too deeply to be a benchmark result"
                                  ) from None
            except json.JSONDecodeError:
                where = (f"line {whole.lineno}, column {whole.colno}" if len(lines) == 1
                         else f"line {number}")
                raise FileProblem(path, f"is not valid JSON ({where}); expected "
                                        f"{_EXPECTED}") from None
        return objects


def _is_text_result(text: str) -> bool:
    """A log or CSV a text reader recognises (a trtllm-bench log starts with ``[``)."""
    return any(r.looks_like(text) for r in (read_perf_csv, read_trtllm_bench, read_mlperf))


def _read_text_result(path: str, text: str) -> Measurement:
    """A result that is not JSON: a CSV export, a trtllm-bench log or an MLPerf summary."""
    for reader in (read_perf_csv, read_trtllm_bench, read_mlperf):
        if reader.looks_like(text):
            return reader.read(text, path)
    raise FileProblem(path, f"is not a format this command reads; expected {_EXPECTED}")


def _huge(number: str) -> str:
    shown = number if len(number) <= 24 else f"{number[:12]}…{number[-6:]}"
    return (f"holds the number {shown} ({len(number):,} characters), beyond any measurement "
            "and a float's range; check the file (it may be damaged or not a result)")


# -- Prometheus scrapes --------------------------------------------------------------------------
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")


_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


_SCRAPED_AT = re.compile(r"^#\s*scraped_at[:=]?\s+(\S+)\s*$", re.IGNORECASE)


PROMPT_TOKENS = "vllm:prompt_tokens"


GENERATION_TOKENS = "vllm:generation_tokens"


CACHE_QUERIES = ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries")


CACHE_HITS = ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits")


TTFT_HISTOGRAM = "vllm:time_to_first_token_seconds"


@dataclass
class Scrape:
    """One Prometheus text scrape: summed samples by metric name (and ``le`` for buckets)."""

    path: str
    time: float | None
    counters: dict[str, float]
    buckets: dict[float, float]

    def counter(self, name: str) -> float | None:
        """A counter's value, by its declared name (``_total`` added as exposed) or as given."""
        for candidate in (name + "_total", name):
            if candidate in self.counters:
                return self.counters[candidate]
        return None


def looks_like_prometheus(text: str) -> bool:
    """True for a Prometheus text exposition that mentions vLLM metrics."""
    return bool(re.search(r"^(# (TYPE|HELP) )?vllm:", text, re.MULTILINE))


def read_scrape(path: str | os.PathLike, text: str | None = None) -> Scrape:
    """Parse a vLLM server's ``/metrics`` text (see the module docstring)."""
    path = str(path)
    if text is None:
        text = _read_text(path)
    if not looks_like_prometheus(text):
        raise FileProblem(path, f"is not a vLLM Prometheus scrape (no vllm: metrics); "
                                f"expected {_EXPECTED}")
    counters: dict[str, float] = {}
    buckets: dict[float, float] = {}
    stamps: list[float] = []
    scraped_at: float | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            found = _SCRAPED_AT.match(line)
            if found:
                scraped_at = _parse_time(found.group(1), path, number)
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise FileProblem(path, f"line {number} is not a Prometheus sample "
                                    f"('name{{labels}} value [timestamp]'): {line[:60]!r}")
        name, labels, value, stamp = match.groups()
        try:
            number_value = float(value)
        except ValueError:
            raise FileProblem(path, f"line {number}: value {value!r} is not a number") from None
        if stamp is not None:
            stamps.append(int(stamp) / 1000)
        if name == TTFT_HISTOGRAM + "_bucket":
            le = dict(_LABEL.findall(labels or "")).get("le")
            if le is None:
                raise FileProblem(path, f"line {number}: a histogram bucket without le")
            bound = math.inf if le in ("+Inf", "Inf") else float(le)
            buckets[bound] = buckets.get(bound, 0.0) + number_value
        elif name.startswith("vllm:"):
            counters[name] = counters.get(name, 0.0) + number_value
    time = max(stamps) if stamps else scraped_at
    return Scrape(path=path, time=time, counters=counters, buckets=buckets)


def _parse_time(text: str, path: str, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise FileProblem(path, f"line {line}: scraped_at {text!r} is neither unix seconds "
                                "nor an ISO 8601 time") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.timestamp()


def histogram_quantile(q: float, buckets: dict[float, float]) -> float:
    """The q-quantile of a cumulative histogram, as Prometheus' ``histogram_quantile`` does.

    ``buckets`` maps each upper bound ``le`` (``inf`` for ``+Inf``) to the cumulative count.
    The rank q × total falls in the first bucket whose count reaches it; the result is
    interpolated linearly between that bucket's lower and upper bound (the lowest bucket starts
    at 0). A rank in the ``+Inf`` bucket returns the highest finite bound; nan when empty.
    """
    bounds = sorted(buckets)
    if not bounds or bounds[-1] != math.inf:
        raise ValueError("a histogram needs its +Inf bucket")
    total = buckets[math.inf]
    if total <= 0:
        return math.nan
    rank = q * total
    previous_bound, previous_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if bound == math.inf:
                return previous_bound
            if count == previous_count:
                return bound
            return previous_bound + (bound - previous_bound) * (
                (rank - previous_count) / (count - previous_count))
        previous_bound, previous_count = bound, count
    return previous_bound


def from_scrapes(first: Scrape, second: Scrape, interval_s: float | None = None) -> Measurement:
    """The measurement between two scrapes of one vLLM server (see the module docstring)."""
    if interval_s is not None:
        before, after, seconds = first, second, float(interval_s)
    elif first.time is not None and second.time is not None:
        before, after = sorted((first, second), key=lambda s: s.time)  # type: ignore[arg-type]
        seconds = after.time - before.time  # type: ignore[operator]
    else:
        undated = first.path if first.time is None else second.path
        raise FileProblem(undated, "has no time: expected sample timestamps or a "
                                   "'# scraped_at <unix seconds>' line; or give --interval "
                                   "SECONDS between the two scrapes")
    if not seconds > 0:
        raise FileProblem(after.path, f"was taken {seconds:g} s after {before.path}; the "
                                      "scrapes need a positive interval")
    source = f"{before.path} → {after.path}"

    def delta(name: str, required: bool = True) -> float | None:
        a, b = before.counter(name), after.counter(name)
        if a is None or b is None:
            if required:
                missing = before.path if a is None else after.path
                raise FileProblem(missing, f"has no {name}_total counter; expected a scrape of "
                                           "a vLLM server's /metrics")
            return None
        if b < a:
            raise FileProblem(after.path, f"{name}_total fell from {a:g} to {b:g}: the server "
                                          "restarted between the scrapes; scrape again")
        return b - a

    prompt, generated = delta(PROMPT_TOKENS), delta(GENERATION_TOKENS)
    queries = next((d for d in (delta(n, False) for n in CACHE_QUERIES) if d is not None), None)
    hits = next((d for d in (delta(n, False) for n in CACHE_HITS) if d is not None), None)
    cache = hits / queries if queries and hits is not None else None
    p50 = p99 = None
    notes: list[str] = []
    if before.buckets and after.buckets:
        if set(before.buckets) != set(after.buckets):
            raise FileProblem(after.path, f"{TTFT_HISTOGRAM} has other buckets than in "
                                          f"{before.path}; scrape the same server twice")
        if math.inf not in after.buckets:
            raise FileProblem(after.path, f"{TTFT_HISTOGRAM} has no le=\"+Inf\" bucket; "
                                          "expected a complete Prometheus histogram")
        increase = {le: after.buckets[le] - before.buckets[le] for le in after.buckets}
        if any(v < 0 for v in increase.values()):
            raise FileProblem(after.path, f"{TTFT_HISTOGRAM} buckets fell: the server "
                                          "restarted between the scrapes; scrape again")
        if increase[math.inf] > 0:
            p50 = histogram_quantile(0.50, increase) * 1000
            p99 = histogram_quantile(0.99, increase) * 1000
        else:
            notes.append("no request got its first token between the scrapes: no TTFT")
    else:
        notes.append(f"no {TTFT_HISTOGRAM} histogram: no TTFT")
    assert prompt is not None and generated is not None
    return Measurement(
        source=source, format=FORMATS[3], duration_s=seconds, input_tokens=prompt,
        output_tokens=generated, tps=(prompt + generated) / seconds,
        output_tps=generated / seconds, ttft_p50_ms=p50, ttft_p99_ms=p99,
        cache_hit_rate=cache, notes=tuple(notes))


def read_files(paths: Sequence[str | os.PathLike], interval_s: float | None = None,
               run: int | None = None) -> list[Measurement]:
    """Every measurement in ``paths``: one per run of each benchmark file, one per pair of
    scrapes. ``run`` (from 1) keeps only that run of each file that holds several.

    Two scrapes and one benchmark run give one measurement: the benchmark's throughput and
    TTFT, with the cache-hit share from the scrapes.
    """
    benchmarks: list[Measurement] = []
    scrapes: list[Scrape] = []
    for path in paths:
        if str(path) == "-":  # standard input (… | tokenfactory-xl actuals -)
            text, path = _read_stdin(), "standard input"
        else:
            text = _read_text(str(path))
        if text.lstrip()[:1] in ("{", "[") and not _is_text_result(text):
            runs = read_benchmark_runs(path, text)
            if run is not None and len(runs) > 1:
                if run > len(runs):
                    raise FileProblem(path, f"holds {len(runs)} runs; --run {run} is not one "
                                            f"of them (give 1 to {len(runs)})")
                runs = [runs[run - 1]]
            benchmarks.extend(runs)
        elif looks_like_prometheus(text):
            scrapes.append(read_scrape(path, text))
        else:
            benchmarks.append(_read_text_result(str(path), text))
    if scrapes and len(scrapes) != 2:
        raise FileProblem(scrapes[0].path, f"is one of {len(scrapes)} Prometheus scrapes; "
                                           "expected exactly two (before and after)")
    if scrapes:
        between = from_scrapes(scrapes[0], scrapes[1], interval_s)
        if not benchmarks:
            return [between]
        if len(benchmarks) > 1:
            raise FileProblem(scrapes[0].path, "two scrapes go with one benchmark run, "
                                               f"not {len(benchmarks)} (choose one with --run)")
        bench = benchmarks[0]
        return [replace(bench, cache_hit_rate=between.cache_hit_rate,
                        source=f"{bench.source} + {between.source}",
                        notes=bench.notes + ("cache-hit share from the scrapes",))]
    return benchmarks


# -- what the numbers mean -----------------------------------------------------------------------
def measured_slo_attainment(found: Measurement, slo_ms: float) -> float | None:
    """SLO attainment of methodology section 1 from the measured p50/p99, or None."""
    if found.ttft_p50_ms is None or found.ttft_p99_ms is None:
        return None
    if not found.ttft_p50_ms > 0 or not found.ttft_p99_ms > found.ttft_p50_ms:
        return None
    return float(model.slo_attainment(found.ttft_p50_ms, found.ttft_p99_ms, slo_ms))


@dataclass(frozen=True)
class Theoretical:
    """The TEF denominator: per-GPU tokens per second and where it came from."""

    tps_per_gpu: float
    basis: str
    decode_tps_per_gpu: float | None = None
    prefill_tps_per_gpu: float | None = None


#: The theoretical figures TEF can be taken against (methodology section 5.1; the first is the
#: default); ``roofline`` is the version-2 bound of section 5 with its MBU and MFU.
FIGURES = ("attainable", "bound", "roofline")


def theoretical_for(found: Measurement, gpu: str, model_name: str, precision: str,
                    batch: float, context: float, gpus: int, mbu: float = 1.0,
                    mfu: float = 1.0, figure: str = "attainable", parallel: str = "tp"
                    ) -> Theoretical:
    """The theoretical figure for the measured token mix: decode and prefill per GPU blended
    by the measured output share (:func:`tokenfactory_xl.roofline.blended_tps`). ``figure``
    is ``attainable`` (TEF's default denominator), ``bound`` (:mod:`tokenfactory_xl.capacity`)
    or ``roofline`` (version 2, with ``mbu`` and ``mfu``)."""
    g, m = specs.gpu(gpu), specs.model(model_name)
    # prefill attention at the measured mean prompt length; none known: 0 (a higher bound)
    prompt = found.prompt_tokens or 0.0
    if figure == "roofline":
        decode = float(roofline.theoretical_tps(gpu, model_name, precision, batch, context,
                                                gpus, mbu, mfu))
        if math.isnan(decode):
            fit = roofline.max_batch_for(g, m, precision, context, gpus)
            raise InputError([Problem("--batch", batch, f"does not fit in memory: at most "
                                      f"{fit:,.0f} sequences of {context:,.0f} tokens on "
                                      f"{gpus} × {g.name} ({precision})",
                                      "lower --batch or --context, or raise --gpus")])
        prefill = float(roofline.prefill_tps_for(g, m, precision, mfu, prompt))
        basis = (f"roofline: {m.name} on {gpus} × {g.name}, {precision}, batch {batch:g}, "
                 f"context {context:g}, MBU {mbu:g}, MFU {mfu:g}")
    else:
        setup = capacity.Setup.of(g, m, precision, gpus, parallel)
        decode = capacity.decode_tps_per_gpu(setup, batch, context, figure)
        prefill = capacity.prefill_tps_per_gpu(setup, prompt, figure)
        basis = (f"{figure} (spec 5.1): {m.name} on {gpus} × {g.name}, {setup.parallel}, "
                 f"{precision} weights, {setup.dense_precision} dense, {setup.kv_precision} "
                 f"KV, batch {batch:g}, context {context:g}")
    share = found.output_share
    if share is None:
        return Theoretical(decode, basis + " (decode)", decode, prefill)
    blended = float(roofline.blended_tps(prefill, decode, share))
    return Theoretical(blended, basis + f", blended at {share:.1%} output tokens", decode,
                       prefill)


#: The note of a measurement whose GPU count neither the file nor the user gave.
NO_GPU_COUNT = ("the file does not say how many GPUs ran it: no per-GPU figure (and no TEF); "
                "give --gpus N, the GPUs of the measured instance")


def summarise(found: Measurement, slo_ms: float, theoretical: Theoretical | None,
              gpus: int | None = 1, instances: int = 1) -> dict[str, object]:
    """The figures the command prints (and ``--json`` writes), TEF included. ``gpus`` None
    (the count is unknown): no per-GPU figure and no TEF, and a note naming ``--gpus``."""
    instance, output = found.tps, found.output_tps
    if found.per_gpu_only:  # the file's figures are one GPU's already
        per_gpu, output_per_gpu = found.tps, found.output_tps
        instance = found.tps * gpus if gpus else None
        output = found.output_tps * gpus if gpus and found.output_tps is not None else None
    else:
        per_gpu = found.tps / gpus if gpus else None
        output_per_gpu = output / gpus if gpus and output is not None else None
    tef = per_gpu / theoretical.tps_per_gpu if theoretical and per_gpu is not None else None
    notes = list(found.notes) + ([] if gpus or found.per_gpu_only else [NO_GPU_COUNT])
    out: dict[str, object] = {
        "source": found.source, "format": found.format,
        "duration_s": found.duration_s, "requests": found.requests,
        "input_tokens": found.input_tokens, "output_tokens": found.output_tokens,
        "measured_tps": instance * instances if instance is not None else None,
        "instance_tps": instance, "instances": instances, "gpus_per_instance": gpus,
        "measured_tps_per_gpu": per_gpu, "output_tps": output,
        "output_tps_per_gpu": output_per_gpu,
        "ttft_p50_ms": found.ttft_p50_ms, "ttft_p99_ms": found.ttft_p99_ms,
        "ttft_tail_ms": found.ttft_tail_ms, "ttft_tail_stat": found.ttft_tail_stat,
        "ttft_slo_ms": slo_ms, "slo_attainment": measured_slo_attainment(found, slo_ms),
        "cache_hit_rate": found.cache_hit_rate, "request_goodput": found.request_goodput,
        "theoretical_tps_per_gpu": theoretical.tps_per_gpu if theoretical else None,
        "theoretical_basis": theoretical.basis if theoretical else None,
        "tef": tef, "concurrency": found.concurrency, "tps_per_user": found.tps_per_user,
        "prefill_tps": found.prefill_tps, "speculative": found.speculative,
        "hardware": found.hardware, "precision": found.precision, "model": found.model_name,
        "run": found.run, "notes": notes,
    }
    if theoretical and theoretical.decode_tps_per_gpu is not None:
        out["roofline_decode_tps_per_gpu"] = theoretical.decode_tps_per_gpu
        out["roofline_prefill_tps_per_gpu"] = theoretical.prefill_tps_per_gpu
    return out


def _site_row(sites: SitesFile, site: str) -> int:
    """The row number of ``site`` in ``sites`` (names compared by the one rule for names)."""
    wanted = names.key(site)
    hits = [r.row for r in sites.rows if r.site_name and names.key(r.site_name) == wanted]
    if len(hits) > 1:
        raise InputError([Problem("--site", site, f"names {len(hits)} rows of {sites.path} "
                                  f"(rows {', '.join(map(str, hits))})",
                                  "make site names unique")])
    if not hits:
        known = [r.site_name for r in sites.rows if r.site_name]
        close = difflib.get_close_matches(site, known, n=3, cutoff=0.5)
        fix = f"did you mean {' or '.join(close)}?" if close else (
            f"the file has: {', '.join(known[:10])}" + (" …" if len(known) > 10 else ""))
        raise InputError([Problem("--site", site, f"is not a site_name in {sites.path}", fix)])
    return hits[0]


def cell_text(value: float) -> str:
    return f"{value:.10g}"


def _changes(old: dict[str, object], new: dict[str, float]) -> list[tuple[str, object, float]]:
    return [(k, old.get(k), v) for k, v in new.items()]


def _refuse_overwrite(changes, force: bool, path, decimal: str | None = None) -> None:
    clashes = []
    for name, before, after in changes:
        if before in (None, ""):
            continue
        try:
            same = math.isclose(float(before) if isinstance(before, (int, float)) else
                                number_text.read_number(str(before), decimal)[0], after,
                                rel_tol=1e-9)
        except (ValueError, TypeError):
            same = False
        if not same:
            clashes.append(f"{name} {before} → {cell_text(after)}")
    if clashes and not force:
        raise InputError([Problem("--sites", str(path), "already holds other values: "
                                  + "; ".join(clashes), "add --force to replace them")])


def check_measured(values: dict[str, float], source: str) -> None:
    """Refuse measured values no site can take: not finite (a scrape's ``nan``), or no
    throughput at all (a run whose every request failed measures 0 tokens/s)."""
    problems = []
    for name, value in values.items():
        try:
            BY_NAME[name].parse(value)
        except BadValue as exc:
            problems.append(Problem(name, value, f"measured in {source}: {exc.message}",
                                    "check the run; nothing was written"))
    if values.get("measured_tps") == 0:
        problems.append(Problem("measured_tps", 0, f"measured in {source}: no tokens were served "
                                "(every request of the run failed?), which is no throughput "
                                "a site can plan on", "run the benchmark again; nothing was "
                                "written"))
    if problems:
        raise InputError(problems)


def write_site_values(path: str | os.PathLike, site: str, values: dict[str, float],
                      force: bool = False, sheet: str | None = None,
                      on_wait: Callable[[], object] | None = None,
                      source: str = "the values given") -> list[tuple[str, object, float]]:
    """Write ``values`` (input name → number) into the row of ``site`` in a sites file.

    ``values`` are checked first (:func:`check_measured`; ``source`` names where they were
    measured): nothing is written for a value no site can take.

    The row, sheet and header are found as ``batch`` finds them (the sheet the workbook opens
    on, or ``sheet``; the first row holding ``site_name``). Every other cell, the column order,
    the rows and every formula's stored value stay as they were (a workbook's sheet is changed
    in its XML, cell by cell); missing columns are added at the end of the header; a CSV gets
    the numbers with its own decimal separator. The file is replaced atomically (a temporary
    file in the same folder, then ``os.replace``). Cells that already hold a different value
    are only replaced with ``force``. Returns (name, old value, new value) for each value
    written. Another run updating the file is waited for (``on_wait`` is called when it is, to
    say so).
    """
    from ..sites.load import load_sites

    path = Path(path)
    if not path.is_file():
        raise InputError([Problem("--sites", str(path), "is not a file",
                                  "give the sites file (.csv or .xlsx) to update")])
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".xlsx", ".xlsm"):
        raise InputError([Problem("--sites", str(path), "is neither .csv nor .xlsx",
                                  "save the sites file as CSV or Excel workbook")])
    check_measured(values, source)
    # Runs updating one file queue: each reads the file as the one before it left it, so
    # eight measurements written at once are eight updates, none lost.
    with claim(path, wait=True, what="the file", on_wait=on_wait):
        sites = load_sites(path, sheet)
        if "site_name" not in sites.columns:
            raise InputError([Problem("--sites", str(path), "has no site_name column",
                                      "the header row names the columns; --sheet picks the "
                                      "sheet")])
        row = _site_row(sites, site)
        if suffix == ".csv":
            return _write_csv(path, sites, row, values, force)
        return _write_xlsx(path, sites, row, values, force)


def _write_csv(path: Path, sites: SitesFile, row_number: int, values: dict[str, float],
               force: bool):
    raw = read_regular(path, MAX_XLSX_UNPACKED)
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8-sig")  # load_sites has read it as UTF-8
    newline = "\r\n" if "\r\n" in text else "\n"
    delimiter = sniff_delimiter(_header_line(text))
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header_at = sites.header_row - 1
    header = [normalise_column(c) for c in rows[header_at]]
    added = [name for name in values if name not in header]
    for name in added:
        header.append(name)
        rows[header_at].append(name)
    if added:  # keep the file rectangular: every row gets the new (empty) cells
        for other in rows[header_at + 1:]:
            if any(cell != "" for cell in other):
                other.extend([""] * (len(header) - len(other)))
    row = rows[row_number - 1]
    row.extend([""] * (len(header) - len(row)))
    old = {name: row[header.index(name)] for name in values}
    changes = _changes(old, values)
    _refuse_overwrite(changes, force, path, sites.decimal)
    for name, value in values.items():
        # the file's own decimal separator: 412,5 in a decimal-comma file, 412.5 otherwise
        shown = cell_text(value)
        row[header.index(name)] = shown.replace(".", ",") if sites.decimal == "," else shown
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=delimiter, lineterminator=newline)
    writer.writerows(rows)
    data = out.getvalue().encode("utf-8")
    write_atomically(path, (b"\xef\xbb\xbf" if bom else b"") + data)
    return changes


def _write_xlsx(path: Path, sites: SitesFile, row_number: int, values: dict[str, float],
                force: bool):
    from ..files.safe_xlsx import RefusedFile, open_xlsx

    try:
        with open_xlsx(path) as content:
            part = next((s.part for s in content.sheets if s.title == sites.sheet), None)
            cells = content.cells(sites.sheet).values  # type: ignore[arg-type]
    except RefusedFile as exc:
        raise InputError([Problem("--sites", str(path), exc.reason, exc.fix)]) from None
    if part is None:
        raise InputError([Problem("--sites", str(path), f"has no sheet {sites.sheet!r} to write",
                                  "--sheet names the sheet of the sites")])
    columns = _header_columns(cells, sites.header_row)
    width = max([_column_number(c) for c in columns.values()], default=0)
    for name in values:
        if name not in columns:
            width += 1
            columns[name] = _column_name(width)
    old = {n: cells.get(f"{columns[n]}{row_number}") for n in values}
    changes = _changes(old, values)
    _refuse_overwrite(changes, force, path)
    header_cells = {f"{columns[n]}{sites.header_row}": _inline_text(n) for n in values
                    if f"{columns[n]}{sites.header_row}" not in cells}
    value_cells = {f"{columns[n]}{row_number}": f"<v>{float(v)!r}</v>" for n, v in values.items()}
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info, data in members:
            if info.filename == part:
                data = _set_cells(data.decode("utf-8"), {**header_cells, **value_cells}
                                  ).encode("utf-8")
            archive.writestr(info, data, compress_type=info.compress_type)
    write_atomically(path, out.getvalue())
    return changes


def _header_columns(cells: dict[str, object], header_row: int) -> dict[str, str]:
    """Input name → column letters, from the header row's cells."""
    found = {}
    for coord, value in cells.items():
        letters, row = _split(coord)
        if row == header_row and isinstance(value, str) and normalise_column(value):
            found.setdefault(normalise_column(value), letters)
    return found


def _split(coord: str) -> tuple[str, int]:
    match = re.fullmatch(r"([A-Z]+)(\d+)", coord)
    assert match, coord
    return match.group(1), int(match.group(2))


def _column_number(letters: str) -> int:
    number = 0
    for char in letters:
        number = number * 26 + ord(char) - 64
    return number


def _column_name(number: int) -> str:
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _inline_text(text: str) -> str:
    from xml.sax.saxutils import escape

    return f'<is><t>{escape(text)}</t></is>'


_ROW = re.compile(r'<((?:\w+:)?)row\b[^>]*?\br="(\d+)"[^>]*?(?:/>|>.*?</\1row>)', re.DOTALL)


_CELL = re.compile(r'<((?:\w+:)?)c\b[^>]*?\br="([A-Z]+)(\d+)"[^>]*?(?:/>|>.*?</\1c>)', re.DOTALL)


_STYLE = re.compile(r'\bs="(\d+)"')


def _set_cells(xml: str, contents: dict[str, str]) -> str:
    """The sheet's XML with each cell of ``contents`` (coordinate → the cell's inner XML, a
    value or an inline text) replaced or added in its row, keeping the cell's style; every
    other byte stays as it was, formulas and their stored values with it."""
    by_row: dict[int, dict[str, str]] = {}
    for coord, inner in contents.items():
        letters, row = _split(coord)
        by_row.setdefault(row, {})[letters] = inner

    def cell(prefix: str, coord: str, inner: str, style: str) -> str:
        kind = ' t="inlineStr"' if inner.startswith("<is>") else ""
        if prefix:  # the sheet's own namespace prefix on every element
            inner = inner.replace("</", "\0").replace("<", f"<{prefix}").replace(
                "\0", f"</{prefix}")
        return f'<{prefix}c r="{coord}"{style}{kind}>{inner}</{prefix}c>'

    def patch_row(match: re.Match[str]) -> str:
        prefix, number = match.group(1), int(match.group(2))
        wanted = by_row.get(number)
        if not wanted:
            return match.group(0)
        text = match.group(0)
        if text.endswith("/>") and f"</{prefix}row>" not in text:
            text = text[:-2] + f"></{prefix}row>"
        head_end = text.index(">") + 1
        body, tail = text[head_end:-len(f"</{prefix}row>")], f"</{prefix}row>"
        pieces = []
        pending = dict(sorted(wanted.items(), key=lambda kv: _column_number(kv[0])))
        for c in _CELL.finditer(body):
            letters = c.group(2)
            for new in [k for k in pending if _column_number(k) < _column_number(letters)]:
                pieces.append(cell(prefix, f"{new}{number}", pending.pop(new), ""))
            if letters in pending:
                style = _STYLE.search(c.group(0)[:c.group(0).index(">")])
                pieces.append(cell(prefix, f"{letters}{number}", pending.pop(letters),
                                   f' s="{style.group(1)}"' if style else ""))
            else:
                pieces.append(c.group(0))
        for new, inner in pending.items():
            pieces.append(cell(prefix, f"{new}{number}", inner, ""))
        return text[:head_end] + "".join(pieces) + tail

    patched = _ROW.sub(patch_row, xml)
    missing = set(by_row) - {int(m.group(2)) for m in _ROW.finditer(xml)}
    if missing:  # pragma: no cover - the header and the site's row hold cells load_sites read
        raise InputError([Problem("--sites", "", f"rows {sorted(missing)} are not in the sheet's "
                                  "file", "open the file in Excel and save it again")])
    return patched


__all__ = ["Measurement", "Scrape", "Theoretical", "FileProblem", "read_files",
           "FORMAT_GENAI_PERF", "FORMAT_LLMPERF", "FORMAT_MLPERF", "FORMAT_PERF_CSV",
           "FORMAT_TRTLLM_BENCH",
           "read_benchmark", "read_benchmark_runs", "read_suite_result", "read_scrape",
           "from_scrapes", "histogram_quantile",
           "measured_slo_attainment", "summarise", "theoretical_for", "write_site_values",
           "MEASURED_INPUTS", "FORMATS"]
