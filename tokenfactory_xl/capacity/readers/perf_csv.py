"""Reader of the CSV exports of NVIDIA GenAI-Perf and AIPerf (``profile_export_*.csv``).

Both tools write the same shape: a table ``Metric,avg,min,max,…,p50,…,p99`` of per-request
metrics named in words with their unit (``Time To First Token (ms)``, AIPerf's ``Time to First
Token (ms)``, ``Input Sequence Length (tokens)``), a blank line, then a table ``Metric,Value``
of run totals (``Output Token Throughput (per sec)`` in GenAI-Perf; ``Benchmark Duration
(sec)``, ``Total Token Throughput (tokens/sec)``, ``Output Token Throughput (tokens/sec)``,
``Total Input Sequence Length (tokens)``, ``Request Count`` in AIPerf); AIPerf may add GPU
telemetry tables after. Metric names are compared without regard to case. GenAI-Perf's CSV
rounds to two decimals and has no totals: input tokens per second are then the request
throughput × the mean input length. AIPerf's ``Active Prefill Throughput (tokens/sec)`` is the
measured prefill rate (used by ``cost`` to split input from output). Neither holds the GPU count.
"""

from __future__ import annotations

import csv
import io
import math

from ..measurement import FORMAT_PERF_CSV, FileProblem, Measurement


def looks_like(text: str) -> bool:
    """A GenAI-Perf/AIPerf CSV export: its first line starts ``Metric,avg``."""
    return text.lstrip().lower().startswith("metric,avg")


def _tables(text: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    stats: dict[str, dict[str, str]] = {}
    totals: dict[str, str] = {}
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if not row or not any(cell.strip() for cell in row):
            header = None
            continue
        if header is None:
            header = [c.strip().lower() for c in row]
            continue
        if header[:1] != ["metric"]:
            continue  # telemetry tables: Endpoint, GPU_Index, …
        name = row[0].strip().lower()
        if header[1:2] == ["value"] and len(row) > 1:
            totals.setdefault(name, row[1].strip())
        else:
            stats.setdefault(name, dict(zip(header, (c.strip() for c in row), strict=False)))
    return stats, totals


def read(text: str, path: str) -> Measurement:
    """The measurement of one CSV export (see the module docstring)."""
    stats, totals = _tables(text)

    def number(raw: str | None, what: str) -> float | None:
        if raw in (None, ""):
            return None
        try:
            value = float(str(raw).replace(",", ""))
        except ValueError:
            raise FileProblem(path, f"CSV export: {what} is {raw!r}, expected a number"
                              ) from None
        if not math.isfinite(value) or value < 0:
            raise FileProblem(path, f"CSV export: {what} is {raw!r}, expected a number of at "
                                    "least 0")
        return value

    def stat(name: str, column: str) -> float | None:
        # GenAI-Perf names lengths without their unit: "Input Sequence Length"
        for key in (name.lower(), name.lower().replace(" (tokens)", "")):
            row = stats.get(key)
            if row:
                return number(row.get(column), f"{name} {column}")
        return None

    def total(*names: str) -> float | None:
        for name in names:
            if name.lower() in totals:
                return number(totals[name.lower()], name)
        return None

    ttft = "time to first token (ms)"
    if ttft not in stats:
        raise FileProblem(path, "CSV export has no 'Time To First Token (ms)' row; expected a "
                                "GenAI-Perf or AIPerf profile_export CSV")
    out_tps = total("Output Token Throughput (tokens/sec)", "Output Token Throughput (per sec)")
    if out_tps is None:
        raise FileProblem(path, "CSV export has no 'Output Token Throughput' total")
    isl = stat("Input Sequence Length (tokens)", "avg")
    notes: list[str] = []
    tps = total("Total Token Throughput (tokens/sec)")
    if tps is None:
        rps = total("Request Throughput (per sec)", "Request Throughput (requests/sec)")
        if rps is None or isl is None:
            raise FileProblem(path, "CSV export gives neither a total token throughput nor "
                                    "the request throughput and mean input length")
        tps = out_tps + rps * isl
        notes.append("input tokens/s = request throughput × mean input length (two decimals "
                     "in the file)")
    itl = stat("Inter Token Latency (ms)", "p50")
    prefill = stat("Active Prefill Throughput (tokens/sec)", "avg")
    return Measurement(
        source=path, format=FORMAT_PERF_CSV,
        duration_s=total("Benchmark Duration (sec)"),
        input_tokens=total("Total Input Sequence Length (tokens)"),
        output_tokens=total("Total Output Sequence Length (tokens)"), tps=tps,
        output_tps=out_tps, ttft_p50_ms=stat(ttft, "p50"), ttft_p99_ms=stat(ttft, "p99"),
        requests=total("Request Count"), tps_per_user=1000 / itl if itl else None,
        prompt_tokens=isl, output_per_request=stat("Output Sequence Length (tokens)", "avg"),
        prefill_tps=prefill, notes=tuple(notes))
