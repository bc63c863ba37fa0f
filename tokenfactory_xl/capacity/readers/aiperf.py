"""Reader of NVIDIA AIPerf's ``profile_export_aiperf.json`` (see :mod:`..actuals` for its
fields)."""

from __future__ import annotations

from ..measurement import FORMATS, FileProblem, Measurement, _num
from .json_fields import _mean, _tps

#: A metric's time units, in seconds.
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
