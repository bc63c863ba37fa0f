"""vLLM's Prometheus counters: two ``/metrics`` scrapes, before and after, turned into one
measurement.

Metric names from ``vllm/v1/metrics/loggers.py`` of vllm-project/vllm. Counters are declared as
``vllm:prompt_tokens``, ``vllm:generation_tokens``, ``vllm:prefix_cache_queries`` and
``vllm:prefix_cache_hits`` (``vllm:gpu_prefix_cache_*`` before 0.9) and exposed with the
Prometheus ``_total`` suffix; TTFT is the histogram ``vllm:time_to_first_token_seconds``
(``_bucket{le=…}``). Series with different labels (engines, models) are summed. Rates are the
counter increases divided by the time between the scrapes; TTFT quantiles come from the bucket
increases, interpolated linearly inside the bucket as Prometheus' ``histogram_quantile`` does.
The time of a scrape is taken from the samples' own timestamps, else from a comment line
``# scraped_at <unix seconds or ISO 8601 time>``; ``--interval SECONDS`` overrides both.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from dataclasses import dataclass

from .measurement import (
    _EXPECTED,
    FORMATS,
    FileProblem,
    Measurement,
    read_result_text,
)

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
        text = read_result_text(path)
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
