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
    read_result_stdin,
    read_result_text,
)
from .prometheus import Scrape, from_scrapes, looks_like_prometheus, read_scrape
from .readers import genai_perf as read_genai_perf
from .readers import llmperf as read_llmperf
from .readers import mlperf as read_mlperf
from .readers import perf_csv as read_perf_csv
from .readers import trtllm_bench as read_trtllm_bench
from .readers.aiperf import _aiperf_records, read_aiperf
from .readers.sglang_bench import read_sglang_bench
from .readers.suite import read_suite_result
from .readers.vllm_bench import read_vllm_bench

#: The site inputs a measurement fills in, in the order they are written.
MEASURED_INPUTS: tuple[str, ...] = ("measured_tps", "ttft_p50_ms", "ttft_p99_ms",
                                    "cache_hit_rate")

# -- reading files -------------------------------------------------------------------------------
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
