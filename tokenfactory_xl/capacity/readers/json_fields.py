"""The fields the JSON benchmark results share, read alike by their readers: the tokens per
second from totals and a duration, a TTFT statistic in milliseconds (or seconds without the
unit), the tokens per second per user, the concurrency, a mean per request and a text field."""

from __future__ import annotations

import math
import re

from ..measurement import FileProblem, _num


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
