"""Actual throughput from a serving stack's own output: TEF's numerator, measured.

A token factory already measures itself: its benchmark tools write result files and its
inference servers expose Prometheus counters. This module reads those, in the field names the
tools themselves write, and turns them into the site inputs the TFOM takes — measured TPS,
TTFT p50 and p99, cache-hit share — plus the SLO attainment (methodology section 1) and the TEF
against a theoretical figure (given, or the roofline of :mod:`tokenfactory_xl.core.roofline`).

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
  (:mod:`tokenfactory_xl.capacity.readers.genai_perf`), the GenAI-Perf and AIPerf CSV exports
  (:mod:`tokenfactory_xl.capacity.readers.perf_csv`), LLMPerf summaries
  (:mod:`tokenfactory_xl.capacity.readers.llmperf`), ``trtllm-bench throughput`` logs
  (:mod:`tokenfactory_xl.capacity.readers.trtllm_bench`) and MLPerf loadgen summaries
  (:mod:`tokenfactory_xl.capacity.readers.mlperf`); each module names the fields it reads.

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

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core import economics as model
from ..core import roofline, specs
from ..core import serving as capacity
from ..core.errors import InputError, Problem
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
    read_result_stdin,
    read_result_text,
)
from .prometheus import Scrape, from_scrapes, looks_like_prometheus, read_scrape
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
        text = read_result_text(path)
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
            text, path = read_result_stdin(), "standard input"
        else:
            text = read_result_text(str(path))
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
    by the measured output share (:func:`tokenfactory_xl.core.roofline.blended_tps`). ``figure``
    is ``attainable`` (TEF's default denominator), ``bound`` (:mod:`tokenfactory_xl.core.serving`)
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


__all__ = ["Measurement", "Scrape", "Theoretical", "FileProblem", "read_files",
           "FORMAT_GENAI_PERF", "FORMAT_LLMPERF", "FORMAT_MLPERF", "FORMAT_PERF_CSV",
           "FORMAT_TRTLLM_BENCH",
           "read_benchmark", "read_benchmark_runs", "read_suite_result", "read_scrape",
           "from_scrapes",
           "measured_slo_attainment", "summarise", "theoretical_for",
           "MEASURED_INPUTS", "FORMATS"]
